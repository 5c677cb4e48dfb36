/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_percpu.c - per-CPU stride pools: addressing, packing,
 * zeroing, RSS of a 384-CPU pool, robust mode, NUMA policy, fork, threads,
 * and every bad input of the pool API.
 */
#include <errno.h>
#include <stdint.h>

/* Inject point 40 of percpu.h: one CPU's copy examined while clearing a
 * reused object (counted by the reuse-cost test). */
static unsigned long copies_examined;
#define CL_INJECT(n) ((void)((n) == 40 ? __atomic_fetch_add(&copies_examined, 1, __ATOMIC_RELAXED) : 0))

#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cachelocal/cacheline.h>
#include <cachelocal/percpu.h>

#include "cl_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define CL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CL_TEST_ASAN 1
#endif
#endif

#if defined(CL_TEST_ASAN) || defined(CL_HAVE_TSAN)
#define RSS_SLACK 32L
#else
#define RSS_SLACK 8L
#endif

static struct cl_percpu_pool *pool_new(size_t stride, unsigned nr_cpus, unsigned flags)
{
	struct cl_percpu_pool_attr a = { stride, nr_cpus, flags };
	struct cl_percpu_pool *p = cl_percpu_pool_create(&a);

	cr_assert_not_null(p, "create(stride %zu, cpus %u, flags %#x): %s", stride, nr_cpus, flags,
			   strerror(errno));
	return p;
}

static int all_bytes(const void *p, int byte, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)byte)
			return 0;
	return 1;
}

Test(percpu, defaults)
{
	struct cl_percpu_pool *p = cl_percpu_pool_create(NULL);

	cr_assert_not_null(p);
	cr_assert_eq(cl_percpu_pool_nr_cpus(p), cl_nr_possible_cpus());
	cr_assert_eq(cl_percpu_pool_stride(p), (size_t)CL_PERCPU_STRIDE);
	cl_percpu_pool_destroy(p);
	cl_percpu_pool_destroy(NULL);
}

/* cl_percpu_ptr is p + cpu * stride, keeps the type, and CL_SIBLING walks members. */
struct combo {
	long rq[3];
	struct {
		long weight;
		long vruntime;
	} se CL_CACHELINE_ALIGNED;
};

Test(percpu, ptr_arithmetic_and_sibling)
{
	struct cl_percpu_pool *p = pool_new(0, 4, 0);
	struct combo *c = cl_percpu_alloc(p, sizeof(struct combo), _Alignof(struct combo));
	const struct combo *cc = c;
	struct combo *const kc = c;

	cr_assert_not_null(c);
	cr_assert_eq(((uintptr_t)c) % _Alignof(struct combo), 0u);
	for (unsigned cpu = 0; cpu < 4; cpu++) {
		struct combo *x = cl_percpu_ptr(c, cpu);

		cr_assert_eq((uintptr_t)x, (uintptr_t)c + cpu * (uintptr_t)CL_PERCPU_STRIDE);
		cr_assert_eq((uintptr_t)cl_percpu_ptr(cc, cpu), (uintptr_t)x);
		cr_assert_eq((uintptr_t)cl_percpu_ptr(kc, cpu), (uintptr_t)x);
		cr_assert_eq((uintptr_t)cl_percpu_ptr_stride(c, cpu, CL_PERCPU_STRIDE), (uintptr_t)x);
		x->rq[0] = 100 + cpu;
		CL_SIBLING(&x->rq, struct combo, rq, se)->weight = 1000 + cpu;
	}
	/* Type preserved (including const). */
	cr_assert(__builtin_types_compatible_p(__typeof__(cl_percpu_ptr(c, 1)), struct combo *));
	cr_assert(__builtin_types_compatible_p(__typeof__(cl_percpu_ptr(cc, 1)), const struct combo *));
	for (unsigned cpu = 0; cpu < 4; cpu++) {
		struct combo *x = cl_percpu_ptr(c, cpu);

		cr_assert_eq(x->rq[0], (long)(100 + cpu));
		cr_assert_eq(x->se.weight, (long)(1000 + cpu));
		cr_assert_eq((void *)CL_SIBLING(&x->se, struct combo, se, rq), (void *)x->rq);
	}
	cr_assert_eq(cl_percpu_free(p, c), 0);
	cl_percpu_pool_destroy(p);
}

Test(percpu, other_stride)
{
	const size_t stride = 16384;
	struct cl_percpu_pool *p = pool_new(stride, 3, 0);
	long *v = cl_percpu_alloc(p, sizeof(long), sizeof(long));

	cr_assert_not_null(v);
	cr_assert_eq(cl_percpu_pool_stride(p), stride);
	for (unsigned cpu = 0; cpu < 3; cpu++)
		*cl_percpu_ptr_stride(v, cpu, stride) = (long)cpu + 7;
	for (unsigned cpu = 0; cpu < 3; cpu++)
		cr_assert_eq(*(long *)((char *)v + cpu * stride), (long)cpu + 7);
	cl_percpu_pool_destroy(p);
}

