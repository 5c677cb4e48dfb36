/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/rseq/abi.h - the private half of the kernel rseq ABI: the
 * syscall's flags and number, the auxv keys, the architecture piece
 * (arch/rseq_abi.h picks it: glibc's abort signature CL_RSEQ_SIG, the
 * syscall number, the thread pointer) and the asserts that tie struct
 * cl_rseq_abi and struct cl_rseq_cs to the kernel's offsets.
 *
 * Part of rseq.h, which is the header to include: this file compiles alone
 * but its cl__ names are not API and
 * may change without notice.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../rseq.h"

#ifndef CACHELOCAL_RSEQ_ABI_H
#define CACHELOCAL_RSEQ_ABI_H

#include "../arch/rseq_abi.h"

CL_BEGIN_DECLS

/* Kernel ABI constants (uapi linux/rseq.h, linux/auxvec.h). */
#define CL__RSEQ_FLAG_UNREGISTER 1
#define CL__RSEQ_FLAG_SLICE_EXT_DEFAULT_ON 2 /* Linux 7.0+: extension on at registration */
#define CL__AT_RSEQ_FEATURE_SIZE 27
#define CL__AT_RSEQ_ALIGN 28

#if defined(SYS_rseq)
#define CL__NR_RSEQ SYS_rseq
#else
#define CL__NR_RSEQ CL__NR_RSEQ_ARCH
#endif

CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id_start) == CL_RSEQ_ABI_CPU_ID_START_OFFSET,
		 "rseq ABI: cpu_id_start offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, cpu_id) == CL_RSEQ_ABI_CPU_ID_OFFSET,
		 "rseq ABI: cpu_id offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, rseq_cs) == CL_RSEQ_ABI_RSEQ_CS_OFFSET,
		 "rseq ABI: rseq_cs offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, flags) == CL_RSEQ_ABI_FLAGS_OFFSET,
		 "rseq ABI: flags offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, node_id) == CL_RSEQ_ABI_NODE_ID_OFFSET,
		 "rseq ABI: node_id offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, mm_cid) == CL_RSEQ_ABI_MM_CID_OFFSET,
		 "rseq ABI: mm_cid offset");
CL_STATIC_ASSERT(sizeof(struct cl_rseq_abi) == CL_RSEQ_ABI_LEN, "rseq ABI: area length");
CL_STATIC_ASSERT(CL_OFFSETOF_END(struct cl_rseq_abi, node_id) == CL_RSEQ_FEATURE_SIZE_NODE_ID,
		 "rseq ABI: node_id feature size");
CL_STATIC_ASSERT(CL_OFFSETOF_END(struct cl_rseq_abi, mm_cid) == CL_RSEQ_FEATURE_SIZE_MM_CID,
		 "rseq ABI: mm_cid feature size");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_abi, slice_ctrl) == CL_RSEQ_ABI_SLICE_CTRL_OFFSET,
		 "rseq ABI: slice_ctrl offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_slice_ctrl, granted) == 1,
		 "rseq ABI: slice_ctrl.granted right after request");
CL_STATIC_ASSERT(CL_OFFSETOF_END(struct cl_rseq_abi, slice_ctrl) + 1 ==
			 CL_RSEQ_FEATURE_SIZE_SLICE_EXT,
		 "rseq ABI: slice extension feature size (slice_ctrl + the reserved byte)");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, start_ip) == CL_RSEQ_CS_START_IP_OFFSET,
		 "rseq ABI: start_ip offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, post_commit_offset) ==
			 CL_RSEQ_CS_POST_COMMIT_OFFSET_OFFSET,
		 "rseq ABI: post_commit_offset offset");
CL_STATIC_ASSERT(offsetof(struct cl_rseq_cs, abort_ip) == CL_RSEQ_CS_ABORT_IP_OFFSET,
		 "rseq ABI: abort_ip offset");
CL_STATIC_ASSERT(sizeof(struct cl_rseq_cs) == 32, "rseq ABI: rseq_cs size");

CL_END_DECLS

#endif /* CACHELOCAL_RSEQ_ABI_H */
