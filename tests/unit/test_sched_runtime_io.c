/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_io.c - I/O that parks the task, not the
 * worker (sched/runtime/io.h): reads and writes on pipes and socketpairs
 * park the task while another task on the same single worker runs (the
 * reader observes what the other task did meanwhile: with the worker
 * blocked in read(2) the test would hang), accept/connect on loopback,
 * cl_poll_fd() with and without a timeout, cl_close() of an fd another
 * task waits on (ECANCELED, on the same and on another worker), shutdown
 * with tasks parked in I/O (ECANCELED, they return), bad input, the plain
 * calls outside a task, 10,000 connections echoed on 2 workers, a ready
 * socket's read and write completing without a wait, every call's
 * `_timeout` form, and a deadline racing data.
 *
 * Every test runs in both backends, io_uring and epoll (each forced with
 * CL_RUNTIME_IO; io_uring is left out where it cannot be set up, and under
 * valgrind), or only in the one the environment forces (CL_RUNTIME_IO set
 * when the binary runs). CL_TEST_ECHO_CONNS sets the echo test's
 * connections (10,000; fewer under valgrind and TSan).
 */
#include "cl_test.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cachelocal/sched/runtime.h>

/* ---- helpers ---- */

/*
 * errno in a task, through calls the compiler cannot see through: a task
 * may resume on another worker thread after a call that parked it (or was
 * preempted), and an errno address computed before would be the old
 * thread's (TSan reports the read on the other thread's TLS).
 */
static __attribute__((noinline)) int err(void)
{
	return errno;
}

static __attribute__((noinline)) void clear_err(void)
{
	errno = 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *const modes[2] = { "io_uring", "epoll" };

static int under_valgrind(void)
{
#ifdef CL__RT_VALGRIND
	return RUNNING_ON_VALGRIND;
#else
	return 0;
#endif
}

static int under_tsan(void)
{
#if defined(__SANITIZE_THREAD__)
	return 1;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return 1;
#endif
#endif
	return 0;
}

/* Mode @i is to be run: the one the environment forced, else both (not
 * io_uring under valgrind). */
static int mode_wanted(int i)
{
	static char forced[16];
	static int init;

	if (!init) {
		const char *e = getenv("CL_RUNTIME_IO");

		init = 1;
		if (e)
			snprintf(forced, sizeof(forced), "%s", e);
	}
	if (forced[0])
		return !strcmp(forced, modes[i]);
	return !(i == 0 && under_valgrind());
}

/* A runtime of @nr_workers in mode @i (NULL: io_uring cannot be set up here). */
static struct cl_runtime *new_rt(int i, unsigned int nr_workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	setenv("CL_RUNTIME_IO", modes[i], 1);
	memset(&a, 0, sizeof(a));
	a.nr_workers = nr_workers;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	if (!rt && i == 0) {
		cr_log_warn("io_uring cannot be set up here (%s): epoll only", strerror(errno));
		return NULL;
	}
	cr_assert_not_null(rt, "cl_runtime_create(%s): %s", modes[i], strerror(errno));
	cr_assert_str_eq(cl_runtime_io_mode(rt), modes[i]);
	return rt;
}

#define FOR_EACH_MODE(i, rt, nw)                                                        \
	for (int i = 0; i < 2; i++)                                                     \
		for (struct cl_runtime *rt = mode_wanted(i) ? new_rt(i, nw) : NULL; rt; \
		     cl_runtime_destroy(rt), rt = NULL)

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *), void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	sa.pin = 1;
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t, "cl_spawn: %s", strerror(errno));
	return t;
}

static long join(struct cl_rt_task *t)
{
	void *ret = NULL;

	cr_assert_eq(cl_join(t, &ret), 0);
	return (long)(intptr_t)ret;
}

/* Tasks parked in I/O on @rt's workers (internal: the idle loop's count). */
static unsigned int parked(struct cl_runtime *rt)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rt->nr_workers; i++)
		n += __atomic_load_n(&rt->workers[i].io_nr, __ATOMIC_SEQ_CST);
	return n;
}

/* In a task: yield until @n tasks are parked in I/O. */
static void wait_parked(struct cl_runtime *rt, unsigned int n)
{
	while (parked(rt) < n)
		cl_yield();
}

/* ---- the forced mode is reported ---- */

Test(sched_runtime_io, mode_reports_the_forced_backend)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = 1;
	setenv("CL_RUNTIME_IO", "epoll", 1);
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt);
	cr_assert_str_eq(cl_runtime_io_mode(rt), "epoll");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	setenv("CL_RUNTIME_IO", "io_uring", 1);
	rt = cl_runtime_create(&a);
	if (rt) {
		cr_assert_str_eq(cl_runtime_io_mode(rt), "io_uring");
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	} else {
		cr_assert_neq(errno, 0);
		cr_log_warn("io_uring cannot be set up here (%s)", strerror(errno));
	}
	unsetenv("CL_RUNTIME_IO");
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt);
	cr_assert(!strcmp(cl_runtime_io_mode(rt), "io_uring") || !strcmp(cl_runtime_io_mode(rt), "epoll"));
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	clear_err();
	cr_assert_null(cl_runtime_io_mode(NULL));
	cr_assert_eq(errno, EINVAL);
}

/* ---- a read parks the task, not the worker ---- */

