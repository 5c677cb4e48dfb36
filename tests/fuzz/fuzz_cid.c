/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_cid.c - cid domain operation sequences against a shadow.
 *
 * Byte 0 chooses the policy (naive, recent, LLC) and the topology (this
 * machine, or a tests/data tree: 8core-1l3, 24core-24l3, sparse); then ops
 * join (the calling thread), join_cpus (a random CPU mask, possibly empty or
 * beyond the cid space), leave, acquire_on (any CPU, in range or not),
 * acquire, release (held, not held, out of range), refresh_allowed, and a
 * stats check. The shadow keeps the users, the grow-only allowed union and
 * the held cids; checked after each op:
 *  - uniqueness: an acquired cid is not held already, and is below the bound
 *    of that moment (min(allowed CPUs, users));
 *  - acquire fails only with EINVAL (bad CPU) or EBUSY, and EBUSY only when
 *    no cid below the bound is free and holders >= users (an acquire that
 *    would sleep, holders < users with every cid below the bound taken, is
 *    not issued: this target is single-threaded);
 *  - bad calls (leave without users, empty join mask, releases of cids not
 *    held or out of range, NULL domain) give EINVAL and change nothing;
 *  - cl_cid_domain_bound() and cl_cid_domain_stats() agree with the shadow.
 */
#include "fuzz.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include <cachelocal/cid.h>

#ifndef CL_TEST_DATA_DIR
#error "build with -DCL_TEST_DATA_DIR=\"<repo>/tests/data\""
#endif

enum { MAX_OPS = 512, BPL = 8 * sizeof(unsigned long) };

static const char *const trees[] = { NULL, "8core-1l3", "24core-24l3", "sparse" };
static struct cl_topology topos[4];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	for (unsigned i = 1; i < 4; i++) {
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", CL_TEST_DATA_DIR, trees[i]);
		if (cl_topology_load(&topos[i], path) != 0)
			abort();
	}
	return 0;
}

struct shadow {
	struct cl_cid_domain *d;
	unsigned nr;
	unsigned users;
	unsigned char *allowed; /* union, per CPU < nr */
	unsigned nr_allowed;
	unsigned char *held;
	unsigned nr_held;
};

static unsigned bound(const struct shadow *s)
{
	return s->nr_allowed < s->users ? s->nr_allowed : s->users;
}

static void add_allowed(struct shadow *s, unsigned cpu)
{
	if (cpu < s->nr && !s->allowed[cpu]) {
		s->allowed[cpu] = 1;
		s->nr_allowed++;
	}
}

static void check_state(const struct shadow *s)
{
	struct cl_cid_stats st;

	FZ_CHECK(cl_cid_domain_bound(s->d) == bound(s), "bound %u, shadow %u",
		 cl_cid_domain_bound(s->d), bound(s));
	FZ_CHECK(cl_cid_domain_stats(s->d, &st) == 0, "stats");
	FZ_CHECK(st.held == s->nr_held, "held %u, shadow %u", (unsigned)st.held, s->nr_held);
	FZ_CHECK(st.users == s->users, "users %u, shadow %u", (unsigned)st.users, s->users);
	FZ_CHECK(st.nr_allowed == s->nr_allowed, "allowed %u, shadow %u", (unsigned)st.nr_allowed,
		 s->nr_allowed);
	FZ_CHECK(st.nr_cids == s->nr, "nr_cids %u, shadow %u", (unsigned)st.nr_cids, s->nr);
}

static void op_join_cpus(struct shadow *s, struct fz *f)
{
	unsigned nbits = s->nr + 8, words = (nbits + BPL - 1) / BPL, kind = fz_u8(f) % 4, in = 0;
	unsigned long *mask = calloc(words, sizeof(*mask));
	int r;

	if (!mask)
		abort();
	if (kind == 0) { /* one CPU */
		unsigned c = fz_below(f, nbits);

		mask[c / BPL] |= 1ul << (c % BPL);
	} else if (kind == 1) { /* a range */
		unsigned lo = fz_below(f, nbits), len = fz_below(f, 64);

		for (unsigned c = lo; c < nbits && c < lo + len; c++)
			mask[c / BPL] |= 1ul << (c % BPL);
	} else if (kind == 2) { /* random words */
		for (unsigned w = 0; w < words && w < 4; w++)
			mask[fz_below(f, words)] |= (unsigned long)fz_u32(f) << (fz_u8(f) & 31);
	} /* kind 3: empty */
	for (unsigned c = 0; c < s->nr; c++)
		in += (mask[c / BPL] >> (c % BPL)) & 1;
	errno = 0;
	r = cl_cid_domain_join_cpus(s->d, mask, nbits);
	if (!in) {
		FZ_CHECK(r == -1 && errno == EINVAL, "join_cpus with no CPU in the space: %d", r);
	} else {
		FZ_CHECK(r == 0, "join_cpus failed: errno %d", errno);
		s->users++;
		for (unsigned c = 0; c < s->nr; c++)
			if ((mask[c / BPL] >> (c % BPL)) & 1)
				add_allowed(s, c);
	}
	free(mask);
}

