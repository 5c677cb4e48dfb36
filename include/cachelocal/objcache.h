/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache.h - a per-CPU object cache: fixed-size objects handed
 * out and taken back by this CPU's cache without an atomic instruction,
 * refilled from and spilled to a shared depot in batches (what per-CPU slab
 * allocators do, packaged).
 *
 *	struct cl_objcache_attr a = { .obj_size = sizeof(struct task) };
 *	struct cl_objcache *c = cl_objcache_create(&a);   // NULL + errno
 *	struct task *t = cl_objcache_alloc(c);            // NULL + errno (ENOMEM)
 *	cl_objcache_free(c, t);
 *	cl_objcache_destroy(c);                           // -1 + EBUSY while objects are out
 *
 * Built from the pool and the public per-CPU operations only, the pattern a
 * user's own per-CPU structure follows (docs/structures.md):
 *   storage  one pool object per cache: {count, items[capacity]} (a stack of
 *            free object pointers), CPU n's copy in CPU n's slice;
 *   fast     alloc = one buffer pop (cl_percpu_cmp2_store), free = one buffer
 *            push (cl_percpu_cmpstore_store) on this CPU's copy: an rseq
 *            critical section, no atomic instruction, no lock;
 *   slow     the cache is empty (alloc) or full (free): move a batch of
 *            half the capacity between it and the depot, a mutex-protected
 *            array; the depot carves new objects from slabs (aligned_alloc,
 *            zeroed) when it runs dry.
 * The cache never writes into an object: free objects are tracked by
 * pointer arrays, so an object keeps its content from free to the next
 * alloc, and a new object is zero.
 *
 * Draining (cl_objcache_drain_cpu()) moves one CPU's cache to the depot
 * while threads may be running on that CPU. The drainer owns the copy by
 * storing a negative count (the per-CPU operations treat it as empty for a
 * pop and full for a push, so they go to the depot), then fences:
 *   rseq ops, membarrier  MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ on that CPU
 *                         (all CPUs for mm_cid caches): every critical
 *                         section running there is aborted; one that
 *                         committed over the negative count before the fence
 *                         is detected (the count is no longer negative) and
 *                         the drainer starts over;
 *   rseq ops, no membarrier RSEQ (kernel < 5.10): the drainer moves itself
 *                         to that CPU (sched_setaffinity) and back, which
 *                         preempts whatever ran there; mm_cid caches cannot
 *                         be drained then (ENOSYS);
 *   atomic fallback       the negative count is stored with cl_rseq_cmpstore()
 *                         under the same striped lock the fallback's buffer
 *                         operations take: no fence needed.
 * Then it moves items[0, count) to the depot and stores count 0.
 *
 * Index (attr.flags): CPU number by default; CL_OBJCACHE_MM_CID indexes the
 * caches by the kernel's concurrency ID (threads of a process with fewer
 * threads than CPUs then use fewer, warmer caches).
 * Without rseq (seccomp, old kernel, TSan, CL_NO_RSEQ_ASM) the same code runs
 * on the fallback of percpu_ops.h (a striped spinlock per operation, still
 * per-CPU data). A thread without an rseq area in a process that uses rseq
 * goes to the depot directly, under its mutex.
 *
 * Synchronization table:
 *	                 alloc/free   drain_cpu     stats   create/destroy
 *	alloc/free       yes          yes           yes     no
 *	drain_cpu        yes          yes (serial)  yes     no
 *	stats            yes          yes           yes     no
 *	create/destroy   no           no            no      no
 * alloc and free are not async-signal-safe (the slow path takes a mutex).
 *
 * Accounting: every object is in exactly one place: handed out, in one CPU's
 * cache, or in the depot. cl_objcache_destroy() counts the caches and the
 * depot, and refuses (EBUSY) while objects are handed out.
 */
#ifndef CACHELOCAL_OBJCACHE_H
#define CACHELOCAL_OBJCACHE_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "config.h"
#include "internal/membarrier.h"
#include "percpu.h"
#include "percpu_ops.h"
#include "rseq.h"
#include "sys.h"
#include "topology.h"

