/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/signals.h - the runtime's signal handlers.
 *
 * The stack-overflow report (each worker's alternate signal stack, the
 * task and its stack bounds printed before the process dies) and
 * preemption: the tick thread, the preemption signal and what it may
 * interrupt, cl_preempt_disable()/cl_preempt_enable().
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SIGNALS_H
#define CACHELOCAL_SCHED_RUNTIME_SIGNALS_H

CL_BEGIN_DECLS

/* ---- stack overflow report ---- */

/*
 * A task that runs past the end of its stack faults in the guard region
 * below it. Without help that is a bare SIGSEGV: the worker's own stack is
 * not where the fault is, and a handler would need a stack to run on. So
 * each worker gets an alternate signal stack (unless its thread already
 * has one), and cl_runtime_create() installs a SIGSEGV handler (SA_ONSTACK,
 * only if SIGSEGV still has its default action) that, for a fault in the
 * current task's guard, writes which task and its stack bounds to stderr
 * with write(2), puts the default action back and returns: the access
 * faults again and the process dies of SIGSEGV as it would have. Needs the
 * POSIX signal API (_POSIX_C_SOURCE >= 199309L and sigaltstack(), e.g.
 * _GNU_SOURCE or _DEFAULT_SOURCE); without it, or with
 * CL_RUNTIME_NO_OVERFLOW_REPORT, a fault stays a bare SIGSEGV.
 */
#if defined(__USE_POSIX199309) && (defined(__USE_XOPEN_EXTENDED) || defined(__USE_MISC))
#define CL__RT_OVERFLOW_REPORT 1
#define CL__RT_ALTSTACK_SIZE ((size_t)64 * 1024)

/* Append "0x" and @v in hex to @p; returns the end. */
CL_INLINE char *cl__rt_put_hex(char *p, uintptr_t v)
{
	int shift = (int)(sizeof(v) * 8) - 4;

	*p++ = '0';
	*p++ = 'x';
	while (shift > 0 && !((v >> shift) & 0xf))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*p++ = "0123456789abcdef"[(v >> shift) & 0xf];
	return p;
}

CL_INLINE char *cl__rt_put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

CL_INLINE void cl__rt_segv(int sig, siginfo_t *si, void *uc)
{
	struct cl_rt_task *t = cl__rt_tls_current;
	struct sigaction dfl;

	(void)uc;
	if (t && si) {
		uintptr_t a = (uintptr_t)si->si_addr, g = (uintptr_t)t->keep.map;
		uintptr_t lo = (uintptr_t)t->rc.stack_lo;

		if (a >= g && a < lo) {
			char buf[320], *p = buf;

			p = cl__rt_put_str(p, "cachelocal runtime: task ");
			p = cl__rt_put_hex(p, (uintptr_t)t);
			p = cl__rt_put_str(p, " (fn ");
			p = cl__rt_put_hex(p, (uintptr_t)t->fn);
			p = cl__rt_put_str(p, ") overflowed its stack [");
			p = cl__rt_put_hex(p, lo);
			p = cl__rt_put_str(p, ", ");
			p = cl__rt_put_hex(p, lo + t->rc.stack_size);
			p = cl__rt_put_str(p, "): fault at ");
			p = cl__rt_put_hex(p, a);
			p = cl__rt_put_str(p, " in its guard [");
			p = cl__rt_put_hex(p, g);
			p = cl__rt_put_str(p, ", ");
			p = cl__rt_put_hex(p, lo);
			p = cl__rt_put_str(p, ")\n");
			if (write(2, buf, (size_t)(p - buf)) < 0)
				p = buf;
		}
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL); /* the access faults again, now fatally */
}

