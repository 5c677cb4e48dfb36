/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/group.h - task groups: a tree with shares and CPU
 * bandwidth, their per-CPU queues co-allocated with their entities (T5).
 *
 * Per group and CPU there is one object { group cfs_rq; group entity on its
 * own line } (struct cl_tg_percpu), allocated once per group from the
 * per-CPU pool: CPU n's copy lies at CPU 0's address + n x CL_PERCPU_STRIDE.
 * So a group needs no array of per-CPU pointers:
 *
 *	cl_tg_cfs_rq(tg, cpu)   cl_percpu_ptr(tg->cfs_rq, cpu): one multiply-add
 *	cl_tg_se(tg, cpu)       the sibling of that queue in the same object
 *	cl_cfs_rq_se(cfs_rq)    CL_SIBLING(): no memory load at all
 *
 * and a walk over many groups for one CPU adds the same offset to each
 * group's base. The root group has no entity (cl_tg_se() is NULL) and its
 * queue is the rq's embedded one: its "CPU 0 address" is &rq0->cfs, and the
 * rqs are a per-CPU object too, so the same arithmetic finds rq(cpu)->cfs.
 *
 * -DCL_GROUP_POINTER_ARRAYS builds the "before": two arrays of nr_cpus
 * pointers per group to separately allocated queues and entities, and
 * cl_cfs_rq_se() loads cfs_rq->tg->se_arr[cpu].
 *
 * RCU rules (see docs/sched.md): the group list (root->groups, newest first,
 * so children come before their parents) and each group's children list are
 * RCU lists (cds_list_*_rcu). Writers (create, destroy) serialize on the
 * root's groups_lock; walkers hold the RCU read lock (cl_sched_rcu_read_lock(),
 * urcu-memb flavor: the thread must be registered with
 * urcu_memb_register_thread()). Destroyed groups are freed by call_rcu after
 * a grace period; call rcu_barrier() (urcu_memb_barrier()) before freeing
 * the pool and before exit (liburcu 0.13.2 leaks its call_rcu thread).
 *
 * CPU bandwidth (quota, refill, throttling) is bandwidth.h.
 */
#ifndef CACHELOCAL_SCHED_GROUP_H
#define CACHELOCAL_SCHED_GROUP_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <urcu/list.h>
#include <urcu/rculist.h>
#include <urcu/urcu-memb.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../percpu.h"
#include "fair.h"
#include "internal.h"

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
 * ---- TSan model of liburcu 0.13 (whose stores TSan cannot see) ----
 * liburcu 0.13 is not built for TSan: its call_rcu thread frees its own
 * allocations in ways TSan cannot order. Programs run under TSan return
 * this string from __tsan_default_suppressions() (tests/unit/sched_sim.h).
 * It silences only malloc/free called directly from liburcu.
 */
#define CL_SCHED_TSAN_SUPPRESSIONS \
	"called_from_lib:liburcu-memb.so\ncalled_from_lib:liburcu-common.so\n"

/*
 * CL_SCHED_DEFINE_TSAN_SUPPRESSIONS(); at file scope of one C file of a
 * program: under TSan, defines __tsan_default_suppressions() returning
 * CL_SCHED_TSAN_SUPPRESSIONS; otherwise nothing.
 */
#ifdef CL_HAVE_TSAN
#define CL_SCHED_DEFINE_TSAN_SUPPRESSIONS()                 \
	const char *__tsan_default_suppressions(void);      \
	const char *__tsan_default_suppressions(void)       \
	{                                                   \
		return CL_SCHED_TSAN_SUPPRESSIONS;          \
	}                                                   \
	extern int cl__sched_tsan_suppressions_defined
#else
#define CL_SCHED_DEFINE_TSAN_SUPPRESSIONS() extern int cl__sched_tsan_suppressions_defined
#endif

/**
 * cl_sched_rcu_read_lock() - enter an RCU read-side section (urcu-memb).
 *
 * Context: a thread registered with urcu_memb_register_thread() (asserted
 * under CL_DEBUG); nests.
 */
CL_INLINE void cl_sched_rcu_read_lock(void)
{
	cl__rcu_read_lock();
}

/**
 * cl_sched_rcu_read_unlock() - leave an RCU read-side section.
 *
 * Context: the thread that called cl_sched_rcu_read_lock() (registered:
 * asserted under CL_DEBUG).
 */
CL_INLINE void cl_sched_rcu_read_unlock(void)
{
	cl__rcu_read_unlock();
}

/* ---- per-CPU accessors ---- */

