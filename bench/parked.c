/* SPDX-License-Identifier: MIT */
/*
 * bench/parked.c - what many parked tasks cost in each stack guard mode,
 * beside Go's goroutines: N tasks (default and --quick 100,000;
 * --smoke 500; --tasks N) spawned at the default attributes, each parking
 * on one wait queue, then released and joined. Per sample, in a fresh
 * process (this program re-run with --child, so no sample finds a warm
 * stack cache or heap; Go's side is bench/peers/parked_go, GOMAXPROCS =
 * workers):
 *
 *   spawn+park   from the first spawn until every task is parked, per task
 *   wake+join    from the release until every task is joined, per task
 *   resident     the resident set added by the parked tasks, per task
 *
 * Modes: the default (what cl_runtime_create() picks on this kernel: guard
 * markers from 6.13, else mprotect guards within a mapping budget, then
 * checked ones), markers (skipped with a note where the kernel lacks
 * them), checked, and mprotect, which needs two mappings per task: it runs
 * with as many tasks as vm.max_map_count allows (a third of it, at most N)
 * and says so. Go runs N goroutines blocked on a channel receive.
 *
 * With --json, per mode and quantity one peer line
 * {"structure":"runtime-parked","ours_variant":"cl_runtime default
 * (markers)","peer":"go 1.x","workload":"spawn+park 100000: ns/task",...};
 * gain = Go's / ours (> 1: ours cheaper).
 */
#include <cachelocal/sched/runtime.h>

#include "bench.h"
#include "peers/peers.h"

#define PEER_TIMEOUT_S 600

struct sample {
	double spawn_ns;     /* spawn+park, ns per task */
	double join_ns;      /* wake+join, ns per task */
	double rss_kib;      /* resident KiB per parked task */
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* ---------------------------------------------------------------- child */

struct parked {
	struct cl_waitq wq;
	int released;
	long waiting;
};

static void *park(void *p)
{
	struct parked *pk = (struct parked *)p;

	cl_waitq_lock(&pk->wq);
	pk->waiting++;
	while (!pk->released) {
		cl_waitq_wait(&pk->wq);
		cl_waitq_lock(&pk->wq);
	}
	cl_waitq_unlock(&pk->wq);
	return NULL;
}

static long nr_waiting(struct parked *pk)
{
	long n;

	cl_waitq_lock(&pk->wq);
	n = pk->waiting;
	cl_waitq_unlock(&pk->wq);
	return n;
}

/* One sample in this (fresh) process: prints "spawn_ns S join_ns J
 * rss_kib R mode M" or "error E" and returns the exit status. */
static int child(int mode, long n, unsigned int workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;
	struct cl_rt_task **t = (struct cl_rt_task **)calloc((size_t)n, sizeof(*t));
	struct parked pk;
	double t0, t1, t2;
	long rss0, rss1;

	memset(&a, 0, sizeof(a));
	a.guard_mode = mode;
	a.nr_workers = workers;
	rt = t ? cl_runtime_create(&a) : NULL;
	if (!rt) {
		printf("error create: %s\n", strerror(errno));
		return 1;
	}
	cl_waitq_init(&pk.wq);
	pk.released = 0;
	pk.waiting = 0;
	rss0 = rss_kib();
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		t[i] = cl_spawn(rt, NULL, park, &pk);
		if (!t[i]) {
			printf("error spawn %ld of %ld: %s\n", i, n, strerror(errno));
			return 1;
		}
	}
	while (nr_waiting(&pk) < n)
		sched_yield();
	t1 = now_ns();
	rss1 = rss_kib();
	cl_waitq_lock(&pk.wq);
	pk.released = 1;
	cl_waitq_unlock(&pk.wq);
	cl_waitq_wake_all(&pk.wq);
	for (long i = 0; i < n; i++)
		if (cl_join(t[i], NULL)) {
			printf("error join %ld: %s\n", i, strerror(errno));
			return 1;
		}
	t2 = now_ns();
	printf("spawn_ns %.1f join_ns %.1f rss_kib %.3f mode %s\n", (t1 - t0) / (double)n,
	       (t2 - t1) / (double)n, (double)(rss1 - rss0) / (double)n, cl_runtime_guard_mode(rt));
	free(t);
	return cl_runtime_destroy(rt) ? 1 : 0;
}

/* ---------------------------------------------------------------- driver */

static char self_path[4096], go_path[4096], go_version[128];

