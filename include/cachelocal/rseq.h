/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/rseq.h - the kernel rseq ABI, glibc-deferring registration, and
 * the cheap id getters built on it: cl_cpu_id(), cl_mm_cid(), cl_node_id().
 *
 * Who owns the rseq area (one per thread; the kernel accepts one):
 *  - glibc >= 2.35 registers an area for every thread and exports
 *    __rseq_offset (area = thread pointer + offset) and __rseq_size. When
 *    __rseq_size != 0, cachelocal uses glibc's area and never registers.
 *  - Otherwise (glibc too old, GLIBC_TUNABLES=glibc.pthread.rseq=0, static
 *    binary without the symbols...) cachelocal registers its own area, one
 *    process-wide weak __thread object, lazily in each thread on the first
 *    id request, with glibc's signature, and unregisters it at thread exit
 *    (pthread key destructor).
 *  - Same case, but librseq is linked into the process (it exports
 *    rseq_offset, rseq_size and rseq_register_current_thread()): librseq
 *    owns the areas (its own per-thread area at thread pointer +
 *    rseq_offset). cachelocal uses that area: when a thread already
 *    registered it through librseq, cachelocal finds it live (cpu_id >= 0)
 *    and never calls the syscall; otherwise cachelocal registers it by
 *    calling librseq's rseq_register_current_thread(), so librseq's own
 *    bookkeeping (rseq_size) is what it would be had the thread called it.
 *    Either way one area per thread, the one both libraries read. librseq
 *    aborts when a thread registers twice through it: in a thread where
 *    cachelocal registered first, do not call rseq_register_current_thread()
 *    again (docs/rseq.md, "librseq in the same process").
 *  - When that fails (ENOSYS: old kernel or a seccomp filter; EINVAL/EBUSY:
 *    somebody else registered), the thread remembers it (cpu_id = -2 in its
 *    own area) and every getter falls back, without retrying the syscall.
 *
 * Usable feature size (how many bytes of the area the kernel keeps up to
 * date): glibc 2.35-2.39 report 32 and 2.40 (and backports) 20 for the
 * legacy area, so for those two values it is min(32, getauxval(27)) (27 is
 * AT_RSEQ_FEATURE_SIZE; 20 when absent); any other glibc value is trusted.
 * Our own 32-byte area uses min(32, getauxval(27)) too. node_id needs >= 24,
 * mm_cid >= 28 (kernel >= 6.3).
 *
 * Test knob: the environment variable CL_TEST_RSEQ_FEATURE_SIZE_MAX, read
 * once per process, caps the usable feature size (it never raises it):
 * CL_TEST_RSEQ_FEATURE_SIZE_MAX=20 makes a kernel with mm_cid look like
 * one without (node_id and mm_cid reported absent), so the fallbacks run on
 * this machine (`make check-matrix`). Malformed values are ignored.
 *
 * Hot paths (CL_ALWAYS_INLINE): cl_cpu_id() and cl_rseq_abi_get() are one
 * load of a process-wide displacement plus one load of cpu_id at our own
 * area's TLS address + that displacement; cl_mm_cid() is one load of a
 * per-thread displacement plus one load of the id; each then tests the
 * sign (one test for "uninitialised", "failed" and "live"). The first call
 * in a thread goes through a cold out-of-line path; a thread without rseq
 * goes straight to sched_getcpu().
 *
 * Only "unique among running threads and below the number of possible CPUs"
 * may be relied on for mm_cid: the kernel's allocation policy changed in
 * 6.13 and again in 6.19 (docs/rseq.md). Data indexed by mm_cid must compare
 * mm_cid inside the rseq critical section (percpu_ops.h does).
 *
 * Headers: neither glibc 2.36's <sys/rseq.h> nor the 6.1 uapi
 * <linux/rseq.h> know node_id/mm_cid or AT_RSEQ_*, so the ABI is carried
 * here. glibc's symbols are referenced weakly under private names (asm
 * labels), so this header never conflicts with <sys/rseq.h>, in C or C++,
 * whichever is included first.
 */
#ifndef CACHELOCAL_RSEQ_H
#define CACHELOCAL_RSEQ_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "compiler.h"
#include "sys.h"

#define CL__ARCH_INSIDE 1
#if defined(CL_ARCH_X86_64)
#include "arch/x86_64.h"
#elif defined(CL_ARCH_AARCH64)
#include "arch/aarch64.h"
#else
#include "arch/generic.h"
#endif
#undef CL__ARCH_INSIDE

CL_BEGIN_DECLS

/* ------------------------------------------------------------------ ABI */

