/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/task.h - the task API.
 *
 * The task API: cl_spawn() with the spawn-versus-shutdown admission
 * protocol, cl_self(), cl_worker_id(), cl_yield(), cl_join(),
 * cl_join_timeout(), cl_preempt_disable()/cl_preempt_enable().
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_TASK_H
#define CACHELOCAL_SCHED_RUNTIME_TASK_H

CL_BEGIN_DECLS

/* ---- tasks ---- */

/*
 * Spawns from outside the runtime's tasks race cl_runtime_shutdown(): a
 * spawn counts itself in `spawning` before it looks at `closing`, and
 * shutdown sets `closing` before it reads `spawning` (then `live`), all
 * sequentially consistent. So either the spawn sees `closing` (EPIPE), or
 * shutdown sees it in flight and waits until it is queued and counted
 * live: no task is lost, and a task not yet queued is never taken for a
 * blocked one (EDEADLK). A spawn from inside a task needs none of this:
 * its caller is live, so shutdown cannot be past waiting for tasks.
 */
CL_INLINE int cl__rt_spawn_admit(struct cl_runtime *rt)
{
	CL_ATOMIC_FETCH_ADD(&rt->spawning, 1, CL_SEQ_CST);
	if (CL_LIKELY(!CL_ATOMIC_LOAD(&rt->closing, CL_SEQ_CST)))
		return 0;
	CL_ATOMIC_FETCH_SUB(&rt->spawning, 1, CL_SEQ_CST);
	cl__rt_poke_shutdown(rt);
	errno = EPIPE;
	return -1;
}

CL_INLINE void cl__rt_spawn_done(struct cl_runtime *rt)
{
	CL_ATOMIC_FETCH_SUB(&rt->spawning, 1, CL_SEQ_CST);
	cl__rt_poke_shutdown(rt);
}

/* A spawn failed after its admission: undo it, set errno to @err. */
CL_INLINE struct cl_rt_task *cl__rt_spawn_fail(struct cl_runtime *rt, struct cl__rt_worker *cur, int err)
{
	if (!cur)
		cl__rt_spawn_done(rt);
	errno = err;
	return NULL;
}

/*
 * An exiting @t wakes its joiners on its own worker before it switches
 * away, so that its switch can run one of them (the buddy). Safe before
 * the switch: a local wakee runs only after this worker switched away from
 * @t (its stack is then free), and the descriptor stays until the exit
 * path (cl__rt_finish()) drops its reference. Joiners on other workers,
 * and any that come later, are woken by that exit path, which also sets
 * `exited`.
 */
CL_INLINE void cl__rt_exit_wake_local(struct cl_rt_task *t)
{
	struct cds_list_head *pos, *n;
	struct cl__rt_worker *w = t->w;

	cl_ticket_lock(&t->join_lock);
	cds_list_for_each_safe(pos, n, &t->join_waiters) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		struct cl_rt_task *j = wt->t;

		if (j->w != w)
			continue;
		cds_list_del(pos);
		wt->status = 0;
		cl__rt_wake(j);
		if (!w->buddy)
			w->buddy = j;
	}
	(void)cl_ticket_unlock(&t->join_lock);
}

/* First code of every task: finish the switch, run, exit. */
CL_INLINE void cl__rt_task_entry(void *value, void *data)
{
	struct cl__rt_worker *w = (struct cl__rt_worker *)value;
	struct cl_rt_task *t = (struct cl_rt_task *)data;

#ifdef CL__RT_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	cl__rt_finish(w);
	cl__rt_np_exit(t); /* 1 from cl_spawn(): not preempted before it runs */
	t->ret = t->fn(t->arg);
	t = cl__rt_current();
	cl__rt_np_inc(t);
	cl__rt_exit_wake_local(t);
	CL_WRITE_ONCE(t->state, CL__RT_DEAD);
	cl__rt_schedule(t->w, t, CL__RT_EXIT, NULL);
	/* never resumed */
}

