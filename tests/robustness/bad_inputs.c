/* SPDX-License-Identifier: MIT */
/*
 * tests/robustness/bad_inputs.c - every public function of layers L1-L5
 * called with its bad inputs: NULL objects and out-pointers, CPUs and
 * indexes out of range, zero and huge sizes, bad alignments, wrong states
 * (destroy while busy, double free, double close). Each result is checked
 * against the documented behaviour and printed as one row (rb.h); the rows
 * make the table of docs/robustness.md (scripts/robustness_report.py, which
 * also fails when a public function has no row).
 *
 * The rule for a NULL object pointer (README "Bad input"): it is a bad
 * argument like any other: the function returns its error value (-1, NULL,
 * 0 for a count or size) with errno EINVAL, a void function returns without
 * effect with errno EINVAL; destroy/free of NULL is a no-op, as free(NULL).
 * Misuse that cannot be detected cheaply (a lock call without the lock, a
 * brlock token not from read_lock) is undefined and asserted under CL_DEBUG:
 * CASE_DEBUG_ASSERT rows, run only in the CL_DEBUG build of this file.
 */
#include "rb.h"

#include <sched.h>
#include <stdint.h>
#include <urcu/urcu-memb.h>

#include <cachelocal/cachelocal.h>
#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/runtime.h>

CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

/*
 * NIL: a null pointer the compiler cannot see through, so it neither warns
 * about the inlined dereference nor drops the code that follows it.
 */
static void *volatile rb_nil;
#define NIL ((void *)rb_nil)

#define HUGE_SIZE ((size_t)1 << 62)

/* ---- L1: cacheline.h, spinlock.h ---- */
static void l1_cases(void)
{
	CASE("cl_cacheline_size_runtime", "(no argument: nothing can be bad)")
	{
		size_t n = cl_cacheline_size_runtime();
		RB_THEN(n == 0 || (n >= 16 && (n & (n - 1)) == 0), "0 or a power of two >= 16");
	}
	CASE("cl_cacheline_check", "msg NULL, msglen 0")
	{
		errno = 0;
		int r = cl_cacheline_check(NIL, 0);
		RB_THEN(r == 0 || (r == -1 && errno == ERANGE), "0, or -1 with ERANGE (no message written)");
	}
	CASE("cl_layout_print", "f NULL")
	{
		static const struct cl_layout lay = { "x", 8, 8, NULL, 0 };
		RB_INT(cl_layout_print(NIL, &lay), -1, EINVAL);
	}
	CASE("cl_layout_print", "layout NULL")
	{
		RB_INT(cl_layout_print(stdout, NIL), -1, EINVAL);
	}
	CASE("cl_layout_print", "entry outside the struct")
	{
		struct s { int a; };
		static const struct cl_layout_entry e[] = { { "a", 64, 4, CL_LAYOUT_KIND_FIELD } };
		const struct cl_layout lay = { "s", sizeof(struct s), 4, e, 1 };
		FILE *f = fopen("/dev/null", "w");
		RB_INT(cl_layout_print(f, &lay), -1, EINVAL);
	}
	CASE("cl_spin_init", "l NULL")
	{
		RB_VOID(cl_spin_init(NIL), EINVAL);
	}
	CASE("cl_spin_trylock", "l NULL")
	{
		RB_INT(cl_spin_trylock(NIL), 0, EINVAL);
	}
	CASE("cl_spin_trylock", "lock already held")
	{
		struct cl_spinlock l = CL_SPINLOCK_INIT;
		cl_spin_lock(&l);
		RB_INT(cl_spin_trylock(&l), 0, 0);
	}
	CASE("cl_spin_lock", "l NULL")
	{
		RB_VOID(cl_spin_lock(NIL), EINVAL);
	}
	CASE("cl_spin_unlock", "l NULL")
	{
		RB_VOID(cl_spin_unlock(NIL), EINVAL);
	}
	CASE("cl_spin_is_locked", "l NULL")
	{
		RB_INT(cl_spin_is_locked(NIL), 0, EINVAL);
	}
	CASE("cl_ticket_init", "l NULL")
	{
		RB_VOID(cl_ticket_init(NIL), EINVAL);
	}
	CASE("cl_ticket_trylock", "l NULL")
	{
		RB_INT(cl_ticket_trylock(NIL), 0, EINVAL);
	}
	CASE("cl_ticket_trylock", "lock already held")
	{
		struct cl_ticketlock l = CL_TICKETLOCK_INIT;
		cl_ticket_lock(&l);
		RB_INT(cl_ticket_trylock(&l), 0, 0);
		RB_THEN(cl_ticket_waiters(&l) == 1, "no ticket left behind");
	}
	CASE("cl_spin_lock_noslice", "l NULL")
	{
		RB_VOID(cl_spin_lock_noslice(NIL), EINVAL);
	}
	CASE("cl_spin_unlock_noslice", "l NULL")
	{
		RB_VOID(cl_spin_unlock_noslice(NIL), EINVAL);
	}
	CASE("cl_ticket_lock_noslice", "l NULL")
	{
		RB_VOID(cl_ticket_lock_noslice(NIL), EINVAL);
	}
	CASE("cl_ticket_unlock_noslice", "l NULL")
	{
		RB_INT(cl_ticket_unlock_noslice(NIL), -1, EINVAL);
	}
	CASE("cl_slice_begin", "(no argument) outside a lock, with the extension on or off")
	{
		RB_VOID(cl_slice_begin(), 0);
		RB_VOID(cl_slice_end(), 0);
	}
	CASE("cl_slice_end", "without a cl_slice_begin()")
	{
		RB_VOID(cl_slice_end(), 0);
		RB_THEN(cl_slice_ext_set_thread(0) == 0, "no section left open: the opt-out is allowed");
		(void)cl_slice_ext_set_thread(1);
	}
	CASE("cl_slice_ext_mode", "(no argument: nothing can be bad)")
	{
		RB_THEN(cl_slice_ext_mode_name(cl_slice_ext_mode())[0] == 'o', "a mode with a name");
	}
	CASE("cl_slice_ext_mode_name", "a value outside the enum (42)")
	{
		RB_STR(cl_slice_ext_mode_name((enum cl_slice_ext_mode)42), "unknown");
	}
	CASE("cl_slice_ext_set_thread", "on 2 (neither 0 nor 1)")
	{
		RB_INT(cl_slice_ext_set_thread(2), -1, EINVAL);
	}
	CASE("cl_slice_stats_thread", "out NULL")
	{
		RB_VOID(cl_slice_stats_thread(NIL), EINVAL);
	}
	CASE("cl_ticket_lock", "l NULL")
	{
		RB_VOID(cl_ticket_lock(NIL), EINVAL);
	}
	CASE("cl_ticket_unlock", "l NULL")
	{
		RB_INT(cl_ticket_unlock(NIL), -1, EINVAL);
	}
	CASE("cl_ticket_unlock", "lock not held")
	{
		struct cl_ticketlock l = CL_TICKETLOCK_INIT;
		RB_INT(cl_ticket_unlock(&l), -1, EINVAL);
		RB_THEN(cl_ticket_trylock(&l) == 1, "lock still usable");
	}
	CASE("cl_ticket_is_locked", "l NULL")
	{
		RB_INT(cl_ticket_is_locked(NIL), 0, EINVAL);
	}
	CASE("cl_ticket_waiters", "l NULL")
	{
		RB_INT(cl_ticket_waiters(NIL), 0, EINVAL);
	}
	CASE("cl_mcs_init", "l NULL")
	{
		RB_VOID(cl_mcs_init(NIL), EINVAL);
	}
	CASE("cl_mcs_trylock", "l NULL")
	{
		struct cl_mcs_node n;
		RB_INT(cl_mcs_trylock(NIL, &n), 0, EINVAL);
	}
	CASE("cl_mcs_trylock", "node NULL")
	{
		struct cl_mcslock l = CL_MCSLOCK_INIT;
		RB_INT(cl_mcs_trylock(&l, NIL), 0, EINVAL);
		RB_THEN(!cl_mcs_is_locked(&l), "lock still free");
	}
	CASE("cl_mcs_trylock", "lock already held")
	{
		struct cl_mcslock l = CL_MCSLOCK_INIT;
		struct cl_mcs_node a, b;
		cl_mcs_lock(&l, &a);
		RB_INT(cl_mcs_trylock(&l, &b), 0, 0);
	}
	CASE("cl_mcs_lock", "l NULL")
	{
		struct cl_mcs_node n;
		RB_VOID(cl_mcs_lock(NIL, &n), EINVAL);
	}
	CASE("cl_mcs_lock", "node NULL")
	{
		struct cl_mcslock l = CL_MCSLOCK_INIT;
		RB_VOID(cl_mcs_lock(&l, NIL), EINVAL);
		RB_THEN(!cl_mcs_is_locked(&l), "lock still free");
	}
	CASE("cl_mcs_unlock", "l NULL")
	{
		struct cl_mcs_node n;
		RB_INT(cl_mcs_unlock(NIL, &n), -1, EINVAL);
	}
	CASE("cl_mcs_unlock", "node NULL")
	{
		struct cl_mcslock l = CL_MCSLOCK_INIT;
		struct cl_mcs_node n;
		cl_mcs_lock(&l, &n);
		RB_INT(cl_mcs_unlock(&l, NIL), -1, EINVAL);
		RB_THEN(cl_mcs_is_locked(&l), "lock still held");
	}
	CASE("cl_mcs_unlock", "lock not held (second unlock of a node)")
	{
		struct cl_mcslock l = CL_MCSLOCK_INIT;
		struct cl_mcs_node n;
		cl_mcs_lock(&l, &n);
		cl_mcs_unlock(&l, &n);
		RB_INT(cl_mcs_unlock(&l, &n), -1, EINVAL);
		RB_THEN(cl_mcs_trylock(&l, &n) == 1, "lock still usable");
	}
	CASE("cl_mcs_is_locked", "l NULL")
	{
		RB_INT(cl_mcs_is_locked(NIL), 0, EINVAL);
	}
}

/* ---- L2: topology.h, rseq.h ---- */
static void l2_cases(void)
{
	CASE("cl_topology_load", "t NULL")
	{
		RB_INT(cl_topology_load(NIL, NIL), -1, EINVAL);
	}
	CASE("cl_topology_load", "sysfs_root does not exist")
	{
		struct cl_topology t;
		RB_INT(cl_topology_load(&t, "/nonexistent/sysfs"), 0, RB_ERRNO_ANY);
		RB_THEN(t.nr_cpu_ids >= 1 && t.fallback != 0, "fallback topology (>= 1 CPU, t.fallback set)");
		cl_topology_free(&t);
	}
	CASE("cl_topology_load", "malformed tree (tests/data/broken)")
	{
		struct cl_topology t;
		RB_INT(cl_topology_load(&t, CL_TEST_DATA_DIR "/broken"), 0, RB_ERRNO_ANY);
		RB_THEN(t.nr_cpu_ids >= 1, "a usable topology");
		cl_topology_free(&t);
	}
	CASE("cl_topology_free", "t NULL")
	{
		RB_VOID(cl_topology_free(NIL), 0);
	}
	CASE("cl_topology_free", "freed twice")
	{
		struct cl_topology t;
		cl_topology_load(&t, NIL);
		cl_topology_free(&t);
		RB_VOID(cl_topology_free(&t), RB_ERRNO_ANY);
	}
	CASE("cl_nr_possible_cpus", "(no argument: nothing can be bad)")
	{
		RB_THEN(cl_nr_possible_cpus() >= 1, ">= 1");
	}
	CASE("cl_rseq_abi_v2", "(no argument) in each id mode, rseq usable or not")
	{
		int v = cl_rseq_abi_v2();
		RB_THEN(v == 0 || v == 1 || (v == -1 && !cl_rseq_available()), "0 or 1, or -1 without rseq");
	}
	CASE("cl_rseq_abi_get", "(no argument) in each id mode, rseq usable or not")
	{
		errno = 0;
		struct cl_rseq_abi *a = cl_rseq_abi_get();
		RB_THEN(a != NIL || !cl_rseq_available(), "the area, or NULL when rseq is unusable");
		RB_THEN(errno == 0, "errno untouched");
	}
	CASE("cl_rseq_register_current_thread", "called twice")
	{
		int r1 = cl_rseq_register_current_thread();
		int r2 = cl_rseq_register_current_thread();
		RB_THEN(r1 == r2, "same result both times");
		RB_THEN(r2 == 0 || errno == ENOSYS || errno == EINVAL || errno == EBUSY,
			"0, or -1 with ENOSYS/EINVAL/EBUSY");
	}
	CASE("cl_rseq_available", "(no argument: nothing can be bad)")
	{
		int a = cl_rseq_available();
		RB_THEN(a == 0 || a == 1, "0 or 1");
	}
	CASE("cl_rseq_owned_by_glibc", "(no argument: nothing can be bad)")
	{
		int a = cl_rseq_owned_by_glibc();
		RB_THEN(a == 0 || a == 1, "0 or 1");
	}
	CASE("cl_rseq_feature_size", "(no argument: nothing can be bad)")
	{
		unsigned f = cl_rseq_feature_size();
		RB_THEN(f == 0 || f >= 20, "0 or >= 20");
	}
	CASE("cl_rseq_mm_cid_available", "(no argument: nothing can be bad)")
	{
		int a = cl_rseq_mm_cid_available();
		RB_THEN(a == 0 || a == 1, "0 or 1");
	}
	CASE("cl_cpu_id", "(no argument) in any id mode")
	{
		RB_THEN(cl_cpu_id() >= 0, ">= 0, never fails");
	}
	CASE("cl_mm_cid", "(no argument) in any id mode")
	{
		RB_THEN(cl_mm_cid() >= 0, ">= 0, never fails");
	}
	CASE("cl_node_id", "(no argument) in any id mode")
	{
		RB_THEN(cl_node_id() >= 0, ">= 0, never fails");
	}
	CASE("cl_id_mode", "(no argument) in any id mode")
	{
		enum cl_id_mode m = cl_id_mode();
		RB_THEN(strcmp(cl_id_mode_name(m), "unknown") != 0, "a known mode");
	}
	CASE("cl_id_mode_name", "value outside the enum (999)")
	{
		RB_STR(cl_id_mode_name((enum cl_id_mode)999), "unknown");
	}
	CASE("cl_id_mode_name", "negative value (-1)")
	{
		RB_STR(cl_id_mode_name((enum cl_id_mode)-1), "unknown");
	}
}

