/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cid/types.h - the cid domain's types: the policy enum, the
 * statistics snapshot (both API, documented in cid.h) and the layout of
 * struct cl_cid_domain (opaque to users; here because the library is
 * header-only), with its group and line asserts.
 *
 * Part of cid.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice. The
 * invariants and the synchronization table of the domain are at the top of
 * cid.h.
 */
#ifndef CACHELOCAL_CID_TYPES_H
#define CACHELOCAL_CID_TYPES_H

#include <pthread.h>

#include "../cacheline.h"
#include "../compiler.h"
#include "../config.h"
#include "../internal/fork.h"

CL_BEGIN_DECLS

/*
 * CL_CID_SPIN_ROUNDS: lock-free scans of the cids below the bound before an
 * acquirer falls back to the domain lock and sleeps. Build-time knob.
 */
#ifndef CL_CID_SPIN_ROUNDS
#define CL_CID_SPIN_ROUNDS 16
#endif
#if !(CL_CID_SPIN_ROUNDS >= 1)
#error "cachelocal: CL_CID_SPIN_ROUNDS must be >= 1"
#endif

/* enum cl_cid_policy - how cl_cid_acquire() chooses a cid (see the top). */
enum cl_cid_policy {
	CL_CID_NAIVE = 0,
	CL_CID_RECENT = 1,
	CL_CID_LLC = 2,
};

/*
 * struct cl_cid_stats - a snapshot of a domain (cl_cid_domain_stats()).
 *
 * Every successful acquire counts exactly once in acquisitions and in
 * exactly one of recent_hits, llc_hits, spreads, lowest, fallbacks (the step
 * that produced the cid). The counters live in each cid's own line and are
 * written only by that cid's holder, so they are exact; the snapshot is
 * taken without stopping the domain.
 */
struct cl_cid_stats {
	unsigned long long acquisitions; /* successful acquires */
	unsigned long long recent_hits;  /* this CPU's recent cid (RECENT, LLC) */
	unsigned long long llc_hits;     /* a free cid last used in this CPU's LLC (LLC) */
	unsigned long long spreads;      /* a new cid by growing max_nr_cid (RECENT, LLC) */
	unsigned long long lowest;       /* the lowest free cid, lock-free scan */
	unsigned long long fallbacks;    /* obtained on the fallback lock path */
	unsigned long long waits;        /* times an acquirer slept for a cid */
	unsigned long long busy;         /* acquires refused with EBUSY */
	unsigned users;                  /* current users (join - leave) */
	unsigned nr_allowed;             /* CPUs in the grow-only allowed union */
	unsigned bound;                  /* min(nr_allowed, users) */
	unsigned max_nr_cid;             /* spread cursor: cids handed out by spreading */
	unsigned held;                   /* cids held at the snapshot */
	unsigned waiters;                /* acquirers on the fallback lock path now */
	unsigned nr_cids;                /* size of the cid space (possible CPUs) */
};

/* ---- private layout ---- */

/*
 * One per cid, alone on its false-sharing unit. state: bit 0 = held; bits
 * 1.. = 1 + the CPU that acquired it last (0 = never used), kept across the
 * release so the LLC policy knows where the cid's data was last warm. The
 * counters are written only by the current holder (plain increments through
 * relaxed atomics: exact, and race-free for readers).
 */
struct cl__cid_slot {
	unsigned long state;
	unsigned long long acquisitions;
	unsigned long long recent_hits;
	unsigned long long llc_hits;
	unsigned long long spreads;
	unsigned long long lowest;
	unsigned long long fallbacks;
} CL_FALSE_SHARING_ALIGNED;

/* One per CPU, alone on its false-sharing unit: written only when it changes. */
struct cl__cid_cpu {
	int recent; /* the cid last acquired on this CPU, -1 none */
} CL_FALSE_SHARING_ALIGNED;

CL_STATIC_ASSERT(sizeof(struct cl__cid_slot) % CL_FALSE_SHARING_SIZE == 0,
		 "cachelocal: cid slots must not share a false-sharing unit");
CL_STATIC_ASSERT(sizeof(struct cl__cid_cpu) % CL_FALSE_SHARING_SIZE == 0,
		 "cachelocal: per-CPU cid state must not share a false-sharing unit");

#define CL__CID_HELD 1ul
#define CL__CID_STATE(cpu) ((((unsigned long)(cpu) + 1ul) << 1) | CL__CID_HELD)
#define CL__CID_LAST_CPU(state) ((long)((state) >> 1) - 1)

/*
 * struct cl_cid_domain - treat as opaque; the layout is here because the
 * library is header-only.
 *
 * cl_cid_domain_read_fast: read by every acquire (bound inputs, arrays);
 *   written by join/leave/refresh (rare) and by spreading (max_nr_cid grows at
 *   most to the bound, shrinks only with it).
 * cl_cid_domain_slow: the fallback lock, its condition variable and the
 *   waiter count (read by every release: stays clean while nobody waits),
 *   and what only the slow paths touch. Kept apart from the fast group so
 *   that sleeping acquirers do not invalidate it.
 */
struct cl_cid_domain {
	CL_GROUP_BEGIN_GUARDED(cl_cid_domain_read_fast);
	struct cl__cid_slot *slot; /* [nr] */
	struct cl__cid_cpu *cpu;   /* [nr] */
	int *llc;                  /* [nr] LLC id of each CPU, -1 unknown; read-only */
	unsigned nr;               /* cids and CPU ids: 0 .. nr-1 */
	int policy;
	unsigned users;
	unsigned nr_allowed;
	unsigned max_nr_cid;
	int strong_release; /* no membarrier: releases use a full fence */
	CL_GROUP_END_GUARDED(cl_cid_domain_read_fast);

	CL_GROUP_BEGIN_GUARDED(cl_cid_domain_slow);
	unsigned nr_waiters;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long *allowed; /* grow-only union of nr bits (internal/bitmap.h) */
	unsigned long long waits;
	unsigned long long busy;
	struct cl__fork_entry fork_reg; /* the fork registry (internal/fork.h) */
	CL_GROUP_END_GUARDED(cl_cid_domain_slow);
};

CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, slot);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, cpu);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, llc);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, nr);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, policy);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, users);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, nr_allowed);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, max_nr_cid);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_read_fast, strong_release);
CL_ASSERT_GROUP_SIZE(struct cl_cid_domain, cl_cid_domain_read_fast, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, nr_waiters);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, lock);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, cond);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, allowed);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, waits);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, busy);
CL_ASSERT_GROUP_MEMBER(struct cl_cid_domain, cl_cid_domain_slow, fork_reg);
CL_ASSERT_SAME_LINE(struct cl_cid_domain, slot, max_nr_cid);
CL_ASSERT_APART_GUARD(struct cl_cid_domain, users, nr_waiters);
CL_ASSERT_APART_GUARD(struct cl_cid_domain, max_nr_cid, lock);

CL_END_DECLS

#endif /* CACHELOCAL_CID_TYPES_H */
