/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_threads.c - the runqueue used by several threads:
 * serialized CPU hotplug (the last online CPU stays, concurrent offlines,
 * no enqueue on an offline CPU, a task in transit is migrating, never
 * "asleep"), group lifetime (attach vs destroy, no stale group pointers on
 * wake), bounded input (group depth, bandwidth ranges, affinity masks,
 * objects of another instance) and, under CL_DEBUG, misuse that aborts.
 * Built once per line of test_sched_threads.variants.
 */
#include "cl_test.h"
#include "sched_sim.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>

#include <cachelocal/sched/balance.h>

static void rcu_init(void)
{
	urcu_memb_register_thread();
}

static void rcu_fini(void)
{
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
}

/* Where is @p: the CPU whose rq queues it, or -1; checked under that rq's lock. */
static int queued_on(struct cl_sched *s, struct cl_task *p)
{
	struct cl_rq *rq = cl_task_rq_lock(s, p);
	int cpu = rq && p->se.on_rq ? (int)rq->cpu : -1;

	cl_task_rq_unlock(rq, p);
	return cpu;
}

/* ---- hotplug ---- */

/* Taking the last online CPU offline fails even when it has no task. */
Test(sched_threads, last_online_cpu_refused, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);

	cr_assert_eq(cl_balance_cpu_offline(s, 1, 0), 0);
	errno = 0;
	cr_assert_eq(cl_balance_cpu_offline(s, 0, 0), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert(cl_sched_rq(s, 0)->online);
	cr_assert_eq(cl_balance_cpu_offline(s, 1, 0), -1); /* twice */
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_balance_cpu_online(s, 1, 0), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* An enqueue on an offline CPU is refused (it would never run). */
Test(sched_threads, enqueue_on_offline_cpu_refused, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_rq *rq1 = cl_sched_rq(s, 1);
	struct cl_task p;

	cl_task_init(&p, 0);
	cr_assert_eq(cl_balance_cpu_offline(s, 1, 0), 0);
	cl_rq_lock(rq1);
	errno = 0;
	cr_assert_eq(cl_rq_enqueue(rq1, &p, 0), -1);
	cr_assert_eq(errno, ENXIO);
	cl_rq_unlock(rq1);
	cr_assert_eq(p.cpu, -1);
	cr_assert_eq(rq1->nr_running, 0u);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

struct offliner {
	struct cl_sched *s;
	pthread_barrier_t *bar;
	unsigned int cpu;
	int ret, err;
	atomic_int *done; /* set when finished, if not NULL */
};

static void *offline_thread(void *arg)
{
	struct offliner *o = (struct offliner *)arg;

	urcu_memb_register_thread();
	pthread_barrier_wait(o->bar);
	errno = 0;
	o->ret = cl_balance_cpu_offline(o->s, o->cpu, 1000);
	o->err = errno;
	if (o->done)
		atomic_store(o->done, 1);
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Concurrent offlines of all but... every CPU but one (3 CPUs: 1 and 2), or
 * of every CPU (2 CPUs: 0 and 1): at least one CPU stays online and every
 * task ends up queued on an online CPU.
 */
static void concurrent_offline(unsigned int nr_cpus, unsigned int first)
{
	enum { PER_CPU = 4, TRIALS = 40 };
	struct cl_task t[3 * PER_CPU];
	unsigned int n = nr_cpus * PER_CPU;

	for (int trial = 0; trial < TRIALS; trial++) {
		struct cl_sched *s = cl_sched_create(nr_cpus, NULL);
		pthread_barrier_t bar;
		pthread_t th[2];
		struct offliner o[2];
		unsigned int online = 0;

		for (unsigned int i = 0; i < n; i++) {
			cl_task_init(&t[i], 0);
			sim_enqueue(s, i % nr_cpus, &t[i], 0);
		}
		pthread_barrier_init(&bar, NULL, 2);
		for (int k = 0; k < 2; k++) {
			o[k] = (struct offliner){ s, &bar, first + (unsigned int)k, 0, 0, NULL };
			pthread_create(&th[k], NULL, offline_thread, &o[k]);
		}
		for (int k = 0; k < 2; k++)
			pthread_join(th[k], NULL);
		pthread_barrier_destroy(&bar);
		for (unsigned int c = 0; c < nr_cpus; c++)
			online += cl_sched_rq(s, c)->online != 0;
		cr_assert_geq(online, 1u, "trial %d: no CPU left online", trial);
		for (int k = 0; k < 2; k++)
			cr_assert(o[k].ret >= 0 || o[k].err == EBUSY, "trial %d: offline %u: errno %d", trial,
				  o[k].cpu, o[k].err);
		for (unsigned int i = 0; i < n; i++) {
			int c = queued_on(s, &t[i]);

			cr_assert_geq(c, 0, "trial %d: task %u lost", trial, i);
			cr_assert(cl_sched_rq(s, (unsigned int)c)->online, "trial %d: task %u on offline CPU %d",
				  trial, i, c);
		}
		sim_validate(s);
		sim_drain(s, t, n, 2000);
		cr_assert_eq(cl_sched_destroy(s), 0);
	}
}

Test(sched_threads, concurrent_offline_of_both_cpus_keeps_one, .init = rcu_init, .fini = rcu_fini)
{
	concurrent_offline(2, 0);
}

Test(sched_threads, concurrent_offline_drains_only_to_online, .init = rcu_init, .fini = rcu_fini)
{
	concurrent_offline(3, 1);
}

/*
 * While CPU 1 is drained, the tasks' owner takes each task's rq lock: a
 * task in transit must look migrating (the owner waits), never asleep: an
 * owner that found it asleep would free it, and the drain would then queue
 * freed memory.
 */
struct owner {
	struct cl_sched *s;
	struct cl_task *t;
	unsigned int n;
	pthread_barrier_t *bar;
	atomic_int *done;
	int freed[64];
};

static void *owner_thread(void *arg)
{
	struct owner *o = (struct owner *)arg;

	urcu_memb_register_thread();
	pthread_barrier_wait(o->bar);
	while (!atomic_load(o->done)) {
		for (unsigned int i = 0; i < o->n; i++) {
			struct cl_task *p = &o->t[i];
			struct cl_rq *rq = cl_task_rq_lock(o->s, p);

			if (rq && !p->se.on_rq && !p->on_cpu)
				o->freed[i] = 1; /* asleep: its owner may free it now */
			cl_task_rq_unlock(rq, p);
		}
		/*
		 * Between passes, give the CPU away holding no lock: on one CPU
		 * (valgrind runs one thread at a time, in deterministic slices)
		 * the offliner could otherwise find an rq lock held at every
		 * switch and never finish.
		 */
		sched_yield();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

Test(sched_threads, task_in_transit_is_migrating, .init = rcu_init, .fini = rcu_fini)
{
	enum { N = 64, TRIALS = 30 };
	static struct cl_task t[N];

	for (int trial = 0; trial < TRIALS; trial++) {
		struct cl_sched *s = cl_sched_create(2, NULL);
		pthread_barrier_t bar;
		pthread_t a, b;
		struct offliner o;
		static struct owner w;
		atomic_int done = 0;

		for (unsigned int i = 0; i < N; i++) {
			cl_task_init(&t[i], 0);
			sim_enqueue(s, 1, &t[i], 0);
		}
		memset(&w, 0, sizeof(w));
		pthread_barrier_init(&bar, NULL, 2);
		o = (struct offliner){ s, &bar, 1, 0, 0, &done };
		w.done = &done;
		w.s = s;
		w.t = t;
		w.n = N;
		w.bar = &bar;
		pthread_create(&a, NULL, offline_thread, &o);
		pthread_create(&b, NULL, owner_thread, &w);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		pthread_barrier_destroy(&bar);
		cr_assert_eq(o.ret, N);
		for (unsigned int i = 0; i < N; i++) {
			cr_assert_not(w.freed[i], "trial %d: task %u seen asleep while in transit", trial, i);
			cr_assert_eq(queued_on(s, &t[i]), 0, "trial %d: task %u", trial, i);
		}
		sim_validate(s);
		sim_drain(s, t, N, 2000);
		cr_assert_eq(cl_sched_destroy(s), 0);
	}
}

/* ---- group lifetime ---- */

/* Attaching to a destroyed group fails; a group with a sleeping task cannot be destroyed. */
Test(sched_threads, attach_and_destroy_serialized, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 0);
	struct cl_task_group *h = cl_task_group_create(cl_sched_root_group(s), 0);
	struct cl_task p, q;

	cl_task_init(&p, 0);
	cl_task_init(&q, 0);
	cr_assert_eq(cl_task_set_group(&p, h), 0);
	sim_enqueue(s, 0, &p, 0);
	sim_drain(s, &p, 1, 1000); /* asleep in h */
	errno = 0;
	cr_assert_eq(cl_task_group_destroy(h), -1);
	cr_assert_eq(errno, EBUSY);
	cl_sched_rcu_read_lock(); /* g stays allocated: the attach below reads it */
	cr_assert_eq(cl_task_group_destroy(g), 0);
	errno = 0;
	cr_assert_eq(cl_task_set_group(&q, g), -1);
	cr_assert_eq(errno, EINVAL);
	cl_sched_rcu_read_unlock();
	cr_assert_null(q.tg);
	sim_set_group(s, &p, NULL);
	cr_assert_eq(cl_task_group_destroy(h), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * One thread attaches a task to g and detaches it again, in a loop; another
 * destroys g. The attacher must never hold an attachment to a destroyed
 * group (the destroy refuses while it is attached, the attach refuses once
 * it is destroyed).
 */
struct attach_race {
	struct cl_task_group *g;
	atomic_int in_rcu, destroyed;
	int attached_to_dead;
};

static void *attacher(void *arg)
{
	struct attach_race *r = (struct attach_race *)arg;
	struct cl_task p;

	urcu_memb_register_thread();
	cl_task_init(&p, 0);
	/* one read section for the whole run: g stays allocated after its destroy */
	cl_sched_rcu_read_lock();
	atomic_store(&r->in_rcu, 1);
	for (int after = 0, i = 0; after < 1000; after += atomic_load(&r->destroyed), i++) {
		if (cl_task_set_group(&p, r->g) == 0) {
			if (CL_READ_ONCE(r->g->dead))
				r->attached_to_dead = 1;
			cl_task_set_group(&p, NULL);
		}
		/*
		 * Now and then yield detached: under valgrind (one thread at a
		 * time, switched after a fixed count of blocks, no system call
		 * in this loop) the two loops fell into a cycle where every
		 * switch found the task attached and the destroy never won
		 * (minutes of CPU); a yield here gives the destroyer a window.
		 */
		if (i % 16 == 15)
			sched_yield();
	}
	cl_sched_rcu_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

Test(sched_threads, attach_races_destroy, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);

	for (int trial = 0; trial < 50; trial++) {
		struct attach_race r;
		pthread_t th;

		memset(&r, 0, sizeof(r));
		r.g = cl_task_group_create(cl_sched_root_group(s), 0);
		pthread_create(&th, NULL, attacher, &r);
		while (!atomic_load(&r.in_rcu)) /* else g could be freed before it is read */
			sched_yield();
		while (cl_task_group_destroy(r.g) != 0) {
			cr_assert_eq(errno, EBUSY);
			sched_yield(); /* the attacher must run to detach */
		}
		atomic_store(&r.destroyed, 1);
		pthread_join(th, NULL);
		cr_assert_not(r.attached_to_dead, "trial %d: attached to a destroyed group", trial);
	}
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * A task sleeps in group g (whose queue's floor is far ahead of the root's
 * after g ran for a while), is moved to the root and g is destroyed; when
 * it wakes, on its CPU or another, it lands within its lag bound of the new
 * queue's min_vruntime (not near g's floor) and reads nothing of g (freed, its memory reused by a new
 * group; ASan sees the read with CL_GROUP_POINTER_ARRAYS).
 */
static void wake_after_leaving(unsigned int wake_cpu)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 0), *g2;
	struct cl_task p, busy, r;
	struct cl_rq *rq0 = cl_sched_rq(s, 0), *dst = cl_sched_rq(s, wake_cpu);
	uint64_t now = 0, floor;

	/* nice 19: g's queue floor runs ~68x faster than the root's */
	cl_task_init(&p, 19);
	cl_task_init(&busy, 19);
	cl_task_init(&r, 0); /* a root task on the waking CPU: holds its floor down */
	cr_assert_eq(cl_task_set_group(&p, g), 0);
	cr_assert_eq(cl_task_set_group(&busy, g), 0);
	sim_enqueue(s, 0, &p, now);
	sim_enqueue(s, 0, &busy, now);
	sim_enqueue(s, wake_cpu, &r, now);
	sim_run(s, &now, 400, 1); /* g's queue floor: ~200 ms */
	cl_rq_lock(rq0);
	cl_rq_update_clock(rq0, now);
	cl_rq_put_prev(rq0);
	cr_assert_eq(cl_rq_dequeue(rq0, &p, CL_DEQUEUE_SLEEP), 0);
	cr_assert_eq(cl_rq_dequeue(rq0, &busy, CL_DEQUEUE_SLEEP), 0);
	cr_assert_eq(cl_task_set_group(&p, NULL), 0);
	cr_assert_eq(cl_task_set_group(&busy, NULL), 0);
	cl_rq_unlock(rq0);
	cr_assert_eq(cl_task_group_destroy(g), 0);
	urcu_memb_barrier(); /* g is freed now; a new group likely reuses its memory */
	g2 = cl_task_group_create(cl_sched_root_group(s), 0);
	cr_assert_not_null(g2);
	now += SIM_TICK_NS;
	cl_rq_lock_two(rq0, dst);
	cl_rq_update_clock(dst, now);
	cr_assert_eq(cl_rq_enqueue(dst, &p, CL_ENQUEUE_WAKEUP), 0);
	floor = dst->cfs.min_vruntime;
	/* nice 19 keeps at most 2 slices of lag: 1.5 ms * 1024 / 15 of vruntime, scaled on placement */
	int64_t bound = 2 * (int64_t)(2 * CL_SCHED_BASE_SLICE_NS * CL_NICE_0_LOAD / 15);
	cr_assert_leq(cl__vdiff(p.se.vruntime, floor), bound,
		      "woke %lld ns ahead of min_vruntime", (long long)cl__vdiff(p.se.vruntime, floor));
	cr_assert_geq(cl__vdiff(p.se.vruntime, floor), -bound);
	cr_assert_eq(p.se.cfs_rq, &dst->cfs);
	cl_rq_unlock_two(rq0, dst);
	sim_validate(s);
	sim_drain(s, &p, 1, now);
	sim_drain(s, &r, 1, now);
	cr_assert_eq(cl_task_group_destroy(g2), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_threads, wake_after_group_left_same_cpu, .init = rcu_init, .fini = rcu_fini)
{
	wake_after_leaving(0);
}

Test(sched_threads, wake_after_group_left_other_cpu, .init = rcu_init, .fini = rcu_fini)
{
	wake_after_leaving(1);
}

/* ---- bounds ---- */

/* A group deeper than CL_TG_MAX_DEPTH is refused at create (walks recurse per level). */
Test(sched_threads, group_depth_bounded, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *g = cl_sched_root_group(s), *chain[CL_TG_MAX_DEPTH + 1];
	int depth = 0;

	for (int i = 0; i < 4000; i++) {
		struct cl_task_group *c = cl_task_group_create(g, 0);

		if (!c)
			break;
		cr_assert_lt(depth, CL_TG_MAX_DEPTH, "depth %d accepted", depth + 1);
		chain[depth++] = g = c;
	}
	cr_assert_eq(depth, CL_TG_MAX_DEPTH);
	cr_assert_eq(errno, EINVAL);
	while (depth > 0)
		cr_assert_eq(cl_task_group_destroy(chain[--depth]), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Bandwidth values outside cpu.max's ranges (incl. ms given for ns, 2^63) are refused. */
Test(sched_threads, bandwidth_ranges, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 0);
	const uint64_t bad[][2] = {
		{ 1ULL << 63, 100000000ULL },     /* the pool would wrap */
		{ UINT64_MAX, 0 },
		{ 50, 100 },                      /* ms given as ns: period too short */
		{ 50, 0 },                        /* 50 "ms" quota: 50 ns */
		{ 25000000ULL, 2000000000ULL },   /* period above 1 s */
		{ 25000000ULL, 999999ULL },       /* period under 1 ms */
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_eq(cl_tg_set_bandwidth(g, bad[i][0], bad[i][1]), -1, "case %u accepted", i);
		cr_assert_eq(errno, EINVAL);
	}
	cr_assert_eq(g->quota_ns, 0u);
	cr_assert_eq(cl_tg_set_bandwidth(g, CL_TG_MIN_QUOTA_NS, CL_TG_MIN_PERIOD_NS), 0);
	cr_assert_eq(cl_tg_set_bandwidth(g, CL_TG_MAX_QUOTA_NS, CL_TG_MAX_PERIOD_NS), 0);
	cr_assert_eq(cl_tg_set_bandwidth(g, 0, 0), 0);
	cr_assert_eq(cl_task_group_destroy(g), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* An empty or out-of-range affinity mask is refused and the old one kept. */
Test(sched_threads, affinity_mask_checked, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_task p;
	unsigned long empty[2] = { 0, 0 }, high = 1UL << 5, ok = 0x3;

	cl_task_init(&p, 0);
	cr_assert_eq(cl_task_set_affinity(&p, &ok, 2), 0);
	errno = 0;
	cr_assert_eq(cl_task_set_affinity(&p, empty, 128), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_task_set_affinity(&p, &high, 5), -1); /* only bit 5, beyond nbits */
	cr_assert_eq(cl_task_set_affinity(&p, &ok, 0), -1);
	cr_assert_eq(cl_task_set_affinity(&p, &ok, CL_MAX_CPUS + 1), -1);
	cr_assert_eq(p.cpus_allowed, &ok);
	cr_assert(cl_task_allowed_on(&p, 1));
	cr_assert_not(cl_task_allowed_on(&p, 2));
	cr_assert_eq(cl_task_set_affinity(&p, NULL, 0), 0);
	cr_assert(cl_task_allowed_on(&p, 2));
}

/* A task or group of one instance is refused by another. */
Test(sched_threads, other_instance_refused, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *a = cl_sched_create(2, NULL), *b = cl_sched_create(2, NULL);
	struct cl_task_group *gb = cl_task_group_create(cl_sched_root_group(b), 0);
	struct cl_rq *rqa = cl_sched_rq(a, 0), *rqb = cl_sched_rq(b, 0);
	struct cl_task p, q;

	cl_task_init(&p, 0);
	cl_task_init(&q, 0);
	sim_enqueue(a, 0, &p, 0);
	sim_drain(a, &p, 1, 0); /* p: asleep, last on a's CPU 0 */
	cl_rq_lock(rqb);
	errno = 0;
	cr_assert_eq(cl_rq_enqueue(rqb, &p, CL_ENQUEUE_WAKEUP), -1);
	cr_assert_eq(errno, EINVAL);
	cl_rq_unlock(rqb);
	cr_assert_eq(cl_task_set_group(&q, gb), 0);
	cl_rq_lock(rqa);
	errno = 0;
	cr_assert_eq(cl_rq_enqueue(rqa, &q, 0), -1);
	cr_assert_eq(errno, EINVAL);
	cl_rq_unlock(rqa);
	cl_rq_lock(rqa);
	errno = 0;
	cr_assert_eq(cl_task_set_group(&p, gb), -1); /* p belongs to a */
	cr_assert_eq(errno, EINVAL);
	cl_rq_unlock(rqa);
	cr_assert_eq(rqa->nr_running, 0u);
	cr_assert_eq(rqb->nr_running, 0u);
	cr_assert_eq(cl_task_set_group(&q, NULL), 0);
	cr_assert_eq(cl_task_group_destroy(gb), 0);
	cr_assert_eq(cl_sched_destroy(a), 0);
	cr_assert_eq(cl_sched_destroy(b), 0);
}

/*
 * Every entry point that takes an rq and a task refuses a task queued on
 * another instance's rq of the same CPU number, and changes nothing: a
 * dequeue through the wrong instance used to succeed and wrap the other
 * instance's nr_running to 4294967295.
 */
Test(sched_threads, other_instance_same_cpu_refused, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *a = cl_sched_create(1, NULL), *b = cl_sched_create(1, NULL);
	struct cl_rq *rqa = cl_sched_rq(a, 0), *rqb = cl_sched_rq(b, 0);
	struct cl_task p, q;

	cl_task_init(&p, 0);
	cl_task_init(&q, 0);
	sim_enqueue(a, 0, &p, 0); /* p: queued on a's CPU 0 */
	sim_enqueue(b, 0, &q, 0); /* q: queued on b's CPU 0 */
	cl_rq_lock(rqb);
	errno = 0;
	cr_assert_eq(cl_rq_dequeue(rqb, &p, CL_DEQUEUE_SLEEP), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_rq_set_curr(rqb, &p), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_rq_check_preempt_wakeup(rqb, &p), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(rqb->nr_running, 1u);
	cr_assert_eq(rqb->curr, NULL);
	cl_rq_unlock(rqb);
	cr_assert_eq(rqa->nr_running, 1u);
	cr_assert(p.se.on_rq);
	sim_validate(a);
	sim_validate(b);
	sim_drain(a, &p, 1, 0);
	sim_drain(b, &q, 1, 0);
	cr_assert_eq(cl_sched_destroy(a), 0);
	cr_assert_eq(cl_sched_destroy(b), 0);
}

/* cl_sched_destroy() with a queued task, or a sleeping one in a group, fails with EBUSY. */
Test(sched_threads, destroy_with_tasks_attached_busy, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 0);
	struct cl_task p;

	cl_task_init(&p, 0);
	cr_assert_eq(cl_task_set_group(&p, g), 0);
	sim_enqueue(s, 0, &p, 0);
	errno = 0;
	cr_assert_eq(cl_sched_destroy(s), -1);
	cr_assert_eq(errno, EBUSY);
	sim_drain(s, &p, 1, 0);
	errno = 0;
	cr_assert_eq(cl_sched_destroy(s), -1); /* asleep, still in g */
	cr_assert_eq(errno, EBUSY);
	sim_detach(s, &p, 1);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* ---- misuse that aborts under CL_DEBUG ---- */
#ifdef CL_DEBUG
/* A balancing pass from a thread that holds an rq lock would spin forever. */
Test(sched_threads, balance_under_rq_lock_aborts, .init = rcu_init, .signal = SIGABRT)
{
	struct cl_sched *s = cl_sched_create(2, NULL);

	cl_rq_lock(cl_sched_rq(s, 0));
	cl_balance_run(s, 1, 0, NULL);
}

/* A group walk (RCU reader) from a thread never registered with urcu-memb. */
static void *unregistered_walk(void *arg)
{
	cl_sched_bandwidth_refill(cl_sched_root_group((struct cl_sched *)arg), 1000);
	return NULL;
}

Test(sched_threads, rcu_reader_unregistered_aborts, .init = rcu_init, .signal = SIGABRT)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	pthread_t th;

	cr_assert_not_null(cl_task_group_create(cl_sched_root_group(s), 0));
	pthread_create(&th, NULL, unregistered_walk, s);
	pthread_join(th, NULL);
}

/* A runqueue operation without the rq lock. */
Test(sched_threads, rq_op_without_lock_aborts, .init = rcu_init, .signal = SIGABRT)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task p;

	cl_task_init(&p, 0);
	cl_rq_enqueue(cl_sched_rq(s, 0), &p, 0);
}

/* A wakeup on another CPU without the lock of the CPU the task last ran on. */
Test(sched_threads, cross_cpu_wake_without_old_lock_aborts, .init = rcu_init, .signal = SIGABRT)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task p;

	cl_task_init(&p, 0);
	sim_enqueue(s, 0, &p, 0);
	sim_drain(s, &p, 1, 0);
	cl_rq_lock(cl_sched_rq(s, 1));
	cl_rq_enqueue(cl_sched_rq(s, 1), &p, CL_ENQUEUE_WAKEUP);
}
#endif
