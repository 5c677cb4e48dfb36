/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_wake.c - wakeups across workers: a channel
 * message handed to a blocked receiver (or taken from a blocked sender) on
 * another worker arrives intact at every size, the small ones carried in
 * the waiter record, without a byte written past the message; a burst of
 * wakeups onto one worker (its remote wake list then holds more than one
 * task) loses none, pinned or free to move; wake-affine: a ping-pong pair
 * started on two workers ends up on one unless pinned or turned off, and
 * its wake_wide() guard tells a pair from a one-to-many pattern; a task
 * woken only from one (busier) worker makes it its home and moves there.
 * A waker that comes while the worker of a task that just blocked is idle
 * but not yet spinning finds the record watched (the CL_INJECT() point 65
 * holds the worker there until the waker has sent), and one that comes
 * while that worker is still switching to its idle loop (point 66) gets
 * the channel's lock without waiting for the switch; a watch begun at the
 * block itself (point 67), whose worker then finds another task to run
 * after all, ends with the switch to it, the claimed task queued.
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <cachelocal/sched/runtime.h>

#define MSG_MAX 100
#define CANARY 0xa5

/* A runtime of two workers, created with @flags and idle spin @spin_ns (0: default). */
static struct cl_runtime *new_rt2_spin(unsigned int flags, uint64_t spin_ns)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	a.flags = flags;
	a.spin_ns = spin_ns;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static struct cl_runtime *new_rt2_flags(unsigned int flags)
{
	return new_rt2_spin(flags, 0);
}

static struct cl_runtime *new_rt2(void)
{
	return new_rt2_flags(0);
}

/* Start @fn on @worker: pinned there, or free to move (@pin 0). */
static struct cl_rt_task *spawn_at(struct cl_runtime *rt, unsigned int worker, int pin,
				   void *(*fn)(void *), void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = pin;
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t, "cl_spawn: %s", strerror(errno));
	return t;
}

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *),
				   void *arg)
{
	return spawn_at(rt, worker, 1, fn, arg);
}

struct sized {
	struct cl_chan *c;
	size_t esize;
	int n;
	int bad;     /* messages with a wrong byte */
	int overrun; /* receives that wrote past the message */
};

static void *sized_sender(void *p)
{
	struct sized *a = (struct sized *)p;
	unsigned char m[MSG_MAX];

	for (int i = 0; i < a->n; i++) {
		for (size_t j = 0; j < a->esize; j++)
			m[j] = (unsigned char)(i * 7 + (int)j);
		if (cl_chan_send(a->c, m))
			return (void *)1;
	}
	return NULL;
}

static void *sized_receiver(void *p)
{
	struct sized *a = (struct sized *)p;
	unsigned char m[MSG_MAX + 8];

	for (int i = 0; i < a->n; i++) {
		memset(m, CANARY, sizeof(m));
		if (cl_chan_recv(a->c, m))
			return (void *)1;
		for (size_t j = 0; j < a->esize; j++)
			if (m[j] != (unsigned char)(i * 7 + (int)j)) {
				a->bad++;
				break;
			}
		for (size_t j = a->esize; j < sizeof(m); j++)
			if (m[j] != CANARY) {
				a->overrun++;
				break;
			}
		if (i % 3 == 0) /* let the sender fill the channel and block too */
			cl_yield();
	}
	return NULL;
}

