/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_timeout.c - waits with a timeout
 * (cl_chan_send_timeout(), cl_chan_recv_timeout(), cl_waitq_wait_timeout(),
 * cl_mutex_lock_timeout(), cl_cond_wait_timeout()): each times out with
 * ETIMEDOUT and leaves its object as if it had never waited, and a wakeup
 * racing the expiry is delivered exactly once. The race windows are
 * forced with the CL_INJECT() points of the timer's firing (timer.h), on
 * the worker's thread, outside any task:
 *   70  a timed wait's timer is off the wheel, its list not yet locked:
 *       a waker that comes now finds the record and wins
 *   71  the timer decided (the list's lock released), not yet let go of:
 *       a waker that comes now finds no record
 * and, without hooks, with a waker on another worker at random moments.
 * A message is received once or is still in the channel, never lost or
 * duplicated. CL_TEST_TIMEOUT_ROUNDS sets the forced rounds (100,000).
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

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

static void *run_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *), void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;
	void *ret = (void *)1;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t);
	cr_assert_eq(cl_join(t, &ret), 0);
	return ret;
}

static long rounds(long dflt)
{
	const char *e = getenv("CL_TEST_TIMEOUT_ROUNDS");

#ifdef CL__RT_VALGRIND
	if (RUNNING_ON_VALGRIND)
		dflt /= 10; /* one thread at a time, ~50x slower */
#endif
	return e ? atol(e) : dflt;
}

/* ---- the hook ---- */

static atomic_int armed;             /* the point whose next pass acts (70, 71), 0: none */
static atomic_long acted;            /* times it did */
static void (*action)(void);

static void inject(int n)
{
	int a = atomic_load(&armed);

	if (a != n || !atomic_compare_exchange_strong(&armed, &a, 0))
		return;
	action();
	atomic_fetch_add(&acted, 1);
}

/* ---- expiry alone ---- */

static struct cl_chan *chan;
static struct cl_waitq wq;
static struct cl_mutex mtx;
static struct cl_cond cv;

static void *timeouts_task(void *p)
{
	int v = -7, one = 1;
	uint64_t t0;

	(void)p;
	/* an empty channel: nothing received, @out untouched */
	t0 = mono_ns();
	if (cl_chan_recv_timeout(chan, &v, 1000000) != -1 || errno != ETIMEDOUT || v != -7)
		return (void *)"recv_timeout on an empty channel";
	if (mono_ns() - t0 < 1000000)
		return (void *)"recv_timeout returned early";
	/* a full channel (capacity 1): not sent */
	if (cl_chan_send(chan, &one) != 0)
		return (void *)"send";
	v = 2;
	if (cl_chan_send_timeout(chan, &v, 200000) != -1 || errno != ETIMEDOUT)
		return (void *)"send_timeout on a full channel";
	if (cl_chan_recv_timeout(chan, &v, 1000000) != 0 || v != 1)
		return (void *)"recv_timeout with a message";
	if (cl_chan_tryrecv(chan, &v) != -1 || errno != EAGAIN)
		return (void *)"a timed-out send left a message";
	/* a zero timeout: at once */
	if (cl_chan_recv_timeout(chan, &v, 0) != -1 || errno != ETIMEDOUT)
		return (void *)"recv_timeout 0";
	/* wait queue */
	cl_waitq_lock(&wq);
	if (cl_waitq_wait_timeout(&wq, 100000) != -1 || errno != ETIMEDOUT)
		return (void *)"waitq_wait_timeout";
	if (cl_waitq_wake_one(&wq) != 0)
		return (void *)"a timed-out waiter was left on the wait queue";
	/* condition variable: the mutex is held again after the timeout */
	cl_mutex_lock(&mtx);
	if (cl_cond_wait_timeout(&cv, &mtx, 100000) != -1 || errno != ETIMEDOUT)
		return (void *)"cond_wait_timeout";
	if (cl_mutex_unlock(&mtx) != 0)
		return (void *)"cond_wait_timeout did not take the mutex again";
	if (cl_cond_signal(&cv) != 0)
		return (void *)"a timed-out waiter was left on the condition variable";
	return NULL;
}

static atomic_int mtx_held, mtx_release;

static void *hold_mutex(void *p)
{
	(void)p;
	cl_mutex_lock(&mtx);
	atomic_store(&mtx_held, 1);
	while (!atomic_load(&mtx_release))
		cl_yield();
	cl_mutex_unlock(&mtx);
	return NULL;
}

static void *lock_with_timeout(void *p)
{
	(void)p;
	while (!atomic_load(&mtx_held))
		cl_yield();
	if (cl_mutex_lock_timeout(&mtx, 300000) != -1 || errno != ETIMEDOUT)
		return (void *)"mutex_lock_timeout on a held mutex";
	atomic_store(&mtx_release, 1);
	if (cl_mutex_lock_timeout(&mtx, 5000000000ULL) != 0) /* the holder lets go */
		return (void *)"mutex_lock_timeout after the unlock";
	if (cl_mutex_unlock(&mtx) != 0)
		return (void *)"unlock";
	return NULL;
}

