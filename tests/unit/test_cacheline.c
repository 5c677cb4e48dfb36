/* SPDX-License-Identifier: MIT */
/* Tests for cachelocal/cacheline.h and the L0 headers. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cachelocal/cacheline.h>
#include <cachelocal/version.h>

#include "cl_test.h"

struct t_plain {
	int a;
	CL_GROUP_BEGIN(t_plain_g);
	int b;
	char c;
	CL_GROUP_END(t_plain_g);
	long d;
};
struct t_plain_nomark {
	int a;
	int b;
	char c;
	long d;
};

struct t_aligned {
	char first;
	CL_GROUP_BEGIN_ALIGNED(t_hot);
	unsigned nr;
	void *curr;
	CL_GROUP_END_ALIGNED(t_hot);
	int lock;
	CL_GROUP_BEGIN_GUARDED(t_stats);
	uint64_t hits;
	CL_GROUP_END_GUARDED(t_stats);
	char last;
};

/* The positive asserts: this file only compiles if they hold. */
CL_ASSERT_GROUP_MEMBER(struct t_plain, t_plain_g, b);
CL_ASSERT_GROUP_MEMBER(struct t_plain, t_plain_g, c);
CL_ASSERT_GROUP_SIZE(struct t_plain, t_plain_g, 8);
CL_ASSERT_GROUP_MEMBER(struct t_aligned, t_hot, nr);
CL_ASSERT_GROUP_MEMBER(struct t_aligned, t_hot, curr);
CL_ASSERT_GROUP_ALIGNED(struct t_aligned, t_hot);
CL_ASSERT_GROUP_SIZE(struct t_aligned, t_hot, CL_CACHELINE_SIZE);
CL_ASSERT_SAME_LINE(struct t_aligned, nr, curr);
CL_ASSERT_APART(struct t_aligned, lock, nr);
CL_ASSERT_APART(struct t_aligned, first, nr);
CL_ASSERT_APART_GUARD(struct t_aligned, hits, lock);
CL_ASSERT_ALIGNED(struct t_aligned);

Test(cacheline, plain_markers_take_no_space)
{
	cr_assert_eq(sizeof(struct t_plain), sizeof(struct t_plain_nomark));
	cr_assert_eq(offsetof(struct t_plain, b), offsetof(struct t_plain_nomark, b));
	cr_assert_eq(CL_GROUP_OFFSET(struct t_plain, t_plain_g), offsetof(struct t_plain, b));
	cr_assert_eq(CL_GROUP_SIZE(struct t_plain, t_plain_g),
		     offsetof(struct t_plain, c) + 1 - offsetof(struct t_plain, b));
}

Test(cacheline, aligned_group_starts_and_ends_on_lines)
{
	cr_assert_eq(CL_GROUP_OFFSET(struct t_aligned, t_hot), CL_CACHELINE_SIZE);
	cr_assert_eq(offsetof(struct t_aligned, nr), CL_CACHELINE_SIZE);
	/* END_ALIGNED: the next member starts on the next line. */
	cr_assert_eq(offsetof(struct t_aligned, lock), 2 * CL_CACHELINE_SIZE);
	cr_assert_eq(CL_GROUP_SIZE(struct t_aligned, t_hot),
		     offsetof(struct t_aligned, curr) + sizeof(void *) - CL_CACHELINE_SIZE);
	cr_assert_eq(_Alignof(struct t_aligned), CL_FALSE_SHARING_SIZE);
}

Test(cacheline, guarded_group_uses_the_guard_unit)
{
	size_t off = CL_GROUP_OFFSET(struct t_aligned, t_stats);

	cr_assert_eq(off % CL_FALSE_SHARING_SIZE, 0);
	cr_assert_gt(off, offsetof(struct t_aligned, lock));
	cr_assert_eq(offsetof(struct t_aligned, last) % CL_FALSE_SHARING_SIZE, 0);
	cr_assert_gt(offsetof(struct t_aligned, last), offsetof(struct t_aligned, hits));
}

