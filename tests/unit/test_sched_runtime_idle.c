/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_idle.c - an idle runtime sleeps without
 * timers, and loses nothing by it: a worker sleeps on its futex with no
 * timeout, so a wakeup lost in the window between its decision to sleep
 * and its wait would leave a task queued forever. The window is forced
 * with the CL_INJECT() points, never with sleeps:
 *   68  a worker announced itself asleep (rq lock released), not yet waiting
 *   69  the tick set tick_parked, every worker not looked at again yet
 * At 68 the hook (on the worker's thread, outside any task) spawns a task
 * onto that worker, or wakes a task blocked on a channel there (a remote
 * wakeup), and the task must run. At 69 it starts a task that never
 * yields beside another, which runs only if the tick, about to park,
 * stays up and preempts it. With every worker asleep, the tick parks and
 * the next spawn wakes it; a task queued behind a busy worker is pulled
 * by a sleeping one that the tick kicks (the idle balancer), with no
 * timer on the sleeper's side.
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <sched.h>
#include <time.h>

#include <cachelocal/sched/runtime.h>

/* ---- helpers ---- */

/* Wait until @cond(@arg) holds, giving the CPU away; 0 if it still does
 * not after 10 s (what a lost wakeup looks like here). */
static int wait_until(int (*cond)(void *), void *arg)
{
	time_t t0 = time(NULL);

	while (!cond(arg)) {
		if (time(NULL) - t0 > 10)
			return 0;
		sched_yield();
	}
	return 1;
}

static int flag_set(void *p)
{
	return atomic_load((atomic_int *)p) != 0;
}

static int wait_flag(atomic_int *flag)
{
	return wait_until(flag_set, flag);
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

static int every_worker_sleeping(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;

	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (atomic_load((atomic_int *)&rt->workers[i].sleeping) != 1)
			return 0;
	return 1;
}

/* Are all of @rt's workers asleep (and so the runtime idle)? Within 10 s. */
static int all_asleep(struct cl_runtime *rt)
{
	return wait_until(every_worker_sleeping, rt);
}

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, int pin,
				   void *(*fn)(void *), void *arg)
{
	struct cl_spawn_attr sa;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = pin;
	return cl_spawn(rt, &sa, fn, arg);
}

/* ---- the hook ---- */

static atomic_int armed;      /* the point whose next pass acts (68, 69), 0: none */
static atomic_int acted;      /* ... and it did */
static int armed_worker = -1; /* point 68: only on this worker's thread (-1: any) */
static void (*action)(void);  /* what it does there */
static struct cl_runtime *hook_rt;

static void inject(int n)
{
	if (n != atomic_load(&armed))
		return;
	if (n == 68 && armed_worker >= 0 &&
	    !pthread_equal(pthread_self(), hook_rt->workers[armed_worker].thread))
		return;
	if (atomic_exchange(&armed, 0) != n)
		return;
	action();
	atomic_store(&acted, 1);
}

static void arm(struct cl_runtime *rt, int point, int worker, void (*fn)(void))
{
	hook_rt = rt;
	armed_worker = worker;
	action = fn;
	atomic_store(&acted, 0);
	atomic_store(&armed, point);
}

/* ---- a wakeup in the window before a worker's sleep (point 68) ---- */

static atomic_int ran;
static struct cl_rt_task *spawned;

static void *note_ran(void *p)
{
	(void)p;
	atomic_store(&ran, 1);
	return NULL;
}

/* On the worker's thread in its sleep window, outside any task: an outside spawn. */
static void spawn_in_window(void)
{
	spawned = spawn_on(hook_rt, (unsigned int)(armed_worker < 0 ? 0 : armed_worker), 1, note_ran, NULL);
}

/* With every worker of a fresh runtime asleep, wake worker @w without work
 * and arm the hook: its next pass through point 68, on its way back to
 * sleep, spawns onto it, which must then run the task. */
static void spawn_while_asleep(unsigned int nr_workers, unsigned int w)
{
	struct cl_runtime *rt = new_rt(nr_workers, 0);

	cr_assert(all_asleep(rt));
	atomic_store(&ran, 0);
	spawned = NULL;
	arm(rt, 68, (int)w, spawn_in_window);
	cl__rt_kick(&rt->workers[w]);
	cr_assert(wait_flag(&acted), "worker %u never reached its sleep window", w);
	cr_assert_not_null(spawned, "cl_spawn in the window: %s", strerror(errno));
	cr_assert(wait_flag(&ran), "a task spawned while worker %u went to sleep never ran (lost wakeup)", w);
	cr_assert_eq(cl_join(spawned, NULL), 0);
	cr_assert(all_asleep(rt));
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_idle, task_spawned_while_the_only_worker_goes_to_sleep_runs)
{
	spawn_while_asleep(1, 0);
}

Test(sched_runtime_idle, task_spawned_while_the_last_awake_worker_goes_to_sleep_runs)
{
	spawn_while_asleep(2, 1);
}

/* The same for a remote wakeup: a receiver blocked on worker 0, woken by an
 * outside send (a push on the worker's remote wake list) in the window. */
static struct cl_chan *chan;

static void *receiver(void *p)
{
	int v = 0;

	(void)p;
	if (cl_chan_recv(chan, &v) == 0 && v == 42)
		atomic_store(&ran, 1);
	return NULL;
}

static void send_in_window(void)
{
	int v = 42;

	(void)cl_chan_trysend(chan, &v);
}

Test(sched_runtime_idle, task_woken_while_the_worker_goes_to_sleep_runs)
{
	struct cl_runtime *rt = new_rt(1, 0);
	struct cl_rt_task *t;

	chan = cl_chan_create(sizeof(int), 1);
	cr_assert_not_null(chan);
	atomic_store(&ran, 0);
	t = spawn_on(rt, 0, 1, receiver, NULL);
	cr_assert_not_null(t);
	cr_assert(all_asleep(rt), "the receiver never blocked");
	/* asleep with the receiver blocked: wake the worker without work, so
	 * that it passes point 68 again with the hook armed */
	arm(rt, 68, 0, send_in_window);
	cl__rt_kick(&rt->workers[0]);
	cr_assert(wait_flag(&acted), "the worker never reached its sleep window");
	cr_assert(wait_flag(&ran), "a task woken while its worker went to sleep never ran (lost wakeup)");
	cr_assert_eq(cl_join(t, NULL), 0);
	cr_assert_eq(cl_chan_destroy(chan), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- the tick parks while every worker sleeps, and comes back ---- */

static atomic_int hog_running;

/* Never yields until the task it spawns beside itself on its worker ran:
 * only the tick (a slice mark, or the wake mark of the task waiting behind
 * it) can preempt it for that one. It acts on a mark at its runtime calls
 * too (cl_preempt_enable()), where ThreadSanitizer builds, which send no
 * preemption signal, see it. */
static void *hog(void *p)
{
	struct cl_rt_task *t;

	atomic_store(&hog_running, 1);
	t = cl_spawn((struct cl_runtime *)p, NULL, note_ran, NULL);
	if (!t)
		return (void *)1;
	while (!atomic_load(&ran)) {
		cl_preempt_disable();
		cl_preempt_enable();
	}
	return cl_join(t, NULL) ? (void *)1 : NULL;
}

static struct cl_rt_task *hog_task;

static void start_hog(struct cl_runtime *rt)
{
	atomic_store(&ran, 0);
	atomic_store(&hog_running, 0);
	hog_task = spawn_on(rt, 0, 1, hog, rt);
	cr_assert_not_null(hog_task);
}

static void finish_hog(struct cl_runtime *rt)
{
	void *r = (void *)1;

	cr_assert(wait_flag(&ran), "the task beside one that never yields never ran: no tick");
	cr_assert_eq(cl_join(hog_task, &r), 0);
	cr_assert_null(r);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_idle, idle_runtime_parks_its_tick_and_a_spawn_restarts_it)
{
	struct cl_runtime *rt = new_rt(1, 0);

	cr_assert(all_asleep(rt));
	cr_assert(wait_flag((atomic_int *)&rt->tick_parked), "the tick never parked with every worker asleep");
	start_hog(rt);
	finish_hog(rt);
}

/* At point 69 (on the tick's thread): a worker wakes and runs the hog. */
static void hog_in_window(void)
{
	start_hog(hook_rt);
	(void)wait_flag(&hog_running);
}

static void *nothing(void *p)
{
	return p;
}

Test(sched_runtime_idle, tick_about_to_park_as_a_worker_wakes_stays_up)
{
	struct cl_runtime *rt = new_rt(1, 0);

	arm(rt, 69, -1, hog_in_window);
	/* The tick may have parked before the hook was armed (a preempted
	 * test thread): a task wakes a worker, which restarts the tick, so its
	 * next park, once the worker sleeps again, passes the armed point. */
	cr_assert_eq(cl_join(cl_spawn(rt, NULL, nothing, NULL), NULL), 0);
	cr_assert(wait_flag(&acted), "the tick never came to park");
	cr_assert(atomic_load(&hog_running), "the hog spawned in the tick's window never ran");
	finish_hog(rt);
}

/* ---- the idle balancer: a sleeper pulls what waits behind a busy worker ---- */

static atomic_int spin_stop;

static void *spinner(void *p)
{
	(void)p;
	atomic_store(&hog_running, 1);
	while (!atomic_load(&spin_stop))
		;
	return NULL;
}

Test(sched_runtime_idle, sleeping_worker_pulls_a_task_queued_behind_a_busy_one)
{
	/* no preemption: the spinner keeps worker 0 until the probe ran, and
	 * the probe, queued there from outside (no kick of an idle worker),
	 * runs only if a sleeping worker 1, woken by the tick, pulls it */
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_NO_PREEMPT);
	struct cl_rt_task *s, *p;

	cr_assert(all_asleep(rt));
	atomic_store(&spin_stop, 0);
	atomic_store(&hog_running, 0);
	atomic_store(&ran, 0);
	s = spawn_on(rt, 0, 1, spinner, NULL);
	cr_assert_not_null(s);
	cr_assert(wait_flag(&hog_running));
	p = spawn_on(rt, 0, 0, note_ran, NULL); /* free to move */
	cr_assert_not_null(p);
	cr_assert(wait_flag(&ran), "a task queued behind a busy worker was never pulled by a sleeping one");
	atomic_store(&spin_stop, 1);
	cr_assert_eq(cl_join(p, NULL), 0);
	cr_assert_eq(cl_join(s, NULL), 0);
	cr_assert_eq(cl_runtime_shutdown(rt), 0); /* the tick joined: its counter is ours to read */
	cr_assert_gt(rt->nr_balance_kicks, 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- a worker whose idle periods are long sleeps without a spin ---- */

static struct cl_chan *late_chan;
static atomic_int late_got;

/* Ten timer sleeps of 2 ms (the worker's idle periods), then a wait for a
 * message from outside. */
static void *sleep_then_recv(void *p)
{
	int v = 0;

	(void)p;
	for (int i = 0; i < 10; i++)
		if (cl_sleep_ns(2000000))
			return (void *)"cl_sleep_ns";
	atomic_store(&late_got, -1); /* about to wait */
	if (cl_chan_recv(late_chan, &v) == 0)
		atomic_store(&late_got, v);
	return NULL;
}

static int late_waiting(void *p)
{
	(void)p;
	return atomic_load(&late_got) == -1;
}

/*
 * After idle periods averaging more than CL__RT_SPIN_LONG_IDLE spins, a
 * worker goes to sleep without spinning first (nr_spin_long_idle), and a
 * wakeup from outside still reaches it. Without the rule it spins 50 us
 * after every 2 ms timer wakeup.
 */
Test(sched_runtime_idle, worker_with_long_idle_periods_sleeps_without_a_spin_and_still_wakes)
{
	struct cl_runtime *rt = new_rt(1, 0);
	struct cl_rt_task *t;
	void *ret = (void *)"not joined";
	int v = 7;

	late_chan = cl_chan_create(sizeof(int), 1);
	cr_assert_not_null(late_chan);
	atomic_store(&late_got, 0);
	t = spawn_on(rt, 0, 1, sleep_then_recv, NULL);
	cr_assert_not_null(t);
	cr_assert(wait_until(late_waiting, NULL), "the task never got through its sleeps");
	cr_assert(all_asleep(rt));
	cr_assert_eq(cl_chan_send(late_chan, &v), 0);
	cr_assert_eq(cl_join(t, &ret), 0);
	cr_assert_null(ret, "%s failed", (const char *)ret);
	cr_assert_eq(atomic_load(&late_got), 7, "the message to the sleeping worker's task: %d",
		     atomic_load(&late_got));
	cr_assert_eq(cl_runtime_shutdown(rt), 0); /* the workers joined: their counters are ours */
	if (rt->spin_ns != CL_RUNTIME_NO_SPIN) /* (valgrind: no spin at all) */
		cr_assert_gt(rt->workers[0].avg_idle_ns, (uint64_t)CL__RT_SPIN_LONG_IDLE * rt->spin_ns);
	if (rt->spin_ns != CL_RUNTIME_NO_SPIN)
		cr_assert_gt(rt->workers[0].nr_spin_long_idle, 0,
			     "avg idle %llu ns, yet every idle period began with a spin",
			     (unsigned long long)rt->workers[0].avg_idle_ns);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	cr_assert_eq(cl_chan_destroy(late_chan), 0);
}
