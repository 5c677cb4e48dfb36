/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops/rseq_ops.h - the one-attempt operations cl_rseq_<op>() on the data of
 * one index: the critical section when the process runs them, else the
 * fallback.
 *
 * Part of percpu_ops.h, the header to include: the API, its kernel-doc, the
 * return codes and the synchronization table are there, the pseudo-code of
 * every critical section in percpu_ops/pseudocode.h. The cl__ names here are
 * not API. Included alone, this file includes percpu_ops.h (which includes
 * every piece in order).
 */
#include "../percpu_ops.h"

#ifndef CACHELOCAL_PERCPU_OPS_RSEQ_OPS_H
#define CACHELOCAL_PERCPU_OPS_RSEQ_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "../config.h"
#include "fallback.h"
#include "mode.h"

CL_BEGIN_DECLS

/*
 * CL__RSEQ_DISPATCH(kind, bad, asm_call): when the process uses critical
 * sections for @kind, fail with EINVAL if @bad (a NULL word), else run
 * asm_call (which may use `abi`); fail with CL_RSEQ_ERROR in a thread without
 * an rseq area; else fall through to the code below it, which tests @bad
 * again before the fallback. @bad is tested after the area pointer is
 * loaded, not before: tested first, it sat between cl_rseq_current_index()'s
 * load of that pointer and this one, gcc loaded it twice, and the raw add
 * took about twice librseq's time (bench/counter).
 */
#ifdef CL_HAVE_RSEQ_ASM
#define CL__RSEQ_DISPATCH(kind, bad, asm_call)                    \
	do {                                                      \
		struct cl_rseq_abi *abi;                          \
		int m_ = cl__rseq_ops_enter((kind), &abi);        \
                                                                  \
		if (CL_LIKELY(m_ > 0))                            \
			return CL_UNLIKELY(bad) ? cl__rseq_einval() \
						: asm_call;       \
		if (m_ < 0)                                       \
			return cl__rseq_no_area();                \
	} while (0)
#else
#define CL__RSEQ_DISPATCH(kind, bad, asm_call) ((void)(kind))
#endif

/* ---- operations on the data of one index ---- */

CL_ALWAYS_INLINE int cl_rseq_add(enum cl_rseq_index kind, intptr_t *v, intptr_t count, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(1);
	CL__RSEQ_DISPATCH(kind, v == NULL, CL__RSEQ_ASM(kind, add, abi, v, count, index));
	(void)index;
	if (CL_UNLIKELY(v == NULL))
		return cl__rseq_einval();
	CL_ATOMIC_FETCH_ADD(v, count, CL_RELAXED);
	return CL_RSEQ_OK;
}

CL_ALWAYS_INLINE int cl_rseq_cmpstore(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
				      intptr_t newv, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(2);
	CL__RSEQ_DISPATCH(kind, v == NULL, CL__RSEQ_ASM(kind, cmpstore, abi, v, expect, newv, index));
	(void)index;
	if (CL_UNLIKELY(v == NULL))
		return cl__rseq_einval();
	return cl__rseq_cmpstore_store_fb(v, expect, NULL, 0, newv, CL_RSEQ_MO_RELEASE);
}

CL_ALWAYS_INLINE int cl_rseq_pop_until(enum cl_rseq_index kind, void **head, size_t next_offset,
				       void *end, void **out, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(3);
	CL__RSEQ_DISPATCH(kind, head == NULL || out == NULL,
			  CL__RSEQ_ASM(kind, pop, abi, head, next_offset, end, out, index));
	(void)index;
	if (CL_UNLIKELY(head == NULL || out == NULL))
		return cl__rseq_einval();
	return cl__rseq_pop_atomic(head, next_offset, end, out);
}

CL_ALWAYS_INLINE int cl_rseq_pop(enum cl_rseq_index kind, void **head, size_t next_offset,
				 void **out, int index)
{
	return cl_rseq_pop_until(kind, head, next_offset, NULL, out, index);
}

