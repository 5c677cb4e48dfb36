/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/brlock.h: bad input, modes, a writer waits for a
 * reader and a reader for a writer (rendezvous on the lock's own state, no
 * sleeps), mutual exclusion with a shadow check while readers migrate
 * between lock and unlock (cpu_id and mm_cid counters), writers finishing
 * while readers keep the lock busy, locks sharing a caller's pool, a
 * caller's pool of another stride (the out-of-line path); misuse
 * the lock detects: an unheld write_unlock (EPERM, and the next write_lock
 * still gets the lock) and calls on a zeroed or destroyed lock (EINVAL).
 * Also built with -DCL_BRLOCK_NO_MEMBARRIER (fence mode) and
 * -DCL_NO_RSEQ_ASM (test_brlock.variants).
 *
 * BRLOCK_TEST_WRITES: write sections per writer of the exclusion tests
 * (default 200; make check-valgrind sets fewer: under memcheck's one
 * thread at a time each write waits out whole reader time slices).
 */
#include <cachelocal/brlock.h>

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

static const enum cl_rseq_index modes[2] = { CL_RSEQ_INDEX_CPU_ID, CL_RSEQ_INDEX_MM_CID };

Test(brlock, bad_input)
{
	struct cl_brlock l;
	struct cl_percpu_pool_attr attr = { 0, 1, 0 };
	struct cl_percpu_pool *small;

	errno = 0;
	cr_assert_eq(cl_brlock_init(NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_brlock_init_pool(&l, NULL, (enum cl_rseq_index)9), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_brlock_mode(NULL), 0);
	cr_assert_eq(errno, EINVAL);
	if (cl_nr_possible_cpus() > 1) {
		small = cl_percpu_pool_create(&attr);
		cr_assert_not_null(small);
		errno = 0;
		cr_assert_eq(cl_brlock_init_pool(&l, small, CL_RSEQ_INDEX_CPU_ID), -1,
			     "a pool without a copy for every possible CPU");
		cr_assert_eq(errno, EINVAL);
		cl_percpu_pool_destroy(small);
	}
	memset(&l, 0, sizeof(l));
	cl_brlock_destroy(&l); /* zeroed: nothing to free */
	cl_brlock_destroy(NULL);
}

Test(brlock, mode_follows_membarrier)
{
	struct cl_brlock l;
	long mask = syscall(SYS_membarrier, 0, 0, 0);
	int have = mask > 0 && (mask & (1 << 3)) && (mask & (1 << 4));

	cr_assert_eq(cl_brlock_init(&l), 0);
#if defined(CL_HAVE_TSAN) || defined(CL_BRLOCK_NO_MEMBARRIER)
	have = 0;
#endif
	cr_assert_eq(cl_brlock_mode(&l), have ? CL_BRLOCK_MEMBARRIER : CL_BRLOCK_FENCE,
		     "membarrier %s, mode %d", have ? "usable" : "unusable", cl_brlock_mode(&l));
	cl_brlock_destroy(&l);
	cr_assert_eq(l.w, NULL);
	cl_brlock_destroy(&l); /* twice: harmless */
}

Test(brlock, token_is_the_counting_cpu)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_brlock l;

	cr_assert_eq(cl_brlock_init(&l), 0);
	for (int i = 0; i < n; i++) {
		int t;

		cr_assert_eq(cl_test_pin(cpus[i]), 0);
		t = cl_brlock_read_lock(&l);
		cr_assert_eq(t, cpus[i], "pinned to %d, counted on %d", cpus[i], t);
		cr_assert_not(cl__brlock_idle(&l), "a reader is inside");
		cl_brlock_read_unlock(&l, t);
		cr_assert(cl__brlock_idle(&l));
	}
	cl_brlock_destroy(&l);
}

/* ---- a writer waits for a reader; a reader waits for a writer ---- */

struct pair_arg {
	struct cl_brlock *l;
	int done; /* the other side got the lock (atomic) */
};

