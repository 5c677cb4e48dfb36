/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops.h - restartable per-CPU operations (rseq critical
 * sections) with a portable atomic fallback.
 *
 * Each operation updates one word of per-CPU (or per-concurrency-ID) data
 * without an atomic instruction: a short instruction sequence registered
 * with the kernel through rseq. The kernel aborts the sequence if the thread
 * is preempted, migrated or signalled before its single final store (the
 * commit), so "check the index, load, compare, store" behaves as one step on
 * that CPU. An aborted sequence jumps to an abort handler and the operation
 * returns a negative value: the caller re-reads its index and retries.
 *
 * Index modes (the _cpu_id / _mm_cid suffixes):
 *   cpu_id  data indexed by CPU number; the section compares the thread's
 *           rseq cpu_id (ABI offset 4) with the index it was given.
 *   mm_cid  data indexed by the kernel's concurrency ID; the section compares
 *           mm_cid (ABI offset 24) itself, because an mm_cid can change
 *           without the thread changing CPU (docs/rseq.md).
 * The index passed to an operation comes from cl_rseq_current_index() (or
 * cl_cpu_id() / cl_mm_cid()); a stale index only costs an abort.
 *
 * Return codes: CL_RSEQ_OK (0) committed; CL_RSEQ_CMPFAIL (1) the compare
 * failed (nothing stored); CL_RSEQ_ABORT (-1) aborted or the index was not
 * the current one (retry with a fresh index); CL_RSEQ_NO_AREA (-2) the
 * process runs the rseq path but this thread has no rseq area (do not retry;
 * errno is ENOSYS).
 *
 * Implementation, chosen once per process (cl_rseq_ops_mode()):
 *   rseq    x86_64 asm (GNU asm goto) when rseq is registered for the first
 *           thread that asks;
 *   atomic  a fallback on the same per-CPU word with __atomic builtins: when
 *           this architecture has no asm here, the build uses
 *           ThreadSanitizer (it cannot model restarts), CL_NO_RSEQ_ASM is
 *           defined, rseq is unavailable (kernel without rseq, seccomp), or,
 *           for the mm_cid index, the kernel does not publish mm_cid.
 * The choice is process-wide (a weak symbol), never per thread: an rseq add
 * is a plain read-modify-write that is only safe if nobody else updates the
 * word with atomics from another CPU. Every translation unit of a program
 * must agree on CL_NO_RSEQ_ASM and on sanitizer flags.
 *
 * Synchronization table (same word, two threads):
 *                  add     cmpstore   pop      push     plain/atomic load
 *   add            yes     -          -        -        yes (untorn)
 *   cmpstore       -       yes        -        -        yes
 *   pop            -       -          yes      yes      yes (see below)
 *   push           -       -          yes      yes      yes (see below)
 * A list head is changed only through cl_rseq_pop()/cl_rseq_push(); in the
 * atomic fallback a pop briefly sets bit 0 of the head as its lock, so a
 * racy reader of a head must mask bit 0 (cl_rseq_list_first()).
 *
 * Writing one's own critical section (docs/percpu_ops.md): no system call
 * and no function call inside; never write a kernel-owned ABI field (only
 * rseq_cs); exactly one store after the last check, as the last instruction;
 * the abort handler outside [start, post-commit) and preceded by CL_RSEQ_SIG.
 *
 * Test hooks: CL_INJECT(n) (config.h) runs in C around each critical
 * section; CL_RSEQ_INJECT_ASM(n) is an asm string placed between the steps
 * inside it (default ""), with CL_RSEQ_INJECT_CLOBBER (default nothing, else
 * a leading comma and register names) for the registers it uses. The stress
 * tests define both to widen the race windows.
 */
#ifndef CACHELOCAL_PERCPU_OPS_H
#define CACHELOCAL_PERCPU_OPS_H

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "config.h"
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

#ifndef CL_RSEQ_INJECT_ASM
#define CL_RSEQ_INJECT_ASM(n) ""
#endif
#ifndef CL_RSEQ_INJECT_CLOBBER
#define CL_RSEQ_INJECT_CLOBBER
#endif

/* Return codes of every operation. */
#define CL_RSEQ_OK 0
#define CL_RSEQ_CMPFAIL 1
#define CL_RSEQ_ABORT (-1)
#define CL_RSEQ_NO_AREA (-2)

