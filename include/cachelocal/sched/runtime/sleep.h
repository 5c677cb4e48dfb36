/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/sleep.h - cl_sleep_ns(), cl_sleep_until(): a
 * task sleeps on a timer of its worker's wheel (timer.h).
 *
 * The wake-to-run protocol with the wheel for a wait list: the task arms
 * its timer (the waiter record) and blocks without yielding in between
 * (not preemptible); only its worker's thread fires the wheel's timers,
 * and that thread runs the task's switch away first, so the task a timer
 * wakes is always completely off its CPU. It is woken where it blocked
 * (the local wake list) and runs again as any wakee does.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SLEEP_H
#define CACHELOCAL_SCHED_RUNTIME_SLEEP_H

CL_BEGIN_DECLS

/* CL_SLEEP_MAX_NS, the latest deadline a sleep takes: timer.h. */

/* clock_nanosleep(2)'s flag for an absolute deadline (strict C11 has no <time.h> one). */
#define CL__TIMER_ABSTIME 1

/* A thread outside the runtime sleeps until @deadline (CLOCK_MONOTONIC),
 * through signals (a sleep is restarted, as a task's is never interrupted). */
CL_INLINE int cl__sleep_thread(uint64_t deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline / 1000000000ULL);
	ts.tv_nsec = (long)(deadline % 1000000000ULL);
	while (syscall(SYS_clock_nanosleep, CL__CLOCK_MONOTONIC, CL__TIMER_ABSTIME, &ts, NULL) != 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/**
 * cl_sleep_until() - sleep until a point in time.
 * @deadline_ns: CLOCK_MONOTONIC time in ns (clock_gettime());
 *               one already past returns at once.
 *
 * In a task, the task blocks on a timer of its worker's timing wheel and
 * the worker runs other tasks, or sleeps until its next timer; it wakes at
 * the first wheel tick (1024 ns) at or after @deadline_ns, plus the wake
 * latency (an idle worker's futex timeout; a busy worker's tick, see
 * docs/runtime.md, Time). It never returns before @deadline_ns. Outside a
 * task, the thread sleeps (clock_nanosleep()). A signal interrupts
 * neither: the sleep goes on. cl_runtime_shutdown() waits for sleeping
 * tasks as for running ones.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: 0, or -1 with errno EINVAL (@deadline_ns above CL_SLEEP_MAX_NS).
 */
CL_INLINE int cl_sleep_until(uint64_t deadline_ns)
{
	struct cl_rt_task *self;

	if (CL__BAD_ARG(deadline_ns > CL_SLEEP_MAX_NS))
		return -1;
	self = cl__rt_current();
	if (!self)
		return cl__sleep_thread(deadline_ns);
	if (deadline_ns <= cl__rt_timer_now())
		return 0;
	cl__rt_np_inc(self); /* on this worker, armed and blocked with no switch between */
	cl__rt_timer_arm(self->w, self, deadline_ns, NULL);
	cl__rt_block(self, NULL);
	return 0;
}

/**
 * cl_sleep_ns() - sleep for a time.
 * @ns: how long, in ns (0: returns at once).
 *
 * cl_sleep_until() of now (CLOCK_MONOTONIC) plus @ns.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: 0, or -1 with errno EINVAL (now plus @ns above CL_SLEEP_MAX_NS).
 */
CL_INLINE int cl_sleep_ns(uint64_t ns)
{
	uint64_t now = cl__rt_timer_now();

	if (CL__BAD_ARG(ns > CL_SLEEP_MAX_NS - now))
		return -1;
	if (!ns)
		return 0;
	return cl_sleep_until(now + ns);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SLEEP_H */
