/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_rq.c - struct cl_rq layout and the core operations:
 * enqueue/dequeue/pick/put_prev/tick, invariants after every operation,
 * weighted fairness, MRU order (T4), wakeup preemption.
 * Built once per line of test_sched_rq.variants (the "before" layouts).
 */
#include "cl_test.h"
#include "sched_sim.h"

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


Test(sched_rq, layout_groups, .init = rcu_init, .fini = rcu_fini)
{
#ifndef CL_RQ_LAYOUT_SCATTERED
	/* T1: pick fields on line 0, lock on its own false-sharing unit */
	cr_assert_eq(offsetof(struct cl_rq, nr_running) / CL_CACHELINE_SIZE, 0);
	cr_assert_eq(offsetof(struct cl_rq, curr) / CL_CACHELINE_SIZE, 0);
	cr_assert_neq(offsetof(struct cl_rq, lock) / CL_FALSE_SHARING_SIZE,
		      offsetof(struct cl_rq, nr_running) / CL_FALSE_SHARING_SIZE);
	cr_assert_eq(offsetof(struct cl_rq, lock) % CL_FALSE_SHARING_SIZE, 0);
#else
	/* the "before": lock and nr_running share a line, curr is elsewhere */
	cr_assert_eq(offsetof(struct cl_rq, lock) / CL_CACHELINE_SIZE,
		     offsetof(struct cl_rq, nr_running) / CL_CACHELINE_SIZE);
	cr_assert_neq(offsetof(struct cl_rq, curr) / CL_CACHELINE_SIZE,
		      offsetof(struct cl_rq, nr_running) / CL_CACHELINE_SIZE);
#endif
#ifndef CL_SE_AVG_INLINE
	cr_assert_neq(offsetof(struct cl_sched_entity, avg) / CL_CACHELINE_SIZE,
		      offsetof(struct cl_sched_entity, cfs_rq) / CL_CACHELINE_SIZE);
#else
	cr_assert_eq(offsetof(struct cl_sched_entity, avg) / CL_CACHELINE_SIZE,
		     offsetof(struct cl_sched_entity, cfs_rq) / CL_CACHELINE_SIZE);
#endif
}

Test(sched_rq, create_percpu_and_errors, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(4, NULL);

	cr_assert_not_null(s);
	cr_assert_eq(cl_sched_nr_cpus(s), 4u);
	for (unsigned int c = 0; c < 4; c++) {
		struct cl_rq *rq = cl_sched_rq(s, c);

		cr_assert_eq((uintptr_t)rq - (uintptr_t)cl_sched_rq(s, 0), (uintptr_t)c * CL_PERCPU_STRIDE);
		cr_assert_eq(rq->cpu, c);
		cr_assert_eq(rq->nr_running, 0u);
		cr_assert_eq((uintptr_t)rq % CL_CACHELINE_SIZE, 0u);
		cl_rq_lock(rq);
		cr_assert_null(cl_rq_pick_next(rq));
		cl_rq_unlock(rq);
	}
	cr_assert_eq(cl_sched_destroy(s), 0);
	errno = 0;
	cr_assert_null(cl_sched_create(0, NULL));
	cr_assert_eq(errno, EINVAL);
	cl_sched_destroy(NULL);
	/* a caller's pool: used if big enough and of the default stride */
	struct cl_percpu_pool_attr attr = { CL_PERCPU_STRIDE, 3, 0 };
	struct cl_percpu_pool *pool = cl_percpu_pool_create(&attr);
	cr_assert_not_null(pool);
	errno = 0;
	cr_assert_null(cl_sched_create(4, pool));
	cr_assert_eq(errno, EINVAL);
	s = cl_sched_create(3, pool);
	cr_assert_not_null(s);
	cr_assert_eq(s->pool, pool);
	cr_assert_eq(cl_sched_destroy(s), 0);
	cl_percpu_pool_destroy(pool); /* still ours after the instance is gone */
	attr.stride = 2 * CL_PERCPU_STRIDE;
	pool = cl_percpu_pool_create(&attr);
	cr_assert_not_null(pool);
	cr_assert_null(cl_sched_create(2, pool));
	cr_assert_eq(errno, EINVAL);
	cl_percpu_pool_destroy(pool);
}

