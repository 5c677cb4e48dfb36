#!/bin/sh
# check-version.sh - every place that names the version agrees with its one
# source, include/cachelocal/version.h (scripts/version.sh): the Debian
# changelog's top entry, a "## X.Y.Z" section of CHANGES.md, the installed
# cachelocal.pc and cachelocal-sched.pc, the installed CMake package (its
# ConfigVersion file asked for that exact version, when cmake is there),
# and CL_VERSION_STRING / CL_VERSION as a compiled program sees them.
# Usage: check-version.sh [CC]
set -u
cd "$(dirname "$0")/.."
cc=${1:-cc}
v=$(sh scripts/version.sh) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
agree() { # WHAT VALUE
	n=$((n + 1))
	if [ "$2" != "$v" ]; then
		echo "check-version: FAIL: $1 says '$2', version.h says $v"
		fail=$((fail + 1))
	fi
}

agree debian/changelog "$(sed -n '1s/^cachelocal (\([^)]*\)).*/\1/p' debian/changelog)"
agree "CHANGES.md (a '## $v' section)" "$(sed -n "s/^## \($v\)\$/\1/p" CHANGES.md)"

make --no-print-directory -s install DESTDIR="$tmp/stage" PREFIX=/usr >/dev/null || exit 1
for pc in cachelocal cachelocal-sched; do
	agree "$pc.pc" "$(sed -n 's/^Version: //p' "$tmp/stage/usr/share/pkgconfig/$pc.pc")"
done
cm=$tmp/stage/usr/lib/cmake/cachelocal
agree cachelocalConfigVersion.cmake "$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$cm/cachelocalConfigVersion.cmake")"
if command -v cmake >/dev/null; then
	# ask REQUEST: what the ConfigVersion file answers find_package(cachelocal REQUEST)
	ask() {
		cat >"$tmp/ask.cmake" <<CMAKE
set(PACKAGE_FIND_VERSION "$1")
string(REPLACE "." ";" _v "$1")
list(LENGTH _v PACKAGE_FIND_VERSION_COUNT)
list(GET _v 0 PACKAGE_FIND_VERSION_MAJOR)
set(PACKAGE_FIND_VERSION_MINOR 0)
if(PACKAGE_FIND_VERSION_COUNT GREATER 1)
  list(GET _v 1 PACKAGE_FIND_VERSION_MINOR)
endif()
include("$cm/cachelocalConfigVersion.cmake")
message("compatible=\${PACKAGE_VERSION_COMPATIBLE} exact=\${PACKAGE_VERSION_EXACT}")
CMAKE
		cmake -P "$tmp/ask.cmake" 2>&1
	}
	agree "cachelocalConfigVersion.cmake asked for exactly $v" \
		"$(ask "$v" | sed "s/^compatible=TRUE exact=TRUE\$/$v/")"
	major=${v%%.*} minor=${v#*.}
	minor=${minor%%.*}
	# the compatibility rule (README "Install"): same minor in 0.x, same major from 1.0
	for want in "$major.$minor compatible=TRUE" "$major.$((minor + 1)) compatible=FALSE" \
		"$((major + 1)) compatible=FALSE" "$((major + 1)).0 compatible=FALSE"; do
		n=$((n + 1))
		req=${want% *}
		got=$(ask "$req" | sed 's/ exact=.*//')
		if [ "$got" != "${want#* }" ]; then
			echo "check-version: FAIL: find_package(cachelocal $req) against $v: $got, want ${want#* }"
			fail=$((fail + 1))
		fi
	done
fi

cat >"$tmp/v.c" <<'C'
#include <stdio.h>
#include <cachelocal/version.h>
int main(void)
{
	printf("%s %d.%d.%d\n", CL_VERSION_STRING, CL_VERSION / 10000, CL_VERSION / 100 % 100,
	       CL_VERSION % 100);
	return 0;
}
C
$cc -std=c11 -I"$tmp/stage/usr/include" -o "$tmp/v" "$tmp/v.c" || exit 1
set -- $("$tmp/v")
agree CL_VERSION_STRING "$1"
agree CL_VERSION "$2"

if [ "$fail" -ne 0 ]; then
	echo "check-version: $fail of $n disagree (the version lives in include/cachelocal/version.h;"
	echo "  a release also needs debian/changelog (dch -v $v) and a '## $v' section in CHANGES.md)"
	exit 1
fi
echo "check-version: $v: all $n checks agree (files naming the version, CMake compatibility)"
