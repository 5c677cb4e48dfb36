/* SPDX-License-Identifier: MIT */
/*
 * bench/pipe.c - `perf bench sched pipe` on the cachelocal M:N runtime: two
 * tasks ping-pong a 4-byte message through two channels, LOOPS round trips.
 *
 *   --same-cpu    both tasks on one worker pinned to the first allowed CPU
 *                 (kernel side: taskset -c CPU perf bench sched pipe -T)
 *   --cross-cpu   one task on each of two workers on two CPUs
 *                 (kernel side: perf bench sched pipe -T, unpinned); also
 *                 the round trip of one cache line between the same two
 *                 CPUs, measured after each run, and the ratio
 *   --unpinned    two unpinned workers, tasks placed by the runtime
 *                 (wake-affine, the balancer)
 *                 (kernel side: perf bench sched pipe -T, unpinned)
 * Without a placement option all three run. Prints the kernel tool's lines
 * (Total time, usecs/op, ops/sec) for the median run, then the harness row.
 * --vs-kernel also runs the kernel's tool the same number of times with the
 * matching placement and prints its median and the ratio.
 * --hog runs the pair on one worker alone and beside a task that never
 * yields (preemption), alternating run by run: both rates, their ratio, the
 * round trip's p99 beside the hog in slices, and where the worker's time
 * went (the hog's share and turns, the pair's round trip while it ran).
 * With a placement option as well, both run (the hog comparison first).
 */
#include <stdatomic.h>

#include <cachelocal/sched/runtime.h>

#include "rtbench.h"

struct pipe_arg {
	struct cl_chan *to, *from;
	long loops;
	int first;
	uint64_t ns;
	uint64_t cpu_ns; /* CPU time of the worker thread over the loop (pinned placements) */
};

/* CPU time of the calling thread: a pinned task stays on its worker's thread. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *pipe_task(void *p)
{
	struct pipe_arg *a = (struct pipe_arg *)p;
	uint64_t t0 = bench_now_ns(), c0 = thread_cpu_ns();
	int v = 0;

	for (long i = 0; i < a->loops; i++) {
		if (a->first) {
			if (cl_chan_send(a->to, &v) || cl_chan_recv(a->from, &v))
				return (void *)1;
		} else {
			if (cl_chan_recv(a->from, &v) || cl_chan_send(a->to, &v))
				return (void *)1;
		}
		v++;
	}
	a->ns = bench_now_ns() - t0;
	a->cpu_ns = thread_cpu_ns() - c0;
	return NULL;
}

enum { SAME, CROSS, UNPINNED };
static uint64_t spin_ns; /* 0: the runtime's default */
static unsigned int rt_flags; /* --precise-clock: CL_RUNTIME_PRECISE_CLOCK */
static const char *const place_name[] = { "same-cpu", "cross-cpu", "unpinned" };

/* Where the wakeups of the last pipe_run() went, both workers summed, per
 * round trip: futex sleeps of an idle worker (each one costs its waker a
 * FUTEX_WAKE), wakeups caught by the idle spin, remote wake lists drained,
 * wakeups claimed on a record the idle spin watched (no push by the waker),
 * idle balancing passes made and skipped (short idle periods). */
static struct wake_diag {
	double sleeps, spin_hits, drains, watch_hits, balances, balance_skips;
} wake_diag;

static void wake_diag_take(const struct cl_runtime *rt, long loops)
{
	memset(&wake_diag, 0, sizeof(wake_diag));
	for (unsigned int i = 0; i < rt->nr_workers; i++) {
		const struct cl__rt_worker *w = &rt->workers[i];

		wake_diag.sleeps += (double)w->nr_idle_sleeps / (double)loops;
		wake_diag.spin_hits += (double)w->nr_spin_hits / (double)loops;
		wake_diag.drains += (double)w->nr_remote_drains / (double)loops;
		wake_diag.watch_hits += (double)w->nr_watch_hits / (double)loops;
		wake_diag.balances += (double)w->nr_idle_balances / (double)loops;
		wake_diag.balance_skips += (double)w->nr_idle_balance_skips / (double)loops;
	}
}

