#!/bin/sh
# distcheck.sh - unpack the release tarball in a scratch directory and run
# make there: the tarball must build and pass on its own, without the git
# checkout (no tracked fixtures: the tests generate them).
# Usage: distcheck.sh TARBALL MAKE_ARGS...
set -eu
tarball=$(realpath "$1")
shift
name=$(basename "$tarball" .tar.gz)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cachelocal-distcheck.XXXXXX")
tar -xzf "$tarball" -C "$tmp"
cd "$tmp/$name"
fail() {
	echo "distcheck: FAIL: $*"
	echo "distcheck: the unpacked tree is kept in $tmp/$name"
	exit 1
}
[ ! -e .git ] || fail "the tarball has a .git"
[ ! -e build ] || fail "the tarball has a build/ directory"
v=$(sh scripts/version.sh)
[ "cachelocal-$v" = "$name" ] || fail "the tarball is $name, its version.h says $v"
for f in debian/changelog api/cachelocal.api CHANGES.md tests/data/gen-sysfs.sh; do
	[ -e "$f" ] || fail "the tarball has no $f"
done
echo "distcheck: $name unpacked in $tmp; make $*"
make --no-print-directory "$@" || fail "make $* in the unpacked tree"
# the unpacked tree makes the same tarball (the file list of dist.sh without git)
sh scripts/dist.sh "$v" "$tmp/again" >/dev/null
tar -tzf "$tarball" | sort >"$tmp/want"
tar -tzf "$tmp/again/$name.tar.gz" | sort >"$tmp/got"
cmp -s "$tmp/want" "$tmp/got" || { diff "$tmp/want" "$tmp/got" | head; fail "make dist in the unpacked tree lists other files"; }
cd /
rm -rf "$tmp"
echo "distcheck: $name passed make $*"
