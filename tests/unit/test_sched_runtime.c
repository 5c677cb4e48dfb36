/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime.c - the M:N runtime (sched/runtime.h):
 * errors on bad input, spawn/join/yield, the joined task running next (and
 * a channel's receiver after its sender blocked on it),
 * every blocking primitive, 10,000
 * tasks with random blocking (every message exactly once, every task
 * joined), no starvation next to a CPU hog, group shares, balancing, and
 * shutdown with blocked tasks (an error, not a hang; more lifecycle cases in
 * test_sched_runtime_lifecycle.c).
 * Built again with -DCL_RUNTIME_UCONTEXT (test_sched_runtime.variants): the
 * portable context switch.
 */
#include <stdint.h>

/* The tests of how running time is charged run the scheduler on virtual
 * clocks that only their tasks' work advances (the CL_RUNTIME_CLOCK and
 * CL_RUNTIME_TICK_CLOCK hooks; see "a virtual clock" below); the other
 * tests see the real ones. */
static uint64_t test_clock(uint64_t real_ns);
static uint64_t test_tick_clock(uint64_t real_ns);
#define CL_RUNTIME_CLOCK(ns) test_clock(ns)
#define CL_RUNTIME_TICK_CLOCK(ns) test_tick_clock(ns)

#include "cl_test.h"
#include "sched_sim.h"

#include <stdatomic.h>

#include <cachelocal/sched/runtime.h>

static struct cl_runtime *new_rt(unsigned int workers, unsigned int flags)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	a.flags = flags;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static void destroy_ok(struct cl_runtime *rt)
{
	cr_assert_eq(cl_runtime_destroy(rt), 0, "destroy: %s", strerror(errno));
}

/* A little CPU work that the compiler cannot drop. */
static unsigned long burn(unsigned long n)
{
	volatile unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		x += i;
	return x;
}

/*
 * Spawn up to 8 tasks from one task, so that they all become runnable
 * together on its worker (the main thread could be preempted between two
 * spawns and let the first task finish alone).
 */
struct batch {
	struct cl_runtime *rt;
	int n;
	struct cl_spawn_attr sa[8];
	void *(*fn[8])(void *);
	void *arg[8];
	struct cl_rt_task *t[8];
};

static void *batch_spawner(void *p)
{
	struct batch *b = (struct batch *)p;

	cl_preempt_disable(); /* a slice running out between two spawns would let one start alone */
	for (int i = 0; i < b->n; i++)
		b->t[i] = cl_spawn(b->rt, &b->sa[i], b->fn[i], b->arg[i]);
	cl_preempt_enable();
	return NULL;
}

static void batch_add(struct batch *b, struct cl_task_group *tg, void *(*fn)(void *), void *arg)
{
	memset(&b->sa[b->n], 0, sizeof(b->sa[b->n]));
	b->sa[b->n].tg = tg;
	b->fn[b->n] = fn;
	b->arg[b->n] = arg;
	b->n++;
}

/* Spawn the batch, then join every task of it (their results must be NULL). */
static void batch_run(struct batch *b)
{
	struct cl_rt_task *s = cl_spawn(b->rt, NULL, batch_spawner, b);

	cr_assert_not_null(s);
	cr_assert_eq(cl_join(s, NULL), 0);
	for (int i = 0; i < b->n; i++) {
		void *r = (void *)1;

		cr_assert_not_null(b->t[i]);
		cr_assert_eq(cl_join(b->t[i], &r), 0);
		cr_assert_null(r);
	}
}

/* ---- errors ---- */

static void *ret_arg_plus_one(void *p)
{
	return (void *)((uintptr_t)p + 1);
}

Test(sched_runtime, bad_arguments_fail_with_errno)
{
	struct cl_runtime_attr a;
	struct cl_spawn_attr sa;
	struct cl_runtime *rt;
	struct cl_chan *c;
	struct cl_mutex m;
	int v = 0;

	memset(&a, 0, sizeof(a));
	a.nr_workers = CL_MAX_CPUS + 1;
	errno = 0;
	cr_assert_null(cl_runtime_create(&a));
	cr_assert_eq(errno, EINVAL);

	rt = new_rt(1, 0);
	errno = 0;
	cr_assert_null(cl_spawn(NULL, NULL, ret_arg_plus_one, NULL));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(cl_spawn(rt, NULL, NULL, NULL));
	cr_assert_eq(errno, EINVAL);
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(1); /* only worker 0 exists */
	errno = 0;
	cr_assert_null(cl_spawn(rt, &sa, ret_arg_plus_one, NULL));
	cr_assert_eq(errno, EINVAL);
	sa.worker = 0;
	sa.pin = 1; /* pinned to no worker */
	cr_assert_null(cl_spawn(rt, &sa, ret_arg_plus_one, NULL));
	cr_assert_eq(errno, EINVAL);

	errno = 0;
	cr_assert_eq(cl_yield(), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_worker_id(), -1);
	cr_assert_null(cl_self());
	cr_assert_eq(cl_join(NULL, NULL), -1);
	cr_assert_eq(errno, EINVAL);

	cr_assert_null(cl_chan_create(0, 1));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(cl_chan_create(4, 0));
	cr_assert_eq(errno, EINVAL);
	c = cl_chan_create(sizeof(int), 1);
	cr_assert_not_null(c);
	cr_assert_eq(cl_chan_send(NULL, &v), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_chan_recv(c, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	/* a blocking receive outside a task is refused, not slept in */
	cr_assert_eq(cl_chan_recv(c, &v), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_chan_tryrecv(c, &v), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(cl_chan_trysend(c, &v), 0);
	cr_assert_eq(cl_chan_trysend(c, &v), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(cl_chan_send(c, &v), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_chan_close(c), 0);
	cr_assert_eq(cl_chan_close(c), -1);
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_trysend(c, &v), -1);
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_tryrecv(c, &v), 0, "a closed channel still drains");
	cr_assert_eq(cl_chan_tryrecv(c, &v), -1);
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_destroy(c), 0);

	cl_mutex_init(&m);
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cr_assert_eq(cl_mutex_trylock(&m), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_mutex_lock(&m), -1);
	cr_assert_eq(errno, EPERM);
	cl_mutex_unlock(&m);
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cl_mutex_unlock(&m);

	cr_assert_eq(cl_runtime_shutdown(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	destroy_ok(rt);
	cr_assert_eq(cl_runtime_destroy(NULL), 0);
}

/* ---- spawn, join, yield ---- */

static void *join_children(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;
	uintptr_t sum = 0;

	for (uintptr_t i = 0; i < 100; i++) {
		struct cl_rt_task *t = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)i);
		void *r;

		if (!t || cl_join(t, &r))
			return NULL;
		sum += (uintptr_t)r;
	}
	if (cl_join(cl_self(), NULL) != -1 || errno != EDEADLK)
		return NULL;
	return (void *)sum;
}

Test(sched_runtime, spawn_and_join_return_values_inside_and_outside)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct cl_rt_task *t[50], *p;
	void *r;

	for (uintptr_t i = 0; i < 50; i++) {
		t[i] = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)(i * 10));
		cr_assert_not_null(t[i]);
	}
	for (uintptr_t i = 0; i < 50; i++) {
		cr_assert_eq(cl_join(t[i], &r), 0);
		cr_assert_eq((uintptr_t)r, i * 10 + 1);
	}
	p = cl_spawn(rt, NULL, join_children, rt);
	cr_assert_eq(cl_join(p, &r), 0);
	cr_assert_eq((uintptr_t)r, 100 * 101 / 2, "joined inside a task: sum of i + 1");
	destroy_ok(rt);
}

