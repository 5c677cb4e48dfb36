/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for cachelocal/percpu_ops.h: the mode chosen in each test mode,
 * the semantics and return codes of every operation in both index modes,
 * exact multi-threaded sums, and the emitted rseq descriptors. Also built
 * (test_percpu_ops.variants) with -DCL_NO_RSEQ_ASM, and with
 * -DCL_TEST_TRAP_INJECT: an int3 inside the critical sections, armed by a
 * flag, proves that the kernel aborts a section interrupted by a signal;
 * and with -DCL_TEST_SCRATCH_HOOK: a test hook that overwrites %rax and
 * %rcx (declared in CL_RSEQ_INJECT_CLOBBER) at every hook point.
 * CL_INJECT(32) holds the fallback's striped lock until a fork() returned
 * (the child must find it free).
 */
#include <stdatomic.h>

static void inject(int n);
#define CL_INJECT(n) inject(n)
#ifdef CL_TEST_SCRATCH_HOOK
/* A hook that overwrites the sections' scratch registers and declares it:
 * every operation must still be right (the sections save them around it).
 * aarch64: the registers hooks may use (x16, x17), which the sections
 * must not keep anything in. */
#if defined(__aarch64__)
#define CL_RSEQ_INJECT_ASM(n)                    \
	"mov x16, #0x" #n "dea\n\t"              \
	"mov x17, #0x" #n "bee\n\t"
#define CL_RSEQ_INJECT_CLOBBER , "x16", "x17"
#else
#define CL_RSEQ_INJECT_ASM(n)                    \
	"movq $0x" #n "dead, %%rax\n\t"          \
	"movq $0x" #n "beef, %%rcx\n\t"
#define CL_RSEQ_INJECT_CLOBBER , "rax", "rcx"
#endif
#endif

#ifdef CL_TEST_TRAP_INJECT
/* At inject point 2 (after the index check): trap if test_trap_armed. */
int test_trap_armed;
#if defined(__aarch64__)
#define CL_TEST_INJECT_ASM_2                      \
	"adrp x16, test_trap_armed\n\t"          \
	"ldr w16, [x16, #:lo12:test_trap_armed]\n\t" \
	"cbz w16, 7f\n\t"                         \
	"brk #0x3e9\n\t"                          \
	"7:\n\t"
#define CL_RSEQ_INJECT_CLOBBER , "x16"
#else
#define CL_TEST_INJECT_ASM_2                      \
	"cmpl $0, test_trap_armed(%%rip)\n\t"    \
	"je 7f\n\t"                               \
	"int3\n\t"                                \
	"7:\n\t"
#endif
#define CL_TEST_INJECT_ASM_1 ""
#define CL_TEST_INJECT_ASM_3 ""
#define CL_TEST_INJECT_ASM_4 ""
#define CL_RSEQ_INJECT_ASM(n) CL_TEST_INJECT_ASM_##n
#endif

#include <cachelocal/percpu_ops.h>
#include <cachelocal/topology.h>

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cl_test.h"

/* Armed: the fallback body that reaches point 32 keeps its striped lock
 * until the parent's fork() returned. */
static atomic_int fb_armed, fb_holding, fb_forked;

static void inject(int n)
{
	int one = 1;

	if (n != 32 || !atomic_compare_exchange_strong(&fb_armed, &one, 0))
		return;
	atomic_store(&fb_holding, 1);
	while (!atomic_load(&fb_forked))
		sched_yield();
}

#define NR_THREADS 4
#define NR_ADDS 200000

/* A per-index word on its own guard unit. */
struct slot {
	intptr_t v CL_ALIGNED(CL_FALSE_SHARING_SIZE);
};

struct node {
	long value;
	void *next;
};

static const enum cl_rseq_index modes[2] = { CL_RSEQ_INDEX_CPU_ID, CL_RSEQ_INDEX_MM_CID };

/* What cl_rseq_ops_mode() must say in this build and id mode. */
static enum cl_rseq_ops_mode expected_mode(void)
{
#if defined(CL_NO_RSEQ_ASM)
	return CL_RSEQ_OPS_ATOMIC_FORCED;
#elif defined(CL_HAVE_TSAN)
	return CL_RSEQ_OPS_ATOMIC_TSAN;
#elif !defined(CL_ARCH_HAVE_RSEQ_SECTIONS)
	return CL_RSEQ_OPS_ATOMIC_NO_ASM;
#else
	if (!strcmp(cl_test_mode(), "no-rseq"))
		return CL_RSEQ_OPS_ATOMIC_NO_RSEQ;
	return CL_RSEQ_OPS_RSEQ;
#endif
}

static int rseq_path(enum cl_rseq_index idx)
{
	return cl_rseq_ops_mode_index(idx) == CL_RSEQ_OPS_RSEQ;
}

Test(percpu_ops, mode_matches_build_and_id_mode)
{
	enum cl_rseq_ops_mode m = cl_rseq_ops_mode();

	cr_log_info("test mode %s: ops mode %s, mm_cid index %s", cl_test_mode(),
		    cl_rseq_ops_mode_name(m),
		    cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID)));
	cr_assert_eq(m, expected_mode(), "mode %s", cl_rseq_ops_mode_name(m));
	cr_assert_eq(cl_rseq_ops_mode(), m, "the decision is stable");
	if (m == CL_RSEQ_OPS_RSEQ)
		cr_assert_eq(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID),
			     cl_rseq_mm_cid_available() ? CL_RSEQ_OPS_RSEQ
							: CL_RSEQ_OPS_ATOMIC_NO_MM_CID);
	else
		cr_assert_neq(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID), CL_RSEQ_OPS_RSEQ);
}

Test(percpu_ops, mode_names)
{
	cr_assert_str_eq(cl_rseq_ops_mode_name(CL_RSEQ_OPS_RSEQ), "rseq");
	cr_assert_str_eq(cl_rseq_ops_mode_name(CL_RSEQ_OPS_ATOMIC_NO_RSEQ), "atomic-no-rseq");
	cr_assert_str_eq(cl_rseq_ops_mode_name(CL_RSEQ_OPS_ATOMIC_FORCED), "atomic-forced");
	cr_assert_str_eq(cl_rseq_ops_mode_name((enum cl_rseq_ops_mode)99), "?");
}