/**
 * cl_tg_cfs_rq() - group @tg's queue on @cpu.
 * @tg: a group (the root gives the rq's embedded queue).
 * @cpu: a CPU below the group's nr_cpus.
 *
 * Context: any; the group must be alive (RCU read lock or a reference).
 * Return: the queue; never NULL for a valid group and CPU (NULL with errno
 * EINVAL for a NULL @tg or @cpu out of range).
 */
CL_INLINE struct cl_cfs_rq *cl_tg_cfs_rq(const struct cl_task_group *tg, unsigned int cpu)
{
	if (CL__BAD_ARG(tg == NULL || cpu >= tg->nr_cpus))
		return NULL;
	return cl__tg_cfs_rq(tg, cpu);
}

/**
 * cl_tg_se() - group @tg's entity on @cpu (what its parent queue holds).
 * @tg: a group.
 * @cpu: a CPU below the group's nr_cpus.
 *
 * Context: as cl_tg_cfs_rq().
 * Return: the entity, or NULL for the root group (and, with errno EINVAL,
 * for a NULL @tg or @cpu out of range).
 */
CL_INLINE struct cl_sched_entity *cl_tg_se(const struct cl_task_group *tg, unsigned int cpu)
{
	if (CL__BAD_ARG(tg == NULL || cpu >= tg->nr_cpus))
		return NULL;
	return cl__tg_se(tg, cpu);
}

/**
 * cl_cfs_rq_se() - the group entity that owns @cfs_rq (its sibling, T5).
 * @cfs_rq: a group queue, or an rq's root queue.
 *
 * Context: as cl_tg_cfs_rq().
 * Return: the entity, or NULL for a root queue.
 */
CL_INLINE struct cl_sched_entity *cl_cfs_rq_se(const struct cl_cfs_rq *cfs_rq)
{
	if (CL__BAD_ARG(cfs_rq == NULL))
		return NULL;
	return cl__cfs_rq_se(cfs_rq);
}

/* ---- creation and destruction ---- */

CL_INLINE void cl__task_group_free_rcu(struct rcu_head *head)
{
	struct cl_task_group *tg = cl_container_of(head, struct cl_task_group, rcu);

	CL__TSAN_ACQUIRE(&cl__rcu_tsan_gp);
	cl__task_group_free(tg);
}

/* Allocate the per-CPU objects of a new group. */
CL_INLINE int cl__task_group_alloc_percpu(struct cl_task_group *tg)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	size_t qsz = (sizeof(struct cl_cfs_rq) + CL_CACHELINE_SIZE - 1) & ~(size_t)(CL_CACHELINE_SIZE - 1);
	size_t esz = (sizeof(struct cl_sched_entity) + CL_CACHELINE_SIZE - 1) &
		     ~(size_t)(CL_CACHELINE_SIZE - 1);

	tg->cfs_rq_arr = (struct cl_cfs_rq **)calloc(tg->nr_cpus, sizeof(*tg->cfs_rq_arr));
	tg->se_arr = (struct cl_sched_entity **)calloc(tg->nr_cpus, sizeof(*tg->se_arr));
	if (!tg->cfs_rq_arr || !tg->se_arr)
		return -1;
	for (unsigned int cpu = 0; cpu < tg->nr_cpus; cpu++) {
		/* two separate allocations per CPU, as the kernel did (kzalloc_node each) */
		tg->cfs_rq_arr[cpu] = (struct cl_cfs_rq *)aligned_alloc(CL_CACHELINE_SIZE, qsz);
		tg->se_arr[cpu] = (struct cl_sched_entity *)aligned_alloc(CL_CACHELINE_SIZE, esz);
		if (!tg->cfs_rq_arr[cpu] || !tg->se_arr[cpu])
			return -1;
	}
	return 0;
#else
	struct cl_tg_percpu *pc = (struct cl_tg_percpu *)cl_percpu_alloc(
		tg->pool, sizeof(struct cl_tg_percpu), CL_CACHELINE_SIZE);

	if (!pc)
		return -1;
	tg->cfs_rq = &pc->cfs_rq;
	return 0;
#endif
}

/* @shares as a group takes it: 0 = CL_TG_DEFAULT_SHARES, clamped to
 * [CL_MIN_SHARES, CL_MAX_SHARES] */
CL_INLINE unsigned long cl__tg_shares(unsigned long shares)
{
	if (shares == 0)
		return CL_TG_DEFAULT_SHARES;
	return shares < CL_MIN_SHARES ? CL_MIN_SHARES : shares > CL_MAX_SHARES ? CL_MAX_SHARES : shares;
}

