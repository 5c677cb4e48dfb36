/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/queue.h - the runqueue operations, all with the rq lock
 * held: hierarchical enqueue/dequeue, put/pick (with the MRU run list, T4),
 * the tick and wakeup preemption.
 *
 * -DCL_PICK_NO_MRU_MOVE builds the "before" of T4's pick path: the picked
 * task stays where it is on cfs_tasks (enqueue order, newest first), so the
 * list is no longer ordered by last run; only for measuring the move's cost
 * (bench/pipe_no_mru).
 */
#ifndef CACHELOCAL_SCHED_QUEUE_H
#define CACHELOCAL_SCHED_QUEUE_H

#include <errno.h>
#include <stdint.h>

#include <urcu/list.h>

#include "../compiler.h"
#include "bandwidth.h"
#include "fair.h"
#include "group.h"
#include "rq_core.h"

CL_BEGIN_DECLS

/*
 * cl__for_each_curr_level(p, pos, q): every level of @p's entity chain
 * (task entity, then its group entities up to the root queue) at which the
 * level's entity is its queue's curr, i.e. the levels charged for @p running.
 * @pos (entity) and @q (its queue) are caller variables set on each step.
 */
#define cl__for_each_curr_level(p, pos, q) \
	for ((pos) = &(p)->se; (pos) && (((q) = (pos)->cfs_rq), 1); (pos) = (pos)->parent) \
		if ((q)->curr != (pos)) { \
		} else

/* cl_rq_enqueue() without the checks (also the offline drain's, for a migrating @p). */
CL_INLINE void cl__rq_enqueue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	struct cl_sched_entity *se = &p->se;
	uint64_t now = rq->clock_task;
	int throttled = 0;

	if ((flags & CL_ENQUEUE_WAKEUP) && p->cpu >= 0 && p->cpu != (int)rq->cpu && p->se.cfs_rq) {
		/* woke on another CPU: rebase from the old queue's floor (its lock is held) */
		p->se.vruntime -= p->se.cfs_rq->min_vruntime;
		flags |= CL_ENQUEUE_MIGRATED;
		p->se.nr_migrations++;
	}
	cl__set_task_rq(rq, p);
	for (; se; se = se->parent) {
		struct cl_cfs_rq *cfs_rq = se->cfs_rq;

		if (se->on_rq)
			break;
		if (se->my_q)
			cl__update_cfs_group(se);
		cl__enqueue_entity(cfs_rq, se, flags, now);
		CL_WRITE_ONCE(cfs_rq->h_nr_running, cfs_rq->h_nr_running + 1);
		if (cfs_rq->throttled) {
			throttled = 1;
			goto out;
		}
		flags = CL_ENQUEUE_WAKEUP; /* group entities keep absolute vruntime */
	}
	for (; se; se = se->parent) {
		struct cl_cfs_rq *cfs_rq = se->cfs_rq;

		if (se->my_q)
			cl__update_cfs_group(se);
		CL_WRITE_ONCE(cfs_rq->h_nr_running, cfs_rq->h_nr_running + 1);
		if (cfs_rq->throttled) {
			throttled = 1;
			break;
		}
	}
out:
	if (!throttled)
		CL_WRITE_ONCE(rq->nr_running, rq->nr_running + 1);
	cds_list_add(&p->se.group_node, &rq->cfs_tasks);
	CL_ATOMIC_STORE(&p->on_rq, CL_TASK_ON_RQ_QUEUED, CL_RELEASE);
}


/**
 * cl_rq_enqueue() - make @p runnable on @rq.
 * @rq: the rq (its clock updated by the caller), online.
 * @p: a task not queued anywhere, allowed on @rq's CPU.
 * @flags: CL_ENQUEUE_WAKEUP if @p slept (its vruntime is absolute and gets
 *         at most half a period of credit); 0 for a new or migrating task
 *         (vruntime relative, rebased on this queue's min_vruntime).
 *
 * Queues @p's entity and every group entity above it that was not queued;
 * counts it in nr_running unless a group on the way is throttled; adds it
 * at the head of the MRU list.
 *
 * Context: @rq's lock held; if @p last ran on another CPU, that CPU's rq
 * lock too (cl_rq_lock_two(); @p->cpu changes only under both, which is
 * what makes cl_task_rq_lock() exact).
 * Return: 0, or -1 with errno EINVAL if @rq or @p is NULL, @p is already
 * queued or migrating, or @p or its group belongs to another instance;
 * EBUSY if @p is still the running task of another rq; ENXIO if @rq's CPU
 * is offline or going offline (nothing is queued there: pick another CPU).
 */
