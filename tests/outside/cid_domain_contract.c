/* SPDX-License-Identifier: MIT */
/*
 * cid_domain_contract - a program outside the project (built against the installed
 * headers by `make install-check`, run as is and with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0), written only against the documented
 * cid.h API. It checks the documented claims about cid domains:
 *
 *  1. 32 threads x 20,000 acquire/release on this machine, for each policy:
 *     no cid is ever held by two threads at once (a shadow owner per cid,
 *     claimed and dropped by CAS around every hold), and no cid is >= the
 *     bound min(allowed CPUs, 32) (2 on a 2-CPU machine);
 *  2. the bound is 1 with one user, and that user always gets cid 0;
 *  3. two threads pinned to two CPUs run bursts one at a time in a random
 *     order: the share of bursts whose cid was last used on the same CPU is
 *     >= 95% for RECENT and LLC, and about half for NAIVE (printed).
 *
 * Exit status: 0 if every claim holds, 1 otherwise. Takes a few seconds.
 */
#include <cachelocal/cid.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTHREADS 32
#define ITERS 20000
#define BURSTS 1000
#define MAXCID 4096

static int failures;

static void check(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok)
		failures++;
}

static const enum cl_cid_policy policies[3] = {CL_CID_NAIVE, CL_CID_RECENT, CL_CID_LLC};

/* ---- 1. hammer ---- */

static struct cl_cid_domain *hd;
static atomic_int owner[MAXCID];
static atomic_long twice, too_big, errors;
static atomic_int highest;
static pthread_barrier_t start;
static unsigned expect_bound;

static void *hammer(void *arg)
{
	int me = (int)(long)arg + 1;

	if (cl_cid_domain_join(hd) != 0)
		atomic_fetch_add(&errors, 1);
	pthread_barrier_wait(&start);
	for (int i = 0; i < ITERS; i++) {
		int cid = cl_cid_acquire(hd), free_ = 0;

		if (cid < 0 || cid >= MAXCID) {
			atomic_fetch_add(&errors, 1);
			continue;
		}
		if ((unsigned)cid >= expect_bound)
			atomic_fetch_add(&too_big, 1);
		if (cid > atomic_load_explicit(&highest, memory_order_relaxed))
			atomic_store(&highest, cid); /* racy max is fine: any > bound is caught above */
		if (!atomic_compare_exchange_strong(&owner[cid], &free_, me))
			atomic_fetch_add(&twice, 1);
		if ((i & 31) == 0)
			sched_yield();
		int mine = me;
		if (!atomic_compare_exchange_strong(&owner[cid], &mine, 0))
			atomic_fetch_add(&twice, 1);
		cl_cid_release(hd, cid);
	}
	pthread_barrier_wait(&start);
	cl_cid_domain_leave(hd);
	return NULL;
}

