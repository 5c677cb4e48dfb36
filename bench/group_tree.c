/* SPDX-License-Identifier: MIT */
/*
 * bench/group_tree.c - T5 through the real sched/ code: the seed's group
 * trees (depth 3 x width 10: 1110 groups; depth 5 x width 4: 1364), one task
 * per leaf group, all queued on CPU 0 of an 8-CPU instance, each top-level
 * group capped at 1 ms of runtime per 100 ms period; the hot walks for that
 * CPU:
 *
 *   blocked-load    cl_tg_update_blocked_load(root, 0, now): every group's
 *                   queue on CPU 0, leaves first;
 *   dequeue+enqueue cl_rq_dequeue(SLEEP) + cl_rq_enqueue(WAKEUP) of each
 *                   leaf task in turn: the entity chain to the root and back;
 *   throttle        one bandwidth period: cl_rq_pick_next() runs each
 *                   top-level group's pick for 1 ms, cl_rq_put_prev() (inside
 *                   the next pick) charges it and throttles the group's queue
 *                   (dequeue of its entity, throttle_count over its subtree),
 *                   until every top-level group is throttled; then
 *                   cl_sched_bandwidth_refill() and cl_rq_bandwidth_update()
 *                   unthrottle them all (walk of every group's queue on
 *                   CPU 0, requeue, throttle_count back down).
 *
 * The per-CPU layout of the groups comes from the headers: the Makefile
 * builds this file twice, group_tree (co-allocated {cfs_rq, se} per CPU,
 * one per-CPU offset) and group_tree_ptr_arrays (-DCL_GROUP_POINTER_ARRAYS:
 * two arrays of nr_cpus pointers per group to separately allocated objects);
 * scripts/bench_report.py runs both, alternating, and compares them.
 *
 * Default: time, median of --runs runs, pinned: the blocked-load walk warm
 * (back to back) and cold (each after streaming over 64 MiB), dequeue +
 * enqueue (ns per task), throttle (ns per period).
 *
 * --misses: instead of timing, count D1 and LL data misses (D1mr + D1mw,
 * DLmr + DLmw) of the same real functions with cachegrind, geometry
 * --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,8,64 (../shared/DESIGN.md).
 * The binary re-executes itself under valgrind (--child=...). cachegrind
 * 3.19 cannot switch counting on and off, so set-up is removed by
 * subtraction between two children that build the same tree and differ
 * only in the measured walks:
 *   warm: (2 + N walks) - (2 walks), / N: steady state;
 *   cold: N x {flush 4 MiB; walk} - N x {flush 4 MiB}, / N: one walk on a
 *         cache emptied by the flush (4 MiB > the 1 MiB simulated LL).
 * Valgrind is deterministic: one child per count; min = max.
 *
 * Trees: timing, the depth 3 tree in quick mode, both in the long mode;
 * --misses, both trees (a few seconds each); smoke, depth 2 x width 3.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

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
#define GT_FLUSH (64u << 20)     /* timing: evicts this VM's caches */
#define GT_SIM_FLUSH (4u << 20)  /* cachegrind: 4x the simulated LL */
#define GT_QUOTA_NS CL_TG_BW_SLICE_NS

enum gt_op { GT_BLOCKED, GT_REQUEUE, GT_THROTTLE, GT_NONE, GT_NR_OPS = GT_NONE };

static const char *const gt_op_name[GT_NR_OPS] = { "blocked-load", "dequeue+enqueue", "throttle" };

static const struct {
	const char *name;
	int depth, width;
} trees[] = { { "d3w10", 3, 10 }, { "d5w4", 5, 4 }, { "d2w3", 2, 3 } };

struct gt {
	struct cl_sched *s;
	struct cl_task_group **leaves;
	struct cl_task *tasks;
	int nr_leaves, nr_groups, width;
	uint64_t now;
};

