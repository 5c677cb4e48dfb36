/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/fence.h: the method each id mode gets, bad
 * arguments (EINVAL) and the methods that cannot fence (ENOSYS), a drain of
 * a per-CPU count by mark-and-fence while a pinned thread keeps adding to it
 * (nothing lost, nothing counted twice), the visit fallback on its own, the
 * all-threads fence as the slow side of a Dekker pairing, and both fences in
 * a fork() child. Also built with -DCL_PERCPU_FENCE_NO_MEMBARRIER (the
 * migrate fallback) and -DCL_NO_RSEQ_ASM (test_fence.variants).
 */
#include <cachelocal/fence.h>

#include <cachelocal/percpu.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

/* The method this build and id mode must get for cpu_id data. */
static int expected_cpu_id_method(void)
{
	if (strcmp(cl_test_mode(), "no-rseq") == 0 || cl_rseq_ops_mode() != CL_RSEQ_OPS_RSEQ)
		return CL_PERCPU_FENCE_ATOMIC;
#ifdef CL_PERCPU_FENCE_NO_MEMBARRIER
	return CL_PERCPU_FENCE_MIGRATE;
#else
	return CL_PERCPU_FENCE_MEMBARRIER; /* Linux >= 5.10 on the test machines */
#endif
}

Test(fence, method_per_mode)
{
	int m = cl_percpu_fence_method(CL_RSEQ_INDEX_CPU_ID);
	int mc = cl_percpu_fence_method(CL_RSEQ_INDEX_MM_CID);

	cr_log_info("mode %s: cpu_id fence %s, mm_cid fence %s", cl_test_mode(),
		    cl_percpu_fence_method_name(m), cl_percpu_fence_method_name(mc));
	cr_assert_eq(m, expected_cpu_id_method(), "cpu_id method %s", cl_percpu_fence_method_name(m));
	if (strcmp(cl_test_mode(), "no-rseq") == 0)
		cr_assert_eq(mc, CL_PERCPU_FENCE_ATOMIC);
	if (mc == CL_PERCPU_FENCE_MEMBARRIER || mc == CL_PERCPU_FENCE_NONE)
		cr_assert_eq(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID), CL_RSEQ_OPS_RSEQ);
	cr_assert_neq(mc, CL_PERCPU_FENCE_MIGRATE, "an mm_cid copy cannot be fenced by a visit");
	cr_assert_str_eq(cl_percpu_fence_method_name(CL_PERCPU_FENCE_NONE), "none");
	cr_assert_str_eq(cl_percpu_fence_method_name(99), "?");
}

Test(fence, bad_arguments)
{
	int n = (int)cl_nr_possible_cpus();

	errno = 0;
	cr_assert_eq(cl_percpu_fence_method((enum cl_rseq_index)5), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_fence((enum cl_rseq_index)5, 0), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, -2), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, n), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_fence_visit(-1), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_fence_visit(n), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(fence, every_method_answers_or_says_enosys)
{
	int m = cl_percpu_fence_method(CL_RSEQ_INDEX_CPU_ID);
	int mc = cl_percpu_fence_method(CL_RSEQ_INDEX_MM_CID);
	int cpu = cl_cpu_id();

	cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, cpu), 0, "errno %d", errno);
	errno = 0;
	if (m == CL_PERCPU_FENCE_MIGRATE) {
		cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, -1), -1, "no fence on every CPU");
		cr_assert_eq(errno, ENOSYS);
	} else {
		cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, -1), 0, "errno %d", errno);
	}
	errno = 0;
	if (mc == CL_PERCPU_FENCE_NONE) {
		cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_MM_CID, 0), -1);
		cr_assert_eq(errno, ENOSYS);
	} else {
		cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_MM_CID, 0), 0, "errno %d", errno);
	}
}

Test(fence, visit_runs_there_and_restores_affinity)
{
	int cpus[CPU_SETSIZE], n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);
	cpu_set_t before, after;

	cr_assert_gt(n, 0);
	cr_assert_eq(sched_getaffinity(0, sizeof(before), &before), 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(cl_percpu_fence_visit(cpus[i]), 0, "cpu %d: errno %d", cpus[i], errno);
	cr_assert_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	cr_assert(CPU_EQUAL(&before, &after), "affinity restored");
	/* Pinned elsewhere: the visit still runs there, and the pin is kept. */
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	cr_assert_eq(cl_percpu_fence_visit(cpus[n - 1]), 0, "errno %d", errno);
	cr_assert_eq(sched_getaffinity(0, sizeof(after), &after), 0);
	cr_assert_eq(CPU_COUNT(&after), 1);
	cr_assert(CPU_ISSET(cpus[0], &after));
	cr_assert_eq(sched_setaffinity(0, sizeof(before), &before), 0);
}

/* ---- drain a per-CPU count with mark-and-fence while its CPU adds ---- */

#define EPOCH ((intptr_t)1 << 62)
#define NR_TAKES 200

struct drain_ctx {
	intptr_t *count; /* CPU 0's copy */
	size_t stride;
	int cpu;
	atomic_int started, stop;
	long adds;   /* adds done */
	long failed; /* adds that returned another index than the pinned CPU */
};

