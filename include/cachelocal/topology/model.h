/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/topology/model.h - the model built from the files:
 * per-CPU keys turned into dense core, L2 and LLC ids, NUMA nodes, the
 * fallbacks for what is missing, and the bodies of the functions topology.h
 * declares (their kernel-doc is there).
 *
 * Part of topology.h, which is the header to include: this file compiles
 * alone but its cl__ names are not API and may change without notice.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../topology.h"

#ifndef CACHELOCAL_TOPOLOGY_MODEL_H
#define CACHELOCAL_TOPOLOGY_MODEL_H

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CL_BEGIN_DECLS

/* Node numbers probed when the node lists are missing. */
#define CL__TOPO_PROBE_NODES 64u
/* Largest node number + 1 accepted (Linux's MAX_NUMNODES tops out at 1024);
 * a node list naming a larger one is malformed. */
#define CL__TOPO_MAX_NODES 1024u

struct cl__topo_pair {
	long long key;
	unsigned cpu;
};

CL_INLINE int cl__topo_pair_cmp(const void *a, const void *b)
{
	const struct cl__topo_pair *x = (const struct cl__topo_pair *)a;
	const struct cl__topo_pair *y = (const struct cl__topo_pair *)b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->cpu < y->cpu ? -1 : (x->cpu > y->cpu ? 1 : 0);
}

/*
 * cl__topo_densify() - CPUs with equal keys[] share an id; ids are dense and
 * numbered in order of each group's lowest CPU. Only CPUs with
 * t->cpu[c].possible take part. out[c] receives the id (-1 if not possible).
 * Return: number of ids, or -1 (ENOMEM).
 */
CL_INLINE long cl__topo_densify(const struct cl_topology *t, const long long *keys, int *out)
{
	unsigned n = t->nr_cpu_ids, m = 0, i;
	struct cl__topo_pair *p = (struct cl__topo_pair *)malloc(sizeof(*p) * (n ? n : 1));
	unsigned *rep = (unsigned *)malloc(sizeof(*rep) * (n ? n : 1));
	long nr = 0;

	if (!p || !rep) {
		free(p);
		free(rep);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		out[i] = -1;
		if (t->cpu[i].possible) {
			p[m].key = keys[i];
			p[m].cpu = i;
			m++;
		}
	}
	qsort(p, m, sizeof(*p), cl__topo_pair_cmp);
	for (i = 0; i < m; i++)
		rep[p[i].cpu] = (i > 0 && p[i - 1].key == p[i].key) ? rep[p[i - 1].cpu] : p[i].cpu;
	for (i = 0; i < n; i++) {
		if (!t->cpu[i].possible)
			continue;
		out[i] = rep[i] == i ? (int)nr++ : out[rep[i]];
	}
	free(p);
	free(rep);
	return nr;
}

CL_INLINE void cl_topology_free(struct cl_topology *t)
{
	if (!t)
		return;
	free(t->cpu);
	memset(t, 0, sizeof(*t));
}

/*
 * cl__topo_assign() - dense ids of one level (0 core, 1 L2, 2 LLC) from the
 * per-CPU keys (-1: unknown). have: CPUs whose key was read. Unknown keys
 * fall back: with no key at all, one core (L2) per CPU (core) and a single
 * LLC, flagged with fb_bit; with some keys missing, a group of its own per
 * CPU (per core for L2), flagged CL_TOPO_FALLBACK_PARTIAL.
 * Return: 0, or -1 (ENOMEM).
 */
CL_INLINE int cl__topo_assign(struct cl_topology *t, long long *keys, unsigned have,
			      unsigned nr_possible, unsigned fb_bit, int level, int *ids)
{
	unsigned c;
	long nr;

	if (have == 0)
		t->fallback |= fb_bit;
	else if (have < nr_possible)
		t->fallback |= CL_TOPO_FALLBACK_PARTIAL;
	for (c = 0; c < t->nr_cpu_ids; c++) {
		if (keys[c] >= 0)
			continue;
		if (level == 2 && have == 0)
			keys[c] = 0;
		else if (level == 1 && t->cpu[c].core >= 0)
			keys[c] = (1ll << 61) + t->cpu[c].core;
		else
			keys[c] = (1ll << 61) + c; /* above every CPU id key */
	}
	nr = cl__topo_densify(t, keys, ids);
	if (nr < 0)
		return -1;
	for (c = 0; c < t->nr_cpu_ids; c++) {
		if (level == 0)
			t->cpu[c].core = ids[c];
		else if (level == 1)
			t->cpu[c].l2 = ids[c];
		else
			t->cpu[c].llc = ids[c];
	}
	if (level == 0)
		t->nr_cores = (unsigned)nr;
	else if (level == 1)
		t->nr_l2s = (unsigned)nr;
	else
		t->nr_llcs = (unsigned)nr;
	return 0;
}

