/* SPDX-License-Identifier: MIT */
/*
 * bench/tbench.c - per-operation cost of the cachelocal M:N runtime's
 * primitives, on one worker (pinned to the first allowed CPU):
 *   spawn+join   a task spawns a task that returns at once and joins it
 *   yield        two tasks yield to each other (ns per yield: one switch)
 *   mutex        lock + unlock of an uncontended cl_mutex
 *   condvar      two tasks ping-pong a turn through a cl_mutex + cl_cond
 *                (ns per round trip: two waits, two signals)
 * -r ROUNDS operations per run (default 10,000,000; --quick 100,000).
 */
#include <cachelocal/sched/runtime.h>

#include "rtbench.h"

static long rounds;

static void *nop_fn(void *p)
{
	return p;
}

static void *spawn_join_fn(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;

	for (long i = 0; i < rounds; i++) {
		struct cl_rt_task *t = cl_spawn(rt, NULL, nop_fn, NULL);

		if (!t || cl_join(t, NULL))
			return (void *)1;
	}
	return NULL;
}

static void *yield_fn(void *p)
{
	(void)p;
	for (long i = 0; i < rounds; i++)
		cl_yield();
	return NULL;
}

static void *mutex_fn(void *p)
{
	struct cl_mutex *m = (struct cl_mutex *)p;

	for (long i = 0; i < rounds; i++) {
		cl_mutex_lock(m);
		cl_mutex_unlock(m);
	}
	return NULL;
}

struct pp {
	struct cl_mutex m;
	struct cl_cond cv;
	int turn;
};

static struct pp pp;

static void *cond_fn(void *p)
{
	int me = (int)(intptr_t)p;

	for (long i = 0; i < rounds; i++) {
		cl_mutex_lock(&pp.m);
		while (pp.turn != me)
			cl_cond_wait(&pp.cv, &pp.m);
		pp.turn = !me;
		cl_cond_signal(&pp.cv);
		cl_mutex_unlock(&pp.m);
	}
	return NULL;
}

enum { SPAWN, YIELD, MUTEX, COND, NCASES };
static const char *const case_name[] = { "spawn+join", "yield", "mutex lock+unlock",
					 "condvar ping-pong" };

/* One run of case @c: ns per op, or -1. */
static double tb_run(int c)
{
	struct cl_runtime_attr ra;
	struct cl_runtime *rt;
	struct cl_rt_task *t[2] = { NULL, NULL };
	struct cl_mutex m;
	uint64_t t0, t1;
	int ok = 1, n = 1;
	double ops = (double)rounds;

	memset(&ra, 0, sizeof(ra));
	ra.nr_workers = 1;
	rt = cl_runtime_create(&ra);
	if (!rt)
		return -1;
	cl_mutex_init(&m);
	cl_mutex_init(&pp.m);
	cl_cond_init(&pp.cv);
	pp.turn = 0;
	t0 = bench_now_ns();
	switch (c) {
	case SPAWN:
		t[0] = cl_spawn(rt, NULL, spawn_join_fn, rt);
		break;
	case YIELD:
		t[0] = cl_spawn(rt, NULL, yield_fn, NULL);
		t[1] = cl_spawn(rt, NULL, yield_fn, NULL);
		n = 2;
		ops = 2.0 * (double)rounds;
		break;
	case MUTEX:
		t[0] = cl_spawn(rt, NULL, mutex_fn, &m);
		break;
	default:
		t[0] = cl_spawn(rt, NULL, cond_fn, (void *)(intptr_t)0);
		t[1] = cl_spawn(rt, NULL, cond_fn, (void *)(intptr_t)1);
		n = 2;
		break;
	}
	for (int i = 0; i < n; i++) {
		void *r = NULL;

		if (!t[i] || cl_join(t[i], &r) || r)
			ok = 0;
	}
	t1 = bench_now_ns();
	if (cl_runtime_destroy(rt))
		ok = 0;
	return ok ? (double)(t1 - t0) / ops : -1;
}

static void usage(void)
{
	printf("usage: tbench [-r ROUNDS] [--runs N] [--quick] [--json | --json=PATH] [--help]\n"
	       "  -r ROUNDS    operations per run (default 10000000; --quick: 100000)\n");
	bench_usage("tbench");
}

int main(int argc, char **argv)
{
	struct bench b;
	double s[BENCH_MAX_RUNS];

	rounds = -1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "-r")) {
			rounds = rtb_num_arg("tbench", argc, argv, &i, 1, 1000000000L);
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("tbench", argv[i]);
		}
	}
	bench_init(&b, "tbench", argc, argv);
	if (rounds < 0)
		rounds = b.quick ? 100000 : 10000000;
	if (!b.json_only)
		printf("# one worker, context switch %s, %ld operations per run\n",
		       cl_runtime_context_kind(), rounds);
	for (int c = 0; c < NCASES; c++) {
		long full = rounds;

		rounds = full / 10 + 1;
		tb_run(c); /* warm-up */
		rounds = full;
		for (int r = 0; r < b.runs; r++) {
			s[r] = tb_run(c);
			if (s[r] < 0) {
				fprintf(stderr, "tbench: %s failed\n", case_name[c]);
				return 1;
			}
			bench_progress(&b, "%s run %d: %.1f ns/op", case_name[c], r, s[r]);
		}
		bench_report(&b, case_name[c], "cachelocal", "1 worker", c == YIELD || c == COND ? 2 : 1,
			     s, b.runs, "ns/op");
	}
	return bench_finish(&b);
}
