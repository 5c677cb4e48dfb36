/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/wakeq.h - the wake side of the wake-to-run protocol.
 *
 * The remote wake list (a waker on another worker pushes, the worker drains
 * it under its rq lock) and the local wake list's flush, the wakeup-
 * preemption marks and the preemption signal's kick, the futex kick of a
 * sleeping worker, and the wake entry points: cl__rt_enqueue_wake() (a
 * spawn, or a wakee moved to another rq), cl__rt_wake_push(),
 * cl__rt_wake_from(), cl__rt_wake().
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_WAKEQ_H
#define CACHELOCAL_SCHED_RUNTIME_WAKEQ_H

CL_BEGIN_DECLS

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
/* The preemption signal is used (preempt.h) where the overflow report's
 * signal API is (overflow.h), ThreadSanitizer is not, and arch/arch.h knows
 * where a signal's context keeps the interrupted PC. */
#if defined(CL__RT_OVERFLOW_REPORT) && defined(__USE_MISC) && !defined(CL_HAVE_TSAN) && defined(CL__ARCH_UC_PC)
#define CL__RT_ASYNC_PREEMPT 1
#endif

/* Send @w's thread the preemption signal (a mark was just set), if used. */
CL_INLINE void cl__rt_preempt_kick(struct cl__rt_worker *w)
{
#ifdef CL__RT_ASYNC_PREEMPT
	if (w->rt->preempt_signal)
		pthread_kill(w->thread, CL_RUNTIME_PREEMPT_SIGNAL);
#else
	(void)w;
#endif
}

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

/* Write 1 to a worker's eventfd (its kick while it sleeps in I/O), errno
 * kept. Out of line: errno's address must be this thread's, and a task
 * that wakes another may have resumed on another worker thread. */
CL_NOINLINE CL_UNUSED static void cl__rt_kick_evfd(int fd)
{
	uint64_t one = 1;
	int e = errno;

	if (write(fd, &one, sizeof(one)) < 0) { /* EAGAIN: it is readable already */
	}
	errno = e;
}

/*
 * cl__rt_kick() - wake @w's thread out of its futex sleep (the protocol:
 * cl__rt_enqueue_wake(), cl__rt_wake_push()), or out of its wait in the
 * I/O backend (CL__RT_SLEEP_IO, iopoll.h): its eventfd, which its ring or
 * epoll instance watches. The swap to 0 makes one waker do the FUTEX_WAKE
 * or the write; one that lands before the worker's FUTEX_WAIT makes that
 * wait return at once (the word is no longer 1); an eventfd written
 * before the I/O wait stays readable until the worker reads it.
 */
CL_INLINE void cl__rt_kick(struct cl__rt_worker *w)
{
	int was = CL_ATOMIC_XCHG(&w->sleeping, 0, CL_ACQ_REL);

	if (was == CL__RT_SLEEP_FUTEX) {
		cl__futex_wake(&w->sleeping, 1);
	} else if (was == CL__RT_SLEEP_IO) {
		cl__rt_kick_evfd(w->io_evfd);
	}
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

/* Wake every waiter of a list the caller detached (join waiters), each
 * record's status written (0) under the list's lock before. */
CL_INLINE void cl__rt_wake_waiters(struct cds_list_head *list)
{
	struct cds_list_head *pos, *n;

	cds_list_for_each_safe(pos, n, list) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		struct cl_rt_task *t = wt->t;

		cds_list_del(pos);
		cl__rt_wake(t);
	}
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_WAKEQ_H */