/* cl_spawn() without the non-preemptible count. */
CL_INLINE struct cl_rt_task *cl__rt_spawn(struct cl_runtime *rt, const struct cl_spawn_attr *attr,
					  void *(*fn)(void *), void *arg)
{
	struct cl_rt_task *self = cl__rt_current(), *t;
	struct cl__rt_worker *cur;
	unsigned int cpu, gen;
	size_t pg;

	if (!rt || !fn || (attr && (attr->worker > (int)rt->nr_workers || attr->worker < 0 ||
				    (attr->pin && !attr->worker) || attr->nice < -20 || attr->nice > 19))) {
		errno = EINVAL;
		return NULL;
	}
	cur = self && self->rt == rt ? self->w : NULL;
	if (!cur && cl__rt_spawn_admit(rt) != 0)
		return NULL;
	CL_INJECT(60); /* a spawn admitted, not yet counted live */
	t = (struct cl_rt_task *)cl_objcache_alloc(rt->tcache);
	if (!t || cl__rt_handle_task(t) != t || (!t->keep.map && cl__rt_stack_map(rt, t) != 0)) {
		if (t) /* (or an address with no spare bits for the generation) */
			cl_objcache_free(rt->tcache, t);
		return cl__rt_spawn_fail(rt, cur, ENOMEM);
	}
	pg = rt->guard_size;
	/* the runqueue task is cleared by cl_task_init(), the rest up to keep here */
	memset((char *)t + offsetof(struct cl_rt_task, rc), 0,
	       offsetof(struct cl_rt_task, keep) - offsetof(struct cl_rt_task, rc));
	cl_task_init(&t->task, attr ? attr->nice : 0);
	t->task.data = t;
	t->np = 1; /* until cl__rt_task_entry() calls fn */
	t->io_drained = 0;
	if (attr && attr->tg && cl_task_set_group(&t->task, attr->tg) != 0) {
		cl_objcache_free(rt->tcache, t); /* EINVAL: a destroyed group or another instance's */
		return cl__rt_spawn_fail(rt, cur, EINVAL);
	}
	t->rt = rt;
	t->fn = fn;
	t->arg = arg;
	t->refs = attr && attr->detached ? 1 : 2;
	gen = CL_ATOMIC_LOAD(&t->keep.jgen, CL_RELAXED) >> 1;
	CL_ATOMIC_STORE(&t->keep.jgen, gen << 1 | (unsigned int)(attr && attr->detached), CL_RELAXED);
	cl_ticket_init(&t->join_lock);
	CDS_INIT_LIST_HEAD(&t->join_waiters);
	t->rc.stack_lo = (char *)t->keep.map + pg;
	t->rc.stack_size = t->keep.map_size - pg;
	cl__ctx_make(&t->rc.ctx, (char *)t->keep.map + pg, t->rc.stack_size, cl__rt_task_entry, t);
#ifdef CL_HAVE_TSAN
	t->rc.tsan_fiber = __tsan_create_fiber(0);
#endif
	if (attr && attr->worker)
		cpu = (unsigned int)(attr->worker - 1);
	else if (cur)
		cpu = cur->cpu;
	else
		cpu = CL_ATOMIC_FETCH_ADD(&rt->next_spawn, 1u, CL_RELAXED) % rt->nr_workers;
	if (attr && attr->pin)
		(void)cl_task_set_affinity(&t->task, rt->pin_masks + (size_t)cpu * rt->mask_words,
					   rt->nr_workers); /* a valid one-CPU mask: cannot fail */
	t->w = &rt->workers[cpu];
	cl__rt_live_add(rt, 1);
	CL_INJECT(62); /* counted live, not yet queued */
	cl__rt_enqueue_wake(rt, t, cpu, cur, 0);
	if (!cur)
		cl__rt_spawn_done(rt);
	return cl__rt_handle(t, gen); /* t may have run and exited: gen read before */
}

/**
 * cl_spawn() - start a task running @fn(@arg).
 * @rt: the runtime.
 * @attr: group, first worker, pinning, nice, detached (NULL: defaults).
 * @fn: the task's function; its return value is what cl_join() returns.
 * @arg: passed to @fn.
 *
 * The task gets its own stack (CL_RUNTIME_STACK_SIZE by default, a guard
 * region of CL_RUNTIME_GUARD_SIZE below it). From inside a task it is queued on the caller's worker
 * (local; the balancer spreads work); from outside on the next worker in
 * round robin, or on the worker @attr->worker names.
 *
 * Context: any thread, inside or outside the runtime's tasks.
 * Return: the task (a handle for cl_join(), unless detached), or NULL with
 * errno EINVAL (NULL @rt or @fn, bad @attr->worker, @attr->pin without a
 * worker, @attr->nice outside -20..19, @attr->tg destroyed or of another
 * scheduler instance),
 * ENOMEM (no memory for the stack), EPIPE (from outside the runtime's
 * tasks once cl_runtime_shutdown() has begun).
 */
CL_INLINE struct cl_rt_task *cl_spawn(struct cl_runtime *rt, const struct cl_spawn_attr *attr,
				      void *(*fn)(void *), void *arg)
{
	struct cl_rt_task *self = cl__rt_np_enter(), *h = cl__rt_spawn(rt, attr, fn, arg);

	if (self)
		cl__rt_np_exit(self); /* (keeps errno) */
	return h;
}

/**
 * cl_self() - the running task.
 *
 * Context: any thread.
 * Return: the task, or NULL when the caller is not a runtime task.
 */
CL_INLINE struct cl_rt_task *cl_self(void)
{
	return cl__rt_current();
}

