/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/compiler.h - linkage, attributes, static asserts and atomics.
 *
 * The only place GNU extensions are spelled out; other headers use these
 * macros so that they compile as C11 and C++17, with gcc and clang,
 * warning-free under -Wall -Wextra -pedantic.
 */
#ifndef CACHELOCAL_COMPILER_H
#define CACHELOCAL_COMPILER_H

#include <stddef.h>

#include "config.h"

#if !defined(__GNUC__)
#error "cachelocal needs gcc or clang (GNU C attributes and __atomic builtins)"
#endif

#ifdef __cplusplus
#define CL_BEGIN_DECLS extern "C" {
#define CL_END_DECLS }
#else
#define CL_BEGIN_DECLS
#define CL_END_DECLS
#endif

/* Default linkage of every function in the headers. Overridable. */
#ifndef CL_INLINE
#define CL_INLINE static inline
#endif
/* Only on measured hot paths. */
#define CL_ALWAYS_INLINE static inline __attribute__((always_inline))
#define CL_NOINLINE __attribute__((noinline))
#define CL_UNUSED __attribute__((unused))
#define CL_COLD __attribute__((cold))
/* Process-wide state defined in a header: one copy per process, not per TU. */
#define CL_WEAK __attribute__((weak))
#define CL_ALIGNED(n) __attribute__((aligned(n)))

#define CL_LIKELY(x) __builtin_expect(!!(x), 1)
#define CL_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* CL_STATIC_ASSERT(cond, msg): at file or block scope, in C11 and C++. */
#ifdef __cplusplus
#define CL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define CL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Type of an expression, in C (GNU) and C++. */
#define CL_TYPEOF(x) __typeof__(x)

/* sizeof a member without an object. */
#define CL_SIZEOF_MEMBER(T, m) sizeof(((T *)0)->m)
/* First byte past member m. */
#define CL_OFFSETOF_END(T, m) (offsetof(T, m) + CL_SIZEOF_MEMBER(T, m))

/*
 * cl_container_of(ptr, T, member): the T that contains *ptr as member.
 * Keeps const-ness out of the way on purpose: the result is a T *.
 */
#define cl_container_of(ptr, T, member) \
	((T *)(void *)((char *)(ptr) - offsetof(T, member)))

/* ---- sanitizer detection ---- */
#if defined(__SANITIZE_THREAD__)
#define CL_HAVE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CL_HAVE_TSAN 1
#endif
#endif

/* ---- debug asserts ---- */
#ifdef CL_DEBUG
#include <assert.h>
#define CL_DEBUG_ASSERT(x) assert(x)
#else
#define CL_DEBUG_ASSERT(x) ((void)0)
#endif

/* ---- bad input ----
 * The rule every public function follows (README "Bad input"): a NULL object
 * pointer, an index or CPU out of range or any other bad argument is
 * reported, never a crash: errno EINVAL and the function's error value
 * (-1, NULL, or 0 for a count or size); a void function returns without
 * effect. Destroy/free of NULL is a no-op, as free(NULL). Usage:
 *	if (CL__BAD_ARG(l == NULL)) return -1;
 */
#include <errno.h>
#define CL__BAD_ARG(cond) (CL_UNLIKELY(cond) ? (errno = EINVAL, 1) : 0)

/* ---- atomics: thin names over the __atomic builtins ----
 * <stdatomic.h> is not usable from C++17, so the headers use these. */
#define CL_RELAXED __ATOMIC_RELAXED
#define CL_ACQUIRE __ATOMIC_ACQUIRE
#define CL_RELEASE __ATOMIC_RELEASE
#define CL_ACQ_REL __ATOMIC_ACQ_REL
#define CL_SEQ_CST __ATOMIC_SEQ_CST

#define CL_ATOMIC_LOAD(p, mo) __atomic_load_n((p), (mo))
#define CL_ATOMIC_STORE(p, v, mo) __atomic_store_n((p), (v), (mo))
#define CL_ATOMIC_XCHG(p, v, mo) __atomic_exchange_n((p), (v), (mo))
/* fetch-and-op: return the old value. */
#define CL_ATOMIC_FETCH_ADD(p, v, mo) __atomic_fetch_add((p), (v), (mo))
#define CL_ATOMIC_FETCH_SUB(p, v, mo) __atomic_fetch_sub((p), (v), (mo))
#define CL_ATOMIC_FETCH_OR(p, v, mo) __atomic_fetch_or((p), (v), (mo))
#define CL_ATOMIC_FETCH_AND(p, v, mo) __atomic_fetch_and((p), (v), (mo))
/* Strong CAS; *expp receives the current value on failure. Returns bool. */
#define CL_ATOMIC_CAS(p, expp, v, mo_ok, mo_fail) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, (mo_ok), (mo_fail))
#define CL_ATOMIC_FENCE(mo) __atomic_thread_fence(mo)

/* Plain-but-untorn access for data read racily (statistics, hints). */
#define CL_READ_ONCE(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define CL_WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Compiler barrier. */
#define CL_BARRIER() __asm__ __volatile__("" ::: "memory")

/* Spin-wait hint (pause, yield, ...: arch/arch.h, through config.h). */
#define CL_CPU_RELAX() CL__ARCH_CPU_RELAX()

#endif /* CACHELOCAL_COMPILER_H */