/* 10,000 objects of mixed sizes and alignments: packed, aligned, disjoint. */
Test(percpu, ten_thousand_objects_across_ranges)
{
	enum { N = 10000, CPUS = 3 };
	struct cl_percpu_pool *p = pool_new(0, CPUS, 0);
	static unsigned char *obj[N];
	static size_t sz[N];
	struct cl_percpu_stats st = { 0 };
	size_t total = 0;

	for (int i = 0; i < N; i++) {
		size_t align = (size_t)1 << (i % 8); /* 1..128 */

		sz[i] = 1 + (size_t)(i * 37 % 200);
		obj[i] = cl_percpu_alloc(p, sz[i], align);
		cr_assert_not_null(obj[i], "alloc %d: %s", i, strerror(errno));
		cr_assert_eq((uintptr_t)obj[i] % align, 0u, "object %d misaligned", i);
		total += sz[i];
		for (int cpu = 0; cpu < CPUS; cpu++) {
			unsigned char *c = cl_percpu_ptr(obj[i], cpu);

			cr_assert(all_bytes(c, 0, sz[i]), "object %d cpu %d not zero", i, cpu);
			memset(c, (i * CPUS + cpu) % 251 + 1, sz[i]);
		}
	}
	/* Every byte of every copy still holds its owner's pattern: no overlap. */
	for (int i = 0; i < N; i++)
		for (int cpu = 0; cpu < CPUS; cpu++)
			cr_assert(all_bytes(cl_percpu_ptr(obj[i], cpu), (i * CPUS + cpu) % 251 + 1, sz[i]),
				  "object %d cpu %d overwritten", i, cpu);
	cr_assert_eq(cl_percpu_pool_stats(p, &st), 0);
	cr_assert_eq(st.nr_live, (size_t)N);
	cr_assert_gt(st.nr_ranges, 1u, "10,000 objects need several 64 KiB slices");
	/* Packed: only alignment and 8-byte rounding between objects. */
	cr_assert_leq(st.nr_ranges * CL_PERCPU_STRIDE, 2 * (total + N * (8 + 128)) + CL_PERCPU_STRIDE,
		      "%zu ranges for %zu bytes", st.nr_ranges, total);
	cr_log_info("10000 objects, %zu bytes requested, %zu live after rounding, %zu ranges", total,
		    st.bytes_live, st.nr_ranges);
	for (int i = 0; i < N; i++)
		cr_assert_eq(cl_percpu_free(p, obj[i]), 0, "free %d", i);
	cr_assert_eq(cl_percpu_pool_stats(p, &st), 0);
	cr_assert_eq(st.nr_live, 0u);
	cr_assert_eq(st.bytes_live, 0u);
	cl_percpu_pool_destroy(p);
}

/* Objects of one CPU lie together: consecutive small allocations are adjacent. */
Test(percpu, packed_without_padding)
{
	struct cl_percpu_pool *p = pool_new(0, 2, 0);
	char *a = cl_percpu_alloc(p, 24, 8);
	char *b = cl_percpu_alloc(p, 24, 8);
	char *c = cl_percpu_alloc(p, 8, 64);

	cr_assert_eq(b - a, 24);
	cr_assert_eq((uintptr_t)c % 64, 0u);
	cr_assert_lt(c - b, 64 + 24);
	cl_percpu_pool_destroy(p);
}

Test(percpu, alignment_up_to_stride)
{
	struct cl_percpu_pool *p = pool_new(0, 2, 0);
	void *small = cl_percpu_alloc(p, 8, 8);
	void *big;

	cr_assert_not_null(small);
	for (size_t align = 8; align <= CL_PERCPU_STRIDE; align *= 2) {
		void *x = cl_percpu_alloc(p, 8, align);

		cr_assert_not_null(x, "align %zu", align);
		cr_assert_eq((uintptr_t)x % align, 0u, "align %zu", align);
	}
	big = cl_percpu_alloc(p, CL_PERCPU_STRIDE, 8);
	cr_assert_not_null(big, "a whole slice");
	cr_assert_eq((uintptr_t)big % CL_PERCPU_STRIDE, 0u);
	cl_percpu_pool_destroy(p);
}

/* Each CPU's copy is independent, for every CPU of the pool. */
Test(percpu, copies_independent)
{
	const unsigned cpus = 64;
	struct cl_percpu_pool *p = pool_new(0, cpus, 0);
	uint64_t *v = cl_percpu_alloc(p, 64, 64);

	cr_assert_not_null(v);
	for (unsigned c = 0; c < cpus; c++)
		for (int k = 0; k < 8; k++)
			cl_percpu_ptr(v, c)[k] = (uint64_t)c << 8 | (uint64_t)k;
	for (unsigned c = 0; c < cpus; c++)
		for (int k = 0; k < 8; k++)
			cr_assert_eq(cl_percpu_ptr(v, c)[k], (uint64_t)c << 8 | (uint64_t)k);
	cl_percpu_pool_destroy(p);
}

/* Reuse is zeroed: on a page shared with a live object (pagemap path) and
 * on whole released pages. */