Test(cacheline, predicates_are_true_and_false_where_expected)
{
	/* The same expressions the static asserts use, evaluated both ways. */
	cr_assert(CL__SAME_UNIT(struct t_aligned, nr, curr, CL_CACHELINE_SIZE));
	cr_assert_not(CL__SAME_UNIT(struct t_aligned, nr, lock, CL_CACHELINE_SIZE));
	cr_assert(CL__APART_UNIT(struct t_aligned, nr, lock, CL_CACHELINE_SIZE));
	cr_assert_not(CL__APART_UNIT(struct t_aligned, nr, curr, CL_CACHELINE_SIZE));
#if CL_FALSE_SHARING_SIZE >= 2 * CL_CACHELINE_SIZE
	/* first (offset 0) and nr (one line later): apart by line, not by guard unit. */
	cr_assert(CL__APART_UNIT(struct t_aligned, first, nr, CL_CACHELINE_SIZE));
	cr_assert_not(CL__APART_UNIT(struct t_aligned, first, nr, CL_FALSE_SHARING_SIZE));
#endif
	/* A member spanning two lines is on both. */
	cr_assert_eq(CL__FIRST_UNIT(struct t_plain, d, 4), offsetof(struct t_plain, d) / 4);
	cr_assert_eq(CL__LAST_UNIT(struct t_plain, d, 4), (offsetof(struct t_plain, d) + 7) / 4);
}

Test(cacheline, config_values_are_sane)
{
	cr_assert_eq(CL_CACHELINE_SIZE & (CL_CACHELINE_SIZE - 1), 0);
	cr_assert_geq(CL_FALSE_SHARING_SIZE, CL_CACHELINE_SIZE);
#if defined(__x86_64__) || defined(__aarch64__)
	cr_assert_eq(CL_FALSE_SHARING_SIZE, 128);
#endif
	char want[32];
	snprintf(want, sizeof(want), "%d.%d.%d", CL_VERSION_MAJOR, CL_VERSION_MINOR, CL_VERSION_PATCH);
	cr_assert_str_eq(CL_VERSION_STRING, want);
	cr_assert_eq(CL_VERSION, CL_VERSION_NUM(CL_VERSION_MAJOR, CL_VERSION_MINOR, CL_VERSION_PATCH));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "fopen %s", path);
	fputs(text, f);
	fclose(f);
}

Test(cacheline, sysfs_line_size_reads_the_largest_index)
{
	char dir[] = "/tmp/cl_cache_XXXXXX", p[256];

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(cl__cacheline_size_sysfs(dir), 0, "empty dir must give 0");
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/index%d", dir, i);
		cr_assert_eq(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/index%d/coherency_line_size", dir, i);
		write_file(p, i == 2 ? "128\n" : "64\n");
	}
	cr_assert_eq(cl__cacheline_size_sysfs(dir), 128);
	/* A malformed file is ignored, not fatal. */
	write_file(p, "garbage\n");
	cr_assert_eq(cl__cacheline_size_sysfs(dir), 64);
	cr_assert_eq(cl__cacheline_size_sysfs("/nonexistent/cl"), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/index%d/coherency_line_size", dir, i);
		unlink(p);
		snprintf(p, sizeof(p), "%s/index%d", dir, i);
		rmdir(p);
	}
	rmdir(dir);
}

Test(cacheline, runtime_size_matches_sysconf)
{
	size_t s = cl_cacheline_size_runtime();
	long sc = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);

	if (sc > 0)
		cr_assert_eq(s, (size_t)sc);
	else
		cr_assert_eq(s, cl__cacheline_size_sysfs("/sys/devices/system/cpu/cpu0/cache"));
	if (s)
		cr_assert_eq(s & (s - 1), 0, "line size %zu is not a power of two", s);
}

Test(cacheline, check_reports_a_too_small_build_size)
{
	char msg[256];

	cr_assert_eq(cl__cacheline_check_size(0, msg, sizeof(msg)), 0);
	cr_assert_eq(cl__cacheline_check_size(CL_CACHELINE_SIZE, msg, sizeof(msg)), 0);
	cr_assert_eq(msg[0], '\0');
	errno = 0;
	cr_assert_eq(cl__cacheline_check_size(CL_CACHELINE_SIZE * 2, msg, sizeof(msg)), -1);
	cr_assert_eq(errno, ERANGE);
	char want[32];
	snprintf(want, sizeof(want), "%d bytes", CL_CACHELINE_SIZE * 2);
	cr_assert_not_null(strstr(msg, want), "message: %s", msg);
	cr_assert_not_null(strstr(msg, "-DCL_CACHELINE_SIZE="), "message: %s", msg);
	/* NULL buffer is allowed. */
	cr_assert_eq(cl__cacheline_check_size(CL_CACHELINE_SIZE * 4, NULL, 0), -1);
	/* This machine (64-byte lines) passes with the default build. */
	cr_assert_eq(cl_cacheline_check(msg, sizeof(msg)), 0, "%s", msg);
}

