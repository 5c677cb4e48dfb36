/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/select.h - cl_select(): wait on several
 * channel operations at once, with a timeout or none (Go's select, its
 * default case included).
 *
 * The wake-to-run protocol with one record per case. The task locks every
 * channel of its cases (each once, in address order), polls the cases in
 * a random order and completes the first that can complete; if none can,
 * it puts one record per case on its channel's list (struct cl__rt_select,
 * types.h, on its stack), its own record (wait) on the select's list with
 * the status "pending", takes the select's gate, arms its timer (the gate
 * is the timed wait's lock), releases the channels and blocks, the gate
 * released after its switch away. A waker that takes a case's record off
 * a list claims the select (cl__chan_sel_claim(), chan.h): one CAS of its
 * state decides among the wakers, the gate against the timer; a record
 * whose select ended otherwise is dropped, and the waker goes on to the
 * next waiter or to the ring, so a message is never lost or moved twice.
 * Woken, the task disarms its timer (if the timer did not end the wait)
 * and takes its records still on a list off under each channel's lock:
 * a waker touches the select only under one of those locks, so none
 * does after that.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SELECT_H
#define CACHELOCAL_SCHED_RUNTIME_SELECT_H

CL_BEGIN_DECLS

/* struct cl_select_case.op */
#define CL_SELECT_SEND 1
#define CL_SELECT_RECV 2

/* cl_select()'s timeout_ns: wait until a case completes ... */
#define CL_SELECT_FOREVER CL_FOREVER
/* ... or not at all (Go's default case): -1/EAGAIN if none can complete now. */
#define CL_SELECT_NOWAIT 0

/*
 * struct cl_select_case - one operation of a cl_select().
 * @chan: the channel.
 * @op: CL_SELECT_SEND or CL_SELECT_RECV.
 * @msg: SEND: the message (esize bytes, copied if it is sent); RECV: where
 *       the message goes (esize bytes; written only if this case completes
 *       with a message).
 * @err: written when this case completes: 0, or EPIPE (the channel is
 *       closed: a send was not sent, a receive found it closed and empty).
 */
struct cl_select_case {
	struct cl_chan *chan;
	int op;
	void *msg;
	int err;
};

/* This thread's state of the cases' shuffle (xorshift64): a worker's for
 * its tasks, a thread's own outside them; 0 until first used. */
CL_WEAK __thread uint64_t cl__sel_seed;

/*
 * A random number below @n (1..CL_SELECT_MAX). Through a call the
 * compiler cannot see through (as cl__rt_current()): the TLS address is
 * computed afresh, never kept across a switch. Context: a task
 * non-preemptible (it reads and writes its worker thread's state with no
 * switch between), or a thread outside tasks.
 */
CL_NOINLINE CL_UNUSED static unsigned int cl__sel_rand(unsigned int n)
{
	uint64_t x = cl__sel_seed;

	if (CL_UNLIKELY(!x))
		x = ((uint64_t)(uintptr_t)&cl__sel_seed ^ (uint64_t)cl__now_ns()) | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	cl__sel_seed = x;
	return (unsigned int)(((x >> 32) * n) >> 32);
}

/* Are @cases (@n of them) a select's? Else errno EINVAL. */
CL_INLINE int cl__sel_valid(const struct cl_select_case *cases, unsigned int n)
{
	if (!cases || n == 0 || n > CL_SELECT_MAX)
		goto bad;
	for (unsigned int i = 0; i < n; i++)
		if (!cases[i].chan || !cases[i].msg ||
		    (cases[i].op != CL_SELECT_SEND && cases[i].op != CL_SELECT_RECV))
			goto bad;
	return 1;
bad:
	errno = EINVAL;
	return 0;
}

/*
 * The order in which the cases are polled, in @order: a random
 * permutation (Fisher-Yates), so that each of several cases that can
 * complete is taken as often (a random start alone favours the case after
 * a run of cases that cannot). The order in which their channels are
 * locked, in @locks: each channel once (its first case), by address (every
 * select locks in that order: none waits for a lock another holds while it
 * holds one that one waits for). Returns the number of channels.
 */
