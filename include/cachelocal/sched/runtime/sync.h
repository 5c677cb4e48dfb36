/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/sync.h - blocking primitives of the M:N runtime:
 * wait queue, bounded channel, mutex, condition variable. Each blocks a
 * task through the runqueue (cl__rt_block()) and wakes it through the
 * worker it blocked on (cl__rt_wake_rec(): docs/runtime.md, wake-to-run).
 *
 * Every primitive follows one pattern (the wake-to-run protocol in
 * <cachelocal/sched/runtime.h>): the waiter checks its condition and puts a
 * waiter record on the object's list under the object's lock, and keeps the
 * lock until its context is saved; the waker takes a record off the list
 * under the same lock, writes the record's result, and then wakes its task.
 * A record on a list is owned by the list; off the list by its waker.
 *
 * Synchronization table:
 *   operation            may run concurrently with        blocks
 *   cl_waitq_wait         any on the same waitq            task only
 *   cl_waitq_wake_*       any                              never
 *   cl_chan_send/recv     any on the same channel          task only (full/empty)
 *   cl_chan_try*          any                              never (any thread)
 *   cl_chan_close         any; wakes every waiter          never (any thread)
 *   cl_mutex_lock         any                              task only
 *   cl_mutex_trylock/unlock any (unlock: the holder only)  never
 *   cl_cond_wait          any                              task only
 *   cl_cond_signal/broadcast any                           never (any thread)
 *   *_destroy             nothing on the same object       never
 * A private piece of sched/runtime/core.h (not API); included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SYNC_H
#define CACHELOCAL_SCHED_RUNTIME_SYNC_H

CL_BEGIN_DECLS

/* ---- bounded channel ---- */

/*
 * struct cl_chan - a FIFO of fixed-size messages with a capacity; a send to
 * a waiting receiver hands the message over directly (no copy through the
 * ring). Receivers and senders wait in FIFO order.
 */
struct cl_chan {
	struct cl_ticketlock lock;
	int closed;
	int small;                       /* esize <= CL__RT_WAITER_MSG (cl__chan_inline()) */
	size_t esize;
	size_t cap;
	size_t head;                     /* index of the oldest message */
	size_t count;
	struct cds_list_head recvq;      /* waiting receivers (record data: where to copy) */
	struct cds_list_head sendq;      /* waiting senders (record data: their message) */
	unsigned char *buf;              /* cap * esize */
	/* the tasks that last received and sent (NULL: a thread outside
	 * tasks), with their worker's chan_key: hints for cl__chan_hint() */
	struct cl_rt_task *rx_last, *tx_last;
	uint64_t rx_key, tx_key;
};

/**
 * cl_chan_create() - a channel of @cap messages of @esize bytes.
 * @esize: message size, 1..65536.
 * @cap: capacity, 1..2^24.
 *
 * Context: any thread.
 * Return: the channel, or NULL with errno EINVAL or ENOMEM.
 */
