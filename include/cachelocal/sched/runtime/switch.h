/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/switch.h - the switch and the pick.
 *
 * cl__rt_switch() and the direct hand-off to the next task, balancing and
 * next buddies (what a switch consults), cl__rt_schedule() (the pick after
 * a block, a yield, a preemption or an exit), the wakeup-preemption check,
 * the exit of the non-preemptible count (cl__rt_np_exit(): it acts on a
 * preemption mark), the runtime locks, and blocking (cl__rt_block()).
 * A task that resumes reaps its worker's I/O (iopoll.h) once the switch
 * is finished.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SWITCH_H
#define CACHELOCAL_SCHED_RUNTIME_SWITCH_H

CL_BEGIN_DECLS

/* ---- switching ---- */

/*
 * cl__rt_switch() - suspend @from, resume @to on worker @w (same thread).
 * Returns, in @from, the worker that resumed it. @exiting: @from never
 * resumes (ASan drops its fake stack).
 *
 * @to may have been made runnable (a wakeup, a claim, a wait list's lock
 * released early) while its last worker has not yet saved its context:
 * its saved stack pointer is then an old one. As the kernel waits for
 * task_struct.on_cpu before it runs a task elsewhere, the switch waits
 * until @to's on_cpu is 0: cleared by the context that its worker resumed
 * (cl__rt_finish()), after the save.
 */
CL_INLINE struct cl__rt_worker *cl__rt_switch(struct cl__rt_worker *w, struct cl__rt_ctx *from,
					      struct cl__rt_ctx *to, int exiting)
{
	void *r;

	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&to->on_cpu, CL_ACQUIRE))) {
		w->nr_oncpu_waits++;
		while (CL_ATOMIC_LOAD(&to->on_cpu, CL_ACQUIRE))
			CL_CPU_RELAX();
	}
	CL_ATOMIC_STORE(&to->on_cpu, 1, CL_RELAXED);
	w->fin.from = from;
#ifdef CL_HAVE_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
#ifdef CL__RT_ASAN
	__sanitizer_start_switch_fiber(exiting ? NULL : &from->asan_fake, to->stack_lo, to->stack_size);
#else
	(void)exiting;
#endif
	cl__rt_stack_check(from, cl__rt_sp(), ", seen at a switch"); /* overflow.h */
	r = cl__ctx_switch(&from->ctx, &to->ctx, w);
#ifdef CL__RT_ASAN
	__sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
	return (struct cl__rt_worker *)r;
}

/* cl__rt_finish() - run first by whatever context a switch resumes, on @w:
 * release what the previous context held across the switch (the rq lock,
 * its wait-list lock) and retire it if it exited. */
CL_INLINE void cl__rt_finish(struct cl__rt_worker *w)
{
	struct cl_rt_task *prev = w->fin.prev;
	struct cl_ticketlock *unlock = w->fin.unlock;
	int mode = w->fin.mode;

	/* saved: another worker may switch to it now (cl__rt_switch()) */
	CL_ATOMIC_STORE(&w->fin.from->on_cpu, 0, CL_RELEASE);
	w->fin.prev = NULL;
	w->fin.unlock = NULL;
	if (mode != CL__RT_HANDOFF)
		cl__rq_unlock(w->rq);
	if (unlock)
		(void)cl_ticket_unlock(unlock);
	if (prev && mode == CL__RT_EXIT) {
		struct cds_list_head waiters, *pos;

		cl__rt_guard_check_exit(prev); /* a checked guard written to: abort (overflow.h) */
		CDS_INIT_LIST_HEAD(&waiters);
		cl__rt_task_detach(prev); /* before a joiner can see it exited */
		cl_ticket_lock(&prev->join_lock);
		CL_ATOMIC_STORE(&prev->exited, 1, CL_SEQ_CST);
		/* each status under the lock: a timed joiner's timer reads it there */
		cds_list_for_each(pos, &prev->join_waiters)
			cl_container_of(pos, struct cl__rt_waiter, node)->status = 0;
		cds_list_splice(&prev->join_waiters, &waiters);
		CDS_INIT_LIST_HEAD(&prev->join_waiters);
		(void)cl_ticket_unlock(&prev->join_lock);
		if (CL_ATOMIC_LOAD(&prev->ext_joiner, CL_SEQ_CST))
			cl__futex_wake(&prev->exited, INT_MAX);
		cl__rt_wake_waiters(&waiters);
		cl__rt_live_add(w->rt, -1);
		cl__rt_task_put(prev);
	}
}

