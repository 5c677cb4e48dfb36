/* SPDX-License-Identifier: MIT */
/*
 * sched_soak - the reference runqueue driven the way a userspace scheduler
 * drives it: one worker thread per simulated CPU, a manager thread and a
 * balancer/hotplug thread, all at once, for DURATION seconds.
 *
 *   workers (one per CPU): lock the rq, advance the shared clock, tick,
 *     unthrottle, pick; sometimes block the running task (dequeue + pick);
 *     every few rounds cl_rq_validate() and the blocked-load walk. On a CPU
 *     going offline the worker's cl_rq_pick_next() returns NULL: that is its
 *     acknowledgment of the hotplug handshake.
 *   manager: creates and destroys groups (a tree up to 4 deep), moves tasks
 *     between groups (queued ones: dequeue, set, enqueue under
 *     cl_task_rq_lock()), changes weights and affinity of sleeping tasks,
 *     sets and lifts bandwidth caps, wakes sleeping tasks with
 *     cl_task_wake() on random CPUs.
 *   balancer: cl_balance_run() for random CPUs, bandwidth refills, and CPU
 *     offline (cl_balance_cpu_offline_begin() + cl_balance_cpu_offline()
 *     until the worker acknowledged) and online.
 *
 * Checked while running: every cl_rq_validate(); a picked task is queued on
 * that rq and running nowhere else (an owner word per task); nothing is
 * queued on a drained CPU. At the end (after finishing an offline handshake
 * that the stop interrupted): every rq validates, every task is either
 * queued on exactly one rq or asleep (never both, never neither), no task
 * is queued on an offline CPU.
 *
 * Knobs (environment): CORES simulated CPUs (default 4, clamped to 2..8),
 * DURATION seconds (default 1), ITERATIONS minimum manager operations
 * (default 20000; the run goes on until both are reached, at most 10 x
 * DURATION). Exit status: 0 pass, 1 fail.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cachelocal/sched/balance.h>

/* liburcu 0.13 is not TSan-instrumented: see CL_SCHED_TSAN_SUPPRESSIONS. */
CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

#define MAX_CPUS 8
#define NR_TASKS 96
#define MAX_GROUPS 24
#define TICK_NS 250000ULL

struct task {
	struct cl_task t;
	atomic_int asleep;  /* 1: blocked, waiting for the manager's wakeup */
	atomic_int running; /* CPU + 1 running it, 0 none */
};

static struct cl_sched *s;
static unsigned int nr_cpus;
static struct task tasks[NR_TASKS];
static atomic_ullong clock_ns;
static atomic_int stop;
static atomic_ulong failures;
static atomic_ulong validations, picks, blocks, wakes, moves, reweights, reaffine, bw_changes,
	groups_created, groups_destroyed, offlines, onlines, balanced, manager_ops;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
/* Affinity masks: static, so they outlive every task (cl_task_set_affinity()'s rule). */
static unsigned long masks[4];
/* A CPU the balancer began taking offline when the run stopped (-1: none). */
static int pending_offline = -1;

static void fail(const char *fmt, const char *what, long a, long b)
{
	pthread_mutex_lock(&fail_lock);
	if (atomic_fetch_add(&failures, 1) < 10) {
		fprintf(stderr, "sched_soak: FAIL: ");
		fprintf(stderr, fmt, what, a, b);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&fail_lock);
}

static uint64_t now_advance(void)
{
	return atomic_fetch_add(&clock_ns, TICK_NS) + TICK_NS;
}

static uint64_t now_read(void)
{
	return atomic_load(&clock_ns);
}

static unsigned int rnd(unsigned int *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) & 0xffffffu;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- workers ---- */

static void check_rq(struct cl_rq *rq)
{
	const char *why = NULL;

	atomic_fetch_add(&validations, 1);
	if (cl_rq_validate(rq, &why) != 0)
		fail("cpu %s: cl_rq_validate: %ld %ld", why, (long)rq->cpu, 0);
}

