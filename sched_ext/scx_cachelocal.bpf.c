/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * sched_ext/scx_cachelocal.bpf.c - the kernel half of scx_cachelocal: a
 * sched_ext scheduler whose policy is a userspace daemon
 * (scx_cachelocal.c) running cachelocal's EEVDF runqueue.
 *
 * What stays in the kernel (never waits for the daemon):
 *   - the daemon's own threads: straight to a local DSQ (an idle CPU found
 *     at wakeup, else the CPU they were enqueued on), so the policy is
 *     never starved by what it schedules;
 *   - kernel threads: per-CPU ones to their CPU's local DSQ, the others to
 *     the global DSQ (an unbound worker may be what the daemon waits on,
 *     e.g. for its console output);
 *   - a task whose event does not fit in the ring buffer: the global DSQ;
 *   - a task the daemon leaves waiting longer than rescue_ns (5 s): a
 *     timer (every 100 ms) queues it for the global DSQ, and while the
 *     daemon's heartbeat is older than late_ns (50 ms), the timer sends
 *     every task still waiting, however briefly, and new tasks go there
 *     at once: a stopped or starved daemon delays tasks by a timer tick
 *     but never stalls them into the kernel's watchdog (30 s);
 *   - a woken task whose idle-CPU pick is idle: that CPU's local DSQ from
 *     ops.select_cpu (the daemon is told after: SCX_CL_ENQ_DIRECT);
 *   - the local DSQ of a CPU a real-time task takes (ops.cpu_release):
 *     back through ops.enqueue to the daemon;
 *   - a task with migration disabled: the kernel itself puts it on its
 *     CPU's local DSQ (SCX_OPS_ENQ_MIGRATION_DISABLED is not set).
 * A dispatch of the daemon's naming a task that no longer waits for it
 * is not inserted: SCX_CL_DROP tells the daemon at once.
 * Everything else is sent to the daemon (SCX_CL_ENQ) and waits, in BPF
 * custody, until the daemon names it in the dispatch queue; ops.dispatch
 * of whichever CPU runs next moves it to the local DSQ of the CPU the
 * daemon chose (or to the global DSQ if that CPU is no longer allowed or
 * online). The kernel's watchdog ejects the scheduler if a task waits
 * there longer than its timeout: the daemon must keep up.
 *
 * The licence is the kernel's requirement for the sched_ext kfuncs
 * ("GPL" compatible); the file is MIT or GPL-2.0 at the user's choice.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "scx_cachelocal.h"

char _license[] SEC("license") = "Dual MIT/GPL";

/* the kfuncs: vmlinux.h declares them (bpftool emits the kernel's kfunc
 * prototypes); 7.3 has scx_bpf_dsq_insert() and scx_bpf_dsq_move_to_local() */

#define PF_KTHREAD 0x00200000
#define CLOCK_MONOTONIC 1

/* set by the daemon before load */
const volatile __s32 usersched_tgid;
/* a wakeup onto an idle CPU goes straight to its local DSQ (the daemon is
 * told after the fact, SCX_CL_ENQ_DIRECT); 0: every task waits for it */
const volatile __u32 direct_idle = 1;
const volatile __u64 daemon_slice_ns = 5000000;
const volatile __u64 fallback_slice_ns = 5000000;
const volatile __u32 nr_cpus = 1;
/* a task the daemon leaves waiting longer than this goes to the global DSQ */
const volatile __u64 rescue_ns = 5000000000ull;
/* the daemon's heartbeat older than this: it is late (its vCPU or CPU
 * taken, or stopped); a task that becomes runnable then goes to the global
 * DSQ at once, and the rescue timer sends every waiting task there: the
 * tasks run in FIFO order meanwhile instead of waiting, and the daemon
 * resynchronizes when it is back (-l; rescue_ns at most) */
const volatile __u64 late_ns = 50000000ull;

/* CLOCK_MONOTONIC of the daemon's last loop (it writes the mapped bss):
 * an ENQ while it is older than rescue_ns goes to the global DSQ */
