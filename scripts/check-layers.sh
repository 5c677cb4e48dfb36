#!/bin/sh
# check-layers.sh - no cachelocal header includes a header of a higher layer.
#
# Usage: check-layers.sh [INCLUDE_DIR]   check INCLUDE_DIR/cachelocal (default: include)
#        check-layers.sh --layer PATH...  print "PATH LAYER" for each header PATH
#                                        (relative to include/cachelocal; "?" if none)
#        check-layers.sh --self-test     prove the check fails: copies of the tree with
#                                        one bad include each must be rejected, naming it
#
# The layers (README.md "Layers", ../shared/DESIGN.md):
#   L0   version.h config.h compiler.h sys.h
#   L0h  internal/*            private helpers; usable from L1 up, not from L0
#   L1   cacheline.h spinlock.h
#   L2   topology.h rseq.h arch/*
#   L3   percpu.h cid.h
#   L4   percpu_ops.h counter.h counter_cid.h objcache.h brlock.h
#   L4u  cachelocal.h          the umbrella: L0-L4
#   L5   sched/*
# A piece DIR/X.h of a split header DIR.h (cid/policy.h of cid.h) has DIR.h's
# layer. A header may include headers of its own layer or lower ones. A
# header that is in no layer fails the check: add it to layer_of() below and
# to the README table. The umbrella includes public headers only, never
# internal/ directly.
set -u

# layer_of PATH (relative to include/cachelocal): a rank, or nothing.
layer_of() {
	case "$1" in
	version.h | config.h | compiler.h | sys.h) echo 0 ;;
	internal/*) echo 1 ;;
	cacheline.h | spinlock.h) echo 2 ;;
	topology.h | rseq.h | arch/*) echo 4 ;;
	percpu.h | cid.h) echo 6 ;;
	percpu_ops.h | counter.h | counter_cid.h | objcache.h | brlock.h | fence.h | atfork.h) echo 8 ;;
	cachelocal.h) echo 9 ;;
	sched/*) echo 10 ;;
	*/*)
		# a piece of a split header: the layer of DIR.h
		layer_of "${1%%/*}.h"
		;;
	esac
}

layer_name() {
	case "$1" in
	0) echo L0 ;; 1) echo "L0 internal/" ;; 2) echo L1 ;; 4) echo L2 ;; 6) echo L3 ;;
	8) echo L4 ;; 9) echo "L4 umbrella" ;; 10) echo L5 ;; *) echo "?" ;;
	esac
}

