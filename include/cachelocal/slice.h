/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/slice.h - the rseq time-slice extension (Linux 7.0+): a thread
 * asks the kernel not to preempt it inside a short critical section; a
 * kernel that wants the CPU then grants it a few microseconds more (5 us by
 * default, at most 50 us, enforced by a timer) and the thread gives the CPU
 * back with rseq_slice_yield() as soon as the section ends.
 *
 *	enum cl_slice_ext_mode m = cl_slice_ext_mode();  // sets it up here
 *	printf("slice extension: %s\n", cl_slice_ext_mode_name(m));
 *
 *	cl_slice_begin();       // cachelocal's locks do this themselves
 *	... a few hundred ns, no system call ...
 *	cl_slice_end();         // yields if the kernel granted
 *
 * cachelocal's locks (spinlock.h: TTAS, ticket, MCS; brlock.h's writer; and
 * through them the reference runqueue's locks) begin a request when they
 * have taken the lock and end it when they let it go, in every thread where
 * the extension is on. A lock holder that is not preempted does not hold
 * everyone else up (the convoy of a fair lock whose next holder waits for a
 * CPU).
 *
 * When is it on (cl_slice_ext_mode(), per thread):
 *   - the kernel has it: Linux 7.0+ built with CONFIG_RSEQ_SLICE_EXTENSION
 *     (x86_64 in Debian's 7.3; not arm64, where the option needs the
 *     generic syscall entry arm64 does not use in 7.3), not turned off
 *     with rseq_slice_ext=0 on its command line;
 *   - the thread's rseq area is registered as RSEQ ABI v2: longer than 32
 *     bytes (the kernel's AT_RSEQ_FEATURE_SIZE, 33 in 7.0-7.3, and aligned
 *     to AT_RSEQ_ALIGN, 64). cachelocal registers its own area that way
 *     and asks for the extension in the same system call
 *     (RSEQ_FLAG_SLICE_EXT_DEFAULT_ON); Debian 12's glibc (2.36) registers
 *     32 bytes, so under its registration it is off, "glibc registered 32
 *     bytes". The recipe on Debian 12:
 *
 *	GLIBC_TUNABLES=glibc.pthread.rseq=0 ./program
 *
 *     and cachelocal registers a v2 area in each thread;
 *   - the build did not opt out (CL_SLICE_EXT=0) and the thread did not
 *     (cl_slice_ext_set_thread(0)).
 * A thread whose area cachelocal registers gets it at that registration
 * (the first id request, rseq operation or cl_slice_ext_mode() in the
 * thread); under a registration by glibc or librseq that is v2, at its
 * first cl_slice_ext_mode() (a prctl).
 *
 * What a section must not do: make a system call. The kernel ends a grant
 * at any system call other than rseq_slice_yield() (and would otherwise let
 * the call run on borrowed time). So a lock whose holder may block
 * (futex, I/O) should not request; cachelocal's locks never block while
 * held. Their waits (sched_yield, futex) happen before the request begins.
 *
 * The cost where it is off: the locks' begin and end each load one
 * thread-local pointer and branch on it (docs/slice.md has the numbers).
 *
 * Synchronization: all state is per thread; every call acts on the calling
 * thread only and is async-signal-safe except cl_slice_ext_mode() and
 * cl_slice_ext_set_thread() (the first call in a thread may register rseq
 * and call prctl).
 *
 * Verified against Debian's linux-source-7.3 (7.3.4): kernel/rseq.c
 * (rseq_register(), rseq_length_valid(), rseq_slice_extension_prctl(),
 * sys_rseq_slice_yield()), include/uapi/linux/rseq.h, init/Kconfig
 * (RSEQ_SLICE_EXTENSION), Documentation/userspace-api/rseq.rst
 * (docs/slice.md lists what was checked where).
 */
#ifndef CACHELOCAL_SLICE_H
#define CACHELOCAL_SLICE_H

#include <errno.h>
#include <sys/auxv.h>