/**
 * struct cl_rseq_abi - the per-thread area shared with the kernel (our copy
 * of the uapi struct rseq, including the fields the distro headers lack).
 * @cpu_id_start: written by the kernel on return to user: always a valid CPU
 *	number, even when not registered. Userspace must not write it.
 * @cpu_id: written by the kernel: the current CPU, or (as int32_t) -1
 *	(CL_RSEQ_CPU_ID_UNINITIALIZED) before registration and -2
 *	(CL_RSEQ_CPU_ID_REGISTRATION_FAILED) when it failed. cachelocal writes
 *	-2 into its own area only. Read with a single 32-bit load.
 * @rseq_cs: written by userspace only: the address of the active
 *	struct cl_rseq_cs, 0 outside critical sections. The kernel clears it
 *	when it aborts or sees the IP outside the section.
 * @flags: legacy, 0.
 * @node_id: written by the kernel (feature size >= 24): current NUMA node.
 * @mm_cid: written by the kernel (feature size >= 28): the concurrency id,
 *	unique among the running threads of the process, < possible CPUs.
 *
 * 32-byte aligned and 32 bytes long: the length cachelocal registers.
 */
struct cl_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
} CL_ALIGNED(32);

/**
 * struct cl_rseq_cs - a critical-section descriptor (read by the kernel).
 * @version: 0.
 * @flags: 0.
 * @start_ip: first instruction of the section.
 * @post_commit_offset: length of the section: [start_ip, start_ip + this).
 * @abort_ip: where the kernel resumes on preemption, signal or migration;
 *	the 4 bytes before it must be CL_RSEQ_SIG.
 */
struct cl_rseq_cs {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
} CL_ALIGNED(32);

/* Offsets used from asm; asserted against offsetof below. */
#define CL_RSEQ_ABI_CPU_ID_START_OFFSET 0
#define CL_RSEQ_ABI_CPU_ID_OFFSET 4
#define CL_RSEQ_ABI_RSEQ_CS_OFFSET 8
#define CL_RSEQ_ABI_FLAGS_OFFSET 16
#define CL_RSEQ_ABI_NODE_ID_OFFSET 20
#define CL_RSEQ_ABI_MM_CID_OFFSET 24
#define CL_RSEQ_ABI_LEN 32
#define CL_RSEQ_CS_START_IP_OFFSET 8
#define CL_RSEQ_CS_POST_COMMIT_OFFSET_OFFSET 16
#define CL_RSEQ_CS_ABORT_IP_OFFSET 24

/* Feature sizes: the end of the last field the kernel keeps up to date. */
#define CL_RSEQ_FEATURE_SIZE_LEGACY 20 /* cpu_id_start .. flags */
#define CL_RSEQ_FEATURE_SIZE_NODE_ID 24
#define CL_RSEQ_FEATURE_SIZE_MM_CID 28

/* Values of cpu_id (as int32_t) when no CPU number is there. */
#define CL_RSEQ_CPU_ID_UNINITIALIZED (-1)
#define CL_RSEQ_CPU_ID_REGISTRATION_FAILED (-2)

/* Kernel ABI constants (uapi linux/rseq.h, linux/auxvec.h). */
#define CL__RSEQ_FLAG_UNREGISTER 1
#define CL__AT_RSEQ_FEATURE_SIZE 27
#define CL__AT_RSEQ_ALIGN 28

#if defined(SYS_rseq)
#define CL__NR_RSEQ SYS_rseq
#else
#define CL__NR_RSEQ CL__NR_RSEQ_ARCH
#endif

CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id_start) == CL_RSEQ_ABI_CPU_ID_START_OFFSET,
		 "rseq ABI: cpu_id_start offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id) == CL_RSEQ_ABI_CPU_ID_OFFSET,
		 "rseq ABI: cpu_id offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, rseq_cs) == CL_RSEQ_ABI_RSEQ_CS_OFFSET,
		 "rseq ABI: rseq_cs offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, flags) == CL_RSEQ_ABI_FLAGS_OFFSET,
		 "rseq ABI: flags offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, node_id) == CL_RSEQ_ABI_NODE_ID_OFFSET,
		 "rseq ABI: node_id offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, mm_cid) == CL_RSEQ_ABI_MM_CID_OFFSET,
		 "rseq ABI: mm_cid offset");
CL_STATIC_ASSERT(sizeof(struct cl_rseq_abi) == CL_RSEQ_ABI_LEN, "rseq ABI: area length");
CL_STATIC_ASSERT(CL_OFFSETOF_END(struct cl_rseq_abi, node_id) == CL_RSEQ_FEATURE_SIZE_NODE_ID,
		 "rseq ABI: node_id feature size");
CL_STATIC_ASSERT(CL_OFFSETOF_END(struct cl_rseq_abi, mm_cid) == CL_RSEQ_FEATURE_SIZE_MM_CID,
		 "rseq ABI: mm_cid feature size");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, start_ip) == CL_RSEQ_CS_START_IP_OFFSET,
		 "rseq ABI: start_ip offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, post_commit_offset) ==
			 CL_RSEQ_CS_POST_COMMIT_OFFSET_OFFSET,
		 "rseq ABI: post_commit_offset offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, abort_ip) == CL_RSEQ_CS_ABORT_IP_OFFSET,
		 "rseq ABI: abort_ip offset");
CL_STATIC_ASSERT(sizeof(struct cl_rseq_cs) == 32, "rseq ABI: rseq_cs size");

/* -------------------------------------------------- process-wide state */

