/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_timeout.c - waits with a timeout
 * (cl_chan_send_timeout(), cl_chan_recv_timeout(), cl_waitq_wait_timeout(),
 * cl_mutex_lock_timeout(), cl_cond_wait_timeout(), cl_join_timeout()):
 * each times out with ETIMEDOUT and leaves its object as if it had never
 * waited (a task whose join timed out is still joinable), and a wakeup
 * (an exit) racing the expiry is delivered exactly once. The race windows are
 * forced with the CL_INJECT() points of the timer's firing (timer.h), on
 * the worker's thread, outside any task:
 *   70  a timed wait's timer is off the wheel, its list not yet locked:
 *       a waker that comes now finds the record and wins
 *   71  the timer decided (the list's lock released), not yet let go of:
 *       a waker that comes now finds no record
 * and, without hooks, with a waker on another worker at random moments.
 * Point 72 (a woken task disarms its timer, the wheel's lock held) gets
 * the preemption signal with a timer mark, in the task itself.
 * A message is received once or is still in the channel, never lost or
 * duplicated; a task's result is taken by exactly one join. CL_TEST_TIMEOUT_ROUNDS sets the forced rounds (100,000; a tenth under valgrind and TSan).
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <signal.h>
#include <sys/syscall.h>
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
#if defined(__SANITIZE_THREAD__)
	dflt /= 10; /* every access instrumented: the forced rounds took a minute */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	dflt /= 10;
#endif
#endif
	return e ? atol(e) : dflt;
}

/* ---- the hook ---- */

static atomic_int armed;             /* the point whose next pass acts (70, 71, 72), 0: none */
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

/* ---- the preemption signal while a woken waiter disarms its timer ---- */

/*
 * tgkill() of this thread with the syscall instruction here, in the
 * program: the preemption handler acts only on a PC in the program's text
 * (preempt.h), and libc's syscall() would leave it in libc's. 0 where this
 * file knows no such instruction.
 */
static int tgkill_here(int sig)
{
	long tgid = (long)getpid(), tid = syscall(SYS_gettid);

#if defined(__x86_64__)
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "0"((long)SYS_tgkill), "D"(tgid), "S"(tid), "d"((long)sig)
			 : "rcx", "r11", "memory");
	return r == 0;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_tgkill;
	register long x0 __asm__("x0") = tgid;
	register long x1 __asm__("x1") = tid;
	register long x2 __asm__("x2") = (long)sig;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return x0 == 0;
#else
	(void)tgid;
	(void)tid;
	(void)sig;
	return 0;
#endif
}

/*
 * At point 72 (the task a waker woke disarms its timer, holding its
 * worker's wheel lock): what the tick does when a timer of a worker that
 * runs a task is due, the timer mark and the preemption signal, here on
 * the task's own thread. The handler must leave the mark to the task's
 * next preemption check: firing the timers there takes the wheel's lock,
 * which this same thread holds. (Held preemptibly, the worker spun on it
 * forever: the timed receiver beside a sender below stopped so under
 * valgrind, where its short timeouts are always due by the time the
 * sender wakes it, and the tick's signal often lands in that window.)
 */
static atomic_long signals_sent;

static void signal_in_disarm(void)
{
	struct cl_rt_task *self = cl__rt_current();

	CL_ATOMIC_FETCH_OR(&self->w->preempt_pending, CL__RT_PP_TIMER, CL_RELAXED);
	if (tgkill_here(CL_RUNTIME_PREEMPT_SIGNAL))
		atomic_fetch_add(&signals_sent, 1);
}

static struct cl_chan *pong;

static void *timed_ping(void *p)
{
	long n = (long)(intptr_t)p;

	for (long i = 0; i < n; i++) {
		long v = -1;

		atomic_store(&armed, 72);
		if (cl_chan_recv_timeout(chan, &v, 10000000000ULL) != 0 || v != i)
			return (void *)"recv_timeout";
		atomic_store(&armed, 0); /* not reached: no wait (a fast path) */
		if (cl_chan_send(pong, &v) != 0)
			return (void *)"send";
	}
	return NULL;
}

static void *ping(void *p)
{
	long n = (long)(intptr_t)p, v;

	for (long i = 0; i < n; i++) {
		if (cl_chan_send(chan, &i) != 0)
			return (void *)"send";
		if (cl_chan_recv(pong, &v) != 0 || v != i)
			return (void *)"recv";
	}
	return NULL;
}