CL_INLINE unsigned int cl__sel_orders(const struct cl_select_case *cases, unsigned int n,
				      unsigned char *order, unsigned char *locks)
{
	unsigned int nl = 0;

	for (unsigned int i = 0; i < n; i++) {
		unsigned int j = cl__sel_rand(i + 1), k;
		uintptr_t a = (uintptr_t)cases[i].chan;

		order[i] = j < i ? order[j] : 0; /* (0: overwritten next) */
		order[j] = (unsigned char)i;
		for (k = nl; k > 0 && (uintptr_t)cases[locks[k - 1]].chan > a; k--)
			;
		if (k > 0 && cases[locks[k - 1]].chan == cases[i].chan)
			continue; /* locked for an earlier case */
		memmove(locks + k + 1, locks + k, nl - k);
		locks[k] = (unsigned char)i;
		nl++;
	}
	return nl;
}

/* Lock (@lock nonzero) or unlock the @nl channels of @locks. The caller
 * holds one non-preemptible count for all of them. */
CL_INLINE void cl__sel_lock_all(const struct cl_select_case *cases, const unsigned char *locks,
				unsigned int nl, int lock)
{
	for (unsigned int i = 0; i < nl; i++) {
		if (lock)
			cl_ticket_lock(&cases[locks[i]].chan->lock);
		else
			(void)cl_ticket_unlock(&cases[locks[i]].chan->lock);
	}
}

/*
 * Complete case @k now if it can (its channel locked): 1 done (@k->err
 * written; *@wtp a waiter to wake after the unlocks, or left as it was),
 * 0 it would wait. A closed channel completes a send, and a receive once
 * its ring is empty, with EPIPE.
 */
CL_INLINE int cl__sel_try(struct cl_select_case *k, struct cl__rt_waiter **wtp)
{
	struct cl_chan *c = k->chan;
	struct cl__rt_waiter *wt = NULL;

	if (k->op == CL_SELECT_SEND) {
		if (c->closed) {
			k->err = EPIPE;
			return 1;
		}
		if (!cl__chan_put_locked(c, k->msg, &wt))
			return 0;
	} else if (!cl__chan_take_locked(c, k->msg, &wt)) {
		if (!c->closed)
			return 0;
		k->err = EPIPE;
		return 1;
	}
	k->err = 0;
	if (wt)
		*wtp = wt;
	return 1;
}

