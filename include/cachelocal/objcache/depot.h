/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/objcache/depot.h - the shared side of a cache: the slabs objects are carved
 * from, the depot of free objects (under the cache's mutex) with the checks
 * of what comes back to it, and the addresses of one CPU's count and slots.
 *
 * Objects are numbered in carving order (slab number << slab_shift, plus the
 * place in the slab), so the depot keeps numbers and one bit per number says
 * "in the depot". A pointer coming back is turned into its number by a
 * binary search of the slabs sorted by address and a division by the object
 * size: only pointers that reach the depot pay it (a spill, a drain, a
 * direct free), never the per-CPU fast path.
 *
 * Part of objcache.h, the header to include: the API, its kernel-doc, the
 * types and the synchronization table are there. The cl__ names here are
 * not API. Included alone, this file includes objcache.h (which includes
 * every piece in order).
 */
#include "../objcache.h"

#ifndef CACHELOCAL_OBJCACHE_DEPOT_H
#define CACHELOCAL_OBJCACHE_DEPOT_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../atfork.h"
#include "../compiler.h"
#include "../percpu.h"
#include "../sys.h"

CL_BEGIN_DECLS

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

/* Object number @n's address. */
CL_INLINE void *cl__objcache_obj(const struct cl_objcache *c, size_t n)
{
	return c->slabs[n >> c->slab_shift] + (n & (c->objs_per_slab - 1)) * c->obj_size;
}

/* Index in by_addr of the last slab that starts at or below @a, or nr_slabs. */
CL_INLINE size_t cl__objcache_slab_below(const struct cl_objcache *c, uintptr_t a)
{
	size_t lo = 0, hi = c->nr_slabs;

	while (lo < hi) { /* first slab above a */
		size_t mid = lo + (hi - lo) / 2;

		if ((uintptr_t)c->slabs[c->by_addr[mid]] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : c->nr_slabs;
}

/* The number of the object at @p, or SIZE_MAX when @p is not the start of
 * an object of this cache. Under c->lock. */
CL_INLINE size_t cl__objcache_number(const struct cl_objcache *c, const void *p)
{
	uintptr_t a = (uintptr_t)p, off;
	size_t i = cl__objcache_slab_below(c, a), s, sz = c->obj_size;

	if (i == c->nr_slabs)
		return SIZE_MAX;
	s = c->by_addr[i];
	off = a - (uintptr_t)c->slabs[s];
	if (off >= c->slab_bytes)
		return SIZE_MAX;
	if ((sz & (sz - 1)) == 0) /* a power of two (the usual size): no division */
		return (off & (sz - 1)) != 0 ? SIZE_MAX
					     : (s << c->slab_shift) + (off >> __builtin_ctzll((unsigned long long)sz));
	if (off % sz != 0)
		return SIZE_MAX;
	return (s << c->slab_shift) + off / sz;
}

CL_INLINE int cl__objcache_bit(const uint64_t *bits, size_t n)
{
	return (int)(bits[n / 64] >> (n % 64)) & 1;
}

/* A new slab of slab_bytes, zeroed; NULL when out of memory. */
CL_INLINE char *cl__objcache_slab_new(const struct cl_objcache *c)
{
	char *slab;

	if (c->slab_mapped) { /* fresh pages are zero: nothing to write */
		void *m = mmap(NULL, c->slab_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | CL__MAP_ANONYMOUS,
			       -1, 0);

		return m == MAP_FAILED ? NULL : (char *)m;
	}
	slab = (char *)aligned_alloc(c->align, c->slab_bytes);
	if (slab != NULL)
		memset(slab, 0, c->slab_bytes);
	return slab;
}

/* Room for @total objects in the depot and its bitmap; 0, or -1. */
CL_INLINE int cl__objcache_depot_room(struct cl_objcache *c, size_t total)
{
	size_t nc = c->cap_depot ? 2 * c->cap_depot : total, old_words, words;
	size_t *d;
	uint64_t *b;

	if (total <= c->cap_depot)
		return 0;
	while (nc < total)
		nc *= 2;
	d = (size_t *)realloc(c->depot, nc * sizeof(*d));
	if (d == NULL)
		return -1;
	c->depot = d;
	old_words = (c->cap_depot + 63) / 64;
	words = (nc + 63) / 64;
	b = (uint64_t *)realloc(c->in_depot, words * sizeof(*b));
	if (b == NULL)
		return -1; /* cap_depot unchanged: the larger depot is only unused */
	memset(b + old_words, 0, (words - old_words) * sizeof(*b));
	c->in_depot = b;
	c->cap_depot = nc;
	return 0;
}

/* Carve one more slab into the depot; 0, or -1 (ENOMEM). Under c->lock. */
CL_INLINE int cl__objcache_grow(struct cl_objcache *c)
{
	size_t n = c->objs_per_slab, total = c->nr_objects + n, i, at, first;
	char *slab;

	if (c->nr_slabs == c->cap_slabs) {
		size_t nc = c->cap_slabs ? 2 * c->cap_slabs : 16;
		char **s = (char **)realloc(c->slabs, nc * sizeof(*s));
		size_t *o;

		if (s == NULL)
			return -1;
		c->slabs = s;
		o = (size_t *)realloc(c->by_addr, nc * sizeof(*o));
		if (o == NULL)
			return -1;
		c->by_addr = o;
		c->cap_slabs = nc;
	}
	if (cl__objcache_depot_room(c, total) != 0)
		return -1;
	slab = cl__objcache_slab_new(c);
	if (slab == NULL)
		return -1;
	at = cl__objcache_slab_below(c, (uintptr_t)slab);
	at = at == c->nr_slabs ? 0 : at + 1;
	memmove(c->by_addr + at + 1, c->by_addr + at, (c->nr_slabs - at) * sizeof(*c->by_addr));
	c->by_addr[at] = c->nr_slabs;
	c->slabs[c->nr_slabs++] = slab;
	/* Lowest address on top: handed out first. */
	first = c->nr_objects;
	for (i = 0; i < n; i++) {
		size_t k = first + n - 1 - i;

		c->depot[c->nr_depot++] = k;
		c->in_depot[k / 64] |= (uint64_t)1 << (k % 64);
	}
	c->nr_objects = total;
	return 0;
}

/*
 * Pointers back to the depot, each checked: the start of an object of this
 * cache, not in the depot already. Returns how many were refused (not
 * stored, counted in nr_bad_frees): the depot never holds an object twice,
 * so it never overflows. Under c->lock.
 */
CL_INLINE size_t cl__objcache_deposit(struct cl_objcache *c, void *const *objs, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		size_t k = cl__objcache_number(c, objs[i]);

		if (k == SIZE_MAX || cl__objcache_bit(c->in_depot, k)) {
			bad++;
			continue;
		}
		c->in_depot[k / 64] |= (uint64_t)1 << (k % 64);
		c->depot[c->nr_depot++] = k;
	}
	c->nr_bad_frees += bad;
	return bad;
}

/* Take the @n objects on top of the depot (n <= nr_depot) into @objs, the
 * top one last. Under c->lock. */
CL_INLINE void cl__objcache_withdraw(struct cl_objcache *c, void **objs, size_t n)
{
	size_t i, base = c->nr_depot - n;

	for (i = 0; i < n; i++) {
		size_t k = c->depot[base + i];

		c->in_depot[k / 64] &= ~((uint64_t)1 << (k % 64));
		objs[i] = cl__objcache_obj(c, k);
	}
	c->nr_depot = base;
}

/* Free everything create allocated (any subset of it). */
CL_INLINE void cl__objcache_release(struct cl_objcache *c)
{
	size_t i;
	int e = errno;

	/* -1 (EINVAL) for a registration create did not get to. */
	(void)cl_atfork_unregister(&c->fork_drain);
	(void)cl_atfork_unregister(&c->fork_lock);
	errno = e;
	for (i = 0; i < c->nr_slabs; i++) {
		if (c->slab_mapped)
			munmap(c->slabs[i], c->slab_bytes);
		else
			free(c->slabs[i]);
	}
	free(c->slabs);
	free(c->by_addr);
	free(c->depot);
	free(c->in_depot);
	if (c->pcpu)
		cl_percpu_free(c->pool, c->pcpu);
	if (c->pool)
		cl_percpu_pool_destroy(c->pool);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->drain_lock);
	free(c);
}

CL_END_DECLS

#endif /* CACHELOCAL_OBJCACHE_DEPOT_H */
