/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz.h - shared helpers of the libFuzzer targets: a reader
 * that turns the fuzzer's bytes into operands (zeros once the input is
 * used up) and a check macro that aborts with a message, which libFuzzer
 * reports as a crash and saves the input for.
 *
 * Each target is one C file with LLVMFuzzerTestOneInput(); `make fuzz`
 * builds it with clang -fsanitize=fuzzer,address,undefined and runs it on
 * its seed corpus in tests/fuzz/corpus/<target>/ for FUZZ_SECONDS.
 */
#ifndef CL_FUZZ_H
#define CL_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The fuzzer's bytes, consumed front to back. */
struct fz {
	const uint8_t *p;
	size_t n;
};

static inline int fz_more(const struct fz *f)
{
	return f->n > 0;
}

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t lo = fz_u8(f);

	return (uint16_t)(lo | (uint16_t)fz_u8(f) << 8);
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t lo = fz_u16(f);

	return lo | (uint32_t)fz_u16(f) << 16;
}

/* A value in [0, n) (n > 0). */
static inline unsigned fz_below(struct fz *f, unsigned n)
{
	return n > 256 ? fz_u16(f) % n : fz_u8(f) % n;
}

#define FZ_CHECK(cond, ...)                                                      \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,   \
				__LINE__, #cond);                                \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			abort();                                                 \
		}                                                                \
	} while (0)

#endif /* CL_FUZZ_H */
