/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * sched_ext/scx_cachelocal.h - what the BPF half (scx_cachelocal.bpf.c) and
 * the daemon (scx_cachelocal.c) exchange. Included by both: only fixed-size
 * integer types, no pointers, the same layout for BPF and x86_64.
 *
 * kernel -> daemon: a ring buffer of struct scx_cl_msg (one per event, in
 *   the order the kernel produced them; the daemon sleeps in epoll on it)
 * daemon -> kernel: a queue map of struct scx_cl_dispatch (ops.dispatch of
 *   any CPU pops them and inserts each task into the named CPU's local DSQ)
 */
#ifndef CACHELOCAL_SCX_CACHELOCAL_H
#define CACHELOCAL_SCX_CACHELOCAL_H

/* the largest CPU count the affinity words carry (4 x 64 bits) */
#define SCX_CL_MAX_CPUS 256
#define SCX_CL_MASK_WORDS (SCX_CL_MAX_CPUS / 64)

enum scx_cl_kind {
	SCX_CL_ENQ = 1,     /* a task became runnable (wakeup, or back after its slice) */
	SCX_CL_STOP = 2,    /* a task the daemon dispatched stopped running; flags: 1 = still runnable */
	SCX_CL_EXIT = 3,    /* a task left sched_ext (exited, or another class) */
	SCX_CL_CPU_ON = 4,  /* cpu came online */
	SCX_CL_CPU_OFF = 5, /* cpu went offline */
	SCX_CL_CGROUP = 6,  /* a cgroup's weight (at its creation, the scheduler's load, a write of cpu.weight) */
	SCX_CL_CGROUP_EXIT = 7, /* a cgroup went away */
	SCX_CL_DROP = 8,    /* a dispatch of the daemon's named a task no longer
			     * waiting for it (rescued, sent to the global DSQ
			     * while the daemon was late, or dispatched twice):
			     * not inserted; the daemon frees the CPU at once */
	SCX_CL_CPU_TAKEN = 9, /* a higher class (RT, deadline, stop) took cpu from
			       * sched_ext (ops.cpu_release); the tasks on its
			       * local DSQ come back as SCX_CL_ENQ */
	SCX_CL_CPU_BACK = 10, /* cpu is sched_ext's again (ops.cpu_acquire) */
};

/* bits of scx_cl_msg.flags for SCX_CL_ENQ */
#define SCX_CL_ENQ_WAKEUP 1u /* woken (else: preempted or its slice ended) */
#define SCX_CL_ENQ_DIRECT 2u /* woken onto an idle CPU (cpu) and already put on its
			      * local DSQ by ops.select_cpu: running, not waiting */

struct scx_cl_msg {
	__u32 kind;    /* enum scx_cl_kind */
	__s32 pid;     /* the task (thread id); -1 for CPU events */
	__s32 cpu;     /* the CPU it last ran on, or the CPU of a CPU event */
	__s32 nice;    /* -20..19 */
	__u32 flags;   /* SCX_CL_ENQ_* or, for STOP, 1 = still runnable */
	__u32 nr_cpus_allowed;
	__u64 runtime_ns; /* STOP: what it ran since it was picked (kernel's accounting) */
	__u64 cpus[SCX_CL_MASK_WORDS]; /* ENQ: the task's affinity, bit n = CPU n */
	__u64 cgid;    /* ENQ: the task's cgroup (v2) id; CGROUP*: the cgroup's */
	__u32 weight;  /* CGROUP: cpu.weight, 1..10000 (100: the default) */
	__u32 level;   /* CGROUP: depth in the hierarchy (0: the root cgroup) */
};

/* scx_cl_dispatch.cpu of the rescue timer's own entries (the BPF side
 * sends the task to the global DSQ without asking the waiting map) */
#define SCX_CL_RESCUE_CPU (-2)

struct scx_cl_dispatch {
	__s32 pid;
	__s32 cpu;      /* the target CPU; -1: the global DSQ; SCX_CL_RESCUE_CPU: the rescue timer's */
	__u64 slice_ns; /* how long it may run before the kernel takes it back */
};

/* the argument of the syscall program that kicks CPUs (scx_cl_kick) */
struct scx_cl_kick_args {
	__u64 cpus[SCX_CL_MASK_WORDS];    /* wake these if idle (SCX_KICK_IDLE) */
	__u64 preempt[SCX_CL_MASK_WORDS]; /* preempt what these run (SCX_KICK_PREEMPT):
					   * a woken task the runqueue says should run now */
};

#endif /* CACHELOCAL_SCX_CACHELOCAL_H */
