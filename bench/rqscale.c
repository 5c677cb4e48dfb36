/* SPDX-License-Identifier: MIT */
/*
 * bench/rqscale.c - how the reference runqueue scales with the number of
 * runnable tasks (sched/rq.h: EEVDF on an augmented tree, O(log n)).
 *
 * Step (through the public API, one rq, its lock held, one pinned thread):
 * the task that slept last step wakes (cl_rq_enqueue(CL_ENQUEUE_WAKEUP)),
 * the clock moves 1 us, the running task is put back (cl_rq_put_prev()),
 * the fair class picks (cl_rq_pick_next()) and the picked task goes to
 * sleep (cl_rq_dequeue(CL_DEQUEUE_SLEEP)). So every step inserts into and
 * removes from the timeline twice and picks once, with N tasks runnable.
 * Case "rq step", variants N = 16, 64, 256, 1,024, 4,096, 16,384, 100,000;
 * ns per step (400,000 steps; --quick 100,000; --smoke 2,000), median of
 * --runs runs, each after a warm-up of N steps;
 * the ratio of the step at the largest N to the step at 16 (the goal: at
 * most 3x at 100,000). The sleeper there is the task just picked: its lines
 * are hot, and the tree paths the step walks stay near the leftmost end.
 *
 * Random sleeper: the same step, except that the task put to sleep is a
 * random queued task (not the one just picked, which keeps running), so
 * each step dequeues a random task and wakes it on the next: case "random
 * sleeper step", N = 16 and 100,000. Beside it, run by run in the same
 * process and with the same random sequence, its memory floor (case
 * "random sleeper floor"): per step the same random choice of task, a walk
 * from the root of an implicit balanced tree over the tasks (node k's
 * children 2k+1 and 2k+2, each node a task-sized object) down to that task,
 * each level's index depending on the line loaded at the level above, and a
 * store into the task's line: the task's entity and a tree path's depth of
 * lines, which any tree-based runqueue must touch to dequeue it, with no
 * other work. Ratios: random step(100,000) / step(16), and random
 * step(100,000) / floor(100,000) (the goal: at most 1.5x).
 *
 * fib: fib(22) on the M:N runtime (sched/runtime.h, default workers: one
 * per allowed CPU): each call with n >= 2 spawns fib(n - 1) as a task,
 * computes fib(n - 2) itself and joins: 28,656 spawns (--smoke: fib(16),
 * 1,596); wall ns per spawn+join, on one runtime after a warm-up run; also
 * with one worker (no cross-CPU wakeups).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/sched/rq.h>
#include <cachelocal/sched/runtime.h>

#include "bench.h"

/* ---- the rq step ---- */

/* xorshift64*: one draw per step, the same sequence for both sides. */
static inline uint64_t rand_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dULL;
}

#define RAND_SEED 0x9e3779b97f4a7c15ULL

/*
 * ns per step with n tasks runnable. The sleeper: the task just picked
 * (hot), or with @rnd a random queued task other than the one picked
 * (random sleeper; @rnd is the random state).
 */
static double rq_step_ns(unsigned int n, unsigned long steps, uint64_t *rnd, const char **err)
{
	struct cl_sched *s = cl_sched_create(1, NULL);
	struct cl_rq *rq;
	struct cl_task *t, *sleeper;
	uint64_t now = 1, t0;
	double ns = 0;

	*err = NULL;
	if (!s) {
		*err = "cl_sched_create";
		return 0;
	}
	rq = cl_sched_rq(s, 0);
	t = aligned_alloc(CL_CACHELINE_SIZE, ((size_t)n + 1) * sizeof(*t));
	if (!t) {
		*err = "out of memory";
		cl_sched_destroy(s);
		return 0;
	}
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, now);
	for (unsigned int i = 0; i <= n; i++) {
		cl_task_init(&t[i], 0);
		cl_rq_enqueue(rq, &t[i], 0);
	}
	sleeper = cl_rq_pick_next(rq);
	if (rnd) /* the picked task keeps running */
		sleeper = &t[sleeper == &t[n] ? 0 : n];
	cl_rq_dequeue(rq, sleeper, CL_DEQUEUE_SLEEP); /* n runnable from here on */
	for (int pass = 0; pass < 2; pass++) {
		unsigned long k = pass ? steps : n;

		t0 = bench_now_ns();
		for (unsigned long i = 0; i < k; i++) {
			struct cl_task *p;

			cl_rq_enqueue(rq, sleeper, CL_ENQUEUE_WAKEUP);
			now += 1000;
			cl_rq_update_clock(rq, now);
			cl_rq_put_prev(rq);
			p = cl_rq_pick_next(rq);
			sleeper = p;
			while (rnd && sleeper == p) /* a queued task other than the one running */
				sleeper = &t[rand_next(rnd) % (n + 1)];
			cl_rq_dequeue(rq, sleeper, CL_DEQUEUE_SLEEP);
		}
		ns = (double)(bench_now_ns() - t0) / (double)k;
	}
	if (rq->nr_running != n || cl_rq_validate(rq, err) != 0)
		*err = *err ? *err : "nr_running";
	cl_rq_put_prev(rq);
	for (unsigned int i = 0; i <= n; i++)
		if (t[i].se.on_rq)
			cl_rq_dequeue(rq, &t[i], CL_DEQUEUE_SLEEP);
	cl_rq_unlock(rq);
	cl_sched_destroy(s);
	free(t);
	return ns;
}

