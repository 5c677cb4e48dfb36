/* SPDX-License-Identifier: MIT */
/*
 * sched_ext/scx_check.c - the guest side of make check-scx: runs in the
 * emulated 7.3 machine (tests/guest/scx.plan), as root, with
 * /bin/scx_cachelocal beside it.
 *
 *   1. the load below under the kernel's own scheduler (the table's first
 *      column), and the nice test;
 *   2. starts the daemon; checks that sched_ext is enabled with ops
 *      "cachelocal";
 *   3. the load again, for LOAD_S seconds (the table's second column), the
 *      nice test, the affinity test, a CPU offlined and onlined mid-run;
 *      the daemon stopped (SIGSTOP) for 8 s mid-load: the tasks it holds
 *      reach the global DSQ after 5 s and keep running;
 *      after each, that the scheduler is still enabled (no watchdog or
 *      runtime-error ejection) and the daemon alive;
 *   4. SIGKILL of the daemon while a load runs: sched_ext goes disabled and
 *      every worker finishes under the fair class;
 *   5. the daemon again with -p fifo (a global FIFO, no runqueue): the
 *      load and the nice test for the table's third column.
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
#include <sys/resource.h>
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

static pid_t daemon_pid;

static int daemon_alive(void)
{
	int st;

	return daemon_pid > 0 && waitpid(daemon_pid, &st, WNOHANG) == 0;
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
	double kshare, oshare, fshare = 0, t_enabled;
	int have_fifo = 0;
	char ops[128];
	int nice_cpu, pin_cpu, hp_cpu;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cl_topology_load(&topo, NULL) != 0) {
		perror("topology");
		return 2;
	}
	ncpu = (int)topo.nr_online;
	nice_cpu = ncpu > 3 ? 3 : 0;
	pin_cpu = ncpu > 2 ? 2 : 0;
	hp_cpu = ncpu > 5 ? 5 : ncpu - 1;
	printf("scx_check: %d CPUs, %u LLCs, %u nodes; load %.0f s; sched_ext state %s\n", ncpu, topo.nr_llcs,
	       topo.nr_nodes, load_s, scx_state());

	/* 1. the kernel's scheduler */
	kern = run_load(load_s / 3);
	kshare = nice_share(nice_cpu, 5);
	printf("scx_check: kernel: %.1f migrations/s, %ld cross-LLC, nice-0 share %.3f\n", kern.mig_per_s,
	       kern.cross_llc, kshare);

	/* 2. load the scheduler */
	daemon_pid = fork();
	if (daemon_pid == 0) {
		execl("/bin/scx_cachelocal", "scx_cachelocal", "-s", "10000", "-v", (char *)NULL);
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
			have_fifo = strcmp(scx_state(), "enabled") == 0;
		}
		kill(daemon_pid, SIGTERM);
		waitpid(daemon_pid, NULL, 0);
		wait_state("disabled", 30);
		printf("scx_check: fifo policy: %s\n", have_fifo ? "ran" : "did not run");
	}

	printf("scx TABLE | %-28s | %12s | %12s | %12s |\n", "", "kernel", "cachelocal", "fifo");
	printf("scx TABLE | %-28s | %12.1f | %12.1f | %12.1f |\n", "migrations/s (all workers)", kern.mig_per_s,
	       ours.mig_per_s, have_fifo ? fifo_res.mig_per_s : -1);
	printf("scx TABLE | %-28s | %12.1f | %12.1f | %12.1f |\n", "cross-LLC migrations/s", kern.cross_llc_per_s,
	       ours.cross_llc_per_s, have_fifo ? fifo_res.cross_llc_per_s : -1);
	printf("scx TABLE | %-28s | %12.3f | %12.3f | %12.3f |\n", "nice 0 share (vs nice 5)", kshare, oshare,
	       have_fifo ? fshare : -1);
	printf("scx TABLE | %-28s | %12.3f | %12.3f | %12.3f |\n", "nice 5 share", 1 - kshare, 1 - oshare,
	       have_fifo ? 1 - fshare : -1);
	printf("scx TABLE | %-28s | %12.0f | %12.0f | %12.0f |\n", "load seconds", load_s / 3, load_s,
	       load_s / 3);
	printf("scx_check: %d failed\n", failed);
	return failed ? 1 : 0;
}
