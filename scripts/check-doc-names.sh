#!/bin/sh
# check-doc-names.sh - every cl_/CL_ name the documentation uses exists in
# the headers, so README.md and docs/*.md cannot name a function, macro or
# type that was renamed or removed. A name ending in "_" (a family, as in
# cl_chan_*) must start at least one name in the headers. Test-only knobs
# the Makefile passes to the tests (CL_TEST_DATA_DIR, CL_TEST_MODE) and its
# own variables (CL_AARCH64_KERNEL_DIR) are looked up in the Makefile and
# scripts/ instead, the emulated machines' (CL_GUEST_DIR, CL_GUEST_KERNEL_*)
# in scripts/guest.sh.
# Then the retired names: a cl_/CL_ name that CHANGES.md mentions and the
# headers no longer define (a rename's "old" column) must not appear in any
# tracked file but CHANGES.md, so code merged from an older branch cannot
# bring one back in a comment, a test or a script.
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
	CL_AARCH64_KERNEL_DIR) grep -q -- "$name" Makefile scripts/check-aarch64.sh && continue ;;
	CL_GUEST_*) grep -q -- "${name%%_[0-9]*}" scripts/guest.sh && continue ;;
	*_) grep -rq -- "$name" $where && continue ;;
	*) grep -rqw -- "$name" $where && continue ;;
	esac
	echo "DOC NAME: $name is used in $(grep -lw -- "$name" "$@" | tr '\n' ' ')but defined nowhere in include/"
	bad=$((bad + 1))
done
retired=0
if [ -f CHANGES.md ]; then
	for name in $(grep -ohE '\b(cl|CL)_[A-Za-z0-9_]*[A-Za-z0-9]\b' CHANGES.md | sort -u); do
		grep -rqw -- "$name" $where && continue
		retired=$((retired + 1))
		if command -v git >/dev/null && git rev-parse --git-dir >/dev/null 2>&1; then
			users=$(git grep -lw -- "$name" -- ':!CHANGES.md' | tr '\n' ' ')
		else
			users=$(grep -rlw --exclude=CHANGES.md --exclude-dir=build --exclude-dir=.git -- "$name" . | tr '\n' ' ')
		fi
		[ -n "$users" ] || continue
		echo "RETIRED NAME: $name (CHANGES.md) is still used in $users"
		bad=$((bad + 1))
	done
fi
if [ "$bad" -ne 0 ]; then
	echo "doc names: $bad problem(s): names the docs use that the headers lack, or retired names still in use"
	exit 1
fi
echo "doc names: all $n cl_/CL_ names of the docs exist in include/; none of the $retired retired names of CHANGES.md is used"
