/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/bandwidth.h - CPU bandwidth of task groups (cpu.max): the
 * group's quota (cl_tg_set_bandwidth()), its pool and the refill at period
 * boundaries (cl_tg_bandwidth_refill(), cl_sched_bandwidth_refill()), and
 * unthrottling on a runqueue (cl_rq_bandwidth_update()). The mechanics the
 * rq operations share (runtime assignment, throttle, unthrottle) are in
 * internal.h; the range constants (CL_TG_*) with struct cl_task_group in
 * fair.h.
 */
#ifndef CACHELOCAL_SCHED_BANDWIDTH_H
#define CACHELOCAL_SCHED_BANDWIDTH_H

#include <errno.h>
#include <stdint.h>

#include "../compiler.h"
#include "fair.h"
#include "group.h"
#include "internal.h"
#include "rq_core.h"

CL_BEGIN_DECLS

/* See rq.h: liburcu's entry iterators cast through char * (clang -Wcast-align). */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wcast-align"
#endif

/**
 * cl_tg_bandwidth_refill() - start a new period if @period_ns has elapsed.
 * @tg: a group.
 * @now_ns: the current time (any clock shared by all CPUs' rqs).
 *
 * Context: any thread; takes @tg's bw_lock.
 * Return: 1 if the pool was refilled, 0 if not (no quota or same period).
 */
CL_INLINE int cl_tg_bandwidth_refill(struct cl_task_group *tg, uint64_t now_ns)
{
	int refilled = 0;

	if (CL__BAD_ARG(tg == NULL))
		return 0;
	cl_spin_lock(&tg->bw_lock);
	if (tg->quota_ns && now_ns - tg->period_start >= tg->period_ns) {
		tg->period_start = now_ns - (now_ns - tg->period_start) % tg->period_ns;
		tg->runtime = (int64_t)tg->quota_ns;
		tg->nr_periods++;
		refilled = 1;
	}
	cl_spin_unlock(&tg->bw_lock);
	return refilled;
}

/**
 * cl_sched_bandwidth_refill() - cl_tg_bandwidth_refill() for every group.
 * @root: the root group.
 * @now_ns: the current time.
 *
 * Context: any registered RCU reader thread; takes the RCU read lock.
 * Return: how many groups were refilled.
 */
CL_INLINE unsigned long cl_sched_bandwidth_refill(struct cl_task_group *root, uint64_t now_ns)
{
	struct cl_task_group *tg;
	unsigned long n = 0;

	if (CL__BAD_ARG(root == NULL))
		return 0;
	cl_sched_rcu_read_lock();
	cl__tg_for_each_rcu(tg, root)
		n += (unsigned long)cl_tg_bandwidth_refill(tg, now_ns);
	cl_sched_rcu_read_unlock();
	return n;
}

/**
 * cl_tg_set_bandwidth() - cap @tg at @quota_ns of CPU time per @period_ns
 * (summed over CPUs, as cpu.max).
 * @tg: a non-root group.
 * @quota_ns: runtime per period, CL_TG_MIN_QUOTA_NS..CL_TG_MAX_QUOTA_NS
 *            (1 ms .. about 203 days); 0 removes the cap.
 * @period_ns: the period, CL_TG_MIN_PERIOD_NS..CL_TG_MAX_PERIOD_NS (1 ms ..
 *             1 s); 0 keeps the current one (default 100 ms).
 *
 * The pool starts full; cl_tg_bandwidth_refill() refills it each period.
 * Each CPU's queue of @tg is switched under that CPU's rq lock, taken here
 * one at a time. A quota given in ms or us by mistake is below 1 ms and
 * refused rather than starving the group.
 *
 * Context: holding no rq lock; @tg alive (not destroyed concurrently).
 * Return: 0, or -1 with errno EINVAL (NULL, root, or a value out of range).
 */
CL_INLINE int cl_tg_set_bandwidth(struct cl_task_group *tg, uint64_t quota_ns, uint64_t period_ns)
{
	CL__ASSERT_NO_RQ_LOCK();
	if (!tg || !tg->parent) {
		errno = EINVAL;
		return -1;
	}
	if (!period_ns)
		period_ns = tg->period_ns;
	if (period_ns < CL_TG_MIN_PERIOD_NS || period_ns > CL_TG_MAX_PERIOD_NS ||
	    (quota_ns && (quota_ns < CL_TG_MIN_QUOTA_NS || quota_ns > CL_TG_MAX_QUOTA_NS))) {
		errno = EINVAL;
		return -1;
	}
	cl_spin_lock(&tg->bw_lock);
	tg->quota_ns = quota_ns;
	tg->period_ns = period_ns;
	tg->runtime = (int64_t)quota_ns;
	cl_spin_unlock(&tg->bw_lock);
	for (unsigned int cpu = 0; cpu < tg->nr_cpus; cpu++) {
		struct cl_cfs_rq *cfs_rq = cl__tg_cfs_rq(tg, cpu);
		struct cl_rq *rq = cfs_rq->rq;

		cl__rq_lock(rq);
		cfs_rq->runtime_enabled = quota_ns != 0;
		cfs_rq->runtime_remaining = 0;
		cl__rq_unlock(rq);
	}
	return 0;
}

/**
 * cl_rq_bandwidth_update() - unthrottle @rq's group queues whose group has
 * runtime again (after cl_sched_bandwidth_refill()).
 * @rq: the rq (clock updated).
 *
 * Walks the groups for this CPU under RCU.
 *
 * Context: @rq's lock held; an RCU-registered thread.
 * Return: the number of queues unthrottled.
 */
CL_INLINE unsigned int cl_rq_bandwidth_update(struct cl_rq *rq)
{
	struct cl_task_group *root, *tg;
	unsigned int n = 0;

	if (CL__BAD_ARG(rq == NULL))
		return 0;
	root = &rq->sched->root;
	CL__RQ_ASSERT_HELD(rq);
	cl_sched_rcu_read_lock();
	/* parents after children in the list: go parents-first by repeating
	 * until nothing changes (depth passes at most) */
	for (int again = 1; again;) {
		again = 0;
		cl__tg_for_each_rcu(tg, root) {
			struct cl_cfs_rq *cfs_rq = cl__tg_cfs_rq(tg, rq->cpu);

			if (!cfs_rq->throttled)
				continue;
			if (cl__assign_cfs_rq_runtime(cfs_rq)) {
				cl__unthrottle_cfs_rq(rq, cfs_rq);
				n++;
				again = 1;
			}
		}
	}
	cl_sched_rcu_read_unlock();
	return n;
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_BANDWIDTH_H */
