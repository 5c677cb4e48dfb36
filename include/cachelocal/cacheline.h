/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cacheline.h - cache-line groups with build-time proof of layout.
 *
 * A struct that several CPUs touch is laid out by access pattern (technique
 * T1/T2 in README.md): the fields one hot path reads go together on one line,
 * an atomic RMW target (a lock) sits alone on its own line, and fields written
 * on every update move off the read-mostly lines. This header names those
 * groups inside the struct and proves the layout at compile time:
 *
 *	struct demo {
 *		CL_GROUP_BEGIN_ALIGNED(demo_read_pick);
 *		unsigned int nr_running;
 *		void *curr;
 *		CL_GROUP_END_ALIGNED(demo_read_pick);
 *
 *		CL_GROUP_BEGIN_ALIGNED(demo_lock);
 *		int lock;
 *		CL_GROUP_END_ALIGNED(demo_lock);
 *	};
 *	CL_ASSERT_GROUP_MEMBER(struct demo, demo_read_pick, nr_running);
 *	CL_ASSERT_GROUP_SIZE(struct demo, demo_read_pick, CL_CACHELINE_SIZE);
 *	CL_ASSERT_APART(struct demo, lock, nr_running);
 *
 * Group markers are zero-size members (a GNU extension, spelled with
 * __extension__ so -pedantic C stays quiet): they take no space, and the
 * _ALIGNED/_GUARDED forms add only alignment, so C and C++ see one layout.
 * In C++ the same zero-size member is wrapped in a diagnostic push/pop that
 * covers its own declaration only (g++ -pedantic rejects a zero-size member
 * that is not last even with __extension__), so `g++/clang++ -std=c++17
 * -pedantic -Werror` accept grouped structs and still warn about the
 * user's own code. One more g++ -pedantic rule applies where a grouped
 * struct is embedded in another struct with members after it (the warning
 * is reported at the embedding member): declare that member with
 * CL_GROUPED_MEMBER(struct grouped name); in C it is the plain declaration.
 *
 * Line numbers in the asserts and in cl_layout_print() count from the start
 * of the struct: they describe the cache lines of an object placed on a line
 * boundary, which every struct with an _ALIGNED group is (its alignment is at
 * least CL_CACHELINE_SIZE; allocate it with aligned_alloc or a per-CPU pool,
 * not plain malloc).
 *
 * Run-time side: cl_cacheline_size_runtime() reads the machine's line size,
 * cl_cacheline_check() compares it with the build-time one, and the layout
 * description (CL_LAYOUT_FIELD/CL_LAYOUT_GROUP, cl_layout_print()) prints a
 * pahole-like view of a struct from inside the program.
 */
#ifndef CACHELOCAL_CACHELINE_H
#define CACHELOCAL_CACHELINE_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compiler.h"
#include "config.h"

CL_BEGIN_DECLS

/* ---- alignment ---- */

/* Align a variable, member or type to one cache line. */
#define CL_CACHELINE_ALIGNED CL_ALIGNED(CL_CACHELINE_SIZE)
/* Align to the false-sharing guard unit (keeps writers' prefetch pairs apart). */
#define CL_FALSE_SHARING_ALIGNED CL_ALIGNED(CL_FALSE_SHARING_SIZE)

/* ---- groups ---- */

#define CL__GROUP_BEGIN_NAME(g) cl__group_begin__##g
#define CL__GROUP_END_NAME(g) cl__group_end__##g
/*
 * CL__MARKER_ATTR(name, attr): a zero-size member `name` with attributes
 * attr (alignment), written before the user's ';'. In C++ the pragmas
 * scope the -Wpedantic exemption to this one declaration (the pedwarn is
 * located at the member), and a static_assert takes the user's ';' so the
 * macro stays usable as one member declaration.
 */
#ifdef __cplusplus
#define CL__MARKER_ATTR(name, attr)                                                     \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpedantic\"") \
	__extension__ unsigned char name[0] attr;                                       \
	_Pragma("GCC diagnostic pop") static_assert(true, "cachelocal group marker")
