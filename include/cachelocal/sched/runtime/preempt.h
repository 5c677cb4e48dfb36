/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/preempt.h - preemption.
 *
 * The tick thread, the preemption signal and what it may interrupt. A
 * preemption at a runtime call (cl__rt_np_exit()) is in switch.h, the
 * signal's kick in wakeq.h, cl_preempt_disable() in task.h.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_PREEMPT_H
#define CACHELOCAL_SCHED_RUNTIME_PREEMPT_H

CL_BEGIN_DECLS

/* ---- preemption ---- */

/*
 * A tick thread per runtime looks at every worker each CL__RT_TICK_NS (or
 * each slice, if shorter). A worker whose switch count has not moved over a
 * whole slice of looks has run one task (or one hand-off chain) for at
 * least a slice: the tick sets CL__RT_PP_SLICE. A worker whose running task
 * is past its protected slice while a wakee waits on its remote list, or
 * another task is queued on its rq, gets CL__RT_PP_WAKE: run the EEVDF
 * check (wakeup preemption and the kernel's tick rule, see
 * cl__rt_set_protect() in wakeq.h; remote wakers set it themselves when
 * they find the task past its protection). A newly set mark
 * comes with CL_RUNTIME_PREEMPT_SIGNAL; the tick signals again each further
 * slice without a switch, and each look while a wakee still waits. The handler, on the worker's thread
 * and the task's stack, acts on the mark right there if the task is at a
 * safe point:
 *  - the task's non-preemptible count is 0: it holds no runtime lock, is
 *    in no runtime call that touches shared state, and has not called
 *    cl_preempt_disable();
 *  - the interrupted instruction is in the main executable's code
 *    ([__executable_start, etext)), not in a shared library: never inside
 *    libc (malloc's and stdio's locks, which belong to the worker thread
 *    and would be taken again by the next task on it) or any other
 *    library.
 * An rseq critical section needs no check: the kernel already moved the
 * interrupted instruction to its abort handler before the handler runs.
 * Acting means: for a wake mark, the EEVDF check (cl__rt_wake_check());
 * then, if the task is to be preempted, pin it to this worker (so that it
 * resumes on the same thread: the code it was interrupted in may hold the
 * addresses of thread-local variables, and the signal frame restores this
 * thread's alternate stack), switch away through the runqueue keeping its
 * virtual deadline (CL__RT_PREEMPT: the fair class picks; a preemption is
 * not a yield), and, once picked again, restore its affinity and return
 * from the handler into the interrupted code. Otherwise the mark stays,
 * and the task acts on it when its non-preemptible count next drops to 0
 * (cl__rt_np_exit()).
 * Under ThreadSanitizer, which runs asynchronous signal handlers later from
 * its own interceptors, the signal is not used: marking only.
 */

#ifdef CL__RT_ASYNC_PREEMPT /* wakeq.h */
extern char __executable_start[];
extern char etext[];
#endif

/* The tick's period at most (ns): wakeup-preemption checks wait this long. */
#define CL__RT_TICK_NS 1000000ULL

