/* SPDX-License-Identifier: MIT */
/*
 * tests/interop/test_librseq_interop.c - cachelocal and librseq in one process.
 *
 * Built and run by `make check` only when scripts/librseq.sh finds librseq
 * (otherwise check-interop prints a SKIPPED line). scripts/run-tests.sh runs
 * it in every id mode; CL_TEST_MODE says which, and each test skips the
 * modes it is not about:
 *
 *  default    glibc registered rseq: both libraries use glibc's area (same
 *             address, same ids); neither registers.
 *  glibc-off  GLIBC_TUNABLES=glibc.pthread.rseq=0: librseq owns the areas
 *             (its own per-thread area). Whichever library registers first
 *             in a thread, there is one area and both use it: librseq first
 *             -> cachelocal finds it live and makes no syscall; cachelocal
 *             first -> cachelocal registers librseq's area through librseq's
 *             rseq_register_current_thread(), and librseq's getters and
 *             operations work in that thread with no call of their own.
 *  no-rseq    the rseq syscall fails (seccomp): both fall back, nothing aborts.
 *
 * "One area registered, and it is this one" is checked with the kernel
 * itself: registering an identical area (same address, length, signature)
 * again fails with EBUSY, a different one with EINVAL.
 *
 * The operations tests mix both libraries on the same per-CPU data (counter
 * slots and list heads indexed by cpu_id or mm_cid) from more threads than
 * CPUs, so sections of one library are preempted and migrated between
 * sections of the other; the counts must be exact.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cachelocal/percpu_ops.h>
#include <cachelocal/rseq.h>
#include <cachelocal/topology.h>
#include <rseq/rseq.h>

#include "cl_test.h"

/* ---- the cachelocal operations (their only call sites here) ---- */

static int cl_index(enum cl_rseq_index k)
{
	return cl_rseq_current_index(k);
}

static void cl_add(enum cl_rseq_index k, intptr_t *slots_v0, size_t stride, intptr_t n)
{
	int i;

	do
		i = cl_index(k);
	while (cl_rseq_add(k, (intptr_t *)((char *)slots_v0 + (size_t)i * stride), n, i) != 0);
}

/* Pop from the current index's list: the node, or NULL when that list is empty. */
static void *cl_pop(enum cl_rseq_index k, void **heads0, size_t stride)
{
	void *node;
	int i, r;

	do {
		i = cl_index(k);
		r = cl_rseq_pop(k, (void **)((char *)heads0 + (size_t)i * stride), 0, &node, i);
	} while (r == CL_RSEQ_ABORT);
	return r == CL_RSEQ_OK ? node : NULL;
}

static void cl_push(enum cl_rseq_index k, void **heads0, size_t stride, void *node)
{
	int i;

	do
		i = cl_index(k);
	while (cl_rseq_trypush(k, (void **)((char *)heads0 + (size_t)i * stride), 0, node, i) != 0);
}

/* ---- the librseq operations, as its param_test uses them ---- */

static int lr_index(enum rseq_percpu_mode m)
{
	return m == RSEQ_PERCPU_MM_CID ? (int)rseq_current_mm_cid() : (int)rseq_cpu_start();
}

static void lr_add(enum rseq_percpu_mode m, intptr_t *slots_v0, size_t stride, intptr_t n)
{
	int i;

	do
		i = lr_index(m);
	while (rseq_load_add_store__ptr(RSEQ_MO_RELAXED, m,
					(intptr_t *)((char *)slots_v0 + (size_t)i * stride), n, i) != 0);
}

static void *lr_pop(enum rseq_percpu_mode m, void **heads0, size_t stride)
{
	intptr_t node;
	int i, r;

	do {
		i = lr_index(m);
		r = rseq_load_cbeq_store_add_load_store__ptr(
			RSEQ_MO_RELAXED, m, (intptr_t *)((char *)heads0 + (size_t)i * stride),
			(intptr_t)NULL, 0, &node, i);
	} while (r < 0);
	return r == 0 ? (void *)node : NULL;
}

static void lr_push(enum rseq_percpu_mode m, void **heads0, size_t stride, void *node)
{
	for (;;) {
		int i = lr_index(m);
		void **head = (void **)((char *)heads0 + (size_t)i * stride);
		intptr_t expect = (intptr_t)__atomic_load_n(head, __ATOMIC_RELAXED);

		*(void **)node = (void *)expect;
		if (rseq_load_cbne_store__ptr(RSEQ_MO_RELAXED, m, (intptr_t *)(void *)head, expect,
					      (intptr_t)node, i) == 0)
			return;
	}
}

/* ---- helpers ---- */

