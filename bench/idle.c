/* SPDX-License-Identifier: MIT */
/*
 * bench/idle.c - what an idle runtime costs: the CPU time (getrusage: user
 * + system) and the context switches (voluntary + involuntary) of a whole
 * process whose runtime has nothing to run, over a window (default 3 s;
 * --quick 1 s; --window S), beside Go doing the same (bench/peers/idle_go,
 * GOMAXPROCS = workers; skipped with a note when it was not built).
 *
 * States: "empty" (default attributes, one task ran, then nothing),
 * "parked1000" (1000 tasks blocked on a channel) and "sleep100ms" (one
 * task that sleeps 100 ms at a time through its worker's timer: ten timer
 * wakeups a second; Go: one goroutine in time.Sleep), at 2 workers and at
 * the machine's CPUs (one row when they are the same; --workers N instead).
 * Each window is one sample, >= 5 windows per case (median, min-max);
 * ours' windows, then Go's, in the same run. The numbers count the whole
 * process, on both sides with one thread or goroutine that sleeps through
 * the window to end it (ours: the driver's main thread; Go: its main
 * goroutine, on a runtime timer).
 *
 * With --json, besides the result objects, one peer line per state,
 * worker count and quantity: {"kind":"peer","structure":"runtime-idle",
 * "peer":"go ...","workload":"empty, 2 workers: switches/s",...}, gain =
 * Go's / ours (> 1: ours idles cheaper), ours floored at one switch or
 * 10 us of CPU per window so that a zero stays a finite gain.
 */
#include <cachelocal/sched/runtime.h>

#include <stdatomic.h>
#include <sys/resource.h>

#include "bench.h"
#include "peers/peers.h"

#define PARKED 1000
#define SLEEP_NS 100000000ULL

enum state { EMPTY, PARKED1000, SLEEP100MS, NR_STATES };
static const char *const state_name[NR_STATES] = { "empty", "parked1000", "sleep100ms" };
#define PEER_TIMEOUT_S 600

struct sample {
	double csw_per_s;  /* context switches per second of the window */
	double cpu_ms_3s;  /* CPU ms per 3 s of the window */
};

static double tv_ms(struct timeval tv)
{
	return (double)tv.tv_sec * 1e3 + (double)tv.tv_usec / 1e3;
}

/* ---------------------------------------------------------------- ours */

static struct cl_chan *park_chan;
static atomic_int nr_parked, sleeper_stop, sleeper_started;

static void *one_task(void *p)
{
	return p;
}

static void *parked_task(void *p)
{
	int v;

	(void)p;
	atomic_fetch_add(&nr_parked, 1);
	(void)cl_chan_recv(park_chan, &v); /* until the channel closes */
	return NULL;
}

/* Sleeps SLEEP_NS at a time until told to stop (checked after each sleep). */
static void *sleeper_task(void *p)
{
	(void)p;
	atomic_store(&sleeper_started, 1);
	while (!atomic_load(&sleeper_stop))
		if (cl_sleep_ns(SLEEP_NS))
			return (void *)"cl_sleep_ns";
	return NULL;
}

struct ours {
	struct cl_runtime *rt;
	struct cl_rt_task *sleeper;
	struct cl_rt_task **parked;
	int nr;
};

/* A runtime of @workers workers, default attributes otherwise, in @state. */
static int ours_start(struct ours *o, unsigned int workers, enum state st, double settle_s)
{
	struct cl_runtime_attr a;
	struct timespec ts = { 0, (long)(settle_s * 1e9) };
	struct cl_rt_task *t;

	memset(o, 0, sizeof(*o));
	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	o->rt = cl_runtime_create(&a);
	if (!o->rt)
		return -1;
	t = cl_spawn(o->rt, NULL, one_task, NULL);
	if (!t || cl_join(t, NULL))
		return -1;
	if (st == SLEEP100MS) {
		atomic_store(&sleeper_stop, 0);
		atomic_store(&sleeper_started, 0);
		o->sleeper = cl_spawn(o->rt, NULL, sleeper_task, NULL);
		if (!o->sleeper)
			return -1;
		while (!atomic_load(&sleeper_started))
			sched_yield();
	}
	if (st == PARKED1000) {
		park_chan = cl_chan_create(sizeof(int), 1);
		o->parked = (struct cl_rt_task **)calloc(PARKED, sizeof(*o->parked));
		if (!park_chan || !o->parked)
			return -1;
		atomic_store(&nr_parked, 0);
		for (o->nr = 0; o->nr < PARKED; o->nr++) {
			o->parked[o->nr] = cl_spawn(o->rt, NULL, parked_task, NULL);
			if (!o->parked[o->nr])
				return -1;
		}
		while (atomic_load(&nr_parked) < PARKED)
			sched_yield();
	}
	nanosleep(&ts, NULL); /* the last blocks and the idle spins end */
	return 0;
}

