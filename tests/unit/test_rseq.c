/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_rseq.c - rseq.h: ownership and registration states, the
 * id getters against the kernel, mm_cid bounds and uniqueness, thread
 * start/exit registration, fork. Run by `make check` in the three id modes
 * (CL_TEST_MODE): default (glibc owns rseq), glibc-off (we register our own
 * area) and no-rseq (the syscall fails with ENOSYS: every fallback).
 */
#include <cachelocal/rseq.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

_Static_assert(offsetof(struct cl_rseq_abi, cpu_id) == 4, "cpu_id at 4");
_Static_assert(offsetof(struct cl_rseq_abi, rseq_cs) == 8, "rseq_cs at 8");
_Static_assert(offsetof(struct cl_rseq_abi, node_id) == 20, "node_id at 20");
_Static_assert(offsetof(struct cl_rseq_abi, mm_cid) == 24, "mm_cid at 24");
_Static_assert(_Alignof(struct cl_rseq_abi) == 32, "area 32-byte aligned");
_Static_assert(_Alignof(struct cl_rseq_cs) == 32, "descriptor 32-byte aligned");

static int mode_is(const char *m)
{
	return strcmp(cl_test_mode(), m) == 0;
}

/* 1 + highest id in /sys/devices/system/cpu/possible ("0-1", "0,2-5"...). */
static int nr_possible_cpus(void)
{
	char buf[4096];
	int max = -1;
	char *p = buf;

	if (cl_test_slurp("/sys/devices/system/cpu/possible", buf, sizeof(buf)) <= 0)
		return (int)sysconf(_SC_NPROCESSORS_CONF);
	while (*p) {
		char *end;
		long v;

		if (*p < '0' || *p > '9') { /* ',' '-' '\n' */
			p++;
			continue;
		}
		v = strtol(p, &end, 10);
		if (v > max)
			max = (int)v;
		p = end;
	}
	return max + 1;
}

/* The kernel's feature size from the auxiliary vector (0 if absent). */
static unsigned long auxv_feature_size(void)
{
	return getauxval(27);
}

/* The usable size the rule gives, after the CL_TEST_RSEQ_FEATURE_SIZE_MAX knob:
 * our own area registered with the v2 length (7.x) keeps the kernel's whole
 * feature size. */
static unsigned expected_feature_size(unsigned glibc_size)
{
	unsigned aux = cl__rseq_feature_cap((unsigned)auxv_feature_size());

	if (glibc_size == 0 && cl__rseq_own_len(aux, getauxval(28)) > 32)
		return aux;
	return cl__rseq_feature_cap(cl__rseq_size_rule(glibc_size, auxv_feature_size()));
}

static enum cl_id_mode expected_rseq_mode(void)
{
	unsigned glibc = cl_rseq_owned_by_glibc() ? cl__glibc_rseq_size : 0;

	return expected_feature_size(glibc) >= 28 ? CL_ID_MM_CID : CL_ID_CPU_ID;
}

static void restore_affinity(const int *cpus, int n)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

Test(rseq, size_rule)
{
	/* glibc's legacy values defer to the auxv, capped at the 32-byte area */
	cr_assert_eq(cl__rseq_size_rule(20, 28), 28);
	cr_assert_eq(cl__rseq_size_rule(32, 28), 28);
	cr_assert_eq(cl__rseq_size_rule(32, 33), 32);
	cr_assert_eq(cl__rseq_size_rule(20, 0), 20);
	cr_assert_eq(cl__rseq_size_rule(32, 0), 20);
	/* other glibc values (2.41+: the kernel's size) are trusted */
	cr_assert_eq(cl__rseq_size_rule(28, 0), 28);
	cr_assert_eq(cl__rseq_size_rule(33, 28), 33);
	/* our own area (0): auxv rule */
	cr_assert_eq(cl__rseq_size_rule(0, 28), 28);
	cr_assert_eq(cl__rseq_size_rule(0, 0), 20);
	cr_assert_eq(cl__rseq_size_rule(0, 64), 32);
}

/* The test knob only lowers the size, and ignores what is not a number. */
Test(rseq, feature_size_knob_caps_only)
{
	const char *saved = getenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX");
	char *copy = saved ? strdup(saved) : NULL;

	cr_assert_eq(unsetenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX"), 0);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u);
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "20", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 20u);
	cr_assert_eq(cl__rseq_feature_cap(0), 0u);
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "64", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u, "never raises");
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u);
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "2x", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u);
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "-1", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u);
	setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", "99999999999999999999999", 1);
	cr_assert_eq(cl__rseq_feature_cap(28), 28u);
	if (copy)
		setenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX", copy, 1);
	else
		unsetenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX");
	free(copy);
}

