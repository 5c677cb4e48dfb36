/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/balance/domains.h - the balancer's scheduling domains:
 * the table built from a struct cl_topology (cl_balance_set_topology()),
 * the group loads of one pass and its bottom-up choice of a source.
 *
 * Part of balance.h, which is the header to include: this file compiles
 * alone but its cl__ names are not API and may change without notice.
 *
 * The table orders the rqs by (node, LLC, core, rq id), so every group of
 * every level is a contiguous range of that order: a pass reads each rq's
 * nr_running once (O(rqs), no per-pass memory, no O(rqs^2)), summing the
 * groups as it goes. An LLC shared by two nodes is split by node.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../balance.h"

#ifndef CACHELOCAL_SCHED_BALANCE_DOMAINS_H
#define CACHELOCAL_SCHED_BALANCE_DOMAINS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../compiler.h"
#include "../../topology.h"
#include "../internal.h"
#include "../rq_core.h"

CL_BEGIN_DECLS

/* Levels of a migration (which domain's groups it evened out). */
enum { CL__BAL_SMT, CL__BAL_LLC, CL__BAL_NODE, CL__BAL_NUMA };

/* One rq's place in the table. */
struct cl__bal_rq {
	int core, llc, node;          /* its CPU's ids in the topology */
	unsigned int llc_lo, llc_hi;  /* its LLC's rqs: order[llc_lo .. llc_hi) */
	unsigned int node_lo, node_hi; /* its node's rqs */
	unsigned int imb_nr;          /* its node's NUMA allowance (the kernel's imb_numa_nr) */
};

/* The table: one allocation (struct, rq[], order[]), read-only once set. */
struct cl__bal_dom {
	unsigned int nr;          /* = the instance's nr_cpus */
	struct cl__bal_rq *rq;    /* by rq id */
	unsigned int *order;      /* rq ids by (node, LLC, core, id) */
};

/* A group's load as one pass read it. */
struct cl__bal_grp {
	unsigned long long sum; /* nr_running of its online rqs */
	unsigned int n;         /* its online rqs */
	int busiest;            /* its busiest online rq, -1 if none */
	unsigned int busiest_nr;
};

CL_INLINE int cl__bal_rq_cmp(const struct cl__bal_rq *x, unsigned int xi, const struct cl__bal_rq *y,
			     unsigned int yi)
{
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->llc != y->llc)
		return x->llc < y->llc ? -1 : 1;
	if (x->core != y->core)
		return x->core < y->core ? -1 : 1;
	return xi < yi ? -1 : xi > yi;
}

/*
 * cl__bal_dom_build() - the table for @nr rqs, rq i standing for CPU
 * @cpu_ids[i] of @t (CPU i when @cpu_ids is NULL). NULL with errno EINVAL
 * (an id not possible in @t) or ENOMEM.
 */
