#!/usr/bin/env bash
# Builds the cluster's own images — the pod sandbox (pause) and kubeget, the
# in-cluster API probe of the isolation test — into the image cache, only when
# their sources changed, and prints "NAME ARCHIVE" per image.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/images/go-tool.sh
source "$here/go-tool.sh"
images="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/images"
mkdir -p "$images"

# image NAME BINARY: a root filesystem holding just the static binary, run as
# an unprivileged user (the pause container of a restricted pod must be too).
image() {
	local name="$1" tool="$2" bin rootfs archive
	bin="$(go_tool "$tool")"
	archive="$images/$tool-$(basename "$bin" | sed "s/^$tool-//").tar"
	if [[ ! -f "$archive" ]]; then
		rootfs="$(mktemp -d)"
		install -m 0755 "$bin" "$rootfs/$tool"
		"$here/build-image.sh" --user 65532:65532 "$name" "$rootfs" "$archive" -- "/$tool" >/dev/null
		rm -rf "$rootfs"
	fi
	echo "$name $archive"
}

image leaderhook.local/pause:3.10 pause
image leaderhook.local/kubeget:1 kubeget