/* Which id indexes the data an operation touches. */
enum cl_rseq_index {
	CL_RSEQ_INDEX_CPU_ID, /* rseq cpu_id: the CPU the thread runs on */
	CL_RSEQ_INDEX_MM_CID, /* rseq mm_cid: the kernel's concurrency ID */
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

/* Decided once, by the first thread that uses an operation; never reset. */
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
 * cl_rseq_ops_mode_index() - how operations on data of index @idx run here.
 * @idx: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
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
CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode_index(enum cl_rseq_index idx)
{
#ifdef CL_HAVE_RSEQ_ASM
	unsigned s = cl__rseq_ops_state_get();

	if (!(s & CL__RSEQ_OPS_HAVE_RSEQ))
		return CL_RSEQ_OPS_ATOMIC_NO_RSEQ;
	if (idx == CL_RSEQ_INDEX_MM_CID && !(s & CL__RSEQ_OPS_HAVE_CID))
		return CL_RSEQ_OPS_ATOMIC_NO_MM_CID;
	return CL_RSEQ_OPS_RSEQ;
#else
	(void)idx;
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
CL_ALWAYS_INLINE int cl__rseq_ops_enter(enum cl_rseq_index idx, struct cl_rseq_abi **abi)
{
	unsigned need = idx == CL_RSEQ_INDEX_MM_CID ? CL__RSEQ_OPS_HAVE_CID : CL__RSEQ_OPS_HAVE_RSEQ;

	if (CL_UNLIKELY(!(cl__rseq_ops_state_get() & need)))
		return 0;
	*abi = cl_rseq_abi_get();
	return CL_LIKELY(*abi != NULL) ? 1 : -1;
}
#endif

/* ---- the current index ---- */

/**
 * cl_rseq_current_index() - the index to pass to an operation on @idx data.
 * @idx: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
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
CL_INLINE int cl_rseq_current_index(enum cl_rseq_index idx)
{
	int v;

#ifdef CL_HAVE_RSEQ_ASM
	struct cl_rseq_abi *abi;

	if (cl__rseq_ops_enter(idx, &abi) > 0)
		return (int)(idx == CL_RSEQ_INDEX_MM_CID ? CL_READ_ONCE(abi->mm_cid)
							 : CL_READ_ONCE(abi->cpu_id));
#endif
	v = idx == CL_RSEQ_INDEX_MM_CID ? cl_mm_cid() : cl_cpu_id();
	return v >= 0 ? v : 0;
}

/* ---- x86_64 critical sections ---- */

#ifdef CL_HAVE_RSEQ_ASM

/* Every ABI offset used in the asm below, tied to the struct. */
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id) == CL_RSEQ_ABI_CPU_ID_OFFSET,
		 "cpu_id offset used in asm");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, rseq_cs) == CL_RSEQ_ABI_RSEQ_CS_OFFSET,
		 "rseq_cs offset used in asm");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, mm_cid) == CL_RSEQ_ABI_MM_CID_OFFSET,
		 "mm_cid offset used in asm");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, cpu_id) == 4, "cmpl on cpu_id");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, mm_cid) == 4, "cmpl on mm_cid");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, rseq_cs) == 8, "movq to rseq_cs");
/* The descriptor emitted by CL__RSEQ_ASM_DESCRIPTOR: .long, .long, .quad x 3. */
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, start_ip) == 8, "rseq_cs start_ip");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, post_commit_offset) == 16, "rseq_cs post_commit");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, abort_ip) == 24, "rseq_cs abort_ip");
CL_STATIC_ASSERT(sizeof(intptr_t) == 8 && sizeof(void *) == 8, "x86_64 words");

/*
 * Labels inside one critical section (numeric local labels, so a section
 * can be inlined or duplicated any number of times):
 *   3  the struct cl_rseq_cs descriptor, in section __rseq_cs
 *   1  start_ip: first instruction after rseq_cs is published
 *   2  post-commit: first instruction after the commit store
 *   4  abort_ip, in section __rseq_failure, right after the signature
 * CL_RSEQ_INJECT_ASM() must use other labels (5 and up).
 */
