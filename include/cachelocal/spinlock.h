/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/spinlock.h - three spin locks (layer L1): a test-and-test-and-set
 * lock (struct cl_spinlock), a ticket lock (struct cl_ticketlock) and an MCS
 * queue lock (struct cl_mcslock).
 *
 *	static struct cl_spinlock lock = CL_SPINLOCK_INIT;
 *
 *	cl_spin_lock(&lock);
 *	... a few dozen instructions, no blocking call ...
 *	cl_spin_unlock(&lock);
 *
 *	static struct cl_ticketlock tl = CL_TICKETLOCK_INIT;   // FIFO
 *	cl_ticket_lock(&tl); ... cl_ticket_unlock(&tl);
 *
 *	static struct cl_mcslock ml = CL_MCSLOCK_INIT;         // FIFO, local spinning
 *	struct cl_mcs_node me;                                 // one per acquisition
 *	cl_mcs_lock(&ml, &me); ... cl_mcs_unlock(&ml, &me);
 *
 * Which one:
 *
 *   lock          fair   waiters spin on              size     pick it when
 *   cl_spinlock   no     the lock word (shared line)  4 B      uncontended or 2 CPUs;
 *                                                              the cheapest handover
 *   cl_ticketlock FIFO   the owner word (shared)      12 B     a waiter must not starve,
 *                                                              few waiters
 *   cl_mcslock    FIFO   its own node (local line)    8 B +    many waiters on many
 *                                                     a node   cores or sockets
 *
 * Algorithms.
 * TTAS: lock = atomic exchange of 1 (acquire); while that returns 1, spin on
 * plain (relaxed) loads until the word reads 0, then exchange again. Waiters
 * spin on a shared copy of the lock's line and only the exchange writes it.
 * Unlock = a release store of 0. Not fair: a thread that just unlocked, or
 * one that arrives while the line is in its cache, wins the exchange far
 * more often than a waiter that has spun for long (a waiter may starve).
 *
 * Ticket: two counters, next (the ticket dispenser) and owner (the ticket
 * being served). lock = fetch_add(next, 1) takes ticket t, then spins until
 * owner == t (acquire); unlock = a release store of owner + 1 (only the
 * holder writes owner). Tickets are served in the order fetch_add() handed
 * them out: FIFO. Every waiter reads owner, so each unlock invalidates the
 * line in every waiter's cache.
 *
 * MCS (Mellor-Crummey and Scott): a queue of nodes, one per waiter, the lock
 * word pointing at the last one. lock = exchange tail with my node; if there
 * was a predecessor, link myself as its successor and spin on my own node's
 * flag until the predecessor clears it. unlock = if no successor is linked,
 * CAS tail from my node to NULL (done if it succeeds); else (or once the
 * late successor links itself) clear the successor's flag (release). FIFO,
 * and each waiter spins on a line nobody else reads: one cache-line transfer
 * per handover however many wait.
 *
 * Preemption: a fair lock hands the lock to a definite next waiter; when that
 * thread is not running (more threads than CPUs) everyone waits for it to be
 * scheduled. So the ticket and MCS waiters wait as every cachelocal wait
 * does (internal/backoff.h): they spin CL__BACKOFF_SPINS pauses, then call
 * sched_yield() at every further step, which lets a preempted holder or
 * next-in-line run on an oversubscribed CPU. A ticket waiter that has also
 * yielded CL__TICKET_YIELDS times sleeps in the kernel (a futex on @owner,
 * woken by the unlock that serves its ticket): sched_yield() gives nothing
 * to a thread that is not on this CPU's run queue, as on a virtual machine
 * whose host runs fewer vCPUs at a time than the guest has: there each
 * spinning vCPU burns the host time that the holder's or next-in-line's
 * vCPU needs. The unlock pays one load of @sleepers, on the line it writes
 * anyway, and a futex wake only while someone sleeps.
 * The TTAS lock does not yield (a waiter is never owed the lock). None of
 * the three is recursive; never sleep, block or call unknown code while
 * holding one. Where a holder may be descheduled for long, use a pthread
 * mutex.
 *
 * Time-slice extension (Linux 7.0+, cachelocal/slice.h): in a thread where
 * it is on, each of the three asks the kernel not to preempt the holder
 * between a successful lock/trylock and the unlock (cl__slice_begin() after
 * the acquiring atomic, cl__slice_end() after the releasing store), and
 * gives the CPU back at the unlock if the kernel granted it more time: a
 * holder is then rarely preempted mid-section, and with it the convoy
 * above mostly goes. The waits (spinning, sched_yield, the ticket lock's
 * futex) happen before the request begins and the ticket unlock's futex
 * wake after it ends, so no request spans a system call (except an MCS
 * unlock that waits long for a late successor to link itself, whose
 * sched_yield() ends a grant, as a yield should). Where it is off
 * (kernel, glibc's 32-byte area, CL_SLICE_EXT=0, a thread's opt-out) the
 * lock and the unlock each pay one thread-local load and one branch.
 * A section that makes a system call takes its lock with the _noslice
 * forms (cl_spin_lock_noslice(), cl_ticket_lock_noslice()): the per-lock,
 * per-call-site opt-out; CL_SLICE_EXT=0 is the per-build one.
 * Sections of several locks nest (only the outermost asks). A lock taken
 * in one thread and released in another (TTAS, ticket) ends no request:
 * the taker's stays set until its own next outermost unlock.
 *
 * Memory ordering (all three): everything the holder did before its unlock
 * is visible to the next thread whose lock/trylock succeeds (release store /
 * acquire read-modify-write or load). A failed trylock and the is_locked
 * snapshots order nothing.
 *
 * Synchronization:
 *
 *   call                       may run concurrently with
 *   *_lock / *_trylock         everything except *_init on the same lock
 *   *_unlock                   everything except *_init; only by the holder
 *   *_is_locked                everything (a racy snapshot, for asserts and stats)
 *   *_init                     nothing on that lock
 *
 * The TTAS and ticket locks are not tied to a thread: another thread than
 * the one that locked one may unlock it (as the runqueue does when a task
 * migrates). An MCS lock is released with the node it was taken with, by
 * whichever thread holds that node; the node must stay valid (not go out of
 * scope) from cl_mcs_lock() until cl_mcs_unlock() returns.
 *
 * Misuse detected (errno EINVAL, return -1, nothing changed): the ticket
 * lock's unlock of a lock nobody holds; the MCS lock's unlock of a free lock
 * with a node that has no successor linked (the second unlock of a node
 * whose first found nobody waiting); neither catches an unlock by a
 * non-holder while someone else holds the lock. The MCS check costs
 * nothing on the handover path (it never reads the lock word there: a
 * load of that line on every unlock would add a cache-line transfer per
 * handover). The TTAS lock's unlock cannot tell (one bit).
 */
