#!/bin/sh
# check-kernels.sh - every unit-test program and every stress program on
# the kernels users run, in an emulated x86_64 machine (make check-kernels).
#
# Usage: check-kernels.sh --setup KERNEL...   fetch QEMU 10 and the kernels
#        check-kernels.sh KERNEL...           boot each, run the plan, report
#
# KERNEL: 6.1 (Debian 12's own linux-image-cloud-amd64: no mm_cid, no guard
# markers), 6.12 (bookworm-backports; no guard markers), 7.3
# (trixie-backports); scripts/guest.sh fetches them. The machine: 8 CPUs,
# 2 sockets (2 LLCs), 2 nodes, 8 GiB (a million parked tasks; the quick
# form 4 GiB). The plan: tests/guest/kernels.plan
# (every program of tests/unit, checked here, and of tests/stress).
# KERNELS_QUICK=1 runs the quick form (CI): the rseq, cid, percpu_ops,
# counter, objcache and runtime lifecycle unit tests, the counter and
# objcache stress programs, percpu_ops with rseq denied (the parked tasks
# and the runtime stress take minutes each under TCG: the full form).
#
# Output: per kernel "kernels guest K-...: ..." (scripts/guest.sh), a line
# per run, then "kernel K: P passed, F failed (mm_cid on|off, guard
# markers on|off, io_uring on|off)" read off the guest itself; per extra
# program "kernels K extra FILE: exit N"; last "check-kernels: P passed,
# F failed on K kernels". Consoles in build/kernels/K/console.log.txt.
#
# Environment (set by the Makefile): KERNELS_X64 (the static build:
# bin/ and init), KERNELS_SYSFS (the fake sysfs trees, packed as /data),
# SMP_EXTRA (names of extra programs, built as bin/extra_NAME),
# KERNELS_QUICK, KERNELS_FILTER (an awk regex over the run names),
# KERNELS_OUT (default build/kernels).
set -u
here=$(dirname "$0")
# shellcheck source=scripts/guest.sh
. "$here/guest.sh"
OUT=${KERNELS_OUT:-build/kernels}
PLAN=tests/guest/kernels.plan
TOPO=8:2:4:1:2:8192
[ "${KERNELS_QUICK:-0}" = 1 ] && TOPO=8:2:4:1:2:4096

die() {
	echo "check-kernels: $*" >&2
	exit 1
}

filter() {
	if [ -n "${KERNELS_FILTER:-}" ]; then
		echo "$KERNELS_FILTER"
	elif [ "${KERNELS_QUICK:-0}" = 1 ]; then
		echo '^(unit\.(rseq|cid|percpu_ops|counter|objcache|runtime_lifecycle)|stress\.(counter|objcache)|fault\.percpu_ops\.deny-rseq|extra\..*)$'
	else
		echo '.'
	fi
}

case "${1:-}" in
--setup)
	shift
	guest_fetch_qemu
	for k in "$@"; do
		guest_fetch_kernel "$k-amd64"
	done
	exit 0
	;;
-h | --help | "")
	sed -n '2,28p' "$0"
	exit 0
	;;
esac

# every unit-test program of the tree is in the plan
for f in tests/unit/test_*.c; do
	b=$(basename "$f" .c)
	awk -v b="$b" '($1 !~ /^#/ && $3 == b) || $0 ~ "^# not run: " b ":" { f = 1 } END { exit !f }' "$PLAN" ||
		die "$b (tests/unit) has no line in $PLAN"
done

PASSED=0 FAILED=0 KERNELS=0 OOPSES=0
mkdir -p "$OUT"
t0=$(date +%s)
for k in "$@"; do
	guest_run kernels "$k" x86_64 "$TOPO" 1 "$k-amd64" "$PLAN" "$(filter)" \
		"${KERNELS_X64:-build/x86_64}" "$OUT/$k" "${KERNELS_SYSFS:-}"
	OOPSES=$((OOPSES + GUEST_OOPSES))
	echo "kernel $k: $GUEST_PASSED passed, $GUEST_FAILED failed (mm_cid $(guest_info mm_cid), guard markers $(guest_info guard), io_uring $(guest_info io_uring); $(guest_info kernel))"
	PASSED=$((PASSED + GUEST_PASSED))
	FAILED=$((FAILED + GUEST_FAILED))
	KERNELS=$((KERNELS + 1))
done
echo "check-kernels: $(($(date +%s) - t0)) s; guest oopses (emulator, retried): $OOPSES"
echo "check-kernels: $PASSED passed, $FAILED failed on $KERNELS kernels"
[ "$FAILED" -eq 0 ]
