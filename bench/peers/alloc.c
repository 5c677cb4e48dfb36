/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/alloc - cl_objcache beside a general-purpose allocator's
 * malloc/free of the same size. Built once per allocator, each binary linked
 * with that allocator alone (it replaces malloc for the whole process):
 *   peer_alloc_glibc      glibc malloc (its tcache)
 *   peer_alloc_jemalloc   -ljemalloc (PEER_ALLOC_JEMALLOC)
 *   peer_alloc_tcmalloc   -ltcmalloc_minimal, gperftools (PEER_ALLOC_TCMALLOC)
 *   peer_alloc_mimalloc   -lmimalloc (PEER_ALLOC_MIMALLOC); it checks at start
 *                         that malloc's memory is mimalloc's
 * objcache takes its slabs from that malloc too, off the measured path.
 *
 * Workloads, object sizes 64 B and 1 KiB (the object is written once, so
 * neither side can skip touching it):
 *   pair        alloc then free the same object; 1 thread, and 2 threads
 *               each on its own CPU (the same cache / the same malloc)
 *   burst 16    16 allocs, then the 16 frees; 1 and 2 threads
 *   cross-CPU   (a quarter as many objects) a producer on one CPU allocates and passes each object
 *               through a single-producer ring to a consumer on another
 *               CPU, which frees it (every free is remote)
 * Unit: ns per alloc+free pair per thread (the slowest thread's wall time
 * over its pairs); cross-CPU: ns per object, producer start to consumer end.
 * Every run measures ours and theirs back to back, the order alternating
 * run by run; median of --runs (>= 5). gain = theirs/ours (> 1: objcache
 * ahead). Goals: >= 1.5x jemalloc, tcmalloc and mimalloc on every pair and
 * burst workload, >= 2x on cross-CPU frees.
 */
#include "peers.h"

#include <cachelocal/objcache.h>

#if defined(PEER_ALLOC_JEMALLOC)
#include <jemalloc/jemalloc.h>
#define PEER_STR_(x) #x
#define PEER_STR(x) PEER_STR_(x)
#define PEER_ALLOCATOR                                                                             \
	"jemalloc " PEER_STR(JEMALLOC_VERSION_MAJOR) "." PEER_STR(JEMALLOC_VERSION_MINOR) "." PEER_STR( \
		JEMALLOC_VERSION_BUGFIX)
#define PEER_NAME "peer_alloc_jemalloc"
#elif defined(PEER_ALLOC_TCMALLOC)
#include <gperftools/tcmalloc.h>
#define PEER_ALLOCATOR "tcmalloc (" TC_VERSION_STRING ")"
#define PEER_NAME "peer_alloc_tcmalloc"
#elif defined(PEER_ALLOC_MIMALLOC)
#include <mimalloc.h>
#define PEER_ALLOCATOR NULL /* mimalloc: its version at run time */
#define PEER_NAME "peer_alloc_mimalloc"
#else
#define PEER_ALLOCATOR NULL /* glibc: its version at run time */
#define PEER_NAME "peer_alloc_glibc"
#endif

#define BURST 16
#define RING 256 /* cross-CPU ring slots (a power of two) */

static struct cl_objcache *caches[2]; /* [0]: 64 B, [1]: 1 KiB */
static const size_t sizes[2] = { 64, 1024 };

CL_ALWAYS_INLINE void *side_alloc(int ours, int si)
{
	void *p = ours ? cl_objcache_alloc(caches[si]) : malloc(sizes[si]);

	if (p)
		*(volatile char *)p = 1;
	return p;
}

CL_ALWAYS_INLINE void side_free(int ours, int si, void *p)
{
	if (ours)
		cl_objcache_free(caches[si], p);
	else
		free(p);
}

/* ---- pair and burst ---- */

enum work { W_PAIR, W_BURST, W_CROSS };

