/* SPDX-License-Identifier: MIT */
/*
 * sched_ext/scx_cachelocal.c - the userspace half of scx_cachelocal: loads
 * scx_cachelocal.bpf.c and schedules the tasks it forwards with
 * cachelocal's EEVDF runqueue (include/cachelocal/sched/), unchanged.
 *
 * The model: one struct cl_rq per real CPU (cl_sched_create(nr_cpu_ids)),
 * the balancer given the machine's topology from sysfs
 * (cl_balance_set_topology()). A task the kernel hands over (SCX_CL_ENQ)
 * is woken on a CPU chosen here (placement below) with cl_task_wake():
 * EEVDF places it by its lag. A CPU whose rq has no curr gets
 * cl_rq_pick_next(); the pick is sent to the kernel for that CPU with a
 * slice, and stays its rq's curr until the kernel reports that it stopped
 * (SCX_CL_STOP: put back, or dequeued as asleep); its vruntime is charged
 * with the wall time it held the CPU. Weights come from the task's nice
 * level, affinity from its cpus_ptr, CPU offline/online from ops.cpu_*
 * (cl_balance_cpu_offline/online), and idle CPUs pull with
 * cl_balance_run() across SMT cores, LLCs and nodes.
 *
 * Placement of a woken task: its last CPU if idle, else an idle CPU of
 * that CPU's LLC, else its last CPU; if that one is not allowed or
 * offline, an idle allowed CPU anywhere, else the least loaded allowed
 * one. Idle here means: the rq runs and queues nothing in the model.
 * Leaving the LLC is the balancer's decision.
 *
 * Single-threaded: one loop polls the ring buffer, handles the events,
 * resynchronizes the model when the BPF side says the daemon was late,
 * times out picks the kernel never reported back, balances, dispatches
 * (and kicks: wakeup preemption). The thread runs SCHED_FIFO priority 1,
 * its memory locked, its task records preallocated (docs/sched_ext.md,
 * "When the daemon falls behind").
 *
 * Usage: scx_cachelocal [-s SLICE_US] [-b BALANCE_US] [-t SECONDS] [-p eevdf|fifo]
 *                       [-r RT_PRIO] [-P 0|1] [-D 0|1] [-l LATE_MS] [-c FILE] [-v]
 *   -r: the daemon's SCHED_FIFO priority (1; 0: a sched_ext task)
 *   -P 0: no wakeup preemption; -D 0: no idle fast path on the BPF side
 *   -l: the heartbeat age after which the BPF side counts the daemon late (50)
 *   -c FILE: the counters line is written there too (and on SIGUSR1)
 *   -p fifo: a global FIFO instead of the runqueue (for comparison, above)
 *   -t: exit after SECONDS (0: run until SIGINT/SIGTERM)
 *   -v: print counters every 10 seconds
 * On exit prints one line "scx_cachelocal: ..." of counters, and the
 * kernel's reason if it ended the scheduler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cachelocal/topology.h>
#include <cachelocal/sched/rq.h>
#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/group.h>

#include "scx_cachelocal.h"
#include "scx_cachelocal.skel.h"

#define MASK_LONGS (SCX_CL_MAX_CPUS / (8 * sizeof(unsigned long)))

/* one task the kernel handed over */
struct dtask {
	struct cl_task t;               /* first: 64-byte aligned */
	unsigned long mask[MASK_LONGS]; /* its affinity (the cl_task points here) */
	int pid;
	int nice;
	int run_cpu;       /* the CPU it was dispatched to and not yet reported back, -1 none */
	uint64_t picked_ns; /* when */
	unsigned long picks;
	uint64_t held_ns, ran_ns; /* wall time it held its CPU in the model; what the kernel says it ran */
	struct dtask *next; /* hash chain */
	struct dtask *all_next, *all_prev; /* every task the model knows (resync walks it) */
	struct dtask *fifo_next, *fifo_prev; /* -p fifo: the run queue, NULL prev/next at the ends */
	int in_fifo;
	uint64_t cgid; /* the cgroup it was last queued in (0: none yet) */
	uint64_t enq_ns; /* its last SCX_CL_ENQ */
};

/* A cgroup (v2) the kernel told us about (ops.cgroup_init and
 * cgroup_set_weight): its cpu.weight, and the cl task group its tasks are
 * queued in, made at the first task seen in it. Flat: every group is a
 * child of the root group, whatever the cgroups' nesting; the root cgroup
 * (level 0) is the root group itself. */
struct dcg {
	uint64_t id;
	unsigned long shares; /* cpu.weight x 1024 / 100, as the kernel maps it */
	int level;
	struct cl_task_group *tg;
	struct dcg *next;
};

#define CG_HASH 1024
static struct dcg *cgroups[CG_HASH];
static unsigned long n_cg_events, n_cg_groups, n_cg_moves;

#define HASH_SIZE 65536
static struct dtask *tasks[HASH_SIZE];
static struct dtask *all_tasks;
static unsigned long nr_tasks;

static struct cl_sched *sched;
static struct scx_cachelocal *skel;
/* the CPUs to kick after the next dispatches (preempt: a woken task the
 * runqueue says should take the CPU now) */
static struct scx_cl_kick_args pending_kick;
static int pending_any;
static struct cl_topology topo;
static unsigned int nr_cpus;
static uint64_t slice_ns = 5000000;
static volatile sig_atomic_t stop;
static int verbose;

/*
 * -p fifo: the comparison policy of the check's third column, without the
 * library: one global first-in first-out queue; a CPU that runs nothing
 * takes the first task allowed on it, for one slice. No weights, no
 * placement, no balancing.
 */
static int fifo;
static struct dtask *fifo_head, *fifo_tail;
static struct dtask *fifo_curr[SCX_CL_MAX_CPUS];

static void fifo_push(struct dtask *d)
{
	if (d->in_fifo)
		return;
	d->fifo_next = NULL;
	d->fifo_prev = fifo_tail;
	if (fifo_tail)
		fifo_tail->fifo_next = d;
	else
		fifo_head = d;
	fifo_tail = d;
	d->in_fifo = 1;
}