#define CL__RSEQ_ASM_DESCRIPTOR                  \
	".pushsection __rseq_cs, \"aw\"\n\t"     \
	".balign 32\n\t"                         \
	"3:\n\t"                                 \
	".long 0, 0\n\t"                         \
	".quad 1f, (2f - 1f), 4f\n\t"            \
	".popsection\n\t"

/* Publish the descriptor in abi->rseq_cs, then start (label 1). */
#define CL__RSEQ_ASM_START                      \
	"leaq 3b(%%rip), %%rax\n\t"              \
	"movq %%rax, %c[cs_off](%[abi])\n\t"     \
	"1:\n\t"

/* Abort unless the index field of the area still equals the index. */
#define CL__RSEQ_ASM_CHECK_INDEX               \
	"cmpl %[idx], %c[idx_off](%[abi])\n\t"   \
	"jnz 4f\n\t"

/*
 * Abort handler: the kernel checks the 4 bytes before abort_ip against the
 * registered signature. They are the immediate of "ud1 sig(%rip), %edi"
 * (0f b9 3d + imm32), which never executes: nothing jumps to it.
 */
#define CL__RSEQ_ASM_ABORT                       \
	".pushsection __rseq_failure, \"ax\"\n\t" \
	".byte 0x0f, 0xb9, 0x3d\n\t"              \
	".long %c[sig]\n\t"                       \
	"4:\n\t"                                  \
	"jmp %l[cl_abort]\n\t"                    \
	".popsection\n\t"

#define CL__RSEQ_ASM_COMMON_INPUTS(idx_offset)                                        \
	[abi] "r"(abi), [idx] "r"(idx), [cs_off] "i"(CL_RSEQ_ABI_RSEQ_CS_OFFSET),      \
		[idx_off] "i"(idx_offset), [sig] "i"(CL_RSEQ_SIG)

/*
 * add: *v += count
 *
 *	rseq_cs = &descriptor;
 *	start:	if (area->index_field != idx) goto abort;
 *		*v += count;             <- commit (one add to memory)
 *	post_commit:
 *	return 0;
 *	abort:	return -1;
 */
#define CL__RSEQ_ADD_ASM(idx_offset)                                                   \
	__asm__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL_RSEQ_INJECT_ASM(1)    \
			     CL__RSEQ_ASM_CHECK_INDEX CL_RSEQ_INJECT_ASM(2)                  \
		     "addq %[count], %[v]\n\t"                                           \
		     "2:\n\t" CL__RSEQ_ASM_ABORT                                         \
		     : /* no outputs: results go through memory */                       \
		     : CL__RSEQ_ASM_COMMON_INPUTS(idx_offset), [v] "m"(*v), [count] "er"(count) \
		     : "memory", "cc", "rax" CL_RSEQ_INJECT_CLOBBER                      \
		     : cl_abort)

/*
 * cmpstore: if (*v == expect) *v = newv
 *
 *	rseq_cs = &descriptor;
 *	start:	if (area->index_field != idx) goto abort;
 *		if (*v != expect) goto cmpfail;
 *		*v = newv;               <- commit
 *	post_commit:
 *	return 0;  cmpfail: return 1;  abort: return -1;
 */
#define CL__RSEQ_CMPSTORE_ASM(idx_offset)                                              \
	__asm__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL_RSEQ_INJECT_ASM(1)    \
			     CL__RSEQ_ASM_CHECK_INDEX CL_RSEQ_INJECT_ASM(2)                  \
		     "cmpq %[v], %[expect]\n\t"                                          \
		     "jnz %l[cl_cmpfail]\n\t" CL_RSEQ_INJECT_ASM(3)                      \
		     "movq %[newv], %[v]\n\t"                                            \
		     "2:\n\t" CL__RSEQ_ASM_ABORT                                         \
		     : /* no outputs */                                                  \
		     : CL__RSEQ_ASM_COMMON_INPUTS(idx_offset), [v] "m"(*v),              \
		       [expect] "r"(expect), [newv] "r"(newv)                            \
		     : "memory", "cc", "rax" CL_RSEQ_INJECT_CLOBBER                      \
		     : cl_abort, cl_cmpfail)

