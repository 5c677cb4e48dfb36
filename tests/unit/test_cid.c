/* SPDX-License-Identifier: MIT */
/*
 * Tests for cachelocal/cid.h: userspace concurrency-ID domains.
 *
 * Run by scripts/run-tests.sh in the three id modes (glibc rseq, self
 * registered rseq, no rseq): cl_cid_acquire() takes its CPU from cl_cpu_id(),
 * whose source differs in each; the invariants must hold in all of them.
 * Worker threads never call cr_assert (Criterion asserts belong to the test
 * thread): they count violations in atomics that the test thread checks.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Variant build (test_cid.variants): CL_INJECT(n) yields at every 4th race
 * point of cid.h (between reading a cid's state and the CAS that takes it,
 * and before each CAS of the spread cursor), so the uniqueness and bound
 * tests run with those windows widened.
 */
#ifdef CID_TEST_INJECT
#include <sched.h>
static atomic_uint cid_test_injections;
static inline void cid_test_inject(int n)
{
	(void)n;
	if ((atomic_fetch_add_explicit(&cid_test_injections, 1, memory_order_relaxed) & 3) == 0)
		sched_yield();
}
#endif

#include <cachelocal/cid.h>
#include <cachelocal/percpu.h>

#include "cl_test.h"

#define MAX_CIDS 256
#define WORDS(n) (((n) + 8 * sizeof(unsigned long) - 1) / (8 * sizeof(unsigned long)))

static const enum cl_cid_policy all_policies[] = {CL_CID_NAIVE, CL_CID_RECENT, CL_CID_LLC};

/* A hand-built topology: n CPUs, per_llc consecutive CPUs per LLC. */
static void fake_topology(struct cl_topology *t, unsigned n, unsigned per_llc)
{
	memset(t, 0, sizeof(*t));
	t->cpu = calloc(n, sizeof(*t->cpu));
	cr_assert_not_null(t->cpu);
	t->nr_cpu_ids = t->nr_possible = t->nr_present = t->nr_online = n;
	t->nr_cores = t->nr_l2s = n;
	t->nr_llcs = (n + per_llc - 1) / per_llc;
	t->nr_nodes = 1;
	for (unsigned i = 0; i < n; i++) {
		t->cpu[i].possible = t->cpu[i].present = t->cpu[i].online = 1;
		t->cpu[i].package = 0;
		t->cpu[i].core = t->cpu[i].l2 = (int)i;
		t->cpu[i].llc = (int)(i / per_llc);
		t->cpu[i].node = 0;
	}
}

static void mask_range(unsigned long *mask, size_t words, unsigned from, unsigned to)
{
	memset(mask, 0, words * sizeof(*mask));
	for (unsigned i = from; i < to; i++)
		mask[i / (8 * sizeof(unsigned long))] |= 1ul << (i % (8 * sizeof(unsigned long)));
}

static struct cl_cid_stats stats_of(const struct cl_cid_domain *d)
{
	struct cl_cid_stats s;

	cr_assert_eq(cl_cid_domain_stats(d, &s), 0);
	return s;
}

/* ------------------------------------------------------------ bad input */

