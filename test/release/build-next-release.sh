#!/usr/bin/env bash
# The release after this one, for the upgrade test (test/e2e/upgrade.test.ts):
# this checkout's HEAD in a scratch worktree with the next patch version in
# every place a version lives (package.json and its lock, the chart's version
# and appVersion, deploy/'s image tag), built by that worktree's own
# scripts/release.sh — the image (this machine's platform) and the chart. A
# second build of the same sources, as a real N+1 is, only numbered higher.
#
#   test/release/build-next-release.sh [--out DIR]
#
# Default DIR: ~/.cache/leaderhook/next-release/VERSION. Prints DIR. Uncommitted
# changes are not in it: it is HEAD's tree.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "build-next-release.sh: $*" >&2; exit 1; }
out=""
case "${1:-}" in
"") ;;
--out) out="${2:?--out needs a folder}" ;;
--help | -h) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) die "unknown argument $1 (usage: build-next-release.sh [--out DIR])" ;;
esac

version="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$repo/package.json" | head -n 1)"
[[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "package.json's version \"$version\" is not MAJOR.MINOR.PATCH"
next="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.$((BASH_REMATCH[3] + 1))"
out="${out:-${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/next-release/$next}"

scratch="$(mktemp -d)"
tree="$scratch/leaderhook"
git -C "$repo" worktree add --detach --quiet "$tree" HEAD || die "git worktree add $tree failed"
trap 'git -C "$repo" worktree remove --force "$tree"; rm -rf "$scratch"' EXIT
ln -s "$repo/node_modules" "$tree/node_modules"
(cd "$tree" && npm version --no-git-tag-version --allow-same-version "$next" >/dev/null) || die "npm version $next failed"
sed -i "s/^version: .*/version: $next/; s/^appVersion: .*/appVersion: \"$next\"/" "$tree/charts/leaderhook/Chart.yaml"
sed -i "s/^  newTag: .*/  newTag: $next/" "$tree/deploy/kustomization.yaml"
platform="linux/$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')"
mkdir -p "$(dirname "$out")"
bash "$tree/scripts/release.sh" --only image,chart --platforms "$platform" --force --out "$out" >&2 ||
	die "scripts/release.sh of $next failed"
echo "$out"
