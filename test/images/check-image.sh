#!/usr/bin/env bash
# Tries a leaderhook image archive with podman the way the cluster runs it:
# read-only root filesystem, no network, as the image's own user, which must
# be 65532:65532. Loaded into a throwaway storage, so the archive itself is
# what is tried. Exits 1 naming the first check that fails. An image of
# another PLATFORM runs through the emulator registered for it (qemu-user-static).
#
#   test/images/check-image.sh ARCHIVE NAME:TAG [PLATFORM]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/images/containers.sh
source "$here/containers.sh"
if [[ $# -lt 2 || $# -gt 3 ]]; then
	echo "usage: check-image.sh ARCHIVE NAME:TAG [PLATFORM]" >&2
	exit 2
fi
archive="$1" name="$2" platform=()
[[ $# -eq 3 ]] && platform=(--platform "$3")
need_container_tools

tmp="$(mktemp -d)"
use_storage "$tmp/root" "$tmp/run"
cleanup() {
	lh_podman rmi --all --force >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
lh_podman load --quiet --input "$archive" >/dev/null ||
	{ echo "check-image.sh: podman load $archive failed" >&2; exit 1; }

fail() {
	echo "check-image.sh: $name: $*" >&2
	exit 1
}

# run ARGS...: the image's entrypoint with ARGS; sets out (stdout and stderr)
# and rc. Podman's default rlimits (1048576 open files) are above what root
# may raise them to on this machine (no CAP_SYS_RESOURCE), and the runtime
# gets at most 32768 processes from conmon: ask for no more than that.
run() {
	rc=0
	out="$(lh_podman run "${platform[@]}" --rm --network none --read-only \
		--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=32768:32768 "$@" 2>&1)" || rc=$?
}

user="$(lh_podman image inspect --format '{{.Config.User}}' "$name")"
[[ "$user" == 65532:65532 ]] || fail "runs as \"$user\", not 65532:65532"
run --entrypoint node "$name" -e 'console.log(process.getuid() + ":" + process.getgid() + " " + process.version)'
[[ $rc == 0 && "$out" == 65532:65532\ v* ]] || fail "node as the image's user: exit $rc: $out"

run "$name" version
[[ $rc == 0 && "$out" == "leaderhook "*" (commit "*")" ]] || fail "version: exit $rc: $out"
run "$name" --help
[[ $rc == 0 && "$out" == *"Usage: leaderhook <command>"* ]] || fail "--help: exit $rc: $out"
run --user 65532:65532 "$name" release --help
[[ $rc == 0 && "$out" == *"Usage: leaderhook release"* ]] || fail "release --help: exit $rc: $out"

# Without its Secret mounted the webhook must say which file it lacks, in one
# line, and exit 1.
run "$name" webhook --hook-image "$name"
[[ $rc == 1 && "$out" == "leaderhook webhook: reading serving certificate /etc/leaderhook/tls/tls.crt: ENOENT" ]] ||
	fail "webhook without certificates: exit $rc: $out"
echo "check-image.sh: $name${3:+ ($3)}: runs as 65532:65532 on a read-only root; version, --help, release --help, webhook without certificates: as expected" >&2