static void reuse_is_zero(unsigned flags)
{
	const unsigned cpus = 4;
	struct cl_percpu_pool *p = pool_new(0, cpus, flags);
	char *keep = cl_percpu_alloc(p, 64, 64);
	char *a = cl_percpu_alloc(p, 200, 8);
	char *big = cl_percpu_alloc(p, 3 * 4096, 4096);
	char *a2, *big2;

	cr_assert(keep && a && big);
	for (unsigned c = 0; c < cpus; c++) {
		memset(cl_percpu_ptr(keep, c), 0x11, 64);
		memset(cl_percpu_ptr(a, c), 0x22, 200);
		memset(cl_percpu_ptr(big, c), 0x33, 3 * 4096);
	}
	cr_assert_eq(cl_percpu_free(p, a), 0);
	cr_assert_eq(cl_percpu_free(p, big), 0);
	a2 = cl_percpu_alloc(p, 200, 8);
	big2 = cl_percpu_alloc(p, 3 * 4096, 4096);
	cr_assert_eq(a2, a, "first fit reuses the hole");
	cr_assert_eq(big2, big, "first fit reuses the pages");
	for (unsigned c = 0; c < cpus; c++) {
		cr_assert(all_bytes(cl_percpu_ptr(a2, c), 0, 200), "cpu %u: reused object not zero", c);
		cr_assert(all_bytes(cl_percpu_ptr(big2, c), 0, 3 * 4096), "cpu %u: reused pages not zero", c);
		cr_assert(all_bytes(cl_percpu_ptr(keep, c), 0x11, 64), "cpu %u: neighbour damaged", c);
	}
	cr_assert_eq(cl_percpu_free(p, keep) | cl_percpu_free(p, a2) | cl_percpu_free(p, big2), 0);
	cl_percpu_pool_destroy(p);
}

Test(percpu, zeroed_on_reuse)
{
	reuse_is_zero(0);
}

Test(percpu, zeroed_on_reuse_robust)
{
	reuse_is_zero(CL_PERCPU_ROBUST);
}

/* Whole pages left free by cl_percpu_free() go back to the kernel on every
 * CPU (mincore: not resident); a page shared with a live object stays. */
Test(percpu, free_returns_whole_pages)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct cl_percpu_pool *p = pool_new(0, 4, 0);
	char *keep = cl_percpu_alloc(p, 64, 8);
	char *big = cl_percpu_alloc(p, 8 * pg, pg);
	char *tail = cl_percpu_alloc(p, 64, 8);
	unsigned char vec[8];

	cr_assert(keep && big && tail);
	for (unsigned c = 0; c < 4; c++) {
		memset(cl_percpu_ptr(big, c), 0x44, 8 * pg);
		memset(cl_percpu_ptr(tail, c), 0x55, 64);
		cr_assert_eq(mincore(cl_percpu_ptr(big, c), 8 * pg, vec), 0);
		cr_assert(all_bytes(vec, 1, 8), "cpu %u: written pages resident", c);
	}
	cr_assert_eq(cl_percpu_free(p, big), 0);
	for (unsigned c = 0; c < 4; c++) {
		cr_assert_eq(mincore(cl_percpu_ptr(big, c), 8 * pg, vec), 0);
		cr_assert(all_bytes(vec, 0, 8), "cpu %u: freed pages still resident", c);
		cr_assert(all_bytes(cl_percpu_ptr(tail, c), 0x55, 64), "cpu %u: neighbour lost", c);
		cr_assert_eq(mincore(cl_percpu_ptr(keep, c), 64, vec), 0);
		cr_assert_eq(vec[0] & 1, 1, "cpu %u: shared page released", c);
	}
	cr_assert_eq(cl_percpu_free(p, keep) | cl_percpu_free(p, tail), 0);
	cl_percpu_pool_destroy(p);
}

/* Ranges are marked MADV_NOHUGEPAGE: smaps shows "nh" in their VmFlags. */
Test(percpu, ranges_without_huge_pages)
{
	struct cl_percpu_pool *p = pool_new(0, 64, 0);
	char *x = cl_percpu_alloc(p, 64, 64);
	char line[512];
	int in_range = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	cr_assert(x && f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char c;

		/* A mapping's header: "lo-hi perms ..."; key lines start with a name. */
		if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3)
			in_range = (uintptr_t)x >= lo && (uintptr_t)x < hi;
		if (in_range && strncmp(line, "VmFlags:", 8) == 0) {
			found = 1;
			cr_assert(strstr(line, " nh"), "%s", line);
		}
	}
	fclose(f);
	cr_assert(found, "mapping of %p not in smaps", (void *)x);
	cl_percpu_pool_destroy(p);
}

/* Emptying a range gives it back and the next allocation is zero. */
Test(percpu, empty_range_reset)
{
	struct cl_percpu_pool *p = pool_new(0, 2, 0);
	long *a = cl_percpu_alloc(p, 64, 8), *b;

	cr_assert_not_null(a);
	*cl_percpu_ptr(a, 1) = 5;
	cr_assert_eq(cl_percpu_free(p, a), 0);
	b = cl_percpu_alloc(p, 64, 8);
	cr_assert_eq(b, a);
	cr_assert_eq(*cl_percpu_ptr(b, 1), 0);
	cl_percpu_pool_destroy(p);
}

