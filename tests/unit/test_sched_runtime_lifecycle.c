/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_sched_runtime_lifecycle.c - the M:N runtime's lifecycle
 * under misuse and races: a spawn racing cl_runtime_shutdown() (never a
 * lost task, no spurious EDEADLK), shutdown from two threads at once,
 * destroy with blocked tasks (refused, everything left usable), zeroed
 * spawn attributes, a second join through a stale handle, mutex misuse,
 * out-of-range nice and stack sizes; the default number of workers under
 * a cgroup CPU limit (fake /proc and cgroup trees, v1 and v2, and a real
 * cgroup with a quota where one can be made).
 *
 * The races are forced through the runtime's CL_INJECT() points, never
 * with sleeps:
 *   60  cl_spawn() from outside: admitted, not yet counted live
 *   61  cl_runtime_shutdown(): about to look at the live tasks
 *   62  cl_spawn() from outside: counted live, not yet queued
 *   63  cl_runtime_shutdown(): no task left, before stopping the workers
 *   64  the workers are being stopped (once per runtime)
 *   73  the clock's calibration, between a CLOCK_MONOTONIC reading and the
 *       tick counter's
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)

#include "cl_test.h"

#include <pthread.h>
#include <sched.h>

#include <cachelocal/sched/runtime.h>

/* ---- the hook ---- */

static atomic_int armed;     /* the point that starts a racing shutdown, or 63 */
static atomic_int looks;     /* times a shutdown passed point 61 */
static atomic_int at_stop;   /* shutdowns that reached point 63 */
static atomic_int stops;     /* times the workers were stopped (point 64) */
static atomic_int shut_done; /* the racing shutdown returned */
static struct cl_runtime *race_rt;
static pthread_t shut_thread;
static int shut_ret, shut_errno;

static void *shutdown_thread(void *p)
{
	int r = cl_runtime_shutdown((struct cl_runtime *)p);

	shut_errno = errno;
	shut_ret = r;
	atomic_store(&shut_done, 1);
	return NULL;
}

static atomic_int calib_stall; /* point 73: stall every other reading */
static atomic_int calib_calls;

/*
 * At the armed spawn point: start a shutdown in another thread and hold
 * the spawn until that shutdown returned, or went round its loop twice
 * (it saw the spawn and waits for it). At 63: hold each shutdown until
 * two got there. At 73, while calib_stall is set: stall every other
 * reading 5 ms.
 */
static void inject(int n)
{
	if (n == 73 && atomic_load(&calib_stall) && atomic_fetch_add(&calib_calls, 1) % 2 == 0) {
		/* as if the kernel took the CPU away for 5 ms mid-pair */
		unsigned long long t0 = cl__now_ns();

		while (cl__now_ns() - t0 < 5000000ULL)
			;
	}
	if (n == 61)
		atomic_fetch_add(&looks, 1);
	if (n == 64)
		atomic_fetch_add(&stops, 1);
	if ((n == 60 || n == 62) && atomic_load(&armed) == n) {
		atomic_store(&armed, 0);
		if (pthread_create(&shut_thread, NULL, shutdown_thread, race_rt) != 0)
			abort();
		while (!atomic_load(&shut_done) && atomic_load(&looks) < 2)
			sched_yield();
	}
	if (n == 63 && atomic_load(&armed) == 63) {
		atomic_fetch_add(&at_stop, 1);
		while (atomic_load(&at_stop) < 2)
			sched_yield();
	}
}

static struct cl_runtime *new_rt(unsigned int workers)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

	memset(&a, 0, sizeof(a));
	a.nr_workers = workers;
	a.flags = CL_RUNTIME_UNPINNED;
	a.spin_ns = CL_RUNTIME_NO_SPIN;
	rt = cl_runtime_create(&a);
	cr_assert_not_null(rt, "cl_runtime_create: %s", strerror(errno));
	return rt;
}

static void arm(struct cl_runtime *rt, int point)
{
	race_rt = rt;
	atomic_store(&looks, 0);
	atomic_store(&at_stop, 0);
	atomic_store(&stops, 0);
	atomic_store(&shut_done, 0);
	atomic_store(&armed, point);
}

static atomic_int ran;

static void *mark_ran(void *p)
{
	atomic_fetch_add(&ran, 1);
	return p;
}