/* ---- L3: percpu.h, cid.h ---- */
static void l3_percpu_cases(void)
{
	CASE("cl_percpu_pool_create", "stride not a power of two")
	{
		struct cl_percpu_pool_attr a = { .stride = 65536 + 4096 };
		RB_NULL(cl_percpu_pool_create(&a), EINVAL);
	}
	CASE("cl_percpu_pool_create", "stride below the page size")
	{
		struct cl_percpu_pool_attr a = { .stride = 1024 };
		RB_NULL(cl_percpu_pool_create(&a), EINVAL);
	}
	CASE("cl_percpu_pool_create", "stride huge (2^62)")
	{
		struct cl_percpu_pool_attr a = { .stride = HUGE_SIZE };
		RB_NULL(cl_percpu_pool_create(&a), EINVAL);
	}
	CASE("cl_percpu_pool_create", "max_nr_cpus above CL_MAX_CPUS")
	{
		struct cl_percpu_pool_attr a = { .max_nr_cpus = CL_MAX_CPUS + 1 };
		RB_NULL(cl_percpu_pool_create(&a), EINVAL);
	}
	CASE("cl_percpu_pool_create", "unknown flags")
	{
		struct cl_percpu_pool_attr a = { .flags = 0x80000000u };
		RB_NULL(cl_percpu_pool_create(&a), EINVAL);
	}
	CASE("cl_percpu_pool_create_topo", "unknown flags, topo NULL")
	{
		struct cl_percpu_pool_attr a = { .flags = 0x80000000u };
		RB_NULL(cl_percpu_pool_create_topo(&a, NIL), EINVAL);
	}
	CASE("cl_percpu_pool_nr_cpus", "pool NULL")
	{
		RB_INT(cl_percpu_pool_nr_cpus(NIL), 0, EINVAL);
	}
	CASE("cl_percpu_pool_stride", "pool NULL")
	{
		RB_INT(cl_percpu_pool_stride(NIL), 0, EINVAL);
	}
	CASE("cl_percpu_pool_stats", "pool NULL")
	{
		struct cl_percpu_stats st;
		RB_INT(cl_percpu_pool_stats(NIL, &st), -1, EINVAL);
	}
	CASE("cl_percpu_pool_stats", "out NULL")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_INT(cl_percpu_pool_stats(p, NIL), -1, EINVAL);
	}
	CASE("cl_percpu_alloc", "pool NULL")
	{
		RB_NULL(cl_percpu_alloc(NIL, 8, 8), EINVAL);
	}
	CASE("cl_percpu_alloc", "size 0")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_NULL(cl_percpu_alloc(p, 0, 8), EINVAL);
	}
	CASE("cl_percpu_alloc", "size above the stride (2^62)")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_NULL(cl_percpu_alloc(p, HUGE_SIZE, 8), EINVAL);
	}
	CASE("cl_percpu_alloc", "align 0")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_NULL(cl_percpu_alloc(p, 8, 0), EINVAL);
	}
	CASE("cl_percpu_alloc", "align 24 (not a power of two)")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_NULL(cl_percpu_alloc(p, 8, 24), EINVAL);
	}
	CASE("cl_percpu_alloc", "align above the stride")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_NULL(cl_percpu_alloc(p, 8, (size_t)CL_PERCPU_STRIDE * 2), EINVAL);
	}
	CASE("cl_percpu_free", "pool NULL")
	{
		int x;
		RB_INT(cl_percpu_free(NIL, &x), -1, EINVAL);
	}
	CASE("cl_percpu_free", "p NULL")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_INT(cl_percpu_free(p, NIL), 0, 0); /* documented: NULL does nothing */
	}
	CASE("cl_percpu_free", "double free (robust pool)")
	{
		struct cl_percpu_pool_attr a = { .flags = CL_PERCPU_ROBUST };
		struct cl_percpu_pool *p = cl_percpu_pool_create(&a);
		void *o = cl_percpu_alloc(p, 64, 8);
		cl_percpu_free(p, o);
		(void)!freopen("/dev/null", "w", stderr); /* robust mode reports it */
		RB_INT(cl_percpu_free(p, o), -1, EINVAL);
	}
	CASE("cl_percpu_free", "double free (plain pool)")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		void *o = cl_percpu_alloc(p, 64, 8);
		cl_percpu_free(p, o);
		RB_INT(cl_percpu_free(p, o), -1, EINVAL);
	}
	CASE("cl_percpu_free", "interior pointer")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		char *o = cl_percpu_alloc(p, 64, 8);
		RB_INT(cl_percpu_free(p, o + 8), -1, EINVAL);
		RB_THEN(cl_percpu_free(p, o) == 0, "the object is still live and frees");
	}
	CASE("cl_percpu_free", "pointer from another pool")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		struct cl_percpu_pool *q = cl_percpu_pool_create(NIL);
		void *o = cl_percpu_alloc(q, 64, 8);
		RB_INT(cl_percpu_free(p, o), -1, EINVAL);
	}
	CASE("cl_percpu_free", "another CPU's copy")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		void *o = cl_percpu_alloc(p, 64, 8);
		if (cl_percpu_pool_nr_cpus(p) < 2)
			RB_THEN(1, "(one CPU: no other copy)");
		else
			RB_INT(cl_percpu_free(p, cl_percpu_ptr(o, 1)), -1, EINVAL);
	}
	CASE("cl_percpu_free", "heap pointer (malloc)")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		void *m = malloc(64);
		RB_INT(cl_percpu_free(p, m), -1, EINVAL);
	}
	CASE("cl_percpu_pool_report_leaks", "pool NULL")
	{
		RB_INT(cl_percpu_pool_report_leaks(NIL, stderr), 0, EINVAL);
	}
	CASE("cl_percpu_pool_report_leaks", "out NULL")
	{
		struct cl_percpu_pool *p = cl_percpu_pool_create(NIL);
		RB_INT(cl_percpu_pool_report_leaks(p, NIL), 0, RB_ERRNO_ANY);
	}
	CASE("cl_percpu_pool_destroy", "pool NULL")
	{
		RB_VOID(cl_percpu_pool_destroy(NIL), 0);
	}
}

static void l3_cid_cases(void)
{
	CASE("cl_cid_policy_name", "value outside the enum (7)")
	{
		RB_STR(cl_cid_policy_name((enum cl_cid_policy)7), "invalid");
	}
	CASE("cl_cid_domain_create", "policy outside the enum (7)")
	{
		RB_NULL(cl_cid_domain_create((enum cl_cid_policy)7, NIL), EINVAL);
	}
	CASE("cl_cid_domain_create", "negative policy (-1)")
	{
		RB_NULL(cl_cid_domain_create((enum cl_cid_policy)-1, NIL), EINVAL);
	}
	CASE("cl_cid_domain_destroy", "d NULL")
	{
		RB_VOID(cl_cid_domain_destroy(NIL), 0);
	}
	CASE("cl_cid_domain_join_cpus", "d NULL")
	{
		unsigned long m = 1;
		RB_INT(cl_cid_domain_join_cpus(NIL, &m, 1), -1, EINVAL);
	}
	CASE("cl_cid_domain_join_cpus", "mask NULL")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_INT(cl_cid_domain_join_cpus(d, NIL, 1), -1, EINVAL);
	}
	CASE("cl_cid_domain_join_cpus", "empty mask")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		unsigned long m = 0;
		RB_INT(cl_cid_domain_join_cpus(d, &m, 64), -1, EINVAL);
	}
	CASE("cl_cid_domain_join_cpus", "nbits 0")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		unsigned long m = 1;
		RB_INT(cl_cid_domain_join_cpus(d, &m, 0), -1, EINVAL);
	}
	CASE("cl_cid_domain_join", "d NULL")
	{
		RB_INT(cl_cid_domain_join(NIL), -1, EINVAL);
	}
	CASE("cl_cid_domain_leave", "d NULL")
	{
		RB_INT(cl_cid_domain_leave(NIL), -1, EINVAL);
	}
	CASE("cl_cid_domain_leave", "no users (leave without join)")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_INT(cl_cid_domain_leave(d), -1, EINVAL);
	}
	CASE("cl_cid_domain_refresh_allowed", "d NULL")
	{
		RB_INT(cl_cid_domain_refresh_allowed(NIL), -1, EINVAL);
	}
	CASE("cl_cid_domain_bound", "d NULL")
	{
		RB_INT(cl_cid_domain_bound(NIL), 0, EINVAL);
	}
	CASE("cl_cid_acquire_on", "d NULL")
	{
		RB_INT(cl_cid_acquire_on(NIL, 0), -1, EINVAL);
	}
	CASE("cl_cid_acquire_on", "cpu -1")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		cl_cid_domain_join(d);
		RB_INT(cl_cid_acquire_on(d, -1), -1, EINVAL);
	}
	CASE("cl_cid_acquire_on", "cpu INT_MAX")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		cl_cid_domain_join(d);
		RB_INT(cl_cid_acquire_on(d, 0x7fffffff), -1, EINVAL);
	}
	CASE("cl_cid_acquire", "d NULL")
	{
		RB_INT(cl_cid_acquire(NIL), -1, EINVAL);
	}
	CASE("cl_cid_acquire", "more holders than users (no join)")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_INT(cl_cid_acquire(d), -1, EBUSY);
	}
	CASE("cl_cid_release", "d NULL")
	{
		RB_VOID(cl_cid_release(NIL, 0), EINVAL);
	}
	CASE("cl_cid_release", "cid -1")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_VOID(cl_cid_release(d, -1), EINVAL);
	}
	CASE("cl_cid_release", "cid INT_MAX")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_VOID(cl_cid_release(d, 0x7fffffff), EINVAL);
	}
	CASE("cl_cid_release", "double release")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		cl_cid_domain_join(d);
		int c = cl_cid_acquire(d);
		cl_cid_release(d, c);
		RB_VOID(cl_cid_release(d, c), EINVAL);
	}
	CASE("cl_cid_domain_stats", "d NULL")
	{
		struct cl_cid_stats st;
		RB_INT(cl_cid_domain_stats(NIL, &st), -1, EINVAL);
	}
	CASE("cl_cid_domain_stats", "out NULL")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_INT(cl_cid_domain_stats(d, NIL), -1, EINVAL);
	}
}

