/* SPDX-License-Identifier: MIT */
/*
 * counter_contract.c - the counter contract, as a program outside the
 * project: written only against the documented counter.h signatures, built
 * against the installed headers (make install-check), which runs it once
 * normally and once with GLIBC_TUNABLES=glibc.pthread.rseq=0.
 *
 * 1. 8 threads x 2,000,000 cl_counter_add(c, 1) must read back as exactly
 *    16,000,000 (exit 1 otherwise).
 * 2. With 2 threads, the counter's throughput against one shared
 *    atomic_fetch_add: median of 5 alternating runs, printed (a timing is
 *    evidence to read, never a pass/fail condition here; bench/counter is
 *    the full benchmark). The two threads are pinned to two different
 *    allowed CPUs when there are two, so the atomic really bounces between
 *    CPUs and each counter thread has a CPU of its own.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cachelocal/counter.h>

#define NR_THREADS 8
#define NR_ADDS 2000000L
#define RATIO_ADDS 2000000L
#define RATIO_RUNS 5

static struct cl_counter counter;
static _Atomic long long shared;
static pthread_barrier_t barrier;

struct arg {
	long n;
	int use_counter;
	int cpu; /* pin to this CPU, or -1 */
	double t0, t1;
};

static int pin_cpus[2] = { -1, -1 };

/* The first two allowed CPUs, if there are two. */
static void find_pin_cpus(void)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			pin_cpus[n++] = c;
	if (n < 2)
		pin_cpus[0] = pin_cpus[1] = -1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *adder(void *p)
{
	struct arg *a = p;

	if (a->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(a->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_barrier_wait(&barrier);
	a->t0 = now();
	if (a->use_counter) {
		for (long i = 0; i < a->n; i++)
			cl_counter_add(&counter, 1);
	} else {
		for (long i = 0; i < a->n; i++)
			atomic_fetch_add_explicit(&shared, 1, memory_order_relaxed);
	}
	a->t1 = now();
	return NULL;
}

/* nthreads x n adds; returns the wall time from first start to last end. */
static double run(int nthreads, long n, int use_counter, int pin)
{
	pthread_t t[NR_THREADS];
	struct arg a[NR_THREADS];
	double t0 = 1e300, t1 = 0;

	pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		a[i] = (struct arg){ n, use_counter, pin && i < 2 ? pin_cpus[i] : -1, 0, 0 };
		if (pthread_create(&t[i], NULL, adder, &a[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		if (a[i].t0 < t0)
			t0 = a[i].t0;
		if (a[i].t1 > t1)
			t1 = a[i].t1;
	}
	pthread_barrier_destroy(&barrier);
	return t1 - t0;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

int main(void)
{
	const char *tun = getenv("GLIBC_TUNABLES");
	double tc[RATIO_RUNS], ta[RATIO_RUNS];
	int64_t got;

	if (cl_counter_init(&counter) != 0) {
		perror("cl_counter_init");
		return 1;
	}
	printf("counter_contract: GLIBC_TUNABLES=%s, id mode %s, ops mode %s\n", tun ? tun : "(unset)",
	       cl_id_mode_name(cl_id_mode()), cl_rseq_ops_mode_name(cl_rseq_ops_mode()));

	/* 1. exact sum */
	run(NR_THREADS, NR_ADDS, 1, 0);
	got = cl_counter_read(&counter);
	printf("  %d threads x %ld cl_counter_add(c, 1): read %lld, expected %lld: %s\n", NR_THREADS,
	       NR_ADDS, (long long)got, (long long)NR_THREADS * NR_ADDS,
	       got == (int64_t)NR_THREADS * NR_ADDS ? "exact" : "WRONG");
	if (got != (int64_t)NR_THREADS * NR_ADDS)
		return 1;

	/* 2. speed with 2 threads, alternating counter / shared atomic */
	find_pin_cpus();
	for (int r = 0; r < RATIO_RUNS; r++) {
		tc[r] = run(2, RATIO_ADDS, 1, 1);
		ta[r] = run(2, RATIO_ADDS, 0, 1);
	}
	if (atomic_load(&shared) != (long long)RATIO_RUNS * 2 * RATIO_ADDS ||
	    cl_counter_read(&counter) !=
		    (int64_t)NR_THREADS * NR_ADDS + (int64_t)RATIO_RUNS * 2 * RATIO_ADDS) {
		printf("  ratio runs: wrong totals\n");
		return 1;
	}
	qsort(tc, RATIO_RUNS, sizeof(double), cmp);
	qsort(ta, RATIO_RUNS, sizeof(double), cmp);
	printf("  2 threads (%s) x %ld adds, median of %d alternating runs: cl_counter %.2f ns/add, "
	       "shared atomic_fetch_add %.2f ns/add (per thread): counter is %.2fx faster\n",
	       pin_cpus[0] >= 0 ? "pinned to 2 CPUs" : "unpinned", RATIO_ADDS, RATIO_RUNS, tc[RATIO_RUNS / 2] * 1e9 / RATIO_ADDS,
	       ta[RATIO_RUNS / 2] * 1e9 / RATIO_ADDS, ta[RATIO_RUNS / 2] / tc[RATIO_RUNS / 2]);
	cl_counter_destroy(&counter);
	return 0;
}
