/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/types.h - the M:N runtime's knobs and types.
 *
 * The tunables (stack, guard, slice, signal, spin and balance constants),
 * struct cl_runtime, its workers and tasks, and the sanitizer fiber
 * declarations: types and constants only (the code starts in current.h).
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_TYPES_H
#define CACHELOCAL_SCHED_RUNTIME_TYPES_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <urcu/list.h>
#include <urcu/urcu-memb.h>

#include "../../compiler.h"
#include "../../objcache.h"
#include "../../internal/futex.h"
#include "../../sys.h"
#include "../balance.h"
#include "../group.h"
#include "../rq.h"
#include "context.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CL__RT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(CL__RT_ASAN)
#define CL__RT_ASAN 1
#endif
/*
 * Under valgrind the task stacks are registered (VALGRIND_STACK_REGISTER) so
 * that memcheck takes a switch onto one for a stack switch: without it every
 * access on a task stack reads as invalid. A client request is a few no-op
 * instructions outside valgrind, made once per stack mapping.
 */
#if defined(__has_include) && !defined(CL__RT_ASAN) && !defined(CL_HAVE_TSAN)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define CL__RT_VALGRIND 1
#endif
#endif

CL_BEGIN_DECLS

#ifdef CL_HAVE_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#ifdef CL__RT_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old, size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#if !defined(__cplusplus) && !defined(__USE_GNU)
extern int pthread_getattr_np(pthread_t th, pthread_attr_t *attr);
#endif
#endif

/* ---- knobs ---- */

/* Bounds of struct cl_runtime_attr.stack_size (EINVAL outside). */
#define CL_RUNTIME_STACK_MIN (16u * 1024u)
#define CL_RUNTIME_STACK_MAX ((size_t)1 << 30)

/* Default guard region below each task's stack: reserved, never committed
 * (a frame up to this size that jumps the end of the stack still faults). */
#ifndef CL_RUNTIME_GUARD_SIZE
#define CL_RUNTIME_GUARD_SIZE (64u * 1024u)
#endif

/* Default usable stack of a task (a guard region is added below it). */
#ifndef CL_RUNTIME_STACK_SIZE
#if defined(CL__RT_ASAN) || defined(CL_HAVE_TSAN)
#define CL_RUNTIME_STACK_SIZE (256u * 1024u)
#else
#define CL_RUNTIME_STACK_SIZE (64u * 1024u)
#endif
#endif
/* The timeout of every `_timeout` call (and cl_poll_fd(), cl_select())
 * that waits as long as it takes. */
#define CL_FOREVER UINT64_MAX

/* Preemption: a task that has run this long (ns) without a switch is
 * preempted within one more (struct cl_runtime_attr.slice_ns). */
#ifndef CL_RUNTIME_SLICE_NS
#define CL_RUNTIME_SLICE_NS 2000000ULL
#endif
/* Helper threads of cl_blocking() per runtime, at most (blocking.h). */
#ifndef CL_RUNTIME_BLOCKING_THREADS
#define CL_RUNTIME_BLOCKING_THREADS 8u
#endif
/* The signal the tick sends to preempt (SIGURG, as Go's runtime: ignored by
 * default, so a stray one harms nothing). Used only if the application has
 * no handler for it. */
#ifndef CL_RUNTIME_PREEMPT_SIGNAL
#define CL_RUNTIME_PREEMPT_SIGNAL SIGURG
#endif

/* An idle worker spins this long (ns) for work before it sleeps on its futex
 * (0 under valgrind, which runs one thread at a time: a spin there only
 * delays the thread it waits for). At most half the workers spin at once,
 * except for a wakeup of the task that just blocked (watch.h). */
#define CL_RUNTIME_SPIN_NS 50000ULL
/*
 * ... unless its idle periods have averaged longer than this many spins
 * (avg_idle_ns): a worker woken by a timer every 100 ms, or by a request
 * now and then, would spin after each wakeup for work that comes a period
 * later. Such a worker sleeps at once (nr_spin_long_idle) until shorter
 * idle periods bring the average down.
 */
#define CL__RT_SPIN_LONG_IDLE 8u
/*
 * Idle balancing is skipped when a worker's idle periods are shorter than
 * this on average (ns; the kernel's avg_idle test before a new-idle
 * balance): in a cross-worker ping-pong each pass would read the other
 * rqs' lines, which the other workers write at every switch, for nothing.
 * Such a worker balances once it has spun this long without work.
 */
