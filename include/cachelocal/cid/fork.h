/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cid/fork.h - fork() handling of cid domains: in the child every
 * domain is reset to "just created" (no users, no allowed CPUs, no holders,
 * statistics zero; policy and topology kept) by a hook of the library's
 * fork registry (internal/fork.h), which holds every domain's lock across
 * fork(). cl_cid_domain_create() uses the same reset.
 *
 * Part of cid.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and may change without notice. The
 * invariants and the synchronization table of the domain are at the top of
 * cid.h.
 */
#ifndef CACHELOCAL_CID_FORK_H
#define CACHELOCAL_CID_FORK_H

#include <pthread.h>
#include <string.h>

#include "../compiler.h"
#include "../internal/bitmap.h"
#include "../internal/fork.h"
#include "types.h"

CL_BEGIN_DECLS

/* Reset to "just created" (keeps policy, nr, llc and the allocations). */
CL_INLINE void cl__cid_domain_reset(struct cl_cid_domain *d)
{
	unsigned i;

	memset(d->slot, 0, (size_t)d->nr * sizeof(*d->slot));
	for (i = 0; i < d->nr; i++)
		d->cpu[i].recent = -1;
	cl__bitmap_zero(d->allowed, d->nr);
	d->users = 0;
	d->nr_allowed = 0;
	d->max_nr_cid = 0;
	d->nr_waiters = 0;
	d->waits = 0;
	d->busy = 0;
}

/* fork() child hook (internal/fork.h): d->lock is held; the parent's
 * sleepers do not exist here, so re-create the condition variable, then
 * empty the domain. */
CL_INLINE void cl__cid_fork_child(struct cl__fork_entry *e)
{
	struct cl_cid_domain *d = cl_container_of(e, struct cl_cid_domain, fork_reg);

	pthread_cond_init(&d->cond, NULL);
	cl__cid_domain_reset(d);
}

CL_END_DECLS

#endif /* CACHELOCAL_CID_FORK_H */