CL_INLINE struct cl_chan *cl_chan_create(size_t esize, size_t cap)
{
	struct cl_chan *c;

	if (esize == 0 || esize > 65536 || cap == 0 || cap > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	/* on lines of its own: the lock and the receivers' list (what a sender
	 * to a waiting receiver touches) on the first */
	c = (struct cl_chan *)aligned_alloc(CL_CACHELINE_SIZE,
					    (sizeof(*c) + CL_CACHELINE_SIZE - 1) & ~(size_t)(CL_CACHELINE_SIZE - 1));
	if (c) {
		memset(c, 0, sizeof(*c));
		c->buf = (unsigned char *)malloc(esize * cap);
	}
	if (!c || !c->buf) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	cl_ticket_init(&c->lock);
	c->esize = esize;
	c->small = esize <= CL__RT_WAITER_MSG;
	c->cap = cap;
	CDS_INIT_LIST_HEAD(&c->recvq);
	CDS_INIT_LIST_HEAD(&c->sendq);
	return c;
}

/**
 * cl_chan_destroy() - free @c.
 * @c: the channel (NULL: no-op).
 *
 * Context: no task waits on it and no call on it is running.
 * Return: 0, or -1 with errno EBUSY if tasks still wait on it (nothing freed).
 */
CL_INLINE int cl_chan_destroy(struct cl_chan *c)
{
	if (!c)
		return 0;
	if (!cds_list_empty(&c->recvq) || !cds_list_empty(&c->sendq)) {
		errno = EBUSY;
		return -1;
	}
	free(c->buf);
	free(c);
	return 0;
}

/* memcpy() of a message: the common sizes as fixed-size copies (no call).
 * The empty asm hides where @src and @dst point: the compiler would warn
 * about the branch for a size that the caller's object does not have. */
CL_INLINE void cl__chan_copy(void *dst, const void *src, size_t n)
{
	__asm__("" : "+r"(dst), "+r"(src));
	if (n == sizeof(int))
		memcpy(dst, src, sizeof(int));
	else if (n == sizeof(void *))
		memcpy(dst, src, sizeof(void *));
	else
		memcpy(dst, src, n);
}

/* Append @msg to the ring (lock held, count < cap). */
CL_INLINE void cl__chan_push(struct cl_chan *c, const void *msg)
{
	size_t i = c->head + c->count;

	if (i >= c->cap)
		i -= c->cap;
	c->count++;
	cl__chan_copy(c->buf + i * c->esize, msg, c->esize);
}

/* Take the oldest message of the ring into @out (lock held, count > 0). */
CL_INLINE void cl__chan_pop(struct cl_chan *c, void *out)
{
	size_t h = c->head;

	c->head = h + 1 == c->cap ? 0 : h + 1;
	c->count--;
	cl__chan_copy(out, c->buf + h * c->esize, c->esize);
}

/*
 * A message up to CL__RT_WAITER_MSG bytes (@c->small) travels in the
 * waiter record of the blocked side (the one line of it that its waker
 * writes anyway), not through its buffer, which would be one more line to
 * move each way.
 */
CL_INLINE int cl__chan_inline(const struct cl_chan *c)
{
	return c->small;
}

/* Note @self (NULL outside tasks) and its worker as the last to use a
 * channel one way (its lock held). The worker is noted when the task
 * changes: one that moved since is found elsewhere by the switch's test. */
CL_ALWAYS_INLINE void cl__chan_note(struct cl_rt_task **last, uint64_t *key, struct cl_rt_task *self)
{
	if (*last != self) {
		*last = self;
		*key = self ? self->w->chan_key : 0;
	}
}

/*
 * @self is about to block on a channel whose counterpart last was @t (the
 * last receiver of a full channel, the last sender to an empty one), on
 * the worker and runtime @key says: name it for the switch (w->hint, see
 * cl__rt_set_buddy()) if that is @self's worker. Another worker's task
 * is not tested (its lines are that CPU's); the runtime's serial, not its
 * address, tells the instance: a channel may outlive a runtime, and a
 * later one may get its address.
 */
CL_ALWAYS_INLINE void cl__chan_hint(struct cl_rt_task *self, struct cl_rt_task *t, uint64_t key)
{
	if (t && t != self && key == self->w->chan_key)
		self->w->hint = t;
}

/*
 * Release the lock, then wake @wt's task (taken off a list under it,
 * status written) while @self is still non-preemptible: one count for
 * both, one TLS read for the call (@self: the caller's, NULL outside tasks).
 */
CL_ALWAYS_INLINE void cl__chan_unlock_wake(struct cl_chan *c, struct cl_rt_task *self,
					   struct cl__rt_waiter *wt)
{
	(void)cl_ticket_unlock(&c->lock);
	cl__rt_wake_rec_as(self, wt);
	cl__rt_np_put(self);
}

/* Copy @msg to the receiver of @wt (just taken off recvq), unlock, wake it. */
CL_ALWAYS_INLINE void cl__chan_hand_over(struct cl_chan *c, struct cl_rt_task *self,
					 struct cl__rt_waiter *wt, const void *msg)
{
	cl__chan_copy(cl__chan_inline(c) ? (void *)wt->msg : wt->data, msg, c->esize);
	wt->status = 0;
	cl__chan_unlock_wake(c, self, wt);
}

/* Try to send without blocking (lock held by @self). 1 sent, 0 full; wakes a receiver. */
CL_ALWAYS_INLINE int cl__chan_send_locked(struct cl_chan *c, const void *msg,
					   struct cl_rt_task *self)
{
	struct cl__rt_waiter *wt = cl__rt_waiter_pop(&c->recvq);

	if (wt) {
		cl__chan_hand_over(c, self, wt, msg);
		return 1;
	}
	if (c->count < c->cap) {
		cl__chan_push(c, msg);
		cl__rt_unlock_as(self, &c->lock);
		return 1;
	}
	return 0;
}

/* Try to receive without blocking (lock held by @self). 1 received, 0 empty; refills from a sender. */
CL_INLINE int cl__chan_recv_locked(struct cl_chan *c, void *out, struct cl_rt_task *self)
{
	struct cl__rt_waiter *wt;

	if (c->count) {
		cl__chan_pop(c, out);
		wt = cl__rt_waiter_pop(&c->sendq);
		if (!wt) {
			cl__rt_unlock_as(self, &c->lock);
			return 1;
		}
		cl__chan_push(c, cl__chan_inline(c) ? (const void *)wt->msg : wt->data);
	} else {
		wt = cl__rt_waiter_pop(&c->sendq);
		if (!wt)
			return 0;
		cl__chan_copy(out, cl__chan_inline(c) ? (const void *)wt->msg : wt->data, c->esize);
	}
	wt->status = 0;
	cl__chan_unlock_wake(c, self, wt);
	return 1;
}

/*
 * Common start of the sends by @self (cl__rt_current()): 1 sent, -1 error
 * (errno), 0 full with the lock still held.
 */
CL_INLINE int cl__chan_send_try(struct cl_chan *c, const void *msg, struct cl_rt_task *self)
{
	if (!c || !msg) {
		errno = EINVAL;
		return -1;
	}
	cl__rt_lock_as(self, &c->lock);
	if (c->closed) {
		cl__rt_unlock_as(self, &c->lock);
		errno = EPIPE;
		return -1;
	}
	return cl__chan_send_locked(c, msg, self);
}

/* cl_chan_send() past its fast path: @c locked by @self (NULL outside
 * tasks), and a receiver waiting, or closed, or full. A closed channel has
 * no receiver waiting (cl_chan_close() wakes them all). */
CL_INLINE int cl__chan_send_slow(struct cl_chan *c, const void *msg,
				     struct cl_rt_task *self)
{
	struct cl__rt_waiter *wt = cl__rt_waiter_pop(&c->recvq);

	if (wt) {
		cl__chan_hand_over(c, self, wt, msg);
		return 0;
	}
	if (c->closed) {
		cl__rt_unlock_as(self, &c->lock);
		errno = EPIPE;
		return -1;
	}
	if (!self) { /* full */
		(void)cl_ticket_unlock(&c->lock);
		errno = EPERM;
		return -1;
	}
	if (cl__chan_inline(c))
		cl__chan_copy(self->wait.msg, msg, c->esize);
	else
		self->wait.data = (void *)(uintptr_t)msg;
	cl__chan_hint(self, c->rx_last, c->rx_key);
	if (cl__rt_wait_rec(self, &c->sendq, &c->lock) != 0) {
		errno = EPIPE;
		return -1;
	}
	return 0;
}

/**
 * cl_chan_send() - send a copy of @msg (esize bytes), waiting while @c is full.
 * @c: the channel.
 * @msg: the message.
 *
 * A send with room and no receiver waiting is the lock, the copy into the
 * ring and the unlock: no scheduler work (the rest: cl__chan_send_slow()).
 *
 * Context: a runtime task (any thread if @c has room: use cl_chan_trysend()
 * outside tasks).
 * Return: 0, or -1 with errno EINVAL (NULL argument), EPIPE (closed, before
 * or while waiting: the message was not delivered), EPERM (full, and the
 * caller is not a task).
 */
CL_ALWAYS_INLINE int cl_chan_send(struct cl_chan *c, const void *msg)
{
	struct cl_rt_task *self;

	if (!c || !msg) {
		errno = EINVAL;
		return -1;
	}
	self = cl__rt_current();
	cl__rt_prefetch_claimed(self);
	cl__rt_lock_as(self, &c->lock);
	cl__chan_note(&c->tx_last, &c->tx_key, self);
	if (CL_LIKELY(!c->closed && c->count < c->cap && cds_list_empty(&c->recvq))) {
		cl__chan_push(c, msg);
		cl__rt_unlock_as(self, &c->lock);
		return 0;
	}
	return cl__chan_send_slow(c, msg, self);
}

/* cl_chan_recv() past its fast path: @c locked by @self (NULL outside
 * tasks), empty or with a sender waiting. */
CL_INLINE int cl__chan_recv_slow(struct cl_chan *c, void *out,
				     struct cl_rt_task *self)
{
	size_t esize;

	if (cl__chan_recv_locked(c, out, self))
		return 0;
	if (c->closed) {
		cl__rt_unlock_as(self, &c->lock);
		errno = EPIPE;
		return -1;
	}
	if (!self) {
		(void)cl_ticket_unlock(&c->lock);
		errno = EPERM;
		return -1;
	}
	/* read now: the channel's line is the sender's after the wakeup */
	esize = cl__chan_inline(c) ? c->esize : 0;
	self->wait.data = out;
	cl__chan_hint(self, c->tx_last, c->tx_key);
	if (cl__rt_wait_rec(self, &c->recvq, &c->lock) != 0) {
		errno = EPIPE;
		return -1;
	}
	if (esize)
		cl__chan_copy(out, self->wait.msg, esize);
	return 0;
}

/**
 * cl_chan_recv() - receive the oldest message into @out, waiting while @c
 * is empty.
 * @c: the channel.
 * @out: esize bytes.
 *
 * A receive from a non-empty ring with no sender waiting is the lock, the
 * copy out and the unlock (the rest: cl__chan_recv_slow()).
 *
 * Context: a runtime task (see cl_chan_tryrecv() outside tasks).
 * Return: 0, or -1 with errno EINVAL, EPIPE (closed and empty), EPERM
 * (empty, and the caller is not a task).
 */
CL_ALWAYS_INLINE int cl_chan_recv(struct cl_chan *c, void *out)
{
	struct cl_rt_task *self;

	if (!c || !out) {
		errno = EINVAL;
		return -1;
	}
	self = cl__rt_current();
	cl__rt_lock_as(self, &c->lock);
	cl__chan_note(&c->rx_last, &c->rx_key, self);
	if (CL_LIKELY(c->count && cds_list_empty(&c->sendq))) {
		cl__chan_pop(c, out);
		cl__rt_unlock_as(self, &c->lock);
		return 0;
	}
	return cl__chan_recv_slow(c, out, self);
}

/**
 * cl_chan_trysend() - send without waiting.
 * @c: the channel.
 * @msg: the message (esize bytes).
 * Context: any thread.
 * Return: 0, or -1 with errno EAGAIN (full), EPIPE (closed), EINVAL.
 */
CL_INLINE int cl_chan_trysend(struct cl_chan *c, const void *msg)
{
	struct cl_rt_task *self = cl__rt_current();
	int r = cl__chan_send_try(c, msg, self);

	if (r)
		return r > 0 ? 0 : -1;
	cl__rt_unlock_as(self, &c->lock);
	errno = EAGAIN;
	return -1;
}

/**
 * cl_chan_tryrecv() - receive without waiting.
 * @c: the channel.
 * @out: where the message goes (esize bytes).
 * Context: any thread.
 * Return: 0, or -1 with errno EAGAIN (empty), EPIPE (closed and empty), EINVAL.
 */
CL_INLINE int cl_chan_tryrecv(struct cl_chan *c, void *out)
{
	struct cl_rt_task *self;

	if (!c || !out) {
		errno = EINVAL;
		return -1;
	}
	self = cl__rt_current();
	cl__rt_lock_as(self, &c->lock);
	if (cl__chan_recv_locked(c, out, self))
		return 0;
	errno = c->closed ? EPIPE : EAGAIN;
	cl__rt_unlock_as(self, &c->lock);
	return -1;
}

/**
 * cl_chan_close() - no more sends: waiting senders fail with EPIPE;
 * receivers drain what is buffered, then fail with EPIPE.
 * @c: the channel.
 *
 * Context: any thread.
 * Return: 0, or -1 with errno EINVAL (NULL) or EPIPE (already closed).
 */
CL_INLINE int cl_chan_close(struct cl_chan *c)
{
	struct cds_list_head list;

	if (!c) {
		errno = EINVAL;
		return -1;
	}
	CDS_INIT_LIST_HEAD(&list);
	cl__rt_lock(&c->lock);
	if (c->closed) {
		cl__rt_unlock(&c->lock);
		errno = EPIPE;
		return -1;
	}
	c->closed = 1;
	/* receivers wait only while the ring is empty, senders only while it is full */
	cds_list_splice(&c->recvq, &list);
	CDS_INIT_LIST_HEAD(&c->recvq);
	cds_list_splice(&c->sendq, &list);
	CDS_INIT_LIST_HEAD(&c->sendq);
	cl__rt_unlock(&c->lock);
	while (!cds_list_empty(&list)) {
		struct cl__rt_waiter *wt = cl__rt_waiter_pop(&list);

		wt->status = -1;
		cl__rt_wake_rec(wt);
	}
	return 0;
}

/* ---- mutex ---- */

/*
 * struct cl_mutex - a sleeping lock for tasks. state: 0 free, 1 held, 2
 * held and maybe waited for. Uncontended lock and unlock are one atomic
 * each (plus the owner's store and load); a contended unlock hands the
 * lock to the first waiter (FIFO, no barging past a woken waiter). owner:
 * cl__rt_caller_id() of the holder, written only by it (or by the unlocker
 * handing over), so an unlock by anyone else is seen and refused.
 */
struct cl_mutex {
	int state;
	struct cl_ticketlock wait_lock;
	struct cds_list_head waiters;
	const void *owner;
};

#define CL_MUTEX_INIT(m) { 0, CL_TICKETLOCK_INIT, CDS_LIST_HEAD_INIT((m).waiters), NULL }

CL_INLINE void cl__mutex_set_owner(struct cl_mutex *m, const void *who)
{
	CL_ATOMIC_STORE(&m->owner, who, CL_RELAXED);
}

/**
 * cl_mutex_init() - unlocked.
 * @m: the mutex.
 *
 * Context: before use.
 */
CL_INLINE void cl_mutex_init(struct cl_mutex *m)
{
	if (CL__BAD_ARG(m == NULL))
		return;
	m->state = 0;
	cl_ticket_init(&m->wait_lock);
	CDS_INIT_LIST_HEAD(&m->waiters);
	m->owner = NULL;
}

/**
 * cl_mutex_trylock() - take @m if free.
 * @m: the mutex.
 * Context: any thread.
 * Return: 0 if taken, -1 with errno EBUSY if held.
 */
CL_INLINE int cl_mutex_trylock(struct cl_mutex *m)
{
	int z = 0;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_ATOMIC_CAS(&m->state, &z, 1, CL_ACQUIRE, CL_RELAXED)) {
		cl__mutex_set_owner(m, cl__rt_caller_id());
		return 0;
	}
	errno = EBUSY;
	return -1;
}