/* One run: ns per round trip, or -1; *cpu_share: the first task's worker
 * CPU time over wall time (how much of its CPU the host let it have). */
static double pipe_run(int place, long loops, double *cpu_share)
{
	struct cl_runtime_attr ra;
	struct cl_spawn_attr sa0, sa1;
	struct pipe_arg a0, a1;
	struct cl_runtime *rt;
	struct cl_rt_task *t0, *t1;
	void *r0 = NULL, *r1 = NULL;
	double ns = -1;

	memset(&ra, 0, sizeof(ra));
	memset(&sa0, 0, sizeof(sa0));
	memset(&sa1, 0, sizeof(sa1));
	ra.nr_workers = place == SAME ? 1 : 2;
	ra.spin_ns = spin_ns;
	ra.flags = rt_flags;
	if (place == UNPINNED)
		ra.flags |= CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&ra);
	if (!rt)
		return -1;
	struct cl_chan *c1 = cl_chan_create(sizeof(int), 1), *c2 = cl_chan_create(sizeof(int), 1);

	a0 = (struct pipe_arg){ c1, c2, loops, 1, 0, 0 };
	a1 = (struct pipe_arg){ c2, c1, loops, 0, 0, 0 };
	if (place != UNPINNED) {
		sa0.worker = CL_SPAWN_WORKER(0);
		sa1.worker = CL_SPAWN_WORKER(place == SAME ? 0 : 1);
		sa0.pin = sa1.pin = 1;
	}
	t1 = cl_spawn(rt, &sa1, pipe_task, &a1);
	t0 = cl_spawn(rt, &sa0, pipe_task, &a0);
	if (t0 && t1 && !cl_join(t0, &r0) && !cl_join(t1, &r1) && !r0 && !r1)
	{
		ns = (double)a0.ns / (double)loops;
		if (cpu_share)
			*cpu_share = a0.ns ? (double)a0.cpu_ns / (double)a0.ns : 0;
	}
	wake_diag_take(rt, loops);
	cl_runtime_destroy(rt);
	cl_chan_destroy(c1);
	cl_chan_destroy(c2);
	return ns;
}

/* ---- --hog: the pair beside a task that never yields (preemption) ---- */

static atomic_int hog_stop;
static atomic_long hog_spins;

/*
 * Where the worker's time went beside the hog: the hog reads a cycle
 * counter inline each turn of its loop (no call, so the preemption signal
 * still finds it in the executable) and counts a gap longer than
 * hog_gap_cycles as one time it was switched out. Filled by the hog.
 */
static uint64_t hog_gap_cycles;
static struct hog_stats {
	uint64_t outs;       /* times the hog was switched out (and back) */
	uint64_t off_cycles; /* cycles it was switched out */
	uint64_t all_cycles; /* cycles from its first to its last look */
} hog_stats;

static inline uint64_t hog_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#else
	return bench_now_ns(); /* (a vDSO call: the signal may find it outside the executable) */
#endif
}

/* Cycles per microsecond of hog_cycles(), over 2 ms. */
static double hog_cycles_per_us(void)
{
	uint64_t n0 = bench_now_ns(), c0 = hog_cycles(), n1;

	while ((n1 = bench_now_ns()) - n0 < 2000000)
		;
	return (double)(hog_cycles() - c0) * 1000.0 / (double)(n1 - n0);
}

static void *hog_task(void *p)
{
	uint64_t first = hog_cycles(), last = first, outs = 0, off = 0;

	(void)p;
	while (!atomic_load_explicit(&hog_stop, memory_order_relaxed)) {
		uint64_t now = hog_cycles();

		if (now - last > hog_gap_cycles) {
			outs++;
			off += now - last;
		}
		last = now;
		atomic_fetch_add_explicit(&hog_spins, 1, memory_order_relaxed);
	}
	hog_stats.outs = outs;
	hog_stats.off_cycles = off;
	hog_stats.all_cycles = last - first;
	return NULL;
}

