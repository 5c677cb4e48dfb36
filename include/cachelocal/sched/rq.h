/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/rq.h - the per-CPU runqueue of the reference scheduler:
 * layout (T1), hierarchical enqueue/dequeue/pick/put/tick, MRU run list
 * (T4), bandwidth throttling.
 *
 * A scheduler instance (struct cl_sched) owns one struct cl_rq per CPU,
 * allocated as one per-CPU object: rq(cpu) = cl_percpu_ptr(rqs, cpu), and
 * the root task group whose queue on CPU n is rq(n)->cfs. The core is a data
 * structure: no threads, no timers. The caller supplies time with
 * cl_rq_update_clock() (or cl_rq_tick()) and calls the operations with the
 * rq lock held (a threaded M:N runtime on top of it is planned, not written).
 *
 * Locking order (docs/sched.md): rq locks in address order (cl_rq_lock_two())
 * -> a group's bw_lock. The root's groups_lock (group create/destroy) is a
 * leaf taken without any rq lock. RCU read sections may be entered with any
 * of these held.
 */
#ifndef CACHELOCAL_SCHED_RQ_H
#define CACHELOCAL_SCHED_RQ_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <urcu/list.h>
#include <urcu/urcu-memb.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../internal/bitmap.h"
#include "../percpu.h"
#include "../spinlock.h"
#include "fair.h"
#include "group.h"

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

struct cl_sched;

/*
 * struct cl_rq - one CPU's runqueue (T1 layout).
 *
 * cl_rq_read_pick: what the pick path reads on every schedule, and what other
 *   CPUs read without the lock to choose where to wake or steal (nr_running,
 *   ttwu_pending, cpu_capacity, curr, idle). Written rarely relative to reads
 *   (the kernel profile measured load:store about 38:1). One line, first.
 * cl_rq_lock: the lock alone, on its own false-sharing unit
 *   (CL_FALSE_SHARING_SIZE): every remote wakeup does an atomic RMW on it,
 *   and next to the pick fields (or on their adjacent-line prefetch pair) it
 *   would invalidate them for every reader.
 * cl_rq_clock: written by the owner on every clock update and tick, read by
 *   the same paths (about 5:1): together, off the pick line.
 * cl_rq_cfs: the MRU run list head (T4: written by the move-to-front on
 *   every pick) next to the root fair queue the pick path touches anyway.
 * Cold statistics follow.
 * Locking: everything but the lock is protected by it; nr_running,
 *   ttwu_pending, cpu_capacity and curr are also read racily (CL_READ_ONCE)
 *   as hints by other CPUs.
 * -DCL_RQ_LAYOUT_SCATTERED: the "before" layout, same fields, lock next to
 *   nr_running and the pick fields spread over several lines.
 * Keep in step with docs/layout/cl_rq.md.
 */
struct cl_rq {
#ifndef CL_RQ_LAYOUT_SCATTERED
	CL_GROUP_BEGIN_ALIGNED(cl_rq_read_pick);
	unsigned int nr_running;          /* runnable tasks (not throttled) incl. curr */
	unsigned int ttwu_pending;        /* remote wakeups queued for this CPU */
	unsigned long cpu_capacity;       /* 1024 = one full CPU */
	struct cl_task *curr;             /* running task, NULL when idle */
	struct cl_task *idle;             /* caller's idle task, if any (never queued) */
	unsigned int cpu;                 /* this rq's CPU */
	int online;                       /* 0 after cl_balance_cpu_offline() */
	CL_GROUP_END_ALIGNED(cl_rq_read_pick);

	CL_GROUP_BEGIN_GUARDED(cl_rq_lock);
	struct cl_spinlock lock;
#ifdef CL_DEBUG
	const void *lock_owner;           /* CL_DEBUG: the holding thread (cl__sched_self()) */
#endif
	CL_GROUP_END_GUARDED(cl_rq_lock);

	CL_GROUP_BEGIN_ALIGNED(cl_rq_clock);
	uint64_t clock;                   /* ns, caller-supplied */
	uint64_t clock_task;              /* ns the fair class charges (= clock here) */
	unsigned int clock_update_flags;  /* CL_RQCF_* */
	CL_GROUP_END_ALIGNED(cl_rq_clock);

	CL_GROUP_BEGIN_ALIGNED(cl_rq_cfs);
	struct cds_list_head cfs_tasks;   /* queued tasks, most recently picked first (T4) */
	struct cl_cfs_rq cfs;             /* root fair queue */
	CL_GROUP_END_ALIGNED(cl_rq_cfs);