/*
 * glibc's exports (glibc >= 2.35), referenced weakly under private names:
 * the address is NULL when the C library does not define them. The asm
 * label binds to the same symbol as <sys/rseq.h>'s declarations without
 * redeclaring them, so there is no C/C++ linkage or weak/strong conflict.
 */
extern const unsigned int cl__glibc_rseq_size __asm__("__rseq_size") CL_WEAK;
extern const ptrdiff_t cl__glibc_rseq_offset __asm__("__rseq_offset") CL_WEAK;

/*
 * librseq's exports (rseq_offset, rseq_size, rseq_register_current_thread)
 * are looked up with dlsym() once, only when glibc does not own rseq: a weak
 * reference from this header would make the symbols weak in a program that
 * also uses librseq's inline getters, and the linker then rejects their
 * PC-relative accesses in a PIE. dlsym itself is referenced weakly (in libc
 * since glibc 2.34). cl__librseq_register is set before the offset is
 * published, like the rest of cl__rseq_state.
 */
extern void *cl__dlsym(void *handle, const char *name) __asm__("dlsym") CL_WEAK;
CL_WEAK int (*cl__librseq_register)(void);

/* Who owns the rseq areas of this process (cl__rseq_state.owner). */
#define CL__RSEQ_OWNER_UNKNOWN 0
#define CL__RSEQ_OWNER_GLIBC 1 /* glibc registered; never register */
#define CL__RSEQ_OWNER_SELF 2  /* cachelocal registers cl__rseq_area lazily */
#define CL__RSEQ_OWNER_NONE 3  /* no thread pointer on this arch: fallbacks only */
#define CL__RSEQ_OWNER_LIBRSEQ 4 /* librseq's areas; registered through librseq lazily */
/* Owners whose areas a thread registers on its first id request. */
#define CL__RSEQ_OWNER_REGISTERS(o) ((o) == CL__RSEQ_OWNER_SELF || (o) == CL__RSEQ_OWNER_LIBRSEQ)

/*
 * Process-wide, written once under @once, then read-only: one line that
 * every getter reads. @offset is published last (release): a getter that
 * sees it non-zero may use it without the once-barrier. @delta is what
 * cl_cpu_id() reads: the area is at &cl__rseq_area + delta, so while it is
 * 0 (not initialised yet, or cachelocal owns the areas) the getters read
 * our own area, whose cpu_id is -1 until registered: one sign test covers
 * "not initialised" too. Thread-creation counters live elsewhere
 * (cl__rseq_counters) so this line never bounces.
 */
struct cl__rseq_state {
	ptrdiff_t offset; /* area = thread pointer + offset; 0 until initialised or unusable */
	ptrdiff_t delta;  /* area = &cl__rseq_area + delta (0: our own area) */
	unsigned feature_size;
	int owner;
	unsigned nr_cpus; /* sysconf(_SC_NPROCESSORS_CONF), >= 1: thread-hash modulus */
	int key_ok;
	pthread_key_t key; /* destructor unregisters our area at thread exit */
	pthread_once_t once;
} CL_ALIGNED(CL_CACHELINE_SIZE);

CL_WEAK struct cl__rseq_state cl__rseq_state = {0, 0, 0, CL__RSEQ_OWNER_UNKNOWN, 1, 0, 0,
						 PTHREAD_ONCE_INIT};

/* Registration statistics, for tests and diagnostics (relaxed atomics). */
struct cl__rseq_counters {
	unsigned long registered;   /* our area registered in a thread */
	unsigned long unregistered; /* ... and unregistered at thread exit */
	unsigned long failed;       /* registration attempts that failed */
	unsigned long delegated;    /* librseq's area registered by calling librseq */
} CL_ALIGNED(CL_CACHELINE_SIZE);

CL_WEAK struct cl__rseq_counters cl__rseq_counters = {0, 0, 0, 0};

/*
 * TLS model of cachelocal's thread-locals: initial-exec works in shared
 * objects too (the offset comes from the GOT); local-exec, a constant
 * offset in the instruction, only in the executable, so it is used when
 * this translation unit is built for one (-fPIE, or neither -fPIE nor
 * -fPIC). Either way every thread has them at one fixed offset from the
 * thread pointer.
 */
#if defined(__PIE__) || !defined(__PIC__)
#define CL__TLS_MODEL __attribute__((tls_model("local-exec")))
#else
#define CL__TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

/*
 * Our own area, registered only when glibc does not own rseq. One
 * definition per process (weak), at the same offset from the thread pointer
 * in every thread (CL__TLS_MODEL). cpu_id starts as -1: "not registered
 * yet", and so does mm_cid: the getters' fast paths start out reading this
 * area (see cl__rseq_state.delta and cl__rseq_thread.cid_rel) and must see
 * a negative value until the kernel writes a real one.
 */
CL_WEAK __thread struct cl_rseq_abi cl__rseq_area CL__TLS_MODEL = {
	0, (uint32_t)CL_RSEQ_CPU_ID_UNINITIALIZED, 0, 0, 0, (uint32_t)CL_RSEQ_CPU_ID_UNINITIALIZED};