#ifndef CACHELOCAL_SPINLOCK_H
#define CACHELOCAL_SPINLOCK_H

#include <stdint.h>

#include "compiler.h"
#include "internal/backoff.h"
#include "internal/futex.h"
#include "internal/slice.h"

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
	if (CL_ATOMIC_LOAD(&l->locked, CL_RELAXED) != 0 ||
	    CL_ATOMIC_XCHG(&l->locked, 1, CL_ACQUIRE) != 0)
		return 0;
	cl__slice_begin();
	return 1;
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
	uint32_t on;

	if (CL__BAD_ARG(l == NULL))
		return;
	on = cl__slice_on(); /* before the exchange (cl__slice_begin_if()) */
	while (CL_ATOMIC_XCHG(&l->locked, 1, CL_ACQUIRE) != 0)
		while (CL_ATOMIC_LOAD(&l->locked, CL_RELAXED) != 0)
			CL_CPU_RELAX();
	cl__slice_begin_if(on);
}

/**
 * cl_spin_lock_noslice() - cl_spin_lock() without asking for the time-slice
 * extension.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * For a section that makes a system call (the kernel ends a grant at any
 * system call). Release it with cl_spin_unlock_noslice().
 *
 * Context: as cl_spin_lock().
 */
CL_INLINE void cl_spin_lock_noslice(struct cl_spinlock *l)
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
	uint32_t on;

	if (CL__BAD_ARG(l == NULL))
		return;
	on = cl__slice_on();
	CL_ATOMIC_STORE(&l->locked, 0, CL_RELEASE);
	cl__slice_end_if(on);
}

/**
 * cl_spin_unlock_noslice() - release @l taken with cl_spin_lock_noslice().
 * @l: the lock, held.
 *
 * Context: the current holder.
 */
