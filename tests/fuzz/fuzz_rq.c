/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_rq.c - runqueue operation sequences, single-threaded,
 * through the public sched/ API, with every rq's invariants checked
 * (cl_rq_validate()) after every step.
 *
 * Byte 0: 1-4 simulated CPUs. Ops on up to 12 tasks and 8 groups: enqueue
 * (new or wakeup), dequeue (sleep or migrate), pick_next, put_prev, tick,
 * check_preempt_wakeup, balance_run, balance_move, group create/destroy,
 * set_group, set_weight, set_affinity, bandwidth set/refill/update (throttle
 * and unthrottle), blocked-load walk, CPU offline/online, and calls that
 * must be refused. The expected result of each call is derived from the
 * public state (se.on_rq, cpu, on_cpu, the shadow group tree): a call the
 * documentation says fails must fail with its errno, one it says succeeds
 * must succeed. At the end everything is drained and destroyed.
 */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/group.h>
#include <cachelocal/sched/rq.h>

enum { NT = 12, NG = 8, MAX_OPS = 400 };

struct world {
	struct cl_sched *s;
	unsigned nr_cpus;
	uint64_t now;
	struct cl_task t[NT];
	unsigned long mask[NT];
	struct cl_task_group *g[NG]; /* NULL: free slot */
	int parent[NG];              /* index of the parent, -1: the root */
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	urcu_memb_register_thread();
	return 0;
}

static struct cl_rq *rq_of(struct world *w, unsigned cpu)
{
	return cl_sched_rq(w->s, cpu);
}

static void validate(struct world *w, const char *after)
{
	for (unsigned c = 0; c < w->nr_cpus; c++) {
		const char *why = NULL;
		struct cl_rq *rq = rq_of(w, c);
		int r;

		cl_rq_lock(rq);
		r = cl_rq_validate(rq, &why);
		cl_rq_unlock(rq);
		FZ_CHECK(r == 0, "after %s: cpu %u: %s", after, c, why ? why : "?");
	}
	for (unsigned i = 0; i < NT; i++) {
		const struct cl_task *p = &w->t[i];

		FZ_CHECK(!p->on_cpu || rq_of(w, (unsigned)p->cpu)->curr == p, "after %s: task %u on_cpu, not curr",
			 after, i);
		FZ_CHECK(!p->se.on_rq || (p->cpu >= 0 && (unsigned)p->cpu < w->nr_cpus),
			 "after %s: task %u queued on cpu %d", after, i, p->cpu);
	}
}

static int is_online(struct world *w, unsigned cpu)
{
	return rq_of(w, cpu)->online;
}

static struct cl_task_group *group_ptr(struct world *w, int gi)
{
	return gi < 0 ? cl_sched_root_group(w->s) : w->g[gi];
}

/* A live group index, or -1 (root); picks among live ones. */
static int pick_group(struct world *w, struct fz *f)
{
	int live[NG], n = 0;

	for (int i = 0; i < NG; i++)
		if (w->g[i])
			live[n++] = i;
	if (!n)
		return -1;
	return (fz_u8(f) % (n + 1)) == (unsigned)n ? -1 : live[fz_below(f, (unsigned)n)];
}

static void op_enqueue(struct world *w, struct fz *f)
{
	struct cl_task *p = &w->t[fz_below(f, NT)];
	unsigned cpu = fz_below(f, w->nr_cpus);
	int flags = fz_u8(f) & 1 ? CL_ENQUEUE_WAKEUP : 0, r, expect_err = 0;
	struct cl_rq *rq = rq_of(w, cpu);

	if (!is_online(w, cpu) || !cl_task_allowed_on(p, cpu))
		return; /* precondition of cl_rq_enqueue() */
	if (p->se.on_rq)
		expect_err = EINVAL;
	else if (p->on_cpu && (unsigned)p->cpu != cpu)
		expect_err = EBUSY;
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, w->now);
	errno = 0;
	r = cl_rq_enqueue(rq, p, flags);
	if (r == 0 && (fz_u8(f) & 1) && cl_rq_check_preempt_wakeup(rq, p) == 1)
		cl_rq_pick_next(rq);
	cl_rq_unlock(rq);
	if (expect_err)
		FZ_CHECK(r == -1 && errno == expect_err, "enqueue: %d errno %d, expected %d", r, errno,
			 expect_err);
	else
		FZ_CHECK(r == 0 && p->se.on_rq && (unsigned)p->cpu == cpu, "enqueue failed: errno %d", errno);
}

