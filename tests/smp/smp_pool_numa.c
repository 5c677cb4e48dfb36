/* SPDX-License-Identifier: MIT */
/*
 * smp_pool_numa - a CL_PERCPU_NUMA pool puts each CPU's slice on that CPU's
 * node.
 *
 * A pool made with CL_PERCPU_NUMA gets, for each new range, an
 * MPOL_PREFERRED policy per CPU slice for the node of that CPU (percpu.h),
 * so the pages come from that node whichever thread touches them first. The
 * program allocates OBJECTS objects (one page each, page-aligned, plus one
 * small object), writes every CPU's copy from the main thread alone (not
 * from the CPU's own thread: placement must not depend on first touch),
 * then asks the kernel where each page is: the move_pages system call in
 * its query form (nodes NULL: status[i] = the node of page i; no libnuma).
 *
 * Asserted: the pool binds (stats: numa_nodes >= 2, no failed mbind) and
 * every page of CPU c's copies is on node(c), the node topology.h gives
 * (sysfs nodeK/cpulist), for every CPU whose node has memory (a memory-less
 * node's slices fall back elsewhere by design of MPOL_PREFERRED: counted and
 * printed, not asserted).
 *
 * On a machine with one node (counted over possible CPUs) the same queries
 * run (every page must then be on that node), and the program exits 77
 * with a SKIP line: placement cannot be told apart there.
 *
 * Knobs: OBJECTS (page-sized objects per CPU, default 4, at most 63).
 * Output: `numa: nodes=M cpus=N pages=P on_node=Q elsewhere=R unchecked=U`
 * and one `node K: ...` line per node, then PASS/FAIL/SKIP.
 */
#include "smp.h"

#include <sys/syscall.h>

#include <cachelocal/percpu.h>
#include <cachelocal/topology.h>

#define NAME "smp_pool_numa"

/* Does node @k have memory? sysfs node/has_memory (unknown: assume yes). */
static int node_has_memory(int k)
{
	unsigned char set[SMP_MAX_CPUS];

	if (smp_read_cpulist("/sys/devices/system/node/has_memory", set) < 0)
		return 1;
	return k >= 0 && k < SMP_MAX_CPUS && set[k];
}

