/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/brlock.h - a per-CPU reader-writer lock for read-mostly data
 * (a scheduler's group tree, configuration): readers write only their own
 * CPU's line; writers pay.
 *
 *	static struct cl_brlock lock;
 *	cl_brlock_init(&lock);                    // 0, or -1 + errno
 *	int t = cl_brlock_read_lock(&lock);       // any thread, many at once
 *	... read the shared data ...
 *	cl_brlock_read_unlock(&lock, t);          // may run on another CPU
 *	cl_brlock_write_lock(&lock);              // one writer, no reader
 *	... change it ...
 *	cl_brlock_write_unlock(&lock);
 *	cl_brlock_destroy(&lock);
 *
 * Built from the pool and the public per-CPU operations only, the pattern a
 * user's own per-CPU structure follows (docs/structures.md):
 *   storage  one per-CPU object from a cl_percpu_pool: struct
 *            cl__brlock_cpu {lock, unlock}, two counters of read locks and
 *            read unlocks done on that CPU (on its own slice: CPUs never
 *            share a line);
 *   fast     read_lock = one per-CPU add of 1 to this CPU's `lock` (an rseq
 *            add: no atomic instruction, no fence), then a load of the
 *            writer word; read_unlock = one add to `unlock` of the CPU the
 *            thread runs on then (not necessarily the one that locked: the
 *            counters are only ever summed), then the same load.
 *   slow     the writer: it sets the writer word, makes every running thread
 *            execute a full barrier (membarrier PRIVATE_EXPEDITED, as
 *            liburcu's memb flavour), then waits until the sum of unlocks
 *            equals the sum of locks (unlocks summed first, so a reader that
 *            migrates between the two sums is never missed).
 *
 * Why the reader needs no fence (asymmetric Dekker): a reader stores its
 * lock count, then loads the writer word; the writer stores the writer word,
 * then membarrier() puts a full barrier into every running thread's program
 * order, then loads the counts. Wherever that barrier lands in the reader,
 * either the reader's load sees the writer word (it backs off) or the writer
 * sees the reader's count (it waits). A thread that is not running has gone
 * through the kernel's barriers at its context switch.
 *
 * Modes (cl_brlock_mode(), decided at init):
 *   CL_BRLOCK_MEMBARRIER  the above: readers use the per-CPU add of
 *                         percpu_ops.h (rseq section, or its atomic
 *                         fallback when rseq is unavailable) and no fence;
 *   CL_BRLOCK_FENCE       membarrier(PRIVATE_EXPEDITED) is unavailable
 *                         (kernel < 4.14, seccomp), or a ThreadSanitizer
 *                         build (TSan cannot see membarrier): readers do a
 *                         sequentially consistent atomic add on their CPU's
 *                         counter and a sequentially consistent load of the
 *                         writer word, i.e. a fence per lock and per unlock.
 *                         Still no shared line written by readers.
 * A thread without an rseq area in a process that uses rseq (only possible
 * under a seccomp filter installed after the first thread registered) counts
 * atomically in a shared slot instead.
 *
 * Fairness: a writer that has set the writer word is never overtaken by a
 * new reader (they back off and sleep until it unlocks), so writers are not
 * starved by readers; writers queue first-come first-served (a ticket lock).
 * Readers may be starved by an endless stream of writers (read-mostly use).
 *
 * Synchronization table:
 *	                 read_lock/unlock  write_lock/unlock  init/destroy
 *	read_lock/unlock yes               excluded           no
 *	write_lock/unl.  excluded          excluded (FIFO)    no
 *	init/destroy     no                no                 no
 * Read sections do not nest (a nested read_lock waits for a pending writer,
 * which waits for the outer section: deadlock) and must not be entered from a
 * signal handler that may interrupt a section or a write_lock of the same lock.
 *
 * Memory: the struct holds read-mostly fields only (readers load the writer
 * word and the per-CPU base on every lock); writer-side state is a separate
 * allocation on its own false-sharing unit. Embed struct cl_brlock away from
 * often-written fields (e.g. CL_CACHELINE_ALIGNED) to keep readers' line clean.
 */
#ifndef CACHELOCAL_BRLOCK_H
#define CACHELOCAL_BRLOCK_H

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "config.h"
#include "fence.h"
#include "internal/futex.h"
#include "internal/slice.h"
#include "percpu.h"
#include "percpu_ops.h"
#include "rseq.h"
#include "sys.h"

CL_BEGIN_DECLS

/* Modes (cl_brlock_mode()). */
enum cl_brlock_mode {
	CL_BRLOCK_MEMBARRIER = 1, /* readers: per-CPU add, no fence; writers: membarrier */
	CL_BRLOCK_FENCE = 2,      /* readers: atomic add and load, sequentially consistent */
};

/* The per-CPU object: what readers on one CPU write. */
struct cl__brlock_cpu {
	intptr_t lock;   /* read locks counted on this CPU (wraps) */
	intptr_t unlock; /* read unlocks (and backed-off locks) counted on this CPU */
};

/* Writer-side state: one allocation, alone on its false-sharing unit. */
struct cl__brlock_wside {
	unsigned whead;        /* ticket now served (futex word for queued writers) */
	unsigned wtail;        /* next ticket */
	unsigned wseq;         /* futex word: readers bump it when they leave */
	int wsleep;            /* a writer sleeps on wseq */
	intptr_t shared_lock;  /* locks of threads without the per-CPU path (atomic) */
	intptr_t shared_unlock;
	struct cl_percpu_pool *pool;
	void *pcpu;            /* the pool object (the lock's cpu is placed in it) */
	int own_pool;          /* the pool was created by init: destroy frees it */
};

/*
 * A lock's own pool object has a page of room: the counters go half a page
 * from the struct (page offset of the lock plus 2 KiB). Every read lock and
 * unlock stores a counter and loads the struct's fast pointer and writer
 * word next; a store and a later load 4 KiB apart in their low 12 bits make
 * the load wait for the store (4K aliasing), which a page-aligned struct
 * and a pool object at a page start (a lock's own pool) would do on every
 * call. In a caller's pool the counters are where the pool puts them.
 */
#define CL__BRLOCK_PLACE_ROOM 4096u

/* writer word bits */
#define CL__BRLOCK_W_HELD 1    /* a writer holds the lock or waits for readers */
#define CL__BRLOCK_W_WAITERS 2 /* readers sleep on the word */

/*
 * A fence the membarrier mode needs (free on x86_64, where it is a compiler
 * barrier). ThreadSanitizer builds always run the fence mode, which orders
 * everything with sequentially consistent atomics, and TSan rejects
 * standalone fences.
 */
#ifdef CL_HAVE_TSAN
#define CL__BRLOCK_MEMB_FENCE(mo) CL_BARRIER()
#else
#define CL__BRLOCK_MEMB_FENCE(mo) CL_ATOMIC_FENCE(mo)
#endif

/* Reader and writer spin rounds before sleeping. */
#ifndef CL_BRLOCK_SPIN_ROUNDS
#define CL_BRLOCK_SPIN_ROUNDS 200
#endif

/**
 * struct cl_brlock - a per-CPU reader-writer lock. Complete type: embed it
 * or declare it static, then cl_brlock_init(). Fields are private.
 *
 * Every field is written by init/destroy only, except @writer (written by
 * writers on lock and unlock, and by readers that go to sleep). Readers load
 * @fast and @writer on every lock (the out-of-line path: @mode, @index, @cpu
 * and @stride too): they are read-mostly.
 */
struct cl_brlock {
	int writer;                  /* CL__BRLOCK_W_* */
	int mode;                    /* enum cl_brlock_mode; 0 = not initialised */
	int index;                   /* enum cl_rseq_index of the per-CPU counters */
	unsigned nr_cpus;            /* copies in the pool */
	struct cl__brlock_cpu *fast; /* @cpu when readers take the inline path, else NULL */
	struct cl__brlock_cpu *cpu;  /* CPU 0's copy of the per-CPU object */
	size_t stride;               /* the pool's stride */
	struct cl__brlock_wside *w;  /* writer side */
};

/* ---- process-wide: membarrier (fence.h), futex (internal/futex.h) ---- */

/* 1 when writers can use membarrier (registering on first use), else -1. */
CL_INLINE int cl__brlock_memb_ready(void)
{
#ifdef CL_BRLOCK_NO_MEMBARRIER
	return -1;
#else
	return cl_fence_all_threads_available() ? 1 : -1;
#endif
}

/*
 * A full barrier in every running thread of the process
 * (cl_fence_all_threads(), which registers again after a fork). Registered
 * once and refused now, it has done what is left: a full fence and a
 * context switch of this thread.
 */
CL_INLINE void cl__brlock_memb_fence(void)
{
	(void)cl_fence_all_threads();
}

/* Sleep while *addr == val (spurious wake-ups possible; callers re-check); errno kept. */
CL_INLINE void cl__brlock_futex_wait(int *addr, int val)
{
	int saved = errno;

	(void)cl__futex_wait(addr, val, NULL);
	errno = saved;
}

/* ---- init / destroy ---- */

/**
 * cl_brlock_init_pool() - set up a lock on a caller's pool and index kind.
 * @l: the lock (uninitialised storage).
 * @pool: the per-CPU pool for the counters (one 16-byte object), or NULL to
 *        create one for this lock (destroyed with it). A caller's pool must
 *        have a copy for every possible CPU and must outlive the lock.
 * @idx: CL_RSEQ_INDEX_CPU_ID (counters per CPU) or CL_RSEQ_INDEX_MM_CID
 *       (per concurrency ID: fewer copies touched when the process has
 *       fewer threads than CPUs).
 *
 * Decides the mode (cl_brlock_mode()) and registers the process for
 * membarrier on first use.
 *
 * Context: any thread; not concurrently with other calls on @l.
 * Return: 0, or -1 with errno EINVAL (NULL @l, bad @idx, @pool with fewer
 * copies than possible CPUs) or ENOMEM.
 */
CL_INLINE int cl_brlock_init_pool(struct cl_brlock *l, struct cl_percpu_pool *pool,
				  enum cl_rseq_index idx)
{
	struct cl__brlock_wside *w;
	int own = 0, memb;

	if (l == NULL || (idx != CL_RSEQ_INDEX_CPU_ID && idx != CL_RSEQ_INDEX_MM_CID) ||
	    (pool != NULL && cl_percpu_pool_nr_cpus(pool) < cl_nr_possible_cpus())) {
		errno = EINVAL;
		return -1;
	}
	memset(l, 0, sizeof(*l));
	w = (struct cl__brlock_wside *)aligned_alloc(CL_FALSE_SHARING_SIZE,
						     (sizeof(*w) + CL_FALSE_SHARING_SIZE - 1) /
							     CL_FALSE_SHARING_SIZE * CL_FALSE_SHARING_SIZE);
	if (w == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memset(w, 0, sizeof(*w));
	if (pool == NULL) {
		pool = cl_percpu_pool_create(NULL);
		if (pool == NULL) {
			free(w);
			return -1;
		}
		own = 1;
	}
	w->pcpu = cl_percpu_alloc(pool, sizeof(struct cl__brlock_cpu) + (own ? CL__BRLOCK_PLACE_ROOM : 0),
				  own ? CL_CACHELINE_SIZE : sizeof(intptr_t));
	if (w->pcpu == NULL) {
		int e = errno;

		if (own)
			cl_percpu_pool_destroy(pool);
		free(w);
		errno = e;
		return -1;
	}
	l->cpu = (struct cl__brlock_cpu *)w->pcpu;
	if (own) {
		uintptr_t want = ((uintptr_t)l + 2048u) % 4096u, have = (uintptr_t)w->pcpu % 4096u;

		l->cpu = (struct cl__brlock_cpu *)(void *)((char *)w->pcpu +
							   (want - have + 4096u) % 4096u /
								   CL_CACHELINE_SIZE * CL_CACHELINE_SIZE);
	}
	w->pool = pool;
	w->own_pool = own;
	l->w = w;
	l->stride = cl_percpu_pool_stride(pool);
	l->nr_cpus = cl_percpu_pool_nr_cpus(pool);
	l->index = (int)idx;
	memb = cl__brlock_memb_ready();
#ifdef CL_HAVE_TSAN
	memb = -1; /* TSan does not model membarrier: readers fence */
#endif
	/* Decide the operations mode now, not on the first read lock. */
	(void)cl_rseq_ops_mode_index(idx);
	/* The inline path: membarrier mode, cpu_id counters, the default
	 * stride (a constant there: no load, no check). */
	l->fast = memb == 1 && idx == CL_RSEQ_INDEX_CPU_ID && l->stride == CL_PERCPU_STRIDE ? l->cpu
											       : NULL;
	CL_ATOMIC_STORE(&l->mode, memb == 1 ? CL_BRLOCK_MEMBARRIER : CL_BRLOCK_FENCE,
			CL_RELEASE);
	return 0;
}

/**
 * cl_brlock_init() - set up a lock with per-CPU counters in its own pool.
 * @l: the lock (uninitialised storage).
 *
 * Same as cl_brlock_init_pool(@l, NULL, CL_RSEQ_INDEX_CPU_ID).
 *
 * Context: any thread; not concurrently with other calls on @l.
 * Return: 0, or -1 with errno EINVAL (NULL @l) or ENOMEM.
 */
CL_INLINE int cl_brlock_init(struct cl_brlock *l)
{
	return cl_brlock_init_pool(l, NULL, CL_RSEQ_INDEX_CPU_ID);
}

/**
 * cl_brlock_destroy() - free what init allocated.
 * @l: an initialised lock with no reader or writer (or zeroed storage, or a
 *     lock already destroyed: then nothing happens).
 *
 * Context: no other call on @l may run concurrently or afterwards (until a
 * new init).
 */
CL_INLINE void cl_brlock_destroy(struct cl_brlock *l)
{
	struct cl__brlock_wside *w;

	if (l == NULL || l->w == NULL)
		return;
	w = l->w;
	cl_percpu_free(w->pool, w->pcpu);
	if (w->own_pool)
		cl_percpu_pool_destroy(w->pool);
	free(w);
	memset(l, 0, sizeof(*l));
}

/**
 * cl_brlock_mode() - how readers of this lock synchronise with writers.
 * @l: an initialised lock.
 *
 * Context: any thread.
 * Return: CL_BRLOCK_MEMBARRIER or CL_BRLOCK_FENCE; 0 with errno EINVAL for
 * NULL or uninitialised @l.
 */
CL_INLINE enum cl_brlock_mode cl_brlock_mode(const struct cl_brlock *l)
{
	if (l == NULL || l->mode == 0) {
		errno = EINVAL;
		return (enum cl_brlock_mode)0;
	}
	return (enum cl_brlock_mode)l->mode;
}

/* ---- readers ---- */

/*
 * Count one read lock (@unlock 0) or unlock (@unlock 1) on the current CPU's
 * copy. Returns the index of the copy, or nr_cpus for the shared slot.
 */
CL_ALWAYS_INLINE int cl__brlock_count(struct cl_brlock *l, int unlock)
{
	enum cl_rseq_index idx = (enum cl_rseq_index)l->index;
	struct cl__brlock_cpu *mine;
	int i;

	if (CL_LIKELY(l->mode == CL_BRLOCK_MEMBARRIER)) {
		/* The public per-CPU path: this CPU's copy, rseq add, retried on
		 * abort; the kind a constant in each branch (inlined once each). */
		intptr_t *v = unlock ? &l->cpu->unlock : &l->cpu->lock;

		if (CL_LIKELY(idx == CL_RSEQ_INDEX_CPU_ID))
			i = cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, v, l->stride, 1);
		else
			i = cl_percpu_add(CL_RSEQ_INDEX_MM_CID, v, l->stride, 1);
		if (CL_LIKELY(i >= 0))
			return i;
		/* -1, ENOSYS: no rseq area in this thread; count in the shared slot. */
	} else {
		i = cl_rseq_current_index(idx);
		if (CL_LIKELY((unsigned)i < l->nr_cpus)) {
			mine = cl_percpu_ptr_stride(l->cpu, i, l->stride);
			CL_ATOMIC_FETCH_ADD(unlock ? &mine->unlock : &mine->lock, 1, CL_SEQ_CST);
			return i;
		}
	}
	CL_ATOMIC_FETCH_ADD(unlock ? &l->w->shared_unlock : &l->w->shared_lock, 1, CL_SEQ_CST);
	return (int)l->nr_cpus;
}

/* Wake a writer that may wait for this reader's unlock. */
static CL_COLD CL_NOINLINE CL_UNUSED void cl__brlock_wake_writer(struct cl_brlock *l)
{
	struct cl__brlock_wside *w = l->w;

	CL_ATOMIC_FETCH_ADD(&w->wseq, 1, CL_SEQ_CST);
	if (CL_ATOMIC_LOAD(&w->wsleep, CL_SEQ_CST))
		(void)cl__futex_wake((int *)(void *)&w->wseq, 1);
}

/* Load the writer word after a count (see the header comment for why the
 * membarrier mode needs only a compiler barrier here). */
CL_ALWAYS_INLINE int cl__brlock_writer(struct cl_brlock *l)
{
	if (CL_LIKELY(l->mode == CL_BRLOCK_MEMBARRIER)) {
		CL_BARRIER();
		return CL_ATOMIC_LOAD(&l->writer, CL_ACQUIRE);
	}
	return CL_ATOMIC_LOAD(&l->writer, CL_SEQ_CST);
}

/* A writer is pending: take our lock back, then sleep until it unlocks. */
static CL_COLD CL_NOINLINE CL_UNUSED void cl__brlock_read_backoff(struct cl_brlock *l)
{
	unsigned spins = 0;
	int v;

	CL__BRLOCK_MEMB_FENCE(CL_RELEASE);
	cl__brlock_count(l, 1);
	cl__brlock_wake_writer(l);
	for (;;) {
		v = CL_ATOMIC_LOAD(&l->writer, CL_ACQUIRE);
		if (v == 0)
			return;
		if (++spins < CL_BRLOCK_SPIN_ROUNDS) {
			CL_CPU_RELAX();
			continue;
		}
		if (!(v & CL__BRLOCK_W_WAITERS) &&
		    !CL_ATOMIC_CAS(&l->writer, &v, v | CL__BRLOCK_W_WAITERS, CL_RELAXED, CL_RELAXED))
			continue;
		cl__brlock_futex_wait(&l->writer, v | CL__BRLOCK_W_WAITERS);
	}
}

/*
 * A zeroed or destroyed lock (mode 0, no writer side) takes the out-of-line
 * paths (its fast pointer is NULL): they check it, the inline path does not.
 */
CL_INLINE int cl__brlock_uninit(const struct cl_brlock *l)
{
	return CL__BAD_ARG(CL_ATOMIC_LOAD(&l->mode, CL_ACQUIRE) == 0 || l->w == NULL);
}

/* Every mode and index kind: read_lock's out-of-line path. */
static CL_NOINLINE CL_UNUSED int cl__brlock_read_lock_slow(struct cl_brlock *l)
{
	if (cl__brlock_uninit(l))
		return -1;
	for (;;) {
		int t = cl__brlock_count(l, 0);

		if (CL_LIKELY(cl__brlock_writer(l) == 0))
			return t;
		cl__brlock_read_backoff(l);
	}
}

/* Every mode and index kind: read_unlock's out-of-line path. */
static CL_NOINLINE CL_UNUSED void cl__brlock_read_unlock_slow(struct cl_brlock *l)
{
	if (cl__brlock_uninit(l))
		return;
	CL__BRLOCK_MEMB_FENCE(CL_RELEASE);
	cl__brlock_count(l, 1);
	if (CL_UNLIKELY(cl__brlock_writer(l) != 0))
		cl__brlock_wake_writer(l);
}

/**
 * cl_brlock_read_lock() - enter a read section.
 * @l: an initialised lock.
 *
 * Fast path (no writer):
 *	i = current index;  cpu[i].lock += 1    (per-CPU add: rseq, no atomic)
 *	compiler barrier;   if (writer == 0) return i;
 * With a writer pending: count an unlock (taking the lock back), wake the
 * writer, sleep until the writer word clears, retry.
 * In CL_BRLOCK_FENCE mode the add and the load are sequentially consistent
 * atomics. Inline only for the membarrier mode with cpu_id counters in a
 * pool of the default stride; the other combinations take one out-of-line
 * call.
 *
 * Context: any thread; not nested in another read section of @l, not in a
 * signal handler that may interrupt a section of @l. May sleep (futex)
 * while a writer holds the lock.
 * Return: a token for cl_brlock_read_unlock(): the index of the copy that
 * counted the lock (nr_cpus for the shared slot); -1 with errno EINVAL for a
 * NULL @l, or a zeroed or destroyed one (checked on the out-of-line path
 * such a lock takes; the inline path costs nothing more).
 */
CL_ALWAYS_INLINE int cl_brlock_read_lock(struct cl_brlock *l)
{
	struct cl__brlock_cpu *fast;

	if (CL__BAD_ARG(l == NULL))
		return -1;
	fast = l->fast;
	if (CL_LIKELY(fast != NULL)) {
		int t = cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, &fast->lock, CL_PERCPU_STRIDE, 1);

		CL_BARRIER();
		if (CL_LIKELY(t >= 0 && CL_ATOMIC_LOAD(&l->writer, CL_ACQUIRE) == 0))
			return t;
		if (t >= 0)
			cl__brlock_read_backoff(l);
	}
	return cl__brlock_read_lock_slow(l);
}