struct pair {
	struct cl_runtime *rt;
	int rfd, wfd;
	int use_sock;        /* cl_recv/cl_send instead of cl_read/cl_write */
	atomic_long progress; /* the other task's steps */
	long seen;           /* progress the reader saw when its read returned */
	long slept_ms;       /* the sleeper's sleep, as it measured it */
	char got[8];
	long n;
};

static void *reader(void *p)
{
	struct pair *pr = p;

	pr->n = pr->use_sock ? cl_recv(pr->rfd, pr->got, sizeof(pr->got), 0)
			     : cl_read(pr->rfd, pr->got, sizeof(pr->got));
	pr->seen = atomic_load(&pr->progress);
	return NULL;
}

static void *writer(void *p)
{
	struct pair *pr = p;
	long w;

	wait_parked(pr->rt, 1); /* the reader parked: this task runs beside it */
	for (int i = 0; i < 1000; i++) {
		atomic_fetch_add(&pr->progress, 1);
		if (!(i % 100))
			cl_yield();
	}
	w = pr->use_sock ? cl_send(pr->wfd, "hello", 5, 0) : cl_write(pr->wfd, "hello", 5);
	return (void *)(intptr_t)w;
}

static void read_parks_only_the_task(int use_sock)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct pair pr;
		int fds[2];
		struct cl_rt_task *r, *w;

		memset(&pr, 0, sizeof(pr));
		if (use_sock)
			cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
		else
			cr_assert_eq(pipe(fds), 0);
		pr.rt = rt;
		pr.rfd = fds[0];
		pr.wfd = fds[1];
		pr.use_sock = use_sock;
		r = spawn_on(rt, 0, reader, &pr);
		w = spawn_on(rt, 0, writer, &pr);
		cr_assert_eq(join(w), 5, "%s", modes[m]);
		join(r);
		cr_assert_eq(pr.n, 5, "%s: %ld (%s)", modes[m], pr.n, strerror(errno));
		cr_assert_eq(memcmp(pr.got, "hello", 5), 0);
		cr_assert_eq(pr.seen, 1000, "%s: the reader saw %ld steps", modes[m], pr.seen);
		close(fds[0]);
		close(fds[1]);
	}
}

Test(sched_runtime_io, pipe_read_parks_the_task_while_another_runs, .timeout = 30)
{
	read_parks_only_the_task(0);
}

Test(sched_runtime_io, socketpair_recv_parks_the_task_while_another_runs, .timeout = 30)
{
	read_parks_only_the_task(1);
}


/* ---- a ready socket costs no wait ---- */

struct ready_io {
	int fd;
	long wrote, got, got_later;
	uint64_t waits_ready, waits_empty; /* the worker's I/O waits over each */
	struct cl_runtime *rt;
};

static uint64_t io_waits(struct cl_runtime *rt)
{
	return rt->workers[0].nr_io_waits;
}

/* On the only worker: a write with room and a read with data there, then
 * a read with nothing there (the other side writes later). */
static void *ready_io_task(void *p)
{
	struct ready_io *r = (struct ready_io *)p;
	char buf[64];
	uint64_t w0 = io_waits(r->rt);

	r->wrote = cl_write(r->fd, "ping", 4);
	r->got = cl_read(r->fd, buf, sizeof(buf));
	r->waits_ready = io_waits(r->rt) - w0;
	w0 = io_waits(r->rt);
	r->got_later = cl_read(r->fd, buf, sizeof(buf));
	r->waits_empty = io_waits(r->rt) - w0;
	return NULL;
}

/*
 * A write to a socket with room and a read of data already there complete
 * without a wait in either backend (io_uring mode tries the call first, as
 * Go's netpoller and the epoll mode do: no ring operation, park or switch);
 * a read with nothing there still parks the task (one wait) until the
 * peer writes. Before the try, io_uring mode sent each call to the ring.
 */
Test(sched_runtime_io, a_ready_socket_read_or_write_completes_without_a_wait, .timeout = 30)
{
	FOR_EACH_MODE(i, rt, 1) {
		int sv[2];
		struct ready_io r;
		struct cl_rt_task *t;

		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		memset(&r, 0, sizeof(r));
		r.fd = sv[0];
		r.rt = rt;
		cr_assert_eq(write(sv[1], "data", 4), 4); /* there before the task reads */
		t = spawn_on(rt, 0, ready_io_task, &r);
		/* the late write: once the task's second read waits */
		{
			char buf[8];

			cr_assert_eq(read(sv[1], buf, sizeof(buf)), 4, "the task's write");
			while (CL_ATOMIC_LOAD(&rt->workers[0].io_nr, CL_RELAXED) == 0)
				sched_yield();
			cr_assert_eq(write(sv[1], "late", 4), 4);
		}
		cr_assert_eq(join(t), 0);
		cr_assert_eq(r.wrote, 4, "[%s] write: %ld", modes[i], r.wrote);
		cr_assert_eq(r.got, 4, "[%s] read of ready data: %ld", modes[i], r.got);
		cr_assert_eq(r.waits_ready, 0, "[%s] a ready write and read waited %llu times", modes[i],
			     (unsigned long long)r.waits_ready);
		cr_assert_eq(r.got_later, 4, "[%s] read: %ld", modes[i], r.got_later);
		cr_assert_eq(r.waits_empty, 1, "[%s] a read with nothing there waited %llu times", modes[i],
			     (unsigned long long)r.waits_empty);
		close(sv[0]);
		close(sv[1]);
	}
}

