/* SPDX-License-Identifier: MIT */
/*
 * bench/schbench.c - schbench's wakeup-latency experiment on the cachelocal
 * M:N runtime. -m message tasks each own -t worker tasks. Each round a
 * message task stamps the time into each of its workers' mailboxes and
 * wakes it (a wait queue); the worker, once running, records now - stamp
 * (the wake-to-run latency, through the runqueue) into its own log-linear
 * histogram, does its request and reports back; the message task sleeps
 * until all of its workers reported, then starts the next round.
 *
 * Modes: nolock   the request is empty (pure wake-to-run latency);
 *        lock     the request takes the lock of the worker's CPU (one
 *                 cl_mutex per runtime worker) and walks a footprint of
 *                 -F KB -n times (schbench's cache footprint), then unlocks.
 * Prints p50/p90/p99/p99.9 (usec) for each mode, median over runs.
 */
#include <cachelocal/sched/runtime.h>

#include "rtbench.h"

/* ---- log-linear histogram: 16 linear buckets per power of two (<= 6.25% error) ---- */

#define H_SUB 16
#define H_BUCKETS (H_SUB + 60 * H_SUB)

struct hist {
	uint64_t n[H_BUCKETS];
	uint64_t count, max;
};

static int hist_index(uint64_t v)
{
	int e;

	if (v < H_SUB)
		return (int)v;
	e = 63 - __builtin_clzll(v); /* >= 4 */
	return H_SUB + (e - 4) * H_SUB + (int)((v >> (e - 4)) & (H_SUB - 1));
}

/* Upper bound (inclusive) of bucket i. */
static uint64_t hist_upper(int i)
{
	int e, sub;

	if (i < H_SUB)
		return (uint64_t)i;
	e = (i - H_SUB) / H_SUB + 4;
	sub = (i - H_SUB) % H_SUB;
	return ((uint64_t)(H_SUB + sub) << (e - 4)) + ((1ULL << (e - 4)) - 1);
}

static void hist_add(struct hist *h, uint64_t v)
{
	int i = hist_index(v);

	h->n[i < H_BUCKETS ? i : H_BUCKETS - 1]++;
	h->count++;
	if (v > h->max)
		h->max = v;
}

static void hist_merge(struct hist *d, const struct hist *s)
{
	for (int i = 0; i < H_BUCKETS; i++)
		d->n[i] += s->n[i];
	d->count += s->count;
	if (s->max > d->max)
		d->max = s->max;
}

static uint64_t hist_pct(const struct hist *h, double pct)
{
	uint64_t want = (uint64_t)((double)h->count * pct / 100.0 + 0.5), seen = 0;

	if (want == 0)
		want = 1;
	for (int i = 0; i < H_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want)
			return hist_upper(i) < h->max ? hist_upper(i) : h->max;
	}
	return h->max;
}

/* ---- the experiment ---- */

struct sb_msg;

struct sb_worker {
	struct cl_waitq wq;
	int go;
	uint64_t stamp;
	struct sb_msg *msg;
	struct hist h;
};

struct sb_msg {
	struct cl_waitq wq;
	int pending;
	int nr;
	struct sb_worker *w;
};

struct sb_cfg {
	int lock_mode;
	long rounds;
	size_t footprint;     /* bytes */
	long ops;
	struct cl_mutex *cpu_lock;
	unsigned char *mem;   /* footprint per runtime worker */
	int stop;
};

static struct sb_cfg cfg;