/*
 * pop: remove the first node of a singly linked list
 *
 *	rseq_cs = &descriptor;
 *	start:	if (area->index_field != idx) goto abort;
 *		node = *head;
 *		if (node == NULL) goto cmpfail;
 *		*out = node;             (a private word: harmless if aborted)
 *		next = *(node + next_offset);
 *		*head = next;            <- commit
 *	post_commit:
 *	return 0;  cmpfail: return 1;  abort: return -1;
 *
 * ABA-safe: node and next are read and head is written without the thread
 * leaving the CPU in between, and every other writer of this head runs its
 * own critical section on the same CPU, so none can run in between.
 */
#define CL__RSEQ_POP_ASM(idx_offset)                                                   \
	__asm__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL_RSEQ_INJECT_ASM(1)    \
			     CL__RSEQ_ASM_CHECK_INDEX CL_RSEQ_INJECT_ASM(2)                  \
		     "movq %[head], %%rax\n\t"                                           \
		     "testq %%rax, %%rax\n\t"                                            \
		     "jz %l[cl_cmpfail]\n\t" CL_RSEQ_INJECT_ASM(3)                       \
		     "movq %%rax, %[out]\n\t"                                            \
		     "movq (%%rax, %[off]), %%rax\n\t" CL_RSEQ_INJECT_ASM(4)             \
		     "movq %%rax, %[head]\n\t"                                           \
		     "2:\n\t" CL__RSEQ_ASM_ABORT                                         \
		     : /* no outputs */                                                  \
		     : CL__RSEQ_ASM_COMMON_INPUTS(idx_offset), [head] "m"(*head),        \
		       [out] "m"(*out), [off] "r"(off)                                   \
		     : "memory", "cc", "rax" CL_RSEQ_INJECT_CLOBBER                      \
		     : cl_abort, cl_cmpfail)

/*
 * One function per operation; the index field's offset must be an asm
 * constant, so each holds both sections and @idx (a constant at every call
 * site) selects one of them at compile time.
 */
CL_ALWAYS_INLINE int cl__rseq_add_asm(struct cl_rseq_abi *abi, enum cl_rseq_index which,
				      intptr_t *v, intptr_t count, int idx)
{
	if (which == CL_RSEQ_INDEX_MM_CID)
		CL__RSEQ_ADD_ASM(CL_RSEQ_ABI_MM_CID_OFFSET);
	else
		CL__RSEQ_ADD_ASM(CL_RSEQ_ABI_CPU_ID_OFFSET);
	return CL_RSEQ_OK;
cl_abort:
	CL_INJECT(20);
	return CL_RSEQ_ABORT;
}

CL_ALWAYS_INLINE int cl__rseq_cmpstore_asm(struct cl_rseq_abi *abi, enum cl_rseq_index which,
					   intptr_t *v, intptr_t expect, intptr_t newv, int idx)
{
	if (which == CL_RSEQ_INDEX_MM_CID)
		CL__RSEQ_CMPSTORE_ASM(CL_RSEQ_ABI_MM_CID_OFFSET);
	else
		CL__RSEQ_CMPSTORE_ASM(CL_RSEQ_ABI_CPU_ID_OFFSET);
	return CL_RSEQ_OK;
cl_cmpfail:
	return CL_RSEQ_CMPFAIL;
cl_abort:
	CL_INJECT(21);
	return CL_RSEQ_ABORT;
}

CL_ALWAYS_INLINE int cl__rseq_pop_asm(struct cl_rseq_abi *abi, enum cl_rseq_index which,
				      void **head, size_t off, void **out, int idx)
{
	if (which == CL_RSEQ_INDEX_MM_CID)
		CL__RSEQ_POP_ASM(CL_RSEQ_ABI_MM_CID_OFFSET);
	else
		CL__RSEQ_POP_ASM(CL_RSEQ_ABI_CPU_ID_OFFSET);
	return CL_RSEQ_OK;
cl_cmpfail:
	return CL_RSEQ_CMPFAIL;
cl_abort:
	CL_INJECT(22);
	return CL_RSEQ_ABORT;
}

/* The operation cannot run: rseq process, thread without an rseq area. */
static CL_COLD CL_NOINLINE CL_UNUSED int cl__rseq_no_area(void)
{
	errno = ENOSYS;
	return CL_RSEQ_NO_AREA;
}

