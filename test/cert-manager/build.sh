#!/usr/bin/env bash
# cert-manager for the local cluster, from its Go module (test/cert-manager,
# whose go.mod pins the version): the binary of its controller and cainjector,
# and the CRDs its release ships (the module's deploy/crds). Both need the Go
# module proxy the first time, so test/cluster/up.sh calls this before it
# starts anything inside the cluster's network namespace.
#
#   test/cert-manager/build.sh           prints the binary's path; builds it into
#                                        ~/.cache/leaderhook/bin, keyed by its
#                                        sources, when none is there yet
#   test/cert-manager/build.sh --crds    prints the directory of the CRDs
#   test/cert-manager/build.sh --version prints the pinned cert-manager version
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
module=github.com/cert-manager/cert-manager
die() { echo "test/cert-manager/build.sh: $*" >&2; exit 1; }

version() { (cd "$here" && go list -m -f '{{.Version}}' "$module") || die "go.mod requires no $module"; }

case "${1:-}" in
--version)
	version
	exit
	;;
--crds)
	dir="$(cd / && go mod download -json "$module@$(version)" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
	[[ -d "$dir/deploy/crds" ]] || die "no deploy/crds in $module@$(version) (module directory: ${dir:-none})"
	echo "$dir/deploy/crds"
	exit
	;;
"") ;;
*) die "usage: build.sh [--crds|--version]" ;;
esac

mapfile -t sources < <(cd "$here" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort)
key="$(cd "$here" && cat "${sources[@]}" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
bin="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/bin/cert-manager-$key"
if [[ ! -x "$bin" ]]; then
	mkdir -p "$(dirname "$bin")"
	log="$bin.log"
	echo "building cert-manager $(version) (test/cert-manager) into $bin; minutes on a cold Go cache (log: $log)" >&2
	# The flags of test/run-all.sh's `go test` of this module, so that both
	# share the compiled packages.
	if ! (cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" ./cmd/cert-manager) >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		die "go build ./cmd/cert-manager failed (full log: $log)"
	fi
	mv "$bin.tmp" "$bin"
	rm -f "$log"
fi
echo "$bin"