/**
 * cl_mutex_lock() - take @m, blocking the task while it is held.
 * @m: the mutex.
 *
 * Context: a runtime task (outside a task only cl_mutex_trylock()).
 * Return: 0, or -1 with errno EPERM (held, and the caller is not a task).
 */
CL_INLINE int cl_mutex_lock(struct cl_mutex *m)
{
	struct cl_rt_task *self;
	int z = 0;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_LIKELY(CL_ATOMIC_CAS(&m->state, &z, 1, CL_ACQUIRE, CL_RELAXED))) {
		cl__mutex_set_owner(m, cl__rt_caller_id());
		return 0;
	}
	self = cl__rt_need_task();
	if (!self)
		return -1;
	cl__rt_lock(&m->wait_lock);
	if (CL_ATOMIC_XCHG(&m->state, 2, CL_ACQUIRE) == 0) {
		cl__mutex_set_owner(m, self);
		cl__rt_unlock(&m->wait_lock);
		return 0;
	}
	/* handed over by cl_mutex_unlock() when woken (it set the owner) */
	cl__rt_wait_on(self, &m->waiters, &m->wait_lock, NULL);
	return 0;
}

/**
 * cl_mutex_unlock() - release @m (to the first waiter if any).
 * @m: the mutex, held by the caller.
 *
 * The holder is the task (or, outside tasks, the thread) that took it; the
 * lock stays with it if anyone else calls this.
 *
 * Context: any thread holding it.
 * Return: 0, or -1 with errno EINVAL (NULL @m) or EPERM (@m is not held,
 * or held by another task or thread: nothing changed).
 */
