#!/bin/sh
# run-tests.sh - run test binaries in every id mode.
#
# Usage: run-tests.sh [-w WRAPPER] [-m MODES] [-j JOBS] NORSEQ BINARY...
#   WRAPPER  command prefix (e.g. "setarch x86_64 -R" for TSan)
#   JOBS     binaries run at once (default 1). For wrappers that keep a
#            binary on one CPU (valgrind serializes its threads): each
#            binary's output is kept and printed whole, in order, when all
#            are done. Not for tests that pin threads or time themselves.
#   MODES    space-separated subset of: default glibc-off no-rseq
#            default   : glibc owns rseq (the normal case)
#            glibc-off : GLIBC_TUNABLES=glibc.pthread.rseq=0, cachelocal registers itself
#            no-rseq   : the rseq syscall fails with ENOSYS (seccomp), every fallback
#            no-mm-cid : glibc owns rseq but the usable feature size is capped at 20
#                        (test knob CL_TEST_RSEQ_FEATURE_SIZE_MAX, rseq.h): mm_cid and
#                        node_id reported absent, as on a kernel < 6.3; the binary
#                        sees CL_TEST_MODE=default
#            valgrind  : for a valgrind wrapper (make check-valgrind): valgrind does not
#                        implement rseq (ENOSYS), so the binary sees CL_TEST_MODE=no-rseq
#   NORSEQ   path of the norseq tool
# Criterion binaries run with one job, so tests that pin threads do not
# compete with each other. A binary exiting 77 counts as skipped.
set -u
wrapper=""
jobs=1
modes="default glibc-off no-rseq"
while [ $# -gt 0 ]; do
	case "$1" in
	-w) wrapper=$2; shift 2 ;;
	-m) modes=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	*) break ;;
	esac
done
norseq=$1
shift
if [ "$jobs" -gt 1 ] 2>/dev/null; then
	# Each binary by a child run-tests.sh, JOBS at a time; then the logs in
	# order and the summed counts.
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	i=0
	for bin in "$@"; do
		i=$((i + 1))
		printf '%04d %s\n' "$i" "$bin"
	done | RT_SELF=$0 RT_WRAP=$wrapper RT_MODES=$modes RT_NORSEQ=$norseq RT_TMP=$tmp \
		xargs -P "$jobs" -n 2 sh -c 'sh "$RT_SELF" -w "$RT_WRAP" -m "$RT_MODES" "$RT_NORSEQ" "$1" \
			>"$RT_TMP/$0.log" 2>&1'
	pass=0 fail=0 skip=0 failed=""
	for log in "$tmp"/*.log; do
		[ -e "$log" ] || continue
		grep -v '^runs: \|^failed runs:' "$log"
		set -- $(sed -n 's/^runs: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log") 0 1 0
		pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + $3))
		f=$(sed -n 's/^failed runs://p' "$log")
		[ -n "$f" ] && failed="$failed$f"
		[ "$2" -ne 0 ] && [ -z "$f" ] && failed="$failed $(basename "$log")"
	done
	[ -n "$failed" ] && echo "failed runs:$failed"
	echo "runs: $pass passed, $fail failed, $skip skipped (-j $jobs)"
	[ "$fail" -eq 0 ]
	exit
fi
pass=0
fail=0
skip=0
failed=""
for bin in "$@"; do
	for mode in $modes; do
		echo "---- $(basename "$bin") [$mode]"
		case "$mode" in
		default) env="" pre="" ;;
		glibc-off) env="GLIBC_TUNABLES=glibc.pthread.rseq=0" pre="" ;;
		no-rseq) env="" pre="$norseq" ;;
		no-mm-cid) env="CL_TEST_RSEQ_FEATURE_SIZE_MAX=20" pre="" ;;
		valgrind) env="" pre="" ;;
		*) echo "unknown mode $mode"; exit 2 ;;
		esac
		args=""
		case "$bin" in */unit/*) args="--jobs=1" ;; esac
		t0=$(date +%s)
		# shellcheck disable=SC2086
		tmode=$mode
		[ "$mode" = no-mm-cid ] && tmode=default
		[ "$mode" = valgrind ] && tmode=no-rseq
		env $env CL_TEST_MODE=$tmode timeout 900 $wrapper $pre "$bin" $args
		rc=$?
		echo "     ($(basename "$bin") [$mode]: exit $rc, $(($(date +%s) - t0)) s)"
		if [ $rc -eq 0 ]; then
			pass=$((pass + 1))
		elif [ $rc -eq 77 ]; then
			skip=$((skip + 1))
		else
			fail=$((fail + 1))
			failed="$failed $(basename "$bin")[$mode]"
		fi
	done
done
[ -n "$failed" ] && echo "failed runs:$failed"
echo "runs: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