#ifdef CL__RT_ASYNC_PREEMPT
/* Unblock the preemption signal on this thread (in its handler). */
CL_INLINE void cl__rt_preempt_unblock(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, CL_RUNTIME_PREEMPT_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

CL_INLINE void cl__rt_preempt_signal(int sig, siginfo_t *si, void *uc)
{
	struct cl_rt_task *t = cl__rt_tls_current;
	uintptr_t pc;
	const unsigned long *mask;
	unsigned int bits;
	struct cl_rq *rq;
	struct cl_runtime *rt;
	int e;

	(void)sig;
	(void)si;
	if (!t || t->np || !uc)
		return;
	cl__rt_stack_check(&t->rc, cl__rt_sp(), ", seen by the preemption signal"); /* overflow.h */
	pc = CL__ARCH_UC_PC(uc);
	if (pc < (uintptr_t)__executable_start || pc >= (uintptr_t)etext)
		return; /* in a library: the mark stays */
	e = errno;
	rt = t->rt;
	cl__rt_np_inc(t);
	if (!cl__rt_preempt_due(t->w, t)) {
		CL_BARRIER();
		CL_WRITE_ONCE(t->np, t->np - 1);
		errno = e; /* no switch: the same thread */
		return;
	}
	rq = cl_task_rq_lock(rt->sched, &t->task);
	mask = t->task.cpus_allowed;
	bits = t->task.cpus_allowed_bits;
	(void)cl_task_set_affinity(&t->task, rt->pin_masks + (size_t)t->w->cpu * rt->mask_words,
				   rt->nr_workers);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
	t->w->nr_preempts++;
	/* the signal is blocked in its handler (no SA_NODEFER): unblocked
	 * for the task this thread switches to, which must stay preemptible
	 * (a signal from here on finds this task's np raised and returns) */
	cl__rt_preempt_unblock();
	cl__rt_schedule(t->w, t, CL__RT_PREEMPT, NULL);
	rq = cl_task_rq_lock(rt->sched, &t->task);
	(void)cl_task_set_affinity(&t->task, mask, bits);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
	cl__rt_set_errno(e);
}

/* Route CL_RUNTIME_PREEMPT_SIGNAL to the handler; 0 if it is ours now. */
CL_INLINE int cl__rt_preempt_signal_init(void)
{
	struct sigaction old, sa;

	if (sigaction(CL_RUNTIME_PREEMPT_SIGNAL, NULL, &old) != 0)
		return -1;
	if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == cl__rt_preempt_signal)
		return 0;
	if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
		return -1; /* the application's: leave it */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cl__rt_preempt_signal;
	/* blocked while its handler runs, so signals that come faster than the
	 * handler starts cannot nest it without bound (a thread starved by its
	 * host got one frame per tick on its stack until it overflowed); the
	 * handler unblocks it itself before it switches to another task */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(CL_RUNTIME_PREEMPT_SIGNAL, &sa, NULL);
}
#endif

/*
 * The tick sleeps while the runtime is idle. A look that finds every
 * worker asleep (`sleeping` set: each sleeps on its futex until a waker,
 * or its own next timer, wakes it) parks the tick: it sets `tick_parked`, looks again, and sleeps
 * on that word without a timeout if every worker still sleeps. A worker
 * that wakes clears its `sleeping`, then unparks the tick (below) before
 * it runs anything: no switch pays for it. Both sides store, then load,
 * sequentially consistent: either the tick sees the worker awake, or the
 * worker sees the tick parked and wakes it.
 */
CL_INLINE int cl__rt_all_sleeping(struct cl_runtime *rt)
{
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (!CL_ATOMIC_LOAD(&rt->workers[i].sleeping, CL_SEQ_CST))
			return 0;
	return 1;
}

/* Wake the tick if it is parked (a worker woke up, or the runtime stops). */
CL_INLINE void cl__rt_tick_unpark(struct cl_runtime *rt)
{
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&rt->tick_parked, CL_SEQ_CST)) &&
	    CL_ATOMIC_XCHG(&rt->tick_parked, 0, CL_SEQ_CST) == 1)
		cl__futex_wake(&rt->tick_parked, 1);
}

/* Park the tick while every worker sleeps (see above). */
CL_INLINE void cl__rt_tick_park(struct cl_runtime *rt)
{
	CL_ATOMIC_STORE(&rt->tick_parked, 1, CL_SEQ_CST);
	CL_INJECT(69); /* the tick: parked, every worker not looked at again yet */
	if (cl__rt_all_sleeping(rt) && !CL_ATOMIC_LOAD(&rt->tick_stop, CL_SEQ_CST)) {
		rt->nr_tick_parks++;
		cl__futex_wait(&rt->tick_parked, 1, NULL);
	}
	CL_ATOMIC_STORE(&rt->tick_parked, 0, CL_SEQ_CST);
}

