/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/sync.h - blocking primitives of the M:N runtime:
 * mutex, condition variable and wait-group (the wait queue: waitq.h; the bounded
 * channel: chan.h, which follow the same pattern). Each blocks a
 * task through the runqueue (cl__rt_block()) and wakes it through the
 * worker it blocked on (cl__rt_wake_rec(): docs/runtime.md, wake-to-run).
 *
 * Every primitive follows one pattern (the wake-to-run protocol in
 * <cachelocal/sched/runtime.h>): the waiter checks its condition and puts a
 * waiter record on the object's list under the object's lock, and keeps the
 * lock until its context is saved; the waker takes a record off the list
 * under the same lock, writes the record's result, and then wakes its task.
 * A record on a list is owned by the list; off the list by its waker.
 * A timed wait (the *_timeout calls) is one more waker: its timer, which
 * takes the record off the list under the same lock if it is still there
 * (cl__rt_wait_rec_dl(), timer.h), so a wakeup racing the timeout is
 * delivered exactly once.
 *
 * Synchronization table:
 *   operation            may run concurrently with        blocks
 *   cl_waitq_wait         any on the same waitq            task only
 *   cl_waitq_wake_*       any                              never
 *   cl_chan_send/recv     any on the same channel          task only (full/empty)
 *   (and their _timeout forms, cl_waitq_wait_timeout, cl_mutex_lock_timeout,
 *    cl_cond_wait_timeout: as the calls without a timeout)
 *   cl_chan_try*          any                              never (any thread)
 *   cl_chan_close         any; wakes every waiter          never (any thread)
 *   cl_mutex_lock         any                              task only
 *   cl_mutex_trylock/unlock any (unlock: the holder only)  never
 *   cl_cond_wait          any                              task only
 *   cl_cond_signal/broadcast any                           never (any thread)
 *   cl_waitgroup_add/done any                              never (any thread)
 *   cl_waitgroup_wait     any                              task only
 *   *_destroy             nothing on the same object       never
 * A private piece of sched/runtime/core.h (not API); included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SYNC_H
#define CACHELOCAL_SCHED_RUNTIME_SYNC_H

CL_BEGIN_DECLS

/* ---- mutex ---- */

/*
 * struct cl_mutex - a sleeping lock for tasks. state: 0 free, 1 held, 2
 * held and maybe waited for. Uncontended lock and unlock are one atomic
 * each (plus the owner's store and load); a contended unlock hands the
 * lock to the first waiter (FIFO, no barging past a woken waiter). owner:
 * cl__rt_caller_id() of the holder, written only by it (or by the unlocker
 * handing over), so an unlock by anyone else is seen and refused.
 */
struct cl_mutex {
	int state;
	struct cl_ticketlock wait_lock;
	struct cds_list_head waiters;
	const void *owner;
};

#define CL_MUTEX_INIT(m) { 0, CL_TICKETLOCK_INIT, CDS_LIST_HEAD_INIT((m).waiters), NULL }

CL_INLINE void cl__mutex_set_owner(struct cl_mutex *m, const void *who)
{
	CL_ATOMIC_STORE(&m->owner, who, CL_RELAXED);
}

/**
 * cl_mutex_init() - unlocked.
 * @m: the mutex.
 *
 * Context: before use.
 */
CL_INLINE void cl_mutex_init(struct cl_mutex *m)
{
	if (CL__BAD_ARG(m == NULL))
		return;
	m->state = 0;
	cl_ticket_init(&m->wait_lock);
	CDS_INIT_LIST_HEAD(&m->waiters);
	m->owner = NULL;
}

/**
 * cl_mutex_trylock() - take @m if free.
 * @m: the mutex.
 * Context: any thread.
 * Return: 0 if taken, -1 with errno EBUSY if held.
 */
CL_INLINE int cl_mutex_trylock(struct cl_mutex *m)
{
	int z = 0;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_ATOMIC_CAS(&m->state, &z, 1, CL_ACQUIRE, CL_RELAXED)) {
		cl__mutex_set_owner(m, cl__rt_caller_id());
		return 0;
	}
	errno = EBUSY;
	return -1;
}