/* Under the knob (make check-matrix, mode no-mm-cid) mm_cid is reported absent. */
Test(rseq, feature_size_knob_hides_mm_cid)
{
	const char *e = getenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX");

	if (!e || strcmp(e, "20") != 0)
		cr_skip_test("CL_TEST_RSEQ_FEATURE_SIZE_MAX=20 not set");
	cr_assert_eq(cl_rseq_mm_cid_available(), 0);
	if (cl_rseq_available()) {
		cr_assert_eq(cl_rseq_feature_size(), 20u);
		cr_assert_eq(cl_id_mode(), CL_ID_CPU_ID);
		int cpus[CPU_SETSIZE], n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);

		/* pinned, the fallback (cpu_id) is exact */
		cr_assert_eq(cl_test_pin(cpus[n - 1]), 0);
		cr_assert_eq(cl_mm_cid(), cpus[n - 1], "mm_cid falls back to cpu_id");
		restore_affinity(cpus, n);
	}
}

Test(rseq, mode_names)
{
	cr_assert_str_eq(cl_id_mode_name(CL_ID_MM_CID), "mm_cid");
	cr_assert_str_eq(cl_id_mode_name(CL_ID_CPU_ID), "cpu_id");
	cr_assert_str_eq(cl_id_mode_name(CL_ID_GETCPU), "sched_getcpu");
	cr_assert_str_eq(cl_id_mode_name(CL_ID_THREAD_HASH), "thread_hash");
	cr_assert_str_eq(cl_id_mode_name((enum cl_id_mode)42), "unknown");
}

Test(rseq, registration_states)
{
	struct cl_rseq_abi *a = cl_rseq_abi_get();
	int r;

	errno = 0;
	r = cl_rseq_register_current_thread();
	if (mode_is("default")) {
		cr_assert_eq(cl_rseq_owned_by_glibc(), 1, "glibc must own rseq by default");
		cr_assert_not_null(a);
		cr_assert_eq(r, 0);
		cr_assert_eq(cl_rseq_available(), 1);
		cr_assert_eq(cl_id_mode(), expected_rseq_mode(), "mode %s",
			     cl_id_mode_name(cl_id_mode()));
		/* never registered while glibc owns it */
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), 0ul);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed), 0ul);
	} else if (mode_is("glibc-off")) {
		cr_assert_eq(cl_rseq_owned_by_glibc(), 0);
		cr_assert_eq(a, &cl__rseq_area, "our own area must be registered");
		cr_assert_eq(r, 0);
		cr_assert_eq(cl_rseq_available(), 1);
		cr_assert_geq(CL_READ_ONCE(cl__rseq_counters.registered), 1ul);
		cr_assert_eq(cl_id_mode(), expected_rseq_mode(), "mode %s",
			     cl_id_mode_name(cl_id_mode()));
	} else if (mode_is("no-rseq")) {
		cr_assert_eq(cl_rseq_owned_by_glibc(), 0);
		cr_assert_null(a);
		cr_assert_eq(r, -1);
		cr_assert_eq(errno, ENOSYS);
		cr_assert_eq(cl_rseq_available(), 0);
		cr_assert_eq(cl_rseq_feature_size(), 0u);
		cr_assert_eq(cl_rseq_mm_cid_available(), 0);
		cr_assert_eq(cl_id_mode(), CL_ID_GETCPU);
		/* the failure is remembered in the thread's own area */
		cr_assert_eq((int32_t)cl__rseq_area.cpu_id, CL_RSEQ_CPU_ID_REGISTRATION_FAILED);
		cr_assert_geq(CL_READ_ONCE(cl__rseq_counters.failed), 1ul);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), 0ul);
	} else {
		cr_assert_fail("unknown CL_TEST_MODE %s", cl_test_mode());
	}
	if (a) {
		unsigned glibc = cl_rseq_owned_by_glibc() ? cl__glibc_rseq_size : 0;

		cr_assert_eq((uintptr_t)a % 32, 0u, "area must be 32-byte aligned");
		cr_assert_eq(cl_rseq_feature_size(), expected_feature_size(glibc));
		cr_assert_eq(cl_rseq_abi_get(), a, "stable within a thread");
	}
}

