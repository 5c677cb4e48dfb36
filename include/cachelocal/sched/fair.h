/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/fair.h - the fair class's types: entities, per-queue
 * timelines, tasks and task groups of the reference userspace runqueue, and
 * their tunables. The class is EEVDF, as the kernel's since 6.6 (docs/sched.md
 * "EEVDF" has the maths): each queue keeps the load-weighted average of its
 * entities' vruntimes; an entity is eligible when its vruntime is not past
 * that average (lag >= 0), and the pick is the eligible entity with the
 * earliest virtual deadline (vruntime + slice * NICE_0_LOAD / weight).
 *
 * Timeline: each cfs_rq keeps its queued entities (not the running one, as
 * in the kernel) in an AVL tree embedded in the entities (no allocation),
 * ordered by virtual deadline (ties first-in first-out), each node carrying
 * the smallest vruntime of its subtree, so the eligible entity with the
 * earliest deadline is found in O(log n) (docs/sched.md "Timeline").
 *
 * The functions here only initialize; the operations are in queue.h (on an
 * rq, lock held) and the helpers they share in internal.h (private).
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
/* Base slice: the request size of an entity that did not ask for another
 * (the kernel's sysctl_sched_base_slice, unscaled). */
#define CL_SCHED_BASE_SLICE_NS 750000ULL
/* Bounds of a per-task slice (cl_task_set_slice_ns()), the kernel's for a fair task. */
#define CL_SCHED_SLICE_MIN_NS 100000ULL
#define CL_SCHED_SLICE_MAX_NS 100000000ULL
/* The lag an entity keeps is bounded by max(2 slices, one tick) of service. */
#define CL_SCHED_TICK_NS 1000000ULL
/* Group shares bounds. */
#define CL_MIN_SHARES 2UL
#define CL_MAX_SHARES (1UL << 18)

/* Enqueue flags. */
#define CL_ENQUEUE_WAKEUP 0x1 /* entity slept: its lag debt shrank while it slept (docs/sched.md) */
#define CL_ENQUEUE_MIGRATED 0x2 /* set by cl_rq_enqueue(): woken on another CPU, lag carried over */
#define CL_ENQUEUE_INITIAL 0x4 /* set by cl_rq_enqueue(): a new task, placed with half a slice */
/* Dequeue flags. */
#define CL_DEQUEUE_SLEEP 0x1 /* entity blocks (else it leaves to migrate); its lag is kept either way */

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

/* A timeline link: the entity's children in its queue's tree. */
struct cl_timeline_node {
	struct cl_sched_entity *left, *right;
};

/* A queue's timeline: the root of its tree, and the FIFO tie-breaker. */
struct cl_timeline {
	struct cl_sched_entity *root;
};

/*
 * struct cl_sched_entity - what a cfs_rq queues: a task or a group.
 *
 * cl_se_read_pick: the tree node and what the pick's descent reads at each
 *   node: the key (deadline, tl_seq), vruntime and the subtree minimum
 *   (eligibility), the height (balance); and load/on_rq. Written on
 *   enqueue/dequeue/put (tree updates) and when the entity runs. One line:
 *   a pick at 100,000 entities touches one line per tree level.
 * cl_se_read_walk: the hierarchy pointers, read by every enqueue/dequeue
 *   walk and, without the lock, by other CPUs walking the hierarchy
 *   (balance, wake placement). Written when a task changes CPU or group.
 * cl_se_write_exec: written by update_curr() on every tick and switch
 *   (exec_start, runtime sums), by the MRU move on pick (group_node) and by
 *   dequeue (vlag). Read by the same paths and by the balancer's cache-hot test.
 * cl_se_write_avg: load tracking, written on every update (T2): alone on its
 *   own line so that those stores do not invalidate the read lines.
 * Locking: all fields are protected by the lock of the rq whose hierarchy
 * queues the entity; remote readers without that lock only read pointers
 * and counters as hints.
 * Keep in step with docs/layout/cl_sched_entity.md.
 */
