/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/core.h - the M:N runtime's core: workers, tasks,
 * context switches, and the wake-to-run protocol. Included by
 * <cachelocal/sched/runtime.h> (which adds the blocking primitives); the
 * model and the protocol are described there and in docs/runtime.md.
 *
 * Every call into the runqueue core (rq.h, fair.h, group.h, balance.h) is
 * in this file, in four places: cl__rt_enqueue_wake() (wake and spawn),
 * cl__rt_schedule() (block, yield, exit), cl__rt_worker_pick() (the idle
 * loop) and cl__rt_balance() (periodic and idle balancing).
 */
#ifndef CACHELOCAL_SCHED_RUNTIME_CORE_H
#define CACHELOCAL_SCHED_RUNTIME_CORE_H

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
/* Preemption: a task that has run this long (ns) without a switch is
 * preempted within one more (struct cl_runtime_attr.slice_ns). */
#ifndef CL_RUNTIME_SLICE_NS
#define CL_RUNTIME_SLICE_NS 2000000ULL
#endif
/* The signal the tick sends to preempt (SIGURG, as Go's runtime: ignored by
 * default, so a stray one harms nothing). Used only if the application has
 * no handler for it. */
#ifndef CL_RUNTIME_PREEMPT_SIGNAL
#define CL_RUNTIME_PREEMPT_SIGNAL SIGURG
#endif

/* An idle worker spins this long (ns) for work before it sleeps on its futex. */
#define CL_RUNTIME_SPIN_NS 50000ULL
/* Periodic balancing interval (ns) of a busy worker; an idle sleeping worker
 * wakes this often to try an idle balance. */
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

struct cl_runtime;
struct cl__rt_worker;

/* A context the runtime can switch to: a task's or a worker's own stack. */
struct cl__rt_ctx {
	struct cl__ctx ctx;
	void *tsan_fiber;
	void *asan_fake;
	const void *stack_lo;
	size_t stack_size;
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
	struct cl__rt_worker *w;           /* worker running it, or that last ran it */
	void *(*fn)(void *);
	void *arg;
	void *ret;
	int state;                         /* CL__RT_*, written by the task and its waker */
	int exited;                        /* 1 once DEAD and switched away (futex word) */
	int ext_joiner;                    /* a thread outside the runtime waits in cl_join() */
	int refs;                          /* 2 at spawn: running + handle */
	struct cl_rt_task *wake_next;      /* in its worker's wake_list (local wakeup) */
	struct cl_rt_task *remote_next;    /* in a worker's remote_wakes */
	int stale_woken;                   /* woken while its rq's stale curr (rq lock) */
	int np;                            /* not preemptible while > 0 (cl__rt_np_inc()) */
	struct cl_spinlock join_lock;      /* protects join_waiters, exited */
	struct cds_list_head join_waiters; /* struct cl__rt_waiter */
	/* kept while the object sits in the cache (not cleared by cl_spawn()) */
	struct cl__rt_keep {
		void *map;                 /* guard page + stack, or NULL for a new object */
		size_t map_size;
		unsigned int jgen;         /* generation << 1 | joined: see cl__rt_handle() */
		struct cds_list_head all;  /* in rt->all: every object that got a stack */
#ifdef CL__RT_VALGRIND
		unsigned vg_stack;         /* valgrind's id of the stack */
#endif
	} keep;
};

/*
 * struct cl__rt_waiter - one blocked task on a wait list, on the blocked
 * task's own stack. @data and @status are the primitive's (message slot,
 * result); written by the waker before it wakes the task.
 */
struct cl__rt_waiter {
	struct cds_list_head node;
	struct cl_rt_task *t;
	void *data;
	int status;
};

/* What the next context must finish for the one that switched away. */
struct cl__rt_fin {
	struct cl_rt_task *prev;
	struct cl_spinlock *unlock;        /* a wait-list lock held across the switch */
	int mode;                          /* CL__RT_* switch kind */
};

/* One worker: a pinned thread serving one rq. */
struct cl__rt_worker {
	/* written by other threads (kick): on its own line */
	CL_GROUP_BEGIN_GUARDED(cl_rt_worker_idle);
	int sleeping;                      /* futex word: 1 while it sleeps or is about to */
	unsigned int idle_epoch;           /* bumped (by the worker) each time sleeping goes 1 -> 0 */
	int preempt_pending;               /* set by the tick: the running task used its slice */
	struct cl_rt_task *remote_wakes;   /* remote wakeups: a lock-free stack (cl__rt_wake()) */
	CL_GROUP_END_GUARDED(cl_rt_worker_idle);
	struct cl_rt_task *wake_head;      /* local wakeups not yet enqueued (this thread only) */
	struct cl_rt_task **wake_tail;
	unsigned int nr_wakes;             /* entries on the wake list */
	int resched;                       /* a remote waker found its task still queued (hand-off) */
	struct cl__rt_ctx sched;           /* the worker thread's own stack: idle loop */
	struct cl_runtime *rt;
	struct cl_rq *rq;
	unsigned int cpu;                  /* rq index */
	int os_cpu;                        /* CPU the thread is pinned to, -1 unpinned */
	struct cl_rt_task *curr;           /* running task, NULL in the idle loop */
	int in_task;                       /* curr != NULL, for the tick (atomic) */
	unsigned long nr_switches;         /* bumped at each switch, read by the tick (atomic) */
	unsigned long tick_switches;       /* nr_switches at the tick's last look (tick thread) */
	uint64_t nr_preempts;              /* statistics: preempted by the signal ... */
	uint64_t nr_preempt_marks;         /* ... or at a runtime call after a mark */
	struct cl__rt_fin fin;
	uint64_t now_ns;                   /* clock read at this worker's last switch */
	uint64_t tick_seen;                /* coarse (tick) clock at the last sampled read */
	uint64_t last_balance_ns;
	pthread_t thread;
	int started;
	uint64_t nr_idle_sleeps;           /* statistics */
	uint64_t nr_spin_hits;
	uint64_t nr_clock_reads;           /* precise clock reads at switches */
	uint64_t nr_clock_skips;           /* hand-off switches that kept the last reading */
	uint64_t nr_handoffs;              /* direct hand-offs (no rq lock) */
	uint64_t nr_stale_wakes;           /* remote wakeups of a task still queued (rq lock) */
	uint64_t nr_remote_drains;         /* remote wake lists taken over */
};

/**
 * struct cl_runtime_attr - how to build a runtime (zeroed = defaults).
 * @nr_workers: workers to start (0: one per CPU the process may run on);
 *              worker n is pinned to the n-th allowed CPU (wrapping).
 * @flags: CL_RUNTIME_UNPINNED (workers not pinned); CL_RUNTIME_PRECISE_CLOCK
 *         (read the clock at every switch, also at uncontended hand-offs).
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
};

#define CL_RUNTIME_UNPINNED 0x1u
#define CL_RUNTIME_PRECISE_CLOCK 0x2u
/* No SIGSEGV handler naming the task whose stack overflowed (see
 * cl_runtime_create()). */
#define CL_RUNTIME_NO_OVERFLOW_REPORT 0x4u
/* No preemption: tasks run until they block or yield (no tick thread). */
#define CL_RUNTIME_NO_PREEMPT 0x8u
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
	int guard_mprotect;                /* MADV_GUARD_INSTALL refused: guards by mprotect */
	int no_overflow_report;            /* CL_RUNTIME_NO_OVERFLOW_REPORT */
	char *batch_next;                  /* next free slot of the newest batch */
	unsigned int batch_left;           /* free slots there */
	unsigned int nr_batches, cap_batches;
	void **batches;                    /* every batch mapping (munmap at destroy) */
	uint64_t slice_ns;                 /* preemption slice, 0: none */
	int preempt_signal;                /* the tick signals workers (else: marks only) */
	int tick_stop;                     /* futex word: the tick thread leaves */
	int tick_started;
	pthread_t tick_thread;
};

/* The task running on this thread, NULL outside the runtime's tasks. */
CL_WEAK __thread struct cl_rt_task *cl__rt_tls_current;

/*
 * Read the current task through a call the compiler cannot see through:
 * a task may resume on another worker thread, and a TLS address computed
 * before a switch must not be reused after it.
 */
CL_NOINLINE CL_UNUSED static struct cl_rt_task *cl__rt_current(void)
{
	struct cl_rt_task *t = cl__rt_tls_current;

	CL_BARRIER();
	return t;
}

/* One byte per thread: its address identifies a thread outside the tasks. */
CL_WEAK __thread char cl__rt_tls_thread_id;

/* Who is calling (a mutex owner): the task, or the thread outside tasks. */
CL_INLINE const void *cl__rt_caller_id(void)
{
	const struct cl_rt_task *self = cl__rt_current();

	return self ? (const void *)self : (const void *)&cl__rt_tls_thread_id;
}

/* ---- preemption: the non-preemptible count ---- */

/*
 * struct cl_rt_task.np counts why the task may not be preempted now: a
 * runtime lock it holds (cl__rt_lock()), a runtime call under way, or
 * cl_preempt_disable(). Only the task itself changes it (from its code or
 * from the preemption signal handler on its thread), so plain accesses
 * with compiler barriers suffice. A preemption found not safe leaves the
 * worker's preempt_pending set, and the task yields when its count next
 * drops to 0 (cl__rt_np_exit()): "the next runtime call yields".
 */
CL_INLINE void cl__rt_np_inc(struct cl_rt_task *t)
{
	CL_WRITE_ONCE(t->np, t->np + 1);
	CL_BARRIER();
}

CL_INLINE void cl__rt_preempt_yield(struct cl_rt_task *t);

