/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime.h - an M:N runtime on the reference runqueue:
 * one pinned worker thread per CPU, each serving one struct cl_rq; user
 * tasks with their own stacks; blocking primitives whose sleeps and
 * wakeups go through the runqueue. See docs/runtime.md.
 *
 *	struct cl_runtime *rt = cl_runtime_create(NULL);
 *	struct cl_rt_task *t = cl_spawn(rt, NULL, fn, arg);
 *	cl_join(t, &ret);
 *	cl_runtime_destroy(rt);
 *
 * Model. Worker n runs the tasks of rq n. A task runs until it blocks
 * (channel, mutex, condvar, wait queue, join, cl_sleep_ns()), yields, returns, or has run
 * a whole slice (CL_RUNTIME_SLICE_NS): then a tick preempts it at a safe
 * point or at its next runtime call (see runtime/preempt.h); the switch saves its callee-saved registers on its stack and
 * resumes the next task the fair class picks (cl_rq_pick_next()) directly,
 * or the worker's idle loop when the rq is empty. The idle loop balances
 * (balance.h: pull from the busiest rq, coldest tasks first), spins for
 * CL_RUNTIME_SPIN_NS (at most half the workers at once, none whose idle
 * periods have been long: CL__RT_SPIN_LONG_IDLE spins) and then sleeps on
 * a futex, until its next timer if it has one (runtime/timer.h: a timing
 * wheel per worker for its sleeping tasks), else without a timeout; a busy worker balances every
 * CL_RUNTIME_BALANCE_NS at a switch and kicks a sleeping worker when tasks
 * wait on its rq, and as often the tick kicks one (the idle balancer) for
 * tasks waiting on any rq. With every worker asleep the tick sleeps too:
 * an idle runtime wakes on no timer (docs/runtime.md, Idle).
 *
 * Wake-to-run protocol (why no wakeup is lost, and why a task never runs
 * on two workers at once):
 *  1. A waiter checks its condition under the object's lock L, puts a
 *     record of itself on the object's list, counts itself blocked, and
 *     calls the scheduler still holding L.
 *  2. The scheduler takes its rq lock, dequeues the waiter, picks the next
 *     task and switches to it, holding both L and the rq lock across the
 *     switch. The first thing every resumed context does (cl__rt_finish())
 *     is release them. So L is free again only once the waiter's registers
 *     and stack pointer are saved: a waker that finds the record (it must
 *     take L) always finds a task that is completely off its CPU. (A
 *     worker that will watch the record releases L before its switch;
 *     a waker then claims the record through the watch, watch.h.)
 *  3. A waker takes the record off the list under L and writes its result;
 *     from then on it alone owns the wakeup (each record is woken once).
 *     Another worker's task (or a thread outside): the waker pushes it on
 *     the remote wake list of the worker that last ran it (lock-free; no
 *     rq lock), then reads that worker's `sleeping` flag; that worker
 *     enqueues the list under its own rq lock at its next switch or idle
 *     pick. Same worker: the enqueue is deferred to the worker's next
 *     switch (a list only that thread touches; the switch takes the rq
 *     lock anyway). Spawns enqueue under the target's rq lock and read
 *     `sleeping` under it. If `sleeping` was set, the waker swaps it to 0
 *     and, if it was the one to clear it, FUTEX_WAKEs the worker (or,
 *     for one asleep in its I/O backend, writes its eventfd).
 *  4. An idle worker decides to sleep under its rq lock: only if
 *     nr_running is 0 (and no stop is asked) does it set `sleeping`
 *     (CL__RT_SLEEP_FUTEX, or CL__RT_SLEEP_IO with tasks parked in I/O);
 *     then, if its remote wake list is still empty (a remote waker pushes
 *     before it reads `sleeping`, both sequentially consistent), without
 *     the lock, FUTEX_WAIT(sleeping, 1) or the I/O backend's wait. The
 *     lock orders the two sides: either the worker saw the waker's task
 *     (it does not sleep), or the waker saw `sleeping` set (it wakes it). A wake that
 *     lands before the FUTEX_WAIT leaves the word 0, so the wait returns
 *     at once. The wait has no timeout but the worker's own next timer:
 *     nothing else would end it (test_sched_runtime_idle forces a wake
 *     into that window).
 *  5. Yield keeps the rq lock across the switch for the same reason as 2:
 *     a queued, switching-out task cannot be stolen by a balancer (which
 *     needs that lock) before its context is saved.
 *  6. Direct hand-off: a task that blocks, within the same kernel tick,
 *     with exactly one task on its worker's wake list, nothing else on
 *     the rq and an empty remote wake list switches to that task without
 *     the rq lock and without touching the rq, which keeps the task it last
 *     picked as its (stale) curr. A remote wakeup (a push on the remote
 *     wake list) or spawn (nr_running raised) stops the chain: the next
 *     switch takes the full path (2-4), which drains the remote list into
 *     the wake list and then brings the rq up to date
 *     (cl__rt_handoff_sync(): a stale curr found on the wake list stays
 *     queued). A worker only sleeps through the full path.
 * Lock order: object lock (channel, mutex wait lock, condvar, join lock)
 * -> rq lock(s) (two in address order, balance.h). No rq lock is held
 * while a task's own code runs.
 *
 * Errors: functions that can fail return NULL or -1 and set errno; no
 * function aborts on bad input. Blocking calls made outside a task fail
 * with EPERM instead of blocking.
 *
 * Task descriptors come from a per-CPU object cache (objcache.h); each
 * keeps its stack slot (a guard region below the stack, in a batch of
 * slots that is one mapping) while it sits in the cache, so a spawn on a
 * warm cache makes no system call.
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_H
#define CACHELOCAL_SCHED_RUNTIME_H

#include "runtime/core.h"

#endif /* CACHELOCAL_SCHED_RUNTIME_H */
