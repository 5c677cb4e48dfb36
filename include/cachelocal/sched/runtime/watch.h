/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/watch.h - watched waiter records.
 *
 * An idle worker watches the record of the task that last blocked on it,
 * and that task's waker claims the wakeup there instead of pushing on the
 * worker's remote wake list (the protocol below); cl__rt_idle_work() is
 * what the idle spin polls.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_WATCH_H
#define CACHELOCAL_SCHED_RUNTIME_WATCH_H

CL_BEGIN_DECLS

/* struct cl__rt_waiter.watch: the state in the low two bits (nobody
 * watches; an idle worker watches; a waker claimed the wakeup), and above
 * them the worker that set ON (its index: at most CL_MAX_CPUS, 12 bits) */
#define CL__RT_WATCH_NONE 0
#define CL__RT_WATCH_ON 1
#define CL__RT_WATCH_CLAIMED 2
#define CL__RT_WATCH_STATE 3u
#define CL__RT_WATCH_OWNER(w) ((uint16_t)((w)->cpu << 2))

/*
 * Watched records. A worker that goes idle right after a task blocked on
 * it watches that task's waiter record (ON and its index, set by its CAS
 * from NONE: cl__rt_watch_begin()) from the switch that took it idle
 * (cl__rt_watch_idle()), or from the block itself (cl__rt_watch_early()),
 * through its idle spin. A waker from another
 * worker that finds the record watched claims the wakeup there (CLAIMED,
 * the index kept, by CAS from ON, after writing the status and the
 * message) instead of pushing on the worker's remote wake list: the
 * record's line is the waker's already, so the wakeup moves no line of the
 * worker's, and the spinning worker sees it on the line it polls, which
 * it fetches anyway to run the task.
 *
 * The watcher that finds its own index beside CLAIMED takes the claim
 * with no write (cl__rt_watch_take()): it pushes the task itself, on its
 * own list, or, if the record is a stale one whose task now waits on
 * another worker, on that worker's, as the waker would have. A CAS there
 * would take the line from the waker again, on the wakeup's path, only to
 * write a state the task overwrites when it blocks next. A watcher that
 * saw no claim ends its watch with a CAS from ON to NONE
 * (cl__rt_watch_end()); if that finds its claim, it takes it.
 *
 * Why no wakeup is lost or doubled: a claim is made only on ON, and ON is
 * set only by a watcher, which always ends by removing ON or by finding
 * the claim; only the worker whose index it carries takes that claim,
 * once (its watch ends there), and other watchers of the record (stale
 * ones, whose ON its task's next block overwrote) leave it. A claimed task
 * cannot run (and block again, which stores NONE) before its claim was
 * taken. A worker never sleeps with a watch on (it ends the watch first),
 * so a waker that finds NONE pushes and kicks as before. The task records
 * the watch state NONE each time it blocks, which ends any stale watch of
 * an earlier wait silently.
 */
CL_INLINE int cl__rt_watch_claim(struct cl__rt_waiter *wt)
{
	uint16_t v = CL_ATOMIC_LOAD(&wt->watch, CL_RELAXED);

	return (v & CL__RT_WATCH_STATE) == CL__RT_WATCH_ON &&
	       CL_ATOMIC_CAS(&wt->watch, &v, (uint16_t)(v ^ CL__RT_WATCH_ON ^ CL__RT_WATCH_CLAIMED),
			     CL_RELEASE, CL_RELAXED);
}

/* Start watching the record of the task that last blocked on @w, if it
 * still waits here and nobody watches it. Return it, or NULL. */
CL_INLINE struct cl__rt_waiter *cl__rt_watch_begin(struct cl__rt_worker *w)
{
	struct cl__rt_waiter *wt = w->watch_cand;
	uint16_t none = CL__RT_WATCH_NONE;

	w->watch_cand = NULL;
#ifdef CL_RUNTIME_NO_WATCH /* (measuring what watched records save: docs/runtime.md) */
	wt = NULL;
#endif
	if (!wt || CL_READ_ONCE(wt->w) != w ||
	    !CL_ATOMIC_CAS(&wt->watch, &none, (uint16_t)(CL__RT_WATCH_OWNER(w) | CL__RT_WATCH_ON),
			   CL_RELAXED, CL_RELAXED))
		return NULL;
	return wt;
}