/*
 * Freeing the last live object of a range drops the range's pages; a write
 * after that free must still be cleared before the memory is handed out
 * again (zero on every CPU), and reported in robust mode.
 */
static void write_after_last_free(unsigned flags)
{
	struct cl_percpu_pool *p = pool_new(0, 4, flags);
	long *a = cl_percpu_alloc(p, 64, 8), *b;
	struct cl_percpu_stats st = { 0 };

	cr_assert_not_null(a);
	for (unsigned c = 0; c < 4; c++)
		*cl_percpu_ptr(a, c) = 7;
	cr_assert_eq(cl_percpu_free(p, a), 0); /* the range is empty now */
	cl_percpu_ptr(a, 2)[3] = 0x1234;       /* write after free */
	b = cl_percpu_alloc(p, 64, 8);
	cr_assert_eq(b, a, "first fit reuses offset 0");
	for (unsigned c = 0; c < 4; c++)
		cr_assert(all_bytes(cl_percpu_ptr(b, c), 0, 64), "cpu %u: reused memory not zero", c);
	cl_percpu_pool_stats(p, &st);
	if (flags & CL_PERCPU_ROBUST)
		cr_assert_eq(st.nr_poison_damaged, 1u, "robust mode reports the write after free");
	cr_assert_eq(cl_percpu_free(p, b), 0);
	cl_percpu_pool_destroy(p);
}

Test(percpu, write_after_last_free_is_cleared)
{
	write_after_last_free(0);
}

Test(percpu, write_after_last_free_is_reported_robust)
{
	write_after_last_free(CL_PERCPU_ROBUST);
}

/*
 * Reusing an object of a 1,024-CPU pool with a 2 MiB stride that 2 CPUs
 * touched examines the copies of those 2 CPUs, not all 1,024 (counted at
 * inject point 40, no timing). Needs the kernel's PAGEMAP_SCAN (6.7+).
 */
#define MB2 ((size_t)2 << 20)

Test(percpu, reuse_cost_follows_touched_copies)
{
	struct cl_percpu_pool *p = pool_new(MB2, 1024, 0);
	char *keep = cl_percpu_alloc(p, 64, 8);
	char *a = cl_percpu_alloc(p, 256, 8), *b;
	struct utsname u;
	unsigned major = 0, minor = 0;

	cr_assert(keep && a);
	cr_assert_eq(uname(&u), 0);
	sscanf(u.release, "%u.%u", &major, &minor);
	memset(cl_percpu_ptr_stride(a, 0, MB2), 1, 256);
	memset(cl_percpu_ptr_stride(a, 700, MB2), 1, 256);
	cr_assert_eq(cl_percpu_free(p, a), 0);
	copies_examined = 0;
	b = cl_percpu_alloc(p, 256, 8);
	cr_assert_eq(b, a);
	cr_assert(all_bytes(cl_percpu_ptr_stride(b, 0, MB2), 0, 256) && all_bytes(cl_percpu_ptr_stride(b, 700, MB2), 0, 256));
	cr_log_info("copies examined on reuse: %lu of 1024 (kernel %s)", copies_examined, u.release);
	if (major > 6 || (major == 6 && minor >= 7))
		cr_assert_leq(copies_examined, 2ul, "examined %lu copies", copies_examined);
	cr_assert_eq(cl_percpu_free(p, b) | cl_percpu_free(p, keep), 0);
	cl_percpu_pool_destroy(p);
}

/* A 384-CPU pool on this 2-CPU machine costs memory for the CPUs that touch it. */
static void rss_bounded(unsigned flags)
{
	enum { N = 3000, SZ = 128 };
	static char *obj[N];
	struct cl_percpu_pool *p = pool_new(0, 384, flags);
	long before = cl_test_rss_bytes(), grew;
	struct cl_percpu_stats st = { 0 };

	for (int i = 0; i < N; i++) {
		obj[i] = cl_percpu_alloc(p, SZ, 64);
		cr_assert_not_null(obj[i]);
		memset(cl_percpu_ptr(obj[i], 0), 1, SZ);
		memset(cl_percpu_ptr(obj[i], 1), 2, SZ);
	}
	/* Free every other object and reallocate: the reuse path must not
	 * populate the 382 untouched copies either. */
	for (int i = 0; i < N; i += 2)
		cr_assert_eq(cl_percpu_free(p, obj[i]), 0);
	for (int i = 0; i < N; i += 2) {
		obj[i] = cl_percpu_alloc(p, SZ, 64);
		cr_assert_not_null(obj[i]);
		cr_assert(all_bytes(cl_percpu_ptr(obj[i], 1), 0, SZ));
		cr_assert(all_bytes(cl_percpu_ptr(obj[i], 383), 0, SZ));
	}
	grew = cl_test_rss_bytes() - before;
	cl_percpu_pool_stats(p, &st);
	cr_log_info("384-CPU pool, %d x %d B written on 2 CPUs: RSS +%ld KiB (all 384 CPUs would be %ld KiB), %zu MiB mapped",
		    N, SZ, grew / 1024, 384L * N * SZ / 1024, st.bytes_mapped >> 20);
	/* 2 CPUs x 3000 x 128 B = 750 KiB; allow 8x for page granularity and the
	 * test itself (32x under sanitizers: their shadow memory counts too).
	 * All 384 CPUs would be 144,000 KiB. */
	cr_assert_lt(grew, RSS_SLACK * 2 * N * SZ, "RSS grew by %ld bytes", grew);
	for (int i = 0; i < N; i++)
		cr_assert_eq(cl_percpu_free(p, obj[i]), 0);
	cl_percpu_pool_destroy(p);
}

