/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_percpu.c - per-CPU pool operation sequences against a
 * shadow of the live objects.
 *
 * Byte 0 chooses the pool (stride 4 KiB..64 KiB, 1-4 CPUs, plain or
 * CL_PERCPU_ROBUST, with or without CL_PERCPU_NUMA); then each op is one of
 * alloc (random size and alignment, valid or not), free, a bad free
 * (double, interior, another CPU's copy, foreign, NULL pool), and a stats
 * check. Checked after each op:
 *  - invalid arguments give NULL/-1 with EINVAL, valid allocs succeed;
 *  - a new object is aligned, zero on every CPU and overlaps no live one;
 *  - each live object keeps its own tag byte on every CPU until freed
 *    (non-overlap again, and no clearing of a neighbour);
 *  - cl_percpu_ptr_stride() is CPU 0's address + cpu * stride;
 *  - the pool's stats agree with the shadow (live count, bytes, bad frees).
 */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include <cachelocal/percpu.h>

enum { MAX_LIVE = 48, MAX_FREED = 16, MAX_OPS = 256 };

struct obj {
	unsigned char *p;
	size_t size; /* rounded to CL_PERCPU_MIN_ALIGN */
	unsigned char tag;
};

struct state {
	struct cl_percpu_pool *pool;
	size_t stride;
	unsigned nr_cpus;
	struct obj live[MAX_LIVE];
	unsigned nr_live;
	void *freed[MAX_FREED]; /* recently freed addresses, for double frees */
	unsigned nr_freed;
	size_t bad_frees;
	unsigned char next_tag;
};

static size_t round8(size_t n)
{
	return (n + CL_PERCPU_MIN_ALIGN - 1) & ~(size_t)(CL_PERCPU_MIN_ALIGN - 1);
}

static void check_tag(const struct state *s, const struct obj *o)
{
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		const unsigned char *q = cl_percpu_ptr_stride(o->p, c, s->stride);

		FZ_CHECK(q == o->p + (size_t)c * s->stride, "ptr_stride(%p, %u)", (void *)o->p, c);
		for (size_t b = 0; b < o->size; b++)
			FZ_CHECK(q[b] == o->tag, "object %p cpu %u byte %zu: %#x, tag %#x",
				 (void *)o->p, c, b, q[b], o->tag);
	}
}

static void op_alloc(struct state *s, struct fz *f)
{
	size_t size = fz_u16(f) % (s->stride + 64);
	uint8_t a = fz_u8(f);
	size_t align = (a & 0x80) ? (size_t)(a & 0x7f) : (size_t)1 << (a % 18);
	int valid = size != 0 && size <= s->stride && align != 0 && (align & (align - 1)) == 0 &&
		    align <= s->stride;
	unsigned char *p;
	struct obj *o;

	if (valid && s->nr_live == MAX_LIVE)
		return;
	errno = 0;
	p = cl_percpu_alloc(s->pool, size, align);
	if (!valid) {
		FZ_CHECK(p == NULL && errno == EINVAL, "alloc(%zu, %zu) invalid: %p errno %d", size,
			 align, (void *)p, errno);
		return;
	}
	FZ_CHECK(p != NULL, "alloc(%zu, %zu) failed: errno %d", size, align, errno);
	FZ_CHECK((uintptr_t)p % (align > CL_PERCPU_MIN_ALIGN ? align : CL_PERCPU_MIN_ALIGN) == 0,
		 "alloc(%zu, %zu) = %p misaligned", size, align, (void *)p);
	for (unsigned i = 0; i < s->nr_live; i++) {
		const struct obj *l = &s->live[i];

		FZ_CHECK(p + round8(size) <= l->p || l->p + l->size <= p,
			 "alloc(%zu) = %p overlaps live %p (+%zu)", size, (void *)p, (void *)l->p,
			 l->size);
	}
	o = &s->live[s->nr_live++];
	o->p = p;
	o->size = round8(size);
	o->tag = (unsigned char)(++s->next_tag | 1); /* never 0 */
	for (unsigned c = 0; c < s->nr_cpus; c++) {
		unsigned char *q = cl_percpu_ptr_stride(p, c, s->stride);

		for (size_t b = 0; b < o->size; b++)
			FZ_CHECK(q[b] == 0, "new object %p cpu %u byte %zu = %#x, not zero", (void *)p, c,
				 b, q[b]);
		memset(q, o->tag, o->size);
	}
	/* the address is live again: no longer a double-free candidate */
	for (unsigned i = 0; i < s->nr_freed; i++)
		if (s->freed[i] == p)
			s->freed[i--] = s->freed[--s->nr_freed];
}

