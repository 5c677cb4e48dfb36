/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/aarch64/percpu_ops.h - the AArch64 rseq critical sections
 * behind <cachelocal/percpu_ops.h>.
 *
 * Private to percpu_ops.h (not API): arch/percpu_ops.h includes it after
 * the parts every architecture shares (the descriptor, CL__RSEQ_END(),
 * CL__RSEQ_ASM(), the ABI asserts). The sections are written once, in
 * percpu_ops_tmpl.h (CL__RSEQ_TMPL), which arch/percpu_ops.h instantiates
 * for both index kinds:
 *   cl__rseq_<op>_asm_cpu_id()   compares rseq->cpu_id (ABI offset 4)
 *   cl__rseq_<op>_asm_mm_cid()   compares rseq->mm_cid (ABI offset 24)
 * Each returns CL_RSEQ_OK, CL_RSEQ_CMPFAIL or CL_RSEQ_ABORT (percpu_ops.h).
 *
 * Labels inside one section (numeric local labels, so a section can be
 * inlined or duplicated any number of times):
 *   1  start_ip: first instruction after rseq_cs is published
 *   2  post-commit: first instruction after the commit store
 *   3  the struct cl_rseq_cs descriptor, in section __rseq_cs
 *   4  abort_ip, right after the signature, out of line (subsection 1 of
 *      the function's own section: within reach of a conditional branch,
 *      +-1 MiB, unlike a section of its own placed by the linker)
 *   5  the compare-failed exit, out of line next to 4
 *   8, 9  loops inside a section (memcpy)
 * CL_RSEQ_INJECT_ASM() hooks may use labels 6 and 7.
 *
 * Scratch registers: x13, x14 and x15, always clobbered. A test hook
 * (CL_RSEQ_INJECT_ASM) may use x16 and x17 (list them in
 * CL_RSEQ_INJECT_CLOBBER) and the flags (hooks sit where no flag is live),
 * never x13-x15 nor sp, and may not call.
 *
 * Memory order (docs/percpu_ops.md, "Weak memory"): the kernel orders a
 * section against every other section on the same CPU (a preemption or a
 * migration is a full barrier), so only what another CPU reads without a
 * section needs more: the commit store of the operations that publish
 * (cmpstore and so trypush, push_here, cmpstore_store, cmpmemcpy_store,
 * bufpush_here) is a store-release (stlr), whatever the mo argument asks
 * (relaxed is a minimum), and cmpstore's load is a load-acquire (ldar),
 * as its kernel-doc promises. The other loads of a section are ordered by
 * address dependencies (index -> copy, head -> node -> next).
 */
#ifndef CACHELOCAL_ARCH_PERCPU_OPS_H
#error "do not include <cachelocal/arch/aarch64/percpu_ops.h> directly; include <cachelocal/percpu_ops.h>"
#endif

#ifndef CACHELOCAL_ARCH_AARCH64_PERCPU_OPS_H
#define CACHELOCAL_ARCH_AARCH64_PERCPU_OPS_H

CL_STATIC_ASSERT(sizeof(intptr_t) == 8 && sizeof(void *) == 8, "aarch64 LP64 words");

/* Publish the descriptor in abi->rseq_cs, then start (label 1). */
#define CL__RSEQ_ASM_START                              \
	"adrp x15, 3b\n\t"                              \
	"add x15, x15, :lo12:3b\n\t"                    \
	"str x15, [%[abi], #%c[cs_off]]\n\t"            \
	"1:\n\t"

/* Abort unless the index field of the area still equals the index. */
#define CL__RSEQ_ASM_CHECK_INDEX                        \
	"ldr w15, [%[abi], #%c[idx_off]]\n\t"           \
	"cmp w15, %w[idx]\n\t"                          \
	"b.ne 4f\n\t"

/*
 * The "here" sections (the per-CPU path): read the index inside the
 * section, hand it back to C (in register %[iout], or stored to *idx_out:
 * CL__RSEQ_ASM_GOTO_OUTPUTS, arch/percpu_ops.h) and leave index * stride
 * in x14 (CL__RSEQ_ASM_HERE_OFF) or this index's copy, base + index *
 * stride, in x14 (CL__RSEQ_ASM_HERE). No compare is needed: any
 * preemption, migration or signal after the read aborts the section.
 * A 32-bit load zeroes the upper half of x15.
 */