struct hog_arg {
	struct cl_chan *to, *from;
	long loops;
	int first;
	uint64_t ns;
	uint64_t *rtt; /* first task: each round trip's ns */
};

static void *hog_pair_task(void *p)
{
	struct hog_arg *a = (struct hog_arg *)p;
	uint64_t t0, prev;
	int v = 0;

	while (a->first && !atomic_load(&hog_spins) && !atomic_load(&hog_stop))
		cl_yield(); /* the hog (if any) runs: start beside it */
	t0 = prev = bench_now_ns();
	for (long i = 0; i < a->loops; i++) {
		if (a->first) {
			if (cl_chan_send(a->to, &v) || cl_chan_recv(a->from, &v))
				return (void *)1;
			uint64_t now = bench_now_ns();

			a->rtt[i] = now - prev;
			prev = now;
		} else if (cl_chan_recv(a->from, &v) || cl_chan_send(a->to, &v)) {
			return (void *)1;
		}
		v++;
	}
	a->ns = bench_now_ns() - t0;
	if (a->first)
		atomic_store(&hog_stop, 1);
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* What one --hog run saw besides the rate (diagnostics). */
struct hog_diag {
	double p99, worst;      /* round trip (ns) */
	double hog_share;       /* of the hog's time in the run: share it had the worker */
	double hog_turns;       /* times it was switched out */
	double pair_rtt;        /* ns per round trip while the hog was switched out */
	uint64_t preempts;      /* by the signal */
	uint64_t handoffs;      /* direct hand-offs */
	uint64_t clock_reads;   /* full switches that read the clock */
};

/* One run on one pinned worker: ns per round trip of the pair, with or
 * without the hog beside it. */
static double hog_run(int with_hog, long loops, uint64_t *rtt, struct hog_diag *d)
{
	struct cl_runtime_attr ra;
	struct cl_spawn_attr sa;
	struct hog_arg a0, a1;
	struct cl_runtime *rt;
	struct cl_rt_task *h = NULL, *t0, *t1;
	void *r0 = (void *)1, *r1 = (void *)1;
	double ns = -1;

	memset(&ra, 0, sizeof(ra));
	memset(d, 0, sizeof(*d));
	memset(&hog_stats, 0, sizeof(hog_stats));
	ra.nr_workers = 1;
	ra.flags = rt_flags;
	rt = cl_runtime_create(&ra);
	if (!rt)
		return -1;
	struct cl_chan *c1 = cl_chan_create(sizeof(int), 1), *c2 = cl_chan_create(sizeof(int), 1);

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0);
	sa.pin = 1;
	atomic_store(&hog_stop, !with_hog);
	atomic_store(&hog_spins, 0);
	a0 = (struct hog_arg){ c1, c2, loops, 1, 0, rtt };
	a1 = (struct hog_arg){ c2, c1, loops, 0, 0, NULL };
	if (with_hog)
		h = cl_spawn(rt, &sa, hog_task, NULL);
	t0 = cl_spawn(rt, &sa, hog_pair_task, &a0);
	t1 = cl_spawn(rt, &sa, hog_pair_task, &a1);
	if (t0 && t1 && (!with_hog || h) && !cl_join(t0, &r0) && !cl_join(t1, &r1) && !r0 && !r1 &&
	    (!h || !cl_join(h, NULL))) {
		ns = (double)a0.ns / (double)loops;
		qsort(rtt, (size_t)loops, sizeof(*rtt), cmp_u64);
		d->p99 = (double)rtt[(size_t)((double)loops * 0.99)];
		d->worst = (double)rtt[loops - 1];
		if (hog_stats.all_cycles) {
			d->hog_share = 1.0 - (double)hog_stats.off_cycles / (double)hog_stats.all_cycles;
			d->hog_turns = (double)hog_stats.outs;
			d->pair_rtt = ns * (1.0 - d->hog_share);
		}
		d->preempts = rt->workers[0].nr_preempts;
		d->handoffs = rt->workers[0].nr_handoffs;
		d->clock_reads = rt->workers[0].nr_clock_reads;
	}
	cl_runtime_destroy(rt);
	cl_chan_destroy(c1);
	cl_chan_destroy(c2);
	return ns;
}

