/* SPDX-License-Identifier: MIT */
/*
 * bench/counter - what a counter increment costs when several threads count.
 *
 * Variants, measured in the same run, alternating, 1, 2 and 4 threads, each
 * thread pinned to an allowed CPU (round robin: 4 threads on 2 CPUs share):
 *   rseq-counter      cl_counter_add(&c, 1): rseq add on this CPU's slot
 *   percpu-atomic     atomic fetch-add on this CPU's slot (slot = cl_cpu_id())
 *   shared-atomic     atomic fetch-add on one shared word
 *   mutex             pthread mutex around one shared word
 *   per-thread        each thread its own padded word (no sharing at all;
 *                     the bound, but not a counter anyone else can read cheaply)
 * Reported: throughput in Mops/s (all threads together), median of --runs
 * (>= 5) and min-max; ratios rseq-counter / others. Goals with 2
 * threads: >= 3x shared-atomic, >= 1.3x percpu-atomic. Each run checks that
 * the counter holds exactly threads x ops.
 *
 * Then, per operation, cachelocal beside librseq (bench/librseq_cmp.h):
 * cl_counter_add, the raw add and the list pop+push pair against librseq's
 * operations, cpu_id and mm_cid index, 1 and 2 threads; SKIPPED when built
 * without librseq.
 */
#include "bench.h"
#include "librseq_cmp.h"

#include <cachelocal/counter.h>
#include <cachelocal/percpu_ops.h>

#include <stdatomic.h>

enum variant { V_RSEQ, V_PERCPU_ATOMIC, V_SHARED_ATOMIC, V_MUTEX, V_PER_THREAD, NR_VARIANTS };

static const char *const variant_name[NR_VARIANTS] = {
	"rseq-counter", "percpu-atomic", "shared-atomic", "mutex", "per-thread",
};

struct slot {
	_Alignas(CL_FALSE_SHARING_SIZE) int64_t v;
};

static struct cl_counter counter;
static struct slot *slots; /* per-CPU slots (percpu-atomic) or per-thread slots */
static unsigned nr_slots;
static _Alignas(CL_FALSE_SHARING_SIZE) int64_t shared;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static long ops_per_thread;

struct worker {
	enum variant v;
	int id;
	int cpu;
	pthread_t t;
	unsigned long long t0, t1; /* this thread's first and last increment */
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	long n = ops_per_thread;

	bench_pin(w->cpu);
	pthread_barrier_wait(&start);
	w->t0 = bench_now_ns();
	switch (w->v) {
	case V_RSEQ:
		for (long i = 0; i < n; i++)
			cl_counter_add(&counter, 1);
		break;
	case V_PERCPU_ATOMIC:
		for (long i = 0; i < n; i++) {
			unsigned c = (unsigned)cl_cpu_id(); /* same bound check as the counter */

			__atomic_fetch_add(&slots[c < nr_slots ? c : 0].v, 1, __ATOMIC_RELAXED);
		}
		break;
	case V_SHARED_ATOMIC:
		for (long i = 0; i < n; i++)
			__atomic_fetch_add(&shared, 1, __ATOMIC_RELAXED);
		break;
	case V_MUTEX:
		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&lock);
			shared++;
			pthread_mutex_unlock(&lock);
		}
		break;
	case V_PER_THREAD: {
		int64_t *mine = &slots[w->id].v;

		for (long i = 0; i < n; i++)
			__atomic_store_n(mine, __atomic_load_n(mine, __ATOMIC_RELAXED) + 1,
					 __ATOMIC_RELAXED);
		break;
	}
	default:
		break;
	}
	w->t1 = bench_now_ns();
	return NULL;
}

static int64_t total(enum variant v)
{
	int64_t sum = 0;

	switch (v) {
	case V_RSEQ:
		return cl_counter_read(&counter);
	case V_SHARED_ATOMIC:
	case V_MUTEX:
		return shared;
	default:
		for (unsigned i = 0; i < nr_slots; i++)
			sum += slots[i].v;
		return sum;
	}
}

/* One run: threads x ops_per_thread increments; returns Mops/s (all threads). */
static double run_once(enum variant v, int threads)
{
	struct worker w[4];
	unsigned long long t0, t1;

	if (cl_counter_init(&counter) != 0) {
		perror("cl_counter_init");
		exit(1);
	}
	memset(slots, 0, nr_slots * sizeof(*slots));
	shared = 0;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ v, i, bench_allowed_cpu(i), 0, 0, 0 };
		if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&start);
	/* From the first thread's start to the last thread's end: the main
	 * thread itself may not run while the pinned workers do. */
	t0 = ~0ull;
	t1 = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].t0 < t0)
			t0 = w[i].t0;
		if (w[i].t1 > t1)
			t1 = w[i].t1;
	}
	pthread_barrier_destroy(&start);
	if (total(v) != (int64_t)threads * ops_per_thread) {
		fprintf(stderr, "counter: %s with %d threads counted %lld, expected %lld\n",
			variant_name[v], threads, (long long)total(v),
			(long long)threads * ops_per_thread);
		exit(1);
	}
	cl_counter_destroy(&counter);
	return (double)threads * (double)ops_per_thread / ((double)(t1 - t0) / 1e3);
}

int main(int argc, char **argv)
{
	static const int thread_counts[] = { 1, 2, 4 };
	double samples[NR_VARIANTS][BENCH_MAX_RUNS];
	double med[NR_VARIANTS];
	struct bench b;

	bench_only_shared_args("counter", argc, argv);
	bench_init(&b, "counter", argc, argv);
	ops_per_thread = b.quick ? 500000 : 4000000;
	nr_slots = cl_nr_possible_cpus();
	if (nr_slots < 4)
		nr_slots = 4; /* per-thread variant: one slot per thread */
	slots = aligned_alloc(CL_FALSE_SHARING_SIZE, nr_slots * sizeof(*slots));
	if (!slots)
		return 1;
	if (!b.json_only)
		printf("# counter: ops mode %s, %ld increments per thread per run, pinned round robin\n",
		       cl_rseq_ops_mode_name(cl_rseq_ops_mode()), ops_per_thread);
	for (size_t k = 0; k < sizeof(thread_counts) / sizeof(thread_counts[0]); k++) {
		int threads = thread_counts[k];
		char case_name[32];

		snprintf(case_name, sizeof(case_name), "add %d thread%s", threads,
			 threads > 1 ? "s" : "");
		bench_progress(&b, "%s: %d runs x %d variants", case_name, b.runs, NR_VARIANTS);
		for (int r = 0; r < b.runs; r++)
			for (int v = 0; v < NR_VARIANTS; v++)
				samples[v][r] = run_once((enum variant)v, threads);
		for (int v = 0; v < NR_VARIANTS; v++)
			med[v] = bench_report(&b, case_name, variant_name[v], "pinned", threads,
					      samples[v], b.runs, "Mops/s");
		bench_ratio(&b, case_name, "rseq-counter / shared-atomic", med[V_RSEQ],
			    med[V_SHARED_ATOMIC]);
		bench_ratio(&b, case_name, "rseq-counter / percpu-atomic", med[V_RSEQ],
			    med[V_PERCPU_ATOMIC]);
		bench_ratio(&b, case_name, "rseq-counter / mutex", med[V_RSEQ], med[V_MUTEX]);
		bench_ratio(&b, case_name, "rseq-counter / per-thread", med[V_RSEQ],
			    med[V_PER_THREAD]);
	}
	lr_counter_compare(&b);
	free(slots);
	return bench_finish(&b);
}
