#!/bin/sh
# run-tests.sh - run test binaries in every id mode.
#
# Usage: run-tests.sh [-w WRAPPER] [-m MODES] [-j JOBS] NORSEQ BINARY...
#   WRAPPER  command prefix (e.g. "setarch x86_64 -R" for TSan)
#   JOBS     binaries run at once (default 1). With more than one, each
#            binary's output goes to a log printed whole when it is done, so
#            runs do not interleave line by line (make check-valgrind: memcheck
#            runs a process's threads one at a time, so two binaries use the
#            two CPUs a lone one leaves half idle).
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
modes="default glibc-off no-rseq"
jobs=1
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
if [ "$jobs" -gt 1 ] && [ $# -gt 1 ]; then
	logs=$(mktemp -d)
	trap 'rm -rf "$logs"' EXIT
	# One binary per invocation of this script (-j 1), JOBS at a time.
	printf '%s\n' "$@" | xargs -P "$jobs" -I{} sh -c '
		log="$1/$(basename "$2").log"
		sh "$0" -m "$3" -w "$4" "$5" "$2" >"$log" 2>&1
		cat "$log"' "$0" "$logs" {} "$modes" "$wrapper" "$norseq"
	pass=0 fail=0 skip=0 failed=""
	for log in "$logs"/*.log; do
		set -- $(sed -n 's/^runs: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' "$log")
		if [ $# -ne 3 ]; then
			fail=$((fail + 1))
			failed="$failed $(basename "$log" .log)[no summary]"
			continue
		fi
		pass=$((pass + $1)) fail=$((fail + $2)) skip=$((skip + $3))
		f=$(sed -n 's/^failed runs://p' "$log")
		failed="$failed$f"
	done
	[ -n "$failed" ] && echo "failed runs:$failed"
	echo "runs: $pass passed, $fail failed, $skip skipped ($jobs binaries at a time)"
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
