/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/context.h - selects the context switch of the
 * M:N runtime: the x86-64 asm one, or ucontext elsewhere (and on x86-64
 * with -DCL_RUNTIME_UCONTEXT).
 *
 * Interface (both implementations, private, names cl__):
 *   struct cl__ctx                       a suspended context
 *   cl__ctx_make(c, lo, size, entry, data)  first switch to c calls entry(value, data)
 *   cl__ctx_switch(from, to, value)      suspend into from, resume to; returns the
 *                                        value of the switch that later resumes from
 *   cl__ctx_init_thread(c)               c will hold the thread's own stack
 *   CL__CTX_KIND                         "x86_64-asm" or "ucontext"
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_CONTEXT_H
#define CACHELOCAL_SCHED_RUNTIME_CONTEXT_H

#include "../../compiler.h"

#define CL__RUNTIME_CONTEXT_INSIDE 1
#if defined(__x86_64__) && !defined(CL_RUNTIME_UCONTEXT)
#include "../../arch/x86_64/context.h"
#else
#include "../../arch/generic/context.h"
#endif
#undef CL__RUNTIME_CONTEXT_INSIDE

#endif /* CACHELOCAL_SCHED_RUNTIME_CONTEXT_H */
