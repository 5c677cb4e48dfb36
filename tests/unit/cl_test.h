/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/cl_test.h - shared helpers for the Criterion unit tests.
 *
 * Every unit test binary is run by scripts/run-tests.sh in three id modes;
 * CL_TEST_MODE in the environment says which: "default" (glibc owns rseq),
 * "glibc-off" (GLIBC_TUNABLES=glibc.pthread.rseq=0) or "no-rseq" (the rseq
 * syscall fails with ENOSYS).
 *
 * Include Criterion only through this header, and use only Test(),
 * cr_assert*, cr_expect*, cr_skip_test and cr_log_*: TSan builds replace
 * Criterion with tests/unit/crshim.h, which implements that subset.
 */
#ifndef CL_TEST_H
#define CL_TEST_H

#ifdef CL_TEST_SHIM
#include "crshim.h" /* TSan builds: Criterion cannot start under TSan here */
#else
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The id mode this run was started in (see above); "default" if unset. */
static inline const char *cl_test_mode(void)
{
	const char *m = getenv("CL_TEST_MODE");

	return m && *m ? m : "default";
}

/* Pin the calling thread to one CPU; 0 or an errno value. */
static inline int cl_test_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The CPUs this process may run on, in order; returns how many (<= max). */
static inline int cl_test_allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/* Read a whole small file into buf (NUL-terminated); bytes read or -1. */
static inline long cl_test_slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (long)n;
}

/* Resident set size of this process, bytes (/proc/self/statm). */
static inline long cl_test_rss_bytes(void)
{
	char buf[256];
	long size = 0, res = 0;

	cr_assert_gt(cl_test_slurp("/proc/self/statm", buf, sizeof(buf)), 0);
	cr_assert_eq(sscanf(buf, "%ld %ld", &size, &res), 2);
	return res * sysconf(_SC_PAGESIZE);
}

#endif /* CL_TEST_H */