CL_INLINE void cl__rt_np_exit(struct cl_rt_task *t)
{
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
	if (CL_UNLIKELY(!t->np && CL_ATOMIC_LOAD(&t->w->preempt_pending, CL_RELAXED)))
		cl__rt_preempt_yield(t);
}

/* The calling task, made non-preemptible; NULL outside tasks. */
CL_INLINE struct cl_rt_task *cl__rt_np_enter(void)
{
	struct cl_rt_task *t = cl__rt_current();

	if (t)
		cl__rt_np_inc(t);
	return t;
}

/* A runtime lock: the holder is not preempted until it releases it. */
CL_INLINE void cl__rt_lock(struct cl_spinlock *l)
{
	(void)cl__rt_np_enter();
	cl_spin_lock(l);
}

CL_INLINE void cl__rt_unlock(struct cl_spinlock *l)
{
	struct cl_rt_task *t;

	cl_spin_unlock(l);
	t = cl__rt_current();
	if (t)
		cl__rt_np_exit(t);
}

/* ---- futex and clock ---- */

CL_INLINE long cl__rt_futex(int *addr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, addr, op | 128 /* FUTEX_PRIVATE_FLAG */, val, ts, NULL, 0);
}
#define CL__FUTEX_WAIT 0
#define CL__FUTEX_WAKE 1

#ifdef CL__CTX_HAVE_TICKS
__extension__ typedef unsigned __int128 cl__u128;
#endif

/* The runtime's clock in ns (monotonic; the rq clocks and balancing use it). */
CL_ALWAYS_INLINE uint64_t cl__rt_now_real(const struct cl_runtime *rt)
{
#ifdef CL__CTX_HAVE_TICKS
	if (CL_LIKELY(rt->use_ticks)) {
		cl__u128 d = (cl__u128)(cl__ctx_ticks() - rt->ticks_base);

		return rt->ns_base + (uint64_t)((d * rt->ns_per_tick_q32) >> 32);
	}
#else
	(void)rt;
#endif
	return (uint64_t)cl__now_ns();
}

/* ... as seen through the test hook CL_RUNTIME_CLOCK() (config.h; default: as is). */
CL_ALWAYS_INLINE uint64_t cl__rt_now(const struct cl_runtime *rt)
{
	return CL_RUNTIME_CLOCK(cl__rt_now_real(rt));
}

/* CLOCK_MONOTONIC_COARSE (Linux): the time of the last kernel tick, read
 * from the vDSO without touching the TSC. */
#define CL__CLOCK_MONOTONIC_COARSE 6
#if !defined(__cplusplus) && !defined(__USE_POSIX199309)
extern int clock_getres(__clockid_t clock_id, struct timespec *res); /* strict C11: not declared */
#endif

/* The kernel's tick clock in ns: a cheap "has a tick passed since" test
 * (through the test hook CL_RUNTIME_TICK_CLOCK(), config.h). */
