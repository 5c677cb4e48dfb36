/* SPDX-License-Identifier: MIT */
/*
 * examples/histogram.c - a per-CPU histogram of latencies, built the way
 * docs/structures.md describes a per-CPU structure, from public API only:
 *
 *   storage  one percpu.h pool object per histogram: each CPU's copy holds
 *            that CPU's bucket counts and value sum          (hist_create)
 *   fast     two cl_percpu_add() on this CPU's copy: no atomic instruction,
 *            no shared cache line written                    (hist_record)
 *   read     sum every copy; the order of the loads is what makes the sum
 *            of values never run ahead of the counts          (hist_read)
 *   take     move every CPU's counts into a result and restart them from
 *            zero, while records keep running: store a mark, fence with
 *            cl_percpu_fence() (fence.h), check the mark      (hist_take)
 *   fork     the lock that serialises reads and takes is registered with
 *            cl_atfork_register() (atfork.h), so a child never inherits it
 *            held in the middle of a take
 *
 * The program: four threads record values while the main thread takes
 * intervals; at the end every record must be in exactly one interval or in
 * the last read. Prints the histogram and the modes it ran in; exit 0 when
 * the totals match, 1 otherwise.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/histogram.c -o histogram $(pkg-config --cflags --libs cachelocal)
 * Tested in every id mode by tests/unit/test_example_histogram.c, which
 * includes this file with HISTOGRAM_NO_MAIN defined.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/atfork.h>
#include <cachelocal/fence.h>
#include <cachelocal/percpu.h>
#include <cachelocal/percpu_ops.h>

/* Bucket k counts the values of bit length k: 0, 1, 2-3, 4-7, ..., 2^31-. */
#define HIST_BUCKETS 33

/*
 * Bit 62 of every per-CPU word is the word's epoch: hist_take() flips it as
 * its mark (an add never changes it), the count is the bits below. So the
 * counts of one CPU between two takes stay below 2^62 (2^30 records of the
 * largest value).
 */
#define HIST_EPOCH ((intptr_t)1 << 62)
#define HIST_COUNT(w) ((w) & (HIST_EPOCH - 1))

/*
 * One CPU's copy (a pool object; CPU n's copy is n strides after CPU 0's).
 * Only threads running on that CPU write it, so its lines never bounce;
 * the copies of two CPUs are a stride apart, never on one line.
 */
struct hist_cpu {
	intptr_t bucket[HIST_BUCKETS];
	intptr_t sum; /* of the recorded values */
};

/* What a read or a take returns. */
struct hist_result {
	int64_t bucket[HIST_BUCKETS];
	int64_t sum;
	int64_t count; /* the sum of the buckets */
};

struct hist {
	/* read by every record: set at create, then read-only */
	struct hist_cpu *cpu;    /* CPU 0's copy */
	size_t stride;           /* the pool's stride: passed to every operation */
	enum cl_rseq_index kind; /* copies indexed by cpu_id or by mm_cid */
	unsigned nr_cpus;        /* copies in the pool */
	struct cl_percpu_pool *pool;
	/* records of a thread without an rseq area in a process that uses rseq
	 * (cl_percpu_add() says ENOSYS): atomic adds on these shared words */
	struct hist_cpu shared;
	/* reads and takes: under lock */
	pthread_mutex_t lock;
	struct cl_atfork fork;   /* lock held across fork() */
	unsigned long nr_overwritten; /* words a record overwrote before a take's fence */
};

/* The bucket of @v: its bit length. */
static int hist_bucket(uint32_t v)
{
	return v == 0 ? 0 : 32 - __builtin_clz(v);
}

/*
 * hist_create() - a histogram whose copies are indexed by @kind.
 * Returns NULL with errno EINVAL (bad kind), ENOMEM, or ENOSYS (the takes
 * could not be fenced: mm_cid copies on a kernel without membarrier's RSEQ
 * command).
 */
static struct hist *hist_create(enum cl_rseq_index kind)
{
	struct hist *h;
	int m = cl_percpu_fence_method(kind); /* decides the modes now; EINVAL on a bad kind */

