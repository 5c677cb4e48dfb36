/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/rq.h - the per-CPU runqueue of the reference scheduler:
 * the instance and task API. Include this one; it brings the rest:
 *
 *	rq_core.h     struct cl_rq (layout T1), struct cl_sched
 *	queue.h       enqueue/dequeue/put/pick/tick/wakeup preemption (rq lock held)
 *	bandwidth.h   quota, refill, cl_rq_bandwidth_update()
 *	validate.h    cl_rq_validate()
 *	rq.h          cl_sched_create/destroy, cl_sched_rq(), rq locks and clock,
 *	              cl_task_*: init, weight, slice, group, affinity,
 *	              cl_task_rq_lock(), cl_task_wake()
 *	internal.h    what they share (private)
 *
 * A scheduler instance (struct cl_sched) owns one struct cl_rq per CPU,
 * allocated as one per-CPU object: rq(cpu) = cl_percpu_ptr(rqs, cpu), and
 * the root task group whose queue on CPU n is rq(n)->cfs. The core is a data
 * structure: no threads, no timers. The caller supplies time with
 * cl_rq_update_clock() (or cl_rq_tick()) and calls the operations with the
 * rq lock held; docs/sched.md has the worker protocol and the field -> lock
 * table.
 *
 * Locking order (docs/sched.md): the instance's hotplug_lock -> rq locks
 * (two at once in address order, cl_rq_lock_two()) -> a group's bw_lock or
 * the root's groups_lock (leaves). RCU read sections may be entered with
 * any of these held.
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
#include "../internal/backoff.h"
#include "../internal/bitmap.h"
#include "../percpu.h"
#include "../spinlock.h"
#include "bandwidth.h"
#include "fair.h"
#include "group.h"
#include "internal.h"
#include "queue.h"
#include "rq_core.h"
#include "validate.h"

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

/**
 * cl_sched_nr_cpus() - number of rqs.
 * @s: the instance.
 *
 * Return: the count (0, EINVAL: NULL @s).
 *
 * Context: any.
 */
CL_INLINE unsigned int cl_sched_nr_cpus(const struct cl_sched *s)
{
	if (CL__BAD_ARG(s == NULL))
		return 0;
	return s->nr_cpus;
}

/**
 * cl_sched_root_group() - the root task group.
 * @s: the instance.
 *
 * Return: it (NULL, EINVAL: NULL @s).
 *
 * Context: any.
 */
CL_INLINE struct cl_task_group *cl_sched_root_group(struct cl_sched *s)
{
	if (CL__BAD_ARG(s == NULL))
		return NULL;
	return &s->root;
}

/* ---- locking and clock ---- */

/**
 * cl_rq_lock() - take @rq's lock.
 * @rq: the rq.
 *
 * Context: not holding it (not recursive).
 */
CL_INLINE void cl_rq_lock(struct cl_rq *rq)
{
	if (!CL__BAD_ARG(rq == NULL))
		cl__rq_lock(rq);
}

/**
 * cl_rq_unlock() - release @rq's lock.
 * @rq: the rq.
 *
 * Context: the holder.
 */
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

/**
 * cl_rq_unlock_two() - release what cl_rq_lock_two() took.
 * @a: rq.
 * @b: rq.
 *
 * Context: holder.
 */
CL_INLINE void cl_rq_unlock_two(struct cl_rq *a, struct cl_rq *b)
{
	if (CL__BAD_ARG(a == NULL || b == NULL))
		return;
	cl__rq_unlock(a);
	if (a != b)
		cl__rq_unlock(b);
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
		struct cl_rq *rq = cl__sched_rq(s, cpu);

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
		struct cl_rq *rq = cl__sched_rq(s, cpu);

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
	free(s->balance_domains);
	if (s->own_pool)
		cl_percpu_pool_destroy(s->pool);
	free(s);
	return 0;
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
		rq = cl__sched_rq(s, (unsigned int)cpu);
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
		/* the mover may be preempted: spin a little, then yield to it */
		for (unsigned n = 0; CL_ATOMIC_LOAD(&p->on_rq, CL_ACQUIRE) == CL_TASK_ON_RQ_MIGRATING;)
			cl__backoff(&n, CL__BACKOFF_SPINS);
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
	cl_rq_unlock(rq); /* NULL: errno EINVAL, nothing done */
}

/* ---- tasks ---- */

/**
 * cl_task_init() - initialize @p (not queued) with nice level @nice.
 * @p: the task.
 * @nice: -20..19 (clamped); weight from cl_nice_to_weight().
 *
 * The task starts in the root group, allowed on every CPU, with the base
 * slice and no lag (it lands at the average vruntime of the queue it is
 * first put on, with half a slice to its first deadline).
 *
 * Context: before first use; no lock.
 */
