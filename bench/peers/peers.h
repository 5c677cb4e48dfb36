/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/peers.h - cachelocal beside what its users would pick instead.
 *
 * Every peer benchmark measures one of our structures and a peer library's
 * equivalent in the same process, interleaved run by run (ours, theirs,
 * ours, theirs, ...; the order alternates each run), the same workload on
 * both sides, and reports per comparison the medians of >= 5 runs (the
 * shared options of bench.h: --runs, --quick, --smoke, --json).
 *
 * Human table: one row per comparison. With --json, one JSON object per
 * comparison on stdout (the lines scripts/bench_report.py collects into
 * report.json's "peers" array; other peer benchmarks, in any language,
 * print the same):
 *
 *   {"kind":"peer","bench":"<binary>","structure":"objcache",
 *    "ours_variant":"cl_objcache","peer":"jemalloc 5.3.0","workload":"pair 64 B, 1 thread",
 *    "ours":<median>,"theirs":<median>,"unit":"ns/op","higher_is_better":false,
 *    "gain":<theirs/ours, or ours/theirs when higher is better: > 1 = cachelocal ahead>,
 *    "runs":n,"min":<smallest per-run gain>,"max":<largest per-run gain>,
 *    "ours_min":..,"ours_max":..,"theirs_min":..,"theirs_max":..,
 *    "threads":t,"kernel":"<uname -r>","id_mode":"<cachelocal id mode>"}
 *
 * min and max are the gains of single runs (run i of ours against run i of
 * theirs, measured back to back). The peer's version comes from its own
 * header's version macro or, when it has none, from dpkg-query at build
 * time (PEER_*_VERSION, passed by the Makefile); never written by hand.
 */
#ifndef CACHELOCAL_BENCH_PEERS_H
#define CACHELOCAL_BENCH_PEERS_H

#include "bench.h"

#include <gnu/libc-version.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PEER_CK_VERSION
#define PEER_CK_VERSION "version unknown"
#endif

/* peer_exe_path() - @name in the directory of the running binary, in @out. */
static inline void peer_exe_path(char *out, size_t len, const char *name)
{
	char self[2048];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0) {
		snprintf(out, len, "%s", name);
		return;
	}
	self[n] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(out, len, "%s/%s", self, name);
}

/*
 * peer_exec() - run a peer program (another process: Go's runtime) as
 * @argv with GOMAXPROCS=@procs and the CPU affinity @cpus (NULL: this
 * process's), killed with the driver or after @timeout_s. Its stdout's
 * first @max lines go to @out (line i at out + i * @outlen, newline cut),
 * their count to *@nlines. Return: its exit status (128 + signal), or -1
 * if it did not run.
 */
