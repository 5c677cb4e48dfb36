/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops.h - restartable per-CPU operations (rseq critical
 * sections) with a portable fallback, and the public per-CPU path built on
 * them.
 *
 * Each operation updates per-CPU (or per-concurrency-ID) data without an
 * atomic instruction: a short instruction sequence registered with the
 * kernel through rseq. The kernel aborts the sequence if the thread is
 * preempted, migrated or signalled before its final store (the commit), so
 * "check the index, load, compare, store" behaves as one step on that CPU.
 *
 * Two levels:
 *   cl_rseq_<op>(kind, ..., index)   one attempt on data of a given index;
 *       an abort returns CL_RSEQ_ABORT and the caller retries with a fresh
 *       index (cl_rseq_current_index()).
 *   cl_percpu_<op>(kind, p, stride, ...)   the per-CPU path: current index
 *       -> this index's copy of a pool object (p + index * stride) ->
 *       operation -> on abort, again. Returns the index whose copy changed.
 *       This is what per-CPU structures (counter.h, objcache.h) use.
 *
 * Index kinds (enum cl_rseq_index, the first parameter of every operation):
 *   CL_RSEQ_INDEX_CPU_ID  data indexed by CPU number; the section compares
 *                         the thread's rseq cpu_id (ABI offset 4).
 *   CL_RSEQ_INDEX_MM_CID  data indexed by the kernel's concurrency ID; the
 *                         section compares mm_cid (ABI offset 24) itself,
 *                         because an mm_cid can change without the thread
 *                         changing CPU (docs/rseq.md).
 *
 * Return codes of cl_rseq_<op>: CL_RSEQ_OK (0) committed; CL_RSEQ_CMPFAIL
 * (1) a compare failed (nothing stored); CL_RSEQ_ABORT (-1) aborted or the
 * index was not the current one (retry with a fresh index); CL_RSEQ_NO_AREA
 * (-2) the process runs the rseq path but this thread has no rseq area (do
 * not retry; errno ENOSYS); CL_RSEQ_EINVAL (-3) bad kind or memory order
 * (errno EINVAL). cl_percpu_<op>: the index (>= 0), CL_PERCPU_CMPFAIL (-2),
 * or -1 with errno EINVAL / ENOSYS.
 *
 * Implementation, chosen once per process (cl_rseq_ops_mode()):
 *   rseq    x86_64 asm (arch/x86_64/percpu_ops.h, GNU asm goto) when rseq is
 *           registered for the first thread that asks;
 *   atomic  a fallback on the same per-CPU memory: when this architecture
 *           has no asm here, the build uses ThreadSanitizer (it cannot model
 *           restarts), CL_NO_RSEQ_ASM is defined, rseq is unavailable
 *           (kernel without rseq, seccomp), or, for the mm_cid kind, the
 *           kernel does not publish mm_cid. add is an atomic fetch-add; pop
 *           and trypush use a lock bit in the list head; every other
 *           operation takes one of 64 striped spinlocks chosen by the
 *           address of the word it commits to (or of the pointer it loads).
 * The choice is process-wide (a weak symbol), never per thread: an rseq add
 * is a plain read-modify-write that is only safe if nobody else updates the
 * word with atomics from another CPU. Every translation unit of a program
 * must agree on CL_NO_RSEQ_ASM and on sanitizer flags.
 *
 * Synchronization table (same commit word, two threads):
 *                      add   cmpstore/cmp*_store/deref_add   pop/trypush   load
 *   add                yes   -                               -             yes (untorn)
 *   cmpstore, cmp*     -     yes                             -             yes
 *   pop, trypush       -     -                               yes           cl_rseq_list_first()
 * deref_add's target word is written only by deref_add and add; the pointer
 * it loads is changed only by cmpstore. A list head is changed only through
 * pop/trypush; in the fallback a pop briefly sets bit 0 of the head as its
 * lock, so a racy reader masks it (cl_rseq_list_first()).
 *
 * Writing one's own critical section (docs/percpu_ops.md): no system call
 * and no function call inside; never write a kernel-owned ABI field (only
 * rseq_cs); one commit store after the last check, as the last instruction;
 * the abort handler outside [start, post-commit) and preceded by CL_RSEQ_SIG.
 *
 * Test hooks: CL_INJECT(n) (config.h) runs in C around each critical
 * section; CL_RSEQ_INJECT_ASM(n) is an asm string placed between the steps
 * inside it (default ""), with CL_RSEQ_INJECT_CLOBBER (default nothing, else
 * a leading comma and register names) for the registers it uses; it may use
 * %rax and %rcx too (saved around it, see arch/x86_64/percpu_ops.h). The
 * stress tests define both to widen the race windows.
 */
#ifndef CACHELOCAL_PERCPU_OPS_H
#define CACHELOCAL_PERCPU_OPS_H

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"
#include "config.h"
#include "internal/backoff.h"
#include "rseq.h"
#include "sys.h"

CL_BEGIN_DECLS

/* ---- implementation selection (per translation unit, see above) ---- */

#if defined(CL_NO_RSEQ_ASM)
#define CL__RSEQ_OPS_STATIC_MODE CL_RSEQ_OPS_ATOMIC_FORCED
#elif defined(CL_HAVE_TSAN)
#define CL__RSEQ_OPS_STATIC_MODE CL_RSEQ_OPS_ATOMIC_TSAN
#elif defined(CL_ARCH_X86_64)
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

/* Return codes of the cl_rseq_<op> operations. */
#define CL_RSEQ_OK 0
#define CL_RSEQ_CMPFAIL 1
#define CL_RSEQ_ABORT (-1)
#define CL_RSEQ_NO_AREA (-2)
#define CL_RSEQ_EINVAL (-3)

/* cl_percpu_<op>: compare failed, list or buffer empty, buffer full. */
#define CL_PERCPU_CMPFAIL (-2)

/* Which id indexes the data an operation touches. */
enum cl_rseq_index {
	CL_RSEQ_INDEX_CPU_ID, /* rseq cpu_id: the CPU the thread runs on */
	CL_RSEQ_INDEX_MM_CID, /* rseq mm_cid: the kernel's concurrency ID */
};

/* Order of the final store of the buffer operations. */
enum cl_rseq_mo {
	CL_RSEQ_MO_RELAXED, /* the buffer is read on its own CPU only */
	CL_RSEQ_MO_RELEASE, /* a consumer on another CPU reads it after an acquire load of *v */
};

