/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_stacks.c - the M:N runtime's task stacks:
 * a frame larger than a page that runs past the end of a stack faults in
 * the guard region (not in a neighbour's stack) and the report names the
 * task and its stack bounds before the process dies of SIGSEGV (in a
 * forked child); an overflow in a checked guard is reported at the next
 * switch, by the preemption signal, or at the task's exit, and the process
 * aborts; the guard modes
 * (what cl_runtime_guard_mode() says against what the kernel takes);
 * 100,000 parked tasks at once at default attributes with the mappings
 * bounded (none per task with guard markers; within the mprotect budget
 * without), and again with guard markers refused and a small map limit
 * (test knobs CL_TEST_GUARD_MARKERS=0, CL_TEST_MAX_MAP_COUNT): the mixed
 * "mprotect+checked" mode of a kernel < 6.13, on any kernel
 * (CL_TEST_PARKED_TASKS sets the count; ASan and valgrind builds default
 * to 10,000, TSan to 1,000); stack batches never take transparent huge
 * pages (VmFlags "nh").
 */
#include <stdatomic.h>

#include "cl_test.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cachelocal/sched/runtime.h>

/* ---- guard modes ---- */

/* Does the kernel take guard markers (MADV_GUARD_INSTALL, Linux >= 6.13),
 * as the runtime will see it (the test knob CL_TEST_GUARD_MARKERS=0 says no)? */
static int kernel_markers(void)
{
	const char *knob = getenv("CL_TEST_GUARD_MARKERS");
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *m;
	int ok;

	if (knob && !strcmp(knob, "0"))
		return 0;
	m = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	ok = madvise(m, pg, 102 /* MADV_GUARD_INSTALL */) == 0;
	munmap(m, pg);
	return ok;
}

static void assert_mode(const struct cl_runtime *rt, const char *want)
{
	const char *got = cl_runtime_guard_mode(rt);

	cr_assert_not_null(got);
	cr_assert(strcmp(got, want) == 0, "guard mode \"%s\", expected \"%s\"", got, want);
}

static void *idle_task(void *p)
{
	return p;
}

/* A runtime of one worker with guard mode @mode and @flags. */
static struct cl_runtime *create_guarded(int mode, unsigned int flags)
{
	struct cl_runtime_attr a = { .nr_workers = 1, .flags = flags, .guard_mode = mode };

	return cl_runtime_create(&a);
}

Test(sched_runtime_stacks, guard_modes_as_the_kernel_allows)
{
	int markers = kernel_markers();
	struct cl_runtime *rt;

	rt = create_guarded(CL_RUNTIME_GUARD_AUTO, 0);
	cr_assert_not_null(rt);
	assert_mode(rt, markers ? "markers" : "mprotect+checked");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	errno = 0;
	rt = create_guarded(CL_RUNTIME_GUARD_MARKERS, 0);
	if (markers) {
		cr_assert_not_null(rt);
		assert_mode(rt, "markers");
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	} else {
		cr_assert_null(rt);
		cr_assert_eq(errno, ENOSYS);
	}
	rt = create_guarded(CL_RUNTIME_GUARD_MPROTECT, 0);
	cr_assert_not_null(rt);
	assert_mode(rt, "mprotect");
	cr_assert_not_null(cl_spawn(rt, NULL, idle_task, NULL)); /* a guard made by mprotect */
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	rt = create_guarded(CL_RUNTIME_GUARD_CHECKED, 0);
	cr_assert_not_null(rt);
	assert_mode(rt, "checked");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	errno = 0;
	cr_assert_null(create_guarded(CL_RUNTIME_GUARD_CHECKED + 1, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(create_guarded(-1, 0));
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_null(cl_runtime_guard_mode(NULL));
	cr_assert_eq(errno, EINVAL);
}

/* Without guard markers (as on Linux < 6.13) an explicit markers mode is
 * refused, and AUTO is the mixed mode. */
Test(sched_runtime_stacks, guard_markers_refused_knob)
{
	struct cl_runtime *rt;

	cr_assert_eq(setenv("CL_TEST_GUARD_MARKERS", "0", 1), 0);
	errno = 0;
	cr_assert_null(create_guarded(CL_RUNTIME_GUARD_MARKERS, 0));
	cr_assert_eq(errno, ENOSYS);
	rt = create_guarded(CL_RUNTIME_GUARD_AUTO, 0);
	cr_assert_not_null(rt);
	assert_mode(rt, "mprotect+checked");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	cr_assert_eq(unsetenv("CL_TEST_GUARD_MARKERS"), 0);
}

/* ---- huge pages ---- */

/* The VmFlags of the /proc/self/smaps entry holding @addr ("" if none). */
static void vm_flags_of(const void *addr, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0;

	out[0] = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && !strncmp(line, "VmFlags:", 8)) {
			size_t n = strlen(line + 8);

			n = n < size - 1 ? n : size - 1;
			memcpy(out, line + 8, n);
			out[n] = 0;
			break;
		}
	}
	fclose(f);
}

static void *stack_address(void *p)
{
	(void)p;
	return __builtin_frame_address(0); /* within the task's stack */
}

/* With transparent huge pages "always" (Debian's kernels), a stack batch
 * that may take huge pages costs a parked task 2 MiB / 16 slots instead of
 * the page it touched: the batches are MADV_NOHUGEPAGE ("nh"), in every
 * guard mode. A kernel without THP has no such flag to set. */
Test(sched_runtime_stacks, task_stacks_take_no_transparent_huge_pages)
{
	static const int modes[] = { CL_RUNTIME_GUARD_AUTO, CL_RUNTIME_GUARD_MPROTECT, CL_RUNTIME_GUARD_CHECKED };

	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
		cr_log_info("no transparent huge pages in this kernel: nothing to refuse");
		return;
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct cl_runtime *rt = create_guarded(modes[i], 0);
		void *sp = NULL;
		char flags[512];

		cr_assert_not_null(rt, "mode %d: %s", modes[i], strerror(errno));
		cr_assert_eq(cl_join(cl_spawn(rt, NULL, stack_address, NULL), &sp), 0);
		cr_assert_not_null(sp);
		vm_flags_of(sp, flags, sizeof(flags));
		cr_assert(flags[0], "mode %s: no smaps entry holds the task's stack %p", cl_runtime_guard_mode(rt), sp);
		cr_assert(strstr(flags, " nh") != NULL, "mode %s: the stack's mapping may take huge pages (VmFlags:%s)",
			  cl_runtime_guard_mode(rt), flags);
		cr_assert_eq(cl_runtime_destroy(rt), 0);
	}
}

