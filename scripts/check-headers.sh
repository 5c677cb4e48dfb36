#!/bin/sh
# check-headers.sh - every public header compiles alone, warning-free:
# as C11 with the house-style warning flags and as C++17, with gcc and clang.
# Usage: check-headers.sh  (env: EXTRA_CFLAGS, e.g. the liburcu cflags)
set -u
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cwarn="-Wall -Wextra -Werror -pedantic -Wshadow -Wundef -Wcast-align -Wstrict-prototypes -Wmissing-prototypes"
cxxwarn="-Wall -Wextra -Werror -Wshadow -Wundef"
extra="${EXTRA_CFLAGS:-}"
fail=0
n=0
for h in $(cd include && find cachelocal -name '*.h' ! -path '*/arch/*' | sort); do
	printf '#include <%s>\n#include <%s>\n' "$h" "$h" >"$tmp/t.c"
	cp "$tmp/t.c" "$tmp/t.cpp"
	for cc in gcc clang; do
		n=$((n + 1))
		if ! $cc -std=c11 $cwarn -Iinclude $extra -c "$tmp/t.c" -o "$tmp/t.o" 2>"$tmp/err"; then
			echo "FAIL: $h as C11 with $cc:"; head -20 "$tmp/err"; fail=$((fail + 1))
		fi
	done
	for cxx in g++ clang++; do
		n=$((n + 1))
		if ! $cxx -std=c++17 $cxxwarn -Iinclude $extra -c "$tmp/t.cpp" -o "$tmp/t.o" 2>"$tmp/err"; then
			echo "FAIL: $h as C++17 with $cxx:"; head -20 "$tmp/err"; fail=$((fail + 1))
		fi
	done
done
echo "header checks: $((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