static void run_hammer(enum cl_cid_policy p, int nallowed)
{
	pthread_t th[NTHREADS];
	struct cl_cid_stats s;
	struct timespec t0, t1;
	char line[256];

	hd = cl_cid_domain_create(p, NULL);
	if (!hd) {
		check(0, "cl_cid_domain_create");
		return;
	}
	atomic_store(&twice, 0);
	atomic_store(&too_big, 0);
	atomic_store(&errors, 0);
	atomic_store(&highest, -1);
	expect_bound = (unsigned)(nallowed < NTHREADS ? nallowed : NTHREADS);
	pthread_barrier_init(&start, NULL, NTHREADS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, hammer, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_barrier_destroy(&start);
	cl_cid_domain_stats(hd, &s);
	printf("%-6s %d threads x %d: %.2f s, highest cid %d, bound %u; recent %llu, llc %llu, "
	       "spread %llu, lowest %llu, fallback %llu, slept %llu\n",
	       cl_cid_policy_name(p), NTHREADS, ITERS,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       atomic_load(&highest), expect_bound, s.recent_hits, s.llc_hits, s.spreads, s.lowest,
	       s.fallbacks, s.waits);
	snprintf(line, sizeof(line), "no cid held twice (%ld violations)", atomic_load(&twice));
	check(atomic_load(&twice) == 0, line);
	snprintf(line, sizeof(line), "no cid >= %u (%ld seen)", expect_bound, atomic_load(&too_big));
	check(atomic_load(&too_big) == 0, line);
	check(atomic_load(&errors) == 0, "every join/acquire succeeded");
	check(s.acquisitions == (unsigned long long)NTHREADS * ITERS, "stats count every acquire");
	check(s.held == 0 && s.users == 0, "all released, all left");
	cl_cid_domain_destroy(hd);
}

/* ---- 3. pinned bursts ---- */

struct burster {
	pthread_t th;
	int cpu;
	sem_t go;
	int cid, ran_on;
};

static struct cl_cid_domain *bd;
static sem_t burst_done;
static atomic_int stop;

static void *burst_loop(void *arg)
{
	struct burster *b = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(b->cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0 ||
	    cl_cid_domain_join(bd) != 0)
		atomic_fetch_add(&errors, 1);
	sem_post(&burst_done);
	for (;;) {
		sem_wait(&b->go);
		if (atomic_load(&stop))
			break;
		b->cid = cl_cid_acquire(bd);
		b->ran_on = sched_getcpu();
		for (volatile int k = 0; k < 2000; k++)
			; /* touch the cid's data */
		cl_cid_release(bd, b->cid);
		sem_post(&burst_done);
	}
	return NULL;
}

static double run_bursts(enum cl_cid_policy p, const int cpus[2])
{
	struct burster b[2];
	int last_cpu[MAXCID];
	int same = 0, reused = 0, bad = 0;
	unsigned seed = (unsigned)time(NULL);

	bd = cl_cid_domain_create(p, NULL);
	if (!bd)
		return -1;
	atomic_store(&stop, 0);
	atomic_store(&errors, 0);
	sem_init(&burst_done, 0, 0);
	for (int i = 0; i < MAXCID; i++)
		last_cpu[i] = -1;
	for (int i = 0; i < 2; i++) {
		b[i].cpu = cpus[i];
		sem_init(&b[i].go, 0, 0);
		pthread_create(&b[i].th, NULL, burst_loop, &b[i]);
	}
	sem_wait(&burst_done);
	sem_wait(&burst_done); /* both joined: bound 2 */
	for (int n = 0; n < BURSTS; n++) {
		struct burster *w = &b[rand_r(&seed) & 1];

		sem_post(&w->go);
		sem_wait(&burst_done);
		if (w->cid < 0 || w->cid >= MAXCID || w->ran_on != w->cpu) {
			bad++;
			continue;
		}
		if (last_cpu[w->cid] >= 0) {
			reused++;
			same += last_cpu[w->cid] == w->ran_on;
		}
		last_cpu[w->cid] = w->ran_on;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		sem_post(&b[i].go);
		pthread_join(b[i].th, NULL);
		sem_destroy(&b[i].go);
	}
	sem_destroy(&burst_done);
	cl_cid_domain_destroy(bd);
	if (bad || atomic_load(&errors) || reused == 0)
		return -1;
	return 100.0 * same / reused;
}

int main(void)
{
	cpu_set_t set;
	int cpus[CPU_SETSIZE], nallowed = 0;
	char line[256];

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nallowed++] = c;
	printf("cid_domain_contract: %d allowed CPUs, id mode %s, GLIBC_TUNABLES=%s\n", nallowed,
	       cl_id_mode_name(cl_id_mode()), getenv("GLIBC_TUNABLES") ? getenv("GLIBC_TUNABLES") : "");

	printf("1. uniqueness and bound under %d threads x %d acquire/release\n", NTHREADS, ITERS);
	for (int i = 0; i < 3; i++)
		run_hammer(policies[i], nallowed);

	printf("2. one user\n");
	for (int i = 0; i < 3; i++) {
		struct cl_cid_domain *d = cl_cid_domain_create(policies[i], NULL);
		int all_zero = 1;

		if (!d || cl_cid_domain_join(d) != 0) {
			check(0, "create + join");
			continue;
		}
		for (int k = 0; k < 1000; k++) {
			int c = cl_cid_acquire(d);

			all_zero &= c == 0;
			cl_cid_release(d, c);
		}
		snprintf(line, sizeof(line), "%s: bound %u with one user, cid always 0: %s",
			 cl_cid_policy_name(policies[i]), cl_cid_domain_bound(d),
			 all_zero ? "yes" : "no");
		check(cl_cid_domain_bound(d) == 1 && all_zero, line);
		cl_cid_domain_destroy(d);
	}

	printf("3. two threads pinned to CPUs %d and %d, %d bursts one at a time, random order\n",
	       cpus[0], nallowed > 1 ? cpus[1] : -1, BURSTS);
	if (nallowed < 2) {
		printf("  skipped: needs 2 allowed CPUs\n");
	} else {
		double pct[3];

		for (int i = 0; i < 3; i++) {
			pct[i] = run_bursts(policies[i], cpus);
			printf("  %-6s same cid on the same CPU: %.1f%% of bursts\n",
			       cl_cid_policy_name(policies[i]), pct[i]);
		}
		check(pct[0] >= 0 && pct[1] >= 0 && pct[2] >= 0, "every burst ran on its CPU");
		check(pct[1] >= 95.0, "RECENT >= 95%");
		check(pct[2] >= 95.0, "LLC >= 95%");
		snprintf(line, sizeof(line), "NAIVE about half (%.1f%%, expected 35..65%%)", pct[0]);
		check(pct[0] >= 35.0 && pct[0] <= 65.0, line);
	}
	printf("cid_domain_contract: %s\n", failures ? "FAILED" : "all claims hold");
	return failures ? 1 : 0;
}
