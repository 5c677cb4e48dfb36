/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/rq_core.h - the runqueue's types and locking: struct cl_rq
 * (layout T1), struct cl_sched, the rq locks (with their CL_DEBUG ownership
 * checks), the rq clock and the helpers every rq operation shares.
 * Included by sched/rq.h; not meant to be included alone by users.
 */
#ifndef CACHELOCAL_SCHED_RQ_CORE_H
#define CACHELOCAL_SCHED_RQ_CORE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <urcu/list.h>
#include <urcu/urcu-memb.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../percpu.h"
#include "../spinlock.h"
#include "fair.h"
#include "group.h"

CL_BEGIN_DECLS

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

/* cl_sched_rq() without the argument checks: the library's own callers. */
CL_INLINE struct cl_rq *cl__sched_rq(const struct cl_sched *s, unsigned int cpu)
{
	return cl_percpu_ptr(s->rqs, cpu);
}

/**
 * cl_sched_rq() - CPU @cpu's runqueue.
 * @s: the instance.
 * @cpu: below cl_sched_nr_cpus(@s).
 *
 * Context: any; no memory load beyond @s->rqs (per-CPU stride arithmetic).
 * Return: the rq; NULL with errno EINVAL for a NULL @s or @cpu out of range.
 */
CL_INLINE struct cl_rq *cl_sched_rq(const struct cl_sched *s, unsigned int cpu)
{
	if (CL__BAD_ARG(s == NULL || cpu >= s->nr_cpus))
		return NULL;
	return cl__sched_rq(s, cpu);
}

/** cl_sched_nr_cpus() - number of rqs. @s: the instance. Return: the count (0, EINVAL: NULL @s). Context: any. */
CL_INLINE unsigned int cl_sched_nr_cpus(const struct cl_sched *s)
{
	if (CL__BAD_ARG(s == NULL))
		return 0;
	return s->nr_cpus;
}

/** cl_sched_root_group() - the root task group. @s: the instance. Return: it (NULL, EINVAL: NULL @s). Context: any. */
CL_INLINE struct cl_task_group *cl_sched_root_group(struct cl_sched *s)
{
	if (CL__BAD_ARG(s == NULL))
		return NULL;
	return &s->root;
}

/* ---- locking ---- */

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

/** cl_rq_lock() - take @rq's lock. @rq: the rq. Context: not holding it (not recursive). */
CL_INLINE void cl_rq_lock(struct cl_rq *rq)
{
	if (!CL__BAD_ARG(rq == NULL))
		cl__rq_lock(rq);
}

/** cl_rq_unlock() - release @rq's lock. @rq: the rq. Context: the holder. */
CL_INLINE void cl_rq_unlock(struct cl_rq *rq)
{
	if (!CL__BAD_ARG(rq == NULL))
		cl__rq_unlock(rq);
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
	if (CL__BAD_ARG(a == NULL || b == NULL))
		return; /* neither taken */
	if (a == b) {
		cl__rq_lock(a);
	} else if ((uintptr_t)a < (uintptr_t)b) {
		cl__rq_lock(a);
		cl__rq_lock(b);
	} else {
		cl__rq_lock(b);
		cl__rq_lock(a);
	}
}

/** cl_rq_unlock_two() - release what cl_rq_lock_two() took. @a: rq. @b: rq. Context: holder. */
CL_INLINE void cl_rq_unlock_two(struct cl_rq *a, struct cl_rq *b)
{
	if (CL__BAD_ARG(a == NULL || b == NULL))
		return;
	cl__rq_unlock(a);
	if (a != b)
		cl__rq_unlock(b);
}

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

/**
 * cl_rq_update_clock() - set @rq's clock to @now_ns (ignored if it would go back).
 * @rq: the rq.
 * @now_ns: ns, from the caller's clock (cl__now_ns() or a simulated one).
 *
 * Context: @rq's lock held.
 */
CL_INLINE void cl_rq_update_clock(struct cl_rq *rq, uint64_t now_ns)
{
	if (!CL__BAD_ARG(rq == NULL))
		cl__rq_update_clock(rq, now_ns);
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

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RQ_CORE_H */
