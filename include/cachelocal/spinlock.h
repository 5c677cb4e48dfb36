/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/spinlock.h - a test-and-test-and-set (TTAS) spinlock on one int
 * (layer L1).
 *
 *	static struct cl_spinlock lock = CL_SPINLOCK_INIT;
 *
 *	cl_spin_lock(&lock);
 *	... a few dozen instructions, no blocking call ...
 *	cl_spin_unlock(&lock);
 *
 * Algorithm: lock = atomic exchange of 1 (acquire); while that returns 1,
 * spin on plain (relaxed) loads until the word reads 0, then exchange again.
 * Waiters spin on a shared copy of the lock's line and only the exchange
 * writes it, so the holder's line is not bounced between waiters while it
 * is held. Unlock = a release store of 0.
 *
 * Chosen over pthread_spinlock_t: the same size and the same algorithm as
 * glibc's, but visible to the compiler (inlined, no PLT call), usable from
 * C++, modelled by ThreadSanitizer through the __atomic builtins, and the
 * same code on every libc. The reference runqueue (sched/) uses it for its
 * runqueue and group locks.
 *
 * What it is not: fair (a waiter may starve under contention), recursive,
 * or preemption-aware (a waiter spins while a preempted holder is off-CPU:
 * keep sections short and never sleep, block or call back into unknown code
 * while holding it). Where a holder may be descheduled for long, use a
 * pthread mutex.
 *
 * Memory ordering: everything the holder did before cl_spin_unlock() is
 * visible to the next thread whose cl_spin_lock()/cl_spin_trylock()
 * succeeds (release store / acquire exchange). A failed cl_spin_trylock()
 * and cl_spin_is_locked() order nothing.
 *
 * Synchronization:
 *
 *   call                  may run concurrently with
 *   cl_spin_lock/trylock  everything except cl_spin_init on the same lock
 *   cl_spin_unlock        everything except cl_spin_init; only by the holder
 *   cl_spin_is_locked     everything (a racy snapshot, for asserts and stats)
 *   cl_spin_init          nothing on that lock
 *
 * The lock is not tied to a thread: another thread than the one that locked
 * it may unlock it (as the runqueue does when a task migrates).
 */
#ifndef CACHELOCAL_SPINLOCK_H
#define CACHELOCAL_SPINLOCK_H

#include "compiler.h"

CL_BEGIN_DECLS

/**
 * struct cl_spinlock - a TTAS lock: 0 = free, 1 = held.
 * @locked: the lock word; touch it only through the functions below.
 *
 * Put it on the line of the data it protects when that data is written by
 * the holder only; on its own line (CL_GROUP_BEGIN_ALIGNED) when readers
 * that do not take it read fields next to it.
 */
struct cl_spinlock {
	int locked;
};

/* Static initializer: an unlocked lock (same as cl_spin_init()). */
#define CL_SPINLOCK_INIT { 0 }

/**
 * cl_spin_init() - initialize @l unlocked.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: before any other thread can see @l.
 */
CL_INLINE void cl_spin_init(struct cl_spinlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return;
	CL_ATOMIC_STORE(&l->locked, 0, CL_RELAXED);
}

/**
 * cl_spin_trylock() - take @l if it is free, without spinning.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Reads the word first and only exchanges when it reads free, so a failed
 * attempt does not take the line exclusive.
 *
 * Context: any thread; never spins or blocks.
 * Return: 1 if taken (acquire ordering), 0 if it was held.
 */
CL_INLINE int cl_spin_trylock(struct cl_spinlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return 0;
	return CL_ATOMIC_LOAD(&l->locked, CL_RELAXED) == 0 &&
	       CL_ATOMIC_XCHG(&l->locked, 1, CL_ACQUIRE) == 0;
}

/**
 * cl_spin_lock() - take @l, spinning on plain loads while it is held.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; not recursive (a holder that locks again spins
 * forever); keep the critical section short.
 */
CL_INLINE void cl_spin_lock(struct cl_spinlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return;
	while (CL_ATOMIC_XCHG(&l->locked, 1, CL_ACQUIRE) != 0)
		while (CL_ATOMIC_LOAD(&l->locked, CL_RELAXED) != 0)
			CL_CPU_RELAX();
}

/**
 * cl_spin_unlock() - release @l.
 * @l: the lock, held (by any thread: the lock has no owner).
 *
 * Context: the current holder. Unlocking a free lock is a caller bug that
 * is not detected.
 */
CL_INLINE void cl_spin_unlock(struct cl_spinlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return;
	CL_ATOMIC_STORE(&l->locked, 0, CL_RELEASE);
}

/**
 * cl_spin_is_locked() - is @l held right now?
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; a racy snapshot (no ordering): for assertions that
 * the caller holds the lock, and statistics.
 * Return: 1 if held at the time of the load, else 0.
 */
CL_INLINE int cl_spin_is_locked(const struct cl_spinlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return 0;
	return CL_ATOMIC_LOAD(&l->locked, CL_RELAXED) != 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SPINLOCK_H */