static void *sb_worker_fn(void *p)
{
	struct sb_worker *w = (struct sb_worker *)p;
	unsigned long sink = 0;

	for (long r = 0; r < cfg.rounds; r++) {
		cl_waitq_lock(&w->wq);
		while (!w->go) {
			cl_waitq_wait(&w->wq);
			cl_waitq_lock(&w->wq);
		}
		w->go = 0;
		cl_waitq_unlock(&w->wq);
		hist_add(&w->h, bench_now_ns() - w->stamp);
		if (cfg.lock_mode) {
			int cpu = cl_worker_id();
			unsigned char *m = cfg.mem + (size_t)cpu * cfg.footprint;

			cl_mutex_lock(&cfg.cpu_lock[cpu]);
			for (long n = 0; n < cfg.ops; n++)
				for (size_t i = 0; i < cfg.footprint; i += 64) {
					m[i]++;
					sink += m[i];
				}
			cl_mutex_unlock(&cfg.cpu_lock[cpu]);
		}
		cl_waitq_lock(&w->msg->wq);
		if (--w->msg->pending == 0) {
			cl_waitq_unlock(&w->msg->wq);
			cl_waitq_wake_one(&w->msg->wq);
		} else {
			cl_waitq_unlock(&w->msg->wq);
		}
	}
	BENCH_KEEP(sink);
	return NULL;
}

static void *sb_msg_fn(void *p)
{
	struct sb_msg *m = (struct sb_msg *)p;

	for (long r = 0; r < cfg.rounds; r++) {
		m->pending = m->nr; /* workers only touch it after their wakeup below */
		for (int i = 0; i < m->nr; i++) {
			struct sb_worker *w = &m->w[i];

			cl_waitq_lock(&w->wq);
			w->stamp = bench_now_ns();
			w->go = 1;
			cl_waitq_unlock(&w->wq);
			cl_waitq_wake_one(&w->wq);
		}
		cl_waitq_lock(&m->wq);
		while (m->pending) {
			cl_waitq_wait(&m->wq);
			cl_waitq_lock(&m->wq);
		}
		cl_waitq_unlock(&m->wq);
	}
	return NULL;
}

/* One run; fills @out with the merged histogram. Returns 0 or -1. */
static int sb_run(int nmsg, int nworkers, struct hist *out)
{
	struct cl_runtime *rt = cl_runtime_create(NULL);
	unsigned int nw;
	struct sb_msg *m = calloc((size_t)nmsg, sizeof(*m));
	struct sb_worker *w = calloc((size_t)(nmsg * nworkers), sizeof(*w));
	struct cl_rt_task **h = calloc((size_t)(nmsg * (nworkers + 1)), sizeof(*h));
	int k = 0, ok = 0;

	if (!rt || !m || !w || !h)
		return -1;
	nw = cl_runtime_nr_workers(rt);
	cfg.cpu_lock = calloc(nw, sizeof(*cfg.cpu_lock));
	cfg.mem = calloc(nw, cfg.footprint ? cfg.footprint : 1);
	if (!cfg.cpu_lock || !cfg.mem)
		return -1;
	for (unsigned int i = 0; i < nw; i++)
		cl_mutex_init(&cfg.cpu_lock[i]);
	for (int i = 0; i < nmsg; i++) {
		cl_waitq_init(&m[i].wq);
		m[i].nr = nworkers;
		m[i].w = &w[i * nworkers];
		for (int j = 0; j < nworkers; j++) {
			cl_waitq_init(&m[i].w[j].wq);
			m[i].w[j].msg = &m[i];
			h[k++] = cl_spawn(rt, NULL, sb_worker_fn, &m[i].w[j]);
		}
		h[k++] = cl_spawn(rt, NULL, sb_msg_fn, &m[i]);
	}
	for (int i = 0; i < k; i++)
		if (!h[i] || cl_join(h[i], NULL))
			ok = -1;
	if (cl_runtime_destroy(rt))
		ok = -1;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < nmsg * nworkers; i++)
		hist_merge(out, &w[i].h);
	free(m);
	free(w);
	free(h);
	free(cfg.cpu_lock);
	free(cfg.mem);
	return ok;
}

static void usage(void)
{
	printf("usage: schbench [-m MSG] [-t WORKERS] [-r ROUNDS] [-F KB] [-n OPS] [--mode nolock|lock|both]\n"
	       "                [--runs N] [--quick] [--json | --json=PATH] [--help]\n"
	       "  -m MSG       message tasks (default 2)\n"
	       "  -t WORKERS   worker tasks per message task (default 4)\n"
	       "  -r ROUNDS    wakeups per worker per run (default 20000; --quick: 2000)\n"
	       "  -F KB        lock mode: cache footprint per CPU walked under the lock (default 64)\n"
	       "  -n OPS       lock mode: passes over the footprint per request (default 1)\n"
	       "  --mode M     nolock, lock or both (default both)\n");
	bench_usage("schbench");
}

