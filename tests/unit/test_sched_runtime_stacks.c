/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_stacks.c - the M:N runtime's task stacks:
 * a frame larger than a page that runs past the end of a stack faults in
 * the guard region (not in a neighbour's stack) and the report names the
 * task and its stack bounds before the process dies of SIGSEGV (in a
 * forked child); 100,000 parked tasks at once with the mapping count not
 * growing per task (CL_TEST_PARKED_TASKS sets the count; ASan and valgrind
 * builds default to 10,000, TSan to 2,000).
 */
#include <stdatomic.h>

#include "cl_test.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <cachelocal/sched/runtime.h>

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

Test(sched_runtime_stacks, overflow_dies_of_sigsegv_and_names_the_task, .timeout = 60)
{
	int fds[2], status;
	char msg[1024];
	ssize_t n, got = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		struct cl_runtime_attr a;
		struct cl_runtime *rt;

		close(fds[0]);
		dup2(fds[1], 2);
		memset(&a, 0, sizeof(a));
		a.nr_workers = 1;
		rt = cl_runtime_create(&a);
		if (!rt)
			_exit(3);
		/* a neighbour below in the same batch, then the task that overflows */
		cl_join(cl_spawn(rt, NULL, idle_neighbour, NULL), NULL);
		cl_join(cl_spawn(rt, NULL, overflow, NULL), NULL);
		_exit(4); /* not reached */
	}
	close(fds[1]);
	while (got < (ssize_t)sizeof(msg) - 1 && (n = read(fds[0], msg + got, sizeof(msg) - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = 0;
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child did not die of a signal (status %#x): %s", status, msg);
	cr_assert_eq(WTERMSIG(status), SIGSEGV, "child died of signal %d", WTERMSIG(status));
	cr_assert_not_null(strstr(msg, "overflowed its stack ["), "no report: \"%s\"", msg);
	cr_assert_not_null(strstr(msg, "in its guard ["), "no guard bounds: \"%s\"", msg);
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

Test(sched_runtime_stacks, hundred_thousand_parked_tasks_without_a_mapping_each, .timeout = 300)
{
	long n = parked_count(), before, during;
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
	cl_waitq_init(&pk.wq);
	before = count_mappings();
	for (long i = 0; i < n; i++) {
		t[i] = cl_spawn(rt, NULL, park, &pk);
		cr_assert_not_null(t[i], "task %ld of %ld: %s", i, n, strerror(errno));
	}
	while (atomic_load(&pk.waiting) < n)
		sched_yield();
	during = count_mappings();
	cr_log_info("%ld parked tasks: %ld -> %ld mappings", n, before, during);
#ifndef CL_HAVE_TSAN /* TSan maps memory of its own for every fiber (about 4 mappings each) */
	cr_assert_lt(during - before, n / 16 + 64, "%ld parked tasks added %ld mappings", n,
		     during - before);
#endif
	cl_waitq_lock(&pk.wq);
	pk.released = 1;
	cl_waitq_unlock(&pk.wq);
	cl_waitq_wake_all(&pk.wq);
	for (long i = 0; i < n; i++)
		cr_assert_eq(cl_join(t[i], NULL), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	free(t);
}
