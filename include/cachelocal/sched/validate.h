/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/validate.h - cl_rq_validate(): the runqueue's invariants, checked
 * by the tests, the soak and anyone debugging a caller.
 */
#ifndef CACHELOCAL_SCHED_VALIDATE_H
#define CACHELOCAL_SCHED_VALIDATE_H

#include <urcu/list.h>

#include <string.h>

#include "../compiler.h"
#include "fair.h"
#include "internal.h"
#include "rq_core.h"

CL_BEGIN_DECLS

/* ---- invariants ---- */

CL_INLINE const char *cl__validate_cfs_rq(const struct cl_rq *rq, struct cl_cfs_rq *cfs_rq,
					  unsigned int *tasks);

/* What a walk of one queue's tree adds up (checked against the queue's fields). */
struct cl__validate_sums {
	unsigned int nr;          /* entities */
	unsigned int h;           /* tasks below them */
	unsigned long w;          /* weights */
	int64_t avg;              /* sum of w * (v - min_vruntime) */
	const struct cl_sched_entity *prev; /* in-order predecessor */
};

/* Count queued entity @se of a queue: weight, tasks below it (recursing into a group). */
CL_INLINE const char *cl__validate_count(const struct cl_rq *rq, struct cl_sched_entity *se,
					 struct cl__validate_sums *sum, unsigned int *tasks)
{
	sum->nr++;
	sum->w += se->load.weight;
	if (se->my_q) {
		const char *why = cl__validate_cfs_rq(rq, se->my_q, tasks);

		if (why)
			return why;
		sum->h += se->my_q->h_nr_running;
	} else {
		sum->h++;
		(*tasks)++;
	}
	return NULL;
}

/*
 * In-order walk of the subtree at @se (recursion bounded by its height,
 * itself checked against CL__TL_MAX_HEIGHT): order, AVL balance, stored
 * heights and subtree minima, and each entity's state.
 */
CL_INLINE const char *cl__validate_tree(const struct cl_rq *rq, struct cl_cfs_rq *cfs_rq,
					struct cl_sched_entity *se, int depth,
					struct cl__validate_sums *sum, unsigned int *tasks)
{
	struct cl_sched_entity *l, *r;
	const char *why;
	int hl, hr;

	if (!se)
		return NULL;
	if (depth > CL__TL_MAX_HEIGHT)
		return "timeline deeper than an AVL tree can be";
	l = se->run_node.left;
	r = se->run_node.right;
	why = cl__validate_tree(rq, cfs_rq, l, depth + 1, sum, tasks);
	if (why)
		return why;
	if (!se->on_rq)
		return "entity on a timeline but not on_rq";
	if (se->cfs_rq != cfs_rq)
		return "entity's cfs_rq is not the queue it is on";
	if (se == cfs_rq->curr)
		return "curr is on its timeline";
	if (se->my_q && se->my_q->throttled)
		return "throttled group entity still queued";
	if (sum->prev && !cl__tl_before(sum->prev, se))
		return "timeline not ordered by deadline";
	sum->prev = se;
	hl = cl__tl_height(l);
	hr = cl__tl_height(r);
	if (se->tl_height != 1 + (hl > hr ? hl : hr))
		return "timeline node height is wrong";
	if (hl - hr > 1 || hr - hl > 1)
		return "timeline not balanced";
	if (se->min_vruntime != cl__tl_min(se))
		return "timeline node's subtree min_vruntime is wrong";
	sum->avg += (int64_t)se->load.weight * cl__vdiff(se->vruntime, cfs_rq->min_vruntime);
	why = cl__validate_count(rq, se, sum, tasks);
	if (why)
		return why;
	return cl__validate_tree(rq, cfs_rq, r, depth + 1, sum, tasks);
}

/*
 * Check one queue and everything under it; counts tasks reached. Recursion
 * depth is bounded by CL_TG_MAX_DEPTH (refused at group create).
 */