/**
 * cl_brlock_read_unlock() - leave a read section.
 * @l: the lock.
 * @token: what cl_brlock_read_lock() returned. The thread may have migrated
 *         since: the unlock is counted on the CPU it runs on now (writers
 *         only compare sums), so the token is not needed for correctness;
 *         debug builds (CL_DEBUG) check that it is in range.
 *
 *	release ordering (free on x86_64); i = current index;
 *	cpu[i].unlock += 1;  if (writer != 0) wake the writer
 *
 * Context: the thread that took the read lock. errno EINVAL (nothing
 * else happens) for a NULL, zeroed or destroyed @l.
 */
CL_ALWAYS_INLINE void cl_brlock_read_unlock(struct cl_brlock *l, int token)
{
	struct cl__brlock_cpu *fast;

	if (CL__BAD_ARG(l == NULL))
		return;
	CL_DEBUG_ASSERT(token >= 0 && (unsigned)token <= l->nr_cpus);
	(void)token;
	fast = l->fast;
	if (CL_LIKELY(fast != NULL)) {
		/* The section's loads before the count (a compiler barrier on TSO). */
		CL__BRLOCK_MEMB_FENCE(CL_RELEASE);
		if (CL_LIKELY(cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, &fast->unlock, CL_PERCPU_STRIDE, 1) >=
			      0)) {
			CL_BARRIER();
			if (CL_UNLIKELY(CL_ATOMIC_LOAD(&l->writer, CL_RELAXED) != 0))
				cl__brlock_wake_writer(l);
			return;
		}
	}
	cl__brlock_read_unlock_slow(l);
}