__u64 daemon_heartbeat;
/* counters the daemon reads (bss) */
__u64 nr_enqueued, nr_fallback, nr_daemon, nr_kthread, nr_dispatched, nr_dispatch_global, nr_stale,
	nr_stops, nr_exits, nr_cpu_events, nr_run_undispatched, nr_stop_slice_left, nr_rescued,
	nr_daemon_late, nr_dropped, nr_stop_lost, nr_preempt_kicks, nr_direct;
/* what each CPU runs now as far as ops.running/stopping said (a sched_ext
 * task's pid, 0: none): the daemon compares its model with it when it
 * resynchronizes after being late */
__s32 cpu_curr_pid[SCX_CL_MAX_CPUS];
/* why the kernel ended it (ops.exit) */
__s32 exit_kind;
char exit_reason[128];
char exit_msg[256];
/* CPUs offline as far as ops.cpu_offline/online said (1 = offline) */
__u8 cpu_offline[SCX_CL_MAX_CPUS];
/* CPUs a higher class took (ops.cpu_release until ops.cpu_acquire) */
__u8 cpu_taken[SCX_CL_MAX_CPUS];
__u64 nr_cpu_taken;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} to_daemon SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 8192);
	__type(value, struct scx_cl_dispatch);
} dispatch_q SEC(".maps");

/* the tasks sent to the daemon and not yet dispatched: pid -> when */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, s32);
	__type(value, u64);
} waiting SEC(".maps");

/* the rescue timer: every 100 ms, the waiting tasks older than rescue_ns
 * are queued for the global DSQ as if the daemon had sent them there */
struct rescue_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct rescue_timer);
} rescue SEC(".maps");

#define RESCUE_PERIOD_NS 100000000ull

/* per task: whether the daemon dispatched it (a STOP is then owed) */
struct task_ctx {
	u64 dispatched;
	u64 exec_start; /* se.sum_exec_runtime when the daemon dispatched it */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static __always_inline void insert(struct task_struct *p, u64 dsq, u64 slice, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, dsq, slice, enq_flags);
}

static __always_inline bool is_daemon(const struct task_struct *p)
{
	return p->tgid == usersched_tgid;
}

static __always_inline bool is_kthread(const struct task_struct *p)
{
	return p->flags & PF_KTHREAD;
}

static __always_inline struct scx_cl_msg *msg_new(u32 kind, s32 pid, s32 cpu)
{
	struct scx_cl_msg *m = bpf_ringbuf_reserve(&to_daemon, sizeof(*m), 0);

	if (!m)
		return NULL;
	__builtin_memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->pid = pid;
	m->cpu = cpu;
	return m;
}

/* the task's properties the daemon needs, into an SCX_CL_ENQ */
static __always_inline void enq_fill(struct scx_cl_msg *m, struct task_struct *p)
{
	const struct cpumask *allowed = p->cpus_ptr;

	m->nice = p->static_prio - 120;
	m->cgid = BPF_CORE_READ(p, cgroups, dfl_cgrp, kn, id);
	m->nr_cpus_allowed = p->nr_cpus_allowed;
	for (int w = 0; w < SCX_CL_MASK_WORDS; w++) {
		if (w * 64 < nr_cpus)
			m->cpus[w] = allowed->bits[w];
	}
}

/*
 * A woken task with an idle CPU to go to (the kernel's own idle pick,
 * scx_bpf_select_cpu_dfl(): its previous CPU, else an idle one near it)
 * runs there at once, without the round trip through the daemon: the
 * daemon learns it after the fact (SCX_CL_ENQ with SCX_CL_ENQ_DIRECT and
 * the CPU) and counts it running there; its stop is reported as for a
 * dispatch of the daemon's. A late daemon then delays only the tasks that
 * have to wait for a busy CPU. (scx_rustland's BPF side dispatches to an
 * idle CPU from ops.select_cpu the same way.)
 */
