/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/balance.h - load balancing between runqueues (T4) and
 * CPU offline/online.
 *
 * cfs_tasks of each rq is kept most-recently-run first (rq.h moves the
 * picked task to the head), so its tail holds the tasks that waited
 * longest: the least cache-hot ones, the ones a migration costs least. The
 * balancer:
 *
 *	1. reads every rq's nr_running without its lock (cl_rq_read_pick line,
 *	   a hint) and picks the busiest;
 *	2. locks both rqs in address order;
 *	3. walks the busiest rq's cfs_tasks from the TAIL, skipping the running
 *	   task, tasks that ran within the cache-hot window (default 500 us),
 *	   tasks whose affinity excludes the destination (the scan continues
 *	   past them: a pinned tail never stops it) and tasks in a throttled
 *	   group; it looks at no more than nr_migrate tasks (default 32) and
 *	   stops as soon as the imbalance is gone. Tasks whose home_cpu is the
 *	   busiest rq's (a hint: the CPU their partners run on) are left for
 *	   a second walk over as long a tail, made only if the imbalance
 *	   remains (the kernel's migrate_degrades_locality() for NUMA);
 *	4. detaches them and attaches them to the destination.
 *
 * -DCL_DETACH_FROM_HEAD builds the "before": the same walk from the head
 * (the most recently run, cache-hot end).
 *
 * Scheduling domains (cl_balance_set_topology()): without a topology step 1
 * picks the busiest online rq anywhere (the flat rule). With one, a pass
 * for CPU d goes bottom-up, as the kernel's fair class, and stops at the
 * first level that moves:
 *
 *	SMT/LLC  the busiest rq among d's SMT siblings, then in d's LLC, if it
 *	         has >= 2 more tasks than d (the flat rule, inside the LLC);
 *	node     the LLC of d's node with the highest average nr_running, if
 *	         that average exceeds d's LLC's by more than the LLC imbalance
 *	         percentage (default 117), pulling from its busiest rq at most
 *	         the tasks that even the two averages;
 *	NUMA     the node with the highest average, if it exceeds d's node's
 *	         by more than the NUMA percentage (default 125) AND the tasks
 *	         that would even the two nodes' averages are more than the
 *	         allowance (default: the kernel's imb_numa_nr, the node's LLC
 *	         count, or 1/8 of its CPUs with one LLC).
 *
 * The group loads are nr_running sums read once per pass (O(CPUs), no
 * O(CPUs^2)); docs/sched.md has the fixpoint this converges to. The table
 * is private: balance/domains.h.
 */
#ifndef CACHELOCAL_SCHED_BALANCE_H
#define CACHELOCAL_SCHED_BALANCE_H

#include <errno.h>
#include <stdint.h>

#include <urcu/list.h>

#include "../compiler.h"
#include "../topology.h"
#include "fair.h"
#include "group.h"
#include "internal.h"
#include "rq.h"

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

/* What one balancing pass did (all counters are added to, not reset). */
struct cl_balance_stats {
	unsigned long scanned;           /* tasks looked at */
	unsigned long moved;             /* tasks migrated */
	unsigned long skipped_running;   /* the source's curr */
	unsigned long skipped_hot;       /* ran within the cache-hot window */
	unsigned long skipped_affinity;  /* destination not allowed */
	unsigned long skipped_throttled; /* in a throttled group */
	unsigned long skipped_home;      /* first pass: its partners run on the source */
	/* tasks migrated by the level the two CPUs share (with a topology only) */
	unsigned long moved_smt;         /* same SMT core */
	unsigned long moved_llc;         /* same LLC, another core */
	unsigned long moved_node;        /* same node, another LLC */
	unsigned long moved_numa;        /* another node */
};

/* Default imbalance percentages of the domains (the kernel's MC and NUMA levels). */
#define CL_BALANCE_LLC_IMBALANCE_PCT 117U
#define CL_BALANCE_NUMA_IMBALANCE_PCT 125U

CL_END_DECLS

/* The domains' table and pass (private piece). */
#include "balance/domains.h"

CL_BEGIN_DECLS

/**
 * cl_balance_set_migration_cost() - set the cache-hot window.
 * @s: the instance (NULL: no-op).
 * @cost_ns: a task that ran less than @cost_ns ago is not migrated (0: never hot).
 *
 * Context: any; read racily by balancing passes.
 */
CL_INLINE void cl_balance_set_migration_cost(struct cl_sched *s, uint64_t cost_ns)
{
	if (!CL__BAD_ARG(s == NULL))
		CL_WRITE_ONCE(s->migration_cost_ns, cost_ns);
}

/**
 * cl_balance_set_nr_migrate() - set the scan bound.
 * @s: the instance (NULL: no-op).
 * @n: at most @n tasks are looked at per pass (0 is taken as 1).
 *
 * Context: any; read racily by balancing passes.
 */
CL_INLINE void cl_balance_set_nr_migrate(struct cl_sched *s, unsigned int n)
{
	if (!CL__BAD_ARG(s == NULL))
		CL_WRITE_ONCE(s->nr_migrate, n ? n : 1U);
}

/**
 * cl_balance_set_topology() - balance by the scheduling domains of @t: rq
 * i stands for CPU id i of @t.
 * @s: the instance.
 * @t: a loaded topology (copied: it may be freed after the call), or NULL
 *     for the flat balancer (the default: busiest rq anywhere).
 *
 * With a topology, cl_balance_run() evens out SMT siblings and LLCs first
 * and moves tasks across LLCs and nodes only past the imbalance thresholds
 * (see the top of this file, cl_balance_set_imbalance_pct() and
 * cl_balance_set_numa_imbalance_nr()).
 *
 * Context: no balancing pass on @s runs concurrently (set it before the
 * balancing threads start, or while they are stopped); allocates.
 * Return: 0, or -1 with errno EINVAL (@s NULL, or an rq id that is not a
 * possible CPU of @t) or ENOMEM; on error the previous setting stays.
 */
CL_INLINE int cl_balance_set_topology(struct cl_sched *s, const struct cl_topology *t)
{
	return cl__balance_set_domains(s, t, NULL);
}

/**
 * cl_balance_set_topology_cpus() - as cl_balance_set_topology(), rq i
 * standing for CPU @cpu_ids[i] of @t (rqs of a runtime's workers pinned to
 * those CPUs, or one rq per online CPU of a sparse machine).
 * @s: the instance.
 * @t: a loaded topology (copied), or NULL for the flat balancer.
 * @cpu_ids: @s's nr_cpus CPU ids of @t (copied; several rqs may share one).
 *
 * Context: as cl_balance_set_topology().
 * Return: 0, or -1 with errno EINVAL (@s NULL, @t without @cpu_ids, or an
 * id that is not a possible CPU of @t) or ENOMEM.
 */
CL_INLINE int cl_balance_set_topology_cpus(struct cl_sched *s, const struct cl_topology *t, const int *cpu_ids)
{
	if (t && !cpu_ids) {
		errno = EINVAL;
		return -1;
	}
	return cl__balance_set_domains(s, t, cpu_ids);
}

/**
 * cl_balance_set_imbalance_pct() - set the domains' imbalance thresholds.
 * @s: the instance.
 * @llc_pct: across the LLCs of a node: an LLC whose average nr_running
 *           exceeds the puller's LLC's by more than @llc_pct percent gives
 *           tasks (0: CL_BALANCE_LLC_IMBALANCE_PCT, 117).
 * @numa_pct: the same across nodes (0: CL_BALANCE_NUMA_IMBALANCE_PCT, 125).
 *
 * Without a topology (cl_balance_set_topology()) they are kept but unused.
 *
 * Context: any; read racily by balancing passes.
 * Return: 0, or -1 with errno EINVAL (@s NULL, or a percentage other than
 * 0 below 100 or above 1000).
 */
CL_INLINE int cl_balance_set_imbalance_pct(struct cl_sched *s, unsigned int llc_pct, unsigned int numa_pct)
{
	if (!s || (llc_pct && (llc_pct < 100 || llc_pct > 1000)) ||
	    (numa_pct && (numa_pct < 100 || numa_pct > 1000))) {
		errno = EINVAL;
		return -1;
	}
	CL_WRITE_ONCE(s->llc_imbalance_pct, llc_pct);
	CL_WRITE_ONCE(s->numa_imbalance_pct, numa_pct);
	return 0;
}

/**
 * cl_balance_set_numa_imbalance_nr() - set the NUMA allowance: tasks move
 * across nodes only if more than @nr would have to move to even the two
 * nodes' average nr_running (and the NUMA percentage is exceeded).
 * @s: the instance.
 * @nr: the allowance in tasks (0: any imbalance past the percentage), or
 *      -1 for the default: per node, the kernel's imb_numa_nr (the node's
 *      LLC count if it has several, else 1/8 of its CPUs; at least 1).
 *
 * Context: any; read racily by balancing passes.
 * Return: 0, or -1 with errno EINVAL (@s NULL, @nr below -1 or above 2^30).
 */
CL_INLINE int cl_balance_set_numa_imbalance_nr(struct cl_sched *s, int nr)
{
	if (!s || nr < -1 || nr > (1 << 30)) {
		errno = EINVAL;
		return -1;
	}
	CL_WRITE_ONCE(s->numa_imb_nr, (unsigned int)(nr + 1));
	return 0;
}

/**
 * cl_balance_find_busiest() - the online rq with the most runnable tasks,
 * read without locks.
 * @s: the instance.
 * @dst_cpu: the CPU that would pull (excluded).
 *
 * Context: any; lock-free (CL_READ_ONCE of each rq's nr_running, on its
 * read-mostly line).
 * Return: the busiest CPU if it has at least 2 more tasks than @dst_cpu
 * (moving one helps), else -1.
 */
CL_INLINE int cl_balance_find_busiest(const struct cl_sched *s, unsigned int dst_cpu)
{
	unsigned int dst_nr, best_nr = 0;
	int best = -1;

	if (CL__BAD_ARG(s == NULL || dst_cpu >= s->nr_cpus))
		return -1;
	dst_nr = CL_READ_ONCE(cl__sched_rq(s, dst_cpu)->nr_running);
	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		struct cl_rq *rq = cl__sched_rq(s, c);
		unsigned int nr;

		if (c == dst_cpu || !CL_READ_ONCE(rq->online))
			continue;
		nr = CL_READ_ONCE(rq->nr_running);
		if (nr > best_nr) {
			best_nr = nr;
			best = (int)c;
		}
	}
	return best >= 0 && best_nr >= dst_nr + 2 ? best : -1;
}

