/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_server_api.c - what a server takes from the
 * runtime beside I/O: TCP by "host:port" (cl_listen_tcp(), cl_dial_tcp(),
 * cl_sock_name()), signals as a channel (cl_signal_chan(): delivered,
 * refused, closed at shutdown), the wait-group and the clock.
 */
#include "cl_test.h"

#include <signal.h>
#include <unistd.h>

#include <cachelocal/sched/runtime.h>

static struct cl_runtime *new_rt(unsigned int workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static long run(struct cl_runtime *rt, void *(*fn)(void *), void *arg)
{
	struct cl_rt_task *t = cl_spawn(rt, NULL, fn, arg);
	void *ret = (void *)-1;

	cr_assert_not_null(t);
	cr_assert_eq(cl_join(t, &ret), 0);
	return (long)(intptr_t)ret;
}

/* ---- TCP by "host:port" ---- */

static void *echo_once(void *p)
{
	int c = cl_accept((int)(intptr_t)p, NULL, NULL);
	char b[16];
	ssize_t n;

	if (c < 0)
		return (void *)-1;
	n = cl_read(c, b, sizeof(b));
	if (n > 0)
		(void)cl_write(c, b, (size_t)n);
	cl_close(c);
	return NULL;
}

static void *dial_task(void *p)
{
	int ls = cl_listen_tcp("127.0.0.1:0", 0), c, fail = 0;
	char name[64], b[16];
	struct cl_spawn_attr sa;
	struct cl_rt_task *srv;

	(void)p;
	if (ls < 0 || cl_sock_name(ls, name, sizeof(name)) != 0 || strncmp(name, "127.0.0.1:", 10) != 0 ||
	    atoi(name + 10) <= 0)
		return (void *)1;
	memset(&sa, 0, sizeof(sa));
	srv = cl_spawn(cl_self()->rt, &sa, echo_once, (void *)(intptr_t)ls);
	c = cl_dial_tcp(name, 1000000000ULL);
	fail |= (c < 0) << 1;
	if (c >= 0) {
		fail |= (cl_write(c, "ping", 4) != 4) << 2;
		fail |= (cl_read(c, b, sizeof(b)) != 4 || memcmp(b, "ping", 4) != 0) << 3;
		cl_close(c);
	}
	fail |= (!srv || cl_join(srv, NULL) != 0) << 4;
	cl_close(ls);
	/* refused: nothing listens there any more */
	errno = 0;
	fail |= (cl_dial_tcp(name, 1000000000ULL) != -1 || errno != ECONNREFUSED) << 5;
	/* a name that resolves (off the worker), a v6 literal */
	c = cl_listen_tcp("localhost:0", 4);
	fail |= (c < 0) << 6;
	if (c >= 0)
		close(c);
	return (void *)(intptr_t)fail;
}

Test(sched_runtime_server_api, listen_dial_and_name_on_loopback, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(2);
	long r = run(rt, dial_task, NULL);

	cr_assert_eq(r, 0, "failed checks (bits: listen/name, dial, write, read, join, refused, localhost): %#lx", r);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_server_api, bad_host_port_strings_are_einval)
{
	static const char *const bad[] = { "7070", "127.0.0.1:", "127.0.0.1:notaport", "no.such.host.invalid:1",
					   "999.1.1.1:80" };
	char b[4];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_eq(cl_listen_tcp(bad[i], 1), -1, "%s", bad[i]);
		cr_assert(errno == EINVAL || errno == EAGAIN, "%s: %s", bad[i], strerror(errno));
	}
	errno = 0;
	cr_assert_eq(cl_listen_tcp(NULL, 1), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_sock_name(0, NULL, 8), -1);
	cr_assert_eq(errno, EINVAL);
	{
		int ls = cl_listen_tcp("127.0.0.1:0", 1);

		cr_assert_geq(ls, 0);
		errno = 0;
		cr_assert_eq(cl_sock_name(ls, b, sizeof(b)), -1);
		cr_assert_eq(errno, ENOSPC);
		close(ls);
	}
}

/* ---- signals as a channel ---- */

static struct cl_chan *sig_ch;

static void *sig_receiver(void *p)
{
	int want = (int)(intptr_t)p, got = 0;

	/* raised from a thread outside the runtime (the test's main thread) */
	if (cl_chan_recv_timeout(sig_ch, &got, 10000000000ULL) != 0)
		return (void *)-1;
	return (void *)(intptr_t)(got == want ? 0 : got);
}

