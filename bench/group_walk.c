/* SPDX-License-Identifier: MIT */
/*
 * bench/group_walk.c - technique T5 measured: the blocked-load-update walk
 * over every task group's {cfs_rq, se} of one CPU, with the per-CPU pair
 * co-allocated and reached by one per-CPU offset ("after", the shape of
 * sched/group.h) against two arrays of nr_cpus pointers per group to
 * separately allocated objects ("before", -DCL_GROUP_POINTER_ARRAYS).
 *
 * sched/group.h picks its shape at compile time and this binary compares
 * both in one run, so both shapes are built here over the real
 * struct cl_cfs_rq and struct cl_sched_entity (same sizes and field
 * offsets as sched/'s; after: struct cl_tg_percpu from group.h itself).
 * examples/coalloc.c prints what one leaf-to-root walk touches; this file
 * measures the kernel's hot loop, update_blocked_averages(): for one CPU,
 * every group's queue, leaves first; decay the queue's load, update the
 * group entity's average, propagate it to the parent queue (se->cfs_rq).
 *   before: cfs_rq = tg->cfs_rq_arr[cpu]; se = cfs_rq->tg->se_arr[cpu]
 *           (objects allocated per group per CPU, interleaved, like
 *           alloc_fair_sched_group()'s kzalloc_node loop)
 *   after:  cfs_rq = cl_percpu_ptr(tg->pcpu, cpu); se = CL_SIBLING(cfs_rq)
 * Trees: width 10 depth 3 (1110 groups + root) and width 4 depth 5 (1364 +
 * root), the kernel patch's two configurations, on 64 simulated CPUs (every
 * group has 64 per-CPU copies; the walk is for CPU 37; only the memory
 * layout depends on the CPU count, so no real CPU is needed per copy).
 *
 * (a) Time per walk, ns, median of --runs runs, pinned to one allowed CPU:
 *     "warm" = the walk repeated back to back; "cold" = each walk after
 *     streaming over 64 MiB (evicts the caches of this VM; L3 is 32 MiB).
 * (b) Simulated misses (cachegrind, D1 32K/8-way, LL 1M/8-way, 64 B lines,
 *     the explicit geometry of README.md §Benchmarks). The benchmark re-executes
 *     itself under valgrind with --child=VARIANT,...; D1 = D1mr + D1mw and
 *     LL = DLmr + DLmw from valgrind's summary on stderr.
 *     Set-up costs are removed by subtraction rather than --toggle-collect
 *     (a callgrind option; cachegrind 3.19 has none): each count is the
 *     difference between two children that build the same trees and differ
 *     only in the measured walks:
 *       warm: (walks = 10 + N) - (walks = 10), / N: steady state, the first
 *             (compulsory-miss) walks are in both and cancel;
 *       cold: (N x {flush 4 MiB; walk}) - (N x {flush 4 MiB}), / N: one walk
 *             on a cold cache (the flush misses the same in both).
 *     Valgrind is deterministic: one child per variant and count; the
 *     counts carry no min-max (the table repeats the single value).
 * Without valgrind on PATH, (b) is skipped (said on stderr and stdout).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cachelocal/percpu.h>
#include <cachelocal/sched/group.h>

#include "bench.h"

#define NR_SIM_CPUS 64
#define WALK_CPU 37
#define TIME_FLUSH_BYTES (64u << 20)
#define SIM_FLUSH_BYTES (4u << 20)

/* One task group with both shapes of its per-CPU part. */
struct gw_group {
	struct gw_group *parent;
	/* after: CPU 0's copy of the co-allocated pair (sched/group.h's shape) */
	struct cl_tg_percpu CL_PERCPU *pcpu;
	/* before: the two pointer arrays of the kernel before the change */
	struct cl_cfs_rq **cfs_rq_arr;
	struct cl_sched_entity **se_arr;
};

struct gw_tree {
	const char *name;
	int width, depth;
	int nr;                   /* groups, root included */
	struct gw_group **groups; /* breadth-first: root, level 1, level 2, ... */
	struct cl_percpu_pool *pool;
};

