/* SPDX-License-Identifier: MIT */
/*
 * Tests of examples/histogram.c (the worked example of docs/structures.md),
 * compiled in: bad arguments, exact quiescent reads in both index kinds, the
 * read-side order (a concurrent read never finds a value in the sum whose
 * record is missing from the counts), takes partitioning the records while
 * pinned recorders run on every CPU (nothing lost, nothing twice), and a
 * fork() child that reads, records and takes. Run in every id mode by
 * make check, and built with -DCL_PERCPU_FENCE_NO_MEMBARRIER (the migrate
 * fence) and -DCL_NO_RSEQ_ASM (test_example_histogram.variants).
 */
#define HISTOGRAM_NO_MAIN
#include "../../examples/histogram.c"

#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

static const enum cl_rseq_index kinds[2] = { CL_RSEQ_INDEX_CPU_ID, CL_RSEQ_INDEX_MM_CID };

/* A histogram of @kind, or skip when the fence cannot serve it here. */
static struct hist *create_or_skip(enum cl_rseq_index kind)
{
	struct hist *h = hist_create(kind);

	if (h == NULL && errno == ENOSYS)
		cr_skip_test("no fence for %s copies here", kind == CL_RSEQ_INDEX_MM_CID ? "mm_cid" : "cpu_id");
	cr_assert_not_null(h, "errno %d", errno);
	return h;
}

Test(histogram_example, bad_arguments)
{
	errno = 0;
	cr_assert_null(hist_create((enum cl_rseq_index)9));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(hist_record(NULL, 1), -1);
	cr_assert_eq(errno, EINVAL);
	hist_destroy(NULL);
}

Test(histogram_example, buckets_by_bit_length)
{
	cr_assert_eq(hist_bucket(0), 0);
	cr_assert_eq(hist_bucket(1), 1);
	cr_assert_eq(hist_bucket(2), 2);
	cr_assert_eq(hist_bucket(3), 2);
	cr_assert_eq(hist_bucket(4), 3);
	cr_assert_eq(hist_bucket(UINT32_MAX), 32);
}

/* ---- exact when quiescent ---- */

#define THREADS 4
#define PER_THREAD 50000

struct rec_arg {
	struct hist *h;
	uint32_t v;
	int cpu; /* pin to it, or -1 */
	atomic_int *stop; /* NULL: PER_THREAD records; else until *stop */
	long n;
	uint32_t spread; /* values v .. v + spread - 1 in turn (a power of two) */
};

