/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/aarch64/context.h - user-mode context switch for the M:N
 * runtime (sched/runtime.h) on AArch64 (AAPCS64, LP64), and the generic
 * timer's virtual count as its tick counter.
 *
 * Private to cachelocal/sched/runtime/context.h (through arch/context.h).
 *
 * What a switch saves: only what the procedure call standard says a callee
 * must preserve, since the switch is an ordinary function call for both
 * sides: x19-x28, the frame pointer x29, the link register x30 (where the
 * switch returns to), sp, and the low 64 bits of v8-v15 (d8-d15). The
 * other registers are dead across the call by construction. FPCR (rounding
 * mode) is not switched: nothing in a task changes it (like
 * Boost.Context); tpidr_el0 (the thread pointer) is not switched either: a
 * task runs with the TLS of the worker thread it is on.
 *
 * Saved frame, from the saved sp upward (160 bytes, sp stays 16-aligned):
 *   +0   x19 x20   +16  x21 x22   +32  x23 x24   +48  x25 x26
 *   +64  x27 x28   +80  x29 x30   +96  d8 d9     +112 d10 d11
 *   +128 d12 d13   +144 d14 d15
 * A new context's frame "returns" (x30) into cl__ctx_trampoline_aarch64
 * with x19 = entry function and x20 = its data; x0 carries the switch's
 * third argument (the value every switch hands to the context it resumes).
 *
 * The functions are written once as file-scope asm and marked .weak: every
 * translation unit that includes this header emits them, and the linker
 * keeps one (header-only library, no separate object).
 */
#ifndef CL__RUNTIME_CONTEXT_INSIDE
#error "do not include <cachelocal/arch/aarch64/context.h> directly; include <cachelocal/sched/runtime.h>"
#endif

#ifndef CACHELOCAL_ARCH_AARCH64_CONTEXT_H
#define CACHELOCAL_ARCH_AARCH64_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

CL_BEGIN_DECLS

#define CL__CTX_KIND "aarch64-asm"

/* A suspended context: its saved stack pointer (the frame above). */
struct cl__ctx {
	void *sp;
};

/* Size of the frame a switch saves and cl__ctx_make() builds. */
#define CL__CTX_FRAME 160

__asm__(".pushsection .text\n"
	".weak cl__ctx_switch_aarch64\n"
	".type cl__ctx_switch_aarch64,%function\n"
	".balign 16\n"
	"cl__ctx_switch_aarch64:\n"
	/* x0 = &from->sp, x1 = to->sp, x2 = value for the resumed side */
	"\tsub sp, sp, #160\n"
	"\tstp x19, x20, [sp, #0]\n"
	"\tstp x21, x22, [sp, #16]\n"
	"\tstp x23, x24, [sp, #32]\n"
	"\tstp x25, x26, [sp, #48]\n"
	"\tstp x27, x28, [sp, #64]\n"
	"\tstp x29, x30, [sp, #80]\n"
	"\tstp d8, d9, [sp, #96]\n"
	"\tstp d10, d11, [sp, #112]\n"
	"\tstp d12, d13, [sp, #128]\n"
	"\tstp d14, d15, [sp, #144]\n"
	"\tmov x9, sp\n"
	"\tstr x9, [x0]\n"
	"\tmov sp, x1\n"
	"\tldp x19, x20, [sp, #0]\n"
	"\tldp x21, x22, [sp, #16]\n"
	"\tldp x23, x24, [sp, #32]\n"
	"\tldp x25, x26, [sp, #48]\n"
	"\tldp x27, x28, [sp, #64]\n"
	"\tldp x29, x30, [sp, #80]\n"
	"\tldp d8, d9, [sp, #96]\n"
	"\tldp d10, d11, [sp, #112]\n"
	"\tldp d12, d13, [sp, #128]\n"
	"\tldp d14, d15, [sp, #144]\n"
	"\tadd sp, sp, #160\n"
	"\tmov x0, x2\n"
	"\tret\n"
	".size cl__ctx_switch_aarch64, .-cl__ctx_switch_aarch64\n"
	".weak cl__ctx_trampoline_aarch64\n"
	".type cl__ctx_trampoline_aarch64,%function\n"
	".balign 16\n"
	"cl__ctx_trampoline_aarch64:\n"
	/* entry(value handed by the switch, data); entry never returns */
	"\tmov x1, x20\n"
	"\tmov x29, #0\n"
	"\tmov x30, #0\n"
	"\tblr x19\n"
	"\tbrk #0x3e8\n"
	".size cl__ctx_trampoline_aarch64, .-cl__ctx_trampoline_aarch64\n"
	".popsection\n");

void *cl__ctx_switch_aarch64(void **save_sp, void *new_sp, void *value);
void cl__ctx_trampoline_aarch64(void);

/*
 * cl__ctx_make() - build a context that, when first switched to, calls
 * entry(value, data) on the stack [lo, lo + size). entry must not return.
 */
CL_INLINE void cl__ctx_make(struct cl__ctx *c, void *lo, size_t size,
			    void (*entry)(void *value, void *data), void *data)
{
	uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)(void *)(top - CL__CTX_FRAME);
	size_t i;

	for (i = 0; i < CL__CTX_FRAME / 8; i++)
		f[i] = 0;
	f[0] = (uint64_t)(uintptr_t)entry;                       /* x19 */
	f[1] = (uint64_t)(uintptr_t)data;                        /* x20 */
	f[11] = (uint64_t)(uintptr_t)&cl__ctx_trampoline_aarch64; /* x30 */
	c->sp = f;
}

/*
 * cl__ctx_switch() - save the running context in @from, resume @to.
 * Return: in @from when something switches back to it, the @value that
 * switch passed.
 */
CL_ALWAYS_INLINE void *cl__ctx_switch(struct cl__ctx *from, struct cl__ctx *to, void *value)
{
	return cl__ctx_switch_aarch64(&from->sp, to->sp, value);
}

/*
 * cl__ctx_ticks() - the generic timer's virtual count (cntvct_el0): one
 * register read, no system call, the same count on every CPU of the
 * system, at the constant frequency cntfrq_el0 gives. Not ordered by an
 * isb: like rdtsc on x86-64, it may be read a few instructions early.
 */
#define CL__CTX_HAVE_TICKS 1
CL_ALWAYS_INLINE uint64_t cl__ctx_ticks(void)
{
	uint64_t t;

	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(t));
	return t;
}

/* The architecture makes the generic timer's frequency constant. */
CL_INLINE int cl__ctx_ticks_reliable(void)
{
	return 1;
}

/* A context needs no set-up of its own for the thread's original stack. */
CL_INLINE void cl__ctx_init_thread(struct cl__ctx *c)
{
	c->sp = NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_ARCH_AARCH64_CONTEXT_H */
