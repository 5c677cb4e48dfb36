/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu.h - per-CPU storage by stride, with co-allocation.
 *
 * A pool maps ranges of max_nr_cpus x stride bytes. CPU n's slice of a range
 * starts n x stride bytes after CPU 0's. An allocation reserves the same
 * offset in every slice and returns the address in CPU 0's slice; CPU n's
 * copy is that address plus n x stride, so reaching it is one multiply-add,
 * with no pointer array and no memory load (technique T5 in README.md):
 *
 *	struct pair { struct my_rq rq; _Alignas(64) struct my_se se; };
 *	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
 *	struct pair *p = cl_percpu_alloc(pool, sizeof(*p), _Alignof(struct pair));
 *	struct pair *mine = cl_percpu_ptr(p, cl_cpu_id());       // this CPU's copy
 *	struct my_se *se = CL_SIBLING(&mine->rq, struct pair, rq, se);
 *	cl_percpu_free(pool, p);                                 // CPU 0's address
 *
 * (cl_cpu_id() is in rseq.h; any CPU number below cl_percpu_pool_nr_cpus() works.)
 *
 * Memory: ranges are private anonymous MAP_NORESERVE mappings without
 * transparent huge pages (MADV_NOHUGEPAGE), so a page of a slice costs memory
 * only once some CPU writes it; a pool sized for 384 CPUs
 * and used by 2 costs the memory of 2. Objects of one CPU lie together, in
 * first-fit order, with no padding beyond the requested alignment (sizes are
 * rounded up to CL_PERCPU_MIN_ALIGN bytes). Memory is zero on every CPU at
 * allocation: never-used bytes are zero already; reused bytes are cleared on
 * the copies whose pages are populated (found with the PAGEMAP_SCAN ioctl,
 * whose cost follows the CPUs that touched them; before Linux 6.7 from the
 * pagemap entries; unpopulated copies stay unpopulated; without
 * /proc/self/pagemap every copy is cleared).
 * Pages left completely free by cl_percpu_free() are given back to the kernel
 * (MADV_DONTNEED) on every CPU.
 *
 * NUMA (CL_PERCPU_NUMA): each new range's slice of CPU n gets the
 * MPOL_PREFERRED policy for the node of CPU n (mbind syscall; no libnuma), so
 * its pages come from that node whichever thread touches them first. A no-op
 * when the CPUs of the pool span one node.
 *
 * Robust mode (CL_PERCPU_ROBUST): freed objects are poisoned
 * (CL_PERCPU_POISON) on every populated copy, a reused object whose poison
 * was overwritten is reported (write after free), every rejected free is
 * reported on stderr, and cl_percpu_pool_destroy() lists the leaked objects.
 * In every mode, a double free or a pointer the pool did not return is
 * rejected with EINVAL; the pool is never corrupted by a bad free.
 *
 * Fork: a child keeps a private copy of every range (plain private
 * anonymous memory) and may keep using its pools. The pool locks are taken
 * around fork() (the library's one fork registry, internal/fork.h, shared
 * with the cid domains) so the child never inherits a lock held by a thread
 * it does not have.
 *
 * Concurrency:
 *
 *	operation                       may run concurrently with
 *	cl_percpu_ptr*(), CL_SIBLING    everything (pure arithmetic)
 *	cl_percpu_alloc/free, stats     each other (pool mutex), on any thread
 *	cl_percpu_pool_destroy          nothing on that pool
 *
 * Accessing the copies is the caller's business: the pool does not
 * synchronise data, it only hands out offsets.
 *
 * Layout: this file holds the API (types, the addressing macros, kernel-doc
 * and declarations); the bodies are in percpu/ (numa.h, ranges.h: the range
 * allocator, residency.h: clearing reused memory, robust.h, pool.h,
 * alloc.h), private and included at the end of this file.
 */
#ifndef CACHELOCAL_PERCPU_H
#define CACHELOCAL_PERCPU_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler.h"
#include "config.h"
#include "internal/fork.h"
#include "topology.h"

