/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/io.h - I/O that parks the task, not the worker:
 * cl_read(), cl_write(), cl_recv(), cl_send(), cl_accept(), cl_connect(),
 * each also with a `_timeout` form (-1/ETIMEDOUT; CL_FOREVER: no limit),
 * cl_poll_fd(), cl_close(), cl_runtime_io_mode().
 *
 * In a task, a call parks only the task: the worker runs other tasks and
 * resumes it when the operation completed (io_uring: the operation itself
 * is submitted to the worker's ring) or when the fd is ready (epoll: the
 * call is retried once the fd is ready). Outside a task each call is the
 * plain system call. Each returns what the system call returns (-1 and
 * errno). One call's paths: iocall.h; the backends and their limits:
 * iopoll.h and docs/runtime.md, I/O.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_IO_H
#define CACHELOCAL_SCHED_RUNTIME_IO_H

#include <sys/types.h>

CL_BEGIN_DECLS

/* cl_poll_fd()'s timeout that waits as long as it takes (CL_FOREVER). */
#define CL_POLL_FOREVER CL_FOREVER

/* One call of @kind; @timeout_ns: CL_FOREVER (no deadline), else the
 * longest the task waits for it (then -1/ETIMEDOUT). */
CL_INLINE long cl__rt_io_do(int kind, int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
			    socklen_t *alen, socklen_t clen, uint64_t timeout_ns)
{
	struct cl__rt_ioargs a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.fd = fd;
	a.buf = buf;
	a.n = n;
	a.flags = flags;
	a.addr = addr;
	a.alen = alen;
	a.clen = clen;
	a.deadline = timeout_ns == CL_FOREVER ? 0 : cl__rt_deadline(timeout_ns);
	return cl__rt_io_call(&a);
}

/**
 * cl_read_timeout() - read(2) that parks the calling task, not its worker,
 * for at most @timeout_ns.
 * @fd: the file descriptor.
 * @buf: where to read to.
 * @n: at most this many bytes.
 * @timeout_ns: the longest to wait for data (CL_FOREVER: no limit; 0: only
 *              what is there now).
 *
 * In a task the task parks until data (or EOF) is there; the worker runs
 * other tasks meanwhile. Outside a task: poll(2) for the timeout, then
 * read(2). The other I/O calls below have the same `_timeout` form. See
 * docs/runtime.md, I/O.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: read(2)'s: bytes read, 0 at EOF, or -1 with errno (EBADF, EFAULT,
 * ...; ETIMEDOUT: nothing came in @timeout_ns; ECANCELED: cl_close() of @fd
 * by another task, or cl_runtime_shutdown(), ended the wait).
 */
CL_INLINE ssize_t cl_read_timeout(int fd, void *buf, size_t n, uint64_t timeout_ns)
{
	return (ssize_t)cl__rt_io_do(CL__IO_READ, fd, buf, n, 0, NULL, NULL, 0, timeout_ns);
}

/**
 * cl_read() - read(2) that parks the calling task, not its worker.
 * @fd: the file descriptor.
 * @buf: where to read to.
 * @n: at most this many bytes.
 *
 * cl_read_timeout() with CL_FOREVER.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: as cl_read_timeout(), never ETIMEDOUT.
 */
CL_INLINE ssize_t cl_read(int fd, void *buf, size_t n)
{
	return cl_read_timeout(fd, buf, n, CL_FOREVER);
}

/**
 * cl_write_timeout() - write(2) that parks the calling task, for at most
 * @timeout_ns.
 * @fd: the file descriptor.
 * @buf: the bytes.
 * @n: how many.
 * @timeout_ns: as cl_read_timeout()'s, for room to write.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: write(2)'s: bytes written (maybe fewer than @n), or -1 with errno
 * (as cl_read_timeout()).
 */
CL_INLINE ssize_t cl_write_timeout(int fd, const void *buf, size_t n, uint64_t timeout_ns)
{
	return (ssize_t)cl__rt_io_do(CL__IO_WRITE, fd, (void *)(uintptr_t)buf, n, 0, NULL, NULL, 0, timeout_ns);
}

/**
 * cl_write() - write(2) that parks the calling task, not its worker.
 * @fd: the file descriptor.
 * @buf: the bytes.
 * @n: how many.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: as cl_write_timeout() with CL_FOREVER.
 */
CL_INLINE ssize_t cl_write(int fd, const void *buf, size_t n)
{
	return cl_write_timeout(fd, buf, n, CL_FOREVER);
}

/**
 * cl_recv_timeout() - recv(2) that parks the calling task, for at most
 * @timeout_ns.
 * @fd: a socket.
 * @buf: where to receive to.
 * @n: at most this many bytes.
 * @flags: recv(2)'s flags (MSG_DONTWAIT: never parks).
 * @timeout_ns: as cl_read_timeout()'s.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: recv(2)'s, or -1 with errno (as cl_read_timeout()).
 */
