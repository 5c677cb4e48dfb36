/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/counter.h - per-CPU counters: cheap adds, exact sums.
 *
 * A struct cl_counter is a complete type: embed it or declare it static, then
 * cl_counter_init() takes its storage: one int64_t object of the counters'
 * percpu.h pool (cl_counter_pool()), so each CPU (or mm_cid) has its own
 * copy, a pool stride (CL_PERCPU_STRIDE) away from the next CPU's. Copies
 * of different CPUs never share a cache line; counters of one CPU share
 * that CPU's lines, which only that CPU writes.
 *
 *	static struct cl_counter hits;
 *	cl_counter_init(&hits);                  // 0, or -1 + errno (optional:
 *	                                         // the first add sets it up)
 *	cl_counter_add(&hits, 1);                // any thread, no atomic on x86_64
 *	printf("%lld\n", (long long)cl_counter_read(&hits));
 *	cl_counter_destroy(&hits);
 *
 * An add is cl_percpu_add() (percpu_ops.h, the public per-CPU path): a
 * restartable sequence on the copy of the CPU the thread runs on (or of its
 * mm_cid, for counters made with cl_counter_init_index()), retried on abort.
 * Without rseq (see cl_rseq_ops_mode()) it is a relaxed atomic add on the
 * current CPU's copy, so the copies still spread the cache-line traffic. A
 * thread that has no rseq area while the process uses rseq adds atomically
 * to the counter's shared word instead.
 *
 * The cid-indexed form (one slot per cid of a cid.h domain) is in
 * counter_cid.h, so this header does not pull cid.h in.
 *
 * Reads: cl_counter_read() sums all copies with untorn loads. For a quiescent
 * counter (every add happened before the read, e.g. after pthread_join) the
 * sum is exact. Concurrently with adds, it includes every add that completed
 * before the read started, none that started after it returned, and any
 * subset of those in between; with adds of one sign the result lies between
 * the counter's values at the start and at the end of the read. It is not a
 * snapshot: with mixed signs it may be a value the counter never held.
 */
#ifndef CACHELOCAL_COUNTER_H
#define CACHELOCAL_COUNTER_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "config.h"
#include "percpu.h"
#include "percpu_ops.h"

CL_BEGIN_DECLS

/*
 * The per-CPU add is cl_percpu_add(), which updates a copy as an intptr_t.
 * Where intptr_t is narrower than the int64_t copies (32-bit targets), an
 * add is instead a 64-bit atomic add on the copy of the current index,
 * which is what cl_percpu_add() does without critical sections; no such
 * target has critical sections (CL_HAVE_RSEQ_ASM), so no add section ever
 * updates those copies with a plain read-modify-write.
 */
#if INTPTR_MAX < INT64_MAX
#define CL__COUNTER_NARROW_WORD 1
#ifdef CL_HAVE_RSEQ_ASM
#error "cachelocal: counter.h has no 64-bit add for critical sections with a 32-bit intptr_t"
#endif
#else
CL_STATIC_ASSERT(sizeof(intptr_t) == sizeof(int64_t), "counter copies are intptr_t");
#endif

/*
 * A per-CPU counter. Fields are private; use the functions. The copies'
 * address is kept in the field of the counter's index kind, the other is
 * NULL (both NULL: no storage), so an add of a cpu_id counter tests one
 * pointer for "has storage" and "which kind" at once.
 */
struct cl_counter {
	int64_t *slot;     /* CPU 0's copy (cl_counter_pool()) of a cpu_id counter, else NULL */
	int64_t *cid_slot; /* copy 0 of an mm_cid counter, else NULL */
	unsigned nr_cpus;  /* copies to sum (the pool's CPUs) */
	/* adds of threads without an rseq area (atomic; 8-aligned for i386's 64-bit atomics) */
	int64_t shared CL_ALIGNED(8);
};

/* c->slot, which a first add on a zeroed counter may publish meanwhile:
 * relaxed (the copies are reached through the pointer, an address
 * dependency, on every supported CPU), acquire under TSan, which does not
 * model dependencies. */
#ifdef CL_HAVE_TSAN
#define CL__COUNTER_SLOT(c) CL_ATOMIC_LOAD(&(c)->slot, CL_ACQUIRE)
#else
#define CL__COUNTER_SLOT(c) CL_ATOMIC_LOAD(&(c)->slot, CL_RELAXED)
#endif

/* The copies of @c, whichever the index kind (NULL: no storage). */
CL_ALWAYS_INLINE int64_t *cl__counter_copies(const struct cl_counter *c)
{
	int64_t *slot = CL__COUNTER_SLOT(c);

	return slot != NULL ? slot : c->cid_slot;
}