CL_BEGIN_DECLS

/* ---- attributes ---- */

/* attr.flags bits */
#define CL_PERCPU_ROBUST 0x1u /* detect bad frees loudly, poison, report leaks */
#define CL_PERCPU_NUMA 0x2u   /* prefer each CPU's node for its slices */
#define CL__PERCPU_FLAGS (CL_PERCPU_ROBUST | CL_PERCPU_NUMA)

/* Largest stride a pool accepts (1 GiB). */
#define CL_PERCPU_STRIDE_MAX ((size_t)1 << 30)
/* Every object starts on this boundary and its size is rounded up to it. */
#define CL_PERCPU_MIN_ALIGN 8u
/* Byte written over freed objects in robust mode (the kernel's POISON_FREE). */
#define CL_PERCPU_POISON 0x6b

/* Annotation for pointers to CPU 0's copy of a per-CPU object (no effect). */
#define CL_PERCPU

/**
 * struct cl_percpu_pool_attr - how to build a pool; zero fields mean default.
 * @stride: bytes between two CPUs' copies; a power of two, >= the page size
 *	and <= CL_PERCPU_STRIDE_MAX. 0: CL_PERCPU_STRIDE (then cl_percpu_ptr()
 *	works; other strides need cl_percpu_ptr_stride()).
 * @max_nr_cpus: CPU ids 0..max_nr_cpus-1 get a copy. 0: cl_nr_possible_cpus().
 *	At most CL_MAX_CPUS.
 * @flags: CL_PERCPU_ROBUST, CL_PERCPU_NUMA.
 *
 * Exactly the three documented fields (a fixed API). The CPU-to-node map for CL_PERCPU_NUMA
 * is this machine's; cl_percpu_pool_create_topo() takes another one.
 */
struct cl_percpu_pool_attr {
	size_t stride;
	unsigned max_nr_cpus;
	unsigned flags;
};

/**
 * struct cl_percpu_stats - counters of one pool (cl_percpu_pool_stats()).
 * @nr_live: objects allocated and not yet freed.
 * @bytes_live: their size per CPU, after rounding to CL_PERCPU_MIN_ALIGN.
 * @nr_ranges: ranges mapped.
 * @bytes_mapped: virtual size of the ranges, all CPUs (not memory used).
 * @nr_allocs: successful allocations.
 * @nr_frees: successful frees.
 * @nr_bad_frees: frees rejected with EINVAL (double, foreign, interior).
 * @nr_poison_damaged: robust mode: reused objects found written after free.
 * @numa_nodes: nodes the pool binds slices to (0: binding off or one node).
 * @nr_numa_bound: slices given a node policy.
 * @nr_numa_failed: slices whose mbind failed (the slice still works).
 */
struct cl_percpu_stats {
	size_t nr_live, bytes_live;
	size_t nr_ranges, bytes_mapped;
	size_t nr_allocs, nr_frees, nr_bad_frees;
	size_t nr_poison_damaged;
	unsigned numa_nodes;
	size_t nr_numa_bound, nr_numa_failed;
};

struct cl__percpu_range; /* percpu/ranges.h */

/*
 * struct cl_percpu_pool - opaque: use the functions below. Every field is
 * protected by @lock except the constants (stride, nr_cpus, flags).
 */
struct cl_percpu_pool {
	pthread_mutex_t lock;
	size_t stride;
	size_t page_size;
	unsigned nr_cpus;
	unsigned flags;
	struct cl__percpu_range *ranges;
	size_t nr_ranges, cap_ranges;
	int *cpu_node;               /* CL_PERCPU_NUMA on >1 node: node of each CPU, else NULL */
	uint64_t *pagemap_buf;       /* CL__PERCPU_PAGEMAP_WINDOW entries, allocated on first reuse */
	unsigned max_node;
	struct cl_percpu_stats stats;
	struct cl__fork_entry fork_reg; /* lock held across fork() (internal/fork.h) */
};