#define CL_RUNTIME_IDLE_BALANCE_NS 20000ULL
/* Periodic balancing interval (ns) of a busy worker; as often, while a
 * worker is awake, the tick wakes one sleeping worker to balance when tasks
 * wait on some rq (the kernel's nohz idle balancer); sleepers never wake on
 * a timer. */
#define CL_RUNTIME_BALANCE_NS 4000000ULL
/*
 * Cache-hot window of the runtime's balancer (the runqueue's default, 0.5
 * ms, is for kernel threads; runtime tasks switch every few microseconds
 * and would never look cold). The balancer still takes the coldest first.
 */
#define CL_RUNTIME_MIGRATION_COST_NS 20000ULL

/* Runtime states (struct cl_runtime.shut). */
#define CL__RT_UP 0
#define CL__RT_STOPPING 1
#define CL__RT_SHUT 2

/* Task states (struct cl_rt_task.state). */
#define CL__RT_RUNNABLE 0 /* queued or running */
#define CL__RT_BLOCKED 1  /* waiting: off every rq, on some waiter list */
#define CL__RT_DEAD 2     /* returned; stack released once switched away */

/* Kinds of switch-out (cl__rt_schedule()). */
#define CL__RT_YIELD 0
#define CL__RT_BLOCK 1
#define CL__RT_EXIT 2
#define CL__RT_HANDOFF 3 /* direct hand-off: blocked, rq untouched and not locked */
#define CL__RT_PREEMPT 4 /* preempted: requeued keeping its deadline (not a yield) */

/* Why a worker's running task should switch (struct cl__rt_worker.preempt_pending). */
#define CL__RT_PP_SLICE 0x1 /* the tick: it ran a whole slice without a switch */
#define CL__RT_PP_WAKE 0x2  /* a wakeup may preempt it: run the EEVDF check (cl__rt_wake_check()) */
#define CL__RT_PP_TIMER 0x4 /* the tick: a timer of its worker is due (timer.h) */

struct cl_runtime;
struct cl__rt_worker;
struct cl__rt_waiter;

/*
 * Timers (timer.h): a hierarchical timing wheel per worker. A wheel tick
 * is 2^CL__RT_TW_SHIFT ns (1024 ns); each level has CL__RT_TW_SLOTS slots
 * of 64^level ticks; CL__RT_TW_LEVELS levels of 6 bits cover every tick
 * of a 64-bit ns clock (54 = 64 - 10 bits).
 */
#define CL__RT_TW_SHIFT 10
#define CL__RT_TW_BITS 6
#define CL__RT_TW_SLOTS 64
#define CL__RT_TW_LEVELS 9
#define CL__RT_TIMER_NONE UINT64_MAX /* struct cl__rt_worker.timer_next: no timer */

/*
 * struct cl__rt_timer - one armed timer (a task's: struct cl_rt_task.timer):
 * in one slot of one worker's wheel (a list linked through @next/@pprev:
 * O(1) unlink), then, once expired, on the list of timers that worker
 * fires. Armed by a task on the worker it runs on, fired by that worker's
 * thread, disarmed (a timed wait that a waker ended) by the task wherever
 * it runs then: under the worker's timer_lock.
 */
struct cl__rt_timer {
	struct cl__rt_timer *next;
	struct cl__rt_timer **pprev;       /* NULL: not in a wheel */
	uint64_t when;                     /* expiry in wheel ticks: the deadline rounded up */
	struct cl__rt_worker *w;           /* the worker whose wheel it is on */
	struct cl_ticketlock *lock;        /* a timed wait: its wait list's lock; NULL: a sleep */
	int state;                         /* CL__RT_TIMER_*: FIRING while its worker handles it
					    * off the wheel (atomic) */
};
#define CL__RT_TIMER_IDLE 0
#define CL__RT_TIMER_ARMED 1
#define CL__RT_TIMER_FIRING 2

/* struct cl__rt_waiter.status of a timed wait (waitq.h): on its list
 * still (wakers overwrite it under the list's lock), or ended by its timer. */
#define CL__RT_WAIT_PENDING 1
#define CL__RT_WAIT_TIMEDOUT (-2)

/*
 * struct cl__rt_wheel - a worker's timers. A timer due at tick `when` sits
 * on the level of the highest 6-bit group in which `when` and `elapsed`
 * differ, in the slot that group's value names: a level-L slot is always
 * ahead of `elapsed`'s slot on that level, and every timer on a lower
 * level expires before every timer on a higher one. Processing a slot
 * fires its timers that are due and moves the rest one or more levels
 * down (each timer moves at most CL__RT_TW_LEVELS - 1 times).
 */