#include "compiler.h"
#include "internal/slice.h"
#include "rseq.h"

CL_BEGIN_DECLS

/**
 * enum cl_slice_ext_mode - whether the calling thread's locks ask for the
 * time-slice extension, and if not, why not.
 * @CL_SLICE_EXT_ON: they do.
 * @CL_SLICE_EXT_OFF_BUILD: built with CL_SLICE_EXT=0.
 * @CL_SLICE_EXT_OFF_THREAD: the thread turned it off (cl_slice_ext_set_thread()).
 * @CL_SLICE_EXT_OFF_NO_RSEQ: the thread has no rseq area (rseq failed:
 *	kernel, seccomp, architecture).
 * @CL_SLICE_EXT_OFF_KERNEL: the kernel has no extension ABI (its
 *	AT_RSEQ_FEATURE_SIZE is below 33: before Linux 7.0's RSEQ ABI v2).
 * @CL_SLICE_EXT_OFF_KERNEL_CONFIG: the area is v2 but the kernel does not
 *	offer the extension (not built for this architecture, e.g. arm64 in
 *	7.3, or turned off at boot with rseq_slice_ext=0).
 * @CL_SLICE_EXT_OFF_GLIBC_32: glibc registered the area with 32 bytes (a
 *	legacy, v1 registration: the kernel offers no extension to it).
 * @CL_SLICE_EXT_OFF_LEGACY_AREA: another registration the kernel offers
 *	no extension to: cachelocal's own with 32 bytes (the test knob
 *	CL_TEST_RSEQ_FEATURE_SIZE_MAX below 33), or librseq's.
 * @CL_SLICE_EXT_OFF_PRCTL: offered, but prctl(PR_RSEQ_SLICE_EXTENSION)
 *	refused to turn it on.
 * @CL_SLICE_EXT_OFF_DENIED: the prctl was denied (EPERM or ENOSYS: a
 *	seccomp filter).
 */
enum cl_slice_ext_mode {
	CL_SLICE_EXT_ON,
	CL_SLICE_EXT_OFF_BUILD,
	CL_SLICE_EXT_OFF_THREAD,
	CL_SLICE_EXT_OFF_NO_RSEQ,
	CL_SLICE_EXT_OFF_KERNEL,
	CL_SLICE_EXT_OFF_KERNEL_CONFIG,
	CL_SLICE_EXT_OFF_GLIBC_32,
	CL_SLICE_EXT_OFF_LEGACY_AREA,
	CL_SLICE_EXT_OFF_PRCTL,
	CL_SLICE_EXT_OFF_DENIED
};

/**
 * struct cl_slice_stats - the calling thread's extension counts.
 * @sections: outermost sections that requested an extension.
 * @granted: of those, the ones the kernel granted (it wanted the CPU and
 *	let the thread run on): each was a preemption the lock holder avoided.
 * @yielded: of the granted, those whose rseq_slice_yield() found the grant
 *	still live (the rest the kernel had already ended: timer, interrupt).
 */
struct cl_slice_stats {
	unsigned long sections;
	unsigned long granted;
	unsigned long yielded;
};

/* getauxval() key of the kernel's rseq feature size (uapi linux/auxvec.h). */
#define CL__SLICE_AT_RSEQ_FEATURE_SIZE 27

/* prctl(2) constants (uapi linux/prctl.h, Linux 7.0+). */
#define CL__PR_RSEQ_SLICE_EXTENSION 79
#define CL__PR_RSEQ_SLICE_EXTENSION_SET 2
#define CL__PR_RSEQ_SLICE_EXT_ENABLE 1

/*
 * Why a live area @a without the extension enabled does not have it (or
 * the prctl turned it on: CL_SLICE_EXT_ON).
 */