static void op_dequeue(struct world *w, struct fz *f)
{
	struct cl_task *p = &w->t[fz_below(f, NT)];
	unsigned cpu = p->se.on_rq && (fz_u8(f) & 3) ? (unsigned)p->cpu : fz_below(f, w->nr_cpus);
	int ok = p->se.on_rq && (unsigned)p->cpu == cpu, r;
	struct cl_rq *rq = rq_of(w, cpu);

	cl_rq_lock(rq);
	cl_rq_update_clock(rq, w->now);
	errno = 0;
	r = cl_rq_dequeue(rq, p, fz_u8(f) & 1 ? CL_DEQUEUE_SLEEP : 0);
	if (r == 0 && (fz_u8(f) & 1))
		cl_rq_put_prev(rq);
	cl_rq_unlock(rq);
	if (ok)
		FZ_CHECK(r == 0 && !p->se.on_rq, "dequeue failed: errno %d", errno);
	else
		FZ_CHECK(r == -1 && errno == EINVAL, "dequeue of a task not queued there: %d", r);
}

static void op_pick_put(struct world *w, struct fz *f, int pick)
{
	unsigned cpu = fz_below(f, w->nr_cpus);
	struct cl_rq *rq = rq_of(w, cpu);
	struct cl_task *prev = rq->curr ? rq->curr : NULL, *p;

	(void)prev;
	cl_rq_lock(rq);
	cl_rq_update_clock(rq, w->now);
	p = pick ? cl_rq_pick_next(rq) : cl_rq_put_prev(rq);
	cl_rq_unlock(rq);
	if (p) {
		FZ_CHECK(p >= w->t && p < w->t + NT, "pick/put returned a foreign task");
		FZ_CHECK((unsigned)p->cpu == cpu, "task of cpu %d returned by cpu %u", p->cpu, cpu);
		if (pick)
			FZ_CHECK(p->on_cpu && p->se.on_rq && rq->curr == p, "picked task not running");
		else
			FZ_CHECK(!p->on_cpu, "put task still on_cpu");
	}
	if (!pick)
		FZ_CHECK(rq->curr == NULL, "curr after put_prev");
}

static void op_tick(struct world *w, struct fz *f)
{
	unsigned cpu = fz_below(f, w->nr_cpus);
	struct cl_rq *rq = rq_of(w, cpu);

	cl_rq_lock(rq);
	if (cl_rq_tick(rq, w->now) == 1 || (fz_u8(f) & 1))
		cl_rq_pick_next(rq);
	cl_rq_unlock(rq);
}

static void op_group_create(struct world *w, struct fz *f)
{
	int slot = -1, parent = pick_group(w, f);
	unsigned long shares = fz_u16(f);

	for (int i = 0; i < NG; i++)
		if (!w->g[i]) {
			slot = i;
			break;
		}
	if (slot < 0)
		return;
	w->g[slot] = cl_task_group_create(group_ptr(w, parent), shares);
	FZ_CHECK(w->g[slot] != NULL, "group_create failed: errno %d", errno);
	w->parent[slot] = parent;
}

static void op_group_destroy(struct world *w, struct fz *f)
{
	int gi = pick_group(w, f), busy = 0, r;

	if (gi < 0) {
		errno = 0;
		FZ_CHECK(cl_task_group_destroy(cl_sched_root_group(w->s)) == -1 && errno == EINVAL,
			 "root destroyed");
		FZ_CHECK(cl_task_group_destroy(NULL) == -1 && errno == EINVAL, "NULL destroyed");
		return;
	}
	for (int i = 0; i < NG; i++)
		if (w->g[i] && w->parent[i] == gi)
			busy = 1;
	for (unsigned i = 0; i < NT; i++) {
		struct cl_task *p = &w->t[i];

		if (p->tg != w->g[gi])
			continue;
		if (p->se.on_rq || p->on_cpu)
			busy = 1;
		else
			FZ_CHECK(cl_task_set_group(p, NULL) == 0, "set_group(idle task, root) failed");
	}
	errno = 0;
	r = cl_task_group_destroy(w->g[gi]);
	if (busy) {
		FZ_CHECK(r == -1 && errno == EBUSY, "destroy of a busy group: %d errno %d", r, errno);
		return;
	}
	FZ_CHECK(r == 0, "destroy of an idle group failed: errno %d", errno);
	w->g[gi] = NULL;
	/* an idle task may still point at it if it was busy above: none here */
}

static void op_set_group(struct world *w, struct fz *f)
{
	struct cl_task *p = &w->t[fz_below(f, NT)];
	int gi = pick_group(w, f), r;

	errno = 0;
	r = cl_task_set_group(p, group_ptr(w, gi));
	if (p->se.on_rq || p->on_cpu)
		FZ_CHECK(r == -1 && errno == EBUSY, "set_group on a busy task: %d", r);
	else
		FZ_CHECK(r == 0 && p->tg == (gi < 0 ? NULL : w->g[gi]), "set_group failed");
}