/*
 * cl__can_migrate_task() - may @p move from @src to @dst now? Counts the
 * reason in @st when not.
 */
CL_INLINE int cl__can_migrate_task(const struct cl_sched *s, struct cl_rq *src, struct cl_rq *dst,
				   struct cl_task *p, struct cl_balance_stats *st)
{
	uint64_t cost = CL_READ_ONCE(s->migration_cost_ns);

	if (p->on_cpu || src->curr == p) {
		st->skipped_running++;
		return 0;
	}
	if (!cl_task_allowed_on(p, dst->cpu)) {
		st->skipped_affinity++;
		return 0;
	}
	if (cl_cfs_rq_throttled_hierarchy(p->se.cfs_rq)) {
		st->skipped_throttled++;
		return 0;
	}
	if (cost && p->se.exec_start && (int64_t)(src->clock_task - p->se.exec_start) < (int64_t)cost) {
		st->skipped_hot++;
		return 0;
	}
	return 1;
}

/* cl__balance_move() - cl_balance_move() moving at most @max tasks. */
CL_INLINE int cl__balance_move(struct cl_sched *s, unsigned int src_cpu, unsigned int dst_cpu,
				uint64_t now_ns, struct cl_balance_stats *st, int max)
{
	struct cl_balance_stats dummy;
	struct cl_rq *src, *dst;
	struct cds_list_head detached, *pos, *next;
	unsigned int limit, scanned = 0, homed = 0;
	int imbalance, moved = 0;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || src_cpu >= s->nr_cpus || dst_cpu >= s->nr_cpus || src_cpu == dst_cpu) {
		errno = EINVAL;
		return -1;
	}
	if (!st) {
		memset(&dummy, 0, sizeof(dummy));
		st = &dummy;
	}
	src = cl__sched_rq(s, src_cpu);
	dst = cl__sched_rq(s, dst_cpu);
	CDS_INIT_LIST_HEAD(&detached);
	limit = CL_READ_ONCE(s->nr_migrate);
	cl_rq_lock_two(src, dst);
	if (!src->online || !dst->online) {
		cl_rq_unlock_two(src, dst);
		errno = EINVAL;
		return -1;
	}
	cl__rq_update_clock(src, now_ns);
	cl__rq_update_clock(dst, now_ns);
	imbalance = ((int)src->nr_running - (int)dst->nr_running) / 2;
	imbalance = imbalance < max ? imbalance : max;
	/*
	 * Pass 0 leaves the tasks whose home is @src (their partners run there:
	 * the runtime's wake-affine sets it); pass 1, only if it left some and
	 * the imbalance is not gone, looks at those in as long a tail: an even
	 * spread still wins over a home. The node forms: the entities are
	 * cache-line aligned (see rq.h).
	 */
	for (int pass = 0; pass < 2 && imbalance > 0 && (!pass || homed); pass++, limit = 2 * scanned) {
#ifdef CL_DETACH_FROM_HEAD
		cds_list_for_each_safe(pos, next, &src->cfs_tasks) {
#else
		cds_list_for_each_prev_safe(pos, next, &src->cfs_tasks) {
#endif
			struct cl_task *p = cl__task_of(cl_container_of(pos, struct cl_sched_entity, group_node));

			if (imbalance <= 0 || scanned >= limit)
				break;
			scanned++;
			if ((CL_READ_ONCE(p->home_cpu) == (int)src->cpu) != pass) {
				homed += !pass;
				continue;
			}
			if (!cl__can_migrate_task(s, src, dst, p, st))
				continue;
			/* its lag goes with it: placed at the destination's V minus that lag */
			cl__rq_dequeue(src, p, 0);
			cds_list_add_tail(&p->se.group_node, &detached);
			imbalance--;
		}
	}
	cds_list_for_each_safe(pos, next, &detached) {
		struct cl_task *p = cl__task_of(cl_container_of(pos, struct cl_sched_entity, group_node));

		cds_list_del_init(pos);
		cl__rq_enqueue(dst, p, 0); /* both locks held: p->cpu moves under both */
		p->se.nr_migrations++;
		moved++;
	}
	src->nr_migrations_out += (uint64_t)moved;
	dst->nr_migrations_in += (uint64_t)moved;
	cl_rq_unlock_two(src, dst);
	st->scanned += scanned;
	st->moved += (unsigned long)moved;
	st->skipped_home += homed;
	if (moved && s->balance_domains) {
		unsigned long *lvl[] = { &st->moved_smt, &st->moved_llc, &st->moved_node, &st->moved_numa };

		*lvl[cl__bal_level((const struct cl__bal_dom *)s->balance_domains, src_cpu, dst_cpu)] +=
			(unsigned long)moved;
	}
	return moved;
}

