/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/chan.h - the bounded channel of the M:N
 * runtime, with and without a timeout. It follows the pattern and the
 * synchronization table of sync.h: a waiter's record goes on the
 * channel's list under the channel's lock, which it keeps until its
 * context is saved; a waker takes a record off under that lock, writes
 * its result (the message, for a receiver) and wakes its task. A record
 * of a cl_select() (select.h) on the list is the waker's only once it
 * claimed the select for it (cl__chan_waiter_pop()).
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_CHAN_H
#define CACHELOCAL_SCHED_RUNTIME_CHAN_H

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
 * A select's case record @wt (status CL__RT_WAIT_SELECT), just taken off
 * a channel's list under the channel's lock: claim its select (types.h,
 * struct cl__rt_select) for it. The first claim wins the CAS of the
 * select's state; the winner then takes the select's gate, which the
 * select's task holds until its switch away completed and its timer holds
 * while it decides, and the select is its own if the task's record is
 * still pending (the timer takes it off otherwise: timer.h), as a waker
 * takes a timed waiter's. Lock order: the channel's lock, then the gate.
 * Return: 1 won (the caller completes the case and wakes @wt as any
 * record); 0 another case or the timer ended the select (@wt dropped,
 * status -1: its task, which removes its records under each channel's
 * lock, finds it off the list).
 */
CL_INLINE int cl__chan_sel_claim(struct cl__rt_waiter *wt)
{
	struct cl__rt_select *sel = cl_container_of(wt - wt->aff_vote, struct cl__rt_select, rec);
	struct cl__rt_waiter *own = &wt->t->wait;
	int idle = CL__RT_SEL_WAITING, won = 0;

	if (CL_ATOMIC_CAS(&sel->state, &idle, (int)wt->aff_vote, CL_RELAXED, CL_RELAXED)) {
		cl_ticket_lock(&sel->gate);
		if (own->status == CL__RT_WAIT_PENDING) {
			cds_list_del(&own->node);
			own->status = 0;
			won = 1;
		}
		(void)cl_ticket_unlock(&sel->gate);
	}
	if (!won)
		wt->status = -1;
	return won;
}

/* Take the first record off a channel's @list (its lock held) that a
 * wakeup may complete, or NULL: a select's record counts once its select
 * is claimed for it (cl__chan_sel_claim()); one whose select ended
 * otherwise is dropped. */
