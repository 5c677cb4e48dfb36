/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/objcache.h: bad input, sizes and alignment, zero
 * new objects, per-CPU reuse, refills and spills, destroy refusing while
 * objects are out, every object accounted, drain of an idle CPU, and drains
 * racing the drained CPU's own allocs and frees with an ownership check
 * (cpu_id and mm_cid caches); double and foreign frees refused by the depot
 * (never stored past it: a double free followed by a drain once wrote past
 * the depot array), and the resident memory of the first allocation of a
 * cache of large objects; where the per-CPU count is placed. Also built with -DCL_OBJCACHE_NO_MEMBARRIER
 * (drain by visiting the CPU; mm_cid drains refused) and -DCL_NO_RSEQ_ASM
 * (test_objcache.variants). fork(): test_objcache_fork.c.
 */
#include <cachelocal/objcache.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cl_test.h"

static struct cl_objcache *make(size_t size, size_t align, unsigned cap, enum cl_rseq_index kind)
{
	struct cl_objcache_attr a = { size, align, cap, kind };
	struct cl_objcache *c = cl_objcache_create(&a);

	cr_assert_not_null(c, "create(%zu, %zu, %u, %d): errno %d", size, align, cap, (int)kind, errno);
	return c;
}

Test(objcache, bad_input)
{
	struct cl_objcache_attr bad[] = {
		{ 0, 0, 0, 0 },                 /* size 0 */
		{ 64, 3, 0, 0 },                /* align not a power of two */
		{ 64, 2 * CL_OBJCACHE_MAX_ALIGN, 0, 0 },
		{ 64, 0, 0, 0x100 },            /* unknown flag */
		{ 64, 0, 1u << 20, 0 },         /* capacity beyond the stride */
	};
	struct cl_objcache_stats st;
	struct cl_objcache *c;
	int x;

	errno = 0;
	cr_assert_null(cl_objcache_create(NULL));
	cr_assert_eq(errno, EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(cl_objcache_create(&bad[i]), "attr %zu", i);
		cr_assert_eq(errno, EINVAL, "attr %zu", i);
	}
	errno = 0;
	cr_assert_null(cl_objcache_alloc(NULL));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cl_objcache_free(NULL, &x);
	cr_assert_eq(errno, EINVAL);
	c = make(32, 0, 0, 0);
	cl_objcache_free(c, NULL); /* like free(NULL) */
	errno = 0;
	cr_assert_eq(cl_objcache_drain_cpu(NULL, 0), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_objcache_drain_cpu(c, -1), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_objcache_drain_cpu(c, (int)cl_nr_possible_cpus()), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_objcache_stats(NULL, &st), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_objcache_stats(c, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_objcache_destroy(c), 0);
	cr_assert_eq(cl_objcache_destroy(NULL), 0);
}

Test(objcache, sizes_alignment_and_zero_objects)
{
	static const size_t sizes[] = { 1, 7, 8, 24, 64, 100, 4096 };
	static const size_t aligns[] = { 0, 8, 64, 256 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
			struct cl_objcache *c = make(sizes[s], aligns[a], 8, 0);
			struct cl_objcache_stats st;
			unsigned char *o[40];
			size_t want = aligns[a] ? aligns[a] : (sizes[s] >= 16 ? 16 : 1);

			cr_assert_eq(cl_objcache_stats(c, &st), 0);
			cr_assert_geq(st.obj_size, sizes[s]);
			cr_assert_eq(st.obj_size % st.align, 0);
			for (int i = 0; i < 40; i++) {
				o[i] = cl_objcache_alloc(c);
				cr_assert_not_null(o[i]);
				cr_assert_eq((uintptr_t)o[i] % want, 0, "size %zu align %zu: %p",
					     sizes[s], aligns[a], (void *)o[i]);
				for (size_t b = 0; b < sizes[s]; b++)
					cr_assert_eq(o[i][b], 0, "a new object is zero");
				memset(o[i], 0xa0 + i, sizes[s]);
			}
			/* No two overlap: each still holds its own pattern. */
			for (int i = 0; i < 40; i++)
				for (size_t b = 0; b < sizes[s]; b++)
					cr_assert_eq(o[i][b], (unsigned char)(0xa0 + i));
			for (int i = 0; i < 40; i++)
				cl_objcache_free(c, o[i]);
			cr_assert_eq(cl_objcache_destroy(c), 0);
		}
	}
}

