#!/usr/bin/env bash
# Builds a tool the chart's tests run — helm or kustomize — from the Go module
# test/tools/NAME pins (the `tool` line of its go.mod), as a static binary in
# the cache keyed by that go.mod and go.sum, and prints the binary's path. A
# cached binary is reused without touching the network, so once this ran
# outside, it also works inside the cluster's network namespace.
#
#   test/tools/go-tool.sh helm|kustomize
set -euo pipefail
name="${1:?usage: go-tool.sh helm|kustomize}"
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$name"
[[ -f "$dir/go.mod" ]] || { echo "go-tool.sh: no Go module test/tools/$name" >&2; exit 2; }
key="$(cat "$dir/go.mod" "$dir/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
bin="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/bin/$name-$key"
if [[ ! -x "$bin" ]]; then
	package="$(sed -n 's/^tool //p' "$dir/go.mod")"
	[[ -n "$package" ]] || { echo "go-tool.sh: test/tools/$name/go.mod names no tool" >&2; exit 2; }
	ldflags='-s -w'
	if [[ "$name" == helm ]]; then
		# What helm's Makefile sets for a release, so `helm version` names the
		# pinned version instead of "v4.3+unreleased".
		version="$(cd "$dir" && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
		ldflags+=" -X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.metadata="
	fi
	mkdir -p "$(dirname "$bin")"
	echo "building $package ($key); minutes on a cold Go cache" >&2
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$bin.tmp" "$package") ||
		{ echo "go-tool.sh: building $package in test/tools/$name failed" >&2; exit 1; }
	mv "$bin.tmp" "$bin"
fi
echo "$bin"