/* Has a waker claimed the wakeup @w watches on @wt? (Acquire: the status
 * and the message it wrote before are seen.) */
CL_INLINE int cl__rt_watch_claimed(struct cl__rt_worker *w, struct cl__rt_waiter *wt)
{
	return CL_ATOMIC_LOAD(&wt->watch, CL_ACQUIRE) == (CL__RT_WATCH_OWNER(w) | CL__RT_WATCH_CLAIMED);
}

/* Take @w's claim on @wt (cl__rt_watch_claimed() said so), ending the
 * watch: its task goes on @w's wake list at the next pick (w->claimed),
 * or, if it now waits on another worker, on that one's remote list. */
CL_INLINE void cl__rt_watch_take(struct cl__rt_worker *w, struct cl__rt_waiter *wt)
{
	w->nr_watch_hits++;
	cl__rt_prefetchw(wt); /* written by its task when it blocks next: fetched meanwhile */
	if (CL_READ_ONCE(wt->w) == w)
		w->claimed = wt->t;
	else
		cl__rt_wake_push(CL_READ_ONCE(wt->w), wt->t, &wt->rnode);
}

/* End @w's watch of @wt; take its claim if there is one. */
CL_INLINE void cl__rt_watch_end(struct cl__rt_worker *w, struct cl__rt_waiter *wt)
{
	uint16_t mine = CL__RT_WATCH_OWNER(w), v = (uint16_t)(mine | CL__RT_WATCH_ON);

	if (cl__rt_watch_claimed(w, wt) ||
	    (!CL_ATOMIC_CAS(&wt->watch, &v, CL__RT_WATCH_NONE, CL_ACQUIRE, CL_ACQUIRE) &&
	     v == (mine | CL__RT_WATCH_CLAIMED)))
		cl__rt_watch_take(w, wt);
	/* else ended, or its task blocked again since (a stale watch) */
}

/* End the watch @w started when it went idle (cl__rt_watch_idle()). */
CL_INLINE void cl__rt_watch_stop(struct cl__rt_worker *w)
{
	struct cl__rt_waiter *wt = w->watching;

	w->watching = NULL;
	cl__rt_watch_end(w, wt);
}

/* End idle @w's watch, if any, before it sleeps or stops. Return: 1 if
 * the watched record was claimed (there is a task to run: look again). */
CL_INLINE int cl__rt_watch_stop_idle(struct cl__rt_worker *w)
{
	if (!w->watching)
		return 0;
	cl__rt_watch_stop(w);
	return w->claimed != NULL;
}

/* Does idle @w spin before it sleeps? Not with CL_RUNTIME_NO_SPIN, nor
 * when its idle periods have averaged longer than CL__RT_SPIN_LONG_IDLE
 * spins (its work comes a long idle later: the idle loop sleeps at once). */
CL_INLINE int cl__rt_worker_spins(const struct cl__rt_worker *w)
{
	return w->rt->spin_ns != CL_RUNTIME_NO_SPIN &&
	       w->avg_idle_ns <= (uint64_t)CL__RT_SPIN_LONG_IDLE * w->rt->spin_ns;
}

/* Start @w's watch (if its runtime spins and it watches nothing yet) and,
 * if it began, release @unlock. Return: 1 if it did. Also for a worker
 * that will sleep without a spin (cl__rt_worker_spins()): a wakeup that
 * comes before it sleeps is still claimed, not pushed and kicked. */
CL_INLINE int cl__rt_watch_start(struct cl__rt_worker *w, struct cl_ticketlock *unlock)
{
	if (w->watching || w->rt->spin_ns == CL_RUNTIME_NO_SPIN)
		return 0;
	w->watching = cl__rt_watch_begin(w);
	if (!w->watching)
		return 0;
	(void)cl_ticket_unlock(unlock);
	return 1;
}

