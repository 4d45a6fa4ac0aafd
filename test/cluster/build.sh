#!/usr/bin/env bash
# Builds the one Kubernetes binary of the local cluster (cmd/kubecluster),
# cached by the hash of everything it is built from, and links one name per
# component next to it. Prints the binary's path on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"

phase "hash sources"
mapfile -t sources < <(cd "$here" && find cmd -type f -name '*.go' | LC_ALL=C sort)
key="$(cd "$here" && cat go.mod go.sum "${sources[@]}" | sha256sum | cut -c1-16)"
bindir="$CACHE/bin"
bin="$bindir/kubecluster-$key"
mkdir -p "$bindir"

if [[ ! -x "$bin" ]]; then
	phase "go build kubecluster"
	version=v1.34.4
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=34 -X $pkg.gitTreeState=clean"
		ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "building $bin (cold: 20-40 minutes on 2 cores; log: $CACHE/build-$key.log)" >&2
	# -x and -v write a line per module fetched and per package compiled, so
	# that progress can be followed in the log (npm run demo does).
	if ! (cd "$here" && go mod download -x && go build -v -trimpath -ldflags="$ldflags" -o "$bin.tmp" ./cmd/kubecluster) >"$CACHE/build-$key.log" 2>&1; then
		tail -n 30 "$CACHE/build-$key.log" >&2
		die "go build ./cmd/kubecluster failed (full log: $CACHE/build-$key.log)"
	fi
	mv "$bin.tmp" "$bin"
fi

phase "link components"
for name in kubecluster etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; do
	ln -sfn "$(basename "$bin")" "$bindir/$name"
done
phase ""
echo "$bin"