/* ---- the random sleeper's memory floor ---- */


/* One node of the floor's tree: a task's size, so as many lines apart. */
struct floor_node {
	uint64_t zero;  /* read on the walk: 0, but the next index depends on it */
	uint64_t stores; /* the dequeued task's store */
	char pad[sizeof(struct cl_task) - 2 * sizeof(uint64_t)];
};

static double floor_random_ns(unsigned int n, unsigned long steps, const char **err)
{
	struct floor_node *f;
	uint64_t t0, x = RAND_SEED, sum = 0;
	double ns = 0;

	*err = NULL;
	f = aligned_alloc(CL_CACHELINE_SIZE, ((size_t)n + 1) * sizeof(*f));
	if (!f) {
		*err = "out of memory";
		return 0;
	}
	memset(f, 0, ((size_t)n + 1) * sizeof(*f));
	for (int pass = 0; pass < 2; pass++) {
		unsigned long k = pass ? steps : n;

		t0 = bench_now_ns();
		for (unsigned long i = 0; i < k; i++) {
			uint64_t m = rand_next(&x) % (n + 1) + 1, node = 0;
			int depth = 63 - __builtin_clzll(m); /* levels below the root */

			for (int d = depth - 1; d >= 0; d--)
				node = 2 * node + 1 + ((m >> d) & 1) + *(volatile uint64_t *)&f[node].zero;
			f[node].stores++;
		}
		ns = (double)(bench_now_ns() - t0) / (double)k;
	}
	for (unsigned int i = 0; i <= n; i++)
		sum += f[i].stores;
	if (sum != n + steps)
		*err = "floor: a store went astray";
	free(f);
	return ns;
}

/* ---- fib on the runtime ---- */

static struct cl_runtime *fib_rt;

static void *fib_fn(void *arg)
{
	long n = (long)(intptr_t)arg, x, y;
	struct cl_rt_task *t;
	void *r;

	if (n < 2)
		return arg;
	t = cl_spawn(fib_rt, NULL, fib_fn, (void *)(intptr_t)(n - 1));
	if (!t)
		return (void *)(intptr_t)-1;
	y = (long)(intptr_t)fib_fn((void *)(intptr_t)(n - 2));
	if (cl_join(t, &r))
		return (void *)(intptr_t)-1;
	x = (long)(intptr_t)r;
	return x < 0 || y < 0 ? (void *)(intptr_t)-1 : (void *)(intptr_t)(x + y);
}

static long fib_ref(long n)
{
	return n < 2 ? n : fib_ref(n - 1) + fib_ref(n - 2);
}

/*
 * --child=KIND,N,STEPS: one run of KIND ("step": the sleeper is the task
 * just picked; "random": a random sleeper; "floor": its memory floor) with
 * N tasks and STEPS steps after the warm-up, nothing printed but errors.
 * For counting under cachegrind what one step misses: the difference of two
 * runs that differ only in STEPS, divided by it (docs/benchmarks.md, rqfloor).
 */
