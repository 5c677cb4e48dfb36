/* SPDX-License-Identifier: MIT */
/*
 * tests/smp/smp.h - shared bits of the programs that run inside the emulated
 * many-CPU guests (make check-smp) and on the host: environment knobs, the
 * online and allowed CPU lists, sysfs reading, an affinity flip that
 * tolerates CPUs going offline, failure accounting and the result line.
 *
 * The guests have no shell and a fault injector that, while a program runs,
 * may take random CPUs (never CPU 0) offline and online again, shrink the
 * process's allowed CPUs to half and back, or make rseq and membarrier fail
 * with ENOSYS. Nothing here assumes a fixed CPU set: every affinity change
 * may fail with EINVAL (the CPU went offline, or left the cpuset) and is
 * then skipped; a thread pinned to a CPU that goes offline is moved by the
 * kernel.
 *
 * Every program: exit 0 pass, 1 fail, 77 skip; the last line of stdout is
 * `PASS <name>: <summary>`, `FAIL <name>: <reason>` or `SKIP <name>: <why>`
 * (smp_finish(), smp_skip()). Common knob: DURATION (seconds, default 2,
 * fractions allowed).
 *
 * Include this first (it defines nothing the cachelocal headers define).
 */
#ifndef CL_SMP_H
#define CL_SMP_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Most CPU ids a program handles (ids beyond are ignored). */
#define SMP_MAX_CPUS 4096

/* ---- knobs ---- */

/* Integer knob: @name from the environment, @def if unset or malformed. */
static inline long smp_env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	return *end || errno || v < 0 ? def : v;
}

/* DURATION in seconds (default 2; fractions allowed, e.g. 0.5). */
static inline double smp_duration(void)
{
	const char *s = getenv("DURATION");
	char *end;
	double v;

	if (!s || !*s)
		return 2.0;
	v = strtod(s, &end);
	return *end || !(v >= 0.0) ? 2.0 : v;
}

static inline double smp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep @secs seconds (the programs' run time, never a rendezvous). */
static inline void smp_sleep(double secs)
{
	struct timespec ts;

	if (!(secs > 0))
		return;
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ---- sysfs ---- */

/*
 * smp_read_file() - the first line of @path (newline stripped) into @buf.
 * Return: 0, or -1 (missing, unreadable, empty).
 */
static inline int smp_read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/*
 * smp_parse_cpulist() - a sysfs CPU list ("0-3,8,10-11", "" = none) into
 * @set (SMP_MAX_CPUS bytes, 1 = listed; zeroed first).
 * Return: the number of CPUs listed, or -1 if malformed.
 */
static inline int smp_parse_cpulist(const char *s, unsigned char *set)
{
	int n = 0;

	memset(set, 0, SMP_MAX_CPUS);
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s || a < 0 || a >= SMP_MAX_CPUS)
			return -1;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b >= SMP_MAX_CPUS)
				return -1;
			s = end;
		}
		for (long c = a; c <= b; c++)
			if (!set[c]) {
				set[c] = 1;
				n++;
			}
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
		else
			break;
	}
	return n;
}

/* smp_parse_cpulist() of a file; -1 if missing or malformed. */
static inline int smp_read_cpulist(const char *path, unsigned char *set)
{
	char buf[8192];

	if (smp_read_file(path, buf, sizeof(buf)) != 0) {
		/* an empty file (a node without CPUs) reads as no line */
		FILE *f = fopen(path, "re");

		if (!f)
			return -1;
		fclose(f);
		memset(set, 0, SMP_MAX_CPUS);
		return 0;
	}
	return smp_parse_cpulist(buf, set);
}

/* ---- CPU sets ---- */

/*
 * struct smp_cpus - a list of CPU ids, ascending.
 */
struct smp_cpus {
	int nr;
	int id[SMP_MAX_CPUS];
};

