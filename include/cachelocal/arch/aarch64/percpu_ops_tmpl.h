/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/aarch64/percpu_ops_tmpl.h - the AArch64 critical
 * sections, written once. Private: included twice by arch/percpu_ops.h
 * (named by CL__RSEQ_TMPL of arch/aarch64/percpu_ops.h), with
 * CL__RSEQ_T_OFF (offset of the compared index field in struct
 * cl_rseq_abi) and CL__RSEQ_T(op) (the function name for this index kind)
 * defined. No include guard on purpose. The
 * pseudo-code of every section is in percpu_ops/pseudocode.h, under the
 * operation's name; the comments here only say which registers hold what
 * and which stores release.
 *
 * Every section is one CL__RSEQ_SECTION() or CL__RSEQ_SECTION_CMPFAIL()
 * (arch/aarch64/percpu_ops.h: descriptor, start, hook 1, then the code
 * given here, which ends with the commit store; label 2 and the
 * out-of-line exits follow), then CL__RSEQ_END() or CL__RSEQ_END_CMPFAIL().
 */
#if !defined(CL__PERCPU_OPS_INSIDE) || !defined(CL__RSEQ_T)
#error "private template of <cachelocal/arch/aarch64/percpu_ops.h>"
#endif

/* add (pseudocode.h: add); x15 the word. */
CL_ALWAYS_INLINE int CL__RSEQ_T(add)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t count, int idx)
{
	CL__RSEQ_SECTION(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[v]]\n\t"
		"add x15, x15, %[count]\n\t"
		"str x15, [%[v]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [v] "r"(v), [count] "r"(count));
	CL__RSEQ_END(20);
}

/* add_here (pseudocode.h: the per-CPU path's add); x14 the copy. */
CL_ALWAYS_INLINE int CL__RSEQ_T(add_here)(struct cl_rseq_abi *abi, intptr_t *base, size_t stride,
					  intptr_t count, int *idx_out)
{
	CL__RSEQ_HERE_DECL
	CL__RSEQ_SECTION(
		CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		"ldr x15, [x14]\n\t"
		"add x15, x15, %[count]\n\t"
		"str x15, [x14]\n\t",
		CL__RSEQ_HERE_OUTPUT,
		[base] "r"(base), [stride] "r"(stride), [count] "r"(count) CL__RSEQ_HERE_INPUT);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END(20);
}

#if CL__RSEQ_ASM_GOTO_OUTPUTS
/* add_here_at: add_here handing back the copy's address (*at). */
CL_ALWAYS_INLINE int CL__RSEQ_T(add_here_at)(struct cl_rseq_abi *abi, intptr_t *base,
					     size_t stride, intptr_t count, intptr_t **at)
{
	intptr_t *a;

	CL__RSEQ_SECTION(
		"ldr w15, [%[abi], #%c[idx_off]]\n\t"
		"mul %[at], x15, %[stride]\n\t"
		"add %[at], %[at], %[base]\n\t" CL__RSEQ_HOOK(2)
		"ldr x15, [%[at]]\n\t"
		"add x15, x15, %[count]\n\t"
		"str x15, [%[at]]\n\t",
		[at] "=&r"(a),
		[base] "r"(base), [stride] "r"(stride), [count] "r"(count));
	*at = a;
	CL__RSEQ_END(20);
}
#endif

/* pop_here (pseudocode.h: list_pop); x14 the head, x15 the node, then next. */
CL_ALWAYS_INLINE int CL__RSEQ_T(pop_here)(struct cl_rseq_abi *abi, void **base, size_t stride,
					  size_t off, void *end, void **out, int *idx_out)
{
	CL__RSEQ_HERE_DECL
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		"ldr x15, [x14]\n\t"
		"cmp x15, %[end]\n\t"
		"b.eq 5f\n\t" CL__RSEQ_HOOK(3)
		"str x15, [%[out]]\n\t"
		"ldr x15, [x15, %[off]]\n\t" CL__RSEQ_HOOK(4)
		"str x15, [x14]\n\t",
		CL__RSEQ_HERE_OUTPUT,
		[base] "r"(base), [stride] "r"(stride), [off] "r"(off), [end] "r"(end),
		[out] "r"(out) CL__RSEQ_HERE_INPUT);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(22);
}