/* ---- writers ---- */

/*
 * No reader inside: sum of unlocks (read first) equals sum of locks. The
 * loads are sequentially consistent (plain loads on x86_64): ordered after
 * the writer word's store in the fence mode, unlocks before locks, and
 * acquire for the sections they close.
 */
CL_INLINE int cl__brlock_idle(const struct cl_brlock *l)
{
	const struct cl__brlock_wside *w = l->w;
	uintptr_t u, k;
	unsigned i;

	u = (uintptr_t)CL_ATOMIC_LOAD(&w->shared_unlock, CL_SEQ_CST);
	for (i = 0; i < l->nr_cpus; i++)
		u += (uintptr_t)CL_ATOMIC_LOAD(&cl_percpu_ptr_stride(l->cpu, i, l->stride)->unlock,
					       CL_SEQ_CST);
	k = (uintptr_t)CL_ATOMIC_LOAD(&w->shared_lock, CL_SEQ_CST);
	for (i = 0; i < l->nr_cpus; i++)
		k += (uintptr_t)CL_ATOMIC_LOAD(&cl_percpu_ptr_stride(l->cpu, i, l->stride)->lock,
					       CL_SEQ_CST);
	return u == k;
}

/**
 * cl_brlock_write_lock() - take the lock for writing.
 * @l: an initialised lock.
 *
 *	take a ticket, wait for it (writers in arrival order);
 *	writer = HELD;  membarrier()  (CL_BRLOCK_FENCE mode: a full fence);
 *	until sum(unlock) == sum(lock): spin, then sleep (readers that leave
 *	while the writer word is set wake it).
 * From the store of the writer word on, new readers back off, so the wait
 * covers only the readers already inside.
 *
 * Context: any thread, not holding @l in any way. Sleeps; costs a
 * membarrier system call (an IPI to each CPU running a thread of the
 * process) and two loads per possible CPU per check.
 * Return: 0 (held), or -1 with errno EINVAL (NULL @l, or a zeroed or
 * destroyed one).
 */
