/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/x86_64/percpu_ops_tmpl.h - the x86-64 critical sections,
 * written once. Private: included twice by arch/percpu_ops.h (named by
 * CL__RSEQ_TMPL of arch/x86_64/percpu_ops.h), with
 * CL__RSEQ_T_OFF (offset of the compared index field in struct cl_rseq_abi)
 * and CL__RSEQ_T(op) (the function name for this index kind) defined.
 * No include guard on purpose. The pseudo-code of every section is in
 * percpu_ops/pseudocode.h, under the operation's name; the comments here
 * only say which registers hold what.
 *
 * Memory operands are passed as pointers in registers and used as (%reg):
 * an indexed address (base + index) on a read-modify-write or a store
 * costs extra uops on common x86 cores (measured: the counter add took
 * 1.6x as long with the compiler's base + index operand). Every section
 * opens with CL__RSEQ_ASM_START (rseq_cs = &descriptor, then start:).
 */
#if !defined(CL__PERCPU_OPS_INSIDE) || !defined(CL__RSEQ_T)
#error "private template of <cachelocal/arch/x86_64/percpu_ops.h>"
#endif

/* add (pseudocode.h: add) */
CL_ALWAYS_INLINE int CL__RSEQ_T(add)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t count, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "addq %[count], (%[v])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : /* no outputs: results go through memory */
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [v] "r"(v),
		       [count] "er"(count)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort);
	CL__RSEQ_END(20);
}

/* add_here (pseudocode.h: the per-CPU path's add); the index to *idx_out. */
CL_ALWAYS_INLINE int CL__RSEQ_T(add_here)(struct cl_rseq_abi *abi, intptr_t *base, size_t stride,
					  intptr_t count, int *idx_out)
{
	CL__RSEQ_HOOK_DECL
	CL__RSEQ_HERE_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		     "addq %[count], (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : CL__RSEQ_HERE_OUTPUT
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF) CL__RSEQ_HERE_INPUT, [base] "r"(base),
		       [stride] "er"(stride), [count] "er"(count)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END(20);
}

