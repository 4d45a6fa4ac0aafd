#!/usr/bin/env bash
# Publishes a release folder to an OCI registry: the image (every platform of
# its index) as REGISTRY/leaderhook:VERSION and the chart as
# oci://REGISTRY/charts/leaderhook, version VERSION. What a maintainer runs
# after `npm run release`; the tests run it against the local cluster's
# registry.
#
#   scripts/publish.sh [--ca-file CA] [--overwrite] RELEASE_DIR REGISTRY
#
# See usage() below, or run it with --help.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The release folder's layout, in one place: printf patterns of VERSION,
# relative to RELEASE_DIR.
IMAGE_ARCHIVE='leaderhook-%s.oci.tar'
CHART_ARCHIVE='charts/leaderhook-%s.tgz'
CHECKSUMS='SHA256SUMS'
# Where they go, under REGISTRY.
IMAGE_REPOSITORY='leaderhook'
CHART_REPOSITORY='charts'

usage() {
	cat <<EOF
usage: scripts/publish.sh [--ca-file CA] [--overwrite] RELEASE_DIR REGISTRY

Publishes the release in RELEASE_DIR to REGISTRY (host[:port][/path], no scheme):
  $(printf "$IMAGE_ARCHIVE" VERSION)   -> REGISTRY/$IMAGE_REPOSITORY:VERSION   (skopeo copy --all)
  $(printf "$CHART_ARCHIVE" VERSION) -> oci://REGISTRY/$CHART_REPOSITORY/leaderhook --version VERSION (helm push)
after checking every file against RELEASE_DIR/$CHECKSUMS.

  --ca-file CA   trust the registry's certificate through this CA (PEM) in
                 addition to the system's (skopeo --dest-cert-dir, helm --ca-file)
  --overwrite    replace a VERSION that REGISTRY already has; without it an
                 existing tag is refused, since a node that pulled it keeps the
                 old one (imagePullPolicy IfNotPresent)

Credentials are the tools' own: skopeo login REGISTRY and helm registry login
REGISTRY beforehand (none for the local cluster's registry). helm is \$HELM, else
the one test/tools pins (test/tools/go-tool.sh helm).
EOF
}

die() {
	echo "publish.sh: $*" >&2
	exit 1
}

ca_file="" overwrite=false args=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	-h | --help) usage; exit 0 ;;
	--ca-file)
		[[ $# -ge 2 ]] || die "--ca-file needs a file"
		ca_file="$2"
		shift 2
		;;
	--ca-file=*) ca_file="${1#*=}"; shift ;;
	--overwrite) overwrite=true; shift ;;
	--) shift; args+=("$@"); break ;;
	-*) usage >&2; die "unknown option $1" ;;
	*) args+=("$1"); shift ;;
	esac
