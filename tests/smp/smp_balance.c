/* SPDX-License-Identifier: MIT */
/*
 * smp_balance - the reference runqueue's balancer at the machine's size.
 *
 * One struct cl_rq per online CPU, allocated as one per-CPU object of a
 * percpu.h pool (cl_sched_create() on a pool of the default stride), and one
 * driver thread per rq, started pinned to that CPU and moved by affinity
 * flips now and then (refusals skipped: CPUs go offline). TASKS_PER_CPU x
 * rqs tasks start on at most two rqs: the first CPU's and, on a machine
 * with several nodes, the first CPU's of another node.
 *
 * The balancer is given the topology (cl_balance_set_topology_cpus(), rq
 * i standing for online CPU i of the topology), so a pass for CPU d goes
 * bottom-up through the scheduling domains (balance.h): SMT siblings and
 * d's LLC by the flat rule (the busiest rq if it has >= 2 more tasks than
 * d), then the LLCs of d's node if the busiest one's average nr_running
 * exceeds d's LLC's by more than the LLC percentage (117), then the nodes
 * if the busiest node's average exceeds d's node's by more than the NUMA
 * percentage (125) AND evening the two would move more than the allowance
 * (the kernel's imb_numa_nr: the node's LLCs if it has several, else 1/8 of
 * its CPUs). The library counts every migration by the topology level the
 * two CPUs share (smt: same core; llc: same LLC, other core; node: same
 * node, other LLC; cross_node), and so does this program, from the
 * topology, in phase 3 (checked equal to the library's).
 *
 * Phase 1 (DURATION seconds): the drivers tick their rq on a shared
 * simulated clock, pick, make the running task block and wake again every
 * 7th step, and run a balancing pass every 3rd step, with the cache-hot
 * window off. Printed: migrations per level, the spread (max - min
 * nr_running) at the end.
 *
 * Phase 2: every running task is put back (static load), every task is
 * taken off its rq and woken on the skewed rqs again, then rounds: each
 * driver runs one pass for its rq, all meet at a barrier; until a round in
 * which no pass moved anything (at most ROUNDS rounds). Printed: the
 * spread (max - min) before the last round that moved a task across nodes.
 *
 * Phase 3 (exact): the main thread alone skews the tasks again and runs
 * the passes one after another, reading the whole machine before each:
 * every cross-node migration must come from a node whose load exceeds the
 * puller's node's by the NUMA rule (percentage and allowance, recomputed
 * here from the topology), every cross-LLC one from an LLC past the LLC
 * percentage, and no pass may move more than the imbalance it acts on.
 *
 * Asserted after phases 2 and 3, the fixpoint the domain rules allow (a
 * round without moves, nothing running, nothing cache-hot):
 *   - in every LLC, max - min nr_running <= 1 (the flat rule);
 *   - in every node, with M its LLC of highest and L of lowest average: M's
 *     average <= 117% of L's, or M's busiest rq < L's least + 2, or evening
 *     them would move less than one task. In numbers: max - min over the
 *     node <= max(ceil(1.17 a) - floor(a), ceil(a + 2/s) - floor(a), 1),
 *     a = L's average, s = the node's smallest LLC (printed, asserted);
 *   - across nodes, with B the node of highest average and any other D:
 *     B's average <= 125% of D's, or evening them would move no more than
 *     D's allowance, or B's busiest rq < D's least + 2;
 *   - migrations happen only while there is an imbalance: one more round
 *     once balanced moves nothing, at any level, cross-node included;
 *   - no task lost or duplicated: cl_rq_validate() on every rq, every
 *     task found on exactly one rq's cfs_tasks, on that rq (p->cpu), and
 *     the nr_running sum equals the number of tasks.
 *
 * Knobs: DURATION (seconds, default 2), TASKS_PER_CPU (default 32),
 * ROUNDS (default 10000), SYSFS_ROOT (default "/sys"; a fake tree such as
 * tests/data/epyc9654-2s gives one rq and driver per online CPU of that
 * tree, for trying the levels on a small host).
 * Output: `balance: ...` setup line, `balance migrations: phase=1 smt=A
 * llc=B node=C cross_node=D` and the same for phase=2 and 3, `balance
 * spread: phase=N max=X min=Y`, `balance node: phase=N node=K max=X min=Y
 * bound=B`, `balance cross_node: last in round R, at a spread of S` (phase
 * 2, when any), `balance cross_node: phase=3 last in round R, at a node
 * imbalance of I tasks (allowance A, NUMA pct P)` (when any), then
 * PASS/FAIL.
 */
