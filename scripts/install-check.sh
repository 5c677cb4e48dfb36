#!/bin/sh
# install-check.sh - build a consumer against the installed copy only.
# Usage: install-check.sh STAGE PKGCONFIGDIR CC CXX OUTDIR
set -eu
stage=$1 pcdir=$2 cc=$3 cxx=$4 out=$5
mkdir -p "$out"
export PKG_CONFIG_PATH="$stage$pcdir"
export PKG_CONFIG_SYSROOT_DIR="$stage"
cflags=$(pkg-config --cflags cachelocal)
libs=$(pkg-config --libs cachelocal)
echo "install-check: pkg-config cachelocal $(pkg-config --modversion cachelocal): $cflags $libs"
# The consumer must not see the source tree: build it from a scratch dir.
cp tests/install/consumer.c "$out/consumer.c"
cp tests/install/consumer.c "$out/consumer_cxx.cpp"
# shellcheck disable=SC2086
$cc -std=c11 -Wall -Wextra -Werror -pedantic $cflags -o "$out/consumer_c" "$out/consumer.c" $libs
# shellcheck disable=SC2086
$cxx -std=c++17 -Wall -Wextra -Werror -pedantic $cflags -o "$out/consumer_cxx" "$out/consumer_cxx.cpp" $libs
"$out/consumer_c"
"$out/consumer_cxx"
echo "install-check: C and C++ consumers built against $stage and ran"

# Programs outside the project (tests/outside/*.c), written only against the
# documented API: each issue's "must show" evidence. Built against the
# installed copy; those including cachelocal/sched/ use cachelocal-sched.
n=0
for src in tests/outside/*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	pc=cachelocal
	grep -q 'cachelocal/sched/' "$src" && pc=cachelocal-sched
	cp "$src" "$out/$name.c"
	# shellcheck disable=SC2086
	$cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $(pkg-config --cflags $pc) \
		-o "$out/$name" "$out/$name.c" $(pkg-config --libs $pc) -lm
	echo "---- outside program $name"
	"$out/$name"
	echo "---- $name with GLIBC_TUNABLES=glibc.pthread.rseq=0"
	GLIBC_TUNABLES=glibc.pthread.rseq=0 "$out/$name"
	n=$((n + 1))
done
echo "install-check: $n outside programs built against the installed copy and passed"
