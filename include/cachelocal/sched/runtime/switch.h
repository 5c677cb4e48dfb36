/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/switch.h - switching and the wake-to-run protocol.
 *
 * cl__rt_switch() and the hand-off to the next task, blocking (cl__rt_block()),
 * waking (cl__rt_enqueue_wake(): the local rq, or the target's remote wake
 * list), and cl__rt_schedule(), the pick after a block, a yield or an exit.
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

/* cl__rt_switch() - suspend @from, resume @to on worker @w (same thread).
 * Returns, in @from, the worker that resumed it. @exiting: @from never
 * resumes (ASan drops its fake stack). */
CL_INLINE struct cl__rt_worker *cl__rt_switch(struct cl__rt_worker *w, struct cl__rt_ctx *from,
					      struct cl__rt_ctx *to, int exiting)
{
	void *r;

#ifdef CL_HAVE_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
#ifdef CL__RT_ASAN
	__sanitizer_start_switch_fiber(exiting ? NULL : &from->asan_fake, to->stack_lo, to->stack_size);
#else
	(void)exiting;
#endif
	r = cl__ctx_switch(&from->ctx, &to->ctx, w);
#ifdef CL__RT_ASAN
	__sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
	return (struct cl__rt_worker *)r;
}

CL_INLINE void cl__rt_wake_waiters(struct cds_list_head *list);
CL_INLINE void cl__rt_watch_idle(struct cl__rt_worker *w, struct cl_ticketlock *unlock);
CL_INLINE void cl__rt_watch_drop(struct cl__rt_worker *w);

/* cl__rt_finish() - run first by whatever context a switch resumes, on @w:
 * release what the previous context held across the switch (the rq lock,
 * its wait-list lock) and retire it if it exited. */
