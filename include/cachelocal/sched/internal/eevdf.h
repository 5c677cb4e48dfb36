/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/internal/eevdf.h - EEVDF on one fair queue: the average vruntime V,
 * eligibility, deadlines, lag and placement, the pick, and the entity
 * operations (enqueue, dequeue, set, put, reweight), with PELT-like load
 * tracking. docs/sched.md "EEVDF" has the maths.
 * A private piece of sched/internal.h (not API; included through it).
 */
#ifndef CACHELOCAL_SCHED_INTERNAL_EEVDF_H
#define CACHELOCAL_SCHED_INTERNAL_EEVDF_H

#include <stdint.h>

#include "../../compiler.h"
#include "../fair.h"
#include "timeline.h"

CL_BEGIN_DECLS

/* ---- EEVDF on one queue (rq lock held) ----
 *
 * V, the load-weighted average vruntime of the queue (curr included), is
 * kept as two sums over the entities in the tree, relative to min_vruntime
 * (v0) so that they stay small: avg_vruntime = sum w_i (v_i - v0) and
 * avg_load = sum w_i; curr is added when V is needed. docs/sched.md has the
 * derivations; the kernel's kernel/sched/fair.c keeps the same sums.
 */

CL_INLINE void cl__avg_vruntime_add(struct cl_cfs_rq *cfs_rq, const struct cl_sched_entity *se)
{
	cfs_rq->avg_vruntime += (int64_t)se->load.weight * cl__vdiff(se->vruntime, cfs_rq->min_vruntime);
	cfs_rq->avg_load += se->load.weight;
}

CL_INLINE void cl__avg_vruntime_sub(struct cl_cfs_rq *cfs_rq, const struct cl_sched_entity *se)
{
	cfs_rq->avg_vruntime -= (int64_t)se->load.weight * cl__vdiff(se->vruntime, cfs_rq->min_vruntime);
	cfs_rq->avg_load -= se->load.weight;
}

/* The sums with curr included: *@avg = sum w (v - v0), return sum w. */
CL_INLINE unsigned long cl__avg_sums(const struct cl_cfs_rq *cfs_rq, int64_t *avg)
{
	const struct cl_sched_entity *curr = cfs_rq->curr;
	unsigned long load = cfs_rq->avg_load;

	*avg = cfs_rq->avg_vruntime;
	if (curr && curr->on_rq) {
		*avg += (int64_t)curr->load.weight * cl__vdiff(curr->vruntime, cfs_rq->min_vruntime);
		load += curr->load.weight;
	}
	return load;
}

/* V from the sums @avg, @load (cl__avg_sums()): rounded down (never past an eligible entity). */
CL_INLINE uint64_t cl__avg_of(const struct cl_cfs_rq *cfs_rq, int64_t avg, unsigned long load)
{
	if (load) {
		if (avg < 0)
			avg -= (int64_t)load - 1; /* floor, not towards zero */
		avg /= (int64_t)load;
	}
	return cfs_rq->min_vruntime + (uint64_t)avg;
}

/* V: min_vruntime when the queue is empty; rounded down (never past an eligible entity). */
CL_INLINE uint64_t cl__avg_vruntime(const struct cl_cfs_rq *cfs_rq)
{
	int64_t avg;
	unsigned long load = cl__avg_sums(cfs_rq, &avg);

	return cl__avg_of(cfs_rq, avg, load);
}

/* Is vruntime @v eligible (V - v >= 0), given the sums? Exact: no division. */
CL_INLINE int cl__eligible_v(const struct cl_cfs_rq *cfs_rq, int64_t avg, unsigned long load, uint64_t v)
{
	return avg >= cl__vdiff(v, cfs_rq->min_vruntime) * (int64_t)load;
}

/**
 * cl__entity_eligible() - lag >= 0: @se has not received more than its share.
 * @cfs_rq: the queue @se is on (or is being placed on).
 * @se: the entity.
 *
 * Return: 1 when eligible, else 0.
 */
CL_INLINE int cl__entity_eligible(const struct cl_cfs_rq *cfs_rq, const struct cl_sched_entity *se)
{
	int64_t avg;
	unsigned long load = cl__avg_sums(cfs_rq, &avg);

	return cl__eligible_v(cfs_rq, avg, load, se->vruntime);
}

