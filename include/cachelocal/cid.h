/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cid.h - userspace concurrency-ID (cid) domains with cache-local
 * reuse (technique T3 in README.md).
 *
 * A domain is the set of threads that share cid-indexed data (an array with
 * one slot per cid). A thread that joins becomes a "user". While it works on
 * the data it holds a cid: cl_cid_acquire() hands out a cid that no other
 * holder has, cl_cid_release() gives it back. A cid is dense (below the
 * bound), so cid-indexed arrays need min(allowed CPUs, users) slots, not one
 * per possible CPU or per thread.
 *
 * The allocation policy is implemented here, in userspace, so it behaves the
 * same on every kernel: the kernel's own mm_cid (rseq.h, cl_mm_cid()) went
 * from "lowest free" (6.3) to per-CPU recent-cid reuse (6.13, compaction
 * 6.14) to thread-sticky cids (6.19). Policies (docs/ids.md has pseudo-code):
 *
 *   CL_CID_NAIVE   the lowest free cid (mm_cid before 6.13).
 *   CL_CID_RECENT  1. the cid this CPU used most recently, if free and below
 *                     the bound;
 *                  2. spread: grow max_nr_cid by CAS up to the bound and take
 *                     the cid just added, so each CPU ends up with its own;
 *                  3. the lowest free cid below the bound.
 *   CL_CID_LLC     as RECENT, but when this CPU's recent cid is taken (or is
 *                  no longer below the bound), first a free cid below the
 *                  bound last used on a CPU of the same last-level cache.
 *
 * When all of 1-3 fail for CL_CID_SPIN_ROUNDS rounds (every cid below the
 * bound is held, e.g. by preempted holders; the rounds after the second
 * yield the CPU to them), or at once when the domain already has as many
 * holders as users (no release is owed to the caller: EBUSY, decided under
 * the lock), the caller moves to the fallback lock and sleeps on a condition
 * variable until a release (or a join, leave or refresh) lets it in: no
 * livelock, no busy waiting. Release has no fence: the
 * sleeping side pays with membarrier() (see cl__cid_acquire_locked()).
 *
 * bound = min(number of CPUs in the grow-only union of the users' allowed
 * CPUs, number of users): cl_cid_domain_bound().
 *
 * Invariants (tests/unit/test_cid.c checks each one):
 *  - Uniqueness: a cid is held by at most one caller at a time (each cid owns
 *    one atomic word; it is taken by CAS free -> held).
 *  - Below the bound at acquire: every cid handed out is < the bound read at
 *    that acquire. When the bound shrinks (leave), holders keep their cids,
 *    even those >= the new bound, until they release them; new acquires only
 *    get cids below the new bound and wait if those are all held.
 *  - No failure while holders <= users: acquire may wait, but only fails
 *    (-1, EBUSY) when the domain already has >= users holders, i.e. the caller
 *    would be one holder too many (a thread acquiring twice, a thread that
 *    never joined, a leave before the release, or no users at all).
 *  - Forward progress: every lock-free step is a bounded number of CAS
 *    attempts; after CL_CID_SPIN_ROUNDS rounds the caller takes the fallback
 *    lock and sleeps until a cid is released.
 *  - No shared hot line: each cid's word (with that cid's statistics) and each
 *    CPU's recent cid live on their own CL_FALSE_SHARING_SIZE unit, so a CPU
 *    reusing its recent cid writes no line that another CPU writes.
 *
 * Users are a count: join/leave need not run in the same thread, and a cid
 * may be released by another thread than the one that acquired it (an M:N
 * runtime may move a task). A thread that exits without leaving stays
 * counted as a user, and a cid it held stays held, until another thread calls
 * cl_cid_release()/cl_cid_domain_leave() for it; nothing is reclaimed behind
 * the program's back.
 *
 * fork(): in the child every domain starts clean, as if just created (no
 * users, no allowed CPUs, no holders, statistics zero; policy and topology
 * kept): the child joins again. Implemented with the library's one fork
 * registry (internal/fork.h: pthread_atfork() handlers registered once per
 * process, shared with the per-CPU pools); the handlers hold every domain's
 * lock across fork(), so a domain is never copied in the middle of a
 * slow-path update. Do not fork from a
 * pthread_atfork handler of your own that runs while a cid call is active,
 * and do not dlclose() the object whose copy of these handlers registered
 * first.
 *
 * Synchronization:
 *
 *   call                       may run concurrently with
 *   cl_cid_acquire/_on         everything except destroy
 *   cl_cid_release             everything except destroy
 *   join/join_cpus/leave/      everything except destroy (serialized by the
 *   refresh_allowed            domain lock)
 *   cl_cid_domain_bound/stats  everything except destroy (a racy snapshot)
 *   cl_cid_domain_destroy      nothing on that domain
 */