/**
 * cl_task_group_create() - create a group under @parent.
 * @parent: the parent group (the root from cl_sched_root_group(), or any
 *          live group of the same tree).
 * @shares: weight against its siblings; 0 = CL_TG_DEFAULT_SHARES; clamped
 *          to [CL_MIN_SHARES, CL_MAX_SHARES].
 *
 * Allocates one {queue, entity} object per CPU, initializes every CPU's copy
 * and publishes the group on the RCU lists. Walkers that started before may
 * or may not see it.
 *
 * Context: any thread; takes the root's groups_lock (not an rq lock). The
 * parent's memory must stay valid during the call (an RCU read section if
 * another thread may destroy it: the call then fails with EINVAL).
 * Return: the group, or NULL with errno EINVAL (@parent NULL or dead, or
 * the new group would be deeper than CL_TG_MAX_DEPTH) or ENOMEM.
 */
CL_INLINE struct cl_task_group *cl_task_group_create(struct cl_task_group *parent, unsigned long shares)
{
	struct cl_task_group *tg, *root;

	if (!parent || CL_READ_ONCE(parent->dead) || parent->depth >= CL_TG_MAX_DEPTH) {
		errno = EINVAL;
		return NULL;
	}
	root = parent->root;
	shares = cl__tg_shares(shares);
	/* on a line of its own: the walks' fields are its first line */
	tg = (struct cl_task_group *)aligned_alloc(CL_CACHELINE_SIZE, (sizeof(*tg) + CL_CACHELINE_SIZE - 1) &
								       ~(size_t)(CL_CACHELINE_SIZE - 1));
	if (!tg) {
		errno = ENOMEM;
		return NULL;
	}
	memset(tg, 0, sizeof(*tg));
	tg->parent = parent;
	tg->root = root;
	tg->pool = root->pool;
	tg->nr_cpus = root->nr_cpus;
	tg->depth = parent->depth + 1;
	tg->shares = shares;
	tg->period_ns = CL_TG_DEFAULT_PERIOD_NS;
	cl_spin_init(&tg->bw_lock);
	CDS_INIT_LIST_HEAD(&tg->children);
	CDS_INIT_LIST_HEAD(&tg->groups);
	if (cl__task_group_alloc_percpu(tg) != 0) {
		cl__task_group_free(tg);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int cpu = 0; cpu < tg->nr_cpus; cpu++) {
		struct cl_cfs_rq *cfs_rq = cl__tg_cfs_rq(tg, cpu), *pq = cl__tg_cfs_rq(parent, cpu);
		struct cl_sched_entity *se = cl__tg_se_nonroot(tg, cpu);

		cl_cfs_rq_init(cfs_rq, pq->rq, tg, cpu);
		cfs_rq->throttle_count = CL_READ_ONCE(pq->throttle_count);
		cl_sched_entity_init(se, shares);
		se->my_q = cfs_rq;
		se->cfs_rq = pq;
		se->parent = cl__tg_se(parent, cpu);
		se->depth = tg->depth - 1;
	}
	cl_spin_lock(&root->groups_lock);
	if (parent->dead) { /* destroyed since the check above: do not publish under it */
		cl_spin_unlock(&root->groups_lock);
		cl__task_group_free(tg);
		errno = EINVAL;
		return NULL;
	}
	cl__list_add_rcu(&tg->siblings, &parent->children);
	cl__list_add_rcu(&tg->list, &root->groups);
	root->nr_groups++;
	cl_spin_unlock(&root->groups_lock);
	return tg;
}

/**
 * cl_task_group_destroy() - unlink @tg and free it after a grace period.
 * @tg: a group with no children and no attached task.
 *
 * Walkers inside an RCU read-side section may still use it; its memory is
 * released by call_rcu once they are done. Attaching (cl_task_set_group())
 * and destroying are serialized by the root's groups_lock: a task attached
 * (queued, running or asleep) keeps the group alive, and an attach to a
 * destroyed group fails.
 *
 * Context: any thread; takes the root's groups_lock.
 * Return: 0, or -1 with errno EINVAL (NULL, root or already destroyed) or
 * EBUSY (children, or tasks attached: move them with cl_task_set_group()).
 */
