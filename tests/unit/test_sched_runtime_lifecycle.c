/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_lifecycle.c - the M:N runtime's lifecycle
 * under misuse and races: a spawn racing cl_runtime_shutdown() (never a
 * lost task, no spurious EDEADLK), shutdown from two threads at once,
 * destroy with blocked tasks (refused, everything left usable), zeroed
 * spawn attributes, a second join through a stale handle, mutex misuse,
 * out-of-range nice and stack sizes.
 *
 * The races are forced through the runtime's CL_INJECT() points, never
 * with sleeps:
 *   60  cl_spawn() from outside: admitted, not yet counted live
 *   61  cl_runtime_shutdown(): about to look at the live tasks
 *   62  cl_spawn() from outside: counted live, not yet queued
 *   63  cl_runtime_shutdown(): no task left, before stopping the workers
 *   64  the workers are being stopped (once per runtime)
 *   73  the clock's calibration, between a CLOCK_MONOTONIC reading and the
 *       tick counter's
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <pthread.h>
#include <sched.h>

#include <cachelocal/sched/runtime.h>

/* ---- the hook ---- */

static atomic_int armed;     /* the point that starts a racing shutdown, or 63 */
static atomic_int looks;     /* times a shutdown passed point 61 */
static atomic_int at_stop;   /* shutdowns that reached point 63 */
static atomic_int stops;     /* times the workers were stopped (point 64) */
static atomic_int shut_done; /* the racing shutdown returned */
static struct cl_runtime *race_rt;
static pthread_t shut_thread;
static int shut_ret, shut_errno;

static void *shutdown_thread(void *p)
{
	int r = cl_runtime_shutdown((struct cl_runtime *)p);

	shut_errno = errno;
	shut_ret = r;
	atomic_store(&shut_done, 1);
	return NULL;
}

static atomic_int calib_stall; /* point 73: stall every other reading */
static atomic_int calib_calls;

/*
 * At the armed spawn point: start a shutdown in another thread and hold
 * the spawn until that shutdown returned, or went round its loop twice
 * (it saw the spawn and waits for it). At 63: hold each shutdown until
 * two got there. At 73, while calib_stall is set: stall every other
 * reading 5 ms.
 */
static void inject(int n)
{
	if (n == 73 && atomic_load(&calib_stall) && atomic_fetch_add(&calib_calls, 1) % 2 == 0) {
		/* as if the kernel took the CPU away for 5 ms mid-pair */
		unsigned long long t0 = cl__now_ns();

		while (cl__now_ns() - t0 < 5000000ULL)
			;
	}
	if (n == 61)
		atomic_fetch_add(&looks, 1);
	if (n == 64)
		atomic_fetch_add(&stops, 1);
	if ((n == 60 || n == 62) && atomic_load(&armed) == n) {
		atomic_store(&armed, 0);
		if (pthread_create(&shut_thread, NULL, shutdown_thread, race_rt) != 0)
			abort();
		while (!atomic_load(&shut_done) && atomic_load(&looks) < 2)
			sched_yield();
	}
	if (n == 63 && atomic_load(&armed) == 63) {
		atomic_fetch_add(&at_stop, 1);
		while (atomic_load(&at_stop) < 2)
			sched_yield();
	}
}

