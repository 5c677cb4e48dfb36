/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/internal.h - the private part of cachelocal/sched/: what
 * its public headers share. Not API: names here are cl__ and may change
 * without notice. A public sched/ header uses its own cl__ names and these,
 * never another public header's (scripts/check-layers.sh).
 *
 *	locks, clock      cl__rq_lock/unlock, cl__sched_rq, cl__rq_update_clock,
 *	                  the CL_DEBUG ownership checks
 *	RCU, groups       TSan model of liburcu, RCU list helpers and walks,
 *	                  per-CPU accessors of a group (T5), root group set-up
 *	timeline          the augmented AVL tree (cl__tl_*)
 *	EEVDF             V, eligibility, deadlines, lag, placement, the pick;
 *	                  entity enqueue/dequeue/set/put/reweight on one queue
 *	load              PELT-like averages, group entity weights
 *	bandwidth         runtime assignment, throttle, unthrottle
 *	hierarchy         task enqueue/dequeue on an rq, without argument checks
 *
 * Everything here runs with the lock of the rq concerned held unless it
 * says otherwise.
 */
#ifndef CACHELOCAL_SCHED_INTERNAL_H
#define CACHELOCAL_SCHED_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/list.h>
#include <urcu/rculist.h>
#include <urcu/urcu-memb.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../percpu.h"
#include "../spinlock.h"
#include "fair.h"
#include "internal/eevdf.h"
#include "rq_core.h"

CL_BEGIN_DECLS

/*
 * liburcu's list iterators compute the entry through a char * (its
 * caa_container_of), which clang's -Wcast-align flags; the nodes are
 * members of naturally aligned structs, so the casts are exact.
 */
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wcast-align"
#endif

/*
 * ---- CL_DEBUG lock ownership ----
 * Under CL_DEBUG each rq records the thread holding its lock, and each
 * thread counts the rq locks it holds, so that every cl_rq_*() can assert
 * that its caller holds the lock and every balancing/hotplug call that it
 * holds none (a cl_balance_run() under an rq lock would spin forever).
 */
#ifdef CL_DEBUG
CL_WEAK __thread unsigned int cl__sched_rq_locks_held;
/* A per-thread address: identifies the calling thread. */
CL_INLINE const void *cl__sched_self(void)
{
	return (const void *)&cl__sched_rq_locks_held;
}
#define CL__RQ_ASSERT_HELD(rq) CL_DEBUG_ASSERT(CL_READ_ONCE((rq)->lock_owner) == cl__sched_self())
#define CL__ASSERT_NO_RQ_LOCK() CL_DEBUG_ASSERT(cl__sched_rq_locks_held == 0)
#else
#define CL__RQ_ASSERT_HELD(rq) ((void)0)
#define CL__ASSERT_NO_RQ_LOCK() ((void)0)
#endif

/* cl_sched_rq() without the argument checks: the library's own callers. */
CL_INLINE struct cl_rq *cl__sched_rq(const struct cl_sched *s, unsigned int cpu)
{
	return cl_percpu_ptr(s->rqs, cpu);
}

/* cl_rq_lock() and cl_rq_unlock() without the NULL check, for callers that made it. */
CL_INLINE void cl__rq_lock(struct cl_rq *rq)
{
#ifdef CL_DEBUG
	CL_DEBUG_ASSERT(CL_READ_ONCE(rq->lock_owner) != cl__sched_self());
	cl_spin_lock(&rq->lock);
	CL_WRITE_ONCE(rq->lock_owner, cl__sched_self());
	cl__sched_rq_locks_held++;
#else
	cl_spin_lock(&rq->lock);
#endif
}

CL_INLINE void cl__rq_unlock(struct cl_rq *rq)
{
#ifdef CL_DEBUG
	CL__RQ_ASSERT_HELD(rq);
	CL_WRITE_ONCE(rq->lock_owner, (const void *)NULL);
	cl__sched_rq_locks_held--;
#endif
	cl_spin_unlock(&rq->lock);
}

