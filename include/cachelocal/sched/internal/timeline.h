/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/internal/timeline.h - the fair queues' timeline: an AVL tree of entities
 * embedded in them (no allocation), ordered by virtual deadline, each node
 * carrying the smallest vruntime of its subtree.
 * A private piece of sched/internal.h (not API; included through it).
 */
#ifndef CACHELOCAL_SCHED_INTERNAL_TIMELINE_H
#define CACHELOCAL_SCHED_INTERNAL_TIMELINE_H

#include <stdint.h>

#include "../../compiler.h"
#include "../fair.h"

CL_BEGIN_DECLS

/* ---- small helpers ---- */

/* cl_task_of() without the argument checks. */
CL_INLINE struct cl_task *cl__task_of(struct cl_sched_entity *se)
{
	return cl_container_of(se, struct cl_task, se);
}

/* delta scaled by NICE_0_LOAD / weight: the vruntime an entity of @weight accrues. */
CL_INLINE uint64_t cl__calc_delta_fair(uint64_t delta, unsigned long weight)
{
	if (weight == CL_NICE_0_LOAD || weight == 0)
		return delta;
	if (delta < (UINT64_MAX >> 11))
		return delta * CL_NICE_0_LOAD / weight;
	return delta / weight * CL_NICE_0_LOAD;
}

/* Signed vruntime comparison, robust to wrap-around. */
CL_INLINE int64_t cl__vdiff(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b);
}

/* ---- timeline: an AVL tree ordered by (deadline, tl_seq), augmented with min_vruntime ----
 *
 * No parent pointers: insert and erase record the path from the root (an
 * AVL tree of n nodes is at most 1.44 log2(n + 2) high, so 64 levels hold
 * any tree that fits in memory) and retrace it bottom-up, stopping at the
 * first node whose height and subtree minimum did not change. An insert sets
 * the minima on its way down (it only adds a vruntime) and retraces heights
 * only; a removal recomputes a minimum only where it was the removed
 * vruntime; both leave the tree the general cl__tl_retrace() leaves
 * (test_sched_eevdf compares them step by step). The key of an
 * entity in the tree never changes while it is there (curr is not in the
 * tree; a reweight takes the entity out and puts it back).
 */
#define CL__TL_MAX_HEIGHT 64

CL_INLINE int cl__tl_height(const struct cl_sched_entity *se)
{
	return se ? se->tl_height : 0;
}

/* Does @a come before @b on the timeline? */
CL_INLINE int cl__tl_before(const struct cl_sched_entity *a, const struct cl_sched_entity *b)
{
	int64_t d = cl__vdiff(a->deadline, b->deadline);

	return d < 0 || (d == 0 && (int32_t)(a->tl_seq - b->tl_seq) < 0);
}

/* The augmented value of @se from its children: the smallest vruntime below it. */
CL_INLINE uint64_t cl__tl_min(const struct cl_sched_entity *se)
{
	const struct cl_sched_entity *l = se->run_node.left, *r = se->run_node.right;
	uint64_t m = se->vruntime;

	if (l && cl__vdiff(l->min_vruntime, m) < 0)
		m = l->min_vruntime;
	if (r && cl__vdiff(r->min_vruntime, m) < 0)
		m = r->min_vruntime;
	return m;
}

CL_INLINE void cl__tl_update(struct cl_sched_entity *se)
{
	int hl = cl__tl_height(se->run_node.left), hr = cl__tl_height(se->run_node.right);

	se->tl_height = 1 + (hl > hr ? hl : hr);
	se->min_vruntime = cl__tl_min(se);
}

CL_INLINE struct cl_sched_entity *cl__tl_rotate_left(struct cl_sched_entity *x)
{
	struct cl_sched_entity *y = x->run_node.right;

	x->run_node.right = y->run_node.left;
	y->run_node.left = x;
	cl__tl_update(x);
	cl__tl_update(y);
	return y;
}

CL_INLINE struct cl_sched_entity *cl__tl_rotate_right(struct cl_sched_entity *x)
{
	struct cl_sched_entity *y = x->run_node.left;

	x->run_node.left = y->run_node.right;
	y->run_node.right = x;
	cl__tl_update(x);
	cl__tl_update(y);
	return y;
}