Test(sched_runtime_wake, channel_messages_of_every_size_cross_workers_intact)
{
	static const size_t sizes[] = { 1, 3, 4, 7, 8, 9, 16, MSG_MAX };
	struct cl_runtime *rt = new_rt2();

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct sized a = { cl_chan_create(sizes[k], 1), sizes[k], 1000, 0, 0 };
		void *rs = (void *)1, *rr = (void *)1;
		struct cl_rt_task *r, *s;

		cr_assert_not_null(a.c);
		r = spawn_on(rt, 1, sized_receiver, &a);
		s = spawn_on(rt, 0, sized_sender, &a);
		cr_assert_eq(cl_join(s, &rs), 0);
		cr_assert_eq(cl_join(r, &rr), 0);
		cr_assert_null(rs);
		cr_assert_null(rr);
		cr_assert_eq(a.bad, 0, "%d messages of %zu bytes arrived changed", a.bad, sizes[k]);
		cr_assert_eq(a.overrun, 0, "%d receives of %zu bytes wrote past the message", a.overrun,
			     sizes[k]);
		cr_assert_eq(cl_chan_destroy(a.c), 0);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

#define BURST 32
#define ROUNDS 30

static struct burst {
	struct cl_waitq wq;  /* the waiters wait here for their round */
	struct cl_waitq kwq; /* the waker waits here for the waiters */
	int round;           /* under wq's lock */
	atomic_int arrived;  /* waiters that reached their round */
	atomic_int woken;    /* wakeups seen, all rounds */
} burst;

static void *burst_waiter(void *p)
{
	(void)p;
	for (int r = 1; r <= ROUNDS; r++) {
		cl_waitq_lock(&burst.wq);
		atomic_fetch_add(&burst.arrived, 1);
		cl_waitq_wake_one(&burst.kwq);
		while (burst.round < r) {
			cl_waitq_wait(&burst.wq);
			cl_waitq_lock(&burst.wq);
		}
		cl_waitq_unlock(&burst.wq);
		atomic_fetch_add(&burst.woken, 1);
	}
	return NULL;
}

static void *burst_waker(void *p)
{
	(void)p;
	for (int r = 1; r <= ROUNDS; r++) {
		/* every waiter is at round r (waiting, or about to) */
		cl_waitq_lock(&burst.kwq);
		while (atomic_load(&burst.arrived) < BURST * r) {
			cl_waitq_wait(&burst.kwq);
			cl_waitq_lock(&burst.kwq);
		}
		cl_waitq_unlock(&burst.kwq);
		cl_waitq_lock(&burst.wq);
		burst.round = r;
		cl_waitq_unlock(&burst.wq);
		cl_waitq_wake_all(&burst.wq); /* up to BURST pushes onto worker 1's list */
	}
	return NULL;
}

static void burst_run(int pin)
{
	struct cl_runtime *rt = new_rt2();
	struct cl_rt_task *w[BURST], *k;

	memset(&burst, 0, sizeof(burst));
	cl_waitq_init(&burst.wq);
	cl_waitq_init(&burst.kwq);
	for (int i = 0; i < BURST; i++)
		w[i] = spawn_at(rt, 1, pin, burst_waiter, NULL);
	k = spawn_at(rt, 0, pin, burst_waker, NULL);
	cr_assert_eq(cl_join(k, NULL), 0);
	for (int i = 0; i < BURST; i++)
		cr_assert_eq(cl_join(w[i], NULL), 0);
	cr_assert_eq(atomic_load(&burst.woken), BURST * ROUNDS);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_wake, burst_of_wakeups_onto_one_worker_loses_none, .timeout = 120)
{
	burst_run(1);
}

/* The same with every task free to move: wakees the waker's worker takes
 * (wake-affine) and the ones it leaves where they blocked, all arrive. */
Test(sched_runtime_wake, burst_of_wakeups_loses_none_when_wakees_may_move, .timeout = 120)
{
	burst_run(0);
}

/* ---- wake-affine ---- */

#define PP_ROUNDS 1000

struct pp {
	struct cl_runtime *rt;
	struct cl_chan *in, *out;
	int first;                  /* sends first */
	int bad;                    /* values out of order */
	unsigned int jitter;        /* before each send, spin a random 0..jitter-1 relaxes */
	unsigned int seed;
	unsigned char at[PP_ROUNDS]; /* the worker it ran on after each round's receive */
};

/* A random delay of up to @a->jitter CPU relaxes (xorshift). */
static void pp_jitter(struct pp *a)
{
	unsigned int n;

	if (!a->jitter)
		return;
	a->seed ^= a->seed << 13;
	a->seed ^= a->seed >> 17;
	a->seed ^= a->seed << 5;
	for (n = a->seed % a->jitter; n; n--)
		CL_CPU_RELAX();
}

static void *pp_task(void *p)
{
	struct pp *a = (struct pp *)p;
	struct cl_rt_task *self = cl_self();
	int v = 0;

	for (int i = 0; i < PP_ROUNDS; i++) {
		if (a->first) {
			pp_jitter(a);
			if (cl_chan_send(a->out, &i))
				return (void *)1;
		}
		if (cl_chan_recv(a->in, &v))
			return (void *)1;
		a->bad += v != i;
		a->at[i] = (unsigned char)(self->w - a->rt->workers);
		if (!a->first) {
			pp_jitter(a);
			if (cl_chan_send(a->out, &i))
				return (void *)1;
		}
	}
	return NULL;
}

/* A pair started on workers 0 and 1 ping-pongs; return the rounds in which
 * both ran on the same worker, the wake-affine moves in *@moves and the
 * wakeups claimed on watched records in *@claims (@spin_ns: idle spin). */
static int pp_run_spin(unsigned int flags, int pin, uint64_t spin_ns, unsigned int jitter,
		       uint64_t *moves, uint64_t *claims)
{
	struct cl_runtime *rt = new_rt2_spin(flags, spin_ns);
	static struct pp a, b;
	void *ra_ret = (void *)1, *rb_ret = (void *)1;
	struct cl_rt_task *ta, *tb;
	int same = 0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.rt = b.rt = rt;
	a.in = b.out = cl_chan_create(sizeof(int), 1);
	a.out = b.in = cl_chan_create(sizeof(int), 1);
	cr_assert(a.in && a.out);
	a.first = 1;
	a.jitter = b.jitter = jitter;
	a.seed = 12345;
	b.seed = 54321;
	tb = spawn_at(rt, 1, pin, pp_task, &b);
	ta = spawn_at(rt, 0, pin, pp_task, &a);
	cr_assert_eq(cl_join(ta, &ra_ret), 0);
	cr_assert_eq(cl_join(tb, &rb_ret), 0);
	cr_assert_null(ra_ret);
	cr_assert_null(rb_ret);
	cr_assert_eq(a.bad + b.bad, 0, "%d values out of order", a.bad + b.bad);
	for (int i = 0; i < PP_ROUNDS; i++)
		same += a.at[i] == b.at[i];
	*moves = rt->workers[0].nr_affine_wakes + rt->workers[1].nr_affine_wakes;
	*claims = rt->workers[0].nr_watch_hits + rt->workers[1].nr_watch_hits;
	for (int i = 0; i < 2; i++) /* each task queued from elsewhere ran: no mark is left */
		cr_assert_eq(CL_ATOMIC_LOAD(&rt->workers[i].nr_ext_waiting, CL_RELAXED), 0u,
			     "worker %d: %u tasks counted as queued from elsewhere", i,
			     CL_ATOMIC_LOAD(&rt->workers[i].nr_ext_waiting, CL_RELAXED));
	cr_assert_eq(cl_chan_destroy(a.in), 0);
	cr_assert_eq(cl_chan_destroy(a.out), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	return same;
}

static int pp_run(unsigned int flags, int pin, uint64_t *moves)
{
	uint64_t claims;

	return pp_run_spin(flags, pin, 0, 0, moves, &claims);
}

Test(sched_runtime_wake, unpinned_pair_on_two_workers_ends_up_on_one, .timeout = 120)
{
	uint64_t moves;
	int same = pp_run(0, 0, &moves);

	cr_log_info("unpinned pair: %d of %d rounds on one worker, %llu wake-affine moves", same,
		    PP_ROUNDS, (unsigned long long)moves);
	cr_assert_geq(moves, 1, "no wakee moved to its waker's worker");
	cr_assert_geq(same, PP_ROUNDS / 2, "the pair shared a worker in %d of %d rounds only", same,
		      PP_ROUNDS);
}

Test(sched_runtime_wake, pinned_pair_is_never_moved, .timeout = 120)
{
	uint64_t moves;
	int same = pp_run(0, 1, &moves);

	cr_assert_eq(moves, 0, "%llu pinned wakees moved", (unsigned long long)moves);
	cr_assert_eq(same, 0, "a pinned task ran on the other worker in %d rounds", same);
}

Test(sched_runtime_wake, no_wake_affine_flag_moves_no_wakee, .timeout = 120)
{
	uint64_t moves;

	(void)pp_run(CL_RUNTIME_NO_WAKE_AFFINE, 0, &moves);
	cr_assert_eq(moves, 0, "%llu wakees moved with CL_RUNTIME_NO_WAKE_AFFINE", (unsigned long long)moves);
}

/* wake_wide(): a pair (few flips on both sides) or a task waking many
 * passive ones (the wakee flips less than F times) is pulled; two sides
 * that both switch partners, one F times as often, are spread. */
Test(sched_runtime_wake, wake_wide_tells_a_pair_from_one_to_many)
{
	struct cl_rt_task self;

	memset(&self, 0, sizeof(self));
	self.wakee_flips = 0;
	cr_assert_eq(cl__rt_wake_wide(&self, 0, 2), 0, "a steady pair");
	self.wakee_flips = 100;
	cr_assert_eq(cl__rt_wake_wide(&self, 1, 2), 0, "one waker, passive wakees");
	cr_assert_eq(cl__rt_wake_wide(&self, 10, 2), 1, "waker flips 10x the wakee's 10");
	cr_assert_eq(cl__rt_wake_wide(&self, 60, 2), 0, "both flip alike");
	self.wakee_flips = 10;
	cr_assert_eq(cl__rt_wake_wide(&self, 100, 2), 1, "the wakee is the one that flips");
	cr_assert_eq(cl__rt_wake_wide(&self, 100, 16), 0, "under the factor of 16 workers");
}

/* ---- a home by its wakers' votes ---- */

#define HOME_SENDERS 1
#define HOME_MSGS 800 /* per sender, each acknowledged before the next */

static struct home {
	struct cl_chan *c, *ack[HOME_SENDERS];
	atomic_int done;   /* the receiver has everything: the spinner stops */
	int bad;           /* messages out of order */
	int home;          /* the receiver's home_cpu at the end */
} home;

static void *home_sender(void *p)
{
	int from = (int)(intptr_t)p, a;

	for (int i = 0; i < HOME_MSGS; i++) {
		int v = from * HOME_MSGS + i;

		if (cl_chan_send(home.c, &v) || cl_chan_recv(home.ack[from], &a) || a != v)
			return (void *)1;
	}
	return NULL;
}

/* Keeps worker 1 busier than worker 0 for as long as the receiver runs. */
static void *home_spinner(void *p)
{
	(void)p;
	while (!atomic_load(&home.done))
		cl_yield();
	return NULL;
}

static void *home_receiver(void *p)
{
	int next[HOME_SENDERS] = { 0 };

	(void)p;
	for (int i = 0; i < HOME_SENDERS * HOME_MSGS; i++) {
		int v, from;

		if (cl_chan_recv(home.c, &v))
			return (void *)1;
		from = v / HOME_MSGS;
		if (v < 0 || from >= HOME_SENDERS || v % HOME_MSGS != next[from]++) {
			home.bad++;
			break;
		}
		if (cl_chan_send(home.ack[from], &v))
			return (void *)1;
	}
	home.home = CL_READ_ONCE(cl_self()->task.home_cpu);
	atomic_store(&home.done, 1);
	return NULL;
}

/* A receiver on worker 0, woken only by senders pinned on worker 1, which
 * a pinned spinner keeps busier than worker 0 (the load rule alone never
 * moves the receiver there), each sender waiting for its acknowledgement
 * before it sends again. Return the wake-affine moves. */
static uint64_t home_run(unsigned int flags)
{
	struct cl_runtime *rt = new_rt2_flags(flags);
	struct cl_rt_task *t[HOME_SENDERS + 2];
	uint64_t moves;

	memset(&home, 0, sizeof(home));
	home.home = -2;
	home.c = cl_chan_create(sizeof(int), HOME_SENDERS);
	cr_assert_not_null(home.c);
	for (int i = 0; i < HOME_SENDERS; i++)
		cr_assert_not_null(home.ack[i] = cl_chan_create(sizeof(int), 1));
	t[0] = spawn_at(rt, 0, 0, home_receiver, NULL);
	t[1] = spawn_on(rt, 1, home_spinner, NULL);
	for (int i = 0; i < HOME_SENDERS; i++)
		t[2 + i] = spawn_on(rt, 1, home_sender, (void *)(intptr_t)i);
	for (int i = 0; i < HOME_SENDERS + 2; i++) {
		void *r = (void *)1;

		cr_assert_eq(cl_join(t[i], &r), 0);
		cr_assert_null(r, "task %d failed", i);
	}
	cr_assert_eq(home.bad, 0, "a message out of order");
	moves = rt->workers[0].nr_affine_wakes + rt->workers[1].nr_affine_wakes;
	cr_assert_eq(cl_chan_destroy(home.c), 0);
	for (int i = 0; i < HOME_SENDERS; i++)
		cr_assert_eq(cl_chan_destroy(home.ack[i]), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	return moves;
}

Test(sched_runtime_wake, task_woken_from_one_worker_gets_it_as_home_and_moves_there, .timeout = 120)
{
	uint64_t moves = home_run(0);

	cr_log_info("home: %llu wake-affine moves, home_cpu %d", (unsigned long long)moves, home.home);
	cr_assert_geq(moves, 1, "the receiver never moved to its wakers' busier worker");
	cr_assert_eq(home.home, 1, "home_cpu %d, want 1 (every waker ran on worker 1)", home.home);
}

Test(sched_runtime_wake, no_wake_affine_flag_sets_no_home, .timeout = 120)
{
	uint64_t moves = home_run(CL_RUNTIME_NO_WAKE_AFFINE);

	cr_assert_eq(moves, 0, "%llu wakees moved with CL_RUNTIME_NO_WAKE_AFFINE", (unsigned long long)moves);
	cr_assert_eq(home.home, -1, "home_cpu %d with CL_RUNTIME_NO_WAKE_AFFINE", home.home);
}

/* ---- watched records ---- */

/*
 * A pinned pair on two workers: every wakeup crosses workers, and the
 * idle worker watches the record of the task that just blocked on it.
 * Spins of 1..8 us, and each send delayed by a random spin of up to about
 * as long, end many watches just as the waker claims the record (the
 * spin's end must then take the claim) or just before (the waker must
 * then push); a lost wakeup hangs the pair (the timeout fails the test),
 * a doubled one breaks the order.
 */
/* The other side of a line ping-pong between CPUs 0 and 1 (the workers'). */
static _Atomic int pong_flag;

static void *pong(void *arg)
{
	(void)arg;
	cl__rt_pin_self(1);
	for (int i = 0; i < 2000; i++) {
		while (atomic_load(&pong_flag) != 1)
			if (atomic_load(&pong_flag) == 3)
				return NULL;
		atomic_store(&pong_flag, 2);
	}
	return NULL;
}

/* Can CPUs 0 and 1 run at the same instant? A line passed there and back
 * within @ns at least once in 2000 tries says yes. Under an emulator that
 * runs every guest CPU on one host thread (QEMU's single-threaded TCG,
 * the many-CPU guests of make check-smp) each pass waits for a time slice
 * of milliseconds: a watch of microseconds then always ends before its
 * waker runs, and no wakeup can be claimed. */
static int cpus_run_at_once(uint64_t ns)
{
	pthread_t th;
	int fast = 0;

	atomic_store(&pong_flag, 0);
	cr_assert_eq(pthread_create(&th, NULL, pong, NULL), 0);
	cl__rt_pin_self(0);
	for (int i = 0; i < 2000 && !fast; i++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		atomic_store(&pong_flag, 1);
		while (atomic_load(&pong_flag) != 2)
			;
		clock_gettime(CLOCK_MONOTONIC, &b);
		fast = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000ll + (b.tv_nsec - a.tv_nsec)) <= ns;
	}
	atomic_store(&pong_flag, 3);
	cr_assert_eq(pthread_join(th, NULL), 0);
	return fast;
}

Test(sched_runtime_wake, watched_record_wakeups_lose_none_as_watches_end, .timeout = 240)
{
	uint64_t claims = 0, moves;
	int at_once = cpus_run_at_once(8000);

	for (uint64_t spin = 1000; spin <= 8000; spin *= 2) {
		uint64_t c;
		int same = pp_run_spin(0, 1, spin, (unsigned int)spin / 4, &moves, &c);

		cr_assert_eq(same, 0);
		claims += c;
	}
	cr_log_info("watched records: %llu wakeups claimed in %d round trips%s", (unsigned long long)claims,
		    4 * PP_ROUNDS, at_once ? "" : " (CPUs 0 and 1 never ran at once: no claim required)");
	if (at_once)
		cr_assert_geq(claims, 1, "no wakeup was claimed on a watched record");
}

/* ---- the watch starts with the switch to idle ---- */

static atomic_int idle_armed; /* the next worker to reach point 65 (or 66) holds there */
static atomic_int idle_point; /* ... which point: 65 or 66 */
static atomic_int idle_held;  /* ... and has got there */
static atomic_int idle_sent;  /* the waker's send returned */
static int idle_sent_in_hold; /* ... while the worker held (within 10 s) */
static uint64_t idle_drains, idle_hits; /* worker 0's counts at the hold */
static struct cl_runtime *idle_rt;

static void os_yield(void)
{
	sched_yield();
}

/* Wait (bounded: 10 s) until *@flag is set, calling @pause between looks;
 * 1 if it was set. */
static int wait_flag_pausing(atomic_int *flag, void (*pause)(void))
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(flag)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10)
			return 0;
		pause();
	}
	return 1;
}