static void add_affinity(struct shadow *s)
{
	cpu_set_t set;

	FZ_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "getaffinity");
	for (unsigned c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			add_allowed(s, c);
}

static void op_acquire(struct shadow *s, struct fz *f, int any_cpu)
{
	int cpu = any_cpu ? (int)fz_below(f, s->nr + 4) - 2 : 0;
	unsigned b = bound(s), free_below = 0;
	int c;

	for (unsigned i = 0; i < b && i < s->nr; i++)
		free_below += !s->held[i];
	if (!free_below && s->nr_held < s->users)
		return; /* would sleep until another thread releases */
	errno = 0;
	c = any_cpu ? cl_cid_acquire_on(s->d, cpu) : cl_cid_acquire(s->d);
	if (any_cpu && (cpu < 0 || (unsigned)cpu >= s->nr)) {
		FZ_CHECK(c == -1 && errno == EINVAL, "acquire_on(%d) out of range: %d", cpu, c);
		return;
	}
	if (!free_below) {
		FZ_CHECK(c == -1 && errno == EBUSY, "acquire with %u held, %u users, bound %u: %d",
			 s->nr_held, s->users, b, c);
		return;
	}
	FZ_CHECK(c >= 0, "acquire failed with %u free below bound %u: errno %d", free_below, b, errno);
	FZ_CHECK((unsigned)c < b, "cid %d not below the bound %u", c, b);
	FZ_CHECK(!s->held[c], "cid %d handed out twice", c);
	s->held[c] = 1;
	s->nr_held++;
}

static void op_release(struct shadow *s, struct fz *f)
{
	unsigned kind = fz_u8(f) % 4;
	int c = -1;

	if (kind < 2 && s->nr_held) { /* a held one */
		unsigned k = fz_below(f, s->nr_held);

		for (unsigned i = 0; i < s->nr; i++)
			if (s->held[i] && k-- == 0) {
				c = (int)i;
				break;
			}
		cl_cid_release(s->d, c);
		s->held[c] = 0;
		s->nr_held--;
		return;
	}
	c = kind == 2 ? (int)fz_below(f, s->nr) : (int)fz_below(f, 8) - 4 + (fz_u8(f) & 1 ? (int)s->nr : 0);
	if (c >= 0 && (unsigned)c < s->nr && s->held[c])
		return; /* covered above */
	errno = 0;
	cl_cid_release(s->d, c);
	FZ_CHECK(errno == EINVAL, "release(%d) of a cid not held: errno %d", c, errno);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum cl_cid_policy policies[] = { CL_CID_NAIVE, CL_CID_RECENT, CL_CID_LLC };
	struct fz f = { data, size };
	uint8_t cfg = fz_u8(&f);
	const struct cl_topology *t = (cfg >> 2) & 3 ? &topos[(cfg >> 2) & 3] : NULL;
	struct shadow s;
	struct cl_cid_stats st;

	memset(&s, 0, sizeof(s));
	s.d = cl_cid_domain_create(policies[(cfg & 3) % 3], t);
	FZ_CHECK(s.d != NULL, "domain_create failed: errno %d", errno);
	FZ_CHECK(cl_cid_domain_stats(s.d, &st) == 0, "stats");
	s.nr = st.nr_cids;
	FZ_CHECK(s.nr >= cl_nr_possible_cpus() && (!t || s.nr >= t->nr_cpu_ids), "nr %u", s.nr);
	s.allowed = calloc(s.nr, 1);
	s.held = calloc(s.nr, 1);
	if (!s.allowed || !s.held)
		abort();
	for (unsigned n = 0; n < MAX_OPS && fz_more(&f); n++) {
		switch (fz_u8(&f) % 12) {
		case 0:
			FZ_CHECK(cl_cid_domain_join(s.d) == 0, "join failed: errno %d", errno);
			s.users++;
			add_affinity(&s);
			break;
		case 1:
			op_join_cpus(&s, &f);
			break;
		case 2:
			errno = 0;
			if (s.users) {
				FZ_CHECK(cl_cid_domain_leave(s.d) == 0, "leave failed");
				s.users--;
			} else {
				FZ_CHECK(cl_cid_domain_leave(s.d) == -1 && errno == EINVAL,
					 "leave without users accepted");
			}
			break;
		case 3: case 4: case 5:
			op_acquire(&s, &f, 1);
			break;
		case 6:
			op_acquire(&s, &f, 0);
			break;
		case 7: case 8: case 9:
			op_release(&s, &f);
			break;
		case 10:
			FZ_CHECK(cl_cid_domain_refresh_allowed(s.d) == 0, "refresh failed");
			add_affinity(&s);
			break;
		default:
			errno = 0;
			FZ_CHECK(cl_cid_acquire(NULL) == -1 && errno == EINVAL, "acquire(NULL)");
			FZ_CHECK(cl_cid_domain_join(NULL) == -1 && errno == EINVAL, "join(NULL)");
			FZ_CHECK(cl_cid_domain_bound(NULL) == 0, "bound(NULL)");
			break;
		}
		check_state(&s);
	}
	cl_cid_domain_destroy(s.d);
	free(s.allowed);
	free(s.held);
	return 0;
}
