#!/bin/sh
# check-layers.sh - the layer, module and arch rules of the headers.
#
# Usage: check-layers.sh [--sched] [INCLUDE_DIR]
#                                  check INCLUDE_DIR/cachelocal (default: include)
#        check-layers.sh --layer PATH...  print "PATH LAYER" for each header PATH
#                                        (relative to include/cachelocal; "?" if none)
#        check-layers.sh --module PATH... print "PATH MODULE" for each header PATH
#        check-layers.sh --self-test     prove each rule fails: copies of the tree
#                                        with one planted violation each must be
#                                        rejected, naming it
#
# 1. Layers: no header includes a header of a higher layer.
#   L0   version.h config.h compiler.h sys.h arch/arch.h (the target's macros)
#   L0h  internal/*            private helpers; usable from L1 up, not from L0
#   L1   cacheline.h spinlock.h
#   L2   topology.h rseq.h slice.h arch/* (but arch/arch.h)
#   L3   percpu.h cid.h
#   L4   percpu_ops.h counter.h counter_cid.h objcache.h brlock.h
#   L4u  cachelocal.h          the umbrella: L0-L4
#   L5   sched/*
# A piece DIR/X.h of a split header DIR.h (cid/policy.h of cid.h) has DIR.h's
# layer. A header may include headers of its own layer or lower ones. A
# header that is in no layer fails the check: add it to layer_of() below and
# to the README table. The umbrella includes public headers only, never
# internal/ directly.
#
# 2. Modules: a cl__/CL__ name (private) defined in one module is used only
# by that module, unless it is defined in the shared part. A module is a
# public header plus its private directory (cid.h + cid/); each public
# sched/X.h is its own module. Shared: internal/, arch/ and the L0 headers
# (usable by every module); sched/internal.h and sched/runtime/ (usable by
# the sched/ modules only). A name tested only in #if/#ifdef/#ifndef/#elif
# lines (an "included from the right place" guard) is not a use. Definitions
# are found with universal-ctags, uses in the comment-stripped text (gcc
# -fpreprocessed). The sched/ modules are checked too (sched/internal.h, its
# pieces in sched/internal/ and sched/runtime/ are their shared private
# part); CL_LAYERS_SCHED=0 only counts their cross-module uses.
#
# 3. Arch macros: no header outside arch/ tests a compiler's architecture
# macro (__x86_64__, __aarch64__, ...), nor, outside arch/ and config.h, the
# target macros arch/arch.h defines (CL_ARCH_X86_64, CL_ARCH_AARCH64, ...);
# arch/arch.h tests the target and defines those and the capability macros
# the other headers test (CL_ARCH_HAVE_*, CL__ARCH_*), and arch/'s
# dispatchers pick the pieces. A file in ARCH_PENDING
# (check_modules.py; empty today) would be a known offender, reported but
# not failed until fixed.
set -u

# layer_of PATH (relative to include/cachelocal): a rank, or nothing, in
# $layer (no subshell: the check runs it for every include).
layer_of() {
	case "$1" in
	version.h | config.h | compiler.h | sys.h | arch/arch.h) layer=0 ;;
	internal/*) layer=1 ;;
	cacheline.h | spinlock.h) layer=2 ;;
	topology.h | rseq.h | slice.h | arch/*) layer=4 ;;
	percpu.h | cid.h) layer=6 ;;
	percpu_ops.h | counter.h | counter_cid.h | objcache.h | brlock.h | fence.h | atfork.h) layer=8 ;;
	cachelocal.h) layer=9 ;;
	sched/*) layer=10 ;;
	*/*)
		# a piece of a split header: the layer of DIR.h
		layer_of "${1%%/*}.h"
		;;
	*) layer="" ;;
	esac
}

layer_name() {
	case "$1" in
	0) echo L0 ;; 1) echo "L0 internal/" ;; 2) echo L1 ;; 4) echo L2 ;; 6) echo L3 ;;
	8) echo L4 ;; 9) echo "L4 umbrella" ;; 10) echo L5 ;; *) echo "?" ;;
	esac
}

# Rules 2 and 3 are implemented in check_modules.py (one process: fast).
checker=$(cd "$(dirname "$0")" && pwd)/check_modules.py

