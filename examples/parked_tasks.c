/* SPDX-License-Identifier: MIT */
/*
 * examples/parked_tasks.c - many live tasks at once: N tasks (default
 * 10,000) each park on one wait queue; the program prints the stack guard
 * mode in force, the resident memory and the mappings they added (per
 * task), then releases and joins them all.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/parked_tasks.c -o parked_tasks $(pkg-config --cflags --libs cachelocal-sched)
 *	./parked_tasks [--mprotect|--checked|--markers] [--workers=W] [N]
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
 * vm.max_map_count / 2 tasks). --workers=W starts W workers instead of one
 * per CPU (what a task costs does not depend on it). Exits 0 when every
 * task was joined.
 *
 * It prints how long each phase took (spawning, until the last task has
 * parked, waking and joining them all) and, on stderr, the tasks spawned
 * and joined so far every tenth of a run of 100,000 or more, so a long run
 * (a million tasks in an emulated machine) shows that it moves.
 */
#include "example_args.h"
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/sched/runtime.h>

struct parked {
	struct cl_waitq wq;
	int released;
	long waiting, n;
	sem_t all_parked; /* posted by the n-th task to park */
};

static void *park(void *p)
{
	struct parked *pk = (struct parked *)p;

	cl_waitq_lock(&pk->wq);
	if (++pk->waiting == pk->n)
		sem_post(&pk->all_parked); /* never blocks: fine in a task */
	while (!pk->released) {
		cl_waitq_wait(&pk->wq);
		cl_waitq_lock(&pk->wq);
	}
	cl_waitq_unlock(&pk->wq);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every tenth of a run of 100,000 tasks or more, on stderr. */
static void progress(const char *what, long i, long n, double t0)
{
	if (n >= 100000 && i % (n / 10) == 0)
		fprintf(stderr, "  %s %ld of %ld (%.1f s)\n", what, i, n, now_s() - t0);
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
		"usage: parked_tasks [--mprotect|--checked|--markers] [--workers=W] [N]\n"
		"  N tasks parked at once (default 10000), stack guards as the option says\n"
		"  (default: markers where the kernel has them, else mprotect+checked),\n"
		"  W workers (default: one per CPU)\n";
	static const char *const opts[] = { "--mprotect", "--checked", "--markers", "--workers=",
					      NULL };
	int arg = example_args(argc, argv, usage, opts, 1);
	long n = arg ? atol(argv[arg]) : 10000, rss0, map0, rss1, map1;
	double t0, t_spawned, t_parked, t_wake, t_joined;
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
		else if (!strncmp(argv[i], "--workers=", 10)) {
			char *end;
			long w = strtol(argv[i] + 10, &end, 10);

			if (*end || w <= 0 || w > 4096) {
				fprintf(stderr, "parked_tasks: bad %s\n%s", argv[i], usage);
				return 2;
			}
			a.nr_workers = (unsigned)w;
		}
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
	pk.n = n;
	if (sem_init(&pk.all_parked, 0, 0)) {
		perror("sem_init");
		return 1;
	}
	rss0 = rss_kib();
	map0 = mappings();
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		t[i] = cl_spawn(rt, NULL, park, &pk);
		if (!t[i]) {
			fprintf(stderr, "parked_tasks: spawn %ld of %ld: ", i, n);
			perror(NULL);
			return 1;
		}
		progress("spawned", i + 1, n, t0);
	}
	t_spawned = now_s();
	while (sem_wait(&pk.all_parked))
		; /* EINTR */
	t_parked = now_s();
	rss1 = rss_kib();
	map1 = mappings();
	printf("%ld parked tasks (%s context, %zu KiB stacks, %zu KiB guards, guard mode %s, "
	       "%u workers)\n",
	       n, cl_runtime_context_kind(), rt->stack_size / 1024, rt->guard_size / 1024,
	       cl_runtime_guard_mode(rt), rt->nr_workers);
	printf("  resident memory: +%ld KiB, %.0f bytes per parked task\n", rss1 - rss0,
	       (double)(rss1 - rss0) * 1024.0 / (double)n);
	printf("  mappings: %ld -> %ld (%.3f per task)\n", map0, map1,
	       (double)(map1 - map0) / (double)n);
	cl_waitq_lock(&pk.wq);
	pk.released = 1;
	cl_waitq_unlock(&pk.wq);
	t_wake = now_s(); /* reading /proc above is not the tasks' time */
	cl_waitq_wake_all(&pk.wq);
	for (long i = 0; i < n; i++) {
		if (cl_join(t[i], NULL)) {
			perror("cl_join");
			return 1;
		}
		progress("joined", i + 1, n, t_wake);
	}
	t_joined = now_s();
	printf("  time: spawn %.3f s, until all parked %.3f s, wake and join %.3f s\n",
	       t_spawned - t0, t_parked - t_spawned, t_joined - t_wake);
	free(t);
	if (cl_runtime_destroy(rt)) {
		perror("cl_runtime_destroy");
		return 1;
	}
	return 0;
}
