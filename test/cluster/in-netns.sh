#!/usr/bin/env bash
# Runs a command inside the local cluster's network namespace, the only place
# from which the cluster can be reached, with the cluster's env file
# (KUBECONFIG, LEADERHOOK_NETNS, NODE_IP, NODE_NAME, CONTAINERD_ADDRESS,
# LEADERHOOK_REGISTRY, LEADERHOOK_REGISTRY_CA, LEADERHOOK_KUBE_VERSION, LEADERHOOK_KUBE_BINDIR)
# exported. The command keeps
# the caller's mounts, files and user.
#
#   test/cluster/in-netns.sh CMD [ARGS...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"
[[ $# -ge 1 ]] || die "usage: in-netns.sh CMD [ARGS...]"
[[ -f "$STATE/env" && -e "/run/netns/$NETNS" ]] ||
	die "no cluster in $STATE (network namespace $NETNS): run npm run cluster:up first"
set -a
# shellcheck disable=SC1091
source "$STATE/env"
set +a
# The cluster's own version of kubectl and the components first.
export PATH="${LEADERHOOK_KUBE_BINDIR:-$CACHE/bin}:$CACHE/bin:$PATH"
exec nsenter --net="/run/netns/$NETNS" -- "$@"