CL_INLINE int cl_brlock_write_lock(struct cl_brlock *l)
{
	struct cl__brlock_wside *w;
	unsigned ticket, h, seq, spins = 0;

	if (CL__BAD_ARG(l == NULL) || cl__brlock_uninit(l))
		return -1;
	w = l->w;
	ticket = CL_ATOMIC_FETCH_ADD(&w->wtail, 1u, CL_RELAXED);

	while ((h = CL_ATOMIC_LOAD(&w->whead, CL_ACQUIRE)) != ticket) {
		if (++spins < CL_BRLOCK_SPIN_ROUNDS)
			CL_CPU_RELAX();
		else
			cl__brlock_futex_wait((int *)(void *)&w->whead, (int)h);
	}
	CL_ATOMIC_STORE(&l->writer, CL__BRLOCK_W_HELD, CL_SEQ_CST);
	/* Fence mode: the store and the loads of cl__brlock_idle() are all
	 * sequentially consistent, as are the readers' add and load. */
	if (l->mode == CL_BRLOCK_MEMBARRIER)
		cl__brlock_memb_fence();
	for (spins = 0;; spins++) {
		if (cl__brlock_idle(l))
			break;
		if (spins < CL_BRLOCK_SPIN_ROUNDS) {
			CL_CPU_RELAX();
			continue;
		}
		CL_ATOMIC_STORE(&w->wsleep, 1, CL_SEQ_CST);
		seq = CL_ATOMIC_LOAD(&w->wseq, CL_SEQ_CST);
		if (cl__brlock_idle(l)) {
			CL_ATOMIC_STORE(&w->wsleep, 0, CL_RELAXED);
			break;
		}
		cl__brlock_futex_wait((int *)(void *)&w->wseq, (int)seq);
		CL_ATOMIC_STORE(&w->wsleep, 0, CL_RELAXED);
	}
	/* Readers' sections happened before: their unlock counts were loaded
	 * with (at least) acquire after their release fence or release add. */
	cl__slice_begin(); /* the waits (futex, membarrier) are over */
	return 0;
}