/* ---- cl_layout_print ---- */

struct t_rq {
	CL_GROUP_BEGIN_ALIGNED(t_rq_read);
	unsigned nr_running;
	void *curr;
	CL_GROUP_END_ALIGNED(t_rq_read);
	CL_GROUP_BEGIN_ALIGNED(t_rq_lock);
	int lock;
	CL_GROUP_END_ALIGNED(t_rq_lock);
	char big[80];
};

static const struct cl_layout_entry t_rq_entries[] = {
	CL_LAYOUT_FIELD(struct t_rq, big),	/* any order */
	CL_LAYOUT_FIELD(struct t_rq, lock),
	CL_LAYOUT_GROUP(struct t_rq, t_rq_lock),
	CL_LAYOUT_GROUP(struct t_rq, t_rq_read),
	CL_LAYOUT_FIELD(struct t_rq, nr_running),
	CL_LAYOUT_FIELD(struct t_rq, curr),
};

static char *print_to_string(const struct cl_layout *l, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	*ret = cl_layout_print(f, l);
	fclose(f);
	return buf;
}

Test(cacheline, layout_print_line_by_line)
{
	static const struct cl_layout l = CL_LAYOUT(struct t_rq, t_rq_entries);
	int ret;
	char *out = print_to_string(&l, &ret);
	char exp[2048];
	int L = CL_CACHELINE_SIZE;

	/* Expected text, derived from the line size so it holds for any override. */
	snprintf(exp, sizeof(exp),
		 "struct t_rq {\t/* size %d, align %d, %d cache lines of %d bytes */\n"
		 "\t/* group t_rq_read: offset 0, size 16, line 0 */\n"
		 "\tnr_running               offset     0  size     4  line 0\n"
		 "\t/* XXX 4 bytes hole */\n"
		 "\tcurr                     offset     8  size     8  line 0\n"
		 "\t/* XXX %d bytes hole */\n"
		 "\t/* --- cacheline 1 boundary (%d bytes) --- */\n"
		 "\t/* group t_rq_lock: offset %d, size 4, line 1 */\n"
		 "\tlock                     offset %5d  size     4  line 1\n"
		 "\t/* XXX %d bytes hole */\n"
		 "\t/* --- cacheline 2 boundary (%d bytes) --- */\n"
		 "\tbig                      offset %5d  size    80  lines 2-%d\n"
		 "};\t/* 3 holes, %d bytes in holes, %d bytes of padding at the end */\n",
		 (int)sizeof(struct t_rq), L, (int)sizeof(struct t_rq) / L, L, L - 16, L, L, L, L - 4,
		 2 * L, 2 * L, (2 * L + 79) / L, 4 + (L - 16) + (L - 4),
		 (int)sizeof(struct t_rq) - (2 * L + 80));
	/* Compare line by line to point at the first difference. */
	char *a = out, *b = exp;
	int line = 1;
	while (*a || *b) {
		char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
		size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);

		cr_assert(la == lb && memcmp(a, b, la) == 0, "line %d differs:\n got: %.*s\nwant: %.*s",
			  line, (int)la, a, (int)lb, b);
		a += la + (ea != NULL);
		b += lb + (eb != NULL);
		line++;
	}
	cr_assert_eq(ret, 3, "holes returned: %d", ret);
	free(out);
}

Test(cacheline, layout_print_rejects_bad_input)
{
	static const struct cl_layout_entry bad[] = {
		{ "past_end", sizeof(struct t_rq), 8, CL_LAYOUT_KIND_FIELD },
	};
	static const struct cl_layout lb = CL_LAYOUT(struct t_rq, bad);
	static const struct cl_layout ok = CL_LAYOUT(struct t_rq, t_rq_entries);
	FILE *f = fopen("/dev/null", "w");

	errno = 0;
	cr_assert_eq(cl_layout_print(NULL, &ok), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_layout_print(f, NULL), -1);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_layout_print(f, &lb), -1);
	cr_assert_eq(errno, EINVAL);
	fclose(f);
}
