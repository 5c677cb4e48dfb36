/* SPDX-License-Identifier: MIT */
/*
 * bench/vcpu_speed - how fast each allowed CPU runs the same plain loop,
 * alone and with every allowed CPU running it at once.
 *
 * On a virtual machine the host decides where the vCPUs run: two vCPUs may
 * share a physical core (SMT siblings) or a busy one for a while, and one of
 * them then runs a throughput-bound loop at a fraction of the other's speed
 * while both are busy. A two-thread benchmark that reports its slowest
 * thread (the peer comparisons do) is then bounded by that vCPU, and a
 * fast, throughput-bound operation loses more to it than one bound by the
 * latency of a locked instruction. This benchmark touches no cachelocal
 * structure: it measures the machine, so that the report can say how even
 * the CPUs were while the two-thread rows were taken.
 *
 * The loop: four independent sums over an 8 KiB array (L1-resident), the
 * same number of loads on every CPU. Rows: ns per load for each CPU alone
 * (the others idle) and for each CPU with all allowed CPUs running it at
 * once (they start at a barrier). The ratio row is the slowest CPU at once
 * over the fastest CPU alone (1.0: even CPUs; 2.0: one CPU at half speed).
 */
#include "bench.h"

#define VS_WORDS 1024 /* 8 KiB */
#define VS_MAX_CPUS 64

struct vs_thread {
	pthread_t th;
	int cpu;
	long reps;
	pthread_barrier_t *start;
	double ns_per_load;
};

static void *vs_run(void *p)
{
	struct vs_thread *t = (struct vs_thread *)p;
	static __thread long a[VS_WORDS] __attribute__((aligned(64)));
	long s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	unsigned long long t0;

	if (bench_pin(t->cpu) != 0)
		return (void *)1;
	for (int i = 0; i < VS_WORDS; i++)
		a[i] = i;
	if (t->start)
		pthread_barrier_wait(t->start);
	t0 = bench_now_ns();
	for (long r = 0; r < t->reps; r++) {
		for (int i = 0; i < VS_WORDS; i += 4) {
			s0 += a[i];
			s1 += a[i + 1];
			s2 += a[i + 2];
			s3 += a[i + 3];
		}
		__asm__ __volatile__("" : "+r"(s0), "+r"(s1), "+r"(s2), "+r"(s3));
	}
	t->ns_per_load = (double)(bench_now_ns() - t0) / ((double)t->reps * VS_WORDS);
	return (void *)(intptr_t)((s0 + s1 + s2 + s3) == -1); /* never: the sums are >= 0 */
}

/* Run the loop on @n threads (CPUs @cpus) at once; 0 or -1. */
static int vs_pass(struct vs_thread *t, int n, long reps)
{
	pthread_barrier_t start;
	int err = 0;

	pthread_barrier_init(&start, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		t[i].reps = reps;
		t[i].start = &start;
		if (pthread_create(&t[i].th, NULL, vs_run, &t[i]) != 0) {
			fprintf(stderr, "vcpu_speed: pthread_create: %s\n", strerror(errno));
			exit(1); /* threads already started wait at the barrier for ever */
		}
	}
	for (int i = 0; i < n; i++) {
		void *rc;

		pthread_join(t[i].th, &rc);
		err |= rc != NULL;
	}
	pthread_barrier_destroy(&start);
	return err ? -1 : 0;
}

int main(int argc, char **argv)
{
	static double alone[VS_MAX_CPUS][BENCH_MAX_RUNS], together[VS_MAX_CPUS][BENCH_MAX_RUNS];
	static struct vs_thread t[VS_MAX_CPUS];
	double fastest_alone = 0, slowest_together = 0;
	struct bench b;
	int n;
	long reps;

	bench_only_shared_args("vcpu_speed", argc, argv);
	bench_init(&b, "vcpu_speed", argc, argv);
	n = bench_nr_allowed_cpus();
	if (n > VS_MAX_CPUS)
		n = VS_MAX_CPUS;
	reps = b.smoke ? 200 : b.quick ? 4000 : 20000; /* quick: ~1-3 ms per pass */
	for (int r = 0; r < b.runs; r++) {
		for (int i = 0; i < n; i++) {
			t[i].cpu = bench_allowed_cpu(i);
			if (vs_pass(&t[i], 1, reps) != 0) {
				fprintf(stderr, "vcpu_speed: cannot pin to CPU %d\n", t[i].cpu);
				return 1;
			}
			alone[i][r] = t[i].ns_per_load;
		}
		if (vs_pass(t, n, reps) != 0)
			return 1;
		for (int i = 0; i < n; i++)
			together[i][r] = t[i].ns_per_load;
	}
	for (int i = 0; i < n; i++) {
		char variant[48];
		double a, c;

		snprintf(variant, sizeof(variant), "CPU %d alone", t[i].cpu);
		a = bench_report(&b, "load loop", variant, "pinned", 1, alone[i], b.runs, "ns/load");
		snprintf(variant, sizeof(variant), "CPU %d, all at once", t[i].cpu);
		c = bench_report(&b, "load loop", variant, "pinned", n, together[i], b.runs, "ns/load");
		if (i == 0 || a < fastest_alone)
			fastest_alone = a;
		if (c > slowest_together)
			slowest_together = c;
	}
	bench_ratio(&b, "load loop", "slowest CPU at once / fastest CPU alone", slowest_together,
		    fastest_alone);
	return bench_finish(&b);
}