/*
 * The tick thread (see above): the preemption marks, and the idle
 * balancer's clock. Every CL_RUNTIME_BALANCE_NS (attr.balance_ns) of looks,
 * if tasks wait on some awake worker's rq (2 or more runnable there), it
 * wakes one sleeping worker (cl__rt_kick_idle()), which balances on its way
 * back to sleep: the kernel's nohz idle balancer, kicked from a busy CPU's
 * tick, balancing for the idle ones. Sleeping workers never wake on a period
 * (only at their own next timer: worker.h). A worker running a task when
 * one of its timers is due gets the timer mark (CL__RT_PP_TIMER; the
 * signal too, if preemption is on): its task's preemption check fires it.
 * Without preemption (slice_ns 0) only the balancer's clock and the timer
 * marks run.
 */
CL_INLINE void *cl__rt_tick_main(void *arg)
{
	struct cl_runtime *rt = (struct cl_runtime *)arg;
	uint64_t period = !rt->slice_ns ? rt->balance_ns
			  : rt->slice_ns < CL__RT_TICK_NS ? rt->slice_ns : CL__RT_TICK_NS;
	unsigned int looks = rt->slice_ns ? (unsigned int)((rt->slice_ns + period - 1) / period) : 1;
	uint64_t bal_looks = rt->balance_ns / period + (rt->balance_ns % period != 0), bal_seen = 0;
	struct timespec ts;

	ts.tv_sec = (time_t)(period / 1000000000ULL);
	ts.tv_nsec = (long)(period % 1000000000ULL);
	while (!CL_ATOMIC_LOAD(&rt->tick_stop, CL_ACQUIRE)) {
		uint64_t now;
		unsigned int awake = 0;
		int waiting = -1; /* a worker with tasks waiting on its rq */

		cl__futex_wait(&rt->tick_stop, 0, &ts);
		now = cl__rt_now(rt);
		for (unsigned int i = 0; i < rt->nr_workers; i++) {
			struct cl__rt_worker *w = &rt->workers[i];
			unsigned long sw = CL_ATOMIC_LOAD(&w->nr_switches, CL_RELAXED);
			uint64_t end;
			int want = 0, asleep = CL_ATOMIC_LOAD(&w->sleeping, CL_RELAXED);

			if (!asleep) {
				awake++;
				if (waiting < 0 && CL_READ_ONCE(w->rq->nr_running) >= 2)
					waiting = (int)i;
			}
			/* a timer due on a worker that runs a task: its next
			 * preemption check fires it (an idle worker fires its own) */
			if (!asleep && CL_ATOMIC_LOAD(&w->in_task, CL_RELAXED) && cl__rt_timer_due(w)) {
				CL_ATOMIC_FETCH_OR(&w->preempt_pending, CL__RT_PP_TIMER, CL_RELAXED);
				cl__rt_preempt_kick(w);
			}
			if (!rt->slice_ns)
				continue;
			if (asleep || !CL_ATOMIC_LOAD(&w->in_task, CL_RELAXED)) {
				w->tick_switches = sw;
				w->tick_quiet = 0;
				continue;
			}
			if (sw != w->tick_switches) {
				w->tick_switches = sw;
				w->tick_quiet = 0;
			} else if (++w->tick_quiet % looks == 0) {
				want = CL__RT_PP_SLICE; /* a whole slice without a switch */
			}
			/* past its protected slice while a wakee waits on the remote
			 * list, or another task is queued (the kernel's tick rule) */
			end = CL_ATOMIC_LOAD(&w->wake_preempt_ns, CL_RELAXED);
			if (end && now >= end &&
			    (CL_ATOMIC_LOAD(&w->remote_wakes, CL_RELAXED) ||
			     CL_READ_ONCE(w->rq->nr_running) >= 2))
				want |= CL__RT_PP_WAKE;
			if (!want)
				continue;
			/* signalled again while the mark stays: the handler may have
			 * found the task in a library, and the mark alone waits for
			 * its next runtime call */
			CL_ATOMIC_FETCH_OR(&w->preempt_pending, want, CL_RELAXED);
			cl__rt_preempt_kick(w);
		}
		if (++bal_seen >= bal_looks) {
			bal_seen = 0;
			if (waiting >= 0 && rt->nr_workers > 1) {
				rt->nr_balance_kicks++;
				cl__rt_kick_idle(rt, (unsigned int)waiting);
			}
		}
		if (!awake)
			cl__rt_tick_park(rt);
	}
	return NULL;
}