struct cl__rt_wheel {
	uint64_t elapsed;                  /* ticks processed: no slot before it holds a timer */
	unsigned int nr;                   /* timers armed (atomic: shutdown reads it) */
	uint64_t occupied[CL__RT_TW_LEVELS]; /* bit s: slot s of the level is not empty */
	struct cl__rt_timer *slot[CL__RT_TW_LEVELS][CL__RT_TW_SLOTS];
};

/*
 * I/O (iopoll.h: the per-worker backend; io.h: the calls). The backend a
 * runtime uses (struct cl_runtime.io_mode), chosen at cl_runtime_create().
 */
#define CL__RT_IO_URING 1
#define CL__RT_IO_EPOLL 2
/* A worker's ring: submission entries (a full queue is submitted at once)
 * and completion entries (the kernel keeps completions past them:
 * IORING_FEAT_NODROP). */
#define CL__RT_IO_SQ_ENTRIES 256u
#define CL__RT_IO_CQ_ENTRIES 4096u
/* Submissions a worker batches before it submits them at a switch. */
#define CL__RT_IO_BATCH 16u
/* Events one epoll_wait() of a worker takes. */
#define CL__RT_IO_EVENTS 64
/* Buckets of the runtime's table of tasks waiting on fds (by fd). */
#define CL__RT_IO_BUCKETS 256u
/* Ring user data: ignored completions (cancels, link timeouts), and the
 * read of the worker's eventfd (its kick); epoll data of the eventfd. */
#define CL__RT_IO_UD_IGNORE 0ULL
#define CL__RT_IO_UD_KICK 1ULL
/* struct cl__rt_worker.sleeping: asleep on the futex, or in the I/O backend
 * (a kick then writes the worker's eventfd). */
#define CL__RT_SLEEP_FUTEX 1
#define CL__RT_SLEEP_IO 2
/* struct cl__rt_waiter.status of an epoll wait that cl_close() or
 * cl_runtime_shutdown() ended. */
#define CL__RT_WAIT_CANCELED (-3)

/*
 * struct cl__rt_iobucket - the tasks waiting on fds that hash here: their
 * waiter records (struct cl__rt_waiter, data: the struct cl__rt_ioop), so
 * that cl_close() finds the waits on an fd. An epoll wait's record is
 * taken off by whoever ends the wait (the readiness, a close, its timer)
 * under @lock; a ring operation's by its task once it completed.
 */
struct cl__rt_iobucket {
	struct cl_ticketlock lock;
	struct cds_list_head waiters;
} CL_ALIGNED(CL_CACHELINE_SIZE);

/* struct cl__rt_ioop - one I/O wait of a task, on its stack. */
struct cl__rt_ioop {
	int fd;
	short events;                      /* epoll: the poll events it waits for */
	short revents;                     /* epoll: the events that ended it */
	int res;                           /* io_uring: the completion's result */
	int cancelled;                     /* a cancel was asked (cl_close(), shutdown) */
	uint64_t ud;                       /* io_uring: its user data (address | generation) */
	struct cl_rt_task *t;              /* the waiting task */
	struct cl__rt_worker *w;           /* the worker it waits on (its ring or epoll) */
};

/* struct cl__rt_iocancel - a cancel of a ring operation posted to the
 * worker that owns the ring (a ring is single-issuer). */
struct cl__rt_iocancel {
	struct cl__rt_iocancel *next;
	uint64_t ud;
};

struct io_uring;

/* A context the runtime can switch to: a task's or a worker's own stack. */
struct cl__rt_ctx {
	struct cl__ctx ctx;
	int on_cpu;                        /* 1 from the switch into it until the next context
					    * has run past the switch that saved it (the
					    * kernel's task_struct.on_cpu; atomic) */
	void *tsan_fiber;
	void *asan_fake;
	const void *stack_lo;
	size_t stack_size;
};

/*
 * struct cl__rt_wnode - an entry of a worker's remote wake list, used when
 * the list is not empty (an empty list takes the task itself, tagged: see
 * cl__rt_wake_push()): the woken task's waiter record carries one
 * (cl__rt_wake_rec(): the line its waker writes anyway), its descriptor
 * another (cl__rt_wake()). @next: the rest of the list (as remote_wakes).
 */
struct cl__rt_wnode {
	uintptr_t next;
	struct cl_rt_task *t;
};