static void op_task_attr(struct world *w, struct fz *f)
{
	unsigned i = fz_below(f, NT);
	struct cl_task *p = &w->t[i];
	unsigned kind = fz_u8(f) % 3;

	if (kind == 0) {
		unsigned long weight = fz_u32(f) % (CL_MAX_SHARES + 2);
		int r;

		errno = 0;
		r = cl_task_set_weight(p, weight);
		if (weight == 0 || weight > CL_MAX_SHARES) /* either check may come first */
			FZ_CHECK(r == -1 && (errno == EINVAL || (p->se.on_rq && errno == EBUSY)),
				 "set_weight(%lu): %d errno %d", weight, r, errno);
		else if (p->se.on_rq)
			FZ_CHECK(r == -1 && errno == EBUSY, "set_weight on a queued task");
		else
			FZ_CHECK(r == 0, "set_weight(%lu) failed", weight);
	} else if (kind == 1) {
		w->mask[i] = fz_u8(f) & ((1ul << w->nr_cpus) - 1);
		cl_task_set_affinity(p, w->mask[i] ? &w->mask[i] : NULL, w->nr_cpus);
	} else {
		cl_task_set_affinity(p, NULL, 0);
	}
}

static void op_bandwidth(struct world *w, struct fz *f)
{
	unsigned kind = fz_u8(f) % 3;

	if (kind == 0) {
		int gi = pick_group(w, f), r;
		uint64_t quota = fz_u8(f) & 1 ? 0 : (uint64_t)(1 + fz_u8(f) % 50) * 500000ull;
		uint64_t period = (uint64_t)(fz_u8(f) % 101) * 1000000ull + (fz_u8(f) & 1 ? 500000ull : 0);

		errno = 0;
		r = cl_tg_set_bandwidth(group_ptr(w, gi), quota, period);
		if (gi < 0 || (quota && period && period < 1000000ull))
			FZ_CHECK(r == -1 && errno == EINVAL, "set_bandwidth(%llu, %llu) accepted",
				 (unsigned long long)quota, (unsigned long long)period);
		else if ((quota && quota < 1000000ull) || (period && period < 1000000ull))
			/* a quota or period under 1 ms may be refused */
			FZ_CHECK(r == 0 || errno == EINVAL, "set_bandwidth(%llu, %llu): errno %d",
				 (unsigned long long)quota, (unsigned long long)period, errno);
		else
			FZ_CHECK(r == 0, "set_bandwidth(%llu, %llu) failed: errno %d",
				 (unsigned long long)quota, (unsigned long long)period, errno);
	} else if (kind == 1) {
		(void)cl_sched_bandwidth_refill(cl_sched_root_group(w->s), w->now);
	} else {
		unsigned cpu = fz_below(f, w->nr_cpus);
		struct cl_rq *rq = rq_of(w, cpu);

		cl_rq_lock(rq);
		cl_rq_update_clock(rq, w->now);
		if (cl_rq_bandwidth_update(rq) || !rq->curr)
			cl_rq_pick_next(rq);
		(void)cl_tg_update_blocked_load(cl_sched_root_group(w->s), cpu, w->now);
		cl_rq_unlock(rq);
	}
}