CL_INLINE void cl_spin_unlock_noslice(struct cl_spinlock *l)
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

/* ---------------------------------------------------------------- ticket lock */

/**
 * struct cl_ticketlock - a FIFO ticket lock: free when @next == @owner.
 * @next: the next ticket to hand out (fetch_add by lockers).
 * @owner: the ticket being served (written by the holder only; the futex
 *	word the sleeping waiters wait on).
 * @sleepers: waiters asleep or about to sleep in the kernel (see
 *	"Preemption" above); the unlock wakes the next ticket when not 0.
 *
 * The words share a line: a locker writes @next, every waiter reads @owner.
 * Touch them only through the functions below. Wraps after 2^32 tickets,
 * harmlessly (ticket arithmetic is modular).
 */
struct cl_ticketlock {
	uint32_t next;
	uint32_t owner;
	uint32_t sleepers;
};

/* Static initializer: an unlocked ticket lock (same as cl_ticket_init()). */
#define CL_TICKETLOCK_INIT { 0, 0, 0 }

/* Yields (after the CL__BACKOFF_SPINS pauses) before a ticket waiter sleeps */
#define CL__TICKET_YIELDS 16u
/* The longest a sleeping ticket waiter sleeps before it looks again (ns):
 * an unlock whose load of @sleepers was ordered before the waiter's count
 * (the store-buffer case of a release store then a load) wakes nobody, and
 * this bounds what that costs; it is never the wake-up itself. (A test may
 * define it larger before the include, to prove the unlock wakes.) */
#ifndef CL__TICKET_SLEEP_NS
#define CL__TICKET_SLEEP_NS 1000000ll
#endif

/**
 * cl_ticket_init() - initialize @l unlocked.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: before any other thread can see @l.
 */
CL_INLINE void cl_ticket_init(struct cl_ticketlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return;
	CL_ATOMIC_STORE(&l->next, 0, CL_RELAXED);
	CL_ATOMIC_STORE(&l->owner, 0, CL_RELAXED);
	CL_ATOMIC_STORE(&l->sleepers, 0, CL_RELAXED);
}

/* The futex bit of ticket @t: an unlock wakes the sleepers of the ticket it
 * serves (and those 32 tickets further), not every sleeper. */
CL_INLINE unsigned cl__ticket_bit(uint32_t t)
{
	return 1u << (t & 31u);
}

/* cl_ticket_lock()'s wait once spinning and yielding are spent: sleep on
 * @owner while it is not @me (a bounded sleep, see CL__TICKET_SLEEP_NS). */
CL_INLINE void cl__ticket_sleep(struct cl_ticketlock *l, uint32_t me)
{
	uint32_t seen;
	struct timespec until;
	unsigned long long t;
	int saved = errno; /* a lock call leaves errno as it found it */

	CL_ATOMIC_FETCH_ADD(&l->sleepers, 1, CL_SEQ_CST);
	seen = CL_ATOMIC_LOAD(&l->owner, CL_SEQ_CST);
	if (seen != me) {
		t = cl__now_ns() + (unsigned long long)CL__TICKET_SLEEP_NS;
		until.tv_sec = (time_t)(t / 1000000000ull);
		until.tv_nsec = (long)(t % 1000000000ull);
		(void)cl__futex_wait_bits((int *)&l->owner, (int)seen, &until, cl__ticket_bit(me));
	}
	CL_ATOMIC_FETCH_SUB(&l->sleepers, 1, CL_RELAXED);
	errno = saved;
}

/**
 * cl_ticket_trylock() - take @l if it is free and nobody waits, without spinning.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Takes the next ticket only if it would be served at once (a CAS of @next
 * from @owner to @owner + 1), so a failed attempt leaves no ticket behind
 * and never jumps the queue.
 *
 * Context: any thread; never spins or blocks.
 * Return: 1 if taken (acquire ordering), 0 if it was held.
 */
CL_INLINE int cl_ticket_trylock(struct cl_ticketlock *l)
{
	uint32_t owner;

	if (CL__BAD_ARG(l == NULL))
		return 0;
	/* acquire here: the previous holder's release store was to owner, not
	 * to next, so the CAS on next alone would order nothing. */
	owner = CL_ATOMIC_LOAD(&l->owner, CL_ACQUIRE);
	if (!CL_ATOMIC_CAS(&l->next, &owner, owner + 1, CL_RELAXED, CL_RELAXED))
		return 0;
	cl__slice_begin();
	return 1;
}