#else
#define CL__MARKER_ATTR(name, attr) __extension__ unsigned char name[0] attr
#endif
#define CL__MARKER(name) CL__MARKER_ATTR(name, )

/*
 * CL_GROUPED_MEMBER(decl): a member `decl` (e.g. `struct cl_sched_entity se`)
 * whose type contains group markers, followed by more members. Layout and
 * meaning as the plain declaration; in C++ it keeps g++ -pedantic from
 * rejecting the embedding of a struct with zero-size members. Followed by a
 * semicolon.
 */
#ifdef __cplusplus
#define CL_GROUPED_MEMBER(decl)                                                         \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpedantic\"") \
	decl;                                                                           \
	_Pragma("GCC diagnostic pop") static_assert(true, "cachelocal grouped member")
#else
#define CL_GROUPED_MEMBER(decl) decl
#endif

/*
 * CL_GROUP_BEGIN(g) / CL_GROUP_END(g): mark members between them as group g.
 * No space, no alignment. Followed by a semicolon, like a member declaration.
 */
#define CL_GROUP_BEGIN(g) CL__MARKER(CL__GROUP_BEGIN_NAME(g))
#define CL_GROUP_END(g) CL__MARKER(CL__GROUP_END_NAME(g))

/*
 * CL_GROUP_BEGIN_ALIGNED(g): the group starts on a new cache line.
 * CL_GROUP_END_ALIGNED(g): ends the group and pads so that the next member
 * starts on a new cache line (at the end of a struct: rounds its size up).
 */
