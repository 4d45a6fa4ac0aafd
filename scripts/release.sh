#!/usr/bin/env bash
# npm run release -- [--out DIR] [--only PARTS] [--platforms LIST] [--force]
#
# Builds everything a release publishes, for package.json's version at this
# checkout's commit, into one folder (default release/VERSION/, gitignored):
#
#   leaderhook-VERSION.oci.tar     the image, an OCI archive (an index of every platform)
#   charts/leaderhook-VERSION.tgz  the Helm chart (helm package)
#   leaderhook-VERSION.tgz         the CLI, an npm package (npm pack)
#   deploy/                        the kustomize install (deploy/ as it is at this commit)
#   SHA256SUMS                     sha256sum of each, verified by sha256sum -c
#
# A tree with uncommitted changes or untracked files is built, not refused:
# its revision is COMMIT-dirty, in the image's labels and in `leaderhook
# version`, and a warning says so. Everything is built into a scratch folder
# beside DIR first, so a failed run leaves DIR as it was.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node="$repo/node_modules/.bin/node"
all_parts="image,chart,cli,deploy"

usage() {
	cat <<EOF
Usage: npm run release -- [--out DIR] [--only PARTS] [--platforms LIST] [--force]

Builds the artifacts of one version (package.json's) at this checkout's commit:
the image as an OCI archive, the Helm chart, the CLI as an npm package, the
kustomize install (deploy/), and
SHA256SUMS over them.

  --out DIR         where to write them (default release/VERSION/)
  --only PARTS      build only these of image, chart, cli, deploy (comma-separated;
                    default all). cli needs neither root nor buildah.
  --platforms LIST  the image's platforms (default linux/amd64,linux/arm64;
                    arm64 needs no emulator to build, and is tried under
                    qemu-user-static when registered, see docs/release.md)
  --force           replace DIR when it holds an earlier release
  --help            show this help

A dirty tree is built with the revision COMMIT-dirty (and a warning).
EOF
}

die() {
	echo "release.sh: $*" >&2
	exit 1
}
usage_error() {
	printf 'release.sh: %s\n\n' "$*" >&2
	usage >&2
	exit 2
}

out="" parts="$all_parts" platforms="linux/amd64,linux/arm64" force=0
while [[ $# -gt 0 ]]; do
	case "$1" in
	--help | -h) usage; exit 0 ;;
	--force) force=1; shift ;;
	--out | --only | --platforms)
		[[ $# -ge 2 && -n "$2" ]] || usage_error "$1 needs a value"
		case "$1" in
		--out) out="$2" ;;
		--only) parts="$2" ;;
		--platforms) platforms="$2" ;;
		esac
		shift 2
		;;
	--out=* | --only=* | --platforms=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
	*) usage_error "unknown argument $1" ;;
	esac
done
IFS=, read -r -a wanted <<<"$parts"
for part in "${wanted[@]}"; do
	[[ ",$all_parts," == *",$part,"* ]] || usage_error "--only: \"$part\" is not one of image, chart, cli, deploy"
done
want() { [[ ",$parts," == *",$1,"* ]]; }
IFS=, read -r -a platform_list <<<"$platforms"
for platform in "${platform_list[@]}"; do
	[[ "$platform" == linux/amd64 || "$platform" == linux/arm64 ]] || usage_error "--platforms: \"$platform\" is not linux/amd64 or linux/arm64"
done
[[ -x "$node" ]] || die "no $node: run npm ci first"

# shellcheck source=test/images/containers.sh
source "$repo/test/images/containers.sh"
# shellcheck source=scripts/lib/image.sh
source "$repo/scripts/lib/image.sh"
image_metadata || die "could not read the version and commit (scripts/release/metadata.ts)"
version="$meta_version" revision="$meta_revision"
[[ "$revision" == *-dirty ]] &&
	echo "release.sh: warning: the tree has uncommitted changes or untracked files; building revision $revision" >&2
[[ -n "$meta_source" ]] ||
	echo "release.sh: warning: no source repository (package.json repository, or git's origin remote): org.opencontainers.image.source is empty" >&2

out="${out:-$repo/release/$version}"
if [[ -e "$out" && ! -d "$out" ]]; then die "--out $out exists and is not a folder"; fi
if [[ -d "$out" && -n "$(ls -A "$out")" ]]; then
	[[ $force == 1 ]] || die "$out already holds files: remove it, pass --force to replace it, or choose another --out"
	# --force replaces an earlier release, never a folder that is something else.
	[[ -f "$out/SHA256SUMS" ]] || die "--force replaces only an earlier release folder, and $out has no SHA256SUMS"
fi
mkdir -p "$(dirname "$out")"
stage="$(mktemp -d "$(dirname "$out")/.$(basename "$out").partial-XXXXXX")"
trap 'rm -rf "$stage"' EXIT
start=$(date +%s)
echo "release.sh: leaderhook $version at $revision (created $meta_created) into $out" >&2