/* ... giving the CPU away between looks. */
static int wait_flag(atomic_int *flag)
{
	return wait_flag_pausing(flag, os_yield);
}

static atomic_int early_armed; /* the next block that watches its record early (point 67) holds */
static atomic_int early_held;  /* ... and has got there */
static atomic_int early_go;    /* ... until this is set (within 10 s) */

/* Point 65 (a worker idle, before its spin) or 66 (a worker switching to
 * idle): the armed one notes its counts and holds until the waker has
 * sent. Point 67 (a block that watched early): the armed one holds until
 * early_go. Runs on that worker's thread. */
static void inject(int n)
{
	if (n == 67) {
		if (atomic_exchange(&early_armed, 0)) {
			atomic_store(&early_held, 1);
			(void)wait_flag(&early_go);
		}
		return;
	}
	if (n != atomic_load(&idle_point) || !atomic_exchange(&idle_armed, 0))
		return;
	idle_drains = idle_rt->workers[0].nr_remote_drains;
	idle_hits = idle_rt->workers[0].nr_watch_hits;
	atomic_store(&idle_held, 1);
	idle_sent_in_hold = wait_flag(&idle_sent);
}

/* Receive an int from @c into *@v, or store -1 there if the receive failed. */
static void recv_or_minus_one(struct cl_chan *c, int *v)
{
	if (cl_chan_recv(c, v) != 0)
		*v = -1;
}

