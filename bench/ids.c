/* SPDX-License-Identifier: MIT */
/*
 * bench/ids.c - what an id costs (technique T3).
 *
 * Part 1, per call, one thread pinned to the first allowed CPU:
 *   cl_cpu_id()        rseq cpu_id (one TLS load) when live;
 *   cl_mm_cid()        rseq mm_cid when live;
 *   sched_getcpu()     glibc (vDSO getcpu, or rseq cpu_id on glibc >= 2.35
 *                      when it registered rseq);
 *   getcpu syscall     syscall(SYS_getcpu): a real kernel entry;
 *   TLS thread id      one load of a _Thread_local int: the floor.
 * Ratios: sched_getcpu() time / each id's time ("x faster than sched_getcpu").
 *
 * Part 2, cl_cid_acquire() + cl_cid_release() pairs for each policy:
 *   1 thread  (pinned, one user: bound 1);
 *   2 threads (pinned to two CPUs, both users: bound 2), running together.
 * plus two references without any policy:
 *   private-word floor  one CAS + one release store on a word of the
 *                       thread's own (what any acquire/release must pay:
 *                       one atomic RMW);
 *   shared-bitmap       fetch_or/fetch_and of the lowest clear bit of one
 *                       word shared by all threads: what every pair pays
 *                       when all cids share one line (the design cid.h
 *                       avoids with one word per cid).
 *
 * Part 1b, the getters beside librseq's (bench/librseq_cmp.h), interleaved:
 *   cl_cpu_id() vs rseq_current_cpu_raw(), cl_mm_cid() vs rseq_current_mm_cid();
 *   ratios cachelocal / librseq (goal <= 1.1x). SKIPPED without librseq.
 *
 * Every case: median, min and max of --runs runs (>= 5). Each run times a
 * loop of at least 40 ms (10 ms with --quick). Progress on stderr.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cachelocal/cid.h>
#include <cachelocal/rseq.h>

#include "bench.h"
#include "librseq_cmp.h"

#define BATCH 1000

static unsigned long long run_ns;

static _Thread_local int tls_id = 1;

/* ---- part 1: per-call cost ---- */

enum id_src { SRC_CPU_ID, SRC_MM_CID, SRC_SCHED_GETCPU, SRC_SYSCALL, SRC_TLS };

static const char *const src_name[] = {"cl_cpu_id()", "cl_mm_cid()", "sched_getcpu()",
				       "getcpu syscall", "TLS thread id"};

static inline int read_id(enum id_src s)
{
	unsigned cpu = 0;

	switch (s) {
	case SRC_CPU_ID:
		return cl_cpu_id();
	case SRC_MM_CID:
		return cl_mm_cid();
	case SRC_SCHED_GETCPU:
		return sched_getcpu();
	case SRC_SYSCALL:
		syscall(SYS_getcpu, &cpu, NULL, NULL);
		return (int)cpu;
	case SRC_TLS:
		return __atomic_load_n(&tls_id, __ATOMIC_RELAXED);
	}
	return 0;
}

/* ns per call of source s, over at least run_ns. The switch is resolved at
 * compile time: each case is its own loop. */
#define ID_LOOP(s)                                                        \
	do {                                                              \
		t0 = bench_now_ns();                                      \
		do {                                                      \
			for (int i = 0; i < BATCH; i++)                   \
				BENCH_KEEP(read_id(s));                   \
			calls += BATCH;                                   \
			t1 = bench_now_ns();                              \
		} while (t1 - t0 < run_ns);                               \
	} while (0)

static double time_id(enum id_src s)
{
	unsigned long long t0, t1, calls = 0;

	switch (s) {
	case SRC_CPU_ID:
		ID_LOOP(SRC_CPU_ID);
		break;
	case SRC_MM_CID:
		ID_LOOP(SRC_MM_CID);
		break;
	case SRC_SCHED_GETCPU:
		ID_LOOP(SRC_SCHED_GETCPU);
		break;
	case SRC_SYSCALL:
		ID_LOOP(SRC_SYSCALL);
		break;
	case SRC_TLS:
		ID_LOOP(SRC_TLS);
		break;
	}
	return (double)(t1 - t0) / (double)calls;
}

/* ---- part 2: acquire + release ---- */

enum { REF_BITMAP = -1, REF_PRIVATE = -2 };

