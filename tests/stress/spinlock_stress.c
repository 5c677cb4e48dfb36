/* SPDX-License-Identifier: MIT */
/*
 * spinlock_stress - mutual exclusion under preemption, migration and signals
 * of four locks: a per-CPU (and per-mm_cid) spinlock taken with
 * cl_rseq_cmpstore(kind, lock, 0, 1, index), in both index modes; and the three
 * locks of cachelocal/spinlock.h, one per index slot, each taken with its
 * lock or trylock call and released, possibly on another CPU, with its
 * unlock: TTAS (struct cl_spinlock), ticket (struct cl_ticketlock) and MCS
 * (struct cl_mcslock, the worker's node on its stack).
 *
 * A worker locks the slot of its current index, checks that nobody else is
 * inside (an owner word), increments the slot's plain counter, sometimes
 * yields while holding the lock (so it may migrate and unlock from another
 * CPU), then releases with a store-release of 0. The plain counters must
 * add up to the number of lock acquisitions.
 */
#include "stress.h"

#include <cachelocal/percpu_ops.h>
#include <cachelocal/spinlock.h>
#include <cachelocal/topology.h>

struct lslot {
	intptr_t lock CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	struct cl_spinlock ttas; /* the TTAS pass: the lock instead of `lock` */
	struct cl_ticketlock ticket; /* the ticket pass */
	struct cl_mcslock mcs; /* the MCS pass */
	int owner; /* worker id + 1 inside the lock (atomic, only to detect overlap) */
	long count; /* plain: protected by the lock */
};

struct lock_test {
	struct lslot *slots;
	unsigned nr;
	enum cl_rseq_index idx;
	int ttas; /* which spinlock.h lock (enum lock_kind); 0: the rseq lock */
};

enum lock_kind { LK_RSEQ, LK_TTAS, LK_TICKET, LK_MCS };

static const char *const lock_name[] = { "rseq cmpstore lock", "TTAS cl_spinlock",
					 "ticket cl_ticketlock", "MCS cl_mcslock" };

/* One trylock of the slot's lock of kind @k (@node: the MCS node). */
static int slot_trylock(struct lslot *s, int k, struct cl_mcs_node *node)
{
	if (k == LK_TTAS)
		return cl_spin_trylock(&s->ttas);
	if (k == LK_TICKET)
		return cl_ticket_trylock(&s->ticket);
	return cl_mcs_trylock(&s->mcs, node);
}

static void slot_lock(struct lslot *s, int k, struct cl_mcs_node *node)
{
	if (k == LK_TTAS)
		cl_spin_lock(&s->ttas);
	else if (k == LK_TICKET)
		cl_ticket_lock(&s->ticket);
	else
		cl_mcs_lock(&s->mcs, node);
}

/* Return: 0, or -1 if the unlock was refused (a lost acquisition). */
static int slot_unlock(struct lslot *s, int k, struct cl_mcs_node *node)
{
	if (k == LK_TTAS) {
		cl_spin_unlock(&s->ttas);
		return 0;
	}
	if (k == LK_TICKET)
		return cl_ticket_unlock(&s->ticket);
	return cl_mcs_unlock(&s->mcs, node);
}

/* The spinlock.h passes: the slot of the current index, locked with the
 * pass's lock (trylock on odd iterations, lock on even ones). */
static struct lslot *ttas_acquire(struct lock_test *t, long i, struct cl_mcs_node *node)
{
	struct lslot *s = &t->slots[(unsigned)cl_rseq_current_index(t->idx) % t->nr];

	if (i & 1) {
		unsigned spins = 0;

		while (!slot_trylock(s, t->ttas, node))
			if (++spins % 64 == 0)
				sched_yield(); /* the holder may be preempted */
	} else {
		slot_lock(s, t->ttas, node);
	}
	return s;
}

static void *worker(struct stress_run *run, int id)
{
	struct lock_test *t = run->priv;
	struct cl_mcs_node node;
	long i;

	for (i = 0;; i++) {
		struct lslot *s;
		unsigned spins = 0;
		int r, prev;

		if (t->ttas) {
			s = ttas_acquire(t, i, &node);
		} else {
			for (;;) {
				int c = cl_rseq_current_index(t->idx);

				s = &t->slots[(unsigned)c % t->nr];
				r = cl_rseq_cmpstore(t->idx, &s->lock, 0, 1, c);
				if (r == CL_RSEQ_OK)
					break;
				if (r == CL_RSEQ_CMPFAIL && ++spins % 16 == 0)
					sched_yield(); /* the holder may be preempted */
				else if (r != CL_RSEQ_CMPFAIL && r != CL_RSEQ_ABORT) {
					stress_fail(run, "cmpstore returned %d", r);
					return (void *)1;
				}
			}
		}
		prev = __atomic_exchange_n(&s->owner, id + 1, __ATOMIC_RELAXED);
		if (prev != 0) /* record and go on: returning would leave the lock held */
			stress_fail(run, "worker %d entered a lock held by worker %d", id, prev - 1);
		s->count++;
		if (i % (t->ttas ? 1024 : 128) == 0)
			sched_yield(); /* hold the lock across a reschedule */
		prev = __atomic_exchange_n(&s->owner, 0, __ATOMIC_RELAXED);
		if (prev != id + 1)
			stress_fail(run, "worker %d found owner %d on unlock", id, prev - 1);
		if (t->ttas) {
			if (slot_unlock(s, t->ttas, &node) != 0)
				stress_fail(run, "worker %d: unlock of a held lock refused", id);
		} else
			__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
		if (i == 0)
			stress_allow_signals();
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int run_pass(const struct stress_cfg *cfg, enum cl_rseq_index idx, int ttas)
{
	struct lock_test t;
	struct stress_run run;
	long total = 0;
	int rc;

	t.nr = cl_nr_possible_cpus();
	t.idx = idx;
	t.ttas = ttas;
	t.slots = aligned_alloc(CL_FALSE_SHARING_SIZE, t.nr * sizeof(*t.slots));
	if (!t.slots) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	memset(t.slots, 0, t.nr * sizeof(*t.slots));
	rc = stress_run(&run, cfg, worker, &t, NULL);
	for (unsigned i = 0; i < t.nr; i++) {
		total += t.slots[i].count;
		if (t.slots[i].lock != 0 || cl_spin_is_locked(&t.slots[i].ttas) ||
		    cl_ticket_is_locked(&t.slots[i].ticket) || cl_mcs_is_locked(&t.slots[i].mcs))
			rc = 1;
	}
	if (total != (long)run.ops)
		rc = 1;
	printf("spinlock_stress [%s, " STRESS_INDEX_FMT "]: %d workers, %lu acquisitions, %lu aborts, "
	       "%lu signals, %lu migrations: counted %ld: %s\n",
	       lock_name[ttas], STRESS_INDEX_ARGS(idx), cfg->nr_workers, run.ops,
	       run.aborts, run.signals, run.migrations, total, rc == 0 ? "PASS" : "FAIL");
	free(t.slots);
	return rc;
}

/* The rseq lock in this index mode; the spinlock.h locks once (they do not
 * depend on the index mode: the index only spreads workers over the slots). */
static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	int rc = run_pass(cfg, idx, LK_RSEQ);

	if (idx == CL_RSEQ_INDEX_CPU_ID)
		for (int k = LK_TTAS; k <= LK_MCS; k++)
			rc |= run_pass(cfg, idx, k);
	return rc;
}

STRESS_MAIN(run_index)
