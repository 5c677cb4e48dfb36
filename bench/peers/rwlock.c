/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/rwlock - cl_brlock beside the reader-writer locks a user would
 * pick instead: ck_brlock (Concurrency Kit's big-reader lock: one slot per
 * registered reader thread, an atomic swap per read lock on x86), ck_rwlock
 * (one shared reader count) and pthread_rwlock (glibc).
 *
 * Workloads, each thread pinned to its own allowed CPU, n operations per
 * thread (a warm-up pass, then the timed one):
 *   read pair, 1 reader    read lock, load the protected word, read unlock
 *   read pair, 2 readers   the same on two CPUs at once
 *   1% writers, 2 threads  every 100th operation of each thread is a write
 *                          lock, increment, write unlock; the rest reads
 * Unit: ns per operation per thread (the slowest thread). Every run measures
 * brlock and each peer back to back, the order rotated run by run; median
 * of --runs (>= 5). gain = theirs/ours (> 1: brlock ahead). Goal: brlock's
 * read pair >= 3x ck_brlock's.
 */
#include "peers.h"

#include <ck_brlock.h>
#include <ck_rwlock.h>

#include <cachelocal/brlock.h>

enum lk { R_BRLOCK, R_CK_BRLOCK, R_CK_RWLOCK, R_PTHREAD, NR_RW };

static const char *const rw_name[NR_RW] = { "cl_brlock", "ck_brlock", "ck_rwlock", "pthread_rwlock" };

static struct cl_brlock brl;
static struct ck_brlock ckb = CK_BRLOCK_INITIALIZER;
static ck_rwlock_t ckr = CK_RWLOCK_INITIALIZER;
static pthread_rwlock_t prw = PTHREAD_RWLOCK_INITIALIZER;
static long protected_word CL_ALIGNED(CL_FALSE_SHARING_SIZE);

struct rw_job {
	enum lk kind;
	long n;
	int write_every; /* 0: reads only */
};

CL_ALWAYS_INLINE long rw_read(enum lk k, struct ck_brlock_reader *rd)
{
	long x;

	switch (k) {
	case R_BRLOCK: {
		int t = cl_brlock_read_lock(&brl);

		x = CL_READ_ONCE(protected_word);
		cl_brlock_read_unlock(&brl, t);
		break;
	}
	case R_CK_BRLOCK:
		ck_brlock_read_lock(&ckb, rd);
		x = CL_READ_ONCE(protected_word);
		ck_brlock_read_unlock(rd);
		break;
	case R_CK_RWLOCK:
		ck_rwlock_read_lock(&ckr);
		x = CL_READ_ONCE(protected_word);
		ck_rwlock_read_unlock(&ckr);
		break;
	default:
		pthread_rwlock_rdlock(&prw);
		x = CL_READ_ONCE(protected_word);
		pthread_rwlock_unlock(&prw);
		break;
	}
	return x;
}

static void rw_write(enum lk k)
{
	switch (k) {
	case R_BRLOCK:
		cl_brlock_write_lock(&brl);
		protected_word++;
		cl_brlock_write_unlock(&brl);
		break;
	case R_CK_BRLOCK:
		ck_brlock_write_lock(&ckb);
		protected_word++;
		ck_brlock_write_unlock(&ckb);
		break;
	case R_CK_RWLOCK:
		ck_rwlock_write_lock(&ckr);
		protected_word++;
		ck_rwlock_write_unlock(&ckr);
		break;
	default:
		pthread_rwlock_wrlock(&prw);
		protected_word++;
		pthread_rwlock_unlock(&prw);
		break;
	}
}

/* The loops, instantiated per lock so the read path is inlined. */
CL_ALWAYS_INLINE void rw_loop(enum lk k, const struct rw_job *j)
{
	struct ck_brlock_reader rd;
	long sum = 0;

	if (k == R_CK_BRLOCK)
		ck_brlock_read_register(&ckb, &rd);
	for (long i = 0; i < j->n; i++) {
		if (j->write_every && i % j->write_every == j->write_every - 1)
			rw_write(k);
		else
			sum += rw_read(k, &rd);
	}
	BENCH_KEEP(sum);
	if (k == R_CK_BRLOCK)
		ck_brlock_read_unregister(&ckb, &rd);
}

static void rw_body(void *arg, int id)
{
	const struct rw_job *j = (const struct rw_job *)arg;

	(void)id;
	switch (j->kind) {
	case R_BRLOCK: rw_loop(R_BRLOCK, j); break;
	case R_CK_BRLOCK: rw_loop(R_CK_BRLOCK, j); break;
	case R_CK_RWLOCK: rw_loop(R_CK_RWLOCK, j); break;
	default: rw_loop(R_PTHREAD, j); break;
	}
}

int main(int argc, char **argv)
{
	static struct peer_side side[3][NR_RW];
	static const char *const wname[3] = { "read pair, 1 reader", "read pair, 2 readers",
					      "1% writers, 2 threads" };
	static const int wthreads[3] = { 1, 2, 2 };
	char peer[96];
	struct bench b;
	long n;

	bench_only_shared_args("peer_rwlock", argc, argv);
	bench_init(&b, "peer_rwlock", argc, argv);
	n = b.smoke ? 10000 : b.quick ? 1000000 : 5000000;
	if (cl_brlock_init(&brl) != 0) {
		printf("skipped: cl_brlock_init: %s\n", strerror(errno));
		return 77;
	}
	if (!b.json_only)
		printf("# %ld operations per thread per run; brlock mode %s; ck %s, glibc %s\n", n,
		       cl_brlock_mode(&brl) == CL_BRLOCK_MEMBARRIER ? "membarrier" : "fence",
		       PEER_CK_VERSION, gnu_get_libc_version());
	for (int r = 0; r < b.runs; r++)
		for (int w = 0; w < 3; w++)
			for (int i = 0; i < NR_RW; i++) {
				struct rw_job j = { (enum lk)((i + r) % NR_RW), n, w == 2 ? 100 : 0 };
				unsigned long long ns = peer_timed_run(wthreads[w], rw_body, &j);

				if (ns == 0)
					return 1;
				side[w][j.kind].v[r] = (double)ns / (double)n;
			}
	peer_header(&b);
	for (int k = R_CK_BRLOCK; k < NR_RW; k++) {
		if (k == R_PTHREAD)
			snprintf(peer, sizeof(peer), "pthread_rwlock (glibc %s)", gnu_get_libc_version());
		else
			snprintf(peer, sizeof(peer), "%s (ck %s)", rw_name[k], PEER_CK_VERSION);
		for (int w = 0; w < 3; w++)
			peer_emit(&b, "brlock", "cl_brlock", peer, wname[w], wthreads[w], &side[w][R_BRLOCK],
				  &side[w][k], b.runs, "ns/op", 0);
	}
	cl_brlock_destroy(&brl);
	return bench_finish(&b);
}
