/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/waitq.h - the wait queue of the M:N runtime and
 * the waiter-record helpers every blocking primitive of sync.h shares (the
 * pattern and the synchronization table: sync.h). Included by sync.h.
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_WAITQ_H
#define CACHELOCAL_SCHED_RUNTIME_WAITQ_H

#include "core.h"

CL_BEGIN_DECLS

/*
 * Enqueue the current task's waiter record (self->wait, its data already
 * set) on @list and block; @lock is held by the caller and released after
 * the switch. Returns the record's status. A waker wakes it with
 * cl__rt_wake_rec().
 */
CL_INLINE int cl__rt_wait_rec(struct cl_rt_task *self, struct cds_list_head *list,
			      struct cl_ticketlock *lock)
{
	struct cl__rt_waiter *wt = &self->wait;

	wt->t = self;
	wt->w = self->w; /* stays while it waits: the balancer moves queued tasks only */
	wt->status = -1;
	cds_list_add_tail(&wt->node, list);
	cl__rt_block(self, lock);
	return wt->status;
}

/* cl__rt_wait_rec() with the record carrying @data. */
CL_INLINE int cl__rt_wait_on(struct cl_rt_task *self, struct cds_list_head *list,
			     struct cl_ticketlock *lock, void *data)
{
	self->wait.data = data;
	return cl__rt_wait_rec(self, list, lock);
}

/* Take the first waiter record off @list (lock held), or NULL. Its line is
 * taken for writing at once: the waker writes its status (and message). */
CL_INLINE struct cl__rt_waiter *cl__rt_waiter_pop(struct cds_list_head *list)
{
	struct cl__rt_waiter *wt;

	if (cds_list_empty(list))
		return NULL;
	wt = cl_container_of(list->next, struct cl__rt_waiter, node);
	cl__rt_prefetchw(wt);
	cds_list_del(&wt->node);
	return wt;
}

/* cl__rt_wake_rec() - cl__rt_wake() of @wt's task (a cl__rt_wait_rec() record
 * off its list, status written): remote, it writes no line of the wakee but
 * @wt's (worker read there, node linked there). @wt is the wakee's after. */
CL_INLINE void cl__rt_wake_rec(struct cl__rt_waiter *wt)
{
	cl__rt_wake_to(wt->w, wt->t, &wt->rnode);
}

/* cl__rt_wake_rec() by @self, which holds a runtime lock's non-preemptible
 * count (NULL outside tasks): no TLS read, no count of its own. */
CL_ALWAYS_INLINE void cl__rt_wake_rec_as(struct cl_rt_task *self, struct cl__rt_waiter *wt)
{
	cl__rt_wake_from(self, wt->w, wt->t, &wt->rnode);
}

/* Error for a blocking call made outside a task. */
CL_INLINE struct cl_rt_task *cl__rt_need_task(void)
{
	struct cl_rt_task *self = cl__rt_current();

	if (!self)
		errno = EPERM;
	return self;
}

/* ---- wait queue ---- */

/*
 * struct cl_waitq - tasks waiting for an event the caller defines. The
 * condition is checked by the caller under the queue's lock
 * (cl_waitq_lock()), so a wakeup between the check and the sleep cannot be
 * lost: cl_waitq_wait() is called with the lock held.
 */
struct cl_waitq {
	struct cl_ticketlock lock;
	struct cds_list_head waiters;
};

/**
 * cl_waitq_init() - an empty queue.
 * @wq: the queue.
 *
 * Context: before use.
 */
CL_INLINE void cl_waitq_init(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl_ticket_init(&wq->lock);
	CDS_INIT_LIST_HEAD(&wq->waiters);
}

/**
 * cl_waitq_lock() - take @wq's lock (to check the condition).
 * @wq: the queue.
 *
 * Context: any.
 */
CL_INLINE void cl_waitq_lock(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl__rt_lock(&wq->lock);
}

/**
 * cl_waitq_unlock() - release @wq's lock.
 * @wq: the queue.
 *
 * Context: the holder.
 */
CL_INLINE void cl_waitq_unlock(struct cl_waitq *wq)
{
	if (CL__BAD_ARG(wq == NULL))
		return;
	cl__rt_unlock(&wq->lock);
}

/**
 * cl_waitq_wait() - sleep on @wq until woken.
 * @wq: the queue, locked by the caller (who found its condition false).
 *
 * Returns with the lock released (recheck the condition: a broadcast or a
 * wake meant for another condition also wakes).
 *
 * Context: a runtime task holding @wq's lock and no other spinlock.
 * Return: 0, or -1 with errno EPERM outside a task (the lock is then
 * released too).
 */
CL_INLINE int cl_waitq_wait(struct cl_waitq *wq)
{
	struct cl_rt_task *self;

	if (CL__BAD_ARG(wq == NULL))
		return -1;
	self = cl__rt_need_task();
	if (!self) {
		cl__rt_unlock(&wq->lock);
		return -1;
	}
	cl__rt_wait_on(self, &wq->waiters, &wq->lock, NULL);
	return 0;
}

/**
 * cl_waitq_wake_one() - wake the longest waiting task.
 * @wq: the queue (not locked by the caller).
 *
 * Takes the queue's lock, a test-and-set spinlock (not fair): calling this
 * in a tight loop until a task shows up can keep the tasks that want to
 * sleep on @wq from getting that lock for a long time. Wait for a condition
 * the waiters set instead.
 *
 * Context: any thread.
 * Return: 1 if a task was woken, 0 if none waited.
 */
CL_INLINE int cl_waitq_wake_one(struct cl_waitq *wq)
{
	struct cl__rt_waiter *wt;

	if (CL__BAD_ARG(wq == NULL))
		return 0;
	cl__rt_lock(&wq->lock);
	wt = cl__rt_waiter_pop(&wq->waiters);
	if (!wt) {
		cl__rt_unlock(&wq->lock);
		return 0;
	}
	wt->status = 0;
	cl__rt_unlock(&wq->lock);
	cl__rt_wake_rec(wt);
	return 1;
}

/**
 * cl_waitq_wake_all() - wake every waiting task.
 * @wq: the queue (not locked by the caller).
 *
 * Context: any thread.
 * Return: the number woken.
 */
CL_INLINE int cl_waitq_wake_all(struct cl_waitq *wq)
{
	struct cds_list_head list;
	int n = 0;

	if (CL__BAD_ARG(wq == NULL))
		return 0;
	CDS_INIT_LIST_HEAD(&list);
	cl__rt_lock(&wq->lock);
	cds_list_splice(&wq->waiters, &list);
	CDS_INIT_LIST_HEAD(&wq->waiters);
	cl__rt_unlock(&wq->lock);
	while (!cds_list_empty(&list)) {
		struct cl__rt_waiter *wt = cl__rt_waiter_pop(&list);

		wt->status = 0;
		cl__rt_wake_rec(wt);
		n++;
	}
	return n;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_WAITQ_H */
