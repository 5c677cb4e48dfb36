/* SPDX-License-Identifier: MIT */
/*
 * bench/slice_locks.c - what the rseq time-slice extension (cachelocal/slice.h)
 * does for cachelocal's locks, and what it costs where the kernel lacks it.
 *
 * 1. uncontended: one pinned thread, lock+unlock in a loop, for the TTAS,
 *    ticket and MCS locks and the brlock writer. Variants in the same run,
 *    alternating: "before" (the same locks compiled with CL_SLICE_EXT=0: no
 *    request code at all; linked in from a second compilation of this file,
 *    absent when the file is built alone), "before (2nd copy)" (a third
 *    compilation, identical to "before" but at another address: its ratio
 *    to "before" is what code placement alone moves a 2 ns loop, the floor
 *    under which the other ratio means nothing) and "ext-off" (the request code
 *    built in, the extension off in the thread: what every user of a kernel
 *    without it, or of glibc's 32-byte area, runs), and "ext-on" where the
 *    extension is on. ns per lock+unlock; ratio ext-off / before.
 *
 * 2. contended: 4 threads per allowed CPU (each pinned to one CPU, so every
 *    CPU runs 4 of them and the kernel preempts among them), all taking one
 *    lock around a short section (a few shared lines written) with some
 *    private work between, for --duration seconds; variants "ext-off" (the
 *    threads opt out: cl_slice_ext_set_thread(0)) and "ext-on" (the
 *    extension on where the kernel gives it), alternating, >= 5 runs. Per
 *    run: throughput (sections per second), the holds that were preempted,
 *    the grants (sections the kernel let run on instead of preempting), and
 *    the p99 and p99.9 of hold and wait times.
 *    A hold counts as preempted when its wall time exceeds PREEMPT_FACTOR
 *    times the median uncontended hold of the same lock in the same run
 *    (calibrated at start, printed), and at least PREEMPT_FLOOR_NS (50 us,
 *    above what an interrupt costs the holder): a hold that lost its CPU lasts at
 *    least until its thread runs again (a time slice of another thread),
 *    orders of magnitude above the section itself. (The thread's CPU time
 *    cannot be read inside the section without a system call, which would
 *    end the very grant being measured.) Times come from the cycle counter
 *    (TSC, CNTVCT), calibrated against CLOCK_MONOTONIC, so no clock read is
 *    a system call either.
 *
 * Prints the extension's mode (cl_slice_ext_mode_name()) in the header.
 * Under TCG (the kernel matrix's guests) the absolute times mean nothing;
 * the counts and the same-run ratios do.
 *
 * Options (besides bench.h's): --duration S (contended run length, default
 * 0.5 s, --quick 0.2 s, --smoke 0.05 s), --threads-per-cpu N (default 4),
 * --cpus N (contend on the first N allowed CPUs only; default all),
 * --only uncontended|contended.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cachelocal/brlock.h>
#include <cachelocal/slice.h>
#include <cachelocal/spinlock.h>

#include <math.h>
#include <stdatomic.h>

enum lock_kind { K_TTAS, K_TICKET, K_MCS, K_BRLOCK_W, K_NR };


static double now_ns_f(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The loops, compiled in both builds of this file (see the top). */
#define SLICE_LOOP_BODY                                                                        \
	{                                                                                      \
		static struct cl_spinlock s = CL_SPINLOCK_INIT;                                \
		static struct cl_ticketlock t = CL_TICKETLOCK_INIT;                            \
		static struct cl_mcslock m = CL_MCSLOCK_INIT;                                  \
		struct cl_mcs_node node;                                                       \
		double t0 = now_ns_f();                                                        \
		switch (k) {                                                                   \
		case K_TTAS:                                                                   \
			for (long i = 0; i < n; i++) {                                         \
				cl_spin_lock(&s);                                              \
				__asm__ __volatile__("" ::: "memory");                         \
				cl_spin_unlock(&s);                                            \
			}                                                                      \
			break;                                                                 \
		case K_TICKET:                                                                 \
			for (long i = 0; i < n; i++) {                                         \
				cl_ticket_lock(&t);                                            \
				__asm__ __volatile__("" ::: "memory");                         \
				(void)cl_ticket_unlock(&t);                                    \
			}                                                                      \
			break;                                                                 \
		case K_MCS:                                                                    \
			for (long i = 0; i < n; i++) {                                         \
				cl_mcs_lock(&m, &node);                                        \
				__asm__ __volatile__("" ::: "memory");                         \
				(void)cl_mcs_unlock(&m, &node);                                \
			}                                                                      \
			break;                                                                 \
		default:                                                                       \
			for (long i = 0; i < n; i++) {                                         \
				(void)cl_brlock_write_lock(bl);                                \
				__asm__ __volatile__("" ::: "memory");                         \
				(void)cl_brlock_write_unlock(bl);                              \
			}                                                                      \
			break;                                                                 \
		}                                                                              \
		return (now_ns_f() - t0) / (double)n;                                          \
	}

