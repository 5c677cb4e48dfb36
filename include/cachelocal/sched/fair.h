/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/fair.h - fair-class entities, per-queue timelines and
 * load tracking of the reference userspace runqueue.
 *
 * Types: struct cl_sched_entity (a task or a group as seen by its parent
 * queue), struct cl_cfs_rq (one fair queue: the root one embedded in each
 * struct cl_rq, one per task group per CPU), struct cl_task, and the task
 * group type (its operations are in group.h). The functions here act on one
 * queue at a time and take the time explicitly; rq.h composes them into the
 * hierarchical enqueue/dequeue/pick/tick.
 *
 * Timeline choice: each cfs_rq keeps its queued entities (not the running
 * one, as in the kernel) on a cds_list sorted by vruntime, FIFO among equal
 * keys. Pick = first element, O(1); dequeue = list unlink, O(1), no
 * rebalancing; insert walks from the tail, because the entity re-inserted
 * most often is the one that just ran and whose vruntime is now the largest,
 * so the common insert costs O(1) and the worst case O(n). The queues of a
 * userspace runtime hold a handful to a few dozen entities per CPU per group,
 * where a list beats a tree on constant factors and needs no allocation and
 * no hand-written balancing code. A queue with thousands of runnable
 * entities per CPU would want a tree; the operations that touch the timeline
 * are the three cl__timeline_*() helpers below, the only place to change.
 *
 * Layout (technique T2): the load-tracking average `avg` is written on every
 * update of the entity while other CPUs read `cfs_rq`/`my_q`/`parent` of the
 * same entity on their pick and balance paths. It gets its own line.
 * -DCL_SE_AVG_INLINE builds the "before" layout (avg inline after my_q, on a
 * line shared with cfs_rq). docs/layout/cl_sched_entity.md has the table.
 */
#ifndef CACHELOCAL_SCHED_FAIR_H
#define CACHELOCAL_SCHED_FAIR_H

#include <stdint.h>
#include <string.h>

#include <urcu/list.h>
#include <urcu/urcu-memb.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../config.h"
#include "../spinlock.h"

CL_BEGIN_DECLS

/* ---- tunables (ns); the kernel's defaults for one CPU ---- */
#define CL_NICE_0_LOAD 1024UL
#define CL_NICE_MIN (-20)
#define CL_NICE_MAX 19
/* Scheduling period over which every runnable entity runs once. */
#define CL_SCHED_LATENCY_NS 6000000ULL
/* Shortest slice an entity gets however many share the period. */
#define CL_SCHED_MIN_GRANULARITY_NS 750000ULL
/* A waking entity preempts only when this much (weighted) vruntime ahead. */
#define CL_SCHED_WAKEUP_GRANULARITY_NS 1000000ULL
/* Group shares bounds. */
#define CL_MIN_SHARES 2UL
#define CL_MAX_SHARES (1UL << 18)

/* Enqueue flags. */
#define CL_ENQUEUE_WAKEUP 0x1 /* entity slept: place near min_vruntime (absolute vruntime kept) */
#define CL_ENQUEUE_MIGRATED 0x2 /* set by cl_rq_enqueue(): vruntime was made relative to the old CPU */
/* Dequeue flags. */
#define CL_DEQUEUE_SLEEP 0x1 /* entity blocks: keep absolute vruntime (else made relative) */

struct cl_rq;
struct cl_cfs_rq;
struct cl_task_group;

/* Load weight of an entity or a queue (sum of its entities). */
struct cl_load_weight {
	unsigned long weight;
};

/*
 * PELT-like load average. Time is counted in 1024-ns units ("us"), periods
 * of 1024 units; the sum decays by y per period with y^32 = 1/2.
 */
struct cl_sched_avg {
	uint64_t last_update_time; /* ns, clock of the last update */
	uint64_t load_sum;         /* decayed sum of runnable (weighted for queues) time */
	unsigned long load_avg;    /* load_sum scaled to a weight */
	uint32_t period_contrib;   /* units already counted in the current period */
	uint32_t reserved;
};

