/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_slice.c - slice.h and the locks' use of it: the mode and
 * its reason against what the running kernel says (auxv, the area's flags,
 * prctl), the v2 registration of our own area, the request protocol of
 * every lock (set after the lock is taken, cleared at the unlock, nesting,
 * the yield when granted), the per-thread opt-out. Run by `make check` in
 * the three id modes (CL_TEST_MODE: default, glibc-off, no-rseq).
 *
 * CL_TEST_EXPECT_SLICE=on|off, when set, is what the run must find (the
 * guest plans set it on the kernels where the answer is known: on for a
 * v2 area on x86_64 7.3, off under glibc's 32-byte area).
 */
#include <cachelocal/brlock.h>
#include <cachelocal/slice.h>
#include <cachelocal/spinlock.h>

#include <errno.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cl_test.h"

_Static_assert(offsetof(struct cl_rseq_abi, slice_ctrl) == 28, "slice_ctrl at 28 (uapi)");
_Static_assert(sizeof(struct cl_rseq_abi) == 32, "the legacy struct stays 32 bytes");

static int mode_is(const char *m)
{
	return strcmp(cl_test_mode(), m) == 0;
}

/* The kernel's own answer: is the extension enabled for this thread? */
static long kernel_slice_enabled(void)
{
	return syscall(SYS_prctl, 79 /* PR_RSEQ_SLICE_EXTENSION */, 1 /* _GET */, 0, 0, 0);
}

/* ---- the mode and its reason, against the kernel ---- */

Test(slice, mode_matches_the_kernel)
{
	enum cl_slice_ext_mode m = cl_slice_ext_mode();
	unsigned long aux = getauxval(27);
	struct cl_rseq_abi *a = cl_rseq_abi_get();
	const char *want = getenv("CL_TEST_EXPECT_SLICE");

	cr_log_info("slice extension: %s (AT_RSEQ_FEATURE_SIZE %lu, AT_RSEQ_ALIGN %lu, v2 %d)",
		    cl_slice_ext_mode_name(m), aux, getauxval(28), cl_rseq_abi_v2());
	cr_assert_eq(cl_slice_ext_mode(), m, "the answer is remembered");
	if (!CL_SLICE_EXT) {
		cr_assert_eq(m, CL_SLICE_EXT_OFF_BUILD);
		return;
	}
	if (mode_is("no-rseq")) {
		cr_assert_null(a);
		cr_assert_eq(m, CL_SLICE_EXT_OFF_NO_RSEQ, "%s", cl_slice_ext_mode_name(m));
	} else if (aux >= 33 && mode_is("glibc-off") && cl__rseq_feature_cap((unsigned)aux) < 33) {
		/* the test knob CL_TEST_RSEQ_FEATURE_SIZE_MAX made our own area
		 * a 32-byte one on a kernel with v2 */
		cr_assert_eq(cl_rseq_abi_v2(), 0);
		cr_assert_eq(m, CL_SLICE_EXT_OFF_LEGACY_AREA, "%s", cl_slice_ext_mode_name(m));
	} else if (aux < 33) {
		/* before RSEQ ABI v2 (this machine's 6.x): no extension ABI */
		cr_assert_eq(m, CL_SLICE_EXT_OFF_KERNEL, "%s", cl_slice_ext_mode_name(m));
		cr_assert_eq(cl_rseq_abi_v2(), 0, "a kernel without v2 gets 32 bytes");
	} else if (mode_is("default") && cl_rseq_owned_by_glibc() && cl__glibc_rseq_size <= 32) {
		cr_assert_eq(m, CL_SLICE_EXT_OFF_GLIBC_32, "%s", cl_slice_ext_mode_name(m));
		cr_assert_eq(cl_rseq_abi_v2(), 0);
		/* 0, or ENOTSUPP (524) where the kernel was built without it */
		cr_assert_leq(kernel_slice_enabled(), 0, "the kernel agrees it is off");
	} else if (mode_is("glibc-off")) {
		/* our own area, registered with the v2 length */
		cr_assert_eq(cl_rseq_abi_v2(), 1);
		cr_assert_eq((uintptr_t)a % 64, 0u, "v2 needs AT_RSEQ_ALIGN (64) alignment");
		cr_assert_geq(CL_READ_ONCE(cl__rseq_counters.v2), 1ul);
		if (kernel_slice_enabled() == 1) {
			cr_assert_eq(m, CL_SLICE_EXT_ON, "%s", cl_slice_ext_mode_name(m));
			cr_assert(CL_READ_ONCE(a->flags) & CL_RSEQ_FLAG_SLICE_EXT_ENABLED);
		} else {
			/* v2 without the extension: arm64 7.3 (no generic syscall
			 * entry), or rseq_slice_ext=0 on the command line */
			cr_assert_eq(m, CL_SLICE_EXT_OFF_KERNEL_CONFIG, "%s",
				     cl_slice_ext_mode_name(m));
			cr_assert_eq(CL_READ_ONCE(a->flags) & CL_RSEQ_FLAG_SLICE_EXT_AVAILABLE, 0u);
		}
	}
	if (want != NULL && *want) {
		if (strcmp(want, "on") == 0)
			cr_assert_eq(m, CL_SLICE_EXT_ON, "expected on, got %s",
				     cl_slice_ext_mode_name(m));
		else
			cr_assert_neq(m, CL_SLICE_EXT_ON, "expected off, got on");
	}
	/* what the locks read agrees with the mode */
	cr_assert_eq(cl__slice_thread.req != NULL, m == CL_SLICE_EXT_ON);
}

Test(slice, mode_names)
{
	cr_assert_str_eq(cl_slice_ext_mode_name(CL_SLICE_EXT_ON), "on");
	cr_assert_str_eq(cl_slice_ext_mode_name(CL_SLICE_EXT_OFF_GLIBC_32),
			 "off (glibc registered 32 bytes)");
	cr_assert_str_eq(cl_slice_ext_mode_name(CL_SLICE_EXT_OFF_KERNEL), "off (kernel)");
	cr_assert_str_eq(cl_slice_ext_mode_name(CL_SLICE_EXT_OFF_PRCTL), "off (prctl refused)");
	cr_assert_str_eq(cl_slice_ext_mode_name(CL_SLICE_EXT_OFF_DENIED), "off (denied)");
	cr_assert_str_eq(cl_slice_ext_mode_name((enum cl_slice_ext_mode)99), "unknown");
}

Test(slice, own_area_length_rule)
{
	cr_assert_eq(cl__rseq_own_len(0, 0), 32u, "no auxv: legacy");
	cr_assert_eq(cl__rseq_own_len(28, 32), 32u, "6.3-6.19: legacy");
	cr_assert_eq(cl__rseq_own_len(32, 32), 32u, "32 is the legacy size itself");
	cr_assert_eq(cl__rseq_own_len(33, 64), 64u, "7.x v2: 64 bytes");
	cr_assert_eq(cl__rseq_own_len(64, 64), 64u);
	cr_assert_eq(cl__rseq_own_len(65, 128), 32u, "a feature size past our block: legacy");
	cr_assert_eq(cl__rseq_own_len(40, 128), 32u, "an alignment past our block: legacy");
}

/* ---- the request protocol, on a stand-in control word ----
 * These point the thread's request pointer at a local word, so they run on
 * every kernel; the kernel never sees that word. */

static struct cl_rseq_slice_ctrl fake;

static void fake_on(void)
{
	memset(&fake, 0, sizeof(fake));
	cl__slice_thread.req = &fake.request;
	cl__slice_thread.depth = 0;
}

static void fake_off(void)
{
	cl__slice_thread.req = NULL;
	cl__slice_thread.depth = 0;
}

Test(slice, every_lock_requests_while_held)
{
	struct cl_spinlock s = CL_SPINLOCK_INIT;
	struct cl_ticketlock t = CL_TICKETLOCK_INIT;
	struct cl_mcslock m = CL_MCSLOCK_INIT;
	struct cl_mcs_node n;

	if (!CL_SLICE_EXT)
		cr_skip_test("built with CL_SLICE_EXT=0");
	fake_on();
	cl_spin_lock(&s);
	cr_assert_eq(fake.request, 1, "TTAS: request set while held");
	cl_spin_unlock(&s);
	cr_assert_eq(fake.request, 0, "TTAS: cleared at unlock");
	cr_assert_eq(cl_spin_trylock(&s), 1);
	cr_assert_eq(fake.request, 1, "TTAS trylock");
	cr_assert_eq(cl_spin_trylock(&s), 0, "held: fails");
	cr_assert_eq(cl__slice_thread.depth, 1u, "a failed trylock asks nothing");
	cl_spin_unlock(&s);
	cr_assert_eq(fake.request, 0);

	cl_ticket_lock(&t);
	cr_assert_eq(fake.request, 1, "ticket");
	cr_assert_eq(cl_ticket_unlock(&t), 0);
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl_ticket_trylock(&t), 1);
	cr_assert_eq(fake.request, 1, "ticket trylock");
	cr_assert_eq(cl_ticket_unlock(&t), 0);
	cr_assert_eq(fake.request, 0);

	cl_mcs_lock(&m, &n);
	cr_assert_eq(fake.request, 1, "MCS");
	cr_assert_eq(cl_mcs_unlock(&m, &n), 0);
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl_mcs_trylock(&m, &n), 1);
	cr_assert_eq(fake.request, 1, "MCS trylock");
	cr_assert_eq(cl_mcs_unlock(&m, &n), 0);
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl__slice_thread.depth, 0u);
	fake_off();
}

