/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/lifecycle.h - the runtime's lifecycle.
 *
 * cl_runtime_create() (attributes checked, workers started),
 * cl_runtime_nr_workers(), cl_runtime_sched(), cl_runtime_context_kind(),
 * cl_runtime_shutdown() (idempotent, safe from several threads) and
 * cl_runtime_destroy().
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_LIFECYCLE_H
#define CACHELOCAL_SCHED_RUNTIME_LIFECYCLE_H

CL_BEGIN_DECLS

/* ---- lifecycle ---- */

CL_INLINE void cl__rt_free(struct cl_runtime *rt)
{
	struct cds_list_head *pos;

	cds_list_for_each(pos, &rt->all) {
		struct cl_rt_task *t = cl_container_of(pos, struct cl_rt_task, keep.all);

#ifdef CL__RT_VALGRIND
		VALGRIND_STACK_DEREGISTER(t->keep.vg_stack);
#else
		(void)t;
#endif
	}
	for (unsigned int i = 0; i < rt->nr_batches; i++)
		munmap(rt->batches[i], cl__rt_batch_slots(rt) * cl__rt_slot_size(rt));
	free(rt->batches);
	cl__rt_io_fini(rt);
	if (rt->tcache)
		cl_objcache_destroy(rt->tcache);
	free(rt->workers);
	free(rt->pin_masks);
	/* EBUSY only with tasks queued or attached to a group: every task was
	 * detached (cl__rt_task_detach()) before we get here */
	if (rt->sched)
		(void)cl_sched_destroy(rt->sched);
	free(rt);
}

/* Stop and join every started worker. */
CL_INLINE void cl__rt_stop_workers(struct cl_runtime *rt)
{
	CL_INJECT(64);
	cl__rt_tick_stop(rt);
	CL_ATOMIC_STORE(&rt->stop, 1, CL_SEQ_CST);
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (rt->workers[i].started) {
			/* the worker checks stop under its rq lock before sleeping */
			cl__rq_lock(rt->workers[i].rq);
			cl__rq_unlock(rt->workers[i].rq);
			cl__rt_kick(&rt->workers[i]);
		}
	for (unsigned int i = 0; i < rt->nr_workers; i++)
		if (rt->workers[i].started) {
			pthread_join(rt->workers[i].thread, NULL);
			rt->workers[i].started = 0;
		}
	cl__rt_bpool_stop(rt);
}

/*
 * Pinned workers balance by the machine's scheduling domains (balance.h):
 * worker i's rq stands for the CPU it is pinned to, so an idle worker pulls
 * from its SMT sibling and LLC first and across nodes only past the NUMA
 * threshold. Without a readable topology the balancer stays flat (what an
 * unpinned runtime uses: its workers have no CPU of their own).
 */
CL_INLINE void cl__rt_balance_domains(struct cl_runtime *rt, const int *cpus, unsigned int nr_allowed)
{
	int *ids = (int *)malloc((size_t)rt->nr_workers * sizeof(int));
	struct cl_topology t;

	if (ids && cl_topology_load(&t, NULL) == 0) {
		for (unsigned int i = 0; i < rt->nr_workers; i++)
			ids[i] = cpus[i % nr_allowed];
		(void)cl_balance_set_topology_cpus(rt->sched, &t, ids);
		cl_topology_free(&t);
	}
	free(ids);
}

/* The first line of the file @path (under @root) that @match accepts,
 * into @line (@size bytes, its newline dropped): 1, or 0 when none does or
 * the file cannot be read. A line longer than @line is skipped whole.
 * errno is kept. */
CL_INLINE int cl__rt_find_line(const char *root, const char *path, int (*match)(const char *),
			       char *line, size_t size)
{
	char name[1024];
	int e = errno, found = 0, skipping = 0;
	FILE *f;

	if ((size_t)snprintf(name, sizeof(name), "%s%s", root, path) >= sizeof(name))
		return 0;
	f = fopen(name, "re");
	if (!f) {
		errno = e;
		return 0;
	}
	while (!found && fgets(line, (int)size, f)) {
		size_t l = strlen(line);
		int whole = l && line[l - 1] == '\n';

		if (whole)
			line[--l] = '\0';
		if (!skipping && whole && match(line))
			found = 1;
		skipping = !whole;
	}
	fclose(f);
	errno = e;
	return found;
}