CL_BEGIN_DECLS

/* attr.flags */
#define CL_OBJCACHE_MM_CID 0x1u /* index the per-CPU caches by mm_cid, not cpu_id */
#define CL__OBJCACHE_FLAGS (CL_OBJCACHE_MM_CID)

/* Objects per CPU cache when attr.per_cpu_capacity is 0. */
#define CL_OBJCACHE_DEFAULT_CAPACITY 64u
/* Largest attr.align. */
#define CL_OBJCACHE_MAX_ALIGN 4096u
/* Most objects moved to or from the depot at once (a stack array). */
#define CL__OBJCACHE_MOVE_MAX 128u
/* Bytes a slab aims at (at least two batches of objects). */
#define CL__OBJCACHE_SLAB_BYTES 65536u
/* The count of a copy owned by a drainer. */
#define CL__OBJCACHE_OWNED ((intptr_t)-1)

/**
 * struct cl_objcache_attr - how to build a cache; 0 fields mean default.
 * @obj_size: bytes per object (> 0).
 * @align: object alignment, a power of two <= CL_OBJCACHE_MAX_ALIGN; 0: 16
 *	(as malloc), or the object size rounded up to a power of two when
 *	that is smaller.
 * @per_cpu_capacity: free objects one CPU's cache holds; 0:
 *	CL_OBJCACHE_DEFAULT_CAPACITY. Batches to and from the depot are half
 *	of it (at most CL__OBJCACHE_MOVE_MAX).
 * @flags: CL_OBJCACHE_MM_CID.
 */
struct cl_objcache_attr {
	size_t obj_size;
	size_t align;
	unsigned int per_cpu_capacity;
	unsigned int flags;
};

/* How cl_objcache_drain_cpu() takes a copy away from its CPU. */
enum cl_objcache_drain_fence {
	CL_OBJCACHE_DRAIN_MEMBARRIER = 1, /* membarrier PRIVATE_EXPEDITED_RSEQ */
	CL_OBJCACHE_DRAIN_MIGRATE = 2,    /* the drainer visits the CPU */
	CL_OBJCACHE_DRAIN_LOCK = 3,       /* fallback operations: their striped lock */
	CL_OBJCACHE_DRAIN_NONE = 4,       /* mm_cid caches without membarrier RSEQ: ENOSYS */
};

/**
 * struct cl_objcache_stats - what cl_objcache_stats() reports.
 * @obj_size: bytes between two objects (attr.obj_size rounded to @align).
 * @align: object alignment.
 * @per_cpu_capacity: objects per CPU cache.
 * @batch: objects moved per refill or spill.
 * @nr_cpus: CPU caches (copies).
 * @index: enum cl_rseq_index of the caches.
 * @drain_fence: enum cl_objcache_drain_fence.
 * @nr_objects: objects carved from slabs so far.
 * @nr_slabs: slabs allocated.
 * @nr_depot: free objects in the depot.
 * @nr_cached: free objects in the CPU caches (summed without stopping them).
 * @nr_out: @nr_objects - @nr_depot - @nr_cached: handed out (exact when no
 *	alloc or free runs).
 * @nr_refills: empty-cache allocs served from the depot.
 * @nr_spills: full-cache frees that moved a batch to the depot.
 * @nr_direct: allocs and frees that went to the depot because the thread
 *	could not use the per-CPU path.
 * @nr_drains: successful cl_objcache_drain_cpu() calls.
 * @nr_drained: objects they moved.
 */
struct cl_objcache_stats {
	size_t obj_size, align;
	unsigned int per_cpu_capacity, batch, nr_cpus;
	int index, drain_fence;
	size_t nr_objects, nr_slabs, nr_depot, nr_cached, nr_out;
	size_t nr_refills, nr_spills, nr_direct, nr_drains, nr_drained;
};

/*
 * struct cl_objcache - opaque: use the functions. The first group is set at
 * create and read by every alloc and free; the depot group is written under
 * @lock, on its own false-sharing unit.
 */