Test(slice, noslice_forms_ask_nothing)
{
	struct cl_spinlock s = CL_SPINLOCK_INIT;
	struct cl_ticketlock t = CL_TICKETLOCK_INIT;

	fake_on();
	cl_spin_lock_noslice(&s);
	cr_assert_eq(fake.request, 0, "a section that makes system calls does not ask");
	cr_assert_eq(cl__slice_thread.depth, 0u);
	cl_spin_unlock_noslice(&s);
	cr_assert_eq(cl_spin_is_locked(&s), 0);
	cl_ticket_lock_noslice(&t);
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl_ticket_is_locked(&t), 1);
	cr_assert_eq(cl_ticket_unlock_noslice(&t), 0);
	cr_assert_eq(cl_ticket_is_locked(&t), 0);
	cr_assert_eq(cl__slice_thread.depth, 0u);
	/* inside an asking section, a _noslice one leaves the request alone */
	cl_spin_lock(&s);
	cl_ticket_lock_noslice(&t);
	cr_assert_eq(cl_ticket_unlock_noslice(&t), 0);
	cr_assert_eq(fake.request, CL_SLICE_EXT ? 1 : 0);
	cl_spin_unlock(&s);
	cr_assert_eq(fake.request, 0);
	fake_off();
}

Test(slice, misuse_asks_nothing)
{
	struct cl_ticketlock t = CL_TICKETLOCK_INIT;
	struct cl_mcslock m = CL_MCSLOCK_INIT;
	struct cl_mcs_node n;

	memset(&n, 0, sizeof(n));
	fake_on();
	errno = 0;
	cr_assert_eq(cl_ticket_unlock(&t), -1, "unlock of a free ticket lock");
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_mcs_unlock(&m, &n), -1, "unlock of a free MCS lock");
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl__slice_thread.depth, 0u, "a refused unlock ends nothing");
	fake_off();
}