CL_ALWAYS_INLINE uint64_t cl__rt_tick_ns(void)
{
	struct timespec ts;

	clock_gettime(CL__CLOCK_MONOTONIC_COARSE, &ts);
	return CL_RUNTIME_TICK_CLOCK((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

/*
 * cl__rt_clock_init() - use the TSC if /proc/cpuinfo lists constant_tsc and
 * nonstop_tsc: calibrate it against CLOCK_MONOTONIC over 2 ms.
 */
CL_INLINE void cl__rt_clock_init(struct cl_runtime *rt)
{
#ifdef CL__CTX_HAVE_TICKS
	char line[4096];
	int constant = 0, nonstop = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	uint64_t t0, n0, t1, n1;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && !(constant && nonstop)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	if (!constant || !nonstop)
		return;
	n0 = (uint64_t)cl__now_ns();
	t0 = cl__ctx_ticks();
	do
		n1 = (uint64_t)cl__now_ns();
	while (n1 - n0 < 2000000ULL);
	t1 = cl__ctx_ticks();
	if (t1 <= t0)
		return;
	rt->ns_per_tick_q32 = (uint64_t)(((cl__u128)(n1 - n0) << 32) / (t1 - t0));
	rt->ticks_base = t1;
	rt->ns_base = n1;
	rt->use_ticks = rt->ns_per_tick_q32 != 0;
#else
	(void)rt;
#endif
}

/*
 * cl__rt_clock_sampling_ok() - may hand-offs sample the clock at the tick?
 * Only if the coarse clock exists and ticks at least every 10 ms (HZ >=
 * 100): its resolution bounds how long a charge may be deferred.
 */
CL_INLINE int cl__rt_clock_sampling_ok(void)
{
	struct timespec res;

	if (clock_getres(CL__CLOCK_MONOTONIC_COARSE, &res) != 0)
		return 0;
	return res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10000000L;
}

/* ---- live tasks (shutdown) ---- */

/* Tell a waiting cl_runtime_shutdown() to look again. */
CL_INLINE void cl__rt_poke_shutdown(struct cl_runtime *rt)
{
	if (CL_ATOMIC_LOAD(&rt->shutdown_waiting, CL_SEQ_CST)) {
		CL_ATOMIC_FETCH_ADD(&rt->quiesce_seq, 1, CL_SEQ_CST);
		cl__rt_futex(&rt->quiesce_seq, CL__FUTEX_WAKE, INT_MAX, NULL);
	}
}

CL_INLINE void cl__rt_live_add(struct cl_runtime *rt, long delta)
{
	if (CL_ATOMIC_FETCH_ADD(&rt->live, (unsigned long)delta, CL_SEQ_CST) + (unsigned long)delta == 0)
		cl__rt_poke_shutdown(rt);
}

/* ---- stacks ---- */

CL_INLINE size_t cl__rt_page(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (size_t)p : 4096u;
}

/*
 * Stacks come in batches: one mapping of at most CL__RT_BATCH_SLOTS slots
 * (and CL__RT_BATCH_BYTES; at least one slot), each slot a guard region
 * then a stack, mapped MAP_NORESERVE and untouched until a task runs on
 * it, so a slot costs address space, not memory. The guard is made
 * inaccessible with MADV_GUARD_INSTALL (Linux >= 6.13: page-table markers,
 * no new mapping), so a batch stays one mapping whatever its slot count;
 * older kernels refuse it, and the guard is then mprotect(PROT_NONE)ed,
 * which splits the batch into two mappings per slot (the live-task limit is
 * then about vm.max_map_count / 2). A slot stays with its descriptor in
 * the cache; the batches are unmapped at destroy.
 */
#define CL__RT_BATCH_SLOTS 64u
#define CL__RT_BATCH_BYTES ((size_t)256 << 20)
#define CL__MADV_GUARD_INSTALL 102

/* Slot size: guard + page-rounded stack (both bounded at create). */
CL_INLINE size_t cl__rt_slot_size(const struct cl_runtime *rt)
{
	size_t pg = cl__rt_page();

	return rt->guard_size + ((rt->stack_size + pg - 1) & ~(pg - 1));
}

CL_INLINE size_t cl__rt_batch_slots(const struct cl_runtime *rt)
{
	size_t n = CL__RT_BATCH_BYTES / cl__rt_slot_size(rt);

	return n > CL__RT_BATCH_SLOTS ? CL__RT_BATCH_SLOTS : n ? n : 1;
}

/* Next free slot, a new batch mapped if needed; NULL if out of memory. */
CL_INLINE char *cl__rt_slot_take(struct cl_runtime *rt)
{
	size_t slot = cl__rt_slot_size(rt), n = cl__rt_batch_slots(rt);
	char *m;

	cl_spin_lock(&rt->all_lock);
	if (!rt->batch_left) {
		cl_spin_unlock(&rt->all_lock); /* no system call under a spinlock */
		m = (char *)mmap(NULL, n * slot, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | CL__MAP_ANONYMOUS | CL__MAP_NORESERVE, -1, 0);
		if (m == (char *)MAP_FAILED)
			return NULL;
		cl_spin_lock(&rt->all_lock);
		if (rt->nr_batches == rt->cap_batches) {
			unsigned int cap = rt->cap_batches ? 2 * rt->cap_batches : 16;
			void **grown = (void **)realloc(rt->batches, cap * sizeof(void *));

			if (!grown) {
				cl_spin_unlock(&rt->all_lock);
				munmap(m, n * slot);
				return NULL;
			}
			rt->batches = grown;
			rt->cap_batches = cap;
		}
		rt->batches[rt->nr_batches++] = m;
		/* if another spawn mapped one meanwhile, the rest of that one stays unused */
		rt->batch_next = m;
		rt->batch_left = (unsigned int)n;
	}
	m = rt->batch_next;
	rt->batch_next += slot;
	rt->batch_left--;
	cl_spin_unlock(&rt->all_lock);
	return m;
}

/* Make [@lo, @lo + @len) inaccessible: guard markers, else PROT_NONE. */
CL_INLINE int cl__rt_guard(struct cl_runtime *rt, void *lo, size_t len)
{
	if (!CL_ATOMIC_LOAD(&rt->guard_mprotect, CL_RELAXED)) {
		if (madvise(lo, len, CL__MADV_GUARD_INSTALL) == 0)
			return 0;
		CL_ATOMIC_STORE(&rt->guard_mprotect, 1, CL_RELAXED); /* EINVAL: kernel < 6.13 */
	}
	return mprotect(lo, len, PROT_NONE);
}

/* Give @t (a new cache object) its stack slot, the guard region below it. */
CL_INLINE int cl__rt_stack_map(struct cl_runtime *rt, struct cl_rt_task *t)
{
	size_t size = cl__rt_slot_size(rt);
	char *m = cl__rt_slot_take(rt);

	if (!m || cl__rt_guard(rt, m, rt->guard_size) != 0)
		return -1; /* (a slot without its guard is left unused) */
	t->keep.map = m;
	t->keep.map_size = size;
	t->keep.jgen = 1u << 1; /* generation 1 */
#ifdef CL__RT_VALGRIND
	t->keep.vg_stack = VALGRIND_STACK_REGISTER(m + rt->guard_size, m + size);
#endif
	cl_spin_lock(&rt->all_lock);
	cds_list_add(&t->keep.all, &rt->all);
	cl_spin_unlock(&rt->all_lock);
	return 0;
}

/* A task leaving for good (returned) detaches from its task group, which
 * counts its attached tasks. */
CL_INLINE void cl__rt_task_detach(struct cl_rt_task *t)
{
	struct cl_rq *rq;

	if (!t->task.tg)
		return;
	rq = cl_task_rq_lock(t->rt->sched, &t->task);
	cl_task_set_group(&t->task, NULL);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
}

/*
 * Handles. cl_spawn() returns a handle, not the descriptor's address: the
 * address with the descriptor's generation in its spare bits (the top 16
 * on 64-bit, where user addresses stay below 2^48; the low 6 on 32-bit,
 * descriptors being 64-byte aligned). A descriptor's generation changes
 * each time it goes back to the cache, so a handle kept past its join
 * names a generation that is gone, and cl_join() refuses it (EINVAL)
 * instead of joining whatever task got the descriptor since. keep.jgen
 * holds generation << 1 | joined in one word, so that one CAS claims the
 * join of exactly that generation (a detached task starts joined).
 * Generations run 1..CL__RT_GEN_MASK: a plain task pointer (cl_self())
 * never matches. A stale handle is told apart until its descriptor was
 * reused CL__RT_GEN_MASK times.
 */
#if UINTPTR_MAX > 0xffffffffu
#define CL__RT_GEN_SHIFT 48
#define CL__RT_GEN_MASK 0xffffu
#else
#define CL__RT_GEN_SHIFT 0
#define CL__RT_GEN_MASK 0x3fu
#endif

CL_INLINE struct cl_rt_task *cl__rt_handle(struct cl_rt_task *t, unsigned int gen)
{
	return (struct cl_rt_task *)((uintptr_t)t | ((uintptr_t)gen << CL__RT_GEN_SHIFT));
}

CL_INLINE struct cl_rt_task *cl__rt_handle_task(const struct cl_rt_task *h)
{
	return (struct cl_rt_task *)((uintptr_t)h & ~((uintptr_t)CL__RT_GEN_MASK << CL__RT_GEN_SHIFT));
}

CL_INLINE unsigned int cl__rt_handle_gen(const struct cl_rt_task *h)
{
	return (unsigned int)(((uintptr_t)h >> CL__RT_GEN_SHIFT) & CL__RT_GEN_MASK);
}

/* Give @t back to the cache (its stack stays with it); its handles die. */
CL_INLINE void cl__rt_task_release(struct cl_rt_task *t)
{
	unsigned int gen = (CL_ATOMIC_LOAD(&t->keep.jgen, CL_RELAXED) >> 1) % CL__RT_GEN_MASK + 1;

	CL_ATOMIC_STORE(&t->keep.jgen, gen << 1, CL_RELEASE);
#ifdef CL_HAVE_TSAN
	if (t->rc.tsan_fiber)
		__tsan_destroy_fiber(t->rc.tsan_fiber);
	t->rc.tsan_fiber = NULL;
#endif
#ifdef CL__RT_ASAN
	/* frames that never returned left redzones on the stack */
	__asan_unpoison_memory_region((char *)t->keep.map + t->rt->guard_size,
				      t->keep.map_size - t->rt->guard_size);
#endif
	cl_objcache_free(t->rt->tcache, t);
}

/* Drop one reference of @t; the last one releases it. */
CL_INLINE void cl__rt_task_put(struct cl_rt_task *t)
{
	if (CL_ATOMIC_FETCH_SUB(&t->refs, 1, CL_ACQ_REL) == 1)
		cl__rt_task_release(t);
}

/* ---- switching ---- */

/*
 * cl__rt_switch() - suspend @from, resume @to on worker @w (same thread).
 * Returns, in @from, the worker that resumed it. @exiting: @from never
 * resumes (ASan drops its fake stack).
 */
CL_INLINE struct cl__rt_worker *cl__rt_switch(struct cl__rt_worker *w, struct cl__rt_ctx *from,
					      struct cl__rt_ctx *to, int exiting)
{
	void *r;

#ifdef CL_HAVE_TSAN
	__tsan_switch_to_fiber(to->tsan_fiber, 0);
#endif
#ifdef CL__RT_ASAN
	__sanitizer_start_switch_fiber(exiting ? NULL : &from->asan_fake, to->stack_lo, to->stack_size);
#else
	(void)exiting;
#endif
	r = cl__ctx_switch(&from->ctx, &to->ctx, w);
#ifdef CL__RT_ASAN
	__sanitizer_finish_switch_fiber(from->asan_fake, NULL, NULL);
#endif
	return (struct cl__rt_worker *)r;
}

CL_INLINE void cl__rt_wake_waiters(struct cds_list_head *list);

/*
 * cl__rt_finish() - run first by whatever context a switch resumes, on
 * worker @w: release what the previous context held across the switch
 * (the rq lock, its wait-list lock) and retire it if it exited.
 */
CL_INLINE void cl__rt_finish(struct cl__rt_worker *w)
{
	struct cl_rt_task *prev = w->fin.prev;
	struct cl_spinlock *unlock = w->fin.unlock;
	int mode = w->fin.mode;

	w->fin.prev = NULL;
	w->fin.unlock = NULL;
	if (mode != CL__RT_HANDOFF)
		cl__rq_unlock(w->rq);
	if (unlock)
		cl_spin_unlock(unlock);
	if (prev && mode == CL__RT_EXIT) {
		struct cds_list_head waiters;

		CDS_INIT_LIST_HEAD(&waiters);
		cl__rt_task_detach(prev); /* before a joiner can see it exited */
		cl_spin_lock(&prev->join_lock);
		CL_ATOMIC_STORE(&prev->exited, 1, CL_SEQ_CST);
		cds_list_splice(&prev->join_waiters, &waiters);
		CDS_INIT_LIST_HEAD(&prev->join_waiters);
		cl_spin_unlock(&prev->join_lock);
		if (CL_ATOMIC_LOAD(&prev->ext_joiner, CL_SEQ_CST))
			cl__rt_futex(&prev->exited, CL__FUTEX_WAKE, INT_MAX, NULL);
		cl__rt_wake_waiters(&waiters);
		cl__rt_live_add(w->rt, -1);
		cl__rt_task_put(prev);
	}
}

/* Make @t the worker's current task (before switching to it). */
CL_INLINE void cl__rt_set_curr(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	w->curr = t;
	t->w = w;
	cl__rt_tls_current = t;
	/* a new slice: for the tick (cl__rt_tick_main()) */
	CL_ATOMIC_STORE(&w->nr_switches, w->nr_switches + 1, CL_RELAXED);
	if (CL_UNLIKELY(!w->in_task))
		CL_ATOMIC_STORE(&w->in_task, 1, CL_RELAXED);
	if (CL_UNLIKELY(CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED)))
		CL_ATOMIC_STORE(&w->preempt_pending, 0, CL_RELAXED);
}

CL_INLINE void cl__rt_balance(struct cl__rt_worker *w, uint64_t now);

/*
 * Remote wake list (the kernel's TTWU_QUEUE). A waker on another worker,
 * or outside the runtime, does not take @w's rq lock: it pushes the task on
 * @w->remote_wakes (a lock-free stack on the line of @w's `sleeping` word)
 * and kicks @w only if it sleeps (cl__rt_wake_remote()). @w takes the whole
 * stack with one exchange at its next switch or idle-loop pick, under its
 * own rq lock, and appends it in wake order to its local wake list, which
 * the same switch then enqueues. A wakeup thus moves one line to the
 * waker's CPU and back, instead of the rq lock, the rq and the entity.
 * Against a lost wakeup: the waker pushes, then reads `sleeping`; the
 * worker sets `sleeping`, then reads the stack (both sequentially
 * consistent), so one of them sees the other.
 */
CL_INLINE int cl__rt_remote_pending(struct cl__rt_worker *w)
{
	return CL_ATOMIC_LOAD(&w->remote_wakes, CL_RELAXED) != NULL;
}

/* Move @w's remote wakeups to its local wake list. Context: @w's thread, rq lock. */
CL_INLINE void cl__rt_drain_remote(struct cl__rt_worker *w)
{
	struct cl_rt_task *t, *fifo = NULL;

	if (CL_LIKELY(!cl__rt_remote_pending(w)))
		return;
	t = CL_ATOMIC_XCHG(&w->remote_wakes, (struct cl_rt_task *)NULL, CL_ACQUIRE);
	w->nr_remote_drains++;
	while (t) { /* the stack is newest first */
		struct cl_rt_task *n = t->remote_next;

		t->remote_next = fifo;
		fifo = t;
		t = n;
	}
	for (t = fifo; t; t = t->remote_next) {
		t->wake_next = NULL;
		*w->wake_tail = t;
		w->wake_tail = &t->wake_next;
		w->nr_wakes++;
	}
}

/* Enqueue the local wakeups @w deferred (cl__rt_wake()). Context: @w's rq lock. */
CL_INLINE void cl__rt_flush_wakes(struct cl__rt_worker *w)
{
	struct cl_rt_task *t = w->wake_head;

	if (CL_LIKELY(!t))
		return;
	w->wake_head = NULL;
	w->wake_tail = &w->wake_head;
	w->nr_wakes = 0;
	while (t) {
		struct cl_rt_task *n = t->wake_next;

		t->wake_next = NULL;
		if (!t->task.on_rq) /* else: the rq's stale curr of a hand-off chain, still queued */
			cl_rq_enqueue(w->rq, &t->task, CL_ENQUEUE_WAKEUP);
		t = n;
	}
}

/*
 * Direct hand-off. An uncontended hand-off within the same tick (see
 * cl__rt_schedule(): the clock stands still, so the fair class would
 * charge nothing) is done without the rq lock and without touching the rq:
 * @self blocks and the worker switches straight to the one task on its
 * wake list. The rq keeps the task it last picked as its curr (queued,
 * on_cpu), although that task may now be blocked, and knows nothing of the
 * wakee. A chain of such hand-offs (a ping-pong pair) takes no rq lock at
 * all: per round trip two locked instructions fewer than the full switch.
 *
 * Why that is safe:
 *  - Nothing else changes the rq's view of these tasks: the balancer never
 *    moves an rq's curr and never sees a task that is not queued; the
 *    handed-to task runs, so nobody can wake it.
 *  - A remote waker of the rq's stale curr (blocked, but still queued) takes
 *    the rq lock, finds it queued, records that (stale_woken) and sets the
 *    worker's `resched` flag instead of enqueueing it; a remote wakeup of any other
 *    task raises nr_running. Either stops the chain at its next switch (the
 *    fast path requires nr_running == 1 and no resched), which then takes
 *    the rq lock and brings the rq up to date first (cl__rt_handoff_sync()).
 *    A chain that ends (its last task blocks with nothing on the wake list)
 *    also takes the full path, so no wakeup waits on a chain that stopped.
 *  - The rq lock still orders the worker's sleep against remote wakers: a
 *    worker only goes idle through the full path.
 *  - The wait-list lock @unlock is released by the next context as before
 *    (the blocked task's context is saved before a waker can find it).
 * Only tasks of the root group take it (a group on the way could be
 * throttled, which only the full path handles); any other switch is full.
 */
CL_INLINE int cl__rt_can_hand_off(struct cl__rt_worker *w, struct cl_rt_task *self, int mode)
{
	return mode == CL__RT_BLOCK && w->nr_wakes == 1 && !self->task.tg && !w->wake_head->task.tg &&
	       CL_READ_ONCE(w->rq->nr_running) == 1 && !CL_READ_ONCE(w->resched) &&
	       !cl__rt_remote_pending(w);
}

CL_INLINE void cl__rt_hand_off(struct cl__rt_worker *w, struct cl_rt_task *self,
			       struct cl_spinlock *unlock)
{
	struct cl_rt_task *n = w->wake_head;

	w->wake_head = NULL;
	w->wake_tail = &w->wake_head;
	w->nr_wakes = 0;
	n->wake_next = NULL;
	w->nr_handoffs++;
	w->fin.prev = self;
	w->fin.unlock = unlock;
	w->fin.mode = CL__RT_HANDOFF;
	cl__rt_set_curr(w, n);
	w = cl__rt_switch(w, &self->rc, &n->rc, 0);
	/* resumed, maybe on another worker */
	cl__rt_finish(w);
	if (CL_UNLIKELY((int64_t)(w->now_ns - w->last_balance_ns) > (int64_t)w->rt->balance_ns))
		cl__rt_balance(w, w->now_ns);
}

/*
 * cl__rt_handoff_sync() - bring @w's rq up to date after direct hand-offs,
 * before a full switch of @self: the rq's curr (the last task it picked)
 * leaves its curr slot (requeued if a waker recorded it under this lock or
 * it is on the wake list, else dequeued as blocked), and @self, which the
 * rq does not know,
 * is enqueued and made curr. Done with the clock of the last switch, so
 * nothing is charged here: the full switch that follows charges @self.
 * Context: @w's rq lock held.
 */
CL_INLINE void cl__rt_handoff_sync(struct cl__rt_worker *w, struct cl_rt_task *self)
{
	struct cl_rq *rq = w->rq;
	struct cl_task *r = rq->curr;

	CL_WRITE_ONCE(w->resched, 0);
	if (CL_LIKELY(r == &self->task))
		return;
	if (r) {
		struct cl_rt_task *rt_r = (struct cl_rt_task *)r->data, *q;
		/* woken for good: under this lock by a remote waker, or locally (on
		 * the wake list). Not its state: a remote waker writes that before it
		 * takes this lock, and if we kept the task queued on the strength of
		 * it, the task could run and block again before that waker's enqueue,
		 * which would then wake it a second time. */
		int woken = rt_r->stale_woken;

		for (q = w->wake_head; q && !woken; q = q->wake_next)
			woken = q == rt_r;
		rt_r->stale_woken = 0;
		if (!woken)
			cl_rq_dequeue(rq, r, CL_DEQUEUE_SLEEP);
		cl_rq_put_prev(rq);
	}
	cl_rq_enqueue(rq, &self->task, CL_ENQUEUE_WAKEUP);
	cl_rq_set_curr(rq, &self->task);
}

/*
 * cl__rt_schedule() - the running task @self stops running on @w (yield,
 * block or exit) and the worker runs the next task of its rq, or its idle
 * loop. @unlock (may be NULL) is a wait-list lock the caller holds: it is
 * released only once @self's context is saved (by cl__rt_finish() in the
 * next context), so a waker that finds @self on that list can never start
 * it while it still runs here.
 *
 * Clock. A switch where the pick has a choice (another task is runnable
 * besides the one that will run) reads the clock (cl__rt_now()) and
 * charges the outgoing task exactly. An uncontended hand-off (@self blocks
 * or exits and at most one task is runnable, or @self yields alone) makes
 * no scheduling decision, and reads it only if the kernel's tick clock
 * (cl__rt_tick_ns(), ~6 ns from the vDSO against ~15-40 ns for the TSC
 * read plus the accounting it triggers) moved since the last such read;
 * otherwise the rq clock stands still and the fair class charges nothing.
 * The time since the last reading then goes, at the next reading, to the
 * task switching out there: the first one after a tick, i.e. the one
 * running when the tick came. A task is thus charged its running time in
 * expectation (sampled at the tick, as statistical accounting does) and
 * each charge is off by at most one tick period plus one run. Exact
 * accounting at every switch: CL_RUNTIME_PRECISE_CLOCK.
 *
 * Context: a task on @w; holds no rq lock. Returns when @self runs again.
 */
CL_INLINE void cl__rt_schedule(struct cl__rt_worker *w, struct cl_rt_task *self, int mode,
			       struct cl_spinlock *unlock)
{
	struct cl_rq *rq = w->rq;
	/* at most this many runnable (self included, wakes pending): no choice */
	unsigned int solo = mode == CL__RT_YIELD ? 1u : 2u;
	int hand_off = !w->rt->precise_clock && CL_READ_ONCE(rq->nr_running) + w->nr_wakes <= solo;
	uint64_t now = w->now_ns;
	struct cl_task *next;
	struct cl_rt_task *n;

	/* the clock (see above), read before the lock */
	if (!hand_off) {
		now = cl__rt_now(w->rt);
		w->nr_clock_reads++;
	} else {
		uint64_t tick = cl__rt_tick_ns();

		if (tick == w->tick_seen && cl__rt_can_hand_off(w, self, mode)) {
			cl__rt_hand_off(w, self, unlock);
			return;
		}
		if (tick != w->tick_seen) {
			w->tick_seen = tick;
			now = cl__rt_now(w->rt);
			w->nr_clock_reads++;
			hand_off = 0;
		}
	}
	cl__rq_lock(rq);
	cl__rt_drain_remote(w); /* before the sync: the rq's stale curr may be on it */
	cl__rt_handoff_sync(w, self);
	if (hand_off) {
		if (CL_UNLIKELY(rq->nr_running + w->nr_wakes > solo)) {
			now = cl__rt_now(w->rt); /* a remote wakeup came in: the pick has a choice */
			w->nr_clock_reads++;
		} else {
			w->nr_clock_skips++;
		}
	}
	w->now_ns = now;
	cl__rq_update_clock(rq, now);
	cl__rt_flush_wakes(w);
	if (mode != CL__RT_YIELD)
		cl_rq_dequeue(rq, &self->task, CL_DEQUEUE_SLEEP);
	else
		cl_rq_yield(rq);
	next = cl_rq_pick_next(rq);
	if (next == &self->task) {
		cl__rq_unlock(rq);
		return;
	}
	w->fin.prev = self;
	w->fin.unlock = unlock;
	w->fin.mode = mode;
	if (next) {
		n = (struct cl_rt_task *)(void *)next;
		cl__rt_set_curr(w, n);
		w = cl__rt_switch(w, &self->rc, &n->rc, mode == CL__RT_EXIT);
	} else {
		w->curr = NULL;
		cl__rt_tls_current = NULL;
		CL_ATOMIC_STORE(&w->in_task, 0, CL_RELAXED);
		w = cl__rt_switch(w, &self->rc, &w->sched, mode == CL__RT_EXIT);
	}
	/* resumed, maybe on another worker */
	cl__rt_finish(w);
	if (CL_UNLIKELY((int64_t)(w->now_ns - w->last_balance_ns) > (int64_t)w->rt->balance_ns))
		cl__rt_balance(w, w->now_ns);
}

/*
 * cl__rt_block() - the current task @self waits. The caller has put it on a
 * wait list (with a waiter record) under @lock and holds @lock; it is
 * released after the switch. Returns once a waker took it off the list and
 * called cl__rt_wake().
 */
CL_INLINE void cl__rt_block(struct cl_rt_task *self, struct cl_spinlock *lock)
{
	CL_WRITE_ONCE(self->state, CL__RT_BLOCKED);
	cl__rt_schedule(self->w, self, CL__RT_BLOCK, lock);
	cl__rt_np_exit(self); /* @lock, taken with cl__rt_lock(), was released for us */
}

/*
 * cl__rt_kick() - wake @w's thread out of its futex sleep. @w decides to
 * sleep under its rq lock (nr_running == 0 -> sleeping = 1), and a waker
 * reads `sleeping` under the same lock right after its enqueue, so either
 * the worker sees the task or the waker sees the flag. The swap to 0 makes
 * one waker do the FUTEX_WAKE; a wake that lands before the worker's
 * FUTEX_WAIT makes that wait return at once (the word is no longer 1).
 */
CL_INLINE void cl__rt_kick(struct cl__rt_worker *w)
{
	if (CL_ATOMIC_XCHG(&w->sleeping, 0, CL_ACQ_REL) == 1)
		cl__rt_futex(&w->sleeping, CL__FUTEX_WAKE, 1, NULL);
}

/* Some other worker that sleeps, to pull work from a queue that grew; kick it. */
CL_INLINE void cl__rt_kick_idle(struct cl_runtime *rt, unsigned int from)
{
	for (unsigned int i = 1; i < rt->nr_workers; i++) {
		struct cl__rt_worker *o = &rt->workers[(from + i) % rt->nr_workers];

		if (CL_ATOMIC_LOAD(&o->sleeping, CL_RELAXED)) { /* a hint: it may be waking already */
			cl__rt_kick(o);
			return;
		}
	}
}

/*
 * cl__rt_enqueue_wake() - queue @t (new, or taken off a wait list by the
 * caller) on worker @cpu's rq and notify that worker.
 * @cur: the caller's worker (NULL outside the runtime).
 */
CL_INLINE void cl__rt_enqueue_wake(struct cl_runtime *rt, struct cl_rt_task *t, unsigned int cpu,
				   struct cl__rt_worker *cur, int flags)
{
	struct cl__rt_worker *tw = &rt->workers[cpu];
	struct cl_rq *rq = tw->rq;
	unsigned int nr;
	int sleeping;

	cl__rq_lock(rq);
	CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
	if (CL_UNLIKELY(t->task.on_rq)) {
		/* the rq's stale curr after a direct hand-off: see cl__rt_handoff_sync() */
		t->stale_woken = 1;
		CL_WRITE_ONCE(tw->resched, 1);
		tw->nr_stale_wakes++;
	} else {
		cl_rq_enqueue(rq, &t->task, flags);
	}
	nr = rq->nr_running;
	sleeping = CL_ATOMIC_LOAD(&tw->sleeping, CL_RELAXED); /* under the lock: see cl__rt_kick() */
	cl__rq_unlock(rq);
	if (sleeping)
		cl__rt_kick(tw);
	else if (tw != cur)
		return;
	else if (!(flags & CL_ENQUEUE_WAKEUP) && nr >= 2 && rt->nr_workers > 1)
		cl__rt_kick_idle(rt, cpu); /* a spawn burst: let a sleeping worker pull */
}

/* Push @t on @w's remote wake list; kick @w if it sleeps. */
CL_INLINE void cl__rt_wake_remote(struct cl__rt_worker *w, struct cl_rt_task *t)
{
	struct cl_rt_task *old = CL_ATOMIC_LOAD(&w->remote_wakes, CL_RELAXED);

	do
		t->remote_next = old;
	while (!CL_ATOMIC_CAS(&w->remote_wakes, &old, t, CL_SEQ_CST, CL_RELAXED));
	if (CL_ATOMIC_LOAD(&w->sleeping, CL_SEQ_CST))
		cl__rt_kick(w);
}

/*
 * cl__rt_wake() - make @t, blocked and taken off its wait list by the
 * caller, runnable again on the rq of the worker that last ran it.
 * Remote (another worker, or a caller outside the runtime): enqueued under
 * that rq's lock, the worker notified. Local (the caller's own worker):
 * put on the worker's wake list, which only this thread touches, and
 * enqueued under the rq lock the caller's next switch takes anyway (one
 * lock round trip instead of two; the kernel's wake list does the same).
 *
 * Context: any thread; holding no rq lock (a wait-list lock may be held).
 */
CL_INLINE void cl__rt_wake(struct cl_rt_task *t)
{
	struct cl_rt_task *self = cl__rt_current();

	CL_WRITE_ONCE(t->state, CL__RT_RUNNABLE);
	if (self)
		cl__rt_np_inc(self); /* the wake list and the worker are ours until done */
	if (self && self->w == t->w) {
		struct cl__rt_worker *w = self->w;

		*w->wake_tail = t;
		w->wake_tail = &t->wake_next;
		w->nr_wakes++;
	} else {
		cl__rt_wake_remote(t->w, t);
	}
	if (self) { /* no yield here: this may run in cl__rt_finish() */
		CL_BARRIER();
		CL_WRITE_ONCE(self->np, self->np - 1);
	}
}

/* Wake every waiter of a list the caller detached (join waiters). */
CL_INLINE void cl__rt_wake_waiters(struct cds_list_head *list)
{
	struct cds_list_head *pos, *n;

	cds_list_for_each_safe(pos, n, list) {
		struct cl__rt_waiter *wt = cl_container_of(pos, struct cl__rt_waiter, node);
		struct cl_rt_task *t = wt->t;

		cds_list_del(pos);
		wt->status = 0;
		cl__rt_wake(t);
	}
}

/* ---- balancing ---- */

/*
 * cl__rt_balance() - one balancing pass for @w (pull from the busiest rq);
 * a busy worker with tasks waiting also kicks a sleeping worker, which
 * then pulls in its own idle balance.
 */
CL_INLINE void cl__rt_balance(struct cl__rt_worker *w, uint64_t now)
{
	w->last_balance_ns = now;
	if (w->rt->nr_workers < 2)
		return;
	cl_balance_run(w->rt->sched, w->cpu, now, NULL);
	if (CL_READ_ONCE(w->rq->nr_running) >= 2)
		cl__rt_kick_idle(w->rt, w->cpu);
}

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
	memset((void *)t, 0, offsetof(struct cl_rt_task, keep));
	cl_task_init(&t->task, attr ? attr->nice : 0);
	t->task.data = t;
	t->np = 1; /* until cl__rt_task_entry() calls fn */
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
	cl_spin_init(&t->join_lock);
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
	struct cl_rt_task *self = cl__rt_current(), *t = cl__rt_handle_task(h);
	unsigned int want = cl__rt_handle_gen(h) << 1;

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
	if (self) {
		struct cl__rt_waiter wt;

		cl__rt_lock(&t->join_lock);
		if (!CL_ATOMIC_LOAD(&t->exited, CL_ACQUIRE)) {
			wt.t = self;
			wt.data = NULL;
			wt.status = -1;
			cds_list_add_tail(&wt.node, &t->join_waiters);
			cl__rt_block(self, &t->join_lock);
		} else {
			cl__rt_unlock(&t->join_lock);
		}
	} else {
		CL_ATOMIC_STORE(&t->ext_joiner, 1, CL_SEQ_CST);
		while (!CL_ATOMIC_LOAD(&t->exited, CL_SEQ_CST))
			cl__rt_futex(&t->exited, CL__FUTEX_WAIT, 0, NULL);
		/* the exit path may still be in its futex wake on t: sync on join_lock */
		cl_spin_lock(&t->join_lock);
		cl_spin_unlock(&t->join_lock);
	}
	if (ret)
		*ret = t->ret;
	cl__rt_task_put(t);
	return 0;
}

/* ---- stack overflow report ---- */

/*
 * A task that runs past the end of its stack faults in the guard region
 * below it. Without help that is a bare SIGSEGV: the worker's own stack is
 * not where the fault is, and a handler would need a stack to run on. So
 * each worker gets an alternate signal stack (unless its thread already
 * has one), and cl_runtime_create() installs a SIGSEGV handler (SA_ONSTACK,
 * only if SIGSEGV still has its default action) that, for a fault in the
 * current task's guard, writes which task and its stack bounds to stderr
 * with write(2), puts the default action back and returns: the access
 * faults again and the process dies of SIGSEGV as it would have. Needs the
 * POSIX signal API (_POSIX_C_SOURCE >= 199309L and sigaltstack(), e.g.
 * _GNU_SOURCE or _DEFAULT_SOURCE); without it, or with
 * CL_RUNTIME_NO_OVERFLOW_REPORT, a fault stays a bare SIGSEGV.
 */
#if defined(__USE_POSIX199309) && (defined(__USE_XOPEN_EXTENDED) || defined(__USE_MISC))
#define CL__RT_OVERFLOW_REPORT 1
#define CL__RT_ALTSTACK_SIZE ((size_t)64 * 1024)

/* Append "0x" and @v in hex to @p; returns the end. */
CL_INLINE char *cl__rt_put_hex(char *p, uintptr_t v)
{
	int shift = (int)(sizeof(v) * 8) - 4;

	*p++ = '0';
	*p++ = 'x';
	while (shift > 0 && !((v >> shift) & 0xf))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		*p++ = "0123456789abcdef"[(v >> shift) & 0xf];
	return p;
}

CL_INLINE char *cl__rt_put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

CL_INLINE void cl__rt_segv(int sig, siginfo_t *si, void *uc)
{
	struct cl_rt_task *t = cl__rt_tls_current;
	struct sigaction dfl;

	(void)uc;
	if (t && si) {
		uintptr_t a = (uintptr_t)si->si_addr, g = (uintptr_t)t->keep.map;
		uintptr_t lo = (uintptr_t)t->rc.stack_lo;

		if (a >= g && a < lo) {
			char buf[320], *p = buf;

			p = cl__rt_put_str(p, "cachelocal runtime: task ");
			p = cl__rt_put_hex(p, (uintptr_t)t);
			p = cl__rt_put_str(p, " (fn ");
			p = cl__rt_put_hex(p, (uintptr_t)t->fn);
			p = cl__rt_put_str(p, ") overflowed its stack [");
			p = cl__rt_put_hex(p, lo);
			p = cl__rt_put_str(p, ", ");
			p = cl__rt_put_hex(p, lo + t->rc.stack_size);
			p = cl__rt_put_str(p, "): fault at ");
			p = cl__rt_put_hex(p, a);
			p = cl__rt_put_str(p, " in its guard [");
			p = cl__rt_put_hex(p, g);
			p = cl__rt_put_str(p, ", ");
			p = cl__rt_put_hex(p, lo);
			p = cl__rt_put_str(p, ")\n");
			if (write(2, buf, (size_t)(p - buf)) < 0)
				p = buf;
		}
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL); /* the access faults again, now fatally */
}

/* Install cl__rt_segv() unless SIGSEGV already has a handler. */
CL_INLINE void cl__rt_overflow_report_init(void)
{
	struct sigaction old, sa;

	if (sigaction(SIGSEGV, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
	    old.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cl__rt_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

/* Give the calling worker thread an alternate signal stack if it has none;
 * returns the mapping to free at exit, or NULL. */
CL_INLINE void *cl__rt_altstack_init(void)
{
	stack_t ss, old;
	void *m;

	if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
		return NULL;
	m = mmap(NULL, CL__RT_ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | CL__MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	ss.ss_sp = m;
	ss.ss_size = CL__RT_ALTSTACK_SIZE;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(m, CL__RT_ALTSTACK_SIZE);
		return NULL;
	}
	return m;
}

CL_INLINE void cl__rt_altstack_fini(void *m)
{
	stack_t ss;

	if (!m)
		return;
	memset(&ss, 0, sizeof(ss));
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);
	munmap(m, CL__RT_ALTSTACK_SIZE);
}
#else
CL_INLINE void cl__rt_overflow_report_init(void)
{
}

CL_INLINE void *cl__rt_altstack_init(void)
{
	return NULL;
}

CL_INLINE void cl__rt_altstack_fini(void *m)
{
	(void)m;
}
#endif

/* ---- preemption ---- */

/*
 * A tick thread per runtime wakes every slice_ns and looks at each worker's
 * switch count: a worker that runs a task and has not switched since the
 * last look has run that task for at least one slice (at most two). The
 * tick then sets the worker's preempt_pending and sends it
 * CL_RUNTIME_PREEMPT_SIGNAL. The handler, on the worker's thread and the
 * task's stack, preempts the task right there if it is at a safe point:
 *  - the task's non-preemptible count is 0: it holds no runtime lock, is
 *    in no runtime call that touches shared state, and has not called
 *    cl_preempt_disable();
 *  - the interrupted instruction is in the main executable's code
 *    ([__executable_start, etext)), not in a shared library: never inside
 *    libc (malloc's and stdio's locks, which belong to the worker thread
 *    and would be taken again by the next task on it) or any other
 *    library.
 * An rseq critical section needs no check: the kernel already moved the
 * interrupted instruction to its abort handler before the handler runs.
 * Preempting means: pin the task to this worker (so that it resumes on the
 * same thread: the code it was interrupted in may hold the addresses of
 * thread-local variables, and the signal frame restores this thread's
 * alternate stack), yield through the runqueue (cl__rt_schedule(): the
 * fair class picks), and, once picked again, restore its affinity and
 * return from the handler into the interrupted code. Otherwise the mark
 * stays, and the task yields when its non-preemptible count next drops to
 * 0 (cl__rt_np_exit()), or at the next tick's signal.
 * Under ThreadSanitizer, which runs asynchronous signal handlers later from
 * its own interceptors, the signal is not used: marking only.
 */
#if defined(CL__RT_OVERFLOW_REPORT) && defined(__USE_MISC) && !defined(CL_HAVE_TSAN) && \
	(defined(CL_ARCH_X86_64) || defined(CL_ARCH_AARCH64))
#define CL__RT_ASYNC_PREEMPT 1
extern char __executable_start[];
extern char etext[];
#if defined(CL_ARCH_X86_64)
#define CL__RT_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.gregs[16]) /* REG_RIP */
#else
#define CL__RT_UC_PC(uc) ((uintptr_t)((ucontext_t *)(uc))->uc_mcontext.pc)
#endif
#endif

/*
 * errno after a switch: the task may resume on another worker thread, and
 * an errno address computed before the switch would be the old thread's.
 * A call the compiler cannot see through computes it afresh.
 */
CL_NOINLINE CL_UNUSED static void cl__rt_set_errno(int e)
{
	errno = e;
}

/* Yield the rest of the slice: at a runtime call after a mark, or from the
 * signal handler. Keeps errno. */
CL_INLINE void cl__rt_preempt_yield(struct cl_rt_task *t)
{
	int e = errno;

	cl__rt_np_inc(t);
	cl__rt_schedule(t->w, t, CL__RT_YIELD, NULL);
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
	cl__rt_set_errno(e);
}

#ifdef CL__RT_ASYNC_PREEMPT
CL_INLINE void cl__rt_preempt_signal(int sig, siginfo_t *si, void *uc)
{
	struct cl_rt_task *t = cl__rt_tls_current;
	uintptr_t pc;
	const unsigned long *mask;
	unsigned int bits;
	struct cl_rq *rq;
	struct cl_runtime *rt;

	(void)sig;
	(void)si;
	if (!t || t->np || !uc)
		return;
	pc = CL__RT_UC_PC(uc);
	if (pc < (uintptr_t)__executable_start || pc >= (uintptr_t)etext)
		return; /* in a library: the mark stays */
	rt = t->rt;
	cl__rt_np_inc(t);
	rq = cl_task_rq_lock(rt->sched, &t->task);
	mask = t->task.cpus_allowed;
	bits = t->task.cpus_allowed_bits;
	(void)cl_task_set_affinity(&t->task, rt->pin_masks + (size_t)t->w->cpu * rt->mask_words,
				   rt->nr_workers);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
	t->w->nr_preempts++;
	CL_WRITE_ONCE(t->np, t->np - 1);
	cl__rt_preempt_yield(t);
	cl__rt_np_inc(t);
	rq = cl_task_rq_lock(rt->sched, &t->task);
	(void)cl_task_set_affinity(&t->task, mask, bits);
	if (rq)
		cl_task_rq_unlock(rq, &t->task);
	CL_BARRIER();
	CL_WRITE_ONCE(t->np, t->np - 1);
}

/* Route CL_RUNTIME_PREEMPT_SIGNAL to the handler; 0 if it is ours now. */
CL_INLINE int cl__rt_preempt_signal_init(void)
{
	struct sigaction old, sa;

	if (sigaction(CL_RUNTIME_PREEMPT_SIGNAL, NULL, &old) != 0)
		return -1;
	if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == cl__rt_preempt_signal)
		return 0;
	if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
		return -1; /* the application's: leave it */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cl__rt_preempt_signal;
	/* NODEFER: the task switched to from the handler stays preemptible */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(CL_RUNTIME_PREEMPT_SIGNAL, &sa, NULL);
}
#endif

/* The tick thread (see above). */
CL_INLINE void *cl__rt_tick_main(void *arg)
{
	struct cl_runtime *rt = (struct cl_runtime *)arg;
	struct timespec ts;

	ts.tv_sec = (time_t)(rt->slice_ns / 1000000000ULL);
	ts.tv_nsec = (long)(rt->slice_ns % 1000000000ULL);
	while (!CL_ATOMIC_LOAD(&rt->tick_stop, CL_ACQUIRE)) {
		cl__rt_futex(&rt->tick_stop, CL__FUTEX_WAIT, 0, &ts);
		for (unsigned int i = 0; i < rt->nr_workers; i++) {
			struct cl__rt_worker *w = &rt->workers[i];
			unsigned long sw = CL_ATOMIC_LOAD(&w->nr_switches, CL_RELAXED);

			if (sw == w->tick_switches && CL_ATOMIC_LOAD(&w->in_task, CL_RELAXED) &&
			    !CL_ATOMIC_LOAD(&w->preempt_pending, CL_RELAXED)) {
				CL_ATOMIC_STORE(&w->preempt_pending, 1, CL_RELAXED);
#ifdef CL__RT_ASYNC_PREEMPT
				if (rt->preempt_signal)
					pthread_kill(w->thread, CL_RUNTIME_PREEMPT_SIGNAL);
#endif
			}
			w->tick_switches = sw;
		}
	}
	return NULL;
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

/* Start the tick (and the signal) unless @rt has no preemption. */
CL_INLINE int cl__rt_tick_start(struct cl_runtime *rt)
{
	if (!rt->slice_ns)
		return 0;
#ifdef CL__RT_ASYNC_PREEMPT
	rt->preempt_signal = cl__rt_preempt_signal_init() == 0;
#endif
	if (pthread_create(&rt->tick_thread, NULL, cl__rt_tick_main, rt) != 0)
		return -1;
	rt->tick_started = 1;
	return 0;
}

CL_INLINE void cl__rt_tick_stop(struct cl_runtime *rt)
{
	if (!rt->tick_started)
		return;
	CL_ATOMIC_STORE(&rt->tick_stop, 1, CL_RELEASE);
	cl__rt_futex(&rt->tick_stop, CL__FUTEX_WAKE, 1, NULL);
	pthread_join(rt->tick_thread, NULL);
	rt->tick_started = 0;
}

/* ---- workers ---- */

/* Pin the calling thread to @cpu (raw syscall: no GNU cpu_set_t needed). */
CL_INLINE int cl__rt_pin_self(int cpu)
{
	unsigned long mask[CL_MAX_CPUS / (8 * sizeof(unsigned long)) + 1];
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));

	memset(mask, 0, sizeof(mask));
	mask[(unsigned int)cpu / bpl] |= 1UL << ((unsigned int)cpu % bpl);
	return (int)syscall(SYS_sched_setaffinity, 0, sizeof(mask), mask);
}

/* The CPUs the process may run on, in order; returns how many (>= 1). */
CL_INLINE unsigned int cl__rt_allowed_cpus(int *out, unsigned int max)
{
	unsigned long mask[CL_MAX_CPUS / (8 * sizeof(unsigned long)) + 1];
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));
	long r = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	unsigned int n = 0;

	if (r <= 0) {
		out[0] = 0;
		return 1;
	}
	for (unsigned int c = 0; c < (unsigned int)r * 8 && n < max; c++)
		if ((mask[c / bpl] >> (c % bpl)) & 1UL)
			out[n++] = (int)c;
	if (!n)
		out[n++] = 0;
	return n;
}

