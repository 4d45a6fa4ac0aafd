#!/usr/bin/env bash
# Builds the shipped Dockerfile with buildah (no Docker engine) into an image
# archive and imports it into the test cluster's containerd: the build a
# release makes (scripts/lib/image.sh), for this machine's platform. No
# registry is reachable here, so both of the Dockerfile's bases are the local Node images
# of test/images/node-base.sh (the pinned `node` package's binary); users get
# the Dockerfile's default, the official node image. The build stage's
# `npm ci` reaches the npm registry through the host's network.
#
#   scripts/build-local-image.sh [NAME:TAG]   (default leaderhook.test/leaderhook:dev)
#
# Prints "NAME ARCHIVE". buildah's layer cache keeps unchanged steps (npm ci
# runs again only when package*.json change), and the archive is written only
# when the image changed. The first archive of an image is tried with podman
# before anything imports it (test/images/check-image.sh). NO_IMPORT=1 only
# builds. With LEADERHOOK_KUBECONFIG (a cluster of your own) nothing is
# imported either: load the archive yourself (kind load image-archive ARCHIVE).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=test/images/containers.sh
source "$repo/test/images/containers.sh"
# shellcheck source=scripts/lib/image.sh
source "$repo/scripts/lib/image.sh"
name="${1:-leaderhook.test/leaderhook:dev}"
archives="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/image"
mkdir -p "$archives"

start=$(date +%s)
need_container_tools
# The release's build, for this machine's platform: same labels and commit.
image_metadata
build_image "$name" "$(host_platform)" "$archives"
id="$image_id"

archive="$archives/$(tr '/:' '__' <<<"$name")-${id:0:16}.tar"
if [[ ! -f "$archive" ]]; then
	lh_buildah push --quiet "$id" "docker-archive:$archive.tmp:$name" ||
		{ echo "build-local-image.sh: writing $archive failed" >&2; exit 1; }
	"$repo/test/images/check-image.sh" "$archive.tmp" "$name" ||
		{ echo "build-local-image.sh: the image fails its checks; kept as $archive.tmp" >&2; exit 1; }
	mv "$archive.tmp" "$archive"
	find "$archives" -maxdepth 1 -name "$(basename "${archive%-*}")-*.tar" ! -path "$archive" -delete
	echo "built $name in $(($(date +%s) - start))s: $archive ($(du -h "$archive" | cut -f1))" >&2
fi

if [[ "${NO_IMPORT:-}" == 1 ]]; then
	:
elif [[ -n "${LEADERHOOK_KUBECONFIG:-}" ]]; then
	echo "LEADERHOOK_KUBECONFIG is set: load $archive into that cluster yourself (kind load image-archive ARCHIVE)" >&2
else
	"$repo/test/images/import-image.sh" "$archive" >/dev/null
fi
echo "$name $archive"
