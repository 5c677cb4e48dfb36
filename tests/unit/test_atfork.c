/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/atfork.h: bad arguments (EINVAL), a registered
 * structure reset by its child hook with its lock held and usable in the
 * child (the parent untouched), child hooks newest registration first, a
 * registration without a lock, and no hook after unregistering.
 */
#include <cachelocal/atfork.h>

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

/* A user's structure: a lock, state the child must not inherit, its hook. */
struct table {
	pthread_mutex_t lock;
	int users;      /* reset in the child */
	int entries;    /* kept in the child */
	int hook_held;  /* the hook found the lock held */
	int order;      /* position among the child hooks that ran */
	struct cl_atfork fork;
};

static int hooks_run; /* child hooks run so far in this process */

static void table_child(struct cl_atfork *f)
{
	struct table *t = (struct table *)(void *)((char *)f - offsetof(struct table, fork));

	t->hook_held = pthread_mutex_trylock(&t->lock) == EBUSY;
	t->users = 0;
	t->order = ++hooks_run;
}

static void table_init(struct table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->users = 3;
	t->entries = 5;
}

/* Fork; the child exits with @check()'s result; returns the child's status. */
static int in_child(int (*check)(void))
{
	int st = -1;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(check());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

Test(atfork, bad_arguments)
{
	static struct cl_atfork f;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	errno = 0;
	cr_assert_eq(cl_atfork_register(NULL, &m, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_atfork_register(&f, NULL, NULL), -1, "nothing to hold, nothing to run");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_atfork_unregister(&f), -1, "not registered");
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_atfork_unregister(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_atfork_register(&f, &m, NULL), 0);
	errno = 0;
	cr_assert_eq(cl_atfork_register(&f, &m, NULL), -1, "registered twice");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_atfork_unregister(&f), 0);
	errno = 0;
	cr_assert_eq(cl_atfork_unregister(&f), -1, "unregistered twice");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_atfork_register(&f, &m, NULL), 0, "registered again after unregister");
	cr_assert_eq(cl_atfork_unregister(&f), 0);
}

static struct table t1, t2;

/* 0 ok; 1 hooks; 2 lock left held; 3 state; 4 order; 5 using it failed. */
static int check_two_tables(void)
{
	if (!t1.hook_held || !t2.hook_held)
		return 1;
	if (pthread_mutex_trylock(&t1.lock) != 0 || pthread_mutex_trylock(&t2.lock) != 0)
		return 2;
	if (t1.users != 0 || t2.users != 0 || t1.entries != 5 || t2.entries != 5)
		return 3;
	if (t2.order != 1 || t1.order != 2) /* t2 registered last: its hook first */
		return 4;
	/* The child uses what was registered: update under the lock, fork again. */
	t1.entries++;
	t1.users = 1;
	pthread_mutex_unlock(&t1.lock);
	pthread_mutex_unlock(&t2.lock);
	hooks_run = 0;
	if (fork() == 0)
		_exit(t1.users == 0 && t1.entries == 6 && pthread_mutex_trylock(&t1.lock) == 0 ? 0 : 1);
	{
		int st = -1;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 5;
	}
	return 0;
}

Test(atfork, child_gets_reset_structures_and_free_locks)
{
	int r;

	table_init(&t1);
	table_init(&t2);
	hooks_run = 0;
	cr_assert_eq(cl_atfork_register(&t1.fork, &t1.lock, table_child), 0);
	cr_assert_eq(cl_atfork_register(&t2.fork, &t2.lock, table_child), 0);
	r = in_child(check_two_tables);
	cr_assert_eq(r, 0, "child check %d (1 hooks, 2 lock held, 3 state, 4 order, 5 reuse)", r);
	/* The parent: no hook ran, state untouched, locks free. */
	cr_assert_eq(hooks_run, 0);
	cr_assert_eq(t1.users, 3);
	cr_assert_eq(pthread_mutex_trylock(&t1.lock), 0);
	pthread_mutex_unlock(&t1.lock);
	cr_assert_eq(pthread_mutex_trylock(&t2.lock), 0);
	pthread_mutex_unlock(&t2.lock);
	cr_assert_eq(cl_atfork_unregister(&t2.fork), 0);
	cr_assert_eq(cl_atfork_unregister(&t1.fork), 0);
}

static struct cl_atfork lockless;
static int lockless_ran;

static void lockless_child(struct cl_atfork *f)
{
	lockless_ran = f == &lockless;
}

static int check_lockless(void)
{
	return lockless_ran ? 0 : 1;
}

static int check_nothing_ran(void)
{
	return lockless_ran == 0 && t1.users == 3 ? 0 : 1;
}

Test(atfork, hook_without_lock_and_none_after_unregister)
{
	lockless_ran = 0;
	cr_assert_eq(cl_atfork_register(&lockless, NULL, lockless_child), 0);
	cr_assert_eq(in_child(check_lockless), 0, "the hook of a lockless registration ran");
	cr_assert_eq(lockless_ran, 0, "not in the parent");
	cr_assert_eq(cl_atfork_unregister(&lockless), 0);

	table_init(&t1);
	cr_assert_eq(cl_atfork_register(&t1.fork, &t1.lock, table_child), 0);
	cr_assert_eq(cl_atfork_unregister(&t1.fork), 0);
	cr_assert_eq(in_child(check_nothing_ran), 0, "a hook ran after unregister");
}