/* the virtual clock (below) */
static void virt_clock_start(void);
static void virt_clock_stop(void);
static void virt_work(uint64_t ns);

struct yield_log {
	int n;
	int ids[4000];
	struct cl_chan *gate; /* task 0 waits here until task 1 runs */
};

struct yield_arg {
	struct yield_log *log;
	int id;
};

/*
 * Both tasks log only once both run. Without the gate, task 1 could be
 * placed well after task 0 in virtual time (at V, which the spawner's own
 * running time moved on while it set up task 1's stack) and so not be
 * eligible until task 0 had run that long: a slow spawn (ASan, a loaded
 * host) let task 0 log all its entries first, exactly as a yield that never
 * switches would. Task 0 blocks instead (it keeps its lag) and task 1 wakes
 * it; a gate of yields would not do, each one moves the yielder's deadline
 * a slice on.
 */
static void *yield_logger(void *p)
{
	struct yield_arg *a = (struct yield_arg *)p;
	int go = 1;

	if (a->id == 0 ? cl_chan_recv(a->log->gate, &go) : cl_chan_send(a->log->gate, &go))
		return (void *)1;
	for (int i = 0; i < 2000; i++) {
		a->log->ids[a->log->n++] = a->id; /* one worker: no concurrent writer */
		burn(200);
		virt_work(1000);
		cl_yield();
	}
	return NULL;
}

Test(sched_runtime, yield_lets_the_other_task_of_the_worker_run)
{
	struct cl_runtime *rt = new_rt(1, 0);
	static struct yield_log log;
	struct yield_arg a0 = { &log, 0 }, a1 = { &log, 1 };
	struct batch b = { .rt = rt };
	int changes = 0;

	log.n = 0;
	log.gate = cl_chan_create(sizeof(int), 1);
	cr_assert_not_null(log.gate);
	virt_clock_start();
	batch_add(&b, NULL, yield_logger, &a0);
	batch_add(&b, NULL, yield_logger, &a1);
	batch_run(&b);
	virt_clock_stop();
	cr_assert_eq(cl_chan_destroy(log.gate), 0);
	cr_assert_eq(log.n, 4000);
	for (int i = 1; i < log.n; i++)
		changes += log.ids[i] != log.ids[i - 1];
	/* the fair class picks the one behind in vruntime, so the tasks
	 * interleave; how often depends on the run time each unit is charged,
	 * here 1 us of virtual time (on the real clock a worker preempted by
	 * the OS inside one unit charged that task the whole delay, and under
	 * ASan on a loaded host the other once ran all its units in a row),
	 * so only the interleaving itself is asserted: without a switch on
	 * yield one task would log all 2000 entries before the other, exactly
	 * 1 change */
	cr_log_info("%d changes of task in 4000 yields", changes);
	cr_assert_geq(changes, 2, "the tasks did not interleave (%d change) in 4000 yields", changes);
	destroy_ok(rt);
}

/* ---- join order ---- */

struct join_order {
	struct cl_runtime *rt;
	int next;       /* one worker: no concurrent writer */
	int started[4]; /* the order the children started in, 0 first */
	int joined_ok;
};

struct join_child {
	struct join_order *o;
	int id;
};

static void *join_order_child(void *p)
{
	struct join_child *c = (struct join_child *)p;

	c->o->started[c->id] = c->o->next++;
	return (void *)(uintptr_t)(c->id + 1);
}

/* Spawn four children on this worker, then join them last spawned first. */
static void *join_order_parent(void *p)
{
	struct join_order *o = (struct join_order *)p;
	struct join_child c[4];
	struct cl_rt_task *t[4];

	for (int i = 0; i < 4; i++) {
		c[i].o = o;
		c[i].id = i;
		t[i] = cl_spawn(o->rt, NULL, join_order_child, &c[i]);
	}
	for (int i = 3; i >= 0; i--) {
		void *r = NULL;

		if (t[i] && cl_join(t[i], &r) == 0 && (uintptr_t)r == (uintptr_t)i + 1)
			o->joined_ok++;
	}
	return NULL;
}

/*
 * cl_join() names the task it waits for as the next buddy: on one worker,
 * with three tasks spawned before it and queued, the joined task runs
 * first. It is eligible (spawned with no lag at V, which the running
 * parent only moves up), so the fair class would take it too if it were
 * named; without the naming the pick takes the earliest deadline, which is
 * the first spawned child's.
 */
Test(sched_runtime, join_runs_the_joined_task_next_on_one_worker)
{
	struct cl_runtime *rt = new_rt(1, CL_RUNTIME_NO_PREEMPT); /* no tick between spawn and join */
	static struct join_order o;
	struct cl_rt_task *p;

	memset(&o, 0, sizeof(o));
	o.rt = rt;
	p = cl_spawn(rt, NULL, join_order_parent, &o);
	cr_assert_not_null(p);
	cr_assert_eq(cl_join(p, NULL), 0);
	cr_assert_eq(o.joined_ok, 4, "every child joined with its result");
	cr_assert_eq(o.next, 4);
	cr_log_info("children started in order %d %d %d %d (0 first)", o.started[0], o.started[1],
		    o.started[2], o.started[3]);
	cr_assert_eq(o.started[3], 0, "the joined child (spawned last) started %d-th, not first",
		     o.started[3] + 1);
	destroy_ok(rt);
}