/* ---- RCU (urcu-memb) and its TSan model ---- */

#ifdef CL_HAVE_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* Every read-side section "releases" here; reclamation "acquires": a grace period. */
CL_WEAK int cl__rcu_tsan_gp;
#define CL__TSAN_RELEASE(a) __tsan_release((void *)(a))
#define CL__TSAN_ACQUIRE(a) __tsan_acquire((void *)(a))
#else
#define CL__TSAN_RELEASE(a) ((void)0)
#define CL__TSAN_ACQUIRE(a) ((void)0)
#endif

/*
 * Under CL_DEBUG, RCU readers assert that their thread is registered with
 * urcu-memb (an unregistered reader "works" until a grace period frees
 * what it reads). The flag is liburcu's own, from its static header.
 */
#ifdef CL_DEBUG
#include <urcu/static/urcu-memb.h>
#define CL__ASSERT_RCU_REGISTERED() CL_DEBUG_ASSERT(URCU_TLS(urcu_memb_reader).registered)
#else
#define CL__ASSERT_RCU_REGISTERED() ((void)0)
#endif

CL_INLINE void cl__rcu_read_lock(void)
{
	CL__ASSERT_RCU_REGISTERED();
	urcu_memb_read_lock();
}

CL_INLINE void cl__rcu_read_unlock(void)
{
	CL__ASSERT_RCU_REGISTERED();
	CL__TSAN_RELEASE(&cl__rcu_tsan_gp);
	urcu_memb_read_unlock();
}

/*
 * List publication. liburcu 0.13 publishes with a volatile store that TSan
 * takes for a plain one; under TSan the same two link updates are done with
 * release stores. Otherwise these are exactly cds_list_add_rcu/del_rcu.
 */
CL_INLINE void cl__list_add_rcu(struct cds_list_head *newp, struct cds_list_head *head)
{
#ifdef CL_HAVE_TSAN
	newp->next = head->next;
	newp->prev = head;
	head->next->prev = newp;
	CL_ATOMIC_STORE(&head->next, newp, CL_RELEASE);
#else
	cds_list_add_rcu(newp, head);
#endif
}

CL_INLINE void cl__list_del_rcu(struct cds_list_head *elem)
{
#ifdef CL_HAVE_TSAN
	elem->next->prev = elem->prev;
	CL_ATOMIC_STORE(&elem->prev->next, elem->next, CL_RELEASE);
#else
	cds_list_del_rcu(elem);
#endif
}

/*
 * cl__list_for_each_entry_rcu(pos, head, member) - liburcu's
 * cds_list_for_each_entry_rcu(); under TSan each link is read with an
 * acquire load instead (the reader side of cl__list_add_rcu(): liburcu's
 * rcu_dereference is a volatile load TSan does not order).
 * cl__tg_for_each_rcu(tg, root): every non-root group of @root's tree,
 * newest first (children before parents). Both: inside an RCU read section.
 */
#ifdef CL_HAVE_TSAN
#define cl__list_for_each_entry_rcu(pos, head, member)                                              \
	for ((pos) = cds_list_entry(CL_ATOMIC_LOAD(&(head)->next, CL_ACQUIRE), __typeof__(*(pos)),   \
				    member);                                                         \
	     &(pos)->member != (head);                                                               \
	     (pos) = cds_list_entry(CL_ATOMIC_LOAD(&(pos)->member.next, CL_ACQUIRE), __typeof__(*(pos)), \
				    member))
#else
#define cl__list_for_each_entry_rcu(pos, head, member) cds_list_for_each_entry_rcu(pos, head, member)
#endif
#define cl__tg_for_each_rcu(tg, root) cl__list_for_each_entry_rcu(tg, &(root)->groups, list)

/* ---- groups: per-CPU accessors (T5), root set-up ---- */