/*
 * struct cl_sched_entity - what a cfs_rq queues: a task or a group.
 *
 * cl_se_read_pick: read by the pick path (owner CPU) and, without the lock,
 *   by other CPUs walking the hierarchy (balance, wake placement): the
 *   weight, the timeline link and key, and the hierarchy pointers. Written on
 *   enqueue/dequeue and when the entity runs (vruntime). One line.
 * cl_se_write_exec: written by update_curr() on every tick and switch
 *   (exec_start, runtime sums) and by the MRU move on pick (group_node).
 *   Read by the same paths and by the balancer's cache-hot test.
 * cl_se_write_avg: load tracking, written on every update (T2): alone on its
 *   own line so that those stores do not invalidate cl_se_read_pick.
 * Locking: all fields are protected by the lock of the rq whose hierarchy
 * queues the entity; remote readers without that lock only read pointers
 * and counters as hints.
 * Keep in step with docs/layout/cl_sched_entity.md.
 */
struct cl_sched_entity {
#ifdef CL_SE_AVG_INLINE
	/* "before" (T2): exec fields first, pick fields after, avg inline. */
	CL_GROUP_BEGIN(cl_se_write_exec);
	struct cds_list_head group_node;  /* link in rq->cfs_tasks (tasks only), MRU order */
	uint64_t exec_start;              /* clock when it last started or was accounted */
	uint64_t sum_exec_runtime;        /* total ns run */
	uint64_t prev_sum_exec_runtime;   /* sum_exec_runtime when last picked */
	uint64_t slice;                   /* ns it may run before the tick preempts it (cl_rq_tick()) */
	uint64_t nr_migrations;
	CL_GROUP_END(cl_se_write_exec);
	CL_GROUP_BEGIN(cl_se_read_pick);
#else
	CL_GROUP_BEGIN_ALIGNED(cl_se_read_pick);
#endif
	struct cl_load_weight load;       /* weight from the nice table or the group's shares */
	struct cds_list_head run_node;    /* link in cfs_rq->tasks_timeline while queued, not running */
	unsigned int on_rq;               /* 1 while queued (running or not) */
	int depth;                        /* 0 for entities of the root cfs_rq */
	uint64_t vruntime;                /* timeline key: weighted ns run */
	struct cl_sched_entity *parent;   /* group entity one level up, NULL at the root */
	struct cl_cfs_rq *cfs_rq;         /* queue this entity is (or will be) queued on */
	struct cl_cfs_rq *my_q;           /* queue this entity owns: NULL for a task */
#ifdef CL_SE_AVG_INLINE
	CL_GROUP_END(cl_se_read_pick);
	CL_GROUP_BEGIN(cl_se_write_avg);
	struct cl_sched_avg avg;
	CL_GROUP_END(cl_se_write_avg);
#else
	CL_GROUP_END_ALIGNED(cl_se_read_pick);

	CL_GROUP_BEGIN_ALIGNED(cl_se_write_exec);
	struct cds_list_head group_node;
	uint64_t exec_start;
	uint64_t sum_exec_runtime;
	uint64_t prev_sum_exec_runtime;
	uint64_t slice;
	uint64_t nr_migrations;
	CL_GROUP_END_ALIGNED(cl_se_write_exec);

	CL_GROUP_BEGIN_ALIGNED(cl_se_write_avg);
	struct cl_sched_avg avg;
	CL_GROUP_END_ALIGNED(cl_se_write_avg);
#endif
};

#ifndef __cplusplus
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, load);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, run_node);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, on_rq);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, depth);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, vruntime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, parent);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, cfs_rq);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, my_q);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_read_pick, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, group_node);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, exec_start);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, sum_exec_runtime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, prev_sum_exec_runtime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, slice);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, nr_migrations);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_write_exec, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_avg, avg);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_write_avg, CL_CACHELINE_SIZE);
#ifndef CL_SE_AVG_INLINE
CL_ASSERT_ALIGNED(struct cl_sched_entity);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_read_pick);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_write_exec);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_write_avg);
CL_ASSERT_SAME_LINE(struct cl_sched_entity, vruntime, my_q);
/* T2: the avg stores never touch the line (or the prefetch pair) of cfs_rq/my_q. */
CL_ASSERT_APART(struct cl_sched_entity, avg, cfs_rq);
CL_ASSERT_APART(struct cl_sched_entity, avg, my_q);
CL_ASSERT_APART_GUARD(struct cl_sched_entity, avg, cfs_rq);
#endif
#endif