/* @n fresh-process samples of @argv (ours with --child, or Go); 0 or -1. */
static int samples(char *const argv[], unsigned int workers, int n, struct sample *out, char *mode,
		   size_t mode_len)
{
	for (int i = 0; i < n; i++) {
		char line[256], m[64] = "";
		int got;

		if (peer_exec(argv, NULL, (int)workers, PEER_TIMEOUT_S, line, sizeof(line), 1, &got) || got != 1 ||
		    sscanf(line, "spawn_ns %lf join_ns %lf rss_kib %lf mode %63s", &out[i].spawn_ns,
			   &out[i].join_ns, &out[i].rss_kib, m) < 3) {
			fprintf(stderr, "parked: %s: %s\n", argv[0], got == 1 ? line : "no output");
			return -1;
		}
		if (mode && m[0])
			snprintf(mode, mode_len, "%s", m);
	}
	return 0;
}

static int go_probe(void)
{
	char *argv[] = { go_path, (char *)"version", NULL };
	int n;

	return !access(go_path, X_OK) &&
	       !peer_exec(argv, NULL, 1, PEER_TIMEOUT_S, go_version, sizeof(go_version), 1, &n) && n == 1;
}

/* vm.max_map_count, or 65530 (the default) when unreadable. */
static long max_map_count(void)
{
	long v = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = 65530;
		fclose(f);
	}
	return v;
}

static void report_mode(struct bench *b, const char *variant, unsigned int workers, const struct sample *s,
			int n)
{
	double v[3][BENCH_MAX_RUNS];
	char pl[32];

	for (int i = 0; i < n; i++) {
		v[0][i] = s[i].spawn_ns;
		v[1][i] = s[i].join_ns;
		v[2][i] = s[i].rss_kib;
	}
	snprintf(pl, sizeof(pl), "%uw", workers);
	bench_report(b, "spawn+park", variant, pl, (int)workers, v[0], n, "ns/task");
	bench_report(b, "wake+join", variant, pl, (int)workers, v[1], n, "ns/task");
	bench_report(b, "resident", variant, pl, (int)workers, v[2], n, "KiB/task");
}

static void report_peer(struct bench *b, const char *ours, const char *what, long tasks, unsigned int workers,
			double *o, double *g, int n, const char *unit)
{
	double mo, mt, r[6], gain;
	char wl[96];

	gain = peer_gains(o, g, n, 0, &mo, &mt, r);
	snprintf(wl, sizeof(wl), "%s %ld: %s", what, tasks, unit);
	if (!b->json_only)
		printf("  gain %-34s %-28s go/ours %8.2fx\n", ours, wl, gain);
	peer_json(b, "runtime-parked", ours, go_version, wl, (int)workers, mo, mt, r[0], r[1],
		  r[2], r[3], r[4], r[5], gain, n, unit, 0);
}

static void usage(void)
{
	printf("usage: parked [--tasks N] [--workers N] [--go PATH] [--runs N] [--quick] [--smoke] [--json | --json=PATH] [--help]\n"
	       "  N parked tasks per stack guard mode, each sample in a fresh process, beside Go\n"
	       "  (bench/peers/parked_go next to peers/ of this binary; missing: skipped)\n"
	       "  --tasks N    tasks (default and --quick 100000; --smoke 500)\n"
	       "  --workers N  runtime workers and GOMAXPROCS (default 2)\n"
	       "  --go PATH    the Go program (default: peers/parked_go beside this binary)\n");
	bench_usage("parked");
}