struct pair_ctx {
	struct cl_cid_domain *d; /* NULL: a reference (ref says which) */
	int ref;
	unsigned long bitmap;    /* REF_BITMAP's one shared word */
	struct {
		unsigned long w;
	} CL_FALSE_SHARING_ALIGNED priv[2]; /* REF_PRIVATE's words */
	pthread_barrier_t go;
	int nthreads;
	double ns[2];
	int errors;
};

struct pair_arg {
	struct pair_ctx *x;
	int idx;
};

static inline int bitmap_acquire(unsigned long *w)
{
	for (;;) {
		unsigned long v = __atomic_load_n(w, __ATOMIC_RELAXED);
		int c;

		if (~v == 0)
			continue;
		c = __builtin_ctzl(~v);
		if (!(__atomic_fetch_or(w, 1ul << c, __ATOMIC_ACQUIRE) & (1ul << c)))
			return c;
	}
}

static void *pair_thread(void *p)
{
	struct pair_arg *a = p;
	struct pair_ctx *x = a->x;
	unsigned long long t0, t1, ops = 0;
	int bad = 0;

	bench_pin(bench_allowed_cpu(a->idx));
	(void)cl_cpu_id(); /* registers rseq in this thread if we must */
	if (x->d && cl_cid_domain_join(x->d) != 0)
		bad++;
	pthread_barrier_wait(&x->go);
	t0 = bench_now_ns();
	do {
		if (x->d) {
			for (int i = 0; i < BATCH; i++) {
				int c = cl_cid_acquire(x->d);

				bad += c < 0;
				cl_cid_release(x->d, c);
			}
		} else if (x->ref == REF_BITMAP) {
			for (int i = 0; i < BATCH; i++) {
				int c = bitmap_acquire(&x->bitmap);

				__atomic_fetch_and(&x->bitmap, ~(1ul << c), __ATOMIC_RELEASE);
			}
		} else {
			unsigned long *w = &x->priv[a->idx].w;

			for (int i = 0; i < BATCH; i++) {
				unsigned long e = 0;

				bad += !__atomic_compare_exchange_n(w, &e, 1ul, 0, __ATOMIC_SEQ_CST,
								    __ATOMIC_RELAXED);
				__atomic_store_n(w, 0ul, __ATOMIC_RELEASE);
			}
		}
		ops += BATCH;
		t1 = bench_now_ns();
	} while (t1 - t0 < run_ns);
	x->ns[a->idx] = (double)(t1 - t0) / (double)ops;
	pthread_barrier_wait(&x->go);
	if (x->d && cl_cid_domain_leave(x->d) != 0)
		bad++;
	__atomic_fetch_add(&x->errors, bad, __ATOMIC_RELAXED);
	return NULL;
}

/* Mean ns per acquire+release pair over the threads; -1 on error. */
static double time_pairs(int policy, int nthreads)
{
	struct pair_ctx x;
	struct pair_arg args[2];
	pthread_t th[2];
	double sum = 0;

	memset(&x, 0, sizeof(x));
	x.nthreads = nthreads;
	x.ref = policy;
	if (policy >= 0) {
		x.d = cl_cid_domain_create((enum cl_cid_policy)policy, NULL);
		if (!x.d)
			return -1;
	}
	pthread_barrier_init(&x.go, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		args[i].x = &x;
		args[i].idx = i;
		pthread_create(&th[i], NULL, pair_thread, &args[i]);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&x.go);
	cl_cid_domain_destroy(x.d);
	if (x.errors)
		return -1;
	for (int i = 0; i < nthreads; i++)
		sum += x.ns[i];
	return sum / nthreads;
}

