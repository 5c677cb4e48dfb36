/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops/path.h - the per-CPU path cl_percpu_<op>():
 * current index, that index's copy of a pool object (cl_percpu_ptr_stride()),
 * one operation, again on abort.
 *
 * Part of percpu_ops.h, the header to include: the API, its kernel-doc, the
 * return codes and the synchronization table are there, the pseudo-code of
 * every critical section in percpu_ops/pseudocode.h. The cl__ names here are
 * not API. Included alone, this file includes percpu_ops.h (which includes
 * every piece in order).
 */
#include "../percpu_ops.h"

#ifndef CACHELOCAL_PERCPU_OPS_PATH_H
#define CACHELOCAL_PERCPU_OPS_PATH_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "../compiler.h"
#include "../config.h"
#include "../percpu.h"
#include "fallback.h"
#include "mode.h"
#include "rseq_ops.h"

CL_BEGIN_DECLS

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
		if (CL_LIKELY(CL__RSEQ_ASM(kind, add, abi, (intptr_t *)cl_percpu_ptr_stride(p, i, stride),
					   count, i) == CL_RSEQ_OK))
			return i;
	}
}

/* add, the index read and the copy's address computed inside the section. */
CL_ALWAYS_INLINE int cl__percpu_add_here(enum cl_rseq_index kind, struct cl_rseq_abi *abi,
					 intptr_t *p, size_t stride, intptr_t count)
{
	int i;

#if CL__RSEQ_ASM_GOTO_OUTPUTS || defined(CL__RSEQ_ADD_HERE_AT_PLAIN)
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

/* cl_percpu_add() without critical sections (out of line: the inline fast
 * path stays small enough for its callers to be inlined). */
static CL_NOINLINE CL_UNUSED int cl__percpu_add_fb(enum cl_rseq_index kind, intptr_t *p,
						   size_t stride, intptr_t count)
{
	int i = cl__percpu_fallback_index(kind);

	CL_ATOMIC_FETCH_ADD((intptr_t *)cl_percpu_ptr_stride(p, i, stride), count, CL_RELAXED);
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

CL_ALWAYS_INLINE int cl_percpu_cmpstore(enum cl_rseq_index kind, intptr_t *p, size_t stride,
					intptr_t expect, intptr_t newv)
{
	int i;

	if (CL_UNLIKELY(p == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		int r;

		i = cl__rseq_abi_index(abi, kind);
		r = CL__RSEQ_ASM(kind, cmpstore, abi, (intptr_t *)cl_percpu_ptr_stride(p, i, stride),
				 expect, newv, i);
		if (r != CL_RSEQ_ABORT)
			return r == CL_RSEQ_OK ? i : CL_PERCPU_CMPFAIL;
	});
	i = cl__percpu_fallback_index(kind);
	return cl__rseq_cmpstore_store_fb((intptr_t *)cl_percpu_ptr_stride(p, i, stride), expect, NULL, 0,
					  newv, CL_RSEQ_MO_RELEASE) == CL_RSEQ_OK
		       ? i
		       : CL_PERCPU_CMPFAIL;
}

CL_ALWAYS_INLINE int cl_percpu_list_pop(enum cl_rseq_index kind, void **head, size_t stride,
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
	return cl__rseq_pop_atomic((void **)cl_percpu_ptr_stride(head, i, stride), next_offset, NULL,
				   out) == CL_RSEQ_OK
		       ? i
		       : CL_PERCPU_CMPFAIL;
}

CL_ALWAYS_INLINE int cl_percpu_list_push(enum cl_rseq_index kind, void **head, size_t stride,
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
		h = (void **)cl_percpu_ptr_stride(head, i, stride);
		first = cl__rseq_head_unlocked(h);
		*cl__rseq_next_ptr(node, next_offset) = first;
		CL_INJECT(4);
	} while (cl__rseq_trypush_fb(h, first, node) != CL_RSEQ_OK);
	return i;
}

/*
 * A buffer the packed sections serve (x86-64, arch/x86_64/percpu_ops_tmpl.h):
 * the slots right after the count and a power-of-two stride, both known to
 * the compiler (a pool's default stride and a {count, items[]} object, as
 * objcache's). Anything else takes the "here" sections.
 */
#if defined(CL_HAVE_RSEQ_ASM) && defined(__OPTIMIZE__) && defined(CL__RSEQ_HAVE_BUF_PACKED)
#define CL__PERCPU_HAVE_BUF_PACKED CL__RSEQ_HAVE_BUF_PACKED
#else
#define CL__PERCPU_HAVE_BUF_PACKED 0
#endif
#if CL__PERCPU_HAVE_BUF_PACKED
#define CL__PERCPU_BUF_PACKED(count, stride, items)                                          \
	(__builtin_constant_p(stride) && (stride) != 0 && ((stride) & ((stride) - 1)) == 0 &&  \
	 __builtin_constant_p((void *)(items) == (void *)((count) + 1)) &&                     \
	 (void *)(items) == (void *)((count) + 1))
/* The index of the copy at @at: its distance from @count over the stride. */
CL_ALWAYS_INLINE int cl__percpu_packed_index(const intptr_t *at, const intptr_t *count,
					     size_t stride)
{
	int i = (int)(((uintptr_t)at - (uintptr_t)count) / stride);

	if (i < 0) /* an index below the number of CPUs */
		__builtin_unreachable();
	return i;
}
/*
 * A packed section (op, count, then its own arguments after the stride):
 * retry on abort; the index whose copy changed, or CL_PERCPU_CMPFAIL.
 */
#define CL__PERCPU_RSEQ_PACKED(kind, op, count, stride, ...)                                   \
	CL__PERCPU_RSEQ(kind, for (;;) {                                                      \
		intptr_t *at_;                                                                \
		int r_ = CL__RSEQ_ASM(kind, op, abi, count,                                   \
				      (unsigned)__builtin_ctzll((unsigned long long)(stride)),  \
				      __VA_ARGS__, &at_);                                     \
                                                                                              \
		if (CL_LIKELY(r_ == CL_RSEQ_OK))                                              \
			return cl__percpu_packed_index(at_, count, stride);                   \
		if (r_ != CL_RSEQ_ABORT)                                                      \
			return CL_PERCPU_CMPFAIL;                                             \
		CL_INJECT(11);                                                                \
	})
#else
#define CL__PERCPU_BUF_PACKED(count, stride, items) 0
#endif

/* cl_percpu_buf_push() without critical sections (out of line: the
 * inline fast path stays small). */
static CL_NOINLINE CL_UNUSED int cl__percpu_buf_push_fb(enum cl_rseq_index kind, intptr_t *count,
						       size_t stride, void **items, intptr_t cap,
						       void *item, enum cl_rseq_mo mo)
{
	for (;;) {
		int i = cl__percpu_fallback_index(kind);
		intptr_t *c = (intptr_t *)cl_percpu_ptr_stride(count, i, stride);
		intptr_t n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		void **slot;

		if (n < 0 || n >= cap)
			return CL_PERCPU_CMPFAIL;
		slot = (void **)cl_percpu_ptr_stride(items, i, stride) + n;
		if (cl__rseq_cmpstore_store_fb(c, n, (intptr_t *)(void *)slot, (intptr_t)item, n + 1,
					       mo) == CL_RSEQ_OK)
			return i;
	}
}

CL_ALWAYS_INLINE int cl_percpu_buf_push(enum cl_rseq_index kind, intptr_t *count,
					size_t stride, void **items, intptr_t cap, void *item,
					enum cl_rseq_mo mo)
{
	if (CL_UNLIKELY(count == NULL || items == NULL || stride == 0 || cap <= 0 ||
			cl__rseq_kind_bad(kind) || (unsigned)mo > CL_RSEQ_MO_RELEASE))
		return cl__percpu_fail(EINVAL);
	/* The count, the slot and the index are read inside the section. */
#if CL__PERCPU_HAVE_BUF_PACKED
	if (CL__PERCPU_BUF_PACKED(count, stride, items)) {
		CL__PERCPU_RSEQ_PACKED(kind, bufpush_packed, count, stride, cap, item);
		return cl__percpu_buf_push_fb(kind, count, stride, items, cap, item, mo);
	}
#endif
	CL__PERCPU_RSEQ_HERE(kind, bufpush_here, count, stride, items, cap, item);
	return cl__percpu_buf_push_fb(kind, count, stride, items, cap, item, mo);
}

/* cl_percpu_buf_pop() without critical sections (out of line). */
static CL_NOINLINE CL_UNUSED int cl__percpu_buf_pop_fb(enum cl_rseq_index kind, intptr_t *count,
						      size_t stride, void **items, void **out)
{
	for (;;) {
		int i = cl__percpu_fallback_index(kind);
		intptr_t *c = (intptr_t *)cl_percpu_ptr_stride(count, i, stride);
		intptr_t n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		void **slot, *item;

		if (n <= 0)
			return CL_PERCPU_CMPFAIL;
		slot = (void **)cl_percpu_ptr_stride(items, i, stride) + (n - 1);
		item = CL_ATOMIC_LOAD(slot, CL_RELAXED);
		if (cl__rseq_cmp2_store_fb(c, n, (intptr_t *)(void *)slot, (intptr_t)item, n - 1) ==
		    CL_RSEQ_OK) {
			*out = item;
			return i;
		}
	}
}

CL_ALWAYS_INLINE int cl_percpu_buf_pop(enum cl_rseq_index kind, intptr_t *count, size_t stride,
				       void **items, void **out)
{
	if (CL_UNLIKELY(count == NULL || items == NULL || out == NULL || stride == 0 ||
			cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	/* The count, the item and the index are read inside the section. */
#if CL__PERCPU_HAVE_BUF_PACKED
	if (CL__PERCPU_BUF_PACKED(count, stride, items)) {
		CL__PERCPU_RSEQ_PACKED(kind, bufpop_packed, count, stride, out);
		return cl__percpu_buf_pop_fb(kind, count, stride, items, out);
	}
#endif
	CL__PERCPU_RSEQ_HERE(kind, bufpop_here, count, stride, items, out);
	return cl__percpu_buf_pop_fb(kind, count, stride, items, out);
}

CL_ALWAYS_INLINE int cl_percpu_buf_push_copy(enum cl_rseq_index kind, intptr_t *count,
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
		c = (intptr_t *)cl_percpu_ptr_stride(count, i, stride);
		n = CL_READ_ONCE(*c);
		if (CL_UNLIKELY(n < 0 || n >= cap))
			return CL_PERCPU_CMPFAIL;
		dst = (char *)cl_percpu_ptr_stride(buf, i, stride) + (size_t)n * size;
		CL_INJECT(11); /* stale snapshot window */
		if (CL__RSEQ_ASM(kind, cmpmemcpy_store, abi, c, n, dst, src, size, n + 1, i) ==
		    CL_RSEQ_OK)
			return i;
	});
	for (;;) {
		i = cl__percpu_fallback_index(kind);
		c = (intptr_t *)cl_percpu_ptr_stride(count, i, stride);
		n = CL_ATOMIC_LOAD(c, CL_RELAXED);
		if (n < 0 || n >= cap)
			return CL_PERCPU_CMPFAIL;
		dst = (char *)cl_percpu_ptr_stride(buf, i, stride) + (size_t)n * size;
		if (cl__rseq_cmpmemcpy_store_fb(c, n, dst, src, size, n + 1, mo) == CL_RSEQ_OK)
			return i;
	}
}

CL_ALWAYS_INLINE int cl_percpu_deref_add(enum cl_rseq_index kind, void **ptr, size_t stride,
					 ptrdiff_t off, intptr_t count)
{
	int i;

	if (CL_UNLIKELY(ptr == NULL || stride == 0 || cl__rseq_kind_bad(kind)))
		return cl__percpu_fail(EINVAL);
	CL__PERCPU_RSEQ(kind, for (;;) {
		i = cl__rseq_abi_index(abi, kind);
		if (CL__RSEQ_ASM(kind, deref_add, abi, (void **)cl_percpu_ptr_stride(ptr, i, stride), off,
				 count, i) == CL_RSEQ_OK)
			return i;
	});
	i = cl__percpu_fallback_index(kind);
	cl__rseq_deref_add_fb((void **)cl_percpu_ptr_stride(ptr, i, stride), off, count);
	return i;
}

CL_END_DECLS

#endif /* CACHELOCAL_PERCPU_OPS_PATH_H */
