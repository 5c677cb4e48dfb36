#!/bin/sh
# fuzz.sh - run each libFuzzer target for a fixed time (make fuzz).
#
# Usage: fuzz.sh [-j JOBS] SECONDS BINARY...
# Each build/fuzz/<t> runs on build/fuzz/corpus/<t> (work corpus, kept
# between runs) plus the seeds in tests/fuzz/corpus/<t> (read only); a
# crash is saved as build/fuzz/crashes/<t>-crash-<sha1> and fails the run.
# JOBS targets run at once (default 1; a target is one process on one CPU),
# each for the whole SECONDS. Prints one summary line per target:
# executions, corpus size, result.
set -u
jobs=1
if [ "${1:-}" = -j ]; then
	jobs=$2
	shift 2
fi
secs=$1
shift
mkdir -p build/fuzz/crashes

# run_one BINARY: runs the target, writes build/fuzz/<t>.result (one line).
run_one() {
	t=$(basename "$1")
	work=build/fuzz/corpus/$t
	seeds=tests/fuzz/corpus/$t
	mkdir -p "$work"
	[ -d "$seeds" ] || seeds=""
	log=build/fuzz/$t.log
	# shellcheck disable=SC2086
	nice "$1" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
		-artifact_prefix="build/fuzz/crashes/$t-" "$work" $seeds >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	files=$(find "$work" -type f | wc -l)
	if [ $rc -eq 0 ]; then
		res=ok
	else
		res="FAILED (exit $rc, see $log)"
		grep -m1 -A3 'check failed\|ERROR: AddressSanitizer\|runtime error\|ERROR: libFuzzer' "$log"
	fi
	echo "$t: ${execs:-?} executions in ${secs} s, corpus ${files} inputs, $res" >"build/fuzz/$t.result"
	echo "     $(cat "build/fuzz/$t.result")"
}

n=0
for bin in "$@"; do
	rm -f "build/fuzz/$(basename "$bin").result"
	echo "---- $(basename "$bin") (${secs} s)"
	run_one "$bin" &
	n=$((n + 1))
	if [ "$n" -ge "$jobs" ]; then
		wait
		n=0
	fi
done
wait

pass=0
fail=0
summary=""
for bin in "$@"; do
	r=build/fuzz/$(basename "$bin").result
	line=$(cat "$r" 2>/dev/null || echo "$(basename "$bin"): no result")
	case "$line" in
	*", ok") pass=$((pass + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
	summary="$summary
  $line"
done
echo "fuzz summary ($jobs at a time):$summary"
echo "fuzz targets: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
