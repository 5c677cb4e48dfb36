/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_group.c - task groups (T5): per-CPU co-allocation
 * and its identities, group fairness, bandwidth throttling, blocked-load
 * walks, and RCU walks racing group creation/destruction on other threads.
 * Built once per line of test_sched_group.variants.
 */
#include "cl_test.h"
#include "sched_sim.h"

#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>

static void rcu_init(void)
{
	urcu_memb_register_thread();
}

static void rcu_fini(void)
{
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
}

/* cl_cfs_rq_se(cl_tg_cfs_rq(tg, cpu)) == cl_tg_se(tg, cpu), for every group and CPU. */
Test(sched_group, sibling_identity_every_group_and_cpu, .init = rcu_init, .fini = rcu_fini)
{
	enum { NCPU = 5, NG = 13 };
	struct cl_sched *s = cl_sched_create(NCPU, NULL);
	struct cl_task_group *root = cl_sched_root_group(s), *g[NG];

	cr_assert_not_null(s);
	/* a tree: width 3, depth 3 (1 + 3 + 9) */
	g[0] = cl_task_group_create(root, 0);
	for (int i = 1; i < NG; i++)
		g[i] = cl_task_group_create(g[(i - 1) / 3], (unsigned long)(100 * i));
	for (int i = 0; i < NG; i++) {
		cr_assert_not_null(g[i]);
		for (unsigned int c = 0; c < NCPU; c++) {
			struct cl_cfs_rq *q = cl_tg_cfs_rq(g[i], c);
			struct cl_sched_entity *se = cl_tg_se(g[i], c);

			cr_assert_not_null(se);
			cr_assert_eq(cl_cfs_rq_se(q), se, "group %d cpu %u", i, c);
			cr_assert_eq(se->my_q, q);
			cr_assert_eq(q->rq, cl_sched_rq(s, c));
			cr_assert_eq(q->cpu, c);
			cr_assert_eq(se->cfs_rq, cl_tg_cfs_rq(g[i]->parent, c));
			cr_assert_eq(se->parent, cl_tg_se(g[i]->parent, c));
			cr_assert_eq(se->depth, g[i]->depth - 1);
			cr_assert_eq((uintptr_t)se % CL_CACHELINE_SIZE, 0u);
#ifndef CL_GROUP_POINTER_ARRAYS
			/* T5: one object per CPU at the per-CPU stride, se right after the queue */
			cr_assert_eq((uintptr_t)q - (uintptr_t)cl_tg_cfs_rq(g[i], 0), (uintptr_t)c * CL_PERCPU_STRIDE);
			cr_assert_eq((uintptr_t)se - (uintptr_t)q, offsetof(struct cl_tg_percpu, se));
#endif
		}
	}
	for (unsigned int c = 0; c < NCPU; c++) {
		cr_assert_null(cl_tg_se(root, c));
		cr_assert_eq(cl_tg_cfs_rq(root, c), &cl_sched_rq(s, c)->cfs);
		cr_assert_null(cl_cfs_rq_se(&cl_sched_rq(s, c)->cfs));
	}
	cr_assert_eq(root->nr_groups, (unsigned long)NG);
	for (int i = NG - 1; i >= 0; i--)
		cr_assert_eq(cl_task_group_destroy(g[i]), 0);
	cr_assert_eq(root->nr_groups, 0ul);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_group, create_destroy_errors, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *a = cl_task_group_create(root, 1), *b;
	struct cl_task p;
	uint64_t now = 0;

	cr_assert_not_null(a);
	cr_assert_eq(a->shares, CL_MIN_SHARES); /* clamped */
	errno = 0;
	cr_assert_null(cl_task_group_create(NULL, 0));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_task_group_destroy(root), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_task_group_destroy(NULL), -1);
	b = cl_task_group_create(a, 0);
	cr_assert_eq(b->shares, CL_TG_DEFAULT_SHARES);
	cr_assert_eq(cl_task_group_destroy(a), -1);
	cr_assert_eq(errno, EBUSY);
	cl_task_init(&p, 0);
	cr_assert_eq(cl_task_set_group(&p, b), 0);
	sim_enqueue(s, 1, &p, now);
	cr_assert_eq(cl_task_set_group(&p, a), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_task_group_destroy(b), -1);
	cr_assert_eq(errno, EBUSY);
	/* dequeued while current: the group's entity is still in use until put */
	struct cl_rq *rq1 = cl_sched_rq(s, 1);
	cl_rq_lock(rq1);
	cr_assert_eq(cl_rq_pick_next(rq1), &p);
	cr_assert_eq(cl_rq_dequeue(rq1, &p, CL_DEQUEUE_SLEEP), 0);
	cl_rq_unlock(rq1);
	cr_assert_eq(cl_task_group_destroy(b), -1);
	cr_assert_eq(errno, EBUSY);
	cl_rq_lock(rq1);
	cl_rq_put_prev(rq1);
	cl_rq_unlock(rq1);
	sim_drain(s, &p, 1, now);
	sim_detach(s, &p, 1);
	/* b stays allocated until this read-side section ends: a second destroy sees it dead */
	cl_sched_rcu_read_lock();
	cr_assert_eq(cl_task_group_destroy(b), 0);
	cr_assert_eq(cl_task_group_destroy(b), -1);
	cr_assert_eq(errno, EINVAL);
	cl_sched_rcu_read_unlock();
	cr_assert_eq(cl_task_group_destroy(a), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * A task dequeued while current is still its old group's curr until put:
 * moving it to another group then would leave the old queue's curr
 * pointing at it (a task counted in two queues, the old group never
 * destroyable). cl_task_set_group() refuses until cl_rq_put_prev().
 */
Test(sched_group, set_group_refused_while_current, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *a = cl_task_group_create(root, 0), *b = cl_task_group_create(root, 0);
	struct cl_rq *rq = cl_sched_rq(s, 0);
	struct cl_task p, q;
	uint64_t now = 0;

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cl_task_init(&p, 0);
	cl_task_init(&q, 0);
	cr_assert_eq(cl_task_set_group(&p, b), 0);
	sim_enqueue(s, 0, &p, now);
	sim_enqueue(s, 0, &q, now);
	cl_rq_lock(rq);
	cr_assert_eq(cl_rq_set_curr(rq, &p), 0); /* p runs, whichever the pick would choose */
	cr_assert_eq(cl_rq_dequeue(rq, &p, CL_DEQUEUE_SLEEP), 0);
	errno = 0;
	cr_assert_eq(cl_task_set_group(&p, a), -1); /* still b's curr */
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(p.tg, b);
	cl_rq_put_prev(rq);
	cr_assert_eq(cl_task_set_group(&p, a), 0);
	cr_assert_eq(cl_rq_enqueue(rq, &p, CL_ENQUEUE_WAKEUP), 0);
	cr_assert_null(cl_tg_cfs_rq(b, 0)->curr);
	cl_rq_unlock(rq);
	sim_validate(s);
	sim_run(s, &now, 20, 1);
	cl_rq_lock(rq);
	cl_rq_put_prev(rq);
	cr_assert_eq(cl_rq_dequeue(rq, &p, CL_DEQUEUE_SLEEP), 0);
	cr_assert_eq(cl_rq_dequeue(rq, &q, CL_DEQUEUE_SLEEP), 0);
	cr_assert_eq(cl_task_group_destroy(a), -1); /* p is attached, asleep */
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_task_set_group(&p, NULL), 0);
	cl_rq_unlock(rq);
	cr_assert_eq(cl_task_group_destroy(b), 0);
	cr_assert_eq(cl_task_group_destroy(a), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Two groups with equal shares get equal time whatever their task counts. */
Test(sched_group, equal_shares_equal_time, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *ga = cl_task_group_create(root, 1024), *gb = cl_task_group_create(root, 1024);
	struct cl_task t[5];
	uint64_t now = 0, a = 0, b = 0;

	for (int i = 0; i < 5; i++) {
		cl_task_init(&t[i], 0);
		cl_task_set_group(&t[i], i == 0 ? ga : gb);
		sim_enqueue(s, 0, &t[i], now);
	}
	sim_run(s, &now, 4000, 1);
	a = t[0].se.sum_exec_runtime;
	for (int i = 1; i < 5; i++) {
		b += t[i].se.sum_exec_runtime;
		cr_assert_gt(t[i].se.sum_exec_runtime, 0u);
	}
	double r = (double)a / (double)b;
	cr_assert(r > 0.98 && r < 1.02, "group time ratio %f (a %lu b %lu)", r, (unsigned long)a,
		  (unsigned long)b);
	/* and inside gb the four tasks share equally */
	for (int i = 2; i < 5; i++) {
		double q = (double)t[i].se.sum_exec_runtime / (double)t[1].se.sum_exec_runtime;
		cr_assert(q > 0.95 && q < 1.05, "in-group ratio %f", q);
	}
	sim_drain(s, t, 5, now);
	sim_detach(s, t, 5);
	cl_task_group_destroy(ga);
	cl_task_group_destroy(gb);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Equal shares at first, then cl_task_group_set_shares(ga, 3072) while
 * both run: the second half of the run splits 3:1. */
Test(sched_group, set_shares_changes_the_split_while_running, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *ga = cl_task_group_create(root, 1024), *gb = cl_task_group_create(root, 1024);
	struct cl_task t[2];
	uint64_t now = 0, a0, b0;
	double r;

	for (int i = 0; i < 2; i++) {
		cl_task_init(&t[i], 0);
		cl_task_set_group(&t[i], i == 0 ? ga : gb);
		sim_enqueue(s, 0, &t[i], now);
	}
	sim_run(s, &now, 2000, 1);
	a0 = t[0].se.sum_exec_runtime;
	b0 = t[1].se.sum_exec_runtime;
	r = (double)a0 / (double)b0;
	cr_assert(r > 0.98 && r < 1.02, "equal shares: ratio %f", r);
	cr_assert_eq(cl_task_group_set_shares(ga, 3072), 0);
	cr_assert_eq(ga->shares, 3072ul);
	sim_run(s, &now, 4000, 1);
	r = (double)(t[0].se.sum_exec_runtime - a0) / (double)(t[1].se.sum_exec_runtime - b0);
	cr_assert(r > 2.9 && r < 3.1, "after set_shares 3072:1024: ratio %f", r);
	/* 0 is the default, out-of-range values clamp; root and NULL refused */
	cr_assert_eq(cl_task_group_set_shares(gb, 0), 0);
	cr_assert_eq(gb->shares, CL_TG_DEFAULT_SHARES);
	cr_assert_eq(cl_task_group_set_shares(gb, 1), 0);
	cr_assert_eq(gb->shares, CL_MIN_SHARES);
	errno = 0;
	cr_assert_eq(cl_task_group_set_shares(root, 2048), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(root->shares, CL_TG_DEFAULT_SHARES);
	sim_drain(s, t, 2, now);
	sim_detach(s, t, 2);
	cl_sched_rcu_read_lock(); /* ga's memory stays until the unlock */
	cr_assert_eq(cl_task_group_destroy(ga), 0);
	errno = 0;
	cr_assert_eq(cl_task_group_set_shares(ga, 2048), -1, "a destroyed group took new shares");
	cr_assert_eq(errno, EINVAL);
	cl_sched_rcu_read_unlock();
	cl_task_group_destroy(gb);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Shares 2048:1024 between nested groups give 2:1, independent of depth. */
Test(sched_group, shares_ratio_nested, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *ga = cl_task_group_create(root, 2048), *gb = cl_task_group_create(root, 1024);
	struct cl_task_group *gb1 = cl_task_group_create(gb, 10), *gb2 = cl_task_group_create(gb1, 10);
	struct cl_task t[3];
	uint64_t now = 0;

	cl_task_init(&t[0], 0);
	cl_task_init(&t[1], 0);
	cl_task_init(&t[2], 5);
	cl_task_set_group(&t[0], ga);
	cl_task_set_group(&t[1], gb2);
	cl_task_set_group(&t[2], ga);
	for (int i = 0; i < 3; i++)
		sim_enqueue(s, 0, &t[i], now);
	sim_run(s, &now, 3000, 1);
	double r = (double)(t[0].se.sum_exec_runtime + t[2].se.sum_exec_runtime) /
		   (double)t[1].se.sum_exec_runtime;
	cr_assert(r > 1.96 && r < 2.04, "ratio %f", r);
	sim_drain(s, t, 3, now);
	sim_detach(s, t, 3);
	cl_task_group_destroy(gb2);
	cl_task_group_destroy(gb1);
	cl_task_group_destroy(gb);
	cl_task_group_destroy(ga);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* A group with quota 25 ms per 100 ms gets no more than its quota, though a
 * root task competes and it would get 50% uncapped. */
Test(sched_group, bandwidth_caps_group, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *g = cl_task_group_create(root, 1024);
	struct cl_task_group *child = cl_task_group_create(g, 1024);
	struct cl_task t[3];
	uint64_t now = 0;
	int saw_throttled = 0;

	cr_assert_eq(cl_tg_set_bandwidth(root, 1, 0), -1);
	cr_assert_eq(cl_tg_set_bandwidth(g, 1000, 1000), -1); /* period < 1 ms */
	cr_assert_eq(cl_tg_set_bandwidth(g, 25000000, 100000000), 0);
	cl_task_init(&t[0], 0); /* in g */
	cl_task_init(&t[1], 0); /* in g's child */
	cl_task_init(&t[2], 0); /* root */
	cl_task_set_group(&t[0], g);
	cl_task_set_group(&t[1], child);
	for (int i = 0; i < 3; i++)
		sim_enqueue(s, 0, &t[i], now);
	for (int k = 0; k < 1000; k++) {
		sim_run(s, &now, 1, 1);
		if (cl_tg_cfs_rq(g, 0)->throttled) {
			saw_throttled = 1;
			/* throttling g marks its whole subtree on this CPU */
			cr_assert(cl_cfs_rq_throttled_hierarchy(cl_tg_cfs_rq(child, 0)));
			cr_assert_eq(cl_sched_rq(s, 0)->nr_running, 1u);
		} else {
			cr_assert_not(cl_cfs_rq_throttled_hierarchy(cl_tg_cfs_rq(child, 0)));
		}
	}
	cr_assert(saw_throttled);
	uint64_t grp = t[0].se.sum_exec_runtime + t[1].se.sum_exec_runtime;
	/* 1 s = 10 periods of 25 ms, plus at most one tick of overrun per period */
	cr_assert_leq(grp, 10 * (25000000ULL + SIM_TICK_NS), "group ran %lu ns", (unsigned long)grp);
	cr_assert_geq(grp, 9 * 25000000ULL, "group ran %lu ns", (unsigned long)grp);
	cr_assert_geq(t[2].se.sum_exec_runtime, 700000000ULL);
	cr_assert_gt(cl_tg_cfs_rq(g, 0)->nr_throttled, 5u);
	/* lifting the cap: g gets its fair half again */
	sim_drain(s, t, 3, now);
	cr_assert_eq(cl_tg_set_bandwidth(g, 0, 0), 0);
	cl_rq_lock(cl_sched_rq(s, 0));
	cl_rq_bandwidth_update(cl_sched_rq(s, 0)); /* unthrottles g if it was */
	cl_rq_unlock(cl_sched_rq(s, 0));
	cr_assert_not(cl_tg_cfs_rq(g, 0)->throttled);
	cr_assert_not(cl_cfs_rq_throttled_hierarchy(cl_tg_cfs_rq(child, 0)));
	uint64_t before = t[0].se.sum_exec_runtime + t[1].se.sum_exec_runtime;
	for (int i = 0; i < 3; i++) {
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		cr_assert_eq(cl_rq_enqueue(rq, &t[i], CL_ENQUEUE_WAKEUP), 0);
		cl_rq_unlock(rq);
	}
	sim_run(s, &now, 1000, 1);
	double share = (double)(t[0].se.sum_exec_runtime + t[1].se.sum_exec_runtime - before) / 1e9;
	cr_assert(share > 0.45 && share < 0.55, "uncapped share %f", share);
	sim_drain(s, t, 3, now);
	sim_detach(s, t, 3);
	cl_task_group_destroy(child);
	cl_task_group_destroy(g);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Blocked load: after its task leaves, a group's queue average decays through the walk. */
Test(sched_group, blocked_load_decays, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *g = cl_task_group_create(root, 1024), *g2 = cl_task_group_create(g, 1024);
	struct cl_task t;
	uint64_t now = 0;
	struct cl_rq *rq = cl_sched_rq(s, 1);

	cl_task_init(&t, 0);
	cl_task_set_group(&t, g2);
	sim_enqueue(s, 1, &t, now);
	sim_run(s, &now, 300, 1);
	cl_rq_lock(rq);
	cr_assert_eq(cl_tg_update_blocked_load(root, 1, now), 2ul);
	unsigned long busy = cl_tg_cfs_rq(g2, 1)->avg.load_avg;
	long tg_busy = CL_ATOMIC_LOAD(&g2->load_avg, CL_RELAXED);
	cr_assert_gt(busy, 900ul);
	cr_assert_eq(tg_busy, (long)busy); /* only CPU 1 contributes */
	cl_rq_update_clock(rq, now);
	cl_rq_put_prev(rq);
	cr_assert_eq(cl_rq_dequeue(rq, &t, CL_DEQUEUE_SLEEP), 0);
	now += 64ULL * 1024 * 1024; /* 64 periods: two half-lives */
	cl_tg_update_blocked_load(root, 1, now);
	unsigned long idle = cl_tg_cfs_rq(g2, 1)->avg.load_avg;
	cr_assert(idle < busy / 3 && idle > busy / 5, "busy %lu idle %lu", busy, idle);
	cr_assert_eq(CL_ATOMIC_LOAD(&g2->load_avg, CL_RELAXED), (long)idle);
	cr_assert_eq(cl_task_set_group(&t, NULL), 0);
	cl_rq_unlock(rq);
	cr_assert_eq(cl_task_group_destroy(g2), 0);
	cr_assert_eq(cl_task_group_destroy(g), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* ---- two threads destroy the same group: exactly one succeeds ---- */

struct destroy_race {
	struct cl_task_group *tg;
	int ret, err;
};

/*
 * Racing threads count themselves in once inside their RCU read section; the
 * test lets them race (drops groups_lock) only when all are in, so that no
 * group can be freed before a late-starting thread reads it.
 */
static atomic_int race_entered;

static void race_wait_entered(int n)
{
	while (atomic_load(&race_entered) < n)
		sched_yield();
	atomic_store(&race_entered, 0);
}

static void *destroyer(void *arg)
{
	struct destroy_race *d = arg;

	urcu_memb_register_thread();
	cl_sched_rcu_read_lock(); /* the group stays allocated for the loser */
	atomic_fetch_add(&race_entered, 1);
	errno = 0;
	d->ret = cl_task_group_destroy(d->tg);
	d->err = errno;
	cl_sched_rcu_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Both calls pass the unlocked "dead" check while the test holds
 * groups_lock; the loser must see the group dead under the lock (a second
 * unlink and call_rcu would corrupt the list and free it twice).
 */
Test(sched_group, concurrent_destroy_once, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *keep = cl_task_group_create(root, 0);
	struct destroy_race d[2];
	pthread_t th[2];
	int ok = 0, inval = 0;

	cr_assert_not_null(keep);
	d[0].tg = d[1].tg = cl_task_group_create(root, 0);
	cr_assert_not_null(d[0].tg);
	cr_assert_eq(root->nr_groups, 2ul);
	cl_spin_lock(&root->groups_lock);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, destroyer, &d[i]), 0);
	race_wait_entered(2);
	usleep(100000); /* let both reach the lock (no timing is asserted) */
	cl_spin_unlock(&root->groups_lock);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ok += d[i].ret == 0;
		inval += d[i].ret == -1 && d[i].err == EINVAL;
	}
	cr_assert_eq(ok, 1);
	cr_assert_eq(inval, 1);
	cr_assert_eq(root->nr_groups, 1ul);
	cr_assert_eq(root->groups.next, &keep->list);
	cr_assert_eq(keep->list.next, &root->groups);
	cr_assert_eq(cl_task_group_destroy(keep), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* ---- create under a parent that another thread destroys ---- */

struct create_race {
	struct cl_task_group *parent, *child;
	int create_err;
	struct destroy_race d; /* destroyer() of the parent */
};

static void *race_creator(void *arg)
{
	struct create_race *c = arg;

	urcu_memb_register_thread();
	cl_sched_rcu_read_lock(); /* the parent stays allocated if it loses */
	atomic_fetch_add(&race_entered, 1);
	errno = 0;
	c->child = cl_task_group_create(c->parent, 0);
	c->create_err = errno;
	cl_sched_rcu_read_unlock();
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Both calls pass their unlocked checks while the test holds groups_lock;
 * whichever takes the lock second must fail: a child created under a
 * parent already unlinked would be published with a freed parent. Either
 * order is possible, so the trial is repeated.
 */
Test(sched_group, create_under_dying_parent, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);

	for (int trial = 0; trial < 10; trial++) {
		struct create_race c;
		pthread_t th[2];

		memset(&c, 0, sizeof(c));
		c.parent = c.d.tg = cl_task_group_create(root, 0);
		cr_assert_not_null(c.parent);
		cl_spin_lock(&root->groups_lock);
		cr_assert_eq(pthread_create(&th[0], NULL, race_creator, &c), 0);
		cr_assert_eq(pthread_create(&th[1], NULL, destroyer, &c.d), 0);
		race_wait_entered(2);
		usleep(20000); /* let both reach the lock (no timing is asserted) */
		cl_spin_unlock(&root->groups_lock);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		/* exactly one of the two succeeded */
		cr_assert_eq((c.child != NULL) + (c.d.ret == 0), 1, "trial %d", trial);
		if (c.child) {
			cr_assert_eq(c.child->parent, c.parent);
			cr_assert_eq(cl_task_group_destroy(c.child), 0);
			cr_assert_eq(cl_task_group_destroy(c.parent), 0);
		} else {
			cr_assert_eq(c.create_err, EINVAL);
		}
		if (c.d.ret)
			cr_assert_eq(c.d.err, EBUSY, "trial %d", trial);
		cr_assert_eq(root->nr_groups, 0ul, "trial %d", trial);
		cr_assert(cds_list_empty(&root->groups));
	}
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* ---- RCU: walks on two CPUs while two threads create and destroy groups ---- */

struct race {
	struct cl_sched *s;
	atomic_int stop;
	atomic_ulong visits;
	unsigned long iterations;
	atomic_uint seed;
};

static void *walker(void *arg)
{
	struct race *r = arg;
	unsigned int cpu = atomic_fetch_add(&r->seed, 1) % 2;
	struct cl_rq *rq = cl_sched_rq(r->s, cpu);
	uint64_t now = 0;
	unsigned long v = 0;

	urcu_memb_register_thread();
	while (!atomic_load(&r->stop)) {
		now += 100000;
		cl_rq_lock(rq);
		v += cl_tg_update_blocked_load(cl_sched_root_group(r->s), cpu, now);
		cl_rq_bandwidth_update(rq);
		cl_rq_unlock(rq);
	}
	urcu_memb_unregister_thread();
	atomic_fetch_add(&r->visits, v);
	return NULL;
}

static void *churner(void *arg)
{
	struct race *r = arg;
	struct cl_task_group *chain[6];
	unsigned int seed = atomic_fetch_add(&r->seed, 1) * 7919u;

	urcu_memb_register_thread();
	for (unsigned long i = 0; i < r->iterations; i++) {
		int depth = 1 + (int)(rand_r(&seed) % 6);
		struct cl_task_group *parent = cl_sched_root_group(r->s);

		for (int d = 0; d < depth; d++) {
			chain[d] = cl_task_group_create(parent, 1 + (unsigned long)(rand_r(&seed) % 4096));
			cr_assert_not_null(chain[d]);
			parent = chain[d];
		}
		for (int d = depth - 1; d >= 0; d--)
			cr_assert_eq(cl_task_group_destroy(chain[d]), 0);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

Test(sched_group, rcu_walks_race_create_destroy, .init = rcu_init, .fini = rcu_fini)
{
	struct race r;
	pthread_t w[2], c[2];
	struct cl_task_group *keep;

	memset(&r, 0, sizeof(r));
	r.s = cl_sched_create(2, NULL);
	r.iterations = 3000;
	keep = cl_task_group_create(cl_sched_root_group(r.s), 0); /* always one to visit */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&w[i], NULL, walker, &r), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&c[i], NULL, churner, &r), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	atomic_store(&r.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	cr_assert_gt(atomic_load(&r.visits), 0ul);
	cr_assert_eq(cl_sched_root_group(r.s)->nr_groups, 1ul);
	cr_assert(cds_list_empty(&keep->children));
	cr_assert_eq(cl_task_group_destroy(keep), 0);
	urcu_memb_barrier();
	cl_sched_destroy(r.s);
}
