/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache/drain.h - taking a CPU's cache away from it while that CPU runs:
 * the RSEQ fence, the visit, the fallback's lock.
 *
 * Part of objcache.h, the header to include: the API, its kernel-doc, the
 * types and the synchronization table are there. The cl__ names here are
 * not API. Included alone, this file includes objcache.h (which includes
 * every piece in order).
 */
#include "../objcache.h"

#ifndef CACHELOCAL_OBJCACHE_DRAIN_H
#define CACHELOCAL_OBJCACHE_DRAIN_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "../config.h"
#include "../fence.h"
#include "../percpu_ops.h"
#include "../sys.h"
#include "../topology.h"
#include "depot.h"

CL_BEGIN_DECLS

/* ---- process-wide: the RSEQ fence (fence.h) ---- */

/* 1 when drains can use the RSEQ fence (registering on first use), else -1. */
CL_INLINE int cl__objcache_memb_ready(enum cl_rseq_index idx)
{
#ifdef CL_OBJCACHE_NO_MEMBARRIER
	(void)idx;
	return -1;
#else
	return cl_percpu_fence_method(idx) == CL_PERCPU_FENCE_MEMBARRIER ? 1 : -1;
#endif
}

/* ---- drain ---- */

/*
 * Undo the mark: store back the count it replaced, unless a section that
 * read that count before the mark committed since (then the count is valid).
 * Nothing else was changed, so sections still in flight, which compare
 * against the old count, find the copy as they left it.
 */
CL_INLINE void cl__objcache_give_back(intptr_t *cnt, intptr_t n)
{
	intptr_t owned = CL__OBJCACHE_OWNED;

	CL_ATOMIC_CAS(cnt, &owned, n, CL_RELEASE, CL_RELAXED);
}

/* Abort every critical section running on @cpu (all CPUs for mm_cid). */
CL_INLINE int cl__objcache_fence(const struct cl_objcache *c, unsigned cpu)
{
	if (c->fence == CL_OBJCACHE_DRAIN_MIGRATE)
		return cl_percpu_fence_visit((int)cpu);
	return cl_percpu_fence((enum cl_rseq_index)c->index, (int)cpu);
}

CL_INLINE int cl_objcache_drain_cpu(struct cl_objcache *c, int cpu)
{
	enum cl_rseq_index idx;
	intptr_t *cnt, n, owned = CL__OBJCACHE_OWNED;
	void **its;

	if (c == NULL || cpu < 0 || (unsigned)cpu >= c->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	if (c->fence == CL_OBJCACHE_DRAIN_NONE) {
		errno = ENOSYS;
		return -1;
	}
	idx = c->index;
	cnt = cl__objcache_count(c, (unsigned)cpu);
	its = cl__objcache_items(c, (unsigned)cpu);
	pthread_mutex_lock(&c->drain_lock);
	CL_INJECT(51); /* the drain lock held (a fork() waits for it) */
	if (c->fence == CL_OBJCACHE_DRAIN_LOCK) {
		/* Fallback operations take the count's striped lock: so does this. */
		do {
			n = CL_ATOMIC_LOAD(cnt, CL_RELAXED);
		} while (n > 0 && cl_rseq_cmpstore(idx, cnt, n, owned, cpu) != CL_RSEQ_OK);
	} else {
		n = CL_ATOMIC_LOAD(cnt, CL_RELAXED) > 0 ? CL_ATOMIC_XCHG(cnt, owned, CL_SEQ_CST) : 0;
		while (n > 0) {
			if (cl__objcache_fence(c, (unsigned)cpu) != 0) {
				int e = errno;

				cl__objcache_give_back(cnt, n);
				pthread_mutex_unlock(&c->drain_lock);
				errno = e;
				return -1;
			}
			if (CL_ATOMIC_LOAD(cnt, CL_ACQUIRE) == owned)
				break;
			/* A section committed over the mark before the fence: again. */
			n = CL_ATOMIC_XCHG(cnt, owned, CL_SEQ_CST);
		}
		if (n == 0) /* emptied before the mark: give back 0 */
			cl__objcache_give_back(cnt, 0);
		if (n < 0) /* cannot happen: drains are serialised */
			n = 0;
	}
	if (n > 0) {
		pthread_mutex_lock(&c->lock);
		/* Bad frees that sat in the cache are dropped (and counted). */
		n -= (intptr_t)cl__objcache_deposit(c, its, (size_t)n);
		c->nr_drains++;
		c->nr_drained += (size_t)n;
		pthread_mutex_unlock(&c->lock);
		if (c->fence == CL_OBJCACHE_DRAIN_LOCK)
			(void)cl_rseq_cmpstore(idx, cnt, owned, 0, cpu);
		else
			CL_ATOMIC_STORE(cnt, 0, CL_RELEASE);
	} else {
		pthread_mutex_lock(&c->lock);
		c->nr_drains++;
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->drain_lock);
	return (int)n;
}

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_DRAIN_H */
