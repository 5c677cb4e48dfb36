/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/iopoll.h - the I/O backend of each worker: an
 * io_uring (through liburing) or an epoll instance, and the eventfd a kick
 * writes while the worker sleeps in it (wakeq.h, CL__RT_SLEEP_IO).
 *
 * A task that does I/O (io.h) parks on the worker it runs on: a ring
 * operation in that worker's ring, or a waiter record for readiness in the
 * runtime's fd table (struct cl__rt_iobucket) with the fd armed in that
 * worker's epoll instance (EPOLLONESHOT, the union of the events its
 * waiters on that worker want). A parked task cannot migrate (the balancer
 * moves queued tasks only), so only that worker's thread ends the wait:
 * it reaps its completions or events at each pick, at switches (a ring:
 * one read of its completion tail, no system call when none is there;
 * epoll: a zero-timeout epoll_wait() at most once per
 * CL__RT_IO_POLL_NS), and sleeps in the backend, until its next timer,
 * while tasks are parked in I/O on it. Each task it wakes goes on its
 * local wake list, as a timer's does (timer.h).
 *
 * Ring submissions are batched: prepared by the tasks, submitted when
 * CL__RT_IO_BATCH are pending at a switch, when the oldest has waited
 * CL__RT_IO_POLL_NS of the worker's clock, when the worker is about to run
 * out of tasks, and before it sleeps. A ring is single-issuer: a cancel
 * from another thread (cl_close(), shutdown) is posted to its worker
 * (io_cancels, io_cancel_all) and submitted there.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_IOPOLL_H
#define CACHELOCAL_SCHED_RUNTIME_IOPOLL_H

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#if defined(__has_include) && !defined(CL_RUNTIME_NO_IO_URING)
#if __has_include(<liburing.h>)
/* liburing's inline helpers name AT_FDCWD, which <fcntl.h> hides in a
 * strict C11 build (its value is the kernel's) */
#ifndef AT_FDCWD
#define AT_FDCWD (-100)
#endif
#include <liburing.h>
#define CL__RT_HAVE_URING 1
#endif
#endif

CL_BEGIN_DECLS

/* epoll: a busy worker looks for events at a switch at most this often
 * (ns); io_uring: the longest a prepared operation waits for a batch. */
#define CL__RT_IO_POLL_NS 50000ULL
/* epoll data of the worker's eventfd (an fd is never this). */
#define CL__RT_IO_EP_KICK (~0ULL)
/* A ring operation's user data: its record's address (48 bits) and a
 * generation (the top 16), so a cancel posted late misses a newer
 * operation whose record has the same address. */
#define CL__RT_IO_UD_ADDR ((1ULL << 48) - 1)

/*
 * errno, read through a call the compiler cannot see through: a task may
 * resume on another worker thread, and an errno address computed before a
 * switch would be the old thread's (as cl__rt_set_errno()).
 */
CL_NOINLINE CL_UNUSED static int cl__rt_io_errno(void)
{
	return errno;
}

/* epoll_pwait2() (a timeout in ns) failed with ENOSYS: epoll_wait() (ms). */
CL_WEAK int cl__rt_no_pwait2;

/* The bucket of the runtime's fd table for @fd. */
CL_INLINE struct cl__rt_iobucket *cl__rt_io_bucket(struct cl_runtime *rt, int fd)
{
	return &rt->io_buckets[(unsigned int)fd % CL__RT_IO_BUCKETS];
}

/* ---- epoll ---- */

/*
 * Arm @fd in @w's epoll instance for the events its waiters on @w want
 * (records in @b, lock held), once (EPOLLONESHOT). None: left as it is (a
 * one-shot that fires for nobody is ignored). Return: 0 or an errno
 * (EPERM: an fd epoll cannot watch, a regular file, always ready).
 */
