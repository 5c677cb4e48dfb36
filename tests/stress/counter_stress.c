/* SPDX-License-Identifier: MIT */
/*
 * counter_stress - cl_counter sums stay exact under preemption, migration
 * and signals, in the cpu_id and the mm_cid index modes.
 *
 * 6 x CORES workers add values 1..3 (each keeps its own exact total); the
 * SIGUSR1 handler adds 1 as well, interrupting workers inside critical
 * sections. After the workers are joined the counter must equal the sum of
 * the workers' totals plus the number of handled signals.
 */
#include "stress.h"

#include <cachelocal/counter.h>
#include <cachelocal/counter_cid.h>

static struct cl_counter counter;
static unsigned long handled;

static void sig_add(void)
{
	cl_counter_add(&counter, 1);
	__atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
}

static void *worker(struct stress_run *run, int id)
{
	int64_t mine = 0;
	long i;

	(void)id;
	cl_counter_add(&counter, 1); /* first op: registers rseq (glibc-off) */
	mine = 1;
	stress_allow_signals();
	for (i = 1;; i++) {
		int64_t v = (int64_t)(i % 3) + 1;

		cl_counter_add(&counter, v);
		mine += v;
		if ((i & 1023) == 0) {
			if (stress_should_stop(run, i + 1)) {
				i++;
				break;
			}
			if ((i & 4095) == 0)
				sched_yield();
		}
	}
	__atomic_fetch_add((int64_t *)run->priv, mine, __ATOMIC_RELAXED);
	__atomic_fetch_add(&run->ops, (unsigned long)i, __ATOMIC_RELAXED);
	return NULL;
}

static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	struct stress_run run;
	int64_t expect = 0, got;
	int rc;

	if (cl_counter_init_index(&counter, idx) != 0) {
		perror("cl_counter_init_index");
		return 1;
	}
	handled = 0;
	rc = stress_run(&run, cfg, worker, &expect, sig_add);
	got = cl_counter_read(&counter);
	expect += (int64_t)__atomic_load_n(&handled, __ATOMIC_RELAXED);
	printf("counter_stress [" STRESS_INDEX_FMT "]: %d workers, %lu adds, %lu signal adds, "
	       "%lu aborts, %lu signals sent, %lu migrations: counter %lld, expected %lld: %s\n",
	       STRESS_INDEX_ARGS(idx), cfg->nr_workers, run.ops,
	       handled, run.aborts, run.signals, run.migrations, (long long)got,
	       (long long)expect, rc == 0 && got == expect ? "PASS" : "FAIL");
	cl_counter_destroy(&counter);
	return rc != 0 || got != expect;
}

static struct cl_cid_domain *domain;
static struct cl_counter_cid cid_counter;

static void *cid_worker(struct stress_run *run, int id)
{
	int64_t mine = 0;
	long i;

	(void)id;
	if (cl_cid_domain_join(domain) != 0) {
		stress_fail(run, "cl_cid_domain_join failed");
		return (void *)1;
	}
	stress_allow_signals();
	for (i = 0;; i++) {
		int cid = cl_cid_acquire(domain);

		if (cid < 0) {
			stress_fail(run, "cl_cid_acquire failed");
			break;
		}
		for (int k = 0; k < 16; k++) {
			int64_t v = (int64_t)((i + k) % 3) + 1;

			cl_counter_cid_add(&cid_counter, cid, v);
			mine += v;
		}
		cl_cid_release(domain, cid);
		if ((i & 63) == 0 && stress_should_stop(run, (i + 1) * 16))
			break;
	}
	cl_cid_domain_leave(domain);
	__atomic_fetch_add((int64_t *)run->priv, mine, __ATOMIC_RELAXED);
	__atomic_fetch_add(&run->ops, (unsigned long)(i + 1) * 16, __ATOMIC_RELAXED);
	return NULL;
}

static int run_cid(const struct stress_cfg *cfg)
{
	struct stress_run run;
	int64_t expect = 0, got;
	int rc;

	domain = cl_cid_domain_create(CL_CID_RECENT, NULL);
	if (!domain || cl_counter_cid_init(&cid_counter, domain, (unsigned)cfg->nr_allowed) != 0) {
		perror("cid counter");
		return 1;
	}
	rc = stress_run(&run, cfg, cid_worker, &expect, NULL);
	got = cl_counter_cid_read(&cid_counter);
	printf("counter_stress [cid domain, %u slots]: %d workers, %lu adds, %lu signals sent, "
	       "%lu migrations: counter %lld, expected %lld: %s\n",
	       cid_counter.nr_slots, cfg->nr_workers, run.ops, run.signals, run.migrations,
	       (long long)got, (long long)expect, rc == 0 && got == expect ? "PASS" : "FAIL");
	cl_counter_cid_destroy(&cid_counter);
	cl_cid_domain_destroy(domain);
	return rc != 0 || got != expect;
}

int main(void)
{
	struct stress_cfg cfg;
	int rc = 0;

	stress_cfg_load(&cfg);
	rc |= run_index(&cfg, CL_RSEQ_INDEX_CPU_ID);
	rc |= run_index(&cfg, CL_RSEQ_INDEX_MM_CID);
	rc |= run_cid(&cfg);
	return rc ? 1 : 0;
}
