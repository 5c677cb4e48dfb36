/* SPDX-License-Identifier: MIT */
/*
 * bench/refill.c - T4 on the runtime: what the tasks the balancer moves pay.
 *
 * A runtime with two workers; NT tasks, each with its own working set of
 * WS bytes, all start on worker 0. Each task loops: one pass over its
 * working set (read-modify-write of every line, timed), then cl_yield(). The
 * runtime's balancer (cl_balance_run(): sched/balance.h) moves some tasks to
 * worker 1. A pass that runs on another worker than the task's previous pass
 * is its first run after a migration: its time is the refill cost. Reported:
 *   first pass after migration   ns per pass (mean per run)
 *   pass, same worker            ns per pass (the warm reference)
 *   throughput                   passes per ms of wall time, all tasks
 *   migrations                   moved passes per run
 * The detach order comes from the headers: refill (the library: the
 * balancer detaches from the tail of the MRU list, the least recently run
 * tasks) and refill_head (-DCL_DETACH_FROM_HEAD: from the head);
 * scripts/bench_report.py runs both and compares them. Needs two allowed
 * CPUs (exit 77).
 */
#include <cachelocal/sched/runtime.h>

#include "rtbench.h"

#ifdef CL_DETACH_FROM_HEAD
#define RF_VARIANT "head"
#else
#define RF_VARIANT "tail"
#endif

#define RF_NT 16
#define RF_WS (64u << 10)

struct rf_task {
	unsigned char *ws;
	long passes;
	int last_worker;
	uint64_t moved_ns, same_ns;
	long moved, same;
};

static struct rf_task rf[RF_NT];
static long rf_passes;

static void *rf_fn(void *p)
{
	struct rf_task *t = (struct rf_task *)p;

	t->last_worker = -1;
	for (long i = 0; i < rf_passes; i++) {
		int w = cl_worker_id();
		uint64_t t0 = bench_now_ns(), dt;

		for (size_t k = 0; k < RF_WS; k += 64)
			t->ws[k]++;
		dt = bench_now_ns() - t0;
		if (t->last_worker >= 0 && w != t->last_worker) {
			t->moved_ns += dt;
			t->moved++;
		} else if (t->last_worker >= 0) {
			t->same_ns += dt;
			t->same++;
		}
		t->last_worker = w;
		cl_yield();
	}
	return NULL;
}

/* One run: returns 0 and fills the four numbers, or -1. */
static int rf_run(double *moved_ns, double *same_ns, double *tput, double *nmoved)
{
	struct cl_runtime_attr ra;
	struct cl_spawn_attr sa;
	struct cl_runtime *rt;
	struct cl_rt_task *t[RF_NT];
	uint64_t t0, mns = 0, sns = 0;
	long m = 0, s = 0;

	memset(&ra, 0, sizeof(ra));
	ra.nr_workers = 2;
	rt = cl_runtime_create(&ra);
	if (!rt)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0);
	t0 = bench_now_ns();
	for (int i = 0; i < RF_NT; i++) {
		memset(&rf[i], 0, sizeof(rf[i]));
		rf[i].ws = calloc(1, RF_WS);
		t[i] = rf[i].ws ? cl_spawn(rt, &sa, rf_fn, &rf[i]) : NULL;
		if (!t[i])
			return -1;
	}
	for (int i = 0; i < RF_NT; i++)
		if (cl_join(t[i], NULL))
			return -1;
	*tput = (double)RF_NT * (double)rf_passes / ((double)(bench_now_ns() - t0) / 1e6);
	for (int i = 0; i < RF_NT; i++) {
		mns += rf[i].moved_ns;
		sns += rf[i].same_ns;
		m += rf[i].moved;
		s += rf[i].same;
		free(rf[i].ws);
	}
	*moved_ns = m ? (double)mns / (double)m : 0;
	*same_ns = s ? (double)sns / (double)s : 0;
	*nmoved = (double)m;
	return cl_runtime_destroy(rt) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct bench b;
	double mv[BENCH_MAX_RUNS], sm[BENCH_MAX_RUNS], tp[BENCH_MAX_RUNS], nm[BENCH_MAX_RUNS];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: refill [--runs N] [--quick] [--smoke] [--json | --json=PATH] [--help]\n"
			       "  %d tasks with %u KiB working sets start on worker 0 of 2; the first pass\n"
			       "  after the balancer moved a task vs a pass on the same worker, and throughput\n",
			       RF_NT, RF_WS >> 10);
			return 0;
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("refill", argv[i]);
		}
	}
	bench_init(&b, "refill", argc, argv);
	if (bench_nr_allowed_cpus() < 2) {
		fprintf(stderr, "refill: needs two allowed CPUs\n");
		return 77;
	}
	rf_passes = b.smoke ? 50 : b.quick ? 2000 : 20000;
	for (int r = 0; r < b.runs; r++)
		if (rf_run(&mv[r], &sm[r], &tp[r], &nm[r])) {
			perror("refill");
			return 1;
		}
	bench_report(&b, "first pass after migration", RF_VARIANT, "2 workers", RF_NT, mv, b.runs, "ns/pass");
	bench_report(&b, "pass, same worker", RF_VARIANT, "2 workers", RF_NT, sm, b.runs, "ns/pass");
	bench_report(&b, "throughput", RF_VARIANT, "2 workers", RF_NT, tp, b.runs, "passes/ms");
	bench_report(&b, "migrations", RF_VARIANT, "2 workers", RF_NT, nm, b.runs, "passes");
	return bench_finish(&b);
}
