/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/counter.h - per-CPU counters: cheap adds, exact sums.
 *
 * A struct cl_counter is a complete type: embed it or declare it static, then
 * cl_counter_init() allocates its slots. Each slot is one int64_t on its own
 * false-sharing unit (CL_FALSE_SHARING_SIZE bytes, so two CPUs' adds never
 * share a line or an adjacent-line prefetch pair), one per possible CPU
 * (cl_nr_possible_cpus(), sparse CPU ids included), plus one shared slot.
 *
 *	static struct cl_counter hits;
 *	cl_counter_init(&hits);                  // 0, or -1 + errno
 *	cl_counter_add(&hits, 1);                // any thread, no atomic on x86_64
 *	printf("%lld\n", (long long)cl_counter_read(&hits));
 *	cl_counter_destroy(&hits);
 *
 * An add runs cl_rseq_add() on the slot of the CPU the thread runs on (or of
 * its mm_cid, for counters made with cl_counter_init_index()); an abort
 * (preemption, migration, signal) retries with the fresh index. Without rseq
 * (see cl_rseq_ops_mode()) it is a relaxed atomic add on the current CPU's
 * slot, so the slots still spread the cache-line traffic. The shared last
 * slot takes adds only atomically, from a thread that has no rseq area while
 * the process uses rseq, or an index beyond the slots.
 *
 * Compact form (cl_counter_init_cid()): one slot per cid of a cid.h domain,
 * min(allowed CPUs, users) slots instead of one per possible CPU. A thread
 * holding a cid adds with cl_counter_add_cid(), a single-writer plain update.
 *
 * Reads: cl_counter_read() sums all slots with untorn loads. For a quiescent
 * counter (every add happened before the read, e.g. after pthread_join) the
 * sum is exact. Concurrently with adds, it includes every add that completed
 * before the read started, none that started after it returned, and any
 * subset of those in between; with adds of one sign the result lies between
 * the counter's values at the start and at the end of the read. It is not a
 * snapshot: with mixed signs it may be a value the counter never held.
 *
 * Layout per slot: struct cl__counter_slot below (one int64_t, aligned and
 * padded to CL_FALSE_SHARING_SIZE); the array is allocated aligned to it.
 */
#ifndef CACHELOCAL_COUNTER_H
#define CACHELOCAL_COUNTER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cid.h"
#include "compiler.h"
#include "config.h"
#include "percpu_ops.h"
#include "rseq.h"
#include "topology.h"

CL_BEGIN_DECLS

/* One counter slot: written by one CPU at a time, alone on its guard unit. */
struct cl__counter_slot {
	int64_t v CL_ALIGNED(CL_FALSE_SHARING_SIZE);
};
CL_STATIC_ASSERT(sizeof(struct cl__counter_slot) == CL_FALSE_SHARING_SIZE,
		 "one counter slot per false-sharing unit");

/* The rseq add updates a slot as an intptr_t: only where that is 64 bits. */
#if INTPTR_MAX >= INT64_MAX
#define CL__COUNTER_RSEQ 1
#endif

/* A per-CPU counter. Fields are private; use the functions. */
struct cl_counter {
	struct cl__counter_slot *slots; /* nr_slots + 1 (the last is shared) */
	unsigned nr_slots;              /* index bound: possible CPUs, or cids */
	int index;                      /* enum cl_rseq_index (rseq-indexed counters) */
	struct cl_cid_domain *domain;   /* cid-indexed counters: the domain, else NULL */
};

/* Allocate n + 1 zeroed slots; 0, or -1 + errno. */
CL_INLINE int cl__counter_alloc(struct cl_counter *c, unsigned n)
{
	size_t bytes = ((size_t)n + 1) * sizeof(struct cl__counter_slot);

	c->slots = (struct cl__counter_slot *)aligned_alloc(CL_FALSE_SHARING_SIZE, bytes);
	if (c->slots == NULL) {
		errno = ENOMEM;
		return -1;
	}
	memset(c->slots, 0, bytes);
	c->nr_slots = n;
	return 0;
}

