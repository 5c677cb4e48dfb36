/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops/pseudocode.h - the pseudo-code of every rseq
 * critical section and of its fallback, written down once.
 *
 * The kernel-doc of percpu_ops.h, docs/percpu_ops.md and the templates
 * (arch/<arch>/percpu_ops_tmpl.h) point here instead of repeating
 * it; a change to a section changes this file in the same commit. It ships
 * with the installed headers, so the pointers resolve for a user of an
 * installed copy too. Comments only: including it includes percpu_ops.h.
 *
 * Every section starts the same way:
 *	rseq->rseq_cs = &descriptor;           (ABI offset 8; the only ABI field written)
 *   start:
 *	if (rseq->index_field != index) abort; (cl_rseq_<op> only)
 *	... loads and compares ...
 *	the commit store                       (the last instruction)
 *   post_commit:
 * index_field is cpu_id (ABI offset 4) for CL_RSEQ_INDEX_CPU_ID data and
 * mm_cid (offset 24) for CL_RSEQ_INDEX_MM_CID data. "return 1" is
 * CL_RSEQ_CMPFAIL (nothing stored); an abort returns CL_RSEQ_ABORT from the
 * one-attempt operation and is retried inside the per-CPU path. The
 * sections of the per-CPU path read the index themselves after start, so
 * they need no compare: any preemption, migration or signal since the read
 * aborts them. Stores before the commit go to memory nobody else reads
 * until the commit (the caller's node, *out).
 *
 * ---- one attempt on the data of one index: cl_rseq_<op>(kind, ..., index)
 *
 * add(v, count):
 *	*v += count;                           commit
 *   fallback: atomic fetch-add, relaxed.
 *
 * cmpstore(v, expect, newv):
 *	if (*v != expect) return 1;
 *	*v = newv;                             commit
 *   fallback: under v's striped lock, an acquire load and a release store.
 *
 * pop_until(head, next_offset, end, out):      pop: end = NULL
 *	node = *head;
 *	if (node == end) return 1;
 *	*out = node;                           (a private word: harmless if aborted)
 *	*head = *(node + next_offset);         commit
 *   fallback: set bit 0 of the head with a CAS (the lock bit), read
 *   node->next, store next with release order (clears the bit).
 *
 * trypush(head, next_offset, node):            built on cmpstore
 *	first = *head;                         (fallback: wait while bit 0 is set)
 *	node->next = first;
 *	return cmpstore(head, first, node);    1: the head moved
 *   fallback: a release CAS (fails while a pop holds the lock bit).
 *
 * cmpstore_store(v, expect, v2, newv2, newv, mo):
 *	if (*v != expect) return 1;
 *	*v2 = newv2;                           (not visible before the commit)
 *	*v = newv;                             commit (a release store on x86-64)
 *   fallback: under v's striped lock; the commit a release store for
 *   CL_RSEQ_MO_RELEASE.
 *
 * cmp2_store(v, expect, v2, expect2, newv):
 *	if (*v != expect) return 1;
 *	if (*v2 != expect2) return 1;
 *	*v = newv;                             commit
 *   fallback: under v's striped lock.
 *
 * cmpmemcpy_store(v, expect, dst, src, len, newv, mo):
 *	if (*v != expect) return 1;
 *	memcpy(dst, src, len);                 (8 bytes at a time, then bytes)
 *	*v = newv;                             commit
 *   fallback: under v's striped lock.
 *
 * deref_add(ptr, off, count):
 *	p = *ptr;
 *	*(intptr_t *)(p + off) += count;       commit
 *   (a cmpstore swapping *ptr on the same index cannot run between the load
 *   and the add.) fallback: the load and an atomic add under ptr's striped
 *   lock, which the swapping cmpstore takes too.
 *
 * ---- the per-CPU path: cl_percpu_<op>(kind, p, stride, ...), i's copy
 *      of p is p + i * stride (cl_percpu_ptr_stride())
 *
 * add(p, stride, count):                       add_here
 *	i = rseq->index_field;
 *	*(p + i * stride) += count;            commit
 *   fallback: atomic add on the current index's copy.
 *
 * cmpstore(p, stride, expect, newv):
 *	i = the current index, read before;
 *	cl_rseq_cmpstore(p + i * stride, expect, newv, i);
 *
 * list_pop(head, stride, next_offset, out):    pop_here
 *	i = rseq->index_field; h = head + i * stride;
 *	node = *h;
 *	if (node == NULL) return CL_PERCPU_CMPFAIL;
 *	*out = node;
 *	*h = *(node + next_offset);            commit
 *
 * list_push(head, stride, next_offset, node):  push_here
 *	i = rseq->index_field; h = head + i * stride;
 *	node->next = *h;                       (the caller's node: harmless if aborted)
 *	*h = node;                             commit
 *   fallback (both lists): the lock-bit pop / the CAS push above on the
 *   current index's head; the push retried until it succeeds.
 *
 * buf_push(count, stride, items, cap, item, mo):   bufpush_here, bufpush_packed
 *	i = rseq->index_field; c = count + i * stride; it = items + i * stride;
 *	n = *c;
 *	if ((unsigned)n >= cap) return CL_PERCPU_CMPFAIL;   (full; a drainer's n < 0 too)
 *	it[n] = item;
 *	*c = n + 1;                            commit (a release store on x86-64)
 *   fallback: cmpstore_store(c, n, &it[n], item, n + 1) under c's lock.
 *
 * buf_pop(count, stride, items, out):          bufpop_here, bufpop_packed
 *	i = rseq->index_field; c = count + i * stride; it = items + i * stride;
 *	n = *c;
 *	if (n <= 0) return CL_PERCPU_CMPFAIL;  (empty; a drainer's n < 0 too)
 *	*out = it[n - 1];                      (meaningful only on success)
 *	*c = n - 1;                            commit
 *   fallback: cmp2_store(c, n, &it[n - 1], item, n - 1) under c's lock:
 *   both compares, as the count alone could match after a pop and a push
 *   of another item between the snapshot and the store.
 *
 * buf_push_copy(count, stride, buf, cap, size, src, mo):
 *	i = the current index, read before; n = i's count;
 *	if (n < 0 || n >= cap) return CL_PERCPU_CMPFAIL;    (full)
 *	cl_rseq_cmpmemcpy_store(count + i * stride, n,
 *				buf + i * stride + n * size, src, size, n + 1, i);
 *
 * deref_add(ptr, stride, off, count):
 *	i = the current index, read before;
 *	cl_rseq_deref_add(ptr + i * stride, off, count, i);
 */
#ifndef CACHELOCAL_PERCPU_OPS_PSEUDOCODE_H
#define CACHELOCAL_PERCPU_OPS_PSEUDOCODE_H
#include "../percpu_ops.h"
#endif /* CACHELOCAL_PERCPU_OPS_PSEUDOCODE_H */
