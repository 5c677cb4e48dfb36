#!/bin/sh
# check-smp.sh - the test programs on many CPUs, several LLCs and nodes, with
# CPUs that come and go, on real kernels in emulated machines (make check-smp).
#
# Usage: check-smp.sh --setup GUEST...   fetch QEMU 10 and the guests' kernels
#        check-smp.sh GUEST...           boot each guest, run its share of
#                                        tests/guest/smp.plan, report
#
# A GUEST is MACHINE-KERNEL: machines
#   A  x86_64,  8 CPUs, 2 sockets x 4 cores,        2 LLCs, 1 node,  2 GiB
#   B  x86_64, 32 CPUs, 4 sockets x 4 cores x SMT2, 4 LLCs, 2 nodes, 4 GiB
#   C  x86_64, 64 CPUs, 8 sockets x 8 cores,        8 LLCs, 4 nodes, 4 GiB
#   D  aarch64, 8 CPUs (virt, cortex-a57),                  1 node,  2 GiB
#      (timeouts x6: an arm64 guest under TCG on an x86_64 host is slower)
#   E  x86_64, 96 CPUs, 4 sockets x 12 cores x SMT2, 4 LLCs, 4 nodes, 6 GiB
#      (the runtime with one worker per CPU past 64: every per-CPU mask
#      crosses a word boundary)
# (each x86_64 socket is an LLC under -cpu EPYC; nodes take whole sockets),
# kernels 6.1, 6.12 and 7.3 (x86_64) and 6.12 (aarch64; scripts/guest.sh).
# What runs where, by the run's name in the plan:
#   unit.* stress.* smp.*   every guest, for time with these exceptions:
#                           B on 7.3 runs only smp.*, fault.* and e3k.* (A
#                           on 7.3 runs the rest), C on 6.12 five unit tests
#                           (rseq, percpu_ops, cid, objcache, brlock) and the
#                           runtime's (unit.runtime_*), C on
#                           7.3 only e3k.*; unit.runtime (ten thousand tasks
#                           in runtimes of one worker per CPU) only in A and
#                           D: smp.runtime covers the runtime at scale
#   fault.* e3k.*           B and C (the faults and E3k need many CPUs)
#   smp.pool_numa           only where there are 2 nodes or more
#   E: the runtime's unit tests but unit.runtime, smp.topology, smp.runtime
# D boots twice: smp.runtime on one TCG thread, apart from the rest (apart()).
# SMP_QUICK=1 runs the quick form (CI): unit.rseq, unit.percpu_ops,
# smp.topology, smp.cid, smp.structures, fault.structures.hotplug.
#
# Output: per guest "smp guest NAME: N cpus, L llcs, M nodes, smt S,
# kernel K, mm_cid on|off, guard markers on|off, io_uring on|off, tcg
# single|multi", per run "smp NAME RUN: pass|fail (...)", per guest that
# ran smp_runtime "smp NAME runtime idle: ..." (its workers' context
# switches per second while idle), per
# guest with faults "smp NAME hotplug events: N" (a fault run with no
# hotplug event fails: the fault was not tested), per extra program "smp
# NAME extra FILE: exit N", and last "check-smp: P passed, F failed on G
# guests". Each guest's console is kept in build/smp/NAME/console.log.txt.
# A guest whose kernel oopses or panics (an emulator fault seen with QEMU
# 7.2, not a test failure) is booted once more and the oops is counted.
#
# Environment (set by the Makefile): SMP_X64, SMP_A64 (the static build
# directories: bin/ and init), SMP_SYSFS (the fake sysfs trees, packed as
# /data for the unit tests that read them), SMP_EXTRA (names of the extra
# programs, built as bin/extra_NAME), SMP_QUICK, SMP_OUT (default build/smp),
# SMP_FILTER (an awk regex over the run names: only those runs, e.g.
# '^smp\.runtime$' to run one program on the guests given).
# TCG timing means nothing: timeouts are generous and scale with the CPUs.
set -u
here=$(dirname "$0")
# shellcheck source=scripts/guest.sh
. "$here/guest.sh"
OUT=${SMP_OUT:-build/smp}
PLAN=tests/guest/smp.plan