static void fifo_remove(struct dtask *d)
{
	if (!d->in_fifo)
		return;
	if (d->fifo_prev)
		d->fifo_prev->fifo_next = d->fifo_next;
	else
		fifo_head = d->fifo_next;
	if (d->fifo_next)
		d->fifo_next->fifo_prev = d->fifo_prev;
	else
		fifo_tail = d->fifo_prev;
	d->in_fifo = 0;
}

/* -p fifo: @d no longer runs on its CPU */
static void fifo_release(struct dtask *d)
{
	if (d->run_cpu >= 0 && fifo_curr[d->run_cpu] == d)
		fifo_curr[d->run_cpu] = NULL;
	d->run_cpu = -1;
}

/* counters */
static unsigned long n_enq, n_wake, n_requeue, n_stop, n_exit, n_picks, n_timeouts, n_direct_global,
	n_qfull, n_cpu_off, n_cpu_on, n_kicks, n_kick_fail;
/* healing: dispatches the BPF side dropped (SCX_CL_DROP), resyncs and
 * the tasks they corrected (a pick no longer the kernel's, a queued task
 * no longer waiting), wakeup preemptions asked for */
static unsigned long n_drops, n_drops_waiting, n_resyncs, n_resync_curr, n_resync_queued, n_preempts;
static struct cl_balance_stats bstats;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct dtask *task_find(int pid)
{
	struct dtask *d = tasks[(unsigned int)pid % HASH_SIZE];

	while (d && d->pid != pid)
		d = d->next;
	return d;
}

/*
 * The tasks' records come from a pool made (and, with mlockall(), faulted
 * in and locked) before the scheduler attaches: a page fault or an
 * allocation that waits for memory while the tasks wait for the daemon
 * would make it late (scx_userland preallocates its tasks the same way).
 * Past the pool, aligned_alloc().
 */
#define POOL_TASKS 16384
static struct dtask *pool, *pool_free;
static unsigned long n_pool_miss;

static void pool_init(void)
{
	pool = aligned_alloc(64, (size_t)POOL_TASKS * ((sizeof(*pool) + 63) / 64 * 64));
	if (!pool)
		return;
	memset(pool, 0, (size_t)POOL_TASKS * sizeof(*pool)); /* (mlockall: faulted in now anyway) */
	for (int i = POOL_TASKS - 1; i >= 0; i--) {
		pool[i].next = pool_free;
		pool_free = &pool[i];
	}
}

static struct dtask *task_alloc(void)
{
	struct dtask *d = pool_free;

	if (d) {
		pool_free = d->next;
		return d;
	}
	n_pool_miss++;
	return aligned_alloc(64, (sizeof(*d) + 63) / 64 * 64);
}

static void task_release(struct dtask *d)
{
	if (pool && d >= pool && d < pool + POOL_TASKS) {
		d->next = pool_free;
		pool_free = d;
		return;
	}
	free(d);
}

static struct dtask *task_new(int pid, int nice)
{
	struct dtask *d = task_alloc();
	unsigned int h = (unsigned int)pid % HASH_SIZE;

	if (!d)
		return NULL;
	memset(d, 0, sizeof(*d));
	cl_task_init(&d->t, nice);
	d->t.data = d;
	d->pid = pid;
	d->nice = nice;
	d->run_cpu = -1;
	d->next = tasks[h];
	tasks[h] = d;
	d->all_next = all_tasks;
	if (all_tasks)
		all_tasks->all_prev = d;
	all_tasks = d;
	nr_tasks++;
	return d;
}

static void task_free(struct dtask *d)
{
	struct dtask **pp = &tasks[(unsigned int)d->pid % HASH_SIZE];

	while (*pp && *pp != d)
		pp = &(*pp)->next;
	if (*pp)
		*pp = d->next;
	if (d->all_prev)
		d->all_prev->all_next = d->all_next;
	else
		all_tasks = d->all_next;
	if (d->all_next)
		d->all_next->all_prev = d->all_prev;
	nr_tasks--;
	task_release(d);
}

static int cpu_usable(unsigned int cpu)
{
	return cpu < nr_cpus && cl_rq_online(cl_sched_rq(sched, cpu));
}

static int mask_has(const unsigned long *m, unsigned int cpu)
{
	return cpu < SCX_CL_MAX_CPUS && (m[cpu / (8 * sizeof(long))] >> (cpu % (8 * sizeof(long)))) & 1;
}

static int cpu_idle(unsigned int cpu)
{
	struct cl_rq *rq = cl_sched_rq(sched, cpu);

	return CL_READ_ONCE(rq->nr_running) == 0 && CL_READ_ONCE(rq->curr) == NULL;
}

/* Where to wake @d, which last ran on @prev (see the top). -1: nowhere allowed is online. */
static int place(struct dtask *d, int prev)
{
	int best = -1, prev_ok;
	unsigned int best_load = ~0u;

	prev_ok = prev >= 0 && (unsigned int)prev < nr_cpus && cpu_usable((unsigned int)prev) &&
		  mask_has(d->mask, (unsigned int)prev);
	if (prev_ok && cpu_idle((unsigned int)prev))
		return prev;
	/* an idle CPU sharing prev's LLC (the kernel's select_idle_sibling()
	 * looks no further: leaving the LLC is the balancer's decision) */
	for (unsigned int c = 0; c < nr_cpus; c++) {
		if (!cpu_usable(c) || !mask_has(d->mask, c) || !cpu_idle(c))
			continue;
		if (!prev_ok || topo.cpu[c].llc == topo.cpu[prev].llc)
			return (int)c;
	}
	if (prev_ok)
		return prev;
	for (unsigned int c = 0; c < nr_cpus; c++) {
		unsigned int load;

		if (!cpu_usable(c) || !mask_has(d->mask, c))
			continue;
		load = CL_READ_ONCE(cl_sched_rq(sched, c)->nr_running);
		if (load < best_load) {
			best_load = load;
			best = (int)c;
		}
	}
	return best;
}