struct idle_pair {
	struct cl_chan *c;
	int got, sent_ok, held;
};

static void *idle_receiver(void *p)
{
	struct idle_pair *ip = (struct idle_pair *)p;

	atomic_store(&idle_armed, 1); /* worker 1 runs the sender, which spins: only ours idles */
	recv_or_minus_one(ip->c, &ip->got);
	return NULL;
}

static void *idle_sender(void *p)
{
	struct idle_pair *ip = (struct idle_pair *)p;
	int v = 42;

	ip->held = wait_flag(&idle_held);
	ip->sent_ok = cl_chan_send(ip->c, &v) == 0;
	atomic_store(&idle_sent, 1);
	return NULL;
}

/* Run the pair with worker 0 held at @point: the message arrives, as a
 * claim on worker 0's watched record. Return worker 0's remote drains
 * from the hold on. */
static uint64_t idle_pair_run(int point)
{
	struct idle_pair ip = { cl_chan_create(sizeof(int), 1), 0, 0, 0 };
	struct cl_rt_task *s, *r;
	uint64_t drains, hits;

	cr_assert_not_null(ip.c);
	atomic_store(&idle_point, point);
	atomic_store(&idle_held, 0);
	atomic_store(&idle_sent, 0);
	idle_rt = new_rt2_spin(0, 5000000000ull); /* the spin outlasts any host delay */
	s = spawn_at(idle_rt, 1, 1, idle_sender, &ip);
	r = spawn_at(idle_rt, 0, 1, idle_receiver, &ip);
	cr_assert_eq(cl_join(r, NULL), 0);
	cr_assert_eq(cl_join(s, NULL), 0);
	cr_assert_eq(cl_runtime_shutdown(idle_rt), 0, "shutdown: %s", strerror(errno));
	drains = idle_rt->workers[0].nr_remote_drains - idle_drains;
	hits = idle_rt->workers[0].nr_watch_hits - idle_hits;
	cl_runtime_destroy(idle_rt);
	cr_assert_eq(cl_chan_destroy(ip.c), 0);
	cr_assert(ip.held, "worker 0 never held at point %d", point);
	cr_assert(ip.sent_ok);
	cr_assert_eq(ip.got, 42);
	cr_assert_eq(hits, 1, "wakeups claimed on worker 0's watched record: %llu (remote drains %llu)",
		     (unsigned long long)hits, (unsigned long long)drains);
	return drains;
}