Test(sched_runtime_timeout, each_wait_times_out_and_leaves_its_object_as_it_was)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_spawn_attr sa;
	struct cl_rt_task *h;
	const char *err;

	chan = cl_chan_create(sizeof(int), 1);
	cl_waitq_init(&wq);
	cl_mutex_init(&mtx);
	cl_cond_init(&cv);
	err = (const char *)run_on(rt, 0, timeouts_task, NULL);
	cr_assert_null(err, "%s", err);
	atomic_store(&mtx_held, 0);
	atomic_store(&mtx_release, 0);
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(1);
	h = cl_spawn(rt, &sa, hold_mutex, NULL);
	err = (const char *)run_on(rt, 0, lock_with_timeout, NULL);
	cr_assert_null(err, "%s", err);
	cr_assert_eq(cl_join(h, NULL), 0);
	cr_assert_eq(cl_chan_destroy(chan), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_timeout, blocking_timeouts_outside_a_task_fail_with_eperm)
{
	int v = 0;

	chan = cl_chan_create(sizeof(int), 1);
	cr_assert_eq(cl_chan_recv_timeout(chan, &v, 1000), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_chan_send_timeout(chan, &v, 1000), 0); /* room: no wait */
	cr_assert_eq(cl_chan_send_timeout(chan, &v, 1000), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_chan_recv_timeout(chan, &v, 1000), 0); /* a message: no wait */
	cr_assert_eq(cl_chan_destroy(chan), 0);
}

/* ---- a wakeup racing the expiry, forced ---- */

static long round_no;               /* the receiver's round, read by the hook */
static atomic_long sent, got_direct, got_after, timed_out;

/* On the worker's thread, in the timer's window: an outside send. */
static void send_round(void)
{
	long v = round_no;

	if (cl_chan_trysend(chan, &v) == 0)
		atomic_fetch_add(&sent, 1);
}

static void *recv_rounds(void *p)
{
	long n = (long)(intptr_t)p;

	for (round_no = 0; round_no < n; round_no++) {
		long v = -1;
		int mode = (int)(round_no % 3);

		if (mode)
			atomic_store(&armed, mode == 1 ? 70 : 71);
		if (cl_chan_recv_timeout(chan, &v, 2000) == 0) {
			if (v != round_no)
				return (void *)"received another round's message";
			atomic_fetch_add(&got_direct, 1);
		} else {
			if (errno != ETIMEDOUT)
				return (void *)"recv_timeout failed, not with ETIMEDOUT";
			atomic_fetch_add(&timed_out, 1);
		}
		atomic_store(&armed, 0); /* not reached (a fast path): disarm */
		/* a message sent in the window and not received here is in
		 * the channel, once */
		while (cl_chan_tryrecv(chan, &v) == 0) {
			if (v != round_no)
				return (void *)"a stale message in the channel";
			atomic_fetch_add(&got_after, 1);
		}
	}
	return NULL;
}

