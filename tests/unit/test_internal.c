/* SPDX-License-Identifier: MIT */
/*
 * Tests for cachelocal/internal/: the private helpers the public headers
 * share (CPU bitmap, fork registry, membarrier, backoff). Not API: these
 * tests pin their behaviour so the headers that use them can rely on it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cachelocal/internal/backoff.h>
#include <cachelocal/internal/bitmap.h>
#include <cachelocal/internal/fork.h>
#include <cachelocal/internal/membarrier.h>

#include "cl_test.h"

Test(internal_bitmap, words_cover_every_bit_and_never_zero)
{
	cr_assert_eq(cl__bitmap_words(0), 1);
	cr_assert_eq(cl__bitmap_words(1), 1);
	cr_assert_eq(cl__bitmap_words(CL__BITS_PER_LONG), 1);
	cr_assert_eq(cl__bitmap_words(CL__BITS_PER_LONG + 1), 2);
	cr_assert_eq(cl__bitmap_words(4096), 4096 / CL__BITS_PER_LONG);
}

Test(internal_bitmap, set_test_and_weight_respect_nbits)
{
	const unsigned nbits = 2 * CL__BITS_PER_LONG + 5;
	unsigned long *m = cl__bitmap_alloc(nbits);

	cr_assert_not_null(m);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 0, "alloc must return a zeroed map");
	cl__bitmap_set(m, 0);
	cl__bitmap_set(m, CL__BITS_PER_LONG - 1);
	cl__bitmap_set(m, CL__BITS_PER_LONG);
	cl__bitmap_set(m, nbits - 1);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 4);
	cr_assert_eq(cl__bitmap_test(m, nbits, 0), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, 1), 0);
	cr_assert_eq(cl__bitmap_test(m, nbits, CL__BITS_PER_LONG - 1), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, CL__BITS_PER_LONG), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, nbits - 1), 1);
	/* A bit at or above nbits reads as clear, and is not counted. */
	cr_assert_eq(cl__bitmap_test(m, nbits - 1, nbits - 1), 0);
	cr_assert_eq(cl__bitmap_test(m, nbits, 1u << 20), 0);
	cr_assert_eq(cl__bitmap_weight(m, nbits - 1), 3);
	cr_assert_eq(cl__bitmap_weight(m, CL__BITS_PER_LONG), 2);
	cl__bitmap_zero(m, nbits);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 0);
	free(m);
}

Test(internal_bitmap, or_merges_below_nbits_and_counts_the_source)
{
	const unsigned nbits = CL__BITS_PER_LONG + 3;
	unsigned long dst[2] = { 0x1ul, 0 }, src[2] = { 0x3ul, ~0ul };
	unsigned n = cl__bitmap_or(dst, src, nbits);

	/* src has bits 0, 1 and CL__BITS_PER_LONG .. +2 below nbits. */
	cr_assert_eq(n, 5);
	cr_assert_eq(dst[0], 0x3ul);
	cr_assert_eq(dst[1], 0x7ul, "bits at or above nbits were copied: %#lx", dst[1]);
	cr_assert_eq(cl__bitmap_weight(dst, nbits), 5);
}

Test(internal_bitmap, getaffinity_matches_sched_getaffinity)
{
	cpu_set_t set;
	unsigned nbits = 0, c, n = 0;
	unsigned long *m = cl__bitmap_getaffinity(8, &nbits);

	cr_assert_not_null(m, "errno %d", errno);
	cr_assert_geq(nbits, 1024, "the map is at least 1024 bits");
	cr_assert_eq(nbits % CL__BITS_PER_LONG, 0);
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (c = 0; c < CPU_SETSIZE && c < nbits; c++) {
		cr_assert_eq(cl__bitmap_test(m, nbits, c), CPU_ISSET(c, &set) ? 1 : 0, "cpu %u", c);
		n += CPU_ISSET(c, &set) ? 1u : 0u;
	}
	cr_assert_eq(cl__bitmap_weight(m, nbits), n);
	free(m);
}

/* ---- fork registry ---- */

struct fork_obj {
	pthread_mutex_t lock;
	int state;        /* reset to 0 by the child hook */
	int hook_saw_lock; /* the hook ran with the lock held */
	struct cl__fork_entry reg;
};

static void fork_obj_child(struct cl__fork_entry *e)
{
	struct fork_obj *o = cl_container_of(e, struct fork_obj, reg);

	o->hook_saw_lock = pthread_mutex_trylock(&o->lock) == EBUSY;
	o->state = 0;
}

/* Child exit status: 0 ok, 1 hook not run/lock not held, 2 lock left held. */
static int fork_child_check(struct fork_obj *with_hook, struct fork_obj *plain)
{
	if (with_hook->state != 0 || !with_hook->hook_saw_lock || plain->state != 7)
		return 1;
	if (pthread_mutex_trylock(&with_hook->lock) != 0 || pthread_mutex_trylock(&plain->lock) != 0)
		return 2;
	return 0;
}