/*
 * Per-thread fast-path state (CL__TLS_MODEL; zero in every new thread, and
 * copied with the forking thread into a child, whose registration the kernel
 * keeps).
 * @cid_rel: cl_mm_cid() returns the 32-bit word at &cl__rseq_area.mm_cid +
 *	cid_rel when it is >= 0. 0 until this thread's first id request
 *	(our own area's mm_cid: -1 until registered); then the live area's
 *	mm_cid, or its cpu_id when the kernel publishes no mm_cid; or, once
 *	this thread has no rseq, @dead (-2: the fallback, without the slow
 *	path).
 * @ops: percpu_ops.h's cache: ops[kind] is this thread's live area when the
 *	process runs critical sections for index kind @kind, else NULL (the
 *	operations' fast path is one load and one test of it).
 * @dead: 0, or -2 once rseq failed in this thread or the thread started to
 *	unregister our area (thread exit): from then on nothing caches or
 *	registers an area in this thread.
 * At thread exit all three are set *before* the unregistering syscall: a
 * signal handler that runs during or after it finds no cached area and no
 * live id (the kernel leaves cpu_id -1 and mm_cid 0 in an area it no
 * longer updates).
 */
struct cl__rseq_thread {
	ptrdiff_t cid_rel;
	struct cl_rseq_abi *ops[2];
	int32_t dead;
};

CL_WEAK __thread struct cl__rseq_thread cl__rseq_thread CL__TLS_MODEL;

/* ------------------------------------------------------ private helpers */

/*
 * cl__rseq_size_rule() - usable feature size from glibc's __rseq_size
 * (0 when we register our own 32-byte area) and getauxval(27) (0 = absent).
 */
CL_INLINE unsigned cl__rseq_size_rule(unsigned glibc_size, unsigned long auxv_feature_size)
{
	if (glibc_size != 0 && glibc_size != 20 && glibc_size != 32)
		return glibc_size; /* glibc >= 2.41 reports the kernel's size: trust it */
	if (auxv_feature_size == 0)
		return CL_RSEQ_FEATURE_SIZE_LEGACY;
	return auxv_feature_size < CL_RSEQ_ABI_LEN ? (unsigned)auxv_feature_size : CL_RSEQ_ABI_LEN;
}

CL_ALWAYS_INLINE struct cl_rseq_abi *cl__rseq_area_at(ptrdiff_t offset)
{
	return (struct cl_rseq_abi *)((uintptr_t)cl__thread_pointer() + (uintptr_t)offset);
}

CL_ALWAYS_INLINE int32_t cl__rseq_load_cpu_id(const struct cl_rseq_abi *a)
{
	return (int32_t)CL_ATOMIC_LOAD(&a->cpu_id, CL_RELAXED);
}

/*
 * The area the getters' fast path reads: &cl__rseq_area + the process-wide
 * displacement (our own area, cpu_id -1, until the state is initialised).
 */
CL_ALWAYS_INLINE struct cl_rseq_abi *cl__rseq_area_fast(void)
{
	return (struct cl_rseq_abi *)((uintptr_t)&cl__rseq_area +
				      (uintptr_t)CL_ATOMIC_LOAD(&cl__rseq_state.delta, CL_RELAXED));
}

/*
 * The address of our own area as a plain value. The empty asm keeps the
 * compiler from folding the TLS offset into a subtraction ("sub
 * x@gottpoff(%rip)"), an instruction the linker cannot relax to local-exec.
 */
CL_ALWAYS_INLINE uintptr_t cl__rseq_own_area_addr(void)
{
	uintptr_t a = (uintptr_t)&cl__rseq_area;

	__asm__("" : "+r"(a));
	return a;
}

/* cl__rseq_thread.cid_rel that makes cl_mm_cid() read @field. */
CL_ALWAYS_INLINE ptrdiff_t cl__rseq_cid_rel_of(const uint32_t *field)
{
	return (ptrdiff_t)((uintptr_t)field - (cl__rseq_own_area_addr() +
					       offsetof(struct cl_rseq_abi, mm_cid)));
}

/*
 * This thread has no rseq (any more), or is about to unregister it: the
 * fast paths stop using its area (no operation cache, cl_mm_cid() reads
 * @dead, -2) and the slow paths neither cache nor register one. Each store
 * is complete before the next (a signal handler of this thread may run
 * between any two).
 */