Test(sched_runtime_timeout, preemption_signal_while_a_woken_waiter_disarms_its_timer, .timeout = 30)
{
	struct cl_runtime *rt;
	struct cl_spawn_attr sa;
	struct cl_rt_task *ta, *tb;
	void *ra = (void *)1, *rb = (void *)1;
	const long n = 200;

	if (!tgkill_here(0))
		cr_skip_test("no syscall instruction for this architecture here");
	rt = new_rt(1);
	if (!rt->preempt_signal) {
		cr_assert_eq(cl_runtime_destroy(rt), 0);
		cr_skip_test("the runtime does not use the preemption signal in this build");
	}
	chan = cl_chan_create(sizeof(long), 1);
	pong = cl_chan_create(sizeof(long), 1);
	action = signal_in_disarm;
	atomic_store(&acted, 0);
	atomic_store(&signals_sent, 0);
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0);
	ta = cl_spawn(rt, &sa, timed_ping, (void *)(intptr_t)n);
	tb = cl_spawn(rt, &sa, ping, (void *)(intptr_t)n);
	cr_assert(ta && tb);
	cr_assert_eq(cl_join(ta, &ra), 0);
	cr_assert_eq(cl_join(tb, &rb), 0);
	cr_assert_null(ra, "%s", (const char *)ra);
	cr_assert_null(rb, "%s", (const char *)rb);
	cr_log_info("%ld of %ld timed receives woken by a send got the signal while disarming",
		    atomic_load(&signals_sent), n);
	/* the sender wakes the blocked receiver in (almost) every round */
	cr_assert_gt(atomic_load(&signals_sent), n / 2);
	cr_assert_eq(atomic_load(&signals_sent), atomic_load(&acted));
	cr_assert_eq(cl_chan_destroy(chan), 0);
	cr_assert_eq(cl_chan_destroy(pong), 0);
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
	pair_on_two_workers(recv_seq_timed, send_seq);
}

Test(sched_runtime_timeout, timed_sender_beside_a_receiver_on_another_worker_sends_each_message_once)
{
	pair_on_two_workers(send_seq_timed, recv_seq);
}

/* ---- cl_join_timeout() ---- */

/*
 * A joinee waits on the gate (a channel of capacity 1) for a word the test
 * sends when it chooses, and returns that word plus its tag: a join that
 * times out meanwhile must leave it joinable, and the later join must get
 * exactly that result. Joinees are pinned to worker 1, joiner tasks to
 * worker 0 (a forced race below spins on worker 0's thread until the
 * joinee exited on worker 1).
 */
static struct cl_chan *gate;

static void *wait_gate(void *p)
{
	long v;

	if (cl_chan_recv(gate, &v) != 0)
		return NULL;
	return (void *)(intptr_t)(v + (long)(intptr_t)p);
}

static struct cl_rt_task *spawn_pinned(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *),
				       void *arg)
{
	struct cl_spawn_attr sa;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = 1;
	return cl_spawn(rt, &sa, fn, arg);
}

static struct cl_runtime *join_rt;

static void *open_gate_later(void *p)
{
	long v = (long)(intptr_t)p;

	cl_sleep_ns(2000000); /* (only so that the join is likely to wait: either way is right) */
	return cl_chan_send(gate, &v) == 0 ? NULL : (void *)"send";
}