CL_INLINE int cl__rt_io_epoll_arm(struct cl__rt_worker *w, struct cl__rt_iobucket *b, int fd)
{
	struct epoll_event ev;
	struct cds_list_head *pos;
	uint32_t want = 0;

	cds_list_for_each(pos, &b->waiters) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		const struct cl__rt_ioop *op = (const struct cl__rt_ioop *)wt->data;

		if (op->fd == fd && op->w == w)
			want |= (uint16_t)op->events;
	}
	if (!want)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = want | EPOLLONESHOT;
	ev.data.u64 = (uint64_t)(unsigned int)fd;
	if (epoll_ctl(w->io_epfd, EPOLL_CTL_MOD, fd, &ev) == 0)
		return 0;
	if (cl__rt_io_errno() == ENOENT && epoll_ctl(w->io_epfd, EPOLL_CTL_ADD, fd, &ev) == 0)
		return 0;
	return cl__rt_io_errno();
}

/* @fd is ready with @revents on @w: wake its waiters on @w whose events
 * came (an error or hangup wakes all), and arm it again for the others. */
CL_INLINE void cl__rt_io_epoll_ready(struct cl__rt_worker *w, int fd, uint32_t revents)
{
	struct cl__rt_iobucket *b = cl__rt_io_bucket(w->rt, fd);
	struct cds_list_head *pos, *n;

	cl_ticket_lock(&b->lock);
	cds_list_for_each_safe(pos, n, &b->waiters) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		struct cl__rt_ioop *op = (struct cl__rt_ioop *)wt->data;

		if (op->fd != fd || op->w != w || !(revents & ((uint16_t)op->events | EPOLLERR | EPOLLHUP)))
			continue;
		cds_list_del(pos);
		op->revents = (short)(revents & 0xffffu);
		wt->status = 0;
		cl__rt_timer_wake(w, wt->t); /* blocked here: the local wake list */
	}
	(void)cl__rt_io_epoll_arm(w, b, fd);
	(void)cl_ticket_unlock(&b->lock);
}

/* Handle @n events of @w's epoll instance. */
CL_INLINE void cl__rt_io_epoll_handle(struct cl__rt_worker *w, const struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == CL__RT_IO_EP_KICK) {
			uint64_t v;

			if (read(w->io_evfd, &v, sizeof(v)) < 0) { /* EAGAIN: read already */
			}
			continue;
		}
		cl__rt_io_epoll_ready(w, (int)ev[i].data.u64, ev[i].events);
	}
}

/* Look for events without waiting. Context: @w's thread, holding no lock. */
CL_INLINE void cl__rt_io_epoll_poll(struct cl__rt_worker *w)
{
	struct epoll_event ev[CL__RT_IO_EVENTS];
	int n, e = cl__rt_io_errno();

	n = epoll_wait(w->io_epfd, ev, CL__RT_IO_EVENTS, 0);
	if (n > 0)
		cl__rt_io_epoll_handle(w, ev, n);
	cl__rt_set_errno(e);
}

/* ---- io_uring ---- */

#ifdef CL__RT_HAVE_URING
/* Queue a read of @w's eventfd: its completion is a kick. */
CL_INLINE void cl__rt_io_arm_kick(struct cl__rt_worker *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(w->io_ring);

	if (!sqe) {
		(void)io_uring_submit(w->io_ring);
		sqe = io_uring_get_sqe(w->io_ring);
	}
	if (!sqe)
		return; /* not armed: its kick is then seen at the next look (a sleep with a timer) */
	io_uring_prep_read(sqe, w->io_evfd, &w->io_evbuf, sizeof(w->io_evbuf), 0);
	io_uring_sqe_set_data64(sqe, CL__RT_IO_UD_KICK);
	w->io_sq_pending++;
}

/* Submit @w's prepared operations. */
CL_INLINE void cl__rt_io_submit(struct cl__rt_worker *w)
{
	int e = cl__rt_io_errno();

	if (w->io_sq_pending && io_uring_submit(w->io_ring) >= 0)
		w->io_sq_pending = io_uring_sq_ready(w->io_ring);
	cl__rt_set_errno(e);
}