/* The online CPUs now (sysfs; sched_getaffinity if unreadable). */
static inline void smp_online_cpus(struct smp_cpus *out)
{
	unsigned char set[SMP_MAX_CPUS];

	out->nr = 0;
	if (smp_read_cpulist("/sys/devices/system/cpu/online", set) > 0) {
		for (int c = 0; c < SMP_MAX_CPUS; c++)
			if (set[c])
				out->id[out->nr++] = c;
		return;
	}
	cpu_set_t cs;

	if (sched_getaffinity(0, sizeof(cs), &cs) == 0)
		for (int c = 0; c < CPU_SETSIZE && c < SMP_MAX_CPUS; c++)
			if (CPU_ISSET(c, &cs))
				out->id[out->nr++] = c;
	if (out->nr == 0)
		out->id[out->nr++] = 0;
}

/* The calling thread's allowed CPUs now (never empty: {0} if unknown). */
static inline void smp_allowed_cpus(struct smp_cpus *out)
{
	cpu_set_t cs;

	out->nr = 0;
	if (sched_getaffinity(0, sizeof(cs), &cs) == 0)
		for (int c = 0; c < CPU_SETSIZE && c < SMP_MAX_CPUS; c++)
			if (CPU_ISSET(c, &cs))
				out->id[out->nr++] = c;
	if (out->nr == 0)
		out->id[out->nr++] = 0;
}

/*
 * smp_pin_self() - run the calling thread on @cpu only.
 * Return: 0, or -1 when the kernel refuses (EINVAL: @cpu offline or outside
 * the cpuset; the thread's affinity is then unchanged): callers skip it.
 */
static inline int smp_pin_self(int cpu)
{
	cpu_set_t cs;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -1;
	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	return sched_setaffinity(0, sizeof(cs), &cs) == 0 ? 0 : -1;
}

/*
 * smp_unpin_self() - allow the calling thread every CPU of @cpus (the kernel
 * intersects with the cpuset). Return: 0, or -1 (none of them usable now).
 */
static inline int smp_unpin_self(const struct smp_cpus *cpus)
{
	cpu_set_t cs;

	CPU_ZERO(&cs);
	for (int i = 0; i < cpus->nr; i++)
		if (cpus->id[i] < CPU_SETSIZE)
			CPU_SET(cpus->id[i], &cs);
	return sched_setaffinity(0, sizeof(cs), &cs) == 0 ? 0 : -1;
}

/* xorshift32; *s must not be 0. */
static inline unsigned smp_rand(unsigned *s)
{
	unsigned x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

/*
 * smp_flip() - the migration step of the programs: pin the calling thread
 * to a random CPU of @cpus (one in four flips: all of @cpus), trying a few
 * others when the kernel refuses one (offline, or out of the cpuset now).
 * Return: the CPU pinned to, -2 for "all of @cpus", -1 if every try was
 * refused (the affinity is unchanged: the caller goes on).
 */
static inline int smp_flip(const struct smp_cpus *cpus, unsigned *seed)
{
	if (cpus->nr > 1 && smp_rand(seed) % 4 == 0)
		return smp_unpin_self(cpus) == 0 ? -2 : -1;
	for (int tries = 0; tries < 4; tries++) {
		int cpu = cpus->id[smp_rand(seed) % (unsigned)cpus->nr];

		if (smp_pin_self(cpu) == 0)
			return cpu;
	}
	return -1;
}

/* ---- failures and the result line ---- */

static inline int *smp__failures(void)
{
	static int failures;

	return &failures;
}

/*
 * smp_check() - count a failure when @ok is 0; the first 20 are printed
 * (to stdout, prefixed "check failed: "). Thread-safe. Returns @ok.
 */
static inline int smp_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int smp_check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return 1;
	if (__atomic_fetch_add(smp__failures(), 1, __ATOMIC_RELAXED) < 20) {
		char line[1024];

		va_start(ap, fmt);
		vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		printf("check failed: %s\n", line);
		fflush(stdout);
	}
	return 0;
}

/* Failures counted so far. */
static inline int smp_failures(void)
{
	return __atomic_load_n(smp__failures(), __ATOMIC_RELAXED);
}

/*
 * smp_finish() - print the last line and return the exit status: PASS with
 * @fmt's summary when no check failed, else FAIL with the failure count.
 */
