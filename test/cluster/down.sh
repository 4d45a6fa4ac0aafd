#!/usr/bin/env bash
# Stops the local cluster that up.sh started and leaves nothing of it
# running: exactly the recorded processes, the containers of every node's containerd,
# their mounts and cgroups, and the network namespaces. Cluster state (etcd
# data, certificates, images, the registry's blobs) stays for a fast next
# up.sh unless --purge.
#
#   test/cluster/down.sh [--purge]      (npm run cluster:down)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"

purge=false
case "${1:-}" in
"") ;;
--purge) purge=true ;;
*) die "usage: down.sh [--purge]" ;;
esac
[[ "$(id -u)" == 0 ]] || die "must run as root"

# stop NAME...: TERM each recorded, still running component, then KILL
# whatever has not exited after 10 s (an API server still serving a
# streaming request, such as a followed log, would wait for a minute).
stop() {
	local name pid pids=() deadline
	for name in "$@"; do
		if pid_alive "$name"; then
			pid="$(cat "$STATE/pids/$name.pid")"
			kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
		fi
		rm -f "$STATE/pids/$name.pid" "$STATE/pids/$name.cmd" "$STATE/pids/$name.args"
	done
	deadline=$((SECONDS + 10))
	for pid in "${pids[@]}"; do
		while [[ -d "/proc/$pid" ]] && ((SECONDS < deadline)); do sleep 0.1; done
		if [[ -d "/proc/$pid" ]]; then
			echo "pid $pid ignored SIGTERM for 10s: killing it" >&2
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	for pid in "${pids[@]}"; do
		while [[ -d "/proc/$pid" ]]; do sleep 0.1; done
	done
}

# Every node that has anything left: its recorded components, state or namespace.
node_indexes=()
for ((k = 1; k <= MAX_NODES; k++)); do
	if ((k == 1)) || [[ -d "$(node_dir "$k")" || -e "/run/netns/$(node_netns "$k")" ]] ||
		compgen -G "$STATE/pids/*-$(node_name "$k").pid" >/dev/null; then
		node_indexes+=("$k")
	fi
done

# Nodes 2 and up leave with the cluster: their Node objects go while the API
# server still answers, so that a later, smaller cluster has no nodes that
# never come back (pod GC then removes what was bound to them).
if ((${#node_indexes[@]} > 1)) && pid_alive kube-apiserver; then
	phase "delete added nodes"
	for k in "${node_indexes[@]:1}"; do
		nsenter --net="/run/netns/$NETNS" -- "$CACHE/bin/kubectl" --kubeconfig "$STATE/admin.kubeconfig" \
			delete node "$(node_name "$k")" --ignore-not-found --wait=false >/dev/null 2>&1 || true
	done
fi

# The kubelets go first so that nothing restarts the containers removed next.
phase "stop nodes and controllers"
for k in "${node_indexes[@]}"; do
	stop "$(node_component "$k" kubelet)" "$(node_component "$k" kube-proxy)"
done
stop kube-scheduler kube-controller-manager cert-manager-controller cert-manager-cainjector

phase "remove containers"
for k in "${node_indexes[@]}"; do
	address="$(node_dir "$k")/containerd/containerd.sock"
	ctr=(ctr --address "$address" --namespace k8s.io)
	pid_alive "$(node_component "$k" containerd)" || continue
	for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
		"${ctr[@]}" tasks kill --signal SIGKILL "$task" >/dev/null 2>&1 || true
	done
	for task in $("${ctr[@]}" tasks ls -q 2>/dev/null); do
		"${ctr[@]}" tasks delete --force "$task" >/dev/null 2>&1 || true
	done
	containers="$("${ctr[@]}" containers ls -q 2>/dev/null || true)"
	# shellcheck disable=SC2086 # one ID per word
	[[ -z "$containers" ]] || "${ctr[@]}" containers delete $containers >/dev/null 2>&1 || true
done

phase "stop containerd and control plane"
for k in "${node_indexes[@]}"; do
	stop "$(node_component "$k" containerd)"
done
stop kube-apiserver registry
# etcd last: an API server whose etcd is gone spends a minute draining requests.
stop etcd

# Should containerd have died before its tasks, their shims and processes are
# still around: shims carry our containerd's address, container processes
# sit in the cgroups under /$NETNS that the kubelet made. Nothing else matches either.
phase "leftover processes"
for k in "${node_indexes[@]}"; do
	for pid in $(pgrep -f -- "-address $(node_dir "$k")/containerd/containerd.sock( |$)" || true); do
		echo "killing leftover shim $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)" >&2
		kill -KILL "$pid" 2>/dev/null || true
	done
done
{ find /sys/fs/cgroup/*/"$NETNS" -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u | while read -r pid; do
	kill -KILL "$pid" 2>/dev/null || true
done

phase "unmount"
# Deepest first: overlay root filesystems, shm, pod volumes, network
# namespace handles and the kubelet's own bind mount of its root.
for attempt in 1 2 3; do
	mounts="$(findmnt -rn -o TARGET | grep -F "$STATE/" | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2- || true)"
	[[ -n "$mounts" ]] || break
	while read -r target; do
		umount "$target" 2>/dev/null || { ((attempt < 3)) || umount -l "$target" 2>/dev/null; } || true
	done <<<"$mounts"
done
if findmnt -rn -o TARGET | grep -qF "$STATE/"; then
	echo "warning: still mounted under $STATE:" >&2
	findmnt -rn -o TARGET | grep -F "$STATE/" >&2
fi

phase "cgroups"
for root in /sys/fs/cgroup/*/"$NETNS"; do
	[[ -d "$root" ]] || continue
	find "$root" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	[[ ! -d "$root" ]] || echo "warning: could not remove cgroup $root" >&2
done

phase "network namespaces"
for k in "${node_indexes[@]}"; do
	netns="$(node_netns "$k")"
	[[ -e "/run/netns/$netns" ]] || continue
	others="$(ip netns pids "$netns" 2>/dev/null || true)"
	if [[ -n "$others" ]]; then
		# Not started by up.sh (tests, a development webhook): name them
		# rather than kill them; the namespace lives on until they exit.
		echo "warning: processes still in namespace $netns, not started by up.sh:" >&2
		for pid in $others; do echo "  $pid $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)" >&2; done
	fi
	ip netns delete "$netns"
done
# Every pod is gone, and so is every address the IPAM handed out. The added
# nodes are gone too: the next up.sh brings one unless told otherwise.
for k in "${node_indexes[@]}"; do
	rm -rf "$(node_dir "$k")/cni/ipam"
done
rm -f "$STATE/nodes.tsv"
rm -f "/var/lib/cni/results/$NETNS-"* 2>/dev/null || true

if $purge; then
	phase "purge state"
	rm -rf "$STATE"
fi
phase ""
if $purge; then
	echo "cluster down, state purged"
else
	echo "cluster down (state kept in $STATE; down.sh --purge deletes it)"
fi