die() {
	echo "check-smp: $*" >&2
	exit 1
}

# machine M: ARCH TOPO (guest_boot's) and the timeout scale
machine() {
	case $1 in
	A) echo "x86_64 8:2:4:1:1:2048 1" ;;
	B) echo "x86_64 32:4:4:2:2:4096 4" ;;
	C) echo "x86_64 64:8:8:1:4:4096 8" ;;
	D) echo "aarch64 8:::1:1:2048 6" ;;
	E) echo "x86_64 96:4:12:2:4:6144 12" ;;
	*) die "no machine $1 (A, B, C, D, E)" ;;
	esac
}

kernel_id() { # GUEST -> kernel id of guest_fetch_kernel
	m=${1%%-*} k=${1#*-}
	[ "$m" = D ] && echo "$k-arm64" || echo "$k-amd64"
}

# filter GUEST: the awk regex of the runs it does
filter() {
	if [ -n "${SMP_FILTER:-}" ]; then
		echo "$SMP_FILTER"
		return
	fi
	if [ "${SMP_QUICK:-0}" = 1 ]; then
		echo '^(unit\.rseq|unit\.percpu_ops|smp\.topology|smp\.cid|smp\.structures|fault\.structures\.hotplug|extra\..*)$'
		return
	fi
	case $1 in
	B-7.3) echo '^(smp|fault|e3k|extra)\.' ;;
	C-6.12) echo '^((stress|smp|fault|e3k|extra)\.|unit\.(rseq|percpu_ops|cid|objcache|brlock|runtime_[a-z]*)$)' ;;
	C-7.3) echo '^(e3k\.|extra\.)' ;;
	E-*) echo '^(unit\.runtime_[a-z]*|smp\.(topology|runtime)|extra\.)' ;;
	B-* | C-*) echo '^(unit|stress|smp|fault|e3k|extra)\.' ;;
	*) echo '^(unit|stress|smp|extra)\.' ;;
	esac
}

# apart GUEST: the awk regex of the runs booted apart, on one TCG thread,
# when the guest itself gets one thread per CPU (docs/testing.md, "One TCG
# thread or one per guest CPU"). D: smp.runtime's 100,000 parked tasks
# got to run and park at about 30 a second there, with 8 guest CPUs'
# threads on this machine's 2 CPUs; on one thread its round took 39-42 s.
apart() {
	case $1 in
	D-*) echo '^smp\.runtime$' ;;
	esac
}

# nruns FILTER: how many runs of the plan and the extras FILTER,
# GUEST_EXCLUDE and GUEST_ONLY leave
nruns() {
	{
		cat "$PLAN"
		for x in ${SMP_EXTRA:-}; do
			echo "extra.$x 300 extra_$x"
		done
	} | guest_plan /dev/stdin "$1" 1 | wc -l
}

# boot GUEST DIR ARCH TOPO SCALE BIN: one boot of GUEST's runs that
# GUEST_EXCLUDE and GUEST_ONLY leave, added to the totals
boot() {
	guest_run smp "$1" "$3" "$4" "$5" "$(kernel_id "$1")" "$PLAN" "$(filter "$1")" \
		"$6" "$2" "${SMP_SYSFS:-}"
	OOPSES=$((OOPSES + GUEST_OOPSES))
	PASSED=$((PASSED + GUEST_PASSED))
	FAILED=$((FAILED + GUEST_FAILED))
	DIRS="$DIRS $2"
}

setup() {
	guest_fetch_qemu
	for g in "$@"; do
		guest_fetch_kernel "$(kernel_id "$g")"
	done
}

