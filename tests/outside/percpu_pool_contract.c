/* SPDX-License-Identifier: MIT */
/*
 * percpu_pool_contract.c - the per-CPU pool contract, as a program outside the project:
 * written only against the documented percpu.h signatures, built against the
 * installed headers (make install-check).
 *
 * A 384-CPU pool on this (2-CPU) machine; 3,000 co-allocated objects
 * {group runqueue; group entity on its own line}; CPUs 0 and 1 written and
 * every copy checked independent and zeroed; the entity reached from the
 * runqueue with CL_SIBLING; free and reallocate (zeroed again); EINVAL and
 * ENOMEM for the bad inputs; RSS growth below 32 MiB.
 * Prints its evidence; exits 1 if any claim fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cachelocal/percpu.h>

#define NR_CPUS 384
#define NR_OBJS 3000

struct grq {
	unsigned long nr_running;
	unsigned long load;
	void *curr;
};

struct gse {
	unsigned long weight;
	unsigned long vruntime;
};

/* One per CPU: the group's runqueue and, on its own line, its entity. */
struct tg_pair {
	struct grq rq;
	_Alignas(64) struct gse se;
};

static int failures;

#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			failures++;                                 \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                        \
			printf("\n");                               \
		}                                                   \
	} while (0)

static long statm_field(int i)
{
	long v[2] = { 0, 0 };
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &v[0], &v[1]) != 2)
		v[0] = v[1] = -1;
	if (f)
		fclose(f);
	return v[i] * sysconf(_SC_PAGESIZE);
}

static int is_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

static int expect_errno(int got_failure, int want, const char *what)
{
	int e = errno;

	CHECK(got_failure && e == want, "%s: expected failure with %s, got %s", what, strerror(want),
	      got_failure ? strerror(e) : "success");
	if (got_failure && e == want)
		printf("  %-44s -> %s\n", what, want == EINVAL ? "EINVAL" : "ENOMEM");
	return got_failure && e == want;
}

/* In a child: cap the address space just above what is mapped now, so the
 * next range cannot be mapped. */
static int enomem_child(void)
{
	struct cl_percpu_pool_attr attr = { 0, NR_CPUS, 0 };
	struct cl_percpu_pool *pool = cl_percpu_pool_create(&attr);
	struct rlimit rl;
	void *p;

	if (!pool)
		return 2;
	rl.rlim_cur = rl.rlim_max = (rlim_t)statm_field(0) + (8u << 20);
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 3;
	errno = 0;
	p = cl_percpu_alloc(pool, 64, 64); /* needs 384 x 64 KiB = 24 MiB of address space */
	return p == NULL && errno == ENOMEM ? 0 : 1;
}

