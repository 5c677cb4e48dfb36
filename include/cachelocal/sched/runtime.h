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
 * Model. Worker n runs the tasks of rq n. Tasks are cooperative: a task
 * runs until it blocks (channel, mutex, condvar, wait queue, join), yields
 * or returns; the switch saves its callee-saved registers on its stack and
 * resumes the next task the fair class picks (cl_rq_pick_next()) directly,
 * or the worker's idle loop when the rq is empty. The idle loop balances
 * (balance.h: pull from the busiest rq, coldest tasks first), spins for
 * CL_RUNTIME_SPIN_NS and then sleeps on a futex; a busy worker balances
 * every CL_RUNTIME_BALANCE_NS at a switch and kicks a sleeping worker when
 * tasks wait on its rq.
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
 *     take L) always finds a task that is completely off its CPU.
 *  3. A waker takes the record off the list under L and writes its result;
 *     from then on it alone owns the wakeup (each record is woken once).
 *     It then takes the rq lock of the worker that last ran the task,
 *     enqueues it, and releases the lock. Same worker: a local wakeup, done.
 *     Another worker: it then executes a full fence and reads that worker's
 *     `sleeping` flag; if set, it swaps it to 0 and FUTEX_WAKEs the worker.
 *  4. An idle worker sets `sleeping` = 1, executes a full fence, reads its
 *     rq's nr_running and only if that is 0 calls FUTEX_WAIT(sleeping, 1).
 *     Either the waker's fence orders its enqueue before the worker's read
 *     (the worker sees the task and does not sleep), or the worker's store
 *     precedes the waker's read (the waker sees 1 and wakes it; if the
 *     wake comes before the wait, the futex value is already 0 and the
 *     wait returns at once). A sleeping worker also wakes every
 *     CL_RUNTIME_BALANCE_NS to balance, but correctness does not rely on it.
 *  5. Yield keeps the rq lock across the switch for the same reason as 2:
 *     a queued, switching-out task cannot be stolen by a balancer (which
 *     needs that lock) before its context is saved.
 * Lock order: object lock (channel, mutex wait lock, condvar, join lock)
 * -> rq lock(s) (two in address order, balance.h). No rq lock is held
 * while a task's own code runs.
 *
 * Errors: functions that can fail return NULL or -1 and set errno; no
 * function aborts on bad input. Blocking calls made outside a task fail
 * with EPERM instead of blocking.
 *
 * Task descriptors and stacks: one mapping per task (guard page, stack,
 * descriptor at its top), recycled through small per-worker caches.
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_H
#define CACHELOCAL_SCHED_RUNTIME_H

#include "runtime/core.h"
#include "runtime/sync.h"

#endif /* CACHELOCAL_SCHED_RUNTIME_H */
