/* SPDX-License-Identifier: MIT */
/*
 * examples/threaded_sched.c - the reference runqueue driven by real threads:
 * one pthread per simulated CPU (the worker protocol of docs/sched.md:
 * lock, clock, tick, pick, unlock) and a manager thread that balances,
 * refills bandwidth pools, moves tasks between groups and takes a CPU
 * offline and back with the hotplug handshake, all while the workers run.
 *
 * Time is simulated (1 ms per round; every thread meets at a barrier once
 * per round so that all CPUs see the same clock), so the shares are
 * reproducible up to the interleaving of the manager with the workers.
 *
 * Phase 1: "web" (shares 2048, 6 tasks) and "batch" (shares 1024, 6 tasks)
 *   on 4 CPUs: expected web 2.67 CPUs, batch 1.33.
 * Phase 2: batch capped at 0.5 CPU (50 ms per 100 ms): expected web 3.5,
 *   batch 0.5.
 * Phase 3: CPU 3 offline (handshake: begin, the worker's NULL pick, drain),
 *   two web tasks moved to batch, cap lifted: 3 CPUs, 4 web and 8 batch
 *   tasks, expected web 2.0, batch 1.0.
 * The balancer evens out task counts, not weighted load, so the measured
 * shares are close to, not equal to, the expected ones.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/threaded_sched.c -o threaded_sched $(pkg-config --cflags --libs cachelocal-sched)
 */
#include "example_args.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/rq.h>

/* liburcu 0.13 is not TSan-instrumented: see CL_SCHED_TSAN_SUPPRESSIONS. */
CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

#define NR_CPUS 4
#define NT 12
#define TICK_NS 1000000ULL
#define PHASE_MS 1500

static struct cl_sched *s;
static struct cl_task *tasks;
static struct cl_task_group *web, *batch;
static pthread_barrier_t round_bar;
static uint64_t clock_ns; /* written by the manager between two barriers */
static int done;          /* idem */

static void *worker(void *arg)
{
	unsigned int cpu = (unsigned int)(uintptr_t)arg;
	struct cl_rq *rq = cl_sched_rq(s, cpu);

	urcu_memb_register_thread();
	for (;;) {
		pthread_barrier_wait(&round_bar); /* round start: clock_ns set */
		if (done)
			break;
		cl_rq_lock(rq);
		int resched = cl_rq_tick(rq, clock_ns);

		if (cl_rq_bandwidth_update(rq))
			resched = 1;
		if (resched || !rq->curr)
			cl_rq_pick_next(rq); /* NULL when idle, or going offline: our acknowledgment */
		cl_rq_unlock(rq);
		pthread_barrier_wait(&round_bar); /* round end */
	}
	urcu_memb_unregister_thread();
	return NULL;
}

static uint64_t group_ns(const struct cl_task_group *g)
{
	uint64_t sum = 0;

	for (int i = 0; i < NT; i++)
		if (tasks[i].tg == g)
			sum += tasks[i].se.sum_exec_runtime;
	return sum;
}

/*
 * Move @p to @g under its rq lock: dequeue, set, enqueue. A running task is
 * put first: here nothing runs between two rounds, so the manager may do it;
 * a real runtime asks the task's worker to stop running it instead.
 */
static void move(struct cl_task *p, struct cl_task_group *g)
{
	struct cl_rq *rq = cl_task_rq_lock(s, p);
	int queued = p->se.on_rq;

	cl_rq_update_clock(rq, clock_ns);
	if (p->on_cpu)
		cl_rq_put_prev(rq);
	if (queued)
		cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP);
	if (cl_task_set_group(p, g) != 0)
		perror("cl_task_set_group");
	if (queued)
		cl_rq_enqueue(rq, p, CL_ENQUEUE_WAKEUP);
	cl_task_rq_unlock(rq, p);
}

static void report(int phase, double cpus, double exp_web, double exp_batch, uint64_t web0, uint64_t batch0)
{
	double w = (double)(group_ns(web) - web0) / (PHASE_MS * 1e6);
	double b = (double)(group_ns(batch) - batch0) / (PHASE_MS * 1e6);

	printf("phase %d (%.0f CPUs): web expected %.2f got %.2f CPUs; batch expected %.2f got %.2f CPUs\n",
	       phase, cpus, exp_web, w, exp_batch, b);
}