/**
 * cl_balance_move() - move up to half the difference in runnable tasks from
 * @src_cpu to @dst_cpu, coldest first.
 * @s: the instance.
 * @src_cpu: the busy CPU.
 * @dst_cpu: the pulling CPU.
 * @now_ns: current time (both rqs' clocks are updated to it).
 * @st: counters to add to (may be NULL).
 *
 * Context: holding no rq lock; takes both in address order.
 * Return: the number of tasks moved (>= 0), or -1 with errno EINVAL (bad or
 * equal CPUs, or a CPU offline).
 */
CL_INLINE int cl_balance_move(struct cl_sched *s, unsigned int src_cpu, unsigned int dst_cpu,
			      uint64_t now_ns, struct cl_balance_stats *st)
{
	return cl__balance_move(s, src_cpu, dst_cpu, now_ns, st, INT32_MAX);
}

/**
 * cl_balance_run() - one pass for @dst_cpu: find the busiest rq and pull
 * from it.
 * @s: the instance.
 * @dst_cpu: the (idle or lightly loaded) CPU that pulls.
 * @now_ns: current time.
 * @st: counters to add to (may be NULL).
 *
 * Without a topology the busiest rq is cl_balance_find_busiest()'s and up
 * to half the difference moves. With one (cl_balance_set_topology()) the
 * domains choose, bottom-up (see the top of this file): the first level
 * out of balance gives, at most the tasks that even its groups' averages,
 * and the moves are counted in @st by level.
 *
 * Context: holding no rq lock; with a topology, no
 * cl_balance_set_topology() concurrently.
 * Return: tasks moved (0 if balanced), or -1 with errno EINVAL.
 */
