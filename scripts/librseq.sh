#!/bin/sh
# librseq.sh - find librseq (the per-CPU operations library cachelocal is
# compared against and tested beside), or build the vendored upstream snapshot.
#
# librseq is never a dependency of cachelocal: only bench/counter, bench/ids and
# tests/interop link it, and they report the comparison as skipped without it.
#
# Lookup order:
#   1. LIBRSEQ_PREFIX=<dir>   an install prefix the user names (<dir>/include/rseq/rseq.h)
#   2. pkg-config librseq     a system or PKG_CONFIG_PATH install
#   3. build/librseq/install  a previous build of the vendored snapshot (cached)
#   4. the vendored snapshot  librseq-*.tar.gz in LIBRSEQ_VENDOR (default: ../shared/vendor
#                             next to the repository, or next to the main worktree),
#                             built into build/librseq/ (default mode and --build only)
#
# Usage:
#   sh scripts/librseq.sh            find, else build the snapshot; print what was found
#   sh scripts/librseq.sh --find     find only (no build); print what was found
#   sh scripts/librseq.sh --cflags   compiler flags, or nothing when not found (no build, quiet)
#   sh scripts/librseq.sh --libs     linker flags (with an rpath), or nothing (no build, quiet)
# Exit status is 0 in every mode, found or not (not finding librseq is not an error).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/librseq"
inst="$out/install"
mode=${1:-}

# pkg_query ARGS...: pkg-config on librseq with PKG_CONFIG_PATH prefixed by $pcpath.
pkg_query() {
	PKG_CONFIG_PATH="${pcpath:+$pcpath:}${PKG_CONFIG_PATH:-}" pkg-config "$@" librseq 2>/dev/null
}

# try_prefix DIR: set cflags/libs/where from an install prefix.
try_prefix() {
	p=$1
	[ -f "$p/include/rseq/rseq.h" ] || return 1
	pcpath="$p/lib/pkgconfig:$p/lib64/pkgconfig:$p/lib/$(uname -m)-linux-gnu/pkgconfig"
	if command -v pkg-config >/dev/null 2>&1 && pkg_query --exists; then
		cflags=$(pkg_query --cflags)
		libdir=$(pkg_query --variable=libdir)
		libs="$(pkg_query --libs) -Wl,-rpath,$libdir"
	else
		for l in lib lib64 "lib/$(uname -m)-linux-gnu"; do
			[ -e "$p/$l/librseq.so" ] && libdir="$p/$l" && break
		done
		[ -n "${libdir:-}" ] || return 1
		cflags="-I$p/include"
		libs="-L$libdir -lrseq -Wl,-rpath,$libdir"
	fi
	where=$2
	return 0
}

find_librseq() {
	cflags= libs= where= pcpath=
	if [ -n "${LIBRSEQ_PREFIX:-}" ]; then
		try_prefix "$LIBRSEQ_PREFIX" "prefix $LIBRSEQ_PREFIX (LIBRSEQ_PREFIX)" && return 0
		echo "librseq: LIBRSEQ_PREFIX=$LIBRSEQ_PREFIX has no include/rseq/rseq.h and librseq.so" >&2
	fi
	if command -v pkg-config >/dev/null 2>&1 && pkg_query --exists; then
		cflags=$(pkg_query --cflags)
		libdir=$(pkg_query --variable=libdir)
		libs="$(pkg_query --libs)${libdir:+ -Wl,-rpath,$libdir}"
		where="pkg-config librseq $(pkg_query --modversion)"
		return 0
	fi
	try_prefix "$inst" "vendored snapshot built in build/librseq ($(cat "$out/stamp" 2>/dev/null || echo '?'))" &&
		[ -f "$out/stamp" ] && return 0
	return 1
}

# The vendored tarball, or nothing.
find_snapshot() {
	for d in ${LIBRSEQ_VENDOR:-} "$root/../shared/vendor" \
		"$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)/../../shared/vendor"; do
		[ -d "$d" ] || continue
		# shellcheck disable=SC2012
		t=$(ls "$d"/librseq-*.tar.gz 2>/dev/null | head -n 1)
		[ -n "$t" ] && { echo "$t"; return 0; }
	done
	return 0
}

build_snapshot() {
	tarball=$1
	name=$(basename "$tarball" .tar.gz)
	for tool in autoreconf automake libtoolize pkg-config make; do
		command -v $tool >/dev/null 2>&1 || {
			echo "librseq: cannot build $name: $tool missing (make deps)" >&2
			return 1
		}
	done
	mkdir -p "$out"
	log="$out/build.log"
	echo "librseq: building $name into build/librseq (once; log: build/librseq/build.log)" >&2
	rm -rf "${out:?}/src" "$inst" "$out/stamp"
	mkdir -p "$out/src"
	tar xzf "$tarball" -C "$out/src"
	src="$out/src/$name"
	# Only the library and its headers (include/, src/): its own tests and
	# docs are not needed here and take most of the build time.
	j=-j"$(nproc 2>/dev/null || echo 2)"
	if ! (cd "$src" && ./bootstrap &&
		./configure --disable-numa --disable-static --disable-dependency-tracking --prefix="$inst" &&
		make $j -C include && make $j -C src && make -C include install && make -C src install) >"$log" 2>&1; then
		echo "librseq: build of $name failed; last lines of build/librseq/build.log:" >&2
		tail -n 15 "$log" >&2
		return 1
	fi
	echo "$name" >"$out/stamp"
}

case "$mode" in
--cflags)
	find_librseq && echo "$cflags"
	exit 0
	;;
--libs)
	find_librseq && echo "$libs"
	exit 0
	;;
--find | --build | "") ;;
*)
	echo "usage: $0 [--find | --build | --cflags | --libs]" >&2
	exit 2
	;;
esac

if ! find_librseq && [ "$mode" != --find ]; then
	tarball=$(find_snapshot)
	if [ -n "$tarball" ]; then
		# One build at a time (parallel make, several worktrees).
		mkdir -p "$out"
		if command -v flock >/dev/null 2>&1; then
			exec 9>"$out/.lock"
			flock 9
		fi
		find_librseq || { build_snapshot "$tarball" && find_librseq; } || true
	fi
fi
if [ -n "$where" ]; then
	echo "librseq: found: $where"
	echo "librseq: cflags: $cflags"
	echo "librseq: libs: $libs"
else
	echo "librseq: not found, comparison skipped"
fi
exit 0