/**
 * cl_worker_id() - the worker (rq index) the calling task runs on now.
 *
 * A task may be moved by the balancer whenever it is not running, so the
 * value holds until the caller next blocks or yields.
 *
 * Context: any thread.
 * Return: 0..cl_runtime_nr_workers() - 1, or -1 outside a runtime task.
 */
CL_INLINE int cl_worker_id(void)
{
	struct cl_rt_task *t = cl__rt_current();

	return t ? (int)t->w->cpu : -1;
}

/**
 * cl_yield() - let the worker run another runnable task first, if the fair
 * class says one is due: the caller gives up the rest of its slice
 * (cl_rq_yield(): its virtual deadline moves one slice later).
 *
 * Context: a runtime task.
 * Return: 0, or -1 with errno EPERM outside a runtime task.
 */
CL_INLINE int cl_yield(void)
{
	struct cl_rt_task *self = cl__rt_current();

	if (!self) {
		errno = EPERM;
		return -1;
	}
	cl__rt_np_inc(self);
	cl__rt_schedule(self->w, self, CL__RT_YIELD, NULL);
	CL_BARRIER();
	CL_WRITE_ONCE(self->np, self->np - 1); /* (no second yield for a pending mark) */
	return 0;
}

/*
 * End a timed wait of @self that a waker ended (its timer may still be
 * armed): disarm the timer, not preemptible meanwhile (the wheel's lock,
 * held by a task: timer.h), or wait for its firing to let go of the
 * record. After this the timer and the record are @self's again.
 */
CL_INLINE void cl__rt_timer_disarm(struct cl_rt_task *self)
{
	cl__rt_np_inc(self); /* the wheel's lock, held by a task (timer.h) */
	cl__rt_timer_cancel(self);
	cl__rt_np_exit(self);
	cl__rt_timer_wait_fired(self);
}

/*
 * A task @self waits for @t to exit, until @deadline (CLOCK_MONOTONIC ns;
 * 0: none). Without a deadline its record is on its stack; with one it is
 * self->wait, waiting with status CL__RT_WAIT_PENDING and a timer armed
 * under join_lock (the timer takes it off join_waiters under that lock,
 * timer.h), and the exit path writes each record's status under that lock
 * too (cl__rt_exit_wake_local(), cl__rt_finish()): exactly one of the exit
 * and the timer ends the wait. Returns 0 (@t exited), CL__RT_WAIT_TIMEDOUT.
 */
CL_INLINE int cl__rt_join_task(struct cl_rt_task *self, struct cl_rt_task *t, uint64_t deadline)
{
	struct cl__rt_waiter wt, *rec = deadline ? &self->wait : &wt;
	int st;

	cl__rt_lock(&t->join_lock);
	if (CL_ATOMIC_LOAD(&t->exited, CL_ACQUIRE)) {
		cl__rt_unlock(&t->join_lock);
		return 0;
	}
	rec->t = self;
	rec->data = NULL;
	rec->status = deadline ? CL__RT_WAIT_PENDING : -1;
	cds_list_add_tail(&rec->node, &t->join_waiters);
	/* run @t next if it waits on this worker's rq (its
	 * switch tests that race-free: cl__rt_set_buddy()) */
	self->w->buddy = t;
	if (deadline) /* not preemptible: join_lock held */
		cl__rt_timer_arm(self->w, self, deadline, &t->join_lock);
	cl__rt_block(self, &t->join_lock);
	if (!deadline)
		return 0;
	st = rec->status;
	if (st != CL__RT_WAIT_TIMEDOUT)
		cl__rt_timer_disarm(self); /* before @t may be freed: its firing takes join_lock */
	return st;
}

/* A thread outside the runtime waits for @t to exit, until @deadline
 * (CLOCK_MONOTONIC ns; 0: none), on a futex. Returns 0, or -1 timed out
 * (ext_joiner stays set: the exit path then wakes nobody, harmlessly). */
CL_INLINE int cl__rt_join_thread(struct cl_rt_task *t, uint64_t deadline)
{
	CL_ATOMIC_STORE(&t->ext_joiner, 1, CL_SEQ_CST);
	while (!CL_ATOMIC_LOAD(&t->exited, CL_SEQ_CST)) {
		struct timespec ts, *rel = NULL;

		if (deadline) {
			uint64_t now = cl__rt_timer_now(), d;

			if (now >= deadline)
				return -1;
			d = deadline - now;
			ts.tv_sec = (time_t)(d / 1000000000ULL);
			ts.tv_nsec = (long)(d % 1000000000ULL);
			rel = &ts;
		}
		cl__futex_wait(&t->exited, 0, rel);
	}
	/* the exit path may still be in its futex wake on t: sync on join_lock */
	cl_ticket_lock(&t->join_lock);
	(void)cl_ticket_unlock(&t->join_lock);
	return 0;
}