/* Cores, L2s, LLCs of every possible CPU. 0 or -1 (ENOMEM). */
CL_INLINE int cl__topo_load_caches(struct cl_topology *t, const char *root)
{
	unsigned n = t->nr_cpu_ids, c, idx, have_core = 0, have_l2 = 0, have_llc = 0, nr_possible = 0;
	/* calloc, not malloc: every key is set below, but gcc 12 at -O2 cannot
	   see it once this is inlined into a larger function and warns that
	   they may be used uninitialized (-Wmaybe-uninitialized) */
	long long *keys = (long long *)calloc((size_t)n * 3, sizeof(long long));
	int *ids = (int *)malloc(sizeof(int) * n);
	long long *core_key, *l2_key, *llc_key;
	int rc = -1;

	if (!keys || !ids) {
		errno = ENOMEM;
		goto out;
	}
	core_key = keys;
	l2_key = keys + n;
	llc_key = keys + 2 * n;
	for (c = 0; c < n; c++) {
		long v, pkg, lvl, best_lvl = -1;
		char *b;

		core_key[c] = l2_key[c] = llc_key[c] = -1;
		if (!t->cpu[c].possible)
			continue;
		nr_possible++;
		/* No cpuN directory (a hotplug slot): one check instead of ~20 opens. */
		if (!cl__topo_exists(root, "devices/system/cpu/cpu%u", c))
			continue;
		if (cl__topo_int(cl__topo_slurp(root, "devices/system/cpu/cpu%u/topology/physical_package_id", c),
				 &pkg) == 0)
			t->cpu[c].package = (int)pkg;
		b = cl__topo_slurp(root, "devices/system/cpu/cpu%u/topology/core_cpus_list", c);
		if (!b)
			b = cl__topo_slurp(root, "devices/system/cpu/cpu%u/topology/thread_siblings_list", c);
		v = cl__topo_list_min(b);
		if (v >= 0) {
			core_key[c] = v;
		} else if (cl__topo_int(cl__topo_slurp(root, "devices/system/cpu/cpu%u/topology/core_id", c),
					&v) == 0 && v >= 0) {
			/* (package, core_id): keys above any CPU id. */
			core_key[c] = (1ll << 62) | ((long long)(t->cpu[c].package & 0xfffff) << 32) |
				      (long long)(v & 0xffffffff);
		}
		for (idx = 0; idx < 32; idx++) {
			char *type = cl__topo_slurp(root, "devices/system/cpu/cpu%u/cache/index%u/type", c, idx);
			int usable;

			if (!type)
				break;
			usable = strncmp(type, "Data", 4) == 0 || strncmp(type, "Unified", 7) == 0;
			free(type);
			if (!usable || cl__topo_int(cl__topo_slurp(root, "devices/system/cpu/cpu%u/cache/index%u/level",
								     c, idx), &lvl) != 0)
				continue;
			v = cl__topo_list_min(cl__topo_slurp(root, "devices/system/cpu/cpu%u/cache/index%u/shared_cpu_list",
							     c, idx));
			if (v < 0)
				continue;
			if (lvl == 2)
				l2_key[c] = v;
			if (lvl > best_lvl) {
				best_lvl = lvl;
				llc_key[c] = v;
			}
		}
		have_core += core_key[c] >= 0;
		have_l2 += l2_key[c] >= 0;
		have_llc += llc_key[c] >= 0;
	}
	/* Cores: missing -> a core of its own; L2: one per core; LLC: see cl__topo_assign(). */
	if (cl__topo_assign(t, core_key, have_core, nr_possible, CL_TOPO_FALLBACK_CORE, 0, ids) < 0 ||
	    cl__topo_assign(t, l2_key, have_l2, nr_possible, CL_TOPO_FALLBACK_L2, 1, ids) < 0 ||
	    cl__topo_assign(t, llc_key, have_llc, nr_possible, CL_TOPO_FALLBACK_LLC, 2, ids) < 0)
		goto out;
	rc = 0;
out:
	free(keys);
	free(ids);
	return rc;
}

