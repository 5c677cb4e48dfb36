/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_faults.c - faults and lifecycle across the library:
 *  - fork() while another thread is using a pool, a cid domain and a
 *    counter, with a runqueue holding queued tasks and groups: the child
 *    keeps working with every structure (and the parent is unaffected);
 *  - a thread that exits holding a cid: the cid stays held (never handed
 *    out twice) until another thread releases it, then is reusable;
 *  - allocation failure injected at the N-th malloc/calloc/realloc/
 *    aligned_alloc/mmap of each allocating call, for every N until the call
 *    succeeds: each failure returns the documented error (NULL or -1,
 *    ENOMEM) and leaves the structure usable and consistent.
 *
 * The injection interposes the allocation functions in this executable
 * (forwarding to glibc's __libc_* entry points and the raw mmap syscall),
 * armed per thread. Sanitizer builds and valgrind replace the allocator
 * themselves, so the injection tests skip there (detected at run time).
 */
#include "cl_test.h"
#include "sched_sim.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cachelocal/cid.h>
#include <cachelocal/counter.h>
#include <cachelocal/percpu.h>
#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>
#include <cachelocal/topology.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULTS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define FAULTS_SANITIZED 1
#endif
#endif

/* ---- allocation failure injection ---- */

/*
 * Calls left before the one that fails (0: disarmed); per thread. Not
 * static: the compiler treats malloc & co. as leaf functions that cannot
 * touch this file's static variables, and would cache them across the call.
 */
extern __thread long fault_countdown;
extern __thread int fault_fired;
__thread long fault_countdown;
__thread int fault_fired;

/*
 * Volatile accesses: the compiler also assumes that malloc() itself
 * modifies no memory the caller can see, and would reuse a value read
 * before the call.
 */
static void fault_arm(long n)
{
	*(volatile int *)&fault_fired = 0;
	*(volatile long *)&fault_countdown = n;
}

/* Disarm; 1 if the armed failure happened. */
static int fault_disarm(void)
{
	*(volatile long *)&fault_countdown = 0;
	return *(volatile int *)&fault_fired;
}

#ifndef FAULTS_SANITIZED
static int fault_now(void)
{
	if (fault_countdown > 0 && --fault_countdown == 0) {
		fault_fired = 1;
		return 1;
	}
	return 0;
}

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

__attribute__((noinline)) void *malloc(size_t n)
{
	if (fault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(n);
}

__attribute__((noinline)) void *calloc(size_t n, size_t m)
{
	if (fault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, m);
}

__attribute__((noinline)) void *realloc(void *p, size_t n)
{
	if (fault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, n);
}

__attribute__((noinline)) void *aligned_alloc(size_t align, size_t n)
{
	if (fault_now()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_memalign(align, n);
}

__attribute__((noinline)) int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (fault_now())
		return ENOMEM;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

__attribute__((noinline)) void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r;

	if (fault_now()) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return r == -1 ? MAP_FAILED : (void *)r;
}
#endif /* !FAULTS_SANITIZED */

/* Skip when another allocator replaces ours (sanitizers, valgrind). */
static void skip_if_sanitized(void)
{
	void *volatile p;
	int fired;

#ifdef FAULTS_SANITIZED
	cr_skip_test("the sanitizer owns the allocator: no injection");
#endif
	fault_arm(1);
	p = malloc(16);
	fired = fault_disarm();
	free(p);
	if (!fired)
		cr_skip_test("malloc is replaced (valgrind?): no injection");
}

/* Evaluate @expr with the @n-th allocation in it failing; @fired: whether it did. */
#define INJECT(n, fired, expr)                  \
	({                                      \
		__typeof__(expr) r_;            \
		errno = 0;                      \
		fault_arm(n);                   \
		r_ = (expr);                    \
		(fired) = fault_disarm();       \
		r_;                             \
	})

/*
 * Run @op for N = 1, 2, ...: @op wraps the call under test in INJECT(N, ...)
 * (only that call: not the checks and clean-up around it) and returns 1 if
 * the call succeeded, 0 if it failed as documented (the op checks errno
 * ENOMEM and the structure). Stops after a run in which no injected failure
 * happened (every allocation of the call succeeded). A first run without
 * a fault warms process-wide caches. Returns how many
 * injection points made the call fail.
 */
static int inject_from(const char *what, int (*op)(void *, long, int *), void *arg, int warm_up)
{
	int failed = 0, warm = 0;

	/* once without a fault: fills process-wide caches (CPU count, rseq
	 * state) whose first use allocates, so later runs allocate the same */
	if (warm_up)
		cr_assert(op(arg, 0, &warm), "%s: failed without an injected fault (errno %d)", what,
			  errno);
	for (long n = 1; n < 10000; n++) {
		int fired = 0, ok = op(arg, n, &fired);

		if (!fired) {
			cr_assert(ok, "%s: failed without an injected fault (errno %d)", what, errno);
			cr_log_info("%s: %ld allocations injected, %d made the call fail", what, n - 1,
				    failed);
			return failed;
		}
		failed += !ok;
	}
	cr_assert_fail("%s: more than 10000 allocations", what);
	return failed;
}

static int inject_each(const char *what, int (*op)(void *, long, int *), void *arg)
{
	return inject_from(what, op, arg, 1);
}

/* ---- topology ---- */

/* The topology read without a fault: every successful load must equal it. */
static struct cl_topology topo_clean;

static int op_topology_load(void *arg, long n, int *fired)
{
	struct cl_topology t;
	int r = INJECT(n, *fired, cl_topology_load(&t, (const char *)arg));

	if (r != 0) {
		cr_assert_eq(errno, ENOMEM);
		cr_assert_null(t.cpu, "a failed load leaves t zeroed");
		cr_assert_eq(t.nr_cpu_ids, 0u);
		cl_topology_free(&t); /* still safe */
		return 0;
	}
	/*
	 * A failure that did not fail the load (one inside the C library that
	 * it recovers from) must not change what was read: an allocation that
	 * fails while a file is opened must not read as a missing file.
	 */
	cr_assert_eq(t.nr_cpu_ids, topo_clean.nr_cpu_ids, "injection %ld: nr_cpu_ids", n);
	cr_assert_eq(t.fallback, topo_clean.fallback, "injection %ld: fallback %#x, clean %#x", n,
		     t.fallback, topo_clean.fallback);
	cr_assert_eq(t.nr_possible, topo_clean.nr_possible);
	cr_assert_eq(t.nr_online, topo_clean.nr_online);
	cr_assert_eq(t.nr_cores, topo_clean.nr_cores);
	cr_assert_eq(t.nr_l2s, topo_clean.nr_l2s);
	cr_assert_eq(t.nr_llcs, topo_clean.nr_llcs);
	cr_assert_eq(t.nr_nodes, topo_clean.nr_nodes);
	cr_assert(memcmp(t.cpu, topo_clean.cpu, t.nr_cpu_ids * sizeof(*t.cpu)) == 0,
		  "injection %ld: per-CPU topology differs from the clean load", n);
	cl_topology_free(&t);
	return 1;
}

Test(faults, alloc_failure_topology_load)
{
	skip_if_sanitized();
	cr_assert_eq(cl_topology_load(&topo_clean, CL_TEST_DATA_DIR "/8core-1l3"), 0);
	cr_assert_gt(inject_each("cl_topology_load", op_topology_load, CL_TEST_DATA_DIR "/8core-1l3"), 0);
	cl_topology_free(&topo_clean);
}

/* ---- percpu ---- */

static int op_pool_create(void *arg, long n, int *fired)
{
	struct cl_percpu_pool_attr *attr = arg;
	struct cl_percpu_pool *pool = INJECT(n, *fired, cl_percpu_pool_create(attr));
	void *p;

	if (!pool) {
		cr_assert_eq(errno, ENOMEM);
		return 0;
	}
	p = cl_percpu_alloc(pool, 64, 64);
	cr_assert_not_null(p);
	cr_assert_eq(cl_percpu_free(pool, p), 0);
	cl_percpu_pool_destroy(pool);
	return 1;
}

Test(faults, alloc_failure_pool_create)
{
	struct cl_percpu_pool_attr attr = { 0, 2, CL_PERCPU_ROBUST };

	skip_if_sanitized();
	cr_assert_gt(inject_each("cl_percpu_pool_create", op_pool_create, &attr), 0);
	attr.flags = CL_PERCPU_NUMA;
	(void)inject_each("cl_percpu_pool_create(NUMA)", op_pool_create, &attr);
}

struct alloc_case {
	struct cl_percpu_pool *pool;
	void *objs[64];
	unsigned nr;
};

/* One more page-sized object: a new range each time, and the object arrays grow. */
static int op_pool_alloc(void *arg, long n, int *fired)
{
	struct alloc_case *a = arg;
	struct cl_percpu_stats before, after;
	unsigned char *p;

	cr_assert_eq(cl_percpu_pool_stats(a->pool, &before), 0);
	p = INJECT(n, *fired, (unsigned char *)cl_percpu_alloc(a->pool, a->nr % 2 ? 4096 : 8, 8));
	cr_assert_eq(cl_percpu_pool_stats(a->pool, &after), 0);
	if (!p) {
		cr_assert_eq(errno, ENOMEM);
		cr_assert_eq(after.nr_live, before.nr_live, "a failed alloc leaves nothing live");
		cr_assert_eq(after.bytes_live, before.bytes_live);
		return 0;
	}
	for (unsigned c = 0; c < cl_percpu_pool_nr_cpus(a->pool); c++) {
		unsigned char *q = cl_percpu_ptr_stride(p, c, cl_percpu_pool_stride(a->pool));

		cr_assert_eq(q[0], 0);
		q[0] = (unsigned char)(a->nr + 1);
	}
	a->objs[a->nr++] = p;
	cr_assert_eq(after.nr_live, before.nr_live + 1);
	return 1;
}

Test(faults, alloc_failure_pool_alloc)
{
	struct cl_percpu_pool_attr attr = { 4096, 2, CL_PERCPU_ROBUST };
	struct alloc_case a;
	int failed = 0;

	skip_if_sanitized();
	memset(&a, 0, sizeof(a));
	a.pool = cl_percpu_pool_create(&attr);
	cr_assert_not_null(a.pool);
	while (a.nr < 40)
		failed += inject_each("cl_percpu_alloc", op_pool_alloc, &a);
	cr_assert_gt(failed, 0);
	/* every object kept its contents on every CPU, and frees cleanly */
	for (unsigned i = 0; i < a.nr; i++) {
		for (unsigned c = 0; c < 2; c++)
			cr_assert_eq(cl_percpu_ptr_stride((unsigned char *)a.objs[i], c, 4096)[0], i + 1);
		cr_assert_eq(cl_percpu_free(a.pool, a.objs[i]), 0);
	}
	cr_assert_eq(cl_percpu_pool_report_leaks(a.pool, NULL), 0u);
	cl_percpu_pool_destroy(a.pool);
}

/* ---- cid ---- */

static int op_cid_create(void *arg, long n, int *fired)
{
	struct cl_cid_domain *d =
		INJECT(n, *fired, cl_cid_domain_create(CL_CID_LLC, (const struct cl_topology *)arg));

	if (!d) {
		cr_assert_eq(errno, ENOMEM);
		return 0;
	}
	cr_assert_eq(cl_cid_domain_join_cpus(d, (const unsigned long[]){ 0xful }, 4), 0);
	cr_assert_eq(cl_cid_acquire_on(d, 1), 0);
	cl_cid_domain_destroy(d);
	return 1;
}

static int op_cid_join(void *arg, long n, int *fired)
{
	struct cl_cid_domain *d = arg;
	struct cl_cid_stats before, after;
	int r;

	cr_assert_eq(cl_cid_domain_stats(d, &before), 0);
	r = INJECT(n, *fired, cl_cid_domain_join(d));
	cr_assert_eq(cl_cid_domain_stats(d, &after), 0);
	if (r != 0) {
		cr_assert_eq(errno, ENOMEM);
		cr_assert_eq(after.users, before.users, "a failed join adds no user");
		return 0;
	}
	cr_assert_eq(after.users, before.users + 1);
	return 1;
}

Test(faults, alloc_failure_cid_domain)
{
	struct cl_topology t;
	struct cl_cid_domain *d;

	skip_if_sanitized();
	cr_assert_eq(cl_topology_load(&t, CL_TEST_DATA_DIR "/8core-1l3"), 0);
	cr_assert_gt(inject_each("cl_cid_domain_create", op_cid_create, &t), 0);
	d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	cr_assert_not_null(d);
	cr_assert_gt(inject_each("cl_cid_domain_join", op_cid_join, d), 0);
	cl_cid_domain_destroy(d);
	cl_topology_free(&t);
}

/* ---- counter ---- */

static int op_counter_init(void *arg, long n, int *fired)
{
	struct cl_counter c;

	(void)arg;
	if (INJECT(n, *fired, cl_counter_init(&c)) != 0) {
		cr_assert_eq(errno, ENOMEM);
		cl_counter_destroy(&c); /* documented as safe after a failed init */
		return 0;
	}
	cl_counter_add(&c, 3);
	cr_assert_eq(cl_counter_read(&c), 3);
	cl_counter_destroy(&c);
	return 1;
}

/*
 * No warm-up run: the first counter also sets up what counters share (the
 * slot storage, or the process-wide pool they take slots from), and a
 * failure there must leave nothing half made. The CPU count is read first.
 */
Test(faults, alloc_failure_counter_init)
{
	skip_if_sanitized();
	cr_assert_geq(cl_nr_possible_cpus(), 1u);
	cr_assert_gt(inject_from("cl_counter_init (first)", op_counter_init, NULL, 0), 0);
}

/* ---- sched ---- */

static int op_sched_create(void *arg, long n, int *fired)
{
	struct cl_sched *s = INJECT(n, *fired, cl_sched_create(2, NULL));

	(void)arg;
	if (!s) {
		cr_assert_eq(errno, ENOMEM);
		return 0;
	}
	cl_sched_destroy(s);
	return 1;
}

struct group_case {
	struct cl_sched *s;
	struct cl_task_group *g[64];
	unsigned nr;
};

static int op_group_create(void *arg, long n, int *fired)
{
	struct group_case *gc = arg;
	struct cl_task_group *root = cl_sched_root_group(gc->s);
	unsigned long before = root->nr_groups;
	struct cl_task_group *g = INJECT(n, *fired, cl_task_group_create(gc->nr ? gc->g[gc->nr - 1] : root, 0));

	sim_validate(gc->s);
	if (!g) {
		cr_assert_eq(errno, ENOMEM);
		cr_assert_eq(root->nr_groups, before, "a failed create publishes nothing");
		return 0;
	}
	gc->g[gc->nr++] = g;
	cr_assert_eq(root->nr_groups, before + 1);
	return 1;
}

Test(faults, alloc_failure_sched)
{
	struct group_case gc;
	struct cl_task p;

	skip_if_sanitized();
	urcu_memb_register_thread();
	cr_assert_gt(inject_each("cl_sched_create", op_sched_create, NULL), 0);
	memset(&gc, 0, sizeof(gc));
	gc.s = cl_sched_create(2, NULL);
	cr_assert_not_null(gc.s);
	cr_assert_gt(inject_each("cl_task_group_create", op_group_create, &gc), 0);
	(void)inject_each("cl_task_group_create (nested)", op_group_create, &gc);
	/* the groups that were created work: a task in the deepest one runs */
	cl_task_init(&p, 0);
	cr_assert_eq(cl_task_set_group(&p, gc.g[gc.nr - 1]), 0);
	cl_rq_lock(cl_sched_rq(gc.s, 1));
	cr_assert_eq(cl_rq_enqueue(cl_sched_rq(gc.s, 1), &p, 0), 0);
	cr_assert_eq(cl_rq_pick_next(cl_sched_rq(gc.s, 1)), &p);
	cr_assert_eq(cl_rq_dequeue(cl_sched_rq(gc.s, 1), &p, CL_DEQUEUE_SLEEP), 0);
	cl_rq_put_prev(cl_sched_rq(gc.s, 1));
	cl_rq_unlock(cl_sched_rq(gc.s, 1));
	sim_validate(gc.s);
	cr_assert_eq(cl_task_set_group(&p, NULL), 0); /* an attached task keeps its group */
	while (gc.nr)
		cr_assert_eq(cl_task_group_destroy(gc.g[--gc.nr]), 0);
	cl_sched_destroy(gc.s);
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
}

/* ---- thread exit while holding a cid ---- */

struct holder {
	struct cl_cid_domain *d;
	int cid;
};

static void *hold_and_exit(void *arg)
{
	struct holder *h = arg;

	cr_assert_eq(cl_cid_domain_join_cpus(h->d, (const unsigned long[]){ 0x3ul }, 2), 0);
	h->cid = cl_cid_acquire_on(h->d, 0);
	return NULL; /* exits without release or leave */
}

Test(faults, thread_exit_holding_cid)
{
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	struct holder h = { d, -1 };
	struct cl_cid_stats st;
	pthread_t th;
	int other;

	cr_assert_not_null(d);
	cr_assert_eq(pthread_create(&th, NULL, hold_and_exit, &h), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_geq(h.cid, 0);
	/* the dead thread's cid is still held, its user still counted */
	cr_assert_eq(cl_cid_domain_stats(d, &st), 0);
	cr_assert_eq(st.held, 1u);
	cr_assert_eq(st.users, 1u);
	/* one user, one holder: a further acquire is refused, never a duplicate */
	errno = 0;
	cr_assert_eq(cl_cid_acquire_on(d, 0), -1);
	cr_assert_eq(errno, EBUSY);
	/* a second user gets another cid */
	cr_assert_eq(cl_cid_domain_join_cpus(d, (const unsigned long[]){ 0x3ul }, 2), 0);
	other = cl_cid_acquire_on(d, 0);
	cr_assert_geq(other, 0);
	cr_assert_neq(other, h.cid);
	/* another thread reclaims the dead one's cid and user */
	cl_cid_release(d, h.cid);
	cr_assert_eq(cl_cid_domain_leave(d), 0);
	cr_assert_eq(cl_cid_domain_stats(d, &st), 0);
	cr_assert_eq(st.held, 1u);
	cr_assert_eq(st.users, 1u);
	cl_cid_release(d, other);
	cr_assert_eq(cl_cid_acquire_on(d, 0), 0, "reusable after reclaim");
	cl_cid_release(d, 0);
	cl_cid_domain_destroy(d);
}

/* ---- fork in the middle of use ---- */

struct worker {
	struct cl_percpu_pool *pool;
	struct cl_cid_domain *d;
	struct cl_counter *c;
	atomic_int stop;
	atomic_long adds;
	atomic_int started;
};

/* Uses the pool, the domain and the counter until told to stop. */
static void *busy_worker(void *arg)
{
	struct worker *w = arg;

	if (cl_cid_domain_join(w->d) != 0)
		return (void *)1;
	atomic_store(&w->started, 1);
	while (!atomic_load(&w->stop)) {
		void *p = cl_percpu_alloc(w->pool, 24, 8);
		int cid = cl_cid_acquire(w->d);

		if (!p || cid < 0)
			return (void *)2;
		cl_counter_add(w->c, 1);
		atomic_fetch_add(&w->adds, 1);
		cl_cid_release(w->d, cid);
		if (cl_percpu_free(w->pool, p) != 0)
			return (void *)3;
	}
	cl_cid_domain_leave(w->d);
	return NULL;
}

enum { NTASK = 6 };

/* Child side: every structure keeps working. Returns a bitmask of failures. */
static int child_checks(struct cl_percpu_pool *pool, long *obj, struct cl_cid_domain *d,
			struct cl_counter *c, struct cl_sched *s, struct cl_task *t)
{
	struct cl_cid_stats st;
	int code = 0, cid, n = 0;
	int64_t v0;
	long *q;

	/* pool: the parent's object on every CPU, then alloc/free */
	for (unsigned cpu = 0; cpu < cl_percpu_pool_nr_cpus(pool); cpu++)
		if (*cl_percpu_ptr(obj, cpu) != 1000 + (long)cpu)
			code |= 1;
	q = cl_percpu_alloc(pool, sizeof(long), 8);
	if (!q || *q != 0 || cl_percpu_free(pool, q) != 0)
		code |= 2;
	/* cid domain: starts clean in the child */
	if (cl_cid_domain_stats(d, &st) != 0 || st.users != 0 || st.held != 0)
		code |= 4;
	if (cl_cid_domain_join(d) != 0 || (cid = cl_cid_acquire(d)) != 0)
		code |= 8;
	else
		cl_cid_release(d, cid);
	/* counter: exact in the child, which is now single-threaded */
	v0 = cl_counter_read(c);
	for (int i = 0; i < 100; i++)
		cl_counter_add(c, 1);
	if (cl_counter_read(c) != v0 + 100)
		code |= 16;
	/* runqueue: run, then drain, every step validated */
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		struct cl_rq *rq = cl_sched_rq(s, cpu);
		const char *why;

		cl_rq_lock(rq);
		for (int k = 1; k <= 3; k++) {
			cl_rq_tick(rq, 1000000ull * (uint64_t)k);
			cl_rq_pick_next(rq);
			if (cl_rq_validate(rq, &why) != 0)
				code |= 32;
		}
		for (int i = 0; i < NTASK; i++)
			if (t[i].se.on_rq && t[i].cpu == (int)cpu && cl_rq_dequeue(rq, &t[i], CL_DEQUEUE_SLEEP) == 0)
				n++;
		cl_rq_put_prev(rq);
		if (cl_rq_validate(rq, &why) != 0 || rq->nr_running != 0)
			code |= 64;
		cl_rq_unlock(rq);
	}
	if (n != NTASK)
		code |= 128;
	return code;
}

Test(faults, fork_mid_use_every_structure)
{
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
	struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_LLC, NULL);
	struct cl_counter c;
	struct worker w;
	struct cl_sched *s;
	struct cl_task_group *g;
	struct cl_task t[NTASK];
	pthread_t th;
	long *obj;
	void *ret;
	int64_t main_adds = 0;

	urcu_memb_register_thread();
	cr_assert_not_null(pool);
	cr_assert_not_null(d);
	cr_assert_eq(cl_counter_init(&c), 0);
	obj = cl_percpu_alloc(pool, sizeof(long), 8);
	cr_assert_not_null(obj);
	for (unsigned cpu = 0; cpu < cl_percpu_pool_nr_cpus(pool); cpu++)
		*cl_percpu_ptr(obj, cpu) = 1000 + (long)cpu;
	s = cl_sched_create(2, NULL);
	cr_assert_not_null(s);
	g = cl_task_group_create(cl_sched_root_group(s), 512);
	cr_assert_not_null(g);
	for (int i = 0; i < NTASK; i++) {
		struct cl_rq *rq = cl_sched_rq(s, (unsigned)i % 2);

		cl_task_init(&t[i], i - 3);
		if (i % 3 == 0)
			cr_assert_eq(cl_task_set_group(&t[i], g), 0);
		cl_rq_lock(rq);
		cr_assert_eq(cl_rq_enqueue(rq, &t[i], 0), 0);
		cl_rq_unlock(rq);
	}
	cl_rq_lock(cl_sched_rq(s, 0));
	cr_assert_not_null(cl_rq_pick_next(cl_sched_rq(s, 0))); /* one running at fork */
	cl_rq_unlock(cl_sched_rq(s, 0));

	memset(&w, 0, sizeof(w));
	w.pool = pool;
	w.d = d;
	w.c = &c;
	cr_assert_eq(pthread_create(&th, NULL, busy_worker, &w), 0);
	while (!atomic_load(&w.started))
		sched_yield();
	for (int round = 0; round < 5; round++) {
		int status = -1;
		pid_t pid;

		cl_counter_add(&c, 10);
		main_adds += 10;
		fflush(NULL);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			_exit(child_checks(pool, obj, d, &c, s, t));
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status), "child died (signal %d)", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		cr_assert_eq(WEXITSTATUS(status), 0, "round %d: child check failed: mask %#x", round,
			     WEXITSTATUS(status));
	}
	atomic_store(&w.stop, 1);
	cr_assert_eq(pthread_join(th, &ret), 0);
	cr_assert_null(ret, "worker failed at step %ld", (long)(intptr_t)ret);
	/* the parent is untouched by its children */
	cr_assert_eq(cl_counter_read(&c), main_adds + atomic_load(&w.adds));
	for (unsigned cpu = 0; cpu < cl_percpu_pool_nr_cpus(pool); cpu++)
		cr_assert_eq(*cl_percpu_ptr(obj, cpu), 1000 + (long)cpu);
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		struct cl_rq *rq = cl_sched_rq(s, cpu);
		const char *why = NULL;

		cl_rq_lock(rq);
		cr_assert_eq(cl_rq_validate(rq, &why), 0, "%s", why ? why : "?");
		for (int i = 0; i < NTASK; i++)
			if (t[i].cpu == (int)cpu)
				cr_assert_eq(cl_rq_dequeue(rq, &t[i], CL_DEQUEUE_SLEEP), 0);
		cl_rq_put_prev(rq);
		cr_assert_eq(rq->nr_running, 0u);
		cl_rq_unlock(rq);
	}
	for (int i = 0; i < NTASK; i++)
		cr_assert_eq(cl_task_set_group(&t[i], NULL), 0);
	cr_assert_eq(cl_task_group_destroy(g), 0);
	cl_sched_destroy(s);
	cr_assert_eq(cl_percpu_free(pool, obj), 0);
	cr_assert_eq(cl_percpu_pool_report_leaks(pool, NULL), 0u);
	cl_percpu_pool_destroy(pool);
	cl_counter_destroy(&c);
	cl_cid_domain_destroy(d);
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
}