#ifndef CACHELOCAL_CID_H
#define CACHELOCAL_CID_H

/*
 * The implementation is split by job under cachelocal/cid/ (each piece
 * compiles alone; none is API on its own):
 *   cid/types.h   enum cl_cid_policy, struct cl_cid_stats, the domain layout
 *   cid/policy.h  the policy engine: lock-free steps and their counters
 *   cid/wait.h    spin rounds, the fallback lock, sleep and wake-up
 *   cid/fork.h    reset to "just created", in the child of fork()
 * This file: the public API (create/destroy, users, acquire/release, stats).
 */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cid/fork.h"
#include "cid/policy.h"
#include "cid/types.h"
#include "cid/wait.h"
#include "compiler.h"
#include "config.h"
#include "internal/bitmap.h"
#include "internal/fork.h"
#include "internal/membarrier.h"
#include "rseq.h"
#include "topology.h"

CL_BEGIN_DECLS

/* ---- users and the allowed-CPU union (private) ---- */

/* OR mask into d->allowed and recount; caller holds d->lock. Returns how many
 * CPUs < d->nr the mask contained. */
CL_INLINE unsigned cl__cid_merge_allowed(struct cl_cid_domain *d, const unsigned long *mask,
					 unsigned nbits)
{
	unsigned n = cl__bitmap_or(d->allowed, mask, nbits < d->nr ? nbits : d->nr);

	CL_ATOMIC_STORE(&d->nr_allowed, cl__bitmap_weight(d->allowed, d->nr), CL_SEQ_CST);
	return n;
}

/* This machine's topology, out of line: keeps the sysfs parser out of
 * cl_cid_domain_create()'s inlining context. */
static CL_UNUSED CL_NOINLINE CL_COLD int cl__cid_load_topology(struct cl_topology *t)
{
	return cl_topology_load(t, NULL);
}

/* ---- public API ---- */

/**
 * cl_cid_policy_name() - printable name of a policy.
 * @policy: a policy.
 *
 * Context: any.
 * Return: "naive", "recent", "llc", or "invalid".
 */
CL_INLINE const char *cl_cid_policy_name(enum cl_cid_policy policy)
{
	switch (policy) {
	case CL_CID_NAIVE:
		return "naive";
	case CL_CID_RECENT:
		return "recent";
	case CL_CID_LLC:
		return "llc";
	}
	return "invalid";
}

/**
 * cl_cid_domain_create() - create an empty domain (no users).
 * @policy: CL_CID_NAIVE, CL_CID_RECENT or CL_CID_LLC.
 * @topo: the CPU topology for the LLC policy (copied: it may be freed after
 *        the call); NULL: this machine's, loaded from /sys (only for
 *        CL_CID_LLC; the other policies do not need it).
 *
 * The cid space is 0 .. max(cl_nr_possible_cpus(), topo->nr_cpu_ids) - 1,
 * capped at CL_MAX_CPUS; so is the CPU-id range of cl_cid_acquire_on().
 *
 * Context: any thread; allocates, may read sysfs.
 * Return: the domain, or NULL with errno EINVAL (bad policy), ENOMEM, or the
 * error of cl_topology_load().
 */
