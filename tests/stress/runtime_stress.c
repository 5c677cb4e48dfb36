/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/runtime_stress.c - the M:N runtime under churn: rounds of
 * sender and receiver tasks on shared channels with random yields, mutex
 * sections, nested spawn+join, and a balancer that runs every 100 us with
 * no cache-hot window (tasks migrate between workers all the time), while
 * the main thread, outside the runtime, also sends (remote wakeups).
 * Checks after every round: every message received exactly once, every
 * task joined with its own result, no lost mutex update.
 *
 * Knobs (environment): DURATION seconds (default 1), ITERATIONS minimum
 * rounds (default 20000 is scaled down: rounds = ITERATIONS / 1000, at
 * least 2), CORES workers (default: allowed CPUs, at least 2).
 * Exit: 0 pass, 1 fail.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cachelocal/sched/runtime.h>

#ifdef CL_HAVE_TSAN
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return CL_SCHED_TSAN_SUPPRESSIONS;
}
#define SENDERS 24
#else
#define SENDERS 96
#endif
#define RECEIVERS 16
#define CHANS 8
#define MSGS 16 /* per sender */
#define OUTSIDE_MSGS 64

struct round {
	struct cl_runtime *rt;
	struct cl_chan *c[CHANS];
	struct cl_mutex m;
	long counter;
	long expect_counter;
	unsigned char seen[SENDERS * MSGS + OUTSIDE_MSGS];
	int dup, bad;
};

static struct round R;

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 16;
}

static void *child(void *p)
{
	return (void *)((uintptr_t)p ^ 0x5a5aUL);
}

static void *sender(void *p)
{
	unsigned int id = (unsigned int)(uintptr_t)p, seed = id * 2654435761u + (unsigned int)time(NULL);

	for (int j = 0; j < MSGS; j++) {
		int msg = (int)(id * MSGS + (unsigned int)j);

		switch (rnd(&seed) % 5) {
		case 0:
			cl_yield();
			break;
		case 1:
			cl_mutex_lock(&R.m);
			R.counter++;
			if (rnd(&seed) & 1)
				cl_yield();
			cl_mutex_unlock(&R.m);
			__atomic_fetch_add(&R.expect_counter, 1, __ATOMIC_RELAXED);
			break;
		case 2: {
			struct cl_rt_task *c = cl_spawn(R.rt, NULL, child, (void *)(uintptr_t)msg);
			void *r = NULL;

			if (!c || cl_join(c, &r) || (uintptr_t)r != ((uintptr_t)msg ^ 0x5a5aUL))
				return (void *)1;
			break;
		}
		default:
			break;
		}
		if (cl_chan_send(R.c[rnd(&seed) % CHANS], &msg))
			return (void *)1;
	}
	return (void *)(uintptr_t)(id + 1);
}

static void *receiver(void *p)
{
	struct cl_chan *c = (struct cl_chan *)p;
	int msg;

	while (cl_chan_recv(c, &msg) == 0) {
		if (msg < 0 || msg >= SENDERS * MSGS + OUTSIDE_MSGS) {
			__atomic_fetch_add(&R.bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_fetch_add(&R.seen[msg], 1, __ATOMIC_RELAXED))
			__atomic_fetch_add(&R.dup, 1, __ATOMIC_RELAXED);
	}
	return errno == EPIPE ? NULL : (void *)1;
}

static int one_round(struct cl_runtime *rt, int round)
{
	struct cl_rt_task *s[SENDERS], *r[RECEIVERS];
	int fail = 0;

	memset(&R, 0, sizeof(R));
	R.rt = rt;
	cl_mutex_init(&R.m);
	for (int i = 0; i < CHANS; i++)
		if (!(R.c[i] = cl_chan_create(sizeof(int), 2)))
			return 1;
	for (int i = 0; i < RECEIVERS; i++)
		r[i] = cl_spawn(rt, NULL, receiver, R.c[i % CHANS]);
	for (int i = 0; i < SENDERS; i++)
		s[i] = cl_spawn(rt, NULL, sender, (void *)(uintptr_t)i);
	for (int i = 0; i < OUTSIDE_MSGS; i++) {
		int msg = SENDERS * MSGS + i;

		while (cl_chan_trysend(R.c[i % CHANS], &msg) != 0) {
			if (errno != EAGAIN)
				return 1;
			sched_yield(); /* full: let the workers drain it */
		}
	}
	for (int i = 0; i < SENDERS; i++) {
		void *v = NULL;

		if (!s[i] || cl_join(s[i], &v) || (uintptr_t)v != (uintptr_t)i + 1) {
			fprintf(stderr, "round %d: sender %d failed\n", round, i);
			fail = 1;
		}
	}
	for (int i = 0; i < CHANS; i++)
		cl_chan_close(R.c[i]);
	for (int i = 0; i < RECEIVERS; i++) {
		void *v = (void *)1;

		if (!r[i] || cl_join(r[i], &v) || v) {
			fprintf(stderr, "round %d: receiver %d failed\n", round, i);
			fail = 1;
		}
	}
	for (int i = 0; i < SENDERS * MSGS + OUTSIDE_MSGS; i++)
		if (R.seen[i] != 1) {
			fprintf(stderr, "round %d: message %d received %d times\n", round, i, R.seen[i]);
			fail = 1;
			break;
		}
	if (R.dup || R.bad || R.counter != R.expect_counter) {
		fprintf(stderr, "round %d: dup %d bad %d counter %ld expected %ld\n", round, R.dup, R.bad,
			R.counter, R.expect_counter);
		fail = 1;
	}
	for (int i = 0; i < CHANS; i++)
		cl_chan_destroy(R.c[i]);
	return fail;
}

int main(void)
{
	const char *d = getenv("DURATION"), *it = getenv("ITERATIONS"), *co = getenv("CORES");
	double duration = d ? atof(d) : 1.0;
	long min_rounds = it ? atol(it) / 1000 : 20;
	struct cl_runtime_attr a;
	struct cl_runtime *rt;
	uint64_t end, max_round_ns = 0;
	long rounds = 0;
	int fail = 0;

	if (min_rounds < 2)
		min_rounds = 2;
	memset(&a, 0, sizeof(a));
	a.nr_workers = co ? (unsigned int)atoi(co) : 0;
	if (a.nr_workers == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		a.nr_workers = n > 2 ? (unsigned int)n : 2;
	}
	a.balance_ns = 100000;
	a.migration_cost_ns = CL_RUNTIME_NEVER_HOT;
	a.spin_ns = 5000;
	rt = cl_runtime_create(&a);
	if (!rt) {
		perror("cl_runtime_create");
		return 1;
	}
	end = (uint64_t)cl__now_ns() + (uint64_t)(duration * 1e9);
	while (!fail && (rounds < min_rounds || (uint64_t)cl__now_ns() < end)) {
		uint64_t t0 = (uint64_t)cl__now_ns(), dt;

		fail = one_round(rt, (int)rounds++);
		dt = (uint64_t)cl__now_ns() - t0;
		if (dt > max_round_ns)
			max_round_ns = dt;
	}
	if (cl_runtime_destroy(rt)) {
		perror("cl_runtime_destroy");
		fail = 1;
	}
	printf("runtime_stress: %ld rounds on %u workers (%d senders x %d messages, %d receivers, %d outside), longest round %.1f ms: %s\n",
	       rounds, a.nr_workers, SENDERS, MSGS, RECEIVERS, OUTSIDE_MSGS, (double)max_round_ns / 1e6,
	       fail ? "FAIL" : "ok");
	return fail;
}
