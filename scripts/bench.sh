#!/bin/sh
# bench.sh - run every benchmark binary and write the report.
# Usage: bench.sh OUTDIR BENCH_BINARY...
# Env: BENCH_ARGS (extra args for every benchmark, e.g. "--quick").
# Writes OUTDIR/report.md (tables) and OUTDIR/results.json (one object per line).
set -u
out=$1
shift
mkdir -p "$out"
report="$out/report.md"
json="$out/results.json"
: >"$json"
{
	echo "# cachelocal benchmark report"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- kernel: $(uname -r), machine: $(uname -m), CPUs: $(nproc)"
	echo "- compiler: $(${CC:-gcc} --version | head -1)"
	echo
} >"$report"
if [ $# -eq 0 ]; then
	echo "bench: no benchmarks exist yet (bench/*.c); nothing run" | tee -a "$report"
	exit 0
fi
n=0
failed=""
for b in "$@"; do
	n=$((n + 1))
	name=$(basename "$b")
	echo "== [$n/$#] bench/$name ${BENCH_ARGS:-}"
	echo "## $name" >>"$report"
	echo '```' >>"$report"
	# the runtime benchmarks: short settings, the kernel's tool side by side
	case "$name" in
	pipe | messaging) extra="--quick --vs-kernel" ;;
	schbench | tbench) extra="--quick" ;;
	*) extra="" ;;
	esac
	# shellcheck disable=SC2086
	if "$b" ${BENCH_ARGS:-} $extra --json="$json" | tee -a "$report"; then :; else
		failed="$failed $name"
	fi
	echo '```' >>"$report"
	echo >>"$report"
done
echo "bench: report written to $report, JSON to $json"
if [ -n "$failed" ]; then
	echo "bench: failed:$failed"
	exit 1
fi