CL_INLINE int cl__rt_is_any_line(const char *line)
{
	(void)line;
	return 1;
}

/* Does the comma-separated list @list (ending at @end, or at its NUL when
 * @end is NULL) hold "cpu"? */
CL_INLINE int cl__rt_has_cpu(const char *list, const char *end)
{
	const char *p = list;

	if (!end)
		end = list + strlen(list);
	while (p < end) {
		const char *c = (const char *)memchr(p, ',', (size_t)(end - p));
		const char *e = c ? c : end;

		if (e - p == 3 && strncmp(p, "cpu", 3) == 0)
			return 1;
		p = e + 1;
	}
	return 0;
}

/* /proc/self/cgroup: v2's "0::/path"; v1's "N:cpu,...:/path" */
CL_INLINE int cl__rt_is_cg2_path(const char *line)
{
	return strncmp(line, "0::/", 4) == 0;
}

CL_INLINE int cl__rt_is_cg1_cpu_path(const char *line)
{
	const char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

	return b && cl__rt_has_cpu(a + 1, b) && b[1] == '/';
}

/* /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... -
 * FSTYPE SOURCE SUPEROPTIONS"; v1's cpu hierarchy has "cpu" among its
 * super options */
CL_INLINE int cl__rt_is_cg2_mount(const char *line)
{
	return strstr(line, " - cgroup2 ") != NULL;
}

CL_INLINE int cl__rt_is_cg1_cpu_mount(const char *line)
{
	const char *t = strstr(line, " - cgroup "), *opts = t ? strrchr(t, ' ') : NULL;

	return opts && cl__rt_has_cpu(opts + 1, NULL);
}

/*
 * cl__rt_cg_cpu_limit() - cl__rt_cgroup_cpu_limit() for one hierarchy: v2
 * (@v1 0: `cpu.max`, "QUOTA PERIOD" or "max PERIOD") or v1's cpu
 * controller (`cpu.cfs_quota_us`, -1 for none, over `cpu.cfs_period_us`).
 */
CL_INLINE unsigned int cl__rt_cg_cpu_limit(const char *root, int v1)
{
	char line[4096], cg[1024], mroot[1024], mpoint[1024], dir[2048], buf[64];
	const char *path;
	size_t base, ml;
	unsigned int best = 0;

	if (!cl__rt_find_line(root, "/proc/self/cgroup", v1 ? cl__rt_is_cg1_cpu_path : cl__rt_is_cg2_path,
			      line, sizeof(line)))
		return 0;
	path = strchr(strchr(line, ':') + 1, ':') + 1;
	if (strlen(path) >= sizeof(cg))
		return 0;
	strcpy(cg, path);
	if (!cl__rt_find_line(root, "/proc/self/mountinfo", v1 ? cl__rt_is_cg1_cpu_mount : cl__rt_is_cg2_mount,
			      line, sizeof(line)) ||
	    sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, mpoint) != 2 || strchr(mroot, '\\') ||
	    strchr(mpoint, '\\'))
		return 0; /* (an escaped name: a space or newline in a path) */
	ml = strcmp(mroot, "/") ? strlen(mroot) : 0;
	if (strncmp(cg, mroot, ml) != 0 || (cg[ml] != '/' && cg[ml] != '\0'))
		return 0; /* our cgroup lies outside what the mount shows */
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", root, strcmp(mpoint, "/") ? mpoint : "") >=
	    sizeof(dir) / 2)
		return 0;
	base = strlen(dir);
	if (base + strlen(cg + ml) + 32 >= sizeof(dir))
		return 0;
	strcpy(dir + base, cg + ml);
	/* the limit at each level, from the leaf up to the mount's root */
	for (;;) {
		size_t l = strlen(dir);
		long long quota = 0, period = 0;

		while (l > base && dir[l - 1] == '/')
			dir[--l] = '\0';
		if (v1) {
			strcpy(dir + l, "/cpu.cfs_quota_us");
			if (cl__rt_find_line("", dir, cl__rt_is_any_line, buf, sizeof(buf)) &&
			    sscanf(buf, "%lld", &quota) == 1) {
				strcpy(dir + l, "/cpu.cfs_period_us");
				if (!cl__rt_find_line("", dir, cl__rt_is_any_line, buf, sizeof(buf)) ||
				    sscanf(buf, "%lld", &period) != 1)
					period = 0;
			}
		} else {
			strcpy(dir + l, "/cpu.max");
			if (!cl__rt_find_line("", dir, cl__rt_is_any_line, buf, sizeof(buf)) ||
			    sscanf(buf, "%lld %lld", &quota, &period) != 2)
				quota = 0; /* "max": no limit at this level */
		}
		if (quota > 0 && period > 0) {
			long long c = (quota + period - 1) / period;
			unsigned int cpus = c > CL_MAX_CPUS ? CL_MAX_CPUS : (unsigned int)c;

			if (!best || cpus < best)
				best = cpus;
		}
		dir[l] = '\0';
		if (l <= base)
			break;
		while (l > base && dir[l - 1] != '/')
			l--;
		dir[l > base ? l - 1 : base] = '\0';
	}
	return best;
}

