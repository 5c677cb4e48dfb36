/* SPDX-License-Identifier: MIT */
/*
 * bench/librseq_cmp.h - cachelocal beside librseq, per operation, in one run.
 *
 * Included by bench/counter.c (operations) and bench/ids.c (id getters).
 * librseq is the field's reference per-CPU operations library; the
 * goal is per-op parity: cachelocal within 1.1x of librseq.
 *
 * Built with BENCH_HAVE_LIBRSEQ (the Makefile defines it and links -lrseq
 * when scripts/librseq.sh finds librseq: LIBRSEQ_PREFIX, pkg-config, or the
 * vendored snapshot built into build/librseq). Without it, or when rseq is
 * not usable in this process (seccomp, old kernel), every comparison prints
 * one "SKIPPED" line (and a JSON object with "skipped") instead of numbers.
 *
 * Operations (lr_counter_compare), index kind cpu_id and mm_cid, 1 and 2
 * threads pinned to distinct allowed CPUs, per thread ns per operation:
 *   cl_counter_add      cl_counter_add(&c, 1) on a counter of that index kind
 *   cl raw add          index = cl_rseq_current_index(); cl_rseq_add()
 *   librseq add         index = rseq_cpu_start() / rseq_current_mm_cid();
 *                       rseq_load_add_store__ptr()  (as librseq's param_test)
 *   cl list pop+push    cl_rseq_pop() then cl_rseq_trypush() of that node
 *   librseq list pop+push
 *                       our own per-CPU list calling librseq's operations as its
 *                       param_test does: pop = rseq_load_cbeq_store_add_load_store__ptr,
 *                       push = rseq_load_cbne_store__ptr
 * The raw adds use one array of 128-byte slots (one per index), the lists one
 * array of 128-byte heads, shared by both libraries and reset before each run;
 * cl_counter's own slots are 128 bytes too. Variants alternate inside each
 * repetition (interleaved), so load from other processes hits all of them.
 * Each run checks its result: the slots sum to threads x ops, the lists hold
 * every node. Ratios: cachelocal / librseq (lower is better; goal <= 1.1).
 * Times are each thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so time spent
 * preempted by other processes on a shared machine is not counted.
 * The Makefile builds both benches with every loop head on a 64-byte
 * boundary (-falign-loops=64): an operation this short runs faster or
 * slower by where its loop lands (gcc 12, the same source: cachelocal /
 * librseq from 0.72x to 1.30x between 1-byte, default and 64-byte loop
 * alignment), and both sides of a ratio must get the same.
 *
 * Getters (lr_ids_compare), one thread pinned, ns per call:
 *   cl_cpu_id() vs rseq_current_cpu_raw(), cl_mm_cid() vs rseq_current_mm_cid().
 *
 * Every thread calls lr_thread_init() before any cachelocal call: librseq's
 * rseq_register_current_thread() when the thread's librseq area is not live
 * yet (with glibc's registration both use glibc's area and that call only
 * returns 0). The cachelocal calls are in lr_cl_*() only, so an API rename
 * touches those few lines.
 */
#ifndef CACHELOCAL_BENCH_LIBRSEQ_CMP_H
#define CACHELOCAL_BENCH_LIBRSEQ_CMP_H

#include "bench.h"

#include <stddef.h>
#include <stdint.h>

#ifdef BENCH_HAVE_LIBRSEQ
#include <cachelocal/counter.h>
#include <cachelocal/percpu_ops.h>
#include <cachelocal/rseq.h>
#include <cachelocal/topology.h>
#include <rseq/rseq.h>
#endif

#define LR_GOAL 1.1

/*
 * This thread's CPU time: the timed loops below run on one pinned thread
 * each, so CPU time is their cost without the time the thread spent
 * preempted by other processes (the development machine is shared).
 */
