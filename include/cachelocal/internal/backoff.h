/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/backoff.h - the one way cachelocal waits for another
 * thread to make progress (a held lock bit, a full set of cids).
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * Policy: first assume the other thread is running on another CPU and about
 * to finish: spin with the CPU's pause hint (CL_CPU_RELAX) for `spins`
 * steps. After that assume it is preempted (more threads than CPUs, the
 * common case on small machines) and give it our CPU: sched_yield() on every
 * further step. Never sleeps for a fixed time.
 *
 *	unsigned n = 0;
 *	while (!ready())
 *		cl__backoff(&n, CL__BACKOFF_SPINS);
 *
 * Synchronization: the counter belongs to the waiting thread (on its stack).
 */
#ifndef CACHELOCAL_INTERNAL_BACKOFF_H
#define CACHELOCAL_INTERNAL_BACKOFF_H

#include <sched.h>

#include "../compiler.h"

CL_BEGIN_DECLS

/* Default spins before yielding, for waits on a short critical section. */
#define CL__BACKOFF_SPINS 256u

/*
 * cl__backoff() - one step of a wait. @n: the caller's step counter, 0 at
 * the start of the wait. @spins: steps that only pause before every further
 * step yields the CPU.
 */
CL_INLINE void cl__backoff(unsigned *n, unsigned spins)
{
	if (*n < spins) {
		++*n;
		CL_CPU_RELAX();
	} else {
		sched_yield();
	}
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_BACKOFF_H */
