/* SPDX-License-Identifier: MIT */
/*
 * bench/cid_sim.c - T3 on simulated many-core machines: where does the data
 * indexed by a cid come from at each burst?
 *
 * bench/cid_bursts.c runs the kernel's recent_cid experiment (kernel-changes.md,
 * T3) on the real CPUs: two here. This one replays the same schedule on the
 * machines of the kernel's table, from the fake sysfs trees of tests/data
 * (cl_topology_load()), with cid domains built on that topology
 * (cl_cid_domain_create(policy, &topo)) and one simulated thread per CPU
 * acting through cl_cid_acquire_on(d, cpu):
 *
 *   8 cores / 1 L3        tests/data/8core-1l3, one CPU per core (8 threads)
 *   24 cores / 24 L3      tests/data/24core-24l3 (24 threads)
 *   192 cores / 24 L3     tests/data/epyc9654-2s, one CPU per core (192)
 *   384 threads / 24 L3   tests/data/epyc9654-2s, every CPU (384)
 *
 * Each thread is pinned to its own CPU (it joins with a one-CPU mask:
 * cl_cid_domain_join_cpus()), so the domain's bound is the thread count.
 * Bursts run one after another: each round every thread bursts once, in a
 * random order (a fixed seed per run: run r uses seed 1 + r). A burst
 * acquires a cid on its CPU, "touches" the item of that cid and releases
 * it. Per item we remember the CPU of its previous burst and classify the
 * burst: same CPU (the data is in this CPU's caches), same LLC (another CPU
 * of this L3: an L3 hit at best), cross-LLC (another L3: a remote transfer).
 * Each item's first burst has no previous CPU and is not counted.
 *
 * Indexing under test: NAIVE (lowest free cid: mm_cid before 6.13), RECENT
 * (the CPU's recent cid first: 6.13), LLC (RECENT, then a free cid last used
 * in the same LLC), and cpu_id (per-CPU data, the kernel table's reference;
 * not a cid).
 *
 * This is a deterministic simulation: it counts placements, not time; no
 * cache is simulated and the inter-burst delay of the kernel test plays no
 * part (a domain's cids do not expire; a released cid keeps its last CPU).
 * It shows where each policy puts the data, which is what the kernel table's
 * ns per burst reflect on real hardware. "runs" are repetitions with
 * different seeds; the reported number is the median over them.
 *
 * Two more schedules go beyond the kernel test:
 *   ovl  as the kernel test, but each burst holds its cid while the next 3
 *        start (4 holders at a time; a thread's next burst waits for its
 *        previous one): a CPU's recent cid stays its own (RECENT = cpu_id).
 *   flt  a quarter as many threads as CPUs (bound = threads), each allowed
 *        on every CPU of the config; each burst wakes on a random CPU that
 *        no running burst occupies; 4 holders at a time. A CPU's recent
 *        cid is now often held elsewhere or was last used on another CPU:
 *        this is where LLC (a free cid last used in this L3) differs from
 *        RECENT, and where cids cannot match cpu_id (whose index space is
 *        4x larger).
 * Ratios: same-CPU fraction of each policy / cpu_id's (1.00x = as local as
 * per-CPU data) and cross-LLC fraction NAIVE / policy (printed without a
 * number when the policy has no cross-LLC burst).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/cid.h>
#include <cachelocal/topology.h>

#include "bench.h"

#ifndef CL_TEST_DATA_DIR
#define CL_TEST_DATA_DIR "tests/data"
#endif

#define OVERLAP 4

enum schedule { S_SERIAL, S_OVERLAP, S_FLOAT, S_NR };
static const char *const s_name[S_NR] = { "ser", "ovl", "flt" };

enum ix { IX_NAIVE, IX_RECENT, IX_LLC, IX_CPU_ID, IX_NR };
static const char *const ix_name[IX_NR] = { "NAIVE", "RECENT", "LLC", "cpu_id" };
enum where { W_SAME_CPU, W_SAME_LLC, W_CROSS_LLC, W_NR };
static const char *const w_name[W_NR] = { "same CPU", "same LLC", "cross-LLC" };

struct config {
	const char *label;
	const char *tree;
	int one_per_core; /* 1: the lowest CPU id of each core; 0: every CPU */
};