CL_INLINE struct cl_cid_domain *cl_cid_domain_create(enum cl_cid_policy policy,
						     const struct cl_topology *topo)
{
	struct cl_topology own;
	const struct cl_topology *t = topo;
	struct cl_cid_domain *d;
	unsigned nr, i;
	size_t dsize;

	if (policy != CL_CID_NAIVE && policy != CL_CID_RECENT && policy != CL_CID_LLC) {
		errno = EINVAL;
		return NULL;
	}
	if (!t && policy == CL_CID_LLC) {
		if (cl__cid_load_topology(&own) != 0)
			return NULL;
		t = &own;
	}
	nr = cl_nr_possible_cpus();
	if (t && t->nr_cpu_ids > nr)
		nr = t->nr_cpu_ids;
	if (nr < 1)
		nr = 1;
	if (nr > CL_MAX_CPUS)
		nr = CL_MAX_CPUS;

	dsize = (sizeof(*d) + CL_FALSE_SHARING_SIZE - 1) / CL_FALSE_SHARING_SIZE *
		CL_FALSE_SHARING_SIZE;
	d = (struct cl_cid_domain *)aligned_alloc(CL_FALSE_SHARING_SIZE, dsize);
	if (!d)
		goto nomem;
	memset((void *)d, 0, sizeof(*d));
	d->nr = nr;
	d->policy = (int)policy;
	d->slot = (struct cl__cid_slot *)aligned_alloc(CL_FALSE_SHARING_SIZE,
						       (size_t)nr * sizeof(*d->slot));
	d->cpu = (struct cl__cid_cpu *)aligned_alloc(CL_FALSE_SHARING_SIZE,
						     (size_t)nr * sizeof(*d->cpu));
	d->llc = (int *)malloc((size_t)nr * sizeof(*d->llc));
	d->allowed = cl__bitmap_alloc(nr);
	if (!d->slot || !d->cpu || !d->llc || !d->allowed)
		goto nomem;
	for (i = 0; i < nr; i++)
		d->llc[i] = t && i < t->nr_cpu_ids && t->cpu && t->cpu[i].possible ? t->cpu[i].llc
										 : -1;
	if (pthread_mutex_init(&d->lock, NULL) != 0)
		goto nomem;
	if (pthread_cond_init(&d->cond, NULL) != 0) {
		pthread_mutex_destroy(&d->lock);
		goto nomem;
	}
	cl__cid_domain_reset(d);
	if (t == &own)
		cl_topology_free(&own);
	d->strong_release = !cl__membarrier_ready();
	cl__fork_register(&d->fork_reg, &d->lock, cl__cid_fork_child);
	return d;

nomem:
	if (d) {
		free(d->slot);
		free(d->cpu);
		free(d->llc);
		free(d->allowed);
		free(d);
	}
	if (t == &own)
		cl_topology_free(&own);
	errno = ENOMEM;
	return NULL;
}

/**
 * cl_cid_domain_destroy() - free a domain.
 * @d: the domain, or NULL (no-op).
 *
 * Context: no other thread may use @d during or after the call; cids still
 * held are simply forgotten.
 */
CL_INLINE void cl_cid_domain_destroy(struct cl_cid_domain *d)
{
	if (!d)
		return;
	cl__fork_unregister(&d->fork_reg);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d->slot);
	free(d->cpu);
	free(d->llc);
	free(d->allowed);
	free(d);
}

/*
 * The one writer of users and the allowed union, under the domain lock:
 * merge mask (if not NULL) into the union, then add users_delta (+1 join,
 * -1 leave, 0 refresh) to the users, then wake sleeping acquirers (the
 * bound may have changed).
 */
