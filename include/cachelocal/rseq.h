/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/rseq.h - the kernel rseq ABI, glibc-deferring registration, and
 * the cheap id getters built on it: cl_cpu_id(), cl_mm_cid(), cl_node_id().
 *
 * Who owns the rseq area (one per thread; the kernel accepts one):
 *  - glibc >= 2.35 registers an area for every thread and exports
 *    __rseq_offset (area = thread pointer + offset) and __rseq_size. When
 *    __rseq_size != 0, cachelocal uses glibc's area and never registers.
 *  - Otherwise (glibc too old, GLIBC_TUNABLES=glibc.pthread.rseq=0, static
 *    binary without the symbols...) cachelocal registers its own area, one
 *    process-wide weak __thread object, lazily in each thread on the first
 *    id request, with glibc's signature, and unregisters it at thread exit
 *    (pthread key destructor).
 *  - Same case, but librseq is linked into the process (it exports
 *    rseq_offset, rseq_size and rseq_register_current_thread()): librseq
 *    owns the areas (its own per-thread area at thread pointer +
 *    rseq_offset). cachelocal uses that area: when a thread already
 *    registered it through librseq, cachelocal finds it live (cpu_id >= 0)
 *    and never calls the syscall; otherwise cachelocal registers it by
 *    calling librseq's rseq_register_current_thread(), so librseq's own
 *    bookkeeping (rseq_size) is what it would be had the thread called it.
 *    Either way one area per thread, the one both libraries read. librseq
 *    aborts when a thread registers twice through it: in a thread where
 *    cachelocal registered first, do not call rseq_register_current_thread()
 *    again (docs/rseq.md, "librseq in the same process").
 *  - When that fails (ENOSYS: old kernel or a seccomp filter; EINVAL/EBUSY:
 *    somebody else registered), the thread remembers it (cpu_id = -2 in its
 *    own area) and every getter falls back, without retrying the syscall.
 *
 * Usable feature size (how many bytes of the area the kernel keeps up to
 * date): glibc 2.35-2.39 report 32 and 2.40 (and backports) 20 for the
 * legacy area, so for those two values it is min(32, getauxval(27)) (27 is
 * AT_RSEQ_FEATURE_SIZE; 20 when absent); any other glibc value is trusted.
 * Our own 32-byte area uses min(32, getauxval(27)) too. node_id needs >= 24,
 * mm_cid >= 28 (kernel >= 6.3).
 *
 * Test knob: the environment variable CL_TEST_RSEQ_FEATURE_SIZE_MAX, read
 * once per process, caps the usable feature size (it never raises it):
 * CL_TEST_RSEQ_FEATURE_SIZE_MAX=20 makes a kernel with mm_cid look like
 * one without (node_id and mm_cid reported absent), so the fallbacks run on
 * this machine (`make check-matrix`). Malformed values are ignored.
 *
 * Hot paths (CL_ALWAYS_INLINE): cl_cpu_id() and cl_rseq_abi_get() are one
 * load of a process-wide displacement plus one load of cpu_id at our own
 * area's TLS address + that displacement; cl_mm_cid() is one load of a
 * per-thread displacement plus one load of the id; each then tests the
 * sign (one test for "uninitialised", "failed" and "live"). The first call
 * in a thread goes through a cold out-of-line path; a thread without rseq
 * goes straight to sched_getcpu().
 *
 * Only "unique among running threads and below the number of possible CPUs"
 * may be relied on for mm_cid: the kernel's allocation policy changed in
 * 6.13 and again in 6.19 (docs/rseq.md). Data indexed by mm_cid must compare
 * mm_cid inside the rseq critical section (percpu_ops.h does).
 *
 * Headers: neither glibc 2.36's <sys/rseq.h> nor the 6.1 uapi
 * <linux/rseq.h> know node_id/mm_cid or AT_RSEQ_*, so the ABI is carried
 * here. glibc's symbols are referenced weakly under private names (asm
 * labels), so this header never conflicts with <sys/rseq.h>, in C or C++,
 * whichever is included first.
 *
 * This header is the API: the ABI types, the id getters' declarations and
 * their kernel-doc. The bodies are private pieces, included at the end and
 * never to be included directly (their cl__ names are not API):
 *   rseq/abi.h       the kernel ABI's private constants, the arch piece
 *                    (abort signature, syscall number, thread pointer) and
 *                    the layout asserts;
 *   rseq/register.h  process-wide state, glibc/librseq ownership, lazy
 *                    registration and unregistration at thread exit;
 *   rseq/getters.h   the bodies of the functions declared here.
 * The per-thread state that percpu_ops.h's operations read (the cached
 * area) is internal/rseq_thread.h.
 */
