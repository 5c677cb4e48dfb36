/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/bandwidth.h - CPU bandwidth of task groups on the runqueues
 * (cpu.max): throttling and unthrottling a group's queue on one CPU, the
 * per-CPU runtime check, cl_tg_set_bandwidth() and cl_rq_bandwidth_update().
 * The group-side pool and its refill are in group.h.
 */
#ifndef CACHELOCAL_SCHED_BANDWIDTH_H
#define CACHELOCAL_SCHED_BANDWIDTH_H

#include <errno.h>
#include <stdint.h>

#include "../compiler.h"
#include "fair.h"
#include "group.h"
#include "rq_core.h"

CL_BEGIN_DECLS

/* See rq.h: liburcu's entry iterators cast through char * (clang -Wcast-align). */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wcast-align"
#endif

/*
 * cl__throttle_cfs_rq() - @cfs_rq ran out of runtime: take its group entity
 * (and ancestors that become empty) off the hierarchy; its tasks stay queued
 * in it. Marks the subtree (throttle_count) under RCU.
 */
CL_INLINE void cl__throttle_cfs_rq(struct cl_rq *rq, struct cl_cfs_rq *cfs_rq)
{
	struct cl_sched_entity *se = cl_cfs_rq_se(cfs_rq);
	unsigned int task_delta = cfs_rq->h_nr_running;
	uint64_t now = rq->clock_task;
	int dequeue = 1, stopped = 0;

	cl_sched_rcu_read_lock();
	cl__tg_walk_throttle_count(cfs_rq->tg, rq->cpu, +1);
	cl_sched_rcu_read_unlock();
	for (; se; se = se->parent) {
		struct cl_cfs_rq *qcfs = se->cfs_rq;

		if (dequeue && se->on_rq)
			cl__dequeue_entity(qcfs, se, CL_DEQUEUE_SLEEP, now);
		else if (se->my_q)
			cl__update_cfs_group(se);
		CL_WRITE_ONCE(qcfs->h_nr_running, qcfs->h_nr_running - task_delta);
		if (qcfs->throttled) {
			stopped = 1;
			break;
		}
		if (qcfs->nr_running)
			dequeue = 0;
	}
	if (!stopped)
		CL_WRITE_ONCE(rq->nr_running, rq->nr_running - task_delta);
	cfs_rq->throttled = 1;
	cfs_rq->nr_throttled++;
}

/* Undo cl__throttle_cfs_rq(): requeue the group entity and recount. */
CL_INLINE void cl__unthrottle_cfs_rq(struct cl_rq *rq, struct cl_cfs_rq *cfs_rq)
{
	struct cl_sched_entity *se = cl_cfs_rq_se(cfs_rq);
	unsigned int task_delta = cfs_rq->h_nr_running;
	uint64_t now = rq->clock_task;
	int enqueue = 1, stopped = 0;

	cfs_rq->throttled = 0;
	cl_sched_rcu_read_lock();
	cl__tg_walk_throttle_count(cfs_rq->tg, rq->cpu, -1);
	cl_sched_rcu_read_unlock();
	if (!cfs_rq->nr_running)
		return;
	for (; se; se = se->parent) {
		struct cl_cfs_rq *qcfs = se->cfs_rq;

		if (se->on_rq)
			enqueue = 0;
		if (se->my_q)
			cl__update_cfs_group(se);
		if (enqueue)
			cl__enqueue_entity(qcfs, se, CL_ENQUEUE_WAKEUP, now);
		CL_WRITE_ONCE(qcfs->h_nr_running, qcfs->h_nr_running + task_delta);
		if (qcfs->throttled) {
			stopped = 1;
			break;
		}
	}
	if (!stopped)
		CL_WRITE_ONCE(rq->nr_running, rq->nr_running + task_delta);
}

/*
 * cl__check_cfs_rq_runtime() - @cfs_rq used up its local runtime: refill it
 * from the group's pool or throttle it. Returns 1 if it throttled.
 */
CL_INLINE int cl__check_cfs_rq_runtime(struct cl_rq *rq, struct cl_cfs_rq *cfs_rq)
{
	if (!cfs_rq->runtime_enabled || cfs_rq->runtime_remaining > 0 || cfs_rq->throttled)
		return 0;
	if (cl__assign_cfs_rq_runtime(cfs_rq))
		return 0;
	cl__throttle_cfs_rq(rq, cfs_rq);
	return 1;
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
