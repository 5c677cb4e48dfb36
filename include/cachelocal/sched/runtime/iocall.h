/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/iocall.h - one I/O call of a task, the paths
 * under io.h's calls: in the worker's ring (io_uring mode, a socket's
 * read or write tried at once first), or tried and retried each time the
 * fd is ready (epoll mode); the plain system call outside a task. The
 * backends themselves are iopoll.h's.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_IOCALL_H
#define CACHELOCAL_SCHED_RUNTIME_IOCALL_H

#include <sys/types.h>

CL_BEGIN_DECLS

/* Linux's PIPE_BUF (<limits.h> hides it in a strict C11 build): a
 * writable pipe takes that many bytes without blocking. */
#define CL__RT_IO_PIPE_BUF 4096u

/* The calls, for the shared paths. */
#define CL__IO_READ 0
#define CL__IO_WRITE 1
#define CL__IO_RECV 2
#define CL__IO_SEND 3
#define CL__IO_ACCEPT 4
#define CL__IO_CONNECT 5
#define CL__IO_POLL 6

struct cl__rt_ioargs {
	int kind;
	int fd;
	void *buf;                          /* read, recv, write, send (const for the last two) */
	size_t n;
	int flags;                          /* recv, send */
	struct sockaddr *addr;              /* accept, connect */
	socklen_t *alen;                    /* accept */
	socklen_t clen;                     /* connect */
	short events;                       /* poll */
	uint64_t deadline;                  /* CLOCK_MONOTONIC ns, 0: none */
};

