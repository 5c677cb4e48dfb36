/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/counter - cl_counter beside a counter sharded by CPU with
 * Concurrency Kit's atomics: one 64-bit slot per CPU on its own
 * false-sharing unit, chosen with sched_getcpu() (glibc reads it from rseq
 * where it can) and incremented with ck_pr_inc_64 (a locked add: a thread
 * migrated between the two steps still counts right).
 *
 * Workloads: add 1, n times per thread, 1 thread and 2 threads each on its
 * own allowed CPU (a warm-up pass, then the timed one); the sum is checked
 * on both sides. Unit: ns per add per thread (the slowest thread). Every run
 * measures both back to back, the order alternating run by run; median of
 * --runs (>= 5). gain = theirs/ours (> 1: cl_counter ahead).
 */
#include "peers.h"

#include <ck_pr.h>

#include <cachelocal/counter.h>

#define SHARDS 256 /* CPUs the sharded counter spreads over (modulo) */

struct shard {
	uint64_t v;
} CL_ALIGNED(CL_FALSE_SHARING_SIZE);

static struct cl_counter counter;
static struct shard shards[SHARDS];

struct cjob {
	int ours;
	long n;
};

static void counter_body(void *arg, int id)
{
	const struct cjob *j = (const struct cjob *)arg;

	(void)id;
	if (j->ours) {
		for (long i = 0; i < j->n; i++)
			cl_counter_add(&counter, 1);
	} else {
		for (long i = 0; i < j->n; i++)
			ck_pr_inc_64(&shards[(unsigned)sched_getcpu() % SHARDS].v);
	}
}

static uint64_t shards_sum(void)
{
	uint64_t s = 0;

	for (int i = 0; i < SHARDS; i++)
		s += ck_pr_load_64(&shards[i].v);
	return s;
}

int main(int argc, char **argv)
{
	static struct peer_side ours[2], theirs[2];
	char peer[96], workload[48];
	struct bench b;
	long n;

	bench_only_shared_args("peer_counter", argc, argv);
	bench_init(&b, "peer_counter", argc, argv);
	n = b.smoke ? 10000 : b.quick ? 2000000 : 10000000;
	if (cl_counter_init(&counter) != 0) {
		printf("skipped: cl_counter_init: %s\n", strerror(errno));
		return 77;
	}
	for (int r = 0; r < b.runs; r++)
		for (int t = 0; t < 2; t++)
			for (int k = 0; k < 2; k++) {
				struct cjob j = { (k + r + t) % 2, n };
				int64_t before = j.ours ? cl_counter_read(&counter) : (int64_t)shards_sum();
				int64_t after;
				unsigned long long ns = peer_timed_run(t + 1, counter_body, &j);

				after = j.ours ? cl_counter_read(&counter) : (int64_t)shards_sum();
				if (ns == 0 || after - before != 2 * (int64_t)(t + 1) * n) {
					fprintf(stderr, "peer_counter: %s counted %lld, want %lld\n",
						j.ours ? "cl_counter" : "sharded", (long long)(after - before),
						2 * (long long)(t + 1) * n);
					return 1;
				}
				(j.ours ? ours : theirs)[t].v[r] = (double)ns / (double)n;
			}
	snprintf(peer, sizeof(peer), "ck_pr sharded counter (ck %s)", PEER_CK_VERSION);
	peer_header(&b);
	for (int t = 0; t < 2; t++) {
		snprintf(workload, sizeof(workload), "add, %d thread%s", t + 1, t ? "s" : "");
		peer_emit(&b, "counter", "cl_counter", peer, workload, t + 1, &ours[t], &theirs[t], b.runs,
			  "ns/op", 0);
	}
	cl_counter_destroy(&counter);
	return bench_finish(&b);
}