SEC("struct_ops/cl_select_cpu")
s32 BPF_PROG(cl_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool idle = false;
	s32 cpu;

	if (!is_daemon(p)) {
		struct scx_cl_msg *m;
		struct task_ctx *c;

		if (!direct_idle || is_kthread(p))
			return prev_cpu; /* the daemon places it */
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
		if (!idle || cpu < 0 || cpu >= SCX_CL_MAX_CPUS || cpu_taken[cpu & (SCX_CL_MAX_CPUS - 1)])
			return prev_cpu;
		c = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!c)
			return prev_cpu;
		m = msg_new(SCX_CL_ENQ, p->pid, cpu);
		if (!m)
			return prev_cpu;
		enq_fill(m, p);
		m->flags = SCX_CL_ENQ_WAKEUP | SCX_CL_ENQ_DIRECT;
		c->dispatched = 1;
		c->exec_start = p->se.sum_exec_runtime;
		insert(p, SCX_DSQ_LOCAL, fallback_slice_ns, 0);
		bpf_ringbuf_submit(m, 0);
		__sync_fetch_and_add(&nr_direct, 1);
		return cpu;
	}
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &idle);
	if (idle) {
		insert(p, SCX_DSQ_LOCAL, daemon_slice_ns, 0);
		__sync_fetch_and_add(&nr_daemon, 1);
	}
	return cpu;
}

SEC("struct_ops/cl_enqueue")
void BPF_PROG(cl_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct scx_cl_msg *m;

	if (is_daemon(p)) {
		__sync_fetch_and_add(&nr_daemon, 1);
		insert(p, SCX_DSQ_LOCAL, daemon_slice_ns, enq_flags);
		return;
	}
	if (is_kthread(p)) {
		__sync_fetch_and_add(&nr_kthread, 1);
		insert(p, p->nr_cpus_allowed == 1 ? SCX_DSQ_LOCAL : SCX_DSQ_GLOBAL, fallback_slice_ns,
		       enq_flags);
		return;
	}
	/* (no test of p->migration_disabled here: the kernel puts a task
	 * with migration disabled on its local DSQ without ops.enqueue
	 * unless SCX_OPS_ENQ_MIGRATION_DISABLED is set, and when ops.enqueue
	 * runs for the current task, its count is 1 from the BPF program's
	 * own migrate_disable()) */
	if (bpf_ktime_get_ns() - daemon_heartbeat > late_ns) {
		/* the daemon has not looked for a while (stopped, stuck, its
		 * CPU taken): the tail of this CPU's local DSQ, not the global
		 * DSQ, which a CPU consumes only when its local DSQ is empty
		 * (the daemon's picks can keep those filled; with the global
		 * DSQ here and a 50 ms threshold one run ended in a watchdog
		 * ejection, a thread not run for 41 s) */
		__sync_fetch_and_add(&nr_daemon_late, 1);
		insert(p, SCX_DSQ_LOCAL, fallback_slice_ns, enq_flags);
		return;
	}
	m = msg_new(SCX_CL_ENQ, p->pid, scx_bpf_task_cpu(p));
	if (!m) {
		__sync_fetch_and_add(&nr_fallback, 1);
		insert(p, SCX_DSQ_GLOBAL, fallback_slice_ns, enq_flags);
		return;
	}
	enq_fill(m, p);
	m->flags = (enq_flags & SCX_ENQ_WAKEUP) ? SCX_CL_ENQ_WAKEUP : 0;
	{
		/* waiting before the daemon can see the event: a resync that
		 * finds the task in its model but not here would drop it */
		s32 pid = p->pid;
		u64 now = bpf_ktime_get_ns();

		if (bpf_map_update_elem(&waiting, &pid, &now, BPF_ANY)) {
			bpf_ringbuf_discard(m, 0);
			__sync_fetch_and_add(&nr_fallback, 1);
			insert(p, SCX_DSQ_GLOBAL, fallback_slice_ns, enq_flags);
			return;
		}
	}
	bpf_ringbuf_submit(m, 0);
	__sync_fetch_and_add(&nr_enqueued, 1);
}