/* Raise min_vruntime to the smallest vruntime queued (curr, tree), never lower it; rebase the sum. */
CL_INLINE void cl__update_min_vruntime(struct cl_cfs_rq *cfs_rq)
{
	struct cl_sched_entity *curr = cfs_rq->curr, *root = cfs_rq->timeline.root;
	uint64_t v = cfs_rq->min_vruntime;
	int have = 0;

	if (curr && curr->on_rq) {
		v = curr->vruntime;
		have = 1;
	}
	if (root && (!have || cl__vdiff(root->min_vruntime, v) < 0)) {
		v = root->min_vruntime;
		have = 1;
	}
	if (have && cl__vdiff(v, cfs_rq->min_vruntime) > 0) {
		cfs_rq->avg_vruntime -= (int64_t)cfs_rq->avg_load * cl__vdiff(v, cfs_rq->min_vruntime);
		/* written once: other CPUs read it as a hint */
		CL_WRITE_ONCE(cfs_rq->min_vruntime, v);
	}
}

/* RUN_TO_PARITY: set_next_entity() stamps the deadline in vlag; it holds until the deadline moves. */
CL_INLINE int cl__protect_slice(const struct cl_sched_entity *se)
{
	return se->vlag == (int64_t)se->deadline;
}

CL_INLINE void cl__cancel_protect_slice(struct cl_sched_entity *se)
{
	if (cl__protect_slice(se))
		se->vlag = (int64_t)se->deadline + 1;
}

/* The entity ran past its virtual deadline: ask for the next slice (vd = v + slice / w). */
CL_INLINE void cl__update_deadline(struct cl_sched_entity *se)
{
	if (cl__vdiff(se->vruntime, se->deadline) < 0)
		return;
	se->deadline = se->vruntime + cl__calc_delta_fair(se->slice, se->load.weight);
}

/*
 * cl__pick_eevdf() - the eligible entity with the earliest deadline among
 * the tree and curr; curr while its slice is protected (RUN_TO_PARITY).
 * Descent: a left subtree holding an eligible vruntime (its augmented
 * minimum) has an eligible entity with an earlier deadline than anything to
 * the right, so go left when it has one; else this node if eligible; else
 * right. O(height). With @path (room for CL__TL_PATH_MAX), the descent
 * records its links: if the result is a tree node, *@at is its link and
 * @path[0..*@k) the links above it, for cl__tl_erase_at() (else *@at is NULL).
 */
CL_INLINE struct cl_sched_entity *cl__pick_eevdf_path(struct cl_cfs_rq *cfs_rq,
						      struct cl_sched_entity ***path, int *k,
						      struct cl_sched_entity ***at)
{
	struct cl_sched_entity *curr = cfs_rq->curr, *n = cfs_rq->timeline.root, *best = NULL;
	struct cl_sched_entity **link = &cfs_rq->timeline.root;
	int64_t avg;
	unsigned long load;
	int depth = 0;

	if (at)
		*at = NULL;

	if (curr && !curr->on_rq)
		curr = NULL;
	if (curr && cl__protect_slice(curr))
		return curr;
	load = cl__avg_sums(cfs_rq, &avg);
	if (curr && !cl__eligible_v(cfs_rq, avg, load, curr->vruntime))
		curr = NULL;
	while (n && depth < CL__TL_MAX_HEIGHT) {
		struct cl_sched_entity *l = n->run_node.left;

		if (path)
			path[depth] = link;
		depth++;
		if (l && cl__eligible_v(cfs_rq, avg, load, l->min_vruntime)) {
			link = &n->run_node.left;
			n = l;
			continue;
		}
		if (cl__eligible_v(cfs_rq, avg, load, n->vruntime)) {
			best = n;
			break;
		}
		link = &n->run_node.right;
		n = n->run_node.right;
	}
	if (!best || (curr && cl__vdiff(curr->deadline, best->deadline) < 0))
		best = curr;
	else if (at) {
		*at = link;
		*k = depth - 1;
	}
	if (!best) /* only with corrupted sums (cl_rq_validate() says which): the first deadline */
		for (best = cfs_rq->timeline.root; best && best->run_node.left;)
			best = best->run_node.left;
	return best;
}

CL_INLINE struct cl_sched_entity *cl__pick_eevdf(struct cl_cfs_rq *cfs_rq)
{
	return cl__pick_eevdf_path(cfs_rq, NULL, NULL, NULL);
}

/* Tree and sums together. */
CL_INLINE void cl__enqueue_timeline(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se)
{
	cl__avg_vruntime_add(cfs_rq, se);
	cl__tl_insert(cfs_rq, se);
}

CL_INLINE void cl__dequeue_timeline(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se)
{
	cl__tl_erase(cfs_rq, se);
	cl__avg_vruntime_sub(cfs_rq, se);
}