/* ---- channel ---- */

struct chan_pair {
	struct cl_chan *c;
	int n;
	int bad;
};

static void *chan_producer(void *p)
{
	struct chan_pair *a = (struct chan_pair *)p;

	for (int i = 0; i < a->n; i++)
		if (cl_chan_send(a->c, &i))
			return (void *)1;
	return NULL;
}

static void *chan_consumer(void *p)
{
	struct chan_pair *a = (struct chan_pair *)p;

	for (int i = 0; i < a->n; i++) {
		int v = -1;

		if (cl_chan_recv(a->c, &v) || v != i)
			a->bad++;
	}
	return NULL;
}

Test(sched_runtime, chan_keeps_fifo_order_through_a_small_buffer)
{
	for (unsigned int workers = 1; workers <= 2; workers++) {
		struct cl_runtime *rt = new_rt(workers, CL_RUNTIME_UNPINNED);
		struct chan_pair a = { cl_chan_create(sizeof(int), 4), 20000, 0 };
		struct cl_rt_task *p, *c;
		void *r = (void *)1;

		c = cl_spawn(rt, NULL, chan_consumer, &a);
		p = cl_spawn(rt, NULL, chan_producer, &a);
		cr_assert_eq(cl_join(p, &r), 0);
		cr_assert_null(r);
		cr_assert_eq(cl_join(c, NULL), 0);
		cr_assert_eq(a.bad, 0, "%d messages out of order or lost (%u workers)", a.bad, workers);
		cr_assert_eq(cl_chan_destroy(a.c), 0);
		destroy_ok(rt);
	}
}

struct close_arg {
	struct cl_chan *c;
	int got, err;
};

static void *recv_until_closed(void *p)
{
	struct close_arg *a = (struct close_arg *)p;
	int v;

	while (cl_chan_recv(a->c, &v) == 0)
		__atomic_fetch_add(&a->got, 1, __ATOMIC_RELAXED);
	if (errno == EPIPE)
		__atomic_fetch_add(&a->err, 1, __ATOMIC_RELAXED);
	return NULL;
}

Test(sched_runtime, chan_close_wakes_blocked_receivers_after_draining)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct close_arg a = { cl_chan_create(sizeof(int), 8), 0, 0 };
	struct cl_rt_task *t[4];
	int v = 7;

	for (int i = 0; i < 4; i++)
		t[i] = cl_spawn(rt, NULL, recv_until_closed, &a);
	for (int i = 0; i < 3; i++)
		while (cl_chan_trysend(a.c, &v) != 0)
			cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(cl_chan_close(a.c), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert_eq(a.got, 3, "messages sent before close are delivered");
	cr_assert_eq(a.err, 4, "every receiver ends with EPIPE");
	cr_assert_eq(cl_chan_destroy(a.c), 0);
	destroy_ok(rt);
}

/* ---- wait queue ---- */

struct wq_arg {
	struct cl_waitq wq;
	int go;
	int waiting;
	int done;
};

static void *wq_waiter(void *p)
{
	struct wq_arg *a = (struct wq_arg *)p;

	cl_waitq_lock(&a->wq);
	__atomic_fetch_add(&a->waiting, 1, __ATOMIC_RELEASE); /* read outside the lock */
	while (!a->go) {
		cl_waitq_wait(&a->wq);
		cl_waitq_lock(&a->wq);
	}
	a->done++;
	cl_waitq_unlock(&a->wq);
	return NULL;
}

Test(sched_runtime, waitq_wakes_from_outside_the_runtime)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct wq_arg a;
	struct cl_rt_task *t[6];
	int all;

	memset(&a, 0, sizeof(a));
	cl_waitq_init(&a.wq);
	for (int i = 0; i < 6; i++)
		t[i] = cl_spawn(rt, NULL, wq_waiter, &a);
	/* Rendezvous: a waiter counts itself under the queue lock and holds it
	 * until it is on the queue, so once all 6 counted, taking the lock finds
	 * all 6 asleep. (Not by calling wake_one in a loop: that hammers the
	 * queue's spinlock from outside and can starve the waiters of it.) */
	while (__atomic_load_n(&a.waiting, __ATOMIC_ACQUIRE) < 6)
		sched_yield();
	cl_waitq_lock(&a.wq);
	cl_waitq_unlock(&a.wq);
	cr_assert_eq(cl_waitq_wake_one(&a.wq), 1, "no task asleep on the queue");
	cl_waitq_lock(&a.wq);
	a.go = 1;
	cl_waitq_unlock(&a.wq);
	/* the other 5, and the one woken above if it went back to sleep first */
	all = cl_waitq_wake_all(&a.wq);
	cr_assert(all == 5 || all == 6, "wake_all woke %d tasks", all);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert_eq(a.done, 6);
	cr_assert_eq(a.waiting, 6);
	destroy_ok(rt);
}

/* ---- mutex, condvar ---- */

struct mx_arg {
	struct cl_mutex m;
	long counter;
	int n;
};

static void *mx_incr(void *p)
{
	struct mx_arg *a = (struct mx_arg *)p;

	for (int i = 0; i < a->n; i++) {
		cl_mutex_lock(&a->m);
		long v = a->counter;

		if (i % 16 == 0)
			cl_yield(); /* holder yields: others block on the mutex */
		a->counter = v + 1;
		cl_mutex_unlock(&a->m);
	}
	return NULL;
}

Test(sched_runtime, mutex_excludes_across_workers_and_yields)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct mx_arg a;
	struct cl_rt_task *t[8];

	cl_mutex_init(&a.m);
	a.counter = 0;
	a.n = 5000;
	for (int i = 0; i < 8; i++)
		t[i] = cl_spawn(rt, NULL, mx_incr, &a);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert_eq(a.counter, 8L * 5000, "lost updates: %ld", a.counter);
	destroy_ok(rt);
}

struct cv_arg {
	struct cl_mutex m;
	struct cl_cond cv;
	int turn;
	int rounds;
	int seq[2];
	int bad;
};

