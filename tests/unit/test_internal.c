/* SPDX-License-Identifier: MIT */
/*
 * Tests for cachelocal/internal/: the private helpers the public headers
 * share (CPU bitmap, ...). Not API: these tests pin their behaviour so the
 * headers that use them can rely on it.
 */
#include <errno.h>
#include <sched.h>

#include <cachelocal/internal/bitmap.h>

#include "cl_test.h"

Test(internal_bitmap, words_cover_every_bit_and_never_zero)
{
	cr_assert_eq(cl__bitmap_words(0), 1);
	cr_assert_eq(cl__bitmap_words(1), 1);
	cr_assert_eq(cl__bitmap_words(CL__BITS_PER_LONG), 1);
	cr_assert_eq(cl__bitmap_words(CL__BITS_PER_LONG + 1), 2);
	cr_assert_eq(cl__bitmap_words(4096), 4096 / CL__BITS_PER_LONG);
}

Test(internal_bitmap, set_test_and_weight_respect_nbits)
{
	const unsigned nbits = 2 * CL__BITS_PER_LONG + 5;
	unsigned long *m = cl__bitmap_alloc(nbits);

	cr_assert_not_null(m);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 0, "alloc must return a zeroed map");
	cl__bitmap_set(m, 0);
	cl__bitmap_set(m, CL__BITS_PER_LONG - 1);
	cl__bitmap_set(m, CL__BITS_PER_LONG);
	cl__bitmap_set(m, nbits - 1);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 4);
	cr_assert_eq(cl__bitmap_test(m, nbits, 0), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, 1), 0);
	cr_assert_eq(cl__bitmap_test(m, nbits, CL__BITS_PER_LONG - 1), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, CL__BITS_PER_LONG), 1);
	cr_assert_eq(cl__bitmap_test(m, nbits, nbits - 1), 1);
	/* A bit at or above nbits reads as clear, and is not counted. */
	cr_assert_eq(cl__bitmap_test(m, nbits - 1, nbits - 1), 0);
	cr_assert_eq(cl__bitmap_test(m, nbits, 1u << 20), 0);
	cr_assert_eq(cl__bitmap_weight(m, nbits - 1), 3);
	cr_assert_eq(cl__bitmap_weight(m, CL__BITS_PER_LONG), 2);
	cl__bitmap_zero(m, nbits);
	cr_assert_eq(cl__bitmap_weight(m, nbits), 0);
	free(m);
}

Test(internal_bitmap, or_merges_below_nbits_and_counts_the_source)
{
	const unsigned nbits = CL__BITS_PER_LONG + 3;
	unsigned long dst[2] = { 0x1ul, 0 }, src[2] = { 0x3ul, ~0ul };
	unsigned n = cl__bitmap_or(dst, src, nbits);

	/* src has bits 0, 1 and CL__BITS_PER_LONG .. +2 below nbits. */
	cr_assert_eq(n, 5);
	cr_assert_eq(dst[0], 0x3ul);
	cr_assert_eq(dst[1], 0x7ul, "bits at or above nbits were copied: %#lx", dst[1]);
	cr_assert_eq(cl__bitmap_weight(dst, nbits), 5);
}

Test(internal_bitmap, getaffinity_matches_sched_getaffinity)
{
	cpu_set_t set;
	unsigned nbits = 0, c, n = 0;
	unsigned long *m = cl__bitmap_getaffinity(8, &nbits);

	cr_assert_not_null(m, "errno %d", errno);
	cr_assert_geq(nbits, 1024, "the map is at least 1024 bits");
	cr_assert_eq(nbits % CL__BITS_PER_LONG, 0);
	cr_assert_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	for (c = 0; c < CPU_SETSIZE && c < nbits; c++) {
		cr_assert_eq(cl__bitmap_test(m, nbits, c), CPU_ISSET(c, &set) ? 1 : 0, "cpu %u", c);
		n += CPU_ISSET(c, &set) ? 1u : 0u;
	}
	cr_assert_eq(cl__bitmap_weight(m, nbits), n);
	free(m);
}