/* cl_tg_cfs_rq() without the argument checks: the library's own callers. */
CL_INLINE struct cl_cfs_rq *cl__tg_cfs_rq(const struct cl_task_group *tg, unsigned int cpu)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	return tg->cfs_rq_arr[cpu];
#else
	return cl_percpu_ptr(tg->cfs_rq, cpu);
#endif
}

/* cl_tg_se() for a group known not to be the root. */
CL_INLINE struct cl_sched_entity *cl__tg_se_nonroot(const struct cl_task_group *tg, unsigned int cpu)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	return tg->se_arr[cpu];
#else
	return CL_SIBLING(cl__tg_cfs_rq(tg, cpu), struct cl_tg_percpu, cfs_rq, se);
#endif
}

/* cl_tg_se() without the argument checks: the library's own callers. */
CL_INLINE struct cl_sched_entity *cl__tg_se(const struct cl_task_group *tg, unsigned int cpu)
{
	if (!tg->parent)
		return NULL;
	return cl__tg_se_nonroot(tg, cpu);
}

/* cl_cfs_rq_se() without the argument check. */
CL_INLINE struct cl_sched_entity *cl__cfs_rq_se(const struct cl_cfs_rq *cfs_rq)
{
	if (!cfs_rq->tg->parent)
		return NULL;
#ifdef CL_GROUP_POINTER_ARRAYS
	return cfs_rq->tg->se_arr[cfs_rq->cpu];
#else
	return CL_SIBLING((struct cl_cfs_rq *)(uintptr_t)cfs_rq, struct cl_tg_percpu, cfs_rq, se);
#endif
}

/*
 * cl__task_group_init_root() - set up @root over the rq root queues whose
 * CPU 0 copy is @root_cfs_rq0 (CPU n's at the per-CPU stride). In the
 * pointer-array variant, also fills the root's queue array. Used by rq.h.
 */
CL_INLINE int cl__task_group_init_root(struct cl_task_group *root, struct cl_percpu_pool *pool,
				       unsigned int nr_cpus, struct cl_cfs_rq *root_cfs_rq0)
{
	memset(root, 0, sizeof(*root));
	root->root = root;
	root->pool = pool;
	root->nr_cpus = nr_cpus;
	root->shares = CL_TG_DEFAULT_SHARES;
	root->period_ns = CL_TG_DEFAULT_PERIOD_NS;
	CDS_INIT_LIST_HEAD(&root->list);
	CDS_INIT_LIST_HEAD(&root->siblings);
	CDS_INIT_LIST_HEAD(&root->children);
	CDS_INIT_LIST_HEAD(&root->groups);
	cl_spin_init(&root->groups_lock);
	cl_spin_init(&root->bw_lock);
#ifdef CL_GROUP_POINTER_ARRAYS
	root->cfs_rq_arr = (struct cl_cfs_rq **)calloc(nr_cpus, sizeof(*root->cfs_rq_arr));
	root->se_arr = (struct cl_sched_entity **)calloc(nr_cpus, sizeof(*root->se_arr));
	if (!root->cfs_rq_arr || !root->se_arr) {
		free(root->cfs_rq_arr);
		free(root->se_arr);
		errno = ENOMEM;
		return -1;
	}
	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++)
		root->cfs_rq_arr[cpu] = cl_percpu_ptr(root_cfs_rq0, cpu);
#else
	root->cfs_rq = root_cfs_rq0;
#endif
	return 0;
}

/* Release what cl__task_group_init_root() allocated. */
CL_INLINE void cl__task_group_fini_root(struct cl_task_group *root)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	free(root->cfs_rq_arr);
	free(root->se_arr);
	root->cfs_rq_arr = NULL;
	root->se_arr = NULL;
#else
	(void)root;
#endif
}

