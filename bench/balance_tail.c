/* SPDX-License-Identifier: MIT */
/*
 * bench/balance_tail.c - technique T4 measured on the reference scheduler
 * core (sched/rq.h, fair.h, balance.h): which tasks does the load balancer
 * detach when it scans cfs_tasks from the tail (the MRU list's coldest end,
 * "after") rather than from the head ("before")?
 *
 * Workload (simulated time, caller-supplied clock; no threads): N nice-0
 * tasks queued on CPU 0, CPU 1 idle. CPU 0 ticks every 250 us (+-25 us of
 * seeded jitter) and picks with the fair scheduler (cl_rq_tick /
 * cl_rq_pick_next), which moves each picked task to the head of cfs_tasks,
 * so the list is most recently run first. Some churn keeps it realistic:
 * at each tick the running task blocks with probability 2% and each
 * sleeper wakes with probability 5% (a woken task goes to the head without
 * having run: "woken tasks aside"). After 4 scheduling periods plus 10 ms,
 * CPU 1 pulls once: cl_balance_move(s, 0, 1, now).
 *
 * Both scans in one binary: balance.h picks its scan direction at compile
 * time (-DCL_DETACH_FROM_HEAD builds the head scan). This file is built
 * with the default (tail) and obtains the head scan from the SAME library
 * function by reversing CPU 0's cfs_tasks list just before the call (a
 * tail-to-head walk of the reversed list visits the tasks in exactly the
 * head-to-tail order of the original; the rest of the list is not used by
 * the pass). Both variants start from the same state: it is rebuilt from
 * the same seed for each (a checksum of every task's last-run time checks
 * that). Checked when written: the "head (before)" rows equal, number for
 * number, those of a copy of this file built with -DCL_DETACH_FROM_HEAD and
 * no reversal.
 *
 * Cases: N = 16, 64, 256 tasks; migration cost (cache-hot window) 500 us
 * (the default: hot tasks are skipped) and 0 (the check disabled, as
 * sysctl sched_migration_cost_ns = 0: the scan order alone decides).
 * Reported per variant, median over --runs seeds: tasks moved; scan steps;
 * mean time since the detached tasks last ran (ms: how cold they were);
 * detached tasks that ran within the 500 us window ("hot", only possible
 * with cost 0); hot tasks skipped (cost 500 us). Ratios: mean age tail /
 * head, scan steps head / tail. A count, not a time measurement: the cache
 * effect of migrating a hot task is not simulated here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/rq.h>

#include "bench.h"

#ifdef CL_DETACH_FROM_HEAD
#error "bench/balance_tail.c reverses the list itself to get the head scan: build it without CL_DETACH_FROM_HEAD"
#endif

#define TICK_NS 250000ULL
#define HOT_NS 500000ULL

struct bt_result {
	double moved, scanned, age_ms, hot_moved, skipped_hot;
	uint64_t checksum;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Reverse a circular list in place (head included): next <-> prev. */
static void list_reverse(struct cds_list_head *head)
{
	struct cds_list_head *pos = head;

	do {
		struct cds_list_head *n = pos->next;

		pos->next = pos->prev;
		pos->prev = n;
		pos = n;
	} while (pos != head);
}

/*
 * One experiment: build the state from @seed, balance once with the tail
 * scan (head = 0) or the head scan (head = 1), measure, tear down.
 */