int main(int argc, char **argv)
{
	struct bench b;
	double samples[BENCH_MAX_RUNS], med[5], pair1[3], pair2[3], ref2 = 0, floor1, floor2 = 0;
	int ncpus = bench_nr_allowed_cpus();
	char variant[64];

	bench_only_shared_args("ids", argc, argv);
	bench_init(&b, "ids", argc, argv);
	run_ns = b.quick ? 10000000ull : 40000000ull;

	/* Part 1 */
	bench_pin(bench_allowed_cpu(0));
	for (int s = 0; s <= SRC_TLS; s++) {
		bench_progress(&b, "per call: %s", src_name[s]);
		time_id((enum id_src)s); /* warm-up */
		for (int r = 0; r < b.runs; r++)
			samples[r] = time_id((enum id_src)s);
		med[s] = bench_report(&b, "id per call", src_name[s], "pinned", 1, samples, b.runs,
				      "ns/call");
	}
	bench_ratio(&b, "id per call", "sched_getcpu() / cl_cpu_id()", med[SRC_SCHED_GETCPU],
		    med[SRC_CPU_ID]);
	bench_ratio(&b, "id per call", "sched_getcpu() / cl_mm_cid()", med[SRC_SCHED_GETCPU],
		    med[SRC_MM_CID]);
	bench_ratio(&b, "id per call", "getcpu syscall / cl_cpu_id()", med[SRC_SYSCALL],
		    med[SRC_CPU_ID]);
	bench_ratio(&b, "id per call", "cl_cpu_id() / TLS thread id", med[SRC_CPU_ID],
		    med[SRC_TLS]);
	lr_ids_compare(&b, run_ns);

	/* Part 2 */
	for (int p = CL_CID_NAIVE; p <= CL_CID_LLC; p++) {
		const char *pn = cl_cid_policy_name((enum cl_cid_policy)p);

		bench_progress(&b, "acquire+release: %s, 1 thread", pn);
		time_pairs(p, 1);
		for (int r = 0; r < b.runs; r++)
			samples[r] = time_pairs(p, 1);
		snprintf(variant, sizeof(variant), "%s", pn);
		pair1[p] = bench_report(&b, "cid acquire+release", variant, "pinned", 1, samples,
					b.runs, "ns/pair");
	}
	bench_progress(&b, "acquire+release: private-word floor, 1 thread");
	for (int r = 0; r < b.runs; r++)
		samples[r] = time_pairs(REF_PRIVATE, 1);
	floor1 = bench_report(&b, "cid acquire+release", "private-word floor", "pinned", 1, samples,
			      b.runs, "ns/pair");
	if (ncpus >= 2) {
		for (int p = CL_CID_NAIVE; p <= CL_CID_LLC; p++) {
			const char *pn = cl_cid_policy_name((enum cl_cid_policy)p);

			bench_progress(&b, "acquire+release: %s, 2 threads", pn);
			for (int r = 0; r < b.runs; r++)
				samples[r] = time_pairs(p, 2);
			pair2[p] = bench_report(&b, "cid acquire+release", pn, "pinned", 2, samples,
						b.runs, "ns/pair");
		}
		bench_progress(&b, "acquire+release: shared bitmap reference, 2 threads");
		for (int r = 0; r < b.runs; r++)
			samples[r] = time_pairs(REF_BITMAP, 2);
		ref2 = bench_report(&b, "cid acquire+release", "shared-bitmap (ref)", "pinned", 2,
				    samples, b.runs, "ns/pair");
		bench_progress(&b, "acquire+release: private-word floor, 2 threads");
		for (int r = 0; r < b.runs; r++)
			samples[r] = time_pairs(REF_PRIVATE, 2);
		floor2 = bench_report(&b, "cid acquire+release", "private-word floor", "pinned", 2,
				      samples, b.runs, "ns/pair");
	} else {
		bench_progress(&b, "1 allowed CPU: 2-thread cases skipped");
	}
	for (int p = CL_CID_NAIVE; p <= CL_CID_LLC; p++) {
		snprintf(variant, sizeof(variant), "%s 1 thread / sched_getcpu()",
			 cl_cid_policy_name((enum cl_cid_policy)p));
		bench_ratio(&b, "cid acquire+release", variant, pair1[p], med[SRC_SCHED_GETCPU]);
	}
	bench_ratio(&b, "cid acquire+release", "1 thread: recent / private-word floor",
		    pair1[CL_CID_RECENT], floor1);
	if (ncpus >= 2) {
		for (int p = CL_CID_NAIVE; p <= CL_CID_LLC; p++) {
			snprintf(variant, sizeof(variant), "%s 2 threads / sched_getcpu()",
				 cl_cid_policy_name((enum cl_cid_policy)p));
			bench_ratio(&b, "cid acquire+release", variant, pair2[p],
				    med[SRC_SCHED_GETCPU]);
		}
		bench_ratio(&b, "cid acquire+release", "2 threads: recent / private-word floor",
			    pair2[CL_CID_RECENT], floor2);
		bench_ratio(&b, "cid acquire+release", "2 threads: naive / recent", pair2[CL_CID_NAIVE],
			    pair2[CL_CID_RECENT]);
		bench_ratio(&b, "cid acquire+release", "2 threads: shared-bitmap / recent", ref2,
			    pair2[CL_CID_RECENT]);
	}
	return bench_finish(&b);
}