static void ours_stop(struct ours *o)
{
	if (o->sleeper) {
		atomic_store(&sleeper_stop, 1);
		(void)cl_join(o->sleeper, NULL); /* after its current sleep */
	}
	if (o->nr) {
		(void)cl_chan_close(park_chan);
		for (int i = 0; i < o->nr; i++)
			(void)cl_join(o->parked[i], NULL);
		(void)cl_chan_destroy(park_chan);
	}
	free(o->parked);
	(void)cl_runtime_destroy(o->rt);
}

/* One window of the whole process (this thread sleeps through it). */
static struct sample ours_window(double window_s)
{
	struct rusage r0, r1;
	struct timespec ts = { (time_t)window_s, (long)((window_s - (double)(time_t)window_s) * 1e9) };
	struct sample s;

	getrusage(RUSAGE_SELF, &r0);
	nanosleep(&ts, NULL);
	getrusage(RUSAGE_SELF, &r1);
	s.csw_per_s = (double)((r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw)) / window_s;
	s.cpu_ms_3s = (tv_ms(r1.ru_utime) - tv_ms(r0.ru_utime) + tv_ms(r1.ru_stime) - tv_ms(r0.ru_stime)) *
		      3.0 / window_s;
	return s;
}

/* ---------------------------------------------------------------- Go */

static char go_path[4096], go_version[128];

static int go_probe(void)
{
	char *argv[] = { go_path, (char *)"version", NULL };
	int n;

	return !access(go_path, X_OK) &&
	       !peer_exec(argv, NULL, 1, PEER_TIMEOUT_S, go_version, sizeof(go_version), 1, &n) && n == 1;
}

/* Go in the same state: @n windows of @window_s, one sample each. */
static int go_windows(unsigned int workers, enum state st, double window_s, double settle_s, int n,
		      struct sample *out)
{
	char a1[16], a2[16], a3[32], a4[32], a5[16], a6[32], lines[BENCH_MAX_RUNS][128];
	char *argv[] = { go_path, a1, a2, a3, a4, a5, a6, NULL };
	int got;

	snprintf(a1, sizeof(a1), "%u", workers);
	snprintf(a2, sizeof(a2), "%d", st == PARKED1000 ? PARKED : 0);
	snprintf(a3, sizeof(a3), "%.0f", window_s * 1e3);
	snprintf(a4, sizeof(a4), "%.0f", settle_s * 1e3);
	snprintf(a5, sizeof(a5), "%d", n);
	snprintf(a6, sizeof(a6), "%llu", st == SLEEP100MS ? SLEEP_NS / 1000000ULL : 0ULL);
	if (peer_exec(argv, NULL, (int)workers, PEER_TIMEOUT_S, &lines[0][0], sizeof(lines[0]), n, &got) ||
	    got != n)
		return -1;
	for (int i = 0; i < n; i++) {
		double cpu_us, csw;

		if (sscanf(lines[i], "cpu_us %lf csw %lf", &cpu_us, &csw) != 2)
			return -1;
		out[i].csw_per_s = csw / window_s;
		out[i].cpu_ms_3s = cpu_us / 1e3 * 3.0 / window_s;
	}
	return 0;
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	printf("usage: idle [--window S] [--workers N] [--go PATH] [--runs N] [--quick] [--smoke] [--json | --json=PATH] [--help]\n"
	       "  an idle runtime's CPU time and context switches per window, beside Go\n"
	       "  (bench/peers/idle_go next to peers/ of this binary; missing: skipped)\n"
	       "  --window S   seconds per window (default 3; --quick 1; --smoke 0.05)\n"
	       "  --workers N  a second worker count instead of the machine's CPUs\n"
	       "  --go PATH    the Go program (default: peers/idle_go beside this binary)\n");
	bench_usage("idle");
}

/* One quantity (switches/s, or CPU) of a state: our row, Go's, and the gain
 * (ours floored at @floor, one switch or 10 us of CPU per window). */