static struct cl_runtime *new_rt(unsigned int workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	a.flags = CL_RUNTIME_UNPINNED;
	a.spin_ns = CL_RUNTIME_NO_SPIN;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static void arm(struct cl_runtime *rt, int point)
{
	race_rt = rt;
	atomic_store(&looks, 0);
	atomic_store(&at_stop, 0);
	atomic_store(&stops, 0);
	atomic_store(&shut_done, 0);
	atomic_store(&armed, point);
}

static atomic_int ran;

static void *mark_ran(void *p)
{
	atomic_fetch_add(&ran, 1);
	return p;
}

/* Every worker asleep on its futex (the runtime was just made idle). */
static void wait_all_asleep(struct cl_runtime *rt)
{
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		while (!CL_ATOMIC_LOAD(&rt->workers[i].sleeping, CL_SEQ_CST))
			sched_yield();
}

/* ---- the clock ---- */

/*
 * A calibration of the tick counter preempted between its CLOCK_MONOTONIC
 * reading and its tick reading (every other pair stalls 5 ms there) must
 * still give the runtime a clock that runs at CLOCK_MONOTONIC's rate: a
 * stall counted in the CLOCK_MONOTONIC span but not in the ticks makes it
 * run fast for the runtime's whole life, its slices and vruntimes with it
 * (the calibration read once at each end ran 166,000x fast here).
 */
Test(sched_runtime_lifecycle, a_preempted_clock_calibration_still_runs_at_the_monotonic_rate, .timeout = 30)
{
	struct cl_runtime *rt;
	uint64_t r0, r1;
	unsigned long long m0a, m0b, m1a, m1b;
	double lo, hi;
	int reliable = 0;

	atomic_store(&calib_calls, 0);
	atomic_store(&calib_stall, 1);
	rt = new_rt(1);
	atomic_store(&calib_stall, 0);
#ifdef CL__CTX_HAVE_TICKS
	reliable = cl__ctx_ticks_reliable();
#endif
	cr_log_info("tick counter %s; calibration: %d readings; the clock: %s",
		    reliable ? "reliable" : "not reliable (or none)", atomic_load(&calib_calls),
		    rt->use_ticks ? "the tick counter" : "CLOCK_MONOTONIC");
	if (reliable) /* the calibration ran, and through the stalls */
		cr_assert_gt(atomic_load(&calib_calls), 0, "the calibration never ran");
	else /* (an emulated x86_64 without constant_tsc: nothing to calibrate) */
		cr_assert(!rt->use_ticks && atomic_load(&calib_calls) == 0,
			  "a tick counter that is not reliable is used or calibrated");
	/* each runtime reading between two CLOCK_MONOTONIC ones: a stall of
	 * this thread (an emulator, a loaded host) widens the bounds, it does
	 * not fail the check */
	m0a = cl__now_ns();
	r0 = cl__rt_now_real(rt);
	m0b = cl__now_ns();
	while (cl__now_ns() - m0b < 50000000ULL)
		;
	m1a = cl__now_ns();
	r1 = cl__rt_now_real(rt);
	m1b = cl__now_ns();
	lo = (double)(r1 - r0) / (double)(m1b - m0a);
	hi = (double)(r1 - r0) / (double)(m1a - m0b);
	cr_log_info("runtime clock: %.4f to %.4f ns per CLOCK_MONOTONIC ns", lo, hi);
	cr_assert(lo < 1.02 && hi > 0.98, "the runtime's clock runs at %.3f to %.3fx CLOCK_MONOTONIC", lo,
		  hi);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- spawn vs shutdown ---- */

Test(sched_runtime_lifecycle, spawn_admitted_before_shutdown_is_never_lost, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t;
	int e;

	atomic_store(&ran, 0);
	arm(rt, 60);
	errno = 0;
	t = cl_spawn(rt, NULL, mark_ran, NULL);
	e = errno;
	pthread_join(shut_thread, NULL);
	cr_assert_eq(shut_ret, 0, "shutdown: %s", strerror(shut_errno));
	if (t)
		cr_assert_eq(atomic_load(&ran), 1, "spawn returned a task that never ran");
	else
		cr_assert_eq(e, EPIPE);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_lifecycle, spawn_in_flight_is_no_deadlock_for_shutdown, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t;

	atomic_store(&ran, 0);
	wait_all_asleep(rt);
	arm(rt, 62);
	t = cl_spawn(rt, NULL, mark_ran, NULL);
	pthread_join(shut_thread, NULL);
	cr_assert_eq(shut_ret, 0, "shutdown: %s (a task being spawned is not blocked)",
		     strerror(shut_errno));
	cr_assert_not_null(t);
	cr_assert_eq(atomic_load(&ran), 1);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

static void *recv_one(void *p)
{
	int v;

	if (cl_chan_recv((struct cl_chan *)p, &v) == 0)
		return (void *)1;
	return (void *)(uintptr_t)(errno == EPIPE ? 2 : 3);
}

Test(sched_runtime_lifecycle, spawn_after_shutdown_began_gives_epipe, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_rt_task *t = cl_spawn(rt, NULL, recv_one, c);
	void *r;

	cr_assert_not_null(t);
	errno = 0;
	cr_assert_eq(cl_runtime_shutdown(rt), -1);
	cr_assert_eq(errno, EDEADLK);
	errno = 0;
	cr_assert_null(cl_spawn(rt, NULL, mark_ran, NULL), "shutdown has begun");
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_close(c), 0);
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_eq((uintptr_t)r, 2);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_chan_destroy(c), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

static void *shutdown_caller(void *p)
{
	return (void *)(intptr_t)cl_runtime_shutdown((struct cl_runtime *)p);
}

Test(sched_runtime_lifecycle, concurrent_shutdowns_stop_the_workers_once, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(2);
	pthread_t th[2];
	void *r[2];

	arm(rt, 63);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, shutdown_caller, rt), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], &r[i]);
		cr_assert_eq((intptr_t)r[i], 0, "each shutdown returns 0");
	}
	atomic_store(&armed, 0);
	cr_assert_eq(atomic_load(&stops), 1, "workers stopped %d times", atomic_load(&stops));
	cr_assert_eq(cl_runtime_shutdown(rt), 0, "idempotent");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- destroy with blocked tasks ---- */