/* ---- a short read: the next read of that socket goes to the ring ---- */

struct drained_io {
	int fd, peer;
	long full, rest, short_got, after;
	char after_buf[16];
	uint64_t waits_full_rest, waits_after;
	struct cl_runtime *rt;
};

/* On the only worker: 100 bytes are there. A read of 64 fills its buffer
 * and the next one (36) is tried first; then this task's own plain write
 * puts "fresh" there after a short read, before the next read. */
static void *drained_io_task(void *p)
{
	struct drained_io *r = (struct drained_io *)p;
	char buf[64];
	uint64_t w0 = io_waits(r->rt);

	r->full = cl_read(r->fd, buf, 64);
	r->rest = cl_read(r->fd, buf, 64); /* 36 of 64: a short read */
	r->waits_full_rest = io_waits(r->rt) - w0;
	if (write(r->peer, "fresh", 5) != 5)
		return NULL;
	w0 = io_waits(r->rt);
	r->after = cl_read(r->fd, r->after_buf, sizeof(r->after_buf));
	r->waits_after = io_waits(r->rt) - w0;
	return NULL;
}

/*
 * After a read that did not fill its buffer (the socket emptied), io_uring
 * mode sends the task's next read of that socket to the ring at once,
 * without the try that would most likely see EAGAIN; data that came
 * meanwhile is still read, in one wait that completes as it is submitted.
 * A read that filled its buffer does not do that: the next one is tried
 * first and costs no wait. The epoll mode always tries first.
 */
Test(sched_runtime_io, a_read_after_a_short_read_goes_to_the_ring_and_still_gets_the_data, .timeout = 30)
{
	FOR_EACH_MODE(i, rt, 1) {
		int sv[2];
		struct drained_io r;
		char data[100];

		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		memset(&r, 0, sizeof(r));
		memset(data, 'x', sizeof(data));
		r.fd = sv[0];
		r.peer = sv[1];
		r.rt = rt;
		cr_assert_eq(write(sv[1], data, sizeof(data)), (ssize_t)sizeof(data));
		cr_assert_eq(join(spawn_on(rt, 0, drained_io_task, &r)), 0);
		cr_assert_eq(r.full, 64, "[%s] first read: %ld", modes[i], r.full);
		cr_assert_eq(r.rest, 36, "[%s] second read: %ld", modes[i], r.rest);
		cr_assert_eq(r.waits_full_rest, 0, "[%s] the read after a full one waited %llu times",
			     modes[i], (unsigned long long)r.waits_full_rest);
		cr_assert_eq(r.after, 5, "[%s] the read after the short one: %ld", modes[i], r.after);
		cr_assert_eq(memcmp(r.after_buf, "fresh", 5), 0, "[%s] read %.5s", modes[i], r.after_buf);
		cr_assert_eq(r.waits_after, rt->io_mode == CL__RT_IO_URING ? 1u : 0u,
			     "[%s] the read after a short one waited %llu times", modes[i],
			     (unsigned long long)r.waits_after);
		close(sv[0]);
		close(sv[1]);
	}
}

/* A write to a full pipe parks too: the reader (same worker) drains it. */
static void *full_writer(void *p)
{
	struct pair *pr = p;
	static char big[256 << 10];
	size_t done = 0;

	while (done < sizeof(big)) {
		ssize_t w = cl_write(pr->wfd, big + done, sizeof(big) - done);

		if (w <= 0)
			return (void *)(intptr_t)-1;
		done += (size_t)w;
	}
	return (void *)(intptr_t)done;
}

static void *drainer(void *p)
{
	struct pair *pr = p;
	char buf[4096];
	long total = 0;

	for (;;) {
		ssize_t r = cl_read(pr->rfd, buf, sizeof(buf));

		if (r <= 0)
			break;
		total += r;
	}
	return (void *)(intptr_t)total;
}

Test(sched_runtime_io, write_to_a_full_pipe_parks_until_a_task_drains_it, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct pair pr;
		int fds[2];
		struct cl_rt_task *w, *d;

		memset(&pr, 0, sizeof(pr));
		cr_assert_eq(pipe(fds), 0);
		pr.rfd = fds[0];
		pr.wfd = fds[1];
		w = spawn_on(rt, 0, full_writer, &pr);
		d = spawn_on(rt, 0, drainer, &pr);
		cr_assert_eq(join(w), 256 << 10, "%s", modes[m]);
		close(fds[1]);
		cr_assert_eq(join(d), 256 << 10, "%s", modes[m]);
		close(fds[0]);
	}
}

/* ---- accept and connect on loopback ---- */

static int listener(struct sockaddr_in *sa)
{
	socklen_t l = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) != 0)
		cr_skip_test("no loopback here (bind 127.0.0.1: %s)", strerror(errno));
	cr_assert_eq(listen(fd, 4096), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)sa, &l), 0);
	return fd;
}

struct net {
	struct cl_runtime *rt;
	int lfd;
	struct sockaddr_in sa;
	atomic_long progress;
	long seen;
};

