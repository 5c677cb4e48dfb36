#!/bin/sh
# install-check.sh - build consumers against the installed copy only: the C
# and C++ consumer and the tests/outside programs through pkg-config, then a
# CMake project (tests/install/CMakeLists.txt) through find_package.
# Usage: install-check.sh STAGE PKGCONFIGDIR CC CXX OUTDIR [PREFIX]
#   STAGE: the DESTDIR the copy was installed into ("" for the system),
#   PKGCONFIGDIR and PREFIX as installed (PREFIX default /usr/local).
#   OUTSIDE_RUN=0: build the tests/outside programs but do not run them (they
#   ran against the same headers in make install-check).
set -eu
stage=$1 pcdir=$2 cc=$3 cxx=$4 out=$5 prefix=${6:-/usr/local}
[ -z "$stage" ] || stage=$(realpath -m "$stage")
out=$(realpath -m "$out")
rm -rf "$out"
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
echo "install-check: C and C++ consumers built against ${stage:-the system} and ran"

# The man pages, where man looks: a page for a function, a macro (a link to
# its header's page) and the overview.
if command -v man >/dev/null; then
	for p in cl_spawn cl_counter_add cl_objcache_alloc cl_select cl_read CL_ATOMIC_LOAD "7 cachelocal"; do
		# shellcheck disable=SC2086
		MANPATH="$stage$prefix/share/man" man -w $p >/dev/null ||
			{ echo "install-check: FAIL: no man page $p under $stage$prefix/share/man"; exit 1; }
	done
	echo "install-check: man finds cl_spawn(3), CL_ATOMIC_LOAD(3), cachelocal(7) ... under $stage$prefix/share/man"
fi

# Programs outside the project (tests/outside/*.c), written only against the
# documented API: the contracts the docs promise, checked from outside. Built against the
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
	n=$((n + 1))
	[ "${OUTSIDE_RUN:-1}" = 1 ] || continue
	echo "---- outside program $name"
	"$out/$name"
	echo "---- $name with GLIBC_TUNABLES=glibc.pthread.rseq=0"
	GLIBC_TUNABLES=glibc.pthread.rseq=0 "$out/$name"
done
if [ "${OUTSIDE_RUN:-1}" = 1 ]; then
	echo "install-check: $n outside programs built against the installed copy and passed"
else
	echo "install-check: $n outside programs built against the installed copy (not run: OUTSIDE_RUN=0)"
fi

# The CMake package: configured against the copy in STAGE (relocatable: the
# config finds the headers from its own location), C, C++ and cachelocal::sched.
if ! command -v cmake >/dev/null; then
	echo "install-check: FAIL: cmake not installed (make deps installs it)"
	exit 1
fi
cm=$out/cmake
mkdir -p "$cm"
cp tests/install/CMakeLists.txt tests/install/consumer.c tests/outside/sched_contract.c "$cm/"
# liburcu is the system's: no sysroot for its .pc files
(
	unset PKG_CONFIG_SYSROOT_DIR
	CC=$cc CXX=$cxx cmake -S "$cm" -B "$cm/build" -DCMAKE_PREFIX_PATH="$stage$prefix" \
		-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$cm/configure.log" 2>&1 ||
		{ cat "$cm/configure.log"; exit 1; }
	grep 'cachelocal .* from' "$cm/configure.log"
	cmake --build "$cm/build" >"$cm/build.log" 2>&1 || { cat "$cm/build.log"; exit 1; }
)
"$cm/build/consumer_c" >/dev/null
"$cm/build/consumer_cxx" >/dev/null
# sched_contract ran above (pkg-config); linked here, it proves the urcu flags
echo "install-check: CMake consumer (find_package(cachelocal CONFIG), cachelocal::cachelocal as C and C++, cachelocal::sched) built against $stage$prefix; the consumers ran"