/*
 * struct cl_cfs_rq - one fair queue (root: in struct cl_rq; groups: one per
 * group per CPU, co-allocated with the group's entity, see group.h).
 * Protected by the lock of the rq it belongs to (`rq`).
 */
struct cl_cfs_rq {
	CL_GROUP_BEGIN(cl_cfs_rq_read_pick);
	struct cl_load_weight load;           /* sum of queued entities' weights (curr included) */
	unsigned int nr_running;              /* entities queued here, curr included */
	unsigned int h_nr_running;            /* tasks queued in this subtree, throttled parts excluded */
	uint64_t min_vruntime;                /* monotonic floor of the timeline */
	struct cds_list_head tasks_timeline;  /* entities sorted by vruntime; curr is not on it */
	struct cl_sched_entity *curr;         /* entity running from this queue, or NULL */
	struct cl_rq *rq;                     /* the CPU's rq */
	struct cl_task_group *tg;             /* owning group (the root group for rq->cfs) */
	CL_GROUP_END(cl_cfs_rq_read_pick);
	struct cl_sched_avg avg;              /* queue load average (weighted) */
	long tg_load_contrib;                 /* this queue's part of tg->load_weight */
	long tg_load_avg_contrib;             /* this queue's part of tg->load_avg */
	unsigned int cpu;                     /* rq's CPU */
	int throttled;                        /* bandwidth: this queue is throttled */
	int throttle_count;                   /* throttled queues on the path from here to the root */
	int runtime_enabled;                  /* the group has a quota */
	int64_t runtime_remaining;            /* ns left of the slice taken from the group pool */
	uint64_t nr_throttled;                /* statistics */
};

#ifndef __cplusplus
CL_ASSERT_GROUP_SIZE(struct cl_cfs_rq, cl_cfs_rq_read_pick, CL_CACHELINE_SIZE);
#endif

/* struct cl_task.on_rq: the task's queue state (the kernel's TASK_ON_RQ_*). */
#define CL_TASK_ON_RQ_QUEUED 1    /* queued on rq(cpu) (running or not) */
#define CL_TASK_ON_RQ_MIGRATING 2 /* in transit between two rqs: on neither, not asleep */

/*
 * struct cl_task - a schedulable task. Embeds its entity; everything else is
 * owned by the caller (data) or set through cl_task_init()/cl_task_set_*().
 * Locking (docs/sched.md has the full table): cpu is written only with the
 * rq locks of both the old and the new CPU held; on_rq, on_cpu, tg and the
 * entity under the lock of rq(cpu); readers use cl_task_rq_lock().
 */
struct cl_task {
	CL_GROUPED_MEMBER(struct cl_sched_entity se);
	struct cl_task_group *tg;          /* NULL: the root group; counted in tg->nr_tasks */
	const unsigned long *cpus_allowed; /* bitmap of allowed CPUs (caller-owned, see
					    * cl_task_set_affinity() for its lifetime), NULL = all */
	unsigned int cpus_allowed_bits;    /* bits in cpus_allowed */
	int cpu;                           /* CPU whose rq queues it or ran it last, -1 none */
	int nice;
	int on_cpu;                        /* 1 while it is its rq's curr */
	int on_rq;                         /* 0 (not queued), CL_TASK_ON_RQ_QUEUED or _MIGRATING */
	void *data;                        /* caller's */
};

/*
 * struct cl_task_group - a node of the group tree. Created and destroyed by
 * group.h; the per-CPU parts are found with cl_tg_cfs_rq()/cl_tg_se().
 * Read-mostly after creation except the load sum and the bandwidth pool.
 */
