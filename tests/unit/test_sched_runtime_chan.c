/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_chan.c - the channel's fast and slow paths
 * together: a send that finds room and no receiver waiting (lock, copy,
 * unlock) never overtakes a sender blocked on a full channel, a receive
 * from a full channel refills it from the first blocked sender, and the
 * capacity is exact; many senders and receivers through small channels
 * (a hackbench-shaped storm, messages too large for the waiter record) on
 * one and on two workers keep every sender's order and lose nothing; a
 * hint left on a channel by a destroyed runtime is not followed (that a
 * task blocked on a channel runs its counterpart next: test_sched_runtime.c,
 * on its virtual clock).
 */
#include "cl_test.h"

#include <stdatomic.h>

#include <cachelocal/sched/runtime.h>

static struct cl_runtime *new_rt(unsigned int workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

/* ---- no overtaking, exact capacity ---- */

#define CAP 4

struct overtake {
	struct cl_chan *c;
	int filled;  /* the blocked sender sent CAP messages */
	int sent;    /* its last send returned 0 */
	int got[2 * CAP + 2];
	int nr_got;
	int full_eagain, refill_eagain, late_send;
};

static void *blocked_sender(void *p)
{
	struct overtake *a = (struct overtake *)p;

	for (int i = 0; i < CAP; i++)
		if (cl_chan_send(a->c, &i))
			return (void *)1;
	__atomic_store_n(&a->filled, 1, __ATOMIC_RELEASE);
	if (cl_chan_send(a->c, &(int){ CAP })) /* full: waits */
		return (void *)1;
	__atomic_store_n(&a->sent, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Is a sender waiting on @c? Read under the channel's lock. */
static int sender_waits(struct cl_chan *c)
{
	int w;

	cl_ticket_lock(&c->lock);
	w = !cds_list_empty(&c->sendq);
	cl_ticket_unlock(&c->lock);
	return w;
}

static void *late_sender(void *p)
{
	struct overtake *a = (struct overtake *)p;
	int v = 100, m;

	while (!__atomic_load_n(&a->filled, __ATOMIC_ACQUIRE) || !sender_waits(a->c))
		cl_yield();
	/* full with a sender waiting: no room for a newcomer */
	a->full_eagain = cl_chan_trysend(a->c, &v) == -1 && errno == EAGAIN;
	if (cl_chan_recv(a->c, &m))
		return (void *)1;
	a->got[a->nr_got++] = m;
	/* the receive refilled the ring from the waiting sender: full again */
	a->refill_eagain = cl_chan_trysend(a->c, &v) == -1 && errno == EAGAIN;
	for (int i = 0; i < CAP; i++) {
		if (cl_chan_recv(a->c, &m))
			return (void *)1;
		a->got[a->nr_got++] = m;
	}
	a->late_send = cl_chan_send(a->c, &v) == 0; /* empty now: the fast path */
	if (cl_chan_tryrecv(a->c, &m))
		return (void *)1;
	a->got[a->nr_got++] = m;
	return NULL;
}

Test(sched_runtime_chan, a_send_with_room_never_overtakes_a_blocked_sender)
{
	for (unsigned int workers = 1; workers <= 2; workers++) {
		struct cl_runtime *rt = new_rt(workers);
		struct overtake a;
		struct cl_rt_task *s, *l;
		void *rs = (void *)1, *rl = (void *)1;

		memset(&a, 0, sizeof(a));
		a.c = cl_chan_create(sizeof(int), CAP);
		cr_assert_not_null(a.c);
		s = cl_spawn(rt, NULL, blocked_sender, &a);
		l = cl_spawn(rt, NULL, late_sender, &a);
		cr_assert(s && l, "cl_spawn: %s", strerror(errno));
		cr_assert_eq(cl_join(s, &rs), 0);
		cr_assert_eq(cl_join(l, &rl), 0);
		cr_assert_null(rs, "the blocked sender's sends succeed");
		cr_assert_null(rl, "the late sender's receives succeed");
		cr_assert(a.sent);
		cr_assert(a.full_eagain, "a full channel with a sender waiting takes no more");
		cr_assert(a.refill_eagain, "a receive from it refills it from the waiting sender");
		cr_assert(a.late_send);
		cr_assert_eq(a.nr_got, CAP + 2);
		for (int i = 0; i <= CAP; i++)
			cr_assert_eq(a.got[i], i, "message %d is %d (%u workers)", i, a.got[i], workers);
		cr_assert_eq(a.got[CAP + 1], 100, "the late message comes last");
		cr_assert_eq(cl_chan_destroy(a.c), 0);
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	}
}

Test(sched_runtime_chan, capacity_is_exact_and_order_kept_outside_tasks)
{
	struct cl_chan *c = cl_chan_create(sizeof(int), CAP);
	int v;

	cr_assert_not_null(c);
	for (int i = 0; i < CAP; i++)
		cr_assert_eq(cl_chan_trysend(c, &i), 0, "send %d of %d", i, CAP);
	cr_assert_eq(cl_chan_trysend(c, &v), -1);
	cr_assert_eq(errno, EAGAIN);
	errno = 0;
	cr_assert_eq(cl_chan_send(c, &v), -1, "full, outside a task: no wait");
	cr_assert_eq(errno, EPERM);
	for (int i = 0; i < CAP; i++) {
		cr_assert_eq(cl_chan_tryrecv(c, &v), 0);
		cr_assert_eq(v, i);
	}
	cr_assert_eq(cl_chan_recv(c, &v), -1, "empty, outside a task: no wait");
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_chan_close(c), 0);
	cr_assert_eq(cl_chan_send(c, &v), -1);
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_destroy(c), 0);
}

/* ---- a storm through small channels ---- */

#define PAIRS 6
#define LOOPS 300
#define MSG 100 /* larger than the waiter record: through the sender's buffer */

struct storm {
	struct cl_chan *rx[PAIRS];
	int bad;
};

struct storm_task {
	struct storm *s;
	int idx, sender;
};

static void *storm_fn(void *p)
{
	struct storm_task *t = (struct storm_task *)p;
	struct storm *s = t->s;
	unsigned char m[MSG];
	int got[PAIRS] = { 0 };

	if (t->sender) {
		memset(m, t->idx, sizeof(m));
		for (int i = 0; i < LOOPS; i++)
			for (int r = 0; r < PAIRS; r++) {
				m[1] = (unsigned char)i;
				m[MSG - 1] = (unsigned char)(i ^ r);
				if (cl_chan_send(s->rx[r], m))
					return (void *)1;
			}
		return NULL;
	}
	for (int i = 0; i < LOOPS * PAIRS; i++) {
		if (cl_chan_recv(s->rx[t->idx], m) || m[0] >= PAIRS || m[2] != m[0] ||
		    m[1] != (unsigned char)got[m[0]] ||
		    m[MSG - 1] != (unsigned char)(got[m[0]] ^ t->idx)) {
			__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
			return (void *)1;
		}
		got[m[0]]++;
	}
	for (int i = 0; i < PAIRS; i++)
		if (got[i] != LOOPS)
			return (void *)1;
	return NULL;
}

Test(sched_runtime_chan, storm_keeps_each_senders_order_and_loses_nothing)
{
	for (unsigned int workers = 1; workers <= 2; workers++) {
		struct cl_runtime *rt = new_rt(workers);
		struct storm s;
		struct storm_task st[2 * PAIRS];
		struct cl_rt_task *h[2 * PAIRS];

		memset(&s, 0, sizeof(s));
		for (int i = 0; i < PAIRS; i++) {
			s.rx[i] = cl_chan_create(MSG, 3);
			cr_assert_not_null(s.rx[i]);
		}
		/* receivers and senders interleaved: on two workers, half of
		 * the channels cross them */
		for (int i = 0; i < 2 * PAIRS; i++) {
			st[i] = (struct storm_task){ &s, i / 2, i % 2 };
			h[i] = cl_spawn(rt, NULL, storm_fn, &st[i]);
			cr_assert_not_null(h[i], "cl_spawn: %s", strerror(errno));
		}
		for (int i = 0; i < 2 * PAIRS; i++) {
			void *r = (void *)1;

			cr_assert_eq(cl_join(h[i], &r), 0);
			cr_assert_null(r, "task %d (%s) failed, %u workers", i,
				       st[i].sender ? "sender" : "receiver", workers);
		}
		cr_assert_eq(s.bad, 0);
		for (int i = 0; i < PAIRS; i++)
			cr_assert_eq(cl_chan_destroy(s.rx[i]), 0);
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	}
}

/* ---- a hint left by a destroyed runtime ---- */

static void *recv_once(void *p)
{
	int v;

	return cl_chan_recv((struct cl_chan *)p, &v) || v != 7 ? (void *)1 : NULL;
}

static void *send_two(void *p)
{
	for (int i = 0; i < 2; i++)
		if (cl_chan_send((struct cl_chan *)p, &i)) /* the second waits: full */
			return (void *)1;
	return NULL;
}

/*
 * A channel outlives the runtime of the task that last received from it;
 * a task of a later runtime (likely at the same address) that blocks on
 * it must not follow that hint into the freed descriptors: the runtimes'
 * serials differ (under AddressSanitizer, following it is a
 * use-after-free report).
 */
Test(sched_runtime_chan, a_hint_left_by_a_destroyed_runtime_is_not_followed)
{
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t;
	uint64_t first;
	void *r = (void *)1;
	int v = 7, got = 0, want = 0;

	cr_assert_not_null(c);
	first = rt->serial;
	cr_assert_eq(cl_chan_trysend(c, &v), 0);
	t = cl_spawn(rt, NULL, recv_once, c);
	cr_assert_not_null(t);
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_null(r);
	cr_assert_eq(cl_runtime_destroy(rt), 0);

	rt = new_rt(1);
	cr_assert_neq(rt->serial, first, "two runtimes with one serial");
	t = cl_spawn(rt, NULL, send_two, c);
	cr_assert_not_null(t);
	while (!sender_waits(c)) /* its second send blocked, on the old hint */
		;
	/* receive both from outside: the first refills from the blocked sender */
	while (got < 2) {
		if (cl_chan_tryrecv(c, &v) == 0) {
			cr_assert_eq(v, want, "message %d is %d", want, v);
			want++;
			got++;
		} else {
			cr_assert_eq(errno, EAGAIN, "tryrecv: %s", strerror(errno));
		}
	}
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_null(r);
	cr_assert_eq(cl_chan_destroy(c), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