/*
 * cl__rt_cgroup_cpu_limit() - the CPU bandwidth limit of the caller's
 * cgroup, in CPUs rounded up: the tightest of its cgroup's and every
 * ancestor's within the mount, cgroup v2 (`cpu.max`) and v1 (the cpu
 * controller's CFS quota) both read. 0 when none is set or nothing can be
 * read (no cgroup mount, a cgroup outside the mount's root).
 * @root: prefixed to every path read: "" for the real /proc and cgroup
 * mounts; for a test, a directory with proc/self/{cgroup,mountinfo} and
 * the mounts' trees.
 */
CL_INLINE unsigned int cl__rt_cgroup_cpu_limit(const char *root)
{
	unsigned int v2 = cl__rt_cg_cpu_limit(root, 0), v1 = cl__rt_cg_cpu_limit(root, 1);

	return !v2 ? v1 : !v1 || v2 < v1 ? v2 : v1;
}

/*
 * cl__rt_default_workers() - the default number of workers: one per
 * allowed CPU (@nr_allowed), fewer under a cgroup CPU limit (@root:
 * cl__rt_cgroup_cpu_limit()): that limit rounded up, at least 2 (Go's
 * rule for GOMAXPROCS since 1.25: a quota of 2.5 CPUs gives 3; below 2, 2,
 * so that one busy task does not leave the runtime without a free worker).
 * *@quota_bound: set to 1 when the limit cut the count.
 */
CL_INLINE unsigned int cl__rt_default_workers(unsigned int nr_allowed, const char *root, int *quota_bound)
{
	unsigned int lim = cl__rt_cgroup_cpu_limit(root);

	*quota_bound = 0;
	if (lim && lim < 2)
		lim = 2;
	if (lim && lim < nr_allowed) {
		*quota_bound = 1;
		return lim;
	}
	return nr_allowed;
}