CL_INLINE void cl__rt_finish(struct cl__rt_worker *w)
{
	struct cl_rt_task *prev = w->fin.prev;
	struct cl_ticketlock *unlock = w->fin.unlock;
	int mode = w->fin.mode;

	w->fin.prev = NULL;
	w->fin.unlock = NULL;
	if (mode != CL__RT_HANDOFF)
		cl__rq_unlock(w->rq);
	if (unlock)
		(void)cl_ticket_unlock(unlock);
	if (prev && mode == CL__RT_EXIT) {
		struct cds_list_head waiters;

		CDS_INIT_LIST_HEAD(&waiters);
		cl__rt_task_detach(prev); /* before a joiner can see it exited */
		cl_ticket_lock(&prev->join_lock);
		CL_ATOMIC_STORE(&prev->exited, 1, CL_SEQ_CST);
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
		CL_ATOMIC_STORE(&w->preempt_pending, 0, CL_RELAXED);
}

CL_INLINE void cl__rt_balance(struct cl__rt_worker *w, uint64_t now);

/*
 * Remote wake list (the kernel's TTWU_QUEUE). A waker on another worker,
 * or outside the runtime, takes no lock of @w: it pushes a node naming the
 * task (in its waiter record, else in its descriptor) on @w->remote_wakes,
 * a lock-free stack on the line of @w's `sleeping` word, and kicks @w only
 * if it sleeps (cl__rt_wake_push()). @w takes the whole stack with one
 * exchange at its next switch or idle pick, under its rq lock, into its
 * local wake list in wake order (docs/runtime.md). No lost wakeup: the
 * waker pushes, then reads `sleeping`; the worker sets it, then reads the
 * stack (all seq_cst): one of them sees the other.
 */
/* @t is queued on @w from elsewhere (a remote wakeup, a spawn): until it runs,
 * @w makes no hand-off chain beside queued tasks. Context: @w's rq lock. */
CL_INLINE void cl__rt_ext_mark(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	if (!t->ext_cpu) {
		t->ext_cpu = w->cpu + 1;
		CL_ATOMIC_FETCH_ADD(&w->nr_ext_waiting, 1u, CL_RELAXED);
	}
}

CL_INLINE int cl__rt_remote_pending(struct cl__rt_worker *w)
{
	return CL_ATOMIC_LOAD(&w->remote_wakes, CL_RELAXED) != 0;
}

/* Append @t, woken from elsewhere, to @w's wake list. Context: @w, rq lock. */
CL_INLINE void cl__rt_queue_ext(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
	cl__rt_ext_mark(w, t);
	t->wake_next = NULL;
	*w->wake_tail = t;
	w->wake_tail = &t->wake_next;
	w->nr_wakes++;
}

/* Move @w's remote wakeups to its local wake list, marked runnable; nodes
 * only read, a lone wakee's record fetched for it. Context: @w, rq lock. */
CL_INLINE void cl__rt_drain_remote(struct cl__rt_worker *w)
{
	uintptr_t e;
	struct cl_rt_task *t, *fifo = NULL;

	if (CL_LIKELY(!cl__rt_remote_pending(w)))
		return;
	e = CL_ATOMIC_XCHG(&w->remote_wakes, (uintptr_t)0, CL_ACQUIRE);
	w->nr_remote_drains++;
	while (e) { /* the stack is newest first; a tagged task ends it */
		if (e & 1u) {
			t = (struct cl_rt_task *)(e & ~(uintptr_t)1);
			e = 0;
			cl__rt_prefetchw(&t->wait); /* read once it runs: fetched meanwhile */
		} else {
			const struct cl__rt_wnode *n = (const struct cl__rt_wnode *)e;

			e = n->next;
			t = n->t; /* @n is not read again: its task may run once queued */
		}
		t->wake_next = fifo;
		fifo = t;
	}
	while (fifo) {
		t = fifo;
		fifo = t->wake_next;
		cl__rt_queue_ext(w, t);
	}
}

/*
 * Enqueue the local wakeups @w deferred (cl__rt_wake()). @check: the rq has
 * a running task; return 1 if one of the wakees should preempt it (EEVDF's
 * wakeup rule, cl_rq_check_preempt_wakeup()), else 0. Context: @w's rq lock.
 */
CL_INLINE int cl__rt_flush_wakes(struct cl__rt_worker *w, int check)
{
	struct cl_rt_task *t = w->wake_head;
	int resched = 0;

	if (CL_LIKELY(!t))
		return 0;
	w->wake_head = NULL;
	w->wake_tail = &w->wake_head;
	w->nr_wakes = 0;
	while (t) {
		struct cl_rt_task *n = t->wake_next;

		t->wake_next = NULL;
		if (!t->task.on_rq) { /* else: the rq's stale curr of a hand-off chain, still queued */
			cl_rq_enqueue(w->rq, &t->task, CL_ENQUEUE_WAKEUP);
			if (check && !resched)
				resched = cl_rq_check_preempt_wakeup(w->rq, &t->task) == 1;
		}
		t = n;
	}
	return resched;
}

/*
 * Wakeup preemption. The kernel preempts the running task when a woken
 * one is eligible and has an earlier virtual deadline (and the running
 * one's slice is no longer protected: RUN_TO_PARITY). Here the rule needs
 * the rq lock and a clock reading, which a wakeup must not cost on every
 * switch, so the decision is split:
 *  - each pick publishes when the picked task's protected slice ends
 *    (wake_preempt_ns, an estimate from its deadline; 0 while the worker
 *    is idle). Before that no wakee can preempt it, whatever it is;
 *  - a remote waker (another worker, or a thread outside the runtime) that
 *    finds the worker busy past that time sets CL__RT_PP_WAKE and sends the
 *    preemption signal (once: only if it set the bit); the tick does the
 *    same for a wakee still waiting on the remote list when the protection
 *    ends. A local waker past it (with other tasks runnable, so not in a
 *    lone ping-pong) sets the bit on its own worker;
 *  - the running task then runs the exact check, cl__rt_wake_check(), at a
 *    safe point: in the signal handler, or when it leaves its runtime call
 *    (cl__rt_np_exit()). If the check says so, it is preempted: requeued
 *    with its deadline, and the fair class picks (CL__RT_PREEMPT).
 * A check that finds no reason to preempt pushes wake_preempt_ns one slice
 * on, so a busy worker gets at most one signal per slice from wakers.
 */
CL_INLINE void cl__rt_preempt_kick(struct cl__rt_worker *w);

/* Publish when a wakee may preempt @p, just picked on @w at @now: the rest
 * of its virtual slice (to its deadline) in ns at its weight. Never with
 * CL_RUNTIME_NO_PREEMPT (0 stays: no wakeup preemption either). */
CL_INLINE void cl__rt_set_protect(struct cl__rt_worker *w, const struct cl_task *p, uint64_t now)
{
	int64_t rem = cl__vdiff(p->se.deadline, p->se.vruntime);
	uint64_t end = now | 1; /* never 0 (idle) */

	if (!w->rt->slice_ns)
		return;
	if (rem > 0)
		end = now + (uint64_t)rem * p->se.load.weight / CL_NICE_0_LOAD;
	CL_ATOMIC_STORE(&w->wake_preempt_ns, end, CL_RELAXED);
}

/* Ask @w's running task for a wakeup-preemption check if its protected
 * slice is over: a mark, and the signal if the mark is new. */
CL_INLINE void cl__rt_wake_kick_busy(struct cl__rt_worker *w)
{
	uint64_t end = CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED);

	if (!end || cl__rt_now(w->rt) < end)
		return; /* idle, or still protected: the tick looks again */
	if (!(CL_ATOMIC_FETCH_OR(&w->preempt_pending, CL__RT_PP_WAKE, CL_RELAXED) & CL__RT_PP_WAKE))
		cl__rt_preempt_kick(w);
}