/*
 * A receiver blocks on worker 0, whose pick then finds nothing; the worker
 * is held at point 65, before its idle spin, while the sender on worker 1
 * sends. The record must already be watched (from the switch that took the
 * worker idle, before the channel's lock was released): the wakeup is
 * claimed there, not pushed on worker 0's remote list. A watch begun only
 * in the spin is not there yet: the send pushes, and the worker drains.
 */
Test(sched_runtime_wake, waker_finds_the_record_watched_before_the_idle_spin, .timeout = 60)
{
	uint64_t drains = idle_pair_run(65);

	cr_assert_eq(drains, 0, "remote wake-list drains on worker 0: %llu", (unsigned long long)drains);
}

/*
 * The receiver's worker is held in its switch to the idle loop (point 66:
 * the receiver's context not saved yet) while the sender sends. The
 * channel's lock must already be free (released with the watch begun,
 * before the switch), so the send completes during the hold, as a claim
 * on the watched record; the receiver, started only once its worker has
 * switched and taken the claim, gets the message. With the lock released
 * after the switch, the sender waits for it and the hold ends (10 s)
 * without the send.
 */
Test(sched_runtime_wake, waker_gets_the_lock_while_the_blocked_task_is_switched_out, .timeout = 60)
{
	(void)idle_pair_run(66);
	cr_assert(idle_sent_in_hold, "the send did not complete while the receiver was switched out");
}