static int dispatch_fd;
static int kick_preempt_ok = 1; /* -P 0: no wakeup preemption (for comparison) */

static int send_dispatch(int pid, int cpu)
{
	struct scx_cl_dispatch d = { .pid = pid, .cpu = cpu, .slice_ns = slice_ns };

	if (bpf_map_update_elem(dispatch_fd, NULL, &d, BPF_ANY) != 0) {
		n_qfull++;
		return -1;
	}
	return 0;
}

static void unqueue(struct dtask *d, uint64_t now);

/* @d stopped running on the CPU it was dispatched to (or never started) */
static void stopped(struct dtask *d, int runnable, uint64_t now)
{
	struct cl_rq *rq = cl_sched_rq(sched, (unsigned int)d->run_cpu);

	d->held_ns += now - d->picked_ns;
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, now);
	if (rq->curr == &d->t) {
		if (!runnable)
			cl_rq_dequeue(rq, &d->t, CL_DEQUEUE_SLEEP);
		cl_rq_put_prev(rq);
		cl_rq_unlock(rq);
	} else {
		/* no longer its rq's curr (a wakeup preemption put it back in
		 * the model first): if it sleeps, it leaves the queue */
		cl_rq_unlock(rq);
		d->run_cpu = -1;
		if (!runnable && d->t.on_rq)
			unqueue(d, now);
	}
	d->run_cpu = -1;
}

/* take @d off whatever rq queues it (not running) */
static void unqueue(struct dtask *d, uint64_t now)
{
	struct cl_rq *rq = cl_task_rq_lock(sched, &d->t);

	if (!rq)
		return;
	cl_rq_update_clock(rq, now);
	if (d->t.on_rq == CL_TASK_ON_RQ_QUEUED)
		cl_rq_dequeue(rq, &d->t, CL_DEQUEUE_SLEEP);
	if (rq->curr == &d->t)
		cl_rq_put_prev(rq);
	cl_task_rq_unlock(rq, &d->t);
}

/* @d's mask from @m's words (@all: every CPU); returns how many CPUs it names */
static int mask_from_msg(struct dtask *d, const struct scx_cl_msg *m, int all)
{
	int n = 0;

	memset(d->mask, 0, sizeof(d->mask));
	for (unsigned int c = 0; c < nr_cpus && c < SCX_CL_MAX_CPUS; c++) {
		if (all || ((m->cpus[c / 64] >> (c % 64)) & 1)) {
			d->mask[c / (8 * sizeof(long))] |= 1ul << (c % (8 * sizeof(long)));
			n++;
		}
	}
	return n;
}

static struct dcg *cg_find(uint64_t id, int create)
{
	struct dcg *c = cgroups[id % CG_HASH];

	while (c && c->id != id)
		c = c->next;
	if (!c && create && (c = calloc(1, sizeof(*c)))) {
		c->id = id;
		c->shares = CL_TG_DEFAULT_SHARES;
		c->level = -1; /* unknown until its event: a group of its own */
		c->next = cgroups[id % CG_HASH];
		cgroups[id % CG_HASH] = c;
	}
	return c;
}

/* the task group of cgroup @id (NULL: the root group, or none could be made) */
static struct cl_task_group *cg_group(uint64_t id)
{
	struct dcg *c = cg_find(id, 1);

	if (!c || c->level == 0)
		return NULL;
	if (!c->tg && (c->tg = cl_task_group_create(cl_sched_root_group(sched), c->shares)))
		n_cg_groups++;
	return c->tg;
}

static void on_cgroup(const struct scx_cl_msg *m)
{
	struct dcg *c = cg_find(m->cgid, m->kind == SCX_CL_CGROUP);

	n_cg_events++;
	if (!c)
		return;
	if (m->kind == SCX_CL_CGROUP_EXIT) {
		/* gone from the kernel: its tasks left it first; a group
		 * still holding a task the model did not see leave stays */
		if (!c->tg || cl_task_group_destroy(c->tg) == 0)
			c->tg = NULL;
		return;
	}
	c->level = (int)m->level;
	c->shares = (unsigned long)m->weight * CL_TG_DEFAULT_SHARES / 100;
	if (c->tg)
		cl_task_group_set_shares(c->tg, c->shares);
}

static void set_props(struct dtask *d, const struct scx_cl_msg *m)
{
	struct cl_rq *rq = cl_task_rq_lock(sched, &d->t);
	int any = 0;

	any = mask_from_msg(d, m, 0);
	if (!any) /* more CPUs than the message carries: all */
		mask_from_msg(d, m, 1);
	cl_task_set_affinity(&d->t, m->nr_cpus_allowed >= nr_cpus ? NULL : d->mask, nr_cpus);
	if (m->cgid != d->cgid && !d->t.on_rq) {
		if (cl_task_set_group(&d->t, cg_group(m->cgid)) == 0) {
			if (d->cgid)
				n_cg_moves++;
			d->cgid = m->cgid;
		}
	}
	if (m->nice != d->nice) {
		cl_task_set_weight(&d->t, cl_nice_to_weight(m->nice));
		d->t.nice = m->nice;
		d->nice = m->nice;
	}
	if (rq)
		cl_task_rq_unlock(rq, &d->t);
}

/*
 * Wakeup preemption: @d was just woken onto @cpu's rq. If that rq's
 * curr is what the kernel runs on @cpu now (cpu_curr_pid: a pick still on
 * its way is left alone) and the runqueue says @d should preempt it
 * (cl_rq_check_preempt_wakeup(): EEVDF's eligibility and deadline, the
 * protected slice), the model puts the curr back at once (charged up to
 * now), the next dispatch_all() picks @d for @cpu, and the kick preempts
 * the running task (SCX_KICK_PREEMPT: its slice ends, it stops and is
 * enqueued again, and @cpu takes the new pick in ops.dispatch).
 */
