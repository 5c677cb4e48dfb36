#!/bin/sh
# compile-fail.sh - negative compile tests: each tests/compile-fail/*.c must
# FAIL to compile, and the compiler's message must match the regex on its
# "expect:" line. An optional "cflags:" line adds flags (e.g. an override).
# Usage: compile-fail.sh CC
set -u
cd "$(dirname "$0")/.."
cc=${1:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for src in tests/compile-fail/*.c; do
	[ -e "$src" ] || continue
	expect=$(sed -n 's/^.*expect: *\(.*[^ ]\) *\*\/.*$/\1/p' "$src" | head -1)
	flags=$(sed -n 's/^.*cflags: *\(.*[^ ]\) *\*\/.*$/\1/p' "$src" | head -1)
	if [ -z "$expect" ]; then
		echo "FAIL: $src has no 'expect:' line"; fail=$((fail + 1)); continue
	fi
	# shellcheck disable=SC2086
	if $cc -std=c11 -Wall -Wextra -Iinclude $flags ${EXTRA_CFLAGS:-} -c "$src" -o "$tmp/o.o" 2>"$tmp/err"; then
		echo "FAIL: $src compiled, but must not"; fail=$((fail + 1))
	elif grep -Eq -- "$expect" "$tmp/err"; then
		pass=$((pass + 1))
	else
		echo "FAIL: $src failed without the expected message /$expect/:"; head -10 "$tmp/err"
		fail=$((fail + 1))
	fi
done
echo "compile-fail ($cc): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
