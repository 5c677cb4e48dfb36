/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_select.c - cl_select(): a case that can
 * complete does so at once (from a task and from a thread); a select
 * waits until one of several channels can complete a case, and completes
 * exactly that one; among cases that can complete, each is picked about
 * as often (a fixed or a random-start poll order fails the bounds); a
 * channel in several cases is locked once (twice: a hang) and keeps no
 * record of the cases that did not complete;
 * CL_SELECT_NOWAIT (Go's default) fails with EAGAIN, a timeout with
 * ETIMEDOUT, both leaving the channels as they were; a closed channel
 * completes its cases with EPIPE; bad input fails with EINVAL.
 *
 * The races: a send racing the select's timeout, forced at the timer's
 * CL_INJECT() points (timer.h) on the worker's thread, outside any task:
 *   70  the timer is off the wheel, the select's gate not yet taken: a
 *       send now claims the select and the select returns its message
 *       (a second send to the other channel then loses the claim and
 *       leaves its message in its channel)
 *   71  the timer decided (the gate released): a send now wins the
 *       select's CAS but finds it timed out, and leaves the message in
 *       the channel
 * and, without hooks, two selecting receivers beside two senders on the
 * other worker, and a selecting sender beside two receivers, with short
 * timeouts and closes while they wait. Every message is received exactly
 * once. CL_TEST_SELECT_ROUNDS sets the rounds (100,000; a tenth under
 * valgrind and TSan).
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <pthread.h>
#include <time.h>

#include <cachelocal/sched/runtime.h>

/* ---- helpers ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static struct cl_runtime *new_rt(unsigned int nr_workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = nr_workers;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *), void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = 1;
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t);
	return t;
}

static struct cl_runtime *cur_rt;    /* run_task()'s, for its task's helpers */
static atomic_int phase;             /* how far a test's task got, for its helper */

/* Run @fn in a task on worker 0 of a runtime of @workers; its result is
 * an error message or NULL. */
static void run_task(unsigned int workers, void *(*fn)(void *), void *arg)
{
	void *ret = (void *)"not joined";

	cur_rt = new_rt(workers);
	atomic_store(&phase, 0);
	cr_assert_eq(cl_join(spawn_on(cur_rt, 0, fn, arg), &ret), 0);
	cr_assert_null(ret, "%s", (const char *)ret);
	cr_assert_eq(cl_runtime_destroy(cur_rt), 0);
}

static long rounds(long dflt)
{
	const char *e = getenv("CL_TEST_SELECT_ROUNDS");

#ifdef CL__RT_VALGRIND
	if (RUNNING_ON_VALGRIND)
		dflt /= 10; /* one thread at a time, ~50x slower */
#endif
#if defined(__SANITIZE_THREAD__)
	dflt /= 10;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	dflt /= 10;
#endif
#endif
	return e ? atol(e) : dflt;
}

static void set_case(struct cl_select_case *k, struct cl_chan *c, int op, void *msg)
{
	k->chan = c;
	k->op = op;
	k->msg = msg;
	k->err = -1;
}

/* ---- the hook ---- */

static atomic_int armed;             /* the point whose next pass acts (70, 71), 0: none */
static atomic_long acted;
static void (*action)(void);

static void inject(int n)
{
	int a = atomic_load(&armed);

	if (a != n || !atomic_compare_exchange_strong(&armed, &a, 0))
		return;
	action();
	atomic_fetch_add(&acted, 1);
}

/* ---- at once, without waiting ---- */

static struct cl_chan *ca, *cb, *cc;

/* The checks without a wait, from a task or a plain thread. */
static const char *ready_checks(void)
{
	struct cl_select_case k[3];
	long v = 7, out = -1, in = 11;
	int r;

	/* a message on B only: B's receive, at once, whatever the timeout */
	if (cl_chan_send(cb, &v) != 0)
		return "send";
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	r = cl_select(k, 2, CL_SELECT_FOREVER);
	if (r != 1 || out != 7 || k[1].err != 0)
		return "a receive that could complete did not";
	/* nothing to receive: NOWAIT fails with EAGAIN, @msg untouched */
	out = -1;
	errno = 0;
	if (cl_select(k, 2, CL_SELECT_NOWAIT) != -1 || errno != EAGAIN || out != -1)
		return "NOWAIT with nothing ready: not -1/EAGAIN, or @msg written";
	/* a send with room beside receives that would wait */
	set_case(&k[2], cc, CL_SELECT_SEND, &in);
	if (cl_select(k, 3, CL_SELECT_NOWAIT) != 2 || k[2].err != 0)
		return "a send with room did not complete";
	if (cl_chan_tryrecv(cc, &out) != 0 || out != 11)
		return "the sent message is not in the channel";
	/* exactly one case completes: A and B both have a message */
	v = 1;
	if (cl_chan_send(ca, &v) != 0 || (v = 2, cl_chan_send(cb, &v)) != 0)
		return "send";
	r = cl_select(k, 2, 1000000);
	if (r < 0 || out != r + 1)
		return "one of two ready receives: not completed with its message";
	if (cl_chan_tryrecv(r ? ca : cb, &out) != 0 || out != (r ? 1 : 2))
		return "the other message was taken too";
	return NULL;
}

static void *ready_checks_task(void *p)
{
	(void)p;
	return (void *)ready_checks();
}

static void make_chans(size_t esize, size_t cap)
{
	ca = cl_chan_create(esize, cap);
	cb = cl_chan_create(esize, cap);
	cc = cl_chan_create(esize, cap);
	cr_assert(ca && cb && cc);
}

/* Destroy the three channels: no record left on them (else EBUSY), and
 * no message left over. */
static void destroy_chans(void)
{
	char buf[64];

	cr_assert_eq(cl_chan_tryrecv(ca, buf), -1, "a message left over in A");
	cr_assert_eq(cl_chan_tryrecv(cb, buf), -1, "a message left over in B");
	cr_assert_eq(cl_chan_tryrecv(cc, buf), -1, "a message left over in C");
	cr_assert_eq(cl_chan_destroy(ca), 0, "a record left on A");
	cr_assert_eq(cl_chan_destroy(cb), 0, "a record left on B");
	cr_assert_eq(cl_chan_destroy(cc), 0, "a record left on C");
}

Test(sched_runtime_select, a_case_that_can_complete_completes_at_once_from_a_task)
{
	make_chans(sizeof(long), 2);
	run_task(1, ready_checks_task, NULL);
	destroy_chans();
}

Test(sched_runtime_select, a_case_that_can_complete_completes_at_once_from_a_thread)
{
	struct cl_select_case k[2];
	long out = -1;
	const char *err;

	make_chans(sizeof(long), 2);
	err = ready_checks();
	cr_assert_null(err, "%s", err);
	/* outside a task nothing waits: EPERM, with or without a timeout */
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	cr_assert_eq(cl_select(k, 2, CL_SELECT_FOREVER), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_select(k, 2, 1000), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(out, -1);
	destroy_chans();
}

Test(sched_runtime_select, bad_input_fails_with_einval)
{
	struct cl_select_case k[CL_SELECT_MAX + 1];
	long out;

	make_chans(sizeof(long), 1);
	for (int i = 0; i < CL_SELECT_MAX + 1; i++)
		set_case(&k[i], ca, CL_SELECT_RECV, &out);
	cr_assert_eq(cl_select(NULL, 1, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_select(k, 0, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_select(k, CL_SELECT_MAX + 1, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_select(k, CL_SELECT_MAX, CL_SELECT_NOWAIT), -1); /* the maximum is fine */
	cr_assert_eq(errno, EAGAIN);
	k[1].chan = NULL;
	cr_assert_eq(cl_select(k, 2, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	k[1].chan = ca;
	k[1].op = 3;
	cr_assert_eq(cl_select(k, 2, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	k[1].op = CL_SELECT_SEND;
	k[1].msg = NULL;
	cr_assert_eq(cl_select(k, 2, CL_SELECT_NOWAIT), -1);
	cr_assert_eq(errno, EINVAL);
	destroy_chans();
}

/* ---- waiting ---- */

/* The other side: waits for the phase, then sends on B (phase 1), then
 * receives from C (phase 2). */
static void *feeder(void *p)
{
	long v = 42, out;

	(void)p;
	while (atomic_load(&phase) < 1)
		cl_yield();
	cl_yield();
	if (cl_chan_send(cb, &v) != 0)
		return (void *)"send";
	while (atomic_load(&phase) < 2)
		cl_yield();
	cl_yield();
	/* the 1 the select found in C: its send waits, and refills the ring */
	if (cl_chan_recv(cc, &out) != 0 || out != 1)
		return (void *)"recv";
	return NULL;
}

static void *waiting_select(void *p)
{
	struct cl_select_case k[3];
	long out = -1, one = 1, five = 5;
	void *fr = (void *)1;
	struct cl_rt_task *f = spawn_on(cur_rt, 1, feeder, NULL);

	(void)p;
	/* receives on A, B, C: waits until the feeder sends on B */
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	set_case(&k[2], cc, CL_SELECT_RECV, &out);
	atomic_store(&phase, 1);
	if (cl_select(k, 3, CL_SELECT_FOREVER) != 1 || out != 42 || k[1].err != 0)
		return (void *)"select did not wait for B's message";
	/* a send on full C beside a receive on empty A: waits for the
	 * feeder's receive from C, which takes the select's message */
	if (cl_chan_send(cc, &one) != 0)
		return (void *)"fill C";
	set_case(&k[1], cc, CL_SELECT_SEND, &five);
	atomic_store(&phase, 2);
	if (cl_select(k, 2, CL_SELECT_FOREVER) != 1 || k[1].err != 0)
		return (void *)"select did not wait for room in C";
	if (cl_join(f, &fr) != 0 || fr)
		return fr ? fr : (void *)"join";
	if (cl_chan_tryrecv(cc, &out) != 0 || out != 5)
		return (void *)"the select's message is not next in C";
	return NULL;
}

Test(sched_runtime_select, waits_until_one_of_several_channels_can_complete_a_case)
{
	make_chans(sizeof(long), 1);
	run_task(2, waiting_select, NULL);
	destroy_chans();
}

/* A sends 9 on A once the select waits. */
static void *send_a_later(void *p)
{
	long v = 9;

	(void)p;
	while (atomic_load(&phase) < 1)
		cl_yield();
	cl_yield();
	return cl_chan_send(ca, &v) == 0 ? NULL : (void *)"send";
}

static void *same_channel_twice(void *p)
{
	struct cl_select_case k[3];
	long out = -1, one = 1, v = 5;
	struct cl_rt_task *f = spawn_on(cur_rt, 1, send_a_later, NULL);
	void *fr = (void *)1;
	int r;

	(void)p;
	/* two receives on A, a send on full B: A is locked once, and the
	 * receive that did not complete leaves no record on A */
	if (cl_chan_send(cb, &one) != 0)
		return (void *)"fill B";
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_SEND, &v);
	set_case(&k[2], ca, CL_SELECT_RECV, &out);
	atomic_store(&phase, 1);
	r = cl_select(k, 3, CL_SELECT_FOREVER);
	if ((r != 0 && r != 2) || out != 9 || k[r].err != 0)
		return (void *)"two receives on A: not one of them with A's message";
	if (cl_join(f, &fr) != 0 || fr)
		return fr ? fr : (void *)"join";
	if (cl_chan_tryrecv(cb, &out) != 0 || out != 1 || cl_chan_tryrecv(cb, &out) != -1)
		return (void *)"B's send moved something";
	/* a send and a receive on one channel: whichever can */
	set_case(&k[0], ca, CL_SELECT_SEND, &v);
	set_case(&k[1], ca, CL_SELECT_RECV, &out);
	if (cl_select(k, 2, CL_SELECT_NOWAIT) != 0 || k[0].err != 0)
		return (void *)"a send on empty A beside a receive on A";
	if (cl_select(k, 2, CL_SELECT_NOWAIT) != 1 || out != 5)
		return (void *)"a receive on full A beside a send on A";
	return NULL;
}

Test(sched_runtime_select, a_channel_in_several_cases_is_locked_once_and_left_clean)
{
	make_chans(sizeof(long), 1);
	run_task(2, same_channel_twice, NULL);
	destroy_chans();
}

/* ---- fairness ---- */

enum { FAIR_ROUNDS = 4000 };

/*
 * Cases A, B (both with a message in every round) and C (empty), in that
 * order: each of A and B must be picked about half the time. A fixed
 * order picks A always; a random start with a scan picks A two times in
 * three (a start at C goes on to A).
 */
static void *fair_rounds(void *p)
{
	struct cl_select_case k[3];
	long out, v = 1, *counts = (long *)p;

	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	set_case(&k[2], cc, CL_SELECT_RECV, &out);
	for (int i = 0; i < FAIR_ROUNDS; i++) {
		int r;

		(void)cl_chan_trysend(ca, &v); /* (full if it was not picked last) */
		(void)cl_chan_trysend(cb, &v);
		r = cl_select(k, 3, CL_SELECT_NOWAIT);
		if (r < 0 || r > 1)
			return (void *)"not A or B";
		counts[r]++;
	}
	(void)cl_chan_tryrecv(ca, &out);
	(void)cl_chan_tryrecv(cb, &out);
	return NULL;
}

Test(sched_runtime_select, each_case_that_can_complete_is_picked_as_often)
{
	long counts[2] = { 0, 0 };

	make_chans(sizeof(long), 1);
	run_task(1, fair_rounds, counts);
	cr_log_info("A %ld, B %ld of %d", counts[0], counts[1], FAIR_ROUNDS);
	/* half each: 2000 +- 32 (one standard deviation) */
	cr_assert_gt(counts[0], FAIR_ROUNDS * 42 / 100, "A picked %ld of %d times", counts[0], FAIR_ROUNDS);
	cr_assert_gt(counts[1], FAIR_ROUNDS * 42 / 100, "B picked %ld of %d times", counts[1], FAIR_ROUNDS);
	destroy_chans();
}

/* ---- timeout and close ---- */

static void *timeout_and_close_checks(void *p)
{
	struct cl_select_case k[2];
	long out = -1, v = 3;
	uint64_t t0;

	(void)p;
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	/* nothing comes: ETIMEDOUT, not early, @msg untouched */
	t0 = mono_ns();
	if (cl_select(k, 2, 1000000) != -1 || errno != ETIMEDOUT || out != -1)
		return (void *)"a select on empty channels did not time out";
	if (mono_ns() - t0 < 1000000)
		return (void *)"the select returned before its timeout";
	/* its records are off the lists: a send goes into the ring */
	if (cl_chan_send(ca, &v) != 0 || cl_chan_tryrecv(ca, &out) != 0 || out != 3)
		return (void *)"after the timeout, a send did not go to the ring";
	/* a send on a full channel times out, its message not sent */
	set_case(&k[1], cb, CL_SELECT_SEND, &v);
	if (cl_chan_send(cb, &v) != 0)
		return (void *)"fill B";
	v = 4;
	if (cl_select(&k[1], 1, 200000) != -1 || errno != ETIMEDOUT)
		return (void *)"a send on a full channel did not time out";
	if (cl_chan_tryrecv(cb, &out) != 0 || out != 3 || cl_chan_tryrecv(cb, &out) != -1)
		return (void *)"the timed-out send's message is in the channel";
	/* closed with a message: the message first, then EPIPE */
	v = 8;
	if (cl_chan_send(ca, &v) != 0 || cl_chan_close(ca) != 0)
		return (void *)"send, close";
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	if (cl_select(k, 2, CL_SELECT_FOREVER) != 0 || k[0].err != 0 || out != 8)
		return (void *)"a closed channel's last message";
	out = -1;
	if (cl_select(k, 2, CL_SELECT_FOREVER) != 0 || k[0].err != EPIPE || out != -1)
		return (void *)"a closed empty channel: not its index with EPIPE";
	/* a send on a closed channel: EPIPE, not sent */
	set_case(&k[0], ca, CL_SELECT_SEND, &v);
	if (cl_select(k, 2, CL_SELECT_NOWAIT) != 0 || k[0].err != EPIPE)
		return (void *)"a send on a closed channel: not its index with EPIPE";
	return NULL;
}

Test(sched_runtime_select, a_timeout_leaves_the_channels_as_they_were_and_a_closed_channel_gives_epipe)
{
	make_chans(sizeof(long), 1);
	run_task(1, timeout_and_close_checks, NULL);
	destroy_chans();
}

static void *close_b_later(void *p)
{
	(void)p;
	while (atomic_load(&phase) < 1)
		cl_yield();
	cl_yield();
	return cl_chan_close(cb) == 0 ? NULL : (void *)"close";
}

static void *select_while_closed(void *p)
{
	struct cl_select_case k[2];
	long out = -1;
	struct cl_rt_task *c = spawn_on(cur_rt, 1, close_b_later, NULL);
	void *cr = (void *)1;

	(void)p;
	set_case(&k[0], ca, CL_SELECT_RECV, &out);
	set_case(&k[1], cb, CL_SELECT_RECV, &out);
	atomic_store(&phase, 1);
	if (cl_select(k, 2, CL_SELECT_FOREVER) != 1 || k[1].err != EPIPE || out != -1)
		return (void *)"a close while the select waited: not B's index with EPIPE";
	if (cl_join(c, &cr) != 0 || cr)
		return cr ? cr : (void *)"join";
	return NULL;
}

Test(sched_runtime_select, a_close_while_it_waits_completes_that_case_with_epipe)
{
	make_chans(sizeof(long), 1);
	run_task(2, select_while_closed, NULL);
	destroy_chans();
}

/* ---- a send racing the timeout, forced ---- */

static long round_no;                /* the select's round, read by the hook */
static atomic_long sent, got_direct, got_after, timed_out;
static int both;                     /* the hook sends to B too */

/* On the worker's thread, in the timer's window: outside sends. */
static void send_round(void)
{
	long v = round_no;

	if (cl_chan_trysend(ca, &v) == 0)
		atomic_fetch_add(&sent, 1);
	if (both && cl_chan_trysend(cb, &v) == 0)
		atomic_fetch_add(&sent, 1);
}

static void *select_rounds(void *p)
{
	long n = (long)(intptr_t)p;
	struct cl_select_case k[2];
	long v;

	set_case(&k[0], ca, CL_SELECT_RECV, &v);
	set_case(&k[1], cb, CL_SELECT_RECV, &v);
	for (round_no = 0; round_no < n; round_no++) {
		int mode = (int)(round_no % 4), r;

		both = mode == 3;
		if (mode)
			atomic_store(&armed, mode == 2 ? 71 : 70);
		v = -1;
		r = cl_select(k, 2, 2000);
		/* the hook acted (armed cleared): 70 gives A's case the select,
		 * 71 leaves it timed out */
		if (mode && !atomic_load(&armed) && (mode == 2 ? r != -1 : r != 0))
			return (void *)(mode == 2 ? "a send at 71 ended a select its timer had ended"
					: "a send at 70 did not end the select");
		if (r >= 0) {
			if (r > 1 || k[r].err != 0 || v != round_no)
				return (void *)"not this round's message";
			atomic_fetch_add(&got_direct, 1);
		} else {
			if (errno != ETIMEDOUT)
				return (void *)"select failed, not with ETIMEDOUT";
			atomic_fetch_add(&timed_out, 1);
		}
		atomic_store(&armed, 0); /* not reached: disarm */
		/* a message sent in the window and not received here is in
		 * its channel, once */
		while (cl_chan_tryrecv(ca, &v) == 0 || cl_chan_tryrecv(cb, &v) == 0) {
			if (v != round_no)
				return (void *)"a stale message in a channel";
			atomic_fetch_add(&got_after, 1);
		}
	}
	return NULL;
}

Test(sched_runtime_select, a_send_racing_the_timeout_is_received_once, .timeout = 60)
{
	long n = rounds(100000);

	make_chans(sizeof(long), 4);
	action = send_round;
	atomic_store(&acted, 0);
	atomic_store(&sent, 0);
	atomic_store(&got_direct, 0);
	atomic_store(&got_after, 0);
	atomic_store(&timed_out, 0);
	run_task(1, select_rounds, (void *)(intptr_t)n);
	cr_log_info("%ld rounds: %ld sent in a window, %ld received by the select, %ld found after it, %ld timeouts",
		    n, atomic_load(&sent), atomic_load(&got_direct), atomic_load(&got_after),
		    atomic_load(&timed_out));
	cr_assert_eq(atomic_load(&sent), atomic_load(&got_direct) + atomic_load(&got_after),
		     "a message lost or duplicated");
	/* each window was hit and decided its way: 70 the send's (its
	 * second send, mode 3, then in the channel), 71 the timer's */
	cr_assert_gt(atomic_load(&got_direct), n / 5, "the send never won at point 70");
	cr_assert_gt(atomic_load(&got_after), n / 5, "no message left in a channel at 71 or by a second send");
	cr_assert_gt(atomic_load(&timed_out), n / 5);
	destroy_chans();
}

/* ---- without hooks: selects beside senders and receivers on the other worker ---- */

enum { NR_SIDES = 2 };

static atomic_int *seen;             /* times each message was received */
static long nr_msg;                  /* per sender */

/* Sender @p (0: A, 1: B) on worker 1: its messages, then a close. */
static void *plain_sender(void *p)
{
	long side = (long)(intptr_t)p;
	struct cl_chan *c = side ? cb : ca;

	for (long i = 0; i < nr_msg; i++) {
		long v = side * nr_msg + i;

		if (i % 5 == 0)
			cl_yield();
		if (cl_chan_send(c, &v) != 0)
			return (void *)"send";
	}
	return cl_chan_close(c) == 0 ? NULL : (void *)"close";
}

/* A receiver selecting on A and B until both are closed and empty, with
 * a timeout in some rounds (1-13 us) and none in the others. */
static void *select_receiver(void *p)
{
	struct cl_select_case k[2];
	long v, got = 0, timeouts = 0;
	int open = 2;

	(void)p;
	set_case(&k[0], ca, CL_SELECT_RECV, &v);
	set_case(&k[1], cb, CL_SELECT_RECV, &v);
	while (open) {
		uint64_t to = got % 3 ? 1000 + (uint64_t)(got % 5) * 3000 : CL_SELECT_FOREVER;
		int r = cl_select(k, (unsigned int)open, to);

		if (r < 0) {
			if (errno != ETIMEDOUT)
				return (void *)"select failed, not with ETIMEDOUT";
			timeouts++;
			continue;
		}
		if (k[r].err == EPIPE) { /* closed and empty: drop the case */
			k[r] = k[open - 1];
			open--;
			continue;
		}
		if (k[r].err || v < 0 || v >= NR_SIDES * nr_msg)
			return (void *)"a bad message";
		atomic_fetch_add(&seen[v], 1);
		got++;
	}
	cr_log_info("a selecting receiver: %ld messages, %ld timeouts", got, timeouts);
	return NULL;
}

/* A sender selecting between A and B for each of its messages. */
static void *select_sender(void *p)
{
	struct cl_select_case k[2];
	long v, timeouts = 0;

	(void)p;
	set_case(&k[0], ca, CL_SELECT_SEND, &v);
	set_case(&k[1], cb, CL_SELECT_SEND, &v);
	for (v = 0; v < NR_SIDES * nr_msg; v++) {
		uint64_t to = v % 3 ? 1000 + (uint64_t)(v % 5) * 3000 : CL_SELECT_FOREVER;
		int r;

		while ((r = cl_select(k, 2, to)) < 0) {
			if (errno != ETIMEDOUT)
				return (void *)"select failed, not with ETIMEDOUT";
			timeouts++; /* not sent: again */
		}
		if (k[r].err)
			return (void *)"a send failed";
	}
	cr_log_info("a selecting sender: %ld timeouts", timeouts);
	return (cl_chan_close(ca) == 0 && cl_chan_close(cb) == 0) ? NULL : (void *)"close";
}

/* A receiver on one channel (@p: 0 A, 1 B), with short timeouts. */
static void *plain_receiver(void *p)
{
	struct cl_chan *c = (long)(intptr_t)p ? cb : ca;
	long v, n = 0;

	for (;;) {
		if (cl_chan_recv_timeout(c, &v, 1000 + (uint64_t)(n % 5) * 3000) != 0) {
			if (errno == ETIMEDOUT)
				continue;
			return errno == EPIPE ? NULL : (void *)"recv failed, not with ETIMEDOUT or EPIPE";
		}
		if (v < 0 || v >= NR_SIDES * nr_msg)
			return (void *)"a bad message";
		atomic_fetch_add(&seen[v], 1);
		n++;
	}
}

/* Tasks @a (NR_SIDES of them, on worker 0) and @b (on worker 1); each
 * message received exactly once. */
static void storm(void *(*a)(void *), void *(*b)(void *), unsigned int nb, long total)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_rt_task *t[2 * NR_SIDES];
	unsigned int nt = 0;
	long missing = 0, doubled = 0;

	nr_msg = total / NR_SIDES;
	seen = calloc((size_t)(NR_SIDES * nr_msg), sizeof(*seen));
	cr_assert_not_null(seen);
	make_chans(sizeof(long), 1);
	for (long i = 0; i < NR_SIDES; i++)
		t[nt++] = spawn_on(rt, 0, a, (void *)(intptr_t)i);
	for (unsigned int i = 0; i < nb; i++)
		t[nt++] = spawn_on(rt, 1, b, (void *)(intptr_t)i);
	for (unsigned int i = 0; i < nt; i++) {
		void *ret = (void *)"not joined";

		cr_assert_eq(cl_join(t[i], &ret), 0);
		cr_assert_null(ret, "task %u: %s", i, (const char *)ret);
	}
	for (long i = 0; i < NR_SIDES * nr_msg; i++) {
		missing += atomic_load(&seen[i]) == 0;
		doubled += atomic_load(&seen[i]) > 1;
	}
	cr_assert_eq(missing + doubled, 0, "%ld messages lost, %ld received more than once", missing, doubled);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	free(seen);
	cr_assert_eq(cl_chan_destroy(ca), 0);
	cr_assert_eq(cl_chan_destroy(cb), 0);
	cr_assert_eq(cl_chan_destroy(cc), 0);
}

Test(sched_runtime_select, two_selecting_receivers_beside_two_senders_get_each_message_once, .timeout = 60)
{
	storm(select_receiver, plain_sender, NR_SIDES, rounds(100000));
}

Test(sched_runtime_select, a_selecting_sender_beside_two_receivers_sends_each_message_once, .timeout = 60)
{
	storm(plain_receiver, select_sender, 1, rounds(100000) / 5);
}