/* A switch answers the slice and wake marks; a timer mark stays until a
 * task's preemption check fires the timers (cl__rt_preempt_due()). A mark
 * the tick sets meanwhile may be lost: it sets it again a look later. */
CL_INLINE void cl__rt_marks_answered(struct cl__rt_worker *w)
{
	CL_ATOMIC_STORE(&w->preempt_pending, CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED) & CL__RT_PP_TIMER,
			CL_RELAXED);
}

/* Make @t the worker's current task (before switching to it). */
CL_INLINE void cl__rt_set_curr(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	w->curr = t;
	t->w = w;
	cl__rt_tls_current = t;
	if (CL_UNLIKELY(t->ext_cpu)) { /* it runs: see cl__rt_ext_mark() */
		CL_ATOMIC_FETCH_SUB(&w->rt->workers[t->ext_cpu - 1].nr_ext_waiting, 1u, CL_RELAXED);
		t->ext_cpu = 0;
	}
	/* a new slice: for the tick (cl__rt_tick_main()) */
	CL_ATOMIC_STORE(&w->nr_switches, w->nr_switches + 1, CL_RELAXED);
	if (CL_UNLIKELY(!w->in_task))
		CL_ATOMIC_STORE(&w->in_task, 1, CL_RELAXED);
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED)))
		cl__rt_marks_answered(w);
}

/* ---- balancing and next buddies ---- */

/*
 * cl__rt_balance() - one balancing pass for @w (pull from the busiest rq);
 * a busy worker with tasks waiting also kicks a sleeping worker, which
 * then pulls in its own idle balance.
 */
CL_INLINE void cl__rt_balance(struct cl__rt_worker *w, uint64_t now)
{
	w->last_balance_ns = now;
	if (w->rt->nr_workers < 2)
		return;
	cl_balance_run(w->rt->sched, w->cpu, now, NULL);
	if (CL_READ_ONCE(w->rq->nr_running) >= 2)
		cl__rt_kick_idle(w->rt, w->cpu);
}

/*
 * Next buddies (cl_rq_set_next_buddy(), the kernel's yield_to()). A task
 * that blocks in cl_join() names the task it waits for, and a task that
 * exits names the joiner it woke: the switch that follows runs that one
 * next if it is queued there and eligible (w->buddy, used by that switch
 * under the rq lock). The named task may be queued on, moving to or
 * running at another worker: the switch reads its queue state with
 * cl__task_queued_here(), which reads only the task's atomically stored
 * on_rq and cpu until they say it is queued on this worker's rq, whose
 * lock orders everything else it reads.
 *
 * A spawn/join tree then runs depth-first, as a work-first runtime runs
 * it: the joinee runs as soon as its parent waits,
 * the parent as soon as its joinee is done, and the queue holds about one
 * task per level of the tree instead of a breadth of spawned, not yet
 * started tasks (each with its stack).
 *
 * Hints (w->hint, the buddy when there is none and no task queued from
 * elsewhere waits to run: see cl__rt_chain_beside()): a task that blocks on a
 * full channel names the task that last received from it, one that blocks
 * on an empty channel the task that last sent to it (cl__chan_hint()).
 * The receiver of a full channel then drains it while its messages are
 * still in this CPU's cache, instead of the fair class running first the
 * receivers that have less to do (and so are owed more time) one message
 * each while the sender waits (the kernel's NEXT_BUDDY reasoning: the task
 * that will consume what was just written). A hint is a bare pointer: the
 * task may have exited since and its descriptor may be in the cache or
 * reused, so it is tested as described above before anything else of it is
 * read (cl_task_init() stores on_rq and cpu atomically for that).
 *
 * Fairness. Outside a chain a buddy must be eligible (cl_rq_set_next_buddy()).
 * Within the protected slice of the fair-class pick that started the chain
 * (wake_preempt_ns not reached), a buddy may be up to one of its slices
 * ahead of its share (a woken joiner ran a little before it blocked, and
 * among many queued tasks V moves too slowly to repay that before the
 * joinee is done), and the switch to it keeps that slice's end instead of
 * protecting a new one: the chain runs for one slice as one task would
 * (RUN_TO_PARITY), each of its tasks within the lag bound of two slices,
 * and then the fair class picks among all queued tasks again.
 * Return: 1 if the buddy (*@bp, or @hint: *@bp is set to the one named, or
 * NULL) was named within the chain's slice (its end stays).
 */