#endif /* CL_HAVE_RSEQ_ASM */

/* ---- portable fallback ---- */

/* Wait politely for a fallback list lock (bit 0 of a head) to go away. */
CL_INLINE void cl__rseq_spin(unsigned *spins)
{
	if (++*spins < 256) {
		CL_CPU_RELAX();
	} else {
		*spins = 0;
		sched_yield();
	}
}

#define CL__RSEQ_LIST_LOCK ((uintptr_t)1)

CL_INLINE void **cl__rseq_next_ptr(void *node, size_t next_offset)
{
	return (void **)(void *)((char *)node + next_offset);
}

/*
 * Fallback pop. ABA-safe through a lock bit: bit 0 of the head (nodes are at
 * least 2-byte aligned) is set by the popper with a CAS, so while it reads
 * node->next no other pop or push can change the head; it then publishes
 * next, clearing the bit. Pushes wait while the bit is set. A pop holding
 * the bit may be preempted: others spin, then yield.
 */
CL_INLINE int cl__rseq_pop_atomic(void **head, size_t next_offset, void **out)
{
	unsigned spins = 0;
	void *node = CL_ATOMIC_LOAD(head, CL_RELAXED);

	for (;;) {
		if (node == NULL)
			return CL_RSEQ_CMPFAIL;
		if ((uintptr_t)node & CL__RSEQ_LIST_LOCK) {
			cl__rseq_spin(&spins);
			node = CL_ATOMIC_LOAD(head, CL_RELAXED);
			continue;
		}
		if (CL_ATOMIC_CAS(head, &node, (void *)((uintptr_t)node | CL__RSEQ_LIST_LOCK),
				  CL_ACQUIRE, CL_RELAXED))
			break;
		CL_INJECT(23);
	}
	CL_INJECT(24);
	*out = node;
	CL_ATOMIC_STORE(head, CL_ATOMIC_LOAD(cl__rseq_next_ptr(node, next_offset), CL_RELAXED),
			CL_RELEASE);
	return CL_RSEQ_OK;
}

/* ---- dispatch: critical section or fallback ---- */

/*
 * CL__RSEQ_DISPATCH(idx, asm_call): run asm_call (which may use `abi`) when
 * the process uses critical sections for @idx; fail with CL_RSEQ_NO_AREA in
 * a thread without an rseq area; else fall through to the fallback below it.
 */
#ifdef CL_HAVE_RSEQ_ASM
#define CL__RSEQ_DISPATCH(idx, asm_call)                                  \
	do {                                                              \
		struct cl_rseq_abi *abi;                                  \
		int m_ = cl__rseq_ops_enter((idx), &abi);                 \
                                                                          \
		if (CL_LIKELY(m_ > 0))                                    \
			return asm_call;                                  \
		if (m_ < 0)                                               \
			return cl__rseq_no_area();                        \
	} while (0)
#else
#define CL__RSEQ_DISPATCH(idx, asm_call) ((void)(idx))
#endif

CL_ALWAYS_INLINE int cl__rseq_add(enum cl_rseq_index which, intptr_t *v, intptr_t count, int idx)
{
	CL_INJECT(1);
	CL__RSEQ_DISPATCH(which, cl__rseq_add_asm(abi, which, v, count, idx));
	(void)idx;
	CL_ATOMIC_FETCH_ADD(v, count, CL_RELAXED);
	return CL_RSEQ_OK;
}

CL_ALWAYS_INLINE int cl__rseq_cmpstore(enum cl_rseq_index which, intptr_t *v, intptr_t expect,
				       intptr_t newv, int idx)
{
	CL_INJECT(2);
	CL__RSEQ_DISPATCH(which, cl__rseq_cmpstore_asm(abi, which, v, expect, newv, idx));
	(void)idx;
	return CL_ATOMIC_CAS(v, &expect, newv, CL_ACQ_REL, CL_ACQUIRE) ? CL_RSEQ_OK
								       : CL_RSEQ_CMPFAIL;
}

CL_ALWAYS_INLINE int cl__rseq_pop(enum cl_rseq_index which, void **head, size_t next_offset,
				  void **out, int idx)
{
	CL_INJECT(3);
	CL__RSEQ_DISPATCH(which, cl__rseq_pop_asm(abi, which, head, next_offset, out, idx));
	(void)idx;
	return cl__rseq_pop_atomic(head, next_offset, out);
}

