/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/context.h - dispatch of the M:N runtime's context switch
 * and tick counter, by the macros of arch/arch.h: arch/<arch>/context.h
 * where CL_ARCH_HAVE_CONTEXT says there is one (unless the build asks for
 * the portable one with -DCL_RUNTIME_UCONTEXT), else arch/generic/context.h
 * (ucontext, no tick counter).
 *
 * Private to cachelocal/sched/runtime/context.h, which describes the
 * interface every piece provides.
 */
#ifndef CL__RUNTIME_CONTEXT_INSIDE
#error "do not include <cachelocal/arch/context.h> directly; include <cachelocal/sched/runtime.h>"
#endif

#ifndef CACHELOCAL_ARCH_CONTEXT_H
#define CACHELOCAL_ARCH_CONTEXT_H

#include "arch.h"

#if defined(CL_ARCH_HAVE_CONTEXT) && !defined(CL_RUNTIME_UCONTEXT)
#if defined(CL_ARCH_X86_64)
#include "x86_64/context.h"
#elif defined(CL_ARCH_AARCH64)
#include "aarch64/context.h"
#endif
#else
#include "generic/context.h"
#endif

#endif /* CACHELOCAL_ARCH_CONTEXT_H */