/* Every worker asleep on its futex (the runtime was just made idle). */
static void wait_all_asleep(struct cl_runtime *rt)
{
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		while (!CL_ATOMIC_LOAD(&rt->workers[i].sleeping, CL_SEQ_CST))
			sched_yield();
}

/* ---- the clock ---- */

/*
 * A calibration of the tick counter preempted between its CLOCK_MONOTONIC
 * reading and its tick reading (every other pair stalls 5 ms there) must
 * still give the runtime a clock that runs at CLOCK_MONOTONIC's rate: a
 * stall counted in the CLOCK_MONOTONIC span but not in the ticks makes it
 * run fast for the runtime's whole life, its slices and vruntimes with it
 * (the calibration read once at each end ran 166,000x fast here).
 */
Test(sched_runtime_lifecycle, a_preempted_clock_calibration_still_runs_at_the_monotonic_rate, .timeout = 30)
{
	struct cl_runtime *rt;
	uint64_t r0, r1;
	unsigned long long m0a, m0b, m1a, m1b;
	double lo, hi;
	int reliable = 0;

	atomic_store(&calib_calls, 0);
	atomic_store(&calib_stall, 1);
	rt = new_rt(1);
	atomic_store(&calib_stall, 0);
#ifdef CL__CTX_HAVE_TICKS
	reliable = cl__ctx_ticks_reliable();
#endif
	cr_log_info("tick counter %s; calibration: %d readings; the clock: %s",
		    reliable ? "reliable" : "not reliable (or none)", atomic_load(&calib_calls),
		    rt->use_ticks ? "the tick counter" : "CLOCK_MONOTONIC");
	if (reliable) /* the calibration ran, and through the stalls */
		cr_assert_gt(atomic_load(&calib_calls), 0, "the calibration never ran");
	else /* (an emulated x86_64 without constant_tsc: nothing to calibrate) */
		cr_assert(!rt->use_ticks && atomic_load(&calib_calls) == 0,
			  "a tick counter that is not reliable is used or calibrated");
	/* each runtime reading between two CLOCK_MONOTONIC ones: a stall of
	 * this thread (an emulator, a loaded host) widens the bounds, it does
	 * not fail the check */
	m0a = cl__now_ns();
	r0 = cl__rt_now_real(rt);
	m0b = cl__now_ns();
	while (cl__now_ns() - m0b < 50000000ULL)
		;
	m1a = cl__now_ns();
	r1 = cl__rt_now_real(rt);
	m1b = cl__now_ns();
	lo = (double)(r1 - r0) / (double)(m1b - m0a);
	hi = (double)(r1 - r0) / (double)(m1a - m0b);
	cr_log_info("runtime clock: %.4f to %.4f ns per CLOCK_MONOTONIC ns", lo, hi);
	cr_assert(lo < 1.02 && hi > 0.98, "the runtime's clock runs at %.3f to %.3fx CLOCK_MONOTONIC", lo,
		  hi);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- spawn vs shutdown ---- */

Test(sched_runtime_lifecycle, spawn_admitted_before_shutdown_is_never_lost, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t;
	int e;

	atomic_store(&ran, 0);
	arm(rt, 60);
	errno = 0;
	t = cl_spawn(rt, NULL, mark_ran, NULL);
	e = errno;
	pthread_join(shut_thread, NULL);
	cr_assert_eq(shut_ret, 0, "shutdown: %s", strerror(shut_errno));
	if (t)
		cr_assert_eq(atomic_load(&ran), 1, "spawn returned a task that never ran");
	else
		cr_assert_eq(e, EPIPE);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_lifecycle, spawn_in_flight_is_no_deadlock_for_shutdown, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t;

	atomic_store(&ran, 0);
	wait_all_asleep(rt);
	arm(rt, 62);
	t = cl_spawn(rt, NULL, mark_ran, NULL);
	pthread_join(shut_thread, NULL);
	cr_assert_eq(shut_ret, 0, "shutdown: %s (a task being spawned is not blocked)",
		     strerror(shut_errno));
	cr_assert_not_null(t);
	cr_assert_eq(atomic_load(&ran), 1);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

static void *recv_one(void *p)
{
	int v;

	if (cl_chan_recv((struct cl_chan *)p, &v) == 0)
		return (void *)1;
	return (void *)(uintptr_t)(errno == EPIPE ? 2 : 3);
}

Test(sched_runtime_lifecycle, spawn_after_shutdown_began_gives_epipe, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_rt_task *t = cl_spawn(rt, NULL, recv_one, c);
	void *r;

	cr_assert_not_null(t);
	errno = 0;
	cr_assert_eq(cl_runtime_shutdown(rt), -1);
	cr_assert_eq(errno, EDEADLK);
	errno = 0;
	cr_assert_null(cl_spawn(rt, NULL, mark_ran, NULL), "shutdown has begun");
	cr_assert_eq(errno, EPIPE);
	cr_assert_eq(cl_chan_close(c), 0);
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_eq((uintptr_t)r, 2);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_chan_destroy(c), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

static void *shutdown_caller(void *p)
{
	return (void *)(intptr_t)cl_runtime_shutdown((struct cl_runtime *)p);
}

Test(sched_runtime_lifecycle, concurrent_shutdowns_stop_the_workers_once, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(2);
	pthread_t th[2];
	void *r[2];

	arm(rt, 63);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, shutdown_caller, rt), 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], &r[i]);
		cr_assert_eq((intptr_t)r[i], 0, "each shutdown returns 0");
	}
	atomic_store(&armed, 0);
	cr_assert_eq(atomic_load(&stops), 1, "workers stopped %d times", atomic_load(&stops));
	cr_assert_eq(cl_runtime_shutdown(rt), 0, "idempotent");
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- destroy with blocked tasks ---- */