static void *acceptor(void *p)
{
	struct net *n = p;
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	char buf[4];
	int c = cl_accept(n->lfd, (struct sockaddr *)&peer, &pl);
	long r;

	if (c < 0)
		return (void *)(intptr_t)-1;
	n->seen = atomic_load(&n->progress);
	r = cl_recv(c, buf, sizeof(buf), MSG_WAITALL);
	if (r != 4 || memcmp(buf, "ping", 4) || pl != sizeof(peer) || peer.sin_family != AF_INET)
		return (void *)(intptr_t)-2;
	r = cl_send(c, "pong", 4, 0);
	cl_close(c);
	return (void *)(intptr_t)r;
}

static void *connector(void *p)
{
	struct net *n = p;
	char buf[4];
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long r;

	wait_parked(n->rt, 1); /* the acceptor parked */
	atomic_store(&n->progress, 1);
	if (cl_connect(s, (struct sockaddr *)&n->sa, sizeof(n->sa)) != 0)
		return (void *)(intptr_t)-1;
	/* in two parts: the acceptor's MSG_WAITALL receive waits for both */
	if (cl_send(s, "pi", 2, 0) != 2)
		return (void *)(intptr_t)-2;
	for (int i = 0; i < 10; i++)
		cl_yield();
	if (cl_send(s, "ng", 2, 0) != 2)
		return (void *)(intptr_t)-2;
	r = cl_read(s, buf, sizeof(buf));
	if (r != 4 || memcmp(buf, "pong", 4))
		return (void *)(intptr_t)-3;
	r = cl_read(s, buf, sizeof(buf)); /* EOF: the acceptor closed */
	cl_close(s);
	return (void *)(intptr_t)r;
}

Test(sched_runtime_io, accept_and_connect_on_loopback_park_the_task, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct net n;
		struct cl_rt_task *a, *c;

		memset(&n, 0, sizeof(n));
		n.rt = rt;
		n.lfd = listener(&n.sa);
		a = spawn_on(rt, 0, acceptor, &n);
		c = spawn_on(rt, 0, connector, &n);
		cr_assert_eq(join(a), 4, "%s", modes[m]);
		cr_assert_eq(join(c), 0, "%s", modes[m]);
		cr_assert_eq(n.seen, 1, "%s", modes[m]);
		close(n.lfd);
	}
}

/* connect to a port nobody listens on: ECONNREFUSED, in a task */
static void *refused(void *p)
{
	struct sockaddr_in *sa = p;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long r = cl_connect(s, (struct sockaddr *)sa, sizeof(*sa));

	r = r == -1 ? err() : 0;
	close(s);
	return (void *)(intptr_t)r;
}

Test(sched_runtime_io, connect_to_a_closed_port_is_refused, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct sockaddr_in sa;
		int l = listener(&sa);

		close(l); /* the port is free again: nobody listens */
		cr_assert_eq(join(spawn_on(rt, 0, refused, &sa)), ECONNREFUSED, "%s", modes[m]);
	}
}

/* ---- cl_poll_fd ---- */

struct pollt {
	int rfd, wfd;
	int r_timeout, e_timeout, r_zero, r_ready, r_bad, e_bad;
	uint64_t waited;
};

static void *poller(void *p)
{
	struct pollt *pt = p;
	uint64_t t0 = mono_ns();

	pt->r_zero = cl_poll_fd(pt->rfd, POLLIN, 0);
	pt->r_timeout = cl_poll_fd(pt->rfd, POLLIN, 5000000);
	pt->e_timeout = err();
	pt->waited = mono_ns() - t0;
	cr_assert_eq(write(pt->wfd, "x", 1), 1);
	pt->r_ready = cl_poll_fd(pt->rfd, POLLIN, CL_POLL_FOREVER);
	clear_err();
	pt->r_bad = cl_poll_fd(1000000, POLLIN, 1000000);
	pt->e_bad = err();
	return NULL;
}

Test(sched_runtime_io, poll_fd_times_out_and_reports_readiness, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct pollt pt;
		int fds[2];

		memset(&pt, 0, sizeof(pt));
		cr_assert_eq(pipe(fds), 0);
		pt.rfd = fds[0];
		pt.wfd = fds[1];
		join(spawn_on(rt, 0, poller, &pt));
		cr_assert_eq(pt.r_zero, 0, "%s", modes[m]);
		cr_assert_eq(pt.r_timeout, 0, "%s: %d (%s)", modes[m], pt.r_timeout, strerror(pt.e_timeout));
		cr_assert_geq(pt.waited, 5000000, "%s: returned before its timeout", modes[m]);
		cr_assert(pt.r_ready > 0 && (pt.r_ready & POLLIN), "%s: %d", modes[m], pt.r_ready);
		cr_assert_eq(pt.r_bad, -1, "%s", modes[m]);
		cr_assert_eq(pt.e_bad, EBADF, "%s", modes[m]);
		close(fds[0]);
		close(fds[1]);
	}
}

/* A poll with a timeout parks only the task: a task beside it runs. */
static void *timed_poller(void *p)
{
	struct pair *pr = p;
	int r = cl_poll_fd(pr->rfd, POLLIN, 20000000);

	pr->seen = atomic_load(&pr->progress);
	return (void *)(intptr_t)r;
}

static void *stepper(void *p)
{
	struct pair *pr = p;

	wait_parked(pr->rt, 1);
	atomic_store(&pr->progress, 1);
	return NULL;
}