/*
 * cl__rt_worker_pick() - pick the next task of @w's rq and run it until
 * the worker is idle again. Returns 1 if something ran.
 */
CL_INLINE int cl__rt_worker_pick(struct cl__rt_worker *w)
{
	struct cl_task *next;
	struct cl_rt_task *n;

	cl__rq_lock(w->rq);
	w->now_ns = cl__rt_now(w->rt);
	cl__rq_update_clock(w->rq, w->now_ns);
	cl__rt_drain_remote(w);
	cl__rt_flush_wakes(w);
	next = cl_rq_pick_next(w->rq);
	if (!next) {
		cl__rq_unlock(w->rq);
		return 0;
	}
	n = (struct cl_rt_task *)(void *)next;
	w->fin.prev = NULL;
	w->fin.unlock = NULL;
	cl__rt_set_curr(w, n);
	w = cl__rt_switch(w, &w->sched, &n->rc, 0);
	cl__rt_finish(w);
	return 1;
}

/*
 * cl__rt_worker_main() - a worker thread: run tasks; when none is runnable,
 * balance, spin (bounded), then sleep on its futex.
 */
CL_INLINE void *cl__rt_worker_main(void *arg)
{
	struct cl__rt_worker *w = (struct cl__rt_worker *)arg;
	struct cl_runtime *rt = w->rt;
	void *altstack = rt->no_overflow_report ? NULL : cl__rt_altstack_init();

	if (w->os_cpu >= 0)
		cl__rt_pin_self(w->os_cpu);
	urcu_memb_register_thread();
	cl__ctx_init_thread(&w->sched.ctx);
#ifdef CL_HAVE_TSAN
	w->sched.tsan_fiber = __tsan_get_current_fiber();
#endif
#ifdef CL__RT_ASAN
	{
		pthread_attr_t a;
		void *lo;
		size_t sz;

		if (pthread_getattr_np(pthread_self(), &a) == 0) {
			if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
				w->sched.stack_lo = lo;
				w->sched.stack_size = sz;
			}
			pthread_attr_destroy(&a);
		}
	}