int main(int argc, char **argv)
{
	pthread_t th[NR_CPUS];
	uint64_t web0 = 0, batch0 = 0;
	unsigned long balanced = 0;
	int ms = 0;

	example_args(argc, argv, "usage: threaded_sched [--help]\n  the reference runqueue with one thread per simulated CPU\n", NULL, 0);

	urcu_memb_register_thread();
	s = cl_sched_create(NR_CPUS, NULL);
	web = s ? cl_task_group_create(cl_sched_root_group(s), 2048) : NULL;
	batch = s ? cl_task_group_create(cl_sched_root_group(s), 1024) : NULL;
	tasks = (struct cl_task *)aligned_alloc(CL_CACHELINE_SIZE, sizeof(*tasks) * NT);
	if (!web || !batch || !tasks) {
		perror("setup");
		return 1;
	}
	cl_balance_set_migration_cost(s, 0);
	for (int i = 0; i < NT; i++) {
		cl_task_init(&tasks[i], 0);
		cl_task_set_group(&tasks[i], i < 6 ? web : batch);
		cl_task_wake(s, &tasks[i], (unsigned int)i % NR_CPUS, 0);
	}
	pthread_barrier_init(&round_bar, NULL, NR_CPUS + 1);
	for (unsigned int c = 0; c < NR_CPUS; c++)
		pthread_create(&th[c], NULL, worker, (void *)(uintptr_t)c);

	for (int phase = 1; phase <= 3; phase++) {
		if (phase == 2)
			cl_tg_set_bandwidth(batch, 50000000ULL, 100000000ULL);
		for (int k = 0; k < PHASE_MS; k++, ms++) {
			clock_ns = (uint64_t)(ms + 1) * TICK_NS;
			pthread_barrier_wait(&round_bar); /* the workers tick now ... */
			/* ... while the manager works on the same rqs */
			cl_sched_bandwidth_refill(cl_sched_root_group(s), clock_ns);
			if (k % 4 == 0) {
				for (unsigned int c = 0; c < NR_CPUS; c++) {
					int r = cl_balance_run(s, c, clock_ns, NULL);

					balanced += r > 0 ? (unsigned long)r : 0;
				}
			}
			if (phase == 3 && k == 0)
				cl_balance_cpu_offline_begin(s, 3);
			if (phase == 3 && k > 0 && cl_sched_rq(s, 3)->drained == 0) {
				/* EAGAIN until worker 3's pick returned NULL */
				if (cl_balance_cpu_offline(s, 3, clock_ns) < 0 && errno != EAGAIN)
					perror("cl_balance_cpu_offline");
			}
			pthread_barrier_wait(&round_bar);
		}
		if (phase == 1)
			report(1, NR_CPUS, 4.0 * 2 / 3, 4.0 / 3, web0, batch0);
		else if (phase == 2)
			report(2, NR_CPUS, 3.5, 0.5, web0, batch0);
		else
			report(3, NR_CPUS - 1, 2.0, 1.0, web0, batch0);
		if (phase == 2) {
			cl_tg_set_bandwidth(batch, 0, 0);
			move(&tasks[0], batch);
			move(&tasks[1], batch);
		}
		web0 = group_ns(web);
		batch0 = group_ns(batch);
	}
	done = 1;
	pthread_barrier_wait(&round_bar);
	for (unsigned int c = 0; c < NR_CPUS; c++)
		pthread_join(th[c], NULL);
	printf("%lu tasks moved by the balancer; CPU 3 %s\n", balanced,
	       cl_rq_online(cl_sched_rq(s, 3)) ? "online" : "offline");

	for (int i = 0; i < NT; i++) {
		struct cl_rq *rq = cl_task_rq_lock(s, &tasks[i]);

		cl_rq_put_prev(rq);
		cl_rq_dequeue(rq, &tasks[i], CL_DEQUEUE_SLEEP);
		cl_task_set_group(&tasks[i], NULL);
		cl_task_rq_unlock(rq, &tasks[i]);
	}
	if (cl_task_group_destroy(web) || cl_task_group_destroy(batch) || cl_sched_destroy(s)) {
		perror("teardown");
		return 1;
	}
	pthread_barrier_destroy(&round_bar);
	free(tasks);
	urcu_memb_unregister_thread();
	return 0;
}