CL_INLINE int cl_mutex_unlock(struct cl_mutex *m)
{
	struct cl__rt_waiter *wt;
	int one = 1;

	if (CL__BAD_ARG(m == NULL))
		return -1;
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&m->owner, CL_RELAXED) != cl__rt_caller_id())) {
		errno = EPERM;
		return -1;
	}
	cl__mutex_set_owner(m, NULL); /* published by the release below */
	if (CL_LIKELY(CL_ATOMIC_CAS(&m->state, &one, 0, CL_RELEASE, CL_RELAXED)))
		return 0;
	cl__rt_lock(&m->wait_lock);
	wt = cl__rt_waiter_pop(&m->waiters);
	if (!wt) {
		CL_ATOMIC_STORE(&m->state, 0, CL_RELEASE);
		cl__rt_unlock(&m->wait_lock);
		return 0;
	}
	/* ownership passes to wt; stay 2 while others wait */
	cl__mutex_set_owner(m, wt->t);
	CL_ATOMIC_STORE(&m->state, cds_list_empty(&m->waiters) ? 1 : 2, CL_RELEASE);
	wt->status = 0;
	cl__rt_unlock(&m->wait_lock);
	cl__rt_wake_rec(wt);
	return 0;
}

/* ---- condition variable ---- */

/* struct cl_cond - tasks waiting for a condition protected by a cl_mutex. */
struct cl_cond {
	struct cl_waitq wq;
};