Test(rseq, abi_offsets_match_live_area)
{
	struct cl_rseq_abi *a = cl_rseq_abi_get();
	int possible = nr_possible_cpus();

	cr_assert_eq(CL_RSEQ_ABI_CPU_ID_OFFSET, offsetof(struct cl_rseq_abi, cpu_id));
	cr_assert_eq(CL_RSEQ_ABI_RSEQ_CS_OFFSET, offsetof(struct cl_rseq_abi, rseq_cs));
	cr_assert_eq(CL_RSEQ_ABI_MM_CID_OFFSET, offsetof(struct cl_rseq_abi, mm_cid));
	cr_assert_eq(sizeof(struct cl_rseq_abi), 32u);
	if (!a)
		return;
	/* read through the raw offsets, as asm does */
	{
		const char *base = (const char *)a;
		uint32_t cpu, cs_lo;
		uint64_t cs;

		memcpy(&cpu, base + CL_RSEQ_ABI_CPU_ID_OFFSET, sizeof(cpu));
		memcpy(&cs, base + CL_RSEQ_ABI_RSEQ_CS_OFFSET, sizeof(cs));
		cs_lo = (uint32_t)cs;
		cr_assert_lt((int)cpu, possible);
		cr_assert_eq(cs_lo, 0u, "no critical section active");
	}
	cr_assert_lt((int)a->cpu_id_start, possible);
}

Test(rseq, cpu_id_matches_sched_getcpu_when_pinned)
{
	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);

	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(cl_test_pin(cpus[i]), 0);
		cr_assert_eq(cl_cpu_id(), cpus[i], "cl_cpu_id on CPU %d", cpus[i]);
		cr_assert_eq(cl_cpu_id(), sched_getcpu());
		if (cl_rseq_available()) {
			struct cl_rseq_abi *a = cl_rseq_abi_get();

			cr_assert_eq((int)CL_READ_ONCE(a->cpu_id_start), cpus[i]);
		}
		if (cl_id_mode() != CL_ID_MM_CID)
			cr_assert_eq(cl_mm_cid(), cpus[i], "fallback mm_cid is the CPU");
	}
	restore_affinity(cpus, n);
}

Test(rseq, node_id)
{
	unsigned cpu = 0, node = 0;

	cr_assert_eq(syscall(SYS_getcpu, &cpu, &node, NULL), 0);
	cr_assert_geq(cl_node_id(), 0);
	cr_assert_eq(cl_node_id(), (int)node);
}

/* ---- mm_cid: bounded, unique among concurrently running threads ---- */

struct cid_arg {
	int cpu;
	int rounds;
	int *ids; /* [rounds] */
	atomic_int *arrive;
	int nthreads;
};

static void spin_barrier(atomic_int *ctr, int target)
{
	atomic_fetch_add(ctr, 1);
	while (atomic_load(ctr) < target)
		CL_CPU_RELAX();
}

static void *cid_thread(void *p)
{
	struct cid_arg *arg = p;

	if (arg->cpu >= 0 && cl_test_pin(arg->cpu) != 0)
		return (void *)1;
	for (int r = 0; r < arg->rounds; r++) {
		/* both threads are on their own CPU and running here */
		spin_barrier(arg->arrive, (2 * r + 1) * arg->nthreads);
		arg->ids[r] = cl_mm_cid();
		spin_barrier(arg->arrive, (2 * r + 2) * arg->nthreads);
	}
	return NULL;
}

Test(rseq, mm_cid_unique_among_running_threads)
{
	enum { ROUNDS = 200 };
	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);
	int possible = nr_possible_cpus();
	int ids[2][ROUNDS];
	struct cid_arg args[2];
	pthread_t th[2];
	atomic_int arrive = 0;

	if (n < 2)
		cr_skip_test("needs 2 allowed CPUs");
	if (cl_id_mode() == CL_ID_THREAD_HASH)
		cr_skip_test("thread_hash ids are not unique by design");
	for (int t = 0; t < 2; t++) {
		args[t] = (struct cid_arg){ .cpu = cpus[t], .rounds = ROUNDS, .ids = ids[t],
					    .arrive = &arrive, .nthreads = 2 };
		cr_assert_eq(pthread_create(&th[t], NULL, cid_thread, &args[t]), 0);
	}
	for (int t = 0; t < 2; t++) {
		void *ret;

		cr_assert_eq(pthread_join(th[t], &ret), 0);
		cr_assert_null(ret, "pinning failed");
	}
	for (int r = 0; r < ROUNDS; r++) {
		cr_assert_geq(ids[0][r], 0);
		cr_assert_lt(ids[0][r], possible);
		cr_assert_lt(ids[1][r], possible);
		cr_assert_neq(ids[0][r], ids[1][r], "round %d: both threads got id %d", r, ids[0][r]);
	}
}

