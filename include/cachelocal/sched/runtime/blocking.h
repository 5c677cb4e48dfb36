/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/blocking.h - cl_blocking(): a call that must
 * block its thread (getaddrinfo(), fsync(), a library that waits) runs on
 * one of a few helper threads while the calling task is parked and its
 * worker runs other tasks (what Go's entersyscall/handoff gives a blocking
 * system call, with a bounded pool instead of a thread per call).
 *
 * The hand-off is a wait record on the call's own list: the task enlists
 * its record and blocks under the call's lock; the helper that ran the
 * call takes the record off under that lock and, after the unlock, wakes
 * it: the task cannot return before that wake, and the helper touches
 * nothing of the call (on the task's stack) after it.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_BLOCKING_H
#define CACHELOCAL_SCHED_RUNTIME_BLOCKING_H

CL_BEGIN_DECLS

/* One cl_blocking() call, on the calling task's stack. */
struct cl__rt_bcall {
	long (*fn)(void *);
	void *arg;
	long ret;
	int err;                  /* the helper's errno after fn */
	struct cl_ticketlock lock; /* the waiter list's */
	struct cds_list_head waiter; /* the calling task's record */
	struct cds_list_head node;   /* on the pool's queue */
};

/* The helper threads of one runtime (rt->bpool, made at the first call). */
struct cl__rt_bpool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cds_list_head queue; /* calls not yet taken, oldest first */
	unsigned int nr_threads;    /* started (at most CL_RUNTIME_BLOCKING_THREADS) */
	unsigned int nr_idle;       /* waiting on cond */
	int stop;
	pthread_t threads[CL_RUNTIME_BLOCKING_THREADS];
};

/* Finish @c: take its task's record off under its lock, then wake the
 * task (the helper thread). */
CL_INLINE void cl__rt_bcall_finish(struct cl__rt_bcall *c)
{
	struct cl__rt_waiter *wt;

	/* the task enlisted its record before it let go of the lock */
	cl__rt_lock(&c->lock);
	wt = cl__rt_waiter_pop(&c->waiter);
	wt->status = 0;
	cl__rt_unlock(&c->lock);
	/* the wake is the last touch: @c is on the task's stack */
	cl__rt_wake_rec(wt);
}

/* A helper thread: takes queued calls, oldest first, until the pool stops. */
CL_INLINE void *cl__rt_bpool_main(void *arg)
{
	struct cl__rt_bpool *p = (struct cl__rt_bpool *)arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct cl__rt_bcall *c;

		while (cds_list_empty(&p->queue) && !p->stop) {
			p->nr_idle++;
			pthread_cond_wait(&p->cond, &p->lock);
			p->nr_idle--;
		}
		if (cds_list_empty(&p->queue))
			break; /* stopping, nothing left */
		c = cl_container_of(p->queue.next, struct cl__rt_bcall, node);
		cds_list_del(&c->node);
		pthread_mutex_unlock(&p->lock);
		errno = 0;
		c->ret = c->fn(c->arg);
		c->err = errno;
		cl__rt_bcall_finish(c);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* @rt's pool, made on first use (NULL with errno ENOMEM). */
CL_INLINE struct cl__rt_bpool *cl__rt_bpool_get(struct cl_runtime *rt)
{
	struct cl__rt_bpool *p = CL_ATOMIC_LOAD(&rt->bpool, CL_ACQUIRE), *expected = NULL;

	if (p)
		return p;
	p = (struct cl__rt_bpool *)calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	CDS_INIT_LIST_HEAD(&p->queue);
	if (!CL_ATOMIC_CAS(&rt->bpool, &expected, p, CL_ACQ_REL, CL_ACQUIRE)) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
		p = expected;
	}
	return p;
}

/* Queue @c on @p, starting a helper if none is idle and the bound allows
 * (with every signal blocked where the POSIX signal API is declared: the
 * application's signals go to its own threads; else with the caller's
 * mask). The caller is not preemptible (a runtime task holds no pthread
 * mutex across a switch). Return: 0, or -1 with errno from
 * pthread_create() when no helper exists at all. */
