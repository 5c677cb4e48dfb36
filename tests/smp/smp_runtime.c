/* SPDX-License-Identifier: MIT */
/*
 * smp_runtime - the M:N runtime at the machine's size: cl_runtime_create()
 * with default attributes (one worker pinned per allowed CPU), rounds of
 * four workloads until DURATION has passed (at least one round), then
 * cl_runtime_destroy().
 *
 *   fib     a task tree: fib(n) spawns fib(n-1) and fib(n-2) as tasks and
 *           joins them (FIB, default 14: 1219 tasks per round); the root's
 *           result must be fib(n).
 *   pairs   one ping-pong pair per worker: task A pinned to worker w, B to
 *           worker w+1 (cl_spawn_attr.pin), PINGS round trips over two
 *           channels of capacity 1; each side checks every value is the
 *           next in sequence.
 *   storm   4 senders and 2 receivers per worker on one channel per worker
 *           (capacity 8): each sender sends STORM_MSGS messages with ids of
 *           its own over the channels in turn; a coordinator task joins the
 *           senders and closes the channels; receivers drain until EPIPE.
 *           Every id must be received exactly once (a per-id counter).
 *   parked  TASKS tasks each count themselves parked under a wait queue's
 *           lock and sleep on it (cl_waitq_wait) until released; once all
 *           are parked (the count read under the lock, polled every 1 ms
 *           from outside), one wake-all releases them; each is joined.
 *   workers one task pinned to each worker reports cl_worker_id(): every
 *           worker must run its own (the runtime has no per-worker task
 *           counter; each rq's nr_switches is printed beside it).
 *
 * Asserted: every spawn succeeds, every task joins with its own result,
 * every message is delivered exactly once and in order within a pair,
 * every worker ran a task in every round, cl_runtime_destroy() returns 0.
 * CPU hotplug: workers are kernel threads pinned to CPUs; when one of their
 * CPUs goes offline the kernel moves the thread and the runtime goes on; the
 * program makes no affinity calls of its own.
 *
 * Knobs: DURATION (seconds, default 2), TASKS (parked tasks per round,
 * default 10000: a guest with enough memory may take 100000, each task has
 * a default stack of 64 KiB reserved, a few KiB touched), FIB (default
 * 14), PINGS (default 1000), STORM_MSGS (default 200).
 * IDLE_MS (default 1000): the idle window measured after the rounds (0: none).
 * Output: `runtime: ...` setup line, one `runtime round:` line per round
 * (with the seconds of each workload), before it `runtime parked: ...`
 * (the parked workload's phases; a progress line every 30 s while it runs),
 * `runtime workers: ...` (nr_switches per worker, min..max), `runtime idle:
 * ...` (context switches and CPU per second of the idle runtime), then
 * PASS/FAIL.
 */
#include <sys/resource.h>
#include "smp.h"

#include <cachelocal/sched/runtime.h>

#define NAME "smp_runtime"

CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

static struct cl_runtime *rt;
static unsigned nw;

/* ---- fib ---- */

static void *fib(void *arg)
{
	long n = (long)(intptr_t)arg;
	struct cl_rt_task *a, *b;
	void *ra = NULL, *rb = NULL;

	if (n < 2)
		return (void *)(intptr_t)n;
	a = cl_spawn(rt, NULL, fib, (void *)(intptr_t)(n - 1));
	b = cl_spawn(rt, NULL, fib, (void *)(intptr_t)(n - 2));
	if (!smp_check(a && b, "fib(%ld): spawn failed: %s", n, strerror(errno)))
		return (void *)(intptr_t)-1000000;
	smp_check(cl_join(a, &ra) == 0 && cl_join(b, &rb) == 0, "fib(%ld): join: %s", n, strerror(errno));
	return (void *)((intptr_t)ra + (intptr_t)rb);
}

static long fib_tasks(long n)
{
	return n < 2 ? 1 : 1 + fib_tasks(n - 1) + fib_tasks(n - 2);
}

/* ---- ping-pong pairs ---- */