/* How the operations are carried out in this process. */
enum cl_rseq_ops_mode {
	CL_RSEQ_OPS_RSEQ,              /* rseq critical sections (asm) */
	CL_RSEQ_OPS_ATOMIC_NO_ASM,     /* fallback: no critical sections for this arch */
	CL_RSEQ_OPS_ATOMIC_TSAN,       /* fallback: ThreadSanitizer build */
	CL_RSEQ_OPS_ATOMIC_FORCED,     /* fallback: CL_NO_RSEQ_ASM defined */
	CL_RSEQ_OPS_ATOMIC_NO_RSEQ,    /* fallback: rseq not available to this process */
	CL_RSEQ_OPS_ATOMIC_NO_MM_CID,  /* fallback (mm_cid index): kernel has no mm_cid */
};

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

/**
 * cl_rseq_ops_mode_index() - how operations on data of index kind @kind run here.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 *
 * The first call in the process decides (from the calling thread's rseq
 * registration) and every later call returns the same answer, except that a
 * translation unit built with a fallback reason (TSan, CL_NO_RSEQ_ASM, no
 * asm) always reports that reason.
 *
 * Context: any thread; may register rseq for the calling thread (glibc-off).
 * Return: an enum cl_rseq_ops_mode value; CL_RSEQ_OPS_RSEQ means critical
 * sections.
 */
CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode_index(enum cl_rseq_index kind)
{
#ifdef CL_HAVE_RSEQ_ASM
	unsigned s = cl__rseq_ops_state_get();

	if (!(s & CL__RSEQ_OPS_HAVE_RSEQ))
		return CL_RSEQ_OPS_ATOMIC_NO_RSEQ;
	if (kind == CL_RSEQ_INDEX_MM_CID && !(s & CL__RSEQ_OPS_HAVE_CID))
		return CL_RSEQ_OPS_ATOMIC_NO_MM_CID;
	return CL_RSEQ_OPS_RSEQ;
#else
	(void)kind;
	return CL__RSEQ_OPS_STATIC_MODE;
#endif
}

/**
 * cl_rseq_ops_mode() - how cpu_id-indexed operations run in this process.
 *
 * Context: any thread.
 * Return: cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID).
 */
CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode(void)
{
	return cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID);
}

/**
 * cl_rseq_ops_mode_name() - printable name of an operations mode.
 * @m: the mode.
 *
 * Context: any.
 * Return: a static string ("rseq", "atomic-no-asm", "atomic-tsan",
 * "atomic-forced", "atomic-no-rseq", "atomic-no-mm_cid", or "?").
 */
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
 * cl__rseq_ops_enter() - 1 with *abi set: use the critical section; 0: use
 * the atomic fallback (process-wide); -1: the process uses critical sections
 * but this thread has no rseq area.
 */
/*
 * Undecided, fallback, or this thread's cache not filled yet (registers
 * the area if we own rseq, then caches it for @kind).
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

		*abi = slow;
		return r;
	}
}
#endif

#ifdef CL_HAVE_RSEQ_ASM
#define CL__PERCPU_OPS_INSIDE 1
#include "arch/x86_64/percpu_ops.h"
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

/**
 * cl_rseq_current_index() - the index to pass to an operation on @kind data.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 *
 * On the rseq path this is the raw field the critical section will compare
 * (cpu_id or mm_cid of this thread's rseq area), so it is below the number
 * of possible CPUs. On the fallback path it is cl_cpu_id() or cl_mm_cid();
 * any in-range index is then safe, so callers reduce it to their slot count.
 * The value may be stale by the time it is used: the operation then aborts
 * (rseq path) and the caller asks again.
 *
 * Context: any thread.
 * Return: an index >= 0.
 */
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
	return CL_RSEQ_NO_AREA;
}
#endif /* CL_HAVE_RSEQ_ASM */

static CL_COLD CL_NOINLINE CL_UNUSED int cl__rseq_einval(void)
{
	errno = EINVAL;
	return CL_RSEQ_EINVAL;
}

CL_ALWAYS_INLINE int cl__rseq_kind_bad(enum cl_rseq_index kind)
{
	return (unsigned)kind > (unsigned)CL_RSEQ_INDEX_MM_CID;
}

/* ---- portable fallback (waits: internal/backoff.h) ---- */

#define CL__RSEQ_LIST_LOCK ((uintptr_t)1)

CL_INLINE void **cl__rseq_next_ptr(void *node, size_t next_offset)
{
	return (void **)(void *)((char *)node + next_offset);
}

/*
 * A node a push may link: not NULL, bit 0 clear (the fallback's lock bit in
 * a head: a node with it set would read as "locked" forever), and its next
 * pointer at a pointer-aligned address. Checked by every push in every mode.
 */
CL_ALWAYS_INLINE int cl__rseq_node_bad(const void *node, size_t next_offset)
{
	return node == NULL ||
	       (((uintptr_t)node | ((uintptr_t)node + next_offset)) & (sizeof(void *) - 1)) != 0;
}

/*
 * Fallback pop. ABA-safe through a lock bit: bit 0 of the head (nodes are at
 * least 2-byte aligned) is set by the popper with a CAS, so while it reads
 * node->next no other pop or push can change the head; it then publishes
 * next, clearing the bit. Pushes wait while the bit is set. A pop holding
 * the bit may be preempted: others spin, then yield.
 */
CL_INLINE int cl__rseq_pop_atomic(void **head, size_t next_offset, void *end, void **out)
{
	unsigned spins = 0;
	void *node = CL_ATOMIC_LOAD(head, CL_RELAXED);

	for (;;) {
		if (node == end)
			return CL_RSEQ_CMPFAIL;
		if ((uintptr_t)node & CL__RSEQ_LIST_LOCK) {
			cl__backoff(&spins, CL__BACKOFF_SPINS);
			node = CL_ATOMIC_LOAD(head, CL_RELAXED);
			continue;
		}
		if (CL_ATOMIC_CAS(head, &node, (void *)((uintptr_t)node | CL__RSEQ_LIST_LOCK),
				  CL_ACQUIRE, CL_RELAXED))
			break;
		CL_INJECT(30);
	}
	CL_INJECT(31);
	*out = node;
	CL_ATOMIC_STORE(head, CL_ATOMIC_LOAD(cl__rseq_next_ptr(node, next_offset), CL_RELAXED),
			CL_RELEASE);
	return CL_RSEQ_OK;
}

/* The head without a fallback pop's lock bit (waits for the bit to clear). */
CL_INLINE void *cl__rseq_head_unlocked(void **head)
{
	unsigned spins = 0;
	void *first = CL_ATOMIC_LOAD(head, CL_RELAXED);

	while ((uintptr_t)first & CL__RSEQ_LIST_LOCK) {
		cl__backoff(&spins, CL__BACKOFF_SPINS);
		first = CL_ATOMIC_LOAD(head, CL_RELAXED);
	}
	return first;
}

