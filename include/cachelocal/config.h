/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/config.h - every build-time knob, its default and its validation.
 *
 * Each knob can be overridden with -D on the compiler command line (or a
 * #define before the first cachelocal include). Every translation unit of a
 * program must see the same values: they change struct layouts.
 *
 *  knob                    default                       meaning
 *  CL_CACHELINE_SIZE       64                            alignment unit for grouping
 *  CL_FALSE_SHARING_SIZE   128 (x86_64, aarch64, ppc64)  distance that keeps two writers
 *                          256 (s390x), else 64          apart (adjacent-line prefetch)
 *  CL_PERCPU_STRIDE        65536                         bytes between two CPUs' copies
 *  CL_MAX_CPUS             4096                          largest CPU count a pool accepts
 *  CL_DEBUG                undefined                     turns CL_DEBUG_ASSERT() into assert(): undetectable misuse asserts (README "Bad input")
 *  CL_NO_RSEQ_ASM          undefined                     force the portable (atomic) path
 *  CL_INJECT(n)            nothing                       test hook at numbered race points
 *  CL_RUNTIME_CLOCK(ns)    (ns)                          test hook: the M:N runtime's clock reading
 *  CL_RUNTIME_TICK_CLOCK(ns) (ns)                        test hook: the M:N runtime's tick clock reading
 *
 * Never derived from std::hardware_destructive_interference_size or
 * __GCC_DESTRUCTIVE_SIZE: those change with -mtune and compiler version.
 */
#ifndef CACHELOCAL_CONFIG_H
#define CACHELOCAL_CONFIG_H

/* ---- architecture: CL_ARCH_* (arch/arch.h, the one place that tests the target) ---- */
#include "arch/arch.h"

/* ---- line and guard sizes ---- */
#ifndef CL_CACHELINE_SIZE
#define CL_CACHELINE_SIZE 64
#endif

#ifndef CL_FALSE_SHARING_SIZE
#define CL_FALSE_SHARING_SIZE CL__ARCH_FALSE_SHARING_SIZE
#endif

#if !(CL_CACHELINE_SIZE >= 16 && (CL_CACHELINE_SIZE & (CL_CACHELINE_SIZE - 1)) == 0)
#error "cachelocal: CL_CACHELINE_SIZE must be a power of two >= 16"
#endif
#if !(CL_CACHELINE_SIZE <= 4096)
#error "cachelocal: CL_CACHELINE_SIZE must be <= 4096"
#endif
#if !((CL_FALSE_SHARING_SIZE & (CL_FALSE_SHARING_SIZE - 1)) == 0)
#error "cachelocal: CL_FALSE_SHARING_SIZE must be a power of two"
#endif
#if !(CL_FALSE_SHARING_SIZE >= CL_CACHELINE_SIZE)
#error "cachelocal: CL_FALSE_SHARING_SIZE must be >= CL_CACHELINE_SIZE"
#endif

/* ---- per-CPU storage ---- */
#ifndef CL_PERCPU_STRIDE
#define CL_PERCPU_STRIDE 65536
#endif
#if !(CL_PERCPU_STRIDE >= 4096 && (CL_PERCPU_STRIDE & (CL_PERCPU_STRIDE - 1)) == 0)
#error "cachelocal: CL_PERCPU_STRIDE must be a power of two >= 4096"
#endif

#ifndef CL_MAX_CPUS
#define CL_MAX_CPUS 4096
#endif
#if !(CL_MAX_CPUS >= 1 && CL_MAX_CPUS <= 65536)
#error "cachelocal: CL_MAX_CPUS must be in [1, 65536]"
#endif

/*
 * Checks the preprocessor cannot make: each CPU's per-CPU slice must start on
 * its own false-sharing unit. (Also keeps a translation unit that includes
 * only this header non-empty, which ISO C requires.)
 */
#ifdef __cplusplus
static_assert(CL_PERCPU_STRIDE % CL_FALSE_SHARING_SIZE == 0,
	      "cachelocal: CL_PERCPU_STRIDE must be a multiple of CL_FALSE_SHARING_SIZE");
#else
_Static_assert(CL_PERCPU_STRIDE % CL_FALSE_SHARING_SIZE == 0,
	       "cachelocal: CL_PERCPU_STRIDE must be a multiple of CL_FALSE_SHARING_SIZE");
#endif

/* ---- test hooks ---- */
/*
 * CL_INJECT(n): an empty statement at numbered race windows (rseq critical
 * sections, CAS loops). A stress build defines it to delay, yield or signal.
 */
#ifndef CL_INJECT
#define CL_INJECT(n) ((void)0)
#define CL__INJECT_DEFAULT 1 /* no test hooks: code may leave the points out */
#endif

/*
 * CL_RUNTIME_CLOCK(ns): every clock reading of the M:N runtime
 * (sched/runtime.h) passes through it, @ns being the real monotonic time in
 * ns. A test defines it to run the scheduler on a virtual clock, so that
 * time the kernel takes the worker thread away is not charged to a task;
 * its value must not go backwards.
 */
#ifndef CL_RUNTIME_CLOCK
#define CL_RUNTIME_CLOCK(ns) (ns)
#endif

/*
 * CL_RUNTIME_TICK_CLOCK(ns): the same for the runtime's reading of the
 * kernel's tick clock (CLOCK_MONOTONIC_COARSE), which decides when an
 * uncontended hand-off reads the clock at all; @ns is the real reading.
 */
#ifndef CL_RUNTIME_TICK_CLOCK
#define CL_RUNTIME_TICK_CLOCK(ns) (ns)
#endif

#endif /* CACHELOCAL_CONFIG_H */