/*
 * The per-CPU count is placed half a page from the struct's fast-path
 * fields in the low 12 address bits (a store to the count and the next
 * call's loads of those fields 4 KiB apart stall on x86), while the slots
 * still follow it and the largest capacity still fits the stride.
 */
Test(objcache, count_placed_apart_from_the_struct_in_page_offset)
{
	static const unsigned caps[] = { 1, 64, 500 };

	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		for (int kind = CL_RSEQ_INDEX_CPU_ID; kind <= CL_RSEQ_INDEX_MM_CID; kind++) {
			struct cl_objcache *c = make(64, 0, caps[k], (enum cl_rseq_index)kind);
			uintptr_t d = ((uintptr_t)c->count - (uintptr_t)c) % 4096u;
			void *o;

			cr_assert_geq(d, 2048u - CL_CACHELINE_SIZE, "cap %u: count %p, cache %p", caps[k],
				      (void *)c->count, (void *)c);
			cr_assert_leq(d, 2048u + CL_CACHELINE_SIZE);
			cr_assert_eq((void *)c->items, (void *)(c->count + 1));
			cr_assert_eq(c->cpu_count, kind == CL_RSEQ_INDEX_CPU_ID ? c->count : NULL);
			o = cl_objcache_alloc(c);
			cr_assert_not_null(o);
			cr_assert_eq(cl_objcache_free(c, o), 0);
			cr_assert_eq(cl_objcache_destroy(c), 0);
		}
	}
	/* The largest capacity the stride holds leaves no room to place: still made. */
	{
		unsigned cap = (unsigned)((CL_PERCPU_STRIDE - sizeof(intptr_t)) / sizeof(void *));
		struct cl_objcache *c = make(64, 0, cap, CL_RSEQ_INDEX_CPU_ID);

		cr_assert_eq((void *)c->count, c->pcpu);
		cr_assert_eq(cl_objcache_destroy(c), 0);
	}
}

Test(objcache, reuse_on_one_cpu_refill_and_spill)
{
	int cpus[64];
	struct cl_objcache *c;
	struct cl_objcache_stats st;
	void *a, *b, *o[64];

	cl_test_allowed_cpus(cpus, 64);
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	c = make(64, 0, 16, 0);
	a = cl_objcache_alloc(c); /* empty cache: one refill of a batch */
	cr_assert_eq(cl_objcache_stats(c, &st), 0);
	cr_assert_eq(st.batch, 8);
	cr_assert_eq(st.nr_refills, 1);
	cr_assert_eq(st.nr_cached, 8, "batch + 1 taken, one handed out");
	cl_objcache_free(c, a);
	b = cl_objcache_alloc(c);
	cr_assert_eq(b, a, "last freed on this CPU, first handed out");
	cl_objcache_free(c, b);
	/* Free 40 more than fit: spills of half the capacity. */
	for (int i = 0; i < 40; i++)
		o[i] = cl_objcache_alloc(c);
	for (int i = 0; i < 40; i++)
		cl_objcache_free(c, o[i]);
	cr_assert_eq(cl_objcache_stats(c, &st), 0);
	cr_assert_gt(st.nr_spills, 0);
	cr_assert_leq(st.nr_cached, 16);
	cr_assert_eq(st.nr_out, 0);
	cr_assert_eq(st.nr_objects, st.nr_depot + st.nr_cached, "every object accounted");
	cr_assert_eq(st.nr_direct, 0);
	cr_assert_eq(cl_objcache_destroy(c), 0);
}