Test(percpu, rss_384_cpus_used_by_2)
{
	rss_bounded(0);
}

Test(percpu, rss_384_cpus_used_by_2_robust)
{
	rss_bounded(CL_PERCPU_ROBUST);
}

Test(percpu, bad_pool_attributes)
{
	struct {
		size_t stride;
		unsigned cpus, flags;
	} bad[] = {
		{ 3000, 2, 0 },                            /* not a power of two */
		{ 2048, 2, 0 },                            /* below the page size */
		{ CL_PERCPU_STRIDE_MAX * 2, 2, 0 },        /* above the maximum */
		{ 0, CL_MAX_CPUS + 1, 0 },                 /* too many CPUs */
		{ 0, 2, 0x80 },                            /* unknown flag */
		{ (size_t)CL_PERCPU_STRIDE + 1, 2, 0 },    /* odd */
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cl_percpu_pool_attr a = { bad[i].stride, bad[i].cpus, bad[i].flags };

		errno = 0;
		cr_assert_null(cl_percpu_pool_create(&a), "case %u", i);
		cr_assert_eq(errno, EINVAL, "case %u", i);
	}
	{
		struct cl_percpu_pool_attr a = { 0, CL_MAX_CPUS, 0 };
		struct cl_percpu_pool *p = cl_percpu_pool_create(&a);

		cr_assert_not_null(p, "CL_MAX_CPUS itself is accepted");
		cl_percpu_pool_destroy(p);
	}
	errno = 0;
	cr_assert_eq(cl_percpu_pool_nr_cpus(NULL), 0u);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_pool_stride(NULL), 0u);
	cr_assert_eq(errno, EINVAL);
	errno = 0;
	cr_assert_eq(cl_percpu_pool_stats(NULL, NULL), -1);
	cr_assert_eq(errno, EINVAL);
}

Test(percpu, bad_alloc_arguments)
{
	struct cl_percpu_pool *p = pool_new(0, 2, 0);
	static const struct {
		size_t size, align;
	} bad[] = {
		{ 0, 8 },                                  /* size 0 */
		{ (size_t)CL_PERCPU_STRIDE + 1, 8 },       /* larger than the stride */
		{ 8, 0 },                                  /* align 0 */
		{ 8, 3 },                                  /* not a power of two */
		{ 8, 24 },                                 /* not a power of two */
		{ 8, 2 * (size_t)CL_PERCPU_STRIDE },       /* larger than the stride */
		{ (size_t)-1, 8 },
	};
	struct cl_percpu_stats st = { 0 };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_null(cl_percpu_alloc(p, bad[i].size, bad[i].align), "case %u", i);
		cr_assert_eq(errno, EINVAL, "case %u", i);
	}
	errno = 0;
	cr_assert_null(cl_percpu_alloc(NULL, 8, 8));
	cr_assert_eq(errno, EINVAL);
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_ranges, 0u, "bad input maps nothing");
	cl_percpu_pool_destroy(p);
}

/* Frees the pool does not own are rejected in every mode, and change nothing. */
static void bad_frees(unsigned flags)
{
	struct cl_percpu_pool *p = pool_new(0, 4, flags);
	struct cl_percpu_pool *other = pool_new(0, 4, flags);
	long *a = cl_percpu_alloc(p, 64, 8);
	long *b = cl_percpu_alloc(p, 64, 8);
	long *o = cl_percpu_alloc(other, 64, 8);
	long on_stack = 0;
	long *heap = malloc(64);
	void *bad[] = { &on_stack, heap, o, (char *)a + 8, cl_percpu_ptr(a, 1), (char *)a + 64 * 5 };
	struct cl_percpu_stats st = { 0 };

	cr_assert(a && b && o && heap);
	*cl_percpu_ptr(b, 3) = 42;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_assert_eq(cl_percpu_free(p, bad[i]), -1, "case %u", i);
		cr_assert_eq(errno, EINVAL, "case %u", i);
	}
	errno = 0;
	cr_assert_eq(cl_percpu_free(NULL, a), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(cl_percpu_free(p, NULL), 0, "NULL is a no-op, like free()");
	cr_assert_eq(cl_percpu_free(p, a), 0);
	errno = 0;
	cr_assert_eq(cl_percpu_free(p, a), -1, "double free");
	cr_assert_eq(errno, EINVAL);
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_bad_frees, sizeof(bad) / sizeof(bad[0]) + 1);
	cr_assert_eq(st.nr_live, 1u);
	cr_assert_eq(*cl_percpu_ptr(b, 3), 42, "rejected frees changed nothing");
	cr_assert_eq(cl_percpu_free(p, b), 0);
	cr_assert_eq(cl_percpu_free(other, o), 0);
	free(heap);
	cl_percpu_pool_destroy(p);
	cl_percpu_pool_destroy(other);
}