/* Message bytes a channel's waiter record carries itself (struct cl__rt_waiter.msg). */
#define CL__RT_WAITER_MSG 8

/*
 * struct cl__rt_waiter - one blocked task on a wait list: the line of its
 * descriptor kept for it (struct cl_rt_task.wait; an untimed join's is
 * on its stack, a timed join's is the descriptor's). @data (or @msg) and
 * @status are the primitive's (message slot, result); written by the
 * waker before it wakes the task. A wakeup from another worker moves this
 * line and no other line of the wakee: the waker reads @w here (not the
 * descriptor's), a channel message up to CL__RT_WAITER_MSG bytes travels in
 * @msg (not in the receiver's buffer), and the remote wake list links
 * @rnode if it is not empty (cl__rt_wake_rec()). @w: by cl__rt_wait_rec().
 */
struct cl__rt_waiter {
	struct cds_list_head node;
	struct cl_rt_task *t;
	struct cl__rt_worker *w;           /* the worker @t blocked on (cl__rt_wake_rec()) */
	struct cl__rt_wnode rnode;
	union {
		void *data;
		unsigned char msg[CL__RT_WAITER_MSG];
	};
	short status;                      /* 0 woken, -1 not (yet) or failed */
	short aff_flips;                   /* by cl__rt_wait_rec(): @t's wakee_flips (at most
					    * 0x7fff), or -1 if @t may not move to its waker's
					    * worker (wake-affine) */
	uint16_t aff_vote;                 /* by its wakers (cl__rt_vote_home()): the worker most
					    * of them ran on << 4 | its net votes */
	uint16_t watch;                    /* CL__RT_WATCH_*: an idle worker polls it (atomic) */
};

/* struct cl__rt_waiter.status of a select's case record (select.h) while
 * it is on its channel's list: the waker that takes it off claims the
 * select first (cl__chan_sel_claim(), chan.h). */
#define CL__RT_WAIT_SELECT 2

/* Cases one cl_select() takes at most (EINVAL beyond): their records are
 * on its task's stack while it waits (64 bytes each). */
#define CL_SELECT_MAX 32

/* struct cl__rt_select.state until a case claims the select (then: its index). */
#define CL__RT_SEL_WAITING (-1)

/*
 * struct cl__rt_select - a cl_select() that blocked, on its task's stack
 * (select.h). One record per case, each on its channel's list (status
 * CL__RT_WAIT_SELECT, aff_flips -1: no wake-affine move, aff_vote: the
 * case's index, which finds this struct from the record). A waker that
 * takes one off claims the select by one CAS of @state; the winner then
 * passes @gate, which the task holds until its switch away completed
 * (so no waker starts it before) and its timer holds while it decides
 * (timer.h: the gate is the lock of the timed wait whose list is @timeq
 * and whose record is the task's own, wait): the select is the winner's
 * if that record is still pending, else the timer ended it first.
 */
struct cl__rt_select {
	int state;                         /* CL__RT_SEL_WAITING, or the claiming case (atomic) */
	struct cl_ticketlock gate;
	struct cds_list_head timeq;        /* the task's own record while nothing ended the select */
	struct cl__rt_waiter rec[CL_SELECT_MAX];
};

/*
 * struct cl_rt_task - a runtime task: a runqueue task, a stack and a context.
 * Descriptors come from a per-CPU object cache (objcache.h) and keep their
 * stack mapping (guard page + stack) across reuse: an object handed out
 * again already has its stack, so a spawn on a warm cache makes no system
 * call and takes no shared lock. Returned to the cache when the task has
 * exited and has been joined (or was detached).
 */