	uint64_t nr_switches;
	uint64_t nr_migrations_in;
	uint64_t nr_migrations_out;
	struct cl_sched *sched;
	int drained;                      /* offline and emptied (hotplug_lock) */
#else
	/* "before": lock beside nr_running, pick fields scattered */
	struct cl_spinlock lock;
#ifdef CL_DEBUG
	const void *lock_owner;
#endif
	int drained;
	unsigned int nr_running;
	uint64_t clock;
	struct cds_list_head cfs_tasks;
	unsigned int ttwu_pending;
	uint64_t nr_switches;
	struct cl_cfs_rq cfs;
	unsigned long cpu_capacity;
	uint64_t nr_migrations_in;
	struct cl_task *curr;
	uint64_t clock_task;
	uint64_t nr_migrations_out;
	unsigned int clock_update_flags;
	unsigned int cpu;
	struct cl_task *idle;
	struct cl_sched *sched;
	int online;
#endif
};

/*
 * List walks use liburcu's iterators: the entry forms
 * (cds_list_for_each_entry*) for lists of groups, the node forms
 * (cds_list_for_each*, then cl_container_of()) for lists of entities and
 * tasks: those are cache-line aligned, and the entry forms compute an
 * "entry" from the list head itself, a misaligned pointer (UBSan).
 */

/* clock_update_flags */
#define CL_RQCF_UPDATED 0x1

#ifndef __cplusplus
#ifndef CL_RQ_LAYOUT_SCATTERED
CL_ASSERT_ALIGNED(struct cl_rq);
CL_ASSERT_GROUP_ALIGNED(struct cl_rq, cl_rq_read_pick);
CL_STATIC_ASSERT(CL_GROUP_OFFSET(struct cl_rq, cl_rq_read_pick) == 0,
		 "cachelocal: struct cl_rq: cl_rq_read_pick must be the first line");
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, nr_running);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, ttwu_pending);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, cpu_capacity);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, curr);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, idle);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, cpu);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_read_pick, online);
CL_ASSERT_GROUP_SIZE(struct cl_rq, cl_rq_read_pick, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_lock, lock);
CL_ASSERT_GROUP_SIZE(struct cl_rq, cl_rq_lock, CL_FALSE_SHARING_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_clock, clock);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_clock, clock_task);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_clock, clock_update_flags);
CL_ASSERT_GROUP_SIZE(struct cl_rq, cl_rq_clock, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_ALIGNED(struct cl_rq, cl_rq_clock);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_cfs, cfs_tasks);
CL_ASSERT_GROUP_MEMBER(struct cl_rq, cl_rq_cfs, cfs);
CL_ASSERT_GROUP_ALIGNED(struct cl_rq, cl_rq_cfs);
CL_ASSERT_SAME_LINE(struct cl_rq, clock, clock_update_flags);
CL_ASSERT_SAME_LINE(struct cl_rq, cfs_tasks, cfs.load);
CL_ASSERT_APART_GUARD(struct cl_rq, lock, nr_running);
CL_ASSERT_APART_GUARD(struct cl_rq, lock, clock);
CL_ASSERT_APART(struct cl_rq, curr, clock);
#endif
/* The "must show" pair; the first fails under CL_RQ_LAYOUT_SCATTERED
 * (tests/compile-fail/sched_rq_scattered.c). */
#ifndef CL_RQ_LAYOUT_SCATTERED
CL_ASSERT_APART(struct cl_rq, lock, nr_running);
CL_ASSERT_SAME_LINE(struct cl_rq, nr_running, curr);
#endif
#endif

/*
 * struct cl_sched - one scheduler instance: the per-CPU rqs, the root group,
 * balancing knobs.
 */
struct cl_sched {
	struct cl_percpu_pool *pool;
	int own_pool;
	unsigned int nr_cpus;
	struct cl_rq *rqs;             /* CPU 0's rq; CPU n's is cl_percpu_ptr(rqs, n) */
	uint64_t migration_cost_ns;    /* balance: tasks that ran within this are cache-hot */
	unsigned int nr_migrate;       /* balance: at most this many tasks scanned per pass */
	struct cl_spinlock hotplug_lock; /* serializes CPU offline/online (taken without rq locks) */
	unsigned int nr_online;        /* CPUs online (hotplug_lock) */
	struct cl_task_group root;     /* the root group: its queue on CPU n is rq(n)->cfs */
};

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

/* Defaults of the balancing knobs (the kernel's). */
#define CL_SCHED_MIGRATION_COST_NS 500000ULL
#define CL_SCHED_NR_MIGRATE 32U

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
 * cl_sched_rq() - CPU @cpu's runqueue.
 * @s: the instance.
 * @cpu: below cl_sched_nr_cpus(@s).
 *
 * Context: any; no memory load beyond @s->rqs (per-CPU stride arithmetic).
 * Return: the rq.
 */
