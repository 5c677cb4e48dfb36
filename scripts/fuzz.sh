#!/bin/sh
# fuzz.sh - run each libFuzzer target for a fixed time (make fuzz).
#
# Usage: fuzz.sh SECONDS BINARY...
# Each build/fuzz/<t> runs on build/fuzz/corpus/<t> (work corpus, kept
# between runs) plus the seeds in tests/fuzz/corpus/<t> (read only); a
# crash is saved as build/fuzz/crashes/<t>-crash-<sha1> and fails the run.
# Prints one summary line per target: executions, corpus size, result.
set -u
secs=$1
shift
fail=0
pass=0
summary=""
mkdir -p build/fuzz/crashes
for bin in "$@"; do
	t=$(basename "$bin")
	work=build/fuzz/corpus/$t
	seeds=tests/fuzz/corpus/$t
	mkdir -p "$work"
	[ -d "$seeds" ] || seeds=""
	log=build/fuzz/$t.log
	echo "---- $t (${secs} s)"
	# shellcheck disable=SC2086
	nice "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -print_final_stats=1 \
		-artifact_prefix="build/fuzz/crashes/$t-" "$work" $seeds >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	files=$(find "$work" -type f | wc -l)
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		res=ok
	else
		fail=$((fail + 1))
		res="FAILED (exit $rc, see $log)"
		grep -m1 -A3 'check failed\|ERROR: AddressSanitizer\|runtime error\|ERROR: libFuzzer' "$log"
	fi
	line="$t: ${execs:-?} executions in ${secs} s, corpus ${files} inputs, $res"
	echo "     $line"
	summary="$summary
  $line"
done
echo "fuzz summary:$summary"
echo "fuzz targets: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