struct job {
	int ours, si;
	enum work w;
	long n; /* pairs per thread */
	pthread_barrier_t start;
	unsigned long long ns[2]; /* per thread */
	int failed;               /* atomic */
	void *ring[RING];
	unsigned long head CL_ALIGNED(CL_FALSE_SHARING_SIZE); /* producer writes */
	unsigned long tail CL_ALIGNED(CL_FALSE_SHARING_SIZE); /* consumer writes */
};

CL_ALWAYS_INLINE int pair_loop(int ours, int si, long n)
{
	for (long i = 0; i < n; i++) {
		void *p = side_alloc(ours, si);

		if (!p)
			return -1;
		BENCH_KEEP(p);
		side_free(ours, si, p);
	}
	return 0;
}

CL_ALWAYS_INLINE int burst_loop(int ours, int si, long n)
{
	void *objs[BURST];

	for (long i = 0; i < n; i += BURST) {
		for (int k = 0; k < BURST; k++)
			if (!(objs[k] = side_alloc(ours, si)))
				return -1;
		BENCH_KEEP(objs[BURST - 1]);
		for (int k = 0; k < BURST; k++)
			side_free(ours, si, objs[k]);
	}
	return 0;
}

/* A full or empty ring: the other side may be preempted (the CPUs are
 * shared with whatever else runs), so yield now and then. */
static inline void ring_wait(unsigned *spins)
{
	CL_CPU_RELAX();
	if (++*spins % 64 == 0)
		sched_yield();
}