/*
 * Restore the balance of the subtree at *@link (its children are right, one
 * is two higher than the other) with a single or double rotation. Returns 1
 * if its height or minimum differ from what its parent last saw.
 */
CL_INLINE int cl__tl_rebalance(struct cl_sched_entity **link)
{
	struct cl_sched_entity *n = *link;
	int old_h = n->tl_height;
	uint64_t old_min = n->min_vruntime;

	if (cl__tl_height(n->run_node.left) > cl__tl_height(n->run_node.right)) {
		struct cl_sched_entity *l = n->run_node.left;

		if (cl__tl_height(l->run_node.left) < cl__tl_height(l->run_node.right))
			n->run_node.left = cl__tl_rotate_left(l);
		n = *link = cl__tl_rotate_right(n);
	} else {
		struct cl_sched_entity *r = n->run_node.right;

		if (cl__tl_height(r->run_node.right) < cl__tl_height(r->run_node.left))
			n->run_node.right = cl__tl_rotate_right(r);
		n = *link = cl__tl_rotate_left(n);
	}
	return n->tl_height != old_h || n->min_vruntime != old_min;
}

/*
 * Recompute the subtree at *@link (its children are right) and restore its
 * balance with at most a double rotation. Returns 1 if its height or minimum
 * differ from what its parent last saw (the values stored before). A
 * balanced node (the common case) reads its children once and is written
 * only if a value changed.
 */
CL_ALWAYS_INLINE int cl__tl_fix(struct cl_sched_entity **link)
{
	struct cl_sched_entity *n = *link, *l = n->run_node.left, *r = n->run_node.right;
	int hl = cl__tl_height(l), hr = cl__tl_height(r), h;
	uint64_t m = n->vruntime;

	if (CL_UNLIKELY(hl - hr > 1 || hr - hl > 1))
		return cl__tl_rebalance(link);
	h = 1 + (hl > hr ? hl : hr);
	if (l && cl__vdiff(l->min_vruntime, m) < 0) /* cl__tl_min() on the children read above */
		m = l->min_vruntime;
	if (r && cl__vdiff(r->min_vruntime, m) < 0)
		m = r->min_vruntime;
	if (h == n->tl_height && m == n->min_vruntime)
		return 0;
	n->tl_height = h;
	n->min_vruntime = m;
	return 1;
}

/* Retrace @path[0..k) bottom-up; @must: an index that is fixed whatever happens below it (-1: none). */
CL_INLINE void cl__tl_retrace(struct cl_sched_entity ***path, int k, int must)
{
	while (k-- > 0) {
		if (cl__tl_fix(path[k]) || k == must)
			continue;
		if (must < 0 || must > k)
			break; /* unchanged: nothing above it changes */
		k = must + 1; /* skip to the node that took an erased one's place */
	}
}

/*
 * The retrace after an insert, whose descent already set the minima: only
 * heights change, bottom-up along @path[0..k), up to the first node whose
 * height stays (an insert's rotation restores its subtree's height: it stops
 * there too). What cl__tl_retrace() does then, reading no minimum.
 */
CL_INLINE void cl__tl_retrace_insert(struct cl_sched_entity ***path, int k)
{
	while (k-- > 0) {
		struct cl_sched_entity *n = *path[k];
		int hl = cl__tl_height(n->run_node.left), hr = cl__tl_height(n->run_node.right), h;

		if (CL_UNLIKELY(hl - hr > 1 || hr - hl > 1)) {
			if (cl__tl_rebalance(path[k]))
				continue;
			return;
		}
		h = 1 + (hl > hr ? hl : hr);
		if (h == n->tl_height)
			return;
		n->tl_height = h;
	}
}

/*
 * The retrace after the removal of a node with vruntime @v from below
 * @path[0..k), none taking its place: cl__tl_retrace() without the minimum's
 * recomputation at a node whose minimum is not @v (it is then below @v, held
 * by a node still there: unchanged).
 */
