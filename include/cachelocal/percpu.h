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
 */
#ifndef CACHELOCAL_PERCPU_H
#define CACHELOCAL_PERCPU_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compiler.h"
#include "config.h"
#include "internal/bitmap.h"
#include "internal/fork.h"
#include "sys.h"
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

/* /proc/self/pagemap entries read at once when clearing reused memory. */
#define CL__PERCPU_PAGEMAP_WINDOW 8192u

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

/* One live object: offset in every slice and rounded size. */
struct cl__percpu_obj {
	size_t off, size;
};

/* One mapping of nr_cpus x stride bytes. Bookkeeping lives outside it. */
struct cl__percpu_range {
	char *base;                  /* CPU 0's slice; aligned to the stride */
	struct cl__percpu_obj *objs; /* live objects, sorted by offset */
	size_t nr_objs, cap_objs;
	size_t used;                 /* sum of live sizes */
	size_t tail;                 /* end of the highest live object */
	size_t hwm;                  /* bytes at or above never allocated: zero everywhere */
};

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

/*
 * cl_percpu_ptr_stride(p, cpu, stride) - CPU cpu's copy of the per-CPU object
 * whose CPU 0 address is p, in a pool of that stride. Same type as p; each
 * argument evaluated once; no memory access.
 */
#define cl_percpu_ptr_stride(p, cpu, stride) \
	((CL__PERCPU_PTR_TYPE(p))cl__percpu_ptr((p), (unsigned)(cpu), (size_t)(stride)))

/*
 * cl_percpu_ptr(p, cpu) - CPU cpu's copy, for pools of the default stride
 * (CL_PERCPU_STRIDE, a compile-time constant: one shift and add).
 */
#define cl_percpu_ptr(p, cpu) cl_percpu_ptr_stride(p, cpu, CL_PERCPU_STRIDE)

/*
 * CL_SIBLING(ptr, T, from, to) - from a pointer to member `from` of a T (a
 * combined per-CPU object), the address of its member `to` (same CPU's copy).
 */
#define CL_SIBLING(ptr, T, from, to) (&cl_container_of((ptr), T, from)->to)

/* ---- private helpers (called with pool->lock held) ---- */

CL_INLINE size_t cl__percpu_align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

CL_INLINE int cl__percpu_is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

/*
 * Clear (and check) one piece [lo, hi) of CPU cpu's copy of an object:
 * returns 1 when check found a byte that is neither 0 nor CL_PERCPU_POISON.
 */
CL_INLINE int cl__percpu_fill_piece(char *lo, size_t n, int byte, int check)
{
	int damaged = 0;

	if (check) {
		const unsigned char *b = (const unsigned char *)lo;

		for (size_t k = 0; k < n; k++) {
			if (b[k] != 0 && b[k] != CL_PERCPU_POISON) {
				damaged = 1;
				break;
			}
		}
	}
	memset(lo, byte, n);
	return damaged;
}

/*
 * cl__percpu_fill_scan() - cl__percpu_fill() through PAGEMAP_SCAN: one ioctl
 * over the object's span in every slice returns the populated page runs
 * (present or swapped, not the shared zero page); only the copies lying in
 * them are examined, so the cost follows the CPUs that touched the memory,
 * not the pool's CPU count. Returns 0 and sets *bad, or -1 when the kernel
 * has no PAGEMAP_SCAN (before 6.7): the caller then reads pagemap.
 */