CL_INLINE void cl__rseq_thread_dead(void)
{
	CL_ATOMIC_STORE(&cl__rseq_thread.dead, (int32_t)CL_RSEQ_CPU_ID_REGISTRATION_FAILED,
			CL_RELAXED);
	CL_BARRIER();
	CL_ATOMIC_STORE(&cl__rseq_thread.ops[0], (struct cl_rseq_abi *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&cl__rseq_thread.ops[1], (struct cl_rseq_abi *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&cl__rseq_thread.cid_rel,
			cl__rseq_cid_rel_of((const uint32_t *)(const void *)&cl__rseq_thread.dead),
			CL_RELAXED);
	CL_BARRIER();
}

/* Whether cl__rseq_thread_dead() ran in this thread. */
CL_ALWAYS_INLINE int cl__rseq_thread_is_dead(void)
{
	return CL_ATOMIC_LOAD(&cl__rseq_thread.dead, CL_RELAXED) != 0;
}

/* Key destructor: unregister our area when a thread that registered exits. */
CL_INLINE void cl__rseq_thread_exit(void *arg)
{
	struct cl_rseq_abi *a = (struct cl_rseq_abi *)arg;
	int saved = errno;

	if (!a || (int32_t)CL_ATOMIC_LOAD(&a->cpu_id, CL_RELAXED) < 0)
		return;
	/* First: signal handlers and later destructors of this thread stop
	 * using the area and do not register it again. */
	cl__rseq_thread_dead();
	if (syscall(CL__NR_RSEQ, a, (unsigned)CL_RSEQ_ABI_LEN, CL__RSEQ_FLAG_UNREGISTER,
		    (unsigned)CL_RSEQ_SIG) == 0)
		CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.unregistered, 1ul, CL_RELAXED);
	/* The getters that read the area itself fall back from now on. */
	CL_ATOMIC_STORE(&a->cpu_id, (uint32_t)CL_RSEQ_CPU_ID_REGISTRATION_FAILED, CL_RELAXED);
	errno = saved;
}

/*
 * Is librseq in the process and initialised (its constructor ran: rseq_size
 * is no longer -1U)? Then *off = its rseq_offset and cl__librseq_register is
 * set. Called only when glibc does not own rseq (RTLD_DEFAULT is NULL).
 */
CL_INLINE int cl__librseq_find(ptrdiff_t *off)
{
	const ptrdiff_t *o;
	const unsigned int *size;
	void *reg;

	if (cl__dlsym == NULL)
		return 0;
	o = (const ptrdiff_t *)cl__dlsym(NULL, "rseq_offset");
	size = (const unsigned int *)cl__dlsym(NULL, "rseq_size");
	reg = cl__dlsym(NULL, "rseq_register_current_thread");
	if (o == NULL || size == NULL || reg == NULL || *size == (unsigned)-1 || *o == 0)
		return 0;
	__builtin_memcpy(&cl__librseq_register, &reg, sizeof(reg));
	*off = *o;
	return 1;
}

/*
 * cl__rseq_feature_cap() - the test knob CL_TEST_RSEQ_FEATURE_SIZE_MAX
 * (see the top): @size, or the knob's value when that is smaller.
 */
CL_INLINE unsigned cl__rseq_feature_cap(unsigned size)
{
	const char *e = getenv("CL_TEST_RSEQ_FEATURE_SIZE_MAX");
	unsigned long v = 0;

	if (!e || *e < '0' || *e > '9')
		return size;
	while (*e >= '0' && *e <= '9' && v <= 0xffffu)
		v = v * 10 + (unsigned long)(*e++ - '0');
	if (*e)
		return size;
	return v < size ? (unsigned)v : size;
}

CL_INLINE void cl__rseq_init_once(void)
{
	struct cl__rseq_state *s = &cl__rseq_state;
	int saved = errno;
	long n = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long aux;
	ptrdiff_t off = 0;

	s->nr_cpus = n > 0 ? (unsigned)n : 1u;
	errno = 0;
	aux = getauxval(CL__AT_RSEQ_FEATURE_SIZE);
	if (!CL__HAVE_THREAD_POINTER) {
		s->owner = CL__RSEQ_OWNER_NONE;
	} else if (&cl__glibc_rseq_size != NULL && &cl__glibc_rseq_offset != NULL &&
		   cl__glibc_rseq_size != 0) {
		s->owner = CL__RSEQ_OWNER_GLIBC;
		s->feature_size = cl__rseq_size_rule(cl__glibc_rseq_size, aux);
		off = cl__glibc_rseq_offset;
	} else if (cl__librseq_find(&off)) {
		/* librseq owns the areas (its constructor ran and found no glibc area). */
		s->owner = CL__RSEQ_OWNER_LIBRSEQ;
		s->feature_size = cl__rseq_size_rule(0, aux);
	} else {
		s->owner = CL__RSEQ_OWNER_SELF;
		s->feature_size = cl__rseq_size_rule(0, aux);
		off = (ptrdiff_t)((uintptr_t)&cl__rseq_area - (uintptr_t)cl__thread_pointer());
		s->key_ok = pthread_key_create(&s->key, cl__rseq_thread_exit) == 0;
	}
	s->feature_size = cl__rseq_feature_cap(s->feature_size);
	if (off != 0)
		CL_ATOMIC_STORE(&s->delta,
				(ptrdiff_t)((uintptr_t)cl__rseq_area_at(off) - cl__rseq_own_area_addr()),
				CL_RELEASE);
	CL_ATOMIC_STORE(&s->offset, off, CL_RELEASE);
	errno = saved;
}

/* Process-wide state, initialised once (cheap after the first call). */
CL_INLINE const struct cl__rseq_state *cl__rseq_init(void)
{
	if (!CL_ATOMIC_LOAD(&cl__rseq_state.offset, CL_ACQUIRE))
		pthread_once(&cl__rseq_state.once, cl__rseq_init_once);
	return &cl__rseq_state;
}

/*
 * This thread's area @a is live: point cl_mm_cid()'s fast path at its
 * mm_cid, or at its cpu_id when the usable feature size has no mm_cid (the
 * kernel may still write mm_cid into a 32-byte area; the test knob caps it).
 */
CL_INLINE void cl__rseq_thread_live(const struct cl__rseq_state *s, struct cl_rseq_abi *a)
{
	cl__rseq_thread.cid_rel = cl__rseq_cid_rel_of(
		s->feature_size >= CL_RSEQ_FEATURE_SIZE_MM_CID ? &a->mm_cid : &a->cpu_id);
}

/*
 * Register our area in this thread. Returns 0 or -1 + errno from the
 * kernel; on failure cpu_id = -2 records it, so it is tried once per thread.
 */
CL_INLINE int cl__rseq_register_self(const struct cl__rseq_state *s, struct cl_rseq_abi *a)
{
	int e;

	if (cl__rseq_thread_is_dead()) {
		errno = ENOSYS; /* failed before, or unregistering at thread exit */
		return -1;
	}
	if (s->owner == CL__RSEQ_OWNER_LIBRSEQ) {
		/* librseq's area: register it through librseq (errno from the kernel). */
		errno = ENOSYS;
		if (cl__librseq_register() == 0 && cl__rseq_load_cpu_id(a) >= 0) {
			CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.delegated, 1ul, CL_RELAXED);
			return 0;
		}
	} else if (syscall(CL__NR_RSEQ, a, (unsigned)CL_RSEQ_ABI_LEN, 0, (unsigned)CL_RSEQ_SIG) == 0) {
		CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.registered, 1ul, CL_RELAXED);
		if (s->key_ok)
			(void)pthread_setspecific(s->key, a);
		cl__rseq_thread_live(s, a);
		return 0;
	}
	e = errno;
	CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.failed, 1ul, CL_RELAXED);
	CL_ATOMIC_STORE(&a->cpu_id, (uint32_t)CL_RSEQ_CPU_ID_REGISTRATION_FAILED, CL_RELAXED);
	cl__rseq_thread_dead();
	errno = e;
	return -1;
}

