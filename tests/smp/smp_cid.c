/* SPDX-License-Identifier: MIT */
/*
 * smp_cid - cid.h domains at the machine's size, and the kernel's mm_cid.
 *
 * Part 1, once per policy (CL_CID_NAIVE, CL_CID_RECENT, CL_CID_LLC): 4 x
 * online-CPU threads join one domain (created with this machine's topology)
 * and loop: every 16 rounds move to a random CPU (or all CPUs) with
 * sched_setaffinity (refusals skipped: CPUs go offline), acquire a cid, work
 * on the cid's slot, release. Asserted at every acquire:
 *   - the cid is >= 0 and below cl_cid_domain_bound() (read once every
 *     thread has joined; nobody joins or leaves until all are done);
 *   - uniqueness: an owner table, one atomic word per cid, taken by CAS
 *     0 -> thread and given back by exchange before the release; a CAS that
 *     finds another owner, or an exchange that finds not us, is a cid held
 *     twice. The slot's data is written plain while held, so a
 *     ThreadSanitizer build also checks the hand-over ordering.
 *
 * Locality, printed for every policy as
 *   cid locality: policy=NAME reacquire_same_llc=F same_cid=F n=N
 * A sample is an acquire by a thread that acquired before, of a cid that was
 * acquired before, with cl_cpu_id() equal just before and just after the
 * call (so the CPU the policy was given is known). reacquire_same_llc: share
 * of samples where the CPU of the cid's previous acquire (which this program
 * records while it holds the cid) lies in the same LLC as the current CPU:
 * exactly the "last used in this CPU's LLC" that CL_CID_LLC prefers (cid.h:
 * a cid belongs to no fixed range; it is warm in the LLC of the CPU that
 * last acquired it; LLC ids are those of the topology loaded at the start,
 * where a CPU offline then has an LLC of its own). same_cid: share of samples
 * where the thread got the same cid as at its own previous acquire.
 * Asserted: reacquire_same_llc(llc) > reacquire_same_llc(naive), when both
 * runs have >= MIN_SAMPLES samples taken on CPUs of >= 2 LLCs.
 *
 * Part 2, the kernel's mm_cid: the same threads add 1 to a per-CPU counter
 * indexed by mm_cid (cl_percpu_add(CL_RSEQ_INDEX_MM_CID): an rseq section
 * that reads mm_cid and adds non-atomically to that copy, committed only if
 * the thread was not preempted or migrated) while migrating. The kernel
 * promises only that mm_cid is unique among running threads and below the
 * possible CPUs; two running threads with the same mm_cid would lose adds.
 * Asserted: every index the add used, and every cl_mm_cid() read while the
 * id mode is mm_cid, is in 0 .. possible CPUs - 1; the copies sum to the
 * number of adds. (Two threads reading their mm_cid outside a section may
 * see the same value legally - one of them stale - so that is not asserted.)
 * With rseq unavailable the add takes the documented atomic fallback and the
 * checks still hold.
 *
 * Knobs: DURATION (seconds, default 2: a quarter per part/policy),
 * THREADS_PER_CPU (default 4), MIN_SAMPLES (default 200), SYSFS_ROOT
 * (default "/sys": the topology the LLC policy and the locality measure
 * use; a fake tree such as tests/data/24core-24l3 gives a 2-CPU host an LLC
 * per CPU).
 * Output: the three `cid locality:` lines, `cid stats:` lines (the
 * library's counters), one `mm_cid:` line, then PASS/FAIL.
 */
#include "smp.h"

#include <cachelocal/cid.h>
#include <cachelocal/percpu.h>
#include <cachelocal/percpu_ops.h>
#include <cachelocal/topology.h>

#define NAME "smp_cid"

struct slot {
	unsigned long owner; /* 0 free, else thread id + 1 (atomic) */
	int last_cpu;        /* CPU of the last acquire, -1 unknown (atomic) */
	unsigned long data;  /* written plain by the holder */
} __attribute__((aligned(128)));

static struct cl_topology topo;
static struct cl_cid_domain *dom;
static struct slot *slots;
static unsigned nr_slots;
static struct smp_cpus cpus; /* online at the start: flip targets */

/* per policy run, summed from the threads */
static unsigned long r_n, r_same_llc, r_same_cid, r_acq;
static unsigned char *llc_seen; /* [topo.nr_llcs] */

/* part 2 */
static intptr_t *mmc_ctr;
static unsigned mmc_nr;
static unsigned long mmc_adds, mmc_reads;
static int mmc_max;

static int llc_of(int cpu)
{
	return cpu >= 0 && (unsigned)cpu < topo.nr_cpu_ids && topo.cpu[cpu].possible ? topo.cpu[cpu].llc
										     : -1;
}

