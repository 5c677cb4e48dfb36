/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/slice.h - the per-thread state of the rseq time-slice
 * extension and the two calls every lock makes around its critical section:
 * cl__slice_begin() after it took the lock, cl__slice_end() after it let it
 * go. spinlock.h (L1) and brlock.h use them; rseq.h writes the state when a
 * thread's area is registered with the extension on, slice.h when a thread
 * asks for its mode. The public face is cachelocal/slice.h.
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * The protocol (Documentation/userspace-api/rseq.rst, Linux 7.0+, RSEQ ABI
 * v2 registrations only):
 *
 *	area->slice_ctrl.request = 1;     // cl__slice_begin()
 *	barrier();
 *	... critical section, no system call ...
 *	barrier();
 *	area->slice_ctrl.request = 0;     // cl__slice_end()
 *	if (area->slice_ctrl.granted)     // the kernel let us run on
 *		rseq_slice_yield();       // give the CPU back now
 *
 * Everything is CPU local (the thread and the kernel on its behalf), so no
 * atomic read-modify-write is needed; the stores are single-byte relaxed
 * atomics only so that the compiler emits each exactly once.
 *
 * Cost when the extension is off in the thread (kernel without it, glibc's
 * 32-byte area, opted out): begin and end each load one thread-local
 * pointer and take one predictable branch on it being NULL.
 *
 * Nesting: sections nest (the runqueue takes two rq locks); @depth counts
 * them and only the outermost sets and clears the request. A lock released
 * by another thread than the one that took it (allowed for the TTAS and
 * ticket locks) ends no section in either thread: the taker's request stays
 * set until its own next outermost end, which at worst lets the kernel
 * extend that thread's slice once, by at most the extension's length.
 *
 * Signal handlers: a handler that takes a lock nests inside whatever the
 * thread was doing and restores @depth before it returns; the request store
 * and the depth update never leave a state in which a handler's section
 * clears the interrupted section's request while that one still runs
 * (begin counts before it stores, end stores after it counts).
 */
#ifndef CACHELOCAL_INTERNAL_SLICE_H
#define CACHELOCAL_INTERNAL_SLICE_H

#include <errno.h>
#include <stdint.h>

#include "../compiler.h"
#include "../sys.h"
#include "rseq_thread.h"

/*
 * CL_SLICE_EXT: 1 (default) builds the locks' requests for the time-slice
 * extension; 0 compiles them out (the per-build opt-out: cl_slice_ext_mode()
 * then says "off (build)"). Every translation unit of a program must agree.
 */
#ifndef CL_SLICE_EXT
#define CL_SLICE_EXT 1
#endif
#if CL_SLICE_EXT != 0 && CL_SLICE_EXT != 1
#error "CL_SLICE_EXT must be 0 or 1"
#endif

#if defined(SYS_rseq_slice_yield)
#define CL__NR_RSEQ_SLICE_YIELD SYS_rseq_slice_yield
#else
#define CL__NR_RSEQ_SLICE_YIELD CL__ARCH_NR_RSEQ_SLICE_YIELD
#endif

CL_BEGIN_DECLS

/*
 * Per-thread state (CL__TLS_MODEL, zero in every new thread).
 * @req: &area->slice_ctrl.request of this thread's live rseq area while the
 *	extension is on in this thread, else NULL: the one word the locks read.
 * @depth: sections begun and not ended (outermost sets/clears the request).
 * @mode: 0 until decided in this thread, else 1 + enum cl_slice_ext_mode.
 * @optout: 1 when the thread turned the extension off (cl_slice_ext_set_thread()).
 * @sections: outermost sections that requested an extension.
 * @granted: of those, the ones the kernel granted (granted read set at the end).
 * @yielded: of those, the ones whose rseq_slice_yield() returned 1 (the
 *	grant was still live: the thread gave the CPU back within it).
 */
struct cl__slice_thread {
	uint8_t *req;
	unsigned depth;
	int mode;
	int optout;
	unsigned long sections;
	unsigned long granted;
	unsigned long yielded;
};

CL_WEAK __thread struct cl__slice_thread cl__slice_thread CL__TLS_MODEL;

/* The byte after request in struct rseq_slice_ctrl: set by the kernel. */
#define CL__SLICE_GRANTED(req) ((req) + 1)