static inline unsigned long long lr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* One "SKIPPED" line (table) and one JSON object, never a number. */
static inline void lr_skip(struct bench *b, const char *what, const char *why)
{
	if (!b->json_only)
		printf("# librseq comparison (%s): SKIPPED: %s\n", what, why);
	if (b->json) {
		fprintf(b->json,
			"{\"bench\":\"%s\",\"case\":\"librseq comparison: %s\",\"skipped\":\"%s\","
			"\"id_mode\":\"%s\",\"kernel\":\"%s\"}\n",
			b->name, what, why, b->id_mode, b->kernel);
		fflush(b->json);
	}
	fflush(stdout);
}

/*
 * A cachelocal / librseq ratio, labelled with the goal and whether this run
 * met it: the table line ends in "met" or "MISSED", the JSON object (same
 * keys as bench_ratio()'s) gains "goal" and "met".
 */
static inline void lr_ratio(struct bench *b, const char *case_name, const char *what, double cl,
			    double lr)
{
	char label[96];
	double r = lr != 0 ? cl / lr : 0;
	int met = lr != 0 && r <= LR_GOAL;

	snprintf(label, sizeof(label), "%s (goal <= %.1fx)", what, LR_GOAL);
	if (!b->json_only)
		printf("  ratio %-24s %-40s %8.2fx  %s\n", case_name, label, r, met ? "met" : "MISSED");
	if (b->json) {
		fprintf(b->json,
			"{\"bench\":\"%s\",\"case\":\"%s\",\"ratio\":\"%s\",\"value\":%.4f,"
			"\"goal\":%.2f,\"met\":%s,\"id_mode\":\"%s\",\"kernel\":\"%s\"}\n",
			b->name, case_name, label, r, LR_GOAL, met ? "true" : "false", b->id_mode,
			b->kernel);
		fflush(b->json);
	}
	fflush(stdout);
}

#ifndef BENCH_HAVE_LIBRSEQ

static inline void lr_counter_compare(struct bench *b)
{
	lr_skip(b, "operations", "built without librseq (scripts/librseq.sh: not found)");
}

static inline void lr_ids_compare(struct bench *b, unsigned long long run_ns)
{
	(void)run_ns;
	lr_skip(b, "id getters", "built without librseq (scripts/librseq.sh: not found)");
}

#else /* BENCH_HAVE_LIBRSEQ */

/* ---- the cachelocal calls (the only ones in this file) ---- */

/*
 * The wrappers and loops below are always inlined, with both compilers:
 * librseq's operations are always_inline, and cachelocal's cl_rseq_<op>()
 * are too. Measured here with clang 14, when they were plain static inline:
 * clang's flatten (unlike gcc's) does not inline what it inlined, so
 * lr_cl_push() stayed an out-of-line call and the list pop+push took 1.6x
 * librseq's time, a cost of the benchmark's wrapper, not of the operation.
 */
#define LR_INLINE static inline __attribute__((always_inline))

LR_INLINE int lr_cl_index(enum cl_rseq_index k)
{
	return cl_rseq_current_index(k);
}

LR_INLINE int lr_cl_add(enum cl_rseq_index k, intptr_t *v, intptr_t n, int i)
{
	return cl_rseq_add(k, v, n, i);
}

LR_INLINE int lr_cl_pop(enum cl_rseq_index k, void **head, void **out, int i)
{
	return cl_rseq_pop(k, head, 0, out, i);
}

LR_INLINE int lr_cl_push(enum cl_rseq_index k, void **head, void *node, int i)
{
	return cl_rseq_trypush(k, head, 0, node, i);
}

/* ---- librseq per thread ---- */

/* Register librseq's view of this thread unless its area is already live. */
static inline int lr_thread_init(void)
{
	if (rseq_current_cpu_raw() >= 0)
		return 0;
	return rseq_register_current_thread();
}

LR_INLINE int lr_index(enum rseq_percpu_mode m)
{
	return m == RSEQ_PERCPU_MM_CID ? (int)rseq_current_mm_cid() : (int)rseq_cpu_start();
}

/* ---- shared data: 128-byte slots and list heads ---- */

#define LR_LINE 128
#define LR_NODES_PER_LIST 8

struct lr_slot {
	_Alignas(LR_LINE) intptr_t v;
};