/*
 * cl__rt_watch_idle() - @w switches away from a task that blocked, to its
 * idle loop (cl__rt_schedule(), rq lock held): watch that task's record
 * from now on, before the wait list's lock is released, so that its
 * waker, which needs that lock to find the record, always finds it
 * watched. Started in the idle spin instead, the watch would come after
 * the worker's idle pick: a quick waker (the other side of a ping-pong
 * across two CPUs) would often find none and push on the remote list. The
 * worker ends it before it runs anything else or sleeps
 * (cl__rt_worker_pick(), worker.h).
 *
 * If it watches, it releases the wait list's lock @unlock now, before the
 * switch, rather than after it (cl__rt_finish()). A waker can no longer
 * start the task before its context is saved: a claim leaves it to this
 * worker, a push goes on this worker's list, which it drains under its rq
 * lock, and a wake-affine move needs that lock too, which the switch
 * holds until the idle context has run (cl__rt_finish()). So the waker,
 * the other side of a ping-pong, does not wait for the switch to get the
 * lock.
 */
CL_INLINE void cl__rt_watch_idle(struct cl__rt_worker *w, struct cl_ticketlock *unlock)
{
	if (cl__rt_watch_start(w, unlock))
		w->fin.unlock = NULL;
}

/*
 * cl__rt_watch_early() - the task running on @w has put its waiter record
 * on a wait list (cl__rt_wait_rec(), @lock held) and is about to block.
 * If nothing else is runnable, waking or pushed here, @w will go idle:
 * start the watch of that record now (cl__rt_watch_idle() would start it
 * at the switch to idle) and release @lock at once. The waker, which needs
 * @lock to find the record, then no longer waits for the scheduler's work
 * (the rq lock, the dequeue, the pick): in a request-reply pair across two
 * workers it is the other side's next send, and @lock's line is the one it
 * waits for. Safe for the same reason as in cl__rt_watch_idle(): a claim
 * is left to @w, which takes it only after the switch. If another task
 * turns up before the pick after all, the switch to it ends the watch
 * first (cl__rt_schedule()). Return: 1 if @lock was released.
 * Context: the task on @w, non-preemptible.
 */
CL_INLINE int cl__rt_watch_early(struct cl__rt_worker *w, struct cl_ticketlock *lock)
{
	if (w->nr_wakes || CL_READ_ONCE(w->rq->nr_running) != 1 || cl__rt_remote_pending(w))
		return 0;
	return cl__rt_watch_start(w, lock);
}

/* Queue the task a watch took a claim for (w->claimed) on @w's wake list,
 * or, when nothing else is runnable or waking here, on the rq at once: the
 * pick that follows under the same lock runs it, so it needs no
 * queued-from-elsewhere mark (two atomics: cl__rt_ext_mark() and its
 * undoing in cl__rt_set_curr()) and no list. Context: @w, rq lock. */
CL_INLINE void cl__rt_queue_claimed(struct cl__rt_worker *w)
{
	struct cl_rt_task *t = w->claimed;

	if (!t)
		return;
	w->claimed = NULL;
	if (!w->wake_head && !w->rq->nr_running && !t->task.on_rq &&
	    cl_rq_enqueue(w->rq, &t->task, CL_ENQUEUE_WAKEUP) == 0) {
		CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
		return;
	}
	cl__rt_queue_ext(w, t);
}

/* End @w's watch before it runs a task (a pick that found one, or a
 * switch to one after an early watch), the task of a claim it finds
 * queued. Context: @w, rq lock. */
CL_INLINE void cl__rt_watch_drop(struct cl__rt_worker *w)
{
	cl__rt_watch_stop(w);
	cl__rt_queue_claimed(w);
	cl__rt_flush_wakes(w, 0);
}

/* Is there something for idle @w to run: a task queued or pushed here, or
 * a claim on the record it watches (@watch, may be NULL)? What the idle
 * spin polls. */
CL_INLINE int cl__rt_idle_work(struct cl__rt_worker *w, struct cl__rt_waiter *watch)
{
	return CL_READ_ONCE(w->rq->nr_running) || cl__rt_remote_pending(w) ||
	       (watch && cl__rt_watch_claimed(w, watch));
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_WATCH_H */