CL_INLINE int cl__cid_update(struct cl_cid_domain *d, const unsigned long *mask, unsigned nbits,
			     int users_delta)
{
	int err = 0;

	pthread_mutex_lock(&d->lock);
	if (users_delta > 0 && d->users == UINT_MAX)
		err = EOVERFLOW;
	else if (users_delta < 0 && d->users == 0)
		err = EINVAL;
	else if (mask && cl__cid_merge_allowed(d, mask, nbits) == 0 && users_delta > 0)
		err = EINVAL;
	else if (users_delta)
		CL_ATOMIC_STORE(&d->users, d->users + (unsigned)users_delta, CL_SEQ_CST);
	cl__cid_kick_waiters(d);
	pthread_mutex_unlock(&d->lock);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* cl__cid_update() with the calling thread's allowed CPUs. */
CL_INLINE int cl__cid_update_self(struct cl_cid_domain *d, int users_delta)
{
	unsigned long *mask;
	unsigned nbits = 0;
	int r;

	if (!d) {
		errno = EINVAL;
		return -1;
	}
	mask = cl__bitmap_getaffinity(cl_nr_possible_cpus(), &nbits);
	if (!mask)
		return -1;
	r = cl__cid_update(d, mask, nbits, users_delta);
	free(mask);
	return r;
}

/**
 * cl_cid_domain_join_cpus() - add one user whose allowed CPUs are @mask.
 * @d: the domain.
 * @mask: a raw CPU bitmap (bit n of word n / bits-per-long = CPU n).
 * @nbits: bits in @mask.
 *
 * The lower-level form of cl_cid_domain_join(), for users that are not the
 * calling kernel thread (a task of an M:N runtime, a test with a fake
 * topology). The CPUs are OR-ed into the domain's grow-only allowed union;
 * CPUs >= the cid space are ignored.
 *
 * Context: any thread; takes the domain lock; wakes waiting acquirers.
 * Return: 0, or -1 with errno EINVAL (NULL @d or @mask, or no CPU of @mask
 * inside the cid space) or EOVERFLOW (UINT_MAX users).
 */
CL_INLINE int cl_cid_domain_join_cpus(struct cl_cid_domain *d, const unsigned long *mask,
				      unsigned nbits)
{
	if (!d || !mask) {
		errno = EINVAL;
		return -1;
	}
	return cl__cid_update(d, mask, nbits, 1);
}

/**
 * cl_cid_domain_join() - the calling thread becomes a user of @d.
 * @d: the domain.
 *
 * Adds one user and OR-s the thread's current allowed CPUs
 * (sched_getaffinity) into the domain's grow-only union. A thread that
 * joins twice counts twice.
 *
 * Context: any thread; takes the domain lock; wakes waiting acquirers.
 * Return: 0, or -1 with errno EINVAL (NULL @d), ENOMEM, or the error of
 * sched_getaffinity.
 */
CL_INLINE int cl_cid_domain_join(struct cl_cid_domain *d)
{
	return cl__cid_update_self(d, 1);
}

/**
 * cl_cid_domain_leave() - remove one user.
 * @d: the domain.
 *
 * Need not run in the thread that joined (users are a count). The allowed
 * union does not shrink (as the kernel's mm_cpus_allowed), the bound may:
 * holders keep their cids until they release them. Leave after releasing:
 * holders beyond the new number of users make further acquires fail with
 * EBUSY.
 *
 * Context: any thread; takes the domain lock; wakes waiting acquirers.
 * Return: 0, or -1 with errno EINVAL (NULL @d, or no users).
 */
CL_INLINE int cl_cid_domain_leave(struct cl_cid_domain *d)
{
	if (!d) {
		errno = EINVAL;
		return -1;
	}
	return cl__cid_update(d, NULL, 0, -1);
}

/**
 * cl_cid_domain_refresh_allowed() - OR the calling thread's allowed CPUs
 * into the domain's union (call after changing the thread's affinity).
 * @d: the domain.
 *
 * Context: any thread; takes the domain lock; wakes waiting acquirers.
 * Return: 0, or -1 with errno EINVAL (NULL @d), ENOMEM, or the error of
 * sched_getaffinity.
 */
CL_INLINE int cl_cid_domain_refresh_allowed(struct cl_cid_domain *d)
{
	return cl__cid_update_self(d, 0);
}

/**
 * cl_cid_domain_bound() - min(CPUs in the allowed union, users).
 * @d: the domain.
 *
 * Context: any thread; lock-free; a snapshot.
 * Return: the bound; 0 for NULL @d (errno EINVAL) or a domain without users.
 */
CL_INLINE unsigned cl_cid_domain_bound(const struct cl_cid_domain *d)
{
	if (!d) {
		errno = EINVAL;
		return 0;
	}
	return cl__cid_bound(d);
}

/**
 * cl_cid_acquire_on() - acquire a cid as if running on @cpu.
 * @d: the domain.
 * @cpu: the CPU whose recent cid (and LLC) to prefer, 0 .. cid space - 1.
 *
 * The lower-level form of cl_cid_acquire(), which passes cl_cpu_id(). Useful
 * when the caller already knows its CPU, and for tests that simulate other
 * CPUs and topologies.
 *
 * Context: any thread; lock-free unless every cid below the bound is held,
 * then it sleeps on the domain's fallback lock until one is released.
 * Return: a cid (>= 0, below the bound at the time of the call, held by no
 * one else), or -1 with errno EINVAL (NULL @d, @cpu out of range) or EBUSY
 * (the domain already has as many holders as users: see the top).
 */
CL_INLINE int cl_cid_acquire_on(struct cl_cid_domain *d, int cpu)
{
	unsigned bound;
	int r = -1;

	if (CL_UNLIKELY(!d || cpu < 0 || (unsigned)cpu >= d->nr)) {
		errno = EINVAL;
		return -1;
	}
	bound = cl__cid_bound(d);
	if (d->policy != CL_CID_NAIVE) {
		r = CL_READ_ONCE(d->cpu[cpu].recent);
		if (CL_LIKELY(r >= 0 && (unsigned)r < bound && cl__cid_try(d, (unsigned)r, cpu))) {
			CL__CID_COUNT(d, r, recent_hits);
			return r;
		}
	}
	return cl__cid_acquire_slow(d, cpu, bound, r);
}

/**
 * cl_cid_acquire() - acquire a cid unique among the domain's holders.
 * @d: the domain.
 *
 * Uses the policy of @d with the current CPU (cl_cpu_id(): rseq when live,
 * else sched_getcpu()). Hold the cid only while working on cid-indexed data
 * and release it soon: waiting acquirers sleep until then.
 *
 * Context: any thread (a user of @d); see cl_cid_acquire_on().
 * Return: a cid (>= 0), or -1 with errno EINVAL (NULL @d) or EBUSY (the
 * domain already has as many holders as users).
 */
CL_INLINE int cl_cid_acquire(struct cl_cid_domain *d)
{
	unsigned cpu;

	if (CL_UNLIKELY(!d)) {
		errno = EINVAL;
		return -1;
	}
	cpu = (unsigned)cl_cpu_id();
	if (CL_UNLIKELY(cpu >= d->nr))
		cpu %= d->nr;
	return cl_cid_acquire_on(d, (int)cpu);
}

/**
 * cl_cid_release() - give back a cid.
 * @d: the domain.
 * @cid: a cid returned by cl_cid_acquire()/_on() on @d and not yet released.
 *
 * Any thread may release (not only the acquirer). The cid keeps its "last
 * CPU" for the LLC policy. Wakes one sleeping acquirer, if any.
 *
 * Context: any thread; lock-free unless acquirers sleep.
 * Return: nothing. A NULL @d, a @cid out of range or a cid that is not held
 * is a no-op that sets errno to EINVAL (never a crash); a double release
 * racing with a new acquire of the same cid cannot be detected.
 */
CL_INLINE void cl_cid_release(struct cl_cid_domain *d, int cid)
{
	unsigned long *st, old;

	if (CL_UNLIKELY(!d || cid < 0 || (unsigned)cid >= d->nr)) {
		errno = EINVAL;
		return;
	}
	st = &d->slot[cid].state;
	old = CL_ATOMIC_LOAD(st, CL_RELAXED);
	if (CL_UNLIKELY(!(old & CL__CID_HELD))) {
		errno = EINVAL;
		return;
	}
	/* Store, then read nr_waiters: pairs with the waiter's increment +
	 * membarrier (see cl__cid_acquire_locked()). */
	if (CL_LIKELY(!CL_ATOMIC_LOAD(&d->strong_release, CL_RELAXED)))
		CL_ATOMIC_STORE(st, old & ~CL__CID_HELD, CL_RELEASE);
	else
		CL_ATOMIC_STORE(st, old & ~CL__CID_HELD, CL_SEQ_CST);
	CL_BARRIER();
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&d->nr_waiters, CL_RELAXED) != 0))
		cl__cid_wake(d, 0);
}

