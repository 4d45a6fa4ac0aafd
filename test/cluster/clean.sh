#!/usr/bin/env bash
# Removes from the running local cluster what a test or benchmark run that
# was cut short (killed, timed out, a session ended) left behind: down.sh
# keeps etcd's data, so without this its operators would still run beside
# the next run's and time its load. Only objects the tests make are touched:
#   - the hold finalizer (leaderhook.test/hold) on any pod, which would keep
#     its namespace Terminating for ever;
#   - every namespace labelled leaderhook.io/test (createTestNamespace, the
#     releaser harness, the benchmarks) and the demo's two namespaces, which
#     npm run demo deletes and makes again itself;
#   - every node labelled leaderhook.io/test (the fake nodes of bench:scale
#     and the releaser tests).
# Waits until the namespaces are gone. test/run-all.sh runs it once the
# cluster is up.
#
#   test/cluster/clean.sh               (npm run cluster:clean)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"

case "${1:-}" in
"") ;;
-h | --help)
	sed -n '/^#   test\/cluster\/clean.sh/p' "$0" | sed 's/^#//' >&2
	exit 0
	;;
*) die "usage: clean.sh (no arguments; unknown: $1)" ;;
esac

k() { "$here/in-netns.sh" kubectl "$@"; }

# strip FINALIZER_PATTERN KIND [-n NAMESPACE | -A]: drops the finalizers of
# every object of KIND that carries one matching the pattern.
strip() {
	local pattern="$1" kind="$2" ns pod
	shift 2
	while read -r ns pod; do
		[[ -n "$pod" ]] || continue
		echo "[clean] $kind $ns/$pod: removing its finalizers ($pattern)"
		k -n "$ns" patch "$kind" "$pod" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
	done < <(k get "$kind" "$@" -o jsonpath='{range .items[?(@.metadata.finalizers)]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.metadata.finalizers}{"\n"}{end}' |
		awk -v p="$pattern" '$0 ~ p {print $1 " " $2}')
}

strip 'leaderhook\.test/hold' pods -A

# A pod bound to a fake node has no kubelet to confirm its end: it would stay
# Terminating, and its namespace with it.
test_nodes=$(k get nodes -l leaderhook.io/test -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
for node in $test_nodes; do
	while read -r ns pod; do
		[[ -n "$pod" ]] || continue
		k -n "$ns" delete pod "$pod" --grace-period=0 --force >/dev/null 2>&1
	done < <(k get pods -A --field-selector "spec.nodeName=$node" -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}')
	echo "[clean] deleting test node $node and its pods"
	k delete node "$node" >/dev/null
done

mapfile -t namespaces < <(
	k get namespaces -l leaderhook.io/test -o name
	k get namespaces demo-with-leaderhook demo-without-leaderhook -o name --ignore-not-found
)
if [[ ${#namespaces[@]} -gt 0 ]]; then
	echo "[clean] deleting the namespaces an earlier run left (${#namespaces[@]}): ${namespaces[*]#namespace/}"
	k delete --wait=false "${namespaces[@]}" >/dev/null
	# kopf marks the objects it handles with a finalizer that only a running
	# kopf removes; its operator is gone with the namespace's pods.
	for ns in "${namespaces[@]#namespace/}"; do strip 'kopf\.zalando\.org' configmaps -n "$ns"; done
	k wait --for=delete --timeout=300s "${namespaces[@]}" >/dev/null
fi
echo "[clean] the cluster holds no namespace or node of an earlier test run"