Test(sched_runtime_server_api, signals_arrive_on_the_channel_and_shutdown_closes_it, .timeout = 30)
{
	static const int sigs[] = { SIGUSR1, SIGUSR2 };
	struct cl_runtime *rt = new_rt(2);
	struct cl_rt_task *t;
	void *ret = (void *)-2;
	int v;

	sig_ch = cl_signal_chan(rt, sigs, 2, 4);
	cr_assert_not_null(sig_ch, "cl_signal_chan: %s", strerror(errno));
	errno = 0;
	cr_assert_null(cl_signal_chan(rt, sigs + 1, 1, 4), "SIGUSR2 has a channel already");
	cr_assert_eq(errno, EBUSY);
	for (int i = 0; i < 2; i++) {
		t = cl_spawn(rt, NULL, sig_receiver, (void *)(intptr_t)sigs[i]);
		cr_assert_not_null(t);
		cr_assert_eq(kill(getpid(), sigs[i]), 0);
		cr_assert_eq(cl_join(t, &ret), 0);
		cr_assert_null(ret, "signal %d: received %ld", sigs[i], (long)(intptr_t)ret);
	}
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	errno = 0;
	cr_assert_eq(cl_chan_tryrecv(sig_ch, &v), -1);
	cr_assert_eq(errno, EPIPE, "closed at shutdown: %s", strerror(errno));
	cr_assert_eq(cl_chan_destroy(sig_ch), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	/* the default action is back: another runtime may take the signals */
	rt = new_rt(1);
	sig_ch = cl_signal_chan(rt, sigs, 2, 1);
	cr_assert_not_null(sig_ch, "after shutdown: %s", strerror(errno));
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_chan_destroy(sig_ch), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_server_api, signals_the_runtime_needs_are_refused)
{
	struct cl_runtime *rt = new_rt(1);
	const int bad[] = { SIGKILL, SIGSTOP, SIGSEGV, CL_RUNTIME_PREEMPT_SIGNAL, 0, 65 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(cl_signal_chan(rt, &bad[i], 1, 1), "signal %d", bad[i]);
		cr_assert_eq(errno, EINVAL);
	}
	errno = 0;
	cr_assert_null(cl_signal_chan(rt, bad, 0, 1));
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- the wait-group ---- */

static struct cl_waitgroup wg;
static int wg_done;

static void *wg_worker(void *p)
{
	(void)p;
	cl_sleep_ns(1000000);
	__atomic_fetch_add(&wg_done, 1, __ATOMIC_RELAXED);
	cl_waitgroup_done(&wg);
	return NULL;
}

static void *wg_task(void *p)
{
	struct cl_spawn_attr sa;
	int fail = 0;

	(void)p;
	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	cl_waitgroup_init(&wg);
	fail |= (cl_waitgroup_wait_timeout(&wg, 0) != 0) << 0; /* empty: at once */
	cl_waitgroup_add(&wg, 8);
	for (int i = 0; i < 8; i++)
		fail |= !cl_spawn(cl_self()->rt, &sa, wg_worker, NULL) << 1;
	fail |= (cl_waitgroup_wait(&wg) != 0) << 2;
	fail |= (__atomic_load_n(&wg_done, __ATOMIC_RELAXED) != 8) << 3; /* all done before */
	cl_waitgroup_add(&wg, 1);
	errno = 0;
	fail |= (cl_waitgroup_wait_timeout(&wg, 1000000) != -1 || errno != ETIMEDOUT) << 4;
	errno = 0;
	fail |= (cl_waitgroup_add(&wg, -2) != -1 || errno != EINVAL || wg.count != 1) << 5;
	fail |= (cl_waitgroup_done(&wg) != 0 || cl_waitgroup_wait(&wg) != 0) << 6;
	return (void *)(intptr_t)fail;
}

Test(sched_runtime_server_api, waitgroup_waits_for_every_done, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(2);
	long r = run(rt, wg_task, NULL);

	cr_assert_eq(r, 0, "failed checks (bits): %#lx", r);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	errno = 0;
	cr_assert_eq(cl_waitgroup_wait(&wg), 0, "count 0: no wait, also outside a task");
	cl_waitgroup_add(&wg, 1);
	errno = 0;
	cr_assert_eq(cl_waitgroup_wait(&wg), -1);
	cr_assert_eq(errno, EPERM, "outside a task with work outstanding");
}

Test(sched_runtime_server_api, now_is_the_clock_of_sleep_until)
{
	uint64_t a = cl_now_ns(), b;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	b = cl_now_ns();
	cr_assert_leq(a, b);
	cr_assert_leq(a, (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
	cr_assert_geq(b, (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}