static void *cv_player(void *p)
{
	struct cv_arg *a = (struct cv_arg *)p;
	int me;

	cl_mutex_lock(&a->m);
	me = a->seq[0]++ ? 1 : 0; /* first to arrive plays 0 */
	cl_mutex_unlock(&a->m);
	for (int i = 0; i < a->rounds; i++) {
		cl_mutex_lock(&a->m);
		while (a->turn != me)
			cl_cond_wait(&a->cv, &a->m);
		if (a->seq[1] % 2 != me)
			a->bad++;
		a->seq[1]++;
		a->turn = !me;
		cl_cond_broadcast(&a->cv);
		cl_mutex_unlock(&a->m);
	}
	return NULL;
}

Test(sched_runtime, condvar_ping_pong_strictly_alternates)
{
	for (unsigned int workers = 1; workers <= 2; workers++) {
		struct cl_runtime *rt = new_rt(workers, CL_RUNTIME_UNPINNED);
		struct cv_arg a;
		struct cl_rt_task *t0, *t1;

		memset(&a, 0, sizeof(a));
		cl_mutex_init(&a.m);
		cl_cond_init(&a.cv);
		a.rounds = 10000;
		t0 = cl_spawn(rt, NULL, cv_player, &a);
		t1 = cl_spawn(rt, NULL, cv_player, &a);
		cr_assert_eq(cl_join(t0, NULL), 0);
		cr_assert_eq(cl_join(t1, NULL), 0);
		cr_assert_eq(a.seq[1], 20000);
		cr_assert_eq(a.bad, 0);
		destroy_ok(rt);
	}
}

/* ---- 10,000 tasks, random blocking ---- */

#ifdef CL_HAVE_TSAN
/* TSan keeps a large state per fiber: 10,000 of them exhaust its mappings
 * here, and each costs ~8 ms to create and run (2,000: 17 s per build) */
#define MANY_TASKS 1000
#else
#define MANY_TASKS 10000
#endif
#define MANY_CHANS 50
#define MANY_MSGS 4 /* per sender; per receiver */

struct many {
	struct cl_chan *c[MANY_CHANS];
	struct cl_mutex m;
	struct cl_cond cv;
	long shared;
	unsigned char seen[MANY_TASKS / 2 * MANY_MSGS];
	int dup;
};

static struct many many;

static void *many_task(void *p)
{
	unsigned int id = (unsigned int)(uintptr_t)p, seed = id * 2654435761u + 1;
	struct cl_chan *c = many.c[(id / 2) % MANY_CHANS];

	for (int j = 0; j < MANY_MSGS; j++) {
		unsigned int r;

		seed = seed * 1103515245u + 12345u;
		r = (seed >> 16) % 4;
		if (r == 0) {
			cl_yield();
		} else if (r == 1) {
			cl_mutex_lock(&many.m);
			many.shared++;
			if (seed & 0x100)
				cl_yield();
			cl_mutex_unlock(&many.m);
		}
		if (id % 2 == 0) { /* sender */
			int msg = (int)(id / 2 * MANY_MSGS + (unsigned int)j);

			if (cl_chan_send(c, &msg))
				return (void *)1;
		} else {
			int msg = -1;

			if (cl_chan_recv(c, &msg) || msg < 0 || msg >= MANY_TASKS / 2 * MANY_MSGS)
				return (void *)1;
			if (__atomic_fetch_add(&many.seen[msg], 1, __ATOMIC_RELAXED) != 0)
				__atomic_fetch_add(&many.dup, 1, __ATOMIC_RELAXED);
		}
	}
	return (void *)(uintptr_t)(id + 1);
}

Test(sched_runtime, ten_thousand_tasks_random_blocking_every_message_once_every_task_joined, .timeout = 300)
{
	struct cl_runtime *rt = new_rt(0, 0); /* one per allowed CPU */
	static struct cl_rt_task *t[MANY_TASKS];
	int joined = 0;

	memset(&many, 0, sizeof(many));
	cl_mutex_init(&many.m);
	for (int i = 0; i < MANY_CHANS; i++)
		cr_assert_not_null(many.c[i] = cl_chan_create(sizeof(int), 2));
	for (unsigned int i = 0; i < MANY_TASKS; i++) {
		t[i] = cl_spawn(rt, NULL, many_task, (void *)(uintptr_t)i);
		cr_assert_not_null(t[i], "spawn %u: %s", i, strerror(errno));
	}
	for (unsigned int i = 0; i < MANY_TASKS; i++) {
		void *r = NULL;

		cr_assert_eq(cl_join(t[i], &r), 0);
		cr_assert_eq((uintptr_t)r, i + 1, "task %u failed", i);
		joined++;
	}
	cr_assert_eq(joined, MANY_TASKS);
	cr_assert_eq(many.dup, 0, "%d messages delivered twice", many.dup);
	for (int i = 0; i < MANY_TASKS / 2 * MANY_MSGS; i++)
		cr_assert_eq(many.seen[i], 1, "message %d delivered %d times", i, many.seen[i]);
	for (int i = 0; i < MANY_CHANS; i++)
		cr_assert_eq(cl_chan_destroy(many.c[i]), 0);
	destroy_ok(rt);
}

/* ---- a virtual clock (CL_RUNTIME_CLOCK, CL_RUNTIME_TICK_CLOCK) ----
 * Tests that check how running time is charged run the scheduler on clocks
 * that only their tasks' work advances: time the kernel takes the worker
 * thread away (other processes, a sanitizer, valgrind) is charged to nobody,
 * so the checks hold on a loaded machine. */

#define VIRT_UNIT_NS 1000 /* virtual time one unit of work takes */
static int virt_on;
static uint64_t virt_base, virt_ns;

static uint64_t test_clock(uint64_t real_ns)
{
	if (!__atomic_load_n(&virt_on, __ATOMIC_ACQUIRE))
		return real_ns;
	return virt_base + __atomic_load_n(&virt_ns, __ATOMIC_RELAXED);
}

/* The virtual tick, ~0.4 ms: successive ticks fall 6,180 ns (the golden
 * section of a 10 us turn) further into the hand-off test's turns, so they
 * land evenly over its positions and each task's share of them is its share
 * of the work, not an alias of the period. */
#define VIRT_TICK_NS 396180ULL

static uint64_t test_tick_clock(uint64_t real_ns)
{
	if (!__atomic_load_n(&virt_on, __ATOMIC_ACQUIRE))
		return real_ns;
	return virt_base + __atomic_load_n(&virt_ns, __ATOMIC_RELAXED) / VIRT_TICK_NS * VIRT_TICK_NS;
}

/* From now on the runtime's clock moves only with virt_ns: ahead of every real
 * reading so far, so it never goes backwards. */