/* Submit the cancels posted to @w (cl_close(), shutdown). */
CL_INLINE void cl__rt_io_cancels(struct cl__rt_worker *w)
{
	struct cl__rt_iocancel *c = CL_ATOMIC_XCHG(&w->io_cancels, (struct cl__rt_iocancel *)NULL, CL_ACQUIRE);
	int all = CL_ATOMIC_XCHG(&w->io_cancel_all, 0, CL_ACQ_REL);

	while (c) {
		struct cl__rt_iocancel *next = c->next;
		struct io_uring_sqe *sqe = io_uring_get_sqe(w->io_ring);

		if (!sqe) {
			cl__rt_io_submit(w);
			sqe = io_uring_get_sqe(w->io_ring);
		}
		if (sqe) {
			io_uring_prep_cancel64(sqe, c->ud, 0);
			io_uring_sqe_set_data64(sqe, CL__RT_IO_UD_IGNORE);
			w->io_sq_pending++;
			free(c);
		} else { /* the ring is full: post it again */
			c->next = CL_ATOMIC_LOAD(&w->io_cancels, CL_RELAXED);
			while (!CL_ATOMIC_CAS(&w->io_cancels, &c->next, c, CL_RELEASE, CL_RELAXED))
				;
		}
		c = next;
	}
	if (all) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(w->io_ring);

		if (!sqe) {
			cl__rt_io_submit(w);
			sqe = io_uring_get_sqe(w->io_ring);
		}
		if (sqe) { /* every operation, the eventfd's read too (armed again at its completion) */
			io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL);
			io_uring_sqe_set_data64(sqe, CL__RT_IO_UD_IGNORE);
			w->io_sq_pending++;
		} else {
			CL_ATOMIC_STORE(&w->io_cancel_all, 1, CL_RELAXED);
		}
	}
	cl__rt_io_submit(w); /* a cancel goes in at once */
}

/* Is task work (completions not yet posted) waiting for @w's next entry
 * to the kernel? Only with IORING_SETUP_TASKRUN_FLAG; else 0. */
CL_INLINE int cl__rt_io_taskrun(const struct cl__rt_worker *w)
{
	return (IO_URING_READ_ONCE(*w->io_ring->sq.kflags) & IORING_SQ_TASKRUN) != 0;
}

/* Reap @w's completions: each ends its task's wait (the local wake list).
 * Returns how many tasks it woke. Context: @w's thread, holding no lock. */
CL_INLINE unsigned int cl__rt_io_reap_ring(struct cl__rt_worker *w)
{
	struct io_uring *ring = w->io_ring;
	struct io_uring_cqe *cqe;
	unsigned int head, seen, woke = 0;
	int rearm;

	do {
		seen = 0;
		rearm = 0;
		io_uring_for_each_cqe(ring, head, cqe) {
			uint64_t ud = cqe->user_data;

			seen++;
			if (ud == CL__RT_IO_UD_KICK) {
				rearm = 1;
			} else if (ud != CL__RT_IO_UD_IGNORE && ud != LIBURING_UDATA_TIMEOUT) {
				/* (the latter: liburing's own timeout of a wait, on a
				 * kernel without IORING_FEAT_EXT_ARG) */
				struct cl__rt_ioop *op = (struct cl__rt_ioop *)(uintptr_t)(ud & CL__RT_IO_UD_ADDR);

				op->res = cqe->res;
				cl__rt_timer_wake(w, op->t); /* blocked here: the local wake list */
				woke++;
			}
		}
		io_uring_cq_advance(ring, seen);
		if (rearm)
			cl__rt_io_arm_kick(w);
		if (io_uring_cq_has_overflow(ring) || cl__rt_io_taskrun(w)) {
			/* completions the kernel kept (NODROP), or not yet run */
			int e = cl__rt_io_errno();

			(void)io_uring_get_events(ring);
			cl__rt_set_errno(e);
			seen = 1;
		}
	} while (seen);
	return woke;
}
#endif /* CL__RT_HAVE_URING */

