/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_timer.c - per-worker timers (runtime
 * pieces timer.h and sleep.h): the timing wheel on its own (every timer
 * fires once, never early, never left behind, through every level), and
 * cl_sleep_ns()/cl_sleep_until() in tasks: a sleep never ends early; an
 * idle worker wakes for its timer with no tick to wake it and without
 * waking on a period; a busy worker fires its timers through the tick's
 * timer mark; sleeps on several workers, with tasks moving between them,
 * all end; shutdown waits for sleeping tasks instead of calling them
 * deadlocked; bad input and threads outside the runtime.
 */
#include <stdatomic.h>

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

/* Wait until *@flag reaches @n, giving the CPU away; 0 if it has not after
 * 20 s (what a lost timer looks like here). */
static int wait_count(atomic_int *flag, int n)
{
	time_t t0 = time(NULL);

	while (atomic_load(flag) < n) {
		if (time(NULL) - t0 > 20)
			return 0;
		sched_yield();
	}
	return 1;
}

static struct cl_runtime *new_rt(unsigned int nr_workers, unsigned int flags)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = nr_workers;
	a.flags = flags | CL_RUNTIME_UNPINNED;
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
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t, "cl_spawn: %s", strerror(errno));
	return t;
}

/* ---- the wheel alone ---- */

#define NR_TM 20000

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static struct cl__rt_timer tms[NR_TM];
static unsigned char tm_state[NR_TM]; /* 0 armed, 1 fired, 2 deleted */

/* A span that lands on every level: 2^(0..53) ticks. */
static uint64_t rnd_span(void)
{
	unsigned int bits = (unsigned int)(rnd() % 54);

	return rnd() & ((1ULL << bits) - 1);
}

Test(sched_runtime_timer, wheel_fires_every_timer_once_never_early_and_never_late)
{
	static struct cl__rt_wheel wh;
	uint64_t now = 1ULL << 40, armed = 0;
	unsigned int lvl, s, fired_total = 0, deleted = 0;
	int step;

	cl__rt_wheel_init(&wh, now);
	for (unsigned int i = 0; i < NR_TM; i++) {
		/* some in the past (due at once), most ahead on every level */
		uint64_t when = i % 50 == 0 ? now - (rnd() % 100) : now + rnd_span();

		cl__rt_wheel_add(&wh, &tms[i], when);
		tm_state[i] = 0;
		armed++;
	}
	cr_assert_eq(wh.nr, NR_TM);
	for (step = 0; armed && step < 100000; step++) {
		struct cl__rt_timer *tm;
		uint64_t min = UINT64_MAX, next;

		/* cancel a few */
		for (int k = 0; k < 3; k++) {
			unsigned int i = (unsigned int)(rnd() % NR_TM);

			if (tm_state[i] == 0) {
				cr_assert_eq(cl__rt_wheel_del(&wh, &tms[i]), 1);
				tm_state[i] = 2;
				armed--;
				deleted++;
			} else {
				cr_assert_eq(cl__rt_wheel_del(&wh, &tms[i]), 0, "a timer off the wheel deleted again");
			}
		}
		/* the next event is never after the earliest timer: an idle
		 * worker sleeping until it never sleeps past a timer */
		for (unsigned int i = 0; i < NR_TM; i++)
			if (tm_state[i] == 0 && (tms[i].when > wh.elapsed ? tms[i].when : wh.elapsed) < min)
				min = tms[i].when > wh.elapsed ? tms[i].when : wh.elapsed;
		next = cl__rt_wheel_next(&wh, &lvl, &s);
		if (armed)
			cr_assert_leq(next, min, "next event %llu after the earliest timer %llu",
				      (unsigned long long)next, (unsigned long long)min);
		else
			cr_assert_eq(next, CL__RT_TIMER_NONE);
		/* advance: small steps, to the next event, or far jumps */
		switch (rnd() % 4) {
		case 0:
			now += rnd() % 70;
			break;
		case 1:
			now = next != CL__RT_TIMER_NONE && next > now ? next : now + 1;
			break;
		case 2:
			now = min != UINT64_MAX && min > now ? min : now + 1;
			break;
		default:
			now += rnd_span() >> (rnd() % 40);
			break;
		}
		for (tm = cl__rt_wheel_expire(&wh, now); tm; tm = tm->next) {
			size_t i = (size_t)(tm - tms);

			cr_assert_lt(i, (size_t)NR_TM);
			cr_assert_eq(tm_state[i], 0, "timer %zu fired twice, or after it was deleted", i);
			cr_assert_leq(tm->when > now ? tm->when : 0, now, "timer %zu fired early", i);
			cr_assert_null(tm->pprev);
			tm_state[i] = 1;
			armed--;
			fired_total++;
		}
		/* none left behind: every timer still armed is due later */
		for (unsigned int i = 0; i < NR_TM; i++)
			if (tm_state[i] == 0)
				cr_assert_gt(tms[i].when, now, "timer %u due at %llu left on the wheel at %llu", i,
					     (unsigned long long)tms[i].when, (unsigned long long)now);
		cr_assert_eq(wh.nr, armed);
	}
	cr_assert_eq(armed, 0, "timers still armed after %d steps", step);
	cr_assert_eq(fired_total + deleted, NR_TM);
	for (unsigned int l = 0; l < CL__RT_TW_LEVELS; l++)
		cr_assert_eq(wh.occupied[l], 0);
}

