/* SPDX-License-Identifier: MIT */
/*
 * examples/layout.c - a runqueue laid out like the kernel's struct rq after
 * the 2025 regrouping (technique T1), proved at build time and printed.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/layout.c -o layout $(pkg-config --cflags --libs cachelocal)
 */
#include "example_args.h"
#include <stdint.h>
#include <stdio.h>

#include <cachelocal/cacheline.h>

/*
 * struct demo_rq - one per CPU.
 *
 * demo_rq_read_pick: read on every pick by the owner CPU and, without the
 *   lock, by remote CPUs choosing where to wake or steal (nr_running). Written
 *   rarely relative to reads (kernel profile: load:store about 38:1). One line.
 * demo_rq_lock: the runqueue lock alone. Every remote wakeup does an atomic
 *   RMW on it; next to the pick fields it would invalidate them for readers.
 * demo_rq_clock: written by the owner on every update_rq_clock()/tick, read
 *   by the same paths (load:store about 5:1): together, away from the pick line.
 * The rest is cold (statistics) and follows.
 * Keep in step with the cl_layout_print() output in README.md.
 */
struct demo_rq {
	CL_GROUP_BEGIN_ALIGNED(demo_rq_read_pick);
	unsigned int nr_running;
	unsigned int nr_numa_running;
	unsigned int nr_preferred_running;
	unsigned int ttwu_pending;
	unsigned long cpu_capacity;
	void *curr;
	void *idle;
	CL_GROUP_END_ALIGNED(demo_rq_read_pick);

	CL_GROUP_BEGIN_ALIGNED(demo_rq_lock);
	int lock;
	CL_GROUP_END_ALIGNED(demo_rq_lock);

	CL_GROUP_BEGIN_ALIGNED(demo_rq_clock);
	uint64_t clock;
	uint64_t clock_task;
	uint64_t clock_pelt;
	uint64_t lost_idle_time;
	uint64_t clock_pelt_idle;
	uint64_t clock_idle;
	unsigned int clock_update_flags;
	CL_GROUP_END_ALIGNED(demo_rq_clock);

	uint64_t nr_switches;
	uint64_t nr_load_updates;
};

CL_ASSERT_ALIGNED(struct demo_rq);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, nr_running);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, nr_numa_running);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, nr_preferred_running);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, ttwu_pending);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, cpu_capacity);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, curr);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_read_pick, idle);
CL_ASSERT_GROUP_SIZE(struct demo_rq, demo_rq_read_pick, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_lock, lock);
CL_ASSERT_GROUP_SIZE(struct demo_rq, demo_rq_lock, CL_CACHELINE_SIZE);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock_task);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock_pelt);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, lost_idle_time);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock_pelt_idle);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock_idle);
CL_ASSERT_GROUP_MEMBER(struct demo_rq, demo_rq_clock, clock_update_flags);
CL_ASSERT_GROUP_SIZE(struct demo_rq, demo_rq_clock, CL_CACHELINE_SIZE);
CL_ASSERT_SAME_LINE(struct demo_rq, nr_running, curr);
CL_ASSERT_SAME_LINE(struct demo_rq, clock, clock_update_flags);
CL_ASSERT_APART(struct demo_rq, lock, nr_running);
CL_ASSERT_APART(struct demo_rq, lock, clock);
CL_ASSERT_APART(struct demo_rq, curr, clock);

static const struct cl_layout_entry demo_rq_entries[] = {
	CL_LAYOUT_GROUP(struct demo_rq, demo_rq_read_pick),
	CL_LAYOUT_FIELD(struct demo_rq, nr_running),
	CL_LAYOUT_FIELD(struct demo_rq, nr_numa_running),
	CL_LAYOUT_FIELD(struct demo_rq, nr_preferred_running),
	CL_LAYOUT_FIELD(struct demo_rq, ttwu_pending),
	CL_LAYOUT_FIELD(struct demo_rq, cpu_capacity),
	CL_LAYOUT_FIELD(struct demo_rq, curr),
	CL_LAYOUT_FIELD(struct demo_rq, idle),
	CL_LAYOUT_GROUP(struct demo_rq, demo_rq_lock),
	CL_LAYOUT_FIELD(struct demo_rq, lock),
	CL_LAYOUT_GROUP(struct demo_rq, demo_rq_clock),
	CL_LAYOUT_FIELD(struct demo_rq, clock),
	CL_LAYOUT_FIELD(struct demo_rq, clock_task),
	CL_LAYOUT_FIELD(struct demo_rq, clock_pelt),
	CL_LAYOUT_FIELD(struct demo_rq, lost_idle_time),
	CL_LAYOUT_FIELD(struct demo_rq, clock_pelt_idle),
	CL_LAYOUT_FIELD(struct demo_rq, clock_idle),
	CL_LAYOUT_FIELD(struct demo_rq, clock_update_flags),
	CL_LAYOUT_FIELD(struct demo_rq, nr_switches),
	CL_LAYOUT_FIELD(struct demo_rq, nr_load_updates),
};
static const struct cl_layout demo_rq_layout = CL_LAYOUT(struct demo_rq, demo_rq_entries);

int main(int argc, char **argv)
{
	char msg[256];

	example_args(argc, argv, "usage: layout [--help]\n  cache-line layout of a runqueue-like struct, printed with cl_layout_print()\n", NULL, 0);

	if (cl_cacheline_check(msg, sizeof(msg)) != 0)
		fprintf(stderr, "warning: %s\n", msg);
	printf("machine cache line: %zu bytes; built for %d (guard %d)\n\n",
	       cl_cacheline_size_runtime(), CL_CACHELINE_SIZE, CL_FALSE_SHARING_SIZE);
	return cl_layout_print(stdout, &demo_rq_layout) < 0;
}