#ifdef SLICE_LOCKS_LOOP
/* The extra compilations (see the Makefile): only the loop, named
 * slice_locks_loop_<SLICE_LOCKS_LOOP>, built with or without CL_SLICE_EXT. */
#define SLICE_CAT2(a, b) a##b
#define SLICE_CAT(a, b) SLICE_CAT2(a, b)
#define SLICE_LOOP_NAME SLICE_CAT(slice_locks_loop_, SLICE_LOCKS_LOOP)
double SLICE_LOOP_NAME(enum lock_kind k, long n, struct cl_brlock *bl);
__attribute__((aligned(64))) double SLICE_LOOP_NAME(enum lock_kind k, long n, struct cl_brlock *bl)
SLICE_LOOP_BODY
#else

#include "bench.h"

static const char *const kind_name[K_NR] = {"ttas", "ticket", "mcs", "brlock-writer"};

/* Present when the build links the extra compilations in: "before" and
 * "control" with CL_SLICE_EXT=0 (the same code twice, at two addresses:
 * their ratio is what code placement alone does), "after" with it. */
extern double slice_locks_loop_before(enum lock_kind k, long n, struct cl_brlock *bl)
	__attribute__((weak));
extern double slice_locks_loop_control(enum lock_kind k, long n, struct cl_brlock *bl)
	__attribute__((weak));
extern double slice_locks_loop_after(enum lock_kind k, long n, struct cl_brlock *bl)
	__attribute__((weak));

static double loop_here(enum lock_kind k, long n, struct cl_brlock *bl)
SLICE_LOOP_BODY

static double loop_after(enum lock_kind k, long n, struct cl_brlock *bl)
{
	return slice_locks_loop_after ? slice_locks_loop_after(k, n, bl) : loop_here(k, n, bl);
}

/* ------------------------------------------------------------ cycle clock */

static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return (uint64_t)now_ns_f();
#endif
}

static double ns_per_tick;

static void calibrate_ticks(void)
{
	double w0 = now_ns_f(), w1;
	uint64_t c0 = ticks(), c1;

	do
		w1 = now_ns_f();
	while (w1 - w0 < 20e6);
	c1 = ticks();
	ns_per_tick = c1 > c0 ? (w1 - w0) / (double)(c1 - c0) : 1.0;
}

/* ------------------------------------------------- log histogram of times */

#define HBUCKETS 1024
#define HSUB 16.0 /* buckets per doubling: about 4% wide */

struct hist {
	uint64_t n[HBUCKETS];
};

static inline void hist_add(struct hist *h, uint64_t t)
{
	int b = t < 2 ? 0 : (int)(log2((double)t) * HSUB);

	h->n[b < HBUCKETS ? b : HBUCKETS - 1]++;
}

/* The @q quantile (0..1) in ticks: the bucket's upper bound. */
static double hist_quantile(const struct hist *h, double q)
{
	uint64_t total = 0, seen = 0;

	for (int i = 0; i < HBUCKETS; i++)
		total += h->n[i];
	if (total == 0)
		return 0;
	for (int i = 0; i < HBUCKETS; i++) {
		seen += h->n[i];
		if ((double)seen >= q * (double)total)
			return exp2((double)(i + 1) / HSUB);
	}
	return exp2(HBUCKETS / HSUB);
}

/* --------------------------------------------------------- the contention */

#define SECTION_LINES 4
#define PREEMPT_FACTOR 50.0
#define PREEMPT_FLOOR_NS 50000.0 /* above an interrupt's cost, far below a time slice */

struct shared {
	struct cl_spinlock s;
	struct cl_ticketlock t;
	struct cl_mcslock m;
	_Alignas(128) uint64_t data[SECTION_LINES * 8];
	_Alignas(128) atomic_int stop;
	atomic_int ready;
};

static struct shared *sh;

struct worker {
	pthread_t th;
	int cpu;
	int ext;
	enum lock_kind kind;
	uint64_t preempt_ticks;
	/* results */
	uint64_t sections;
	uint64_t preempted;
	struct cl_slice_stats st;
	int mode;
	struct hist hold, wait;
};

/* The section: SECTION_LINES shared lines written, a data dependence
 * through all of them. */
