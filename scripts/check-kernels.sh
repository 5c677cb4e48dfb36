#!/bin/sh
# check-kernels.sh - every unit-test program and every stress program on
# the kernels users run, in an emulated x86_64 machine (make check-kernels).
#
# Usage: check-kernels.sh --setup KERNEL...   fetch QEMU 10 and the kernels
#        check-kernels.sh KERNEL...           boot each, run the plan, report
#
# KERNEL: 6.1 (Debian 12's own linux-image-cloud-amd64: no mm_cid, no guard
# markers), 6.12 (bookworm-backports; no guard markers), 7.3
# (trixie-backports; RSEQ ABI v2 and the time-slice extension: the plan's
# v2.* and bench.* runs, skipped on 6.x), 7.3-arm64 (trixie-backports'
# arm64 cloud kernel, after the 6.19 rseq refactor: the same plan on an
# emulated arm64 machine); scripts/guest.sh fetches them.
# The machine: 8 CPUs, 2 nodes, 8 GiB (a million parked tasks; the quick
# form 4 GiB); x86_64: 2 sockets (2 LLCs); arm64: QEMU's virt board. The plan: tests/guest/kernels.plan
# (every program of tests/unit, checked here, and of tests/stress).
# KERNELS_QUICK=1 runs the quick form (CI): the rseq, slice, cid, percpu_ops,
# counter, objcache and runtime lifecycle unit tests (rseq, slice,
# percpu_ops and spinlock also on a v2 area on 7.x), the counter and
# objcache stress programs, percpu_ops with rseq denied (the parked tasks
# and the runtime stress take minutes each under TCG: the full form).
#
# Output: per kernel "kernels guest K-...: ..." (scripts/guest.sh), a line
# per run, then "kernel K: P passed, F failed (mm_cid on|off, guard
# markers on|off, io_uring on|off)" read off the guest itself; per extra
# program "kernels K extra FILE: exit N"; last "check-kernels: P passed,
# F failed on K kernels". Consoles in build/kernels/K/console.log.txt.
#
# Environment (set by the Makefile): KERNELS_X64, KERNELS_A64 (the static
# builds: bin/ and init), KERNELS_SYSFS (the fake sysfs trees, packed as /data),
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
TOPO_A64=8:::1:2:8192
[ "${KERNELS_QUICK:-0}" = 1 ] && TOPO=8:2:4:1:2:4096 && TOPO_A64=8:::1:2:4096

die() {
	echo "check-kernels: $*" >&2
	exit 1
}

filter() {
	if [ -n "${KERNELS_FILTER:-}" ]; then
		echo "$KERNELS_FILTER"
	elif [ "${KERNELS_QUICK:-0}" = 1 ]; then
		echo '^(unit\.(rseq|slice|cid|percpu_ops|counter|objcache|runtime_lifecycle)|v2\.(rseq|slice|percpu_ops|spinlock)|stress\.(counter|objcache)|fault\.percpu_ops\.deny-rseq|extra\..*)$'
	else
		echo '.'
	fi
}

case "${1:-}" in
--setup)
	shift
	guest_fetch_qemu
	for k in "$@"; do
		case $k in
		*-arm64) guest_fetch_kernel "$k" ;;
		*) guest_fetch_kernel "$k-amd64" ;;
		esac
	done
	exit 0
	;;
-h | --help | "")
	sed -n '2,32p' "$0"
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
	# the RSEQ ABI v2 runs and the slice-extension benchmark need 7.x
	case $k in
	6.*) GUEST_EXCLUDE='^(v2|bench)\.' ;;
	*) GUEST_EXCLUDE= ;;
	esac
	export GUEST_EXCLUDE
	case $k in
	*-arm64)
		guest_run kernels "$k" aarch64 "$TOPO_A64" 1 "$k" "$PLAN" "$(filter)" \
			"${KERNELS_A64:-build/aarch64}" "$OUT/$k" "${KERNELS_SYSFS:-}"
		;;
	*)
		guest_run kernels "$k" x86_64 "$TOPO" 1 "$k-amd64" "$PLAN" "$(filter)" \
			"${KERNELS_X64:-build/x86_64}" "$OUT/$k" "${KERNELS_SYSFS:-}"
		;;
	esac
	OOPSES=$((OOPSES + GUEST_OOPSES))
	# what test_slice found on a v2 area and under glibc's (its log lines)
	awk '/^@@CLG START / { run = $3 } /slice extension: / && run ~ /^(v2\.slice|unit\.slice)/ {
		sub(/.*slice extension: /, ""); print "kernel '"$k"': " run ": slice extension " $0 }' \
		"$OUT/$k/console.log.txt" 2>/dev/null
	echo "kernel $k: $GUEST_PASSED passed, $GUEST_FAILED failed (mm_cid $(guest_info mm_cid), guard markers $(guest_info guard), io_uring $(guest_info io_uring); $(guest_info kernel))"
	PASSED=$((PASSED + GUEST_PASSED))
	FAILED=$((FAILED + GUEST_FAILED))
	KERNELS=$((KERNELS + 1))
done
echo "check-kernels: $(($(date +%s) - t0)) s; guest oopses (emulator, retried): $OOPSES"
echo "check-kernels: $PASSED passed, $FAILED failed on $KERNELS kernels"
[ "$FAILED" -eq 0 ]
