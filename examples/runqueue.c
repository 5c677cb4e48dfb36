/* SPDX-License-Identifier: MIT */
/*
 * examples/runqueue.c - the reference runqueue on 4 simulated CPUs.
 *
 * Two task groups ("web": shares 2048, 4 tasks; "batch": shares 1024, 6
 * tasks, capped at 1.5 CPUs) and 2 tasks in the root group start on CPU 0.
 * Every CPU ticks each millisecond and pulls work from the busiest CPU every
 * 4 ms; CPU 3 goes offline for a while. Prints each task's share of the CPU
 * time. No threads: the clock is simulated, so the output is the same on
 * every machine.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/runqueue.c -o runqueue $(pkg-config --cflags --libs cachelocal-sched)
 *	./runqueue            # the simulation
 *	./runqueue --layout   # cl_layout_print() of struct cl_rq and cl_sched_entity
 *
 * Build with -DCL_RQ_LAYOUT_SCATTERED -DCL_SE_AVG_INLINE for the "before"
 * layouts (docs/layout/ is generated that way).
 */
#include "example_args.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>

#define NR_CPUS 4
#define TICK_NS 1000000ULL
#define RUN_MS 2000

static int print_layouts(void)
{
	static const struct cl_layout_entry rq_entries[] = {
#ifndef CL_RQ_LAYOUT_SCATTERED
		CL_LAYOUT_GROUP(struct cl_rq, cl_rq_read_pick),
		CL_LAYOUT_GROUP(struct cl_rq, cl_rq_lock),
		CL_LAYOUT_GROUP(struct cl_rq, cl_rq_clock),
		CL_LAYOUT_GROUP(struct cl_rq, cl_rq_cfs),
#endif
		CL_LAYOUT_FIELD(struct cl_rq, nr_running),
		CL_LAYOUT_FIELD(struct cl_rq, ttwu_pending),
		CL_LAYOUT_FIELD(struct cl_rq, cpu_capacity),
		CL_LAYOUT_FIELD(struct cl_rq, curr),
		CL_LAYOUT_FIELD(struct cl_rq, idle),
		CL_LAYOUT_FIELD(struct cl_rq, cpu),
		CL_LAYOUT_FIELD(struct cl_rq, online),
		CL_LAYOUT_FIELD(struct cl_rq, lock),
		CL_LAYOUT_FIELD(struct cl_rq, clock),
		CL_LAYOUT_FIELD(struct cl_rq, clock_task),
		CL_LAYOUT_FIELD(struct cl_rq, clock_update_flags),
		CL_LAYOUT_FIELD(struct cl_rq, cfs_tasks),
		CL_LAYOUT_FIELD(struct cl_rq, cfs),
		CL_LAYOUT_FIELD(struct cl_rq, nr_switches),
		CL_LAYOUT_FIELD(struct cl_rq, nr_migrations_in),
		CL_LAYOUT_FIELD(struct cl_rq, nr_migrations_out),
		CL_LAYOUT_FIELD(struct cl_rq, sched),
	};
	static const struct cl_layout_entry se_entries[] = {
		CL_LAYOUT_GROUP(struct cl_sched_entity, cl_se_read_pick),
		CL_LAYOUT_GROUP(struct cl_sched_entity, cl_se_read_walk),
		CL_LAYOUT_GROUP(struct cl_sched_entity, cl_se_write_exec),
		CL_LAYOUT_GROUP(struct cl_sched_entity, cl_se_write_avg),
		CL_LAYOUT_FIELD(struct cl_sched_entity, run_node),
		CL_LAYOUT_FIELD(struct cl_sched_entity, deadline),
		CL_LAYOUT_FIELD(struct cl_sched_entity, vruntime),
		CL_LAYOUT_FIELD(struct cl_sched_entity, min_vruntime),
		CL_LAYOUT_FIELD(struct cl_sched_entity, load),
		CL_LAYOUT_FIELD(struct cl_sched_entity, tl_seq),
		CL_LAYOUT_FIELD(struct cl_sched_entity, tl_height),
		CL_LAYOUT_FIELD(struct cl_sched_entity, on_rq),
		CL_LAYOUT_FIELD(struct cl_sched_entity, parent),
		CL_LAYOUT_FIELD(struct cl_sched_entity, cfs_rq),
		CL_LAYOUT_FIELD(struct cl_sched_entity, my_q),
		CL_LAYOUT_FIELD(struct cl_sched_entity, depth),
		CL_LAYOUT_FIELD(struct cl_sched_entity, group_node),
		CL_LAYOUT_FIELD(struct cl_sched_entity, exec_start),
		CL_LAYOUT_FIELD(struct cl_sched_entity, sum_exec_runtime),
		CL_LAYOUT_FIELD(struct cl_sched_entity, prev_sum_exec_runtime),
		CL_LAYOUT_FIELD(struct cl_sched_entity, slice),
		CL_LAYOUT_FIELD(struct cl_sched_entity, nr_migrations),
		CL_LAYOUT_FIELD(struct cl_sched_entity, vlag),
		CL_LAYOUT_FIELD(struct cl_sched_entity, avg),
	};
	static const struct cl_layout rq = CL_LAYOUT(struct cl_rq, rq_entries);
	static const struct cl_layout se = CL_LAYOUT(struct cl_sched_entity, se_entries);

	if (cl_layout_print(stdout, &rq) < 0 || cl_layout_print(stdout, &se) < 0)
		return 1;
	return 0;
}