static int child_main(const char *spec)
{
	char kind[16];
	unsigned int n;
	unsigned long steps;
	uint64_t x = RAND_SEED;
	const char *err = NULL;

	if (sscanf(spec, "%15[a-z],%u,%lu", kind, &n, &steps) != 3 || n < 2 ||
	    (strcmp(kind, "step") && strcmp(kind, "random") && strcmp(kind, "floor"))) {
		fprintf(stderr, "rqscale: bad --child=%s (KIND,N,STEPS; KIND step, random or floor)\n",
			spec);
		return 2;
	}
	if (!strcmp(kind, "floor"))
		floor_random_ns(n, steps, &err);
	else
		rq_step_ns(n, steps, strcmp(kind, "random") ? NULL : &x, &err);
	if (err)
		fprintf(stderr, "rqscale: --child=%s: %s\n", spec, err);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const unsigned int sizes[] = { 16, 64, 256, 1024, 4096, 16384, 100000 };
	struct bench b;
	double samples[BENCH_MAX_RUNS], first = 0, last = 0;
	unsigned int last_n = 0;
	const char *placement;
	int rc = 0;

	if (argc == 2 && !strncmp(argv[1], "--child=", 8))
		return child_main(argv[1] + 8);
	bench_init(&b, "rqscale", argc, argv);
	bench_only_shared_args("rqscale", argc, argv);
	placement = bench_pin(bench_allowed_cpu(0)) == 0 ? "pinned" : "unpinned";
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned int n = sizes[i];
		unsigned long steps = b.smoke ? 2000 : b.quick ? 100000 : 400000;
		char variant[32];
		const char *err = NULL;

		bench_progress(&b, "rq step, %u tasks", n);
		for (int r = 0; r < b.runs && !err; r++)
			samples[r] = rq_step_ns(n, steps, NULL, &err);
		if (err) {
			fprintf(stderr, "rqscale: %u tasks: %s\n", n, err);
			rc = 1;
			break;
		}
		snprintf(variant, sizeof(variant), "N=%u", n);
		last = bench_report(&b, "rq step", variant, placement, 1, samples, b.runs, "ns/step");
		last_n = n;
		if (i == 0)
			first = last;
	}
	if (!rc && last_n) {
		char what[64];

		snprintf(what, sizeof(what), "N=%u / N=16", last_n);
		bench_ratio(&b, "rq step", what, last, first);
	}

	/* the random sleeper beside its memory floor, alternating which goes first */
	if (!rc) {
		static const unsigned int rsizes[] = { 16, 100000 };
		double step[2] = { 0, 0 }, flo[2] = { 0, 0 };
		double fsamples[BENCH_MAX_RUNS];

		for (size_t i = 0; i < 2 && !rc; i++) {
			unsigned int n = rsizes[i];
			unsigned long steps = b.smoke ? 2000 : b.quick ? 100000 : 400000;
			char variant[32];
			const char *err = NULL;

			bench_progress(&b, "random sleeper step and floor, %u tasks", n);
			for (int r = 0; r < b.runs && !err; r++) {
				for (int k = 0; k < 2 && !err; k++) {
					uint64_t x = RAND_SEED;

					if ((k == 0) == (r % 2 == 0))
						samples[r] = rq_step_ns(n, steps, &x, &err);
					else
						fsamples[r] = floor_random_ns(n, steps, &err);
				}
			}
			if (err) {
				fprintf(stderr, "rqscale: random sleeper, %u tasks: %s\n", n, err);
				rc = 1;
				break;
			}
			snprintf(variant, sizeof(variant), "N=%u", n);
			step[i] = bench_report(&b, "random sleeper step", variant, placement, 1, samples,
					       b.runs, "ns/step");
			flo[i] = bench_report(&b, "random sleeper floor", variant, placement, 1, fsamples,
					      b.runs, "ns/step");
		}
		if (!rc) {
			bench_ratio(&b, "random sleeper step", "N=100000 / N=16", step[1], step[0]);
			bench_ratio(&b, "random sleeper", "step / floor, N=100000", step[1], flo[1]);
		}
	}

	/* fib on the runtime: default workers, and one worker (no cross-CPU wakeups) */
	for (int one = 0; one < 2 && !rc; one++) {
		long n = b.smoke ? 16 : 22, spawns = fib_ref(n + 1) - 1;
		struct cl_runtime_attr ra;
		struct cl_runtime *rt;

		memset(&ra, 0, sizeof(ra));
		ra.nr_workers = one ? 1 : 0;
		bench_progress(&b, "fib(%ld) spawn+join, %s", n, one ? "1 worker" : "default workers");
		rt = cl_runtime_create(&ra);
		if (!rt) {
			fprintf(stderr, "rqscale: cl_runtime_create: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		fib_rt = rt;
		for (int r = -1; r < b.runs && !rc; r++) { /* run -1: warm-up (task caches, stacks) */
			struct cl_rt_task *t;
			uint64_t t0;
			void *res = NULL;

			t0 = bench_now_ns();
			t = cl_spawn(rt, NULL, fib_fn, (void *)(intptr_t)n);
			if (!t || cl_join(t, &res) || (long)(intptr_t)res != fib_ref(n)) {
				fprintf(stderr, "rqscale: fib(%ld) gave %ld\n", n, (long)(intptr_t)res);
				rc = 1;
			}
			if (r >= 0)
				samples[r] = (double)(bench_now_ns() - t0) / (double)spawns;
		}
		if (cl_runtime_destroy(rt))
			rc = 1;
		if (!rc) {
			char name[64];

			snprintf(name, sizeof(name), "fib spawn+join");
			bench_report(&b, name, one ? "runtime 1 worker" : "runtime", "pinned",
				     one ? 1 : bench_nr_allowed_cpus(), samples, b.runs, "ns/spawn");
		}
	}
	urcu_memb_barrier();
	bench_finish(&b);
	return rc;
}
