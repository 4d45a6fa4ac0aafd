#!/usr/bin/env bash
# Builds the leaderhook image without Docker, from a local root filesystem, and
# imports it into the test cluster's containerd. Same layout as the Dockerfile:
# Node from the pinned npm package `node` (the same version as the Dockerfile's
# base), its shared libraries from this Debian system, /app/{package.json,
# node_modules (production only), dist}, user 65532, entrypoint node /app/dist/cli.js.
#
#   scripts/build-local-image.sh [NAME:TAG]   (default leaderhook.test/leaderhook:dev)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-leaderhook.test/leaderhook:dev}"
work="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/image"
rootfs="$work/rootfs"
out="$work/leaderhook.tar"

cd "$repo"
# The pinned Node for npm too (its engine checks), as in any npm script.
export PATH="$repo/node_modules/.bin:$PATH"
start=$(date +%s)
npm run -s build
rm -rf "$rootfs" && mkdir -p "$rootfs/app" "$rootfs/usr/local/bin" "$rootfs/etc" "$rootfs/tmp"

# Production dependencies only: a pruned copy, without touching the work tree.
cp package.json package-lock.json "$rootfs/app/"
cp -a node_modules "$rootfs/app/node_modules"
(cd "$rootfs/app" && npm prune --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null)
cp -a dist "$rootfs/app/dist"

node_bin="$(readlink -f node_modules/node/bin/node)"
cp "$node_bin" "$rootfs/usr/local/bin/node"
strip --strip-debug "$rootfs/usr/local/bin/node" 2>/dev/null || true
# The dynamic loader and every library node links against, at their paths.
for lib in $(ldd "$node_bin" | grep -oE '/[^ ]+'); do
	mkdir -p "$rootfs$(dirname "$lib")"
	cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"

"$repo/test/images/build-image.sh" --user 65532:65532 --env NODE_ENV=production --workdir /app \
	"$name" "$rootfs" "$out" -- /usr/local/bin/node /app/dist/cli.js >/dev/null
echo "built $name from $rootfs ($(du -sh "$rootfs" | cut -f1)) in $(($(date +%s) - start))s: $out" >&2
if [[ "${NO_IMPORT:-}" != 1 ]]; then
	"$repo/test/images/import-image.sh" "$out"
fi