Test(sched_rq, enqueue_dequeue_errors, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task p;
	struct cl_rq *rq0 = cl_sched_rq(s, 0), *rq1 = cl_sched_rq(s, 1);

	cl_task_init(&p, 0);
	cl_rq_lock(rq0);
	errno = 0;
	cr_assert_eq(cl_rq_dequeue(rq0, &p, 0), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_rq_enqueue(rq0, &p, 0), 0);
	cr_assert_eq(cl_rq_enqueue(rq0, &p, 0), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_task_set_weight(&p, 2048), -1);
	cr_assert_eq(errno, EBUSY);
	cl_rq_unlock(rq0);
	cl_rq_lock(rq1);
	cr_assert_eq(cl_rq_dequeue(rq1, &p, 0), -1); /* queued on another rq */
	cl_rq_unlock(rq1);
	cl_rq_lock(rq0);
	cr_assert_eq(cl_rq_dequeue(rq0, &p, 0), 0);
	cr_assert_eq(rq0->nr_running, 0u);
	cl_rq_unlock(rq0);
	cr_assert_eq(cl_task_set_weight(&p, 0), -1);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Weights 1024:2048 get CPU time 1:2 within 2% over a simulated run. */
Test(sched_rq, weights_one_to_two, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_task t[2];
	uint64_t now = 0;

	cl_task_init(&t[0], 0);
	cl_task_init(&t[1], 0);
	cr_assert_eq(cl_task_set_weight(&t[1], 2048), 0);
	sim_enqueue(s, 0, &t[0], now);
	sim_enqueue(s, 0, &t[1], now);
	sim_run(s, &now, 3000, 1);
	double a = (double)t[0].se.sum_exec_runtime, b = (double)t[1].se.sum_exec_runtime;
	cr_assert_gt(a, 0);
	cr_assert(b / a > 2.0 * 0.98 && b / a < 2.0 * 1.02, "ratio %f", b / a);
	cr_assert_eq((uint64_t)(a + b), 2999 * SIM_TICK_NS); /* picked at the first tick */
	sim_drain(s, t, 2, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Nice levels: each step gives about 1.25x the weight. */
Test(sched_rq, nice_table, .init = rcu_init, .fini = rcu_fini)
{
	cr_assert_eq(cl_nice_to_weight(0), 1024ul);
	cr_assert_eq(cl_nice_to_weight(-20), 88761ul);
	cr_assert_eq(cl_nice_to_weight(19), 15ul);
	cr_assert_eq(cl_nice_to_weight(100), 15ul);
	for (int n = -20; n < 19; n++) {
		double r = (double)cl_nice_to_weight(n) / (double)cl_nice_to_weight(n + 1);
		cr_assert(r > 1.19 && r < 1.3, "nice %d ratio %f", n, r);
	}
}

/* T4: the picked task moves to the head of cfs_tasks; the tail is the least recently run
 * (-DCL_PICK_NO_MRU_MOVE: the list keeps the enqueue order). */
Test(sched_rq, mru_order_after_picks, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq = cl_sched_rq(s, 0);
	struct cl_task t[4];
	struct cl_task *order[64];
	unsigned int n = 0;
	uint64_t now = 0;

	for (int i = 0; i < 4; i++) {
		cl_task_init(&t[i], 0);
		sim_enqueue(s, 0, &t[i], now);
	}
	cl_rq_lock(rq);
	for (int k = 0; k < 12; k++) {
		now += SIM_TICK_NS * 3;
		cl_rq_update_clock(rq, now);
		order[n++] = cl_rq_pick_next(rq);
		cr_assert_not_null(order[n - 1]);
#ifndef CL_PICK_NO_MRU_MOVE
		/* head is the one just picked */
		cr_assert_eq(cl_container_of(rq->cfs_tasks.next, struct cl_sched_entity, group_node),
			     &order[n - 1]->se);
#endif
	}
#ifdef CL_PICK_NO_MRU_MOVE
	/* the "before" build of T4: picks leave cfs_tasks in enqueue order, newest first */
	for (int k = 0; k < 12; k++)
		order[k] = &t[k < 4 ? k : 3];
#endif
	/* list order = distinct tasks in reverse order of their last pick */
	struct cds_list_head *pos = rq->cfs_tasks.next;
	int seen[4] = { 0 };
	for (int k = (int)n - 1; k >= 0; k--) {
		int idx = (int)(order[k] - t);
		if (seen[idx])
			continue;
		seen[idx] = 1;
		cr_assert_eq(pos, &order[k]->se.group_node, "MRU position of task %d", idx);
		pos = pos->next;
	}
	cr_assert_eq(pos, &rq->cfs_tasks);
	cl_rq_unlock(rq);
	sim_drain(s, t, 4, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Random operations; invariants (tree, sums, counts) after each; min_vruntime never goes back. */
Test(sched_rq, invariants_random_ops, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task_group *g1 = cl_task_group_create(cl_sched_root_group(s), 1024);
	struct cl_task_group *g2 = cl_task_group_create(g1, 512);
	struct cl_task_group *groups[3] = { NULL, g1, g2 };
	enum { N = 12 };
	struct cl_task t[N];
	uint64_t now = 0, minv[2][3] = { { 0 } };
	unsigned int seed = 12345;

	cr_assert_not_null(g2);
	for (int i = 0; i < N; i++) {
		cl_task_init(&t[i], (i % 5) - 2);
		cl_task_set_group(&t[i], groups[i % 3]);
	}
	for (int step = 0; step < 20000; step++) {
		unsigned int c = (unsigned int)(rand_r(&seed) % 2);
		struct cl_rq *rq = cl_sched_rq(s, c);
		struct cl_task *p = &t[rand_r(&seed) % N];
		int op = rand_r(&seed) % 6;

		/* a wakeup on another CPU holds the lock of the CPU the task left too */
		struct cl_rq *prev = p->cpu >= 0 ? cl_sched_rq(s, (unsigned int)p->cpu) : rq;

		now += (uint64_t)(rand_r(&seed) % 2000000);
		cl_rq_lock_two(rq, prev);
		cl_rq_update_clock(rq, now);
		switch (op) {
		case 0: /* wake or create */
			if (!p->se.on_rq && (!p->on_cpu || p->cpu == (int)c))
				cr_assert_eq(cl_rq_enqueue(rq, p, p->cpu < 0 ? 0 : CL_ENQUEUE_WAKEUP), 0);
			break;
		case 1: /* block (maybe the running one) */
			if (p->se.on_rq && p->cpu == (int)c)
				cr_assert_eq(cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP), 0);
			break;
		case 2:
		case 3:
			cl_rq_pick_next(rq);
			break;
		case 4:
			if (cl_rq_tick(rq, now))
				cl_rq_pick_next(rq);
			break;
		default:
			cl_rq_put_prev(rq);
			break;
		}
		const char *why = NULL;
		cr_assert_eq(cl_rq_validate(rq, &why), 0, "step %d op %d: %s", step, op, why);
		for (int g = 0; g < 3; g++) {
			struct cl_cfs_rq *q = cl_tg_cfs_rq(g ? groups[g] : cl_sched_root_group(s), c);
			cr_assert_geq(cl__vdiff(q->min_vruntime, minv[c][g]), 0, "min_vruntime went back");
			minv[c][g] = q->min_vruntime;
		}
		cl_rq_unlock_two(rq, prev);
		/* each runnable task in exactly one rq's list */
		if (step % 64 == 0) {
			unsigned int total = 0, queued = 0;
			for (int i = 0; i < N; i++)
				queued += t[i].se.on_rq;
			for (unsigned int cc = 0; cc < 2; cc++) {
				struct cl_rq *r = cl_sched_rq(s, cc);
				for (struct cds_list_head *pos = r->cfs_tasks.next; pos != &r->cfs_tasks; pos = pos->next)
					total++;
				cr_assert_eq(r->nr_running, r->cfs.h_nr_running);
			}
			cr_assert_eq(total, queued);
		}
	}
	sim_drain(s, t, N, now);
	sim_detach(s, t, N);
	cr_assert_eq(cl_task_group_destroy(g2), 0);
	cr_assert_eq(cl_task_group_destroy(g1), 0);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/*
 * EEVDF wakeup preemption: an equal-slice waker waits for the running
 * task's protected slice (RUN_TO_PARITY); a shorter-slice, eligible waker
 * with an earlier deadline cancels it and preempts.
 */
Test(sched_rq, wakeup_preemption, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq = cl_sched_rq(s, 0);
	struct cl_task a, b, c;
	uint64_t now = 0;

	cl_task_init(&a, 0);
	cl_task_init(&b, 0);
	cl_task_init(&c, 0);
	sim_enqueue(s, 0, &a, now);
	sim_enqueue(s, 0, &b, now);
	sim_enqueue(s, 0, &c, now);
	cl_rq_lock(rq);
	cr_assert_eq(cl_rq_pick_next(rq), &a); /* equal deadlines: first in, first picked */
	cr_assert_eq(cl_rq_dequeue(rq, &b, CL_DEQUEUE_SLEEP), 0);
	cr_assert_eq(cl_rq_dequeue(rq, &c, CL_DEQUEUE_SLEEP), 0);
	now += SIM_TICK_NS / 10; /* a is inside its first (protected) slice */
	cl_rq_update_clock(rq, now);
	cr_assert_eq(cl_rq_enqueue(rq, &b, CL_ENQUEUE_WAKEUP), 0);
	cr_assert_eq(cl_rq_check_preempt_wakeup(rq, &b), 0, "an equal slice waits for a's deadline");
	cr_assert_eq(cl_task_set_slice_ns(&c, CL_SCHED_SLICE_MIN_NS), 0);
	cr_assert_eq(cl_rq_enqueue(rq, &c, CL_ENQUEUE_WAKEUP), 0);
	cr_assert_lt(cl__vdiff(c.se.deadline, a.se.deadline), 0);
	cr_assert_eq(cl_rq_check_preempt_wakeup(rq, &c), 1, "a shorter slice with an earlier deadline preempts");
	cr_assert_eq(cl_rq_pick_next(rq), &c);
	cr_assert_eq(cl_rq_check_preempt_wakeup(rq, &c), 0); /* curr itself */
	cl_rq_put_prev(rq);
	cl_rq_dequeue(rq, &a, CL_DEQUEUE_SLEEP);
	cl_rq_dequeue(rq, &b, CL_DEQUEUE_SLEEP);
	cl_rq_dequeue(rq, &c, CL_DEQUEUE_SLEEP);
	cr_assert_eq(rq->nr_running, 0u);
	cl_rq_unlock(rq);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* The tick preempts after the slice; a lone task is never preempted. */
Test(sched_rq, tick_preempts_after_slice, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq = cl_sched_rq(s, 0);
	struct cl_task a, b;
	uint64_t now = 0;
	int ticks = 0;

	cl_task_init(&a, 0);
	cl_task_init(&b, 0);
	sim_enqueue(s, 0, &a, now);
	cl_rq_lock(rq);
	cr_assert_eq(cl_rq_pick_next(rq), &a);
	for (int i = 0; i < 50; i++) {
		now += SIM_TICK_NS;
		cr_assert_eq(cl_rq_tick(rq, now), 0);
	}
	cr_assert_eq(cl_rq_enqueue(rq, &b, 0), 0);
	do {
		now += SIM_TICK_NS;
		ticks++;
	} while (!cl_rq_tick(rq, now) && ticks < 100);
	/* a's slice ended long ago (it ran alone): the first tick with b queued reschedules */
	cr_assert_leq(ticks, 1);
	cr_assert_eq(cl_rq_pick_next(rq), &b);
	cl_rq_put_prev(rq);
	cl_rq_dequeue(rq, &a, CL_DEQUEUE_SLEEP);
	cl_rq_dequeue(rq, &b, CL_DEQUEUE_SLEEP);
	cl_rq_unlock(rq);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* Load tracking: an always-runnable entity's average approaches its weight; a blocked one decays. */
Test(sched_rq, pelt_converges_and_decays, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched_avg sa;

	memset(&sa, 0, sizeof(sa));
	for (uint64_t t = 1; t <= 1000; t++)
		cl__pelt_accumulate(&sa, t * SIM_TICK_NS, 1);
	double full = (double)sa.load_sum / CL_PELT_LOAD_AVG_MAX;
	cr_assert(full > 0.95 && full < 1.02, "runnable fraction %f", full);
	uint64_t before = sa.load_sum;
	cl__pelt_accumulate(&sa, 1000 * SIM_TICK_NS + 32 * 1024 * 1024, 0);
	double half = (double)sa.load_sum / (double)before;
	cr_assert(half > 0.45 && half < 0.55, "decay over 32 periods %f", half);
}

/* The invariant checker itself catches corrupted counts, orders and lists. */
Test(sched_rq, validate_detects_corruption, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq = cl_sched_rq(s, 0);
	struct cl_task t[3];
	const char *why = NULL;
	uint64_t now = 0;

	for (int i = 0; i < 3; i++) {
		cl_task_init(&t[i], 0);
		sim_enqueue(s, 0, &t[i], now);
	}
	cl_rq_lock(rq);
	cr_assert_eq(cl_rq_validate(rq, &why), 0);
	cr_assert_null(why);
	rq->nr_running++;
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_not_null(why);
	rq->nr_running--;
	struct cl_sched_entity *root = rq->cfs.timeline.root;
	root->deadline += 100000000; /* the root now sorts after its right child */
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_str_eq(why, "timeline not ordered by deadline");
	root->deadline -= 100000000;
	root->min_vruntime += 1; /* a planted wrong augmented value */
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_str_eq(why, "timeline node's subtree min_vruntime is wrong");
	root->min_vruntime -= 1;
	root->tl_height++;
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_str_eq(why, "timeline node height is wrong");
	root->tl_height--;
	rq->cfs.avg_vruntime += 1;
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_str_eq(why, "cfs_rq avg_vruntime does not match its timeline");
	rq->cfs.avg_vruntime -= 1;
	rq->cfs.load.weight++;
	cr_assert_eq(cl_rq_validate(rq, NULL), -1);
	rq->cfs.load.weight--;
	cds_list_del_init(&t[1].se.group_node); /* queued but missing from cfs_tasks */
	cr_assert_eq(cl_rq_validate(rq, &why), -1);
	cr_assert_str_eq(why, "fewer tasks on cfs_tasks than queued");
	cds_list_add(&t[1].se.group_node, &rq->cfs_tasks);
	cr_assert_eq(cl_rq_validate(rq, &why), 0);
	cl_rq_unlock(rq);
	sim_drain(s, t, 3, now);
	cr_assert_eq(cl_sched_destroy(s), 0);
}

/* A task that is not queued on this rq is bad input: EINVAL, not a crash. */
Test(sched_rq, preempt_wakeup_rejects_unqueued_task, .init = rcu_init, .fini = rcu_fini)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_rq *rq0 = cl_sched_rq(s, 0), *rq1 = cl_sched_rq(s, 1);
	struct cl_task a, b, idle;
	uint64_t now = 0;

	cl_task_init(&a, 0);
	cl_task_init(&b, 0);
	cl_task_init(&idle, 0);
	sim_enqueue(s, 0, &a, now);
	sim_enqueue(s, 1, &b, now);
	cl_rq_lock(rq0);
	cr_assert_eq(cl_rq_pick_next(rq0), &a);
	errno = 0;
	cr_assert_eq(cl_rq_check_preempt_wakeup(rq0, &idle), -1, "never enqueued");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_rq_check_preempt_wakeup(rq0, &b), -1, "queued on another rq");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_rq_check_preempt_wakeup(NULL, &b), -1);
	cr_assert_eq(errno, EINVAL);
	cl_rq_put_prev(rq0);
	cr_assert_eq(cl_rq_dequeue(rq0, &a, CL_DEQUEUE_SLEEP), 0);
	cl_rq_unlock(rq0);
	cl_rq_lock(rq1);
	cr_assert_eq(cl_rq_dequeue(rq1, &b, CL_DEQUEUE_SLEEP), 0);
	cl_rq_unlock(rq1);
	cr_assert_eq(cl_sched_destroy(s), 0);
}
