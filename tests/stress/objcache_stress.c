/* SPDX-License-Identifier: MIT */
/*
 * objcache_stress - no object is handed out twice and none is lost while
 * 6 x CORES threads allocate and free at random, migrate, take signals,
 * and a drainer empties random CPUs' caches under them; cpu_id and mm_cid
 * caches.
 *
 * Ownership check: the first word of each object holds its owner (0 when
 * free), swapped with a relaxed exchange on every alloc and free: a second
 * owner, or a free by someone else, is counted as a failure. The second
 * word is a plain write of the owner, so a ThreadSanitizer build also sees
 * whether hand-overs between threads are ordered. At the end every worker
 * has freed what it held: the cache must count every object it carved as
 * free (depot + CPU caches) and destroy must succeed.
 */
#include "stress.h"

#include <cachelocal/objcache.h>

#define HOLD 32

static struct cl_objcache *cache;
static int drainer_stop;
static unsigned long drains, drained, drain_errors;

static int nr_reports;

/* stress_fail() for the first few failures; afterwards only the flag. */
#define REPORT(run, ...)                                                           \
	do {                                                                       \
		if (__atomic_fetch_add(&nr_reports, 1, __ATOMIC_RELAXED) < 10)     \
			stress_fail(run, __VA_ARGS__);                             \
		else                                                               \
			__atomic_store_n(&(run)->failed, 1, __ATOMIC_RELAXED);     \
	} while (0)

static void *worker(struct stress_run *run, int id)
{
	uint64_t *held[HOLD] = { 0 };
	uint64_t me = (uint64_t)id + 1;
	unsigned seed = (unsigned)id * 2654435761u + 1;
	long i;

	for (i = 0;; i++) {
		int k = (int)(rand_r(&seed) % HOLD);

		if (i == 1)
			stress_allow_signals();
		if (held[k]) {
			if (held[k][1] != me ||
			    __atomic_exchange_n(&held[k][0], 0, __ATOMIC_RELAXED) != me)
				REPORT(run, "worker %d: object %p changed owner while held", id,
					    (void *)held[k]);
			cl_objcache_free(cache, held[k]);
			held[k] = NULL;
		} else {
			uint64_t *o = cl_objcache_alloc(cache);
			uint64_t prev;

			if (o == NULL) {
				REPORT(run, "worker %d: alloc failed, errno %d", id, errno);
				break;
			}
			prev = __atomic_exchange_n(&o[0], me, __ATOMIC_RELAXED);
			if (prev != 0)
				REPORT(run, "worker %d: object %p handed out while owned by %llu",
					    id, (void *)o, (unsigned long long)prev);
			o[1] = me;
			held[k] = o;
		}
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	for (int k = 0; k < HOLD; k++)
		if (held[k]) {
			__atomic_store_n(&held[k][0], 0, __ATOMIC_RELAXED);
			cl_objcache_free(cache, held[k]);
		}
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *drainer(void *p)
{
	const struct stress_cfg *cfg = p;
	unsigned seed = 777;
	unsigned nr = cl_nr_possible_cpus();

	while (!__atomic_load_n(&drainer_stop, __ATOMIC_RELAXED)) {
		/* Mostly the allowed CPUs (cids are below their count too). */
		int cpu = rand_r(&seed) % 8 ? cfg->allowed[rand_r(&seed) % (unsigned)cfg->nr_allowed]
					     : (int)(rand_r(&seed) % nr);
		int m = cl_objcache_drain_cpu(cache, cpu);

		if (m >= 0) {
			drains++;
			drained += (unsigned long)m;
		} else if (errno != ENOSYS && errno != EINVAL) {
			drain_errors++;
		}
	}
	return NULL;
}

static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	struct cl_objcache_attr attr = { 64, 0, 16, idx };
	struct cl_objcache_stats st;
	struct stress_run run;
	pthread_t d;
	int rc, bad;

	cache = cl_objcache_create(&attr);
	if (cache == NULL) {
		perror("cl_objcache_create");
		return 1;
	}
	drains = drained = drain_errors = 0;
	drainer_stop = 0;
	if (pthread_create(&d, NULL, drainer, (void *)cfg) != 0)
		return 1;
	rc = stress_run(&run, cfg, worker, NULL, NULL);
	__atomic_store_n(&drainer_stop, 1, __ATOMIC_RELAXED);
	pthread_join(d, NULL);
	cl_objcache_stats(cache, &st);
	bad = rc != 0 || st.nr_out != 0 || st.nr_objects != st.nr_depot + st.nr_cached ||
	      drain_errors != 0 || (st.drain_fence != CL_OBJCACHE_DRAIN_NONE && drained != st.nr_drained);
	printf("objcache_stress [" STRESS_INDEX_FMT ", drain fence %d]: %d workers, %lu ops, "
	       "%lu aborts, %lu signals, %lu migrations, %lu drains moved %lu objects "
	       "(%lu drain errors); %zu objects: %zu depot, %zu cached, %zu out; "
	       "%zu refills, %zu spills, %zu direct: %s\n",
	       STRESS_INDEX_ARGS(idx), st.drain_fence, cfg->nr_workers, run.ops, run.aborts,
	       run.signals, run.migrations, drains, drained, drain_errors, st.nr_objects,
	       st.nr_depot, st.nr_cached, st.nr_out, st.nr_refills, st.nr_spills, st.nr_direct,
	       bad ? "FAIL" : "PASS");
	if (cl_objcache_destroy(cache) != 0) {
		printf("objcache_stress: destroy refused (errno %d): objects lost\n", errno);
		bad = 1;
	}
	return bad;
}

STRESS_MAIN(run_index)