/* cl_mutex_lock() until @deadline (cl__rt_wait_rec_dl(); 0: none). */
CL_INLINE int cl__mutex_lock_dl(struct cl_mutex *m, uint64_t deadline)
{
	struct cl_rt_task *self;
	int z = 0, st;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_LIKELY(CL_ATOMIC_CAS(&m->state, &z, 1, CL_ACQUIRE, CL_RELAXED))) {
		cl__mutex_set_owner(m, cl__rt_caller_id());
		return 0;
	}
	self = cl__rt_need_task();
	if (!self)
		return -1;
	cl__rt_lock(&m->wait_lock);
	if (CL_ATOMIC_XCHG(&m->state, 2, CL_ACQUIRE) == 0) {
		cl__mutex_set_owner(m, self);
		cl__rt_unlock(&m->wait_lock);
		return 0;
	}
	/* handed over by cl_mutex_unlock() when woken (it set the owner); a
	 * timeout leaves state 2 ("maybe waited for"): the next unlock finds
	 * the list as it is */
	self->wait.data = NULL;
	st = cl__rt_wait_rec_dl(self, &m->waiters, &m->wait_lock, deadline);
	return st ? cl__rt_wait_fail(st, EINTR) : 0;
}

/**
 * cl_mutex_lock() - take @m, blocking the task while it is held.
 * @m: the mutex.
 *
 * Context: a runtime task (outside a task only cl_mutex_trylock()).
 * Return: 0, or -1 with errno EPERM (held, and the caller is not a task).
 */
CL_INLINE int cl_mutex_lock(struct cl_mutex *m)
{
	return cl__mutex_lock_dl(m, 0);
}

/**
 * cl_mutex_unlock() - release @m (to the first waiter if any).
 * @m: the mutex, held by the caller.
 *
 * The holder is the task (or, outside tasks, the thread) that took it; the
 * lock stays with it if anyone else calls this.
 *
 * Context: any thread holding it.
 * Return: 0, or -1 with errno EINVAL (NULL @m) or EPERM (@m is not held,
 * or held by another task or thread: nothing changed).
 */
CL_INLINE int cl_mutex_unlock(struct cl_mutex *m)
{
	struct cl__rt_waiter *wt;
	int one = 1;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&m->owner, CL_RELAXED) != cl__rt_caller_id())) {
		errno = EPERM;
		return -1;
	}
	cl__mutex_set_owner(m, NULL); /* published by the release below */
	if (CL_LIKELY(CL_ATOMIC_CAS(&m->state, &one, 0, CL_RELEASE, CL_RELAXED)))
		return 0;
	cl__rt_lock(&m->wait_lock);
	wt = cl__rt_waiter_pop(&m->waiters);
	if (!wt) {
		CL_ATOMIC_STORE(&m->state, 0, CL_RELEASE);
		cl__rt_unlock(&m->wait_lock);
		return 0;
	}
	/* ownership passes to wt; stay 2 while others wait */
	cl__mutex_set_owner(m, wt->t);
	CL_ATOMIC_STORE(&m->state, cds_list_empty(&m->waiters) ? 1 : 2, CL_RELEASE);
	wt->status = 0;
	cl__rt_unlock(&m->wait_lock);
	cl__rt_wake_rec(wt);
	return 0;
}

/* ---- condition variable ---- */

/* struct cl_cond - tasks waiting for a condition protected by a cl_mutex. */
struct cl_cond {
	struct cl_waitq wq;
};

/**
 * cl_cond_init() - no waiters.
 * @cv: the condition variable.
 *
 * Context: before use.
 */
CL_INLINE void cl_cond_init(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return;
	cl_waitq_init(&cv->wq);
}

/* cl_cond_wait() until @deadline (cl__rt_wait_rec_dl(); 0: none); the
 * mutex is taken again in any case (without a deadline). */
