/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/membarrier.h - process-wide registration for, and use
 * of, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED).
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * cl__membarrier() is a full memory barrier on every CPU that runs a thread
 * of this process: the slow side of an asymmetric Dekker pairing, whose fast
 * side then needs only a compiler barrier (cid.h's release vs a sleeping
 * acquirer; liburcu's membarrier flavour uses the same idea). The private
 * expedited command needs a one-time registration per process, which is
 * lost across fork(): cl__membarrier() registers again on EPERM.
 *
 * cl__membarrier_rseq() is the RSEQ fence (MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
 * Linux 5.10): it aborts every rseq critical section running on one CPU (or
 * on every CPU running a thread of the process), so a thread that changed
 * another CPU's per-CPU data knows no section there still acts on the old
 * value (objcache.h's drain). Its own registration, same rules.
 *
 * State (weak, one per process): cl__membarrier_state (and
 * cl__membarrier_rseq_state for the RSEQ fence) is 0 before the first
 * registration attempt, 1 once registered, -1 when the kernel lacks the
 * command (then callers must use a full fence on their fast side).
 *
 * Synchronization: any thread, any time; the registration may run twice
 * concurrently (both store the same result). errno is preserved.
 */
#ifndef CACHELOCAL_INTERNAL_MEMBARRIER_H
#define CACHELOCAL_INTERNAL_MEMBARRIER_H

#include <errno.h>

#include "../compiler.h"
#include "../sys.h"

CL_BEGIN_DECLS

/* 0 not tried, 1 registered, -1 unavailable. */
CL_WEAK int cl__membarrier_state;

/* 0 not tried, 1 registered, -1 unavailable: the RSEQ fence. */
CL_WEAK int cl__membarrier_rseq_state;

/* Register for command @cmd with @reg when the kernel offers both: 1, or -1.
 * Records the result in *@state; errno preserved. */
CL_INLINE int cl__membarrier_register_cmd(int cmd, int reg, int *state)
{
	int saved = errno, ok = -1;
#ifdef SYS_membarrier
	long need = (long)cmd | (long)reg;
	long mask = syscall(SYS_membarrier, CL__MEMBARRIER_CMD_QUERY, 0, 0);

	if (mask > 0 && (mask & need) == need && syscall(SYS_membarrier, reg, 0, 0) == 0)
		ok = 1;
#else
	(void)cmd;
	(void)reg;
#endif
	CL_ATOMIC_STORE(state, ok, CL_RELAXED);
	errno = saved;
	return ok;
}

/* Register the process for private expedited membarrier: 1, or -1 if the
 * kernel cannot. Records the result in cl__membarrier_state. */
CL_INLINE int cl__membarrier_register(void)
{
	return cl__membarrier_register_cmd(CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED,
					   CL__MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
					   &cl__membarrier_state);
}

/* Register the process for the RSEQ fence: 1, or -1 (kernel < 5.10). */
CL_INLINE int cl__membarrier_rseq_register(void)
{
	return cl__membarrier_register_cmd(CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
					   CL__MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
					   &cl__membarrier_rseq_state);
}

/* 1 if cl__membarrier_rseq() is usable (registering on first call), else 0. */
CL_INLINE int cl__membarrier_rseq_ready(void)
{
	int st = CL_ATOMIC_LOAD(&cl__membarrier_rseq_state, CL_RELAXED);

	if (st == 0)
		st = cl__membarrier_rseq_register();
	return st == 1;
}

/*
 * Abort the rseq critical sections running on CPU @cpu, or on every CPU
 * running a thread of the process when @cpu < 0: 0 (errno kept), or -1 with
 * the kernel's errno (ENOSYS without membarrier). Registers again on EPERM
 * (a fork child).
 */
CL_INLINE int cl__membarrier_rseq(int cpu)
{
	int saved = errno;
#ifdef SYS_membarrier
	int flag = cpu >= 0 ? CL__MEMBARRIER_CMD_FLAG_CPU : 0;
	long r = syscall(SYS_membarrier, CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, flag, cpu);

	if (r != 0 && errno == EPERM && cl__membarrier_rseq_register() == 1)
		r = syscall(SYS_membarrier, CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, flag, cpu);
	if (r != 0)
		return -1;
	errno = saved;
	return 0;
#else
	(void)cpu;
	(void)saved;
	errno = ENOSYS;
	return -1;
#endif
}

/* 1 if cl__membarrier() is usable (registering on first call), else 0. */
CL_INLINE int cl__membarrier_ready(void)
{
	int st = CL_ATOMIC_LOAD(&cl__membarrier_state, CL_RELAXED);

	if (st == 0)
		st = cl__membarrier_register();
	return st == 1;
}

/* A full barrier on every CPU running a thread of this process: 0, or -1 if
 * membarrier is unusable. */
CL_INLINE int cl__membarrier(void)
{
	int saved = errno, r = -1;
#ifdef SYS_membarrier
	r = (int)syscall(SYS_membarrier, CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
	if (r != 0 && errno == EPERM && cl__membarrier_register() == 1) /* e.g. after fork */
		r = (int)syscall(SYS_membarrier, CL__MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
	errno = saved;
	return r == 0 ? 0 : -1;
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_MEMBARRIER_H */
