/* SPDX-License-Identifier: MIT */
/* Tests for cachelocal/spinlock.h: the TTAS, ticket and MCS locks. */
#include <pthread.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A sleeping ticket waiter looks again after a minute instead of 1 ms: an
 * unlock that failed to wake it would show as this file's sleeping-waiter
 * tests timing out, not pass late. */
#define CL__TICKET_SLEEP_NS 60000000000ll
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

/* ---- the fair locks: one mutual-exclusion check for all three kinds ---- */

enum kind { K_TTAS, K_TICKET, K_MCS };

#define CX_THREADS 4
#define CX_ITERS 20000

struct cx {
	enum kind kind;
	struct cl_spinlock ttas;
	struct cl_ticketlock ticket;
	struct cl_mcslock mcs;
	long count;        /* plain: only under the lock */
	atomic_int inside; /* threads between lock and unlock (must stay <= 1) */
	atomic_int overlaps;
	atomic_int go;
};

static void cx_lock(struct cx *m, struct cl_mcs_node *n, int i)
{
	switch (m->kind) {
	case K_TTAS:
		cl_spin_lock(&m->ttas);
		break;
	case K_TICKET:
		if (i % 3 == 0)
			while (!cl_ticket_trylock(&m->ticket))
				;
		else
			cl_ticket_lock(&m->ticket);
		break;
	case K_MCS:
		if (i % 3 == 0)
			while (!cl_mcs_trylock(&m->mcs, n))
				;
		else
			cl_mcs_lock(&m->mcs, n);
		break;
	}
}

static int cx_unlock(struct cx *m, struct cl_mcs_node *n)
{
	switch (m->kind) {
	case K_TTAS:
		cl_spin_unlock(&m->ttas);
		return 0;
	case K_TICKET:
		return cl_ticket_unlock(&m->ticket);
	default:
		return cl_mcs_unlock(&m->mcs, n);
	}
}

static void *cx_worker(void *arg)
{
	struct cx *m = (struct cx *)arg;
	struct cl_mcs_node node;
	long bad = 0;

	while (!atomic_load(&m->go))
		;
	for (int i = 0; i < CX_ITERS; i++) {
		cx_lock(m, &node, i);
		if (atomic_fetch_add_explicit(&m->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add(&m->overlaps, 1);
		m->count++;
		atomic_fetch_sub_explicit(&m->inside, 1, memory_order_relaxed);
		bad += cx_unlock(m, &node) != 0;
	}
	return (void *)bad;
}

static void cx_run(enum kind kind)
{
	static struct cx m;
	pthread_t t[CX_THREADS];
	long bad = 0;

	memset(&m, 0, sizeof(m));
	m.kind = kind;
	cl_spin_init(&m.ttas);
	cl_ticket_init(&m.ticket);
	cl_mcs_init(&m.mcs);
	for (int i = 0; i < CX_THREADS; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, cx_worker, &m), 0);
	atomic_store(&m.go, 1);
	for (int i = 0; i < CX_THREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		bad += (long)r;
	}
	cr_assert_eq(atomic_load(&m.overlaps), 0, "%d overlapping critical sections",
		     atomic_load(&m.overlaps));
	cr_assert_eq(m.count, (long)CX_THREADS * CX_ITERS, "lost updates: %ld", m.count);
	cr_assert_eq(bad, 0, "%ld unlocks of a held lock failed", bad);
	cr_assert_eq(cl_ticket_is_locked(&m.ticket) + cl_mcs_is_locked(&m.mcs), 0,
		     "a lock is still held after every thread unlocked");
}

Test(ticketlock, lock_and_trylock_exclude_each_other_across_threads)
{
	cx_run(K_TICKET);
}

Test(mcslock, lock_and_trylock_exclude_each_other_across_threads)
{
	cx_run(K_MCS);
}

Test(ticketlock, trylock_fails_while_held_without_taking_a_ticket)
{
	struct cl_ticketlock l = CL_TICKETLOCK_INIT;

	cr_assert_eq(cl_ticket_is_locked(&l), 0);
	cr_assert_eq(cl_ticket_trylock(&l), 1);
	cr_assert_eq(cl_ticket_is_locked(&l), 1);
	cr_assert_eq(cl_ticket_trylock(&l), 0, "a held lock was taken twice");
	cr_assert_eq(cl_ticket_waiters(&l), 1, "a failed trylock left a ticket behind");
	cr_assert_eq(cl_ticket_unlock(&l), 0);
	cr_assert_eq(cl_ticket_is_locked(&l), 0);
}

Test(ticketlock, unlock_of_a_free_lock_is_einval_and_changes_nothing)
{
	struct cl_ticketlock l = CL_TICKETLOCK_INIT;

	errno = 0;
	cr_assert_eq(cl_ticket_unlock(&l), -1);
	cr_assert_eq(errno, EINVAL);
	cl_ticket_lock(&l);
	cr_assert_eq(cl_ticket_unlock(&l), 0);
	errno = 0;
	cr_assert_eq(cl_ticket_unlock(&l), -1, "a second unlock was accepted");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_ticket_trylock(&l), 1, "the lock is unusable after a refused unlock");
}

