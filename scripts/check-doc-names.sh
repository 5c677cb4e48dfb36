#!/bin/sh
# check-doc-names.sh - every cl_/CL_ name the documentation uses exists in
# the headers, so README.md and docs/*.md cannot name a function, macro or
# type that was renamed or removed. A name ending in "_" (a family, as in
# cl_chan_*) must start at least one name in the headers. Test-only knobs
# the Makefile passes to the tests (CL_TEST_DATA_DIR, CL_TEST_MODE) are
# looked up in the Makefile and scripts/ instead.
# Usage: check-doc-names.sh [DOC...]   (default: README.md docs/*.md)
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- README.md docs/*.md
names=$(grep -ohE '\b(cl|CL)_[A-Za-z0-9_]+' "$@" | sort -u)
where="include"
bad=0
n=0
for name in $names; do
	n=$((n + 1))
	case "$name" in
	CL_TEST_DATA_DIR | CL_TEST_MODE) grep -q -- "$name" Makefile scripts/run-tests.sh && continue ;;
	*_) grep -rq -- "$name" $where && continue ;;
	*) grep -rqw -- "$name" $where && continue ;;
	esac
	echo "DOC NAME: $name is used in $(grep -lw -- "$name" "$@" | tr '\n' ' ')but defined nowhere in include/"
	bad=$((bad + 1))
done
if [ "$bad" -ne 0 ]; then
	echo "doc names: $bad of $n not in the headers"
	exit 1
fi
echo "doc names: all $n cl_/CL_ names of the docs exist in include/"
