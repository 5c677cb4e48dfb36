/* SPDX-License-Identifier: MIT */
/*
 * examples/objcache.c - task descriptors from a per-CPU object cache.
 *
 * Four threads create and retire "tasks" (a 96-byte descriptor) at random,
 * each keeping up to 16 alive; a retired task may be picked up and retired
 * by another thread. The cache hands descriptors out of this CPU's cache
 * with one restartable sequence (no atomic instruction) and moves batches
 * to and from its depot when a CPU's cache runs empty or full. At the end
 * the main thread drains every CPU's cache, prints the statistics and
 * destroys the cache, which succeeds only when every descriptor came back.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/objcache.c -o objcache $(pkg-config --cflags --libs cachelocal)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* rand_r, nanosleep under -std=c11 */
#endif
#include "example_args.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/objcache.h>

struct task {
	uint64_t id;
	int state;  /* 0 new (the cache gives zeroed objects the first time), 1 live */
	char name[84];
};

#define THREADS 4
#define ROUNDS 200000
#define KEEP 16

static struct cl_objcache *tasks;

static void *worker(void *arg)
{
	struct task *alive[KEEP] = { 0 };
	unsigned seed = (unsigned)(uintptr_t)arg;
	long errors = 0;

	for (long i = 0; i < ROUNDS; i++) {
		int k = rand_r(&seed) % KEEP;

		if (alive[k]) { /* retire */
			if (alive[k]->state != 1)
				errors++;
			alive[k]->state = 2;
			cl_objcache_free(tasks, alive[k]);
			alive[k] = NULL;
		} else { /* create */
			struct task *t = cl_objcache_alloc(tasks);

			if (!t) {
				perror("cl_objcache_alloc");
				exit(1);
			}
			t->id = (uint64_t)i;
			t->state = 1;
			snprintf(t->name, sizeof(t->name), "task-%lu", (unsigned long)i);
			alive[k] = t;
		}
	}
	for (int k = 0; k < KEEP; k++)
		if (alive[k])
			cl_objcache_free(tasks, alive[k]);
	return (void *)errors;
}

int main(int argc, char **argv)
{
	struct cl_objcache_attr attr = { .obj_size = sizeof(struct task), .per_cpu_capacity = 32 };
	struct cl_objcache_stats st;
	pthread_t t[THREADS];
	long errors = 0, moved = 0;
	void *ret;

	example_args(argc, argv, "usage: objcache [--help]\n  the per-CPU object cache (objcache.h)\n", NULL, 0);

	tasks = cl_objcache_create(&attr);
	if (!tasks) {
		perror("cl_objcache_create");
		return 1;
	}
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], &ret);
		errors += (long)ret;
	}
	/* Give every CPU's cached descriptors back to the depot. */
	for (unsigned cpu = 0; cpu < cl_nr_possible_cpus(); cpu++) {
		int n = cl_objcache_drain_cpu(tasks, (int)cpu);

		if (n > 0)
			moved += n;
	}
	cl_objcache_stats(tasks, &st);
	printf("objcache: %zu-byte objects, %u per CPU cache, ops %s\n", st.obj_size,
	       st.per_cpu_capacity, cl_rseq_ops_mode_name(cl_rseq_ops_mode()));
	printf("  %d threads x %d rounds: %zu descriptors carved, %zu refills, %zu spills\n",
	       THREADS, ROUNDS, st.nr_objects, st.nr_refills, st.nr_spills);
	printf("  drained %ld from the CPU caches; now %zu in the depot, %zu cached, %zu out\n",
	       moved, st.nr_depot, st.nr_cached, st.nr_out);
	if (errors || st.nr_out != 0) {
		fprintf(stderr, "objcache: %ld bad descriptors, %zu not returned\n", errors,
			st.nr_out);
		return 1;
	}
	if (cl_objcache_destroy(tasks) != 0) {
		perror("cl_objcache_destroy");
		return 1;
	}
	return 0;
}