/* Put @self's waiter record on @b for @op (@b's lock held). */
CL_INLINE void cl__rt_io_enlist(struct cl_rt_task *self, struct cl__rt_iobucket *b, struct cl__rt_ioop *op,
				short status)
{
	struct cl__rt_waiter *wt = &self->wait;

	wt->t = self;
	CL_WRITE_ONCE(wt->w, self->w);
	wt->data = op;
	wt->status = status;
	wt->aff_flips = -1; /* woken where it parked: its ring or epoll is there */
	CL_ATOMIC_STORE(&wt->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	if (self->w->watch_cand == wt)
		self->w->watch_cand = NULL;
	cds_list_add_tail(&wt->node, &b->waiters);
}

/* ---- io_uring: the operation in the worker's ring ---- */

#ifdef CL__RT_HAVE_URING
/* Prepare @a in @sqe. */
CL_INLINE void cl__rt_io_prep(struct io_uring_sqe *sqe, const struct cl__rt_ioargs *a)
{
	switch (a->kind) {
	case CL__IO_READ:
		io_uring_prep_read(sqe, a->fd, a->buf, (unsigned int)(a->n > 0x7ffff000u ? 0x7ffff000u : a->n),
				   (uint64_t)-1);
		break;
	case CL__IO_WRITE:
		io_uring_prep_write(sqe, a->fd, a->buf, (unsigned int)(a->n > 0x7ffff000u ? 0x7ffff000u : a->n),
				    (uint64_t)-1);
		break;
	case CL__IO_RECV:
		io_uring_prep_recv(sqe, a->fd, a->buf, a->n, a->flags);
		break;
	case CL__IO_SEND:
		io_uring_prep_send(sqe, a->fd, a->buf, a->n, a->flags);
		break;
	case CL__IO_ACCEPT:
		io_uring_prep_accept(sqe, a->fd, a->addr, a->alen, 0);
		break;
	case CL__IO_CONNECT:
		io_uring_prep_connect(sqe, a->fd, a->addr, a->clen);
		break;
	default:
		io_uring_prep_poll_add(sqe, a->fd, (unsigned int)(uint16_t)a->events);
		break;
	}
}

/*
 * @a as one operation in @self's worker's ring (a poll with a deadline:
 * linked to a timeout), parked until its completion is reaped there. Its
 * record is on the fd table meanwhile, for cl_close(). Return: the
 * completion's result (-cl__rt_io_errno() on failure; -ECANCELED if cancelled; a poll
 * that timed out: 0).
 */
CL_INLINE long cl__rt_io_ring_call(struct cl_rt_task *self, const struct cl__rt_ioargs *a)
{
	struct cl__rt_iobucket *b = cl__rt_io_bucket(self->rt, a->fd);
	unsigned int need = a->deadline ? 2u : 1u;
	struct __kernel_timespec ts;
	struct io_uring_sqe *sqe;
	struct cl__rt_worker *w;
	struct cl__rt_ioop op;
	int cancelled;

	cl__rt_np_inc(self); /* on this worker (its ring) until parked */
	w = self->w;
	if (CL_ATOMIC_LOAD(&self->rt->closing, CL_ACQUIRE)) {
		cl__rt_np_exit(self);
		return -ECANCELED; /* shutdown under way: see cl_runtime_shutdown() */
	}
	if (io_uring_sq_space_left(w->io_ring) < need)
		cl__rt_io_submit(w);
	if (io_uring_sq_space_left(w->io_ring) < need) {
		cl__rt_np_exit(self);
		return -EAGAIN;
	}
	memset(&op, 0, sizeof(op));
	op.fd = a->fd;
	op.w = w;
	op.t = self;
	op.ud = (uint64_t)(uintptr_t)&op | (uint64_t)(w->io_gen++ & 0xffffu) << 48;
	cl_ticket_lock(&b->lock);
	cl__rt_io_enlist(self, b, &op, -1);
	(void)cl_ticket_unlock(&b->lock);
	sqe = io_uring_get_sqe(w->io_ring);
	cl__rt_io_prep(sqe, a);
	io_uring_sqe_set_data64(sqe, op.ud);
	if (need == 2) {
		uint64_t now = cl__rt_timer_now(), d = a->deadline > now ? a->deadline - now : 0;

		sqe->flags |= IOSQE_IO_LINK;
		ts.tv_sec = (long long)(d / 1000000000ULL);
		ts.tv_nsec = (long long)(d % 1000000000ULL);
		sqe = io_uring_get_sqe(w->io_ring);
		io_uring_prep_link_timeout(sqe, &ts, 0);
		io_uring_sqe_set_data64(sqe, CL__RT_IO_UD_IGNORE);
	}
	if (!w->io_sq_pending)
		w->io_sq_since = w->now_ns;
	w->io_sq_pending += need;
	CL_ATOMIC_FETCH_ADD(&w->io_nr, 1u, CL_RELAXED);
	w->nr_io_waits++;
	cl__rt_np_inc(self); /* cl__rt_block() drops one */
	cl__rt_block(self, NULL);
	/* its completion was reaped on op.w, which woke it */
	CL_ATOMIC_FETCH_SUB(&op.w->io_nr, 1u, CL_RELAXED);
	cl_ticket_lock(&b->lock);
	cds_list_del(&self->wait.node);
	cancelled = op.cancelled;
	(void)cl_ticket_unlock(&b->lock);
	cl__rt_np_exit(self);
	/* the linked timeout cancelled the operation, unless shutdown did (its
	 * cancel of the whole ring marks no operation) */
	if (op.res == -ECANCELED && need == 2 && !cancelled &&
	    !CL_ATOMIC_LOAD(&self->rt->closing, CL_ACQUIRE))
		return a->kind == CL__IO_POLL ? 0 : -ETIMEDOUT;
	if (op.res < 0 && cancelled)
		return -ECANCELED;
	return op.res;
}
#endif /* CL__RT_HAVE_URING */

/* ---- epoll: readiness, then the call ---- */

/*
 * Park @self until @fd is ready for @events in its worker's epoll instance,
 * or @deadline (CLOCK_MONOTONIC ns; 0: none) passes: its record on the fd
 * table with status CL__RT_WAIT_PENDING, ended by exactly one of the
 * worker's reaping, cl_close() or shutdown (CL__RT_WAIT_CANCELED), and
 * its timer (the waitq.h protocol, the bucket's lock for the list's).
 * Return: the events that came (> 0), 0 (timed out), or -cl__rt_io_errno()
 * (ECANCELED; EPERM: epoll cannot watch @fd, which is then always ready).
 */
CL_INLINE int cl__rt_io_epoll_wait(struct cl_rt_task *self, int fd, short events, uint64_t deadline)
{
	struct cl__rt_iobucket *b = cl__rt_io_bucket(self->rt, fd);
	struct cl__rt_worker *w;
	struct cl__rt_ioop op;
	int st, err;

	cl__rt_lock_as(self, &b->lock);
	w = self->w;
	if (CL_ATOMIC_LOAD(&self->rt->closing, CL_ACQUIRE)) {
		cl__rt_unlock_as(self, &b->lock);
		return -ECANCELED;
	}
	memset(&op, 0, sizeof(op));
	op.fd = fd;
	op.events = events;
	op.w = w;
	op.t = self;
	cl__rt_io_enlist(self, b, &op, CL__RT_WAIT_PENDING);
	err = cl__rt_io_epoll_arm(w, b, fd);
	if (err) {
		cds_list_del(&self->wait.node);
		cl__rt_unlock_as(self, &b->lock);
		return -err;
	}
	if (deadline)
		cl__rt_timer_arm(w, self, deadline, &b->lock);
	CL_ATOMIC_FETCH_ADD(&w->io_nr, 1u, CL_RELAXED);
	w->nr_io_waits++;
	cl__rt_block(self, &b->lock); /* the lock is released after the switch */
	st = self->wait.status;
	if (deadline && st != CL__RT_WAIT_TIMEDOUT)
		cl__rt_timer_disarm(self);
	CL_ATOMIC_FETCH_SUB(&op.w->io_nr, 1u, CL_RELAXED);
	if (st == 0)
		return op.revents ? op.revents : events;
	return st == CL__RT_WAIT_TIMEDOUT ? 0 : -ECANCELED;
}

/* poll(2) of one fd for at most @ns (UINT64_MAX: no limit). */
CL_INLINE int cl__rt_io_poll1(int fd, short events, uint64_t ns)
{
	struct pollfd p;
	struct timespec ts;
	long r;

	p.fd = fd;
	p.events = events;
	p.revents = 0;
	ts.tv_sec = (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	r = syscall(SYS_ppoll, &p, 1UL, ns == UINT64_MAX ? NULL : &ts, NULL, (size_t)8);
	if (r < 0)
		return -1;
	if (r > 0 && (p.revents & POLLNVAL)) {
		cl__rt_set_errno(EBADF);
		return -1;
	}
	return r ? p.revents : 0;
}

/* Is @fd ready for @events now (poll(2) without waiting)? Retried when a
 * signal interrupts it (the preemption signal: a zero-timeout poll()
 * returns EINTR too). The events, 0, or -1 with errno. */
CL_INLINE int cl__rt_io_poll_now(int fd, short events)
{
	int r;

	while ((r = cl__rt_io_poll1(fd, events, 0)) < 0 && cl__rt_io_errno() == EINTR)
		;
	return r;
}

/* The plain (blocking) system call of @a. */
CL_INLINE long cl__rt_io_plain(const struct cl__rt_ioargs *a)
{
	switch (a->kind) {
	case CL__IO_READ:
		return (long)read(a->fd, a->buf, a->n);
	case CL__IO_WRITE:
		return (long)write(a->fd, a->buf, a->n);
	case CL__IO_RECV:
		return (long)recv(a->fd, a->buf, a->n, a->flags);
	case CL__IO_SEND:
		return (long)send(a->fd, a->buf, a->n, a->flags);
	case CL__IO_ACCEPT:
		return accept(a->fd, a->addr, a->alen);
	default:
		return connect(a->fd, a->addr, a->clen);
	}
}

/* Did the caller of a recv or send (@a) ask it not to wait (MSG_DONTWAIT)? */
CL_INLINE int cl__rt_io_nowait(const struct cl__rt_ioargs *a)
{
	return (a->kind == CL__IO_RECV || a->kind == CL__IO_SEND) && (a->flags & MSG_DONTWAIT);
}

/* A read, write, recv or send (@a) as recv()/send() with MSG_DONTWAIT,
 * never waiting: its result, or -errno (-EAGAIN: it would block;
 * -ENOTSOCK: @a's fd is not a socket). */
CL_INLINE long cl__rt_io_try_sock(const struct cl__rt_ioargs *a)
{
	long r;

	if (a->kind == CL__IO_READ || a->kind == CL__IO_RECV)
		r = (long)recv(a->fd, a->buf, a->n, (a->kind == CL__IO_RECV ? a->flags : 0) | MSG_DONTWAIT);
	else
		r = (long)send(a->fd, a->buf, a->n, (a->kind == CL__IO_SEND ? a->flags : 0) | MSG_DONTWAIT);
	return r < 0 ? -cl__rt_io_errno() : r;
}

/*
 * @a without blocking the worker: -EAGAIN when it would block. Sockets:
 * MSG_DONTWAIT. Other fds, and accept(): the call once poll() says the fd
 * is ready (@ready: the caller knows it is), a write of at most PIPE_BUF
 * bytes (a short count: write(2) may return one), so a blocking fd whose
 * readiness another thread takes first may still block the worker (see
 * docs/runtime.md, I/O). Sets *@sock to 0 once an fd is not a socket.
 */
CL_INLINE long cl__rt_io_try(const struct cl__rt_ioargs *a, int *sock, int ready)
{
	long r;
	short ev = a->kind == CL__IO_WRITE ? POLLOUT : POLLIN;

	if (*sock && a->kind <= CL__IO_SEND) {
		r = cl__rt_io_try_sock(a);
		if (r != -ENOTSOCK || a->kind == CL__IO_RECV || a->kind == CL__IO_SEND)
			return r;
		*sock = 0;
	}
	if (!ready && cl__rt_io_poll_now(a->fd, ev) == 0)
		return -EAGAIN; /* (an error, EBADF: the call below reports it) */
	if (a->kind == CL__IO_WRITE && a->n > CL__RT_IO_PIPE_BUF) {
		/* a writable pipe or FIFO takes PIPE_BUF bytes without blocking */
		struct cl__rt_ioargs part = *a;

		part.n = CL__RT_IO_PIPE_BUF;
		r = cl__rt_io_plain(&part);
	} else {
		r = cl__rt_io_plain(a);
	}
	return r < 0 ? -cl__rt_io_errno() : r;
}

/* connect() in a task, epoll mode: non-blocking for the call, parked until
 * the socket is writable, then its SO_ERROR. */
CL_INLINE long cl__rt_io_epoll_connect(struct cl_rt_task *self, const struct cl__rt_ioargs *a)
{
	int fl = fcntl(a->fd, F_GETFL), r, err = 0;
	socklen_t el = sizeof(err);

	if (fl < 0)
		return -cl__rt_io_errno();
	if (!(fl & O_NONBLOCK) && fcntl(a->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -cl__rt_io_errno();
	r = connect(a->fd, a->addr, a->clen);
	if (r < 0 && cl__rt_io_errno() == EINPROGRESS) {
		r = cl__rt_io_epoll_wait(self, a->fd, POLLOUT, a->deadline);
		if (r == 0)
			r = -ETIMEDOUT;
		else if (r > 0)
			r = getsockopt(a->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 ? -cl__rt_io_errno() : err ? -err : 0;
	} else if (r < 0) {
		r = -cl__rt_io_errno();
	}
	if (!(fl & O_NONBLOCK))
		(void)fcntl(a->fd, F_SETFL, fl);
	return r;
}

/* @a in a task, epoll mode: tried, and retried each time the fd is ready. */
CL_INLINE long cl__rt_io_epoll_once(struct cl_rt_task *self, const struct cl__rt_ioargs *a)
{
	short ev = a->kind == CL__IO_WRITE || a->kind == CL__IO_SEND ? POLLOUT : POLLIN;
	int sock = a->kind != CL__IO_ACCEPT, ready = 0;

	if (a->kind == CL__IO_CONNECT)
		return cl__rt_io_epoll_connect(self, a);
	for (;;) {
		long r = cl__rt_io_try(a, &sock, ready);
		int p;

		if ((r != -EAGAIN && r != -EWOULDBLOCK) || cl__rt_io_nowait(a))
			return r; /* done, or the caller asked not to wait */
		p = cl__rt_io_epoll_wait(self, a->fd, ev, a->deadline);
		if (p == 0)
			return -ETIMEDOUT;
		if (p == -EPERM) { /* a regular file: always ready */
			r = cl__rt_io_plain(a);
			return r < 0 ? -cl__rt_io_errno() : r;
		}
		if (p < 0)
			return p;
		ready = 1;
	}
}

/* The same, a recv() with MSG_WAITALL until it has all (MSG_DONTWAIT,
 * which each try adds, would end it at the first bytes): the bytes, or
 * the first failure if none came (as recv(2)). */
CL_INLINE long cl__rt_io_epoll_call(struct cl_rt_task *self, const struct cl__rt_ioargs *a)
{
	struct cl__rt_ioargs part = *a;
	long got = 0;

	if (a->kind != CL__IO_RECV || !(a->flags & MSG_WAITALL) || (a->flags & MSG_DONTWAIT))
		return cl__rt_io_epoll_once(self, a);
	while ((size_t)got < a->n) {
		long r;

		part.buf = (char *)a->buf + got;
		part.n = a->n - (size_t)got;
		r = cl__rt_io_epoll_once(self, &part);
		if (r <= 0)
			return got ? got : r;
		got += r;
	}
	return got;
}

#ifdef CL__RT_HAVE_URING
/*
 * @a in a task, io_uring mode. A read, write, recv or send on a socket is
 * tried first without waiting, as the epoll mode and Go's netpoller do:
 * data already there, or room for a reply, costs that one system call and
 * no park, switch and completion; only what would block goes to the ring.
 * A recv with MSG_WAITALL, and an fd that is not a socket (a pipe, a
 * file: one ENOTSOCK), go to the ring at once.
 */
CL_INLINE long cl__rt_io_ring_try_call(struct cl_rt_task *self, const struct cl__rt_ioargs *a)
{
	int rd = a->kind == CL__IO_READ || a->kind == CL__IO_RECV;
	long r;

	if (a->kind > CL__IO_SEND || (a->kind == CL__IO_RECV && (a->flags & MSG_WAITALL)))
		return cl__rt_io_ring_call(self, a);
	if (rd && self->io_drained == a->fd + 1 && !cl__rt_io_nowait(a)) {
		/* its last read emptied the socket: this one would most likely
		 * find it empty, so the ring at once (it reads what is there) */
		r = cl__rt_io_ring_call(self, a);
		goto out;
	}
	r = cl__rt_io_try_sock(a);
	if (r == -EAGAIN || r == -EWOULDBLOCK) {
		if (cl__rt_io_nowait(a))
			return r; /* the caller asked not to wait */
	} else if (r != -ENOTSOCK || a->kind == CL__IO_RECV || a->kind == CL__IO_SEND) {
		goto out; /* done (or failed: the system call's errno) */
	}
	r = cl__rt_io_ring_call(self, a);
out:
	if (rd)
		self->io_drained = r > 0 && (size_t)r < a->n ? a->fd + 1 : 0;
	return r;
}
#endif

/* The plain call of @a outside a task; with a deadline, once poll(2) says
 * the fd is ready before it (connect(2): no deadline). */
CL_INLINE long cl__rt_io_plain_dl(const struct cl__rt_ioargs *a)
{
	uint64_t now = cl__rt_timer_now();
	short ev = a->kind == CL__IO_WRITE || a->kind == CL__IO_SEND ? POLLOUT : POLLIN;
	int r;

	if (a->deadline && a->kind != CL__IO_CONNECT && a->fd >= 0) {
		while ((r = cl__rt_io_poll1(a->fd, ev, a->deadline > now ? a->deadline - now : 0)) < 0 &&
		       cl__rt_io_errno() == EINTR)
			now = cl__rt_timer_now();
		if (r == 0)
			cl__rt_set_errno(ETIMEDOUT);
		if (r <= 0)
			return -1;
	}
	return cl__rt_io_plain(a);
}

/* @a: in a task through the runtime's backend, else the plain call. */
CL_INLINE long cl__rt_io_call(const struct cl__rt_ioargs *a)
{
	struct cl_rt_task *self = cl__rt_current();
	long r;

	if (!self || !self->rt->io_buckets || a->fd < 0)
		return cl__rt_io_plain_dl(a);
#ifdef CL__RT_HAVE_URING
	if (self->rt->io_mode == CL__RT_IO_URING)
		r = cl__rt_io_ring_try_call(self, a);
	else
#endif
		r = cl__rt_io_epoll_call(self, a);
	if (r < 0) {
		cl__rt_set_errno((int)-r);
		return -1;
	}
	return r;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_IOCALL_H */
