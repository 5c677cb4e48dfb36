/* SPDX-License-Identifier: MIT */
/*
 * bench/false_sharing.c - T1/T2 in userspace: what a writer on a line costs
 * the readers of that line, and how far apart the fields must be.
 *
 * A reader pinned to one CPU loops over the pick-path fields of a runqueue-
 * like struct (nr_running, curr, cpu_capacity: the demo_rq_read_pick group of
 * examples/layout.c). A writer pinned to the other CPU hammers one field:
 *
 *  lock case (T1):  an atomic exchange pair (lock/unlock) on `lock`, like
 *                   remote wakeups taking the runqueue lock;
 *  avg case (T2):   plain stores to a load-average word, like update_load_avg()
 *                   writing sched_entity::avg.
 *
 * The written field sits at 0 bytes (same line as the read fields: the
 * "before" layouts), 64 bytes (next line: CL_GROUP_BEGIN_ALIGNED) or
 * 128 bytes (next false-sharing unit: CL_GROUP_BEGIN_GUARDED) from them. The
 * reader's ns per pass over its fields is the result; ratios are against the
 * 128-byte layout. "no writer" is the baseline of the same loop.
 *
 * Cachegrind cannot see this (no coherence model): it is timed. Run on two
 * different CPUs; with one allowed CPU the benchmark says so and exits 77.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cachelocal/cacheline.h>

#include "bench.h"

/* The reader's fields, as in demo_rq_read_pick; the writer's word follows at a chosen distance. */
struct fs_read {
	unsigned int nr_running;
	unsigned int ttwu_pending;
	unsigned long cpu_capacity;
	void *curr;
};

struct fs_shared {
	struct fs_read *rd;
	unsigned long *wr;
	int use_xchg;
	volatile int stop;
	volatile int writer_ready;
};

static void *writer_main(void *arg)
{
	struct fs_shared *s = arg;
	unsigned long v = 0;

	bench_pin(bench_allowed_cpu(1));
	s->writer_ready = 1;
	while (!s->stop) {
		if (s->use_xchg) {
			/* lock + unlock: two atomic RMWs per iteration */
			while (__atomic_exchange_n(s->wr, 1ul, __ATOMIC_ACQUIRE))
				;
			__atomic_store_n(s->wr, 0ul, __ATOMIC_RELEASE);
		} else {
			__atomic_store_n(s->wr, ++v, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* Reader: passes over the read fields for `ns` nanoseconds; returns ns per pass. */
static double reader_run(const struct fs_read *rd, unsigned long long ns)
{
	unsigned long long t0 = bench_now_ns(), t1, passes = 0;
	unsigned long sum = 0;

	do {
		for (int i = 0; i < 256; i++) {
			sum += __atomic_load_n(&rd->nr_running, __ATOMIC_RELAXED);
			sum += __atomic_load_n(&rd->ttwu_pending, __ATOMIC_RELAXED);
			sum += __atomic_load_n(&rd->cpu_capacity, __ATOMIC_RELAXED);
			sum += (unsigned long)__atomic_load_n(&rd->curr, __ATOMIC_RELAXED);
		}
		passes += 256;
		t1 = bench_now_ns();
	} while (t1 - t0 < ns);
	BENCH_KEEP(sum);
	return (double)(t1 - t0) / (double)passes;
}

/* One measurement: writer `distance` bytes after the read fields (-1: no writer). */
static double measure(char *base, long distance, int use_xchg, unsigned long long ns)
{
	struct fs_shared s = { 0 };
	pthread_t th;
	double r;

	memset(base, 0, 512);
	s.rd = (struct fs_read *)base;
	s.rd->nr_running = 1;
	s.rd->cpu_capacity = 1024;
	s.use_xchg = use_xchg;
	if (distance < 0)
		return reader_run(s.rd, ns);
	/* distance 0 = the word right after the read fields, on their line */
	s.wr = (unsigned long *)(base + (distance ? distance : (long)sizeof(struct fs_read)));
	if (pthread_create(&th, NULL, writer_main, &s) != 0) {
		perror("pthread_create");
		exit(1);
	}
	while (!s.writer_ready)
		;
	r = reader_run(s.rd, ns);
	s.stop = 1;
	pthread_join(th, NULL);
	return r;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		long distance;
	} layouts[] = {
		{ "same-line", 0 },
		{ "next-line-64B", CL_CACHELINE_SIZE },
		{ "guard-128B", 2 * CL_CACHELINE_SIZE },
		{ "no-writer", -1 },
	};
	enum { NL = sizeof(layouts) / sizeof(layouts[0]) };
	static const char *cases[] = { "T1 lock xchg", "T2 avg store" };
	struct bench b;
	double samples[2][NL][BENCH_MAX_RUNS];
	char *base;
	unsigned long long window;

	bench_only_shared_args("false_sharing", argc, argv);
	bench_init(&b, "false_sharing", argc, argv);
	if (bench_nr_allowed_cpus() < 2) {
		fprintf(stderr, "false_sharing: needs two allowed CPUs\n");
		return 77;
	}
	window = b.smoke ? 2000000ull : b.quick ? 20000000ull : 100000000ull; /* 2, 20 or 100 ms per sample */
	base = aligned_alloc(4096, 4096);
	if (!base)
		return 1;
	bench_pin(bench_allowed_cpu(0));
	measure(base, 0, 1, window / 4); /* warm-up */
	for (int r = 0; r < b.runs; r++) {
		bench_progress(&b, "run %d/%d", r + 1, b.runs);
		/* variants alternate inside each run so drift hits them alike */
		for (int c = 0; c < 2; c++)
			for (int l = 0; l < NL; l++)
				samples[c][l][r] = measure(base, layouts[l].distance, c == 0, window);
	}
	for (int c = 0; c < 2; c++) {
		double med[NL];

		for (int l = 0; l < NL; l++)
			med[l] = bench_report(&b, cases[c], layouts[l].name,
					      layouts[l].distance < 0 ? "pinned-0" : "pinned-0,1",
					      layouts[l].distance < 0 ? 1 : 2, samples[c][l], b.runs,
					      "ns/pass");
		bench_ratio(&b, cases[c], "same-line / guard-128B (slowdown)", med[0], med[2]);
		bench_ratio(&b, cases[c], "next-line-64B / guard-128B", med[1], med[2]);
		bench_ratio(&b, cases[c], "guard-128B / no-writer", med[2], med[3]);
	}
	free(base);
	return bench_finish(&b);
}
