#!/usr/bin/env bash
# Builds the operators under test — lfl-operator (operator-lib leader-for-life),
# lease-operator (controller-runtime Lease election) and client-go-operator
# (client-go's LeaderElector on a Lease held as the pod's name) as static binaries,
# josdk-operator (the Java Operator SDK's Lease election, held as $HOSTNAME) as a
# jar with its dependencies on a jlink runtime of this machine's JDK 17,
# kopf-operator (kopf's peering, Python) as its script and pinned packages on
# this machine's CPython 3.11 — wraps each in a minimal image (the program,
# /etc/passwd and /etc/group with the nonroot user 65532; for Java and Python
# the runtime and the libraries it links, no shell) and imports the images into
# the local cluster's containerd:
#
#   leaderhook.test/lfl-operator:dev
#   leaderhook.test/lease-operator:dev
#   leaderhook.test/client-go-operator:dev
#   leaderhook.test/josdk-operator:dev
#   leaderhook.test/kopf-operator:dev
#
# Binaries and archives are cached under ~/.cache/leaderhook/operators, keyed by
# the sources (the Go module's; the Java project's, the JDK's release and this
# script; the Python operator's, the interpreter's version and this script): a
# rerun without changes only re-imports. Maven's repository is
# ~/.cache/leaderhook/maven: only the first Java build downloads (about 60 MB,
# 1 min), later ones run offline-capable from it. kopf-operator's packages come
# from PyPI at each of its builds (pip --no-cache-dir, 17 wheels, 4 MB).
#
#   test/operators/build.sh
#
# NO_IMPORT=1 only builds. With LEADERHOOK_KUBECONFIG (a cluster of your own)
# nothing is imported either; the archives it prints load into kind with
# `kind load image-archive ARCHIVE` (k3d: `k3d image import ARCHIVE`).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/operators"
tag=dev
mkdir -p "$cache/bin"

start=$(date +%s)
key="$(cd "$here" && find build.sh go.mod go.sum cmd internal -type f \( -name '*.go' -o -name 'go.*' -o -name build.sh \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"

# A root filesystem with /etc/passwd and /etc/group naming the nonroot user 65532.
new_rootfs() {
	rootfs="$(mktemp -d)"
	trap 'rm -rf "$rootfs"' EXIT
	mkdir -p "$rootfs/etc"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
}