/*
 * Slow path of every getter: initialise the process state, register this
 * thread's area if we own rseq and have not tried yet. Returns the live
 * area or NULL (errno untouched).
 */
CL_NOINLINE CL_COLD CL_UNUSED static struct cl_rseq_abi *cl__rseq_abi_slow(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();
	struct cl_rseq_abi *a;
	int32_t c;
	int saved;

	if (!s->offset || cl__rseq_thread_is_dead())
		return NULL; /* no rseq here, failed before, or unregistering (thread exit) */
	a = cl__rseq_area_at(s->offset);
	c = cl__rseq_load_cpu_id(a);
	if (c >= 0) {
		cl__rseq_thread_live(s, a);
		return a;
	}
	if (!CL__RSEQ_OWNER_REGISTERS(s->owner) || c != CL_RSEQ_CPU_ID_UNINITIALIZED) {
		/* glibc's failed here, or ours failed */
		if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED)
			cl__rseq_thread_dead();
		return NULL;
	}
	saved = errno;
	if (cl__rseq_register_self(s, a) != 0) {
		errno = saved;
		return NULL;
	}
	return cl__rseq_load_cpu_id(a) >= 0 ? a : NULL;
}

/*
 * A stable per-thread number in [0, nr_cpus): a multiplicative hash of the
 * thread pointer (or pthread_self()). Spreads threads; NOT unique.
 */
CL_INLINE int cl__thread_hash_id(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();
	uint64_t t = CL__HAVE_THREAD_POINTER ? (uint64_t)(uintptr_t)cl__thread_pointer()
					     : (uint64_t)pthread_self();
	uint64_t h = (t >> 4) * 0x9E3779B97F4A7C15ull;

	return (int)((h >> 32) % (s->nr_cpus ? s->nr_cpus : 1u));
}

/* ------------------------------------------------------------ public API */

/**
 * cl_rseq_abi_get() - this thread's registered rseq area.
 *
 * glibc's area (thread pointer + __rseq_offset) when glibc owns rseq, else
 * librseq's when librseq is in the process, else cachelocal's own; the
 * latter two registered lazily by this call in this thread if not yet.
 *
 * Context: any thread; async-signal-safe once the thread's area is live
 * (the first call may call pthread_once and the rseq syscall). The pointer
 * stays valid until the thread exits.
 * Return: the live area, or NULL when rseq is unusable in this thread
 * (registration failed: ENOSYS kernel or seccomp, EINVAL/EBUSY somebody
 * else registered; unsupported architecture). errno is not changed.
 */
CL_ALWAYS_INLINE struct cl_rseq_abi *cl_rseq_abi_get(void)
{
	struct cl_rseq_abi *a = cl__rseq_area_fast();
	int32_t c = cl__rseq_load_cpu_id(a);

	if (CL_LIKELY(c >= 0))
		return a;
	/* -2: remembered failure, no slow path (our own area says -2 only
	 * after the state is initialised: it is registered by then). */
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED)
		return NULL;
	return cl__rseq_abi_slow();
}