/* The lowest K < @nn with @nodes[K] set and an entry nodeK in CPU @c's
 * sysfs directory, or -1. */
CL_INLINE int cl__topo_cpu_node_link(const char *root, unsigned c, const int *nodes, unsigned nn)
{
	char *path = cl__topo_path(root, "devices/system/cpu/cpu%u", c);
	struct dirent *e;
	long best = -1;
	DIR *d;

	if (!path)
		return -1;
	d = opendir(path);
	if (!d && errno == ENOMEM)
		cl__topo_nomem = 1;
	free(path);
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		const char *p = e->d_name;
		long k = 0;

		if (strncmp(p, "node", 4) != 0 || p[4] < '0' || p[4] > '9')
			continue;
		for (p += 4; *p >= '0' && *p <= '9' && k < (long)nn; p++)
			k = k * 10 + (*p - '0');
		if (*p == '\0' && k < (long)nn && nodes[k] && (best < 0 || k < best))
			best = k;
	}
	closedir(d);
	return (int)best;
}

/* NUMA nodes. 0 or -1 (ENOMEM). Each node's cpulist is read once; a
 * malformed one assigns no CPU and lists none (they fall back to nodeK). */
CL_INLINE int cl__topo_load_nodes(struct cl_topology *t, const char *root)
{
	unsigned n = t->nr_cpu_ids, c, k, nr_found = 0, nn;
	int *nodes = NULL, *seen = (int *)calloc(n ? n : 1, sizeof(int));
	int *listed = (int *)calloc(n ? n : 1, sizeof(int));
	char *b;
	long max = -1;
	int rc = -1;

	if (!seen || !listed) {
		free(seen);
		free(listed);
		errno = ENOMEM;
		return -1;
	}
	b = cl__topo_slurp(root, "devices/system/node/online");
	if (!b)
		b = cl__topo_slurp(root, "devices/system/node/possible");
	if (b && cl__topo_parse_list(b, NULL, 0, NULL, &max) > 0 && max >= 0 &&
	    max < (long)CL__TOPO_MAX_NODES) {
		nn = (unsigned)max + 1;
		nodes = (int *)calloc(nn, sizeof(int));
		if (nodes)
			cl__topo_parse_list(b, nodes, nn, NULL, NULL);
	} else {
		nn = CL__TOPO_PROBE_NODES;
		nodes = (int *)calloc(nn, sizeof(int));
		for (k = 0; nodes && k < nn; k++)
			nodes[k] = cl__topo_exists(root, "devices/system/node/node%u/cpulist", k);
	}
	free(b);
	if (!nodes) {
		errno = ENOMEM;
		goto out;
	}
	for (k = 0; k < nn; k++) {
		if (!nodes[k])
			continue;
		nr_found++;
		b = cl__topo_slurp(root, "devices/system/node/node%u/cpulist", k);
		for (c = 0; c < n; c++)
			seen[c] = 0;
		if (b && cl__topo_parse_list(b, seen, n, NULL, NULL) >= 0) {
			for (c = 0; c < n; c++) {
				if (!seen[c])
					continue;
				listed[c] = 1;
				if (t->cpu[c].possible)
					t->cpu[c].node = (int)k;
			}
		}
		free(b);
	}
	if (nr_found == 0) {
		t->fallback |= CL_TOPO_FALLBACK_NODE;
		t->nr_nodes = 1;
		rc = 0;
		goto out;
	}
	t->nr_nodes = nr_found;
	/* CPUs in no cpulist (offline ones, on some kernels): their nodeK link,
	 * found by one directory read per CPU (not one probe per node). */
	for (c = 0; c < n; c++) {
		int node;

		if (!t->cpu[c].possible || listed[c])
			continue;
		node = cl__topo_cpu_node_link(root, c, nodes, nn);
		if (node >= 0)
			t->cpu[c].node = node;
		else
			t->fallback |= CL_TOPO_FALLBACK_PARTIAL;
	}
	rc = 0;
out:
	free(nodes);
	free(seen);
	free(listed);
	return rc;
}

