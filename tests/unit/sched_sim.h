/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/sched_sim.h - deterministic driver for the sched/ unit tests:
 * simulated CPUs, a simulated clock, invariants checked after every step.
 */
#ifndef CL_SCHED_SIM_H
#define CL_SCHED_SIM_H

#include <stdint.h>
#include <stdlib.h>

#include <cachelocal/sched/rq.h>

#define SIM_TICK_NS 1000000ULL

/* liburcu 0.13 is not TSan-instrumented: see CL_SCHED_TSAN_SUPPRESSIONS. */
CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

/* Check every rq's invariants; fail the test with the reason. */
static inline void sim_validate(struct cl_sched *s)
{
	for (unsigned int c = 0; c < cl_sched_nr_cpus(s); c++) {
		const char *why = NULL;
		struct cl_rq *rq = cl_sched_rq(s, c);

		cl_rq_lock(rq);
		int r = cl_rq_validate(rq, &why);
		cl_rq_unlock(rq);
		cr_assert_eq(r, 0, "cpu %u: %s", c, why ? why : "?");
	}
}

/*
 * Run every CPU for @ticks ticks of SIM_TICK_NS: tick, reschedule when asked
 * or idle, refill bandwidth pools each tick. Validates after each step if
 * @check.
 */
static inline void sim_run(struct cl_sched *s, uint64_t *now, unsigned long ticks, int check)
{
	for (unsigned long t = 0; t < ticks; t++) {
		*now += SIM_TICK_NS;
		cl_sched_bandwidth_refill(cl_sched_root_group(s), *now);
		for (unsigned int c = 0; c < cl_sched_nr_cpus(s); c++) {
			struct cl_rq *rq = cl_sched_rq(s, c);

			cl_rq_lock(rq);
			int resched = cl_rq_tick(rq, *now);
			if (cl_rq_bandwidth_update(rq))
				resched = 1;
			if (resched || !rq->curr)
				cl_rq_pick_next(rq);
			cl_rq_unlock(rq);
		}
		if (check)
			sim_validate(s);
	}
}

/* Enqueue @p on @cpu as a new task at time @now. */
static inline void sim_enqueue(struct cl_sched *s, unsigned int cpu, struct cl_task *p, uint64_t now)
{
	struct cl_rq *rq = cl_sched_rq(s, cpu);

	cl_rq_lock(rq);
	cl_rq_update_clock(rq, now);
	cr_assert_eq(cl_rq_enqueue(rq, p, 0), 0);
	cl_rq_unlock(rq);
}

/* Move @p to @tg under its rq lock (cl_task_rq_lock()). */
static inline void sim_set_group(struct cl_sched *s, struct cl_task *p, struct cl_task_group *tg)
{
	struct cl_rq *rq = cl_task_rq_lock(s, p);

	cr_assert_eq(cl_task_set_group(p, tg), 0);
	cl_task_rq_unlock(rq, p);
}

/* Stop everything on every CPU (put the running tasks back, dequeue all). */
static inline void sim_drain(struct cl_sched *s, struct cl_task *tasks, unsigned int n, uint64_t now)
{
	for (unsigned int c = 0; c < cl_sched_nr_cpus(s); c++) {
		struct cl_rq *rq = cl_sched_rq(s, c);

		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now);
		cl_rq_put_prev(rq);
		cl_rq_unlock(rq);
	}
	for (unsigned int i = 0; i < n; i++) {
		if (!tasks[i].se.on_rq)
			continue;
		struct cl_rq *rq = cl_sched_rq(s, (unsigned int)tasks[i].cpu);

		cl_rq_lock(rq);
		cr_assert_eq(cl_rq_dequeue(rq, &tasks[i], CL_DEQUEUE_SLEEP), 0);
		cl_rq_unlock(rq);
	}
}

/* Detach every task (not queued) from its group: groups may then be destroyed. */
static inline void sim_detach(struct cl_sched *s, struct cl_task *tasks, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		sim_set_group(s, &tasks[i], NULL);
}

#endif