/* Free a group's memory (after a grace period, or on a failed create). */
CL_INLINE void cl__task_group_free(struct cl_task_group *tg)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	for (unsigned int cpu = 0; cpu < tg->nr_cpus; cpu++) {
		if (tg->cfs_rq_arr)
			free(tg->cfs_rq_arr[cpu]);
		if (tg->se_arr)
			free(tg->se_arr[cpu]);
	}
	free(tg->cfs_rq_arr);
	free(tg->se_arr);
#else
	if (tg->cfs_rq)
		cl_percpu_free(tg->pool, cl_container_of(tg->cfs_rq, struct cl_tg_percpu, cfs_rq));
#endif
	free(tg);
}

/*
 * Add @delta to throttle_count of @tg's queue on @cpu and of all its
 * descendants'. Recursion depth is bounded by CL_TG_MAX_DEPTH (refused at
 * create). Inside an RCU read section, @cpu's rq lock held.
 */
CL_INLINE void cl__tg_walk_throttle_count(struct cl_task_group *tg, unsigned int cpu, int delta)
{
	struct cl_task_group *child;
	struct cl_cfs_rq *cfs_rq = cl__tg_cfs_rq(tg, cpu);

	CL_WRITE_ONCE(cfs_rq->throttle_count, CL_READ_ONCE(cfs_rq->throttle_count) + delta);
	cl__list_for_each_entry_rcu(child, &tg->children, siblings)
		cl__tg_walk_throttle_count(child, cpu, delta);
}


/* ---- hierarchy ---- */

/* Point @p's entity at its group's queue and entity on @rq's CPU; @p->cpu
 * is written here only (with the locks of the old and the new rq held). */
CL_INLINE void cl__set_task_rq(struct cl_rq *rq, struct cl_task *p)
{
	const struct cl_task_group *tg = p->tg ? p->tg : &rq->sched->root;

	p->se.cfs_rq = cl__tg_cfs_rq(tg, rq->cpu);
	p->se.parent = cl__tg_se(tg, rq->cpu);
	p->se.depth = tg->depth;
	CL_ATOMIC_STORE(&p->cpu, (int)rq->cpu, CL_RELEASE);
}

/* cl_rq_update_clock() without the NULL check, for the library's own callers. */
CL_INLINE void cl__rq_update_clock(struct cl_rq *rq, uint64_t now_ns)
{
	CL__RQ_ASSERT_HELD(rq);
	if ((int64_t)(now_ns - rq->clock) > 0 || !(rq->clock_update_flags & CL_RQCF_UPDATED)) {
		rq->clock = now_ns;
		rq->clock_task = now_ns;
	}
	rq->clock_update_flags |= CL_RQCF_UPDATED;
}

/* Recompute a group entity's weight: the group's shares split by this CPU's part of its load. */
CL_INLINE void cl__update_cfs_group(struct cl_sched_entity *se)
{
	struct cl_cfs_rq *gcfs = se->my_q;
	const struct cl_task_group *tg;
	unsigned long shares, tg_shares;
	long tg_w, local;

	if (!gcfs)
		return;
	tg = gcfs->tg;
	tg_shares = CL_READ_ONCE(tg->shares); /* cl_task_group_set_shares() may write it */
	local = (long)gcfs->load.weight;
	tg_w = CL_ATOMIC_LOAD(&tg->load_weight, CL_RELAXED);
	if (tg_w < local)
		tg_w = local;
	shares = tg_w > 0 ? (unsigned long)((uint64_t)tg_shares * (uint64_t)local / (uint64_t)tg_w) : tg_shares;
	if (shares < CL_MIN_SHARES)
		shares = CL_MIN_SHARES;
	if (shares > tg_shares)
		shares = tg_shares;
	cl__reweight_entity(se->cfs_rq, se, shares);
}


/* ---- bandwidth: runtime and throttling (the API is bandwidth.h) ---- */

/*
 * cl__assign_cfs_rq_runtime() - top @cfs_rq's local runtime up to one slice
 * from its group's pool. Returns 1 if it has runtime left afterwards.
 */