#include "smp.h"

#include <cachelocal/percpu.h>
#include <cachelocal/sched/balance.h>
#include <cachelocal/sched/validate.h>
#include <cachelocal/topology.h>

#define NAME "smp_balance"
#define US 1000ULL

CL_SCHED_DEFINE_TSAN_SUPPRESSIONS();

enum { LVL_SMT, LVL_LLC, LVL_NODE, LVL_CROSS, NR_LVL };
static const char *const lvl_name[NR_LVL] = { "smt", "llc", "node", "cross_node" };

static struct cl_topology topo;
static struct smp_cpus cpus;  /* online CPUs of this machine: flip targets */
static struct smp_cpus rqcpu; /* rq i stands for CPU rqcpu.id[i] of the topology */
static struct cl_sched *sched;
static unsigned nr_rqs;
static uint64_t clock_ns;                 /* shared simulated clock (atomic) */
static unsigned long moves[3][NR_LVL];    /* [phase][level], the library's counts (atomic) */
static unsigned long own[NR_LVL];         /* phase 3, classified here */
static unsigned spread_max[3], spread_min[3];

/* round barrier of phase 2 */
static pthread_barrier_t round_bar;
static unsigned long round_moves; /* (atomic) */
static int rounds_done;           /* set by driver 0 after a quiet round */
static long max_rounds, rounds_used;
static unsigned src2, nr_tasks;
static unsigned cross_last_spread; /* phase 2: spread before the last round with a cross-node move */
static long cross_last_round = -1;

/*
 * The domains, recomputed here from the topology (not read from the
 * library): each rq's node (dense index) and LLC group (a node's share of
 * an LLC), and each node's NUMA allowance.
 */
static unsigned *rq_node, *rq_llc, *node_allow;
static unsigned nr_nodes, nr_llcs;

/* A group's load: nr_running sum, rqs, busiest and least rq. */
struct grp {
	unsigned long long sum;
	unsigned n, max, min, node;
};

static int level(unsigned a, unsigned b)
{
	const struct cl_cpu_info *x = &topo.cpu[rqcpu.id[a]], *y = &topo.cpu[rqcpu.id[b]];

	if (x->core == y->core)
		return LVL_SMT;
	if (x->llc == y->llc)
		return LVL_LLC;
	if (x->node == y->node)
		return LVL_NODE;
	return LVL_CROSS;
}

/* Index of @key in @keys[0..*n), appended if new. */
static unsigned key_index(long *keys, unsigned *n, long key)
{
	for (unsigned i = 0; i < *n; i++)
		if (keys[i] == key)
			return i;
	keys[*n] = key;
	return (*n)++;
}

/* rq_node, rq_llc, node_allow (the kernel's imb_numa_nr, as balance.h documents it). */
static int domains_init(void)
{
	long *nkeys = calloc(nr_rqs, sizeof(long)), *lkeys = calloc(nr_rqs, sizeof(long));
	unsigned *llcs_in = calloc(nr_rqs, sizeof(unsigned)), *rqs_in = calloc(nr_rqs, sizeof(unsigned));

	rq_node = calloc(nr_rqs, sizeof(unsigned));
	rq_llc = calloc(nr_rqs, sizeof(unsigned));
	node_allow = calloc(nr_rqs, sizeof(unsigned));
	if (!nkeys || !lkeys || !llcs_in || !rqs_in || !rq_node || !rq_llc || !node_allow)
		return -1;
	for (unsigned c = 0; c < nr_rqs; c++) {
		const struct cl_cpu_info *ci = &topo.cpu[rqcpu.id[c]];
		unsigned before = nr_llcs;

		rq_node[c] = key_index(nkeys, &nr_nodes, ci->node);
		rq_llc[c] = key_index(lkeys, &nr_llcs, (long)ci->node * 65536L + ci->llc);
		llcs_in[rq_node[c]] += nr_llcs != before;
		rqs_in[rq_node[c]]++;
	}
	for (unsigned k = 0; k < nr_nodes; k++) {
		node_allow[k] = llcs_in[k] > 1 ? llcs_in[k] : rqs_in[k] / 8;
		node_allow[k] = node_allow[k] ? node_allow[k] : 1;
	}
	free(nkeys);
	free(lkeys);
	free(llcs_in);
	free(rqs_in);
	return 0;
}