struct cl_sched_entity {
#ifdef CL_SE_AVG_INLINE
	/* "before" (T2): exec fields first, then the hierarchy with avg inline. */
	CL_GROUP_BEGIN(cl_se_write_exec);
	struct cds_list_head group_node;  /* link in rq->cfs_tasks (tasks only), MRU order */
	uint64_t exec_start;              /* clock when it last started or was accounted */
	uint64_t sum_exec_runtime;        /* total ns run */
	uint64_t prev_sum_exec_runtime;   /* sum_exec_runtime when last picked */
	uint64_t slice;                   /* ns it asks to run per pick (the request size) */
	uint64_t nr_migrations;
	int64_t vlag;                     /* V - vruntime when it left its queue; while
					   * running: its deadline at pick (RUN_TO_PARITY) */
	CL_GROUP_END(cl_se_write_exec);
	CL_GROUP_BEGIN(cl_se_read_walk);
	struct cl_sched_entity *parent;   /* group entity one level up, NULL at the root */
	struct cl_cfs_rq *cfs_rq;         /* queue this entity is (or will be) queued on */
	struct cl_cfs_rq *my_q;           /* queue this entity owns: NULL for a task */
	int depth;                        /* 0 for entities of the root cfs_rq */
	CL_GROUP_END(cl_se_read_walk);
	CL_GROUP_BEGIN(cl_se_write_avg);
	struct cl_sched_avg avg;
	CL_GROUP_END(cl_se_write_avg);
	CL_GROUP_BEGIN(cl_se_read_pick);
#else
	CL_GROUP_BEGIN_ALIGNED(cl_se_read_pick);
#endif
	struct cl_timeline_node run_node; /* children in cfs_rq's tree while queued, not running */
	uint64_t deadline;                /* virtual deadline: the tree key */
	uint64_t vruntime;                /* weighted ns run */
	uint64_t min_vruntime;            /* smallest vruntime in the subtree rooted here */
	struct cl_load_weight load;       /* weight from the nice table or the group's shares */
	uint32_t tl_seq;                  /* insertion number: FIFO among equal deadlines */
	int tl_height;                    /* height of the subtree rooted here (AVL) */
	unsigned int on_rq;               /* 1 while queued (running or not) */
#ifdef CL_SE_AVG_INLINE
	CL_GROUP_END(cl_se_read_pick);
#else
	CL_GROUP_END_ALIGNED(cl_se_read_pick);

	CL_GROUP_BEGIN_ALIGNED(cl_se_read_walk);
	struct cl_sched_entity *parent;
	struct cl_cfs_rq *cfs_rq;
	struct cl_cfs_rq *my_q;
	int depth;
	CL_GROUP_END_ALIGNED(cl_se_read_walk);

	CL_GROUP_BEGIN_ALIGNED(cl_se_write_exec);
	struct cds_list_head group_node;
	uint64_t exec_start;
	uint64_t sum_exec_runtime;
	uint64_t prev_sum_exec_runtime;
	uint64_t slice;
	uint64_t nr_migrations;
	int64_t vlag;
	CL_GROUP_END_ALIGNED(cl_se_write_exec);

	CL_GROUP_BEGIN_ALIGNED(cl_se_write_avg);
	struct cl_sched_avg avg;
	CL_GROUP_END_ALIGNED(cl_se_write_avg);
#endif
};

#ifndef __cplusplus
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, run_node);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, deadline);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, vruntime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, min_vruntime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, load);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, tl_seq);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, tl_height);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_pick, on_rq);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_read_pick, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_walk, parent);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_walk, cfs_rq);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_walk, my_q);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_read_walk, depth);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_read_walk, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, group_node);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, exec_start);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, sum_exec_runtime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, prev_sum_exec_runtime);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, slice);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, nr_migrations);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_exec, vlag);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_write_exec, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_sched_entity, cl_se_write_avg, avg);
CL_ASSERT_GROUP_SIZE(struct cl_sched_entity, cl_se_write_avg, CL_CACHELINE_SIZE);
#ifndef CL_SE_AVG_INLINE
CL_ASSERT_ALIGNED(struct cl_sched_entity);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_read_pick);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_read_walk);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_write_exec);
CL_ASSERT_GROUP_ALIGNED(struct cl_sched_entity, cl_se_write_avg);
/* the descent reads the links, the key and the minima of a node: one line */
CL_ASSERT_SAME_LINE(struct cl_sched_entity, run_node, min_vruntime);
CL_ASSERT_SAME_LINE(struct cl_sched_entity, deadline, tl_height);
CL_ASSERT_SAME_LINE(struct cl_sched_entity, parent, my_q);
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
 *
 * cl_cfs_rq_read_pick: what a pick reads besides the tree nodes: the tree
 *   root, curr, and the two sums that give the average vruntime V:
 *   avg_vruntime = sum of w * (vruntime - min_vruntime) and avg_load = sum
 *   of w over the entities in the tree (curr is added when V is needed).
 */
