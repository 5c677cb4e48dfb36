#!/bin/sh
# gen-sysfs.sh - generate the fake sysfs trees under tests/data/ that the
# topology tests (and the benchmarks' many-core simulation) load with
# cl_topology_load(&t, CL_TEST_DATA_DIR "/<name>").
#
# Each tree holds only the files cachelocal reads (see topology.h), in the
# kernel's formats:
#   <name>/devices/system/cpu/{possible,present,online}
#   <name>/devices/system/cpu/cpuN/topology/{core_cpus_list | thread_siblings_list,
#                                            core_id, physical_package_id}
#   <name>/devices/system/cpu/cpuN/cache/indexM/{level,type,shared_cpu_list}
#   <name>/devices/system/node/{online,possible}, nodeK/cpulist
#
# Trees (expected values are asserted in tests/unit/test_topology.c):
#   epyc9654-2s  2 x AMD EPYC 9654: 384 threads, 192 cores (SMT2, sibling of
#                CPU c is c+192), 12 CCDs of 8 cores per socket = 24 L3s,
#                L2 per core, 2 nodes (one per socket). Kernel numbering:
#                0-95 socket 0, 96-191 socket 1, 192-383 the second threads.
#                Compact: only L2 and L3 cache entries.
#   8core-1l3    8 cores SMT2 (c, c+8), one L3, older-kernel files
#                (thread_siblings_list, no core_cpus_list), L1d+L1i+L2+L3.
#   24core-24l3  24 cores, no SMT, an L3 per core; only core_id and
#                physical_package_id (sparse core ids: 2c), 2 packages of 12.
#   sparse       CPU ids 0-3,8-11,300 (nr_cpu_ids 301); L3s {0-3} {8-11} {300};
#                nodes 0 and 2 (sparse node numbers).
#   offline      possible 0-9, present 0-7, online 0-4,6; CPUs 5 and 7
#                offline and 8, 9 not present: no topology or cache dirs (as
#                the kernel does), siblings lists of online CPUs exclude them;
#                cpu5/node0 and cpu7/node0 say where offline CPUs live.
#   broken       malformed possible and online, no present, malformed or
#                empty per-CPU files, no node directory: every part falls back.
#
# The trees are not tracked: `make` generates them (the sysfs target, a
# prerequisite of every test, fuzz target and benchmark that reads them) and
# compares each tree's hash with tests/data/sysfs.sha256, so a change to
# this script shows up as a hash mismatch until sysfs.sha256 is updated
# (`make sysfs-rehash`) in the same commit. The output is deterministic:
# the same files, contents and directories on every run.
#
# Usage: sh tests/data/gen-sysfs.sh [DIR]      write the trees into DIR
#                                              (default: next to this script)
#        sh tests/data/gen-sysfs.sh --hash DIR print "SHA256  TREE" per tree of DIR
#        sh tests/data/gen-sysfs.sh --trees    print the tree names
set -eu
trees="epyc9654-2s 8core-1l3 24core-24l3 sparse offline broken"

# tree_hash DIR: one hash over the tree's directory names, file names and
# file contents (names in C-locale order, so it does not depend on the host).
tree_hash() {
	(
		cd "$1"
		LC_ALL=C
		export LC_ALL
		find . -type d | sort | sed 's/^/d /'
		find . -type f | sort | xargs -r sha256sum
	) | sha256sum | cut -d' ' -f1
}

case "${1:-}" in
--trees)
	echo "$trees"
	exit 0
	;;
--hash)
	[ $# -eq 2 ] || { echo "usage: $0 --hash DIR" >&2; exit 2; }
	for t in $trees; do
		[ -d "$2/$t" ] || { echo "gen-sysfs: no tree $2/$t" >&2; exit 1; }
		echo "$(tree_hash "$2/$t")  $t"
	done
	exit 0
	;;
-*)
	echo "usage: $0 [DIR] | --hash DIR | --trees" >&2
	exit 2
	;;
esac
out=${1:-$(dirname "$0")}
mkdir -p "$out"
here=$(cd "$out" && pwd)

w() { # w FILE CONTENT: write one sysfs file (content + newline)
	[ -d "${1%/*}" ] || mkdir -p "${1%/*}"
	printf '%s\n' "$2" >"$1"
}

cpudir() { # cpudir CPUDIR NR_INDEX: its topology/ and cache/index0.. in one mkdir
	set -- "$1" "$2" "$1/topology"
	i=0
	while [ $i -lt "$2" ]; do
		set -- "$@" "$1/cache/index$i"
		i=$((i + 1))
	done
	shift 2
	mkdir -p "$@"
}

cache() { # cache CPUDIR INDEX LEVEL TYPE SHARED
	w "$1/cache/index$2/level" "$3"
	w "$1/cache/index$2/type" "$4"
	w "$1/cache/index$2/shared_cpu_list" "$5"
}

fresh() {
	rm -rf "${here:?}/$1"
	mkdir -p "$here/$1/devices/system/cpu" "$here/$1/devices/system/node"
}