# check_modules INCLUDE_DIR: rule 2; prints violations, returns 1 if any.
check_modules() {
	python3 "$checker" modules $([ "$sched_on" = 1 ] && echo --sched) \
		$([ "${quiet_sched:-0}" = 1 ] && echo --quiet-sched) "$1"
}

# check_arch INCLUDE_DIR: rule 3; prints offenders, returns 1 if any not pending.
check_arch() {
	python3 "$checker" arch $([ "${quiet_pending:-0}" = 1 ] && echo --quiet-pending) "$1"
}

# norm_path PATH: PATH (relative to cachelocal/) with "." and "dir/.."
# resolved, in $normed; "../..." when it leaves cachelocal/. No subprocess:
# the check runs it for every quoted include.
norm_path() {
	normed="" up=""
	set -f
	old_ifs=$IFS
	IFS=/
	for seg in $1; do
		case "$seg" in
		"" | .) ;;
		..)
			if [ -n "$normed" ]; then
				case "$normed" in */*) normed=${normed%/*} ;; *) normed="" ;; esac
			else
				up="../$up"
			fi
			;;
		*) normed=${normed:+$normed/}$seg ;;
		esac
	done
	IFS=$old_ifs
	set +f
	normed=$up$normed
}

# check INCLUDE_DIR: rule 1; prints one line per violation, returns 1 if any.
check() {
	root=$1/cachelocal
	bad=0
	if [ ! -d "$root" ]; then
		echo "check-layers: no $root" >&2
		return 2
	fi
	for f in $(cd "$root" && find . -name '*.h' | sed 's|^\./||' | sort); do
		layer_of "$f"
		lf=$layer
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
				norm_path "$fdir/$inc"
				target=$normed
			else
				target=$inc
			fi
			case "$target" in ../* | /*) continue ;; esac # outside cachelocal/
			layer_of "$target"
			lt=$layer
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
	# Rules 2 and 3: RULE|file|text to append (%b escapes)|OPTS|text the report must
	# contain, or "-" when the tree must be accepted.
	cat >"$work/cases2" <<'EOF2'
module|counter.h|static inline long cl__t_probe(const char *s) { return cl__topo_parse_list(s, 0, 0, 0, 0); }||cachelocal/counter.h (module counter) uses cl__topo_parse_list, private to module topology
module|cid/policy.h|static inline int cl__t_probe(void) { return cl__rseq_state.owner; }||cachelocal/cid/policy.h (module cid) uses cl__rseq_state, private to module rseq
module|internal/bitmap.h|#define CL__T_PROBE(r) cl__topo_slurp(r, "x")||cachelocal/internal/bitmap.h (module =shared) uses cl__topo_slurp, private to module topology
module|brlock.h|#define CL__T_PROBE(s) cl__rseq_init_once()||cachelocal/brlock.h (module brlock) uses cl__rseq_init_once
module|sched/fair.h|#define CL__T_PROBE(r) cl__topo_slurp(r, "x")|--sched|cachelocal/sched/fair.h (module sched/fair) uses cl__topo_slurp
module|cid.h|#define CL__T_PROBE() cl__rt_schedule()||cachelocal/cid.h (module cid) uses cl__rt_schedule, private to module =sched
module|counter.h|/* cl__topo_parse_list() is not used here: a comment */||-
module|counter.h|#ifdef CL__RSEQ_OWNER_GLIBC\n#endif||-
module|counter.h|#define CL__T_PROBE() cl__fork_register(0)||-
module|sched/fair.h|#define CL__T_PROBE() cl__topo_slurp("/", "x")||-
arch|counter.h|#if defined(__aarch64__)\n#endif||ARCH: cachelocal/counter.h tests __aarch64__
arch|internal/bitmap.h|#  ifdef __x86_64__\n#  endif||ARCH: cachelocal/internal/bitmap.h tests __x86_64__
arch|sched/queue.h|#if 0\n#elif defined(__riscv) && defined(_M_ARM64)\n#endif||ARCH: cachelocal/sched/queue.h tests _M_ARM64 __riscv
arch|arch/x86_64.h|#if defined(__x86_64__)\n#endif||-
arch|config.h|#if defined(__aarch64__)\n#endif||ARCH: cachelocal/config.h tests __aarch64__
arch|sched/runtime/context.h|#ifdef __x86_64__\n#endif||ARCH: cachelocal/sched/runtime/context.h tests __x86_64__
arch|percpu_ops/mode.h|#elif defined __x86_64__||ARCH: cachelocal/percpu_ops/mode.h tests __x86_64__
arch|counter.h|#if defined(CL_ARCH_HAVE_RSEQ_SECTIONS) && defined(CL__ARCH_UC_PC)\n#endif||-
arch|counter.h|#if defined(CL_ARCH_AARCH64) && defined(CL_ARCH_HAVE_RSEQ_SECTIONS)\n#endif||ARCH: cachelocal/counter.h tests CL_ARCH_AARCH64
arch|sched/runtime/types.h|#  elif defined CL_ARCH_X86_64 && defined(CL_ARCH_GENERIC)||ARCH: cachelocal/sched/runtime/types.h tests CL_ARCH_GENERIC CL_ARCH_X86_64
arch|config.h|#ifdef CL_ARCH_X86_64\n#endif||-
arch|counter.h|/* on __x86_64__ the pause instruction */||-
EOF2
	while IFS='|' read -r rule file line opts want; do
		n=$((n + 1))
		rm -rf "$work/bad" && mkdir -p "$work/bad" && cp -r "$src/cachelocal" "$work/bad/"
		if [ ! -f "$work/bad/cachelocal/$file" ]; then
			echo "self-test FAIL: case file cachelocal/$file does not exist"; fails=$((fails + 1)); continue
		fi
		printf '%b\n' "$line" >>"$work/bad/cachelocal/$file"
		sched_on=0
		[ "$opts" = --sched ] && sched_on=1
		quiet_sched=1 quiet_pending=1
		if [ "$rule" = module ]; then
			check_modules "$work/bad" >"$work/out"
		else
			check_arch "$work/bad" >"$work/out"
		fi
		rc=$?
		quiet_sched=0 quiet_pending=0
		if [ "$want" = - ]; then
			if [ $rc -ne 0 ]; then
				echo "self-test FAIL: '$line' in cachelocal/$file ($rule) was rejected:"
				cat "$work/out"; fails=$((fails + 1))
			fi
		elif [ $rc -eq 0 ]; then
			echo "self-test FAIL: '$line' in cachelocal/$file ($rule $opts) was accepted"; fails=$((fails + 1))
		elif ! grep -qF -- "$want" "$work/out"; then
			echo "self-test FAIL: '$line' in cachelocal/$file ($rule): rejected, but not with \"$want\":"
			cat "$work/out"; fails=$((fails + 1))
		fi
	done <"$work/cases2"
	# The real tree has no arch offender, known or not (ARCH_PENDING is empty).
	n=$((n + 1))
	if ! check_arch "$src" >"$work/out" || [ -s "$work/out" ]; then
		echo "self-test FAIL: the tree has arch offenders:"; cat "$work/out"
		fails=$((fails + 1))
	fi
	rm -rf "$work"
	echo "layer check self-test: $((n - fails)) of $n cases as expected"
	[ "$fails" -eq 0 ]
}

