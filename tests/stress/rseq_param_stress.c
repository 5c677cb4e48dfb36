/* SPDX-License-Identifier: MIT */
/*
 * rseq_param_stress - the per-CPU operations of percpu_ops.h and counter.h
 * keep exact invariants with delay loops injected at every hook point inside
 * their critical sections, many threads, signals, yields and migrations, in
 * the cpu_id and the mm_cid index modes. A parameterised test in the shape
 * of the kernel's rseq selftest (param_test), written for cachelocal.
 *
 * Test types (-T):
 *   s  spinlock   a per-index lock taken with cl_rseq_cmpstore(0 -> 1),
 *                 released with a store-release; a plain counter under it.
 *                 Sum of the counters == threads x reps, no overlap seen.
 *   c  counter    cl_rseq_add(+1) on the current index's word, and
 *                 cl_counter_add(+1) on a struct cl_counter (the SIGUSR1
 *                 handler adds 1 to it too). Word sum == threads x reps,
 *                 counter == threads x reps + handler adds.
 *   l  list       pop a node from the current index's list, push it back
 *                 where the thread is then (cl_rseq_pop / cl_rseq_trypush,
 *                 every 4th rep cl_percpu_list_pop / cl_percpu_list_push). At the
 *                 end each node is on exactly one list, once.
 *   b  buffer     pointer buffers: pop with cl_rseq_cmp2_store (or
 *                 cl_percpu_buf_pop), push with cl_rseq_cmpstore_store
 *                 (or cl_percpu_buf_push). Each item once, at the end.
 *   m  memcpy     element buffers: pop by copy-out and push by copy-in with
 *                 cl_rseq_cmpmemcpy_store (push also cl_percpu_buf_push_copy).
 *                 No element torn, each once.
 * A popped node/item/element is marked with its owner (an atomic exchange):
 * popping one that is already owned is a failure on the spot.
 *
 * Injection (rseq path): CL_RSEQ_INJECT_ASM(n) at the section's hook
 * points 1-4 (after start, after the index check, after the first compare,
 * before the commit) records n in a thread-local word, so that an abort can
 * be attributed to the last hook point its section passed, and runs
 * stress.h's delay loop (STRESS_ASM_DELAY) of -n iterations. CL_INJECT(n) (in C, around the
 * sections) counts the aborts (points 20-26), runs a -5 iteration delay, and
 * every -m-th call yields (-y), sleeps -s ms and/or raises SIGUSR1 (-k).
 * Unless -q, stress.h's signal storm (SIGUSR1 at random workers) and
 * migrator (random affinity changes) run during each round.
 *
 * Without options: a short matrix, every test type x both index modes, each
 * cell alternating calm rounds (no delays) and delayed rounds (hook delays,
 * C delays, yield and raise every 32nd C hook) until its share of DURATION
 * (default 1 s) is used up, at least one of each. Reps per thread per round:
 * ITERATIONS (default 20000) / threads; threads: 6 x CORES (stress.h). On
 * the rseq path the matrix fails unless its delayed rounds saw aborts
 * attributed to hook points (the delays do reach inside the sections).
 * Exit status: 0 pass, 1 fail, 2 bad usage.
 */
#include "stress.h"

#include <poll.h>

/* Own hooks instead of stress.h's: per-point loop counts, the point recorded. */
#undef CL_RSEQ_INJECT_ASM
#undef CL_RSEQ_INJECT_CLOBBER
#undef CL_INJECT

#define PARAM_NR_HOOKS 4 /* asm hook points 1..4 */

/* Delay loop counts per asm hook point (index 1..4), read rip-relative. */
int param_asm_loops[PARAM_NR_HOOKS + 1];
/* The last asm hook point this thread's current section passed (asm writes it). */
__thread int param_tl_hook __attribute__((tls_model("local-exec")));

/* Record the hook point (no register on x86_64; x16, x17 on aarch64), then
 * stress.h's delay loop of param_asm_loops[n] iterations. */
#if defined(__x86_64__)
#define CL_RSEQ_INJECT_ASM(n)                                         \
	"movl $" #n ", %%fs:param_tl_hook@tpoff\n\t"                  \
	STRESS_ASM_DELAY(param_asm_loops, n)
#elif defined(__aarch64__)
#define CL_RSEQ_INJECT_ASM(n)                                         \
	"mrs x16, tpidr_el0\n\t"                                      \
	"add x16, x16, #:tprel_hi12:param_tl_hook, lsl #12\n\t"       \
	"add x16, x16, #:tprel_lo12_nc:param_tl_hook\n\t"             \
	"mov w17, #" #n "\n\t"                                        \
	"str w17, [x16]\n\t"                                          \
	STRESS_ASM_DELAY(param_asm_loops, n)
