/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/stack.h - task stacks.
 *
 * Task stacks come in batches of slots, each a guard region
 * (CL_RUNTIME_GUARD_SIZE, never committed) and a stack, one mapping per
 * batch; a slot stays with its task descriptor in the cache and is
 * registered with valgrind and ASan (the layout is described below). A
 * descriptor's lifetime: handles, references, and the count of live tasks
 * that cl_runtime_shutdown() waits on.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_STACK_H
#define CACHELOCAL_SCHED_RUNTIME_STACK_H

CL_BEGIN_DECLS

/* ---- stacks ---- */

CL_INLINE size_t cl__rt_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096u;
}

/*
 * Stacks come in batches: one mapping of at most CL__RT_BATCH_SLOTS slots
 * (and CL__RT_BATCH_BYTES; at least one slot), each slot a guard region
 * then a stack, mapped MAP_NORESERVE and untouched until a task runs on
 * it, so a slot costs address space, not memory. The guard is made
 * inaccessible with MADV_GUARD_INSTALL (Linux >= 6.13: page-table markers,
 * no new mapping), so a batch stays one mapping whatever its slot count;
 * older kernels refuse it, and the guard is then mprotect(PROT_NONE)ed,
 * which splits the batch into two mappings per slot (the live-task limit is
 * then about vm.max_map_count / 2). A slot stays with its descriptor in
 * the cache; the batches are unmapped at destroy.
 */
#define CL__RT_BATCH_SLOTS 64u
#define CL__RT_BATCH_BYTES ((size_t)256 << 20)
#define CL__MADV_GUARD_INSTALL 102

/* Slot size: guard + page-rounded stack (both bounded at create). */
CL_INLINE size_t cl__rt_slot_size(const struct cl_runtime *rt)
{
	size_t pg = cl__rt_page();

	return rt->guard_size + ((rt->stack_size + pg - 1) & ~(pg - 1));
}

CL_INLINE size_t cl__rt_batch_slots(const struct cl_runtime *rt)
{
	size_t n = CL__RT_BATCH_BYTES / cl__rt_slot_size(rt);

	return n > CL__RT_BATCH_SLOTS ? CL__RT_BATCH_SLOTS : n ? n : 1;
}

/* Next free slot, a new batch mapped if needed; NULL if out of memory. */
CL_INLINE char *cl__rt_slot_take(struct cl_runtime *rt)
{
	size_t slot = cl__rt_slot_size(rt), n = cl__rt_batch_slots(rt);
	char *m;

	cl_spin_lock(&rt->all_lock);
	if (!rt->batch_left) {
		cl_spin_unlock(&rt->all_lock); /* no system call under a spinlock */
		m = (char *)mmap(NULL, n * slot, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | CL__MAP_ANONYMOUS | CL__MAP_NORESERVE, -1, 0);
		if (m == (char *)MAP_FAILED)
			return NULL;
		cl_spin_lock(&rt->all_lock);
		if (rt->nr_batches == rt->cap_batches) {
			unsigned int cap = rt->cap_batches ? 2 * rt->cap_batches : 16;
			void **grown = (void **)realloc(rt->batches, cap * sizeof(void *));

			if (!grown) {
				cl_spin_unlock(&rt->all_lock);
				munmap(m, n * slot);
				return NULL;
			}
			rt->batches = grown;
			rt->cap_batches = cap;
		}
		rt->batches[rt->nr_batches++] = m;
		/* if another spawn mapped one meanwhile, the rest of that one stays unused */
		rt->batch_next = m;
		rt->batch_left = (unsigned int)n;
	}
	m = rt->batch_next;
	rt->batch_next += slot;
	rt->batch_left--;
	cl_spin_unlock(&rt->all_lock);
	return m;
}

/* Make [@lo, @lo + @len) inaccessible: guard markers, else PROT_NONE. */
CL_INLINE int cl__rt_guard(struct cl_runtime *rt, void *lo, size_t len)
{
	if (!CL_ATOMIC_LOAD(&rt->guard_mprotect, CL_RELAXED)) {
		if (madvise(lo, len, CL__MADV_GUARD_INSTALL) == 0)
			return 0;
		CL_ATOMIC_STORE(&rt->guard_mprotect, 1, CL_RELAXED); /* EINVAL: kernel < 6.13 */
	}
	return mprotect(lo, len, PROT_NONE);
}

/* Give @t (a new cache object) its stack slot, the guard region below it. */
CL_INLINE int cl__rt_stack_map(struct cl_runtime *rt, struct cl_rt_task *t)
{
	size_t size = cl__rt_slot_size(rt);
	char *m = cl__rt_slot_take(rt);

	if (!m || cl__rt_guard(rt, m, rt->guard_size) != 0)
		return -1; /* (a slot without its guard is left unused) */
	t->keep.map = m;
	t->keep.map_size = size;
	t->keep.jgen = 1u << 1; /* generation 1 */
#ifdef CL__RT_VALGRIND
	t->keep.vg_stack = VALGRIND_STACK_REGISTER(m + rt->guard_size, m + size);
#endif
	cl_spin_lock(&rt->all_lock);
	cds_list_add(&t->keep.all, &rt->all);
	cl_spin_unlock(&rt->all_lock);
	return 0;
}

