/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/counter_cid.h - counters indexed by the cids of a cid.h domain.
 *
 * The compact form of counter.h for big machines: a thread that holds a cid
 * of a domain (cl_cid_acquire()) is the only writer of that cid's copy, so
 * its add is a plain load and store, no atomic and no rseq. Copies come from
 * the counters' pool (cl_counter_pool()): copy n is the pool copy of index
 * n, and only the copies of cids actually used are ever touched, so a
 * process with 8 users on a 384-CPU machine touches 8 copies (plus the
 * shared word) instead of up to 384.
 *
 *	struct cl_counter_cid c;
 *	cl_counter_cid_init(&c, domain, 0);        // slots: the domain's bound
 *	int cid = cl_cid_acquire(domain);
 *	cl_counter_cid_add(&c, cid, 1);            // holder of cid: plain update
 *	cl_cid_release(domain, cid);
 *	cl_counter_cid_add_any(&c, 1);             // acquire, add, release
 *	cl_counter_cid_read(&c);                   // exact when quiescent
 *	cl_counter_cid_destroy(&c);
 *
 * Reads have the semantics of cl_counter_read() (counter.h).
 */
#ifndef CACHELOCAL_COUNTER_CID_H
#define CACHELOCAL_COUNTER_CID_H

#include <errno.h>
#include <stdint.h>

#include "cid.h"
#include "compiler.h"
#include "counter.h"
#include "percpu.h"

CL_BEGIN_DECLS

/* A cid-indexed counter. Fields are private; use the functions. */
struct cl_counter_cid {
	int64_t *slot;                /* copy 0, in cl_counter_pool(); NULL: no storage */
	unsigned nr_slots;            /* cids below it have a copy */
	struct cl_cid_domain *domain; /* the domain whose cids index it */
	/* adds of cids >= nr_slots or without a cid (atomic; 8-aligned for i386's 64-bit atomics) */
	int64_t shared CL_ALIGNED(8);
};

/**
 * cl_counter_cid_init() - set up a counter indexed by the cids of @d.
 * @c: the counter (uninitialised storage).
 * @d: a cid domain (cid.h); it must outlive the counter.
 * @nr_slots: cids below it get their own copy; 0 means
 *	cl_cid_domain_bound(@d) now (at least 1). At most the pool's CPUs
 *	(larger values are reduced to it). Cids at or above it share the atomic
 *	shared word.
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c or @d) or ENOMEM.
 */
CL_INLINE int cl_counter_cid_init(struct cl_counter_cid *c, struct cl_cid_domain *d,
				  unsigned nr_slots)
{
	struct cl_percpu_pool *pool;

	if (c == NULL || d == NULL) {
		errno = EINVAL;
		return -1;
	}
	c->slot = NULL;
	c->nr_slots = 0;
	c->domain = d;
	c->shared = 0;
	pool = cl_counter_pool();
	if (pool == NULL)
		return -1;
	if (nr_slots == 0)
		nr_slots = cl_cid_domain_bound(d);
	if (nr_slots == 0)
		nr_slots = 1;
	if (nr_slots > cl_percpu_pool_nr_cpus(pool))
		nr_slots = cl_percpu_pool_nr_cpus(pool);
	c->slot = (int64_t *)cl_percpu_alloc(pool, sizeof(int64_t), sizeof(int64_t));
	if (c->slot == NULL)
		return -1;
	c->nr_slots = nr_slots;
	return 0;
}

/**
 * cl_counter_cid_add() - add @v as the holder of cid @cid.
 * @c: an initialised counter.
 * @cid: a cid of the counter's domain that the caller holds (from
 *	cl_cid_acquire(), not yet released).
 * @v: the addend.
 *
 * The holder is the only writer of copy @cid (cid uniqueness), so this is a
 * plain load and store; the domain's release and acquire order it before
 * the next holder's. A @cid at or above the slot count, or negative (a
 * failed cl_cid_acquire() passed on), goes to the shared word atomically:
 * the add is never lost.
 *
 * Context: the thread holding @cid (or the one it handed the cid to);
 * concurrently with reads and with other holders' adds.
 */
CL_INLINE void cl_counter_cid_add(struct cl_counter_cid *c, int cid, int64_t v)
{
	int64_t *p;

	if (CL__BAD_ARG(c == NULL) || CL_UNLIKELY(c->slot == NULL))
		return;
	if (CL_UNLIKELY(cid < 0 || (unsigned)cid >= c->nr_slots)) {
		CL_ATOMIC_FETCH_ADD(&c->shared, v, CL_RELAXED);
		return;
	}
	p = cl_percpu_ptr(c->slot, cid);
	CL_ATOMIC_STORE(p, (int64_t)((uint64_t)CL_ATOMIC_LOAD(p, CL_RELAXED) + (uint64_t)v),
			CL_RELAXED);
}

/**
 * cl_counter_cid_add_any() - add @v from any thread: hold a cid for one add.
 * @c: an initialised counter.
 * @v: the addend.
 *
 * Acquires a cid of the domain, cl_counter_cid_add(), releases it (two
 * atomic operations per add). A thread that cannot get a cid (not a user of
 * the domain, or one holder too many) adds to the shared word.
 *
 * Context: any thread, not a signal handler (cl_cid_acquire() may take the
 * domain lock and sleep). errno is not changed (EINVAL for a NULL @c).
 */
CL_INLINE void cl_counter_cid_add_any(struct cl_counter_cid *c, int64_t v)
{
	int saved;
	int cid;

	if (CL__BAD_ARG(c == NULL))
		return;
	saved = errno;
	if (CL_UNLIKELY(c->slot == NULL))
		return;
	cid = cl_cid_acquire(c->domain);
	cl_counter_cid_add(c, cid, v); /* cid < 0: the shared word */
	if (cid >= 0)
		cl_cid_release(c->domain, cid);
	errno = saved;
}

/**
 * cl_counter_cid_read() - the sum of all copies and the shared word.
 * @c: an initialised counter.
 *
 * Context: any thread, concurrently with adds.
 * Return: the sum (0 for a counter without storage; 0 with errno EINVAL for
 * a NULL @c).
 */
CL_INLINE int64_t cl_counter_cid_read(const struct cl_counter_cid *c)
{
	uint64_t sum;

	if (CL__BAD_ARG(c == NULL) || c->slot == NULL)
		return 0;
	sum = (uint64_t)CL_ATOMIC_LOAD(&c->shared, CL_RELAXED);
	for (unsigned i = 0; i < c->nr_slots; i++)
		sum += (uint64_t)CL_ATOMIC_LOAD(cl_percpu_ptr(c->slot, i), CL_RELAXED);
	return (int64_t)sum;
}

/**
 * cl_counter_cid_destroy() - give the copies back to the pool.
 * @c: a counter set up by cl_counter_cid_init() (or zeroed, or destroyed).
 *
 * Context: no add or read may run concurrently or afterwards.
 */
CL_INLINE void cl_counter_cid_destroy(struct cl_counter_cid *c)
{
	if (c == NULL)
		return;
	if (c->slot != NULL)
		(void)cl_percpu_free(cl_counter_pool(), c->slot);
	c->slot = NULL;
	c->nr_slots = 0;
	c->domain = NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_COUNTER_CID_H */