/**
 * cl_rseq_register_current_thread() - make sure this thread has a live area.
 *
 * Never registers while glibc owns rseq (then it only checks glibc's area).
 * Called implicitly by every getter; call it explicitly to learn why rseq is
 * not usable. A failure is remembered: later calls do not retry.
 *
 * Context: any thread, not from a signal handler before the first call.
 * Return: 0 when this thread's area is live (also when glibc owns it);
 * -1 with errno ENOSYS (no rseq: kernel, seccomp or architecture), EINVAL
 * or EBUSY (another area is registered for this thread) on the first
 * failing call, ENOSYS on later calls.
 */
CL_INLINE int cl_rseq_register_current_thread(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();

	if (CL__RSEQ_OWNER_REGISTERS(s->owner) && s->offset) {
		struct cl_rseq_abi *a = cl__rseq_area_at(s->offset);
		int32_t c = cl__rseq_load_cpu_id(a);

		if (c >= 0)
			return 0;
		if (c == CL_RSEQ_CPU_ID_UNINITIALIZED)
			return cl__rseq_register_self(s, a); /* the kernel's errno */
	} else if (cl_rseq_abi_get() != NULL) {
		return 0;
	}
	errno = ENOSYS;
	return -1;
}

/**
 * cl_rseq_available() - whether this thread has a live rseq registration.
 *
 * Registers this thread's area first if cachelocal owns rseq.
 *
 * Context: any thread.
 * Return: 1 if the kernel maintains this thread's area, else 0.
 */
CL_INLINE int cl_rseq_available(void)
{
	return cl_rseq_abi_get() != NULL;
}

/**
 * cl_rseq_owned_by_glibc() - whether glibc registered the rseq areas.
 *
 * Context: any thread.
 * Return: 1 when glibc owns rseq (__rseq_size != 0): cachelocal never
 * registers; 0 when cachelocal registers its own areas (or cannot).
 */
CL_INLINE int cl_rseq_owned_by_glibc(void)
{
	return cl__rseq_init()->owner == CL__RSEQ_OWNER_GLIBC;
}

/**
 * cl_rseq_feature_size() - usable feature size of this thread's area.
 *
 * The size rule (see the top of this header): glibc's 20 or 32 mean
 * min(32, getauxval(AT_RSEQ_FEATURE_SIZE)), 20 when the auxv entry is
 * absent; other glibc values are trusted; our own area uses the auxv rule.
 *
 * Context: any thread.
 * Return: bytes of the area the kernel keeps up to date (20, 28, ...), or 0
 * when this thread has no live area.
 */
CL_INLINE unsigned cl_rseq_feature_size(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();

	return cl_rseq_abi_get() ? s->feature_size : 0;
}

/**
 * cl_rseq_mm_cid_available() - whether the kernel's mm_cid can be read.
 *
 * Context: any thread.
 * Return: 1 when this thread's area is live and the usable feature size is
 * >= 28 (kernel >= 6.3), else 0.
 */
CL_INLINE int cl_rseq_mm_cid_available(void)
{
	return cl_rseq_feature_size() >= CL_RSEQ_FEATURE_SIZE_MM_CID;
}

/*
 * Fallback of cl_cpu_id() and cl_mm_cid(): @raw is the cpu_id the fast path
 * read (-1 also when the state is not initialised yet). A thread whose
 * registration failed (-2) goes straight to sched_getcpu(): in the no-rseq
 * modes this path is the hot one. Not CL_COLD for that reason.
 */
CL_NOINLINE CL_UNUSED static int cl__cpu_id_slow(int32_t raw)
{
	struct cl_rseq_abi *a;
	int c;

	if (raw != CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		a = cl__rseq_abi_slow();
		if (a)
			return (int)cl__rseq_load_cpu_id(a);
	}
	c = sched_getcpu();
	return c >= 0 ? c : 0;
}

/**
 * cl_cpu_id() - the CPU this thread runs on (may be stale on return).
 *
 * rseq's cpu_id when this thread's area is live (one load), else
 * sched_getcpu(), else 0.
 *
 * Context: any thread; async-signal-safe once this thread's area is live.
 * Return: a CPU number >= 0. Never fails.
 */
CL_ALWAYS_INLINE int cl_cpu_id(void)
{
	int32_t c = cl__rseq_load_cpu_id(cl__rseq_area_fast());

	if (CL_LIKELY(c >= 0))
		return (int)c;
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		c = sched_getcpu(); /* no rseq in this thread: the hot path */
		return c >= 0 ? (int)c : 0;
	}
	return cl__cpu_id_slow(c);
}

CL_NOINLINE CL_UNUSED static int cl__mm_cid_slow(int32_t raw)
{
	struct cl_rseq_abi *a;
	int c;

	if (raw != CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		a = cl__rseq_abi_slow();
		if (a) {
			if (cl__rseq_state.feature_size >= CL_RSEQ_FEATURE_SIZE_MM_CID)
				return (int)CL_ATOMIC_LOAD(&a->mm_cid, CL_RELAXED);
			return (int)cl__rseq_load_cpu_id(a);
		}
	}
	c = sched_getcpu();
	return c >= 0 ? c : cl__thread_hash_id();
}