CL_INLINE struct cl_rq *cl_sched_rq(const struct cl_sched *s, unsigned int cpu)
{
	return cl_percpu_ptr(s->rqs, cpu);
}

/** cl_sched_nr_cpus() - number of rqs. @s: the instance. Return: the count. Context: any. */
CL_INLINE unsigned int cl_sched_nr_cpus(const struct cl_sched *s)
{
	return s->nr_cpus;
}

/** cl_sched_root_group() - the root task group. @s: the instance. Return: it. Context: any. */
CL_INLINE struct cl_task_group *cl_sched_root_group(struct cl_sched *s)
{
	return &s->root;
}

/**
 * cl_sched_create() - a scheduler instance with @nr_cpus runqueues.
 * @nr_cpus: number of CPUs (simulated or real), 1..CL_MAX_CPUS.
 * @pool: per-CPU pool to allocate from (its nr_cpus must be >= @nr_cpus and
 *        its stride CL_PERCPU_STRIDE), or NULL to create one.
 *
 * Context: any thread. Threads that call the group walks or create/destroy
 * groups must be registered with urcu_memb_register_thread().
 * Return: the instance, or NULL with errno EINVAL (bad @nr_cpus; @pool with
 * fewer CPUs or another stride) or ENOMEM.
 */
CL_INLINE struct cl_sched *cl_sched_create(unsigned int nr_cpus, struct cl_percpu_pool *pool)
{
	struct cl_sched *s;

	if (nr_cpus == 0 || nr_cpus > CL_MAX_CPUS ||
	    (pool && (cl_percpu_pool_nr_cpus(pool) < nr_cpus ||
		      cl_percpu_pool_stride(pool) != (size_t)CL_PERCPU_STRIDE))) {
		errno = EINVAL;
		return NULL;
	}
	s = (struct cl_sched *)calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	if (!pool) {
		struct cl_percpu_pool_attr attr;

		memset(&attr, 0, sizeof(attr));
		attr.stride = CL_PERCPU_STRIDE;
		attr.max_nr_cpus = nr_cpus;
		pool = cl_percpu_pool_create(&attr);
		if (!pool || cl_percpu_pool_nr_cpus(pool) < nr_cpus) {
			int e = pool ? EINVAL : errno;

			if (pool)
				cl_percpu_pool_destroy(pool);
			free(s);
			errno = e ? e : ENOMEM;
			return NULL;
		}
		s->own_pool = 1;
	}
	s->pool = pool;
	s->nr_cpus = nr_cpus;
	s->migration_cost_ns = CL_SCHED_MIGRATION_COST_NS;
	s->nr_migrate = CL_SCHED_NR_MIGRATE;
	s->nr_online = nr_cpus;
	cl_spin_init(&s->hotplug_lock);
	s->rqs = (struct cl_rq *)cl_percpu_alloc(pool, sizeof(struct cl_rq), CL_CACHELINE_SIZE);
	if (!s->rqs || cl__task_group_init_root(&s->root, pool, nr_cpus, &s->rqs->cfs) != 0) {
		if (s->rqs)
			cl_percpu_free(pool, s->rqs);
		if (s->own_pool)
			cl_percpu_pool_destroy(pool);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
		struct cl_rq *rq = cl_sched_rq(s, cpu);

		cl_spin_init(&rq->lock);
		rq->cpu = cpu;
		rq->online = 1;
		rq->cpu_capacity = CL_NICE_0_LOAD;
		rq->sched = s;
		CDS_INIT_LIST_HEAD(&rq->cfs_tasks);
		cl_cfs_rq_init(&rq->cfs, rq, &s->root, cpu);
	}
	return s;
}

/**
 * cl_sched_destroy() - free @s, its rqs and every group still alive.
 * @s: the instance (NULL is a no-op).
 *
 * Refuses while any task is attached: queued or running on some rq, or
 * (asleep or not) in a group of @s (cl_task_set_group(p, NULL) detaches a
 * task). Waits for pending RCU callbacks (urcu_memb_barrier()) first.
 * Sleeping tasks of the root group keep pointers into the freed rqs: do
 * not enqueue them on another instance (cl_task_init() them again).
 *
 * Context: no other thread uses @s any more; not inside an RCU read
 * section; holding no rq lock.
 * Return: 0, or -1 with errno EBUSY (tasks attached; nothing freed).
 */