/*
 * Striped spinlocks of the fallback for the compare-and-store family: one
 * of CL__RSEQ_FB_LOCKS, chosen by the address of the word committed to.
 * Held for a few instructions (and a memcpy); a holder preempted makes
 * others spin, then yield.
 */
#define CL__RSEQ_FB_LOCKS 64
struct cl__rseq_fb_lockword {
	unsigned v;
} CL_ALIGNED(CL_CACHELINE_SIZE);

CL_WEAK struct cl__rseq_fb_lockword cl__rseq_fb_locks[CL__RSEQ_FB_LOCKS];

CL_INLINE unsigned *cl__rseq_fb_lock(const void *word)
{
	uint64_t h = ((uint64_t)(uintptr_t)word >> 3) * 0x9E3779B97F4A7C15ull;
	unsigned *l = &cl__rseq_fb_locks[h >> 58].v;
	unsigned spins = 0, zero = 0;

	while (!CL_ATOMIC_CAS(l, &zero, 1u, CL_ACQUIRE, CL_RELAXED)) {
		zero = 0;
		cl__backoff(&spins, CL__BACKOFF_SPINS);
	}
	return l;
}

CL_INLINE void cl__rseq_fb_unlock(unsigned *l)
{
	CL_ATOMIC_STORE(l, 0u, CL_RELEASE);
}

CL_STATIC_ASSERT(CL__RSEQ_FB_LOCKS == 64, "the lock hash keeps 6 bits");

/* Fallback bodies, shared by cl_rseq_<op>() and cl_percpu_<op>(). */

/* if (*v == expect) { if (v2) *v2 = newv2; *v = newv (mo) } under v's lock. */
CL_INLINE int cl__rseq_cmpstore_store_fb(intptr_t *v, intptr_t expect, intptr_t *v2,
					 intptr_t newv2, intptr_t newv, enum cl_rseq_mo mo)
{
	unsigned *l = cl__rseq_fb_lock(v);
	int r = CL_RSEQ_CMPFAIL;

	if (CL_ATOMIC_LOAD(v, CL_ACQUIRE) == expect) {
		if (v2)
			CL_ATOMIC_STORE(v2, newv2, CL_RELAXED);
		if (mo == CL_RSEQ_MO_RELEASE)
			CL_ATOMIC_STORE(v, newv, CL_RELEASE);
		else
			CL_ATOMIC_STORE(v, newv, CL_RELAXED);
		r = CL_RSEQ_OK;
	}
	cl__rseq_fb_unlock(l);
	return r;
}

CL_INLINE int cl__rseq_cmp2_store_fb(intptr_t *v, intptr_t expect, intptr_t *v2, intptr_t expect2,
				     intptr_t newv)
{
	unsigned *l = cl__rseq_fb_lock(v);
	int r = CL_RSEQ_CMPFAIL;

	if (CL_ATOMIC_LOAD(v, CL_ACQUIRE) == expect && CL_ATOMIC_LOAD(v2, CL_ACQUIRE) == expect2) {
		CL_ATOMIC_STORE(v, newv, CL_RELEASE);
		r = CL_RSEQ_OK;
	}
	cl__rseq_fb_unlock(l);
	return r;
}

CL_INLINE int cl__rseq_cmpmemcpy_store_fb(intptr_t *v, intptr_t expect, void *dst, const void *src,
					  size_t len, intptr_t newv, enum cl_rseq_mo mo)
{
	unsigned *l = cl__rseq_fb_lock(v);
	int r = CL_RSEQ_CMPFAIL;

	if (CL_ATOMIC_LOAD(v, CL_ACQUIRE) == expect) {
		memcpy(dst, src, len);
		if (mo == CL_RSEQ_MO_RELEASE)
			CL_ATOMIC_STORE(v, newv, CL_RELEASE);
		else
			CL_ATOMIC_STORE(v, newv, CL_RELAXED);
		r = CL_RSEQ_OK;
	}
	cl__rseq_fb_unlock(l);
	return r;
}

/* Load *ptr and add through it under ptr's lock (a swapping cmpstore takes it too). */
CL_INLINE void cl__rseq_deref_add_fb(void **ptr, ptrdiff_t off, intptr_t count)
{
	unsigned *l = cl__rseq_fb_lock(ptr);

	CL_ATOMIC_FETCH_ADD((intptr_t *)(void *)((char *)CL_ATOMIC_LOAD(ptr, CL_ACQUIRE) + off), count,
			    CL_RELAXED);
	cl__rseq_fb_unlock(l);
}

/* Push with a release CAS; fails while a pop holds the lock bit or the head moved. */
CL_INLINE int cl__rseq_trypush_fb(void **head, void *first, void *node)
{
	return CL_ATOMIC_CAS(head, &first, node, CL_RELEASE, CL_RELAXED) ? CL_RSEQ_OK
									 : CL_RSEQ_CMPFAIL;
}

/*
 * CL__RSEQ_DISPATCH(kind, asm_call): run asm_call (which may use `abi`) when
 * the process uses critical sections for @kind; fail with CL_RSEQ_NO_AREA in
 * a thread without an rseq area; else fall through to the fallback below it.
 */
#ifdef CL_HAVE_RSEQ_ASM
#define CL__RSEQ_DISPATCH(kind, asm_call)                         \
	do {                                                      \
		struct cl_rseq_abi *abi;                          \
		int m_ = cl__rseq_ops_enter((kind), &abi);        \
                                                                  \
		if (CL_LIKELY(m_ > 0))                            \
			return asm_call;                          \
		if (m_ < 0)                                       \
			return cl__rseq_no_area();                \
	} while (0)
#else
#define CL__RSEQ_DISPATCH(kind, asm_call) ((void)(kind))
#endif

/* ---- operations on the data of one index ---- */

/**
 * cl_rseq_add() - *@v += @count on the word of index @index, if still there.
 * @kind: the index kind of the data (CL_RSEQ_INDEX_CPU_ID or _MM_CID).
 * @v: a word belonging to index @index (per-CPU data).
 * @count: the addend.
 * @index: the index of @v's owner, from cl_rseq_current_index(@kind).
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != index) abort;      (mm_cid kind: rseq->mm_cid)
 *	*v += count;                           commit
 * Fallback: atomic fetch-add (relaxed) on @v; @index is ignored.
 *
 * Context: any thread, also a signal handler once the thread has used an
 * operation (its rseq area is then live; the first use may register it).
 * Return: CL_RSEQ_OK; CL_RSEQ_ABORT (retry with a fresh index);
 * CL_RSEQ_NO_AREA (errno ENOSYS); CL_RSEQ_EINVAL (bad @kind).
 */