# one GUEST: its share of the plan (and the extras), booted and reported
# (guest_run), the faults' hotplug events checked; adds to the totals
run_guest() {
	g=$1
	set -- $(machine "${g%%-*}")
	bin=${SMP_X64:-build/x86_64}
	[ "$1" = aarch64 ] && bin=${SMP_A64:-build/aarch64}
	d=$OUT/$g
	mkdir -p "$OUT"
	excl=
	case $g in B-* | C-*) [ -z "${SMP_FILTER:-}" ] && excl='^unit\.runtime$' ;; esac
	# one node: smp.pool_numa cannot tell placement apart (it exits 77)
	[ "$(echo "$2" | cut -d: -f5)" = 1 ] && [ -z "${SMP_FILTER:-}" ] && excl='^smp\.pool_numa$'
	sep=$(apart "$g")
	[ "$(guest_tcg "${2%%:*}")" = multi ] || sep=
	DIRS=
	GUEST_EXCLUDE=$excl GUEST_ONLY=
	[ -n "$sep" ] && GUEST_EXCLUDE=${excl:+($excl)|}$sep
	if [ -z "$sep" ] || [ "$(nruns "$(filter "$g")")" -gt 0 ]; then
		boot "$g" "$d" "$1" "$2" "$3" "$bin"
	fi
	GUEST_EXCLUDE=$excl GUEST_ONLY=$sep
	if [ -n "$sep" ] && [ "$(nruns "$(filter "$g")")" -gt 0 ]; then
		tcg=${CL_GUEST_TCG-auto}
		CL_GUEST_TCG=single
		boot "$g" "$d.single" "$1" "$2" "$3" "$bin"
		CL_GUEST_TCG=$tcg
	fi
	GUEST_EXCLUDE= GUEST_ONLY=
	# hotplug events in the fault runs
	if [ -f "$d/console.log.txt" ] && grep -q '^@@CLG START fault\.' "$d/console.log.txt"; then
		hp=$(sed -n 's/^fault: hotplug \([0-9]*\) .*/\1/p' "$d/console.log.txt" | awk '{ s += $1 } END { print s + 0 }')
		cs=$(sed -n 's/^fault: hotplug .*, cpuset \([0-9]*\)$/\1/p' "$d/console.log.txt" | awk '{ s += $1 } END { print s + 0 }')
		echo "smp $g hotplug events: $hp, cpuset changes: $cs"
		if grep -q '^@@CLG START fault\..*hotplug' "$d/console.log.txt" && [ "$hp" -eq 0 ]; then
			echo "smp $g: fail (no hotplug event while the fault runs ran: untested)"
			FAILED=$((FAILED + 1))
		fi
	fi
	# the runtime's idle window (smp_runtime, one worker per CPU): real
	# counts under emulation
	for x in $DIRS; do
		sed -n "s/^runtime idle: /smp $g &/p" "$x/console.log.txt"
	done
	GUESTS=$((GUESTS + 1))
	[ -f "$d/console.log.txt" ] && grep -q '^@@E3K BEGIN' "$d/console.log.txt" && E3K="$E3K $g=$d/console.log.txt"
}

case "${1:-}" in
--setup)
	shift
	setup "$@"
	exit 0
	;;
-h | --help | "")
	awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"
	exit 0
	;;
esac

PASSED=0 FAILED=0 GUESTS=0 OOPSES=0 E3K=""
mkdir -p "$OUT"
t0=$(date +%s)
for g in "$@"; do
	run_guest "$g"
done
if [ -n "$E3K" ] && [ -f scripts/e3k.py ]; then
	# shellcheck disable=SC2086
	if python3 scripts/e3k.py --json "$OUT/e3k.json" $E3K >"$OUT/e3k.md"; then
		cat "$OUT/e3k.md"
	else
		echo "check-smp: scripts/e3k.py failed"
		FAILED=$((FAILED + 1))
	fi
fi
echo "check-smp: $(($(date +%s) - t0)) s; guest oopses (emulator, retried): $OOPSES"
echo "check-smp: $PASSED passed, $FAILED failed on $GUESTS guests"
[ "$FAILED" -eq 0 ]