static void *writer_once(void *p)
{
	struct pair_arg *a = p;

	cl_brlock_write_lock(a->l);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	cl_brlock_write_unlock(a->l);
	return NULL;
}

static void *reader_once(void *p)
{
	struct pair_arg *a = p;
	int t = cl_brlock_read_lock(a->l);

	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	cl_brlock_read_unlock(a->l, t);
	return NULL;
}

Test(brlock, writer_waits_for_reader_that_migrates, .timeout = 60)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct cl_brlock l;
	struct pair_arg a;
	pthread_t w;
	int t;

	cr_assert_eq(cl_brlock_init(&l), 0);
	a = (struct pair_arg){ &l, 0 };
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	t = cl_brlock_read_lock(&l);
	cr_assert_eq(pthread_create(&w, NULL, writer_once, &a), 0);
	/* The writer has set the writer word, fenced, found a reader and gone
	 * to sleep: it has seen our lock count. */
	while (!__atomic_load_n(&l.w->wsleep, __ATOMIC_ACQUIRE))
		sched_yield();
	cr_assert_eq(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE), 0, "writer inside with a reader");
	cr_assert_neq(__atomic_load_n(&l.writer, __ATOMIC_RELAXED) & CL__BRLOCK_W_HELD, 0);
	cr_assert_eq(cl_test_pin(cpus[n - 1]), 0); /* unlock on another CPU when there is one */
	cl_brlock_read_unlock(&l, t);
	cr_assert_eq(pthread_join(w, NULL), 0);
	cr_assert_eq(a.done, 1);
	cr_assert_eq(l.writer, 0);
	cr_assert(cl__brlock_idle(&l));
	cl_brlock_destroy(&l);
}

Test(brlock, reader_waits_for_writer, .timeout = 60)
{
	struct cl_brlock l;
	struct pair_arg a;
	pthread_t r;

	cr_assert_eq(cl_brlock_init(&l), 0);
	a = (struct pair_arg){ &l, 0 };
	cl_brlock_write_lock(&l);
	cr_assert_eq(pthread_create(&r, NULL, reader_once, &a), 0);
	/* The reader backed off and sleeps on the writer word. */
	while (!(__atomic_load_n(&l.writer, __ATOMIC_ACQUIRE) & CL__BRLOCK_W_WAITERS))
		sched_yield();
	cr_assert_eq(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE), 0, "reader inside with a writer");
	cr_assert(cl__brlock_idle(&l), "the backed-off reader took its count back");
	cl_brlock_write_unlock(&l);
	cr_assert_eq(pthread_join(r, NULL), 0);
	cr_assert_eq(a.done, 1);
	cl_brlock_destroy(&l);
}

/* ---- exclusion under load, with a shadow check ---- */

#define NR_READERS 4
#define NR_WRITERS 2

struct shared {
	struct cl_brlock l;
	/* protected data: a == b outside write sections */
	long a, b;
	/* shadow ownership, relaxed on purpose: it must not create the
	 * happens-before that the lock has to provide (TSan build) */
	int readers_in, writers_in;
	long violations;
	long reads, writes;
	int stop;
	int cpus[64], nr_cpus;
};

struct worker {
	struct shared *s;
	int id;
	long ops;
};

static void *reader_loop(void *p)
{
	struct worker *w = p;
	struct shared *s = w->s;
	unsigned seed = (unsigned)w->id * 7919u + 1;
	long i;

	for (i = 0; i < w->ops || !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); i++) {
		int t = cl_brlock_read_lock(&s->l);
		long x, y;

		__atomic_fetch_add(&s->readers_in, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->writers_in, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		x = s->a;
		if (rand_r(&seed) % 16 == 0) /* migrate inside the section */
			cl_test_pin(s->cpus[rand_r(&seed) % (unsigned)s->nr_cpus]);
		y = s->b;
		if (x != y)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&s->readers_in, 1, __ATOMIC_RELAXED);
		cl_brlock_read_unlock(&s->l, t);
	}
	__atomic_fetch_add(&s->reads, i, __ATOMIC_RELAXED);
	return NULL;
}

