# shellcheck shell=bash
# Sourced by the image scripts: go_tool NAME builds test/images/cmd/NAME as a
# static binary into the cache, keyed by the module's sources, and prints its
# path. A cached binary is reused as long as nothing it is built from changed.
go_tool() {
	local name="$1" dir key bin
	dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
	key="$(cd "$dir" && cat go.mod go.sum "cmd/$name"/*.go | sha256sum | cut -c1-16)"
	bin="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/bin/$name-$key"
	if [[ ! -x "$bin" ]]; then
		mkdir -p "$(dirname "$bin")"
		(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" "./cmd/$name") >&2 ||
			{ echo "building test/images/cmd/$name failed" >&2; return 1; }
		mv "$bin.tmp" "$bin"
	fi
	echo "$bin"
}