Test(ticketlock, tickets_wrap_around_32_bits)
{
	struct cl_ticketlock l = { UINT32_MAX, UINT32_MAX, 0 };

	cl_ticket_lock(&l);
	cr_assert_eq(cl_ticket_is_locked(&l), 1);
	cr_assert_eq(cl_ticket_unlock(&l), 0);
	cr_assert_eq(l.owner, 0u);
	cr_assert_eq(cl_ticket_trylock(&l), 1);
}

Test(mcslock, trylock_fails_while_held_and_unlock_of_a_free_lock_is_einval)
{
	struct cl_mcslock l = CL_MCSLOCK_INIT;
	struct cl_mcs_node a, b;

	cr_assert_eq(cl_mcs_trylock(&l, &a), 1);
	cr_assert_eq(cl_mcs_is_locked(&l), 1);
	cr_assert_eq(cl_mcs_trylock(&l, &b), 0, "a held lock was taken twice");
	cr_assert_eq(cl_mcs_unlock(&l, &a), 0);
	cr_assert_eq(cl_mcs_is_locked(&l), 0);
	errno = 0;
	cr_assert_eq(cl_mcs_unlock(&l, &a), -1, "a second unlock was accepted");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_mcs_trylock(&l, &b), 1, "the lock is unusable after a refused unlock");
}

/* ---- FIFO: waiters queued one after the other acquire in that order ---- */

#define FIFO_WAITERS 4

struct fifo {
	enum kind kind;
	struct cl_ticketlock ticket;
	struct cl_mcslock mcs;
	struct cl_mcs_node nodes[FIFO_WAITERS + 1]; /* [FIFO_WAITERS]: the main thread's */
	int order[FIFO_WAITERS]; /* plain: written under the lock */
	int n;
};

struct fifo_arg {
	struct fifo *f;
	int id;
};

static void *fifo_waiter(void *arg)
{
	struct fifo_arg *a = (struct fifo_arg *)arg;
	struct fifo *f = a->f;

	if (f->kind == K_TICKET)
		cl_ticket_lock(&f->ticket);
	else
		cl_mcs_lock(&f->mcs, &f->nodes[a->id]);
	f->order[f->n++] = a->id;
	if (f->kind == K_TICKET)
		cl_ticket_unlock(&f->ticket);
	else
		cl_mcs_unlock(&f->mcs, &f->nodes[a->id]);
	return NULL;
}

/* Has waiter @id queued itself? (ticket: its ticket is out; MCS: its node
 * is the tail.) */
static int fifo_queued(struct fifo *f, int id)
{
	if (f->kind == K_TICKET)
		return cl_ticket_waiters(&f->ticket) == (unsigned)id + 2;
	return __atomic_load_n(&f->mcs.tail, __ATOMIC_ACQUIRE) == &f->nodes[id];
}

