/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/worker.h - worker threads.
 *
 * Pinning, the idle pick and the worker's loop (pick, run, spin, balance,
 * sleep on its futex, or in its I/O backend while tasks are parked in I/O
 * on it, until a waker, a completion or its next timer).
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_WORKER_H
#define CACHELOCAL_SCHED_RUNTIME_WORKER_H

CL_BEGIN_DECLS

/* ---- workers ---- */

/* Pin the calling thread to @cpu (raw syscall: no GNU cpu_set_t needed). */
CL_INLINE int cl__rt_pin_self(int cpu)
{
	unsigned long mask[CL_MAX_CPUS / (8 * sizeof(unsigned long)) + 1];
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));

	memset(mask, 0, sizeof(mask));
	mask[(unsigned int)cpu / bpl] |= 1UL << ((unsigned int)cpu % bpl);
	return (int)syscall(SYS_sched_setaffinity, 0, sizeof(mask), mask);
}

/* The CPUs the process may run on, in order; returns how many (>= 1). */
CL_INLINE unsigned int cl__rt_allowed_cpus(int *out, unsigned int max)
{
	unsigned long mask[CL_MAX_CPUS / (8 * sizeof(unsigned long)) + 1];
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));
	long r = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	unsigned int n = 0;

	if (r <= 0) {
		out[0] = 0;
		return 1;
	}
	for (unsigned int c = 0; c < (unsigned int)r * 8 && n < max; c++)
		if ((mask[c / bpl] >> (c % bpl)) & 1UL)
			out[n++] = (int)c;
	if (!n)
		out[n++] = 0;
	return n;
}

/*
 * The clock for @w's pick (cl__rt_worker_pick()). With at most one task
 * to run (queued, waking or claimed here) the pick has no choice, and, as
 * at a hand-off (cl__rt_schedule()), the clock is sampled at the tick:
 * read only if the kernel's tick clock moved since the last look, else the
 * last reading stands. A reading at each such pick would restart the
 * sampling there: a task that runs between idle periods, alone on its
 * worker (each side of a cross-worker pair), would be charged only the
 * runs a tick fell in, a small part of its running time; and the TSC
 * read would be on the path of every wakeup an idle worker takes.
 * Context: @w's rq lock.
 */
CL_INLINE void cl__rt_pick_clock(struct cl__rt_worker *w)
{
	if (!w->rt->precise_clock && w->rq->nr_running + w->nr_wakes + (w->claimed != NULL) <= 1) {
		uint64_t tick = cl__rt_tick_ns();

		if (tick == w->tick_seen) {
			w->nr_clock_skips++;
			return;
		}
		w->tick_seen = tick;
	}
	w->now_ns = cl__rt_now(w->rt);
	w->nr_clock_reads++;
}

/*
 * cl__rt_worker_pick() - pick the next task of @w's rq and run it until
 * the worker is idle again. Returns 1 if a task ran and another may be
 * runnable now (queued, waking, pushed or claimed here), else 0: the
 * worker goes on to its idle loop at once, whose spin looks for the same.
 */
CL_INLINE int cl__rt_worker_pick(struct cl__rt_worker *w)
{
	struct cl_task *next;
	struct cl_rt_task *n;

	cl__rt_timers_run(w); /* due timers: their tasks on the local wake list */
	cl__rt_io_reap(w, 0); /* I/O that completed, the same (iopoll.h) */
	cl__rq_lock(w->rq);
	cl__rt_drain_remote(w);
	if (w->watching && cl__rt_watch_claimed(w, w->watching))
		cl__rt_watch_stop(w);
	cl__rt_pick_clock(w);
	cl__rq_update_clock(w->rq, w->now_ns);
	cl__rt_queue_claimed(w); /* after the list: woken about when it ran dry */
	cl__rt_flush_wakes(w, 0);
	next = cl_rq_pick_next(w->rq);
	if (!next) {
		cl__rq_unlock(w->rq);
		return 0; /* a watch goes on in the idle spin */
	}
	if (CL_UNLIKELY(w->watching)) /* it runs something else first: no watch then */
		cl__rt_watch_drop(w);
	if (w->idle_since) { /* an idle period ends: its average (the kernel's avg_idle) */
		/* until the pick's reading, or the idle loop's last one if later
		 * (the pick kept an earlier reading) */
		uint64_t end = w->now_ns > w->idle_seen ? w->now_ns : w->idle_seen;
		int64_t d = (int64_t)(end - w->idle_since);

		if (d < 0)
			d = 0;
		w->avg_idle_ns = (uint64_t)((int64_t)w->avg_idle_ns + (d - (int64_t)w->avg_idle_ns) / 8);
		w->idle_since = 0;
	}
	cl__rt_set_protect(w, next, w->now_ns);
	n = (struct cl_rt_task *)(void *)next;
	w->fin.prev = NULL;
	w->fin.unlock = NULL;
	cl__rt_set_curr(w, n);
	w = cl__rt_switch(w, &w->sched, &n->rc, 0);
	cl__rt_finish(w);
	/* without a second pick (its rq lock and clock) when it would find
	 * nothing: a wakeup that comes meanwhile is on the lines the spin polls */
	return w->wake_head || w->claimed || cl__rt_idle_work(w, w->watching);
}