/* cl_ticket_lock()'s wait for ticket @me, out of line so that the
 * uncontended lock inlines: spin, yield, then sleep. */
CL_NOINLINE CL_UNUSED static void cl__ticket_wait(struct cl_ticketlock *l, uint32_t me)
{
	unsigned spins = 0, yields = 0;

	while (CL_ATOMIC_LOAD(&l->owner, CL_ACQUIRE) != me) {
		if (cl__backoff_spin(&spins, CL__BACKOFF_SPINS))
			continue;
		if (yields < CL__TICKET_YIELDS) {
			yields++;
			sched_yield();
		} else {
			cl__ticket_sleep(l, me);
		}
	}
}

/* The lock's and the unlock's error path (EINVAL), out of line. */
CL_COLD CL_NOINLINE CL_UNUSED static int cl__ticket_einval(void)
{
	errno = EINVAL;
	return -1;
}

/* cl_ticket_lock() when ticket @me is not served yet or (@on) the
 * time-slice extension is on in this thread. */
CL_NOINLINE CL_UNUSED static void cl__ticket_lock_slow(struct cl_ticketlock *l, uint32_t me,
							uint32_t on)
{
	if (CL_ATOMIC_LOAD(&l->owner, CL_ACQUIRE) != me)
		cl__ticket_wait(l, me);
	cl__slice_begin_if(on);
}

/* cl_ticket_lock() and cl_ticket_lock_noslice() (@ext 0: no request). */
CL_ALWAYS_INLINE void cl__ticket_lock_x(struct cl_ticketlock *l, int ext)
{
	uint32_t me, on;

	if (CL_UNLIKELY(l == NULL)) {
		(void)cl__ticket_einval();
		return;
	}
	/* the thread's request word is read before the locked add, so that
	 * the load does not wait behind it; one branch then covers both rare
	 * cases: a wait, a time-slice request */
	on = ext ? cl__slice_on() : 0;
	me = CL_ATOMIC_FETCH_ADD(&l->next, 1, CL_RELAXED);
	if (CL_UNLIKELY((CL_ATOMIC_LOAD(&l->owner, CL_ACQUIRE) ^ me) | on))
		cl__ticket_lock_slow(l, me, on);
}

/**
 * cl_ticket_lock() - take @l, in the order the callers arrived.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Takes a ticket and spins until it is served, yielding the CPU once the
 * wait is long and sleeping in the kernel once it is longer (see
 * "Preemption" above).
 *
 * Context: any thread; not recursive (a holder that locks again waits
 * forever); keep the critical section short.
 */
CL_ALWAYS_INLINE void cl_ticket_lock(struct cl_ticketlock *l)
{
	cl__ticket_lock_x(l, 1);
}

/**
 * cl_ticket_lock_noslice() - cl_ticket_lock() without asking for the
 * time-slice extension.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * For a section that makes a system call (the kernel ends a grant at any
 * system call, so asking is useless there). Release it with
 * cl_ticket_unlock_noslice().
 *
 * Context: as cl_ticket_lock().
 */
CL_ALWAYS_INLINE void cl_ticket_lock_noslice(struct cl_ticketlock *l)
{
	cl__ticket_lock_x(l, 0);
}

/* The unlock's slow path, out of line so that the unlock itself inlines:
 * end this thread's time-slice request (before any system call), then wake
 * the sleepers waiting for ticket @next, if any. */
CL_NOINLINE CL_UNUSED static void cl__ticket_unlock_slow(struct cl_ticketlock *l, uint32_t next,
							  uint32_t on)
{
	cl__slice_end_if(on);
	if (CL_ATOMIC_LOAD(&l->sleepers, CL_RELAXED) != 0)
		(void)cl__futex_wake_bits((int *)&l->owner, INT32_MAX, cl__ticket_bit(next));
}

