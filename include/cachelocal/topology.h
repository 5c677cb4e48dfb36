/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/topology.h - the machine as sysfs describes it: CPU ids
 * (possible, present, online; sparse ids and more than 256 CPUs work), SMT
 * cores, L2 and last-level caches, NUMA nodes.
 *
 *	struct cl_topology t;
 *
 *	if (cl_topology_load(&t, NULL) == 0) {          // NULL root: "/sys"
 *		for (unsigned c = 0; c < t.nr_cpu_ids; c++)
 *			if (t.cpu[c].online)
 *				printf("cpu %u: core %d llc %d node %d\n", c,
 *				       t.cpu[c].core, t.cpu[c].llc, t.cpu[c].node);
 *		cl_topology_free(&t);
 *	}
 *
 * Files read, relative to the root (tests pass a fake tree under tests/data/):
 *
 *   devices/system/cpu/{possible,present,online}          CPU lists ("0-3,8-11")
 *   devices/system/cpu/cpuN/topology/core_cpus_list       SMT siblings (older
 *     kernels: thread_siblings_list; else core_id + physical_package_id)
 *   devices/system/cpu/cpuN/topology/physical_package_id  package
 *   devices/system/cpu/cpuN/cache/indexM/{level,type,shared_cpu_list}
 *     L2 = the level-2 Data/Unified cache; LLC = the highest-level Data/Unified
 *   devices/system/node/{online,possible}, nodeK/cpulist  NUMA nodes
 *   devices/system/cpu/cpuN/nodeK                         node of a CPU missing
 *                                                         from every cpulist
 *
 * Missing or malformed files never fail the load: the part they describe
 * falls back to a uniform guess (one core and one L2 per CPU, one LLC, node 0)
 * and a CL_TOPO_FALLBACK_* bit in t->fallback says so. Core, L2 and LLC ids
 * are dense (0..nr_X-1), numbered in order of their lowest CPU id. Node ids
 * are sysfs's node numbers (they may be sparse: node < nr_nodes is not
 * guaranteed). CPUs that have no per-CPU files while others have them
 * (offline CPUs: the kernel removes their topology and cache directories)
 * each get a core, L2 and LLC of their own, and CL_TOPO_FALLBACK_PARTIAL is set.
 *
 * Context: the functions here allocate and read files; call them at start-up,
 * not on hot paths. cl_topology_load() is thread-safe for distinct t.
 *
 * This header is the API: the types, the declarations and their kernel-doc.
 * The bodies are private pieces, included at the end and never to be
 * included directly (their cl__ names are not API):
 *   topology/sysfs.h  reading sysfs files and parsing CPU lists ("0-3,8");
 *   topology/model.h  the model: dense core/L2/LLC ids, nodes, fallbacks,
 *                     and the bodies of the functions declared here.
 */
#ifndef CACHELOCAL_TOPOLOGY_H
#define CACHELOCAL_TOPOLOGY_H

#include "compiler.h"
#include "config.h"

CL_BEGIN_DECLS

/* t->fallback bits: which parts of the topology were guessed. */
#define CL_TOPO_FALLBACK_POSSIBLE 0x01u /* cpu/possible unreadable: CPU ids guessed */
#define CL_TOPO_FALLBACK_PRESENT 0x02u  /* cpu/present unreadable: present = possible */
#define CL_TOPO_FALLBACK_ONLINE 0x04u   /* cpu/online unreadable: online = present */
#define CL_TOPO_FALLBACK_CORE 0x08u     /* no SMT information: one core per CPU */
#define CL_TOPO_FALLBACK_L2 0x10u       /* no L2 information: one L2 per core */
#define CL_TOPO_FALLBACK_LLC 0x20u      /* no cache information: one LLC for all CPUs */
#define CL_TOPO_FALLBACK_NODE 0x40u     /* no NUMA information: every CPU on node 0 */
#define CL_TOPO_FALLBACK_PARTIAL 0x80u  /* some CPUs lacked per-CPU files (see above) */

