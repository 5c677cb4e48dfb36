/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/generic.h - architectures without rseq support in
 * cachelocal. No thread pointer is used, so glibc's area cannot be found and
 * no area is registered: every id comes from the fallbacks (sched_getcpu).
 * glibc's signature is still given for the architectures that have one, for
 * code that wants to write its own critical sections.
 *
 * Private to cachelocal/rseq.h.
 */
#ifndef CL__ARCH_INSIDE
#error "do not include <cachelocal/arch/generic.h> directly; include <cachelocal/rseq.h>"
#endif

#ifndef CACHELOCAL_ARCH_GENERIC_H
#define CACHELOCAL_ARCH_GENERIC_H

#if defined(CL_ARCH_PPC64)
#define CL_RSEQ_SIG 0x0fe5000b
#elif defined(CL_ARCH_S390X)
#define CL_RSEQ_SIG 0xB2FF0FFF
#elif defined(CL_ARCH_RISCV)
#define CL_RSEQ_SIG 0xf1401073
#else
#define CL_RSEQ_SIG 0 /* unknown: no signature, nothing is registered */
#endif

#define CL__NR_RSEQ_ARCH (-1)

#define CL__HAVE_THREAD_POINTER 0

/* No thread pointer: rseq.h treats rseq as unavailable. */
static inline __attribute__((always_inline)) void *cl__thread_pointer(void)
{
	return NULL;
}

#endif /* CACHELOCAL_ARCH_GENERIC_H */