Test(objcache, destroy_refuses_while_objects_are_out)
{
	struct cl_objcache *c = make(48, 0, 0, 0);
	void *o = cl_objcache_alloc(c), *p;

	cr_assert_not_null(o);
	errno = 0;
	cr_assert_eq(cl_objcache_destroy(c), -1);
	cr_assert_eq(errno, EBUSY);
	p = cl_objcache_alloc(c); /* still usable */
	cr_assert_not_null(p);
	cl_objcache_free(c, o);
	errno = 0;
	cr_assert_eq(cl_objcache_destroy(c), -1, "one still out");
	cr_assert_eq(errno, EBUSY);
	cl_objcache_free(c, p);
	cr_assert_eq(cl_objcache_destroy(c), 0);
}

Test(objcache, free_on_other_cpus_keeps_accounting)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_objcache_stats st;
	enum { N = 1000 };
	static void *o[N];

	for (int kind = CL_RSEQ_INDEX_CPU_ID; kind <= CL_RSEQ_INDEX_MM_CID; kind++) {
		struct cl_objcache *c = make(64, 0, 32, (enum cl_rseq_index)kind);

		for (int i = 0; i < N; i++) {
			if (i % 100 == 0)
				cl_test_pin(cpus[(i / 100) % n]);
			o[i] = cl_objcache_alloc(c);
			cr_assert_not_null(o[i]);
		}
		for (int i = 0; i < N; i++) {
			if (i % 70 == 0)
				cl_test_pin(cpus[(i / 70 + 1) % n]);
			cl_objcache_free(c, o[i]);
		}
		cr_assert_eq(cl_objcache_stats(c, &st), 0);
		cr_assert_eq(st.nr_out, 0);
		cr_assert_geq(st.nr_objects, N);
		cr_assert_eq(st.nr_objects, st.nr_depot + st.nr_cached);
		cr_assert_eq(cl_objcache_destroy(c), 0);
	}
}

/* Which drains this build and this process can do. */
static int drain_expected_ok(const struct cl_objcache *c)
{
	struct cl_objcache_stats st;

	cr_assert_eq(cl_objcache_stats((struct cl_objcache *)c, &st), 0);
	return st.drain_fence != CL_OBJCACHE_DRAIN_NONE;
}

Test(objcache, drain_an_idle_cpu)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_objcache_stats st;
	void *o[10];

	for (int kind = CL_RSEQ_INDEX_CPU_ID; kind <= CL_RSEQ_INDEX_MM_CID; kind++) {
		struct cl_objcache *c = make(64, 0, 32, (enum cl_rseq_index)kind);
		int where, moved;

		cr_assert_eq(cl_test_pin(cpus[0]), 0);
		for (int i = 0; i < 10; i++)
			o[i] = cl_objcache_alloc(c);
		for (int i = 0; i < 10; i++)
			cl_objcache_free(c, o[i]);
		/* The copy that holds them: this CPU's, or this thread's mm_cid's. */
		where = kind ? cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID) : cpus[0];
		cr_assert_eq(cl_objcache_stats(c, &st), 0);
		cr_assert_eq(st.nr_cached, 16 + 10 - 10 + 1, "batch 16 + 1 taken, all back");
		cr_assert_eq(cl_test_pin(cpus[n - 1]), 0);
		errno = 0;
		moved = cl_objcache_drain_cpu(c, where);
		if (!drain_expected_ok(c)) {
			cr_assert_eq(moved, -1);
			cr_assert_eq(errno, ENOSYS, "mm_cid drain without membarrier RSEQ");
		} else {
			cr_assert_eq(moved, 17, "kind %d: moved %d (errno %d)", kind, moved, errno);
			cr_assert_eq(cl_objcache_stats(c, &st), 0);
			cr_assert_eq(st.nr_cached, 0);
			cr_assert_eq(st.nr_depot, st.nr_objects);
			cr_assert_eq(st.nr_drained, 17);
			cr_assert_eq(cl_objcache_drain_cpu(c, where), 0, "nothing left");
		}
		/* The drained copy works again. */
		cr_assert_eq(cl_test_pin(cpus[0]), 0);
		o[0] = cl_objcache_alloc(c);
		cr_assert_not_null(o[0]);
		cl_objcache_free(c, o[0]);
		cr_assert_eq(cl_objcache_destroy(c), 0);
	}
}