static void virt_clock_start(void)
{
	virt_ns = 0;
	virt_base = (uint64_t)cl__now_ns() + 1000000000ULL;
	__atomic_store_n(&virt_on, 1, __ATOMIC_RELEASE);
}

static void virt_clock_stop(void)
{
	__atomic_store_n(&virt_on, 0, __ATOMIC_RELEASE);
}

/* A task did @ns of (virtual) work. */
static void virt_work(uint64_t ns)
{
	__atomic_fetch_add(&virt_ns, ns, __ATOMIC_RELAXED);
}

/* ---- a channel's counterpart runs next ---- */

struct hint_order {
	struct cl_runtime *rt;
	struct cl_chan *c;
	struct cl_chan *gate; /* the other tasks wait on it */
	int next;             /* one worker: no concurrent writer */
	int r_got;            /* the receiver took the first message */
	int x_started;        /* the other tasks about to wait on the gate */
	int go;               /* the sender is about to fill the channel */
	int r_order;          /* when the receiver ran after the sender blocked, 0 first */
	int x_order[3];
	int ok;
};

/* Takes the first message, then stays runnable (yields) until the sender
 * fills the channel. */
static void *hint_receiver(void *p)
{
	struct hint_order *o = (struct hint_order *)p;
	int v;

	if (cl_chan_recv(o->c, &v) || v != 0)
		return (void *)1;
	o->r_got = 1;
	while (!o->go)
		cl_yield();
	o->r_order = o->next++;
	for (int i = 1; i < 3; i++)
		if (cl_chan_recv(o->c, &v) || v != i)
			return (void *)1;
	return NULL;
}

struct hint_other {
	struct hint_order *o;
	int id;
};

static void *hint_other_fn(void *p)
{
	struct hint_other *x = (struct hint_other *)p;
	char g;

	x->o->x_started++;
	if (cl_chan_recv(x->o->gate, &g))
		return (void *)1;
	x->o->x_order[x->id] = x->o->next++;
	return NULL;
}

/* The sender: once the receiver took a message from the channel (one
 * slot) and the others wait on the gate, wakes the others and sends two
 * more messages: the first fills the ring, the second blocks. */
static void *hint_sender(void *p)
{
	struct hint_order *o = (struct hint_order *)p;
	struct hint_other x[3];
	struct cl_rt_task *r, *t[3];
	void *res = (void *)1;

	r = cl_spawn(o->rt, NULL, hint_receiver, o);
	if (!r || cl_chan_send(o->c, &(int){ 0 }))
		return (void *)1;
	for (int i = 0; i < 3; i++) {
		x[i] = (struct hint_other){ o, i };
		t[i] = cl_spawn(o->rt, NULL, hint_other_fn, &x[i]);
		if (!t[i])
			return (void *)1;
	}
	while (!o->r_got || o->x_started < 3)
		cl_yield();
	cl_yield(); /* the last one from its count into the gate's wait list */
	o->go = 1;
	for (int i = 0; i < 3; i++)
		if (cl_chan_send(o->gate, &(char){ 1 }))
			return (void *)1;
	for (int i = 1; i < 3; i++)
		if (cl_chan_send(o->c, &i))
			return (void *)1;
	for (int i = 0; i < 3; i++)
		if (cl_join(t[i], &res) || res)
			return (void *)1;
	if (cl_join(r, &res) || res)
		return (void *)1;
	o->ok = 1;
	return NULL;
}

/*
 * A task that blocks on a full channel names the task that last received
 * from it, which then runs next (cl__chan_hint()): on one worker, with the
 * receiver queued (it yielded, which moved its deadline a slice on each
 * time) beside three tasks the sender has just woken (a slice or less from
 * their deadlines), the receiver runs first, although it is a little
 * behind its share (not eligible: named within the sender's protected
 * slice, as a chain). Without the naming the fair class runs the three
 * first.
 */
Test(sched_runtime, a_sender_blocked_on_a_full_channel_runs_its_receiver_next)
{
	/* with preemption (a chain of buddies is bounded by the protected
	 * slice of the pick that started it, which only the tick's slice
	 * makes) on a stopped virtual clock: no time is charged, no slice
	 * ends, whatever the load (every task yields or blocks at once) */
	struct cl_runtime *rt = new_rt(1, 0);
	static struct hint_order o;
	struct cl_rt_task *s;

	virt_clock_start();
	memset(&o, 0, sizeof(o));
	o.rt = rt;
	o.c = cl_chan_create(sizeof(int), 1);
	o.gate = cl_chan_create(1, 3);
	cr_assert(o.c && o.gate);
	s = cl_spawn(rt, NULL, hint_sender, &o);
	cr_assert_not_null(s);
	cr_assert_eq(cl_join(s, NULL), 0);
	virt_clock_stop();
	cr_assert_eq(o.ok, 1, "a task failed");
	cr_log_info("start order: receiver %d, the others %d %d %d (0 first)", o.r_order, o.x_order[0],
		    o.x_order[1], o.x_order[2]);
	cr_assert_eq(o.r_order, 0, "the receiver of the full channel ran at position %d, not 0",
		     o.r_order);
	cr_assert_eq(cl_chan_destroy(o.c), 0);
	cr_assert_eq(cl_chan_destroy(o.gate), 0);
	destroy_ok(rt);
}

/* ---- no starvation next to a hog ---- */

#define WORK 2000 /* one unit of progress: the same work for the hog and the pair */

struct starve {
	struct cl_chan *ab, *ba;
	long pair_units;
	long hog_units;
	int stop;
	long rounds;
};

static void *hog(void *p)
{
	struct starve *s = (struct starve *)p;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		burn(WORK);
		s->hog_units++;
		virt_work(VIRT_UNIT_NS);
		cl_yield();
	}
	return NULL;
}

