/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops/mode.h - which implementation runs (rseq critical sections or the
 * atomic fallback, decided once per process), the per-thread rseq area the
 * sections use, and the current index of each kind.
 *
 * Part of percpu_ops.h, the header to include: the API, its kernel-doc, the
 * return codes and the synchronization table are there, the pseudo-code of
 * every critical section in percpu_ops/pseudocode.h. The cl__ names here are
 * not API. Included alone, this file includes percpu_ops.h (which includes
 * every piece in order).
 */
#include "../percpu_ops.h"

#ifndef CACHELOCAL_PERCPU_OPS_MODE_H
#define CACHELOCAL_PERCPU_OPS_MODE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "../config.h"
#include "../rseq.h"

CL_BEGIN_DECLS

/* ---- implementation selection (per translation unit, see percpu_ops.h) ---- */

#if defined(CL_NO_RSEQ_ASM)
#define CL__RSEQ_OPS_STATIC_MODE CL_RSEQ_OPS_ATOMIC_FORCED
#elif defined(CL_HAVE_TSAN)
#define CL__RSEQ_OPS_STATIC_MODE CL_RSEQ_OPS_ATOMIC_TSAN
#elif defined(CL_ARCH_HAVE_RSEQ_SECTIONS) /* arch/arch.h */
/* CL_HAVE_RSEQ_ASM: this translation unit contains the critical sections. */
#define CL_HAVE_RSEQ_ASM 1
#else
#define CL__RSEQ_OPS_STATIC_MODE CL_RSEQ_OPS_ATOMIC_NO_ASM
#endif

#ifdef CL_RSEQ_INJECT_ASM
#define CL__RSEQ_INJECT_USER 1 /* the sections save their scratch registers around it */
#else
#define CL_RSEQ_INJECT_ASM(n) ""
#endif
#ifndef CL_RSEQ_INJECT_CLOBBER
#define CL_RSEQ_INJECT_CLOBBER
#endif

/* ---- process-wide decision ---- */

#define CL__RSEQ_OPS_DECIDED 1u   /* the state below is valid */
#define CL__RSEQ_OPS_HAVE_RSEQ 2u /* asm path for the cpu_id index */
#define CL__RSEQ_OPS_HAVE_CID 4u  /* asm path for the mm_cid index */

/*
 * Decided once, by the first thread that uses an operation; never reset.
 * The fast path does not read it: each thread caches its live area per
 * index kind in cl__rseq_thread.ops[] (rseq.h) once this decision says
 * critical sections for that kind, so an operation is one thread-local load
 * and one test before its section.
 */
CL_WEAK unsigned cl__rseq_ops_state;

/* Slow path of cl__rseq_ops_state_get(): probe rseq and publish the result. */
static CL_COLD CL_NOINLINE CL_UNUSED unsigned cl__rseq_ops_decide(void)
{
	unsigned s = CL__RSEQ_OPS_DECIDED, expect = 0;

	if (cl_rseq_abi_get() != NULL) {
		s |= CL__RSEQ_OPS_HAVE_RSEQ;
		if (cl_rseq_mm_cid_available())
			s |= CL__RSEQ_OPS_HAVE_CID;
	}
	if (!CL_ATOMIC_CAS(&cl__rseq_ops_state, &expect, s, CL_ACQ_REL, CL_ACQUIRE))
		s = expect; /* another thread decided first: follow it */
	return s;
}

CL_ALWAYS_INLINE unsigned cl__rseq_ops_state_get(void)
{
	unsigned s = CL_ATOMIC_LOAD(&cl__rseq_ops_state, CL_ACQUIRE);

	return CL_LIKELY(s) ? s : cl__rseq_ops_decide();
}

/* fallback.h: the fallback's locks are reset in a fork() child from the
 * first time a fallback mode is reported (outside any lock: see there). */
CL_INLINE void cl__rseq_fb_fork_setup(void);

CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode_index(enum cl_rseq_index kind)
{
#ifdef CL_HAVE_RSEQ_ASM
	unsigned s = cl__rseq_ops_state_get();

	if (!(s & CL__RSEQ_OPS_HAVE_RSEQ)) {
		cl__rseq_fb_fork_setup();
		return CL_RSEQ_OPS_ATOMIC_NO_RSEQ;
	}
	if (kind == CL_RSEQ_INDEX_MM_CID && !(s & CL__RSEQ_OPS_HAVE_CID)) {
		cl__rseq_fb_fork_setup();
		return CL_RSEQ_OPS_ATOMIC_NO_MM_CID;
	}
	return CL_RSEQ_OPS_RSEQ;
#else
	(void)kind;
	cl__rseq_fb_fork_setup();
	return CL__RSEQ_OPS_STATIC_MODE;
#endif
}

CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode(void)
{
	return cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID);
}

CL_INLINE const char *cl_rseq_ops_mode_name(enum cl_rseq_ops_mode m)
{
	switch (m) {
	case CL_RSEQ_OPS_RSEQ:
		return "rseq";
	case CL_RSEQ_OPS_ATOMIC_NO_ASM:
		return "atomic-no-asm";
	case CL_RSEQ_OPS_ATOMIC_TSAN:
		return "atomic-tsan";
	case CL_RSEQ_OPS_ATOMIC_FORCED:
		return "atomic-forced";
	case CL_RSEQ_OPS_ATOMIC_NO_RSEQ:
		return "atomic-no-rseq";
	case CL_RSEQ_OPS_ATOMIC_NO_MM_CID:
		return "atomic-no-mm_cid";
	}
	return "?";
}

