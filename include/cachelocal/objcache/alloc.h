/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache/alloc.h - the fast path (one buffer pop or push on this CPU's
 * cache) and its slow paths (refill from and spill to the depot).
 *
 * Part of objcache.h, the header to include: the API, its kernel-doc, the
 * types and the synchronization table are there. The cl__ names here are
 * not API. Included alone, this file includes objcache.h (which includes
 * every piece in order).
 */
#include "../objcache.h"

#ifndef CACHELOCAL_OBJCACHE_ALLOC_H
#define CACHELOCAL_OBJCACHE_ALLOC_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "../config.h"
#include "../percpu_ops.h"
#include "depot.h"

CL_BEGIN_DECLS

/* ---- alloc / free ---- */

/*
 * The two fast-path operations, inlined once per index kind (the kind a
 * constant in each), with what create guarantees told to the compiler so
 * the per-CPU path's argument checks (NULL count or slots, zero stride,
 * capacity <= 0) cost nothing here:
 *  - the kind test is the load of the count itself: cpu_count is the count
 *    of a cache indexed by CPU number and NULL otherwise;
 *  - the slots follow the count in the pool object (no second pointer);
 *  - the pool has the default stride (create refuses another): a constant,
 *    no load, and the section multiplies by an immediate;
 *  - the count is not NULL and the capacity is positive.
 * The per-CPU path keeps its own checks for every other caller.
 */
CL_ALWAYS_INLINE int cl__objcache_pop(struct cl_objcache *c, void **out)
{
	intptr_t *cnt = c->cpu_count;

	if (CL_LIKELY(cnt != NULL))
		return cl_percpu_buf_pop(CL_RSEQ_INDEX_CPU_ID, cnt, CL_PERCPU_STRIDE,
					 (void **)(void *)(cnt + 1), out);
	cnt = c->count;
	if (cnt == NULL) /* set by create */
		__builtin_unreachable();
	return cl_percpu_buf_pop(CL_RSEQ_INDEX_MM_CID, cnt, CL_PERCPU_STRIDE,
				 (void **)(void *)(cnt + 1), out);
}

CL_ALWAYS_INLINE int cl__objcache_push(struct cl_objcache *c, void *obj)
{
	intptr_t *cnt = c->cpu_count, cap = c->cap;

	if (cap <= 0) /* create: at least one slot */
		__builtin_unreachable();
	if (CL_LIKELY(cnt != NULL))
		return cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, cnt, CL_PERCPU_STRIDE,
					  (void **)(void *)(cnt + 1), cap, obj, CL_RSEQ_MO_RELAXED);
	cnt = c->count;
	if (cnt == NULL) /* set by create */
		__builtin_unreachable();
	return cl_percpu_buf_push(CL_RSEQ_INDEX_MM_CID, cnt, CL_PERCPU_STRIDE,
				  (void **)(void *)(cnt + 1), cap, obj, CL_RSEQ_MO_RELAXED);
}

/*
 * Slow alloc: @r is CL_PERCPU_CMPFAIL (this CPU's cache was empty or being
 * drained: take a batch, keep one, cache the rest) or -1 (no per-CPU path
 * for this thread: take one).
 */
static CL_NOINLINE CL_UNUSED void *cl__objcache_alloc_slow(struct cl_objcache *c, int r)
{
	void *objs[CL__OBJCACHE_MOVE_MAX + 1], *obj;
	size_t n, k;

	pthread_mutex_lock(&c->lock);
	CL_INJECT(50); /* the depot's mutex held (a fork() waits for it) */
	if (c->nr_depot == 0 && cl__objcache_grow(c) != 0) {
		pthread_mutex_unlock(&c->lock);
		errno = ENOMEM;
		return NULL;
	}
	n = r == CL_PERCPU_CMPFAIL ? (size_t)c->batch + 1 : 1;
	if (n > c->nr_depot)
		n = c->nr_depot;
	cl__objcache_withdraw(c, objs, n);
	if (r == CL_PERCPU_CMPFAIL)
		c->nr_refills++;
	else
		c->nr_direct++;
	pthread_mutex_unlock(&c->lock);
	obj = objs[--n];
	for (k = 0; k < n; k++)
		if (cl__objcache_push(c, objs[k]) < 0)
			break;
	if (k < n) { /* the cache filled up meanwhile (or is being drained) */
		pthread_mutex_lock(&c->lock);
		(void)cl__objcache_deposit(c, objs + k, n - k);
		pthread_mutex_unlock(&c->lock);
	}
	return obj;
}

CL_ALWAYS_INLINE void *cl_objcache_alloc(struct cl_objcache *c)
{
	void *obj; /* written by a pop that succeeds; read only then */
	int r;

	if (CL_UNLIKELY(c == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	r = cl__objcache_pop(c, &obj);
	if (CL_LIKELY(r >= 0)) {
		if (obj == NULL) /* a cache never holds NULL (free() returns before) */
			__builtin_unreachable();
		return obj;
	}
	return cl__objcache_alloc_slow(c, r);
}

/*
 * Slow free: @r is CL_PERCPU_CMPFAIL (this CPU's cache was full or being
 * drained: move a batch out of it to the depot, then cache @obj) or -1 (no
 * per-CPU path: @obj to the depot). @obj is checked by the depot after the
 * batch went in, so a copy of it that was in the cache is found too.
 * Returns 0, or -1 (EINVAL) when the depot refused @obj.
 */
static CL_NOINLINE CL_UNUSED int cl__objcache_free_slow(struct cl_objcache *c, void *obj, int r)
{
	void *objs[CL__OBJCACHE_MOVE_MAX];
	size_t n = 0, k;

	if (r == CL_PERCPU_CMPFAIL)
		while (n < c->batch && cl__objcache_pop(c, &objs[n]) >= 0)
			n++;
	pthread_mutex_lock(&c->lock);
	(void)cl__objcache_deposit(c, objs, n);
	k = cl__objcache_number(c, obj);
	if (k == SIZE_MAX || cl__objcache_bit(c->in_depot, k)) {
		c->nr_bad_frees++;
		pthread_mutex_unlock(&c->lock);
		errno = EINVAL;
		return -1;
	}
	/* Keep the object just freed (likely in this CPU's cache) local. */
	if (r != CL_PERCPU_CMPFAIL || n == 0 || cl__objcache_push(c, obj) < 0)
		(void)cl__objcache_deposit(c, &obj, 1);
	if (r == CL_PERCPU_CMPFAIL)
		c->nr_spills++;
	else
		c->nr_direct++;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

CL_ALWAYS_INLINE int cl_objcache_free(struct cl_objcache *c, void *obj)
{
	int r;

	if (CL_UNLIKELY(c == NULL || obj == NULL)) {
		if (obj == NULL)
			return 0;
		errno = EINVAL;
		return -1;
	}
	r = cl__objcache_push(c, obj);
	if (CL_LIKELY(r >= 0))
		return 0;
	return cl__objcache_free_slow(c, obj, r);
}

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_ALLOC_H */