#ifndef CACHELOCAL_RSEQ_H
#define CACHELOCAL_RSEQ_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "sys.h"

CL_BEGIN_DECLS

/* ------------------------------------------------------------------ ABI */

/**
 * struct cl_rseq_slice_ctrl - the time-slice extension's control word.
 * @request: set by the thread to ask for an extension; cleared by the
 *	thread, or by the kernel when it grants one.
 * @granted: set and cleared by the kernel only: an extension was granted.
 * @reserved: 0.
 */
struct cl_rseq_slice_ctrl {
	uint8_t request;
	uint8_t granted;
	uint16_t reserved;
};

/**
 * struct cl_rseq_abi - the per-thread area shared with the kernel (our copy
 * of the uapi struct rseq, including the fields the distro headers lack).
 * @cpu_id_start: written by the kernel on return to user: always a valid CPU
 *	number, even when not registered. Userspace must not write it.
 * @cpu_id: written by the kernel: the current CPU, or (as int32_t) -1
 *	(CL_RSEQ_CPU_ID_UNINITIALIZED) before registration and -2
 *	(CL_RSEQ_CPU_ID_REGISTRATION_FAILED) when it failed. cachelocal writes
 *	-2 into its own area only. Read with a single 32-bit load.
 * @rseq_cs: written by userspace only: the address of the active
 *	struct cl_rseq_cs, 0 outside critical sections. The kernel clears it
 *	when it aborts or sees the IP outside the section.
 * @flags: written by the kernel only: since Linux 7.0 its feature bits
 *	(CL_RSEQ_FLAG_SLICE_EXT_AVAILABLE/_ENABLED); 0 before.
 * @node_id: written by the kernel (feature size >= 24): current NUMA node.
 * @mm_cid: written by the kernel (feature size >= 28): the concurrency id,
 *	unique among the running threads of the process, < possible CPUs.
 * @slice_ctrl: the time-slice extension's control word (feature size >= 33,
 *	Linux 7.0+, RSEQ ABI v2 registrations only): @request written by the
 *	thread (cleared by the kernel when it grants), @granted by the kernel
 *	only. Only cachelocal/slice.h and the locks touch it.
 *
 * A registration longer than 32 bytes (RSEQ ABI v2, Linux 7.0+ on
 * architectures with the kernel's generic IRQ entry: x86_64 and arm64 in
 * 7.3) makes cpu_id_start, cpu_id, node_id and mm_cid strictly read-only:
 * the kernel kills a thread that changed them. cachelocal writes none of
 * them in a registered area.
 *
 * 32-byte aligned and 32 bytes long (the legacy length; cachelocal's own
 * area is a 64-byte block that starts with this struct when it registers
 * the v2 length, see rseq/register.h).
 */
struct cl_rseq_abi {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
	struct cl_rseq_slice_ctrl slice_ctrl;
} CL_ALIGNED(32);

/**
 * struct cl_rseq_cs - a critical-section descriptor (read by the kernel).
 * @version: 0.
 * @flags: 0.
 * @start_ip: first instruction of the section.
 * @post_commit_offset: length of the section: [start_ip, start_ip + this).
 * @abort_ip: where the kernel resumes on preemption, signal or migration;
 *	the 4 bytes before it must be CL_RSEQ_SIG.
 */
struct cl_rseq_cs {
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
} CL_ALIGNED(32);

/* Offsets used from asm; asserted against offsetof in rseq/abi.h. */
#define CL_RSEQ_ABI_CPU_ID_START_OFFSET 0
#define CL_RSEQ_ABI_CPU_ID_OFFSET 4
#define CL_RSEQ_ABI_RSEQ_CS_OFFSET 8
#define CL_RSEQ_ABI_FLAGS_OFFSET 16
#define CL_RSEQ_ABI_NODE_ID_OFFSET 20
#define CL_RSEQ_ABI_MM_CID_OFFSET 24
#define CL_RSEQ_ABI_SLICE_CTRL_OFFSET 28
#define CL_RSEQ_ABI_LEN 32
#define CL_RSEQ_CS_START_IP_OFFSET 8
#define CL_RSEQ_CS_POST_COMMIT_OFFSET_OFFSET 16
#define CL_RSEQ_CS_ABORT_IP_OFFSET 24