static void wakeup_preempt(struct dtask *d, unsigned int cpu, uint64_t now)
{
	struct cl_rq *rq = cl_sched_rq(sched, cpu);
	struct cl_task *cur;

	if (cpu >= SCX_CL_MAX_CPUS || !kick_preempt_ok)
		return;
	cl_rq_lock(rq);
	cur = rq->curr;
	if (cur && cur != &d->t && skel->bss->cpu_curr_pid[cpu] == ((struct dtask *)cur->data)->pid) {
		cl_rq_update_clock(rq, now);
		if (cl_rq_check_preempt_wakeup(rq, &d->t) == 1) {
			cl_rq_put_prev(rq);
			pending_kick.preempt[cpu / 64] |= 1ull << (cpu % 64);
			pending_any = 1;
			n_preempts++;
		}
	}
	cl_rq_unlock(rq);
}

static unsigned long n_direct;
static int direct_idle = 1; /* -D 0: no idle fast path on the BPF side */
static uint64_t late_ns = 50000000; /* -l MS: the BPF side's "daemon late" threshold */

/*
 * SCX_CL_ENQ_DIRECT: the BPF side woke @d straight onto the idle CPU
 * m->cpu (it runs there now). The model wakes it on that CPU's rq and,
 * if that rq has no curr, makes it the curr (a next buddy for the pick),
 * as if the daemon had picked and dispatched it; else it stays queued
 * (a later dispatch of it is dropped and takes it out, or its next event
 * puts it right).
 */
static void on_direct(struct dtask *d, const struct scx_cl_msg *m, uint64_t now)
{
	unsigned int cpu = (unsigned int)m->cpu;
	struct cl_rq *rq;
	struct cl_task *p;

	n_direct++;
	if (d->t.on_rq)
		unqueue(d, now);
	set_props(d, m);
	if (cpu >= nr_cpus || !cpu_usable(cpu) || !mask_has(d->mask, cpu) ||
	    cl_task_wake(sched, &d->t, cpu, now) != 0)
		return; /* out of the model until its next ENQ */
	rq = cl_sched_rq(sched, cpu);
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, now);
	if (!rq->curr) {
		cl_rq_set_next_buddy(rq, &d->t);
		p = cl_rq_pick_next(rq);
		if (p == &d->t) {
			d->run_cpu = (int)cpu;
			d->picked_ns = now;
			d->picks++;
			n_picks++;
		} else if (p) {
			cl_rq_put_prev(rq);
		}
	}
	cl_rq_unlock(rq);
}

static void on_enq(const struct scx_cl_msg *m, uint64_t now)
{
	struct dtask *d = task_find(m->pid);
	int cpu;

	n_enq++;
	if (d)
		d->enq_ns = now;
	if (!d && (m->flags & SCX_CL_ENQ_DIRECT))
		d = task_new(m->pid, m->nice);
	if (!d && (m->flags & SCX_CL_ENQ_DIRECT))
		return; /* (it runs; its next ENQ tries again) */
	if (!d && !(d = task_new(m->pid, m->nice))) {
		n_direct_global++;
		send_dispatch(m->pid, -1);
		return;
	}
	d->enq_ns = now;
	if (fifo) {
		fifo_release(d);
		mask_from_msg(d, m, 0);
		fifo_push(d);
		n_wake++;
		return;
	}
	if (d->run_cpu >= 0) /* back after its slice (or preempted) */
		stopped(d, 1, now);
	if (m->flags & SCX_CL_ENQ_DIRECT) {
		on_direct(d, m, now);
		return;
	}
	if (d->t.on_rq) {
		/* queued already (back from a run, or a property change):
		 * requeue only if it must move or change weight */
		int cpu_now = d->t.cpu;

		n_requeue++;
		if (m->nice == d->nice && m->cgid == d->cgid && cpu_usable((unsigned int)cpu_now) &&
		    (m->nr_cpus_allowed >= nr_cpus) == (d->t.cpus_allowed == NULL)) {
			/* refresh the mask in place (one thread: nobody reads it meanwhile) */
			if (mask_from_msg(d, m, 0) && mask_has(d->mask, (unsigned int)cpu_now))
				return;
		}
		unqueue(d, now);
	}
	set_props(d, m);
	cpu = place(d, m->cpu);
	if (cpu < 0 || cl_task_wake(sched, &d->t, (unsigned int)cpu, now) != 0) {
		n_direct_global++;
		send_dispatch(m->pid, -1);
		return;
	}
	n_wake++;
	if (m->flags & SCX_CL_ENQ_WAKEUP)
		wakeup_preempt(d, (unsigned int)cpu, now);
}

static void on_stop(const struct scx_cl_msg *m, uint64_t now)
{
	struct dtask *d = task_find(m->pid);

	n_stop++;
	if (!d)
		return;
	d->ran_ns += m->runtime_ns;
	/* Still runnable: its ops.enqueue (SCX_CL_ENQ) follows and releases
	 * the CPU in the model. Releasing it here would let this loop pick
	 * and dispatch it again between the two events: the kernel would
	 * take that dispatch once the task is back in BPF custody, run it
	 * uncharged, and charge the task picked next for the wait. */
	if (m->flags)
		return;
	if (fifo) {
		fifo_release(d);
		fifo_remove(d);
		return;
	}
	if (d->run_cpu >= 0)
		stopped(d, 0, now);
	else if (d->t.on_rq)
		unqueue(d, now); /* it ran elsewhere (global DSQ) and sleeps now */
}

static void on_exit_task(const struct scx_cl_msg *m, uint64_t now)
{
	struct dtask *d = task_find(m->pid);

	n_exit++;
	if (!d)
		return;
	if (verbose && d->picks >= 20)
		printf("scx_cachelocal: task %d exits: nice %d, %lu picks, held %.1f ms, ran %.1f ms, vruntime %llu\n",
		       d->pid, d->nice, d->picks, (double)d->held_ns * 1e-6, (double)d->ran_ns * 1e-6,
		       (unsigned long long)d->t.se.vruntime);
	if (fifo) {
		fifo_release(d);
		fifo_remove(d);
		task_free(d);
		return;
	}
	if (d->run_cpu >= 0)
		stopped(d, 0, now);
	unqueue(d, now);
	if (d->t.tg) { /* out of its group: a group with tasks attached cannot go */
		struct cl_rq *rq = cl_task_rq_lock(sched, &d->t);

		cl_task_set_group(&d->t, NULL);
		if (rq)
			cl_task_rq_unlock(rq, &d->t);
	}
	task_free(d);
}

