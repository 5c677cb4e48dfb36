/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/arch.h - the architecture dispatch: the only header that
 * tests the compiler's architecture macros (__x86_64__, __aarch64__, ...).
 * Every other header tests the macros defined here (scripts/check-layers.sh
 * fails a header outside arch/ that tests a compiler's arch macro).
 *
 * Defined here, for the target being compiled:
 *   CL_ARCH_X86_64, CL_ARCH_AARCH64, CL_ARCH_PPC64, CL_ARCH_S390X,
 *   CL_ARCH_RISCV               1 for the target, undefined otherwise
 *                               (CL_ARCH_GENERIC for any other target)
 *   CL_ARCH_NAME                "x86_64", "aarch64", ..., or "generic"
 *   CL_ARCH_HAVE_RSEQ_SECTIONS  1: arch/<arch>/percpu_ops.h has the rseq
 *                               critical sections of percpu_ops.h
 *   CL_ARCH_HAVE_CONTEXT        1: arch/<arch>/context.h has an asm context
 *                               switch for the M:N runtime (else ucontext)
 *   CL__ARCH_FALSE_SHARING_SIZE default of CL_FALSE_SHARING_SIZE (config.h)
 *   CL__ARCH_MAP_NORESERVE      MAP_NORESERVE where libc lacks it (sys.h)
 *   CL__ARCH_CPU_RELAX()        the spin-wait hint (CL_CPU_RELAX(), compiler.h)
 *   CL__ARCH_PREFETCHW(p)       start taking p's line for writing (x86's
 *                               PREFETCHW, else the compiler's write prefetch)
 *   CL__ARCH_READ_SP(var)       the stack pointer into the uintptr_t var
 *                               (elsewhere: the current frame's address)
 *   CL__ARCH_NR_RSEQ_SLICE_YIELD  the rseq_slice_yield syscall (Linux 7.0+;
 *                               471 on x86-64 and arm64), -1 where unknown
 *                               (internal/slice.h; libc headers lack it)
 *   CL__ARCH_UC_PC(uc)          the interrupted PC in a signal handler's
 *                               ucontext_t *uc, as a uintptr_t (x86-64,
 *                               aarch64; undefined elsewhere: the runtime's
 *                               preemption then marks only)
 * The pieces themselves are chosen by the dispatchers of this directory,
 * which test only the macros above: arch/rseq_abi.h (rseq signature,
 * syscall number, thread pointer), arch/percpu_ops.h (critical sections) and
 * arch/context.h (context switch and tick counter).
 *
 * Layer L0: included by config.h, before compiler.h, so plain GNU C only.
 */
#ifndef CACHELOCAL_ARCH_ARCH_H
#define CACHELOCAL_ARCH_ARCH_H

#if defined(__x86_64__)
#define CL_ARCH_X86_64 1
#define CL_ARCH_NAME "x86_64"
#define CL_ARCH_HAVE_RSEQ_SECTIONS 1
#define CL_ARCH_HAVE_CONTEXT 1
#define CL__ARCH_FALSE_SHARING_SIZE 128 /* adjacent-line prefetch pairs lines */
#define CL__ARCH_CPU_RELAX() __asm__ __volatile__("pause" ::: "memory")
#define CL__ARCH_PREFETCHW(p) __asm__ volatile("prefetchw %0" : : "m"(*(const char *)(p)))
#define CL__ARCH_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.gregs[16]) /* REG_RIP */
#define CL__ARCH_READ_SP(var) __asm__ __volatile__("mov %%rsp, %0" : "=r"(var))
#define CL__ARCH_NR_RSEQ_SLICE_YIELD 471 /* arch/x86/entry/syscalls/syscall_64.tbl */
#elif defined(__aarch64__)
#define CL_ARCH_AARCH64 1
#define CL_ARCH_NAME "aarch64"
#define CL_ARCH_HAVE_RSEQ_SECTIONS 1
#define CL_ARCH_HAVE_CONTEXT 1
#define CL__ARCH_FALSE_SHARING_SIZE 128 /* 128-byte lines on some cores */
#define CL__ARCH_CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")
#define CL__ARCH_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.pc)
#define CL__ARCH_READ_SP(var) __asm__ __volatile__("mov %0, sp" : "=r"(var))
#define CL__ARCH_NR_RSEQ_SLICE_YIELD 471 /* include/uapi/asm-generic/unistd.h */
#elif defined(__powerpc64__)
#define CL_ARCH_PPC64 1
#define CL_ARCH_NAME "ppc64"
#define CL__ARCH_FALSE_SHARING_SIZE 128
#define CL__ARCH_MAP_NORESERVE 0x40
#elif defined(__s390x__)
#define CL_ARCH_S390X 1
#define CL_ARCH_NAME "s390x"
#define CL__ARCH_FALSE_SHARING_SIZE 256
#elif defined(__riscv)
#define CL_ARCH_RISCV 1
#define CL_ARCH_NAME "riscv"
#else
#define CL_ARCH_GENERIC 1
#define CL_ARCH_NAME "generic"
#endif

#ifndef CL__ARCH_FALSE_SHARING_SIZE
#define CL__ARCH_FALSE_SHARING_SIZE 64
#endif
#ifndef CL__ARCH_MAP_NORESERVE
#define CL__ARCH_MAP_NORESERVE 0x4000
#endif
#ifndef CL__ARCH_CPU_RELAX
#define CL__ARCH_CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif
#ifndef CL__ARCH_PREFETCHW
#define CL__ARCH_PREFETCHW(p) __builtin_prefetch((p), 1, 3)
#endif
#ifndef CL__ARCH_NR_RSEQ_SLICE_YIELD
#define CL__ARCH_NR_RSEQ_SLICE_YIELD (-1)
#endif
#ifndef CL__ARCH_READ_SP
#define CL__ARCH_READ_SP(var) ((var) = (uintptr_t)__builtin_frame_address(0))
#endif

/* The default false-sharing distance is a power of two of at least a line. */
#ifdef __cplusplus
static_assert(CL__ARCH_FALSE_SHARING_SIZE >= 64 &&
		      (CL__ARCH_FALSE_SHARING_SIZE & (CL__ARCH_FALSE_SHARING_SIZE - 1)) == 0,
	      "cachelocal: CL__ARCH_FALSE_SHARING_SIZE must be a power of two >= 64");
#else
_Static_assert(CL__ARCH_FALSE_SHARING_SIZE >= 64 &&
		       (CL__ARCH_FALSE_SHARING_SIZE & (CL__ARCH_FALSE_SHARING_SIZE - 1)) == 0,
	       "cachelocal: CL__ARCH_FALSE_SHARING_SIZE must be a power of two >= 64");
#endif

#endif /* CACHELOCAL_ARCH_ARCH_H */