/* Feature sizes: the end of the last field the kernel keeps up to date. */
#define CL_RSEQ_FEATURE_SIZE_LEGACY 20 /* cpu_id_start .. flags */
#define CL_RSEQ_FEATURE_SIZE_NODE_ID 24
#define CL_RSEQ_FEATURE_SIZE_MM_CID 28
/* slice_ctrl and the byte after it (uapi struct rseq's __reserved): the
 * size Linux 7.0+ reports once RSEQ ABI v2 exists (AT_RSEQ_ALIGN 64). */
#define CL_RSEQ_FEATURE_SIZE_SLICE_EXT 33

/* Bits the kernel sets in @flags (uapi enum rseq_cs_flags, Linux 7.0+). */
#define CL_RSEQ_FLAG_SLICE_EXT_AVAILABLE (1u << 4)
#define CL_RSEQ_FLAG_SLICE_EXT_ENABLED (1u << 5)

/* Values of cpu_id (as int32_t) when no CPU number is there. */
#define CL_RSEQ_CPU_ID_UNINITIALIZED (-1)
#define CL_RSEQ_CPU_ID_REGISTRATION_FAILED (-2)

/**
 * enum cl_id_mode - the source cl_mm_cid() uses in the calling thread.
 * @CL_ID_MM_CID: the kernel's mm_cid (rseq, feature size >= 28).
 * @CL_ID_CPU_ID: rseq cpu_id (rseq without mm_cid).
 * @CL_ID_GETCPU: sched_getcpu() (no rseq in this thread).
 * @CL_ID_THREAD_HASH: a hash of the thread (sched_getcpu() fails too).
 */
enum cl_id_mode {
	CL_ID_MM_CID,
	CL_ID_CPU_ID,
	CL_ID_GETCPU,
	CL_ID_THREAD_HASH
};

/* ------------------------------------------------------------ public API */

/**
 * cl_rseq_abi_get() - this thread's registered rseq area.
 *
 * glibc's area (thread pointer + __rseq_offset) when glibc owns rseq, else
 * librseq's when librseq is in the process, else cachelocal's own; the
 * latter two registered lazily by this call in this thread if not yet.
 *
 * Context: any thread; async-signal-safe once the thread's area is live
 * (the first call may call pthread_once and the rseq syscall). The pointer
 * stays valid until the thread exits.
 * Return: the live area, or NULL when rseq is unusable in this thread
 * (registration failed: ENOSYS kernel or seccomp, EINVAL/EBUSY somebody
 * else registered; unsupported architecture). errno is not changed.
 */
CL_ALWAYS_INLINE struct cl_rseq_abi *cl_rseq_abi_get(void);

/**
 * cl_rseq_register_current_thread() - make sure this thread has a live area.
 *
 * Never registers while glibc owns rseq (then it only checks glibc's area).
 * Called implicitly by every getter; call it explicitly to learn why rseq is
 * not usable. A failure is remembered: later calls do not retry.
 *
 * Context: any thread, not from a signal handler before the first call.
 * Return: 0 when this thread's area is live (also when glibc owns it);
 * -1 with errno ENOSYS (no rseq: kernel, seccomp or architecture), EINVAL
 * or EBUSY (another area is registered for this thread) on the first
 * failing call, ENOSYS on later calls.
 */
CL_INLINE int cl_rseq_register_current_thread(void);

/**
 * cl_rseq_available() - whether this thread has a live rseq registration.
 *
 * Registers this thread's area first if cachelocal owns rseq.
 *
 * Context: any thread.
 * Return: 1 if the kernel maintains this thread's area, else 0.
 */
CL_INLINE int cl_rseq_available(void);

/**
 * cl_rseq_owned_by_glibc() - whether glibc registered the rseq areas.
 *
 * Context: any thread.
 * Return: 1 when glibc owns rseq (__rseq_size != 0): cachelocal never
 * registers; 0 when cachelocal registers its own areas (or cannot).
 */
CL_INLINE int cl_rseq_owned_by_glibc(void);