CL_INLINE int cl__rt_set_buddy(struct cl__rt_worker *w, struct cl_rt_task **bp, struct cl_rt_task *hint,
			       uint64_t now)
{
	struct cl_rq *rq = w->rq;
	struct cl_rt_task *t = *bp;
	uint64_t end = CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED);

	/* the rt test first: cl__task_queued_here() wants a task of this instance */
	if (t && (t->rt != w->rt || rq->curr == &t->task || !cl__task_queued_here(rq, &t->task)))
		t = NULL;
	/* a hint is of this instance (cl__chan_hint()) but may have exited:
	 * nothing of it but on_rq and cpu (atomic) is read until they say it
	 * is queued here, which our rq lock then orders after its spawn; not
	 * while a task queued from elsewhere waits to run (as a hand-off
	 * chain, cl__rt_chain_beside(): the fair class picks until it ran) */
	if (!t && hint && !CL_ATOMIC_LOAD(&w->nr_ext_waiting, CL_RELAXED) && rq->curr != &hint->task &&
	    cl__task_queued_here(rq, &hint->task))
		t = hint;
	*bp = t;
	if (!t)
		return 0;
	if (end && now < end && cl__set_next_buddy(rq, &t->task, 1))
		return 1;
	(void)cl__set_next_buddy(rq, &t->task, 0);
	return 0;
}

/* ---- the switch ---- */

/*
 * Direct hand-off. An uncontended hand-off within the same tick (see
 * cl__rt_schedule(): the clock stands still, so the fair class would
 * charge nothing) is done without the rq lock and without touching the rq:
 * @self blocks and the worker switches straight to the one task on its
 * wake list. The rq keeps the task it last picked as its curr (queued,
 * on_cpu), although that task may now be blocked, and knows nothing of the
 * wakee. A chain of such hand-offs (a ping-pong pair) takes no rq lock at
 * all: per round trip two locked instructions fewer than the full switch.
 *
 * Why that is safe:
 *  - Nothing else changes the rq's view of these tasks: the balancer never
 *    moves an rq's curr and never sees a task that is not queued; the
 *    handed-to task runs, so nobody can wake it.
 *  - A remote waker of the rq's stale curr (blocked, but still queued) takes
 *    the rq lock, finds it queued, records that (stale_woken) and sets the
 *    worker's `resched` flag instead of enqueueing it; a remote wakeup of any other
 *    task is on the remote wake list. Either stops the chain at its next
 *    switch (the fast path requires an empty remote list and no resched),
 *    which then takes the rq lock and brings the rq up to date first
 *    (cl__rt_handoff_sync()). A spawn onto the rq raises nr_running, which
 *    stops a chain that runs alone (nr_running == 1); one that runs beside
 *    queued tasks (unless built with CL_RUNTIME_NO_CHAIN_BESIDE) stops when the tick's mark
 *    says its slice is over (cl__rt_chain_beside()).
 *    A chain that ends (its last task blocks with nothing on the wake list)
 *    also takes the full path, so no wakeup waits on a chain that stopped.
 *  - The rq lock still orders the worker's sleep against remote wakers: a
 *    worker only goes idle through the full path.
 *  - The wait-list lock @unlock is released by the next context as before
 *    (the blocked task's context is saved before a waker can find it).
 * Only tasks of the root group take it (a group on the way could be
 * throttled, which only the full path handles); any other switch is full.
 */