struct cl_objcache {
	/* read-mostly: the fast path */
	intptr_t *count;        /* CPU 0's copy of the per-CPU count */
	void **items;           /* CPU 0's copy of the per-CPU slots */
	size_t stride;          /* the pool's stride */
	intptr_t cap;           /* slots per copy */
	int index;              /* enum cl_rseq_index */
	int fence;              /* enum cl_objcache_drain_fence */
	unsigned batch;         /* objects per refill / spill */
	unsigned nr_cpus;       /* copies */
	size_t obj_size, align;
	unsigned flags;
	struct cl_percpu_pool *pool;
	void *pcpu;             /* the pool object: count, then items */

	/* depot: under lock */
	pthread_mutex_t lock CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	void **depot;           /* free objects; room for every object carved */
	size_t nr_depot, cap_depot;
	char **slabs;
	size_t nr_slabs, cap_slabs, objs_per_slab;
	size_t nr_objects;
	size_t nr_refills, nr_spills, nr_direct, nr_drains, nr_drained;
	pthread_mutex_t drain_lock; /* one drain at a time */
};

/* ---- process-wide: the RSEQ fence (internal/membarrier.h) ---- */

/* 1 when drains can use the RSEQ fence (registering on first use), else -1. */
CL_INLINE int cl__objcache_memb_ready(void)
{
#ifdef CL_OBJCACHE_NO_MEMBARRIER
	return -1;
#else
	return cl__membarrier_rseq_ready() ? 1 : -1;
#endif
}

/* ---- helpers ---- */

/* CPU @cpu's copy of the count and of the slots. */
CL_INLINE intptr_t *cl__objcache_count(const struct cl_objcache *c, unsigned cpu)
{
	return cl_percpu_ptr_stride(c->count, cpu, c->stride);
}

CL_INLINE void **cl__objcache_items(const struct cl_objcache *c, unsigned cpu)
{
	return cl_percpu_ptr_stride(c->items, cpu, c->stride);
}

/* Carve one more slab into the depot; 0, or -1 (ENOMEM). Under c->lock. */
CL_INLINE int cl__objcache_grow(struct cl_objcache *c)
{
	size_t n = c->objs_per_slab, total = c->nr_objects + n, i;
	char *slab;

	if (c->nr_slabs == c->cap_slabs) {
		size_t nc = c->cap_slabs ? 2 * c->cap_slabs : 16;
		char **s = (char **)realloc(c->slabs, nc * sizeof(*s));

		if (s == NULL)
			return -1;
		c->slabs = s;
		c->cap_slabs = nc;
	}
	if (total > c->cap_depot) {
		size_t nc = c->cap_depot ? 2 * c->cap_depot : total;
		void **d;

		while (nc < total)
			nc *= 2;
		d = (void **)realloc(c->depot, nc * sizeof(*d));
		if (d == NULL)
			return -1;
		c->depot = d;
		c->cap_depot = nc;
	}
	slab = (char *)aligned_alloc(c->align, n * c->obj_size);
	if (slab == NULL)
		return -1;
	memset(slab, 0, n * c->obj_size);
	c->slabs[c->nr_slabs++] = slab;
	/* Lowest address on top: handed out first. */
	for (i = 0; i < n; i++)
		c->depot[c->nr_depot++] = slab + (n - 1 - i) * c->obj_size;
	c->nr_objects = total;
	return 0;
}

/* Objects back to the depot (it always has room for all). */
CL_INLINE void cl__objcache_deposit(struct cl_objcache *c, void *const *objs, size_t n)
{
	memcpy(c->depot + c->nr_depot, objs, n * sizeof(*objs));
	c->nr_depot += n;
}

/* Free everything create allocated (any subset of it). */
CL_INLINE void cl__objcache_release(struct cl_objcache *c)
{
	size_t i;

	for (i = 0; i < c->nr_slabs; i++)
		free(c->slabs[i]);
	free(c->slabs);
	free(c->depot);
	if (c->pcpu)
		cl_percpu_free(c->pool, c->pcpu);
	if (c->pool)
		cl_percpu_pool_destroy(c->pool);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->drain_lock);
	free(c);
}