static int build(struct gt *t, struct cl_task_group *parent, int depth, int width, int top)
{
	for (int i = 0; i < width; i++) {
		struct cl_task_group *g = cl_task_group_create(parent, 1024);

		if (!g)
			return -1;
		t->nr_groups++;
		if (top && cl_tg_set_bandwidth(g, GT_QUOTA_NS, CL_TG_DEFAULT_PERIOD_NS))
			return -1;
		if (depth > 1) {
			if (build(t, g, depth - 1, width, 0))
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
	t->width = width;
	t->now = 1000000;
	t->s = cl_sched_create(GT_CPUS, NULL);
	t->leaves = calloc((size_t)leaves, sizeof(*t->leaves));
	t->tasks = aligned_alloc(CL_CACHELINE_SIZE, sizeof(*t->tasks) * (size_t)leaves);
	if (!t->s || !t->leaves || !t->tasks ||
	    build(t, cl_sched_root_group(t->s), depth, width, 1))
		return -1;
	rq = cl_sched_rq(t->s, 0);
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, t->now);
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

static void fail(const char *what)
{
	perror(what);
	exit(1);
}

static void op_blocked(struct gt *t)
{
	struct cl_rq *rq = cl_sched_rq(t->s, 0);

	t->now += 1000000;
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, t->now);
	BENCH_KEEP(cl_tg_update_blocked_load(cl_sched_root_group(t->s), 0, t->now));
	cl_rq_unlock(rq);
}

static void op_requeue(struct gt *t)
{
	struct cl_rq *rq = cl_sched_rq(t->s, 0);

	cl_rq_lock(rq);
	t->now += 1000;
	cl_rq_update_clock(rq, t->now);
	for (int i = 0; i < t->nr_leaves; i++)
		if (cl_rq_dequeue(rq, &t->tasks[i], CL_DEQUEUE_SLEEP) ||
		    cl_rq_enqueue(rq, &t->tasks[i], CL_ENQUEUE_WAKEUP))
			fail("group_tree: requeue");
	cl_rq_unlock(rq);
}

/*
 * One bandwidth period: run a pick of each top-level group for one quota
 * until all of them are throttled, then refill and unthrottle. Exits if the
 * real code did not throttle and unthrottle exactly the top-level groups
 * (the walk would not be the one this measures).
 */
static void op_throttle(struct gt *t)
{
	struct cl_rq *rq = cl_sched_rq(t->s, 0);
	int picks = 0;
	unsigned int back;

	cl_rq_lock(rq);
	do {
		t->now += GT_QUOTA_NS;
		cl_rq_update_clock(rq, t->now);
		picks++;
	} while (cl_rq_pick_next(rq) && picks <= t->width + 1);
	if (rq->nr_running || picks != t->width + 1) {
		cl_rq_unlock(rq);
		errno = EPROTO;
		fail("group_tree: throttle (not every top-level group throttled once)");
	}
	t->now += CL_TG_DEFAULT_PERIOD_NS;
	cl_rq_update_clock(rq, t->now);
	cl_rq_unlock(rq);
	BENCH_KEEP(cl_sched_bandwidth_refill(cl_sched_root_group(t->s), t->now));
	cl_rq_lock(rq);
	back = cl_rq_bandwidth_update(rq);
	if (back != (unsigned int)t->width || rq->nr_running != (unsigned int)t->nr_leaves) {
		cl_rq_unlock(rq);
		errno = EPROTO;
		fail("group_tree: unthrottle (not every top-level group came back)");
	}
	cl_rq_unlock(rq);
}

static void op(struct gt *t, enum gt_op o)
{
	switch (o) {
	case GT_BLOCKED:
		op_blocked(t);
		break;
	case GT_REQUEUE:
		op_requeue(t);
		break;
	case GT_THROTTLE:
		op_throttle(t);
		break;
	case GT_NONE:
		break;
	}
}

static void flush(char *buf, size_t bytes)
{
	static char salt;

	salt++;
	for (size_t k = 0; k < bytes; k += 64)
		buf[k] = (char)(buf[k] + salt);
	BENCH_KEEP(buf[0]);
}

/* ns per op over n ops, each after a flush if @buf. */
static double timed(struct gt *t, enum gt_op o, int n, char *buf)
{
	unsigned long long ns = 0;

	for (int i = 0; i < n; i++) {
		unsigned long long t0;

		if (buf)
			flush(buf, GT_FLUSH);
		t0 = bench_now_ns();
		op(t, o);
		ns += bench_now_ns() - t0;
	}
	return (double)ns / n;
}

/*
 * --child=OP,TREE,N,FLUSH (under cachegrind): build tree TREE, then N times
 * {flush 4 MiB if FLUSH; OP}; OP 3 (GT_NONE) runs no walk. Prints the
 * queue count so the work is observable.
 */
static int child_main(const char *spec)
{
	int o, k, n, do_flush;
	struct gt t;
	char *buf = NULL;

	if (sscanf(spec, "%d,%d,%d,%d", &o, &k, &n, &do_flush) != 4 || o < 0 || o > GT_NONE ||
	    k < 0 || k > 2 || n < 0) {
		fprintf(stderr, "group_tree: bad --child=%s\n", spec);
		return 2;
	}
	urcu_memb_register_thread();
	if (do_flush && !(buf = calloc(1, GT_SIM_FLUSH)))
		fail("calloc");
	if (setup(&t, trees[k].depth, trees[k].width))
		fail("group_tree: setup");
	for (int i = 0; i < n; i++) {
		if (buf)
			flush(buf, GT_SIM_FLUSH);
		op(&t, (enum gt_op)o);
	}
	printf("%u\n", cl_sched_rq(t.s, 0)->nr_running);
	urcu_memb_unregister_thread();
	return 0;
}

/* The number after "D1  misses:" etc. in valgrind's summary ("1,234"). */
static long long parse_count(const char *s)
{
	long long v = 0;
	int any = 0;

	for (; *s && *s != '('; s++) {
		if (isdigit((unsigned char)*s)) {
			v = v * 10 + (*s - '0');
			any = 1;
		} else if (*s != ',' && any) {
			break;
		}
	}
	return any ? v : -1;
}

/* One child under cachegrind: its D1 and LL data misses. 0 on success. */
static int cachegrind(const char *self, int o, int k, int n, int do_flush, long long *d1,
		      long long *ll)
{
	char cmd[4352], line[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 "
		 "--LL=1048576,8,64 --cachegrind-out-file=/dev/null '%s' --child=%d,%d,%d,%d "
		 "2>&1 >/dev/null",
		 self, o, k, n, do_flush);
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

static int misses_main(struct bench *b, int first, int last)
{
	static const char *const unit[GT_NR_OPS] = { "misses/walk", "misses/round",
						     "misses/period" };
	char self[4096];
	int n = b->smoke ? 1 : b->quick ? 4 : 10;
	ssize_t len;

	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		bench_progress(b, "valgrind not found: cache-miss counts skipped");
		printf("# cachegrind counts skipped: valgrind not on PATH\n");
		return 77;
	}
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		fail("readlink /proc/self/exe");
	self[len] = 0;
	if (!b->json_only)
		printf("# cachegrind D1 32K/8w, LL 1M/8w, 64 B lines: data misses per walk, set-up "
		       "subtracted; deterministic, min = max\n");
	for (int k = first; k <= last; k++) {
		long long d1f, llf;

		bench_progress(b, "%s: cachegrind, %d children of %d walks", trees[k].name,
			       1 + 3 * GT_NR_OPS, n);
		if (cachegrind(self, GT_NONE, k, n, 1, &d1f, &llf)) {
			fprintf(stderr, "group_tree: cachegrind child failed\n");
			return 1;
		}
		for (int o = 0; o < GT_NR_OPS; o++) {
			long long d1a, lla, d1b, llb, d1c, llc;
			double v[2][2]; /* [warm, cold][D1, LL] */
			char cn[64];
			int groups = trees[k].width;

			for (int d = 1; d < trees[k].depth; d++)
				groups = groups * trees[k].width + trees[k].width;
			if (cachegrind(self, o, k, 2 + n, 0, &d1a, &lla) ||
			    cachegrind(self, o, k, 2, 0, &d1b, &llb) ||
			    cachegrind(self, o, k, n, 1, &d1c, &llc)) {
				fprintf(stderr, "group_tree: cachegrind child failed\n");
				return 1;
			}
			v[0][0] = (double)(d1a - d1b) / n;
			v[0][1] = (double)(lla - llb) / n;
			v[1][0] = (double)(d1c - d1f) / n;
			v[1][1] = (double)(llc - llf) / n;
			for (int c = 0; c < 2; c++)
				for (int m = 0; m < 2; m++) {
					snprintf(cn, sizeof(cn), "%s miss %s %s %s", m ? "LLd" : "D1",
						 c ? "cold" : "warm", gt_op_name[o], trees[k].name);
					bench_report(b, cn, GT_VARIANT, "cachegrind", groups, &v[c][m], 1,
						     unit[o]);
				}
		}
	}
	return bench_finish(b);
}

static void usage(void)
{
	bench_usage("group_tree [--misses]");
	printf("  --misses     D1/LL misses by cachegrind instead of time (needs valgrind)\n"
	       "T5 on the real sched/ code (" GT_VARIANT " build): blocked-load walk, dequeue+"
	       "enqueue, throttle/unthrottle\n");
}

int main(int argc, char **argv)
{
	struct bench b;
	double warm[BENCH_MAX_RUNS], cold[BENCH_MAX_RUNS], rq[BENCH_MAX_RUNS], thr[BENCH_MAX_RUNS];
	char *buf;
	int first, last, nwarm, ncold, nreq, nthr, misses = 0;

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--child=", 8))
			return child_main(argv[i] + 8);
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		}
		if (!strcmp(argv[i], "--misses")) {
			misses = 1;
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			fprintf(stderr, "group_tree: unknown %s '%s' (see --help)\n",
				argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return 2;
		}
	}
	bench_init(&b, "group_tree", argc, argv);
	first = b.smoke ? 2 : 0;
	last = b.smoke ? 2 : b.quick ? 0 : 1;
	if (misses) /* deterministic and a few seconds per tree: both trees unless smoke */
		return misses_main(&b, first, b.smoke ? 2 : 1);

	urcu_memb_register_thread();
	bench_pin(bench_allowed_cpu(0));
	nwarm = b.smoke ? 3 : b.quick ? 50 : 200;
	ncold = b.smoke ? 1 : b.quick ? 3 : 10;
	nreq = b.smoke ? 2 : b.quick ? 20 : 100;
	nthr = b.smoke ? 2 : b.quick ? 20 : 100;
	buf = calloc(1, GT_FLUSH);
	if (!buf)
		fail("calloc");
	for (int k = first; k <= last; k++) {
		struct gt t;
		char cn[64];

		if (setup(&t, trees[k].depth, trees[k].width))
			fail("group_tree: setup");
		bench_progress(&b, "%s: %d groups, %d leaf tasks on CPU 0", trees[k].name, t.nr_groups,
			       t.nr_leaves);
		for (int o = 0; o < GT_NR_OPS; o++)
			op(&t, (enum gt_op)o); /* first touch */
		for (int r = 0; r < b.runs; r++) {
			warm[r] = timed(&t, GT_BLOCKED, nwarm, NULL);
			cold[r] = timed(&t, GT_BLOCKED, ncold, buf);
			rq[r] = timed(&t, GT_REQUEUE, nreq, NULL) / t.nr_leaves;
			thr[r] = timed(&t, GT_THROTTLE, nthr, NULL);
		}
		snprintf(cn, sizeof(cn), "blocked-load walk warm %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_groups, warm, b.runs, "ns/walk");
		snprintf(cn, sizeof(cn), "blocked-load walk cold %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_groups, cold, b.runs, "ns/walk");
		snprintf(cn, sizeof(cn), "dequeue+enqueue %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.nr_leaves, rq, b.runs, "ns/task");
		snprintf(cn, sizeof(cn), "throttle+unthrottle %s", trees[k].name);
		bench_report(&b, cn, GT_VARIANT, "pinned", t.width, thr, b.runs, "ns/period");
		/* the instance is left to process exit: tearing down 1000+ groups is not measured */
	}
	free(buf);
	urcu_memb_unregister_thread();
	return bench_finish(&b);
}
