/* SPDX-License-Identifier: MIT */
/*
 * smp_topology - what topology.h reports equals the machine's sysfs, parsed
 * again here independently of the library:
 *
 *   possible/present/online  devices/system/cpu/{possible,present,online}
 *   SMT siblings             cpuN/topology/core_cpus_list, else
 *                            thread_siblings_list, else same
 *                            (physical_package_id, core_id)
 *   L2, LLC                  cpuN/cache/indexM with type Data or Unified:
 *                            level 2, and the highest level, shared_cpu_list
 *   nodes                    devices/system/node/online, nodeK/cpulist,
 *                            nodeK/distance (printed: the API has no distances)
 *
 * Asserted, for every pair of online CPUs a, b: same core id <=> b in a's
 * sibling list; same L2 id <=> b in a's L2 list; same LLC id <=> b in a's
 * LLC list; node id = the node whose cpulist names the CPU; counts of
 * possible/present/online CPUs, of nodes, and (when every possible CPU is
 * online) of cores, L2s and LLCs; the fallback bits say exactly which parts
 * sysfs lacked.
 *
 * CPU hotplug (the guests' fault injector) changes the files between two
 * reads: the comparison runs in rounds (read online, parse, load, read
 * online again); a round counts only if the online set stayed the same
 * through it. The first round that is stable, matches and has every possible
 * CPU online ends the search; else, after ROUNDS rounds, the last stable
 * matching round is used (counts then over the online CPUs, with a note);
 * stable rounds that all mismatch are a failure (a real mismatch shows in
 * every round, a hotplug race only in some); no stable round at all is a
 * skip (77): the online set changed during every round, nothing could be
 * compared (the topology line then comes from the last round, with a note).
 *
 * Knobs: ROUNDS (default 50; 20 ms apart while CPUs are offline),
 * SYSFS_ROOT (default "/sys": a fake tree such as tests/data/<name>, read by
 * both sides).
 *
 * Output: exactly one line `topology: cpus=N llcs=L nodes=M smt=S`
 * (N possible CPUs, L last-level caches, M NUMA nodes online, S threads per
 * core: the largest SMT sibling group), then per-node CPU lists and
 * distances, then PASS/FAIL.
 */
#include "smp.h"

#include <cachelocal/topology.h>

#define NAME "smp_topology"
#define MAX_NODES 1024

/* What sysfs says, parsed here. */
struct sysview {
	unsigned char possible[SMP_MAX_CPUS], present[SMP_MAX_CPUS], online[SMP_MAX_CPUS];
	int nr_possible, nr_present, nr_online, max_possible;
	int has_core, has_l2, has_llc, has_node; /* any online CPU had the files */
	unsigned char *core, *l2, *llc;          /* [SMP_MAX_CPUS * SMP_MAX_CPUS] when set */
	int node_of[SMP_MAX_CPUS];
	int nr_nodes;
	int node_id[MAX_NODES];
	char node_cpus[MAX_NODES][256], node_dist[MAX_NODES][256];
};

static const char *root = "/sys";
static int nr_ids; /* CPU ids handled: max possible + 1 */

static unsigned char *row(unsigned char *m, int cpu)
{
	return m + (size_t)cpu * (size_t)nr_ids;
}

static int cpath(char *buf, size_t n, const char *fmt, int a, int b)
{
	char tail[256];

	snprintf(tail, sizeof(tail), fmt, a, b);
	return snprintf(buf, n, "%s/devices/system/%s", root, tail) < (int)n ? 0 : -1;
}