CL_INLINE struct cl__bal_dom *cl__bal_dom_build(unsigned int nr, const struct cl_topology *t,
						const int *cpu_ids)
{
	size_t off_rq = (sizeof(struct cl__bal_dom) + 15u) & ~(size_t)15u;
	size_t off_order = off_rq + (size_t)nr * sizeof(struct cl__bal_rq);
	unsigned int *tmp;
	char *mem;
	struct cl__bal_dom *d;

	for (unsigned int i = 0; i < nr; i++) {
		int id = cpu_ids ? cpu_ids[i] : (int)i;

		if (id < 0 || (unsigned int)id >= t->nr_cpu_ids || !t->cpu || !t->cpu[id].possible) {
			errno = EINVAL;
			return NULL;
		}
	}
	mem = (char *)calloc(1, off_order + (size_t)nr * sizeof(unsigned int));
	tmp = (unsigned int *)calloc(nr, sizeof(unsigned int));
	if (!mem || !tmp) {
		free(mem);
		free(tmp);
		errno = ENOMEM;
		return NULL;
	}
	d = (struct cl__bal_dom *)(void *)mem;
	d->nr = nr;
	d->rq = (struct cl__bal_rq *)(void *)(mem + off_rq);
	d->order = (unsigned int *)(void *)(mem + off_order);
	for (unsigned int i = 0; i < nr; i++) {
		const struct cl_cpu_info *ci = &t->cpu[cpu_ids ? cpu_ids[i] : (int)i];

		d->rq[i].core = ci->core;
		d->rq[i].llc = ci->llc;
		d->rq[i].node = ci->node;
		d->order[i] = i;
	}
	/* bottom-up merge sort of order[] (stable, O(nr log nr), no qsort context) */
	for (unsigned int w = 1; w < nr; w *= 2) {
		for (unsigned int lo = 0; lo < nr; lo += 2 * w) {
			unsigned int mid = lo + w < nr ? lo + w : nr, hi = lo + 2 * w < nr ? lo + 2 * w : nr;
			unsigned int a = lo, b = mid, k = lo;

			while (a < mid && b < hi) {
				unsigned int x = d->order[a], y = d->order[b];

				tmp[k++] = cl__bal_rq_cmp(&d->rq[y], y, &d->rq[x], x) < 0 ? d->order[b++]
											 : d->order[a++];
			}
			while (a < mid)
				tmp[k++] = d->order[a++];
			while (b < hi)
				tmp[k++] = d->order[b++];
		}
		memcpy(d->order, tmp, (size_t)nr * sizeof(unsigned int));
	}
	free(tmp);
	/* the ranges: LLC groups inside node groups */
	for (unsigned int lo = 0, hi; lo < nr; lo = hi) {
		const struct cl__bal_rq *first = &d->rq[d->order[lo]];
		unsigned int nr_llcs = 0, imb;

		for (hi = lo; hi < nr && d->rq[d->order[hi]].node == first->node; hi++)
			;
		for (unsigned int l = lo, lh; l < hi; l = lh) {
			int llc = d->rq[d->order[l]].llc;

			for (lh = l; lh < hi && d->rq[d->order[lh]].llc == llc; lh++)
				;
			for (unsigned int i = l; i < lh; i++) {
				d->rq[d->order[i]].llc_lo = l;
				d->rq[d->order[i]].llc_hi = lh;
			}
			nr_llcs++;
		}
		/* the kernel's imb_numa_nr: its LLCs, or 1/8 of its CPUs with one LLC; >= 1 */
		imb = nr_llcs > 1 ? nr_llcs : (hi - lo) >> 3;
		imb = imb ? imb : 1;
		for (unsigned int i = lo; i < hi; i++) {
			d->rq[d->order[i]].node_lo = lo;
			d->rq[d->order[i]].node_hi = hi;
			d->rq[d->order[i]].imb_nr = imb;
		}
	}
	return d;
}

/*
 * cl__balance_set_domains() - build the table for @t (NULL: none) and put
 * it in place of the old one.
 */
CL_INLINE int cl__balance_set_domains(struct cl_sched *s, const struct cl_topology *t, const int *cpu_ids)
{
	struct cl__bal_dom *d = NULL;

	if (!s) {
		errno = EINVAL;
		return -1;
	}
	if (t) {
		d = cl__bal_dom_build(s->nr_cpus, t, cpu_ids);
		if (!d)
			return -1;
	}
	free(s->balance_domains);
	s->balance_domains = d;
	return 0;
}

/* cl__bal_level() - the level a move between rqs @a and @b crosses. */
CL_INLINE int cl__bal_level(const struct cl__bal_dom *d, unsigned int a, unsigned int b)
{
	const struct cl__bal_rq *x = &d->rq[a], *y = &d->rq[b];

	if (x->node != y->node)
		return CL__BAL_NUMA;
	if (x->llc != y->llc)
		return CL__BAL_NODE;
	return x->core == y->core ? CL__BAL_SMT : CL__BAL_LLC;
}

/* cl__bal_grp_scan() - read the group order[@lo .. @hi) into @g, skipping rq @skip. */
CL_INLINE void cl__bal_grp_scan(const struct cl_sched *s, const struct cl__bal_dom *d, unsigned int lo,
				unsigned int hi, unsigned int skip, struct cl__bal_grp *g)
{
	g->sum = 0;
	g->n = 0;
	g->busiest = -1;
	g->busiest_nr = 0;
	for (unsigned int i = lo; i < hi; i++) {
		unsigned int c = d->order[i], nr;
		struct cl_rq *rq = cl__sched_rq(s, c);

		if (c == skip || !CL_READ_ONCE(rq->online))
			continue;
		nr = CL_READ_ONCE(rq->nr_running);
		g->sum += nr;
		g->n++;
		if (g->busiest < 0 || nr > g->busiest_nr) {
			g->busiest = (int)c;
			g->busiest_nr = nr;
		}
	}
}

/* Is @a busier than @b by average (sum / n)? Groups with no online rq are never. */
CL_INLINE int cl__bal_grp_busier(const struct cl__bal_grp *a, const struct cl__bal_grp *b)
{
	return a->n && (!b->n || a->sum * b->n > b->sum * a->n);
}

/* Add @b into @a (a group of groups). */
CL_INLINE void cl__bal_grp_add(struct cl__bal_grp *a, const struct cl__bal_grp *b)
{
	a->sum += b->sum;
	a->n += b->n;
	if (b->busiest >= 0 && (a->busiest < 0 || b->busiest_nr > a->busiest_nr)) {
		a->busiest = b->busiest;
		a->busiest_nr = b->busiest_nr;
	}
}