# check INCLUDE_DIR: prints one line per violation, returns 1 if any.
check() {
	root=$1/cachelocal
	bad=0
	if [ ! -d "$root" ]; then
		echo "check-layers: no $root" >&2
		return 2
	fi
	for f in $(cd "$root" && find . -name '*.h' | sed 's|^\./||' | sort); do
		lf=$(layer_of "$f")
		if [ -z "$lf" ]; then
			echo "LAYER: cachelocal/$f is in no layer (add it to scripts/check-layers.sh and README)"
			bad=1
			continue
		fi
		fdir=$(dirname "$f")
		# "quoted" includes resolve against the file's directory; <cachelocal/...> against root.
		sed -n -e 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*|q \1|p' \
			-e 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*<cachelocal/\([^>]*\)>.*|a \1|p' \
			"$root/$f" >"$tmpf"
		while read -r kind inc; do
			if [ "$kind" = q ]; then
				target=$(realpath -m --relative-to="$root" "$root/$fdir/$inc")
			else
				target=$inc
			fi
			case "$target" in ../* | /*) continue ;; esac # outside cachelocal/
			lt=$(layer_of "$target")
			if [ -z "$lt" ]; then
				echo "LAYER: cachelocal/$f includes cachelocal/$target, which is in no layer"
				bad=1
			elif [ "$f" = cachelocal.h ] && [ "$lt" = 1 ]; then
				echo "LAYER: cachelocal/cachelocal.h includes cachelocal/$target: the umbrella includes public headers only"
				bad=1
			elif [ "$lt" -gt "$lf" ]; then
				echo "LAYER: cachelocal/$f ($(layer_name "$lf")) includes cachelocal/$target ($(layer_name "$lt")): a higher layer"
				bad=1
			fi
		done <"$tmpf"
	done
	return $bad
}

# self_test: the real tree passes; each planted bad include fails, naming it.
self_test() {
	src=$(cd "$(dirname "$0")/.." && pwd)/include
	work=$(mktemp -d)
	fails=0
	n=0
	# file | line to add | text the report must contain
	cat >"$work/cases" <<'EOF'
topology.h|#include "percpu.h"|cachelocal/topology.h (L2) includes cachelocal/percpu.h (L3)
cacheline.h|#include "sched/rq.h"|cachelocal/cacheline.h (L1) includes cachelocal/sched/rq.h (L5)
sys.h|#include "internal/bitmap.h"|cachelocal/sys.h (L0) includes cachelocal/internal/bitmap.h (L0 internal/)
internal/fork.h|#include "../cacheline.h"|cachelocal/internal/fork.h (L0 internal/) includes cachelocal/cacheline.h (L1)
counter.h|#include <cachelocal/sched/fair.h>|cachelocal/counter.h (L4) includes cachelocal/sched/fair.h (L5)
cid/policy.h|#include "../percpu_ops.h"|cachelocal/cid/policy.h (L3) includes cachelocal/percpu_ops.h (L4)
percpu.h|  #  include "cachelocal.h"|cachelocal/percpu.h (L3) includes cachelocal/cachelocal.h (L4 umbrella)
rseq.h|#include "mystery.h"|includes cachelocal/mystery.h, which is in no layer
cachelocal.h|#include "internal/fork.h"|cachelocal/cachelocal.h includes cachelocal/internal/fork.h: the umbrella
EOF
	rm -rf "$work/good" && mkdir -p "$work/good" && cp -r "$src/cachelocal" "$work/good/"
	n=$((n + 1))
	if ! check "$work/good" >"$work/out"; then
		echo "self-test FAIL: the unmodified tree is rejected:"; cat "$work/out"; fails=$((fails + 1))
	fi
	while IFS='|' read -r file line want; do
		n=$((n + 1))
		rm -rf "$work/bad" && mkdir -p "$work/bad" && cp -r "$src/cachelocal" "$work/bad/"
		if [ ! -f "$work/bad/cachelocal/$file" ]; then
			echo "self-test FAIL: case file cachelocal/$file does not exist"; fails=$((fails + 1)); continue
		fi
		printf '%s\n' "$line" >>"$work/bad/cachelocal/$file"
		if check "$work/bad" >"$work/out"; then
			echo "self-test FAIL: '$line' in cachelocal/$file was accepted"; fails=$((fails + 1))
		elif ! grep -qF "$want" "$work/out"; then
			echo "self-test FAIL: '$line' in cachelocal/$file: rejected, but not with \"$want\":"
			cat "$work/out"; fails=$((fails + 1))
		fi
	done <"$work/cases"
	# A header in no layer is rejected too.
	n=$((n + 1))
	rm -rf "$work/bad" && mkdir -p "$work/bad" && cp -r "$src/cachelocal" "$work/bad/"
	printf '#include "compiler.h"\n' >"$work/bad/cachelocal/newthing.h"
	if check "$work/bad" >"$work/out" || ! grep -qF "cachelocal/newthing.h is in no layer" "$work/out"; then
		echo "self-test FAIL: a header in no layer was not reported"; fails=$((fails + 1))
	fi
	rm -rf "$work"
	echo "layer check self-test: $((n - fails)) of $n cases as expected"
	[ "$fails" -eq 0 ]
}

tmpf=$(mktemp)
trap 'rm -f "$tmpf"' EXIT
case "${1:-}" in
--self-test) self_test ;;
--layer)
	shift
	for f in "$@"; do echo "$f $(layer_name "$(layer_of "$f")")"; done
	;;
-h | --help) sed -n '2,22p' "$0" ;;
*)
	dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/include}
	if check "$dir"; then
		echo "layer check: $(cd "$dir/cachelocal" && find . -name '*.h' | wc -l) headers, no upward include"
	else
		echo "layer check: FAILED (a header includes a higher layer; see README.md, Layers)"
		exit 1
	fi
	;;
esac
