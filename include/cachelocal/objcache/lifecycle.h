/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache/lifecycle.h - create, destroy and the statistics of a cache.
 *
 * Part of objcache.h, the header to include: the API, its kernel-doc, the
 * types and the synchronization table are there. The cl__ names here are
 * not API. Included alone, this file includes objcache.h (which includes
 * every piece in order).
 */
#include "../objcache.h"

#ifndef CACHELOCAL_OBJCACHE_LIFECYCLE_H
#define CACHELOCAL_OBJCACHE_LIFECYCLE_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../atfork.h"
#include "../compiler.h"
#include "../percpu.h"
#include "../percpu_ops.h"
#include "depot.h"
#include "drain.h"

CL_BEGIN_DECLS

/* ---- create / destroy ---- */

/*
 * The largest object size: 2^40, or a quarter of the address space where
 * size_t is narrower (32-bit targets), so that rounding the size up to the
 * alignment and the slab arithmetic below cannot overflow.
 */
#if SIZE_MAX >= 0x10000000000u
#define CL__OBJCACHE_OBJ_MAX ((size_t)1 << 40)
#else
#define CL__OBJCACHE_OBJ_MAX (SIZE_MAX / 4)
#endif

/*
 * Where the count goes in the pool object: CL__OBJCACHE_PLACE_ROOM bytes of
 * room let it start at any cache line of a page, and it is put half a page
 * from the struct's fast-path fields (page offset of c plus 2 KiB). A load
 * whose address has the same 12 low bits as an older store still in flight
 * waits for that store (4K aliasing: measured on the x86 cores here, a
 * documented Intel effect too); every alloc and free stores
 * the count and then, in the next call, loads cpu_count and cap: the two
 * 64 KiB-strided copies and a page-aligned struct (what some mallocs return
 * for it) put all of them at page offset 0. Returns the byte offset.
 */
CL_INLINE size_t cl__objcache_place(const struct cl_objcache *c, const void *pcpu)
{
	uintptr_t want = ((uintptr_t)c + 2048u) % 4096u, have = (uintptr_t)pcpu % 4096u;

	return (size_t)((want - have + 4096u) % 4096u) / CL_CACHELINE_SIZE * CL_CACHELINE_SIZE;
}