/*
 * Chains beside queued tasks. A chain of hand-offs goes on beside other
 * queued tasks for the protected slice of the pick that started it, as one
 * task would: the tick marks the worker once that slice is over
 * (cl__rt_tick_main()), and the next switch then takes the full path and
 * the fair class picks, charging the chain's time to the task switching
 * out there (the sampled clock, cl__rt_schedule()). Only with preemption on (the tick
 * enforces the bound) and no mark pending.
 * A task queued from elsewhere meanwhile (a remote wakeup, also of the
 * rq's stale curr, or a spawn: cl__rt_ext_mark()) must not wait for that
 * slice to end: it stops the chain at its next switch (the remote list or
 * `resched`), and until it has run every switch of the worker takes the
 * full path, where the fair class picks by deadline with the clock read at
 * each switch, so the wakee runs as soon as it is eligible
 * (test_sched_runtime: task_woken_from_outside_during_a_hand_off_chain_
 * runs_promptly). Built with CL_RUNTIME_NO_CHAIN_BESIDE: never (a pair
 * beside a spinning task then switches through the full path and keeps
 * less of its solo rate).
 */
CL_INLINE int cl__rt_chain_beside(struct cl__rt_worker *w, int mode)
{
#ifndef CL_RUNTIME_NO_CHAIN_BESIDE
	return mode == CL__RT_BLOCK && w->nr_wakes == 1 &&
	       CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED) != 0 &&
	       !CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED) &&
	       !CL_ATOMIC_LOAD(&w->nr_ext_waiting, CL_RELAXED);
#else
	(void)w;
	(void)mode;
	return 0;
#endif
}

CL_INLINE int cl__rt_can_hand_off(struct cl__rt_worker *w, struct cl_rt_task *self, int mode)
{
#ifdef CL_RUNTIME_NO_HANDOFF /* (measuring what hand-offs save: docs/runtime.md) */
	(void)w;
	(void)self;
	(void)mode;
	return 0;
#endif
	return mode == CL__RT_BLOCK && w->nr_wakes == 1 && !self->task.tg && !w->wake_head->task.tg &&
	       (CL_READ_ONCE(w->rq->nr_running) == 1 || cl__rt_chain_beside(w, mode)) &&
	       !CL_READ_ONCE(w->resched) && !cl__rt_remote_pending(w);
}

CL_INLINE void cl__rt_hand_off(struct cl__rt_worker *w, struct cl_rt_task *self,
			       struct cl_ticketlock *unlock)
{
	struct cl_rt_task *n = w->wake_head;

	w->wake_head = NULL;
	w->wake_tail = &w->wake_head;
	w->nr_wakes = 0;
	n->wake_next = NULL;
	w->nr_handoffs++;
	w->fin.prev = self;
	w->fin.unlock = unlock;
	w->fin.mode = CL__RT_HANDOFF;
	cl__rt_set_curr(w, n);
	w = cl__rt_switch(w, &self->rc, &n->rc, 0);
	/* resumed, maybe on another worker */
	cl__rt_finish(w);
	cl__rt_io_reap(w, 0); /* I/O that completed: its tasks on the wake list (iopoll.h) */
	if (CL_UNLIKELY((int64_t)(w->now_ns - w->last_balance_ns) > (int64_t)w->rt->balance_ns))
		cl__rt_balance(w, w->now_ns);
}

/*
 * cl__rt_handoff_sync() - bring @w's rq up to date after direct hand-offs,
 * before a full switch of @self: the rq's curr (the last task it picked)
 * leaves its curr slot (requeued if a waker recorded it under this lock or
 * it is on the wake list, else dequeued as blocked), and @self, which the
 * rq does not know, is enqueued and made curr. Done with the clock of the
 * last switch: the full switch that follows charges @self.
 * Context: @w's rq lock held.
 */