/* cl_ticket_unlock() and cl_ticket_unlock_noslice() (@ext 0: no request to end). */
CL_ALWAYS_INLINE int cl__ticket_unlock_x(struct cl_ticketlock *l, int ext)
{
	uint32_t owner, on;

	if (CL_UNLIKELY(l == NULL))
		return cl__ticket_einval();
	on = ext ? cl__slice_on() : 0; /* early, off the path of the loads below */
	owner = CL_ATOMIC_LOAD(&l->owner, CL_RELAXED);
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&l->next, CL_RELAXED) == owner))
		return cl__ticket_einval();
	CL_ATOMIC_STORE(&l->owner, owner + 1, CL_RELEASE);
	/* one branch for both rare cases: sleepers to wake, a request to end */
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&l->sleepers, CL_RELAXED) | on))
		cl__ticket_unlock_slow(l, owner + 1, on);
	return 0;
}

/**
 * cl_ticket_unlock() - release @l to the next ticket.
 * @l: the lock, held (by any thread: the lock has no owner thread).
 *
 * Context: the current holder.
 * Return: 0; -1 with errno EINVAL if @l is NULL or not held (nothing
 * changed: see "Misuse" above for what this cannot tell).
 */
CL_ALWAYS_INLINE int cl_ticket_unlock(struct cl_ticketlock *l)
{
	return cl__ticket_unlock_x(l, 1);
}

/**
 * cl_ticket_unlock_noslice() - release @l taken with cl_ticket_lock_noslice().
 * @l: the lock, held.
 *
 * Context: the current holder.
 * Return: as cl_ticket_unlock().
 */
CL_ALWAYS_INLINE int cl_ticket_unlock_noslice(struct cl_ticketlock *l)
{
	return cl__ticket_unlock_x(l, 0);
}

/**
 * cl_ticket_is_locked() - is @l held right now?
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; a racy snapshot (no ordering).
 * Return: 1 if held at the time of the loads, else 0.
 */
CL_INLINE int cl_ticket_is_locked(const struct cl_ticketlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return 0;
	return CL_ATOMIC_LOAD(&l->owner, CL_RELAXED) != CL_ATOMIC_LOAD(&l->next, CL_RELAXED);
}

/**
 * cl_ticket_waiters() - how many threads hold or wait for @l right now.
 * @l: the lock (NULL: errno EINVAL, 0).
 *
 * Context: any thread; a racy snapshot (for statistics, and tests that must
 * see a waiter queued before they go on).
 * Return: tickets handed out and not yet released (holder included).
 */
CL_INLINE unsigned cl_ticket_waiters(const struct cl_ticketlock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return 0;
	return CL_ATOMIC_LOAD(&l->next, CL_RELAXED) - CL_ATOMIC_LOAD(&l->owner, CL_RELAXED);
}

/* ---------------------------------------------------------------- MCS lock */

/**
 * struct cl_mcs_node - one acquisition's place in an MCS queue.
 * @next: the waiter queued behind this one (written by that waiter).
 * @locked: 1 while this node's owner must wait (cleared by the predecessor).
 *
 * Caller-provided (usually on the stack), valid from cl_mcs_lock() or a
 * successful cl_mcs_trylock() until cl_mcs_unlock() returns; no
 * initialisation needed. Aligned to a cache line so that two threads' nodes
 * never share the line their owners spin on.
 */
struct cl_mcs_node {
	struct cl_mcs_node *next;
	int locked;
} CL_ALIGNED(CL_CACHELINE_SIZE);

/**
 * struct cl_mcslock - an MCS queue lock: free when @tail is NULL.
 * @tail: the last node queued (the holder's when nobody waits).
 */
struct cl_mcslock {
	struct cl_mcs_node *tail;
};

/* Static initializer: an unlocked MCS lock (same as cl_mcs_init()). */
#define CL_MCSLOCK_INIT { NULL }

/**
 * cl_mcs_init() - initialize @l unlocked.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: before any other thread can see @l.
 */
CL_INLINE void cl_mcs_init(struct cl_mcslock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return;
	CL_ATOMIC_STORE(&l->tail, (struct cl_mcs_node *)NULL, CL_RELAXED);
}

/**
 * cl_mcs_trylock() - take @l with @node if nobody holds it, without spinning.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 * @node: this acquisition's node (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; never spins or blocks.
 * Return: 1 if taken (acquire ordering; release with the same @node), 0 if
 * it was held or an argument was NULL.
 */
