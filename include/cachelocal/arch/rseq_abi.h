/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/rseq_abi.h - dispatch of the rseq ABI's architecture piece
 * (glibc's abort signature CL_RSEQ_SIG, the syscall number CL__NR_RSEQ_ARCH,
 * cl__thread_pointer() and CL__HAVE_THREAD_POINTER), by the CL_ARCH_* macro
 * of arch/arch.h.
 *
 * Private to cachelocal/rseq/abi.h.
 */
#ifndef CACHELOCAL_ARCH_RSEQ_ABI_H
#define CACHELOCAL_ARCH_RSEQ_ABI_H

#include "arch.h"

#define CL__ARCH_INSIDE 1
#if defined(CL_ARCH_X86_64)
#include "x86_64.h"
#elif defined(CL_ARCH_AARCH64)
#include "aarch64.h"
#else
#include "generic.h"
#endif
#undef CL__ARCH_INSIDE

#endif /* CACHELOCAL_ARCH_RSEQ_ABI_H */
