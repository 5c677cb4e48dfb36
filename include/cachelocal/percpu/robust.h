/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/robust.h - CL_PERCPU_ROBUST: poison on free, reports of writes after
 * free, rejected frees and leaks.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_ROBUST_H
#define CACHELOCAL_PERCPU_ROBUST_H

#include <stdio.h>

#include "../compiler.h"
#include "ranges.h"
#include "residency.h"

CL_BEGIN_DECLS

/* Robust mode: an object reused at @p had its poison overwritten on @bad CPUs. */
CL_INLINE void cl__percpu_report_damaged(struct cl_percpu_pool *pool, const char *p, size_t size,
					 size_t bad)
{
	pool->stats.nr_poison_damaged++;
	fprintf(stderr, "cachelocal: percpu pool %p: object %p (%zu bytes) was written after free on %zu CPU(s)\n",
		(void *)pool, (const void *)p, size, bad);
}

/* Robust mode: why a free of @p was rejected (@r: the range holding p, or NULL). */
CL_INLINE void cl__percpu_report_bad_free(const struct cl_percpu_pool *pool,
					  const struct cl__percpu_range *r, const void *p)
{
	fprintf(stderr, "cachelocal: percpu pool %p: free of %p rejected: %s\n", (const void *)pool, p,
		r ? "not a live object (double free or interior pointer)"
		  : cl__percpu_in_pool(pool, p) ? "another CPU's copy (pass CPU 0's address)"
						: "not from this pool");
}

/*
 * Robust mode: poison the freed object [off, off + size) of @r except the
 * pages [lo, hi) just given back to the kernel (they read as zero).
 */
CL_INLINE void cl__percpu_poison(struct cl_percpu_pool *pool, const struct cl__percpu_range *r,
				 size_t off, size_t size, size_t lo, size_t hi)
{
	if (off < lo)
		cl__percpu_fill(pool, r, off, (lo < off + size ? lo : off + size) - off, CL_PERCPU_POISON, 0);
	if (hi < off + size) {
		size_t from = hi > off ? hi : off;

		cl__percpu_fill(pool, r, from, off + size - from, CL_PERCPU_POISON, 0);
	}
}

CL_INLINE size_t cl_percpu_pool_report_leaks(struct cl_percpu_pool *pool, FILE *out)
{
	size_t n = 0;

	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	pthread_mutex_lock(&pool->lock);
	for (size_t i = 0; i < pool->nr_ranges; i++) {
		const struct cl__percpu_range *r = &pool->ranges[i];

		for (size_t j = 0; j < r->nr_objs; j++, n++)
			if (out && n < 32)
				fprintf(out, "cachelocal: percpu pool %p: leaked object %p, %zu bytes per CPU\n",
					(void *)pool, (void *)(r->base + r->objs[j].off), r->objs[j].size);
	}
	if (out && n)
		fprintf(out, "cachelocal: percpu pool %p: %zu leaked object(s), %zu bytes per CPU\n",
			(void *)pool, n, pool->stats.bytes_live);
	pthread_mutex_unlock(&pool->lock);
	return n;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_ROBUST_H */