SEC("struct_ops/cl_dispatch")
void BPF_PROG(cl_dispatch, s32 cpu, struct task_struct *prev)
{
	struct scx_cl_dispatch d;
	struct task_ctx *c;

	for (int i = 0; i < 512; i++) {
		struct task_struct *p;
		u64 dsq = SCX_DSQ_GLOBAL;

		if (bpf_map_pop_elem(&dispatch_q, &d))
			break;
		/* a daemon's dispatch of a task that no longer waits for it
		 * (rescued to the global DSQ, or named twice) would be dropped
		 * by the kernel without a word, and the daemon's model would
		 * count that CPU busy until the pick timed out: say so now */
		if (d.cpu != SCX_CL_RESCUE_CPU && bpf_map_delete_elem(&waiting, &d.pid)) {
			struct scx_cl_msg *m = msg_new(SCX_CL_DROP, d.pid, d.cpu);

			if (m)
				bpf_ringbuf_submit(m, 0);
			__sync_fetch_and_add(&nr_dropped, 1);
			continue;
		}
		p = bpf_task_from_pid(d.pid);
		if (!p) {
			__sync_fetch_and_add(&nr_stale, 1);
			continue;
		}
		/* a rescued task: the local DSQ of the CPU it is on (checked
		 * below like a daemon's dispatch), not the global DSQ (above) */
		if (d.cpu == SCX_CL_RESCUE_CPU)
			d.cpu = scx_bpf_task_cpu(p);
		if (d.cpu >= 0 && d.cpu < SCX_CL_MAX_CPUS && !cpu_offline[d.cpu & (SCX_CL_MAX_CPUS - 1)] &&
		    !cpu_taken[d.cpu & (SCX_CL_MAX_CPUS - 1)] && bpf_cpumask_test_cpu(d.cpu, p->cpus_ptr))
			dsq = SCX_DSQ_LOCAL_ON | (u64)d.cpu;
		else
			__sync_fetch_and_add(&nr_dispatch_global, 1);
		c = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (c) {
			c->dispatched = 1;
			c->exec_start = p->se.sum_exec_runtime;
		}
		insert(p, dsq, d.slice_ns, 0);
		__sync_fetch_and_add(&nr_dispatched, 1);
		bpf_task_release(p);
	}
}

SEC("struct_ops/cl_running")
void BPF_PROG(cl_running, struct task_struct *p)
{
	struct task_ctx *c = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	s32 cpu = scx_bpf_task_cpu(p);

	if (cpu >= 0 && cpu < SCX_CL_MAX_CPUS)
		cpu_curr_pid[cpu & (SCX_CL_MAX_CPUS - 1)] = p->pid;
	if (c && !c->dispatched)
		__sync_fetch_and_add(&nr_run_undispatched, 1);
}

SEC("struct_ops/cl_stopping")
void BPF_PROG(cl_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *c = bpf_task_storage_get(&task_ctxs, p, 0, 0);
	struct scx_cl_msg *m;
	s32 cpu = scx_bpf_task_cpu(p);

	if (cpu >= 0 && cpu < SCX_CL_MAX_CPUS)
		cpu_curr_pid[cpu & (SCX_CL_MAX_CPUS - 1)] = 0;
	if (!c || !c->dispatched)
		return;
	if (runnable && p->scx.slice) {
		/* preempted by a higher class with slice left: the kernel keeps
		 * it at the head of this CPU's local DSQ, where it resumes
		 * without ops.dispatch; for the daemon it still holds the CPU */
		__sync_fetch_and_add(&nr_stop_slice_left, 1);
		return;
	}
	c->dispatched = 0;
	m = msg_new(SCX_CL_STOP, p->pid, scx_bpf_task_cpu(p));
	if (!m) {
		/* the daemon resynchronizes (cpu_curr_pid) */
		__sync_fetch_and_add(&nr_stop_lost, 1);
		return;
	}
	m->flags = runnable;
	m->runtime_ns = p->se.sum_exec_runtime - c->exec_start;
	bpf_ringbuf_submit(m, 0);
	__sync_fetch_and_add(&nr_stops, 1);
}

SEC("struct_ops/cl_exit_task")
void BPF_PROG(cl_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	struct scx_cl_msg *m;

	s32 pid = p->pid;

	if (is_kthread(p) || is_daemon(p))
		return;
	bpf_map_delete_elem(&waiting, &pid);
	m = msg_new(SCX_CL_EXIT, p->pid, -1);
	if (m) {
		bpf_ringbuf_submit(m, 0);
		__sync_fetch_and_add(&nr_exits, 1);
	}
}