CL_INLINE struct cl_objcache *cl_objcache_create(const struct cl_objcache_attr *attr)
{
	struct cl_objcache *c;
	size_t align, size, cap, bytes, room;
	enum cl_rseq_index idx;

	if (attr == NULL || attr->obj_size == 0 || (unsigned)attr->index > (unsigned)CL_RSEQ_INDEX_MM_CID ||
	    (attr->align & (attr->align - 1)) || attr->align > CL_OBJCACHE_MAX_ALIGN ||
	    attr->obj_size > CL__OBJCACHE_OBJ_MAX) {
		errno = EINVAL;
		return NULL;
	}
	align = attr->align;
	if (align == 0) {
		align = 1;
		while (align < 16 && align < attr->obj_size)
			align *= 2;
	}
	if (align < sizeof(void *) && attr->obj_size >= sizeof(void *))
		align = sizeof(void *);
	size = (attr->obj_size + align - 1) / align * align;
	cap = attr->per_cpu_capacity ? attr->per_cpu_capacity : CL_OBJCACHE_DEFAULT_CAPACITY;
	bytes = sizeof(intptr_t) + cap * sizeof(void *);
	if (bytes > CL_PERCPU_STRIDE) {
		errno = EINVAL;
		return NULL;
	}
	c = (struct cl_objcache *)aligned_alloc(CL_FALSE_SHARING_SIZE,
						(sizeof(*c) + CL_FALSE_SHARING_SIZE - 1) /
							CL_FALSE_SHARING_SIZE * CL_FALSE_SHARING_SIZE);
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->drain_lock, NULL);
	idx = attr->index;
	c->index = idx;
	c->obj_size = size;
	c->align = align;
	c->cap = (intptr_t)cap;
	c->batch = (unsigned)(cap / 2 ? cap / 2 : 1);
	if (c->batch > CL__OBJCACHE_MOVE_MAX)
		c->batch = CL__OBJCACHE_MOVE_MAX;
	/* The largest power of two of objects in 64 KiB, at least one; a slab
	 * above 64 KiB (one large object) is mapped, not cleared. */
	c->objs_per_slab = 1;
	c->slab_shift = 0;
	while (2 * c->objs_per_slab * size <= CL__OBJCACHE_SLAB_BYTES) {
		c->objs_per_slab *= 2;
		c->slab_shift++;
	}
	c->slab_bytes = c->objs_per_slab * size;
	c->slab_mapped = c->slab_bytes > CL__OBJCACHE_SLAB_BYTES;
	if (cl_atfork_register(&c->fork_lock, &c->lock, NULL) != 0 ||
	    cl_atfork_register(&c->fork_drain, &c->drain_lock, NULL) != 0)
		goto fail; /* the drain lock, newer, is taken first: drains nest the depot's */
	c->pool = cl_percpu_pool_create(NULL);
	if (c->pool == NULL)
		goto fail;
	/* Room to place the count half a page away from the struct's fast-path
	 * fields (cl__objcache_place()), when the capacity leaves it. */
	room = bytes + CL__OBJCACHE_PLACE_ROOM <= CL_PERCPU_STRIDE ? CL__OBJCACHE_PLACE_ROOM : 0;
	c->pcpu = cl_percpu_alloc(c->pool, bytes + room, CL_CACHELINE_SIZE);
	if (c->pcpu == NULL)
		goto fail;
	c->stride = cl_percpu_pool_stride(c->pool);
	if (c->stride != CL_PERCPU_STRIDE) /* the fast path multiplies by the constant */
		goto fail;
	c->nr_cpus = cl_percpu_pool_nr_cpus(c->pool);
	c->count = (intptr_t *)(void *)((char *)c->pcpu + (room ? cl__objcache_place(c, c->pcpu) : 0));
	c->cpu_count = idx == CL_RSEQ_INDEX_CPU_ID ? c->count : NULL;
	c->items = (void **)(void *)(c->count + 1);
	/* How a drain fences, from the process's operations mode. */
	if (cl_rseq_ops_mode_index(idx) != CL_RSEQ_OPS_RSEQ) {
		c->fence = CL_OBJCACHE_DRAIN_LOCK;
	} else {
		int m = cl__objcache_memb_ready(idx);

		c->fence = m == 1 ? CL_OBJCACHE_DRAIN_MEMBARRIER
				  : idx == CL_RSEQ_INDEX_CPU_ID ? CL_OBJCACHE_DRAIN_MIGRATE
								: CL_OBJCACHE_DRAIN_NONE;
	}
	return c;
fail:
	cl__objcache_release(c);
	errno = ENOMEM;
	return NULL;
}

/* Free objects in every CPU cache (racy while allocs and frees run). */
CL_INLINE size_t cl__objcache_cached(const struct cl_objcache *c)
{
	size_t sum = 0;
	unsigned i;

	for (i = 0; i < c->nr_cpus; i++) {
		intptr_t n = CL_ATOMIC_LOAD(cl__objcache_count(c, i), CL_RELAXED);

		if (n > 0)
			sum += (size_t)n;
	}
	return sum;
}

CL_INLINE int cl_objcache_destroy(struct cl_objcache *c)
{
	if (c == NULL)
		return 0;
	if (c->nr_depot + cl__objcache_cached(c) != c->nr_objects) {
		errno = EBUSY;
		return -1;
	}
	cl__objcache_release(c);
	return 0;
}

#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
CL_INLINE int cl_objcache_stats(struct cl_objcache *c, struct cl_objcache_stats *st)
{
	size_t cached;

	if (c == NULL || st == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	st->obj_size = c->obj_size;
	st->align = c->align;
	st->per_cpu_capacity = (unsigned)c->cap;
	st->batch = c->batch;
	st->nr_cpus = c->nr_cpus;
	st->index = c->index;
	st->drain_fence = c->fence;
	pthread_mutex_lock(&c->lock);
	cached = cl__objcache_cached(c);
	st->nr_objects = c->nr_objects;
	st->nr_slabs = c->nr_slabs;
	st->nr_depot = c->nr_depot;
	st->nr_refills = c->nr_refills;
	st->nr_spills = c->nr_spills;
	st->nr_direct = c->nr_direct;
	st->nr_drains = c->nr_drains;
	st->nr_drained = c->nr_drained;
	st->nr_bad_frees = c->nr_bad_frees;
	pthread_mutex_unlock(&c->lock);
	st->nr_cached = cached;
	st->nr_out = st->nr_objects >= st->nr_depot + cached ? st->nr_objects - st->nr_depot - cached
							      : 0;
	return 0;
}
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_LIFECYCLE_H */