/*
 * Largest CPU id + 1 the parser accepts; a list naming a larger id is
 * malformed. Linux's NR_CPUS tops out at 8192 (x86 MAXSMP, powerpc); this
 * matches CL_MAX_CPUS's ceiling.
 */
#define CL_TOPO_MAX_CPU_IDS (1u << 16)

/**
 * struct cl_cpu_info - what is known about one CPU id.
 * @possible: 1 if the id is in cpu/possible (0: every other field is meaningless).
 * @present: 1 if present.
 * @online: 1 if online.
 * @package: physical package id, -1 if unknown.
 * @core: dense SMT-core id, 0..nr_cores-1 (SMT siblings share it); -1 if not possible.
 * @l2: dense L2 id, 0..nr_l2s-1; -1 if not possible.
 * @llc: dense last-level-cache id, 0..nr_llcs-1; -1 if not possible.
 * @node: NUMA node number as in sysfs; 0 if unknown.
 */
struct cl_cpu_info {
	int possible, present, online;
	int package;
	int core;
	int l2;
	int llc;
	int node;
};

/**
 * struct cl_topology - the machine.
 * @nr_cpu_ids: 1 + highest possible CPU id; @cpu has nr_cpu_ids entries.
 * @nr_possible: CPUs in cpu/possible.
 * @nr_present: present CPUs.
 * @nr_online: online CPUs.
 * @nr_cores: SMT cores (over possible CPUs).
 * @nr_l2s: L2 caches (over possible CPUs).
 * @nr_llcs: last-level caches (over possible CPUs).
 * @nr_nodes: NUMA nodes listed online in sysfs (memory-only nodes included), >= 1.
 * @fallback: CL_TOPO_FALLBACK_* bits; 0 when everything was read.
 * @cpu: indexed by CPU id; ids not possible have possible == 0.
 */
struct cl_topology {
	unsigned nr_cpu_ids;
	unsigned nr_possible, nr_present, nr_online;
	unsigned nr_cores, nr_l2s, nr_llcs, nr_nodes;
	unsigned fallback;
	struct cl_cpu_info *cpu;
};

/**
 * cl_topology_free() - release what cl_topology_load() allocated.
 * @t: a loaded topology, or one zeroed by a failed load; NULL is ignored.
 *
 * Context: any thread; t must not be in use by others.
 */
CL_INLINE void cl_topology_free(struct cl_topology *t);

/**
 * cl_topology_load() - read the machine's CPUs, caches and nodes from sysfs.
 * @t: filled in; release with cl_topology_free().
 * @sysfs_root: directory holding devices/system/..., NULL for "/sys".
 *
 * Missing or malformed files are not errors: the part they describe falls
 * back to a uniform guess flagged in t->fallback (see the file comment). A
 * file that cannot be read for want of memory (an allocation failing here or
 * inside fopen()) is an error: the load fails with ENOMEM, never returns a
 * guess in its place.
 *
 * Context: any thread; allocates and reads files (start-up, not hot paths).
 * Return: 0, or -1 with errno EINVAL (t is NULL) or ENOMEM (t is zeroed).
 */
CL_INLINE int cl_topology_load(struct cl_topology *t, const char *sysfs_root);

/**
 * cl_nr_possible_cpus() - 1 + the highest possible CPU id of this machine.
 *
 * Read once from /sys/devices/system/cpu/possible and cached process-wide;
 * falls back to sysconf(_SC_NPROCESSORS_CONF), then 1. Size per-CPU arrays
 * with it (CPU ids may be sparse: it is not a count of CPUs).
 *
 * Context: any thread; the first call reads a file.
 * Return: the number of CPU ids, >= 1. Never fails.
 */
CL_INLINE unsigned cl_nr_possible_cpus(void);

CL_END_DECLS

/* The bodies (private pieces, see the top). */
#include "topology/sysfs.h"
#include "topology/model.h"

#endif /* CACHELOCAL_TOPOLOGY_H */