CL_INLINE int cl_sched_destroy(struct cl_sched *s)
{
	struct cl_task_group *tg, *n;

	if (!s)
		return 0;
	CL__ASSERT_NO_RQ_LOCK();
	for (unsigned int cpu = 0; cpu < s->nr_cpus; cpu++) {
		struct cl_rq *rq = cl_sched_rq(s, cpu);

		if (!cds_list_empty(&rq->cfs_tasks) || rq->curr || rq->nr_running) {
			errno = EBUSY;
			return -1;
		}
	}
	cds_list_for_each_entry(tg, &s->root.groups, list) {
		if (tg->nr_tasks) {
			errno = EBUSY;
			return -1;
		}
	}
	urcu_memb_barrier();
	/* newest first: children before parents */
	cds_list_for_each_entry_safe(tg, n, &s->root.groups, list)
		cl__task_group_free(tg);
	cl__task_group_fini_root(&s->root);
	cl_percpu_free(s->pool, s->rqs);
	if (s->own_pool)
		cl_percpu_pool_destroy(s->pool);
	free(s);
	return 0;
}

/* ---- locking ---- */

/** cl_rq_lock() - take @rq's lock. @rq: the rq. Context: not holding it (not recursive). */
CL_INLINE void cl_rq_lock(struct cl_rq *rq)
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

/** cl_rq_unlock() - release @rq's lock. @rq: the rq. Context: the holder. */
CL_INLINE void cl_rq_unlock(struct cl_rq *rq)
{
#ifdef CL_DEBUG
	CL__RQ_ASSERT_HELD(rq);
	CL_WRITE_ONCE(rq->lock_owner, (const void *)NULL);
	cl__sched_rq_locks_held--;
#endif
	cl_spin_unlock(&rq->lock);
}

/**
 * cl_rq_lock_two() - take two rq locks in address order (no deadlock with
 * another CPU taking the same pair).
 * @a: one rq.
 * @b: another (or the same) rq.
 *
 * Context: holding neither.
 */
CL_INLINE void cl_rq_lock_two(struct cl_rq *a, struct cl_rq *b)
{
	if (a == b) {
		cl_rq_lock(a);
	} else if ((uintptr_t)a < (uintptr_t)b) {
		cl_rq_lock(a);
		cl_rq_lock(b);
	} else {
		cl_rq_lock(b);
		cl_rq_lock(a);
	}
}

/** cl_rq_unlock_two() - release what cl_rq_lock_two() took. @a: rq. @b: rq. Context: holder. */
CL_INLINE void cl_rq_unlock_two(struct cl_rq *a, struct cl_rq *b)
{
	cl_rq_unlock(a);
	if (a != b)
		cl_rq_unlock(b);
}

/**
 * cl_task_rq_lock() - lock the runqueue @p is on (or last ran on), the
 * kernel's task_rq_lock().
 * @s: the instance @p belongs to.
 * @p: the task.
 *
 * Reads @p->cpu, locks that rq and checks that @p is still there; retries
 * if @p moved meanwhile, and waits (without any lock) while @p is
 * CL_TASK_ON_RQ_MIGRATING, i.e. in transit between two rqs (the CPU
 * offline drain). On return @p's cpu, on_rq, on_cpu, group and entity are
 * stable until cl_task_rq_unlock().
 *
 * Context: holding no rq lock.
 * Return: the locked rq; NULL if @p was never queued (cpu -1: its creator
 * owns it, no lock needed; errno untouched) or, with errno EINVAL, if @s
 * or @p is NULL or @p belongs to another instance.
 */
CL_INLINE struct cl_rq *cl_task_rq_lock(struct cl_sched *s, struct cl_task *p)
{
	CL__ASSERT_NO_RQ_LOCK();
	if (!s || !p) {
		errno = EINVAL;
		return NULL;
	}
	for (;;) {
		int cpu = CL_ATOMIC_LOAD(&p->cpu, CL_ACQUIRE);
		struct cl_rq *rq;

		if (cpu < 0)
			return NULL;
		if ((unsigned int)cpu >= s->nr_cpus) {
			errno = EINVAL;
			return NULL;
		}
		rq = cl_sched_rq(s, (unsigned int)cpu);
		cl_rq_lock(rq);
		if (CL_READ_ONCE(p->cpu) == cpu && CL_READ_ONCE(p->on_rq) != CL_TASK_ON_RQ_MIGRATING) {
			if (p->se.cfs_rq && p->se.cfs_rq->rq != rq) {
				cl_rq_unlock(rq); /* queued by another instance */
				errno = EINVAL;
				return NULL;
			}
			return rq;
		}
		cl_rq_unlock(rq);
		while (CL_ATOMIC_LOAD(&p->on_rq, CL_ACQUIRE) == CL_TASK_ON_RQ_MIGRATING)
			CL_CPU_RELAX();
	}
}

/**
 * cl_task_rq_unlock() - release what cl_task_rq_lock() took.
 * @rq: its return value (NULL is a no-op).
 * @p: the task.
 *
 * Context: the holder.
 */