struct lr_head {
	_Alignas(LR_LINE) void *head;
};

struct lr_node {
	struct lr_node *next; /* offset 0: both libraries' "next" */
};

enum lr_variant { LR_CL_COUNTER, LR_CL_ADD, LR_LR_ADD, LR_CL_LIST, LR_LR_LIST, LR_NR_VARIANTS };

static const char *const lr_variant_name[LR_NR_VARIANTS] = {
	"cl_counter_add", "cl raw add", "librseq add", "cl list pop+push", "librseq list pop+push",
};

struct lr_ctx {
	enum cl_rseq_index k;
	enum rseq_percpu_mode m;
	enum lr_variant v;
	long ops;
	unsigned nr;             /* slots and lists: one per possible index */
	struct lr_slot *slots;
	struct lr_head *lists;
	struct lr_node *nodes;   /* nr * LR_NODES_PER_LIST */
	struct cl_counter counter;
	pthread_barrier_t go;
	double ns[2];            /* per thread: ns per operation */
	int errors;
};

struct lr_arg {
	struct lr_ctx *x;
	int idx;
};

/*
 * The timed loops. Each takes the index kind as an argument and is compiled
 * with a constant (LR_LOOPS below), so neither library pays a run-time switch
 * on the kind, and the data pointers live in registers (as in a user's loop).
 */
/*
 * Each loop tests its array once before it starts, as a caller that
 * allocated the array does. gcc then knows that every slot or list address
 * derived from it is not NULL, and drops the NULL-word test of
 * cl_rseq_<op>() (EINVAL): one compare-and-branch per call, which stays in a
 * loop whose pointer the compiler cannot prove non-NULL. Measured here,
 * with that test left in the loop: the cpu_id raw add took 1.9-2.1x
 * librseq's time and the mm_cid one 1.0x (the same instructions at other
 * offsets: a tight loop of two to three cycles, sensitive to layout).
 * librseq's loops get the same test; its operations have no NULL check.
 */
/*
 * The slot's address in a register of its own. librseq takes the word as an
 * "m" operand, so gcc folds &slots[c].v into an indexed operand
 * (base + index) for the section's add/cmp/store; cachelocal's sections take
 * a pointer in a register and use (%reg). An indexed read-modify-write costs
 * extra uops and, on cores that forward a store to the next load of the same
 * simple address, loses that forwarding (measured here, loaded machine: librseq's add 1.93
 * ns/op with the indexed operand, 0.67 ns/op with the plain pointer). Both libraries get the same plain pointer, so the comparison is
 * of the operations, not of gcc's operand choice.
 */
LR_INLINE intptr_t *lr_plain(intptr_t *p)
{
	__asm__("" : "+r"(p));
	return p;
}

LR_INLINE void lr_loop_cl_add(struct lr_slot *slots, long n, enum cl_rseq_index k)
{
	if (!slots)
		return;
	for (long j = 0; j < n; j++) {
		int c;

		do
			c = lr_cl_index(k);
		while (lr_cl_add(k, &slots[c].v, 1, c) != 0);
	}
}

LR_INLINE void lr_loop_lr_add(struct lr_slot *slots, long n, enum rseq_percpu_mode m)
{
	if (!slots)
		return;
	for (long j = 0; j < n; j++) {
		int c;

		do
			c = lr_index(m);
		while (rseq_load_add_store__ptr(RSEQ_MO_RELAXED, m, lr_plain(&slots[c].v), 1, c) !=
		       0);
	}
}

LR_INLINE void lr_loop_cl_list(struct lr_head *lists, long n, enum cl_rseq_index k)
{
	if (!lists)
		return;
	for (long j = 0; j < n; j++) {
		void *node = NULL;
		int i, r;

		do {
			i = lr_cl_index(k);
			r = lr_cl_pop(k, &lists[i].head, &node, i);
		} while (r < 0);
		if (r != 0)
			continue; /* empty (only if another thread took this list's nodes) */
		do
			i = lr_cl_index(k);
		while (lr_cl_push(k, &lists[i].head, node, i) != 0);
	}
}