Test(sched_runtime_io, timed_poll_parks_only_the_task, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct pair pr;
		int fds[2];
		struct cl_rt_task *p, *s;

		memset(&pr, 0, sizeof(pr));
		cr_assert_eq(pipe(fds), 0);
		pr.rt = rt;
		pr.rfd = fds[0];
		p = spawn_on(rt, 0, timed_poller, &pr);
		s = spawn_on(rt, 0, stepper, &pr);
		join(s);
		cr_assert_eq(join(p), 0, "%s", modes[m]);
		cr_assert_eq(pr.seen, 1, "%s", modes[m]);
		close(fds[0]);
		close(fds[1]);
	}
}

/* A worker asleep in its I/O backend still wakes for its next timer. */
static void *sleeper(void *p)
{
	struct pair *pr = p;
	uint64_t t0;

	wait_parked(pr->rt, 1); /* the reader parked: the worker sleeps in I/O */
	t0 = mono_ns();
	cl_sleep_ns(5000000);
	pr->slept_ms = (long)((mono_ns() - t0) / 1000000);
	return NULL;
}

Test(sched_runtime_io, a_timer_ends_an_idle_sleep_in_the_io_backend, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 1) {
		struct pair pr;
		int fds[2];
		struct cl_rt_task *r, *s;

		memset(&pr, 0, sizeof(pr));
		cr_assert_eq(pipe(fds), 0);
		pr.rt = rt;
		pr.rfd = fds[0];
		r = spawn_on(rt, 0, reader, &pr);
		s = spawn_on(rt, 0, sleeper, &pr);
		join(s); /* hangs if the worker waited in its ring or epoll without the timer */
		cr_assert_geq(pr.slept_ms, 5, "%s", modes[m]);
		cr_assert_eq(write(fds[1], "hello", 5), 5); /* from outside: ends the read */
		join(r);
		cr_assert_eq(pr.n, 5, "%s", modes[m]);
		close(fds[0]);
		close(fds[1]);
	}
}

/* ---- cl_close() of an fd another task waits on ---- */

struct closer {
	struct cl_runtime *rt;
	int fd;
	int kind; /* 0 read, 1 accept, 2 poll */
	long r;
	int e;
};

static void *close_victim(void *p)
{
	struct closer *c = p;
	char b[8];

	clear_err();
	if (c->kind == 0)
		c->r = cl_read(c->fd, b, sizeof(b));
	else if (c->kind == 1)
		c->r = cl_accept(c->fd, NULL, NULL);
	else
		c->r = cl_poll_fd(c->fd, POLLIN, CL_POLL_FOREVER);
	c->e = err();
	return NULL;
}

static void *close_it(void *p)
{
	struct closer *c = p;

	wait_parked(c->rt, 1);
	return (void *)(intptr_t)cl_close(c->fd);
}

static void close_cancels(unsigned int nw, int kind)
{
	FOR_EACH_MODE(m, rt, nw) {
		struct closer c;
		int fds[2] = { -1, -1 };
		struct sockaddr_in sa;
		struct cl_rt_task *v, *k;

		memset(&c, 0, sizeof(c));
		c.rt = rt;
		c.kind = kind;
		if (kind == 1) {
			c.fd = listener(&sa);
		} else {
			cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
			c.fd = fds[0];
		}
		v = spawn_on(rt, 0, close_victim, &c);
		k = spawn_on(rt, nw - 1, close_it, &c);
		cr_assert_eq(join(k), 0, "%s", modes[m]);
		join(v);
		cr_assert_eq(c.r, -1, "%s: %ld", modes[m], c.r);
		cr_assert_eq(c.e, ECANCELED, "%s: %s", modes[m], strerror(c.e));
		if (fds[1] >= 0)
			close(fds[1]);
	}
}

Test(sched_runtime_io, close_on_the_same_worker_cancels_a_read, .timeout = 30)
{
	close_cancels(1, 0);
}

Test(sched_runtime_io, close_on_another_worker_cancels_a_read, .timeout = 30)
{
	close_cancels(2, 0);
}

Test(sched_runtime_io, close_on_another_worker_cancels_an_accept, .timeout = 30)
{
	close_cancels(2, 1);
}

Test(sched_runtime_io, close_on_another_worker_cancels_a_poll, .timeout = 30)
{
	close_cancels(2, 2);
}

/* ---- shutdown with tasks parked in I/O ---- */

#define SHUT_TASKS 8

struct shut {
	int fds[SHUT_TASKS][2];
	long r[SHUT_TASKS];
	int e[SHUT_TASKS];
	atomic_int returned;
};

static struct shut *shut_arg;

static void *shut_victim(void *p)
{
	int i = (int)(intptr_t)p;
	char b[8];

	clear_err();
	if (i % 3 == 1)
		shut_arg->r[i] = cl_read(shut_arg->fds[i][0], b, sizeof(b));
	else if (i % 3 == 2) /* a poll with a timeout (io_uring: a linked timeout) */
		shut_arg->r[i] = cl_poll_fd(shut_arg->fds[i][0], POLLIN, 10000000000ULL);
	else
		shut_arg->r[i] = cl_poll_fd(shut_arg->fds[i][0], POLLIN, CL_POLL_FOREVER);
	shut_arg->e[i] = err();
	/* a call after the cancel fails too, at once */
	if (cl_read(shut_arg->fds[i][0], b, sizeof(b)) != -1 || err() != ECANCELED)
		shut_arg->e[i] = -1;
	atomic_fetch_add(&shut_arg->returned, 1);
	return NULL;
}

