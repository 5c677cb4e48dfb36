#!/bin/sh
# check-mutants.sh - put each defect of tests/mutants/mutants.txt back into
# a copy of include/, build the test named for it against that copy (through
# the Criterion shim) and require the test to FAIL: a test that still passes
# with the defect in place does not check what it claims to.
#
# Usage: check-mutants.sh OUTDIR CC CFLAGS...
#   OUTDIR  where the copies and binaries go (build/mutants)
#   CC, CFLAGS  compiler and flags of the unit tests (make check-mutants
#           passes its own); the copy's -I goes before them, so it wins.
# Env: MUTANT_LIBS: the link flags (make passes liburcu's, -pthread, -lm).
#      MUTANT_TIMEOUT (default 120): seconds one mutant's test may run; a
# test stopped by it counts as caught (a lost wakeup is a hang).
# Prints "mutant NAME: caught by TEST (exit N)" or "mutant NAME: SURVIVED",
# then "check-mutants: C caught, S survived, B broken". Exit 1 unless all
# were caught.
set -u
tab=$(printf '\t')

mutate() {
	python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
s = open(path).read()
n = s.count(old)
if n != 1:
    print(f"  the text to mutate occurs {n} times in {path} (need exactly 1)")
    sys.exit(1)
open(path, "w").write(s.replace(old, new))
EOF
}

# --one OUTDIR N CC CFLAGS...: copy include/, apply mutant N (line N of
# OUTDIR/list.tsv), build its test and run it; writes OUTDIR/NAME/state:
# edit (the edit no longer applies), build (it does not compile), or the
# test's exit status. A job per CPU: each test forces its window with the
# inject hooks or waits for a hang, so a loaded CPU hides no defect.
if [ "${1:-}" = --one ]; then
	out=$2
	n=$3
	cc=$4
	shift 4
	line=$(sed -n "${n}p" "$out/list.tsv")
	IFS="$tab" read -r name header old new test filter flags <<LINE
$line
LINE
	dir=$out/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r include "$dir/include"
	if ! mutate "$dir/include/cachelocal/$header" "$old" "$new" >"$dir/edit.log"; then
		echo edit >"$dir/state"
		exit 0
	fi
	# shellcheck disable=SC2086
	if ! "$cc" -I"$dir/include" "$@" ${flags:-} -DCL_TEST_SHIM -Itests/unit \
		-o "$dir/$test" "tests/unit/$test.c" ${MUTANT_LIBS:--pthread -lm} \
		>"$dir/build.log" 2>&1; then
		echo build >"$dir/state"
		exit 0
	fi
	[ "$filter" = "*" ] && filter=""
	CRS_FILTER=$(echo "$filter" | sed 's|/|::|') timeout -s KILL "$MUTANT_LIMIT" "$dir/$test" \
		>"$dir/run.log" 2>&1
	echo "$?" >"$dir/state"
	exit 0
fi

out=$1
cc=$2
shift 2
list=tests/mutants/mutants.txt
limit=${MUTANT_TIMEOUT:-120}
caught=0
survived=0
broken=0
mkdir -p "$out"

grep -v '^#' "$list" | grep -v '^[[:space:]]*$' | sed 's/ | /\t/g' >"$out/list.tsv"
# shellcheck disable=SC2086
seq "$(wc -l <"$out/list.tsv")" | MUTANT_LIMIT=$limit xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} \
	sh "$0" --one "$out" {} "$cc" "$@"
while IFS="$tab" read -r name header old new test filter flags; do
	dir=$out/$name
	rc=$(cat "$dir/state" 2>/dev/null)
	case "$rc" in
	[0-9]*) ;;
	edit)
		echo "mutant $name: BROKEN (its edit no longer applies to $header)"
		sed 's/^/ /' "$dir/edit.log"
		broken=$((broken + 1))
		continue ;;
	*)
		echo "mutant $name: BROKEN (does not build, see $dir/build.log)"
		broken=$((broken + 1))
		continue ;;
	esac
	[ "$filter" = "*" ] && filter=""
	if [ "$rc" -ne 0 ]; then
		[ "$rc" -eq 137 ] && how="stopped after $limit s" || how="exit $rc"
		why=$(grep -m1 'Assertion failed' "$dir/run.log" | sed 's/.*: //' | cut -c1-120)
		echo "mutant $name: caught by $test ($how${why:+: $why})"
		caught=$((caught + 1))
	else
		echo "mutant $name: SURVIVED: $test ${filter:+($filter) }passes with it (see $dir/run.log)"
		survived=$((survived + 1))
	fi
done <"$out/list.tsv"
echo "check-mutants: $caught caught, $survived survived, $broken broken"
[ "$survived" -eq 0 ] && [ "$broken" -eq 0 ]