/* A task leaving for good (returned) detaches from its task group, which
 * counts its attached tasks. */
CL_INLINE void cl__rt_task_detach(struct cl_rt_task *t)
{
	struct cl_rq *rq;

	if (!t->task.tg)
		return;
	rq = cl_task_rq_lock(t->rt->sched, &t->task);
	cl_task_set_group(&t->task, NULL);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
}

/*
 * Handles. cl_spawn() returns a handle, not the descriptor's address: the
 * address with the descriptor's generation in its spare bits (the top 16
 * on 64-bit, where user addresses stay below 2^48; the low 6 on 32-bit,
 * descriptors being 64-byte aligned). A descriptor's generation changes
 * each time it goes back to the cache, so a handle kept past its join
 * names a generation that is gone, and cl_join() refuses it (EINVAL)
 * instead of joining whatever task got the descriptor since. keep.jgen
 * holds generation << 1 | joined in one word, so that one CAS claims the
 * join of exactly that generation (a detached task starts joined).
 * Generations run 1..CL__RT_GEN_MASK: a plain task pointer (cl_self())
 * never matches. A stale handle is told apart until its descriptor was
 * reused CL__RT_GEN_MASK times.
 */
#if UINTPTR_MAX > 0xffffffffu
#define CL__RT_GEN_SHIFT 48
#define CL__RT_GEN_MASK 0xffffu
#else
#define CL__RT_GEN_SHIFT 0
#define CL__RT_GEN_MASK 0x3fu
#endif

CL_INLINE struct cl_rt_task *cl__rt_handle(struct cl_rt_task *t, unsigned int gen)
{
	return (struct cl_rt_task *)((uintptr_t)t | ((uintptr_t)gen << CL__RT_GEN_SHIFT));
}

CL_INLINE struct cl_rt_task *cl__rt_handle_task(const struct cl_rt_task *h)
{
	return (struct cl_rt_task *)((uintptr_t)h & ~((uintptr_t)CL__RT_GEN_MASK << CL__RT_GEN_SHIFT));
}

CL_INLINE unsigned int cl__rt_handle_gen(const struct cl_rt_task *h)
{
	return (unsigned int)(((uintptr_t)h >> CL__RT_GEN_SHIFT) & CL__RT_GEN_MASK);
}

/* Give @t back to the cache (its stack stays with it); its handles die. */
CL_INLINE void cl__rt_task_release(struct cl_rt_task *t)
{
	unsigned int gen = (CL_ATOMIC_LOAD(&t->keep.jgen, CL_RELAXED) >> 1) % CL__RT_GEN_MASK + 1;

	CL_ATOMIC_STORE(&t->keep.jgen, gen << 1, CL_RELEASE);
#ifdef CL_HAVE_TSAN
	if (t->rc.tsan_fiber)
		__tsan_destroy_fiber(t->rc.tsan_fiber);
	t->rc.tsan_fiber = NULL;
#endif
#ifdef CL__RT_ASAN
	/* frames that never returned left redzones on the stack */
	__asan_unpoison_memory_region((char *)t->keep.map + t->rt->guard_size,
				      t->keep.map_size - t->rt->guard_size);
#endif
	cl_objcache_free(t->rt->tcache, t);
}

/* Drop one reference of @t; the last one releases it. */
CL_INLINE void cl__rt_task_put(struct cl_rt_task *t)
{
	if (CL_ATOMIC_FETCH_SUB(&t->refs, 1, CL_ACQ_REL) == 1)
		cl__rt_task_release(t);
}

/* ---- live tasks (shutdown) ---- */

/* Tell a waiting cl_runtime_shutdown() to look again. */
CL_INLINE void cl__rt_poke_shutdown(struct cl_runtime *rt)
{
	if (CL_ATOMIC_LOAD(&rt->shutdown_waiting, CL_SEQ_CST)) {
		CL_ATOMIC_FETCH_ADD(&rt->quiesce_seq, 1, CL_SEQ_CST);
		cl__futex_wake(&rt->quiesce_seq, INT_MAX);
	}
}

CL_INLINE void cl__rt_live_add(struct cl_runtime *rt, long delta)
{
	if (CL_ATOMIC_FETCH_ADD(&rt->live, (unsigned long)delta, CL_SEQ_CST) + (unsigned long)delta == 0)
		cl__rt_poke_shutdown(rt);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_STACK_H */
