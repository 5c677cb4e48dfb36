/* SPDX-License-Identifier: MIT */
/*
 * bench/group_tree.c - T5 through the real sched/ code: the seed's group
 * trees (depth 3 x width 10: 1110 groups; depth 5 x width 4: 1364), one task
 * per leaf group, all queued on CPU 0 of an 8-CPU instance; the hot walks
 * for that CPU, timed:
 *
 *   blocked-load walk   cl_tg_update_blocked_load(root, 0, now) (every
 *                       group's queue on CPU 0, leaves first), warm (back to
 *                       back) and cold (after streaming over 64 MiB);
 *   dequeue+enqueue     cl_rq_dequeue(SLEEP) + cl_rq_enqueue(WAKEUP) of each
 *                       leaf task in turn: the entity chain to the root and
 *                       back, ns per task.
 *
 * The per-CPU layout of the groups comes from the headers: the Makefile
 * builds this file twice, group_tree (co-allocated {cfs_rq, se} per CPU,
 * one per-CPU offset) and group_tree_ptr_arrays (-DCL_GROUP_POINTER_ARRAYS:
 * two arrays of nr_cpus pointers per group); scripts/bench_report.py runs
 * both and compares them. Quick: the depth 3 tree; long: both; smoke: a
 * depth 2 x width 3 tree. bench/group_walk.c counts the same walk's misses
 * with cachegrind.
 */
#include <stdint.h>
#include <stdlib.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>

#include "bench.h"

#ifdef CL_GROUP_POINTER_ARRAYS
#define GT_VARIANT "pointer arrays"
#else
#define GT_VARIANT "co-allocated"
#endif

#define GT_CPUS 8
#define GT_FLUSH (64u << 20)

struct gt {
	struct cl_sched *s;
	struct cl_task_group **leaves;
	struct cl_task *tasks;
	int nr_leaves, nr_groups;
};

static int build(struct gt *t, struct cl_task_group *parent, int depth, int width)
{
	for (int i = 0; i < width; i++) {
		struct cl_task_group *g = cl_task_group_create(parent, 1024);

		if (!g)
			return -1;
		t->nr_groups++;
		if (depth > 1) {
			if (build(t, g, depth - 1, width))
				return -1;
		} else {
			t->leaves[t->nr_leaves++] = g;
		}
	}
	return 0;
}

static int setup(struct gt *t, int depth, int width)
{
	int leaves = 1;
	struct cl_rq *rq;

	for (int d = 0; d < depth; d++)
		leaves *= width;
	memset(t, 0, sizeof(*t));
	t->s = cl_sched_create(GT_CPUS, NULL);
	t->leaves = calloc((size_t)leaves, sizeof(*t->leaves));
	t->tasks = aligned_alloc(CL_CACHELINE_SIZE, sizeof(*t->tasks) * (size_t)leaves);
	if (!t->s || !t->leaves || !t->tasks || build(t, cl_sched_root_group(t->s), depth, width))
		return -1;
	rq = cl_sched_rq(t->s, 0);
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, 1000000);
	for (int i = 0; i < t->nr_leaves; i++) {
		cl_task_init(&t->tasks[i], 0);
		if (cl_task_set_group(&t->tasks[i], t->leaves[i]) || cl_rq_enqueue(rq, &t->tasks[i], 0)) {
			cl_rq_unlock(rq);
			return -1;
		}
	}
	cl_rq_unlock(rq);
	return 0;
}

static double walk(struct gt *t, int n, char *flush, uint64_t *now)
{
	struct cl_rq *rq = cl_sched_rq(t->s, 0);
	unsigned long long ns = 0;

	for (int i = 0; i < n; i++) {
		unsigned long long t0;

		if (flush)
			for (size_t k = 0; k < GT_FLUSH; k += 64)
				flush[k]++;
		*now += 1000000;
		t0 = bench_now_ns();
		cl_rq_lock(rq);
		cl_rq_update_clock(rq, *now);
		BENCH_KEEP(cl_tg_update_blocked_load(cl_sched_root_group(t->s), 0, *now));
		cl_rq_unlock(rq);
		ns += bench_now_ns() - t0;
	}
	return (double)ns / n;
}

static double requeue(struct gt *t, int rounds, uint64_t *now)
{
	struct cl_rq *rq = cl_sched_rq(t->s, 0);
	unsigned long long t0 = bench_now_ns();

	for (int r = 0; r < rounds; r++) {
		cl_rq_lock(rq);
		*now += 1000;
		cl_rq_update_clock(rq, *now);
		for (int i = 0; i < t->nr_leaves; i++)
			if (cl_rq_dequeue(rq, &t->tasks[i], CL_DEQUEUE_SLEEP) ||
			    cl_rq_enqueue(rq, &t->tasks[i], CL_ENQUEUE_WAKEUP)) {
				perror("group_tree: requeue");
				exit(1);
			}
		cl_rq_unlock(rq);
	}
	return (double)(bench_now_ns() - t0) / ((double)rounds * t->nr_leaves);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int depth, width;
	} trees[] = { { "d3w10", 3, 10 }, { "d5w4", 5, 4 }, { "d2w3", 2, 3 } };
	struct bench b;
	double warm[BENCH_MAX_RUNS], cold[BENCH_MAX_RUNS], rq[BENCH_MAX_RUNS];
	char *flush;
	int first, last, nwarm, ncold, nreq;

	bench_only_shared_args("group_tree", argc, argv);
	bench_init(&b, "group_tree", argc, argv);
	urcu_memb_register_thread();
	bench_pin(bench_allowed_cpu(0));
	first = b.smoke ? 2 : 0;
	last = b.smoke ? 2 : b.quick ? 0 : 1;
	nwarm = b.smoke ? 3 : b.quick ? 50 : 200;
	ncold = b.smoke ? 1 : b.quick ? 3 : 10;
	nreq = b.smoke ? 2 : b.quick ? 20 : 100;
	flush = calloc(1, GT_FLUSH);
	if (!flush) {
		perror("calloc");
		return 1;
	}
	for (int k = first; k <= last; k++) {
		struct gt t;
		uint64_t now = 1000000;
		char cn[64];

		if (setup(&t, trees[k].depth, trees[k].width)) {
			perror("group_tree: setup");
			return 1;
		}
		bench_progress(&b, "%s: %d groups, %d leaf tasks on CPU 0", trees[k].name, t.nr_groups,
			       t.nr_leaves);
		(void)walk(&t, 2, NULL, &now); /* first touch */
		for (int r = 0; r < b.runs; r++) {
			warm[r] = walk(&t, nwarm, NULL, &now);
			cold[r] = walk(&t, ncold, flush, &now);
			rq[r] = requeue(&t, nreq, &now);
		}
		snprintf(cn, sizeof(cn), "blocked-load walk warm %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_groups, warm, b.runs, "ns/walk");
		snprintf(cn, sizeof(cn), "blocked-load walk cold %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_groups, cold, b.runs, "ns/walk");
		snprintf(cn, sizeof(cn), "dequeue+enqueue %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_leaves, rq, b.runs, "ns/task");
		/* the instance is left to process exit: tearing down 1000+ groups is not measured */
	}
	free(flush);
	urcu_memb_unregister_thread();
	return bench_finish(&b);
}
