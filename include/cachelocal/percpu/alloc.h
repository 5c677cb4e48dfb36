/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/alloc.h - allocating and freeing an object on every CPU.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_ALLOC_H
#define CACHELOCAL_PERCPU_ALLOC_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "../compiler.h"
#include "../sys.h"
#include "ranges.h"
#include "residency.h"
#include "robust.h"

CL_BEGIN_DECLS

CL_INLINE void *cl_percpu_alloc(struct cl_percpu_pool *pool, size_t size, size_t align)
{
	struct cl__percpu_range *r = NULL;
	size_t off = (size_t)-1, at = 0, i;
	void *ret;

	if (!pool || size == 0 || size > pool->stride || !cl__percpu_is_pow2(align) ||
	    align > pool->stride) {
		errno = EINVAL;
		return NULL;
	}
	size = cl__percpu_align_up(size, CL_PERCPU_MIN_ALIGN);
	if (align < CL_PERCPU_MIN_ALIGN)
		align = CL_PERCPU_MIN_ALIGN;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->nr_ranges; i++) {
		r = &pool->ranges[i];
		if (pool->stride - r->used < size)
			continue;
		off = cl__percpu_fit(pool, r, size, align, &at);
		if (off != (size_t)-1)
			break;
	}
	if (off == (size_t)-1) {
		long idx = cl__percpu_add_range(pool);

		if (idx < 0) {
			pthread_mutex_unlock(&pool->lock);
			errno = ENOMEM;
			return NULL;
		}
		r = &pool->ranges[idx];
		off = 0;
		at = 0;
	}
	if (r->nr_objs == r->cap_objs) {
		size_t cap = r->cap_objs ? r->cap_objs * 2 : 16;
		struct cl__percpu_obj *no = (struct cl__percpu_obj *)realloc(r->objs, cap * sizeof(*no));

		if (!no) {
			pthread_mutex_unlock(&pool->lock);
			errno = ENOMEM;
			return NULL;
		}
		r->objs = no;
		r->cap_objs = cap;
	}
	memmove(&r->objs[at + 1], &r->objs[at], (r->nr_objs - at) * sizeof(r->objs[0]));
	r->objs[at].off = off;
	r->objs[at].size = size;
	r->nr_objs++;
	r->used += size;
	if (off + size > r->tail)
		r->tail = off + size;
	/* Bytes below the high-water mark may hold old data or poison: clear them. */
	if (off < r->hwm) {
		size_t len = (off + size < r->hwm ? off + size : r->hwm) - off;
		size_t bad = cl__percpu_fill(pool, r, off, len, 0, (pool->flags & CL_PERCPU_ROBUST) != 0);

		if (bad)
			cl__percpu_report_damaged(pool, r->base + off, size, bad);
	}
	if (off + size > r->hwm)
		r->hwm = off + size;
	pool->stats.nr_live++;
	pool->stats.bytes_live += size;
	pool->stats.nr_allocs++;
	/* r points into pool->ranges, which another allocator may realloc once
	 * the lock is dropped: compute the result while holding it. */
	ret = r->base + off;
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

CL_INLINE int cl_percpu_free(struct cl_percpu_pool *pool, void *p)
{
	struct cl__percpu_range *r;
	size_t off, size, gap_lo, gap_hi, lo, hi;
	const size_t pg = pool ? pool->page_size : 1;
	long idx = -1;

	if (!pool) {
		errno = EINVAL;
		return -1;
	}
	if (!p)
		return 0;
	pthread_mutex_lock(&pool->lock);
	r = cl__percpu_find_range(pool, p);
	if (r)
		idx = cl__percpu_find_obj(r, (size_t)((char *)p - r->base));
	if (idx < 0) {
		pool->stats.nr_bad_frees++;
		if (pool->flags & CL_PERCPU_ROBUST)
			cl__percpu_report_bad_free(pool, r, p);
		pthread_mutex_unlock(&pool->lock);
		errno = EINVAL;
		return -1;
	}
	off = r->objs[idx].off;
	size = r->objs[idx].size;
	gap_lo = idx > 0 ? r->objs[idx - 1].off + r->objs[idx - 1].size : 0;
	gap_hi = (size_t)idx + 1 < r->nr_objs ? r->objs[idx + 1].off : pool->stride;
	memmove(&r->objs[idx], &r->objs[idx + 1], (r->nr_objs - (size_t)idx - 1) * sizeof(r->objs[0]));
	r->nr_objs--;
	r->used -= size;
	if (off + size == r->tail)
		r->tail = r->nr_objs ? r->objs[r->nr_objs - 1].off + r->objs[r->nr_objs - 1].size : 0;
	pool->stats.nr_live--;
	pool->stats.bytes_live -= size;
	pool->stats.nr_frees++;
	if (r->nr_objs == 0) {
		/* Empty range: drop every page of every CPU in one call. The
		 * high-water mark stays: a write after this free repopulates a
		 * page, and the next allocation below the mark must clear it (and
		 * report it in robust mode), which only costs the populated pages. */
		madvise(r->base, (size_t)pool->nr_cpus * pool->stride, CL__MADV_DONTNEED);
		pthread_mutex_unlock(&pool->lock);
		return 0;
	}
	/* Whole pages of the object that no live object shares: back to the kernel. */
	lo = cl__percpu_align_up(gap_lo, pg);
	if (lo < (off & ~(pg - 1)))
		lo = off & ~(pg - 1);
	hi = gap_hi & ~(pg - 1);
	if (hi > cl__percpu_align_up(off + size, pg))
		hi = cl__percpu_align_up(off + size, pg);
	if (lo < hi) {
		for (unsigned cpu = 0; cpu < pool->nr_cpus; cpu++)
			madvise(r->base + (size_t)cpu * pool->stride + lo, hi - lo, CL__MADV_DONTNEED);
	} else {
		lo = hi = off + size; /* nothing released */
	}
	if (pool->flags & CL_PERCPU_ROBUST)
		cl__percpu_poison(pool, r, off, size, lo, hi);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_ALLOC_H */
