/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/rseq/register.h - who owns the rseq areas (glibc, librseq or
 * cachelocal), the process-wide state initialised once, our own area, lazy
 * registration in each thread, the remembered failure and the
 * unregistration at thread exit: the slow path every getter ends in.
 *
 * Part of rseq.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice. The
 * ownership rules are at the top of rseq.h.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../rseq.h"

#ifndef CACHELOCAL_RSEQ_REGISTER_H
#define CACHELOCAL_RSEQ_REGISTER_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../internal/rseq_thread.h"
#include "../internal/slice.h"

CL_BEGIN_DECLS

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
	unsigned own_len; /* length our own area is registered with: 32, or 64 (v2) */
	unsigned auxv_size; /* getauxval(AT_RSEQ_FEATURE_SIZE), after the test knob; 0 absent */
	int key_ok;
	pthread_key_t key; /* destructor unregisters our area at thread exit */
	pthread_once_t once;
} CL_ALIGNED(CL_CACHELINE_SIZE);

CL_WEAK struct cl__rseq_state cl__rseq_state = {0, 0, 0, CL__RSEQ_OWNER_UNKNOWN, 1, 0, 0, 0, 0,
						 PTHREAD_ONCE_INIT};

/* Registration statistics, for tests and diagnostics (relaxed atomics). */
struct cl__rseq_counters {
	unsigned long registered;   /* our area registered in a thread */
	unsigned long unregistered; /* ... and unregistered at thread exit */
	unsigned long failed;       /* registration attempts that failed */
	unsigned long delegated;    /* librseq's area registered by calling librseq */
	unsigned long v2;           /* ... of the registered: with the v2 length (64) */
} CL_ALIGNED(CL_CACHELINE_SIZE);

CL_WEAK struct cl__rseq_counters cl__rseq_counters = {0, 0, 0, 0, 0};

/*
 * Our own area, registered only when glibc does not own rseq. One
 * definition per process (weak), at the same offset from the thread pointer
 * in every thread (CL__TLS_MODEL). cpu_id starts as -1: "not registered
 * yet", and so does mm_cid: the getters' fast paths start out reading this
 * area (see cl__rseq_state.delta and cl__rseq_thread.cid_rel) and must see
 * a negative value until the kernel writes a real one.
 *
 * RSEQ ABI v2 (Linux 7.0+, kernel source kernel/rseq.c rseq_length_valid()
 * and rseq_register()): a registration longer than 32 bytes must be
 * aligned to AT_RSEQ_ALIGN (64 for the feature size 33 of 7.0-7.3) and at
 * least AT_RSEQ_FEATURE_SIZE long; on architectures with the generic IRQ
 * entry it selects the v2 mode (ids written only when they change, the
 * read-only fields enforced, the time-slice extension possible). So the
 * area is a 64-byte block: the struct, then bytes no field uses yet (the
 * kernel reads or writes none of them today). It is registered with 64
 * bytes when the kernel's feature size is above 32 and fits, else with 32.
 */
struct cl__rseq_own_area {
	struct cl_rseq_abi abi;
	uint8_t reserved[64 - sizeof(struct cl_rseq_abi)];
} CL_ALIGNED(64);

#define CL__RSEQ_OWN_LEN_V2 ((unsigned)sizeof(struct cl__rseq_own_area))

CL_WEAK __thread struct cl__rseq_own_area cl__rseq_own CL__TLS_MODEL = {
	{0, (uint32_t)CL_RSEQ_CPU_ID_UNINITIALIZED, 0, 0, 0, (uint32_t)CL_RSEQ_CPU_ID_UNINITIALIZED,
	 {0, 0, 0}},
	{0}};

/* The struct at the start of our own area (an lvalue, as it always was). */
#define cl__rseq_area (cl__rseq_own.abi)

/* ------------------------------------------------------ private helpers */

/*
 * cl__rseq_own_len() - the length to register our own area with, from the
 * kernel's AT_RSEQ_FEATURE_SIZE and AT_RSEQ_ALIGN (0 = absent): the v2
 * length 64 when the feature size is above 32 (a kernel that has v2) and
 * both fit our 64-byte block, else the legacy 32.
 */