Test(percpu_ops, current_index_follows_pinning)
{
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);

	cr_assert_gt(n, 0);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(cl_test_pin(cpus[i]), 0);
		cr_assert_eq(cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID), cpus[i]);
		cr_assert_geq(cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID), 0);
		if (rseq_path(CL_RSEQ_INDEX_MM_CID))
			cr_assert_lt((unsigned)cl_rseq_current_index(CL_RSEQ_INDEX_MM_CID),
				     cl_nr_possible_cpus());
	}
}

/* Retry an operation until it does not abort (fresh index each time). */
#define RETRY(idx, var, expr)                                                   \
	({                                                                      \
		int r_;                                                         \
		do {                                                            \
			var = cl_rseq_current_index(idx);                       \
			r_ = (expr);                                            \
		} while (r_ == CL_RSEQ_ABORT);                                  \
		r_;                                                             \
	})

Test(percpu_ops, add_and_wrong_index)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		unsigned n = cl_nr_possible_cpus();
		struct slot *s = aligned_alloc(CL_FALSE_SHARING_SIZE, n * sizeof(*s));
		intptr_t lone = 7, total = 0;
		int c;

		cr_assert_not_null(s);
		memset(s, 0, n * sizeof(*s));
		for (int i = 0; i < 1000; i++)
			cr_assert_eq(RETRY(idx, c, cl_rseq_add(idx, &s[c % n].v, 3, c)), 0);
		cr_assert_eq(RETRY(idx, c, cl_rseq_add(idx, &s[c % n].v, -1000, c)), 0);
		for (unsigned i = 0; i < n; i++)
			total += s[i].v;
		cr_assert_eq(total, 2000, "sum of slots %ld", (long)total);
		/* An index no thread ever has: the section aborts, nothing is stored. */
		c = cl_rseq_add(idx, &lone, 1, 1 << 24);
		if (rseq_path(idx)) {
			cr_assert_eq(c, CL_RSEQ_ABORT);
			cr_assert_eq(lone, 7);
		} else {
			cr_assert_eq(c, CL_RSEQ_OK);
			cr_assert_eq(lone, 8);
		}
		free(s);
	}
}

Test(percpu_ops, bad_kind_is_einval)
{
	intptr_t v = 3;
	void *head = NULL, *out = NULL;

	errno = 0;
	cr_assert_eq(cl_rseq_add((enum cl_rseq_index)7, &v, 1, 0), CL_RSEQ_ERROR);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_rseq_cmpstore((enum cl_rseq_index)-1, &v, 3, 4, 0), CL_RSEQ_ERROR);
	cr_assert_eq(cl_rseq_pop((enum cl_rseq_index)2, &head, 0, &out, 0), CL_RSEQ_ERROR);
	cr_assert_eq(cl_rseq_cmpstore_store(CL_RSEQ_INDEX_CPU_ID, &v, 3, &v, 1, 2,
					    (enum cl_rseq_mo)5, 0),
		     CL_RSEQ_ERROR, "bad memory order");
	cr_assert_eq(v, 3, "nothing stored on bad input");
}

/* A NULL word is EINVAL before the mode matters: same answer with critical
 * sections and in the fallback, both kinds, nothing stored elsewhere. */
#define ASSERT_EINVAL(call, what)                                                   \
	do {                                                                        \
		errno = 0;                                                          \
		cr_assert_eq((call), CL_RSEQ_ERROR, "kind %d: %s", (int)k, what);    \
		cr_assert_eq(errno, EINVAL, "kind %d: %s", (int)k, what);           \
	} while (0)

Test(percpu_ops, null_words_are_einval_in_every_mode)
{
	for (int m = 0; m < 2; m++) {
		enum cl_rseq_index k = modes[m];
		int i = cl_rseq_current_index(k);
		intptr_t v = 3, v2 = 5;
		void *node[2] = { NULL, NULL }, *head = NULL, *out = &v, *p = &v;
		char buf[8] = { 0 };

		ASSERT_EINVAL(cl_rseq_add(k, NULL, 1, i), "add v");
		ASSERT_EINVAL(cl_rseq_cmpstore(k, NULL, 3, 4, i), "cmpstore v");
		ASSERT_EINVAL(cl_rseq_pop_until(k, NULL, 0, NULL, &out, i), "pop_until head");
		ASSERT_EINVAL(cl_rseq_pop_until(k, &head, 0, NULL, NULL, i), "pop_until out");
		ASSERT_EINVAL(cl_rseq_pop(k, NULL, 0, &out, i), "pop head");
		ASSERT_EINVAL(cl_rseq_pop(k, &head, 0, NULL, i), "pop out");
		ASSERT_EINVAL(cl_rseq_trypush(k, NULL, 0, node, i), "trypush head");
		ASSERT_EINVAL(cl_rseq_trypush(k, &head, 0, NULL, i), "trypush node");
		ASSERT_EINVAL(cl_rseq_cmpstore_store(k, NULL, 3, &v2, 1, 4, CL_RSEQ_MO_RELAXED, i),
			      "cmpstore_store v");
		ASSERT_EINVAL(cl_rseq_cmpstore_store(k, &v, 3, NULL, 1, 4, CL_RSEQ_MO_RELAXED, i),
			      "cmpstore_store v2");
		ASSERT_EINVAL(cl_rseq_cmp2_store(k, NULL, 3, &v2, 5, 4, i), "cmp2_store v");
		ASSERT_EINVAL(cl_rseq_cmp2_store(k, &v, 3, NULL, 5, 4, i), "cmp2_store v2");
		ASSERT_EINVAL(cl_rseq_cmpmemcpy_store(k, NULL, 3, buf, "abc", 4, 4, CL_RSEQ_MO_RELAXED, i),
			      "cmpmemcpy_store v");
		ASSERT_EINVAL(cl_rseq_cmpmemcpy_store(k, &v, 3, NULL, "abc", 4, 4, CL_RSEQ_MO_RELAXED, i),
			      "cmpmemcpy_store dst");
		ASSERT_EINVAL(cl_rseq_cmpmemcpy_store(k, &v, 3, buf, NULL, 4, 4, CL_RSEQ_MO_RELAXED, i),
			      "cmpmemcpy_store src");
		ASSERT_EINVAL(cl_rseq_deref_add(k, NULL, 0, 1, i), "deref_add ptr");
		cr_assert(v == 3 && v2 == 5 && head == NULL && buf[0] == 0 && out == &v && p == &v,
			  "kind %d: nothing stored", (int)k);
	}
}

