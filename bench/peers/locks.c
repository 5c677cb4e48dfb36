/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/locks - the fair locks of cachelocal/spinlock.h (ticket, MCS)
 * beside the TTAS lock and the locks a user would pick instead:
 * ck_spinlock_mcs, ck_spinlock_ticket (Concurrency Kit), pthread_spin_lock
 * and pthread_mutex (glibc).
 *
 * Workload: T threads, thread i pinned to allowed CPU i (wrapping: with more
 * threads than CPUs several share one), each looping: read the cycle
 * counter, lock, read it again, increment a shared counter and touch one line of shared
 * data, unlock, four pause instructions outside. For a fixed time (100 ms
 * with --quick, 10 ms with --smoke, 300 ms otherwise); T = 1 (uncontended),
 * 2 and 6 x the allowed CPUs (oversubscribed: a holder or the next waiter
 * may be preempted). Every lock runs once per run, in an order rotated run
 * by run. Reported per lock and T:
 *   throughput  ns per acquisition: the run's wall time / all acquisitions
 *   worst wait  the longest lock call of any thread, in ns (T >= 2)
 * Comparisons: ticket and MCS against each peer (TTAS included); gain =
 * theirs/ours (> 1: ours ahead). The goal: each fair lock within 1.2x of
 * ck_spinlock_mcs at every thread count (gain >= 1/1.2).
 */
#include "peers.h"

#include <ck_spinlock.h>

#include <cachelocal/spinlock.h>

enum lock_kind { L_TICKET, L_MCS, L_TTAS, L_CK_MCS, L_CK_TICKET, L_PSPIN, L_PMUTEX, NR_LOCKS };

static const char *const lock_name[NR_LOCKS] = {
	"cl_ticketlock", "cl_mcslock", "cl_spinlock (TTAS)", "ck_spinlock_mcs", "ck_spinlock_ticket",
	"pthread_spin_lock", "pthread_mutex",
};

#define MAX_THREADS 512

/* The wait of each lock call is timed with the cycle counter where there is
 * one (a clock_gettime() pair per acquisition would cost more than the lock:
 * without a vDSO clock it is two system calls), converted to ns with the
 * run's own wall-clock / counter ratio. */
#if defined(__x86_64__) || defined(__i386__)
static inline unsigned long long ticks(void)
{
	return __builtin_ia32_rdtsc();
}
#else
static inline unsigned long long ticks(void)
{
	return bench_now_ns();
}
#endif

struct shared {
	enum lock_kind kind;
	struct cl_ticketlock ticket CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	struct cl_mcslock mcs CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	struct cl_spinlock ttas CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	ck_spinlock_mcs_t ck_mcs CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	ck_spinlock_ticket_t ck_ticket CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	pthread_spinlock_t pspin CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	pthread_mutex_t pmutex CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	long counter CL_ALIGNED(CL_FALSE_SHARING_SIZE); /* under the lock */
	long data[8];                                    /* one line, under the lock */
	pthread_barrier_t start;
	int stop CL_ALIGNED(CL_FALSE_SHARING_SIZE); /* atomic */
};

struct result {
	long ops;
	unsigned long long worst_ns;
} CL_ALIGNED(CL_FALSE_SHARING_SIZE);

static struct shared sh;
static struct result res[MAX_THREADS];

struct targ {
	int id;
	pthread_t tid;
};

static void *worker(void *p)
{
	struct targ *a = (struct targ *)p;
	struct cl_mcs_node node;
	struct ck_spinlock_mcs ck_node;
	unsigned long long worst = 0;
	long ops = 0;

	bench_pin(bench_allowed_cpu(a->id));
	pthread_barrier_wait(&sh.start);
	while (!__atomic_load_n(&sh.stop, __ATOMIC_RELAXED)) {
		unsigned long long t0 = ticks(), t1;

		switch (sh.kind) {
		case L_TICKET: cl_ticket_lock(&sh.ticket); break;
		case L_MCS: cl_mcs_lock(&sh.mcs, &node); break;
		case L_TTAS: cl_spin_lock(&sh.ttas); break;
		case L_CK_MCS: ck_spinlock_mcs_lock(&sh.ck_mcs, &ck_node); break;
		case L_CK_TICKET: ck_spinlock_ticket_lock(&sh.ck_ticket); break;
		case L_PSPIN: pthread_spin_lock(&sh.pspin); break;
		default: pthread_mutex_lock(&sh.pmutex); break;
		}
		t1 = ticks();
		sh.counter++;
		for (int i = 0; i < 8; i++)
			sh.data[i] += i;
		switch (sh.kind) {
		case L_TICKET: cl_ticket_unlock(&sh.ticket); break;
		case L_MCS: cl_mcs_unlock(&sh.mcs, &node); break;
		case L_TTAS: cl_spin_unlock(&sh.ttas); break;
		case L_CK_MCS: ck_spinlock_mcs_unlock(&sh.ck_mcs, &ck_node); break;
		case L_CK_TICKET: ck_spinlock_ticket_unlock(&sh.ck_ticket); break;
		case L_PSPIN: pthread_spin_unlock(&sh.pspin); break;
		default: pthread_mutex_unlock(&sh.pmutex); break;
		}
		if (t1 - t0 > worst)
			worst = t1 - t0;
		ops++;
		for (int i = 0; i < 4; i++)
			CL_CPU_RELAX();
	}
	res[a->id].ops = ops;
	res[a->id].worst_ns = worst;
	return NULL;
}