CL_INLINE unsigned cl__rseq_own_len(unsigned long auxv_size, unsigned long auxv_align)
{
	if (auxv_size > CL_RSEQ_ABI_LEN && auxv_size <= CL__RSEQ_OWN_LEN_V2 &&
	    auxv_align <= CL__RSEQ_OWN_LEN_V2)
		return CL__RSEQ_OWN_LEN_V2;
	return CL_RSEQ_ABI_LEN;
}

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
	cl__slice_thread_off();
	CL_BARRIER();
	CL_ATOMIC_STORE(&cl__rseq_thread.ops[0], (struct cl_rseq_abi *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&cl__rseq_thread.ops[1], (struct cl_rseq_abi *)NULL, CL_RELAXED);
	CL_ATOMIC_STORE(&cl__rseq_thread.cid_rel,
			cl__rseq_cid_rel_of((const uint32_t *)(const void *)&cl__rseq_thread.dead),
			CL_RELAXED);
	CL_BARRIER();
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
	if (syscall(CL__NR_RSEQ, a, cl__rseq_state.own_len, CL__RSEQ_FLAG_UNREGISTER,
		    (unsigned)CL_RSEQ_SIG) == 0) {
		CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.unregistered, 1ul, CL_RELAXED);
		/* The getters that read the area itself fall back from now on.
		 * Only once the kernel let go of it: in a v2 registration cpu_id
		 * is read-only and writing it kills the thread. */
		CL_ATOMIC_STORE(&a->cpu_id, (uint32_t)CL_RSEQ_CPU_ID_REGISTRATION_FAILED,
				CL_RELAXED);
	}
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
	aux = cl__rseq_feature_cap((unsigned)getauxval(CL__AT_RSEQ_FEATURE_SIZE));
	s->auxv_size = (unsigned)aux;
	s->own_len = cl__rseq_own_len(aux, getauxval(CL__AT_RSEQ_ALIGN));
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
		/* a v2 registration keeps the kernel's whole feature size */
		s->feature_size = s->own_len > CL_RSEQ_ABI_LEN ? (unsigned)aux
							      : cl__rseq_size_rule(0, aux);
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
 * The registration's flags: ask for the time-slice extension at once
 * (RSEQ_FLAG_SLICE_EXT_DEFAULT_ON, saving a prctl per thread) when the area
 * is registered with the v2 length, which only kernels that know the flag
 * advertise (an unknown flag is EINVAL), and the build did not opt out.
 */
CL_INLINE int cl__rseq_register_flags(const struct cl__rseq_state *s)
{
	return CL_SLICE_EXT && s->own_len > CL_RSEQ_ABI_LEN ? CL__RSEQ_FLAG_SLICE_EXT_DEFAULT_ON : 0;
}

/*
 * Our area @a was just registered in this thread: when the kernel turned
 * the extension on (the flag above, reported in @a->flags), the locks of
 * this thread start asking for it, unless the thread opted out before.
 */
CL_INLINE void cl__rseq_slice_registered(struct cl_rseq_abi *a)
{
	uint32_t fl = CL_ATOMIC_LOAD(&a->flags, CL_RELAXED);

	if (!CL_SLICE_EXT || !(fl & CL_RSEQ_FLAG_SLICE_EXT_ENABLED) || cl__slice_thread.optout)
		return;
	CL_ATOMIC_STORE(&cl__slice_thread.req, &a->slice_ctrl.request, CL_RELAXED);
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
	} else if (syscall(CL__NR_RSEQ, a, s->own_len, cl__rseq_register_flags(s),
			   (unsigned)CL_RSEQ_SIG) == 0) {
		CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.registered, 1ul, CL_RELAXED);
		if (s->own_len > CL_RSEQ_ABI_LEN)
			CL_ATOMIC_FETCH_ADD(&cl__rseq_counters.v2, 1ul, CL_RELAXED);
		if (s->key_ok)
			(void)pthread_setspecific(s->key, a);
		cl__rseq_thread_live(s, a);
		cl__rseq_slice_registered(a);
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

CL_END_DECLS

#endif /* CACHELOCAL_RSEQ_REGISTER_H */
