/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/percpu_ops.h - restartable per-CPU operations (rseq critical
 * sections) with a portable fallback, and the per-CPU path built on them.
 *
 * Each operation updates per-CPU (or per-concurrency-ID) data without an
 * atomic instruction: a short instruction sequence registered with the
 * kernel through rseq, aborted if the thread is preempted, migrated or
 * signalled before its final store (the commit).
 *
 * Two levels:
 *   cl_rseq_<op>(kind, ..., index)   one attempt on the data of one index,
 *       named after its mechanism (cmpstore, cmp2_store, ...); an abort
 *       returns CL_RSEQ_ABORT and the caller retries with a fresh index
 *       (cl_rseq_current_index()).
 *   cl_percpu_<op>(kind, p, stride, ...)   the per-CPU path, named after
 *       its purpose (add, buf_push, list_pop, ...): current index -> that
 *       index's copy of a pool object (cl_percpu_ptr_stride(p, i, stride))
 *       -> operation -> again on abort. Returns the index whose copy
 *       changed. This is what per-CPU structures (counter.h, objcache.h)
 *       use.
 * The index kind (enum cl_rseq_index) is the first parameter of every
 * operation: CL_RSEQ_INDEX_CPU_ID data is indexed by CPU number and the
 * section compares the thread's rseq cpu_id; CL_RSEQ_INDEX_MM_CID data by
 * the kernel's concurrency ID and the section compares mm_cid itself (an
 * mm_cid can change without the thread changing CPU; docs/rseq.md).
 *
 * Return codes: errors are -1 with errno (EINVAL bad argument, ENOSYS the
 * process runs critical sections but this thread has no rseq area), as
 * everywhere in the library. cl_rseq_<op>: CL_RSEQ_OK (0) committed,
 * CL_RSEQ_CMPFAIL (1) a compare failed (nothing stored), CL_RSEQ_ABORT (-2)
 * retry with a fresh index, CL_RSEQ_ERROR (-1). cl_percpu_<op>: the index
 * (>= 0), CL_PERCPU_CMPFAIL (-3) compare failed / empty / full (nothing
 * stored), or -1. Aborts are retried inside the per-CPU path.
 *
 * Pseudo-code of every critical section and of its fallback, once:
 * percpu_ops/pseudocode.h. Rules for writing one's own section:
 * docs/percpu_ops.md.
 *
 * Implementation, chosen once per process (cl_rseq_ops_mode()):
 *   rseq    x86_64 or aarch64 asm (arch/percpu_ops.h picks arch/<arch>/,
 *           GNU asm goto) when rseq is registered for the first thread
 *           that asks;
 *   atomic  a fallback on the same per-CPU memory: no asm for this
 *           architecture, a ThreadSanitizer build (it cannot model
 *           restarts), CL_NO_RSEQ_ASM, rseq unavailable (old kernel,
 *           seccomp), or, for the mm_cid kind, no mm_cid from the kernel.
 * The choice is process-wide (a weak symbol), never per thread: an rseq add
 * is a plain read-modify-write that is only safe if nobody else updates the
 * word with atomics from another CPU. Every translation unit of a program
 * must agree on CL_NO_RSEQ_ASM and on sanitizer flags.
 *
 * Synchronization table (same commit word, two threads):
 *                      add   cmpstore/cmp*_store/deref_add   pop/push      load
 *   add                yes   -                               -             yes (untorn)
 *   cmpstore, cmp*     -     yes                             -             yes
 *   pop, push          -     -                               yes           cl_rseq_list_first()
 * deref_add's target word is written only by deref_add and add; the pointer
 * it loads is changed only by cmpstore. A list head is changed only through
 * the pops and pushes; in the fallback a pop briefly sets bit 0 of the head
 * as its lock, so a racy reader masks it (cl_rseq_list_first()).
 *
 * Test hooks: CL_INJECT(n) (config.h) runs in C around each critical
 * section; CL_RSEQ_INJECT_ASM(n) is an asm string placed between the steps
 * inside it (default ""), with CL_RSEQ_INJECT_CLOBBER (default nothing, else
 * a leading comma and register names) for the registers it uses; on x86_64
 * it may use %rax and %rcx too (saved around it), on aarch64 x16 and x17
 * only (arch/<arch>/percpu_ops.h).
 *
 * Layout: this file holds the API (types, return codes, kernel-doc and
 * declarations); the bodies are in percpu_ops/ (mode.h: the decision and
 * the current index; fallback.h; rseq_ops.h: cl_rseq_<op>; path.h:
 * cl_percpu_<op>), private and included at the end of this file.
 */