CL_INLINE enum cl_slice_ext_mode cl__slice_decide_live(const struct cl_rseq_abi *a)
{
	uint32_t fl = CL_ATOMIC_LOAD(&a->flags, CL_RELAXED);
	int e, v2;

	if (fl & CL_RSEQ_FLAG_SLICE_EXT_ENABLED)
		return CL_SLICE_EXT_ON;
	if (!(fl & CL_RSEQ_FLAG_SLICE_EXT_AVAILABLE)) {
		if (getauxval(CL__SLICE_AT_RSEQ_FEATURE_SIZE) < CL_RSEQ_FEATURE_SIZE_SLICE_EXT)
			return CL_SLICE_EXT_OFF_KERNEL;
		v2 = cl_rseq_abi_v2();
		if (v2 == 1)
			return CL_SLICE_EXT_OFF_KERNEL_CONFIG;
		if (v2 == 0 && cl_rseq_owned_by_glibc())
			return CL_SLICE_EXT_OFF_GLIBC_32;
		return CL_SLICE_EXT_OFF_LEGACY_AREA;
	}
	if (syscall(SYS_prctl, CL__PR_RSEQ_SLICE_EXTENSION, CL__PR_RSEQ_SLICE_EXTENSION_SET,
		    CL__PR_RSEQ_SLICE_EXT_ENABLE, 0, 0) == 0)
		return CL_SLICE_EXT_ON;
	e = errno;
	return e == EPERM || e == ENOSYS ? CL_SLICE_EXT_OFF_DENIED : CL_SLICE_EXT_OFF_PRCTL;
}

/* cl_slice_ext_mode()'s first call in a thread. */
CL_NOINLINE CL_COLD CL_UNUSED static enum cl_slice_ext_mode cl__slice_decide(void)
{
	struct cl__slice_thread *t = &cl__slice_thread;
	enum cl_slice_ext_mode m;
	struct cl_rseq_abi *a;
	int saved = errno;

	if (!CL_SLICE_EXT) {
		m = CL_SLICE_EXT_OFF_BUILD;
	} else if (t->optout) {
		m = CL_SLICE_EXT_OFF_THREAD;
	} else if ((a = cl_rseq_abi_get()) == NULL) {
		m = CL_SLICE_EXT_OFF_NO_RSEQ;
	} else {
		m = cl__slice_decide_live(a);
		if (m == CL_SLICE_EXT_ON && !cl__rseq_thread_is_dead())
			CL_ATOMIC_STORE(&t->req, &a->slice_ctrl.request, CL_RELAXED);
	}
	t->mode = 1 + (int)m;
	errno = saved;
	return m;
}

/**
 * cl_slice_ext_mode() - whether this thread's locks ask for the time-slice
 * extension, turning it on first where it can be.
 *
 * The first call in a thread registers its rseq area if cachelocal owns it
 * (as any id request does) and, where the kernel offers the extension to
 * the thread's registration but it is not on yet, turns it on with
 * prctl(PR_RSEQ_SLICE_EXTENSION). Later calls return the same answer.
 * Benchmarks print it (cl_slice_ext_mode_name()).
 *
 * Context: any thread; not from a signal handler before its first call.
 * Return: CL_SLICE_EXT_ON, or the reason it is off.
 */
CL_INLINE enum cl_slice_ext_mode cl_slice_ext_mode(void)
{
	int m = CL_ATOMIC_LOAD(&cl__slice_thread.mode, CL_RELAXED);

	if (m > 0)
		return (enum cl_slice_ext_mode)(m - 1);
	return cl__slice_decide();
}

/**
 * cl_slice_ext_mode_name() - printable form of a mode.
 * @m: a mode from cl_slice_ext_mode().
 *
 * Context: any.
 * Return: "on", or "off (REASON)" with REASON one of "build", "thread opted
 * out", "no rseq", "kernel", "kernel config", "glibc registered 32 bytes",
 * "32-byte area", "prctl refused", "denied"; "unknown" outside the enum.
 */