static int run_once(int nr_tasks, uint64_t cost_ns, int head, uint64_t seed, struct bt_result *out)
{
	struct cl_sched *s = cl_sched_create(2, NULL);
	struct cl_task *tasks;
	uint64_t *last_run, now = 1000000, end;
	unsigned char *asleep;
	struct cl_balance_stats st;
	struct cl_rq *rq0, *rq1;
	int moved;

	if (!s)
		return -1;
	tasks = aligned_alloc(CL_CACHELINE_SIZE, sizeof(*tasks) * (size_t)nr_tasks);
	last_run = calloc((size_t)nr_tasks, sizeof(*last_run));
	asleep = calloc((size_t)nr_tasks, 1);
	if (!tasks || !last_run || !asleep)
		return -1;
	cl_balance_set_migration_cost(s, cost_ns);
	rq0 = cl_sched_rq(s, 0);
	rq1 = cl_sched_rq(s, 1);
	cl_rq_lock(rq0);
	cl_rq_update_clock(rq0, now);
	for (int i = 0; i < nr_tasks; i++) {
		cl_task_init(&tasks[i], 0);
		cl_rq_enqueue(rq0, &tasks[i], 0);
	}
	cl_rq_pick_next(rq0);
	/* 4 periods of max(6 ms, N x 0.75 ms), + 10 ms */
	end = now + 4 * (nr_tasks * 750000ULL > 6000000ULL ? nr_tasks * 750000ULL : 6000000ULL) +
	      10000000ULL;
	while (now < end) {
		int resched;

		now += TICK_NS - 25000 + rng_next(&seed) % 50001;
		resched = cl_rq_tick(rq0, now);
		for (int i = 0; i < nr_tasks; i++)
			if (asleep[i] && rng_next(&seed) % 100 < 5) {
				asleep[i] = 0;
				cl_rq_enqueue(rq0, &tasks[i], CL_ENQUEUE_WAKEUP);
			}
		if (rq0->curr && rng_next(&seed) % 100 < 2) {
			struct cl_task *p = rq0->curr;

			cl_rq_dequeue(rq0, p, CL_DEQUEUE_SLEEP);
			asleep[p - tasks] = 1;
			resched = 1;
		}
		if (resched)
			cl_rq_pick_next(rq0);
	}
	cl_rq_update_clock(rq0, now);
	out->checksum = 0;
	for (int i = 0; i < nr_tasks; i++) {
		last_run[i] = tasks[i].se.exec_start;
		out->checksum = out->checksum * 1000003u + last_run[i] + (uint64_t)asleep[i];
	}
	cl_rq_unlock(rq0);

	/* CPU 1 pulls once */
	memset(&st, 0, sizeof(st));
	if (head)
		list_reverse(&rq0->cfs_tasks); /* reference head scan, see the top */
	moved = cl_balance_move(s, 0, 1, now, &st);
	if (moved < 0)
		return -1;
	out->moved = moved;
	out->scanned = (double)st.scanned;
	out->skipped_hot = (double)st.skipped_hot;
	out->age_ms = 0;
	out->hot_moved = 0;
	for (int i = 0; i < nr_tasks; i++) {
		if (tasks[i].cpu != 1)
			continue;
		out->age_ms += (double)(now - last_run[i]) / 1e6;
		out->hot_moved += now - last_run[i] < HOT_NS;
	}
	if (moved)
		out->age_ms /= moved;

	/* tear down: nothing may stay queued */
	for (int c = 0; c < 2; c++) {
		struct cl_rq *rq = c ? rq1 : rq0;

		cl_rq_lock(rq);
		cl_rq_put_prev(rq);
		while (!cds_list_empty(&rq->cfs_tasks)) {
			struct cl_task *p = cl_task_of(
				cl_container_of(rq->cfs_tasks.next, struct cl_sched_entity, group_node));

			cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP);
		}
		cl_rq_unlock(rq);
	}
	cl_sched_destroy(s);
	free(tasks);
	free(last_run);
	free(asleep);
	return 0;
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 16, 64, 256 };
	static const uint64_t costs[] = { HOT_NS, 0 };
	static const char *const vname[2] = { "tail (after)", "head (before)" };
	struct bench b;
	int nsizes = 3;

	bench_only_shared_args("balance_tail", argc, argv);
	bench_init(&b, "balance_tail", argc, argv);
	if (b.quick)
		nsizes = 2;
	urcu_memb_register_thread();
	printf("# T4 simulated: one pull by idle CPU 1 from CPU 0 running N tasks (MRU cfs_tasks); tick 250 us, nr_migrate %u; head scan = the library's tail scan over the reversed list; counts, not time; threads column = N\n",
	       CL_SCHED_NR_MIGRATE);
	for (int si = 0; si < nsizes; si++)
		for (int ci = 0; ci < 2; ci++) {
			int n = sizes[si];
			double v[2][5][BENCH_MAX_RUNS], med[2][5];
			char cname[64];
			static const char *const metric[5] = { "moved", "scan steps", "age",
							       "hot moved", "hot skipped" };
			static const char *const unit[5] = { "tasks", "steps", "ms since run",
							     "tasks", "tasks" };

			bench_progress(&b, "N=%d migration cost %llu us: %d runs", n,
				       (unsigned long long)costs[ci] / 1000, b.runs);
			for (int r = 0; r < b.runs; r++) {
				struct bt_result res[2];

				for (int h = 0; h < 2; h++) {
					if (run_once(n, costs[ci], h, (uint64_t)r * 7919 + 17, &res[h])) {
						perror("balance_tail: run");
						return 1;
					}
					v[h][0][r] = res[h].moved;
					v[h][1][r] = res[h].scanned;
					v[h][2][r] = res[h].age_ms;
					v[h][3][r] = res[h].hot_moved;
					v[h][4][r] = res[h].skipped_hot;
				}
				if (res[0].checksum != res[1].checksum) {
					fprintf(stderr, "balance_tail: the two variants started from different states\n");
					return 1;
				}
			}
			for (int m = 0; m < 5; m++) {
				if (m == 3 && costs[ci])
					continue; /* never possible while hot tasks are skipped */
				if (m == 4 && !costs[ci])
					continue; /* no window */
				snprintf(cname, sizeof(cname), "N=%d cost=%lluus %s", n,
					 (unsigned long long)costs[ci] / 1000, metric[m]);
				for (int h = 0; h < 2; h++)
					med[h][m] = bench_report(&b, cname, vname[h], "sim", n, v[h][m],
								 b.runs, unit[m]);
			}
			snprintf(cname, sizeof(cname), "N=%d cost=%lluus", n,
				 (unsigned long long)costs[ci] / 1000);
			bench_ratio(&b, cname, "age of detached tail / head", med[0][2], med[1][2]);
			bench_ratio(&b, cname, "scan steps head / tail", med[1][1], med[0][1]);
		}
	urcu_memb_unregister_thread();
	return bench_finish(&b);
}