/* ---- drains racing the drained CPU's own allocs and frees ---- */

#define HOLD 24

struct race {
	struct cl_objcache *c;
	int cpu;           /* the workers' CPU, drained */
	int stop;
	long errors;       /* ownership violations (atomic) */
	long ops;
};

/* Objects carry their owner in the first word: 0 when free. Relaxed on
 * purpose: atomicity catches a double hand-out without adding
 * happens-before edges that the cache must provide itself. */
static int take(struct race *r, uint64_t *o, uint64_t me)
{
	if (__atomic_exchange_n(&o[0], me, __ATOMIC_RELAXED) != 0) {
		__atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
		return -1;
	}
	o[1] = me; /* plain payload: TSan sees whether hand-overs are ordered */
	return 0;
}

static void give(struct race *r, uint64_t *o, uint64_t me)
{
	if (o[1] != me)
		__atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
	if (__atomic_exchange_n(&o[0], 0, __ATOMIC_RELAXED) != me)
		__atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
}

struct race_worker {
	struct race *r;
	uint64_t id;
};

static void *race_worker_main(void *p)
{
	struct race_worker *w = p;
	struct race *r = w->r;
	uint64_t *held[HOLD] = { 0 };
	unsigned seed = (unsigned)w->id;
	long ops = 0;

	cl_test_pin(r->cpu);
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED) || ops < 20000) {
		int k = (int)(rand_r(&seed) % HOLD);

		if (held[k]) {
			give(r, held[k], w->id);
			cl_objcache_free(r->c, held[k]);
			held[k] = NULL;
		} else {
			held[k] = cl_objcache_alloc(r->c);
			if (held[k] == NULL || take(r, held[k], w->id) != 0) {
				__atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
				held[k] = NULL;
			}
		}
		ops++;
	}
	for (int k = 0; k < HOLD; k++)
		if (held[k]) {
			give(r, held[k], w->id);
			cl_objcache_free(r->c, held[k]);
		}
	__atomic_fetch_add(&r->ops, ops, __ATOMIC_RELAXED);
	return NULL;
}