/*
 * Spinning, bounded (Go's rule for its spinning threads): an idle worker
 * that watches no record (watch.h) spins only while fewer than half the
 * workers do so (rt->nr_spinning), else it goes to sleep at once; one that
 * watches the record of the task that just blocked on it spins for that
 * wakeup regardless, outside the count (a cross-worker ping-pong would
 * otherwise move the counter's line at every message). A spinner that
 * finds more than one task waiting (a burst: queued here, or two or more
 * pushed) wakes one sleeping worker (Go's wakep()), which pulls from it in
 * its idle balance and, finding more, wakes the next: a burst still fans
 * out to every worker while at most half of them spin.
 */
CL_INLINE int cl__rt_spin_begin(struct cl__rt_worker *w)
{
	struct cl_runtime *rt = w->rt;

	if (2 * CL_ATOMIC_FETCH_ADD(&rt->nr_spinning, 1u, CL_RELAXED) < rt->nr_workers)
		return 1;
	CL_ATOMIC_FETCH_SUB(&rt->nr_spinning, 1u, CL_RELAXED);
	w->nr_spin_skips++;
	return 0;
}

/* End a counted spin; @hit: it found work, maybe more than it can run. */
CL_INLINE void cl__rt_spin_end(struct cl__rt_worker *w, int hit)
{
	uintptr_t remote;

	CL_ATOMIC_FETCH_SUB(&w->rt->nr_spinning, 1u, CL_RELAXED);
	if (!hit || w->rt->nr_workers < 2)
		return;
	remote = CL_ATOMIC_LOAD(&w->remote_wakes, CL_RELAXED); /* a tagged task: one */
	if (CL_READ_ONCE(w->rq->nr_running) + (remote ? 1u + !(remote & 1u) : 0u) >= 2) {
		w->nr_wakeps++;
		cl__rt_kick_idle(w->rt, w->cpu);
	}
}

/*
 * cl__rt_worker_main() - a worker thread: run tasks; when none is runnable,
 * balance, spin (bounded, never past its next timer), then sleep on its
 * futex, or in its I/O backend while tasks are parked in I/O (until its
 * next timer, if it has one).
 */