CL_INLINE int cl_balance_run(struct cl_sched *s, unsigned int dst_cpu, uint64_t now_ns,
			     struct cl_balance_stats *st)
{
	int src;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || dst_cpu >= s->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	if (!CL_READ_ONCE(cl__sched_rq(s, dst_cpu)->online))
		return 0;
	if (s->balance_domains) {
		int max;

		src = cl__bal_find(s, (const struct cl__bal_dom *)s->balance_domains, dst_cpu, &max);
		return src < 0 ? 0 : cl__balance_move(s, (unsigned int)src, dst_cpu, now_ns, st, max);
	}
	src = cl_balance_find_busiest(s, dst_cpu);
	if (src < 0)
		return 0;
	return cl_balance_move(s, (unsigned int)src, dst_cpu, now_ns, st);
}

/* Mark @rq going offline (hotplug_lock held): no enqueue, no balancing to or from it. */
CL_INLINE int cl__cpu_offline_begin(struct cl_sched *s, struct cl_rq *rq)
{
	if (!rq->online) {
		if (!rq->drained)
			return 0; /* already going offline */
		errno = EINVAL;
		return -1;
	}
	if (s->nr_online <= 1) {
		errno = EBUSY; /* the last online CPU */
		return -1;
	}
	cl__rq_lock(rq);
	CL_WRITE_ONCE(rq->online, 0);
	cl__rq_unlock(rq);
	s->nr_online--;
	return 0;
}