# Packs $rootfs as image leaderhook.test/OP:$tag, run as the nonroot user,
# into ARCHIVE, then removes it: pack_image OP ARCHIVE [--env K=V ...] -- COMMAND...
pack_image() {
	local op="$1" archive="$2" flags=()
	shift 2
	while [[ $# -gt 0 && "$1" != -- ]]; do
		flags+=("$1")
		shift
	done
	"$repo/test/images/build-image.sh" --user 65532:65532 "${flags[@]}" "leaderhook.test/$op:$tag" "$rootfs" "$archive.tmp" "$@" >/dev/null ||
		{ echo "build.sh: building image leaderhook.test/$op:$tag failed" >&2; exit 1; }
	mv "$archive.tmp" "$archive"
	rm -rf "$rootfs"
	trap - EXIT
}

archives=()
for op in lfl-operator lease-operator client-go-operator; do
	bin="$cache/bin/$op-$key"
	if [[ ! -x "$bin" ]]; then
		echo "building $op ($key)" >&2
		(cd "$here" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin.tmp" "./cmd/$op") ||
			{ echo "build.sh: go build ./cmd/$op in $here failed" >&2; exit 1; }
		mv "$bin.tmp" "$bin"
	fi
	archive="$cache/$op-$key.tar"
	if [[ ! -f "$archive" ]]; then
		new_rootfs
		install -m 0755 "$bin" "$rootfs/$op"
		pack_image "$op" "$archive" -- "/$op"
	fi
	archives+=("$archive")
	echo "leaderhook.test/$op:$tag $archive"
done

# josdk-operator: `mvn package` (the jar and its runtime dependencies in lib/),
# then a jlink runtime of the modules jdeps finds, plus jdk.crypto.ec, which no
# class names but TLS to an API server with an ECDSA certificate needs.
op=josdk-operator
jdk=/usr/lib/jvm/java-17-openjdk-amd64
[[ -x "$jdk/bin/jlink" ]] || { echo "build.sh: $op needs JDK 17 with jlink at $jdk" >&2; exit 1; }
jkey="$(cd "$here" && { cat build.sh "$jdk/release"; find "$op" -path "$op/target" -prune -o -type f -print | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16)"
archive="$cache/$op-$jkey.tar"
if [[ ! -f "$archive" ]]; then
	echo "building $op ($jkey)" >&2
	# Maven's output goes to a log, shown when it fails: -q still prints colour codes.
	(cd "$here/$op" && JAVA_HOME="$jdk" mvn -B -q -Dmaven.repo.local="${LEADERHOOK_CACHE:-$HOME/.cache/leaderhook}/maven" package) >"$cache/$op-mvn.log" 2>&1 ||
		{ cat "$cache/$op-mvn.log" >&2; echo "build.sh: mvn package in $here/$op failed (log: $cache/$op-mvn.log)" >&2; exit 1; }
	target="$here/$op/target"
	modules="$("$jdk/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 17 --class-path "$target/lib/*" "$target/$op.jar" "$target"/lib/*.jar 2>/dev/null | tail -1)"
	[[ "$modules" == java.base* ]] || { echo "build.sh: jdeps found no modules for $op: $modules" >&2; exit 1; }
	new_rootfs
	mkdir -p "$rootfs/app"
	"$jdk/bin/jlink" --add-modules "$modules,jdk.crypto.ec" --strip-debug --compress=2 --no-header-files --no-man-pages \
		--output "$rootfs/opt/java" ||
		{ echo "build.sh: jlink of $modules for $op failed" >&2; exit 1; }
	cp "$target/$op.jar" "$rootfs/app/"
	cp -r "$target/lib" "$rootfs/app/lib"
	# The dynamic loader and every library the runtime's binaries link that it does
	# not bring itself (libc, libz, libstdc++ ...), as test/images/node-base.sh does
	# for node; not those of java.desktop's AWT, sound and image libraries (X11,
	# fonts, ALSA), which a headless operator never loads.
	mapfile -t libs < <(find "$rootfs/opt/java" -type f \( -name '*.so' -o -path '*/bin/*' \) \
		! -name 'libawt*' ! -name 'libjawt.so' ! -name 'libsplashscreen.so' ! -name 'libfontmanager.so' \
		! -name 'liblcms.so' ! -name 'libjavajpeg.so' ! -name 'libmlib_image.so' ! -name 'libjsound.so' -exec ldd {} + 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | grep -v "^$rootfs/" | sort -u)
	for lib in "${libs[@]}"; do
		mkdir -p "$rootfs$(dirname "$lib")"
		cp -L "$lib" "$rootfs$lib"
	done
	# No perf data (nothing to write under a read-only root), one GC thread's worth
	# of heap bookkeeping, and the heap sized from the container's memory limit.
	pack_image "$op" "$archive" -- /opt/java/bin/java -XX:-UsePerfData -XX:+UseSerialGC -XX:MaxRAMPercentage=50 -Xss512k -jar "/app/$op.jar"
fi
archives+=("$archive")
echo "leaderhook.test/$op:$tag $archive"

# kopf-operator: kopf (Python) and its dependencies, pinned by hash in
# kopf-operator/requirements.txt, installed with pip --target for this machine's
# CPython 3.11, which is copied in with a standard library left without its
# tests, IDLE, Tk, curses and the like, precompiled (no .pyc is written at run
# time on a read-only root), without debug symbols, and the libraries its
# binary and extension modules link. libpython goes to /usr/lib/x86_64-linux-gnu, which the loader
# searches once the interpreter's build-time runpath is not there.
op=kopf-operator
python="$(python3.11 -c 'import sys; print(sys.executable)' 2>/dev/null)" ||
	{ echo "build.sh: $op needs CPython 3.11 (python3.11) with pip" >&2; exit 1; }
pyver="$("$python" -c 'import sys; print(sys.version)')"
stdlib="$("$python" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
libpython="$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") + "/" + sysconfig.get_config_var("INSTSONAME"))')"
pkey="$(cd "$here" && { cat build.sh; echo "$pyver"; find "$op" -type f ! -name '*.pyc' -print | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-16)"
archive="$cache/$op-$pkey.tar"
if [[ ! -f "$archive" ]]; then
	echo "building $op ($pkey)" >&2
	new_rootfs
	py="$rootfs/opt/python"
	mkdir -p "$py/bin" "$py/lib/python3.11" "$rootfs/usr/lib/x86_64-linux-gnu" "$rootfs/app"
	install -m 0755 "$python" "$py/bin/python3.11"
	cp -L "$libpython" "$rootfs/usr/lib/x86_64-linux-gnu/"
	(cd "$stdlib" && tar -c --exclude=site-packages --exclude=test --exclude=tests --exclude=idlelib --exclude=tkinter \
		--exclude=turtledemo --exclude=ensurepip --exclude=lib2to3 --exclude=pydoc_data --exclude='config-3.11-*' \
		--exclude=__pycache__ --exclude='*.pyc' --exclude='_test*.so' --exclude='_ctypes_test*.so' --exclude='_tkinter*.so' \
		--exclude='_curses*.so' --exclude='readline*.so' --exclude='_sqlite3*.so' --exclude='xx*.so' --exclude='_xx*.so' \
		--exclude='nis*.so' --exclude='spwd*.so' --exclude='ossaudiodev*.so' --exclude='audioop*.so' .) |
		tar -x -C "$py/lib/python3.11"
	"$python" -m pip install -q --disable-pip-version-check --no-cache-dir --no-deps --require-hashes --only-binary=:all: \
		--target "$rootfs/app/lib" -r "$here/$op/requirements.txt" >"$cache/$op-pip.log" 2>&1 ||
		{ cat "$cache/$op-pip.log" >&2; echo "build.sh: pip install of $op/requirements.txt failed" >&2; exit 1; }
	rm -rf "$rootfs/app/lib/bin"
	# Debug symbols out of libpython and every extension module (the wheels' too): 23 of 35 MB.
	find "$rootfs/usr/lib" "$py" "$rootfs/app/lib" -type f -name '*.so*' -exec strip --strip-unneeded {} +
	install -m 0644 "$here/$op/main.py" "$rootfs/app/main.py"
	"$python" -m compileall -q -j0 --invalidation-mode unchecked-hash -s "$rootfs" -p / "$py/lib/python3.11" "$rootfs/app" >/dev/null ||
		{ echo "build.sh: compileall for $op failed" >&2; exit 1; }
	mapfile -t libs < <(find "$py" "$rootfs/app" "$rootfs/usr/lib" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec ldd {} + 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | grep -v -e "^$rootfs/" -e "^$(dirname "$libpython")/" | sort -u)
	for lib in "${libs[@]}"; do
		mkdir -p "$rootfs$(dirname "$lib")"
		cp -L "$lib" "$rootfs$lib"
	done
	pack_image "$op" "$archive" --env PYTHONPATH=/app/lib --env PYTHONDONTWRITEBYTECODE=1 --env PYTHONUNBUFFERED=1 -- /opt/python/bin/python3.11 -s /app/main.py
fi
archives+=("$archive")
echo "leaderhook.test/$op:$tag $archive"

if [[ "${NO_IMPORT:-}" == 1 ]]; then
	:
elif [[ -n "${LEADERHOOK_KUBECONFIG:-}" ]]; then
	echo "LEADERHOOK_KUBECONFIG is set: load the archives above into that cluster yourself (kind load image-archive ARCHIVE)" >&2
else
	"$repo/test/images/import-image.sh" "${archives[@]}" >/dev/null
	echo "imported ${#archives[@]} operator images" >&2
fi
echo "operators built in $(($(date +%s) - start))s" >&2