struct cl_rt_task {
	CL_GROUPED_MEMBER(struct cl_task task); /* the runqueue's view (first) */
	struct cl__rt_ctx rc;              /* saved context */
	struct cl_runtime *rt;
	void *(*fn)(void *);
	void *arg;
	void *ret;
	/* a waker without a waiter record (a join, a spawn) reads w and writes
	 * state and rnode: one line to move, not also the saved context's */
	struct cl__rt_worker *w;           /* worker running it, or that last ran it */
	int state;                         /* CL__RT_*, written by the task, a local waker, or the
					    * worker that takes a remote wakeup off its list */
	int exited;                        /* 1 once DEAD and switched away (futex word) */
	int ext_joiner;                    /* a thread outside the runtime waits in cl_join() */
	int refs;                          /* 2 at spawn: running + handle */
	struct cl_rt_task *wake_next;      /* in its worker's wake_list (local wakeup) */
	struct cl__rt_wnode rnode;         /* in a worker's remote_wakes (cl__rt_wake()) */
	unsigned int ext_cpu;              /* queued from elsewhere: counted in the nr_ext_waiting
					    * of worker ext_cpu - 1 until it runs; 0: not */
	int stale_woken;                   /* woken while its rq's stale curr (rq lock) */
	int np;                            /* not preemptible while > 0 (cl__rt_np_inc()) */
	/* the kernel's wakee flips (record_wakee()): written by the task itself */
	unsigned int wakee_flips;          /* times its wakee changed, halved each second */
	struct cl_rt_task *last_wakee;
	uint64_t flips_decay_ns;
	int last_claimed;                  /* its last wakeup of last_wakee was a claim on its
					    * record (cl__rt_watch_claim()) */
	struct cl_ticketlock join_lock;    /* protects join_waiters, exited */
	struct cds_list_head join_waiters; /* struct cl__rt_waiter */
	/* its waiter record (cl__rt_wait_rec()) on a line of its own: a waker
	 * on another worker writes this line and no other of the task, and the
	 * record needs no aligned stack frame */
	struct cl__rt_waiter wait CL_ALIGNED(CL_CACHELINE_SIZE);
	/* kept while the object sits in the cache (not cleared by cl_spawn()) */
	struct cl__rt_keep {
		void *map;                 /* guard page + stack, or NULL for a new object */
		size_t map_size;
		unsigned int jgen;         /* generation << 1 | joined: see cl__rt_handle() */
		int checked;               /* its guard is a checked one (see stack.h) */
		struct cds_list_head all;  /* in rt->all: every object that got a stack */
#ifdef CL__RT_VALGRIND
		unsigned vg_stack;         /* valgrind's id of the stack */
#endif
	} keep;
	/* armed while it sleeps (cl_sleep_until()); after keep, so not
	 * cleared at spawn: arming sets all of it */
	struct cl__rt_timer timer;
	/* io_uring mode: fd + 1 of its last read of a socket that got fewer
	 * bytes than asked (0: none; set at spawn). In the padding after the
	 * timer: the object keeps its size */
	int io_drained;
};


/* What the next context must finish for the one that switched away. */
struct cl__rt_fin {
	struct cl__rt_ctx *from;           /* the context the switch saved */
	struct cl_rt_task *prev;
	struct cl_ticketlock *unlock;      /* a wait-list lock held across the switch */
	int mode;                          /* CL__RT_* switch kind */
};

