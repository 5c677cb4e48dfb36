/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/fence.h - fences for per-CPU structures: take another CPU's
 * copy away from its critical sections, or make a fast path's plain stores
 * visible to a rare slow side.
 *
 * Two jobs, one header (docs/structures.md, steps 6 and 7):
 *
 *   cl_percpu_fence(kind, index)   after a thread on CPU a stored a mark in
 *       CPU b's copy of per-CPU data (a value the structure's operations
 *       reject, or a new epoch), wait until no rseq critical section that
 *       may have read b's copy before the mark is still running. Each such
 *       section has either committed (its store is visible to the caller
 *       when the fence returns: check the mark is still there) or been
 *       aborted (it restarts and reads the mark).
 *   cl_fence_all_threads()         a full memory barrier in every running
 *       thread of the process: the slow side of an asymmetric pairing whose
 *       fast side then needs only a compiler barrier (brlock.h's writer).
 *
 * How cl_percpu_fence() works, by cl_percpu_fence_method(kind), decided once
 * per process:
 *
 *   CL_PERCPU_FENCE_MEMBARRIER  rseq operations, and the kernel has
 *       MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (Linux >= 5.10): that command on
 *       CPU b (on every CPU for mm_cid data or index -1) aborts the sections
 *       running there, and each target CPU runs a full barrier.
 *   CL_PERCPU_FENCE_MIGRATE     the fallback for cpu_id data without that
 *       command (or built with CL_PERCPU_FENCE_NO_MEMBARRIER): the caller runs
 *       on CPU b once (cl_percpu_fence_visit()). To run there the scheduler
 *       preempted whatever ran on b, and a section preempted is aborted: the
 *       same guarantee, for CPU b only, at the price of two affinity changes,
 *       and only if the caller may run on b (else the sched_setaffinity()
 *       errno).
 *   CL_PERCPU_FENCE_ATOMIC      the atomic fallback of percpu_ops.h (no rseq,
 *       seccomp, TSan, CL_NO_RSEQ_ASM): no section exists, it returns 0. The
 *       mark must then be stored with an operation that excludes the
 *       fallback's: an atomic read-modify-write on a word only add touches
 *       (the fallback add is an atomic add), cl_rseq_cmpstore() on any other
 *       commit word (it takes the fallback's striped lock).
 *   CL_PERCPU_FENCE_NONE        mm_cid data without the RSEQ command: no fence,
 *       -1 with ENOSYS (an mm_cid copy may be in use on any CPU, including
 *       ones the caller may not run on).
 *
 * A thread without an rseq area in a process that uses rseq never runs a
 * critical section (its operations fail with ENOSYS), so no fence concerns
 * it. Registration with membarrier is done once per process on first use,
 * and again in a fork() child (the kernel drops it there).
 *
 * Synchronization: every function may run in any thread, concurrently with
 * anything, also in a fork() child. cl_percpu_fence_visit() (the migrate
 * method) is not async-signal-safe: it allocates.
 */
#ifndef CACHELOCAL_FENCE_H
#define CACHELOCAL_FENCE_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "compiler.h"
#include "config.h"
#include "internal/membarrier.h"
#include "percpu_ops.h"
#include "rseq.h"
#include "sys.h"
#include "topology.h"

CL_BEGIN_DECLS

/* How cl_percpu_fence() fences data of one index kind (table above). */
enum cl_percpu_fence_method {
	CL_PERCPU_FENCE_MEMBARRIER = 1, /* membarrier PRIVATE_EXPEDITED_RSEQ */
	CL_PERCPU_FENCE_MIGRATE = 2,    /* the caller visits the CPU */
	CL_PERCPU_FENCE_ATOMIC = 3,     /* fallback operations: no sections to abort */
	CL_PERCPU_FENCE_NONE = 4,       /* mm_cid data, no membarrier RSEQ: ENOSYS */
};

/* 1 when membarrier's RSEQ fence is usable here (registering on first use). */
CL_INLINE int cl__percpu_fence_memb_ready(void)
{
#ifdef CL_PERCPU_FENCE_NO_MEMBARRIER
	return 0;
#else
	return cl__membarrier_rseq_ready();
#endif
}

/**
 * cl_percpu_fence_method() - how cl_percpu_fence() fences @kind data here.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 *
 * Decides the operations mode of @kind (cl_rseq_ops_mode_index()) and
 * registers the process for membarrier's RSEQ fence if needed, so call it
 * once at set-up (a structure's create) rather than on its first fence.
 * The method of a cpu_id fence on one CPU; a fence on every index (@index
 * < 0) with the migrate method is CL_PERCPU_FENCE_NONE too.
 *
 * Context: any thread.
 * Return: an enum cl_percpu_fence_method, or -1 with errno EINVAL (bad @kind).
 */
CL_INLINE int cl_percpu_fence_method(enum cl_rseq_index kind)
{
	if (kind != CL_RSEQ_INDEX_CPU_ID && kind != CL_RSEQ_INDEX_MM_CID) {
		errno = EINVAL;
		return -1;
	}
	if (cl_rseq_ops_mode_index(kind) != CL_RSEQ_OPS_RSEQ)
		return CL_PERCPU_FENCE_ATOMIC;
	if (cl__percpu_fence_memb_ready())
		return CL_PERCPU_FENCE_MEMBARRIER;
	return kind == CL_RSEQ_INDEX_CPU_ID ? CL_PERCPU_FENCE_MIGRATE : CL_PERCPU_FENCE_NONE;
}

/**
 * cl_percpu_fence_method_name() - printable name of a fence method.
 * @m: an enum cl_percpu_fence_method value.
 *
 * Context: any thread.
 * Return: "membarrier", "migrate", "atomic", "none", or "?" for another value.
 */
CL_INLINE const char *cl_percpu_fence_method_name(int m)
{
	switch (m) {
	case CL_PERCPU_FENCE_MEMBARRIER: return "membarrier";
	case CL_PERCPU_FENCE_MIGRATE: return "migrate";
	case CL_PERCPU_FENCE_ATOMIC: return "atomic";
	case CL_PERCPU_FENCE_NONE: return "none";
	default: return "?";
	}
}

/**
 * cl_percpu_fence_visit() - run the calling thread on CPU @cpu once.
 * @cpu: a CPU number below cl_nr_possible_cpus().
 *
 * The thread then gets its own affinity back.
 * The migrate method's fence for one CPU: to run there, the scheduler
 * preempted whatever ran on @cpu, and a thread preempted inside an rseq
 * critical section is aborted before it runs again. Usable on its own
 * whatever the method (a test forcing the fallback path does).
 *
 * Context: any thread that may run on @cpu; not in a signal handler
 * (allocates). Costs two sched_setaffinity() calls and a migration.
 * Return: 0, or -1 with errno EINVAL (@cpu out of range, or not in the
 * caller's cpuset), ENOMEM, EAGAIN (the thread was not seen on @cpu after
 * the affinity change), or another sched_setaffinity() errno. The caller's
 * affinity is restored in every case.
 */
CL_INLINE int cl_percpu_fence_visit(int cpu)
{
	unsigned nbits = cl_nr_possible_cpus(), w;
	size_t words, len;
	uint64_t *old, *one;
	int e = 0;

	if (cpu < 0 || (unsigned)cpu >= nbits) {
		errno = EINVAL;
		return -1;
	}
	words = (nbits + 63) / 64;
	len = words * sizeof(uint64_t);
	old = (uint64_t *)calloc(2 * words, sizeof(uint64_t));
	if (old == NULL) {
		errno = ENOMEM;
		return -1;
	}
	one = old + words;
	if (syscall(SYS_sched_getaffinity, 0, len, old) <= 0) {
		e = errno;
		free(old);
		errno = e;
		return -1;
	}
	one[(unsigned)cpu / 64] = (uint64_t)1 << ((unsigned)cpu % 64);
	if (syscall(SYS_sched_setaffinity, 0, len, one) != 0) {
		e = errno; /* not allowed there (cpuset), or offline */
	} else {
		/* sched_setaffinity() moved this thread before returning; check. */
		for (w = 0; w < 3 && cl_cpu_id() != cpu; w++)
			sched_yield();
		if (cl_cpu_id() != cpu)
			e = EAGAIN;
	}
	syscall(SYS_sched_setaffinity, 0, len, old);
	free(old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

/**
 * cl_percpu_fence() - wait out the critical sections that may act on one copy.
 * @kind: the index kind of the data (CL_RSEQ_INDEX_CPU_ID or _MM_CID).
 * @index: the copy (a CPU number for cpu_id data, a concurrency ID for
 *	mm_cid data), below cl_nr_possible_cpus(); or -1: every copy.
 *
 * When it returns, no rseq critical section that may have read copy @index
 * of @kind data before the call is still running: each committed (its store
 * is visible to the caller) or was aborted (it restarts).
 * Use after storing a mark in another index's copy, then check the mark:
 *	old = xchg(copy(b), MARK);  cl_percpu_fence(kind, b);
 *	if (copy(b) != MARK) a section committed before the fence: start over.
 * See the header comment for the method and what each one guarantees.
 * cpu_id data on one CPU fences that CPU; mm_cid data or @index -1 fences
 * every CPU running a thread of the process (an mm_cid may move between
 * CPUs).
 *
 * Context: any thread; not in a signal handler. The membarrier method is a
 * system call that interrupts the target CPU(s); the migrate method moves
 * the caller (see cl_percpu_fence_visit()).
 * Return: 0; or -1 with errno EINVAL (bad @kind, @index < -1 or out of
 * range), ENOSYS (CL_PERCPU_FENCE_NONE, or the migrate method with @index
 * -1), the errno of membarrier(), or that of cl_percpu_fence_visit().
 */
CL_INLINE int cl_percpu_fence(enum cl_rseq_index kind, int index)
{
	int m = cl_percpu_fence_method(kind);

	if (m < 0)
		return -1;
	if (index < -1 || (index >= 0 && (unsigned)index >= cl_nr_possible_cpus())) {
		errno = EINVAL;
		return -1;
	}
	switch (m) {
	case CL_PERCPU_FENCE_ATOMIC:
		return 0;
	case CL_PERCPU_FENCE_MEMBARRIER:
		return cl__membarrier_rseq(kind == CL_RSEQ_INDEX_CPU_ID ? index : -1);
	case CL_PERCPU_FENCE_MIGRATE:
		if (index >= 0)
			return cl_percpu_fence_visit(index);
		break;
	default:
		break;
	}
	errno = ENOSYS;
	return -1;
}

/* 1 when membarrier's PRIVATE_EXPEDITED command is usable here. */
CL_INLINE int cl__fence_all_memb_ready(void)
{
#ifdef CL_PERCPU_FENCE_NO_MEMBARRIER
	return 0;
#else
	return cl__membarrier_ready();
#endif
}

/**
 * cl_fence_all_threads_available() - whether cl_fence_all_threads() works here.
 *
 * If it does, it can stand in for the fence of an asymmetric pairing's fast
 * side.
 * Registers the process for membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
 * on first use (call it at set-up). When it returns 0 (kernel < 4.14,
 * seccomp, or built with CL_PERCPU_FENCE_NO_MEMBARRIER) the fast side must
 * order its own accesses with a full fence (CL_ATOMIC_FENCE(CL_SEQ_CST)).
 *
 * Context: any thread.
 * Return: 1 available, 0 not.
 */
CL_INLINE int cl_fence_all_threads_available(void)
{
	return cl__fence_all_memb_ready();
}

/**
 * cl_fence_all_threads() - a full memory barrier in every running thread.
 *
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) on the calling process:
 * the slow side of an asymmetric pairing. A fast side that stores X, then
 * loads Y with only a compiler barrier in between, and a slow side that
 * stores Y, calls this, then loads X, never both miss the other's store.
 * Registers again in a fork() child. Without membarrier it does a full
 * fence and yields the CPU (not a barrier in other threads) and fails.
 *
 * Context: any thread; not in a signal handler. A system call that
 * interrupts every CPU running a thread of the process.
 * Return: 0, or -1 with errno ENOSYS (unavailable: the fast side must use
 * full fences, see cl_fence_all_threads_available()).
 */
CL_INLINE int cl_fence_all_threads(void)
{
	if (cl__fence_all_memb_ready() && cl__membarrier() == 0)
		return 0;
#ifdef CL_HAVE_TSAN
	CL_BARRIER(); /* TSan rejects standalone fences; its builds order with seq_cst atomics */
#else
	CL_ATOMIC_FENCE(CL_SEQ_CST);
#endif
	sched_yield();
	errno = ENOSYS;
	return -1;
}

CL_END_DECLS

#endif /* CACHELOCAL_FENCE_H */