static inline int smp_finish(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int smp_finish(const char *name, const char *fmt, ...)
{
	char summary[1024];
	va_list ap;
	int n = smp_failures();

	va_start(ap, fmt);
	vsnprintf(summary, sizeof(summary), fmt, ap);
	va_end(ap);
	if (n)
		printf("FAIL %s: %d check(s) failed (%s)\n", name, n, summary);
	else
		printf("PASS %s: %s\n", name, summary);
	fflush(stdout);
	return n ? 1 : 0;
}

/* Print "<tag> <name>: <message>" as the last line; returns @rc. */
static inline int smp__line(const char *tag, const char *name, int rc, const char *fmt, va_list ap)
{
	char why[1024];

	vsnprintf(why, sizeof(why), fmt, ap);
	printf("%s %s: %s\n", tag, name, why);
	fflush(stdout);
	return rc;
}

/* smp_fatal() - FAIL line for an error that stops the program; returns 1. */
static inline int smp_fatal(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline int smp_fatal(const char *name, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = smp__line("FAIL", name, 1, fmt, ap);
	va_end(ap);
	return rc;
}

/* smp_skip() - SKIP line; returns 77. */
static inline int smp_skip(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int smp_skip(const char *name, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = smp__line("SKIP", name, 77, fmt, ap);
	va_end(ap);
	return rc;
}

/* Print the environment a result depends on: kernel, CPUs, id modes. */
static inline void smp_banner(const char *name)
{
	char rel[128] = "?";
	struct smp_cpus on, al;

	smp_read_file("/proc/sys/kernel/osrelease", rel, sizeof(rel));
	smp_online_cpus(&on);
	smp_allowed_cpus(&al);
	printf("%s: kernel %s, %d online CPUs, %d allowed, DURATION %.2f s\n", name, rel, on.nr,
	       al.nr, smp_duration());
	fflush(stdout);
}

/* pthread_create() or FAIL: exits the program (nothing sound is left). */
static inline void smp_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int e = pthread_create(t, NULL, fn, arg);

	if (e) {
		printf("FAIL smp: pthread_create: %s\n", strerror(e));
		exit(1);
	}
}

/* ---- a timed run of worker threads ---- */

/* The run in progress (one at a time per program). */
struct smp__run {
	pthread_barrier_t bar;
	int stop;
};

static inline struct smp__run *smp__run(void)
{
	static struct smp__run run;

	return &run;
}

/* Has the running smp_run() asked its workers to stop? */
static inline int smp_stopping(void)
{
	return __atomic_load_n(&smp__run()->stop, __ATOMIC_RELAXED);
}

/*
 * smp_barrier() - a rendezvous of the workers and smp_run(). Each worker
 * calls it exactly @barriers times (smp_run()'s argument): the first when
 * it is ready (smp_run() starts the clock once all are), the others after
 * smp_stopping() turned true (e.g. to keep every worker a user of something
 * until all are done).
 */
static inline void smp_barrier(void)
{
	pthread_barrier_wait(&smp__run()->bar);
}

/*
 * smp_run() - start @nr threads of @fn(arg = worker index), let them work
 * for @secs seconds after all reached their first smp_barrier(), then ask
 * them to stop, meet them at their other @barriers - 1 barriers, and join.
 */
static inline void smp_run(int nr, void *(*fn)(void *), double secs, int barriers)
{
	struct smp__run *run = smp__run();
	pthread_t *th = (pthread_t *)calloc((size_t)nr, sizeof(*th));

	if (!th) {
		printf("FAIL smp: out of memory\n");
		exit(1);
	}
	pthread_barrier_init(&run->bar, NULL, (unsigned)nr + 1);
	__atomic_store_n(&run->stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < nr; i++)
		smp_thread(&th[i], fn, (void *)(uintptr_t)i);
	smp_barrier();
	smp_sleep(secs);
	__atomic_store_n(&run->stop, 1, __ATOMIC_RELAXED);
	for (int b = 1; b < barriers; b++)
		smp_barrier();
	for (int i = 0; i < nr; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&run->bar);
	free(th);
}

#endif /* CL_SMP_H */