/* ---- overflow ---- */

/* Not built under the sanitizers (they handle SIGSEGV themselves) or
 * without the POSIX signal API (no report). */
#if !defined(CL__RT_ASAN) && !defined(CL_HAVE_TSAN) && defined(CL__RT_OVERFLOW_REPORT)

/* Each frame reserves 16 KiB and writes its lowest byte first: the first
 * access past the stack's end lands 16 KiB below the last frame, beyond a
 * one-page guard. */
static CL_NOINLINE unsigned long deep(unsigned long n)
{
	volatile char frame[16 * 1024];

	frame[0] = (char)n;
	frame[sizeof(frame) - 1] = (char)n;
	return n ? deep(n - 1) + (unsigned long)frame[0] : 0;
}

static void *overflow(void *p)
{
	(void)p;
	return (void *)(uintptr_t)deep(1ul << 20);
}

static void *idle_neighbour(void *p)
{
	return p;
}

/* Run @body in a forked child whose stderr goes to @msg; returns its wait status. */
static int in_child(void (*body)(void), char *msg, size_t size)
{
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };

		close(fds[0]);
		dup2(fds[1], 2);
		setrlimit(RLIMIT_CORE, &no_core); /* it dies of a signal: no core file */
		body();
		_exit(4); /* not reached */
	}
	close(fds[1]);
	while (got < (ssize_t)size - 1 && (n = read(fds[0], msg + got, size - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = 0;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static struct cl_runtime *checked_rt; /* the runtime of the checked-guard tasks */

static struct cl_runtime *one_worker(int guard_mode, unsigned int flags)
{
	struct cl_runtime *rt = create_guarded(guard_mode, flags);

	if (!rt)
		_exit(3);
	checked_rt = rt;
	return rt;
}

static void overflow_child(void)
{
	struct cl_runtime *rt = one_worker(CL_RUNTIME_GUARD_AUTO, 0);

	/* a neighbour below in the same batch, then the task that overflows */
	cl_join(cl_spawn(rt, NULL, idle_neighbour, NULL), NULL);
	cl_join(cl_spawn(rt, NULL, overflow, NULL), NULL);
}

Test(sched_runtime_stacks, overflow_dies_of_sigsegv_and_names_the_task, .timeout = 60)
{
	char msg[1024];
	int status = in_child(overflow_child, msg, sizeof(msg));

	cr_assert(WIFSIGNALED(status), "child did not die of a signal (status %#x): %s", status, msg);
	cr_assert_eq(WTERMSIG(status), SIGSEGV, "child died of signal %d", WTERMSIG(status));
	cr_assert_not_null(strstr(msg, "overflowed its stack ["), "no report: \"%s\"", msg);
	cr_assert_not_null(strstr(msg, "in its guard ["), "no guard bounds: \"%s\"", msg);
}

/*
 * Checked guards: frames of about 1 KiB, each written whole, down to
 * about 8 KiB past the end of the stack (within the 64 KiB guard region,
 * which takes them); then a switch (joining a new task blocks), or none
 * before the task returns.
 */
static volatile unsigned long spins;

/* At the bottom: 1 switch, 2 spin until preempted, 0 return. */
static CL_NOINLINE unsigned long shallow_frames(unsigned long n, int at_bottom)
{
	volatile char frame[1024];

	memset((char *)frame, (int)(n | 1), sizeof(frame));
	if (!n) {
		if (at_bottom == 1)
			cl_join(cl_spawn(checked_rt, NULL, idle_neighbour, NULL), NULL);
		while (at_bottom == 2)
			spins++; /* the tick's signal interrupts it after a slice */
		return frame[0];
	}
	return shallow_frames(n - 1, at_bottom) + (unsigned long)frame[n % sizeof(frame)];
}

static void *overflow_then_switch(void *p)
{
	return (void *)(uintptr_t)shallow_frames((uintptr_t)p, 1);
}

#ifdef CL__RT_ASYNC_PREEMPT
static void *overflow_then_spin(void *p)
{
	return (void *)(uintptr_t)shallow_frames((uintptr_t)p, 2);
}
#endif

static void *overflow_and_return(void *p)
{
	return (void *)(uintptr_t)shallow_frames((uintptr_t)p, 0);
}

/* Frames that reach about 8 KiB past the end of @rt's stacks. */
static uintptr_t past_the_end(struct cl_runtime *rt)
{
	return (uintptr_t)(rt->stack_size / 1024 + 8);
}

static void checked_switch_child(void)
{
	struct cl_runtime *rt = one_worker(CL_RUNTIME_GUARD_CHECKED, CL_RUNTIME_NO_PREEMPT);

	cl_join(cl_spawn(rt, NULL, idle_neighbour, NULL), NULL);
	cl_join(cl_spawn(rt, NULL, overflow_then_switch, (void *)past_the_end(rt)), NULL);
}

#ifdef CL__RT_ASYNC_PREEMPT
static void checked_preempt_child(void)
{
	struct cl_runtime *rt = one_worker(CL_RUNTIME_GUARD_CHECKED, 0);

	cl_join(cl_spawn(rt, NULL, idle_neighbour, NULL), NULL);
	cl_join(cl_spawn(rt, NULL, overflow_then_spin, (void *)past_the_end(rt)), NULL);
}
#endif

static void checked_exit_child(void)
{
	struct cl_runtime *rt = one_worker(CL_RUNTIME_GUARD_CHECKED, CL_RUNTIME_NO_PREEMPT);

	cl_join(cl_spawn(rt, NULL, idle_neighbour, NULL), NULL);
	cl_join(cl_spawn(rt, NULL, overflow_and_return, (void *)past_the_end(rt)), NULL);
}

static void assert_aborted_with_report(int status, const char *msg, const char *how)
{
	cr_assert(WIFSIGNALED(status), "child did not die of a signal (status %#x): %s", status, msg);
	cr_assert_eq(WTERMSIG(status), SIGABRT, "child died of signal %d: %s", WTERMSIG(status), msg);
	cr_assert_not_null(strstr(msg, "overflowed its stack ["), "no report: \"%s\"", msg);
	cr_assert_not_null(strstr(msg, "in its guard ["), "not in its guard: \"%s\"", msg);
	cr_assert_not_null(strstr(msg, how), "not %s: \"%s\"", how, msg);
}

Test(sched_runtime_stacks, checked_guard_overflow_is_reported_at_the_switch, .timeout = 60)
{
	char msg[1024];
	int status = in_child(checked_switch_child, msg, sizeof(msg));

	assert_aborted_with_report(status, msg, "stack pointer 0x");
	cr_assert_not_null(strstr(msg, "seen at a switch"), "\"%s\"", msg);
}

#ifdef CL__RT_ASYNC_PREEMPT /* the tick signals (not under TSan) */
/* A task that overflowed and runs on without a switch: the preemption
 * signal's handler sees it (the tick signals a task that ran a slice). */
Test(sched_runtime_stacks, checked_guard_overflow_is_reported_by_the_preemption_signal, .timeout = 60)
{
	char msg[1024];
	int status = in_child(checked_preempt_child, msg, sizeof(msg));

	assert_aborted_with_report(status, msg, "stack pointer 0x");
	cr_assert_not_null(strstr(msg, "seen by the preemption signal"), "\"%s\"", msg);
}
#endif

Test(sched_runtime_stacks, checked_guard_overflow_is_reported_at_exit, .timeout = 60)
{
	char msg[1024];
	int status = in_child(checked_exit_child, msg, sizeof(msg));

	assert_aborted_with_report(status, msg, "a write at 0x");
	cr_assert_not_null(strstr(msg, "found at its exit"), "\"%s\"", msg);
}

/* The same frames within the stack: no report, the task returns. */
Test(sched_runtime_stacks, checked_guard_without_overflow_is_quiet)
{
	struct cl_runtime *rt = create_guarded(CL_RUNTIME_GUARD_CHECKED, 0);
	void *ret = NULL;

	cr_assert_not_null(rt);
	assert_mode(rt, "checked");
	checked_rt = rt;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(cl_join(cl_spawn(rt, NULL, overflow_then_switch,
					      (void *)(uintptr_t)(rt->stack_size / 1024 / 2)), &ret), 0);
		cr_assert_eq(cl_join(cl_spawn(rt, NULL, overflow_and_return,
					      (void *)(uintptr_t)(rt->stack_size / 1024 / 2)), &ret), 0);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
#endif

/* ---- many parked tasks ---- */

struct parked {
	struct cl_waitq wq;
	int released;
	atomic_long waiting;
};

static void *park(void *p)
{
	struct parked *pk = (struct parked *)p;

	cl_waitq_lock(&pk->wq);
	atomic_fetch_add(&pk->waiting, 1);
	while (!pk->released) {
		cl_waitq_wait(&pk->wq);
		cl_waitq_lock(&pk->wq);
	}
	cl_waitq_unlock(&pk->wq);
	return NULL;
}

static long count_mappings(void)
{
	char line[512];
	long n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strchr(line, '\n') != NULL;
	fclose(f);
	return n;
}

static long parked_count(void)
{
	const char *e = getenv("CL_TEST_PARKED_TASKS");
#if defined(CL_HAVE_TSAN)
	long n = 1000; /* a TSan fiber per task: 10,000 took over 300 s at load 20, 2,000 15 s */
#elif defined(CL__RT_ASAN)
	long n = 10000;
#else
	long n = 100000;
#endif
#ifdef CL__RT_VALGRIND
	if (RUNNING_ON_VALGRIND)
		n = 10000;
#endif
	if (e && atol(e) > 0)
		n = atol(e);
	return n;
}

/* vm.max_map_count as the runtime sees it (after CL_TEST_MAX_MAP_COUNT). */
static long max_map_count(void)
{
	const char *knob = getenv("CL_TEST_MAX_MAP_COUNT");
	long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

	if (f) {
		cr_assert_eq(fscanf(f, "%ld", &max), 1);
		fclose(f);
	}
	if (knob && atol(knob) > 0 && atol(knob) < max)
		max = atol(knob);
	return max;
}

/*
 * Park @n tasks at once on a runtime with default attributes (two
 * unpinned workers): every spawn succeeds, the guard mode is @mode, and
 * the mappings added stay under @max_added (see callers). Returns the
 * mappings added.
 */
static long park_many(long n, const char *mode, long max_added)
{
	long before, during;
	struct cl_runtime_attr a;
	struct cl_runtime *rt;
	struct cl_rt_task **t = calloc((size_t)n, sizeof(*t));
	static struct parked pk;

	cr_assert_not_null(t);
	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt);
	assert_mode(rt, mode);
	cl_waitq_init(&pk.wq);
	pk.released = 0;
	atomic_store(&pk.waiting, 0);
	before = count_mappings();
	for (long i = 0; i < n; i++) {
		t[i] = cl_spawn(rt, NULL, park, &pk);
		cr_assert_not_null(t[i], "task %ld of %ld: %s", i, n, strerror(errno));
	}
	while (atomic_load(&pk.waiting) < n)
		sched_yield();
	during = count_mappings();
	cr_log_info("%ld parked tasks, %s guards: %ld -> %ld mappings (limit %ld)", n, mode, before,
		    during, max_map_count());
#ifndef CL_HAVE_TSAN /* TSan maps memory of its own for every fiber (about 4 mappings each) */
	cr_assert_lt(during - before, max_added, "%ld parked tasks added %ld mappings", n, during - before);
#else
	(void)max_added;
#endif
	cl_waitq_lock(&pk.wq);
	pk.released = 1;
	cl_waitq_unlock(&pk.wq);
	cl_waitq_wake_all(&pk.wq);
	for (long i = 0; i < n; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	free(t);
	return during - before;
}

/*
 * Default attributes, on any kernel: with guard markers no mapping per
 * task (a batch of 64 slots is one mapping); without, mprotect guards
 * (two mappings each) only within the budget, half of vm.max_map_count,
 * then checked guards: never ENOMEM at the limit.
 */
Test(sched_runtime_stacks, hundred_thousand_parked_tasks_without_a_mapping_each, .timeout = 300)
{
	long n = parked_count();

	if (kernel_markers())
		park_many(n, "markers", n / 16 + 64);
	else
		park_many(n, "mprotect+checked", max_map_count() / 2 + n / 16 + 64);
}

/*
 * The mixed mode on any kernel: guard markers refused (as on Linux < 6.13)
 * and a map limit that leaves about a thousand mappings to guards (the
 * test knobs): about 500 mprotect guards, then checked ones, every task
 * spawned.
 */
Test(sched_runtime_stacks, hundred_thousand_parked_tasks_with_markers_refused, .timeout = 300)
{
	long n = parked_count(), added;
	char max[32];

	snprintf(max, sizeof(max), "%ld", 2 * count_mappings() + 2000);
	cr_assert_eq(setenv("CL_TEST_GUARD_MARKERS", "0", 1), 0);
	cr_assert_eq(setenv("CL_TEST_MAX_MAP_COUNT", max, 1), 0);
	added = park_many(n, "mprotect+checked", 1000 + 64 + n / 16 + 64);
#ifndef CL_HAVE_TSAN
	cr_assert_gt(added, 500, "only %ld mappings added: no mprotect guard?", added);
#else
	(void)added;
#endif
	cr_assert_eq(unsetenv("CL_TEST_GUARD_MARKERS"), 0);
	cr_assert_eq(unsetenv("CL_TEST_MAX_MAP_COUNT"), 0);
}