CL_INLINE void cl_task_rq_unlock(struct cl_rq *rq, struct cl_task *p)
{
	(void)p;
	if (rq)
		cl_rq_unlock(rq);
}

/* ---- tasks ---- */

/**
 * cl_task_init() - initialize @p (not queued) with nice level @nice.
 * @p: the task.
 * @nice: -20..19 (clamped); weight from cl_nice_to_weight().
 *
 * The task starts in the root group, allowed on every CPU, vruntime 0
 * relative (it lands at min_vruntime of the queue it is first put on).
 *
 * Context: before first use; no lock.
 */
CL_INLINE void cl_task_init(struct cl_task *p, int nice)
{
	memset(p, 0, sizeof(*p));
	cl_sched_entity_init(&p->se, cl_nice_to_weight(nice));
	p->nice = nice < CL_NICE_MIN ? CL_NICE_MIN : nice > CL_NICE_MAX ? CL_NICE_MAX : nice;
	p->cpu = -1;
}

/**
 * cl_task_set_weight() - set @p's load weight directly (instead of a nice level).
 * @p: a task that is not queued.
 * @weight: 1..CL_MAX_SHARES (1024 = nice 0).
 *
 * Context: @p's rq lock held (cl_task_rq_lock()), or @p never queued.
 * Return: 0, or -1 with errno EBUSY (queued or migrating) or EINVAL
 * (weight out of range, @p NULL).
 */
CL_INLINE int cl_task_set_weight(struct cl_task *p, unsigned long weight)
{
	if (!p || weight == 0 || weight > CL_MAX_SHARES) {
		errno = EINVAL;
		return -1;
	}
	if (p->se.on_rq || p->on_rq) {
		errno = EBUSY;
		return -1;
	}
	p->se.load.weight = weight;
	return 0;
}

/* Point @p's entity at its group's queue and entity on @rq's CPU; @p->cpu
 * is written here only (with the locks of the old and the new rq held). */
CL_INLINE void cl__set_task_rq(struct cl_rq *rq, struct cl_task *p)
{
	const struct cl_task_group *tg = p->tg ? p->tg : &rq->sched->root;

	p->se.cfs_rq = cl_tg_cfs_rq(tg, rq->cpu);
	p->se.parent = cl_tg_se(tg, rq->cpu);
	p->se.depth = tg->depth;
	CL_ATOMIC_STORE(&p->cpu, (int)rq->cpu, CL_RELEASE);
}

/**
 * cl_task_set_group() - move @p (not queued) to @tg.
 * @p: a task that is not queued and not current.
 * @tg: the group, NULL (or the root) for the root.
 *
 * Counts @p in @tg's attached tasks (cl_task_group_destroy() refuses a
 * group with attached tasks) and out of its old group's. A task that has
 * been queued before has its entity re-pointed at @tg's queue of its CPU
 * right away, its vruntime carried over relative to the queues' floors (as
 * the kernel's task_move_group): it never keeps a pointer into a group it
 * left, which may then be destroyed while it sleeps. Before freeing a task
 * that is in a group, detach it with cl_task_set_group(p, NULL).
 *
 * Context: @p's rq lock held (cl_task_rq_lock()), or @p never queued;
 * takes the root's groups_lock (a leaf). To move a queued task: dequeue,
 * put it if it was running, set, enqueue.
 * Return: 0, or -1 with errno EBUSY if @p is queued, migrating or still
 * its rq's curr (dequeued but not yet put), or EINVAL if @p is NULL, @tg
 * was destroyed or @tg and @p belong to different instances.
 */
CL_INLINE int cl_task_set_group(struct cl_task *p, struct cl_task_group *tg)
{
	struct cl_task_group *old, *root;
	struct cl_cfs_rq *oq;

	if (!p) {
		errno = EINVAL;
		return -1;
	}
	if (p->se.on_rq || p->on_rq || p->on_cpu) {
		errno = EBUSY;
		return -1;
	}
	old = p->tg;
	oq = p->cpu >= 0 ? p->se.cfs_rq : NULL;
	if (oq)
		CL__RQ_ASSERT_HELD(oq->rq);
	root = tg ? tg->root : old ? old->root : oq ? &oq->rq->sched->root : NULL;
	if (tg && !tg->parent)
		tg = NULL;
	if (!root || tg == old)
		return 0;
	if ((old && old->root != root) || (oq && &oq->rq->sched->root != root)) {
		errno = EINVAL; /* objects of two instances */
		return -1;
	}
	cl_spin_lock(&root->groups_lock);
	if (tg && tg->dead) {
		cl_spin_unlock(&root->groups_lock);
		errno = EINVAL;
		return -1;
	}
	if (tg)
		tg->nr_tasks++;
	if (old)
		old->nr_tasks--;
	cl_spin_unlock(&root->groups_lock);
	if (oq) {
		/* detach from the old queue, attach to the new one on the same CPU */
		uint64_t rel = p->se.vruntime - oq->min_vruntime;

		p->tg = tg;
		cl__set_task_rq(oq->rq, p);
		p->se.vruntime = rel + p->se.cfs_rq->min_vruntime;
	} else {
		p->tg = tg;
	}
	return 0;
}