#define CL_GROUP_BEGIN_ALIGNED(g) CL__MARKER_ATTR(CL__GROUP_BEGIN_NAME(g), CL_CACHELINE_ALIGNED)
#define CL_GROUP_END_ALIGNED(g) \
	CL__MARKER(CL__GROUP_END_NAME(g)); \
	CL__MARKER_ATTR(cl__group_pad__##g, CL_CACHELINE_ALIGNED)

/*
 * CL_GROUP_BEGIN_GUARDED(g) / CL_GROUP_END_GUARDED(g): as _ALIGNED, in units
 * of CL_FALSE_SHARING_SIZE: for a write-heavy group that must not share an
 * adjacent-line prefetch pair with anything else.
 */
#define CL_GROUP_BEGIN_GUARDED(g) CL__MARKER_ATTR(CL__GROUP_BEGIN_NAME(g), CL_FALSE_SHARING_ALIGNED)
#define CL_GROUP_END_GUARDED(g) \
	CL__MARKER(CL__GROUP_END_NAME(g)); \
	CL__MARKER_ATTR(cl__group_pad__##g, CL_FALSE_SHARING_ALIGNED)

/* Offset and size in bytes of group g of type T (constant expressions). */
#define CL_GROUP_OFFSET(T, g) offsetof(T, CL__GROUP_BEGIN_NAME(g))
#define CL_GROUP_SIZE(T, g) (offsetof(T, CL__GROUP_END_NAME(g)) - offsetof(T, CL__GROUP_BEGIN_NAME(g)))

/* ---- line arithmetic (constant expressions) ---- */

/* First and last unit (of `unit` bytes) that member m of T occupies. */
#define CL__FIRST_UNIT(T, m, unit) (offsetof(T, m) / (unit))
#define CL__LAST_UNIT(T, m, unit) \
	((CL_OFFSETOF_END(T, m) - (CL_SIZEOF_MEMBER(T, m) != 0)) / (unit))
#define CL__SAME_UNIT(T, a, b, unit) \
	(CL__FIRST_UNIT(T, a, unit) == CL__LAST_UNIT(T, a, unit) && \
	 CL__FIRST_UNIT(T, b, unit) == CL__LAST_UNIT(T, b, unit) && \
	 CL__FIRST_UNIT(T, a, unit) == CL__FIRST_UNIT(T, b, unit))
#define CL__APART_UNIT(T, a, b, unit) \
	(CL__LAST_UNIT(T, a, unit) < CL__FIRST_UNIT(T, b, unit) || \
	 CL__LAST_UNIT(T, b, unit) < CL__FIRST_UNIT(T, a, unit))

/* ---- build-time layout asserts (file or block scope) ---- */

/* Member m of T lies entirely inside group g. */
#define CL_ASSERT_GROUP_MEMBER(T, g, m) \
	CL_STATIC_ASSERT(offsetof(T, m) >= CL_GROUP_OFFSET(T, g) && \
				 CL_OFFSETOF_END(T, m) <= offsetof(T, CL__GROUP_END_NAME(g)), \
			 "cachelocal: " #T ": member " #m " is not in group " #g)

/* Group g of T spans at most `bytes` bytes. */
#define CL_ASSERT_GROUP_SIZE(T, g, bytes) \
	CL_STATIC_ASSERT(CL_GROUP_SIZE(T, g) <= (bytes), \
			 "cachelocal: " #T ": group " #g " is larger than " #bytes " bytes")

/* Group g of T starts on a cache-line boundary. */
#define CL_ASSERT_GROUP_ALIGNED(T, g) \
	CL_STATIC_ASSERT(CL_GROUP_OFFSET(T, g) % CL_CACHELINE_SIZE == 0, \
			 "cachelocal: " #T ": group " #g " does not start on a cache line")

/* Members a and b both lie within one CL_CACHELINE_SIZE line. */
#define CL_ASSERT_SAME_LINE(T, a, b) \
	CL_STATIC_ASSERT(CL__SAME_UNIT(T, a, b, CL_CACHELINE_SIZE), \
			 "cachelocal: " #T ": members " #a " and " #b " are not on one cache line")

/* Members a and b share no CL_CACHELINE_SIZE line. */
#define CL_ASSERT_APART(T, a, b) \
	CL_STATIC_ASSERT(CL__APART_UNIT(T, a, b, CL_CACHELINE_SIZE), \
			 "cachelocal: " #T ": members " #a " and " #b " share a cache line")

/* Members a and b share no CL_FALSE_SHARING_SIZE unit. */
#define CL_ASSERT_APART_GUARD(T, a, b) \
	CL_STATIC_ASSERT(CL__APART_UNIT(T, a, b, CL_FALSE_SHARING_SIZE), \
			 "cachelocal: " #T ": members " #a " and " #b \
			 " share a false-sharing unit (CL_FALSE_SHARING_SIZE)")

/* Objects of type T start on a cache line. */
#ifdef __cplusplus
#define CL__ALIGNOF(T) alignof(T)
#else
#define CL__ALIGNOF(T) _Alignof(T)
#endif
#define CL_ASSERT_ALIGNED(T) \
	CL_STATIC_ASSERT(CL__ALIGNOF(T) >= CL_CACHELINE_SIZE, \
			 "cachelocal: " #T " is not aligned to CL_CACHELINE_SIZE")

/* ---- run-time line size ---- */

/*
 * cl__cacheline_size_sysfs() - largest coherency_line_size under a cache dir.
 * @cache_dir: e.g. "/sys/devices/system/cpu/cpu0/cache".
 * Return: the size in bytes, or 0 if no index<N>/coherency_line_size is readable.
 */
CL_INLINE size_t cl__cacheline_size_sysfs(const char *cache_dir)
{
	size_t best = 0;

	for (int i = 0; i < 16; i++) {
		char path[512];
		unsigned long v = 0;
		FILE *f;

		if (snprintf(path, sizeof(path), "%s/index%d/coherency_line_size", cache_dir, i) >=
		    (int)sizeof(path))
			break;
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%lu", &v) == 1 && v > best && v <= 65536)
			best = v;
		fclose(f);
	}
	return best;
}

/**
 * cl_cacheline_size_runtime() - the machine's cache-line size.
 *
 * Asks sysconf(_SC_LEVEL1_DCACHE_LINESIZE) first, then the largest
 * coherency_line_size under /sys/devices/system/cpu/cpu0/cache.
 *
 * Context: any thread; reads files, not for hot paths.
 * Return: the line size in bytes, or 0 if neither source knows it.
 */
CL_INLINE size_t cl_cacheline_size_runtime(void)
{
#ifdef _SC_LEVEL1_DCACHE_LINESIZE
	long v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);

	if (v > 0 && v <= 65536)
		return (size_t)v;
#endif
	return cl__cacheline_size_sysfs("/sys/devices/system/cpu/cpu0/cache");
}

/*
 * cl__cacheline_check_size() - cl_cacheline_check() against a given machine
 * line size (0 = unknown); the testable core.
 */
CL_INLINE int cl__cacheline_check_size(size_t machine, char *msg, size_t msglen)
{
	if (msg && msglen)
		msg[0] = '\0';
	if (machine == 0 || machine <= CL_CACHELINE_SIZE)
		return 0;
	if (msg && msglen)
		snprintf(msg, msglen,
			 "cachelocal: built with CL_CACHELINE_SIZE=%u but this machine's cache line is "
			 "%zu bytes; rebuild with -DCL_CACHELINE_SIZE=%zu",
			 (unsigned)CL_CACHELINE_SIZE, machine, machine);
	errno = ERANGE;
	return -1;
}

/**
 * cl_cacheline_check() - is the build-time line size large enough here?
 * @msg: buffer for a printable explanation on failure (may be NULL).
 * @msglen: size of @msg.
 *
 * A layout built for 64-byte lines on a machine with 128-byte lines puts
 * fields the asserts call "apart" on one line: the program still works, but
 * the grouping no longer does what it promises. Programs call this once at
 * start and print @msg if it fails. An unknown machine line size passes.
 *
 * Context: any thread; reads files.
 * Return: 0 if CL_CACHELINE_SIZE >= the machine's line size (or it is
 * unknown); -1 with errno = ERANGE and @msg filled if it is smaller.
 */
CL_INLINE int cl_cacheline_check(char *msg, size_t msglen)
{
	return cl__cacheline_check_size(cl_cacheline_size_runtime(), msg, msglen);
}

/* ---- run-time layout description ---- */

enum cl_layout_kind {
	CL_LAYOUT_KIND_FIELD = 0,
	CL_LAYOUT_KIND_GROUP = 1,
};

/* One field or group of a described struct. */
struct cl_layout_entry {
	const char *name;
	size_t offset;
	size_t size;
	enum cl_layout_kind kind;
};

/* A described struct: name, size, alignment and its entries. */
struct cl_layout {
	const char *name;
	size_t size;
	size_t align;
	const struct cl_layout_entry *entries;
	size_t nr_entries;
};

/* Initializers for a struct cl_layout_entry array. */
#define CL_LAYOUT_FIELD(T, m) \
	{ #m, offsetof(T, m), CL_SIZEOF_MEMBER(T, m), CL_LAYOUT_KIND_FIELD }
#define CL_LAYOUT_GROUP(T, g) \
	{ #g, CL_GROUP_OFFSET(T, g), CL_GROUP_SIZE(T, g), CL_LAYOUT_KIND_GROUP }
/* Initializer for a struct cl_layout over an entry array. */
#define CL_LAYOUT(T, entries) \
	{ #T, sizeof(T), CL__ALIGNOF(T), (entries), sizeof(entries) / sizeof((entries)[0]) }

CL_INLINE size_t cl__layout_last_line(size_t off, size_t size)
{
	return (off + (size ? size - 1 : 0)) / CL_CACHELINE_SIZE;
}

CL_INLINE void cl__layout_print_lines(FILE *f, size_t off, size_t size)
{
	size_t a = off / CL_CACHELINE_SIZE, b = cl__layout_last_line(off, size);

	if (a == b)
		fprintf(f, "line %zu", a);
	else
		fprintf(f, "lines %zu-%zu", a, b);
}

/**
 * cl_layout_print() - print a struct's layout: fields, groups, lines, holes.
 * @f: output stream.
 * @layout: the description, built with CL_LAYOUT() over CL_LAYOUT_FIELD()
 *          and CL_LAYOUT_GROUP() entries, in any order.
 *
 * Prints, in offset order (a group before the fields at its offset), one line
 * per group ("group NAME: offset, size, lines") and per field ("NAME offset
 * size line"), a "--- cacheline N boundary ---" marker wherever a field
 * starts on a later line than the previous one, a "hole" line for bytes no
 * described field covers, and a summary with the padding at the end. Fields
 * left out of the description are reported as holes: describe them all.
 *
 * Context: any thread; allocates nothing (entries are sorted by repeated
 * selection, fine for the tens of fields a struct has).
 * Return: number of holes found (>= 0), or -1 with errno = EINVAL if an
 * argument is NULL or an entry lies outside the struct.
 */
CL_INLINE int cl_layout_print(FILE *f, const struct cl_layout *layout)
{
	size_t end = 0, cur_line = 0, hole_bytes = 0, printed = 0;
	size_t prev_off = 0, prev_idx = 0;
	int holes = 0, have_prev = 0;

	if (!f || !layout || !layout->name || (!layout->entries && layout->nr_entries)) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < layout->nr_entries; i++) {
		const struct cl_layout_entry *e = &layout->entries[i];

		if (!e->name || e->offset > layout->size || e->size > layout->size - e->offset) {
			errno = EINVAL;
			return -1;
		}
	}

	fprintf(f, "%s {\t/* size %zu, align %zu, %zu cache lines of %u bytes */\n", layout->name,
		layout->size, layout->align,
		(layout->size + CL_CACHELINE_SIZE - 1) / CL_CACHELINE_SIZE, (unsigned)CL_CACHELINE_SIZE);

	/* Selection in (offset, group-first, index) order without sorting in place. */
	while (printed < layout->nr_entries) {
		const struct cl_layout_entry *e = NULL;
		size_t ei = 0;

		for (size_t i = 0; i < layout->nr_entries; i++) {
			const struct cl_layout_entry *c = &layout->entries[i];
			int after_prev;

			if (have_prev) {
				/* strictly after the previous pick in the ordering */
				const struct cl_layout_entry *p = &layout->entries[prev_idx];

				if (c->offset != prev_off)
					after_prev = c->offset > prev_off;
				else if (c->kind != p->kind)
					after_prev = c->kind == CL_LAYOUT_KIND_FIELD;
				else
					after_prev = i > prev_idx;
				if (!after_prev)
					continue;
			}
			if (!e || c->offset < e->offset ||
			    (c->offset == e->offset && c->kind == CL_LAYOUT_KIND_GROUP &&
			     e->kind == CL_LAYOUT_KIND_FIELD)) {
				e = c;
				ei = i;
			}
		}
		printed++;
		have_prev = 1;
		prev_off = e->offset;
		prev_idx = ei;

		if (e->offset > end) {
			fprintf(f, "\t/* XXX %zu bytes hole */\n", e->offset - end);
			holes++;
			hole_bytes += e->offset - end;
			end = e->offset;
		}
		while (e->offset / CL_CACHELINE_SIZE > cur_line) {
			cur_line++;
			fprintf(f, "\t/* --- cacheline %zu boundary (%zu bytes) --- */\n", cur_line,
				cur_line * (size_t)CL_CACHELINE_SIZE);
		}
		if (e->kind == CL_LAYOUT_KIND_GROUP) {
			fprintf(f, "\t/* group %s: offset %zu, size %zu, ", e->name, e->offset, e->size);
			cl__layout_print_lines(f, e->offset, e->size);
			fprintf(f, " */\n");
			continue;
		}
		fprintf(f, "\t%-24s offset %5zu  size %5zu  ", e->name, e->offset, e->size);
		cl__layout_print_lines(f, e->offset, e->size);
		fprintf(f, "\n");
		if (e->offset + e->size > end)
			end = e->offset + e->size;
		if (cl__layout_last_line(e->offset, e->size) > cur_line)
			cur_line = cl__layout_last_line(e->offset, e->size);
	}
	fprintf(f, "};\t/* %d holes, %zu bytes in holes, %zu bytes of padding at the end */\n", holes,
		hole_bytes, layout->size - end);
	return holes;
}

CL_END_DECLS

#endif /* CACHELOCAL_CACHELINE_H */