CL_INLINE int cl__percpu_fill_scan(struct cl_percpu_pool *pool, const struct cl__percpu_range *r,
				   int fd, size_t off, size_t len, int byte, int check, size_t *bad)
{
	const uintptr_t base = (uintptr_t)r->base, stride = pool->stride, pg = pool->page_size;
	const uintptr_t end = base + (uintptr_t)(pool->nr_cpus - 1) * stride + off + len;
	struct cl__page_region v[32];
	struct cl__pm_scan_arg a;
	long last_bad = -1;
	long n;

	memset(&a, 0, sizeof(a));
	/* The kernel fills v[] through a.vec: tools that do not know this ioctl
	 * (valgrind 3.19) see only the argument struct written, so v[] starts
	 * defined here (768 bytes next to a system call). */
	memset(v, 0, sizeof(v));
	a.size = sizeof(a);
	a.start = (base + off) & ~(uint64_t)(pg - 1);
	a.end = (end + pg - 1) & ~(uint64_t)(pg - 1);
	a.vec = (uint64_t)(uintptr_t)v;
	a.vec_len = sizeof(v) / sizeof(v[0]);
	a.category_inverted = CL__PAGE_IS_PFNZERO; /* not the zero page ... */
	a.category_mask = CL__PAGE_IS_PFNZERO;
	a.category_anyof_mask = CL__PAGE_IS_PRESENT | CL__PAGE_IS_SWAPPED; /* ... and populated */
	a.return_mask = CL__PAGE_IS_PRESENT | CL__PAGE_IS_SWAPPED;
	*bad = 0;
	for (;;) {
		n = ioctl(fd, CL__PAGEMAP_SCAN, &a);
		if (n < 0)
			return -1;
		for (long i = 0; i < n; i++) {
			/* CPUs whose copy [base + c*stride + off, + len) meets [s, e). */
			uintptr_t s = (uintptr_t)v[i].start, e = (uintptr_t)v[i].end;
			uintptr_t c = s - base >= off + len ? (s - base - off - len) / stride + 1 : 0;

			for (; c < pool->nr_cpus && base + c * stride + off < e; c++) {
				uintptr_t lo = base + c * stride + off, hi = lo + len;

				lo = lo > s ? lo : s;
				hi = hi < e ? hi : e;
				if (lo >= hi)
					continue;
				CL_INJECT(40);
				if (cl__percpu_fill_piece((char *)lo, hi - lo, byte, check) &&
				    (long)c != last_bad) {
					last_bad = (long)c;
					(*bad)++;
				}
			}
		}
		if ((size_t)n < a.vec_len || a.walk_end >= a.end)
			return 0;
		a.start = a.walk_end;
	}
}

/*
 * cl__percpu_fill() - on every CPU's copy of [off, off + len) of range r,
 * set to byte the parts lying in populated (present or swapped) pages; the
 * rest reads as zero and stays unpopulated. With damaged != NULL, first count
 * the copies holding a byte that is neither 0 nor CL_PERCPU_POISON.
 * Returns the number of such copies.
 */
CL_INLINE size_t cl__percpu_fill(struct cl_percpu_pool *pool, const struct cl__percpu_range *r,
				 size_t off, size_t len, int byte, int check)
{
	const size_t pg = pool->page_size, first = off / pg, np = (off + len - 1) / pg - first + 1;
	const size_t win_max = CL__PERCPU_PAGEMAP_WINDOW;
	uint64_t *win = NULL;
	size_t win_lo = 0, win_n = 0, bad = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd >= 0 && cl__percpu_fill_scan(pool, r, fd, off, len, byte, check, &bad) == 0) {
		close(fd);
		return bad;
	}
	if (fd >= 0) {
		/* Kept in the pool: a malloc per call would churn allocator caches. */
		if (!pool->pagemap_buf)
			pool->pagemap_buf = (uint64_t *)malloc(win_max * sizeof(uint64_t));
		win = pool->pagemap_buf;
	}
	for (unsigned cpu = 0; cpu < pool->nr_cpus; cpu++) {
		char *copy = r->base + (size_t)cpu * pool->stride;
		size_t vpn = (size_t)((uintptr_t)copy / pg) + first;
		int damaged = 0;

		CL_INJECT(40);
		for (size_t j = 0; j < np; j++) {
			size_t lo = j == 0 ? off : (first + j) * pg;
			size_t hi = (first + j + 1) * pg < off + len ? (first + j + 1) * pg : off + len;
			int populated = 1; /* unknown counts as populated: always safe */

			if (win && (vpn + j < win_lo || vpn + j >= win_lo + win_n)) {
				/* Read ahead over the following CPUs' copies too. */
				size_t want = pool->stride / pg * (pool->nr_cpus - cpu);
				ssize_t got;

				want = want < win_max ? want : win_max;
				win_lo = vpn + j;
				win_n = 0;
				if (lseek(fd, (off_t)(win_lo * sizeof(uint64_t)), SEEK_SET) != (off_t)-1) {
					got = read(fd, win, want * sizeof(uint64_t));
					win_n = got > 0 ? (size_t)got / sizeof(uint64_t) : 0;
				}
			}
			/* pagemap bit 63: present, bit 62: swapped. */
			if (win && vpn + j >= win_lo && vpn + j < win_lo + win_n)
				populated = (win[vpn + j - win_lo] >> 62) != 0;
			if (!populated)
				continue;
			damaged |= cl__percpu_fill_piece(copy + lo, hi - lo, byte, check && !damaged);
		}
		bad += (size_t)damaged;
	}
	if (fd >= 0)
		close(fd);
	return bad;
}