/* ---- create / destroy ---- */

/**
 * cl_objcache_create() - make an object cache.
 * @attr: object size (required), alignment, per-CPU capacity, flags.
 *
 * Maps a per-CPU pool with one {count, items[capacity]} object; objects
 * themselves are carved on demand. Registers the process for
 * membarrier's RSEQ fence (once per process) to drain caches later.
 *
 * Context: any thread; allocates.
 * Return: the cache, or NULL with errno EINVAL (NULL @attr, obj_size 0 or
 * above 2^40, align not a power of two or above CL_OBJCACHE_MAX_ALIGN,
 * capacity that does not fit the pool's stride, unknown flags) or ENOMEM.
 */
CL_INLINE struct cl_objcache *cl_objcache_create(const struct cl_objcache_attr *attr)
{
	struct cl_objcache *c;
	size_t align, size, cap, bytes;
	enum cl_rseq_index idx;

	if (attr == NULL || attr->obj_size == 0 || (attr->flags & ~CL__OBJCACHE_FLAGS) ||
	    (attr->align & (attr->align - 1)) || attr->align > CL_OBJCACHE_MAX_ALIGN ||
	    attr->obj_size > ((size_t)1 << 40)) {
		errno = EINVAL;
		return NULL;
	}
	align = attr->align;
	if (align == 0) {
		align = 1;
		while (align < 16 && align < attr->obj_size)
			align *= 2;
	}
	if (align < sizeof(void *) && attr->obj_size >= sizeof(void *))
		align = sizeof(void *);
	size = (attr->obj_size + align - 1) / align * align;
	cap = attr->per_cpu_capacity ? attr->per_cpu_capacity : CL_OBJCACHE_DEFAULT_CAPACITY;
	bytes = sizeof(intptr_t) + cap * sizeof(void *);
	if (bytes > CL_PERCPU_STRIDE) {
		errno = EINVAL;
		return NULL;
	}
	c = (struct cl_objcache *)aligned_alloc(CL_FALSE_SHARING_SIZE,
						(sizeof(*c) + CL_FALSE_SHARING_SIZE - 1) /
							CL_FALSE_SHARING_SIZE * CL_FALSE_SHARING_SIZE);
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->drain_lock, NULL);
	idx = (attr->flags & CL_OBJCACHE_MM_CID) ? CL_RSEQ_INDEX_MM_CID : CL_RSEQ_INDEX_CPU_ID;
	c->index = (int)idx;
	c->obj_size = size;
	c->align = align;
	c->flags = attr->flags;
	c->cap = (intptr_t)cap;
	c->batch = (unsigned)(cap / 2 ? cap / 2 : 1);
	if (c->batch > CL__OBJCACHE_MOVE_MAX)
		c->batch = CL__OBJCACHE_MOVE_MAX;
	c->objs_per_slab = CL__OBJCACHE_SLAB_BYTES / size;
	if (c->objs_per_slab < 2 * (size_t)c->batch + 1)
		c->objs_per_slab = 2 * (size_t)c->batch + 1;
	c->pool = cl_percpu_pool_create(NULL);
	if (c->pool == NULL)
		goto fail;
	c->pcpu = cl_percpu_alloc(c->pool, bytes, CL_CACHELINE_SIZE);
	if (c->pcpu == NULL)
		goto fail;
	c->stride = cl_percpu_pool_stride(c->pool);
	c->nr_cpus = cl_percpu_pool_nr_cpus(c->pool);
	c->count = (intptr_t *)c->pcpu;
	c->items = (void **)(void *)((char *)c->pcpu + sizeof(intptr_t));
	/* How a drain fences, from the process's operations mode. */
	if (cl_rseq_ops_mode_index(idx) != CL_RSEQ_OPS_RSEQ) {
		c->fence = CL_OBJCACHE_DRAIN_LOCK;
	} else {
		int m = cl__objcache_memb_ready();

		c->fence = m == 1 ? CL_OBJCACHE_DRAIN_MEMBARRIER
				  : idx == CL_RSEQ_INDEX_CPU_ID ? CL_OBJCACHE_DRAIN_MIGRATE
								: CL_OBJCACHE_DRAIN_NONE;
	}
	return c;