static void *xaligned(size_t size)
{
	void *p = aligned_alloc(CL_CACHELINE_SIZE, (size + CL_CACHELINE_SIZE - 1) &
						     ~(size_t)(CL_CACHELINE_SIZE - 1));

	if (!p) {
		perror("aligned_alloc");
		exit(1);
	}
	memset(p, 0, size);
	return p;
}

static void init_queue(struct cl_cfs_rq *q, struct gw_group *g, unsigned cpu, int idx)
{
	q->load.weight = 1024u + (unsigned long)(idx % 7) * 100u;
	q->avg.load_sum = (uint64_t)idx * 32u + cpu;
	q->cpu = cpu;
	q->tg = (struct cl_task_group *)g; /* the owner; only compared, never dereferenced as such */
}

/* Build a tree of width^1 + ... + width^depth groups under a root, both shapes. */
static void tree_build(struct gw_tree *t, const char *name, int width, int depth)
{
	int nr = 1, level_first = 0, level_n = 1;

	t->name = name;
	t->width = width;
	t->depth = depth;
	for (int d = 1, n = 1; d <= depth; d++) {
		n *= width;
		nr += n;
	}
	t->nr = nr;
	t->groups = calloc((size_t)nr, sizeof(*t->groups));
	{
		struct cl_percpu_pool_attr attr = { 0, NR_SIM_CPUS, 0 };

		t->pool = cl_percpu_pool_create(&attr);
	}
	if (!t->groups || !t->pool) {
		perror("tree_build");
		exit(1);
	}
	/* groups, breadth-first */
	t->groups[0] = xaligned(sizeof(struct gw_group));
	for (int d = 1, at = 1; d <= depth; d++) {
		int next_first = at;

		for (int p = level_first; p < level_first + level_n; p++)
			for (int w = 0; w < width; w++) {
				t->groups[at] = xaligned(sizeof(struct gw_group));
				t->groups[at++]->parent = t->groups[p];
			}
		level_n = at - next_first;
		level_first = next_first;
	}
	/* per-CPU parts, in creation order (the kernel's alloc_fair_sched_group) */
	for (int i = 0; i < nr; i++) {
		struct gw_group *g = t->groups[i];

		g->pcpu = cl_percpu_alloc(t->pool, sizeof(struct cl_tg_percpu),
					  _Alignof(struct cl_tg_percpu));
		g->cfs_rq_arr = calloc(NR_SIM_CPUS, sizeof(*g->cfs_rq_arr));
		g->se_arr = calloc(NR_SIM_CPUS, sizeof(*g->se_arr));
		if (!g->pcpu || !g->cfs_rq_arr || !g->se_arr) {
			perror("alloc");
			exit(1);
		}
		for (unsigned cpu = 0; cpu < NR_SIM_CPUS; cpu++) {
			g->cfs_rq_arr[cpu] = xaligned(sizeof(struct cl_cfs_rq));
			g->se_arr[cpu] = i ? xaligned(sizeof(struct cl_sched_entity)) : NULL;
		}
	}
	/* same values in both shapes; se->cfs_rq = the parent's queue on that CPU */
	for (int i = 0; i < nr; i++) {
		struct gw_group *g = t->groups[i];

		for (unsigned cpu = 0; cpu < NR_SIM_CPUS; cpu++) {
			struct cl_tg_percpu *pc = cl_percpu_ptr(g->pcpu, cpu);

			init_queue(&pc->cfs_rq, g, cpu, i);
			init_queue(g->cfs_rq_arr[cpu], g, cpu, i);
			if (g->parent) {
				pc->se.cfs_rq = &cl_percpu_ptr(g->parent->pcpu, cpu)->cfs_rq;
				pc->se.my_q = &pc->cfs_rq;
				g->se_arr[cpu]->cfs_rq = g->parent->cfs_rq_arr[cpu];
				g->se_arr[cpu]->my_q = g->cfs_rq_arr[cpu];
			}
		}
	}
}

static void tree_free(struct gw_tree *t)
{
	for (int i = 0; i < t->nr; i++) {
		struct gw_group *g = t->groups[i];

		for (unsigned cpu = 0; cpu < NR_SIM_CPUS; cpu++) {
			free(g->cfs_rq_arr[cpu]);
			free(g->se_arr[cpu]);
		}
		free(g->cfs_rq_arr);
		free(g->se_arr);
		cl_percpu_free(t->pool, g->pcpu);
		free(g);
	}
	free(t->groups);
	cl_percpu_pool_destroy(t->pool);
}

