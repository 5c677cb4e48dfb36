/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/queue.h - the runqueue operations, all with the rq lock
 * held: hierarchical enqueue/dequeue, put/pick (EEVDF at every level, the
 * MRU run list, T4), the tick, wakeup preemption, and the per-task slice.
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
#include "fair.h"
#include "internal.h"
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

/**
 * cl_rq_enqueue() - make @p runnable on @rq.
 * @rq: the rq (its clock updated by the caller), online.
 * @p: a task not queued anywhere, allowed on @rq's CPU.
 * @flags: CL_ENQUEUE_WAKEUP if @p slept (the debt of a negative lag was
 *         repaid while it slept, up to zero); 0 for a new task (placed at
 *         the queue's average vruntime V with half a slice) or a migrating
 *         one (placed with the lag it left with).
 *
 * Queues @p's entity and every group entity above it that was not queued,
 * each at v = V - lag (lag scaled so that it survives the placement) with
 * deadline v + slice / weight; counts @p in nr_running unless a group on
 * the way is throttled; adds it at the head of the MRU list.
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
	    (p->cpu >= 0 && p->se.cfs_rq && p->se.cfs_rq->rq != rq && p->se.cfs_rq->rq->sched != rq->sched)) {
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
 * @flags: CL_DEQUEUE_SLEEP if it blocks; 0 to migrate. Either way its lag
 *         (V - vruntime, bounded by two slices) is kept for its next enqueue.
 *
 * Context: @rq's lock held.
 * Return: 0, or -1 with errno EINVAL if @rq or @p is NULL or @p is not
 * queued on @rq (including a task of another instance whose rq has the
 * same CPU number: nothing is changed).
 */
CL_INLINE int cl_rq_dequeue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	if (CL__BAD_ARG(rq == NULL || p == NULL))
		return -1;
	CL__RQ_ASSERT_HELD(rq);
	if (!cl__task_queued_on(rq, p)) {
		errno = EINVAL;
		return -1;
	}
	cl__rq_dequeue(rq, p, flags);
	return 0;
}

/* cl_rq_put_prev() without the checks; inlined into the pick, which calls it on every switch. */
CL_ALWAYS_INLINE struct cl_task *cl__rq_put_prev(struct cl_rq *rq)
{
	struct cl_task *p = rq->curr;
	uint64_t now = rq->clock_task;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;

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
	if (CL__BAD_ARG(rq == NULL))
		return NULL;
	CL__RQ_ASSERT_HELD(rq);
	return cl__rq_put_prev(rq);
}

/**
 * cl_rq_pick_next() - choose the next task to run on @rq and make it curr.
 * @rq: the rq (clock updated).
 *
 * Puts the running task back first (cl_rq_put_prev()). Descends from the
 * root queue taking, at each level, the eligible entity (lag >= 0) with the
 * earliest virtual deadline, in O(log n) (a group entity leads to its
 * queue), unless the level has a next buddy (cl_rq_set_next_buddy()):
 * then that one, which uses it up; the
 * previous task's entity at a level keeps the CPU while its
 * slice is protected (RUN_TO_PARITY: until it reaches its deadline, or a
 * shorter-slice waker cancelled that, cl_rq_check_preempt_wakeup()). Moves
 * the chosen task to the head of cfs_tasks (T4: the list stays ordered most
 * recently run first; not with -DCL_PICK_NO_MRU_MOVE).
 *
 * Context: @rq's lock held.
 * Return: the task, or NULL (idle: nothing runnable).
 */
CL_INLINE struct cl_task *cl_rq_pick_next(struct cl_rq *rq)
{
	struct cl_sched_entity *prev_at[CL_TG_MAX_DEPTH + 1];
	struct cl_sched_entity **path[CL__TL_PATH_MAX];
	struct cl_cfs_rq *cfs_rq;
	struct cl_sched_entity *se = NULL;
	struct cl_task *p;
	uint64_t now;
	int have_prev = 0;

	if (CL__BAD_ARG(rq == NULL))
		return NULL;
	CL__RQ_ASSERT_HELD(rq);
	cfs_rq = &rq->cfs;
	now = rq->clock_task;
	if (rq->curr) {
		/* the previous task's entity at each depth, to honour its protected slice */
		for (se = &rq->curr->se; se; se = se->parent)
			if (se->depth >= 0 && se->depth <= CL_TG_MAX_DEPTH)
				prev_at[se->depth] = se;
		have_prev = rq->curr->se.depth;
		have_prev = have_prev >= 0 && have_prev <= CL_TG_MAX_DEPTH ? have_prev + 1 : 0;
	}
	cl__rq_put_prev(rq);
	if (!rq->nr_running || !rq->online)
		return NULL; /* idle, or going offline: the worker's acknowledgment */
	for (int depth = 0;; depth++) {
		struct cl_sched_entity *pe = depth < have_prev ? prev_at[depth] : NULL;
		struct cl_sched_entity *nb = cfs_rq->next, **at = NULL;
		int k = 0;

		if (CL_UNLIKELY(nb != NULL))
			cfs_rq->next = NULL;
		if (nb)
			se = nb;
		else if (pe && pe->cfs_rq == cfs_rq && pe->on_rq && cl__protect_slice(pe))
			se = pe;
		else /* the descent's path: the erase needs no second search */
			se = cl__pick_eevdf_path(cfs_rq, path, &k, &at);
		if (CL_UNLIKELY(!se))
			return NULL; /* inconsistent counts; cl_rq_validate() tells why */
		cl__set_next_entity_at(cfs_rq, se, now, path, k, at);
		cfs_rq = se->my_q;
		if (!cfs_rq)
			break;
	}
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
 * task, @p not queued on @rq, e.g. a task of another instance).
 */