static inline int peer_exec(char *const argv[], const cpu_set_t *cpus, int procs, unsigned int timeout_s,
			    char *out, size_t outlen, int max, int *nlines)
{
	int fd[2], status;
	pid_t pid;
	FILE *f;

	*nlines = 0;
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char gmp[16];

		if (cpus)
			sched_setaffinity(0, sizeof(*cpus), cpus);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the driver */
		alarm(timeout_s);                  /* kept across exec: a hung peer dies */
		snprintf(gmp, sizeof(gmp), "%d", procs);
		setenv("GOMAXPROCS", gmp, 1);
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	if (f) {
		while (*nlines < max && fgets(out + (size_t)*nlines * outlen, (int)outlen, f)) {
			char *l = out + (size_t)*nlines * outlen;

			l[strcspn(l, "\n")] = 0;
			++*nlines;
		}
		while (fgetc(f) != EOF) /* drain */
			;
		fclose(f);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Per-run samples of one side of a comparison. */
struct peer_side {
	double v[BENCH_MAX_RUNS];
};

static inline void peer_header(const struct bench *b)
{
	if (!b->json_only)
		printf("%-14s %-22s %-30s %-28s %12s %12s %8s %-7s %s\n", "structure", "ours", "peer",
		       "workload", "ours", "theirs", "gain", "unit", "gain min-max");
}

/*
 * peer_json() - the report line of one comparison (--json only): medians
 * @mo and @mt, per-run gains @gmin..@gmax, sides' ranges, @gain (> 1: ours
 * ahead). Shared by every peer benchmark, including runtime_peers.c.
 */
static inline void peer_json(struct bench *b, const char *structure, const char *ours_variant,
			     const char *peer, const char *workload, int threads, double mo,
			     double mt, double omin, double omax, double tmin, double tmax,
			     double gmin, double gmax, double gain, int n, const char *unit,
			     int higher_is_better)
{
	if (!b->json)
		return;
	fprintf(b->json,
		"{\"kind\":\"peer\",\"bench\":\"%s\",\"structure\":\"%s\",\"ours_variant\":\"%s\","
		"\"peer\":\"%s\",\"workload\":\"%s\",\"ours\":%.6g,\"theirs\":%.6g,"
		"\"unit\":\"%s\",\"higher_is_better\":%s,\"gain\":%.6g,\"runs\":%d,"
		"\"min\":%.6g,\"max\":%.6g,\"ours_min\":%.6g,\"ours_max\":%.6g,"
		"\"theirs_min\":%.6g,\"theirs_max\":%.6g,\"threads\":%d,\"kernel\":\"%s\","
		"\"id_mode\":\"%s\"}\n",
		b->name, structure, ours_variant, peer, workload, mo, mt, unit,
		higher_is_better ? "true" : "false", gain, n, gmin, gmax, omin, omax, tmin, tmax,
		threads, b->kernel, b->id_mode);
	fflush(b->json);
}

/*
 * peer_gains() - medians of @n runs of ours (@o) and theirs (@t), their
 * ranges and the per-run gains (run i of ours against run i of theirs).
 * Return: the gain of the medians (> 1: ours ahead).
 */
static inline double peer_gains(const double *o, const double *t, int n, int higher_is_better,
				double *mo, double *mt, double r[6])
{
	double gmin = 0, gmax = 0;

	*mo = bench_median(o, n);
	*mt = bench_median(t, n);
	bench_minmax(o, n, &r[0], &r[1]);
	bench_minmax(t, n, &r[2], &r[3]);
	for (int i = 0; i < n; i++) {
		double num = higher_is_better ? o[i] : t[i];
		double den = higher_is_better ? t[i] : o[i];
		double g = den > 0 ? num / den : 0;

		if (i == 0 || g < gmin)
			gmin = g;
		if (i == 0 || g > gmax)
			gmax = g;
	}
	r[4] = gmin;
	r[5] = gmax;
	if (higher_is_better)
		return *mt > 0 ? *mo / *mt : 0;
	return *mo > 0 ? *mt / *mo : 0;
}

/*
 * peer_emit() - one comparison: @n runs of ours (@o) and theirs (@t), a
 * table row and (--json) the report line.
 * Return: the gain (> 1: ours ahead).
 */
static inline double peer_emit(struct bench *b, const char *structure, const char *ours_variant,
			       const char *peer, const char *workload, int threads,
			       const struct peer_side *o, const struct peer_side *t, int n,
			       const char *unit, int higher_is_better)
{
	double mo, mt, r[6];
	double gain = peer_gains(o->v, t->v, n, higher_is_better, &mo, &mt, r);

	if (!b->json_only)
		printf("%-14s %-22s %-30s %-28s %12.3f %12.3f %7.2fx %-7s %.2f-%.2f\n", structure,
		       ours_variant, peer, workload, mo, mt, gain, unit, r[4], r[5]);
	peer_json(b, structure, ours_variant, peer, workload, threads, mo, mt, r[0], r[1], r[2],
		  r[3], r[4], r[5], gain, n, unit, higher_is_better);
	fflush(stdout);
	b->nr_results++;
	return gain;
}

/* Run @fn on @threads threads, thread i pinned to allowed CPU i (wrapping);
 * each gets @arg and its index. Return: 0, or -1 if a thread could not start. */
struct peer_thread {
	pthread_t tid;
	int id;
	void *arg;
	void *(*fn)(void *arg, int id);
	void *ret;
};

static inline void *peer_thread_main(void *p)
{
	struct peer_thread *t = (struct peer_thread *)p;

	bench_pin(bench_allowed_cpu(t->id));
	t->ret = t->fn(t->arg, t->id);
	return NULL;
}

static inline int peer_run_threads(int threads, void *(*fn)(void *, int), void *arg,
				   struct peer_thread *th)
{
	for (int i = 0; i < threads; i++) {
		th[i].id = i;
		th[i].arg = arg;
		th[i].fn = fn;
		if (pthread_create(&th[i].tid, NULL, peer_thread_main, &th[i]) != 0)
			return -1;
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i].tid, NULL);
	return 0;
}

/*
 * peer_timed_run() - run @body(@arg, id) on @threads pinned threads twice,
 * a warm-up pass then a timed one, the threads meeting at a barrier before
 * each. Return: the slowest thread's wall time of the timed pass in ns, or
 * 0 if a thread could not start. @threads <= PEER_MAX_THREADS.
 */
#define PEER_MAX_THREADS 64

struct peer_timed {
	pthread_barrier_t start;
	void (*body)(void *arg, int id);
	void *arg;
	unsigned long long ns[PEER_MAX_THREADS];
};

static inline void *peer_timed_thread(void *p, int id)
{
	struct peer_timed *t = (struct peer_timed *)p;
	unsigned long long t0;

	pthread_barrier_wait(&t->start);
	t->body(t->arg, id);
	pthread_barrier_wait(&t->start);
	t0 = bench_now_ns();
	t->body(t->arg, id);
	t->ns[id] = bench_now_ns() - t0;
	return NULL;
}

static inline unsigned long long peer_timed_run(int threads, void (*body)(void *, int), void *arg)
{
	static struct peer_timed t;
	struct peer_thread th[PEER_MAX_THREADS];
	unsigned long long worst = 0;

	t.body = body;
	t.arg = arg;
	pthread_barrier_init(&t.start, NULL, (unsigned)threads);
	if (peer_run_threads(threads, peer_timed_thread, &t, th) != 0)
		return 0;
	pthread_barrier_destroy(&t.start);
	for (int i = 0; i < threads; i++)
		if (t.ns[i] > worst)
			worst = t.ns[i];
	return worst;
}

#endif /* CACHELOCAL_BENCH_PEERS_H */
