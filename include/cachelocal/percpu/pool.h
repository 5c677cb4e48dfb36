/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/pool.h - creating, querying and destroying a pool.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_POOL_H
#define CACHELOCAL_PERCPU_POOL_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../compiler.h"
#include "../config.h"
#include "../internal/fork.h"
#include "../topology.h"
#include "numa.h"
#include "ranges.h"
#include "robust.h"

CL_BEGIN_DECLS

CL_INLINE struct cl_percpu_pool *cl_percpu_pool_create_topo(const struct cl_percpu_pool_attr *attr,
							    const struct cl_topology *topo)
{
	const size_t stride = attr && attr->stride ? attr->stride : (size_t)CL_PERCPU_STRIDE;
	const unsigned nr_cpus = attr && attr->max_nr_cpus ? attr->max_nr_cpus : cl_nr_possible_cpus();
	const unsigned flags = attr ? attr->flags : 0;
	long pg = sysconf(_SC_PAGESIZE);
	struct cl_percpu_pool *pool;

	if (pg <= 0)
		pg = 4096;
	if (!cl__percpu_is_pow2(stride) || stride < (size_t)pg || stride > CL_PERCPU_STRIDE_MAX ||
	    nr_cpus == 0 || nr_cpus > CL_MAX_CPUS || (flags & ~CL__PERCPU_FLAGS) ||
	    (size_t)nr_cpus > ((size_t)-1 - stride) / stride) {
		errno = EINVAL;
		return NULL;
	}
	pool = (struct cl_percpu_pool *)calloc(1, sizeof(*pool));
	if (!pool) {
		errno = ENOMEM;
		return NULL;
	}
	pool->stride = stride;
	pool->page_size = (size_t)pg;
	pool->nr_cpus = nr_cpus;
	pool->flags = flags;
	if (flags & CL_PERCPU_NUMA) {
		struct cl_topology own;
		int rc;

		if (!topo) {
			if (cl_topology_load(&own, NULL) != 0) {
				free(pool);
				errno = ENOMEM;
				return NULL;
			}
		}
		rc = cl__percpu_numa_setup(pool, topo ? topo : &own);
		if (!topo)
			cl_topology_free(&own);
		if (rc != 0) {
			free(pool);
			return NULL;
		}
	}
	pthread_mutex_init(&pool->lock, NULL);
	cl__fork_register(&pool->fork_reg, &pool->lock, NULL);
	return pool;
}

CL_INLINE struct cl_percpu_pool *cl_percpu_pool_create(const struct cl_percpu_pool_attr *attr)
{
	return cl_percpu_pool_create_topo(attr, NULL);
}

CL_INLINE unsigned cl_percpu_pool_nr_cpus(const struct cl_percpu_pool *pool)
{
	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	return pool->nr_cpus;
}

CL_INLINE size_t cl_percpu_pool_stride(const struct cl_percpu_pool *pool)
{
	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	return pool->stride;
}

CL_INLINE int cl_percpu_pool_stats(struct cl_percpu_pool *pool, struct cl_percpu_stats *out)
{
	if (!pool || !out) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&pool->lock);
	*out = pool->stats;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

CL_INLINE void cl_percpu_pool_destroy(struct cl_percpu_pool *pool)
{
	if (!pool)
		return;
	if (pool->flags & CL_PERCPU_ROBUST)
		cl_percpu_pool_report_leaks(pool, stderr);
	cl__fork_unregister(&pool->fork_reg);
	for (size_t i = 0; i < pool->nr_ranges; i++) {
		munmap(pool->ranges[i].base, (size_t)pool->nr_cpus * pool->stride);
		free(pool->ranges[i].objs);
	}
	free(pool->ranges);
	free(pool->cpu_node);
	free(pool->pagemap_buf);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_POOL_H */