/**
 * cl_task_set_affinity() - restrict @p to the CPUs set in @mask.
 * @p: the task.
 * @mask: bitmap of unsigned longs (bit n of word n / bits-per-long = CPU
 *        n); NULL allows every CPU.
 * @nbits: number of valid bits in @mask, 1..CL_MAX_CPUS.
 *
 * The mask is not copied. Lifetime rule: it must stay valid and unchanged
 * until a later cl_task_set_affinity() of @p (or cl_task_init()) has
 * returned; after that, the old mask is no longer read by anyone (every
 * reader holds @p's rq lock, or reads while @p is migrating, when this
 * setter waits in cl_task_rq_lock()). One mask may be shared by any number
 * of tasks. The balancer and the offline drain honour it; the caller
 * enqueues on allowed CPUs. A task whose mask names no online CPU is
 * placed on any online CPU when its CPU goes offline (the kernel's
 * select_fallback_rq()).
 *
 * Context: @p's rq lock held (cl_task_rq_lock()), or @p never queued.
 * Return: 0, or -1 with errno EINVAL (@p NULL, @nbits 0 or above
 * CL_MAX_CPUS, or no CPU set in the first @nbits bits).
 */
CL_INLINE int cl_task_set_affinity(struct cl_task *p, const unsigned long *mask, unsigned int nbits)
{
	if (!p || (mask && (nbits == 0 || nbits > CL_MAX_CPUS || !cl__bitmap_weight(mask, nbits)))) {
		errno = EINVAL;
		return -1;
	}
	if (p->cpu >= 0 && p->se.cfs_rq)
		CL__RQ_ASSERT_HELD(p->se.cfs_rq->rq);
	p->cpus_allowed = mask;
	p->cpus_allowed_bits = mask ? nbits : 0;
	return 0;
}

/**
 * cl_task_allowed_on() - may @p run on @cpu?
 * @p: the task.
 * @cpu: a CPU.
 *
 * Context: @p's rq lock held, or @p migrating (see cl_task_set_affinity()).
 * Return: 1 or 0.
 */
CL_INLINE int cl_task_allowed_on(const struct cl_task *p, unsigned int cpu)
{
	return !p->cpus_allowed || cl__bitmap_test(p->cpus_allowed, p->cpus_allowed_bits, cpu);
}

/**
 * cl_rq_update_clock() - set @rq's clock to @now (ignored if it would go back).
 * @rq: the rq.
 * @now: ns, from the caller's clock (cl__now_ns() or a simulated one).
 *
 * Context: @rq's lock held.
 */
CL_INLINE void cl_rq_update_clock(struct cl_rq *rq, uint64_t now)
{
	CL__RQ_ASSERT_HELD(rq);
	if ((int64_t)(now - rq->clock) > 0 || !(rq->clock_update_flags & CL_RQCF_UPDATED)) {
		rq->clock = now;
		rq->clock_task = now;
	}
	rq->clock_update_flags |= CL_RQCF_UPDATED;
}

/* ---- hierarchy (rq lock held) ---- */

/* Recompute a group entity's weight: the group's shares split by this CPU's part of its load. */
CL_INLINE void cl__update_cfs_group(struct cl_sched_entity *se)
{
	struct cl_cfs_rq *gcfs = se->my_q;
	const struct cl_task_group *tg;
	unsigned long shares;
	long tg_w, local;

	if (!gcfs)
		return;
	tg = gcfs->tg;
	local = (long)gcfs->load.weight;
	tg_w = CL_ATOMIC_LOAD(&tg->load_weight, CL_RELAXED);
	if (tg_w < local)
		tg_w = local;
	shares = tg_w > 0 ? (unsigned long)((uint64_t)tg->shares * (uint64_t)local / (uint64_t)tg_w)
			  : tg->shares;
	if (shares < CL_MIN_SHARES)
		shares = CL_MIN_SHARES;
	if (shares > tg->shares)
		shares = tg->shares;
	cl__reweight_entity(se->cfs_rq, se, shares);
}

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
		CL__RQ_ASSERT_HELD(cl_sched_rq(rq->sched, (unsigned int)p->cpu));
	cl__rq_enqueue(rq, p, flags);
	return 0;
}