Test(sched_runtime_lifecycle, destroy_with_blocked_tasks_refuses_and_leaves_all_usable, .timeout = 30)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_chan *c = cl_chan_create(sizeof(int), 1);
	struct cl_rt_task *t[3];
	int v = 7;
	void *r;

	for (int i = 0; i < 3; i++)
		cr_assert_not_null(t[i] = cl_spawn(rt, NULL, recv_one, c));
	errno = 0;
	cr_assert_eq(cl_runtime_destroy(rt), -1);
	cr_assert_eq(errno, EDEADLK);
	/* the runtime, the channel and the tasks are all still there */
	cr_assert_eq(cl_chan_destroy(c), -1);
	cr_assert_eq(errno, EBUSY);
	cr_assert_eq(cl_chan_trysend(c, &v), 0, "the send wakes one receiver");
	cr_assert_eq(cl_chan_close(c), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(cl_join(t[i], &r), 0);
	cr_assert_eq(cl_chan_destroy(c), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- spawn attributes ---- */

Test(sched_runtime_lifecycle, zeroed_spawn_attr_is_the_defaults)
{
	struct cl_runtime *rt = new_rt(2);
	struct cl_spawn_attr sa;
	unsigned int rr;

	memset(&sa, 0, sizeof(sa));
	sa.nice = 5;
	rr = CL_ATOMIC_LOAD(&rt->next_spawn, CL_RELAXED);
	cr_assert_not_null(cl_spawn(rt, &sa, mark_ran, NULL));
	cr_assert_eq(CL_ATOMIC_LOAD(&rt->next_spawn, CL_RELAXED), rr + 1,
		     "from outside, no worker named: round robin, not worker 0");
	memset(&sa, 0, sizeof(sa));
	sa.pin = 1;
	errno = 0;
	cr_assert_null(cl_spawn(rt, &sa, mark_ran, NULL), "pinned to no worker");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_runtime_shutdown(rt), 0);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

Test(sched_runtime_lifecycle, nice_and_stack_size_out_of_range_give_einval)
{
	static const int bad_nice[] = { 20, 99, -21, -1000 };
	static const size_t bad_stack[] = { 1, 4096, (size_t)-1, (size_t)-4096, (size_t)1 << 62 };
	struct cl_runtime_attr a;
	struct cl_spawn_attr sa;
	struct cl_runtime *rt;

	for (size_t i = 0; i < sizeof(bad_stack) / sizeof(bad_stack[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.nr_workers = 1;
		a.stack_size = bad_stack[i];
		errno = 0;
		rt = cl_runtime_create(&a);
		cr_assert_null(rt, "stack_size %zu accepted", bad_stack[i]);
		cr_assert_eq(errno, EINVAL);
	}
	rt = new_rt(1);
	for (size_t i = 0; i < sizeof(bad_nice) / sizeof(bad_nice[0]); i++) {
		memset(&sa, 0, sizeof(sa));
		sa.nice = bad_nice[i];
		errno = 0;
		cr_assert_null(cl_spawn(rt, &sa, mark_ran, NULL), "nice %d accepted", bad_nice[i]);
		cr_assert_eq(errno, EINVAL);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- join ---- */

static void *ret_arg_plus_one(void *p)
{
	return (void *)((uintptr_t)p + 1);
}

Test(sched_runtime_lifecycle, second_join_and_join_after_reuse_give_einval)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_rt_task *t, *u;
	void *r = NULL;

	t = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)1);
	cr_assert_eq(cl_join(t, &r), 0);
	cr_assert_eq((uintptr_t)r, 2);
	errno = 0;
	cr_assert_eq(cl_join(t, &r), -1, "joined twice");
	cr_assert_eq(errno, EINVAL);
	/* the descriptor goes to the next spawn; the stale handle must not reach it */
	for (int i = 0; i < 4; i++) {
		u = cl_spawn(rt, NULL, ret_arg_plus_one, (void *)41);
		cr_assert_not_null(u);
		errno = 0;
		cr_assert_eq(cl_join(t, &r), -1, "a stale handle joined another task");
		cr_assert_eq(errno, EINVAL);
		r = NULL;
		cr_assert_eq(cl_join(u, &r), 0);
		cr_assert_eq((uintptr_t)r, 42);
	}
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- mutex misuse ---- */

static void *unlock_foreign(void *p)
{
	struct cl_mutex *m = (struct cl_mutex *)p;

	if (cl_mutex_unlock(m) != -1 || errno != EPERM) /* held by the main thread */
		return (void *)4;
	if (cl_mutex_trylock(m) == 0)
		return (void *)1; /* the unlock took it from its holder */
	return (void *)(uintptr_t)(errno == EBUSY ? 0 : 2);
}

Test(sched_runtime_lifecycle, mutex_unlock_by_a_non_holder_gives_eperm_and_leaves_it_held)
{
	struct cl_runtime *rt = new_rt(1);
	struct cl_mutex m;
	void *r = (void *)3;

	cl_mutex_init(&m);
	errno = 0;
	cr_assert_eq(cl_mutex_unlock(&m), -1, "not held");
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cr_assert_eq(cl_join(cl_spawn(rt, NULL, unlock_foreign, &m), &r), 0);
	cr_assert_eq((uintptr_t)r, 0, "a task that does not hold it released it");
	cr_assert_eq(cl_mutex_unlock(&m), 0, "its holder releases it");
	cr_assert_eq(cl_mutex_trylock(&m), 0);
	cr_assert_eq(cl_mutex_unlock(&m), 0);
	errno = 0;
	cr_assert_eq(cl_mutex_unlock(&m), -1, "released twice");
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(cl_runtime_destroy(rt), 0);
}

/* ---- the default number of workers under a cgroup CPU limit ---- */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char tree[64];

/* Write @text to @rel under the fake tree, making its directories. */
static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	for (char *s = strchr(path + strlen(tree) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		(void)mkdir(path, 0755);
		*s = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

static int drop_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Remove the fake tree (no shell: the guests have none). */
static void drop_tree(void)
{
	if (tree[0]) {
		cr_assert_eq(nftw(tree, drop_one, 16, FTW_DEPTH | FTW_PHYS), 0, "%s: %s", tree, strerror(errno));
		tree[0] = '\0';
	}
}

static void new_tree(void)
{
	drop_tree();
	snprintf(tree, sizeof(tree), "/tmp/cl-cgroup-XXXXXX");
	cr_assert_not_null(mkdtemp(tree));
}

#define MOUNT_V2 "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
#define MOUNT_V1_CPU "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"

static unsigned int defaults(unsigned int allowed, int *bound)
{
	return cl__rt_default_workers(allowed, tree, bound);
}

Test(sched_runtime_lifecycle, default_workers_follow_the_tightest_cgroup_cpu_limit)
{
	int bound;

	/* v2: 2.5 CPUs on the parent, none on the leaf: 3 workers of 96 */
	new_tree();
	put("proc/self/cgroup", "0::/app/web\n");
	put("proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw\n" MOUNT_V2);
	put("sys/fs/cgroup/app/cpu.max", "250000 100000\n");
	put("sys/fs/cgroup/app/web/cpu.max", "max 100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 3);
	cr_assert_eq(defaults(96, &bound), 3);
	cr_assert_eq(bound, 1);
	cr_assert_eq(defaults(2, &bound), 2, "a limit above the CPUs changes nothing");
	cr_assert_eq(bound, 0);
	/* the leaf tighter than the parent, and the parent tighter than the leaf */
	put("sys/fs/cgroup/app/web/cpu.max", "400000 200000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 2);
	put("sys/fs/cgroup/app/web/cpu.max", "1600000 100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 3);
	/* below one CPU: 2 workers, not 1 */
	put("sys/fs/cgroup/app/web/cpu.max", "50000 100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 1);
	cr_assert_eq(defaults(96, &bound), 2);
	/* no limit anywhere: one worker per allowed CPU */
	put("sys/fs/cgroup/app/web/cpu.max", "max 100000\n");
	put("sys/fs/cgroup/app/cpu.max", "max 100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 0);
	cr_assert_eq(defaults(96, &bound), 96);
	cr_assert_eq(bound, 0);
	drop_tree();
}

Test(sched_runtime_lifecycle, default_workers_read_a_container_view_and_cgroup_v1)
{
	int bound;

	/* a container's view: the mount shows only the pod's subtree */
	new_tree();
	put("proc/self/cgroup", "0::/kubepods/pod1/c1\n");
	put("proc/self/mountinfo",
	    "29 23 0:26 /kubepods/pod1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n");
	put("sys/fs/cgroup/c1/cpu.max", "300000 100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 3);
	/* a cgroup outside what the mount shows: nothing read */
	put("proc/self/cgroup", "0::/system.slice/x\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 0);
	/* cgroup v1 (a hybrid host: v2 mounted without the cpu controller) */
	new_tree();
	put("proc/self/cgroup", "4:memory:/job\n3:cpu,cpuacct:/job/step\n0::/\n");
	put("proc/self/mountinfo", "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
				   "32 30 0:29 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" MOUNT_V1_CPU);
	put("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "350000\n");
	put("sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
	put("sys/fs/cgroup/cpu,cpuacct/job/step/cpu.cfs_quota_us", "-1\n");
	put("sys/fs/cgroup/cpu,cpuacct/job/step/cpu.cfs_period_us", "100000\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 4);
	cr_assert_eq(defaults(64, &bound), 4);
	cr_assert_eq(bound, 1);
	/* "cpuacct" alone is not "cpu" */
	put("proc/self/cgroup", "3:cpuacct:/job/step\n0::/\n");
	cr_assert_eq(cl__rt_cgroup_cpu_limit(tree), 0);
	/* nothing readable: the default stays one worker per CPU */
	new_tree();
	cr_assert_eq(defaults(8, &bound), 8);
	cr_assert_eq(bound, 0);
	drop_tree();
}

/* In a child: make a cgroup with a limit of 2.5 CPUs (v2 where the cpu
 * controller is on the unified hierarchy, else v1's cpu controller), move
 * into it, and check what the runtime reads; returns 0, or the failed
 * check's number; 100 + n: the cgroup could not be made (not a failure
 * here: the reason is printed and the parent skips). */
static int quota_child(void)
{
	char dir[256], path[320], ctl[256];
	int v2, fd, pinned = 0;
	unsigned int allowed, want, dflt;
	long long quota, period;
	int cpus[CL_MAX_CPUS], bound;
	struct cl_runtime *rt;

	/* v2 when the unified hierarchy at /sys/fs/cgroup has the cpu controller
	 * ("cpuset cpu io memory ...": a space-separated list) */
	v2 = cl__rt_find_line("", "/sys/fs/cgroup/cgroup.controllers", cl__rt_is_any_line, ctl, sizeof(ctl));
	for (char *s = ctl; v2 && (s = strchr(s, ' ')); s++)
		*s = ',';
	v2 = v2 && cl__rt_has_cpu(ctl, NULL);
	if (v2) {
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cl-test-cpu-max-%d", (int)getpid());
		fd = open("/sys/fs/cgroup/cgroup.subtree_control", O_WRONLY);
		if (fd < 0 || write(fd, "+cpu", 4) != 4) {
			fprintf(stderr, "quota_child: +cpu in subtree_control: %s\n", strerror(errno));
			return 101;
		}
		close(fd);
	} else {
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu/cl-test-cpu-max-%d", (int)getpid());
	}
	if (mkdir(dir, 0755) != 0) {
		fprintf(stderr, "quota_child: mkdir %s: %s\n", dir, strerror(errno));
		return 102;
	}
#define QC_WRITE(file, text)                                                              \
	do {                                                                              \
		snprintf(path, sizeof(path), "%s/%s", dir, file);                          \
		fd = open(path, O_WRONLY);                                                 \
		if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {    \
			fprintf(stderr, "quota_child: %s: %s\n", path, strerror(errno));   \
			rmdir(dir);                                                        \
			return 103;                                                        \
		}                                                                          \
		close(fd);                                                                 \
	} while (0)
	if (v2) {
		QC_WRITE("cpu.max", "250000 100000");
	} else {
		QC_WRITE("cpu.cfs_period_us", "100000");
		QC_WRITE("cpu.cfs_quota_us", "250000");
	}
	QC_WRITE("cgroup.procs", "0");
#undef QC_WRITE
	/* the new cgroup's parent is the mount's root: a limit there (a
	 * container's own cgroup seen through its namespace) is tighter if
	 * below 3 CPUs; read here without the library's parser */
	want = 3;
	if (v2) {
		if (cl__rt_find_line("", "/sys/fs/cgroup/cpu.max", cl__rt_is_any_line, ctl, sizeof(ctl)) &&
		    sscanf(ctl, "%lld %lld", &quota, &period) == 2 && quota > 0 && period > 0 &&
		    (quota + period - 1) / period < want)
			want = (unsigned int)((quota + period - 1) / period);
	} else if (cl__rt_find_line("", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", cl__rt_is_any_line, ctl,
				     sizeof(ctl)) &&
		   sscanf(ctl, "%lld", &quota) == 1 && quota > 0 &&
		   cl__rt_find_line("", "/sys/fs/cgroup/cpu/cpu.cfs_period_us", cl__rt_is_any_line, ctl,
				    sizeof(ctl)) &&
		   sscanf(ctl, "%lld", &period) == 1 && period > 0 && (quota + period - 1) / period < want) {
		want = (unsigned int)((quota + period - 1) / period);
	}
	dflt = want < 2 ? 2 : want;
	if (cl__rt_cgroup_cpu_limit("") != want)
		return 1;
	if (cl__rt_default_workers(96, "", &bound) != dflt || !bound)
		return 2;
	allowed = cl__rt_allowed_cpus(cpus, CL_MAX_CPUS);
	rt = cl_runtime_create(NULL);
	if (!rt)
		return 3;
	if (cl_runtime_nr_workers(rt) != (allowed > dflt ? dflt : allowed))
		return 4;
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		pinned += rt->workers[i].os_cpu >= 0;
	if (allowed > dflt && pinned)
		return 5; /* cut by the quota: the kernel places them */
	if (cl_runtime_shutdown(rt) != 0 || cl_runtime_destroy(rt) != 0)
		return 6;
	printf("quota_child: cgroup %s, 2.5 CPUs (limit %u CPUs): %u workers of %u allowed CPUs\n",
	       v2 ? "v2" : "v1", want, allowed > dflt ? dflt : allowed, allowed);
	return 0;
}

Test(sched_runtime_lifecycle, a_real_cgroup_cpu_quota_cuts_the_default_workers, .timeout = 60)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(quota_child());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	{
		/* the child's cgroup: moved out of by its exit, removed here */
		char dir[256];

		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cl-test-cpu-max-%d", (int)pid);
		(void)rmdir(dir);
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup/cpu/cl-test-cpu-max-%d", (int)pid);
		(void)rmdir(dir);
	}
	cr_assert(WIFEXITED(st), "the child died: status %d", st);
	if (WEXITSTATUS(st) > 100)
		cr_skip_test("no cgroup with a CPU quota can be made here (not root, or no cpu controller)");
	cr_assert_eq(WEXITSTATUS(st), 0,
		     "check %d failed (1: the limit read, 2: the default, 3: create, 4: nr_workers, "
		     "5: pinned though cut by the quota, 6: shutdown)", WEXITSTATUS(st));
}
