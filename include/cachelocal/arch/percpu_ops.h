/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/percpu_ops.h - dispatch of the rseq critical sections
 * behind percpu_ops.h, by the CL_ARCH_* macro of arch/arch.h (included only
 * where it says CL_ARCH_HAVE_RSEQ_SECTIONS), and the parts every
 * architecture's sections share.
 *
 * Every arch/<arch>/percpu_ops.h provides the same private interface, for
 * both index kinds: the section functions cl__rseq_<op>_asm_cpu_id() and
 * cl__rseq_<op>_asm_mm_cid() (add, add_here, add_here_at when
 * CL__RSEQ_ASM_GOTO_OUTPUTS, pop_here, push_here, cmpstore, pop,
 * cmpstore_store, cmp2_store, cmpmemcpy_store, deref_add, bufpush_here,
 * bufpop_here; on x86-64 also bufpush_packed and bufpop_packed, announced by
 * CL__RSEQ_HAVE_BUF_PACKED; pseudo-code in percpu_ops/pseudocode.h), built from one
 * template per architecture (arch/<arch>/percpu_ops_tmpl.h), and
 * cl__rseq_read_field(). Each section returns CL_RSEQ_OK, CL_RSEQ_CMPFAIL
 * or CL_RSEQ_ABORT.
 *
 * Private to percpu_ops.h.
 */
#ifndef CL__PERCPU_OPS_INSIDE
#error "do not include <cachelocal/arch/percpu_ops.h> directly; include <cachelocal/percpu_ops.h>"
#endif

#ifndef CACHELOCAL_ARCH_PERCPU_OPS_H
#define CACHELOCAL_ARCH_PERCPU_OPS_H

#include "arch.h"

/* Every ABI offset used in the sections' asm, tied to the struct. */
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id) == CL_RSEQ_ABI_CPU_ID_OFFSET,
		 "cpu_id offset used in asm");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, rseq_cs) == CL_RSEQ_ABI_RSEQ_CS_OFFSET,
		 "rseq_cs offset used in asm");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, mm_cid) == CL_RSEQ_ABI_MM_CID_OFFSET,
		 "mm_cid offset used in asm");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, cpu_id) == 4, "32-bit load of cpu_id");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, mm_cid) == 4, "32-bit load of mm_cid");
CL_STATIC_ASSERT(CL_SIZEOF_MEMBER(struct cl_rseq_abi, rseq_cs) == 8, "64-bit store to rseq_cs");
/* The descriptor emitted by CL__RSEQ_ASM_DESCRIPTOR: .long, .long, .quad x 3. */
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, start_ip) == 8, "rseq_cs start_ip");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, post_commit_offset) == 16, "rseq_cs post_commit");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, abort_ip) == 24, "rseq_cs abort_ip");

/*
 * The descriptor of a section (label 3, in section __rseq_cs): start_ip is
 * label 1, the post-commit label 2, abort_ip label 4, all in the same asm
 * statement. Numeric local labels, so a section can be inlined any number
 * of times.
 */
#define CL__RSEQ_ASM_DESCRIPTOR              \
	".pushsection __rseq_cs, \"aw\"\n\t" \
	".balign 32\n\t"                     \
	"3:\n\t"                             \
	".long 0, 0\n\t"                     \
	".quad 1f, (2f - 1f), 4f\n\t"        \
	".popsection\n\t"

/*
 * The end of every section function: the fall-through path committed;
 * cl_abort (and cl_cmpfail, for sections with a compare) are the asm goto's
 * labels. @n is the CL_INJECT() point of the abort path.
 */
#define CL__RSEQ_END(n)        \
	return CL_RSEQ_OK;     \
cl_abort:                      \
	CL_INJECT(n);          \
	return CL_RSEQ_ABORT
#define CL__RSEQ_END_CMPFAIL(n)        \
	return CL_RSEQ_OK;             \
cl_cmpfail:                            \
	return CL_RSEQ_CMPFAIL;        \
cl_abort:                              \
	CL_INJECT(n);                  \
	return CL_RSEQ_ABORT

/*
 * CL__RSEQ_ASM(kind, op, args...): the section of @op for @kind (a constant
 * at every call site once inlined: only one section is emitted).
 */
#define CL__RSEQ_ASM(kind, op, ...)                                               \
	((kind) == CL_RSEQ_INDEX_MM_CID ? cl__rseq_##op##_asm_mm_cid(__VA_ARGS__) \
					: cl__rseq_##op##_asm_cpu_id(__VA_ARGS__))

/*
 * The "here" sections read the index inside the section and hand it back
 * as an output register of the asm goto where the compiler gets that right
 * (gcc >= 11; clang >= 16, whose asm goto with outputs was reworked: clang
 * 14 sent a section's compare-failed branch back to the section's start,
 * an endless loop in test_percpu_ops.v2), else through *idx_out (a store
 * per operation). Each architecture's CL__RSEQ_ASM_HERE_OFF writes
 * %[iout] or stores to (%[iout]) accordingly.
 */
#if (defined(__clang__) && __clang_major__ >= 16) || \
	(!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11)
#define CL__RSEQ_ASM_GOTO_OUTPUTS 1
#define CL__RSEQ_HERE_DECL uint32_t cl__idx;
#define CL__RSEQ_HERE_OUTPUT [iout] "=&r"(cl__idx)
#define CL__RSEQ_HERE_INPUT
#define CL__RSEQ_HERE_STORE(p) (*(p) = (int)cl__idx)
#else
#define CL__RSEQ_ASM_GOTO_OUTPUTS 0
#define CL__RSEQ_HERE_DECL
#define CL__RSEQ_HERE_OUTPUT
#define CL__RSEQ_HERE_INPUT , [iout] "r"(idx_out)
#define CL__RSEQ_HERE_STORE(p) ((void)(p))
#endif

/*
 * The architecture's piece: its asm building blocks, cl__rseq_read_field()
 * and CL__RSEQ_TMPL, the name of its template (relative to this directory).
 */
#if defined(CL_ARCH_X86_64)
#include "x86_64/percpu_ops.h"
#elif defined(CL_ARCH_AARCH64)
#include "aarch64/percpu_ops.h"
#else
#error "CL_ARCH_HAVE_RSEQ_SECTIONS without a piece in arch/percpu_ops.h"
#endif

/*
 * Instantiate the template for both index kinds: CL__RSEQ_T_OFF is the
 * offset of the compared index field in struct cl_rseq_abi, CL__RSEQ_T(op)
 * the section function's name for that kind.
 */
#define CL__RSEQ_T_OFF CL_RSEQ_ABI_CPU_ID_OFFSET
#define CL__RSEQ_T(op) cl__rseq_##op##_asm_cpu_id
#include CL__RSEQ_TMPL
#undef CL__RSEQ_T_OFF
#undef CL__RSEQ_T

#define CL__RSEQ_T_OFF CL_RSEQ_ABI_MM_CID_OFFSET
#define CL__RSEQ_T(op) cl__rseq_##op##_asm_mm_cid
#include CL__RSEQ_TMPL
#undef CL__RSEQ_T_OFF
#undef CL__RSEQ_T

#endif /* CACHELOCAL_ARCH_PERCPU_OPS_H */