/* Read every rq once into @nr (may be NULL), the LLC groups @lg and the nodes @ng. */
static void groups_read(unsigned *nr, struct grp *lg, struct grp *ng)
{
	memset(lg, 0, sizeof(*lg) * nr_llcs);
	memset(ng, 0, sizeof(*ng) * nr_nodes);
	for (unsigned c = 0; c < nr_rqs; c++) {
		unsigned n = __atomic_load_n(&cl_sched_rq(sched, c)->nr_running, __ATOMIC_RELAXED);
		struct grp *g[2] = { &lg[rq_llc[c]], &ng[rq_node[c]] };

		if (nr)
			nr[c] = n;
		for (int i = 0; i < 2; i++) {
			g[i]->min = !g[i]->n || n < g[i]->min ? n : g[i]->min;
			g[i]->max = n > g[i]->max ? n : g[i]->max;
			g[i]->sum += n;
			g[i]->n++;
			g[i]->node = rq_node[c];
		}
	}
}

/* Is @b's average above @d's by more than @pct percent? */
static int pct_exceeded(const struct grp *b, const struct grp *d, unsigned pct)
{
	return b->sum * d->n * 100 > (unsigned long long)pct * d->sum * b->n;
}

/* Tasks that would even @b's and @d's averages (0 if @b is not busier). */
static unsigned long long even_tasks(const struct grp *b, const struct grp *d)
{
	unsigned long long x = b->sum * d->n, y = d->sum * b->n;

	return x > y ? (x - y) / (b->n + d->n) : 0;
}

/* Would a pass of an rq with @dst_nr tasks in LLC @l pull from LLC @m (same node)? */
static int llc_rule(const struct grp *m, const struct grp *l, unsigned dst_nr)
{
	return pct_exceeded(m, l, CL_BALANCE_LLC_IMBALANCE_PCT) && even_tasks(m, l) >= 1 &&
	       m->max >= dst_nr + 2;
}

/* Would a pass of an rq with @dst_nr tasks on node @d pull from node @b? */
static int numa_rule(const struct grp *b, const struct grp *d, unsigned dst_nr)
{
	return pct_exceeded(b, d, CL_BALANCE_NUMA_IMBALANCE_PCT) && even_tasks(b, d) > node_allow[d->node] &&
	       b->max >= dst_nr + 2;
}

/* Is @a's average above @b's? */
static int busier(const struct grp *a, const struct grp *b)
{
	return a->sum * b->n > b->sum * a->n;
}

/*
 * The fixpoint of phase @ph (0-based; nothing running, nothing moving):
 * LLCs within 1, each node within its bound, no node pair past the NUMA
 * rule (see the top).
 */