/**
 * cl_cid_domain_stats() - a snapshot of the domain's counters and state.
 * @d: the domain.
 * @out: filled in (see struct cl_cid_stats).
 *
 * Context: any thread; lock-free; O(cid space).
 * Return: 0, or -1 with errno EINVAL (NULL argument).
 */
CL_INLINE int cl_cid_domain_stats(const struct cl_cid_domain *d, struct cl_cid_stats *out)
{
	unsigned i;

	if (!d || !out) {
		errno = EINVAL;
		return -1;
	}
	memset(out, 0, sizeof(*out));
	for (i = 0; i < d->nr; i++) {
		const struct cl__cid_slot *s = &d->slot[i];

		out->acquisitions += CL_READ_ONCE(s->acquisitions);
		out->recent_hits += CL_READ_ONCE(s->recent_hits);
		out->llc_hits += CL_READ_ONCE(s->llc_hits);
		out->spreads += CL_READ_ONCE(s->spreads);
		out->lowest += CL_READ_ONCE(s->lowest);
		out->fallbacks += CL_READ_ONCE(s->fallbacks);
		out->held += (unsigned)(CL_READ_ONCE(s->state) & CL__CID_HELD);
	}
	out->waits = CL_READ_ONCE(d->waits);
	out->busy = CL_READ_ONCE(d->busy);
	out->users = CL_READ_ONCE(d->users);
	out->nr_allowed = CL_READ_ONCE(d->nr_allowed);
	out->bound = cl__cid_bound(d);
	out->max_nr_cid = CL_READ_ONCE(d->max_nr_cid);
	out->waiters = CL_ATOMIC_LOAD(&d->nr_waiters, CL_RELAXED);
	out->nr_cids = d->nr;
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_CID_H */