LR_INLINE void lr_loop_lr_list(struct lr_head *lists, long n, enum rseq_percpu_mode m)
{
	if (!lists)
		return;
	for (long j = 0; j < n; j++) {
		struct lr_node *node = NULL;
		int i, r;

		do {
			i = lr_index(m);
			r = rseq_load_cbeq_store_add_load_store__ptr(
				RSEQ_MO_RELAXED, m, lr_plain((intptr_t *)(void *)&lists[i].head),
				(intptr_t)NULL, (long)offsetof(struct lr_node, next),
				(intptr_t *)(void *)&node, i);
		} while (r < 0);
		if (r != 0)
			continue;
		for (;;) {
			intptr_t expect;

			i = lr_index(m);
			expect = (intptr_t)__atomic_load_n(&lists[i].head, __ATOMIC_RELAXED);
			node->next = (struct lr_node *)expect;
			if (rseq_load_cbne_store__ptr(RSEQ_MO_RELAXED, m,
						      lr_plain((intptr_t *)(void *)&lists[i].head), expect,
						      (intptr_t)node, i) == 0)
				break;
		}
	}
}

/*
 * One function per (variant, index kind), kind a constant inside it, each
 * compiled on its own with the operations inlined into the loop (flatten):
 * the comparison is of the operations, not of gcc's inlining choices.
 * Measured here: with two call sites in one file gcc keeps
 * cl_rseq_pop()/cl_rseq_trypush() (CL_INLINE) out of line as
 * constprop clones, and the pair then costs 3-6x more than inlined; librseq's
 * operations are always_inline. cl_counter_add is timed as a user gets it
 * (lr_cl_counter is not flattened).
 */
#define LR_LOOP_FN static __attribute__((noinline, flatten)) void
#define LR_LOOPS(kind, K, M)                                                                 \
	LR_LOOP_FN lr_cl_add_##kind(struct lr_ctx *x, long n)     \
	{                                                                                    \
		lr_loop_cl_add(x->slots, n, K);                                              \
	}                                                                                    \
	LR_LOOP_FN lr_lr_add_##kind(struct lr_ctx *x, long n)     \
	{                                                                                    \
		lr_loop_lr_add(x->slots, n, M);                                              \
	}                                                                                    \
	LR_LOOP_FN lr_cl_list_##kind(struct lr_ctx *x, long n)    \
	{                                                                                    \
		lr_loop_cl_list(x->lists, n, K);                                             \
	}                                                                                    \
	LR_LOOP_FN lr_lr_list_##kind(struct lr_ctx *x, long n)    \
	{                                                                                    \
		lr_loop_lr_list(x->lists, n, M);                                             \
	}
LR_LOOPS(cpu, CL_RSEQ_INDEX_CPU_ID, RSEQ_PERCPU_CPU_ID)
LR_LOOPS(cid, CL_RSEQ_INDEX_MM_CID, RSEQ_PERCPU_MM_CID)

/* cl_counter_add: the counter carries its index kind itself. */
static __attribute__((noinline)) void lr_cl_counter(struct lr_ctx *x, long n)
{
	struct cl_counter *c = &x->counter;

	for (long j = 0; j < n; j++)
		cl_counter_add(c, 1);
}

typedef void (*lr_loop_fn)(struct lr_ctx *x, long n);

static const lr_loop_fn lr_loops[2][LR_NR_VARIANTS] = {
	{lr_cl_counter, lr_cl_add_cpu, lr_lr_add_cpu, lr_cl_list_cpu, lr_lr_list_cpu},
	{lr_cl_counter, lr_cl_add_cid, lr_lr_add_cid, lr_cl_list_cid, lr_lr_list_cid},
};