CL_INLINE int cl_topology_load(struct cl_topology *t, const char *sysfs_root)
{
	const char *root = sysfs_root ? sysfs_root : "/sys";
	int *flags = NULL;
	unsigned n, c;
	long max = -1;
	char *b;

	if (!t) {
		errno = EINVAL;
		return -1;
	}
	memset(t, 0, sizeof(*t));
	cl__topo_nomem = 0;
	b = cl__topo_slurp(root, "devices/system/cpu/possible");
	if (b && cl__topo_parse_list(b, NULL, 0, NULL, &max) > 0 && max >= 0) {
		n = (unsigned)max + 1;
	} else {
		t->fallback |= CL_TOPO_FALLBACK_POSSIBLE;
		n = cl__topo_guess_nr_ids(root, strcmp(root, "/sys") == 0);
		max = -1;
	}
	t->nr_cpu_ids = n;
	t->cpu = (struct cl_cpu_info *)calloc(n, sizeof(*t->cpu));
	flags = (int *)calloc(n, sizeof(int));
	if (!t->cpu || !flags)
		goto nomem;
	if (max >= 0)
		cl__topo_parse_list(b, flags, n, NULL, NULL);
	else
		for (c = 0; c < n; c++)
			flags[c] = 1;
	free(b);
	b = NULL;
	for (c = 0; c < n; c++) {
		t->cpu[c].possible = flags[c];
		t->cpu[c].package = -1;
		t->cpu[c].core = t->cpu[c].l2 = t->cpu[c].llc = -1;
		flags[c] = 0;
	}
	if (cl__topo_read_list(root, "present", flags, n) != 0) {
		t->fallback |= CL_TOPO_FALLBACK_PRESENT;
		for (c = 0; c < n; c++)
			flags[c] = 1;
	}
	for (c = 0; c < n; c++) {
		t->cpu[c].present = flags[c] && t->cpu[c].possible;
		flags[c] = 0;
	}
	if (cl__topo_read_list(root, "online", flags, n) != 0) {
		t->fallback |= CL_TOPO_FALLBACK_ONLINE;
		for (c = 0; c < n; c++)
			flags[c] = 1;
	}
	for (c = 0; c < n; c++) {
		t->cpu[c].online = flags[c] && t->cpu[c].present;
		t->nr_possible += (unsigned)t->cpu[c].possible;
		t->nr_present += (unsigned)t->cpu[c].present;
		t->nr_online += (unsigned)t->cpu[c].online;
	}
	free(flags);
	flags = NULL;
	if (cl__topo_load_caches(t, root) != 0 || cl__topo_load_nodes(t, root) != 0)
		goto nomem;
	/* a file unread for want of memory is not a missing file */
	if (cl__topo_nomem)
		goto nomem;
	return 0;
nomem:
	free(b);
	free(flags);
	cl_topology_free(t);
	errno = ENOMEM;
	return -1;
}

/* Process-wide cache of cl_nr_possible_cpus(); 0 until first computed. */
CL_WEAK unsigned cl__nr_possible_cpus_cache;

CL_INLINE unsigned cl_nr_possible_cpus(void)
{
	unsigned n = CL_ATOMIC_LOAD(&cl__nr_possible_cpus_cache, CL_RELAXED);
	long max = -1;
	char *b;

	if (CL_LIKELY(n))
		return n;
	b = cl__topo_slurp("/sys", "devices/system/cpu/possible");
	if (b && cl__topo_parse_list(b, NULL, 0, NULL, &max) > 0 && max >= 0) {
		n = (unsigned)max + 1;
	} else {
		long c = sysconf(_SC_NPROCESSORS_CONF);

		n = c > 0 && c < (long)CL_TOPO_MAX_CPU_IDS ? (unsigned)c : 1;
	}
	free(b);
	CL_ATOMIC_STORE(&cl__nr_possible_cpus_cache, n, CL_RELAXED);
	return n;
}

CL_END_DECLS

#endif /* CACHELOCAL_TOPOLOGY_MODEL_H */