/* --hog: solo and beside-the-hog runs alternate; prints both, the rate kept
 * and the p99 round trip beside the hog in slices. */
static int hog_main(struct bench *b, long loops)
{
	double solo[BENCH_MAX_RUNS], hog[BENCH_MAX_RUNS], p99s[BENCH_MAX_RUNS], worst[BENCH_MAX_RUNS];
	double share[BENCH_MAX_RUNS], turn[BENCH_MAX_RUNS], prtt[BENCH_MAX_RUNS];
	double ms, mh, mp, cpu_us = hog_cycles_per_us();
	uint64_t *rtt = (uint64_t *)calloc((size_t)loops, sizeof(*rtt));
	const double slice = (double)CL_RUNTIME_SLICE_NS;
	struct hog_diag d;

	if (!rtt)
		return 1;
	hog_gap_cycles = (uint64_t)(cpu_us * 2.0); /* a gap over 2 us: switched out */
	for (int r = 0; r < b->runs; r++) {
		solo[r] = hog_run(0, loops, rtt, &d);
		hog[r] = hog_run(1, loops, rtt, &d);
		if (solo[r] < 0 || hog[r] < 0) {
			fprintf(stderr, "pipe: --hog run failed: %s\n", strerror(errno));
			free(rtt);
			return 1;
		}
		p99s[r] = d.p99;
		worst[r] = d.worst;
		share[r] = d.hog_share;
		turn[r] = d.hog_turns ? hog[r] * (double)loops * d.hog_share / d.hog_turns : 0;
		prtt[r] = d.pair_rtt;
		bench_progress(b, "hog run %d: solo %.1f ns/op, beside the hog %.1f ns/op, p99 %.0f ns, max %.0f ns; "
			       "the hog had the worker %.0f%% of the time in %.0f turns (%.0f us each), the "
			       "pair %.1f ns per round trip while it ran; %llu preemptions, %llu hand-offs, "
			       "%llu clock reads",
			       r, solo[r], hog[r], d.p99, d.worst, 100 * d.hog_share, d.hog_turns, turn[r] / 1e3,
			       d.pair_rtt, (unsigned long long)d.preempts, (unsigned long long)d.handoffs,
			       (unsigned long long)d.clock_reads);
	}
	free(rtt);
	ms = bench_median(solo, b->runs);
	mh = bench_median(hog, b->runs);
	mp = bench_median(p99s, b->runs);
	if (!b->json_only)
		printf("# one pinned worker, slice %.1f ms: the pair alone %.1f ns/op, beside a task that "
		       "never yields %.1f ns/op;\n# round trip p99 beside it %.0f ns = %.2f slices (max %.2f "
		       "slices);\n# the hog had the worker %.0f%% of the time, %.0f us a turn; the pair's "
		       "round trip while it ran: %.1f ns\n",
		       slice / 1e6, ms, mh, mp, mp / slice, bench_median(worst, b->runs) / slice,
		       100 * bench_median(share, b->runs), bench_median(turn, b->runs) / 1e3,
		       bench_median(prtt, b->runs));
	bench_report(b, "pipe round trip", "pair alone", "same-cpu", 2, solo, b->runs, "ns/op");
	bench_report(b, "pipe round trip", "pair beside a hog", "same-cpu", 2, hog, b->runs, "ns/op");
	bench_report(b, "pipe round trip p99", "pair beside a hog", "same-cpu", 2, p99s, b->runs, "ns");
	bench_report(b, "pipe round trip max", "pair beside a hog", "same-cpu", 2, worst, b->runs, "ns");
	bench_report(b, "pipe round trip while the pair runs", "pair beside a hog", "same-cpu", 2, prtt,
		     b->runs, "ns/op");
	rtb_goal(b, "pipe beside a hog >= 50% of the solo rate", bench_ratio(b, "pipe beside a hog",
		 "rate beside the hog / rate alone", ms, mh), 0.5, 1);
	rtb_goal(b, "pipe p99 beside a hog <= 2 slices", mp / slice, 2, 0);
	return 0;
}

