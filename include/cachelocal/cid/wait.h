/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cid/wait.h - what an acquirer does when the fast path fails:
 * the policy steps, CL_CID_SPIN_ROUNDS lock-free rounds with backoff, then
 * the fallback lock, where it sleeps on the domain's condition variable
 * until a release (or a join, leave or refresh) lets it in; and the wake-up
 * side used by release and by the user-count updates.
 *
 * Part of cid.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice. The
 * invariants and the synchronization table of the domain are at the top of
 * cid.h.
 */
#ifndef CACHELOCAL_CID_WAIT_H
#define CACHELOCAL_CID_WAIT_H

#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "../compiler.h"
#include "../internal/backoff.h"
#include "../internal/membarrier.h"
#include "../sys.h"
#include "policy.h"
#include "types.h"

CL_BEGIN_DECLS

/* A sleeping acquirer re-checks at least this often (a safety net only). */
#define CL__CID_RECHECK_NS 10000000L

/* Sleep on d->cond for at most CL__CID_RECHECK_NS; caller holds d->lock. */
CL_INLINE void cl__cid_sleep(struct cl_cid_domain *d)
{
	struct timespec ts;

	clock_gettime(CL__CLOCK_REALTIME, &ts);
	ts.tv_nsec += CL__CID_RECHECK_NS;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&d->cond, &d->lock, &ts);
}

/*
 * Fallback: under the domain lock; sleeps until a cid below the bound is
 * free, or fails with EBUSY when the caller would exceed the users.
 *
 * No lost wakeup: a release stores "free" (release order), then reads
 * nr_waiters with only a compiler barrier between. The waiter increments
 * nr_waiters, then runs membarrier(PRIVATE_EXPEDITED), a full barrier on
 * every CPU running one of our threads, then scans. So a release either
 * sees the waiter (and signals it) or its store is visible to the scan
 * (asymmetric Dekker, as in liburcu's membarrier flavor). Without
 * membarrier the domain switches to seq_cst releases; the timed sleep is a
 * safety net for releases racing with that switch.
 */
static CL_UNUSED CL_NOINLINE CL_COLD int cl__cid_acquire_locked(struct cl_cid_domain *d, int cpu)
{
	int c = -1;

	pthread_mutex_lock(&d->lock);
	CL_ATOMIC_FETCH_ADD(&d->nr_waiters, 1u, CL_SEQ_CST);
	if (!CL_ATOMIC_LOAD(&d->strong_release, CL_RELAXED) && cl__membarrier() != 0)
		CL_ATOMIC_STORE(&d->strong_release, 1, CL_SEQ_CST);
	for (;;) {
		unsigned bound = cl__cid_bound(d);
		int r = d->policy != CL_CID_NAIVE ? CL_READ_ONCE(d->cpu[cpu].recent) : -1;

		if (r >= 0 && (unsigned)r < bound && cl__cid_try(d, (unsigned)r, cpu)) {
			c = r;
			break;
		}
		c = cl__cid_scan_lowest(d, bound, cpu);
		if (c >= 0)
			break;
		if (cl__cid_held(d) >= CL_ATOMIC_LOAD(&d->users, CL_RELAXED)) {
			CL_WRITE_ONCE(d->busy, d->busy + 1);
			break;
		}
		CL_WRITE_ONCE(d->waits, d->waits + 1);
		cl__cid_sleep(d);
	}
	CL_ATOMIC_FETCH_SUB(&d->nr_waiters, 1u, CL_SEQ_CST);
	pthread_mutex_unlock(&d->lock);
	if (c < 0) {
		errno = EBUSY;
		return -1;
	}
	CL__CID_COUNT(d, c, fallbacks);
	if (d->policy != CL_CID_NAIVE)
		cl__cid_set_recent(d, cpu, c);
	return c;
}

static CL_UNUSED CL_NOINLINE int cl__cid_acquire_slow(struct cl_cid_domain *d, int cpu,
						     unsigned bound, int recent)
{
	unsigned round, wait = 0;
	int c;

	if (bound == 0)
		return cl__cid_acquire_locked(d, cpu);
	c = cl__cid_policy_steps(d, cpu, bound, recent);
	if (c >= 0)
		goto got;
	for (round = 0; round < CL_CID_SPIN_ROUNDS; round++) {
		c = cl__cid_scan_lowest(d, bound, cpu);
		if (c >= 0) {
			CL__CID_COUNT(d, c, lowest);
			goto got;
		}
		/* As many holders as users: no release is owed to this caller,
		 * so waiting for one is pointless; the fallback decides EBUSY
		 * under the lock (instead of ~CL_CID_SPIN_ROUNDS yields, which
		 * cost a time slice each on a loaded machine). */
		if (cl__cid_held(d) >= CL_ATOMIC_LOAD(&d->users, CL_RELAXED))
			break;
		/* Holders of every cid below the bound: first assume they are
		 * running and about to release; then that they are preempted
		 * (more threads than CPUs) and give them our CPU. */
		cl__backoff(&wait, 2);
		bound = cl__cid_bound(d);
	}
	return cl__cid_acquire_locked(d, cpu);
got:
	if (d->policy != CL_CID_NAIVE)
		cl__cid_set_recent(d, cpu, c);
	return c;
}

static CL_UNUSED CL_NOINLINE CL_COLD void cl__cid_wake(struct cl_cid_domain *d, int all)
{
	pthread_mutex_lock(&d->lock);
	if (all)
		pthread_cond_broadcast(&d->cond);
	else
		pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

CL_INLINE void cl__cid_kick_waiters(struct cl_cid_domain *d)
{
	if (CL_ATOMIC_LOAD(&d->nr_waiters, CL_SEQ_CST))
		pthread_cond_broadcast(&d->cond);
}

CL_END_DECLS

#endif /* CACHELOCAL_CID_WAIT_H */