CL_INLINE int cl_rq_enqueue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	if (!rq || !p) {
		errno = EINVAL;
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	if (p->se.on_rq || p->on_rq) {
		errno = EINVAL;
		return -1;
	}
	if ((p->tg && p->tg->root != &rq->sched->root) ||
	    (p->cpu >= 0 && p->se.cfs_rq && p->se.cfs_rq->rq->sched != rq->sched)) {
		errno = EINVAL; /* a task or group of another instance */
		return -1;
	}
	if (p->on_cpu && p->cpu != (int)rq->cpu) {
		errno = EBUSY; /* still curr elsewhere: put it first */
		return -1;
	}
	if (!rq->online) {
		errno = ENXIO;
		return -1;
	}
	if (p->cpu >= 0 && p->cpu != (int)rq->cpu)
		CL__RQ_ASSERT_HELD(cl__sched_rq(rq->sched, (unsigned int)p->cpu));
	cl__rq_enqueue(rq, p, flags);
	return 0;
}

/**
 * cl_rq_dequeue() - @p stops being runnable on @rq (blocks, or leaves to
 * migrate).
 * @rq: @p's rq (clock updated).
 * @p: a task queued on @rq; may be @rq's curr (then call cl_rq_put_prev()
 *     or cl_rq_pick_next() next, which will not requeue it).
 * @flags: CL_DEQUEUE_SLEEP if it blocks (vruntime kept absolute); 0 to
 *         migrate (vruntime made relative to this queue).
 *
 * Context: @rq's lock held.
 * Return: 0, or -1 with errno EINVAL if @p is not queued on @rq.
 */
CL_INLINE int cl_rq_dequeue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	struct cl_sched_entity *se;
	uint64_t now;
	int throttled = 0;

	if (CL__BAD_ARG(rq == NULL || p == NULL))
		return -1;
	se = &p->se;
	now = rq->clock_task;
	CL__RQ_ASSERT_HELD(rq);
	if (!se->on_rq || p->cpu != (int)rq->cpu || p->on_rq != CL_TASK_ON_RQ_QUEUED) {
		errno = EINVAL;
		return -1;
	}
	for (; se; se = se->parent) {
		struct cl_cfs_rq *cfs_rq = se->cfs_rq;

		cl__dequeue_entity(cfs_rq, se, flags, now);
		CL_WRITE_ONCE(cfs_rq->h_nr_running, cfs_rq->h_nr_running - 1);
		if (cfs_rq->throttled) {
			throttled = 1;
			goto out;
		}
		if (cfs_rq->nr_running) {
			se = se->parent;
			break;
		}
		flags |= CL_DEQUEUE_SLEEP;
	}
	for (; se; se = se->parent) {
		struct cl_cfs_rq *cfs_rq = se->cfs_rq;

		if (se->my_q)
			cl__update_cfs_group(se);
		CL_WRITE_ONCE(cfs_rq->h_nr_running, cfs_rq->h_nr_running - 1);
		if (cfs_rq->throttled) {
			throttled = 1;
			break;
		}
	}
out:
	if (!throttled)
		CL_WRITE_ONCE(rq->nr_running, rq->nr_running - 1);
	cds_list_del_init(&p->se.group_node);
	CL_ATOMIC_STORE(&p->on_rq, 0, CL_RELEASE);
	return 0;
}

/**
 * cl_rq_put_prev() - @rq's running task stops running (preempted, yielded,
 * or already dequeued to block or migrate).
 * @rq: the rq (clock updated).
 *
 * Charges the time since it was picked at every level, requeues its
 * entities that are still queued, and throttles groups out of runtime.
 *
 * Context: @rq's lock held.
 * Return: the task that was running, or NULL if none.
 */
