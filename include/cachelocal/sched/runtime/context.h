/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/context.h - the context switch of the M:N
 * runtime: an architecture's asm one (x86-64, aarch64), or ucontext
 * elsewhere (and everywhere with -DCL_RUNTIME_UCONTEXT); arch/context.h
 * picks it.
 *
 * Interface (both implementations, private, names cl__):
 *   struct cl__ctx                       a suspended context
 *   cl__ctx_make(c, lo, size, entry, data)  first switch to c calls entry(value, data)
 *   cl__ctx_switch(from, to, value)      suspend into from, resume to; returns the
 *                                        value of the switch that later resumes from
 *   cl__ctx_init_thread(c)               c will hold the thread's own stack
 *   CL__CTX_KIND                         "x86_64-asm", "aarch64-asm" or "ucontext"
 *   CL__CTX_HAVE_TICKS                   defined when the piece has a tick counter:
 *     cl__ctx_ticks()                    its reading (monotonic, per-CPU consistent)
 *     cl__ctx_ticks_reliable()           1 when it runs at a constant rate that
 *                                        the runtime may calibrate against
 *                                        CLOCK_MONOTONIC once
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_CONTEXT_H
#define CACHELOCAL_SCHED_RUNTIME_CONTEXT_H

#include "../../compiler.h"

#define CL__RUNTIME_CONTEXT_INSIDE 1
#include "../../arch/context.h" /* picks the piece (arch/arch.h's macros) */
#undef CL__RUNTIME_CONTEXT_INSIDE

#endif /* CACHELOCAL_SCHED_RUNTIME_CONTEXT_H */