struct cl_task_group {
	struct cl_task_group *parent;      /* NULL for the root */
	struct cl_task_group *root;        /* the root of this tree (itself for the root) */
#ifdef CL_GROUP_POINTER_ARRAYS
	/* "before" (T5): nr_cpus pointers each, to separately allocated objects. */
	struct cl_cfs_rq **cfs_rq_arr;
	struct cl_sched_entity **se_arr;
#else
	/* CPU 0's queue: CPU n's is cl_percpu_ptr(cfs_rq, n). The root group's is &rq->cfs. */
	struct cl_cfs_rq *cfs_rq;
#endif
	struct cl_percpu_pool *pool;       /* where the per-CPU parts live */
	unsigned int nr_cpus;
	int depth;                         /* 0 for the root */
	unsigned long shares;              /* weight of this group relative to its siblings */
	long load_weight;                  /* sum of the per-CPU queues' tg_load_contrib (atomic) */
	long load_avg;                     /* sum of the per-CPU queues' average contributions (atomic) */
	struct cds_list_head list;         /* in root->groups, newest first (children before parents); RCU */
	struct cds_list_head siblings;     /* in parent->children; RCU */
	struct cds_list_head children;     /* RCU */
	struct rcu_head rcu;
	/* bandwidth (group.h): quota per period, pool refilled each period */
	struct cl_spinlock bw_lock;        /* protects runtime, period_start, nr_periods */
	int dead;                          /* unlinked, waiting for a grace period (groups_lock) */
	unsigned long nr_tasks;            /* tasks attached (queued or not); root's groups_lock */
	uint64_t quota_ns;                 /* 0: unlimited */
	uint64_t period_ns;
	int64_t runtime;                   /* ns left in the pool this period */
	uint64_t period_start;
	uint64_t nr_periods;
	/* root only */
	struct cds_list_head groups;       /* every non-root group, newest first; RCU */
	struct cl_spinlock groups_lock;    /* serializes create/destroy (list writers) */
	unsigned long nr_groups;
};

/* ---- small helpers ---- */

/* cl_task_of() without the argument checks: the library's own callers. */
CL_INLINE struct cl_task *cl__task_of(struct cl_sched_entity *se)
{
	return cl_container_of(se, struct cl_task, se);
}

/**
 * cl_task_of() - the task that embeds @se.
 * @se: a task's entity (my_q == NULL; see cl_entity_is_task()).
 *
 * Context: any.
 * Return: the task; NULL with errno EINVAL for a NULL or group entity.
 */
CL_INLINE struct cl_task *cl_task_of(struct cl_sched_entity *se)
{
	if (CL__BAD_ARG(se == NULL || se->my_q != NULL))
		return NULL;
	return cl__task_of(se);
}

/**
 * cl_entity_is_task() - is @se a task's entity (not a group's)?
 * @se: an entity.
 *
 * Context: any.
 * Return: 1 for a task, 0 for a group entity.
 */
CL_INLINE int cl_entity_is_task(const struct cl_sched_entity *se)
{
	if (CL__BAD_ARG(se == NULL))
		return 0;
	return se->my_q == NULL;
}

/**
 * cl_nice_to_weight() - load weight of a nice level (the kernel's table:
 * each step is about 10% of CPU time, a factor of about 1.25).
 * @nice: -20..19; clamped.
 *
 * Context: any.
 * Return: the weight (1024 for nice 0).
 */