fail:
	cl__objcache_release(c);
	errno = ENOMEM;
	return NULL;
}

/* Free objects in every CPU cache (racy while allocs and frees run). */
CL_INLINE size_t cl__objcache_cached(const struct cl_objcache *c)
{
	size_t sum = 0;
	unsigned i;

	for (i = 0; i < c->nr_cpus; i++) {
		intptr_t n = CL_ATOMIC_LOAD(cl__objcache_count(c, i), CL_RELAXED);

		if (n > 0)
			sum += (size_t)n;
	}
	return sum;
}

/**
 * cl_objcache_destroy() - free the cache and every object it carved.
 * @c: the cache (NULL: nothing happens, returns 0).
 *
 * Counts the free objects (depot and every CPU cache); if that is fewer
 * than the objects carved, some are still handed out and nothing is freed.
 *
 * Context: no other call on @c may run concurrently (or afterwards, once it
 * returned 0).
 * Return: 0 (freed), or -1 with errno EBUSY (objects handed out; the cache
 * is intact and usable).
 */
CL_INLINE int cl_objcache_destroy(struct cl_objcache *c)
{
	if (c == NULL)
		return 0;
	if (c->nr_depot + cl__objcache_cached(c) != c->nr_objects) {
		errno = EBUSY;
		return -1;
	}
	cl__objcache_release(c);
	return 0;
}

/* ---- alloc / free ---- */

/*
 * The two fast-path operations with the index kind as a constant in each
 * branch (measured: 1.3 cycles per alloc+free less than passing the kind
 * through, the operations inline once per kind).
 */
CL_ALWAYS_INLINE int cl__objcache_pop(struct cl_objcache *c, void **out)
{
	if (CL_LIKELY(c->index == (int)CL_RSEQ_INDEX_CPU_ID))
		return cl_percpu_cmp2_store(CL_RSEQ_INDEX_CPU_ID, c->count, c->stride, c->items, out);
	return cl_percpu_cmp2_store(CL_RSEQ_INDEX_MM_CID, c->count, c->stride, c->items, out);
}

CL_ALWAYS_INLINE int cl__objcache_push(struct cl_objcache *c, void *obj)
{
	if (CL_LIKELY(c->index == (int)CL_RSEQ_INDEX_CPU_ID))
		return cl_percpu_cmpstore_store(CL_RSEQ_INDEX_CPU_ID, c->count, c->stride, c->items,
						c->cap, obj, CL_RSEQ_MO_RELAXED);
	return cl_percpu_cmpstore_store(CL_RSEQ_INDEX_MM_CID, c->count, c->stride, c->items, c->cap,
					obj, CL_RSEQ_MO_RELAXED);
}

/*
 * Slow alloc: @r is CL_PERCPU_CMPFAIL (this CPU's cache was empty or being
 * drained: take a batch, keep one, cache the rest) or -1 (no per-CPU path
 * for this thread: take one).
 */
static CL_NOINLINE CL_UNUSED void *cl__objcache_alloc_slow(struct cl_objcache *c, int r)
{
	void *objs[CL__OBJCACHE_MOVE_MAX + 1], *obj;
	size_t n, k;

	pthread_mutex_lock(&c->lock);
	if (c->nr_depot == 0 && cl__objcache_grow(c) != 0) {
		pthread_mutex_unlock(&c->lock);
		errno = ENOMEM;
		return NULL;
	}
	n = r == CL_PERCPU_CMPFAIL ? (size_t)c->batch + 1 : 1;
	if (n > c->nr_depot)
		n = c->nr_depot;
	c->nr_depot -= n;
	memcpy(objs, c->depot + c->nr_depot, n * sizeof(*objs));
	if (r == CL_PERCPU_CMPFAIL)
		c->nr_refills++;
	else
		c->nr_direct++;
	pthread_mutex_unlock(&c->lock);
	obj = objs[--n];
	for (k = 0; k < n; k++)
		if (cl__objcache_push(c, objs[k]) < 0)
			break;
	if (k < n) { /* the cache filled up meanwhile (or is being drained) */
		pthread_mutex_lock(&c->lock);
		cl__objcache_deposit(c, objs + k, n - k);
		pthread_mutex_unlock(&c->lock);
	}
	return obj;
}

