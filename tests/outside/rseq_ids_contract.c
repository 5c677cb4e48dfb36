/* SPDX-License-Identifier: MIT */
/*
 * rseq_ids_contract - a program outside the project (built against the installed
 * headers by `make install-check`, run as is and with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0): what rseq.h reports on this machine
 * and whether its claims hold.
 *
 *  - who owns rseq (glibc iff its __rseq_size != 0), the usable feature size
 *    (size rule) and the id mode;
 *  - cl_cpu_id() == sched_getcpu() after pinning to each allowed CPU;
 *  - cl_mm_cid() < number of possible CPUs, from 4 x nproc unpinned threads;
 *  - two threads pinned to different CPUs, spinning together, never read the
 *    same cl_mm_cid();
 *  - threads started later get a live area when the main thread has one;
 *  - a fork child reads valid ids.
 * Also proves that <sys/rseq.h> and <cachelocal/rseq.h> coexist.
 *
 * Exit status: 0 if every claim holds, 1 otherwise. Runs in well under 20 s.
 */
#include <sys/rseq.h>

#include <cachelocal/rseq.h>
#include <cachelocal/topology.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define CLAIM(cond, ...)                                      \
	do {                                                  \
		if (!(cond)) {                                \
			printf("  FAIL: " __VA_ARGS__);       \
			printf("   [%s]\n", #cond);           \
			failures++;                           \
		}                                             \
	} while (0)

static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void unpin(const int *cpus, int n)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		CPU_SET(cpus[i], &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- many unpinned threads: every mm_cid below the possible CPUs ---- */

struct sampler {
	double until;
	int max, min, live;
	long samples;
};

static void *sampler_thread(void *p)
{
	struct sampler *s = p;

	s->min = 1 << 30;
	s->live = cl_rseq_available();
	while (now_s() < s->until) {
		for (int i = 0; i < 1000; i++) {
			int c = cl_mm_cid();

			if (c > s->max)
				s->max = c;
			if (c < s->min)
				s->min = c;
			s->samples++;
		}
		sched_yield();
	}
	return NULL;
}

/* ---- two pinned threads reading together ---- */

enum { ROUNDS = 2000 };

struct pair {
	int cpu;
	int *ids;
	atomic_int *arrive;
	int ok;
};

static void barrier(atomic_int *ctr, int target)
{
	atomic_fetch_add(ctr, 1);
	while (atomic_load(ctr) < target)
		;
}

static void *pair_thread(void *p)
{
	struct pair *a = p;

	a->ok = pin(a->cpu) == 0;
	for (int r = 0; r < ROUNDS; r++) {
		barrier(a->arrive, 4 * r + 2);
		a->ids[r] = cl_mm_cid();
		barrier(a->arrive, 4 * r + 4);
	}
	return NULL;
}

int main(void)
{
	static int cpus[CPU_SETSIZE];
	int n = allowed_cpus(cpus, CPU_SETSIZE);
	unsigned possible = cl_nr_possible_cpus();
	unsigned glibc_size = __rseq_size;
	unsigned long aux = getauxval(27);
	const char *tun = getenv("GLIBC_TUNABLES");
	int glibc_off = tun && strstr(tun, "glibc.pthread.rseq=0");
	enum cl_id_mode mode = cl_id_mode();
	struct utsname u;

	uname(&u);
	printf("rseq_ids_contract: kernel %s, glibc __rseq_size %u, __rseq_offset %td, AT_RSEQ_FEATURE_SIZE %lu%s\n",
	       u.release, glibc_size, __rseq_offset, aux, glibc_off ? ", glibc rseq off" : "");
	printf("  owner: %s; live in main thread: %d; usable feature size: %u; mm_cid: %d\n",
	       cl_rseq_owned_by_glibc() ? "glibc" : "cachelocal (self-registered)",
	       cl_rseq_available(), cl_rseq_feature_size(), cl_rseq_mm_cid_available());
	printf("  id mode: %s; %d allowed CPUs, %u possible\n", cl_id_mode_name(mode), n, possible);

	/* ownership and the size rule */
	CLAIM(cl_rseq_owned_by_glibc() == (glibc_size != 0), "glibc owns iff __rseq_size != 0\n");
	if (glibc_off)
		CLAIM(glibc_size == 0, "the tunable turns glibc's registration off\n");
	if (cl_rseq_available()) {
		unsigned expect;

		if (glibc_size != 0 && glibc_size != 20 && glibc_size != 32)
			expect = glibc_size;
		else
			expect = aux ? (aux < 32 ? (unsigned)aux : 32) : 20;
		CLAIM(cl_rseq_feature_size() == expect, "feature size %u, size rule says %u\n",
		      cl_rseq_feature_size(), expect);
		CLAIM(mode == (expect >= 28 ? CL_ID_MM_CID : CL_ID_CPU_ID), "mode %s\n",
		      cl_id_mode_name(mode));
	} else {
		CLAIM(mode == CL_ID_GETCPU || mode == CL_ID_THREAD_HASH, "mode %s without rseq\n",
		      cl_id_mode_name(mode));
	}
	if (aux >= 28 && cl_rseq_available())
		CLAIM(cl_rseq_mm_cid_available(), "kernel has mm_cid, so must we (owner %s)\n",
		      cl_rseq_owned_by_glibc() ? "glibc" : "self");

	/* cpu_id after pinning */
	for (int i = 0; i < n; i++) {
		int id, gc;

		CLAIM(pin(cpus[i]) == 0, "pin to %d\n", cpus[i]);
		id = cl_cpu_id();
		gc = sched_getcpu();
		printf("  pinned to CPU %d: cl_cpu_id %d, sched_getcpu %d, cl_mm_cid %d, cl_node_id %d\n",
		       cpus[i], id, gc, cl_mm_cid(), cl_node_id());
		CLAIM(id == cpus[i] && id == gc, "cl_cpu_id %d on CPU %d\n", id, cpus[i]);
	}
	unpin(cpus, n);

	/* mm_cid bounds, 4 x nproc unpinned threads for 1 s */
	{
		int nt = 4 * (n > 0 ? n : 1);
		pthread_t th[4 * 64];
		struct sampler s[4 * 64];
		int gmax = -1, gmin = 1 << 30, live = 0;
		long samples = 0;

		if (nt > 4 * 64)
			nt = 4 * 64;
		for (int i = 0; i < nt; i++) {
			memset(&s[i], 0, sizeof(s[i]));
			s[i].until = now_s() + 1.0;
			pthread_create(&th[i], NULL, sampler_thread, &s[i]);
		}
		for (int i = 0; i < nt; i++) {
			pthread_join(th[i], NULL);
			gmax = s[i].max > gmax ? s[i].max : gmax;
			gmin = s[i].min < gmin ? s[i].min : gmin;
			live += s[i].live;
			samples += s[i].samples;
		}
		printf("  %d unpinned threads, %ld cl_mm_cid samples: min %d max %d (bound %u); %d/%d threads live\n",
		       nt, samples, gmin, gmax, possible, live, nt);
		CLAIM(gmin >= 0 && gmax < (int)possible, "mm_cid in [0, %u)\n", possible);
		CLAIM(live == (cl_rseq_available() ? nt : 0),
		      "threads started later are registered like the main thread\n");
	}

	/* uniqueness among concurrently running threads */
	if (n >= 2 && mode != CL_ID_THREAD_HASH) {
		static int ids[2][ROUNDS];
		struct pair pa[2];
		pthread_t th[2];
		atomic_int arrive = 0;
		int same = 0;

		for (int t = 0; t < 2; t++) {
			pa[t] = (struct pair){ .cpu = cpus[t], .ids = ids[t], .arrive = &arrive };
			pthread_create(&th[t], NULL, pair_thread, &pa[t]);
		}
		for (int t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
		for (int r = 0; r < ROUNDS; r++)
			same += ids[0][r] == ids[1][r];
		printf("  2 threads pinned to CPUs %d and %d, %d rounds: ids %d/%d, %d rounds equal\n",
		       cpus[0], cpus[1], ROUNDS, ids[0][0], ids[1][0], same);
		CLAIM(pa[0].ok && pa[1].ok, "pinning\n");
		CLAIM(same == 0, "mm_cid unique among running threads\n");
	}

	/* fork */
	{
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			int bad = 0;

			for (int i = 0; i < n; i++) {
				pin(cpus[i]);
				bad |= cl_cpu_id() != cpus[i];
				bad |= cl_mm_cid() < 0 || cl_mm_cid() >= (int)possible;
			}
			_exit(bad);
		}
		waitpid(pid, &status, 0);
		printf("  fork child: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ids valid" : "BAD ids");
		CLAIM(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child reads valid ids\n");
	}

	printf("rseq_ids_contract: %s (%d failed claims)\n", failures ? "FAILED" : "all claims hold", failures);
	return failures ? 1 : 0;
}
