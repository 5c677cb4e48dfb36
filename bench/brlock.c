/* SPDX-License-Identifier: MIT */
/*
 * bench/brlock - what a read lock + unlock pair costs, and what a writer
 * waits, for three reader-writer locks:
 *   brlock          cl_brlock_read_lock/unlock: a per-CPU add on this CPU's
 *                   line (rseq), a load of the writer word; no atomic, no fence
 *   pthread-rwlock  pthread_rwlock_rdlock/unlock (glibc default kind)
 *   atomic-count    one shared word: readers fetch-add +1 / -1 and test a
 *                   writer bit (the usual "reader count" lock)
 * Cases, each variant measured in the same run, interleaved:
 *   read pair, 1 and 2 threads, each pinned to its own allowed CPU (round
 *   robin), no writer: ns per lock+unlock pair per thread;
 *   writer latency: one reader per allowed CPU but the first, pinned and
 *   looping, and a writer pinned to the first CPU taking the write lock
 *   repeatedly: us per write_lock + write_unlock.
 * Median of --runs (>= 5), min-max; ratios other / brlock. Read pairs are
 * reported twice: "wall" (first start to last end, per pair per thread) and
 * "cpu" (the readers' CPU time, CLOCK_THREAD_CPUTIME_ID, per pair): on a
 * loaded machine the wall clock also counts the time a pinned thread waits
 * for its CPU (with 2 threads, CPU time understates contention when they do
 * not run at the same time). Goal:
 * brlock read pair >= 10x faster than pthread_rwlock with 2 readers.
 */
#include "bench.h"

#include <cachelocal/brlock.h>
#include <cachelocal/percpu_ops.h>

enum variant { V_BRLOCK, V_RWLOCK, V_ATOMIC, NR_VARIANTS };

static const char *const variant_name[NR_VARIANTS] = { "brlock", "pthread-rwlock",
						       "atomic-count" };

/* The single-word reader count: bit 62 = writer. */
#define ATOMIC_WRITER (1L << 62)

static struct cl_brlock brl;
static pthread_rwlock_t rwl;
static _Alignas(CL_FALSE_SHARING_SIZE) long aword;
static _Alignas(CL_FALSE_SHARING_SIZE) long protected_data;
static pthread_barrier_t start;
static long pairs_per_thread;
static int stop_readers;

static inline void atomic_read_lock(void)
{
	for (;;) {
		if (!(__atomic_fetch_add(&aword, 1, __ATOMIC_ACQUIRE) & ATOMIC_WRITER))
			return;
		__atomic_fetch_sub(&aword, 1, __ATOMIC_RELAXED);
		while (__atomic_load_n(&aword, __ATOMIC_RELAXED) & ATOMIC_WRITER)
			CL_CPU_RELAX();
	}
}

static inline void atomic_read_unlock(void)
{
	__atomic_fetch_sub(&aword, 1, __ATOMIC_RELEASE);
}

static inline void atomic_write_lock(void)
{
	while (__atomic_fetch_or(&aword, ATOMIC_WRITER, __ATOMIC_ACQUIRE) & ATOMIC_WRITER)
		CL_CPU_RELAX();
	while (__atomic_load_n(&aword, __ATOMIC_ACQUIRE) != ATOMIC_WRITER)
		CL_CPU_RELAX();
}

static inline void atomic_write_unlock(void)
{
	__atomic_fetch_and(&aword, ~ATOMIC_WRITER, __ATOMIC_RELEASE);
}

/* One read section of variant v; returns what it read. */
static inline __attribute__((always_inline)) long read_once(enum variant v)
{
	long x;

	switch (v) {
	case V_BRLOCK: {
		int t = cl_brlock_read_lock(&brl);

		x = CL_READ_ONCE(protected_data);
		cl_brlock_read_unlock(&brl, t);
		break;
	}
	case V_RWLOCK:
		pthread_rwlock_rdlock(&rwl);
		x = CL_READ_ONCE(protected_data);
		pthread_rwlock_unlock(&rwl);
		break;
	default:
		atomic_read_lock();
		x = CL_READ_ONCE(protected_data);
		atomic_read_unlock();
		break;
	}
	return x;
}