/* Push, built on cmpstore. */
CL_ALWAYS_INLINE int cl__rseq_push(enum cl_rseq_index which, void **head, size_t next_offset,
				   void *node, int idx)
{
	unsigned spins = 0;
	void *first = CL_ATOMIC_LOAD(head, CL_RELAXED);

	/* Fallback only: a pop holds the head (bit 0); wait for it. */
	while ((uintptr_t)first & CL__RSEQ_LIST_LOCK) {
		cl__rseq_spin(&spins);
		first = CL_ATOMIC_LOAD(head, CL_RELAXED);
	}
	*cl__rseq_next_ptr(node, next_offset) = first;
	CL_INJECT(4);
	/* The void * head is updated as an 8-byte integer by the asm. */
	CL__RSEQ_DISPATCH(which, cl__rseq_cmpstore_asm(abi, which, (intptr_t *)(void *)head,
							(intptr_t)first, (intptr_t)node, idx));
	(void)idx;
	return CL_ATOMIC_CAS(head, &first, node, CL_RELEASE, CL_RELAXED) ? CL_RSEQ_OK
									 : CL_RSEQ_CMPFAIL;
}

/* ---- public operations ---- */

/**
 * cl_rseq_add_cpu_id() - *@v += @count on CPU @cpu's word, if running there.
 * @v: a word belonging to CPU @cpu (per-CPU data).
 * @count: the addend.
 * @cpu: the index of @v's owner, from cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID).
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != cpu) abort;
 *	*v += count;                     commit
 * Fallback: atomic fetch-add (relaxed) on @v; @cpu is ignored.
 *
 * Context: any thread, also a signal handler once the thread has used an
 * operation (its rseq area is then live; the first use may register it).
 * Return: CL_RSEQ_OK; CL_RSEQ_ABORT (retry with a fresh index);
 * CL_RSEQ_NO_AREA (errno ENOSYS) if this thread has no rseq area.
 */
CL_INLINE int cl_rseq_add_cpu_id(intptr_t *v, intptr_t count, int cpu)
{
	return cl__rseq_add(CL_RSEQ_INDEX_CPU_ID, v, count, cpu);
}

/**
 * cl_rseq_add_mm_cid() - *@v += @count on concurrency ID @cid's word.
 * @v: a word belonging to mm_cid @cid.
 * @count: the addend.
 * @cid: from cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID).
 *
 * Critical section: as cl_rseq_add_cpu_id() with rseq->mm_cid compared.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_ABORT or CL_RSEQ_NO_AREA (errno ENOSYS).
 */
CL_INLINE int cl_rseq_add_mm_cid(intptr_t *v, intptr_t count, int cid)
{
	return cl__rseq_add(CL_RSEQ_INDEX_MM_CID, v, count, cid);
}

/**
 * cl_rseq_cmpstore_cpu_id() - if *@v == @expect then *@v = @newv, on CPU @cpu.
 * @v: a word belonging to CPU @cpu.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @cpu: the index of @v's owner.
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != cpu) abort;
 *	if (*v != expect) return 1;
 *	*v = newv;                       commit
 * Fallback: a strong CAS (acquire-release on success). On x86_64 the rseq
 * path is ordered like a release store (TSO).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK stored; CL_RSEQ_CMPFAIL *@v != @expect; CL_RSEQ_ABORT
 * (retry with a fresh index); CL_RSEQ_NO_AREA (errno ENOSYS).
 */
CL_INLINE int cl_rseq_cmpstore_cpu_id(intptr_t *v, intptr_t expect, intptr_t newv, int cpu)
{
	return cl__rseq_cmpstore(CL_RSEQ_INDEX_CPU_ID, v, expect, newv, cpu);
}

/**
 * cl_rseq_cmpstore_mm_cid() - if *@v == @expect then *@v = @newv, for mm_cid @cid.
 * @v: a word belonging to mm_cid @cid.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @cid: from cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID).
 *
 * Critical section: as cl_rseq_cmpstore_cpu_id() with rseq->mm_cid compared.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT or CL_RSEQ_NO_AREA.
 */