/* The checks, from a task or a plain thread (the same calls). */
static const char *join_timeout_checks(void)
{
	struct cl_rt_task *h, *o;
	void *r = (void *)-1;
	uint64_t t0;
	long v = 5;
	int rc;

	/* the joinee waits at the gate: the join times out, @ret untouched */
	h = spawn_pinned(join_rt, 1, wait_gate, (void *)100);
	if (!h)
		return "spawn";
	t0 = mono_ns();
	if (cl_join_timeout(h, &r, 1000000) != -1 || errno != ETIMEDOUT)
		return "join_timeout of a waiting task did not time out";
	if (mono_ns() - t0 < 1000000)
		return "join_timeout returned early";
	if (r != (void *)-1)
		return "join_timeout wrote @ret on a timeout";
	if (cl_join_timeout(h, &r, 0) != -1 || errno != ETIMEDOUT)
		return "join_timeout 0 of a waiting task";
	if (cl_join_timeout(h, NULL, 100000) != -1 || errno != ETIMEDOUT)
		return "a second timeout";
	/* still joinable: a later cl_join() gets its result, once */
	if (cl_chan_send(gate, &v) != 0)
		return "send";
	if (cl_join(h, &r) != 0 || r != (void *)105)
		return "cl_join after timeouts: not the task's result";
	if (cl_join(h, &r) != -1 || errno != EINVAL || cl_join_timeout(h, &r, 1000) != -1 || errno != EINVAL)
		return "a task joined twice";
	/* joined in time: the gate opens while the join waits */
	h = spawn_pinned(join_rt, 1, wait_gate, (void *)200);
	o = spawn_pinned(join_rt, 1, open_gate_later, (void *)7);
	if (!h || !o)
		return "spawn";
	r = NULL;
	if (cl_join_timeout(h, &r, 10000000000ULL) != 0 || r != (void *)207)
		return "join_timeout in time: not 0 with the task's result";
	if (cl_join_timeout(h, &r, 1000) != -1 || errno != EINVAL)
		return "a task joined twice (after join_timeout)";
	if (cl_join(o, &r) != 0 || r)
		return "the opener";
	/* the longest timeout waits as long as a timer can, and joins */
	v = 9;
	h = spawn_pinned(join_rt, 1, wait_gate, (void *)300);
	if (!h || cl_chan_send(gate, &v) != 0)
		return "spawn, send";
	if (cl_join_timeout(h, &r, UINT64_MAX) != 0 || r != (void *)309)
		return "join_timeout UINT64_MAX";
	/* an exited task: a zero timeout joins it (until then, times out) */
	v = 1;
	h = spawn_pinned(join_rt, 1, wait_gate, (void *)400);
	if (!h || cl_chan_send(gate, &v) != 0)
		return "spawn, send";
	while ((rc = cl_join_timeout(h, &r, 0)) != 0)
		if (errno != ETIMEDOUT)
			return "join_timeout 0 failed, not with ETIMEDOUT";
	if (r != (void *)401)
		return "join_timeout 0: not the task's result";
	return NULL;
}

static void *join_timeout_checks_task(void *p)
{
	(void)p;
	return (void *)join_timeout_checks();
}

Test(sched_runtime_timeout, join_timeout_times_out_and_the_task_stays_joinable_from_a_task)
{
	const char *err;
	struct cl_rt_task *h;

	join_rt = new_rt(2);
	gate = cl_chan_create(sizeof(long), 1);
	h = spawn_pinned(join_rt, 0, join_timeout_checks_task, NULL);
	cr_assert_not_null(h);
	cr_assert_eq(cl_join(h, (void **)&err), 0);
	cr_assert_null(err, "%s", err);
	cr_assert_eq(cl_chan_destroy(gate), 0);
	cr_assert_eq(cl_runtime_destroy(join_rt), 0);
}

Test(sched_runtime_timeout, join_timeout_times_out_and_the_task_stays_joinable_from_a_thread)
{
	const char *err;

	join_rt = new_rt(2);
	gate = cl_chan_create(sizeof(long), 1);
	err = join_timeout_checks();
	cr_assert_null(err, "%s", err);
	cr_assert_eq(cl_chan_destroy(gate), 0);
	cr_assert_eq(cl_runtime_destroy(join_rt), 0);
}

static struct cl_rt_task *joinee;

static void *nothing(void *p)
{
	return p;
}

static void *join_self_then_joinee(void *p)
{
	void *r = NULL;

	(void)p;
	if (cl_join_timeout(cl_self(), NULL, 1000) != -1 || errno != EDEADLK)
		return (void *)"join_timeout of itself: not EDEADLK";
	if (cl_join_timeout(joinee, &r, 10000000000ULL) != 0 || r != (void *)(intptr_t)11)
		return (void *)"join_timeout: not the joinee's result";
	return NULL;
}