static void op_free(struct state *s, struct fz *f)
{
	unsigned i;
	struct obj o;

	if (!s->nr_live)
		return;
	i = fz_below(f, s->nr_live);
	o = s->live[i];
	check_tag(s, &o);
	errno = 0;
	FZ_CHECK(cl_percpu_free(s->pool, o.p) == 0, "free(%p) failed: errno %d", (void *)o.p, errno);
	s->live[i] = s->live[--s->nr_live];
	if (s->nr_freed == MAX_FREED)
		s->freed[fz_below(f, MAX_FREED)] = o.p;
	else
		s->freed[s->nr_freed++] = o.p;
}

static void expect_bad_free(struct state *s, void *p, const char *what)
{
	errno = 0;
	FZ_CHECK(cl_percpu_free(s->pool, p) == -1 && errno == EINVAL, "%s free(%p) accepted", what, p);
	s->bad_frees++;
}

static void op_bad_free(struct state *s, struct fz *f)
{
	unsigned k = fz_u8(f) % 5;
	int local;

	switch (k) {
	case 0: /* double free */
		if (s->nr_freed)
			expect_bad_free(s, s->freed[fz_below(f, s->nr_freed)], "double");
		break;
	case 1: /* interior pointer */
		if (s->nr_live) {
			struct obj *o = &s->live[fz_below(f, s->nr_live)];
			size_t off = 1 + fz_u16(f) % o->size;

			if (off < o->size)
				expect_bad_free(s, o->p + off, "interior");
		}
		break;
	case 2: /* another CPU's copy */
		if (s->nr_live && s->nr_cpus > 1) {
			struct obj *o = &s->live[fz_below(f, s->nr_live)];

			expect_bad_free(s, cl_percpu_ptr_stride(o->p, 1 + fz_below(f, s->nr_cpus - 1),
								s->stride), "other CPU's");
		}
		break;
	case 3: /* foreign */
		expect_bad_free(s, &local, "foreign");
		break;
	default: /* NULL pool, NULL pointer */
		errno = 0;
		FZ_CHECK(cl_percpu_free(NULL, s->nr_live ? s->live[0].p : NULL) == -1 && errno == EINVAL,
			 "free with NULL pool");
		FZ_CHECK(cl_percpu_alloc(NULL, 8, 8) == NULL && errno == EINVAL, "alloc NULL pool");
		FZ_CHECK(cl_percpu_free(s->pool, NULL) == 0, "free(NULL)");
		break;
	}
}

static void check_stats(struct state *s)
{
	struct cl_percpu_stats st;
	size_t bytes = 0;

	for (unsigned i = 0; i < s->nr_live; i++) {
		bytes += s->live[i].size;
		check_tag(s, &s->live[i]);
	}
	FZ_CHECK(cl_percpu_pool_stats(s->pool, &st) == 0, "stats");
	FZ_CHECK(st.nr_live == s->nr_live, "stats live %zu, shadow %u", st.nr_live, s->nr_live);
	FZ_CHECK(st.bytes_live == bytes, "stats bytes %zu, shadow %zu", st.bytes_live, bytes);
	FZ_CHECK(st.nr_bad_frees == s->bad_frees, "stats bad frees %zu, shadow %zu", st.nr_bad_frees,
		 s->bad_frees);
	FZ_CHECK(st.nr_poison_damaged == 0, "poison damaged %zu", st.nr_poison_damaged);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t strides[] = { 0, 4096, 8192, 16384 };
	struct fz f = { data, size };
	struct cl_percpu_pool_attr attr;
	struct state s;
	uint8_t cfg = fz_u8(&f);

	memset(&s, 0, sizeof(s));
	memset(&attr, 0, sizeof(attr));
	attr.stride = strides[cfg & 3];
	attr.max_nr_cpus = 1 + ((cfg >> 2) & 3);
	attr.flags = ((cfg & 0x10) ? CL_PERCPU_ROBUST : 0) | ((cfg & 0x20) ? CL_PERCPU_NUMA : 0);
	s.pool = cl_percpu_pool_create(&attr);
	FZ_CHECK(s.pool != NULL, "pool_create failed: errno %d", errno);
	s.stride = cl_percpu_pool_stride(s.pool);
	s.nr_cpus = cl_percpu_pool_nr_cpus(s.pool);
	FZ_CHECK(s.stride == (attr.stride ? attr.stride : (size_t)CL_PERCPU_STRIDE), "stride %zu",
		 s.stride);
	FZ_CHECK(s.nr_cpus == attr.max_nr_cpus, "nr_cpus %u", s.nr_cpus);
	for (unsigned n = 0; n < MAX_OPS && fz_more(&f); n++) {
		switch (fz_u8(&f) % 8) {
		case 0: case 1: case 2:
			op_alloc(&s, &f);
			break;
		case 3: case 4:
			op_free(&s, &f);
			break;
		case 5:
			op_bad_free(&s, &f);
			break;
		default:
			check_stats(&s);
			break;
		}
	}
	check_stats(&s);
	FZ_CHECK(cl_percpu_pool_report_leaks(s.pool, NULL) == s.nr_live, "leak count");
	cl_percpu_pool_destroy(s.pool);
	return 0;
}