static unsigned char cpu_hp_off[SCX_CL_MAX_CPUS], cpu_taken[SCX_CL_MAX_CPUS];
static unsigned long n_cpu_taken;

static void on_cpu(const struct scx_cl_msg *m, uint64_t now)
{
	unsigned int cpu = (unsigned int)m->cpu;
	struct cl_rq *rq;

	if (cpu >= nr_cpus)
		return;
	if (fifo) {
		if (fifo_curr[cpu])
			fifo_release(fifo_curr[cpu]);
		return;
	}
	rq = cl_sched_rq(sched, cpu);
	/* out of the model while offline (hotplug) or taken by a higher
	 * class (a real-time task: its tasks go to other CPUs meanwhile) */
	{
		int was_out = cpu_hp_off[cpu] || cpu_taken[cpu], out;

		switch (m->kind) {
		case SCX_CL_CPU_OFF:
			n_cpu_off++;
			cpu_hp_off[cpu] = 1;
			break;
		case SCX_CL_CPU_ON:
			n_cpu_on++;
			cpu_hp_off[cpu] = 0;
			break;
		case SCX_CL_CPU_TAKEN:
			n_cpu_taken++;
			cpu_taken[cpu] = 1;
			break;
		case SCX_CL_CPU_BACK:
			cpu_taken[cpu] = 0;
			break;
		}
		out = cpu_hp_off[cpu] || cpu_taken[cpu];
		if (out == was_out)
			return;
	}
	if (cpu_hp_off[cpu] || cpu_taken[cpu]) {
		struct cl_task *c;

		cl_rq_lock(rq);
		c = rq->curr;
		cl_rq_unlock(rq);
		if (c)
			((struct dtask *)c->data)->run_cpu = -1;
		if (cl_balance_cpu_offline(sched, cpu, now) < 0)
			fprintf(stderr, "scx_cachelocal: offline of CPU %u: %s\n", cpu, strerror(errno));
	} else {
		if (cl_balance_cpu_online(sched, cpu, now) < 0 && errno != EINVAL)
			fprintf(stderr, "scx_cachelocal: online of CPU %u: %s\n", cpu, strerror(errno));
	}
}

/* the BPF side did not insert a dispatch of ours: the task no longer
 * waits for the daemon (rescued to the global DSQ, or sent there while
 * the daemon was late). The kernel does not hold it for us: out of the
 * model (its next ops.enqueue brings it back), its CPU free at once. */
static void on_drop(const struct scx_cl_msg *m, uint64_t now)
{
	struct dtask *d = task_find(m->pid);

	n_drops++;
	if (!d || fifo) {
		if (d && fifo)
			fifo_release(d);
		return;
	}
	/* The drop was decided on another CPU while the task's new
	 * ops.enqueue may have run on this one, its ENQ ahead of the DROP in
	 * the ring: if it waits for the daemon now, the model keeps it
	 * queued (only the CPU of the dropped pick is freed). */
	{
		__u64 since;

		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.waiting), &d->pid, &since) == 0) {
			n_drops_waiting++;
			if (d->run_cpu >= 0)
				stopped(d, 1, now);
			return;
		}
	}
	if (d->run_cpu >= 0)
		stopped(d, 0, now);
	else if (d->t.on_rq)
		unqueue(d, now);
}

static int handle(void *ctx, void *data, size_t len)
{
	const struct scx_cl_msg *m = data;
	uint64_t now = now_ns();

	(void)ctx;
	if (len < sizeof(*m))
		return 0;
	switch (m->kind) {
	case SCX_CL_ENQ:
		on_enq(m, now);
		break;
	case SCX_CL_STOP:
		on_stop(m, now);
		break;
	case SCX_CL_EXIT:
		on_exit_task(m, now);
		break;
	case SCX_CL_CPU_ON:
	case SCX_CL_CPU_OFF:
	case SCX_CL_CPU_TAKEN:
	case SCX_CL_CPU_BACK:
		on_cpu(m, now);
		break;
	case SCX_CL_CGROUP:
	case SCX_CL_CGROUP_EXIT:
		on_cgroup(m);
		break;
	case SCX_CL_DROP:
		on_drop(m, now);
		break;
	}
	return 0;
}

/* a pick the kernel never reported back (a stale dispatch it ignored, a
 * lost STOP) keeps its CPU's rq busy: after this long it counts as stopped */
#define PICK_TIMEOUT_NS(slice) (20 * (slice) + 2000000000ull)

static void kick(struct scx_cachelocal *skel, const struct scx_cl_kick_args *k)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = k, .ctx_size_in = sizeof(*k));

	if (bpf_program__fd(skel->progs.cl_kick) < 0)
		return;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.cl_kick), &o) == 0)
		n_kicks++;
	else
		n_kick_fail++;
}

static void fifo_dispatch(struct scx_cachelocal *skel, uint64_t now)
{
	struct scx_cl_kick_args k;
	int any = 0;

	memset(&k, 0, sizeof(k));
	for (unsigned int c = 0; c < nr_cpus && fifo_head; c++) {
		struct dtask *d = fifo_curr[c];

		if (d && now - d->picked_ns > PICK_TIMEOUT_NS(slice_ns)) {
			n_timeouts++;
			fifo_release(d);
			fifo_push(d);
		}
		if (fifo_curr[c] || skel->bss->cpu_offline[c])
			continue;
		for (d = fifo_head; d && !mask_has(d->mask, c); d = d->fifo_next)
			;
		if (!d)
			continue;
		fifo_remove(d);
		fifo_curr[c] = d;
		d->run_cpu = (int)c;
		d->picked_ns = now;
		d->picks++;
		n_picks++;
		if (send_dispatch(d->pid, (int)c) == 0) {
			k.cpus[c / 64] |= 1ull << (c % 64);
			any = 1;
		}
	}
	if (any)
		kick(skel, &k);
}

