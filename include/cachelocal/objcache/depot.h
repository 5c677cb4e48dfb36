/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache/depot.h - the shared side of a cache: the slabs objects are carved
 * from, the depot of free objects (under the cache's mutex), and the
 * addresses of one CPU's count and slots.
 *
 * Part of objcache.h, the header to include: the API, its kernel-doc, the
 * types and the synchronization table are there. The cl__ names here are
 * not API. Included alone, this file includes objcache.h (which includes
 * every piece in order).
 */
#include "../objcache.h"

#ifndef CACHELOCAL_OBJCACHE_DEPOT_H
#define CACHELOCAL_OBJCACHE_DEPOT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler.h"
#include "../percpu.h"

CL_BEGIN_DECLS

/* ---- helpers ---- */

/* CPU @cpu's copy of the count and of the slots. */
CL_INLINE intptr_t *cl__objcache_count(const struct cl_objcache *c, unsigned cpu)
{
	return cl_percpu_ptr_stride(c->count, cpu, c->stride);
}

CL_INLINE void **cl__objcache_items(const struct cl_objcache *c, unsigned cpu)
{
	return cl_percpu_ptr_stride(c->items, cpu, c->stride);
}

/* Carve one more slab into the depot; 0, or -1 (ENOMEM). Under c->lock. */
CL_INLINE int cl__objcache_grow(struct cl_objcache *c)
{
	size_t n = c->objs_per_slab, total = c->nr_objects + n, i;
	char *slab;

	if (c->nr_slabs == c->cap_slabs) {
		size_t nc = c->cap_slabs ? 2 * c->cap_slabs : 16;
		char **s = (char **)realloc(c->slabs, nc * sizeof(*s));

		if (s == NULL)
			return -1;
		c->slabs = s;
		c->cap_slabs = nc;
	}
	if (total > c->cap_depot) {
		size_t nc = c->cap_depot ? 2 * c->cap_depot : total;
		void **d;

		while (nc < total)
			nc *= 2;
		d = (void **)realloc(c->depot, nc * sizeof(*d));
		if (d == NULL)
			return -1;
		c->depot = d;
		c->cap_depot = nc;
	}
	slab = (char *)aligned_alloc(c->align, n * c->obj_size);
	if (slab == NULL)
		return -1;
	memset(slab, 0, n * c->obj_size);
	c->slabs[c->nr_slabs++] = slab;
	/* Lowest address on top: handed out first. */
	for (i = 0; i < n; i++)
		c->depot[c->nr_depot++] = slab + (n - 1 - i) * c->obj_size;
	c->nr_objects = total;
	return 0;
}

/* Objects back to the depot (it always has room for all). */
CL_INLINE void cl__objcache_deposit(struct cl_objcache *c, void *const *objs, size_t n)
{
	memcpy(c->depot + c->nr_depot, objs, n * sizeof(*objs));
	c->nr_depot += n;
}

/* Free everything create allocated (any subset of it). */
CL_INLINE void cl__objcache_release(struct cl_objcache *c)
{
	size_t i;

	for (i = 0; i < c->nr_slabs; i++)
		free(c->slabs[i]);
	free(c->slabs);
	free(c->depot);
	if (c->pcpu)
		cl_percpu_free(c->pool, c->pcpu);
	if (c->pool)
		cl_percpu_pool_destroy(c->pool);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->drain_lock);
	free(c);
}

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_DEPOT_H */