static void *pinger(void *p)
{
	struct starve *s = (struct starve *)p;
	int v = 0;

	for (long i = 0; i < s->rounds; i++) {
		burn(WORK);
		s->pair_units++;
		virt_work(VIRT_UNIT_NS);
		cl_chan_send(s->ab, &v);
		cl_chan_recv(s->ba, &v);
	}
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *ponger(void *p)
{
	struct starve *s = (struct starve *)p;
	int v;

	for (long i = 0; i < s->rounds; i++) {
		cl_chan_recv(s->ab, &v);
		burn(WORK);
		s->pair_units++;
		virt_work(VIRT_UNIT_NS);
		cl_chan_send(s->ba, &v);
	}
	return NULL;
}

Test(sched_runtime, pingpong_pair_and_cpu_hog_both_progress_on_one_worker)
{
	struct cl_runtime *rt = new_rt(1, 0);
	struct starve s;
	struct batch b = { .rt = rt };
	double ratio;

	memset(&s, 0, sizeof(s));
	s.ab = cl_chan_create(sizeof(int), 1);
	s.ba = cl_chan_create(sizeof(int), 1);
	s.rounds = 5000;
	virt_clock_start();
	batch_add(&b, NULL, hog, &s);
	batch_add(&b, NULL, pinger, &s);
	batch_add(&b, NULL, ponger, &s);
	batch_run(&b);
	virt_clock_stop();
	cr_assert_eq(s.pair_units, 2 * s.rounds);
	cr_assert_gt(s.hog_units, 0, "the hog never ran");
	ratio = (double)s.hog_units / (double)s.pair_units;
	cr_log_info("hog %ld units, pair %ld units, ratio %.2f", s.hog_units, s.pair_units, ratio);
	cr_assert(ratio > 1.0 / 20 && ratio < 20, "progress ratio hog/pair %.3f outside 1/20..20",
		  ratio);
	cl_chan_destroy(s.ab);
	cl_chan_destroy(s.ba);
	destroy_ok(rt);
}

/* ---- group shares ---- */

struct share {
	long units[2];
	int stop;
};

static struct share share;

/* Units of work in the share test: 200 ms of virtual time, ~270 base slices
 * (EEVDF keeps each group within about one slice of its share). */
#define SHARE_UNITS 200000

static void *share_hog(void *p)
{
	int g = (int)(uintptr_t)p;

	while (!__atomic_load_n(&share.stop, __ATOMIC_ACQUIRE)) {
		burn(WORK);
		share.units[g]++; /* one worker: no concurrent writer */
		virt_work(VIRT_UNIT_NS);
		if (share.units[0] + share.units[1] >= SHARE_UNITS)
			__atomic_store_n(&share.stop, 1, __ATOMIC_RELEASE);
		cl_yield();
	}
	return NULL;
}

Test(sched_runtime, tasks_get_their_groups_share_of_one_worker)
{
	struct cl_runtime *rt = new_rt(1, 0);
	struct cl_task_group *g[2];
	struct batch b = { .rt = rt };
	uint64_t exec[2];
	double ratio;

	urcu_memb_register_thread();
	g[0] = cl_task_group_create(cl_sched_root_group(cl_runtime_sched(rt)), 1024);
	g[1] = cl_task_group_create(cl_sched_root_group(cl_runtime_sched(rt)), 3072);
	cr_assert(g[0] && g[1]);
	memset(&share, 0, sizeof(share));
	/* Each unit of work costs the same virtual time: the kernel taking the
	 * worker away (other processes, a sanitizer) costs a task nothing. */
	virt_clock_start();
	for (int i = 0; i < 4; i++) /* two tasks in each group */
		batch_add(&b, g[i % 2], share_hog, (void *)(uintptr_t)(i % 2));
	batch_run(&b);
	virt_clock_stop();
	/* the share is of CPU time, as the fair class charges it (rq lock: its writers' lock) */
	cl_rq_lock(cl_sched_rq(cl_runtime_sched(rt), 0));
	exec[0] = cl_tg_se(g[0], 0)->sum_exec_runtime;
	exec[1] = cl_tg_se(g[1], 0)->sum_exec_runtime;
	cl_rq_unlock(cl_sched_rq(cl_runtime_sched(rt), 0));
	ratio = (double)exec[1] / (double)exec[0];
	cr_log_info("group 3072: %llu ns, %ld units; group 1024: %llu ns, %ld units; time ratio %.2f",
		    (unsigned long long)exec[1], share.units[1], (unsigned long long)exec[0],
		    share.units[0], ratio);
	cr_assert(ratio > 2.9 && ratio < 3.1, "shares 3072:1024 gave a %.2f:1 time split", ratio);
	/* every charged ns is a unit of work */
	cr_assert_eq(exec[0] + exec[1], (uint64_t)(share.units[0] + share.units[1]) * VIRT_UNIT_NS);
	cr_assert_gt(share.units[0], 0);
	/* returned tasks detached from their groups: the groups can go */
	for (int i = 0; i < 2; i++)
		cr_assert_eq(cl_task_group_destroy(g[i]), 0, "group %d: %s", i, strerror(errno));
	destroy_ok(rt);
	urcu_memb_unregister_thread();
}

/* ---- accounting at uncontended hand-offs ---- */

struct handoff {
	struct cl_chan *ab, *ba;
	unsigned long work[2]; /* burn() per turn: long task, short task */
	int stop;
};

static void *handoff_task(void *p)
{
	struct handoff *h = (struct handoff *)p;
	int v = 0;

	for (long turns = 1;; turns++) {
		burn(h->work[0]);
		virt_work(h->work[0] / WORK * VIRT_UNIT_NS);
		/* 5000 turns: 50 ms of virtual time, 126 virtual ticks */
		if (turns >= 5000)
			__atomic_store_n(&h->stop, 1, __ATOMIC_RELEASE);
		cl_chan_send(h->ab, &v);
		if (__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE))
			return NULL;
		cl_chan_recv(h->ba, &v);
	}
}

static void *handoff_short(void *p)
{
	struct handoff *h = (struct handoff *)p;
	int v;

	for (;;) {
		cl_chan_recv(h->ab, &v);
		if (__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE))
			return NULL;
		burn(h->work[1]);
		virt_work(h->work[1] / WORK * VIRT_UNIT_NS);
		cl_chan_send(h->ba, &v);
	}
}

/*
 * A pair that only ever hands the worker to each other (the pick never has
 * a choice) where one task runs 9x longer per turn than the other: by
 * default the runtime samples the clock at the tick on such hand-offs, so
 * the charge must still follow running time (a sampler counting switches
 * would split it 1:1); with CL_RUNTIME_PRECISE_CLOCK it is exact. Each task
 * is alone in a group so that the charge can be read off the group entity.
 * The clocks are the virtual ones (each turn's work advances them 9:1), so
 * time the kernel takes the worker away is charged to nobody, and a tick
 * comes during a task's work in proportion to it.
 */
