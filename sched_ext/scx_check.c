/* SPDX-License-Identifier: MIT */
/*
 * sched_ext/scx_check.c - the guest side of make check-scx: runs in the
 * emulated 7.3 machine (tests/guest/scx.plan), as root, with
 * /bin/scx_cachelocal beside it.
 *
 *   1. the load below under the kernel's own scheduler (the table's first
 *      column), the nice test and the cgroup test;
 *   2. starts the daemon; checks that sched_ext is enabled with ops
 *      "cachelocal";
 *   3. the load again, for LOAD_S seconds (the table's second column), the
 *      nice test, the cgroup test (cgroups of cpu.weight 100 and 300, a
 *      spinning process each on one CPU), the affinity test, a CPU
 *      offlined and onlined mid-run;
 *      the daemon stopped (SIGSTOP) for 8 s mid-load: the tasks it holds
 *      reach the global DSQ after 5 s and keep running;
 *      after each, that the scheduler is still enabled (no watchdog or
 *      runtime-error ejection) and the daemon alive;
 *   4. SIGKILL of the daemon while a load runs: sched_ext goes disabled and
 *      every worker finishes under the fair class;
 *   5. the daemon again with -p fifo (a global FIFO, no runqueue): the
 *      load, the nice test and the two shapes for the table's third column;
 *   6. each layout variant of the daemon (/bin/scx_cachelocal_rq_scattered,
 *      _se_inline, _detach_head): loads, the load, the nice test, still
 *      enabled (one check line each).
 *
 * Under the kernel's scheduler and cachelocal (and fifo) it also runs a
 * hackbench-shaped and a schbench-shaped load (below); under cachelocal
 * they are the checks "hackbench" and "schbench". "scx_check --shapes"
 * runs only those two, under whatever scheduler is loaded.
 *
 * Output: "scx CHECK: pass|fail NAME (what)" per check, "scx TABLE ..."
 * lines, exit status 0 when every check passed. TCG timing means nothing:
 * the checks are about behaviour, with wide bounds.
 *
 * The load: W workers (one per CPU and 4 more) that spin in short bursts
 * and sleep 1 ms every tenth burst; each samples sched_getcpu() between
 * bursts and counts the changes (migrations) and those between LLCs.
 * The nice test: two spinning threads pinned to one CPU at nice 0 and
 * nice 5 (weights 1024 and 335: 75.4% and 24.6%), their CPU time from
 * /proc/self/task/TID/schedstat over the window.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cachelocal/topology.h>

#define MAX_W 256

static struct cl_topology topo;
static int ncpu;
static int failed;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void check(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("scx CHECK: %s %s (%s)\n", ok ? "pass" : "fail", name, buf);
	fflush(stdout);
	failed += !ok;
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	buf[0] = 0;
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

static const char *scx_state(void)
{
	static char st[64];

	if (read_str("/sys/kernel/sched_ext/state", st, sizeof(st)) != 0)
		strcpy(st, "(none)");
	return st;
}

/* ---- the load ---- */

struct worker {
	pthread_t th;
	volatile long progress;
	long migrations, cross_llc;
	int pin; /* -1: free */
	int nice;
	int bad_cpu; /* pinned: times it saw another CPU */
	pid_t tid;
	int sleeps; /* sleep 1 ms every tenth burst */
};

static volatile int load_stop;
static volatile double load_deadline; /* 0: until load_stop */

static void spin_burst(void)
{
	for (volatile int i = 0; i < 20000; i++)
		;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int last = -1;

	w->tid = (pid_t)syscall(SYS_gettid);
	if (w->nice)
		setpriority(PRIO_PROCESS, (id_t)w->tid, w->nice);
	if (w->pin >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->pin, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	while (!load_stop && (load_deadline == 0 || now_s() < load_deadline)) {
		int cpu;

		spin_burst();
		cpu = sched_getcpu();
		if (w->pin >= 0 && cpu != w->pin)
			w->bad_cpu++;
		if (last >= 0 && cpu != last) {
			w->migrations++;
			if (cpu < (int)topo.nr_cpu_ids && last < (int)topo.nr_cpu_ids &&
			    topo.cpu[cpu].llc != topo.cpu[last].llc)
				w->cross_llc++;
		}
		last = cpu;
		w->progress++;
		if (w->sleeps && w->progress % 10 == 0)
			usleep(1000);
	}
	return NULL;
}

static void start(struct worker *w, int pin, int nice, int sleeps)
{
	memset(w, 0, sizeof(*w));
	w->pin = pin;
	w->nice = nice;
	w->sleeps = sleeps;
	if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
		perror("pthread_create");
		exit(2);
	}
}

struct load_result {
	double mig_per_s, cross_llc_per_s;
	long cross_llc;
	long progress;
	int all_progressed;
};

/* the mixed load for @secs seconds */
static struct load_result run_load(double secs)
{
	static struct worker w[MAX_W];
	struct load_result r = { 0 };
	int n = ncpu + 4 > MAX_W ? MAX_W : ncpu + 4;
	long mig = 0;
	double t0 = now_s();

	load_stop = 0;
	load_deadline = 0;
	for (int i = 0; i < n; i++)
		start(&w[i], -1, 0, 1);
	sleep_s(secs);
	load_stop = 1;
	r.all_progressed = 1;
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		mig += w[i].migrations;
		r.cross_llc += w[i].cross_llc;
		r.progress += w[i].progress;
		r.all_progressed &= w[i].progress > 0;
	}
	r.mig_per_s = (double)mig / (now_s() - t0);
	r.cross_llc_per_s = (double)r.cross_llc / (now_s() - t0);
	return r;
}