struct cl_cfs_rq {
	CL_GROUP_BEGIN(cl_cfs_rq_read_pick);
	struct cl_load_weight load;           /* sum of queued entities' weights (curr included) */
	unsigned int nr_running;              /* entities queued here, curr included */
	unsigned int h_nr_running;            /* tasks queued in this subtree, throttled parts excluded */
	uint64_t min_vruntime;                /* monotonic floor, the base of avg_vruntime */
	struct cl_timeline timeline;          /* entities by deadline; curr is not on it */
	struct cl_sched_entity *curr;         /* entity running from this queue, or NULL */
	int64_t avg_vruntime;                 /* sum of w * (vruntime - min_vruntime), tree only */
	unsigned long avg_load;               /* sum of w, tree only */
	struct cl_rq *rq;                     /* the CPU's rq */
	CL_GROUP_END(cl_cfs_rq_read_pick);
	struct cl_task_group *tg;             /* owning group (the root group for rq->cfs) */
	struct cl_sched_entity *next;         /* next buddy: the next pick's choice if eligible */
	uint32_t timeline_seq;                /* next tl_seq */
	unsigned int cpu;                     /* rq's CPU */
	struct cl_sched_avg avg;              /* queue load average (weighted) */
	long tg_load_avg_contrib;             /* this queue's part of tg->load_avg: beside avg,
					       * on the line the blocked-load walk writes */
	long tg_load_contrib;                 /* this queue's part of tg->load_weight */
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
	int home_cpu;                      /* hint, -1 none: the CPU its partners run on; the
					    * balancer moves it away from there last (balance.h) */
	void *data;                        /* caller's */
};
/* cl_task_init() clears around cpu and on_rq, which it stores atomically */
CL_STATIC_ASSERT(offsetof(struct cl_task, nice) == offsetof(struct cl_task, cpu) + sizeof(int) &&
			 offsetof(struct cl_task, home_cpu) == offsetof(struct cl_task, on_rq) + sizeof(int),
		 "struct cl_task: cpu, nice ... on_rq, home_cpu adjacent");

/* ---- task group constants (group.h, bandwidth.h) ---- */
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
 * struct cl_task_group - a node of the group tree. Created and destroyed by
 * group.h; the per-CPU parts are found with cl_tg_cfs_rq()/cl_tg_se().
 * Read-mostly after creation except the load sum and the bandwidth pool.
 */
struct cl_task_group {
	/* what the walks read of each group, on its first line: its link,
	 * parent, per-CPU queues and load sums */
	struct cl_task_group *parent;      /* NULL for the root */
	struct cds_list_head list;         /* in root->groups, newest first (children before parents); RCU */
#ifdef CL_GROUP_POINTER_ARRAYS
	/* "before" (T5): nr_cpus pointers each, to separately allocated objects. */
	struct cl_cfs_rq **cfs_rq_arr;
	struct cl_sched_entity **se_arr;
#else
	/* CPU 0's queue: CPU n's is cl_percpu_ptr(cfs_rq, n). The root group's is &rq->cfs. */
	struct cl_cfs_rq *cfs_rq;
#endif
	long load_avg;                     /* sum of the per-CPU queues' average contributions (atomic) */
	/* and what enqueue and dequeue read of it (a group entity's weight) */
	unsigned long shares;              /* weight of this group relative to its siblings */
	long load_weight;                  /* sum of the per-CPU queues' tg_load_contrib (atomic) */
	struct cl_task_group *root;        /* the root of this tree (itself for the root) */
	struct cl_percpu_pool *pool;       /* where the per-CPU parts live */
	unsigned int nr_cpus;
	int depth;                         /* 0 for the root */
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

/* ---- public helpers (the operations are in queue.h, the private ones in internal.h) ---- */

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
	return cl_container_of(se, struct cl_task, se);
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
	cfs_rq->rq = rq;
	cfs_rq->tg = tg;
	cfs_rq->cpu = cpu;
}

/**
 * cl_sched_entity_init() - initialize an entity (not queued), with the
 * base slice.
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
	se->slice = CL_SCHED_BASE_SLICE_NS;
	CDS_INIT_LIST_HEAD(&se->group_node);
}

/**
 * cl_sched_slice() - the request size of @se: the wall time it asks to run
 * each time it is picked (its virtual deadline is vruntime + slice scaled by
 * NICE_0_LOAD / weight). CL_SCHED_BASE_SLICE_NS unless
 * cl_task_set_slice_ns() chose another.
 * @cfs_rq: the queue @se is (or will be) on.
 * @se: the entity.
 *
 * Context: rq lock held.
 * Return: the slice in ns; 0 with errno EINVAL for a NULL argument.
 */
CL_INLINE uint64_t cl_sched_slice(const struct cl_cfs_rq *cfs_rq, const struct cl_sched_entity *se)
{
	if (CL__BAD_ARG(cfs_rq == NULL || se == NULL))
		return 0;
	return se->slice;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_FAIR_H */