static void *writer_loop(void *p)
{
	struct worker *w = p;
	struct shared *s = w->s;

	for (long i = 0; i < w->ops; i++) {
		cl_brlock_write_lock(&s->l);
		if (__atomic_fetch_add(&s->writers_in, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->readers_in, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		s->a++;
		sched_yield(); /* a reader that got in would now see a != b */
		s->b++;
		s->writes++;
		__atomic_fetch_sub(&s->writers_in, 1, __ATOMIC_RELAXED);
		cl_brlock_write_unlock(&s->l);
	}
	return NULL;
}

static void exclusion(enum cl_rseq_index idx)
{
	static struct shared s;
	struct worker w[NR_READERS + NR_WRITERS];
	pthread_t t[NR_READERS + NR_WRITERS];
	const char *e = getenv("BRLOCK_TEST_WRITES");
	const long writes = e && *e ? strtol(e, NULL, 10) : 200;

	cr_assert_gt(writes, 0, "BRLOCK_TEST_WRITES=%s", e);
	memset(&s, 0, sizeof(s));
	s.nr_cpus = cl_test_allowed_cpus(s.cpus, 64);
	cr_assert_eq(cl_brlock_init_pool(&s.l, NULL, idx), 0);
	for (int i = 0; i < NR_READERS + NR_WRITERS; i++) {
		int reader = i < NR_READERS;

		w[i] = (struct worker){ &s, i, reader ? 20000 : writes };
		cr_assert_eq(pthread_create(&t[i], NULL, reader ? reader_loop : writer_loop, &w[i]), 0);
	}
	for (int i = NR_READERS; i < NR_READERS + NR_WRITERS; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NR_READERS; i++)
		cr_assert_eq(pthread_join(t[i], NULL), 0);
	cr_assert_eq(s.violations, 0, "index %d: %ld violations", (int)idx, s.violations);
	cr_assert_eq(s.writes, NR_WRITERS * writes);
	cr_assert_eq(s.a, NR_WRITERS * writes);
	cr_assert_eq(s.b, s.a);
	cr_assert_geq(s.reads, NR_READERS * 20000L);
	cr_assert(cl__brlock_idle(&s.l), "every read lock was unlocked");
	cr_log_info("index %d, mode %d: %ld reads, %ld writes\n", (int)idx,
		    (int)cl_brlock_mode(&s.l), s.reads, s.writes);
	cl_brlock_destroy(&s.l);
}

Test(brlock, exclusion_with_migrating_readers_cpu_id, .timeout = 300)
{
	exclusion(modes[0]);
}

Test(brlock, exclusion_with_migrating_readers_mm_cid, .timeout = 300)
{
	exclusion(modes[1]);
}

/* ---- writers finish while readers keep the lock busy ---- */

struct busy_reader {
	struct shared *s;
	long sections;
};

static void *busy_reader_loop(void *p)
{
	struct busy_reader *r = p;
	struct shared *s = r->s;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		int t = cl_brlock_read_lock(&s->l);

		__atomic_fetch_add(&s->readers_in, 1, __ATOMIC_RELAXED);
		for (int k = 0; k < 2000; k++)
			CL_CPU_RELAX();
		__atomic_fetch_sub(&s->readers_in, 1, __ATOMIC_RELAXED);
		cl_brlock_read_unlock(&s->l, t);
		r->sections++;
	}
	return NULL;
}

Test(brlock, writers_not_starved_by_readers, .timeout = 300)
{
	static struct shared s;
	struct busy_reader r[NR_READERS];
	pthread_t t[NR_READERS];
	long busy_at_start = 0, before = 0;
	const long writes = 100;

	memset(&s, 0, sizeof(s));
	cr_assert_eq(cl_brlock_init(&s.l), 0);
	for (int i = 0; i < NR_READERS; i++) {
		r[i] = (struct busy_reader){ &s, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, busy_reader_loop, &r[i]), 0);
	}
	for (long i = 0; i < writes; i++) {
		/* Wait until a reader is inside, then ask for the lock. */
		while (__atomic_load_n(&s.readers_in, __ATOMIC_RELAXED) == 0)
			sched_yield();
		busy_at_start++;
		cl_brlock_write_lock(&s.l);
		if (__atomic_load_n(&s.readers_in, __ATOMIC_RELAXED) != 0)
			s.violations++;
		s.writes++;
		cl_brlock_write_unlock(&s.l);
	}
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NR_READERS; i++) {
		cr_assert_eq(pthread_join(t[i], NULL), 0);
		before += r[i].sections;
	}
	cr_assert_eq(s.writes, writes, "every write lock was granted");
	cr_assert_eq(busy_at_start, writes, "each one asked while a reader was inside");
	cr_assert_eq(s.violations, 0);
	cr_assert_gt(before, 0);
	cl_brlock_destroy(&s.l);
}

