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

/* Default shares of a group (= one nice-0 task). */
#define CL_TG_DEFAULT_SHARES CL_NICE_0_LOAD
/* Default bandwidth period and the slice a CPU takes from the pool at once. */
#define CL_TG_DEFAULT_PERIOD_NS 100000000ULL
#define CL_TG_BW_SLICE_NS 1000000ULL
/* cpu.max's ranges: period 1 ms..1 s; quota 1 ms..(2^44 - 1) us (the kernel's max_cfs_runtime). */
#define CL_TG_MIN_PERIOD_NS 1000000ULL
#define CL_TG_MAX_PERIOD_NS 1000000000ULL
#define CL_TG_MIN_QUOTA_NS 1000000ULL
#define CL_TG_MAX_QUOTA_NS (((1ULL << 44) - 1) * 1000ULL)
/* Deepest group (the root is depth 0): every walk over the tree is bounded by it. */
#define CL_TG_MAX_DEPTH 32

/*
 * struct cl_tg_percpu - one group's objects on one CPU (T5). The queue is
 * written by enqueue/dequeue/pick on that CPU; the entity by its parent
 * queue's paths; the entity starts on its own line so those two writers and
 * the entity's read-mostly line do not share lines.
 */
struct cl_tg_percpu {
	CL_GROUPED_MEMBER(struct cl_cfs_rq cfs_rq);
	struct cl_sched_entity se CL_CACHELINE_ALIGNED;
};

#ifndef __cplusplus
CL_ASSERT_ALIGNED(struct cl_tg_percpu);
CL_STATIC_ASSERT(offsetof(struct cl_tg_percpu, se) % CL_CACHELINE_SIZE == 0,
		 "cachelocal: struct cl_tg_percpu: se does not start on a cache line");
CL_ASSERT_APART(struct cl_tg_percpu, cfs_rq, se);
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

/**
 * cl_sched_rcu_read_lock() - enter an RCU read-side section (urcu-memb).
 *
 * Context: a thread registered with urcu_memb_register_thread() (asserted
 * under CL_DEBUG); nests.
 */
CL_INLINE void cl_sched_rcu_read_lock(void)
{
	CL__ASSERT_RCU_REGISTERED();
	urcu_memb_read_lock();
}

/**
 * cl_sched_rcu_read_unlock() - leave an RCU read-side section.
 *
 * Context: the thread that called cl_sched_rcu_read_lock() (registered:
 * asserted under CL_DEBUG).
 */
CL_INLINE void cl_sched_rcu_read_unlock(void)
{
	CL__ASSERT_RCU_REGISTERED();
#ifdef CL_HAVE_TSAN
	CL__TSAN_RELEASE(&cl__rcu_tsan_gp);
#endif
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

/* ---- per-CPU accessors ---- */

/* cl_tg_cfs_rq() without the argument checks: the library's own callers. */
CL_INLINE struct cl_cfs_rq *cl__tg_cfs_rq(const struct cl_task_group *tg, unsigned int cpu)
{
#ifdef CL_GROUP_POINTER_ARRAYS
	return tg->cfs_rq_arr[cpu];
#else
	return cl_percpu_ptr(tg->cfs_rq, cpu);
#endif
}

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
	if (!cfs_rq->tg->parent)
		return NULL;
#ifdef CL_GROUP_POINTER_ARRAYS
	return cfs_rq->tg->se_arr[cfs_rq->cpu];
#else
	return CL_SIBLING((struct cl_cfs_rq *)(uintptr_t)cfs_rq, struct cl_tg_percpu, cfs_rq, se);
#endif
}

/* ---- creation and destruction ---- */

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
	if (shares == 0)
		shares = CL_TG_DEFAULT_SHARES;
	if (shares < CL_MIN_SHARES)
		shares = CL_MIN_SHARES;
	if (shares > CL_MAX_SHARES)
		shares = CL_MAX_SHARES;
	tg = (struct cl_task_group *)calloc(1, sizeof(*tg));
	if (!tg) {
		errno = ENOMEM;
		return NULL;
	}
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

/* ---- walks (one CPU, under RCU) ---- */

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
		struct cl_sched_entity *se = cl_cfs_rq_se(cfs_rq);
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

/* ---- bandwidth ---- */

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

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_GROUP_H */
