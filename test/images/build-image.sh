#!/usr/bin/env bash
# Turns a root-filesystem directory into an image archive that
# `ctr images import` and `kind load image-archive` accept.
#
#   build-image.sh [--user U] [--env K=V]... [--workdir D] NAME:TAG ROOTFS_DIR OUT.tar -- ENTRYPOINT...
#
# Prints the fully qualified image name (e.g. docker.io/library/NAME:TAG),
# the name to use in manifests, always with imagePullPolicy: Never.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/images/go-tool.sh
source "$here/go-tool.sh"

opts=()
while [[ $# -gt 0 && "$1" == --* && "$1" != -- ]]; do
	case "$1" in
	--user | --env | --workdir)
		[[ $# -ge 2 ]] || { echo "build-image.sh: $1 needs a value" >&2; exit 2; }
		opts+=("$1" "$2")
		shift 2
		;;
	*) echo "build-image.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
if [[ $# -lt 5 || "$4" != "--" ]]; then
	echo "usage: build-image.sh [--user U] [--env K=V]... [--workdir D] NAME:TAG ROOTFS_DIR OUT.tar -- ENTRYPOINT..." >&2
	exit 2
fi
name="$1" rootfs="$2" out="$3"
shift 4

mkimage="$(go_tool mkimage)"
"$mkimage" --name "$name" --rootfs "$rootfs" --out "$out" "${opts[@]}" -- "$@"
