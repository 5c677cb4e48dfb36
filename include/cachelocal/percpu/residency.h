/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu/residency.h - clearing (and in robust mode checking) a reused object
 * only on the copies whose pages are populated: PAGEMAP_SCAN, the pagemap
 * entries before Linux 6.7, every copy without /proc/self/pagemap.
 *
 * Part of percpu.h, the header to include: the API, its kernel-doc, the
 * types and the concurrency table are there. The cl__ names here are not
 * API; they run with the pool's lock held unless they say otherwise.
 * Included alone, this file includes percpu.h (which includes every piece
 * in order).
 */
#include "../percpu.h"

#ifndef CACHELOCAL_PERCPU_RESIDENCY_H
#define CACHELOCAL_PERCPU_RESIDENCY_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../compiler.h"
#include "../sys.h"
#include "ranges.h"

CL_BEGIN_DECLS

/* /proc/self/pagemap entries read at once when clearing reused memory. */
#define CL__PERCPU_PAGEMAP_WINDOW 8192u

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

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_RESIDENCY_H */
