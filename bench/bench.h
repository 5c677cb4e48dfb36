/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.h - the harness every cachelocal benchmark uses.
 *
 * Rules it enforces (the house style, README.md §Benchmarks): variants of one experiment are
 * measured in the same run and reported as ratios; each number is the median
 * of >= 5 runs with min-max; every report names the id mode, the placement
 * (pinned/unpinned) and `uname -r`.
 *
 * Command line shared by all benchmarks:
 *   --runs N      repetitions per case (default 5, at least 5)
 *   --quick       smaller sizes (still >= 5 runs)
 *   --smoke       --quick with the smallest sizes a benchmark has: checks
 *                 that it runs and reports, its numbers mean nothing
 *   --json        print one JSON object per result instead of the table
 *   --json=PATH   print the table and append the JSON objects to PATH
 *   --help
 * Progress goes to stderr, results to stdout.
 *
 * Usage:
 *	struct bench b;
 *	bench_init(&b, "counter", argc, argv);
 *	for (r = 0; r < b.runs; r++) samples[r] = ...ns per op...;
 *	bench_report(&b, "add", "rseq", "pinned", 2, samples, b.runs, "ns/op");
 *	bench_ratio(&b, "add 2 threads", "shared-atomic / rseq", m_shared, m_rseq);
 *	return bench_finish(&b);
 */
#ifndef CACHELOCAL_BENCH_H
#define CACHELOCAL_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<cachelocal/rseq.h>)
#include <cachelocal/rseq.h>
#define BENCH_HAVE_ID_MODE 1
#endif
#endif

#define BENCH_MIN_RUNS 5
#define BENCH_MAX_RUNS 101

struct bench {
	const char *name;
	int runs;
	int quick;
	int smoke;
	int json_only;
	FILE *json;
	char kernel[128];
	const char *id_mode;
	int nr_results;
};

static inline unsigned long long bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* CPU time of the calling thread in nanoseconds (excludes time spent
 * waiting for a CPU: the robust measure on a loaded machine). */
static inline unsigned long long bench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Keep the compiler from deleting a computed value. */
#define BENCH_KEEP(x) __asm__ __volatile__("" : : "r"(x) : "memory")

static inline int bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * The CPUs the process was allowed at start. Captured once (bench_init calls
 * it first): after the main thread pins itself, sched_getaffinity() would
 * only report that one CPU, in it and in every thread it creates.
 */
static inline const cpu_set_t *bench_initial_cpus(void)
{
	static cpu_set_t set;
	static int done;

	if (!done) {
		if (sched_getaffinity(0, sizeof(set), &set) != 0) {
			CPU_ZERO(&set);
			CPU_SET(0, &set);
		}
		done = 1;
	}
	return &set;
}

static inline int bench_nr_allowed_cpus(void)
{
	return CPU_COUNT(bench_initial_cpus());
}

/* The n-th CPU allowed at start (wrapping), for pinning thread n. */
static inline int bench_allowed_cpu(int n)
{
	const cpu_set_t *set = bench_initial_cpus();
	int seen = 0, count = CPU_COUNT(set);

	if (count <= 0)
		return 0;
	n %= count;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, set) && seen++ == n)
			return c;
	return 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n samples (sorts a copy). */
static inline double bench_median(const double *v, int n)
{
	double tmp[BENCH_MAX_RUNS];

	if (n <= 0)
		return 0;
	if (n > BENCH_MAX_RUNS)
		n = BENCH_MAX_RUNS;
	memcpy(tmp, v, (size_t)n * sizeof(*v));
	qsort(tmp, (size_t)n, sizeof(*tmp), bench_cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static inline void bench_minmax(const double *v, int n, double *mn, double *mx)
{
	*mn = *mx = n > 0 ? v[0] : 0;
	for (int i = 1; i < n; i++) {
		if (v[i] < *mn)
			*mn = v[i];
		if (v[i] > *mx)
			*mx = v[i];
	}
}

static inline void bench_progress(const struct bench *b, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[%s] ", b->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static inline void bench_usage(const char *name)
{
	printf("usage: %s [--runs N] [--quick] [--smoke] [--json | --json=PATH] [--help]\n"
	       "  --runs N     repetitions per case (default %d, at least %d)\n"
	       "  --quick      smaller sizes\n"
	       "  --smoke      smallest sizes: checks that it runs, numbers mean nothing\n"
	       "  --json       one JSON object per result on stdout instead of the table\n"
	       "  --json=PATH  the table on stdout, JSON objects appended to PATH\n",
	       name, BENCH_MIN_RUNS, BENCH_MIN_RUNS);
}

/*
 * bench_init() - parse the shared options and print the report header.
 * Unknown options are left for the benchmark: it gets them back through
 * bench_extra_arg(). Exits 2 on a bad option value, 0 after --help.
 */
static inline void bench_init(struct bench *b, const char *name, int argc, char **argv)
{
	struct utsname u;

	memset(b, 0, sizeof(*b));
	b->name = name;
	(void)bench_initial_cpus(); /* before anything pins */
	b->runs = BENCH_MIN_RUNS;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);

			if (*end || v < BENCH_MIN_RUNS || v > BENCH_MAX_RUNS) {
				fprintf(stderr, "%s: --runs must be %d..%d\n", name, BENCH_MIN_RUNS,
					BENCH_MAX_RUNS);
				exit(2);
			}
			b->runs = (int)v;
		} else if (!strcmp(argv[i], "--quick")) {
			b->quick = 1;
		} else if (!strcmp(argv[i], "--smoke")) {
			b->quick = b->smoke = 1;
		} else if (!strcmp(argv[i], "--json")) {
			b->json_only = 1;
			b->json = stdout;
		} else if (!strncmp(argv[i], "--json=", 7)) {
			b->json = fopen(argv[i] + 7, "a");
			if (!b->json) {
				fprintf(stderr, "%s: cannot open %s: %s\n", name, argv[i] + 7,
					strerror(errno));
				exit(2);
			}
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			bench_usage(name);
			exit(0);
		}
	}
	if (uname(&u) == 0)
		snprintf(b->kernel, sizeof(b->kernel), "%s", u.release);
	else
		snprintf(b->kernel, sizeof(b->kernel), "unknown");
#ifdef BENCH_HAVE_ID_MODE
	b->id_mode = cl_id_mode_name(cl_id_mode());
#else
	b->id_mode = "n/a";
#endif
	if (!b->json_only) {
		printf("# %s: kernel %s, id mode %s, %d allowed CPUs, %d runs per case (median, min-max)\n",
		       name, b->kernel, b->id_mode, bench_nr_allowed_cpus(), b->runs);
		printf("%-28s %-22s %-10s %7s %14s %14s %14s  %s\n", "case", "variant", "placement",
		       "threads", "median", "min", "max", "unit");
	}
}

