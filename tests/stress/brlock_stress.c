/* SPDX-License-Identifier: MIT */
/*
 * brlock_stress - a writer never overlaps a reader or another writer while
 * 6 x CORES threads read (and now and then write) under migrations, signal
 * storms and injected delays inside the critical sections; readers are
 * moved between CPUs inside their sections (the migrator), so their unlock
 * counts land on other CPUs than their locks. cpu_id and mm_cid counters.
 *
 * Shadow check: readers_in / writers_in counters updated with relaxed
 * atomics inside the sections (no ordering of their own), and two plain
 * words a == b that a writer changes one after the other with a yield in
 * between. Every worker also writes: a run ends only when each worker's
 * writes completed, so a starved writer shows as a hang (the runner's
 * timeout).
 */
#include "stress.h"

#include <cachelocal/brlock.h>

static struct cl_brlock lock;
static long a, b;
static int readers_in, writers_in;
static unsigned long violations, writes, reads;

static void *worker(struct stress_run *run, int id)
{
	unsigned seed = (unsigned)id * 2246822519u + 7;
	unsigned long my_reads = 0, my_writes = 0;
	long i;

	for (i = 0;; i++) {
		if (i == 1)
			stress_allow_signals();
		if (rand_r(&seed) % 128 == 0) {
			cl_brlock_write_lock(&lock);
			if (__atomic_fetch_add(&writers_in, 1, __ATOMIC_RELAXED) != 0 ||
			    __atomic_load_n(&readers_in, __ATOMIC_RELAXED) != 0)
				__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
			a++;
			if (rand_r(&seed) % 4 == 0)
				sched_yield();
			b++;
			__atomic_fetch_sub(&writers_in, 1, __ATOMIC_RELAXED);
			cl_brlock_write_unlock(&lock);
			my_writes++;
		} else {
			int t = cl_brlock_read_lock(&lock);
			long x, y;

			__atomic_fetch_add(&readers_in, 1, __ATOMIC_RELAXED);
			if (__atomic_load_n(&writers_in, __ATOMIC_RELAXED) != 0)
				__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
			x = a;
			if (rand_r(&seed) % 64 == 0)
				sched_yield(); /* long section: the migrator may move us */
			y = b;
			if (x != y)
				__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&readers_in, 1, __ATOMIC_RELAXED);
			cl_brlock_read_unlock(&lock, t);
			my_reads++;
		}
		if ((i & 255) == 0 && my_writes > 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add(&reads, my_reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&writes, my_writes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	struct stress_run run;
	int rc, bad;

	if (cl_brlock_init_pool(&lock, NULL, idx) != 0) {
		perror("cl_brlock_init_pool");
		return 1;
	}
	a = b = 0;
	violations = writes = reads = 0;
	rc = stress_run(&run, cfg, worker, NULL, NULL);
	bad = rc != 0 || violations != 0 || a != b || (unsigned long)a != writes ||
	      !cl__brlock_idle(&lock);
	printf("brlock_stress [" STRESS_INDEX_FMT ", mode %s]: %d workers, %lu reads, %lu writes, "
	       "%lu signals, %lu migrations: %lu violations, a %ld b %ld: %s\n",
	       STRESS_INDEX_ARGS(idx),
	       cl_brlock_mode(&lock) == CL_BRLOCK_MEMBARRIER ? "membarrier" : "fence",
	       cfg->nr_workers, reads, writes, run.signals, run.migrations, violations, a, b,
	       bad ? "FAIL" : "PASS");
	cl_brlock_destroy(&lock);
	return bad;
}

STRESS_MAIN(run_index)