#if CL__RSEQ_ASM_GOTO_OUTPUTS
/*
 * add_here_at: add_here handing back the copy's address (*at) instead of
 * the index, for a caller that derives the index from it (a constant
 * power-of-two stride: one shift, dropped when the index is unused).
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(add_here_at)(struct cl_rseq_abi *abi, intptr_t *base,
					     size_t stride, intptr_t count, intptr_t **at)
{
	CL__RSEQ_HOOK_DECL
	intptr_t *a;

	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     "movl %c[idx_off](%[abi]), %k[at]\n\t"
		     "imulq %[stride], %q[at]\n\t"
		     "addq %[base], %q[at]\n\t" CL__RSEQ_HOOK(2)
		     "addq %[count], (%q[at])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : [at] "=&r"(a)
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [base] "r"(base), [stride] "er"(stride),
		       [count] "er"(count)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort);
	*at = a;
	CL__RSEQ_END(20);
}
#elif defined(CL__RSEQ_ADD_HERE_AT_PLAIN)
/*
 * add_here_at as a plain asm (x86_64/percpu_ops.h): label 5 publishes the
 * descriptor again and the abort handler jumps there, so an abort retries
 * inside the asm (the kernel cleared rseq_cs when it aborted) and the
 * function always returns CL_RSEQ_OK.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(add_here_at)(struct cl_rseq_abi *abi, intptr_t *base,
					     size_t stride, intptr_t count, intptr_t **at)
{
	intptr_t *a;

	__asm__ __volatile__(CL__RSEQ_ASM_DESCRIPTOR "5:\n\t" CL__RSEQ_ASM_START
		     "movl %c[idx_off](%[abi]), %k[at]\n\t"
		     "imulq %[stride], %q[at]\n\t"
		     "addq %[base], %q[at]\n\t"
		     "addq %[count], (%q[at])\n\t"
		     "2:\n\t"
		     ".pushsection __rseq_failure, \"ax\"\n\t"
		     ".byte 0x0f, 0xb9, 0x3d\n\t"
		     ".long %c[sig]\n\t"
		     "4:\n\t"
		     "jmp 5b\n\t"
		     ".popsection\n\t"
		     : [at] "=&r"(a)
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [base] "r"(base), [stride] "er"(stride),
		       [count] "er"(count)
		     : CL__RSEQ_ASM_CLOBBERS);
	*at = a;
	return CL_RSEQ_OK;
}
#endif

/*
 * pop_here (pseudocode.h: list_pop); the index to *idx_out.
 * %rax holds h, %rcx the node (both saved around user hooks).
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(pop_here)(struct cl_rseq_abi *abi, void **base, size_t stride,
					  size_t off, void *end, void **out, int *idx_out)
{
	CL__RSEQ_HOOK_DECL
	CL__RSEQ_HERE_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		     "movq (%%rax), %%rcx\n\t"
		     "cmpq %[end], %%rcx\n\t"
		     "jz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %%rcx, (%[out])\n\t"
		     "movq (%%rcx, %[off]), %%rcx\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rcx, (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : CL__RSEQ_HERE_OUTPUT
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF) CL__RSEQ_HERE_INPUT, [base] "r"(base),
		       [stride] "er"(stride), [off] "r"(off), [end] "er"((intptr_t)end), [out] "r"(out)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx"
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(22);
}

/* push_here (pseudocode.h: list_push); the index to *idx_out. */
CL_ALWAYS_INLINE int CL__RSEQ_T(push_here)(struct cl_rseq_abi *abi, void **base, size_t stride,
					   size_t off, void *node, int *idx_out)
{
	CL__RSEQ_HOOK_DECL
	CL__RSEQ_HERE_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     CL__RSEQ_ASM_HERE CL__RSEQ_HOOK(2)
		     "movq (%%rax), %%rcx\n\t"
		     "movq %%rcx, (%[node], %[off])\n\t" CL__RSEQ_HOOK(3)
		     "movq %[node], (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : CL__RSEQ_HERE_OUTPUT
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF) CL__RSEQ_HERE_INPUT, [base] "r"(base),
		       [stride] "er"(stride), [off] "r"(off), [node] "r"(node)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx"
		     : cl_abort);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END(21);
}

/* cmpstore (pseudocode.h: cmpstore) */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpstore)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t expect,
					  intptr_t newv, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "cmpq (%[v]), %[expect]\n\t"
		     "jnz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %[newv], (%[v])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [v] "r"(v),
		       [expect] "r"(expect), [newv] "r"(newv)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_END_CMPFAIL(21);
}

/*
 * pop (pseudocode.h: pop_until).
 * The node stays in %rax across hooks 3 and 4 (saved around user hooks).
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(pop)(struct cl_rseq_abi *abi, void **head, size_t off, void *end,
				     void **out, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "movq (%[head]), %%rax\n\t"
		     "cmpq %[end], %%rax\n\t"
		     "jz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %%rax, (%[out])\n\t"
		     "movq (%%rax, %[off]), %%rax\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rax, (%[head])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [head] "r"(head),
		       [out] "r"(out), [off] "r"(off), [end] "er"((intptr_t)end)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_END_CMPFAIL(22);
}

/*
 * cmpstore_store (pseudocode.h: cmpstore_store); x86-64 stores are
 * ordered: the commit is a release store of *v2 too.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpstore_store)(struct cl_rseq_abi *abi, intptr_t *v,
						intptr_t expect, intptr_t *v2, intptr_t newv2,
						intptr_t newv, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "cmpq (%[v]), %[expect]\n\t"
		     "jnz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %[newv2], (%[v2])\n\t" CL__RSEQ_HOOK(4)
		     "movq %[newv], (%[v])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [v] "r"(v),
		       [expect] "r"(expect), [v2] "r"(v2), [newv2] "r"(newv2), [newv] "r"(newv)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_END_CMPFAIL(23);
}

/* cmp2_store (pseudocode.h: cmp2_store) */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmp2_store)(struct cl_rseq_abi *abi, intptr_t *v, intptr_t expect,
					    intptr_t *v2, intptr_t expect2, intptr_t newv, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "cmpq (%[v]), %[expect]\n\t"
		     "jnz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "cmpq (%[v2]), %[expect2]\n\t"
		     "jnz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(4)
		     "movq %[newv], (%[v])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [v] "r"(v),
		       [expect] "r"(expect), [v2] "r"(v2), [expect2] "r"(expect2), [newv] "r"(newv)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_END_CMPFAIL(24);
}