static __always_inline void cpu_event(s32 cpu, u32 kind)
{
	struct scx_cl_msg *m;

	if (cpu >= 0 && cpu < SCX_CL_MAX_CPUS)
		cpu_offline[cpu & (SCX_CL_MAX_CPUS - 1)] = kind == SCX_CL_CPU_OFF;
	m = msg_new(kind, -1, cpu);
	if (m)
		bpf_ringbuf_submit(m, BPF_RB_FORCE_WAKEUP);
	__sync_fetch_and_add(&nr_cpu_events, 1);
}

/* a cgroup's weight for the daemon (it maps each cgroup to a cl task group) */
static __always_inline void cgroup_event(u32 kind, struct cgroup *cgrp, u32 weight)
{
	struct scx_cl_msg *m = msg_new(kind, -1, -1);

	if (!m)
		return; /* the daemon keeps the weight it knew (the default at first) */
	m->cgid = BPF_CORE_READ(cgrp, kn, id);
	m->level = BPF_CORE_READ(cgrp, level);
	m->weight = weight;
	bpf_ringbuf_submit(m, 0);
}

SEC("struct_ops.s/cl_cgroup_init")
s32 BPF_PROG(cl_cgroup_init, struct cgroup *cgrp, struct scx_cgroup_init_args *args)
{
	cgroup_event(SCX_CL_CGROUP, cgrp, args->weight);
	return 0;
}

SEC("struct_ops/cl_cgroup_set_weight")
void BPF_PROG(cl_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	cgroup_event(SCX_CL_CGROUP, cgrp, weight);
}

SEC("struct_ops/cl_cgroup_exit")
void BPF_PROG(cl_cgroup_exit, struct cgroup *cgrp)
{
	cgroup_event(SCX_CL_CGROUP_EXIT, cgrp, 0);
}

/* A real-time (or deadline, or stop) task takes @cpu: what waits on its
 * local DSQ (the task it preempted among them) goes back through
 * ops.enqueue to the daemon, which places it on another CPU and counts
 * @cpu out until ops.cpu_acquire. The daemon's own thread (SCHED_FIFO)
 * taking a CPU for a moment is not reported. */
SEC("struct_ops/cl_cpu_release")
void BPF_PROG(cl_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	struct task_struct *t = args->task;
	struct scx_cl_msg *m;

	if (t && t->tgid == usersched_tgid)
		return;
	if (cpu < 0 || cpu >= SCX_CL_MAX_CPUS)
		return;
	cpu_taken[cpu & (SCX_CL_MAX_CPUS - 1)] = 1;
	__sync_fetch_and_add(&nr_cpu_taken, 1);
	m = msg_new(SCX_CL_CPU_TAKEN, -1, cpu);
	if (m)
		bpf_ringbuf_submit(m, 0);
	scx_bpf_reenqueue_local();
}

SEC("struct_ops/cl_cpu_acquire")
void BPF_PROG(cl_cpu_acquire, s32 cpu, struct scx_cpu_acquire_args *args)
{
	struct scx_cl_msg *m;

	if (cpu < 0 || cpu >= SCX_CL_MAX_CPUS || !cpu_taken[cpu & (SCX_CL_MAX_CPUS - 1)])
		return;
	cpu_taken[cpu & (SCX_CL_MAX_CPUS - 1)] = 0;
	m = msg_new(SCX_CL_CPU_BACK, -1, cpu);
	if (m)
		bpf_ringbuf_submit(m, 0);
}

SEC("struct_ops/cl_cpu_online")
void BPF_PROG(cl_cpu_online, s32 cpu)
{
	cpu_event(cpu, SCX_CL_CPU_ON);
}

SEC("struct_ops/cl_cpu_offline")
void BPF_PROG(cl_cpu_offline, s32 cpu)
{
	cpu_event(cpu, SCX_CL_CPU_OFF);
}

__u64 rescue_pending; /* set by rescue_one(): the timer kicks the idle CPUs */
/* set by rescue_fire() while the daemon's heartbeat is older than
 * rescue_ns: every waiting task is rescued, whatever its own wait (a task
 * queued for the daemon just before it stopped would otherwise wait
 * another rescue_ns after the heartbeat went stale) */
__u64 rescue_all;

/* (the counters are globals, not in the callback's context: a count on
 * the stack would make every iteration a new state for the verifier) */