static int mode_is(const char *m)
{
	return strcmp(cl_test_mode(), m) == 0;
}

/*
 * Ask the kernel which area this thread has registered: registering @area
 * again returns EBUSY when exactly that registration is in place, EINVAL
 * when another area is. Only call it when an area is expected (it would
 * register @area otherwise). librseq and glibc both register 32 bytes.
 */
static int kernel_registration_errno(void *area)
{
	long r = syscall(SYS_rseq, area, 32u, 0, (unsigned)RSEQ_SIG);

	return r == 0 ? 0 : errno;
}

static void require_rseq(void)
{
	if (mode_is("no-rseq"))
		cr_skip_test("rseq is off in this mode (see both_fall_back_without_rseq)");
}

static void pin_first_cpu(void)
{
	int cpu;

	cr_assert_eq(cl_test_allowed_cpus(&cpu, 1), 1);
	cr_assert_eq(cl_test_pin(cpu), 0);
}

/* Pinned, both libraries read the same ids (and agree with the kernel). */
static void check_ids_agree(void)
{
	pin_first_cpu();
	cr_assert_eq(cl_cpu_id(), (int)rseq_current_cpu_raw());
	cr_assert_eq(cl_cpu_id(), sched_getcpu());
	if (cl_id_mode() == CL_ID_MM_CID) {
		cr_assert(rseq_mm_cid_available(), "librseq must see mm_cid when cachelocal does");
		cr_assert_eq(cl_mm_cid(), (int)rseq_current_mm_cid());
	}
}

/* ---- (a) glibc owns rseq ---- */

Test(interop_glibc, both_use_glibcs_area_and_neither_registers)
{
	require_rseq();
	if (!mode_is("default"))
		cr_skip_test("glibc's registration is off in this mode");
	cr_assert(cl_rseq_owned_by_glibc());
	cr_assert(rseq_available(RSEQ_AVAILABLE_QUERY_LIBC), "librseq must defer to glibc");
	cr_assert_eq(rseq_register_current_thread(), 0);
	cr_assert_eq(cl_rseq_register_current_thread(), 0);
	cr_assert_eq((void *)cl_rseq_abi_get(), (void *)rseq_get_abi());
	cr_assert_eq(kernel_registration_errno(rseq_get_abi()), EBUSY,
		     "the thread's registered area must be the one both use");
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), 0ul);
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.delegated), 0ul);
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed), 0ul);
	check_ids_agree();
}

/* ---- (b) glibc's registration off: librseq's areas, either order ---- */

struct order_arg {
	int librseq_first;
	pthread_barrier_t *go; /* all threads of one test alive together */
	/* results, checked by the main thread */
	int reg_lr, reg_cl, same_area, kernel_errno, lr_raw, cl_cpu, lr_add_ok;
	unsigned long delegated_before, delegated_after;
};

static void *order_thread(void *p)
{
	struct order_arg *a = p;
	intptr_t word = 0;
	int cpu;

	pthread_barrier_wait(a->go);
	a->delegated_before = CL_READ_ONCE(cl__rseq_counters.delegated);
	if (a->librseq_first) {
		a->reg_lr = rseq_register_current_thread();
		a->reg_cl = cl_rseq_register_current_thread();
	} else {
		a->reg_cl = cl_rseq_register_current_thread();
		a->reg_lr = 0; /* librseq registers nothing here: it finds the area live */
	}
	a->same_area = (void *)cl_rseq_abi_get() == (void *)rseq_get_abi();
	a->kernel_errno = kernel_registration_errno(rseq_get_abi());
	a->lr_raw = rseq_current_cpu_raw();
	a->cl_cpu = cl_cpu_id();
	/* librseq's operation on this CPU's word commits with cachelocal's id
	 * (not tried when librseq's area is not live: it would abort forever). */
	if (a->lr_raw >= 0) {
		do
			cpu = cl_cpu_id();
		while (rseq_load_add_store__ptr(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID, &word, 1, cpu) !=
		       0);
	}
	a->lr_add_ok = word == 1;
	a->delegated_after = CL_READ_ONCE(cl__rseq_counters.delegated);
	pthread_barrier_wait(a->go);
	return NULL;
}

#define ORDER_THREADS 8

