/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_preempt.c - preemption in the M:N runtime:
 * a ping-pong pair beside a task that spins without ever yielding or
 * calling the runtime, on one worker, completes its round trips while the
 * spinner spins (the tick's signal preempts it); wakeup preemption: a task
 * woken from another worker preempts a spinner on its own worker, so a pair
 * split over two workers completes all its round trips within one slice of
 * the spinner; cl_preempt_disable() keeps a task running past its slice and
 * cl_preempt_enable() then yields at once; CL_RUNTIME_NO_PREEMPT turns the
 * tick off.
 */
#include <stdatomic.h>
#include <time.h>

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

/* On @rt's one worker: @spin beside a ping-pong pair of @rounds round
 * trips; all three joined, the pair's results checked. */
static void pair_beside(struct cl_runtime *rt, void *(*spin)(void *), int rounds)
{
	struct cl_rt_task *s, *a, *b;
	struct pair pr;
	void *ra = (void *)2, *rb = (void *)2;

	pr.ab = cl_chan_create(sizeof(int), 1);
	pr.ba = cl_chan_create(sizeof(int), 1);
	pr.rounds = rounds;
	atomic_store(&stop_spin, 0);
	atomic_store(&spins, 0);
	s = cl_spawn(rt, NULL, spin, NULL);
	a = cl_spawn(rt, NULL, ping, &pr);
	b = cl_spawn(rt, NULL, pong, &pr);
	cr_assert(s && a && b);
	cr_assert_eq(cl_join(a, &ra), 0);
	cr_assert_eq(cl_join(b, &rb), 0);
	cr_assert_null(ra, "ping lost a round trip");
	cr_assert_null(rb);
	cr_assert_eq(cl_join(s, NULL), 0);
	cl_chan_destroy(pr.ab);
	cl_chan_destroy(pr.ba);
}

Test(sched_runtime_preempt, pair_round_trips_beside_a_task_that_never_yields, .timeout = 120)
{
	struct cl_runtime *rt;

#ifdef CL_HAVE_TSAN
	cr_skip_test("ThreadSanitizer runs signal handlers from its interceptors only: "
		     "a task that calls nothing is not preempted (marking only)");
#endif
	rt = new_rt(0);
	pair_beside(rt, spinner, 200);
	cr_assert_gt(rt->workers[0].nr_preempts, 0, "the spinner was never preempted by the signal");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/*
 * A mark the signal could not act on (the task was not at a safe point
 * when it came: here a cl_preempt_disable() section left without the
 * runtime call that would act on it, as when the signal lands in the
 * runtime's own code and the task then spins) must not be lost: the tick
 * signals again while the task keeps its worker, and the pair beside it
 * goes on. Before, the tick signalled only when it set the mark, and the
 * spinner kept its worker for good. The spinner gives up by itself after
 * LOST_GIVE_UP_NS (the failure; far more slices than the pair needs).
 */
#define LOST_GIVE_UP_NS (20ull * 1000000000ull)
static atomic_int lost_gave_up;

static uint64_t lost_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *lost_mark_spinner(void *p)
{
	struct cl_rt_task *self = cl_self();
	uint64_t t0;

	(void)p;
	cl_preempt_disable();
	while (!CL_ATOMIC_LOAD(&self->w->preempt_pending, CL_RELAXED))
		atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
	CL_BARRIER();
	CL_WRITE_ONCE(self->np, self->np - 1); /* left without acting on the mark */
	t0 = lost_now_ns();
	while (!atomic_load_explicit(&stop_spin, memory_order_relaxed)) {
		long n = atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);

		if (!(n & 0xffff) && lost_now_ns() - t0 > LOST_GIVE_UP_NS) {
			atomic_store(&lost_gave_up, 1);
			break;
		}
	}
	return NULL;
}

Test(sched_runtime_preempt, a_mark_the_signal_could_not_act_on_is_signalled_again, .timeout = 60)
{
	struct cl_runtime *rt;

#ifdef CL_HAVE_TSAN
	cr_skip_test("ThreadSanitizer: marking only, no signal to repeat");
#endif
	rt = new_rt(0);
	atomic_store(&lost_gave_up, 0);
	pair_beside(rt, lost_mark_spinner, 50);
	cr_assert_eq(atomic_load(&lost_gave_up), 0,
		     "the spinner kept its worker: the mark its signal could not act on was lost");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- wakeup preemption ---- */

/*
 * Worker 0 runs a spinner and one side of a pair, worker 1 the other side.
 * Every wakeup of the side on worker 0 comes from worker 1 while the
 * spinner runs there. The preemption slice is set far longer than the test
 * (WAKE_SLICE_NS), so the tick's slice rule never preempts the spinner:
 * only wakeup preemption (the woken task eligible with an earlier virtual
 * deadline, once the spinner's protected EEVDF slice is over) lets the
 * pair go on. The spinner stops when the pair is done, or by itself after
 * one slice of spinning: then the pair needed a slice preemption, which is
 * the failure. No time is asserted: the bound is "all round trips within
 * one slice of the spinner", and without wakeup preemption not one round
 * trip completes in it.
 */
#define WAKE_SLICE_NS (10ull * 1000000000ull)
#define WAKE_ROUNDS 100

static atomic_int wake_done, wake_slice_over, wake_coop;
static atomic_long wake_spins;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Never blocks or yields. @wake_coop: calls the runtime now and then
 * (cl_preempt_disable()/enable(), a runtime call that switches nothing by
 * itself), so that a mark is acted on without the signal (ThreadSanitizer). */
static void *wake_spinner(void *p)
{
	uint64_t t0 = mono_ns();

	(void)p;
	while (!atomic_load_explicit(&wake_done, memory_order_relaxed)) {
		long n = atomic_fetch_add_explicit(&wake_spins, 1, memory_order_relaxed);

		if (atomic_load_explicit(&wake_coop, memory_order_relaxed)) {
			cl_preempt_disable();
			cl_preempt_enable();
		}
		if (!(n & 0xffff) && mono_ns() - t0 > WAKE_SLICE_NS) {
			atomic_store(&wake_slice_over, 1);
			break;
		}
	}
	return NULL;
}

static void *wake_ping(void *p)
{
	struct pair *pr = (struct pair *)p;
	int v = 0;

	while (!atomic_load(&wake_spins)) /* start beside the spinner */
		cl_yield();
	for (int i = 0; i < pr->rounds; i++)
		if (cl_chan_send(pr->ab, &i) || cl_chan_recv(pr->ba, &v) || v != i)
			return (void *)1;
	atomic_store(&wake_done, 1);
	return NULL;
}

static void wake_pair_beside_spinner(int coop)
{
	struct cl_runtime_attr ra;
	struct cl_spawn_attr s0, s1;
	struct cl_runtime *rt;
	struct cl_rt_task *s, *a, *b;
	struct pair pr;
	void *rs = (void *)2, *ra_ = (void *)2, *rb = (void *)2;

	memset(&ra, 0, sizeof(ra));
	ra.nr_workers = 2;
	ra.flags = CL_RUNTIME_UNPINNED;
	ra.slice_ns = WAKE_SLICE_NS;
	rt = cl_runtime_create(&ra);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	memset(&s0, 0, sizeof(s0));
	s0.worker = CL_SPAWN_WORKER(0);
	s0.pin = 1;
	s1 = s0;
	s1.worker = CL_SPAWN_WORKER(1);
	pr.ab = cl_chan_create(sizeof(int), 1);
	pr.ba = cl_chan_create(sizeof(int), 1);
	pr.rounds = WAKE_ROUNDS;
	atomic_store(&wake_done, 0);
	atomic_store(&wake_slice_over, 0);
	atomic_store(&wake_spins, 0);
	atomic_store(&wake_coop, coop);
	s = cl_spawn(rt, &s0, wake_spinner, NULL);
	a = cl_spawn(rt, &s0, wake_ping, &pr);
	b = cl_spawn(rt, &s1, pong, &pr);
	cr_assert(s && a && b);
	cr_assert_eq(cl_join(a, &ra_), 0);
	cr_assert_eq(cl_join(b, &rb), 0);
	cr_assert_eq(cl_join(s, &rs), 0);
	cr_assert_null(ra_, "ping lost a round trip");
	cr_assert_null(rb);
	cr_assert_eq(atomic_load(&wake_slice_over), 0,
		     "the pair needed more than one slice of the spinner for %d round trips: "
		     "the woken task did not preempt it", WAKE_ROUNDS);
	cr_assert_gt(rt->workers[0].nr_wake_preempts, 0, "no wakeup preemption counted on worker 0");
	cl_chan_destroy(pr.ab);
	cl_chan_destroy(pr.ba);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_preempt, woken_task_preempts_a_spinner_that_calls_nothing, .timeout = 60)
{
#ifdef CL_HAVE_TSAN
	cr_skip_test("ThreadSanitizer runs signal handlers from its interceptors only: "
		     "a task that calls nothing is not preempted (marking only)");
#endif
	wake_pair_beside_spinner(0);
}

Test(sched_runtime_preempt, woken_task_preempts_a_spinner_at_its_next_runtime_call, .timeout = 60)
{
	wake_pair_beside_spinner(1);
}

/*
 * The local side: on one worker, a task that has run past its protected
 * slice wakes a blocked task while another task is runnable there, and
 * keeps running. Its next runtime call (one that blocks nothing:
 * cl_preempt_enable()) must switch away (EEVDF: the wakee, eligible with an
 * earlier deadline, preempts it), not its next block or its 2 ms slice's
 * end; and the wakee must run, at the latest when the waker leaves.
 */
static atomic_int lw_stop, lw_woken_ran;
static struct cl_chan *lw_chan;
static struct cl_rt_task *lw_wakee;

static void *lw_wakee_fn(void *p)
{
	int v;

	(void)p;
	if (cl_chan_recv(lw_chan, &v))
		return (void *)1;
	atomic_store(&lw_woken_ran, 1);
	return NULL;
}

static void *lw_yielder(void *p)
{
	(void)p;
	while (!atomic_load(&lw_stop))
		cl_yield();
	return NULL;
}

/* Returns 0 if the runtime call after the send switched away (preempted). */
static void *lw_waker(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;
	struct cl_rt_task *wakee = cl__rt_handle_task(lw_wakee);
	int v = 7;
	uintptr_t bad;
	uint64_t marks;

	while (CL_ATOMIC_LOAD(&wakee->state, CL_SEQ_CST) != CL__RT_BLOCKED)
		cl_yield();
	/* run past the protected slice of this pick; from the last look on
	 * without a switch (the tick may preempt the spin before it) */
	for (;;) {
		cl_preempt_disable();
		if (cl__rt_now(rt) >= CL_ATOMIC_LOAD(&cl_self()->w->wake_preempt_ns, CL_RELAXED))
			break;
		cl_preempt_enable();
	}
	if (cl_chan_send(lw_chan, &v))
		return (void *)4;
	bad = (uintptr_t)atomic_load(&lw_woken_ran) << 3; /* not before the next call */
	marks = cl_self()->w->nr_preempt_marks;
	cl_preempt_enable(); /* the next runtime call: it switches away */
	bad |= (uintptr_t)(cl_self()->w->nr_preempt_marks == marks);
	atomic_store(&lw_stop, 1);
	return (void *)bad;
}

/* One round; returns the worker's wake preemptions (0 when the tick's slice
 * mark landed first and the switch was the tick's). */
static uint64_t local_wakee_round(void)
{
	struct cl_runtime *rt = new_rt(0);
	struct cl_rt_task *q, *w;
	void *rw = (void *)2, *rx = (void *)2;
	uint64_t n;

	lw_chan = cl_chan_create(sizeof(int), 1);
	atomic_store(&lw_stop, 0);
	atomic_store(&lw_woken_ran, 0);
	lw_wakee = cl_spawn(rt, NULL, lw_wakee_fn, NULL);
	cr_assert_not_null(lw_wakee);
	q = cl_spawn(rt, NULL, lw_yielder, NULL);
	w = cl_spawn(rt, NULL, lw_waker, rt);
	cr_assert(q && w);
	cr_assert_eq(cl_join(w, &rw), 0);
	cr_assert_eq(cl_join(lw_wakee, &rx), 0);
	cr_assert_eq(cl_join(q, NULL), 0);
	cr_assert_null(rx);
	cr_assert_eq((uintptr_t)rw, 0, "%s",
		     (uintptr_t)rw == 4   ? "cl_chan_send failed"
		     : (uintptr_t)rw & 8 ? "the woken task ran inside the waker's disabled section"
					  : "the waker's next runtime call did not switch away");
	cr_assert_eq(atomic_load(&lw_woken_ran), 1);
	n = rt->workers[0].nr_wake_preempts;
	cl_chan_destroy(lw_chan);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	return n;
}

/* Every round must switch away at the waker's next runtime call; the
 * switch must be the wakeup's in at least one of 5 rounds (under an
 * emulator the tick's slice mark can land first, now and then). */
Test(sched_runtime_preempt, local_wakee_preempts_its_waker_at_its_next_runtime_call, .timeout = 60)
{
	uint64_t wake_preempts = 0;

	for (int round = 0; round < 5 && !wake_preempts; round++)
		wake_preempts = local_wakee_round();
	cr_assert_gt(wake_preempts, 0, "in 5 rounds no switch was the wakeup's");
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
