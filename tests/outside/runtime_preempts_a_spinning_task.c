/* SPDX-License-Identifier: MIT */
/*
 * runtime_preempts_a_spinning_task.c - built with the README's line and
 * nothing else (`cc -std=c11 prog.c $(pkg-config --cflags --libs
 * cachelocal-sched)`), the runtime preempts a task that spins in its own
 * code: on one worker, a second task runs while the first spins, and
 * cl_runtime_preempt_mode() says "signal". Exit 0 if so, 1 if not.
 */
#include <stdio.h>
#include <string.h>

#include <cachelocal/sched/runtime.h>

#define SPIN_MAX 3000000000UL

static volatile int other_ran;

static void *spinner(void *p)
{
	unsigned long i = 0;

	while (!other_ran && i < SPIN_MAX)
		i++;
	*(unsigned long *)p = i;
	return NULL;
}

static void *other(void *p)
{
	(void)p;
	other_ran = 1;
	return NULL;
}

int main(void)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;
	struct cl_rt_task *t1, *t2;
	unsigned long spun = 0;
	const char *mode;

	memset(&a, 0, sizeof(a));
	a.nr_workers = 1;
	rt = cl_runtime_create(&a);
	if (!rt) {
		perror("cl_runtime_create");
		return 1;
	}
	mode = cl_runtime_preempt_mode(rt);
	t1 = cl_spawn(rt, NULL, spinner, &spun);
	t2 = cl_spawn(rt, NULL, other, NULL);
	if (!t1 || !t2 || cl_join(t1, NULL) || cl_join(t2, NULL)) {
		perror("cl_spawn/cl_join");
		return 1;
	}
	cl_runtime_destroy(rt);
	printf("preempt mode %s; the second task ran %s %lu iterations of the first\n", mode,
	       other_ran && spun < SPIN_MAX ? "after" : "never, in", spun);
	return strcmp(mode, "signal") == 0 && spun < SPIN_MAX ? 0 : 1;
}