/* push_here (pseudocode.h: list_push); x14 the head; the commit releases. */
CL_ALWAYS_INLINE int CL__RSEQ_T(push_here)(struct cl_rseq_abi *abi, void **base, size_t stride,
					   size_t off, void *node, int *idx_out)
{
	CL__RSEQ_HERE_DECL
	CL__RSEQ_SECTION(
		CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		"ldr x15, [x14]\n\t"
		"str x15, [%[node], %[off]]\n\t" CL__RSEQ_HOOK(3)
		"stlr %[node], [x14]\n\t",
		CL__RSEQ_HERE_OUTPUT,
		[base] "r"(base), [stride] "r"(stride), [off] "r"(off),
		[node] "r"(node) CL__RSEQ_HERE_INPUT);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END(21);
}

/* cmpstore (pseudocode.h: cmpstore): load-acquire, store-release. */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpstore)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t expect,
					  intptr_t newv, int idx)
{
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldar x15, [%[v]]\n\t"
		"cmp x15, %[expect]\n\t"
		"b.ne 5f\n\t" CL__RSEQ_HOOK(3)
		"stlr %[newv], [%[v]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [v] "r"(v), [expect] "r"(expect), [newv] "r"(newv));
	CL__RSEQ_END_CMPFAIL(21);
}

/* pop (pseudocode.h: pop_until); x15 the node, then its next. */
CL_ALWAYS_INLINE int CL__RSEQ_T(pop)(struct cl_rseq_abi *abi, void **head, size_t off, void *end,
				     void **out, int idx)
{
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[head]]\n\t"
		"cmp x15, %[end]\n\t"
		"b.eq 5f\n\t" CL__RSEQ_HOOK(3)
		"str x15, [%[out]]\n\t"
		"ldr x15, [x15, %[off]]\n\t" CL__RSEQ_HOOK(4)
		"str x15, [%[head]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [head] "r"(head), [out] "r"(out), [off] "r"(off), [end] "r"(end));
	CL__RSEQ_END_CMPFAIL(22);
}

/* cmpstore_store (pseudocode.h: cmpstore_store); the commit releases *v2. */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpstore_store)(struct cl_rseq_abi *abi, intptr_t *v,
						intptr_t expect, intptr_t *v2, intptr_t newv2,
						intptr_t newv, int idx)
{
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[v]]\n\t"
		"cmp x15, %[expect]\n\t"
		"b.ne 5f\n\t" CL__RSEQ_HOOK(3)
		"str %[newv2], [%[v2]]\n\t" CL__RSEQ_HOOK(4)
		"stlr %[newv], [%[v]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [v] "r"(v), [expect] "r"(expect), [v2] "r"(v2), [newv2] "r"(newv2),
		[newv] "r"(newv));
	CL__RSEQ_END_CMPFAIL(23);
}

/* cmp2_store (pseudocode.h: cmp2_store) */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmp2_store)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t expect,
					    intptr_t *v2, intptr_t expect2, intptr_t newv, int idx)
{
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[v]]\n\t"
		"cmp x15, %[expect]\n\t"
		"b.ne 5f\n\t" CL__RSEQ_HOOK(3)
		"ldr x15, [%[v2]]\n\t"
		"cmp x15, %[expect2]\n\t"
		"b.ne 5f\n\t" CL__RSEQ_HOOK(4)
		"str %[newv], [%[v]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [v] "r"(v), [expect] "r"(expect), [v2] "r"(v2),
		[expect2] "r"(expect2), [newv] "r"(newv));
	CL__RSEQ_END_CMPFAIL(24);
}