/**
 * cl_cond_init() - no waiters.
 * @cv: the condition variable.
 *
 * Context: before use.
 */
CL_INLINE void cl_cond_init(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return;
	cl_waitq_init(&cv->wq);
}

/**
 * cl_cond_wait() - release @m, wait for a signal, take @m again.
 * @cv: the condition variable.
 * @m: a mutex the caller holds.
 *
 * The task is on @cv's list before @m is released, so a signal sent by
 * whoever takes @m next is never lost. Spurious returns are allowed: loop
 * on the condition.
 *
 * Context: a runtime task holding @m.
 * Return: 0, or -1 with errno EPERM outside a task or when the caller does
 * not hold @m (@m untouched).
 */
CL_INLINE int cl_cond_wait(struct cl_cond *cv, struct cl_mutex *m)
{
	struct cl_rt_task *self;

	if (CL__BAD_ARG(cv == NULL || m == NULL))
		return -1;
	self = cl__rt_need_task();
	if (!self)
		return -1;
	cl__rt_lock(&cv->wq.lock);
	if (cl_mutex_unlock(m) != 0) {
		cl__rt_unlock(&cv->wq.lock);
		return -1;
	}
	cl__rt_wait_on(self, &cv->wq.waiters, &cv->wq.lock, NULL);
	return cl_mutex_lock(m);
}

/**
 * cl_cond_signal() - wake one waiter.
 * @cv: the condition variable.
 * Context: any thread (holding the mutex or not).
 * Return: 1 if one was woken, 0 if none waited.
 */
CL_INLINE int cl_cond_signal(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return 0;
	return cl_waitq_wake_one(&cv->wq);
}

/**
 * cl_cond_broadcast() - wake every waiter.
 * @cv: the condition variable.
 * Context: any thread.
 * Return: the number woken.
 */
CL_INLINE int cl_cond_broadcast(struct cl_cond *cv)
{
	if (CL__BAD_ARG(cv == NULL))
		return 0;
	return cl_waitq_wake_all(&cv->wq);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SYNC_H */