CL_INLINE int cl_task_group_destroy(struct cl_task_group *tg)
{
	struct cl_task_group *root;

	if (!tg || !tg->parent || CL_READ_ONCE(tg->dead)) {
		errno = EINVAL;
		return -1;
	}
	root = tg->root;
	cl_spin_lock(&root->groups_lock);
	if (tg->dead) { /* another destroy won the lock first: unlinked already */
		cl_spin_unlock(&root->groups_lock);
		errno = EINVAL;
		return -1;
	}
	if (!cds_list_empty(&tg->children) || tg->nr_tasks) {
		cl_spin_unlock(&root->groups_lock);
		errno = EBUSY;
		return -1;
	}
	cl__list_del_rcu(&tg->siblings);
	cl__list_del_rcu(&tg->list);
	CL_WRITE_ONCE(tg->dead, 1);
	root->nr_groups--;
	cl_spin_unlock(&root->groups_lock);
	CL__TSAN_RELEASE(&cl__rcu_tsan_gp); /* call_rcu() orders our accesses before the free */
	urcu_memb_call_rcu(&tg->rcu, cl__task_group_free_rcu);
	return 0;
}

/**
 * cl_task_group_set_shares() - change @tg's weight against its siblings.
 * @tg: a live group (not the root).
 * @shares: the new weight; 0 = CL_TG_DEFAULT_SHARES; clamped to
 *          [CL_MIN_SHARES, CL_MAX_SHARES] as cl_task_group_create() does.
 *
 * The group's entity on each CPU takes the new weight at that CPU's next
 * update of it (an enqueue, dequeue or tick of a task in the group or
 * below), as the kernel's update_cfs_group(); what ran before keeps the
 * vruntime it was charged at the old weight. A cgroup's cpu.weight
 * written while its tasks run, for a scheduler that mirrors cgroups.
 *
 * Context: any thread, no lock needed (one relaxed store; the rq-locked
 * updates read it once each).
 * Return: 0, or -1 with errno EINVAL (@tg NULL, the root or destroyed).
 */
CL_INLINE int cl_task_group_set_shares(struct cl_task_group *tg, unsigned long shares)
{
	if (!tg || !tg->parent || CL_READ_ONCE(tg->dead)) {
		errno = EINVAL;
		return -1;
	}
	CL_WRITE_ONCE(tg->shares, cl__tg_shares(shares));
	return 0;
}

/* ---- walks (one CPU, under RCU) ---- */

/**
 * cl_tg_update_blocked_load() - decay every group queue's load average on
 * @cpu, bottom-up (children before parents), and fold the change into each
 * group's load_avg sum.
 * @root: the root group.
 * @cpu: the CPU.
 * @now_ns: clock of @cpu's rq.
 *
 * Each step is "group base + this CPU's offset": no per-group pointer array.
 *
 * Context: @cpu's rq lock held; takes the RCU read lock itself; may run
 * concurrently with cl_task_group_create()/destroy() on other threads.
 * Return: the number of groups visited.
 */
CL_INLINE unsigned long cl_tg_update_blocked_load(struct cl_task_group *root, unsigned int cpu,
						  uint64_t now_ns)
{
	struct cl_task_group *tg;
	unsigned long n = 0;

	if (CL__BAD_ARG(root == NULL || cpu >= root->nr_cpus))
		return 0;
	cl_sched_rcu_read_lock();
	cl__tg_for_each_rcu(tg, root) {
		struct cl_cfs_rq *cfs_rq = cl__tg_cfs_rq(tg, cpu);
		struct cl_sched_entity *se = cl__cfs_rq_se(cfs_rq);
		long delta;

		cl__update_cfs_rq_avg(cfs_rq, now_ns);
		delta = (long)cfs_rq->avg.load_avg - cfs_rq->tg_load_avg_contrib;
		if (delta) {
			cfs_rq->tg_load_avg_contrib += delta;
			CL_ATOMIC_FETCH_ADD(&tg->load_avg, delta, CL_RELAXED);
		}
		if (se)
			cl__update_se_avg(se, now_ns);
		n++;
	}
	cl_sched_rcu_read_unlock();
	return n;
}

/**
 * cl_cfs_rq_throttled_hierarchy() - is @cfs_rq or an ancestor throttled?
 * @cfs_rq: a queue.
 *
 * Context: rq lock held for an exact answer; a hint otherwise.
 * Return: 1 or 0.
 */
CL_INLINE int cl_cfs_rq_throttled_hierarchy(const struct cl_cfs_rq *cfs_rq)
{
	if (CL__BAD_ARG(cfs_rq == NULL))
		return 0;
	return CL_READ_ONCE(cfs_rq->throttle_count) != 0;
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_GROUP_H */