/**
 * cl_runtime_create() - start a runtime: a scheduler instance with one rq
 * per worker, and the workers (pinned, idle until tasks are spawned).
 * @attr: knobs (NULL: defaults: one pinned worker per allowed CPU).
 *
 * Under a cgroup CPU limit (v2 `cpu.max`, v1 `cpu.cfs_quota_us` over
 * `cpu.cfs_period_us`; the tightest of the process's cgroup and its
 * ancestors the mount shows) below the allowed CPUs, the default is that
 * limit rounded up, at least 2 (Go's GOMAXPROCS rule since 1.25), and
 * those workers are not pinned: a container given 2 CPUs' time on a
 * 96-CPU host gets 2 workers the kernel places, not 96 that time-share its
 * quota, nor 2 pinned to the CPUs every such container would pick. The
 * limit is read once, here; @attr->nr_workers overrides it.
 *
 * Context: any thread registered with liburcu-memb if it creates task
 * groups later (the runtime's workers register themselves).
 * The I/O backend (io.h) is chosen here: io_uring, else epoll (env
 * CL_RUNTIME_IO=epoll or =io_uring forces one; cl_runtime_io_mode()).
 *
 * Return: the runtime, or NULL with errno EINVAL (more workers than
 * CL_MAX_CPUS, @attr->stack_size or @attr->guard_size out of bounds, an
 * unknown @attr->guard_mode), ENOSYS (CL_RUNTIME_GUARD_MARKERS on a kernel
 * without guard markers), ENOMEM, pthread_create's error, or
 * io_uring_setup()'s (CL_RUNTIME_IO=io_uring where it fails).
 */
