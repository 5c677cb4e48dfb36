/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/numa.h - CL_PERCPU_NUMA: the CPU-to-node map of a pool and the
 * mbind of each new range's slices.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_NUMA_H
#define CACHELOCAL_PERCPU_NUMA_H

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "../compiler.h"
#include "../internal/bitmap.h"
#include "../sys.h"
#include "../topology.h"

CL_BEGIN_DECLS

/* Give each CPU's slice of the new range at base its CPU's node (mbind). */
CL_INLINE void cl__percpu_numa_bind(struct cl_percpu_pool *pool, char *base)
{
	const unsigned nbits = pool->max_node + 1;
	unsigned long *mask = cl__bitmap_alloc(nbits);

	for (unsigned cpu = 0; mask && cpu < pool->nr_cpus; cpu++) {
		int node = pool->cpu_node[cpu];
		long rc;

		if (node < 0)
			continue;
		cl__bitmap_zero(mask, nbits);
		cl__bitmap_set(mask, (unsigned)node);
		/* maxnode counts the bits of every word, plus the kernel's off-by-one. */
		rc = syscall(SYS_mbind, base + (size_t)cpu * pool->stride, pool->stride,
			     CL__MPOL_PREFERRED, mask,
			     (unsigned long)cl__bitmap_words(nbits) * CL__BITS_PER_LONG + 1, 0u);
		if (rc == 0)
			pool->stats.nr_numa_bound++;
		else
			pool->stats.nr_numa_failed++;
	}
	free(mask);
}

/*
 * The CPU-to-node map of a CL_PERCPU_NUMA pool, from @t; none when the CPUs
 * span one node. 0, or -1 with errno ENOMEM.
 */
CL_INLINE int cl__percpu_numa_setup(struct cl_percpu_pool *pool, const struct cl_topology *t)
{
	unsigned nodes = 0, c;
	int first = -1;

	pool->cpu_node = (int *)malloc(sizeof(int) * pool->nr_cpus);
	for (c = 0; pool->cpu_node && c < pool->nr_cpus; c++) {
		int node = c < t->nr_cpu_ids && t->cpu[c].possible ? t->cpu[c].node : -1;

		pool->cpu_node[c] = node;
		if (node < 0)
			continue;
		if ((unsigned)node > pool->max_node)
			pool->max_node = (unsigned)node;
		if (first < 0)
			first = node;
		else if (node != first)
			nodes = 2;
	}
	/* Count the distinct nodes only when there is more than one. */
	if (pool->cpu_node && nodes) {
		unsigned char *seen = (unsigned char *)calloc(pool->max_node + 1, 1);

		nodes = 0;
		for (c = 0; seen && c < pool->nr_cpus; c++)
			if (pool->cpu_node[c] >= 0 && !seen[pool->cpu_node[c]]++)
				nodes++;
		free(seen);
	}
	if (!pool->cpu_node) {
		errno = ENOMEM;
		return -1;
	}
	if (nodes < 2) { /* one node: nothing to bind */
		free(pool->cpu_node);
		pool->cpu_node = NULL;
		nodes = 0;
	}
	pool->stats.numa_nodes = nodes;
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_NUMA_H */
