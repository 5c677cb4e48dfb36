/* SPDX-License-Identifier: MIT */
/*
 * examples/coalloc.c - technique T5: a task group's per-CPU runqueue and
 * entity co-allocated and reached through one per-CPU offset, next to the
 * "before" shape (two arrays of per-CPU pointers to separately allocated
 * objects). Walks a group tree from a leaf to the root for one CPU both ways
 * and prints what each walk loaded.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/coalloc.c -o coalloc $(pkg-config --cflags --libs cachelocal)
 */
#include "example_args.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/cacheline.h>
#include <cachelocal/percpu.h>

/* A group's queue on one CPU: what the pick path reads. */
struct ex_cfs_rq {
	unsigned long nr_running;
	unsigned long load_weight;
	unsigned long long min_vruntime;
};

/* The group's entity on one CPU, queued on the parent group's queue. The
 * update path writes vruntime and load on every tick. */
struct ex_sched_entity {
	unsigned long weight;
	unsigned long long vruntime;
	unsigned long load_avg;
};

/*
 * struct ex_tg_pcpu - one CPU's part of a task group, allocated as one
 * per-CPU object ("after").
 *
 * ex_tg_pcpu_rq: the group queue, read by pick on this CPU.
 * ex_tg_pcpu_se: the group entity, written on every update; starts on its
 *   own line so the writes do not invalidate the queue's line.
 * Parent and child sit in the same slice, one line apart: walking up the
 * hierarchy for CPU n is "group base + n x stride", no pointer array.
 */
struct ex_tg_pcpu {
	CL_GROUP_BEGIN_ALIGNED(ex_tg_pcpu_rq);
	struct ex_cfs_rq cfs_rq;
	CL_GROUP_END_ALIGNED(ex_tg_pcpu_rq);

	CL_GROUP_BEGIN_ALIGNED(ex_tg_pcpu_se);
	struct ex_sched_entity se;
	CL_GROUP_END_ALIGNED(ex_tg_pcpu_se);
};
CL_ASSERT_ALIGNED(struct ex_tg_pcpu);
CL_ASSERT_GROUP_MEMBER(struct ex_tg_pcpu, ex_tg_pcpu_rq, cfs_rq);
CL_ASSERT_GROUP_SIZE(struct ex_tg_pcpu, ex_tg_pcpu_rq, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct ex_tg_pcpu, ex_tg_pcpu_se, se);
CL_ASSERT_GROUP_SIZE(struct ex_tg_pcpu, ex_tg_pcpu_se, CL_CACHELINE_SIZE);
CL_ASSERT_APART(struct ex_tg_pcpu, cfs_rq, se);

struct ex_task_group {
	struct ex_task_group *parent;
	int id;
	/* after: CPU 0's copy of the co-allocated pair */
	struct ex_tg_pcpu CL_PERCPU *pcpu;
	/* before: per-CPU pointer arrays to separately allocated objects */
	struct ex_cfs_rq **cfs_rq;
	struct ex_sched_entity **se;
};

#define DEPTH 4
#define MAX_LINES 64

/* Distinct cache lines a walk touched: a tiny set. */
struct line_set {
	uintptr_t line[MAX_LINES];
	int n;
};

static void touch(struct line_set *s, const void *p, size_t len)
{
	uintptr_t first = (uintptr_t)p / CL_CACHELINE_SIZE, last = ((uintptr_t)p + len - 1) / CL_CACHELINE_SIZE;

	for (uintptr_t l = first; l <= last; l++) {
		int i;

		for (i = 0; i < s->n && s->line[i] != l; i++)
			;
		if (i == s->n && s->n < MAX_LINES)
			s->line[s->n++] = l;
	}
}

/* After: one multiply-add per level; the entity is the queue's sibling. */
static unsigned long walk_after(const struct ex_task_group *tg, unsigned cpu, struct line_set *s,
				int *loads)
{
	unsigned long sum = 0;

	for (; tg; tg = tg->parent) {
		struct ex_tg_pcpu *pc = cl_percpu_ptr(tg->pcpu, cpu);
		struct ex_cfs_rq *q = &pc->cfs_rq;
		struct ex_sched_entity *se = CL_SIBLING(q, struct ex_tg_pcpu, cfs_rq, se);

		touch(s, &tg->pcpu, sizeof(tg->pcpu));
		touch(s, q, sizeof(*q));
		touch(s, se, sizeof(*se));
		*loads += 1; /* tg->pcpu */
		sum += q->load_weight + se->weight;
		printf("    after : group %d  base %p + %u x %d = %p (rq), entity %p\n", tg->id,
		       (void *)tg->pcpu, cpu, CL_PERCPU_STRIDE, (void *)q, (void *)se);
	}
	return sum;
}