#endif
	for (;;) {
		uint64_t now, until;

		while (cl__rt_worker_pick(w))
			;
		if (CL_ATOMIC_LOAD(&rt->stop, CL_ACQUIRE))
			break;
		now = cl__rt_now(rt);
		cl__rt_balance(w, now);
		if (CL_READ_ONCE(w->rq->nr_running))
			continue;
		/* bounded spin */
		if (rt->spin_ns != CL_RUNTIME_NO_SPIN) {
			int hit = 0;

			until = now + rt->spin_ns;
			for (unsigned int i = 1;; i++) {
				if (CL_READ_ONCE(w->rq->nr_running) || CL_READ_ONCE(rt->stop) ||
				    cl__rt_remote_pending(w)) {
					hit = 1;
					break;
				}
				CL_CPU_RELAX();
				if (!(i & 63) && cl__rt_now(rt) > until)
					break;
			}
			if (hit) {
				w->nr_spin_hits++;
				continue;
			}
		}
		/* sleep: announce, recheck, wait (see the wake protocol) */
		cl__rq_lock(w->rq);
		if (!w->rq->nr_running && !CL_ATOMIC_LOAD(&rt->stop, CL_ACQUIRE))
			CL_ATOMIC_STORE(&w->sleeping, 1, CL_SEQ_CST);
		cl__rq_unlock(w->rq);
		/* a remote waker pushes, then reads `sleeping`: see cl__rt_drain_remote() */
		if (CL_ATOMIC_LOAD(&w->sleeping, CL_RELAXED) && !CL_ATOMIC_LOAD(&w->remote_wakes, CL_SEQ_CST)) {
			struct timespec ts;

			ts.tv_sec = (time_t)(rt->balance_ns / 1000000000ULL);
			ts.tv_nsec = (long)(rt->balance_ns % 1000000000ULL);
			w->nr_idle_sleeps++;
			cl__rt_poke_shutdown(rt);
			cl__rt_futex(&w->sleeping, CL__FUTEX_WAIT, 1, &ts);
		}
		CL_ATOMIC_STORE(&w->idle_epoch, w->idle_epoch + 1, CL_SEQ_CST);
		CL_ATOMIC_STORE(&w->sleeping, 0, CL_SEQ_CST);
	}
	urcu_memb_unregister_thread();
	cl__rt_altstack_fini(altstack);
	return NULL;
}