/* ---- --cross-cpu: the hardware floor, one cache line's round trip ---- */

static struct {
	CL_ALIGNED(CL_FALSE_SHARING_SIZE) atomic_long v;
	long loops;
	int cpu;
} line;

static void *line_echo(void *p)
{
	(void)p;
	bench_pin(line.cpu);
	for (long i = 0; i < line.loops; i++) {
		while (atomic_load_explicit(&line.v, memory_order_acquire) != 2 * i + 1)
			CL_CPU_RELAX();
		atomic_store_explicit(&line.v, 2 * i + 2, memory_order_release);
	}
	return NULL;
}

/* ns per round trip of one cache line between the first two allowed CPUs
 * (store, spin for the answer), or -1. */
static double line_rtt(long loops)
{
	pthread_t th;
	uint64_t t0;
	double ns;

	atomic_store(&line.v, 0);
	line.loops = loops;
	line.cpu = bench_allowed_cpu(1);
	if (pthread_create(&th, NULL, line_echo, NULL) != 0)
		return -1;
	bench_pin(bench_allowed_cpu(0));
	t0 = bench_now_ns();
	for (long i = 0; i < loops; i++) {
		atomic_store_explicit(&line.v, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&line.v, memory_order_acquire) != 2 * i + 2)
			CL_CPU_RELAX();
	}
	ns = (double)(bench_now_ns() - t0) / (double)loops;
	pthread_join(th, NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), bench_initial_cpus());
	return ns;
}

static void print_kernel_style(const char *who, long loops, double ns_per_op)
{
	double usecs = ns_per_op / 1000.0;

	printf("# Running 'sched/pipe' benchmark (%s):\n", who);
	printf("# Executed %ld pipe operations between two %s\n\n", loops,
	       strstr(who, "kernel") ? "threads" : "tasks");
	printf("     Total time: %.3f [sec]\n\n", usecs * (double)loops / 1e6);
	printf("     %14.6f usecs/op\n", usecs);
	printf("     %14.0f ops/sec\n\n", 1e6 / usecs);
}

static void usage(void)
{
	printf("usage: pipe [-l LOOPS] [--same-cpu] [--cross-cpu] [--unpinned] [--vs-kernel] [--spin-ns N]\n"
	       "            [--precise-clock] [--no-wake-affine] [--hog]\n"
	       "            [--runs N] [--quick] [--json | --json=PATH] [--help]\n"
	       "  -l LOOPS     round trips per run (default 1000000; --quick: 100000)\n"
	       "  --same-cpu   both tasks on one worker (kernel: taskset -c CPU perf bench sched pipe -T)\n"
	       "  --cross-cpu  the tasks pinned on two workers (kernel: perf bench sched pipe -T)\n"
	       "  --unpinned   two unpinned workers (kernel: perf bench sched pipe -T)\n"
	       "  --vs-kernel  also run `perf bench sched pipe` with the matching placement\n"
	       "  --spin-ns N  idle workers spin N ns before sleeping (default: the runtime's, 50000)\n"
	       "  --precise-clock  read the clock at every switch (CL_RUNTIME_PRECISE_CLOCK; default:\n"
	       "               uncontended hand-offs sample it at the kernel tick, docs/runtime.md)\n"
	       "  --no-wake-affine  wakers never move their wakee (CL_RUNTIME_NO_WAKE_AFFINE)\n"
	       "  --hog        the pair on one worker alone and beside a task that never yields:\n"
	       "               rate kept and round-trip p99 in preemption slices (with a placement\n"
	       "               option: both)\n"
	       "  (no placement option: all three; with --hog alone: none)\n");
	bench_usage("pipe");
}

