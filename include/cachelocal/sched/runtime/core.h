/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/core.h - the M:N runtime, in pieces: workers,
 * tasks, context switches, the wake-to-run protocol and the blocking
 * primitives. Included by <cachelocal/sched/runtime.h>; the model and the
 * protocol are described there and in docs/runtime.md.
 *
 * One job per piece, included below in one direction: a piece calls only
 * what it or an earlier piece defines (no forward declaration; checked by
 * scripts/check-backcalls.py, part of make check), so each can be read knowing only those above
 * it. A new piece (timers, I/O) goes after the ones it calls.
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_CORE_H
#define CACHELOCAL_SCHED_RUNTIME_CORE_H

/* Its pieces, each calling only the ones above it: */
#include "types.h" /* knobs, types and constants (no code) */
#include "current.h" /* the calling task, errno, entering the non-preemptible count */
#include "clock.h" /* the runtime's clock */
#include "stack.h" /* task stacks, handles, the live-task count */
#include "overflow.h" /* the stack-overflow report */
#include "wakeq.h" /* the wake side: remote and local wake lists, kicks, wake entry points */
#include "watch.h" /* watched waiter records (an idle worker's claims) */
#include "timer.h" /* per-worker timing wheels, firing due timers */
#include "iopoll.h" /* per-worker I/O backend: io_uring or epoll, reaping, the idle wait */
#include "switch.h" /* the switch, buddies, balancing, cl__rt_schedule(), np exit, blocking */
#include "preempt.h" /* the tick thread and the preemption signal */
#include "worker.h" /* worker threads: the idle pick and loop */
#include "task.h" /* the task API */
#include "sleep.h" /* cl_sleep_ns(), cl_sleep_until(): a task sleeps on its worker's wheel */
#include "waitq.h" /* waiter records, wake-affine, the wait queue */
#include "iocall.h" /* one I/O call of a task: the ring, or retried on readiness (epoll) */
#include "io.h" /* cl_read(), cl_write(), ...: I/O that parks the task */
#include "chan.h" /* the bounded channel */
#include "select.h" /* cl_select(): one of several channel operations */
#include "sync.h" /* mutex, condition variable */
#include "blocking.h" /* cl_blocking(): a blocking call on a helper thread, the task parked */
#include "net.h" /* cl_listen_tcp(), cl_dial_tcp(), cl_sock_name(): TCP by "host:port" */
#include "signal.h" /* cl_signal_chan(): signals as a channel */
#include "lifecycle.h" /* create, shutdown, destroy */

#endif /* CACHELOCAL_SCHED_RUNTIME_CORE_H */