struct demo_task {
	struct cl_task t; /* first: 64-byte aligned by its entity */
	const char *group;
};

int main(int argc, char **argv)
{
	struct cl_sched *s;
	struct cl_task_group *web, *batch;
	enum { NT = 12 };
	struct demo_task *tasks;
	uint64_t now = 0, total = 0;
	unsigned long moved = 0;

	static const char *const opts[] = { "--layout", NULL };

	example_args(argc, argv, "usage: runqueue [--layout] [--help]\n"
		     "  the reference runqueue on 4 simulated CPUs; --layout: the struct layouts\n", opts, 0);
	if (argc > 1)
		return print_layouts();

	urcu_memb_register_thread();
	s = cl_sched_create(NR_CPUS, NULL);
	if (!s) {
		perror("cl_sched_create");
		return 1;
	}
	web = cl_task_group_create(cl_sched_root_group(s), 2048);
	batch = cl_task_group_create(cl_sched_root_group(s), 1024);
	tasks = (struct demo_task *)aligned_alloc(CL_CACHELINE_SIZE, sizeof(*tasks) * NT);
	if (!web || !batch || !tasks) {
		perror("setup");
		return 1;
	}
	/* batch may use 1.5 CPUs: 150 ms of CPU time per 100 ms */
	cl_tg_set_bandwidth(batch, 150000000ULL, 100000000ULL);
	for (int i = 0; i < NT; i++) {
		struct cl_task_group *g = i < 4 ? web : i < 10 ? batch : NULL;
		struct cl_rq *rq0 = cl_sched_rq(s, 0);

		cl_task_init(&tasks[i].t, i == 11 ? 5 : 0);
		cl_task_set_group(&tasks[i].t, g);
		tasks[i].group = i < 4 ? "web" : i < 10 ? "batch" : "root";
		cl_rq_lock(rq0);
		cl_rq_update_clock(rq0, now);
		cl_rq_enqueue(rq0, &tasks[i].t, 0);
		cl_rq_unlock(rq0);
	}

	for (int ms = 1; ms <= RUN_MS; ms++) {
		now += TICK_NS;
		if (ms == 800)
			moved += (unsigned long)cl_balance_cpu_offline(s, 3, now);
		if (ms == 1200)
			cl_balance_cpu_online(s, 3, now);
		cl_sched_bandwidth_refill(cl_sched_root_group(s), now);
		for (unsigned int c = 0; c < NR_CPUS; c++) {
			struct cl_rq *rq = cl_sched_rq(s, c);
			int resched;

			if (ms % 4 == (int)c % 4) {
				int r = cl_balance_run(s, c, now, NULL);

				if (r > 0)
					moved += (unsigned long)r;
			}
			cl_rq_lock(rq);
			resched = cl_rq_tick(rq, now);
			if (cl_rq_bandwidth_update(rq))
				resched = 1;
			if (resched || !rq->curr)
				cl_rq_pick_next(rq);
			if (ms % 16 == 0)
				cl_tg_update_blocked_load(cl_sched_root_group(s), c, now);
			cl_rq_unlock(rq);
		}
	}
	for (unsigned int c = 0; c < NR_CPUS; c++) {
		struct cl_rq *rq = cl_sched_rq(s, c);

		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now);
		cl_rq_put_prev(rq);
		cl_rq_unlock(rq);
	}

	printf("%d simulated CPUs, %d ms; web: shares 2048, batch: shares 1024 capped at 1.5 CPUs;\n"
	       "CPU 3 offline from 800 to 1200 ms; %lu task migrations by the balancer and the drain\n\n",
	       NR_CPUS, RUN_MS, moved);
	printf("%-5s %-6s %4s %10s %8s %6s %4s\n", "task", "group", "nice", "cpu_ms", "share%", "migr", "cpu");
	for (int i = 0; i < NT; i++)
		total += tasks[i].t.se.sum_exec_runtime;
	for (int i = 0; i < NT; i++) {
		const struct cl_task *p = &tasks[i].t;

		printf("t%-4d %-6s %4d %10.1f %8.2f %6lu %4d\n", i, tasks[i].group, p->nice,
		       (double)p->se.sum_exec_runtime / 1e6,
		       100.0 * (double)p->se.sum_exec_runtime / (double)(NR_CPUS * (uint64_t)RUN_MS * TICK_NS),
		       (unsigned long)p->se.nr_migrations, p->cpu);
	}
	printf("\nper-group CPUs used: web %.2f, batch %.2f, root %.2f (of %d; busy %.1f%%)\n",
	       0.0 + (double)(tasks[0].t.se.sum_exec_runtime + tasks[1].t.se.sum_exec_runtime +
			      tasks[2].t.se.sum_exec_runtime + tasks[3].t.se.sum_exec_runtime) /
			     ((double)RUN_MS * 1e6),
	       0.0 + (double)(tasks[4].t.se.sum_exec_runtime + tasks[5].t.se.sum_exec_runtime +
			      tasks[6].t.se.sum_exec_runtime + tasks[7].t.se.sum_exec_runtime +
			      tasks[8].t.se.sum_exec_runtime + tasks[9].t.se.sum_exec_runtime) /
			     ((double)RUN_MS * 1e6),
	       (double)(tasks[10].t.se.sum_exec_runtime + tasks[11].t.se.sum_exec_runtime) /
		       ((double)RUN_MS * 1e6),
	       NR_CPUS, 100.0 * (double)total / (double)(NR_CPUS * (uint64_t)RUN_MS * TICK_NS));
	/*
	 * Expected: the ideal weighted split of the CPUs available on average
	 * (CPU 3 offline 400 of the 2000 ms: 3.8), by the root level's weights:
	 * web 2048, batch 1024 (its cap, 1.5, does not bind), t10 nice 0 1024,
	 * t11 nice 5 335. Per-CPU balancing only approximates it.
	 */
	{
		const double cpus = (NR_CPUS * (RUN_MS - 400.0) + (NR_CPUS - 1) * 400.0) / RUN_MS;
		const double wsum = 2048.0 + 1024.0 + 1024.0 + 335.0;

		printf("expected (ideal weighted share of %.1f CPUs): web %.2f, batch %.2f, root %.2f\n",
		       cpus, cpus * 2048.0 / wsum, cpus * 1024.0 / wsum, cpus * (1024.0 + 335.0) / wsum);
	}
	for (unsigned int c = 0; c < NR_CPUS; c++) {
		const struct cl_rq *rq = cl_sched_rq(s, c);

		printf("cpu%u: %lu switches, %lu migrations in, %lu out\n", c, (unsigned long)rq->nr_switches,
		       (unsigned long)rq->nr_migrations_in, (unsigned long)rq->nr_migrations_out);
	}

	for (int i = 0; i < NT; i++) {
		struct cl_rq *rq = cl_sched_rq(s, (unsigned int)tasks[i].t.cpu);

		cl_rq_lock(rq);
		cl_rq_dequeue(rq, &tasks[i].t, CL_DEQUEUE_SLEEP);
		cl_task_set_group(&tasks[i].t, NULL); /* detach: a group with tasks cannot go */
		cl_rq_unlock(rq);
	}
	if (cl_task_group_destroy(web) || cl_task_group_destroy(batch) ||
	    cl_sched_destroy(s)) { /* destroy waits for call_rcu (rcu_barrier) */
		perror("teardown");
		return 1;
	}
	free(tasks);
	urcu_memb_unregister_thread();
	return 0;
}