/* One worker: a pinned thread serving one rq. */
struct cl__rt_worker {
	/* written by other threads (kick): on its own line */
	CL_GROUP_BEGIN_GUARDED(cl_rt_worker_idle);
	int sleeping;                      /* futex word: CL__RT_SLEEP_FUTEX or _IO while it sleeps or is about to */
	unsigned int idle_epoch;           /* bumped (by the worker) each time sleeping goes 1 -> 0 */
	int preempt_pending;               /* CL__RT_PP_*: set by the tick and by wakers */
	uintptr_t remote_wakes;            /* remote wakeups: a lock-free stack (cl__rt_wake_push()) */
	uint64_t wake_preempt_ns;          /* runtime clock from which a wakee may preempt the
					    * running task (its protected slice ends); 0: idle */
	CL_GROUP_END_GUARDED(cl_rt_worker_idle);
	struct cl_rt_task *wake_head;      /* local wakeups not yet enqueued (this thread only) */
	struct cl_rt_task **wake_tail;
	unsigned int nr_wakes;             /* entries on the wake list */
	int resched;                       /* an enqueue past the wake lists (a remote waker of a
					    * task still queued, a spawn): ends hand-off chains */
	unsigned int nr_ext_waiting;       /* tasks queued here from elsewhere, not yet run
					    * (struct cl_rt_task.ext_cpu; atomic) */
	struct cl_rt_task *buddy;          /* run next if eligible: set by the task switching out
					    * (join, exit), used by that switch (this thread only) */
	struct cl_rt_task *hint;           /* the same for the counterpart of a channel a task
					    * blocks on, which may have exited (cl__chan_hint()) */
	uint64_t chan_key;                 /* rt->serial << 16 | cpu: which worker of which
					    * instance last used a channel (cl__chan_note()) */
	struct cl__rt_waiter *watch_cand;  /* the record of the task that last blocked here: the
					    * one the idle spin watches (this thread only) */
	struct cl__rt_waiter *watching;    /* the record it watches from the switch that took it
					    * idle on (cl__rt_watch_idle()) (this thread only) */
	struct cl_rt_task *claimed;        /* woken on a watched record, queued by the next idle
					    * pick (this thread only) */
	struct cl__rt_ctx sched;           /* the worker thread's own stack: idle loop */
	struct cl_runtime *rt;
	struct cl_rq *rq;
	unsigned int cpu;                  /* rq index */
	int os_cpu;                        /* CPU the thread is pinned to, -1 unpinned */
	struct cl_rt_task *curr;           /* running task, NULL in the idle loop */
	int in_task;                       /* curr != NULL, for the tick (atomic) */
	unsigned long nr_switches;         /* bumped at each switch, read by the tick (atomic) */
	unsigned long tick_switches;       /* nr_switches at the tick's last look (tick thread) */
	unsigned int tick_quiet;           /* the tick's looks since that count last moved (tick thread) */
	uint64_t nr_preempts;              /* statistics: preempted by the signal ... */
	uint64_t nr_preempt_marks;         /* ... or at a runtime call after a mark */
	uint64_t nr_wake_preempts;         /* of those: by a wakee (EEVDF wakeup preemption) */
	uint64_t nr_oncpu_waits;           /* switches that waited for their context's save */
	struct cl__rt_fin fin;
	uint64_t now_ns;                   /* clock read at this worker's last switch */
	uint64_t tick_seen;                /* coarse (tick) clock at the last sampled read */
	uint64_t last_balance_ns;
	uint64_t idle_since;               /* clock when it last went idle, 0: not idle */
	uint64_t idle_seen;                /* the idle loop's last clock reading */
	uint64_t avg_idle_ns;              /* average idle period (1/8 new) */
	pthread_t thread;
	int started;
	uint64_t nr_idle_sleeps;           /* statistics */
	uint64_t nr_spin_hits;
	uint64_t nr_clock_reads;           /* precise clock reads at switches and idle picks */
	uint64_t nr_clock_skips;           /* switches and idle picks without a choice that kept
					    * the last reading */
	uint64_t nr_handoffs;              /* direct hand-offs (no rq lock) */
	uint64_t nr_stale_wakes;           /* remote wakeups of a task still queued (rq lock) */
	uint64_t nr_affine_wakes;          /* wakees of another worker moved here (wake-affine) */
	uint64_t nr_remote_drains;         /* remote wake lists taken over */
	uint64_t nr_watch_hits;            /* wakeups claimed on a watched record (idle spin) */
	uint64_t nr_idle_balances;         /* idle balancing passes made ... */
	uint64_t nr_idle_balance_skips;    /* ... and skipped at idle entry (short idles) */
	uint64_t nr_spin_skips;            /* idle spins not begun: half the workers spun ... */
	uint64_t nr_spin_long_idle;        /* ... or its idle periods were long */
	uint64_t nr_wakeps;                /* spins that found more than one task and woke a sleeper */
	uint64_t nr_timers_fired;          /* timers that expired here (timer.h) */
	uint64_t nr_timer_sleeps;          /* of nr_idle_sleeps: with a timeout, to the next timer */
	/* timers of the tasks that blocked here (timer.h), under timer_lock:
	 * this thread's and its tasks' but for a timed wait's disarm (the
	 * waker won) by its task elsewhere; the tick reads timer_next */
	struct cl_spinlock timer_lock;
	uint64_t timer_next;               /* CLOCK_MONOTONIC ns of the wheel's next event, or
					    * CL__RT_TIMER_NONE (atomic) */
	struct cl__rt_wheel wheel;
	/* I/O (iopoll.h) */
	struct io_uring *io_ring;          /* io_uring mode: this worker's ring (this thread submits) */
	int io_epfd;                       /* epoll mode: this worker's epoll instance */
	int io_evfd;                       /* eventfd a kick writes while it sleeps in I/O */
	uint64_t io_evbuf;                 /* io_uring mode: the eventfd read's buffer */
	unsigned int io_nr;                /* tasks parked in I/O here (atomic) */
	unsigned int io_sq_pending;        /* io_uring: prepared, not yet submitted */
	uint64_t io_sq_since;              /* io_uring: now_ns when the oldest of them was prepared */
	unsigned int io_gen;               /* io_uring: generation of the next operation */
	int io_cancel_all;                 /* io_uring: cancel every operation (shutdown; atomic) */
	struct cl__rt_iocancel *io_cancels; /* io_uring: cancels posted here (a lock-free stack) */
	uint64_t io_last_poll;             /* epoll: now_ns at its last look at a switch */
	uint64_t nr_io_waits;              /* statistics: I/O waits begun here ... */
	uint64_t nr_io_sleeps;             /* ... idle sleeps in the backend (of nr_idle_sleeps) */
};