static void run_orders(int mixed)
{
	struct order_arg args[ORDER_THREADS];
	pthread_t th[ORDER_THREADS];
	pthread_barrier_t go;
	unsigned long fail0 = CL_READ_ONCE(cl__rseq_counters.failed);
	unsigned long reg0 = CL_READ_ONCE(cl__rseq_counters.registered);
	int cl_first = 0;

	require_rseq();
	if (!mode_is("glibc-off"))
		cr_skip_test("glibc owns rseq in this mode");
	cr_assert(!cl_rseq_owned_by_glibc());
	cr_assert(!rseq_available(RSEQ_AVAILABLE_QUERY_LIBC), "librseq must own the areas");
	pthread_barrier_init(&go, NULL, ORDER_THREADS);
	for (int i = 0; i < ORDER_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].librseq_first = mixed ? i % 2 : 1;
		args[i].go = &go;
		cl_first += !args[i].librseq_first;
		cr_assert_eq(pthread_create(&th[i], NULL, order_thread, &args[i]), 0);
	}
	for (int i = 0; i < ORDER_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&go);
	for (int i = 0; i < ORDER_THREADS; i++) {
		struct order_arg *a = &args[i];
		const char *o = a->librseq_first ? "librseq first" : "cachelocal first";

		cr_assert_eq(a->reg_lr, 0, "%s: librseq registration", o);
		cr_assert_eq(a->reg_cl, 0, "%s: cachelocal registration", o);
		cr_assert(a->same_area, "%s: both must use the thread's one area", o);
		cr_assert_eq(a->kernel_errno, EBUSY,
			     "%s: the kernel must hold exactly librseq's area (EBUSY), got %d", o,
			     a->kernel_errno);
		cr_assert_geq(a->lr_raw, 0, "%s: librseq's cpu_id must be live", o);
		cr_assert(a->lr_add_ok, "%s: librseq's add must commit", o);
		if (!a->librseq_first)
			cr_assert_geq(a->delegated_after, a->delegated_before + 1,
				      "cachelocal first: it registers through librseq");
	}
	/* cachelocal never made the syscall itself and nothing failed. */
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.registered), reg0);
	cr_assert_eq(CL_READ_ONCE(cl__rseq_counters.failed), fail0);
	cr_assert_geq(CL_READ_ONCE(cl__rseq_counters.delegated), (unsigned long)cl_first);
	/* librseq's bookkeeping is what its own registration leaves, and the
	 * feature size both libraries derive from it agrees. */
	cr_assert_geq(rseq_size, 20u);
	cr_assert_eq(cl_rseq_feature_size(), rseq_size < 32u ? rseq_size : 32u);
}

Test(interop_glibc_off, librseq_first_then_cachelocal_finds_its_area)
{
	run_orders(0);
}

Test(interop_glibc_off, cachelocal_first_registers_librseqs_area_both_orders_concurrently)
{
	run_orders(1);
}

Test(interop_glibc_off, ids_agree_when_cachelocal_registers_first)
{
	require_rseq();
	if (!mode_is("glibc-off"))
		cr_skip_test("glibc owns rseq in this mode");
	/* The test's own thread: cachelocal's first call registers. */
	cr_assert_eq(cl_rseq_register_current_thread(), 0);
	cr_assert_eq((void *)cl_rseq_abi_get(), (void *)rseq_get_abi());
	cr_assert(rseq_mm_cid_available() == (cl_rseq_feature_size() >= 28),
		  "librseq's feature size must be set by the delegated registration");
	check_ids_agree();
}

/* ---- both libraries' operations on the same per-CPU data ---- */

#define MIX_THREADS 4
#define MIX_ITERS 100000
#define NODES_PER_LIST 4

struct mix_slot {
	_Alignas(128) intptr_t v;
};

struct mix_head {
	_Alignas(128) void *head;
};

struct mix_node {
	struct mix_node *next;
	int seen;
};

struct mix_ctx {
	enum cl_rseq_index k;
	enum rseq_percpu_mode m;
	unsigned nr;
	struct mix_slot *slots;
	struct mix_head *heads;
	struct mix_node *nodes;
	pthread_barrier_t go;
	long empty; /* pops that found their list empty (cids moved nodes) */
};

static void *mix_thread(void *p)
{
	struct mix_ctx *x = p;
	long empty = 0;

	if (rseq_current_cpu_raw() < 0)
		(void)rseq_register_current_thread();
	pthread_barrier_wait(&x->go);
	for (int n = 0; n < MIX_ITERS; n++) {
		void *node;

		/* Adds: one from each library per iteration, same slots. */
		cl_add(x->k, &x->slots[0].v, sizeof(x->slots[0]), 1);
		lr_add(x->m, &x->slots[0].v, sizeof(x->slots[0]), 1);
		/* List: pop with one library, push back with the other. */
		node = n & 1 ? cl_pop(x->k, &x->heads[0].head, sizeof(x->heads[0]))
			     : lr_pop(x->m, &x->heads[0].head, sizeof(x->heads[0]));
		if (!node) {
			empty++;
			continue;
		}
		if (n & 1)
			lr_push(x->m, &x->heads[0].head, sizeof(x->heads[0]), node);
		else
			cl_push(x->k, &x->heads[0].head, sizeof(x->heads[0]), node);
	}
	__atomic_fetch_add(&x->empty, empty, __ATOMIC_RELAXED);
	return NULL;
}