/* ---- addressing (hot path) ---- */

/* The pointer type of p without top-level qualifiers (p may be a const member). */
#ifdef __cplusplus
#define CL__PERCPU_PTR_TYPE(p) decltype(+(p))
#else
#define CL__PERCPU_PTR_TYPE(p) CL_TYPEOF(p)
#endif

CL_ALWAYS_INLINE void *cl__percpu_ptr(const volatile void *p, unsigned cpu, size_t stride)
{
	return (void *)((const volatile char *)p + (size_t)cpu * stride);
}

/**
 * cl_percpu_ptr_stride() - index @cpu's copy of a per-CPU object.
 * @p: CPU 0's address of the object (what cl_percpu_alloc() returned).
 * @cpu: the index: a CPU number, or an mm_cid for mm_cid-indexed data.
 * @stride: bytes between two copies (the pool's stride).
 *
 * The one spelling of "copy i of p" in the library (percpu_ops.h uses it
 * too). Same type as @p; each argument evaluated once; no memory access.
 *
 * Context: any.
 * Return: @p + @cpu * @stride.
 */
#define cl_percpu_ptr_stride(p, cpu, stride) \
	((CL__PERCPU_PTR_TYPE(p))cl__percpu_ptr((p), (unsigned)(cpu), (size_t)(stride)))

/**
 * cl_percpu_ptr() - CPU @cpu's copy, in a pool of the default stride.
 * @p: CPU 0's address of the object.
 * @cpu: the index.
 *
 * CL_PERCPU_STRIDE is a compile-time constant: one shift and add.
 *
 * Context: any.
 * Return: cl_percpu_ptr_stride(@p, @cpu, CL_PERCPU_STRIDE).
 */
#define cl_percpu_ptr(p, cpu) cl_percpu_ptr_stride(p, cpu, CL_PERCPU_STRIDE)

/*
 * CL_SIBLING(ptr, T, from, to) - from a pointer to member `from` of a T (a
 * combined per-CPU object), the address of its member `to` (same CPU's copy).
 */
#define CL_SIBLING(ptr, T, from, to) (&cl_container_of((ptr), T, from)->to)

/* ---- pool ---- */

/**
 * cl_percpu_pool_create_topo() - cl_percpu_pool_create() with a given topology.
 * @attr: as for cl_percpu_pool_create().
 * @topo: the CPU-to-node map CL_PERCPU_NUMA binds by (e.g. a fake sysfs tree
 *	loaded with cl_topology_load()); NULL: this machine's, read from /sys.
 *	Only read during the call.
 *
 * Context: any thread; allocates; reads /sys when CL_PERCPU_NUMA and !topo.
 * Return: as cl_percpu_pool_create().
 */
CL_INLINE struct cl_percpu_pool *cl_percpu_pool_create_topo(const struct cl_percpu_pool_attr *attr,
							    const struct cl_topology *topo);

/**
 * cl_percpu_pool_create() - make a pool of per-CPU objects.
 * @attr: stride, CPU count and flags (see struct cl_percpu_pool_attr); NULL:
 *	all defaults (CL_PERCPU_STRIDE, possible CPUs, no flags).
 *
 * Maps nothing yet: the first allocation maps the first range. With
 * CL_PERCPU_NUMA, reads this machine's topology once.
 *
 * Context: any thread; allocates.
 * Return: the pool, or NULL with errno EINVAL (stride not a power of two,
 * below the page size or above CL_PERCPU_STRIDE_MAX; max_nr_cpus above
 * CL_MAX_CPUS, or possible CPUs above it when 0; unknown flags) or ENOMEM.
 */
CL_INLINE struct cl_percpu_pool *cl_percpu_pool_create(const struct cl_percpu_pool_attr *attr);