static void *stripe_holder(void *p)
{
	cr_assert_eq(cl_rseq_cmpstore(CL_RSEQ_INDEX_CPU_ID, (intptr_t *)p, 0, 1, 0), CL_RSEQ_OK);
	return NULL;
}

/* fork() while another thread holds a striped lock of the fallback: the
 * child, where that thread does not exist, finds the lock free. */
Test(percpu_ops, fork_child_finds_fallback_locks_free, .timeout = 60)
{
	static intptr_t word;
	int status = -1;
	pthread_t th;
	pid_t pid;

	if (cl_rseq_ops_mode() == CL_RSEQ_OPS_RSEQ)
		cr_skip_test("critical sections: the fallback's locks are not used");
	atomic_store(&fb_armed, 1);
	cr_assert_eq(pthread_create(&th, NULL, stripe_holder, &word), 0);
	while (!atomic_load(&fb_holding))
		sched_yield();
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		alarm(20); /* an inherited held lock would spin forever */
		_exit(cl_rseq_cmpstore(CL_RSEQ_INDEX_CPU_ID, &word, 0, 2, 0) == CL_RSEQ_OK && word == 2 ? 0 : 1);
	}
	atomic_store(&fb_forked, 1);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %s %d",
		  WIFSIGNALED(status) ? "killed by signal" : "exit status",
		  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	cr_assert_eq(word, 1, "the parent's store, not the child's");
}

Test(percpu_ops, cmpstore)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		intptr_t v = 10;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_cmpstore(idx, &v, 11, 20, c)),
			     CL_RSEQ_CMPFAIL);
		cr_assert_eq(v, 10, "a failed compare stores nothing");
		cr_assert_eq(RETRY(idx, c, cl_rseq_cmpstore(idx, &v, 10, 20, c)), CL_RSEQ_OK);
		cr_assert_eq(v, 20);
		cr_assert_eq(RETRY(idx, c, cl_rseq_cmpstore(idx, &v, 20, -1, c)), CL_RSEQ_OK);
		cr_assert_eq(v, -1);
		c = cl_rseq_cmpstore(idx, &v, -1, 5, 1 << 24);
		if (rseq_path(idx)) {
			cr_assert_eq(c, CL_RSEQ_ABORT);
			cr_assert_eq(v, -1);
		} else {
			cr_assert_eq(c, CL_RSEQ_OK);
			cr_assert_eq(v, 5);
		}
	}
}

Test(percpu_ops, push_pop_lifo)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		struct node nodes[16];
		void *head = NULL, *out = NULL;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_pop(idx, &head, offsetof(struct node, next),
							      &out, c)),
			     CL_RSEQ_CMPFAIL, "empty list");
		for (int i = 0; i < 16; i++) {
			nodes[i].value = i;
			cr_assert_eq(RETRY(idx, c,
					   cl_rseq_trypush(idx, &head, offsetof(struct node, next),
							      &nodes[i], c)),
				     CL_RSEQ_OK);
			cr_assert_eq(cl_rseq_list_first(&head), &nodes[i]);
		}
		for (int i = 15; i >= 0; i--) {
			cr_assert_eq(RETRY(idx, c,
					   cl_rseq_pop(idx, &head, offsetof(struct node, next),
							     &out, c)),
				     CL_RSEQ_OK);
			cr_assert_eq(out, &nodes[i], "LIFO order");
		}
		cr_assert_null(head);
		cr_assert_eq(RETRY(idx, c, cl_rseq_pop(idx, &head, offsetof(struct node, next),
							      &out, c)),
			     CL_RSEQ_CMPFAIL);
	}
}

/*
 * A misaligned node (bit 0 set: the fallback's head lock bit) or a next
 * pointer off pointer alignment is refused by both pushes in every mode,
 * the list is left as it was, and a pop still returns (before this check the
 * fallback pushed such a node and the next pop spun forever on "locked").
 */
