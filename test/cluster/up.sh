#!/usr/bin/env bash
# Brings up a Kubernetes cluster built from the official Go modules, as local
# processes inside network namespaces joined to nothing:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy
# and a kubelet on containerd + runc, cert-manager's controller and
# cainjector (test/cert-manager), which a user's cluster has before leaderhook
# is installed, and an image registry the node pulls from (Debian's
# docker-registry, TLS from the cluster CA). Node 1 shares the control
# plane's namespace; each further node has a namespace, containerd, kubelet
# and kube-proxy of its own (test/cluster/node.sh). Idempotent: what already
# runs is kept, and --nodes on a running cluster adds the nodes it lacks.
#
#   test/cluster/up.sh [--nodes N]      (npm run cluster:up -- --nodes 3)
#
#   --nodes N   nodes of the cluster, 1 to 8 (default: as many as it has, or 1)
#
# The Kubernetes version is LEADERHOOK_KUBE_VERSION's (test/cluster/build.sh
# --list names them; default in lib.sh). A state directory keeps the version
# that created it.
#
# Afterwards $STATE/env holds KUBECONFIG, LEADERHOOK_NETNS, NODE_IP,
# NODE_NAME, CONTAINERD_ADDRESS (node 1's), CONTAINERD_ADDRESSES (every
# node's), LEADERHOOK_REGISTRY, LEADERHOOK_REGISTRY_CA, LEADERHOOK_KUBE_VERSION
# (the cluster's, e.g. v1.34.4) and LEADERHOOK_KUBE_BINDIR (its components and
# kubectl), and $STATE/nodes.tsv
# a line per node (name, network namespace, address, containerd socket);
# test/cluster/in-netns.sh runs a command inside the namespace with it.
# test/cluster/down.sh stops everything.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"
# shellcheck source=test/cluster/node.sh
source "$here/node.sh"