CL_INLINE int cl__cond_wait_dl(struct cl_cond *cv, struct cl_mutex *m, uint64_t deadline)
{
	struct cl_rt_task *self;
	int st;

	if (CL__BAD_ARG(cv == NULL || m == NULL))
		return -1;
	self = cl__rt_need_task();
	if (!self)
		return -1;
	cl__rt_lock(&cv->wq.lock);
	if (cl_mutex_unlock(m) != 0) {
		cl__rt_unlock(&cv->wq.lock);
		return -1;
	}
	self->wait.data = NULL;
	st = cl__rt_wait_rec_dl(self, &cv->wq.waiters, &cv->wq.lock, deadline);
	if (cl_mutex_lock(m) != 0)
		return -1;
	return st ? cl__rt_wait_fail(st, EINTR) : 0;
}

/**
 * cl_cond_wait() - release @m, wait for a signal, take @m again.
 * @cv: the condition variable.
 * @m: a mutex the caller holds.
 *
 * The task is on @cv's list before @m is released, so a signal sent by
 * whoever takes @m next is never lost. Spurious returns are allowed: loop
 * on the condition.
 *
 * Context: a runtime task holding @m.
 * Return: 0, or -1 with errno EPERM outside a task or when the caller does
 * not hold @m (@m untouched).
 */
CL_INLINE int cl_cond_wait(struct cl_cond *cv, struct cl_mutex *m)
{
	return cl__cond_wait_dl(cv, m, 0);
}

/**
 * cl_cond_signal() - wake one waiter.
 * @cv: the condition variable.
 * Context: any thread (holding the mutex or not).
 * Return: 1 if one was woken, 0 if none waited.
 */
CL_INLINE int cl_cond_signal(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return 0;
	return cl_waitq_wake_one(&cv->wq);
}

/**
 * cl_cond_broadcast() - wake every waiter.
 * @cv: the condition variable.
 * Context: any thread.
 * Return: the number woken.
 */
CL_INLINE int cl_cond_broadcast(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return 0;
	return cl_waitq_wake_all(&cv->wq);
}

/* ---- with a timeout ---- */

/**
 * cl_mutex_lock_timeout() - cl_mutex_lock() for at most @timeout_ns.
 * @m: the mutex.
 * @timeout_ns: how long at most to wait (relative, ns).
 *
 * An unlock that hands @m over as the wait times out does so exactly
 * once: either this returns 0 holding @m, or it times out and the unlock
 * handed @m to the next waiter, or left it free.
 *
 * Context: a runtime task (outside a task only cl_mutex_trylock()).
 * Return: 0 (held), or -1 with errno ETIMEDOUT, EPERM (held, and the
 * caller is not a task), EINVAL (NULL @m).
 */
CL_INLINE int cl_mutex_lock_timeout(struct cl_mutex *m, uint64_t timeout_ns)
{
	return cl__mutex_lock_dl(m, cl__rt_deadline(timeout_ns));
}

/**
 * cl_cond_wait_timeout() - cl_cond_wait() for at most @timeout_ns.
 * @cv: the condition variable.
 * @m: a mutex the caller holds.
 * @timeout_ns: how long at most to wait for a signal (relative, ns).
 *
 * @m is taken again before it returns, also on a timeout (that wait has
 * no timeout). A signal racing the timeout wakes exactly one waiter: if
 * this one timed out, cl_cond_signal() woke another one, or none waited.
 *
 * Context: a runtime task holding @m.
 * Return: 0, or -1 with errno ETIMEDOUT (@m held again), EPERM (outside a
 * task, or the caller does not hold @m: @m untouched), EINVAL (NULL).
 */
CL_INLINE int cl_cond_wait_timeout(struct cl_cond *cv, struct cl_mutex *m, uint64_t timeout_ns)
{
	return cl__cond_wait_dl(cv, m, cl__rt_deadline(timeout_ns));
}