static unsigned long long task_cpu_ns(pid_t tid)
{
	char path[64], buf[128];

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	if (read_str(path, buf, sizeof(buf)) != 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

/* two threads pinned to @cpu at nice 0 and 5; returns nice 0's share */
static double nice_share(int cpu, double secs)
{
	static struct worker w[2];
	unsigned long long a0, b0, a1, b1;

	load_stop = 0;
	load_deadline = 0;
	start(&w[0], cpu, 0, 0);
	start(&w[1], cpu, 5, 0);
	while (!w[0].tid || !w[1].tid)
		sleep_s(0.01);
	sleep_s(1); /* settle: both on the CPU, nice applied */
	a0 = task_cpu_ns(w[0].tid);
	b0 = task_cpu_ns(w[1].tid);
	sleep_s(secs);
	a1 = task_cpu_ns(w[0].tid);
	b1 = task_cpu_ns(w[1].tid);
	load_stop = 1;
	pthread_join(w[0].th, NULL);
	pthread_join(w[1].th, NULL);
	if (a1 - a0 + b1 - b0 == 0)
		return 0;
	return (double)(a1 - a0) / (double)(a1 - a0 + b1 - b0);
}

/* Two spinning processes pinned to @cpu, one in cgroup scx_a (cpu.weight
 * 100), one in scx_b (cpu.weight 300); returns scx_b's share of their CPU
 * time over @secs (weights say 0.75), or -1 if the cgroups could not be
 * set up (@why says why). cgroup2 is mounted on /sys/fs/cgroup if it is
 * not yet. */
#define CG_ROOT "/sys/fs/cgroup"
static double cgroup_share(int cpu, double secs, const char **why)
{
	static const char *const names[2] = { CG_ROOT "/scx_a", CG_ROOT "/scx_b" };
	static const char *const weights[2] = { "100", "300" };
	char path[128], buf[128];
	pid_t kid[2] = { 0, 0 };
	unsigned long long t0[2], t1[2];
	double share = -1;

	*why = "";
	if (access(CG_ROOT "/cgroup.controllers", F_OK) != 0) {
		mkdir(CG_ROOT, 0755);
		if (mount("none", CG_ROOT, "cgroup2", 0, NULL) != 0) {
			*why = "mount cgroup2 failed";
			return -1;
		}
	}
	if (write_str(CG_ROOT "/cgroup.subtree_control", "+cpu") != 0) {
		*why = "enabling the cpu controller failed";
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/cpu.weight", names[i]);
		if ((mkdir(names[i], 0755) != 0 && errno != EEXIST) || write_str(path, weights[i]) != 0) {
			*why = "making the cgroups or writing cpu.weight failed";
			goto out;
		}
	}
	for (int i = 0; i < 2; i++) {
		kid[i] = fork();
		if (kid[i] == 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
			for (;;)
				spin_burst();
		}
		snprintf(path, sizeof(path), "%s/cgroup.procs", names[i]);
		snprintf(buf, sizeof(buf), "%d", (int)kid[i]);
		if (kid[i] < 0 || write_str(path, buf) != 0) {
			*why = "moving a process into its cgroup failed";
			goto out;
		}
	}
	sleep_s(1); /* settle: both on the CPU, in their groups */
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)kid[i]);
		t0[i] = read_str(path, buf, sizeof(buf)) == 0 ? strtoull(buf, NULL, 10) : 0;
	}
	sleep_s(secs);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)kid[i]);
		t1[i] = read_str(path, buf, sizeof(buf)) == 0 ? strtoull(buf, NULL, 10) : 0;
	}
	if (t1[0] - t0[0] + t1[1] - t0[1] > 0)
		share = (double)(t1[1] - t0[1]) / (double)(t1[0] - t0[0] + t1[1] - t0[1]);
	else
		*why = "no CPU time measured";
out:
	for (int i = 0; i < 2; i++) {
		if (kid[i] > 0) {
			kill(kid[i], SIGKILL);
			waitpid(kid[i], NULL, 0);
		}
	}
	for (int i = 0; i < 2; i++)
		rmdir(names[i]);
	return share;
}

/* ---- hackbench and schbench shapes, as plain pthreads ----
 *
 * msg_run() mirrors bench/messaging.c (perf bench sched messaging, i.e.
 * hackbench, in thread mode): G groups of 20 senders and 20 receivers;
 * each receiver has its own pipe, every sender writes LOOPS 100-byte
 * messages to each receiver of its group, round robin, and every receiver
 * reads LOOPS x 20. wake_run() mirrors bench/schbench.c (schbench, no
 * lock): M message threads each own T workers; each round a message
 * thread stamps the time into each worker's mailbox and wakes it (a
 * futex); the worker records now - stamp (wake-to-run latency, log2
 * buckets of microseconds) and reports back; the message thread waits for
 * all of its workers before the next round. Both run on the kernel's
 * threads and whatever scheduler is loaded; every thread samples
 * sched_getcpu() between steps (migrations, cross-LLC). Either passes
 * when every thread finished before a deadline (nothing stalled). */
#define MSG_PAIRS 20
#define MSG_SIZE 100

struct mthread {
	pthread_t th;
	int fd;      /* receiver: read end; sender: unused */
	int *wfd;    /* sender: the write ends of its group's receivers */
	long loops;
	int last_cpu;
	long migrations, cross_llc;
	volatile int done;
};

static void count_cpu(int *last, long *mig, long *cross)
{
	int cpu = sched_getcpu();

	if (*last >= 0 && cpu != *last) {
		(*mig)++;
		if (cpu < (int)topo.nr_cpu_ids && *last < (int)topo.nr_cpu_ids &&
		    topo.cpu[cpu].llc != topo.cpu[*last].llc)
			(*cross)++;
	}
	*last = cpu;
}

static void *msg_sender(void *arg)
{
	struct mthread *t = arg;
	char buf[MSG_SIZE];

	memset(buf, 'x', sizeof(buf));
	for (long l = 0; l < t->loops; l++)
		for (int r = 0; r < MSG_PAIRS; r++) {
			size_t off = 0;

			while (off < sizeof(buf)) {
				ssize_t n = write(t->wfd[r], buf + off, sizeof(buf) - off);

				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0)
					return NULL;
				off += (size_t)n;
			}
			count_cpu(&t->last_cpu, &t->migrations, &t->cross_llc);
		}
	t->done = 1;
	return NULL;
}