Test(percpu_ops, push_refuses_a_misaligned_node)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		_Alignas(16) char buf[64];
		struct node good;
		void *head = NULL, *out = NULL, *heads = NULL;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_trypush(idx, &head, offsetof(struct node, next),
							   &good, c)),
			     CL_RSEQ_OK);
		errno = 0;
		cr_assert_eq(cl_rseq_trypush(idx, &head, 0, buf + 1, cl_rseq_current_index(idx)),
			     CL_RSEQ_ERROR);
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_eq(cl_rseq_trypush(idx, &head, sizeof(void *) / 2, buf,
					     cl_rseq_current_index(idx)),
			     CL_RSEQ_ERROR, "next pointer at half a pointer's offset");
		cr_assert_eq(errno, EINVAL);
		cr_assert_eq(cl_rseq_list_first(&head), &good, "the refused pushes left the list");
		cr_assert_eq(RETRY(idx, c, cl_rseq_pop(idx, &head, offsetof(struct node, next),
							 &out, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(out, &good);
		cr_assert_null(head);

		errno = 0;
		cr_assert_eq(cl_percpu_list_push(idx, &heads, 4096, 0, buf + 2), -1);
		cr_assert_eq(errno, EINVAL);
		errno = 0;
		cr_assert_eq(cl_percpu_list_push(idx, &heads, 4096, 1, buf), -1);
		cr_assert_eq(errno, EINVAL);
		cr_assert_null(heads);
	}
}

Test(percpu_ops, push_fails_when_head_moved)
{
	struct node a, b;
	void *head = &a;

	a.next = NULL;
	/* A push whose snapshot of the head is stale must not commit: emulate it
	 * with cmpstore, which push is built on. */
	b.next = NULL;
	for (;;) {
		int c = cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID);
		int r = cl_rseq_cmpstore(CL_RSEQ_INDEX_CPU_ID, (intptr_t *)(void *)&head, (intptr_t)(void *)&b,
					 (intptr_t)(void *)&b, c);

		if (r == CL_RSEQ_ABORT)
			continue;
		cr_assert_eq(r, CL_RSEQ_CMPFAIL);
		break;
	}
	cr_assert_eq(head, (void *)&a);
	{
		void *out = NULL;
		int c;

		cr_assert_eq(RETRY(CL_RSEQ_INDEX_CPU_ID, c,
				   cl_rseq_pop(CL_RSEQ_INDEX_CPU_ID, &head, offsetof(struct node, next),
					       &out, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(out, (void *)&a);
		cr_assert_null(head);
	}
}

Test(percpu_ops, pop_until_stops_at_a_sentinel)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		struct node sentinel = { -1, NULL }, a = { 1, &sentinel }, b = { 2, &a };
		void *head = &b, *out = NULL;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_pop_until(idx, &head, offsetof(struct node, next),
							      &sentinel, &out, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(out, (void *)&b);
		cr_assert_eq(RETRY(idx, c, cl_rseq_pop_until(idx, &head, offsetof(struct node, next),
							      &sentinel, &out, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(out, (void *)&a);
		out = NULL;
		cr_assert_eq(RETRY(idx, c, cl_rseq_pop_until(idx, &head, offsetof(struct node, next),
							      &sentinel, &out, c)),
			     CL_RSEQ_CMPFAIL, "the sentinel is the end: nothing popped");
		cr_assert_eq(head, (void *)&sentinel);
		cr_assert_null(out);
	}
}

/* Ops whose wrong index must abort with nothing stored (rseq path). */
static void assert_wrong_index(enum cl_rseq_index idx, int r, int stored_ok)
{
	if (rseq_path(idx))
		cr_assert_eq(r, CL_RSEQ_ABORT, "wrong index aborts");
	else
		cr_assert_eq(r, stored_ok, "fallback ignores the index");
}

Test(percpu_ops, cmpstore_store_stores_item_then_count)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		intptr_t count = 2, slots[4] = { 10, 11, 0, 0 };
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_cmpstore_store(idx, &count, 3, &slots[2], 12, 3,
								   CL_RSEQ_MO_RELEASE, c)),
			     CL_RSEQ_CMPFAIL);
		cr_assert_eq(count, 2);
		cr_assert_eq(slots[2], 0, "a failed compare stores neither word");
		cr_assert_eq(RETRY(idx, c, cl_rseq_cmpstore_store(idx, &count, 2, &slots[2], 12, 3,
								   CL_RSEQ_MO_RELAXED, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(count, 3);
		cr_assert_eq(slots[2], 12);
		assert_wrong_index(idx, cl_rseq_cmpstore_store(idx, &count, 3, &slots[3], 13, 4,
							       CL_RSEQ_MO_RELEASE, 1 << 24),
				   CL_RSEQ_OK);
		if (rseq_path(idx)) {
			cr_assert_eq(count, 3);
			cr_assert_eq(slots[3], 0);
		}
	}
}

Test(percpu_ops, cmp2_store_needs_both_compares)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		intptr_t count = 2, top = 77;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_cmp2_store(idx, &count, 2, &top, 78, 1, c)),
			     CL_RSEQ_CMPFAIL, "second compare fails");
		cr_assert_eq(RETRY(idx, c, cl_rseq_cmp2_store(idx, &count, 3, &top, 77, 1, c)),
			     CL_RSEQ_CMPFAIL, "first compare fails");
		cr_assert_eq(count, 2);
		cr_assert_eq(RETRY(idx, c, cl_rseq_cmp2_store(idx, &count, 2, &top, 77, 1, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(count, 1);
		cr_assert_eq(top, 77, "the second word is only compared");
		assert_wrong_index(idx, cl_rseq_cmp2_store(idx, &count, 1, &top, 77, 0, 1 << 24),
				   CL_RSEQ_OK);
		if (rseq_path(idx))
			cr_assert_eq(count, 1);
	}
}

Test(percpu_ops, cmpmemcpy_store_copies_every_length)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];

		for (size_t len = 0; len <= 40; len++) {
			unsigned char src[48], dst[48];
			intptr_t count = 5;
			int c;

			for (size_t i = 0; i < sizeof(src); i++) {
				src[i] = (unsigned char)(i * 7 + len);
				dst[i] = 0xee;
			}
			cr_assert_eq(RETRY(idx, c, cl_rseq_cmpmemcpy_store(idx, &count, 4, dst, src, len, 6,
									    CL_RSEQ_MO_RELEASE, c)),
				     CL_RSEQ_CMPFAIL);
			cr_assert_eq(dst[0], 0xee, "a failed compare copies nothing");
			cr_assert_eq(RETRY(idx, c, cl_rseq_cmpmemcpy_store(idx, &count, 5, dst, src, len, 6,
									    CL_RSEQ_MO_RELAXED, c)),
				     CL_RSEQ_OK);
			cr_assert_eq(count, 6);
			cr_assert_eq(memcmp(dst, src, len), 0, "len %zu copied", len);
			for (size_t i = len; i < sizeof(dst); i++)
				cr_assert_eq(dst[i], 0xee, "len %zu: byte %zu beyond the copy untouched", len, i);
		}
	}
}

