/* SPDX-License-Identifier: MIT */
/*
 * tests/outside/sched_contract.c - the runqueue contract, checked by a program
 * outside the project: it sees only the installed headers (pkg-config
 * cachelocal-sched) and the documented API.
 *
 *  1. Layout (build time): CL_ASSERT_APART(struct cl_rq, lock, nr_running),
 *     CL_ASSERT_SAME_LINE(struct cl_rq, nr_running, curr) and
 *     CL_ASSERT_APART(struct cl_sched_entity, avg, cfs_rq) compile here (the
 *     "before" builds fail them: tests/compile-fail/sched_*.c); the offsets
 *     are printed at run time.
 *  2. T5: cl_cfs_rq_se(cl_tg_cfs_rq(tg, cpu)) == cl_tg_se(tg, cpu) for every
 *     group of a width-3, depth-3 tree and every CPU, for this machine's
 *     possible CPUs and for 64 simulated ones; the root has no entity and its
 *     queue is the rq's.
 *  3. The scheduler works: weights 1024:2048 share one simulated CPU 1:2.
 *
 * Exit 0 if all hold, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>
#include <cachelocal/topology.h>

CL_ASSERT_APART(struct cl_rq, lock, nr_running);
CL_ASSERT_SAME_LINE(struct cl_rq, nr_running, curr);
CL_ASSERT_APART(struct cl_sched_entity, avg, cfs_rq);

static int failures;

#define CHECK(cond, ...) \
	do { \
		if (!(cond)) { \
			failures++; \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__); \
			fputc('\n', stderr); \
		} \
	} while (0)

static unsigned long check_tree(unsigned int nr_cpus)
{
	enum { NG = 13 };
	struct cl_sched *s = cl_sched_create(nr_cpus, NULL);
	struct cl_task_group *root, *g[NG];
	unsigned long checked = 0;

	CHECK(s != NULL, "cl_sched_create(%u)", nr_cpus);
	if (!s)
		return 0;
	root = cl_sched_root_group(s);
	for (int i = 0; i < NG; i++) {
		g[i] = cl_task_group_create(i == 0 ? root : g[(i - 1) / 3], 1024);
		CHECK(g[i] != NULL, "create group %d", i);
		if (!g[i])
			return 0;
	}
	for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
		CHECK(cl_tg_se(root, cpu) == NULL, "root has no entity (cpu %u)", cpu);
		CHECK(cl_tg_cfs_rq(root, cpu) == &cl_sched_rq(s, cpu)->cfs, "root queue is rq->cfs (cpu %u)", cpu);
		CHECK(cl_cfs_rq_se(cl_tg_cfs_rq(root, cpu)) == NULL, "root queue has no entity (cpu %u)", cpu);
		for (int i = 0; i < NG; i++) {
			struct cl_cfs_rq *q = cl_tg_cfs_rq(g[i], cpu);
			struct cl_sched_entity *se = cl_tg_se(g[i], cpu);

			CHECK(se != NULL && cl_cfs_rq_se(q) == se, "group %d cpu %u", i, cpu);
			CHECK(se && se->my_q == q, "entity owns its queue (group %d cpu %u)", i, cpu);
			checked++;
		}
	}
	for (int i = NG - 1; i >= 0; i--)
		CHECK(cl_task_group_destroy(g[i]) == 0, "destroy %d", i);
	cl_sched_destroy(s);
	return checked;
}

static void check_weights(void)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq;
	struct cl_task *t = (struct cl_task *)aligned_alloc(CL_CACHELINE_SIZE, 2 * sizeof(*t));
	uint64_t now = 0;
	double ratio;

	CHECK(s && t, "setup");
	if (!s || !t)
		return;
	rq = cl_sched_rq(s, 0);
	cl_task_init(&t[0], 0);
	cl_task_init(&t[1], 0);
	cl_task_set_weight(&t[1], 2048);
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, now);
	cl_rq_enqueue(rq, &t[0], 0);
	cl_rq_enqueue(rq, &t[1], 0);
	for (int ms = 0; ms < 3000; ms++) {
		now += 1000000;
		if (cl_rq_tick(rq, now) || !rq->curr)
			cl_rq_pick_next(rq);
	}
	cl_rq_put_prev(rq);
	cl_rq_dequeue(rq, &t[0], CL_DEQUEUE_SLEEP);
	cl_rq_dequeue(rq, &t[1], CL_DEQUEUE_SLEEP);
	cl_rq_unlock(rq);
	ratio = (double)t[1].se.sum_exec_runtime / (double)t[0].se.sum_exec_runtime;
	printf("weights 1024:2048 on one simulated CPU for 3 s: %.1f ms : %.1f ms = 1 : %.4f\n",
	       (double)t[0].se.sum_exec_runtime / 1e6, (double)t[1].se.sum_exec_runtime / 1e6, ratio);
	CHECK(ratio > 1.96 && ratio < 2.04, "ratio %f", ratio);
	free(t);
	cl_sched_destroy(s);
}

int main(void)
{
	unsigned int ncpu = cl_nr_possible_cpus();
	unsigned long n;

	urcu_memb_register_thread();
	printf("struct cl_rq: nr_running @%zu (line %zu), curr @%zu (line %zu), lock @%zu (line %zu)\n",
	       offsetof(struct cl_rq, nr_running), offsetof(struct cl_rq, nr_running) / CL_CACHELINE_SIZE,
	       offsetof(struct cl_rq, curr), offsetof(struct cl_rq, curr) / CL_CACHELINE_SIZE,
	       offsetof(struct cl_rq, lock), offsetof(struct cl_rq, lock) / CL_CACHELINE_SIZE);
	printf("struct cl_sched_entity: cfs_rq @%zu (line %zu), avg @%zu (line %zu)\n",
	       offsetof(struct cl_sched_entity, cfs_rq), offsetof(struct cl_sched_entity, cfs_rq) / CL_CACHELINE_SIZE,
	       offsetof(struct cl_sched_entity, avg), offsetof(struct cl_sched_entity, avg) / CL_CACHELINE_SIZE);
	CHECK(offsetof(struct cl_rq, lock) / CL_CACHELINE_SIZE != offsetof(struct cl_rq, nr_running) / CL_CACHELINE_SIZE,
	      "lock apart from nr_running");
	n = check_tree(ncpu);
	printf("T5 identity: %lu (group, cpu) pairs on %u possible CPUs\n", n, ncpu);
	n = check_tree(64);
	printf("T5 identity: %lu (group, cpu) pairs on 64 simulated CPUs\n", n);
	check_weights();
	urcu_memb_unregister_thread();
	urcu_memb_barrier(); /* liburcu 0.13.2: let its call_rcu thread finish */
	printf("sched_contract: %s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