static void *msg_receiver(void *arg)
{
	struct mthread *t = arg;
	char buf[MSG_SIZE];
	long want = t->loops * MSG_PAIRS * MSG_SIZE;

	while (want > 0) {
		ssize_t n = read(t->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		want -= n;
		count_cpu(&t->last_cpu, &t->migrations, &t->cross_llc);
	}
	t->done = 1;
	return NULL;
}

struct shape_result {
	int threads, finished;
	double secs, mig_per_s, cross_llc_per_s;
	unsigned p50_us, p99_us; /* wake_run: log2 bucket bounds */
	long rounds;
};

/* @groups groups, @loops messages per sender and receiver pair; waits at
 * most @limit_s for all to finish */
static struct shape_result msg_run(int groups, long loops, double limit_s)
{
	static struct mthread t[8 * 2 * MSG_PAIRS];
	static int wfd[8][MSG_PAIRS];
	struct shape_result r = { 0 };
	long mig = 0, cross = 0;
	double t0, end;
	int n = 0;

	if (groups > 8)
		groups = 8;
	t0 = now_s();
	for (int g = 0; g < groups; g++)
		for (int i = 0; i < MSG_PAIRS; i++) {
			int p[2];

			if (pipe(p) != 0) {
				perror("pipe");
				exit(2);
			}
			memset(&t[n], 0, sizeof(t[n]));
			t[n].fd = p[0];
			t[n].loops = loops;
			t[n].last_cpu = -1;
			wfd[g][i] = p[1];
			if (pthread_create(&t[n].th, NULL, msg_receiver, &t[n]) != 0)
				exit(2);
			n++;
		}
	for (int g = 0; g < groups; g++)
		for (int i = 0; i < MSG_PAIRS; i++) {
			memset(&t[n], 0, sizeof(t[n]));
			t[n].wfd = wfd[g];
			t[n].loops = loops;
			t[n].last_cpu = -1;
			if (pthread_create(&t[n].th, NULL, msg_sender, &t[n]) != 0)
				exit(2);
			n++;
		}
	end = t0 + limit_s;
	for (;;) {
		int fin = 0;

		for (int i = 0; i < n; i++)
			fin += t[i].done;
		r.finished = fin;
		if (fin == n || now_s() > end)
			break;
		sleep_s(0.05);
	}
	r.threads = n;
	r.secs = now_s() - t0;
	if (r.finished == n)
		for (int i = 0; i < n; i++) {
			pthread_join(t[i].th, NULL);
			mig += t[i].migrations;
			cross += t[i].cross_llc;
		}
	/* (a stalled run's threads are left blocked: the check fails) */
	for (int g = 0; g < groups && r.finished == n; g++)
		for (int i = 0; i < MSG_PAIRS; i++)
			close(wfd[g][i]);
	for (int i = 0; i < groups * MSG_PAIRS && r.finished == n; i++)
		close(t[i].fd);
	r.mig_per_s = (double)mig / r.secs;
	r.cross_llc_per_s = (double)cross / r.secs;
	return r;
}

#define WAKE_MAX_T 16
#define WAKE_BUCKETS 32

struct wworker {
	pthread_t th;
	struct wgroup *g;
	volatile int seq;   /* futex: the round it is woken for */
	volatile double stamp;
	unsigned long hist[WAKE_BUCKETS];
	int last_cpu;
	long migrations, cross_llc;
	volatile int done;
};

struct wgroup {
	pthread_t th;
	int nr;
	double run_s;
	volatile int pending; /* futex: workers not yet reported this round */
	volatile int stop;
	long rounds;
	int last_cpu;
	long migrations, cross_llc;
	volatile int done;
	struct wworker w[WAKE_MAX_T];
};

static long futex(volatile int *addr, int op, int val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static void *wake_worker(void *arg)
{
	struct wworker *w = arg;
	int seen = 0;

	for (;;) {
		while (w->seq == seen)
			futex(&w->seq, FUTEX_WAIT_PRIVATE, seen);
		seen = w->seq;
		if (w->g->stop)
			break;
		{
			double us = (now_s() - w->stamp) * 1e6;
			int b = 0;

			while (b < WAKE_BUCKETS - 1 && us >= (double)(1u << b))
				b++;
			w->hist[b]++;
		}
		count_cpu(&w->last_cpu, &w->migrations, &w->cross_llc);
		if (__atomic_sub_fetch(&w->g->pending, 1, __ATOMIC_SEQ_CST) == 0)
			futex(&w->g->pending, FUTEX_WAKE_PRIVATE, 1);
	}
	w->done = 1;
	return NULL;
}

static void *wake_message(void *arg)
{
	struct wgroup *g = arg;
	double end = now_s() + g->run_s;

	while (now_s() < end) {
		__atomic_store_n(&g->pending, g->nr, __ATOMIC_SEQ_CST);
		for (int i = 0; i < g->nr; i++) {
			g->w[i].stamp = now_s();
			__atomic_add_fetch(&g->w[i].seq, 1, __ATOMIC_SEQ_CST);
			futex(&g->w[i].seq, FUTEX_WAKE_PRIVATE, 1);
		}
		for (int p; (p = __atomic_load_n(&g->pending, __ATOMIC_SEQ_CST)) != 0;)
			futex(&g->pending, FUTEX_WAIT_PRIVATE, p);
		g->rounds++;
		count_cpu(&g->last_cpu, &g->migrations, &g->cross_llc);
	}
	g->stop = 1;
	for (int i = 0; i < g->nr; i++) {
		__atomic_add_fetch(&g->w[i].seq, 1, __ATOMIC_SEQ_CST);
		futex(&g->w[i].seq, FUTEX_WAKE_PRIVATE, 1);
	}
	g->done = 1;
	return NULL;
}

/* @m message threads of @t workers each, rounds for @run_s; waits at most
 * @limit_s for all to finish */
static struct shape_result wake_run(int m, int t, double run_s, double limit_s)
{
	static struct wgroup g[8];
	struct shape_result r = { 0 };
	unsigned long hist[WAKE_BUCKETS] = { 0 }, total = 0, acc = 0;
	long mig = 0, cross = 0;
	double t0 = now_s();
	int n = 0;

	if (m > 8)
		m = 8;
	if (t > WAKE_MAX_T)
		t = WAKE_MAX_T;
	for (int i = 0; i < m; i++) {
		memset(&g[i], 0, sizeof(g[i]));
		g[i].nr = t;
		g[i].run_s = run_s;
		g[i].last_cpu = -1;
		for (int j = 0; j < t; j++) {
			g[i].w[j].g = &g[i];
			g[i].w[j].last_cpu = -1;
			if (pthread_create(&g[i].w[j].th, NULL, wake_worker, &g[i].w[j]) != 0)
				exit(2);
		}
		if (pthread_create(&g[i].th, NULL, wake_message, &g[i]) != 0)
			exit(2);
	}
	n = m * (t + 1);
	for (;;) {
		int fin = 0;

		for (int i = 0; i < m; i++) {
			fin += g[i].done;
			for (int j = 0; j < t; j++)
				fin += g[i].w[j].done;
		}
		r.finished = fin;
		if (fin == n || now_s() > t0 + limit_s)
			break;
		sleep_s(0.05);
	}
	r.threads = n;
	r.secs = now_s() - t0;
	if (r.finished != n)
		return r; /* stalled: left as they are, the check fails */
	for (int i = 0; i < m; i++) {
		pthread_join(g[i].th, NULL);
		r.rounds += g[i].rounds;
		mig += g[i].migrations;
		cross += g[i].cross_llc;
		for (int j = 0; j < t; j++) {
			pthread_join(g[i].w[j].th, NULL);
			mig += g[i].w[j].migrations;
			cross += g[i].w[j].cross_llc;
			for (int b = 0; b < WAKE_BUCKETS; b++) {
				hist[b] += g[i].w[j].hist[b];
				total += g[i].w[j].hist[b];
			}
		}
	}
	for (int b = 0; b < WAKE_BUCKETS; b++) {
		acc += hist[b];
		if (!r.p50_us && acc * 2 >= total && total)
			r.p50_us = 1u << b;
		if (!r.p99_us && acc * 100 >= total * 99 && total)
			r.p99_us = 1u << b;
	}
	r.mig_per_s = (double)mig / r.secs;
	r.cross_llc_per_s = (double)cross / r.secs;
	return r;
}

/* the two shapes' sizes: 2 groups (80 threads), 20 loops; 2 x 8 workers
 * for 5 s; 120 s before a run counts as stalled */
#define MSG_GROUPS 2
#define MSG_LOOPS 20
#define WAKE_M 2
#define WAKE_T 8
#define WAKE_S 5.0
#define SHAPE_LIMIT_S 120.0
/* each layout variant of the daemon: the load, then the nice test */
#define VARIANT_LOAD_S 8.0
#define VARIANT_NICE_S 6.0

/* one line of the behaviour table: the kernel's, cachelocal's and the
 * FIFO's value (-1 where the FIFO did not run) */
static void table_row(const char *name, int decimals, double kern, double ours, double fifo, int have_fifo)
{
	if (!have_fifo) { /* not run (or not measured) under fifo */
		printf("scx TABLE | %-28s | %12.*f | %12.*f | %12s |\n", name, decimals, kern, decimals, ours, "-");
		return;
	}
	printf("scx TABLE | %-28s | %12.*f | %12.*f | %12.*f |\n", name, decimals, kern, decimals, ours, decimals,
	       fifo);
}

static pid_t daemon_pid;

static int daemon_alive(void)
{
	int st;

	return daemon_pid > 0 && waitpid(daemon_pid, &st, WNOHANG) == 0;
}

/*
 * Pressure: the daemon made late on purpose, two ways.
 *   rt: a SCHED_FIFO (priority RT_HOG_PRIO) process spinning in bursts,
 *       RT_HOG_ON_S on and RT_HOG_OFF_S off, each burst on the CPU the
 *       daemon last ran on (/proc/PID/stat; CPU 0 under the kernel's
 *       scheduler, which has no daemon);
 *   host: the guest prints "scx HOST-HOG on", and check-scx.sh starts a
 *       busy loop per host CPU beside QEMU (at QEMU's nice) until the
 *       guest prints "scx HOST-HOG off": the vCPUs, the daemon's among
 *       them, get less of the host.
 * Under it: the hackbench shape and the schbench shape (WAKE_S); then,
 * right after the pressure ends, the schbench shape for AFTER_S: its
 * wake-to-run p99 against the quiet one's is "back to quiet latency".
 */
#define RT_HOG_PRIO 50
#define RT_HOG_ON_S 0.25
#define RT_HOG_OFF_S 0.25
#define AFTER_S 1.0
/* hackbench under pressure, and its quiet reference, with 5x the
 * messages: the quiet shape (0.2 to 3 s here) is too short to compare */
#define PRESSURE_MSG_LOOPS (5 * MSG_LOOPS)
#define HOST_HOG_SETTLE_S 1.0 /* the host's watcher polls every 0.2 s */

static int proc_cpu(pid_t pid)
{
	char path[64], buf[1024], *p;
	int cpu = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_str(path, buf, sizeof(buf)) != 0 || !(p = strrchr(buf, ')')))
		return -1;
	/* field 39 (processor); p points at the end of field 2 */
	for (int f = 2; f < 39 && p; f++)
		p = strchr(p + 1, ' ');
	if (p)
		cpu = atoi(p + 1);
	return cpu;
}

static pid_t rt_hog_start(pid_t follow)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sched_param sp = { .sched_priority = RT_HOG_PRIO };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			perror("rt hog: SCHED_FIFO");
			_exit(1);
		}
		for (;;) {
			int cpu = follow > 0 ? proc_cpu(follow) : 0;
			cpu_set_t set;
			double end;

			CPU_ZERO(&set);
			CPU_SET(cpu < 0 ? 0 : cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
			end = now_s() + RT_HOG_ON_S;
			while (now_s() < end)
				spin_burst();
			sleep_s(RT_HOG_OFF_S);
		}
	}
	return pid;
}