CL_INLINE int cl_rq_set_curr(struct cl_rq *rq, struct cl_task *p)
{
	uint64_t now;

	if (!rq || !p) {
		errno = EINVAL;
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	if (rq->curr || !cl__task_queued_on(rq, p)) {
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

/**
 * cl_rq_set_next_buddy() - let the next cl_rq_pick_next() on @rq choose @p
 * if it is eligible now (the kernel's next buddy, which its yield_to()
 * sets and its pick takes when eligible).
 * @rq: the rq (clock updated).
 * @p: a task queued on @rq, not its running task.
 *
 * If @p's entity, and each queued group entity above it, is eligible (lag
 * not negative) on its queue now, with the running task still counted,
 * marks each as the next buddy of its queue, and the next pick takes it at
 * each level, which uses the buddy up. Called right before the pick that
 * follows the running task's dequeue (a block or an exit), this is the
 * kernel's outcome: there a task that blocks with a negative lag stays in
 * the average until its lag is repaid (delayed dequeue), so an entity
 * eligible before the block is eligible at that pick. A buddy that leaves
 * its queue is forgotten. A task waiting on @p (a join) names it: a
 * spawn/join tree then runs depth-first, its queue as long as the tree is
 * deep.
 *
 * Context: @rq's lock held.
 * Return: 1 if @p was named, 0 if not (not eligible: no preference), or -1
 * with errno EINVAL (NULL argument, @p not queued on @rq, e.g. a task of
 * another instance, or @p is @rq's running task).
 */
CL_INLINE int cl_rq_set_next_buddy(struct cl_rq *rq, struct cl_task *p)
{
	if (!rq || !p) {
		errno = EINVAL;
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	if (rq->curr == p || !cl__task_queued_on(rq, p)) {
		errno = EINVAL;
		return -1;
	}
	return cl__set_next_buddy(rq, p, 0);
}

/**
 * cl_rq_yield() - @rq's running task gives up the rest of its slice: its
 * virtual deadline moves one slice later (the kernel's yield_task_fair()),
 * which also ends its protected slice, so the next cl_rq_pick_next() runs
 * the eligible task with the earliest deadline, maybe itself again.
 * @rq: the rq (clock updated).
 *
 * Context: @rq's lock held.
 * Return: 0 (also when nothing runs), or -1 with errno EINVAL for a NULL @rq.
 */
CL_INLINE int cl_rq_yield(struct cl_rq *rq)
{
	struct cl_task *p;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;

	if (CL__BAD_ARG(rq == NULL))
		return -1;
	CL__RQ_ASSERT_HELD(rq);
	p = rq->curr;
	if (!p || !p->se.on_rq)
		return 0;
	cl__for_each_curr_level(p, se, cfs_rq)
		cl__update_curr(cfs_rq, rq->clock_task);
	p->se.deadline += cl__calc_delta_fair(p->se.slice, p->se.load.weight);
	return 0;
}

/**
 * cl_rq_tick() - periodic accounting of @rq's running task.
 * @rq: the rq.
 * @now_ns: current time (ns); updates the rq clock.
 *
 * Charges the running task at every level (its vruntime; a new virtual
 * deadline once it passed the old one), updates load averages and group
 * weights, takes bandwidth runtime, and asks for a reschedule when, at a
 * level with another entity queued, the running entity's slice is no
 * longer protected (it reached its deadline), or when it blocked, ran out
 * of bandwidth or its CPU is going offline. The pick that follows may
 * choose it again (it is still the eligible one with the earliest deadline).
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
		if (cfs_rq->nr_running > 1 && !cl__protect_slice(se))
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
 * At the first level where the two share a queue: if @p's entity asks for
 * a shorter slice than the running one's, is eligible, and has the earlier
 * deadline (or the running one is no longer eligible), the running one's
 * protected slice is cancelled (the kernel's PREEMPT_SHORT); then @p
 * preempts if it is what the EEVDF pick of that queue chooses now (a
 * protected running entity chooses itself: RUN_TO_PARITY).
 *
 * Context: @rq's lock held.
 * Return: 1 (reschedule) or 0; -1 with errno EINVAL if @rq or @p is NULL or
 * @p is not queued on @rq (including another instance's task).
 */
CL_INLINE int cl_rq_check_preempt_wakeup(struct cl_rq *rq, struct cl_task *p)
{
	struct cl_task *curr;
	struct cl_sched_entity *se, *cse;
	struct cl_cfs_rq *cfs_rq;

	if (!rq || !p || !cl__task_queued_on(rq, p)) {
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
	cfs_rq = se->cfs_rq;
	if (se->slice < cse->slice && cl__entity_eligible(cfs_rq, se) &&
	    (cl__vdiff(se->deadline, cse->deadline) < 0 || !cse->on_rq || !cl__entity_eligible(cfs_rq, cse)))
		cl__cancel_protect_slice(cse);
	return cl__pick_eevdf(cfs_rq) == se;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_QUEUE_H */
