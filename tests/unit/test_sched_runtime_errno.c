/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_errno.c - errno read the natural way
 * (`errno = 0; r = call(); if (r < 0) return errno;`) after a call that
 * parked the task and resumed it on another worker thread. glibc declares
 * __errno_location() const, so without the runtime's errno (current.h) the
 * compiler reuses the address computed for `errno = 0`: the old thread's.
 *
 * Each round the task spawns a closer pinned to the other worker and parks
 * (in cl_chan_recv(), or in cl_read() on a pipe); the closer, once it sees
 * the task parked, closes the channel (EPIPE) or the fd with cl_close()
 * (ECANCELED), which wakes the task and (wake-affine) usually moves it.
 * Every round must read the errno; some rounds must have moved, or the
 * test proved nothing (the I/O case is then skipped, the channel case
 * fails). The I/O rounds use the epoll backend; a woken fd
 * waiter goes back to its worker, so a spinner keeps that one busy and
 * the idle worker's balancer takes the task.
 */
#include "cl_test.h"

#include <unistd.h>

#include <cachelocal/sched/runtime.h>

#define ROUNDS 2000
#define IO_ROUNDS 5000 /* at most: until IO_MOVED moved (each spins a worker) */
#define IO_MOVED 5
#define IO_SECONDS 10 /* and at most this long (slow under TSan and valgrind) */

struct errno_run {
	int io;          /* park in cl_read(), else in cl_chan_recv() */
	int rounds;
	int wrong;       /* rounds whose errno read was not the expected one */
	int moved;       /* rounds that resumed on another worker */
	int first_wrong;
	struct cl_runtime *rt;
};

struct errno_round {
	struct cl_chan *c;
	int fds[2];
	struct cl_runtime *rt;
};

/* The natural form, each as one function (the scope in which a compiler
 * reuses an errno address): 0, or the errno of the failed call. */
static __attribute__((noinline)) int recv_errno(struct cl_chan *c)
{
	int v;

	errno = 0;
	if (cl_chan_recv(c, &v) < 0)
		return errno;
	return 0;
}

static __attribute__((noinline)) int read_errno(int fd)
{
	char b;

	errno = 0;
	if (cl_read(fd, &b, 1) < 0)
		return errno;
	return 0;
}

static unsigned int parked_in_io(struct cl_runtime *rt)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rt->nr_workers; i++)
		n += __atomic_load_n(&rt->workers[i].io_nr, __ATOMIC_SEQ_CST);
	return n;
}

/* Close once the task is parked (a condition, not a time). */
static void *closer(void *p)
{
	struct errno_round *r = (struct errno_round *)p;

	if (r->c) {
		for (int parked = 0; !parked;) { /* a receiver on the list (under its lock) */
			cl_ticket_lock(&r->c->lock);
			parked = !cds_list_empty(&r->c->recvq);
			(void)cl_ticket_unlock(&r->c->lock);
			if (!parked)
				cl_yield();
		}
		cl_chan_close(r->c);
	} else {
		while (!parked_in_io(r->rt))
			cl_yield();
		cl_close(r->fds[0]);
	}
	return NULL;
}

static int spin_stop;

/* Keep the task's worker busy, so the idle one takes the woken task (a
 * runtime call now and then: under TSan preemption only marks). */
static void *spinner(void *p)
{
	(void)p;
	for (unsigned int n = 1; !__atomic_load_n(&spin_stop, __ATOMIC_ACQUIRE); n++)
		if (!(n & 0xfffff))
			cl_yield();
	return NULL;
}

static void *victim(void *p)
{
	struct errno_run *run = (struct errno_run *)p;
	struct cl_spawn_attr sa;
	uint64_t end = cl_now_ns() + IO_SECONDS * 1000000000ULL;

	memset(&sa, 0, sizeof(sa));
	for (int i = 0; run->io ? i < IO_ROUNDS && run->moved < IO_MOVED && cl_now_ns() < end : i < ROUNDS; i++) {
		struct errno_round r;
		struct cl_rt_task *t, *spin = NULL;
		int before = cl_worker_id(), e, want;

		run->rounds++;
		memset(&r, 0, sizeof(r));
		r.rt = run->rt;
		if (run->io ? pipe(r.fds) != 0 : !(r.c = cl_chan_create(sizeof(int), 1)))
			return (void *)-1;
		sa.worker = CL_SPAWN_WORKER(before == 0 ? 1 : 0);
		if (!(t = cl_spawn(run->rt, &sa, closer, &r)))
			return (void *)-1;
		if (run->io) { /* an fd's waker does not move the task: the balancer will */
			__atomic_store_n(&spin_stop, 0, __ATOMIC_RELEASE);
			sa.worker = CL_SPAWN_WORKER(before);
			if (!(spin = cl_spawn(run->rt, &sa, spinner, NULL)))
				return (void *)-1;
		}
		e = run->io ? read_errno(r.fds[0]) : recv_errno(r.c);
		__atomic_store_n(&spin_stop, 1, __ATOMIC_RELEASE);
		if (spin)
			cl_join(spin, NULL);
		want = run->io ? ECANCELED : EPIPE;
		if (e != want && !run->wrong++)
			run->first_wrong = e;
		if (cl_worker_id() != before)
			run->moved++;
		cl_join(t, NULL);
		if (run->io)
			close(r.fds[1]);
		else
			cl_chan_destroy(r.c);
	}
	return NULL;
}

static void errno_rounds(int io)
{
	struct cl_runtime_attr a;
	struct errno_run run;
	struct cl_rt_task *t;
	void *ret = (void *)-2;

	if (io)
		setenv("CL_RUNTIME_IO", "epoll", 1);
	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	a.flags = CL_RUNTIME_UNPINNED;
	memset(&run, 0, sizeof(run));
	run.io = io;
	run.rt = cl_runtime_create(&a);
	cr_assert_not_null(run.rt, "cl_runtime_create: %s", strerror(errno));
	t = cl_spawn(run.rt, NULL, victim, &run);
	cr_assert_not_null(t);
	cr_assert_eq(cl_join(t, &ret), 0);
	cr_assert_null(ret, "the task could not make a channel, a pipe or a task");
	cr_assert_eq(run.wrong, 0, "%d of %d rounds read errno %d (%d moved)", run.wrong,
		     run.rounds, run.first_wrong, run.moved);
	cr_log_info("%d of %d rounds resumed on another worker", run.moved, run.rounds);
	cr_assert_eq(cl_runtime_destroy(run.rt), 0);
	/* the channel's waker moves the task every round; an fd's only when
	 * the balancer takes it, which a loaded machine may never let happen */
	if (io && !run.moved)
		cr_skip_test("no I/O round resumed on another worker in %d rounds: nothing was checked",
			     run.rounds);
	cr_assert_gt(run.moved, 0, "no round resumed on another worker: nothing was checked");
}

Test(sched_runtime_errno, natural_read_after_a_channel_receive_that_moved_the_task, .timeout = 60)
{
	errno_rounds(0);
}

Test(sched_runtime_errno, natural_read_after_an_io_call_that_moved_the_task, .timeout = 60)
{
	errno_rounds(1);
}