/* The most lag an entity keeps: max(2 slices, a tick) of service, in its virtual time. */
CL_INLINE int64_t cl__lag_limit(const struct cl_sched_entity *se)
{
	uint64_t l = 2 * se->slice > CL_SCHED_TICK_NS ? 2 * se->slice : CL_SCHED_TICK_NS;

	return (int64_t)cl__calc_delta_fair(l, se->load.weight);
}

CL_INLINE int64_t cl__clamp_lag(const struct cl_sched_entity *se, int64_t lag)
{
	int64_t limit = cl__lag_limit(se);

	return lag > limit ? limit : lag < -limit ? -limit : lag;
}

/* ---- PELT-like load tracking ---- */

#define CL_PELT_PERIOD 1024U      /* units of 1024 ns per period */
#define CL_PELT_LOAD_AVG_MAX 47742UL /* limit of sum over n of 1024 * y^n */

/*
 * val * y^n with y^32 = 1/2: halved once per 32 periods, then one multiply
 * by y^(n mod 32) in 32-bit fixed point (floor(2^32 * 2^(-i/32)); i = 0
 * is the identity).
 */
CL_INLINE uint64_t cl__pelt_decay(uint64_t val, uint64_t n)
{
	static const uint32_t y_pow[32] = {
		0u,	    4202935003U, 4112874773U, 4024744347U, 3938502375U, 3854108391U, 3771522796U,
		3690706839U, 3611622602U, 3534232977U, 3458501653U, 3384393094U, 3311872529U, 3240905930U,
		3171459999U, 3103502151U, 3037000499U, 2971923841U, 2908241642U, 2845924020U, 2784941737U,
		2725266179U, 2666869344U, 2609723833U, 2553802833U, 2499080104U, 2445529971U, 2393127307U,
		2341847523U, 2291666560U, 2242560871U, 2194507416U,
	};
	uint64_t y;

	if (n >= 32 * 63)
		return 0;
	val >>= n / 32;
	n %= 32;
	if (!n)
		return val;
	y = y_pow[n];
	return (val >> 32) * y + (((val & 0xffffffffULL) * y) >> 32);
}

/*
 * cl__pelt_accumulate() - advance @sa to @now; the time since the last update
 * counts with weight @w (0 while blocked). Returns 1 if a period boundary
 * was crossed (the average changed by decay).
 */
CL_INLINE int cl__pelt_accumulate(struct cl_sched_avg *sa, uint64_t now, unsigned long w)
{
	uint64_t delta, periods, contrib;

	if (now <= sa->last_update_time) {
		if (now < sa->last_update_time)
			sa->last_update_time = now;
		return 0;
	}
	delta = (now - sa->last_update_time) >> 10;
	if (!delta)
		return 0;
	sa->last_update_time += delta << 10;

	delta += sa->period_contrib;
	periods = delta / CL_PELT_PERIOD;
	if (periods) {
		uint64_t d1 = CL_PELT_PERIOD - sa->period_contrib;
		uint64_t d3 = delta % CL_PELT_PERIOD;
		uint64_t full = CL_PELT_LOAD_AVG_MAX - cl__pelt_decay(CL_PELT_LOAD_AVG_MAX, periods) -
				CL_PELT_PERIOD;

		sa->load_sum = cl__pelt_decay(sa->load_sum, periods);
		contrib = cl__pelt_decay(d1, periods) + full + d3;
	} else {
		contrib = delta - sa->period_contrib;
	}
	sa->period_contrib = (uint32_t)(delta % CL_PELT_PERIOD);
	sa->load_sum += contrib * w;
	return periods != 0;
}

/* Entity average: fraction of time runnable, scaled to its weight. */
CL_INLINE void cl__update_se_avg(struct cl_sched_entity *se, uint64_t now)
{
	cl__pelt_accumulate(&se->avg, now, se->on_rq ? 1 : 0);
	se->avg.load_avg = (unsigned long)(se->avg.load_sum * se->load.weight / CL_PELT_LOAD_AVG_MAX);
}

/* Queue average: decayed sum of the queued weight (blocked load decays). load_avg is a
 * function of load_sum alone, which only this function changes: recomputed when it did. */
CL_INLINE void cl__update_cfs_rq_avg(struct cl_cfs_rq *cfs_rq, uint64_t now)
{
	uint64_t sum = cfs_rq->avg.load_sum;

	cl__pelt_accumulate(&cfs_rq->avg, now, cfs_rq->load.weight);
	if (cfs_rq->avg.load_sum != sum)
		cfs_rq->avg.load_avg = (unsigned long)(cfs_rq->avg.load_sum / CL_PELT_LOAD_AVG_MAX);
}