/* Map one more range; its index, or -1 (ENOMEM). */
CL_INLINE long cl__percpu_add_range(struct cl_percpu_pool *pool)
{
	const size_t len = (size_t)pool->nr_cpus * pool->stride;
	struct cl__percpu_range *r;
	char *map, *base;

	if (pool->nr_ranges == pool->cap_ranges) {
		size_t cap = pool->cap_ranges ? pool->cap_ranges * 2 : 4;
		struct cl__percpu_range *nr = (struct cl__percpu_range *)realloc(pool->ranges, cap * sizeof(*nr));

		if (!nr)
			return -1;
		pool->ranges = nr;
		pool->cap_ranges = cap;
	}
	/* Over-map by one stride, then trim so that CPU 0's slice is stride-aligned. */
	map = (char *)mmap(NULL, len + pool->stride, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | CL__MAP_ANONYMOUS | CL__MAP_NORESERVE, -1, 0);
	if (map == (char *)MAP_FAILED)
		return -1;
	base = (char *)cl__percpu_align_up((size_t)(uintptr_t)map, pool->stride);
	if (base != map)
		munmap(map, (size_t)(base - map));
	if (base + len != map + len + pool->stride)
		munmap(base + len, (size_t)(map + len + pool->stride - (base + len)));
	/* A transparent huge page would span several CPUs' slices and back all
	 * of them on the first write of one (THP "always"): keep base pages. */
	madvise(base, len, CL__MADV_NOHUGEPAGE);
	if (pool->cpu_node) {
		const unsigned nbits = pool->max_node + 1;
		unsigned long *mask = cl__bitmap_alloc(nbits);

		for (unsigned cpu = 0; mask && cpu < pool->nr_cpus; cpu++) {
			int node = pool->cpu_node[cpu];
			long rc;

			if (node < 0)
				continue;
			cl__bitmap_zero(mask, nbits);
			cl__bitmap_set(mask, (unsigned)node);
			/* maxnode counts the bits of every word, plus the kernel's off-by-one. */
			rc = syscall(SYS_mbind, base + (size_t)cpu * pool->stride, pool->stride,
				     CL__MPOL_PREFERRED, mask,
				     (unsigned long)cl__bitmap_words(nbits) * CL__BITS_PER_LONG + 1, 0u);
			if (rc == 0)
				pool->stats.nr_numa_bound++;
			else
				pool->stats.nr_numa_failed++;
		}
		free(mask);
	}
	r = &pool->ranges[pool->nr_ranges];
	memset(r, 0, sizeof(*r));
	r->base = base;
	pool->stats.nr_ranges++;
	pool->stats.bytes_mapped += len;
	return (long)pool->nr_ranges++;
}

