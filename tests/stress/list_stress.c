/* SPDX-License-Identifier: MIT */
/*
 * list_stress - per-CPU (and per-mm_cid) linked lists keep the exact node set
 * under concurrent cl_rseq_pop / cl_rseq_trypush, preemption, migration and
 * signals, in both index modes, through the one-attempt operations and through
 * the per-CPU path (cl_percpu_list_pop / cl_percpu_list_push).
 *
 * Each worker pops up to STASH nodes from the list of its current index,
 * marks each one as its own (a node popped twice is caught here), then
 * pushes them back on the list of its current index at that time (which
 * moves nodes between lists). At the end every node must be on exactly one
 * list, once.
 */
#include "stress.h"

#include <cachelocal/percpu_ops.h>
#include <cachelocal/topology.h>

#define NODES_PER_LIST 32
#define STASH 4

struct lnode {
	void *next;
	long id;
	int owner; /* 0 on a list, worker id + 1 while popped (atomic) */
};

struct lhead {
	void *head CL_ALIGNED(CL_FALSE_SHARING_SIZE);
};

struct list_test {
	struct lhead *lists;
	unsigned nr;
	enum cl_rseq_index idx;
	int path; /* 0: cl_rseq_pop/trypush with an index; 1: cl_percpu_list_pop/list_push */
};

static int pop_one(struct list_test *t, struct lnode **out)
{
	void *p = NULL;
	int r, c;

	if (t->path) {
		r = cl_percpu_list_pop(t->idx, &t->lists[0].head, sizeof(struct lhead),
				       offsetof(struct lnode, next), &p);
		if (r >= 0)
			*out = p;
		return r >= 0 ? CL_RSEQ_OK : r == CL_PERCPU_CMPFAIL ? CL_RSEQ_CMPFAIL : r;
	}
	do {
		c = cl_rseq_current_index(t->idx);
		r = cl_rseq_pop(t->idx, &t->lists[(unsigned)c % t->nr].head,
				      offsetof(struct lnode, next), &p, c);
	} while (r == CL_RSEQ_ABORT);
	if (r == CL_RSEQ_OK)
		*out = p;
	return r;
}

static int push_one(struct list_test *t, struct lnode *n)
{
	int r, c;

	if (t->path)
		return cl_percpu_list_push(t->idx, &t->lists[0].head, sizeof(struct lhead),
					   offsetof(struct lnode, next), n) >= 0
			       ? CL_RSEQ_OK
			       : CL_RSEQ_ERROR;
	do {
		c = cl_rseq_current_index(t->idx);
		r = cl_rseq_trypush(t->idx, &t->lists[(unsigned)c % t->nr].head,
				       offsetof(struct lnode, next), n, c);
	} while (r == CL_RSEQ_ABORT || r == CL_RSEQ_CMPFAIL);
	return r;
}

static void *worker(struct stress_run *run, int id)
{
	struct list_test *t = run->priv;
	struct lnode *stash[STASH];
	long i;

	for (i = 0;; i++) {
		int got = 0, r;

		while (got < STASH && (r = pop_one(t, &stash[got])) == CL_RSEQ_OK) {
			int prev = __atomic_exchange_n(&stash[got]->owner, id + 1, __ATOMIC_RELAXED);

			if (prev != 0) {
				stress_fail(run, "node %ld popped by worker %d while owned by %d",
					    stash[got]->id, id, prev - 1);
				return (void *)1;
			}
			got++;
		}
		if (got < STASH && r != CL_RSEQ_CMPFAIL) {
			stress_fail(run, "pop returned %d", r);
			return (void *)1;
		}
		if (i == 0)
			stress_allow_signals();
		if (i % 64 == 0)
			sched_yield(); /* hold the nodes across a reschedule */
		while (got > 0) {
			struct lnode *n = stash[--got];

			__atomic_store_n(&n->owner, 0, __ATOMIC_RELAXED);
			if (push_one(t, n) != CL_RSEQ_OK) {
				stress_fail(run, "push failed");
				return (void *)1;
			}
		}
		if ((i & 255) == 0 && stress_should_stop(run, i + 1))
			break;
	}
	__atomic_fetch_add(&run->ops, (unsigned long)i + 1, __ATOMIC_RELAXED);
	return NULL;
}

static int run_pass(const struct stress_cfg *cfg, enum cl_rseq_index idx, int path)
{
	struct list_test t;
	struct stress_run run;
	struct lnode *nodes;
	unsigned char *seen;
	long nr_nodes, found = 0, dup = 0, bad = 0;
	int rc;

	t.nr = cl_nr_possible_cpus();
	t.idx = idx;
	t.path = path;
	nr_nodes = (long)t.nr * NODES_PER_LIST;
	t.lists = aligned_alloc(CL_FALSE_SHARING_SIZE, t.nr * sizeof(*t.lists));
	nodes = aligned_alloc(16, (size_t)nr_nodes * sizeof(*nodes));
	seen = calloc((size_t)nr_nodes, 1);
	if (!t.lists || !nodes || !seen) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	memset(t.lists, 0, t.nr * sizeof(*t.lists));
	for (long i = 0; i < nr_nodes; i++) {
		struct lhead *h = &t.lists[i % t.nr];

		nodes[i].id = i;
		nodes[i].owner = 0;
		nodes[i].next = h->head;
		h->head = &nodes[i];
	}
	rc = stress_run(&run, cfg, worker, &t, NULL);
	for (unsigned l = 0; l < t.nr; l++) {
		for (struct lnode *n = t.lists[l].head; n; n = n->next) {
			if (n < nodes || n >= nodes + nr_nodes || ((uintptr_t)n & 1)) {
				bad++;
				break;
			}
			if (seen[n->id]++)
				dup++;
			if (n->owner != 0)
				bad++;
			if (++found > nr_nodes) /* a cycle */
				break;
		}
	}
	if (found != nr_nodes || dup || bad)
		rc = 1;
	printf("list_stress [" STRESS_INDEX_FMT ", %s]: %d workers, %lu rounds, %lu aborts, "
	       "%lu signals, %lu migrations: %ld of %ld nodes found, %ld duplicates, %ld bad: %s\n",
	       STRESS_INDEX_ARGS(idx), path ? "cl_percpu_list_pop/list_push" : "cl_rseq_pop/trypush",
	       cfg->nr_workers, run.ops,
	       run.aborts, run.signals, run.migrations, found, nr_nodes, dup, bad,
	       rc == 0 ? "PASS" : "FAIL");
	free(seen);
	free(nodes);
	free(t.lists);
	return rc;
}

/* Both paths: one-attempt operations with an index, and the per-CPU path. */
static int run_index(const struct stress_cfg *cfg, enum cl_rseq_index idx)
{
	return run_pass(cfg, idx, 0) | run_pass(cfg, idx, 1);
}

STRESS_MAIN(run_index)