Test(percpu, bad_frees_plain)
{
	bad_frees(0);
}

Test(percpu, bad_frees_robust)
{
	bad_frees(CL_PERCPU_ROBUST);
}

Test(percpu, robust_poison_write_after_free_and_leaks)
{
	struct cl_percpu_pool *p = pool_new(0, 2, CL_PERCPU_ROBUST);
	char *keep = cl_percpu_alloc(p, 64, 8);
	char *a = cl_percpu_alloc(p, 64, 8);
	char *leak1 = cl_percpu_alloc(p, 32, 8);
	char *leak2 = cl_percpu_alloc(p, 16, 8);
	struct cl_percpu_stats st = { 0 };
	char report[4096];
	FILE *f = tmpfile();

	cr_assert(keep && a && leak1 && leak2 && f);
	memset(cl_percpu_ptr(a, 0), 0x5a, 64);
	memset(cl_percpu_ptr(a, 1), 0x5a, 64);
	cr_assert_eq(cl_percpu_free(p, a), 0);
	/* The page is shared with live objects: the freed bytes are poisoned. */
	cr_assert(all_bytes(cl_percpu_ptr(a, 0), CL_PERCPU_POISON, 64));
	cr_assert(all_bytes(cl_percpu_ptr(a, 1), CL_PERCPU_POISON, 64));
	/* A write after free is found when the object is reused. */
	cl_percpu_ptr(a, 1)[10] = 1;
	a = cl_percpu_alloc(p, 64, 8);
	cr_assert_not_null(a);
	cr_assert(all_bytes(cl_percpu_ptr(a, 1), 0, 64));
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_poison_damaged, 1u);
	/* A clean reuse is not reported. */
	cr_assert_eq(cl_percpu_free(p, a), 0);
	a = cl_percpu_alloc(p, 64, 8);
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_poison_damaged, 1u);
	cr_assert_eq(cl_percpu_free(p, a), 0);
	cr_assert_eq(cl_percpu_free(p, keep), 0);
	/* Two leaks, listed and counted. */
	cr_assert_eq(cl_percpu_pool_report_leaks(p, f), 2u);
	cr_assert_eq(cl_percpu_pool_report_leaks(p, NULL), 2u);
	rewind(f);
	report[fread(report, 1, sizeof(report) - 1, f)] = '\0';
	fclose(f);
	cr_assert(strstr(report, "2 leaked object(s), 48 bytes per CPU"), "report: %s", report);
	cr_assert(strstr(report, "32 bytes per CPU"), "report: %s", report);
	cl_percpu_pool_destroy(p); /* reports the leaks on stderr */
}

Test(percpu, numa_flag_on_this_machine)
{
	struct cl_topology t;
	struct cl_percpu_pool *p = pool_new(0, 0, CL_PERCPU_NUMA);
	struct cl_percpu_stats st = { 0 };
	long *v = cl_percpu_alloc(p, 8, 8);

	cr_assert_not_null(v);
	*cl_percpu_ptr(v, 0) = 1;
	cr_assert_eq(cl_topology_load(&t, NULL), 0);
	cl_percpu_pool_stats(p, &st);
	if (t.nr_nodes == 1) {
		/* One node: binding is a no-op. */
		cr_assert_eq(st.numa_nodes, 0u);
		cr_assert_eq(st.nr_numa_bound + st.nr_numa_failed, 0u);
	} else {
		cr_assert_eq(st.nr_numa_bound + st.nr_numa_failed, (size_t)cl_percpu_pool_nr_cpus(p));
	}
	cl_topology_free(&t);
	cl_percpu_pool_destroy(p);
}

/* The two-node path, with the fake EPYC topology: every slice gets a policy
 * request; nodes this machine lacks are refused by the kernel and counted. */
