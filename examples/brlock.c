/* SPDX-License-Identifier: MIT */
/*
 * examples/brlock.c - read-mostly configuration behind a per-CPU
 * reader-writer lock.
 *
 * Three reader threads look the configuration up all the time; one writer
 * replaces it now and then. A reader's lock and unlock each write only a
 * counter on the reader's own CPU (a restartable sequence, no atomic
 * instruction, no fence); the writer pays instead: it announces itself,
 * runs one membarrier() and waits for the readers already inside. A reader
 * may move to another CPU inside its section: it passes the token from
 * lock to unlock. Every reader checks that it never sees a half-written
 * configuration.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/brlock.c -o brlock $(pkg-config --cflags --libs cachelocal)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* rand_r, nanosleep under -std=c11 */
#endif
#include "example_args.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cachelocal/brlock.h>

struct config {
	unsigned long version;
	unsigned long timeout_ms;  /* always 10 x version */
	char name[32];             /* "config-<version>" */
};

static struct cl_brlock lock;
static struct config cfg = { 1, 10, "config-1" };
static int done;
/* Each reader's lookup count, on its own line. */
static struct {
	_Alignas(128) unsigned long n;
} lookups[3];

static void *reader(void *arg)
{
	unsigned long *mine = &lookups[(long)arg].n, bad = 0, last = 0;
	char want[32];

	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		int token = cl_brlock_read_lock(&lock);

		snprintf(want, sizeof(want), "config-%lu", cfg.version);
		if (cfg.timeout_ms != 10 * cfg.version || strcmp(cfg.name, want) != 0 ||
		    cfg.version < last)
			bad++;
		last = cfg.version;
		cl_brlock_read_unlock(&lock, token);
		__atomic_store_n(mine, *mine + 1, __ATOMIC_RELAXED);
	}
	printf("  reader: %lu lookups, last saw version %lu, %lu inconsistent\n", *mine, last,
	       bad);
	return (void *)bad;
}

int main(int argc, char **argv)
{
	pthread_t r[3];
	long bad = 0;
	void *ret;

	example_args(argc, argv, "usage: brlock [--help]\n  the per-CPU reader lock (brlock.h): readers and a writer\n", NULL, 0);

	if (cl_brlock_init(&lock) != 0) {
		perror("cl_brlock_init");
		return 1;
	}
	printf("brlock: readers %s\n", cl_brlock_mode(&lock) == CL_BRLOCK_MEMBARRIER
					       ? "use no fence (writers run membarrier)"
					       : "fence (no membarrier here)");
	for (int i = 0; i < 3; i++)
		pthread_create(&r[i], NULL, reader, (void *)(long)i);
	for (unsigned long v = 2; v <= 200; v++) {
		struct timespec pause = { 0, 100000 }; /* an update every 0.1 ms */

		nanosleep(&pause, NULL);
		cl_brlock_write_lock(&lock);
		cfg.version = v;
		cfg.timeout_ms = 10 * v;
		snprintf(cfg.name, sizeof(cfg.name), "config-%lu", v);
		cl_brlock_write_unlock(&lock);
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++) {
		pthread_join(r[i], &ret);
		bad += (long)ret;
	}
	printf("  writer: 199 updates, final version %lu\n", cfg.version);
	cl_brlock_destroy(&lock);
	return bad ? 1 : 0;
}