/* ---- a watch begun at the block itself ---- */

struct early {
	struct cl_chan *c;
	atomic_int got;
	int v, spun_out;
};

static void *early_receiver(void *p)
{
	struct early *e = (struct early *)p;

	atomic_store(&early_armed, 1);
	recv_or_minus_one(e->c, &e->v);
	atomic_store(&e->got, 1);
	return NULL;
}

/* A safe point (no yield): under ThreadSanitizer, where preemption is by
 * the mark only, cl_preempt_enable() acts on it. */
static void preempt_point(void)
{
	cl_preempt_disable();
	cl_preempt_enable();
}

/* Never blocks or yields: returns once the receiver has its message, or
 * after 10 s (spun_out). Preempted at the end of its slice. */
static void *early_spinner(void *p)
{
	struct early *e = (struct early *)p;

	e->spun_out = !wait_flag_pausing(&e->got, preempt_point);
	return NULL;
}

/*
 * A receiver alone on worker 0 blocks: its record is watched, and the
 * channel's lock released, at the block itself (point 67: before the
 * scheduler's work), since the worker is about to go idle. Held there, it
 * gets company: a task that never yields is spawned onto worker 0, and the
 * message is sent, a claim on the watched record. The worker then does not
 * go idle but switches to the spinner, so the switch must end the watch
 * and queue the claimed receiver, which then runs when the spinner's slice
 * ends. Left watched, the claim would wait for the worker's next idle
 * pick, which never comes while the spinner spins: it gives up after 10 s.
 */