static void drain_race(enum cl_rseq_index kind)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	static struct race r;
	struct race_worker w[2];
	pthread_t t[2];
	struct cl_objcache_stats st;
	long drains = 0, moved = 0;

	memset(&r, 0, sizeof(r));
	r.c = make(64, 0, 16, kind);
	r.cpu = cpus[n - 1];
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	for (int i = 0; i < 2; i++) {
		w[i] = (struct race_worker){ &r, (uint64_t)i + 1 };
		cr_assert_eq(pthread_create(&t[i], NULL, race_worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 2000; i++) {
		/* cpu_id caches: the workers' CPU; mm_cid caches: every cid
		 * the workers may hold. */
		int target = kind ? i % 3 : r.cpu;
		int m = cl_objcache_drain_cpu(r.c, target < (int)cl_nr_possible_cpus() ? target : 0);

		if (m < 0) {
			cr_assert(!drain_expected_ok(r.c), "drain failed: errno %d", errno);
			break;
		}
		drains++;
		moved += m;
		if (i % 16 == 0)
			sched_yield();
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert_eq(r.errors, 0, "kind %d: %ld ownership errors", (int)kind, r.errors);
	cr_assert_eq(cl_objcache_stats(r.c, &st), 0);
	cr_assert_eq(st.nr_out, 0);
	cr_assert_eq(st.nr_objects, st.nr_depot + st.nr_cached, "none lost");
	if (drain_expected_ok(r.c))
		cr_assert_eq((size_t)moved, st.nr_drained);
	cr_log_info("kind %d, fence %d: %ld ops, %ld drains moved %ld objects\n", (int)kind,
		    st.drain_fence, r.ops, drains, moved);
	cr_assert_eq(cl_objcache_destroy(r.c), 0);
}

Test(objcache, drain_races_the_cpus_own_allocs_cpu_id, .timeout = 300)
{
	drain_race(CL_RSEQ_INDEX_CPU_ID);
}

Test(objcache, drain_races_the_cpus_own_allocs_mm_cid, .timeout = 300)
{
	drain_race(CL_RSEQ_INDEX_MM_CID);
}

/* ---- bad frees: what reaches the depot is checked ---- */

/* Every object is once in the depot or a CPU cache: none is out. */
static void assert_all_free_once(struct cl_objcache *c, size_t bad)
{
	struct cl_objcache_stats st;

	cr_assert_eq(cl_objcache_stats(c, &st), 0);
	cr_assert_leq(st.nr_depot, st.nr_objects, "depot %zu > carved %zu", st.nr_depot, st.nr_objects);
	cr_assert_eq(st.nr_depot + st.nr_cached, st.nr_objects, "depot %zu + cached %zu != %zu",
		     st.nr_depot, st.nr_cached, st.nr_objects);
	cr_assert_eq(st.nr_bad_frees, bad);
}

Test(objcache, double_free_then_drain_stays_in_the_depot)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64), moved;
	struct cl_objcache *c;
	void *a, *b;

	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	c = make(64, 0, 8, CL_RSEQ_INDEX_CPU_ID); /* batch 4: a refill takes 5 */
	a = cl_objcache_alloc(c);
	cr_assert_not_null(a);
	cr_assert_eq(cl_objcache_free(c, a), 0);
	cr_assert_eq(cl_objcache_free(c, a), 0, "the fast path takes it unchecked");
	cr_assert_eq(cl_test_pin(cpus[n - 1]), 0);
	moved = cl_objcache_drain_cpu(c, cpus[0]);
	cr_assert_eq(moved, 5, "4 cached + a, its second copy refused: moved %d", moved);
	assert_all_free_once(c, 1);
	/* The cache still works and a is handed out once. */
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	cr_assert_eq(cl_objcache_alloc(c), a);
	b = cl_objcache_alloc(c);
	cr_assert(b != NULL && b != a);
	cr_assert_eq(cl_objcache_free(c, b), 0);
	cr_assert_eq(cl_objcache_free(c, a), 0);
	assert_all_free_once(c, 1);
	cr_assert_eq(cl_objcache_destroy(c), 0);
}

/* A cache of capacity 2 pinned on one CPU, full: the next free spills. */
static struct cl_objcache *full_cache(int cpu, void **held)
{
	struct cl_objcache *c;
	void *a, *b;

	cr_assert_eq(cl_test_pin(cpu), 0);
	c = make(64, 0, 2, CL_RSEQ_INDEX_CPU_ID);
	a = cl_objcache_alloc(c); /* refill: 2 taken, 1 cached */
	b = cl_objcache_alloc(c); /* the cached one */
	cr_assert(a != NULL && b != NULL && a != b);
	cr_assert_eq(cl_objcache_free(c, a), 0);
	cr_assert_eq(cl_objcache_free(c, b), 0);
	*held = b; /* on top of this CPU's full cache */
	return c;
}

Test(objcache, double_free_on_the_spill_path_is_einval)
{
	int cpus[64];
	struct cl_objcache *c;
	void *b;

	cl_test_allowed_cpus(cpus, 64);
	c = full_cache(cpus[0], &b);
	errno = 0;
	cr_assert_eq(cl_objcache_free(c, b), -1, "b is in the batch that went to the depot");
	cr_assert_eq(errno, EINVAL);
	assert_all_free_once(c, 1);
	cr_assert_eq(cl_objcache_destroy(c), 0, "nothing lost, nothing counted twice");
}

