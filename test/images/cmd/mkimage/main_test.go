package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestNormalizeRef(t *testing.T) {
	cases := map[string]string{
		"pause":                        "docker.io/library/pause:latest",
		"pause:3.10":                   "docker.io/library/pause:3.10",
		"me/op:1":                      "docker.io/me/op:1",
		"leaderhook.local/pause:3.10":  "leaderhook.local/pause:3.10",
		"localhost/op:dev":             "localhost/op:dev",
		"registry:5000/team/op:v1.2.3": "registry:5000/team/op:v1.2.3",
	}
	for in, want := range cases {
		got, err := normalizeRef(in)
		if err != nil || got != want {
			t.Errorf("normalizeRef(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Op:1", "op:", "op@sha256:abc", "op 1"} {
		if got, err := normalizeRef(bad); err == nil {
			t.Errorf("normalizeRef(%q) = %q, want an error", bad, got)
		}
	}
}

// readArchive returns every regular file of a tar archive by name.
func readArchive(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("reading archive: %v", err)
		}
		if hdr.Typeflag == tar.TypeReg {
			body, _ := io.ReadAll(tr)
			files[hdr.Name] = body
		}
	}
}

func TestBuildWritesAnImportableDeterministicArchive(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "op"), []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/op", filepath.Join(rootfs, "op")); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := options{name: "op:1", rootfs: rootfs, user: "65532:65532", env: []string{"A=b"}, entrypoint: []string{"/bin/op", "--flag"}}

	o.out = filepath.Join(out, "first.tar")
	ref, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	if ref != "docker.io/library/op:1" {
		t.Errorf("ref = %q", ref)
	}
	first, _ := os.ReadFile(o.out)
	o.out = filepath.Join(out, "second.tar")
	if _, err := build(o); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(o.out)
	if !bytes.Equal(first, second) {
		t.Error("two builds of the same directory differ")
	}

	files := readArchive(t, first)
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v, %s", err, files["index.json"])
	}
	if name := index.Manifests[0].Annotations["io.containerd.image.name"]; name != ref {
		t.Errorf("index names the image %q, want %q", name, ref)
	}
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &docker); err != nil || len(docker) != 1 || docker[0].RepoTags[0] != ref {
		t.Fatalf("manifest.json: %v, %s", err, files["manifest.json"])
	}
	var config struct {
		Config struct {
			Entrypoint []string
			Env        []string
			User       string
		} `json:"config"`
	}
	if err := json.Unmarshal(files[docker[0].Config], &config); err != nil {
		t.Fatalf("config: %v", err)
	}
	if config.Config.User != "65532:65532" || len(config.Config.Entrypoint) != 2 || config.Config.Env[len(config.Config.Env)-1] != "A=b" {
		t.Errorf("config = %+v", config.Config)
	}

	layer := tar.NewReader(bytes.NewReader(files[docker[0].Layers[0]]))
	seen := map[string]*tar.Header{}
	for {
		hdr, err := layer.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seen[hdr.Name] = hdr
	}
	if h := seen["bin/op"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("layer lacks executable bin/op: %+v", h)
	}
	if h := seen["op"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "bin/op" {
		t.Errorf("layer lacks symlink op -> bin/op: %+v", h)
	}
	if seen["bin/"] == nil {
		t.Error("layer lacks directory bin/")
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	if _, err := build(options{name: "op:1", rootfs: filepath.Join(dir, "missing"), out: filepath.Join(dir, "x.tar"), entrypoint: []string{"/op"}}); err == nil {
		t.Error("a missing root filesystem was accepted")
	}
	if _, err := build(options{name: "op:1", rootfs: dir, out: filepath.Join(dir, "x.tar"), env: []string{"NOEQUALS"}, entrypoint: []string{"/op"}}); err == nil {
		t.Error("an env entry without = was accepted")
	}
}
