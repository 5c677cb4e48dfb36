/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/ranges.h - the range allocator: mapping a range, first fit of an
 * object at the same offset of every slice, finding the object of an
 * address.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_RANGES_H
#define CACHELOCAL_PERCPU_RANGES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../compiler.h"
#include "../sys.h"
#include "numa.h"

CL_BEGIN_DECLS

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


CL_INLINE size_t cl__percpu_align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

CL_INLINE int cl__percpu_is_pow2(size_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
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
	if (pool->cpu_node)
		cl__percpu_numa_bind(pool, base);
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

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_RANGES_H */