/**
 * struct cl_runtime_attr - how to build a runtime (zeroed = defaults).
 * @nr_workers: workers to start (0: one per CPU the process may run on,
 *              or, under a cgroup CPU limit below that, the limit rounded
 *              up and at least 2, those unpinned: see cl_runtime_create());
 *              worker n is pinned to the n-th allowed CPU (wrapping).
 * @flags: CL_RUNTIME_UNPINNED (workers not pinned); CL_RUNTIME_PRECISE_CLOCK
 *         (read the clock at every switch, also at uncontended hand-offs);
 *         CL_RUNTIME_NO_WAKE_AFFINE (a wakee stays on the worker it blocked
 *         on; see docs/runtime.md, "Wake-affine").
 * @stack_size: usable stack per task (0: CL_RUNTIME_STACK_SIZE; else
 *              CL_RUNTIME_STACK_MIN..CL_RUNTIME_STACK_MAX).
 * @spin_ns: idle spin before a worker sleeps (0: CL_RUNTIME_SPIN_NS;
 *           CL_RUNTIME_NO_SPIN: sleep at once).
 * @balance_ns: periodic balancing interval (0: CL_RUNTIME_BALANCE_NS).
 * @migration_cost_ns: balancer's cache-hot window (0:
 *              CL_RUNTIME_MIGRATION_COST_NS; CL_RUNTIME_NEVER_HOT: none).
 * @guard_size: inaccessible region below each stack, rounded up to pages
 *              (0: CL_RUNTIME_GUARD_SIZE; at most CL_RUNTIME_STACK_MAX).
 *              Address space only: it is never committed.
 * @slice_ns: a task running this long without a switch is preempted (0:
 *              CL_RUNTIME_SLICE_NS; CL_RUNTIME_NO_PREEMPT in @flags: never).
 * @guard_mode: how the guard regions are made (enum cl_runtime_guard_mode;
 *              0: CL_RUNTIME_GUARD_AUTO; see stack.h and docs/runtime.md,
 *              "Stack guards"; cl_runtime_guard_mode() names the one in force).
 */
struct cl_runtime_attr {
	unsigned int nr_workers;
	unsigned int flags;
	size_t stack_size;
	uint64_t spin_ns;
	uint64_t balance_ns;
	uint64_t migration_cost_ns;
	size_t guard_size;
	uint64_t slice_ns;
	int guard_mode;
};

/* struct cl_runtime_attr.guard_mode (see cl__rt_guard_init() in stack.h). */
enum cl_runtime_guard_mode {
	CL_RUNTIME_GUARD_AUTO = 0,     /* markers, else mprotect within a mapping budget, then checked */
	CL_RUNTIME_GUARD_MARKERS = 1,  /* MADV_GUARD_INSTALL only (ENOSYS at create without it) */
	CL_RUNTIME_GUARD_MPROTECT = 2, /* mprotect(PROT_NONE) always (spawn: ENOMEM at the map limit) */
	CL_RUNTIME_GUARD_CHECKED = 3   /* a writable reserve: stack pointer checks, an exit probe */
};

#define CL_RUNTIME_UNPINNED 0x1u
#define CL_RUNTIME_PRECISE_CLOCK 0x2u
/* No SIGSEGV handler naming the task whose stack overflowed (see
 * cl_runtime_create()). */
#define CL_RUNTIME_NO_OVERFLOW_REPORT 0x4u
/* No preemption: tasks run until they block or yield (the tick thread then
 * only times the idle balancer's kicks, with 2 workers or more). */
#define CL_RUNTIME_NO_PREEMPT 0x8u
/* No wake-affine moves: a task woken by a task of another worker always
 * runs where it blocked (see cl__rt_wake_affine()). */
#define CL_RUNTIME_NO_WAKE_AFFINE 0x10u
#define CL_RUNTIME_NO_SPIN UINT64_MAX
#define CL_RUNTIME_NEVER_HOT UINT64_MAX