static void *rec(void *p)
{
	struct rec_arg *a = p;

	if (a->cpu >= 0)
		cl_test_pin(a->cpu);
	for (long n = 0; a->stop ? !atomic_load_explicit(a->stop, memory_order_relaxed) : n < PER_THREAD;
	     n++) {
		hist_record(a->h, a->v + ((uint32_t)n & (a->spread - 1)));
		__atomic_store_n(&a->n, n + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* What @a recorded. */
static void expect_add(struct hist_result *e, const struct rec_arg *a)
{
	for (long k = 0; k < (long)a->spread; k++) {
		long cnt = a->n / a->spread + (k < a->n % (long)a->spread);
		uint32_t v = a->v + (uint32_t)k;

		e->bucket[hist_bucket(v)] += cnt;
		e->sum += (int64_t)cnt * v;
		e->count += cnt;
	}
}

/* Join the @n recorders of @t/@a and add what they recorded to @want (zeroed here). */
static void join_all(pthread_t *t, struct rec_arg *a, int n, struct hist_result *want)
{
	memset(want, 0, sizeof(*want));
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		expect_add(want, &a[i]);
	}
}

static void assert_same(const struct hist_result *got, const struct hist_result *want)
{
	for (int b = 0; b < HIST_BUCKETS; b++)
		cr_assert_eq(got->bucket[b], want->bucket[b], "bucket %d: %lld, want %lld", b,
			     (long long)got->bucket[b], (long long)want->bucket[b]);
	cr_assert_eq(got->sum, want->sum, "sum %lld, want %lld", (long long)got->sum, (long long)want->sum);
	cr_assert_eq(got->count, want->count);
}

Test(histogram_example, exact_read_after_join_both_kinds)
{
	for (int k = 0; k < 2; k++) {
		struct hist *h = hist_create(kinds[k]);
		struct rec_arg a[THREADS];
		struct hist_result got, want;
		pthread_t t[THREADS];

		if (h == NULL && errno == ENOSYS)
			continue; /* mm_cid without membarrier RSEQ: create refuses */
		cr_assert_not_null(h);
		for (int i = 0; i < THREADS; i++) {
			a[i] = (struct rec_arg){ h, (uint32_t)(i * 1000), -1, NULL, 0, 8 };
			cr_assert_eq(pthread_create(&t[i], NULL, rec, &a[i]), 0);
		}
		join_all(t, a, THREADS, &want);
		memset(&got, 0, sizeof(got));
		hist_read(h, &got);
		assert_same(&got, &want);
		hist_destroy(h);
	}
}

/* ---- the read-side order ---- */

Test(histogram_example, concurrent_read_never_sees_a_value_without_its_record)
{
	struct hist *h = create_or_skip(CL_RSEQ_INDEX_CPU_ID);
	atomic_int stop = 0;
	struct rec_arg a[2];
	pthread_t t[2];
	long reads = 0;

	/* Every value is 1: a sum above the count is a value read without its record. */
	for (int i = 0; i < 2; i++) {
		a[i] = (struct rec_arg){ h, 1, -1, &stop, 0, 1 };
		cr_assert_eq(pthread_create(&t[i], NULL, rec, &a[i]), 0);
	}
	for (reads = 0; reads < 20000; reads++) {
		struct hist_result r;

		memset(&r, 0, sizeof(r));
		hist_read(h, &r);
		cr_assert_leq(r.sum, r.count, "read %ld: sum %lld > count %lld", reads,
			      (long long)r.sum, (long long)r.count);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	hist_destroy(h);
}

/* ---- takes partition the records ---- */

static int all_recorded(struct rec_arg *a, int nt)
{
	for (int i = 0; i < nt; i++)
		if (__atomic_load_n(&a[i].n, __ATOMIC_RELAXED) < 1000)
			return 0;
	return 1;
}

static void takes_partition(enum cl_rseq_index kind)
{
	int cpus[CPU_SETSIZE], n = cl_test_allowed_cpus(cpus, CPU_SETSIZE), nt;
	struct hist *h = create_or_skip(kind);
	struct hist_result total, part, want;
	struct rec_arg a[8];
	pthread_t t[8];
	atomic_int stop = 0;
	int takes;

	nt = n < 4 ? 4 : (n > 8 ? 8 : n);
	for (int i = 0; i < nt; i++) {
		a[i] = (struct rec_arg){ h, (uint32_t)(i * 77), cpus[i % n], &stop, 0, 8 };
		cr_assert_eq(pthread_create(&t[i], NULL, rec, &a[i]), 0);
	}
	memset(&total, 0, sizeof(total));
	/* At least 300 takes, and until every recorder has recorded. */
	for (takes = 0; takes < 300 || !all_recorded(a, nt); takes++) {
		memset(&part, 0, sizeof(part));
		cr_assert_eq(hist_take(h, &part), 0, "take %d: errno %d", takes, errno);
		hist_result_add(&total, &part);
	}
	atomic_store(&stop, 1);
	join_all(t, a, nt, &want);
	memset(&part, 0, sizeof(part));
	hist_read(h, &part);
	hist_result_add(&total, &part);
	cr_log_info("%s: %d takes, %lld records, %lu words overwritten before a fence (fence %s)",
		    kind == CL_RSEQ_INDEX_CPU_ID ? "cpu_id" : "mm_cid", takes, (long long)want.count,
		    h->nr_overwritten, cl_percpu_fence_method_name(cl_percpu_fence_method(kind)));
	cr_assert_gt(want.count, 0);
	assert_same(&total, &want);
	hist_destroy(h);
}

Test(histogram_example, takes_partition_records_cpu_id)
{
	takes_partition(CL_RSEQ_INDEX_CPU_ID);
}

Test(histogram_example, takes_partition_records_mm_cid)
{
	takes_partition(CL_RSEQ_INDEX_MM_CID);
}

/* ---- fork: the child uses the histogram (its lock was held across fork) ---- */

static struct hist *fh;
static atomic_int fork_stop;

static void *taker(void *p)
{
	(void)p;
	while (!atomic_load(&fork_stop)) {
		struct hist_result r;

		memset(&r, 0, sizeof(r));
		hist_take(fh, &r);
	}
	return NULL;
}

/* 0 ok; 1 read; 2 record + read; 3 take. */
static int child_uses_histogram(void)
{
	struct hist_result r0, r1, r2;

	memset(&r0, 0, sizeof(r0));
	hist_read(fh, &r0); /* would hang if the lock came over held */
	if (r0.count != r0.bucket[hist_bucket(5)])
		return 1;
	for (int i = 0; i < 1000; i++)
		hist_record(fh, 5);
	memset(&r1, 0, sizeof(r1));
	hist_read(fh, &r1);
	if (r1.count != r0.count + 1000 || r1.sum != r0.sum + 5000)
		return 2;
	memset(&r2, 0, sizeof(r2));
	if (hist_take(fh, &r2) != 0 || r2.count != r1.count)
		return 3;
	return 0;
}

Test(histogram_example, fork_child_reads_records_and_takes)
{
	pthread_t t;
	int st = -1;
	pid_t pid;

	fh = create_or_skip(CL_RSEQ_INDEX_CPU_ID);
	for (int i = 0; i < 100; i++)
		hist_record(fh, 5);
	atomic_store(&fork_stop, 0);
	cr_assert_eq(pthread_create(&t, NULL, taker, NULL), 0);
	for (int f = 0; f < 5; f++) {
		pid = fork(); /* waits for a take in progress to finish */
		cr_assert_geq(pid, 0);
		if (pid == 0)
			_exit(child_uses_histogram());
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_assert(WIFEXITED(st));
		cr_assert_eq(WEXITSTATUS(st), 0, "child %d: check %d (1 read, 2 record, 3 take)", f,
			     WEXITSTATUS(st));
	}
	atomic_store(&fork_stop, 1);
	pthread_join(t, NULL);
	hist_destroy(fh);
}