/* ---- affinity change of a domain user ---- */

/*
 * A user joined while pinned to one CPU, then moved to another: the bound
 * stays 1 until cl_cid_domain_refresh_allowed() adds the new CPU, after
 * which a second user can hold a second cid. The union never shrinks.
 */
Test(faults, affinity_change_of_domain_user)
{
	int cpus[CPU_SETSIZE], n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);
	struct cl_cid_domain *d;
	struct cl_cid_stats st;
	cpu_set_t all;
	int a, b;

	if (n < 2)
		cr_skip_test("needs 2 allowed CPUs");
	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	d = cl_cid_domain_create(CL_CID_RECENT, NULL);
	cr_assert_not_null(d);
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	cr_assert_eq(cl_cid_domain_join(d), 0);
	cr_assert_eq(cl_cid_domain_join(d), 0); /* a second user, same CPU */
	cr_assert_eq(cl_cid_domain_bound(d), 1u, "one allowed CPU: one cid");
	a = cl_cid_acquire(d);
	cr_assert_eq(a, 0);
	cr_assert_eq(cl_test_pin(cpus[1]), 0);
	cr_assert_eq(cl_cid_domain_bound(d), 1u, "not refreshed yet");
	cr_assert_eq(cl_cid_domain_refresh_allowed(d), 0);
	cr_assert_eq(cl_cid_domain_bound(d), 2u);
	b = cl_cid_acquire(d);
	cr_assert_eq(b, 1, "the second cid below the new bound");
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	cr_assert_eq(cl_cid_domain_refresh_allowed(d), 0);
	cr_assert_eq(cl_cid_domain_stats(d, &st), 0);
	cr_assert_eq(st.nr_allowed, 2u, "the union does not shrink");
	cr_assert_eq(st.held, 2u);
	cl_cid_release(d, a);
	cl_cid_release(d, b);
	cr_assert_eq(sched_setaffinity(0, sizeof(all), &all), 0);
	cl_cid_domain_destroy(d);
}