/* Start the tick (and the signal), unless @rt has neither preemption nor a
 * second worker to balance with. */
CL_INLINE int cl__rt_tick_start(struct cl_runtime *rt)
{
	if (!rt->slice_ns && rt->nr_workers < 2)
		return 0;
#ifdef CL__RT_ASYNC_PREEMPT
	rt->preempt_signal = rt->slice_ns && cl__rt_preempt_signal_init() == 0;
#endif
	if (pthread_create(&rt->tick_thread, NULL, cl__rt_tick_main, rt) != 0)
		return -1;
	rt->tick_started = 1;
	return 0;
}

CL_INLINE void cl__rt_tick_stop(struct cl_runtime *rt)
{
	if (!rt->tick_started)
		return;
	CL_ATOMIC_STORE(&rt->tick_stop, 1, CL_SEQ_CST);
	cl__futex_wake(&rt->tick_stop, 1);
	cl__rt_tick_unpark(rt);
	pthread_join(rt->tick_thread, NULL);
	rt->tick_started = 0;
}

/**
 * cl_runtime_preempt_mode() - how @rt preempts a task that has run its slice.
 * @rt: the runtime.
 *
 * "signal": the tick marks the task and signals its worker, which switches
 * at the interrupted point, so a task spinning in its own code is
 * preempted. "marks (...)": the task is preempted only at its next runtime
 * call, with why the signal is not used: "ThreadSanitizer", "no signal
 * context on this architecture", or "CL_RUNTIME_PREEMPT_SIGNAL has the
 * application's handler". "off (CL_RUNTIME_NO_PREEMPT)": never.
 * A C file built in a strict mode without the POSIX signal API
 * (`-std=c11` without `_DEFAULT_SOURCE`, which `pkg-config --cflags
 * cachelocal-sched` defines) does not compile a call to cl_runtime_create():
 * its error names the flag to add.
 *
 * Context: any.
 * Return: one of those strings, or NULL with errno EINVAL (NULL @rt).
 */
CL_INLINE const char *cl_runtime_preempt_mode(const struct cl_runtime *rt)
{
	if (!rt) {
		errno = EINVAL;
		return NULL;
	}
	if (!rt->slice_ns)
		return "off (CL_RUNTIME_NO_PREEMPT)";
#if defined(CL__RT_ASYNC_PREEMPT)
	return rt->preempt_signal ? "signal" : "marks (CL_RUNTIME_PREEMPT_SIGNAL has the application's handler)";
#elif defined(CL_HAVE_TSAN)
	return "marks (ThreadSanitizer)";
#elif !defined(CL__ARCH_UC_PC)
	return "marks (no signal context on this architecture)";
#else
	return "marks (built without the POSIX signal API: define _DEFAULT_SOURCE)";
#endif
}

/*
 * glibc without _DEFAULT_SOURCE (strict -std=c11) hides the signal API the
 * preemption signal and the overflow report need: a call to
 * cl_runtime_create() then fails to compile with this message rather than
 * run without them.
 */
#if defined(__GLIBC__) && !defined(__USE_MISC) && defined(__has_attribute)
#if __has_attribute(error)
#define CL__RT_NEEDS_SIGNAL_API 1
extern void cl__rt_signal_api_missing(void) __attribute__((error(
	"cachelocal's runtime needs the POSIX signal API for preemption and its stack-overflow "
	"report: build with $(pkg-config --cflags cachelocal-sched), which defines "
	"_DEFAULT_SOURCE, or add -D_DEFAULT_SOURCE")));
#endif
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_PREEMPT_H */