Test(sched_runtime_timeout, join_timeout_refuses_what_cl_join_refuses)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *h, *d;
	void *r = (void *)-1;
	long v = 1;
	unsigned int spins = 0;

	join_rt = new_rt(2);
	gate = cl_chan_create(sizeof(long), 1);
	cr_assert_eq(cl_join_timeout(NULL, &r, 1000), -1);
	cr_assert_eq(errno, EINVAL);
	/* detached */
	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	d = cl_spawn(join_rt, &sa, nothing, NULL);
	cr_assert_not_null(d);
	cr_assert_eq(cl_join_timeout(d, &r, 1000), -1, "a detached task joined");
	cr_assert_eq(errno, EINVAL);
	/* itself (EDEADLK), and a task another join waits for (EINVAL) */
	joinee = spawn_pinned(join_rt, 1, wait_gate, (void *)10);
	h = spawn_pinned(join_rt, 0, join_self_then_joinee, NULL);
	cr_assert(joinee && h);
	/* the task's join claimed the joinee's handle (its joined bit) */
	while (!(CL_ATOMIC_LOAD(&cl__rt_handle_task(joinee)->keep.jgen, CL_ACQUIRE) & 1u))
		cl__backoff(&spins, CL__BACKOFF_SPINS);
	cr_assert_eq(cl_join_timeout(joinee, &r, 1000), -1, "joined while another join waits");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_join(joinee, &r), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(r, (void *)-1, "@ret written by a refused join");
	cr_assert_eq(cl_chan_send(gate, &v), 0);
	cr_assert_eq(cl_join_timeout(h, &r, 10000000000ULL), 0);
	cr_assert_null(r, "%s", (const char *)r);
	/* joined: a second join of either handle is refused */
	cr_assert_eq(cl_join_timeout(h, &r, 1000), -1, "a task joined twice");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_join_timeout(joinee, &r, 1000), -1, "a task joined twice");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_chan_destroy(gate), 0);
	cr_assert_eq(cl_runtime_destroy(join_rt), 0);
}

/*
 * An exit racing the join's expiry, forced at the timer's points (on
 * worker 0's thread, outside any task): the action opens the gate and
 * waits until the joinee has exited on worker 1. At 70 (the timer off the
 * wheel, join_lock not yet taken) the exit finds the joiner's record and
 * wins: the join returns 0 with the result. At 71 (the timer took the
 * record) the exit finds none: the join times out and a later cl_join()
 * gets the result. Every joinee is joined exactly once either way.
 */
static struct cl_rt_task *race_h;
static long race_word;

static void open_gate_wait_exit(void)
{
	struct cl_rt_task *t = cl__rt_handle_task(race_h);
	unsigned int spins = 0;

	if (cl_chan_trysend(gate, &race_word) != 0)
		return; /* (not reached: the gate is empty each round) */
	while (!CL_ATOMIC_LOAD(&t->exited, CL_ACQUIRE))
		cl__backoff(&spins, CL__BACKOFF_SPINS);
}

static atomic_long join_won, timer_won, plain_timeouts;

static void *join_rounds(void *p)
{
	long n = (long)(intptr_t)p;

	for (round_no = 0; round_no < n; round_no++) {
		int mode = (int)(round_no % 3), rc;
		long before = atomic_load(&acted);
		void *r = NULL;

		race_word = round_no;
		race_h = spawn_pinned(join_rt, 1, wait_gate, (void *)(intptr_t)1000);
		if (!race_h)
			return (void *)"spawn";
		if (mode)
			atomic_store(&armed, mode == 1 ? 70 : 71);
		rc = cl_join_timeout(race_h, &r, 2000);
		atomic_store(&armed, 0);
		if (rc != 0 && errno != ETIMEDOUT)
			return (void *)"join_timeout failed, not with ETIMEDOUT";
		if (atomic_load(&acted) != before) { /* the action ran: the joinee exited in it */
			if (mode == 1 && rc != 0)
				return (void *)"an exit in window 70 did not end the join";
			if (mode == 2 && rc == 0)
				return (void *)"an exit in window 71 ended a join the timer had ended";
			atomic_fetch_add(rc ? &timer_won : &join_won, 1);
		} else if (rc == 0) {
			return (void *)"joined a task nobody let go";
		} else {
			atomic_fetch_add(&plain_timeouts, 1);
			if (cl_chan_send(gate, &race_word) != 0)
				return (void *)"send";
		}
		if (rc) { /* timed out: still joinable, its result kept */
			if (cl_join(race_h, &r) != 0)
				return (void *)"a timed-out join left the task unjoinable";
		}
		if (r != (void *)(intptr_t)(round_no + 1000))
			return (void *)"not the joinee's result";
		if (cl_join(race_h, &r) != -1 || errno != EINVAL)
			return (void *)"a task joined twice";
	}
	return NULL;
}