static void *cid_thread(void *arg)
{
	unsigned long me = (unsigned long)(uintptr_t)arg + 1;
	unsigned seed = (unsigned)me * 2654435761u | 1u;
	unsigned long n = 0, same_llc = 0, same_cid = 0, acq = 0, it = 0;
	unsigned bound;
	int prev = -1;

	if (!smp_check(cl_cid_domain_join(dom) == 0, "join: %s", strerror(errno))) {
		smp_barrier();
		smp_barrier();
		return NULL;
	}
	smp_barrier();
	bound = cl_cid_domain_bound(dom);
	while (!smp_stopping()) {
		int c0, c1, cid, last;
		unsigned long was;

		if (it++ % 16 == 0)
			smp_flip(&cpus, &seed);
		c0 = cl_cpu_id();
		cid = cl_cid_acquire(dom);
		c1 = cl_cpu_id();
		if (!smp_check(cid >= 0, "acquire failed: %s", strerror(errno)))
			break;
		acq++;
		if (!smp_check((unsigned)cid < bound && (unsigned)cid < nr_slots,
			       "cid %d not below the bound %u", cid, bound)) {
			cl_cid_release(dom, cid);
			break;
		}
		was = 0;
		if (!__atomic_compare_exchange_n(&slots[cid].owner, &was, me, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED)) {
			smp_check(0, "cid %d handed to thread %lu while thread %lu holds it", cid, me - 1,
				  was - 1);
			cl_cid_release(dom, cid); /* (so that nobody waits for it forever) */
			prev = -1;
			continue;
		}
		last = __atomic_load_n(&slots[cid].last_cpu, __ATOMIC_RELAXED);
		if (c0 == c1 && prev >= 0 && last >= 0) {
			int l = llc_of(c0);

			n++;
			same_llc += l >= 0 && l == llc_of(last);
			same_cid += cid == prev;
			if (l >= 0)
				__atomic_store_n(&llc_seen[l], 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&slots[cid].last_cpu, c0 == c1 ? c0 : -1, __ATOMIC_RELAXED);
		for (int k = 0; k < 64; k++)
			slots[cid].data = slots[cid].data * 31 + me;
		was = __atomic_exchange_n(&slots[cid].owner, 0, __ATOMIC_RELEASE);
		smp_check(was == me, "cid %d: owner %lu at release by %lu", cid, was - 1, me - 1);
		cl_cid_release(dom, cid);
		prev = cid;
		if (it % 8 == 0)
			sched_yield();
	}
	__atomic_fetch_add(&r_n, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r_same_llc, same_llc, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r_same_cid, same_cid, __ATOMIC_RELAXED);
	__atomic_fetch_add(&r_acq, acq, __ATOMIC_RELAXED);
	smp_barrier(); /* nobody leaves before all are done: the bound holds */
	smp_check(cl_cid_domain_leave(dom) == 0, "leave: %s", strerror(errno));
	return NULL;
}

static void *mmc_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2246822519u | 1u;
	unsigned long adds = 0, reads = 0;
	int max = -1;

	smp_barrier();
	while (!smp_stopping()) {
		int r;

		if (adds % 16 == 0)
			smp_flip(&cpus, &seed);
		r = cl_percpu_add(CL_RSEQ_INDEX_MM_CID, mmc_ctr, CL_PERCPU_STRIDE, 1);
		if (!smp_check(r >= 0 && (unsigned)r < mmc_nr, "mm_cid add used index %d (copies %u): %s",
			       r, mmc_nr, strerror(errno)))
			break;
		adds++;
		if (r > max)
			max = r;
		if (cl_id_mode() == CL_ID_MM_CID) {
			int m = cl_mm_cid();

			reads++;
			smp_check(m >= 0 && (unsigned)m < cl_nr_possible_cpus(),
				  "cl_mm_cid() %d not below the possible CPUs %u", m, cl_nr_possible_cpus());
		}
	}
	__atomic_fetch_add(&mmc_adds, adds, __ATOMIC_RELAXED);
	__atomic_fetch_add(&mmc_reads, reads, __ATOMIC_RELAXED);
	for (int cur = __atomic_load_n(&mmc_max, __ATOMIC_RELAXED);
	     max > cur && !__atomic_compare_exchange_n(&mmc_max, &cur, max, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED);)
		;
	return NULL;
}

struct locality {
	unsigned long n;
	double same_llc, same_cid;
	int llcs;
};

static struct locality run_policy(enum cl_cid_policy pol, int nr, double secs)
{
	struct locality res = { 0, 0, 0, 0 };
	struct cl_cid_stats st;

