/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_blocking.c - cl_blocking(): the call runs
 * on a helper thread while its task is parked and the worker runs other
 * tasks; its return value and errno reach the task; at most
 * CL_RUNTIME_BLOCKING_THREADS helpers run calls, the rest wait in order;
 * cl_runtime_shutdown() waits for a task in cl_blocking() (never calls it
 * blocked for good); outside a task the call is made directly. The
 * hand-off is raced by many tasks on two workers (every result returned
 * to its own task).
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>

#include <cachelocal/sched/runtime.h>

static atomic_int shutdown_looks; /* passes of cl_runtime_shutdown()'s wait loop */

static void inject(int n)
{
	if (n == 61)
		atomic_fetch_add(&shutdown_looks, 1);
}

static struct cl_runtime *new_rt(unsigned int nr_workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = nr_workers;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static struct cl_rt_task *spawn_on(struct cl_runtime *rt, unsigned int worker, void *(*fn)(void *),
				   void *arg)
{
	struct cl_spawn_attr sa;
	struct cl_rt_task *t;

	memset(&sa, 0, sizeof(sa));
	sa.worker = CL_SPAWN_WORKER(worker);
	t = cl_spawn(rt, &sa, fn, arg);
	cr_assert_not_null(t, "cl_spawn: %s", strerror(errno));
	return t;
}

static void *join(struct cl_rt_task *t)
{
	void *ret = (void *)1;

	cr_assert_eq(cl_join(t, &ret), 0);
	return ret;
}

static long gettid_now(void)
{
	return (long)syscall(SYS_gettid);
}

/* ---- the worker runs others while a call blocks ---- */

static int pipefd[2];

/* blocks its thread until the other task writes */
static long read_pipe(void *p)
{
	char c = 0;

	(void)p;
	if (read(pipefd[0], &c, 1) != 1)
		return -1;
	return c;
}

static void *reader_task(void *p)
{
	long tid = gettid_now();
	long r;

	(void)p;
	r = cl_blocking(read_pipe, NULL);
	if (r != 'x')
		return (void *)"cl_blocking did not return the call's value";
	if (gettid_now() != tid)
		return (void *)"the task came back on another thread (one worker)";
	return NULL;
}

static void *writer_task(void *p)
{
	(void)p;
	/* the only worker runs this while the reader's call blocks a helper */
	if (write(pipefd[1], "x", 1) != 1)
		return (void *)"write";
	return NULL;
}

Test(sched_runtime_blocking, the_worker_runs_other_tasks_while_a_call_blocks, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *r, *w;

	cr_assert_eq(pipe(pipefd), 0);
	/* the reader first: with the worker blocked in its read, the writer
	 * would never run and the test would hang */
	r = spawn_on(rt, 0, reader_task, NULL);
	w = spawn_on(rt, 0, writer_task, NULL);
	cr_assert_null(join(r), "%s", (const char *)join(r));
	cr_assert_null(join(w));
	cr_assert_eq(cl_runtime_destroy(rt), 0);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* ---- return value, errno, thread ---- */

static long fail_enoent(void *p)
{
	*(long *)p = gettid_now();
	errno = ENOENT;
	return -1;
}

static long big_value(void *p)
{
	(void)p;
	errno = 0;
	return 0x7ffffffffffff123L;
}

static void *values_task(void *p)
{
	long helper_tid = 0;

	(void)p;
	errno = 0;
	if (cl_blocking(fail_enoent, &helper_tid) != -1 || errno != ENOENT)
		return (void *)"the call's -1/ENOENT did not reach the task";
	if (helper_tid == 0 || helper_tid == gettid_now())
		return (void *)"the call did not run on a helper thread";
	errno = EBADF;
	if (cl_blocking(big_value, NULL) != 0x7ffffffffffff123L)
		return (void *)"a long result was cut";
	if (errno != 0)
		return (void *)"errno is not the call's";
	errno = 0;
	if (cl_blocking(NULL, NULL) != -1 || errno != EINVAL)
		return (void *)"a NULL call was not refused with EINVAL";
	return NULL;
}

Test(sched_runtime_blocking, the_calls_value_and_errno_reach_the_task)
{
	struct cl_runtime *rt = new_rt(1);
	void *err = join(spawn_on(rt, 0, values_task, NULL));

	cr_assert_null(err, "%s", (const char *)err);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_blocking, outside_a_task_the_call_is_made_directly)
{
	long tid = 0;

	errno = 0;
	cr_assert_eq(cl_blocking(fail_enoent, &tid), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_eq(tid, gettid_now(), "outside a task the call runs on the caller's thread");
	errno = 0;
	cr_assert_eq(cl_blocking(NULL, NULL), -1);
	cr_assert_eq(errno, EINVAL);
}

/* ---- the pool's bound ---- */

#define NR_CALLS (3 * CL_RUNTIME_BLOCKING_THREADS)

static atomic_int cur, max_cur, release;

static long held_call(void *p)
{
	int n = atomic_fetch_add(&cur, 1) + 1, m = atomic_load(&max_cur);

	while (n > m && !atomic_compare_exchange_weak(&max_cur, &m, n))
		;
	while (!atomic_load(&release))
		sched_yield();
	atomic_fetch_sub(&cur, 1);
	return (long)(intptr_t)p * 3;
}

static void *held_task(void *p)
{
	if (cl_blocking(held_call, p) != (long)(intptr_t)p * 3)
		return (void *)"a call's result went to another task";
	return NULL;
}

static unsigned int queued(struct cl_runtime *rt, unsigned int *threads)
{
	struct cl__rt_bpool *p = CL_ATOMIC_LOAD(&rt->bpool, CL_ACQUIRE);
	struct cds_list_head *pos;
	unsigned int n = 0;

	*threads = 0;
	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	cds_list_for_each(pos, &p->queue)
		n++;
	*threads = p->nr_threads;
	pthread_mutex_unlock(&p->lock);
	return n;
}

Test(sched_runtime_blocking, at_most_the_bound_of_helpers_run_calls_the_rest_wait, .timeout = 60)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_rt_task *t[NR_CALLS];
	unsigned int threads = 0;

	for (unsigned int i = 0; i < NR_CALLS; i++)
		t[i] = spawn_on(rt, i % 2, held_task, (void *)(intptr_t)(i + 1));
	/* every helper holds a call and the rest are queued: with no bound the
	 * queue would never fill and this would hang */
	while (queued(rt, &threads) != NR_CALLS - CL_RUNTIME_BLOCKING_THREADS ||
	       atomic_load(&cur) != (int)CL_RUNTIME_BLOCKING_THREADS)
		sched_yield();
	cr_assert_eq(threads, CL_RUNTIME_BLOCKING_THREADS);
	atomic_store(&release, 1);
	for (unsigned int i = 0; i < NR_CALLS; i++) {
		void *err = join(t[i]);

		cr_assert_null(err, "%s", (const char *)err);
	}
	cr_assert_eq(atomic_load(&max_cur), (int)CL_RUNTIME_BLOCKING_THREADS);
	cr_assert_eq(queued(rt, &threads), 0);
	cr_assert_eq(threads, CL_RUNTIME_BLOCKING_THREADS);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- shutdown waits ---- */

static atomic_int call_running, call_release;

static long waits_for_release(void *p)
{
	(void)p;
	atomic_store(&call_running, 1);
	while (!atomic_load(&call_release))
		sched_yield();
	return 42;
}

static void *long_call_task(void *p)
{
	(void)p;
	return cl_blocking(waits_for_release, NULL) == 42 ? NULL : (void *)"result";
}

static atomic_int shutdown_ret = 1, shutdown_errno;

static void *shutdown_thread(void *p)
{
	int r = cl_runtime_shutdown((struct cl_runtime *)p);

	atomic_store(&shutdown_errno, errno);
	atomic_store(&shutdown_ret, r);
	return NULL;
}

Test(sched_runtime_blocking, shutdown_waits_for_a_task_in_a_blocking_call, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_rt_task *t = spawn_on(rt, 0, long_call_task, NULL);
	pthread_t th;
	int looks;

	while (!atomic_load(&call_running))
		sched_yield();
	looks = atomic_load(&shutdown_looks);
	cr_assert_eq(pthread_create(&th, NULL, shutdown_thread, rt), 0);
	/* every worker is asleep, the task is parked: shutdown looks again and
	 * again (each look is where it would have said EDEADLK) */
	while (atomic_load(&shutdown_looks) < looks + 3 && atomic_load(&shutdown_ret) == 1)
		sched_yield();
	cr_assert_eq(atomic_load(&shutdown_ret), 1, "shutdown returned %d (errno %d) with a call in flight",
		     atomic_load(&shutdown_ret), atomic_load(&shutdown_errno));
	atomic_store(&call_release, 1);
	pthread_join(th, NULL);
	cr_assert_eq(atomic_load(&shutdown_ret), 0, "shutdown: errno %d", atomic_load(&shutdown_errno));
	cr_assert_null(join(t));
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- many tasks, two workers ---- */

#define NR_TASKS 64
#define CALLS_PER_TASK 200

static long echo_call(void *p)
{
	return (long)(intptr_t)p;
}

static void *echo_task(void *p)
{
	intptr_t base = (intptr_t)p * 100000;

	for (intptr_t i = 0; i < CALLS_PER_TASK; i++) {
		if (cl_blocking(echo_call, (void *)(base + i)) != base + i)
			return (void *)"a result went to the wrong call";
		if (i % 16 == 0)
			cl_yield();
	}
	return NULL;
}

Test(sched_runtime_blocking, many_tasks_on_two_workers_each_get_their_own_results, .timeout = 120)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_rt_task *t[NR_TASKS];

	for (unsigned int i = 0; i < NR_TASKS; i++)
		t[i] = spawn_on(rt, i % 2, echo_task, (void *)(intptr_t)(i + 1));
	for (unsigned int i = 0; i < NR_TASKS; i++) {
		void *err = join(t[i]);

		cr_assert_null(err, "%s", (const char *)err);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}