Test(slice, sections_nest)
{
	struct cl_spinlock a = CL_SPINLOCK_INIT, b = CL_SPINLOCK_INIT;

	if (!CL_SLICE_EXT)
		cr_skip_test("built with CL_SLICE_EXT=0");
	fake_on();
	cl_spin_lock(&a);
	cl_spin_lock(&b);
	cr_assert_eq(cl__slice_thread.depth, 2u);
	cl_spin_unlock(&b);
	cr_assert_eq(fake.request, 1, "the outer section still asks");
	cl_slice_begin();
	cl_slice_end();
	cr_assert_eq(fake.request, 1, "an inner public section too");
	cl_spin_unlock(&a);
	cr_assert_eq(fake.request, 0, "the outermost end clears it");
	/* an end with no begin in this thread (a lock released by another
	 * thread than its taker) changes nothing */
	cl_slice_end();
	cr_assert_eq(cl__slice_thread.depth, 0u);
	cr_assert_eq(fake.request, 0);
	fake_off();
}

Test(slice, a_grant_is_given_back)
{
	struct cl_spinlock s = CL_SPINLOCK_INIT;
	struct cl_slice_stats before, after;

	if (!CL_SLICE_EXT)
		cr_skip_test("built with CL_SLICE_EXT=0");
	fake_on();
	cl_slice_stats_thread(&before);
	cl_spin_lock(&s);
	/* what the kernel does when it grants: request cleared, granted set */
	fake.request = 0;
	fake.granted = 1;
	errno = 1234;
	cl_spin_unlock(&s);
	cl_slice_stats_thread(&after);
	cr_assert_eq(errno, 1234, "the yield leaves errno alone");
	cr_assert_eq(after.sections, before.sections + 1);
	cr_assert_eq(after.granted, before.granted + 1, "the unlock saw the grant");
	/* the stand-in word is not the kernel's: rseq_slice_yield() finds no
	 * live grant (returns 0, or ENOSYS before 7.0), so nothing yielded */
	cr_assert_eq(after.yielded, before.yielded);
	fake_off();
}