static void write_once(enum variant v)
{
	switch (v) {
	case V_BRLOCK:
		cl_brlock_write_lock(&brl);
		protected_data++;
		cl_brlock_write_unlock(&brl);
		break;
	case V_RWLOCK:
		pthread_rwlock_wrlock(&rwl);
		protected_data++;
		pthread_rwlock_unlock(&rwl);
		break;
	default:
		atomic_write_lock();
		protected_data++;
		atomic_write_unlock();
		break;
	}
}

struct worker {
	enum variant v;
	int cpu;
	pthread_t t;
	unsigned long long t0, t1, cpu_ns;
	long sum;
};

/* The timed loop, instantiated once per variant (the switch in read_once()
 * folds away), so no variant pays for choosing the variant. */
static inline __attribute__((always_inline)) long read_loop(enum variant v)
{
	long sum = 0;

	for (long i = 0; i < pairs_per_thread; i++)
		sum += read_once(v);
	return sum;
}

static void *reader_main(void *p)
{
	struct worker *w = p;
	long sum;

	bench_pin(w->cpu);
	pthread_barrier_wait(&start);
	w->cpu_ns = bench_thread_cpu_ns();
	w->t0 = bench_now_ns();
	switch (w->v) {
	case V_BRLOCK:
		sum = read_loop(V_BRLOCK);
		break;
	case V_RWLOCK:
		sum = read_loop(V_RWLOCK);
		break;
	default:
		sum = read_loop(V_ATOMIC);
		break;
	}
	w->t1 = bench_now_ns();
	w->cpu_ns = bench_thread_cpu_ns() - w->cpu_ns;
	w->sum = sum;
	return NULL;
}

/* Readers for the writer-latency case: until stop_readers. */
static void *busy_reader_main(void *p)
{
	struct worker *w = p;
	long sum = 0;

	bench_pin(w->cpu);
	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&stop_readers, __ATOMIC_RELAXED))
		for (int k = 0; k < 64; k++)
			sum += read_once(w->v);
	w->sum = sum;
	return NULL;
}

/* Read pairs: ns per pair per thread, wall clock (returned) and CPU time (*cpu). */
static double run_reads(enum variant v, int threads, double *cpu)
{
	struct worker w[2];
	unsigned long long t0 = ~0ull, t1 = 0, cpu_ns = 0;

	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ v, bench_allowed_cpu(i), 0, 0, 0, 0, 0 };
		if (pthread_create(&w[i].t, NULL, reader_main, &w[i]) != 0)
			exit(1);
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].t0 < t0)
			t0 = w[i].t0;
		if (w[i].t1 > t1)
			t1 = w[i].t1;
		cpu_ns += w[i].cpu_ns;
	}
	pthread_barrier_destroy(&start);
	*cpu = (double)cpu_ns / threads / (double)pairs_per_thread;
	return (double)(t1 - t0) / (double)pairs_per_thread;
}

/* Writer latency: us per write lock + unlock, readers on the other CPUs. */
static double run_writes(enum variant v, int nr_readers, int writes)
{
	struct worker w[64];
	unsigned long long t0, t1;

	stop_readers = 0;
	pthread_barrier_init(&start, NULL, (unsigned)nr_readers + 1);
	for (int i = 0; i < nr_readers; i++) {
		w[i] = (struct worker){ v, bench_allowed_cpu(i + 1), 0, 0, 0, 0, 0 };
		if (pthread_create(&w[i].t, NULL, busy_reader_main, &w[i]) != 0)
			exit(1);
	}
	bench_pin(bench_allowed_cpu(0));
	pthread_barrier_wait(&start);
	write_once(v); /* warm */
	t0 = bench_now_ns();
	for (int i = 0; i < writes; i++)
		write_once(v);
	t1 = bench_now_ns();
	__atomic_store_n(&stop_readers, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nr_readers; i++)
		pthread_join(w[i].t, NULL);
	pthread_barrier_destroy(&start);
	return (double)(t1 - t0) / 1e3 / writes;
}