/**
 * cl_objcache_alloc() - take an object.
 * @c: the cache.
 *
 * Fast path, one buffer pop on this CPU's cache (cl_percpu_cmp2_store()):
 *	i = current index; n = count[i]; if (n <= 0) goto slow;
 *	obj = items[i][n - 1];
 *	rseq: if (index != i || count[i] != n || items[i][n-1] != obj) retry;
 *	      count[i] = n - 1                                    commit
 * Slow path (empty): a batch from the depot (under its mutex), carving a new
 * slab if it is empty.
 * The object is zero the first time it is handed out; afterwards it holds
 * what it held when it was freed.
 *
 * Context: any thread; not in a signal handler (the slow path takes a mutex).
 * Return: an object of attr.obj_size bytes, aligned; or NULL with errno
 * EINVAL (NULL @c) or ENOMEM. errno may change on success too.
 */
CL_ALWAYS_INLINE void *cl_objcache_alloc(struct cl_objcache *c)
{
	void *obj = NULL;
	int r;

	if (CL_UNLIKELY(c == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	r = cl__objcache_pop(c, &obj);
	if (CL_LIKELY(r >= 0))
		return obj;
	return cl__objcache_alloc_slow(c, r);
}

/*
 * Slow free: @r is CL_PERCPU_CMPFAIL (this CPU's cache was full or being
 * drained: move a batch out of it, then cache @obj) or -1 (no per-CPU path).
 */
static CL_NOINLINE CL_UNUSED void cl__objcache_free_slow(struct cl_objcache *c, void *obj, int r)
{
	void *objs[CL__OBJCACHE_MOVE_MAX + 1];
	size_t n = 0;

	if (r == CL_PERCPU_CMPFAIL) {
		while (n < c->batch && cl__objcache_pop(c, &objs[n]) >= 0)
			n++;
		/* Keep the object just freed (likely in this CPU's cache) local. */
		if (n == 0 || cl__objcache_push(c, obj) < 0)
			objs[n++] = obj;
	} else {
		objs[n++] = obj;
	}
	pthread_mutex_lock(&c->lock);
	cl__objcache_deposit(c, objs, n);
	if (r == CL_PERCPU_CMPFAIL)
		c->nr_spills++;
	else
		c->nr_direct++;
	pthread_mutex_unlock(&c->lock);
}

/**
 * cl_objcache_free() - give an object back.
 * @c: the cache the object came from.
 * @obj: the object (NULL: nothing happens).
 *
 * Fast path, one buffer push on this CPU's cache (cl_percpu_cmpstore_store()):
 *	i = current index; n = count[i]; if (n < 0 || n >= capacity) goto slow;
 *	rseq: if (index != i || count[i] != n) retry;
 *	      items[i][n] = obj;  count[i] = n + 1                commit
 * Slow path (full): half the cache goes to the depot, then @obj is cached.
 * The object may be freed on another CPU than it was allocated on.
 *
 * Context: any thread; not in a signal handler. @obj must come from
 * cl_objcache_alloc(@c) and not be freed twice (not checked).
 * errno EINVAL if @c is NULL and @obj is not (nothing else happens).
 */
CL_ALWAYS_INLINE void cl_objcache_free(struct cl_objcache *c, void *obj)
{
	int r;

	if (CL_UNLIKELY(c == NULL || obj == NULL)) {
		if (obj != NULL)
			errno = EINVAL;
		return;
	}
	r = cl__objcache_push(c, obj);
	if (CL_LIKELY(r >= 0))
		return;
	cl__objcache_free_slow(c, obj, r);
}

/* ---- drain ---- */

/* Run on @cpu once (and come back): preempts what ran there. 0 or -1 + errno. */
CL_INLINE int cl__objcache_visit_cpu(unsigned cpu)
{
	unsigned nbits = cl_nr_possible_cpus(), w;
	size_t words = (nbits + 63) / 64, len;
	uint64_t *old, *one;
	long r;
	int e = 0;

	if (cpu >= nbits) {
		errno = EINVAL;
		return -1;
	}
	len = words * sizeof(uint64_t);
	old = (uint64_t *)calloc(2 * words, sizeof(uint64_t));
	if (old == NULL) {
		errno = ENOMEM;
		return -1;
	}
	one = old + words;
	r = syscall(SYS_sched_getaffinity, 0, len, old);
	if (r <= 0) {
		e = errno;
		free(old);
		errno = e;
		return -1;
	}
	one[cpu / 64] = (uint64_t)1 << (cpu % 64);
	if (syscall(SYS_sched_setaffinity, 0, len, one) != 0) {
		e = errno; /* not allowed there (cpuset), or offline */
	} else {
		/* sched_setaffinity moved this thread before returning; check. */
		for (w = 0; w < 3 && cl_cpu_id() != (int)cpu; w++)
			sched_yield();
		if (cl_cpu_id() != (int)cpu)
			e = EAGAIN;
	}
	syscall(SYS_sched_setaffinity, 0, len, old);
	free(old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/*
 * Undo the mark: store back the count it replaced, unless a section that
 * read that count before the mark committed since (then the count is valid).
 * Nothing else was changed, so sections still in flight, which compare
 * against the old count, find the copy as they left it.
 */
CL_INLINE void cl__objcache_give_back(intptr_t *cnt, intptr_t n)
{
	intptr_t owned = CL__OBJCACHE_OWNED;

	CL_ATOMIC_CAS(cnt, &owned, n, CL_RELEASE, CL_RELAXED);
}

/* Abort every critical section running on @cpu (all CPUs for mm_cid). */
CL_INLINE int cl__objcache_fence(const struct cl_objcache *c, unsigned cpu)
{
	if (c->fence == CL_OBJCACHE_DRAIN_MIGRATE)
		return cl__objcache_visit_cpu(cpu);
	return cl__membarrier_rseq(c->index == (int)CL_RSEQ_INDEX_CPU_ID ? (int)cpu : -1);
}

/**
 * cl_objcache_drain_cpu() - move one CPU's cache to the depot.
 * @c: the cache.
 * @cpu: the CPU (for a CL_OBJCACHE_MM_CID cache: the concurrency ID), below
 *	the number of possible CPUs.
 *
 * Safe while threads run on @cpu and use the cache:
 *	n = xchg(count[cpu], OWNED);  fence(cpu);          (header comment)
 *	while (count[cpu] != OWNED) { n = xchg(count[cpu], OWNED); fence(cpu); }
 *	depot += items[cpu][0, n);  count[cpu] = 0;
 * While the copy is owned, allocs and frees on @cpu use the depot. Use it
 * for a CPU a program stops using (hotplug, affinity change), or before
 * reading exact statistics.
 *
 * Context: any thread; drains are serialised. Costs a membarrier system
 * call (an IPI to @cpu) or, without it, two affinity changes of the caller.
 * Return: the number of objects moved (>= 0), or -1 with errno EINVAL (NULL
 * @c, @cpu out of range), ENOSYS (mm_cid cache and no membarrier RSEQ
 * fence), or the errno of sched_setaffinity when the caller cannot run on
 * @cpu (e.g. EINVAL: not in its cpuset); the cache is unchanged then.
 */
CL_INLINE int cl_objcache_drain_cpu(struct cl_objcache *c, int cpu)
{
	enum cl_rseq_index idx;
	intptr_t *cnt, n, owned = CL__OBJCACHE_OWNED;
	void **its;

	if (c == NULL || cpu < 0 || (unsigned)cpu >= c->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	if (c->fence == CL_OBJCACHE_DRAIN_NONE) {
		errno = ENOSYS;
		return -1;
	}
	idx = (enum cl_rseq_index)c->index;
	cnt = cl__objcache_count(c, (unsigned)cpu);
	its = cl__objcache_items(c, (unsigned)cpu);
	pthread_mutex_lock(&c->drain_lock);
	if (c->fence == CL_OBJCACHE_DRAIN_LOCK) {
		/* Fallback operations take the count's striped lock: so does this. */
		do {
			n = CL_ATOMIC_LOAD(cnt, CL_RELAXED);
		} while (n > 0 && cl_rseq_cmpstore(idx, cnt, n, owned, cpu) != CL_RSEQ_OK);
	} else {
		n = CL_ATOMIC_LOAD(cnt, CL_RELAXED) > 0 ? CL_ATOMIC_XCHG(cnt, owned, CL_SEQ_CST) : 0;
		while (n > 0) {
			if (cl__objcache_fence(c, (unsigned)cpu) != 0) {
				int e = errno;

				cl__objcache_give_back(cnt, n);
				pthread_mutex_unlock(&c->drain_lock);
				errno = e;
				return -1;
			}
			if (CL_ATOMIC_LOAD(cnt, CL_ACQUIRE) == owned)
				break;
			/* A section committed over the mark before the fence: again. */
			n = CL_ATOMIC_XCHG(cnt, owned, CL_SEQ_CST);
		}
		if (n == 0) /* emptied before the mark: give back 0 */
			cl__objcache_give_back(cnt, 0);
		if (n < 0) /* cannot happen: drains are serialised */
			n = 0;
	}
	if (n > 0) {
		pthread_mutex_lock(&c->lock);
		cl__objcache_deposit(c, its, (size_t)n);
		c->nr_drains++;
		c->nr_drained += (size_t)n;
		pthread_mutex_unlock(&c->lock);
		if (c->fence == CL_OBJCACHE_DRAIN_LOCK)
			(void)cl_rseq_cmpstore(idx, cnt, owned, 0, cpu);
		else
			CL_ATOMIC_STORE(cnt, 0, CL_RELEASE);
	} else {
		pthread_mutex_lock(&c->lock);
		c->nr_drains++;
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->drain_lock);
	return (int)n;
}

/**
 * cl_objcache_stats() - counters and sizes of a cache.
 * @c: the cache.
 * @st: filled in.
 *
 * Context: any thread, concurrently with everything but destroy; the
 * per-CPU counts are read without stopping the CPUs (see
 * struct cl_objcache_stats).
 * Return: 0, or -1 with errno EINVAL (NULL @c or @st).
 */
/* The function has the struct's name (the fixed API); g++ -Wshadow objects
 * that it hides the struct's implicit constructor. C++ callers write
 * `struct cl_objcache_stats st;`. */
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
CL_INLINE int cl_objcache_stats(struct cl_objcache *c, struct cl_objcache_stats *st)
{
	size_t cached;

	if (c == NULL || st == NULL) {
		errno = EINVAL;
		return -1;
	}
	memset(st, 0, sizeof(*st));
	st->obj_size = c->obj_size;
	st->align = c->align;
	st->per_cpu_capacity = (unsigned)c->cap;
	st->batch = c->batch;
	st->nr_cpus = c->nr_cpus;
	st->index = c->index;
	st->drain_fence = c->fence;
	pthread_mutex_lock(&c->lock);
	cached = cl__objcache_cached(c);
	st->nr_objects = c->nr_objects;
	st->nr_slabs = c->nr_slabs;
	st->nr_depot = c->nr_depot;
	st->nr_refills = c->nr_refills;
	st->nr_spills = c->nr_spills;
	st->nr_direct = c->nr_direct;
	st->nr_drains = c->nr_drains;
	st->nr_drained = c->nr_drained;
	pthread_mutex_unlock(&c->lock);
	st->nr_cached = cached;
	st->nr_out = st->nr_objects >= st->nr_depot + cached ? st->nr_objects - st->nr_depot - cached
							      : 0;
	return 0;
}
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_H */
