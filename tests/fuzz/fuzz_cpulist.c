/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_cpulist.c - the sysfs CPU-list parser of topology.h
 * ("0-3,8,10-11\n") against an independent reference parser written from
 * the kernel's list format: same verdict (count or malformed), same lowest
 * and highest id, and exactly the listed ids below n flagged, nothing
 * written at or past n.
 *
 * Input: byte 0 picks n (the flags array size), the rest is the list.
 */
#include "fuzz.h"

#include <string.h>

#include <cachelocal/topology.h>

/* Grammar: ws* [ item (',' item)* ] ws* ; item: num | num '-' num, lo <= hi. */
static int ref_ws(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static int ref_num(const char **s, long *out)
{
	long v = 0;

	if (**s < '0' || **s > '9')
		return -1;
	for (; **s >= '0' && **s <= '9'; (*s)++) {
		v = v * 10 + (**s - '0');
		if (v >= (long)CL_TOPO_MAX_CPU_IDS)
			return -1;
	}
	*out = v;
	return 0;
}

/* Count of listed ids (with repeats), or -1; ids < n set in want[]. */
static long ref_parse(const char *s, unsigned char *want, unsigned n, long *min, long *max)
{
	long count = 0;

	*min = *max = -1;
	while (ref_ws(*s))
		s++;
	if (!*s)
		return 0;
	for (;;) {
		long lo, hi;

		if (ref_num(&s, &lo))
			return -1;
		hi = lo;
		if (*s == '-') {
			s++;
			if (ref_num(&s, &hi) || hi < lo)
				return -1;
		}
		for (long i = lo; i <= hi && i < (long)n; i++)
			want[i] = 1;
		count += hi - lo + 1;
		if (*min < 0 || lo < *min)
			*min = lo;
		if (hi > *max)
			*max = hi;
		if (*s != ',')
			break;
		s++;
	}
	while (ref_ws(*s))
		s++;
	return *s ? -1 : count;
}

enum { GUARD = 8 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	unsigned n = fz_u8(&f);
	char *s;
	int *flags;
	unsigned char *want;
	long min = -2, max = -2, rmin, rmax, got, exp;

	if (f.n > 4096)
		return 0;
	s = malloc(f.n + 1);
	flags = calloc(n + GUARD, sizeof(*flags));
	want = calloc(n + 1, 1);
	if (!s || !flags || !want)
		abort();
	memcpy(s, f.p, f.n);
	s[f.n] = '\0';
	for (unsigned i = n; i < n + GUARD; i++)
		flags[i] = 7;
	got = cl__topo_parse_list(s, flags, n, &min, &max);
	exp = ref_parse(s, want, n, &rmin, &rmax);
	FZ_CHECK(got == exp, "\"%s\": parser %ld, reference %ld", s, got, exp);
	for (unsigned i = n; i < n + GUARD; i++)
		FZ_CHECK(flags[i] == 7, "\"%s\": wrote flags[%u] past n=%u", s, i, n);
	if (got >= 0) {
		FZ_CHECK(min == rmin && max == rmax, "\"%s\": min/max %ld/%ld, reference %ld/%ld",
			 s, min, max, rmin, rmax);
		for (unsigned i = 0; i < n; i++)
			FZ_CHECK(flags[i] == want[i], "\"%s\": flags[%u] = %d", s, i, flags[i]);
	}
	/* NULL flags and NULL min/max: same verdict */
	FZ_CHECK(cl__topo_parse_list(s, NULL, 0, NULL, NULL) == exp, "\"%s\": NULL outputs", s);
	free(s);
	free(flags);
	free(want);
	return 0;
}