struct pressure_result {
	struct shape_result msg, wake, after;
	int hog_ok;
};

/* @host: the host's hog, else the guest's real-time one following @follow */
static struct pressure_result pressure_run(int host, pid_t follow)
{
	struct pressure_result r = { 0 };
	pid_t hog = 0;

	if (host) {
		printf("scx HOST-HOG on\n");
		fflush(stdout);
		sleep_s(HOST_HOG_SETTLE_S);
		r.hog_ok = 1;
	} else {
		hog = rt_hog_start(follow);
		r.hog_ok = hog > 0;
		sleep_s(0.1);
	}
	r.msg = msg_run(MSG_GROUPS, PRESSURE_MSG_LOOPS, SHAPE_LIMIT_S);
	r.wake = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);
	if (host) {
		printf("scx HOST-HOG off\n");
		fflush(stdout);
		sleep_s(0.5);
	} else if (hog > 0) {
		int st;

		kill(hog, SIGKILL);
		waitpid(hog, &st, 0);
		r.hog_ok = !(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	}
	r.after = wake_run(WAKE_M, WAKE_T, AFTER_S, SHAPE_LIMIT_S);
	return r;
}

/* the daemon's counters (-c COUNTERS_PATH), fresh after SIGUSR1 */
#define COUNTERS_PATH "/tmp/scx_cachelocal.counters"