if want image; then
	need_container_tools || die "the image needs buildah, as root (or leave it out: --only chart,cli,deploy)"
	logs="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/image"
	mkdir -p "$logs"
	image_file="leaderhook-$version.oci.tar"
	ids=()
	for platform in "${platform_list[@]}"; do
		echo "release.sh: building the image for $platform" >&2
		build_image "leaderhook.release/leaderhook:$version-${platform#*/}" "$platform" "$logs" || die "the image for $platform did not build"
		ids+=("$image_id")
	done
	# The archive's reference names the image as a registry would: skopeo copy
	# oci-archive:FILE docker://REGISTRY/leaderhook:VERSION pushes it.
	ref="leaderhook:$version"
	# Each platform's image is tried as the cluster runs it, from an archive of
	# its own (podman loads one image), where this machine can run it: its own
	# platform, or another one with an emulator registered (docs/release.md).
	for i in "${!ids[@]}"; do
		platform="${platform_list[$i]}"
		if can_run_platform "$platform"; then
			lh_buildah push --quiet "${ids[$i]}" "oci-archive:$stage/.check.tar:$ref" >/dev/null || die "writing the $platform image archive failed"
			"$repo/test/images/check-image.sh" "$stage/.check.tar" "$ref" "$platform" || die "the $platform image fails its checks"
			rm -f "$stage/.check.tar"
		else
			echo "release.sh: warning: the $platform image is not tried: this machine cannot run $platform binaries" >&2
		fi
	done
	if [[ ${#ids[@]} -eq 1 ]]; then
		lh_buildah push --quiet "${ids[0]}" "oci-archive:$stage/$image_file:$ref" >/dev/null || die "writing the image archive failed"
	else
		list="leaderhook.release/leaderhook:$version-index"
		lh_buildah manifest rm "$list" >/dev/null 2>&1 || true
		lh_buildah manifest create "$list" >/dev/null || die "buildah manifest create $list failed"
		for id in "${ids[@]}"; do
			lh_buildah manifest add "$list" "$id" >/dev/null || die "buildah manifest add $list $id failed"
		done
		lh_buildah manifest push --quiet --all "$list" "oci-archive:$stage/$image_file:$ref" >/dev/null || die "writing the image index failed"
		lh_buildah manifest rm "$list" >/dev/null 2>&1 || true
	fi
fi

if want chart; then
	helm="$(bash "$repo/test/tools/go-tool.sh" helm)" || die "helm could not be built (test/tools/go-tool.sh helm)"
	mkdir -p "$stage/charts"
	# helm's own config and cache, empty: nothing of the machine's user leaks in.
	helm_home="$stage/.helm"
	helm_env=(env HELM_CONFIG_HOME="$helm_home/config" HELM_CACHE_HOME="$helm_home/cache" HELM_DATA_HOME="$helm_home/data")
	"${helm_env[@]}" "$helm" package "$repo/charts/leaderhook" --destination "$stage/charts" >/dev/null || die "helm package charts/leaderhook failed"
	chart="$stage/charts/leaderhook-$version.tgz"
	[[ -f "$chart" ]] || die "helm package wrote no charts/leaderhook-$version.tgz: charts/leaderhook/Chart.yaml's version is not package.json's $version"
	shown="$("${helm_env[@]}" "$helm" show chart "$chart")"
	grep -qx "appVersion: \"\?$version\"\?" <<<"$shown" ||
		die "charts/leaderhook/Chart.yaml's appVersion is not package.json's $version"
	rm -rf "$helm_home"
fi

if want deploy; then
	# The kustomize install a user applies from the release folder, no checkout
	# needed; its `images:` must name this release's tag.
	grep -qx "  newTag: \"\?$version\"\?" "$repo/deploy/kustomization.yaml" ||
		die "deploy/kustomization.yaml's images: newTag is not package.json's $version"
	cp -r "$repo/deploy" "$stage/deploy"
fi

if want cli; then
	"$node" "$repo/scripts/release/cli-package.ts" --out "$stage" --revision "$revision" >/dev/null || die "the CLI package could not be made"
fi

(
	cd "$stage"
	find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum >SHA256SUMS
	sha256sum -c --quiet SHA256SUMS
) || die "SHA256SUMS does not verify"

if [[ -d "$out" ]]; then
	rm -rf "$out"
fi
# mktemp made the scratch folder private (0700); a release folder is for
# sharing (a web server, another user's mirror job), like its files.
chmod 755 "$stage"
mv "$stage" "$out"
trap - EXIT
echo "release.sh: wrote $out in $(($(date +%s) - start))s:" >&2
(cd "$out" && find . -type f -printf '%P\n' | LC_ALL=C sort | while IFS= read -r f; do
	printf '  %8s  %s\n' "$(numfmt --to=iec-i --suffix=B --format=%.1f "$(stat -c %s "$f")")" "$f"
done)
