/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_wake.c - wakeups across workers: a channel
 * message handed to a blocked receiver (or taken from a blocked sender) on
 * another worker arrives intact at every size, the small ones carried in
 * the waiter record, without a byte written past the message; a burst of
 * wakeups onto one worker (its remote wake list then holds more than one
 * task) loses none.
 */
#include "cl_test.h"

#include <stdatomic.h>

#include <cachelocal/sched/runtime.h>

#define MSG_MAX 100
#define CANARY 0xa5

static struct cl_runtime *new_rt2(void)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *),
				   void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = 1;
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t, "cl_spawn: %s", strerror(errno));
	return t;
}

struct sized {
	struct cl_chan *c;
	size_t esize;
	int n;
	int bad;     /* messages with a wrong byte */
	int overrun; /* receives that wrote past the message */
};

static void *sized_sender(void *p)
{
	struct sized *a = (struct sized *)p;
	unsigned char m[MSG_MAX];

	for (int i = 0; i < a->n; i++) {
		for (size_t j = 0; j < a->esize; j++)
			m[j] = (unsigned char)(i * 7 + (int)j);
		if (cl_chan_send(a->c, m))
			return (void *)1;
	}
	return NULL;
}

static void *sized_receiver(void *p)
{
	struct sized *a = (struct sized *)p;
	unsigned char m[MSG_MAX + 8];

	for (int i = 0; i < a->n; i++) {
		memset(m, CANARY, sizeof(m));
		if (cl_chan_recv(a->c, m))
			return (void *)1;
		for (size_t j = 0; j < a->esize; j++)
			if (m[j] != (unsigned char)(i * 7 + (int)j)) {
				a->bad++;
				break;
			}
		for (size_t j = a->esize; j < sizeof(m); j++)
			if (m[j] != CANARY) {
				a->overrun++;
				break;
			}
		if (i % 3 == 0) /* let the sender fill the channel and block too */
			cl_yield();
	}
	return NULL;
}

Test(sched_runtime_wake, channel_messages_of_every_size_cross_workers_intact)
{
	static const size_t sizes[] = { 1, 3, 4, 7, 8, 9, 16, MSG_MAX };
	struct cl_runtime *rt = new_rt2();

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct sized a = { cl_chan_create(sizes[k], 1), sizes[k], 3000, 0, 0 };
		void *rs = (void *)1, *rr = (void *)1;
		struct cl_rt_task *r, *s;

		cr_assert_not_null(a.c);
		r = spawn_on(rt, 1, sized_receiver, &a);
		s = spawn_on(rt, 0, sized_sender, &a);
		cr_assert_eq(cl_join(s, &rs), 0);
		cr_assert_eq(cl_join(r, &rr), 0);
		cr_assert_null(rs);
		cr_assert_null(rr);
		cr_assert_eq(a.bad, 0, "%d messages of %zu bytes arrived changed", a.bad, sizes[k]);
		cr_assert_eq(a.overrun, 0, "%d receives of %zu bytes wrote past the message", a.overrun,
			     sizes[k]);
		cr_assert_eq(cl_chan_destroy(a.c), 0);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

#define BURST 32
#define ROUNDS 60

static struct burst {
	struct cl_waitq wq;  /* the waiters wait here for their round */
	struct cl_waitq kwq; /* the waker waits here for the waiters */
	int round;           /* under wq's lock */
	atomic_int arrived;  /* waiters that reached their round */
	atomic_int woken;    /* wakeups seen, all rounds */
} burst;

static void *burst_waiter(void *p)
{
	(void)p;
	for (int r = 1; r <= ROUNDS; r++) {
		cl_waitq_lock(&burst.wq);
		atomic_fetch_add(&burst.arrived, 1);
		cl_waitq_wake_one(&burst.kwq);
		while (burst.round < r) {
			cl_waitq_wait(&burst.wq);
			cl_waitq_lock(&burst.wq);
		}
		cl_waitq_unlock(&burst.wq);
		atomic_fetch_add(&burst.woken, 1);
	}
	return NULL;
}

static void *burst_waker(void *p)
{
	(void)p;
	for (int r = 1; r <= ROUNDS; r++) {
		/* every waiter is at round r (waiting, or about to) */
		cl_waitq_lock(&burst.kwq);
		while (atomic_load(&burst.arrived) < BURST * r) {
			cl_waitq_wait(&burst.kwq);
			cl_waitq_lock(&burst.kwq);
		}
		cl_waitq_unlock(&burst.kwq);
		cl_waitq_lock(&burst.wq);
		burst.round = r;
		cl_waitq_unlock(&burst.wq);
		cl_waitq_wake_all(&burst.wq); /* up to BURST pushes onto worker 1's list */
	}
	return NULL;
}

Test(sched_runtime_wake, burst_of_wakeups_onto_one_worker_loses_none, .timeout = 120)
{
	struct cl_runtime *rt = new_rt2();
	struct cl_rt_task *w[BURST], *k;

	cl_waitq_init(&burst.wq);
	cl_waitq_init(&burst.kwq);
	for (int i = 0; i < BURST; i++)
		w[i] = spawn_on(rt, 1, burst_waiter, NULL);
	k = spawn_on(rt, 0, burst_waker, NULL);
	cr_assert_eq(cl_join(k, NULL), 0);
	for (int i = 0; i < BURST; i++)
		cr_assert_eq(cl_join(w[i], NULL), 0);
	cr_assert_eq(atomic_load(&burst.woken), BURST * ROUNDS);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