/* ---- L4: percpu_ops.h ---- */
#define BADKIND ((enum cl_rseq_index)42)
static void l4_ops_cases(void)
{
	static intptr_t v[1];
	static void *head;
	void *out;

	CASE("cl_rseq_ops_mode_index", "kind outside the enum (42)")
	{
		enum cl_rseq_ops_mode m = cl_rseq_ops_mode_index(BADKIND);
		RB_THEN(strcmp(cl_rseq_ops_mode_name(m), "?") != 0, "a named mode (never a crash)");
	}
	CASE("cl_rseq_ops_mode", "(no argument: nothing can be bad)")
	{
		RB_THEN(strcmp(cl_rseq_ops_mode_name(cl_rseq_ops_mode()), "?") != 0, "a named mode");
	}
	CASE("cl_rseq_ops_mode_name", "value outside the enum (999)")
	{
		RB_STR(cl_rseq_ops_mode_name((enum cl_rseq_ops_mode)999), "?");
	}
	CASE("cl_rseq_current_index", "kind outside the enum (42)")
	{
		RB_THEN(cl_rseq_current_index(BADKIND) >= 0, "an index >= 0");
	}
	CASE("cl_rseq_add", "kind outside the enum (42)")
	{
		RB_INT(cl_rseq_add(BADKIND, v, 1, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpstore", "kind outside the enum (42)")
	{
		RB_INT(cl_rseq_cmpstore(BADKIND, v, 0, 1, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_pop_until", "kind outside the enum (42)")
	{
		RB_INT(cl_rseq_pop_until(BADKIND, &head, 0, NIL, &out, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_pop", "kind outside the enum (42)")
	{
		RB_INT(cl_rseq_pop(BADKIND, &head, 0, &out, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_trypush", "kind outside the enum (42)")
	{
		static void *node[1];
		RB_INT(cl_rseq_trypush(BADKIND, &head, 0, node, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpstore_store", "kind outside the enum (42)")
	{
		static intptr_t v2;
		RB_INT(cl_rseq_cmpstore_store(BADKIND, v, 0, &v2, 1, 1, CL_RSEQ_MO_RELAXED, 0), CL_RSEQ_ERROR,
		       EINVAL);
	}
	CASE("cl_rseq_cmpstore_store", "memory order outside the enum (9)")
	{
		static intptr_t v2;
		RB_INT(cl_rseq_cmpstore_store(CL_RSEQ_INDEX_CPU_ID, v, 0, &v2, 1, 1, (enum cl_rseq_mo)9, 0),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmp2_store", "kind outside the enum (42)")
	{
		static intptr_t v2;
		RB_INT(cl_rseq_cmp2_store(BADKIND, v, 0, &v2, 0, 1, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpmemcpy_store", "memory order outside the enum (9)")
	{
		static char dst[8], src[8];
		RB_INT(cl_rseq_cmpmemcpy_store(CL_RSEQ_INDEX_CPU_ID, v, 0, dst, src, 8, 1, (enum cl_rseq_mo)9, 0),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_deref_add", "kind outside the enum (42)")
	{
		static void *p = v;
		RB_INT(cl_rseq_deref_add(BADKIND, &p, 0, 1, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_add", "v NULL")
	{
		RB_INT(cl_rseq_add(CL_RSEQ_INDEX_CPU_ID, NIL, 1, cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_add", "v NULL, mm_cid kind")
	{
		RB_INT(cl_rseq_add(CL_RSEQ_INDEX_MM_CID, NIL, 1, cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpstore", "v NULL")
	{
		RB_INT(cl_rseq_cmpstore(CL_RSEQ_INDEX_CPU_ID, NIL, 0, 1, cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_pop_until", "head NULL")
	{
		RB_INT(cl_rseq_pop_until(CL_RSEQ_INDEX_CPU_ID, NIL, 0, NIL, &out, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_pop_until", "out NULL")
	{
		RB_INT(cl_rseq_pop_until(CL_RSEQ_INDEX_CPU_ID, &head, 0, NIL, NIL, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_pop", "head NULL")
	{
		RB_INT(cl_rseq_pop(CL_RSEQ_INDEX_CPU_ID, NIL, 0, &out, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_trypush", "head NULL")
	{
		static void *node[1];
		RB_INT(cl_rseq_trypush(CL_RSEQ_INDEX_CPU_ID, NIL, 0, node, 0), CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpstore_store", "v NULL")
	{
		static intptr_t v2;
		RB_INT(cl_rseq_cmpstore_store(CL_RSEQ_INDEX_CPU_ID, NIL, 0, &v2, 1, 1, CL_RSEQ_MO_RELAXED,
					      cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpstore_store", "v2 NULL (the second word)")
	{
		v[0] = 0;
		RB_INT(cl_rseq_cmpstore_store(CL_RSEQ_INDEX_CPU_ID, v, 0, NIL, 1, 1, CL_RSEQ_MO_RELAXED,
					      cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
		RB_THEN(v[0] == 0, "v unchanged");
	}
	CASE("cl_rseq_cmp2_store", "v2 NULL")
	{
		RB_INT(cl_rseq_cmp2_store(CL_RSEQ_INDEX_CPU_ID, v, 0, NIL, 0, 1,
					  cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpmemcpy_store", "dst NULL")
	{
		static char src[8];
		RB_INT(cl_rseq_cmpmemcpy_store(CL_RSEQ_INDEX_CPU_ID, v, 0, NIL, src, 8, 1, CL_RSEQ_MO_RELAXED,
					       cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_cmpmemcpy_store", "src NULL")
	{
		static char dst[8];
		RB_INT(cl_rseq_cmpmemcpy_store(CL_RSEQ_INDEX_CPU_ID, v, 0, dst, NIL, 8, 1, CL_RSEQ_MO_RELAXED,
					       cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_deref_add", "ptr NULL")
	{
		RB_INT(cl_rseq_deref_add(CL_RSEQ_INDEX_CPU_ID, NIL, 0, 1, cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID)),
		       CL_RSEQ_ERROR, EINVAL);
	}
	CASE("cl_rseq_list_first", "head NULL")
	{
		RB_NULL(cl_rseq_list_first(NIL), EINVAL);
	}
	CASE("cl_percpu_add", "p NULL")
	{
		RB_INT(cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, 1), -1, EINVAL);
	}
	CASE("cl_percpu_add", "stride 0")
	{
		RB_INT(cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, v, 0, 1), -1, EINVAL);
	}
	CASE("cl_percpu_add", "kind outside the enum (42)")
	{
		RB_INT(cl_percpu_add(BADKIND, v, CL_PERCPU_STRIDE, 1), -1, EINVAL);
	}
	CASE("cl_percpu_cmpstore", "p NULL")
	{
		RB_INT(cl_percpu_cmpstore(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, 0, 1), -1, EINVAL);
	}
	CASE("cl_percpu_cmpstore", "stride 0")
	{
		RB_INT(cl_percpu_cmpstore(CL_RSEQ_INDEX_CPU_ID, v, 0, 0, 1), -1, EINVAL);
	}
	CASE("cl_percpu_list_pop", "head NULL")
	{
		RB_INT(cl_percpu_list_pop(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, 0, &out), -1, EINVAL);
	}
	CASE("cl_percpu_list_pop", "out NULL")
	{
		RB_INT(cl_percpu_list_pop(CL_RSEQ_INDEX_CPU_ID, &head, CL_PERCPU_STRIDE, 0, NIL), -1, EINVAL);
	}
	CASE("cl_percpu_list_push", "head NULL")
	{
		static void *node[1];
		RB_INT(cl_percpu_list_push(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, 0, node), -1, EINVAL);
	}
	CASE("cl_percpu_list_push", "node NULL")
	{
		RB_INT(cl_percpu_list_push(CL_RSEQ_INDEX_CPU_ID, &head, CL_PERCPU_STRIDE, 0, NIL), -1, EINVAL);
	}
	CASE("cl_percpu_buf_push", "cap 0")
	{
		static void *items[1];
		RB_INT(cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, items, 0, items,
					  CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_buf_push", "count NULL")
	{
		static void *items[1];
		RB_INT(cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, items, 1, items,
					  CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_buf_pop", "out NULL")
	{
		static void *items[1];
		RB_INT(cl_percpu_buf_pop(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, items, NIL), -1, EINVAL);
	}
	CASE("cl_percpu_buf_push_copy", "buf NULL")
	{
		static char src[8];
		RB_INT(cl_percpu_buf_push_copy(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, NIL, 1, 8, src,
					       CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_buf_push_copy", "size 0")
	{
		static char src[8], buf[8];
		RB_INT(cl_percpu_buf_push_copy(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, buf, 1, 0, src,
					       CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_add", "p NULL, mm_cid kind")
	{
		RB_INT(cl_percpu_add(CL_RSEQ_INDEX_MM_CID, NIL, CL_PERCPU_STRIDE, 1), -1, EINVAL);
	}
	CASE("cl_percpu_buf_push", "items NULL")
	{
		static void *item[1];
		RB_INT(cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, NIL, 1, item,
					  CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_buf_pop", "count NULL")
	{
		static void *items[1];
		RB_INT(cl_percpu_buf_pop(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, items, &out), -1, EINVAL);
	}
	CASE("cl_percpu_buf_pop", "items NULL")
	{
		RB_INT(cl_percpu_buf_pop(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, NIL, &out), -1, EINVAL);
	}
	CASE("cl_percpu_buf_push_copy", "count NULL")
	{
		static char src[8], buf[8];
		RB_INT(cl_percpu_buf_push_copy(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, buf, 1, 8, src,
					       CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_buf_push_copy", "src NULL")
	{
		static char buf[8];
		RB_INT(cl_percpu_buf_push_copy(CL_RSEQ_INDEX_CPU_ID, v, CL_PERCPU_STRIDE, buf, 1, 8, NIL,
					       CL_RSEQ_MO_RELAXED),
		       -1, EINVAL);
	}
	CASE("cl_percpu_deref_add", "ptr NULL")
	{
		RB_INT(cl_percpu_deref_add(CL_RSEQ_INDEX_CPU_ID, NIL, CL_PERCPU_STRIDE, 0, 1), -1, EINVAL);
	}
}

/* Keep the calling thread on the CPU it runs on: the frees of a case land
 * in one CPU cache, the one its drain empties. Returns that CPU. */
static int rb_stay_here(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	if (cpu < 0)
		cpu = 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	return cpu;
}

/* ---- L4: counter.h, counter_cid.h, objcache.h, brlock.h ---- */
static void l4_struct_cases(void)
{
	CASE("cl_counter_pool", "(no argument: nothing can be bad)")
	{
		RB_NONNULL(cl_counter_pool());
	}
	CASE("cl_counter_init_index", "c NULL")
	{
		RB_INT(cl_counter_init_index(NIL, CL_RSEQ_INDEX_CPU_ID), -1, EINVAL);
	}
	CASE("cl_counter_init_index", "kind outside the enum (42)")
	{
		struct cl_counter c;
		RB_INT(cl_counter_init_index(&c, BADKIND), -1, EINVAL);
		RB_VOID(cl_counter_destroy(&c), RB_ERRNO_ANY);
	}
	CASE("cl_counter_init", "c NULL")
	{
		RB_INT(cl_counter_init(NIL), -1, EINVAL);
	}
	CASE("cl_counter_add", "c NULL")
	{
		RB_VOID(cl_counter_add(NIL, 1), EINVAL);
	}
	CASE("cl_counter_add", "zeroed counter, never initialised (its first add sets it up)")
	{
		struct cl_counter c;
		memset(&c, 0, sizeof(c));
		RB_VOID(cl_counter_add(&c, 1), 0);
		RB_INT(cl_counter_read(&c), 1, 0);
		cl_counter_destroy(&c);
	}
	CASE("cl_counter_read", "c NULL")
	{
		RB_INT(cl_counter_read(NIL), 0, EINVAL);
	}
	CASE("cl_counter_destroy", "c NULL")
	{
		RB_VOID(cl_counter_destroy(NIL), 0);
	}
	CASE("cl_counter_destroy", "destroyed twice")
	{
		struct cl_counter c;
		cl_counter_init(&c);
		cl_counter_destroy(&c);
		RB_VOID(cl_counter_destroy(&c), 0);
	}
	CASE("cl_counter_cid_init", "c NULL")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		RB_INT(cl_counter_cid_init(NIL, d, 0), -1, EINVAL);
	}
	CASE("cl_counter_cid_init", "d NULL")
	{
		struct cl_counter_cid c;
		RB_INT(cl_counter_cid_init(&c, NIL, 0), -1, EINVAL);
	}
	CASE("cl_counter_cid_add", "c NULL")
	{
		RB_VOID(cl_counter_cid_add(NIL, 0, 1), EINVAL);
	}
	CASE("cl_counter_cid_add", "cid -1")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		struct cl_counter_cid c;
		cl_counter_cid_init(&c, d, 0);
		RB_VOID(cl_counter_cid_add(&c, -1, 1), 0);
		RB_THEN(cl_counter_cid_read(&c) == 1, "added to the shared word (sum 1)");
	}
	CASE("cl_counter_cid_add", "cid INT_MAX")
	{
		struct cl_cid_domain *d = cl_cid_domain_create(CL_CID_RECENT, NIL);
		struct cl_counter_cid c;
		cl_counter_cid_init(&c, d, 0);
		RB_VOID(cl_counter_cid_add(&c, 0x7fffffff, 1), 0);
		RB_THEN(cl_counter_cid_read(&c) == 1, "added to the shared word (sum 1)");
	}
	CASE("cl_counter_cid_add_any", "c NULL")
	{
		RB_VOID(cl_counter_cid_add_any(NIL, 1), EINVAL);
	}
	CASE("cl_counter_cid_read", "c NULL")
	{
		RB_INT(cl_counter_cid_read(NIL), 0, EINVAL);
	}
	CASE("cl_counter_cid_destroy", "c NULL")
	{
		RB_VOID(cl_counter_cid_destroy(NIL), 0);
	}
	CASE("cl_objcache_create", "attr NULL")
	{
		RB_NULL(cl_objcache_create(NIL), EINVAL);
	}
	CASE("cl_objcache_create", "obj_size 0")
	{
		struct cl_objcache_attr a = { .obj_size = 0 };
		RB_NULL(cl_objcache_create(&a), EINVAL);
	}
	CASE("cl_objcache_create", "obj_size huge (2^62)")
	{
		struct cl_objcache_attr a = { .obj_size = HUGE_SIZE };
		RB_NULL(cl_objcache_create(&a), EINVAL);
	}
	CASE("cl_objcache_create", "align 24 (not a power of two)")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .align = 24 };
		RB_NULL(cl_objcache_create(&a), EINVAL);
	}
	CASE("cl_objcache_create", "per_cpu_capacity that does not fit the stride")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 0x7fffffffu };
		RB_NULL(cl_objcache_create(&a), EINVAL);
	}
	CASE("cl_objcache_create", "unknown index kind")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .index = (enum cl_rseq_index)7 };
		RB_NULL(cl_objcache_create(&a), EINVAL);
	}
	CASE("cl_objcache_destroy", "c NULL")
	{
		RB_INT(cl_objcache_destroy(NIL), 0, 0);
	}
	CASE("cl_objcache_destroy", "objects still handed out")
	{
		struct cl_objcache_attr a = { .obj_size = 64 };
		struct cl_objcache *c = cl_objcache_create(&a);
		void *o = cl_objcache_alloc(c);
		RB_INT(cl_objcache_destroy(c), -1, EBUSY);
		cl_objcache_free(c, o);
		RB_THEN(cl_objcache_destroy(c) == 0, "cache intact: destroy after the free succeeds");
	}
	CASE("cl_objcache_alloc", "c NULL")
	{
		RB_NULL(cl_objcache_alloc(NIL), EINVAL);
	}
	CASE("cl_objcache_free", "c NULL")
	{
		static long obj[8];
		RB_INT(cl_objcache_free(NIL, obj), -1, EINVAL);
	}
	CASE("cl_objcache_free", "obj NULL")
	{
		struct cl_objcache_attr a = { .obj_size = 64 };
		struct cl_objcache *c = cl_objcache_create(&a);
		RB_INT(cl_objcache_free(c, NIL), 0, 0);
		RB_THEN(cl_objcache_destroy(c) == 0, "nothing counted: destroy succeeds");
	}
	CASE("cl_objcache_free", "double free (second free spills the first to the depot)")
	{
		/* Capacity 2, full: the second free of b moves b to the depot first. */
		struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 2 };
		int cpu = rb_stay_here();
		struct cl_objcache *c = cl_objcache_create(&a);
		struct cl_objcache_stats st;
		void *x = cl_objcache_alloc(c), *b = cl_objcache_alloc(c);
		(void)cpu;
		cl_objcache_free(c, x);
		cl_objcache_free(c, b);
		RB_INT(cl_objcache_free(c, b), -1, EINVAL);
		cl_objcache_stats(c, &st);
		RB_THEN(st.nr_bad_frees == 1 && st.nr_depot + st.nr_cached == st.nr_objects,
			"counted in nr_bad_frees, every object once");
	}
	CASE("cl_objcache_free", "pointer not from the cache (malloc)")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 2 };
		int cpu = rb_stay_here();
		struct cl_objcache *c = cl_objcache_create(&a);
		struct cl_objcache_stats st;
		void *x = cl_objcache_alloc(c), *b = cl_objcache_alloc(c), *m = malloc(64);
		(void)cpu;
		cl_objcache_free(c, x);
		cl_objcache_free(c, b);
		RB_INT(cl_objcache_free(c, m), -1, EINVAL);
		cl_objcache_stats(c, &st);
		RB_THEN(st.nr_bad_frees == 1, "counted in nr_bad_frees");
	}
	CASE("cl_objcache_free", "pointer inside an object")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 2 };
		int cpu = rb_stay_here();
		struct cl_objcache *c = cl_objcache_create(&a);
		void *x = cl_objcache_alloc(c), *b = cl_objcache_alloc(c);
		(void)cpu;
		cl_objcache_free(c, x);
		cl_objcache_free(c, b);
		RB_INT(cl_objcache_free(c, (char *)b + 8), -1, EINVAL);
	}
	CASE("cl_objcache_drain_cpu", "double free in the CPU cache, then drain")
	{
		struct cl_objcache_attr a = { .obj_size = 64, .per_cpu_capacity = 8 };
		struct cl_objcache *c = cl_objcache_create(&a);
		struct cl_objcache_stats st;
		int cpu = rb_stay_here();
		void *x = cl_objcache_alloc(c);
		cl_objcache_free(c, x);
		cl_objcache_free(c, x); /* the fast path does not check */
		RB_INT(cl_objcache_drain_cpu(c, cpu) >= 0, 1, RB_ERRNO_ANY);
		cl_objcache_stats(c, &st);
		RB_THEN(st.nr_depot <= st.nr_objects && st.nr_bad_frees == 1,
			"second copy refused, nothing written past the depot");
	}
	CASE("cl_objcache_alloc", "4 MiB objects, first alloc")
	{
		struct cl_objcache_attr a = { .obj_size = (size_t)4 << 20 };
		struct cl_objcache *c = cl_objcache_create(&a);
		char buf[128];
		long vm, r0 = 0, r1 = 0;
		FILE *f = fopen("/proc/self/statm", "r");
		if (f && fgets(buf, sizeof(buf), f))
			sscanf(buf, "%ld %ld", &vm, &r0);
		RB_NONNULL(cl_objcache_alloc(c));
		if (f) {
			rewind(f);
			if (fgets(buf, sizeof(buf), f))
				sscanf(buf, "%ld %ld", &vm, &r1);
			fclose(f);
		}
		RB_THEN((r1 - r0) * sysconf(_SC_PAGESIZE) <= (long)(8 << 20),
			"at most 2 x object size resident");
	}
	CASE("cl_objcache_drain_cpu", "c NULL")
	{
		RB_INT(cl_objcache_drain_cpu(NIL, 0), -1, EINVAL);
	}
	CASE("cl_objcache_drain_cpu", "cpu -1")
	{
		struct cl_objcache_attr a = { .obj_size = 64 };
		struct cl_objcache *c = cl_objcache_create(&a);
		RB_INT(cl_objcache_drain_cpu(c, -1), -1, EINVAL);
	}
	CASE("cl_objcache_drain_cpu", "cpu INT_MAX")
	{
		struct cl_objcache_attr a = { .obj_size = 64 };
		struct cl_objcache *c = cl_objcache_create(&a);
		RB_INT(cl_objcache_drain_cpu(c, 0x7fffffff), -1, EINVAL);
	}
	CASE("cl_objcache_stats", "c NULL")
	{
		struct cl_objcache_stats st;
		RB_INT(cl_objcache_stats(NIL, &st), -1, EINVAL);
	}
	CASE("cl_objcache_stats", "st NULL")
	{
		struct cl_objcache_attr a = { .obj_size = 64 };
		struct cl_objcache *c = cl_objcache_create(&a);
		RB_INT(cl_objcache_stats(c, NIL), -1, EINVAL);
	}
	CASE("cl_brlock_init_pool", "l NULL")
	{
		RB_INT(cl_brlock_init_pool(NIL, NIL, CL_RSEQ_INDEX_CPU_ID), -1, EINVAL);
	}
	CASE("cl_brlock_init_pool", "idx outside the enum (42)")
	{
		struct cl_brlock l;
		RB_INT(cl_brlock_init_pool(&l, NIL, BADKIND), -1, EINVAL);
	}
	CASE("cl_brlock_init_pool", "pool with fewer copies than possible CPUs")
	{
		struct cl_brlock l;
		struct cl_percpu_pool_attr a = { .max_nr_cpus = 1 };
		struct cl_percpu_pool *p = cl_percpu_pool_create(&a);
		if (cl_nr_possible_cpus() < 2)
			RB_THEN(1, "(one possible CPU: cannot have fewer)");
		else
			RB_INT(cl_brlock_init_pool(&l, p, CL_RSEQ_INDEX_CPU_ID), -1, EINVAL);
	}
	CASE("cl_brlock_init", "l NULL")
	{
		RB_INT(cl_brlock_init(NIL), -1, EINVAL);
	}
	CASE("cl_brlock_destroy", "l NULL")
	{
		RB_VOID(cl_brlock_destroy(NIL), 0);
	}
	CASE("cl_brlock_mode", "l NULL")
	{
		RB_INT(cl_brlock_mode(NIL), 0, EINVAL);
	}
	CASE("cl_brlock_mode", "uninitialised (zeroed) lock")
	{
		struct cl_brlock l;
		memset(&l, 0, sizeof(l));
		RB_INT(cl_brlock_mode(&l), 0, EINVAL);
	}
	CASE("cl_brlock_read_lock", "l NULL")
	{
		RB_INT(cl_brlock_read_lock(NIL), -1, EINVAL);
	}
	CASE("cl_brlock_read_unlock", "l NULL")
	{
		RB_VOID(cl_brlock_read_unlock(NIL, 0), EINVAL);
	}
	CASE_DEBUG_ASSERT("cl_brlock_read_unlock", "token out of range (-5)")
	{
		struct cl_brlock l;
		cl_brlock_init(&l);
		RB_ABORTS(cl_brlock_read_unlock(&l, -5));
	}
	CASE("cl_brlock_read_lock", "uninitialised (zeroed) lock")
	{
		struct cl_brlock l;
		memset(&l, 0, sizeof(l));
		RB_INT(cl_brlock_read_lock(&l), -1, EINVAL);
	}
	CASE("cl_brlock_read_lock", "destroyed lock")
	{
		struct cl_brlock l;
		cl_brlock_init(&l);
		cl_brlock_destroy(&l);
		RB_INT(cl_brlock_read_lock(&l), -1, EINVAL);
	}
	CASE("cl_brlock_read_unlock", "uninitialised (zeroed) lock")
	{
		struct cl_brlock l;
		memset(&l, 0, sizeof(l));
		RB_VOID(cl_brlock_read_unlock(&l, 0), EINVAL);
	}
	CASE("cl_brlock_write_lock", "l NULL")
	{
		RB_INT(cl_brlock_write_lock(NIL), -1, EINVAL);
	}
	CASE("cl_brlock_write_lock", "uninitialised (zeroed) lock")
	{
		struct cl_brlock l;
		memset(&l, 0, sizeof(l));
		RB_INT(cl_brlock_write_lock(&l), -1, EINVAL);
	}
	CASE("cl_brlock_write_lock", "destroyed lock")
	{
		struct cl_brlock l;
		cl_brlock_init(&l);
		cl_brlock_destroy(&l);
		RB_INT(cl_brlock_write_lock(&l), -1, EINVAL);
	}
	CASE("cl_brlock_write_unlock", "l NULL")
	{
		RB_INT(cl_brlock_write_unlock(NIL), -1, EINVAL);
	}
	CASE("cl_brlock_write_unlock", "uninitialised (zeroed) lock")
	{
		struct cl_brlock l;
		memset(&l, 0, sizeof(l));
		RB_INT(cl_brlock_write_unlock(&l), -1, EINVAL);
	}
	CASE("cl_brlock_write_unlock", "no writer holds the lock")
	{
		struct cl_brlock l;
		cl_brlock_init(&l);
		RB_INT(cl_brlock_write_unlock(&l), -1, EPERM);
		RB_INT(cl_brlock_write_lock(&l), 0, RB_ERRNO_ANY);
		RB_INT(cl_brlock_write_unlock(&l), 0, RB_ERRNO_ANY);
	}
	CASE("cl_brlock_write_unlock", "unlocked twice")
	{
		struct cl_brlock l;
		cl_brlock_init(&l);
		cl_brlock_write_lock(&l);
		cl_brlock_write_unlock(&l);
		RB_INT(cl_brlock_write_unlock(&l), -1, EPERM);
	}
}

/* ---- L4: fence.h, atfork.h (the rare sides of a per-CPU structure) ---- */
static void l4_fence_cases(void)
{
	CASE("cl_percpu_fence_method", "kind outside the enum (42)")
	{
		RB_INT(cl_percpu_fence_method(BADKIND), -1, EINVAL);
	}
	CASE("cl_percpu_fence_method_name", "value outside the enum (999)")
	{
		RB_STR(cl_percpu_fence_method_name(999), "?");
	}
	CASE("cl_percpu_fence_method_name", "negative value (-1)")
	{
		RB_STR(cl_percpu_fence_method_name(-1), "?");
	}
	CASE("cl_percpu_fence", "kind outside the enum (42)")
	{
		RB_INT(cl_percpu_fence(BADKIND, 0), -1, EINVAL);
	}
	CASE("cl_percpu_fence", "index -2")
	{
		RB_INT(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, -2), -1, EINVAL);
	}
	CASE("cl_percpu_fence", "index INT_MAX")
	{
		RB_INT(cl_percpu_fence(CL_RSEQ_INDEX_CPU_ID, 0x7fffffff), -1, EINVAL);
	}
	CASE("cl_percpu_fence_visit", "cpu -1")
	{
		RB_INT(cl_percpu_fence_visit(-1), -1, EINVAL);
	}
	CASE("cl_percpu_fence_visit", "cpu INT_MAX")
	{
		RB_INT(cl_percpu_fence_visit(0x7fffffff), -1, EINVAL);
	}
	CASE("cl_fence_all_threads_available", "(no argument: nothing can be bad)")
	{
		int r = cl_fence_all_threads_available();
		RB_THEN(r == 0 || r == 1, "0 or 1");
	}
	CASE("cl_fence_all_threads", "(no argument: nothing can be bad)")
	{
		int avail = cl_fence_all_threads_available();
		errno = 0;
		int r = cl_fence_all_threads();
		RB_THEN(avail ? r == 0 : (r == -1 && errno == ENOSYS), "0, or -1 with ENOSYS when unavailable");
	}
	CASE("cl_atfork_register", "f NULL")
	{
		static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		RB_INT(cl_atfork_register(NIL, &m, NULL), -1, EINVAL);
	}
	CASE("cl_atfork_register", "lock and child both NULL")
	{
		static struct cl_atfork f;
		RB_INT(cl_atfork_register(&f, NIL, NULL), -1, EINVAL);
	}
	CASE("cl_atfork_register", "registered twice")
	{
		static struct cl_atfork f;
		static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		cl_atfork_register(&f, &m, NULL);
		RB_INT(cl_atfork_register(&f, &m, NULL), -1, EINVAL);
		RB_THEN(cl_atfork_unregister(&f) == 0, "still registered once (unregister works)");
	}
	CASE("cl_atfork_unregister", "f NULL")
	{
		RB_INT(cl_atfork_unregister(NIL), -1, EINVAL);
	}
	CASE("cl_atfork_unregister", "not registered")
	{
		static struct cl_atfork f;
		RB_INT(cl_atfork_unregister(&f), -1, EINVAL);
	}
}

/* ---- L5: sched/ (runqueue) ---- */
static struct cl_sched *sched2(void)
{
	urcu_memb_register_thread();
	return cl_sched_create(2, NIL);
}

static void l5_sched_cases(void)
{
	CASE("cl_sched_create", "nr_cpus 0")
	{
		RB_NULL(cl_sched_create(0, NIL), EINVAL);
	}
	CASE("cl_sched_create", "nr_cpus above CL_MAX_CPUS")
	{
		RB_NULL(cl_sched_create(CL_MAX_CPUS + 1, NIL), EINVAL);
	}
	CASE("cl_sched_create", "pool with fewer CPUs")
	{
		struct cl_percpu_pool_attr a = { .max_nr_cpus = 1 };
		RB_NULL(cl_sched_create(4, cl_percpu_pool_create(&a)), EINVAL);
	}
	CASE("cl_sched_destroy", "s NULL")
	{
		RB_INT(cl_sched_destroy(NIL), 0, 0);
	}
	CASE("cl_sched_destroy", "tasks queued")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_task_wake(s, &t, 0, 1);
		RB_INT(cl_sched_destroy(s), -1, EBUSY);
	}
	CASE("cl_sched_rq", "s NULL")
	{
		RB_NULL(cl_sched_rq(NIL, 0), EINVAL);
	}
	CASE("cl_sched_rq", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_NULL(cl_sched_rq(s, 2), EINVAL);
	}
	CASE("cl_sched_nr_cpus", "s NULL")
	{
		RB_INT(cl_sched_nr_cpus(NIL), 0, EINVAL);
	}
	CASE("cl_sched_root_group", "s NULL")
	{
		RB_NULL(cl_sched_root_group(NIL), EINVAL);
	}
	CASE("cl_rq_lock", "rq NULL")
	{
		RB_VOID(cl_rq_lock(NIL), EINVAL);
	}
	CASE("cl_rq_unlock", "rq NULL")
	{
		RB_VOID(cl_rq_unlock(NIL), EINVAL);
	}
	CASE_DEBUG_ASSERT("cl_rq_unlock", "rq not locked by the caller")
	{
		struct cl_sched *s = sched2();
		RB_ABORTS(cl_rq_unlock(cl_sched_rq(s, 0)));
	}
	CASE("cl_rq_lock_two", "a NULL")
	{
		struct cl_sched *s = sched2();
		RB_VOID(cl_rq_lock_two(NIL, cl_sched_rq(s, 0)), EINVAL);
	}
	CASE("cl_rq_unlock_two", "b NULL")
	{
		struct cl_sched *s = sched2();
		RB_VOID(cl_rq_unlock_two(cl_sched_rq(s, 0), NIL), EINVAL);
	}
	CASE("cl_rq_update_clock", "rq NULL")
	{
		RB_VOID(cl_rq_update_clock(NIL, 1), EINVAL);
	}
	CASE_DEBUG_ASSERT("cl_rq_update_clock", "rq not locked by the caller")
	{
		struct cl_sched *s = sched2();
		RB_ABORTS(cl_rq_update_clock(cl_sched_rq(s, 0), 1));
	}
	CASE("cl_task_init", "p NULL")
	{
		RB_VOID(cl_task_init(NIL, 0), EINVAL);
	}
	CASE("cl_task_init", "nice out of range (99)")
	{
		static struct cl_task t;
		RB_VOID(cl_task_init(&t, 99), RB_ERRNO_ANY);
		RB_THEN(t.se.load.weight == cl_nice_to_weight(19), "clamped to nice 19's weight");
	}
	CASE("cl_nice_to_weight", "nice -100 (below -20)")
	{
		RB_INT(cl_nice_to_weight(-100), cl_nice_to_weight(-20), RB_ERRNO_ANY);
	}
	CASE("cl_nice_to_weight", "nice 100 (above 19)")
	{
		RB_INT(cl_nice_to_weight(100), cl_nice_to_weight(19), RB_ERRNO_ANY);
	}
	CASE("cl_task_set_weight", "p NULL")
	{
		RB_INT(cl_task_set_weight(NIL, 1024), -1, EINVAL);
	}
	CASE("cl_task_set_weight", "weight 0")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_weight(&t, 0), -1, EINVAL);
	}
	CASE("cl_task_set_weight", "task queued")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_task_wake(s, &t, 0, 1);
		RB_INT(cl_task_set_weight(&t, 2048), -1, EBUSY);
	}
	CASE("cl_task_set_slice_ns", "p NULL")
	{
		RB_INT(cl_task_set_slice_ns(NIL, CL_SCHED_BASE_SLICE_NS), -1, EINVAL);
	}
	CASE("cl_task_set_slice_ns", "slice below 0.1 ms")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_slice_ns(&t, CL_SCHED_SLICE_MIN_NS - 1), -1, EINVAL);
	}
	CASE("cl_task_set_slice_ns", "slice above 100 ms")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_slice_ns(&t, CL_SCHED_SLICE_MAX_NS + 1), -1, EINVAL);
	}
	CASE("cl_task_set_group", "p NULL")
	{
		RB_INT(cl_task_set_group(NIL, NIL), -1, EINVAL);
	}
	CASE("cl_task_set_group", "destroyed group")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		cl_task_group_destroy(g);
		RB_INT(cl_task_set_group(&t, g), -1, EINVAL);
	}
	CASE("cl_task_set_affinity", "p NULL")
	{
		unsigned long m = 1;
		RB_INT(cl_task_set_affinity(NIL, &m, 1), -1, EINVAL);
	}
	CASE("cl_task_set_affinity", "nbits 0")
	{
		static struct cl_task t;
		unsigned long m = 1;
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_affinity(&t, &m, 0), -1, EINVAL);
	}
	CASE("cl_task_set_affinity", "nbits above CL_MAX_CPUS")
	{
		static struct cl_task t;
		static unsigned long m[CL_MAX_CPUS / 64 + 2] = { 1 };
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_affinity(&t, m, CL_MAX_CPUS + 1), -1, EINVAL);
	}
	CASE("cl_task_set_affinity", "empty mask")
	{
		static struct cl_task t;
		unsigned long m = 0;
		cl_task_init(&t, 0);
		RB_INT(cl_task_set_affinity(&t, &m, 64), -1, EINVAL);
	}
	CASE("cl_task_allowed_on", "p NULL")
	{
		RB_INT(cl_task_allowed_on(NIL, 0), 0, EINVAL);
	}
	CASE("cl_task_allowed_on", "cpu beyond the mask")
	{
		static struct cl_task t;
		static unsigned long m = 1;
		cl_task_init(&t, 0);
		cl_task_set_affinity(&t, &m, 1);
		RB_INT(cl_task_allowed_on(&t, 5000), 0, RB_ERRNO_ANY);
	}
	CASE("cl_task_rq_lock", "s NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_NULL(cl_task_rq_lock(NIL, &t), EINVAL);
	}
	CASE("cl_task_rq_lock", "p NULL")
	{
		struct cl_sched *s = sched2();
		RB_NULL(cl_task_rq_lock(s, NIL), EINVAL);
	}
	CASE("cl_task_rq_unlock", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_VOID(cl_task_rq_unlock(NIL, &t), EINVAL);
	}
	CASE("cl_task_wake", "s NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_task_wake(NIL, &t, 0, 1), -1, EINVAL);
	}
	CASE("cl_task_wake", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_task_wake(s, &t, 2, 1), -1, EINVAL);
	}
	CASE("cl_task_wake", "woken twice (already queued)")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_task_wake(s, &t, 0, 1);
		RB_INT(cl_task_wake(s, &t, 0, 2), -1, EINVAL);
	}
	CASE("cl_rq_enqueue", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_rq_enqueue(NIL, &t, 0), -1, EINVAL);
	}
	CASE("cl_rq_enqueue", "p NULL")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_enqueue(rq, NIL, 0), -1, EINVAL);
	}
	CASE("cl_rq_enqueue", "task already queued")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		cl_rq_enqueue(rq, &t, 0);
		RB_INT(cl_rq_enqueue(rq, &t, 0), -1, EINVAL);
	}
	CASE_DEBUG_ASSERT("cl_rq_enqueue", "rq not locked by the caller")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_ABORTS(cl_rq_enqueue(cl_sched_rq(s, 0), &t, 0));
	}
	CASE("cl_rq_dequeue", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_rq_dequeue(NIL, &t, 0), -1, EINVAL);
	}
	CASE("cl_rq_dequeue", "task not queued")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_dequeue(rq, &t, 0), -1, EINVAL);
	}
	CASE("cl_rq_dequeue", "task queued on another rq")
	{
		struct cl_sched *s = sched2();
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_task_wake(s, &t, 1, 1);
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_dequeue(rq, &t, 0), -1, EINVAL);
	}
	CASE("cl_rq_put_prev", "rq NULL")
	{
		RB_NULL(cl_rq_put_prev(NIL), EINVAL);
	}
	CASE("cl_rq_put_prev", "nothing running")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_NULL(cl_rq_put_prev(rq), 0);
	}
	CASE("cl_rq_pick_next", "rq NULL")
	{
		RB_NULL(cl_rq_pick_next(NIL), EINVAL);
	}
	CASE("cl_rq_pick_next", "empty rq")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_NULL(cl_rq_pick_next(rq), 0);
	}
	CASE_DEBUG_ASSERT("cl_rq_pick_next", "rq not locked by the caller")
	{
		struct cl_sched *s = sched2();
		RB_ABORTS(cl_rq_pick_next(cl_sched_rq(s, 0)));
	}
	CASE("cl_rq_set_curr", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_rq_set_curr(NIL, &t), -1, EINVAL);
	}
	CASE("cl_rq_set_curr", "task NULL")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_set_curr(rq, NIL), -1, EINVAL);
	}
	CASE("cl_rq_set_curr", "task not queued")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_set_curr(rq, &t), -1, EINVAL);
	}
	CASE("cl_rq_yield", "rq NULL")
	{
		RB_INT(cl_rq_yield(NIL), -1, EINVAL);
	}
	CASE("cl_rq_dequeue", "task of another instance, same CPU")
	{
		struct cl_sched *s = sched2(), *o = cl_sched_create(2, NIL);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_task_wake(o, &t, 0, 1);
		cl_rq_lock(cl_sched_rq(s, 0));
		RB_INT(cl_rq_dequeue(cl_sched_rq(s, 0), &t, CL_DEQUEUE_SLEEP), -1, EINVAL);
	}
	CASE("cl_rq_tick", "rq NULL")
	{
		RB_INT(cl_rq_tick(NIL, 1), 0, EINVAL);
	}
	CASE("cl_rq_tick", "time going backwards")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		cl_rq_tick(rq, 1000000);
		RB_INT(cl_rq_tick(rq, 5), 0, 0);
		const char *why = NIL;
		RB_THEN(cl_rq_validate(rq, &why) == 0, "rq still valid");
	}
	CASE("cl_rq_check_preempt_wakeup", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_rq_check_preempt_wakeup(NIL, &t), -1, EINVAL);
	}
	CASE("cl_rq_check_preempt_wakeup", "task not queued")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_check_preempt_wakeup(rq, &t), -1, EINVAL);
	}
	CASE("cl_rq_set_next_buddy", "rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_rq_set_next_buddy(NIL, &t), -1, EINVAL);
	}
	CASE("cl_rq_set_next_buddy", "task NULL")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_set_next_buddy(rq, NIL), -1, EINVAL);
	}
	CASE("cl_rq_set_next_buddy", "task not queued")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_set_next_buddy(rq, &t), -1, EINVAL);
		const char *why = NIL;
		RB_THEN(cl_rq_validate(rq, &why) == 0, "rq still valid");
	}
	CASE("cl_rq_set_next_buddy", "the running task")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		static struct cl_task t;
		cl_task_init(&t, 0);
		cl_rq_lock(rq);
		cl_rq_enqueue(rq, &t, 0);
		cl_rq_pick_next(rq);
		RB_INT(cl_rq_set_next_buddy(rq, &t), -1, EINVAL);
		const char *why = NIL;
		RB_THEN(cl_rq_validate(rq, &why) == 0 && rq->curr == &t, "rq still valid, the task still running");
	}
	CASE("cl_rq_bandwidth_update", "rq NULL")
	{
		RB_INT(cl_rq_bandwidth_update(NIL), 0, EINVAL);
	}
	CASE("cl_rq_validate", "rq NULL")
	{
		const char *why = NIL;
		RB_INT(cl_rq_validate(NIL, &why), -1, RB_ERRNO_ANY);
	}
	CASE("cl_rq_validate", "why NULL")
	{
		struct cl_sched *s = sched2();
		struct cl_rq *rq = cl_sched_rq(s, 0);
		cl_rq_lock(rq);
		RB_INT(cl_rq_validate(rq, NIL), 0, 0);
	}
	CASE("cl_rq_online", "rq NULL")
	{
		RB_INT(cl_rq_online(NIL), 0, EINVAL);
	}
	CASE("cl_task_of", "se NULL")
	{
		RB_NULL(cl_task_of(NIL), EINVAL);
	}
	CASE("cl_task_of", "a group entity")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		RB_NULL(cl_task_of(cl_tg_se(g, 0)), EINVAL);
	}
	CASE("cl_entity_is_task", "se NULL")
	{
		RB_INT(cl_entity_is_task(NIL), 0, EINVAL);
	}
	CASE("cl_cfs_rq_init", "cfs_rq NULL")
	{
		RB_VOID(cl_cfs_rq_init(NIL, NIL, NIL, 0), EINVAL);
	}
	CASE("cl_sched_entity_init", "se NULL")
	{
		RB_VOID(cl_sched_entity_init(NIL, 1024), EINVAL);
	}
	CASE("cl_sched_slice", "cfs_rq NULL")
	{
		static struct cl_task t;
		cl_task_init(&t, 0);
		RB_INT(cl_sched_slice(NIL, &t.se), 0, EINVAL);
	}
	CASE("cl_sched_rcu_read_lock", "(no argument) thread registered with urcu-memb")
	{
		urcu_memb_register_thread();
		RB_VOID((cl_sched_rcu_read_lock(), cl_sched_rcu_read_unlock()), 0);
	}
	CASE_DEBUG_ASSERT("cl_sched_rcu_read_lock", "thread not registered with urcu-memb")
	{
		RB_ABORTS(cl_sched_rcu_read_lock());
	}
	CASE_DEBUG_ASSERT("cl_sched_rcu_read_unlock", "thread not registered with urcu-memb")
	{
		RB_ABORTS(cl_sched_rcu_read_unlock());
	}
	CASE("cl_tg_cfs_rq", "tg NULL")
	{
		RB_NULL(cl_tg_cfs_rq(NIL, 0), EINVAL);
	}
	CASE("cl_tg_cfs_rq", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_NULL(cl_tg_cfs_rq(cl_sched_root_group(s), 2), EINVAL);
	}
	CASE("cl_tg_se", "tg NULL")
	{
		RB_NULL(cl_tg_se(NIL, 0), EINVAL);
	}
	CASE("cl_tg_se", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		RB_NULL(cl_tg_se(g, 2), EINVAL);
	}
	CASE("cl_cfs_rq_se", "cfs_rq NULL")
	{
		RB_NULL(cl_cfs_rq_se(NIL), EINVAL);
	}
	CASE("cl_task_group_create", "parent NULL")
	{
		RB_NULL(cl_task_group_create(NIL, 1024), EINVAL);
	}
	CASE("cl_task_group_create", "parent destroyed")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		cl_task_group_destroy(g);
		RB_NULL(cl_task_group_create(g, 1024), EINVAL);
	}
	CASE("cl_task_group_create", "nesting deeper than CL_TG_MAX_DEPTH")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_sched_root_group(s);
		for (int i = 0; i < CL_TG_MAX_DEPTH && g; i++)
			g = cl_task_group_create(g, 1024);
		RB_NULL(g ? cl_task_group_create(g, 1024) : NIL, EINVAL);
	}
	CASE("cl_task_group_set_shares", "tg NULL")
	{
		RB_INT(cl_task_group_set_shares(NIL, 1024), -1, EINVAL);
	}
	CASE("cl_task_group_set_shares", "the root group")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_task_group_set_shares(cl_sched_root_group(s), 2048), -1, EINVAL);
	}
	CASE("cl_task_group_destroy", "tg NULL")
	{
		RB_INT(cl_task_group_destroy(NIL), -1, EINVAL);
	}
	CASE("cl_task_group_destroy", "the root group")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_task_group_destroy(cl_sched_root_group(s)), -1, EINVAL);
	}
	CASE("cl_task_group_destroy", "destroyed twice")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		cl_task_group_destroy(g);
		RB_INT(cl_task_group_destroy(g), -1, EINVAL);
	}
	CASE("cl_task_group_destroy", "a child still alive")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		cl_task_group_create(g, 1024);
		RB_INT(cl_task_group_destroy(g), -1, EBUSY);
	}
	CASE("cl_tg_update_blocked_load", "root NULL")
	{
		RB_INT(cl_tg_update_blocked_load(NIL, 0, 1), 0, EINVAL);
	}
	CASE("cl_tg_update_blocked_load", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_tg_update_blocked_load(cl_sched_root_group(s), 2, 1), 0, EINVAL);
	}
	CASE("cl_cfs_rq_throttled_hierarchy", "cfs_rq NULL")
	{
		RB_INT(cl_cfs_rq_throttled_hierarchy(NIL), 0, EINVAL);
	}
	CASE("cl_tg_bandwidth_refill", "tg NULL")
	{
		RB_INT(cl_tg_bandwidth_refill(NIL, 1), 0, EINVAL);
	}
	CASE("cl_sched_bandwidth_refill", "root NULL")
	{
		RB_INT(cl_sched_bandwidth_refill(NIL, 1), 0, EINVAL);
	}
	CASE("cl_tg_set_bandwidth", "tg NULL")
	{
		RB_INT(cl_tg_set_bandwidth(NIL, 1000000, 10000000), -1, EINVAL);
	}
	CASE("cl_tg_set_bandwidth", "the root group")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_tg_set_bandwidth(cl_sched_root_group(s), 1000000, 10000000), -1, EINVAL);
	}
	CASE("cl_tg_set_bandwidth", "period 1 ns (below 1 ms)")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		RB_INT(cl_tg_set_bandwidth(g, 1000000, 1), -1, EINVAL);
	}
	CASE("cl_tg_set_bandwidth", "quota 5 ns (below 1 ms: a unit mistake)")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		RB_INT(cl_tg_set_bandwidth(g, 5, 0), -1, EINVAL);
	}
	CASE("cl_tg_set_bandwidth", "quota and period huge (UINT64_MAX - 1)")
	{
		struct cl_sched *s = sched2();
		struct cl_task_group *g = cl_task_group_create(cl_sched_root_group(s), 1024);
		RB_INT(cl_tg_set_bandwidth(g, UINT64_MAX - 1, UINT64_MAX - 1), -1, EINVAL);
	}
	CASE("cl_balance_set_migration_cost", "s NULL")
	{
		RB_VOID(cl_balance_set_migration_cost(NIL, 1), EINVAL);
	}
	CASE("cl_balance_set_nr_migrate", "s NULL")
	{
		RB_VOID(cl_balance_set_nr_migrate(NIL, 1), EINVAL);
	}
	CASE("cl_balance_set_topology", "s NULL")
	{
		struct cl_topology t;
		memset(&t, 0, sizeof(t));
		RB_INT(cl_balance_set_topology(NIL, &t), -1, EINVAL);
	}
	CASE("cl_balance_set_topology", "topology without the rqs' CPUs")
	{
		struct cl_sched *s = sched2();
		struct cl_topology t;
		memset(&t, 0, sizeof(t));
		RB_INT(cl_balance_set_topology(s, &t), -1, EINVAL);
	}
	CASE("cl_balance_set_topology_cpus", "cpu_ids NULL")
	{
		struct cl_sched *s = sched2();
		struct cl_topology t;
		memset(&t, 0, sizeof(t));
		RB_INT(cl_balance_set_topology_cpus(s, &t, NIL), -1, EINVAL);
	}
	CASE("cl_balance_set_topology_cpus", "negative CPU id")
	{
		struct cl_sched *s = sched2();
		struct cl_topology t;
		int ids[2] = { -1, 0 };
		memset(&t, 0, sizeof(t));
		RB_INT(cl_balance_set_topology_cpus(s, &t, ids), -1, EINVAL);
	}
	CASE("cl_balance_set_imbalance_pct", "pct below 100")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_set_imbalance_pct(s, 99, 0), -1, EINVAL);
	}
	CASE("cl_balance_set_numa_imbalance_nr", "s NULL")
	{
		RB_INT(cl_balance_set_numa_imbalance_nr(NIL, 0), -1, EINVAL);
	}
	CASE("cl_balance_find_busiest", "s NULL")
	{
		RB_INT(cl_balance_find_busiest(NIL, 0), -1, EINVAL);
	}
	CASE("cl_balance_find_busiest", "dst_cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_find_busiest(s, 2), -1, EINVAL);
	}
	CASE("cl_balance_move", "s NULL")
	{
		RB_INT(cl_balance_move(NIL, 0, 1, 1, NIL), -1, EINVAL);
	}
	CASE("cl_balance_move", "src == dst")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_move(s, 0, 0, 1, NIL), -1, EINVAL);
	}
	CASE("cl_balance_move", "src out of range")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_move(s, 7, 0, 1, NIL), -1, EINVAL);
	}
	CASE("cl_balance_run", "s NULL")
	{
		RB_INT(cl_balance_run(NIL, 0, 1, NIL), -1, EINVAL);
	}
	CASE("cl_balance_run", "dst_cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_run(s, 2, 1, NIL), -1, EINVAL);
	}
	CASE("cl_balance_cpu_offline_begin", "s NULL")
	{
		RB_INT(cl_balance_cpu_offline_begin(NIL, 0), -1, EINVAL);
	}
	CASE("cl_balance_cpu_offline_begin", "cpu out of range")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_cpu_offline_begin(s, 2), -1, EINVAL);
	}
	CASE("cl_balance_cpu_offline", "s NULL")
	{
		RB_INT(cl_balance_cpu_offline(NIL, 0, 1), -1, EINVAL);
	}
	CASE("cl_balance_cpu_offline", "the last online CPU")
	{
		struct cl_sched *s = sched2();
		cl_balance_cpu_offline(s, 1, 1);
		RB_INT(cl_balance_cpu_offline(s, 0, 2), -1, EBUSY);
	}
	CASE("cl_balance_cpu_offline", "already offline")
	{
		struct cl_sched *s = sched2();
		cl_balance_cpu_offline(s, 1, 1);
		RB_INT(cl_balance_cpu_offline(s, 1, 2), -1, EINVAL);
	}
	CASE("cl_balance_cpu_online", "s NULL")
	{
		RB_INT(cl_balance_cpu_online(NIL, 0, 1), -1, EINVAL);
	}
	CASE("cl_balance_cpu_online", "already online")
	{
		struct cl_sched *s = sched2();
		RB_INT(cl_balance_cpu_online(s, 0, 1), -1, EINVAL);
	}
}

