/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/topology/sysfs.h - reading the files of a sysfs
 * tree (a path under a root, a whole small file, "does it exist") and parsing
 * its CPU lists ("0-3,8-11\n") and integers. Every allocation failure sets
 * cl__topo_nomem, so a load fails with ENOMEM instead of guessing.
 *
 * Part of topology.h, which is the header to include: this file compiles
 * alone but its cl__ names are not API and may change without notice.
 */
/* The facade first: it includes every piece, in order, this one too. */
#include "../topology.h"

#ifndef CACHELOCAL_TOPOLOGY_SYSFS_H
#define CACHELOCAL_TOPOLOGY_SYSFS_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CL_BEGIN_DECLS

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

CL_END_DECLS

#endif /* CACHELOCAL_TOPOLOGY_SYSFS_H */
