// Command mkimage turns a root-filesystem directory into a single-layer
// container image archive, with no registry and no daemon: an OCI image
// layout (oci-layout, index.json, blobs/) that also carries a Docker-style
// manifest.json, so `ctr images import` and `kind load image-archive` both
// take it. The layer is uncompressed and every timestamp is fixed, so the
// same directory always gives the same digests.
//
//	mkimage --name NAME:TAG --rootfs DIR --out OUT.tar [--user U] [--env K=V]... [--workdir D] -- ENTRYPOINT...
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// epoch is the timestamp of every file and of the image itself.
var epoch = time.Unix(0, 0).UTC()

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type blob struct {
	digest string // "sha256:<hex>"
	data   []byte
}

func newBlob(data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{digest: "sha256:" + hex.EncodeToString(sum[:]), data: data}
}

func (b blob) path() string { return "blobs/sha256/" + strings.TrimPrefix(b.digest, "sha256:") }

// normalizeRef gives the fully qualified name the CRI looks images up by:
// "pause:1" is "docker.io/library/pause:1", "me/op" is "docker.io/me/op:latest".
func normalizeRef(ref string) (string, error) {
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if name == "" || tag == "" || strings.ContainsAny(ref, " \t@") || name != strings.ToLower(name) {
		return "", fmt.Errorf("image name %q: want [DOMAIN/]PATH[:TAG], lowercase, without a digest", ref)
	}
	first, _, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		name = "docker.io/library/" + name
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		name = "docker.io/" + name
	}
	return name + ":" + tag, nil
}

// layerTar writes every file under root into an uncompressed tar, sorted by
// path so the result does not depend on directory order.
func layerTar(root string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading root filesystem %s: %w", root, err)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, fmt.Errorf("reading symlink %s: %w", p, err)
			}
		} else if !info.Mode().IsRegular() && !info.IsDir() {
			return nil, fmt.Errorf("%s: only regular files, directories and symlinks go into an image", p)
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, fmt.Errorf("tar header for %s: %w", p, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Uname, hdr.Gname = "", ""
		hdr.Format = tar.FormatPAX
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing %s: %w", p, err)
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", p, err)
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("reading %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // only fixed, known-good types are marshalled here
	}
	return out
}

type options struct {
	name, rootfs, out, user, workdir string
	env, entrypoint                  []string
}

func build(o options) (string, error) {
	ref, err := normalizeRef(o.name)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(o.rootfs); err != nil || !st.IsDir() {
		return "", fmt.Errorf("root filesystem %s: not a directory (%v)", o.rootfs, err)
	}
	for _, e := range o.env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return "", fmt.Errorf("--env %q: want KEY=VALUE", e)
		}
	}
	layerData, err := layerTar(o.rootfs)
	if err != nil {
		return "", err
	}
	layer := newBlob(layerData)

	env := append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, o.env...)
	imageConfig := map[string]any{
		"Entrypoint": o.entrypoint,
		"Env":        env,
	}
	if o.user != "" {
		imageConfig["User"] = o.user
	}
	if o.workdir != "" {
		imageConfig["WorkingDir"] = o.workdir
	}
	config := newBlob(mustJSON(map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": "amd64",
		"os":           "linux",
		"config":       imageConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layer.digest}},
		"history":      []map[string]string{{"created": epoch.Format(time.RFC3339), "created_by": "mkimage " + o.rootfs}},
	}))
	manifest := newBlob(mustJSON(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: config.digest, Size: int64(len(config.data))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layer.digest, Size: int64(len(layer.data))}},
	}))
	_, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	index := mustJSON(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json",
			Digest:    manifest.digest,
			Size:      int64(len(manifest.data)),
			Platform:  &platform{Architecture: "amd64", OS: "linux"},
			Annotations: map[string]string{
				"io.containerd.image.name":          ref,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	})
	dockerManifest := mustJSON([]map[string]any{{
		"Config":   config.path(),
		"RepoTags": []string{ref},
		"Layers":   []string{layer.path()},
	}})

	tmp := o.out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("creating %s: %w", tmp, err)
	}
	tw := tar.NewWriter(f)
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"manifest.json", dockerManifest},
		{config.path(), config.data},
		{manifest.path(), manifest.data},
		{layer.path(), layer.data},
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch})
		}
	}
	for _, file := range files {
		if err != nil {
			break
		}
		if err = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: file.name, Mode: 0o644, Size: int64(len(file.data)), ModTime: epoch}); err == nil {
			_, err = tw.Write(file.data)
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp, o.out)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("writing %s: %w", o.out, err)
	}
	return ref, nil
}

func main() {
	var o options
	var env stringList
	flags := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	flags.StringVar(&o.name, "name", "", "image name, NAME[:TAG] or DOMAIN/PATH[:TAG] (required)")
	flags.StringVar(&o.rootfs, "rootfs", "", "root filesystem directory (required)")
	flags.StringVar(&o.out, "out", "", "archive to write (required)")
	flags.StringVar(&o.user, "user", "", "user the entrypoint runs as, e.g. 65532:65532")
	flags.StringVar(&o.workdir, "workdir", "", "working directory of the entrypoint")
	flags.Var(&env, "env", "KEY=VALUE added to the image environment (repeatable)")
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	o.env, o.entrypoint = env, flags.Args()
	var missing []string
	for flagName, v := range map[string]string{"--name": o.name, "--rootfs": o.rootfs, "--out": o.out} {
		if v == "" {
			missing = append(missing, flagName)
		}
	}
	sort.Strings(missing)
	if len(o.entrypoint) == 0 {
		missing = append(missing, "ENTRYPOINT after --")
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "mkimage: missing %s\nusage: mkimage --name NAME:TAG --rootfs DIR --out OUT.tar [--user U] [--env K=V]... [--workdir D] -- ENTRYPOINT...\n", strings.Join(missing, ", "))
		os.Exit(2)
	}
	ref, err := build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}
