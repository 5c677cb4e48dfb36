/* SPDX-License-Identifier: MIT */
/*
 * bench/objcache - what an alloc + free of a 64-byte object costs:
 *   objcache       cl_objcache_alloc/free: one rseq buffer pop / push on this
 *                  CPU's cache (no atomic), a depot batch when empty or full
 *   malloc         glibc malloc/free of the same size (its per-thread tcache)
 *   mutex-list     a freelist behind one pthread mutex (the textbook pool)
 *   lockfree-stack a shared Treiber stack of preallocated objects (index +
 *                  ABA tag in one 64-bit word, CAS on pop and push)
 * Patterns, 1 and 2 threads, each pinned to its own allowed CPU (round
 * robin), variants interleaved in one run:
 *   pair      alloc, then free the same object, repeated
 *   burst 32  32 allocs, then the 32 frees (the caches' slow paths run:
 *             objcache's default capacity is 64, batches of 32)
 * Reported, median of --runs (>= 5) with min-max, ratios other / objcache:
 *   wall  ns per alloc+free per thread, first thread's start to last end;
 *   cpu   the threads' CPU time (CLOCK_THREAD_CPUTIME_ID) per alloc+free: on
 *         a loaded machine the wall clock also counts the time a pinned
 *         thread waits for its CPU; CPU time does not (with 2 threads it
 *         understates contention when they do not run at the same time). Goals: objcache pair >= 2x faster than malloc with
 * 1 thread, >= 5x faster than mutex-list with 2 threads.
 */
#include "bench.h"

#include <cachelocal/objcache.h>
#include <cachelocal/percpu_ops.h>

#define OBJ_SIZE 64
#define BURST 32
#define POOL_OBJS 4096 /* preallocated objects of the two shared lists */

enum variant { V_OBJCACHE, V_MALLOC, V_MUTEX, V_LOCKFREE, NR_VARIANTS };

static const char *const variant_name[NR_VARIANTS] = { "objcache", "malloc", "mutex-list",
						       "lockfree-stack" };

struct obj {
	struct obj *next; /* mutex-list link */
	char payload[OBJ_SIZE - sizeof(struct obj *)];
};

static struct cl_objcache *cache;
static struct obj *objs;          /* POOL_OBJS objects for the shared lists */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *list_head;
static _Alignas(CL_FALSE_SHARING_SIZE) uint64_t lf_head; /* tag << 32 | index + 1 (0: empty) */
static uint32_t lf_next[POOL_OBJS];                      /* index + 1 of the next free object */
static pthread_barrier_t start;
static long iters;

static void *list_alloc(void)
{
	struct obj *o;

	pthread_mutex_lock(&list_lock);
	o = list_head;
	if (o)
		list_head = o->next;
	pthread_mutex_unlock(&list_lock);
	return o;
}

static void list_free(void *p)
{
	struct obj *o = p;

	pthread_mutex_lock(&list_lock);
	o->next = list_head;
	list_head = o;
	pthread_mutex_unlock(&list_lock);
}

