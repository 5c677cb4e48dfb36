/* SPDX-License-Identifier: MIT */
/*
 * smp_structures - the per-CPU structures at the machine's size: one worker
 * thread per online CPU (started pinned to it, then moved to a random CPU
 * or all CPUs every 64 operations; refusals skipped: CPUs go offline).
 *
 * counters (a third of DURATION): each worker adds to
 *   - a cl_counter (cpu_id copies): +1 per operation,
 *   - a cl_counter made with cl_counter_init_index(CL_RSEQ_INDEX_MM_CID): +3,
 *   - a cl_counter_cid on a CL_CID_RECENT domain the workers join:
 *     cl_counter_cid_add_any(+1), and every 8th operation an explicit
 *     acquire, cl_counter_cid_add(cid, +2), release;
 *   a reader thread reads the cpu_id counter all the while: with adds of
 *   one sign, counter.h promises each read lies between the values at its
 *   start and end, so successive reads never go down. Asserted: no read
 *   went down; after the join every counter equals the workers' own tally.
 *
 * objcache (a third, half with cpu_id caches, half with mm_cid caches):
 *   each worker holds up to 32 objects and allocates or frees one at
 *   random; word 0 of every object is its owner tag, swapped in by CAS
 *   0 -> worker on alloc (finding another owner = an object handed out
 *   twice) and back to 0 by exchange on free (finding another = a free by
 *   the wrong owner). A drainer thread calls cl_objcache_drain_cpu() on
 *   random CPU ids, offline ones included, the whole time. At the end, with
 *   every object freed: nr_out == 0 and nr_objects == depot + cached; then
 *   every CPU is drained (when draining is possible: not for mm_cid caches
 *   without membarrier RSEQ), the depot must hold all nr_objects objects,
 *   and allocating nr_objects objects must give nr_objects distinct objects,
 *   all with tag 0, without carving a new one: every object accounted for
 *   exactly once. cl_objcache_destroy() must then succeed.
 *
 * brlock (a third): each worker is a reader (cl_brlock_read_lock, count
 * itself in a shared atomic `readers`, check the `writer` flag is clear,
 * twice, uncount, unlock); WRITERS threads take the write lock, set
 * `writer`, check `readers` is 0 before and after a short section, clear
 * it. Asserted: no reader ever saw a writer, no writer ever saw a reader.
 *
 * Prints `rseq aborts: N`: aborted critical sections, counted at the abort
 * path of every section (the CL_INJECT points 20..26 that
 * tests/stress/stress.h counts too); 0 when the operations run on the
 * atomic fallback.
 *
 * Knobs: DURATION (seconds, default 2), WRITERS (brlock writers, default 2).
 * Output: `counters:`, `objcache:` (one per index kind), `brlock:`,
 * `rseq aborts:` lines, then PASS/FAIL.
 */
#include "smp.h"

/* Count aborted critical sections (before any cachelocal header). */
static _Thread_local unsigned long tl_aborts;
static unsigned long all_aborts;
#define CL_INJECT(n) ((void)((n) >= 20 && (n) <= 26 ? tl_aborts++ : 0))

#include <cachelocal/brlock.h>
#include <cachelocal/counter.h>
#include <cachelocal/counter_cid.h>
#include <cachelocal/objcache.h>

#define NAME "smp_structures"
#define HOLD 32

static struct smp_cpus cpus;

static void worker_start(int idx, unsigned *seed)
{
	*seed = (unsigned)idx * 2654435761u | 1u;
	smp_pin_self(cpus.id[idx % cpus.nr]);
}

static void worker_end(void)
{
	__atomic_fetch_add(&all_aborts, tl_aborts, __ATOMIC_RELAXED);
	tl_aborts = 0;
}

/* ---- counters ---- */

static struct cl_counter c_cpu, c_mm;
static struct cl_counter_cid c_cid;
static struct cl_cid_domain *c_dom;
static int64_t tally_cpu, tally_mm, tally_cid;
static int readers_stop;
static unsigned long nr_reads;