/**
 * cl_balance_cpu_offline_begin() - first half of taking @cpu offline while
 * a worker thread may be running @cpu's current task: "@cpu is going
 * offline".
 * @s: the instance.
 * @cpu: an online CPU.
 *
 * From here on @cpu accepts no enqueue (ENXIO), the balancer neither pulls
 * to nor from it, cl_rq_tick() on it asks for a reschedule and
 * cl_rq_pick_next() on it puts the running task back and returns NULL.
 * That NULL is the worker's acknowledgment: the handshake is
 *
 *	hotplug thread                      worker of @cpu
 *	cl_balance_cpu_offline_begin()
 *	                                    cl_rq_tick() -> 1 (or its own reason)
 *	                                    cl_rq_pick_next() -> NULL: stop running,
 *	                                    cl_rq_online(rq) == 0: idle
 *	cl_balance_cpu_offline() -> -1 EAGAIN until then, then drains
 *
 * Context: holding no rq lock; takes the instance's hotplug_lock.
 * Return: 0 (also if it is already going offline), or -1 with errno EINVAL
 * (bad CPU, already offline) or EBUSY (the last online CPU).
 */
CL_INLINE int cl_balance_cpu_offline_begin(struct cl_sched *s, unsigned int cpu)
{
	int r;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || cpu >= s->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	cl_spin_lock(&s->hotplug_lock);
	r = cl__cpu_offline_begin(s, cl__sched_rq(s, cpu));
	cl_spin_unlock(&s->hotplug_lock);
	return r;
}