/* First fit of size bytes aligned to align in range r: the offset and the
 * index to insert at (*at), or (size_t)-1. */
CL_INLINE size_t cl__percpu_fit(const struct cl_percpu_pool *pool, const struct cl__percpu_range *r,
				size_t size, size_t align, size_t *at)
{
	size_t prev = 0, o;

	/* Holes below the tail can only help if they add up to size. */
	if (r->tail - r->used >= size) {
		for (size_t i = 0; i < r->nr_objs; i++) {
			o = cl__percpu_align_up(prev, align);
			if (o + size <= r->objs[i].off) {
				*at = i;
				return o;
			}
			prev = r->objs[i].off + r->objs[i].size;
		}
	}
	o = cl__percpu_align_up(r->tail, align);
	if (o + size <= pool->stride) {
		*at = r->nr_objs;
		return o;
	}
	return (size_t)-1;
}

/* The range holding CPU 0 address p, or NULL. */
CL_INLINE struct cl__percpu_range *cl__percpu_find_range(const struct cl_percpu_pool *pool,
							  const void *p)
{
	uintptr_t a = (uintptr_t)p;

	for (size_t i = 0; i < pool->nr_ranges; i++) {
		uintptr_t b = (uintptr_t)pool->ranges[i].base;

		if (a >= b && a - b < pool->stride)
			return &pool->ranges[i];
	}
	return NULL;
}

/* 1 if p lies anywhere in one of the pool's ranges (any CPU's slice). */
CL_INLINE int cl__percpu_in_pool(const struct cl_percpu_pool *pool, const void *p)
{
	const size_t len = (size_t)pool->nr_cpus * pool->stride;

	for (size_t i = 0; i < pool->nr_ranges; i++) {
		uintptr_t b = (uintptr_t)pool->ranges[i].base;

		if ((uintptr_t)p >= b && (uintptr_t)p - b < len)
			return 1;
	}
	return 0;
}

