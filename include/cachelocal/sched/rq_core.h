/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/rq_core.h - the runqueue's types: struct cl_rq (layout
 * T1) and struct cl_sched. Their operations are in rq.h (instance, locks,
 * clock) and queue.h; included by both.
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
/* The T1 pair: the pick group's line and the lock apart; the first fails under CL_RQ_LAYOUT_SCATTERED
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
	unsigned int llc_imbalance_pct;  /* balance: across LLCs of a node (0: the default) */
	unsigned int numa_imbalance_pct; /* balance: across nodes (0: the default) */
	unsigned int numa_imb_nr;        /* balance: allowance across nodes + 1 (0: the topology's) */
	void *balance_domains;           /* balance: the domains (balance.h); NULL: flat; freed by destroy */
	struct cl_spinlock hotplug_lock; /* serializes CPU offline/online (taken without rq locks) */
	unsigned int nr_online;        /* CPUs online (hotplug_lock) */
	struct cl_task_group root;     /* the root group: its queue on CPU n is rq(n)->cfs */
};

/* Defaults of the balancing knobs (the kernel's). */
#define CL_SCHED_MIGRATION_COST_NS 500000ULL
#define CL_SCHED_NR_MIGRATE 32U

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RQ_CORE_H */