#ifdef CL_HAVE_RSEQ_ASM
/*
 * Slow path of cl__rseq_ops_enter(): undecided, fallback, or this thread's
 * cache not filled yet (registers the area if we own rseq, then caches it
 * for @kind).
 */
static CL_NOINLINE CL_UNUSED int cl__rseq_ops_enter_slow(enum cl_rseq_index kind,
							  struct cl_rseq_abi **abi)
{
	unsigned need = kind == CL_RSEQ_INDEX_MM_CID ? CL__RSEQ_OPS_HAVE_CID : CL__RSEQ_OPS_HAVE_RSEQ;

	if (!(cl__rseq_ops_state_get() & need))
		return 0;
	*abi = cl_rseq_abi_get(); /* registers this thread's area if we own rseq */
	if (*abi == NULL || cl__rseq_thread_is_dead())
		return -1; /* no area, or this thread is unregistering it (exit) */
	cl__rseq_thread.ops[kind == CL_RSEQ_INDEX_MM_CID] = *abi;
	return 1;
}

/*
 * cl__rseq_ops_enter(): 1 with *abi set: use the critical section; 0: use
 * the atomic fallback (process-wide); -1: the process uses critical sections
 * but this thread has no rseq area.
 *
 * The area the sections of @kind use in this thread: cl__rseq_thread.ops[]
 * holds it only while it is live (rseq.h clears it when the thread
 * unregisters our area), so the fast path tests nothing else. Areas
 * registered by someone else (glibc, librseq) must stay registered while
 * the thread runs operations: do not call librseq's
 * rseq_unregister_current_thread() in a thread that still uses them.
 */
CL_ALWAYS_INLINE int cl__rseq_ops_enter(enum cl_rseq_index kind, struct cl_rseq_abi **abi)
{
	/* kind is CPU_ID or MM_CID here (callers check it first). */
	struct cl_rseq_abi *a = cl__rseq_thread.ops[kind == CL_RSEQ_INDEX_MM_CID];

	if (CL_LIKELY(a != NULL)) {
		*abi = a;
		return 1;
	}
	{
		/* Its own variable: the caller's @abi does not escape and stays
		 * in a register on the fast path. */
		struct cl_rseq_abi *slow = NULL;
		int r = cl__rseq_ops_enter_slow(kind, &slow);

#if defined(__clang__)
		/*
		 * The slow path stored @slow in the cache already; storing it
		 * again here tells clang what the cache holds on this path too,
		 * so a second operation right after (cl_rseq_current_index(),
		 * then the add) reuses the first one's load instead of loading
		 * and testing the cache again (clang 14: 3 of the raw add loop's
		 * 16 instructions, against librseq's 13). gcc needs no help
		 * and keeps its code as it was (the same bytes, the same loop
		 * alignment: its operations are timed to a few percent).
		 */
		if (r > 0)
			cl__rseq_thread.ops[kind == CL_RSEQ_INDEX_MM_CID] = slow;
#endif
		*abi = slow;
		return r;
	}
}
#endif

#ifdef CL_HAVE_RSEQ_ASM
#define CL__PERCPU_OPS_INSIDE 1
#include "../arch/percpu_ops.h" /* this architecture's sections */
#undef CL__PERCPU_OPS_INSIDE
#endif

/* ---- the current index ---- */

#ifdef CL_HAVE_RSEQ_ASM
/*
 * The index field a section of @kind compares, read from the area (one
 * untorn load that the compiler may not merge or drop, and that does not
 * make it reload the thread's cached area pointer either).
 */
CL_ALWAYS_INLINE int cl__rseq_abi_index(const struct cl_rseq_abi *abi, enum cl_rseq_index kind)
{
	return (int)cl__rseq_read_field(kind == CL_RSEQ_INDEX_MM_CID ? &abi->mm_cid : &abi->cpu_id);
}
#endif

/* The fallback's index: cl_cpu_id() or cl_mm_cid(). */
CL_ALWAYS_INLINE int cl__percpu_fallback_index(enum cl_rseq_index kind)
{
	int v = kind == CL_RSEQ_INDEX_MM_CID ? cl_mm_cid() : cl_cpu_id();

	return v >= 0 ? v : 0;
}

CL_INLINE int cl_rseq_current_index(enum cl_rseq_index kind)
{
#ifdef CL_HAVE_RSEQ_ASM
	struct cl_rseq_abi *abi;

	/* The operations' own cache: the add that follows reuses the load. */
	if (cl__rseq_ops_enter(kind, &abi) > 0)
		return cl__rseq_abi_index(abi, kind);
#endif
	return cl__percpu_fallback_index(kind);
}

#ifdef CL_HAVE_RSEQ_ASM
/* The operation cannot run: rseq process, thread without an rseq area. */
static CL_COLD CL_NOINLINE CL_UNUSED int cl__rseq_no_area(void)
{
	errno = ENOSYS;
	return CL_RSEQ_ERROR;
}
#endif /* CL_HAVE_RSEQ_ASM */

static CL_COLD CL_NOINLINE CL_UNUSED int cl__rseq_einval(void)
{
	errno = EINVAL;
	return CL_RSEQ_ERROR;
}

CL_ALWAYS_INLINE int cl__rseq_kind_bad(enum cl_rseq_index kind)
{
	return (unsigned)kind > (unsigned)CL_RSEQ_INDEX_MM_CID;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_MODE_H */
