/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/x86_64/percpu_ops.h - the x86-64 rseq critical sections
 * behind <cachelocal/percpu_ops.h>.
 *
 * Private to percpu_ops.h (not API): arch/percpu_ops.h includes it after
 * the parts every architecture shares (the descriptor, CL__RSEQ_END(),
 * CL__RSEQ_ASM(), the ABI asserts). The sections themselves are written
 * once, in percpu_ops_tmpl.h (CL__RSEQ_TMPL), which arch/percpu_ops.h
 * instantiates for both index kinds:
 *   cl__rseq_<op>_asm_cpu_id()   compares rseq->cpu_id (ABI offset 4)
 *   cl__rseq_<op>_asm_mm_cid()   compares rseq->mm_cid (ABI offset 24)
 * Each returns CL_RSEQ_OK, CL_RSEQ_CMPFAIL or CL_RSEQ_ABORT (percpu_ops.h).
 *
 * Labels inside one section (numeric local labels, so a section can be
 * inlined or duplicated any number of times):
 *   1  start_ip: first instruction after rseq_cs is published
 *   2  post-commit: first instruction after the commit store
 *   3  the struct cl_rseq_cs descriptor, in section __rseq_cs
 *   4  abort_ip, in section __rseq_failure, right after the signature
 *   8, 9  loops inside a section (memcpy)
 * CL_RSEQ_INJECT_ASM() hooks may use labels 5 to 7.
 *
 * Scratch registers: %rax (and %rcx in the copy loop), always clobbered.
 * A test hook (CL_RSEQ_INJECT_ASM) may use any register it lists in
 * CL_RSEQ_INJECT_CLOBBER, %rax and %rcx included: around a user-defined
 * hook, the section saves %rax and %rcx to a stack slot of the calling
 * function and reloads them after it (never by push: the section must not
 * move %rsp, an abort resumes with the registers as they were). The hook
 * must leave %rsp and the flags it found alone (hooks sit where no flag is
 * live, but a hook ending with a compare is fine) and may not call.
 */
#ifndef CACHELOCAL_ARCH_PERCPU_OPS_H
#error "do not include <cachelocal/arch/x86_64/percpu_ops.h> directly; include <cachelocal/percpu_ops.h>"
#endif

#ifndef CACHELOCAL_ARCH_X86_64_PERCPU_OPS_H
#define CACHELOCAL_ARCH_X86_64_PERCPU_OPS_H

/* The ABI offsets and sizes the asm below uses: asserted in arch/percpu_ops.h. */
CL_STATIC_ASSERT(sizeof(intptr_t) == 8 && sizeof(void *) == 8, "x86_64 words");

/* Publish the descriptor in abi->rseq_cs, then start (label 1). */
#define CL__RSEQ_ASM_START                  \
	"leaq 3b(%%rip), %%rax\n\t"          \
	"movq %%rax, %c[cs_off](%[abi])\n\t" \
	"1:\n\t"

/* Abort unless the index field of the area still equals the index. */
#define CL__RSEQ_ASM_CHECK_INDEX               \
	"cmpl %[idx], %c[idx_off](%[abi])\n\t" \
	"jnz 4f\n\t"

/*
 * The "here" sections (the per-CPU path): read the index inside the
 * section, hand it back to C (CL__RSEQ_ASM_GOTO_OUTPUTS, arch/percpu_ops.h:
 * in register %[iout], else stored to *idx_out) and leave this index's
 * copy, base + index * stride, in %rax. No compare is needed: any
 * preemption, migration or signal after the read aborts the section.
 */
#if CL__RSEQ_ASM_GOTO_OUTPUTS
#define CL__RSEQ_ASM_HERE_OFF                      \
	"movl %c[idx_off](%[abi]), %k[iout]\n\t"   \
	"movl %k[iout], %%eax\n\t"                 \
	"imulq %[stride], %%rax\n\t"
#else
#define CL__RSEQ_ASM_HERE_OFF                      \
	"movl %c[idx_off](%[abi]), %%eax\n\t"      \
	"movl %%eax, (%[iout])\n\t"                \
	"imulq %[stride], %%rax\n\t"
#endif
#define CL__RSEQ_ASM_HERE CL__RSEQ_ASM_HERE_OFF "addq %[base], %%rax\n\t"

/*
 * Abort handler: the kernel checks the 4 bytes before abort_ip against the
 * registered signature. They are the immediate of "ud1 sig(%rip), %edi"
 * (0f b9 3d + imm32), which never executes: nothing jumps to it.
 */
