/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/stack.h - task stacks.
 *
 * Task stacks come in batches of slots, each a guard region
 * (CL_RUNTIME_GUARD_SIZE, never committed) and a stack, one mapping per
 * batch; the guard modes (markers, mprotect, checked) and
 * cl_runtime_guard_mode(); a slot stays with its task descriptor in the cache and is
 * registered with valgrind and ASan (the layout is described below). A
 * descriptor's lifetime: handles, references, and the count of live tasks
 * that cl_runtime_shutdown() waits on.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_STACK_H
#define CACHELOCAL_SCHED_RUNTIME_STACK_H

#include <sys/uio.h> /* struct iovec: process_madvise() */

CL_BEGIN_DECLS

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
 * it, so a slot costs address space, not memory. A slot stays with its
 * descriptor in the cache; the batches are unmapped at destroy.
 *
 * Guards (struct cl_runtime_attr.guard_mode, chosen at create; see
 * docs/runtime.md, "Stack guards"). A slot's guard region is one of:
 *  - markers: made inaccessible with MADV_GUARD_INSTALL (Linux >= 6.13:
 *    page-table markers, no new mapping), so a batch stays one mapping
 *    whatever its slot count. Any access to it faults (precise).
 *  - mprotect: mprotect(PROT_NONE)ed, which splits the batch into two
 *    mappings per slot (precise; the live tasks are then bounded by about
 *    vm.max_map_count / 2).
 *  - checked: left readable and writable, no system call and no mapping.
 *    The region is a reserve that an overflow lands in instead of the
 *    neighbour's stack below it, and the runtime looks for an overflow
 *    where it has the stack pointer at hand: at each switch out of a task,
 *    in the preemption signal's handler (a task running long), and at a
 *    task's exit (any nonzero word in the top CL__RT_GUARD_PROBE bytes of
 *    the region: what a call chain that went past the stack's end and
 *    returned leaves behind). What it finds is reported as a fault in a
 *    guard is, and the process aborts (overflow.h).
 * Markers go on a whole batch's guard regions at once where the kernel lets
 * a process advise itself through process_madvise() (any advice for the
 * caller's own process since Linux 6.13, the release of the markers): one
 * system call per batch instead of one per slot, made when the batch is
 * mapped ("markers" all the same; test knob CL_TEST_GUARD_BATCH=0: one by
 * one, as before).
 * CL_RUNTIME_GUARD_AUTO takes markers where the kernel does, else mprotect
 * guards while they fit a mapping budget (cl__rt_guard_budget()), then
 * checked ones: "mprotect+checked".
 */
#define CL__RT_BATCH_SLOTS 64u
#define CL__RT_BATCH_BYTES ((size_t)256 << 20)
#define CL__MADV_GUARD_INSTALL 102
#define CL__MADV_NOHUGEPAGE 15 /* MADV_NOHUGEPAGE of <linux/mman.h> */
#define CL__RT_GUARD_PROBE 256u

/* Guard modes in force (struct cl_runtime.guard_mode). */
#define CL__RT_GUARD_MARKERS 0
#define CL__RT_GUARD_MPROTECT 1
#define CL__RT_GUARD_MIXED 2   /* mprotect within the budget, then checked */
#define CL__RT_GUARD_CHECKED 3
#define CL__RT_GUARD_MARKERS_BATCH 4 /* markers, a batch's all at once when it is mapped */

/* The stack pointer (an address in the caller's frame without asm). */
CL_ALWAYS_INLINE uintptr_t cl__rt_sp(void)
{
	uintptr_t sp;

	CL__ARCH_READ_SP(sp);
	return sp;
}

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

/*
 * Guard markers on the @n guard regions (@guard bytes at the start of each
 * @slot-byte slot) of the batch at @m, with one process_madvise() of this
 * process on itself. 0, or -1 when not all were installed (no pidfd, a
 * kernel that refuses the advice there, valgrind): the caller installs
 * them one by one (installing a marker twice is harmless).
 */
CL_INLINE int cl__rt_batch_guard(char *m, size_t n, size_t slot, size_t guard)
{
#if defined(SYS_process_madvise) && defined(SYS_pidfd_open)
	struct iovec iov[CL__RT_BATCH_SLOTS];
	long r;
	int fd;

	if (n > CL__RT_BATCH_SLOTS)
		return -1;
	for (size_t i = 0; i < n; i++) {
		iov[i].iov_base = m + i * slot;
		iov[i].iov_len = guard;
	}
	fd = (int)syscall(SYS_pidfd_open, (long)getpid(), 0L);
	if (fd < 0)
		return -1;
	r = syscall(SYS_process_madvise, (long)fd, iov, (long)n, (long)CL__MADV_GUARD_INSTALL, 0L);
	close(fd);
	return r == (long)(n * guard) ? 0 : -1;
#else
	(void)m;
	(void)n;
	(void)slot;
	(void)guard;
	return -1;
#endif
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
		/* Small pages only: with transparent huge pages "always" (the
		 * default of Debian's kernels), the first touch of a stack in a
		 * 2 MiB-aligned stretch of the batch faults in all 2 MiB, and a
		 * parked task that touched a page holds 32 (100,000 tasks ran a
		 * 2 GiB guest out of memory). Fails harmlessly (EINVAL) on a
		 * kernel built without them. */
		(void)madvise(m, n * slot, CL__MADV_NOHUGEPAGE);
		if (rt->guard_mode == CL__RT_GUARD_MARKERS_BATCH &&
		    cl__rt_batch_guard(m, n, slot, rt->guard_size) != 0) {
			for (size_t i = 0; i < n; i++)
				if (madvise(m + i * slot, rt->guard_size, CL__MADV_GUARD_INSTALL) != 0) {
					munmap(m, n * slot);
					return NULL; /* no slot without its guard */
				}
		}
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

/* The decimal value of environment variable @name in *@v: 1, or 0 if unset
 * or malformed (test knobs). */
CL_INLINE int cl__rt_env_ulong(const char *name, unsigned long *v)
{
	const char *e = getenv(name);

	if (!e || *e < '0' || *e > '9')
		return 0;
	for (*v = 0; *e >= '0' && *e <= '9' && *v < ULONG_MAX / 10 - 9; e++)
		*v = *v * 10 + (unsigned long)(*e - '0');
	return !*e;
}

/* Does the kernel take guard markers? (Test knob CL_TEST_GUARD_MARKERS=0:
 * answer no, as a kernel < 6.13 does.) */
CL_INLINE int cl__rt_markers_ok(void)
{
	size_t pg = cl__rt_page();
	unsigned long knob;
	void *m;
	int ok;

	if (cl__rt_env_ulong("CL_TEST_GUARD_MARKERS", &knob) && knob == 0)
		return 0;
	m = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | CL__MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	ok = madvise(m, pg, CL__MADV_GUARD_INSTALL) == 0;
	munmap(m, pg);
	return ok;
}

/* Does process_madvise() install markers on a batch? (Test knob
 * CL_TEST_GUARD_BATCH=0: answer no, one madvise() per slot.) */
CL_INLINE int cl__rt_batch_markers_ok(void)
{
	size_t pg = cl__rt_page();
	unsigned long knob;
	char *m;
	int ok;

	if (cl__rt_env_ulong("CL_TEST_GUARD_BATCH", &knob) && knob == 0)
		return 0;
	m = (char *)mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | CL__MAP_ANONYMOUS, -1, 0);
	if (m == (char *)MAP_FAILED)
		return 0;
	ok = cl__rt_batch_guard(m, 2, pg, pg) == 0;
	munmap(m, 2 * pg);
	return ok;
}

/* Lines of /proc file @path (its mappings for /proc/self/maps), or -1. */
CL_INLINE long cl__rt_count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/*
 * cl__rt_guard_budget() - how many mprotect guards (two mappings each) a
 * "mprotect+checked" runtime makes before its slots get checked guards:
 * half of vm.max_map_count stays for the program itself (its libraries,
 * heap arenas, thread stacks, its own mmap()s), the rest of the mappings
 * below that half go to guards: (max_map_count / 2 - mappings now) / 2.
 * 65530 (the default) and a small program give about 16,000 precise
 * guards. A second runtime counts the first one's guards among the
 * mappings it finds, so all of them together stay within the half. Test
 * knob CL_TEST_MAX_MAP_COUNT: a smaller limit to assume (never a larger).
 */
CL_INLINE long cl__rt_guard_budget(void)
{
	long max = -1, now;
	unsigned long knob;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	if (f) {
		if (fscanf(f, "%ld", &max) != 1)
			max = -1;
		fclose(f);
	}
	if (max <= 0)
		max = 65530; /* the kernel's default (DEFAULT_MAX_MAP_COUNT) */
	if (cl__rt_env_ulong("CL_TEST_MAX_MAP_COUNT", &knob) && knob < (unsigned long)max)
		max = (long)knob;
	now = cl__rt_count_lines("/proc/self/maps");
	if (now < 0)
		now = max / 4;
	return max / 2 > now ? (max / 2 - now) / 2 : 0;
}

/*
 * cl__rt_guard_init() - fix @rt's guard mode at create from @mode (struct
 * cl_runtime_attr.guard_mode). Returns 0, or -1 with errno EINVAL (no such
 * mode) or ENOSYS (CL_RUNTIME_GUARD_MARKERS on a kernel without them).
 */
CL_INLINE int cl__rt_guard_init(struct cl_runtime *rt, int mode)
{
	switch (mode) {
	case CL_RUNTIME_GUARD_AUTO:
		if (cl__rt_markers_ok()) {
			rt->guard_mode = cl__rt_batch_markers_ok() ? CL__RT_GUARD_MARKERS_BATCH
								    : CL__RT_GUARD_MARKERS;
		} else {
			rt->guard_mode = CL__RT_GUARD_MIXED;
			rt->guard_budget = cl__rt_guard_budget();
		}
		return 0;
	case CL_RUNTIME_GUARD_MARKERS:
		if (!cl__rt_markers_ok()) {
			errno = ENOSYS;
			return -1;
		}
		rt->guard_mode = cl__rt_batch_markers_ok() ? CL__RT_GUARD_MARKERS_BATCH
							    : CL__RT_GUARD_MARKERS;
		return 0;
	case CL_RUNTIME_GUARD_MPROTECT:
		rt->guard_mode = CL__RT_GUARD_MPROTECT;
		return 0;
	case CL_RUNTIME_GUARD_CHECKED:
		rt->guard_mode = CL__RT_GUARD_CHECKED;
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

/**
 * cl_runtime_guard_mode() - how @rt's stack guards are made (see
 * docs/runtime.md, "Stack guards").
 * @rt: the runtime.
 *
 * Context: any.
 * Return: "markers" (MADV_GUARD_INSTALL), "mprotect" (mprotect(PROT_NONE),
 * two mappings per task), "mprotect+checked" (mprotect within a mapping
 * budget, then checked guards: CL_RUNTIME_GUARD_AUTO on a kernel without
 * guard markers) or "checked" (no inaccessible guard; stack pointer
 * checks); NULL with errno EINVAL for a NULL @rt.
 */
CL_INLINE const char *cl_runtime_guard_mode(const struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return NULL;
	switch (rt->guard_mode) {
	case CL__RT_GUARD_MARKERS:
	case CL__RT_GUARD_MARKERS_BATCH:
		return "markers";
	case CL__RT_GUARD_MPROTECT:
		return "mprotect";
	case CL__RT_GUARD_MIXED:
		return "mprotect+checked";
	default:
		return "checked";
	}
}

/* Make @t's guard region [@lo, @lo + @len) a guard as @rt's mode says: 0,
 * or -1 (errno from madvise or mprotect). */
CL_INLINE int cl__rt_guard(struct cl_runtime *rt, struct cl_rt_task *t, void *lo, size_t len)
{
	t->keep.checked = 0;
	switch (rt->guard_mode) {
	case CL__RT_GUARD_MARKERS:
		return madvise(lo, len, CL__MADV_GUARD_INSTALL);
	case CL__RT_GUARD_MARKERS_BATCH: /* installed with its batch (cl__rt_slot_take()) */
		return 0;
	case CL__RT_GUARD_MIXED:
		if (CL_ATOMIC_LOAD(&rt->guard_budget, CL_RELAXED) > 0 &&
		    CL_ATOMIC_FETCH_SUB(&rt->guard_budget, 1, CL_RELAXED) > 0) {
			if (mprotect(lo, len, PROT_NONE) == 0)
				return 0;
			/* ENOMEM: the map limit came first (the program mapped more) */
			CL_ATOMIC_STORE(&rt->guard_budget, 0, CL_RELAXED);
		}
		t->keep.checked = 1;
		return 0;
	case CL__RT_GUARD_CHECKED:
		t->keep.checked = 1;
		return 0;
	default:
		return mprotect(lo, len, PROT_NONE);
	}
}

/* Give @t (a new cache object) its stack slot, the guard region below it. */
CL_INLINE int cl__rt_stack_map(struct cl_runtime *rt, struct cl_rt_task *t)
{
	size_t size = cl__rt_slot_size(rt);
	char *m = cl__rt_slot_take(rt);

	if (!m || cl__rt_guard(rt, t, m, rt->guard_size) != 0)
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

/* ---- live tasks (shutdown) ---- */

/* Tell a waiting cl_runtime_shutdown() to look again. */
CL_INLINE void cl__rt_poke_shutdown(struct cl_runtime *rt)
{
	if (CL_ATOMIC_LOAD(&rt->shutdown_waiting, CL_SEQ_CST)) {
		CL_ATOMIC_FETCH_ADD(&rt->quiesce_seq, 1, CL_SEQ_CST);
		cl__futex_wake(&rt->quiesce_seq, INT_MAX);
	}
}

CL_INLINE void cl__rt_live_add(struct cl_runtime *rt, long delta)
{
	if (CL_ATOMIC_FETCH_ADD(&rt->live, (unsigned long)delta, CL_SEQ_CST) + (unsigned long)delta == 0)
		cl__rt_poke_shutdown(rt);
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_STACK_H */