static const struct config configs[] = {
	{ "8 cores/1 L3", "8core-1l3", 1 },
	{ "24 cores/24 L3", "24core-24l3", 1 },
	{ "192 cores/24 L3", "epyc9654-2s", 1 },
	{ "384 threads/24 L3", "epyc9654-2s", 0 },
};
#define NR_CONFIGS ((int)(sizeof(configs) / sizeof(configs[0])))

/* xorshift64*: a fixed, portable sequence per seed. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void shuffle(int *v, int n, uint64_t *s)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rng_next(s) % (uint64_t)(i + 1)), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* The simulated threads' CPUs for a config; returns the count. */
static int pick_cpus(const struct cl_topology *t, int one_per_core, int *cpus)
{
	int n = 0;
	unsigned char *seen = calloc(t->nr_cores + 1, 1);

	if (!seen)
		return -1;
	for (unsigned c = 0; c < t->nr_cpu_ids; c++) {
		const struct cl_cpu_info *ci = &t->cpu[c];

		if (!ci->possible)
			continue;
		if (one_per_core) {
			if (ci->core < 0 || seen[ci->core])
				continue;
			seen[ci->core] = 1;
		}
		cpus[n++] = (int)c;
	}
	free(seen);
	return n;
}

static int in(const int *v, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

/* Threads of the float schedule: a quarter of the CPUs, at least 2. */
static int float_threads(int nr)
{
	return nr / 4 > 2 ? nr / 4 : 2;
}

/*
 * One run: rounds x nr bursts, random order per round. Fills frac[W_NR] with
 * percentages of the counted bursts. Returns 0, or -1 (a cid call failed).
 */
static int run_once(const struct cl_topology *t, const int *cpus, int nr, enum ix ix,
		    enum schedule sched, int rounds, uint64_t seed, double frac[W_NR],
		    unsigned *max_cid)
{
	const int overlap = sched != S_SERIAL;
	const int nthreads = sched == S_FLOAT ? float_threads(nr) : nr;
	struct cl_cid_domain *d = NULL;
	int *order = malloc((size_t)nr * sizeof(int));
	int *last = malloc((size_t)t->nr_cpu_ids * sizeof(int)); /* item -> CPU of last burst */
	int held_cid[OVERLAP], held_cpu[OVERLAP], held_thr[OVERLAP];
	int *thr = malloc((size_t)nr * sizeof(int));
	unsigned long long count[W_NR] = { 0 }, total = 0;
	int nheld = 0, rc = -1;
	unsigned words = (t->nr_cpu_ids + 8 * sizeof(unsigned long) - 1) / (8 * sizeof(unsigned long));
	unsigned long *mask = calloc(words, sizeof(unsigned long));

	*max_cid = 0;
	if (!order || !last || !mask || !thr)
		goto out;
	for (int i = 0; i < nthreads; i++)
		thr[i] = i;
	for (unsigned i = 0; i < t->nr_cpu_ids; i++)
		last[i] = -1;
	if (ix != IX_CPU_ID) {
		static const enum cl_cid_policy pol[3] = { CL_CID_NAIVE, CL_CID_RECENT, CL_CID_LLC };

		d = cl_cid_domain_create(pol[ix], t);
		if (!d)
			goto out;
		/* serial/overlap: thread i pinned to cpus[i]; float: every thread
		 * allowed on every CPU of the config */
		for (int i = 0; i < nthreads; i++) {
			memset(mask, 0, words * sizeof(unsigned long));
			for (int k = 0; k < nr; k++)
				if (sched == S_FLOAT || k == i)
					mask[(unsigned)cpus[k] / (8 * sizeof(unsigned long))] |=
						1ul << ((unsigned)cpus[k] % (8 * sizeof(unsigned long)));
			if (cl_cid_domain_join_cpus(d, mask, words * 8 * (unsigned)sizeof(unsigned long)))
				goto out;
		}
		if (cl_cid_domain_bound(d) != (unsigned)nthreads) {
			fprintf(stderr, "cid_sim: bound %u, expected %d\n", cl_cid_domain_bound(d),
				nthreads);
			goto out;
		}
	}
	for (int i = 0; i < nr; i++)
		order[i] = cpus[i];
	for (int r = 0; r < rounds; r++) {
		shuffle(order, nr, &seed); /* ser/ovl: thread order = CPU order */
		if (sched == S_FLOAT)
			shuffle(thr, nthreads, &seed);
		for (int i = 0; i < nthreads; i++) {
			const int me = sched == S_FLOAT ? thr[i] : order[i];
			int cpu = order[i], item;

			if (ix != IX_CPU_ID) {
				/* the oldest holders finish their bursts: at most OVERLAP at
				 * once, and this thread's previous burst ends before its next */
				while (nheld == (overlap ? OVERLAP : 1) || in(held_thr, nheld, me)) {
					cl_cid_release(d, held_cid[0]);
					memmove(held_cid, held_cid + 1, (size_t)(nheld - 1) * sizeof(int));
					memmove(held_cpu, held_cpu + 1, (size_t)(nheld - 1) * sizeof(int));
					memmove(held_thr, held_thr + 1, (size_t)(nheld - 1) * sizeof(int));
					nheld--;
				}
			}
			if (sched == S_FLOAT) {
				/* the thread wakes on any CPU of the config not busy now */
				do
					cpu = cpus[rng_next(&seed) % (uint64_t)nr];
				while (in(held_cpu, nheld, cpu));
			}
			if (ix == IX_CPU_ID) {
				item = cpu;
			} else {
				item = cl_cid_acquire_on(d, cpu);
				if (item < 0 || item >= nthreads) {
					fprintf(stderr, "cid_sim: acquire on CPU %d gave %d\n", cpu, item);
					goto out;
				}
				held_thr[nheld] = me;
				held_cpu[nheld] = cpu;
				held_cid[nheld++] = item;
			}
			if ((unsigned)item > *max_cid)
				*max_cid = (unsigned)item;
			if (last[item] >= 0) {
				const int prev = last[item];

				if (prev == cpu)
					count[W_SAME_CPU]++;
				else if (t->cpu[prev].llc == t->cpu[cpu].llc)
					count[W_SAME_LLC]++;
				else
					count[W_CROSS_LLC]++;
				total++;
			}
			last[item] = cpu;
		}
	}
	for (int w = 0; w < W_NR; w++)
		frac[w] = total ? 100.0 * (double)count[w] / (double)total : 0;
	rc = 0;
out:
	if (d) {
		while (nheld > 0)
			cl_cid_release(d, held_cid[--nheld]);
		cl_cid_domain_destroy(d);
	}
	free(order);
	free(thr);
	free(last);
	free(mask);
	return rc;
}

static const char *const s_desc[S_NR] = {
	"serial: one burst at a time, each thread pinned to its own CPU (the kernel test)",
	"overlap: as serial, but 4 bursts hold cids at once",
	"float: a quarter as many threads as CPUs, allowed on all of them; each burst wakes on a random idle CPU; 4 bursts hold cids at once",
};

int main(int argc, char **argv)
{
	struct bench b;
	int rounds;

	bench_only_shared_args("cid_sim", argc, argv);
	bench_init(&b, "cid_sim", argc, argv);
	rounds = b.quick ? 50 : 1000;
	printf("# T3 simulated: deterministic placement counts (no time); %d rounds of one burst per thread per run, seeds 1..%d; first burst of each item not counted; threads column = simulated threads\n",
	       rounds, b.runs);
	for (int sched = 0; sched < S_NR; sched++) {
		printf("# schedule %s\n", s_desc[sched]);
		for (int c = 0; c < NR_CONFIGS; c++) {
			const struct config *cf = &configs[c];
			struct cl_topology topo;
			char path[1024], cname[64], placement[32];
			int *cpus, nr, nthreads;
			double med[IX_NR][W_NR];

			snprintf(path, sizeof(path), "%s/%s", CL_TEST_DATA_DIR, cf->tree);
			if (cl_topology_load(&topo, path) != 0 || topo.fallback) {
				fprintf(stderr, "cid_sim: cannot load %s\n", path);
				return 1;
			}
			cpus = malloc(topo.nr_cpu_ids * sizeof(int));
			if (!cpus)
				return 1;
			nr = pick_cpus(&topo, cf->one_per_core, cpus);
			nthreads = sched == S_FLOAT ? float_threads(nr) : nr;
			bench_progress(&b, "%s %s: %d threads, %d CPUs of %u, %u LLCs, %d runs",
				       s_name[sched], cf->label, nthreads, nr, topo.nr_cpu_ids,
				       topo.nr_llcs, b.runs);
			snprintf(placement, sizeof(placement), "sim:%s", cf->tree);
			snprintf(cname, sizeof(cname), "%s %s", s_name[sched], cf->label);
			for (int ix = 0; ix < IX_NR; ix++) {
				double sm[W_NR][BENCH_MAX_RUNS];
				unsigned max_cid = 0;

				for (int r = 0; r < b.runs; r++) {
					double f[W_NR];
					unsigned mc;

					if (run_once(&topo, cpus, nr, (enum ix)ix, (enum schedule)sched,
						     rounds, (uint64_t)r + 1, f, &mc) != 0) {
						fprintf(stderr, "cid_sim: run failed (%s)\n", ix_name[ix]);
						return 1;
					}
					if (mc > max_cid)
						max_cid = mc;
					for (int w = 0; w < W_NR; w++)
						sm[w][r] = f[w];
				}
				for (int w = 0; w < W_NR; w++) {
					char var[48];

					snprintf(var, sizeof(var), "%s %s", ix_name[ix], w_name[w]);
					med[ix][w] = bench_report(&b, cname, var, placement, nthreads,
								  sm[w], b.runs, "% bursts");
				}
				printf("#   %s: indexes used 0..%u (%s)\n", ix_name[ix], max_cid,
				       ix == IX_CPU_ID ? "CPU ids" : "cids, bound = threads");
			}
			/* vs per-CPU indexing: 1.00x = as local as cpu_id */
			for (int ix = IX_NAIVE; ix <= IX_LLC; ix++) {
				char what[64];

				snprintf(what, sizeof(what), "same-CPU %s / cpu_id", ix_name[ix]);
				bench_ratio(&b, cname, what, med[ix][W_SAME_CPU], med[IX_CPU_ID][W_SAME_CPU]);
			}
			for (int ix = IX_RECENT; ix <= IX_LLC; ix++) {
				char what[64];

				snprintf(what, sizeof(what), "cross-LLC NAIVE / %s", ix_name[ix]);
				if (med[ix][W_CROSS_LLC] > 0)
					bench_ratio(&b, cname, what, med[IX_NAIVE][W_CROSS_LLC],
						    med[ix][W_CROSS_LLC]);
				else
					printf("  ratio %-24s %-40s (no ratio: %s 0%% cross-LLC, NAIVE %.2f%%)\n",
					       cname, what, ix_name[ix], med[IX_NAIVE][W_CROSS_LLC]);
			}
			free(cpus);
			cl_topology_free(&topo);
		}
	}
	return bench_finish(&b);
}