/* The per-group work of update_blocked_averages(): same in both shapes. */
static inline void update_one(struct cl_cfs_rq *q, struct cl_sched_entity *se, uint64_t now)
{
	q->avg.load_sum = q->avg.load_sum - (q->avg.load_sum >> 5) + q->load.weight;
	q->avg.load_avg = (unsigned long)(q->avg.load_sum >> 5);
	q->avg.last_update_time = now;
	if (se) {
		struct cl_cfs_rq *parent = se->cfs_rq;

		se->avg.load_avg = q->avg.load_avg;
		se->avg.last_update_time = now;
		parent->tg_load_avg_contrib += (long)(se->avg.load_avg & 1023);
	}
}

/* Walks leaves first (reverse breadth-first), like the leaf_cfs_rq list. */
static __attribute__((noinline)) void walk_before(const struct gw_tree *t, unsigned cpu,
						  uint64_t now)
{
	for (int i = t->nr - 1; i >= 0; i--) {
		struct cl_cfs_rq *q = t->groups[i]->cfs_rq_arr[cpu];
		const struct gw_group *owner = (const struct gw_group *)q->tg;

		update_one(q, owner->se_arr[cpu], now);
	}
}

static __attribute__((noinline)) void walk_after(const struct gw_tree *t, unsigned cpu,
						 uint64_t now)
{
	for (int i = t->nr - 1; i >= 0; i--) {
		struct cl_tg_percpu *pc = cl_percpu_ptr(t->groups[i]->pcpu, cpu);
		struct cl_cfs_rq *q = &pc->cfs_rq;

		update_one(q, i ? CL_SIBLING(q, struct cl_tg_percpu, cfs_rq, se) : NULL, now);
	}
}

static void walk(const struct gw_tree *t, int after, unsigned cpu, uint64_t now)
{
	if (after)
		walk_after(t, cpu, now);
	else
		walk_before(t, cpu, now);
}

/* A checksum of CPU cpu's queues, to show the two shapes computed the same. */
static uint64_t checksum(const struct gw_tree *t, int after, unsigned cpu)
{
	uint64_t s = 0;

	for (int i = 0; i < t->nr; i++) {
		const struct cl_cfs_rq *q = after ? &cl_percpu_ptr(t->groups[i]->pcpu, cpu)->cfs_rq
						  : t->groups[i]->cfs_rq_arr[cpu];

		s = s * 31 + q->avg.load_sum + (uint64_t)q->tg_load_avg_contrib;
	}
	return s;
}

static unsigned char *flush_buf;

static void flush(size_t bytes)
{
	static unsigned char salt;

	salt++;
	for (size_t i = 0; i < bytes; i += CL_CACHELINE_SIZE)
		flush_buf[i] = (unsigned char)(flush_buf[i] + salt);
	BENCH_KEEP(flush_buf[0]);
}

static void make_tree(struct gw_tree *t, int which)
{
	if (which == 0)
		tree_build(t, "w10d3", 10, 3);
	else
		tree_build(t, "w4d5", 4, 5);
}

/*
 * Child mode (under cachegrind): --child=VARIANT,TREE,WALKS,FLUSH
 * VARIANT before|after, TREE 0|1, WALKS measured walks, FLUSH 1 = flush
 * before each (or instead of each, if WALKS is negative: -N = N flushes and
 * no walk, the cold baseline).
 */
static int child_main(const char *spec)
{
	char variant[16];
	int which, walks, do_flush, nflush;
	struct gw_tree t;

	if (sscanf(spec, "%15[a-z],%d,%d,%d", variant, &which, &walks, &do_flush) != 4)
		return 2;
	flush_buf = calloc(1, SIM_FLUSH_BYTES);
	if (!flush_buf)
		return 1;
	make_tree(&t, which);
	nflush = walks < 0 ? -walks : walks;
	for (int i = 0; i < nflush; i++) {
		if (do_flush)
			flush(SIM_FLUSH_BYTES);
		if (walks > 0)
			walk(&t, !strcmp(variant, "after"), WALK_CPU, (uint64_t)i + 1);
	}
	printf("%llu\n", (unsigned long long)checksum(&t, !strcmp(variant, "after"), WALK_CPU));
	tree_free(&t);
	free(flush_buf);
	return 0;
}