static void *lr_worker(void *p)
{
	struct lr_arg *a = p;
	struct lr_ctx *x = a->x;
	unsigned long long t0, t1;
	long n = x->ops;

	bench_pin(bench_allowed_cpu(a->idx));
	if (lr_thread_init() != 0 || rseq_current_cpu_raw() < 0)
		__atomic_fetch_add(&x->errors, 1, __ATOMIC_RELAXED);
	(void)lr_cl_index(x->k);
	pthread_barrier_wait(&x->go);
	t0 = lr_now_ns();
	lr_loops[x->k == CL_RSEQ_INDEX_MM_CID][x->v](x, n);
	t1 = lr_now_ns();
	x->ns[a->idx] = (double)(t1 - t0) / (double)n;
	return NULL;
}

/* Put LR_NODES_PER_LIST nodes on every list. */
static inline void lr_lists_reset(struct lr_ctx *x)
{
	for (unsigned i = 0; i < x->nr; i++) {
		x->lists[i].head = NULL;
		for (unsigned j = 0; j < LR_NODES_PER_LIST; j++) {
			struct lr_node *nd = &x->nodes[i * LR_NODES_PER_LIST + j];

			nd->next = (struct lr_node *)x->lists[i].head;
			x->lists[i].head = nd;
		}
	}
}

/* The run's result is exact: 0, or -1 with a message. */
static inline int lr_check(struct lr_ctx *x, int threads)
{
	long long want = (long long)threads * x->ops, got = 0;
	unsigned long nodes = 0;

	switch (x->v) {
	case LR_CL_COUNTER:
		got = (long long)cl_counter_read(&x->counter);
		break;
	case LR_CL_ADD:
	case LR_LR_ADD:
		for (unsigned i = 0; i < x->nr; i++)
			got += x->slots[i].v;
		break;
	default:
		for (unsigned i = 0; i < x->nr; i++)
			for (struct lr_node *nd = (struct lr_node *)x->lists[i].head; nd; nd = nd->next)
				nodes++;
		if (nodes == (unsigned long)x->nr * LR_NODES_PER_LIST)
			return 0;
		fprintf(stderr, "librseq cmp: %s: lists hold %lu nodes, expected %lu\n",
			lr_variant_name[x->v], nodes, (unsigned long)x->nr * LR_NODES_PER_LIST);
		return -1;
	}
	if (got == want)
		return 0;
	fprintf(stderr, "librseq cmp: %s with %d threads counted %lld, expected %lld\n",
		lr_variant_name[x->v], threads, got, want);
	return -1;
}