/* ---- what the worker calls ---- */

/* Has @w completions to reap or cancels to submit? (The ring: a read of
 * its completion tail; epoll cannot tell without a system call: 0.) */
CL_INLINE int cl__rt_io_ready(const struct cl__rt_worker *w)
{
#ifdef CL__RT_HAVE_URING
	if (!CL_ATOMIC_LOAD(&w->io_nr, CL_RELAXED) && !w->io_sq_pending)
		return 0; /* nothing in flight: what is there waits (cl__rt_io_reap()) */
	if (w->io_ring)
		return io_uring_cq_ready(w->io_ring) || cl__rt_io_taskrun(w) ||
		       CL_ATOMIC_LOAD(&w->io_cancels, CL_RELAXED) || CL_ATOMIC_LOAD(&w->io_cancel_all, CL_RELAXED);
#else
	(void)w;
#endif
	return 0;
}

/*
 * cl__rt_io_reap() - end the I/O waits of @w that completed (a ring: its
 * completions, posted cancels, and a batch of submissions if @w is about
 * to run out of tasks, CL__RT_IO_BATCH are pending or the oldest waited
 * CL__RT_IO_POLL_NS; epoll: its events,
 * at most once per CL__RT_IO_POLL_NS unless @force). At picks and
 * switches. Context: @w's thread, holding no lock.
 */
CL_INLINE void cl__rt_io_reap_slow(struct cl__rt_worker *w, int force)
{
#ifdef CL__RT_HAVE_URING
	if (w->io_ring) {
		if (CL_UNLIKELY(CL_ATOMIC_LOAD(&w->io_cancels, CL_RELAXED) ||
				CL_ATOMIC_LOAD(&w->io_cancel_all, CL_RELAXED)))
			cl__rt_io_cancels(w);
		if (w->io_sq_pending &&
		    (force || w->io_sq_pending >= CL__RT_IO_BATCH ||
		     CL_READ_ONCE(w->rq->nr_running) + w->nr_wakes <= 1 ||
		     w->now_ns - w->io_sq_since >= CL__RT_IO_POLL_NS))
			cl__rt_io_submit(w);
		if (io_uring_cq_ready(w->io_ring) || io_uring_cq_has_overflow(w->io_ring))
			(void)cl__rt_io_reap_ring(w);
		return;
	}
#endif
	if (w->io_epfd >= 0 && (force || w->now_ns - w->io_last_poll >= CL__RT_IO_POLL_NS)) {
		w->io_last_poll = w->now_ns;
		cl__rt_io_epoll_poll(w);
	}
}

/* The test that finds nothing to do, then the rest (which keeps errno
 * through out-of-line calls: a task that resumed after a switch may be on
 * another worker thread, whose errno is at another address). With no task
 * parked in I/O here and nothing to submit, the ring is not looked at: a
 * late completion there (the kick's read, a linked timeout's) and a cancel
 * posted for an operation that completed meanwhile wait for the next look
 * with I/O in flight, before any sleep in the ring (cl__rt_io_wait()). */
CL_ALWAYS_INLINE void cl__rt_io_reap(struct cl__rt_worker *w, int force)
{
	if (!CL_ATOMIC_LOAD(&w->io_nr, CL_RELAXED) && !w->io_sq_pending)
		return;
	cl__rt_io_reap_slow(w, force);
}

/* Does @w sleep in its I/O backend (tasks parked in I/O, or submissions
 * pending)? Then a kick writes its eventfd. */
CL_INLINE int cl__rt_io_sleeps(const struct cl__rt_worker *w)
{
	return CL_ATOMIC_LOAD(&w->io_nr, CL_RELAXED) || w->io_sq_pending;
}

/*
 * cl__rt_io_wait() - @w's idle sleep in its I/O backend (it announced
 * CL__RT_SLEEP_IO): until a completion or event, a kick (its eventfd), or
 * @tmo (NULL: none). Ends the waits that completed. Context: @w's thread.
 */