static long rescue_one(void *map, s32 *pid, u64 *since, u64 *now)
{
	struct scx_cl_dispatch d = { .cpu = SCX_CL_RESCUE_CPU };

	if (!rescue_all && *now - *since < rescue_ns)
		return 0;
	d.pid = *pid;
	d.slice_ns = fallback_slice_ns;
	/* the next ops.dispatch anywhere takes it (and deletes the entry) */
	if (bpf_map_push_elem(&dispatch_q, &d, 0) == 0) {
		bpf_map_delete_elem(map, pid);
		__sync_fetch_and_add(&nr_rescued, 1);
		rescue_pending = 1;
	}
	return 0;
}

static int rescue_fire(void *map, int *key, struct rescue_timer *t)
{
	u64 now = bpf_ktime_get_ns();

	rescue_all = now - daemon_heartbeat > late_ns;
	bpf_for_each_map_elem(&waiting, rescue_one, &now, 0);
	if (rescue_pending) {
		rescue_pending = 0;
		for (u32 c = 0; c < SCX_CL_MAX_CPUS && c < nr_cpus; c++)
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
	}
	bpf_timer_start(&t->timer, RESCUE_PERIOD_NS, 0);
	return 0;
}

SEC("struct_ops.s/cl_init")
s32 BPF_PROG(cl_init)
{
	u32 key = 0;
	struct rescue_timer *t = bpf_map_lookup_elem(&rescue, &key);

	if (!t)
		return -1;
	if (bpf_timer_init(&t->timer, &rescue, CLOCK_MONOTONIC) ||
	    bpf_timer_set_callback(&t->timer, rescue_fire) || bpf_timer_start(&t->timer, RESCUE_PERIOD_NS, 0))
		return -1;
	return 0;
}

SEC("struct_ops/cl_exit")
void BPF_PROG(cl_exit, struct scx_exit_info *ei)
{
	exit_kind = ei->kind;
	bpf_probe_read_kernel_str(exit_reason, sizeof(exit_reason), ei->reason);
	bpf_probe_read_kernel_str(exit_msg, sizeof(exit_msg), ei->msg);
}

/* the daemon runs this (BPF_PROG_TEST_RUN) after queueing dispatches:
 * the CPUs named in cpus wake up (if idle) and run ops.dispatch; those
 * in preempt (a woken task the runqueue says should preempt) take the
 * CPU from what runs there (its slice ends now: it stops, is enqueued
 * again, and the CPU runs ops.dispatch) */
SEC("syscall")
int cl_kick(struct scx_cl_kick_args *args)
{
	for (int w = 0; w < SCX_CL_MASK_WORDS; w++) {
		u64 bits = args->cpus[w] | args->preempt[w], pre = args->preempt[w];

		for (int b = 0; b < 64 && bits; b++) {
			if (!(bits & (1ull << b)))
				continue;
			if (pre & (1ull << b)) {
				scx_bpf_kick_cpu(w * 64 + b, SCX_KICK_PREEMPT);
				__sync_fetch_and_add(&nr_preempt_kicks, 1);
			} else {
				scx_bpf_kick_cpu(w * 64 + b, SCX_KICK_IDLE);
			}
			bits &= ~(1ull << b);
		}
	}
	return 0;
}

SEC(".struct_ops.link")
struct sched_ext_ops cachelocal_ops = {
	.select_cpu = (void *)cl_select_cpu,
	.enqueue = (void *)cl_enqueue,
	.dispatch = (void *)cl_dispatch,
	.running = (void *)cl_running,
	.stopping = (void *)cl_stopping,
	.exit_task = (void *)cl_exit_task,
	.cpu_release = (void *)cl_cpu_release,
	.cpu_acquire = (void *)cl_cpu_acquire,
	.cpu_online = (void *)cl_cpu_online,
	.cpu_offline = (void *)cl_cpu_offline,
	.cgroup_init = (void *)cl_cgroup_init,
	.cgroup_set_weight = (void *)cl_cgroup_set_weight,
	.cgroup_exit = (void *)cl_cgroup_exit,
	.init = (void *)cl_init,
	.exit = (void *)cl_exit,
	.flags = SCX_OPS_ENQ_LAST,
	.dispatch_max_batch = 512,
	.timeout_ms = 30000, /* the most the kernel allows: TCG guests are slow */
	.name = "cachelocal",
};