static void handoff_charge_check(unsigned int flags, unsigned int workers)
{
	struct cl_runtime *rt = new_rt(workers, flags);
	struct cl_task_group *g[2];
	struct batch b = { .rt = rt };
	struct handoff h;
	uint64_t exec[2], total;
	double ratio;

	urcu_memb_register_thread();
	memset(&h, 0, sizeof(h));
	h.ab = cl_chan_create(sizeof(int), 1);
	h.ba = cl_chan_create(sizeof(int), 1);
	h.work[0] = 9 * WORK;
	h.work[1] = WORK;
	for (int i = 0; i < 2; i++) {
		g[i] = cl_task_group_create(cl_sched_root_group(cl_runtime_sched(rt)), 1024);
		cr_assert_not_null(g[i]);
	}
	virt_clock_start();
	batch_add(&b, g[0], handoff_task, &h);
	batch_add(&b, g[1], handoff_short, &h);
	if (workers > 1) /* one task per worker: each wakes the other across */
		for (int i = 0; i < 2; i++) {
			b.sa[i].worker = CL_SPAWN_WORKER(i);
			b.sa[i].pin = 1;
		}
	batch_run(&b);
	virt_clock_stop();
	total = __atomic_load_n(&virt_ns, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < 2; i++) {
		unsigned int cpu = workers > 1 ? i : 0;

		cl_rq_lock(cl_sched_rq(cl_runtime_sched(rt), cpu));
		exec[i] = cl_tg_se(g[i], cpu)->sum_exec_runtime;
		cl_rq_unlock(cl_sched_rq(cl_runtime_sched(rt), cpu));
	}
	ratio = exec[1] ? (double)exec[0] / (double)exec[1] : 1e9;
	cr_log_info("flags %#x, %u workers: long task %llu ns, short task %llu ns, ratio %.2f (work 9:1)",
		    flags, workers, (unsigned long long)exec[0], (unsigned long long)exec[1], ratio);
	cr_assert_gt(exec[0], 0, "the long task was never charged");
	/* sampled: each of the ~126 ticks charges its period to the task whose
	 * work it fell in (switch counting would give 1:1), and all of the work
	 * is charged but about a tick's worth (the last tick's, the ends of the
	 * periods); precise: exact */
	if (flags & CL_RUNTIME_PRECISE_CLOCK) {
		cr_assert(ratio > 8.99 && ratio < 9.01, "a 9:1 split of running time was charged %.2f:1",
			  ratio);
	} else {
		cr_assert(ratio > 6.0 && ratio < 12.0, "a 9:1 split of running time was charged %.2f:1",
			  ratio);
		cr_assert(exec[0] + exec[1] + 2 * VIRT_TICK_NS >= total,
			  "%llu ns of work, %llu ns of it charged", (unsigned long long)total,
			  (unsigned long long)(exec[0] + exec[1]));
	}
	for (int i = 0; i < 2; i++)
		cr_assert_eq(cl_task_group_destroy(g[i]), 0, "group %d: %s", i, strerror(errno));
	cl_chan_destroy(h.ab);
	cl_chan_destroy(h.ba);
	destroy_ok(rt);
	urcu_memb_unregister_thread();
}

Test(sched_runtime, hand_off_pair_is_charged_by_running_time_with_the_sampled_clock)
{
	handoff_charge_check(0, 1);
}

Test(sched_runtime, hand_off_pair_is_charged_by_running_time_with_the_precise_clock)
{
	handoff_charge_check(CL_RUNTIME_PRECISE_CLOCK, 1);
}

/*
 * The same pair, one task on each of two workers: each worker picks its
 * task out of its idle loop, a pick without a choice. A clock read at
 * every such pick would restart the sampling there, so a task would be
 * charged only the runs a tick fell in (2.5% of the work was charged so).
 * The clock is global: a task's reading may come after the other's work
 * (both run at once for a moment), which can only add to a charge.
 */
Test(sched_runtime, pair_on_two_workers_is_charged_by_running_time_with_the_sampled_clock)
{
	handoff_charge_check(0, 2);
}

/* ---- direct hand-offs and wakeups from elsewhere ---- */

struct stale {
	struct cl_chan *ca, *ab, *ba;
	struct cl_waitq wq;
	int waiting;     /* C is about to wait (wq lock) */
	int woken;       /* C was told to go (wq lock) */
	long rounds;     /* A's ping-pong rounds (atomic) */
	long rounds_at_c; /* rounds when C ran again */
	int c_ran;
};

static void *stale_a(void *p)
{
	struct stale *s = (struct stale *)p;
	int v;

	cl_chan_recv(s->ca, &v); /* C wakes us, then blocks: a direct hand-off to us */
	while (!__atomic_load_n(&s->c_ran, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&s->rounds, __ATOMIC_RELAXED) < 200000000L) {
		cl_chan_send(s->ab, &v);
		cl_chan_recv(s->ba, &v);
		__atomic_fetch_add(&s->rounds, 1, __ATOMIC_RELAXED);
	}
	v = -1;
	cl_chan_send(s->ab, &v);
	return NULL;
}

static void *stale_b(void *p)
{
	struct stale *s = (struct stale *)p;
	int v;

	for (;;) {
		cl_chan_recv(s->ab, &v);
		if (v < 0)
			return NULL;
		cl_chan_send(s->ba, &v);
	}
}

