#!/usr/bin/env bash
# `npm test`: everything, in the order that fails fastest.
#   1. type-check, lint, format check
#   2. unit, golden and HTTP tests (no cluster), the test tooling's own tests,
#      the CLI's npm package installed and run, the Helm chart against deploy/
#      and as released, and the webhook peer's equality
#   3. the local Kubernetes cluster (built from the official Go modules) comes up,
#      the test images are built and imported, and the integration and
#      end-to-end tests run inside the cluster's network namespace
#   4. `npm run demo` runs as a user runs it, on the warm cluster
#   5. the cluster grows to three nodes and the multi-node tests run (drains)
#   6. the cluster goes down again (also on failure)
# LEADERHOOK_SKIP_CLUSTER=1 stops after step 2. LEADERHOOK_KEEP_CLUSTER=1 leaves
# the cluster running. With LEADERHOOK_KUBECONFIG set, step 3 uses that cluster
# instead of building one (see docs/cluster.md).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
node="$repo/node_modules/.bin/node"
log_dir="$(mktemp -d)"
passed=0 failed=0 cancelled=0 status=0

step_start=0
step() { step_start=$(date +%s); printf '\n=== %s\n' "$*"; }
step_done() { printf '=== done in %ss\n' "$(($(date +%s) - step_start))"; }

# count FILE: add node's test runner summary in FILE to the totals. A test
# cancelled (its suite's hook failed, or a timeout) fails the run as a failed
# one does, so it is counted apart rather than hidden.
count() {
	local p f c
	p=$(grep -E '^ℹ pass [0-9]+' "$1" | awk '{s+=$3} END {print s+0}')
	f=$(grep -E '^ℹ fail [0-9]+' "$1" | awk '{s+=$3} END {print s+0}')
	c=$(grep -E '^ℹ cancelled [0-9]+' "$1" | awk '{s+=$3} END {print s+0}')
	passed=$((passed + p)) failed=$((failed + f)) cancelled=$((cancelled + c))
}

run_tests() { # run_tests NAME [PREFIX...] -- FILES...
	local name="$1" prefix=() out="$log_dir/$1.log"
	shift
	while [[ "$1" != -- ]]; do prefix+=("$1"); shift; done
	shift
	"${prefix[@]}" "$node" --test --test-concurrency=1 "$@" 2>&1 | tee "$out"
	local rc=${PIPESTATUS[0]}
	count "$out"
	[[ $rc -eq 0 ]] || status=1
}

step "type-check, lint, format"
npm run -s typecheck || status=1
npm run -s lint || status=1
npm run -s format:check >/dev/null || { echo "formatting differs: run npm run format" >&2; status=1; }
step_done

step "unit, golden and HTTP tests"
run_tests unit -- 'test/unit/**/*.test.ts'
step_done

# test/unit tests the product; test/tooling tests what the tests stand on (the
# recorder, the split-brain check, the benchmarks' reports, the compatibility
# renderer, the cluster scripts' refusals). It is not test/support/test/
# because what it tests also lives in test/bench, test/matrix and
# test/cluster, and test/support stays the library the tests import.
step "test tooling tests"
run_tests tooling -- 'test/tooling/**/*.test.ts'
step_done

# The npm package a release ships, installed into an empty prefix and run on
# the oldest Node.js it claims (from npm, cached) and on Node.js 24.
step "the CLI as users install it: npm run release's package, on the oldest Node.js it claims and on 24"
run_tests release -- 'test/release/*.test.ts'
step_done

# helm and kustomize come from the Go modules test/tools pins: kubectl, whose
# kustomize the cluster tests use, exists only once the cluster is built.
step "Helm chart: lint, goldens, the same objects as deploy/ (the first run builds helm and kustomize)"
if bash test/tools/go-tool.sh helm >/dev/null && bash test/tools/go-tool.sh kustomize >/dev/null; then
	run_tests chart -- 'test/chart/*.test.ts'
else
	status=1
fi
step_done

step "Go tests of the test tooling (images, operators, cert-manager)"
(cd test/images && go test ./...) || status=1
(cd test/operators && go test ./...) || status=1
# The flags of test/cert-manager/build.sh, so that both share the compiled
# packages: the first run compiles client-go, controller-runtime and
# cert-manager (minutes), later runs take seconds.
(cd test/cert-manager && CGO_ENABLED=0 go test -trimpath ./...) || status=1
step_done

# The Go controller-runtime peer of bench:webhook must patch every golden pod
# as leaderhook does (loopback only; the first build takes minutes).
step "webhook peer: same patched pods as leaderhook"
run_tests peer -- test/peers/webhook/equality.test.ts
step_done

if [[ "${LEADERHOOK_SKIP_CLUSTER:-}" != 1 ]]; then
	cluster_started=0
	if [[ -z "${LEADERHOOK_KUBECONFIG:-}" ]]; then
		step "local Kubernetes cluster"
		if bash test/cluster/up.sh; then cluster_started=1; else status=1; fi
		# down.sh keeps etcd's data: what a run cut short left would run beside this one.
		if [[ $cluster_started == 1 ]]; then bash test/cluster/clean.sh || status=1; fi
		step_done
	fi
	if [[ -n "${LEADERHOOK_KUBECONFIG:-}" || $cluster_started == 1 ]]; then
		step "test images"
		bash test/images/build-test-images.sh && bash test/operators/build.sh && bash scripts/build-local-image.sh || status=1
		# The release a user takes (test/e2e/readme-install.test.ts installs
		# from it), and its CLI installed once here, where the npm registry is
		# reachable: that fills npm's cache for the README's offline install.
		bash scripts/release.sh --force || status=1
		# The next patch release of the same sources, for the upgrade test.
		bash test/release/build-next-release.sh >/dev/null || status=1
		"$node" -e "import('./test/support/cli-package.ts').then((m) => m.installedCli())" || status=1
		bash test/tools/go-tool.sh helm >/dev/null || status=1 # for test/e2e/helm.test.ts
		step_done
		step "integration and end-to-end tests (real cluster)"
		in_cluster=()
		[[ -z "${LEADERHOOK_KUBECONFIG:-}" ]] && in_cluster=(bash test/cluster/in-netns.sh)
		run_tests cluster "${in_cluster[@]}" -- 'test/integration/**/*.test.ts' 'test/e2e/**/*.test.ts'
		step_done
	fi
	# The demo brings up the local cluster itself: with a cluster of one's own
	# there is nothing to run it on.
	if [[ $cluster_started == 1 ]]; then
		step "npm run demo, as a user runs it (warm)"
		run_tests demo -- test/demo/npm-run-demo.test.ts
		step_done
		# Last, since a pod of the single-node tests could land on any node
		# once there are three.
		step "multi-node tests: the cluster grown to three nodes"
		if bash test/cluster/up.sh --nodes 3; then
			run_tests multinode bash test/cluster/in-netns.sh -- 'test/multinode/*.test.ts'
		else
			status=1
		fi
		step_done
	fi
	if [[ $cluster_started == 1 && "${LEADERHOOK_KEEP_CLUSTER:-}" != 1 ]]; then
		step "cluster down"
		bash test/cluster/down.sh || status=1
		step_done
	fi
fi

rm -rf "$log_dir"
echo
echo "tests: $passed passed, $failed failed, $cancelled cancelled"
exit $status