#endif
#ifdef STRESS_ASM_DELAY
#define CL_RSEQ_INJECT_CLOBBER STRESS_ASM_DELAY_CLOBBER
#endif

static struct {
	int c_loops;        /* -5: delay iterations at each C hook */
	int modulo;         /* -m: every modulo-th C hook disturbs (0: never) */
	int yield;          /* -y */
	int sleep_ms;       /* -s */
	int raise_sig;      /* -k */
} P;

static __thread unsigned long param_tl_abort_at[PARAM_NR_HOOKS + 1];
static __thread unsigned param_tl_mod;
static __thread int param_tl_armed; /* SIGUSR1 handler installed, unblocked */

static inline void param_inject(int n)
{
	if (n >= 20 && n <= 26) { /* abort paths of the sections */
		int h = param_tl_hook;

		stress_tl_aborts++;
		param_tl_abort_at[h >= 0 && h <= PARAM_NR_HOOKS ? h : 0]++;
		param_tl_hook = 0;
	}
	for (int i = 0; i < P.c_loops; i++)
		__asm__ __volatile__("" ::: "memory");
	if (P.modulo > 0 && ++param_tl_mod >= (unsigned)P.modulo) {
		param_tl_mod = 0;
		if (P.sleep_ms > 0)
			poll(NULL, 0, P.sleep_ms);
		if (P.yield)
			sched_yield();
		if (P.raise_sig && param_tl_armed)
			raise(SIGUSR1);
	}
}
#define CL_INJECT(n) param_inject(n)

#include <cachelocal/counter.h>
#include <cachelocal/percpu_ops.h>
#include <cachelocal/topology.h>

#define ITEMS_PER_SLOT 8
#define ITEMS_MIN 64
#define ITEMS_MAX 512
#define NR_KINDS 2

enum ptype { T_SPIN, T_COUNTER, T_LIST, T_BUFFER, T_MEMCPY, NR_TYPES };
static const char type_letter[] = "sclbm"; /* -T letters, in enum ptype order */
static const char *const type_name[NR_TYPES] = { "spinlock", "counter", "list", "buffer",
						   "memcpy-buffer" };

struct slot { /* spinlock and counter tests: one per index */
	intptr_t lock CL_ALIGNED(CL_FALSE_SHARING_SIZE);
	intptr_t count; /* spinlock: plain, under lock; counter: cl_rseq_add */
	int owner;      /* worker id + 1 inside the lock (atomic, to see overlap) */
};

struct lhead {
	void *head CL_ALIGNED(CL_FALSE_SHARING_SIZE);
};

struct lnode {
	void *next;
	long id;
};

struct elem { /* memcpy buffer element: torn if the words disagree */
	intptr_t id, inv, twice, tag;
};

static struct {
	enum cl_rseq_index kind;
	unsigned nr;      /* slots: possible CPUs */
	long reps;
	long nr_items;
	struct slot *slots;
	struct cl_counter counter;
	unsigned long sig_adds;  /* adds by the SIGUSR1 handler (atomic) */
	struct lhead *lists;
	struct lnode *nodes;
	int *owner;              /* per item id: 0 or worker id + 1 (atomic) */
	char *buf;               /* buffers: slot i at buf + i * stride */
	size_t stride;
	intptr_t cap;
	struct elem *elems;      /* memcpy test: the initial elements (ids) */
	unsigned long abort_at[PARAM_NR_HOOKS + 1]; /* all workers (atomic) */
} T;

static int take(struct stress_run *run, int id, long item)
{
	int prev = __atomic_exchange_n(&T.owner[item], id + 1, __ATOMIC_RELAXED);

	if (prev != 0) {
		stress_fail(run, "item %ld popped by worker %d while owned by worker %d", item, id,
			    prev - 1);
		return -1;
	}
	return 0;
}

static void give(long item)
{
	__atomic_store_n(&T.owner[item], 0, __ATOMIC_RELAXED);
}

static int cur_index(void)
{
	return cl_rseq_current_index(T.kind);
}

static intptr_t *buf_count(unsigned i)
{
	return (intptr_t *)(void *)(T.buf + (size_t)i * T.stride);
}

/* ---- spinlock ---- */