	dom = cl_cid_domain_create(pol, &topo);
	if (!smp_check(dom != NULL, "cl_cid_domain_create(%s): %s", cl_cid_policy_name(pol),
		       strerror(errno)))
		return res;
	for (unsigned i = 0; i < nr_slots; i++) {
		slots[i].owner = 0;
		slots[i].last_cpu = -1;
	}
	memset(llc_seen, 0, topo.nr_llcs);
	r_n = r_same_llc = r_same_cid = r_acq = 0;
	smp_run(nr, cid_thread, secs, 2);
	res.n = r_n;
	res.same_llc = r_n ? (double)r_same_llc / (double)r_n : 0;
	res.same_cid = r_n ? (double)r_same_cid / (double)r_n : 0;
	for (unsigned l = 0; l < topo.nr_llcs; l++)
		res.llcs += llc_seen[l];
	printf("cid locality: policy=%s reacquire_same_llc=%.3f same_cid=%.3f n=%lu\n",
	       cl_cid_policy_name(pol), res.same_llc, res.same_cid, res.n);
	if (cl_cid_domain_stats(dom, &st) == 0) {
		printf("cid stats: policy=%s acquisitions=%llu recent=%llu llc=%llu spread=%llu "
		       "lowest=%llu fallback=%llu waits=%llu busy=%llu llcs_sampled=%d\n",
		       cl_cid_policy_name(pol), st.acquisitions, st.recent_hits, st.llc_hits,
		       st.spreads, st.lowest, st.fallbacks, st.waits, st.busy, res.llcs);
		smp_check(st.acquisitions == r_acq, "policy %s: library counts %llu acquisitions, threads %lu",
			  cl_cid_policy_name(pol), st.acquisitions, r_acq);
		smp_check(st.held == 0 && st.users == 0, "policy %s: %u cids held, %u users at the end",
			  cl_cid_policy_name(pol), st.held, st.users);
		smp_check(st.busy == 0, "policy %s: %llu acquires refused with EBUSY",
			  cl_cid_policy_name(pol), st.busy);
	}
	fflush(stdout);
	cl_cid_domain_destroy(dom);
	dom = NULL;
	return res;
}

int main(void)
{
	long per_cpu = smp_env_long("THREADS_PER_CPU", 4);
	long min_samples = smp_env_long("MIN_SAMPLES", 200);
	double secs = smp_duration() / 4;
	struct locality naive, recent, llc;
	struct cl_percpu_pool *pool;
	intptr_t sum = 0;
	int nr;

	smp_banner(NAME);
	if (cl_topology_load(&topo, getenv("SYSFS_ROOT") && *getenv("SYSFS_ROOT") ? getenv("SYSFS_ROOT")
										   : NULL) != 0)
		return smp_fatal(NAME, "cl_topology_load: %s", strerror(errno));
	smp_online_cpus(&cpus);
	nr = (int)(per_cpu < 1 ? 1 : per_cpu) * cpus.nr;
	nr_slots = cl_nr_possible_cpus() > topo.nr_cpu_ids ? cl_nr_possible_cpus() : topo.nr_cpu_ids;
	slots = aligned_alloc(128, sizeof(*slots) * nr_slots);
	llc_seen = calloc(topo.nr_llcs + 1, 1);
	if (!slots || !llc_seen)
		return smp_fatal(NAME, "out of memory");
	memset(slots, 0, sizeof(*slots) * nr_slots);
	printf("%s: %d threads, %u LLCs, %u nodes, id mode %s, ops %s (mm_cid index)\n", NAME, nr,
	       topo.nr_llcs, topo.nr_nodes, cl_id_mode_name(cl_id_mode()),
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID)));

	naive = run_policy(CL_CID_NAIVE, nr, secs);
	recent = run_policy(CL_CID_RECENT, nr, secs);
	llc = run_policy(CL_CID_LLC, nr, secs);
	(void)recent;
	if (naive.llcs >= 2 && llc.llcs >= 2 && naive.n >= (unsigned long)min_samples &&
	    llc.n >= (unsigned long)min_samples)
		smp_check(llc.same_llc > naive.same_llc,
			  "LLC policy locality %.3f not above NAIVE's %.3f", llc.same_llc, naive.same_llc);
	else
		printf("cid locality: not compared (samples on %d/%d LLCs, n %lu/%lu, need 2 LLCs and "
		       "%ld samples)\n", naive.llcs, llc.llcs, naive.n, llc.n, min_samples);

	/* part 2: mm_cid */
	pool = cl_percpu_pool_create(NULL);
	mmc_ctr = pool ? cl_percpu_alloc(pool, sizeof(intptr_t), sizeof(intptr_t)) : NULL;
	if (!mmc_ctr)
		return smp_fatal(NAME, "per-CPU pool: %s", strerror(errno));
	mmc_nr = cl_percpu_pool_nr_cpus(pool);
	mmc_max = -1;
	smp_run(nr, mmc_thread, secs, 1);
	for (unsigned c = 0; c < mmc_nr; c++)
		sum += *cl_percpu_ptr(mmc_ctr, c);
	printf("mm_cid: mode=%s ops=%s adds=%lu sum=%ld max_index=%d reads=%lu possible=%u\n",
	       cl_id_mode_name(cl_id_mode()),
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID)), mmc_adds,
	       (long)sum, mmc_max, mmc_reads, cl_nr_possible_cpus());
	smp_check(sum == (intptr_t)mmc_adds, "mm_cid-indexed counter sums to %ld, %lu adds were made",
		  (long)sum, mmc_adds);
	cl_percpu_free(pool, mmc_ctr);
	cl_percpu_pool_destroy(pool);
	cl_topology_free(&topo);
	free(slots);
	free(llc_seen);
	return smp_finish(NAME, "%d threads; locality naive %.3f recent %.3f llc %.3f; %lu mm_cid adds exact",
			  nr, naive.same_llc, recent.same_llc, llc.same_llc, mmc_adds);
}