CL_INLINE struct cl_runtime *cl_runtime_create(const struct cl_runtime_attr *attr)
{
	int cpus[CL_MAX_CPUS];
	unsigned int nr_allowed = cl__rt_allowed_cpus(cpus, CL_MAX_CPUS), n;
	const unsigned int bpl = (unsigned int)(8 * sizeof(unsigned long));
	struct cl_runtime *rt;
	int e;

	int quota_bound = 0, unpinned = attr && (attr->flags & CL_RUNTIME_UNPINNED);

#ifdef CL__RT_NEEDS_SIGNAL_API
	cl__rt_signal_api_missing(); /* preempt.h: a compile-time error */
#endif
	n = attr && attr->nr_workers ? attr->nr_workers : cl__rt_default_workers(nr_allowed, "", &quota_bound);
	unpinned |= quota_bound; /* fewer workers than CPUs by a quota: let the kernel place them */
	if (n > CL_MAX_CPUS || (attr && ((attr->stack_size && (attr->stack_size < CL_RUNTIME_STACK_MIN ||
							      attr->stack_size > CL_RUNTIME_STACK_MAX)) ||
					 attr->guard_size > CL_RUNTIME_STACK_MAX))) {
		errno = EINVAL;
		return NULL;
	}
	rt = (struct cl_runtime *)calloc(1, sizeof(*rt));
	if (!rt) {
		errno = ENOMEM;
		return NULL;
	}
	rt->nr_workers = n;
	rt->serial = CL_ATOMIC_FETCH_ADD(&cl__rt_serials, 1, CL_RELAXED) + 1;
	rt->stack_size = attr && attr->stack_size ? attr->stack_size : CL_RUNTIME_STACK_SIZE;
	rt->stack_size = (rt->stack_size + 15u) & ~(size_t)15u;
	rt->guard_size = attr && attr->guard_size ? attr->guard_size : CL_RUNTIME_GUARD_SIZE;
	rt->guard_size = (rt->guard_size + cl__rt_page() - 1) & ~(cl__rt_page() - 1);
	if (cl__rt_guard_init(rt, attr ? attr->guard_mode : CL_RUNTIME_GUARD_AUTO) != 0) {
		e = errno; /* EINVAL, ENOSYS (stack.h) */
		free(rt);
		errno = e;
		return NULL;
	}
	rt->no_overflow_report = attr && (attr->flags & CL_RUNTIME_NO_OVERFLOW_REPORT);
	rt->wake_affine = !(attr && (attr->flags & CL_RUNTIME_NO_WAKE_AFFINE));
	rt->slice_ns = attr && (attr->flags & CL_RUNTIME_NO_PREEMPT) ? 0
		       : attr && attr->slice_ns ? attr->slice_ns : CL_RUNTIME_SLICE_NS;
	rt->spin_ns = attr && attr->spin_ns ? attr->spin_ns : CL_RUNTIME_SPIN_NS;
#ifdef CL__RT_VALGRIND
	if (!(attr && attr->spin_ns) && RUNNING_ON_VALGRIND)
		rt->spin_ns = CL_RUNTIME_NO_SPIN; /* one thread at a time: a spin only delays */
#endif
	rt->balance_ns = attr && attr->balance_ns ? attr->balance_ns : CL_RUNTIME_BALANCE_NS;
	rt->precise_clock = (attr && (attr->flags & CL_RUNTIME_PRECISE_CLOCK)) || !cl__rt_clock_sampling_ok();
	cl_spin_init(&rt->all_lock);
	CDS_INIT_LIST_HEAD(&rt->all);
	cl__rt_clock_init(rt);
	rt->mask_words = n / bpl + 1;
	rt->pin_masks = (unsigned long *)calloc((size_t)n * rt->mask_words, sizeof(unsigned long));
	rt->workers = (struct cl__rt_worker *)aligned_alloc(CL_FALSE_SHARING_SIZE,
							    (size_t)n * sizeof(struct cl__rt_worker));
	{
		struct cl_objcache_attr oa;

		memset(&oa, 0, sizeof(oa));
		oa.obj_size = sizeof(struct cl_rt_task);
		oa.align = CL_CACHELINE_SIZE;
		rt->tcache = cl_objcache_create(&oa);
	}
	rt->sched = rt->workers && rt->pin_masks && rt->tcache ? cl_sched_create(n, NULL) : NULL;
	if (!rt->sched) {
		cl__rt_free(rt);
		errno = ENOMEM;
		return NULL;
	}
	memset((void *)rt->workers, 0, (size_t)n * sizeof(struct cl__rt_worker));
	if (attr && attr->migration_cost_ns == CL_RUNTIME_NEVER_HOT)
		cl_balance_set_migration_cost(rt->sched, 0);
	else
		cl_balance_set_migration_cost(rt->sched, attr && attr->migration_cost_ns
								 ? attr->migration_cost_ns
								 : CL_RUNTIME_MIGRATION_COST_NS);
	for (unsigned int i = 0; i < n; i++) {
		struct cl__rt_worker *w = &rt->workers[i];

		rt->pin_masks[(size_t)i * rt->mask_words + i / bpl] |= 1UL << (i % bpl);
		w->rt = rt;
		w->wake_tail = &w->wake_head;
		w->cpu = i;
		w->chan_key = rt->serial << 16 | i; /* i < CL_MAX_CPUS <= 2^16 */
		w->rq = cl__sched_rq(rt->sched, i);
		w->os_cpu = unpinned ? -1 : cpus[i % nr_allowed];
		cl__rt_wheel_init(&w->wheel, cl__rt_timer_now() >> CL__RT_TW_SHIFT);
		w->timer_next = CL__RT_TIMER_NONE;
		cl_spin_init(&w->timer_lock);
	}
	e = cl__rt_io_init(rt); /* the I/O backend (iopoll.h) */
	if (e) {
		cl__rt_free(rt);
		errno = e;
		return NULL;
	}
	if (!unpinned)
		cl__rt_balance_domains(rt, cpus, nr_allowed);
	if (!rt->no_overflow_report)
		cl__rt_overflow_report_init();
	for (unsigned int i = 0; i < n; i++) {
		e = pthread_create(&rt->workers[i].thread, NULL, cl__rt_worker_main, &rt->workers[i]);
		if (e) {
			cl__rt_stop_workers(rt);
			cl__rt_free(rt);
			errno = e;
			return NULL;
		}
		rt->workers[i].started = 1;
	}
	if (cl__rt_tick_start(rt) != 0) {
		cl__rt_stop_workers(rt);
		cl__rt_free(rt);
		errno = EAGAIN;
		return NULL;
	}
	return rt;
}

/**
 * cl_runtime_nr_workers() - number of workers.
 * @rt: the runtime.
 *
 * Return: it.
 *
 * Context: any.
 */
CL_INLINE unsigned int cl_runtime_nr_workers(const struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return 0;
	return rt->nr_workers;
}

/**
 * cl_runtime_sched() - the scheduler instance under @rt (task groups are
 * created under cl_sched_root_group(cl_runtime_sched(rt))).
 * @rt: the runtime.
 * Context: any. Return: it.
 */