/**
 * struct cl_spawn_attr - how to start a task (NULL or zeroed = defaults:
 * every field's 0 is its default).
 * @tg: task group (NULL: the root group).
 * @worker: CL_SPAWN_WORKER(n) to queue it on worker n first; 0: the
 *          caller's worker inside a task, round robin from outside.
 * @pin: nonzero: the task may only run on the worker @worker names (the
 *       balancer keeps it there); needs @worker.
 * @nice: -20..19 (0: the default weight).
 * @detached: nonzero: no cl_join(); freed when it returns.
 */
struct cl_spawn_attr {
	struct cl_task_group *tg;
	int worker;
	int pin;
	int nice;
	int detached;
};

/* struct cl_spawn_attr.worker for worker @n (0 stays free for "default"). */
#define CL_SPAWN_WORKER(n) ((int)(n) + 1)

struct cl_runtime {
	struct cl_sched *sched;
	unsigned int nr_workers;
	uint64_t serial;                   /* this instance among all the process made (nonzero) */
	struct cl__rt_worker *workers;     /* nr_workers, each on its own lines */
	unsigned long *pin_masks;          /* worker n's one-bit mask at n * mask_words */
	unsigned int mask_words;
	size_t stack_size;
	uint64_t spin_ns;
	uint64_t balance_ns;
	int stop;                          /* workers leave their loop */
	int closing;                       /* a cl_runtime_shutdown() began: outside spawns fail */
	int spawning;                      /* outside spawns between admission and enqueue */
	int shut;                          /* futex word: CL__RT_UP, _STOPPING (one caller stops
					    * the workers) or _SHUT */
	unsigned long live;                /* tasks spawned and not yet returned */
	int quiesce_seq;                   /* futex word: bumped when live hits 0 or a worker sleeps */
	int shutdown_waiting;              /* cl_runtime_shutdown() callers waiting */
	/* per-switch clock: TSC scaled to ns when constant and non-stop, else clock_gettime */
	int precise_clock;                 /* read it at every switch (no tick sampling) */
	int use_ticks;
	uint64_t ticks_base;
	uint64_t ns_base;
	uint64_t ns_per_tick_q32;          /* ns per tick, 32.32 fixed point */
	unsigned int next_spawn;           /* round robin for outside spawns */
	struct cl_objcache *tcache;        /* task descriptors (with their stacks) */
	struct cl_spinlock all_lock;       /* protects all and the batches */
	struct cds_list_head all;          /* every descriptor that has a stack slot */
	size_t guard_size;                 /* below each stack, page-rounded */
	int guard_mode;                    /* CL__RT_GUARD_*: how slots get their guard (stack.h) */
	long guard_budget;                 /* mprotect guards left before checked ones (atomic) */
	int no_overflow_report;            /* CL_RUNTIME_NO_OVERFLOW_REPORT */
	int wake_affine;                   /* not CL_RUNTIME_NO_WAKE_AFFINE */
	char *batch_next;                  /* next free slot of the newest batch */
	unsigned int batch_left;           /* free slots there */
	unsigned int nr_batches, cap_batches;
	void **batches;                    /* every batch mapping (munmap at destroy) */
	uint64_t slice_ns;                 /* preemption slice, 0: none */
	int preempt_signal;                /* the tick signals workers (else: marks only) */
	int tick_stop;                     /* futex word: the tick thread leaves */
	int tick_parked;                   /* futex word: 1 while the tick sleeps with every
					    * worker asleep (preempt.h) */
	int tick_started;
	pthread_t tick_thread;
	uint64_t nr_tick_parks;            /* statistics: the tick parked (tick thread) */
	uint64_t nr_balance_kicks;         /* ... it woke a sleeping worker to balance */
	int io_mode;                       /* CL__RT_IO_URING or CL__RT_IO_EPOLL (iopoll.h) */
	struct cl__rt_iobucket *io_buckets; /* CL__RT_IO_BUCKETS: tasks waiting on fds */
	struct cl__rt_bpool *bpool;        /* cl_blocking()'s helper threads (blocking.h; atomic) */
	unsigned long nr_blocking;         /* tasks in cl_blocking() (atomic) */
	/* workers in an idle spin without a watch (atomic; worker.h): written at
	 * idle transitions, so kept off the lines every switch reads (the
	 * clock's, slice_ns) by padding on both sides, whatever the alignment */
	char spin_pad[CL_FALSE_SHARING_SIZE];
	unsigned int nr_spinning;
	char spin_pad_end[CL_FALSE_SHARING_SIZE - sizeof(unsigned int)];
};

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_TYPES_H */