static void op_balance(struct world *w, struct fz *f)
{
	unsigned kind = fz_u8(f) % 4, a = fz_below(f, w->nr_cpus + 1), b = fz_below(f, w->nr_cpus + 1);
	struct cl_balance_stats st;
	int r;

	memset(&st, 0, sizeof(st));
	errno = 0;
	if (kind == 0) {
		r = cl_balance_run(w->s, a, w->now, &st);
		if (a >= w->nr_cpus)
			FZ_CHECK(r == -1 && errno == EINVAL, "balance_run(%u) accepted", a);
		else
			FZ_CHECK(r >= 0 || errno == EINVAL, "balance_run: %d errno %d", r, errno);
	} else if (kind == 1) {
		r = cl_balance_move(w->s, a, b, w->now, &st);
		if (a >= w->nr_cpus || b >= w->nr_cpus || a == b || !is_online(w, a) || !is_online(w, b))
			FZ_CHECK(r == -1 && errno == EINVAL, "balance_move(%u, %u) accepted", a, b);
		else
			FZ_CHECK(r >= 0 && (unsigned long)r == st.moved, "balance_move: %d, moved %lu", r,
				 st.moved);
	} else if (kind == 2) {
		int was = a < w->nr_cpus && is_online(w, a), others = 0, tasks = 0;

		for (unsigned c = 0; c < w->nr_cpus; c++)
			others += c != a && is_online(w, c);
		for (unsigned i = 0; i < NT; i++)
			tasks += w->t[i].se.on_rq && (unsigned)w->t[i].cpu == a;
		r = cl_balance_cpu_offline(w->s, a, w->now);
		if (!was)
			FZ_CHECK(r == -1 && errno == EINVAL, "offline(%u) accepted", a);
		else if (!others && (tasks || rq_of(w, a)->curr))
			FZ_CHECK(r == -1 && errno == EBUSY, "last CPU offlined with tasks: %d", r);
		else if (!others && r == -1)
			FZ_CHECK(errno == EBUSY, "offline(last CPU) failed with errno %d", errno);
		else if (r == 0 || r > 0) {
			for (unsigned i = 0; i < NT; i++)
				FZ_CHECK(!(w->t[i].se.on_rq && (unsigned)w->t[i].cpu == a),
					 "task %u still queued on offline cpu %u", i, a);
			FZ_CHECK(!is_online(w, a), "cpu %u still online", a);
		} else {
			FZ_CHECK(0, "offline(%u) failed: errno %d", a, errno);
		}
	} else {
		int was_off = a < w->nr_cpus && !is_online(w, a);

		r = cl_balance_cpu_online(w->s, a, w->now);
		if (was_off)
			FZ_CHECK(r == 0 && is_online(w, a), "online(%u) failed", a);
		else
			FZ_CHECK(r == -1 && errno == EINVAL, "online(%u) accepted", a);
	}
}

static void drain(struct world *w)
{
	for (unsigned c = 0; c < w->nr_cpus; c++) {
		struct cl_rq *rq = rq_of(w, c);

		cl_rq_lock(rq);
		cl_rq_update_clock(rq, w->now);
		for (unsigned i = 0; i < NT; i++)
			if (w->t[i].se.on_rq && (unsigned)w->t[i].cpu == c)
				FZ_CHECK(cl_rq_dequeue(rq, &w->t[i], CL_DEQUEUE_SLEEP) == 0, "drain dequeue");
		cl_rq_put_prev(rq);
		cl_rq_unlock(rq);
	}
	validate(w, "drain");
	for (unsigned i = 0; i < NT; i++)
		FZ_CHECK(cl_task_set_group(&w->t[i], NULL) == 0, "task %u busy after drain", i);
	for (int pass = 0; pass < NG; pass++) /* leaves first */
		for (int i = 0; i < NG; i++) {
			int leaf = 1;

			if (!w->g[i])
				continue;
			for (int j = 0; j < NG; j++)
				if (w->g[j] && w->parent[j] == i)
					leaf = 0;
			if (!leaf)
				continue;
			FZ_CHECK(cl_task_group_destroy(w->g[i]) == 0, "drain destroy: errno %d", errno);
			w->g[i] = NULL;
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct world w;
	static const char *const names[] = { "enqueue", "dequeue", "pick", "put_prev", "tick",
					     "group_create", "group_destroy", "set_group", "task_attr",
					     "bandwidth", "balance" };

	memset(&w, 0, sizeof(w));
	w.nr_cpus = 1 + fz_below(&f, 4);
	w.s = cl_sched_create(w.nr_cpus, NULL);
	FZ_CHECK(w.s != NULL, "sched_create failed: errno %d", errno);
	cl_balance_set_migration_cost(w.s, (uint64_t)fz_u8(&f) * 100000ull);
	for (unsigned i = 0; i < NT; i++)
		cl_task_init(&w.t[i], (int)fz_below(&f, 40) - 20);
	for (unsigned n = 0; n < MAX_OPS && fz_more(&f); n++) {
		unsigned op = fz_u8(&f) % 11;

		w.now += (uint64_t)fz_u8(&f) * 50000ull;
		switch (op) {
		case 0: op_enqueue(&w, &f); break;
		case 1: op_dequeue(&w, &f); break;
		case 2: op_pick_put(&w, &f, 1); break;
		case 3: op_pick_put(&w, &f, 0); break;
		case 4: op_tick(&w, &f); break;
		case 5: op_group_create(&w, &f); break;
		case 6: op_group_destroy(&w, &f); break;
		case 7: op_set_group(&w, &f); break;
		case 8: op_task_attr(&w, &f); break;
		case 9: op_bandwidth(&w, &f); break;
		default: op_balance(&w, &f); break;
		}
		validate(&w, names[op]);
	}
	drain(&w);
	cl_sched_destroy(w.s);
	return 0;
}
