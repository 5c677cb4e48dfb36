/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/counter.h and counter_cid.h: init errors, exact
 * quiescent sums in both index modes, negative adds, monotonic concurrent
 * reads, the copies in the counters' pool, cid-indexed counters. Also built
 * with -DCL_NO_RSEQ_ASM (test_counter.variants).
 */
#include <cachelocal/counter.h>

/* counter.h takes its storage from percpu.h and never pulls in cid.h. */
#ifdef CACHELOCAL_CID_H
#error "counter.h includes cid.h"
#endif

#include <cachelocal/counter_cid.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>

#include "cl_test.h"

#define NR_THREADS 4
#define NR_ADDS 250000

static const enum cl_rseq_index modes[2] = { CL_RSEQ_INDEX_CPU_ID, CL_RSEQ_INDEX_MM_CID };

Test(counter, init_errors)
{
	struct cl_counter c;

	errno = 0;
	cr_assert_eq(cl_counter_init(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_counter_init_index(&c, (enum cl_rseq_index)7), -1);
	cr_assert_eq(errno, EINVAL);
	cl_counter_destroy(NULL);
}

Test(counter, layout)
{
	struct cl_counter c;

	struct cl_counter c2;

	cr_assert_eq(cl_counter_init(&c), 0);
	cr_assert_eq(cl_counter_init(&c2), 0);
	cr_assert_not_null(c.slot);
	cr_assert_eq(cl_percpu_pool_stride(cl_counter_pool()), (size_t)CL_PERCPU_STRIDE,
		     "copies a default stride apart");
	cr_assert_eq(c.nr_cpus, cl_nr_possible_cpus(), "one copy per possible CPU");
	cr_assert_neq(c.slot, c2.slot, "two counters, two pool objects");
	for (unsigned i = 0; i < c.nr_cpus; i++)
		cr_assert_eq(*cl_percpu_ptr(c.slot, i), 0, "zero on every CPU at init");
	cl_counter_destroy(&c2);
	cl_counter_destroy(&c);
	cr_assert_null(c.slot);
	cl_counter_destroy(&c); /* twice is harmless */
	cr_assert_eq(cl_counter_read(&c), 0);
	cl_counter_add(&c, 1); /* no copies: the add sets the counter up again */
	cr_assert_eq(cl_counter_read(&c), 1);
	cl_counter_destroy(&c);
}

Test(counter, single_thread)
{
	for (int k = 0; k < 2; k++) {
		struct cl_counter c;

		cr_assert_eq(cl_counter_init_index(&c, modes[k]), 0);
		cr_assert_eq(cl_counter_read(&c), 0);
		for (int i = 0; i < 1000; i++)
			cl_counter_add(&c, 5);
		cr_assert_eq(cl_counter_read(&c), 5000);
		cl_counter_add(&c, -6000);
		cr_assert_eq(cl_counter_read(&c), -1000);
		cl_counter_add(&c, INT64_MAX);
		cl_counter_add(&c, 1001);
		cr_assert_eq(cl_counter_read(&c), INT64_MIN, "wraps like two's complement");
		cl_counter_destroy(&c);
	}
}

Test(counter, follows_the_cpu)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_counter c;

	cr_assert_eq(cl_counter_init(&c), 0);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(cl_test_pin(cpus[i]), 0);
		cl_counter_add(&c, i + 1);
		/* Pinned: the add went to this CPU's slot (either path). */
		cr_assert_eq(*cl_percpu_ptr(c.slot, cpus[i]), i + 1, "cpu %d", cpus[i]);
	}
	cl_counter_destroy(&c);
}

struct add_arg {
	struct cl_counter *c;
	int pin; /* CPU to pin to, or -1 */
};

static void *add_thread(void *p)
{
	struct add_arg *a = p;

	if (a->pin >= 0)
		cl_test_pin(a->pin);
	for (int i = 0; i < NR_ADDS; i++) {
		cl_counter_add(a->c, 1);
		if (i % 8192 == 0)
			sched_yield();
	}
	return NULL;
}

