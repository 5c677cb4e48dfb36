/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/atfork.h - make a structure of your own safe across fork():
 * its lock held while the process forks, a hook to reset it in the child.
 *
 *	struct mine { pthread_mutex_t lock; struct cl_atfork fork; ... };
 *	static void mine_child(struct cl_atfork *f)
 *	{
 *		struct mine *m = cl_container_of(f, struct mine, fork);
 *		m->waiters = 0;          // lock held; only the forking thread exists
 *	}
 *	cl_atfork_register(&m->fork, &m->lock, mine_child);   // 0, or -1 + EINVAL
 *	...
 *	cl_atfork_unregister(&m->fork);                         // before freeing m
 *
 * A fork() copies memory as it is, including a mutex another thread holds
 * in the middle of an update; the child, which has only the forking thread,
 * would find the structure half-changed and the mutex held forever. Each
 * registered lock is taken before the fork and released after it in both
 * processes, so the child gets the structure between two updates:
 *
 *   prepare  (in the forking thread) the library's registry lock, then every
 *            registered lock, newest registration first;
 *   parent   releases them;
 *   child    for each registration: its child hook (lock held), then unlock.
 *
 * It is the library's own fork registry (percpu.h pools and cid.h domains
 * are in it), so the order between a user's locks and the library's is
 * fixed: the newest registration is locked first. A registration without a
 * lock (NULL) gets one of its own, so its child hook still runs in the
 * registry's order. Per-thread state (rseq registration) and membarrier
 * registration need no hook: the library redoes them in the child
 * (fence.h).
 *
 * Rules: while holding a registered lock, do not register, unregister, or
 * fork (prepare would wait for that lock while you wait for the registry
 * lock or for prepare). A child hook must not take a registered lock (it is
 * held) or fork.
 *
 * Synchronization: register and unregister may run concurrently with
 * anything, fork() included, except with each other on the same struct
 * cl_atfork.
 */
#ifndef CACHELOCAL_ATFORK_H
#define CACHELOCAL_ATFORK_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "compiler.h"
#include "internal/fork.h"

CL_BEGIN_DECLS

/**
 * struct cl_atfork - one registration; embed it in the structure it guards.
 * @entry: the registry's link (internal/fork.h).
 * @child: NULL, or run in the child.
 * @own_lock: held across fork() when no lock was given.
 * @registered: 1 between register and unregister.
 * @own: @own_lock is initialised.
 *
 * The fields are private: set them with cl_atfork_register() only.
 */
struct cl_atfork {
	struct cl__fork_entry entry;
	void (*child)(struct cl_atfork *f);
	pthread_mutex_t own_lock;
	int registered;
	int own;
};

/* The registry's child hook: the user's, through the embedding struct. */
CL_INLINE void cl__atfork_child(struct cl__fork_entry *e)
{
	struct cl_atfork *f = (struct cl_atfork *)(void *)((char *)e - offsetof(struct cl_atfork, entry));

	if (f->child != NULL)
		f->child(f);
}

/**
 * cl_atfork_register() - hold @lock across every fork(), run @child after it.
 * @f: the registration, inside the object it guards: zero-initialised
 *	storage (or one unregistered since); it must stay at this address
 *	until cl_atfork_unregister().
 * @lock: the object's mutex (a default or error-checking mutex), or NULL:
 *	the registration then uses a mutex of its own, so only @child matters.
 * @child: NULL, or called once in each fork() child, with @lock held and
 *	before it is released, in a process that has only the forking thread:
 *	reset what the child must not inherit (waiters, users, owner ids).
 *
 * Context: any thread, not holding a registered lock; not in a signal
 * handler; not concurrently with another call on @f.
 * Return: 0, or -1 with errno EINVAL (NULL @f; @f already registered;
 * @lock and @child both NULL: nothing to do) or the errno of
 * pthread_mutex_init() for the own lock.
 */
CL_INLINE int cl_atfork_register(struct cl_atfork *f, pthread_mutex_t *lock,
				 void (*child)(struct cl_atfork *f))
{
	int r;

	if (f == NULL || (lock == NULL && child == NULL) || f->registered == 1) {
		errno = EINVAL;
		return -1;
	}
	f->own = 0;
	if (lock == NULL) {
		r = pthread_mutex_init(&f->own_lock, NULL);
		if (r != 0) {
			errno = r;
			return -1;
		}
		f->own = 1;
		lock = &f->own_lock;
	}
	f->child = child;
	f->registered = 1;
	cl__fork_register(&f->entry, lock, cl__atfork_child);
	return 0;
}

/**
 * cl_atfork_unregister() - stop holding the lock across fork().
 * @f: a registration made by cl_atfork_register().
 *
 * After it returns, no fork() handler uses @f or its lock: the object may be
 * freed. @f may be registered again.
 *
 * Context: as cl_atfork_register().
 * Return: 0, or -1 with errno EINVAL (NULL @f, or @f not registered).
 */
CL_INLINE int cl_atfork_unregister(struct cl_atfork *f)
{
	if (f == NULL || f->registered != 1) {
		errno = EINVAL;
		return -1;
	}
	cl__fork_unregister(&f->entry);
	f->registered = 0;
	if (f->own) {
		pthread_mutex_destroy(&f->own_lock);
		f->own = 0;
	}
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_ATFORK_H */