CL_ALWAYS_INLINE int cl_rseq_add(enum cl_rseq_index kind, intptr_t *v, intptr_t count, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(1);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, add, abi, v, count, index));
	(void)index;
	CL_ATOMIC_FETCH_ADD(v, count, CL_RELAXED);
	return CL_RSEQ_OK;
}

/**
 * cl_rseq_cmpstore() - if *@v == @expect then *@v = @newv, on index @index.
 * @kind: the index kind of the data.
 * @v: a word belonging to index @index.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @index: the index of @v's owner.
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != index) abort;
 *	if (*v != expect) return 1;
 *	*v = newv;                             commit
 * Fallback: under the word's striped lock, an acquire load, the compare, a
 * release store (acquire-release, like a CAS).
 * On x86_64 the rseq path is ordered like a release store (TSO).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK stored; CL_RSEQ_CMPFAIL *@v != @expect; CL_RSEQ_ABORT;
 * CL_RSEQ_NO_AREA (errno ENOSYS); CL_RSEQ_EINVAL (bad @kind).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpstore(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
				      intptr_t newv, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(2);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, cmpstore, abi, v, expect, newv, index));
	(void)index;
	return cl__rseq_cmpstore_store_fb(v, expect, NULL, 0, newv, CL_RSEQ_MO_RELEASE);
}

/**
 * cl_rseq_pop_until() - pop the first node of a list unless it is @end.
 * @kind: the index kind of the data.
 * @head: the list head (a void * holding the first node, or @end).
 * @next_offset: offset of the node's "next" pointer (a void *) in a node.
 * @end: the value that marks an empty list (NULL, or a sentinel node).
 * @out: receives the node on success.
 * @index: the index of @head's owner.
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != index) abort;
 *	node = *head; if (node == end) return 1;
 *	*out = node;                           (a private word: harmless if aborted)
 *	*head = *(node + next_offset);         commit
 * Fallback: ABA-safe pop with a lock bit in bit 0 of the head (nodes and
 * @end must be 2-byte aligned; see cl__rseq_pop_atomic()).
 *
 * Context: any thread; nodes must not be freed while another thread may
 * still pop them from this list (they may be reused, pushed again). Not from
 * a signal handler that may interrupt a pop or push of the same list: in
 * the fallback the handler would wait for the lock bit forever.
 * Return: CL_RSEQ_OK (*@out set); CL_RSEQ_CMPFAIL the head is @end;
 * CL_RSEQ_ABORT; CL_RSEQ_NO_AREA (errno ENOSYS); CL_RSEQ_EINVAL.
 */
CL_ALWAYS_INLINE int cl_rseq_pop_until(enum cl_rseq_index kind, void **head, size_t next_offset,
				       void *end, void **out, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(3);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, pop, abi, head, next_offset, end, out, index));
	(void)index;
	return cl__rseq_pop_atomic(head, next_offset, end, out);
}

/**
 * cl_rseq_pop() - cl_rseq_pop_until() with @end NULL: pop the first node.
 * @kind: the index kind of the data.
 * @head: the list head (NULL: empty).
 * @next_offset: offset of the "next" pointer in a node.
 * @out: receives the node.
 * @index: the index of @head's owner.
 *
 * Context: as cl_rseq_pop_until().
 * Return: as cl_rseq_pop_until(); CL_RSEQ_CMPFAIL means empty.
 */
CL_ALWAYS_INLINE int cl_rseq_pop(enum cl_rseq_index kind, void **head, size_t next_offset,
				 void **out, int index)
{
	return cl_rseq_pop_until(kind, head, next_offset, NULL, out, index);
}

/**
 * cl_rseq_trypush() - push @node on the list of index @index (one attempt).
 * @kind: the index kind of the data.
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node: pointer-aligned, and so its next pointer at @next_offset
 *        (else CL_RSEQ_EINVAL in every mode).
 * @index: the index of @head's owner.
 *
 * Built on the cmpstore section:
 *	first = *head;                         (fallback: wait while bit 0 is set)
 *	node->next = first;
 *	cmpstore(head, first, node, index);    1: the head moved, try again
 * Fallback: a release CAS (the pop's lock bit makes it fail while held).
 *
 * Context: any thread; @node is owned by the caller until the push commits.
 * Not from a signal handler that may interrupt a pop of the same list.
 * Return: CL_RSEQ_OK pushed; CL_RSEQ_CMPFAIL the head changed; CL_RSEQ_ABORT;
 * CL_RSEQ_NO_AREA (errno ENOSYS); CL_RSEQ_EINVAL.
 */
CL_ALWAYS_INLINE int cl_rseq_trypush(enum cl_rseq_index kind, void **head, size_t next_offset,
				     void *node, int index)
{
	void *first;

	if (CL_UNLIKELY(cl__rseq_kind_bad(kind) || cl__rseq_node_bad(node, next_offset)))
		return cl__rseq_einval();
#ifdef CL_HAVE_RSEQ_ASM
	{
		struct cl_rseq_abi *abi;
		int m_ = cl__rseq_ops_enter(kind, &abi);

		if (CL_LIKELY(m_ > 0)) {
			/* Critical sections for this kind: no fallback pop sets the
			 * lock bit in this process, so the head is read as is. */
			first = CL_READ_ONCE(*head);
			*cl__rseq_next_ptr(node, next_offset) = first;
			CL_INJECT(4);
			/* The void * head is updated as an 8-byte integer by the asm. */
			return CL__RSEQ_ASM(kind, cmpstore, abi, (intptr_t *)(void *)head,
					    (intptr_t)first, (intptr_t)node, index);
		}
		if (m_ < 0)
			return cl__rseq_no_area();
	}
#endif
	(void)index;
	first = cl__rseq_head_unlocked(head);
	*cl__rseq_next_ptr(node, next_offset) = first;
	CL_INJECT(4);
	return cl__rseq_trypush_fb(head, first, node);
}