CL_INLINE void cl__rt_io_wait(struct cl__rt_worker *w, const struct timespec *tmo)
{
	int e = cl__rt_io_errno();

	w->nr_io_sleeps++;
#ifdef CL__RT_HAVE_URING
	if (w->io_ring) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec kts;

		cl__rt_io_cancels(w);
		if (tmo) {
			kts.tv_sec = tmo->tv_sec;
			kts.tv_nsec = tmo->tv_nsec;
		}
		if (!io_uring_cq_ready(w->io_ring))
			(void)io_uring_submit_and_wait_timeout(w->io_ring, &cqe, 1, tmo ? &kts : NULL, NULL);
		w->io_sq_pending = io_uring_sq_ready(w->io_ring);
		(void)cl__rt_io_reap_ring(w);
		cl__rt_set_errno(e);
		return;
	}
#endif
	{
		struct epoll_event ev[CL__RT_IO_EVENTS];
		int n = -1, fallback = 1;

#ifdef SYS_epoll_pwait2
		if (!CL_ATOMIC_LOAD(&cl__rt_no_pwait2, CL_RELAXED)) {
			n = (int)syscall(SYS_epoll_pwait2, w->io_epfd, ev, CL__RT_IO_EVENTS, tmo, NULL, (size_t)0);
			fallback = n < 0 && errno == ENOSYS;
			if (fallback) /* before 5.11, or valgrind: not asked again */
				CL_ATOMIC_STORE(&cl__rt_no_pwait2, 1, CL_RELAXED);
		}
#endif
		if (fallback) {
			long ms = -1;

			if (tmo) /* rounded up: never before the timer */
				ms = (long)tmo->tv_sec * 1000 + (tmo->tv_nsec + 999999) / 1000000;
			n = epoll_wait(w->io_epfd, ev, CL__RT_IO_EVENTS, ms > INT_MAX ? INT_MAX : (int)ms);
		}
		if (n > 0)
			cl__rt_io_epoll_handle(w, ev, n);
		w->io_last_poll = w->now_ns;
	}
	cl__rt_set_errno(e);
}

/* ---- setup ---- */

/* Release what cl__rt_io_init() made (after the workers stopped). */
CL_INLINE void cl__rt_io_fini(struct cl_runtime *rt)
{
	if (!rt->io_buckets)
		return;
	for (unsigned int i = 0; i < rt->nr_workers; i++) {
		struct cl__rt_worker *w = &rt->workers[i];
		struct cl__rt_iocancel *c = w->io_cancels;

#ifdef CL__RT_HAVE_URING
		if (w->io_ring) {
			io_uring_queue_exit(w->io_ring);
			free(w->io_ring);
			w->io_ring = NULL;
		}
#endif
		while (c) {
			struct cl__rt_iocancel *next = c->next;

			free(c);
			c = next;
		}
		w->io_cancels = NULL;
		if (w->io_epfd >= 0)
			close(w->io_epfd);
		if (w->io_evfd >= 0)
			close(w->io_evfd);
		w->io_epfd = w->io_evfd = -1;
	}
	free(rt->io_buckets);
	rt->io_buckets = NULL;
}

#ifdef CL__RT_HAVE_URING
/* @w's ring, or an errno. */
CL_INLINE int cl__rt_io_ring_init(struct cl__rt_worker *w)
{
	/* Completions run as task work on the worker's next entry to the
	 * kernel (it makes system calls all the time), not by an interrupt of
	 * the running worker; IORING_SQ_TASKRUN says when one is waiting
	 * (cl__rt_io_ready()). Before 5.19 (EINVAL): without, as before. */
	static const unsigned int flags[2] = {
		IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		IORING_SETUP_CQSIZE,
	};
	struct io_uring_params p;
	int r = -EINVAL;

	w->io_ring = (struct io_uring *)calloc(1, sizeof(struct io_uring));
	if (!w->io_ring)
		return ENOMEM;
	for (unsigned int i = 0; i < 2 && r == -EINVAL; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flags[i];
		p.cq_entries = CL__RT_IO_CQ_ENTRIES;
		r = io_uring_queue_init_params(CL__RT_IO_SQ_ENTRIES, w->io_ring, &p);
	}
	if (r == 0 && !(p.features & IORING_FEAT_NODROP)) {
		io_uring_queue_exit(w->io_ring);
		r = -ENOSYS;
	}
	if (r < 0) {
		free(w->io_ring);
		w->io_ring = NULL;
		return -r;
	}
	cl__rt_io_arm_kick(w);
	cl__rt_io_submit(w);
	return 0;
}
#endif