Test(sched_runtime_timeout, exit_racing_the_join_timeout_is_delivered_once)
{
	long n = rounds(100000) / 10;
	struct cl_rt_task *h;
	const char *err = NULL;

	join_rt = new_rt(2);
	gate = cl_chan_create(sizeof(long), 1);
	action = open_gate_wait_exit;
	atomic_store(&acted, 0);
	atomic_store(&join_won, 0);
	atomic_store(&timer_won, 0);
	atomic_store(&plain_timeouts, 0);
	h = spawn_pinned(join_rt, 0, join_rounds, (void *)(intptr_t)n);
	cr_assert_not_null(h);
	cr_assert_eq(cl_join(h, (void **)&err), 0);
	cr_assert_null(err, "round %ld: %s", round_no, err);
	cr_log_info("%ld rounds: %ld joins won in window 70, %ld timeouts in window 71, %ld plain timeouts", n,
		    atomic_load(&join_won), atomic_load(&timer_won), atomic_load(&plain_timeouts));
	/* each window was hit in (nearly) every round armed for it */
	cr_assert_gt(atomic_load(&join_won), n / 4, "the exit never won at point 70");
	cr_assert_gt(atomic_load(&timer_won), n / 4, "the timer never won at point 71");
	cr_assert_gt(atomic_load(&plain_timeouts), n / 4);
	cr_assert_eq(cl_chan_destroy(gate), 0);
	cr_assert_eq(cl_runtime_destroy(join_rt), 0);
}

/*
 * Without hooks: joinees return after a varying number of yields and a
 * varying sleep, joiners
 * join them with short timeouts, again and again until joined: a task on
 * worker 0 joins joinees on worker 1 (the exit path wakes it remotely,
 * cl__rt_finish()) and on its own worker (cl__rt_exit_wake_local()), and
 * this thread joins joinees on worker 1. Each result is taken once.
 */
static void *yield_then_return(void *p)
{
	long k = (long)(intptr_t)p;

	for (long i = 0; i < k % 13; i++)
		cl_yield();
	if (k & 1) /* a varying delay in which the joiner's timer may come due */
		cl_sleep_ns((uint64_t)(k % 7) * 1500);
	return (void *)(intptr_t)(k + 1);
}

static const char *join_with_short_timeouts(long n, unsigned int worker, long *timeouts)
{
	for (long k = 0; k < n; k++) {
		struct cl_rt_task *h = spawn_pinned(join_rt, worker, yield_then_return, (void *)(intptr_t)k);
		void *r = NULL;

		if (!h)
			return "spawn";
		while (cl_join_timeout(h, &r, 1000 + (uint64_t)(k % 5) * 3000) != 0) {
			if (errno != ETIMEDOUT)
				return "join_timeout failed, not with ETIMEDOUT";
			(*timeouts)++;
		}
		if (r != (void *)(intptr_t)(k + 1))
			return "not the joinee's result";
		if (cl_join_timeout(h, &r, 0) != -1 || errno != EINVAL)
			return "a task joined twice";
	}
	return NULL;
}

static void *join_short_task(void *p)
{
	long timeouts = 0, local = 0;
	const char *err = join_with_short_timeouts((long)(intptr_t)p, 1, &timeouts);

	if (!err)
		err = join_with_short_timeouts((long)(intptr_t)p, 0, &local);
	cr_log_info("task: %ld join timeouts (joinees on another worker), %ld (on its own)", timeouts, local);
	return (void *)err;
}

Test(sched_runtime_timeout, join_timeouts_beside_exits_take_each_result_once)
{
	long n = rounds(100000) / 20, timeouts = 0;
	struct cl_rt_task *h;
	const char *err = NULL;

	join_rt = new_rt(2);
	h = spawn_pinned(join_rt, 0, join_short_task, (void *)(intptr_t)n);
	cr_assert_not_null(h);
	cr_assert_eq(cl_join(h, (void **)&err), 0);
	cr_assert_null(err, "from a task: %s", err);
	err = join_with_short_timeouts(n, 1, &timeouts);
	cr_assert_null(err, "from a thread: %s", err);
	cr_log_info("thread: %ld join timeouts", timeouts);
	cr_assert_eq(cl_runtime_destroy(join_rt), 0);
}