usage() {
	sed -n '/^#   test\/cluster\/up.sh/,/^#   --nodes/p' "$0" | sed 's/^#//' >&2
}
nodes=""
nodes_given=false
while [[ $# -gt 0 ]]; do
	case "$1" in
	--nodes)
		[[ $# -ge 2 ]] || { usage; die "--nodes needs a number"; }
		nodes="$2" nodes_given=true
		shift 2
		;;
	--nodes=*)
		nodes="${1#--nodes=}" nodes_given=true
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage
		die "unknown argument: $1"
		;;
	esac
done
if $nodes_given; then
	if ! [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || ((nodes > MAX_NODES)); then
		die "--nodes $nodes: a number of nodes from 1 to $MAX_NODES"
	fi
	if ((nodes < $(node_count))) && pid_alive "$(node_component "$(node_count)" kubelet)"; then
		die "--nodes $nodes: the cluster runs $(node_count) nodes; shrinking it needs down.sh first"
	fi
else
	nodes="$(node_count)"
fi

[[ "$(id -u)" == 0 ]] || die "must run as root (network namespaces, containerd, kubelet)"

# --- packages: installed before anything is isolated, while apt can reach its archive
phase "packages"
need=()
for pair in containerd:containerd runc:runc iptables:iptables ip:iproute2 openssl:openssl \
	conntrack:conntrack nsenter:util-linux curl:curl ctr:containerd mount:mount pgrep:procps \
	docker-registry:docker-registry skopeo:skopeo; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
	need+=(containernetworking-plugins)
if [[ ${#need[@]} -gt 0 ]]; then
	echo "installing: ${need[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
	if [[ " ${need[*]} " == *" docker-registry "* ]]; then
		# The package comes with a machine-wide service (an init script and a
		# systemd unit: /etc/docker/registry's registry on :5000 of the
		# machine's own network). The cluster runs its own registry inside the
		# namespace; the package's must not run, now or after a reboot. Its
		# postinst starts it through invoke-rc.d unless /usr/sbin/policy-rc.d
		# denies that (container images usually ship one that does), and
		# through systemd only where systemd runs.
		systemctl disable docker-registry.service >/dev/null 2>&1 ||
			update-rc.d docker-registry disable >/dev/null 2>&1 || true
		if [[ -d /run/systemd/system ]]; then
			systemctl stop docker-registry.service >&2 || true
		fi
		# The init script's start records its PID there; its stop ends exactly that process.
		if [[ -s /var/run/docker-registry.pid ]]; then
			echo "stopping the docker-registry service the package started (pid $(cat /var/run/docker-registry.pid))" >&2
			/etc/init.d/docker-registry stop >&2 || true
		fi
	fi
fi
command -v go >/dev/null || die "go is needed to build the cluster binary and images"

# Processes recorded but none alive: the previous cluster was stopped without
# down.sh (killed, or the machine restarted). Its mounts, containers and
# cgroups go first, so that nothing new starts on top of them.
recorded=false
alive=false
for pidfile in "$STATE"/pids/*.pid; do
	[[ -e "$pidfile" ]] || continue
	recorded=true
	if pid_alive "$(basename "$pidfile" .pid)"; then alive=true; fi
done
if $recorded && ! $alive; then
	phase "clean up after unclean stop"
	echo "the previous cluster in $STATE was not stopped by down.sh: cleaning up first" >&2
	"$here/down.sh" >&2
fi

phase "kubecluster binary"
"$here/build.sh" >/dev/null
bindir="$("$here/build.sh" --print-bindir)"
kube_version="$("$bindir/kubectl" version --client -o json | sed -n 's/.*"gitVersion": *"\(v[0-9.]*\)".*/\1/p' | head -n1)"
[[ -n "$kube_version" ]] || die "could not read the version of $bindir/kubectl"
# A cluster's state (etcd's data above all) belongs to the version that
# wrote it: another version gets a state directory of its own.
if [[ -s "$STATE/kube-version" && "$(cat "$STATE/kube-version")" != "$kube_version" ]]; then
	die "$STATE holds a cluster of Kubernetes $(cat "$STATE/kube-version"), not $kube_version: set LEADERHOOK_CLUSTER_DIR and LEADERHOOK_NETNS to another cluster's, or down.sh --purge this one"
fi
# The kubelets may run an older minor than the control plane, as in a
# cluster mid-upgrade (the control plane first, then each node's kubelet in
# place): LEADERHOOK_KUBELET_VERSION. up.sh again without it restarts the
# kubelets on the control plane's version, their containers left running.
kubelet_bindir="$bindir" kubelet_version="$kube_version"
if [[ -n "${LEADERHOOK_KUBELET_VERSION:-}" ]]; then
	"$here/build.sh" --version "$LEADERHOOK_KUBELET_VERSION" >/dev/null
	kubelet_bindir="$("$here/build.sh" --version "$LEADERHOOK_KUBELET_VERSION" --print-bindir)"
	kubelet_version="$("$kubelet_bindir/kubelet" --version | awk '{print $2}')"
	skew=$(($(minor_of "$kube_version") - $(minor_of "$kubelet_version")))
	((skew >= 0 && skew <= 3)) ||
		die "LEADERHOOK_KUBELET_VERSION=$LEADERHOOK_KUBELET_VERSION: a kubelet may be up to three minors older than the API server ($kube_version), never newer"
fi
phase "cert-manager binary and CRDs"
cert_manager="$("$repo/test/cert-manager/build.sh")"
cert_manager_crds="$("$repo/test/cert-manager/build.sh" --crds)"

mkdir -p "$STATE"/{pids,logs,pki,etcd,cni/net.d,cni/ipam,containerd,kubelet,pod-logs,config,registry}
echo "$kube_version" >"$STATE/kube-version"
pki="$STATE/pki"
cfg="$STATE/config"

# write_if_changed FILE: FILE gets stdin, untouched when equal. kube-proxy
# exits when its configuration file is written, whatever the content.
write_if_changed() {
	local file="$1"
	cat >"$file.new"
	if cmp -s "$file.new" "$file"; then
		rm -f "$file.new"
	else
		mv "$file.new" "$file"
	fi
}

# --- network namespace
phase "network namespace"
modprobe br_netfilter 2>/dev/null || true
modprobe overlay 2>/dev/null || true
[[ -e "/run/netns/$NETNS" ]] || ip netns add "$NETNS"
ip -n "$NETNS" link set lo up
# Created with -n, both ends of the pair are born inside the namespace: the
# root namespace's links are never touched.
ip -n "$NETNS" link show "$NODE_LINK" >/dev/null 2>&1 ||
	ip -n "$NETNS" link add "$NODE_LINK" type veth peer name "$PEER_LINK"
ip -n "$NETNS" addr replace "$NODE_IP/24" dev "$NODE_LINK"
ip -n "$NETNS" addr replace "$PEER_IP/24" dev "$PEER_LINK"
ip -n "$NETNS" link set "$NODE_LINK" up
ip -n "$NETNS" link set "$PEER_LINK" up
# A locally generated packet to a ClusterIP needs a route before kube-proxy's
# OUTPUT DNAT rewrites it; this one leads nowhere else. No default route.
ip -n "$NETNS" route replace "$SERVICE_CIDR" dev "$NODE_LINK" src "$NODE_IP"
in_netns sysctl -qw net.ipv4.ip_forward=1
in_netns sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null ||
	echo "warning: net.bridge.bridge-nf-call-iptables unavailable: a pod cannot reach a Service it backs itself" >&2

# --- certificates
phase "certificates"
# cert NAME CN ORG USAGE [SANS]: an ECDSA key and a certificate signed by the cluster CA.
cert() {
	local name="$1" cn="$2" org="$3" usage="$4" sans="${5:-}" subj
	[[ -f "$pki/$name.crt" ]] && return
	subj="/CN=$cn"
	[[ -n "$org" ]] && subj="/O=$org$subj"
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usage"
		[[ -n "$sans" ]] && echo "subjectAltName=$sans"
	} >"$pki/$name.ext"
	openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj" 2>/dev/null
	openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 3650 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
	rm -f "$pki/$name.csr" "$pki/$name.ext"
}
if [[ ! -f "$pki/ca.crt" ]]; then
	openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 -subj "/CN=leaderhook-cluster-ca" \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
fi
cert apiserver kube-apiserver "" serverAuth \
	"IP:$NODE_IP,IP:$API_SERVICE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin leaderhook-admin system:masters clientAuth
cert controller-manager system:kube-controller-manager "" clientAuth
cert scheduler system:kube-scheduler "" clientAuth
cert kube-proxy system:kube-proxy "" clientAuth
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
cert registry leaderhook-registry "" serverAuth "IP:$REGISTRY_IP,DNS:$REGISTRY_DNS_NAME"
if [[ ! -f "$pki/sa.key" ]]; then
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
	openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
fi
chmod 600 "$pki"/*.key

# kubeconfig NAME CERT: a kubeconfig with the CA and client pair embedded,
# so it can be copied anywhere inside the namespace.
kubeconfig() {
	local file="$STATE/$1.kubeconfig" name="$2"
	write_if_changed "$file" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: leaderhook
		  cluster:
		    server: https://$NODE_IP:6443
		    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
		users:
		- name: $name
		  user:
		    client-certificate-data: $(base64 -w0 "$pki/$name.crt")
		    client-key-data: $(base64 -w0 "$pki/$name.key")
		contexts:
		- name: leaderhook
		  context:
		    cluster: leaderhook
		    user: $name
		current-context: leaderhook
	EOF
	chmod 600 "$file"
}
for name in admin controller-manager scheduler kube-proxy; do
	kubeconfig "$name" "$name"
done
kubectl=("$bindir/kubectl" --kubeconfig "$STATE/admin.kubeconfig")

write_if_changed "$STATE/env" <<EOF
KUBECONFIG=$STATE/admin.kubeconfig
LEADERHOOK_NETNS=$NETNS
NODE_IP=$NODE_IP
NODE_NAME=$NODE_NAME
CONTAINERD_ADDRESS=$CONTAINERD_ADDRESS
CONTAINERD_ADDRESSES="$(for ((k = 1; k <= nodes; k++)); do node_vars "$k"; echo "$n_containerd_address"; done | paste -sd' ')"
LEADERHOOK_REGISTRY=$REGISTRY
LEADERHOOK_KUBE_VERSION=$kube_version
LEADERHOOK_KUBE_BINDIR=$bindir
LEADERHOOK_KUBELET_VERSION=$kubelet_version
LEADERHOOK_REGISTRY_CA=$pki/ca.crt
EOF

# --- process management
# start_in NETNS NAME CMD...: run CMD in network namespace NETNS, in its own session (a signal
# to the terminal or job that ran up.sh does not reach it), logging to
# logs/NAME.log and recording its PID. nsenter and setsid exec, so the PID
# recorded is the component's own.
start_in() {
	local netns="$1" name="$2" pid
	shift 2
	if pid_alive "$name"; then
		pid="$(cat "$STATE/pids/$name.pid")"
		if [[ "$(cat "$STATE/pids/$name.args" 2>/dev/null)" == "$(signature "$@")" ]]; then
			echo "$name already running (pid $pid)" >&2
			return
		fi
		# Started by an older up.sh with other flags: restart it with these.
		echo "$name (pid $pid) runs with other flags: restarting it" >&2
		kill -TERM "$pid"
		while [[ -d "/proc/$pid" ]]; do sleep 0.1; done
	fi
	echo "=== $(date -Is) $*" >>"$STATE/logs/$name.log"
	nsenter --net="/run/netns/$netns" -- setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
	echo "$!" >"$STATE/pids/$name.pid"
	echo "$1" >"$STATE/pids/$name.cmd"
	signature "$@" >"$STATE/pids/$name.args"
	# Until the job has exec'd nsenter its command line is this shell's, and
	# pid_alive would take it for dead: a busy machine can take that long.
	local tries
	for ((tries = 0; tries < 50; tries++)); do
		pid_alive "$name" && break
		sleep 0.1
	done
}

# start NAME CMD...: start_in the control plane's namespace.
start() {
	start_in "$NETNS" "$@"
}

# signature CMD...: the command line and the contents of the configuration
# files it names, so that a changed file also restarts its component.
signature() {
	local arg file
	echo "$*"
	for arg in "$@"; do
		file="${arg#*=}"
		if [[ ("$file" == "$cfg"/* || "$file" == "$STATE"/nodes/*/config/* || "$file" == */containerd/config.toml) && -f "$file" ]]; then
			sha256sum "$file"
		fi
	done
}

# wait_for NAME DESC SECONDS CMD...: poll CMD until it succeeds; give up
# early, with the end of its log, if component NAME died.
wait_for() {
	local name="$1" desc="$2" timeout="$3" deadline
	shift 3
	deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [[ -n "$name" ]] && ! pid_alive "$name"; then
			tail -n 25 "$STATE/logs/$name.log" >&2
			die "$name exited while waiting for $desc (log: $STATE/logs/$name.log)"
		fi
		if ((SECONDS >= deadline)); then
			[[ -n "$name" ]] && tail -n 25 "$STATE/logs/$name.log" >&2
			die "timed out after ${timeout}s waiting for $desc${name:+ (log: $STATE/logs/$name.log)}"
		fi
		sleep 0.2
	done
}

# --- node 1's containerd, early: the cluster's images are imported meanwhile
phase "containerd"
node_cni_config 1 "$POD_CIDR"
node_containerd 1

phase "cluster images"
cluster_images="$("$repo/test/images/build-test-images.sh")"
node_images 1 <<<"$cluster_images"

# --- the image registry, where the node pulls what a user's cluster would
# pull from theirs (released images, charts). Its blobs stay in
# $STATE/registry across down.sh; only --purge removes them.
phase "registry"
write_if_changed "$cfg/registry.yml" <<EOF
version: 0.1
log:
  level: info
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $STATE/registry
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REGISTRY
  tls:
    certificate: $pki/registry.crt
    key: $pki/registry.key
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: true
    interval: 10s
    threshold: 3
EOF
start registry "$(command -v docker-registry)" serve "$cfg/registry.yml"
# /v2/ answers 200 once it serves, over TLS the cluster CA vouches for.
wait_for registry "the registry's /v2/" 30 in_netns curl -sf --cacert "$pki/ca.crt" "https://$REGISTRY/v2/"

# --- control plane
phase "etcd"
start etcd "$bindir/etcd" --data-dir "$STATE/etcd" \
	--listen-client-url http://127.0.0.1:2379 --listen-peer-url http://127.0.0.1:2380
wait_for etcd "etcd health" 60 in_netns curl -sf http://127.0.0.1:2379/health

phase "kube-apiserver"
start kube-apiserver "$bindir/kube-apiserver" \
	--etcd-servers=http://127.0.0.1:2379 \
	--advertise-address="$NODE_IP" --secure-port=6443 \
	--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/ca.crt" \
	--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" \
	--kubelet-client-key="$pki/apiserver-kubelet-client.key" \
	--kubelet-certificate-authority="$pki/ca.crt" \
	--kubelet-preferred-address-types=InternalIP,Hostname \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$pki/sa.pub" \
	--service-account-signing-key-file="$pki/sa.key" \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--authorization-mode=Node,RBAC \
	--enable-admission-plugins=NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,PodSecurity \
	--allow-privileged=true \
	--profiling=false
curl_admin=(in_netns curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key")
wait_for kube-apiserver "kube-apiserver /readyz" 120 "${curl_admin[@]}" "https://$NODE_IP:6443/readyz"

phase "controllers and scheduler"
start kube-controller-manager "$bindir/kube-controller-manager" \
	--kubeconfig="$STATE/controller-manager.kubeconfig" \
	--authentication-kubeconfig="$STATE/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false \
	--controllers='*' \
	--use-service-account-credentials=true \
	--service-account-private-key-file="$pki/sa.key" \
	--root-ca-file="$pki/ca.crt" \
	--allocate-node-cidrs=true --cluster-cidr="$CLUSTER_CIDR" --node-cidr-mask-size=24 \
	--service-cluster-ip-range="$SERVICE_CIDR" \
	--profiling=false
start kube-scheduler "$bindir/kube-scheduler" \
	--kubeconfig="$STATE/scheduler.kubeconfig" \
	--authentication-kubeconfig="$STATE/scheduler.kubeconfig" \
	--authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
	--bind-address=127.0.0.1 --leader-elect=false --profiling=false
wait_for kube-controller-manager "kube-controller-manager /healthz" 60 in_netns curl -skf https://127.0.0.1:10257/healthz
wait_for kube-scheduler "kube-scheduler /healthz" 60 in_netns curl -skf https://127.0.0.1:10259/healthz

# --- cert-manager, as a cluster that leaderhook is installed on runs it. Part
# of the cluster like the controllers, so that no test or demo owns it: one
# recorded process each, stopped by down.sh, none orphaned. Without leader
# election: up.sh guarantees the one instance, and a Lease held by a process
# that died would only hold up the next one.
phase "cert-manager"
for crd in "$cert_manager_crds"/cert-manager.io_*.yaml; do
	in_netns "${kubectl[@]}" apply --server-side --force-conflicts -f "$crd" >/dev/null
done
in_netns "${kubectl[@]}" wait --for=condition=Established --timeout=60s \
	crd/certificates.cert-manager.io crd/certificaterequests.cert-manager.io crd/issuers.cert-manager.io >/dev/null
start cert-manager-controller "$cert_manager" controller --kubeconfig="$STATE/admin.kubeconfig" \
	--netns="$NETNS" --health-addr=127.0.0.1:9403 --leader-elect=false
start cert-manager-cainjector "$cert_manager" cainjector --kubeconfig="$STATE/admin.kubeconfig" \
	--netns="$NETNS" --health-addr=127.0.0.1:9404 --leader-elect=false
wait_for cert-manager-controller "cert-manager's controller /readyz" 90 in_netns curl -sf http://127.0.0.1:9403/readyz
wait_for cert-manager-cainjector "cert-manager's cainjector /readyz" 90 in_netns curl -sf http://127.0.0.1:9404/readyz

# --- nodes
phase "kubelet and kube-proxy"
node_kubelet 1
node_ready_wait 1
wait_for "" "the default ServiceAccount" 60 in_netns "${kubectl[@]}" get serviceaccount default -n default
# Nodes of a bigger cluster before, stopped uncleanly: their Node objects
# would stay NotReady forever.
for ((k = nodes + 1; k <= MAX_NODES; k++)); do
	pid_alive "$(node_component "$k" kubelet)" ||
		in_netns "${kubectl[@]}" delete node "$(node_name "$k")" --ignore-not-found --wait=false >/dev/null
done
for ((k = 2; k <= nodes; k++)); do
	phase "node $(node_name "$k")"
	node_network "$k"
	node_containerd "$k"
	node_images "$k" <<<"$cluster_images"
	node_kubelet "$k"
	node_ready_wait "$k"
done
for ((k = 1; k <= nodes; k++)); do
	node_vars "$k"
	printf '%s\t%s\t%s\t%s\n' "$n_name" "$n_netns" "$n_ip" "$n_containerd_address"
done | write_if_changed "$STATE/nodes.tsv"
phase ""
echo "cluster up: KUBECONFIG=$STATE/admin.kubeconfig (inside network namespace $NETNS; run tools with test/cluster/in-netns.sh)"
