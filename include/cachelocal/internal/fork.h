/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/fork.h - the one fork() registry of the library.
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * An object that owns a mutex a fork() must not copy while held (a per-CPU
 * pool, a cid domain) embeds a struct cl__fork_entry and registers it. One
 * set of pthread_atfork() handlers, installed once per process by the first
 * registration, then:
 *
 *   prepare  takes the registry lock, then every registered object's lock,
 *            newest first: no object is copied in the middle of an update;
 *   parent   releases them;
 *   child    calls each entry's child hook (with its lock still held, in a
 *            process that has only the forking thread), then releases them.
 *
 * Lock order: registry lock, then object locks. Code holding an object lock
 * must not register or unregister an entry (it would wait for the registry
 * lock that prepare holds while prepare waits for the object lock). Do not
 * fork from a pthread_atfork handler of your own that runs while a cachelocal
 * call is inside an object lock, and do not dlclose() the object whose copy
 * of these handlers registered first.
 *
 * The registry is process-wide state: weak symbols, one copy per process.
 *
 * Synchronization:
 *
 *   call                    may run concurrently with
 *   cl__fork_register       everything, except a register/unregister of the
 *   cl__fork_unregister     same entry (registry lock)
 *   fork() (the handlers)   everything; waits for every object lock
 */
#ifndef CACHELOCAL_INTERNAL_FORK_H
#define CACHELOCAL_INTERNAL_FORK_H

#include <pthread.h>
#include <stddef.h>

#include "../compiler.h"

CL_BEGIN_DECLS

/*
 * struct cl__fork_entry - one registered object.
 * @next, @prev: the registry list (registry lock).
 * @lock: the object's mutex, held across fork().
 * @child: NULL, or called in the child with @lock held, before it is
 *	released: reset what the child must not inherit (waiters, users).
 */
struct cl__fork_entry {
	struct cl__fork_entry *next, *prev;
	pthread_mutex_t *lock;
	void (*child)(struct cl__fork_entry *e);
};

CL_WEAK pthread_mutex_t cl__fork_lock = PTHREAD_MUTEX_INITIALIZER;
CL_WEAK struct cl__fork_entry *cl__fork_head;
CL_WEAK pthread_once_t cl__fork_once = PTHREAD_ONCE_INIT;

CL_INLINE void cl__fork_prepare(void)
{
	struct cl__fork_entry *e;

	pthread_mutex_lock(&cl__fork_lock);
	for (e = cl__fork_head; e; e = e->next)
		pthread_mutex_lock(e->lock);
}

CL_INLINE void cl__fork_parent(void)
{
	struct cl__fork_entry *e;

	for (e = cl__fork_head; e; e = e->next)
		pthread_mutex_unlock(e->lock);
	pthread_mutex_unlock(&cl__fork_lock);
}

CL_INLINE void cl__fork_child(void)
{
	struct cl__fork_entry *e;

	for (e = cl__fork_head; e; e = e->next) {
		if (e->child)
			e->child(e);
		pthread_mutex_unlock(e->lock);
	}
	pthread_mutex_unlock(&cl__fork_lock);
}

CL_INLINE void cl__fork_install(void)
{
	pthread_atfork(cl__fork_prepare, cl__fork_parent, cl__fork_child);
}

/*
 * cl__fork_register() - hold @lock across every fork() from now on and run
 * @child (may be NULL) in the child. @e lives in the object; it stays
 * registered until cl__fork_unregister(). Context: any thread, holding no
 * object lock.
 */
CL_INLINE void cl__fork_register(struct cl__fork_entry *e, pthread_mutex_t *lock,
				 void (*child)(struct cl__fork_entry *e))
{
	e->lock = lock;
	e->child = child;
	e->prev = NULL;
	pthread_once(&cl__fork_once, cl__fork_install);
	pthread_mutex_lock(&cl__fork_lock);
	e->next = cl__fork_head;
	if (cl__fork_head)
		cl__fork_head->prev = e;
	cl__fork_head = e;
	pthread_mutex_unlock(&cl__fork_lock);
}

/* cl__fork_unregister() - forget @e (registered). Context: as register. */
CL_INLINE void cl__fork_unregister(struct cl__fork_entry *e)
{
	pthread_mutex_lock(&cl__fork_lock);
	if (e->prev)
		e->prev->next = e->next;
	else if (cl__fork_head == e)
		cl__fork_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	e->next = e->prev = NULL;
	pthread_mutex_unlock(&cl__fork_lock);
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_FORK_H */