/*
 * cmpmemcpy_store (pseudocode.h: cmpmemcpy_store): 8 bytes at a time, then
 * the tail one by one; %rcx counts, %rax carries.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(cmpmemcpy_store)(struct cl_rseq_abi *abi, intptr_t *v,
						 intptr_t expect, void *dst, const void *src,
						 size_t len, intptr_t newv, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "cmpq (%[v]), %[expect]\n\t"
		     "jnz %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "xorl %%ecx, %%ecx\n\t"
		     "8:\n\t"
		     "leaq 8(%%rcx), %%rax\n\t"
		     "cmpq %[len], %%rax\n\t"
		     "ja 9f\n\t"
		     "movq (%[src], %%rcx), %%rax\n\t"
		     "movq %%rax, (%[dst], %%rcx)\n\t"
		     "addq $8, %%rcx\n\t"
		     "jmp 8b\n\t"
		     "9:\n\t"
		     "cmpq %[len], %%rcx\n\t"
		     "jae 9f\n\t"
		     "movb (%[src], %%rcx), %%al\n\t"
		     "movb %%al, (%[dst], %%rcx)\n\t"
		     "incq %%rcx\n\t"
		     "jmp 9b\n\t"
		     "9:\n\t" CL__RSEQ_HOOK(4)
		     "movq %[newv], (%[v])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [v] "r"(v),
		       [expect] "r"(expect), [dst] "r"(dst), [src] "r"(src), [len] "r"(len),
		       [newv] "r"(newv)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx"
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_END_CMPFAIL(25);
}

/*
 * deref_add (pseudocode.h: deref_add).
 * p stays in %rax across hook 3 (saved around user hooks).
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(deref_add)(struct cl_rseq_abi *abi, void **ptr, ptrdiff_t off,
					   intptr_t count, int idx)
{
	CL__RSEQ_HOOK_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
			     CL__RSEQ_ASM_CHECK_INDEX CL__RSEQ_HOOK(2)
		     "movq (%[ptr]), %%rax\n\t" CL__RSEQ_HOOK(3)
		     "addq %[off], %%rax\n\t"
		     "addq %[count], (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     :
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [idx] "r"(idx), [ptr] "r"(ptr),
		       [off] "r"(off), [count] "er"(count)
		     : CL__RSEQ_ASM_CLOBBERS
		     : cl_abort);
	CL__RSEQ_END(26);
}

/*
 * bufpush_here (pseudocode.h: buf_push); the index to *idx_out.
 * %rax holds c, %rcx n (both saved around user hooks), %rdx it.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(bufpush_here)(struct cl_rseq_abi *abi, intptr_t *count,
					      size_t stride, void **items, intptr_t cap,
					      void *item, int *idx_out)
{
	CL__RSEQ_HOOK_DECL
	CL__RSEQ_HERE_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     CL__RSEQ_ASM_HERE_OFF
		     "leaq (%[items], %%rax), %%rdx\n\t"
		     "addq %[count], %%rax\n\t" CL__RSEQ_HOOK(2)
		     "movq (%%rax), %%rcx\n\t"
		     "cmpq %[cap], %%rcx\n\t"
		     "jae %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %[item], (%%rdx, %%rcx, 8)\n\t"
		     "incq %%rcx\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rcx, (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : CL__RSEQ_HERE_OUTPUT
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF) CL__RSEQ_HERE_INPUT, [count] "r"(count),
		       [stride] "er"(stride), [items] "r"(items), [cap] "er"(cap), [item] "r"(item)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx", "rdx"
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(23);
}

/*
 * bufpop_here (pseudocode.h: buf_pop); the index to *idx_out.
 * %rax holds c, %rcx n (both saved around user hooks), %rdx it, then the item.
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(bufpop_here)(struct cl_rseq_abi *abi, intptr_t *count,
					     size_t stride, void **items, void **out, int *idx_out)
{
	CL__RSEQ_HOOK_DECL
	CL__RSEQ_HERE_DECL
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     CL__RSEQ_ASM_HERE_OFF
		     "leaq (%[items], %%rax), %%rdx\n\t"
		     "addq %[count], %%rax\n\t" CL__RSEQ_HOOK(2)
		     "movq (%%rax), %%rcx\n\t"
		     "testq %%rcx, %%rcx\n\t"
		     "jle %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq -8(%%rdx, %%rcx, 8), %%rdx\n\t"
		     "movq %%rdx, (%[out])\n\t"
		     "decq %%rcx\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rcx, (%%rax)\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : CL__RSEQ_HERE_OUTPUT
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF) CL__RSEQ_HERE_INPUT, [count] "r"(count),
		       [stride] "er"(stride), [items] "r"(items), [out] "r"(out)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx", "rdx"
		     : cl_abort, cl_cmpfail);
	CL__RSEQ_HERE_STORE(idx_out);
	CL__RSEQ_END_CMPFAIL(24);
}

#if CL__RSEQ_ASM_GOTO_OUTPUTS
/*
 * bufpop_packed / bufpush_packed (pseudocode.h: buf_pop, buf_push): the
 * same sections for a buffer whose slots follow its count (items ==
 * count + 1) in copies a constant power of two apart (1 << shift, an
 * immediate): the copy is one shift and one add from the index, a slot is
 * addressed from the count, the popped item comes back in a register
 * (*out stored after the section, so an inlined caller keeps it in one),
 * and the copy's address (*at) instead of the index (the caller shifts it
 * back, or drops it). %[at] holds c, %rcx n (saved around user hooks).
 */