CL_INLINE ssize_t cl_recv_timeout(int fd, void *buf, size_t n, int flags, uint64_t timeout_ns)
{
	return (ssize_t)cl__rt_io_do(CL__IO_RECV, fd, buf, n, flags, NULL, NULL, 0, timeout_ns);
}

/**
 * cl_recv() - recv(2) that parks the calling task, not its worker.
 * @fd: a socket.
 * @buf: where to receive to.
 * @n: at most this many bytes.
 * @flags: recv(2)'s flags (MSG_DONTWAIT: never parks).
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: recv(2)'s, or -1 with errno (as cl_read()).
 */
CL_INLINE ssize_t cl_recv(int fd, void *buf, size_t n, int flags)
{
	return cl_recv_timeout(fd, buf, n, flags, CL_FOREVER);
}

/**
 * cl_send_timeout() - send(2) that parks the calling task, for at most
 * @timeout_ns.
 * @fd: a socket.
 * @buf: the bytes.
 * @n: how many.
 * @flags: send(2)'s flags (MSG_NOSIGNAL: EPIPE without SIGPIPE).
 * @timeout_ns: as cl_write_timeout()'s.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: send(2)'s, or -1 with errno (as cl_read_timeout()).
 */
CL_INLINE ssize_t cl_send_timeout(int fd, const void *buf, size_t n, int flags, uint64_t timeout_ns)
{
	return (ssize_t)cl__rt_io_do(CL__IO_SEND, fd, (void *)(uintptr_t)buf, n, flags, NULL, NULL, 0, timeout_ns);
}

/**
 * cl_send() - send(2) that parks the calling task, not its worker.
 * @fd: a socket.
 * @buf: the bytes.
 * @n: how many.
 * @flags: send(2)'s flags (MSG_NOSIGNAL: EPIPE without SIGPIPE).
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: send(2)'s, or -1 with errno (as cl_read()).
 */
CL_INLINE ssize_t cl_send(int fd, const void *buf, size_t n, int flags)
{
	return cl_send_timeout(fd, buf, n, flags, CL_FOREVER);
}

/**
 * cl_accept_timeout() - accept(2) that parks the calling task, for at most
 * @timeout_ns.
 * @fd: a listening socket.
 * @addr: the peer's address (NULL: not wanted).
 * @addrlen: in: @addr's size, out: the address's (NULL with @addr NULL).
 * @timeout_ns: as cl_read_timeout()'s, for a connection.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: the new connection's fd, or -1 with errno (as cl_read_timeout()).
 */
CL_INLINE int cl_accept_timeout(int fd, struct sockaddr *addr, socklen_t *addrlen, uint64_t timeout_ns)
{
	return (int)cl__rt_io_do(CL__IO_ACCEPT, fd, NULL, 0, 0, addr, addrlen, 0, timeout_ns);
}

/**
 * cl_accept() - accept(2) that parks the calling task, not its worker.
 * @fd: a listening socket.
 * @addr: the peer's address (NULL: not wanted).
 * @addrlen: in: @addr's size, out: the address's (NULL with @addr NULL).
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: the new connection's fd, or -1 with errno (as cl_read()).
 */
CL_INLINE int cl_accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	return cl_accept_timeout(fd, addr, addrlen, CL_FOREVER);
}

/**
 * cl_connect_timeout() - connect(2) that parks the calling task, for at most
 * @timeout_ns.
 * @fd: a socket.
 * @addr: the address.
 * @len: its size.
 * @timeout_ns: as cl_read_timeout()'s, for the connection to be made (in a
 *              task; outside a task connect(2) blocks as it does).
 *
 * In a task the task parks until the connection is made or failed (also
 * on a non-blocking socket: no EINPROGRESS). After ETIMEDOUT the socket is
 * still connecting: close it.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: 0, or -1 with errno (connect(2)'s; ETIMEDOUT, ECANCELED as
 * cl_read_timeout()).
 */
CL_INLINE int cl_connect_timeout(int fd, const struct sockaddr *addr, socklen_t len, uint64_t timeout_ns)
{
	return (int)cl__rt_io_do(CL__IO_CONNECT, fd, NULL, 0, 0, (struct sockaddr *)(uintptr_t)addr, NULL, len,
				 timeout_ns);
}

/**
 * cl_connect() - connect(2) that parks the calling task, not its worker.
 * @fd: a socket.
 * @addr: the address.
 * @len: its size.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: 0, or -1 with errno (connect(2)'s; ECANCELED as cl_read()).
 */
CL_INLINE int cl_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return cl_connect_timeout(fd, addr, len, CL_FOREVER);
}

/**
 * cl_poll_fd() - wait until one fd is ready, parking the task.
 * @fd: the file descriptor.
 * @events: poll(2) events (POLLIN, POLLOUT, ...).
 * @timeout_ns: at most this long (0: look without waiting;
 *              CL_FOREVER: no limit).
 *
 * Context: any thread (outside a task: ppoll(2)); in a task, no spinlock
 * held.
 * Return: the events that came (> 0; POLLERR and POLLHUP come unasked), 0
 * when the timeout expired, or -1 with errno (EBADF: @fd is not open,
 * where poll(2) would report POLLNVAL; ECANCELED as cl_read(); EINTR
 * outside a task).
 */
