/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/waitq.h - the wait queue of the M:N runtime and
 * the waiter-record helpers every blocking primitive of sync.h shares (the
 * pattern and the synchronization table: sync.h).
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_WAITQ_H
#define CACHELOCAL_SCHED_RUNTIME_WAITQ_H

CL_BEGIN_DECLS

/* votes for one worker, net, that make it a task's home (wake-affine, below) */
#define CL__RT_AFF_VOTES 4
/* workers that can be a home (the vote keeps the worker in 12 bits) */
#define CL__RT_AFF_MAX_HOME 0xfffu

/* Put the current task's waiter record (self->wait, its data already set)
 * on @list with @status (@list's lock held). */
CL_INLINE void cl__rt_wait_enlist(struct cl_rt_task *self, struct cds_list_head *list, short status)
{
	struct cl__rt_waiter *wt = &self->wait;

	wt->t = self;
	/* stays while it waits (the balancer moves queued tasks only); atomic:
	 * a stale watcher may read it (cl__rt_watch_begin()) */
	CL_WRITE_ONCE(wt->w, self->w);
	wt->status = status;
	CL_ATOMIC_STORE(&wt->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	self->w->watch_cand = wt;
	/* for its waker (cl__rt_wake_affine()), on the line it writes anyway */
	if (self->task.cpus_allowed || self->task.tg || !self->rt->wake_affine)
		wt->aff_flips = -1;
	else
		wt->aff_flips = (short)(self->wakee_flips < 0x7fffu ? self->wakee_flips : 0x7fffu);
	cds_list_add_tail(&wt->node, list);
}

/* Block the current task, its record enlisted under @lock (held; released
 * after the switch, or at once if the worker watches the record). */
CL_INLINE void cl__rt_wait_block(struct cl_rt_task *self, struct cl_ticketlock *lock)
{
	if (cl__rt_watch_early(self->w, lock)) {
		lock = NULL;
		CL_INJECT(67); /* watched, the wait list released, the switch not begun */
	}
	cl__rt_block(self, lock);
}

/*
 * Enqueue the current task's waiter record (self->wait, its data already
 * set) on @list and block; @lock is held by the caller and released after
 * the switch. Returns the record's status. A waker wakes it with
 * cl__rt_wake_rec().
 */
CL_INLINE int cl__rt_wait_rec(struct cl_rt_task *self, struct cds_list_head *list,
			      struct cl_ticketlock *lock)
{
	cl__rt_wait_enlist(self, list, -1);
	cl__rt_wait_block(self, lock);
	return self->wait.status;
}

/*
 * cl__rt_wait_rec() until @deadline (CLOCK_MONOTONIC ns; 0: none). With a
 * deadline the record waits with status CL__RT_WAIT_PENDING and a timer on
 * the worker's wheel (armed under @lock: the timer takes the record off
 * the list under @lock too, timer.h). Exactly one of a waker and the timer
 * ends the wait: the one that finds the record on the list. Returns the
 * status: 0 (woken), -1 (failed: a closed channel), CL__RT_WAIT_TIMEDOUT.
 * Woken by a waker, it disarms its timer (not preemptible meanwhile), or
 * waits for its firing to let go of the record, before it returns.
 */
CL_INLINE int cl__rt_wait_rec_dl(struct cl_rt_task *self, struct cds_list_head *list,
				 struct cl_ticketlock *lock, uint64_t deadline)
{
	int st;

	if (!deadline)
		return cl__rt_wait_rec(self, list, lock);
	cl__rt_wait_enlist(self, list, CL__RT_WAIT_PENDING);
	cl__rt_timer_arm(self->w, self, deadline, lock);
	cl__rt_wait_block(self, lock);
	st = self->wait.status;
	if (st != CL__RT_WAIT_TIMEDOUT)
		cl__rt_timer_disarm(self);
	return st;
}

/* errno for a failed cl__rt_wait_rec_dl() status @st: ETIMEDOUT, else @err. */
CL_INLINE int cl__rt_wait_fail(int st, int err)
{
	errno = st == CL__RT_WAIT_TIMEDOUT ? ETIMEDOUT : err;
	return -1;
}

/* Take every record off @from onto @to, each with @status written (the
 * list's lock held: a timed waiter's timer reads the status under it). */
CL_INLINE void cl__rt_waiters_take(struct cds_list_head *from, struct cds_list_head *to, short status)
{
	struct cds_list_head *pos;

	cds_list_for_each(pos, from)
		cl_container_of(pos, struct cl__rt_waiter, node)->status = status;
	cds_list_splice(from, to);
	CDS_INIT_LIST_HEAD(from);
}

/* Take the first waiter record off @list (lock held), or NULL. Its line is
 * taken for writing at once: the waker writes its status (and message). */
CL_INLINE struct cl__rt_waiter *cl__rt_waiter_pop(struct cds_list_head *list)
{
	struct cl__rt_waiter *wt;

	if (cds_list_empty(list))
		return NULL;
	wt = cl_container_of(list->next, struct cl__rt_waiter, node);
	cl__rt_prefetchw(wt);
	cds_list_del(&wt->node);
	return wt;
}

/*
 * Wake-affine (the kernel's wake_affine() with its wake_wide() guard, and
 * what Go's runnext does): a task woken by a task of another worker is
 * moved to the waker's worker and queued there, instead of being woken
 * where it blocked, when
 *  - it may move: no affinity (not pinned) and the root group (its record's
 *    aff_flips, written when it blocked: the waker reads no other line);
 *  - the waker's worker has nothing else to run (the waker is its only
 *    runnable task, no wakeup pending): the wakee runs as soon as the
 *    waker blocks, which in a request-reply pair is next. Or it has no
 *    more runnable tasks than the wakee's worker (the kernel's
 *    wake_affine_weight(), by task count): the move does not make the
 *    waker's worker the busier one, and tasks that wake each other gather
 *    (one remote rq line read, only for a wakee that may move);
 *  - the wakeup is not "wide" (wake_wide()): the waker, or the wakee, does
 *    not switch between many partners. Each task counts how often its
 *    wakee changes (wakee_flips, halved each second); with F workers, a
 *    pair where one side flips at least F times as often as the other, and
 *    the other at least F times, is a one-to-many pattern, spread over the
 *    workers rather than pulled onto one;
 *  - or, wide or not, the waker's worker is the wakee's home: most of its
 *    wakers ran there. Every wakeup through a record votes for the
 *    waker's worker (a majority vote kept in the record, which the waker
 *    writes anyway: CL__RT_AFF_VOTES more votes for one worker than
 *    against it make it the home, and the task's home_cpu). A group of
 *    tasks that all wake each other (a hackbench group: every sender
 *    wakes every receiver, every wakeup "wide") gathers on the worker
 *    where most of it runs. The load rule above is looser for it: the
 *    waker's worker may be up to twice as busy as the wakee's, plus 2.
 *    The balancer moves tasks homed on the busiest rq last (balance.h),
 *    so an even spread of whole groups is what stays;
 *  - the wakee is off its old rq entirely: not queued and not that rq's
 *    curr (a direct hand-off leaves a blocked task as its rq's stale curr,
 *    cl__rt_handoff_sync()). Checked under both rq locks, which the move
 *    needs anyway (the task's cpu changes only under both: queue.h).
 * The move costs the two locks once; from then on the pair wakes each other
 * on one worker, with direct hand-offs. A worker left idle pulls queued
 * tasks as before (the balancer); a wakee that waits there while its waker
 * keeps running is marked for wakeup preemption as a local wakeup is.
 * Off with CL_RUNTIME_NO_WAKE_AFFINE.
 */
CL_INLINE void cl__rt_record_wakee(struct cl_rt_task *self, struct cl_rt_task *t)
{
	uint64_t now = self->w->now_ns;

	if (CL_UNLIKELY(now - self->flips_decay_ns > 1000000000ULL)) {
		self->wakee_flips >>= 1;
		self->flips_decay_ns = now;
	}
	if (self->last_wakee != t) {
		self->last_wakee = t;
		self->last_claimed = 0;
		self->wakee_flips++;
	}
}

/* One side flips between partners at least F times as often as the other,
 * which flips at least F times (F: the workers): spread, do not pull. */
CL_INLINE int cl__rt_wake_wide(const struct cl_rt_task *self, unsigned int slave, unsigned int factor)
{
	unsigned int master = self->wakee_flips;

	if (master < slave) {
		unsigned int x = master;

		master = slave;
		slave = x;
	}
	return slave >= factor && master >= slave * factor;
}

/* A wakeup of @wt's task by a task on worker @cpu: one vote of the
 * majority vote for its home (Boyer-Moore, capped at twice the threshold
 * so that a new majority takes over within a few wakeups). home_cpu is
 * written only when the vote crosses the threshold, either way. */
CL_INLINE void cl__rt_vote_home(struct cl__rt_waiter *wt, unsigned int cpu)
{
	unsigned int home = wt->aff_vote >> 4, votes = wt->aff_vote & 15u;

#ifdef CL_RUNTIME_NO_HOME /* (measuring what homes save: docs/runtime.md) */
	return;
#endif

	if (home == cpu) {
		if (votes < 2 * CL__RT_AFF_VOTES && ++votes == CL__RT_AFF_VOTES)
			CL_WRITE_ONCE(wt->t->task.home_cpu, (int)cpu);
	} else if (votes > 0) {
		if (votes-- == CL__RT_AFF_VOTES)
			CL_WRITE_ONCE(wt->t->task.home_cpu, -1);
	} else if (cpu < CL__RT_AFF_MAX_HOME) { /* (beyond: no home) */
		home = cpu;
		votes = 1;
	}
	wt->aff_vote = (uint16_t)(home << 4 | votes);
}

/* Try to move @wt's task to @self's worker and queue it there (see above).
 * Return: 1 if done (it is @self's worker's), 0: wake it where it blocked.
 * Context: @self non-preemptible, no rq lock held. */
CL_INLINE int cl__rt_wake_affine(struct cl_rt_task *self, struct cl__rt_waiter *wt)
{
	struct cl__rt_worker *w = self->w, *tw = wt->w;
	struct cl_rt_task *t = wt->t;
	struct cl_rq *rq = w->rq;
	unsigned int busy, nr;
	int moved = 0, home;

	if (wt->aff_flips < 0)
		return 0;
	home = wt->aff_vote >> 4 == w->cpu && (wt->aff_vote & 15u) >= CL__RT_AFF_VOTES;
	if (!home && cl__rt_wake_wide(self, (unsigned int)wt->aff_flips, w->rt->nr_workers))
		return 0;
	busy = CL_READ_ONCE(rq->nr_running) + w->nr_wakes;
	nr = CL_READ_ONCE(tw->rq->nr_running);
	if ((busy > 1 || cl__rt_remote_pending(w)) && busy > (home ? 2 * nr + 2 : nr))
		return 0; /* not idle otherwise, and busier than where it blocked (home: twice, + 2) */
	cl_rq_lock_two(tw->rq, rq);
	/* allowed: its affinity may have changed since it wrote its record.
	 * Its context saved (rc.on_cpu 0, see cl__rt_switch()): a task that
	 * came by a direct hand-off is neither queued nor the rq's curr while
	 * it runs, and one that released its wait list at the block
	 * (cl__rt_watch_early()) may still run here; moved, it would be
	 * resumed elsewhere from its old context (its watcher takes the
	 * wakeup instead: a claim) */
	if (!t->task.on_rq && !t->task.on_cpu && !CL_ATOMIC_LOAD(&t->rc.on_cpu, CL_ACQUIRE) &&
	    cl_task_allowed_on(&t->task, rq->cpu) &&
	    cl_rq_enqueue(rq, &t->task, CL_ENQUEUE_WAKEUP) == 0) {
		CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
		t->w = w; /* and again when it runs (cl__rt_set_curr()) */
		moved = 1;
	}
	cl_rq_unlock_two(tw->rq, rq);
	if (moved) {
		w->nr_affine_wakes++;
		cl__rt_wake_mark_local(w); /* the waker may go on running: see cl__rt_wake_from() */
	}
	return moved;
}

/* cl__rt_wake_rec() by @self, which holds a runtime lock's non-preemptible
 * count (NULL outside tasks): no TLS read, no count of its own. Moved to
 * @self's worker if it may (cl__rt_wake_affine()), else woken where it
 * blocked. */
CL_ALWAYS_INLINE void cl__rt_wake_rec_as(struct cl_rt_task *self, struct cl__rt_waiter *wt)
{
	if (self) {
		cl__rt_record_wakee(self, wt->t);
		if (wt->aff_flips >= 0)
			cl__rt_vote_home(wt, self->w->cpu);
		if (CL_LIKELY(wt->w == self->w))
			goto local;
		if (cl__rt_wake_affine(self, wt))
			return;
	}
	if (cl__rt_watch_claim(wt)) {
		if (self)
			self->last_claimed = 1;
		return;
	}
local:
	cl__rt_wake_from(self, wt->w, wt->t, &wt->rnode);
}

/*
 * Before @self takes the lock of a channel to send: start taking, for
 * writing, the record of the task it woke last, if that wakeup was a
 * claim on its watched record (last_claimed). In a request-reply pair
 * across two workers it is the record the send will write, found
 * otherwise only through the list, i.e. after the lock's line arrives:
 * the two misses then overlap instead of following each other. (Not in a
 * receive: there it would take the record from the task just woken,
 * which writes it when it blocks next.)
 */
CL_ALWAYS_INLINE void cl__rt_prefetch_claimed(const struct cl_rt_task *self)
{
	if (self && self->last_claimed)
		cl__rt_prefetchw(&self->last_wakee->wait);
}

/* cl__rt_wake_rec() - cl__rt_wake() of @wt's task (a cl__rt_wait_rec() record
 * off its list, status written): remote, it writes no line of the wakee but
 * @wt's (worker read there, node linked there), unless it moves it
 * (wake-affine, above). @wt is the wakee's after. */
CL_INLINE void cl__rt_wake_rec(struct cl__rt_waiter *wt)
{
	struct cl_rt_task *self = cl__rt_np_enter(); /* the wake list, the worker: ours until done */

	cl__rt_wake_rec_as(self, wt);
	if (self) { /* no yield here: this may run in cl__rt_finish() */
		CL_BARRIER();
		CL_WRITE_ONCE(self->np, self->np - 1);
	}
}

/* Error for a blocking call made outside a task. */
CL_INLINE struct cl_rt_task *cl__rt_need_task(void)
{
	struct cl_rt_task *self = cl__rt_current();

	if (!self)
		errno = EPERM;
	return self;
}

/* ---- wait queue ---- */

/*
 * struct cl_waitq - tasks waiting for an event the caller defines. The
 * condition is checked by the caller under the queue's lock
 * (cl_waitq_lock()), so a wakeup between the check and the sleep cannot be
 * lost: cl_waitq_wait() is called with the lock held.
 */
struct cl_waitq {
	struct cl_ticketlock lock;
	struct cds_list_head waiters;
};

/**
 * cl_waitq_init() - an empty queue.
 * @wq: the queue.
 *
 * Context: before use.
 */
CL_INLINE void cl_waitq_init(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl_ticket_init(&wq->lock);
	CDS_INIT_LIST_HEAD(&wq->waiters);
}

/**
 * cl_waitq_lock() - take @wq's lock (to check the condition).
 * @wq: the queue.
 *
 * Context: any.
 */
CL_INLINE void cl_waitq_lock(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl__rt_lock(&wq->lock);
}

/**
 * cl_waitq_unlock() - release @wq's lock.
 * @wq: the queue.
 *
 * Context: the holder.
 */
CL_INLINE void cl_waitq_unlock(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl__rt_unlock(&wq->lock);
}

/* cl_waitq_wait() until @deadline (cl__rt_wait_rec_dl(); 0: none). */
CL_INLINE int cl__waitq_wait_dl(struct cl_waitq *wq, uint64_t deadline)
{
	struct cl_rt_task *self;
	int st;

	if (CL__BAD_ARG(wq == NULL))
		return -1;
	self = cl__rt_need_task();
	if (!self) {
		cl__rt_unlock(&wq->lock);
		return -1;
	}
	self->wait.data = NULL;
	st = cl__rt_wait_rec_dl(self, &wq->waiters, &wq->lock, deadline);
	return st ? cl__rt_wait_fail(st, EINTR) : 0;
}

/**
 * cl_waitq_wait() - sleep on @wq until woken.
 * @wq: the queue, locked by the caller (who found its condition false).
 *
 * Returns with the lock released (recheck the condition: a broadcast or a
 * wake meant for another condition also wakes).
 *
 * Context: a runtime task holding @wq's lock and no other spinlock.
 * Return: 0, or -1 with errno EPERM outside a task (the lock is then
 * released too).
 */
CL_INLINE int cl_waitq_wait(struct cl_waitq *wq)
{
	return cl__waitq_wait_dl(wq, 0);
}

/**
 * cl_waitq_wait_timeout() - cl_waitq_wait() for at most @timeout_ns.
 * @wq: the queue, locked by the caller (who found its condition false).
 * @timeout_ns: how long at most (relative, ns; 0: the wait ends at once
 *              unless a wake is already on its way, after a switch).
 *
 * Returns with the lock released. A wake racing the timeout is delivered
 * exactly once: either this returns 0 (the wake was for this task), or it
 * times out and the wake went to another waiter (cl_waitq_wake_one()
 * takes the next one) or to none.
 *
 * Context: a runtime task holding @wq's lock and no other spinlock.
 * Return: 0, or -1 with errno ETIMEDOUT, EPERM outside a task (the lock is
 * then released too), EINVAL (NULL @wq).
 */
CL_INLINE int cl_waitq_wait_timeout(struct cl_waitq *wq, uint64_t timeout_ns)
{
	return cl__waitq_wait_dl(wq, cl__rt_deadline(timeout_ns));
}

/**
 * cl_waitq_wake_one() - wake the longest waiting task.
 * @wq: the queue (not locked by the caller).
 *
 * Takes the queue's lock, a ticket lock (FIFO among its takers): calling this
 * in a tight loop until a task shows up can keep the tasks that want to
 * sleep on @wq from getting that lock for a long time. Wait for a condition
 * the waiters set instead.
 *
 * Context: any thread.
 * Return: 1 if a task was woken, 0 if none waited.
 */
CL_INLINE int cl_waitq_wake_one(struct cl_waitq *wq)
{
	struct cl__rt_waiter *wt;

	if (CL__BAD_ARG(wq == NULL))
		return 0;
	cl__rt_lock(&wq->lock);
	wt = cl__rt_waiter_pop(&wq->waiters);
	if (!wt) {
		cl__rt_unlock(&wq->lock);
		return 0;
	}
	wt->status = 0;
	cl__rt_unlock(&wq->lock);
	cl__rt_wake_rec(wt);
	return 1;
}

/**
 * cl_waitq_wake_all() - wake every waiting task.
 * @wq: the queue (not locked by the caller).
 *
 * Context: any thread.
 * Return: the number woken.
 */
CL_INLINE int cl_waitq_wake_all(struct cl_waitq *wq)
{
	struct cds_list_head list;
	int n = 0;

	if (CL__BAD_ARG(wq == NULL))
		return 0;
	CDS_INIT_LIST_HEAD(&list);
	cl__rt_lock(&wq->lock);
	cl__rt_waiters_take(&wq->waiters, &list, 0);
	cl__rt_unlock(&wq->lock);
	while (!cds_list_empty(&list)) {
		cl__rt_wake_rec(cl__rt_waiter_pop(&list));
		n++;
	}
	return n;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_WAITQ_H */