static int spin_rep(struct stress_run *run, int id, long rep)
{
	struct slot *s;
	unsigned spins = 0;
	int prev;

	for (;;) {
		int c = cur_index(), r;

		s = &T.slots[(unsigned)c % T.nr];
		r = cl_rseq_cmpstore(T.kind, &s->lock, 0, 1, c);
		if (r == CL_RSEQ_OK)
			break;
		if (r != CL_RSEQ_CMPFAIL && r != CL_RSEQ_ABORT) {
			stress_fail(run, "cmpstore returned %d", r);
			return -1;
		}
		if (r == CL_RSEQ_CMPFAIL && ++spins % 16 == 0)
			sched_yield(); /* the holder may be preempted */
	}
	/* Taken: the fallback's cmpstore is acquire-release; on the rseq path
	 * x86 TSO orders the section's loads before the plain counter update. */
	prev = __atomic_exchange_n(&s->owner, id + 1, __ATOMIC_RELAXED);
	if (prev != 0) /* record, go on: returning would leave the lock held */
		stress_fail(run, "worker %d entered a lock held by worker %d", id, prev - 1);
	s->count++;
	if (rep % 128 == 0)
		sched_yield(); /* may migrate: unlock from another CPU */
	__atomic_store_n(&s->owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
	return 0;
}

/* ---- counter ---- */

static void counter_sig(void)
{
	cl_counter_add(&T.counter, 1);
	__atomic_fetch_add(&T.sig_adds, 1, __ATOMIC_RELAXED);
}

static int counter_rep(struct stress_run *run, int id, long rep)
{
	int r;

	(void)id;
	(void)rep;
	do {
		int c = cur_index();

		r = cl_rseq_add(T.kind, &T.slots[(unsigned)c % T.nr].count, 1, c);
	} while (r == CL_RSEQ_ABORT);
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "cl_rseq_add returned %d", r);
		return -1;
	}
	cl_counter_add(&T.counter, 1);
	return 0;
}

/* ---- list ---- */

static int list_rep(struct stress_run *run, int id, long rep)
{
	int percpu = rep % 4 == 3, r, c;
	void *p = NULL;
	struct lnode *n;

	if (percpu) {
		r = cl_percpu_list_pop(T.kind, &T.lists[0].head, sizeof(struct lhead),
				       offsetof(struct lnode, next), &p);
		if (r == CL_PERCPU_CMPFAIL)
			return 0; /* empty here */
		r = r >= 0 ? CL_RSEQ_OK : r;
	} else {
		do {
			c = cur_index();
			r = cl_rseq_pop(T.kind, &T.lists[(unsigned)c % T.nr].head,
					offsetof(struct lnode, next), &p, c);
		} while (r == CL_RSEQ_ABORT);
		if (r == CL_RSEQ_CMPFAIL)
			return 0;
	}
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "list pop returned %d", r);
		return -1;
	}
	n = p;
	if (take(run, id, n->id) != 0)
		return -1;
	give(n->id);
	if (percpu) {
		r = cl_percpu_list_push(T.kind, &T.lists[0].head, sizeof(struct lhead),
					offsetof(struct lnode, next), n) >= 0
			    ? CL_RSEQ_OK
			    : CL_RSEQ_ERROR;
	} else {
		do {
			c = cur_index();
			r = cl_rseq_trypush(T.kind, &T.lists[(unsigned)c % T.nr].head,
					    offsetof(struct lnode, next), n, c);
		} while (r == CL_RSEQ_ABORT || r == CL_RSEQ_CMPFAIL);
	}
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "list push returned %d", r);
		return -1;
	}
	return 0;
}

/* ---- pointer buffer ---- */

static struct elem *elem_slot(intptr_t *cnt, intptr_t k)
{
	return (struct elem *)(void *)(cnt + 1) + k;
}

/*
 * Push *@src (a pointer for T_BUFFER, a struct elem for T_MEMCPY) on the
 * buffer of the index the thread runs on: through the per-CPU path, or
 * with the index-passing operation. CL_RSEQ_OK, or the failing code.
 */