/**
 * cl_rseq_abi_v2() - whether this thread's area is an RSEQ ABI v2 registration.
 *
 * v2 (Linux 7.0+): a registration longer than 32 bytes, which on
 * architectures with the kernel's generic IRQ entry selects the kernel's
 * optimized mode: ids written only when they change, the read-only fields
 * enforced (a write kills the thread), the time-slice extension possible.
 * cachelocal registers its own area with 64 bytes when the kernel's
 * AT_RSEQ_FEATURE_SIZE is above 32 (and fits), else with 32; glibc's
 * length is taken from __rseq_size (20 and 32 mean 32 bytes).
 *
 * Context: any thread; registers this thread's area first if cachelocal
 * owns rseq.
 * Return: 1 (registered with more than 32 bytes), 0 (with 32), or -1 when
 * this thread has no live area or its length is not known (librseq's).
 */
CL_INLINE int cl_rseq_abi_v2(void);

/**
 * cl_rseq_feature_size() - usable feature size of this thread's area.
 *
 * The size rule (see the top of this header): glibc's 20 or 32 mean
 * min(32, getauxval(AT_RSEQ_FEATURE_SIZE)), 20 when the auxv entry is
 * absent; other glibc values are trusted; our own area uses the auxv rule.
 *
 * Context: any thread.
 * Return: bytes of the area the kernel keeps up to date (20, 28, ...), or 0
 * when this thread has no live area.
 */
CL_INLINE unsigned cl_rseq_feature_size(void);

/**
 * cl_rseq_mm_cid_available() - whether the kernel's mm_cid can be read.
 *
 * Context: any thread.
 * Return: 1 when this thread's area is live and the usable feature size is
 * >= 28 (kernel >= 6.3), else 0.
 */
CL_INLINE int cl_rseq_mm_cid_available(void);

/**
 * cl_cpu_id() - the CPU this thread runs on (may be stale on return).
 *
 * rseq's cpu_id when this thread's area is live (one load), else
 * sched_getcpu(), else 0.
 *
 * Context: any thread; async-signal-safe once this thread's area is live.
 * Return: a CPU number >= 0. Never fails.
 */
CL_ALWAYS_INLINE int cl_cpu_id(void);

/**
 * cl_mm_cid() - a concurrency id of the calling thread.
 *
 * The source, by cl_id_mode():
 *  CL_ID_MM_CID      the kernel's mm_cid (one load after a cpu_id check):
 *                    unique among running threads, < possible CPUs;
 *  CL_ID_CPU_ID      rseq live but no mm_cid (kernel < 6.3): rseq cpu_id,
 *                    also unique among running threads, < possible CPUs;
 *  CL_ID_GETCPU      no rseq in this thread: sched_getcpu(), same property
 *                    at the instant of the call;
 *  CL_ID_THREAD_HASH sched_getcpu() fails too: a hash of the thread,
 *                    < configured CPUs but NOT unique.
 * Only index data with it inside an rseq critical section that checks it,
 * or use it as a hint (e.g. to spread atomics).
 *
 * Context: any thread; async-signal-safe once this thread's area is live.
 * Return: an id >= 0. Never fails.
 */
CL_ALWAYS_INLINE int cl_mm_cid(void);

/**
 * cl_node_id() - the NUMA node this thread runs on (may be stale).
 *
 * rseq's node_id when live and the feature size is >= 24, else getcpu()'s
 * node (glibc >= 2.29, vDSO; the raw syscall on older glibc), else 0.
 *
 * Context: any thread.
 * Return: a node number >= 0. Never fails.
 */
CL_INLINE int cl_node_id(void);

/**
 * cl_id_mode() - which source cl_mm_cid() uses in the calling thread.
 *
 * Registers this thread's area first if needed, so the answer matches what
 * the next cl_mm_cid() does. The mode is per thread in principle (a thread
 * whose registration failed falls back alone); in practice it is the same
 * in every thread of a process.
 *
 * Context: any thread.
 * Return: CL_ID_MM_CID, CL_ID_CPU_ID, CL_ID_GETCPU or CL_ID_THREAD_HASH.
 */
CL_INLINE enum cl_id_mode cl_id_mode(void);

/**
 * cl_id_mode_name() - printable name of an id mode.
 * @m: a mode from cl_id_mode().
 *
 * Context: any.
 * Return: "mm_cid", "cpu_id", "sched_getcpu", "thread_hash", or "unknown"
 * for a value outside the enum.
 */
CL_INLINE const char *cl_id_mode_name(enum cl_id_mode m);

CL_END_DECLS

/* The bodies (private pieces, see the top). */
#include "rseq/abi.h"
#include "rseq/register.h"
#include "rseq/getters.h"

#endif /* CACHELOCAL_RSEQ_H */
