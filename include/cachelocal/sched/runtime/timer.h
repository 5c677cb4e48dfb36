/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/timer.h - timers: a hierarchical timing wheel
 * per worker (types.h, struct cl__rt_wheel), and firing the timers that
 * are due.
 *
 * A task that sleeps (sleep.h) or waits with a timeout (waitq.h) arms a
 * timer in the wheel of the worker it runs on and blocks; that worker's
 * thread uses the wheel: its tasks arm timers, and it fires them in its idle loop (worker.h: before a
 * pick, in the spin, and from a futex sleep whose timeout is the next
 * timer), or, while it runs tasks, at a task's preemption check once the
 * tick marks it (CL__RT_PP_TIMER: switch.h, preempt.h). A blocked task
 * cannot migrate (the balancer moves queued tasks only), so its timer
 * stays on the wheel of the worker it blocked on; when the timer fires it
 * is woken there, as a local wakeup (its local wake list), and may move
 * when it runs again. One other thread may touch the wheel: a task whose
 * timed wait a waker ended disarms its timer wherever it runs (so a
 * spinlock per wheel, timer_lock, which only that case contends). No line
 * is shared with other workers but that and timer_next, which the tick
 * reads.
 *
 * Each operation is O(1): arming is a slot index from the highest bit in
 * which the deadline and the wheel's time differ, and a list insertion;
 * the next event is at most CL__RT_TW_LEVELS ctz of the levels' occupancy
 * words; an expired slot is unlinked whole, and each of its timers is
 * either fired or moved to a lower level (at most CL__RT_TW_LEVELS - 1
 * moves in a timer's life). Resolution: a wheel tick, 1024 ns; a timer
 * never fires before its deadline. The next event of a wheel whose first
 * timer sits above level 0 is that slot's start, where its timers move
 * down: an idle worker sleeping until its next timer may wake up to
 * CL__RT_TW_LEVELS - 1 times early for such moves, never periodically.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_TIMER_H
#define CACHELOCAL_SCHED_RUNTIME_TIMER_H

CL_BEGIN_DECLS

/* ---- the wheel (one thread; the caller's clock in wheel ticks) ---- */

/* An empty wheel at tick @now. */
CL_INLINE void cl__rt_wheel_init(struct cl__rt_wheel *wh, uint64_t now)
{
	memset(wh, 0, sizeof(*wh));
	wh->elapsed = now;
}

/* The level for a timer due at tick @when on a wheel at tick @elapsed. */
CL_INLINE unsigned int cl__rt_wheel_level(uint64_t elapsed, uint64_t when)
{
	uint64_t masked = (elapsed ^ when) | (CL__RT_TW_SLOTS - 1);

	return (unsigned int)(63 - __builtin_clzll(masked)) / CL__RT_TW_BITS;
}

/* Put @tm (its `when` set, not armed) in its slot. A deadline already
 * passed (before `elapsed`) goes into the current level-0 slot: due now. */
CL_INLINE void cl__rt_wheel_link(struct cl__rt_wheel *wh, struct cl__rt_timer *tm)
{
	uint64_t when = tm->when > wh->elapsed ? tm->when : wh->elapsed;
	unsigned int lvl = cl__rt_wheel_level(wh->elapsed, when);
	unsigned int s = (unsigned int)(when >> (lvl * CL__RT_TW_BITS)) & (CL__RT_TW_SLOTS - 1);
	struct cl__rt_timer **head = &wh->slot[lvl][s];

	tm->next = *head;
	if (tm->next)
		tm->next->pprev = &tm->next;
	tm->pprev = head;
	*head = tm;
	wh->occupied[lvl] |= 1ULL << s;
}

/* Arm @tm, due at tick @when. */
CL_INLINE void cl__rt_wheel_add(struct cl__rt_wheel *wh, struct cl__rt_timer *tm, uint64_t when)
{
	tm->when = when;
	cl__rt_wheel_link(wh, tm);
	CL_ATOMIC_STORE(&wh->nr, wh->nr + 1, CL_RELAXED);
}

/* Disarm @tm if it is armed; 1 if it was. */
CL_INLINE int cl__rt_wheel_del(struct cl__rt_wheel *wh, struct cl__rt_timer *tm)
{
	if (!tm->pprev)
		return 0;
	*tm->pprev = tm->next;
	if (tm->next)
		tm->next->pprev = tm->pprev;
	/* the slot's head is inside wh->slot: empty now? clear its bit */
	if ((uintptr_t)tm->pprev >= (uintptr_t)wh->slot &&
	    (uintptr_t)tm->pprev < (uintptr_t)wh->slot + sizeof(wh->slot) && !*tm->pprev) {
		size_t i = (size_t)(tm->pprev - &wh->slot[0][0]);

		wh->occupied[i / CL__RT_TW_SLOTS] &= ~(1ULL << (i % CL__RT_TW_SLOTS));
	}
	tm->pprev = NULL;
	CL_ATOMIC_STORE(&wh->nr, wh->nr - 1, CL_RELAXED);
	return 1;
}

/*
 * The tick at which the wheel's first non-empty slot is due (its start),
 * or CL__RT_TIMER_NONE; @lvl and @slot get where it is. Levels in order:
 * every timer of a lower level is due before any of a higher one.
 */
CL_INLINE uint64_t cl__rt_wheel_next(const struct cl__rt_wheel *wh, unsigned int *lvl, unsigned int *slot)
{
	for (unsigned int l = 0; l < CL__RT_TW_LEVELS; l++) {
		unsigned int shift = l * CL__RT_TW_BITS;
		unsigned int cur = (unsigned int)(wh->elapsed >> shift) & (CL__RT_TW_SLOTS - 1);
		uint64_t m = wh->occupied[l] & (~0ULL << cur);
		uint64_t block;
		unsigned int s;

		if (!m)
			continue;
		s = (unsigned int)__builtin_ctzll(m);
		block = wh->elapsed & ~((1ULL << (shift + CL__RT_TW_BITS)) - 1);
		*lvl = l;
		*slot = s;
		return block | (uint64_t)s << shift;
	}
	return CL__RT_TIMER_NONE;
}

/*
 * Advance @wh to tick @now: the timers due by then come off it, on a list
 * through `next` (returned; their pprev NULL), the others move down.
 */
CL_INLINE struct cl__rt_timer *cl__rt_wheel_expire(struct cl__rt_wheel *wh, uint64_t now)
{
	struct cl__rt_timer *fired = NULL, **tail = &fired;
	unsigned int lvl = 0, s = 0, n = 0;
	uint64_t at;

	while ((at = cl__rt_wheel_next(wh, &lvl, &s)) <= now) {
		struct cl__rt_timer *tm = wh->slot[lvl][s];

		wh->slot[lvl][s] = NULL;
		wh->occupied[lvl] &= ~(1ULL << s);
		wh->elapsed = at; /* > the old one, <= every timer left */
		while (tm) {
			struct cl__rt_timer *next = tm->next;

			if (tm->when <= now) {
				tm->pprev = NULL;
				*tail = tm;
				tail = &tm->next;
				n++;
			} else {
				cl__rt_wheel_link(wh, tm); /* a lower level now */
			}
			tm = next;
		}
	}
	*tail = NULL;
	if (now > wh->elapsed)
		wh->elapsed = now; /* every slot left is after it, on its level */
	if (n)
		CL_ATOMIC_STORE(&wh->nr, wh->nr - n, CL_RELAXED);
	return fired;
}

/* ---- a worker's timers ---- */

/* The clock timers run on: CLOCK_MONOTONIC (what cl_sleep_until() takes),
 * not the runtime's TSC reading, which may drift from it. */
CL_INLINE uint64_t cl__rt_timer_now(void)
{
	return (uint64_t)cl__now_ns();
}

/**
 * cl_now_ns() - the clock of the runtime's timeouts and cl_sleep_until().
 *
 * Context: any thread.
 * Return: CLOCK_MONOTONIC, in ns.
 */
CL_INLINE uint64_t cl_now_ns(void)
{
	return cl__rt_timer_now();
}

/* The latest deadline a timer takes (ns of CLOCK_MONOTONIC; a sleep's:
 * sleep.h): a timespec's seconds stay positive, and a negative value
 * passed by mistake is refused. */
#define CL_SLEEP_MAX_NS ((uint64_t)INT64_MAX)

/* A deadline @ns from now (CLOCK_MONOTONIC), at most CL_SLEEP_MAX_NS (a
 * timed wait's: a longer timeout waits as long as a timer can). */
CL_INLINE uint64_t cl__rt_deadline(uint64_t ns)
{
	uint64_t now = cl__rt_timer_now();

	return ns < CL_SLEEP_MAX_NS - now ? now + ns : CL_SLEEP_MAX_NS;
}

/* Publish @w's next timer event (ns) for its idle loop and the tick.
 * Context: @w's timer_lock. */
CL_INLINE void cl__rt_timer_publish(struct cl__rt_worker *w)
{
	unsigned int lvl, s;
	uint64_t at = cl__rt_wheel_next(&w->wheel, &lvl, &s);

	if (at != CL__RT_TIMER_NONE)
		at <<= CL__RT_TW_SHIFT;
	CL_ATOMIC_STORE(&w->timer_next, at, CL_RELAXED);
}

/*
 * Arm @t's timer on @w (the worker it runs on), due at @deadline
 * (CLOCK_MONOTONIC ns, at most INT64_MAX): it fires at the first wheel
 * tick at or after it. @lock: NULL for a sleep; for a timed wait, the lock
 * of the list @t's record (t->wait) is on, held by the caller (waitq.h).
 * Context: @t running on @w, non-preemptible.
 */
CL_INLINE void cl__rt_timer_arm(struct cl__rt_worker *w, struct cl_rt_task *t, uint64_t deadline,
				struct cl_ticketlock *lock)
{
	uint64_t when = (deadline + (1ULL << CL__RT_TW_SHIFT) - 1) >> CL__RT_TW_SHIFT;

	t->timer.w = w;
	t->timer.lock = lock;
	cl_spin_lock(&w->timer_lock);
	if (!w->wheel.nr) /* empty: start from now, so it lands as low as it can */
		w->wheel.elapsed = cl__rt_timer_now() >> CL__RT_TW_SHIFT;
	cl__rt_wheel_add(&w->wheel, &t->timer, when);
	CL_ATOMIC_STORE(&t->timer.state, CL__RT_TIMER_ARMED, CL_RELAXED);
	if ((when << CL__RT_TW_SHIFT) < CL_ATOMIC_LOAD(&w->timer_next, CL_RELAXED))
		cl__rt_timer_publish(w);
	cl_spin_unlock(&w->timer_lock);
}

/*
 * Disarm @t's timer, if it is still on its wheel (a timed wait a waker
 * ended: its record is then the waker's). If the timer's worker is firing
 * it, it is off the wheel already: cl__rt_timer_wait_fired() waits for
 * the firing to let go of it.
 * Context: @t, on any worker, non-preemptible, as with every runtime lock:
 * the preemption signal's handler fires the timers of the worker it
 * interrupts (cl__rt_preempt_due()), which takes that worker's timer_lock;
 * a task interrupted while it holds the lock would spin on it forever in
 * its own handler (the worker's thread is the holder).
 */
CL_INLINE void cl__rt_timer_cancel(struct cl_rt_task *t)
{
	struct cl__rt_worker *w = t->timer.w;

	cl_spin_lock(&w->timer_lock);
	CL_INJECT(72); /* a woken timed waiter disarms its timer: the wheel's lock held */
	if (cl__rt_wheel_del(&w->wheel, &t->timer)) {
		CL_ATOMIC_STORE(&t->timer.state, CL__RT_TIMER_IDLE, CL_RELAXED);
		cl__rt_timer_publish(w);
	}
	cl_spin_unlock(&w->timer_lock);
}

/*
 * After cl__rt_timer_cancel(): wait until a firing of @t's timer under
 * way lets go of it (the firing only reads the record's status, under the
 * list's lock). After this the timer and the record are @t's again. The
 * firing runs on the thread of another worker (a worker fires its own
 * timers with no switch to a task in between), which the kernel may have
 * preempted: the wait yields the CPU after a short spin (backoff.h).
 * Context: @t, anywhere, preemptible or not.
 */
CL_INLINE void cl__rt_timer_wait_fired(const struct cl_rt_task *t)
{
	unsigned int n = 0;

	while (CL_ATOMIC_LOAD(&t->timer.state, CL_ACQUIRE) == CL__RT_TIMER_FIRING)
		cl__backoff(&n, CL__BACKOFF_SPINS);
}

/* Make @t, blocked on @w and off every wait list, runnable: @w's local
 * wake list (enqueued at @w's next pick or switch). Context: @w's thread. */
CL_INLINE void cl__rt_timer_wake(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
	*w->wake_tail = t;
	w->wake_tail = &t->wake_next;
	w->nr_wakes++;
}

/*
 * Fire @tm, off @w's wheel: wake its task if the timer ends the wait. A
 * sleep always ends. A timed wait ends if its record is still on its list
 * (status CL__RT_WAIT_PENDING, read under the list's lock, which every
 * waker holds while it takes a record and writes its status): the timer
 * then takes it off, as a waker would, and the wait times out; otherwise a
 * waker has it, and wakes the task itself. Exactly one of them does.
 */
CL_INLINE int cl__rt_timer_fire(struct cl__rt_worker *w, struct cl__rt_timer *tm)
{
	struct cl_rt_task *t = cl_container_of(tm, struct cl_rt_task, timer);
	int wake = 1;

	if (tm->lock) {
		CL_INJECT(70); /* a timed wait's timer off the wheel, its list not yet locked */
		cl_ticket_lock(tm->lock);
		if (t->wait.status == CL__RT_WAIT_PENDING) {
			cds_list_del(&t->wait.node);
			t->wait.status = CL__RT_WAIT_TIMEDOUT;
		} else {
			wake = 0; /* a waker took it first */
		}
		(void)cl_ticket_unlock(tm->lock);
		CL_INJECT(71); /* decided (the list's lock released), not yet let go of */
	}
	/* the timer is the task's again (cl__rt_timer_wait_fired() waits for this);
	 * the task itself stays blocked until woken below */
	CL_ATOMIC_STORE(&tm->state, CL__RT_TIMER_IDLE, CL_RELEASE);
	if (wake)
		cl__rt_timer_wake(w, t);
	return wake;
}

/*
 * cl__rt_timers_run() - fire @w's timers due by now: each task a timer
 * wakes goes on @w's local wake list. Returns how many woke a task.
 * Context: @w's thread, holding no lock, in its idle loop or in a running
 * task (not preemptible) that is not blocking: a task whose timer fires is
 * always one whose switch away completed.
 */
CL_INLINE unsigned int cl__rt_timers_run(struct cl__rt_worker *w)
{
	struct cl__rt_timer *tm;
	unsigned int n = 0;

	if (CL_ATOMIC_LOAD(&w->timer_next, CL_RELAXED) == CL__RT_TIMER_NONE)
		return 0;
	cl_spin_lock(&w->timer_lock);
	tm = cl__rt_wheel_expire(&w->wheel, cl__rt_timer_now() >> CL__RT_TW_SHIFT);
	for (struct cl__rt_timer *f = tm; f; f = f->next)
		CL_ATOMIC_STORE(&f->state, CL__RT_TIMER_FIRING, CL_RELAXED);
	cl__rt_timer_publish(w);
	cl_spin_unlock(&w->timer_lock);
	while (tm) {
		struct cl__rt_timer *next = tm->next;

		w->nr_timers_fired++;
		n += (unsigned int)cl__rt_timer_fire(w, tm);
		tm = next;
	}
	return n;
}

/* Is a timer of @w due (its next event passed)? */
CL_INLINE int cl__rt_timer_due(const struct cl__rt_worker *w)
{
	uint64_t next = CL_ATOMIC_LOAD(&w->timer_next, CL_RELAXED);

	return next != CL__RT_TIMER_NONE && next <= cl__rt_timer_now();
}

/*
 * How long @w's idle sleep may last: NULL without a timer (a waker ends
 * it), else @ts set to the time left until the next timer event (0 if it
 * is due) and returned.
 */
CL_INLINE const struct timespec *cl__rt_timer_timeout(const struct cl__rt_worker *w, struct timespec *ts)
{
	uint64_t next = CL_ATOMIC_LOAD(&w->timer_next, CL_RELAXED), now, d;

	if (next == CL__RT_TIMER_NONE)
		return NULL;
	now = cl__rt_timer_now();
	d = next > now ? next - now : 0;
	ts->tv_sec = (time_t)(d / 1000000000ULL);
	ts->tv_nsec = (long)(d % 1000000000ULL);
	return ts;
}

/* prctl(PR_SET_TIMERSLACK): a worker's futex timeouts are its timers; the
 * kernel's default slack (50 us) would be added to each. */
#define CL__RT_PR_SET_TIMERSLACK 29

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_TIMER_H */