/**
 * cl_rseq_cmpstore_store() - if *@v == @expect: *@v2 = @newv2, then *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @v2: the first word stored (the buffer slot), same index's data.
 * @newv2: stored to *@v2.
 * @newv: stored to *@v, the commit.
 * @mo: CL_RSEQ_MO_RELAXED, or CL_RSEQ_MO_RELEASE when a consumer on another
 *	CPU reads *@v2 after an acquire load of *@v.
 * @index: the index of the data's owner.
 *
 * The buffer push (cl_percpu_cmpstore_store()). Critical section:
 *	if (rseq->cpu_id != index) abort;
 *	if (*v != expect) return 1;
 *	*v2 = newv2;                           (not visible as pushed until the commit)
 *	*v = newv;                             commit (a release store on x86_64)
 * Fallback: the same under *@v's striped lock, the commit a release store
 * for CL_RSEQ_MO_RELEASE.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT, CL_RSEQ_NO_AREA (errno
 * ENOSYS) or CL_RSEQ_EINVAL (bad @kind or @mo).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpstore_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					    intptr_t *v2, intptr_t newv2, intptr_t newv,
					    enum cl_rseq_mo mo, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__rseq_einval();
	CL_INJECT(5);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, cmpstore_store, abi, v, expect, v2, newv2, newv,
					     index));
	(void)index;
	return cl__rseq_cmpstore_store_fb(v, expect, v2, newv2, newv, mo);
}

/**
 * cl_rseq_cmp2_store() - if *@v == @expect and *@v2 == @expect2: *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @v2: a second word to compare (the buffer's top slot), same index's data.
 * @expect2: the value *@v2 must hold.
 * @newv: stored to *@v.
 * @index: the index of the data's owner.
 *
 * The buffer pop (cl_percpu_cmp2_store()). Critical section:
 *	if (rseq->cpu_id != index) abort;
 *	if (*v != expect) return 1;
 *	if (*v2 != expect2) return 1;
 *	*v = newv;                             commit
 * Fallback: the same under *@v's striped lock.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT, CL_RSEQ_NO_AREA (errno
 * ENOSYS) or CL_RSEQ_EINVAL.
 */
CL_ALWAYS_INLINE int cl_rseq_cmp2_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					intptr_t *v2, intptr_t expect2, intptr_t newv, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(6);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, cmp2_store, abi, v, expect, v2, expect2, newv,
					     index));
	(void)index;
	return cl__rseq_cmp2_store_fb(v, expect, v2, expect2, newv);
}

/**
 * cl_rseq_cmpmemcpy_store() - if *@v == @expect: copy @len bytes, then *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @dst: where to copy (the buffer's free slot), same index's data.
 * @src: what to copy (private to the caller while the call runs).
 * @len: bytes to copy; keep it small (the section is restarted from the
 *	start on every abort; a few cache lines at most).
 * @newv: stored to *@v.
 * @mo: as for cl_rseq_cmpstore_store().
 * @index: the index of the data's owner.
 *
 * The copy-in buffer push. Critical section:
 *	if (rseq->cpu_id != index) abort;
 *	if (*v != expect) return 1;
 *	memcpy(dst, src, len);                 (8 bytes at a time, then bytes)
 *	*v = newv;                             commit
 * Fallback: the same under *@v's striped lock.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT, CL_RSEQ_NO_AREA (errno
 * ENOSYS) or CL_RSEQ_EINVAL (bad @kind or @mo).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpmemcpy_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					     void *dst, const void *src, size_t len, intptr_t newv,
					     enum cl_rseq_mo mo, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__rseq_einval();
	CL_INJECT(7);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, cmpmemcpy_store, abi, v, expect, dst, src, len,
					     newv, index));
	(void)index;
	return cl__rseq_cmpmemcpy_store_fb(v, expect, dst, src, len, newv, mo);
}

/**
 * cl_rseq_deref_add() - *(intptr_t *)(*@ptr + @off) += @count, *@ptr read inside.
 * @kind: the index kind of the data.
 * @ptr: a pointer word of index @index (e.g. this CPU's current block).
 * @off: byte offset of the counter word in the block *@ptr points to.
 * @count: the addend.
 * @index: the index of @ptr's owner.
 *
 * Critical section:
 *	if (rseq->cpu_id != index) abort;
 *	p = *ptr;
 *	*(intptr_t *)(p + off) += count;       commit
 * A cmpstore that swaps *@ptr on the same index cannot run between the load
 * and the add, so the add lands in the block *@ptr held at the commit.
 * Fallback: the load and an atomic add under *@ptr's striped lock (the
 * cmpstore swapping *@ptr takes the same lock).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_ABORT, CL_RSEQ_NO_AREA (errno ENOSYS) or
 * CL_RSEQ_EINVAL.
 */
CL_ALWAYS_INLINE int cl_rseq_deref_add(enum cl_rseq_index kind, void **ptr, ptrdiff_t off,
				       intptr_t count, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(8);
	CL__RSEQ_DISPATCH(kind, CL__RSEQ_ASM(kind, deref_add, abi, ptr, off, count, index));
	(void)index;
	cl__rseq_deref_add_fb(ptr, off, count);
	return CL_RSEQ_OK;
}

/**
 * cl_rseq_list_first() - racy peek at a list head, without the fallback's lock bit.
 * @head: the list head.
 *
 * Context: any thread; the node may be popped at any time after the read.
 * Return: the first node or NULL (also, with errno EINVAL, for a NULL @head).
 */
CL_INLINE void *cl_rseq_list_first(void **head)
{
	if (CL__BAD_ARG(head == NULL))
		return NULL;
	return (void *)((uintptr_t)CL_ATOMIC_LOAD(head, CL_ACQUIRE) & ~CL__RSEQ_LIST_LOCK);
}

/* ---- the per-CPU path: current index -> this copy -> operation -> retry ---- */

/*
 * The per-CPU path works on objects of a percpu.h pool (or any layout where
 * index i's copy of an object lies i * stride bytes after index 0's):
 *
 *	p      CPU 0's address of the object (what cl_percpu_alloc() returned);
 *	stride the pool's stride (cl_percpu_pool_stride(); CL_PERCPU_STRIDE by
 *	       default);
 * and every index the kind can produce must have a copy: a pool made with
 * max_nr_cpus 0 (all possible CPUs) covers cpu_id and mm_cid alike.
 *
 * Return of every cl_percpu_<op>(): the index whose copy the operation
 * changed (or, for a failed compare, looked at), >= 0; CL_PERCPU_CMPFAIL
 * (-2) when the compare failed / the list or buffer was empty / the buffer
 * was full (nothing stored); -1 with errno EINVAL (NULL pointer, zero
 * stride, bad kind or memory order) or ENOSYS (the process runs critical
 * sections but this thread has no rseq area: nothing stored).
 * Aborts are retried inside, with a fresh index each time.
 */