/* The counters' pool, created by the first counter (process-wide). */
CL_WEAK struct cl_percpu_pool *cl__counter_pool;
CL_WEAK pthread_mutex_t cl__counter_pool_lock = PTHREAD_MUTEX_INITIALIZER;

/**
 * cl_counter_pool() - the percpu.h pool every counter takes its copies from.
 *
 * Created on first use with the default attributes (CL_PERCPU_STRIDE, all
 * possible CPUs) and kept for the life of the process. Per-CPU structures
 * that want their counters next to their own data may allocate from it too.
 *
 * Context: any thread; the first call allocates.
 * Return: the pool, or NULL with errno ENOMEM (or what pool creation set).
 */
CL_INLINE struct cl_percpu_pool *cl_counter_pool(void)
{
	struct cl_percpu_pool *p = CL_ATOMIC_LOAD(&cl__counter_pool, CL_ACQUIRE);

	if (CL_LIKELY(p != NULL))
		return p;
	pthread_mutex_lock(&cl__counter_pool_lock);
	p = cl__counter_pool;
	if (p == NULL) {
		p = cl_percpu_pool_create(NULL);
		if (p != NULL)
			CL_ATOMIC_STORE(&cl__counter_pool, p, CL_RELEASE);
	}
	pthread_mutex_unlock(&cl__counter_pool_lock);
	return p;
}

/**
 * cl_counter_init_index() - set up a counter indexed by cpu_id or mm_cid.
 * @c: the counter (uninitialised storage).
 * @kind: CL_RSEQ_INDEX_CPU_ID (copy = CPU) or CL_RSEQ_INDEX_MM_CID (copy =
 *	the kernel's concurrency ID; a process with fewer threads than CPUs
 *	touches fewer copies, untouched copies cost no memory).
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c or bad @kind) or ENOMEM; @c is
 * then left with no storage (cl_counter_destroy() is still safe).
 */
CL_INLINE int cl_counter_init_index(struct cl_counter *c, enum cl_rseq_index kind)
{
	struct cl_percpu_pool *pool;

	if (c == NULL || (kind != CL_RSEQ_INDEX_CPU_ID && kind != CL_RSEQ_INDEX_MM_CID)) {
		errno = EINVAL;
		return -1;
	}
	int64_t *copies;

	c->slot = NULL;
	c->cid_slot = NULL;
	c->nr_cpus = 0;
	c->shared = 0;
	pool = cl_counter_pool();
	if (pool == NULL)
		return -1;
	copies = (int64_t *)cl_percpu_alloc(pool, sizeof(int64_t), sizeof(int64_t));
	if (copies == NULL)
		return -1;
	if (kind == CL_RSEQ_INDEX_MM_CID)
		c->cid_slot = copies;
	else
		c->slot = copies;
	c->nr_cpus = cl_percpu_pool_nr_cpus(pool);
	/* Decide the operations mode now, not on the first add. */
	(void)cl_rseq_ops_mode_index(kind);
	return 0;
}

/**
 * cl_counter_init() - set up a counter with one copy per possible CPU.
 * @c: the counter (uninitialised storage).
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c) or ENOMEM.
 */
CL_INLINE int cl_counter_init(struct cl_counter *c)
{
	return cl_counter_init_index(c, CL_RSEQ_INDEX_CPU_ID);
}

/* A thread without an rseq area in an rseq process: the shared word. */
static CL_COLD CL_NOINLINE CL_UNUSED void cl__counter_add_shared(struct cl_counter *c, int64_t v)
{
	CL_ATOMIC_FETCH_ADD(&c->shared, v, CL_RELAXED);
}

/*
 * The first add on a counter without storage (a zeroed static one, or one
 * destroyed) sets it up as cl_counter_init() would: racing first adds each
 * make copies and the one whose compare-and-swap publishes them wins (the
 * others give theirs back). nr_cpus is the same for every racer, so it is
 * stored before the publishing release. Without memory the add goes to the
 * shared word (errno ENOMEM): counted, never dropped.
 */
static CL_COLD CL_NOINLINE CL_UNUSED void cl__counter_add_lazy(struct cl_counter *c, int64_t v)
{
	struct cl_counter fresh;
	int64_t *none = NULL;
	int e = errno;

	if (cl_counter_init(&fresh) != 0) {
		CL_ATOMIC_FETCH_ADD(&c->shared, v, CL_RELAXED);
		return;
	}
	CL_ATOMIC_STORE(&c->nr_cpus, fresh.nr_cpus, CL_RELAXED);
	if (!CL_ATOMIC_CAS(&c->slot, &none, fresh.slot, CL_RELEASE, CL_RELAXED))
		(void)cl_percpu_free(cl_counter_pool(), fresh.slot);
	errno = e;
	if (cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, (intptr_t *)(void *)CL_ATOMIC_LOAD(&c->slot, CL_ACQUIRE),
			  CL_PERCPU_STRIDE, (intptr_t)v) < 0)
		cl__counter_add_shared(c, v);
}

