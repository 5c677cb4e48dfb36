/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/current.h - the calling task.
 *
 * cl__rt_current() (the task running on this thread, read afresh after
 * each switch), the caller's identity, errno across switches, entering
 * the non-preemptible count (cl__rt_np_enter(); its exit, which may
 * preempt, is in switch.h), and the write prefetch of the wake paths.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_CURRENT_H
#define CACHELOCAL_SCHED_RUNTIME_CURRENT_H

CL_BEGIN_DECLS

/* The task running on this thread, NULL outside the runtime's tasks. */
CL_WEAK __thread struct cl_rt_task *cl__rt_tls_current;

/*
 * Read the current task through a call the compiler cannot see through:
 * a task may resume on another worker thread, and a TLS address computed
 * before a switch must not be reused after it.
 */
CL_NOINLINE CL_UNUSED static struct cl_rt_task *cl__rt_current(void)
{
	struct cl_rt_task *t = cl__rt_tls_current;

	CL_BARRIER();
	return t;
}

/* The last struct cl_runtime.serial handed out. */
CL_WEAK uint64_t cl__rt_serials;

/* One byte per thread: its address identifies a thread outside the tasks. */
CL_WEAK __thread char cl__rt_tls_thread_id;

/* Who is calling (a mutex owner): the task, or the thread outside tasks. */
CL_INLINE const void *cl__rt_caller_id(void)
{
	const struct cl_rt_task *self = cl__rt_current();

	return self ? (const void *)self : (const void *)&cl__rt_tls_thread_id;
}

/*
 * cl__rt_prefetchw() - start taking @p's line for writing. A line another
 * CPU last wrote that is read first and then written moves twice (shared,
 * then the upgrade); fetched for writing it moves once. x86's PREFETCHW
 * (a no-op on CPUs without it); elsewhere the compiler's write prefetch
 * (CL__ARCH_PREFETCHW(), arch/arch.h).
 */
CL_INLINE void cl__rt_prefetchw(const void *p)
{
	CL__ARCH_PREFETCHW(p);
}

/*
 * errno after a switch: the task may resume on another worker thread, and
 * glibc declares __errno_location() const, so a compiler reuses an errno
 * address computed before a call that parked: the old thread's. Below,
 * errno is redefined over a weak function, which no compiler inlines or
 * assumes anything of (it may be replaced at link time), so every read in
 * a file that includes the runtime computes the address afresh
 * (`r < 0 && errno == ECANCELED` reads right after any call). A second
 * declaration of __errno_location() without const is not enough: clang
 * merges it with glibc's.
 */
#if defined(errno)
int *cl__rt_errno_location(void);
CL_WEAK CL_NOINLINE int *cl__rt_errno_location(void)
{
	return &errno;
}
#undef errno
#define errno (*cl__rt_errno_location())
#endif

/* Set errno on the thread the task runs on now. */
CL_NOINLINE CL_UNUSED static void cl__rt_set_errno(int e)
{
	errno = e;
}

/* ---- preemption: the non-preemptible count ---- */

/*
 * struct cl_rt_task.np counts why the task may not be preempted now: a
 * runtime lock it holds (cl__rt_lock()), a runtime call under way, or
 * cl_preempt_disable(). Only the task itself changes it (from its code or
 * from the preemption signal handler on its thread), so plain accesses
 * with compiler barriers suffice. A preemption found not safe leaves the
 * worker's preempt_pending set, and the task yields when its count next
 * drops to 0 (cl__rt_np_exit()): "the next runtime call yields".
 */
CL_INLINE void cl__rt_np_inc(struct cl_rt_task *t)
{
	CL_WRITE_ONCE(t->np, t->np + 1);
	CL_BARRIER();
}

/* The calling task, made non-preemptible; NULL outside tasks. */
CL_INLINE struct cl_rt_task *cl__rt_np_enter(void)
{
	struct cl_rt_task *t = cl__rt_current();

	if (t)
		cl__rt_np_inc(t);
	return t;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_CURRENT_H */