static void *counter_worker(void *arg)
{
	int idx = (int)(uintptr_t)arg;
	int64_t n_cpu = 0, n_mm = 0, n_cid = 0;
	unsigned seed;
	int joined;

	worker_start(idx, &seed);
	joined = smp_check(cl_cid_domain_join(c_dom) == 0, "cid join: %s", strerror(errno));
	smp_barrier();
	for (unsigned long i = 0; !smp_stopping(); i++) {
		if (i % 64 == 63)
			smp_flip(&cpus, &seed);
		cl_counter_add(&c_cpu, 1);
		n_cpu += 1;
		cl_counter_add(&c_mm, 3);
		n_mm += 3;
		if (!joined)
			continue;
		cl_counter_cid_add_any(&c_cid, 1);
		n_cid += 1;
		if (i % 8 == 0) {
			int cid = cl_cid_acquire(c_dom);

			if (smp_check(cid >= 0, "cid acquire: %s", strerror(errno))) {
				cl_counter_cid_add(&c_cid, cid, 2);
				n_cid += 2;
				cl_cid_release(c_dom, cid);
			}
		}
	}
	__atomic_fetch_add(&tally_cpu, n_cpu, __ATOMIC_RELAXED);
	__atomic_fetch_add(&tally_mm, n_mm, __ATOMIC_RELAXED);
	__atomic_fetch_add(&tally_cid, n_cid, __ATOMIC_RELAXED);
	smp_barrier(); /* every worker stays a user until all are done */
	if (joined)
		cl_cid_domain_leave(c_dom);
	worker_end();
	return NULL;
}

static void *counter_reader(void *arg)
{
	int64_t last = 0;
	unsigned long n = 0;

	(void)arg;
	while (!__atomic_load_n(&readers_stop, __ATOMIC_RELAXED)) {
		int64_t v = cl_counter_read(&c_cpu);

		smp_check(v >= last, "cl_counter_read went down: %lld after %lld", (long long)v,
			  (long long)last);
		last = v;
		n++;
	}
	nr_reads = n;
	return NULL;
}

static void test_counters(int nr, double secs)
{
	pthread_t reader;
	int64_t v_cpu, v_mm, v_cid;

	c_dom = cl_cid_domain_create(CL_CID_RECENT, NULL);
	if (!smp_check(c_dom && cl_counter_init(&c_cpu) == 0 &&
			       cl_counter_init_index(&c_mm, CL_RSEQ_INDEX_MM_CID) == 0 &&
			       cl_counter_cid_init(&c_cid, c_dom, (unsigned)cl_nr_possible_cpus()) == 0,
		       "counter init: %s", strerror(errno)))
		return;
	readers_stop = 0;
	smp_thread(&reader, counter_reader, NULL);
	smp_run(nr, counter_worker, secs, 2);
	__atomic_store_n(&readers_stop, 1, __ATOMIC_RELAXED);
	pthread_join(reader, NULL);
	v_cpu = cl_counter_read(&c_cpu);
	v_mm = cl_counter_read(&c_mm);
	v_cid = cl_counter_cid_read(&c_cid);
	printf("counters: cpu_id=%lld/%lld mm_cid=%lld/%lld cid=%lld/%lld (read/added), %lu "
	       "concurrent reads, ops %s (cpu_id) %s (mm_cid)\n",
	       (long long)v_cpu, (long long)tally_cpu, (long long)v_mm, (long long)tally_mm,
	       (long long)v_cid, (long long)tally_cid, nr_reads,
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID)),
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID)));
	smp_check(v_cpu == tally_cpu, "cpu_id counter %lld, %lld added", (long long)v_cpu,
		  (long long)tally_cpu);
	smp_check(v_mm == tally_mm, "mm_cid counter %lld, %lld added", (long long)v_mm,
		  (long long)tally_mm);
	smp_check(v_cid == tally_cid, "cid counter %lld, %lld added", (long long)v_cid,
		  (long long)tally_cid);
	cl_counter_cid_destroy(&c_cid);
	cl_counter_destroy(&c_mm);
	cl_counter_destroy(&c_cpu);
	cl_cid_domain_destroy(c_dom);
	fflush(stdout);
}