CL_INLINE int cl_rseq_cmpstore_mm_cid(intptr_t *v, intptr_t expect, intptr_t newv, int cid)
{
	return cl__rseq_cmpstore(CL_RSEQ_INDEX_MM_CID, v, expect, newv, cid);
}

/**
 * cl_rseq_pop_cpu_id() - pop the first node of CPU @cpu's list.
 * @head: the list head (a void * holding the first node or NULL).
 * @next_offset: offset of the node's "next" pointer (a void *) in a node.
 * @out: receives the node on success.
 * @cpu: the index of @head's owner.
 *
 * Critical section (rseq path):
 *	if (rseq->cpu_id != cpu) abort;
 *	node = *head; if (node == NULL) return 1;
 *	*out = node;
 *	*head = *(node + next_offset);   commit
 * Fallback: ABA-safe pop with a lock bit in bit 0 of the head (nodes must be
 * 2-byte aligned; see cl__rseq_pop_atomic()).
 *
 * Context: any thread; nodes must not be freed while another thread may still
 * pop them from this list (they may be reused, pushed again: that is safe).
 * Not from a signal handler that may interrupt a pop or push of the same
 * list: in the fallback the handler would wait for the lock bit forever.
 * Return: CL_RSEQ_OK (*@out set); CL_RSEQ_CMPFAIL the list is empty;
 * CL_RSEQ_ABORT (retry with a fresh index); CL_RSEQ_NO_AREA (errno ENOSYS).
 */
CL_INLINE int cl_rseq_pop_cpu_id(void **head, size_t next_offset, void **out, int cpu)
{
	return cl__rseq_pop(CL_RSEQ_INDEX_CPU_ID, head, next_offset, out, cpu);
}

/**
 * cl_rseq_pop_mm_cid() - pop the first node of mm_cid @cid's list.
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @out: receives the node on success.
 * @cid: from cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID).
 *
 * Critical section: as cl_rseq_pop_cpu_id() with rseq->mm_cid compared.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL (empty), CL_RSEQ_ABORT or CL_RSEQ_NO_AREA.
 */
CL_INLINE int cl_rseq_pop_mm_cid(void **head, size_t next_offset, void **out, int cid)
{
	return cl__rseq_pop(CL_RSEQ_INDEX_MM_CID, head, next_offset, out, cid);
}

/**
 * cl_rseq_push_cpu_id() - push @node on CPU @cpu's list (one attempt).
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node (at least 2-byte aligned).
 * @cpu: the index of @head's owner.
 *
 * Built on cmpstore:
 *	first = *head;                    (fallback: wait while bit 0 is set)
 *	node->next = first;
 *	cmpstore(head, first, node, cpu);
 *
 * Context: any thread; @node is owned by the caller until the push commits.
 * Not from a signal handler that may interrupt a pop of the same list (see
 * cl_rseq_pop_cpu_id()).
 * Return: CL_RSEQ_OK pushed; CL_RSEQ_CMPFAIL the head changed (retry);
 * CL_RSEQ_ABORT (retry with a fresh index); CL_RSEQ_NO_AREA (errno ENOSYS).
 */
CL_INLINE int cl_rseq_push_cpu_id(void **head, size_t next_offset, void *node, int cpu)
{
	return cl__rseq_push(CL_RSEQ_INDEX_CPU_ID, head, next_offset, node, cpu);
}

/**
 * cl_rseq_push_mm_cid() - push @node on mm_cid @cid's list (one attempt).
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node (at least 2-byte aligned).
 * @cid: from cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID).
 *
 * Context: any thread.
 * Return: as cl_rseq_push_cpu_id().
 */
CL_INLINE int cl_rseq_push_mm_cid(void **head, size_t next_offset, void *node, int cid)
{
	return cl__rseq_push(CL_RSEQ_INDEX_MM_CID, head, next_offset, node, cid);
}

/**
 * cl_rseq_list_first() - racy peek at a list head, without the fallback's lock bit.
 * @head: the list head.
 *
 * Context: any thread; the node may be popped at any time after the read.
 * Return: the first node or NULL.
 */
