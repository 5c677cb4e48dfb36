/* SPDX-License-Identifier: MIT */
/*
 * examples/parked_tasks.c - many live tasks at once: N tasks (default
 * 10,000) each park on one wait queue; the program prints the stack guard
 * mode in force, the resident memory and the mappings they added (per
 * task), then releases and joins them all.
 *
 *	cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude $(pkg-config --cflags liburcu-memb) \
 *	   examples/parked_tasks.c -o parked_tasks -pthread -lurcu-memb -lurcu-common
 *	./parked_tasks [--mprotect|--checked|--markers] [N]
 *	./parked_tasks 100000
 *	./parked_tasks 1000000
 *
 * Each task costs its descriptor and the stack pages it touched; the rest
 * of its stack and its guard region are address space only. The guard
 * mode (docs/runtime.md, "Stack guards") is the default's unless an
 * option names one: with guard markers (Linux >= 6.13) or on an older
 * kernel (mprotect guards within a mapping budget, then checked ones),
 * 1,000,000 tasks need no system setting; --mprotect guards every stack
 * by mprotect (two mappings per task: spawns fail with ENOMEM near
 * vm.max_map_count / 2 tasks). Exits 0 when every task was joined.
 */
#include "example_args.h"
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/sched/runtime.h>

struct parked {
	struct cl_waitq wq;
	int released;
	long waiting;
};

static void *park(void *p)
{
	struct parked *pk = (struct parked *)p;

	cl_waitq_lock(&pk->wq);
	pk->waiting++;
	while (!pk->released) {
		cl_waitq_wait(&pk->wq);
		cl_waitq_lock(&pk->wq);
	}
	cl_waitq_unlock(&pk->wq);
	return NULL;
}

static long waiting(struct parked *pk)
{
	long n;

	cl_waitq_lock(&pk->wq);
	n = pk->waiting;
	cl_waitq_unlock(&pk->wq);
	return n;
}

/* Resident set in KiB, and the number of mappings (/proc/self). */
static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long mappings(void)
{
	long n = 0;
	int c;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: parked_tasks [--mprotect|--checked|--markers] [N]\n"
		"  N tasks parked at once (default 10000), stack guards as the option says\n"
		"  (default: markers where the kernel has them, else mprotect+checked)\n";
	static const char *const opts[] = { "--mprotect", "--checked", "--markers", NULL };
	int arg = example_args(argc, argv, usage, opts, 1);
	long n = arg ? atol(argv[arg]) : 10000, rss0, map0, rss1, map1;
	struct cl_runtime_attr a;
	struct cl_rt_task **t;
	struct cl_runtime *rt;
	struct parked pk;

	if (n <= 0) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	memset(&a, 0, sizeof(a));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mprotect"))
			a.guard_mode = CL_RUNTIME_GUARD_MPROTECT;
		else if (!strcmp(argv[i], "--checked"))
			a.guard_mode = CL_RUNTIME_GUARD_CHECKED;
		else if (!strcmp(argv[i], "--markers"))
			a.guard_mode = CL_RUNTIME_GUARD_MARKERS;
	}
	t = (struct cl_rt_task **)calloc((size_t)n, sizeof(*t));
	rt = cl_runtime_create(&a);
	if (!t || !rt) {
		perror("parked_tasks");
		return 1;
	}
	cl_waitq_init(&pk.wq);
	pk.released = 0;
	pk.waiting = 0;
	rss0 = rss_kib();
	map0 = mappings();
	for (long i = 0; i < n; i++) {
		t[i] = cl_spawn(rt, NULL, park, &pk);
		if (!t[i]) {
			fprintf(stderr, "parked_tasks: spawn %ld of %ld: ", i, n);
			perror(NULL);
			return 1;
		}
	}
	while (waiting(&pk) < n)
		sched_yield();
	rss1 = rss_kib();
	map1 = mappings();
	printf("%ld parked tasks (%s context, %zu KiB stacks, %zu KiB guards, guard mode %s)\n", n,
	       cl_runtime_context_kind(), rt->stack_size / 1024, rt->guard_size / 1024,
	       cl_runtime_guard_mode(rt));
	printf("  resident memory: +%ld KiB, %.0f bytes per parked task\n", rss1 - rss0,
	       (double)(rss1 - rss0) * 1024.0 / (double)n);
	printf("  mappings: %ld -> %ld (%.3f per task)\n", map0, map1,
	       (double)(map1 - map0) / (double)n);
	cl_waitq_lock(&pk.wq);
	pk.released = 1;
	cl_waitq_unlock(&pk.wq);
	cl_waitq_wake_all(&pk.wq);
	for (long i = 0; i < n; i++)
		if (cl_join(t[i], NULL)) {
			perror("cl_join");
			return 1;
		}
	free(t);
	if (cl_runtime_destroy(rt)) {
		perror("cl_runtime_destroy");
		return 1;
	}
	return 0;
}
