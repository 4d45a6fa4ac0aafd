#!/usr/bin/env bash
# Builds the one Kubernetes binary of the local cluster (cmd/kubecluster) for
# one Kubernetes version, cached by the hash of everything it is built from,
# and links one name per component to it. Prints the binary's path on stdout.
#
# Usage: build.sh [--version V]     build (if not cached) and link V
#        build.sh [--version V] --print-bindir
#                                   print V's link directory, build nothing
#        build.sh --list            print the supported versions, one a line:
#                                   minor, exact version, "default" for the default
#
# V is a minor (1.37) or an exact version (1.37.2 or v1.37.2) that --list
# names; --version overrides LEADERHOOK_KUBE_VERSION, whose default is
# KUBE_VERSION_DEFAULT in lib.sh. Anything else is a one-line error naming the
# supported versions, and nothing is built.
#
# Module files: the default version's are go.mod and go.sum; every other's
# are versions/v1.MINOR.mod and .sum (go build -modfile; versions/update.sh
# writes them, and --list reads the versions from them).
# Binary: $CACHE/bin/kubecluster-<16 hex of sha256(module file, its sum,
# cmd/**/*.go as compiled)>, one per version; build log $CACHE/build-<key>.log.
# Links (kubecluster, etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy, kubelet, kubectl): in $CACHE/bin for the default
# version, in $CACHE/bin/v1.MINOR/ for any other.
# The version variables (gitVersion, gitMajor, gitMinor) come from the
# k8s.io/kubernetes version of the module file. A module file whose `go` line
# is newer than the local Go is built with GOTOOLCHAIN=$KUBE_GOTOOLCHAIN (lib.sh).
# Before 1.34 the kubelet's NewKubeletCommand takes no context: main.go is
# compiled through a -overlay ($CACHE/overlay/v1.MINOR/) with that call changed.
# Extra go flags go through GOFLAGS, e.g. GOFLAGS="-buildvcs=false -p=1" for one
# package at a time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=test/cluster/lib.sh
source "$here/lib.sh"

requested="$KUBE_VERSION"
action=build
while (($#)); do
	case "$1" in
	--version)
		(($# >= 2)) || die "--version needs a value (see --list)"
		requested="$2"
		shift 2
		;;
	--version=*) requested="${1#--version=}" && shift ;;
	--list) action=list && shift ;;
	--print-bindir) action=bindir && shift ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
		exit 0
		;;
	*) die "unknown argument: $1 (usage: build.sh [--version V] [--list] [--print-bindir])" ;;
	esac
done

