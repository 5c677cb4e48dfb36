/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/internal/bitmap.h - the CPU bitmap every cachelocal header uses.
 *
 * NOT PART OF THE PUBLIC API: names here are cl__/CL__, may change or go away
 * without notice. Include a public header instead.
 *
 * Format: the kernel's and glibc's cpu_set_t: an array of unsigned long, bit
 * n of word n / CL__BITS_PER_LONG is CPU (or node) n. Callers say how many
 * bits are valid (nbits); bits at or above nbits are never read.
 *
 * Used for: the grow-only allowed-CPU union of a cid domain (cid.h), the
 * sched_getaffinity() mask of the calling thread, the node mask given to
 * mbind (percpu.h), a task's allowed CPUs (sched/rq.h).
 *
 * Synchronization: none. A bitmap shared between threads is protected by
 * its owner's lock; these functions use plain loads and stores.
 */
#ifndef CACHELOCAL_INTERNAL_BITMAP_H
#define CACHELOCAL_INTERNAL_BITMAP_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler.h"
#include "../sys.h"

CL_BEGIN_DECLS

/* Bits in one word of a bitmap. */
#define CL__BITS_PER_LONG (8u * (unsigned)sizeof(unsigned long))

/* Words needed for nbits bits (at least 1, so that an empty map is valid). */
CL_INLINE unsigned cl__bitmap_words(unsigned nbits)
{
	unsigned w = nbits / CL__BITS_PER_LONG + (nbits % CL__BITS_PER_LONG != 0);

	return w ? w : 1u;
}

/* Mask of the valid bits of word w of an nbits-bit map. */
CL_INLINE unsigned long cl__bitmap_word_mask(unsigned nbits, unsigned w)
{
	unsigned full = nbits / CL__BITS_PER_LONG;

	if (w < full)
		return ~0ul;
	if (w > full || nbits % CL__BITS_PER_LONG == 0)
		return 0ul;
	return (1ul << (nbits % CL__BITS_PER_LONG)) - 1ul;
}

/* A zeroed map of nbits bits (free() it), or NULL with errno ENOMEM. */
CL_INLINE unsigned long *cl__bitmap_alloc(unsigned nbits)
{
	unsigned long *map = (unsigned long *)calloc(cl__bitmap_words(nbits), sizeof(unsigned long));

	if (!map)
		errno = ENOMEM;
	return map;
}

/* Clear every bit of an nbits-bit map (all its words). */
CL_INLINE void cl__bitmap_zero(unsigned long *map, unsigned nbits)
{
	memset(map, 0, (size_t)cl__bitmap_words(nbits) * sizeof(unsigned long));
}

/* Set bit. */
CL_INLINE void cl__bitmap_set(unsigned long *map, unsigned bit)
{
	map[bit / CL__BITS_PER_LONG] |= 1ul << (bit % CL__BITS_PER_LONG);
}

/* 1 if bit is set and below nbits, else 0. */
CL_INLINE int cl__bitmap_test(const unsigned long *map, unsigned nbits, unsigned bit)
{
	if (bit >= nbits)
		return 0;
	return (int)((map[bit / CL__BITS_PER_LONG] >> (bit % CL__BITS_PER_LONG)) & 1ul);
}

/* Number of set bits below nbits. */
CL_INLINE unsigned cl__bitmap_weight(const unsigned long *map, unsigned nbits)
{
	unsigned w, n = 0, words = nbits / CL__BITS_PER_LONG + (nbits % CL__BITS_PER_LONG != 0);

	for (w = 0; w < words; w++)
		n += (unsigned)__builtin_popcountl(map[w] & cl__bitmap_word_mask(nbits, w));
	return n;
}

/*
 * dst |= src on the bits below nbits (bits of src at or above nbits are
 * ignored). Returns how many bits of src below nbits were set.
 */
CL_INLINE unsigned cl__bitmap_or(unsigned long *dst, const unsigned long *src, unsigned nbits)
{
	unsigned w, n = 0, words = nbits / CL__BITS_PER_LONG + (nbits % CL__BITS_PER_LONG != 0);

	for (w = 0; w < words; w++) {
		unsigned long m = src[w] & cl__bitmap_word_mask(nbits, w);

		dst[w] |= m;
		n += (unsigned)__builtin_popcountl(m);
	}
	return n;
}

/*
 * The calling thread's allowed CPUs (sched_getaffinity), as a map of at
 * least min_bits bits (at least 1024) that grows until the kernel's mask
 * fits. *nbits receives the map's size in bits (a multiple of
 * CL__BITS_PER_LONG). Returns the map (free() it), or NULL with errno
 * ENOMEM or the syscall's error.
 */
CL_INLINE unsigned long *cl__bitmap_getaffinity(unsigned min_bits, unsigned *nbits)
{
	size_t len;

	if (min_bits < 1024)
		min_bits = 1024;
	len = (size_t)cl__bitmap_words(min_bits) * sizeof(unsigned long);
	for (;;) {
		unsigned long *buf = (unsigned long *)calloc(1, len);
		long r;

		if (!buf) {
			errno = ENOMEM;
			return NULL;
		}
		r = syscall(SYS_sched_getaffinity, 0, len, buf);
		if (r > 0) {
			*nbits = (unsigned)(len / sizeof(unsigned long)) * CL__BITS_PER_LONG;
			return buf;
		}
		free(buf);
		if (r == 0)
			errno = EINVAL;
		if (r == 0 || errno != EINVAL || len >= ((size_t)1 << 20))
			return NULL;
		len *= 2; /* the kernel's mask is larger than ours */
	}
}

CL_END_DECLS

#endif /* CACHELOCAL_INTERNAL_BITMAP_H */
