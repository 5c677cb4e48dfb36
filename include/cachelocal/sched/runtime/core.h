/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/core.h - the M:N runtime's core: workers, tasks,
 * context switches, and the wake-to-run protocol. Included by
 * <cachelocal/sched/runtime.h> (which adds the blocking primitives); the
 * model and the protocol are described there and in docs/runtime.md.
 *
 * The core is in pieces, one job each, listed below in the order they
 * build on each other. Every call into the runqueue core (rq.h, fair.h,
 * group.h, balance.h) is in four places: cl__rt_enqueue_wake() (wake and
 * spawn) and cl__rt_schedule() (block, yield, exit) in switch.h,
 * cl__rt_balance() (periodic and idle balancing) in task.h and
 * cl__rt_worker_pick() (the idle loop) in worker.h.
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_CORE_H
#define CACHELOCAL_SCHED_RUNTIME_CORE_H

/* Its pieces, in the order they build on each other: */
#include "types.h" /* the M:N runtime's knobs and types */
#include "clock.h" /* the runtime's clock and live-task count */
#include "stack.h" /* task stacks */
#include "switch.h" /* switching and the wake-to-run protocol */
#include "task.h" /* balancing and the task API */
#include "signals.h" /* the runtime's signal handlers */
#include "worker.h" /* worker threads */
#include "lifecycle.h" /* the runtime's lifecycle */

#endif /* CACHELOCAL_SCHED_RUNTIME_CORE_H */
