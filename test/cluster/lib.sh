# shellcheck shell=bash disable=SC2034 # variables for the scripts that source this
# Shared by up.sh, down.sh and in-netns.sh: where the cluster lives and how
# to run a command inside its network namespace. Sourced, never run.

STATE="${LEADERHOOK_CLUSTER_DIR:-$HOME/.cache/leaderhook/cluster}"
CACHE="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}"
NETNS="${LEADERHOOK_NETNS:-leaderhook}"
# The Kubernetes version the cluster is built from and runs: a minor (1.37)
# or an exact version (1.37.2) that build.sh --list names. The default's
# module files are go.mod and go.sum; every other version's are
# versions/v1.MINOR.mod and .sum (versions/update.sh writes them).
KUBE_VERSION_DEFAULT=1.34
KUBE_VERSION="${LEADERHOOK_KUBE_VERSION:-$KUBE_VERSION_DEFAULT}"
# The only toolchain allowed for a version whose modfile needs a newer Go than
# the machine's: the go command fetches it from the module proxy.
KUBE_GOTOOLCHAIN=go1.27.3
NODE_NAME="${LEADERHOOK_NODE_NAME:-leaderhook-node}"
# Node 1 shares the control plane's namespace. Both ends of its veth pair
# stay inside the namespace: the node gets an ordinary address and nothing
# leads out of it.
NODE_IP=10.213.0.2
NODE_SUBNET=10.213.0.0/24
PEER_IP=10.213.0.1
NODE_LINK=lh-node
PEER_LINK=lh-peer
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
CLUSTER_CIDR=10.244.0.0/16
POD_CIDR=10.244.0.0/24
# Nodes 2 and up (up.sh --nodes N): each in a network namespace of its own,
# joined to the control plane's by one veth pair and to nothing else.
MAX_NODES=8
CONTAINERD_ADDRESS="$STATE/containerd/containerd.sock"
PAUSE_IMAGE=leaderhook.local/pause:3.10
# The cluster's image registry (Debian's docker-registry, the CNCF
# distribution registry), with TLS from the cluster CA. Its address is one
# every node's containerd reaches: the node's own while there is one node; a
# second node would need it on an address of the shared subnet instead.
REGISTRY_IP="$NODE_IP"
REGISTRY_PORT=5000
REGISTRY="$REGISTRY_IP:$REGISTRY_PORT"
# Also in the certificate, for a resolver that knows it; nothing here does,
# so images are named by the address.
REGISTRY_DNS_NAME=registry.leaderhook.test

# in_netns CMD...: run CMD in the cluster's network namespace and nothing
# else. `ip netns exec` would also give CMD a private mount namespace and a
# fresh /sys without the cgroup hierarchies: the kubelet could not find its
# cgroups, and volumes it mounts would stay invisible to containerd.
in_netns() {
	nsenter --net="/run/netns/$NETNS" -- "$@"
}

# minor_of VERSION: 37 of v1.37.2 (or 1.37).
minor_of() { local v="${1#v}"; v="${v#1.}"; echo "${v%%.*}"; }

# node_name K, node_netns K, node_ip K, node_dir K: node K's name, network
# namespace, address and state directory. Node 1 keeps the single-node
# cluster's layout, so that a cluster grown from one node changes nothing of
# what it had.
node_name() { if (($1 == 1)); then echo "$NODE_NAME"; else echo "$NODE_NAME-$1"; fi; }
node_netns() { if (($1 == 1)); then echo "$NETNS"; else echo "$NETNS-node-$1"; fi; }
node_ip() { echo "10.213.0.$(($1 + 1))"; }
node_dir() { if (($1 == 1)); then echo "$STATE"; else echo "$STATE/nodes/$(node_name "$1")"; fi; }
# node_component K NAME: the name node K's component NAME (containerd,
# kubelet, kube-proxy) is recorded under in $STATE/pids.
node_component() { if (($1 == 1)); then echo "$2"; else echo "$2-$(node_name "$1")"; fi; }
# node_count: how many nodes the cluster was brought up with (1 unless up.sh
# --nodes): the lines of $STATE/nodes.tsv, which up.sh writes last.
node_count() { if [[ -s "$STATE/nodes.tsv" ]]; then wc -l <"$STATE/nodes.tsv"; else echo 1; fi; }

# phase NAME: print how long the previous phase took and start timing NAME.
_phase_name=""
_phase_start=0
_total_start="$(date +%s%N)"
phase() {
	local now
	now="$(date +%s%N)"
	if [[ -n "$_phase_name" ]]; then
		printf '[%s] %-28s %6.1fs\n' "$(basename "$0" .sh)" "$_phase_name" "$(((now - _phase_start) / 1000000))e-3" >&2
	fi
	_phase_name="$1"
	_phase_start="$now"
	if [[ -z "$1" ]]; then
		printf '[%s] %-28s %6.1fs\n' "$(basename "$0" .sh)" "total" "$(((now - _total_start) / 1000000))e-3" >&2
	fi
}

die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

# pid_alive NAME: the recorded process of component NAME still runs.
pid_alive() {
	local pidfile="$STATE/pids/$1.pid" pid
	[[ -f "$pidfile" ]] || return 1
	pid="$(cat "$pidfile")"
	[[ -n "$pid" && -d "/proc/$pid" ]] || return 1
	# A recycled PID belongs to some other program: only trust our binaries.
	[[ "$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" == *"$(cat "$STATE/pids/$1.cmd" 2>/dev/null)"* ]]
}