Test(internal_fork, child_hook_runs_with_the_lock_held_and_every_lock_is_released)
{
	static struct fork_obj a = { PTHREAD_MUTEX_INITIALIZER, 7, 0, { 0 } };
	static struct fork_obj b = { PTHREAD_MUTEX_INITIALIZER, 7, 0, { 0 } };
	int st = -1;
	pid_t pid;

	cl__fork_register(&a.reg, &a.lock, fork_obj_child);
	cl__fork_register(&b.reg, &b.lock, NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fork_child_check(&a, &b));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 0, "child check %d (1: hook, 2: lock left held)",
		     WEXITSTATUS(st));
	/* The parent: untouched, and its locks are free again. */
	cr_assert_eq(a.state, 7);
	cr_assert_eq(pthread_mutex_trylock(&a.lock), 0);
	pthread_mutex_unlock(&a.lock);
	cr_assert_eq(pthread_mutex_trylock(&b.lock), 0);
	pthread_mutex_unlock(&b.lock);

	/* Unregistered: the hook no longer runs in a child. */
	cl__fork_unregister(&a.reg);
	cl__fork_unregister(&b.reg);
	cr_assert_null(a.reg.next);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(a.state == 7 ? 0 : 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "an unregistered entry was reset");
}

/* A fork() while another thread holds a registered lock waits for it:
 * the child never inherits the lock held. */
struct holder_arg {
	struct fork_obj *o;
	atomic_int holding;
	atomic_int release;
	atomic_int forked; /* the forker's fork() returned */
};

static void *holder(void *p)
{
	struct holder_arg *h = (struct holder_arg *)p;

	pthread_mutex_lock(&h->o->lock);
	h->o->state = 1; /* an update in progress */
	atomic_store(&h->holding, 1);
	while (!atomic_load(&h->release))
		sched_yield();
	h->o->state = 2; /* the update completes */
	pthread_mutex_unlock(&h->o->lock);
	return NULL;
}

static void *forker(void *p)
{
	struct holder_arg *h = (struct holder_arg *)p;
	struct fork_obj *o = h->o;
	int st = -1;
	pid_t pid = fork();

	if (pid > 0)
		atomic_store(&h->forked, 1);
	if (pid == 0) /* must see the completed update, and a free lock */
		_exit(o->state == 2 && pthread_mutex_trylock(&o->lock) == 0 ? 0 : 1);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return (void *)2;
	return (void *)(intptr_t)WEXITSTATUS(st);
}

Test(internal_fork, fork_waits_for_a_held_registered_lock)
{
	static struct fork_obj o = { PTHREAD_MUTEX_INITIALIZER, 0, 0, { 0 } };
	struct holder_arg h = { &o, 0, 0, 0 };
	pthread_t th, tf;
	void *ret = NULL;

	cl__fork_register(&o.reg, &o.lock, NULL);
	cr_assert_eq(pthread_create(&th, NULL, holder, &h), 0);
	while (!atomic_load(&h.holding))
		sched_yield();
	cr_assert_eq(pthread_create(&tf, NULL, forker, &h), 0);
	/* Rendezvous: the prepare handler takes the registry lock, then blocks
	 * on o.lock, which the holder has. Once the registry lock reads busy,
	 * the fork is waiting: let the holder finish its update. (A registry
	 * that did not wait would fork at once: stop polling then, and the
	 * child reports the half-done update.) */
	while (!atomic_load(&h.forked) && pthread_mutex_trylock(&cl__fork_lock) == 0) {
		pthread_mutex_unlock(&cl__fork_lock);
		sched_yield();
	}
	atomic_store(&h.release, 1);
	pthread_join(th, NULL);
	pthread_join(tf, &ret);
	cl__fork_unregister(&o.reg);
	cr_assert_eq((intptr_t)ret, 0, "the child saw a half-done update or a held lock (%ld)",
		     (long)(intptr_t)ret);
}

/* ---- membarrier ---- */

Test(internal_membarrier, registers_once_and_barriers_again_in_a_forked_child)
{
	int st = -1;
	pid_t pid;

	if (!cl__membarrier_ready()) {
		cr_assert_eq(cl__membarrier_state, -1);
		cr_assert_eq(cl__membarrier(), -1, "membarrier reported usable while unavailable");
		cr_skip_test("private expedited membarrier unavailable on this kernel");
	}
	cr_assert_eq(cl__membarrier_state, 1);
	errno = 1234;
	cr_assert_eq(cl__membarrier(), 0);
	cr_assert_eq(errno, 1234, "errno was not preserved");
	/* The registration is per mm: the child's first barrier fails with
	 * EPERM and must register again. */
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(cl__membarrier() == 0 ? 0 : 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "membarrier failed in the child");
}

/* ---- backoff ---- */

Test(internal_backoff, spins_the_given_number_of_steps_then_stays_in_yield_mode)
{
	unsigned n = 0;

	for (int i = 0; i < 3; i++)
		cl__backoff(&n, 3);
	cr_assert_eq(n, 3);
	for (int i = 0; i < 5; i++)
		cl__backoff(&n, 3); /* yields; the counter stays saturated */
	cr_assert_eq(n, 3);
	n = 0;
	cl__backoff(&n, 0); /* 0 spins: yields at once */
	cr_assert_eq(n, 0);
}
