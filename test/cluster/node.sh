# shellcheck shell=bash disable=SC2154 # pki, repo, bindir, kubectl: up.sh's
# The node half of up.sh: containerd, kubelet and kube-proxy of node K, and
# for nodes 2 and up the network namespace they live in. Sourced by up.sh
# after its helpers (start, wait_for, cert, kubeconfig, write_if_changed),
# never run.
#
# Node 1 lives in the control plane's namespace with the single-node
# cluster's layout. Node K >= 2 gets namespace $NETNS-node-K, address
# 10.213.0.(K+1) and one veth pair to the control plane's namespace, which
# routes between the nodes: every node reaches the API server, the registry
# and the other nodes' pods through it, and nothing else.

# node_vars K: the variables of node K that the functions below use.
node_vars() {
	n_index="$1"
	n_name="$(node_name "$1")"
	n_netns="$(node_netns "$1")"
	n_ip="$(node_ip "$1")"
	n_dir="$(node_dir "$1")"
	n_containerd_address="$n_dir/containerd/containerd.sock"
	n_cfg="$n_dir/config"
	# Node K's pods get cgroups under the first node's: down.sh removes
	# exactly that tree.
	if (($1 == 1)); then n_cgroup_root="/$NETNS"; else n_cgroup_root="/$NETNS/node-$1"; fi
	# The control plane's end of node K's veth pair.
	n_link="lh-n$1"
}

in_node_netns() {
	nsenter --net="/run/netns/$n_netns" -- "$@"
}

# node_network K: node K's namespace, joined to the control plane's by a veth
# pair born inside the two namespaces (the machine's own namespace is never
# touched), with routes to the control plane and, through it, to the other
# nodes' pods.
node_network() {
	node_vars "$1"
	[[ -e "/run/netns/$n_netns" ]] || ip netns add "$n_netns"
	ip -n "$n_netns" link set lo up
	ip -n "$NETNS" link show "$n_link" >/dev/null 2>&1 ||
		ip -n "$NETNS" link add "$n_link" type veth peer name lh-eth netns "$n_netns"
	ip -n "$NETNS" link set "$n_link" up
	ip -n "$n_netns" addr replace "$n_ip/32" dev lh-eth
	ip -n "$n_netns" link set lh-eth up
	# The control plane's namespace answers ARP for its own address on any
	# link, so a /32 on each side is all the pair needs.
	ip -n "$NETNS" route replace "$n_ip/32" dev "$n_link" src "$NODE_IP"
	ip -n "$n_netns" route replace "$NODE_IP/32" dev lh-eth src "$n_ip"
	local dst
	for dst in "$NODE_SUBNET" "$CLUSTER_CIDR" "$SERVICE_CIDR"; do
		ip -n "$n_netns" route replace "$dst" via "$NODE_IP" dev lh-eth src "$n_ip"
	done
	in_node_netns sysctl -qw net.ipv4.ip_forward=1
	in_node_netns sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
}

