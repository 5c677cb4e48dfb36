/* SPDX-License-Identifier: MIT */
/*
 * bench/rtbench.h - what the runtime benchmarks (pipe, messaging, schbench,
 * tbench) share on top of bench.h: strict option parsing (an unknown option
 * is an error, exit 2), running the kernel's `perf bench sched ...` side by
 * side, and futex waits for the main thread.
 */
#ifndef CACHELOCAL_RTBENCH_H
#define CACHELOCAL_RTBENCH_H

#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

/* Numeric option value; exit 2 if missing or malformed. */
static inline long rtb_num_arg(const char *prog, int argc, char **argv, int *i, long min, long max)
{
	char *end;
	double v;

	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs a value\n", prog, argv[*i]);
		exit(2);
	}
	v = strtod(argv[++*i], &end); /* accepts 1e6 */
	if (*end || v < (double)min || v > (double)max || v != (double)(long)v) {
		fprintf(stderr, "%s: %s must be an integer in %ld..%ld\n", prog, argv[*i - 1], min, max);
		exit(2);
	}
	return (long)v;
}

/* Reject an option nobody handled. */
static inline void rtb_unknown(const char *prog, const char *arg)
{
	fprintf(stderr, "%s: unknown option '%s' (try --help)\n", prog, arg);
	exit(2);
}

/* Is `perf` runnable here? */
static inline int rtb_have_perf(void)
{
	return system("perf --version >/dev/null 2>&1") == 0;
}

/*
 * Run @cmd (a `perf bench sched ...` line), find the line containing @key
 * and return the number on it: "Total time: 0.222 [sec]" -> 0.222,
 * "2.224840 usecs/op" -> 2.22484. Returns -1 if the command failed or the
 * line is missing.
 */
static inline double rtb_run_kernel(const char *cmd, const char *key)
{
	char line[512];
	double v = -1;
	FILE *f = popen(cmd, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *k = strstr(line, key), *p = line;

		if (!k)
			continue;
		while (*p && !((*p >= '0' && *p <= '9') || *p == '.'))
			p++;
		if (*p)
			v = strtod(p, NULL);
	}
	if (pclose(f) != 0)
		return -1;
	return v;
}

/* Block the calling (non-task) thread until *word != val. */
static inline void rtb_futex_wait(int *word, int val)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val)
		syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static inline void rtb_futex_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

#ifdef CACHELOCAL_SCHED_RUNTIME_H
/*
 * The start gate of the hackbench-shaped benchmarks: wait until all @n
 * tasks counted themselves in *@ready (each then parks on @gate), release
 * them by closing @gate and join them all. *@ns: from the release to the
 * last join. Returns 0, or -1 if a join failed or a task returned non-NULL.
 */
static inline int rtb_release_join(int *ready, int n, struct cl_chan *gate, struct cl_rt_task **h,
				   uint64_t *ns)
{
	uint64_t t0;
	int ok = 1;

	for (int v; (v = __atomic_load_n(ready, __ATOMIC_ACQUIRE)) < n;)
		rtb_futex_wait(ready, v);
	t0 = bench_now_ns();
	cl_chan_close(gate);
	for (int i = 0; i < n; i++) {
		void *r;

		if (cl_join(h[i], &r) || r)
			ok = 0;
	}
	*ns = bench_now_ns() - t0;
	return ok ? 0 : -1;
}
#endif

/* Print a goal line: met or missed, never silently. */
static inline void rtb_goal(struct bench *b, const char *what, double value, double goal, int higher)
{
	int met = higher ? value >= goal : value <= goal;

	if (!b->json_only)
		printf("goal %-44s %s (%.2f; goal %s %.2f)\n", what, met ? "MET" : "MISSED", value,
		       higher ? ">=" : "<=", goal);
}

#endif /* CACHELOCAL_RTBENCH_H */