Test(slice, off_costs_no_write)
{
	struct cl_spinlock s = CL_SPINLOCK_INIT;
	struct cl_rseq_abi *a;
	uint32_t before;

	if (cl_slice_ext_mode() == CL_SLICE_EXT_ON)
		cr_skip_test("the extension is on here");
	a = cl_rseq_abi_get();
	cr_assert_null(cl__slice_thread.req, "off: the locks read NULL");
	if (a == NULL)
		return;
	before = CL_READ_ONCE(*(uint32_t *)(void *)&a->slice_ctrl);
	for (int i = 0; i < 1000; i++) {
		cl_spin_lock(&s);
		cl_spin_unlock(&s);
	}
	cr_assert_eq(CL_READ_ONCE(*(uint32_t *)(void *)&a->slice_ctrl), before,
		     "the area's bytes 28-31 (glibc's or a legacy area's) are untouched");
}

/* ---- on the kernel's word, where the extension is on ---- */

Test(slice, live_request_in_the_area)
{
	struct cl_spinlock s = CL_SPINLOCK_INIT;
	struct cl_rseq_abi *a;
	uint8_t r;

	if (cl_slice_ext_mode() != CL_SLICE_EXT_ON)
		cr_skip_test("extension %s", cl_slice_ext_mode_name(cl_slice_ext_mode()));
	a = cl_rseq_abi_get();
	cr_assert_eq(cl__slice_thread.req, &a->slice_ctrl.request);
	cl_spin_lock(&s);
	r = CL_READ_ONCE(a->slice_ctrl.request);
	/* the kernel may have granted in between: request cleared, granted set */
	cr_assert(r == 1 || CL_READ_ONCE(a->slice_ctrl.granted) == 1, "request %u", r);
	cl_spin_unlock(&s);
	cr_assert_eq(CL_READ_ONCE(a->slice_ctrl.request), 0);
}

static void *opt_thread(void *arg)
{
	int *out = arg;
	struct cl_spinlock s = CL_SPINLOCK_INIT;

	out[0] = (int)cl_slice_ext_mode();
	out[1] = cl_slice_ext_set_thread(0);
	out[2] = (int)cl_slice_ext_mode();
	out[3] = cl__slice_thread.req == NULL;
	cl_spin_lock(&s);
	out[4] = (int)cl__slice_thread.depth; /* 0: nothing asked */
	cl_spin_unlock(&s);
	errno = 0;
	out[5] = cl_slice_ext_set_thread(1);
	out[6] = errno;
	out[7] = (int)cl_slice_ext_mode();
	return NULL;
}

Test(slice, per_thread_opt_out)
{
	pthread_t th;
	int out[8];

	cr_assert_eq(pthread_create(&th, NULL, opt_thread, out), 0);
	pthread_join(th, NULL);
	cr_assert_eq(out[1], 0);
	cr_assert_eq(out[2], CL_SLICE_EXT_OFF_THREAD);
	cr_assert_eq(out[3], 1);
	cr_assert_eq(out[4], 0, "an opted-out thread's lock asks nothing");
	/* back on: the first answer again */
	cr_assert_eq(out[7], out[0], "%s vs %s",
		     cl_slice_ext_mode_name((enum cl_slice_ext_mode)out[7]),
		     cl_slice_ext_mode_name((enum cl_slice_ext_mode)out[0]));
	if (out[0] == CL_SLICE_EXT_ON)
		cr_assert_eq(out[5], 0);
	else
		cr_assert(out[5] == -1 && out[6] == ENOTSUP);
}

Test(slice, set_thread_refuses_inside_a_section)
{
	fake_on();
	cl_slice_begin();
	errno = 0;
	cr_assert_eq(cl_slice_ext_set_thread(0), -1);
	cr_assert_eq(errno, EBUSY);
	cl_slice_end();
	errno = 0;
	cr_assert_eq(cl_slice_ext_set_thread(2), -1);
	cr_assert_eq(errno, EINVAL);
	fake_off();
}

/* brlock's writer asks too */
Test(slice, brlock_writer_requests)
{
	struct cl_brlock l;

	if (!CL_SLICE_EXT)
		cr_skip_test("built with CL_SLICE_EXT=0");
	cr_assert_eq(cl_brlock_init(&l), 0);
	fake_on();
	cr_assert_eq(cl_brlock_write_lock(&l), 0);
	cr_assert_eq(fake.request, 1, "the writer's section asks");
	cr_assert_eq(cl_brlock_write_unlock(&l), 0);
	cr_assert_eq(fake.request, 0);
	cr_assert_eq(cl__slice_thread.depth, 0u);
	fake_off();
	cl_brlock_destroy(&l);
}