CL_INLINE unsigned long cl_nice_to_weight(int nice)
{
	static const unsigned long w[40] = {
		88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
		9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
		1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
		110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
	};

	if (nice < CL_NICE_MIN)
		nice = CL_NICE_MIN;
	if (nice > CL_NICE_MAX)
		nice = CL_NICE_MAX;
	return w[nice - CL_NICE_MIN];
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

/* ---- PELT-like load tracking ---- */

#define CL_PELT_PERIOD 1024U      /* units of 1024 ns per period */
#define CL_PELT_LOAD_AVG_MAX 47742UL /* limit of sum over n of 1024 * y^n */

/* val * y^n with y^32 = 1/2, in 32-bit fixed point (y ~ 4202935003 / 2^32). */
CL_INLINE uint64_t cl__pelt_decay(uint64_t val, uint64_t n)
{
	const uint64_t y = 4202935003ULL;

	if (n >= 32 * 63)
		return 0;
	val >>= n / 32;
	n %= 32;
	while (n--)
		val = (val >> 32) * y + (((val & 0xffffffffULL) * y) >> 32);
	return val;
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

/* Queue average: decayed sum of the queued weight (blocked load decays). */
CL_INLINE void cl__update_cfs_rq_avg(struct cl_cfs_rq *cfs_rq, uint64_t now)
{
	cl__pelt_accumulate(&cfs_rq->avg, now, cfs_rq->load.weight);
	cfs_rq->avg.load_avg = (unsigned long)(cfs_rq->avg.load_sum / CL_PELT_LOAD_AVG_MAX);
}

/* ---- timeline (see the header comment for the choice) ---- */

CL_INLINE void cl__timeline_insert(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se)
{
	struct cds_list_head *pos;

	/* from the tail: the just-run entity usually goes last; the loop ends
	 * on the head (insert first) when every entity is later than @se */
	cds_list_for_each_prev(pos, &cfs_rq->tasks_timeline) {
		struct cl_sched_entity *o = cl_container_of(pos, struct cl_sched_entity, run_node);

		if (cl__vdiff(o->vruntime, se->vruntime) <= 0)
			break;
	}
	cds_list_add(&se->run_node, pos);
}

CL_INLINE void cl__timeline_remove(struct cl_sched_entity *se)
{
	cds_list_del_init(&se->run_node);
}

CL_INLINE struct cl_sched_entity *cl__timeline_first(struct cl_cfs_rq *cfs_rq)
{
	if (cds_list_empty(&cfs_rq->tasks_timeline))
		return NULL;
	return cl_container_of(cfs_rq->tasks_timeline.next, struct cl_sched_entity, run_node);
}

/* ---- per-queue operations (caller holds the rq lock) ---- */

/**
 * cl_cfs_rq_init() - initialize an empty fair queue.
 * @cfs_rq: the queue.
 * @rq: its CPU's runqueue.
 * @tg: the group owning it.
 * @cpu: the CPU.
 *
 * Context: before publication; no lock.
 */
CL_INLINE void cl_cfs_rq_init(struct cl_cfs_rq *cfs_rq, struct cl_rq *rq, struct cl_task_group *tg,
			      unsigned int cpu)
{
	if (CL__BAD_ARG(cfs_rq == NULL))
		return;
	memset(cfs_rq, 0, sizeof(*cfs_rq));
	CDS_INIT_LIST_HEAD(&cfs_rq->tasks_timeline);
	cfs_rq->rq = rq;
	cfs_rq->tg = tg;
	cfs_rq->cpu = cpu;
}

/**
 * cl_sched_entity_init() - initialize an entity (not queued).
 * @se: the entity.
 * @weight: its load weight (cl_nice_to_weight() for tasks, shares for groups).
 *
 * Context: before it is first queued; no lock.
 */
CL_INLINE void cl_sched_entity_init(struct cl_sched_entity *se, unsigned long weight)
{
	if (CL__BAD_ARG(se == NULL))
		return;
	memset(se, 0, sizeof(*se));
	se->load.weight = weight ? weight : CL_NICE_0_LOAD;
	CDS_INIT_LIST_HEAD(&se->run_node);
	CDS_INIT_LIST_HEAD(&se->group_node);
}

/* Add @delta to the queue's weight and, for a group queue, the group's sum. */
CL_INLINE void cl__cfs_rq_add_load(struct cl_cfs_rq *cfs_rq, long delta)
{
	cfs_rq->load.weight = (unsigned long)((long)cfs_rq->load.weight + delta);
	if (cfs_rq->tg && cfs_rq->tg->parent) {
		cfs_rq->tg_load_contrib += delta;
		CL_ATOMIC_FETCH_ADD(&cfs_rq->tg->load_weight, delta, CL_RELAXED);
	}
}

/* Raise min_vruntime to the smallest of curr and the leftmost, never lower it. */
CL_INLINE void cl__update_min_vruntime(struct cl_cfs_rq *cfs_rq)
{
	struct cl_sched_entity *curr = cfs_rq->curr, *left = cl__timeline_first(cfs_rq);
	uint64_t v = cfs_rq->min_vruntime;
	int have = 0;

	if (curr && curr->on_rq) {
		v = curr->vruntime;
		have = 1;
	}
	if (left && (!have || cl__vdiff(left->vruntime, v) < 0)) {
		v = left->vruntime;
		have = 1;
	}
	/* written once: other CPUs read it racily when a task migrates on wakeup */
	if (have && cl__vdiff(v, cfs_rq->min_vruntime) > 0)
		CL_WRITE_ONCE(cfs_rq->min_vruntime, v);
}

/**
 * cl_sched_slice() - the wall-time slice of @se in @cfs_rq: its weight's share
 * of the period (CL_SCHED_LATENCY_NS, stretched to CL_SCHED_MIN_GRANULARITY_NS
 * per entity when many are queued).
 * @cfs_rq: the queue.
 * @se: an entity of it (queued or about to be).
 *
 * Context: rq lock held.
 * Return: the slice in ns.
 */
CL_INLINE uint64_t cl_sched_slice(const struct cl_cfs_rq *cfs_rq, const struct cl_sched_entity *se)
{
	uint64_t period = CL_SCHED_LATENCY_NS;
	unsigned long total;
	unsigned int nr;

	if (CL__BAD_ARG(cfs_rq == NULL || se == NULL))
		return 0;
	total = cfs_rq->load.weight;
	nr = cfs_rq->nr_running + !se->on_rq;

	if (nr > CL_SCHED_LATENCY_NS / CL_SCHED_MIN_GRANULARITY_NS)
		period = (uint64_t)nr * CL_SCHED_MIN_GRANULARITY_NS;
	if (!se->on_rq)
		total += se->load.weight;
	if (!total)
		return period;
	return period * se->load.weight / total;
}

/*
 * cl__update_curr() - charge the running entity of @cfs_rq for the time
 * since its exec_start. Returns the ns charged.
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
	cl__update_min_vruntime(cfs_rq);
	if (cfs_rq->runtime_enabled)
		cfs_rq->runtime_remaining -= (int64_t)delta;
	return delta;
}

/*
 * cl__place_entity() - vruntime for an entity being queued: a sleeper gets
 * at most half a period of credit; a relative (migrated or new) vruntime is
 * rebased on this queue's min_vruntime.
 */
CL_INLINE void cl__place_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, int flags)
{
	if (!(flags & CL_ENQUEUE_WAKEUP) || (flags & CL_ENQUEUE_MIGRATED))
		se->vruntime += cfs_rq->min_vruntime;
	if (flags & CL_ENQUEUE_WAKEUP) {
		uint64_t floor = cfs_rq->min_vruntime - CL_SCHED_LATENCY_NS / 2;

		if (cl__vdiff(se->vruntime, floor) < 0)
			se->vruntime = floor;
	}
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
	se->on_rq = 1;
	se->cfs_rq = cfs_rq;
	if (se != cfs_rq->curr)
		cl__timeline_insert(cfs_rq, se);
	cl__update_min_vruntime(cfs_rq);
}

/* Remove @se from @cfs_rq; a curr entity stays curr (off the queue) until put. */
CL_INLINE void cl__dequeue_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, int flags,
				  uint64_t now)
{
	cl__update_curr(cfs_rq, now);
	cl__update_cfs_rq_avg(cfs_rq, now);
	cl__update_se_avg(se, now);
	if (se != cfs_rq->curr)
		cl__timeline_remove(se);
	se->on_rq = 0;
	cl__cfs_rq_add_load(cfs_rq, -(long)se->load.weight);
	cfs_rq->nr_running--;
	cl__update_min_vruntime(cfs_rq);
	if (!(flags & CL_DEQUEUE_SLEEP))
		se->vruntime -= cfs_rq->min_vruntime;
}