/*
 * Resynchronization after the daemon was late (the BPF side rescued tasks
 * to the global DSQ, sent new ones there because the heartbeat was stale,
 * could not report a stop, or dropped a dispatch of ours; or this loop did
 * not run for a while): one pass over every task in the model, against
 * what the kernel says:
 *   - a pick its rq still counts running, but the kernel's CPU runs
 *     another task (cpu_curr_pid), the dispatch was taken (the task is not
 *     in the waiting map) and was made more than 2 slices ago: it ran
 *     elsewhere or was dropped; out of the model, its CPU free;
 *   - a task queued in the model that does not wait for the daemon in
 *     the kernel (not in the waiting map): it ran through the global DSQ
 *     meanwhile; out of the model.
 * A task taken out comes back with its next ops.enqueue (SCX_CL_ENQ). So
 * no CPU stays counted busy by a task that ran elsewhere, and no pick
 * waits for PICK_TIMEOUT_NS. -p fifo: not resynchronized (its own state).
 */
/* (the diagnostic of a queued task the BPF side rescued: waited this long) */
static const uint64_t rescue_after_ns = 4000000000ull;

static void resync(uint64_t now, const char *why)
{
	int wfd = bpf_map__fd(skel->maps.waiting);
	unsigned long fixed_curr = 0, fixed_q = 0;
	static uint64_t last_print;

	if (fifo || wfd < 0)
		return;
	n_resyncs++;
	{
		struct dtask *d, *next;

		for (d = all_tasks; d; d = next) {
			__u64 since;
			int waiting;

			next = d->all_next;
			if (d->run_cpu < 0 && d->t.on_rq != CL_TASK_ON_RQ_QUEUED)
				continue; /* asleep in the model: nothing to check */
			waiting = bpf_map_lookup_elem(wfd, &d->pid, &since) == 0;
			if (d->run_cpu >= 0 && CL_READ_ONCE(cl_sched_rq(sched, (unsigned int)d->run_cpu)->curr) == &d->t) {
				if (waiting || skel->bss->cpu_curr_pid[d->run_cpu] == d->pid ||
				    now - d->picked_ns < 2 * slice_ns)
					continue;
				stopped(d, 0, now);
				fixed_curr++;
				continue;
			}
			if (d->t.on_rq == CL_TASK_ON_RQ_QUEUED && !waiting) {
				static int told;

				if (verbose && told < 8 && now - d->enq_ns > rescue_after_ns) {
					/* what kept it queued: its rq's state */
					struct cl_rq *rq = cl_sched_rq(sched, d->t.cpu);
					struct cl_task *c = CL_READ_ONCE(rq->curr);

					told++;
					printf("scx_cachelocal: resync: task %d (rescued) queued on CPU %u since its ENQ "
					       "%.1f ms ago; that rq: %u queued, online %d, curr %d (picked %.1f ms ago), "
					       "kernel runs %d there; its vruntime - curr's: %.1f ms, its picks %lu, "
					       "held %.1f ms, ran %.1f ms\n",
					       d->pid, d->t.cpu, (double)(now - d->enq_ns) * 1e-6,
					       (unsigned)rq->nr_running, cl_rq_online(rq),
					       c ? ((struct dtask *)c->data)->pid : 0,
					       c ? (double)(now - ((struct dtask *)c->data)->picked_ns) * 1e-6 : 0.0,
					       d->t.cpu < SCX_CL_MAX_CPUS ? skel->bss->cpu_curr_pid[d->t.cpu] : -1,
					       c ? (double)(int64_t)(d->t.se.vruntime - c->se.vruntime) * 1e-6 : 0.0,
					       d->picks, (double)d->held_ns * 1e-6, (double)d->ran_ns * 1e-6);
				}
				unqueue(d, now);
				fixed_q++;
			}
		}
	}
	n_resync_curr += fixed_curr;
	n_resync_queued += fixed_q;
	if (verbose && (fixed_curr || fixed_q) && now - last_print > 1000000000ull) {
		printf("scx_cachelocal: resync %lu (%s): corrected %lu picks and %lu queued tasks; "
		       "pick timeouts so far %lu\n",
		       n_resyncs, why, fixed_curr, fixed_q, n_timeouts);
		fflush(stdout);
		last_print = now;
	}
}

static void dispatch_all(struct scx_cachelocal *skel, uint64_t now)
{
	struct scx_cl_kick_args kick_cpus = pending_kick;
	int any = pending_any;

	if (fifo) {
		fifo_dispatch(skel, now);
		return;
	}
	for (unsigned int c = 0; c < nr_cpus; c++) {
		struct cl_rq *rq = cl_sched_rq(sched, c);
		struct cl_task *p, *cur;

		cur = CL_READ_ONCE(rq->curr);
		if (cur) {
			struct dtask *d = cur->data;

			if (d->run_cpu == (int)c && now - d->picked_ns > PICK_TIMEOUT_NS(slice_ns)) {
				n_timeouts++;
				stopped(d, 1, now);
			} else {
				continue;
			}
		}
		if (!cl_rq_online(rq) || CL_READ_ONCE(rq->nr_running) == 0)
			continue;
		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now);
		p = rq->curr ? NULL : cl_rq_pick_next(rq);
		cl_rq_unlock(rq);
		if (!p)
			continue;
		struct dtask *d = p->data;

		d->run_cpu = (int)c;
		d->picked_ns = now;
		d->picks++;
		n_picks++;
		if (send_dispatch(d->pid, (int)c) == 0 && c < SCX_CL_MAX_CPUS) {
			kick_cpus.cpus[c / 64] |= 1ull << (c % 64);
			any = 1;
		}
	}
	memset(&pending_kick, 0, sizeof(pending_kick));
	pending_any = 0;
	if (any)
		kick(skel, &kick_cpus);
}