CL_INLINE const char *cl_slice_ext_mode_name(enum cl_slice_ext_mode m)
{
	switch (m) {
	case CL_SLICE_EXT_ON: return "on";
	case CL_SLICE_EXT_OFF_BUILD: return "off (build)";
	case CL_SLICE_EXT_OFF_THREAD: return "off (thread opted out)";
	case CL_SLICE_EXT_OFF_NO_RSEQ: return "off (no rseq)";
	case CL_SLICE_EXT_OFF_KERNEL: return "off (kernel)";
	case CL_SLICE_EXT_OFF_KERNEL_CONFIG: return "off (kernel config)";
	case CL_SLICE_EXT_OFF_GLIBC_32: return "off (glibc registered 32 bytes)";
	case CL_SLICE_EXT_OFF_LEGACY_AREA: return "off (32-byte area)";
	case CL_SLICE_EXT_OFF_PRCTL: return "off (prctl refused)";
	case CL_SLICE_EXT_OFF_DENIED: return "off (denied)";
	}
	return "unknown";
}

/**
 * cl_slice_ext_set_thread() - turn the calling thread's requests off or on.
 * @on: 0 to stop asking (the per-thread opt-out), 1 to ask again.
 *
 * Off takes effect at once; on decides the mode again (cl_slice_ext_mode()).
 * The kernel's own per-thread switch is left as it is: a thread that does
 * not request is never granted anything.
 *
 * Context: the calling thread, outside any lock of cachelocal's.
 * Return: 0 when the thread is now in the asked state; -1 with errno EBUSY
 * inside a section (nothing changed), ENOTSUP when @on is 1 but the
 * extension cannot be on (cl_slice_ext_mode() says why), EINVAL for @on
 * other than 0 or 1.
 */
CL_INLINE int cl_slice_ext_set_thread(int on)
{
	struct cl__slice_thread *t = &cl__slice_thread;

	if (CL__BAD_ARG(on != 0 && on != 1))
		return -1;
	if (t->depth != 0) {
		errno = EBUSY;
		return -1;
	}
	if (!on) {
		t->optout = 1;
		CL_ATOMIC_STORE(&t->req, (uint8_t *)NULL, CL_RELAXED);
		t->mode = 1 + (int)CL_SLICE_EXT_OFF_THREAD;
		return 0;
	}
	t->optout = 0;
	t->mode = 0;
	if (cl_slice_ext_mode() != CL_SLICE_EXT_ON) {
		errno = ENOTSUP;
		return -1;
	}
	return 0;
}

/**
 * cl_slice_begin() - begin a section that asks not to be preempted.
 *
 * For sections of the caller's own that are not protected by one of
 * cachelocal's locks (these call it themselves). Sections nest; only the
 * outermost asks. Must be paired with cl_slice_end() in the same thread,
 * with no system call between them.
 *
 * Context: any thread, async-signal-safe; costs one thread-local load and
 * one branch where the extension is off.
 */
CL_ALWAYS_INLINE void cl_slice_begin(void)
{
	cl__slice_begin();
}

/**
 * cl_slice_end() - end the section cl_slice_begin() began.
 *
 * The outermost end withdraws the request and, if the kernel granted an
 * extension meanwhile, gives the CPU back (rseq_slice_yield()).
 *
 * Context: the thread that called cl_slice_begin(); async-signal-safe.
 */
CL_ALWAYS_INLINE void cl_slice_end(void)
{
	cl__slice_end();
}

/**
 * cl_slice_stats_thread() - the calling thread's extension counts so far.
 * @out: filled in (NULL: errno EINVAL, nothing done).
 *
 * Context: the calling thread (the counts are its own, never reset).
 */
CL_INLINE void cl_slice_stats_thread(struct cl_slice_stats *out)
{
	if (CL__BAD_ARG(out == NULL))
		return;
	out->sections = cl__slice_thread.sections;
	out->granted = cl__slice_thread.granted;
	out->yielded = cl__slice_thread.yielded;
}

CL_END_DECLS

#endif /* CACHELOCAL_SLICE_H */