CL_INLINE void cl__rt_handoff_sync(struct cl__rt_worker *w, struct cl_rt_task *self)
{
	struct cl_rq *rq = w->rq;
	struct cl_task *r = rq->curr;

	CL_WRITE_ONCE(w->resched, 0);
	if (CL_LIKELY(r == &self->task))
		return;
	if (r) {
		struct cl_rt_task *rt_r = (struct cl_rt_task *)r->data, *q;
		/* woken for good: under this lock by a remote waker, or locally (on
		 * the wake list). Not its state: a remote waker writes that before it
		 * takes this lock, and if we kept the task queued on the strength of
		 * it, the task could run and block again before that waker's enqueue,
		 * which would then wake it a second time. */
		int woken = rt_r->stale_woken;

		for (q = w->wake_head; q && !woken; q = q->wake_next)
			woken = q == rt_r;
		rt_r->stale_woken = 0;
		if (!woken)
			cl_rq_dequeue(rq, r, CL_DEQUEUE_SLEEP);
		cl_rq_put_prev(rq);
	}
	cl_rq_enqueue(rq, &self->task, CL_ENQUEUE_WAKEUP);
	cl_rq_set_curr(rq, &self->task);
}

/*
 * cl__rt_schedule() - the running task @self stops running on @w (yield,
 * block or exit) and the worker runs the next task of its rq, or its idle
 * loop. @unlock (may be NULL) is a wait-list lock the caller holds: it is
 * released once @self's context is saved (cl__rt_finish()), or before the
 * switch to an idle loop that watches @self's record (cl__rt_watch_idle()):
 * a waker that finds @self on that list never starts it while it runs here.
 *
 * Clock. A switch where the pick has a choice (another task is runnable
 * besides the one that will run) reads the clock (cl__rt_now()) and
 * charges the outgoing task exactly. An uncontended hand-off (@self blocks
 * or exits and at most one task is runnable, or @self yields alone) makes
 * no scheduling decision, and reads it only if the kernel's tick clock
 * (cl__rt_tick_ns(), ~6 ns from the vDSO against ~15-40 ns for the TSC
 * read plus the accounting it triggers) moved since the last such read;
 * otherwise the rq clock stands still and the fair class charges nothing.
 * The time since the last reading then goes, at the next reading, to the
 * task switching out there: the first one after a tick, i.e. the one
 * running when the tick came. A task is thus charged its running time in
 * expectation (sampled at the tick, as statistical accounting does) and
 * each charge is off by at most one tick period plus one run. Exact
 * accounting at every switch: CL_RUNTIME_PRECISE_CLOCK.
 *
 * Context: a task on @w; holds no rq lock. Returns when @self runs again.
 */
CL_INLINE void cl__rt_schedule(struct cl__rt_worker *w, struct cl_rt_task *self, int mode,
			       struct cl_ticketlock *unlock)
{
	struct cl_rq *rq = w->rq;
	/* at most this many runnable (self included, wakes pending): no choice */
	unsigned int solo = mode == CL__RT_YIELD || mode == CL__RT_PREEMPT ? 1u : 2u;
	int hand_off = !w->rt->precise_clock &&
		       (CL_READ_ONCE(rq->nr_running) + w->nr_wakes <= solo || cl__rt_chain_beside(w, mode));
	uint64_t now = w->now_ns;
	struct cl_task *next;
	struct cl_rt_task *n, *buddy = w->buddy, *hint = w->hint;
	int chained = 0;