/* The same for a local waker on its own worker @w (no signal: the waker
 * is the running task, and its next runtime call looks). */
CL_INLINE void cl__rt_wake_mark_local(struct cl__rt_worker *w)
{
	uint64_t end = CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED);

	if (end && cl__rt_now(w->rt) >= end)
		CL_ATOMIC_FETCH_OR(&w->preempt_pending, CL__RT_PP_WAKE, CL_RELAXED);
}

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
 *    queued tasks (CL_RUNTIME_CHAIN_BESIDE only) stops when the tick's mark
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
 * out there (the sampled clock, above). Only with preemption on (the tick
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
			CL_ATOMIC_STORE(&w->preempt_pending, 0, CL_RELAXED);
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
	w->nr_wake_checks++;
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

/*
 * cl__rt_kick() - wake @w's thread out of its futex sleep (the protocol:
 * cl__rt_enqueue_wake(), cl__rt_wake_push()). The swap to 0 makes one
 * waker do the FUTEX_WAKE; one that lands before the worker's FUTEX_WAIT
 * makes that wait return at once (the word is no longer 1).
 */
CL_INLINE void cl__rt_kick(struct cl__rt_worker *w)
{
	if (CL_ATOMIC_XCHG(&w->sleeping, 0, CL_ACQ_REL) == 1)
		cl__futex_wake(&w->sleeping, 1);
}

/* Some other worker that sleeps, to pull work from a queue that grew; kick it. */
CL_INLINE void cl__rt_kick_idle(struct cl_runtime *rt, unsigned int from)
{
	for (unsigned int i = 1; i < rt->nr_workers; i++) {
		struct cl__rt_worker *o = &rt->workers[(from + i) % rt->nr_workers];

		if (CL_ATOMIC_LOAD(&o->sleeping, CL_RELAXED)) { /* a hint: it may be waking already */
			cl__rt_kick(o);
			return;
		}
	}
}

/*
 * cl__rt_enqueue_wake() - queue @t (new, or taken off a wait list by the
 * caller) on worker @cpu's rq and notify that worker (it decides to sleep
 * under the rq lock, under which this reads `sleeping` after the enqueue).
 * @cur: the caller's worker (NULL outside the runtime).
 */
CL_INLINE void cl__rt_enqueue_wake(struct cl_runtime *rt, struct cl_rt_task *t, unsigned int cpu,
				   struct cl__rt_worker *cur, int flags)
{
	struct cl__rt_worker *tw = &rt->workers[cpu];
	struct cl_rq *rq = tw->rq;
	unsigned int nr;
	int sleeping;

	cl__rq_lock(rq);
	CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
	cl__rt_ext_mark(tw, t);
	if (CL_UNLIKELY(t->task.on_rq)) {
		/* the rq's stale curr after a direct hand-off: see cl__rt_handoff_sync() */
		t->stale_woken = 1;
		CL_WRITE_ONCE(tw->resched, 1);
		tw->nr_stale_wakes++;
	} else {
		cl_rq_enqueue(rq, &t->task, flags);
		CL_WRITE_ONCE(tw->resched, 1); /* ends a hand-off chain there (cl__rt_ext_mark()) */
	}
	nr = rq->nr_running;
	sleeping = CL_ATOMIC_LOAD(&tw->sleeping, CL_RELAXED); /* under the lock: see cl__rt_kick() */
	cl__rq_unlock(rq);
	if (sleeping)
		cl__rt_kick(tw);
	else if (tw != cur)
		cl__rt_wake_kick_busy(tw); /* wakeup preemption (a spawn there) */
	else if (!(flags & CL_ENQUEUE_WAKEUP) && nr >= 2 && rt->nr_workers > 1)
		cl__rt_kick_idle(rt, cpu); /* a spawn burst: let a sleeping worker pull */
}

/* Push @t on @w's remote wake list; kick @w if it sleeps. An empty list
 * takes @t itself, tagged (guessed first: the CAS takes the line for
 * writing at once, no read before it), else the list links node @n. @t
 * and @n are @w's once pushed. */
CL_INLINE void cl__rt_wake_push(struct cl__rt_worker *w, struct cl_rt_task *t, struct cl__rt_wnode *n)
{
	uintptr_t old = 0, v = (uintptr_t)t | 1u;

	while (!CL_ATOMIC_CAS(&w->remote_wakes, &old, v, CL_SEQ_CST, CL_RELAXED)) {
		n->next = old;
		n->t = t;
		v = (uintptr_t)n;
	}
	if (CL_ATOMIC_LOAD(&w->sleeping, CL_SEQ_CST))
		cl__rt_kick(w);
	else
		cl__rt_wake_kick_busy(w); /* wakeup preemption */
}

/* Wake @t (record or descriptor node @n) blocked on worker @tw, from @self
 * (the caller's task, non-preemptible; NULL outside tasks). */
CL_ALWAYS_INLINE void cl__rt_wake_from(struct cl_rt_task *self, struct cl__rt_worker *tw,
				       struct cl_rt_task *t, struct cl__rt_wnode *n)
{
	if (!self || self->w != tw) {
		cl__rt_wake_push(tw, t, n);
	} else {
		CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
		*tw->wake_tail = t;
		tw->wake_tail = &t->wake_next;
		tw->nr_wakes++;
		/* wakeup preemption beside other runnable tasks (not in a lone pair) */
		if (CL_UNLIKELY(CL_READ_ONCE(tw->rq->nr_running) >= 2))
			cl__rt_wake_mark_local(tw);
	}
}

/* Wake @t (record or descriptor node @n) blocked on worker @tw. */
CL_INLINE void cl__rt_wake_to(struct cl__rt_worker *tw, struct cl_rt_task *t, struct cl__rt_wnode *n)
{
	struct cl_rt_task *self = cl__rt_np_enter(); /* the wake list, the worker: ours until done */

	cl__rt_wake_from(self, tw, t, n);
	if (self) { /* no yield here: this may run in cl__rt_finish() */
		CL_BARRIER();
		CL_WRITE_ONCE(self->np, self->np - 1);
	}
}

/* cl__rt_wake() - make @t, blocked and off its wait list, runnable on its last
 * worker: its local wake list (the caller runs there: enqueued at the next
 * switch), else its remote wake list. Context: any thread, no rq lock held. */
CL_INLINE void cl__rt_wake(struct cl_rt_task *t)
{
	cl__rt_wake_to(t->w, t, &t->rnode);
}

/* Wake every waiter of a list the caller detached (join waiters). */
CL_INLINE void cl__rt_wake_waiters(struct cds_list_head *list)
{
	struct cds_list_head *pos, *n;

	cds_list_for_each_safe(pos, n, list) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		struct cl_rt_task *t = wt->t;

		cds_list_del(pos);
		wt->status = 0;
		cl__rt_wake(t);
	}
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SWITCH_H */
