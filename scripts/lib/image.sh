# shellcheck shell=bash
# The leaderhook image, built one way for the tests (scripts/build-local-image.sh)
# and for a release (scripts/release.sh): the Dockerfile through buildah, on
# the local Node bases of test/images/node-base.sh, with the build arguments of
# scripts/release/metadata.ts. Same arguments, same layer cache: the image the
# tests run is the image a release ships.
#
# Sourced after test/images/containers.sh, with $repo set to the checkout.

# image_metadata: sets meta_version, meta_revision, meta_created and
# meta_source, once for every artifact of a build.
image_metadata() {
	local out line
	out="$("$repo/node_modules/.bin/node" "$repo/scripts/release/metadata.ts")" || return 1
	while IFS= read -r line; do
		case "${line%%=*}" in
		version) meta_version="${line#*=}" ;;
		revision) meta_revision="${line#*=}" ;;
		created) meta_created="${line#*=}" ;;
		source) meta_source="${line#*=}" ;;
		esac
	done <<<"$out"
	[[ -n "${meta_version:-}" && -n "${meta_revision:-}" && -n "${meta_created:-}" ]] ||
		{ echo "image.sh: scripts/release/metadata.ts printed no version, revision or created" >&2; return 1; }
}

# host_platform: this machine's platform as buildah names it (linux/amd64).
host_platform() {
	case "$(uname -m)" in
	x86_64) echo linux/amd64 ;;
	aarch64 | arm64) echo linux/arm64 ;;
	*) echo "image.sh: no Node base for $(uname -m)" >&2; return 1 ;;
	esac
}

# can_run_platform PLATFORM: whether this machine runs PLATFORM's binaries:
# its own, or another's through a registered emulator (qemu-user-static's
# binfmt_misc entry, e.g. qemu-aarch64 for linux/arm64).
can_run_platform() {
	[[ "$1" == "$(host_platform)" ]] && return 0
	local entry
	case "$1" in
	linux/arm64) entry=qemu-aarch64 ;;
	linux/amd64) entry=qemu-x86_64 ;;
	*) return 1 ;;
	esac
	[[ "$(head -n1 "/proc/sys/fs/binfmt_misc/$entry" 2>/dev/null)" == enabled ]]
}

# build_image NAME PLATFORM LOGDIR: builds the Dockerfile for PLATFORM
# (linux/amd64 or linux/arm64) as NAME and sets image_id; image_metadata must
# have run. buildah's output goes to LOGDIR/build-ARCH.log, shown when the
# build fails.
build_image() {
	local name="$1" platform="$2" logdir="$3" bases base build_base log iid
	bases="$("$repo/test/images/node-base.sh" "$platform")" || return 1
	read -r base build_base <<<"$bases"
	# The runtime base by its id: once buildah (1.28) has built the build
	# stage for BUILDPLATFORM, it looks later stages' images up by name for
	# that platform, and finds no arm64 one; an id is not matched to a platform.
	base="$(lh_buildah inspect --type image --format '{{.FromImageID}}' "$base")" || return 1
	log="$logdir/build-${platform#*/}.log" iid="$logdir/build-${platform#*/}.iid"
	# BUILDPLATFORM is given because buildah (Debian bookworm's 1.28) sets it
	# to the target's platform under --platform, and would look for an arm64
	# build image.
	local build=(build --layers --pull=never --network host --platform "$platform" --file "$repo/Dockerfile"
		--build-arg BUILDPLATFORM="$(host_platform)"
		--build-arg BUILD_IMAGE="$build_base" --build-arg BASE_IMAGE="$base"
		--build-arg VERSION="$meta_version" --build-arg REVISION="$meta_revision"
		--build-arg CREATED="$meta_created" --build-arg SOURCE="$meta_source")
	# The build stage gets a tag of its own: it keeps the stage's cached layers
	# (npm ci above all) from being pruned as leftovers below.
	if ! { lh_buildah "${build[@]}" --target build --tag "$name-build" "$repo" &&
		lh_buildah "${build[@]}" --iidfile "$iid" --tag "$name" "$repo"; } >"$log" 2>&1; then
		tail -n 40 "$log" >&2
		echo "image.sh: buildah could not build the Dockerfile for $platform (whole log: $log)" >&2
		return 1
	fi
	image_id="$(cut -d: -f2 "$iid")"
	# Earlier builds' layers that no tagged image uses any more.
	lh_buildah rmi --prune >/dev/null 2>&1 || true
}