int main(int argc, char **argv)
{
	static struct sample ms[4][BENCH_MAX_RUNS], g[BENCH_MAX_RUNS];
	static const struct {
		const char *name;
		int mode;
	} modes[] = { { "default", CL_RUNTIME_GUARD_AUTO },
		      { "markers", CL_RUNTIME_GUARD_MARKERS },
		      { "checked", CL_RUNTIME_GUARD_CHECKED },
		      { "mprotect", CL_RUNTIME_GUARD_MPROTECT } };
	char variant[4][96], def_mode[64] = "?", a_tasks[32], a_workers[16], a_mode[16];
	char *argv_c[] = { self_path, (char *)"--child", a_mode, a_tasks, a_workers, NULL };
	char *argv_g[] = { go_path, a_tasks, NULL };
	int have_go, ran[4] = { 0 };
	long tasks = 0, workers = 2;
	struct bench b;

	if (argc == 5 && !strcmp(argv[1], "--child"))
		return child(atoi(argv[2]), atol(argv[3]), (unsigned int)atoi(argv[4]));
	peer_exe_path(go_path, sizeof(go_path), "peers/parked_go");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if ((!strcmp(argv[i], "--tasks") || !strcmp(argv[i], "--workers")) && i + 1 < argc) {
			char *end;
			long v = strtol(argv[i + 1], &end, 10);

			if (*end || v < 1 || v > (argv[i][2] == 't' ? 10000000L : CL_MAX_CPUS)) {
				fprintf(stderr, "parked: %s out of range\n", argv[i]);
				return 2;
			}
			*(argv[i][2] == 't' ? &tasks : &workers) = v;
			i++;
		} else if (!strcmp(argv[i], "--go") && i + 1 < argc) {
			snprintf(go_path, sizeof(go_path), "%s", argv[++i]);
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			fprintf(stderr, "parked: unknown %s '%s' (see --help)\n",
				argv[i][0] == '-' ? "option" : "argument", argv[i]);
			return 2;
		}
	}
	bench_init(&b, "parked", argc, argv);
	if (!tasks)
		tasks = b.smoke ? 500 : 100000;
	if (readlink("/proc/self/exe", self_path, sizeof(self_path) - 1) <= 0) {
		perror("parked: /proc/self/exe");
		return 1;
	}
	have_go = go_probe();
	snprintf(a_workers, sizeof(a_workers), "%ld", workers);
	if (!b.json_only) {
		printf("# placement: %ld workers pinned to the first allowed CPUs (Go: GOMAXPROCS = %ld); "
		       "every sample a fresh process; %ld tasks\n", workers, workers, tasks);
		if (!have_go)
			printf("# go skipped: golang-go not installed (%s not built or not runnable)\n", go_path);
	}
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		long n = tasks;

		if (modes[m].mode == CL_RUNTIME_GUARD_MPROTECT && n > max_map_count() / 3)
			n = max_map_count() / 3;
		snprintf(a_mode, sizeof(a_mode), "%d", modes[m].mode);
		snprintf(a_tasks, sizeof(a_tasks), "%ld", n);
		bench_progress(&b, "%s, %ld tasks", modes[m].name, n);
		if (samples(argv_c, (unsigned int)workers, b.runs, ms[m], m ? NULL : def_mode,
			    sizeof(def_mode))) {
			if (modes[m].mode == CL_RUNTIME_GUARD_MARKERS) {
				if (!b.json_only)
					printf("# markers skipped: this kernel has no guard markers (6.13+)\n");
				continue;
			}
			return 1;
		}
		if (m == 0)
			snprintf(variant[m], sizeof(variant[m]), "default (%s)", def_mode);
		else if (n != tasks)
			snprintf(variant[m], sizeof(variant[m]), "%s (%ld tasks)", modes[m].name, n);
		else
			snprintf(variant[m], sizeof(variant[m]), "%s", modes[m].name);
		if (n != tasks && !b.json_only)
			printf("# mprotect: %ld tasks (a third of vm.max_map_count %ld: two mappings a task)\n", n,
			       max_map_count());
		report_mode(&b, variant[m], (unsigned int)workers, ms[m], b.runs);
		ran[m] = 1;
	}
	if (!have_go)
		return bench_finish(&b);
	snprintf(a_tasks, sizeof(a_tasks), "%ld", tasks);
	bench_progress(&b, "go, %ld goroutines", tasks);
	if (samples(argv_g, (unsigned int)workers, b.runs, g, NULL, 0))
		return 1;
	report_mode(&b, go_version, (unsigned int)workers, g, b.runs);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double o[3][BENCH_MAX_RUNS], t[3][BENCH_MAX_RUNS];
		char ov[128];

		if (!ran[m])
			continue;
		for (int i = 0; i < b.runs; i++) {
			o[0][i] = ms[m][i].spawn_ns;
			o[1][i] = ms[m][i].join_ns;
			o[2][i] = ms[m][i].rss_kib;
			t[0][i] = g[i].spawn_ns;
			t[1][i] = g[i].join_ns;
			t[2][i] = g[i].rss_kib;
		}
		snprintf(ov, sizeof(ov), "cl_runtime %s", variant[m]);
		report_peer(&b, ov, "spawn+park", tasks, (unsigned int)workers, o[0], t[0], b.runs, "ns/task");
		report_peer(&b, ov, "wake+join", tasks, (unsigned int)workers, o[1], t[1], b.runs, "ns/task");
		report_peer(&b, ov, "resident", tasks, (unsigned int)workers, o[2], t[2], b.runs, "KiB/task");
	}
	return bench_finish(&b);
}