/* ---- lifecycle ---- */

CL_INLINE void cl__rt_free(struct cl_runtime *rt)
{
	struct cds_list_head *pos;

	cds_list_for_each(pos, &rt->all) {
		struct cl_rt_task *t = cl_container_of(pos, struct cl_rt_task, keep.all);

#ifdef CL__RT_VALGRIND
		VALGRIND_STACK_DEREGISTER(t->keep.vg_stack);
#else
		(void)t;
#endif
	}
	for (unsigned int i = 0; i < rt->nr_batches; i++)
		munmap(rt->batches[i], cl__rt_batch_slots(rt) * cl__rt_slot_size(rt));
	free(rt->batches);
	if (rt->tcache)
		cl_objcache_destroy(rt->tcache);
	free(rt->workers);
	free(rt->pin_masks);
	/* EBUSY only with tasks queued or attached to a group: every task was
	 * detached (cl__rt_task_detach()) before we get here */
	if (rt->sched)
		(void)cl_sched_destroy(rt->sched);
	free(rt);
}

/* Stop and join every started worker. */
CL_INLINE void cl__rt_stop_workers(struct cl_runtime *rt)
{
	CL_INJECT(64);
	cl__rt_tick_stop(rt);
	CL_ATOMIC_STORE(&rt->stop, 1, CL_SEQ_CST);
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (rt->workers[i].started) {
			/* the worker checks stop under its rq lock before sleeping */
			cl__rq_lock(rt->workers[i].rq);
			cl__rq_unlock(rt->workers[i].rq);
			cl__rt_kick(&rt->workers[i]);
		}
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (rt->workers[i].started) {
			pthread_join(rt->workers[i].thread, NULL);
			rt->workers[i].started = 0;
		}
}