#ifndef CACHELOCAL_PERCPU_OPS_H
#define CACHELOCAL_PERCPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "config.h"
#include "percpu.h"
#include "rseq.h"

CL_BEGIN_DECLS

/* Return codes (see above). */
#define CL_RSEQ_OK 0
#define CL_RSEQ_CMPFAIL 1
#define CL_RSEQ_ERROR (-1)     /* errno EINVAL or ENOSYS: do not retry */
#define CL_RSEQ_ABORT (-2)     /* cl_rseq_<op>: retry with a fresh index */
#define CL_PERCPU_CMPFAIL (-3) /* cl_percpu_<op>: compare failed, empty or full */
CL_STATIC_ASSERT(CL_RSEQ_ERROR == -1 && CL_RSEQ_ABORT != CL_PERCPU_CMPFAIL &&
			 CL_RSEQ_ABORT < CL_RSEQ_ERROR && CL_PERCPU_CMPFAIL < CL_RSEQ_ERROR,
		 "errors are -1; the other negative codes are distinct");

/* Which id indexes the data an operation touches. */
enum cl_rseq_index {
	CL_RSEQ_INDEX_CPU_ID, /* rseq cpu_id: the CPU the thread runs on */
	CL_RSEQ_INDEX_MM_CID, /* rseq mm_cid: the kernel's concurrency ID */
};

/* Order of the final store of the buffer operations. */
enum cl_rseq_mo {
	CL_RSEQ_MO_RELAXED, /* the buffer is read on its own CPU only */
	CL_RSEQ_MO_RELEASE, /* a consumer on another CPU reads it after an acquire load of *v */
};

/* How the operations are carried out in this process. */
enum cl_rseq_ops_mode {
	CL_RSEQ_OPS_RSEQ,              /* rseq critical sections (asm) */
	CL_RSEQ_OPS_ATOMIC_NO_ASM,     /* fallback: no critical sections for this arch */
	CL_RSEQ_OPS_ATOMIC_TSAN,       /* fallback: ThreadSanitizer build */
	CL_RSEQ_OPS_ATOMIC_FORCED,     /* fallback: CL_NO_RSEQ_ASM defined */
	CL_RSEQ_OPS_ATOMIC_NO_RSEQ,    /* fallback: rseq not available to this process */
	CL_RSEQ_OPS_ATOMIC_NO_MM_CID,  /* fallback (mm_cid index): kernel has no mm_cid */
};

/* ---- the mode and the current index (percpu_ops/mode.h) ---- */

/**
 * cl_rseq_ops_mode_index() - how operations on data of index kind @kind run here.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 *
 * The first call in the process decides (from the calling thread's rseq
 * registration) and every later call returns the same answer, except that a
 * translation unit built with a fallback reason (TSan, CL_NO_RSEQ_ASM, no
 * asm) always reports that reason.
 *
 * Context: any thread; may register rseq for the calling thread (glibc-off).
 * Return: an enum cl_rseq_ops_mode value; CL_RSEQ_OPS_RSEQ means critical
 * sections.
 */
CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode_index(enum cl_rseq_index kind);

/**
 * cl_rseq_ops_mode() - how cpu_id-indexed operations run in this process.
 *
 * Context: any thread.
 * Return: cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID).
 */
CL_INLINE enum cl_rseq_ops_mode cl_rseq_ops_mode(void);