/*
 * cl__bal_grp_imbalance() - should @busiest give to @local under
 * @pct? Return: the tasks that would even their averages (to move at
 * most), 0 if balanced: the averages differ by @pct percent or less, or
 * moving one task would overshoot.
 */
CL_INLINE unsigned long long cl__bal_grp_imbalance(const struct cl__bal_grp *busiest,
						   const struct cl__bal_grp *local, unsigned int pct)
{
	unsigned long long b, l;

	if (!busiest->n || !local->n)
		return 0;
	b = busiest->sum * local->n;
	l = local->sum * busiest->n;
	if (b * 100 <= l * pct)
		return 0;
	return (b - l) / (busiest->n + local->n);
}

/*
 * cl__bal_find() - the domain pass for @dst: where to pull from and how
 * many tasks at most (*@max); -1 if every level is balanced. Lock-free (hints), each online rq read once.
 */
CL_INLINE int cl__bal_find(const struct cl_sched *s, const struct cl__bal_dom *d, unsigned int dst,
			   int *max)
{
	const struct cl__bal_rq *me = &d->rq[dst];
	unsigned int dst_nr = CL_READ_ONCE(cl__sched_rq(s, dst)->nr_running);
	unsigned int sib_nr = 0, pct;
	int sib = -1;
	struct cl__bal_grp llc, grp, best, node;
	unsigned long long imb;

	/* SMT core and LLC: the flat rule (busiest rq, >= 2 more than @dst) */
	llc.sum = dst_nr;
	llc.n = 1;
	llc.busiest = -1;
	llc.busiest_nr = 0;
	for (unsigned int i = me->llc_lo; i < me->llc_hi; i++) {
		unsigned int c = d->order[i], nr;
		struct cl_rq *rq = cl__sched_rq(s, c);

		if (c == dst || !CL_READ_ONCE(rq->online))
			continue;
		nr = CL_READ_ONCE(rq->nr_running);
		llc.sum += nr;
		llc.n++;
		if (d->rq[c].core == me->core && (sib < 0 || nr > sib_nr)) {
			sib = (int)c;
			sib_nr = nr;
		}
		if (llc.busiest < 0 || nr > llc.busiest_nr) {
			llc.busiest = (int)c;
			llc.busiest_nr = nr;
		}
	}
	*max = INT32_MAX;
	if (sib >= 0 && sib_nr >= dst_nr + 2) {
		return sib;
	}
	if (llc.busiest >= 0 && llc.busiest_nr >= dst_nr + 2) {
		return llc.busiest;
	}
	/* node: the busiest other LLC, if its average exceeds ours by the LLC percentage */
	node = llc;
	memset(&best, 0, sizeof(best));
	best.busiest = -1;
	for (unsigned int i = me->node_lo, hi; i < me->node_hi; i = hi) {
		hi = d->rq[d->order[i]].llc_hi;
		if (i == me->llc_lo)
			continue;
		cl__bal_grp_scan(s, d, i, hi, dst, &grp);
		cl__bal_grp_add(&node, &grp);
		if (cl__bal_grp_busier(&grp, &best))
			best = grp;
	}
	pct = CL_READ_ONCE(s->llc_imbalance_pct);
	pct = pct ? pct : CL_BALANCE_LLC_IMBALANCE_PCT;
	if (best.busiest >= 0 && best.busiest_nr >= dst_nr + 2 &&
	    (imb = cl__bal_grp_imbalance(&best, &llc, pct)) > 0) {
		*max = imb < INT32_MAX ? (int)imb : INT32_MAX;
		return best.busiest;
	}
	/* NUMA: the busiest other node, by the NUMA percentage and more than the allowance */
	memset(&best, 0, sizeof(best));
	best.busiest = -1;
	for (unsigned int i = 0, hi; i < d->nr; i = hi) {
		hi = d->rq[d->order[i]].node_hi;
		if (i == me->node_lo)
			continue;
		cl__bal_grp_scan(s, d, i, hi, dst, &grp);
		if (cl__bal_grp_busier(&grp, &best))
			best = grp;
	}
	pct = CL_READ_ONCE(s->numa_imbalance_pct);
	pct = pct ? pct : CL_BALANCE_NUMA_IMBALANCE_PCT;
	if (best.busiest >= 0 && best.busiest_nr >= dst_nr + 2 &&
	    (imb = cl__bal_grp_imbalance(&best, &node, pct)) > 0) {
		unsigned int allow = CL_READ_ONCE(s->numa_imb_nr);

		allow = allow ? allow - 1 : me->imb_nr;
		if (imb > allow) {
			*max = imb < INT32_MAX ? (int)imb : INT32_MAX;
				return best.busiest;
		}
	}
	return -1;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_BALANCE_DOMAINS_H */