Test(percpu, numa_two_nodes_fake_topology)
{
	struct cl_topology t, here;
	struct cl_percpu_pool_attr a = { 0, 384, CL_PERCPU_NUMA };
	struct cl_percpu_pool *p;
	struct cl_percpu_stats st = { 0 };
	unsigned long mask[4] = { 0 };
	int mode = -1;
	long *v;

	cr_assert_eq(cl_topology_load(&t, CL_TEST_DATA_DIR "/epyc9654-2s"), 0);
	cr_assert_eq(cl_topology_load(&here, NULL), 0);
	p = cl_percpu_pool_create_topo(&a, &t);
	cl_topology_free(&t); /* not used after create */
	cr_assert_not_null(p);
	v = cl_percpu_alloc(p, 8, 8);
	cr_assert_not_null(v);
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.numa_nodes, 2u);
	cr_assert_eq(st.nr_numa_bound + st.nr_numa_failed, 384u);
	if (here.nr_nodes == 1) {
		/* Node 0 exists here, node 1 does not: 192 CPUs each. */
		cr_assert_eq(st.nr_numa_bound, 192u);
		cr_assert_eq(st.nr_numa_failed, 192u);
	}
	/* CPU 0's slice carries MPOL_PREFERRED (1) for node 0. */
	cr_assert_eq(syscall(SYS_get_mempolicy, &mode, mask, (unsigned long)(sizeof(mask) * 8), v, 2ul /* MPOL_F_ADDR */), 0,
		     "get_mempolicy: %s", strerror(errno));
	cr_assert_eq(mode, 1);
	cr_assert_eq(mask[0], 1ul);
	*cl_percpu_ptr(v, 200) = 3; /* failed binding: the slice still works */
	cr_assert_eq(*cl_percpu_ptr(v, 200), 3);
	cl_topology_free(&here);
	cl_percpu_pool_destroy(p);
}

/* Exhaustion: a range that cannot be mapped gives ENOMEM, and the pool (and
 * other pools) keep working. */
Test(percpu, exhaustion_enomem)
{
	struct cl_percpu_pool *big, *small;
	struct rlimit rl;
	char buf[256];
	long vm_pages = 0, res;
	void *x;

#if defined(CL_TEST_ASAN) || defined(CL_HAVE_TSAN)
	cr_skip_test("address-space limits and sanitizer shadow memory do not mix");
#endif
	small = pool_new(0, 2, 0);
	big = pool_new(0, CL_MAX_CPUS, 0); /* 4096 x 64 KiB = 256 MiB per range */
	cr_assert_not_null(cl_percpu_alloc(small, 8, 8));
	cr_assert_gt(cl_test_slurp("/proc/self/statm", buf, sizeof(buf)), 0);
	cr_assert_eq(sscanf(buf, "%ld %ld", &vm_pages, &res), 2);
	rl.rlim_cur = rl.rlim_max = (rlim_t)vm_pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
	cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
	errno = 0;
	x = cl_percpu_alloc(big, 8, 8);
	cr_assert_null(x);
	cr_assert_eq(errno, ENOMEM);
	/* Fill the small pool's first range and map a second one within the limit. */
	for (int i = 0; i < 300; i++)
		cr_assert_not_null(cl_percpu_alloc(small, 1024, 8), "alloc %d", i);
	cl_percpu_pool_destroy(big);
	cl_percpu_pool_destroy(small);
}

/* fork(): the child sees the parent's objects and can allocate and free,
 * even while another parent thread was allocating at the time of fork. */
static volatile int churn_stop;

static void *churn(void *arg)
{
	struct cl_percpu_pool *p = arg;

	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		void *x = cl_percpu_alloc(p, 256, 64);

		if (x)
			cl_percpu_free(p, x);
	}
	return NULL;
}

