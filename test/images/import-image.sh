#!/usr/bin/env bash
# Imports image archives into the local cluster's containerd, every node's
# (namespace k8s.io, where the kubelet's images live), and pins every image it
# brings, so the kubelet's image garbage collection never removes an image
# that no registry could give back.
#
#   import-image.sh OUT.tar...
#
# The containerd sockets: CONTAINERD_ADDRESSES (space-separated) or
# CONTAINERD_ADDRESS from the environment, else the cluster's env file.
set -euo pipefail
if [[ $# -lt 1 ]]; then
	echo "usage: import-image.sh IMAGE.tar..." >&2
	exit 2
fi
state="${LEADERHOOK_CLUSTER_DIR:-$HOME/.cache/leaderhook/cluster}"
addresses="${CONTAINERD_ADDRESSES:-${CONTAINERD_ADDRESS:-}}"
if [[ -z "$addresses" && -f "$state/env" ]]; then
	# shellcheck disable=SC1091
	source "$state/env"
	addresses="${CONTAINERD_ADDRESSES:-${CONTAINERD_ADDRESS:-}}"
fi
[[ -n "$addresses" ]] || { echo "import-image.sh: CONTAINERD_ADDRESS not set and no $state/env: is the cluster up (npm run cluster:up)?" >&2; exit 1; }

for archive in "$@"; do
	[[ -f "$archive" ]] || { echo "import-image.sh: $archive: no such file" >&2; exit 1; }
done
for address in $addresses; do
	ctr=(ctr --address "$address" --namespace k8s.io)
	for archive in "$@"; do
		out="$("${ctr[@]}" images import "$archive" 2>&1)" ||
			{ echo "import-image.sh: ctr images import $archive into $address failed: $out" >&2; exit 1; }
		# ctr reports each image as "unpacking NAME (sha256:...)...done".
		names="$(sed -n 's/^unpacking \([^ ]*\) (sha256:.*/\1/p' <<<"$out")"
		[[ -n "$names" ]] || { echo "import-image.sh: $archive held no named image: $out" >&2; exit 1; }
		for name in $names; do
			"${ctr[@]}" images label "$name" io.cri-containerd.pinned=pinned >/dev/null
			[[ "$address" != "${addresses%% *}" ]] || echo "$name"
		done
	done
done