int main(int argc, char **argv)
{
	double samples[NR_VARIANTS][BENCH_MAX_RUNS], cpu_samples[NR_VARIANTS][BENCH_MAX_RUNS];
	double med[NR_VARIANTS];
	int nr_cpus, nr_readers, writes;
	struct bench b;
	char case_name[48];

	bench_only_shared_args("brlock", argc, argv);
	bench_init(&b, "brlock", argc, argv);
	if (cl_brlock_init(&brl) != 0 || pthread_rwlock_init(&rwl, NULL) != 0) {
		perror("init");
		return 1;
	}
	pairs_per_thread = b.quick ? 300000 : 3000000;
	writes = b.quick ? 200 : 2000;
	nr_cpus = bench_nr_allowed_cpus();
	if (!b.json_only)
		printf("# brlock: mode %s, ops mode %s, %ld pairs per thread per run, pinned round robin\n",
		       cl_brlock_mode(&brl) == CL_BRLOCK_MEMBARRIER ? "membarrier" : "fence",
		       cl_rseq_ops_mode_name(cl_rseq_ops_mode()), pairs_per_thread);
	for (int threads = 1; threads <= 2; threads++) {
		snprintf(case_name, sizeof(case_name), "read pair %d thread%s", threads,
			 threads > 1 ? "s" : "");
		bench_progress(&b, "%s: %d runs x %d variants", case_name, b.runs, NR_VARIANTS);
		for (int r = 0; r < b.runs; r++)
			for (int v = 0; v < NR_VARIANTS; v++)
				samples[v][r] = run_reads((enum variant)v, threads, &cpu_samples[v][r]);
		for (int k = 0; k < 2; k++) {
			char cn[64];

			snprintf(cn, sizeof(cn), "%s %s", case_name, k ? "cpu" : "wall");
			for (int v = 0; v < NR_VARIANTS; v++)
				med[v] = bench_report(&b, cn, variant_name[v], "pinned", threads,
						      k ? cpu_samples[v] : samples[v], b.runs,
						      "ns/pair");
			bench_ratio(&b, cn, "pthread-rwlock / brlock", med[V_RWLOCK], med[V_BRLOCK]);
			bench_ratio(&b, cn, "atomic-count / brlock", med[V_ATOMIC], med[V_BRLOCK]);
		}
	}
	nr_readers = nr_cpus > 1 ? nr_cpus - 1 : 1;
	if (nr_readers > 64)
		nr_readers = 64;
	snprintf(case_name, sizeof(case_name), "write, %d reader%s busy", nr_readers,
		 nr_readers > 1 ? "s" : "");
	bench_progress(&b, "%s: %d runs x %d variants", case_name, b.runs, NR_VARIANTS);
	for (int r = 0; r < b.runs; r++)
		for (int v = 0; v < NR_VARIANTS; v++)
			samples[v][r] = run_writes((enum variant)v, nr_readers, writes);
	for (int v = 0; v < NR_VARIANTS; v++)
		med[v] = bench_report(&b, case_name, variant_name[v], "pinned", nr_readers + 1,
				      samples[v], b.runs, "us/write");
	bench_ratio(&b, case_name, "brlock / pthread-rwlock", med[V_BRLOCK], med[V_RWLOCK]);
	bench_ratio(&b, case_name, "brlock / atomic-count", med[V_BRLOCK], med[V_ATOMIC]);
	cl_brlock_destroy(&brl);
	pthread_rwlock_destroy(&rwl);
	return bench_finish(&b);
}