done
[[ ${#args[@]} -eq 2 ]] || { usage >&2; die "needs RELEASE_DIR and REGISTRY, got ${#args[@]} argument(s)"; }
dir="${args[0]%/}" registry="${args[1]%/}"
[[ -d "$dir" ]] || die "$dir: no such directory"
[[ "$registry" != *://* ]] || die "REGISTRY is host[:port][/path] without a scheme (got $registry)"
[[ "$registry" =~ ^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._/-]+)?$ ]] || die "REGISTRY $registry is not host[:port][/path]"
if [[ -n "$ca_file" ]]; then
	[[ -f "$ca_file" ]] || die "--ca-file $ca_file: no such file"
	grep -q -- '-----BEGIN CERTIFICATE-----' "$ca_file" || die "--ca-file $ca_file holds no PEM certificate"
fi

# The version is what the image archive's name says; there must be exactly one.
shopt -s nullglob
image_glob="${IMAGE_ARCHIVE//%s/*}"
images=("$dir"/$image_glob)
shopt -u nullglob
[[ ${#images[@]} -eq 1 ]] ||
	die "$dir holds ${#images[@]} files named $image_glob, needs exactly one: is it a release folder (npm run release)?"
name="$(basename "${images[0]}")"
prefix="${IMAGE_ARCHIVE%%\%s*}" suffix="${IMAGE_ARCHIVE#*%s}"
version="${name#"$prefix"}"
version="${version%"$suffix"}"
# A tag and a chart version at once: SemVer as Helm takes it, in tag characters.
[[ "$version" =~ ^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	die "$name: version \"$version\" is not MAJOR.MINOR.PATCH[-PRERELEASE]"
# shellcheck disable=SC2059 # the patterns are the format
image_file="$(printf "$IMAGE_ARCHIVE" "$version")" chart_file="$(printf "$CHART_ARCHIVE" "$version")"
[[ -f "$dir/$chart_file" ]] || die "$dir/$chart_file: no such file (the chart of version $version)"

# Every file published must be listed, and every listed file must match.
[[ -f "$dir/$CHECKSUMS" ]] || die "$dir/$CHECKSUMS: no such file: a release folder lists its files' digests there"
for file in "$image_file" "$chart_file"; do
	awk -v f="$file" '{ sub(/^\*/, "", $2) } $2 == f || $2 == "./" f { found = 1 } END { exit !found }' "$dir/$CHECKSUMS" ||
		die "$dir/$CHECKSUMS does not list $file"
done
if ! out="$(cd "$dir" && sha256sum --check --strict "$CHECKSUMS" 2>&1)"; then
	echo "$out" | grep -v ': OK$' >&2
	die "$dir does not match its $CHECKSUMS: nothing published"
fi

# The chart must say the version its name says, and run the image published beside it.
chart_yaml="$(tar -xzOf "$dir/$chart_file" leaderhook/Chart.yaml 2>/dev/null)" ||
	die "$dir/$chart_file holds no leaderhook/Chart.yaml"
chart_version="$(sed -n 's/^version: *["'\'']\{0,1\}\([^"'\'' ]*\).*/\1/p' <<<"$chart_yaml")"
app_version="$(sed -n 's/^appVersion: *["'\'']\{0,1\}\([^"'\'' ]*\).*/\1/p' <<<"$chart_yaml")"
[[ "$chart_version" == "$version" ]] || die "$chart_file: Chart.yaml says version \"$chart_version\", not $version"
[[ "$app_version" == "$version" ]] ||
	die "$chart_file: Chart.yaml says appVersion \"$app_version\": its default image tag would not be the $version published here"

# The tools last: a folder that is no release is refused on any machine.
command -v skopeo >/dev/null || die "skopeo not found: apt-get install skopeo"
if [[ -n "${HELM:-}" ]]; then
	helm="$HELM"
	[[ -x "$helm" ]] || die "HELM=$helm is not an executable"
else
	helm="$(bash "$repo/test/tools/go-tool.sh" helm)" || die "no helm: building the pinned one failed (or set HELM)"
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tls=() helm_tls=()
if [[ -n "$ca_file" ]]; then
	# skopeo takes a directory of *.crt files (added to the system's roots); helm takes the file.
	mkdir "$scratch/certs"
	cp "$ca_file" "$scratch/certs/ca.crt"
	tls=(--dest-cert-dir "$scratch/certs")
	helm_tls=(--ca-file "$ca_file")
fi
inspect_tls=("${tls[@]/--dest-cert-dir/--cert-dir}")

image_ref="$registry/$IMAGE_REPOSITORY:$version"
chart_ref="$registry/$CHART_REPOSITORY/leaderhook:$version"
# skopeo inspect tells "does not exist" from "cannot ask": only the first lets a publish go on.
exists() {
	local out msg
	if out="$(skopeo inspect --raw "${inspect_tls[@]}" "docker://$1" 2>&1)"; then return 0; fi
	if grep -qiE 'manifest unknown|not found|name unknown' <<<"$out"; then return 1; fi
	# skopeo's last line without its logger's time= and level=.
	msg="$(sed -n 's/.*msg="\(.*\)"$/\1/p' <<<"$out" | tail -n 1 | sed 's/\\"/"/g')"
	out="${msg:-$out}"
	if grep -q 'x509' <<<"$out"; then die "$registry's certificate is not trusted: pass --ca-file with its CA ($out)"; fi
	die "cannot ask $registry about $1: $out"
}
if ! $overwrite; then
	for ref in "$image_ref" "$chart_ref"; do
		if exists "$ref"; then die "$ref already exists: a published version must not change (nodes keep what they pulled); --overwrite replaces it"; fi
	done
fi

echo "publishing $version from $dir to $registry" >&2
skopeo copy --quiet --all "${tls[@]}" --digestfile "$scratch/digest" \
	"oci-archive:$dir/$image_file" "docker://$image_ref" ||
	die "skopeo copy of $image_file to $image_ref failed"
echo "image: $image_ref@$(cat "$scratch/digest")"

# helm keeps registry logins under HELM_REGISTRY_CONFIG; only the push's own
# output is of interest here ("Pushed: ...", "Digest: ...").
if ! out="$("$helm" push "$dir/$chart_file" "oci://$registry/$CHART_REPOSITORY" "${helm_tls[@]}" 2>&1)"; then
	echo "$out" >&2
	die "helm push of $chart_file to oci://$registry/$CHART_REPOSITORY failed"
fi
echo "chart: oci://$chart_ref@$(sed -n 's/^Digest: *//p' <<<"$out")"