struct pair {
	struct cl_chan *ab, *ba;
	long pings;
	long bad;
};

static void *ping(void *arg)
{
	struct pair *p = arg;

	for (long i = 0; i < p->pings; i++) {
		long v = 2 * i, r = -1;

		if (cl_chan_send(p->ab, &v) != 0 || cl_chan_recv(p->ba, &r) != 0 || r != v + 1)
			p->bad++;
	}
	return NULL;
}

static void *pong(void *arg)
{
	struct pair *p = arg;

	for (long i = 0; i < p->pings; i++) {
		long v = -1, w;

		if (cl_chan_recv(p->ab, &v) != 0 || v != 2 * i)
			p->bad++;
		w = v + 1;
		if (cl_chan_send(p->ba, &w) != 0)
			p->bad++;
	}
	return NULL;
}

/* ---- storm ---- */

struct storm {
	struct cl_chan **ch;
	unsigned nr_ch, senders, receivers;
	long msgs;          /* per sender */
	unsigned *seen;     /* [senders * msgs] (atomic) */
	unsigned long received, send_errors, recv_errors; /* (atomic) */
};

struct storm_arg {
	struct storm *s;
	unsigned id;
};

static void *storm_sender(void *arg)
{
	struct storm_arg *a = arg;
	struct storm *s = a->s;

	for (long k = 0; k < s->msgs; k++) {
		long id = (long)a->id * s->msgs + k;

		if (cl_chan_send(s->ch[(unsigned)(a->id + (unsigned)k) % s->nr_ch], &id) != 0)
			__atomic_fetch_add(&s->send_errors, 1, __ATOMIC_RELAXED);
		if (k % 16 == 0)
			cl_yield();
	}
	return NULL;
}