CL_INLINE struct cl_sched *cl_runtime_sched(struct cl_runtime *rt)
{
	if (CL__BAD_ARG(rt == NULL))
		return NULL;
	return rt->sched;
}

/**
 * cl_runtime_context_kind() - the runtime's context switch in this build.
 *
 * Context: any.
 *
 * Return: "x86_64-asm", "aarch64-asm" or "ucontext" (other architectures,
 * or -DCL_RUNTIME_UCONTEXT).
 */
CL_INLINE const char *cl_runtime_context_kind(void)
{
	return CL__CTX_KIND;
}

/*
 * cl__rt_all_asleep() - is every worker asleep with an empty rq and no
 * timer armed, and stayed so across two collections, with no task in
 * cl_blocking()? Then no task runs, none is queued, asleep on a timer or
 * waiting for a helper thread, and no task can wake another: the
 * live tasks are all blocked for good (unless a thread outside the runtime
 * wakes one, which the caller rules out).
 */
CL_INLINE int cl__rt_all_asleep(struct cl_runtime *rt)
{
	unsigned int epoch[2][64];
	unsigned int n = rt->nr_workers < 64 ? rt->nr_workers : 64;

	if (rt->nr_workers > 64)
		return 0; /* not supported beyond 64 workers: shutdown just waits */
	if (CL_ATOMIC_LOAD(&rt->nr_blocking, CL_SEQ_CST))
		return 0; /* a cl_blocking() call will wake its task */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < n; i++) {
			struct cl__rt_worker *w = &rt->workers[i];

			epoch[pass][i] = CL_ATOMIC_LOAD(&w->idle_epoch, CL_SEQ_CST);
			/* a task asleep on a timer, or parked in I/O, is not blocked for good */
			if (!CL_ATOMIC_LOAD(&w->sleeping, CL_SEQ_CST) ||
			    CL_ATOMIC_LOAD(&w->rq->nr_running, CL_SEQ_CST) || cl__rt_remote_pending(w) ||
			    CL_ATOMIC_LOAD(&w->wheel.nr, CL_SEQ_CST) || CL_ATOMIC_LOAD(&w->io_nr, CL_SEQ_CST))
				return 0;
			if (CL_ATOMIC_LOAD(&w->idle_epoch, CL_SEQ_CST) != epoch[pass][i])
				return 0;
		}
	}
	for (unsigned int i = 0; i < n; i++)
		if (epoch[0][i] != epoch[1][i])
			return 0;
	return CL_ATOMIC_LOAD(&rt->live, CL_SEQ_CST) != 0;
}

/**
 * cl_runtime_shutdown() - wait until every task has returned, then stop and
 * join the workers.
 * @rt: the runtime.
 *
 * From the first call on, cl_spawn() from outside the runtime's tasks
 * fails with EPIPE; tasks may still spawn tasks while it waits. A spawn
 * from outside that was admitted before is waited for (never lost). If
 * every remaining task is blocked (no task can run, so none can wake the
 * others), it returns at once with EDEADLK and the runtime keeps running:
 * a task parked in I/O (io.h) is not waited for: its call fails with
 * ECANCELED, as every call of a task that would park from then on, so the
 * tasks serving connections return;
 * a thread outside may unblock them (cl_chan_close(), cl_waitq_wake_all(),
 * ...) and call it again. Joinable tasks not yet joined are freed by
 * cl_runtime_destroy(). Idempotent, and safe from several threads at once:
 * one of them stops the workers, the others wait for it, all return 0.
 *
 * Context: a thread outside the runtime's tasks; no other outside thread
 * may be waking tasks concurrently (it would make the blocked count
 * momentarily equal to the live count).
 * Return: 0, or -1 with errno EINVAL (NULL @rt), EPERM (called from a
 * task), EDEADLK (tasks remain, all blocked).
 */
