/* SPDX-License-Identifier: MIT */
/* Tests for cachelocal/spinlock.h (the TTAS lock). */
#include <pthread.h>
#include <stdatomic.h>

#include <cachelocal/spinlock.h>

#include "cl_test.h"

Test(spinlock, static_and_dynamic_init_are_unlocked)
{
	struct cl_spinlock a = CL_SPINLOCK_INIT, b;

	b.locked = 1; /* garbage, as in freshly malloc'ed memory */
	cl_spin_init(&b);
	cr_assert_eq(cl_spin_is_locked(&a), 0);
	cr_assert_eq(cl_spin_is_locked(&b), 0);
	cr_assert_eq(cl_spin_trylock(&b), 1);
}

Test(spinlock, trylock_fails_while_held_and_succeeds_after_unlock)
{
	struct cl_spinlock l = CL_SPINLOCK_INIT;

	cr_assert_eq(cl_spin_trylock(&l), 1);
	cr_assert_eq(cl_spin_is_locked(&l), 1);
	cr_assert_eq(cl_spin_trylock(&l), 0, "a held lock was taken twice");
	cr_assert_eq(cl_spin_is_locked(&l), 1, "a failed trylock released the lock");
	cl_spin_unlock(&l);
	cr_assert_eq(cl_spin_is_locked(&l), 0);
	cl_spin_lock(&l);
	cr_assert_eq(cl_spin_trylock(&l), 0);
	cl_spin_unlock(&l);
	cr_assert_eq(cl_spin_trylock(&l), 1);
}

/* ---- mutual exclusion ---- */

#define MX_THREADS 3
#define MX_ITERS 20000

struct mx {
	struct cl_spinlock lock;
	long count;       /* plain: only under the lock */
	atomic_int inside; /* threads between lock and unlock (must stay <= 1) */
	atomic_int overlaps;
	atomic_int go;
};

static void *mx_worker(void *arg)
{
	struct mx *m = (struct mx *)arg;

	while (!atomic_load(&m->go))
		;
	for (int i = 0; i < MX_ITERS; i++) {
		if (i % 2)
			cl_spin_lock(&m->lock);
		else
			while (!cl_spin_trylock(&m->lock))
				;
		if (atomic_fetch_add_explicit(&m->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add(&m->overlaps, 1);
		m->count++;
		atomic_fetch_sub_explicit(&m->inside, 1, memory_order_relaxed);
		cl_spin_unlock(&m->lock);
	}
	return NULL;
}

Test(spinlock, lock_and_trylock_exclude_each_other_across_threads)
{
	static struct mx m = { CL_SPINLOCK_INIT, 0, 0, 0, 0 };
	pthread_t t[MX_THREADS];

	for (int i = 0; i < MX_THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, mx_worker, &m), 0);
	atomic_store(&m.go, 1);
	for (int i = 0; i < MX_THREADS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(atomic_load(&m.overlaps), 0, "%d overlapping critical sections",
		     atomic_load(&m.overlaps));
	cr_assert_eq(m.count, (long)MX_THREADS * MX_ITERS, "lost updates: %ld", m.count);
	cr_assert_eq(cl_spin_is_locked(&m.lock), 0);
}

/* ---- hand-over: unlock publishes, any thread may unlock ---- */

struct handover {
	struct cl_spinlock lock;
	int data;          /* plain: written under the lock */
	atomic_int ready;  /* the waiter is about to call cl_spin_lock() */
	int seen;
};

static void *handover_waiter(void *arg)
{
	struct handover *h = (struct handover *)arg;

	atomic_store(&h->ready, 1);
	cl_spin_lock(&h->lock);
	h->seen = h->data;
	return NULL; /* leaves the lock held: the main thread unlocks it */
}

Test(spinlock, waiter_sees_writes_made_before_unlock_and_another_thread_may_unlock)
{
	static struct handover h = { CL_SPINLOCK_INIT, 0, 0, 0 };
	pthread_t t;

	cl_spin_lock(&h.lock);
	cr_assert_eq(pthread_create(&t, NULL, handover_waiter, &h), 0);
	while (!atomic_load(&h.ready))
		sched_yield();
	h.data = 42;
	cl_spin_unlock(&h.lock);
	pthread_join(t, NULL);
	cr_assert_eq(h.seen, 42, "the waiter read %d", h.seen);
	cr_assert_eq(cl_spin_is_locked(&h.lock), 1, "the waiter's lock should still be held");
	cl_spin_unlock(&h.lock); /* not the thread that locked it */
	cr_assert_eq(cl_spin_trylock(&h.lock), 1);
}