static int buf_push(enum ptype type, const void *src, int percpu)
{
	int r;

	if (percpu) {
		if (type == T_MEMCPY)
			r = cl_percpu_buf_push_copy(T.kind, buf_count(0), T.stride,
						    elem_slot(buf_count(0), 0), T.cap,
						    sizeof(struct elem), src, CL_RSEQ_MO_RELEASE);
		else
			r = cl_percpu_buf_push(T.kind, buf_count(0), T.stride,
					       (void **)(buf_count(0) + 1), T.cap,
					       *(void *const *)src, CL_RSEQ_MO_RELEASE);
		return r >= 0 ? CL_RSEQ_OK : r;
	}
	do {
		int c = cur_index();
		intptr_t *cnt = buf_count((unsigned)c % T.nr);
		intptr_t n = __atomic_load_n(cnt, __ATOMIC_RELAXED);

		if (n >= T.cap)
			return CL_PERCPU_CMPFAIL;
		if (type == T_MEMCPY)
			r = cl_rseq_cmpmemcpy_store(T.kind, cnt, n, elem_slot(cnt, n), src,
						    sizeof(struct elem), n + 1, CL_RSEQ_MO_RELEASE, c);
		else
			r = cl_rseq_cmpstore_store(T.kind, cnt, n, (intptr_t *)(cnt + 1) + n,
						   *(const intptr_t *)src, n + 1, CL_RSEQ_MO_RELEASE, c);
	} while (r == CL_RSEQ_ABORT || r == CL_RSEQ_CMPFAIL);
	return r;
}

static int buffer_rep(struct stress_run *run, int id, long rep)
{
	int percpu = rep % 4 == 3, r;
	void *it = NULL;
	long item;

	if (percpu) {
		r = cl_percpu_buf_pop(T.kind, buf_count(0), T.stride, (void **)(buf_count(0) + 1),
				      &it);
		if (r == CL_PERCPU_CMPFAIL)
			return 0;
		r = r >= 0 ? CL_RSEQ_OK : r;
	} else {
		do {
			int c = cur_index();
			intptr_t *cnt = buf_count((unsigned)c % T.nr), n;

			n = __atomic_load_n(cnt, __ATOMIC_ACQUIRE);
			if (n <= 0)
				return 0; /* empty here */
			it = __atomic_load_n((void **)(cnt + 1) + (n - 1), __ATOMIC_RELAXED);
			r = cl_rseq_cmp2_store(T.kind, cnt, n, (intptr_t *)(cnt + 1) + (n - 1),
					       (intptr_t)it, n - 1, c);
		} while (r == CL_RSEQ_ABORT || r == CL_RSEQ_CMPFAIL);
	}
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "buffer pop returned %d", r);
		return -1;
	}
	item = (long)((intptr_t)it - 1); /* items are stored as id + 1 */
	if (item < 0 || item >= T.nr_items) {
		stress_fail(run, "buffer pop gave a bad item %p", it);
		return -1;
	}
	if (take(run, id, item) != 0)
		return -1;
	give(item);
	r = buf_push(T_BUFFER, &it, !percpu);
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "buffer push returned %d (cap %ld)", r, (long)T.cap);
		return -1;
	}
	return 0;
}

/* ---- memcpy buffer ---- */

static int elem_torn(const struct elem *e)
{
	return e->inv != ~e->id || e->twice != 2 * e->id || e->tag != 0x5a5a;
}

static int memcpy_rep(struct stress_run *run, int id, long rep)
{
	struct elem e;
	int r;

	do {
		int c = cur_index();
		intptr_t *cnt = buf_count((unsigned)c % T.nr);
		intptr_t n = __atomic_load_n(cnt, __ATOMIC_ACQUIRE);

		if (n <= 0)
			return 0;
		r = cl_rseq_cmpmemcpy_store(T.kind, cnt, n, &e, elem_slot(cnt, n - 1), sizeof(e), n - 1,
					    CL_RSEQ_MO_RELAXED, c);
	} while (r == CL_RSEQ_ABORT || r == CL_RSEQ_CMPFAIL);
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "memcpy pop returned %d", r);
		return -1;
	}
	if (elem_torn(&e) || e.id < 0 || e.id >= T.nr_items) {
		stress_fail(run, "torn element {%ld, %ld, %ld, %ld}", (long)e.id, (long)e.inv,
			    (long)e.twice, (long)e.tag);
		return -1;
	}
	if (take(run, id, (long)e.id) != 0)
		return -1;
	give((long)e.id);
	r = buf_push(T_MEMCPY, &e, rep % 4 == 3);
	if (r != CL_RSEQ_OK) {
		stress_fail(run, "memcpy push returned %d (cap %ld)", r, (long)T.cap);
		return -1;
	}
	return 0;
}

/* ---- workers, setup and checks ---- */

typedef int (*rep_fn)(struct stress_run *run, int id, long rep);
static const rep_fn rep_fns[NR_TYPES] = { spin_rep, counter_rep, list_rep, buffer_rep, memcpy_rep };
static enum ptype cur_type;