static void *lf_alloc(void)
{
	uint64_t h = __atomic_load_n(&lf_head, __ATOMIC_ACQUIRE), n;
	uint32_t i;

	do {
		i = (uint32_t)h;
		if (i == 0)
			return NULL;
		n = ((h >> 32) + 1) << 32 | __atomic_load_n(&lf_next[i - 1], __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(&lf_head, &h, n, 1, __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	return &objs[i - 1];
}

static void lf_free(void *p)
{
	uint32_t i = (uint32_t)((struct obj *)p - objs) + 1;
	uint64_t h = __atomic_load_n(&lf_head, __ATOMIC_RELAXED), n;

	do {
		__atomic_store_n(&lf_next[i - 1], (uint32_t)h, __ATOMIC_RELAXED);
		n = ((h >> 32) + 1) << 32 | i;
	} while (!__atomic_compare_exchange_n(&lf_head, &h, n, 1, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
}

static void reset_lists(void)
{
	list_head = NULL;
	for (int i = POOL_OBJS - 1; i >= 0; i--) {
		objs[i].next = list_head;
		list_head = &objs[i];
		lf_next[i] = i + 1 < POOL_OBJS ? (uint32_t)i + 2 : 0;
	}
	lf_head = 1;
}

static inline __attribute__((always_inline)) void *do_alloc(enum variant v)
{
	switch (v) {
	case V_OBJCACHE:
		return cl_objcache_alloc(cache);
	case V_MALLOC:
		return malloc(OBJ_SIZE);
	case V_MUTEX:
		return list_alloc();
	default:
		return lf_alloc();
	}
}

static inline __attribute__((always_inline)) void do_free(enum variant v, void *p)
{
	switch (v) {
	case V_OBJCACHE:
		cl_objcache_free(cache, p);
		break;
	case V_MALLOC:
		free(p);
		break;
	case V_MUTEX:
		list_free(p);
		break;
	default:
		lf_free(p);
		break;
	}
}

struct worker {
	enum variant v;
	int cpu, burst;
	pthread_t t;
	unsigned long long t0, t1, cpu_ns;
	long failed;
};

/* The timed loops, instantiated once per variant (the switches in
 * do_alloc()/do_free() fold away), so no variant pays for choosing it. */
static inline __attribute__((always_inline)) long pair_loop(enum variant v)
{
	long failed = 0;

	for (long i = 0; i < iters; i++) {
		void *o = do_alloc(v);

		if (__builtin_expect(o == NULL, 0)) {
			failed++;
			continue;
		}
		*(volatile char *)o = (char)i; /* touch it, as a user would */
		do_free(v, o);
	}
	return failed;
}

static inline __attribute__((always_inline)) long burst_loop(enum variant v)
{
	void *held[BURST];
	long failed = 0;

	for (long i = 0; i < iters / BURST; i++) {
		for (int k = 0; k < BURST; k++) {
			held[k] = do_alloc(v);
			if (__builtin_expect(held[k] == NULL, 0))
				failed++;
			else
				*(volatile char *)held[k] = (char)k;
		}
		for (int k = 0; k < BURST; k++)
			if (held[k])
				do_free(v, held[k]);
	}
	return failed;
}

#define BY_VARIANT(fn, v)                                                           \
	((v) == V_OBJCACHE ? fn(V_OBJCACHE) : (v) == V_MALLOC ? fn(V_MALLOC)       \
					 : (v) == V_MUTEX    ? fn(V_MUTEX)          \
							     : fn(V_LOCKFREE))

static void *worker_main(void *p)
{
	struct worker *w = p;
	long failed;

	bench_pin(w->cpu);
	pthread_barrier_wait(&start);
	w->cpu_ns = bench_thread_cpu_ns();
	w->t0 = bench_now_ns();
	if (!w->burst)
		failed = BY_VARIANT(pair_loop, w->v);
	else
		failed = BY_VARIANT(burst_loop, w->v);
	w->t1 = bench_now_ns();
	w->cpu_ns = bench_thread_cpu_ns() - w->cpu_ns;
	w->failed = failed;
	return NULL;
}

/* ns per alloc+free per thread: wall clock (returned) and CPU time (*cpu). */
static double run_once(enum variant v, int threads, int burst, double *cpu)
{
	struct worker w[2];
	unsigned long long t0 = ~0ull, t1 = 0, cpu_ns = 0;
	long pairs = burst ? iters / BURST * BURST : iters;

	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ v, bench_allowed_cpu(i), burst, 0, 0, 0, 0, 0 };
		if (pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0)
			exit(1);
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].failed) {
			fprintf(stderr, "objcache bench: %s: %ld allocations failed\n",
				variant_name[v], w[i].failed);
			exit(1);
		}
		if (w[i].t0 < t0)
			t0 = w[i].t0;
		if (w[i].t1 > t1)
			t1 = w[i].t1;
		cpu_ns += w[i].cpu_ns;
	}
	pthread_barrier_destroy(&start);
	*cpu = (double)cpu_ns / threads / (double)pairs;
	return (double)(t1 - t0) / (double)pairs;
}

int main(int argc, char **argv)
{
	double samples[NR_VARIANTS][BENCH_MAX_RUNS], cpu_samples[NR_VARIANTS][BENCH_MAX_RUNS];
	double med[NR_VARIANTS];
	struct cl_objcache_attr attr = { OBJ_SIZE, 0, 0, 0 };
	struct cl_objcache_stats st;
	struct bench b;
	char case_name[48];

	bench_only_shared_args("objcache", argc, argv);
	bench_init(&b, "objcache", argc, argv);
	cache = cl_objcache_create(&attr);
	objs = aligned_alloc(CL_CACHELINE_SIZE, sizeof(struct obj) * POOL_OBJS);
	if (!cache || !objs) {
		perror("setup");
		return 1;
	}
	iters = b.quick ? 320000 : 3200000;
	if (!b.json_only)
		printf("# objcache: %d-byte objects, ops mode %s, %ld alloc+free per thread per run, "
		       "pinned round robin\n",
		       OBJ_SIZE, cl_rseq_ops_mode_name(cl_rseq_ops_mode()), iters);
	for (int burst = 0; burst <= 1; burst++) {
		for (int threads = 1; threads <= 2; threads++) {
			snprintf(case_name, sizeof(case_name), "%s %d thread%s",
				 burst ? "burst32" : "pair", threads, threads > 1 ? "s" : "");
			bench_progress(&b, "%s: %d runs x %d variants", case_name, b.runs,
				       NR_VARIANTS);
			for (int r = 0; r < b.runs; r++)
				for (int v = 0; v < NR_VARIANTS; v++) {
					reset_lists();
					samples[v][r] = run_once((enum variant)v, threads, burst,
								 &cpu_samples[v][r]);
				}
			for (int k = 0; k < 2; k++) {
				char cn[64];

				snprintf(cn, sizeof(cn), "%s %s", case_name, k ? "cpu" : "wall");
				for (int v = 0; v < NR_VARIANTS; v++)
					med[v] = bench_report(&b, cn, variant_name[v], "pinned", threads,
							      k ? cpu_samples[v] : samples[v], b.runs,
							      "ns/pair");
				bench_ratio(&b, cn, "malloc / objcache", med[V_MALLOC], med[V_OBJCACHE]);
				bench_ratio(&b, cn, "mutex-list / objcache", med[V_MUTEX],
					    med[V_OBJCACHE]);
				bench_ratio(&b, cn, "lockfree-stack / objcache", med[V_LOCKFREE],
					    med[V_OBJCACHE]);
			}
		}
	}
	if (cl_objcache_stats(cache, &st) == 0 && !b.json_only)
		printf("# objcache: %zu objects carved, %zu refills, %zu spills, %zu direct\n",
		       st.nr_objects, st.nr_refills, st.nr_spills, st.nr_direct);
	if (cl_objcache_destroy(cache) != 0) {
		fprintf(stderr, "objcache bench: destroy refused: objects lost\n");
		return 1;
	}
	free(objs);
	return bench_finish(&b);
}