/**
 * cl_counter_init_index() - set up a counter indexed by cpu_id or mm_cid.
 * @c: the counter (uninitialised storage).
 * @idx: CL_RSEQ_INDEX_CPU_ID (slot = CPU) or CL_RSEQ_INDEX_MM_CID (slot =
 *       the kernel's concurrency ID; fewer slots are touched when a process
 *       has fewer threads than CPUs, untouched slots stay cold).
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c or bad @idx) or ENOMEM; @c is
 * then left with no slots (cl_counter_destroy() is still safe).
 */
CL_INLINE int cl_counter_init_index(struct cl_counter *c, enum cl_rseq_index idx)
{
	unsigned n;

	if (c == NULL || (idx != CL_RSEQ_INDEX_CPU_ID && idx != CL_RSEQ_INDEX_MM_CID)) {
		errno = EINVAL;
		return -1;
	}
	c->slots = NULL;
	c->nr_slots = 0;
	c->index = (int)idx;
	c->domain = NULL;
	n = cl_nr_possible_cpus();
	if (cl__counter_alloc(c, n ? n : 1) != 0)
		return -1;
	/* Decide the operations mode now, not on the first add. */
	(void)cl_rseq_ops_mode_index(idx);
	return 0;
}

/**
 * cl_counter_init() - set up a counter with one slot per possible CPU.
 * @c: the counter (uninitialised storage).
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c) or ENOMEM.
 */
CL_INLINE int cl_counter_init(struct cl_counter *c)
{
	return cl_counter_init_index(c, CL_RSEQ_INDEX_CPU_ID);
}

/**
 * cl_counter_init_cid() - set up a counter indexed by the cids of a domain.
 * @c: the counter (uninitialised storage).
 * @d: a cid domain (cid.h); it must outlive the counter.
 * @nr_slots: number of per-cid slots; 0 means cl_cid_domain_bound(@d) now
 *            (at least 1). Cids at or above it share the atomic last slot.
 *
 * The compact form for big machines: min(allowed CPUs, users) slots instead
 * of one per possible CPU (8 threads on 384 CPUs: 9 slots, 1 KiB). A thread
 * that holds a cid of @d adds with cl_counter_add_cid(), a plain single-writer
 * update of its slot; cl_counter_add() on this counter acquires a cid,
 * adds and releases it (correct, but two atomic operations per add).
 *
 * Context: any thread; not concurrently with other calls on @c.
 * Return: 0, or -1 with errno EINVAL (NULL @c or @d) or ENOMEM.
 */
CL_INLINE int cl_counter_init_cid(struct cl_counter *c, struct cl_cid_domain *d,
				  unsigned nr_slots)
{
	if (c == NULL || d == NULL) {
		errno = EINVAL;
		return -1;
	}
	c->slots = NULL;
	c->nr_slots = 0;
	c->index = (int)CL_RSEQ_INDEX_CPU_ID;
	c->domain = d;
	if (nr_slots == 0)
		nr_slots = cl_cid_domain_bound(d);
	return cl__counter_alloc(c, nr_slots ? nr_slots : 1);
}

/* The shared slot: atomic adds only. */
CL_INLINE void cl__counter_add_shared(struct cl_counter *c, int64_t v)
{
	CL_ATOMIC_FETCH_ADD(&c->slots[c->nr_slots].v, v, CL_RELAXED);
}

/**
 * cl_counter_add_cid() - add @v as the holder of cid @cid.
 * @c: a counter set up by cl_counter_init_cid().
 * @cid: a cid of the counter's domain that the caller holds (from
 *       cl_cid_acquire(), not yet released).
 * @v: the addend.
 *
 * The holder is the only writer of slot[@cid] (cid uniqueness), so this is a
 * plain load and store, no atomic read-modify-write; the domain's release
 * and acquire order it before the next holder's. A @cid at or above the
 * slot count, or negative (a failed cl_cid_acquire() passed on), goes to
 * the shared slot atomically: the add is never lost.
 *
 * Context: the thread holding @cid (or the one it handed the cid to);
 * concurrently with reads and with other holders' adds.
 */