static void *worker(struct stress_run *run, int id)
{
	rep_fn fn = rep_fns[cur_type];
	void *ret = NULL;

	memset(param_tl_abort_at, 0, sizeof(param_tl_abort_at));
	param_tl_mod = (unsigned)id; /* spread the disturbances over the threads */
	for (long rep = 0; rep < T.reps; rep++) {
		if (fn(run, id, rep) != 0) {
			ret = (void *)1;
			break;
		}
		if (rep == 0) {
			stress_allow_signals();
			param_tl_armed = 1;
		}
	}
	param_tl_armed = 0;
	for (int h = 0; h <= PARAM_NR_HOOKS; h++)
		__atomic_fetch_add(&T.abort_at[h], param_tl_abort_at[h], __ATOMIC_RELAXED);
	__atomic_fetch_add(&run->ops, (unsigned long)T.reps, __ATOMIC_RELAXED);
	return ret;
}

static int setup(enum ptype type, enum cl_rseq_index kind, long reps)
{
	size_t elem_size = type == T_MEMCPY ? sizeof(struct elem) : sizeof(void *);

	memset(&T, 0, sizeof(T));
	T.kind = kind;
	T.nr = cl_nr_possible_cpus();
	T.reps = reps;
	T.nr_items = (long)T.nr * ITEMS_PER_SLOT;
	if (T.nr_items < ITEMS_MIN)
		T.nr_items = ITEMS_MIN;
	if (T.nr_items > ITEMS_MAX)
		T.nr_items = ITEMS_MAX;
	T.slots = aligned_alloc(CL_FALSE_SHARING_SIZE, T.nr * sizeof(*T.slots));
	T.owner = calloc((size_t)T.nr_items, sizeof(*T.owner));
	if (!T.slots || !T.owner)
		return -1;
	memset(T.slots, 0, T.nr * sizeof(*T.slots));
	switch (type) {
	case T_COUNTER:
		return cl_counter_init_index(&T.counter, kind);
	case T_LIST:
		T.lists = aligned_alloc(CL_FALSE_SHARING_SIZE, T.nr * sizeof(*T.lists));
		T.nodes = calloc((size_t)T.nr_items, sizeof(*T.nodes));
		if (!T.lists || !T.nodes)
			return -1;
		memset(T.lists, 0, T.nr * sizeof(*T.lists));
		for (long k = 0; k < T.nr_items; k++) { /* round robin over the lists */
			struct lhead *h = &T.lists[(unsigned long)k % T.nr];

			T.nodes[k].id = k;
			T.nodes[k].next = h->head;
			h->head = &T.nodes[k];
		}
		return 0;
	case T_BUFFER:
	case T_MEMCPY:
		/* Each buffer can hold every item: a push never finds it full. */
		T.cap = T.nr_items;
		T.stride = (sizeof(intptr_t) + (size_t)T.cap * elem_size + CL_FALSE_SHARING_SIZE - 1) /
			   CL_FALSE_SHARING_SIZE * CL_FALSE_SHARING_SIZE;
		T.buf = aligned_alloc(CL_FALSE_SHARING_SIZE, T.nr * T.stride);
		if (!T.buf)
			return -1;
		memset(T.buf, 0, T.nr * T.stride);
		for (long k = 0; k < T.nr_items; k++) {
			intptr_t *cnt = buf_count((unsigned)((unsigned long)k % T.nr));

			if (type == T_MEMCPY)
				*elem_slot(cnt, *cnt) = (struct elem){ k, ~(intptr_t)k, 2 * k, 0x5a5a };
			else
				((void **)(cnt + 1))[*cnt] = (void *)(intptr_t)(k + 1);
			++*cnt;
		}
		return 0;
	default:
		return 0;
	}
}

static void teardown(enum ptype type)
{
	if (type == T_COUNTER)
		cl_counter_destroy(&T.counter);
	free(T.slots);
	free(T.owner);
	free(T.lists);
	free(T.nodes);
	free(T.buf);
}

/* Count an item seen in a structure at the end; -1 if out of range. */
static int seen_item(unsigned char *seen, long item, long *found, long *dup)
{
	if (item < 0 || item >= T.nr_items)
		return -1;
	*dup += seen[item]++ != 0;
	++*found;
	return 0;
}

