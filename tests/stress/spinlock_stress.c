/* SPDX-License-Identifier: MIT */
/*
 * spinlock_stress - mutual exclusion under preemption, migration and signals
 * of two locks: a per-CPU (and per-mm_cid) spinlock taken with
 * cl_rseq_cmpstore(kind, lock, 0, 1, index), in both index modes; and the TTAS lock of
 * cachelocal/spinlock.h (struct cl_spinlock, one per index slot, taken with
 * cl_spin_lock() or cl_spin_trylock() and released, possibly on another CPU,
 * with cl_spin_unlock()).
 *
 * A worker locks the slot of its current index, checks that nobody else is
 * inside (an owner word), increments the slot's plain counter, sometimes
 * yields while holding the lock (so it may migrate and unlock from another
 * CPU), then releases with a store-release of 0. The plain counters must
 * add up to the number of lock acquisitions.
 *
 * A second pass (once, in the cpu_id run) does the same with the TTAS lock
 * of cachelocal/spinlock.h: struct cl_spinlock, one per index slot, taken
 * with cl_spin_lock() or cl_spin_trylock() and released, possibly on
 * another CPU, with cl_spin_unlock().
 */
#include "stress.h"

#include <cachelocal/percpu_ops.h>
#include <cachelocal/spinlock.h>
#include <cachelocal/topology.h>

struct lslot {
	intptr_t lock CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	struct cl_spinlock ttas; /* the TTAS pass: the lock instead of `lock` */
	int owner; /* worker id + 1 inside the lock (atomic, only to detect overlap) */
	long count; /* plain: protected by the lock */
};

struct lock_test {
	struct lslot *slots;
	unsigned nr;
	enum cl_rseq_index idx;
	int ttas; /* 1: lock with cl_spin_lock/trylock on slot->ttas */
};

/* The TTAS pass: the slot of the current index, locked with the
 * spinlock.h lock (trylock on odd iterations, lock on even ones). */
static struct lslot *ttas_acquire(struct lock_test *t, long i)
{
	struct lslot *s = &t->slots[(unsigned)cl_rseq_current_index(t->idx) % t->nr];

	if (i & 1) {
		unsigned spins = 0;

		while (!cl_spin_trylock(&s->ttas))
			if (++spins % 64 == 0)
				sched_yield(); /* the holder may be preempted */
	} else {
		cl_spin_lock(&s->ttas);
	}
	return s;
}

static void *worker(struct stress_run *run, int id)
{
	struct lock_test *t = run->priv;
	long i;

	for (i = 0;; i++) {
		struct lslot *s;
		unsigned spins = 0;
		int r, prev;

		if (t->ttas) {
			s = ttas_acquire(t, i);
			goto locked;
		}
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
locked:
		prev = __atomic_exchange_n(&s->owner, id + 1, __ATOMIC_RELAXED);
		if (prev != 0) /* record and go on: returning would leave the lock held */
			stress_fail(run, "worker %d entered a lock held by worker %d", id, prev - 1);
		s->count++;
		if (i % (t->ttas ? 1024 : 128) == 0)
			sched_yield(); /* hold the lock across a reschedule */
		prev = __atomic_exchange_n(&s->owner, 0, __ATOMIC_RELAXED);
		if (prev != id + 1)
			stress_fail(run, "worker %d found owner %d on unlock", id, prev - 1);
		if (t->ttas)
			cl_spin_unlock(&s->ttas);
		else
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
		if (t.slots[i].lock != 0 || cl_spin_is_locked(&t.slots[i].ttas))
			rc = 1;
	}
	if (total != (long)run.ops)
		rc = 1;
	printf("spinlock_stress [%s, " STRESS_INDEX_FMT "]: %d workers, %lu acquisitions, %lu aborts, "
	       "%lu signals, %lu migrations: counted %ld: %s\n",
	       ttas ? "TTAS cl_spinlock" : "rseq cmpstore lock", STRESS_INDEX_ARGS(idx), cfg->nr_workers, run.ops,
	       run.aborts, run.signals, run.migrations, total, rc == 0 ? "PASS" : "FAIL");
	free(t.slots);
	return rc;
}

/* The rseq lock in this index mode; the TTAS lock once (it does not depend
 * on the index mode: the index only spreads workers over the slots). */
static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	int rc = run_pass(cfg, idx, 0);

	if (idx == CL_RSEQ_INDEX_CPU_ID)
		rc |= run_pass(cfg, idx, 1);
	return rc;
}

STRESS_MAIN(run_index)