static void *bound_thread(void *p)
{
	int *out = p;

	for (int i = 0; i < 1000; i++) {
		int c = cl_mm_cid();

		if (c > *out)
			*out = c;
		if (i % 100 == 0)
			sched_yield();
	}
	return NULL;
}

Test(rseq, mm_cid_below_possible_cpus_with_many_threads)
{
	enum { N = 16 };
	pthread_t th[N];
	int max[N] = { 0 };
	int possible = nr_possible_cpus();

	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, bound_thread, &max[i]), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		cr_assert_geq(max[i], 0);
		cr_assert_lt(max[i], possible, "thread %d saw id %d, %d possible CPUs", i, max[i],
			     possible);
	}
}

/* ---- threads started later register, and unregister at exit ---- */

static void *reg_thread(void *p)
{
	struct cl_rseq_abi **out = p;

	*out = cl_rseq_abi_get();
	(void)cl_cpu_id();
	(void)cl_mm_cid();
	return NULL;
}

Test(rseq, threads_register_and_unregister)
{
	enum { N = 8 };
	pthread_t th[N];
	struct cl_rseq_abi *areas[N];
	unsigned long reg0, unreg0, fail0;

	(void)cl_cpu_id(); /* main thread first */
	reg0 = CL_READ_ONCE(cl__rseq_counters.registered);
	unreg0 = CL_READ_ONCE(cl__rseq_counters.unregistered);
	fail0 = CL_READ_ONCE(cl__rseq_counters.failed);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, reg_thread, &areas[i]), 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_join(th[i], NULL), 0);
	if (mode_is("glibc-off")) {
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered) - reg0, (unsigned long)N);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.unregistered) - unreg0,
			     (unsigned long)N, "every thread must unregister at exit");
		for (int i = 0; i < N; i++)
			cr_assert_not_null(areas[i]);
	} else if (mode_is("no-rseq")) {
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), reg0);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed) - fail0, (unsigned long)N,
			     "each thread tries once");
		for (int i = 0; i < N; i++)
			cr_assert_null(areas[i]);
	} else {
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), reg0);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.unregistered), unreg0);
		for (int i = 0; i < N; i++)
			cr_assert_not_null(areas[i]);
	}
}

/* A failure is tried once per thread: later calls do not issue the syscall. */
static void *retry_thread(void *p)
{
	int *rc = p;

	rc[0] = cl_rseq_register_current_thread();
	rc[1] = cl_rseq_register_current_thread();
	rc[2] = errno;
	return NULL;
}

Test(rseq, failure_remembered_per_thread)
{
	int rc[3];
	pthread_t th;
	unsigned long fail0 = CL_READ_ONCE(cl__rseq_counters.failed);

	cr_assert_eq(pthread_create(&th, NULL, retry_thread, rc), 0);
	pthread_join(th, NULL);
	if (mode_is("no-rseq")) {
		cr_assert_eq(rc[0], -1);
		cr_assert_eq(rc[1], -1);
		cr_assert_eq(rc[2], ENOSYS);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed) - fail0, 1ul);
	} else {
		cr_assert_eq(rc[0], 0);
		cr_assert_eq(rc[1], 0);
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed), fail0);
	}
}

/* ---- fallback helpers ---- */

static void *hash_thread(void *p)
{
	int *out = p;

	out[0] = cl__thread_hash_id();
	out[1] = cl__thread_hash_id();
	return NULL;
}

Test(rseq, thread_hash_in_range_and_stable)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);

	for (int i = 0; i < 16; i++) {
		int h[2];
		pthread_t th;

		cr_assert_eq(pthread_create(&th, NULL, hash_thread, h), 0);
		pthread_join(th, NULL);
		cr_assert_geq(h[0], 0);
		cr_assert_lt(h[0], (int)conf);
		cr_assert_eq(h[0], h[1], "stable within a thread");
	}
}

/* ---- fork: the child inherits the registration of the forking thread ---- */