static void *adder(void *arg)
{
	struct drain_ctx *x = arg;

	if (cl_test_pin(x->cpu) != 0)
		x->failed = -1;
	atomic_store(&x->started, 1);
	while (!atomic_load_explicit(&x->stop, memory_order_relaxed)) {
		if (cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, x->count, x->stride, 1) != x->cpu)
			x->failed++;
		__atomic_store_n(&x->adds, x->adds + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Take the adds counted in @w (one CPU's copy) and leave it counting in the
 * other epoch: the mark is the epoch bit, which an add never changes.
 */
static intptr_t take(intptr_t *w, int cpu, int *fences)
{
	intptr_t v = __atomic_load_n(w, __ATOMIC_RELAXED), epoch = (v & EPOCH) ^ EPOCH, mark = epoch;
	intptr_t taken;

	while (!__atomic_compare_exchange_n(w, &v, mark, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
	taken = v & (EPOCH - 1);
	for (;;) {
		intptr_t x;

		cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, cpu), 0, "errno %d", errno);
		(*fences)++;
		x = __atomic_load_n(w, __ATOMIC_ACQUIRE);
		if ((x & EPOCH) == epoch)
			return taken;
		/* A section that read v committed v + n before the fence: keep n. */
		v = x;
		if (__atomic_compare_exchange_n(w, &v, epoch | ((x & (EPOCH - 1)) - taken), 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue; /* fence again: a section may have read x */
	}
}

Test(fence, mark_and_fence_drain_loses_nothing)
{
	int cpus[CPU_SETSIZE], n = cl_test_allowed_cpus(cpus, CPU_SETSIZE);
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);
	struct drain_ctx x;
	pthread_t t;
	intptr_t total = 0;
	int fences = 0, takes;

	cr_assert_not_null(pool);
	if (cl_percpu_fence_method(CL_RSEQ_INDEX_CPU_ID) == CL_PERCPU_FENCE_ATOMIC)
		cr_log_info("atomic operations: the fence has nothing to abort");
	memset(&x, 0, sizeof(x));
	x.count = cl_percpu_alloc(pool, sizeof(intptr_t), sizeof(intptr_t));
	x.stride = cl_percpu_pool_stride(pool);
	x.cpu = cpus[n - 1];
	cr_assert_not_null(x.count);
	cr_assert_eq(pthread_create(&t, NULL, adder, &x), 0);
	while (!atomic_load(&x.started))
		sched_yield();
	/* Enough takes, with adds running between them. */
	for (takes = 0; takes < NR_TAKES || __atomic_load_n(&x.adds, __ATOMIC_RELAXED) < 100000; takes++)
		total += take(cl_percpu_ptr_stride(x.count, x.cpu, x.stride), x.cpu, &fences);
	atomic_store(&x.stop, 1);
	pthread_join(t, NULL);
	total += *cl_percpu_ptr_stride(x.count, x.cpu, x.stride) & (EPOCH - 1);
	cr_log_info("%d takes, %d fences, %ld adds", takes, fences, x.adds);
	cr_assert_eq(x.failed, 0, "every add counted on the pinned CPU");
	cr_assert_eq(total, x.adds, "taken + left = adds (%ld, %ld)", (long)total, x.adds);
	cl_percpu_free(pool, x.count);
	cl_percpu_pool_destroy(pool);
}

/* ---- the all-threads fence: slow side of a Dekker pairing ---- */

#define ROUNDS 5000

struct dekker {
	int x, y, r_fast;
	atomic_int ready, done;
};

/* Arrive at a two-party barrier for @round; yield now and then (the other
 * side may share the CPU). Both sides leave it at about the same time. */
static void meet(atomic_int *a, int round)
{
	atomic_fetch_add_explicit(a, 1, memory_order_acq_rel);
	for (unsigned spins = 0; atomic_load_explicit(a, memory_order_acquire) < 2 * round; spins++) {
		if (spins % 1024 == 1023)
			sched_yield();
		else
			CL_CPU_RELAX();
	}
}

static void *fast_side(void *arg)
{
	struct dekker *d = arg;

	for (int round = 1; round <= ROUNDS; round++) {
		meet(&d->ready, round);
		__atomic_store_n(&d->x, round, __ATOMIC_RELAXED);
		CL_BARRIER(); /* only a compiler barrier: the slow side pays */
		d->r_fast = __atomic_load_n(&d->y, __ATOMIC_RELAXED);
		meet(&d->done, round);
	}
	return NULL;
}

Test(fence, all_threads_fence_orders_a_dekker_pair)
{
	struct dekker d;
	pthread_t t;
	int both_missed = 0, r_slow;

	if (!cl_fence_all_threads_available()) {
		errno = 0;
		cr_assert_eq(cl_fence_all_threads(), -1);
		cr_assert_eq(errno, ENOSYS);
		cr_skip_test("membarrier PRIVATE_EXPEDITED unavailable here");
	}
	memset(&d, 0, sizeof(d));
	cr_assert_eq(pthread_create(&t, NULL, fast_side, &d), 0);
	for (int round = 1; round <= ROUNDS; round++) {
		meet(&d.ready, round);
		__atomic_store_n(&d.y, round, __ATOMIC_RELAXED);
		cr_assert_eq(cl_fence_all_threads(), 0);
		r_slow = __atomic_load_n(&d.x, __ATOMIC_RELAXED);
		meet(&d.done, round);
		if (d.r_fast != round && r_slow != round)
			both_missed++;
	}
	pthread_join(t, NULL);
	cr_assert_eq(both_missed, 0, "%d rounds where each side missed the other's store", both_missed);
}

/* ---- fork(): both fences work in the child (membarrier registered again) ---- */

Test(fence, fences_work_in_a_fork_child)
{
	int avail = cl_fence_all_threads_available(), status = 0;
	pid_t pid;

	int every = cl_percpu_fence_method(CL_RSEQ_INDEX_CPU_ID) == CL_PERCPU_FENCE_MIGRATE ? cl_cpu_id() : -1;

	cr_assert_eq(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, every), 0, "registered in the parent");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int cpu = cl_cpu_id();

		if (cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, cpu) != 0)
			_exit(10);
		if (avail && cl_fence_all_threads() != 0)
			_exit(11);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child: exit %d (10: percpu fence, 11: all threads)",
		     WEXITSTATUS(status));
}