/* Install cl__rt_segv() unless SIGSEGV already has a handler. */
CL_INLINE void cl__rt_overflow_report_init(void)
{
	struct sigaction old, sa;

	if (sigaction(SIGSEGV, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
	    old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cl__rt_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

/* Give the calling worker thread an alternate signal stack if it has none;
 * returns the mapping to free at exit, or NULL. */
CL_INLINE void *cl__rt_altstack_init(void)
{
	stack_t ss, old;
	void *m;

	if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
		return NULL;
	m = mmap(NULL, CL__RT_ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | CL__MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	ss.ss_sp = m;
	ss.ss_size = CL__RT_ALTSTACK_SIZE;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(m, CL__RT_ALTSTACK_SIZE);
		return NULL;
	}
	return m;
}

CL_INLINE void cl__rt_altstack_fini(void *m)
{
	stack_t ss;

	if (!m)
		return;
	memset(&ss, 0, sizeof(ss));
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	munmap(m, CL__RT_ALTSTACK_SIZE);
}
#else
CL_INLINE void cl__rt_overflow_report_init(void)
{
}

CL_INLINE void *cl__rt_altstack_init(void)
{
	return NULL;
}

CL_INLINE void cl__rt_altstack_fini(void *m)
{
	(void)m;
}
#endif

/* ---- preemption ---- */

/*
 * A tick thread per runtime looks at every worker each CL__RT_TICK_NS (or
 * each slice, if shorter). A worker whose switch count has not moved over a
 * whole slice of looks has run one task (or one hand-off chain) for at
 * least a slice: the tick sets CL__RT_PP_SLICE. A worker whose running task
 * is past its protected slice while a wakee waits on its remote list, or
 * another task is queued on its rq, gets CL__RT_PP_WAKE: run the EEVDF
 * check (wakeup preemption and the kernel's tick rule, see
 * cl__rt_set_protect() in switch.h; remote wakers set it themselves when
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
#if defined(CL__RT_OVERFLOW_REPORT) && defined(__USE_MISC) && !defined(CL_HAVE_TSAN) && \
	(defined(CL_ARCH_X86_64) || defined(CL_ARCH_AARCH64))
#define CL__RT_ASYNC_PREEMPT 1
extern char __executable_start[];
extern char etext[];
#if defined(CL_ARCH_X86_64)
#define CL__RT_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.gregs[16]) /* REG_RIP */
#else
#define CL__RT_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.pc)
#endif
#endif

/* The tick's period at most (ns): wakeup-preemption checks wait this long. */
#define CL__RT_TICK_NS 1000000ULL

/*
 * errno after a switch: the task may resume on another worker thread, and
 * an errno address computed before the switch would be the old thread's.
 * A call the compiler cannot see through computes it afresh.
 */
CL_NOINLINE CL_UNUSED static void cl__rt_set_errno(int e)
{
	errno = e;
}

/*
 * Should @t, running on @w with a mark set, be preempted now? A slice mark
 * says yes; a wake mark runs the check. Context: @t non-preemptible.
 */
CL_INLINE int cl__rt_preempt_due(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	int pp = CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED);

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

#ifdef CL__RT_ASYNC_PREEMPT
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
	pc = CL__RT_UC_PC(uc);
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
	/* NODEFER: the task switched to from the handler stays preemptible */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(CL_RUNTIME_PREEMPT_SIGNAL, &sa, NULL);
}
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

/* The tick thread (see above). */
CL_INLINE void *cl__rt_tick_main(void *arg)
{
	struct cl_runtime *rt = (struct cl_runtime *)arg;
	uint64_t period = rt->slice_ns < CL__RT_TICK_NS ? rt->slice_ns : CL__RT_TICK_NS;
	unsigned int looks = (unsigned int)((rt->slice_ns + period - 1) / period);
	struct timespec ts;

	ts.tv_sec = (time_t)(period / 1000000000ULL);
	ts.tv_nsec = (long)(period % 1000000000ULL);
	while (!CL_ATOMIC_LOAD(&rt->tick_stop, CL_ACQUIRE)) {
		uint64_t now;

		cl__futex_wait(&rt->tick_stop, 0, &ts);
		now = cl__rt_now(rt);
		for (unsigned int i = 0; i < rt->nr_workers; i++) {
			struct cl__rt_worker *w = &rt->workers[i];
			unsigned long sw = CL_ATOMIC_LOAD(&w->nr_switches, CL_RELAXED);
			uint64_t end;
			int want = 0;

			if (!CL_ATOMIC_LOAD(&w->in_task, CL_RELAXED)) {
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
	}
	return NULL;
}

/**
 * cl_preempt_disable() - keep the calling task from being preempted until
 * the matching cl_preempt_enable(). Calls nest.
 *
 * For code the runtime cannot see into: a spinlock of the application's
 * own or of the runqueue API (cl_task_group_*()) held by a task, a
 * flockfile() region, code whose thread-local state must not be shared
 * with the next task on the worker. Blocking calls still switch.
 *
 * Context: a runtime task (no effect elsewhere).
 */
CL_INLINE void cl_preempt_disable(void)
{
	(void)cl__rt_np_enter();
}

/**
 * cl_preempt_enable() - end a cl_preempt_disable() section; if the slice
 * ran out meanwhile, yield now.
 *
 * Context: a runtime task, after cl_preempt_disable() (no effect elsewhere).
 */
CL_INLINE void cl_preempt_enable(void)
{
	struct cl_rt_task *t = cl__rt_current();

	if (t && t->np > 0)
		cl__rt_np_exit(t);
}

/* Start the tick (and the signal) unless @rt has no preemption. */
CL_INLINE int cl__rt_tick_start(struct cl_runtime *rt)
{
	if (!rt->slice_ns)
		return 0;
#ifdef CL__RT_ASYNC_PREEMPT
	rt->preempt_signal = cl__rt_preempt_signal_init() == 0;
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
	CL_ATOMIC_STORE(&rt->tick_stop, 1, CL_RELEASE);
	cl__futex_wake(&rt->tick_stop, 1);
	pthread_join(rt->tick_thread, NULL);
	rt->tick_started = 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SIGNALS_H */