static int child_checks(void)
{
	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);
	int possible = nr_possible_cpus();

	if (n <= 0)
		return 10;
	if (mode_is("no-rseq") ? cl_rseq_available() != 0 : cl_rseq_available() != 1)
		return 11;
	for (int i = 0; i < n; i++) {
		if (cl_test_pin(cpus[i]) != 0)
			return 12;
		if (cl_cpu_id() != cpus[i] || cl_cpu_id() != sched_getcpu())
			return 13;
		if (cl_mm_cid() < 0 || cl_mm_cid() >= possible)
			return 14;
	}
	/* a thread started in the child registers as well */
	{
		pthread_t th;
		struct cl_rseq_abi *a = NULL;

		if (pthread_create(&th, NULL, reg_thread, &a) != 0)
			return 15;
		pthread_join(th, NULL);
		if (!mode_is("no-rseq") && !a)
			return 16;
	}
	return 0;
}

Test(rseq, fork_child_reads_valid_ids)
{
	pid_t pid;
	int status;

	(void)cl_cpu_id(); /* registered (or failed) before the fork */
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(child_checks());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child check %d failed", WEXITSTATUS(status));
}

/* ---- errno, signal handlers, late destructors, churn ---- */

static void *errno_thread(void *p)
{
	int *out = p;

	errno = 1234;
	(void)cl_rseq_abi_get();
	(void)cl_cpu_id();
	(void)cl_mm_cid();
	(void)cl_node_id();
	(void)cl_id_mode();
	(void)cl_rseq_feature_size();
	*out = errno;
	return NULL;
}

Test(rseq, getters_preserve_errno)
{
	int e = 0;
	pthread_t th;

	/* a fresh thread: the first calls take the registration path */
	cr_assert_eq(pthread_create(&th, NULL, errno_thread, &e), 0);
	pthread_join(th, NULL);
	cr_assert_eq(e, 1234);
}

static volatile sig_atomic_t sig_cpu = -100, sig_cid = -100;

static void on_usr1(int sig)
{
	(void)sig;
	sig_cpu = cl_cpu_id();
	sig_cid = cl_mm_cid();
}

Test(rseq, getters_in_signal_handler)
{
	struct sigaction sa, old;
	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);

	(void)cl_rseq_register_current_thread(); /* live before the handler runs */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	cr_assert_eq(sigaction(SIGUSR1, &sa, &old), 0);
	cr_assert_eq(cl_test_pin(cpus[n - 1]), 0);
	raise(SIGUSR1);
	cr_assert_eq(sig_cpu, cpus[n - 1]);
	cr_assert_geq(sig_cid, 0);
	cr_assert_lt(sig_cid, nr_possible_cpus());
	sigaction(SIGUSR1, &old, NULL);
	restore_affinity(cpus, n);
}

/*
 * A destructor that runs after ours must not register the area again, and
 * the getters' fast paths must stop reading it: after unregistering, the
 * kernel leaves mm_cid at 0, so a cached pointer to it would return 0 on
 * any CPU; the fallback is sched_getcpu(), here the CPU the thread is
 * pinned to.
 */
static pthread_key_t late_key;
static int late_cpu = -100, late_cid = -100, late_pin = -1;

static void late_destructor(void *arg)
{
	(void)arg;
	late_cpu = cl_cpu_id();
	late_cid = cl_mm_cid();
}

static void *late_thread(void *p)
{
	(void)p;
	if (late_pin >= 0)
		(void)cl_test_pin(late_pin);
	(void)cl_cpu_id(); /* registers first: our key has the lower index */
	(void)cl_mm_cid(); /* the fast path now reads this thread's live id */
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

Test(rseq, no_registration_after_thread_exit_destructor)
{
	pthread_t th;
	unsigned long reg0, unreg0;

	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);

	late_pin = cpus[n - 1]; /* the highest allowed CPU: not 0 when there are two */
	(void)cl_cpu_id(); /* creates cachelocal's key before late_key */
	cr_assert_eq(pthread_key_create(&late_key, late_destructor), 0);
	reg0 = CL_READ_ONCE(cl__rseq_counters.registered);
	unreg0 = CL_READ_ONCE(cl__rseq_counters.unregistered);
	cr_assert_eq(pthread_create(&th, NULL, late_thread, NULL), 0);
	pthread_join(th, NULL);
	cr_assert_geq(late_cpu, 0, "id from a late destructor");
	cr_assert_lt(late_cpu, nr_possible_cpus());
	cr_assert_geq(late_cid, 0, "mm_cid from a late destructor");
	cr_assert_lt(late_cid, nr_possible_cpus());
	if (mode_is("glibc-off") || mode_is("no-rseq")) {
		/* No live area in the destructor: both come from sched_getcpu(). */
		cr_assert_eq(late_cpu, late_pin);
		cr_assert_eq(late_cid, late_pin, "unregistered: sched_getcpu(), not the stale mm_cid");
	}
	if (mode_is("glibc-off")) {
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered) - reg0, 1ul,
			     "registered once, not again from the late destructor");
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.unregistered) - unreg0, 1ul);
	}
	pthread_key_delete(late_key);
}

