/* SPDX-License-Identifier: MIT */
/*
 * examples/pingpong.c - the M:N runtime in brief: a runtime with one
 * worker per CPU, two tasks that ping-pong a counter through two channels,
 * a third task that joins them and reports, and a clean shutdown.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/pingpong.c -o pingpong $(pkg-config --cflags --libs cachelocal-sched)
 *	./pingpong [ROUNDS]
 *
 * Exits 0 when every message came back in order.
 */
#include "example_args.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/sched/runtime.h>

struct player {
	struct cl_chan *in, *out;
	long rounds;
	int serve; /* sends first */
};

static void *play(void *p)
{
	struct player *pl = (struct player *)p;
	long v;

	for (long i = 0; i < pl->rounds; i++) {
		if (pl->serve) {
			v = 2 * i;
			if (cl_chan_send(pl->out, &v) || cl_chan_recv(pl->in, &v) || v != 2 * i + 1)
				goto fail;
		} else {
			if (cl_chan_recv(pl->in, &v) || v != 2 * i)
				goto fail;
			v++;
			if (cl_chan_send(pl->out, &v))
				goto fail;
		}
	}
	return NULL;
fail: /* lost, duplicated or reordered: closing wakes the other player (EPIPE) */
	cl_chan_close(pl->in);
	cl_chan_close(pl->out);
	return (void *)1;
}

/* A task that starts the two players, joins them and reports. */
static void *referee(void *p)
{
	struct player *pl = (struct player *)p;
	struct cl_rt_task *a = cl_spawn(cl_self()->rt, NULL, play, &pl[0]);
	struct cl_rt_task *b = cl_spawn(cl_self()->rt, NULL, play, &pl[1]);
	void *ra = (void *)1, *rb = (void *)1;

	if (!a || !b || cl_join(a, &ra) || cl_join(b, &rb))
		return (void *)1;
	printf("pingpong: %ld round trips (referee on worker %d), %s\n", pl[0].rounds,
	       cl_worker_id(), !ra && !rb ? "every message in order" : "FAILED");
	return (void *)(uintptr_t)(ra || rb);
}

int main(int argc, char **argv)
{
	int a = example_args(argc, argv, "usage: pingpong [ROUNDS] [--help]\n"
			     "  two runtime tasks exchange ROUNDS messages (default 100000)\n", NULL, 1);
	long rounds = a ? atol(argv[a]) : 100000;
	struct cl_runtime *rt = cl_runtime_create(NULL); /* one pinned worker per CPU */
	struct cl_chan *ping = cl_chan_create(sizeof(long), 1), *pong = cl_chan_create(sizeof(long), 1);
	struct player pl[2] = { { pong, ping, rounds, 1 }, { ping, pong, rounds, 0 } };
	struct cl_rt_task *ref;
	void *r = (void *)1;

	if (!rt || !ping || !pong || rounds < 1) {
		perror("pingpong: setup");
		return 1;
	}
	printf("pingpong: %u workers, context switch %s\n", cl_runtime_nr_workers(rt),
	       cl_runtime_context_kind());
	ref = cl_spawn(rt, NULL, referee, pl);
	if (!ref || cl_join(ref, &r) || cl_runtime_destroy(rt)) {
		perror("pingpong");
		return 1;
	}
	cl_chan_destroy(ping);
	cl_chan_destroy(pong);
	return r ? 1 : 0;
}