tmpf=$(mktemp)
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpf" "$tmpd"' EXIT
sched_on=${CL_LAYERS_SCHED:-1}
if [ "${1:-}" = --sched ]; then
	sched_on=1
	shift
fi
case "${1:-}" in
--self-test) self_test ;;
--layer)
	shift
	for f in "$@"; do
		layer_of "$f"
		echo "$f $(layer_name "$layer")"
	done
	;;
--module)
	shift
	python3 "$checker" module-of "$@"
	;;
-h | --help) sed -n '2,46p' "$0" ;;
*)
	dir=${1:-$(cd "$(dirname "$0")/.." && pwd)/include}
	fail=0
	if check "$dir"; then
		echo "layer check: $(cd "$dir/cachelocal" && find . -name '*.h' | wc -l) headers, no upward include"
	else
		echo "layer check: FAILED (a header includes a higher layer; see README.md, Layers)"
		fail=1
	fi
	if check_modules "$dir"; then
		echo "module check: no private name used across modules$([ "$sched_on" = 1 ] || echo " (sched/ not enforced)")"
	else
		echo "module check: FAILED (a module uses another's cl__ name; see the top of $0)"
		fail=1
	fi
	if check_arch "$dir"; then
		echo "arch check: no new architecture test outside arch/"
	else
		echo "arch check: FAILED (an architecture macro tested outside arch/)"
		fail=1
	fi
	exit $fail
	;;
esac
