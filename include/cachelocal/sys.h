/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sys.h - the libc and kernel surface the headers use, available
 * under strict ISO modes (-std=c11 without _GNU_SOURCE) as well.
 *
 * A header-only library cannot define _GNU_SOURCE for its user: it comes too
 * late when the user included a system header first. So the few GNU/Linux
 * functions and constants cachelocal needs are reached through this header:
 * prototypes identical to glibc's are declared when glibc did not declare
 * them (a compatible redeclaration), and Linux ABI constants are given
 * cachelocal names that match the kernel's values on every supported arch.
 * Private: nothing here is API; names are cl__ / CL__.
 */
#ifndef CACHELOCAL_SYS_H
#define CACHELOCAL_SYS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "compiler.h"

CL_BEGIN_DECLS

/* glibc >= 2.29 has getcpu() (vDSO-backed): CPU and NUMA node in one call. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 29))
#define CL__HAVE_GETCPU 1
#else
#define CL__HAVE_GETCPU 0
#endif

#if !defined(__cplusplus)
#if !defined(__USE_GNU)
extern int sched_getcpu(void);
#if CL__HAVE_GETCPU
extern int getcpu(unsigned int *cpu, unsigned int *node);
#endif
#endif
#if !defined(__USE_MISC)
extern long int syscall(long int sysno, ...);
extern int madvise(void *addr, size_t len, int advice);
#endif
#if !defined(__USE_POSIX199309)
extern int clock_gettime(__clockid_t clock_id, struct timespec *tp);
#endif
#endif /* !__cplusplus */

/* Linux ABI constants (same value on x86_64, aarch64, ppc64, s390x). */
#ifdef MAP_ANONYMOUS
#define CL__MAP_ANONYMOUS MAP_ANONYMOUS
#else
#define CL__MAP_ANONYMOUS 0x20
#endif
#ifdef MAP_NORESERVE
#define CL__MAP_NORESERVE MAP_NORESERVE
#else
#define CL__MAP_NORESERVE CL__ARCH_MAP_NORESERVE /* arch/arch.h */
#endif
#define CL__MADV_DONTNEED 4
#define CL__MADV_DONTFORK 10
#define CL__MADV_DOFORK 11
#define CL__MADV_NOHUGEPAGE 15
#define CL__CLOCK_REALTIME 0
#define CL__CLOCK_MONOTONIC 1
/* mbind(2) mode: allocate on the given node when it has memory, else elsewhere. */
#define CL__MPOL_PREFERRED 1
/* futex(2) operations on a process-private word (FUTEX_PRIVATE_FLAG = 128). */
#define CL__FUTEX_WAIT_PRIVATE 128
#define CL__FUTEX_WAKE_PRIVATE 129
/* FUTEX_WAIT_BITSET (9) and FUTEX_WAKE_BITSET (10), process-private; the
 * wait's timeout is an absolute CLOCK_MONOTONIC time */
#define CL__FUTEX_WAIT_BITSET_PRIVATE 137
#define CL__FUTEX_WAKE_BITSET_PRIVATE 138
/* membarrier(2) commands. */
#define CL__MEMBARRIER_CMD_QUERY 0
#define CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED (1 << 3)
#define CL__MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED (1 << 4)
#define CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (1 << 7)
#define CL__MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ (1 << 8)
#define CL__MEMBARRIER_CMD_FLAG_CPU 1 /* the RSEQ fence on one CPU only */

/* Monotonic time in nanoseconds. Never fails on Linux. */
CL_INLINE unsigned long long cl__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CL__CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/*
 * PAGEMAP_SCAN (Linux >= 6.7): an ioctl on /proc/self/pagemap that returns
 * the runs of pages of an address range matching category masks, walking
 * only the page tables that exist. Layouts of <linux/fs.h>, which older
 * kernel headers lack.
 */
struct cl__page_region {
	uint64_t start, end, categories;
};

struct cl__pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

CL_STATIC_ASSERT(sizeof(struct cl__pm_scan_arg) == 96, "PAGEMAP_SCAN argument layout");
CL_STATIC_ASSERT(sizeof(struct cl__page_region) == 24, "PAGEMAP_SCAN region layout");

/* _IOWR('f', 16, struct pm_scan_arg) */
#define CL__PAGEMAP_SCAN \
	((3ul << 30) | ((unsigned long)sizeof(struct cl__pm_scan_arg) << 16) | ((unsigned long)'f' << 8) | 16ul)
#define CL__PAGE_IS_PRESENT (1u << 3)
#define CL__PAGE_IS_SWAPPED (1u << 4)
#define CL__PAGE_IS_PFNZERO (1u << 5)

CL_END_DECLS

#endif /* CACHELOCAL_SYS_H */
