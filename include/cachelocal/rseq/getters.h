/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/rseq/getters.h - the bodies of the functions rseq.h declares
 * (their kernel-doc is there) and the getters' fallbacks: sched_getcpu(),
 * getcpu() and the thread hash.
 *
 * Part of rseq.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../rseq.h"

#ifndef CACHELOCAL_RSEQ_GETTERS_H
#define CACHELOCAL_RSEQ_GETTERS_H

#include <errno.h>
#include <pthread.h>

CL_BEGIN_DECLS

/*
 * A stable per-thread number in [0, nr_cpus): a multiplicative hash of the
 * thread pointer (or pthread_self()). Spreads threads; NOT unique.
 */
CL_INLINE int cl__thread_hash_id(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();
	uint64_t t = CL__HAVE_THREAD_POINTER ? (uint64_t)(uintptr_t)cl__thread_pointer()
					     : (uint64_t)pthread_self();
	uint64_t h = (t >> 4) * 0x9E3779B97F4A7C15ull;

	return (int)((h >> 32) % (s->nr_cpus ? s->nr_cpus : 1u));
}

CL_ALWAYS_INLINE struct cl_rseq_abi *cl_rseq_abi_get(void)
{
	struct cl_rseq_abi *a = cl__rseq_area_fast();
	int32_t c = cl__rseq_load_cpu_id(a);

	if (CL_LIKELY(c >= 0))
		return a;
	/* -2: remembered failure, no slow path (our own area says -2 only
	 * after the state is initialised: it is registered by then). */
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED)
		return NULL;
	return cl__rseq_abi_slow();
}

CL_INLINE int cl_rseq_register_current_thread(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();

	if (CL__RSEQ_OWNER_REGISTERS(s->owner) && s->offset) {
		struct cl_rseq_abi *a = cl__rseq_area_at(s->offset);
		int32_t c = cl__rseq_load_cpu_id(a);

		if (c >= 0)
			return 0;
		if (c == CL_RSEQ_CPU_ID_UNINITIALIZED)
			return cl__rseq_register_self(s, a); /* the kernel's errno */
	} else if (cl_rseq_abi_get() != NULL) {
		return 0;
	}
	errno = ENOSYS;
	return -1;
}

CL_INLINE int cl_rseq_available(void)
{
	return cl_rseq_abi_get() != NULL;
}

CL_INLINE int cl_rseq_owned_by_glibc(void)
{
	return cl__rseq_init()->owner == CL__RSEQ_OWNER_GLIBC;
}

CL_INLINE int cl_rseq_abi_v2(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();

	if (cl_rseq_abi_get() == NULL)
		return -1;
	switch (s->owner) {
	case CL__RSEQ_OWNER_SELF:
		return s->own_len > CL_RSEQ_ABI_LEN;
	case CL__RSEQ_OWNER_GLIBC:
		return cl__glibc_rseq_size > CL_RSEQ_ABI_LEN;
	default:
		return -1;
	}
}

CL_INLINE unsigned cl_rseq_feature_size(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();

	return cl_rseq_abi_get() ? s->feature_size : 0;
}

CL_INLINE int cl_rseq_mm_cid_available(void)
{
	return cl_rseq_feature_size() >= CL_RSEQ_FEATURE_SIZE_MM_CID;
}

/*
 * Fallback of cl_cpu_id() and cl_mm_cid(): @raw is the cpu_id the fast path
 * read (-1 also when the state is not initialised yet). A thread whose
 * registration failed (-2) goes straight to sched_getcpu(): in the no-rseq
 * modes this path is the hot one. Not CL_COLD for that reason.
 */
CL_NOINLINE CL_UNUSED static int cl__cpu_id_slow(int32_t raw)
{
	struct cl_rseq_abi *a;
	int c;

	if (raw != CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		a = cl__rseq_abi_slow();
		if (a)
			return (int)cl__rseq_load_cpu_id(a);
	}
	c = sched_getcpu();
	return c >= 0 ? c : 0;
}

CL_ALWAYS_INLINE int cl_cpu_id(void)
{
	int32_t c = cl__rseq_load_cpu_id(cl__rseq_area_fast());

	if (CL_LIKELY(c >= 0))
		return (int)c;
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		c = sched_getcpu(); /* no rseq in this thread: the hot path */
		return c >= 0 ? (int)c : 0;
	}
	return cl__cpu_id_slow(c);
}

CL_NOINLINE CL_UNUSED static int cl__mm_cid_slow(int32_t raw)
{
	struct cl_rseq_abi *a;
	int c;

	if (raw != CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		a = cl__rseq_abi_slow();
		if (a) {
			if (cl__rseq_state.feature_size >= CL_RSEQ_FEATURE_SIZE_MM_CID)
				return (int)CL_ATOMIC_LOAD(&a->mm_cid, CL_RELAXED);
			return (int)cl__rseq_load_cpu_id(a);
		}
	}
	c = sched_getcpu();
	return c >= 0 ? c : cl__thread_hash_id();
}

CL_ALWAYS_INLINE int cl_mm_cid(void)
{
	/* This thread's id word (cl__rseq_thread.cid_rel): live mm_cid or
	 * cpu_id, -1 before the first request, -2 without rseq. */
	const uint32_t *w = (const uint32_t *)((uintptr_t)&cl__rseq_area.mm_cid +
					       (uintptr_t)cl__rseq_thread.cid_rel);
	int32_t c = (int32_t)CL_ATOMIC_LOAD(w, CL_RELAXED);

	if (CL_LIKELY(c >= 0))
		return (int)c;
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		int cpu = sched_getcpu(); /* no rseq in this thread: the hot path */

		if (CL_LIKELY(cpu >= 0))
			return cpu;
	}
	return cl__mm_cid_slow(c);
}

CL_INLINE int cl_node_id(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();
	struct cl_rseq_abi *a = cl_rseq_abi_get();
	unsigned cpu = 0, node = 0;

	if (a && s->feature_size >= CL_RSEQ_FEATURE_SIZE_NODE_ID)
		return (int)CL_ATOMIC_LOAD(&a->node_id, CL_RELAXED);
	{
		int saved = errno;
		int r = -1;

#if CL__HAVE_GETCPU
		r = getcpu(&cpu, &node); /* vDSO */
#elif defined(SYS_getcpu)
		r = (int)syscall(SYS_getcpu, &cpu, &node, NULL);
#endif
		errno = saved;
		(void)cpu;
		return r == 0 ? (int)node : 0;
	}
}

CL_INLINE enum cl_id_mode cl_id_mode(void)
{
	if (cl_rseq_available())
		return cl_rseq_mm_cid_available() ? CL_ID_MM_CID : CL_ID_CPU_ID;
	return sched_getcpu() >= 0 ? CL_ID_GETCPU : CL_ID_THREAD_HASH;
}

CL_INLINE const char *cl_id_mode_name(enum cl_id_mode m)
{
	switch (m) {
	case CL_ID_MM_CID:
		return "mm_cid";
	case CL_ID_CPU_ID:
		return "cpu_id";
	case CL_ID_GETCPU:
		return "sched_getcpu";
	case CL_ID_THREAD_HASH:
		return "thread_hash";
	}
	return "unknown";
}

CL_END_DECLS

#endif /* CACHELOCAL_RSEQ_GETTERS_H */