#define CL__RSEQ_ASM_ABORT                        \
	".pushsection __rseq_failure, \"ax\"\n\t" \
	".byte 0x0f, 0xb9, 0x3d\n\t"              \
	".long %c[sig]\n\t"                       \
	"4:\n\t"                                  \
	"jmp %l[cl_abort]\n\t"                    \
	".popsection\n\t"

/*
 * Test hooks. Without a user hook, nothing. With one, %rax and %rcx (the
 * sections' scratch registers, live across some hook points) are kept in
 * the caller's stack slot cl__hsave around it.
 */
#ifdef CL__RSEQ_INJECT_USER
#define CL__RSEQ_HOOK(n)                         \
	"movq %%rax, %[hsave]\n\t"               \
	"movq %%rcx, %[hsave2]\n\t"              \
	CL_RSEQ_INJECT_ASM(n)                    \
	"movq %[hsave], %%rax\n\t"               \
	"movq %[hsave2], %%rcx\n\t"
#define CL__RSEQ_HOOK_DECL intptr_t cl__hsave[2];
#define CL__RSEQ_HOOK_INPUT , [hsave] "m"(cl__hsave[0]), [hsave2] "m"(cl__hsave[1])
#else
#define CL__RSEQ_HOOK(n) ""
#define CL__RSEQ_HOOK_DECL
#define CL__RSEQ_HOOK_INPUT
#endif

/* Operands every section uses; CL__RSEQ_T_OFF is the index field's offset. */
#define CL__RSEQ_ASM_INPUTS(idx_offset)                                                  \
	[abi] "r"(abi), [cs_off] "i"(CL_RSEQ_ABI_RSEQ_CS_OFFSET), [idx_off] "i"(idx_offset), \
		[sig] "i"(CL_RSEQ_SIG) CL__RSEQ_HOOK_INPUT

#define CL__RSEQ_ASM_CLOBBERS "memory", "cc", "rax" CL_RSEQ_INJECT_CLOBBER

/*
 * cl__rseq_read_field() - one 32-bit load of a kernel-written field of the
 * area (cpu_id, mm_cid), outside a section: the index an operation is
 * given. It must never be merged with another read or hoisted out of a
 * loop, and must not make the compiler reload what it holds in registers
 * (the thread's cached area pointer) either.
 *
 * gcc: a volatile asm without a memory clobber does both. clang gives any
 * volatile asm "may read and write all memory", whatever its clobbers, so
 * the operation after it loaded and tested the cached area pointer again
 * (3 of clang 14's 16 instructions in the raw add loop, against librseq's
 * 13). There the load is a relaxed atomic one: LLVM neither merges nor
 * hoists it, and lets other loads be forwarded across it.
 */
#if defined(__clang__)
CL_ALWAYS_INLINE uint32_t cl__rseq_read_field(const uint32_t *field)
{
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}
#else
CL_ALWAYS_INLINE uint32_t cl__rseq_read_field(const uint32_t *field)
{
	uint32_t v;

	__asm__ __volatile__("movl %1, %0" : "=r"(v) : "m"(*field));
	return v;
}
#endif

/*
 * Without asm goto outputs (clang < 16), add_here_at is a plain asm whose
 * abort handler starts the section again itself (CL__RSEQ_ADD_HERE_AT_PLAIN):
 * the copy's address comes back in a register, nothing through memory. An
 * add has no compare to fail, so its only exits are the commit and the
 * retry. Not in builds with test hooks (CL_RSEQ_INJECT_ASM, CL_INJECT),
 * whose abort path must reach C.
 */
#if !CL__RSEQ_ASM_GOTO_OUTPUTS && !defined(CL__RSEQ_INJECT_USER) && defined(CL__INJECT_DEFAULT)
#define CL__RSEQ_ADD_HERE_AT_PLAIN 1
#endif

/* bufpop_packed and bufpush_packed exist (the per-CPU path uses them for a
 * buffer laid out as {count, slots} at a constant power-of-two stride). */
#define CL__RSEQ_HAVE_BUF_PACKED CL__RSEQ_ASM_GOTO_OUTPUTS

/* The sections, instantiated for both index kinds by arch/percpu_ops.h. */
#define CL__RSEQ_TMPL "x86_64/percpu_ops_tmpl.h"

#endif /* CACHELOCAL_ARCH_X86_64_PERCPU_OPS_H */