/* Make @se the running entity of @cfs_rq. */
CL_INLINE void cl__set_next_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se, uint64_t now)
{
	if (se->on_rq)
		cl__timeline_remove(se);
	CL_WRITE_ONCE(cfs_rq->curr, se);
	se->exec_start = now;
	se->prev_sum_exec_runtime = se->sum_exec_runtime;
	/* se->slice is computed by the tick, its only reader: a 64-bit
	 * division on every enqueue and pick cost ~4 ns each in the M:N
	 * runtime's switch path (bench/pipe) */
}

/* The running entity of @cfs_rq stops running; requeue it if still queued. */
CL_INLINE void cl__put_prev_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *prev, uint64_t now)
{
	cl__update_curr(cfs_rq, now);
	if (prev->on_rq) {
		cl__update_se_avg(prev, now);
		cl__timeline_insert(cfs_rq, prev);
	}
	CL_WRITE_ONCE(cfs_rq->curr, (struct cl_sched_entity *)NULL);
}

/*
 * cl__reweight_entity() - change the weight of @se in @cfs_rq (group
 * shares). vruntime is kept: the change applies from now on.
 */
CL_INLINE void cl__reweight_entity(struct cl_cfs_rq *cfs_rq, struct cl_sched_entity *se,
				   unsigned long weight)
{
	if (se->load.weight == weight)
		return;
	if (se->on_rq)
		cl__cfs_rq_add_load(cfs_rq, (long)weight - (long)se->load.weight);
	se->load.weight = weight;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_FAIR_H */