	w->buddy = w->hint = NULL;
	/* the clock (see above), read before the lock */
	if (!hand_off) {
		now = cl__rt_now(w->rt);
		w->nr_clock_reads++;
	} else {
		uint64_t tick = cl__rt_tick_ns();

		if (tick == w->tick_seen && cl__rt_can_hand_off(w, self, mode)) {
			cl__rt_hand_off(w, self, unlock);
			return;
		}
		if (tick != w->tick_seen) {
			w->tick_seen = tick;
			now = cl__rt_now(w->rt);
			w->nr_clock_reads++;
			hand_off = 0;
		}
	}
	cl__rq_lock(rq);
	cl__rt_drain_remote(w); /* before the sync: the rq's stale curr may be on it */
	cl__rt_handoff_sync(w, self);
	if (hand_off) {
		if (CL_UNLIKELY(rq->nr_running + w->nr_wakes > solo)) {
			now = cl__rt_now(w->rt); /* a remote wakeup came in: the pick has a choice */
			w->nr_clock_reads++;
		} else {
			w->nr_clock_skips++;
		}
	}
	w->now_ns = now;
	cl__rq_update_clock(rq, now);
	cl__rt_flush_wakes(w, 0);
	/* preempted: requeued by the pick with its deadline (the kernel's
	 * put_prev_entity()); a yield gives up the rest of the slice */
#ifdef CL_RUNTIME_NO_BUDDY /* (measuring what buddies save: docs/runtime.md) */
	buddy = hint = NULL;
#endif
	if (buddy || hint) /* before the dequeue: see cl_rq_set_next_buddy() */
		chained = cl__rt_set_buddy(w, &buddy, hint, now);
	if (mode == CL__RT_YIELD)
		cl_rq_yield(rq);
	else if (mode != CL__RT_PREEMPT)
		cl_rq_dequeue(rq, &self->task, CL_DEQUEUE_SLEEP);
	next = cl_rq_pick_next(rq);
	if (CL_UNLIKELY(next && w->watching))
		cl__rt_watch_drop(w); /* watched early (cl__rt_watch_early()), but not idle after all */
	if (next && !(chained && next == &buddy->task)) /* a chain keeps its slice's end */
		cl__rt_set_protect(w, next, now);
	else if (!next)
		CL_ATOMIC_STORE(&w->wake_preempt_ns, 0, CL_RELAXED);
	if (next == &self->task) {
		/* picked again: a new slice, marks answered (cl__rt_set_curr()) */
		if (CL_UNLIKELY(CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED)))
			cl__rt_marks_answered(w);
		cl__rq_unlock(rq);
		return;
	}
	w->fin.prev = self;
	w->fin.unlock = unlock;
	w->fin.mode = mode;
	if (next) {
		n = (struct cl_rt_task *)(void *)next;
		cl__rt_set_curr(w, n);
		w = cl__rt_switch(w, &self->rc, &n->rc, mode == CL__RT_EXIT);
	} else {
		w->curr = NULL;
		cl__rt_tls_current = NULL;
		CL_ATOMIC_STORE(&w->in_task, 0, CL_RELAXED);
		if (unlock && mode == CL__RT_BLOCK)
			cl__rt_watch_idle(w, unlock); /* may release @unlock now */
		CL_INJECT(66); /* to idle, the context not saved yet */
		w = cl__rt_switch(w, &self->rc, &w->sched, mode == CL__RT_EXIT);
	}
	/* resumed, maybe on another worker */
	cl__rt_finish(w);
	cl__rt_io_reap(w, 0); /* I/O that completed: its tasks on the wake list (iopoll.h) */
	if (CL_UNLIKELY((int64_t)(w->now_ns - w->last_balance_ns) > (int64_t)w->rt->balance_ns))
		cl__rt_balance(w, w->now_ns);
}

/*
 * cl__rt_wake_check() - the wakeup-preemption check for @self, running on
 * @w (see cl__rt_set_protect()): enqueue the pending wakeups (remote and
 * local) with the rq up to date, and tell whether one of them should run
 * instead of @self (EEVDF: an eligible entity with an earlier deadline,
 * once @self's slice is no longer protected), or, as the kernel's tick
 * does, whether @self's slice is over with other tasks queued.
 * Clears CL__RT_PP_WAKE. If not, wakees wait for the next switch, and the
 * next check is one slice later at the earliest.
 *
 * Context: @self on @w, non-preemptible; holds no rq lock.
 * Return: 1 if @self should be preempted (cl__rt_schedule(CL__RT_PREEMPT)).
 */
CL_INLINE int cl__rt_wake_check(struct cl__rt_worker *w, struct cl_rt_task *self)
{
	struct cl_rq *rq = w->rq;
	uint64_t now;
	int resched;

	CL_ATOMIC_FETCH_AND(&w->preempt_pending, ~CL__RT_PP_WAKE, CL_RELAXED);
	now = cl__rt_now(w->rt);
	w->nr_clock_reads++;
	cl__rq_lock(rq);
	cl__rt_drain_remote(w);
	cl__rt_handoff_sync(w, self);
	w->now_ns = now;
	cl__rq_update_clock(rq, now);
	resched = cl__rt_flush_wakes(w, 1);
	/* else the tick's rule: its slice is no longer protected and another
	 * task is queued (a spawn, a wakee queued earlier) */
	if (!resched)
		resched = cl_rq_tick(rq, now);
	if (!resched) {
		uint64_t end = now + self->task.se.slice;

		cl__rt_set_protect(w, &self->task, now);
		if (CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED) < end)
			CL_ATOMIC_STORE(&w->wake_preempt_ns, end, CL_RELAXED);
	}
	cl__rq_unlock(rq);
	return resched;
}