/**
 * cl_percpu_pool_nr_cpus() - how many CPUs have a copy in this pool.
 * @pool: the pool.
 *
 * Context: any thread.
 * Return: max_nr_cpus as resolved at create, or 0 with errno EINVAL (NULL pool).
 */
CL_INLINE unsigned cl_percpu_pool_nr_cpus(const struct cl_percpu_pool *pool);

/**
 * cl_percpu_pool_stride() - bytes between two CPUs' copies in this pool.
 * @pool: the pool.
 *
 * Context: any thread.
 * Return: the stride, or 0 with errno EINVAL (NULL pool).
 */
CL_INLINE size_t cl_percpu_pool_stride(const struct cl_percpu_pool *pool);

/**
 * cl_percpu_pool_stats() - copy the pool's counters.
 * @pool: the pool.
 * @out: filled in.
 *
 * Context: any thread; takes the pool lock.
 * Return: 0, or -1 with errno EINVAL (NULL pool or out).
 */
CL_INLINE int cl_percpu_pool_stats(struct cl_percpu_pool *pool, struct cl_percpu_stats *out);

/**
 * cl_percpu_alloc() - reserve one object in every CPU's slice.
 * @pool: the pool.
 * @size: bytes per CPU, 1..stride (rounded up to CL_PERCPU_MIN_ALIGN).
 * @align: power of two <= stride (objects are at least CL_PERCPU_MIN_ALIGN aligned).
 *
 * The object is zero on every CPU. Maps a new range when none has room.
 *
 * Context: any thread; takes the pool lock; may map memory and read
 * /proc/self/pagemap (cold path).
 * Return: CPU 0's copy (pass it to cl_percpu_ptr() and cl_percpu_free()), or
 * NULL with errno EINVAL (NULL pool, size 0 or above the stride, align 0, not
 * a power of two or above the stride) or ENOMEM (no range could be mapped).
 */
CL_INLINE void *cl_percpu_alloc(struct cl_percpu_pool *pool, size_t size, size_t align);

/**
 * cl_percpu_free() - give back an object on every CPU.
 * @pool: the pool that returned p.
 * @p: CPU 0's copy as returned by cl_percpu_alloc(); NULL does nothing.
 *
 * Pages left completely free are returned to the kernel on every CPU. In
 * robust mode the object is poisoned on every populated copy.
 *
 * Context: any thread; takes the pool lock. No other thread may use any copy
 * of the object any more.
 * Return: 0, or -1 with errno EINVAL (NULL pool; p not a live object of this
 * pool: double free, foreign pointer, interior pointer, another CPU's copy).
 * A rejected free changes nothing; in robust mode it is reported on stderr.
 */
CL_INLINE int cl_percpu_free(struct cl_percpu_pool *pool, void *p);

/**
 * cl_percpu_pool_report_leaks() - list the live objects of a pool.
 * @pool: the pool.
 * @out: where to print (one line per object, at most 32, then a total);
 *	NULL: count only.
 *
 * Context: any thread; takes the pool lock.
 * Return: the number of live objects (0 also for a NULL pool, errno EINVAL).
 */
CL_INLINE size_t cl_percpu_pool_report_leaks(struct cl_percpu_pool *pool, FILE *out);

/**
 * cl_percpu_pool_destroy() - unmap every range and free the pool.
 * @pool: the pool; NULL is ignored.
 *
 * Live objects are released with it; in robust mode they are reported on
 * stderr first (cl_percpu_pool_report_leaks() gives the count beforehand).
 *
 * Context: no other thread may use the pool or any of its objects.
 */
CL_INLINE void cl_percpu_pool_destroy(struct cl_percpu_pool *pool);

CL_END_DECLS

/* The bodies, in dependency order (private; each one job). */
#include "percpu/numa.h"
#include "percpu/ranges.h"
#include "percpu/residency.h"
#include "percpu/robust.h"
#include "percpu/pool.h"
#include "percpu/alloc.h"

#endif /* CACHELOCAL_PERCPU_H */