CL_INLINE void cl_counter_add_cid(struct cl_counter *c, int cid, int64_t v)
{
	int64_t *p;

	if (CL_UNLIKELY(c->slots == NULL))
		return;
	if (CL_UNLIKELY(cid < 0 || (unsigned)cid >= c->nr_slots)) {
		cl__counter_add_shared(c, v);
		return;
	}
	p = &c->slots[cid].v;
	CL_ATOMIC_STORE(p, (int64_t)((uint64_t)CL_ATOMIC_LOAD(p, CL_RELAXED) + (uint64_t)v),
			CL_RELAXED);
}

/*
 * cl_counter_add() on a cid-indexed counter: hold a cid for one add. The add
 * never fails, so a failed acquire (EBUSY) must not leak into errno.
 */
static CL_NOINLINE CL_UNUSED void cl__counter_add_acquire(struct cl_counter *c, int64_t v)
{
	int saved = errno;
	int cid = cl_cid_acquire(c->domain);

	if (cid < 0) { /* not a user of the domain, or one holder too many */
		errno = saved;
		cl__counter_add_shared(c, v);
		return;
	}
	cl_counter_add_cid(c, cid, v);
	cl_cid_release(c->domain, cid);
}

/**
 * cl_counter_add() - add @v to the counter.
 * @c: an initialised counter.
 * @v: the addend (may be negative; the sum wraps like int64_t arithmetic
 *     in two's complement).
 *
 * rseq path, per attempt:
 *	cpu = rseq->cpu_id (or mm_cid);
 *	critical section: if (rseq->cpu_id != cpu) abort; slot[cpu] += v;
 * until it commits. Fallback: atomic add on slot[current CPU % slots].
 * On a cid-indexed counter: acquire a cid, cl_counter_add_cid(), release.
 *
 * Context: any thread, concurrently with other adds and reads; also from a
 * signal handler, except on a cid-indexed counter (cl_cid_acquire() may
 * take the domain lock and sleep). Does nothing on a counter without slots.
 * errno is not changed.
 */
CL_INLINE void cl_counter_add(struct cl_counter *c, int64_t v)
{
	struct cl__counter_slot *slots = c->slots;

	if (CL_UNLIKELY(slots == NULL))
		return;
	if (CL_UNLIKELY(c->domain != NULL)) {
		cl__counter_add_acquire(c, v);
		return;
	}
	if (CL_UNLIKELY(cl_percpu_add((enum cl_rseq_index)c->index, (intptr_t *)(void *)&slots[0].v,
				      sizeof(slots[0]), (intptr_t)v) < 0))
		cl__counter_add_shared(c, v); /* no rseq area in this thread */
}

/**
 * cl_counter_read() - the sum of all slots.
 * @c: an initialised counter.
 *
 * Exact for a quiescent counter; see the header comment for what a read
 * concurrent with adds returns. Costs one load per possible CPU.
 *
 * Context: any thread, concurrently with adds.
 * Return: the sum (0 for a counter without slots).
 */
CL_INLINE int64_t cl_counter_read(const struct cl_counter *c)
{
	uint64_t sum = 0;

	if (c == NULL || c->slots == NULL)
		return 0;
	for (unsigned i = 0; i <= c->nr_slots; i++)
		sum += (uint64_t)CL_ATOMIC_LOAD(&c->slots[i].v, CL_RELAXED);
	return (int64_t)sum;
}

/**
 * cl_counter_destroy() - free the slots.
 * @c: a counter set up by cl_counter_init*() (or zeroed, or already destroyed).
 *
 * Context: no add or read may run concurrently or afterwards (until a new
 * init).
 */
CL_INLINE void cl_counter_destroy(struct cl_counter *c)
{
	if (c == NULL)
		return;
	free(c->slots);
	c->slots = NULL;
	c->nr_slots = 0;
	c->domain = NULL;
}

CL_END_DECLS

#endif /* CACHELOCAL_COUNTER_H */