/* Index of the object at offset off in r, or -1. */
CL_INLINE long cl__percpu_find_obj(const struct cl__percpu_range *r, size_t off)
{
	size_t lo = 0, hi = r->nr_objs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->objs[mid].off == off)
			return (long)mid;
		if (r->objs[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

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
							    const struct cl_topology *topo)
{
	const size_t stride = attr && attr->stride ? attr->stride : (size_t)CL_PERCPU_STRIDE;
	const unsigned nr_cpus = attr && attr->max_nr_cpus ? attr->max_nr_cpus : cl_nr_possible_cpus();
	const unsigned flags = attr ? attr->flags : 0;
	long pg = sysconf(_SC_PAGESIZE);
	struct cl_percpu_pool *pool;

	if (pg <= 0)
		pg = 4096;
	if (!cl__percpu_is_pow2(stride) || stride < (size_t)pg || stride > CL_PERCPU_STRIDE_MAX ||
	    nr_cpus == 0 || nr_cpus > CL_MAX_CPUS || (flags & ~CL__PERCPU_FLAGS) ||
	    (size_t)nr_cpus > ((size_t)-1 - stride) / stride) {
		errno = EINVAL;
		return NULL;
	}
	pool = (struct cl_percpu_pool *)calloc(1, sizeof(*pool));
	if (!pool) {
		errno = ENOMEM;
		return NULL;
	}
	pool->stride = stride;
	pool->page_size = (size_t)pg;
	pool->nr_cpus = nr_cpus;
	pool->flags = flags;
	if (flags & CL_PERCPU_NUMA) {
		struct cl_topology own;
		const struct cl_topology *t = topo;
		unsigned nodes = 0, c;
		int first = -1;

		if (!t) {
			if (cl_topology_load(&own, NULL) != 0) {
				free(pool);
				errno = ENOMEM;
				return NULL;
			}
			t = &own;
		}
		pool->cpu_node = (int *)malloc(sizeof(int) * nr_cpus);
		for (c = 0; pool->cpu_node && c < nr_cpus; c++) {
			int node = c < t->nr_cpu_ids && t->cpu[c].possible ? t->cpu[c].node : -1;

			pool->cpu_node[c] = node;
			if (node < 0)
				continue;
			if ((unsigned)node > pool->max_node)
				pool->max_node = (unsigned)node;
			if (first < 0)
				first = node;
			else if (node != first)
				nodes = 2;
		}
		/* Count the distinct nodes only when there is more than one. */
		if (pool->cpu_node && nodes) {
			unsigned char *seen = (unsigned char *)calloc(pool->max_node + 1, 1);

			nodes = 0;
			for (c = 0; seen && c < nr_cpus; c++)
				if (pool->cpu_node[c] >= 0 && !seen[pool->cpu_node[c]]++)
					nodes++;
			free(seen);
		}
		if (t == &own)
			cl_topology_free(&own);
		if (!pool->cpu_node) {
			free(pool);
			errno = ENOMEM;
			return NULL;
		}
		if (nodes < 2) { /* one node: nothing to bind */
			free(pool->cpu_node);
			pool->cpu_node = NULL;
			nodes = 0;
		}
		pool->stats.numa_nodes = nodes;
	}
	pthread_mutex_init(&pool->lock, NULL);
	cl__fork_register(&pool->fork_reg, &pool->lock, NULL);
	return pool;
}

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
CL_INLINE struct cl_percpu_pool *cl_percpu_pool_create(const struct cl_percpu_pool_attr *attr)
{
	return cl_percpu_pool_create_topo(attr, NULL);
}

/**
 * cl_percpu_pool_nr_cpus() - how many CPUs have a copy in this pool.
 * @pool: the pool.
 *
 * Context: any thread.
 * Return: max_nr_cpus as resolved at create, or 0 with errno EINVAL (NULL pool).
 */
CL_INLINE unsigned cl_percpu_pool_nr_cpus(const struct cl_percpu_pool *pool)
{
	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	return pool->nr_cpus;
}

/**
 * cl_percpu_pool_stride() - bytes between two CPUs' copies in this pool.
 * @pool: the pool.
 *
 * Context: any thread.
 * Return: the stride, or 0 with errno EINVAL (NULL pool).
 */
CL_INLINE size_t cl_percpu_pool_stride(const struct cl_percpu_pool *pool)
{
	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	return pool->stride;
}

/**
 * cl_percpu_pool_stats() - copy the pool's counters.
 * @pool: the pool.
 * @out: filled in.
 *
 * Context: any thread; takes the pool lock.
 * Return: 0, or -1 with errno EINVAL (NULL pool or out).
 */
CL_INLINE int cl_percpu_pool_stats(struct cl_percpu_pool *pool, struct cl_percpu_stats *out)
{
	if (!pool || !out) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&pool->lock);
	*out = pool->stats;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

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
CL_INLINE void *cl_percpu_alloc(struct cl_percpu_pool *pool, size_t size, size_t align)
{
	struct cl__percpu_range *r = NULL;
	size_t off = (size_t)-1, at = 0, i;
	void *ret;

	if (!pool || size == 0 || size > pool->stride || !cl__percpu_is_pow2(align) ||
	    align > pool->stride) {
		errno = EINVAL;
		return NULL;
	}
	size = cl__percpu_align_up(size, CL_PERCPU_MIN_ALIGN);
	if (align < CL_PERCPU_MIN_ALIGN)
		align = CL_PERCPU_MIN_ALIGN;
	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->nr_ranges; i++) {
		r = &pool->ranges[i];
		if (pool->stride - r->used < size)
			continue;
		off = cl__percpu_fit(pool, r, size, align, &at);
		if (off != (size_t)-1)
			break;
	}
	if (off == (size_t)-1) {
		long idx = cl__percpu_add_range(pool);

		if (idx < 0) {
			pthread_mutex_unlock(&pool->lock);
			errno = ENOMEM;
			return NULL;
		}
		r = &pool->ranges[idx];
		off = 0;
		at = 0;
	}
	if (r->nr_objs == r->cap_objs) {
		size_t cap = r->cap_objs ? r->cap_objs * 2 : 16;
		struct cl__percpu_obj *no = (struct cl__percpu_obj *)realloc(r->objs, cap * sizeof(*no));

		if (!no) {
			pthread_mutex_unlock(&pool->lock);
			errno = ENOMEM;
			return NULL;
		}
		r->objs = no;
		r->cap_objs = cap;
	}
	memmove(&r->objs[at + 1], &r->objs[at], (r->nr_objs - at) * sizeof(r->objs[0]));
	r->objs[at].off = off;
	r->objs[at].size = size;
	r->nr_objs++;
	r->used += size;
	if (off + size > r->tail)
		r->tail = off + size;
	/* Bytes below the high-water mark may hold old data or poison: clear them. */
	if (off < r->hwm) {
		size_t len = (off + size < r->hwm ? off + size : r->hwm) - off;
		size_t bad = cl__percpu_fill(pool, r, off, len, 0, (pool->flags & CL_PERCPU_ROBUST) != 0);

		if (bad) {
			pool->stats.nr_poison_damaged++;
			fprintf(stderr, "cachelocal: percpu pool %p: object %p (%zu bytes) was written after free on %zu CPU(s)\n",
				(void *)pool, (void *)(r->base + off), size, bad);
		}
	}
	if (off + size > r->hwm)
		r->hwm = off + size;
	pool->stats.nr_live++;
	pool->stats.bytes_live += size;
	pool->stats.nr_allocs++;
	/* r points into pool->ranges, which another allocator may realloc once
	 * the lock is dropped: compute the result while holding it. */
	ret = r->base + off;
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

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
CL_INLINE int cl_percpu_free(struct cl_percpu_pool *pool, void *p)
{
	struct cl__percpu_range *r;
	size_t off, size, gap_lo, gap_hi, lo, hi;
	const size_t pg = pool ? pool->page_size : 1;
	long idx = -1;

	if (!pool) {
		errno = EINVAL;
		return -1;
	}
	if (!p)
		return 0;
	pthread_mutex_lock(&pool->lock);
	r = cl__percpu_find_range(pool, p);
	if (r)
		idx = cl__percpu_find_obj(r, (size_t)((char *)p - r->base));
	if (idx < 0) {
		pool->stats.nr_bad_frees++;
		if (pool->flags & CL_PERCPU_ROBUST)
			fprintf(stderr, "cachelocal: percpu pool %p: free of %p rejected: %s\n", (void *)pool, p,
				r ? "not a live object (double free or interior pointer)"
				  : cl__percpu_in_pool(pool, p) ? "another CPU's copy (pass CPU 0's address)"
								: "not from this pool");
		pthread_mutex_unlock(&pool->lock);
		errno = EINVAL;
		return -1;
	}
	off = r->objs[idx].off;
	size = r->objs[idx].size;
	gap_lo = idx > 0 ? r->objs[idx - 1].off + r->objs[idx - 1].size : 0;
	gap_hi = (size_t)idx + 1 < r->nr_objs ? r->objs[idx + 1].off : pool->stride;
	memmove(&r->objs[idx], &r->objs[idx + 1], (r->nr_objs - (size_t)idx - 1) * sizeof(r->objs[0]));
	r->nr_objs--;
	r->used -= size;
	if (off + size == r->tail)
		r->tail = r->nr_objs ? r->objs[r->nr_objs - 1].off + r->objs[r->nr_objs - 1].size : 0;
	pool->stats.nr_live--;
	pool->stats.bytes_live -= size;
	pool->stats.nr_frees++;
	if (r->nr_objs == 0) {
		/* Empty range: drop every page of every CPU in one call. The
		 * high-water mark stays: a write after this free repopulates a
		 * page, and the next allocation below the mark must clear it (and
		 * report it in robust mode), which only costs the populated pages. */
		madvise(r->base, (size_t)pool->nr_cpus * pool->stride, CL__MADV_DONTNEED);
		pthread_mutex_unlock(&pool->lock);
		return 0;
	}
	/* Whole pages of the object that no live object shares: back to the kernel. */
	lo = cl__percpu_align_up(gap_lo, pg);
	if (lo < (off & ~(pg - 1)))
		lo = off & ~(pg - 1);
	hi = gap_hi & ~(pg - 1);
	if (hi > cl__percpu_align_up(off + size, pg))
		hi = cl__percpu_align_up(off + size, pg);
	if (lo < hi) {
		for (unsigned cpu = 0; cpu < pool->nr_cpus; cpu++)
			madvise(r->base + (size_t)cpu * pool->stride + lo, hi - lo, CL__MADV_DONTNEED);
	} else {
		lo = hi = off + size; /* nothing released */
	}
	/* Robust: poison what was not released (released pages read as zero). */
	if (pool->flags & CL_PERCPU_ROBUST) {
		if (off < lo)
			cl__percpu_fill(pool, r, off, (lo < off + size ? lo : off + size) - off, CL_PERCPU_POISON, 0);
		if (hi < off + size) {
			size_t from = hi > off ? hi : off;

			cl__percpu_fill(pool, r, from, off + size - from, CL_PERCPU_POISON, 0);
		}
	}
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

/**
 * cl_percpu_pool_report_leaks() - list the live objects of a pool.
 * @pool: the pool.
 * @out: where to print (one line per object, at most 32, then a total);
 *	NULL: count only.
 *
 * Context: any thread; takes the pool lock.
 * Return: the number of live objects (0 also for a NULL pool, errno EINVAL).
 */
CL_INLINE size_t cl_percpu_pool_report_leaks(struct cl_percpu_pool *pool, FILE *out)
{
	size_t n = 0;

	if (!pool) {
		errno = EINVAL;
		return 0;
	}
	pthread_mutex_lock(&pool->lock);
	for (size_t i = 0; i < pool->nr_ranges; i++) {
		const struct cl__percpu_range *r = &pool->ranges[i];

		for (size_t j = 0; j < r->nr_objs; j++, n++)
			if (out && n < 32)
				fprintf(out, "cachelocal: percpu pool %p: leaked object %p, %zu bytes per CPU\n",
					(void *)pool, (void *)(r->base + r->objs[j].off), r->objs[j].size);
	}
	if (out && n)
		fprintf(out, "cachelocal: percpu pool %p: %zu leaked object(s), %zu bytes per CPU\n",
			(void *)pool, n, pool->stats.bytes_live);
	pthread_mutex_unlock(&pool->lock);
	return n;
}

/**
 * cl_percpu_pool_destroy() - unmap every range and free the pool.
 * @pool: the pool; NULL is ignored.
 *
 * Live objects are released with it; in robust mode they are reported on
 * stderr first (cl_percpu_pool_report_leaks() gives the count beforehand).
 *
 * Context: no other thread may use the pool or any of its objects.
 */
CL_INLINE void cl_percpu_pool_destroy(struct cl_percpu_pool *pool)
{
	if (!pool)
		return;
	if (pool->flags & CL_PERCPU_ROBUST)
		cl_percpu_pool_report_leaks(pool, stderr);
	cl__fork_unregister(&pool->fork_reg);
	for (size_t i = 0; i < pool->nr_ranges; i++) {
		munmap(pool->ranges[i].base, (size_t)pool->nr_cpus * pool->stride);
		free(pool->ranges[i].objs);
	}
	free(pool->ranges);
	free(pool->cpu_node);
	free(pool->pagemap_buf);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_H */
