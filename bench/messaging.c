/* SPDX-License-Identifier: MIT */
/*
 * bench/messaging.c - `perf bench sched messaging` (hackbench) on the
 * cachelocal M:N runtime: -g groups of 20 senders and 20 receivers; every
 * sender sends -l LOOPS 100-byte messages to each receiver of its group
 * (round robin over the receivers, as hackbench does); every receiver has
 * its own channel and reads LOOPS x 20 messages. Time: from releasing the
 * tasks (all spawned and parked on a start gate first, like hackbench's
 * ready/wakeup handshake) until every task is joined.
 *
 * --vs-kernel runs `perf bench sched messaging -t -g G -l L` (threads, the
 * same shape: 20 senders x 20 receivers per group) the same number of times.
 */
#include <cachelocal/sched/runtime.h>

#include "rtbench.h"

#define MSG_SIZE 100
#define NR_PAIRS 20
/* Channel capacity per receiver: a socket buffer holds a few hundred
 * 100-byte messages; 64 keeps senders running ahead without unbounded memory. */
#define CHAN_CAP 64

struct msg_group {
	struct cl_chan *rx[NR_PAIRS];
};

struct msg_ctx {
	struct cl_chan *gate;   /* closed to start */
	int *ready;             /* counts parked tasks; futex for main */
	int nr_tasks;
	long loops;
};

struct msg_task {
	struct msg_ctx *ctx;
	struct msg_group *g;
	int idx;
	int sender;
};

static void msg_ready_and_wait(struct msg_ctx *ctx)
{
	char c;

	if (__atomic_add_fetch(ctx->ready, 1, __ATOMIC_SEQ_CST) == ctx->nr_tasks)
		rtb_futex_wake(ctx->ready);
	cl_chan_recv(ctx->gate, &c); /* returns EPIPE when the gate closes */
}

static void *msg_task_fn(void *p)
{
	struct msg_task *t = (struct msg_task *)p;
	char buf[MSG_SIZE];

	memset(buf, t->idx, sizeof(buf));
	msg_ready_and_wait(t->ctx);
	if (t->sender) {
		for (long i = 0; i < t->ctx->loops; i++)
			for (int r = 0; r < NR_PAIRS; r++)
				if (cl_chan_send(t->g->rx[r], buf))
					return (void *)1;
	} else {
		for (long i = 0; i < t->ctx->loops * NR_PAIRS; i++)
			if (cl_chan_recv(t->g->rx[t->idx], buf))
				return (void *)1;
	}
	return NULL;
}

/* One run: seconds, or -1. */
static double msg_run(int groups, long loops)
{
	int n = groups * 2 * NR_PAIRS, ready = 0, ok = 1;
	struct msg_group *g = calloc((size_t)groups, sizeof(*g));
	struct msg_task *mt = calloc((size_t)n, sizeof(*mt));
	struct cl_rt_task **h = calloc((size_t)n, sizeof(*h));
	struct msg_ctx ctx = { cl_chan_create(1, 1), &ready, n, loops };
	struct cl_runtime *rt = cl_runtime_create(NULL);
	uint64_t ns = 0;

	if (!g || !mt || !h || !ctx.gate || !rt)
		return -1;
	for (int i = 0; i < groups; i++)
		for (int r = 0; r < NR_PAIRS; r++)
			if (!(g[i].rx[r] = cl_chan_create(MSG_SIZE, CHAN_CAP)))
				return -1;
	for (int i = 0; i < n; i++) {
		mt[i] = (struct msg_task){ &ctx, &g[i / (2 * NR_PAIRS)], i % NR_PAIRS,
					   (i / NR_PAIRS) % 2 };
		if (!(h[i] = cl_spawn(rt, NULL, msg_task_fn, &mt[i])))
			return -1;
	}
	if (rtb_release_join(&ready, n, ctx.gate, h, &ns))
		ok = 0;
	if (cl_runtime_destroy(rt))
		ok = 0;
	for (int i = 0; i < groups; i++)
		for (int r = 0; r < NR_PAIRS; r++)
			cl_chan_destroy(g[i].rx[r]);
	cl_chan_destroy(ctx.gate);
	free(g);
	free(mt);
	free(h);
	return ok ? (double)ns / 1e9 : -1;
}