int main(int argc, char **argv)
{
	struct bench b;
	long loops = -1;
	int want[3] = { 0, 0, 0 }, any = 0, vs_kernel = 0, hog = 0;
	double samples[BENCH_MAX_RUNS], ksamples[BENCH_MAX_RUNS], shares[BENCH_MAX_RUNS];
	double lines[BENCH_MAX_RUNS];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "-l")) {
			loops = rtb_num_arg("pipe", argc, argv, &i, 1, 1000000000L);
		} else if (!strcmp(argv[i], "--same-cpu")) {
			want[SAME] = any = 1;
		} else if (!strcmp(argv[i], "--cross-cpu")) {
			want[CROSS] = any = 1;
		} else if (!strcmp(argv[i], "--unpinned")) {
			want[UNPINNED] = any = 1;
		} else if (!strcmp(argv[i], "--spin-ns")) {
			spin_ns = (uint64_t)rtb_num_arg("pipe", argc, argv, &i, 1, 1000000000L);
		} else if (!strcmp(argv[i], "--precise-clock")) {
			rt_flags |= CL_RUNTIME_PRECISE_CLOCK;
		} else if (!strcmp(argv[i], "--no-wake-affine")) {
			rt_flags |= CL_RUNTIME_NO_WAKE_AFFINE;
		} else if (!strcmp(argv[i], "--hog")) {
			hog = 1;
		} else if (!strcmp(argv[i], "--vs-kernel")) {
			vs_kernel = 1;
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("pipe", argv[i]);
		}
	}
	bench_init(&b, "pipe", argc, argv);
	if (loops < 0)
		loops = b.smoke ? 1000 : b.quick ? 100000 : 1000000;
	if (hog && hog_main(&b, loops))
		return 1;
	if (hog && !any)
		return bench_finish(&b);
	if (!any)
		want[SAME] = want[CROSS] = want[UNPINNED] = 1;
	if (vs_kernel && !rtb_have_perf()) {
		printf("# kernel side skipped: perf not installed (make deps installs linux-perf)\n");
		vs_kernel = 0;
	}
	if (!b.json_only)
		printf("# context switch: %s; clock: %s; workers: %s\n", cl_runtime_context_kind(),
		       rt_flags & CL_RUNTIME_PRECISE_CLOCK ? "read at every switch"
							   : "sampled at the tick on uncontended hand-offs",
		       "same-cpu 1, cross-cpu 2 pinned, unpinned 2");
	for (int p = 0; p < 3; p++) {
		char who[128], cmd[256], kcase[64];
		double med, kmed = 0;
		int cpu0 = bench_allowed_cpu(0);

		if (!want[p])
			continue;
		if (p != SAME && bench_nr_allowed_cpus() < 2) {
			printf("# %s skipped: only one CPU allowed\n", place_name[p]);
			continue;
		}
		if (p == SAME)
			snprintf(cmd, sizeof(cmd),
				 "taskset -c %d perf bench sched pipe -T -l %ld 2>/dev/null", cpu0, loops);
		else
			snprintf(cmd, sizeof(cmd), "perf bench sched pipe -T -l %ld 2>/dev/null", loops);
		pipe_run(p, loops / 10 + 1, NULL); /* warm-up */
		/* the two sides alternate run by run: a change in machine load hits both */
		for (int r = 0; r < b.runs; r++) {
			samples[r] = pipe_run(p, loops, &shares[r]);
			if (samples[r] < 0) {
				fprintf(stderr, "pipe: run failed: %s\n", strerror(errno));
				return 1;
			}
			bench_progress(&b, "%s run %d: %.1f ns/op; per round trip: %.2f futex sleeps, %.2f "
				       "spin hits, %.2f remote drains, %.2f watched-record claims, %.2f idle "
				       "balances (%.2f skipped)",
				       place_name[p], r, samples[r], wake_diag.sleeps, wake_diag.spin_hits,
				       wake_diag.drains, wake_diag.watch_hits, wake_diag.balances,
				       wake_diag.balance_skips);
			if (p == CROSS) { /* the same two CPUs' cache-line round trip, this run */
				lines[r] = line_rtt(b.smoke ? 1000 : 200000);
				if (lines[r] < 0)
					return 1;
				bench_progress(&b, "cache line run %d: %.1f ns/op", r, lines[r]);
			}
			if (!vs_kernel)
				continue;
			double us = rtb_run_kernel(cmd, "usecs/op");

			if (us <= 0) {
				printf("# kernel side skipped: `%s` failed\n", cmd);
				vs_kernel = 0;
				continue;
			}
			ksamples[r] = us * 1000.0;
			bench_progress(&b, "kernel %s run %d: %.1f ns/op", place_name[p], r, ksamples[r]);
		}
		med = bench_median(samples, b.runs);
		snprintf(who, sizeof(who), "cachelocal runtime, %s", place_name[p]);
		if (!b.json_only) {
			print_kernel_style(who, loops, med);
			if (p != UNPINNED)
				printf("# worker thread CPU time / wall time over the runs: median %.0f%% "
				       "(below 100%%: it was preempted by other processes%s)\n\n",
				       100 * bench_median(shares, b.runs),
				       p == CROSS ? ", or asleep in its idle loop" : "");
		}
		bench_report(&b, "pipe round trip", "cachelocal", place_name[p], 2, samples, b.runs,
			     "ns/op");
		if (p == CROSS) {
			/* each run beside the floor measured right after it: the host
			 * moves between floors (70-85 ns, ~55 ns, ~500 ns here) from one
			 * run to the next, and a median over runs of both would pair a
			 * pipe run of one floor with the floor of another */
			double lmed = bench_median(lines, b.runs), per[BENCH_MAX_RUNS], lo = 0, hi = 0, lr;

			for (int r = 0; r < b.runs; r++) {
				per[r] = samples[r] / lines[r];
				lo = r && lo < per[r] ? lo : per[r];
				hi = hi > per[r] ? hi : per[r];
			}
			if (!b.json_only)
				printf("# cache-line round trip between CPUs %d and %d (store, spin for the answer), "
				       "same runs: %.1f ns; pipe cross-cpu / cache line, each run beside its own: "
				       "median %.2fx (%.2f-%.2f)\n",
				       cpu0, bench_allowed_cpu(1), lmed, bench_median(per, b.runs), lo, hi);
			bench_report(&b, "cache line round trip", "two threads", place_name[p], 2, lines, b.runs,
				     "ns/op");
			lr = bench_ratio(&b, "pipe cross-cpu", "pipe / cache-line round trip, run by run",
					 bench_median(per, b.runs), 1);
			rtb_goal(&b, "pipe cross-cpu <= 2x the cache-line round trip", lr, 2, 0);
		}
		if (!vs_kernel)
			continue;
		kmed = bench_median(ksamples, b.runs);
		snprintf(who, sizeof(who), "kernel: %.*s", (int)(strstr(cmd, " 2>") - cmd), cmd);
		if (!b.json_only)
			print_kernel_style(who, loops, kmed);
		bench_report(&b, "pipe round trip", "kernel perf -T",
			     p == SAME ? "same-cpu" : "unpinned", 2, ksamples, b.runs, "ns/op");
		snprintf(kcase, sizeof(kcase), "pipe %s", place_name[p]);
		double ratio = bench_ratio(&b, kcase, "kernel / cachelocal (x faster)", kmed, med);

		if (p == SAME) {
			rtb_goal(&b, "pipe same-cpu >= 25x the kernel (floor)", ratio, 25, 1);
			rtb_goal(&b, "pipe same-cpu >= 40x the kernel (goal)", ratio, 40, 1);
		}
		else if (p == CROSS)
			rtb_goal(&b, "pipe cross-cpu >= 10x the kernel unpinned", ratio, 10, 1);
		if (!b.json_only && ((p == SAME && ratio < 25) || (p == CROSS && ratio < 10)))
			printf("# needed: %.0f ns/op for %s; measured %.0f ns/op with the worker thread "
			       "on its CPU %.0f%% of the wall time (docs/runtime.md: why)\n",
			       kmed / (p == SAME ? 25 : 10), p == SAME ? "25x" : "10x", med,
			       100 * bench_median(shares, b.runs));
		vs_kernel = 1;
	}
	return bench_finish(&b);
}