int main(void)
{
	static struct tg_pair *obj[NR_OBJS];
	struct cl_percpu_pool_attr attr = { 0, NR_CPUS, 0 };
	struct cl_percpu_pool *pool, *other;
	long rss0, rss1, rss2;
	unsigned reused = 0, bad = 0;
	int status = -1;
	pid_t pid;

	printf("percpu_pool_contract: per-CPU pool, %d CPUs in the pool, %ld online here, stride %d bytes\n", NR_CPUS,
	       sysconf(_SC_NPROCESSORS_ONLN), (int)CL_PERCPU_STRIDE);
	rss0 = statm_field(1);
	pool = cl_percpu_pool_create(&attr);
	CHECK(pool != NULL, "create: %s", strerror(errno));
	if (!pool)
		return 1;
	CHECK(cl_percpu_pool_nr_cpus(pool) == NR_CPUS, "nr_cpus %u", cl_percpu_pool_nr_cpus(pool));

	/* 3,000 co-allocated objects, zero on every CPU we look at. */
	for (int i = 0; i < NR_OBJS; i++) {
		static const unsigned probe[] = { 0, 1, 2, 191, 383 };

		obj[i] = cl_percpu_alloc(pool, sizeof(struct tg_pair), _Alignof(struct tg_pair));
		CHECK(obj[i] != NULL, "alloc %d: %s", i, strerror(errno));
		if (!obj[i])
			return 1;
		CHECK((uintptr_t)obj[i] % _Alignof(struct tg_pair) == 0, "object %d misaligned", i);
		for (unsigned k = 0; k < sizeof(probe) / sizeof(probe[0]); k++)
			bad += !is_zero(cl_percpu_ptr(obj[i], probe[k]), sizeof(struct tg_pair));
	}
	CHECK(bad == 0, "%u new copies not zero", bad);
	printf("allocated %d objects of %zu bytes (entity at offset %zu): all zero on CPUs 0,1,2,191,383\n",
	       NR_OBJS, sizeof(struct tg_pair), offsetof(struct tg_pair, se));

	/* Write CPUs 0 and 1; reach the entity from the runqueue with CL_SIBLING. */
	for (int i = 0; i < NR_OBJS; i++) {
		for (unsigned cpu = 0; cpu < 2; cpu++) {
			struct tg_pair *t = cl_percpu_ptr(obj[i], cpu);
			struct grq *rq = &t->rq;
			struct gse *se = CL_SIBLING(rq, struct tg_pair, rq, se);

			CHECK(se == &t->se, "CL_SIBLING");
			rq->nr_running = (unsigned long)i * 2 + cpu;
			se->weight = 1024 + (unsigned long)i * 2 + cpu;
		}
	}
	bad = 0;
	for (int i = 0; i < NR_OBJS; i++) {
		for (unsigned cpu = 0; cpu < 2; cpu++) {
			struct tg_pair *t = cl_percpu_ptr(obj[i], cpu);

			bad += t->rq.nr_running != (unsigned long)i * 2 + cpu;
			bad += CL_SIBLING(&t->rq, struct tg_pair, rq, se)->weight != 1024 + (unsigned long)i * 2 + cpu;
			bad += (uintptr_t)t != (uintptr_t)obj[i] + cpu * (uintptr_t)CL_PERCPU_STRIDE;
		}
		bad += !is_zero(cl_percpu_ptr(obj[i], 2), sizeof(struct tg_pair));
	}
	CHECK(bad == 0, "%u copies not independent", bad);
	printf("wrote CPUs 0 and 1 of every object: copies independent (CPU 2 still zero), entity reached with CL_SIBLING\n");

	rss1 = statm_field(1);
	printf("RSS grew by %ld KiB (touching all %d CPUs would need %ld KiB)\n", (rss1 - rss0) / 1024, NR_CPUS,
	       (long)NR_CPUS * NR_OBJS * (long)sizeof(struct tg_pair) / 1024);
	CHECK(rss1 - rss0 < (32L << 20), "RSS grew by %ld bytes", rss1 - rss0);

	/* Free every other object and reallocate: the holes share pages with
	 * live objects, so the written copies are cleared, and only they. */
	for (int i = 0; i < NR_OBJS; i += 2)
		CHECK(cl_percpu_free(pool, obj[i]) == 0, "free %d: %s", i, strerror(errno));
	bad = 0;
	for (int i = 0; i < NR_OBJS; i += 2) {
		struct tg_pair *p = cl_percpu_alloc(pool, sizeof(struct tg_pair), _Alignof(struct tg_pair));

		CHECK(p != NULL, "realloc %d", i);
		if (!p)
			return 1;
		reused += p == obj[i];
		obj[i] = p;
		bad += !is_zero(cl_percpu_ptr(p, 0), sizeof(*p)) + !is_zero(cl_percpu_ptr(p, 1), sizeof(*p));
	}
	for (int i = 1; i < NR_OBJS; i += 2)
		bad += ((struct tg_pair *)cl_percpu_ptr(obj[i], 1))->rq.nr_running != (unsigned long)i * 2 + 1;
	CHECK(bad == 0, "%u reused copies not zero or neighbours damaged", bad);
	printf("freed every other object and reallocated %d: %u in the same hole, zero on CPUs 0 and 1, neighbours intact\n",
	       NR_OBJS / 2, reused);

	/* Free all (double free refused) and reallocate all. */
	for (int i = 0; i < NR_OBJS; i++)
		CHECK(cl_percpu_free(pool, obj[i]) == 0, "free %d: %s", i, strerror(errno));
	errno = 0;
	expect_errno(cl_percpu_free(pool, obj[0]) == -1, EINVAL, "double free");
	bad = 0;
	reused = 0;
	for (int i = 0; i < NR_OBJS; i++) {
		struct tg_pair *p = cl_percpu_alloc(pool, sizeof(struct tg_pair), _Alignof(struct tg_pair));

		CHECK(p != NULL, "realloc %d", i);
		if (!p)
			return 1;
		reused += p == obj[i];
		obj[i] = p;
		bad += !is_zero(cl_percpu_ptr(p, 0), sizeof(*p)) + !is_zero(cl_percpu_ptr(p, 1), sizeof(*p));
	}
	CHECK(bad == 0, "%u reused copies not zero", bad);
	printf("freed all and reallocated %d: %u at the same address, all zero on CPUs 0 and 1\n", NR_OBJS,
	       reused);
	((struct tg_pair *)cl_percpu_ptr(obj[1], 0))->rq.nr_running = 77;
	rss2 = statm_field(1);
	CHECK(rss2 - rss0 < (32L << 20), "RSS grew by %ld bytes", rss2 - rss0);
	printf("RSS growth after reuse: %ld KiB (< 32 MiB)\n", (rss2 - rss0) / 1024);

	/* Bad input. */
	printf("bad input:\n");
	{
		struct cl_percpu_pool_attr a1 = { 3 * 4096, 4, 0 }, a2 = { 1024, 4, 0 },
					   a3 = { 0, CL_MAX_CPUS + 1, 0 };
		long on_stack = 0;
		void *heap = malloc(16);

		other = cl_percpu_pool_create(NULL);
		errno = 0;
		expect_errno(cl_percpu_alloc(pool, 0, 8) == NULL, EINVAL, "alloc size 0");
		expect_errno(cl_percpu_alloc(pool, 8, 3) == NULL, EINVAL, "alloc align 3 (not a power of two)");
		expect_errno(cl_percpu_alloc(pool, 8, 2 * CL_PERCPU_STRIDE) == NULL, EINVAL,
			     "alloc align larger than the stride");
		expect_errno(cl_percpu_alloc(pool, CL_PERCPU_STRIDE + 1, 8) == NULL, EINVAL,
			     "alloc size larger than the stride");
		expect_errno(cl_percpu_alloc(NULL, 8, 8) == NULL, EINVAL, "alloc from a NULL pool");
		expect_errno(cl_percpu_free(NULL, obj[0]) == -1, EINVAL, "free to a NULL pool");
		expect_errno(cl_percpu_pool_create(&a1) == NULL, EINVAL, "stride 12288 (not a power of two)");
		expect_errno(cl_percpu_pool_create(&a2) == NULL, EINVAL, "stride 1024 (below the page size)");
		expect_errno(cl_percpu_pool_create(&a3) == NULL, EINVAL, "max_nr_cpus CL_MAX_CPUS + 1");
		expect_errno(cl_percpu_free(pool, &on_stack) == -1, EINVAL, "free of a stack address");
		expect_errno(cl_percpu_free(pool, heap) == -1, EINVAL, "free of a malloc'ed address");
		expect_errno(cl_percpu_free(pool, (char *)obj[1] + 8) == -1, EINVAL, "free of an interior pointer");
		expect_errno(cl_percpu_free(pool, cl_percpu_ptr(obj[1], 1)) == -1, EINVAL,
			     "free of CPU 1's copy");
		if (other) {
			void *o = cl_percpu_alloc(other, 8, 8);

			expect_errno(cl_percpu_free(pool, o) == -1, EINVAL, "free of another pool's object");
			CHECK(cl_percpu_free(other, o) == 0, "free to its own pool");
			cl_percpu_pool_destroy(other);
		}
		free(heap);
		CHECK(((struct tg_pair *)cl_percpu_ptr(obj[1], 0))->rq.nr_running == 77,
		      "rejected frees left the object alone");
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(enomem_child());
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "ENOMEM child status %#x", status);
	if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		printf("  %-44s -> ENOMEM\n", "alloc when no range can be mapped (RLIMIT_AS)");

	for (int i = 0; i < NR_OBJS; i++)
		CHECK(cl_percpu_free(pool, obj[i]) == 0, "final free %d", i);
	cl_percpu_pool_destroy(pool);
	printf("percpu_pool_contract: %s\n", failures ? "FAILED" : "all claims hold");
	return failures ? 1 : 0;
}