#if CL__RSEQ_ASM_GOTO_OUTPUTS
#define CL__RSEQ_ASM_HERE_OFF                           \
	"ldr w15, [%[abi], #%c[idx_off]]\n\t"           \
	"mov %w[iout], w15\n\t"                         \
	"mul x14, x15, %[stride]\n\t"
#else
#define CL__RSEQ_ASM_HERE_OFF                           \
	"ldr w15, [%[abi], #%c[idx_off]]\n\t"           \
	"str w15, [%[iout]]\n\t"                        \
	"mul x14, x15, %[stride]\n\t"
#endif
#define CL__RSEQ_ASM_HERE CL__RSEQ_ASM_HERE_OFF "add x14, x14, %[base]\n\t"

/*
 * Out-of-line exits, after the commit (subsection 1 of the current section,
 * then back). The kernel checks the 4 bytes before abort_ip against the
 * registered signature: glibc's, the instruction "brk #0x45e0", emitted as
 * an instruction (.inst) so that it is right on big-endian too, and never
 * executed: nothing branches to it. A section with a compare also has label
 * 5, which leaves through cl_cmpfail. CL__RSEQ_EXIT<kind> and
 * CL__RSEQ_LABELS<kind> for the two kinds of section ("" and _CMPFAIL).
 */
#define CL__RSEQ_EXIT
#define CL__RSEQ_EXIT_CMPFAIL "5:\n\t" "b %l[cl_cmpfail]\n\t"
#define CL__RSEQ_LABELS cl_abort
#define CL__RSEQ_LABELS_CMPFAIL cl_abort, cl_cmpfail

/*
 * CL__RSEQ_SECTION(code, output, inputs...): the asm goto statement of a
 * section: the descriptor, the start (rseq_cs published, label 1) and hook
 * 1, then @code, which ends with the commit store; label 2 and the exits
 * after it. @output is the section's output operand or nothing; @inputs
 * come after the operands every section has (CL__RSEQ_ASM_INPUTS).
 * CL__RSEQ_SECTION_CMPFAIL() is the same for a section whose compare
 * branches to label 5 on failure.
 */
#define CL__RSEQ_SECTION_(kind, code, output, ...)                                          \
	__asm__ __volatile__ goto(CL__RSEQ_ASM_DESCRIPTOR CL__RSEQ_ASM_START CL__RSEQ_HOOK(1) \
				  code "2:\n\t"                                             \
				  ".subsection 1\n\t" CL__RSEQ_EXIT##kind                   \
				  ".inst %c[sig]\n\t"                                       \
				  "4:\n\t"                                                  \
				  "b %l[cl_abort]\n\t"                                      \
				  ".previous\n\t"                                           \
				  : output                                                   \
				  : CL__RSEQ_ASM_INPUTS(CL__RSEQ_T_OFF), __VA_ARGS__         \
				  : CL__RSEQ_ASM_CLOBBERS                                    \
				  : CL__RSEQ_LABELS##kind)
#define CL__RSEQ_SECTION(code, output, ...) CL__RSEQ_SECTION_(, code, output, __VA_ARGS__)
#define CL__RSEQ_SECTION_CMPFAIL(code, output, ...) \
	CL__RSEQ_SECTION_(_CMPFAIL, code, output, __VA_ARGS__)

/* Test hooks: the user's asm as is (it keeps to x16, x17 and the flags). */
#define CL__RSEQ_HOOK(n) CL_RSEQ_INJECT_ASM(n)

/* Operands every section uses. */
#define CL__RSEQ_ASM_INPUTS(idx_offset)                                                  \
	[abi] "r"(abi), [cs_off] "i"(CL_RSEQ_ABI_RSEQ_CS_OFFSET), [idx_off] "i"(idx_offset), \
		[sig] "i"(CL_RSEQ_SIG_CODE)

#define CL__RSEQ_ASM_CLOBBERS "memory", "cc", "x13", "x14", "x15" CL_RSEQ_INJECT_CLOBBER

/* cl__rseq_read_field() - as on x86_64: one untorn 32-bit load, volatile, no memory clobber. */
CL_ALWAYS_INLINE uint32_t cl__rseq_read_field(const uint32_t *field)
{
	uint32_t v;

	__asm__ __volatile__("ldr %w0, %1" : "=r"(v) : "m"(*field));
	return v;
}

/* The sections, instantiated for both index kinds by arch/percpu_ops.h. */
#define CL__RSEQ_TMPL "aarch64/percpu_ops_tmpl.h"

#endif /* CACHELOCAL_ARCH_AARCH64_PERCPU_OPS_H */