/* Index i's copy of the object whose index-0 copy is at p. */
CL_ALWAYS_INLINE void *cl__percpu_copy(const void *p, size_t stride, int i)
{
	return (void *)((const char *)p + (size_t)(unsigned)i * stride);
}

static CL_COLD CL_NOINLINE CL_UNUSED int cl__percpu_fail(int e)
{
	errno = e;
	return -1;
}

/*
 * CL__PERCPU_RSEQ(kind, body...): run body (a loop that returns; it may use
 * `abi`) when the process uses critical sections for @kind; -1 + ENOSYS in
 * a thread without an rseq area; else fall through to the fallback after it.
 */
#ifdef CL_HAVE_RSEQ_ASM
#define CL__PERCPU_RSEQ(kind, ...)                                \
	do {                                                      \
		struct cl_rseq_abi *abi;                          \
		int m_ = cl__rseq_ops_enter((kind), &abi);        \
                                                                  \
		if (CL_LIKELY(m_ > 0)) {                          \
			__VA_ARGS__                               \
		}                                                 \
		if (m_ < 0)                                       \
			return cl__percpu_fail(ENOSYS);           \
	} while (0)

/* add, the copy's address computed in C from an index read before the section. */
CL_ALWAYS_INLINE int cl__percpu_add_passed(enum cl_rseq_index kind, struct cl_rseq_abi *abi,
					   intptr_t *p, size_t stride, intptr_t count)
{
	for (;;) {
		int i = cl__rseq_abi_index(abi, kind);

		CL_INJECT(10); /* stale index window */
		if (CL_LIKELY(CL__RSEQ_ASM(kind, add, abi, (intptr_t *)cl__percpu_copy(p, stride, i),
					   count, i) == CL_RSEQ_OK))
			return i;
	}
}

/* add, the index read and the copy's address computed inside the section. */
CL_ALWAYS_INLINE int cl__percpu_add_here(enum cl_rseq_index kind, struct cl_rseq_abi *abi,
					 intptr_t *p, size_t stride, intptr_t count)
{
	int i;

#if CL__RSEQ_ASM_GOTO_OUTPUTS
	if (__builtin_constant_p(stride) && stride != 0 && (stride & (stride - 1)) == 0) {
		/* A constant power-of-two stride (a pool's default): the index is
		 * the copy's distance from p, a shift the compiler drops when the
		 * caller ignores it (cl_counter_add()). */
		intptr_t *at;

		while (CL_UNLIKELY(CL__RSEQ_ASM(kind, add_here_at, abi, p, stride, count, &at) !=
				   CL_RSEQ_OK))
			CL_INJECT(10);
		i = (int)(((uintptr_t)at - (uintptr_t)p) / stride);
		if (i < 0) /* an index below the number of CPUs */
			__builtin_unreachable();
		return i;
	}
#endif
	while (CL_UNLIKELY(CL__RSEQ_ASM(kind, add_here, abi, p, stride, count, &i) != CL_RSEQ_OK))
		CL_INJECT(10);
	if (i < 0) /* a u32 field below the number of CPUs: tells the compiler i >= 0 */
		__builtin_unreachable();
	return i;
}
/*
 * A section that reads the index itself (op_here): retry on abort; the
 * index whose copy changed, or CL_PERCPU_CMPFAIL.
 */
#define CL__PERCPU_RSEQ_HERE(kind, op, ...)                                          \
	CL__PERCPU_RSEQ(kind, for (;;) {                                             \
		int i_, r_ = CL__RSEQ_ASM(kind, op, abi, __VA_ARGS__, &i_);          \
                                                                                     \
		if (CL_LIKELY(r_ == CL_RSEQ_OK)) {                                   \
			if (i_ < 0) /* a u32 field below the number of CPUs */       \
				__builtin_unreachable();                             \
			return i_;                                                   \
		}                                                                    \
		if (r_ != CL_RSEQ_ABORT) /* i_ is not set on this path */            \
			return CL_PERCPU_CMPFAIL;                                    \
		CL_INJECT(11);                                                       \
	})
#else
#define CL__PERCPU_RSEQ(kind, ...) ((void)(kind))
#define CL__PERCPU_RSEQ_HERE(kind, op, ...) ((void)(kind))
#endif

/**
 * cl_percpu_add() - add @count to this CPU's (or mm_cid's) copy of *@p.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 * @p: CPU 0's address of a per-CPU intptr_t (a pool object).
 * @stride: bytes between two indexes' copies.
 * @count: the addend.
 *
 * Per attempt (rseq path), one critical section that reads the index
 * itself and computes the copy's address from it:
 *	i = rseq->cpu_id;                      (mm_cid kind: rseq->mm_cid)
 *	*(p + i * stride) += count;            commit
 * (no index compare: the index is read after the section started, so a
 * migration or preemption after the read aborts it). Measured faster than
 * computing the address in C from an index the section then compares
 * (bench/percpu_ops, docs/percpu_ops.md). Fallback: atomic add on the
 * current index's copy.
 *
 * Context: any thread, also a signal handler (see cl_rseq_add()).
 * Return: the index whose copy was added to, or -1 (errno EINVAL, ENOSYS).
 */
/* cl_percpu_add() without critical sections (out of line: the inline fast
 * path stays small enough for its callers to be inlined). */
static CL_NOINLINE CL_UNUSED int cl__percpu_add_fb(enum cl_rseq_index kind, intptr_t *p,
						   size_t stride, intptr_t count)
{
	int i = cl__percpu_fallback_index(kind);

	CL_ATOMIC_FETCH_ADD((intptr_t *)cl__percpu_copy(p, stride, i), count, CL_RELAXED);
	return i;
}