/* Sibling list from (package, core_id): -1 if those files are missing. */
static int siblings_by_id(struct sysview *v, int cpu, unsigned char *set)
{
	char p[512], b[64];
	int pkg, core;

	if (cpath(p, sizeof(p), "cpu/cpu%d/topology/physical_package_id", cpu, 0) ||
	    smp_read_file(p, b, sizeof(b)))
		return -1;
	pkg = atoi(b);
	if (cpath(p, sizeof(p), "cpu/cpu%d/topology/core_id", cpu, 0) || smp_read_file(p, b, sizeof(b)))
		return -1;
	core = atoi(b);
	memset(set, 0, SMP_MAX_CPUS);
	for (int c = 0; c < nr_ids; c++) {
		char b2[64];

		if (!v->online[c])
			continue;
		if (cpath(p, sizeof(p), "cpu/cpu%d/topology/physical_package_id", c, 0) ||
		    smp_read_file(p, b2, sizeof(b2)) || atoi(b2) != pkg)
			continue;
		if (cpath(p, sizeof(p), "cpu/cpu%d/topology/core_id", c, 0) ||
		    smp_read_file(p, b2, sizeof(b2)) || atoi(b2) != core)
			continue;
		set[c] = 1;
	}
	return 0;
}

/* The L2 and highest-level Data/Unified cache lists of @cpu. */
static void caches(int cpu, unsigned char *l2, int *has_l2, unsigned char *llc, int *has_llc)
{
	int best = -1;

	*has_l2 = *has_llc = 0;
	for (int i = 0; i < 16; i++) {
		char p[512], b[64], list[8192];
		unsigned char set[SMP_MAX_CPUS];
		int level;

		if (cpath(p, sizeof(p), "cpu/cpu%d/cache/index%d/level", cpu, i) ||
		    smp_read_file(p, b, sizeof(b)))
			continue;
		level = atoi(b);
		if (cpath(p, sizeof(p), "cpu/cpu%d/cache/index%d/type", cpu, i) ||
		    smp_read_file(p, b, sizeof(b)) || (strcmp(b, "Data") && strcmp(b, "Unified")))
			continue;
		if (cpath(p, sizeof(p), "cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, i) ||
		    smp_read_file(p, list, sizeof(list)) || smp_parse_cpulist(list, set) <= 0)
			continue;
		if (level == 2) {
			memcpy(l2, set, (size_t)nr_ids);
			*has_l2 = 1;
		}
		if (level > best) {
			best = level;
			memcpy(llc, set, (size_t)nr_ids);
			*has_llc = 1;
		}
	}
}

static int sys_read(struct sysview *v)
{
	char p[512], list[8192];
	unsigned char set[SMP_MAX_CPUS];

	snprintf(p, sizeof(p), "%s/devices/system/cpu/possible", root);
	v->nr_possible = smp_read_cpulist(p, v->possible);
	snprintf(p, sizeof(p), "%s/devices/system/cpu/present", root);
	v->nr_present = smp_read_cpulist(p, v->present);
	snprintf(p, sizeof(p), "%s/devices/system/cpu/online", root);
	v->nr_online = smp_read_cpulist(p, v->online);
	if (v->nr_possible <= 0 || v->nr_present < 0 || v->nr_online <= 0)
		return -1;
	v->has_core = v->has_l2 = v->has_llc = 0;
	for (int c = 0; c < nr_ids; c++) {
		int h2, hl;

		if (!v->online[c])
			continue;
		memset(row(v->core, c), 0, (size_t)nr_ids);
		if ((!cpath(p, sizeof(p), "cpu/cpu%d/topology/core_cpus_list", c, 0) &&
		     !smp_read_file(p, list, sizeof(list)) && smp_parse_cpulist(list, set) > 0) ||
		    (!cpath(p, sizeof(p), "cpu/cpu%d/topology/thread_siblings_list", c, 0) &&
		     !smp_read_file(p, list, sizeof(list)) && smp_parse_cpulist(list, set) > 0) ||
		    siblings_by_id(v, c, set) == 0) {
			memcpy(row(v->core, c), set, (size_t)nr_ids);
			v->has_core = 1;
		}
		memset(row(v->l2, c), 0, (size_t)nr_ids);
		memset(row(v->llc, c), 0, (size_t)nr_ids);
		caches(c, row(v->l2, c), &h2, row(v->llc, c), &hl);
		v->has_l2 |= h2;
		v->has_llc |= hl;
	}
	/* nodes */
	for (int c = 0; c < nr_ids; c++)
		v->node_of[c] = -1;
	v->nr_nodes = 0;
	v->has_node = 0;
	snprintf(p, sizeof(p), "%s/devices/system/node/online", root);
	if (smp_read_cpulist(p, set) > 0) { /* node numbers use the CPU list syntax */
		v->has_node = 1;
		for (int k = 0; k < SMP_MAX_CPUS && k < MAX_NODES; k++) {
			unsigned char cpus[SMP_MAX_CPUS];

			if (!set[k])
				continue;
			v->node_id[v->nr_nodes] = k;
			v->node_cpus[v->nr_nodes][0] = v->node_dist[v->nr_nodes][0] = 0;
			if (!cpath(p, sizeof(p), "node/node%d/cpulist", k, 0) &&
			    !smp_read_file(p, list, sizeof(list))) {
				snprintf(v->node_cpus[v->nr_nodes], 256, "%s", list);
				if (smp_parse_cpulist(list, cpus) > 0)
					for (int c = 0; c < nr_ids; c++)
						if (cpus[c])
							v->node_of[c] = k;
			}
			if (!cpath(p, sizeof(p), "node/node%d/distance", k, 0) &&
			    !smp_read_file(p, list, sizeof(list)))
				snprintf(v->node_dist[v->nr_nodes], 256, "%s", list);
			v->nr_nodes++;
		}
	}
	return 0;
}

static int same_set(const unsigned char *a, const unsigned char *b)
{
	return memcmp(a, b, (size_t)nr_ids) == 0;
}

/* One round's findings. */
struct round {
	int stable, full, mismatches;
	char first[512];
	unsigned cpus, llcs, nodes, smt;
};

static void mismatch(struct round *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mismatch(struct round *r, const char *fmt, ...)
{
	va_list ap;

	if (r->mismatches++ == 0) {
		va_start(ap, fmt);
		vsnprintf(r->first, sizeof(r->first), fmt, ap);
		va_end(ap);
	}
}

/* Distinct values of id(c) over the online CPUs c. */
static unsigned distinct(const struct cl_topology *t, const struct sysview *v, int which)
{
	int lim = nr_ids < (int)t->nr_cpu_ids ? nr_ids : (int)t->nr_cpu_ids;
	unsigned n = 0;

	for (int c = 0; c < lim; c++) {
		int id, seen = 0;

		if (!v->online[c])
			continue;
		id = which == 0 ? t->cpu[c].core : which == 1 ? t->cpu[c].l2 : t->cpu[c].llc;
		for (int d = 0; d < c && !seen; d++)
			if (v->online[d])
				seen = id == (which == 0 ? t->cpu[d].core : which == 1 ? t->cpu[d].l2 : t->cpu[d].llc);
		n += !seen;
	}
	return n;
}

static void compare(const struct sysview *v, const struct cl_topology *t, struct round *r)
{
	int lim = nr_ids < (int)t->nr_cpu_ids ? nr_ids : (int)t->nr_cpu_ids; /* CPU ids both have */
	unsigned smt = 0;

	if (t->nr_cpu_ids != (unsigned)nr_ids)
		mismatch(r, "nr_cpu_ids %u, sysfs possible ends at %d", t->nr_cpu_ids, nr_ids - 1);
	if (t->nr_possible != (unsigned)v->nr_possible)
		mismatch(r, "nr_possible %u, sysfs %d", t->nr_possible, v->nr_possible);
	if (t->nr_present != (unsigned)v->nr_present)
		mismatch(r, "nr_present %u, sysfs %d", t->nr_present, v->nr_present);
	if (t->nr_online != (unsigned)v->nr_online)
		mismatch(r, "nr_online %u, sysfs %d", t->nr_online, v->nr_online);
	if (v->has_node && t->nr_nodes != (unsigned)v->nr_nodes)
		mismatch(r, "nr_nodes %u, sysfs %d", t->nr_nodes, v->nr_nodes);
	if (!!(t->fallback & CL_TOPO_FALLBACK_LLC) != !v->has_llc)
		mismatch(r, "fallback bits %#x but sysfs %s cache information", t->fallback,
			 v->has_llc ? "has" : "lacks");
	if (!!(t->fallback & CL_TOPO_FALLBACK_CORE) != !v->has_core)
		mismatch(r, "fallback bits %#x but sysfs %s SMT information", t->fallback,
			 v->has_core ? "has" : "lacks");
	if (!!(t->fallback & CL_TOPO_FALLBACK_NODE) != !v->has_node)
		mismatch(r, "fallback bits %#x but sysfs %s node information", t->fallback,
			 v->has_node ? "has" : "lacks");
	for (int a = 0; a < lim; a++) {
		unsigned in_core = 0;
		int want_node;

		if (t->cpu[a].possible != v->possible[a] || t->cpu[a].present != v->present[a] ||
		    t->cpu[a].online != v->online[a])
			mismatch(r, "cpu %d: possible/present/online %d/%d/%d, sysfs %d/%d/%d", a,
				 t->cpu[a].possible, t->cpu[a].present, t->cpu[a].online,
				 v->possible[a], v->present[a], v->online[a]);
		if (!v->online[a])
			continue;
		want_node = v->has_node && v->node_of[a] >= 0 ? v->node_of[a] : 0;
		if (t->cpu[a].node != want_node)
			mismatch(r, "cpu %d: node %d, sysfs node%d/cpulist", a, t->cpu[a].node, want_node);
		for (int b = 0; b < lim; b++) {
			int lib, sys;

			if (!v->online[b])
				continue;
			lib = t->cpu[a].core == t->cpu[b].core;
			sys = v->has_core ? row(v->core, a)[b] : a == b;
			in_core += (unsigned)lib;
			if (lib != sys)
				mismatch(r, "cpus %d,%d: same core %d, sysfs siblings %d", a, b, lib, sys);
			lib = t->cpu[a].llc == t->cpu[b].llc;
			sys = v->has_llc ? row(v->llc, a)[b] : 1;
			if (lib != sys)
				mismatch(r, "cpus %d,%d: same LLC %d, sysfs shared_cpu_list %d", a, b, lib, sys);
			if (v->has_l2) {
				lib = t->cpu[a].l2 == t->cpu[b].l2;
				sys = row(v->l2, a)[b];
				if (lib != sys)
					mismatch(r, "cpus %d,%d: same L2 %d, sysfs L2 list %d", a, b, lib, sys);
			}
		}
		if (in_core > smt)
			smt = in_core;
	}
	r->full = v->nr_online == v->nr_possible;
	r->cpus = t->nr_possible;
	r->nodes = t->nr_nodes;
	r->smt = smt;
	r->llcs = distinct(t, v, 2);
	if (r->full) {
		if (t->nr_cores != distinct(t, v, 0))
			mismatch(r, "nr_cores %u, distinct core ids %u", t->nr_cores, distinct(t, v, 0));
		if (t->nr_l2s != distinct(t, v, 1))
			mismatch(r, "nr_l2s %u, distinct L2 ids %u", t->nr_l2s, distinct(t, v, 1));
		if (t->nr_llcs != r->llcs)
			mismatch(r, "nr_llcs %u, distinct LLC ids %u", t->nr_llcs, r->llcs);
		if (t->fallback & CL_TOPO_FALLBACK_PARTIAL)
			mismatch(r, "every CPU online but CL_TOPO_FALLBACK_PARTIAL set");
	}
}

static int run(struct sysview *v, struct sysview *kept)
{
	long rounds = smp_env_long("ROUNDS", 50);
	struct round r, best, last;
	int have = 0, n_stable = 0;
	const char *env = getenv("SYSFS_ROOT");
	char p[512];
	unsigned char possible[SMP_MAX_CPUS];

	if (env && *env)
		root = env;
	smp_banner(NAME);
	snprintf(p, sizeof(p), "%s/devices/system/cpu/possible", root);
	if (smp_read_cpulist(p, possible) <= 0)
		return smp_fatal(NAME, "cannot read %s", p);
	for (int c = 0; c < SMP_MAX_CPUS; c++)
		if (possible[c])
			nr_ids = c + 1;
	v->core = calloc((size_t)nr_ids * (size_t)nr_ids, 1);
	v->l2 = calloc((size_t)nr_ids * (size_t)nr_ids, 1);
	v->llc = calloc((size_t)nr_ids * (size_t)nr_ids, 1);
	if (!v->core || !v->l2 || !v->llc)
		return smp_fatal(NAME, "out of memory");
	memset(&best, 0, sizeof(best));
	if (rounds < 1)
		rounds = 1;
	for (long i = 0; i < rounds; i++) {
		unsigned char before[SMP_MAX_CPUS], after[SMP_MAX_CPUS];
		struct cl_topology t;

		memset(&r, 0, sizeof(r));
		snprintf(p, sizeof(p), "%s/devices/system/cpu/online", root);
		smp_read_cpulist(p, before);
		if (sys_read(v) != 0)
			return smp_fatal(NAME, "cannot parse %s/devices/system/cpu", root);
		if (cl_topology_load(&t, env && *env ? root : NULL) != 0)
			return smp_fatal(NAME, "cl_topology_load: %s", strerror(errno));
		smp_read_cpulist(p, after);
		r.stable = same_set(before, after) && same_set(before, v->online);
		n_stable += r.stable;
		compare(v, &t, &r); /* (an unstable round's mismatches are not held against it) */
		last = r;
		cl_topology_free(&t);
		if (r.stable && r.mismatches == 0) {
			best = r;
			have = 1;
			/* keep the sysfs view of the round used, for the node lines */
			kept->nr_nodes = v->nr_nodes;
			memcpy(kept->node_id, v->node_id, sizeof(v->node_id));
			memcpy(kept->node_cpus, v->node_cpus, sizeof(v->node_cpus));
			memcpy(kept->node_dist, v->node_dist, sizeof(v->node_dist));
			if (r.full)
				break;
		} else if (r.stable) {
			printf("round %ld: %d mismatch(es), first: %s\n", i, r.mismatches, r.first);
		}
		if (i + 1 < rounds) {
			struct timespec nap = { 0, 20 * 1000 * 1000 };

			nanosleep(&nap, NULL);
		}
	}
	if (!have) {
		/* the line the host script parses, from the last round (not a match) */
		printf("topology: cpus=%u llcs=%u nodes=%u smt=%u\n", last.cpus, last.llcs, last.nodes,
		       last.smt);
		printf("topology note: from the last round, over its online CPUs, not confirmed by sysfs\n");
		if (!n_stable)
			return smp_skip(NAME, "the online CPUs changed during each of %ld rounds (CPU "
					      "hotplug): nothing could be compared", rounds);
		smp_check(0, "%d stable round(s), none matched: %s", n_stable, r.first);
		return smp_finish(NAME, "mismatch");
	}
	printf("topology: cpus=%u llcs=%u nodes=%u smt=%u\n", best.cpus, best.llcs, best.nodes, best.smt);
	if (!best.full)
		printf("topology note: CPUs were offline in every stable round: llcs and smt are "
		       "counted over the online CPUs\n");
	for (int k = 0; k < kept->nr_nodes; k++)
		printf("node %d: cpus %s distance %s\n", kept->node_id[k],
		       kept->node_cpus[k][0] ? kept->node_cpus[k] : "-",
		       kept->node_dist[k][0] ? kept->node_dist[k] : "-");
	return smp_finish(NAME, "cpus=%u llcs=%u nodes=%u smt=%u match sysfs (%d stable round(s))",
			  best.cpus, best.llcs, best.nodes, best.smt, n_stable);
}

int main(void)
{
	struct sysview *v = calloc(1, sizeof(*v)), *kept = calloc(1, sizeof(*kept));
	int rc = v && kept ? run(v, kept) : smp_fatal(NAME, "out of memory");

	if (v) {
		free(v->core);
		free(v->l2);
		free(v->llc);
	}
	free(v);
	free(kept);
	return rc;
}