/* Parse "==pid== D1  misses:  1,234 ( ..." style numbers. */
static long long parse_count(const char *line)
{
	long long v = 0;
	int any = 0;

	for (; *line && *line != '('; line++) {
		if (isdigit((unsigned char)*line)) {
			v = v * 10 + (*line - '0');
			any = 1;
		} else if (*line != ',' && any) {
			break;
		}
	}
	return any ? v : -1;
}

/* Run one child under cachegrind; D1 and LL data misses. 0 on success. */
static int run_child(const char *self, const char *variant, int which, int walks, int do_flush,
		     long long *d1, long long *ll)
{
	char cmd[1024], line[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 "
		 "--LL=1048576,8,64 --cachegrind-out-file=/dev/null '%s' --child=%s,%d,%d,%d "
		 "2>&1 >/dev/null",
		 self, variant, which, walks, do_flush);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	*d1 = *ll = -1;
	while (fgets(line, sizeof(line), p)) {
		const char *s;

		if ((s = strstr(line, "D1  misses:")))
			*d1 = parse_count(s + 11);
		else if ((s = strstr(line, "LLd misses:")))
			*ll = parse_count(s + 11);
	}
	if (pclose(p) != 0 || *d1 < 0 || *ll < 0)
		return -1;
	return 0;
}

static int have_valgrind(void)
{
	return system("valgrind --version >/dev/null 2>&1") == 0;
}

