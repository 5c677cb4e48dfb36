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
 *   fast     alloc = one buffer pop (cl_percpu_buf_pop), free = one buffer
 *            push (cl_percpu_buf_push) on this CPU's copy: an rseq
 *            critical section, no atomic instruction, no lock;
 *   slow     the cache is empty (alloc) or full (free): move a batch of
 *            half the capacity between it and the depot, a mutex-protected
 *            array; the depot carves new objects from a new slab when
 *            it runs dry.
 * The cache never writes into an object: free objects are tracked by
 * pointer arrays, so an object keeps its content from free to the next
 * alloc, and a new object is zero.
 *
 * Slabs: a slab holds the largest power of two of objects that fits in
 * CL__OBJCACHE_SLAB_BYTES (64 KiB), at least one: an object larger than
 * 64 KiB gets a slab of its own, a fresh anonymous mapping (zero without
 * being written, resident only where the program writes). A refill carves
 * at most one slab, so the first allocation of a cache makes at most
 * max(64 KiB, one object) of object memory resident, never a batch of
 * large objects (for objects above 32 KiB: at most 2 x object size, well
 * within 2 x object size x per-CPU capacity). Slabs of 64 KiB or less come from aligned_alloc() and
 * are zeroed.
 *
 * Bad frees (a pointer freed twice, or not from this cache): the fast path
 * stores any pointer in this CPU's cache without a check (no per-object
 * state is read or written there). Every pointer that reaches the depot
 * (a spill of a full cache, a drain, a free by a thread without the
 * per-CPU path) is checked against the slabs (the start of an object of
 * this cache) and against a bit per object that says whether it is already
 * in the depot. A pointer that fails either check is not stored (the depot
 * never holds more than the objects carved: it cannot overflow), counted in
 * stats.nr_bad_frees, and cl_objcache_free() returns -1 with EINVAL when
 * it is the pointer that call freed. Not detected:
 *  - a bad pointer while it sits in a CPU cache: the next alloc on that
 *    CPU hands it out (memory the cache does not own, or an object that
 *    now has two owners) before any check sees it;
 *  - a double free while both copies are in CPU caches (only the copy that
 *    reaches the depot second is refused), and a free of an object that is
 *    still in use by its owner (use after free);
 *  - cl_objcache_destroy() counts duplicates in CPU caches as free objects:
 *    after an undetected double free it may free slabs while an object is
 *    still in use.
 *
 * Fork: the cache's two mutexes are in the fork registry (atfork.h): a
 * fork() while another thread allocates, frees or drains waits for them
 * and the child gets a consistent depot it can allocate from and drain.
 * Objects a thread of the parent held at the fork (handed out or in flight
 * between the depot and a CPU cache) are out for good in the child.
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
 * Index (attr.index, an enum cl_rseq_index as for every per-CPU structure):
 * CPU number by default; CL_RSEQ_INDEX_MM_CID indexes the caches by the
 * kernel's concurrency ID (threads of a process with fewer threads than
 * CPUs then use fewer, warmer caches).
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
 *
 * Layout: this file holds the API (types, kernel-doc, declarations); the
 * bodies are in objcache/ (depot.h: slabs and depot; drain.h; lifecycle.h:
 * create, destroy, stats; alloc.h: the fast and slow paths), private and
 * included at the end of this file.
 */
#ifndef CACHELOCAL_OBJCACHE_H
#define CACHELOCAL_OBJCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "atfork.h"
#include "compiler.h"
#include "config.h"
#include "percpu.h"
#include "percpu_ops.h"

CL_BEGIN_DECLS


/* Objects per CPU cache when attr.per_cpu_capacity is 0. */
#define CL_OBJCACHE_DEFAULT_CAPACITY 64u
/* Largest attr.align. */
#define CL_OBJCACHE_MAX_ALIGN 4096u
/* Most objects moved to or from the depot at once (a stack array). */
#define CL__OBJCACHE_MOVE_MAX 128u
/* Bytes a slab holds at most, unless one object is larger (header comment). */
#define CL__OBJCACHE_SLAB_BYTES 65536u
/* Bytes of room in the pool object to place the count (objcache/lifecycle.h). */
#define CL__OBJCACHE_PLACE_ROOM 4096u
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
 * @index: which id indexes the per-CPU caches: CL_RSEQ_INDEX_CPU_ID (0, the
 *	default) or CL_RSEQ_INDEX_MM_CID.
 */
struct cl_objcache_attr {
	size_t obj_size;
	size_t align;
	unsigned int per_cpu_capacity;
	enum cl_rseq_index index;
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
 * @index: the index kind of the caches (attr.index).
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
 * @nr_bad_frees: pointers the depot refused: not an object of this cache,
 *	or an object already in the depot (a double free); see the header
 *	comment for what is detected.
 */
struct cl_objcache_stats {
	size_t obj_size, align;
	unsigned int per_cpu_capacity, batch, nr_cpus;
	enum cl_rseq_index index;
	int drain_fence;
	size_t nr_objects, nr_slabs, nr_depot, nr_cached, nr_out;
	size_t nr_refills, nr_spills, nr_direct, nr_drains, nr_drained;
	size_t nr_bad_frees;
};

/*
 * struct cl_objcache - opaque: use the functions. The first group is set at
 * create and read by every alloc and free; the depot group is written under
 * @lock, on its own false-sharing unit.
 */
struct cl_objcache {
	/* read-mostly: the fast path */
	intptr_t *cpu_count;    /* count when indexed by CPU number, else NULL */
	intptr_t *count;        /* CPU 0's copy of the per-CPU count */
	void **items;           /* CPU 0's copy of the per-CPU slots */
	size_t stride;          /* the pool's stride */
	intptr_t cap;           /* slots per copy */
	enum cl_rseq_index index;
	int fence;              /* enum cl_objcache_drain_fence */
	unsigned batch;         /* objects per refill / spill */
	unsigned nr_cpus;       /* copies */
	size_t obj_size, align;
	struct cl_percpu_pool *pool;
	void *pcpu;             /* the pool object: count (placed in it), then items */