Test(sched_runtime_io, shutdown_cancels_tasks_parked_in_io, .timeout = 30)
{
	for (int m = 0; m < 2; m++) {
		struct shut s;
		struct cl_runtime *rt;
		struct cl_spawn_attr sa;

		if (!mode_wanted(m) || !(rt = new_rt(m, 2)))
			continue;
		memset(&s, 0, sizeof(s));
		shut_arg = &s;
		memset(&sa, 0, sizeof(sa));
		sa.detached = 1;
		for (int i = 0; i < SHUT_TASKS; i++) {
			cr_assert_eq(pipe(s.fds[i]), 0);
			sa.worker = CL_SPAWN_WORKER(i % 2);
			cr_assert_not_null(cl_spawn(rt, &sa, shut_victim, (void *)(intptr_t)i));
		}
		while (parked(rt) < SHUT_TASKS)
			sched_yield(); /* outside the runtime: a condition, not a time */
		cr_assert_eq(cl_runtime_shutdown(rt), 0, "%s: %s", modes[m], strerror(errno));
		cr_assert_eq(atomic_load(&s.returned), SHUT_TASKS);
		for (int i = 0; i < SHUT_TASKS; i++) {
			cr_assert_eq(s.r[i], -1, "%s: task %d: %ld", modes[m], i, s.r[i]);
			cr_assert_eq(s.e[i], ECANCELED, "%s: task %d: %d", modes[m], i, s.e[i]);
			close(s.fds[i][0]);
			close(s.fds[i][1]);
		}
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	}
}

/* ---- deadlines on every call ---- */

static void *deadlines_task(void *p)
{
	int sv[2], ls, fail = 0;
	char b[4096];
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	(void)p;
	memset(b, 'x', sizeof(b));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return (void *)(intptr_t)-1;
	clear_err();
	fail |= (cl_read_timeout(sv[0], b, 1, 2000000) != -1 || err() != ETIMEDOUT) << 0;
	clear_err();
	fail |= (cl_recv_timeout(sv[0], b, 1, 0, 0) != -1 || err() != ETIMEDOUT) << 1;
	/* fill the socket, then a write that finds no room times out */
	while (cl_send(sv[1], b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	clear_err();
	fail |= (cl_write_timeout(sv[1], b, sizeof(b), 2000000) != -1 || err() != ETIMEDOUT) << 2;
	clear_err();
	fail |= (cl_send_timeout(sv[1], b, sizeof(b), 0, 2000000) != -1 || err() != ETIMEDOUT) << 3;
	/* data there: a timed read gets it at once */
	fail |= (cl_read_timeout(sv[0], b, 1, 0) != 1) << 4;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 4) ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl))
		return (void *)(intptr_t)-1;
	clear_err();
	fail |= (cl_accept_timeout(ls, NULL, NULL, 2000000) != -1 || err() != ETIMEDOUT) << 5;
	close(ls);
	close(sv[0]);
	close(sv[1]);
	return (void *)(intptr_t)fail;
}

Test(sched_runtime_io, every_call_times_out_with_etimedout, .timeout = 30)
{
	FOR_EACH_MODE(m, rt, 2) {
		long r = join(spawn_on(rt, 0, deadlines_task, NULL));

		cr_assert_eq(r, 0, "%s: failed checks (bits: read, recv, write, send, ready read, accept): %#lx",
			     modes[m], r);
	}
	/* outside a task: poll(2) for the timeout, then the call */
	{
		int fds[2];
		char c;

		cr_assert_eq(pipe(fds), 0);
		errno = 0;
		cr_assert_eq(cl_read_timeout(fds[0], &c, 1, 1000000), -1);
		cr_assert_eq(errno, ETIMEDOUT);
		cr_assert_eq(write(fds[1], "x", 1), 1);
		cr_assert_eq(cl_read_timeout(fds[0], &c, 1, 1000000), 1);
		close(fds[0]);
		close(fds[1]);
	}
}

/*
 * A deadline racing data: the writer sends byte k only once the reader has
 * byte k-1, after a wait of 0 to ~2 deadlines, so each timed read either
 * gets the next byte or times out, many right at the deadline. Every byte
 * must be read once, in order: none lost to a timed-out read, none twice.
 * 10,000 rounds per backend (2,000 under valgrind and TSan);
 * CL_TEST_RACE_ROUNDS=100000 for the full race.
 */
#define RACE_TIMEOUT_NS 20000ULL

struct race {
	int fds[2];
	unsigned long rounds;
	unsigned long got;          /* bytes the reader has (atomic) */
	unsigned long timeouts, wrong;
};

static void *race_reader(void *p)
{
	struct race *r = (struct race *)p;
	unsigned char want = 0, b;

	while (__atomic_load_n(&r->got, __ATOMIC_RELAXED) < r->rounds) {
		long n = cl_read_timeout(r->fds[0], &b, 1, RACE_TIMEOUT_NS);

		if (n == 1) {
			r->wrong += b != want;
			want = (unsigned char)(b + 1);
			__atomic_fetch_add(&r->got, 1, __ATOMIC_RELEASE);
		} else if (n == -1 && err() == ETIMEDOUT) {
			r->timeouts++;
		} else {
			r->wrong++;
			break;
		}
	}
	return NULL;
}