static void run_mix(enum cl_rseq_index k, enum rseq_percpu_mode m)
{
	struct mix_ctx x;
	pthread_t th[MIX_THREADS];
	intptr_t sum = 0;
	unsigned long nodes = 0;

	require_rseq();
	if (rseq_current_cpu_raw() < 0)
		cr_assert_eq(rseq_register_current_thread(), 0);
	cr_assert_eq(cl_rseq_ops_mode_index(k), CL_RSEQ_OPS_RSEQ,
		     "cachelocal must use its critical sections when librseq can (%s)",
		     cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(k)));
	if (m == RSEQ_PERCPU_MM_CID)
		cr_assert(rseq_mm_cid_available());
	memset(&x, 0, sizeof(x));
	x.k = k;
	x.m = m;
	x.nr = cl_nr_possible_cpus();
	if ((unsigned)rseq_get_max_nr_cpus() > x.nr)
		x.nr = (unsigned)rseq_get_max_nr_cpus();
	x.slots = aligned_alloc(128, x.nr * sizeof(*x.slots));
	x.heads = aligned_alloc(128, x.nr * sizeof(*x.heads));
	x.nodes = calloc((size_t)x.nr * NODES_PER_LIST, sizeof(*x.nodes));
	cr_assert(x.slots && x.heads && x.nodes);
	memset(x.slots, 0, x.nr * sizeof(*x.slots));
	for (unsigned i = 0; i < x.nr; i++) {
		x.heads[i].head = NULL;
		for (int j = 0; j < NODES_PER_LIST; j++) {
			struct mix_node *nd = &x.nodes[i * NODES_PER_LIST + (unsigned)j];

			nd->next = x.heads[i].head;
			x.heads[i].head = nd;
		}
	}
	pthread_barrier_init(&x.go, NULL, MIX_THREADS);
	for (int i = 0; i < MIX_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, mix_thread, &x), 0);
	for (int i = 0; i < MIX_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&x.go);
	for (unsigned i = 0; i < x.nr; i++)
		sum += x.slots[i].v;
	cr_assert_eq(sum, (intptr_t)MIX_THREADS * MIX_ITERS * 2,
		     "adds from both libraries on the same slots must all land");
	for (unsigned i = 0; i < x.nr; i++)
		for (struct mix_node *nd = x.heads[i].head; nd; nd = nd->next) {
			cr_assert_eq(nd->seen, 0, "a node is on the lists twice");
			nd->seen = 1;
			nodes++;
		}
	cr_assert_eq(nodes, (unsigned long)x.nr * NODES_PER_LIST,
		     "pops and pushes across the libraries must keep every node");
	cr_log_info("%s: %ld pops found an empty list", m == RSEQ_PERCPU_MM_CID ? "mm_cid" : "cpu_id",
		    x.empty);
	free(x.slots);
	free(x.heads);
	free(x.nodes);
}

Test(interop_ops, both_libraries_on_the_same_cpu_id_data_counts_exact, .timeout = 120)
{
	run_mix(CL_RSEQ_INDEX_CPU_ID, RSEQ_PERCPU_CPU_ID);
}

Test(interop_ops, both_libraries_on_the_same_mm_cid_data_counts_exact, .timeout = 120)
{
	require_rseq();
	if (!cl_rseq_mm_cid_available())
		cr_skip_test("no mm_cid on this kernel");
	run_mix(CL_RSEQ_INDEX_MM_CID, RSEQ_PERCPU_MM_CID);
}

/* ---- no rseq at all ---- */

Test(interop_norseq, both_fall_back_without_rseq)
{
	if (!mode_is("no-rseq"))
		cr_skip_test("rseq works in this mode");
	cr_assert_eq(rseq_register_current_thread(), -1, "librseq cannot register");
	errno = 0;
	cr_assert_eq(cl_rseq_register_current_thread(), -1);
	cr_assert_eq(errno, ENOSYS);
	cr_assert(!cl_rseq_available());
	pin_first_cpu();
	cr_assert_eq(cl_cpu_id(), sched_getcpu(), "cachelocal falls back to sched_getcpu()");
	cr_assert_lt((int)rseq_current_cpu_raw(), 0, "librseq's area is not live");
}
