#!/usr/bin/env bash
# Builds the operators under test — lfl-operator (operator-lib leader-for-life),
# lease-operator (controller-runtime Lease election) and client-go-operator
# (client-go's LeaderElector on a Lease held as the pod's name) — as static binaries,
# wraps each in a minimal image (the binary, /etc/passwd and /etc/group with the
# nonroot user 65532, nothing else) and imports the images into the local
# cluster's containerd:
#
#   leaderhook.test/lfl-operator:dev
#   leaderhook.test/lease-operator:dev
#   leaderhook.test/client-go-operator:dev
#
# Binaries and archives are cached under ~/.cache/leaderhook/operators, keyed by
# the module's sources: a rerun without changes only re-imports.
#
#   test/operators/build.sh
#
# NO_IMPORT=1 only builds. With LEADERHOOK_KUBECONFIG (a cluster of your own)
# nothing is imported either; the archives it prints load into kind with
# `kind load image-archive ARCHIVE` (k3d: `k3d image import ARCHIVE`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/operators"
tag=dev
mkdir -p "$cache/bin"

start=$(date +%s)
key="$(cd "$here" && find build.sh go.mod go.sum cmd internal -type f \( -name '*.go' -o -name 'go.*' -o -name build.sh \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"

archives=()
for op in lfl-operator lease-operator client-go-operator; do
	bin="$cache/bin/$op-$key"
	if [[ ! -x "$bin" ]]; then
		echo "building $op ($key)" >&2
		(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" "./cmd/$op") ||
			{ echo "build.sh: go build ./cmd/$op in $here failed" >&2; exit 1; }
		mv "$bin.tmp" "$bin"
	fi
	archive="$cache/$op-$key.tar"
	if [[ ! -f "$archive" ]]; then
		rootfs="$(mktemp -d)"
		trap 'rm -rf "$rootfs"' EXIT
		mkdir -p "$rootfs/etc"
		install -m 0755 "$bin" "$rootfs/$op"
		printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
		printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
		"$repo/test/images/build-image.sh" --user 65532:65532 "leaderhook.test/$op:$tag" "$rootfs" "$archive.tmp" -- "/$op" >/dev/null ||
			{ echo "build.sh: building image leaderhook.test/$op:$tag failed" >&2; exit 1; }
		mv "$archive.tmp" "$archive"
		rm -rf "$rootfs"
		trap - EXIT
	fi
	archives+=("$archive")
	echo "leaderhook.test/$op:$tag $archive"
done

if [[ "${NO_IMPORT:-}" == 1 ]]; then
	:
elif [[ -n "${LEADERHOOK_KUBECONFIG:-}" ]]; then
	echo "LEADERHOOK_KUBECONFIG is set: load the archives above into that cluster yourself (kind load image-archive ARCHIVE)" >&2
else
	"$repo/test/images/import-image.sh" "${archives[@]}" >/dev/null
	echo "imported ${#archives[@]} operator images" >&2
fi
echo "operators built in $(($(date +%s) - start))s" >&2