struct daemon_counters {
	long timeouts, drops, resyncs, resync_curr, resync_queued, preempts, rescued;
	int ok;
};

static long counter_of(const char *line, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), " %s ", key);
	p = strstr(line, k);
	return p ? atol(p + strlen(k)) : -1;
}

static struct daemon_counters daemon_report(void)
{
	struct daemon_counters c = { 0 };
	char line[2048], before[2048] = "";
	double end = now_s() + 5;

	read_str(COUNTERS_PATH, before, sizeof(before));
	kill(daemon_pid, SIGUSR1);
	/* the daemon rewrites the file within a loop (2 ms) */
	while (now_s() < end) {
		sleep_s(0.05);
		if (read_str(COUNTERS_PATH, line, sizeof(line)) == 0 && strstr(line, ": report:") &&
		    strcmp(line, before) != 0)
			break;
	}
	if (read_str(COUNTERS_PATH, line, sizeof(line)) != 0)
		return c;
	c.timeouts = counter_of(line, "timeouts");
	c.drops = counter_of(line, "drops");
	c.resyncs = counter_of(line, "resyncs");
	c.resync_curr = counter_of(line, "resync-curr");
	c.resync_queued = counter_of(line, "resync-queued");
	c.preempts = counter_of(line, "preempts");
	c.rescued = counter_of(line, "rescued");
	c.ok = c.timeouts >= 0 && c.resyncs >= 0 && c.resync_curr >= 0 && c.resync_queued >= 0;
	return c;
}

static int wait_state(const char *want, double secs)
{
	double end = now_s() + secs;

	while (now_s() < end) {
		if (strcmp(scx_state(), want) == 0)
			return 1;
		sleep_s(0.1);
	}
	return strcmp(scx_state(), want) == 0;
}