/**
 * cl_rseq_ops_mode_name() - printable name of an operations mode.
 * @m: the mode.
 *
 * Context: any.
 * Return: a static string ("rseq", "atomic-no-asm", "atomic-tsan",
 * "atomic-forced", "atomic-no-rseq", "atomic-no-mm_cid", or "?").
 */
CL_INLINE const char *cl_rseq_ops_mode_name(enum cl_rseq_ops_mode m);

/**
 * cl_rseq_current_index() - the index to pass to an operation on @kind data.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 *
 * On the rseq path this is the raw field the critical section will compare
 * (cpu_id or mm_cid of this thread's rseq area), so it is below the number
 * of possible CPUs. On the fallback path it is cl_cpu_id() or cl_mm_cid();
 * any in-range index is then safe, so callers reduce it to their slot count.
 * The value may be stale by the time it is used: the operation then aborts
 * (rseq path) and the caller asks again.
 *
 * Context: any thread.
 * Return: an index >= 0.
 */
CL_INLINE int cl_rseq_current_index(enum cl_rseq_index kind);

/* ---- one attempt on the data of one index (percpu_ops/rseq_ops.h) ---- */

/*
 * Common to the cl_rseq_<op>() below: @kind is the index kind of the data,
 * @index the index of its owner (from cl_rseq_current_index(@kind)); the
 * section and its fallback are in percpu_ops/pseudocode.h under the
 * operation's name. Return: CL_RSEQ_OK; CL_RSEQ_CMPFAIL (operations with a
 * compare); CL_RSEQ_ABORT (retry with a fresh index; never from the
 * fallback); CL_RSEQ_ERROR with errno EINVAL (bad @kind or @mo, or a NULL
 * pointer argument: every word, head, @out, @v2, @dst and @src is checked
 * before the mode is looked at, so the answer is the same with critical
 * sections and in the fallback) or ENOSYS (no rseq area in this thread).
 * @end may be NULL; @node is checked by cl_rseq_trypush() itself.
 */

/**
 * cl_rseq_add() - *@v += @count on the word of index @index, if still there.
 * @kind: the index kind of the data (CL_RSEQ_INDEX_CPU_ID or _MM_CID).
 * @v: a word belonging to index @index (per-CPU data).
 * @count: the addend.
 * @index: the index of @v's owner; ignored by the fallback (an atomic add).
 *
 * Context: any thread, also a signal handler once the thread has used an
 * operation (its rseq area is then live; the first use may register it).
 * Return: CL_RSEQ_OK, CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_add(enum cl_rseq_index kind, intptr_t *v, intptr_t count, int index);

/**
 * cl_rseq_cmpstore() - if *@v == @expect then *@v = @newv, on index @index.
 * @kind: the index kind of the data.
 * @v: a word belonging to index @index.
 * @expect: the value *@v must hold.
 * @newv: the value stored.
 * @index: the index of @v's owner.
 *
 * Ordered like a CAS with acquire-release (x86_64: TSO; aarch64: ldar and
 * stlr; fallback: acquire load and release store under the word's striped
 * lock).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL (*@v != @expect), CL_RSEQ_ABORT or
 * CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpstore(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
				      intptr_t newv, int index);

/**
 * cl_rseq_pop_until() - pop the first node of a list unless it is @end.
 * @kind: the index kind of the data.
 * @head: the list head (a void * holding the first node, or @end).
 * @next_offset: offset of the node's "next" pointer (a void *) in a node.
 * @end: the value that marks an empty list (NULL, or a sentinel node).
 * @out: receives the node on success.
 * @index: the index of @head's owner.
 *
 * ABA-safe in both modes (the fallback holds a lock bit in bit 0 of the
 * head: nodes and @end must be 2-byte aligned).
 *
 * Context: any thread; nodes must not be freed while another thread may
 * still pop them from this list (they may be reused, pushed again). Not from
 * a signal handler that may interrupt a pop or push of the same list: in
 * the fallback the handler would wait for the lock bit forever.
 * Return: CL_RSEQ_OK (*@out set), CL_RSEQ_CMPFAIL (the head is @end),
 * CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_pop_until(enum cl_rseq_index kind, void **head, size_t next_offset,
				       void *end, void **out, int index);

/**
 * cl_rseq_pop() - cl_rseq_pop_until() with @end NULL: pop the first node.
 * @kind: the index kind of the data.
 * @head: the list head (NULL: empty).
 * @next_offset: offset of the "next" pointer in a node.
 * @out: receives the node.
 * @index: the index of @head's owner.
 *
 * Context: as cl_rseq_pop_until().
 * Return: as cl_rseq_pop_until(); CL_RSEQ_CMPFAIL means empty.
 */
