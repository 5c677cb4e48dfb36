/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/topology.h - the machine as sysfs describes it: CPU ids
 * (possible, present, online; sparse ids and more than 256 CPUs work), SMT
 * cores, L2 and last-level caches, NUMA nodes.
 *
 *	struct cl_topology t;
 *
 *	if (cl_topology_load(&t, NULL) == 0) {          // NULL root: "/sys"
 *		for (unsigned c = 0; c < t.nr_cpu_ids; c++)
 *			if (t.cpu[c].online)
 *				printf("cpu %u: core %d llc %d node %d\n", c,
 *				       t.cpu[c].core, t.cpu[c].llc, t.cpu[c].node);
 *		cl_topology_free(&t);
 *	}
 *
 * Files read, relative to the root (tests pass a fake tree under tests/data/):
 *
 *   devices/system/cpu/{possible,present,online}          CPU lists ("0-3,8-11")
 *   devices/system/cpu/cpuN/topology/core_cpus_list       SMT siblings (older
 *     kernels: thread_siblings_list; else core_id + physical_package_id)
 *   devices/system/cpu/cpuN/topology/physical_package_id  package
 *   devices/system/cpu/cpuN/cache/indexM/{level,type,shared_cpu_list}
 *     L2 = the level-2 Data/Unified cache; LLC = the highest-level Data/Unified
 *   devices/system/node/{online,possible}, nodeK/cpulist  NUMA nodes
 *   devices/system/cpu/cpuN/nodeK                         node of a CPU missing
 *                                                         from every cpulist
 *
 * Missing or malformed files never fail the load: the part they describe
 * falls back to a uniform guess (one core and one L2 per CPU, one LLC, node 0)
 * and a CL_TOPO_FALLBACK_* bit in t->fallback says so. Core, L2 and LLC ids
 * are dense (0..nr_X-1), numbered in order of their lowest CPU id. Node ids
 * are sysfs's node numbers (they may be sparse: node < nr_nodes is not
 * guaranteed). CPUs that have no per-CPU files while others have them
 * (offline CPUs: the kernel removes their topology and cache directories)
 * each get a core, L2 and LLC of their own, and CL_TOPO_FALLBACK_PARTIAL is set.
 *
 * Context: the functions here allocate and read files; call them at start-up,
 * not on hot paths. cl_topology_load() is thread-safe for distinct t.
 */
#ifndef CACHELOCAL_TOPOLOGY_H
#define CACHELOCAL_TOPOLOGY_H

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "config.h"

CL_BEGIN_DECLS

/* t->fallback bits: which parts of the topology were guessed. */
#define CL_TOPO_FALLBACK_POSSIBLE 0x01u /* cpu/possible unreadable: CPU ids guessed */
#define CL_TOPO_FALLBACK_PRESENT 0x02u  /* cpu/present unreadable: present = possible */
#define CL_TOPO_FALLBACK_ONLINE 0x04u   /* cpu/online unreadable: online = present */
#define CL_TOPO_FALLBACK_CORE 0x08u     /* no SMT information: one core per CPU */
#define CL_TOPO_FALLBACK_L2 0x10u       /* no L2 information: one L2 per core */
#define CL_TOPO_FALLBACK_LLC 0x20u      /* no cache information: one LLC for all CPUs */
#define CL_TOPO_FALLBACK_NODE 0x40u     /* no NUMA information: every CPU on node 0 */
#define CL_TOPO_FALLBACK_PARTIAL 0x80u  /* some CPUs lacked per-CPU files (see above) */

/*
 * Largest CPU id + 1 the parser accepts; a list naming a larger id is
 * malformed. Linux's NR_CPUS tops out at 8192 (x86 MAXSMP, powerpc); this
 * matches CL_MAX_CPUS's ceiling.
 */
#define CL_TOPO_MAX_CPU_IDS (1u << 16)
/* Node numbers probed when the node lists are missing. */
#define CL__TOPO_PROBE_NODES 64u
/* Largest node number + 1 accepted (Linux's MAX_NUMNODES tops out at 1024);
 * a node list naming a larger one is malformed. */
#define CL__TOPO_MAX_NODES 1024u

/**
 * struct cl_cpu_info - what is known about one CPU id.
 * @possible: 1 if the id is in cpu/possible (0: every other field is meaningless).
 * @present: 1 if present.
 * @online: 1 if online.
 * @package: physical package id, -1 if unknown.
 * @core: dense SMT-core id, 0..nr_cores-1 (SMT siblings share it); -1 if not possible.
 * @l2: dense L2 id, 0..nr_l2s-1; -1 if not possible.
 * @llc: dense last-level-cache id, 0..nr_llcs-1; -1 if not possible.
 * @node: NUMA node number as in sysfs; 0 if unknown.
 */
struct cl_cpu_info {
	int possible, present, online;
	int package;
	int core;
	int l2;
	int llc;
	int node;
};

