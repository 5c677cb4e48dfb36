#!/bin/sh
# check-cross.sh - the headers on the architectures without critical
# sections here (make check-cross; not part of make check nor CI).
#
# For each of riscv64, ppc64el, s390x, armhf and i386, with Debian's cross
# compiler (gcc-<triple>, libc6-dev-<arch>-cross; test-only packages, not in
# scripts/deps.txt: installed by hand when wanted):
#   1. every header outside sched/ alone, as C11 with the house-style
#      warnings and -Werror (sched/ needs liburcu for the target, which Debian
#      has only through multiarch), plus sched/runtime/context.h (the
#      runtime's arch dispatch: ucontext there);
#   2. a fallback smoke test: tests/unit/test_percpu_ops.c and test_counter.c
#      built static through tests/unit/crshim.h and run under qemu-user
#      (qemu-<arch>, package qemu-user), which has no rseq: the atomic
#      fallback is what runs (CL_TEST_MODE=no-rseq). Skipped, and said so,
#      when qemu-user is not installed.
# A missing cross compiler is reported and counted as a failure.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-build/cross}
warn="-Wall -Wextra -Werror -pedantic -Wshadow -Wundef -Wcast-align -Wstrict-prototypes -Wmissing-prototypes"
fails=0 passed=0
mkdir -p "$OUT"
hdrs=$( (cd include && find cachelocal -name '*.h' ! -path '*/arch/*' ! -path 'cachelocal/sched/*' | sort
	echo cachelocal/sched/runtime/context.h))
# arch triple qemu
for t in "riscv64 riscv64-linux-gnu riscv64" "ppc64el powerpc64le-linux-gnu ppc64le" \
	"s390x s390x-linux-gnu s390x" "armhf arm-linux-gnueabihf arm" "i386 i686-linux-gnu i386"; do
	set -- $t
	arch=$1 cc=$2-gcc q=qemu-$3
	if ! command -v "$cc" >/dev/null; then
		echo "check-cross: $arch: $cc not installed (apt-get install gcc-$2 and its libc6-dev-*-cross): FAILED"
		fails=$((fails + 1))
		continue
	fi
	bad=0 n=0
	for h in $hdrs; do
		n=$((n + 1))
		printf '#include <%s>\n#include <%s>\n' "$h" "$h" >"$OUT/$arch.c"
		if ! $cc -std=c11 $warn -Iinclude -c "$OUT/$arch.c" -o "$OUT/$arch.o" 2>"$OUT/$arch.err"; then
			echo "check-cross: $arch: $h does not compile:"
			head -10 "$OUT/$arch.err"
			bad=$((bad + 1))
		fi
	done
	if [ "$bad" -eq 0 ]; then
		echo "check-cross: $arch: $n headers compile alone (C11, -Werror)"
		passed=$((passed + 1))
	else
		fails=$((fails + 1))
	fi
	if ! command -v "$q" >/dev/null; then
		echo "check-cross: $arch: $q not installed (package qemu-user): smoke test SKIPPED"
		continue
	fi
	for tst in test_percpu_ops test_counter; do
		bin=$OUT/$arch-$tst
		if ! $cc -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -Itests/unit -D_GNU_SOURCE \
			-DCL_TEST_DATA_DIR='"/nonexistent"' -DCL_TEST_SHIM -static -pthread \
			-o "$bin" "tests/unit/$tst.c" -lm 2>"$OUT/$arch.err"; then
			echo "check-cross: $arch: $tst does not build:"
			head -10 "$OUT/$arch.err"
			fails=$((fails + 1))
			continue
		fi
		if CL_TEST_MODE=no-rseq timeout 300 "$q" "$bin" >"$OUT/$arch-$tst.log" 2>&1; then
			echo "check-cross: $arch: $tst under $q: $(grep 'Synthesis' "$OUT/$arch-$tst.log")"
			passed=$((passed + 1))
		else
			echo "check-cross: $arch: $tst under $q FAILED:"
			grep -E '^\[(FAIL|----)\]|Synthesis' "$OUT/$arch-$tst.log" | head -20
			fails=$((fails + 1))
		fi
	done
done
echo "cross: $passed passed, $fails failed"
[ "$fails" -eq 0 ]