/* ---- objcache ---- */

static struct cl_objcache *cache;
static int drainer_stop;
static unsigned long drains, drained, drain_einval, drain_enosys, drain_other, oc_ops, oc_total;

static void *oc_worker(void *arg)
{
	int idx = (int)(uintptr_t)arg;
	uint64_t *held[HOLD] = { 0 };
	uint64_t me = (uint64_t)idx + 1;
	unsigned long i;
	unsigned seed;

	worker_start(idx, &seed);
	smp_barrier();
	for (i = 0; !smp_stopping(); i++) {
		unsigned k = smp_rand(&seed) % HOLD;

		if (i % 64 == 63)
			smp_flip(&cpus, &seed);
		if (held[k]) {
			uint64_t was = __atomic_exchange_n(&held[k][0], 0, __ATOMIC_RELAXED);

			smp_check(was == me && held[k][1] == me,
				  "object %p freed by worker %d but tagged %llu", (void *)held[k], idx,
				  (unsigned long long)was);
			cl_objcache_free(cache, held[k]);
			held[k] = NULL;
		} else {
			uint64_t *o = cl_objcache_alloc(cache);
			uint64_t was = 0;

			if (!smp_check(o != NULL, "alloc failed: %s", strerror(errno)))
				break;
			if (!__atomic_compare_exchange_n(&o[0], &was, me, 0, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED)) {
				smp_check(0, "object %p handed to worker %d while worker %llu holds it",
					  (void *)o, idx, (unsigned long long)was - 1);
				continue; /* leave it with its owner */
			}
			o[1] = me; /* plain: a TSan build checks the hand-over */
			held[k] = o;
		}
	}
	for (int k = 0; k < HOLD; k++)
		if (held[k]) {
			__atomic_store_n(&held[k][0], 0, __ATOMIC_RELAXED);
			cl_objcache_free(cache, held[k]);
		}
	__atomic_fetch_add(&oc_ops, i, __ATOMIC_RELAXED);
	worker_end();
	return NULL;
}

static void *drainer(void *arg)
{
	unsigned nr = cl_nr_possible_cpus(), seed = 777;

	(void)arg;
	while (!__atomic_load_n(&drainer_stop, __ATOMIC_RELAXED)) {
		int m = cl_objcache_drain_cpu(cache, (int)(smp_rand(&seed) % nr));

		sched_yield(); /* keep draining, but let the workers run on a small machine */
		if (m >= 0) {
			drains++;
			drained += (unsigned long)m;
		} else if (errno == EINVAL) {
			drain_einval++;
		} else if (errno == ENOSYS) {
			drain_enosys++;
		} else {
			drain_other++;
		}
	}
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

/* Drain every CPU, then take every object out once: each must come exactly once. */
static void oc_account(const char *kind)
{
	struct cl_objcache_stats st;
	unsigned nr = cl_nr_possible_cpus();
	size_t n, dup = 0, tagged = 0;
	void **all;

	for (unsigned c = 0; c < nr; c++)
		if (cl_objcache_drain_cpu(cache, (int)c) < 0) {
			printf("objcache[%s]: drain of cpu %u refused (%s): per-object accounting "
			       "left out\n", kind, c, strerror(errno));
			return;
		}
	cl_objcache_stats(cache, &st);
	smp_check(st.nr_depot == st.nr_objects && st.nr_cached == 0,
		  "objcache[%s]: after draining every CPU the depot holds %zu of %zu objects (%zu cached)",
		  kind, st.nr_depot, st.nr_objects, st.nr_cached);
	n = st.nr_objects;
	all = calloc(n ? n : 1, sizeof(*all));
	if (!smp_check(all != NULL, "out of memory"))
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t *o = cl_objcache_alloc(cache);

		if (!smp_check(o != NULL, "objcache[%s]: alloc %zu of %zu failed", kind, i, n))
			n = i;
		else
			all[i] = o;
		if (o && __atomic_load_n(&o[0], __ATOMIC_RELAXED) != 0)
			tagged++;
	}
	qsort(all, n, sizeof(*all), cmp_ptr);
	for (size_t i = 1; i < n; i++)
		dup += all[i] == all[i - 1];
	cl_objcache_stats(cache, &st);
	printf("objcache[%s]: took all %zu objects out once: %zu duplicates, %zu still tagged, "
	       "%zu carved now\n", kind, n, dup, tagged, st.nr_objects);
	smp_check(dup == 0 && tagged == 0 && st.nr_objects == n,
		  "objcache[%s]: %zu duplicate objects, %zu tagged, %zu carved for %zu taken", kind, dup,
		  tagged, st.nr_objects, n);
	for (size_t i = 0; i < n; i++)
		cl_objcache_free(cache, all[i]);
	free(all);
}