/**
 * struct cl_topology - the machine.
 * @nr_cpu_ids: 1 + highest possible CPU id; @cpu has nr_cpu_ids entries.
 * @nr_possible: CPUs in cpu/possible.
 * @nr_present: present CPUs.
 * @nr_online: online CPUs.
 * @nr_cores: SMT cores (over possible CPUs).
 * @nr_l2s: L2 caches (over possible CPUs).
 * @nr_llcs: last-level caches (over possible CPUs).
 * @nr_nodes: NUMA nodes listed online in sysfs (memory-only nodes included), >= 1.
 * @fallback: CL_TOPO_FALLBACK_* bits; 0 when everything was read.
 * @cpu: indexed by CPU id; ids not possible have possible == 0.
 */
struct cl_topology {
	unsigned nr_cpu_ids;
	unsigned nr_possible, nr_present, nr_online;
	unsigned nr_cores, nr_l2s, nr_llcs, nr_nodes;
	unsigned fallback;
	struct cl_cpu_info *cpu;
};

/* ---- private helpers ---- */

/*
 * Set by the file helpers below when an allocation fails while reading a
 * file (ours, or the C library's inside fopen()/access(): errno ENOMEM), so
 * cl_topology_load() fails with ENOMEM instead of reading that file as
 * missing and returning a fallback guess. Cleared when a load starts.
 */
CL_WEAK __thread int cl__topo_nomem;

/* "root/<formatted rel>" in a malloc'ed buffer, or NULL (cl__topo_nomem set). */
CL_INLINE __attribute__((format(printf, 2, 0))) char *cl__topo_vpath(const char *root, const char *fmt,
								      va_list ap)
{
	char rel[128], *path;

	vsnprintf(rel, sizeof(rel), fmt, ap);
	path = (char *)malloc(strlen(root) + strlen(rel) + 2);
	if (path)
		sprintf(path, "%s/%s", root, rel);
	else
		cl__topo_nomem = 1;
	return path;
}

/* cl__topo_vpath() with the arguments in line. */
CL_INLINE __attribute__((format(printf, 2, 3))) char *cl__topo_path(const char *root, const char *fmt,
								     ...)
{
	char *path;
	va_list ap;

	va_start(ap, fmt);
	path = cl__topo_vpath(root, fmt, ap);
	va_end(ap);
	return path;
}