static inline void section(void)
{
	for (int r = 0; r < 4; r++)
		for (int i = 0; i < SECTION_LINES; i++)
			sh->data[i * 8] = sh->data[i * 8] * 3 + (uint64_t)r;
}

static inline void private_work(uint64_t *x)
{
	for (int i = 0; i < 64; i++)
		*x = *x * 6364136223846793005ull + 1442695040888963407ull;
}

static inline void take(enum lock_kind k, struct cl_mcs_node *n)
{
	switch (k) {
	case K_TTAS: cl_spin_lock(&sh->s); break;
	case K_TICKET: cl_ticket_lock(&sh->t); break;
	default: cl_mcs_lock(&sh->m, n); break;
	}
}

static inline void give(enum lock_kind k, struct cl_mcs_node *n)
{
	switch (k) {
	case K_TTAS: cl_spin_unlock(&sh->s); break;
	case K_TICKET: (void)cl_ticket_unlock(&sh->t); break;
	default: (void)cl_mcs_unlock(&sh->m, n); break;
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct cl_mcs_node node;
	uint64_t x = (uint64_t)w->cpu + 1, t0, t1, t2;

	bench_pin(w->cpu);
	if (w->ext)
		(void)cl_slice_ext_mode();
	else
		(void)cl_slice_ext_set_thread(0);
	w->mode = (int)cl_slice_ext_mode();
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed) &&
	       atomic_load_explicit(&sh->ready, memory_order_relaxed) >= 0)
		sched_yield(); /* the main thread sets ready to -1 to start */
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		t0 = ticks();
		take(w->kind, &node);
		t1 = ticks();
		section();
		t2 = ticks();
		give(w->kind, &node);
		hist_add(&w->wait, t1 - t0);
		hist_add(&w->hold, t2 - t1);
		if (t2 - t1 > w->preempt_ticks)
			w->preempted++;
		w->sections++;
		private_work(&x);
	}
	BENCH_KEEP(x);
	cl_slice_stats_thread(&w->st);
	return NULL;
}

struct run_result {
	double throughput; /* sections per second */
	double preempted, granted, yielded;
	double hold_p99, hold_p999, wait_p99, wait_p999; /* ns */
	int mode;
};

static void contended_run(enum lock_kind k, int ext, int nthreads, double duration,
			  uint64_t preempt_ticks, struct run_result *r)
{
	struct worker *w = calloc((size_t)nthreads, sizeof(*w));
	struct hist *hold = calloc(1, sizeof(*hold)), *wait = calloc(1, sizeof(*wait));
	double t0, t1;

	if (!w || !hold || !wait) {
		perror("calloc");
		exit(1);
	}
	memset(sh, 0, sizeof(*sh));
	for (int i = 0; i < nthreads; i++) {
		w[i].cpu = bench_allowed_cpu(i);
		w[i].ext = ext;
		w[i].kind = k;
		w[i].preempt_ticks = preempt_ticks;
		if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	while (atomic_load(&sh->ready) < nthreads)
		sched_yield();
	t0 = now_ns_f();
	atomic_store(&sh->ready, -1);
	do {
		struct timespec ts = {0, 10 * 1000 * 1000};

		nanosleep(&ts, NULL);
		t1 = now_ns_f();
	} while (t1 - t0 < duration * 1e9);
	atomic_store(&sh->stop, 1);
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].th, NULL);
		r->throughput += (double)w[i].sections;
		r->preempted += (double)w[i].preempted;
		r->granted += (double)w[i].st.granted;
		r->yielded += (double)w[i].st.yielded;
		for (int b = 0; b < HBUCKETS; b++) {
			hold->n[b] += w[i].hold.n[b];
			wait->n[b] += w[i].wait.n[b];
		}
		if (i == 0)
			r->mode = w[i].mode;
	}
	t1 = now_ns_f();
	r->throughput /= (t1 - t0) / 1e9;
	r->hold_p99 = hist_quantile(hold, 0.99) * ns_per_tick;
	r->hold_p999 = hist_quantile(hold, 0.999) * ns_per_tick;
	r->wait_p99 = hist_quantile(wait, 0.99) * ns_per_tick;
	r->wait_p999 = hist_quantile(wait, 0.999) * ns_per_tick;
	free(w);
	free(hold);
	free(wait);
}

/* The median uncontended hold of the section under lock @k, in ticks. */
static uint64_t calibrate_hold(enum lock_kind k)
{
	enum { N = 2001 };
	static double v[N];
	struct cl_mcs_node node;

	memset(sh, 0, sizeof(*sh));
	for (int i = 0; i < N; i++) {
		uint64_t t1, t2;

		take(k, &node);
		t1 = ticks();
		section();
		t2 = ticks();
		give(k, &node);
		v[i] = (double)(t2 - t1);
	}
	return (uint64_t)bench_median(v, N);
}

