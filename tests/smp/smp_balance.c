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
 * balance.h has no scheduling domains: a pass for CPU d reads every online
 * rq's nr_running, picks the busiest, and pulls up to half the difference
 * if the busiest has at least 2 more tasks than d (cl_balance_find_busiest(),
 * cl_balance_move()); SMT, LLC and node play no part. So the program counts
 * every migration by the topology level the two CPUs share (smt: same core;
 * llc: same LLC, other core; node: same node, other LLC; cross_node) and
 * asserts what the library promises, not a hierarchy it lacks:
 *
 * Phase 1 (DURATION seconds): the drivers tick their rq on a shared
 * simulated clock, pick, make the running task block and wake again every
 * 7th step, and run a balancing pass (find busiest, move) every 3rd step,
 * with the cache-hot window off. Printed: migrations per level, the spread
 * (max - min nr_running) at the end.
 *
 * Phase 2: every running task is put back (static load), every task is
 * taken off its rq and woken on the skewed rqs again, then rounds: each
 * driver runs one pass for its rq, all meet at a barrier; until a round in
 * which no pass moved anything (at most ROUNDS rounds). Printed: the
 * spread (max - min) before the last round that moved a task across nodes.
 * Asserted:
 *   - convergence: max - min nr_running <= 1 over the rqs. This is the
 *     balancer's fixpoint with no running task and no cache-hot task: a
 *     pass moves whenever the busiest rq has >= 2 more tasks than the
 *     puller, so a round without moves means every pair differs by <= 1;
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
 * llc=B node=C cross_node=D` and the same for phase=2, `balance spread:
 * phase=N max=X min=Y`, `balance cross_node: last in round R, at a spread
 * of S` (when any), then PASS/FAIL.
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
static unsigned long moves[2][NR_LVL];    /* [phase][level] (atomic) */
static unsigned spread_max[2], spread_min[2];

/* round barrier of phase 2 */
static pthread_barrier_t round_bar;
static unsigned long round_moves; /* (atomic) */
static int rounds_done;           /* set by driver 0 after a quiet round */
static long max_rounds, rounds_used;
static unsigned src2, nr_tasks;
static unsigned cross_last_spread; /* phase 2: spread before the last round with a cross-node move */
static long cross_last_round = -1;

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

/* One balancing pass for rq @dst in phase @ph (0, 1); returns tasks moved. */
static int pass(unsigned dst, int ph)
{
	uint64_t now = __atomic_add_fetch(&clock_ns, 10 * US, __ATOMIC_RELAXED);
	int src = cl_balance_find_busiest(sched, dst), m;

	if (src < 0)
		return 0;
	m = cl_balance_move(sched, (unsigned)src, dst, now, NULL);
	if (!smp_check(m >= 0, "cl_balance_move(%d -> %u): %s", src, dst, strerror(errno)))
		return 0;
	__atomic_fetch_add(&moves[ph][level((unsigned)src, dst)], (unsigned long)m, __ATOMIC_RELAXED);
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
	tasks = aligned_alloc(CL_CACHELINE_SIZE, sizeof(*tasks) * nr_tasks);
	found = calloc(nr_tasks, 1);
	if (!sched || !tasks || !found)
		return smp_fatal(NAME, "setup: %s", strerror(errno));
	urcu_memb_register_thread();
	cl_balance_set_migration_cost(sched, 0);
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
	       "and %d), flat balancer (busiest of all online rqs)\n",
	       nr_rqs, rqcpu.id[0], rqcpu.id[nr_rqs - 1], topo.nr_llcs, topo.nr_nodes, nr_tasks, src2,
	       topo.cpu[rqcpu.id[0]].node, topo.cpu[rqcpu.id[src2]].node);
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
	smp_check(max - min <= 1, "not converged after %ld rounds: nr_running %u..%u", rounds_used,
		  min, max);

	/* once balanced, a further round moves nothing at any level */
	for (unsigned c = 0; c < nr_rqs; c++)
		quiet += (unsigned long)pass(c, 1);
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
	return smp_finish(NAME, "%u tasks on %u rqs balanced to %u..%u in %ld rounds; %lu + %lu migrations",
			  nr_tasks, nr_rqs, min, max, rounds_used,
			  moves[0][0] + moves[0][1] + moves[0][2] + moves[0][3],
			  moves[1][0] + moves[1][1] + moves[1][2] + moves[1][3]);
}