int main(void)
{
	long objects = smp_env_long("OBJECTS", 4);
	struct cl_percpu_pool_attr attr = { 0, 0, CL_PERCPU_NUMA };
	struct cl_percpu_stats st;
	struct cl_percpu_pool *pool;
	struct cl_topology t;
	unsigned nr_cpus, nodes = 0, max_node = 0;
	unsigned long on_node = 0, elsewhere = 0, unchecked = 0, pages = 0;
	unsigned long *node_pages, *node_good;
	unsigned *node_seen;
	char **obj;
	long psz = sysconf(_SC_PAGESIZE);

	smp_banner(NAME);
	if (objects < 1)
		objects = 1;
	if (objects > 63) /* one move_pages query of up to 64 pages per CPU */
		objects = 63;
	if (cl_topology_load(&t, NULL) != 0)
		return smp_fatal(NAME, "cl_topology_load: %s", strerror(errno));
	for (unsigned c = 0; c < t.nr_cpu_ids; c++)
		if (t.cpu[c].possible && (unsigned)t.cpu[c].node > max_node)
			max_node = (unsigned)t.cpu[c].node;
	node_seen = calloc(max_node + 1, sizeof(*node_seen));
	node_pages = calloc(max_node + 1, sizeof(*node_pages));
	node_good = calloc(max_node + 1, sizeof(*node_good));
	obj = calloc((size_t)objects + 1, sizeof(*obj));
	if (!node_seen || !node_pages || !node_good || !obj)
		return smp_fatal(NAME, "out of memory");
	for (unsigned c = 0; c < t.nr_cpu_ids; c++)
		if (t.cpu[c].possible && !node_seen[t.cpu[c].node]++)
			nodes++;

	pool = cl_percpu_pool_create(&attr);
	if (!pool)
		return smp_fatal(NAME, "cl_percpu_pool_create(CL_PERCPU_NUMA): %s", strerror(errno));
	nr_cpus = cl_percpu_pool_nr_cpus(pool);
	for (long i = 0; i < objects; i++)
		obj[i] = cl_percpu_alloc(pool, (size_t)psz, (size_t)psz);
	obj[objects] = cl_percpu_alloc(pool, 64, 64);
	for (long i = 0; i <= objects; i++)
		if (!obj[i])
			return smp_fatal(NAME, "cl_percpu_alloc: %s", strerror(errno));

	/* touch every copy from this thread, then ask where each page is */
	for (unsigned c = 0; c < nr_cpus; c++) {
		void *pg[64];
		int status[64];
		unsigned n = 0;
		int want;

		if (c >= t.nr_cpu_ids || !t.cpu[c].possible)
			continue;
		want = t.cpu[c].node;
		for (long i = 0; i <= objects && n < 64; i++) {
			char *p = cl_percpu_ptr(obj[i], c);

			memset(p, (int)(c & 0x7f) + 1, i < objects ? (size_t)psz : 64);
			pg[n++] = (void *)((uintptr_t)p & ~(uintptr_t)(psz - 1));
		}
		if (syscall(SYS_move_pages, 0, (unsigned long)n, pg, NULL, status, 0) != 0) {
			if (errno == ENOSYS || errno == EPERM) /* no CONFIG_MIGRATION, or a filter */
				return smp_skip(NAME, "move_pages unavailable (%s): cannot ask where pages are",
						strerror(errno));
			return smp_fatal(NAME, "move_pages (query): %s", strerror(errno));
		}
		for (unsigned i = 0; i < n; i++) {
			pages++;
			node_pages[want]++;
			if (status[i] < 0) {
				smp_check(0, "cpu %u: page %p not present after a write (status %d)", c, pg[i],
					  status[i]);
			} else if (!node_has_memory(want)) {
				unchecked++;
			} else if (status[i] == want) {
				on_node++;
				node_good[want]++;
			} else {
				elsewhere++;
				smp_check(0, "cpu %u (node %d): page %p of its slice is on node %d", c, want,
					  pg[i], status[i]);
			}
		}
	}
	cl_percpu_pool_stats(pool, &st);
	printf("numa: nodes=%u cpus=%u pages=%lu on_node=%lu elsewhere=%lu unchecked=%lu "
	       "(pool: %u nodes bound, %zu slices bound, %zu mbind failures)\n",
	       nodes, nr_cpus, pages, on_node, elsewhere, unchecked, st.numa_nodes, st.nr_numa_bound,
	       st.nr_numa_failed);
	for (unsigned k = 0; k <= max_node; k++)
		if (node_seen[k])
			printf("node %u: %u possible CPUs, %lu pages, %lu on the node%s\n", k,
			       node_seen[k], node_pages[k], node_good[k],
			       node_has_memory((int)k) ? "" : " (no memory: not checked)");
	if (nodes >= 2)
		smp_check(st.numa_nodes >= 2 && st.nr_numa_bound > 0 && st.nr_numa_failed == 0,
			  "pool binds %u nodes, %zu slices, %zu failures", st.numa_nodes,
			  st.nr_numa_bound, st.nr_numa_failed);
	for (long i = 0; i <= objects; i++)
		cl_percpu_free(pool, obj[i]);
	cl_percpu_pool_destroy(pool);
	cl_topology_free(&t);
	free(obj);
	free(node_seen);
	free(node_pages);
	free(node_good);
	if (nodes < 2 && smp_failures() == 0)
		return smp_skip(NAME, "one NUMA node: placement cannot be told apart (%lu pages all on "
				      "it)", on_node);
	return smp_finish(NAME, "%lu of %lu pages on their CPU's node, %lu on a memory-less node",
			  on_node, pages, unchecked);
}