CL_INLINE int cl__assign_cfs_rq_runtime(struct cl_cfs_rq *cfs_rq)
{
	struct cl_task_group *tg = cfs_rq->tg;
	int64_t want, got;
	uint64_t slice;

	if (!cfs_rq->runtime_enabled)
		return 1;
	cl_spin_lock(&tg->bw_lock);
	slice = tg->quota_ns < CL_TG_BW_SLICE_NS ? tg->quota_ns : CL_TG_BW_SLICE_NS;
	want = (int64_t)slice - cfs_rq->runtime_remaining;
	got = want < tg->runtime ? want : tg->runtime;
	if (got > 0) {
		tg->runtime -= got;
		cfs_rq->runtime_remaining += got;
	}
	cl_spin_unlock(&tg->bw_lock);
	return cfs_rq->runtime_remaining > 0;
}

/*
 * cl__throttle_cfs_rq() - @cfs_rq ran out of runtime: take its group entity
 * (and ancestors that become empty) off the hierarchy; its tasks stay queued
 * in it. Marks the subtree (throttle_count) under RCU.
 */
CL_INLINE void cl__throttle_cfs_rq(struct cl_rq *rq, struct cl_cfs_rq *cfs_rq)
{
	struct cl_sched_entity *se = cl__cfs_rq_se(cfs_rq);
	unsigned int task_delta = cfs_rq->h_nr_running;
	uint64_t now = rq->clock_task;
	int dequeue = 1, stopped = 0;

	cl__rcu_read_lock();
	cl__tg_walk_throttle_count(cfs_rq->tg, rq->cpu, +1);
	cl__rcu_read_unlock();
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
	struct cl_sched_entity *se = cl__cfs_rq_se(cfs_rq);
	unsigned int task_delta = cfs_rq->h_nr_running;
	uint64_t now = rq->clock_task;
	int enqueue = 1, stopped = 0;

	cfs_rq->throttled = 0;
	cl__rcu_read_lock();
	cl__tg_walk_throttle_count(cfs_rq->tg, rq->cpu, -1);
	cl__rcu_read_unlock();
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

/* ---- tasks on an rq (no argument checks) ---- */

/* Is @p queued on exactly @rq (this instance's rq, not another's of the same CPU number)? */
CL_INLINE int cl__task_queued_on(const struct cl_rq *rq, const struct cl_task *p)
{
	return p->se.on_rq && p->on_rq == CL_TASK_ON_RQ_QUEUED && p->cpu == (int)rq->cpu &&
	       p->se.cfs_rq && p->se.cfs_rq->rq == rq;
}

/*
 * cl__task_queued_on() for a caller that holds @rq's lock only, while @p
 * (a task of @rq's instance: the caller knows that, since a task of another
 * instance with the same CPU number would pass the first test) may be
 * queued on, being moved to or running at another rq of the instance.
 *
 * The first test reads only @p->on_rq (acquire) and then @p->cpu, both
 * stored atomically by every writer (cl__rq_enqueue(), cl__rq_dequeue(),
 * cl__set_task_rq(), the offline drain), and passes only if @p is queued
 * on @rq; the entity is read after it:
 *  - every enqueue stores cpu before it publishes QUEUED (release), so a
 *    QUEUED read here from an enqueue on another rq is followed by a read
 *    of that rq's cpu or of a later one. A later cpu equal to @rq's is
 *    stored only under the lock held here, so before this section, and
 *    after @p left the other rq (an enqueue follows the dequeue it undoes,
 *    or holds both locks): that dequeue's on_rq store (0 or MIGRATING)
 *    then precedes this section too and hides the QUEUED read;
 *  - @p becomes and stops being queued on @rq only under @rq's lock (a
 *    migration holds both rqs' locks), so if the test passes, that QUEUED
 *    was stored under this lock before this section, nothing has undone it
 *    since (its undoing would be visible here), and nothing can while the
 *    lock is held. The entity and @p's other fields then change only under
 *    this lock too, and the lock orders their writes before these reads.
 */
CL_INLINE int cl__task_queued_here(const struct cl_rq *rq, const struct cl_task *p)
{
	if (CL_ATOMIC_LOAD(&p->on_rq, CL_ACQUIRE) != CL_TASK_ON_RQ_QUEUED ||
	    CL_ATOMIC_LOAD(&p->cpu, CL_RELAXED) != (int)rq->cpu)
		return 0;
	return p->se.on_rq && p->se.cfs_rq && p->se.cfs_rq->rq == rq;
}

/*
 * Name @p (queued on @rq, not its running task) the next buddy at each
 * level if every entity on the way has a lag of at least -@slices of its
 * own slices (0: eligible); the running entities are charged first, so
 * they count in V. Returns 1 if named, else 0. Context: @rq's lock held.
 */
CL_INLINE int cl__set_next_buddy(struct cl_rq *rq, struct cl_task *p, unsigned int slices)
{
	struct cl_sched_entity *se;

	for (se = &p->se; se && se->on_rq; se = se->parent) {
		struct cl_cfs_rq *q = se->cfs_rq;
		uint64_t allow = slices ? slices * cl__calc_delta_fair(se->slice, se->load.weight) : 0;
		int64_t avg;
		unsigned long load;

		if (q->curr)
			cl__update_curr(q, rq->clock_task);
		load = cl__avg_sums(q, &avg);
		if (!cl__eligible_v(q, avg, load, se->vruntime - allow))
			return 0;
	}
	for (se = &p->se; se && se->on_rq; se = se->parent)
		se->cfs_rq->next = se;
	return 1;
}

/*
 * The lag @se (asleep, last queued on @from) has now: its debt shrinks as
 * @from's V moves past its vruntime, up to zero; a credit is kept.
 */
CL_INLINE int64_t cl__sleeper_lag(const struct cl_cfs_rq *from, const struct cl_sched_entity *se)
{
	int64_t lag;

	if (se->vlag >= 0)
		return se->vlag;
	lag = cl__clamp_lag(se, cl__vdiff(cl__avg_vruntime(from), se->vruntime));
	return lag < 0 ? lag : 0;
}

/* Carry @se's lag from @from to @to (it is asleep): on @to, V - v is that lag. */
CL_INLINE void cl__move_sleeper(const struct cl_cfs_rq *from, const struct cl_cfs_rq *to,
				struct cl_sched_entity *se)
{
	se->vlag = cl__sleeper_lag(from, se);
	se->vruntime = cl__avg_vruntime(to) - (uint64_t)se->vlag;
}

/* cl_rq_enqueue() without the checks (also the balancer's and the offline drain's). */
CL_INLINE void cl__rq_enqueue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	struct cl_sched_entity *se = &p->se;
	struct cl_cfs_rq *from = p->se.cfs_rq;
	uint64_t now = rq->clock_task;
	int throttled = 0, woke_elsewhere = 0;

	if (p->cpu < 0 || !from) {
		flags |= CL_ENQUEUE_INITIAL;
	} else if ((flags & CL_ENQUEUE_WAKEUP) && p->cpu != (int)rq->cpu) {
		woke_elsewhere = 1; /* the old rq's lock is held too */
		flags |= CL_ENQUEUE_MIGRATED;
		p->se.nr_migrations++;
	}
	cl__set_task_rq(rq, p);
	if (woke_elsewhere)
		cl__move_sleeper(from, p->se.cfs_rq, &p->se);
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
		flags = CL_ENQUEUE_WAKEUP; /* a group entity slept while its queue was empty */
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

/* cl_rq_dequeue() without the checks: @p is queued on @rq. */
CL_INLINE void cl__rq_dequeue(struct cl_rq *rq, struct cl_task *p, int flags)
{
	struct cl_sched_entity *se = &p->se;
	uint64_t now = rq->clock_task;
	int throttled = 0;

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
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_INTERNAL_H */
