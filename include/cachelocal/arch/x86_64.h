/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/x86_64.h - x86-64 pieces of the rseq ABI: glibc's abort
 * signature, the syscall number and the thread pointer.
 *
 * Private to cachelocal/rseq.h (and the rseq critical sections built on it).
 */
#ifndef CL__ARCH_INSIDE
#error "do not include <cachelocal/arch/x86_64.h> directly; include <cachelocal/rseq.h>"
#endif

#ifndef CACHELOCAL_ARCH_X86_64_H
#define CACHELOCAL_ARCH_X86_64_H

/*
 * glibc's RSEQ_SIG: the 4 bytes before every abort handler. Encoded in the
 * text as "ud1 0x53053053(%rip),%edi" so it traps if ever executed. A plain
 * literal (no suffix, no parentheses) so asm templates can stringify it.
 */
#define CL_RSEQ_SIG 0x53053053

/* __NR_rseq on x86-64, for libc headers older than the syscall. */
#define CL__NR_RSEQ_ARCH 334

/* 1: cl__thread_pointer() returns the real thread pointer. */
#define CL__HAVE_THREAD_POINTER 1

/*
 * cl__thread_pointer() - the TCB address (%fs base) of the calling thread.
 * glibc's rseq area lives at this address + __rseq_offset. gcc >= 11 and
 * clang know __builtin_thread_pointer(); older gcc reads the self-pointer
 * the x86-64 TLS ABI stores at %fs:0. Not volatile: it never changes for a
 * thread, so the compiler may reuse it.
 */
static inline __attribute__((always_inline)) void *cl__thread_pointer(void)
{
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 11)
	return __builtin_thread_pointer();
#else
	void *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#endif
}

#endif /* CACHELOCAL_ARCH_X86_64_H */