Test(sched_runtime_lifecycle, destroy_with_blocked_tasks_refuses_and_leaves_all_usable, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_rt_task *t[3];
	int v = 7;
	void *r;

	for (int i = 0; i < 3; i++)
		cr_assert_not_null(t[i] = cl_spawn(rt, NULL, recv_one, c));
	errno = 0;
	cr_assert_eq(cl_runtime_destroy(rt), -1);
	cr_assert_eq(errno, EDEADLK);
	/* the runtime, the channel and the tasks are all still there */
	cr_assert_eq(cl_chan_destroy(c), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_chan_trysend(c, &v), 0, "the send wakes one receiver");
	cr_assert_eq(cl_chan_close(c), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(cl_join(t[i], &r), 0);
	cr_assert_eq(cl_chan_destroy(c), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- spawn attributes ---- */

Test(sched_runtime_lifecycle, zeroed_spawn_attr_is_the_defaults)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_spawn_attr sa;
	unsigned int rr;

	memset(&sa, 0, sizeof(sa));
	sa.nice = 5;
	rr = CL_ATOMIC_LOAD(&rt->next_spawn, CL_RELAXED);
	cr_assert_not_null(cl_spawn(rt, &sa, mark_ran, NULL));
	cr_assert_eq(CL_ATOMIC_LOAD(&rt->next_spawn, CL_RELAXED), rr + 1,
		     "from outside, no worker named: round robin, not worker 0");
	memset(&sa, 0, sizeof(sa));
	sa.pin = 1;
	errno = 0;
	cr_assert_null(cl_spawn(rt, &sa, mark_ran, NULL), "pinned to no worker");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_lifecycle, nice_and_stack_size_out_of_range_give_einval)
{
	static const int bad_nice[] = { 20, 99, -21, -1000 };
	static const size_t bad_stack[] = { 1, 4096, (size_t)-1, (size_t)-4096, (size_t)1 << 62 };
	struct cl_runtime_attr a;
	struct cl_spawn_attr sa;
	struct cl_runtime *rt;

	for (size_t i = 0; i < sizeof(bad_stack) / sizeof(bad_stack[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.nr_workers = 1;
		a.stack_size = bad_stack[i];
		errno = 0;
		rt = cl_runtime_create(&a);
		cr_assert_null(rt, "stack_size %zu accepted", bad_stack[i]);
		cr_assert_eq(errno, EINVAL);
	}
	rt = new_rt(1);
	for (size_t i = 0; i < sizeof(bad_nice) / sizeof(bad_nice[0]); i++) {
		memset(&sa, 0, sizeof(sa));
		sa.nice = bad_nice[i];
		errno = 0;
		cr_assert_null(cl_spawn(rt, &sa, mark_ran, NULL), "nice %d accepted", bad_nice[i]);
		cr_assert_eq(errno, EINVAL);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- join ---- */

static void *ret_arg_plus_one(void *p)
{
	return (void *)((uintptr_t)p + 1);
}

Test(sched_runtime_lifecycle, second_join_and_join_after_reuse_give_einval)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t, *u;
	void *r = NULL;

	t = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)1);
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_eq((uintptr_t)r, 2);
	errno = 0;
	cr_assert_eq(cl_join(t, &r), -1, "joined twice");
	cr_assert_eq(errno, EINVAL);
	/* the descriptor goes to the next spawn; the stale handle must not reach it */
	for (int i = 0; i < 4; i++) {
		u = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)41);
		cr_assert_not_null(u);
		errno = 0;
		cr_assert_eq(cl_join(t, &r), -1, "a stale handle joined another task");
		cr_assert_eq(errno, EINVAL);
		r = NULL;
		cr_assert_eq(cl_join(u, &r), 0);
		cr_assert_eq((uintptr_t)r, 42);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- mutex misuse ---- */

static void *unlock_foreign(void *p)
{
	struct cl_mutex *m = (struct cl_mutex *)p;

	if (cl_mutex_unlock(m) != -1 || errno != EPERM) /* held by the main thread */
		return (void *)4;
	if (cl_mutex_trylock(m) == 0)
		return (void *)1; /* the unlock took it from its holder */
	return (void *)(uintptr_t)(errno == EBUSY ? 0 : 2);
}

Test(sched_runtime_lifecycle, mutex_unlock_by_a_non_holder_gives_eperm_and_leaves_it_held)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_mutex m;
	void *r = (void *)3;

	cl_mutex_init(&m);
	errno = 0;
	cr_assert_eq(cl_mutex_unlock(&m), -1, "not held");
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cr_assert_eq(cl_join(cl_spawn(rt, NULL, unlock_foreign, &m), &r), 0);
	cr_assert_eq((uintptr_t)r, 0, "a task that does not hold it released it");
	cr_assert_eq(cl_mutex_unlock(&m), 0, "its holder releases it");
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cr_assert_eq(cl_mutex_unlock(&m), 0);
	errno = 0;
	cr_assert_eq(cl_mutex_unlock(&m), -1, "released twice");
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
