/* SPDX-License-Identifier: MIT */
/*
 * bench/percpu_ops - what one operation of the per-CPU path costs.
 *
 * Cases, each in both index kinds (cpu_id, mm_cid), 1 thread and 2 threads
 * (each pinned to its own allowed CPU), one word per thread's CPU in a
 * percpu.h pool of the default stride:
 *   add-passed   the copy's address computed in C from the index the
 *                section then compares
 *   add-here     the index read and the address computed inside the critical
 *                section (base + index * stride, no compare): what
 *                cl_percpu_add() does (without critical sections both are
 *                the fallback's atomic add)
 *   raw-add      cl_rseq_add() on a known copy with cl_rseq_current_index()
 *                (the one-attempt operation and its caller's retry loop)
 *   list-pair    cl_percpu_list_pop() + cl_percpu_list_push() of one node
 *   buffer-pair  cl_percpu_buf_push() + cl_percpu_buf_pop()
 * Variants alternate within each run; reported: ns per operation (pair for
 * the pairs), median of --runs (>= 5) with min-max, and the ratio
 * add-here / add-passed. Without critical sections (no rseq, TSan,
 * CL_NO_RSEQ_ASM) the asm-only case add-here is reported skipped.
 */
#include "bench.h"

#include <cachelocal/percpu.h>
#include <cachelocal/percpu_ops.h>

enum { C_PASSED, C_HERE, C_RAW, C_LIST, C_BUF, NR_CASES };
static const char *const case_name[NR_CASES] = { "add-passed", "add-here", "raw-add",
						  "list-pair", "buffer-pair" };

struct pc_buf {
	intptr_t count;
	void *items[8];
};

struct lnode {
	void *next;
};

static struct cl_percpu_pool *pool;
static intptr_t *word;
static void **head;
static struct pc_buf *buf;
static long nr_ops;
static pthread_barrier_t go;

#define STRIDE ((size_t)CL_PERCPU_STRIDE)

#ifdef CL_HAVE_RSEQ_ASM
/* cl_percpu_add(): the add-here section. */
static inline int add_here_path(enum cl_rseq_index kind, intptr_t *p, intptr_t count)
{
	return cl_percpu_add(kind, p, STRIDE, count);
}
#endif

/* cl_percpu_add() with the add-passed loop (and the fallback otherwise). */
static inline int add_passed_path(enum cl_rseq_index kind, intptr_t *p, intptr_t count)
{
#ifdef CL_HAVE_RSEQ_ASM
	struct cl_rseq_abi *abi;

	if (CL_LIKELY(cl__rseq_ops_enter(kind, &abi) > 0))
		return cl__percpu_add_passed(kind, abi, p, STRIDE, count);
#endif
	return cl_percpu_add(kind, p, STRIDE, count);
}

struct job {
	int which, cpu;
	enum cl_rseq_index kind;
	double ns;
};

static void *run_case(void *arg)
{
	struct job *j = arg;
	struct lnode node;
	unsigned long long t0, t1;
	void *out;
	long n = nr_ops;

	bench_pin(j->cpu);
	pthread_barrier_wait(&go);
	t0 = bench_now_ns();
	switch (j->which) {
	case C_PASSED:
		for (long i = 0; i < n; i++)
			add_passed_path(j->kind, word, 1);
		break;
	case C_HERE:
#ifdef CL_HAVE_RSEQ_ASM
		for (long i = 0; i < n; i++)
			add_here_path(j->kind, word, 1);
#endif
		break;
	case C_RAW:
		for (long i = 0; i < n; i++) {
			int c;

			do
				c = cl_rseq_current_index(j->kind);
			while (cl_rseq_add(j->kind, cl_percpu_ptr(word, c), 1, c) == CL_RSEQ_ABORT);
		}
		break;
	case C_LIST:
		cl_percpu_list_push(j->kind, head, STRIDE, offsetof(struct lnode, next), &node);
		for (long i = 0; i < n; i++) {
			if (cl_percpu_list_pop(j->kind, head, STRIDE, offsetof(struct lnode, next), &out) >= 0)
				cl_percpu_list_push(j->kind, head, STRIDE, offsetof(struct lnode, next), out);
		}
		break;
	case C_BUF:
		for (long i = 0; i < n; i++) {
			cl_percpu_buf_push(j->kind, &buf->count, STRIDE, buf->items, 8, &node,
					   CL_RSEQ_MO_RELAXED);
			cl_percpu_buf_pop(j->kind, &buf->count, STRIDE, buf->items, &out);
		}
		break;
	}
	t1 = bench_now_ns();
	j->ns = (double)(t1 - t0) / (double)n;
	return NULL;
}