static void test_objcache(int nr, double secs, enum cl_rseq_index idx)
{
	const char *kind = idx == CL_RSEQ_INDEX_MM_CID ? "mm_cid" : "cpu_id";
	struct cl_objcache_attr attr = { 64, 0, 16, idx };
	struct cl_objcache_stats st;
	pthread_t d;

	cache = cl_objcache_create(&attr);
	if (!smp_check(cache != NULL, "cl_objcache_create: %s", strerror(errno)))
		return;
	drains = drained = drain_einval = drain_enosys = drain_other = oc_ops = 0;
	drainer_stop = 0;
	smp_thread(&d, drainer, NULL);
	smp_run(nr, oc_worker, secs, 1);
	__atomic_store_n(&drainer_stop, 1, __ATOMIC_RELAXED);
	pthread_join(d, NULL);
	cl_objcache_stats(cache, &st);
	oc_total += oc_ops;
	printf("objcache[%s]: %lu ops, drain fence %d, %lu drains moved %lu (EINVAL %lu, ENOSYS %lu, "
	       "other %lu); %zu objects: %zu depot %zu cached %zu out; %zu refills %zu spills %zu "
	       "direct %zu bad frees\n",
	       kind, oc_ops, st.drain_fence, drains, drained, drain_einval, drain_enosys, drain_other,
	       st.nr_objects, st.nr_depot, st.nr_cached, st.nr_out, st.nr_refills, st.nr_spills,
	       st.nr_direct, st.nr_bad_frees);
	smp_check(st.nr_out == 0 && st.nr_objects == st.nr_depot + st.nr_cached,
		  "objcache[%s]: %zu objects but %zu depot + %zu cached (%zu out)", kind, st.nr_objects,
		  st.nr_depot, st.nr_cached, st.nr_out);
	smp_check(drain_other == 0 && st.nr_bad_frees == 0,
		  "objcache[%s]: %lu drain errors, %zu bad frees", kind, drain_other, st.nr_bad_frees);
	smp_check(st.drain_fence == CL_OBJCACHE_DRAIN_NONE || drain_enosys == 0,
		  "objcache[%s]: drain said ENOSYS with fence %d", kind, st.drain_fence);
	if (st.nr_out == 0) /* (else objects are missing already: counting them again says nothing) */
		oc_account(kind);
	smp_check(cl_objcache_destroy(cache) == 0, "objcache[%s]: destroy refused: %s", kind,
		  strerror(errno));
	fflush(stdout);
}

/* ---- brlock ---- */

static struct cl_brlock lock;
static int readers, writer, writers_stop;
static unsigned long nr_rsec, nr_wsec;