Test(percpu, fork_child_uses_pool)
{
	struct cl_percpu_pool *p = pool_new(0, 4, CL_PERCPU_ROBUST);
	long *v = cl_percpu_alloc(p, sizeof(long), 8);
	pthread_t th;

	cr_assert_not_null(v);
	for (unsigned c = 0; c < 4; c++)
		*cl_percpu_ptr(v, c) = 10 + c;
	cr_assert_eq(pthread_create(&th, NULL, churn, p), 0);
	for (int round = 0; round < 20; round++) {
		int status = -1;
		pid_t pid = fork();

		cr_assert_neq(pid, -1);
		if (pid == 0) {
			int ok = 1;
			long *w[100];

			alarm(20); /* a lock inherited held would hang here */
			for (unsigned c = 0; c < 4; c++)
				ok &= *cl_percpu_ptr(v, c) == (long)(10 + c);
			for (int i = 0; i < 100; i++) {
				w[i] = cl_percpu_alloc(p, sizeof(long), 8);
				ok &= w[i] != NULL && *cl_percpu_ptr(w[i], 3) == 0;
				if (w[i])
					*cl_percpu_ptr(w[i], 3) = i;
			}
			for (int i = 0; i < 100; i++)
				ok &= w[i] && *cl_percpu_ptr(w[i], 3) == i && cl_percpu_free(p, w[i]) == 0;
			*cl_percpu_ptr(v, 2) = 99; /* private to the child */
			ok &= cl_percpu_free(p, v) == 0;
			_exit(ok ? 0 : 1);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child round %d status %#x", round,
			  status);
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	cr_assert_eq(*cl_percpu_ptr(v, 2), 12, "the child's writes stay in the child");
	cr_assert_eq(cl_percpu_free(p, v), 0, "the child's free did not free the parent's object");
	cl_percpu_pool_destroy(p);
}

/* 6 x nproc threads allocate, fill, check and free concurrently. */
struct worker_arg {
	struct cl_percpu_pool *pool;
	unsigned cpus;
	int id;
	int ok;
};

static void *worker(void *arg)
{
	struct worker_arg *w = arg;
	unsigned char *mine[16];

	w->ok = 1;
	for (int iter = 0; iter < 300; iter++) {
		int n = 1 + (iter + w->id) % 16;

		for (int i = 0; i < n; i++) {
			size_t sz = 8 + (size_t)((w->id * 31 + i * 7) % 120);

			mine[i] = cl_percpu_alloc(w->pool, sz, 8);
			if (!mine[i]) {
				w->ok = 0;
				return NULL;
			}
			for (unsigned c = 0; c < w->cpus; c++) {
				if (!all_bytes(cl_percpu_ptr(mine[i], c), 0, sz))
					w->ok = 0;
				memset(cl_percpu_ptr(mine[i], c), w->id + 1, sz);
			}
			mine[i][sz - 1] = (unsigned char)(w->id + 1);
		}
		sched_yield();
		for (int i = 0; i < n; i++) {
			size_t sz = 8 + (size_t)((w->id * 31 + i * 7) % 120);

			for (unsigned c = 0; c < w->cpus; c++)
				if (!all_bytes(cl_percpu_ptr(mine[i], c), w->id + 1, sz))
					w->ok = 0;
			if (cl_percpu_free(w->pool, mine[i]) != 0)
				w->ok = 0;
		}
	}
	return NULL;
}

Test(percpu, concurrent_alloc_free, .timeout = 120)
{
	long nproc = sysconf(_SC_NPROCESSORS_ONLN);
	int nthreads = (int)(6 * (nproc > 0 ? nproc : 1));
	struct cl_percpu_pool *p = pool_new(0, 4, 0);
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	struct worker_arg *wa = calloc((size_t)nthreads, sizeof(*wa));
	struct cl_percpu_stats st = { 0 };

	cr_assert(th && wa);
	for (int i = 0; i < nthreads; i++) {
		wa[i] = (struct worker_arg){ p, 4, i, 0 };
		cr_assert_eq(pthread_create(&th[i], NULL, worker, &wa[i]), 0);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		cr_assert(wa[i].ok, "thread %d saw a non-zero new object or a clobbered one", i);
	}
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_live, 0u);
	cr_assert_eq(st.nr_allocs, st.nr_frees);
	cr_assert_eq(st.nr_bad_frees, 0u);
	cr_log_info("%d threads: %zu allocs, %zu ranges", nthreads, st.nr_allocs, st.nr_ranges);
	free(th);
	free(wa);
	cl_percpu_pool_destroy(p);
}

/*
 * Threads that all need new ranges at once: every allocation is larger than
 * half a stride, so each one maps a range and the pool's range table grows
 * (realloc) while other allocators are between their unlock and return. The
 * returned object must be computed under the pool lock (ASan reported a
 * use-after-free of the old range table before that was fixed).
 */
struct growth_arg {
	struct cl_percpu_pool *pool;
	int id;
	unsigned char *objs[24];
	int ok;
};

static void *growth_worker(void *arg)
{
	struct growth_arg *g = arg;
	size_t sz = CL_PERCPU_STRIDE / 2 + 64;

	g->ok = 1;
	for (int i = 0; i < 24; i++) {
		g->objs[i] = cl_percpu_alloc(g->pool, sz, 64);
		if (!g->objs[i]) {
			g->ok = 0;
			return NULL;
		}
		g->objs[i][0] = (unsigned char)(g->id + 1);
		cl_percpu_ptr(g->objs[i], 1)[sz - 1] = (unsigned char)(g->id + 1);
	}
	return NULL;
}

Test(percpu, concurrent_range_growth, .timeout = 120)
{
	enum { NT = 12 };
	struct cl_percpu_pool *p = pool_new(0, 2, 0);
	struct growth_arg ga[NT];
	pthread_t th[NT];
	struct cl_percpu_stats st = { 0 };
	size_t sz = CL_PERCPU_STRIDE / 2 + 64;

	for (int i = 0; i < NT; i++) {
		ga[i] = (struct growth_arg){ .pool = p, .id = i };
		cr_assert_eq(pthread_create(&th[i], NULL, growth_worker, &ga[i]), 0);
	}
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	cl_percpu_pool_stats(p, &st);
	cr_assert_eq(st.nr_ranges, (size_t)NT * 24, "one range per object: %zu", st.nr_ranges);
	for (int i = 0; i < NT; i++) {
		cr_assert(ga[i].ok, "thread %d: allocation failed", i);
		for (int j = 0; j < 24; j++) {
			cr_assert_eq(ga[i].objs[j][0], (unsigned char)(i + 1));
			cr_assert_eq(cl_percpu_ptr(ga[i].objs[j], 1)[sz - 1], (unsigned char)(i + 1));
			cr_assert_eq(cl_percpu_free(p, ga[i].objs[j]), 0);
		}
	}
	cl_percpu_pool_destroy(p);
}