/* ---- locks on a caller's pool ---- */

Test(brlock, locks_share_a_callers_pool)
{
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
	struct cl_percpu_stats st;
	struct cl_brlock a, b;
	int t;

	cr_assert_not_null(pool);
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(cl_brlock_init_pool(&a, pool, modes[k]), 0);
		cr_assert_eq(cl_brlock_init_pool(&b, pool, modes[k]), 0);
		cr_assert_neq(a.cpu, b.cpu);
		t = cl_brlock_read_lock(&a);
		cl_brlock_write_lock(&b); /* another lock: not blocked by a's reader */
		cl_brlock_write_unlock(&b);
		cl_brlock_read_unlock(&a, t);
		cr_assert_eq(cl_percpu_pool_stats(pool, &st), 0);
		cr_assert_eq(st.nr_live, 2);
		cl_brlock_destroy(&a);
		cl_brlock_destroy(&b);
		cr_assert_eq(cl_percpu_pool_stats(pool, &st), 0);
		cr_assert_eq(st.nr_live, 0, "destroy returned the counters to the pool");
	}
	cl_percpu_pool_destroy(pool);
}

/*
 * A caller's pool of another stride: the inline read path multiplies by the
 * default stride, so such a lock must take the out-of-line path and count
 * each read lock in the copy its own stride reaches (a lock counted at the
 * default stride lands in the wrong copy: the count checked here stays 0).
 */
Test(brlock, a_pool_of_another_stride_counts_in_its_copies)
{
	const size_t stride = 2 * (size_t)CL_PERCPU_STRIDE;
	struct cl_percpu_pool_attr attr = { stride, 0, 0 };
	struct cl_percpu_pool *pool = cl_percpu_pool_create(&attr);
	struct cl_brlock l;

	cr_assert_not_null(pool);
	for (int k = 0; k < 2; k++) {
		int t;

		cr_assert_eq(cl_brlock_init_pool(&l, pool, modes[k]), 0);
		cr_assert_null(l.fast, "index %d: the inline path is for the default stride only", k);
		t = cl_brlock_read_lock(&l);
		cr_assert_geq(t, 0);
		if ((unsigned)t < l.nr_cpus)
			cr_assert_eq(CL_ATOMIC_LOAD(&cl_percpu_ptr_stride(l.cpu, t, stride)->lock,
						    CL_RELAXED),
				     1, "index %d: the lock is counted in copy %d", k, t);
		cl_brlock_read_unlock(&l, t);
		cr_assert(cl__brlock_idle(&l), "index %d: every read lock was unlocked", k);
		cr_assert_eq(cl_brlock_write_lock(&l), 0);
		cr_assert_eq(cl_brlock_write_unlock(&l), 0);
		cl_brlock_destroy(&l);
	}
	cl_percpu_pool_destroy(pool);
}

/* A lock's own pool places the counters half a page from the struct in the
 * low 12 address bits (4K aliasing, as objcache's count); page-aligned here. */
