/* SPDX-License-Identifier: MIT */
/*
 * bench/sched_layout.c - T1 and T2 on the real structs of sched/: the reader
 * on one CPU, the writer on another, one binary per layout.
 *
 *  rq-lock (E1, T1): the reader loops over the pick path's reads of a real
 *      struct cl_rq (nr_running, ttwu_pending, cpu_capacity, curr, idle,
 *      online: the cl_rq_read_pick group); the writer, on the other CPU,
 *      does a remote wakeup's lock work on the same rq: cl_rq_lock(),
 *      cl_rq_update_clock(), cl_rq_unlock().
 *  se-avg (E2, T2): the reader loops over a real struct cl_sched_entity's
 *      cfs_rq, my_q, parent, vruntime, depth, on_rq; the writer stores a
 *      load-tracking update into the same entity's avg (last_update_time,
 *      load_sum, load_avg, period_contrib), as update_load_avg() does.
 *  Each case also runs with no writer (the reader alone): the floor.
 *
 * The layout comes from the headers at compile time; the Makefile builds
 * this file three times: sched_layout (the library's layouts),
 * sched_layout_rq_scattered (-DCL_RQ_LAYOUT_SCATTERED: lock beside the pick
 * fields) and sched_layout_se_inline (-DCL_SE_AVG_INLINE: avg on the line
 * of cfs_rq/my_q). The variant column names the layout; scripts/bench_report.py
 * runs the binaries interleaved and compares them. The result is the
 * reader's ns per pass (lower is better). Needs two allowed CPUs (exit 77).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <cachelocal/sched/rq.h>

#include "bench.h"

#if defined(CL_RQ_LAYOUT_SCATTERED)
#define SL_VARIANT "CL_RQ_LAYOUT_SCATTERED"
#elif defined(CL_SE_AVG_INLINE)
#define SL_VARIANT "CL_SE_AVG_INLINE"
#else
#define SL_VARIANT "default"
#endif

struct sl_shared {
	struct cl_rq *rq;
	struct cl_sched_entity *se;
	int se_case;
	volatile int stop;
	volatile int ready;
};

static void *writer_main(void *arg)
{
	struct sl_shared *s = arg;
	uint64_t now = 1;

	bench_pin(bench_allowed_cpu(1));
	s->ready = 1;
	while (!s->stop) {
		now += 1000;
		if (s->se_case) {
			struct cl_sched_avg *a = &s->se->avg;

			__atomic_store_n(&a->last_update_time, now, __ATOMIC_RELAXED);
			__atomic_store_n(&a->load_sum, now >> 3, __ATOMIC_RELAXED);
			__atomic_store_n(&a->load_avg, (unsigned long)(now >> 10), __ATOMIC_RELAXED);
			__atomic_store_n(&a->period_contrib, (uint32_t)now & 1023u, __ATOMIC_RELAXED);
		} else {
			cl_rq_lock(s->rq);
			cl_rq_update_clock(s->rq, now);
			cl_rq_unlock(s->rq);
		}
	}
	return NULL;
}

#define LD(x) ((unsigned long)__atomic_load_n(&(x), __ATOMIC_RELAXED))

static double read_rq(const struct cl_rq *rq, unsigned long long ns)
{
	unsigned long long t0 = bench_now_ns(), t1, passes = 0;
	unsigned long sum = 0;

	do {
		for (int i = 0; i < 256; i++)
			sum += LD(rq->nr_running) + LD(rq->ttwu_pending) + LD(rq->cpu_capacity) +
			       (unsigned long)LD(rq->curr) + (unsigned long)LD(rq->idle) + LD(rq->online);
		passes += 256;
		t1 = bench_now_ns();
	} while (t1 - t0 < ns);
	BENCH_KEEP(sum);
	return (double)(t1 - t0) / (double)passes;
}

static double read_se(const struct cl_sched_entity *se, unsigned long long ns)
{
	unsigned long long t0 = bench_now_ns(), t1, passes = 0;
	unsigned long sum = 0;

	do {
		for (int i = 0; i < 256; i++)
			sum += (unsigned long)LD(se->cfs_rq) + (unsigned long)LD(se->my_q) +
			       (unsigned long)LD(se->parent) + LD(se->vruntime) + LD(se->depth) +
			       LD(se->on_rq);
		passes += 256;
		t1 = bench_now_ns();
	} while (t1 - t0 < ns);
	BENCH_KEEP(sum);
	return (double)(t1 - t0) / (double)passes;
}

static double measure(struct sl_shared *s, int writer, unsigned long long ns)
{
	pthread_t th;
	double r;

	s->stop = 0;
	s->ready = 0;
	if (writer) {
		if (pthread_create(&th, NULL, writer_main, s) != 0) {
			perror("pthread_create");
			exit(1);
		}
		while (!s->ready)
			;
	}
	r = s->se_case ? read_se(s->se, ns) : read_rq(s->rq, ns);
	if (writer) {
		s->stop = 1;
		pthread_join(th, NULL);
	}
	return r;
}

int main(int argc, char **argv)
{
	static const char *const cases[2] = { "T1 rq pick reads vs remote lock", "T2 se reads vs avg stores" };
	struct bench b;
	struct cl_sched *sched;
	struct cl_task *p;
	struct sl_shared s;
	double v[2][2][BENCH_MAX_RUNS];
	unsigned long long window;
	char var[64];

	bench_only_shared_args("sched_layout", argc, argv);
	bench_init(&b, "sched_layout", argc, argv);
	if (bench_nr_allowed_cpus() < 2) {
		fprintf(stderr, "sched_layout: needs two allowed CPUs\n");
		return 77;
	}
	window = b.smoke ? 2000000ull : b.quick ? 20000000ull : 100000000ull;
	sched = cl_sched_create(2, NULL);
	p = (struct cl_task *)aligned_alloc(CL_CACHELINE_SIZE, sizeof(*p));
	if (!sched || !p) {
		perror("setup");
		return 1;
	}
	cl_task_init(p, 0);
	memset(&s, 0, sizeof(s));
	s.rq = cl_sched_rq(sched, 0);
	s.se = &p->se;
	bench_pin(bench_allowed_cpu(0));
	for (int r = 0; r < b.runs; r++)
		for (int c = 0; c < 2; c++)
			for (int w = 1; w >= 0; w--) { /* interleaved: writer, floor */
				s.se_case = c;
				v[c][w][r] = measure(&s, w, window);
			}
	for (int c = 0; c < 2; c++) {
		snprintf(var, sizeof(var), "%s", SL_VARIANT);
		bench_report(&b, cases[c], var, "pinned-0,1", 2, v[c][1], b.runs, "ns/pass");
		snprintf(var, sizeof(var), "%s no-writer", SL_VARIANT);
		bench_report(&b, cases[c], var, "pinned-0", 1, v[c][0], b.runs, "ns/pass");
	}
	free(p);
	if (cl_sched_destroy(sched) != 0)
		perror("cl_sched_destroy");
	return bench_finish(&b);
}
