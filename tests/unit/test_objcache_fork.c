/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_objcache_fork.c - fork() while another thread allocates
 * and drains an object cache: every child allocates, frees and drains, and
 * exits (without the cache's mutexes in the fork registry, a child that
 * inherits one of them held waits for it forever; alarm() turns that into a
 * failed round instead of a hang).
 *
 * The race is forced through the cache's CL_INJECT() points, not left to
 * timing (and no sleep):
 *   50  the slow alloc holds the depot's mutex
 *   51  a drain holds the drain lock
 * Armed, the worker stops at the point, lock held, and stays there until
 * either the fork returned in the parent (the fork did not wait for the
 * lock: the child got it held) or another thread waits for that very lock
 * (the fork registry's prepare handler, which holds every registered lock
 * across the fork). The second test is read from glibc's mutex word (2:
 * locked with waiters), so the test runs on glibc only.
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cachelocal/objcache.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* Forks (each point half of them); fewer under valgrind, where a fork
 * copies the instrumented process. */
#define ROUNDS 50
#define ROUNDS_VALGRIND 10

static struct cl_objcache *cache;
static atomic_int armed;   /* 50 or 51: stop there once; 0: run */
static atomic_int holding; /* the worker stopped at the armed point */
static atomic_int forked;  /* the fork returned in the parent */
static atomic_int stop;

#ifdef __GLIBC__
/* Another thread blocks on @m (glibc's lock word: 0 free, 1 held, 2 held
 * with waiters). */
static int has_waiter(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) > 1;
}
#else
static int has_waiter(pthread_mutex_t *m)
{
	(void)m;
	return 0;
}
#endif

static void inject(int n)
{
	int want = n;
	pthread_mutex_t *m;

	if ((n != 50 && n != 51) || !atomic_compare_exchange_strong(&armed, &want, 0))
		return;
	m = n == 50 ? &cache->lock : &cache->drain_lock;
	atomic_store(&holding, 1);
	while (!atomic_load(&forked) && !has_waiter(m))
		sched_yield();
}

/* Allocates and frees (capacity 2: every other alloc takes the depot's
 * mutex); drains while point 51 is armed. */
static void *worker(void *arg)
{
	void *o[8];

	(void)arg;
	while (!atomic_load(&stop)) {
		for (int i = 0; i < 8; i++)
			o[i] = cl_objcache_alloc(cache);
		for (int i = 0; i < 8; i++)
			cl_objcache_free(cache, o[i]);
		if (atomic_load(&armed) == 51)
			(void)cl_objcache_drain_cpu(cache, cl_cpu_id());
	}
	return NULL;
}

/* The child: allocate past the CPU cache, free, drain every CPU it may run on. */
static void child(void)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64), ok = 1;
	void *o[16];

	alarm(20);
	for (int i = 0; i < 16; i++) {
		o[i] = cl_objcache_alloc(cache);
		ok &= o[i] != NULL;
	}
	for (int i = 0; i < 16; i++)
		ok &= cl_objcache_free(cache, o[i]) == 0;
	for (int i = 0; i < n; i++)
		ok &= cl_objcache_drain_cpu(cache, cpus[i]) >= 0 || errno == ENOSYS;
	_exit(ok ? 0 : 1);
}

Test(objcache_fork, child_allocates_and_drains_while_parent_thread_holds_locks, .timeout = 120)
{
	struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 2 };
	int rounds = RUNNING_ON_VALGRIND ? ROUNDS_VALGRIND : ROUNDS;
	pthread_t th;

#ifndef __GLIBC__
	cr_skip_test("the test reads glibc's mutex word");
#endif
	cache = cl_objcache_create(&a);
	cr_assert_not_null(cache);
	cr_assert_eq(pthread_create(&th, NULL, worker, NULL), 0);
	for (int round = 0; round < rounds; round++) {
		int point = round % 2 ? 51 : 50, status = -1;
		pid_t pid;

		atomic_store(&holding, 0);
		atomic_store(&forked, 0);
		atomic_store(&armed, point);
		while (!atomic_load(&holding))
			sched_yield();
		pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0)
			child();
		atomic_store(&forked, 1);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "round %d (point %d): child %s %d", round, point,
			  WIFSIGNALED(status) ? "killed by signal" : "exit status",
			  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	atomic_store(&stop, 1);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(cl_objcache_destroy(cache), 0, "the parent lost nothing");
}
