/* SPDX-License-Identifier: MIT */
/*
 * buffer_stress - the buffer and pointer operations of percpu_ops.h keep
 * their invariants under preemption, migration, signals and delays injected
 * inside the critical sections, in both index modes.
 *
 * Three passes per index mode, on objects of a percpu.h pool:
 *   pointer buffers  cl_percpu_buf_pop() pops up to STASH items of the
 *                    current CPU's buffer, marks each one as its own (an
 *                    item popped twice is caught), and
 *                    cl_percpu_buf_push() pushes them back on the
 *                    buffer of the CPU it runs on then; at the end every
 *                    item is in exactly one buffer, once.
 *   copy buffers     elements {id, ~id} pushed with
 *                    cl_percpu_buf_push_copy() and popped by copy with
 *                    cl_rseq_cmpmemcpy_store() (copy out, count - 1): no
 *                    element torn, none lost or duplicated.
 *   deref adds       cl_percpu_deref_add() through each CPU's pointer
 *                    while workers move that pointer among the CPU's own
 *                    blocks with cl_rseq_cmpstore(); the blocks' sum equals
 *                    the adds.
 */
#include "stress.h"

#include <cachelocal/percpu.h>
#include <cachelocal/percpu_ops.h>
#include <cachelocal/topology.h>

#define PER_CPU 8  /* items per buffer at the start */
#define STASH 4
#define NR_BLOCKS 4

struct item {
	long id;
	int owner; /* 0 in a buffer, worker id + 1 while popped (atomic) */
};

struct elem {
	long id, inv; /* inv == ~id, or the copy was torn */
};

struct pbuf {
	intptr_t count;
	void *items[]; /* cap */
};

struct cbuf {
	intptr_t count;
	struct elem e[]; /* cap */
};

struct block {
	_Alignas(CL_FALSE_SHARING_SIZE) intptr_t hits;
};

/* One index's blocks: its pointer moves among them (only that index adds). */
struct blocks {
	struct block b[NR_BLOCKS];
};

static struct {
	enum cl_rseq_index kind;
	struct cl_percpu_pool *pool;
	size_t stride;
	unsigned nr;
	intptr_t cap;
	struct pbuf *pb;
	struct cbuf *cb;
	void **ptr;
	struct blocks *blk;
} T;

/* ---- pointer buffers ---- */

static int push_item(struct item *it)
{
	int r = cl_percpu_buf_push(T.kind, &T.pb->count, T.stride, T.pb->items, T.cap, it,
				   CL_RSEQ_MO_RELEASE);

	return r >= 0 ? 0 : -1;
}