static void *race_writer(void *p)
{
	struct race *r = (struct race *)p;
	uint64_t seed = 88172645463325252ULL;

	for (unsigned long k = 0; k < r->rounds; k++) {
		uint64_t until;
		unsigned char b = (unsigned char)k;

		while (__atomic_load_n(&r->got, __ATOMIC_ACQUIRE) < k)
			cl_yield();
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		until = mono_ns() + seed % (2 * RACE_TIMEOUT_NS);
		while (mono_ns() < until)
			;
		if (cl_write(r->fds[1], &b, 1) != 1)
			return (void *)(intptr_t)-1;
	}
	return NULL;
}

Test(sched_runtime_io, deadline_racing_data_loses_and_repeats_no_byte, .timeout = 300)
{
	const char *e = getenv("CL_TEST_RACE_ROUNDS"); /* the full run: 100000 */
	unsigned long rounds = e ? strtoul(e, NULL, 10) : under_valgrind() || under_tsan() ? 2000 : 10000;

	FOR_EACH_MODE(m, rt, 2) {
		struct race r;
		struct cl_rt_task *rd, *wr;

		memset(&r, 0, sizeof(r));
		r.rounds = rounds;
		cr_assert_eq(pipe(r.fds), 0);
		rd = spawn_on(rt, 0, race_reader, &r);
		wr = spawn_on(rt, 1, race_writer, &r);
		cr_assert_eq(join(wr), 0);
		join(rd);
		cr_assert_eq(r.wrong, 0, "%s: %lu bytes out of order or failed reads", modes[m], r.wrong);
		cr_assert_eq(r.got, rounds, "%s: %lu of %lu bytes read", modes[m], r.got, rounds);
		cr_assert_gt(r.timeouts, 0, "%s: no read timed out: the race was not run", modes[m]);
		cr_log_info("%s: %lu bytes, %lu timed-out reads", modes[m], r.got, r.timeouts);
		close(r.fds[0]);
		close(r.fds[1]);
	}
}

/* ---- bad input, and the plain calls outside a task ---- */

static void *volatile nil; /* NULL the compiler cannot see through */

static int bad_calls(void)
{
	int fds[2], fail = 0;
	char b[4] = { 0 };
	struct sockaddr_in sa;

	if (pipe(fds))
		return 1;
	clear_err();
	fail |= (cl_read(fds[1] + 1000, b, 4) != -1 || err() != EBADF) << 0;
	clear_err();
	fail |= (cl_write(-1, b, 4) != -1 || err() != EBADF) << 1;
	fail |= (write(fds[1], "abcd", 4) != 4) << 2;
	clear_err();
	/* (memcheck reports the NULL buffer it is given: not under valgrind) */
	fail |= (!under_valgrind() && (cl_read(fds[0], nil, 4) != -1 || err() != EFAULT)) << 3;
	clear_err();
	fail |= (cl_recv(fds[0], b, 4, 0) != -1 || err() != ENOTSOCK) << 4;
	clear_err();
	fail |= (cl_send(-1, b, 4, 0) != -1 || err() != EBADF) << 5;
	clear_err();
	fail |= (cl_accept(fds[0], NULL, NULL) != -1 || err() != ENOTSOCK) << 6;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	clear_err();
	fail |= (cl_connect(-1, (struct sockaddr *)&sa, sizeof(sa)) != -1 || err() != EBADF) << 7;
	clear_err();
	fail |= (cl_poll_fd(-1, POLLIN, 1000) != 0) << 8; /* poll(2) ignores a negative fd */
	clear_err();
	fail |= (cl_close(fds[1] + 1000) != -1 || err() != EBADF) << 9;
	fail |= (cl_close(fds[0]) != 0) << 10;
	clear_err();
	fail |= (cl_read(fds[0], b, 4) != -1 || err() != EBADF) << 11; /* closed */
	fail |= (cl_write(fds[1], "xy", 2) != -1 || err() != EPIPE) << 12; /* reader gone */
	close(fds[1]);
	/* MSG_DONTWAIT never parks: EAGAIN at once, also in a task */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
		return 1;
	clear_err();
	fail |= (cl_recv(fds[0], b, 4, MSG_DONTWAIT) != -1 || err() != EAGAIN) << 13;
	close(fds[0]);
	close(fds[1]);
	return fail;
}

static void *bad_task(void *p)
{
	(void)p;
	return (void *)(intptr_t)bad_calls();
}

Test(sched_runtime_io, bad_input_gives_the_system_calls_errno, .timeout = 30)
{
	struct sigaction ign, old;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);
	cr_assert_eq(bad_calls(), 0, "outside a task: failed checks %#x", bad_calls());
	FOR_EACH_MODE(m, rt, 1) {
		long f = join(spawn_on(rt, 0, bad_task, NULL));

		cr_assert_eq(f, 0, "%s: failed checks %#lx", modes[m], f);
	}
	sigaction(SIGPIPE, &old, NULL);
}