	/* depot: under lock */
	pthread_mutex_t lock CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	size_t *depot;          /* free objects by number; room for every object carved */
	size_t nr_depot, cap_depot;
	uint64_t *in_depot;     /* bit per object number: in the depot */
	char **slabs;           /* in carving order: object n is in slabs[n >> slab_shift] */
	size_t *by_addr;        /* slab numbers sorted by address (pointer checks) */
	size_t nr_slabs, cap_slabs, objs_per_slab, slab_bytes;
	unsigned slab_shift;    /* objs_per_slab == 1 << slab_shift */
	int slab_mapped;        /* slabs are mmap()ed (one object above 64 KiB) */
	size_t nr_objects;
	size_t nr_refills, nr_spills, nr_direct, nr_drains, nr_drained, nr_bad_frees;
	pthread_mutex_t drain_lock; /* one drain at a time */
	struct cl_atfork fork_lock, fork_drain; /* both mutexes held across fork() */
};

/**
 * cl_objcache_create() - make an object cache.
 * @attr: object size (required), alignment, per-CPU capacity, index kind.
 *
 * Maps a per-CPU pool with one {count, items[capacity]} object; objects
 * themselves are carved on demand (slabs: header comment). Registers the
 * process for membarrier's RSEQ fence (once per process) to drain caches
 * later, and the cache's mutexes in the fork registry (atfork.h).
 *
 * Context: any thread; allocates.
 * Return: the cache, or NULL with errno EINVAL (NULL @attr, obj_size 0 or
 * above 2^40 (a quarter of SIZE_MAX where size_t is 32-bit), align not a power of two or above CL_OBJCACHE_MAX_ALIGN,
 * capacity that does not fit the pool's stride, unknown index kind) or ENOMEM.
 */
CL_INLINE struct cl_objcache *cl_objcache_create(const struct cl_objcache_attr *attr);

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
CL_INLINE int cl_objcache_destroy(struct cl_objcache *c);

/* The function has the struct's name (the fixed API); g++ -Wshadow objects
 * that it hides the struct's implicit constructor. C++ callers write
 * `struct cl_objcache_stats st;`. */
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
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
CL_INLINE int cl_objcache_stats(struct cl_objcache *c, struct cl_objcache_stats *st);
#if defined(__cplusplus) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/**
 * cl_objcache_alloc() - take an object.
 * @c: the cache.
 *
 * Fast path: one buffer pop on this CPU's cache, cl_percpu_buf_pop()
 * (pseudo-code: percpu_ops/pseudocode.h, buf_pop). Slow path (empty): a batch from the depot (under its mutex), carving a new
 * slab if it is empty.
 * The object is zero the first time it is handed out; afterwards it holds
 * what it held when it was freed.
 *
 * Context: any thread; not in a signal handler (the slow path takes a mutex).
 * Return: an object of attr.obj_size bytes, aligned; or NULL with errno
 * EINVAL (NULL @c) or ENOMEM. errno may change on success too.
 */
CL_ALWAYS_INLINE void *cl_objcache_alloc(struct cl_objcache *c);

/**
 * cl_objcache_free() - give an object back.
 * @c: the cache the object came from.
 * @obj: the object (NULL: nothing happens).
 *
 * Fast path: one buffer push on this CPU's cache, cl_percpu_buf_push()
 * (pseudo-code: percpu_ops/pseudocode.h, buf_push). Slow path (full): half the cache goes to the depot, then @obj is cached.
 * The object may be freed on another CPU than it was allocated on.
 *
 * Context: any thread; not in a signal handler. @obj must come from
 * cl_objcache_alloc(@c) and not be freed twice: the fast path does not
 * check it; a bad pointer is caught when it reaches the depot (header
 * comment: what is detected and what is not).
 * Return: 0 (@obj taken, or NULL @obj); -1 with errno EINVAL for a NULL @c
 * (nothing else happens), or when this call moved @obj to the depot and
 * the depot refused it (not an object of @c, or already free there;
 * counted in stats.nr_bad_frees). A bad pointer taken by the fast path
 * returns 0.
 */
CL_ALWAYS_INLINE int cl_objcache_free(struct cl_objcache *c, void *obj);

/**
 * cl_objcache_drain_cpu() - move one CPU's cache to the depot.
 * @c: the cache.
 * @cpu: the CPU (for a CL_RSEQ_INDEX_MM_CID cache: the concurrency ID), below
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
 * Pointers the depot refuses (double or foreign frees that sat in the
 * cache) are dropped and counted in stats.nr_bad_frees.
 *
 * Return: the number of objects moved (>= 0), or -1 with errno EINVAL (NULL
 * @c, @cpu out of range), ENOSYS (mm_cid cache and no membarrier RSEQ
 * fence), or the errno of sched_setaffinity when the caller cannot run on
 * @cpu (e.g. EINVAL: not in its cpuset); the cache is unchanged then.
 */
CL_INLINE int cl_objcache_drain_cpu(struct cl_objcache *c, int cpu);

CL_END_DECLS

/* The bodies, in dependency order (private; each one job). */
#include "objcache/depot.h"
#include "objcache/drain.h"
#include "objcache/lifecycle.h"
#include "objcache/alloc.h"

#endif /* CACHELOCAL_OBJCACHE_H */