static void *ptr_worker(struct stress_run *run, int id)
{
	struct item *stash[STASH];
	long i;

	for (i = 0;; i++) {
		int got = 0, r = 0;
		void *out = NULL;

		while (got < STASH &&
		       (r = cl_percpu_buf_pop(T.kind, &T.pb->count, T.stride, T.pb->items, &out)) >= 0) {
			struct item *it = out;
			int prev = __atomic_exchange_n(&it->owner, id + 1, __ATOMIC_RELAXED);

			if (prev != 0) {
				stress_fail(run, "item %ld popped by worker %d while owned by %d", it->id, id,
					    prev - 1);
				return (void *)1;
			}
			stash[got++] = it;
		}
		if (got < STASH && r != CL_PERCPU_CMPFAIL) {
			stress_fail(run, "buffer pop returned %d", r);
			return (void *)1;
		}
		if (i == 0)
			stress_allow_signals();
		if (i % 64 == 0)
			sched_yield();
		while (got > 0) {
			struct item *it = stash[--got];

			__atomic_store_n(&it->owner, 0, __ATOMIC_RELAXED);
			if (push_item(it) != 0) {
				stress_fail(run, "buffer push failed (full?)");
				return (void *)1;
			}
		}
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int check_ptr_buffers(long nr_items, const struct item *items)
{
	unsigned char *seen = calloc((size_t)nr_items, 1);
	long found = 0, dup = 0, bad = 0;

	for (unsigned c = 0; seen && c < T.nr; c++) {
		struct pbuf *b = cl_percpu_ptr_stride(T.pb, c, T.stride);

		if (b->count < 0 || b->count > T.cap) {
			bad++;
			continue;
		}
		for (intptr_t k = 0; k < b->count; k++) {
			const struct item *it = b->items[k];

			if (it < items || it >= items + nr_items || it->owner != 0) {
				bad++;
				continue;
			}
			dup += seen[it->id]++ != 0;
			found++;
		}
	}
	free(seen);
	printf("  pointer buffers: %ld of %ld items found, %ld duplicates, %ld bad\n", found, nr_items,
	       dup, bad);
	return found != nr_items || dup || bad;
}

/* ---- copy buffers ---- */

/* Pop one element by copy from the current index's buffer; 0, or 1 empty. */
static int pop_elem(struct elem *out)
{
	for (;;) {
		int i = cl_rseq_current_index(T.kind);
		struct cbuf *b = cl_percpu_ptr_stride(T.cb, i, T.stride);
		intptr_t n = __atomic_load_n(&b->count, __ATOMIC_RELAXED);
		int r;

		if (n <= 0)
			return 1;
		r = cl_rseq_cmpmemcpy_store(T.kind, &b->count, n, out, &b->e[n - 1], sizeof(*out), n - 1,
					    CL_RSEQ_MO_RELAXED, i);
		if (r == CL_RSEQ_OK)
			return 0;
		if (r < CL_RSEQ_ABORT)
			return -1;
	}
}

static void *copy_worker(struct stress_run *run, int id)
{
	struct elem stash[STASH];
	long i;

	(void)id;
	for (i = 0;; i++) {
		int got = 0, r = 0;

		while (got < STASH && (r = pop_elem(&stash[got])) == 0) {
			if (stash[got].inv != ~stash[got].id) {
				stress_fail(run, "torn element %ld/%ld", stash[got].id, stash[got].inv);
				return (void *)1;
			}
			got++;
		}
		if (r < 0) {
			stress_fail(run, "copy pop failed");
			return (void *)1;
		}
		if (i == 0)
			stress_allow_signals();
		while (got > 0) {
			got--;
			if (cl_percpu_buf_push_copy(T.kind, &T.cb->count, T.stride, T.cb->e, T.cap,
						    sizeof(struct elem), &stash[got],
						    CL_RSEQ_MO_RELEASE) < 0) {
				stress_fail(run, "copy push failed");
				return (void *)1;
			}
		}
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int check_copy_buffers(long nr_elems)
{
	unsigned char *seen = calloc((size_t)nr_elems, 1);
	long found = 0, dup = 0, bad = 0;

	for (unsigned c = 0; seen && c < T.nr; c++) {
		struct cbuf *b = cl_percpu_ptr_stride(T.cb, c, T.stride);

		for (intptr_t k = 0; k < b->count && k < T.cap; k++) {
			const struct elem *e = &b->e[k];

			if (e->id < 0 || e->id >= nr_elems || e->inv != ~e->id) {
				bad++;
				continue;
			}
			dup += seen[e->id]++ != 0;
			found++;
		}
	}
	free(seen);
	printf("  copy buffers: %ld of %ld elements found, %ld duplicates, %ld torn or bad\n", found,
	       nr_elems, dup, bad);
	return found != nr_elems || dup || bad;
}

/* ---- deref adds ---- */

static void *deref_worker(struct stress_run *run, int id)
{
	long i, adds = 0;

	for (i = 0;; i++) {
		if (cl_percpu_deref_add(T.kind, T.ptr, T.stride, offsetof(struct block, hits), 1) < 0) {
			stress_fail(run, "deref_add failed");
			return (void *)1;
		}
		adds++;
		if (i % 16 == (long)id % 16) {
			/* Move this index's pointer to the next block. */
			int c = cl_rseq_current_index(T.kind);
			void **p = cl_percpu_ptr_stride(T.ptr, c, T.stride);
			struct block *mine = cl_percpu_ptr_stride(T.blk, c, T.stride)->b;
			void *cur = __atomic_load_n(p, __ATOMIC_RELAXED);
			struct block *nb = &mine[((struct block *)cur - mine + 1) % NR_BLOCKS];

			(void)cl_rseq_cmpstore(T.kind, (intptr_t *)(void *)p, (intptr_t)cur, (intptr_t)nb, c);
		}
		if (i == 0)
			stress_allow_signals();
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add((long *)run->priv, adds, __ATOMIC_RELAXED);
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index kind)
{
	struct stress_run run;
	struct item *items;
	long nr_items, adds = 0, sum = 0;
	int rc = 0, r;

	T.kind = kind;
	T.pool = cl_percpu_pool_create(NULL);
	if (!T.pool)
		return 1;
	T.stride = cl_percpu_pool_stride(T.pool);
	T.nr = cl_percpu_pool_nr_cpus(T.pool);
	nr_items = (long)T.nr * PER_CPU;
	T.cap = nr_items; /* never full: a push always finds room */
	T.pb = cl_percpu_alloc(T.pool, sizeof(struct pbuf) + (size_t)T.cap * sizeof(void *), 8);
	T.cb = cl_percpu_alloc(T.pool, sizeof(struct cbuf) + (size_t)T.cap * sizeof(struct elem), 8);
	T.ptr = cl_percpu_alloc(T.pool, sizeof(void *), sizeof(void *));
	T.blk = cl_percpu_alloc(T.pool, sizeof(struct blocks), CL_FALSE_SHARING_SIZE);
	items = calloc((size_t)nr_items, sizeof(*items));
	if (!T.pb || !T.cb || !T.ptr || !T.blk || !items) {
		fprintf(stderr, "buffer_stress: out of memory (cap %ld)\n", (long)T.cap);
		return 1;
	}
	for (long k = 0; k < nr_items; k++) {
		struct pbuf *pb = cl_percpu_ptr_stride(T.pb, (unsigned)(k % T.nr), T.stride);
		struct cbuf *cb = cl_percpu_ptr_stride(T.cb, (unsigned)(k % T.nr), T.stride);

		items[k].id = k;
		pb->items[pb->count++] = &items[k];
		cb->e[cb->count].id = k;
		cb->e[cb->count++].inv = ~k;
	}
	for (unsigned c = 0; c < T.nr; c++)
		*cl_percpu_ptr_stride(T.ptr, c, T.stride) = cl_percpu_ptr_stride(T.blk, c, T.stride)->b;

	r = stress_run(&run, cfg, ptr_worker, NULL, NULL);
	r |= check_ptr_buffers(nr_items, items);
	printf("buffer_stress [" STRESS_INDEX_FMT "] pointer: %d workers, %lu rounds, %lu aborts, "
	       "%lu signals, %lu migrations: %s\n",
	       STRESS_INDEX_ARGS(kind), cfg->nr_workers, run.ops, run.aborts, run.signals,
	       run.migrations, r ? "FAIL" : "PASS");
	rc |= r;

	r = stress_run(&run, cfg, copy_worker, NULL, NULL);
	r |= check_copy_buffers(nr_items);
	printf("buffer_stress [" STRESS_INDEX_FMT "] copy: %d workers, %lu rounds, %lu aborts: %s\n",
	       STRESS_INDEX_ARGS(kind), cfg->nr_workers, run.ops, run.aborts, r ? "FAIL" : "PASS");
	rc |= r;

	r = stress_run(&run, cfg, deref_worker, &adds, NULL);
	for (unsigned c = 0; c < T.nr; c++)
		for (int b = 0; b < NR_BLOCKS; b++)
			sum += cl_percpu_ptr_stride(T.blk, c, T.stride)->b[b].hits;
	r |= sum != adds;
	printf("buffer_stress [" STRESS_INDEX_FMT "] deref_add: %d workers, %ld adds, blocks sum %ld, "
	       "%lu aborts: %s\n",
	       STRESS_INDEX_ARGS(kind), cfg->nr_workers, adds, sum, run.aborts, r ? "FAIL" : "PASS");
	rc |= r;

	free(items);
	cl_percpu_pool_destroy(T.pool);
	return rc;
}

STRESS_MAIN(run_index)