/*
 * cmpmemcpy_store (pseudocode.h: cmpmemcpy_store): 8 bytes at a time, then
 * the tail one by one; x13 counts, x15 carries; the commit releases the copy.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpmemcpy_store)(struct cl_rseq_abi *abi, intptr_t *v,
						 intptr_t expect, void *dst, const void *src,
						 size_t len, intptr_t newv, int idx)
{
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[v]]\n\t"
		"cmp x15, %[expect]\n\t"
		"b.ne 5f\n\t" CL__RSEQ_HOOK(3)
		"mov x13, #0\n\t"
		"8:\n\t"
		"add x15, x13, #8\n\t"
		"cmp x15, %[len]\n\t"
		"b.hi 9f\n\t"
		"ldr x15, [%[src], x13]\n\t"
		"str x15, [%[dst], x13]\n\t"
		"add x13, x13, #8\n\t"
		"b 8b\n\t"
		"9:\n\t"
		"cmp x13, %[len]\n\t"
		"b.hs 9f\n\t"
		"ldrb w15, [%[src], x13]\n\t"
		"strb w15, [%[dst], x13]\n\t"
		"add x13, x13, #1\n\t"
		"b 9b\n\t"
		"9:\n\t" CL__RSEQ_HOOK(4)
		"stlr %[newv], [%[v]]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [v] "r"(v), [expect] "r"(expect), [dst] "r"(dst), [src] "r"(src),
		[len] "r"(len), [newv] "r"(newv));
	CL__RSEQ_END_CMPFAIL(25);
}

/* deref_add (pseudocode.h: deref_add); x15 the block's word, x14 its value. */
CL_ALWAYS_INLINE int CL__RSEQ_T(deref_add)(struct cl_rseq_abi *abi, void **ptr, ptrdiff_t off,
					   intptr_t count, int idx)
{
	CL__RSEQ_SECTION(
		CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		"ldr x15, [%[ptr]]\n\t" CL__RSEQ_HOOK(3)
		"add x15, x15, %[off]\n\t"
		"ldr x14, [x15]\n\t"
		"add x14, x14, %[count]\n\t"
		"str x14, [x15]\n\t",
		/* no outputs */,
		[idx] "r"(idx), [ptr] "r"(ptr), [off] "r"(off), [count] "r"(count));
	CL__RSEQ_END(26);
}

/*
 * bufpush_here (pseudocode.h: buf_push): x14 the count, x13 the slots, x15
 * n; the commit releases the slot. Unsigned compare: a negative count
 * (a drainer owns the copy) reads as full.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(bufpush_here)(struct cl_rseq_abi *abi, intptr_t *count,
					      size_t stride, void **items, intptr_t cap,
					      void *item, int *idx_out)
{
	CL__RSEQ_HERE_DECL
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_HERE_OFF
		"add x13, %[items], x14\n\t"
		"add x14, %[count], x14\n\t" CL__RSEQ_HOOK(2)
		"ldr x15, [x14]\n\t"
		"cmp x15, %[cap]\n\t"
		"b.hs 5f\n\t" CL__RSEQ_HOOK(3)
		"str %[item], [x13, x15, lsl #3]\n\t"
		"add x15, x15, #1\n\t" CL__RSEQ_HOOK(4)
		"stlr x15, [x14]\n\t",
		CL__RSEQ_HERE_OUTPUT,
		[count] "r"(count), [stride] "r"(stride), [items] "r"(items), [cap] "r"(cap),
		[item] "r"(item) CL__RSEQ_HERE_INPUT);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(23);
}

/*
 * bufpop_here (pseudocode.h: buf_pop): x14 the count, x13 the slots, then
 * the item, x15 n. A count <= 0 (empty, or a drainer owns it) fails.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(bufpop_here)(struct cl_rseq_abi *abi, intptr_t *count,
					     size_t stride, void **items, void **out, int *idx_out)
{
	CL__RSEQ_HERE_DECL
	CL__RSEQ_SECTION_CMPFAIL(
		CL__RSEQ_ASM_HERE_OFF
		"add x13, %[items], x14\n\t"
		"add x14, %[count], x14\n\t" CL__RSEQ_HOOK(2)
		"ldr x15, [x14]\n\t"
		"cmp x15, #0\n\t"
		"b.le 5f\n\t" CL__RSEQ_HOOK(3)
		"sub x15, x15, #1\n\t"
		"ldr x13, [x13, x15, lsl #3]\n\t"
		"str x13, [%[out]]\n\t" CL__RSEQ_HOOK(4)
		"str x15, [x14]\n\t",
		CL__RSEQ_HERE_OUTPUT,
		[count] "r"(count), [stride] "r"(stride), [items] "r"(items),
		[out] "r"(out) CL__RSEQ_HERE_INPUT);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(24);
}
