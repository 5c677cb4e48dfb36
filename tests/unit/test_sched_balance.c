/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_balance.c - T4 balancing: detach from the cold
 * tail, cache-hot window, affinity, home tasks last, scan bound, stop at
 * balance, lock-free busiest choice, CPU offline drain and online; and a
 * threaded run (TSan).
 * Built once per line of test_sched_balance.variants; the "before"
 * (CL_DETACH_FROM_HEAD) walks from the head.
 */
#include "cl_test.h"
#include "sched_sim.h"

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

#define US 1000ULL

/*
 * Queue n tasks on CPU 0 and run them once each in order t[0]..t[n-1],
 * @gap ns apart: cfs_tasks is then t[n-1] (running, head) ... t[0] (tail).
 */
static uint64_t setup_mru(struct cl_sched *s, struct cl_task *t, int n, uint64_t gap)
{
	struct cl_rq *rq = cl_sched_rq(s, 0);
	uint64_t now = 1000000000ULL;

	for (int i = 0; i < n; i++) {
		cl_task_init(&t[i], 0);
		sim_enqueue(s, 0, &t[i], now);
	}
	cl_rq_lock(rq);
	for (int i = 0; i < n; i++) {
		now += gap;
		cl_rq_update_clock(rq, now);
		cl_rq_put_prev(rq);
		/* force the order: t[i] runs next, whatever the pick would choose */
		cr_assert_eq(cl_rq_set_curr(rq, &t[i]), 0);
	}
	cl_rq_unlock(rq);
	/* check the MRU order we built */
	struct cds_list_head *pos = rq->cfs_tasks.next;
	for (int i = n - 1; i >= 0; i--, pos = pos->next)
		cr_assert_eq(pos, &t[i].se.group_node, "MRU slot of t[%d]", i);
	return now;
}

/* cl_task_set_affinity() under the task's rq lock. */
static void set_affinity(struct cl_sched *s, struct cl_task *p, const unsigned long *mask, unsigned int nbits)
{
	struct cl_rq *rq = cl_task_rq_lock(s, p);

	cr_assert_eq(cl_task_set_affinity(p, mask, nbits), 0);
	cl_task_rq_unlock(rq, p);
}

static int on_cpu(const struct cl_task *p)
{
	return p->cpu;
}

Test(sched_balance, tail_first_and_stop_at_balance, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t[6];
	struct cl_balance_stats st;
	uint64_t now;

	cl_balance_set_migration_cost(s, 0);
	now = setup_mru(s, t, 6, 10 * US);
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_find_busiest(s, 1), 0);
	cr_assert_eq(cl_balance_run(s, 1, now, &st), 3); /* (6 - 0) / 2 */
	cr_assert_eq(st.moved, 3ul);
#ifndef CL_DETACH_FROM_HEAD
	/* least recently run first: t0, t1, t2 */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(on_cpu(&t[i]), 1, "t[%d]", i);
	for (int i = 3; i < 6; i++)
		cr_assert_eq(on_cpu(&t[i]), 0, "t[%d]", i);
	cr_assert_eq(st.scanned, 3ul);
#else
	/* from the head: t5 runs (skipped), then t4, t3, t2 */
	cr_assert_eq(st.skipped_running, 1ul);
	for (int i = 2; i < 5; i++)
		cr_assert_eq(on_cpu(&t[i]), 1, "t[%d]", i);