/* ---- sleeping tasks ---- */

struct sleeper {
	uint64_t ns;       /* how long */
	int rounds;
	int ret;           /* the last non-zero return, 0 */
	int early;         /* sleeps that ended before their time */
	int moved;         /* rounds that ended on another worker than they began */
	unsigned int began; /* bit n: a sleep began on worker n (its timer on n's wheel) */
	uint64_t work_ns;  /* busy time after each sleep */
	atomic_int *done;
};

static void *sleep_task(void *p)
{
	struct sleeper *s = (struct sleeper *)p;

	for (int r = 0; r < s->rounds; r++) {
		uint64_t ns = s->ns ? s->ns : 1000 + mono_ns() % 200000;
		int w0 = cl_worker_id();
		uint64_t t0 = mono_ns();
		int ret = cl_sleep_ns(ns);

		s->began |= 1u << w0;
		if (ret)
			s->ret = ret;
		if (mono_ns() - t0 < ns)
			s->early++;
		s->moved += cl_worker_id() != w0;
		for (t0 = mono_ns(); mono_ns() - t0 < s->work_ns;) {
			cl_preempt_disable(); /* a runtime call: marks are acted on */
			cl_preempt_enable();
		}
		if (r % 3 == 0)
			cl_yield(); /* queued again: the balancer may move it */
	}
	atomic_fetch_add(s->done, 1);
	return NULL;
}

/* One worker and no preemption: there is no tick thread at all, so only
 * the worker's own futex timeout can end a sleep. */