int main(int argc, char **argv)
{
	double load_s = argc > 1 ? atof(argv[1]) : 30;
	struct load_result kern, ours, fifo_res = { 0 };
	struct shape_result kmsg, kwake, omsg, owake, fmsg = { 0 }, fwake = { 0 }, kmsg5, omsg5;
	struct pressure_result kp_rt, kp_host, op_rt = { 0 }, op_host = { 0 };
	struct daemon_counters r0 = { 0 }, r1 = { 0 }, r2 = { 0 };
	double kshare, oshare, fshare = 0, t_enabled, kcg, ocg;
	const char *cg_why = "";
	int have_fifo = 0;
	char ops[128];
	int nice_cpu, pin_cpu, hp_cpu;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cl_topology_load(&topo, NULL) != 0) {
		perror("topology");
		return 2;
	}
	ncpu = (int)topo.nr_online;
	if (argc > 1 && strcmp(argv[1], "--shapes") == 0) {
		/* the two shapes alone, under whatever scheduler runs */
		struct shape_result m = msg_run(MSG_GROUPS, MSG_LOOPS, SHAPE_LIMIT_S);
		struct shape_result w = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);

		printf("hackbench: %d/%d threads finished in %.2f s, %.1f migrations/s, %.1f cross-LLC/s\n",
		       m.finished, m.threads, m.secs, m.mig_per_s, m.cross_llc_per_s);
		printf("schbench: %d/%d threads finished, %ld rounds, p50 < %u us, p99 < %u us, %.1f migrations/s\n",
		       w.finished, w.threads, w.rounds, w.p50_us, w.p99_us, w.mig_per_s);
		return m.finished == m.threads && w.finished == w.threads && w.rounds > 0 ? 0 : 1;
	}
	nice_cpu = ncpu > 3 ? 3 : 0;
	pin_cpu = ncpu > 2 ? 2 : 0;
	hp_cpu = ncpu > 5 ? 5 : ncpu - 1;
	printf("scx_check: %d CPUs, %u LLCs, %u nodes; load %.0f s; sched_ext state %s\n", ncpu, topo.nr_llcs,
	       topo.nr_nodes, load_s, scx_state());

	/* 1. the kernel's scheduler */
	kern = run_load(load_s / 3);
	kshare = nice_share(nice_cpu, 5);
	kcg = cgroup_share(nice_cpu, 5, &cg_why);
	printf("scx_check: kernel: %.1f migrations/s, %ld cross-LLC, nice-0 share %.3f\n", kern.mig_per_s,
	       kern.cross_llc, kshare);
	kmsg = msg_run(MSG_GROUPS, MSG_LOOPS, SHAPE_LIMIT_S);
	kwake = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);
	printf("scx_check: kernel: hackbench %d/%d threads finished in %.1f s; schbench %d/%d, %ld rounds\n",
	       kmsg.finished, kmsg.threads, kmsg.secs, kwake.finished, kwake.threads, kwake.rounds);
	kmsg5 = msg_run(MSG_GROUPS, PRESSURE_MSG_LOOPS, SHAPE_LIMIT_S);
	kp_rt = pressure_run(0, 0);
	kp_host = pressure_run(1, 0);
	printf("scx_check: kernel under pressure: RT hog: hackbench %.1f s, schbench %ld rounds, p99 < %u us, "
	       "after p99 < %u us; host hog: hackbench %.1f s, schbench %ld rounds, p99 < %u us, after p99 < %u us\n",
	       kp_rt.msg.secs, kp_rt.wake.rounds, kp_rt.wake.p99_us, kp_rt.after.p99_us, kp_host.msg.secs,
	       kp_host.wake.rounds, kp_host.wake.p99_us, kp_host.after.p99_us);
	mkdir("/tmp", 0755);

	/* 2. load the scheduler */
	daemon_pid = fork();
	if (daemon_pid == 0) {
		execl("/bin/scx_cachelocal", "scx_cachelocal", "-s", "10000", "-v", "-c", COUNTERS_PATH, (char *)NULL);
		perror("exec /bin/scx_cachelocal");
		_exit(127);
	}
	int enabled = wait_state("enabled", 60);

	read_str("/sys/kernel/sched_ext/root/ops", ops, sizeof(ops));
	check(enabled && strcmp(ops, "cachelocal") == 0 && daemon_alive(), "loads",
	      "state %s, ops %s, daemon %s", scx_state(), ops[0] ? ops : "(none)",
	      daemon_alive() ? "alive" : "gone");
	if (!enabled) {
		printf("scx_check: not enabled: the rest is skipped\n");
		return 1;
	}
	t_enabled = now_s();

	/* 3. under cachelocal */
	ours = run_load(load_s);
	check(ours.all_progressed && strcmp(scx_state(), "enabled") == 0 && daemon_alive(), "runs-load",
	      "%.0f s, %d workers all progressed: %s, %ld bursts, state %s", load_s, ncpu + 4,
	      ours.all_progressed ? "yes" : "no", ours.progress, scx_state());

	oshare = nice_share(nice_cpu, 10);
	/* the weights' share 0.754; bound: nice 0 gets 60%..90% */
	check(oshare > 0.60 && oshare < 0.90, "nice-share",
	      "nice 0 vs 5 on CPU %d: nice 0 got %.3f of the CPU, weights say 0.754, bound 0.60..0.90; kernel %.3f",
	      nice_cpu, oshare, kshare);

	ocg = cgroup_share(nice_cpu, 10, &cg_why);
	/* the weights' share 0.75; the same bound as nice */
	check(ocg > 0.60 && ocg < 0.90, "cgroup-weight",
	      "cgroups with cpu.weight 100 and 300, a process each on CPU %d: the 300 one got %.3f of the CPU, "
	      "weights say 0.750, bound 0.60..0.90; kernel %.3f%s%s",
	      nice_cpu, ocg, kcg, cg_why[0] ? "; " : "", cg_why);

	{
		static struct worker pinned;
		struct load_result bg;

		load_deadline = 0;
		start(&pinned, pin_cpu, 0, 1);
		bg = run_load(8); /* (resets load_stop: the pinned one stops with it) */
		load_stop = 1;
		pthread_join(pinned.th, NULL);
		check(pinned.bad_cpu == 0 && pinned.progress > 0 && bg.all_progressed, "affinity",
		      "a thread pinned to CPU %d: %ld bursts, %d seen on another CPU", pin_cpu, pinned.progress,
		      pinned.bad_cpu);
	}

	{
		static struct worker w[MAX_W];
		int n = ncpu + 4 > MAX_W ? MAX_W : ncpu + 4, off_ok, on_ok, all = 1;
		long before[MAX_W];
		char path[96];

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", hp_cpu);
		load_stop = 0;
		load_deadline = 0;
		for (int i = 0; i < n; i++)
			start(&w[i], -1, 0, 1);
		sleep_s(2);
		off_ok = write_str(path, "0") == 0;
		sleep_s(3);
		on_ok = write_str(path, "1") == 0;
		sleep_s(1);
		for (int i = 0; i < n; i++)
			before[i] = w[i].progress;
		sleep_s(3);
		for (int i = 0; i < n; i++)
			all &= w[i].progress > before[i];
		load_stop = 1;
		for (int i = 0; i < n; i++)
			pthread_join(w[i].th, NULL);
		check(off_ok && on_ok && all && strcmp(scx_state(), "enabled") == 0 && daemon_alive(), "hotplug",
		      "CPU %d offline %s, online %s; every one of %d workers progressed after: %s; state %s",
		      hp_cpu, off_ok ? "ok" : "failed", on_ok ? "ok" : "failed", n, all ? "yes" : "no", scx_state());
	}

	omsg = msg_run(MSG_GROUPS, MSG_LOOPS, SHAPE_LIMIT_S);
	check(omsg.finished == omsg.threads && strcmp(scx_state(), "enabled") == 0 && daemon_alive(), "hackbench",
	      "%d groups of %d senders and %d receivers over pipes, %d messages per sender-receiver pair: "
	      "%d of %d threads finished in %.1f s (limit %.0f s); state %s",
	      MSG_GROUPS, MSG_PAIRS, MSG_PAIRS, MSG_LOOPS, omsg.finished, omsg.threads, omsg.secs, SHAPE_LIMIT_S,
	      scx_state());
	owake = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);
	check(owake.finished == owake.threads && owake.rounds > 0 && strcmp(scx_state(), "enabled") == 0 &&
		      daemon_alive(),
	      "schbench",
	      "%d message threads waking %d workers each for %.0f s: %d of %d threads finished, %ld rounds, "
	      "wake-to-run p50 < %u us, p99 < %u us (TCG: order of magnitude only); state %s",
	      WAKE_M, WAKE_T, WAKE_S, owake.finished, owake.threads, owake.rounds, owake.p50_us, owake.p99_us,
	      scx_state());

	omsg5 = msg_run(MSG_GROUPS, PRESSURE_MSG_LOOPS, SHAPE_LIMIT_S);
	/* under pressure: within 3x the quiet hackbench (5x the messages,
	 * both), or, as the host's hog slows the whole guest (the kernel's
	 * scheduler too), within 1.5x the kernel's under the same pressure in
	 * this boot; every thread done,
	 * still enabled, and the wake-to-run p99 of the AFTER_S right after
	 * it at most one log2 bucket above the quiet run's (2x) */
	for (int host = 0; host < 2; host++) {
		struct pressure_result *pr = host ? &op_host : &op_rt;
		const struct pressure_result *kp = host ? &kp_host : &kp_rt;
		int done, in3x, near_kernel, back;

		*pr = pressure_run(host, daemon_pid);
		done = pr->msg.finished == pr->msg.threads && pr->wake.finished == pr->wake.threads &&
		       pr->wake.rounds > 0 && pr->after.finished == pr->after.threads;
		in3x = omsg5.finished == omsg5.threads && pr->msg.secs <= 3 * omsg5.secs;
		near_kernel = kp->msg.finished == kp->msg.threads && pr->msg.secs <= 1.5 * kp->msg.secs;
		back = pr->after.p99_us > 0 && pr->after.p99_us <= 2 * owake.p99_us;
		check(pr->hog_ok && done && (in3x || near_kernel) && back && strcmp(scx_state(), "enabled") == 0 &&
			      daemon_alive(),
		      host ? "pressure-host" : "pressure-rt",
		      "%s: hackbench (%d messages a pair) %.1f s (quiet %.1f s, within 3x: %s; kernel %.1f s under the "
		      "same, %.1f s quiet, within 1.5x of it: %s), schbench %ld "
		      "rounds, p99 < %u us (quiet %ld, p99 < %u us; kernel %ld, p99 < %u us); in the %.0f s after: "
		      "p99 < %u us (bound 2x quiet: %s; kernel %u us); all threads done: %s; state %s",
		      host ? "a busy loop per host CPU beside QEMU" :
			     "a SCHED_FIFO hog in bursts (0.25 s of 0.5 s) on the daemon's CPU",
		      PRESSURE_MSG_LOOPS, pr->msg.secs, omsg5.secs, in3x ? "yes" : "no", kp->msg.secs, kmsg5.secs,
		      near_kernel ? "yes" : "no",
		      pr->wake.rounds, pr->wake.p99_us,
		      owake.rounds, owake.p99_us, kp->wake.rounds, kp->wake.p99_us, AFTER_S, pr->after.p99_us,
		      back ? "yes" : "no", kp->after.p99_us, done ? "yes" : "no", scx_state());
	}

	{
		/* the daemon stopped for 8 s: the BPF side's rescue timer sends
		 * what waits longer than 5 s to the global DSQ */
		static struct worker w[MAX_W];
		int n = ncpu + 4 > MAX_W ? MAX_W : ncpu + 4, all = 1;
		long before[MAX_W];

		load_stop = 0;
		load_deadline = 0;
		for (int i = 0; i < n; i++)
			start(&w[i], -1, 0, 1);
		sleep_s(2);
		r0 = daemon_report();
		kill(daemon_pid, SIGSTOP);
		sleep_s(6);
		for (int i = 0; i < n; i++)
			before[i] = w[i].progress;
		sleep_s(2);
		for (int i = 0; i < n; i++)
			all &= w[i].progress > before[i];
		kill(daemon_pid, SIGCONT);
		sleep_s(2);
		load_stop = 1;
		for (int i = 0; i < n; i++)
			pthread_join(w[i].th, NULL);
		check(all && strcmp(scx_state(), "enabled") == 0 && daemon_alive(), "daemon-stopped",
		      "daemon stopped (SIGSTOP) for 8 s: every one of %d workers progressed in its last 2 s: %s; "
		      "state %s after SIGCONT",
		      n, all ? "yes" : "no", scx_state());
	}

	{
		/* healed at once: the daemon resynchronized its model after the
		 * late phase (it corrected tasks: picks the kernel no longer
		 * runs, queued tasks it no longer holds), and no pick timed out
		 * then or in the shapes run after it */
		struct shape_result am, aw;
		long fixed;

		r1 = daemon_report();
		am = msg_run(MSG_GROUPS, MSG_LOOPS, SHAPE_LIMIT_S);
		aw = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);
		r2 = daemon_report();
		fixed = (r1.resync_curr + r1.resync_queued) - (r0.resync_curr + r0.resync_queued);
		check(r0.ok && r1.ok && r2.ok && r1.resyncs > r0.resyncs && fixed > 0 && r2.timeouts == r0.timeouts &&
			      am.finished == am.threads && aw.finished == aw.threads,
		      "resync",
		      "the daemon's report: %ld resyncs after the stop, %ld tasks corrected (%ld picks, %ld queued), "
		      "%ld rescued by the BPF side; pick timeouts %ld before the stop, %ld after it and after "
		      "hackbench (%.1f s) and schbench (%ld rounds) run after it",
		      r1.resyncs - r0.resyncs, fixed, r1.resync_curr - r0.resync_curr,
		      r1.resync_queued - r0.resync_queued, r1.rescued - r0.rescued, r0.timeouts, r2.timeouts, am.secs,
		      aw.rounds);
	}

	check(strcmp(scx_state(), "enabled") == 0 && daemon_alive(), "no-ejection",
	      "%.0f s of guest time under cachelocal, state %s, daemon %s", now_s() - t_enabled, scx_state(),
	      daemon_alive() ? "alive" : "gone");

	/* 4. SIGKILL of the daemon mid-load */
	{
		static struct worker w[MAX_W];
		int n = ncpu + 4 > MAX_W ? MAX_W : ncpu + 4, disabled;
		double t0;

		load_stop = 0;
		load_deadline = now_s() + 6;
		for (int i = 0; i < n; i++)
			start(&w[i], -1, 0, 1);
		sleep_s(2);
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = 0;
		disabled = wait_state("disabled", 30);
		t0 = now_s();
		for (int i = 0; i < n; i++)
			pthread_join(w[i].th, NULL);
		check(disabled, "sigkill",
		      "state %s after SIGKILL of the daemon; %d workers finished %.1f s after", scx_state(), n,
		      now_s() - t0);
	}

	/* 5. the third column: the daemon's FIFO policy (no runqueue) */
	{
		int on;

		daemon_pid = fork();
		if (daemon_pid == 0) {
			execl("/bin/scx_cachelocal", "scx_cachelocal", "-s", "10000", "-p", "fifo", (char *)NULL);
			_exit(127);
		}
		on = wait_state("enabled", 60);
		if (on) {
			fifo_res = run_load(load_s / 3);
			fshare = nice_share(nice_cpu, 5);
			fmsg = msg_run(MSG_GROUPS, MSG_LOOPS, SHAPE_LIMIT_S);
			fwake = wake_run(WAKE_M, WAKE_T, WAKE_S, SHAPE_LIMIT_S);
			have_fifo = strcmp(scx_state(), "enabled") == 0;
		}
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
		wait_state("disabled", 30);
		printf("scx_check: fifo policy: %s\n", have_fifo ? "ran" : "did not run");
	}

	/* 6. the daemon built with the "before" layouts and head detach: layout
	 * choices, so the same behaviour: it loads, runs the load, gives the
	 * weights' nice share, is not ejected */
	{
		static const char *const variant[] = { "rq_scattered", "se_inline", "detach_head" };

		for (unsigned v = 0; v < sizeof(variant) / sizeof(variant[0]); v++) {
			char path[96], name[64];
			struct load_result vr = { 0 };
			double vshare = 0, vt0;
			int on, still = 0;

			snprintf(path, sizeof(path), "/bin/scx_cachelocal_%s", variant[v]);
			snprintf(name, sizeof(name), "variant-%s", variant[v]);
			for (char *c = name; *c; c++)
				if (*c == '_')
					*c = '-';
			daemon_pid = fork();
			if (daemon_pid == 0) {
				execl(path, path, "-s", "10000", (char *)NULL);
				perror(path);
				_exit(127);
			}
			on = wait_state("enabled", 60);
			read_str("/sys/kernel/sched_ext/root/ops", ops, sizeof(ops));
			on = on && strcmp(ops, "cachelocal") == 0;
			vt0 = now_s();
			if (on) {
				vr = run_load(VARIANT_LOAD_S);
				vshare = nice_share(nice_cpu, VARIANT_NICE_S);
				still = strcmp(scx_state(), "enabled") == 0 && daemon_alive();
			}
			check(on && vr.all_progressed && still && vshare > 0.60 && vshare < 0.90, name,
			      "%s: loads %s, %d workers all progressed in %.0f s: %s, nice 0 vs 5 share %.3f "
			      "(bound 0.60..0.90), still enabled with the daemon alive after %.0f s: %s",
			      path, on ? "yes" : "no", ncpu + 4, VARIANT_LOAD_S, vr.all_progressed ? "yes" : "no",
			      vshare, now_s() - vt0, still ? "yes" : "no");
			if (daemon_pid > 0) {
				kill(daemon_pid, SIGTERM);
				waitpid(daemon_pid, NULL, 0);
			}
			daemon_pid = 0;
			wait_state("disabled", 30);
		}
	}

	printf("scx TABLE | %-28s | %12s | %12s | %12s |\n", "", "kernel", "cachelocal", "fifo");
	table_row("migrations/s (all workers)", 1, kern.mig_per_s, ours.mig_per_s, fifo_res.mig_per_s, have_fifo);
	table_row("cross-LLC migrations/s", 1, kern.cross_llc_per_s, ours.cross_llc_per_s, fifo_res.cross_llc_per_s,
		  have_fifo);
	table_row("nice 0 share (vs nice 5)", 3, kshare, oshare, fshare, have_fifo);
	table_row("nice 5 share", 3, 1 - kshare, 1 - oshare, 1 - fshare, have_fifo);
	table_row("cpu.weight 300 vs 100 share", 3, kcg, ocg, 0, 0);
	table_row("hackbench seconds", 1, kmsg.secs, omsg.secs, fmsg.secs, have_fifo);
	table_row("hackbench migrations/s", 1, kmsg.mig_per_s, omsg.mig_per_s, fmsg.mig_per_s, have_fifo);
	table_row("hackbench cross-LLC/s", 1, kmsg.cross_llc_per_s, omsg.cross_llc_per_s, fmsg.cross_llc_per_s,
		  have_fifo);
	table_row("schbench rounds (5 s)", 0, (double)kwake.rounds, (double)owake.rounds, (double)fwake.rounds,
		  have_fifo);
	table_row("schbench migrations/s", 1, kwake.mig_per_s, owake.mig_per_s, fwake.mig_per_s, have_fifo);
	table_row("schbench cross-LLC/s", 1, kwake.cross_llc_per_s, owake.cross_llc_per_s, fwake.cross_llc_per_s,
		  have_fifo);
	table_row("schbench p50 wake us (< 2^k)", 0, kwake.p50_us, owake.p50_us, fwake.p50_us, have_fifo);
	table_row("schbench p99 wake us (< 2^k)", 0, kwake.p99_us, owake.p99_us, fwake.p99_us, have_fifo);
	table_row("load seconds", 0, load_s / 3, load_s, load_s / 3, have_fifo);
	table_row("hackbench x5 seconds, quiet", 1, kmsg5.secs, omsg5.secs, 0, 0);
	printf("scx TABLE | %-28s | %12s | %12s | %12s |\n", "under pressure: RT hog", "", "", "");
	table_row("  hackbench x5 seconds", 1, kp_rt.msg.secs, op_rt.msg.secs, 0, 0);
	table_row("  schbench rounds (5 s)", 0, (double)kp_rt.wake.rounds, (double)op_rt.wake.rounds, 0, 0);
	table_row("  schbench p99 wake us", 0, kp_rt.wake.p99_us, op_rt.wake.p99_us, 0, 0);
	table_row("  1 s after: p99 wake us", 0, kp_rt.after.p99_us, op_rt.after.p99_us, 0, 0);
	printf("scx TABLE | %-28s | %12s | %12s | %12s |\n", "under pressure: host CPU hog", "", "", "");
	table_row("  hackbench x5 seconds", 1, kp_host.msg.secs, op_host.msg.secs, 0, 0);
	table_row("  schbench rounds (5 s)", 0, (double)kp_host.wake.rounds, (double)op_host.wake.rounds, 0, 0);
	table_row("  schbench p99 wake us", 0, kp_host.wake.p99_us, op_host.wake.p99_us, 0, 0);
	table_row("  1 s after: p99 wake us", 0, kp_host.after.p99_us, op_host.after.p99_us, 0, 0);
	printf("scx_check: %d failed\n", failed);
	return failed ? 1 : 0;
}