static void *br_reader(void *arg)
{
	int idx = (int)(uintptr_t)arg;
	unsigned long n = 0;
	unsigned seed;

	worker_start(idx, &seed);
	smp_barrier();
	while (!smp_stopping()) {
		int t;

		if (n % 64 == 63)
			smp_flip(&cpus, &seed);
		t = cl_brlock_read_lock(&lock);
		if (!smp_check(t >= 0, "read_lock: %s", strerror(errno)))
			break;
		__atomic_fetch_add(&readers, 1, __ATOMIC_SEQ_CST);
		smp_check(!__atomic_load_n(&writer, __ATOMIC_SEQ_CST), "a reader saw a writer inside");
		for (int k = 0; k < 16; k++)
			__asm__ __volatile__("" ::: "memory");
		smp_check(!__atomic_load_n(&writer, __ATOMIC_SEQ_CST), "a reader saw a writer inside");
		__atomic_fetch_sub(&readers, 1, __ATOMIC_SEQ_CST);
		cl_brlock_read_unlock(&lock, t);
		n++;
	}
	__atomic_fetch_add(&nr_rsec, n, __ATOMIC_RELAXED);
	worker_end();
	return NULL;
}

static void *br_writer(void *arg)
{
	unsigned long n = 0;
	struct timespec nap = { 0, 100000 };

	(void)arg;
	while (!__atomic_load_n(&writers_stop, __ATOMIC_RELAXED)) {
		if (!smp_check(cl_brlock_write_lock(&lock) == 0, "write_lock: %s", strerror(errno)))
			break;
		smp_check(__atomic_load_n(&readers, __ATOMIC_SEQ_CST) == 0, "a writer saw readers inside");
		smp_check(__atomic_exchange_n(&writer, 1, __ATOMIC_SEQ_CST) == 0, "two writers inside");
		for (int k = 0; k < 64; k++)
			__asm__ __volatile__("" ::: "memory");
		smp_check(__atomic_load_n(&readers, __ATOMIC_SEQ_CST) == 0, "a writer saw readers inside");
		__atomic_store_n(&writer, 0, __ATOMIC_SEQ_CST);
		cl_brlock_write_unlock(&lock);
		n++;
		nanosleep(&nap, NULL); /* read-mostly: let the readers in */
	}
	__atomic_fetch_add(&nr_wsec, n, __ATOMIC_RELAXED);
	return NULL;
}

static void test_brlock(int nr, double secs, int nr_writers)
{
	pthread_t w[64];

	if (!smp_check(cl_brlock_init(&lock) == 0, "cl_brlock_init: %s", strerror(errno)))
		return;
	writers_stop = 0;
	for (int i = 0; i < nr_writers; i++)
		smp_thread(&w[i], br_writer, NULL);
	smp_run(nr, br_reader, secs, 1);
	__atomic_store_n(&writers_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nr_writers; i++)
		pthread_join(w[i], NULL);
	printf("brlock: mode %s, %d readers, %d writers: %lu read sections, %lu write sections\n",
	       cl_brlock_mode(&lock) == CL_BRLOCK_MEMBARRIER ? "membarrier" : "fence", nr, nr_writers,
	       nr_rsec, nr_wsec);
	smp_check(nr_wsec > 0 && nr_rsec > 0, "brlock: no %s section ran", nr_wsec ? "read" : "write");
	cl_brlock_destroy(&lock);
	fflush(stdout);
}

int main(void)
{
	long nr_writers = smp_env_long("WRITERS", 2);
	double secs = smp_duration() / 3;

	smp_banner(NAME);
	smp_online_cpus(&cpus);
	if (nr_writers < 1)
		nr_writers = 1;
	if (nr_writers > 64)
		nr_writers = 64;
	printf("%s: %d workers (one per online CPU), ops %s (cpu_id) %s (mm_cid)\n", NAME, cpus.nr,
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_CPU_ID)),
	       cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(CL_RSEQ_INDEX_MM_CID)));
	test_counters(cpus.nr, secs);
	test_objcache(cpus.nr, secs / 2, CL_RSEQ_INDEX_CPU_ID);
	test_objcache(cpus.nr, secs / 2, CL_RSEQ_INDEX_MM_CID);
	test_brlock(cpus.nr, secs, (int)nr_writers);
	printf("rseq aborts: %lu\n", all_aborts);
	return smp_finish(NAME, "counters exact, objcache %lu ops, brlock %lu/%lu sections, %lu aborts",
			  oc_total, nr_rsec, nr_wsec, all_aborts);
}