/* ---- L5: sched/runtime.h ---- */
static void *rb_task_fn(void *arg)
{
	return arg;
}

static void l5_runtime_cases(void)
{
	CASE("cl_runtime_create", "nr_workers above CL_MAX_CPUS")
	{
		struct cl_runtime_attr a = { .nr_workers = CL_MAX_CPUS + 1 };
		RB_NULL(cl_runtime_create(&a), EINVAL);
	}
	CASE("cl_runtime_nr_workers", "rt NULL")
	{
		RB_INT(cl_runtime_nr_workers(NIL), 0, EINVAL);
	}
	CASE("cl_runtime_sched", "rt NULL")
	{
		RB_NULL(cl_runtime_sched(NIL), EINVAL);
	}
	CASE("cl_runtime_guard_mode", "rt NULL")
	{
		RB_NULL(cl_runtime_guard_mode(NIL), EINVAL);
	}
	CASE("cl_runtime_context_kind", "(no argument: nothing can be bad)")
	{
		const char *k = cl_runtime_context_kind();
		RB_THEN(k && *k, "a name");
	}
	CASE("cl_runtime_shutdown", "rt NULL")
	{
		RB_INT(cl_runtime_shutdown(NIL), -1, EINVAL);
	}
	CASE("cl_runtime_destroy", "rt NULL")
	{
		RB_INT(cl_runtime_destroy(NIL), 0, 0);
	}
	CASE("cl_spawn", "rt NULL")
	{
		RB_NULL(cl_spawn(NIL, NIL, rb_task_fn, NIL), EINVAL);
	}
	CASE("cl_spawn", "fn NULL")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		RB_NULL(cl_spawn(rt, NIL, NIL, NIL), EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_spawn", "attr->worker out of range")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		struct cl_spawn_attr sa = { .worker = CL_SPAWN_WORKER(5) };
		RB_NULL(cl_spawn(rt, &sa, rb_task_fn, NIL), EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_spawn", "after shutdown")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		cl_runtime_shutdown(rt);
		RB_NULL(cl_spawn(rt, NIL, rb_task_fn, NIL), EPIPE);
		cl_runtime_destroy(rt);
	}
	CASE("cl_self", "called outside a task")
	{
		RB_NULL(cl_self(), RB_ERRNO_ANY);
	}
	CASE("cl_worker_id", "called outside a task")
	{
		RB_INT(cl_worker_id(), -1, RB_ERRNO_ANY);
	}
	CASE("cl_yield", "called outside a task")
	{
		RB_INT(cl_yield(), -1, EPERM);
	}
	CASE("cl_preempt_disable", "called outside a task")
	{
		RB_VOID(cl_preempt_disable(), RB_ERRNO_ANY);
	}
	CASE("cl_preempt_enable", "called outside a task, no disable before")
	{
		RB_VOID(cl_preempt_enable(), RB_ERRNO_ANY);
	}
	CASE("cl_join", "t NULL")
	{
		RB_INT(cl_join(NIL, NIL), -1, EINVAL);
	}
	CASE("cl_join_timeout", "t NULL")
	{
		RB_INT(cl_join_timeout(NIL, NIL, 1000), -1, EINVAL);
	}
	CASE("cl_join_timeout", "t detached")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		struct cl_spawn_attr sa = { .detached = 1 };
		struct cl_rt_task *t = cl_spawn(rt, &sa, rb_task_fn, NIL);
		RB_INT(cl_join_timeout(t, NIL, 1000), -1, EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_join_timeout", "t joined already")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		struct cl_rt_task *t = cl_spawn(rt, NIL, rb_task_fn, NIL);
		cl_join(t, NIL);
		RB_INT(cl_join_timeout(t, NIL, 1000), -1, EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_blocking", "fn NULL")
	{
		RB_INT(cl_blocking(NIL, NIL), -1, EINVAL);
	}
	CASE("cl_sleep_ns", "ns UINT64_MAX (a negative value passed by mistake)")
	{
		RB_INT(cl_sleep_ns(UINT64_MAX), -1, EINVAL);
	}
	CASE("cl_sleep_until", "deadline_ns above CL_SLEEP_MAX_NS")
	{
		RB_INT(cl_sleep_until(CL_SLEEP_MAX_NS + 1), -1, EINVAL);
	}
	CASE("cl_read", "fd -1 (outside a task: read(2))")
	{
		char b[4];

		RB_INT(cl_read(-1, b, sizeof(b)), -1, EBADF);
	}
	CASE("cl_write", "fd -1 (outside a task: write(2))")
	{
		RB_INT(cl_write(-1, "x", 1), -1, EBADF);
	}
	CASE("cl_recv", "fd -1 (outside a task: recv(2))")
	{
		char b[4];

		RB_INT(cl_recv(-1, b, sizeof(b), 0), -1, EBADF);
	}
	CASE("cl_send", "fd -1 (outside a task: send(2))")
	{
		RB_INT(cl_send(-1, "x", 1, 0), -1, EBADF);
	}
	CASE("cl_accept", "fd -1, addr NULL (outside a task: accept(2))")
	{
		RB_INT(cl_accept(-1, NIL, NIL), -1, EBADF);
	}
	CASE("cl_connect", "fd -1, addr NULL (outside a task: connect(2))")
	{
		RB_INT(cl_connect(-1, NIL, 0), -1, EBADF);
	}
	CASE("cl_read_timeout", "fd -1 (outside a task: read(2))")
	{
		char b[4];

		RB_INT(cl_read_timeout(-1, b, sizeof(b), 1000), -1, EBADF);
	}
	CASE("cl_write_timeout", "fd -1 (outside a task: write(2))")
	{
		RB_INT(cl_write_timeout(-1, "x", 1, 1000), -1, EBADF);
	}
	CASE("cl_recv_timeout", "fd -1 (outside a task: recv(2))")
	{
		char b[4];

		RB_INT(cl_recv_timeout(-1, b, sizeof(b), 0, 1000), -1, EBADF);
	}
	CASE("cl_send_timeout", "fd -1 (outside a task: send(2))")
	{
		RB_INT(cl_send_timeout(-1, "x", 1, 0, 1000), -1, EBADF);
	}
	CASE("cl_accept_timeout", "fd -1, addr NULL (outside a task: accept(2))")
	{
		RB_INT(cl_accept_timeout(-1, NIL, NIL, 1000), -1, EBADF);
	}
	CASE("cl_connect_timeout", "fd -1, addr NULL (outside a task: connect(2))")
	{
		RB_INT(cl_connect_timeout(-1, NIL, 0, 1000), -1, EBADF);
	}
	CASE("cl_listen_tcp", "hostport NULL")
	{
		RB_INT(cl_listen_tcp(NIL, 1), -1, EINVAL);
	}
	CASE("cl_listen_tcp", "no port (\"127.0.0.1\")")
	{
		RB_INT(cl_listen_tcp("127.0.0.1", 1), -1, EINVAL);
	}
	CASE("cl_dial_tcp", "hostport NULL")
	{
		RB_INT(cl_dial_tcp(NIL, 1000), -1, EINVAL);
	}
	CASE("cl_dial_tcp", "port not a number")
	{
		RB_INT(cl_dial_tcp("127.0.0.1:http-ish", 1000), -1, EINVAL);
	}
	CASE("cl_sock_name", "buf NULL")
	{
		RB_INT(cl_sock_name(0, NIL, 64), -1, EINVAL);
	}
	CASE("cl_sock_name", "fd -1")
	{
		char b[64];

		RB_INT(cl_sock_name(-1, b, sizeof(b)), -1, EBADF);
	}
	CASE("cl_signal_chan", "rt NULL")
	{
		int s = SIGUSR1;

		RB_NULL(cl_signal_chan(NIL, &s, 1, 1), EINVAL);
	}
	CASE("cl_signal_chan", "SIGKILL (cannot be caught)")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		int s = SIGKILL;

		RB_NULL(cl_signal_chan(rt, &s, 1, 1), EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_signal_chan", "capacity 0")
	{
		struct cl_runtime_attr a = { .nr_workers = 1 };
		struct cl_runtime *rt = cl_runtime_create(&a);
		int s = SIGUSR1;

		RB_NULL(cl_signal_chan(rt, &s, 1, 0), EINVAL);
		cl_runtime_destroy(rt);
	}
	CASE("cl_waitgroup_init", "wg NULL")
	{
		RB_VOID(cl_waitgroup_init(NIL), EINVAL);
	}
	CASE("cl_waitgroup_add", "wg NULL")
	{
		RB_INT(cl_waitgroup_add(NIL, 1), -1, EINVAL);
	}
	CASE("cl_waitgroup_add", "count would go below 0")
	{
		struct cl_waitgroup wg;

		cl_waitgroup_init(&wg);
		RB_INT(cl_waitgroup_add(&wg, -1), -1, EINVAL);
		RB_INT(wg.count, 0, 0);
	}
	CASE("cl_waitgroup_done", "wg NULL")
	{
		RB_INT(cl_waitgroup_done(NIL), -1, EINVAL);
	}
	CASE("cl_waitgroup_wait", "wg NULL")
	{
		RB_INT(cl_waitgroup_wait(NIL), -1, EINVAL);
	}
	CASE("cl_waitgroup_wait", "work outstanding, outside a task")
	{
		struct cl_waitgroup wg;

		cl_waitgroup_init(&wg);
		cl_waitgroup_add(&wg, 1);
		RB_INT(cl_waitgroup_wait(&wg), -1, EPERM);
	}
	CASE("cl_waitgroup_wait_timeout", "wg NULL")
	{
		RB_INT(cl_waitgroup_wait_timeout(NIL, 1000), -1, EINVAL);
	}
	CASE("cl_now_ns", "(no argument: nothing can be bad)")
	{
		RB_INT(cl_now_ns() > 0, 1, 0);
	}
	CASE("cl_poll_fd", "fd not open (poll(2) would say POLLNVAL)")
	{
		RB_INT(cl_poll_fd(1 << 20, 1, 1000), -1, EBADF);
	}
	CASE("cl_close", "fd -1 (close(2))")
	{
		RB_INT(cl_close(-1), -1, EBADF);
	}
	CASE("cl_runtime_io_mode", "rt NULL")
	{
		RB_NULL(cl_runtime_io_mode(NIL), EINVAL);
	}
	CASE("cl_runtime_preempt_mode", "rt NULL")
	{
		RB_NULL(cl_runtime_preempt_mode(NIL), EINVAL);
	}
	CASE("cl_waitq_wait_timeout", "wq NULL")
	{
		RB_INT(cl_waitq_wait_timeout(NIL, 1000), -1, EINVAL);
	}
	CASE("cl_chan_send_timeout", "c NULL, msg NULL")
	{
		RB_INT(cl_chan_send_timeout(NIL, NIL, 1000), -1, EINVAL);
	}
	CASE("cl_chan_recv_timeout", "c NULL, out NULL")
	{
		RB_INT(cl_chan_recv_timeout(NIL, NIL, 1000), -1, EINVAL);
	}
	CASE("cl_chan_recv_timeout", "empty, called outside a task")
	{
		struct cl_chan *c = cl_chan_create(sizeof(int), 1);
		int v = 0;
		RB_INT(cl_chan_recv_timeout(c, &v, 1000), -1, EPERM);
		cl_chan_destroy(c);
	}
	CASE("cl_select", "cases NULL")
	{
		RB_INT(cl_select(NIL, 1, CL_SELECT_NOWAIT), -1, EINVAL);
	}
	CASE("cl_select", "n 0, n above CL_SELECT_MAX")
	{
		struct cl_chan *c = cl_chan_create(sizeof(int), 1);
		int v = 0;
		struct cl_select_case k[CL_SELECT_MAX + 1];
		for (unsigned int i = 0; i < CL_SELECT_MAX + 1; i++) {
			k[i].chan = c;
			k[i].op = CL_SELECT_RECV;
			k[i].msg = &v;
		}
		RB_INT(cl_select(k, 0, CL_SELECT_NOWAIT), -1, EINVAL);
		RB_INT(cl_select(k, CL_SELECT_MAX + 1, CL_SELECT_NOWAIT), -1, EINVAL);
		cl_chan_destroy(c);
	}
	CASE("cl_select", "a case with chan NULL, msg NULL, or a bad op")
	{
		struct cl_chan *c = cl_chan_create(sizeof(int), 1);
		int v = 0;
		struct cl_select_case k = { NIL, CL_SELECT_RECV, &v, 0 };
		RB_INT(cl_select(&k, 1, CL_SELECT_FOREVER), -1, EINVAL);
		k.chan = c;
		k.msg = NIL;
		RB_INT(cl_select(&k, 1, CL_SELECT_FOREVER), -1, EINVAL);
		k.msg = &v;
		k.op = -1;
		RB_INT(cl_select(&k, 1, CL_SELECT_FOREVER), -1, EINVAL);
		cl_chan_destroy(c);
	}
	CASE("cl_select", "nothing ready, called outside a task")
	{
		struct cl_chan *c = cl_chan_create(sizeof(int), 1);
		int v = 0;
		struct cl_select_case k = { c, CL_SELECT_RECV, &v, 0 };
		RB_INT(cl_select(&k, 1, 1000), -1, EPERM);
		RB_INT(cl_select(&k, 1, CL_SELECT_NOWAIT), -1, EAGAIN);
		cl_chan_destroy(c);
	}
	CASE("cl_mutex_lock_timeout", "m NULL")
	{
		RB_INT(cl_mutex_lock_timeout(NIL, 1000), -1, EINVAL);
	}
	CASE("cl_cond_wait_timeout", "cv NULL, m NULL")
	{
		RB_INT(cl_cond_wait_timeout(NIL, NIL, 1000), -1, EINVAL);
	}
	CASE("cl_waitq_init", "wq NULL")
	{
		RB_VOID(cl_waitq_init(NIL), EINVAL);
	}
	CASE("cl_waitq_lock", "wq NULL")
	{
		RB_VOID(cl_waitq_lock(NIL), EINVAL);
	}
	CASE("cl_waitq_unlock", "wq NULL")
	{
		RB_VOID(cl_waitq_unlock(NIL), EINVAL);
	}
	CASE("cl_waitq_wait", "called outside a task")
	{
		static struct cl_waitq wq;
		cl_waitq_init(&wq);
		cl_waitq_lock(&wq);
		RB_INT(cl_waitq_wait(&wq), -1, EPERM);
		RB_THEN(cl_ticket_trylock(&wq.lock), "lock released");
	}
	CASE("cl_waitq_wait", "wq NULL")
	{
		RB_INT(cl_waitq_wait(NIL), -1, EINVAL);
	}
	CASE("cl_waitq_wake_one", "wq NULL")
	{
		RB_INT(cl_waitq_wake_one(NIL), 0, EINVAL);
	}
	CASE("cl_waitq_wake_all", "wq NULL")
	{
		RB_INT(cl_waitq_wake_all(NIL), 0, EINVAL);
	}
	CASE("cl_chan_create", "esize 0")
	{
		RB_NULL(cl_chan_create(0, 4), EINVAL);
	}
	CASE("cl_chan_create", "esize above 65536")
	{
		RB_NULL(cl_chan_create(65537, 4), EINVAL);
	}
	CASE("cl_chan_create", "cap 0")
	{
		RB_NULL(cl_chan_create(8, 0), EINVAL);
	}
	CASE("cl_chan_create", "cap huge (2^62)")
	{
		RB_NULL(cl_chan_create(8, HUGE_SIZE), EINVAL);
	}
	CASE("cl_chan_destroy", "c NULL")
	{
		RB_INT(cl_chan_destroy(NIL), 0, 0);
	}
	CASE("cl_chan_send", "c NULL")
	{
		long m = 1;
		RB_INT(cl_chan_send(NIL, &m), -1, EINVAL);
	}
	CASE("cl_chan_send", "msg NULL")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		RB_INT(cl_chan_send(c, NIL), -1, EINVAL);
	}
	CASE("cl_chan_send", "full, caller not a task")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m = 1;
		cl_chan_send(c, &m);
		RB_INT(cl_chan_send(c, &m), -1, EPERM);
	}
	CASE("cl_chan_send", "closed channel")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m = 1;
		cl_chan_close(c);
		RB_INT(cl_chan_send(c, &m), -1, EPIPE);
	}
	CASE("cl_chan_recv", "c NULL")
	{
		long m;
		RB_INT(cl_chan_recv(NIL, &m), -1, EINVAL);
	}
	CASE("cl_chan_recv", "empty, caller not a task")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m;
		RB_INT(cl_chan_recv(c, &m), -1, EPERM);
	}
	CASE("cl_chan_recv", "closed and empty")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m;
		cl_chan_close(c);
		RB_INT(cl_chan_recv(c, &m), -1, EPIPE);
	}
	CASE("cl_chan_trysend", "c NULL")
	{
		long m = 1;
		RB_INT(cl_chan_trysend(NIL, &m), -1, EINVAL);
	}
	CASE("cl_chan_trysend", "full")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m = 1;
		cl_chan_trysend(c, &m);
		RB_INT(cl_chan_trysend(c, &m), -1, EAGAIN);
	}
	CASE("cl_chan_tryrecv", "out NULL")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		RB_INT(cl_chan_tryrecv(c, NIL), -1, EINVAL);
	}
	CASE("cl_chan_tryrecv", "empty")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		long m;
		RB_INT(cl_chan_tryrecv(c, &m), -1, EAGAIN);
	}
	CASE("cl_chan_close", "c NULL")
	{
		RB_INT(cl_chan_close(NIL), -1, EINVAL);
	}
	CASE("cl_chan_close", "closed twice")
	{
		struct cl_chan *c = cl_chan_create(sizeof(long), 1);
		cl_chan_close(c);
		RB_INT(cl_chan_close(c), -1, EPIPE);
	}
	CASE("cl_mutex_init", "m NULL")
	{
		RB_VOID(cl_mutex_init(NIL), EINVAL);
	}
	CASE("cl_mutex_trylock", "m NULL")
	{
		RB_INT(cl_mutex_trylock(NIL), -1, EINVAL);
	}
	CASE("cl_mutex_trylock", "already held")
	{
		static struct cl_mutex m;
		cl_mutex_init(&m);
		cl_mutex_trylock(&m);
		RB_INT(cl_mutex_trylock(&m), -1, EBUSY);
	}
	CASE("cl_mutex_lock", "m NULL")
	{
		RB_INT(cl_mutex_lock(NIL), -1, EINVAL);
	}
	CASE("cl_mutex_lock", "held, caller not a task")
	{
		static struct cl_mutex m;
		cl_mutex_init(&m);
		cl_mutex_lock(&m);
		RB_INT(cl_mutex_lock(&m), -1, EPERM);
	}
	CASE("cl_mutex_unlock", "m NULL")
	{
		RB_VOID(cl_mutex_unlock(NIL), EINVAL);
	}
	CASE("cl_cond_init", "cv NULL")
	{
		RB_VOID(cl_cond_init(NIL), EINVAL);
	}
	CASE("cl_cond_wait", "called outside a task")
	{
		static struct cl_mutex m;
		static struct cl_cond cv;
		cl_mutex_init(&m);
		cl_cond_init(&cv);
		cl_mutex_lock(&m);
		RB_INT(cl_cond_wait(&cv, &m), -1, EPERM);
	}
	CASE("cl_cond_wait", "cv NULL")
	{
		static struct cl_mutex m;
		cl_mutex_init(&m);
		cl_mutex_lock(&m);
		RB_INT(cl_cond_wait(NIL, &m), -1, EINVAL);
	}
	CASE("cl_cond_signal", "cv NULL")
	{
		RB_INT(cl_cond_signal(NIL), 0, EINVAL);
	}
	CASE("cl_cond_broadcast", "cv NULL")
	{
		RB_INT(cl_cond_broadcast(NIL), 0, EINVAL);
	}
}

int main(void)
{
	char what[200];

	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(what, sizeof(what), "bad_inputs: build %s, test mode %s, id mode %s, ops mode %s",
		 RB_DEBUG ? "CL_DEBUG" : "plain", getenv("CL_TEST_MODE") ? getenv("CL_TEST_MODE") : "default",
		 cl_id_mode_name(cl_id_mode()), cl_rseq_ops_mode_name(cl_rseq_ops_mode()));
	rb_start(what);
	l1_cases();
	l2_cases();
	l3_percpu_cases();
	l3_cid_cases();
	l4_ops_cases();
	l4_struct_cases();
	l4_fence_cases();
	l5_sched_cases();
	l5_runtime_cases();
	printf("# bad_inputs: %d rows, %d failed\n", rb_nrows, rb_nfail);
	if (rb_rows)
		fprintf(rb_rows, "# bad_inputs: %d rows, %d failed\n", rb_nrows, rb_nfail);
	return rb_nfail ? 1 : 0;
}