CL_INLINE int cl_runtime_shutdown(struct cl_runtime *rt)
{
	int up = CL__RT_UP;

	if (!rt) {
		errno = EINVAL;
		return -1;
	}
	if (cl__rt_current()) {
		errno = EPERM;
		return -1;
	}
	if (CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE) == CL__RT_SHUT)
		return 0;
	CL_ATOMIC_STORE(&rt->closing, 1, CL_SEQ_CST);
	CL_ATOMIC_FETCH_ADD(&rt->shutdown_waiting, 1, CL_SEQ_CST);
	for (;;) {
		int seq = CL_ATOMIC_LOAD(&rt->quiesce_seq, CL_SEQ_CST), spawning;
		struct timespec ts = { 0, 2000000 };

		CL_INJECT(61); /* shutdown looks at the live tasks */
		if (CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE) != CL__RT_UP)
			break; /* another caller is stopping the workers */
		/* `spawning` before `live`: see cl__rt_spawn_admit() */
		spawning = CL_ATOMIC_LOAD(&rt->spawning, CL_SEQ_CST);
		if (!spawning && CL_ATOMIC_LOAD(&rt->live, CL_SEQ_CST) == 0)
			break;
		cl__rt_io_cancel(rt, 0, 1); /* tasks parked in I/O: ECANCELED (io.h), each pass */
		if (!spawning && cl__rt_all_asleep(rt)) {
			CL_ATOMIC_FETCH_SUB(&rt->shutdown_waiting, 1, CL_SEQ_CST);
			errno = EDEADLK;
			return -1;
		}
		cl__futex_wait(&rt->quiesce_seq, seq, &ts);
	}
	CL_ATOMIC_FETCH_SUB(&rt->shutdown_waiting, 1, CL_SEQ_CST);
	CL_INJECT(63); /* no task left: about to stop the workers */
	if (CL_ATOMIC_CAS(&rt->shut, &up, CL__RT_STOPPING, CL_SEQ_CST, CL_SEQ_CST)) {
		cl__rt_stop_workers(rt);
		CL_ATOMIC_STORE(&rt->shut, CL__RT_SHUT, CL_RELEASE);
		cl__futex_wake(&rt->shut, INT_MAX);
	} else {
		while ((up = CL_ATOMIC_LOAD(&rt->shut, CL_ACQUIRE)) != CL__RT_SHUT)
			cl__futex_wait(&rt->shut, up, NULL);
	}
	return 0;
}

/**
 * cl_runtime_destroy() - shut @rt down (cl_runtime_shutdown()) and free it.
 * @rt: the runtime (NULL: no-op, returns 0).
 *
 * Refuses while tasks remain blocked: if cl_runtime_shutdown() fails with
 * EDEADLK, nothing is freed or stopped and -1/EDEADLK is returned. The
 * runtime, its tasks and the objects they wait on stay usable: unblock the
 * tasks (cl_chan_close(), cl_waitq_wake_all(), ...) and call it again.
 * Blocked tasks are never discarded, so a wait object never lists a task
 * whose stack is gone. Unjoined finished tasks are freed.
 *
 * Context: a thread outside the runtime's tasks, once: no other call on
 * @rt may run concurrently or follow.
 * Return: 0, or -1 with errno EDEADLK (tasks remain blocked; nothing
 * freed) or EPERM (called from a task).
 */
CL_INLINE int cl_runtime_destroy(struct cl_runtime *rt)
{
	struct cds_list_head *pos;

	if (!rt)
		return 0;
	if (cl_runtime_shutdown(rt) != 0)
		return -1;
	/* every task returned: the objects still handed out were not joined */
	cds_list_for_each(pos, &rt->all) {
		struct cl_rt_task *t = cl_container_of(pos, struct cl_rt_task, keep.all);

		if (!CL_ATOMIC_LOAD(&t->refs, CL_ACQUIRE))
			continue;
		t->refs = 0;
		cl__rt_task_release(t);
	}
	cl__rt_free(rt);
	return 0;
}

CL_END_DECLS

#endif /* CACHELOCAL_SCHED_RUNTIME_LIFECYCLE_H */