CL_ALWAYS_INLINE int CL__RSEQ_T(bufpop_packed)(struct cl_rseq_abi *abi, intptr_t *count,
					       unsigned shift, void **out, intptr_t **at)
{
	CL__RSEQ_HOOK_DECL
	intptr_t *a;
	void *it;

	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     "movl %c[idx_off](%[abi]), %k[at]\n\t"
		     "shlq %[shift], %q[at]\n\t"
		     "addq %[count], %q[at]\n\t" CL__RSEQ_HOOK(2)
		     "movq (%q[at]), %%rcx\n\t"
		     "testq %%rcx, %%rcx\n\t"
		     "jle %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq (%q[at], %%rcx, 8), %q[it]\n\t"
		     "decq %%rcx\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rcx, (%q[at])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : [at] "=&r"(a), [it] "=&r"(it)
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [count] "r"(count), [shift] "i"(shift)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx"
		     : cl_abort, cl_cmpfail);
	*out = it;
	*at = a;
	CL__RSEQ_END_CMPFAIL(24);
}

CL_ALWAYS_INLINE int CL__RSEQ_T(bufpush_packed)(struct cl_rseq_abi *abi, intptr_t *count,
						unsigned shift, intptr_t cap, void *item,
						intptr_t **at)
{
	CL__RSEQ_HOOK_DECL
	intptr_t *a;

	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1)
		     "movl %c[idx_off](%[abi]), %k[at]\n\t"
		     "shlq %[shift], %q[at]\n\t"
		     "addq %[count], %q[at]\n\t" CL__RSEQ_HOOK(2)
		     "movq (%q[at]), %%rcx\n\t"
		     "cmpq %[cap], %%rcx\n\t"
		     "jae %l[cl_cmpfail]\n\t" CL__RSEQ_HOOK(3)
		     "movq %[item], 8(%q[at], %%rcx, 8)\n\t"
		     "incq %%rcx\n\t" CL__RSEQ_HOOK(4)
		     "movq %%rcx, (%q[at])\n\t"
		     "2:\n\t" CL__RSEQ_ASM_ABORT
		     : [at] "=&r"(a)
		     : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), [count] "r"(count), [shift] "i"(shift),
		       [cap] "er"(cap), [item] "r"(item)
		     : CL__RSEQ_ASM_CLOBBERS, "rcx"
		     : cl_abort, cl_cmpfail);
	*at = a;
	CL__RSEQ_END_CMPFAIL(23);
}
#endif
