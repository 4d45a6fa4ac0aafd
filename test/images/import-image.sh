#!/usr/bin/env bash
# Imports image archives into the local cluster's containerd (namespace
# k8s.io, where the kubelet's images live) and pins every image it brings, so
# the kubelet's image garbage collection never removes an image that no
# registry could give back.
#
#   import-image.sh OUT.tar...
#
# CONTAINERD_ADDRESS comes from the environment or the cluster's env file.
set -euo pipefail
if [[ $# -lt 1 ]]; then
	echo "usage: import-image.sh IMAGE.tar..." >&2
	exit 2
fi
state="${LEADERHOOK_CLUSTER_DIR:-$HOME/.cache/leaderhook/cluster}"
if [[ -z "${CONTAINERD_ADDRESS:-}" && -f "$state/env" ]]; then
	# shellcheck disable=SC1091
	source "$state/env"
fi
: "${CONTAINERD_ADDRESS:?not set and no $state/env: is the cluster up (npm run cluster:up)?}"
ctr=(ctr --address "$CONTAINERD_ADDRESS" --namespace k8s.io)

for archive in "$@"; do
	[[ -f "$archive" ]] || { echo "import-image.sh: $archive: no such file" >&2; exit 1; }
	out="$("${ctr[@]}" images import "$archive" 2>&1)" ||
		{ echo "import-image.sh: ctr images import $archive failed: $out" >&2; exit 1; }
	# ctr reports each image as "unpacking NAME (sha256:...)...done".
	names="$(sed -n 's/^unpacking \([^ ]*\) (sha256:.*/\1/p' <<<"$out")"
	[[ -n "$names" ]] || { echo "import-image.sh: $archive held no named image: $out" >&2; exit 1; }
	for name in $names; do
		"${ctr[@]}" images label "$name" io.cri-containerd.pinned=pinned >/dev/null
		echo "$name"
	done
done