/**
 * cl_runtime_create() - start a runtime: a scheduler instance with one rq
 * per worker, and the workers (pinned, idle until tasks are spawned).
 * @attr: knobs (NULL: defaults: one pinned worker per allowed CPU).
 *
 * Context: any thread registered with liburcu-memb if it creates task
 * groups later (the runtime's workers register themselves).
 * Return: the runtime, or NULL with errno EINVAL (more workers than
 * CL_MAX_CPUS, @attr->stack_size or @attr->guard_size out of bounds), ENOMEM, or
 * pthread_create's error.
 */
CL_INLINE struct cl_runtime *cl_runtime_create(const struct cl_runtime_attr *attr)
{
	int cpus[CL_MAX_CPUS];
	unsigned int nr_allowed = cl__rt_allowed_cpus(cpus, CL_MAX_CPUS), n;
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));
	struct cl_runtime *rt;
	int e;

	n = attr && attr->nr_workers ? attr->nr_workers : nr_allowed;
	if (n > CL_MAX_CPUS || (attr && ((attr->stack_size && (attr->stack_size < CL_RUNTIME_STACK_MIN ||
							      attr->stack_size > CL_RUNTIME_STACK_MAX)) ||
					 attr->guard_size > CL_RUNTIME_STACK_MAX))) {
		errno = EINVAL;
		return NULL;
	}
	rt = (struct cl_runtime *)calloc(1, sizeof(*rt));
	if (!rt) {
		errno = ENOMEM;
		return NULL;
	}
	rt->nr_workers = n;
	rt->stack_size = attr && attr->stack_size ? attr->stack_size : CL_RUNTIME_STACK_SIZE;
	rt->stack_size = (rt->stack_size + 15u) & ~(size_t)15u;
	rt->guard_size = attr && attr->guard_size ? attr->guard_size : CL_RUNTIME_GUARD_SIZE;
	rt->guard_size = (rt->guard_size + cl__rt_page() - 1) & ~(cl__rt_page() - 1);
	rt->no_overflow_report = attr && (attr->flags & CL_RUNTIME_NO_OVERFLOW_REPORT);
	rt->slice_ns = attr && (attr->flags & CL_RUNTIME_NO_PREEMPT) ? 0
		       : attr && attr->slice_ns ? attr->slice_ns : CL_RUNTIME_SLICE_NS;
	rt->spin_ns = attr && attr->spin_ns ? attr->spin_ns : CL_RUNTIME_SPIN_NS;
	rt->balance_ns = attr && attr->balance_ns ? attr->balance_ns : CL_RUNTIME_BALANCE_NS;
	rt->precise_clock = (attr && (attr->flags & CL_RUNTIME_PRECISE_CLOCK)) || !cl__rt_clock_sampling_ok();
	cl_spin_init(&rt->all_lock);
	CDS_INIT_LIST_HEAD(&rt->all);
	cl__rt_clock_init(rt);
	rt->mask_words = n / bpl + 1;
	rt->pin_masks = (unsigned long *)calloc((size_t)n * rt->mask_words, sizeof(unsigned long));
	rt->workers = (struct cl__rt_worker *)aligned_alloc(CL_FALSE_SHARING_SIZE,
							    (size_t)n * sizeof(struct cl__rt_worker));
	{
		struct cl_objcache_attr oa;

		memset(&oa, 0, sizeof(oa));
		oa.obj_size = sizeof(struct cl_rt_task);
		oa.align = CL_CACHELINE_SIZE;
		rt->tcache = cl_objcache_create(&oa);
	}
	rt->sched = rt->workers && rt->pin_masks && rt->tcache ? cl_sched_create(n, NULL) : NULL;
	if (!rt->sched) {
		cl__rt_free(rt);
		errno = ENOMEM;
		return NULL;
	}
	memset((void *)rt->workers, 0, (size_t)n * sizeof(struct cl__rt_worker));
	if (attr && attr->migration_cost_ns == CL_RUNTIME_NEVER_HOT)
		cl_balance_set_migration_cost(rt->sched, 0);
	else
		cl_balance_set_migration_cost(rt->sched, attr && attr->migration_cost_ns
								 ? attr->migration_cost_ns
								 : CL_RUNTIME_MIGRATION_COST_NS);
	for (unsigned int i = 0; i < n; i++) {
		struct cl__rt_worker *w = &rt->workers[i];

		rt->pin_masks[(size_t)i * rt->mask_words + i / bpl] |= 1UL << (i % bpl);
		w->rt = rt;
		w->wake_tail = &w->wake_head;
		w->cpu = i;
		w->rq = cl__sched_rq(rt->sched, i);
		w->os_cpu = attr && (attr->flags & CL_RUNTIME_UNPINNED) ? -1 : cpus[i % nr_allowed];
	}
	if (!rt->no_overflow_report)
		cl__rt_overflow_report_init();
	for (unsigned int i = 0; i < n; i++) {
		e = pthread_create(&rt->workers[i].thread, NULL, cl__rt_worker_main, &rt->workers[i]);
		if (e) {
			cl__rt_stop_workers(rt);
			cl__rt_free(rt);
			errno = e;
			return NULL;
		}
		rt->workers[i].started = 1;
	}
	if (cl__rt_tick_start(rt) != 0) {
		cl__rt_stop_workers(rt);
		cl__rt_free(rt);
		errno = EAGAIN;
		return NULL;
	}
	return rt;
}