CL_INLINE int cl_poll_fd(int fd, short events, uint64_t timeout_ns)
{
	struct cl_rt_task *self = cl__rt_current();
	struct cl__rt_ioargs a;
	int r;

	if (!self || !self->rt->io_buckets || fd < 0 || !timeout_ns)
		return cl__rt_io_poll1(fd, events, timeout_ns);
	memset(&a, 0, sizeof(a));
	a.kind = CL__IO_POLL;
	a.fd = fd;
	a.events = events;
	a.deadline = timeout_ns == CL_FOREVER ? 0 : cl__rt_deadline(timeout_ns);
#ifdef CL__RT_HAVE_URING
	if (self->rt->io_mode == CL__RT_IO_URING) {
		r = (int)cl__rt_io_ring_call(self, &a);
	} else
#endif
	{
		r = cl__rt_io_poll_now(fd, events); /* ready now: no park */
		if (r == 0) {
			r = cl__rt_io_epoll_wait(self, fd, events, a.deadline);
			if (r == -EPERM)
				r = cl__rt_io_poll_now(fd, events) < 0 ? -cl__rt_io_errno() : events;
		} else if (r < 0) {
			r = -cl__rt_io_errno();
		}
	}
	if (r < 0) {
		cl__rt_set_errno(-r);
		return -1;
	}
	return r;
}

/*
 * End every I/O wait on @fd in @rt (cl_close()), or every one (@all:
 * shutdown) with ECANCELED: epoll waits are taken off the table and woken
 * here; ring operations get a cancel posted to the worker that owns them.
 */
CL_INLINE void cl__rt_io_cancel(struct cl_runtime *rt, int fd, int all)
{
	struct cds_list_head woken, *pos, *n;

	CDS_INIT_LIST_HEAD(&woken);
	if (rt->io_mode == CL__RT_IO_URING && all) {
		for (unsigned int i = 0; i < rt->nr_workers; i++)
			if (CL_ATOMIC_LOAD(&rt->workers[i].io_nr, CL_RELAXED)) {
				CL_ATOMIC_STORE(&rt->workers[i].io_cancel_all, 1, CL_RELEASE);
				cl__rt_kick(&rt->workers[i]);
			}
		return;
	}
	for (unsigned int i = all ? 0 : (unsigned int)fd % CL__RT_IO_BUCKETS; i < CL__RT_IO_BUCKETS; i++) {
		struct cl__rt_iobucket *b = &rt->io_buckets[i];

		cl__rt_lock(&b->lock);
		cds_list_for_each_safe(pos, n, &b->waiters) {
			struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
			struct cl__rt_ioop *op = (struct cl__rt_ioop *)wt->data;

			if (!all && op->fd != fd)
				continue;
			if (rt->io_mode == CL__RT_IO_EPOLL) {
				cds_list_del(pos);
				wt->status = CL__RT_WAIT_CANCELED;
				cds_list_add_tail(pos, &woken);
			} else if (!op->cancelled) {
				struct cl__rt_iocancel *c = (struct cl__rt_iocancel *)malloc(sizeof(*c));

				op->cancelled = 1;
				if (!c)
					continue; /* (no memory: the operation goes on) */
				c->ud = op->ud;
				c->next = CL_ATOMIC_LOAD(&op->w->io_cancels, CL_RELAXED);
				while (!CL_ATOMIC_CAS(&op->w->io_cancels, &c->next, c, CL_RELEASE, CL_RELAXED))
					;
				cl__rt_kick(op->w);
			}
		}
		cl__rt_unlock(&b->lock);
		if (!all)
			break;
	}
	while (!cds_list_empty(&woken))
		cl__rt_wake_rec(cl__rt_waiter_pop(&woken));
}

/**
 * cl_close() - close(2), ending the waits of other tasks on the fd.
 * @fd: the file descriptor.
 *
 * In a task, every task of the runtime parked in a call on @fd (on any
 * worker) is woken and that call fails with ECANCELED (or completes, if
 * its operation finished first); then @fd is closed. Outside a task:
 * close(2) (a wait on @fd is not ended: close it from a task).
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: close(2)'s: 0, or -1 with errno (EBADF, ...).
 */
CL_INLINE int cl_close(int fd)
{
	struct cl_rt_task *self = cl__rt_current();

	if (self && fd >= 0 && self->rt->io_buckets)
		cl__rt_io_cancel(self->rt, fd, 0);
	return close(fd);
}

/**
 * cl_runtime_io_mode() - the I/O backend of @rt.
 * @rt: the runtime.
 *
 * Context: any.
 * Return: "io_uring" or "epoll", or NULL with errno EINVAL (NULL @rt).
 */
CL_INLINE const char *cl_runtime_io_mode(const struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return NULL;
	return rt->io_mode == CL__RT_IO_URING ? "io_uring" : "epoll";
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_IO_H */
