# shellcheck shell=bash
# Sourced by test/images/node-base.sh for a runtime base of another
# architecture than this machine's (arm64 on amd64), from registries only:
#
#   node       the same version from npm: node-linux-ARCH, the platform package
#              the `node` package installs on such a machine (npm pack)
#   libraries  what that binary links, from Debian's packages of that
#              architecture (the release this machine runs), downloaded by
#              apt-get with a state of its own: the machine's apt
#              configuration and package lists are left as they are
#
# Both are cached in DIR; nothing of it runs here (no emulator is needed).

# foreign_node ARCH VERSION DIR: sets node_bin, lib_sources (files under DIR)
# and lib_targets (where the image has each).
foreign_node() {
	local arch="$1" version="$2" dir="$3/$1"
	local node_dir="$dir/node-$version" root="$dir/debian-root" triplet
	case "$arch" in
	arm64) triplet=aarch64-linux-gnu ;;
	amd64) triplet=x86_64-linux-gnu ;;
	*) echo "foreign-node.sh: no Debian architecture $arch" >&2; return 1 ;;
	esac
	mkdir -p "$dir"
	if [[ ! -x "$node_dir/bin/node" ]]; then
		local tmp
		tmp="$(mktemp -d "$dir/.node-XXXXXX")"
		(cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null && tar -xzf "node-linux-$arch-$version.tgz") ||
			{ rm -rf "$tmp"; echo "foreign-node.sh: npm pack node-linux-$arch@$version failed" >&2; return 1; }
		rm -rf "$node_dir"
		mv "$tmp/package" "$node_dir"
		rm -rf "$tmp"
	fi
	node_bin="$node_dir/bin/node"

	if [[ ! -d "$root" ]]; then
		local apt="$dir/apt" debs="$dir/.debs"
		mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$debs"
		local opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::State::Lists=$apt/lists"
			-o "Dir::Cache=$apt/cache" -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
		local out
		out="$(cd "$debs" && apt-get "${opts[@]}" update 2>&1 &&
			apt-get "${opts[@]}" download "libc6:$arch" "libstdc++6:$arch" "libgcc-s1:$arch" 2>&1)" ||
			{ echo "$out" >&2; echo "foreign-node.sh: apt-get download of Debian's $arch libraries failed" >&2; return 1; }
		mkdir -p "$root.tmp"
		for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$root.tmp"; done
		rm -rf "$debs" "$apt"
		mv "$root.tmp" "$root"
	fi

	# The loader the binary names, then every library it and they need, as
	# the loader finds them: in the multiarch folders.
	local interp need name found queue=()
	interp="$(readelf -l "$node_bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')"
	[[ -n "$interp" && -e "$root$interp" ]] || { echo "foreign-node.sh: no loader $interp in Debian's $arch libc6" >&2; return 1; }
	lib_sources=("$root$interp") lib_targets=("$interp")
	queue=("$node_bin")
	while [[ ${#queue[@]} -gt 0 ]]; do
		need="${queue[0]}" queue=("${queue[@]:1}")
		for name in $(readelf -d "$need" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			[[ " ${lib_targets[*]##*/} " == *" $name "* ]] && continue
			found=""
			for d in "/lib/$triplet" "/usr/lib/$triplet"; do
				[[ -e "$root$d/$name" ]] && { found="$d/$name"; break; }
			done
			[[ -n "$found" ]] || { echo "foreign-node.sh: $name, which $(basename "$need") needs, is in none of Debian's $arch libc6, libstdc++6, libgcc-s1" >&2; return 1; }
			lib_sources+=("$root$found") lib_targets+=("$found")
			queue+=("$root$found")
		done
	done
}