static void report_one(struct bench *b, const char *cs, const char *pl, const char *state,
		       unsigned int workers, const char *what, const char *unit, double *o, double *g, int n,
		       int have_go, double floor)
{
	char variant[64], wl[96];
	double mo, mt, r[6], gain;

	snprintf(variant, sizeof(variant), "cachelocal %s", what);
	bench_report(b, cs, variant, pl, (int)workers, o, n, unit);
	if (!have_go)
		return;
	snprintf(variant, sizeof(variant), "go %s", what);
	bench_report(b, cs, variant, pl, (int)workers, g, n, unit);
	for (int i = 0; i < n; i++)
		if (o[i] < floor)
			o[i] = floor;
	gain = peer_gains(o, g, n, 0, &mo, &mt, r);
	snprintf(wl, sizeof(wl), "%s, %u workers: %s", state, workers, what);
	if (!b->json_only)
		printf("  gain %-24s go/ours %-32s %8.2fx\n", cs, what, gain);
	peer_json(b, "runtime-idle", "cl_runtime", go_version, wl, (int)workers, mo, mt, r[0], r[1], r[2],
		  r[3], r[4], r[5], gain, n, unit, 0);
}

static void report_pair(struct bench *b, const char *state, unsigned int workers, const struct sample *o,
			const struct sample *g, int n, int have_go, double window_s)
{
	double oc[BENCH_MAX_RUNS], ou[BENCH_MAX_RUNS], gc[BENCH_MAX_RUNS], gu[BENCH_MAX_RUNS];
	char cs[64], pl[32];

	for (int i = 0; i < n; i++) {
		oc[i] = o[i].csw_per_s;
		ou[i] = o[i].cpu_ms_3s;
		gc[i] = g[i].csw_per_s;
		gu[i] = g[i].cpu_ms_3s;
	}
	snprintf(cs, sizeof(cs), "idle %s", state);
	snprintf(pl, sizeof(pl), "%uw", workers);
	report_one(b, cs, pl, state, workers, "switches", "switches/s", oc, gc, n, have_go, 1.0 / window_s);
	report_one(b, cs, pl, state, workers, "CPU", "ms CPU/3 s", ou, gu, n, have_go, 0.01 * 3.0 / window_s);
}

int main(int argc, char **argv)
{
	static struct sample o[BENCH_MAX_RUNS], g[BENCH_MAX_RUNS];
	unsigned int counts[2];
	int nr_counts, have_go;
	long workers = 0;
	double window_s = -1, settle_s;
	struct bench b;

	peer_exe_path(go_path, sizeof(go_path), "peers/idle_go");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "--window") && i + 1 < argc) {
			char *end;

			window_s = strtod(argv[++i], &end);
			if (*end || window_s < 0.01 || window_s > 600) {
				fprintf(stderr, "idle: --window must be 0.01..600 s\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--workers") && i + 1 < argc) {
			char *end;

			workers = strtol(argv[++i], &end, 10);
			if (*end || workers < 1 || workers > CL_MAX_CPUS) {
				fprintf(stderr, "idle: --workers must be 1..%d\n", CL_MAX_CPUS);
				return 2;
			}
		} else if (!strcmp(argv[i], "--go") && i + 1 < argc) {
			snprintf(go_path, sizeof(go_path), "%s", argv[++i]);
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			fprintf(stderr, "idle: unknown %s '%s' (see --help)\n",
				argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return 2;
		}
	}
	bench_init(&b, "idle", argc, argv);
	if (window_s < 0)
		window_s = b.smoke ? 0.05 : b.quick ? 1.0 : 3.0;
	settle_s = b.smoke ? 0.02 : 0.2;
	have_go = go_probe();
	if (!b.json_only) {
		printf("# placement: default attributes (workers pinned to the allowed CPUs in order); "
		       "Go: GOMAXPROCS = workers, the same CPUs; window %.3g s; the whole process counted\n",
		       window_s);
		if (!have_go)
			printf("# go skipped: golang-go not installed (%s not built or not runnable)\n", go_path);
	}
	counts[0] = 2;
	counts[1] = workers ? (unsigned int)workers : (unsigned int)bench_nr_allowed_cpus();
	nr_counts = counts[1] != 2 ? 2 : 1;
	for (int c = 0; c < nr_counts; c++)
		for (int st = 0; st < NR_STATES; st++) {
			struct ours ours;
			const char *state = state_name[st];

			bench_progress(&b, "%s, %u workers", state, counts[c]);
			/* ours, then Go: each keeps its state across its windows */
			if (ours_start(&ours, counts[c], (enum state)st, settle_s)) {
				fprintf(stderr, "idle: runtime setup failed: %s\n", strerror(errno));
				return 1;
			}
			for (int r = 0; r < b.runs; r++)
				o[r] = ours_window(window_s);
			ours_stop(&ours);
			if (have_go && go_windows(counts[c], (enum state)st, window_s, settle_s, b.runs, g)) {
				fprintf(stderr, "idle: %s failed\n", go_path);
				return 1;
			}
			report_pair(&b, state, counts[c], o, g, b.runs, have_go, window_s);
		}
	return bench_finish(&b);
}