/* The invariant of @type after a round; 0 holds. Writes a summary to @msg. */
static int check(enum ptype type, long threads, char *msg, size_t len)
{
	long expect = threads * T.reps, found = 0, dup = 0, bad = 0;
	unsigned char *seen;
	intptr_t sum = 0;

	switch (type) {
	case T_SPIN:
		for (unsigned i = 0; i < T.nr; i++) {
			sum += T.slots[i].count;
			bad += T.slots[i].lock != 0 || T.slots[i].owner != 0;
		}
		snprintf(msg, len, "counted %ld of %ld, %ld locks left held", (long)sum, expect, bad);
		return sum != expect || bad;
	case T_COUNTER: {
		int64_t got = cl_counter_read(&T.counter);
		unsigned long sig = __atomic_load_n(&T.sig_adds, __ATOMIC_RELAXED);

		for (unsigned i = 0; i < T.nr; i++)
			sum += T.slots[i].count;
		snprintf(msg, len, "rseq_add words %ld of %ld, cl_counter %lld of %lld (%lu from handlers)",
			 (long)sum, expect, (long long)got, (long long)(expect + (long)sig), sig);
		return sum != expect || got != expect + (int64_t)sig;
	}
	default:
		break;
	}
	seen = calloc((size_t)T.nr_items, 1);
	if (!seen) {
		snprintf(msg, len, "out of memory");
		return 1;
	}
	for (unsigned i = 0; i < T.nr; i++) {
		if (type == T_LIST) {
			long guard = 0;

			for (struct lnode *n = T.lists[i].head; n && guard <= T.nr_items; n = n->next, guard++)
				bad += n < T.nodes || n >= T.nodes + T.nr_items ||
				       seen_item(seen, n->id, &found, &dup) != 0;
			bad += guard > T.nr_items; /* a cycle */
			continue;
		}
		intptr_t *cnt = buf_count(i);

		if (*cnt < 0 || *cnt > T.cap) {
			bad++;
			continue;
		}
		for (intptr_t k = 0; k < *cnt; k++) {
			if (type == T_MEMCPY) {
				const struct elem *e = elem_slot(cnt, k);

				bad += elem_torn(e) || seen_item(seen, (long)e->id, &found, &dup) != 0;
			} else {
				intptr_t v = (intptr_t)((void **)(cnt + 1))[k];

				bad += seen_item(seen, (long)(v - 1), &found, &dup) != 0;
			}
		}
	}
	for (long k = 0; k < T.nr_items; k++)
		bad += __atomic_load_n(&T.owner[k], __ATOMIC_RELAXED) != 0;
	free(seen);
	snprintf(msg, len, "%ld of %ld items found once, %ld duplicates, %ld bad", found - dup,
		 T.nr_items, dup, bad);
	return found != T.nr_items || dup || bad;
}

/* ---- rounds, cells, options ---- */

struct delays {
	int asm_loops[PARAM_NR_HOOKS + 1];
	int c_loops, modulo, yield, sleep_ms, raise_sig;
};

struct cell_stats {
	long rounds, delayed_rounds;
	unsigned long ops, aborts, delayed_aborts, signals, handled, migrations;
	unsigned long abort_at[PARAM_NR_HOOKS + 1]; /* delayed rounds */
};

static void delays_apply(const struct delays *d)
{
	for (int h = 1; h <= PARAM_NR_HOOKS; h++)
		param_asm_loops[h] = d->asm_loops[h];
	P.c_loops = d->c_loops;
	P.modulo = d->modulo;
	P.yield = d->yield;
	P.sleep_ms = d->sleep_ms;
	P.raise_sig = d->raise_sig;
}

static int delays_on(const struct delays *d)
{
	int on = d->c_loops || d->modulo;

	for (int h = 1; h <= PARAM_NR_HOOKS; h++)
		on |= d->asm_loops[h] != 0;
	return on;
}

/* One round: set up, run the workers, check. 0 pass. */
static int run_round(const struct stress_cfg *cfg, enum ptype type, enum cl_rseq_index kind,
		     long reps, const struct delays *d, struct cell_stats *st, int verbose)
{
	struct stress_run run;
	unsigned long handled0 = __atomic_load_n(&stress_sig_handled, __ATOMIC_RELAXED);
	char msg[200];
	int rc;

	if (setup(type, kind, reps) != 0) {
		fprintf(stderr, "%s setup failed: %s\n", type_name[type], strerror(errno));
		teardown(type);
		return 1;
	}
	cur_type = type;
	delays_apply(d);
	rc = stress_run(&run, cfg, worker, NULL, type == T_COUNTER ? counter_sig : NULL);
	rc |= check(type, cfg->nr_workers, msg, sizeof(msg));
	st->rounds++;
	st->ops += run.ops;
	st->aborts += run.aborts;
	st->signals += run.signals;
	st->migrations += run.migrations;
	st->handled += __atomic_load_n(&stress_sig_handled, __ATOMIC_RELAXED) - handled0;
	if (delays_on(d)) {
		st->delayed_rounds++;
		st->delayed_aborts += run.aborts;
		for (int h = 0; h <= PARAM_NR_HOOKS; h++)
			st->abort_at[h] += T.abort_at[h];
	}
	if (rc || verbose)
		printf("  round %ld (%s): %s: %s\n", st->rounds, delays_on(d) ? "delays" : "calm", msg,
		       rc ? "FAIL" : "ok");
	teardown(type);
	return rc;
}