CL_ALWAYS_INLINE int cl_percpu_add(enum cl_rseq_index kind, intptr_t *p, size_t stride,
				   intptr_t count)
{
	if (CL_UNLIKELY(p == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, return cl__percpu_add_here(kind, abi, p, stride, count););
	return cl__percpu_add_fb(kind, p, stride, count);
}

/**
 * cl_percpu_cmpstore() - if this copy of *@p == @expect, store @newv there.
 * @kind: the index kind.
 * @p: CPU 0's address of a per-CPU intptr_t.
 * @stride: bytes between two indexes' copies.
 * @expect: the value the copy must hold.
 * @newv: the value stored.
 *
 * Per attempt: cl_rseq_cmpstore() on the current index's copy.
 *
 * Context: any thread.
 * Return: the index whose copy was stored to; CL_PERCPU_CMPFAIL the copy of
 * the current index did not hold @expect; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_cmpstore(enum cl_rseq_index kind, intptr_t *p, size_t stride,
					intptr_t expect, intptr_t newv)
{
	int i;

	if (CL_UNLIKELY(p == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		int r;

		i = cl__rseq_abi_index(abi, kind);
		r = CL__RSEQ_ASM(kind, cmpstore, abi, (intptr_t *)cl__percpu_copy(p, stride, i),
				 expect, newv, i);
		if (r != CL_RSEQ_ABORT)
			return r == CL_RSEQ_OK ? i : CL_PERCPU_CMPFAIL;
	});
	i = cl__percpu_fallback_index(kind);
	return cl__rseq_cmpstore_store_fb((intptr_t *)cl__percpu_copy(p, stride, i), expect, NULL, 0,
					  newv, CL_RSEQ_MO_RELEASE) == CL_RSEQ_OK
		       ? i
		       : CL_PERCPU_CMPFAIL;
}

/**
 * cl_percpu_pop() - pop the first node of this CPU's copy of a list.
 * @kind: the index kind.
 * @head: CPU 0's address of a per-CPU list head (void *, NULL when empty).
 * @stride: bytes between two indexes' copies.
 * @next_offset: offset of the "next" pointer (a void *) in a node.
 * @out: receives the node.
 *
 * Per attempt (rseq path), one section that reads the index itself:
 *	i = rseq->cpu_id (or mm_cid); h = head + i * stride;
 *	node = *h; if (node == NULL) return CL_PERCPU_CMPFAIL;
 *	*out = node; *h = node->next;          commit
 * Fallback: the lock-bit pop of cl_rseq_pop_until() on the current index's
 * head.
 *
 * Context: as cl_rseq_pop_until().
 * Return: the index whose list the node came from (*@out set);
 * CL_PERCPU_CMPFAIL that list was empty; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_pop(enum cl_rseq_index kind, void **head, size_t stride,
				   size_t next_offset, void **out)
{
	int i;

	if (CL_UNLIKELY(head == NULL || out == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		int r = CL__RSEQ_ASM(kind, pop_here, abi, head, stride, next_offset, NULL, out, &i);

		if (r != CL_RSEQ_ABORT)
			return r == CL_RSEQ_OK ? i : CL_PERCPU_CMPFAIL;
	});
	i = cl__percpu_fallback_index(kind);
	return cl__rseq_pop_atomic((void **)cl__percpu_copy(head, stride, i), next_offset, NULL,
				   out) == CL_RSEQ_OK
		       ? i
		       : CL_PERCPU_CMPFAIL;
}

/**
 * cl_percpu_trypush() - push @node on this CPU's copy of a list.
 * @kind: the index kind.
 * @head: CPU 0's address of a per-CPU list head.
 * @stride: bytes between two indexes' copies.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node, owned by the caller: pointer-aligned, and so its next
 *        pointer at @next_offset (else -1, EINVAL, in every mode).
 *
 * Per attempt (rseq path), one section that reads the index and the head
 * itself (nothing to compare, so nothing can go stale):
 *	i = rseq->cpu_id (or mm_cid); h = head + i * stride;
 *	node->next = *h;                       (the caller's node: harmless if aborted)
 *	*h = node;                             commit
 * Fallback: cl_rseq_trypush()'s CAS on the current index's head, retried
 * until it succeeds. The path fails only on bad input or a missing rseq
 * area.
 *
 * Context: as cl_rseq_trypush().
 * Return: the index whose list @node was pushed on; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_trypush(enum cl_rseq_index kind, void **head, size_t stride,
				       size_t next_offset, void *node)
{
	void **h, *first;
	int i;

	if (CL_UNLIKELY(head == NULL || stride == 0 || cl__rseq_kind_bad(kind) ||
			cl__rseq_node_bad(node, next_offset)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		CL_INJECT(4);
		if (CL__RSEQ_ASM(kind, push_here, abi, head, stride, next_offset, node, &i) ==
		    CL_RSEQ_OK)
			return i;
	});
	do {
		i = cl__percpu_fallback_index(kind);
		h = (void **)cl__percpu_copy(head, stride, i);
		first = cl__rseq_head_unlocked(h);
		*cl__rseq_next_ptr(node, next_offset) = first;
		CL_INJECT(4);
	} while (cl__rseq_trypush_fb(h, first, node) != CL_RSEQ_OK);
	return i;
}

/**
 * cl_percpu_cmpstore_store() - buffer push: append @item to this CPU's copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count (an intptr_t).
 * @stride: bytes between two indexes' copies.
 * @items: CPU 0's address of the buffer's slot array (void *[@cap]), in the
 *	same pool object as @count.
 * @cap: number of slots (> 0).
 * @item: the pointer to append.
 * @mo: CL_RSEQ_MO_RELAXED, or CL_RSEQ_MO_RELEASE when a consumer on another
 *	CPU reads the slots after an acquire load of the count.
 *
 * Per attempt, on the current index's copy (with critical sections, one
 * section reads the index, the count and writes the slot, so nothing is
 * read before it and rechecked):
 *	n = *count; if ((unsigned)n >= cap) return CL_PERCPU_CMPFAIL;   (full)
 *	items[n] = item; *count = n + 1 (the commit)
 * The fallback does the same under the count's striped lock
 * (cl_rseq_cmpstore_store(count, n, &items[n], item, n + 1)). A negative
 * count (a drainer owns the copy) reads as full.
 *
 * Context: any thread.
 * Return: the index whose buffer took @item; CL_PERCPU_CMPFAIL that buffer
 * was full; -1 (errno EINVAL: NULL pointer, zero stride, @cap <= 0, bad
 * kind or mo; ENOSYS).
 */
/* cl_percpu_cmpstore_store() without critical sections (out of line: the
 * inline fast path stays small). */
static CL_NOINLINE CL_UNUSED int cl__percpu_bufpush_fb(enum cl_rseq_index kind, intptr_t *count,
						       size_t stride, void **items, intptr_t cap,
						       void *item, enum cl_rseq_mo mo)
{
	for (;;) {
		int i = cl__percpu_fallback_index(kind);
		intptr_t *c = (intptr_t *)cl__percpu_copy(count, stride, i);
		intptr_t n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		void **slot;

		if (n < 0 || n >= cap)
			return CL_PERCPU_CMPFAIL;
		slot = (void **)cl__percpu_copy(items, stride, i) + n;
		if (cl__rseq_cmpstore_store_fb(c, n, (intptr_t *)(void *)slot, (intptr_t)item, n + 1,
					       mo) == CL_RSEQ_OK)
			return i;
	}
}

CL_ALWAYS_INLINE int cl_percpu_cmpstore_store(enum cl_rseq_index kind, intptr_t *count,
					      size_t stride, void **items, intptr_t cap, void *item,
					      enum cl_rseq_mo mo)
{
	if (CL_UNLIKELY(count == NULL || items == NULL || stride == 0 || cap <= 0 ||
			cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__percpu_fail(EINVAL);
	/* The count, the slot and the index are read inside the section. */
	CL__PERCPU_RSEQ_HERE(kind, bufpush_here, count, stride, items, cap, item);
	return cl__percpu_bufpush_fb(kind, count, stride, items, cap, item, mo);
}

/**
 * cl_percpu_cmp2_store() - buffer pop: take the last item of this CPU's copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count.
 * @stride: bytes between two indexes' copies.
 * @items: CPU 0's address of the buffer's slot array.
 * @out: receives the item.
 *
 * Per attempt, on the current index's copy (with critical sections, one
 * section reads the index, the count and the item and commits the count):
 *	n = *count; if (n <= 0) return CL_PERCPU_CMPFAIL;     (empty)
 *	*out = items[n - 1]; *count = n - 1 (the commit)
 * The fallback does the same under the count's striped lock
 * (cl_rseq_cmp2_store(count, n, &items[n - 1], item, n - 1): both compares,
 * the count alone could match after a pop and a push of another item). A
 * negative count (a drainer owns the copy) reads as empty. *@out is
 * meaningful only on success (an aborted attempt may have written it).
 *
 * Context: any thread.
 * Return: the index whose buffer gave *@out; CL_PERCPU_CMPFAIL that buffer
 * was empty; -1 (errno EINVAL, ENOSYS).
 */
/* cl_percpu_cmp2_store() without critical sections (out of line). */
static CL_NOINLINE CL_UNUSED int cl__percpu_bufpop_fb(enum cl_rseq_index kind, intptr_t *count,
						      size_t stride, void **items, void **out)
{
	for (;;) {
		int i = cl__percpu_fallback_index(kind);
		intptr_t *c = (intptr_t *)cl__percpu_copy(count, stride, i);
		intptr_t n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		void **slot, *item;

		if (n <= 0)
			return CL_PERCPU_CMPFAIL;
		slot = (void **)cl__percpu_copy(items, stride, i) + (n - 1);
		item = CL_ATOMIC_LOAD(slot, CL_RELAXED);
		if (cl__rseq_cmp2_store_fb(c, n, (intptr_t *)(void *)slot, (intptr_t)item, n - 1) ==
		    CL_RSEQ_OK) {
			*out = item;
			return i;
		}
	}
}

CL_ALWAYS_INLINE int cl_percpu_cmp2_store(enum cl_rseq_index kind, intptr_t *count, size_t stride,
					  void **items, void **out)
{
	if (CL_UNLIKELY(count == NULL || items == NULL || out == NULL || stride == 0 ||
			cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	/* The count, the item and the index are read inside the section. */
	CL__PERCPU_RSEQ_HERE(kind, bufpop_here, count, stride, items, out);
	return cl__percpu_bufpop_fb(kind, count, stride, items, out);
}

/**
 * cl_percpu_cmpmemcpy_store() - copy-in buffer push: append one element by copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count (elements used).
 * @stride: bytes between two indexes' copies.
 * @buf: CPU 0's address of the element array (@cap elements of @size bytes).
 * @cap: number of elements (> 0).
 * @size: bytes per element (> 0; small: the copy runs inside the section).
 * @src: the element to copy in.
 * @mo: as for cl_percpu_cmpstore_store().
 *
 * Per attempt, on the current index's copy:
 *	n = *count; if (n >= cap) return CL_PERCPU_CMPFAIL;   (full)
 *	cl_rseq_cmpmemcpy_store(count, n, buf + n * size, src, size, n + 1)
 *
 * Context: any thread.
 * Return: the index whose buffer took the element; CL_PERCPU_CMPFAIL full;
 * -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_cmpmemcpy_store(enum cl_rseq_index kind, intptr_t *count,
					       size_t stride, void *buf, intptr_t cap, size_t size,
					       const void *src, enum cl_rseq_mo mo)
{
	intptr_t *c, n;
	char *dst;
	int i;

	if (CL_UNLIKELY(count == NULL || buf == NULL || src == NULL || stride == 0 || cap <= 0 ||
			size == 0 || cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		i = cl__rseq_abi_index(abi, kind);
		c = (intptr_t *)cl__percpu_copy(count, stride, i);
		n = CL_READ_ONCE(*c);
		if (CL_UNLIKELY(n < 0 || n >= cap))
			return CL_PERCPU_CMPFAIL;
		dst = (char *)cl__percpu_copy(buf, stride, i) + (size_t)n * size;
		CL_INJECT(11); /* stale snapshot window */
		if (CL__RSEQ_ASM(kind, cmpmemcpy_store, abi, c, n, dst, src, size, n + 1, i) ==
		    CL_RSEQ_OK)
			return i;
	});
	for (;;) {
		i = cl__percpu_fallback_index(kind);
		c = (intptr_t *)cl__percpu_copy(count, stride, i);
		n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		if (n < 0 || n >= cap)
			return CL_PERCPU_CMPFAIL;
		dst = (char *)cl__percpu_copy(buf, stride, i) + (size_t)n * size;
		if (cl__rseq_cmpmemcpy_store_fb(c, n, dst, src, size, n + 1, mo) == CL_RSEQ_OK)
			return i;
	}
}

/**
 * cl_percpu_deref_add() - add @count through this CPU's copy of a pointer.
 * @kind: the index kind.
 * @ptr: CPU 0's address of a per-CPU pointer (void *) to a block.
 * @stride: bytes between two indexes' copies.
 * @off: byte offset of an intptr_t in the block.
 * @count: the addend.
 *
 * Per attempt: cl_rseq_deref_add() on the current index's pointer: the
 * block is the one the pointer held when the add committed.
 *
 * Context: any thread.
 * Return: the index whose pointer was followed; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_deref_add(enum cl_rseq_index kind, void **ptr, size_t stride,
					 ptrdiff_t off, intptr_t count)
{
	int i;

	if (CL_UNLIKELY(ptr == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		i = cl__rseq_abi_index(abi, kind);
		if (CL__RSEQ_ASM(kind, deref_add, abi, (void **)cl__percpu_copy(ptr, stride, i), off,
				 count, i) == CL_RSEQ_OK)
			return i;
	});
	i = cl__percpu_fallback_index(kind);
	cl__rseq_deref_add_fb((void **)cl__percpu_copy(ptr, stride, i), off, count);
	return i;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_H */