/* ------------------------------------------------------------------ main */

#define BLOCKS 101

static void uncontended(struct bench *b, long n)
{
	struct cl_brlock bl;
	int have_before = slice_locks_loop_before != NULL && slice_locks_loop_control != NULL;
	int on = cl_slice_ext_mode() == CL_SLICE_EXT_ON;
	double *before = calloc((size_t)b->runs, sizeof(double));
	double *off = calloc((size_t)b->runs, sizeof(double));
	double *onv = calloc((size_t)b->runs, sizeof(double));
	double *ctl = calloc((size_t)b->runs, sizeof(double));

	if (!before || !off || !onv || !ctl || cl_brlock_init(&bl) != 0) {
		perror("uncontended");
		exit(1);
	}
	if (!have_before)
		bench_progress(b, "built alone: no \"before\" variant (make builds it)");
	bench_pin(bench_allowed_cpu(0));
	for (int k = 0; k < K_NR; k++) {
		long nk = k == K_BRLOCK_W ? n / 200 : n;
		double m_before = 0, m_ctl = 0, m_off, m_on;
		char c[64];

		/* warm up; then each run is BLOCKS short blocks per variant,
		 * alternating (the order flips every block), and its value the
		 * median block: a block in which the thread lost its CPU (this
		 * machine is shared) does not move it */
		(void)loop_after((enum lock_kind)k, nk / 10 + 1, &bl);
		for (int r = 0; r < b->runs; r++) {
			double tb[BLOCKS], to[BLOCKS], tn[BLOCKS], tc[BLOCKS];
			long nb = nk / BLOCKS + 1;

			for (int i = 0; i < BLOCKS; i++) {
				for (int o = 0; o < 4; o++) {
					int which = (o + i) % 4;

					if (which == 0 && have_before) {
						tb[i] = slice_locks_loop_before((enum lock_kind)k, nb, &bl);
					} else if (which == 3 && have_before) {
						tc[i] = slice_locks_loop_control((enum lock_kind)k, nb, &bl);
					} else if (which == 1) {
						(void)cl_slice_ext_set_thread(0);
						to[i] = loop_after((enum lock_kind)k, nb, &bl);
					} else if (which == 2 && on) {
						(void)cl_slice_ext_set_thread(1);
						tn[i] = loop_after((enum lock_kind)k, nb, &bl);
					}
				}
			}
			before[r] = have_before ? bench_median(tb, BLOCKS) : 0;
			ctl[r] = have_before ? bench_median(tc, BLOCKS) : 0;
			off[r] = bench_median(to, BLOCKS);
			onv[r] = on ? bench_median(tn, BLOCKS) : 0;
		}
		snprintf(c, sizeof(c), "uncontended %s", kind_name[k]);
		if (have_before) {
			m_before = bench_report(b, c, "before", "pinned", 1, before, b->runs,
						"ns/lock+unlock");
			m_ctl = bench_report(b, c, "before (2nd copy)", "pinned", 1, ctl, b->runs,
					     "ns/lock+unlock");
		}
		m_off = bench_report(b, c, "ext-off", "pinned", 1, off, b->runs, "ns/lock+unlock");
		if (have_before) {
			bench_ratio(b, c, "ext-off / before (cost where off)", m_off, m_before);
			bench_ratio(b, c, "2nd copy / before (placement alone)", m_ctl, m_before);
		}
		if (on) {
			m_on = bench_report(b, c, "ext-on", "pinned", 1, onv, b->runs,
					    "ns/lock+unlock");
			bench_ratio(b, c, "ext-on / ext-off", m_on, m_off);
		}
	}
	(void)cl_slice_ext_set_thread(1);
	cl_brlock_destroy(&bl);
	free(before);
	free(off);
	free(onv);
	free(ctl);
}

