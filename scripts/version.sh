#!/bin/sh
# version.sh - print the version of this tree, MAJOR.MINOR.PATCH, from its one
# source: the CL_VERSION_* macros of include/cachelocal/version.h.
# Usage: version.sh [VERSION_H]
set -eu
h=${1:-$(dirname "$0")/../include/cachelocal/version.h}
v=$(sed -n 's/^#define CL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9][0-9]*\)$/\1 \2/p' "$h" |
	awk '{ v[$1] = $2 } END { if (length(v) == 3) print v["MAJOR"] "." v["MINOR"] "." v["PATCH"] }')
[ -n "$v" ] || { echo "version.sh: no CL_VERSION_MAJOR/MINOR/PATCH in $h" >&2; exit 1; }
echo "$v"