# node_cni_config K POD_CIDR: the bridge network of node K's pods.
node_cni_config() {
	node_vars "$1"
	mkdir -p "$n_dir/cni/net.d" "$n_dir/cni/ipam"
	write_if_changed "$n_dir/cni/net.d/10-leaderhook.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NETNS",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$n_dir/cni/ipam",
        "ranges": [[{ "subnet": "$2" }]],
        "routes": [{ "dst": "$SERVICE_CIDR" }, { "dst": "$NODE_SUBNET" }, { "dst": "$CLUSTER_CIDR" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
}

# node_containerd K: node K's containerd, with a state, root and socket of its own.
node_containerd() {
	node_vars "$1"
	mkdir -p "$n_dir/containerd" "$n_dir/cni/net.d"
	write_if_changed "$n_dir/containerd/config.toml" <<EOF
version = 2
root = "$n_dir/containerd/root"
state = "$n_dir/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$n_containerd_address"

[plugins."io.containerd.internal.v1.opt"]
  path = "$n_dir/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  netns_mounts_under_state_dir = true
  # Lowering an OOM score needs CAP_SYS_RESOURCE, which some machines (this
  # project's test VMs among them) withhold even from root: without this, every
  # pause container (oom_score_adj -998) fails in runc's nsexec. Scores below
  # containerd's own are raised to it instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".registry]
    # One directory per registry host, each with a hosts.toml (the
    # cluster's registry: trust the cluster CA). Read at every pull, so a
    # change there needs no restart.
    config_path = "$n_dir/containerd/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$n_dir/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOF
	# containerd looks for "host:port" as the directory's name. Only the
	# address: a DNS name would need a resolver on the node. containerd 1.6
	# refuses a hosts.toml without a [host] table ("invalid `host` tree") and
	# then pulls without the CA; it tries each [host] first and `server` last,
	# so both trust the CA: a tag the registry lacks is "not found" from both,
	# not an x509 error from the fallback.
	mkdir -p "$n_dir/containerd/certs.d/$REGISTRY"
	write_if_changed "$n_dir/containerd/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "https://$REGISTRY"
ca = "$pki/ca.crt"

[host."https://$REGISTRY"]
  capabilities = ["pull", "resolve"]
  ca = "$pki/ca.crt"
EOF
	start_in "$n_netns" "$(node_component "$1" containerd)" "$(command -v containerd)" --config "$n_dir/containerd/config.toml"
	wait_for "$(node_component "$1" containerd)" "containerd's socket on $n_name" 30 ctr --address "$n_containerd_address" version
}

# node_images K < "IMAGE ARCHIVE" lines: the cluster's images imported into
# node K, and for a node that joins later, every image node 1 has pinned (the
# test images the suite built and imported since): a pod lands on any node.
node_images() {
	node_vars "$1"
	local ctr_node=(ctr --address "$n_containerd_address" --namespace k8s.io) image archive missing=()
	while read -r image archive; do
		# An image already there under the same name came from the same archive
		# unless its sources changed; import-image.sh re-pins in any case.
		if ! "${ctr_node[@]}" images ls -q | grep -qxF "$image" ||
			[[ "$archive" -nt "$n_dir/containerd/imported-$(basename "$archive")" ]]; then
			CONTAINERD_ADDRESSES="$n_containerd_address" "$repo/test/images/import-image.sh" "$archive" >/dev/null
			touch "$n_dir/containerd/imported-$(basename "$archive")"
		fi
	done
	((n_index > 1)) || return 0
	local ctr_first=(ctr --address "$CONTAINERD_ADDRESS" --namespace k8s.io)
	while read -r image; do
		[[ -n "$image" && "$image" != sha256:* ]] || continue
		"${ctr_node[@]}" images ls -q "name==$image" | grep -q . || missing+=("$image")
	done < <("${ctr_first[@]}" images ls -q 'labels."io.cri-containerd.pinned"==pinned')
	if ((${#missing[@]} > 0)); then
		echo "copying ${#missing[@]} pinned images from $NODE_NAME to $n_name" >&2
		local tar="$n_dir/containerd/sync.tar"
		"${ctr_first[@]}" images export --platform linux/amd64 "$tar" "${missing[@]}" >/dev/null
		CONTAINERD_ADDRESSES="$n_containerd_address" "$repo/test/images/import-image.sh" "$tar" >/dev/null
		rm -f "$tar"
	fi
}

# node_kubelet K: node K's kubelet and kube-proxy.
node_kubelet() {
	node_vars "$1"
	mkdir -p "$n_cfg" "$n_dir/kubelet" "$n_dir/pod-logs"
	local kubelet_cert=kubelet serving_cert=kubelet-serving
	if ((n_index > 1)); then kubelet_cert="kubelet-$n_name" serving_cert="kubelet-serving-$n_name"; fi
	cert "$kubelet_cert" "system:node:$n_name" system:nodes clientAuth
	cert "$serving_cert" "$n_name" "" serverAuth "IP:$n_ip,DNS:$n_name"
	chmod 600 "$pki"/*.key
	kubeconfig "$kubelet_cert" "$kubelet_cert"
	echo "nameserver 127.0.0.1" | write_if_changed "$n_dir/resolv.conf"
	# The pods' cgroups live under one named after the cluster, so that down.sh
	# removes exactly these and nothing of another kubelet on the machine.
	local hierarchy parent
	for hierarchy in /sys/fs/cgroup/*/; do
		[[ -f "${hierarchy}cgroup.procs" ]] || continue
		mkdir -p "$hierarchy${n_cgroup_root#/}"
		if [[ -f "${hierarchy}cpuset.cpus" ]]; then
			# A new cpuset cgroup starts empty (v1): give it all the parent has.
			for parent in "$NETNS" "${n_cgroup_root#/}"; do
				[[ -s "$hierarchy$parent/cpuset.cpus" ]] || cat "${hierarchy}cpuset.cpus" >"$hierarchy$parent/cpuset.cpus"
				[[ -s "$hierarchy$parent/cpuset.mems" ]] || cat "${hierarchy}cpuset.mems" >"$hierarchy$parent/cpuset.mems"
			done
		fi
	done
	write_if_changed "$n_cfg/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: $n_cgroup_root
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$n_containerd_address
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization:
  mode: Webhook
tlsCertFile: $pki/$serving_cert.crt
tlsPrivateKeyFile: $pki/$serving_cert.key
address: $n_ip
healthzBindAddress: 127.0.0.1
resolvConf: $n_dir/resolv.conf
clusterDomain: cluster.local
podLogsDir: $n_dir/pod-logs
# Imported images cannot be pulled back: never garbage-collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# A test machine's disk and memory run fuller than a node's; only evict
# when it is really exhausted.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
mergeDefaultEvictionSettings: false
shutdownGracePeriod: 0s
EOF
	# A zone per node, as a cloud's nodes have: topology spread and
	# anti-affinity by zone then mean something.
	start_in "$n_netns" "$(node_component "$1" kubelet)" "$kubelet_bindir/kubelet" \
		--config="$n_cfg/kubelet.yaml" \
		--kubeconfig="$STATE/$kubelet_cert.kubeconfig" \
		--root-dir="$n_dir/kubelet" \
		--hostname-override="$n_name" \
		--node-ip="$n_ip" \
		--node-labels="topology.kubernetes.io/zone=zone-$n_index"
	write_if_changed "$n_cfg/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $STATE/kube-proxy.kubeconfig
mode: iptables
clusterCIDR: $CLUSTER_CIDR
hostnameOverride: $n_name
bindAddress: $n_ip
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# The node's own address (kube-proxy before 1.31 knows no "primary").
nodePortAddresses: ["$n_ip/32"]
# Leave the machine-wide conntrack sysctls alone: the namespace may not write them.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
	start_in "$n_netns" "$(node_component "$1" kube-proxy)" "$bindir/kube-proxy" --config="$n_cfg/kube-proxy.yaml"
}

node_pod_cidr() {
	n_pod_cidr="$(in_netns "${kubectl[@]}" get node "$n_name" -o 'jsonpath={.spec.podCIDR}' 2>/dev/null)"
	[[ -n "$n_pod_cidr" ]]
}
node_is_ready() {
	[[ "$(in_netns "${kubectl[@]}" get node "$n_name" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}
node_service_rules() {
	in_node_netns iptables -t nat -S KUBE-SERVICES | grep -q -- "-d $API_SERVICE_IP/32 .*default/kubernetes:https"
}

# node_ready_wait K: node K registered, its pod network set up, Ready, and
# its kube-proxy's rules in place.
node_ready_wait() {
	node_vars "$1"
	local kubelet_name
	kubelet_name="$(node_component "$1" kubelet)"
	# After a restart the node object may still say Ready from before: the
	# kubelet's own health check tells that this kubelet is running.
	wait_for "$kubelet_name" "kubelet /healthz on $n_name" 60 in_node_netns curl -sf http://127.0.0.1:10248/healthz
	if ((n_index > 1)); then
		# The node IPAM controller gives each node its pod CIDR once it
		# registers; the control plane routes that range to the node.
		wait_for "$kubelet_name" "a pod CIDR for $n_name" 60 node_pod_cidr
		node_pod_cidr
		node_cni_config "$1" "$n_pod_cidr"
		ip -n "$NETNS" route replace "$n_pod_cidr" via "$n_ip" dev "$n_link"
	fi
	wait_for "$kubelet_name" "node $n_name Ready" 180 node_is_ready
	wait_for "$(node_component "$1" kube-proxy)" "kube-proxy's rules for the kubernetes Service on $n_name" 60 node_service_rules
}