CL_INLINE int cl_mcs_trylock(struct cl_mcslock *l, struct cl_mcs_node *node)
{
	struct cl_mcs_node *expect = NULL;

	if (CL__BAD_ARG(l == NULL || node == NULL))
		return 0;
	if (CL_ATOMIC_LOAD(&l->tail, CL_RELAXED) != NULL)
		return 0;
	CL_ATOMIC_STORE(&node->next, (struct cl_mcs_node *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&node->locked, 0, CL_RELAXED);
	if (!CL_ATOMIC_CAS(&l->tail, &expect, node, CL_ACQ_REL, CL_RELAXED))
		return 0;
	cl__slice_begin();
	return 1;
}

/**
 * cl_mcs_lock() - take @l with @node, in the order the callers arrived.
 * @l: the lock (NULL: errno EINVAL, nothing done).
 * @node: this acquisition's node, unused by any other acquisition until
 *        cl_mcs_unlock(@l, @node) returns (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; not recursive; keep the critical section short. A
 * waiter spins on @node->locked only, yielding once the wait is long.
 */
CL_INLINE void cl_mcs_lock(struct cl_mcslock *l, struct cl_mcs_node *node)
{
	struct cl_mcs_node *prev;
	unsigned spins = 0;

	if (CL__BAD_ARG(l == NULL || node == NULL))
		return;
	CL_ATOMIC_STORE(&node->next, (struct cl_mcs_node *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&node->locked, 1, CL_RELAXED);
	/* release: the predecessor that reads our node sees it initialised;
	 * acquire: the previous holder's section, when it released to NULL. */
	prev = CL_ATOMIC_XCHG(&l->tail, node, CL_ACQ_REL);
	if (prev != NULL) {
		CL_ATOMIC_STORE(&prev->next, node, CL_RELEASE);
		while (CL_ATOMIC_LOAD(&node->locked, CL_ACQUIRE) != 0)
			cl__backoff(&spins, CL__BACKOFF_SPINS);
	}
	cl__slice_begin();
}

/**
 * cl_mcs_unlock() - release @l, handing it to the next queued node if any.
 * @l: the lock, held through @node.
 * @node: the node it was taken with.
 *
 * When a successor has swapped itself into the tail but not yet linked
 * itself behind @node, waits for that link (a few instructions of the
 * successor's; it yields like a waiter if the successor is preempted).
 *
 * Context: the holder of @node.
 * Return: 0; -1 with errno EINVAL if an argument is NULL, or if @l is free
 * and @node has no successor linked (a second unlock with a node whose
 * previous unlock found nobody waiting; nothing changed). A node that was
 * never used, or whose previous unlock handed the lock on, is not checked:
 * releasing a lock not held through @node is undefined.
 */
CL_INLINE int cl_mcs_unlock(struct cl_mcslock *l, struct cl_mcs_node *node)
{
	struct cl_mcs_node *next, *expect = node;
	unsigned spins = 0;

	if (CL__BAD_ARG(l == NULL || node == NULL))
		return -1;
	/* A handover touches our node and the successor's only: the lock word
	 * is read (by the CAS) only when nobody is linked behind us, which is
	 * also where an unlock of a free lock is told apart at no cost. */
	next = CL_ATOMIC_LOAD(&node->next, CL_ACQUIRE);
	if (next == NULL) {
		if (CL_ATOMIC_CAS(&l->tail, &expect, (struct cl_mcs_node *)NULL, CL_RELEASE,
				  CL_RELAXED)) {
			cl__slice_end();
			return 0;
		}
		if (CL__BAD_ARG(expect == NULL))
			return -1; /* the lock is free: not held through @node */
		while ((next = CL_ATOMIC_LOAD(&node->next, CL_ACQUIRE)) == NULL)
			cl__backoff(&spins, CL__BACKOFF_SPINS);
	}
	CL_ATOMIC_STORE(&next->locked, 0, CL_RELEASE);
	cl__slice_end();
	return 0;
}

/**
 * cl_mcs_is_locked() - is @l held right now?
 * @l: the lock (NULL: errno EINVAL, nothing done).
 *
 * Context: any thread; a racy snapshot (no ordering).
 * Return: 1 if held at the time of the load, else 0.
 */
CL_INLINE int cl_mcs_is_locked(const struct cl_mcslock *l)
{
	if (CL__BAD_ARG(l == NULL))
		return 0;
	return CL_ATOMIC_LOAD(&l->tail, CL_RELAXED) != NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_SPINLOCK_H */
