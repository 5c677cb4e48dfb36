/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cid/policy.h - the cid policy engine: the lock-free steps an
 * acquirer takes (this CPU's recent cid, the LLC step, spreading, the lowest
 * free cid), each a bounded number of CAS attempts on one cid's word, and
 * the per-cid counters that say which step produced a cid.
 *
 * Part of cid.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice. The
 * invariants and the synchronization table of the domain are at the top of
 * cid.h.
 */
#ifndef CACHELOCAL_CID_POLICY_H
#define CACHELOCAL_CID_POLICY_H

#include "../compiler.h"
#include "../config.h"
#include "types.h"

CL_BEGIN_DECLS

CL_INLINE unsigned cl__cid_bound(const struct cl_cid_domain *d)
{
	unsigned a = CL_ATOMIC_LOAD(&d->nr_allowed, CL_RELAXED);
	unsigned u = CL_ATOMIC_LOAD(&d->users, CL_RELAXED);

	return a < u ? a : u;
}

/* Try to take cid c for cpu: 1 if taken, 0 if it is held. */
CL_ALWAYS_INLINE int cl__cid_try(struct cl_cid_domain *d, unsigned c, int cpu)
{
	unsigned long *st = &d->slot[c].state;
	unsigned long old = CL_ATOMIC_LOAD(st, CL_RELAXED);

	if (old & CL__CID_HELD)
		return 0;
	CL_INJECT(40);
	return CL_ATOMIC_CAS(st, &old, CL__CID_STATE(cpu), CL_SEQ_CST, CL_RELAXED);
}

/* Count one acquisition of c (we hold c: nobody else writes its counters). */
#define CL__CID_COUNT(d, c, field)                                                   \
	do {                                                                         \
		struct cl__cid_slot *s__ = &(d)->slot[c];                            \
		CL_WRITE_ONCE(s__->acquisitions, CL_READ_ONCE(s__->acquisitions) + 1); \
		CL_WRITE_ONCE(s__->field, CL_READ_ONCE(s__->field) + 1);              \
	} while (0)

CL_ALWAYS_INLINE void cl__cid_set_recent(struct cl_cid_domain *d, int cpu, int c)
{
	int *r = &d->cpu[cpu].recent;

	if (CL_READ_ONCE(*r) != c)
		CL_WRITE_ONCE(*r, c);
}

/* Lowest free cid below bound, one pass; -1 if none. */
CL_INLINE int cl__cid_scan_lowest(struct cl_cid_domain *d, unsigned bound, int cpu)
{
	unsigned i;

	for (i = 0; i < bound; i++)
		if (cl__cid_try(d, i, cpu))
			return (int)i;
	return -1;
}

/* LLC step: a free cid below bound whose last user shares cpu's LLC. */
CL_INLINE int cl__cid_scan_llc(struct cl_cid_domain *d, unsigned bound, int cpu)
{
	int llc = d->llc[cpu];
	unsigned i;

	if (llc < 0)
		return -1;
	for (i = 0; i < bound; i++) {
		unsigned long st = CL_ATOMIC_LOAD(&d->slot[i].state, CL_RELAXED);
		long last = CL__CID_LAST_CPU(st);

		if ((st & CL__CID_HELD) || last < 0 || (unsigned long)last >= d->nr ||
		    d->llc[last] != llc)
			continue;
		if (cl__cid_try(d, i, cpu))
			return (int)i;
	}
	return -1;
}

/* Spread step: grow max_nr_cid toward bound and take the cid it adds. */
CL_INLINE int cl__cid_spread(struct cl_cid_domain *d, unsigned bound, int cpu)
{
	unsigned m = CL_ATOMIC_LOAD(&d->max_nr_cid, CL_RELAXED);
	unsigned tries;

	/* Each failed CAS means another acquirer moved the cursor: at most
	 * 2 * bound attempts before the cursor reaches the bound. */
	for (tries = 0; m < bound && tries < 2 * bound + 2; tries++) {
		CL_INJECT(41);
		if (!CL_ATOMIC_CAS(&d->max_nr_cid, &m, m + 1, CL_RELAXED, CL_RELAXED))
			continue;
		if (cl__cid_try(d, m, cpu))
			return (int)m;
		m++;
	}
	return -1;
}

/* The cids currently held (a racy count). */
CL_INLINE unsigned cl__cid_held(const struct cl_cid_domain *d)
{
	unsigned i, n = 0;

	for (i = 0; i < d->nr; i++)
		n += (unsigned)(CL_ATOMIC_LOAD(&d->slot[i].state, CL_RELAXED) & CL__CID_HELD);
	return n;
}

/*
 * The policy's steps after "this CPU's recent cid" failed (steps 2 and the
 * LLC step at the top of cid.h), counted in the cid's statistics: a cid, or
 * -1 when the caller must fall back to the lowest free cid.
 */
CL_INLINE int cl__cid_policy_steps(struct cl_cid_domain *d, int cpu, unsigned bound, int recent)
{
	unsigned m;
	int c;

	if (d->policy == CL_CID_NAIVE)
		return -1;
	m = CL_ATOMIC_LOAD(&d->max_nr_cid, CL_RELAXED);
	/* The bound shrank: pull the spread cursor back (kernel 6.14). */
	while (m > bound && !CL_ATOMIC_CAS(&d->max_nr_cid, &m, bound, CL_RELAXED, CL_RELAXED))
		;
	if (d->policy == CL_CID_LLC && recent >= 0) {
		c = cl__cid_scan_llc(d, bound, cpu);
		if (c >= 0) {
			CL__CID_COUNT(d, c, llc_hits);
			return c;
		}
	}
	c = cl__cid_spread(d, bound, cpu);
	if (c >= 0)
		CL__CID_COUNT(d, c, spreads);
	return c;
}

CL_END_DECLS

#endif /* CACHELOCAL_CID_POLICY_H */