static void threads_exact(enum cl_rseq_index idx, int pinned)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_counter c;
	struct add_arg a[NR_THREADS];
	pthread_t t[NR_THREADS];

	cr_assert_eq(cl_counter_init_index(&c, idx), 0);
	for (int i = 0; i < NR_THREADS; i++) {
		a[i] = (struct add_arg){ &c, pinned ? cpus[i % n] : -1 };
		cr_assert_eq(pthread_create(&t[i], NULL, add_thread, &a[i]), 0);
	}
	for (int i = 0; i < NR_THREADS; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert_eq(cl_counter_read(&c), (int64_t)NR_THREADS * NR_ADDS, "idx %d pinned %d: %lld",
		     (int)idx, pinned, (long long)cl_counter_read(&c));
	cl_counter_destroy(&c);
}

/* A zeroed static counter never cl_counter_init()ed: the first adds, from
 * several threads at once, set it up; nothing is dropped. */
static struct cl_counter zeroed_static;

Test(counter, zeroed_static_counter_counts_every_add_from_racing_first_adds)
{
	struct add_arg a[NR_THREADS];
	pthread_t t[NR_THREADS];

	cr_assert_eq(cl_counter_read(&zeroed_static), 0);
	for (int i = 0; i < NR_THREADS; i++) {
		a[i] = (struct add_arg){ &zeroed_static, -1 };
		cr_assert_eq(pthread_create(&t[i], NULL, add_thread, &a[i]), 0);
	}
	for (int i = 0; i < NR_THREADS; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert_eq(cl_counter_read(&zeroed_static), (int64_t)NR_THREADS * NR_ADDS, "%lld",
		     (long long)cl_counter_read(&zeroed_static));
	cr_assert_not_null(zeroed_static.slot, "the first add gave it per-CPU copies");
	cl_counter_destroy(&zeroed_static);
	cl_counter_add(&zeroed_static, 5); /* destroyed: zeroed again */
	cr_assert_eq(cl_counter_read(&zeroed_static), 5);
	cl_counter_destroy(&zeroed_static);
}

Test(counter, threads_exact_cpu_id)
{
	threads_exact(CL_RSEQ_INDEX_CPU_ID, 0);
	threads_exact(CL_RSEQ_INDEX_CPU_ID, 1);
}

Test(counter, threads_exact_mm_cid)
{
	threads_exact(CL_RSEQ_INDEX_MM_CID, 0);
	threads_exact(CL_RSEQ_INDEX_MM_CID, 1);
}

/*
 * Adds under a storm of signals: every signal that lands inside an add's
 * critical section aborts it, and the add must start again from the index
 * read (in a build without asm goto outputs, clang < 16, the section's own
 * abort handler does that inside the asm). The sums stay exact.
 */
static void storm_handler(int sig)
{
	(void)sig;
}

static void storm(enum cl_rseq_index idx)
{
	struct sigaction sa, old;
	struct cl_counter c;
	struct add_arg a[2];
	pthread_t t[2];
	int done[2] = { 0, 0 };
	long sent = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = storm_handler;
	sa.sa_flags = SA_RESTART;
	cr_assert_eq(sigaction(SIGUSR1, &sa, &old), 0);
	cr_assert_eq(cl_counter_init_index(&c, idx), 0);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct add_arg){ &c, -1 };
		cr_assert_eq(pthread_create(&t[i], NULL, add_thread, &a[i]), 0);
	}
	while (!done[0] || !done[1]) {
		for (int i = 0; i < 2; i++) {
			if (done[i])
				continue;
			if (pthread_tryjoin_np(t[i], NULL) == 0)
				done[i] = 1;
			else if (pthread_kill(t[i], SIGUSR1) == 0)
				sent++;
		}
		usleep(5);
	}
	cr_log_info("index %d: %ld signals", (int)idx, sent);
	cr_assert_eq(cl_counter_read(&c), (int64_t)2 * NR_ADDS, "idx %d: %lld after %ld signals",
		     (int)idx, (long long)cl_counter_read(&c), sent);
	cl_counter_destroy(&c);
	sigaction(SIGUSR1, &old, NULL);
}