/* One run of variant v: mean over threads of ns per operation. Exits on a wrong result. */
static inline double lr_run(struct lr_ctx *x, enum lr_variant v, int threads)
{
	struct lr_arg args[2];
	pthread_t th[2];

	x->v = v;
	x->errors = 0;
	memset(x->slots, 0, x->nr * sizeof(*x->slots));
	lr_lists_reset(x);
	if (v == LR_CL_COUNTER && cl_counter_init_index(&x->counter, x->k) != 0) {
		perror("cl_counter_init_index");
		exit(1);
	}
	pthread_barrier_init(&x->go, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		args[i].x = x;
		args[i].idx = i;
		if (pthread_create(&th[i], NULL, lr_worker, &args[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&x->go);
	if (x->errors || lr_check(x, threads) != 0) {
		fprintf(stderr, "librseq cmp: %s failed (%d thread errors)\n", lr_variant_name[v],
			x->errors);
		exit(1);
	}
	if (v == LR_CL_COUNTER)
		cl_counter_destroy(&x->counter);
	return threads == 2 ? (x->ns[0] + x->ns[1]) / 2 : x->ns[0];
}

/*
 * lr_counter_compare() - the operations, cachelocal beside librseq (see the
 * top of this file). Prints one row per variant and the ratios.
 */
static inline void lr_counter_compare(struct bench *b)
{
	static const struct {
		enum cl_rseq_index k;
		enum rseq_percpu_mode m;
		const char *name;
	} kinds[2] = {
		{CL_RSEQ_INDEX_CPU_ID, RSEQ_PERCPU_CPU_ID, "cpu_id"},
		{CL_RSEQ_INDEX_MM_CID, RSEQ_PERCPU_MM_CID, "mm_cid"},
	};
	double samples[LR_NR_VARIANTS][BENCH_MAX_RUNS], med[LR_NR_VARIANTS];
	struct lr_ctx x;
	int max_threads = bench_nr_allowed_cpus() >= 2 ? 2 : 1;
	unsigned nr;

	if (lr_thread_init() != 0 || rseq_current_cpu_raw() < 0) {
		lr_skip(b, "operations", "librseq could not register rseq in this thread");
		return;
	}
	nr = cl_nr_possible_cpus();
	if ((unsigned)rseq_get_max_nr_cpus() > nr)
		nr = (unsigned)rseq_get_max_nr_cpus();
	memset(&x, 0, sizeof(x));
	x.nr = nr ? nr : 1;
	x.ops = b->quick ? 1000000 : 10000000;
	x.slots = aligned_alloc(LR_LINE, x.nr * sizeof(*x.slots));
	x.lists = aligned_alloc(LR_LINE, x.nr * sizeof(*x.lists));
	x.nodes = calloc((size_t)x.nr * LR_NODES_PER_LIST, sizeof(*x.nodes));
	if (!x.slots || !x.lists || !x.nodes) {
		perror("librseq cmp: alloc");
		exit(1);
	}
	if (!b->json_only)
		printf("# librseq side by side: rseq owner %s (librseq rseq_size %u), %ld ops per thread per run, "
		       "128-byte slots, variants interleaved, ns/op per thread (lower is better)\n",
		       cl_rseq_owned_by_glibc() ? "glibc" : "librseq", rseq_size, x.ops);
	if (max_threads < 2)
		lr_skip(b, "operations, 2 threads", "fewer than 2 allowed CPUs");
	for (int kk = 0; kk < 2; kk++) {
		x.k = kinds[kk].k;
		x.m = kinds[kk].m;
		if (cl_rseq_ops_mode_index(x.k) != CL_RSEQ_OPS_RSEQ ||
		    (x.m == RSEQ_PERCPU_MM_CID && !rseq_mm_cid_available())) {
			char what[64];

			snprintf(what, sizeof(what), "operations, %s index", kinds[kk].name);
			lr_skip(b, what,
				x.m == RSEQ_PERCPU_MM_CID && !rseq_mm_cid_available()
					? "librseq: no mm_cid (feature size < 28)"
					: cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(x.k)));
			continue;
		}
		for (int threads = 1; threads <= max_threads; threads++) {
			char case_name[48];

			snprintf(case_name, sizeof(case_name), "op %s %d thread%s", kinds[kk].name,
				 threads, threads > 1 ? "s" : "");
			bench_progress(b, "%s: %d runs x %d variants (librseq side by side)", case_name,
				       b->runs, LR_NR_VARIANTS);
			for (int v = 0; v < LR_NR_VARIANTS; v++)
				(void)lr_run(&x, (enum lr_variant)v, threads); /* warm-up */
			for (int r = 0; r < b->runs; r++)
				for (int v = 0; v < LR_NR_VARIANTS; v++)
					samples[v][r] = lr_run(&x, (enum lr_variant)v, threads);
			for (int v = 0; v < LR_NR_VARIANTS; v++)
				med[v] = bench_report(b, case_name, lr_variant_name[v], "pinned", threads,
						      samples[v], b->runs, "ns/op");
			lr_ratio(b, case_name, "cl_counter_add / librseq add", med[LR_CL_COUNTER],
				 med[LR_LR_ADD]);
			lr_ratio(b, case_name, "cl raw add / librseq add", med[LR_CL_ADD],
				 med[LR_LR_ADD]);
			lr_ratio(b, case_name, "cl list pop+push / librseq list", med[LR_CL_LIST],
				 med[LR_LR_LIST]);
		}
	}
	free(x.slots);
	free(x.lists);
	free(x.nodes);
}

/* ---- getters ---- */

enum lr_getter { LR_G_CL_CPU, LR_G_LR_CPU, LR_G_CL_CID, LR_G_LR_CID, LR_NR_GETTERS };

static const char *const lr_getter_name[LR_NR_GETTERS] = {
	"cl_cpu_id()", "rseq_current_cpu_raw()", "cl_mm_cid()", "rseq_current_mm_cid()",
};

#define LR_BATCH 100000 /* calls per clock read (a syscall for the thread CPU clock) */
#define LR_GETTER_LOOP(expr)                                          \
	do {                                                          \
		t0 = lr_now_ns();                                     \
		do {                                                  \
			for (int i = 0; i < LR_BATCH; i++)            \
				BENCH_KEEP(expr);                     \
			calls += LR_BATCH;                            \
			t1 = lr_now_ns();                             \
		} while (t1 - t0 < run_ns);                           \
	} while (0)

/* ns per call of getter g over at least run_ns; each getter its own loop. */
static inline double lr_time_getter(enum lr_getter g, unsigned long long run_ns)
{
	unsigned long long t0 = 0, t1 = 0, calls = 0;

	switch (g) {
	case LR_G_CL_CPU:
		LR_GETTER_LOOP(cl_cpu_id());
		break;
	case LR_G_LR_CPU:
		LR_GETTER_LOOP(rseq_current_cpu_raw());
		break;
	case LR_G_CL_CID:
		LR_GETTER_LOOP(cl_mm_cid());
		break;
	case LR_G_LR_CID:
		LR_GETTER_LOOP(rseq_current_mm_cid());
		break;
	default:
		return 0;
	}
	return calls ? (double)(t1 - t0) / (double)calls : 0;
}

/*
 * lr_ids_compare() - the id getters, cachelocal beside librseq, on the
 * calling thread (pinned by the caller), interleaved per repetition.
 */
static inline void lr_ids_compare(struct bench *b, unsigned long long run_ns)
{
	double samples[LR_NR_GETTERS][BENCH_MAX_RUNS], med[LR_NR_GETTERS];
	int ng = LR_NR_GETTERS;

	if (lr_thread_init() != 0 || rseq_current_cpu_raw() < 0) {
		lr_skip(b, "id getters", "librseq could not register rseq in this thread");
		return;
	}
	if (cl_cpu_id() != rseq_current_cpu_raw()) {
		/* Both read one area, so on one pinned CPU they agree. */
		fprintf(stderr, "librseq cmp: cl_cpu_id() %d != rseq_current_cpu_raw() %d\n",
			cl_cpu_id(), (int)rseq_current_cpu_raw());
		exit(1);
	}
	if (!rseq_mm_cid_available() || cl_id_mode() != CL_ID_MM_CID) {
		lr_skip(b, "cl_mm_cid() vs rseq_current_mm_cid()", "no mm_cid in this process");
		ng = LR_G_CL_CID;
	}
	if (!b->json_only)
		printf("# librseq side by side: id getters, rseq owner %s, ns/call (lower is better)\n",
		       cl_rseq_owned_by_glibc() ? "glibc" : "librseq");
	bench_progress(b, "id getters: %d runs x %d getters (librseq side by side)", b->runs, ng);
	for (int g = 0; g < ng; g++)
		(void)lr_time_getter((enum lr_getter)g, run_ns); /* warm-up */
	for (int r = 0; r < b->runs; r++)
		for (int g = 0; g < ng; g++)
			samples[g][r] = lr_time_getter((enum lr_getter)g, run_ns);
	for (int g = 0; g < ng; g++)
		med[g] = bench_report(b, "id getter vs librseq", lr_getter_name[g], "pinned", 1,
				      samples[g], b->runs, "ns/call");
	lr_ratio(b, "id getter vs librseq", "cl_cpu_id() / rseq_current_cpu_raw()",
		 med[LR_G_CL_CPU], med[LR_G_LR_CPU]);
	if (ng == LR_NR_GETTERS)
		lr_ratio(b, "id getter vs librseq", "cl_mm_cid() / rseq_current_mm_cid()",
			 med[LR_G_CL_CID], med[LR_G_LR_CID]);
}

#endif /* BENCH_HAVE_LIBRSEQ */

#endif /* CACHELOCAL_BENCH_LIBRSEQ_CMP_H */