static void check_fixpoint(int ph)
{
	struct grp *lg = calloc(nr_llcs, sizeof(*lg)), *ng = calloc(nr_nodes, sizeof(*ng));
	unsigned b = 0;

	if (!smp_check(lg && ng, "out of memory"))
		return;
	groups_read(NULL, lg, ng);
	for (unsigned g = 0; g < nr_llcs; g++)
		smp_check(lg[g].max - lg[g].min <= 1, "phase %d: an LLC of node index %u at %u..%u", ph + 1,
			  lg[g].node, lg[g].min, lg[g].max);
	for (unsigned k = 0; k < nr_nodes; k++) {
		const struct grp *m = NULL, *l = NULL;
		unsigned long long s = ~0ull, bound, S, n;
		unsigned nr_in = 0;

		for (unsigned g = 0; g < nr_llcs; g++) {
			if (lg[g].node != k)
				continue;
			m = !m || busier(&lg[g], m) ? &lg[g] : m;
			l = !l || busier(l, &lg[g]) ? &lg[g] : l;
			s = lg[g].n < s ? lg[g].n : s;
			nr_in++;
		}
		smp_check(!llc_rule(m, l, l->min), "phase %d: node index %u: an LLC at %llu/%u tasks and one at "
			  "%llu/%u, not balanced across", ph + 1, k, m->sum, m->n, l->sum, l->n);
		/* max(ceil(1.17 a) - floor(a), ceil(a + 2/s) - floor(a), 1), a = l's average */
		S = l->sum;
		n = l->n;
		bound = (CL_BALANCE_LLC_IMBALANCE_PCT * S + 100 * n - 1) / (100 * n) - S / n;
		if ((S * s + 2 * n + n * s - 1) / (n * s) - S / n > bound)
			bound = (S * s + 2 * n + n * s - 1) / (n * s) - S / n;
		bound = bound && nr_in > 1 ? bound : 1;
		printf("balance node: phase=%d node=%u max=%u min=%u bound=%llu\n", ph + 1, k, ng[k].max,
		       ng[k].min, bound);
		smp_check(ng[k].max - ng[k].min <= bound, "phase %d: node index %u spread %u over its bound %llu",
			  ph + 1, k, ng[k].max - ng[k].min, bound);
		if (busier(&ng[k], &ng[b]))
			b = k;
	}
	for (unsigned k = 0; k < nr_nodes; k++)
		smp_check(k == b || !numa_rule(&ng[b], &ng[k], ng[k].min),
			  "phase %d: node index %u (%llu tasks on %u rqs) would still pull from %u (%llu on %u)",
			  ph + 1, k, ng[k].sum, ng[k].n, b, ng[b].sum, ng[b].n);
	free(lg);
	free(ng);
}

/* Add @st's per-level counts to phase @ph's; returns its moves. */
static unsigned long count_levels(int ph, const struct cl_balance_stats *st)
{
	const unsigned long by[NR_LVL] = { st->moved_smt, st->moved_llc, st->moved_node, st->moved_numa };

	for (int l = 0; l < NR_LVL; l++)
		if (by[l])
			__atomic_fetch_add(&moves[ph][l], by[l], __ATOMIC_RELAXED);
	smp_check(by[0] + by[1] + by[2] + by[3] == st->moved, "per-level counts %lu+%lu+%lu+%lu, moved %lu",
		  by[0], by[1], by[2], by[3], st->moved);
	return st->moved;
}

/* One balancing pass for rq @dst in phase @ph (0, 1); returns tasks moved. */
static int pass(unsigned dst, int ph)
{
	uint64_t now = __atomic_add_fetch(&clock_ns, 10 * US, __ATOMIC_RELAXED);
	struct cl_balance_stats st;
	int m;

	memset(&st, 0, sizeof(st));
	m = cl_balance_run(sched, dst, now, &st);
	if (!smp_check(m >= 0, "cl_balance_run(%u): %s", dst, strerror(errno)))
		return 0;
	count_levels(ph, &st);
	return m;
}

/*
 * Phase 2's skew: take every task off @rq (nothing runs now) and wake it
 * on rq 0 or src2 again, so that the rounds start from a large imbalance.
 */
static void reskew(struct cl_rq *rq)
{
	struct cl_task **mine = malloc(sizeof(*mine) * nr_tasks);
	struct cds_list_head *pos, *next;
	unsigned n = 0;

	if (!smp_check(mine != NULL, "out of memory"))
		return;
	cl_rq_lock(rq);
	cds_list_for_each_safe(pos, next, &rq->cfs_tasks) {
		struct cl_sched_entity *se = cl_container_of(pos, struct cl_sched_entity, group_node);
		struct cl_task *p = cl_container_of(se, struct cl_task, se);

		if (smp_check(cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP) == 0, "dequeue: %s", strerror(errno)))
			mine[n++] = p;
	}
	cl_rq_unlock(rq);
	for (unsigned i = 0; i < n; i++) {
		uint64_t now = __atomic_add_fetch(&clock_ns, 10 * US, __ATOMIC_RELAXED);

		smp_check(cl_task_wake(sched, mine[i], i % 2 ? src2 : 0, now) == 0, "cl_task_wake: %s",
			  strerror(errno));
	}
	free(mine);
}