/* Is argv[i] one of the shared options (so a benchmark can skip it)? */
static inline int bench_is_shared_arg(int argc, char **argv, int *i)
{
	if (!strcmp(argv[*i], "--runs") && *i + 1 < argc) {
		(*i)++;
		return 1;
	}
	return !strcmp(argv[*i], "--quick") || !strcmp(argv[*i], "--smoke") ||
	       !strcmp(argv[*i], "--json") ||
	       !strncmp(argv[*i], "--json=", 7) || !strcmp(argv[*i], "--help");
}

/*
 * bench_only_shared_args() - for a benchmark with no options of its own:
 * exit 2 (usage on stderr) on anything bench_init() does not know, an
 * unknown option or a stray argument. Call before bench_init().
 */
static inline void bench_only_shared_args(const char *name, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (bench_is_shared_arg(argc, argv, &i) || !strcmp(argv[i], "-h"))
			continue;
		fprintf(stderr, "%s: unknown %s '%s' (see --help)\n", name,
			argv[i][0] == '-' ? "option" : "argument", argv[i]);
		exit(2);
	}
}

/*
 * bench_report() - one result: n samples of one case/variant.
 * Return: the median.
 */
static inline double bench_report(struct bench *b, const char *case_name, const char *variant,
				  const char *placement, int threads, const double *samples, int n,
				  const char *unit)
{
	double med = bench_median(samples, n), mn, mx;

	bench_minmax(samples, n, &mn, &mx);
	if (!b->json_only)
		printf("%-28s %-22s %-10s %7d %14.3f %14.3f %14.3f  %s\n", case_name, variant,
		       placement, threads, med, mn, mx, unit);
	if (b->json) {
		fprintf(b->json,
			"{\"bench\":\"%s\",\"case\":\"%s\",\"variant\":\"%s\",\"placement\":\"%s\","
			"\"threads\":%d,\"unit\":\"%s\",\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,"
			"\"runs\":%d,\"id_mode\":\"%s\",\"kernel\":\"%s\"}\n",
			b->name, case_name, variant, placement, threads, unit, med, mn, mx, n, b->id_mode,
			b->kernel);
		fflush(b->json);
	}
	fflush(stdout);
	b->nr_results++;
	return med;
}

/*
 * bench_ratio() - report num/den for one comparison ("how many times better").
 * Return: the ratio (0 if den is 0).
 */
static inline double bench_ratio(struct bench *b, const char *case_name, const char *what,
				 double num, double den)
{
	double r = den != 0 ? num / den : 0;

	if (!b->json_only)
		printf("  ratio %-24s %-40s %8.2fx\n", case_name, what, r);
	if (b->json) {
		fprintf(b->json,
			"{\"bench\":\"%s\",\"case\":\"%s\",\"ratio\":\"%s\",\"value\":%.4f,"
			"\"id_mode\":\"%s\",\"kernel\":\"%s\"}\n",
			b->name, case_name, what, r, b->id_mode, b->kernel);
		fflush(b->json);
	}
	fflush(stdout);
	return r;
}

static inline int bench_finish(struct bench *b)
{
	if (b->json && b->json != stdout)
		fclose(b->json);
	if (!b->json_only)
		printf("# %s: %d results\n", b->name, b->nr_results);
	return b->nr_results > 0 ? 0 : 1;
}

#endif /* CACHELOCAL_BENCH_H */