/* One run of @kind on @threads threads for @ms: ns per acquisition and the
 * worst wait (ns). Return: 0, -1 on a thread error or a lost update. */
static int run_once(enum lock_kind kind, int threads, int ms, double *ns_per_op, double *worst)
{
	static struct targ a[MAX_THREADS];
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };
	unsigned long long t0, t1, k0, k1, w = 0;
	long total = 0;

	sh.kind = kind;
	sh.counter = 0;
	__atomic_store_n(&sh.stop, 0, __ATOMIC_RELAXED);
	pthread_barrier_init(&sh.start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		a[i].id = i;
		if (pthread_create(&a[i].tid, NULL, worker, &a[i]) != 0)
			return -1;
	}
	pthread_barrier_wait(&sh.start);
	t0 = bench_now_ns();
	k0 = ticks();
	nanosleep(&d, NULL);
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < threads; i++)
		pthread_join(a[i].tid, NULL);
	t1 = bench_now_ns();
	k1 = ticks();
	pthread_barrier_destroy(&sh.start);
	for (int i = 0; i < threads; i++) {
		total += res[i].ops;
		if (res[i].worst_ns > w)
			w = res[i].worst_ns;
	}
	if (total != sh.counter) {
		fprintf(stderr, "peer_locks: %s lost updates: %ld acquisitions, counter %ld\n", lock_name[kind],
			total, sh.counter);
		return -1;
	}
	*ns_per_op = total ? (double)(t1 - t0) / (double)total : 0;
	*worst = k1 > k0 ? (double)w * (double)(t1 - t0) / (double)(k1 - k0) : (double)w;
	return 0;
}

int main(int argc, char **argv)
{
	static struct peer_side thr[3][NR_LOCKS], worst[3][NR_LOCKS];
	char peer[96], workload[64];
	struct bench b;
	int counts[3], ms;

	bench_only_shared_args("peer_locks", argc, argv);
	bench_init(&b, "peer_locks", argc, argv);
	ms = b.smoke ? 10 : b.quick ? 100 : 300;
	counts[0] = 1;
	counts[1] = 2;
	counts[2] = 6 * bench_nr_allowed_cpus();
	if (counts[2] > MAX_THREADS)
		counts[2] = MAX_THREADS;
	cl_ticket_init(&sh.ticket);
	cl_mcs_init(&sh.mcs);
	cl_spin_init(&sh.ttas);
	sh.ck_mcs = CK_SPINLOCK_MCS_INITIALIZER;
	ck_spinlock_ticket_init(&sh.ck_ticket);
	pthread_spin_init(&sh.pspin, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&sh.pmutex, NULL);
	if (!b.json_only)
		printf("# %d ms per run, threads pinned round robin over %d allowed CPUs; ck %s, glibc %s\n",
		       ms, bench_nr_allowed_cpus(), PEER_CK_VERSION, gnu_get_libc_version());
	for (int c = 0; c < 3; c++) {
		for (int r = 0; r < b.runs; r++) {
			for (int j = 0; j < NR_LOCKS; j++) {
				int k = (j + r) % NR_LOCKS;

				if (run_once((enum lock_kind)k, counts[c], ms, &thr[c][k].v[r],
					     &worst[c][k].v[r]) != 0)
					return 1;
			}
		}
		bench_progress(&b, "%d threads done", counts[c]);
	}
	for (int c = 0; c < 3; c++)
		for (int k = 0; k < NR_LOCKS; k++) {
			snprintf(workload, sizeof(workload), "acquire %d threads", counts[c]);
			bench_report(&b, workload, lock_name[k], "pinned", counts[c], thr[c][k].v, b.runs,
				     "ns/op");
			if (c > 0) {
				snprintf(workload, sizeof(workload), "worst wait %d threads", counts[c]);
				bench_report(&b, workload, lock_name[k], "pinned", counts[c],
					     worst[c][k].v, b.runs, "ns");
			}
		}
	peer_header(&b);
	for (int ours = L_TICKET; ours <= L_MCS; ours++)
		for (int k = L_TTAS; k < NR_LOCKS; k++) {
			if (k == L_TTAS)
				snprintf(peer, sizeof(peer), "cl_spinlock TTAS (cachelocal)");
			else if (k <= L_CK_TICKET)
				snprintf(peer, sizeof(peer), "%s (ck %s)", lock_name[k], PEER_CK_VERSION);
			else
				snprintf(peer, sizeof(peer), "%s (glibc %s)", lock_name[k],
					 gnu_get_libc_version());
			for (int c = 0; c < 3; c++) {
				snprintf(workload, sizeof(workload), "acquire+release, %d thread%s",
					 counts[c], counts[c] > 1 ? "s" : "");
				peer_emit(&b, ours == L_TICKET ? "ticket lock" : "MCS lock", lock_name[ours],
					  peer, workload, counts[c], &thr[c][ours], &thr[c][k], b.runs, "ns/op",
					  0);
				if (c == 0)
					continue;
				snprintf(workload, sizeof(workload), "worst wait, %d threads", counts[c]);
				peer_emit(&b, ours == L_TICKET ? "ticket lock" : "MCS lock", lock_name[ours],
					  peer, workload, counts[c], &worst[c][ours], &worst[c][k], b.runs,
					  "ns", 0);
			}
		}
	return bench_finish(&b);
}