/* Put case @i's record on its channel's list (locked) for @self. */
CL_INLINE void cl__sel_enlist(struct cl__rt_select *sel, struct cl_rt_task *self,
			      const struct cl_select_case *k, unsigned int i)
{
	struct cl__rt_waiter *wt = &sel->rec[i];
	struct cl_chan *c = k->chan;

	wt->t = self;
	CL_WRITE_ONCE(wt->w, self->w);
	wt->status = CL__RT_WAIT_SELECT;
	wt->aff_flips = -1; /* woken where it blocked: no move, no vote */
	wt->aff_vote = (uint16_t)i;
	CL_ATOMIC_STORE(&wt->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	if (k->op == CL_SELECT_RECV) {
		wt->data = k->msg;
		cds_list_add_tail(&wt->node, &c->recvq);
	} else {
		if (cl__chan_inline(c))
			cl__chan_copy(wt->msg, k->msg, c->esize);
		else
			wt->data = k->msg;
		cds_list_add_tail(&wt->node, &c->sendq);
	}
}

/*
 * cl_select() past its poll: none of the cases can complete, @self holds
 * the @nl channels of @locks and one non-preemptible count. Wait until a
 * waker claims the select for a case or @deadline (0: none) passes. Its
 * records are on the stack: CL_SELECT_MAX of them, 2 KiB.
 */
CL_INLINE int cl__sel_block(struct cl_rt_task *self, struct cl_select_case *cases, unsigned int n,
			    const unsigned char *locks, unsigned int nl, uint64_t deadline)
{
	struct cl__rt_select sel;
	struct cl__rt_waiter *own = &self->wait, *wt;
	int st, i;

	CL_ATOMIC_STORE(&sel.state, CL__RT_SEL_WAITING, CL_RELAXED);
	cl_ticket_init(&sel.gate);
	CDS_INIT_LIST_HEAD(&sel.timeq);
	for (unsigned int j = 0; j < n; j++)
		cl__sel_enlist(&sel, self, &cases[j], j);
	/* its own record: what the timer and the winner decide on; never
	 * watched (it is woken through a case's record) */
	own->t = self;
	CL_WRITE_ONCE(own->w, self->w);
	own->status = CL__RT_WAIT_PENDING;
	own->aff_flips = -1;
	CL_ATOMIC_STORE(&own->watch, CL__RT_WATCH_NONE, CL_RELAXED);
	cds_list_add_tail(&own->node, &sel.timeq);
	self->w->watch_cand = NULL;
	cl_ticket_lock(&sel.gate);
	if (deadline)
		cl__rt_timer_arm(self->w, self, deadline, &sel.gate);
	cl__sel_lock_all(cases, locks, nl, 0);
	cl__rt_block(self, &sel.gate);

	st = own->status;
	if (deadline && st != CL__RT_WAIT_TIMEDOUT)
		cl__rt_timer_disarm(self);
	/* the records still on a list: off, under their channel's lock */
	for (unsigned int j = 0; j < nl; j++) {
		struct cl_chan *c = cases[locks[j]].chan;

		cl__rt_lock_as(self, &c->lock);
		for (unsigned int k = locks[j]; k < n; k++)
			if (cases[k].chan == c && sel.rec[k].status == CL__RT_WAIT_SELECT)
				cds_list_del(&sel.rec[k].node);
		cl__rt_unlock_as(self, &c->lock);
	}
	if (st == CL__RT_WAIT_TIMEDOUT) {
		cl__rt_set_errno(ETIMEDOUT);
		return -1;
	}
	i = CL_ATOMIC_LOAD(&sel.state, CL_RELAXED); /* written before the wakeup */
	wt = &sel.rec[i];
	if (wt->status) {
		cases[i].err = EPIPE; /* closed while it waited */
	} else {
		cases[i].err = 0;
		if (cases[i].op == CL_SELECT_RECV && cl__chan_inline(cases[i].chan))
			cl__chan_copy(cases[i].msg, wt->msg, cases[i].chan->esize);
	}
	return i;
}

/**
 * cl_select() - complete one of several channel operations, waiting until
 * one can complete (Go's select).
 * @cases: the operations, @n of them: sends and receives on any channels
 *         (a channel may appear in several cases).
 * @n: 1..CL_SELECT_MAX.
 * @timeout_ns: how long at most to wait (relative, ns);
 *              CL_SELECT_FOREVER: no limit; CL_SELECT_NOWAIT (0): none
 *              (Go's default case).
 *
 * Exactly one case completes, or none: a send's message is in the
 * channel or with a receiver, a receive's message in its @msg, and no
 * other case moved anything. Among the cases that can complete at once,
 * each is picked as often (they are polled in a random order, per call).
 * A case on a closed channel completes with its @err EPIPE: a send at
 * once (not sent, as cl_chan_send()), a receive once the channel is empty;
 * a close while the select waits completes the case it wakes so. A send
 * racing the timeout is delivered exactly once: either the select returns
 * its case with the message, or it times out and the message went to
 * another receiver or stays in the channel. Outside a task, a case that
 * can complete at once completes; otherwise it does not wait (EPERM).
 *
 * Context: any thread (waits only in a runtime task); no spinlock held.
 * Return: the index of the case that completed (its @err: 0 or EPIPE), or
 * -1 with errno EINVAL (@cases NULL, @n 0 or above CL_SELECT_MAX, a case
 * with a NULL @chan or @msg or a bad @op), EAGAIN (CL_SELECT_NOWAIT and
 * none can complete now), ETIMEDOUT (none completed in @timeout_ns),
 * EPERM (none can complete now and the caller is not a task).
 */
CL_INLINE int cl_select(struct cl_select_case *cases, unsigned int n, uint64_t timeout_ns)
{
	unsigned char order[CL_SELECT_MAX], locks[CL_SELECT_MAX];
	struct cl__rt_waiter *wt = NULL;
	struct cl_rt_task *self;
	uint64_t deadline = 0;
	unsigned int nl, i;

	if (!cl__sel_valid(cases, n))
		return -1;
	if (timeout_ns != CL_SELECT_NOWAIT && timeout_ns != CL_SELECT_FOREVER)
		deadline = cl__rt_deadline(timeout_ns);
	self = cl__rt_np_enter(); /* for the channels' locks, the shuffle, the block */
	nl = cl__sel_orders(cases, n, order, locks);
	cl__sel_lock_all(cases, locks, nl, 1);
	for (i = 0; i < n; i++)
		if (cl__sel_try(&cases[order[i]], &wt))
			break;
	if (i == n && self && timeout_ns != CL_SELECT_NOWAIT)
		return cl__sel_block(self, cases, n, locks, nl, deadline);
	cl__sel_lock_all(cases, locks, nl, 0);
	if (wt)
		cl__rt_wake_rec_as(self, wt);
	cl__rt_np_put(self);
	if (i < n)
		return order[i];
	/* after a possible switch (cl__rt_np_put()): errno afresh */
	cl__rt_set_errno(timeout_ns == CL_SELECT_NOWAIT ? EAGAIN : EPERM);
	return -1;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_SELECT_H */