/* ---- entity operations on one queue (rq lock held) ---- */

/* Add @delta to the queue's weight and, for a group queue, the group's sum. */
CL_INLINE void cl__cfs_rq_add_load(struct cl_cfs_rq *cfs_rq, long delta)
{
	cfs_rq->load.weight = (unsigned long)((long)cfs_rq->load.weight + delta);
	if (cfs_rq->tg && cfs_rq->tg->parent) {
		cfs_rq->tg_load_contrib += delta;
		CL_ATOMIC_FETCH_ADD(&cfs_rq->tg->load_weight, delta, CL_RELAXED);
	}
}

/*
 * cl__update_curr() - charge the running entity of @cfs_rq for the time
 * since its exec_start: vruntime += delta * NICE_0_LOAD / w; a new deadline
 * once it passed the old one (its slice is used). Returns the ns charged.
 */
CL_INLINE uint64_t cl__update_curr(struct cl_cfs_rq *cfs_rq, uint64_t now)
{
	struct cl_sched_entity *curr = cfs_rq->curr;
	uint64_t delta;

	if (!curr)
		return 0;
	if (cl__vdiff(now, curr->exec_start) <= 0)
		return 0;
	delta = now - curr->exec_start;
	curr->exec_start = now;
	curr->sum_exec_runtime += delta;
	curr->vruntime += cl__calc_delta_fair(delta, curr->load.weight);
	cl__update_deadline(curr);
	cl__update_min_vruntime(cfs_rq);
	if (cfs_rq->runtime_enabled)
		cfs_rq->runtime_remaining -= (int64_t)delta;
	return delta;
}

/*
 * cl__place_entity() - vruntime and deadline of @se joining @cfs_rq (not
 * counted in it yet). It keeps the lag it left with (vlag, virtual), so
 * v = V - lag; because joining moves V by -w lag / (W + w), the lag is
 * inflated by (W + w) / W first, and it then comes out exact (the kernel's
 * place_entity()). A sleeper's debt (negative lag) was being repaid while it
 * slept as V advanced past its vruntime, up to zero (the kernel keeps such
 * an entity queued, "delayed", until then). A new task starts with half a
 * slice of deadline. An empty queue ignores lag.
 */
CL_INLINE void cl__place_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, int flags)
{
	int64_t avg;
	unsigned long load = cl__avg_sums(cfs_rq, &avg);
	uint64_t V = cl__avg_of(cfs_rq, avg, load);
	uint64_t vslice = cl__calc_delta_fair(se->slice, se->load.weight);
	int64_t lag = 0;

	if (cfs_rq->nr_running) {
		lag = se->vlag;
		if ((flags & CL_ENQUEUE_WAKEUP) && lag < 0) {
			int64_t now = cl__clamp_lag(se, cl__vdiff(V, se->vruntime));

			lag = now < 0 ? now : 0;
		}
		if (load && lag) /* lag * (W + w) / W, without the overflow of the product */
			lag += lag * (int64_t)se->load.weight / (int64_t)load;
	}
	se->vruntime = V - (uint64_t)lag;
	if (flags & CL_ENQUEUE_INITIAL)
		vslice /= 2;
	se->deadline = se->vruntime + vslice;
}

/* Queue @se on @cfs_rq (not as curr). */
CL_INLINE void cl__enqueue_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, int flags,
				  uint64_t now)
{
	cl__update_curr(cfs_rq, now);
	cl__update_cfs_rq_avg(cfs_rq, now);
	cl__update_se_avg(se, now);
	cl__place_entity(cfs_rq, se, flags);
	cl__cfs_rq_add_load(cfs_rq, (long)se->load.weight);
	cfs_rq->nr_running++;
	se->cfs_rq = cfs_rq;
	if (se != cfs_rq->curr)
		cl__enqueue_timeline(cfs_rq, se);
	se->on_rq = 1;
	cl__update_min_vruntime(cfs_rq);
}

/*
 * Remove @se from @cfs_rq; a curr entity stays curr (off the queue) until
 * put. Its lag V - v, clamped, is kept in vlag, and its vruntime made
 * V' - vlag, V' being the queue's average without it: a sleeper's debt is
 * then repaid by exactly how far V moves on from V' (removing an entity
 * with a debt lowers V; the kernel's delayed entity stays in the average).
 */