/**
 * cl_brlock_write_unlock() - release the write lock.
 * @l: a lock held for writing by this thread.
 *
 *	old = writer; if (!(old & HELD)) fail EPERM;
 *	cas(writer, old, 0) (release);  wake sleeping readers if any;
 *	serve the next ticket, wake the queued writers.
 *
 * An unlock while no writer holds the lock changes nothing (before this
 * check it served a ticket nobody held, and the next write_lock waited
 * forever). Not detected: an unlock by another thread than the holder
 * while a writer holds the lock (no owner is recorded): it releases that
 * writer's lock.
 *
 * Time-slice extension (cachelocal/slice.h): the writer asks for it from
 * the end of write_lock's waits to the store that serves the next writer;
 * only a wake of sleeping readers (a futex call, when readers sleep) falls
 * inside, and the kernel ends a grant at that call.
 *
 * Context: the thread that took the write lock.
 * Return: 0, or -1 with errno EPERM (no writer holds @l) or EINVAL (NULL
 * @l, or a zeroed or destroyed one).
 */
CL_INLINE int cl_brlock_write_unlock(struct cl_brlock *l)
{
	struct cl__brlock_wside *w;
	int old;
	unsigned next;

	if (CL__BAD_ARG(l == NULL) || cl__brlock_uninit(l))
		return -1;
	w = l->w;
	old = CL_ATOMIC_LOAD(&l->writer, CL_RELAXED);
	do {
		if (!(old & CL__BRLOCK_W_HELD)) {
			errno = EPERM;
			return -1;
		}
	} while (!CL_ATOMIC_CAS(&l->writer, &old, 0, CL_RELEASE, CL_RELAXED));
	next = CL_ATOMIC_LOAD(&w->whead, CL_RELAXED) + 1u;

	if (old & CL__BRLOCK_W_WAITERS)
		(void)cl__futex_wake(&l->writer, INT_MAX);
	CL_ATOMIC_STORE(&w->whead, next, CL_SEQ_CST);
	cl__slice_end();
	if (CL_ATOMIC_LOAD(&w->wtail, CL_SEQ_CST) != next)
		(void)cl__futex_wake((int *)(void *)&w->whead, INT_MAX);
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_BRLOCK_H */