static const char *kind_name(enum cl_rseq_index kind)
{
	return kind == CL_RSEQ_INDEX_MM_CID ? "mm_cid" : "cpu_id";
}

static void print_cell(const struct stress_cfg *cfg, enum ptype type, enum cl_rseq_index kind,
		       long reps, const struct cell_stats *st, int rc)
{
	printf("rseq_param_stress [%s, %s index, ops %s]: %d threads x %ld reps x %ld rounds "
	       "(%ld delayed): %lu ops, %lu aborts (%lu in delayed rounds; after hook point "
	       "1/2/3/4: %lu/%lu/%lu/%lu, before any: %lu), %lu signals sent, %lu handled, "
	       "%lu migrations: %s\n",
	       type_name[type], kind_name(kind), cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(kind)),
	       cfg->nr_workers, reps, st->rounds, st->delayed_rounds, st->ops, st->aborts,
	       st->delayed_aborts, st->abort_at[1], st->abort_at[2], st->abort_at[3], st->abort_at[4],
	       st->abort_at[0], st->signals, st->handled, st->migrations, rc ? "FAIL" : "PASS");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rseq_param_stress [options]   (no option: the short matrix)\n"
		"  -T s|c|l|b|m|a  test: spinlock, counter, list, buffer, memcpy-buffer, all (a)\n"
		"  -t N            threads (default 6 x CORES)\n"
		"  -r N            reps per thread per round (default ITERATIONS / threads)\n"
		"  -n N            rounds (default 1)\n"
		"  -1..-4 N        delay loop iterations at asm hook point 1..4 (inside sections)\n"
		"  -5 N            delay loop iterations at each C hook (around sections)\n"
		"  -m N            every N-th C hook: yield (-y), sleep (-s MS), raise SIGUSR1 (-k)\n"
		"  -y  -s MS  -k\n"
		"  -i cpu_id|mm_cid|both   index mode (default both)\n"
		"  -q              calm: no signal storm, no migrator\n"
		"  -v              print every round\n"
		"environment: DURATION (s, matrix), ITERATIONS, CORES, INJECT_LOOPS (matrix delays)\n");
}

static int parse_long(const char *s, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return errno || *end || end == s || *out < 0 ? -1 : 0;
}

/*
 * The matrix: every type x both kinds, alternating calm and delayed rounds
 * until each cell's share of DURATION is used up (at least one of each).
 */