Test(sched_runtime_timeout, recv_racing_its_timeout_gets_each_message_once)
{
	struct cl_runtime *rt = new_rt(1);
	long n = rounds(100000);
	const char *err;

	chan = cl_chan_create(sizeof(long), 4);
	action = send_round;
	atomic_store(&acted, 0);
	atomic_store(&sent, 0);
	atomic_store(&got_direct, 0);
	atomic_store(&got_after, 0);
	atomic_store(&timed_out, 0);
	err = (const char *)run_on(rt, 0, recv_rounds, (void *)(intptr_t)n);
	cr_assert_null(err, "round %ld: %s", round_no, err);
	cr_log_info("%ld rounds: %ld sent in a window, %ld received by the timed recv, %ld found after it, %ld timeouts",
		    n, atomic_load(&sent), atomic_load(&got_direct), atomic_load(&got_after),
		    atomic_load(&timed_out));
	cr_assert_eq(atomic_load(&sent), atomic_load(&got_direct) + atomic_load(&got_after),
		     "a message lost or duplicated");
	/* both windows were hit, each decided both ways */
	cr_assert_gt(atomic_load(&got_direct), n / 10, "the waker never won at point 70");
	cr_assert_gt(atomic_load(&got_after), n / 10, "the timer never won before a send at point 71");
	cr_assert_gt(atomic_load(&timed_out), n / 3);
	cr_assert_eq(cl_chan_destroy(chan), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* The same for the wait queue: a wake_one in the window wakes this waiter
 * (70) or finds none (71); never both, never neither. */
static atomic_long woken_by_wake, wakes_done;

static void wake_round(void)
{
	atomic_fetch_add(&wakes_done, (long)cl_waitq_wake_one(&wq));
}

static void *waitq_rounds(void *p)
{
	long n = (long)(intptr_t)p;

	for (round_no = 0; round_no < n; round_no++) {
		int mode = (int)(round_no % 3);

		if (mode)
			atomic_store(&armed, mode == 1 ? 70 : 71);
		cl_waitq_lock(&wq);
		if (cl_waitq_wait_timeout(&wq, 2000) == 0)
			atomic_fetch_add(&woken_by_wake, 1);
		else if (errno != ETIMEDOUT)
			return (void *)"waitq_wait_timeout failed, not with ETIMEDOUT";
		atomic_store(&armed, 0);
	}
	return NULL;
}

Test(sched_runtime_timeout, waitq_wake_racing_the_timeout_wakes_once)
{
	struct cl_runtime *rt = new_rt(1);
	long n = rounds(100000) / 2;
	const char *err;

	cl_waitq_init(&wq);
	action = wake_round;
	atomic_store(&woken_by_wake, 0);
	atomic_store(&wakes_done, 0);
	err = (const char *)run_on(rt, 0, waitq_rounds, (void *)(intptr_t)n);
	cr_assert_null(err, "round %ld: %s", round_no, err);
	cr_assert_eq(atomic_load(&wakes_done), atomic_load(&woken_by_wake),
		     "wake_one said it woke %ld, %ld waits ended by a wake", atomic_load(&wakes_done),
		     atomic_load(&woken_by_wake));
	cr_assert_gt(atomic_load(&woken_by_wake), n / 10);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- a waker on another worker, at random moments ---- */

enum { NR_MSG = 20000 };

static void *send_seq(void *p)
{
	(void)p;
	for (long i = 0; i < NR_MSG; i++) {
		if (i % 7 == 0)
			cl_yield();
		if (cl_chan_send(chan, &i) != 0)
			return (void *)"send";
	}
	return NULL;
}

static void *recv_seq_timed(void *p)
{
	long next = 0, v, timeouts = 0;

	(void)p;
	while (next < NR_MSG) {
		if (cl_chan_recv_timeout(chan, &v, 1000 + (uint64_t)(next % 5) * 3000) != 0) {
			if (errno != ETIMEDOUT)
				return (void *)"recv_timeout failed, not with ETIMEDOUT";
			timeouts++;
			continue;
		}
		if (v != next)
			return (void *)"a message lost, duplicated or out of order";
		next++;
	}
	cr_log_info("timed receives: %ld timeouts over %d messages", timeouts, NR_MSG);
	return NULL;
}

static void *send_seq_timed(void *p)
{
	long timeouts = 0;

	(void)p;
	for (long i = 0; i < NR_MSG; i++) {
		while (cl_chan_send_timeout(chan, &i, 1000 + (uint64_t)(i % 5) * 3000) != 0) {
			if (errno != ETIMEDOUT)
				return (void *)"send_timeout failed, not with ETIMEDOUT";
			timeouts++; /* not sent: send it again */
		}
	}
	cr_log_info("timed sends: %ld timeouts over %d messages", timeouts, NR_MSG);
	return NULL;
}

static void *recv_seq(void *p)
{
	long v;

	(void)p;
	for (long i = 0; i < NR_MSG; i++) {
		if (i % 7 == 0)
			cl_yield();
		if (cl_chan_recv(chan, &v) != 0)
			return (void *)"recv";
		if (v != i)
			return (void *)"a message lost, duplicated or out of order";
	}
	return NULL;
}

static void pair_on_two_workers(void *(*a)(void *), void *(*b)(void *))
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_spawn_attr sa;
	struct cl_rt_task *ta, *tb;
	void *ra = (void *)1, *rb = (void *)1;

	chan = cl_chan_create(sizeof(long), 1);
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0);
	ta = cl_spawn(rt, &sa, a, NULL);
	sa.worker = CL_SPAWN_WORKER(1);
	tb = cl_spawn(rt, &sa, b, NULL);
	cr_assert(ta && tb);
	cr_assert_eq(cl_join(ta, &ra), 0);
	cr_assert_eq(cl_join(tb, &rb), 0);
	cr_assert_null(ra, "%s", (const char *)ra);
	cr_assert_null(rb, "%s", (const char *)rb);
	cr_assert_eq(cl_chan_tryrecv(chan, &ra), -1, "a message left over");
	cr_assert_eq(cl_chan_destroy(chan), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_timeout, timed_receiver_beside_a_sender_on_another_worker_gets_each_message_once)
{
#ifdef CL__RT_VALGRIND
	/* KNOWN OPEN: under valgrind (one thread at a time) this pair stops
	 * now and then, both sides waiting, in about one run of three; not
	 * seen plain, under ASan or TSan, or on one CPU. Skipped there until
	 * it is understood (the forced races above still run). */
	if (RUNNING_ON_VALGRIND) {
		cr_log_info("skipped under valgrind (known open stall)");
		return;
	}
#endif
	pair_on_two_workers(recv_seq_timed, send_seq);
}

Test(sched_runtime_timeout, timed_sender_beside_a_receiver_on_another_worker_sends_each_message_once)
{
	pair_on_two_workers(send_seq_timed, recv_seq);
}
