#!/usr/bin/env bash
# Builds, into buildah's storage, the two Node images the tests build the
# Dockerfile on, in place of node:<version>-bookworm-slim, which no registry
# gives here:
#
#   leaderhook.local/node:VERSION-KEY        BASE_IMAGE, the runtime: the pinned
#       `node` package's binary, the Debian libraries it links, /etc/passwd and
#       /etc/group with nonroot 65532, /tmp. Nothing else: no shell, no npm.
#   leaderhook.local/node-build:VERSION-KEY  BUILD_IMAGE: the same, plus what
#       `npm ci` and `npm run build` run with: this machine's npm (the one
#       that installs the work tree), /bin/sh, /usr/bin/env, and this
#       machine's CA bundle, which its npm trusts for the registry.
#
# Prints "BASE_IMAGE BUILD_IMAGE".
#
#   test/images/node-base.sh [PLATFORM]   (default: this machine's, linux/amd64)
#
# For another PLATFORM (linux/arm64 on an amd64 machine) only the runtime is
# that platform's, leaderhook.local/node-ARCH:VERSION-KEY: the same Node
# version from npm and the Debian libraries of that architecture
# (test/images/foreign-node.sh). Its BUILD_IMAGE is this machine's: the
# Dockerfile's build stage runs on the building platform.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=test/images/containers.sh
source "$here/containers.sh"
# shellcheck source=scripts/lib/image.sh
source "$repo/scripts/lib/image.sh"
need_container_tools
platform="${1:-$(host_platform)}"
[[ "$platform" == linux/amd64 || "$platform" == linux/arm64 ]] ||
	{ echo "node-base.sh: no Node base for $platform (linux/amd64 or linux/arm64)" >&2; exit 2; }

host_node="$(readlink -f "$repo/node_modules/node/bin/node")"
[[ -x "$host_node" ]] || { echo "node-base.sh: no $repo/node_modules/node/bin/node: run npm ci first" >&2; exit 1; }
version="$("$host_node" --version)" version="${version#v}"
hash() { sha256sum | cut -c1-16; }
image_exists() { lh_buildah inspect --type image "$1" >/dev/null 2>&1; }

# The runtime's node binary and the libraries it links: lib_sources[i] is
# copied to lib_targets[i] in the image.
if [[ "$platform" == "$(host_platform)" ]]; then
	node_bin="$host_node"
	# The dynamic loader and every library node, sh and env link against (sh
	# and env need none that node does not).
	mapfile -t lib_sources < <(ldd "$node_bin" /bin/sh /usr/bin/env | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u)
	lib_targets=("${lib_sources[@]}")
	repository=leaderhook.local/node
else
	# shellcheck source=test/images/foreign-node.sh
	source "$here/foreign-node.sh"
	foreign_node "${platform#linux/}" "$version" "${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/foreign-node"
	repository="leaderhook.local/node-${platform#linux/}"
fi

# Each image is tagged with a hash of everything it is made of, so it is
# built only when one of those changed; the runtime base does not change with
# this machine's npm or CA bundle.
base_key="$(cat "${BASH_SOURCE[0]}" "$node_bin" "${lib_sources[@]}" | hash)"
base="$repository:$version-$base_key"

# commit_rootfs FROM ROOTFS NAME CONFIG...: NAME is FROM with ROOTFS's
# contents on top and the given `buildah config` options. Earlier tags of
# NAME's repository for this version go: nothing builds on them any more.
commit_rootfs() {
	local from="$1" rootfs="$2" name="$3" ctr old
	shift 3
	ctr="$(lh_buildah from --pull=never "$from")"
	lh_buildah copy --quiet "$ctr" "$rootfs" / >/dev/null
	lh_buildah config "$@" "$ctr"
	lh_buildah commit --quiet --rm "$ctr" "$name" >/dev/null
	for old in $(lh_buildah images --format '{{.Name}}:{{.Tag}}' | grep -F "${name%-*}-" | grep -vxF "$name" || true); do
		lh_buildah rmi "$old" >/dev/null 2>&1 || true
	done
	echo "node-base.sh: built $name" >&2
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! image_exists "$base"; then
	r="$work/base"
	mkdir -p "$r/usr/local/bin" "$r/etc" "$r/tmp"
	cp "$node_bin" "$r/usr/local/bin/node"
	# This machine's strip reads only its own architecture's binaries: another's keeps its debug sections.
	strip --strip-debug "$r/usr/local/bin/node" 2>/dev/null || true
	for i in "${!lib_sources[@]}"; do
		mkdir -p "$r$(dirname "${lib_targets[$i]}")"
		cp -L "${lib_sources[$i]}" "$r${lib_targets[$i]}"
	done
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$r/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$r/etc/group"
	chmod 1777 "$r/tmp"
	# The official image's environment, as far as a runtime needs it.
	commit_rootfs scratch "$r" "$base" --os linux --arch "${platform#linux/}" \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--env NODE_VERSION="$version" --cmd node
fi

if [[ "$platform" != "$(host_platform)" ]]; then
	read -r _ build <<<"$("${BASH_SOURCE[0]}")"
	echo "$base $build"
	exit 0
fi

npm_dir="$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)"
[[ -f "$npm_dir/package.json" && "$(basename "$npm_dir")" == npm ]] || { echo "node-base.sh: npm's package not found (from $(command -v npm))" >&2; exit 1; }
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[[ -f "$ca_bundle" ]] || { echo "node-base.sh: no $ca_bundle (Debian's ca-certificates)" >&2; exit 1; }
build_key="$({
	echo "$base_key"
	cat /bin/sh /usr/bin/env "$ca_bundle"
	(cd "$npm_dir" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 cat)
} | hash)"
build="leaderhook.local/node-build:$version-$build_key"
if ! image_exists "$build"; then
	b="$work/build"
	mkdir -p "$b/bin" "$b/usr/bin" "$b/usr/local/bin" "$b/usr/local/lib/node_modules" "$b/etc/ssl/certs" "$b/root"
	cp /bin/sh "$b/bin/sh"
	cp /usr/bin/env "$b/usr/bin/env"
	cp -a "$npm_dir" "$b/usr/local/lib/node_modules/npm"
	ln -s ../lib/node_modules/npm/bin/npm-cli.js "$b/usr/local/bin/npm"
	ln -s ../lib/node_modules/npm/bin/npx-cli.js "$b/usr/local/bin/npx"
	cp "$ca_bundle" "$b$ca_bundle"
	chmod 0700 "$b/root"
	commit_rootfs "$base" "$b" "$build" --env NODE_EXTRA_CA_CERTS="$ca_bundle" --env npm_config_update_notifier=false
fi
echo "$base $build"