static void balance_idle(uint64_t now)
{
	for (unsigned int c = 0; c < nr_cpus; c++) {
		if (cpu_usable(c) && cpu_idle(c))
			cl_balance_run(sched, c, now, &bstats);
	}
}

/* -c FILE: the counters line is also written there (rewritten each time;
 * scx_check reads it after SIGUSR1) */
static const char *counters_path;
static volatile sig_atomic_t report_now;

static void print_counters(struct scx_cachelocal *skel, const char *when)
{
	static char line[2048];

	snprintf(line, sizeof(line), "scx_cachelocal: %s: tasks %lu enq %lu wake %lu requeue %lu stop %lu exit %lu picks %lu "
	       "timeouts %lu global %lu qfull %lu kicks %lu/%lu cpu-off %lu cpu-on %lu "
	       "drops %lu resyncs %lu resync-curr %lu resync-queued %lu preempts %lu pool-miss %lu cpu-taken %lu "
	       "direct %lu drops-waiting %lu "
	       "balance moved %lu (smt %lu llc %lu node %lu numa %lu) | bpf enq %llu fallback %llu daemon %llu "
	       "kthread %llu dispatched %llu to-global %llu stale %llu stops %llu (slice left %llu) ran-undispatched %llu rescued %llu late %llu"
	       " dropped %llu stop-lost %llu preempt-kicks %llu"
	       " | cgroup events %lu groups %lu moves %lu\n",
	       when, nr_tasks, n_enq, n_wake, n_requeue, n_stop, n_exit, n_picks, n_timeouts, n_direct_global,
	       n_qfull, n_kicks, n_kick_fail, n_cpu_off, n_cpu_on, n_drops, n_resyncs, n_resync_curr,
	       n_resync_queued, n_preempts, n_pool_miss, n_cpu_taken, n_direct, n_drops_waiting, bstats.moved, bstats.moved_smt,
	       bstats.moved_llc, bstats.moved_node, bstats.moved_numa,
	       (unsigned long long)skel->bss->nr_enqueued, (unsigned long long)skel->bss->nr_fallback,
	       (unsigned long long)skel->bss->nr_daemon, (unsigned long long)skel->bss->nr_kthread,
	       (unsigned long long)skel->bss->nr_dispatched, (unsigned long long)skel->bss->nr_dispatch_global,
	       (unsigned long long)skel->bss->nr_stale, (unsigned long long)skel->bss->nr_stops,
	       (unsigned long long)skel->bss->nr_stop_slice_left, (unsigned long long)skel->bss->nr_run_undispatched,
	       (unsigned long long)skel->bss->nr_rescued, (unsigned long long)skel->bss->nr_daemon_late,
	       (unsigned long long)skel->bss->nr_dropped, (unsigned long long)skel->bss->nr_stop_lost,
	       (unsigned long long)skel->bss->nr_preempt_kicks, n_cg_events,
	       n_cg_groups, n_cg_moves);
	fputs(line, stdout);
	fflush(stdout);
	if (counters_path) {
		char tmp[256];
		FILE *f;

		snprintf(tmp, sizeof(tmp), "%s.tmp", counters_path);
		if ((f = fopen(tmp, "w"))) {
			fputs(line, f);
			if (fclose(f) == 0)
				rename(tmp, counters_path);
		}
	}
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	report_now = 1;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* the sum of the BPF side's counts that say the daemon was late */
static uint64_t late_events(void)
{
	return skel->bss->nr_rescued + skel->bss->nr_daemon_late + skel->bss->nr_fallback +
	       skel->bss->nr_stop_lost + skel->bss->nr_dropped;
}

/* a gap this long between two loops: the daemon was not running (a
 * higher class, a stopped process, a starved vCPU): resynchronize */
#define LOOP_GAP_NS 500000000ull

int main(int argc, char **argv)
{
	struct bpf_link *link;
	struct ring_buffer *rb;
	uint64_t balance_ns = 4000000, t_end = 0, next_bal = 0, next_print = 0, t0, late_seen = 0, last_loop;
	int opt, kick_ok = 1, rt_prio = 1;

	while ((opt = getopt(argc, argv, "s:b:t:p:r:c:P:D:l:v")) != -1) {
		switch (opt) {
		case 'r':
			rt_prio = atoi(optarg);
			break;
		case 'c':
			counters_path = optarg;
			break;
		case 'P':
			kick_preempt_ok = atoi(optarg) != 0;
			break;
		case 'D':
			direct_idle = atoi(optarg) != 0;
			break;
		case 'l':
			late_ns = strtoull(optarg, NULL, 0) * 1000000ull;
			break;
		case 's':
			slice_ns = strtoull(optarg, NULL, 0) * 1000ull;
			break;
		case 'b':
			balance_ns = strtoull(optarg, NULL, 0) * 1000ull;
			break;
		case 't':
			t_end = strtoull(optarg, NULL, 0) * 1000000000ull;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'p':
			if (strcmp(optarg, "fifo") == 0) {
				fifo = 1;
			} else if (strcmp(optarg, "eevdf") != 0) {
				fprintf(stderr, "scx_cachelocal: -p eevdf (default) or fifo\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr,
				"usage: %s [-s SLICE_US] [-b BALANCE_US] [-t SECONDS] [-p eevdf|fifo] [-r RT_PRIO] "
				"[-P 0|1] [-D 0|1] [-l LATE_MS] [-c FILE] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (slice_ns < 100000)
		slice_ns = 100000;
	libbpf_set_print(libbpf_quiet);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_usr1);
	/* the daemon must not fault on memory while the tasks wait for it:
	 * everything locked, the task records preallocated */
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
		perror("scx_cachelocal: mlockall (continuing)");
	pool_init();
	/* Out of reach of the load it schedules: SCHED_FIFO at priority
	 * rt_prio (-r; 1 by default, the lowest real-time priority), above
	 * every sched_ext task, below any real-time task of the system's. A
	 * real-time task on its CPU does not starve it either: the kernel's
	 * RT balancer places a woken real-time task on a CPU running a lower
	 * priority (find_lowest_rq()), i.e. one that runs sched_ext tasks.
	 * -r 0 keeps it a sched_ext task (the BPF side puts it straight on a
	 * local DSQ, never behind the tasks it schedules). */
	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			perror("scx_cachelocal: SCHED_FIFO (continuing as a sched_ext task)");
			rt_prio = 0;
		}
	}

	if (cl_topology_load(&topo, NULL) != 0) {
		perror("scx_cachelocal: topology");
		return 1;
	}
	nr_cpus = topo.nr_cpu_ids;
	if (nr_cpus > SCX_CL_MAX_CPUS) {
		fprintf(stderr, "scx_cachelocal: %u CPU ids, at most %d supported\n", nr_cpus, SCX_CL_MAX_CPUS);
		return 1;
	}
	urcu_memb_register_thread();
	sched = cl_sched_create(nr_cpus, NULL);
	if (!sched || cl_balance_set_topology(sched, &topo) != 0) {
		perror("scx_cachelocal: runqueues");
		return 1;
	}
	t0 = now_ns();
	for (unsigned int c = 0; c < nr_cpus; c++)
		if (!topo.cpu[c].online) {
			cpu_hp_off[c] = 1;
			cl_balance_cpu_offline(sched, c, t0);
		}

	skel = scx_cachelocal__open();
	if (!skel) {
		perror("scx_cachelocal: open BPF object");
		return 1;
	}
	skel->rodata->usersched_tgid = getpid();
	skel->rodata->nr_cpus = nr_cpus;
	skel->rodata->daemon_slice_ns = slice_ns;
	skel->rodata->fallback_slice_ns = slice_ns;
	skel->rodata->direct_idle = direct_idle && !fifo;
	skel->rodata->late_ns = late_ns < 5000000000ull ? late_ns : 5000000000ull;
	for (unsigned int c = 0; c < nr_cpus; c++)
		skel->bss->cpu_offline[c] = !topo.cpu[c].online;
	if (scx_cachelocal__load(skel) != 0) {
		/* without the kick program (a kernel that refuses sched_ext
		 * kfuncs in syscall programs): ops.dispatch still runs on the
		 * daemon's CPU whenever it sleeps */
		scx_cachelocal__destroy(skel);
		skel = scx_cachelocal__open();
		if (!skel)
			return 1;
		skel->rodata->usersched_tgid = getpid();
		skel->rodata->nr_cpus = nr_cpus;
		skel->rodata->daemon_slice_ns = slice_ns;
		skel->rodata->fallback_slice_ns = slice_ns;
	skel->rodata->direct_idle = direct_idle && !fifo;
	skel->rodata->late_ns = late_ns < 5000000000ull ? late_ns : 5000000000ull;
		for (unsigned int c = 0; c < nr_cpus; c++)
			skel->bss->cpu_offline[c] = !topo.cpu[c].online;
		bpf_program__set_autoload(skel->progs.cl_kick, false);
		kick_ok = 0;
		if (scx_cachelocal__load(skel) != 0) {
			fprintf(stderr, "scx_cachelocal: loading the BPF program failed\n");
			return 1;
		}
	}
	dispatch_fd = bpf_map__fd(skel->maps.dispatch_q);
	rb = ring_buffer__new(bpf_map__fd(skel->maps.to_daemon), handle, NULL, NULL);
	if (!rb) {
		perror("scx_cachelocal: ring buffer");
		return 1;
	}
	skel->bss->daemon_heartbeat = now_ns();
	link = bpf_map__attach_struct_ops(skel->maps.cachelocal_ops);
	if (!link) {
		perror("scx_cachelocal: attach (is another sched_ext scheduler loaded?)");
		return 1;
	}
	printf("scx_cachelocal: attached: policy %s, %u CPU ids, %u LLCs, %u nodes, slice %llu us, kick %s, "
	       "wakeup preemption %s, idle fast path %s, daemon %s, %d task records preallocated, pid %d\n",
	       fifo ? "fifo" : "eevdf", nr_cpus, topo.nr_llcs, topo.nr_nodes, (unsigned long long)(slice_ns / 1000),
	       kick_ok ? "on" : "off", kick_ok && kick_preempt_ok && !fifo ? "on" : "off",
	       direct_idle && !fifo ? "on" : "off",
	       rt_prio > 0 ? "SCHED_FIFO" : "sched_ext", pool ? POOL_TASKS : 0, getpid());
	if (!kick_ok)
		kick_preempt_ok = 0;
	last_loop = now_ns();
	fflush(stdout);

	while (!stop) {
		uint64_t now;

		if (ring_buffer__poll(rb, 2) < 0 && errno != EINTR)
			break;
		now = now_ns();
		skel->bss->daemon_heartbeat = now; /* (CLOCK_MONOTONIC: bpf_ktime_get_ns()'s clock) */
		if (skel->bss->exit_kind)
			break;
		{
			uint64_t late = late_events();

			if (late != late_seen || now - last_loop > LOOP_GAP_NS)
				resync(now, late != late_seen ? "the BPF side rescued or dropped" : "the loop was late");
			late_seen = late;
			last_loop = now;
		}
		if (report_now) {
			report_now = 0;
			print_counters(skel, "report");
		}
		if (!fifo && now >= next_bal) {
			balance_idle(now);
			next_bal = now + balance_ns;
		}
		dispatch_all(skel, now);
		if (verbose && now >= next_print) {
			print_counters(skel, "running");
			next_print = now + 10000000000ull;
		}
		if (t_end && now - t0 >= t_end)
			break;
	}
	if (skel->bss->exit_kind)
		printf("scx_cachelocal: the kernel ended the scheduler: kind %d, %s: %s\n", skel->bss->exit_kind,
		       skel->bss->exit_reason, skel->bss->exit_msg);
	bpf_link__destroy(link);
	print_counters(skel, "exit");
	ring_buffer__free(rb);
	scx_cachelocal__destroy(skel);
	return 0;
}
