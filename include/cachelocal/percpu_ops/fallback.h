/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops/fallback.h - the portable fallback: the lock-bit list pop, the CAS
 * push and the 64 striped spinlocks of the compare-and-store family, shared
 * by the one-attempt operations and the per-CPU path.
 *
 * Part of percpu_ops.h, the header to include: the API, its kernel-doc, the
 * return codes and the synchronization table are there, the pseudo-code of
 * every critical section in percpu_ops/pseudocode.h. The cl__ names here are
 * not API. Included alone, this file includes percpu_ops.h (which includes
 * every piece in order).
 */
#include "../percpu_ops.h"

#ifndef CACHELOCAL_PERCPU_OPS_FALLBACK_H
#define CACHELOCAL_PERCPU_OPS_FALLBACK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../compiler.h"
#include "../config.h"
#include "../internal/backoff.h"
#include "../internal/fork.h"
#include "mode.h"

CL_BEGIN_DECLS

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

/*
 * fork(): a stripe another thread held when the process forked stays held
 * in the child, where that thread does not exist. The fork registry's child
 * hook clears every stripe. That is safe because a fallback body commits
 * with one store, last (the count, or the word of a cmpstore): a child that
 * inherits a body cut short sees it either committed or not, plus at most
 * a slot or bytes beyond the count written (as an rseq abort leaves them).
 * Registered once per process by cl_rseq_ops_mode_index() when it reports
 * a fallback (every structure's create or init asks first, holding no
 * lock: registering takes the registry lock, which a concurrent fork()
 * holds while it waits for the structures' locks). Not covered: the lock
 * bit a fallback list pop sets in a list head (the caller's memory, which
 * the library does not know): a fork() in the middle of such a pop leaves
 * that list locked in the child.
 */
CL_WEAK pthread_mutex_t cl__rseq_fb_fork_mutex = PTHREAD_MUTEX_INITIALIZER;
CL_WEAK struct cl__fork_entry cl__rseq_fb_fork_entry;
CL_WEAK pthread_once_t cl__rseq_fb_fork_once = PTHREAD_ONCE_INIT;

CL_INLINE void cl__rseq_fb_fork_child(struct cl__fork_entry *e)
{
	unsigned i;

	(void)e;
	for (i = 0; i < CL__RSEQ_FB_LOCKS; i++)
		CL_ATOMIC_STORE(&cl__rseq_fb_locks[i].v, 0u, CL_RELAXED);
}

CL_INLINE void cl__rseq_fb_fork_install(void)
{
	cl__fork_register(&cl__rseq_fb_fork_entry, &cl__rseq_fb_fork_mutex, cl__rseq_fb_fork_child);
}

CL_INLINE void cl__rseq_fb_fork_setup(void)
{
	pthread_once(&cl__rseq_fb_fork_once, cl__rseq_fb_fork_install);
}

/* Fallback bodies, shared by cl_rseq_<op>() and cl_percpu_<op>(). */

/* The commit store of a buffer operation, with the order the caller asked. */
CL_INLINE void cl__rseq_fb_commit(intptr_t *v, intptr_t newv, enum cl_rseq_mo mo)
{
	if (mo == CL_RSEQ_MO_RELEASE)
		CL_ATOMIC_STORE(v, newv, CL_RELEASE);
	else
		CL_ATOMIC_STORE(v, newv, CL_RELAXED);
}

/* if (*v == expect) { if (v2) *v2 = newv2; *v = newv (mo) } under v's lock. */
CL_INLINE int cl__rseq_cmpstore_store_fb(intptr_t *v, intptr_t expect, intptr_t *v2,
					 intptr_t newv2, intptr_t newv, enum cl_rseq_mo mo)
{
	unsigned *l = cl__rseq_fb_lock(v);
	int r = CL_RSEQ_CMPFAIL;

	CL_INJECT(32); /* a striped lock held */
	if (CL_ATOMIC_LOAD(v, CL_ACQUIRE) == expect) {
		if (v2)
			CL_ATOMIC_STORE(v2, newv2, CL_RELAXED);
		cl__rseq_fb_commit(v, newv, mo);
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
		cl__rseq_fb_commit(v, newv, mo);
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

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_FALLBACK_H */