CL_INLINE struct cl_task *cl_rq_put_prev(struct cl_rq *rq)
{
	struct cl_task *p;
	uint64_t now;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;

	if (CL__BAD_ARG(rq == NULL))
		return NULL;
	p = rq->curr;
	now = rq->clock_task;
	CL__RQ_ASSERT_HELD(rq);
	if (!p)
		return NULL;
	cl__for_each_curr_level(p, se, cfs_rq) {
		cl__update_curr(cfs_rq, now);
		cl__check_cfs_rq_runtime(rq, cfs_rq);
		cl__put_prev_entity(cfs_rq, se, now);
	}
	p->on_cpu = 0;
	CL_WRITE_ONCE(rq->curr, (struct cl_task *)NULL);
	return p;
}

/**
 * cl_rq_pick_next() - choose the next task to run on @rq and make it curr.
 * @rq: the rq (clock updated).
 *
 * Puts the running task back first (cl_rq_put_prev()). Descends from the
 * root queue taking the smallest vruntime at each level (a group entity
 * leads to its queue) and moves the chosen task to the head of cfs_tasks
 * (T4: the list stays ordered most recently run first; not with
 * -DCL_PICK_NO_MRU_MOVE).
 *
 * Context: @rq's lock held.
 * Return: the task, or NULL (idle: nothing runnable).
 */
CL_INLINE struct cl_task *cl_rq_pick_next(struct cl_rq *rq)
{
	struct cl_cfs_rq *cfs_rq;
	struct cl_sched_entity *se = NULL;
	uint64_t now;
	struct cl_task *p;

	if (CL__BAD_ARG(rq == NULL))
		return NULL;
	cfs_rq = &rq->cfs;
	now = rq->clock_task;
	cl_rq_put_prev(rq);
	if (!rq->nr_running || !rq->online)
		return NULL; /* idle, or going offline: the worker's acknowledgment */
	do {
		se = cl__timeline_first(cfs_rq);
		if (CL_UNLIKELY(!se))
			return NULL; /* inconsistent counts; cl_rq_validate() tells why */
		cl__set_next_entity(cfs_rq, se, now);
		cfs_rq = se->my_q;
	} while (cfs_rq);
	p = cl__task_of(se);
#ifndef CL_PICK_NO_MRU_MOVE
	cds_list_move(&p->se.group_node, &rq->cfs_tasks);
#endif
	p->on_cpu = 1;
	CL_WRITE_ONCE(rq->curr, p);
	rq->nr_switches++;
	return p;
}

/**
 * cl_rq_set_curr() - make @p, queued on @rq, the running task without a
 * pick (the caller has already decided; the kernel's set_next_task()).
 * @rq: the rq (clock updated), with no running task (cl_rq_put_prev()).
 * @p: a task queued on @rq.
 *
 * Makes @p's entity, and each group entity above it, the curr of its queue
 * and moves @p to the head of cfs_tasks, as cl_rq_pick_next() does for the
 * task it picks.
 *
 * Context: @rq's lock held.
 * Return: 0, or -1 with errno EINVAL (NULL argument, @rq has a running
 * task, @p not queued on @rq).
 */