/* Out of line: the kernel granted an extension; give the CPU back. */
CL_COLD CL_NOINLINE CL_UNUSED static void cl__slice_yield(struct cl__slice_thread *t)
{
	int saved = errno;

	t->granted++;
	if (CL__NR_RSEQ_SLICE_YIELD >= 0 && syscall(CL__NR_RSEQ_SLICE_YIELD) == 1)
		t->yielded++;
	errno = saved;
}

/* The outermost begin of a thread whose extension is on. */
CL_ALWAYS_INLINE void cl__slice_begin_on(struct cl__slice_thread *t, uint8_t *req)
{
	if (t->depth++ != 0)
		return;
	CL_BARRIER();
	CL_ATOMIC_STORE(req, (uint8_t)1, CL_RELAXED);
	CL_BARRIER();
}

CL_ALWAYS_INLINE void cl__slice_end_on(struct cl__slice_thread *t, uint8_t *req)
{
	if (t->depth == 0)
		return; /* the section began in another thread (see Nesting) */
	if (--t->depth != 0)
		return;
	CL_BARRIER();
	CL_ATOMIC_STORE(req, (uint8_t)0, CL_RELAXED);
	CL_BARRIER();
	t->sections++;
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(CL__SLICE_GRANTED(req), CL_RELAXED) != 0))
		cl__slice_yield(t);
}

/*
 * The on-paths, out of line: where the extension is off, the inline part is
 * one compare of a thread-local word with 0 and a branch (no register
 * kept live for the on-path); where it is on, a call more.
 */
CL_NOINLINE CL_UNUSED static void cl__slice_begin_slow(void)
{
	uint8_t *req = CL_ATOMIC_LOAD(&cl__slice_thread.req, CL_RELAXED);

	if (req != NULL)
		cl__slice_begin_on(&cl__slice_thread, req);
}

CL_NOINLINE CL_UNUSED static void cl__slice_end_slow(void)
{
	uint8_t *req = CL_ATOMIC_LOAD(&cl__slice_thread.req, CL_RELAXED);

	if (req != NULL)
		cl__slice_end_on(&cl__slice_thread, req);
}

/*
 * cl__slice_on() - 1 when this thread's locks request (the word a lock may
 * fold into a branch it takes anyway, then call cl__slice_begin()/_end()
 * out of line), else 0. 0 when built with CL_SLICE_EXT=0.
 */
CL_ALWAYS_INLINE uint32_t cl__slice_on(void)
{
#if CL_SLICE_EXT
	return cl__slice_thread.req != NULL;
#else
	return 0;
#endif
}

/*
 * cl__slice_begin_if() / cl__slice_end_if() - cl__slice_begin()/_end() for
 * a lock that read cl__slice_on() into @on early, before its atomic
 * operation, so that the thread-local load never waits behind a locked
 * instruction (measured: the ticket lock's uncontended lock+unlock costs
 * 5% more with the load after the locked add, 2% with it before).
 */
CL_ALWAYS_INLINE void cl__slice_begin_if(uint32_t on)
{
#if CL_SLICE_EXT
	if (CL_UNLIKELY(on))
		cl__slice_begin_slow();
#else
	(void)on;
#endif
}

CL_ALWAYS_INLINE void cl__slice_end_if(uint32_t on)
{
#if CL_SLICE_EXT
	if (CL_UNLIKELY(on))
		cl__slice_end_slow();
#else
	(void)on;
#endif
}

/*
 * cl__slice_begin() - a lock was just taken: ask the kernel not to preempt
 * this thread until cl__slice_end() (when the extension is on here).
 */
CL_ALWAYS_INLINE void cl__slice_begin(void)
{
#if CL_SLICE_EXT
	if (CL_UNLIKELY(cl__slice_thread.req != NULL))
		cl__slice_begin_slow();
#endif
}

/*
 * cl__slice_end() - the lock was let go: withdraw the request, and yield
 * if the kernel granted an extension meanwhile.
 */
CL_ALWAYS_INLINE void cl__slice_end(void)
{
#if CL_SLICE_EXT
	if (CL_UNLIKELY(cl__slice_thread.req != NULL))
		cl__slice_end_slow();
#endif
}

/*
 * cl__slice_thread_off() - this thread's area goes away (thread exit, or
 * rseq failed): stop touching it. Called before the unregistering syscall.
 */
CL_INLINE void cl__slice_thread_off(void)
{
	CL_ATOMIC_STORE(&cl__slice_thread.req, (uint8_t *)NULL, CL_RELAXED);
	CL_BARRIER();
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_SLICE_H */