CL_INLINE int cl__rt_bpool_queue(struct cl__rt_bpool *p, struct cl__rt_bcall *c)
{
	int ret = 0;

	pthread_mutex_lock(&p->lock);
	if (!p->nr_idle && p->nr_threads < CL_RUNTIME_BLOCKING_THREADS) {
		int e;
#ifdef __USE_POSIX199506 /* the POSIX signal API (_DEFAULT_SOURCE; not strict C11) */
		sigset_t all, old;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
#endif
		e = pthread_create(&p->threads[p->nr_threads], NULL, cl__rt_bpool_main, p);
#ifdef __USE_POSIX199506
		pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
		if (!e)
			p->nr_threads++;
		else if (!p->nr_threads) {
			errno = e;
			ret = -1;
		}
		/* else: the call waits for a started helper */
	}
	if (!ret) {
		cds_list_add_tail(&c->node, &p->queue);
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/* Stop and join @rt's helpers, free the pool (no call in flight: every
 * task has returned). */
CL_INLINE void cl__rt_bpool_stop(struct cl_runtime *rt)
{
	struct cl__rt_bpool *p = rt->bpool;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned int i = 0; i < p->nr_threads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
	rt->bpool = NULL;
}

/**
 * cl_blocking() - run a call that blocks its thread without blocking the
 * worker.
 * @fn: the call; its return value is returned, and the errno it leaves is
 *      the caller's errno on return.
 * @arg: its argument.
 *
 * In a task, @fn runs on one of the runtime's helper threads while the
 * task is parked: the worker runs other tasks meanwhile and the task
 * resumes on it (or wherever the balancer moved it) when @fn returns. At
 * most CL_RUNTIME_BLOCKING_THREADS helpers (8 unless defined before the
 * include) are started, on demand, and stay until cl_runtime_destroy();
 * calls beyond them wait in order for a free helper, so @fn must not wait
 * for another cl_blocking() call to end (with every helper busy that wait
 * never ends). @fn runs on a plain thread: it must not call the runtime's
 * task API (cl_yield(), a channel, ...). cl_runtime_shutdown() waits for
 * a task in cl_blocking() as for a running one (it never reports it as
 * blocked). Outside a task, @fn is just called.
 *
 * Context: any thread; in a task, no spinlock held.
 * Return: what @fn returned, or -1 with errno EINVAL (NULL @fn), ENOMEM or
 * EAGAIN (no helper thread could be made; @fn was not called).
 */
CL_INLINE long cl_blocking(long (*fn)(void *), void *arg)
{
	struct cl_rt_task *self;
	struct cl__rt_bpool *p;
	struct cl__rt_bcall c;

	if (CL__BAD_ARG(fn == NULL))
		return -1;
	self = cl__rt_current();
	if (!self)
		return fn(arg);
	p = cl__rt_bpool_get(self->rt);
	if (!p)
		return -1;
	c.fn = fn;
	c.arg = arg;
	c.ret = -1;
	c.err = 0;
	cl_ticket_init(&c.lock);
	CDS_INIT_LIST_HEAD(&c.waiter);
	/* counted before the call can end: shutdown sees it as busy throughout */
	(void)CL_ATOMIC_FETCH_ADD(&self->rt->nr_blocking, 1, CL_SEQ_CST);
	cl__rt_lock(&c.lock); /* not preemptible from here to the block */
	if (cl__rt_bpool_queue(p, &c) != 0) {
		int e = errno;

		cl__rt_unlock(&c.lock);
		(void)CL_ATOMIC_FETCH_SUB(&self->rt->nr_blocking, 1, CL_SEQ_CST);
		errno = e;
		return -1;
	}
	CL_INJECT(90); /* queued: a helper may run the call, and waits for the lock to finish it */
	self->wait.data = NULL;
	(void)cl__rt_wait_rec(self, &c.waiter, &c.lock); /* the lock released after the switch */
	(void)CL_ATOMIC_FETCH_SUB(&self->rt->nr_blocking, 1, CL_SEQ_CST);
	errno = c.err;
	return c.ret;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_BLOCKING_H */