/* cl_join() until @deadline (CLOCK_MONOTONIC ns; 0: none). A join that
 * times out gives its claim on the handle back: the task stays joinable. */
CL_INLINE int cl__rt_join_dl(struct cl_rt_task *h, void **ret, uint64_t deadline)
{
	struct cl_rt_task *self = cl__rt_current(), *t = cl__rt_handle_task(h);
	unsigned int want = cl__rt_handle_gen(h) << 1;
	int st;

	if (!t) {
		errno = EINVAL;
		return -1;
	}
	if (t == self) {
		errno = EDEADLK;
		return -1;
	}
	/* the descriptor outlives its task (the cache keeps it): reading a stale one is safe */
	if (!want || !CL_ATOMIC_CAS(&t->keep.jgen, &want, want | 1u, CL_ACQ_REL, CL_RELAXED)) {
		errno = EINVAL;
		return -1;
	}
	/* claimed: the handle's reference keeps @t until this join puts it */
	st = self ? cl__rt_join_task(self, t, deadline) : cl__rt_join_thread(t, deadline);
	if (st) {
		/* only a join changes the claim, and only this one holds it */
		CL_ATOMIC_STORE(&t->keep.jgen, want, CL_RELEASE);
		errno = ETIMEDOUT;
		return -1;
	}
	if (ret)
		*ret = t->ret;
	/* not preempted while the release may hold the task cache's depot lock */
	if (self)
		cl__rt_np_inc(self);
	cl__rt_task_put(t);
	if (self)
		cl__rt_np_exit(self);
	return 0;
}

/**
 * cl_join() - wait for the task @h names to return, take its result, and
 * free it.
 * @h: a handle cl_spawn() returned for a task of this runtime, not
 *     detached, not joined yet.
 * @ret: where to store the task's return value (may be NULL).
 *
 * Inside a task the caller blocks through the runqueue (a wait list on the
 * task); outside it sleeps on a futex. Each handle joins once: a second
 * join, or a join through a handle whose descriptor has been reused since,
 * fails with EINVAL (the handle carries the descriptor's generation).
 *
 * Context: any thread; not the task itself; the runtime not destroyed.
 * Return: 0, or -1 with errno EINVAL (NULL @h, detached, already joined
 * or being joined) or EDEADLK (@h is the caller).
 */
CL_INLINE int cl_join(struct cl_rt_task *h, void **ret)
{
	return cl__rt_join_dl(h, ret, 0);
}

/**
 * cl_join_timeout() - cl_join(), waiting at most @timeout_ns.
 * @h: a handle cl_spawn() returned for a task of this runtime, not
 *     detached, not joined yet.
 * @ret: where to store the task's return value (may be NULL; untouched
 *       on a timeout).
 * @timeout_ns: how long at most to wait (relative, ns; 0: joins a task
 *              that has already exited, else times out at once, after a
 *              switch in a task; longer than a timer can wait, as
 *              CL_SLEEP_MAX_NS: that long).
 *
 * Inside a task the caller blocks on a timer of its worker's wheel as
 * well (as the other *_timeout calls, docs/runtime.md, Time); outside it
 * sleeps on the futex with a timeout. On a timeout the task is still
 * joinable: a later cl_join() or cl_join_timeout() through the same
 * handle joins it and gets its result. An exit racing the expiry is
 * delivered exactly once: either this returns 0 with the result (the task
 * is freed), or -1 with ETIMEDOUT and the task stays joinable.
 *
 * Context: any thread; not the task itself; the runtime not destroyed.
 * Return: 0, or -1 with errno ETIMEDOUT, EINVAL (NULL @h, detached,
 * already joined or being joined) or EDEADLK (@h is the caller).
 */
CL_INLINE int cl_join_timeout(struct cl_rt_task *h, void **ret, uint64_t timeout_ns)
{
	return cl__rt_join_dl(h, ret, cl__rt_deadline(timeout_ns));
}

/**
 * cl_preempt_disable() - keep the calling task from being preempted until
 * the matching cl_preempt_enable(). Calls nest.
 *
 * For code the runtime cannot see into: a spinlock of the application's
 * own or of the runqueue API (cl_task_group_*()) held by a task, a
 * flockfile() region, code whose thread-local state must not be shared
 * with the next task on the worker. Blocking calls still switch.
 *
 * Context: a runtime task (no effect elsewhere).
 */
CL_INLINE void cl_preempt_disable(void)
{
	(void)cl__rt_np_enter();
}

/**
 * cl_preempt_enable() - end a cl_preempt_disable() section; if the slice
 * ran out meanwhile, yield now.
 *
 * Context: a runtime task, after cl_preempt_disable() (no effect elsewhere).
 */
CL_INLINE void cl_preempt_enable(void)
{
	struct cl_rt_task *t = cl__rt_current();

	if (t && t->np > 0)
		cl__rt_np_exit(t);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_TASK_H */