Test(percpu_ops, deref_add_goes_through_the_pointer)
{
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];
		intptr_t blk_a[4] = { 0 }, blk_b[4] = { 0 };
		void *ptr = blk_a;
		int c;

		cr_assert_eq(RETRY(idx, c, cl_rseq_deref_add(idx, &ptr, 2 * sizeof(intptr_t), 5, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(blk_a[2], 5);
		ptr = blk_b;
		cr_assert_eq(RETRY(idx, c, cl_rseq_deref_add(idx, &ptr, 2 * sizeof(intptr_t), -3, c)),
			     CL_RSEQ_OK);
		cr_assert_eq(blk_b[2], -3);
		cr_assert_eq(blk_a[2], 5);
		assert_wrong_index(idx, cl_rseq_deref_add(idx, &ptr, 0, 1, 1 << 24), CL_RSEQ_OK);
		if (rseq_path(idx))
			cr_assert_eq(blk_b[0], 0);
	}
}

/* ---- threads: exact sums on per-index slots ---- */

struct sum_arg {
	struct slot *slots;
	unsigned n;
	enum cl_rseq_index idx;
	long aborts;
};

static void *sum_thread(void *p)
{
	struct sum_arg *a = p;

	for (int i = 0; i < NR_ADDS; i++) {
		int r;

		do {
			int c = cl_rseq_current_index(a->idx);

			r = cl_rseq_add(a->idx, &a->slots[(unsigned)c % a->n].v, 1, c);
			if (r == CL_RSEQ_ABORT)
				a->aborts++;
		} while (r == CL_RSEQ_ABORT);
		if (r != CL_RSEQ_OK)
			return (void *)1;
		if (i % 4096 == 0)
			sched_yield();
	}
	return NULL;
}

Test(percpu_ops, threads_sum_exact)
{
	for (int k = 0; k < 2; k++) {
		unsigned n = cl_nr_possible_cpus();
		struct slot *s = aligned_alloc(CL_FALSE_SHARING_SIZE, n * sizeof(*s));
		struct sum_arg args[NR_THREADS];
		pthread_t t[NR_THREADS];
		long total = 0, aborts = 0;

		cr_assert_not_null(s);
		memset(s, 0, n * sizeof(*s));
		for (int i = 0; i < NR_THREADS; i++) {
			args[i] = (struct sum_arg){ s, n, modes[k], 0 };
			cr_assert_eq(pthread_create(&t[i], NULL, sum_thread, &args[i]), 0);
		}
		for (int i = 0; i < NR_THREADS; i++) {
			void *ret;

			cr_assert_eq(pthread_join(t[i], &ret), 0);
			cr_assert_null(ret, "an op returned an error");
			aborts += args[i].aborts;
		}
		for (unsigned i = 0; i < n; i++)
			total += s[i].v;
		cr_log_info("index %d: %ld aborts", k, aborts);
		cr_assert_eq(total, (long)NR_THREADS * NR_ADDS, "index mode %d: sum %ld", k, total);
		free(s);
	}
}

/* ---- the emitted descriptors (asm builds: x86_64, aarch64) ---- */

#if defined(CL_HAVE_RSEQ_ASM)
/* GNU ld defines these for sections named like C identifiers. */
extern const struct cl_rseq_cs __start___rseq_cs[] __attribute__((weak));
extern const struct cl_rseq_cs __stop___rseq_cs[] __attribute__((weak));

Test(percpu_ops, descriptors_are_well_formed)
{
	const struct cl_rseq_cs *cs = __start___rseq_cs, *end = __stop___rseq_cs;
	long n = 0;

	cr_assert_not_null(cs, "no __rseq_cs section in this binary");
	cr_assert_eq((uintptr_t)cs % 32, 0, "descriptors 32-byte aligned");
	for (; cs < end; cs++, n++) {
		const unsigned char *abort_ip = (const unsigned char *)(uintptr_t)cs->abort_ip;
		uint32_t sig;

		cr_assert_eq(cs->version, 0);
		cr_assert_eq(cs->flags, 0);
		cr_assert_gt(cs->post_commit_offset, 0);
		cr_assert_lt(cs->post_commit_offset, 256, "sections are short");
		cr_assert(cs->abort_ip < cs->start_ip ||
				  cs->abort_ip >= cs->start_ip + cs->post_commit_offset,
			  "abort handler outside [start, post_commit)");
		memcpy(&sig, abort_ip - 4, 4);
		cr_assert_eq(sig, (uint32_t)CL_RSEQ_SIG, "signature before abort_ip");
#if defined(CL_ARCH_X86_64)
		cr_assert(abort_ip[-7] == 0x0f && abort_ip[-6] == 0xb9 && abort_ip[-5] == 0x3d,
			  "ud1 opcode around the signature");
#elif defined(CL_ARCH_AARCH64)
		cr_assert_eq((uintptr_t)abort_ip % 4, 0, "abort_ip on an instruction");
#endif
	}
	cr_log_info("%ld descriptors checked", n);
	/* Every section of both kinds is used in this file: 9 x 2 at least. */
	cr_assert_geq(n, 18);
}
#endif

#ifdef CL_TEST_TRAP_INJECT
#include <signal.h>

static volatile sig_atomic_t traps;

static void on_trap(int sig)
{
	(void)sig;
	traps++;
	test_trap_armed = 0; /* the retry runs through */
}

/* Arm the trap, run one attempt: it must abort (the kernel resumed at abort_ip). */
#define TRAPPED(call)                                                           \
	do {                                                                    \
		int before_ = traps;                                            \
		test_trap_armed = 1;                                            \
		cr_assert_eq((call), CL_RSEQ_ABORT, "trapped: " #call);         \
		cr_assert_eq(traps, before_ + 1);                               \
	} while (0)

static void trap_new_ops(enum cl_rseq_index idx)
{
	struct node sentinel = { -1, NULL }, n1 = { 1, &sentinel };
	intptr_t count = 1, slot[2] = { 5, 0 }, blk[2] = { 0, 0 };
	void *head = &n1, *out = NULL, *ptr = blk;
	char src[24] = "twenty-three bytes long", dst[24] = { 0 };

	TRAPPED(cl_rseq_pop_until(idx, &head, offsetof(struct node, next), &sentinel, &out,
				  cl_rseq_current_index(idx)));
	cr_assert_eq(head, (void *)&n1);
	TRAPPED(cl_rseq_cmpstore_store(idx, &count, 1, &slot[1], 9, 2, CL_RSEQ_MO_RELEASE,
				       cl_rseq_current_index(idx)));
	cr_assert(count == 1 && slot[1] == 0, "an aborted buffer push stores nothing");
	TRAPPED(cl_rseq_cmp2_store(idx, &count, 1, &slot[0], 5, 0, cl_rseq_current_index(idx)));
	cr_assert_eq(count, 1);
	TRAPPED(cl_rseq_cmpmemcpy_store(idx, &count, 1, dst, src, sizeof(src), 2, CL_RSEQ_MO_RELAXED,
					cl_rseq_current_index(idx)));
	cr_assert_eq(count, 1, "an aborted copy does not commit");
	TRAPPED(cl_rseq_deref_add(idx, &ptr, sizeof(intptr_t), 4, cl_rseq_current_index(idx)));
	cr_assert_eq(blk[1], 0);
	/* The per-CPU add's section (index read inside): aborted, then retried. */
	{
		unsigned n = cl_nr_possible_cpus();
		intptr_t *pc = calloc(n, 2 * sizeof(intptr_t)), sum = 0;
		int before = traps, i;

		cr_assert_not_null(pc);
		test_trap_armed = 1;
		i = cl_percpu_add(idx, pc, 2 * sizeof(intptr_t), 3);
		cr_assert_geq(i, 0);
		cr_assert_eq(traps, before + 1, "first attempt trapped and aborted");
		for (unsigned c = 0; c < n; c++)
			sum += pc[2 * c];
		cr_assert_eq(sum, 3, "added once, by the retry");
		cr_assert_eq(pc[2 * i], 3);
		free(pc);
	}
	/* The per-CPU pop and push sections (index and head read inside). */
	{
		unsigned n = cl_nr_possible_cpus();
		void **heads = calloc(n, 2 * sizeof(void *)), *o = NULL;
		struct node nn = { 7, NULL };
		int before = traps, i, j;

		cr_assert_not_null(heads);
		test_trap_armed = 1;
		i = cl_percpu_list_push(idx, heads, 2 * sizeof(void *), offsetof(struct node, next), &nn);
		cr_assert_geq(i, 0);
		cr_assert_eq(traps, before + 1, "push trapped, aborted, retried");
		cr_assert_eq(heads[2 * i], (void *)&nn, "pushed once");
		cr_assert_null(nn.next);
		test_trap_armed = 1;
		j = cl_percpu_list_pop(idx, heads, 2 * sizeof(void *), offsetof(struct node, next), &o);
		cr_assert_eq(traps, before + 2, "pop trapped, aborted, retried");
		if (j == i) { /* still on the same index: the node comes back */
			cr_assert_eq(o, (void *)&nn);
			cr_assert_null(heads[2 * i]);
		}
		free(heads);
	}
	/* The per-CPU buffer push and pop sections (index, count, slot read inside). */
	{
		enum { CAP = 3, WORDS = 1 + CAP };
		unsigned n = cl_nr_possible_cpus();
		intptr_t *bufs = calloc(n, WORDS * sizeof(intptr_t)), total = 0;
		size_t st = WORDS * sizeof(intptr_t);
		int item = 42, before = traps, i, j;
		void *o = NULL;

		cr_assert_not_null(bufs);
		test_trap_armed = 1;
		i = cl_percpu_buf_push(idx, &bufs[0], st, (void **)(void *)&bufs[1], CAP, &item,
				       CL_RSEQ_MO_RELEASE);
		cr_assert_geq(i, 0);
		cr_assert_eq(traps, before + 1, "buffer push trapped, aborted, retried");
		for (unsigned c = 0; c < n; c++)
			total += bufs[c * WORDS];
		cr_assert_eq(total, 1, "pushed once");
		cr_assert_eq(bufs[(size_t)i * WORDS], 1);
		cr_assert_eq((void *)bufs[(size_t)i * WORDS + 1], (void *)&item);
		test_trap_armed = 1;
		j = cl_percpu_buf_pop(idx, &bufs[0], st, (void **)(void *)&bufs[1], &o);
		cr_assert_eq(traps, before + 2, "buffer pop trapped, aborted, retried");
		if (j == i) { /* still on the same index: the item comes back */
			cr_assert_eq(o, (void *)&item);
			cr_assert_eq(bufs[(size_t)i * WORDS], 0, "popped once");
		} else {
			cr_assert_eq(j, CL_PERCPU_CMPFAIL, "another index's buffer is empty");
		}
		free(bufs);
	}
}

/*
 * An int3 inside the section raises SIGTRAP. On return from the handler the
 * kernel must resume at the abort handler, not after the int3 (which would
 * commit): the first attempt returns CL_RSEQ_ABORT with nothing stored.
 */
Test(percpu_ops, signal_inside_section_aborts)
{
	struct sigaction sa;
	intptr_t v = 40, w = 1;
	int c;

	if (!rseq_path(CL_RSEQ_INDEX_CPU_ID)) {
		cr_log_info("no critical sections in this mode: nothing to trap");
		cr_assert_eq(cl_rseq_add(CL_RSEQ_INDEX_CPU_ID, &v, 2, 0), CL_RSEQ_OK);
		cr_assert_eq(v, 42);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	for (int k = 0; k < 2; k++) {
		enum cl_rseq_index idx = modes[k];

		if (!rseq_path(idx))
			continue;
		traps = 0;
		test_trap_armed = 1;
		c = cl_rseq_current_index(idx);
		cr_assert_eq(cl_rseq_add(idx, &v, 2, c), CL_RSEQ_ABORT, "trapped add aborts");
		cr_assert_eq(traps, 1);
		cr_assert_eq(v, 40, "an aborted add stores nothing");
		cr_assert_eq(RETRY(idx, c, cl_rseq_add(idx, &v, 2, c)), CL_RSEQ_OK);
		cr_assert_eq(v, 42);
		v = 40;

		test_trap_armed = 1;
		c = cl_rseq_current_index(idx);
		cr_assert_eq(cl_rseq_cmpstore(idx, &w, 1, 2, c), CL_RSEQ_ABORT);
		cr_assert_eq(w, 1);

		{
			struct node n1 = { 1, NULL };
			void *head = &n1, *out = NULL;

			test_trap_armed = 1;
			c = cl_rseq_current_index(idx);
			cr_assert_eq(cl_rseq_pop(idx, &head, offsetof(struct node, next), &out,
						       c),
				     CL_RSEQ_ABORT);
			cr_assert_eq(head, (void *)&n1, "an aborted pop leaves the list alone");
		}
		cr_assert_eq(traps, 3);
		trap_new_ops(idx);
	}
	test_trap_armed = 0;
}
#endif

/* ---- the per-CPU path on pool objects ---- */

#include <cachelocal/percpu.h>

struct buf {
	intptr_t count;
	void *items[4];
};

static struct cl_percpu_pool *test_pool(void)
{
	struct cl_percpu_pool *pool = cl_percpu_pool_create(NULL);

	cr_assert_not_null(pool);
	return pool;
}

Test(percpu_path, add_and_cmpstore_change_the_returned_copy)
{
	struct cl_percpu_pool *pool = test_pool();
	size_t st = cl_percpu_pool_stride(pool);
	unsigned n = cl_percpu_pool_nr_cpus(pool);
	intptr_t *p = cl_percpu_alloc(pool, sizeof(intptr_t), sizeof(intptr_t));

	cr_assert_not_null(p);
	for (int k = 0; k < 2; k++) {
		intptr_t total = 0;

		for (int j = 0; j < 1000; j++) {
			int i = cl_percpu_add(modes[k], p, st, 2);

			cr_assert_geq(i, 0);
			cr_assert_lt((unsigned)i, n, "index %d below the pool's CPUs", i);
		}
		for (unsigned i = 0; i < n; i++)
			total += *cl_percpu_ptr_stride(p, i, st);
		cr_assert_eq(total, 2000);
		for (unsigned i = 0; i < n; i++)
			*cl_percpu_ptr_stride(p, i, st) = 5;
		{
			int i = cl_percpu_cmpstore(modes[k], p, st, 5, 9);

			cr_assert_geq(i, 0);
			cr_assert_eq(*cl_percpu_ptr_stride(p, i, st), 9, "the returned copy holds newv");
			cr_assert_eq(cl_percpu_cmpstore(modes[k], p, st, 77, 1), CL_PERCPU_CMPFAIL);
		}
		for (unsigned i = 0; i < n; i++)
			*cl_percpu_ptr_stride(p, i, st) = 0;
	}
	cr_assert_eq(cl_percpu_free(pool, p), 0);
	cl_percpu_pool_destroy(pool);
}

Test(percpu_path, bad_input_is_einval)
{
	intptr_t v = 0, c = 0;
	void *items[2], *out, *head = NULL;

	errno = 0;
	cr_assert_eq(cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, NULL, 4096, 1), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_add(CL_RSEQ_INDEX_CPU_ID, &v, 0, 1), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_percpu_cmpstore((enum cl_rseq_index)3, &v, 4096, 0, 1), -1);
	cr_assert_eq(cl_percpu_list_pop(CL_RSEQ_INDEX_CPU_ID, &head, 4096, 0, NULL), -1);
	cr_assert_eq(cl_percpu_list_push(CL_RSEQ_INDEX_CPU_ID, &head, 4096, 0, NULL), -1);
	cr_assert_eq(cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, &c, 4096, items, 0, &v,
					CL_RSEQ_MO_RELAXED),
		     -1, "zero capacity");
	cr_assert_eq(cl_percpu_buf_pop(CL_RSEQ_INDEX_CPU_ID, &c, 4096, NULL, &out), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(v, 0);
	cr_assert_eq(c, 0);
}

/* Every pointer argument of every cl_percpu_<op> NULL: -1 EINVAL, both kinds. */
#define ASSERT_PATH_EINVAL(call, what)                                               \
	do {                                                                         \
		errno = 0;                                                           \
		cr_assert_eq((call), -1, "kind %d: %s", (int)k, what);               \
		cr_assert_eq(errno, EINVAL, "kind %d: %s", (int)k, what);            \
	} while (0)

Test(percpu_path, null_words_are_einval_in_every_mode)
{
	struct cl_percpu_pool *pool = test_pool();
	size_t st = cl_percpu_pool_stride(pool);
	intptr_t *c = cl_percpu_alloc(pool, 4 * sizeof(intptr_t), sizeof(intptr_t));
	void **items = (void **)(void *)(c + 1), *out, *node[2];
	char src[8] = "abcdefg";

	cr_assert_not_null(c);
	for (int m = 0; m < 2; m++) {
		enum cl_rseq_index k = modes[m];

		ASSERT_PATH_EINVAL(cl_percpu_add(k, NULL, st, 1), "add p");
		ASSERT_PATH_EINVAL(cl_percpu_cmpstore(k, NULL, st, 0, 1), "cmpstore p");
		ASSERT_PATH_EINVAL(cl_percpu_list_pop(k, NULL, st, 0, &out), "list_pop head");
		ASSERT_PATH_EINVAL(cl_percpu_list_pop(k, items, st, 0, NULL), "list_pop out");
		ASSERT_PATH_EINVAL(cl_percpu_list_push(k, NULL, st, 0, node), "list_push head");
		ASSERT_PATH_EINVAL(cl_percpu_list_push(k, items, st, 0, NULL), "list_push node");
		ASSERT_PATH_EINVAL(cl_percpu_buf_push(k, NULL, st, items, 2, node, CL_RSEQ_MO_RELAXED),
				   "buf_push count");
		ASSERT_PATH_EINVAL(cl_percpu_buf_push(k, c, st, NULL, 2, node, CL_RSEQ_MO_RELAXED),
				   "buf_push items");
		ASSERT_PATH_EINVAL(cl_percpu_buf_pop(k, NULL, st, items, &out), "buf_pop count");
		ASSERT_PATH_EINVAL(cl_percpu_buf_pop(k, c, st, NULL, &out), "buf_pop items");
		ASSERT_PATH_EINVAL(cl_percpu_buf_pop(k, c, st, items, NULL), "buf_pop out");
		ASSERT_PATH_EINVAL(cl_percpu_buf_push_copy(k, NULL, st, items, 2, 8, src, CL_RSEQ_MO_RELAXED),
				   "buf_push_copy count");
		ASSERT_PATH_EINVAL(cl_percpu_buf_push_copy(k, c, st, NULL, 2, 8, src, CL_RSEQ_MO_RELAXED),
				   "buf_push_copy buf");
		ASSERT_PATH_EINVAL(cl_percpu_buf_push_copy(k, c, st, items, 2, 8, NULL, CL_RSEQ_MO_RELAXED),
				   "buf_push_copy src");
		ASSERT_PATH_EINVAL(cl_percpu_deref_add(k, NULL, st, 0, 1), "deref_add ptr");
		for (unsigned i = 0; i < cl_percpu_pool_nr_cpus(pool); i++)
			cr_assert_eq(*cl_percpu_ptr_stride(c, i, st), 0, "kind %d: nothing stored", (int)k);
	}
	cr_assert_eq(cl_percpu_free(pool, c), 0);
	cl_percpu_pool_destroy(pool);
}

/*
 * A pinned thread's buffer of 4 slots: the fifth push finds it full, the
 * pops come back LIFO, then it is empty (checked for the CPU index; an
 * mm_cid may move). Inlined, so a constant @st stays one.
 */
CL_ALWAYS_INLINE void buf_round_trip_pinned(struct cl_percpu_pool *pool, struct buf *b, size_t st,
					    enum cl_rseq_index kind, int cpu)
{
	long vals[6];
	void *out = NULL;
	int i, first = -1;

	/* buffer: 4 slots; the fifth push of a pinned thread finds it full */
	for (int j = 0; j < 6; j++) {
		i = cl_percpu_buf_push(kind, &b->count, st, b->items, 4, &vals[j],
				       CL_RSEQ_MO_RELEASE);
		if (kind == CL_RSEQ_INDEX_CPU_ID) {
			if (j < 4)
				cr_assert_eq(i, cpu);
			else
				cr_assert_eq(i, CL_PERCPU_CMPFAIL, "full");
		}
		if (j == 0)
			first = i;
	}
	if (kind == CL_RSEQ_INDEX_CPU_ID) {
		struct buf *mine = cl_percpu_ptr_stride(b, first, st);

		cr_assert_eq(mine->count, 4);
		for (int j = 0; j < 4; j++)
			cr_assert_eq(mine->items[j], (void *)&vals[j]);
		for (int j = 3; j >= 0; j--) {
			cr_assert_eq(cl_percpu_buf_pop(kind, &b->count, st, b->items, &out),
				     first);
			cr_assert_eq(out, (void *)&vals[j], "LIFO");
		}
		cr_assert_eq(cl_percpu_buf_pop(kind, &b->count, st, b->items, &out),
			     CL_PERCPU_CMPFAIL, "empty");
	}
	for (unsigned c = 0; c < cl_percpu_pool_nr_cpus(pool); c++)
		cl_percpu_ptr_stride(b, c, st)->count = 0;
}

Test(percpu_path, list_and_buffer_round_trip_pinned)
{
	struct cl_percpu_pool *pool = test_pool();
	size_t st = cl_percpu_pool_stride(pool);
	void **head = cl_percpu_alloc(pool, sizeof(void *), sizeof(void *));
	struct buf *b = cl_percpu_alloc(pool, sizeof(*b), sizeof(void *));
	int cpus[64], ncpu = cl_test_allowed_cpus(cpus, 64);
	struct node nodes[8];

	cr_assert_not_null(head);
	cr_assert_not_null(b);
	cr_assert_eq(cl_test_pin(cpus[ncpu - 1]), 0);
	for (int k = 0; k < 2; k++) {
		void *out = NULL;
		int i;

		for (int j = 0; j < 8; j++) {
			i = cl_percpu_list_push(modes[k], head, st, offsetof(struct node, next), &nodes[j]);
			cr_assert_geq(i, 0);
			if (modes[k] == CL_RSEQ_INDEX_CPU_ID)
				cr_assert_eq(i, cpus[ncpu - 1], "pinned: the pinned CPU's list");
		}
		for (int j = 0; j < 8; j++) {
			i = cl_percpu_list_pop(modes[k], head, st, offsetof(struct node, next), &out);
			if (i == CL_PERCPU_CMPFAIL) /* mm_cid moved: the rest is on another list */
				break;
			cr_assert_geq(i, 0);
			if (modes[k] == CL_RSEQ_INDEX_CPU_ID)
				cr_assert_eq(out, (void *)&nodes[7 - j], "LIFO");
		}
		if (modes[k] == CL_RSEQ_INDEX_CPU_ID)
			cr_assert_eq(cl_percpu_list_pop(modes[k], head, st, offsetof(struct node, next), &out),
				     CL_PERCPU_CMPFAIL, "empty");
		for (unsigned c = 0; c < cl_percpu_pool_nr_cpus(pool); c++)
			*cl_percpu_ptr_stride(head, c, st) = NULL;

		buf_round_trip_pinned(pool, b, st, modes[k], cpus[ncpu - 1]);
	}
	cl_percpu_pool_destroy(pool);
}

/*
 * The same buffer in a pool's default stride, a constant: on x86-64 the
 * per-CPU path takes the packed sections there (slots right after the
 * count, the copy one shift away, the item returned in a register).
 */
Test(percpu_path, buffer_round_trip_pinned_constant_stride)
{
	struct cl_percpu_pool *pool = test_pool();
	struct buf *b = cl_percpu_alloc(pool, sizeof(*b), sizeof(void *));
	int cpus[64], ncpu = cl_test_allowed_cpus(cpus, 64);

	cr_assert_not_null(b);
	cr_assert_eq(cl_percpu_pool_stride(pool), CL_PERCPU_STRIDE, "a default pool");
	cr_assert_eq(cl_test_pin(cpus[ncpu - 1]), 0);
	for (int k = 0; k < 2; k++)
		buf_round_trip_pinned(pool, b, CL_PERCPU_STRIDE, k ? CL_RSEQ_INDEX_MM_CID : CL_RSEQ_INDEX_CPU_ID,
				      cpus[ncpu - 1]);
	cl_percpu_pool_destroy(pool);
}

/*
 * A buffer push with CL_RSEQ_MO_RELEASE publishes the item to a reader on
 * another CPU that loads the count with acquire: the reader sees the
 * fields written before the push (plain stores; under TSan, where the
 * fallback runs, a relaxed commit would be reported as a race here).
 */
struct msg {
	long a, b;
};

struct pub_arg {
	struct buf *b; /* the producer's copy */
	int cpu;
	long bad;
};

static void *release_reader(void *p)
{
	struct pub_arg *a = p;
	intptr_t seen = 0;

	cl_test_pin(a->cpu);
	while (seen < 4) {
		intptr_t n = __atomic_load_n(&a->b->count, __ATOMIC_ACQUIRE);

		for (; seen < n; seen++) {
			const struct msg *m = a->b->items[seen];

			if (m->a != seen * 10 || m->b != seen * 10 + 1)
				a->bad++;
		}
	}
	return NULL;
}

Test(percpu_path, release_push_publishes_to_another_cpu)
{
	struct cl_percpu_pool *pool = test_pool();
	size_t st = cl_percpu_pool_stride(pool);
	struct buf *b = cl_percpu_alloc(pool, sizeof(*b), sizeof(void *));
	int cpus[64], n = cl_test_allowed_cpus(cpus, 64);
	struct msg msgs[4];
	struct pub_arg arg;
	pthread_t t;

	cr_assert_not_null(b);
	cr_assert_eq(cl_test_pin(cpus[0]), 0);
	arg = (struct pub_arg){ cl_percpu_ptr_stride(b, cpus[0], st), cpus[n - 1], 0 };
	if (cl_rseq_ops_mode() != CL_RSEQ_OPS_RSEQ) /* fallback: copy of cl_cpu_id() */
		arg.b = cl_percpu_ptr_stride(b, cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID), st);
	cr_assert_eq(pthread_create(&t, NULL, release_reader, &arg), 0);
	for (long i = 0; i < 4; i++) {
		msgs[i].a = i * 10;
		msgs[i].b = i * 10 + 1;
		cr_assert_eq(cl_percpu_buf_push(CL_RSEQ_INDEX_CPU_ID, &b->count, st, b->items, 4,
						&msgs[i], CL_RSEQ_MO_RELEASE),
			     cl_rseq_current_index(CL_RSEQ_INDEX_CPU_ID), "pinned: own copy");
	}
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_eq(arg.bad, 0, "reader saw unpublished fields");
	cl_percpu_pool_destroy(pool);
}