Test(sched_runtime_timer, idle_worker_wakes_for_its_timer_with_no_tick)
{
	struct cl_runtime *rt = new_rt(1, CL_RUNTIME_NO_PREEMPT);
	static const uint64_t lens[] = { 50000, 1000000, 20000000 };
	atomic_int done = 0;

	cr_assert_eq(rt->tick_started, 0, "a tick thread runs: the test would not show the timeout");
	for (unsigned int i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct sleeper s = { lens[i], 3, 0, 0, 0, 0, 0, &done };
		struct cl_rt_task *t = spawn_on(rt, 0, sleep_task, &s);

		cr_assert(wait_count(&done, (int)i + 1), "a sleep of %llu ns never ended",
			  (unsigned long long)lens[i]);
		cr_assert_eq(cl_join(t, NULL), 0);
		cr_assert_eq(s.ret, 0);
		cr_assert_eq(s.early, 0, "a sleep of %llu ns ended early", (unsigned long long)lens[i]);
	}
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_gt(rt->workers[0].nr_timer_sleeps, 0, "the worker never slept with a timeout");
	/* at least the 20 ms ones (a slow host may pass a short deadline
	 * before the timer is armed: that sleep returns at once) */
	cr_assert_geq(rt->workers[0].nr_timers_fired, 3);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* A 300 ms sleep on an idle worker: it sleeps until the timer (a few
 * wakes at most, for the wheel's levels), not on a period. */
Test(sched_runtime_timer, idle_worker_does_not_wake_on_a_period_while_a_task_sleeps)
{
	struct cl_runtime *rt = new_rt(1, CL_RUNTIME_NO_PREEMPT);
	atomic_int done = 0;
	struct sleeper s = { 300000000, 1, 0, 0, 0, 0, 0, &done };
	struct cl_rt_task *t = spawn_on(rt, 0, sleep_task, &s);
	uint64_t sleeps;

	cr_assert(wait_count(&done, 1));
	cr_assert_eq(cl_join(t, NULL), 0);
	cr_assert_eq(s.early, 0);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	sleeps = rt->workers[0].nr_idle_sleeps;
	/* at start, one per level the timer moves down, after it */
	cr_assert_leq(sleeps, CL__RT_TW_LEVELS + 4, "%llu idle sleeps for one 300 ms timer",
		      (unsigned long long)sleeps);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* A task that never blocks beside a sleeper on one worker: the worker is
 * never idle, so only the tick's timer mark, acted on at the busy task's
 * runtime calls (cl_preempt_enable()) or by the preemption signal, fires
 * the timer. */
static atomic_int woke;

static void *sleep_once(void *p)
{
	(void)p;
	if (cl_sleep_ns(2000000) == 0)
		atomic_store(&woke, 1);
	return NULL;
}

static void *busy_until_woken(void *p)
{
	(void)p;
	while (!atomic_load(&woke)) {
		cl_preempt_disable();
		cl_preempt_enable();
	}
	return NULL;
}

Test(sched_runtime_timer, busy_worker_fires_a_timer_at_the_tick)
{
	struct cl_runtime *rt = new_rt(1, 0);
	struct cl_rt_task *a, *b;
	atomic_int none = 0;

	atomic_store(&woke, 0);
	a = spawn_on(rt, 0, sleep_once, NULL);
	b = spawn_on(rt, 0, busy_until_woken, NULL);
	cr_assert(wait_count(&woke, 1), "a timer of a busy worker never fired");
	(void)none;
	cr_assert_eq(cl_join(a, NULL), 0);
	cr_assert_eq(cl_join(b, NULL), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* Many tasks on two workers, spawned on worker 0 beside a pinned task
 * that never blocks there; each sleeps, then works a while: worker 0
 * gets more work than it runs, and worker 1 (kicked by the tick's
 * balancer) pulls queued sleepers over. A task's sleeps then begin on
 * either worker's wheel, and a task woken on one may run on the other;
 * every sleep ends, none early, and some task slept on both wheels. */
static atomic_int sleepers_done;

static void *hog_until_sleepers_done(void *p)
{
	int n = (int)(intptr_t)p;

	while (atomic_load(&sleepers_done) < n) {
		cl_preempt_disable();
		cl_preempt_enable();
	}
	return NULL;
}

Test(sched_runtime_timer, sleeps_on_several_workers_all_end_as_tasks_move)
{
	enum { N = 48, ROUNDS = 40 };
	struct cl_runtime *rt = new_rt(2, 0);
	static struct sleeper s[N];
	struct cl_rt_task *t[N], *hog;
	struct cl_spawn_attr sa;
	int moved = 0, both = 0;

	atomic_store(&sleepers_done, 0);
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0);
	sa.pin = 1;
	hog = cl_spawn(rt, &sa, hog_until_sleepers_done, (void *)(intptr_t)N);
	cr_assert_not_null(hog);
	for (int i = 0; i < N; i++) {
		s[i] = (struct sleeper){ 0, ROUNDS, 0, 0, 0, 0, 50000, &sleepers_done };
		t[i] = spawn_on(rt, 0, sleep_task, &s[i]);
	}
	cr_assert(wait_count(&sleepers_done, N), "%d of %d sleepers finished", atomic_load(&sleepers_done), N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(cl_join(t[i], NULL), 0);
		cr_assert_eq(s[i].ret, 0);
		cr_assert_eq(s[i].early, 0, "task %d: a sleep ended early", i);
		moved += s[i].moved;
		both += s[i].began == 3u;
	}
	cr_assert_eq(cl_join(hog, NULL), 0);
	cr_log_info("tasks that slept on both workers: %d of %d; sleeps that ended on another worker: %d of %d",
		    both, N, moved, N * ROUNDS);
	cr_assert_gt(both, 0, "no task slept on both workers: the test shows nothing about migration");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* Shutdown with tasks asleep on timers: they are not blocked for good
 * (their timers end the sleep), so shutdown waits for them instead of
 * failing with EDEADLK, and no timer is lost when the workers stop. */
static atomic_int slept;

static void *sleep_then_count(void *p)
{
	uint64_t ns = (uint64_t)(uintptr_t)p, t0 = mono_ns();

	if (cl_sleep_ns(ns) == 0 && mono_ns() - t0 >= ns)
		atomic_fetch_add(&slept, 1);
	return NULL;
}

Test(sched_runtime_timer, destroy_waits_for_tasks_asleep_on_timers)
{
	enum { N = 16 };
	struct cl_runtime *rt = new_rt(2, 0);
	struct cl_spawn_attr sa;

	atomic_store(&slept, 0);
	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	for (int i = 0; i < N; i++)
		cr_assert_not_null(cl_spawn(rt, &sa, sleep_then_count, (void *)(uintptr_t)(20000000u + 1000000u * (unsigned)i)));
	/* wait until they all sleep (both workers idle): the moment the
	 * deadlock detection looks at */
	for (time_t t0 = time(NULL); time(NULL) - t0 < 20;) {
		if (atomic_load((atomic_int *)&rt->workers[0].sleeping) &&
		    atomic_load((atomic_int *)&rt->workers[1].sleeping))
			break;
		sched_yield();
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0, "destroy with sleeping tasks: %s", strerror(errno));
	cr_assert_eq(atomic_load(&slept), N, "only %d of %d sleeps ended before destroy returned",
		     atomic_load(&slept), N);
}

/* ---- bad input, past deadlines, threads outside ---- */

static void *bad_input_in_a_task(void *p)
{
	int *bad = (int *)p;

	errno = 0;
	if (cl_sleep_until((uint64_t)INT64_MAX + 1) != -1 || errno != EINVAL)
		(*bad)++;
	errno = 0;
	if (cl_sleep_ns(UINT64_MAX) != -1 || errno != EINVAL)
		(*bad)++;
	if (cl_sleep_until(0) != 0 || cl_sleep_until(mono_ns() - 1) != 0 || cl_sleep_ns(0) != 0)
		(*bad)++;
	return NULL;
}

Test(sched_runtime_timer, bad_input_fails_and_a_past_deadline_returns_at_once)
{
	struct cl_runtime *rt = new_rt(1, 0);
	int bad = 0;
	struct cl_rt_task *t = spawn_on(rt, 0, bad_input_in_a_task, &bad);

	cr_assert_eq(cl_join(t, NULL), 0);
	cr_assert_eq(bad, 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	bad_input_in_a_task(&bad); /* a thread outside: the same */
	cr_assert_eq(bad, 0);
}

Test(sched_runtime_timer, sleep_outside_a_task_sleeps_the_thread)
{
	uint64_t t0 = mono_ns();

	cr_assert_eq(cl_sleep_ns(2000000), 0);
	cr_assert_geq(mono_ns() - t0, 2000000);
	t0 = mono_ns();
	cr_assert_eq(cl_sleep_until(t0 + 1000000), 0);
	cr_assert_geq(mono_ns(), t0 + 1000000);
}