	if (m < 0)
		return NULL;
	if (m == CL_PERCPU_FENCE_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	/*
	 * Default attributes: max_nr_cpus 0 gives a copy to every possible CPU
	 * and so to every mm_cid (always below the number of possible CPUs).
	 */
	h->pool = cl_percpu_pool_create(NULL);
	if (h->pool != NULL)
		h->cpu = cl_percpu_alloc(h->pool, sizeof(struct hist_cpu), sizeof(intptr_t));
	if (h->cpu == NULL) {
		if (h->pool != NULL)
			cl_percpu_pool_destroy(h->pool);
		free(h);
		errno = ENOMEM;
		return NULL;
	}
	/*
	 * The stride to pass is the pool's: the operations find copy i at
	 * cpu + i * stride. A pool made with attr.stride 0 has the compile-time
	 * CL_PERCPU_STRIDE, and passing that constant instead lets the compiler
	 * fold the multiply; any other pool must pass its own stride, or the
	 * operations would write another object.
	 */
	h->stride = cl_percpu_pool_stride(h->pool);
	h->nr_cpus = cl_percpu_pool_nr_cpus(h->pool);
	h->kind = kind;
	pthread_mutex_init(&h->lock, NULL);
	cl_atfork_register(&h->fork, &h->lock, NULL);
	return h;
}

static void hist_destroy(struct hist *h)
{
	if (h == NULL)
		return;
	cl_atfork_unregister(&h->fork);
	pthread_mutex_destroy(&h->lock);
	cl_percpu_free(h->pool, h->cpu);
	cl_percpu_pool_destroy(h->pool);
	free(h);
}

/*
 * The fence between a record's two adds. ThreadSanitizer rejects standalone
 * fences (gcc: -Wtsan); its builds run the operations' atomic fallback
 * (read-modify-writes it can model), so there it is a compiler barrier.
 */
#ifdef CL_HAVE_TSAN
#define HIST_RELEASE_FENCE() __atomic_signal_fence(__ATOMIC_RELEASE)
#else
#define HIST_RELEASE_FENCE() __atomic_thread_fence(__ATOMIC_RELEASE)
#endif

/*
 * hist_record() - count @v. Any thread, concurrently with everything.
 * 0, or -1 with errno EINVAL (NULL @h).
 *
 * Two restartable sequences on the copy of the CPU (or mm_cid) the thread
 * runs on; the thread may migrate between them, so the two adds may land
 * in two different copies: fine, the read sums every copy. The release
 * fence orders the bucket add before the sum add (hist_read() relies on
 * it); on x86_64 it costs nothing.
 */
static int hist_record(struct hist *h, uint32_t v)
{
	int b, i;

	if (h == NULL) {
		errno = EINVAL;
		return -1;
	}
	b = hist_bucket(v);
	i = cl_percpu_add(h->kind, &h->cpu->bucket[b], h->stride, 1);
	if (i < 0) { /* ENOSYS: this thread has no rseq area; the shared words */
		__atomic_fetch_add(&h->shared.bucket[b], 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&h->shared.sum, (intptr_t)v, __ATOMIC_RELAXED);
		return 0;
	}
	HIST_RELEASE_FENCE();
	if (cl_percpu_add(h->kind, &h->cpu->sum, h->stride, (intptr_t)v) < 0)
		__atomic_fetch_add(&h->shared.sum, (intptr_t)v, __ATOMIC_RELAXED);
	return 0;
}

/* Copy i of field @f (CPU 0's address) of @h. */
static intptr_t *hist_copy(const struct hist *h, intptr_t *f, unsigned i)
{
	return cl_percpu_ptr_stride(f, i, h->stride);
}

/*
 * hist_read() - add the histogram's counts to @out (zero it first).
 *
 * Exact when no record runs (e.g. after joining the recording threads).
 * While records run, each word is read untorn, and the loads are ordered:
 * every sum copy first (acquire loads), then every bucket copy. A record
 * adds its bucket before its value (release fence between), so a value the
 * read found in a sum has its bucket counted too: out->sum never includes a
 * value whose record is missing from out->count (reading the buckets first
 * would allow it). Nothing more: records keep landing during the read.
 * A hist_take() moves counts from the copies to its result, so reads and
 * takes are serialised by the lock.
 */
static void hist_read(struct hist *h, struct hist_result *out)
{
	pthread_mutex_lock(&h->lock);
	out->sum += __atomic_load_n(&h->shared.sum, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < h->nr_cpus; i++)
		out->sum += HIST_COUNT(__atomic_load_n(hist_copy(h, &h->cpu->sum, i), __ATOMIC_ACQUIRE));
	for (int b = 0; b < HIST_BUCKETS; b++) {
		int64_t n = __atomic_load_n(&h->shared.bucket[b], __ATOMIC_RELAXED);

		for (unsigned i = 0; i < h->nr_cpus; i++)
			n += HIST_COUNT(__atomic_load_n(hist_copy(h, &h->cpu->bucket[b], i),
							__ATOMIC_RELAXED));
		out->bucket[b] += n;
		out->count += n;
	}
	pthread_mutex_unlock(&h->lock);
}

/*
 * Take the counts of copy @i: for each word, swap in the other epoch with
 * count 0 and keep what it held; fence; a word still in the old epoch was
 * overwritten by a record whose section had read it before the swap and
 * committed before the fence (its new value includes what was taken): keep
 * only the new part in the copy, and fence again.
 */
static int hist_take_copy(struct hist *h, unsigned i, struct hist_result *out)
{
	enum { W = HIST_BUCKETS + 1 };             /* words per copy: buckets, sum */
	intptr_t *w[W], taken[W], epoch[W], v;
	int pending = W, tries = 0;

	for (int k = 0; k < W; k++) {
		w[k] = hist_copy(h, k < HIST_BUCKETS ? &h->cpu->bucket[k] : &h->cpu->sum, i);
		v = __atomic_load_n(w[k], __ATOMIC_RELAXED);
		do
			epoch[k] = (v & HIST_EPOCH) ^ HIST_EPOCH;
		while (!__atomic_compare_exchange_n(w[k], &v, epoch[k], 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED));
		taken[k] = HIST_COUNT(v);
	}
	while (pending > 0) {
		if (cl_percpu_fence(h->kind, (int)i) != 0) {
			/* Only the migrate method fails here once it worked at
			 * create (the CPU left the caller's cpuset): try again,
			 * then report; that copy's counts are then not verified. */
			if (++tries < 3)
				continue;
			return -1;
		}
		pending = 0;
		for (int k = 0; k < W; k++) {
			v = __atomic_load_n(w[k], __ATOMIC_ACQUIRE);
			if ((v & HIST_EPOCH) == epoch[k])
				continue;
			/* v = taken + records since: keep the records since */
			if (!__atomic_compare_exchange_n(w[k], &v, epoch[k] | (HIST_COUNT(v) - taken[k]), 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				k--; /* a record committed meanwhile: look again */
			else
				pending++, h->nr_overwritten++;
		}
	}
	for (int k = 0; k < HIST_BUCKETS; k++) {
		out->bucket[k] += taken[k];
		out->count += taken[k];
	}
	out->sum += taken[HIST_BUCKETS];
	return 0;
}

/*
 * hist_take() - move every count into @out (zero it first) and restart the
 * histogram from zero. Successive takes partition the records: each record
 * is in exactly one take, or still in the histogram. Any thread; records
 * keep running (on the rseq path nothing slows them down, they only restart
 * when the fence hits them). Costs one fence per CPU (membarrier: an
 * interrupt of that CPU; mm_cid copies: of every CPU; migrate: two moves of
 * the caller). 0, or -1 with the fence's errno.
 *
 * For intervals of a histogram that is never emptied, a reader can also
 * keep its previous hist_read() and subtract: no fence, no write to a copy.
 * A take is for when the copies must restart from zero (the counts would
 * overflow, a CPU is retired) or a reader wants each record exactly once.
 */
static int hist_take(struct hist *h, struct hist_result *out)
{
	int r = 0;

	pthread_mutex_lock(&h->lock);
	for (unsigned i = 0; i < h->nr_cpus && r == 0; i++)
		r = hist_take_copy(h, i, out);
	/* The shared words: only atomic adds touch them; an exchange suffices. */
	for (int b = 0; b < HIST_BUCKETS && r == 0; b++) {
		int64_t n = __atomic_exchange_n(&h->shared.bucket[b], 0, __ATOMIC_ACQ_REL);

		out->bucket[b] += n;
		out->count += n;
	}
	if (r == 0)
		out->sum += __atomic_exchange_n(&h->shared.sum, 0, __ATOMIC_ACQ_REL);
	pthread_mutex_unlock(&h->lock);
	return r;
}

static void hist_result_add(struct hist_result *to, const struct hist_result *from)
{
	for (int b = 0; b < HIST_BUCKETS; b++)
		to->bucket[b] += from->bucket[b];
	to->sum += from->sum;
	to->count += from->count;
}

#ifndef HISTOGRAM_NO_MAIN
#include "example_args.h"

#define THREADS 4
#define RECORDS 200000

static struct hist *lat;
static int finished; /* recorders done */

/* Records RECORDS pseudo-latencies; returns their sum through @arg. */
static void *recorder(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15u, sum = 0;

	for (int n = 0; n < RECORDS; n++) {
		uint32_t v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift */
		v = (uint32_t)(x >> 40) >> (x & 15);      /* spread over the buckets */
		hist_record(lat, v);
		sum += v;
	}
	*(uint64_t *)arg = sum;
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

int main(int argc, char **argv)
{
	struct hist_result total, part;
	uint64_t sums[THREADS], expect_sum = 0;
	pthread_t t[THREADS];
	int takes = 0;

	example_args(argc, argv,
		     "usage: histogram [--help]\n  a per-CPU histogram (docs/structures.md)\n",
		     NULL, 0);
	lat = hist_create(CL_RSEQ_INDEX_CPU_ID);
	if (lat == NULL) {
		perror("hist_create");
		return 1;
	}
	for (int k = 0; k < THREADS; k++) {
		sums[k] = (uint64_t)k + 1;
		pthread_create(&t[k], NULL, recorder, &sums[k]);
	}
	memset(&total, 0, sizeof(total));
	/* Intervals while the recorders run. */
	while (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) < THREADS) {
		memset(&part, 0, sizeof(part));
		if (hist_take(lat, &part) != 0) {
			perror("hist_take");
			return 1;
		}
		hist_result_add(&total, &part);
		takes++;
	}
	for (int k = 0; k < THREADS; k++) {
		pthread_join(t[k], NULL);
		expect_sum += sums[k];
	}
	memset(&part, 0, sizeof(part));
	hist_read(lat, &part); /* exact: every recorder joined */
	hist_result_add(&total, &part);

	printf("histogram: ops %s, id mode %s, fence %s; %d takes while recording\n",
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode()), cl_id_mode_name(cl_id_mode()),
	       cl_percpu_fence_method_name(cl_percpu_fence_method(CL_RSEQ_INDEX_CPU_ID)), takes);
	for (int b = 0; b < HIST_BUCKETS; b++)
		if (total.bucket[b] != 0)
			printf("  [%10lu, %10lu] %8lld\n", b ? 1ul << (b - 1) : 0ul,
			       b ? (1ul << b) - 1 : 0ul, (long long)total.bucket[b]);
	printf("  %lld records, sum %lld; %lu words overwritten by a record before a take's fence\n",
	       (long long)total.count, (long long)total.sum, lat->nr_overwritten);
	hist_destroy(lat);
	if (total.count != (int64_t)THREADS * RECORDS || (uint64_t)total.sum != expect_sum) {
		fprintf(stderr, "histogram: %lld records (want %d), sum %lld (want %llu)\n",
			(long long)total.count, THREADS * RECORDS, (long long)total.sum,
			(unsigned long long)expect_sum);
		return 1;
	}
	return 0;
}
#endif /* HISTOGRAM_NO_MAIN */