Test(counter, adds_exact_under_a_signal_storm)
{
	storm(CL_RSEQ_INDEX_CPU_ID);
	storm(CL_RSEQ_INDEX_MM_CID);
}

/*
 * An add from a thread-exit destructor that runs after cachelocal's (which
 * unregisters its own area when glibc does not own rseq): the operations'
 * per-thread cache must not hand the section the unregistered area. The
 * add then lands in the shared word (or the atomic fallback); the sum stays
 * exact.
 */
static pthread_key_t late_key;
static struct cl_counter late_counter;

static void late_add(void *arg)
{
	(void)arg;
	cl_counter_add(&late_counter, 5);
}

static void *late_thread(void *p)
{
	(void)p;
	cl_counter_add(&late_counter, 1); /* fills this thread's cache */
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

Test(counter, add_from_a_late_thread_exit_destructor)
{
	(void)cl_cpu_id(); /* cachelocal's key (if any) before late_key */
	cr_assert_eq(pthread_key_create(&late_key, late_add), 0);
	for (int k = 0; k < 2; k++) {
		pthread_t th;

		cr_assert_eq(cl_counter_init_index(&late_counter, modes[k]), 0);
		cr_assert_eq(pthread_create(&th, NULL, late_thread, NULL), 0);
		pthread_join(th, NULL);
		cr_assert_eq(cl_counter_read(&late_counter), 6, "kind %d: both adds counted", k);
		cl_counter_destroy(&late_counter);
	}
	pthread_key_delete(late_key);
}

static volatile int reader_stop;

static void *reader_thread(void *p)
{
	struct cl_counter *c = p;
	int64_t last = 0;
	long bad = 0;

	while (!__atomic_load_n(&reader_stop, __ATOMIC_ACQUIRE)) {
		int64_t v = cl_counter_read(c);

		if (v < last)
			bad++;
		last = v;
	}
	return (void *)bad;
}

Test(counter, concurrent_reads_are_monotonic)
{
	struct cl_counter c;
	struct add_arg a[2];
	pthread_t t[2], r;
	void *bad;

	cr_assert_eq(cl_counter_init(&c), 0);
	reader_stop = 0;
	cr_assert_eq(pthread_create(&r, NULL, reader_thread, &c), 0);
	for (int i = 0; i < 2; i++) {
		a[i] = (struct add_arg){ &c, -1 };
		cr_assert_eq(pthread_create(&t[i], NULL, add_thread, &a[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	__atomic_store_n(&reader_stop, 1, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_join(r, &bad), 0);
	cr_assert_null(bad, "positive adds: a later read never returns less");
	cr_assert_eq(cl_counter_read(&c), 2 * NR_ADDS);
	cl_counter_destroy(&c);
}

/* ---- cid-indexed counters (cid.h domains) ---- */

Test(counter, cid_init_errors_and_bound)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_counter_cid c;

	cr_assert_not_null(d);
	errno = 0;
	cr_assert_eq(cl_counter_cid_init(&c, NULL, 0), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_counter_cid_init(NULL, d, 0), -1);
	/* No users yet: bound 0, still one slot. */
	cr_assert_eq(cl_counter_cid_init(&c, d, 0), 0);
	cr_assert_eq(c.nr_slots, 1);
	cl_counter_cid_destroy(&c);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	cr_assert_eq(cl_counter_cid_init(&c, d, 0), 0);
	cr_assert_eq(c.nr_slots, cl_cid_domain_bound(d), "slots = domain bound");
	cr_assert_eq(c.nr_slots, 1, "one user: one slot");
	cl_counter_cid_add_any(&c, 3); /* acquires and releases a cid */
	cr_assert_eq(*cl_percpu_ptr(c.slot, 0), 3, "the only cid is 0");
	cl_counter_cid_add(&c, 5, 4); /* beyond the slots: shared word */
	cr_assert_eq(c.shared, 4);
	cr_assert_eq(cl_counter_cid_read(&c), 7);
	cl_counter_cid_destroy(&c);
	cr_assert_eq(cl_cid_domain_leave(d), 0);
	cl_cid_domain_destroy(d);
}

/*
 * cl_counter_cid_add_any() returns nothing and never fails: when the caller is not a
 * user of the domain, cl_cid_acquire() fails (EBUSY) and the add goes to the
 * shared slot, but the caller's errno must not change.
 */
Test(counter, cid_add_without_a_cid_keeps_errno)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_counter_cid c;

	cr_assert_not_null(d);
	cr_assert_eq(cl_counter_cid_init(&c, d, 4), 0);
	errno = 4242;
	cl_counter_cid_add_any(&c, 6); /* no user joined: acquire fails */
	cr_assert_eq(errno, 4242, "errno changed to %d", errno);
	cr_assert_eq(c.shared, 6, "the add went to the shared word");
	cr_assert_eq(cl_counter_cid_read(&c), 6);
	cl_counter_cid_destroy(&c);
	cl_cid_domain_destroy(d);
}

/*
 * A negative cid (a failed cl_cid_acquire() passed on unchecked) is not a
 * slot: the add goes to the shared slot, it is not dropped.
 */
Test(counter, cid_add_negative_cid_is_not_lost)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_counter_cid c;

	cr_assert_not_null(d);
	cr_assert_eq(cl_counter_cid_init(&c, d, 2), 0);
	cl_counter_cid_add(&c, -1, 5);
	cl_counter_cid_add(&c, -7, -2);
	cr_assert_eq(*cl_percpu_ptr(c.slot, 0), 0);
	cr_assert_eq(*cl_percpu_ptr(c.slot, 1), 0);
	cr_assert_eq(c.shared, 3, "negative cids go to the shared word");
	cr_assert_eq(cl_counter_cid_read(&c), 3);
	cl_counter_cid_destroy(&c);
	cl_cid_domain_destroy(d);
}

struct cid_arg {
	struct cl_counter_cid *c;
	struct cl_cid_domain *d;
	pthread_barrier_t *joined;
	int failed;
};

static void *cid_thread(void *p)
{
	struct cid_arg *a = p;

	if (cl_cid_domain_join(a->d) != 0) {
		a->failed = 1;
		return NULL;
	}
	pthread_barrier_wait(a->joined); /* all users in: the bound is final */
	for (int i = 0; i < NR_ADDS / 100; i++) {
		int cid = cl_cid_acquire(a->d);

		if (cid < 0) {
			a->failed = 1;
			break;
		}
		for (int k = 0; k < 100; k++)
			cl_counter_cid_add(a->c, cid, 1);
		cl_cid_release(a->d, cid);
		if (i % 64 == 0)
			sched_yield();
	}
	pthread_barrier_wait(a->joined);
	cl_cid_domain_leave(a->d);
	return NULL;
}

Test(counter, cid_threads_exact)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct cl_counter_cid c;
	struct cid_arg a[NR_THREADS];
	pthread_t t[NR_THREADS];
	pthread_barrier_t joined;

	cr_assert_not_null(d);
	/* Sized for the final bound: min(allowed CPUs, NR_THREADS). */
	cr_assert_eq(cl_counter_cid_init(&c, d, NR_THREADS), 0);
	pthread_barrier_init(&joined, NULL, NR_THREADS);
	for (int i = 0; i < NR_THREADS; i++) {
		a[i] = (struct cid_arg){ &c, d, &joined, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, cid_thread, &a[i]), 0);
	}
	for (int i = 0; i < NR_THREADS; i++) {
		cr_assert_eq(pthread_join(t[i], NULL), 0);
		cr_assert_eq(a[i].failed, 0, "thread %d could not join or acquire", i);
	}
	pthread_barrier_destroy(&joined);
	cr_assert_eq(cl_counter_cid_read(&c), (int64_t)NR_THREADS * (NR_ADDS / 100) * 100);
	cr_assert_eq(c.shared, 0, "every cid was below the bound: no shared adds");
	cl_counter_cid_destroy(&c);
	cl_cid_domain_destroy(d);
}