/* Account the switch prev -> rq->curr made by the last pick on @cpu. */
static void account_switch(unsigned int cpu, struct cl_task *prev, struct cl_task *next)
{
	if (prev == next)
		return;
	if (prev) {
		struct task *tp = cl_container_of(prev, struct task, t);

		atomic_store(&tp->running, 0);
	}
	if (next) {
		struct task *tn = cl_container_of(next, struct task, t);
		int expect = 0;

		atomic_fetch_add(&picks, 1);
		if (!atomic_compare_exchange_strong(&tn->running, &expect, (int)cpu + 1))
			fail("%stask %ld picked while running on CPU %ld", "", (long)(tn - tasks), (long)expect - 1);
		if (next->cpu != (int)cpu || next->on_rq != CL_TASK_ON_RQ_QUEUED || !next->se.on_rq)
			fail("%stask %ld picked on CPU %ld but not queued there", "", (long)(tn - tasks),
			     (long)cpu);
	}
}

static void *worker_main(void *arg)
{
	unsigned int cpu = (unsigned int)(uintptr_t)arg, seed = 0x9e3779b9u * (cpu + 1);
	struct cl_rq *rq = cl_sched_rq(s, cpu);
	unsigned long round = 0;

	urcu_memb_register_thread();
	while (!atomic_load(&stop)) {
		uint64_t now = now_advance();
		struct cl_task *prev;

		cl_rq_lock(rq);
		prev = rq->curr;
		if (!cl_rq_online(rq)) {
			/* going offline (or offline): acknowledge by picking nothing */
			if (cl_rq_pick_next(rq))
				fail("%soffline CPU %ld picked a task%ld", "", (long)cpu, 0);
			account_switch(cpu, prev, rq->curr);
			/* drained (hotplug_lock + this lock): nothing may be queued here any more */
			if (rq->drained && (!cds_list_empty(&rq->cfs_tasks) || rq->nr_running))
				fail("%sdrained CPU %ld has %ld tasks queued", "", (long)cpu, (long)rq->nr_running);
			cl_rq_unlock(rq);
			sched_yield();
			continue;
		}
		int resched = cl_rq_tick(rq, now);

		if (cl_rq_bandwidth_update(rq))
			resched = 1;
		if (resched || !rq->curr)
			cl_rq_pick_next(rq);
		account_switch(cpu, prev, rq->curr);
		prev = rq->curr;
		if (prev && rnd(&seed) % 6 == 0) {
			/* the running task blocks */
			struct task *tp = cl_container_of(prev, struct task, t);

			if (cl_rq_dequeue(rq, prev, CL_DEQUEUE_SLEEP) != 0)
				fail("%sdequeue of the running task %ld failed on CPU %ld", "",
				     (long)(tp - tasks), (long)cpu);
			cl_rq_pick_next(rq);
			account_switch(cpu, prev, rq->curr);
			atomic_store(&tp->asleep, 1);
			atomic_fetch_add(&blocks, 1);
		}
		if (++round % 16 == 0) {
			cl_tg_update_blocked_load(cl_sched_root_group(s), cpu, now);
			check_rq(rq);
		}
		cl_rq_unlock(rq);
		if (round % 8 == 0)
			sched_yield();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ---- manager ---- */

static struct cl_task_group *groups[MAX_GROUPS];
static unsigned int nr_groups;

static struct cl_task_group *random_group(unsigned int *seed)
{
	unsigned int i = rnd(seed) % (nr_groups + 1);

	return i == nr_groups ? NULL : groups[i];
}

static void wake_task(struct task *tp, unsigned int *seed)
{
	for (unsigned int tries = 0; tries < nr_cpus; tries++) {
		unsigned int cpu = rnd(seed) % nr_cpus;

		if (!cl_task_allowed_on(&tp->t, cpu))
			continue;
		/* cleared first: the worker that blocks it next sets it again */
		atomic_store(&tp->asleep, 0);
		if (cl_task_wake(s, &tp->t, cpu, now_read()) == 0) {
			atomic_fetch_add(&wakes, 1);
			return;
		}
		atomic_store(&tp->asleep, 1);
		if (errno != ENXIO)
			fail("%scl_task_wake: errno %ld (task %ld)", "", (long)errno, (long)(tp - tasks));
	}
}

/* Move @tp to @g: a queued task is dequeued, moved and requeued under its rq lock. */
static void move_task(struct task *tp, struct cl_task_group *g)
{
	struct cl_rq *rq = cl_task_rq_lock(s, &tp->t);
	int queued;

	if (!rq || tp->t.on_cpu) {
		cl_task_rq_unlock(rq, &tp->t);
		return; /* new, or running: leave it */
	}
	queued = tp->t.se.on_rq;
	cl_rq_update_clock(rq, now_read());
	if (queued && cl_rq_dequeue(rq, &tp->t, CL_DEQUEUE_SLEEP) != 0)
		fail("%smove: dequeue failed (task %ld)%ld", "", (long)(tp - tasks), 0);
	if (cl_task_set_group(&tp->t, g) != 0)
		fail("%smove: set_group: errno %ld (task %ld)", "", (long)errno, (long)(tp - tasks));
	else
		atomic_fetch_add(&moves, 1);
	if (queued && cl_rq_enqueue(rq, &tp->t, CL_ENQUEUE_WAKEUP) != 0) {
		/* its CPU went offline meanwhile: it sleeps until the manager wakes it */
		if (errno != ENXIO)
			fail("%smove: enqueue: errno %ld (task %ld)", "", (long)errno, (long)(tp - tasks));
		atomic_store(&tp->asleep, 1);
	}
	cl_task_rq_unlock(rq, &tp->t);
}

static void *manager_main(void *arg)
{
	unsigned int seed = 12345;
	long min_ops = (long)(intptr_t)arg;

	(void)min_ops;
	urcu_memb_register_thread();
	while (!atomic_load(&stop)) {
		struct task *tp = &tasks[rnd(&seed) % NR_TASKS];
		unsigned int op = rnd(&seed) % 16;
		struct cl_rq *rq;

		atomic_fetch_add(&manager_ops, 1);
		switch (op) {
		case 0: /* create a group */
			if (nr_groups < MAX_GROUPS) {
				struct cl_task_group *parent = random_group(&seed);
				struct cl_task_group *g;

				if (parent && parent->depth >= 4)
					parent = NULL;
				g = cl_task_group_create(parent ? parent : cl_sched_root_group(s),
							 1 + rnd(&seed) % 4096);
				if (g) {
					groups[nr_groups++] = g;
					atomic_fetch_add(&groups_created, 1);
				} else {
					fail("%sgroup create: errno %ld%ld", "", (long)errno, 0);
				}
			}
			break;
		case 1: /* destroy one: EBUSY while it has tasks or children */
			if (nr_groups) {
				unsigned int i = rnd(&seed) % nr_groups;

				if (cl_task_group_destroy(groups[i]) == 0) {
					groups[i] = groups[--nr_groups];
					atomic_fetch_add(&groups_destroyed, 1);
				} else if (errno != EBUSY) {
					fail("%sgroup destroy: errno %ld%ld", "", (long)errno, 0);
				}
			}
			break;
		case 2:
		case 3:
			move_task(tp, random_group(&seed));
			break;
		case 4: /* weight of a sleeping task */
			rq = cl_task_rq_lock(s, &tp->t);
			if (!tp->t.on_rq && cl_task_set_weight(&tp->t, cl_nice_to_weight((int)(rnd(&seed) % 40) - 20)) == 0)
				atomic_fetch_add(&reweights, 1);
			cl_task_rq_unlock(rq, &tp->t);
			break;
		case 5: /* affinity */
			rq = cl_task_rq_lock(s, &tp->t);
			if (cl_task_set_affinity(&tp->t, rnd(&seed) % 2 ? NULL : &masks[rnd(&seed) % 4], nr_cpus) == 0)
				atomic_fetch_add(&reaffine, 1);
			else
				fail("%sset_affinity: errno %ld%ld", "", (long)errno, 0);
			cl_task_rq_unlock(rq, &tp->t);
			break;
		case 6: /* bandwidth */
			if (nr_groups) {
				struct cl_task_group *g = groups[rnd(&seed) % nr_groups];
				uint64_t quota = rnd(&seed) % 3 ? CL_TG_MIN_QUOTA_NS * (1 + rnd(&seed) % 20) : 0;

				if (cl_tg_set_bandwidth(g, quota, 10000000ULL) != 0)
					fail("%sset_bandwidth: errno %ld%ld", "", (long)errno, 0);
				atomic_fetch_add(&bw_changes, 1);
			}
			break;
		default: /* wake */
			if (atomic_load(&tp->asleep))
				wake_task(tp, &seed);
			break;
		}
		if (op % 4 == 0)
			sched_yield();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ---- balancer and hotplug ---- */

static void *balancer_main(void *arg)
{
	unsigned int seed = 777;
	struct cl_balance_stats st;

	(void)arg;
	memset(&st, 0, sizeof(st));
	urcu_memb_register_thread();
	while (!atomic_load(&stop)) {
		unsigned int cpu = rnd(&seed) % nr_cpus, op = rnd(&seed) % 32;
		uint64_t now = now_read();

		cl_sched_bandwidth_refill(cl_sched_root_group(s), now);
		if (op == 0) {
			if (cl_balance_cpu_offline_begin(s, cpu) == 0) {
				int r;

				/* wait for the worker's acknowledgment */
				while ((r = cl_balance_cpu_offline(s, cpu, now_read())) < 0 && errno == EAGAIN &&
				       !atomic_load(&stop))
					sched_yield();
				if (r >= 0)
					atomic_fetch_add(&offlines, 1);
				else if (errno == EAGAIN)
					pending_offline = (int)cpu; /* stopped: main finishes the handshake */
				else
					fail("%soffline: errno %ld (cpu %ld)", "", (long)errno, (long)cpu);
			} else if (errno != EBUSY && errno != EINVAL) {
				fail("%soffline_begin: errno %ld (cpu %ld)", "", (long)errno, (long)cpu);
			}
		} else if (op < 3) {
			if (cl_balance_cpu_online(s, cpu, now) == 0)
				atomic_fetch_add(&onlines, 1);
		} else {
			int r = cl_balance_run(s, cpu, now, &st);

			if (r > 0)
				atomic_fetch_add(&balanced, (unsigned long)r);
			else if (r < 0 && errno != EINVAL) /* EINVAL: a CPU went offline meanwhile */
				fail("%sbalance: errno %ld%ld", "", (long)errno, 0);
		}
		sched_yield();
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* ---- end-of-run accounting ---- */

/*
 * The run may stop between cl_balance_cpu_offline_begin() and the drain:
 * the CPU is then going offline (cl_rq_online() == 0) with its tasks still
 * queued, which is correct, and its worker has exited without acknowledging.
 * Play that worker (pick nothing) and drain, so that the final check's "no
 * task on an offline CPU" is exact rather than racing the shutdown.
 */
static void finish_pending_offline(void)
{
	struct cl_rq *rq;
	struct cl_task *prev;
	int r;

	if (pending_offline < 0)
		return;
	rq = cl_sched_rq(s, (unsigned int)pending_offline);
	cl_rq_lock(rq);
	prev = rq->curr;
	if (cl_rq_online(rq) || cl_rq_pick_next(rq))
		fail("%sCPU %ld left going offline is online or picked a task%ld", "", (long)pending_offline, 0);
	account_switch((unsigned int)pending_offline, prev, rq->curr);
	cl_rq_unlock(rq);
	r = cl_balance_cpu_offline(s, (unsigned int)pending_offline, now_read());
	if (r < 0)
		fail("%sfinishing the offline of CPU %ld: errno %ld", "", (long)pending_offline, (long)errno);
	else
		atomic_fetch_add(&offlines, 1);
}

static void final_check(void)
{
	unsigned int listed[NR_TASKS];

	memset(listed, 0, sizeof(listed));
	for (unsigned int c = 0; c < nr_cpus; c++) {
		struct cl_rq *rq = cl_sched_rq(s, c);
		struct cds_list_head *pos;

		cl_rq_lock(rq);
		check_rq(rq);
		cds_list_for_each(pos, &rq->cfs_tasks) {
			struct cl_sched_entity *se = cl_container_of(pos, struct cl_sched_entity, group_node);
			struct task *tp = cl_container_of(cl_task_of(se), struct task, t);
			long i = tp - tasks;

			listed[i]++;
			if (!cl_rq_online(rq))
				fail("%stask %ld queued on offline CPU %ld", "", i, (long)c);
		}
		cl_rq_unlock(rq);
	}
	for (long i = 0; i < NR_TASKS; i++) {
		int asleep = atomic_load(&tasks[i].asleep);

		if (listed[i] > 1)
			fail("%stask %ld queued on %ld rqs", "", i, (long)listed[i]);
		if (listed[i] && asleep)
			fail("%stask %ld queued and asleep%ld", "", i, 0);
		if (!listed[i] && !asleep)
			fail("%stask %ld lost: neither queued nor asleep%ld", "", i, 0);
		if (!listed[i] && tasks[i].t.on_rq)
			fail("%stask %ld on_rq %ld but on no rq's list", "", i, (long)tasks[i].t.on_rq);
	}
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : def;
}

int main(void)
{
	double duration = (double)env_long("DURATION", 1);
	long min_ops = env_long("ITERATIONS", 20000);
	pthread_t workers[MAX_CPUS], manager, balancer;
	double t0;
	long cores = env_long("CORES", 4);

	nr_cpus = (unsigned int)(cores < 2 ? 2 : cores > MAX_CPUS ? MAX_CPUS : cores);
	masks[0] = 1UL;                                  /* CPU 0 only */
	masks[1] = 1UL << (nr_cpus - 1);                 /* the last CPU only */
	masks[2] = 0x5UL & ((1UL << nr_cpus) - 1);       /* 0 and 2 (0 when 2 CPUs) */
	masks[3] = ((1UL << nr_cpus) - 1) & ~1UL;        /* all but 0 */
	urcu_memb_register_thread();
	s = cl_sched_create(nr_cpus, NULL);
	if (!s) {
		perror("cl_sched_create");
		return 1;
	}
	cl_balance_set_migration_cost(s, 0);
	for (unsigned int i = 0; i < NR_TASKS; i++) {
		cl_task_init(&tasks[i].t, (int)(i % 11) - 5);
		tasks[i].t.data = &tasks[i];
		if (cl_task_wake(s, &tasks[i].t, i % nr_cpus, 0) != 0) {
			perror("cl_task_wake");
			return 1;
		}
	}
	t0 = wall();
	for (unsigned int c = 0; c < nr_cpus; c++)
		pthread_create(&workers[c], NULL, worker_main, (void *)(uintptr_t)c);
	pthread_create(&manager, NULL, manager_main, (void *)(intptr_t)min_ops);
	pthread_create(&balancer, NULL, balancer_main, NULL);
	for (;;) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		double el = wall() - t0;

		nanosleep(&ts, NULL); /* a timer, not a rendezvous: the run's length */
		if ((el >= duration && (long)atomic_load(&manager_ops) >= min_ops) || el >= 10 * duration)
			break;
	}
	atomic_store(&stop, 1);
	for (unsigned int c = 0; c < nr_cpus; c++)
		pthread_join(workers[c], NULL);
	pthread_join(manager, NULL);
	pthread_join(balancer, NULL);

	finish_pending_offline();
	final_check();
	printf("sched_soak: %u CPUs, %d tasks, %.1f s: %lu manager ops, %lu picks, %lu blocks, %lu wakes, "
	       "%lu group moves, %lu weights, %lu affinities, %lu bandwidth changes, %lu/%lu groups "
	       "created/destroyed, %lu offlines, %lu onlines, %lu balanced, %lu validations, %lu failures\n",
	       nr_cpus, NR_TASKS, wall() - t0, atomic_load(&manager_ops), atomic_load(&picks),
	       atomic_load(&blocks), atomic_load(&wakes), atomic_load(&moves), atomic_load(&reweights),
	       atomic_load(&reaffine), atomic_load(&bw_changes), atomic_load(&groups_created),
	       atomic_load(&groups_destroyed), atomic_load(&offlines), atomic_load(&onlines),
	       atomic_load(&balanced), atomic_load(&validations), atomic_load(&failures));

	/* tear down: every task asleep and detached, every group destroyed */
	for (unsigned int c = 0; c < nr_cpus; c++) {
		struct cl_rq *rq = cl_sched_rq(s, c);

		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now_read());
		cl_rq_put_prev(rq);
		cl_rq_unlock(rq);
	}
	for (unsigned int i = 0; i < NR_TASKS; i++) {
		struct cl_rq *rq = cl_task_rq_lock(s, &tasks[i].t);

		if (rq && tasks[i].t.se.on_rq)
			cl_rq_dequeue(rq, &tasks[i].t, CL_DEQUEUE_SLEEP);
		cl_task_set_group(&tasks[i].t, NULL);
		cl_task_rq_unlock(rq, &tasks[i].t);
	}
	while (nr_groups) {
		for (unsigned int i = 0; i < nr_groups; i++) {
			if (cl_task_group_destroy(groups[i]) == 0)
				groups[i--] = groups[--nr_groups];
		}
	}
	if (cl_sched_destroy(s) != 0) {
		fail("%scl_sched_destroy: errno %ld%ld", "", (long)errno, 0);
	}
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
	if (atomic_load(&failures)) {
		printf("sched_soak: FAILED (%lu)\n", atomic_load(&failures));
		return 1;
	}
	printf("sched_soak: ok\n");
	return 0;
}