/**
 * cl_rq_online() - is @rq's CPU online (not going offline, not offline)?
 * @rq: the rq.
 *
 * Context: any (a hint without @rq's lock; exact with it).
 * Return: 1 or 0.
 */
CL_INLINE int cl_rq_online(const struct cl_rq *rq)
{
	if (CL__BAD_ARG(rq == NULL))
		return 0;
	return CL_READ_ONCE(rq->online) != 0;
}

/*
 * cl__balance_fallback_cpu() - where a task of an offline CPU goes: the
 * allowed online CPU with the fewest tasks, else (affinity cannot be kept,
 * as the kernel's select_fallback_rq) any online CPU with the fewest. The
 * online set is stable (hotplug_lock held); @p is migrating, so its
 * affinity mask is stable too (setters wait in cl_task_rq_lock()).
 */
CL_INLINE int cl__balance_fallback_cpu(const struct cl_sched *s, const struct cl_task *p)
{
	int best = -1, any = -1;
	unsigned int best_nr = 0, any_nr = 0;

	for (unsigned int c = 0; c < s->nr_cpus; c++) {
		struct cl_rq *rq = cl__sched_rq(s, c);
		unsigned int nr;

		if (!CL_READ_ONCE(rq->online))
			continue;
		nr = CL_READ_ONCE(rq->nr_running);
		if (any < 0 || nr < any_nr) {
			any = (int)c;
			any_nr = nr;
		}
		if (cl_task_allowed_on(p, c) && (best < 0 || nr < best_nr)) {
			best = (int)c;
			best_nr = nr;
		}
	}
	return best >= 0 ? best : any;
}

/**
 * cl_balance_cpu_offline() - take @cpu out: move every task queued on it
 * (throttled ones included) to online CPUs and empty its groups' queues.
 * @s: the instance.
 * @cpu: the CPU: online (then the caller guarantees that no thread is
 *       running @cpu's current task, e.g. a single-threaded driver: it is
 *       put back here), or going offline after
 *       cl_balance_cpu_offline_begin() (then @cpu's worker must have
 *       acknowledged: no current task).
 * @now_ns: current time.
 *
 * Throttled group queues of @cpu are unthrottled and every task is
 * dequeued under @cpu's lock and marked CL_TASK_ON_RQ_MIGRATING
 * (cl_task_rq_lock() on one of them waits; an enqueue of one fails); then
 * each is enqueued, with both rq locks held, on the least loaded allowed
 * online CPU (any online CPU if its affinity allows none). The queues'
 * load contributions are withdrawn from their groups. Offline and online
 * calls are serialized (hotplug_lock), so the drain's targets stay online.
 *
 * Context: holding no rq lock; an RCU-registered thread; takes the
 * hotplug_lock, then rq locks.
 * Return: the number of tasks moved, or -1 with errno EINVAL (bad CPU,
 * already offline), EBUSY (the last online CPU) or EAGAIN (going offline
 * and its worker still runs a task: call again after its
 * cl_rq_pick_next() returned NULL).
 */