static void *churn_thread(void *p)
{
	(void)p;
	return (void *)(intptr_t)(cl_mm_cid() >= 0 && cl_cpu_id() >= 0);
}

Test(rseq, thread_churn_balanced)
{
	enum { N = 300 };
	unsigned long reg0 = CL_READ_ONCE(cl__rseq_counters.registered);
	unsigned long unreg0 = CL_READ_ONCE(cl__rseq_counters.unregistered);

	for (int i = 0; i < N; i++) {
		pthread_t th;
		void *ok;

		cr_assert_eq(pthread_create(&th, NULL, churn_thread, NULL), 0);
		pthread_join(th, &ok);
		cr_assert_eq(ok, (void *)1);
	}
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered) - reg0,
		     CL_READ_ONCE(cl__rseq_counters.unregistered) - unreg0,
		     "every registration is undone at thread exit");
	if (mode_is("glibc-off"))
		cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered) - reg0, (unsigned long)N);
}

/* ---- many threads race on the process-wide initialisation ---- */

static atomic_int race_go;

static void *race_thread(void *p)
{
	int *out = p;

	while (!atomic_load(&race_go))
		CL_CPU_RELAX();
	out[0] = cl_mm_cid();
	out[1] = cl_rseq_abi_get() != NULL;
	return NULL;
}

Test(rseq, concurrent_first_use)
{
	enum { N = 16 };
	pthread_t th[N];
	int res[N][2];
	int possible = nr_possible_cpus();

	/* no cachelocal call in this thread before the race (fresh process under
	 * Criterion's default isolation) */
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, race_thread, res[i]), 0);
	atomic_store(&race_go, 1);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++) {
		cr_assert_geq(res[i][0], 0);
		cr_assert_lt(res[i][0], possible);
		cr_assert_eq(res[i][1], !mode_is("no-rseq"), "thread %d live", i);
	}
	if (mode_is("glibc-off"))
		cr_assert_geq(CL_READ_ONCE(cl__rseq_counters.registered), (unsigned long)N);
}

/* ---- somebody else registered this thread's rseq first ---- */

static struct cl_rseq_abi foreign_area[64];

static void *foreign_thread(void *p)
{
	int *out = p;
	/* a different 32-byte aligned area than ours, per thread */
	struct cl_rseq_abi *mine = &foreign_area[out[0]];

	mine->cpu_id = (uint32_t)-1;
	out[1] = (int)syscall(SYS_rseq, mine, 32, 0, CL_RSEQ_SIG);
	errno = 0;
	out[2] = cl_rseq_register_current_thread();
	out[3] = errno;
	out[4] = cl_cpu_id() == sched_getcpu();
	out[5] = (int)cl_id_mode();
	out[6] = cl_rseq_abi_get() == NULL;
	if (out[1] == 0)
		syscall(SYS_rseq, mine, 32, 1 /* unregister */, CL_RSEQ_SIG);
	return NULL;
}

Test(rseq, foreign_registration_falls_back)
{
	int out[7] = { 3 };
	pthread_t th;
	int cpus[CPU_SETSIZE];
	int n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);

	if (!mode_is("glibc-off"))
		cr_skip_test("only meaningful when nobody else owns rseq");
	(void)cl_cpu_id();
	cr_assert_eq(cl_test_pin(cpus[0]), 0); /* the thread inherits it: ids stable */
	cr_assert_eq(pthread_create(&th, NULL, foreign_thread, out), 0);
	pthread_join(th, NULL);
	restore_affinity(cpus, n);
	cr_assert_eq(out[1], 0, "the foreign registration itself");
	cr_assert_eq(out[2], -1);
	cr_assert_eq(out[3], EINVAL, "the kernel refuses a second, different area: %d", out[3]);
	cr_assert_eq(out[4], 1);
	cr_assert_eq(out[5], CL_ID_GETCPU);
	cr_assert_eq(out[6], 1);
}