/* max and min nr_running over the rqs; returns the sum. */
static unsigned long spread(unsigned *max, unsigned *min)
{
	unsigned long sum = 0;

	*max = 0;
	*min = ~0u;
	for (unsigned c = 0; c < nr_rqs; c++) {
		unsigned n = __atomic_load_n(&cl_sched_rq(sched, c)->nr_running, __ATOMIC_RELAXED);

		*max = n > *max ? n : *max;
		*min = n < *min ? n : *min;
		sum += n;
	}
	return sum;
}

static void *driver(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	struct cl_rq *rq = cl_sched_rq(sched, me);
	unsigned seed = me * 2654435761u | 1u;

	urcu_memb_register_thread();
	smp_pin_self(rqcpu.id[me]); /* (refused for a CPU of a fake tree: fine) */
	smp_barrier();
	for (unsigned long i = 0; !smp_stopping(); i++) {
		uint64_t now = __atomic_add_fetch(&clock_ns, 100 * US, __ATOMIC_RELAXED);

		if (i % 256 == 255)
			smp_flip(&cpus, &seed);
		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now);
		if (cl_rq_tick(rq, now) || !rq->curr)
			cl_rq_pick_next(rq);
		if (i % 7 == 0 && rq->curr) { /* block and wake again at once */
			struct cl_task *p = rq->curr;

			smp_check(cl_rq_dequeue(rq, p, CL_DEQUEUE_SLEEP) == 0, "dequeue: %s",
				  strerror(errno));
			cl_rq_put_prev(rq);
			smp_check(cl_rq_enqueue(rq, p, CL_ENQUEUE_WAKEUP) == 0, "enqueue: %s",
				  strerror(errno));
		}
		cl_rq_unlock(rq);
		if (i % 3 == 0)
			pass(me, 0);
	}
	/* static load from here: nothing runs */
	cl_rq_lock(rq);
	cl_rq_put_prev(rq);
	cl_rq_unlock(rq);
	smp_barrier();
	if (me == 0) /* everyone is past phase 1, nobody in phase 2 yet */
		spread(&spread_max[0], &spread_min[0]);
	pthread_barrier_wait(&round_bar);
	reskew(rq);
	pthread_barrier_wait(&round_bar);
	/* phase 2: rounds until one moves nothing */
	for (;;) {
		unsigned long cross = __atomic_load_n(&moves[1][LVL_CROSS], __ATOMIC_RELAXED);
		unsigned mx = 0, mn = 0;

		if (me == 0)
			spread(&mx, &mn);
		pthread_barrier_wait(&round_bar); /* spread read before the round's passes */
		__atomic_fetch_add(&round_moves, (unsigned long)pass(me, 1), __ATOMIC_RELAXED);
		pthread_barrier_wait(&round_bar);
		if (me == 0) {
			if (__atomic_load_n(&moves[1][LVL_CROSS], __ATOMIC_RELAXED) != cross) {
				cross_last_round = rounds_used;
				cross_last_spread = mx - mn;
			}
			rounds_used++;
			rounds_done = __atomic_load_n(&round_moves, __ATOMIC_RELAXED) == 0 ||
				      rounds_used >= max_rounds;
			__atomic_store_n(&round_moves, 0, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&round_bar);
		if (rounds_done)
			break;
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/*
 * Phase 3: skew again, then passes one at a time from this thread (the
 * drivers are gone), each checked against the rules on the machine as it
 * was just before: the source found by the counts that fell, the level
 * from the topology and compared with the library's count.
 */
static void phase3(void)
{
	unsigned *before = calloc(nr_rqs, sizeof(unsigned));
	struct grp *lg = calloc(nr_llcs, sizeof(*lg)), *ng = calloc(nr_nodes, sizeof(*ng));
	unsigned long long last_imb = 0;
	long round, last = -1;
	unsigned long moved = 1;

	if (!smp_check(before && lg && ng, "out of memory"))
		return;
	for (unsigned c = 0; c < nr_rqs; c++)
		reskew(cl_sched_rq(sched, c));
	for (round = 0; round < max_rounds && moved; round++) {
		moved = 0;
		for (unsigned dst = 0; dst < nr_rqs; dst++) {
			uint64_t now = __atomic_add_fetch(&clock_ns, 10 * US, __ATOMIC_RELAXED);
			struct cl_balance_stats st;
			const struct grp *gs, *gd;
			int m, src = -1, lvl;

			groups_read(before, lg, ng);
			memset(&st, 0, sizeof(st));
			m = cl_balance_run(sched, dst, now, &st);
			if (!smp_check(m >= 0, "cl_balance_run(%u): %s", dst, strerror(errno)))
				break;
			count_levels(2, &st);
			if (!m)
				continue;
			moved += (unsigned long)m;
			for (unsigned c = 0; c < nr_rqs; c++)
				if (cl_sched_rq(sched, c)->nr_running < before[c])
					src = (int)c;
			if (!smp_check(src >= 0 && before[src] - cl_sched_rq(sched, (unsigned)src)->nr_running == (unsigned)m &&
					       cl_sched_rq(sched, dst)->nr_running - before[dst] == (unsigned)m,
				       "round %ld: %d task(s) moved to rq %u from no single rq", round, m, dst))
				continue;
			lvl = level((unsigned)src, dst);
			own[lvl] += (unsigned long)m;
			smp_check((lvl == LVL_SMT ? st.moved_smt : lvl == LVL_LLC ? st.moved_llc
					: lvl == LVL_NODE ? st.moved_node : st.moved_numa) == (unsigned long)m,
				  "round %ld: rq %d -> %u (%s) counted at another level", round, src, dst, lvl_name[lvl]);
			if (lvl == LVL_CROSS) {
				gs = &ng[rq_node[src]];
				gd = &ng[rq_node[dst]];
				smp_check(numa_rule(gs, gd, before[dst]),
					  "round %ld: rq %d -> %u across nodes at node loads %llu/%u and %llu/%u, %u and "
					  "%u tasks: not past the NUMA rule (%u%%, allowance %u)", round, src, dst,
					  gs->sum, gs->n, gd->sum, gd->n, before[src], before[dst],
					  CL_BALANCE_NUMA_IMBALANCE_PCT, node_allow[gd->node]);
				smp_check((unsigned long long)m <= even_tasks(gs, gd), "round %ld: %d task(s) across "
					  "nodes, more than the %llu that even them", round, m, even_tasks(gs, gd));
				last = round;
				last_imb = even_tasks(gs, gd);
			} else if (lvl == LVL_NODE) {
				gs = &lg[rq_llc[src]];
				gd = &lg[rq_llc[dst]];
				smp_check(llc_rule(gs, gd, before[dst]),
					  "round %ld: rq %d -> %u across LLCs at LLC loads %llu/%u and %llu/%u, %u and %u "
					  "tasks: not past the LLC rule (%u%%)", round, src, dst, gs->sum, gs->n, gd->sum,
					  gd->n, before[src], before[dst], CL_BALANCE_LLC_IMBALANCE_PCT);
				smp_check((unsigned long long)m <= even_tasks(gs, gd), "round %ld: %d task(s) across "
					  "LLCs, more than the %llu that even them", round, m, even_tasks(gs, gd));
			} else {
				smp_check(before[src] >= before[dst] + 2 && (unsigned)m <= (before[src] - before[dst]) / 2,
					  "round %ld: %d task(s) rq %d -> %u in an LLC at %u and %u tasks", round, m, src,
					  dst, before[src], before[dst]);
			}
		}
	}
	printf("balance rounds: phase=3 rounds=%ld\n", round);
	if (last >= 0)
		printf("balance cross_node: phase=3 last in round %ld, at a node imbalance of %llu tasks "
		       "(allowance %u, NUMA pct %u)\n", last, last_imb, node_allow[0],
		       CL_BALANCE_NUMA_IMBALANCE_PCT);
	for (int l = 0; l < NR_LVL; l++)
		smp_check(own[l] == moves[2][l], "phase 3: %s: %lu by the topology, %lu by the library",
			  lvl_name[l], own[l], moves[2][l]);
	free(before);
	free(lg);
	free(ng);
}

static void print_moves(int ph)
{
	printf("balance migrations: phase=%d", ph + 1);
	for (int l = 0; l < NR_LVL; l++)
		printf(" %s=%lu", lvl_name[l], moves[ph][l]);
	printf("\n");
}

int main(void)
{
	long per_cpu = smp_env_long("TASKS_PER_CPU", 32);
	struct cl_percpu_pool_attr attr = { 0, 0, 0 };
	struct cl_percpu_pool *pool;
	struct cl_task *tasks;
	unsigned char *found;
	unsigned max, min;
	unsigned long sum, quiet = 0;
	uint64_t now;

	smp_banner(NAME);
	max_rounds = smp_env_long("ROUNDS", 10000);
	if (cl_topology_load(&topo, getenv("SYSFS_ROOT") && *getenv("SYSFS_ROOT") ? getenv("SYSFS_ROOT")
										   : NULL) != 0)
		return smp_fatal(NAME, "cl_topology_load: %s", strerror(errno));
	smp_online_cpus(&cpus);
	rqcpu.nr = 0;
	for (unsigned c = 0; c < topo.nr_cpu_ids && rqcpu.nr < SMP_MAX_CPUS; c++)
		if (topo.cpu[c].online)
			rqcpu.id[rqcpu.nr++] = (int)c;
	if (rqcpu.nr == 0)
		return smp_fatal(NAME, "the topology has no online CPU");
	nr_rqs = (unsigned)rqcpu.nr;
	if (per_cpu < 1)
		per_cpu = 1;
	nr_tasks = (unsigned)per_cpu * nr_rqs;

	attr.max_nr_cpus = nr_rqs;
	pool = cl_percpu_pool_create(&attr);
	sched = pool ? cl_sched_create(nr_rqs, pool) : NULL;
	/* a size that is a multiple of the alignment, as aligned_alloc() wants */
	tasks = aligned_alloc(CL_CACHELINE_SIZE, (sizeof(*tasks) * nr_tasks + CL_CACHELINE_SIZE - 1) &
							 ~(size_t)(CL_CACHELINE_SIZE - 1));
	found = calloc(nr_tasks, 1);
	if (!sched || !tasks || !found)
		return smp_fatal(NAME, "setup: %s", strerror(errno));
	urcu_memb_register_thread();
	cl_balance_set_migration_cost(sched, 0);
	if (domains_init() != 0)
		return smp_fatal(NAME, "setup: out of memory");
	if (cl_balance_set_topology_cpus(sched, &topo, rqcpu.id) != 0)
		return smp_fatal(NAME, "cl_balance_set_topology_cpus: %s", strerror(errno));
	/* the skew: rq 0, and the first rq on another node if there is one */
	src2 = 0;
	for (unsigned c = 1; c < nr_rqs && !src2; c++)
		if (topo.cpu[rqcpu.id[c]].node != topo.cpu[rqcpu.id[0]].node)
			src2 = c;
	now = 1000 * US;
	for (unsigned i = 0; i < nr_tasks; i++) {
		unsigned c = i % 2 ? src2 : 0;
		struct cl_rq *rq = cl_sched_rq(sched, c);

		cl_task_init(&tasks[i], (int)(i % 5) - 2);
		cl_rq_lock(rq);
		cl_rq_update_clock(rq, now);
		if (cl_rq_enqueue(rq, &tasks[i], 0) != 0)
			return smp_fatal(NAME, "enqueue: %s", strerror(errno));
		cl_rq_unlock(rq);
	}
	clock_ns = now;
	printf("balance: %u rqs (CPUs %d..%d), %u LLCs, %u nodes, %u tasks on rqs 0 and %u (node %d "
	       "and %d), domain balancer (LLC %u%%, NUMA %u%% and allowance %u on node %d)\n",
	       nr_rqs, rqcpu.id[0], rqcpu.id[nr_rqs - 1], topo.nr_llcs, topo.nr_nodes, nr_tasks, src2,
	       topo.cpu[rqcpu.id[0]].node, topo.cpu[rqcpu.id[src2]].node, CL_BALANCE_LLC_IMBALANCE_PCT,
	       CL_BALANCE_NUMA_IMBALANCE_PCT, node_allow[0], topo.cpu[rqcpu.id[0]].node);
	fflush(stdout);

	pthread_barrier_init(&round_bar, NULL, nr_rqs);
	smp_run((int)nr_rqs, driver, smp_duration(), 2);
	pthread_barrier_destroy(&round_bar);
	print_moves(0);
	printf("balance spread: phase=1 max=%u min=%u\n", spread_max[0], spread_min[0]);
	print_moves(1);
	sum = spread(&max, &min);
	printf("balance spread: phase=2 max=%u min=%u rounds=%ld\n", max, min, rounds_used);
	if (cross_last_round >= 0)
		printf("balance cross_node: last in round %ld, at a spread of %u\n", cross_last_round,
		       cross_last_spread);
	smp_check(rounds_used < max_rounds, "not converged after %ld rounds: nr_running %u..%u", rounds_used,
		  min, max);
	check_fixpoint(1);

	/* once balanced, a further round moves nothing at any level */
	for (unsigned c = 0; c < nr_rqs; c++)
		quiet += (unsigned long)pass(c, 1);
	smp_check(quiet == 0, "a balanced machine still migrated %lu task(s)", quiet);

	phase3();
	print_moves(2);
	sum = spread(&max, &min);
	printf("balance spread: phase=3 max=%u min=%u\n", max, min);
	check_fixpoint(2);
	for (unsigned c = 0; c < nr_rqs; c++)
		quiet += (unsigned long)pass(c, 2);
	smp_check(quiet == 0, "a balanced machine still migrated %lu task(s)", quiet);

	/* every task exactly once */
	for (unsigned c = 0; c < nr_rqs; c++) {
		struct cl_rq *rq = cl_sched_rq(sched, c);
		const char *why = NULL;
		struct cds_list_head *pos;

		cl_rq_lock(rq);
		smp_check(cl_rq_validate(rq, &why) == 0, "rq %u: %s", c, why ? why : "?");
		cds_list_for_each(pos, &rq->cfs_tasks) {
			struct cl_sched_entity *se = cl_container_of(pos, struct cl_sched_entity, group_node);
			struct cl_task *p = cl_container_of(se, struct cl_task, se);
			size_t i = (size_t)(p - tasks);

			if (!smp_check(p >= tasks && i < nr_tasks, "rq %u lists a task %p not ours", c,
				       (void *)p))
				continue;
			smp_check(!found[i]++, "task %zu listed twice", i);
			smp_check(p->cpu == (int)c, "task %zu listed on rq %u but p->cpu %d", i, c, p->cpu);
		}
		cl_rq_unlock(rq);
	}
	for (unsigned i = 0; i < nr_tasks; i++)
		smp_check(found[i] == 1, "task %u found %u times", i, found[i]);
	smp_check(sum == nr_tasks, "%lu tasks queued, %u made", sum, nr_tasks);

	/* take them all down and free */
	for (unsigned i = 0; i < nr_tasks; i++) {
		struct cl_rq *rq = cl_task_rq_lock(sched, &tasks[i]);

		cl_rq_dequeue(rq, &tasks[i], CL_DEQUEUE_SLEEP);
		cl_task_rq_unlock(rq, &tasks[i]);
	}
	smp_check(cl_sched_destroy(sched) == 0, "cl_sched_destroy: %s", strerror(errno));
	cl_percpu_pool_destroy(pool);
	urcu_memb_unregister_thread();
	urcu_memb_barrier();
	cl_topology_free(&topo);
	free(tasks);
	free(found);
	free(rq_node);
	free(rq_llc);
	free(node_allow);
	return smp_finish(NAME, "%u tasks on %u rqs balanced to %u..%u in %ld rounds; %lu + %lu migrations",
			  nr_tasks, nr_rqs, min, max, rounds_used,
			  moves[0][0] + moves[0][1] + moves[0][2] + moves[0][3],
			  moves[1][0] + moves[1][1] + moves[1][2] + moves[1][3] + moves[2][0] + moves[2][1] +
				  moves[2][2] + moves[2][3]);
}