static void usage(void)
{
	printf("usage: messaging [-g GROUPS] [-l LOOPS] [--vs-kernel] [--runs N] [--quick]\n"
	       "                 [--json | --json=PATH] [--help]\n"
	       "  -g GROUPS    groups of 20 senders + 20 receivers (default 10; --quick: 2)\n"
	       "  -l LOOPS     messages per sender per receiver (default 100; --quick: 20)\n"
	       "  --vs-kernel  also run `perf bench sched messaging -t -g GROUPS -l LOOPS`\n");
	bench_usage("messaging");
}

int main(int argc, char **argv)
{
	struct bench b;
	long groups = -1, loops = -1;
	int vs_kernel = 0;
	double s[BENCH_MAX_RUNS], k[BENCH_MAX_RUNS], ms[BENCH_MAX_RUNS];
	char cmd[256];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "-g")) {
			groups = rtb_num_arg("messaging", argc, argv, &i, 1, 1000);
		} else if (!strcmp(argv[i], "-l")) {
			loops = rtb_num_arg("messaging", argc, argv, &i, 1, 100000000L);
		} else if (!strcmp(argv[i], "--vs-kernel")) {
			vs_kernel = 1;
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("messaging", argv[i]);
		}
	}
	bench_init(&b, "messaging", argc, argv);
	if (groups < 0)
		groups = b.quick ? 2 : 10;
	if (loops < 0)
		loops = b.quick ? 20 : 100;
	if (vs_kernel && !rtb_have_perf()) {
		printf("# kernel side skipped: perf not installed (make deps installs linux-perf)\n");
		vs_kernel = 0;
	}
	snprintf(cmd, sizeof(cmd), "perf bench sched messaging -t -g %ld -l %ld 2>/dev/null", groups,
		 loops);
	msg_run(1, loops / 10 + 1); /* warm-up */
	/* the two sides alternate run by run: a change in machine load hits both */
	for (int r = 0; r < b.runs; r++) {
		s[r] = msg_run((int)groups, loops);
		if (s[r] < 0) {
			fprintf(stderr, "messaging: run failed\n");
			return 1;
		}
		bench_progress(&b, "run %d: %.3f s", r, s[r]);
		if (!vs_kernel)
			continue;
		k[r] = rtb_run_kernel(cmd, "Total time");
		if (k[r] <= 0) {
			printf("# kernel side skipped: `%s` failed\n", cmd);
			vs_kernel = 0;
			continue;
		}
		bench_progress(&b, "kernel run %d: %.3f s", r, k[r]);
	}
	double med = bench_median(s, b.runs);

	if (!b.json_only) {
		printf("# Running 'sched/messaging' benchmark (cachelocal runtime, %u workers):\n",
		       bench_nr_allowed_cpus());
		printf("# %ld groups == %ld tasks run (%d messages of %d bytes)\n\n", groups,
		       groups * 2 * NR_PAIRS, (int)(groups * NR_PAIRS * NR_PAIRS * loops), MSG_SIZE);
		printf("     Total time: %.3f [sec]\n\n", med);
	}
	for (int r = 0; r < b.runs; r++)
		ms[r] = s[r] * 1e3;
	bench_report(&b, "messaging", "cachelocal", "workers", (int)(groups * 2 * NR_PAIRS), ms,
		     b.runs, "ms");
	if (vs_kernel) {
		double kmed = bench_median(k, b.runs);

		if (!b.json_only)
			printf("# kernel: perf bench sched messaging -t -g %ld -l %ld\n     Total time: %.3f [sec]\n\n",
			       groups, loops, kmed);
		for (int r = 0; r < b.runs; r++)
			ms[r] = k[r] * 1e3;
		bench_report(&b, "messaging", "kernel perf -t", "unpinned",
			     (int)(groups * 2 * NR_PAIRS), ms, b.runs, "ms");
		double ratio = bench_ratio(&b, "messaging", "kernel / cachelocal (x faster)", kmed, med);

		rtb_goal(&b, "messaging >= 5x the kernel (perf -t)", ratio, 5, 1);
	}
	return bench_finish(&b);
}
