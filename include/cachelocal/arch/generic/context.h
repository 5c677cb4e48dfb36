/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/arch/generic/context.h - portable context switch for the M:N
 * runtime: POSIX ucontext (getcontext/makecontext/swapcontext).
 *
 * Private to cachelocal/sched/runtime/context.h. Used on architectures
 * without their own switch, and on x86-64 with -DCL_RUNTIME_UCONTEXT (so
 * the fallback is tested where the asm one runs). Slower: glibc's
 * swapcontext also saves and restores the signal mask (a system call).
 */
#ifndef CL__RUNTIME_CONTEXT_INSIDE
#error "do not include <cachelocal/arch/generic/context.h> directly; include <cachelocal/sched/runtime.h>"
#endif

#ifndef CACHELOCAL_ARCH_GENERIC_CONTEXT_H
#define CACHELOCAL_ARCH_GENERIC_CONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

CL_BEGIN_DECLS

#define CL__CTX_KIND "ucontext"

struct cl__ctx {
	ucontext_t uc;
	void *value;                          /* handed over by the switch that resumed it */
	void (*entry)(void *value, void *data);
	void *data;
};

/* makecontext passes int arguments: the context address in two halves. */
CL_INLINE void cl__ctx_start_generic(unsigned int hi, unsigned int lo)
{
	struct cl__ctx *c = (struct cl__ctx *)(uintptr_t)(((uint64_t)hi << 32) | lo);

	c->entry(c->value, c->data);
}

CL_INLINE void cl__ctx_make(struct cl__ctx *c, void *lo, size_t size,
			    void (*entry)(void *value, void *data), void *data)
{
	uint64_t a = (uint64_t)(uintptr_t)c;

	getcontext(&c->uc);
	c->uc.uc_stack.ss_sp = lo;
	c->uc.uc_stack.ss_size = size;
	c->uc.uc_link = NULL;
	c->entry = entry;
	c->data = data;
	c->value = NULL;
	makecontext(&c->uc, (void (*)(void))cl__ctx_start_generic, 2, (unsigned int)(a >> 32),
		    (unsigned int)a);
}

CL_INLINE void *cl__ctx_switch(struct cl__ctx *from, struct cl__ctx *to, void *value)
{
	to->value = value;
	swapcontext(&from->uc, &to->uc);
	return from->value;
}

CL_INLINE void cl__ctx_init_thread(struct cl__ctx *c)
{
	c->value = NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_ARCH_GENERIC_CONTEXT_H */