CL_INLINE void cl__tl_retrace_erase(struct cl_sched_entity ***path, int k, uint64_t v)
{
	while (k-- > 0) {
		struct cl_sched_entity *n = *path[k], *l = n->run_node.left, *r = n->run_node.right;
		int hl = cl__tl_height(l), hr = cl__tl_height(r), h;
		uint64_t m = n->min_vruntime;

		if (CL_UNLIKELY(hl - hr > 1 || hr - hl > 1)) {
			if (cl__tl_rebalance(path[k]))
				continue;
			return;
		}
		h = 1 + (hl > hr ? hl : hr);
		if (m == v) {
			m = n->vruntime;
			if (l && cl__vdiff(l->min_vruntime, m) < 0)
				m = l->min_vruntime;
			if (r && cl__vdiff(r->min_vruntime, m) < 0)
				m = r->min_vruntime;
		}
		if (h == n->tl_height && m == n->min_vruntime)
			return;
		n->tl_height = h;
		n->min_vruntime = m;
	}
}

/* Insert @se (its deadline and vruntime set) into @cfs_rq's tree. */
CL_INLINE void cl__tl_insert(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se)
{
	struct cl_sched_entity **path[CL__TL_MAX_HEIGHT + 1];
	struct cl_sched_entity **link = &cfs_rq->timeline.root;
	int k = 0;

	se->tl_seq = cfs_rq->timeline_seq++;
	while (*link && k < CL__TL_MAX_HEIGHT) {
		struct cl_sched_entity *n = *link;

		/* an insert only adds @se's vruntime below each node of the path: its
		 * new subtree minimum, set on the way down; the retrace then stops at
		 * the first height that does not change, and rotations recompute
		 * from children that are already right */
		if (cl__vdiff(se->vruntime, n->min_vruntime) < 0)
			n->min_vruntime = se->vruntime;
		path[k++] = link;
		link = cl__tl_before(se, n) ? &n->run_node.left : &n->run_node.right;
	}
	se->run_node.left = se->run_node.right = NULL;
	se->tl_height = 1;
	se->min_vruntime = se->vruntime;
	*link = se; /* a tree higher than 64 (never balanced) would lose a subtree: validate says so */
	cl__tl_retrace_insert(path, k);
}

/* Room for an erase's path: to the entity, then on to its successor. */
#define CL__TL_PATH_MAX (2 * CL__TL_MAX_HEIGHT + 2)

/*
 * Remove @se, found at *@link, from its tree; @path[0..k) are the links
 * from the root down to @link's node (each a link into the next; room for
 * CL__TL_PATH_MAX). A descent that found @se (the pick) passes its own path:
 * no second search.
 */
CL_INLINE void cl__tl_erase_at(struct cl_sched_entity ***path, int k, struct cl_sched_entity **link,
			       struct cl_sched_entity *se)
{
	struct cl_sched_entity **sl, *s;
	int j;

	if (!se->run_node.left || !se->run_node.right) {
		*link = se->run_node.left ? se->run_node.left : se->run_node.right;
		cl__tl_retrace_erase(path, k, se->vruntime);
		return;
	}
	/* two children: the successor (leftmost of the right subtree) takes its place */
	j = k;
	path[k++] = link;
	sl = &se->run_node.right;
	while ((*sl)->run_node.left && k < 2 * CL__TL_MAX_HEIGHT) {
		path[k++] = sl;
		sl = &(*sl)->run_node.left;
	}
	s = *sl;
	*sl = s->run_node.right;
	s->run_node = se->run_node;
	s->tl_height = se->tl_height; /* what the parent last saw at this place */
	s->min_vruntime = se->min_vruntime;
	*link = s;
	if (k > j + 1)
		path[j + 1] = &s->run_node.right;
	cl__tl_retrace(path, k, j);
}

/* Remove @se from @cfs_rq's tree. Returns -1 if it is not there. */
CL_INLINE int cl__tl_erase(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se)
{
	struct cl_sched_entity **path[CL__TL_PATH_MAX];
	struct cl_sched_entity **link = &cfs_rq->timeline.root;
	int k = 0;

	while (*link != se) {
		if (!*link || k >= CL__TL_MAX_HEIGHT)
			return -1;
		path[k++] = link;
		link = cl__tl_before(se, *link) ? &(*link)->run_node.left : &(*link)->run_node.right;
	}
	cl__tl_erase_at(path, k, link, se);
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_INTERNAL_TIMELINE_H */