# The supported versions: go.mod for the default, versions/v1.MINOR.mod for
# the others; each exact version is the k8s.io/kubernetes its file requires.
kube_of() { awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$1"; }
declare -A exact=() modfile=()
default_minor="${KUBE_VERSION_DEFAULT#1.}"
exact[$default_minor]="$(kube_of "$here/go.mod")"
modfile[$default_minor]=go.mod
[[ "${exact[$default_minor]}" == "v$KUBE_VERSION_DEFAULT".* ]] ||
	die "go.mod requires k8s.io/kubernetes ${exact[$default_minor]}, but KUBE_VERSION_DEFAULT in lib.sh is $KUBE_VERSION_DEFAULT"
for file in "$here"/versions/v1.*.mod; do
	[[ -e "$file" ]] || continue
	minor="$(basename "$file" .mod)"
	minor="${minor#v1.}"
	[[ "$minor" != "$default_minor" ]] || die "versions/$(basename "$file") duplicates the default version's go.mod"
	exact[$minor]="$(kube_of "$file")"
	[[ "${exact[$minor]}" == "v1.$minor".* ]] || die "versions/$(basename "$file") does not require k8s.io/kubernetes v1.$minor.x"
	modfile[$minor]="versions/$(basename "$file")"
done
mapfile -t minors < <(printf '%s\n' "${!exact[@]}" | sort -n)

if [[ "$action" == list ]]; then
	for minor in "${minors[@]}"; do
		if [[ "$minor" == "$default_minor" ]]; then
			echo "1.$minor ${exact[$minor]} default"
		else
			echo "1.$minor ${exact[$minor]}"
		fi
	done
	exit 0
fi

supported() {
	local minor out=""
	for minor in "${minors[@]}"; do out+="${out:+, }1.$minor (${exact[$minor]})"; done
	echo "$out"
}
if [[ ! "$requested" =~ ^v?1\.([0-9]+)(\.([0-9]+))?$ ]] || [[ -z "${exact[${BASH_REMATCH[1]}]:-}" ]] ||
	[[ -n "${BASH_REMATCH[2]}" && "v1.${BASH_REMATCH[1]}${BASH_REMATCH[2]}" != "${exact[${BASH_REMATCH[1]}]}" ]]; then
	die "unsupported Kubernetes version '$requested' (--version or LEADERHOOK_KUBE_VERSION); supported: $(supported)"
fi
minor="${BASH_REMATCH[1]}"
version="${exact[$minor]}"
mod="${modfile[$minor]}"
sum="${mod%.mod}.sum"
if [[ "$minor" == "$default_minor" ]]; then
	bindir="$CACHE/bin"
	modflags=()
else
	bindir="$CACHE/bin/v1.$minor"
	modflags=("-modfile=$mod")
fi
if [[ "$action" == bindir ]]; then
	echo "$bindir"
	exit 0
fi

phase "hash sources"
mapfile -t sources < <(cd "$here" && find cmd -type f -name '*.go' | LC_ALL=C sort)
# Before v1.34, kubelet's NewKubeletCommand takes no context. main.go stays
# as the default version needs it (its bytes are in the default's cache key),
# and these versions compile it through an overlay with the one call changed.
compiled=("${sources[@]}")
overlay=()
if ((minor < 34)); then
	overlay_dir="$CACHE/overlay/v1.$minor"
	mkdir -p "$overlay_dir"
	call='kubelet.NewKubeletCommand(context.Background())'
	[[ "$(grep -cF "$call" "$here/cmd/kubecluster/main.go")" == 1 ]] ||
		die "cmd/kubecluster/main.go no longer calls $call once: update the pre-1.34 overlay in build.sh"
	{
		sed "s/kubelet\.NewKubeletCommand(context\.Background())/kubelet.NewKubeletCommand()/" "$here/cmd/kubecluster/main.go"
		printf '\n// Added by build.sh for Kubernetes before v1.34: the kubelet takes no context.\nvar _ = context.Background\n'
	} >"$overlay_dir/main.go"
	printf '{"Replace":{"%s":"%s"}}\n' "$here/cmd/kubecluster/main.go" "$overlay_dir/main.go" >"$overlay_dir/overlay.json"
	overlay=("-overlay=$overlay_dir/overlay.json")
	for i in "${!compiled[@]}"; do
		[[ "${compiled[$i]}" != cmd/kubecluster/main.go ]] || compiled[i]="$overlay_dir/main.go"
	done
fi
key="$(cd "$here" && cat "$mod" "$sum" "${compiled[@]}" | sha256sum | cut -c1-16)"
bin="$CACHE/bin/kubecluster-$key"
mkdir -p "$bindir"

# A module file that needs a newer Go than this machine's: the one toolchain
# allowed, which the go command fetches from the module proxy.
go_line="$(awk '$1 == "go" { print $2; exit }' "$here/$mod")"
local_go="$(go env GOVERSION)"
local_go="${local_go#go}"
if [[ "$(printf '%s\n%s\n' "$go_line" "$local_go" | sort -V | tail -n1)" != "$local_go" ]]; then
	echo "Kubernetes $version needs Go $go_line (local: $local_go): exporting GOTOOLCHAIN=$KUBE_GOTOOLCHAIN" >&2
	export GOTOOLCHAIN="$KUBE_GOTOOLCHAIN"
fi

if [[ ! -x "$bin" ]]; then
	phase "go build kubecluster"
	ldflags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
		ldflags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "building $bin for Kubernetes $version (cold: 20-40 minutes on 2 cores; log: $CACHE/build-$key.log)" >&2
	# -x and -v write a line per module fetched and per package compiled, so
	# that progress can be followed in the log (npm run demo does).
	if ! (cd "$here" && go mod download "${modflags[@]}" -x &&
		go build "${modflags[@]}" "${overlay[@]}" -v -trimpath -ldflags="$ldflags" -o "$bin.tmp" ./cmd/kubecluster) >"$CACHE/build-$key.log" 2>&1; then
		tail -n 30 "$CACHE/build-$key.log" >&2
		die "go build ./cmd/kubecluster for Kubernetes $version failed (full log: $CACHE/build-$key.log)"
	fi
	mv "$bin.tmp" "$bin"
fi

phase "link components"
target="$(basename "$bin")"
[[ "$bindir" == "$CACHE/bin" ]] || target="../$target"
for name in kubecluster etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; do
	ln -sfn "$target" "$bindir/$name"
done
phase ""
echo "$bin"