/* Before: two pointer loads per level, objects wherever malloc put them. */
static unsigned long walk_before(const struct ex_task_group *tg, unsigned cpu, struct line_set *s,
				 int *loads)
{
	unsigned long sum = 0;

	for (; tg; tg = tg->parent) {
		struct ex_cfs_rq *q = tg->cfs_rq[cpu];
		struct ex_sched_entity *se = tg->se[cpu];

		touch(s, &tg->cfs_rq, sizeof(tg->cfs_rq));
		touch(s, &tg->cfs_rq[cpu], sizeof(q));
		touch(s, &tg->se[cpu], sizeof(se));
		touch(s, q, sizeof(*q));
		touch(s, se, sizeof(*se));
		*loads += 4; /* tg->cfs_rq, tg->cfs_rq[cpu], tg->se, tg->se[cpu] */
		sum += q->load_weight + se->weight;
		printf("    before: group %d  cfs_rq[%u] = %p, se[%u] = %p\n", tg->id, cpu, (void *)q, cpu,
		       (void *)se);
	}
	return sum;
}

int main(int argc, char **argv)
{
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
	struct ex_task_group tg[DEPTH];
	unsigned nr_cpus, cpu;
	int rc = 0;

	example_args(argc, argv, "usage: coalloc [--help]\n  what one leaf-to-root group walk touches, co-allocated vs pointer arrays\n", NULL, 0);

	if (!pool) {
		perror("cl_percpu_pool_create");
		return 1;
	}
	nr_cpus = cl_percpu_pool_nr_cpus(pool);
	printf("T5 co-allocation: %u CPUs, stride %d, struct ex_tg_pcpu %zu bytes (rq at %zu, entity at %zu)\n",
	       nr_cpus, CL_PERCPU_STRIDE, sizeof(struct ex_tg_pcpu), offsetof(struct ex_tg_pcpu, cfs_rq),
	       offsetof(struct ex_tg_pcpu, se));

	/* A chain root <- g1 <- g2 <- g3, built both ways with the same values. */
	for (int g = 0; g < DEPTH; g++) {
		tg[g].parent = g ? &tg[g - 1] : NULL;
		tg[g].id = g;
		tg[g].pcpu = cl_percpu_alloc(pool, sizeof(struct ex_tg_pcpu), _Alignof(struct ex_tg_pcpu));
		tg[g].cfs_rq = calloc(nr_cpus, sizeof(*tg[g].cfs_rq));
		tg[g].se = calloc(nr_cpus, sizeof(*tg[g].se));
		if (!tg[g].pcpu || !tg[g].cfs_rq || !tg[g].se) {
			perror("allocation");
			return 1;
		}
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			struct ex_tg_pcpu *pc = cl_percpu_ptr(tg[g].pcpu, cpu);

			tg[g].cfs_rq[cpu] = calloc(1, sizeof(struct ex_cfs_rq));
			tg[g].se[cpu] = calloc(1, sizeof(struct ex_sched_entity));
			if (!tg[g].cfs_rq[cpu] || !tg[g].se[cpu]) {
				perror("calloc");
				return 1;
			}
			pc->cfs_rq.load_weight = tg[g].cfs_rq[cpu]->load_weight = 1024u * (unsigned)(g + 1) + cpu;
			pc->se.weight = tg[g].se[cpu]->weight = 100u * (unsigned)(g + 1);
		}
	}

	/* Walk from the deepest group to the root for the last CPU, both ways. */
	cpu = nr_cpus - 1;
	{
		struct line_set after = { { 0 }, 0 }, before = { { 0 }, 0 };
		int loads_after = 0, loads_before = 0;
		unsigned long sa, sb;

		printf("walk group %d -> root on CPU %u:\n", DEPTH - 1, cpu);
		sa = walk_after(&tg[DEPTH - 1], cpu, &after, &loads_after);
		sb = walk_before(&tg[DEPTH - 1], cpu, &before, &loads_before);
		printf("after : %d pointer loads, %d distinct cache lines touched, sum %lu\n", loads_after,
		       after.n, sa);
		printf("before: %d pointer loads, %d distinct cache lines touched, sum %lu\n", loads_before,
		       before.n, sb);
		if (sa != sb) {
			printf("the two shapes disagree\n");
			rc = 1;
		}
	}

	for (int g = 0; g < DEPTH; g++) {
		for (cpu = 0; cpu < nr_cpus; cpu++) {
			free(tg[g].cfs_rq[cpu]);
			free(tg[g].se[cpu]);
		}
		free(tg[g].cfs_rq);
		free(tg[g].se);
		if (cl_percpu_free(pool, tg[g].pcpu) != 0)
			rc = 1;
	}
	cl_percpu_pool_destroy(pool);
	return rc;
}