CL_INLINE const char *cl__validate_cfs_rq(const struct cl_rq *rq, struct cl_cfs_rq *cfs_rq,
					  unsigned int *tasks)
{
	struct cl__validate_sums sum;
	struct cl_sched_entity *se;
	const char *why;

	if (cfs_rq->rq != rq)
		return "queue of another rq in the hierarchy";
	memset(&sum, 0, sizeof(sum));
	why = cl__validate_tree(rq, cfs_rq, cfs_rq->timeline.root, 0, &sum, tasks);
	if (why)
		return why;
	if (sum.avg != cfs_rq->avg_vruntime)
		return "cfs_rq avg_vruntime does not match its timeline";
	if (sum.w != cfs_rq->avg_load)
		return "cfs_rq avg_load does not match its timeline";
	se = cfs_rq->curr;
	if (se && se->on_rq) {
		why = cl__validate_count(rq, se, &sum, tasks);
		if (why)
			return why;
	}
	if (sum.nr != cfs_rq->nr_running)
		return "cfs_rq nr_running does not match its queued entities";
	if (sum.w != cfs_rq->load.weight)
		return "cfs_rq load does not match its queued entities' weights";
	if (sum.h != cfs_rq->h_nr_running)
		return "cfs_rq h_nr_running does not match the tasks below it";
	if (cfs_rq->next && (!cfs_rq->next->on_rq || cfs_rq->next->cfs_rq != cfs_rq))
		return "cfs_rq next buddy is not queued on it";
	if (cfs_rq->tg->parent && cfs_rq->nr_running && !cfs_rq->throttled &&
	    !cl__cfs_rq_se(cfs_rq)->on_rq)
		return "non-empty unthrottled group queue whose entity is not queued";
	return NULL;
}

/**
 * cl_rq_validate() - check @rq's invariants (tests, debugging).
 * @rq: the rq.
 * @why: set to a description of the first violation (may be NULL).
 *
 * Checks: each timeline's tree ordered by virtual deadline, AVL-balanced,
 * with every node's height and subtree minimum vruntime (the augmented
 * value the pick relies on) right, and holding only queued entities of
 * that queue (curr excluded); the queue's avg_vruntime and avg_load equal
 * to the sums over its tree; nr_running, load and h_nr_running of each
 * queue equal to what is queued under it; rq->nr_running equal to the tasks
 * reachable from the root queue; every task on cfs_tasks queued on this
 * rq; no more tasks reachable than on cfs_tasks.
 *
 * Context: @rq's lock held. O(queued entities).
 * Return: 0 if consistent, -1 if not (errno untouched: a pure check); -1
 * with errno EINVAL for a NULL @rq.
 */
CL_INLINE int cl_rq_validate(struct cl_rq *rq, const char **why)
{
	unsigned int tasks = 0, listed = 0;
	const char *w;
	struct cl_sched_entity *se;
	struct cds_list_head *pos;

	if (CL__BAD_ARG(rq == NULL)) {
		if (why)
			*why = "NULL rq";
		return -1;
	}
	CL__RQ_ASSERT_HELD(rq);
	w = cl__validate_cfs_rq(rq, &rq->cfs, &tasks);

	if (!w && tasks != rq->nr_running)
		w = "rq nr_running does not match the tasks reachable from the root";
	if (!w && rq->cfs.h_nr_running != rq->nr_running)
		w = "rq nr_running differs from cfs.h_nr_running";
	if (!w) {
		cds_list_for_each(pos, &rq->cfs_tasks) {
			se = cl_container_of(pos, struct cl_sched_entity, group_node);
			listed++;
			if (!se->on_rq || cl__task_of(se)->cpu != (int)rq->cpu || se->cfs_rq->rq != rq ||
			    cl__task_of(se)->on_rq != CL_TASK_ON_RQ_QUEUED) {
				w = "a task on cfs_tasks is not queued on this rq";
				break;
			}
		}
	}
	if (!w && listed < tasks)
		w = "fewer tasks on cfs_tasks than queued";
	if (!w && rq->curr && rq->curr->cpu != (int)rq->cpu)
		w = "curr belongs to another rq";
	if (why)
		*why = w;
	return w ? -1 : 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_VALIDATE_H */
