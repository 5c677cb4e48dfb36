/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/futex.h - wait on and wake a process-private futex word.
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * The kernel's futex(2) on an int that only this process maps
 * (FUTEX_PRIVATE_FLAG). cl__futex_wait() sleeps only while *addr == val,
 * checked atomically with the sleep by the kernel, so a waker that changes
 * the word and then calls cl__futex_wake() is never missed. A wait may
 * return early (a signal, a spurious wake-up, the value already changed):
 * callers re-check their condition in a loop.
 *
 * Synchronization: any thread, any time; the word is read and written by
 * the callers with atomics (compiler.h), the kernel only compares it.
 */
#ifndef CACHELOCAL_INTERNAL_FUTEX_H
#define CACHELOCAL_INTERNAL_FUTEX_H

#include <errno.h>
#include <time.h>

#include "../compiler.h"
#include "../sys.h"

CL_BEGIN_DECLS

/*
 * cl__futex_wait() - sleep while *addr == val, at most *rel (relative,
 * CLOCK_MONOTONIC) when rel is not NULL. Returns 0 when woken, or -1 with
 * errno EAGAIN (*addr != val at the call), ETIMEDOUT, EINTR.
 */
CL_INLINE int cl__futex_wait(int *addr, int val, const struct timespec *rel)
{
	return syscall(SYS_futex, addr, CL__FUTEX_WAIT_PRIVATE, val, rel, NULL, 0) == 0 ? 0 : -1;
}

/*
 * cl__futex_wake() - wake up to n waiters of addr. Returns how many were
 * woken (0 if none). errno is preserved.
 */
CL_INLINE int cl__futex_wake(int *addr, int n)
{
	int saved = errno;
	long r = syscall(SYS_futex, addr, CL__FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);

	errno = saved;
	return r > 0 ? (int)r : 0;
}

/*
 * cl__futex_wait_bits() - sleep while *addr == val, until a wake whose bit
 * mask shares a bit with @bits, or until the CLOCK_MONOTONIC time *abs (not
 * NULL). Returns as cl__futex_wait(). (FUTEX_WAIT_BITSET: a waker can wake
 * one class of waiters of the same word, not all of them.)
 */
CL_INLINE int cl__futex_wait_bits(int *addr, int val, const struct timespec *abs, unsigned bits)
{
	return syscall(SYS_futex, addr, CL__FUTEX_WAIT_BITSET_PRIVATE, val, abs, NULL, bits) == 0 ? 0 : -1;
}

/*
 * cl__futex_wake_bits() - wake up to n waiters of addr whose cl__futex_wait_bits()
 * mask shares a bit with @bits. Returns how many were woken; errno preserved.
 */
CL_INLINE int cl__futex_wake_bits(int *addr, int n, unsigned bits)
{
	int saved = errno;
	long r = syscall(SYS_futex, addr, CL__FUTEX_WAKE_BITSET_PRIVATE, n, NULL, NULL, bits);

	errno = saved;
	return r > 0 ? (int)r : 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_FUTEX_H */