static int run_matrix(const struct stress_cfg *cfg)
{
	double share = (double)stress_env("DURATION", 1) / (NR_TYPES * NR_KINDS);
	long loops = stress_env("INJECT_LOOPS", 64);
	long reps = cfg->iterations / cfg->nr_workers;
	struct delays calm = { { 0 }, 0, 0, 0, 0, 0 };
	struct delays delayed = { { 0 }, 16, 32, 1, 0, 1 };
	unsigned long hooked[NR_KINDS] = { 0 }, delayed_signals[NR_KINDS] = { 0 };
	int rc = 0;

	if (reps < 100)
		reps = 100;
	for (int h = 1; h <= PARAM_NR_HOOKS; h++)
		delayed.asm_loops[h] = (int)(loops * h);
	for (int k = 0; k < NR_KINDS; k++) {
		enum cl_rseq_index kind = k ? CL_RSEQ_INDEX_MM_CID : CL_RSEQ_INDEX_CPU_ID;

		for (int t = 0; t < NR_TYPES; t++) {
			struct cell_stats st;
			double end = stress_now() + share;
			int crc = 0;

			memset(&st, 0, sizeof(st));
			do {
				crc |= run_round(cfg, (enum ptype)t, kind, reps,
						 st.rounds % 2 ? &delayed : &calm, &st, 0);
			} while (!crc && (st.rounds < 2 || stress_now() < end));
			print_cell(cfg, (enum ptype)t, kind, reps, &st, crc);
			for (int h = 1; h <= PARAM_NR_HOOKS; h++)
				hooked[k] += st.abort_at[h];
			delayed_signals[k] += st.handled;
			rc |= crc;
		}
	}
	/* The delays must reach inside the sections: aborts after hook points. */
	for (int k = 0; k < NR_KINDS; k++) {
		enum cl_rseq_index kind = k ? CL_RSEQ_INDEX_MM_CID : CL_RSEQ_INDEX_CPU_ID;

		if (cl_rseq_ops_mode_index(kind) != CL_RSEQ_OPS_RSEQ) {
			printf("rseq_param_stress [%s index]: ops %s: no critical sections, no aborts "
			       "to see\n",
			       kind_name(kind), cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(kind)));
			continue;
		}
		printf("rseq_param_stress [%s index]: %lu aborts after an injected hook point, "
		       "%lu signals handled: %s\n",
		       kind_name(kind), hooked[k], delayed_signals[k], hooked[k] ? "PASS" : "FAIL");
		if (!hooked[k]) {
			fprintf(stderr, "FAIL: no abort after a hook point in the %s delayed rounds: "
					"the injected delays did not reach inside the sections\n",
				kind_name(kind));
			rc = 1;
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct stress_cfg cfg;
	struct delays d = { { 0 }, 0, 0, 0, 0, 0 };
	int types = 0, kinds = 3, verbose = 0, opt, rc = 0;
	long v = 0, reps = -1, rounds = 1, threads = -1;

	stress_cfg_load(&cfg);
	if (argc == 1)
		return run_matrix(&cfg) ? 1 : 0;
	while ((opt = getopt(argc, argv, "T:t:r:n:1:2:3:4:5:m:ys:ki:qvh")) != -1) {
		if (strchr("trn12345ms", opt) && parse_long(optarg, &v) != 0) {
			fprintf(stderr, "-%c: not a number >= 0: %s\n", opt, optarg);
			return 2;
		}
		switch (opt) {
		case 'T':
			for (const char *s = optarg; *s; s++) {
				const char *p = strchr(type_letter, *s);

				if (*s == 'a')
					types = (1 << NR_TYPES) - 1;
				else if (p && *p)
					types |= 1 << (p - type_letter);
				else {
					fprintf(stderr, "-T: unknown test '%c'\n", *s);
					return 2;
				}
			}
			break;
		case 't': threads = v; break;
		case 'r': reps = v; break;
		case 'n': rounds = v; break;
		case '1': case '2': case '3': case '4':
			d.asm_loops[opt - '0'] = (int)(v > 1 << 30 ? 1 << 30 : v);
			break;
		case '5': d.c_loops = (int)(v > 1 << 30 ? 1 << 30 : v); break;
		case 'm': d.modulo = (int)(v > 1 << 30 ? 1 << 30 : v); break;
		case 'y': d.yield = 1; break;
		case 's': d.sleep_ms = (int)(v > 1000 ? 1000 : v); break;
		case 'k': d.raise_sig = 1; break;
		case 'i':
			kinds = !strcmp(optarg, "cpu_id") ? 1 : !strcmp(optarg, "mm_cid") ? 2
				: !strcmp(optarg, "both") ? 3 : 0;
			if (!kinds) {
				fprintf(stderr, "-i: cpu_id, mm_cid or both\n");
				return 2;
			}
			break;
		case 'q': cfg.calm = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || threads == 0 || rounds == 0) {
		usage(stderr);
		return 2;
	}
	if (threads > 0)
		cfg.nr_workers = (int)(threads > 4096 ? 4096 : threads);
	if (reps < 0)
		reps = cfg.iterations / cfg.nr_workers > 0 ? cfg.iterations / cfg.nr_workers : 1;
	if (!types)
		types = (1 << NR_TYPES) - 1;
	for (int k = 0; k < NR_KINDS; k++) {
		enum cl_rseq_index kind = k ? CL_RSEQ_INDEX_MM_CID : CL_RSEQ_INDEX_CPU_ID;

		if (!(kinds & (1 << k)))
			continue;
		for (int t = 0; t < NR_TYPES; t++) {
			struct cell_stats st;
			int crc = 0;

			if (!(types & (1 << t)))
				continue;
			memset(&st, 0, sizeof(st));
			for (long r = 0; r < rounds && !crc; r++)
				crc |= run_round(&cfg, (enum ptype)t, kind, reps, &d, &st, verbose);
			print_cell(&cfg, (enum ptype)t, kind, reps, &st, crc);
			rc |= crc;
		}
	}
	return rc ? 1 : 0;
}