int main(int argc, char **argv)
{
	static const char *const vname[2] = { "before (ptr arrays)", "after (percpu pair)" };
	struct bench b;
	char self[4096];
	int nr_trees = 2, warm_walks, cold_walks, sim_walks;
	double warm[2][BENCH_MAX_RUNS], cold[2][BENCH_MAX_RUNS];
	int cpu;
	char placement[32];

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--child=", 8))
			return child_main(argv[i] + 8);

	bench_only_shared_args("group_walk", argc, argv);
	bench_init(&b, "group_walk", argc, argv);
	warm_walks = b.smoke ? 5 : b.quick ? 50 : 400;
	cold_walks = b.smoke ? 1 : b.quick ? 5 : 20;
	sim_walks = b.smoke ? 2 : b.quick ? 10 : 40;
	if (b.quick)
		nr_trees = 1; /* quick: w10d3 (1111 groups) only; both trees in the long mode */
	flush_buf = calloc(1, TIME_FLUSH_BYTES);
	if (!flush_buf) {
		perror("calloc");
		return 1;
	}
	cpu = bench_allowed_cpu(0);
	bench_pin(cpu);
	snprintf(placement, sizeof(placement), "pinned:%d", cpu);
	printf("# T5: walk every group's {cfs_rq, se} of simulated CPU %d of %d; sizeof cl_cfs_rq %zu, cl_sched_entity %zu, cl_tg_percpu %zu; threads column = groups\n",
	       WALK_CPU, NR_SIM_CPUS, sizeof(struct cl_cfs_rq), sizeof(struct cl_sched_entity),
	       sizeof(struct cl_tg_percpu));

	for (int which = 0; which < nr_trees; which++) {
		struct gw_tree t;
		char cname[64];
		double mw[2], mc[2];

		make_tree(&t, which);
		bench_progress(&b, "tree %s: %d groups x %d CPUs built; timing %d runs", t.name, t.nr,
			       NR_SIM_CPUS, b.runs);
		for (int r = 0; r < b.runs; r++) {
			for (int v = 0; v < 2; v++) {
				int after = r % 2 ? !v : v; /* alternate which goes first */
				unsigned long long t0;

				for (int k = 0; k < 3; k++)
					walk(&t, after, WALK_CPU, (uint64_t)k);
				t0 = bench_now_ns();
				for (int k = 0; k < warm_walks; k++)
					walk(&t, after, WALK_CPU, (uint64_t)k);
				warm[after][r] = (double)(bench_now_ns() - t0) / warm_walks;

				cold[after][r] = 0;
				for (int k = 0; k < cold_walks; k++) {
					flush(TIME_FLUSH_BYTES);
					t0 = bench_now_ns();
					walk(&t, after, WALK_CPU, (uint64_t)k);
					cold[after][r] += (double)(bench_now_ns() - t0);
				}
				cold[after][r] /= cold_walks;
			}
		}
		if (checksum(&t, 0, WALK_CPU) != checksum(&t, 1, WALK_CPU)) {
			fprintf(stderr, "group_walk: the two shapes disagree on tree %s\n", t.name);
			return 1;
		}
		for (int v = 0; v < 2; v++) {
			snprintf(cname, sizeof(cname), "walk warm %s", t.name);
			mw[v] = bench_report(&b, cname, vname[v], placement, t.nr, warm[v], b.runs,
					     "ns/walk");
		}
		for (int v = 0; v < 2; v++) {
			snprintf(cname, sizeof(cname), "walk cold %s", t.name);
			mc[v] = bench_report(&b, cname, vname[v], placement, t.nr, cold[v], b.runs,
					     "ns/walk");
		}
		snprintf(cname, sizeof(cname), "walk warm %s", t.name);
		bench_ratio(&b, cname, "time before / after", mw[0], mw[1]);
		snprintf(cname, sizeof(cname), "walk cold %s", t.name);
		bench_ratio(&b, cname, "time before / after", mc[0], mc[1]);
		tree_free(&t);
	}
	free(flush_buf);

	if (!have_valgrind()) {
		bench_progress(&b, "valgrind not found: cache-miss counts skipped");
		printf("# cachegrind counts skipped: valgrind not on PATH\n");
		return bench_finish(&b);
	}
	{
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0) {
			perror("readlink /proc/self/exe");
			return 1;
		}
		self[n] = 0;
	}
	printf("# cachegrind D1 32K/8w, LL 1M/8w, 64 B: data misses per walk, set-up subtracted; deterministic: one child per count, min = max\n");
	for (int which = 0; which < nr_trees; which++) {
		static const char *const tname[2] = { "w10d3", "w4d5" };
		static const int tnr[2] = { 1111, 1365 };
		double res[2][2][2]; /* [warm/cold][variant][d1/ll] */

		for (int v = 0; v < 2; v++) {
			const char *var = v ? "after" : "before";
			long long d1a, lla, d1b, llb;

			bench_progress(&b, "cachegrind %s %s: warm", tname[which], var);
			if (run_child(self, var, which, 10 + sim_walks, 0, &d1a, &lla) ||
			    run_child(self, var, which, 10, 0, &d1b, &llb)) {
				fprintf(stderr, "group_walk: cachegrind child failed\n");
				return 1;
			}
			res[0][v][0] = (double)(d1a - d1b) / sim_walks;
			res[0][v][1] = (double)(lla - llb) / sim_walks;
			bench_progress(&b, "cachegrind %s %s: cold", tname[which], var);
			if (run_child(self, var, which, sim_walks, 1, &d1a, &lla) ||
			    run_child(self, var, which, -sim_walks, 1, &d1b, &llb)) {
				fprintf(stderr, "group_walk: cachegrind child failed\n");
				return 1;
			}
			res[1][v][0] = (double)(d1a - d1b) / sim_walks;
			res[1][v][1] = (double)(lla - llb) / sim_walks;
		}
		for (int c = 0; c < 2; c++)
			for (int m = 0; m < 2; m++) {
				char cname[64];

				snprintf(cname, sizeof(cname), "%s %s %s", m ? "LLd miss" : "D1 miss",
					 c ? "cold" : "warm", tname[which]);
				/* deterministic: one count per variant (min = max = median) */
				for (int v = 0; v < 2; v++)
					bench_report(&b, cname, vname[v], "cachegrind", tnr[which],
						     &res[c][v][m], 1, "misses/walk");
				bench_ratio(&b, cname, "misses after / before", res[c][1][m],
					    res[c][0][m]);
			}
	}
	return bench_finish(&b);
}