CL_INLINE void cl_task_init(struct cl_task *p, int nice)
{
	if (CL__BAD_ARG(p == NULL))
		return;
	/* cpu and on_rq are stored atomically, not cleared with the rest: a
	 * reused task's may be read at the same time by a scheduler that holds
	 * a stale pointer to it (a hint, tested with atomic loads) */
	memset(p, 0, offsetof(struct cl_task, cpu));
	memset(&p->nice, 0, offsetof(struct cl_task, on_rq) - offsetof(struct cl_task, nice));
	memset(&p->home_cpu, 0, sizeof(*p) - offsetof(struct cl_task, home_cpu));
	CL_ATOMIC_STORE(&p->cpu, -1, CL_RELAXED);
	CL_ATOMIC_STORE(&p->on_rq, 0, CL_RELAXED);
	cl_sched_entity_init(&p->se, cl_nice_to_weight(nice));
	p->nice = nice < CL_NICE_MIN ? CL_NICE_MIN : nice > CL_NICE_MAX ? CL_NICE_MAX : nice;
	p->home_cpu = -1;
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
	/* the real lag w * vlag is what the task keeps */
	p->se.vlag = p->se.vlag * (int64_t)p->se.load.weight / (int64_t)weight;
	p->se.load.weight = weight;
	return 0;
}

/**
 * cl_task_set_slice_ns() - the request size of @p: how long it asks to run
 * each time it is picked. A shorter slice gives an earlier virtual deadline
 * (vruntime + slice * 1024 / weight), so the task is picked sooner, and
 * more often, for the same share of CPU: the latency knob of EEVDF, instead
 * of a nicer nice (the kernel's sched_attr.sched_runtime for a fair task).
 * @p: the task.
 * @slice_ns: CL_SCHED_SLICE_MIN_NS..CL_SCHED_SLICE_MAX_NS (0.1 ms..100 ms);
 *            0 = CL_SCHED_BASE_SLICE_NS again.
 *
 * A queued task uses it from its next deadline on.
 *
 * Context: @p's rq lock held (cl_task_rq_lock()), or @p never queued.
 * Return: 0, or -1 with errno EINVAL (@p NULL, @slice_ns out of range).
 */
CL_INLINE int cl_task_set_slice_ns(struct cl_task *p, uint64_t slice_ns)
{
	if (!p || (slice_ns && (slice_ns < CL_SCHED_SLICE_MIN_NS || slice_ns > CL_SCHED_SLICE_MAX_NS))) {
		errno = EINVAL;
		return -1;
	}
	if (p->cpu >= 0 && p->se.cfs_rq)
		CL__RQ_ASSERT_HELD(p->se.cfs_rq->rq);
	p->se.slice = slice_ns ? slice_ns : CL_SCHED_BASE_SLICE_NS;
	return 0;
}

/**
 * cl_task_set_group() - move @p (not queued) to @tg.
 * @p: a task that is not queued and not current.
 * @tg: the group, NULL (or the root) for the root.
 *
 * Counts @p in @tg's attached tasks (cl_task_group_destroy() refuses a
 * group with attached tasks) and out of its old group's. A task that has
 * been queued before has its entity re-pointed at @tg's queue of its CPU
 * right away, its lag carried over (what is left of a debt as of now, or its
 * credit): it never keeps a pointer into a group it left, which may then be
 * destroyed while it sleeps. Before freeing a task
 * that is in a group, detach it with cl_task_set_group(p, NULL).
 *
 * Context: @p's rq lock held (cl_task_rq_lock()), or @p never queued;
 * takes the root's groups_lock (a leaf). To move a queued task, under its
 * rq lock: cl_rq_dequeue(CL_DEQUEUE_SLEEP), cl_rq_put_prev() if it was
 * running, set, cl_rq_enqueue(CL_ENQUEUE_WAKEUP).
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
		p->tg = tg;
		cl__set_task_rq(oq->rq, p);
		cl__move_sleeper(oq, p->se.cfs_rq, &p->se);
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
	if (CL__BAD_ARG(p == NULL))
		return 0;
	return !p->cpus_allowed || cl__bitmap_test(p->cpus_allowed, p->cpus_allowed_bits, cpu);
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
	dst = cl__sched_rq(s, cpu);
	for (;;) {
		c = CL_ATOMIC_LOAD(&p->cpu, CL_ACQUIRE);
		if (c >= (int)s->nr_cpus) {
			errno = EINVAL;
			return -1;
		}
		old = c < 0 ? dst : cl__sched_rq(s, (unsigned int)c);
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

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RQ_H */