Test(cid, bad_input)
{
	struct cl_cid_domain *d;
	struct cl_cid_stats s;
	unsigned long mask[1] = {0};

	cr_log_info("id mode %s (%s)", cl_id_mode_name(cl_id_mode()), cl_test_mode());
	errno = 0;
	cr_assert_null(cl_cid_domain_create((enum cl_cid_policy)7, NULL));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(cl_cid_domain_create((enum cl_cid_policy)-1, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(cl_cid_policy_name((enum cl_cid_policy)7), "invalid");
	cr_assert_str_eq(cl_cid_policy_name(CL_CID_LLC), "llc");

	errno = 0;
	cr_assert_eq(cl_cid_acquire(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_acquire_on(NULL, 0), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cl_cid_release(NULL, 0);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_domain_join(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_domain_leave(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_domain_refresh_allowed(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_domain_bound(NULL), 0u);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_cid_domain_stats(NULL, &s), -1);
	cr_assert_eq(errno, EINVAL);
	cl_cid_domain_destroy(NULL);

	for (size_t p = 0; p < sizeof(all_policies) / sizeof(all_policies[0]); p++) {
		d = cl_cid_domain_create(all_policies[p], NULL);
		cr_assert_not_null(d, "create %s: %s", cl_cid_policy_name(all_policies[p]),
				   strerror(errno));
		s = stats_of(d);
		cr_assert_geq(s.nr_cids, 1u);
		errno = 0;
		cr_assert_eq(cl_cid_domain_stats(d, NULL), -1);
		cr_assert_eq(errno, EINVAL);

		/* No users: bound 0, acquire refused (not a hang). */
		cr_assert_eq(cl_cid_domain_bound(d), 0u);
		errno = 0;
		cr_assert_eq(cl_cid_acquire(d), -1);
		cr_assert_eq(errno, EBUSY);
		errno = 0;
		cr_assert_eq(cl_cid_domain_leave(d), -1);
		cr_assert_eq(errno, EINVAL);
		/* A mask with no CPU in the cid space. */
		errno = 0;
		cr_assert_eq(cl_cid_domain_join_cpus(d, mask, 64), -1);
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_eq(cl_cid_domain_join_cpus(d, NULL, 64), -1);
		cr_assert_eq(errno, EINVAL);
		cr_assert_eq(stats_of(d).users, 0u);

		cr_assert_eq(cl_cid_domain_join(d), 0);
		errno = 0;
		cr_assert_eq(cl_cid_acquire_on(d, -1), -1);
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_eq(cl_cid_acquire_on(d, (int)s.nr_cids), -1);
		cr_assert_eq(errno, EINVAL);

		int c = cl_cid_acquire(d);
		cr_assert_eq(c, 0, "one user: the only cid is 0, got %d", c);
		/* The one user acquiring twice would be a second holder. */
		errno = 0;
		cr_assert_eq(cl_cid_acquire(d), -1);
		cr_assert_eq(errno, EBUSY);
		cr_assert_eq(stats_of(d).busy, 2u); /* with the no-users one */

		/* Releases that are errors: no-ops with EINVAL. */
		errno = 0;
		cl_cid_release(d, -1);
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cl_cid_release(d, (int)s.nr_cids);
		cr_assert_eq(errno, EINVAL);
		if (s.nr_cids > 1) {
			errno = 0;
			cl_cid_release(d, 1); /* in range, not held */
			cr_assert_eq(errno, EINVAL);
		}
		cr_assert_eq(stats_of(d).held, 1u);
		errno = 0;
		cl_cid_release(d, c);
		cr_assert_eq(errno, 0);
		cr_assert_eq(stats_of(d).held, 0u);
		errno = 0;
		cl_cid_release(d, c); /* double release */
		cr_assert_eq(errno, EINVAL);
		cr_assert_eq(stats_of(d).held, 0u);
		cr_assert_eq(cl_cid_domain_leave(d), 0);
		cl_cid_domain_destroy(d);
	}
}

/* ------------------------------------------------------------ bound */

Test(cid, bound_is_one_with_one_user)
{
	for (size_t p = 0; p < sizeof(all_policies) / sizeof(all_policies[0]); p++) {
		struct cl_cid_domain *d = cl_cid_domain_create(all_policies[p], NULL);

		cr_assert_not_null(d);
		cr_assert_eq(cl_cid_domain_join(d), 0);
		cr_assert_eq(cl_cid_domain_bound(d), 1u);
		for (int i = 0; i < 100; i++) {
			int c = cl_cid_acquire(d);

			cr_assert_eq(c, 0);
			cl_cid_release(d, c);
		}
		cr_assert_eq(stats_of(d).acquisitions, 100u);
		cr_assert_eq(cl_cid_domain_leave(d), 0);
		cr_assert_eq(cl_cid_domain_bound(d), 0u);
		cl_cid_domain_destroy(d);
	}
}

/* join/leave (and join_cpus on a bigger fake machine) move the bound. */
Test(cid, join_leave_moves_bound)
{
	struct cl_topology t;
	unsigned long mask[WORDS(32)];
	int allowed[MAX_CIDS];
	int nallowed = cl_test_allowed_cpus(allowed, MAX_CIDS);
	struct cl_cid_domain *d;

	/* Real affinity: bound = min(allowed CPUs, users). */
	d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	cr_assert_not_null(d);
	for (int u = 1; u <= nallowed + 2; u++) {
		cr_assert_eq(cl_cid_domain_join(d), 0);
		cr_assert_eq(cl_cid_domain_bound(d), (unsigned)(u < nallowed ? u : nallowed));
	}
	cr_assert_eq(stats_of(d).nr_allowed, (unsigned)nallowed);
	for (int u = nallowed + 1; u >= 0; u--) {
		cr_assert_eq(cl_cid_domain_leave(d), 0);
		cr_assert_eq(cl_cid_domain_bound(d), (unsigned)(u < nallowed ? u : nallowed));
	}
	cl_cid_domain_destroy(d);

	/* The union grows with refresh_allowed after an affinity change. */
	d = cl_cid_domain_create(CL_CID_NAIVE, NULL);
	cr_assert_not_null(d);
	cr_assert_eq(cl_test_pin(allowed[0]), 0);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	cr_assert_eq(stats_of(d).nr_allowed, 1u);
	cr_assert_eq(cl_cid_domain_bound(d), 1u);
	if (nallowed >= 2)
		cr_assert_eq(cl_test_pin(allowed[1]), 0);
	cr_assert_eq(cl_cid_domain_refresh_allowed(d), 0);
	cr_assert_eq(stats_of(d).users, 2u);
	cr_assert_eq(stats_of(d).nr_allowed, nallowed >= 2 ? 2u : 1u);
	cr_assert_eq(cl_cid_domain_bound(d), nallowed >= 2 ? 2u : 1u);
	cl_cid_domain_destroy(d);

	/* A 32-CPU fake machine; users join with explicit masks. */
	fake_topology(&t, 32, 8);
	d = cl_cid_domain_create(CL_CID_RECENT, &t);
	cr_assert_not_null(d);
	cr_assert_geq(stats_of(d).nr_cids, 32u);
	mask_range(mask, WORDS(32), 0, 8);
	for (unsigned u = 1; u <= 10; u++) {
		cr_assert_eq(cl_cid_domain_join_cpus(d, mask, 32), 0);
		cr_assert_eq(cl_cid_domain_bound(d), u < 8 ? u : 8u);
	}
	/* The union grows: 8 more CPUs, bound = min(16, 10 users). */
	mask_range(mask, WORDS(32), 8, 16);
	cr_assert_eq(cl_cid_domain_join_cpus(d, mask, 32), 0);
	cr_assert_eq(stats_of(d).nr_allowed, 16u);
	cr_assert_eq(cl_cid_domain_bound(d), 11u);

	/* Each of 11 CPUs gets its own cid by spreading: 0..10. */
	int held[11];
	for (int i = 0; i < 11; i++) {
		held[i] = cl_cid_acquire_on(d, i);
		cr_assert_eq(held[i], i, "spread: CPU %d got %d", i, held[i]);
	}
	cr_assert_eq(stats_of(d).spreads, 11u);
	cr_assert_eq(stats_of(d).max_nr_cid, 11u);

	/* Shrink the bound to 4 while cids 0..10 are held: holders keep them. */
	for (int i = 0; i < 7; i++)
		cr_assert_eq(cl_cid_domain_leave(d), 0);
	cr_assert_eq(cl_cid_domain_bound(d), 4u);
	cr_assert_eq(stats_of(d).held, 11u);
	for (int i = 4; i < 11; i++)
		cl_cid_release(d, held[i]);
	cr_assert_eq(stats_of(d).held, 4u);
	/* Four holders, four users: a fifth is refused rather than waiting. */
	errno = 0;
	cr_assert_eq(cl_cid_acquire_on(d, 9), -1);
	cr_assert_eq(errno, EBUSY);
	cl_cid_release(d, held[3]);
	/* CPU 9's recent cid 9 is >= the bound now: it gets one below 4. */
	int c = cl_cid_acquire_on(d, 9);
	cr_assert_eq(c, 3, "below the shrunk bound: got %d", c);
	cr_assert_leq(stats_of(d).max_nr_cid, 4u);
	cl_cid_release(d, c);
	for (int i = 0; i < 3; i++)
		cl_cid_release(d, held[i]);
	cr_assert_eq(stats_of(d).held, 0u);
	cl_cid_domain_destroy(d);
	free(t.cpu);
}

/* ------------------------------------------------------------ uniqueness */

struct uniq_ctx {
	struct cl_cid_domain *d;
	pthread_barrier_t barrier;
	_Atomic long owner[MAX_CIDS];
	atomic_long violations;
	atomic_long out_of_bound;
	atomic_long failures;
	atomic_int max_cid;
	int iterations;
	int nallowed;
	int allowed[MAX_CIDS];
	unsigned bound;
	int migrate;
};

struct uniq_arg {
	struct uniq_ctx *ctx;
	long id;
};

static void *uniq_thread(void *p)
{
	struct uniq_arg *a = p;
	struct uniq_ctx *x = a->ctx;

	if (cl_cid_domain_join(x->d) != 0)
		atomic_fetch_add(&x->failures, 1);
	pthread_barrier_wait(&x->barrier);
	for (int i = 0; i < x->iterations; i++) {
		if (x->migrate && i % 64 == 0)
			cl_test_pin(x->allowed[(a->id + i / 64) % x->nallowed]);
		int c = cl_cid_acquire(x->d);

		if (c < 0 || c >= MAX_CIDS) {
			atomic_fetch_add(&x->failures, 1);
			continue;
		}
		if ((unsigned)c >= x->bound)
			atomic_fetch_add(&x->out_of_bound, 1);
		int m = atomic_load(&x->max_cid);
		while (c > m && !atomic_compare_exchange_weak(&x->max_cid, &m, c))
			;
		long expect = 0;

		if (!atomic_compare_exchange_strong(&x->owner[c], &expect, a->id + 1))
			atomic_fetch_add(&x->violations, 1);
		if (i % 16 == 0)
			sched_yield(); /* widen the window while holding */
		expect = a->id + 1;
		if (!atomic_compare_exchange_strong(&x->owner[c], &expect, 0))
			atomic_fetch_add(&x->violations, 1);
		cl_cid_release(x->d, c);
	}
	pthread_barrier_wait(&x->barrier);
	if (cl_cid_domain_leave(x->d) != 0)
		atomic_fetch_add(&x->failures, 1);
	return NULL;
}

static void run_uniqueness(enum cl_cid_policy policy, int nthreads, int iterations, int migrate)
{
	struct uniq_ctx *x = calloc(1, sizeof(*x));
	pthread_t th[512];
	struct uniq_arg args[512];

	cr_assert_not_null(x);
	cr_assert_leq(nthreads, 512);
	x->d = cl_cid_domain_create(policy, NULL);
	cr_assert_not_null(x->d);
	x->iterations = iterations;
	x->migrate = migrate;
	x->nallowed = cl_test_allowed_cpus(x->allowed, MAX_CIDS);
	cr_assert_gt(x->nallowed, 0);
	x->bound = (unsigned)(nthreads < x->nallowed ? nthreads : x->nallowed);
	pthread_barrier_init(&x->barrier, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		args[i].ctx = x;
		args[i].id = i;
		cr_assert_eq(pthread_create(&th[i], NULL, uniq_thread, &args[i]), 0);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);

	struct cl_cid_stats s = stats_of(x->d);

	cr_log_info("%s: %d threads x %d on %d CPUs: max cid %d, bound %u; recent %llu llc %llu "
		    "spread %llu lowest %llu fallback %llu waits %llu",
		    cl_cid_policy_name(policy), nthreads, iterations, x->nallowed,
		    atomic_load(&x->max_cid), x->bound, s.recent_hits, s.llc_hits, s.spreads,
		    s.lowest, s.fallbacks, s.waits);
	cr_assert_eq(atomic_load(&x->failures), 0);
	cr_assert_eq(atomic_load(&x->violations), 0, "a cid was held twice");
	cr_assert_eq(atomic_load(&x->out_of_bound), 0, "a cid >= the bound");
	cr_assert_lt(atomic_load(&x->max_cid), (int)x->bound);
	cr_assert_eq(s.acquisitions, (unsigned long long)nthreads * (unsigned long long)iterations);
	cr_assert_eq(s.acquisitions,
		     s.recent_hits + s.llc_hits + s.spreads + s.lowest + s.fallbacks);
	cr_assert_eq(s.held, 0u);
	cr_assert_eq(s.users, 0u);
	cr_assert_eq(s.busy, 0u);
	pthread_barrier_destroy(&x->barrier);
	cl_cid_domain_destroy(x->d);
	free(x);
}

static int nproc_allowed(void)
{
	int cpus[MAX_CIDS];

	return cl_test_allowed_cpus(cpus, MAX_CIDS);
}

Test(cid, unique_naive_6x_nproc, .timeout = 120)
{
	run_uniqueness(CL_CID_NAIVE, 6 * nproc_allowed(), 4000, 1);
}

Test(cid, unique_recent_6x_nproc, .timeout = 120)
{
	run_uniqueness(CL_CID_RECENT, 6 * nproc_allowed(), 4000, 1);
}

Test(cid, unique_llc_6x_nproc, .timeout = 120)
{
	run_uniqueness(CL_CID_LLC, 6 * nproc_allowed(), 4000, 1);
}

/* 64 threads: the bound is the number of allowed CPUs, never 64. */
Test(cid, bound_64_threads, .timeout = 120)
{
	for (size_t p = 0; p < sizeof(all_policies) / sizeof(all_policies[0]); p++)
		run_uniqueness(all_policies[p], 64, 500, 0);
}

/* ------------------------------------------------------------ waiting */

struct wait_arg {
	struct cl_cid_domain *d;
	int cid;
	int err;
};

static void *wait_thread(void *p)
{
	struct wait_arg *w = p;

	w->cid = cl_cid_acquire_on(w->d, 2);
	w->err = w->cid < 0 ? errno : 0;
	return NULL;
}

static void wait_until_sleeping(struct cl_cid_domain *d, unsigned long long waits)
{
	while (stats_of(d).waits < waits)
		usleep(1000);
}

/* All cids below the bound held, holders < users: acquire sleeps until a
 * release; then, after a leave makes holders == users, it fails EBUSY. */
Test(cid, acquire_waits_then_busy, .timeout = 60)
{
	struct cl_topology t;
	unsigned long mask[WORDS(8)];
	struct cl_cid_domain *d;
	struct wait_arg w = {0};
	pthread_t th;

	fake_topology(&t, 8, 8);
	d = cl_cid_domain_create(CL_CID_RECENT, &t);
	cr_assert_not_null(d);
	mask_range(mask, WORDS(8), 0, 2); /* 2 allowed CPUs */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(cl_cid_domain_join_cpus(d, mask, 8), 0);
	cr_assert_eq(cl_cid_domain_bound(d), 2u);
	int a = cl_cid_acquire_on(d, 0), b = cl_cid_acquire_on(d, 1);
	cr_assert_eq(a, 0);
	cr_assert_eq(b, 1);

	w.d = d;
	unsigned long long waits0 = stats_of(d).waits;
	cr_assert_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
	wait_until_sleeping(d, waits0 + 1);
	cl_cid_release(d, b);
	pthread_join(th, NULL);
	cr_assert_eq(w.cid, 1, "the waiter gets the released cid, got %d (errno %d)", w.cid, w.err);
	cr_assert_eq(stats_of(d).fallbacks, 1u);

	/* Again, but this time a leave (3 -> 2 users, 2 holders) refuses it. */
	cr_assert_eq(stats_of(d).held, 2u);
	waits0 = stats_of(d).waits;
	cr_assert_eq(pthread_create(&th, NULL, wait_thread, &w), 0);
	wait_until_sleeping(d, waits0 + 1);
	cr_assert_eq(cl_cid_domain_leave(d), 0);
	pthread_join(th, NULL);
	cr_assert_eq(w.cid, -1);
	cr_assert_eq(w.err, EBUSY);
	cr_assert_eq(stats_of(d).busy, 1u);
	cl_cid_release(d, a);
	cl_cid_release(d, 1);
	cr_assert_eq(stats_of(d).held, 0u);
	cl_cid_domain_destroy(d);
	free(t.cpu);
}

/* ------------------------------------------------------------ bursts */

struct burst_ctx {
	struct cl_cid_domain *d;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int turn;   /* index of the thread whose turn it is, -1 none, -2 stop */
	int done;
	int cpu[2];
	int last_cid;
	int last_cpu_seen;
	atomic_int errors;
};

struct burst_arg {
	struct burst_ctx *x;
	int idx;
};

static void *burst_thread(void *p)
{
	struct burst_arg *a = p;
	struct burst_ctx *x = a->x;

	if (cl_test_pin(x->cpu[a->idx]) != 0 || cl_cid_domain_join(x->d) != 0)
		atomic_fetch_add(&x->errors, 1);
	pthread_mutex_lock(&x->lock);
	x->done++;
	pthread_cond_broadcast(&x->cond);
	for (;;) {
		while (x->turn != a->idx && x->turn != -2)
			pthread_cond_wait(&x->cond, &x->lock);
		if (x->turn == -2)
			break;
		pthread_mutex_unlock(&x->lock);
		int c = cl_cid_acquire(x->d);
		int cpu = sched_getcpu();

		if (c < 0 || cpu != x->cpu[a->idx])
			atomic_fetch_add(&x->errors, 1);
		for (volatile int spin = 0; spin < 1000; spin++)
			; /* the burst: work on cid-indexed data */
		cl_cid_release(x->d, c);
		pthread_mutex_lock(&x->lock);
		x->last_cid = c;
		x->last_cpu_seen = cpu;
		x->turn = -1;
		x->done++;
		pthread_cond_broadcast(&x->cond);
	}
	pthread_mutex_unlock(&x->lock);
	return NULL;
}

/*
 * Two threads pinned to two CPUs run bursts one at a time in a pseudo-random
 * order (fixed seed). Returns the percentage of bursts whose cid was last
 * used (by the previous burst with that cid) on the same CPU: the cache
 * locality the RECENT policy is for.
 */
static double run_bursts(enum cl_cid_policy policy, int bursts)
{
	struct burst_ctx x;
	struct burst_arg args[2];
	pthread_t th[2];
	int allowed[MAX_CIDS];
	int last_cpu_of[MAX_CIDS];
	int same = 0, reused = 0;
	unsigned seed = 12345;

	if (cl_test_allowed_cpus(allowed, MAX_CIDS) < 2)
		return -1;
	memset(&x, 0, sizeof(x));
	x.d = cl_cid_domain_create(policy, NULL);
	cr_assert_not_null(x.d);
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.cond, NULL);
	x.turn = -1;
	x.cpu[0] = allowed[0];
	x.cpu[1] = allowed[1];
	for (int i = 0; i < MAX_CIDS; i++)
		last_cpu_of[i] = -1;
	for (int i = 0; i < 2; i++) {
		args[i].x = &x;
		args[i].idx = i;
		cr_assert_eq(pthread_create(&th[i], NULL, burst_thread, &args[i]), 0);
	}
	pthread_mutex_lock(&x.lock);
	while (x.done < 2)
		pthread_cond_wait(&x.cond, &x.lock);
	for (int b = 0; b < bursts; b++) {
		x.turn = (int)(rand_r(&seed) % 2);
		x.done = 0;
		pthread_cond_broadcast(&x.cond);
		while (x.done == 0)
			pthread_cond_wait(&x.cond, &x.lock);
		if (x.last_cid >= 0 && x.last_cid < MAX_CIDS) {
			if (last_cpu_of[x.last_cid] >= 0) {
				reused++;
				same += last_cpu_of[x.last_cid] == x.last_cpu_seen;
			}
			last_cpu_of[x.last_cid] = x.last_cpu_seen;
		}
	}
	x.turn = -2;
	pthread_cond_broadcast(&x.cond);
	pthread_mutex_unlock(&x.lock);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(atomic_load(&x.errors), 0);
	cr_assert_eq(stats_of(x.d).acquisitions, (unsigned long long)bursts);
	cr_assert_eq(stats_of(x.d).bound, 2u);
	cr_assert_gt(reused, bursts / 2);
	cl_cid_domain_destroy(x.d);
	pthread_cond_destroy(&x.cond);
	pthread_mutex_destroy(&x.lock);
	return 100.0 * same / reused;
}

Test(cid, pinned_bursts_reuse, .timeout = 120)
{
	double naive = run_bursts(CL_CID_NAIVE, 400);

	if (naive < 0)
		cr_skip_test("needs 2 allowed CPUs");
	double recent = run_bursts(CL_CID_RECENT, 400);
	double llc = run_bursts(CL_CID_LLC, 400);

	cr_log_info("same-CPU reuse over 400 bursts: naive %.1f%%, recent %.1f%%, llc %.1f%%", naive,
		    recent, llc);
	cr_assert_geq(recent, 95.0);
	cr_assert_geq(llc, 95.0);
	cr_assert_lt(naive, 95.0);
}

/* ------------------------------------------------------------ LLC */

/*
 * On topology t, pick CPU a, a CPU b that shares a's LLC if any does (else
 * one in a third LLC), and a CPU x in another LLC. With bound 8: a, x, b take
 * cids 0, 1, 2 by spreading and release them; a holds its recent cid 0; a
 * second acquire on a must then take, by policy:
 *   LLC    cid 2 (free, last used on b, same LLC as a) when b shares a's
 *          LLC; else cid 3 (no free cid was last used in a's LLC: spread);
 *   RECENT cid 3 (spread);
 *   NAIVE  cid 1 (lowest free).
 */
static void check_llc_preference(const struct cl_topology *t, const char *what)
{
	int a = -1, b = -1, x = -1;
	unsigned n = t->nr_cpu_ids;
	unsigned long mask[WORDS(4096)];

	cr_assert_leq(n, 4096u);
	for (unsigned i = 0; i < n && b < 0; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (t->cpu[i].possible && t->cpu[j].possible && t->cpu[i].llc == t->cpu[j].llc) {
				a = (int)i;
				b = (int)j;
				break;
			}
	if (a < 0) /* private LLCs: a, x, b all in different LLCs */
		for (unsigned i = 0; i < n; i++)
			if (t->cpu[i].possible) {
				a = (int)i;
				break;
			}
	cr_assert_geq(a, 0, "%s: no possible CPU", what);
	for (unsigned i = 0; i < n; i++) {
		if (!t->cpu[i].possible || t->cpu[i].llc == t->cpu[a].llc)
			continue;
		if (x < 0)
			x = (int)i;
		else if (b < 0 && t->cpu[i].llc != t->cpu[x].llc)
			b = (int)i;
	}
	cr_assert_geq(x, 0, "%s: only one LLC", what);
	cr_assert_geq(b, 0, "%s: too few CPUs", what);
	int shared = t->cpu[a].llc == t->cpu[b].llc;

	for (size_t p = 0; p < sizeof(all_policies) / sizeof(all_policies[0]); p++) {
		enum cl_cid_policy pol = all_policies[p];
		struct cl_cid_domain *d = cl_cid_domain_create(pol, t);
		int c;

		cr_assert_not_null(d);
		mask_range(mask, WORDS(n), 0, n);
		for (int u = 0; u < 8; u++)
			cr_assert_eq(cl_cid_domain_join_cpus(d, mask, n), 0);
		cr_assert_eq(cl_cid_domain_bound(d), 8u);
		c = cl_cid_acquire_on(d, a);
		cl_cid_release(d, c);
		c = cl_cid_acquire_on(d, x);
		cl_cid_release(d, c);
		c = cl_cid_acquire_on(d, b);
		cl_cid_release(d, c);
		int h = cl_cid_acquire_on(d, a);
		c = cl_cid_acquire_on(d, a);
		struct cl_cid_stats s = stats_of(d);

		cr_log_info("%s %s: a=%d (LLC %d), b=%d (LLC %d), x=%d (LLC %d): held %d, then %d",
			    what, cl_cid_policy_name(pol), a, t->cpu[a].llc, b, t->cpu[b].llc, x,
			    t->cpu[x].llc, h, c);
		cr_assert_eq(h, 0);
		switch (pol) {
		case CL_CID_LLC:
			if (shared) {
				cr_assert_eq(c, 2, "LLC: expected the cid last used on CPU %d", b);
				cr_assert_eq(s.llc_hits, 1u);
				cr_assert_eq(s.spreads, 3u);
			} else {
				cr_assert_eq(c, 3, "LLC, private LLCs: expected a spread to cid 3");
				cr_assert_eq(s.llc_hits, 0u);
				cr_assert_eq(s.spreads, 4u);
			}
			break;
		case CL_CID_RECENT:
			cr_assert_eq(c, 3, "RECENT policy: expected a spread to cid 3");
			cr_assert_eq(s.llc_hits, 0u);
			cr_assert_eq(s.spreads, 4u);
			break;
		case CL_CID_NAIVE:
			cr_assert_eq(c, 1, "NAIVE policy: expected the lowest free cid");
			cr_assert_eq(s.lowest, 5u);
			break;
		}
		cl_cid_release(d, c);
		cl_cid_release(d, h);
		cl_cid_domain_destroy(d);
	}
}

Test(cid, llc_preference_hand_built)
{
	struct cl_topology t;

	fake_topology(&t, 24, 4);
	check_llc_preference(&t, "24 CPUs, 6 LLCs of 4");
	free(t.cpu);
	fake_topology(&t, 24, 1);
	check_llc_preference(&t, "24 CPUs, 24 private LLCs");
	free(t.cpu);
}

/* The fake sysfs trees of tests/data: 24 cores with 24 private L3s (the LLC
 * step must never fire: a stale "LLC hit" would be a bug), and a 2-socket
 * EPYC 9654 (24 L3s of 8 cores / 16 threads: it must). */
Test(cid, llc_preference_fake_sysfs)
{
	static const char *const trees[] = {"24core-24l3", "epyc9654-2s"};
	int ran = 0;

	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		char root[4096];
		struct cl_topology t;

		snprintf(root, sizeof(root), "%s/%s", CL_TEST_DATA_DIR, trees[i]);
		if (access(root, R_OK) != 0)
			continue;
		cr_assert_eq(cl_topology_load(&t, root), 0, "%s: %s", root, strerror(errno));
		cr_log_info("%s: %u CPU ids, %u LLCs", trees[i], t.nr_cpu_ids, t.nr_llcs);
		cr_assert_geq(t.nr_llcs, 2u);
		check_llc_preference(&t, trees[i]);
		ran++;
		cl_topology_free(&t);
	}
	if (!ran)
		cr_skip_test("no fake sysfs tree under %s", CL_TEST_DATA_DIR);
}

/* ------------------------------------------------------------ stats */

Test(cid, stats_exact_pinned)
{
	int allowed[MAX_CIDS];
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);

	cr_assert_gt(cl_test_allowed_cpus(allowed, MAX_CIDS), 0);
	cr_assert_eq(cl_test_pin(allowed[0]), 0);
	cr_assert_not_null(d);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	for (int i = 0; i < 1000; i++) {
		int c = cl_cid_acquire(d);

		cr_assert_eq(c, 0);
		cl_cid_release(d, c);
	}
	struct cl_cid_stats s = stats_of(d);

	cr_assert_eq(s.acquisitions, 1000u);
	cr_assert_eq(s.spreads, 1u);
	cr_assert_eq(s.recent_hits, 999u);
	cr_assert_eq(s.fallbacks + s.lowest + s.llc_hits + s.waits + s.busy, 0u);
	cr_assert_eq(s.max_nr_cid, 1u);
	cl_cid_domain_destroy(d);
}

/* ------------------------------------------------------------ lifecycle */

struct exit_arg {
	struct cl_cid_domain *d;
	int cid;
};

static void *exit_without_leave(void *p)
{
	struct exit_arg *e = p;

	if (cl_cid_domain_join(e->d) == 0)
		e->cid = cl_cid_acquire(e->d);
	return NULL; /* no release, no leave */
}

/* Documented: an exited thread stays a user and its cid stays held until
 * another thread releases it and leaves on its behalf. */
Test(cid, thread_exit_without_leave)
{
	struct exit_arg e = {0};
	pthread_t th;
	int allowed[MAX_CIDS];
	int nallowed = cl_test_allowed_cpus(allowed, MAX_CIDS);

	e.d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	e.cid = -1;
	cr_assert_not_null(e.d);
	cr_assert_eq(pthread_create(&th, NULL, exit_without_leave, &e), 0);
	pthread_join(th, NULL);
	cr_assert_geq(e.cid, 0);
	struct cl_cid_stats s = stats_of(e.d);
	cr_assert_eq(s.users, 1u);
	cr_assert_eq(s.held, 1u);
	cr_assert_eq(cl_cid_domain_join(e.d), 0);
	if (nallowed >= 2) {
		int c = cl_cid_acquire(e.d);

		cr_assert_geq(c, 0);
		cr_assert_neq(c, e.cid, "the dead thread's cid is still held");
		cl_cid_release(e.d, c);
	} else {
		errno = 0;
		cr_assert_eq(cl_cid_acquire(e.d), -1); /* 1 CPU: bound 1, held */
		cr_assert_eq(errno, EBUSY);
	}
	/* Clean up on its behalf: any thread may release and leave. */
	errno = 0;
	cl_cid_release(e.d, e.cid);
	cr_assert_eq(errno, 0);
	cr_assert_eq(cl_cid_domain_leave(e.d), 0);
	s = stats_of(e.d);
	cr_assert_eq(s.users, 1u);
	cr_assert_eq(s.held, 0u);
	cr_assert_eq(cl_cid_domain_bound(e.d), 1u);
	cl_cid_domain_destroy(e.d);
}

/* fork(): the child's domains start clean; the parent's are untouched. */
Test(cid, fork_child_starts_clean)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_LLC, NULL);
	int status = -1;
	pid_t pid;

	cr_assert_not_null(d);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	int c = cl_cid_acquire(d);
	cr_assert_eq(c, 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct cl_cid_stats s;
		int code = 0;

		if (cl_cid_domain_stats(d, &s) != 0 || s.users != 0 || s.held != 0 ||
		    s.acquisitions != 0 || s.nr_allowed != 0 || cl_cid_domain_bound(d) != 0)
			code |= 1;
		errno = 0;
		if (cl_cid_acquire(d) != -1 || errno != EBUSY)
			code |= 2;
		if (cl_cid_domain_join(d) != 0 || cl_cid_acquire(d) != 0)
			code |= 4;
		cl_cid_domain_destroy(d);
		_exit(code);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child check failed: code %d", WEXITSTATUS(status));
	struct cl_cid_stats s = stats_of(d);
	cr_assert_eq(s.users, 1u);
	cr_assert_eq(s.held, 1u);
	cl_cid_release(d, c);
	cl_cid_domain_destroy(d);
}

/*
 * Domains and per-CPU pools share one fork registry (internal/fork.h): in a
 * process with both, the child gets clean domains and working pools with
 * the parent's data, and the entries of destroyed objects are gone (a
 * destroyed domain registered before the fork must not be touched).
 */
Test(cid, fork_with_pools_and_domains_resets_only_the_domains)
{
	struct cl_cid_domain *gone = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
	long *obj;
	int status = -1, c;
	pid_t pid;

	cr_assert_not_null(gone);
	cr_assert_not_null(d);
	cr_assert_not_null(pool);
	cl_cid_domain_destroy(gone); /* unregistered: its memory is freed */
	obj = (long *)cl_percpu_alloc(pool, sizeof(long), sizeof(long));
	cr_assert_not_null(obj);
	*obj = 42;
	cr_assert_eq(cl_cid_domain_join(d), 0);
	c = cl_cid_acquire(d);
	cr_assert_geq(c, 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct cl_cid_stats s;
		int code = 0;
		long *more;

		if (cl_cid_domain_stats(d, &s) != 0 || s.users != 0 || s.held != 0)
			code |= 1;
		if (*obj != 42)
			code |= 2;
		more = (long *)cl_percpu_alloc(pool, sizeof(long), sizeof(long));
		if (!more || *more != 0 || cl_percpu_free(pool, more) != 0 ||
		    cl_percpu_free(pool, obj) != 0)
			code |= 4;
		_exit(code);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child check failed: code %d (1 domain, 2 data, 4 pool)",
		     WEXITSTATUS(status));
	cr_assert_eq(stats_of(d).held, 1u, "the parent's domain was reset");
	cr_assert_eq(*obj, 42);
	cl_cid_release(d, c);
	cr_assert_eq(cl_percpu_free(pool, obj), 0);
	cl_percpu_pool_destroy(pool);
	cl_cid_domain_destroy(d);
}