/**
 * cl_counter_add() - add @v to the counter.
 * @c: an initialised counter.
 * @v: the addend (may be negative; the sum wraps like int64_t arithmetic
 *     in two's complement).
 *
 * One cl_percpu_add() on the counter's copies (one dispatch, the thread's
 * rseq area found once, the copy's address computed from the index the
 * section compares; retried on abort). Fallback: atomic add on the current
 * CPU's copy.
 *
 * Context: any thread, concurrently with other adds and reads; also from a
 * signal handler, once the counter has storage. A counter without storage
 * (zeroed: `static struct cl_counter hits;` with no cl_counter_init()) is
 * set up by its first add, which allocates (not in a signal handler), or,
 * without memory, adds to the shared word with errno ENOMEM. A NULL @c:
 * nothing but errno EINVAL. Otherwise errno is not
 * changed, except in a thread without an rseq area in a process that uses
 * rseq (a seccomp filter installed after the first thread registered): the
 * add then goes to the shared word and errno is ENOSYS.
 */
CL_ALWAYS_INLINE void cl_counter_add(struct cl_counter *c, int64_t v)
{
#ifdef CL__COUNTER_NARROW_WORD
	int64_t *copies;
	enum cl_rseq_index kind;

	if (CL__BAD_ARG(c == NULL))
		return;
	copies = cl__counter_copies(c);
	if (CL_UNLIKELY(copies == NULL)) {
		cl__counter_add_lazy(c, v);
		return;
	}
	kind = copies != c->cid_slot ? CL_RSEQ_INDEX_CPU_ID : CL_RSEQ_INDEX_MM_CID;
	CL_ATOMIC_FETCH_ADD(cl_percpu_ptr(copies, cl_rseq_current_index(kind)), v, CL_RELAXED);
#else
	intptr_t *p;
	int i;

	if (CL__BAD_ARG(c == NULL))
		return;
	p = (intptr_t *)(void *)CL__COUNTER_SLOT(c);
	if (p != NULL) {
		i = cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, p, CL_PERCPU_STRIDE, (intptr_t)v);
	} else {
		p = (intptr_t *)(void *)c->cid_slot;
		if (CL_UNLIKELY(p == NULL)) {
			cl__counter_add_lazy(c, v);
			return;
		}
		i = cl_percpu_add(CL_RSEQ_INDEX_MM_CID, p, CL_PERCPU_STRIDE, (intptr_t)v);
	}
	if (CL_UNLIKELY(i < 0)) /* ENOSYS: no rseq area in this thread */
		cl__counter_add_shared(c, v);
#endif
}

/**
 * cl_counter_read() - the sum of all copies.
 * @c: an initialised counter.
 *
 * Exact for a quiescent counter; see the header comment for what a read
 * concurrent with adds returns. Costs one load per possible CPU.
 *
 * Context: any thread, concurrently with adds.
 * Return: the sum (of a zeroed counter never added to: 0; 0 with errno
 * EINVAL for a NULL @c).
 */
CL_INLINE int64_t cl_counter_read(const struct cl_counter *c)
{
	const int64_t *copies;
	uint64_t sum;

	if (CL__BAD_ARG(c == NULL))
		return 0;
	/* acquire: a first add's copies come with their nr_cpus */
	copies = CL_ATOMIC_LOAD(&c->slot, CL_ACQUIRE);
	if (copies == NULL)
		copies = c->cid_slot;
	sum = (uint64_t)CL_ATOMIC_LOAD(&c->shared, CL_RELAXED);
	if (copies == NULL)
		return (int64_t)sum;
	for (unsigned i = 0; i < CL_ATOMIC_LOAD(&c->nr_cpus, CL_RELAXED); i++)
		sum += (uint64_t)CL_ATOMIC_LOAD(cl_percpu_ptr(copies, i), CL_RELAXED);
	return (int64_t)sum;
}

/**
 * cl_counter_destroy() - give the copies back to the pool.
 * @c: a counter set up by cl_counter_init*() (or zeroed, or already destroyed).
 *
 * Context: no add or read may run concurrently or afterwards (until a new
 * init).
 */
CL_INLINE void cl_counter_destroy(struct cl_counter *c)
{
	if (c == NULL)
		return;
	if (cl__counter_copies(c) != NULL)
		(void)cl_percpu_free(cl_counter_pool(), cl__counter_copies(c));
	c->slot = NULL;
	c->cid_slot = NULL;
	c->nr_cpus = 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_COUNTER_H */