CL_ALWAYS_INLINE struct cl__rt_waiter *cl__chan_waiter_pop(struct cds_list_head *list)
{
	struct cl__rt_waiter *wt;

	while ((wt = cl__rt_waiter_pop(list)) != NULL && CL_UNLIKELY(wt->status == CL__RT_WAIT_SELECT))
		if (cl__chan_sel_claim(wt))
			break;
	return wt;
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

/*
 * Send without blocking, @c locked and open: 1 sent, into the ring or to
 * the receiver *@wtp (taken off recvq, its status written: wake it after
 * the unlock; NULL: none); 0 full.
 */
CL_ALWAYS_INLINE int cl__chan_put_locked(struct cl_chan *c, const void *msg, struct cl__rt_waiter **wtp)
{
	struct cl__rt_waiter *wt = cl__chan_waiter_pop(&c->recvq);

	*wtp = wt;
	if (wt) {
		cl__chan_copy(cl__chan_inline(c) ? (void *)wt->msg : wt->data, msg, c->esize);
		wt->status = 0;
		return 1;
	}
	if (c->count < c->cap) {
		cl__chan_push(c, msg);
		return 1;
	}
	return 0;
}

/*
 * Receive without blocking, @c locked: 1 received into @out, from the
 * ring (refilled from the sender *@wtp, if one waits) or from the sender
 * *@wtp (taken off sendq, its status written: wake it after the unlock;
 * NULL: none); 0 empty.
 */
CL_INLINE int cl__chan_take_locked(struct cl_chan *c, void *out, struct cl__rt_waiter **wtp)
{
	struct cl__rt_waiter *wt;

	if (c->count) {
		cl__chan_pop(c, out);
		wt = cl__chan_waiter_pop(&c->sendq);
		if (wt)
			cl__chan_push(c, cl__chan_inline(c) ? (const void *)wt->msg : wt->data);
	} else {
		wt = cl__chan_waiter_pop(&c->sendq);
		if (!wt)
			return 0;
		cl__chan_copy(out, cl__chan_inline(c) ? (const void *)wt->msg : wt->data, c->esize);
	}
	*wtp = wt;
	if (wt)
		wt->status = 0;
	return 1;
}

/* Unlock @c (locked by @self) and wake @wt if there is one. */
CL_ALWAYS_INLINE void cl__chan_unlock_wake_if(struct cl_chan *c, struct cl_rt_task *self,
					      struct cl__rt_waiter *wt)
{
	if (wt)
		cl__chan_unlock_wake(c, self, wt);
	else
		cl__rt_unlock_as(self, &c->lock);
}

/* Try to send without blocking (lock held by @self, open). 1 sent (unlocked), 0 full; wakes a receiver. */
CL_ALWAYS_INLINE int cl__chan_send_locked(struct cl_chan *c, const void *msg,
					   struct cl_rt_task *self)
{
	struct cl__rt_waiter *wt;

	if (!cl__chan_put_locked(c, msg, &wt))
		return 0;
	cl__chan_unlock_wake_if(c, self, wt);
	return 1;
}

/* Try to receive without blocking (lock held by @self). 1 received (unlocked), 0 empty; refills from a sender. */
CL_INLINE int cl__chan_recv_locked(struct cl_chan *c, void *out, struct cl_rt_task *self)
{
	struct cl__rt_waiter *wt;

	if (!cl__chan_take_locked(c, out, &wt))
		return 0;
	cl__chan_unlock_wake_if(c, self, wt);
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
 * no receiver waiting (cl_chan_close() wakes them all); the receivers
 * waiting may all be selects that ended otherwise, and the ring have
 * room. @deadline: see cl__rt_wait_rec_dl(). */
CL_INLINE int cl__chan_send_slow(struct cl_chan *c, const void *msg,
				     struct cl_rt_task *self, uint64_t deadline)
{
	int st;

	if (!c->closed && cl__chan_send_locked(c, msg, self))
		return 0;
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
	st = cl__rt_wait_rec_dl(self, &c->sendq, &c->lock, deadline);
	return st ? cl__rt_wait_fail(st, EPIPE) : 0;
}

/* cl_chan_send() until @deadline (cl__rt_wait_rec_dl(); 0: none). */
CL_ALWAYS_INLINE int cl__chan_send_dl(struct cl_chan *c, const void *msg, uint64_t deadline)
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
	return cl__chan_send_slow(c, msg, self, deadline);
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
	return cl__chan_send_dl(c, msg, 0);
}

/* cl_chan_recv() past its fast path: @c locked by @self (NULL outside
 * tasks), empty or with a sender waiting. @deadline: see
 * cl__rt_wait_rec_dl(). */
CL_INLINE int cl__chan_recv_slow(struct cl_chan *c, void *out,
				     struct cl_rt_task *self, uint64_t deadline)
{
	size_t esize;
	int st;

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
	st = cl__rt_wait_rec_dl(self, &c->recvq, &c->lock, deadline);
	if (st)
		return cl__rt_wait_fail(st, EPIPE);
	if (esize)
		cl__chan_copy(out, self->wait.msg, esize);
	return 0;
}

/* cl_chan_recv() until @deadline (cl__rt_wait_rec_dl(); 0: none). */
CL_ALWAYS_INLINE int cl__chan_recv_dl(struct cl_chan *c, void *out, uint64_t deadline)
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
	return cl__chan_recv_slow(c, out, self, deadline);
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
	return cl__chan_recv_dl(c, out, 0);
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

/* Take every record off @from (a channel's list, its lock held) that
 * the close completes, onto @to with status -1 (failed: EPIPE); a
 * select's only if the close claims its select (cl__chan_waiter_pop()). */
CL_INLINE void cl__chan_fail_all(struct cds_list_head *from, struct cds_list_head *to)
{
	struct cl__rt_waiter *wt;

	while ((wt = cl__chan_waiter_pop(from)) != NULL) {
		wt->status = -1;
		cds_list_add_tail(&wt->node, to);
	}
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
	cl__chan_fail_all(&c->recvq, &list);
	cl__chan_fail_all(&c->sendq, &list);
	cl__rt_unlock(&c->lock);
	while (!cds_list_empty(&list))
		cl__rt_wake_rec(cl__rt_waiter_pop(&list));
	return 0;
}

/* ---- with a timeout ---- */

/**
 * cl_chan_send_timeout() - cl_chan_send(), waiting at most @timeout_ns
 * while @c is full.
 * @c: the channel.
 * @msg: the message (esize bytes).
 * @timeout_ns: how long at most to wait (relative, ns).
 *
 * A receive racing the timeout takes the message exactly once: either
 * this returns 0 (the message is in the channel or was received), or it
 * times out and the message was not sent.
 *
 * Context: a runtime task (any thread if @c has room).
 * Return: 0, or -1 with errno ETIMEDOUT (not sent), EINVAL, EPIPE
 * (closed), EPERM (full, and the caller is not a task).
 */
CL_INLINE int cl_chan_send_timeout(struct cl_chan *c, const void *msg, uint64_t timeout_ns)
{
	return cl__chan_send_dl(c, msg, cl__rt_deadline(timeout_ns));
}

/**
 * cl_chan_recv_timeout() - cl_chan_recv(), waiting at most @timeout_ns
 * while @c is empty.
 * @c: the channel.
 * @out: where the message goes (esize bytes).
 * @timeout_ns: how long at most to wait (relative, ns).
 *
 * A send racing the timeout is delivered exactly once: either this
 * returns 0 with the message, or it times out and the message went to
 * another receiver or stays in the channel. Never lost, never twice.
 *
 * Context: a runtime task (any thread if @c has a message).
 * Return: 0, or -1 with errno ETIMEDOUT (nothing received; @out
 * untouched), EINVAL, EPIPE (closed and empty), EPERM (empty, and the
 * caller is not a task).
 */
CL_INLINE int cl_chan_recv_timeout(struct cl_chan *c, void *out, uint64_t timeout_ns)
{
	return cl__chan_recv_dl(c, out, cl__rt_deadline(timeout_ns));
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_CHAN_H */