Test(brlock, own_counters_placed_apart_from_the_struct_in_page_offset)
{
	static struct cl_brlock l CL_ALIGNED(4096);
	uintptr_t d;
	int t;

	cr_assert_eq(cl_brlock_init(&l), 0);
	d = ((uintptr_t)l.cpu - (uintptr_t)&l) % 4096u;
	cr_assert_geq(d, 2048u - CL_CACHELINE_SIZE, "counters %p, lock %p", (void *)l.cpu, (void *)&l);
	cr_assert_leq(d, 2048u + CL_CACHELINE_SIZE);
	t = cl_brlock_read_lock(&l);
	cr_assert_geq(t, 0);
	cl_brlock_read_unlock(&l, t);
	cr_assert(cl__brlock_idle(&l));
	cl_brlock_destroy(&l);
}

/* ---- misuse the lock detects ---- */

Test(brlock, unheld_write_unlock_is_eperm, .timeout = 60)
{
	static struct cl_brlock l;
	int status = -1;
	pid_t pid;

	cr_assert_eq(cl_brlock_init(&l), 0);
	/* In a child with a watchdog: an unlock that served a ticket nobody
	 * held would make the next write_lock wait forever. */
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		int r1, e1, r2, r3, r4, e4, t;

		alarm(20);
		errno = 0;
		r1 = cl_brlock_write_unlock(&l); /* never locked */
		e1 = errno;
		r2 = cl_brlock_write_lock(&l);
		r3 = cl_brlock_write_unlock(&l);
		errno = 0;
		r4 = cl_brlock_write_unlock(&l); /* unlocked twice */
		e4 = errno;
		t = cl_brlock_read_lock(&l);
		cl_brlock_read_unlock(&l, t);
		if (r2 != 0 || r3 != 0 || t < 0)
			_exit(1); /* the refused unlocks broke the lock */
		if (r1 != -1 || e1 != EPERM || r4 != -1 || e4 != EPERM)
			_exit(2); /* not reported */
		_exit(cl_brlock_write_lock(&l) == 0 && cl_brlock_write_unlock(&l) == 0 ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s %d",
		  WIFSIGNALED(status) ? "killed by signal" : "exit status",
		  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	errno = 0;
	cr_assert_eq(cl_brlock_write_unlock(&l), -1);
	cr_assert_eq(errno, EPERM);
	cl_brlock_destroy(&l);
}

/* Every call on @l fails with EINVAL and changes nothing. */
static void assert_unusable(struct cl_brlock *l, const char *what)
{
	errno = 0;
	cr_assert_eq(cl_brlock_read_lock(l), -1, "%s", what);
	cr_assert_eq(errno, EINVAL, "%s", what);
	errno = 0;
	cl_brlock_read_unlock(l, 0);
	cr_assert_eq(errno, EINVAL, "%s", what);
	errno = 0;
	cr_assert_eq(cl_brlock_write_lock(l), -1, "%s", what);
	cr_assert_eq(errno, EINVAL, "%s", what);
	errno = 0;
	cr_assert_eq(cl_brlock_write_unlock(l), -1, "%s", what);
	cr_assert_eq(errno, EINVAL, "%s", what);
	errno = 0;
	cr_assert_eq(cl_brlock_mode(l), 0, "%s", what);
	cr_assert_eq(errno, EINVAL, "%s", what);
}

Test(brlock, zeroed_or_destroyed_lock_is_einval)
{
	struct cl_brlock l;
	int t;

	memset(&l, 0, sizeof(l));
	assert_unusable(&l, "zeroed");
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(cl_brlock_init_pool(&l, NULL, modes[k]), 0);
		cl_brlock_destroy(&l);
		assert_unusable(&l, k ? "destroyed (mm_cid)" : "destroyed (cpu_id)");
	}
	cr_assert_eq(cl_brlock_init(&l), 0, "usable again after init");
	t = cl_brlock_read_lock(&l);
	cr_assert_geq(t, 0);
	cl_brlock_read_unlock(&l, t);
	cl_brlock_destroy(&l);
}