static void fifo_run(enum kind kind)
{
	static struct fifo f;
	struct fifo_arg args[FIFO_WAITERS];
	pthread_t t[FIFO_WAITERS];

	memset(&f, 0, sizeof(f));
	f.kind = kind;
	if (kind == K_TICKET)
		cl_ticket_lock(&f.ticket);
	else
		cl_mcs_lock(&f.mcs, &f.nodes[FIFO_WAITERS]);
	/* Start the waiters one at a time, each once the previous is queued. */
	for (int i = 0; i < FIFO_WAITERS; i++) {
		args[i].f = &f;
		args[i].id = i;
		cr_assert_eq(pthread_create(&t[i], NULL, fifo_waiter, &args[i]), 0);
		while (!fifo_queued(&f, i))
			sched_yield();
	}
	if (kind == K_TICKET)
		cr_assert_eq(cl_ticket_unlock(&f.ticket), 0);
	else
		cr_assert_eq(cl_mcs_unlock(&f.mcs, &f.nodes[FIFO_WAITERS]), 0);
	for (int i = 0; i < FIFO_WAITERS; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(f.n, FIFO_WAITERS);
	for (int i = 0; i < FIFO_WAITERS; i++)
		cr_assert_eq(f.order[i], i, "acquisition %d went to waiter %d (order %d %d %d %d)", i,
			     f.order[i], f.order[0], f.order[1], f.order[2], f.order[3]);
}

Test(ticketlock, waiters_acquire_in_ticket_order)
{
	fifo_run(K_TICKET);
}

/* ---- ticket waiters that sleep in the kernel ---- */

struct sleeper {
	struct cl_ticketlock *l;
	int id;
	int *order, *n;
	_Atomic long tid;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = (struct sleeper *)arg;

	atomic_store(&s->tid, (long)syscall(SYS_gettid));
	cl_ticket_lock(s->l);
	s->order[(*s->n)++] = s->id;
	cr_assert_eq(cl_ticket_unlock(s->l), 0);
	return NULL;
}

/* the state letter of thread @tid ('S': asleep in the kernel), '?' if unknown */
static char thread_state(long tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	return p && p[1] == ' ' ? p[2] : '?';
}

/* @nr waiters queue one after the other behind the main thread's hold and
 * wait until each is counted in @sleepers and asleep in the kernel; one
 * unlock must then reach every one of them, in ticket order. */
static void sleepers_run(int nr)
{
	static struct cl_ticketlock l;
	static int order[FIFO_WAITERS], n;
	struct sleeper s[FIFO_WAITERS];
	pthread_t t[FIFO_WAITERS];

	cr_assert(nr <= FIFO_WAITERS);
	cl_ticket_init(&l);
	n = 0;
	cl_ticket_lock(&l);
	for (int i = 0; i < nr; i++) {
		s[i].l = &l;
		s[i].id = i;
		s[i].order = order;
		s[i].n = &n;
		atomic_store(&s[i].tid, 0);
		cr_assert_eq(pthread_create(&t[i], NULL, sleeper_main, &s[i]), 0);
		while (cl_ticket_waiters(&l) != (unsigned)i + 2)
			sched_yield();
	}
	/* every waiter counted as a sleeper and in the kernel (a waiter still
	 * spinning or yielding shows 'R') */
	for (int i = 0; i < nr; i++) {
		while (__atomic_load_n(&l.sleepers, __ATOMIC_ACQUIRE) != (uint32_t)nr ||
		       thread_state(atomic_load(&s[i].tid)) != 'S')
			sched_yield();
	}
	cr_assert_eq(cl_ticket_unlock(&l), 0);
	for (int i = 0; i < nr; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(n, nr);
	for (int i = 0; i < nr; i++)
		cr_assert_eq(order[i], i, "acquisition %d went to sleeping waiter %d", i, order[i]);
	cr_assert_eq(__atomic_load_n(&l.sleepers, __ATOMIC_RELAXED), 0, "a sleeper still counted");
	cr_assert_eq(cl_ticket_is_locked(&l), 0);
}

Test(ticketlock, a_long_wait_sleeps_in_the_kernel_and_the_unlock_wakes_it, .timeout = 10)
{
	sleepers_run(1);
}

Test(ticketlock, sleeping_waiters_acquire_in_ticket_order, .timeout = 10)
{
	sleepers_run(FIFO_WAITERS);
}

Test(mcslock, waiters_acquire_in_queue_order)
{
	fifo_run(K_MCS);
}