CL_INLINE void *cl_rseq_list_first(void **head)
{
	return (void *)((uintptr_t)CL_ATOMIC_LOAD(head, CL_ACQUIRE) & ~CL__RSEQ_LIST_LOCK);
}

/* ---- short names (cpu_id index) and the index-parameter forms ---- */

/**
 * cl_rseq_add() - cl_rseq_add_cpu_id(): *@v += @count on CPU @cpu's word.
 * @v: a word belonging to CPU @cpu.
 * @count: the addend.
 * @cpu: the index of @v's owner.
 *
 * Context: any thread.
 * Return: as cl_rseq_add_cpu_id().
 */
CL_INLINE int cl_rseq_add(intptr_t *v, intptr_t count, int cpu)
{
	return cl_rseq_add_cpu_id(v, count, cpu);
}

/**
 * cl_rseq_cmpstore() - cl_rseq_cmpstore_cpu_id().
 * @v: a word belonging to CPU @cpu.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @cpu: the index of @v's owner.
 *
 * Context: any thread.
 * Return: as cl_rseq_cmpstore_cpu_id().
 */
CL_INLINE int cl_rseq_cmpstore(intptr_t *v, intptr_t expect, intptr_t newv, int cpu)
{
	return cl_rseq_cmpstore_cpu_id(v, expect, newv, cpu);
}

/**
 * cl_rseq_pop() - cl_rseq_pop_cpu_id().
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @out: receives the node.
 * @cpu: the index of @head's owner.
 *
 * Context: any thread.
 * Return: as cl_rseq_pop_cpu_id().
 */
CL_INLINE int cl_rseq_pop(void **head, size_t next_offset, void **out, int cpu)
{
	return cl_rseq_pop_cpu_id(head, next_offset, out, cpu);
}

/**
 * cl_rseq_push() - cl_rseq_push_cpu_id().
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node.
 * @cpu: the index of @head's owner.
 *
 * Context: any thread.
 * Return: as cl_rseq_push_cpu_id().
 */
CL_INLINE int cl_rseq_push(void **head, size_t next_offset, void *node, int cpu)
{
	return cl_rseq_push_cpu_id(head, next_offset, node, cpu);
}

/**
 * cl_rseq_add_index() - cl_rseq_add_cpu_id() or cl_rseq_add_mm_cid() by @idx.
 * @idx: the index mode.
 * @v: the word.
 * @count: the addend.
 * @index: the index of @v's owner.
 *
 * Context: any thread.
 * Return: as the chosen variant.
 */
CL_INLINE int cl_rseq_add_index(enum cl_rseq_index idx, intptr_t *v, intptr_t count, int index)
{
	return cl__rseq_add(idx, v, count, index);
}

/**
 * cl_rseq_cmpstore_index() - cl_rseq_cmpstore_cpu_id() or _mm_cid() by @idx.
 * @idx: the index mode.
 * @v: the word.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @index: the index of @v's owner.
 *
 * Context: any thread.
 * Return: as the chosen variant.
 */
CL_INLINE int cl_rseq_cmpstore_index(enum cl_rseq_index idx, intptr_t *v, intptr_t expect,
				     intptr_t newv, int index)
{
	return cl__rseq_cmpstore(idx, v, expect, newv, index);
}

/**
 * cl_rseq_pop_index() - cl_rseq_pop_cpu_id() or cl_rseq_pop_mm_cid() by @idx.
 * @idx: the index mode.
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @out: receives the node.
 * @index: the index of @head's owner.
 *
 * Context: any thread.
 * Return: as the chosen variant.
 */
CL_INLINE int cl_rseq_pop_index(enum cl_rseq_index idx, void **head, size_t next_offset,
				void **out, int index)
{
	return cl__rseq_pop(idx, head, next_offset, out, index);
}

/**
 * cl_rseq_push_index() - cl_rseq_push_cpu_id() or cl_rseq_push_mm_cid() by @idx.
 * @idx: the index mode.
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node.
 * @index: the index of @head's owner.
 *
 * Context: any thread.
 * Return: as the chosen variant.
 */
CL_INLINE int cl_rseq_push_index(enum cl_rseq_index idx, void **head, size_t next_offset,
				 void *node, int index)
{
	return cl__rseq_push(idx, head, next_offset, node, index);
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_H */