/**
 * cl_mm_cid() - a concurrency id of the calling thread.
 *
 * The source, by cl_id_mode():
 *  CL_ID_MM_CID      the kernel's mm_cid (one load after a cpu_id check):
 *                    unique among running threads, < possible CPUs;
 *  CL_ID_CPU_ID      rseq live but no mm_cid (kernel < 6.3): rseq cpu_id,
 *                    also unique among running threads, < possible CPUs;
 *  CL_ID_GETCPU      no rseq in this thread: sched_getcpu(), same property
 *                    at the instant of the call;
 *  CL_ID_THREAD_HASH sched_getcpu() fails too: a hash of the thread,
 *                    < configured CPUs but NOT unique.
 * Only index data with it inside an rseq critical section that checks it,
 * or use it as a hint (e.g. to spread atomics).
 *
 * Context: any thread; async-signal-safe once this thread's area is live.
 * Return: an id >= 0. Never fails.
 */
CL_ALWAYS_INLINE int cl_mm_cid(void)
{
	/* This thread's id word (cl__rseq_thread.cid_rel): live mm_cid or
	 * cpu_id, -1 before the first request, -2 without rseq. */
	const uint32_t *w = (const uint32_t *)((uintptr_t)&cl__rseq_area.mm_cid +
					       (uintptr_t)cl__rseq_thread.cid_rel);
	int32_t c = (int32_t)CL_ATOMIC_LOAD(w, CL_RELAXED);

	if (CL_LIKELY(c >= 0))
		return (int)c;
	if (c == CL_RSEQ_CPU_ID_REGISTRATION_FAILED) {
		int cpu = sched_getcpu(); /* no rseq in this thread: the hot path */

		if (CL_LIKELY(cpu >= 0))
			return cpu;
	}
	return cl__mm_cid_slow(c);
}

/**
 * cl_node_id() - the NUMA node this thread runs on (may be stale).
 *
 * rseq's node_id when live and the feature size is >= 24, else getcpu()'s
 * node (glibc >= 2.29, vDSO; the raw syscall on older glibc), else 0.
 *
 * Context: any thread.
 * Return: a node number >= 0. Never fails.
 */
CL_INLINE int cl_node_id(void)
{
	const struct cl__rseq_state *s = cl__rseq_init();
	struct cl_rseq_abi *a = cl_rseq_abi_get();
	unsigned cpu = 0, node = 0;

	if (a && s->feature_size >= CL_RSEQ_FEATURE_SIZE_NODE_ID)
		return (int)CL_ATOMIC_LOAD(&a->node_id, CL_RELAXED);
	{
		int saved = errno;
		int r = -1;

#if CL__HAVE_GETCPU
		r = getcpu(&cpu, &node); /* vDSO */
#elif defined(SYS_getcpu)
		r = (int)syscall(SYS_getcpu, &cpu, &node, NULL);
#endif
		errno = saved;
		(void)cpu;
		return r == 0 ? (int)node : 0;
	}
}

/** enum cl_id_mode - the source cl_mm_cid() uses in the calling thread. */
enum cl_id_mode {
	CL_ID_MM_CID,     /* kernel mm_cid (rseq, feature size >= 28) */
	CL_ID_CPU_ID,     /* rseq cpu_id (rseq without mm_cid) */
	CL_ID_GETCPU,     /* sched_getcpu() (no rseq in this thread) */
	CL_ID_THREAD_HASH /* hash of the thread (sched_getcpu() fails too) */
};

/**
 * cl_id_mode() - which source cl_mm_cid() uses in the calling thread.
 *
 * Registers this thread's area first if needed, so the answer matches what
 * the next cl_mm_cid() does. The mode is per thread in principle (a thread
 * whose registration failed falls back alone); in practice it is the same
 * in every thread of a process.
 *
 * Context: any thread.
 * Return: CL_ID_MM_CID, CL_ID_CPU_ID, CL_ID_GETCPU or CL_ID_THREAD_HASH.
 */
CL_INLINE enum cl_id_mode cl_id_mode(void)
{
	if (cl_rseq_available())
		return cl_rseq_mm_cid_available() ? CL_ID_MM_CID : CL_ID_CPU_ID;
	return sched_getcpu() >= 0 ? CL_ID_GETCPU : CL_ID_THREAD_HASH;
}

/**
 * cl_id_mode_name() - printable name of an id mode.
 * @m: a mode from cl_id_mode().
 *
 * Context: any.
 * Return: "mm_cid", "cpu_id", "sched_getcpu", "thread_hash", or "unknown"
 * for a value outside the enum.
 */
CL_INLINE const char *cl_id_mode_name(enum cl_id_mode m)
{
	switch (m) {
	case CL_ID_MM_CID:
		return "mm_cid";
	case CL_ID_CPU_ID:
		return "cpu_id";
	case CL_ID_GETCPU:
		return "sched_getcpu";
	case CL_ID_THREAD_HASH:
		return "thread_hash";
	}
	return "unknown";
}

CL_END_DECLS

#endif /* CACHELOCAL_RSEQ_H */