Test(sched_runtime_wake, a_task_that_turns_up_before_the_switch_ends_an_early_watch, .timeout = 60)
{
	struct cl_runtime *rt = new_rt2_spin(0, 5000000000ull);
	struct early e;
	struct cl_rt_task *r, *s;
	int v = 42;

	memset(&e, 0, sizeof(e));
	e.c = cl_chan_create(sizeof(int), 1);
	cr_assert_not_null(e.c);
	atomic_store(&early_held, 0);
	atomic_store(&early_go, 0);
	r = spawn_at(rt, 0, 1, early_receiver, &e);
	cr_assert(wait_flag(&early_held), "the receiver's block did not watch its record early");
	s = spawn_at(rt, 0, 1, early_spinner, &e);
	cr_assert_eq(cl_chan_trysend(e.c, &v), 0, "trysend: %s", strerror(errno));
	cr_assert_eq(rt->workers[0].nr_watch_hits, 0); /* not taken yet: the worker is held */
	atomic_store(&early_go, 1);
	cr_assert_eq(cl_join(r, NULL), 0);
	cr_assert_eq(cl_join(s, NULL), 0);
	cr_assert_eq(e.v, 42);
	cr_assert(!e.spun_out, "the claimed receiver did not run beside the spinner (10 s)");
	cr_assert_eq(rt->workers[0].nr_watch_hits, 1);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	cr_assert_eq(cl_chan_destroy(e.c), 0);
}

/* ---- a task that released its wait list early still runs ---- */

struct early_ho {
	struct cl_chan *c1, *c2, *c3;
	atomic_int r_waiting, sent;
	int v1, v2, v3;
};

/* Unpinned on worker 0: waits on c1; woken by the local waker's send and
 * run by its hand-off, it blocks on c3, watched early: held at point 67. */
static void *early_ho_receiver(void *p)
{
	struct early_ho *h = (struct early_ho *)p;

	atomic_store(&h->r_waiting, 1);
	recv_or_minus_one(h->c1, &h->v1);
	recv_or_minus_one(h->c3, &h->v3);
	return NULL;
}

/* Pinned on worker 0: wakes the receiver there (onto the worker's wake
 * list), then blocks, handing the worker to it directly. */
static void *early_ho_local_waker(void *p)
{
	struct early_ho *h = (struct early_ho *)p;
	int v = 1;

	cl_yield(); /* a full switch: its spawn onto the rq stopped hand-offs until one */
	if (cl_chan_send(h->c1, &v) != 0)
		return (void *)1;
	atomic_store(&early_armed, 1); /* its next block (on c3) holds */
	recv_or_minus_one(h->c2, &h->v2);
	return NULL;
}

/* Pinned on worker 1, alone there: a waker wake-affine would move its wakee to. */
static void *early_ho_remote_waker(void *p)
{
	struct early_ho *h = (struct early_ho *)p;
	int v = 3, rc = cl_chan_send(h->c3, &v);

	atomic_store(&h->sent, 1);
	return (void *)(intptr_t)(rc != 0);
}

/*
 * A task that came by a direct hand-off (so not queued on its rq, nor its
 * rq's current) blocks alone on worker 0: its record is watched and the
 * channel's lock released at the block itself, before its context is saved
 * (held there, point 67). A waker alone on worker 1 then sends. Wake-affine
 * would move the task to worker 1 (it looks neither queued nor running) and
 * worker 1 would resume it from a stale saved context while it still runs
 * on worker 0's thread (seen as tasks' registers wrong after a switch, or
 * two threads scheduling as one worker). The wakeup must be left to worker
 * 0 (a claim on the watched record). Rounds where the hand-off did not
 * happen (the coarse clock moved: a full switch instead) are run again.
 */