CL_INLINE int cl_balance_cpu_offline(struct cl_sched *s, unsigned int cpu, uint64_t now_ns)
{
	struct cl_rq *rq;
	struct cl_task *p;
	struct cl_task_group *tg, *root;
	struct cds_list_head drained, *pos, *next;
	int moved = 0, was_online;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || cpu >= s->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	root = &s->root;
	rq = cl__sched_rq(s, cpu);
	CDS_INIT_LIST_HEAD(&drained);
	cl_spin_lock(&s->hotplug_lock);
	was_online = rq->online;
	if (cl__cpu_offline_begin(s, rq) != 0) {
		cl_spin_unlock(&s->hotplug_lock);
		return -1;
	}
	cl__rq_lock(rq);
	if (!was_online && rq->curr) {
		cl__rq_unlock(rq);
		cl_spin_unlock(&s->hotplug_lock);
		errno = EAGAIN; /* the worker has not acknowledged yet */
		return -1;
	}
	cl__rq_update_clock(rq, now_ns);
	cl_rq_put_prev(rq);
	/* unthrottle first: every group entity of this CPU must leave its parent */
	cl_sched_rcu_read_lock();
	for (int again = 1; again;) {
		again = 0;
		cl__tg_for_each_rcu(tg, root) {
			struct cl_cfs_rq *q = cl__tg_cfs_rq(tg, cpu);

			if (q->throttled) {
				cl__unthrottle_cfs_rq(rq, q);
				again = 1;
			}
		}
	}
	cl_sched_rcu_read_unlock();
	cds_list_for_each_safe(pos, next, &rq->cfs_tasks) {
		p = cl__task_of(cl_container_of(pos, struct cl_sched_entity, group_node));
		cl__rq_dequeue(rq, p, 0);
		CL_ATOMIC_STORE(&p->on_rq, CL_TASK_ON_RQ_MIGRATING, CL_RELEASE);
		cds_list_add_tail(&p->se.group_node, &drained);
	}
	/* withdraw the (now empty) queues' averages from their groups */
	cl_sched_rcu_read_lock();
	cl__tg_for_each_rcu(tg, root) {
		struct cl_cfs_rq *q = cl__tg_cfs_rq(tg, cpu);

		if (q->tg_load_avg_contrib) {
			CL_ATOMIC_FETCH_SUB(&tg->load_avg, q->tg_load_avg_contrib, CL_RELAXED);
			q->tg_load_avg_contrib = 0;
		}
		memset(&q->avg, 0, sizeof(q->avg));
	}
	cl_sched_rcu_read_unlock();
	rq->drained = 1;
	cl__rq_unlock(rq);

	cds_list_for_each_safe(pos, next, &drained) {
		struct cl_rq *dst;

		p = cl__task_of(cl_container_of(pos, struct cl_sched_entity, group_node));
		/* nr_online >= 1 (hotplug_lock held): a CPU is found */
		dst = cl__sched_rq(s, (unsigned int)cl__balance_fallback_cpu(s, p));
		cl_rq_lock_two(rq, dst);
		cds_list_del_init(&p->se.group_node);
		cl__rq_update_clock(dst, now_ns);
		cl__rq_enqueue(dst, p, 0); /* p->cpu moves with both locks held; on_rq: QUEUED */
		p->se.nr_migrations++;
		dst->nr_migrations_in++;
		rq->nr_migrations_out++;
		cl_rq_unlock_two(rq, dst);
		moved++;
	}
	cl_spin_unlock(&s->hotplug_lock);
	return moved;
}

/**
 * cl_balance_cpu_online() - bring @cpu back (or cancel a pending
 * cl_balance_cpu_offline_begin()); balancing passes then pull tasks to it.
 * @s: the instance.
 * @cpu: an offline (or going offline) CPU.
 * @now_ns: current time (the rq clock restarts from it).
 *
 * Context: holding no rq lock; takes the hotplug_lock, then @cpu's rq lock.
 * Return: 0, or -1 with errno EINVAL (bad CPU or already online).
 */
CL_INLINE int cl_balance_cpu_online(struct cl_sched *s, unsigned int cpu, uint64_t now_ns)
{
	struct cl_rq *rq;

	CL__ASSERT_NO_RQ_LOCK();
	if (!s || cpu >= s->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	rq = cl__sched_rq(s, cpu);
	cl_spin_lock(&s->hotplug_lock);
	cl__rq_lock(rq);
	if (rq->online) {
		cl__rq_unlock(rq);
		cl_spin_unlock(&s->hotplug_lock);
		errno = EINVAL;
		return -1;
	}
	cl__rq_update_clock(rq, now_ns);
	rq->drained = 0;
	CL_WRITE_ONCE(rq->online, 1);
	s->nr_online++;
	cl__rq_unlock(rq);
	cl_spin_unlock(&s->hotplug_lock);
	return 0;
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_BALANCE_H */
