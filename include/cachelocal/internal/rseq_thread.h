/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/rseq_thread.h - the per-thread rseq state that two
 * modules share: rseq.h writes it (registration, thread exit) and
 * percpu_ops.h's operations read their cached area from it.
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 */
#ifndef CACHELOCAL_INTERNAL_RSEQ_THREAD_H
#define CACHELOCAL_INTERNAL_RSEQ_THREAD_H

#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"

CL_BEGIN_DECLS

struct cl_rseq_abi; /* rseq.h */

/*
 * TLS model of cachelocal's thread-locals: initial-exec works in shared
 * objects too (the offset comes from the GOT); local-exec, a constant
 * offset in the instruction, only in the executable, so it is used when
 * this translation unit is built for one (-fPIE, or neither -fPIE nor
 * -fPIC). Either way every thread has them at one fixed offset from the
 * thread pointer.
 */
#if defined(__PIE__) || !defined(__PIC__)
#define CL__TLS_MODEL __attribute__((tls_model("local-exec")))
#else
#define CL__TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

/*
 * Per-thread fast-path state (CL__TLS_MODEL; zero in every new thread, and
 * copied with the forking thread into a child, whose registration the kernel
 * keeps).
 * @cid_rel: cl_mm_cid() returns the 32-bit word at &cl__rseq_area.mm_cid +
 *	cid_rel when it is >= 0. 0 until this thread's first id request
 *	(our own area's mm_cid: -1 until registered); then the live area's
 *	mm_cid, or its cpu_id when the kernel publishes no mm_cid; or, once
 *	this thread has no rseq, @dead (-2: the fallback, without the slow
 *	path).
 * @ops: percpu_ops.h's cache: ops[kind] is this thread's live area when the
 *	process runs critical sections for index kind @kind, else NULL (the
 *	operations' fast path is one load and one test of it).
 * @dead: 0, or -2 once rseq failed in this thread or the thread started to
 *	unregister our area (thread exit): from then on nothing caches or
 *	registers an area in this thread.
 * At thread exit all three are set *before* the unregistering syscall: a
 * signal handler that runs during or after it finds no cached area and no
 * live id (the kernel leaves cpu_id -1 and mm_cid 0 in an area it no
 * longer updates).
 */
struct cl__rseq_thread {
	ptrdiff_t cid_rel;
	struct cl_rseq_abi *ops[2];
	int32_t dead;
};

CL_WEAK __thread struct cl__rseq_thread cl__rseq_thread CL__TLS_MODEL;

/* Whether cl__rseq_thread_dead() ran in this thread. */
CL_ALWAYS_INLINE int cl__rseq_thread_is_dead(void)
{
	return CL_ATOMIC_LOAD(&cl__rseq_thread.dead, CL_RELAXED) != 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_RSEQ_THREAD_H */