CL_INLINE void *cl__rt_worker_main(void *arg)
{
	struct cl__rt_worker *w = (struct cl__rt_worker *)arg;
	struct cl_runtime *rt = w->rt;
	void *altstack = rt->no_overflow_report ? NULL : cl__rt_altstack_init();

	if (w->os_cpu >= 0)
		cl__rt_pin_self(w->os_cpu);
	(void)syscall(SYS_prctl, CL__RT_PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	urcu_memb_register_thread();
	cl__ctx_init_thread(&w->sched.ctx);
#ifdef CL_HAVE_TSAN
	w->sched.tsan_fiber = __tsan_get_current_fiber();
#endif
#ifdef CL__RT_ASAN
	{
		pthread_attr_t a;
		void *lo;
		size_t sz;

		if (pthread_getattr_np(pthread_self(), &a) == 0) {
			if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
				w->sched.stack_lo = lo;
				w->sched.stack_size = sz;
			}
			pthread_attr_destroy(&a);
		}
	}
#endif
	for (;;) {
		uint64_t now, until;
		int balanced, io;

		while (cl__rt_worker_pick(w))
			;
		if (CL_ATOMIC_LOAD(&rt->stop, CL_ACQUIRE)) {
			if (cl__rt_watch_stop_idle(w))
				continue;
			break;
		}
		CL_INJECT(65); /* idle: the pick found nothing, the spin not begun */
		now = cl__rt_now(rt);
		if (!w->idle_since)
			w->idle_since = now;
		w->idle_seen = now;
		/* idle balance, unless idle periods are short (then after a spin of
		 * CL_RUNTIME_IDLE_BALANCE_NS, below, or before sleeping) */
		balanced = w->avg_idle_ns >= CL_RUNTIME_IDLE_BALANCE_NS || rt->nr_workers < 2 ||
			   rt->spin_ns == CL_RUNTIME_NO_SPIN;
		if (balanced) {
			w->nr_idle_balances++;
			cl__rt_balance(w, now);
			if (CL_READ_ONCE(w->rq->nr_running))
				continue;
		} else {
			w->nr_idle_balance_skips++;
		}
		/* bounded spin: a remote waker finds `sleeping` clear and only pushes
		 * on the wake list, which this loop polls (no futex on either side).
		 * It polls the list's line for writing: a push takes it once, this
		 * loop takes it back once, and the drain's exchange then finds it
		 * here (a plain read would leave it shared, and the exchange would
		 * move it a third time) */
		if (!cl__rt_worker_spins(w)) {
			if (rt->spin_ns != CL_RUNTIME_NO_SPIN) {
				w->nr_spin_long_idle++; /* its work comes a long idle later: sleep */
				w->watch_cand = NULL;   /* (what the spin's watch would begin with) */
			}
			if (cl__rt_watch_stop_idle(w))
				continue;
		} else {
			/* and the record of the task that blocked last, which
			 * its waker may claim instead of pushing (waitq.h) */
			struct cl__rt_waiter *watch = w->watching ? w->watching : cl__rt_watch_begin(w);
			int hit = 0, counted = !watch && cl__rt_spin_begin(w);

			w->watching = NULL;
			until = now + rt->spin_ns;
			for (unsigned int i = 1; watch || counted; i++) {
				cl__rt_prefetchw(&w->remote_wakes);
				if (cl__rt_idle_work(w, watch) || CL_READ_ONCE(rt->stop) || cl__rt_io_ready(w)) {
					hit = 1;
					break;
				}
				CL_CPU_RELAX();
				if (!(i & 63)) {
					uint64_t t = cl__rt_now(rt);

					w->idle_seen = t;
					if (!balanced && t - now >= CL_RUNTIME_IDLE_BALANCE_NS) {
						balanced = 1;
						w->nr_idle_balances++;
						cl__rt_balance(w, t);
						continue; /* the check above sees what it pulled */
					}
					if (t > until)
						break;
					if (cl__rt_timer_due(w)) { /* never spin past a timer */
						hit = 1;
						break;
					}
				}
			}
			if (watch) /* before any sleep: a sleeper watches nothing */
				cl__rt_watch_end(w, watch);
			if (counted)
				cl__rt_spin_end(w, hit);
			hit |= w->claimed != NULL;
			if (hit) {
				w->nr_spin_hits++;
				continue;
			}
		}
		if (!balanced) {
			w->nr_idle_balances++;
			cl__rt_balance(w, cl__rt_now(rt));
			if (CL_READ_ONCE(w->rq->nr_running))
				continue;
		}
		/* sleep: announce, recheck, wait (see the wake protocol); with
		 * tasks parked in I/O here, in the I/O backend (iopoll.h) */
		io = cl__rt_io_sleeps(w);
		cl__rq_lock(w->rq);
		if (!w->rq->nr_running && !CL_ATOMIC_LOAD(&rt->stop, CL_ACQUIRE))
			CL_ATOMIC_STORE(&w->sleeping, io ? CL__RT_SLEEP_IO : CL__RT_SLEEP_FUTEX, CL_SEQ_CST);
		cl__rq_unlock(w->rq);
		CL_INJECT(68); /* announced asleep (rq lock released), not yet waiting */
		/* a remote waker pushes, then reads `sleeping`: see cl__rt_drain_remote().
		 * Until a waker (cl__rt_kick()) ends the sleep, or the worker's own
		 * next timer (timer.h): no timeout without one; the tick kicks a
		 * sleeper when tasks wait elsewhere (preempt.h) */
		if (CL_ATOMIC_LOAD(&w->sleeping, CL_RELAXED) && !CL_ATOMIC_LOAD(&w->remote_wakes, CL_SEQ_CST)) {
			struct timespec ts;
			const struct timespec *tmo = cl__rt_timer_timeout(w, &ts);

			w->nr_idle_sleeps++;
			w->nr_timer_sleeps += tmo != NULL;
			cl__rt_poke_shutdown(rt);
			if (io)
				cl__rt_io_wait(w, tmo); /* a kick writes its eventfd */
			else
				cl__futex_wait(&w->sleeping, CL__RT_SLEEP_FUTEX, tmo);
			/* the sleep's end, for the idle period's length (avg_idle_ns):
			 * the pick may keep a sampled reading from before the sleep */
			w->idle_seen = cl__rt_now(rt);
		}
		CL_ATOMIC_STORE(&w->idle_epoch, w->idle_epoch + 1, CL_SEQ_CST);
		CL_ATOMIC_STORE(&w->sleeping, 0, CL_SEQ_CST);
		cl__rt_tick_unpark(rt); /* awake: the tick runs again, if it stopped */
	}
	urcu_memb_unregister_thread();
	cl__rt_altstack_fini(altstack);
	return NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_WORKER_H */