/* Read root/<formatted path> into a malloc'ed NUL-terminated buffer, or NULL. */
CL_INLINE __attribute__((format(printf, 2, 3))) char *cl__topo_slurp(const char *root,
								      const char *fmt, ...)
{
	char *path, *buf = NULL;
	size_t len = 0, cap = 0, n;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	path = cl__topo_vpath(root, fmt, ap);
	va_end(ap);
	if (!path)
		return NULL;
	f = fopen(path, "r");
	if (!f && errno == ENOMEM)
		cl__topo_nomem = 1;
	free(path);
	if (!f)
		return NULL;
	for (;;) {
		if (cap - len < 256) {
			char *nb = (char *)realloc(buf, cap ? cap * 2 : 512);

			if (!nb) {
				free(buf);
				buf = NULL;
				cl__topo_nomem = 1;
				break;
			}
			buf = nb;
			cap = cap ? cap * 2 : 512;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	return buf;
}

/* 1 if root/<formatted path> exists. */
CL_INLINE __attribute__((format(printf, 2, 3))) int cl__topo_exists(const char *root,
								     const char *fmt, ...)
{
	char *path;
	va_list ap;
	int r;

	va_start(ap, fmt);
	path = cl__topo_vpath(root, fmt, ap);
	va_end(ap);
	if (!path)
		return 0;
	r = access(path, F_OK) == 0;
	if (!r && errno == ENOMEM)
		cl__topo_nomem = 1;
	free(path);
	return r;
}

CL_INLINE int cl__topo_isspace(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/*
 * cl__topo_parse_list() - parse a sysfs list ("0-3,8,10-11\n"; empty is valid).
 * Every id i < n with a non-NULL flags gets flags[i] = 1. *max receives the
 * highest id (-1 for an empty list), *min the lowest (-1 if empty).
 * Return: number of ids listed, or -1 if malformed (ids >= CL_TOPO_MAX_CPU_IDS
 * included).
 */
CL_INLINE long cl__topo_parse_list(const char *s, int *flags, unsigned n, long *min, long *max)
{
	long count = 0, lo_all = -1, hi_all = -1;

	while (*s && cl__topo_isspace(*s))
		s++;
	while (*s) {
		long lo = 0, hi;

		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9') {
			lo = lo * 10 + (*s++ - '0');
			if (lo >= (long)CL_TOPO_MAX_CPU_IDS)
				return -1;
		}
		hi = lo;
		if (*s == '-') {
			s++;
			if (*s < '0' || *s > '9')
				return -1;
			hi = 0;
			while (*s >= '0' && *s <= '9') {
				hi = hi * 10 + (*s++ - '0');
				if (hi >= (long)CL_TOPO_MAX_CPU_IDS)
					return -1;
			}
			if (hi < lo)
				return -1;
		}
		for (long i = lo; flags && i <= hi && i < (long)n; i++)
			flags[i] = 1;
		count += hi - lo + 1;
		if (lo_all < 0 || lo < lo_all)
			lo_all = lo;
		if (hi > hi_all)
			hi_all = hi;
		if (*s == ',') {
			s++;
			if (*s < '0' || *s > '9')
				return -1;
			continue;
		}
		while (*s && cl__topo_isspace(*s))
			s++;
		if (*s)
			return -1;
	}
	if (min)
		*min = lo_all;
	if (max)
		*max = hi_all;
	return count;
}

/* Lowest id of the list in root/<path>, or -1 if missing, malformed or empty. */
CL_INLINE long cl__topo_list_min(char *buf)
{
	long lo = -1;

	if (!buf)
		return -1;
	if (cl__topo_parse_list(buf, NULL, 0, &lo, NULL) < 0)
		lo = -1;
	free(buf);
	return lo;
}

/* An integer file ("12\n"); 0 and *out set, or -1. buf is freed. */
CL_INLINE int cl__topo_int(char *buf, long *out)
{
	char *end;
	long v;
	int r = -1;

	if (!buf)
		return -1;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (end != buf && errno == 0) {
		while (*end && cl__topo_isspace(*end))
			end++;
		if (!*end) {
			*out = v;
			r = 0;
		}
	}
	free(buf);
	return r;
}

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

/* Highest CPU id + 1 when cpu/possible is unusable. */
CL_INLINE unsigned cl__topo_guess_nr_ids(const char *root, int is_sys)
{
	static const char *const lists[] = { "present", "online" };
	unsigned i, miss = 0, last = 0;
	long max = -1;

	for (i = 0; i < 2; i++) {
		char *b = cl__topo_slurp(root, "devices/system/cpu/%s", lists[i]);

		if (b && cl__topo_parse_list(b, NULL, 0, NULL, &max) > 0 && max >= 0) {
			free(b);
			return (unsigned)max + 1;
		}
		free(b);
	}
	/* cpuN directories, up to 64 consecutive misses. */
	for (i = 0; i < CL_TOPO_MAX_CPU_IDS && miss < 64; i++) {
		if (cl__topo_exists(root, "devices/system/cpu/cpu%u", i)) {
			last = i + 1;
			miss = 0;
		} else {
			miss++;
		}
	}
	if (last)
		return last;
	if (is_sys) {
		long c = sysconf(_SC_NPROCESSORS_CONF);

		if (c > 0 && c < (long)CL_TOPO_MAX_CPU_IDS)
			return (unsigned)c;
	}
	return 1;
}

/**
 * cl_topology_free() - release what cl_topology_load() allocated.
 * @t: a loaded topology, or one zeroed by a failed load; NULL is ignored.
 *
 * Context: any thread; t must not be in use by others.
 */
CL_INLINE void cl_topology_free(struct cl_topology *t)
{
	if (!t)
		return;
	free(t->cpu);
	memset(t, 0, sizeof(*t));
}

/* Read a CPU list file into flags[0..n); 0, or -1 if missing or malformed. */
CL_INLINE int cl__topo_read_list(const char *root, const char *name, int *flags, unsigned n)
{
	char *b = cl__topo_slurp(root, "devices/system/cpu/%s", name);
	long r = -1;

	if (b)
		r = cl__topo_parse_list(b, flags, n, NULL, NULL);
	free(b);
	return r < 0 ? -1 : 0;
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
	long long *keys = (long long *)malloc(sizeof(long long) * n * 3);
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

/**
 * cl_topology_load() - read the machine's CPUs, caches and nodes from sysfs.
 * @t: filled in; release with cl_topology_free().
 * @sysfs_root: directory holding devices/system/..., NULL for "/sys".
 *
 * Missing or malformed files are not errors: the part they describe falls
 * back to a uniform guess flagged in t->fallback (see the file comment). A
 * file that cannot be read for want of memory (an allocation failing here or
 * inside fopen()) is an error: the load fails with ENOMEM, never returns a
 * guess in its place.
 *
 * Context: any thread; allocates and reads files (start-up, not hot paths).
 * Return: 0, or -1 with errno EINVAL (t is NULL) or ENOMEM (t is zeroed).
 */
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

/**
 * cl_nr_possible_cpus() - 1 + the highest possible CPU id of this machine.
 *
 * Read once from /sys/devices/system/cpu/possible and cached process-wide;
 * falls back to sysconf(_SC_NPROCESSORS_CONF), then 1. Size per-CPU arrays
 * with it (CPU ids may be sparse: it is not a count of CPUs).
 *
 * Context: any thread; the first call reads a file.
 * Return: the number of CPU ids, >= 1. Never fails.
 */
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

#endif /* CACHELOCAL_TOPOLOGY_H */