int main(int argc, char **argv)
{
	static const double pcts[] = { 50, 90, 99, 99.9 };
	static const char *const pname[] = { "wakeup p50", "wakeup p90", "wakeup p99", "wakeup p99.9" };
	struct bench b;
	long nmsg = 2, nwork = 4, rounds = -1, fkb = 64, ops = 1;
	int modes = 3;
	double v[4][BENCH_MAX_RUNS];
	struct hist hs;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "-m")) {
			nmsg = rtb_num_arg("schbench", argc, argv, &i, 1, 64);
		} else if (!strcmp(argv[i], "-t")) {
			nwork = rtb_num_arg("schbench", argc, argv, &i, 1, 1024);
		} else if (!strcmp(argv[i], "-r")) {
			rounds = rtb_num_arg("schbench", argc, argv, &i, 1, 100000000L);
		} else if (!strcmp(argv[i], "-F")) {
			fkb = rtb_num_arg("schbench", argc, argv, &i, 0, 1 << 20);
		} else if (!strcmp(argv[i], "-n")) {
			ops = rtb_num_arg("schbench", argc, argv, &i, 0, 1000000);
		} else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
			i++;
			if (!strcmp(argv[i], "nolock"))
				modes = 1;
			else if (!strcmp(argv[i], "lock"))
				modes = 2;
			else if (!strcmp(argv[i], "both"))
				modes = 3;
			else {
				fprintf(stderr, "schbench: --mode must be nolock, lock or both\n");
				return 2;
			}
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("schbench", argv[i]);
		}
	}
	bench_init(&b, "schbench", argc, argv);
	if (rounds < 0)
		rounds = b.quick ? 2000 : 20000;
	for (int mode = 0; mode < 2; mode++) {
		const char *mname = mode ? "lock" : "nolock";

		if (!(modes & (1 << mode)))
			continue;
		cfg.lock_mode = mode;
		cfg.rounds = rounds;
		cfg.footprint = mode ? (size_t)fkb * 1024 : 0;
		cfg.ops = ops;
		cfg.rounds = rounds / 10 + 1; /* warm-up */
		if (sb_run((int)nmsg, (int)nwork, &hs))
			return 1;
		cfg.rounds = rounds;
		for (int r = 0; r < b.runs; r++) {
			if (sb_run((int)nmsg, (int)nwork, &hs)) {
				fprintf(stderr, "schbench: run failed\n");
				return 1;
			}
			for (int p = 0; p < 4; p++)
				v[p][r] = (double)hist_pct(&hs, pcts[p]) / 1000.0;
			bench_progress(&b, "%s run %d: p50 %.2f p99 %.2f us (%llu samples, max %.1f us)", mname,
				       r, v[0][r], v[2][r], (unsigned long long)hs.count,
				       (double)hs.max / 1000.0);
		}
		if (!b.json_only) {
			printf("# %s: %ld message tasks x %ld workers, %ld rounds%s\n", mname, nmsg, nwork,
			       rounds, mode ? "" : " (no request work)");
			if (mode)
				printf("# lock: per-CPU cl_mutex, footprint %ld KB x %ld passes\n", fkb, ops);
			printf("Wakeup Latencies percentiles (usec), median of %d runs\n", b.runs);
			for (int p = 0; p < 4; p++)
				printf("\t%5.1fth: %.2f\n", pcts[p], bench_median(v[p], b.runs));
		}
		for (int p = 0; p < 4; p++)
			bench_report(&b, pname[p], mname, "workers", (int)(nmsg * (nwork + 1)), v[p],
				     b.runs, "us");
		if (!mode)
			rtb_goal(&b, "schbench p99 wakeup latency (nolock) <= 5 us",
				 bench_median(v[2], b.runs), 5, 0);
	}
	return bench_finish(&b);
}
