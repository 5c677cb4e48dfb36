/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_preempt.c - preemption in the M:N runtime:
 * a ping-pong pair beside a task that spins without ever yielding or
 * calling the runtime, on one worker, completes its round trips while the
 * spinner spins (the tick's signal preempts it); cl_preempt_disable()
 * keeps a task running past its slice and cl_preempt_enable() then yields
 * at once; CL_RUNTIME_NO_PREEMPT turns the tick off.
 */
#include <stdatomic.h>

#include "cl_test.h"

#include <cachelocal/sched/runtime.h>

static struct cl_runtime *new_rt(unsigned int flags)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = 1;
	a.flags = flags | CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

/* ---- a spinner beside a pair ---- */

static atomic_int stop_spin;
static atomic_long spins;

static void *spinner(void *p)
{
	(void)p;
	while (!atomic_load_explicit(&stop_spin, memory_order_relaxed))
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
	return NULL;
}

struct pair {
	struct cl_chan *ab, *ba;
	int rounds;
};

static void *ping(void *p)
{
	struct pair *pr = (struct pair *)p;
	int v = 0;

	/* start only once the spinner runs, so that it has to be preempted */
	while (!atomic_load(&spins))
		cl_yield();
	for (int i = 0; i < pr->rounds; i++)
		if (cl_chan_send(pr->ab, &i) || cl_chan_recv(pr->ba, &v) || v != i)
			return (void *)1;
	atomic_store(&stop_spin, 1);
	return NULL;
}

static void *pong(void *p)
{
	struct pair *pr = (struct pair *)p;
	int v;

	for (int i = 0; i < pr->rounds; i++)
		if (cl_chan_recv(pr->ab, &v) || cl_chan_send(pr->ba, &v))
			return (void *)1;
	return NULL;
}

Test(sched_runtime_preempt, pair_round_trips_beside_a_task_that_never_yields, .timeout = 120)
{
	struct cl_runtime *rt;
	struct cl_rt_task *s, *a, *b;
	struct pair pr;
	void *ra = (void *)2, *rb = (void *)2;

#ifdef CL_HAVE_TSAN
	cr_skip_test("ThreadSanitizer runs signal handlers from its interceptors only: "
		     "a task that calls nothing is not preempted (marking only)");
#endif
	rt = new_rt(0);
	pr.ab = cl_chan_create(sizeof(int), 1);
	pr.ba = cl_chan_create(sizeof(int), 1);
	pr.rounds = 200;
	atomic_store(&stop_spin, 0);
	atomic_store(&spins, 0);
	s = cl_spawn(rt, NULL, spinner, NULL);
	a = cl_spawn(rt, NULL, ping, &pr);
	b = cl_spawn(rt, NULL, pong, &pr);
	cr_assert(s && a && b);
	cr_assert_eq(cl_join(a, &ra), 0);
	cr_assert_eq(cl_join(b, &rb), 0);
	cr_assert_null(ra, "ping lost a round trip");
	cr_assert_null(rb);
	cr_assert_eq(cl_join(s, NULL), 0);
	cr_assert_gt(rt->workers[0].nr_preempts, 0, "the spinner was never preempted by the signal");
	cl_chan_destroy(pr.ab);
	cl_chan_destroy(pr.ba);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- cl_preempt_disable() ---- */

static atomic_int other_ran;

static void *other(void *p)
{
	atomic_store(&other_ran, 1);
	return p;
}

/* Returns 0 if the other task stayed out of the disabled section and ran at
 * cl_preempt_enable(). */
static void *holder(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;
	struct cl_rt_task *o;
	uintptr_t bad = 0;

	cl_preempt_disable();
	o = cl_spawn(rt, NULL, other, NULL);
	/* spin until the tick marked this worker: the slice is over */
	while (!CL_ATOMIC_LOAD(&cl_self()->w->preempt_pending, CL_RELAXED))
		;
	bad |= (uintptr_t)atomic_load(&other_ran); /* must not have run */
	cl_preempt_enable();
	bad |= (uintptr_t)!atomic_load(&other_ran) << 1; /* must have run at enable */
	cl_join(o, NULL);
	return (void *)bad;
}

Test(sched_runtime_preempt, preempt_disable_defers_to_enable, .timeout = 60)
{
	struct cl_runtime *rt = new_rt(0);
	void *r = (void *)4;

	atomic_store(&other_ran, 0);
	cr_assert_eq(cl_join(cl_spawn(rt, NULL, holder, rt), &r), 0);
	cr_assert_eq((uintptr_t)r, 0, "%s",
		     (uintptr_t)r & 1 ? "the other task ran inside the disabled section"
				      : "cl_preempt_enable() did not yield after the slice");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_preempt, no_preempt_flag_starts_no_tick)
{
	struct cl_runtime *rt = new_rt(CL_RUNTIME_NO_PREEMPT);

	cr_assert_eq(rt->tick_started, 0);
	cr_assert_eq(rt->slice_ns, 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
