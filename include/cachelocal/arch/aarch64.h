/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/aarch64.h - AArch64 pieces of the rseq ABI: glibc's abort
 * signature, the syscall number and the thread pointer.
 *
 * Private to cachelocal/rseq.h (and the rseq critical sections built on it).
 */
#ifndef CL__ARCH_INSIDE
#error "do not include <cachelocal/arch/aarch64.h> directly; include <cachelocal/rseq.h>"
#endif

#ifndef CACHELOCAL_ARCH_AARCH64_H
#define CACHELOCAL_ARCH_AARCH64_H

/*
 * glibc's RSEQ_SIG: the instruction "BRK #0x45E0" (0xd428bc00), stored as
 * data before each abort handler; on big-endian the data word is the
 * byte-swapped instruction. Plain literals so asm templates can stringify.
 */
#define CL_RSEQ_SIG_CODE 0xd428bc00
#if defined(__AARCH64EB__)
#define CL_RSEQ_SIG 0x00bc28d4
#else
#define CL_RSEQ_SIG 0xd428bc00
#endif

/* __NR_rseq on arm64 (asm-generic table). */
#define CL__NR_RSEQ_ARCH 293

#define CL__HAVE_THREAD_POINTER 1

/* cl__thread_pointer() - TPIDR_EL0 of the calling thread. */
static inline __attribute__((always_inline)) void *cl__thread_pointer(void)
{
#if defined(__clang__) || defined(__GNUC__)
	return __builtin_thread_pointer();
#else
	void *tp;

	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
#endif
}

#endif /* CACHELOCAL_ARCH_AARCH64_H */