/* One run of one case with nthreads threads: mean ns/op over the threads. */
static double measure(int which, enum cl_rseq_index kind, int nthreads)
{
	struct job jobs[2];
	pthread_t t[2];
	double sum = 0;

	pthread_barrier_init(&go, NULL, (unsigned)nthreads);
	for (int i = 0; i < nthreads; i++) {
		jobs[i] = (struct job){ which, bench_allowed_cpu(i), kind, 0 };
		pthread_create(&t[i], NULL, run_case, &jobs[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		sum += jobs[i].ns;
	}
	pthread_barrier_destroy(&go);
	/* Empty every list (the nodes were on the threads' stacks). */
	for (unsigned c = 0; c < cl_percpu_pool_nr_cpus(pool); c++)
		*cl_percpu_ptr(head, c) = NULL;
	return sum / nthreads;
}

int main(int argc, char **argv)
{
	static const enum cl_rseq_index kinds[2] = { CL_RSEQ_INDEX_CPU_ID, CL_RSEQ_INDEX_MM_CID };
	static const char *const kind_name[2] = { "cpu_id", "mm_cid" };
	struct bench b;
	double s[NR_CASES][BENCH_MAX_RUNS], med[NR_CASES];

	bench_only_shared_args("percpu_ops", argc, argv);
	bench_init(&b, "percpu_ops", argc, argv);
	nr_ops = b.quick ? 2000000 : 20000000;
	pool = cl_percpu_pool_create(NULL);
	word = pool ? cl_percpu_alloc(pool, sizeof(*word), sizeof(*word)) : NULL;
	head = pool ? cl_percpu_alloc(pool, sizeof(*head), sizeof(*head)) : NULL;
	buf = pool ? cl_percpu_alloc(pool, sizeof(*buf), sizeof(void *)) : NULL;
	if (!word || !head || !buf) {
		perror("percpu_ops: pool");
		return 1;
	}
	for (int k = 0; k < 2; k++) {
		int here = cl_rseq_ops_mode_index(kinds[k]) == CL_RSEQ_OPS_RSEQ;

		printf("# %s kind: ops mode %s\n", kind_name[k],
		       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(kinds[k])));
#ifndef CL_HAVE_RSEQ_ASM
		here = 0;
#endif
		for (int nt = 1; nt <= 2 && nt <= bench_nr_allowed_cpus(); nt++) {
			char cname[64];

			bench_progress(&b, "%s, %d thread(s)", kind_name[k], nt);
			for (int r = 0; r < b.runs; r++)
				for (int c = 0; c < NR_CASES; c++)
					s[c][r] = c == C_HERE && !here ? 0 : measure(c, kinds[k], nt);
			for (int c = 0; c < NR_CASES; c++) {
				if (c == C_HERE && !here) {
					printf("%-28s %-22s skipped: no critical sections in this mode\n",
					       case_name[c], kind_name[k]);
					continue;
				}
				snprintf(cname, sizeof(cname), "%s", case_name[c]);
				med[c] = bench_report(&b, cname, kind_name[k], "pinned", nt, s[c], b.runs,
						      c >= C_LIST ? "ns/pair" : "ns/op");
			}
			snprintf(cname, sizeof(cname), "%s %dt", kind_name[k], nt);
			if (here)
				bench_ratio(&b, cname, "add-here / add-passed", med[C_HERE], med[C_PASSED]);
			bench_ratio(&b, cname, "raw-add / add-passed", med[C_RAW], med[C_PASSED]);
		}
	}
	cl_percpu_pool_destroy(pool);
	return bench_finish(&b);
}
