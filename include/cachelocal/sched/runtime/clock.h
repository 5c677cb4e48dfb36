/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/clock.h - the runtime's clock.
 *
 * cl__rt_now() (the architecture's tick counter when it runs at a constant
 * rate, calibrated against CLOCK_MONOTONIC; through the CL_RUNTIME_CLOCK()
 * test hook) and the coarse tick clock.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_CLOCK_H
#define CACHELOCAL_SCHED_RUNTIME_CLOCK_H

CL_BEGIN_DECLS

/* ---- clock ---- */

#ifdef CL__CTX_HAVE_TICKS
__extension__ typedef unsigned __int128 cl__u128;
#endif

/* The runtime's clock in ns (monotonic; the rq clocks and balancing use it). */
CL_ALWAYS_INLINE uint64_t cl__rt_now_real(const struct cl_runtime *rt)
{
#ifdef CL__CTX_HAVE_TICKS
	if (CL_LIKELY(rt->use_ticks)) {
		cl__u128 d = (cl__u128)(cl__ctx_ticks() - rt->ticks_base);

		return rt->ns_base + (uint64_t)((d * rt->ns_per_tick_q32) >> 32);
	}
#else
	(void)rt;
#endif
	return (uint64_t)cl__now_ns();
}

/* ... as seen through the test hook CL_RUNTIME_CLOCK() (config.h; default: as is). */
CL_ALWAYS_INLINE uint64_t cl__rt_now(const struct cl_runtime *rt)
{
	return CL_RUNTIME_CLOCK(cl__rt_now_real(rt));
}

/* CLOCK_MONOTONIC_COARSE (Linux): the time of the last kernel tick, read
 * from the vDSO without touching the TSC. */
#define CL__CLOCK_MONOTONIC_COARSE 6
#if !defined(__cplusplus) && !defined(__USE_POSIX199309)
extern int clock_getres(__clockid_t clock_id, struct timespec *res); /* strict C11: not declared */
#endif

/* The kernel's tick clock in ns: a cheap "has a tick passed since" test
 * (through the test hook CL_RUNTIME_TICK_CLOCK(), config.h). */
CL_ALWAYS_INLINE uint64_t cl__rt_tick_ns(void)
{
	struct timespec ts;

	clock_gettime(CL__CLOCK_MONOTONIC_COARSE, &ts);
	return CL_RUNTIME_TICK_CLOCK((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

#ifdef CL__CTX_HAVE_TICKS
/*
 * cl__rt_clock_pair() - one reading of the tick counter between two of
 * CLOCK_MONOTONIC: the tightest of up to 16 tries (a try the kernel
 * preempted, or a signal interrupted, has a wide bracket and loses).
 * @ticks: the counter; @ns: the bracket's midpoint. Returns its width in ns.
 */
CL_INLINE uint64_t cl__rt_clock_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	*ticks = 0;
	*ns = 0;
	for (int i = 0; i < 16 && best > 1000; i++) {
		uint64_t a = (uint64_t)cl__now_ns(), t, b;

		CL_INJECT(73); /* clock calibration: between the two readings */
		t = cl__ctx_ticks();
		b = (uint64_t)cl__now_ns();
		if (b - a < best) {
			best = b - a;
			*ticks = t;
			*ns = a + (b - a) / 2;
		}
	}
	return best;
}
#endif

/*
 * cl__rt_clock_init() - use the architecture's tick counter (arch/context.h)
 * when it says it runs at a constant rate: calibrate it against
 * CLOCK_MONOTONIC over at least 2 ms, and longer until the two readings'
 * brackets bound the rate's error by 0.1% (at most 100 ms; if even that is
 * not enough, the clock stays CLOCK_MONOTONIC). A calibration the kernel
 * preempts between a pair of readings would otherwise set the rate, for
 * the runtime's whole life, off by the time it lost.
 */
CL_INLINE void cl__rt_clock_init(struct cl_runtime *rt)
{
#ifdef CL__CTX_HAVE_TICKS
	uint64_t t0, n0, w0, t1, n1, w1;

	if (!cl__ctx_ticks_reliable())
		return;
	w0 = cl__rt_clock_pair(&t0, &n0);
	do
		w1 = cl__rt_clock_pair(&t1, &n1);
	while (n1 - n0 < 2000000ULL || ((n1 - n0) / 1000 < w0 + w1 && n1 - n0 < 100000000ULL));
	if (t1 <= t0 || (n1 - n0) / 1000 < w0 + w1)
		return;
	rt->ns_per_tick_q32 = (uint64_t)(((cl__u128)(n1 - n0) << 32) / (t1 - t0));
	rt->ticks_base = t1;
	rt->ns_base = n1;
	rt->use_ticks = rt->ns_per_tick_q32 != 0;
#else
	(void)rt;
#endif
}

/*
 * cl__rt_clock_sampling_ok() - may hand-offs sample the clock at the tick?
 * Only if the coarse clock exists and ticks at least every 10 ms (HZ >=
 * 100): its resolution bounds how long a charge may be deferred.
 */
CL_INLINE int cl__rt_clock_sampling_ok(void)
{
	struct timespec res;

	if (clock_getres(CL__CLOCK_MONOTONIC_COARSE, &res) != 0)
		return 0;
	return res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10000000L;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_CLOCK_H */
