/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/x86_64/context.h - user-mode context switch for the M:N
 * runtime (sched/runtime.h) on x86-64 System V.
 *
 * Private to cachelocal/sched/runtime/context.h.
 *
 * What a switch saves: only what the ABI says a callee must preserve, since
 * the switch is an ordinary function call for both sides: %rbx, %rbp,
 * %r12-%r15, the stack pointer, the MXCSR control bits and the x87 control
 * word. Caller-saved registers (and the vector registers, all caller-saved)
 * are dead across the call by construction. %fs (the thread pointer) is not
 * switched: a task runs with the TLS of the worker thread it is on.
 *
 * Saved frame, from the saved %rsp upward:
 *   +0  MXCSR (4 bytes), x87 control word (2 bytes), 2 spare
 *   +8  %r15  +16 %r14  +24 %r13  +32 %r12  +40 %rbx  +48 %rbp
 *   +56 return address
 * A new context's frame returns into cl__ctx_trampoline_x86_64 with
 * %r12 = entry function and %r13 = its data; %rax carries the switch's third
 * argument (the value every switch hands to the context it resumes).
 *
 * The functions are written once as file-scope asm and marked .weak: every
 * translation unit that includes this header emits them, and the linker
 * keeps one (header-only library, no separate object).
 */
#ifndef CL__RUNTIME_CONTEXT_INSIDE
#error "do not include <cachelocal/arch/x86_64/context.h> directly; include <cachelocal/sched/runtime.h>"
#endif

#ifndef CACHELOCAL_ARCH_X86_64_CONTEXT_H
#define CACHELOCAL_ARCH_X86_64_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

CL_BEGIN_DECLS

#define CL__CTX_KIND "x86_64-asm"

/* A suspended context: its saved stack pointer (the frame above). */
struct cl__ctx {
	void *sp;
};

/* Size of the initial frame cl__ctx_make() builds (8 slots). */
#define CL__CTX_FRAME 64

__asm__(".pushsection .text\n"
	".weak cl__ctx_switch_x86_64\n"
	".type cl__ctx_switch_x86_64,@function\n"
	"cl__ctx_switch_x86_64:\n"
	/* rdi = &from->sp, rsi = to->sp, rdx = value for the resumed side */
	"\tpushq %rbp\n"
	"\tpushq %rbx\n"
	"\tpushq %r12\n"
	"\tpushq %r13\n"
	"\tpushq %r14\n"
	"\tpushq %r15\n"
	"\tsubq $8, %rsp\n"
	"\tstmxcsr (%rsp)\n"
	"\tfnstcw 4(%rsp)\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tldmxcsr (%rsp)\n"
	"\tfldcw 4(%rsp)\n"
	"\taddq $8, %rsp\n"
	"\tpopq %r15\n"
	"\tpopq %r14\n"
	"\tpopq %r13\n"
	"\tpopq %r12\n"
	"\tpopq %rbx\n"
	"\tpopq %rbp\n"
	"\tmovq %rdx, %rax\n"
	"\tret\n"
	".size cl__ctx_switch_x86_64, .-cl__ctx_switch_x86_64\n"
	".weak cl__ctx_trampoline_x86_64\n"
	".type cl__ctx_trampoline_x86_64,@function\n"
	"cl__ctx_trampoline_x86_64:\n"
	/* entry(value handed by the switch, data); entry never returns */
	"\tmovq %rax, %rdi\n"
	"\tmovq %r13, %rsi\n"
	"\txorl %ebp, %ebp\n"
	"\tcallq *%r12\n"
	"\tud2\n"
	".size cl__ctx_trampoline_x86_64, .-cl__ctx_trampoline_x86_64\n"
	".popsection\n");

void *cl__ctx_switch_x86_64(void **save_sp, void *new_sp, void *value);
void cl__ctx_trampoline_x86_64(void);

/*
 * cl__ctx_make() - build a context that, when first switched to, calls
 * entry(value, data) on the stack [lo, lo + size). entry must not return.
 */
CL_INLINE void cl__ctx_make(struct cl__ctx *c, void *lo, size_t size,
			    void (*entry)(void *value, void *data), void *data)
{
	uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
	uint64_t *f = (uint64_t *)(void *)(top - CL__CTX_FRAME);

	f[0] = 0x1F80ULL | (0x037FULL << 32); /* MXCSR default; x87 CW default (64-bit precision) */
	f[1] = 0;                              /* r15 */
	f[2] = 0;                              /* r14 */
	f[3] = (uint64_t)(uintptr_t)data;      /* r13 */
	f[4] = (uint64_t)(uintptr_t)entry;     /* r12 */
	f[5] = 0;                              /* rbx */
	f[6] = 0;                              /* rbp */
	f[7] = (uint64_t)(uintptr_t)&cl__ctx_trampoline_x86_64;
	c->sp = f;
}

/*
 * cl__ctx_switch() - save the running context in @from, resume @to.
 * Return: in @from when something switches back to it, the @value that
 * switch passed.
 */
CL_ALWAYS_INLINE void *cl__ctx_switch(struct cl__ctx *from, struct cl__ctx *to, void *value)
{
	return cl__ctx_switch_x86_64(&from->sp, to->sp, value);
}

/*
 * cl__ctx_ticks() - the time stamp counter (rdtsc; ~14 ns on the KVM guests
 * here against ~32 ns for clock_gettime). The runtime uses it for its
 * per-switch clock only when the CPU says the TSC is constant and
 * non-stop, scaled to ns by a calibration against CLOCK_MONOTONIC.
 */
#define CL__CTX_HAVE_TICKS 1
CL_ALWAYS_INLINE uint64_t cl__ctx_ticks(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * cl__ctx_ticks_reliable() - whether the TSC runs at a constant rate across
 * frequency changes and deep idle states: /proc/cpuinfo lists both
 * constant_tsc and nonstop_tsc.
 */
CL_INLINE int cl__ctx_ticks_reliable(void)
{
	char line[4096];
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && !(constant && nonstop)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

/* A context needs no set-up of its own for the thread's original stack. */
CL_INLINE void cl__ctx_init_thread(struct cl__ctx *c)
{
	c->sp = NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_ARCH_X86_64_CONTEXT_H */