CL_ALWAYS_INLINE int produce(struct job *j, int ours)
{
	unsigned spins = 0;

	for (long i = 0; i < j->n; i++) {
		void *p = side_alloc(ours, j->si);

		if (!p)
			return -1;
		while (j->head - __atomic_load_n(&j->tail, __ATOMIC_ACQUIRE) == RING)
			ring_wait(&spins);
		j->ring[j->head % RING] = p;
		__atomic_store_n(&j->head, j->head + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

CL_ALWAYS_INLINE void consume(struct job *j, int ours)
{
	unsigned spins = 0;

	for (long i = 0; i < j->n; i++) {
		void *p;

		while (__atomic_load_n(&j->head, __ATOMIC_ACQUIRE) == j->tail)
			ring_wait(&spins);
		p = j->ring[j->tail % RING];
		__atomic_store_n(&j->tail, j->tail + 1, __ATOMIC_RELEASE);
		side_free(ours, j->si, p);
	}
}

/* Two instantiations: the allocator calls inline, no branch in the loops. */
static int run_ours(struct job *j, int id)
{
	switch (j->w) {
	case W_PAIR: return pair_loop(1, j->si, j->n);
	case W_BURST: return burst_loop(1, j->si, j->n);
	default:
		if (id == 0)
			return produce(j, 1);
		consume(j, 1);
		return 0;
	}
}

static int run_theirs(struct job *j, int id)
{
	switch (j->w) {
	case W_PAIR: return pair_loop(0, j->si, j->n);
	case W_BURST: return burst_loop(0, j->si, j->n);
	default:
		if (id == 0)
			return produce(j, 0);
		consume(j, 0);
		return 0;
	}
}

static void *job_thread(void *arg, int id)
{
	struct job *j = (struct job *)arg;
	unsigned long long t0;
	int rc;

	/* warm-up pass in the same thread: malloc's per-thread caches (and
	 * objcache's per-CPU ones) filled before the timed pass */
	pthread_barrier_wait(&j->start);
	rc = j->ours ? run_ours(j, id) : run_theirs(j, id);
	pthread_barrier_wait(&j->start);
	if (id == 0)
		j->head = j->tail = 0; /* the ring is empty: both passes are done */
	pthread_barrier_wait(&j->start);
	t0 = bench_now_ns();
	rc |= j->ours ? run_ours(j, id) : run_theirs(j, id);
	j->ns[id] = bench_now_ns() - t0;
	if (rc)
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The peer's name and version into @buf; -1 if malloc is not that peer's. */
static int peer_allocator(char *buf, size_t len)
{
#if defined(PEER_ALLOC_MIMALLOC)
	void *p = malloc(sizes[0]);
	int v = mi_version(), ours = p && mi_is_in_heap_region(p);

	free(p);
	if (!ours) {
		fprintf(stderr, "%s: malloc is not mimalloc's (not linked first?)\n", PEER_NAME);
		return -1;
	}
	snprintf(buf, len, "mimalloc %d.%d.%d", v / 100, v % 100 / 10, v % 10);
#else
	if (PEER_ALLOCATOR)
		snprintf(buf, len, "%s", PEER_ALLOCATOR ? PEER_ALLOCATOR : "");
	else
		snprintf(buf, len, "glibc malloc %s", gnu_get_libc_version());
#endif
	return 0;
}

/* One run: ns per pair (per object for cross-CPU), or -1 on failure. */
static double run_job(int ours, int si, enum work w, int threads, long n)
{
	static struct job j;
	struct peer_thread th[2];
	unsigned long long worst;

	memset(&j, 0, sizeof(j));
	j.ours = ours;
	j.si = si;
	j.w = w;
	j.n = n;
	pthread_barrier_init(&j.start, NULL, (unsigned)threads);
	if (peer_run_threads(threads, job_thread, &j, th) != 0 || j.failed)
		return -1;
	pthread_barrier_destroy(&j.start);
	worst = j.ns[0] > j.ns[1] ? j.ns[0] : j.ns[1];
	return (double)worst / (double)n;
}

int main(int argc, char **argv)
{
	static struct peer_side ours[2][5], theirs[2][5];
	static const char *const wname[5] = { "pair %s, 1 thread", "pair %s, 2 threads",
					      "burst 16 %s, 1 thread", "burst 16 %s, 2 threads",
					      "cross-CPU free %s" };
	static const enum work wk[5] = { W_PAIR, W_PAIR, W_BURST, W_BURST, W_CROSS };
	static const int wthreads[5] = { 1, 2, 1, 2, 2 };
	char peer[96], workload[64];
	struct bench b;
	long n;

	bench_only_shared_args(PEER_NAME, argc, argv);
	bench_init(&b, PEER_NAME, argc, argv);
	n = b.smoke ? 4096 : b.quick ? 200000 : 2000000;
	if (peer_allocator(peer, sizeof(peer)) != 0)
		return 1;
	for (int si = 0; si < 2; si++) {
		struct cl_objcache_attr a = { sizes[si], 0, 0, 0 };

		caches[si] = cl_objcache_create(&a);
		if (!caches[si]) {
			printf("skipped: cl_objcache_create: %s\n", strerror(errno));
			return 77;
		}
	}
	if (bench_nr_allowed_cpus() < 2 && !b.json_only)
		printf("# 1 allowed CPU: the 2-thread and cross-CPU cases share it\n");
	if (!b.json_only)
		printf("# %ld pairs per thread per run; peer %s\n", n, peer);
	for (int r = 0; r < b.runs; r++)
		for (int si = 0; si < 2; si++)
			for (int w = 0; w < 5; w++) {
				int first = (r + w) % 2; /* alternate who goes first */

				for (int k = 0; k < 2; k++) {
					int o = k == 0 ? first : !first;
					/* cross-CPU: a quarter of the objects (each costs more) */
					double v = run_job(o, si, wk[w], wthreads[w], wk[w] == W_CROSS ? n / 4 : n);

					if (v < 0) {
						fprintf(stderr, "%s: %s ran out of memory\n", PEER_NAME,
							o ? "objcache" : peer);
						return 1;
					}
					(o ? ours : theirs)[si][w].v[r] = v;
				}
			}
	peer_header(&b);
	for (int si = 0; si < 2; si++)
		for (int w = 0; w < 5; w++) {
			snprintf(workload, sizeof(workload), wname[w], si ? "1 KiB" : "64 B");
			peer_emit(&b, "objcache", "cl_objcache", peer, workload, wthreads[w], &ours[si][w],
				  &theirs[si][w], b.runs, w == 4 ? "ns/object" : "ns/op", 0);
		}
	for (int si = 0; si < 2; si++)
		cl_objcache_destroy(caches[si]);
	return bench_finish(&b);
}