CL_ALWAYS_INLINE int cl_rseq_pop(enum cl_rseq_index kind, void **head, size_t next_offset,
				 void **out, int index);

/**
 * cl_rseq_trypush() - push @node on the list of index @index (one attempt).
 * @kind: the index kind of the data.
 * @head: the list head.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node: pointer-aligned, and so its next pointer at @next_offset
 *        (else CL_RSEQ_ERROR, EINVAL, in every mode).
 * @index: the index of @head's owner.
 *
 * Context: any thread; @node is owned by the caller until the push commits.
 * Not from a signal handler that may interrupt a pop of the same list.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL (the head changed: try again),
 * CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_trypush(enum cl_rseq_index kind, void **head, size_t next_offset,
				     void *node, int index);

/**
 * cl_rseq_cmpstore_store() - if *@v == @expect: *@v2 = @newv2, then *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @v2: the first word stored (the buffer slot), same index's data.
 * @newv2: stored to *@v2.
 * @newv: stored to *@v, the commit.
 * @mo: CL_RSEQ_MO_RELAXED, or CL_RSEQ_MO_RELEASE when a consumer on another
 *	CPU reads *@v2 after an acquire load of *@v.
 * @index: the index of the data's owner.
 *
 * The mechanism of a buffer push (cl_percpu_buf_push()).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpstore_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					    intptr_t *v2, intptr_t newv2, intptr_t newv,
					    enum cl_rseq_mo mo, int index);

/**
 * cl_rseq_cmp2_store() - if *@v == @expect and *@v2 == @expect2: *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @v2: a second word to compare (the buffer's top slot), same index's data.
 * @expect2: the value *@v2 must hold.
 * @newv: stored to *@v.
 * @index: the index of the data's owner.
 *
 * The mechanism of a buffer pop (cl_percpu_buf_pop()).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_cmp2_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					intptr_t *v2, intptr_t expect2, intptr_t newv, int index);

/**
 * cl_rseq_cmpmemcpy_store() - if *@v == @expect: copy @len bytes, then *@v = @newv.
 * @kind: the index kind of the data.
 * @v: the commit word (a buffer's count) of index @index.
 * @expect: the value *@v must hold.
 * @dst: where to copy (the buffer's free slot), same index's data.
 * @src: what to copy (private to the caller while the call runs).
 * @len: bytes to copy; keep it small (the section is restarted from the
 *	start on every abort; a few cache lines at most).
 * @newv: stored to *@v.
 * @mo: as for cl_rseq_cmpstore_store().
 * @index: the index of the data's owner.
 *
 * The mechanism of a copy-in buffer push (cl_percpu_buf_push_copy()).
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_CMPFAIL, CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_cmpmemcpy_store(enum cl_rseq_index kind, intptr_t *v, intptr_t expect,
					     void *dst, const void *src, size_t len, intptr_t newv,
					     enum cl_rseq_mo mo, int index);

/**
 * cl_rseq_deref_add() - *(intptr_t *)(*@ptr + @off) += @count, *@ptr read inside.
 * @kind: the index kind of the data.
 * @ptr: a pointer word of index @index (e.g. this CPU's current block).
 * @off: byte offset of the counter word in the block *@ptr points to.
 * @count: the addend.
 * @index: the index of @ptr's owner.
 *
 * The add lands in the block *@ptr held at the commit: a cmpstore that
 * swaps *@ptr on the same index cannot run between the load and the add.
 *
 * Context: any thread.
 * Return: CL_RSEQ_OK, CL_RSEQ_ABORT or CL_RSEQ_ERROR (errno).
 */