CL_INLINE void cl__dequeue_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, int flags,
				  uint64_t now)
{
	uint64_t V;
	int64_t lag, avg;
	unsigned long load;

	(void)flags;
	cl__update_curr(cfs_rq, now);
	cl__update_cfs_rq_avg(cfs_rq, now);
	cl__update_se_avg(se, now);
	load = cl__avg_sums(cfs_rq, &avg); /* @se counted: in the tree, or curr and queued */
	V = cl__avg_of(cfs_rq, avg, load);
	lag = cl__clamp_lag(se, cl__vdiff(V, se->vruntime));
	if (cfs_rq->next == se)
		cfs_rq->next = NULL;
	if (se != cfs_rq->curr)
		cl__dequeue_timeline(cfs_rq, se);
	se->on_rq = 0;
	cl__cfs_rq_add_load(cfs_rq, -(long)se->load.weight);
	cfs_rq->nr_running--;
	se->vlag = lag;
	/* V' without @se: the same sums less its term (min_vruntime has not moved) */
	avg -= (int64_t)se->load.weight * cl__vdiff(se->vruntime, cfs_rq->min_vruntime);
	se->vruntime = cl__avg_of(cfs_rq, avg, load - se->load.weight) - (uint64_t)lag;
	cl__update_min_vruntime(cfs_rq);
}

/*
 * Make @se the running entity of @cfs_rq; its slice is protected until its
 * deadline moves. @at (may be NULL) and @path[0..k): where the pick's
 * descent found @se in the tree (cl__pick_eevdf_path()).
 */
CL_INLINE void cl__set_next_entity_at(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, uint64_t now,
				      struct cl_sched_entity ***path, int k, struct cl_sched_entity **at)
{
	if (at && *at == se) {
		cl__tl_erase_at(path, k, at, se);
		cl__avg_vruntime_sub(cfs_rq, se);
	} else if (se->on_rq) {
		cl__dequeue_timeline(cfs_rq, se);
	}
	CL_WRITE_ONCE(cfs_rq->curr, se);
	se->exec_start = now;
	se->prev_sum_exec_runtime = se->sum_exec_runtime;
	se->vlag = (int64_t)se->deadline;
}

CL_INLINE void cl__set_next_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, uint64_t now)
{
	cl__set_next_entity_at(cfs_rq, se, now, NULL, 0, NULL);
}

/* The running entity of @cfs_rq, already charged up to @now (cl__update_curr(): the
 * caller's, a second one would find nothing to charge), stops running; requeue it if
 * still queued. */
CL_INLINE void cl__put_prev_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *prev, uint64_t now)
{
	if (prev->on_rq) {
		cl__update_se_avg(prev, now);
		cl__enqueue_timeline(cfs_rq, prev);
	}
	CL_WRITE_ONCE(cfs_rq->curr, (struct cl_sched_entity *)NULL);
}

/*
 * cl__reweight_entity() - change the weight of @se in @cfs_rq (group
 * shares). Its real lag w * (V - v) is kept, so its virtual lag scales by
 * old / new weight; so does the distance to its deadline.
 */
CL_INLINE void cl__reweight_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se,
				   unsigned long weight)
{
	unsigned long old = se->load.weight;
	int in_tree = se->on_rq && se != cfs_rq->curr, prot = !in_tree && cl__protect_slice(se);
	uint64_t V;
	int64_t lag, rel;

	if (old == weight)
		return;
	if (!se->on_rq) {
		se->vlag = se->vlag * (int64_t)old / (int64_t)weight;
		se->load.weight = weight;
		return;
	}
	V = cl__avg_vruntime(cfs_rq);
	lag = cl__vdiff(V, se->vruntime) * (int64_t)old / (int64_t)weight;
	rel = cl__vdiff(se->deadline, se->vruntime) * (int64_t)old / (int64_t)weight;
	if (in_tree)
		cl__dequeue_timeline(cfs_rq, se);
	cl__cfs_rq_add_load(cfs_rq, (long)weight - (long)old);
	se->load.weight = weight;
	se->vruntime = V - (uint64_t)lag;
	se->deadline = se->vruntime + (uint64_t)rel;
	if (in_tree)
		cl__enqueue_timeline(cfs_rq, se);
	else if (prot)
		se->vlag = (int64_t)se->deadline; /* still protected, up to the scaled deadline */
}
CL_END_DECLS

#endif /* CACHELOCAL_SCHED_INTERNAL_EEVDF_H */
