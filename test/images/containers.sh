# shellcheck shell=bash
# Sourced by the scripts that build or try the leaderhook image: buildah (builds
# the Dockerfile, no daemon) and podman (runs an image once, to try it), both
# Debian packages, installed when missing.
#
# Both use a storage of their own, not the machine's default
# /var/lib/containers: that one belongs to whatever else on the machine uses
# podman or buildah, and our layer cache and clean-ups must not touch it, nor
# it ours. It lives with the project's other caches (rm -rf the cache dir
# clears it), outside the cluster's state (down.sh --purge keeps the layer
# cache), and apart from the cluster's containerd, which gets images only
# through `ctr images import`. Its run-time state (mount counts, locks,
# podman's events) is on /run, which a reboot clears, as containers/storage
# expects; one directory per storage, so that another LEADERHOOK_CACHE never
# shares it. Only containers/image's digest cache stays in
# /var/lib/containers/cache: buildah has no flag for it. The kernel's overlay
# driver shares unchanged layers between builds; vfs would copy every layer.
CONTAINERS_STORE="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/containers"

# use_storage ROOT RUNROOT: where lh_buildah and lh_podman keep images and
# containers from now on (check-image.sh loads into a throwaway one).
use_storage() {
	_storage=(--root "$1" --runroot "$2" --storage-driver overlay)
	_podman_tmp="$2/libpod"
}
use_storage "$CONTAINERS_STORE/storage" "/run/leaderhook/containers-$(sha256sum <<<"$CONTAINERS_STORE" | cut -c1-12)"

# need_container_tools: install buildah and podman (with runc and conmon, which
# podman runs containers with) unless they are there. Idempotent.
need_container_tools() {
	local need=() pair
	[[ "$(id -u)" == 0 ]] || { echo "$(basename "$0"): must run as root (buildah mounts overlay layers, apt installs it)" >&2; return 1; }
	for pair in buildah:buildah podman:podman runc:runc conmon:conmon; do
		command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
	done
	if [[ ${#need[@]} -gt 0 ]]; then
		echo "installing: ${need[*]}" >&2
		local out
		out="$(export DEBIAN_FRONTEND=noninteractive
			apt-get update -qq 2>&1 && apt-get install -y -qq --no-install-recommends "${need[@]}" 2>&1)" ||
			{ echo "$out" >&2; echo "$(basename "$0"): apt-get install ${need[*]} failed" >&2; return 1; }
	fi
}

# lh_buildah ARGS...: buildah on the project's storage, without a daemon or
# an OCI runtime (RUN steps in a chroot).
lh_buildah() {
	BUILDAH_ISOLATION=chroot buildah "${_storage[@]}" "$@"
}

# lh_podman ARGS...: podman on the same storage. No systemd or journald here:
# cgroups through cgroupfs, events to a file.
lh_podman() {
	podman "${_storage[@]}" --tmpdir "$_podman_tmp" --cgroup-manager cgroupfs --events-backend file "$@"
}