CL_ALWAYS_INLINE int cl_rseq_deref_add(enum cl_rseq_index kind, void **ptr, ptrdiff_t off,
				       intptr_t count, int index);

/**
 * cl_rseq_list_first() - racy peek at a list head, without the fallback's lock bit.
 * @head: the list head.
 *
 * Context: any thread; the node may be popped at any time after the read.
 * Return: the first node or NULL (also, with errno EINVAL, for a NULL @head).
 */
CL_INLINE void *cl_rseq_list_first(void **head);

/* ---- the per-CPU path (percpu_ops/path.h) ---- */

/*
 * Common to the cl_percpu_<op>() below: they work on objects of a percpu.h
 * pool (or any layout where index i's copy of an object lies i * stride
 * bytes after index 0's: cl_percpu_ptr_stride()). A pointer argument is
 * CPU 0's address of the object (what cl_percpu_alloc() returned), @stride
 * the pool's stride (cl_percpu_pool_stride(), CL_PERCPU_STRIDE by default),
 * and every index the kind can produce must have a copy: a pool made with
 * max_nr_cpus 0 covers cpu_id and mm_cid alike. The section and its
 * fallback are in percpu_ops/pseudocode.h under the function's name without
 * its prefix. Return: the index whose copy the operation changed (or, when
 * nothing was stored, looked at), >= 0; CL_PERCPU_CMPFAIL (nothing stored);
 * -1 with errno EINVAL (NULL pointer, zero stride, bad kind, mo or size;
 * checked before the mode, so in every mode alike) or ENOSYS (no rseq area
 * in this thread).
 */