Test(sched_runtime_wake, wake_affine_never_moves_a_task_before_its_context_is_saved, .timeout = 120)
{
	int handed = 0, round;

	for (round = 0; round < 20 && !handed; round++) {
		struct cl_runtime *rt = new_rt2_spin(0, 5000000000ull);
		struct early_ho h;
		struct cl_rt_task *r, *a, *s;
		uint64_t aff1;
		void *ret = NULL;
		int two = 2;

		memset(&h, 0, sizeof(h));
		h.c1 = cl_chan_create(sizeof(int), 1);
		h.c2 = cl_chan_create(sizeof(int), 1);
		h.c3 = cl_chan_create(sizeof(int), 1);
		cr_assert(h.c1 && h.c2 && h.c3);
		atomic_store(&early_armed, 0);
		atomic_store(&early_held, 0);
		atomic_store(&early_go, 0);
		r = spawn_at(rt, 0, 0, early_ho_receiver, &h);
		cr_assert(wait_flag(&h.r_waiting));
		while (CL_ATOMIC_LOAD(&rt->workers[0].in_task, CL_RELAXED)) /* it blocked: worker 0 idle */
			sched_yield();
		a = spawn_at(rt, 0, 1, early_ho_local_waker, &h);
		cr_assert(wait_flag(&early_held), "the receiver's block on c3 did not watch its record early");
		handed = rt->workers[0].nr_handoffs > 0 && cl__rt_handle_task(r)->w == &rt->workers[0];
		aff1 = rt->workers[1].nr_affine_wakes;
		s = spawn_at(rt, 1, 1, early_ho_remote_waker, &h);
		/* checked before the join: moved, the receiver would be resumed
		 * on worker 1 from its old saved context once the sender exits */
		cr_assert(wait_flag(&h.sent), "the send on c3 did not return");
		if (handed) {
			cr_assert_eq(rt->workers[1].nr_affine_wakes, aff1,
				     "worker 1 moved the receiver while it still ran on worker 0 (round %d)", round);
			cr_assert_eq(cl__rt_handle_task(r)->w, &rt->workers[0], "the receiver's worker changed while it ran");
		}
		cr_assert_eq(cl_join(s, &ret), 0);
		cr_assert_null(ret, "the send on c3 failed");
		atomic_store(&early_go, 1);
		cr_assert_eq(cl_join(r, NULL), 0);
		cr_assert_eq(h.v1, 1);
		cr_assert_eq(h.v3, 3);
		cr_assert_eq(cl_chan_trysend(h.c2, &two), 0, "trysend: %s", strerror(errno));
		cr_assert_eq(cl_join(a, &ret), 0);
		cr_assert_null(ret);
		cr_assert_eq(h.v2, 2);
		cr_assert_eq(cl_runtime_destroy(rt), 0);
		cr_assert_eq(cl_chan_destroy(h.c1), 0);
		cr_assert_eq(cl_chan_destroy(h.c2), 0);
		cr_assert_eq(cl_chan_destroy(h.c3), 0);
	}
	cr_log_info("the receiver ran by a hand-off in round %d", round);
	cr_assert(handed, "in 20 rounds the receiver never ran by a direct hand-off");
}

/*
 * The claim protocol on one record, driven directly: the task blocks on
 * worker 1, which watches it, then (woken some other way, say) blocks on
 * worker 2, which watches it too; a waker claims. Worker 1's watch is
 * stale: it must leave the claim (its end neither takes it nor clears
 * it), and worker 2, the one the claim names, takes it without writing
 * the record; a second claim on the claimed record fails. With a claim
 * any watcher may take, worker 1 takes it and pushes the task to worker 2.
 */
Test(sched_runtime_wake, a_claim_is_taken_only_by_the_watcher_it_names)
{
	static struct cl__rt_worker w1, w2;
	static struct cl_rt_task t;
	struct cl__rt_waiter *wt = &t.wait;
	uint16_t before;

	w1.cpu = 1;
	w2.cpu = 2;
	wt->t = &t;
	wt->w = &w1; /* blocks on worker 1 (as cl__rt_wait_rec() records it) */
	CL_ATOMIC_STORE(&wt->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	w1.watch_cand = wt;
	cr_assert_eq(cl__rt_watch_begin(&w1), wt);
	wt->w = &w2; /* then on worker 2 */
	CL_ATOMIC_STORE(&wt->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	w2.watch_cand = wt;
	cr_assert_eq(cl__rt_watch_begin(&w2), wt);
	cr_assert(cl__rt_watch_claim(wt), "a waker claims the watched record");
	cr_assert_not(cl__rt_watch_claim(wt), "claimed twice");

	cr_assert_not(cl__rt_watch_claimed(&w1, wt), "the stale watcher sees a claim");
	before = CL_ATOMIC_LOAD(&wt->watch, CL_RELAXED);
	cl__rt_watch_end(&w1, wt);
	cr_assert_null(w1.claimed, "the stale watcher took the claim");
	cr_assert_eq(w1.nr_watch_hits, 0);
	cr_assert_eq(CL_ATOMIC_LOAD(&wt->watch, CL_RELAXED), before, "the stale watcher wrote the record");

	cr_assert(cl__rt_watch_claimed(&w2, wt), "the named watcher misses its claim");
	cl__rt_watch_end(&w2, wt);
	cr_assert_eq(w2.claimed, &t);
	cr_assert_eq(w2.nr_watch_hits, 1);
	cr_assert_eq(CL_ATOMIC_LOAD(&wt->watch, CL_RELAXED), before, "the take wrote the record");
}