static void *storm_receiver(void *arg)
{
	struct storm_arg *a = arg;
	struct storm *s = a->s;
	struct cl_chan *c = s->ch[a->id % s->nr_ch];
	long id;

	while (cl_chan_recv(c, &id) == 0) {
		if (id >= 0 && id < (long)s->senders * s->msgs)
			__atomic_fetch_add(&s->seen[id], 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&s->recv_errors, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->received, 1, __ATOMIC_RELAXED);
	}
	if (errno != EPIPE)
		__atomic_fetch_add(&s->recv_errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Spawns the senders and receivers, joins the senders, closes the channels, joins the receivers. */
static void *storm_coordinator(void *arg)
{
	struct storm *s = arg;
	unsigned n = s->senders + s->receivers;
	struct storm_arg *args = calloc(n, sizeof(*args));
	struct cl_rt_task **h = calloc(n, sizeof(*h));

	if (!smp_check(args && h, "out of memory")) {
		free(args);
		free(h);
		return NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		args[i].s = s;
		args[i].id = i < s->senders ? i : i - s->senders;
		h[i] = cl_spawn(rt, NULL, i < s->senders ? storm_sender : storm_receiver, &args[i]);
		smp_check(h[i] != NULL, "storm spawn: %s", strerror(errno));
	}
	for (unsigned i = 0; i < s->senders; i++)
		if (h[i])
			smp_check(cl_join(h[i], NULL) == 0, "storm join: %s", strerror(errno));
	for (unsigned c = 0; c < s->nr_ch; c++)
		cl_chan_close(s->ch[c]);
	for (unsigned i = s->senders; i < n; i++)
		if (h[i])
			smp_check(cl_join(h[i], NULL) == 0, "storm join: %s", strerror(errno));
	free(args);
	free(h);
	return NULL;
}

/* ---- parked ---- */

static struct cl_waitq park_wq;
static long parked;
static int released;

static void *parked_task(void *arg)
{
	cl_waitq_lock(&park_wq);
	parked++;
	while (!released) {
		cl_waitq_wait(&park_wq); /* returns unlocked */
		cl_waitq_lock(&park_wq);
	}
	cl_waitq_unlock(&park_wq);
	return arg;
}

/* ---- workers ---- */

static void *where(void *arg)
{
	return (void *)(intptr_t)(cl_worker_id() - (int)(intptr_t)arg); /* 0 if on its worker */
}

/* ---- one round ---- */

struct totals {
	unsigned long tasks, messages;
};

static void round_fib(long n, struct totals *tot)
{
	struct cl_rt_task *h = cl_spawn(rt, NULL, fib, (void *)(intptr_t)n);
	void *r = NULL;
	long a = 0, b = 1;

	for (long i = 0; i < n; i++) {
		long t = a + b;

		a = b;
		b = t;
	}
	if (!smp_check(h != NULL, "fib spawn: %s", strerror(errno)))
		return;
	smp_check(cl_join(h, &r) == 0, "fib join: %s", strerror(errno));
	smp_check((long)(intptr_t)r == a, "fib(%ld) = %ld, expected %ld", n, (long)(intptr_t)r, a);
	tot->tasks += (unsigned long)fib_tasks(n);
}

static void round_pairs(long pings, struct totals *tot)
{
	struct pair *p = calloc(nw, sizeof(*p));
	struct cl_rt_task **h = calloc(2 * (size_t)nw, sizeof(*h));

	if (!smp_check(p && h, "out of memory"))
		goto out;
	for (unsigned w = 0; w < nw; w++) {
		struct cl_spawn_attr a = { NULL, CL_SPAWN_WORKER(w), 1, 0, 0 };
		struct cl_spawn_attr b = { NULL, CL_SPAWN_WORKER((w + 1) % nw), 1, 0, 0 };

		p[w].ab = cl_chan_create(sizeof(long), 1);
		p[w].ba = cl_chan_create(sizeof(long), 1);
		p[w].pings = pings;
		if (!smp_check(p[w].ab && p[w].ba, "cl_chan_create: %s", strerror(errno)))
			continue;
		h[2 * w] = cl_spawn(rt, &a, ping, &p[w]);
		h[2 * w + 1] = cl_spawn(rt, &b, pong, &p[w]);
		smp_check(h[2 * w] && h[2 * w + 1], "pair spawn: %s", strerror(errno));
	}
	for (unsigned i = 0; i < 2 * nw; i++)
		if (h[i])
			smp_check(cl_join(h[i], NULL) == 0, "pair join: %s", strerror(errno));
	for (unsigned w = 0; w < nw; w++) {
		smp_check(p[w].bad == 0, "pair %u: %ld messages out of sequence or failed", w, p[w].bad);
		cl_chan_destroy(p[w].ab);
		cl_chan_destroy(p[w].ba);
	}
	tot->tasks += 2 * nw;
	tot->messages += 2 * (unsigned long)pings * nw;
out:
	free(p);
	free(h);
}

static void round_storm(long msgs, struct totals *tot)
{
	struct storm s;
	struct cl_rt_task *h;
	unsigned long missing = 0, dup = 0, total;

	memset(&s, 0, sizeof(s));
	s.nr_ch = nw;
	s.senders = 4 * nw;
	s.receivers = 2 * nw;
	s.msgs = msgs;
	total = (unsigned long)s.senders * (unsigned long)msgs;
	s.ch = calloc(nw, sizeof(*s.ch));
	s.seen = calloc(total ? total : 1, sizeof(*s.seen));
	if (!smp_check(s.ch && s.seen, "out of memory"))
		goto out;
	for (unsigned c = 0; c < nw; c++)
		if (!smp_check((s.ch[c] = cl_chan_create(sizeof(long), 8)) != NULL, "cl_chan_create: %s",
			       strerror(errno)))
			goto out;
	h = cl_spawn(rt, NULL, storm_coordinator, &s);
	if (!smp_check(h != NULL, "storm spawn: %s", strerror(errno)))
		goto out;
	smp_check(cl_join(h, NULL) == 0, "storm join: %s", strerror(errno));
	for (unsigned long i = 0; i < total; i++) {
		missing += s.seen[i] == 0;
		dup += s.seen[i] > 1;
	}
	smp_check(missing == 0 && dup == 0 && s.received == total && s.send_errors == 0 &&
			  s.recv_errors == 0,
		  "storm: %lu of %lu received, %lu missing, %lu duplicated, %lu send and %lu receive "
		  "errors", s.received, total, missing, dup, s.send_errors, s.recv_errors);
	tot->tasks += 1 + s.senders + s.receivers;
	tot->messages += total;
out:
	if (s.ch)
		for (unsigned c = 0; c < nw; c++)
			cl_chan_destroy(s.ch[c]);
	free(s.ch);
	free(s.seen);
}

/* A progress line for a phase of round_parked() that runs long: at most
 * one every 30 s (a 100,000-task round takes minutes in a 64-CPU guest). */
static void parked_progress(const char *what, long k, long n, double t0, double *next)
{
	double t = smp_now();

	if (t < *next)
		return;
	*next = t + 30;
	printf("runtime parked: %ld of %ld %s after %.0f s\n", k, n, what, t - t0);
	fflush(stdout);
}

static void round_parked(long n, struct totals *tot)
{
	struct cl_rt_task **h = calloc((size_t)n, sizeof(*h));
	struct timespec ms = { 0, 1000000 };
	long spawned = 0, now = 0, woken;
	double t0 = smp_now(), next = t0 + 30, t1, t2;

	if (!smp_check(h != NULL, "out of memory"))
		return;
	cl_waitq_init(&park_wq);
	parked = 0;
	released = 0;
	for (long i = 0; i < n; i++) {
		h[i] = cl_spawn(rt, NULL, parked_task, (void *)(intptr_t)(i + 1));
		if (!smp_check(h[i] != NULL, "parked spawn %ld of %ld: %s", i, n, strerror(errno)))
			break;
		spawned++;
		if (!(spawned & 1023))
			parked_progress("spawned", spawned, n, t0, &next);
	}
	t1 = smp_now();
	while (now < spawned) { /* a condition, read under the lock: not a rendezvous by time */
		nanosleep(&ms, NULL);
		cl_waitq_lock(&park_wq);
		now = parked;
		cl_waitq_unlock(&park_wq);
		parked_progress("parked", now, spawned, t0, &next);
	}
	t2 = smp_now();
	cl_waitq_lock(&park_wq);
	released = 1;
	cl_waitq_unlock(&park_wq);
	woken = cl_waitq_wake_all(&park_wq);
	for (long i = 0; i < spawned; i++) {
		void *r = NULL;

		smp_check(cl_join(h[i], &r) == 0 && (intptr_t)r == i + 1, "parked task %ld: join %s, result %ld",
			  i, strerror(errno), (long)(intptr_t)r);
	}
	smp_check(woken == spawned, "wake-all woke %ld of %ld parked tasks", woken, spawned);
	printf("runtime parked: %ld tasks: spawn %.2f s, until all parked %.2f s, wake and join %.2f s\n",
	       spawned, t1 - t0, t2 - t1, smp_now() - t2);
	fflush(stdout);
	tot->tasks += (unsigned long)spawned;
	free(h);
}

static void round_workers(struct totals *tot)
{
	struct cl_rt_task **h = calloc(nw, sizeof(*h));

	if (!smp_check(h != NULL, "out of memory"))
		return;
	for (unsigned w = 0; w < nw; w++) {
		struct cl_spawn_attr a = { NULL, CL_SPAWN_WORKER(w), 1, 0, 0 };

		h[w] = cl_spawn(rt, &a, where, (void *)(intptr_t)w);
		smp_check(h[w] != NULL, "spawn on worker %u: %s", w, strerror(errno));
	}
	for (unsigned w = 0; w < nw; w++) {
		void *r = (void *)1;

		if (h[w])
			smp_check(cl_join(h[w], &r) == 0 && r == NULL,
				  "the task pinned to worker %u ran on worker %ld", w, (long)(intptr_t)r + w);
	}
	tot->tasks += nw;
	free(h);
}

/*
 * The runtime idle, every task done: the process's context switches and CPU
 * time over a window of @secs (after 0.2 s for the workers' spins to end),
 * per second of the guest's time. Printed, not asserted: TCG's time is no
 * measure, but the counts are real (docs/runtime.md, Idle: an idle runtime
 * wakes on no timer, whatever its worker count).
 */
static void idle_window(double secs)
{
	struct rusage a, b;
	double t0, t;

	if (secs <= 0)
		return;
	smp_sleep(0.2);
	getrusage(RUSAGE_SELF, &a);
	t0 = smp_now();
	smp_sleep(secs);
	getrusage(RUSAGE_SELF, &b);
	t = smp_now() - t0;
	printf("runtime idle: %u workers, %.1f context switches/s, %.1f ms CPU/s over %.2f s "
	       "(the waiting main thread included)\n",
	       nw, (double)(b.ru_nvcsw + b.ru_nivcsw - a.ru_nvcsw - a.ru_nivcsw) / t,
	       ((double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e3 +
		(double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e3) / t,
	       t);
	fflush(stdout);
}

int main(void)
{
	long n_parked = smp_env_long("TASKS", 10000), n_fib = smp_env_long("FIB", 14);
	long pings = smp_env_long("PINGS", 1000), msgs = smp_env_long("STORM_MSGS", 200);
	double end = smp_now() + smp_duration();
	struct totals tot = { 0, 0 };
	uint64_t sw_min = UINT64_MAX, sw_max = 0;
	long rounds = 0;

	smp_banner(NAME);
	if (n_fib > 25)
		n_fib = 25;
	rt = cl_runtime_create(NULL);
	if (!rt)
		return smp_fatal(NAME, "cl_runtime_create: %s", strerror(errno));
	nw = cl_runtime_nr_workers(rt);
	printf("runtime: %u workers, context %s; per round: fib(%ld) = %ld tasks, %u pairs x %ld "
	       "pings, storm %u senders x %ld messages, %ld parked tasks\n",
	       nw, cl_runtime_context_kind(), n_fib, fib_tasks(n_fib), nw, pings, 4 * nw, msgs,
	       n_parked);
	fflush(stdout);
	do {
		double t0 = smp_now(), t[6];
		struct totals before = tot;

		t[0] = t0;
		round_fib(n_fib, &tot);
		t[1] = smp_now();
		round_pairs(pings, &tot);
		t[2] = smp_now();
		round_storm(msgs, &tot);
		t[3] = smp_now();
		round_parked(n_parked, &tot);
		t[4] = smp_now();
		round_workers(&tot);
		t[5] = smp_now();
		rounds++;
		printf("runtime round: %ld, %lu tasks, %lu messages, %.2f s (fib %.2f, pairs %.2f, "
		       "storm %.2f, parked %.2f, workers %.2f)\n", rounds,
		       tot.tasks - before.tasks, tot.messages - before.messages, t[5] - t0,
		       t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4]);
		fflush(stdout);
	} while (smp_failures() == 0 && smp_now() < end);
	for (unsigned w = 0; w < nw; w++) {
		uint64_t sw = __atomic_load_n(&cl_sched_rq(cl_runtime_sched(rt), w)->nr_switches,
					      __ATOMIC_RELAXED);

		sw_min = sw < sw_min ? sw : sw_min;
		sw_max = sw > sw_max ? sw : sw_max;
	}
	printf("runtime workers: %u, each ran its pinned task in each of %ld rounds; nr_switches "
	       "%llu..%llu\n", nw, rounds, (unsigned long long)sw_min, (unsigned long long)sw_max);
	idle_window((double)smp_env_long("IDLE_MS", 1000) / 1e3);
	smp_check(cl_runtime_destroy(rt) == 0, "cl_runtime_destroy: %s", strerror(errno));
	return smp_finish(NAME, "%ld rounds on %u workers: %lu tasks joined, %lu messages delivered once",
			  rounds, nw, tot.tasks, tot.messages);
}