# ---- epyc9654-2s
t=epyc9654-2s
fresh $t
d=$here/$t/devices/system/cpu
for f in possible present online; do w "$d/$f" "0-383"; done
w "$here/$t/devices/system/node/online" "0-1"
w "$here/$t/devices/system/node/possible" "0-1"
w "$here/$t/devices/system/node/node0/cpulist" "0-95,192-287"
w "$here/$t/devices/system/node/node1/cpulist" "96-191,288-383"
c=0
while [ $c -lt 384 ]; do
	core=$((c % 192))
	pkg=$((core / 96))
	ccx=$((core / 8))
	lo=$((ccx * 8))
	cpudir "$d/cpu$c" 2
	w "$d/cpu$c/topology/core_cpus_list" "$core,$((core + 192))"
	w "$d/cpu$c/topology/physical_package_id" "$pkg"
	cache "$d/cpu$c" 0 2 Unified "$core,$((core + 192))"
	cache "$d/cpu$c" 1 3 Unified "$lo-$((lo + 7)),$((lo + 192))-$((lo + 199))"
	c=$((c + 1))
done

# ---- 8core-1l3
t=8core-1l3
fresh $t
d=$here/$t/devices/system/cpu
for f in possible present online; do w "$d/$f" "0-15"; done
w "$here/$t/devices/system/node/online" "0"
w "$here/$t/devices/system/node/node0/cpulist" "0-15"
c=0
while [ $c -lt 16 ]; do
	core=$((c % 8))
	cpudir "$d/cpu$c" 4
	w "$d/cpu$c/topology/thread_siblings_list" "$core,$((core + 8))"
	w "$d/cpu$c/topology/core_id" "$core"
	w "$d/cpu$c/topology/physical_package_id" "0"
	cache "$d/cpu$c" 0 1 Data "$core,$((core + 8))"
	cache "$d/cpu$c" 1 1 Instruction "$core,$((core + 8))"
	cache "$d/cpu$c" 2 2 Unified "$core,$((core + 8))"
	cache "$d/cpu$c" 3 3 Unified "0-15"
	c=$((c + 1))
done

# ---- 24core-24l3
t=24core-24l3
fresh $t
d=$here/$t/devices/system/cpu
for f in possible present online; do w "$d/$f" "0-23"; done
w "$here/$t/devices/system/node/online" "0"
w "$here/$t/devices/system/node/node0/cpulist" "0-23"
c=0
while [ $c -lt 24 ]; do
	cpudir "$d/cpu$c" 3
	w "$d/cpu$c/topology/core_id" "$((2 * (c % 12)))"
	w "$d/cpu$c/topology/physical_package_id" "$((c / 12))"
	cache "$d/cpu$c" 0 1 Data "$c"
	cache "$d/cpu$c" 1 2 Unified "$c"
	cache "$d/cpu$c" 2 3 Unified "$c"
	c=$((c + 1))
done

# ---- sparse
t=sparse
fresh $t
d=$here/$t/devices/system/cpu
for f in possible present online; do w "$d/$f" "0-3,8-11,300"; done
w "$here/$t/devices/system/node/online" "0,2"
w "$here/$t/devices/system/node/node0/cpulist" "0-3,8-11"
w "$here/$t/devices/system/node/node2/cpulist" "300"
for c in 0 1 2 3 8 9 10 11 300; do
	cpudir "$d/cpu$c" 2
	w "$d/cpu$c/topology/core_cpus_list" "$c"
	w "$d/cpu$c/topology/physical_package_id" "$((c / 100))"
	cache "$d/cpu$c" 0 2 Unified "$c"
	case $c in
	[0-3]) l3="0-3" ;;
	300) l3="300" ;;
	*) l3="8-11" ;;
	esac
	cache "$d/cpu$c" 1 3 Unified "$l3"
done

# ---- offline
t=offline
fresh $t
d=$here/$t/devices/system/cpu
w "$d/possible" "0-9"
w "$d/present" "0-7"
w "$d/online" "0-4,6"
w "$here/$t/devices/system/node/online" "0"
w "$here/$t/devices/system/node/node0/cpulist" "0-4,6"
for c in 0 1 2 3 4 6; do
	case $c in
	0 | 4) sib="0,4" ;;
	2 | 6) sib="2,6" ;;
	*) sib="$c" ;;
	esac
	cpudir "$d/cpu$c" 2
	w "$d/cpu$c/topology/core_cpus_list" "$sib"
	w "$d/cpu$c/topology/physical_package_id" "0"
	cache "$d/cpu$c" 0 2 Unified "$sib"
	cache "$d/cpu$c" 1 3 Unified "0-4,6"
done
for c in 5 7; do
	w "$d/cpu$c/online" "0"
	w "$d/cpu$c/node0/.keep" ""
done

# ---- broken
t=broken
fresh $t
d=$here/$t/devices/system/cpu
rmdir "$here/$t/devices/system/node"
w "$d/possible" "0-x"
w "$d/online" "garbage"
w "$d/cpu0/topology/core_cpus_list" ""
w "$d/cpu0/topology/physical_package_id" "zero"
w "$d/cpu0/cache/index0/type" "Unified"
w "$d/cpu0/cache/index0/level" "abc"
w "$d/cpu0/cache/index0/shared_cpu_list" "0"
w "$d/cpu1/topology/core_cpus_list" "1-"
w "$d/cpu1/topology/core_id" "-"
w "$d/cpu1/cache/index0/type" "Unified"
w "$d/cpu1/cache/index0/level" "3"
w "$d/cpu1/cache/index0/shared_cpu_list" ",1"
w "$d/cpu2/uevent" ""
w "$d/cpu3/topology/thread_siblings_list" "3-2"
w "$d/cpu3/cache/index0/type" "Unified"
w "$d/cpu3/cache/index0/level" "2"

n=0
for t in $trees; do n=$((n + $(find "$here/$t" -type f | wc -l))); done
echo "gen-sysfs: wrote $(echo $trees | wc -w) trees, $n files under $here"