CL_ALWAYS_INLINE int cl_rseq_trypush(enum cl_rseq_index kind, void **head, size_t next_offset,
				     void *node, int index)
{
	void *first;

	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
#ifdef CL_HAVE_RSEQ_ASM
	{
		struct cl_rseq_abi *abi;
		int m_ = cl__rseq_ops_enter(kind, &abi);

		if (CL_LIKELY(m_ > 0)) {
			if (CL_UNLIKELY(head == NULL || cl__rseq_node_bad(node, next_offset)))
				return cl__rseq_einval();
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
	if (CL_UNLIKELY(head == NULL || cl__rseq_node_bad(node, next_offset)))
		return cl__rseq_einval();
	first = cl__rseq_head_unlocked(head);
	*cl__rseq_next_ptr(node, next_offset) = first;
	CL_INJECT(4);
	return cl__rseq_trypush_fb(head, first, node);
}

CL_ALWAYS_INLINE int cl_rseq_cmpstore_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					    intptr_t *v2, intptr_t newv2, intptr_t newv,
					    enum cl_rseq_mo mo, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__rseq_einval();
	CL_INJECT(5);
	CL__RSEQ_DISPATCH(kind, v == NULL || v2 == NULL,
			  CL__RSEQ_ASM(kind, cmpstore_store, abi, v, expect, v2, newv2, newv, index));
	(void)index;
	if (CL_UNLIKELY(v == NULL || v2 == NULL))
		return cl__rseq_einval();
	return cl__rseq_cmpstore_store_fb(v, expect, v2, newv2, newv, mo);
}

CL_ALWAYS_INLINE int cl_rseq_cmp2_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					intptr_t *v2, intptr_t expect2, intptr_t newv, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(6);
	CL__RSEQ_DISPATCH(kind, v == NULL || v2 == NULL,
			  CL__RSEQ_ASM(kind, cmp2_store, abi, v, expect, v2, expect2, newv, index));
	(void)index;
	if (CL_UNLIKELY(v == NULL || v2 == NULL))
		return cl__rseq_einval();
	return cl__rseq_cmp2_store_fb(v, expect, v2, expect2, newv);
}

CL_ALWAYS_INLINE int cl_rseq_cmpmemcpy_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					     void *dst, const void *src, size_t len, intptr_t newv,
					     enum cl_rseq_mo mo, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__rseq_einval();
	CL_INJECT(7);
	CL__RSEQ_DISPATCH(kind, v == NULL || dst == NULL || src == NULL,
			  CL__RSEQ_ASM(kind, cmpmemcpy_store, abi, v, expect, dst, src, len, newv,
				       index));
	(void)index;
	if (CL_UNLIKELY(v == NULL || dst == NULL || src == NULL))
		return cl__rseq_einval();
	return cl__rseq_cmpmemcpy_store_fb(v, expect, dst, src, len, newv, mo);
}

CL_ALWAYS_INLINE int cl_rseq_deref_add(enum cl_rseq_index kind, void **ptr, ptrdiff_t off,
				       intptr_t count, int index)
{
	if (CL_UNLIKELY(cl__rseq_kind_bad(kind)))
		return cl__rseq_einval();
	CL_INJECT(8);
	CL__RSEQ_DISPATCH(kind, ptr == NULL, CL__RSEQ_ASM(kind, deref_add, abi, ptr, off, count, index));
	(void)index;
	if (CL_UNLIKELY(ptr == NULL))
		return cl__rseq_einval();
	cl__rseq_deref_add_fb(ptr, off, count);
	return CL_RSEQ_OK;
}

CL_INLINE void *cl_rseq_list_first(void **head)
{
	if (CL__BAD_ARG(head == NULL))
		return NULL;
	return (void *)((uintptr_t)CL_ATOMIC_LOAD(head, CL_ACQUIRE) & ~CL__RSEQ_LIST_LOCK);
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_RSEQ_OPS_H */