CL_INLINE int cl_rq_set_curr(struct cl_rq *rq, struct cl_task *p)
{
	uint64_t now;

	if (!rq || !p) {
		errno = EINVAL;
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	if (rq->curr || !p->se.on_rq || p->on_rq != CL_TASK_ON_RQ_QUEUED || p->cpu != (int)rq->cpu) {
		errno = EINVAL;
		return -1;
	}
	now = rq->clock_task;
	for (struct cl_sched_entity *se = &p->se; se; se = se->parent)
		cl__set_next_entity(se->cfs_rq, se, now);
	cds_list_move(&p->se.group_node, &rq->cfs_tasks);
	p->on_cpu = 1;
	CL_WRITE_ONCE(rq->curr, p);
	rq->nr_switches++;
	return 0;
}

/* Should @curr (running from @cfs_rq) give way now? */
CL_INLINE int cl__check_preempt_tick(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *curr)
{
	uint64_t ideal = curr->slice; /* set by cl_rq_tick() just before */
	uint64_t ran = curr->sum_exec_runtime - curr->prev_sum_exec_runtime;
	struct cl_sched_entity *first;
	int64_t d;

	if (ran > ideal)
		return 1;
	if (ran < CL_SCHED_MIN_GRANULARITY_NS)
		return 0;
	first = cl__timeline_first(cfs_rq);
	if (!first)
		return 0;
	d = cl__vdiff(curr->vruntime, first->vruntime);
	return d > 0 && (uint64_t)d > ideal;
}

/**
 * cl_rq_tick() - periodic accounting of @rq's running task.
 * @rq: the rq.
 * @now_ns: current time (ns); updates the rq clock.
 *
 * Charges the running task at every level, updates load averages and group
 * weights, takes bandwidth runtime, and decides whether it should be
 * preempted (it used its slice, or another entity is far enough behind).
 *
 * Context: @rq's lock held.
 * Return: 1 if the caller should reschedule (cl_rq_pick_next()), else 0.
 */
CL_INLINE int cl_rq_tick(struct cl_rq *rq, uint64_t now_ns)
{
	struct cl_task *p;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;
	int resched = 0;

	if (CL__BAD_ARG(rq == NULL))
		return 0;
	cl__rq_update_clock(rq, now_ns);
	p = rq->curr;
	if (!p)
		return rq->nr_running != 0 && rq->online;
	now_ns = rq->clock_task;
	if (!p->se.on_rq || !rq->online)
		resched = 1; /* blocked, or the CPU is going offline: pick (NULL) next */
	cl__for_each_curr_level(p, se, cfs_rq) {
		cl__update_curr(cfs_rq, now_ns);
		cl__update_cfs_rq_avg(cfs_rq, now_ns);
		cl__update_se_avg(se, now_ns);
		if (se->my_q)
			cl__update_cfs_group(se);
		if (cfs_rq->runtime_enabled && cfs_rq->runtime_remaining <= 0 &&
		    !cl__assign_cfs_rq_runtime(cfs_rq))
			resched = 1;
		se->slice = cl_sched_slice(cfs_rq, se);
		if (cfs_rq->nr_running > 1 && cl__check_preempt_tick(cfs_rq, se))
			resched = 1;
	}
	return resched;
}

/**
 * cl_rq_check_preempt_wakeup() - should @p, just enqueued on @rq, preempt
 * the running task?
 * @rq: the rq (clock updated).
 * @p: a task queued on @rq.
 *
 * Compares the two at the first level where they share a queue: @p wins if
 * the running one is more than the wakeup granularity (scaled to @p's
 * weight) of vruntime ahead.
 *
 * Context: @rq's lock held.
 * Return: 1 (reschedule) or 0; -1 with errno EINVAL if @rq or @p is NULL or
 * @p is not queued on @rq.
 */
CL_INLINE int cl_rq_check_preempt_wakeup(struct cl_rq *rq, struct cl_task *p)
{
	struct cl_task *curr;
	struct cl_sched_entity *se, *cse;
	struct cl_cfs_rq *cfs_rq;
	uint64_t gran;
	int64_t d;

	if (!rq || !p || !p->se.on_rq || p->cpu != (int)rq->cpu) {
		errno = EINVAL;
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	curr = rq->curr;
	se = &p->se;
	if (!curr)
		return 1;
	if (curr == p)
		return 0;
	cl__for_each_curr_level(curr, cse, cfs_rq)
		cl__update_curr(cfs_rq, rq->clock_task);
	cse = &curr->se;
	while (se->depth > cse->depth)
		se = se->parent;
	while (cse->depth > se->depth)
		cse = cse->parent;
	while (se->cfs_rq != cse->cfs_rq) {
		se = se->parent;
		cse = cse->parent;
	}
	if (se == cse)
		return 0;
	d = cl__vdiff(cse->vruntime, se->vruntime);
	gran = cl__calc_delta_fair(CL_SCHED_WAKEUP_GRANULARITY_NS, se->load.weight);
	return d > 0 && (uint64_t)d > gran;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_QUEUE_H */