/* ---- preemption at a runtime call, runtime locks, blocking ---- */

/*
 * Should @t, running on @w with a mark set, be preempted now? A slice mark
 * says yes; a wake mark runs the check. Context: @t non-preemptible.
 */
CL_INLINE int cl__rt_preempt_due(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	int pp = CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED);

	if (pp & CL__RT_PP_TIMER) { /* fire them here: woken on this worker */
		CL_ATOMIC_FETCH_AND(&w->preempt_pending, ~CL__RT_PP_TIMER, CL_RELAXED);
		if (cl__rt_timers_run(w) && w->rt->slice_ns)
			pp |= CL__RT_PP_WAKE; /* may a wakee preempt it? */
	}
	if (pp & CL__RT_PP_SLICE)
		return 1;
	if ((pp & CL__RT_PP_WAKE) && cl__rt_wake_check(w, t)) {
		w->nr_wake_preempts++;
		return 1;
	}
	return 0;
}

/* Act on a mark at a runtime call (cl__rt_np_exit()): preempt if due. Keeps errno. */
CL_INLINE void cl__rt_preempt_yield(struct cl_rt_task *t)
{
	int e = errno;

	cl__rt_np_inc(t);
	if (cl__rt_preempt_due(t->w, t)) {
		t->w->nr_preempt_marks++;
		cl__rt_schedule(t->w, t, CL__RT_PREEMPT, NULL);
	}
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
	cl__rt_set_errno(e);
}

CL_INLINE void cl__rt_np_exit(struct cl_rt_task *t)
{
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
	if (CL_UNLIKELY(!t->np && CL_ATOMIC_LOAD(&t->w->preempt_pending, CL_RELAXED)))
		cl__rt_preempt_yield(t);
}

/* cl__rt_np_exit() of @t if it is a task (NULL: a thread outside them). */
CL_ALWAYS_INLINE void cl__rt_np_put(struct cl_rt_task *t)
{
	if (t)
		cl__rt_np_exit(t);
}

/*
 * A runtime lock: the holder is not preempted until it releases it. The
 * _as forms take the caller's task (cl__rt_current(), read once per call
 * by a caller that takes several: a task stays the same task across a
 * switch, only its worker changes); NULL outside tasks.
 */
CL_ALWAYS_INLINE void cl__rt_lock_as(struct cl_rt_task *t, struct cl_ticketlock *l)
{
	if (t)
		cl__rt_np_inc(t);
	cl_ticket_lock(l);
}

CL_ALWAYS_INLINE void cl__rt_unlock_as(struct cl_rt_task *t, struct cl_ticketlock *l)
{
	(void)cl_ticket_unlock(l);
	cl__rt_np_put(t);
}

CL_INLINE void cl__rt_lock(struct cl_ticketlock *l)
{
	cl__rt_lock_as(cl__rt_current(), l);
}

CL_INLINE void cl__rt_unlock(struct cl_ticketlock *l)
{
	(void)cl_ticket_unlock(l);
	cl__rt_np_put(cl__rt_current());
}

/*
 * cl__rt_block() - the current task @self waits. The caller has put it on a
 * wait list (with a waiter record) under @lock and holds @lock; it is
 * released after the switch. Returns once a waker took it off the list and
 * called cl__rt_wake().
 */
CL_INLINE void cl__rt_block(struct cl_rt_task *self, struct cl_ticketlock *lock)
{
	CL_WRITE_ONCE(self->state, CL__RT_BLOCKED);
	cl__rt_schedule(self->w, self, CL__RT_BLOCK, lock);
	cl__rt_np_exit(self); /* @lock, taken with cl__rt_lock(), was released for us */
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SWITCH_H */