Test(sched_runtime_io, outside_a_task_each_call_is_the_system_call)
{
	int fds[2];
	char b[8];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	cr_assert_eq(cl_write(fds[0], "abc", 3), 3);
	cr_assert_eq(cl_poll_fd(fds[1], POLLIN, 0), POLLIN);
	cr_assert_eq(cl_read(fds[1], b, sizeof(b)), 3);
	cr_assert_eq(cl_poll_fd(fds[1], POLLIN, 1000000), 0);
	cr_assert_eq(cl_send(fds[1], "de", 2, 0), 2);
	cr_assert_eq(cl_recv(fds[0], b, sizeof(b), 0), 2);
	errno = 0;
	cr_assert_eq(cl_recv(fds[0], b, sizeof(b), MSG_DONTWAIT), -1);
	cr_assert_eq(errno, EAGAIN);
	cr_assert_eq(cl_close(fds[0]), 0);
	cr_assert_eq(cl_read(fds[1], b, sizeof(b)), 0); /* EOF */
	cr_assert_eq(cl_close(fds[1]), 0);
}

/* ---- 10,000 connections echoed on 2 workers ---- */

#define ECHO_MSG 64

static atomic_long echoed;

static void *echo_conn(void *p)
{
	int c = (int)(intptr_t)p;
	char buf[ECHO_MSG];

	for (;;) {
		ssize_t r = cl_read(c, buf, sizeof(buf)), off = 0;

		if (r <= 0)
			break;
		while (off < r) {
			ssize_t w = cl_write(c, buf + off, (size_t)(r - off));

			if (w <= 0)
				break;
			off += w;
		}
		atomic_fetch_add(&echoed, off);
	}
	cl_close(c);
	return NULL;
}

struct echo_srv {
	struct cl_runtime *rt;
	int lfd;
	long conns;
	long accepted;
};

static void *echo_accept(void *p)
{
	struct echo_srv *s = p;
	struct cl_spawn_attr sa;

	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	while (s->accepted < s->conns) {
		int c = cl_accept(s->lfd, NULL, NULL);

		if (c < 0)
			return (void *)(intptr_t)-err();
		s->accepted++;
		if (!cl_spawn(s->rt, &sa, echo_conn, (void *)(intptr_t)c))
			return (void *)(intptr_t)-1000;
	}
	return NULL;
}

/* The client, in a child: @n connections, all open, then a message of
 * ECHO_MSG bytes (its index in each) on each, then each reply read back and
 * checked. Exit status 0 if every byte came back. */
static int echo_client(const struct sockaddr_in *sa, long n)
{
	int *fd = calloc((size_t)n, sizeof(int));

	if (!fd)
		return 2;
	for (long i = 0; i < n; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd[i] < 0 || connect(fd[i], (const struct sockaddr *)sa, sizeof(*sa)) != 0)
			return 3;
	}
	for (long i = 0; i < n; i++) {
		char m[ECHO_MSG];

		memset(m, (int)(i & 0xff), sizeof(m));
		memcpy(m, &i, sizeof(i));
		if (write(fd[i], m, sizeof(m)) != (ssize_t)sizeof(m))
			return 4;
	}
	for (long i = 0; i < n; i++) {
		char m[ECHO_MSG];
		size_t got = 0;
		long id;

		while (got < sizeof(m)) {
			ssize_t r = read(fd[i], m + got, sizeof(m) - got);

			if (r <= 0)
				return 5;
			got += (size_t)r;
		}
		memcpy(&id, m, sizeof(id));
		if (id != i || (unsigned char)m[ECHO_MSG - 1] != (unsigned char)(i & 0xff))
			return 6;
	}
	for (long i = 0; i < n; i++)
		close(fd[i]);
	free(fd);
	return 0;
}

static long echo_conns(void)
{
	const char *e = getenv("CL_TEST_ECHO_CONNS");

	if (e)
		return atol(e);
	if (under_valgrind())
		return 200; /* one thread at a time, ~50x slower */
	if (under_tsan())
		return 1000;
	return 10000;
}

Test(sched_runtime_io, ten_thousand_connections_echo_every_byte_on_two_workers, .timeout = 120)
{
	long n = echo_conns();
	struct rlimit rl;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < (rlim_t)n + 64 && rl.rlim_max >= (rlim_t)n + 64) {
		rl.rlim_cur = (rlim_t)n + 64;
		cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	if (rl.rlim_cur < (rlim_t)n + 64)
		cr_skip_test("RLIMIT_NOFILE %lu: %ld connections need %ld fds in each process",
			     (unsigned long)rl.rlim_cur, n, n + 64);
	for (int m = 0; m < 2; m++) {
		struct echo_srv s;
		struct cl_runtime *rt;
		struct cl_rt_task *a;
		pid_t pid;
		int status;

		if (!mode_wanted(m))
			continue;
		memset(&s, 0, sizeof(s));
		struct sockaddr_in sa;
		s.lfd = listener(&sa);
		s.conns = n;
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			close(s.lfd);
			_exit(echo_client(&sa, n));
		}
		rt = new_rt(m, 2);
		if (!rt) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(s.lfd);
			continue;
		}
		atomic_store(&echoed, 0);
		s.rt = rt;
		a = spawn_on(rt, 0, echo_accept, &s);
		cr_assert_eq(join(a), 0, "%s: accept failed after %ld", modes[m], s.accepted);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: client status %#x", modes[m], status);
		cr_assert_eq(cl_runtime_shutdown(rt), 0, "%s: %s", modes[m], strerror(errno));
		cr_assert_eq(atomic_load(&echoed), n * ECHO_MSG, "%s", modes[m]);
		cr_assert_eq(cl_runtime_destroy(rt), 0);
		close(s.lfd);
	}
}