static void contended(struct bench *b, int ncpu, int per_cpu, double duration)
{
	int nthreads = ncpu * per_cpu;
	int on = 0;
	struct run_result *res[2];
	enum lock_kind kinds[] = {K_TICKET, K_MCS, K_TTAS};

	for (int v = 0; v < 2; v++) {
		res[v] = calloc((size_t)b->runs, sizeof(struct run_result));
		if (!res[v]) {
			perror("calloc");
			exit(1);
		}
	}
	for (size_t ki = 0; ki < sizeof(kinds) / sizeof(kinds[0]); ki++) {
		enum lock_kind k = kinds[ki];
		uint64_t h0 = calibrate_hold(k), thr = (uint64_t)((double)h0 * PREEMPT_FACTOR);
		double floor_ticks = PREEMPT_FLOOR_NS / ns_per_tick;
		double v[2][8][BENCH_MAX_RUNS];
		double med[2][8];
		static const char *const what[8] = {"sections/s", "preempted holds", "grants",
						    "yields", "hold p99 ns", "hold p99.9 ns",
						    "wait p99 ns", "wait p99.9 ns"};
		char c[96];

		if ((double)thr < floor_ticks)
			thr = (uint64_t)floor_ticks;
		bench_progress(b, "%s: uncontended hold median %.0f ns; preempted = hold > %.0f ns",
			       kind_name[k], (double)h0 * ns_per_tick, (double)thr * ns_per_tick);
		for (int r = 0; r < b->runs; r++)
			for (int e = 0; e < 2; e++) {
				/* alternate which variant goes first */
				int ext = (r & 1) ? 1 - e : e;

				contended_run(k, ext, nthreads, duration, thr, &res[ext][r]);
				if (ext && res[ext][r].mode == CL_SLICE_EXT_ON)
					on = 1;
			}
		for (int e = 0; e < 2; e++) {
			for (int r = 0; r < b->runs; r++) {
				struct run_result *x = &res[e][r];

				v[e][0][r] = x->throughput;
				v[e][1][r] = x->preempted;
				v[e][2][r] = x->granted;
				v[e][3][r] = x->yielded;
				v[e][4][r] = x->hold_p99;
				v[e][5][r] = x->hold_p999;
				v[e][6][r] = x->wait_p99;
				v[e][7][r] = x->wait_p999;
			}
			for (int q = 0; q < 8; q++) {
				snprintf(c, sizeof(c), "%s %dx%d", kind_name[k], ncpu, per_cpu);
				med[e][q] = bench_report(b, c, e ? "ext-on" : "ext-off", "pinned",
							 nthreads, v[e][q], b->runs, what[q]);
			}
		}
		snprintf(c, sizeof(c), "%s %dx%d", kind_name[k], ncpu, per_cpu);
		bench_ratio(b, c, "throughput ext-on / ext-off", med[1][0], med[0][0]);
		bench_ratio(b, c, "preempted holds ext-on / ext-off", med[1][1], med[0][1]);
		if (!b->json_only)
			printf("  %s: with the extension %s; thresholds: preempted >= 10x fewer, "
			       "throughput >= 1.3x\n",
			       c, on ? "on" : "off in this kernel/thread (both variants equal)");
	}
	free(res[0]);
	free(res[1]);
}

int main(int argc, char **argv)
{
	struct bench b;
	double duration = -1;
	int per_cpu = 4, only = 0, ncpu = 0; /* only: 1 uncontended, 2 contended */
	long n;

	for (int i = 1; i < argc; i++) {
		if (bench_is_shared_arg(argc, argv, &i) || !strcmp(argv[i], "-h"))
			continue;
		if (!strcmp(argv[i], "--duration") && i + 1 < argc) {
			duration = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) {
			ncpu = atoi(argv[++i]);
			if (ncpu < 1)
				only = -1;
		} else if (!strcmp(argv[i], "--threads-per-cpu") && i + 1 < argc) {
			per_cpu = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			i++;
			only = !strcmp(argv[i], "uncontended") ? 1 : !strcmp(argv[i], "contended") ? 2 : -1;
		} else {
			only = -1;
		}
		if (only < 0 || per_cpu < 1 || (duration != -1 && duration <= 0)) {
			fprintf(stderr, "slice_locks: bad argument '%s' (see the top of "
					"bench/slice_locks.c)\n", argv[i]);
			return 2;
		}
	}
	sh = aligned_alloc(128, sizeof(*sh));
	if (!sh)
		return 1;
	bench_init(&b, "slice_locks", argc, argv);
	if (duration < 0)
		duration = b.smoke ? 0.05 : b.quick ? 0.2 : 0.5;
	n = b.smoke ? 20000 : b.quick ? 500000 : 2000000;
	calibrate_ticks();
	if (!b.json_only)
		printf("# slice extension: %s (AT_RSEQ_FEATURE_SIZE %lu); %d threads per CPU\n",
		       cl_slice_ext_mode_name(cl_slice_ext_mode()), getauxval(27), per_cpu);
	if (only != 2)
		uncontended(&b, n);
	if (ncpu == 0 || ncpu > bench_nr_allowed_cpus())
		ncpu = bench_nr_allowed_cpus();
	if (only != 1)
		contended(&b, ncpu, per_cpu, duration);
	return bench_finish(&b);
}
#endif /* SLICE_LOCKS_LOOP */