/*
 * cl__rt_io_init() - the fd table and each worker's eventfd and backend.
 * The mode: env CL_RUNTIME_IO=epoll or =io_uring forces one (io_uring
 * that cannot be set up then fails with its errno); else io_uring where
 * io_uring_setup() works (not under valgrind, which does not follow the
 * kernel's writes to a ring's buffers), epoll otherwise.
 * Return: 0, or an errno.
 */
CL_INLINE int cl__rt_io_init(struct cl_runtime *rt)
{
	const char *env = getenv("CL_RUNTIME_IO");
	int want = 0;

	if (env && !strcmp(env, "epoll"))
		want = CL__RT_IO_EPOLL;
	else if (env && !strcmp(env, "io_uring"))
		want = CL__RT_IO_URING;
	rt->io_buckets = (struct cl__rt_iobucket *)aligned_alloc(CL_CACHELINE_SIZE,
								 CL__RT_IO_BUCKETS * sizeof(struct cl__rt_iobucket));
	if (!rt->io_buckets)
		return ENOMEM;
	for (unsigned int i = 0; i < CL__RT_IO_BUCKETS; i++) {
		cl_ticket_init(&rt->io_buckets[i].lock);
		CDS_INIT_LIST_HEAD(&rt->io_buckets[i].waiters);
	}
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		rt->workers[i].io_epfd = rt->workers[i].io_evfd = -1;
	for (unsigned int i = 0; i < rt->nr_workers; i++) {
		rt->workers[i].io_evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rt->workers[i].io_evfd < 0)
			return errno;
	}
	rt->io_mode = CL__RT_IO_EPOLL;
#ifdef CL__RT_HAVE_URING
#ifdef CL__RT_VALGRIND
	if (!want && RUNNING_ON_VALGRIND)
		want = CL__RT_IO_EPOLL;
#endif
	if (want != CL__RT_IO_EPOLL) {
		int e = 0;

		rt->io_mode = CL__RT_IO_URING;
		for (unsigned int i = 0; i < rt->nr_workers && !e; i++)
			e = cl__rt_io_ring_init(&rt->workers[i]);
		if (e) {
			for (unsigned int i = 0; i < rt->nr_workers; i++)
				if (rt->workers[i].io_ring) {
					io_uring_queue_exit(rt->workers[i].io_ring);
					free(rt->workers[i].io_ring);
					rt->workers[i].io_ring = NULL;
				}
			if (want == CL__RT_IO_URING)
				return e;
			rt->io_mode = CL__RT_IO_EPOLL;
		}
	}
#else
	if (want == CL__RT_IO_URING)
		return ENOSYS;
#endif
	if (rt->io_mode == CL__RT_IO_EPOLL) {
		for (unsigned int i = 0; i < rt->nr_workers; i++) {
			struct cl__rt_worker *w = &rt->workers[i];
			struct epoll_event ev;

			w->io_epfd = epoll_create1(EPOLL_CLOEXEC);
			if (w->io_epfd < 0)
				return errno;
			memset(&ev, 0, sizeof(ev));
			ev.events = EPOLLIN;
			ev.data.u64 = CL__RT_IO_EP_KICK;
			if (epoll_ctl(w->io_epfd, EPOLL_CTL_ADD, w->io_evfd, &ev) != 0)
				return errno;
		}
	}
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_IOPOLL_H */