#endif
	cr_assert_eq(cl_sched_rq(s, 0)->nr_running, 3u);
	cr_assert_eq(cl_sched_rq(s, 1)->nr_running, 3u);
	sim_validate(s);
	/* balanced now: nothing more to do */
	cr_assert_eq(cl_balance_find_busiest(s, 1), -1);
	cr_assert_eq(cl_balance_run(s, 1, now, &st), 0);
	errno = 0;
	cr_assert_eq(cl_balance_move(s, 1, 1, now, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	sim_drain(s, t, 6, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_balance, skips_cache_hot, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t[8];
	struct cl_balance_stats st;
	uint64_t now, cost = CL_SCHED_MIGRATION_COST_NS;

	cr_assert_eq(s->migration_cost_ns, 500 * US); /* the default window */
	/*
	 * Picked 100 us apart; each was last charged when the next was picked:
	 * at the balance t0 ran 600 us ago, t1 500 us (not hot: the window is
	 * strict), t2..t6 400..0 us (hot), t7 is running.
	 */
	now = setup_mru(s, t, 8, 100 * US);
	memset(&st, 0, sizeof(st));
	int moved = cl_balance_move(s, 0, 1, now, &st); /* imbalance 4, only 2 cold */
	cr_assert_eq(moved, 2);
	cr_assert_eq(st.skipped_hot, 5ul);
	cr_assert_eq(st.skipped_running, 1ul);
	cr_assert_eq(on_cpu(&t[0]), 1);
	cr_assert_eq(on_cpu(&t[1]), 1);
	for (int i = 0; i < 8; i++) {
		if (on_cpu(&t[i]) == 1) /* every moved task was cold */
			cr_assert_geq(now - t[i].se.exec_start, cost, "t[%d] moved while hot", i);
	}
	/* a wider window makes t0 hot as well; a zero window makes none hot */
	cl_balance_set_migration_cost(s, 10000 * US);
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 0);
	cl_balance_set_migration_cost(s, 0);
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 2); /* 6 vs 2: two more even it */
	sim_validate(s);
	sim_drain(s, t, 8, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_balance, continues_past_pinned_tail, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t[6];
	struct cl_balance_stats st;
	unsigned long only_cpu0 = 1UL;
	uint64_t now;

	cl_balance_set_migration_cost(s, 0);
	now = setup_mru(s, t, 6, 10 * US);
	set_affinity(s, &t[0], &only_cpu0, 2);
	set_affinity(s, &t[1], &only_cpu0, 2);
	cr_assert(cl_task_allowed_on(&t[0], 0));
	cr_assert_not(cl_task_allowed_on(&t[0], 1));
	cr_assert_not(cl_task_allowed_on(&t[0], 7)); /* beyond the mask */
	cr_assert(cl_task_allowed_on(&t[2], 1));
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 3);
	cr_assert_eq(on_cpu(&t[0]), 0);
	cr_assert_eq(on_cpu(&t[1]), 0);
#ifndef CL_DETACH_FROM_HEAD
	cr_assert_eq(st.skipped_affinity, 2ul);
	for (int i = 2; i < 5; i++)
		cr_assert_eq(on_cpu(&t[i]), 1, "t[%d]", i);
#endif
	sim_validate(s);
	sim_drain(s, t, 6, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * A task whose home_cpu is the source (its partners run there) moves only
 * after every other movable task, and still moves when the imbalance is
 * not gone without it: an even spread wins over a home.
 */
Test(sched_balance, home_tasks_move_last, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t[8];
	struct cl_balance_stats st;
	uint64_t now;
	int homed_moved = 0;

	cl_balance_set_migration_cost(s, 0);
	now = setup_mru(s, t, 8, 10 * US); /* t7 runs */
	for (int i = 0; i < 4; i++) /* the tail (and for the head walk, the end) */
		CL_WRITE_ONCE(t[i].home_cpu, 0);
	CL_WRITE_ONCE(t[4].home_cpu, 1); /* a home at the destination changes nothing */
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 4); /* imbalance 4 */
	cr_assert_eq(st.skipped_home, 4ul);
	for (int i = 4; i < 7; i++)
		cr_assert_eq(on_cpu(&t[i]), 1, "t[%d] (no home here) stayed", i);
	for (int i = 0; i < 4; i++)
		homed_moved += on_cpu(&t[i]) == 1;
	cr_assert_eq(homed_moved, 1, "one home task moves for the last unit of imbalance");
	cr_assert_eq(on_cpu(&t[7]), 0);
	sim_validate(s);
	/* no task with a home there: one walk, as before */
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 1, 0, now, &st), 0);
	cr_assert_eq(st.skipped_home, 0ul);
	sim_drain(s, t, 8, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_balance, scan_bound, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t[10];
	struct cl_balance_stats st;
	unsigned long only_cpu0 = 1UL;
	uint64_t now;

	cr_assert_eq(s->nr_migrate, 32u); /* the default bound */
	cl_balance_set_migration_cost(s, 0);
	cl_balance_set_nr_migrate(s, 2);
	now = setup_mru(s, t, 10, 10 * US);
	for (int i = 0; i < 10; i++)
		if (i != 5)
			set_affinity(s, &t[i], &only_cpu0, 1);
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 0); /* t5 is beyond the bound */
	cr_assert_eq(st.scanned, 2ul);
	cl_balance_set_nr_migrate(s, 32);
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_move(s, 0, 1, now, &st), 1);
	cr_assert_eq(on_cpu(&t[5]), 1);
	cr_assert_leq(st.scanned, 10ul);
	sim_validate(s);
	sim_drain(s, t, 10, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

Test(sched_balance, busiest_is_read_without_locks, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(3, NULL);
	struct cl_task t[9];
	uint64_t now = 0;
	int where[9] = { 0, 1, 1, 1, 1, 1, 2, 2, 2 };

	for (int i = 0; i < 9; i++) {
		cl_task_init(&t[i], 0);
		sim_enqueue(s, (unsigned int)where[i], &t[i], now);
	}
	/* the lock of the busiest is held elsewhere: finding it must not wait */
	cl_rq_lock(cl_sched_rq(s, 1));
	cr_assert_eq(cl_balance_find_busiest(s, 0), 1);
	cl_rq_unlock(cl_sched_rq(s, 1));
	cr_assert_eq(cl_balance_find_busiest(s, 2), 1);
	cr_assert_eq(cl_balance_find_busiest(s, 1), -1); /* nobody has 2 more than 5 */
	cr_assert_eq(cl_balance_find_busiest(s, 7), -1);
	sim_drain(s, t, 9, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Offline drains every task (throttled groups included) and loses none; online pulls back. */
Test(sched_balance, offline_drain_and_online, .init = rcu_init, .fini = rcu_fini)
{
	enum { N = 12 };
	struct cl_sched *s = cl_sched_create(3, NULL);
	struct cl_task_group *root = cl_sched_root_group(s);
	struct cl_task_group *g = cl_task_group_create(root, 1024), *g2 = cl_task_group_create(g, 512);
	struct cl_task t[N];
	unsigned long only_cpu1 = 2UL;
	uint64_t now = 0;

	cr_assert_eq(cl_tg_set_bandwidth(g, 2000000, 10000000), 0);
	for (int i = 0; i < N; i++) {
		cl_task_init(&t[i], i % 3);
		cl_task_set_group(&t[i], i % 3 == 0 ? NULL : i % 3 == 1 ? g : g2);
		sim_enqueue(s, i < 8 ? 1 : (unsigned int)(i % 3), &t[i], now);
	}
	set_affinity(s, &t[0], &only_cpu1, 3); /* can only run on the CPU going away */
	int saw_throttled = 0;
	for (int k = 0; k < 40 && !saw_throttled; k++) {
		sim_run(s, &now, 1, 1);
		saw_throttled = cl_tg_cfs_rq(g, 1)->throttled;
	}
	cr_assert(saw_throttled, "set-up: g throttled on CPU 1");
	int moved = cl_balance_cpu_offline(s, 1, now);
	cr_assert_geq(moved, 8);
	struct cl_rq *rq1 = cl_sched_rq(s, 1);
	cr_assert_eq(rq1->nr_running, 0u);
	cr_assert(cds_list_empty(&rq1->cfs_tasks));
	cr_assert_null(rq1->curr);
	for (int i = 0; i < N; i++) {
		cr_assert(t[i].se.on_rq, "t[%d] lost", i);
		cr_assert_neq(on_cpu(&t[i]), 1, "t[%d] still on CPU 1", i);
	}
	struct cl_task_group *gs[2] = { g, g2 };
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(cl_tg_cfs_rq(gs[k], 1)->nr_running, 0u);
		cr_assert_eq(cl_tg_cfs_rq(gs[k], 1)->h_nr_running, 0u);
		cr_assert_not(cl_tg_cfs_rq(gs[k], 1)->throttled);
		cr_assert_not(cl_tg_se(gs[k], 1)->on_rq);
	}
	sim_validate(s);
	errno = 0;
	cr_assert_eq(cl_balance_cpu_offline(s, 1, now), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_balance_run(s, 1, now, NULL), 0); /* offline CPUs do not pull */
	sim_run(s, &now, 50, 1);
	unsigned int total = 0;
	for (unsigned int c = 0; c < 3; c++)
		total += cl_sched_rq(s, c)->cfs.h_nr_running;
	cr_assert_leq(total, (unsigned)N);
	/* back online: balancing moves tasks to it */
	cr_assert_eq(cl_balance_cpu_online(s, 1, now), 0);
	cr_assert_eq(cl_balance_cpu_online(s, 1, now), -1);
	/* a cache-hot window later: the runnable root tasks take turns every tick
	 * (a 0.75 ms slice), so the one put at the last tick is still hot */
	now += 2 * CL_SCHED_MIGRATION_COST_NS;
	for (int k = 0; k < 5; k++)
		cl_balance_run(s, 1, now, NULL);
	cr_assert_gt(rq1->nr_running, 0u);
	sim_run(s, &now, 20, 1);
	int n_queued = 0;
	for (int i = 0; i < N; i++)
		n_queued += t[i].se.on_rq;
	cr_assert_eq(n_queued, N);
	sim_drain(s, t, N, now);
	sim_detach(s, t, N);
	cl_task_group_destroy(g2);
	cl_task_group_destroy(g);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * The two-step offline: between cl_balance_cpu_offline_begin() and the
 * drain the CPU reads offline yet keeps its tasks queued (refusing new
 * ones, not balanced from); the drain waits for the worker's NULL pick and
 * then empties it. A checker that stops mid-handshake sees exactly this.
 */
Test(sched_balance, going_offline_keeps_tasks_until_acknowledged_drain, .init = rcu_init, .fini = rcu_fini)
{
	enum { N = 4 };
	struct cl_sched *s = cl_sched_create(3, NULL);
	struct cl_rq *rq2 = cl_sched_rq(s, 2);
	struct cl_task t[N], late;
	uint64_t now = 1000;

	for (int i = 0; i < N; i++) {
		cl_task_init(&t[i], 0);
		sim_enqueue(s, 2, &t[i], now);
	}
	cl_rq_lock(rq2);
	cr_assert_not_null(cl_rq_pick_next(rq2)); /* the worker runs a task */
	cl_rq_unlock(rq2);

	cr_assert_eq(cl_balance_cpu_offline_begin(s, 2), 0);
	cr_assert_eq(cl_balance_cpu_offline_begin(s, 2), 0); /* already going: no-op */
	cl_rq_lock(rq2);
	cr_assert_not(cl_rq_online(rq2));
	cr_assert_eq(rq2->nr_running, (unsigned)N, "going offline: still queued there");
	cl_rq_unlock(rq2);
	for (int i = 0; i < N; i++)
		cr_assert_eq(on_cpu(&t[i]), 2);
	cl_task_init(&late, 0);
	errno = 0;
	cr_assert_eq(cl_task_wake(s, &late, 2, now), -1);
	cr_assert_eq(errno, ENXIO);
	cr_assert_eq(cl_balance_run(s, 0, now, NULL), 0, "no pull from a CPU going offline");
	errno = 0;
	cr_assert_eq(cl_balance_cpu_offline(s, 2, now), -1);
	cr_assert_eq(errno, EAGAIN, "the worker has not acknowledged");
	cr_assert_eq(rq2->nr_running, (unsigned)N);

	cl_rq_lock(rq2); /* the worker's acknowledgment */
	cr_assert_null(cl_rq_pick_next(rq2));
	cr_assert_null(rq2->curr);
	cl_rq_unlock(rq2);
	cr_assert_eq(cl_balance_cpu_offline(s, 2, now), N);
	cr_assert_eq(rq2->nr_running, 0u);
	cr_assert(cds_list_empty(&rq2->cfs_tasks));
	for (int i = 0; i < N; i++) {
		cr_assert(t[i].se.on_rq, "t[%d] lost", i);
		cr_assert_neq(on_cpu(&t[i]), 2, "t[%d] left on the drained CPU", i);
	}
	errno = 0;
	cr_assert_eq(cl_task_wake(s, &late, 2, now), -1);
	cr_assert_eq(errno, ENXIO, "a drained CPU refuses enqueues");
	sim_validate(s);
	sim_drain(s, t, N, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* The last online CPU cannot go offline while it has tasks. */
Test(sched_balance, last_cpu_stays, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task t;
	uint64_t now = 0;

	cl_task_init(&t, 0);
	sim_enqueue(s, 0, &t, now);
	cr_assert_eq(cl_balance_cpu_offline(s, 1, now), 0);
	errno = 0;
	cr_assert_eq(cl_balance_cpu_offline(s, 0, now), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_balance_cpu_online(s, 1, now), 0);
	cr_assert_eq(cl_balance_cpu_offline(s, 0, now), 1);
	cr_assert_eq(on_cpu(&t), 1);
	sim_drain(s, &t, 1, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* ---- threads: each drives its CPU and pulls from the other (TSan) ---- */

struct duo {
	struct cl_sched *s;
	atomic_uint next_cpu;
	atomic_ulong moved;
	unsigned long iters;
};

static void *cpu_thread(void *arg)
{
	struct duo *d = arg;
	unsigned int cpu = atomic_fetch_add(&d->next_cpu, 1);
	struct cl_rq *rq = cl_sched_rq(d->s, cpu);
	uint64_t now = 0;
	unsigned long moved = 0;

	urcu_memb_register_thread();
	for (unsigned long i = 0; i < d->iters; i++) {
		now += 100 * US;
		cl_rq_lock(rq);
		if (cl_rq_tick(rq, now) || !rq->curr)
			cl_rq_pick_next(rq);
		/* every 7th step the running task blocks and wakes up again at once */
		if (i % 7 == 0 && rq->curr) {
			struct cl_task *p = rq->curr;
			cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP);
			cl_rq_put_prev(rq);
			cl_rq_enqueue(rq, p, CL_ENQUEUE_WAKEUP);
		}
		cl_rq_unlock(rq);
		if (i % 3 == 0) {
			int r = cl_balance_run(d->s, cpu, now, NULL);
			cr_assert_geq(r, 0);
			moved += (unsigned long)r;
		}
	}
	cl_rq_lock(rq);
	cl_rq_put_prev(rq);
	cl_rq_unlock(rq);
	urcu_memb_unregister_thread();
	atomic_fetch_add(&d->moved, moved);
	return NULL;
}

Test(sched_balance, threads_balance_concurrently, .init = rcu_init, .fini = rcu_fini)
{
	enum { N = 16 };
	struct duo d;
	struct cl_task t[N];
	pthread_t th[2];

	memset(&d, 0, sizeof(d));
	d.s = cl_sched_create(2, NULL);
	d.iters = 20000;
	cl_balance_set_migration_cost(d.s, 0);
	for (int i = 0; i < N; i++) {
		cl_task_init(&t[i], i % 4);
		sim_enqueue(d.s, 0, &t[i], 0);
	}
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, cpu_thread, &d), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cr_assert_gt(atomic_load(&d.moved), 0ul);
	sim_validate(d.s);
	unsigned int sum = cl_sched_rq(d.s, 0)->nr_running + cl_sched_rq(d.s, 1)->nr_running;
	cr_assert_eq(sum, (unsigned)N); /* none lost, none duplicated */
	for (int i = 0; i < N; i++)
		cr_assert(t[i].se.on_rq);
	sim_drain(d.s, t, N, 0);
	cl_sched_destroy(d.s);
}

/* ------------------------------------------------------------ scheduling domains */

/*
 * The domain tests load the fake sysfs trees of tests/data (`make sysfs`):
 * epyc9654-2s (384 CPUs, SMT2, 24 LLCs of 16 CPUs, 2 nodes), 24core-24l3
 * (one node, an LLC per CPU), 8core-1l3 (8 cores SMT2, one LLC), sparse
 * (CPUs 0-3,8-11 on node 0, 300 on node 2). One rq per CPU id.
 */
struct dom {
	struct cl_topology t;
	struct cl_sched *s;
	struct cl_task *tasks;
	unsigned int nr_tasks;
	int *home;  /* the CPU each task started on */
	uint64_t now;
	struct cl_balance_stats st;
};

/* Load @tree (skip the test if it is absent), one rq per CPU id, the domains attached. */
static void dom_init(struct dom *w, const char *tree)
{
	char root[4096];

	memset(w, 0, sizeof(*w));
	snprintf(root, sizeof(root), "%s/%s", CL_TEST_DATA_DIR, tree);
	if (access(root, R_OK) != 0)
		cr_skip_test("no fake sysfs tree %s (make sysfs)", root);
	cr_assert_eq(cl_topology_load(&w->t, root), 0, "%s: %s", root, strerror(errno));
	w->s = cl_sched_create(w->t.nr_cpu_ids, NULL);
	cr_assert_not_null(w->s);
	cl_balance_set_migration_cost(w->s, 0);
	cr_assert_eq(cl_balance_set_topology(w->s, &w->t), 0, "%s", strerror(errno));
	w->now = 1000000000ULL;
}

/* Queue @per[c] new tasks on each CPU c. */
static void dom_fill(struct dom *w, const unsigned int *per)
{
	unsigned int n = 0, k = 0;

	for (unsigned int c = 0; c < w->t.nr_cpu_ids; c++)
		n += per[c];
	/* aligned_alloc() wants a size that is a multiple of the alignment (not
	   so for struct cl_task in every layout variant: ASan refuses it) */
	w->tasks = aligned_alloc(CL_CACHELINE_SIZE, (sizeof(*w->tasks) * (n ? n : 1) + CL_CACHELINE_SIZE - 1) &
							    ~(size_t)(CL_CACHELINE_SIZE - 1));
	w->home = calloc(n ? n : 1, sizeof(*w->home));
	cr_assert(w->tasks && w->home);
	w->nr_tasks = n;
	for (unsigned int c = 0; c < w->t.nr_cpu_ids; c++)
		for (unsigned int i = 0; i < per[c]; i++, k++) {
			cl_task_init(&w->tasks[k], 0);
			w->home[k] = (int)c;
			sim_enqueue(w->s, c, &w->tasks[k], w->now);
		}
}

/* Queue @n tasks on CPU @cpu, none elsewhere. */
static void dom_fill_one(struct dom *w, unsigned int cpu, unsigned int n)
{
	unsigned int *per = calloc(w->t.nr_cpu_ids, sizeof(*per));

	cr_assert_not_null(per);
	per[cpu] = n;
	dom_fill(w, per);
	free(per);
}

/* Passes for every CPU (ascending, or descending if @down) until a round moves nothing. */
static unsigned int dom_settle(struct dom *w, int down)
{
	unsigned int nr = cl_sched_nr_cpus(w->s), rounds = 0;
	int moved;

	do {
		moved = 0;
		for (unsigned int i = 0; i < nr; i++) {
			int m = cl_balance_run(w->s, down ? nr - 1 - i : i, w->now += 1000, &w->st);

			cr_assert_geq(m, 0, "cl_balance_run: %s", strerror(errno));
			moved += m;
		}
		cr_assert_lt(++rounds, 1000u, "no fixpoint after 1000 rounds");
	} while (moved);
	return rounds;
}

static unsigned int nr_on(const struct dom *w, unsigned int c)
{
	return cl_sched_rq(w->s, c)->nr_running;
}

/* max - min nr_running over the CPUs of each LLC; the largest. */
static unsigned int llc_spread(const struct dom *w)
{
	unsigned int worst = 0;

	for (unsigned int l = 0; l < w->t.nr_llcs; l++) {
		unsigned int mx = 0, mn = ~0u;

		for (unsigned int c = 0; c < w->t.nr_cpu_ids; c++)
			if (w->t.cpu[c].possible && w->t.cpu[c].llc == (int)l) {
				mx = nr_on(w, c) > mx ? nr_on(w, c) : mx;
				mn = nr_on(w, c) < mn ? nr_on(w, c) : mn;
			}
		if (mn != ~0u && mx - mn > worst)
			worst = mx - mn;
	}
	return worst;
}

static unsigned long node_sum(const struct dom *w, int node)
{
	unsigned long sum = 0;

	for (unsigned int c = 0; c < w->t.nr_cpu_ids; c++)
		if (w->t.cpu[c].possible && w->t.cpu[c].node == node)
			sum += nr_on(w, c);
	return sum;
}

/* Every rq valid, every task on exactly one rq: then take them down and free. */
static void dom_fini(struct dom *w)
{
	unsigned long sum = 0;

	sim_validate(w->s);
	for (unsigned int c = 0; c < cl_sched_nr_cpus(w->s); c++)
		sum += nr_on(w, c);
	cr_assert_eq(sum, w->nr_tasks, "tasks lost or duplicated");
	for (unsigned int i = 0; i < w->nr_tasks; i++)
		cr_assert(w->tasks[i].se.on_rq && w->tasks[i].cpu >= 0, "task %u not queued", i);
	cr_assert_eq(w->st.moved_smt + w->st.moved_llc + w->st.moved_node + w->st.moved_numa, w->st.moved);
	sim_drain(w->s, w->tasks, w->nr_tasks, w->now);
	cr_assert_eq(cl_sched_destroy(w->s), 0);
	cl_topology_free(&w->t);
	free(w->tasks);
	free(w->home);
}

/*
 * A skew inside one LLC is evened inside it: CPU 0 holds 16 tasks, the
 * other 15 CPUs of its LLC none, every other CPU one. Every LLC and node
 * then has the same average, so nothing crosses an LLC; the flat balancer
 * lets the first far CPU to pass (descending order: 383, node 1) pull
 * from CPU 0.
 */
Test(sched_balance, domains_llc_skew_stays_in_llc, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;
	unsigned int *per;

	dom_init(&w, "epyc9654-2s");
	per = calloc(w.t.nr_cpu_ids, sizeof(*per));
	for (unsigned int c = 0; c < w.t.nr_cpu_ids; c++)
		per[c] = w.t.cpu[c].llc == w.t.cpu[0].llc ? 0 : 1;
	per[0] = 16;
	dom_fill(&w, per);
	dom_settle(&w, 1);
	for (unsigned int c = 0; c < w.t.nr_cpu_ids; c++)
		cr_assert_eq(nr_on(&w, c), 1u, "cpu %u: %u tasks", c, nr_on(&w, c));
	for (unsigned int i = 0; i < w.nr_tasks; i++) {
		int c = w.tasks[i].cpu;

		if (w.home[i] == 0)
			cr_assert_eq(w.t.cpu[c].llc, w.t.cpu[0].llc, "a task of CPU 0 went to CPU %d", c);
		else
			cr_assert_eq(c, w.home[i], "a task of CPU %d moved to %d", w.home[i], c);
	}
	cr_assert_geq(w.st.moved, 15ul); /* a task may move twice */
	cr_assert_eq(w.st.moved_node + w.st.moved_numa, 0ul);
	cr_assert_gt(w.st.moved_smt, 0ul); /* CPU 192, 0's sibling, pulls first */
	free(per);
	dom_fini(&w);
}

/*
 * A small cross-node imbalance stays: 4 tasks on CPU 96 (node 1), the
 * rest idle. Evening the nodes would move 2 tasks, not more than the
 * NUMA allowance (12: node 1's LLCs), so they spread inside node 1 only;
 * the flat balancer lets CPU 0 pull 2 at once.
 */
Test(sched_balance, domains_small_numa_imbalance_stays, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;

	dom_init(&w, "epyc9654-2s");
	dom_fill_one(&w, 96, 4);
	dom_settle(&w, 0);
	cr_assert_eq(node_sum(&w, w.t.cpu[96].node), 4ul, "tasks left node %d", w.t.cpu[96].node);
	cr_assert_eq(w.st.moved_numa, 0ul);
	for (unsigned int c = 0; c < w.t.nr_cpu_ids; c++)
		cr_assert_leq(nr_on(&w, c), 1u, "cpu %u: %u tasks", c, nr_on(&w, c));
	cr_assert_geq(w.st.moved, 3ul);
	dom_fini(&w);
}

/* The allowance is the NUMA knob: with none, the same 2 tasks' imbalance crosses. */
Test(sched_balance, domains_numa_allowance_knob, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;

	dom_init(&w, "epyc9654-2s");
	cr_assert_eq(cl_balance_set_numa_imbalance_nr(w.s, 0), 0);
	dom_fill_one(&w, 96, 4);
	dom_settle(&w, 0);
	cr_assert_eq(node_sum(&w, w.t.cpu[0].node), 2ul); /* CPU 0 pulls the 2 at once */
	cr_assert_eq(w.st.moved_numa, 2ul);
	dom_fini(&w);
}

/*
 * A large one moves: 2 tasks on every CPU of node 1, node 0 idle. Node 0
 * pulls until the averages are within 125% (or within the allowance); every
 * LLC ends within 1.
 */
Test(sched_balance, domains_large_numa_imbalance_moves, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;
	unsigned int *per;
	unsigned long n0, n1;

	dom_init(&w, "epyc9654-2s");
	per = calloc(w.t.nr_cpu_ids, sizeof(*per));
	for (unsigned int c = 0; c < w.t.nr_cpu_ids; c++)
		per[c] = w.t.cpu[c].node == w.t.cpu[96].node ? 2 : 0;
	dom_fill(&w, per);
	dom_settle(&w, 0);
	n0 = node_sum(&w, w.t.cpu[0].node);
	n1 = node_sum(&w, w.t.cpu[96].node);
	cr_assert_eq(n0 + n1, 384ul);
	/* the fixpoint: n1 <= 1.25 n0 (equal node sizes), or evening would move <= 12 */
	cr_assert(n1 * 100 <= n0 * 125 || (n1 - n0) / 2 <= 12, "nodes %lu and %lu", n0, n1);
	cr_assert_gt(w.st.moved_numa, 0ul);
	cr_assert_eq(w.st.moved_numa, n0);
	cr_assert_leq(llc_spread(&w), 1u);
	free(per);
	dom_fini(&w);
}

/*
 * Across the LLCs of a node, the LLC percentage: CPU 0 with 20 tasks and
 * 23 others (each its own LLC) with 18 differ by 111%, under 117: nothing
 * moves (the flat balancer moves one: 20 >= 18 + 2). At 110% one moves.
 */
Test(sched_balance, domains_llc_imbalance_pct, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;
	unsigned int *per;

	dom_init(&w, "24core-24l3");
	per = calloc(w.t.nr_cpu_ids, sizeof(*per));
	for (unsigned int c = 0; c < w.t.nr_cpu_ids; c++)
		per[c] = c ? 18 : 20;
	dom_fill(&w, per);
	dom_settle(&w, 0);
	cr_assert_eq(w.st.moved, 0ul);
	cr_assert_eq(nr_on(&w, 0), 20u);
	cr_assert_eq(cl_balance_set_imbalance_pct(w.s, 110, 0), 0);
	dom_settle(&w, 0);
	cr_assert_eq(w.st.moved, 1ul);
	cr_assert_eq(w.st.moved_node, 1ul);
	cr_assert_eq(nr_on(&w, 0), 19u);
	free(per);
	dom_fini(&w);
}

/* Inside one LLC the flat rule still converges to max - min <= 1, SMT siblings first. */
Test(sched_balance, domains_converge_within_llc, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;
	unsigned int *per, x = 12345;

	dom_init(&w, "8core-1l3");
	per = calloc(w.t.nr_cpu_ids, sizeof(*per));
	for (unsigned int i = 0; i < 200; i++) {
		x = x * 1103515245u + 12345u;
		per[(x >> 16) % 5]++; /* CPUs 0-4 only */
	}
	dom_fill(&w, per);
	dom_settle(&w, 0);
	cr_assert_leq(llc_spread(&w), 1u);
	cr_assert_gt(w.st.moved, 0ul);
	cr_assert_gt(w.st.moved_smt, 0ul);
	cr_assert_eq(w.st.moved_smt + w.st.moved_llc, w.st.moved);
	free(per);
	dom_fini(&w);
}

/* Detached (NULL topology), the flat balancer is back: CPU 0 pulls across nodes. */
Test(sched_balance, domains_detach_is_flat, .init = rcu_init, .fini = rcu_fini)
{
	struct dom w;

	dom_init(&w, "epyc9654-2s");
	cr_assert_eq(cl_balance_set_topology(w.s, NULL), 0);
	dom_fill_one(&w, 96, 4);
	cr_assert_eq(cl_balance_run(w.s, 0, w.now, &w.st), 2);
	cr_assert_eq(nr_on(&w, 0), 2u);
	cr_assert_eq(w.st.moved_numa, 0ul); /* no levels without a topology */
	w.st.moved = 0;
	dom_fini(&w);
}

/* rq i standing for another CPU id (the online CPUs of a sparse tree); bad input. */
Test(sched_balance, domains_cpu_map_and_bad_input, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_topology t;
	struct cl_sched *s;
	struct cl_task tk[6];
	int ids[9], bad[9], n = 0;
	char root[4096];
	struct cl_balance_stats st;
	uint64_t now = 1000000;

	snprintf(root, sizeof(root), "%s/sparse", CL_TEST_DATA_DIR);
	if (access(root, R_OK) != 0)
		cr_skip_test("no fake sysfs tree %s (make sysfs)", root);
	cr_assert_eq(cl_topology_load(&t, root), 0);
	for (unsigned int c = 0; c < t.nr_cpu_ids && n < 9; c++)
		if (t.cpu[c].online)
			ids[n++] = (int)c;
	cr_assert_eq(n, 9);
	cr_assert_eq(ids[8], 300);
	s = cl_sched_create(9, NULL);
	cl_balance_set_migration_cost(s, 0);
	memcpy(bad, ids, sizeof(bad));
	bad[3] = 5; /* not a possible CPU */
	errno = 0;
	cr_assert_eq(cl_balance_set_topology_cpus(s, &t, bad), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_balance_set_topology(s, &t), -1); /* rq 4 would be CPU 4: not possible */
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_balance_set_topology_cpus(s, &t, NULL), -1);
	cr_assert_eq(cl_balance_set_topology_cpus(NULL, &t, ids), -1);
	cr_assert_eq(cl_balance_set_imbalance_pct(s, 99, 0), -1);
	cr_assert_eq(cl_balance_set_imbalance_pct(s, 0, 1001), -1);
	cr_assert_eq(cl_balance_set_imbalance_pct(NULL, 0, 0), -1);
	cr_assert_eq(cl_balance_set_numa_imbalance_nr(s, -2), -1);
	cr_assert_eq(cl_balance_set_numa_imbalance_nr(NULL, -1), -1);
	cr_assert_eq(cl_balance_set_topology_cpus(s, &t, ids), 0);
	cl_topology_free(&t); /* copied */
	/* 6 tasks on rq 8 (CPU 300, node 2, alone): node 0 (8 rqs) pulls past the allowance (1) */
	for (int i = 0; i < 6; i++) {
		cl_task_init(&tk[i], 0);
		sim_enqueue(s, 8, &tk[i], now);
	}
	memset(&st, 0, sizeof(st));
	cr_assert_eq(cl_balance_run(s, 0, now, &st), 3);
	cr_assert_eq(st.moved_numa, 3ul);
	sim_validate(s);
	sim_drain(s, tk, 6, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}