/**
 * struct cl_waitgroup - a count of outstanding work that tasks can wait to
 * reach 0 (a server's open connections before it exits).
 * @wq: where waiters sleep.
 * @count: outstanding work; never negative.
 *
 * Zeroed, or set up by cl_waitgroup_init(), it is empty.
 */
struct cl_waitgroup {
	struct cl_waitq wq;
	long count;
};

/* Lock @wg; a zeroed one gets its waiter list here. */
CL_INLINE void cl__waitgroup_lock(struct cl_waitgroup *wg)
{
	cl_waitq_lock(&wg->wq);
	if (!wg->wq.waiters.next)
		CDS_INIT_LIST_HEAD(&wg->wq.waiters);
}

/**
 * cl_waitgroup_init() - an empty wait-group.
 * @wg: the wait-group.
 *
 * Context: any thread; nothing else on @wg meanwhile.
 */
CL_INLINE void cl_waitgroup_init(struct cl_waitgroup *wg)
{
	if (CL__BAD_ARG(wg == NULL))
		return;
	cl_waitq_init(&wg->wq);
	wg->count = 0;
}

/**
 * cl_waitgroup_add() - add @delta (negative: work done) to the count.
 * @wg: the wait-group.
 * @delta: the change; the count must not drop below 0.
 *
 * Reaching 0 wakes every cl_waitgroup_wait*() caller.
 *
 * Context: any thread.
 * Return: 0, or -1 with errno EINVAL (NULL @wg, or a count that would go
 * negative: nothing changed).
 */
CL_INLINE int cl_waitgroup_add(struct cl_waitgroup *wg, long delta)
{
	long c;

	if (CL__BAD_ARG(wg == NULL))
		return -1;
	cl__waitgroup_lock(wg);
	c = wg->count + delta;
	if (c < 0) {
		cl_waitq_unlock(&wg->wq);
		errno = EINVAL;
		return -1;
	}
	wg->count = c;
	cl_waitq_unlock(&wg->wq);
	if (c == 0)
		(void)cl_waitq_wake_all(&wg->wq);
	return 0;
}

/**
 * cl_waitgroup_done() - one piece of work done: cl_waitgroup_add(@wg, -1).
 * @wg: the wait-group.
 *
 * Context: any thread.
 * Return: as cl_waitgroup_add().
 */
CL_INLINE int cl_waitgroup_done(struct cl_waitgroup *wg)
{
	return cl_waitgroup_add(wg, -1);
}

/**
 * cl_waitgroup_wait_timeout() - park until the count is 0, at most @timeout_ns.
 * @wg: the wait-group.
 * @timeout_ns: the longest to wait (0: only look; CL_FOREVER: no limit).
 *
 * Context: a runtime task holding no spinlock.
 * Return: 0 (the count was 0), or -1 with errno ETIMEDOUT, EINVAL (NULL
 * @wg) or EPERM (outside a task, with work outstanding).
 */
CL_INLINE int cl_waitgroup_wait_timeout(struct cl_waitgroup *wg, uint64_t timeout_ns)
{
	uint64_t dl = timeout_ns == CL_FOREVER ? 0 : cl__rt_deadline(timeout_ns);

	if (CL__BAD_ARG(wg == NULL))
		return -1;
	for (;;) {
		cl__waitgroup_lock(wg);
		if (wg->count == 0) {
			cl_waitq_unlock(&wg->wq);
			return 0;
		}
		if (cl__waitq_wait_dl(&wg->wq, dl) != 0)
			return -1; /* the lock is released */
	}
}

/**
 * cl_waitgroup_wait() - park until the count is 0.
 * @wg: the wait-group.
 *
 * Context: a runtime task holding no spinlock.
 * Return: as cl_waitgroup_wait_timeout() with CL_FOREVER.
 */
CL_INLINE int cl_waitgroup_wait(struct cl_waitgroup *wg)
{
	return cl_waitgroup_wait_timeout(wg, CL_FOREVER);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SYNC_H */