static void *stale_c(void *p)
{
	struct stale *s = (struct stale *)p;
	int v = 1;

	cl_chan_send(s->ca, &v); /* A on our wake list */
	cl_waitq_lock(&s->wq);
	__atomic_store_n(&s->waiting, 1, __ATOMIC_RELEASE);
	while (!s->woken) {
		cl_waitq_wait(&s->wq); /* usually a direct hand-off: the rq keeps us as its curr */
		cl_waitq_lock(&s->wq);
	}
	cl_waitq_unlock(&s->wq);
	s->rounds_at_c = __atomic_load_n(&s->rounds, __ATOMIC_RELAXED);
	__atomic_store_n(&s->c_ran, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * C wakes A and blocks on a wait queue with nothing else runnable, so the
 * worker hands off to A without the rq lock and the rq still lists C as its
 * running task; A and B then ping-pong by direct hand-offs. The main thread
 * wakes C from outside the runtime: C must run within a few rounds of the
 * pair (the waker flags the worker), not only when the pair stops or the
 * next kernel tick ends the chain (tens of thousands of rounds).
 */
Test(sched_runtime, task_woken_from_outside_during_a_hand_off_chain_runs_promptly, .timeout = 60)
{
	int stale = 0, its = 10;

	for (int it = 0; it < its; it++) {
		struct cl_runtime *rt = new_rt(1, 0);
		struct cl_spawn_attr sa;
		struct cl_rt_task *t[3];
		struct stale s;
		long r0;

		memset(&s, 0, sizeof(s));
		memset(&sa, 0, sizeof(sa));
		cl_waitq_init(&s.wq);
		s.ca = cl_chan_create(sizeof(int), 1);
		s.ab = cl_chan_create(sizeof(int), 1);
		s.ba = cl_chan_create(sizeof(int), 1);
		t[0] = cl_spawn(rt, &sa, stale_b, &s);
		t[1] = cl_spawn(rt, &sa, stale_a, &s);
		t[2] = cl_spawn(rt, &sa, stale_c, &s);
		cr_assert(t[0] && t[1] && t[2]);
		while (!__atomic_load_n(&s.waiting, __ATOMIC_ACQUIRE) ||
		       !__atomic_load_n(&s.rounds, __ATOMIC_RELAXED))
			CL_CPU_RELAX();
		cl_waitq_lock(&s.wq);
		s.woken = 1;
		cl_waitq_unlock(&s.wq);
		cr_assert_eq(cl_waitq_wake_one(&s.wq), 1);
		r0 = __atomic_load_n(&s.rounds, __ATOMIC_RELAXED);
		for (int i = 0; i < 3; i++)
			cr_assert_eq(cl_join(t[i], NULL), 0);
		cr_assert(s.c_ran, "C never ran");
		/* white box: did the wakeup find C still queued as the rq's curr? */
		stale += (int)(rt->workers[0].nr_stale_wakes != 0);
		cr_log_info("C ran %ld rounds after its wakeup (pair ran %ld rounds; %s)",
			    s.rounds_at_c - r0, s.rounds,
			    rt->workers[0].nr_stale_wakes ? "woken while the rq's stale curr" : "woken normally");
		cr_assert_lt(s.rounds_at_c - r0, 2000, "C waited %ld rounds of the pair after its wakeup",
			     s.rounds_at_c - r0);
		cl_chan_destroy(s.ca);
		cl_chan_destroy(s.ab);
		cl_chan_destroy(s.ba);
		destroy_ok(rt);
	}
	cr_log_info("%d of %d wakeups found C still the rq's curr", stale, its);
}

/* ---- balancing ---- */

struct spread {
	int seen[2];
	int stop;
};

static void *spread_task(void *p)
{
	struct spread *s = (struct spread *)p;

	for (long i = 0; i < 2000000 && !__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE); i++) {
		int w = cl_worker_id();

		__atomic_store_n(&s->seen[w], 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->seen[0], __ATOMIC_RELAXED) &&
		    __atomic_load_n(&s->seen[1], __ATOMIC_RELAXED))
			__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
		burn(2000);
		cl_yield();
	}
	return NULL;
}

Test(sched_runtime, balancer_moves_tasks_to_an_idle_worker, .timeout = 120)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct cl_spawn_attr sa;
	struct spread s;
	struct cl_rt_task *t[6];

	memset(&s, 0, sizeof(s));
	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(0); /* all start on worker 0, not pinned */
	for (int i = 0; i < 6; i++)
		t[i] = cl_spawn(rt, &sa, spread_task, &s);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert(s.seen[0] && s.seen[1], "tasks ran only on worker %d", s.seen[0] ? 0 : 1);
	destroy_ok(rt);
}

static void *pinned_check(void *p)
{
	int want = (int)(uintptr_t)p, bad = 0;

	for (int i = 0; i < 2000; i++) {
		bad += cl_worker_id() != want;
		burn(500);
		cl_yield();
	}
	return (void *)(uintptr_t)bad;
}

Test(sched_runtime, pinned_tasks_stay_on_their_worker)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct cl_spawn_attr sa;
	struct cl_rt_task *t[6];

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(1);
	sa.pin = 1;
	for (int i = 0; i < 6; i++)
		t[i] = cl_spawn(rt, &sa, pinned_check, (void *)(uintptr_t)1);
	for (int i = 0; i < 6; i++) {
		void *r = (void *)1;

		cr_assert_eq(cl_join(t[i], &r), 0);
		cr_assert_null(r, "a pinned task ran on the other worker %lu times", (unsigned long)(uintptr_t)r);
	}
	destroy_ok(rt);
}

/* ---- shutdown ---- */

static void *recv_one(void *p)
{
	int v;

	return cl_chan_recv((struct cl_chan *)p, &v) == 0 ? (void *)1 : (void *)2;
}

static void *spawn_more(void *p)
{
	struct cl_runtime *rt = cl_self()->rt;

	for (int i = 0; i < 20; i++)
		if (!cl_spawn(rt, &(struct cl_spawn_attr){ .detached = 1 }, ret_arg_plus_one, p))
			return (void *)1;
	return NULL;
}

Test(sched_runtime, shutdown_waits_for_running_and_detached_tasks)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);

	for (int i = 0; i < 10; i++)
		cr_assert_not_null(
			cl_spawn(rt, &(struct cl_spawn_attr){ .detached = 1 }, spawn_more, NULL));
	cr_assert_eq(cl_runtime_shutdown(rt), 0, "shutdown: %s", strerror(errno));
	cr_assert_null(cl_spawn(rt, NULL, ret_arg_plus_one, NULL));
	cr_assert_eq(errno, EPIPE);
	destroy_ok(rt);
}

Test(sched_runtime, shutdown_with_blocked_tasks_fails_then_succeeds_once_unblocked, .timeout = 60)
{
	struct cl_runtime *rt = new_rt(2, CL_RUNTIME_UNPINNED);
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_rt_task *t[3];
	void *r;

	for (int i = 0; i < 3; i++)
		t[i] = cl_spawn(rt, NULL, recv_one, c);
	errno = 0;
	cr_assert_eq(cl_runtime_shutdown(rt), -1, "three tasks wait forever: shutdown must fail");
	cr_assert_eq(errno, EDEADLK);
	cr_assert_eq(cl_chan_destroy(c), -1, "tasks still wait on it");
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_chan_close(c), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(cl_join(t[i], &r), 0);
		cr_assert_eq((uintptr_t)r, 2, "woken by close: EPIPE");
	}
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_chan_destroy(c), 0);
	destroy_ok(rt);
}