/**
 * cl_percpu_add() - add @count to this CPU's (or mm_cid's) copy of *@p.
 * @kind: CL_RSEQ_INDEX_CPU_ID or CL_RSEQ_INDEX_MM_CID.
 * @p: CPU 0's address of a per-CPU intptr_t (a pool object).
 * @stride: bytes between two indexes' copies.
 * @count: the addend.
 *
 * One section reads the index and computes the copy's address itself (no
 * index compare); docs/percpu_ops.md says why this shape.
 *
 * Context: any thread, also a signal handler (see cl_rseq_add()).
 * Return: the index whose copy was added to, or -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_add(enum cl_rseq_index kind, intptr_t *p, size_t stride,
				   intptr_t count);

/**
 * cl_percpu_cmpstore() - if this copy of *@p == @expect, store @newv there.
 * @kind: the index kind.
 * @p: CPU 0's address of a per-CPU intptr_t.
 * @stride: bytes between two indexes' copies.
 * @expect: the value the copy must hold.
 * @newv: the value stored.
 *
 * Context: any thread.
 * Return: the index whose copy was stored to; CL_PERCPU_CMPFAIL the copy of
 * the current index did not hold @expect; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_cmpstore(enum cl_rseq_index kind, intptr_t *p, size_t stride,
					intptr_t expect, intptr_t newv);

/**
 * cl_percpu_list_pop() - pop the first node of this CPU's copy of a list.
 * @kind: the index kind.
 * @head: CPU 0's address of a per-CPU list head (void *, NULL when empty).
 * @stride: bytes between two indexes' copies.
 * @next_offset: offset of the "next" pointer (a void *) in a node.
 * @out: receives the node.
 *
 * Context: as cl_rseq_pop_until().
 * Return: the index whose list the node came from (*@out set);
 * CL_PERCPU_CMPFAIL that list was empty; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_list_pop(enum cl_rseq_index kind, void **head, size_t stride,
					size_t next_offset, void **out);

/**
 * cl_percpu_list_push() - push @node on this CPU's copy of a list.
 * @kind: the index kind.
 * @head: CPU 0's address of a per-CPU list head.
 * @stride: bytes between two indexes' copies.
 * @next_offset: offset of the "next" pointer in a node.
 * @node: the node, owned by the caller: pointer-aligned, and so its next
 *        pointer at @next_offset (else -1, EINVAL, in every mode).
 *
 * Always pushes (retried until it commits); fails only on bad input or a
 * missing rseq area.
 *
 * Context: as cl_rseq_trypush().
 * Return: the index whose list @node was pushed on; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_list_push(enum cl_rseq_index kind, void **head, size_t stride,
					 size_t next_offset, void *node);

/**
 * cl_percpu_buf_push() - buffer push: append @item to this CPU's copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count (an intptr_t).
 * @stride: bytes between two indexes' copies.
 * @items: CPU 0's address of the buffer's slot array (void *[@cap]), in the
 *	same pool object as @count.
 * @cap: number of slots (> 0).
 * @item: the pointer to append.
 * @mo: CL_RSEQ_MO_RELAXED, or CL_RSEQ_MO_RELEASE when a consumer on another
 *	CPU reads the slots after an acquire load of the count.
 *
 * A negative count (a drainer owns the copy) reads as full.
 *
 * Context: any thread.
 * Return: the index whose buffer took @item; CL_PERCPU_CMPFAIL that buffer
 * was full; -1 (errno EINVAL: also @cap <= 0; ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_buf_push(enum cl_rseq_index kind, intptr_t *count, size_t stride,
					void **items, intptr_t cap, void *item, enum cl_rseq_mo mo);

/**
 * cl_percpu_buf_pop() - buffer pop: take the last item of this CPU's copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count.
 * @stride: bytes between two indexes' copies.
 * @items: CPU 0's address of the buffer's slot array.
 * @out: receives the item; meaningful only on success (an aborted attempt
 *	may have written it).
 *
 * A negative count (a drainer owns the copy) reads as empty.
 *
 * Context: any thread.
 * Return: the index whose buffer gave *@out; CL_PERCPU_CMPFAIL that buffer
 * was empty; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_buf_pop(enum cl_rseq_index kind, intptr_t *count, size_t stride,
				       void **items, void **out);

/**
 * cl_percpu_buf_push_copy() - copy-in buffer push: append one element by copy.
 * @kind: the index kind.
 * @count: CPU 0's address of the buffer's count (elements used).
 * @stride: bytes between two indexes' copies.
 * @buf: CPU 0's address of the element array (@cap elements of @size bytes).
 * @cap: number of elements (> 0).
 * @size: bytes per element (> 0; small: the copy runs inside the section).
 * @src: the element to copy in.
 * @mo: as for cl_percpu_buf_push().
 *
 * Context: any thread.
 * Return: the index whose buffer took the element; CL_PERCPU_CMPFAIL full;
 * -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_buf_push_copy(enum cl_rseq_index kind, intptr_t *count,
					     size_t stride, void *buf, intptr_t cap, size_t size,
					     const void *src, enum cl_rseq_mo mo);

/**
 * cl_percpu_deref_add() - add @count through this CPU's copy of a pointer.
 * @kind: the index kind.
 * @ptr: CPU 0's address of a per-CPU pointer (void *) to a block.
 * @stride: bytes between two indexes' copies.
 * @off: byte offset of an intptr_t in the block.
 * @count: the addend.
 *
 * The block is the one the pointer held when the add committed.
 *
 * Context: any thread.
 * Return: the index whose pointer was followed; -1 (errno EINVAL, ENOSYS).
 */
CL_ALWAYS_INLINE int cl_percpu_deref_add(enum cl_rseq_index kind, void **ptr, size_t stride,
					 ptrdiff_t off, intptr_t count);

CL_END_DECLS

/* The bodies, in dependency order (private; each one job). */
#include "percpu_ops/mode.h"
#include "percpu_ops/fallback.h"
#include "percpu_ops/rseq_ops.h"
#include "percpu_ops/path.h"

#endif /* CACHELOCAL_PERCPU_OPS_H */