Test(objcache, foreign_pointers_are_einval)
{
	int cpus[64];
	struct cl_objcache *c, *other;
	void *b, *theirs;
	char *heap = malloc(64);
	long stack[8];
	void *bad[4];
	const char *what[] = { "inside an object", "malloc", "stack", "another cache's object" };

	cr_assert_not_null(heap);
	cl_test_allowed_cpus(cpus, 64);
	other = make(64, 0, 2, CL_RSEQ_INDEX_CPU_ID);
	theirs = cl_objcache_alloc(other);
	for (int i = 0; i < 4; i++) {
		c = full_cache(cpus[0], &b);
		bad[0] = (char *)b + 8;
		bad[1] = heap;
		bad[2] = stack;
		bad[3] = theirs;
		errno = 0;
		cr_assert_eq(cl_objcache_free(c, bad[i]), -1, "%s", what[i]);
		cr_assert_eq(errno, EINVAL, "%s", what[i]);
		assert_all_free_once(c, 1);
		cr_assert_eq(cl_objcache_destroy(c), 0);
	}
	/* A foreign pointer taken by the fast path is refused by a drain. */
	c = make(64, 0, 8, CL_RSEQ_INDEX_CPU_ID);
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	b = cl_objcache_alloc(c);
	cr_assert_eq(cl_objcache_free(c, b), 0);
	cr_assert_eq(cl_objcache_free(c, heap), 0, "the fast path does not look");
	cr_assert_eq(cl_objcache_drain_cpu(c, cpus[0]), 5);
	assert_all_free_once(c, 1);
	cr_assert_eq(cl_objcache_destroy(c), 0);
	cr_assert_eq(cl_objcache_free(other, theirs), 0);
	cr_assert_eq(cl_objcache_destroy(other), 0);
	free(heap);
}

/* ---- large objects: slabs of one object, mapped, not cleared ---- */

static void first_alloc_rss(size_t size, unsigned cap)
{
	struct cl_objcache *c;
	struct cl_objcache_stats st;
	unsigned char *o;
	long before, grew;
	int cpus[64];

	/* one CPU's cache throughout: the object freed is the one reallocated */
	cl_test_allowed_cpus(cpus, 64);
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	c = make(size, 0, cap, CL_RSEQ_INDEX_CPU_ID);
	before = cl_test_rss_bytes();
	o = cl_objcache_alloc(c);
	grew = cl_test_rss_bytes() - before;
	cr_assert_not_null(o);
	cr_assert_eq(cl_objcache_stats(c, &st), 0);
	cr_assert_leq(grew, (long)(2 * size * st.per_cpu_capacity), "%zu-byte objects: %ld bytes resident",
		      size, grew);
	/* The rule (objcache.h): one slab per refill, a large object's slab is
	 * mapped and not written, so at most about one object. */
	cr_assert_leq(grew, (long)(2 * size), "%zu-byte objects, capacity %u: %ld bytes resident", size,
		      cap, grew);
	cr_assert_eq(st.nr_objects, 1, "one object per slab of large objects");
	cr_assert(o[0] == 0 && o[size / 2] == 0 && o[size - 1] == 0, "a new object is zero");
	o[0] = o[size - 1] = 1;
	cr_assert_eq(cl_objcache_free(c, o), 0);
	cr_assert_eq(cl_objcache_alloc(c), o);
	cr_assert_eq(o[size - 1], 1, "the content is kept");
	cr_assert_eq(cl_objcache_free(c, o), 0);
	cr_assert_eq(cl_objcache_destroy(c), 0);
}

Test(objcache, large_objects_first_alloc_rss_bounded)
{
	first_alloc_rss((size_t)4 << 20, 0);  /* default capacity 64 */
	first_alloc_rss((size_t)16 << 20, 1); /* capacity 1: a batch of 1 */
}
