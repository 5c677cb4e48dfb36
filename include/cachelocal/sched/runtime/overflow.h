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

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_OVERFLOW_H */
