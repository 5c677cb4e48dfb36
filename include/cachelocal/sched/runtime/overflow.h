/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/overflow.h - the stack-overflow report.
 *
 * Each worker's alternate signal stack and the SIGSEGV handler that names
 * the task whose stack guard a fault hit before the process dies.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_OVERFLOW_H
#define CACHELOCAL_SCHED_RUNTIME_OVERFLOW_H

CL_BEGIN_DECLS

/* ---- stack overflow report ---- */

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

/*
 * cl__rt_overflow_say() - write to stderr (write(2): async-signal-safe)
 * that @t overflowed its stack: @t, its fn, its stack bounds, @what @a and
 * where @a lies (its guard, or below it), then @how.
 */
CL_INLINE void cl__rt_overflow_say(const struct cl_rt_task *t, uintptr_t a, const char *what,
				   const char *how)
{
	uintptr_t g = (uintptr_t)t->keep.map, lo = (uintptr_t)t->rc.stack_lo;
	char buf[384], *p = buf;

	p = cl__rt_put_str(p, "cachelocal runtime: task ");
	p = cl__rt_put_hex(p, (uintptr_t)t);
	p = cl__rt_put_str(p, " (fn ");
	p = cl__rt_put_hex(p, (uintptr_t)t->fn);
	p = cl__rt_put_str(p, ") overflowed its stack [");
	p = cl__rt_put_hex(p, lo);
	p = cl__rt_put_str(p, ", ");
	p = cl__rt_put_hex(p, lo + t->rc.stack_size);
	p = cl__rt_put_str(p, "): ");
	p = cl__rt_put_str(p, what);
	p = cl__rt_put_str(p, " ");
	p = cl__rt_put_hex(p, a);
	p = cl__rt_put_str(p, a >= g ? " in its guard [" : " below its guard [");
	p = cl__rt_put_hex(p, g);
	p = cl__rt_put_str(p, ", ");
	p = cl__rt_put_hex(p, lo);
	p = cl__rt_put_str(p, ")");
	p = cl__rt_put_str(p, how);
	p = cl__rt_put_str(p, "\n");
	if (write(2, buf, (size_t)(p - buf)) < 0)
		p = buf;
}

/*
 * Checked guards (stack.h): the checks. cl__rt_stack_check() runs at every
 * switch out of a task (cl__rt_switch(), on any slot: one compare with the
 * saved context's stack_lo, on the line the switch writes, and a branch
 * never taken) and in the preemption signal's handler; a stack pointer
 * below the stack means the frames below it went into the guard region
 * (or, past it, into the neighbour's slot). cl__rt_guard_check_exit()
 * looks at the top CL__RT_GUARD_PROBE bytes of a checked slot's guard
 * region once its task returned (on the next context's stack): nonzero
 * words there are what a call chain that went past the stack's end and
 * returned before any switch left behind. Either way: the report, then
 * abort() (the guard region is the reserve that took the overflow: the
 * neighbour's stack is intact unless a single frame jumped the whole
 * region).
 */
CL_COLD CL_NOINLINE CL_UNUSED static void cl__rt_overflow_abort(const struct cl_rt_task *t,
								 uintptr_t a, const char *what,
								 const char *how)
{
	cl__rt_overflow_say(t, a, what, how);
	abort();
}

/* Abort with the report if the stack pointer (@sp, on @c's stack) is below
 * @c's stack. @c: the context of a task (a worker's own never fires: its
 * stack_lo is NULL or its thread stack's bottom). */
CL_ALWAYS_INLINE void cl__rt_stack_check(struct cl__rt_ctx *c, uintptr_t sp, const char *how)
{
	if (CL_UNLIKELY(sp < (uintptr_t)c->stack_lo))
		cl__rt_overflow_abort(cl_container_of(c, struct cl_rt_task, rc), sp, "stack pointer", how);
}

/* After @t returned (on another stack): abort with the report if its
 * checked guard region was written to. */
CL_INLINE void cl__rt_guard_check_exit(const struct cl_rt_task *t)
{
	const uintptr_t *top = (const uintptr_t *)t->rc.stack_lo;

	if (!t->keep.checked)
		return;
	for (size_t i = 1; i <= CL__RT_GUARD_PROBE / sizeof(*top); i++)
		if (CL_UNLIKELY(top[-(ptrdiff_t)i]))
			cl__rt_overflow_abort(t, (uintptr_t)&top[-(ptrdiff_t)i], "a write at",
					      ", found at its exit (checked guard)");
}

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

CL_INLINE void cl__rt_segv(int sig, siginfo_t *si, void *uc)
{
	struct cl_rt_task *t = cl__rt_tls_current;
	struct sigaction dfl;

	(void)uc;
	if (t && si) {
		uintptr_t a = (uintptr_t)si->si_addr, g = (uintptr_t)t->keep.map;
		uintptr_t lo = (uintptr_t)t->rc.stack_lo;

		if (a >= g && a < lo)
			cl__rt_overflow_say(t, a, "fault at", "");
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

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_OVERFLOW_H */