/**
 * cl_task_wake() - enqueue the sleeping (or new) task @p on @cpu, taking
 * the locks cl_rq_enqueue() needs: @cpu's rq and the rq @p last ran on.
 * @s: the instance.
 * @p: a task not queued (asleep, or never queued: then enqueued as new).
 * @cpu: the CPU to run it on (online, allowed for @p).
 * @now_ns: current time; @cpu's rq clock is updated to it.
 *
 * Waits while @p is migrating. Does not check preemption: lock @cpu's rq
 * and call cl_rq_check_preempt_wakeup() if the caller wants to know.
 *
 * Context: holding no rq lock.
 * Return: 0, or -1 with errno as cl_rq_enqueue() (EINVAL already queued
 * or another instance's, EBUSY still running elsewhere, ENXIO @cpu
 * offline), or EINVAL for a bad @s, @p or @cpu.
 */
CL_INLINE int cl_task_wake(struct cl_sched *s, struct cl_task *p, unsigned int cpu, uint64_t now_ns)
{
	struct cl_rq *dst, *old;
	int c, r;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || !p || cpu >= s->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	dst = cl_sched_rq(s, cpu);
	for (;;) {
		c = CL_ATOMIC_LOAD(&p->cpu, CL_ACQUIRE);
		if (c >= (int)s->nr_cpus) {
			errno = EINVAL;
			return -1;
		}
		old = c < 0 ? dst : cl_sched_rq(s, (unsigned int)c);
		cl_rq_lock_two(old, dst);
		if (CL_READ_ONCE(p->cpu) == c && CL_READ_ONCE(p->on_rq) != CL_TASK_ON_RQ_MIGRATING)
			break;
		cl_rq_unlock_two(old, dst);
		while (CL_ATOMIC_LOAD(&p->on_rq, CL_ACQUIRE) == CL_TASK_ON_RQ_MIGRATING)
			CL_CPU_RELAX();
	}
	cl_rq_update_clock(dst, now_ns);
	r = cl_rq_enqueue(dst, p, c < 0 ? 0 : CL_ENQUEUE_WAKEUP);
	cl_rq_unlock_two(old, dst);
	return r;
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
	struct cl_sched_entity *se = &p->se;
	uint64_t now = rq->clock_task;
	int throttled = 0;

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
	struct cl_task *p = rq->curr;
	uint64_t now = rq->clock_task;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;

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
 * (T4: the list stays ordered most recently run first).
 *
 * Context: @rq's lock held.
 * Return: the task, or NULL (idle: nothing runnable).
 */
CL_INLINE struct cl_task *cl_rq_pick_next(struct cl_rq *rq)
{
	struct cl_cfs_rq *cfs_rq = &rq->cfs;
	struct cl_sched_entity *se = NULL;
	uint64_t now = rq->clock_task;
	struct cl_task *p;

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
	p = cl_task_of(se);
	cds_list_move(&p->se.group_node, &rq->cfs_tasks);
	p->on_cpu = 1;
	CL_WRITE_ONCE(rq->curr, p);
	rq->nr_switches++;
	return p;
}

/* Should @curr (running from @cfs_rq) give way now? */
CL_INLINE int cl__check_preempt_tick(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *curr)
{
	uint64_t ideal = cl_sched_slice(cfs_rq, curr);
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
 * @now: current time (ns); updates the rq clock.
 *
 * Charges the running task at every level, updates load averages and group
 * weights, takes bandwidth runtime, and decides whether it should be
 * preempted (it used its slice, or another entity is far enough behind).
 *
 * Context: @rq's lock held.
 * Return: 1 if the caller should reschedule (cl_rq_pick_next()), else 0.
 */
CL_INLINE int cl_rq_tick(struct cl_rq *rq, uint64_t now)
{
	struct cl_task *p;
	struct cl_sched_entity *se;
	struct cl_cfs_rq *cfs_rq;
	int resched = 0;

	cl_rq_update_clock(rq, now);
	p = rq->curr;
	if (!p)
		return rq->nr_running != 0 && rq->online;
	now = rq->clock_task;
	if (!p->se.on_rq || !rq->online)
		resched = 1; /* blocked, or the CPU is going offline: pick (NULL) next */
	cl__for_each_curr_level(p, se, cfs_rq) {
		cl__update_curr(cfs_rq, now);
		cl__update_cfs_rq_avg(cfs_rq, now);
		cl__update_se_avg(se, now);
		if (se->my_q)
			cl__update_cfs_group(se);
		if (cfs_rq->runtime_enabled && cfs_rq->runtime_remaining <= 0 &&
		    !cl__assign_cfs_rq_runtime(cfs_rq))
			resched = 1;
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
		struct cl_cfs_rq *cfs_rq = cl_tg_cfs_rq(tg, cpu);
		struct cl_rq *rq = cfs_rq->rq;

		cl_rq_lock(rq);
		cfs_rq->runtime_enabled = quota_ns != 0;
		cfs_rq->runtime_remaining = 0;
		cl_rq_unlock(rq);
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
	struct cl_task_group *root = &rq->sched->root, *tg;
	unsigned int n = 0;

	CL__RQ_ASSERT_HELD(rq);
	cl_sched_rcu_read_lock();
	/* parents after children in the list: go parents-first by repeating
	 * until nothing changes (depth passes at most) */
	for (int again = 1; again;) {
		again = 0;
		cl__tg_for_each_rcu(tg, root) {
			struct cl_cfs_rq *cfs_rq = cl_tg_cfs_rq(tg, rq->cpu);

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

/* ---- invariants ---- */

/* Check one queue and everything under it; counts tasks reached. */
CL_INLINE const char *cl__validate_cfs_rq(const struct cl_rq *rq, struct cl_cfs_rq *cfs_rq,
					  unsigned int *tasks)
{
	struct cl_sched_entity *se, *prev = NULL;
	struct cds_list_head *pos;
	unsigned int nr = 0, h = 0;
	unsigned long w = 0;

	if (cfs_rq->rq != rq)
		return "queue of another rq in the hierarchy";
	cds_list_for_each(pos, &cfs_rq->tasks_timeline) {
		se = cl_container_of(pos, struct cl_sched_entity, run_node);
		if (!se->on_rq)
			return "entity on a timeline but not on_rq";
		if (se->cfs_rq != cfs_rq)
			return "entity's cfs_rq is not the queue it is on";
		if (se == cfs_rq->curr)
			return "curr is on its timeline";
		if (prev && cl__vdiff(se->vruntime, prev->vruntime) < 0)
			return "timeline not sorted by vruntime";
		prev = se;
	}
	cds_list_for_each(pos, &cfs_rq->tasks_timeline) {
		se = cl_container_of(pos, struct cl_sched_entity, run_node);
		nr++;
		w += se->load.weight;
		if (se->my_q) {
			const char *why;

			if (se->my_q->throttled)
				return "throttled group entity still queued";
			why = cl__validate_cfs_rq(rq, se->my_q, tasks);
			if (why)
				return why;
			h += se->my_q->h_nr_running;
		} else {
			h++;
			(*tasks)++;
		}
	}
	se = cfs_rq->curr;
	if (se && se->on_rq) {
		nr++;
		w += se->load.weight;
		if (se->my_q) {
			const char *why = cl__validate_cfs_rq(rq, se->my_q, tasks);

			if (why)
				return why;
			h += se->my_q->h_nr_running;
		} else {
			h++;
			(*tasks)++;
		}
	}
	if (nr != cfs_rq->nr_running)
		return "cfs_rq nr_running does not match its queued entities";
	if (w != cfs_rq->load.weight)
		return "cfs_rq load does not match its queued entities' weights";
	if (h != cfs_rq->h_nr_running)
		return "cfs_rq h_nr_running does not match the tasks below it";
	if (cfs_rq->tg->parent && cfs_rq->nr_running && !cfs_rq->throttled &&
	    !cl_cfs_rq_se(cfs_rq)->on_rq)
		return "non-empty unthrottled group queue whose entity is not queued";
	return NULL;
}

/**
 * cl_rq_validate() - check @rq's invariants (tests, debugging).
 * @rq: the rq.
 * @why: set to a description of the first violation (may be NULL).
 *
 * Checks: each timeline sorted and holding only queued entities of that
 * queue (curr excluded); nr_running, load and h_nr_running of each queue
 * equal to what is queued under it; rq->nr_running equal to the tasks
 * reachable from the root queue; every task on cfs_tasks queued on this
 * rq; no more tasks reachable than on cfs_tasks.
 *
 * Context: @rq's lock held. O(queued entities).
 * Return: 0 if consistent, -1 if not (errno untouched: a pure check).
 */
CL_INLINE int cl_rq_validate(struct cl_rq *rq, const char **why)
{
	unsigned int tasks = 0, listed = 0;
	const char *w;
	struct cl_sched_entity *se;
	struct cds_list_head *pos;

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
			if (!se->on_rq || cl_task_of(se)->cpu != (int)rq->cpu || se->cfs_rq->rq != rq ||
			    cl_task_of(se)->on_rq != CL_TASK_ON_RQ_QUEUED) {
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

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RQ_H */