/**
 * cl_runtime_nr_workers() - number of workers.
 * @rt: the runtime.
 *
 * Return: it.
 *
 * Context: any.
 */
CL_INLINE unsigned int cl_runtime_nr_workers(const struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return 0;
	return rt->nr_workers;
}

/**
 * cl_runtime_sched() - the scheduler instance under @rt (task groups are
 * created under cl_sched_root_group(cl_runtime_sched(rt))).
 * @rt: the runtime.
 * Context: any. Return: it.
 */
CL_INLINE struct cl_sched *cl_runtime_sched(struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return NULL;
	return rt->sched;
}

/**
 * cl_runtime_context_kind() - "x86_64-asm" or "ucontext".
 *
 * Context: any.
 *
 * Return: the name.
 */
CL_INLINE const char *cl_runtime_context_kind(void)
{
	return CL__CTX_KIND;
}

/*
 * cl__rt_all_asleep() - is every worker asleep with an empty rq, and stayed
 * so across two collections? Then no task runs, none is queued, and no
 * task can wake another: the live tasks are all blocked for good (unless a
 * thread outside the runtime wakes one, which the caller rules out).
 */
CL_INLINE int cl__rt_all_asleep(struct cl_runtime *rt)
{
	unsigned int epoch[2][64];
	unsigned int n = rt->nr_workers < 64 ? rt->nr_workers : 64;

	if (rt->nr_workers > 64)
		return 0; /* not supported beyond 64 workers: shutdown just waits */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < n; i++) {
			struct cl__rt_worker *w = &rt->workers[i];

			epoch[pass][i] = CL_ATOMIC_LOAD(&w->idle_epoch, CL_SEQ_CST);
			if (!CL_ATOMIC_LOAD(&w->sleeping, CL_SEQ_CST) ||
			    CL_ATOMIC_LOAD(&w->rq->nr_running, CL_SEQ_CST) || cl__rt_remote_pending(w))
				return 0;
			if (CL_ATOMIC_LOAD(&w->idle_epoch, CL_SEQ_CST) != epoch[pass][i])
				return 0;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		if (epoch[0][i] != epoch[1][i])
			return 0;
	return CL_ATOMIC_LOAD(&rt->live, CL_SEQ_CST) != 0;
}

/**
 * cl_runtime_shutdown() - wait until every task has returned, then stop and
 * join the workers.
 * @rt: the runtime.
 *
 * From the first call on, cl_spawn() from outside the runtime's tasks
 * fails with EPIPE; tasks may still spawn tasks while it waits. A spawn
 * from outside that was admitted before is waited for (never lost). If
 * every remaining task is blocked (no task can run, so none can wake the
 * others), it returns at once with EDEADLK and the runtime keeps running:
 * a thread outside may unblock them (cl_chan_close(), cl_waitq_wake_all(),
 * ...) and call it again. Joinable tasks not yet joined are freed by
 * cl_runtime_destroy(). Idempotent, and safe from several threads at once:
 * one of them stops the workers, the others wait for it, all return 0.
 *
 * Context: a thread outside the runtime's tasks; no other outside thread
 * may be waking tasks concurrently (it would make the blocked count
 * momentarily equal to the live count).
 * Return: 0, or -1 with errno EINVAL (NULL @rt), EPERM (called from a
 * task), EDEADLK (tasks remain, all blocked).
 */
CL_INLINE int cl_runtime_shutdown(struct cl_runtime *rt)
{
	int up = CL__RT_UP;

	if (!rt) {
		errno = EINVAL;
		return -1;
	}
	if (cl__rt_current()) {
		errno = EPERM;
		return -1;
	}
	if (CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE) == CL__RT_SHUT)
		return 0;
	CL_ATOMIC_STORE(&rt->closing, 1, CL_SEQ_CST);
	CL_ATOMIC_FETCH_ADD(&rt->shutdown_waiting, 1, CL_SEQ_CST);
	for (;;) {
		int seq = CL_ATOMIC_LOAD(&rt->quiesce_seq, CL_SEQ_CST), spawning;
		struct timespec ts = { 0, 2000000 };

		CL_INJECT(61); /* shutdown looks at the live tasks */
		if (CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE) != CL__RT_UP)
			break; /* another caller is stopping the workers */
		/* `spawning` before `live`: see cl__rt_spawn_admit() */
		spawning = CL_ATOMIC_LOAD(&rt->spawning, CL_SEQ_CST);
		if (!spawning && CL_ATOMIC_LOAD(&rt->live, CL_SEQ_CST) == 0)
			break;
		if (!spawning && cl__rt_all_asleep(rt)) {
			CL_ATOMIC_FETCH_SUB(&rt->shutdown_waiting, 1, CL_SEQ_CST);
			errno = EDEADLK;
			return -1;
		}
		cl__rt_futex(&rt->quiesce_seq, CL__FUTEX_WAIT, seq, &ts);
	}
	CL_ATOMIC_FETCH_SUB(&rt->shutdown_waiting, 1, CL_SEQ_CST);
	CL_INJECT(63); /* no task left: about to stop the workers */
	if (CL_ATOMIC_CAS(&rt->shut, &up, CL__RT_STOPPING, CL_SEQ_CST, CL_SEQ_CST)) {
		cl__rt_stop_workers(rt);
		CL_ATOMIC_STORE(&rt->shut, CL__RT_SHUT, CL_RELEASE);
		cl__rt_futex(&rt->shut, CL__FUTEX_WAKE, INT_MAX, NULL);
	} else {
		while ((up = CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE)) != CL__RT_SHUT)
			cl__rt_futex(&rt->shut, CL__FUTEX_WAIT, up, NULL);
	}
	return 0;
}

/**
 * cl_runtime_destroy() - shut @rt down (cl_runtime_shutdown()) and free it.
 * @rt: the runtime (NULL: no-op, returns 0).
 *
 * Refuses while tasks remain blocked: if cl_runtime_shutdown() fails with
 * EDEADLK, nothing is freed or stopped and -1/EDEADLK is returned. The
 * runtime, its tasks and the objects they wait on stay usable: unblock the
 * tasks (cl_chan_close(), cl_waitq_wake_all(), ...) and call it again.
 * Blocked tasks are never discarded, so a wait object never lists a task
 * whose stack is gone. Unjoined finished tasks are freed.
 *
 * Context: a thread outside the runtime's tasks, once: no other call on
 * @rt may run concurrently or follow.
 * Return: 0, or -1 with errno EDEADLK (tasks remain blocked; nothing
 * freed) or EPERM (called from a task).
 */
CL_INLINE int cl_runtime_destroy(struct cl_runtime *rt)
{
	struct cds_list_head *pos;

	if (!rt)
		return 0;
	if (cl_runtime_shutdown(rt) != 0)
		return -1;
	/* every task returned: the objects still handed out were not joined */
	cds_list_for_each(pos, &rt->all) {
		struct cl_rt_task *t = cl_container_of(pos, struct cl_rt_task, keep.all);

		if (!CL_ATOMIC_LOAD(&t->refs, CL_ACQUIRE))
			continue;
		t->refs = 0;
		cl__rt_task_release(t);
	}
	cl__rt_free(rt);
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_CORE_H */
