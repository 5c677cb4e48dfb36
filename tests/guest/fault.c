/* SPDX-License-Identifier: MIT */
/*
 * tests/guest/fault.c - run a test program in an emulated machine while the
 * machine misbehaves as real ones do (make check-smp, check-kernels).
 *
 *   fault [--hotplug] [--cpuset-shrink] [--deny-rseq] [--period-ms N] PROGRAM [ARG ...]
 *
 * --hotplug        for as long as PROGRAM runs, every period (default 5 ms)
 *                  take a random CPU other than CPU 0 offline, or bring an
 *                  offline one back (at most a quarter of the CPUs offline
 *                  at once); every CPU is brought back at the end.
 * --cpuset-shrink  PROGRAM runs in a cgroup of its own (cgroup2, cpuset
 *                  controller); its allowed CPUs drop to the lower half of
 *                  the CPUs and come back, alternately, every 40 periods.
 * --deny-rseq      rseq(2) and membarrier(2) fail with ENOSYS (a seccomp
 *                  filter: PROGRAM runs through tests/tools/norseq.c's
 *                  --membarrier, /bin/norseq beside this program), as some
 *                  sandboxes and old container profiles do: every
 *                  structure must take its fallback.
 *
 * The last line is "fault: hotplug N (offline O, online I, refused R),
 * cpuset N" and the exit status is PROGRAM's (128 + signal when it was
 * killed). A fault that cannot be set up (no hotplug file, no cpuset
 * controller, no /bin/norseq) fails the run with status 2 and a line saying
 * why: a fault that was asked for and not made would pass untested.
 *
 * Static, built with each guest's compiler; not for the host (it offlines
 * CPUs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NORSEQ "/bin/norseq"

#define CG "/sys/fs/cgroup"
#define CG_TEST CG "/cl-fault"

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), rc = 0;

	if (fd < 0)
		return -1;
	if (write(fd, s, strlen(s)) < 0)
		rc = -1;
	close(fd);
	return rc;
}

static int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

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

static int nr_possible(void)
{
	char buf[64];
	int a = 0, b = 0;

	if (read_str("/sys/devices/system/cpu/possible", buf, sizeof(buf)) != 0)
		return 1;
	if (sscanf(buf, "%d-%d", &a, &b) == 2)
		return b + 1;
	return 1;
}

static int cpu_online(int cpu)
{
	char path[96], buf[8];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	if (read_str(path, buf, sizeof(buf)) != 0)
		return -1;
	return buf[0] == '1';
}

static int cpu_set_online(int cpu, int on)
{
	char path[96];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	return write_str(path, on ? "1" : "0");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void usage(void)
{
	fprintf(stderr, "usage: fault [--hotplug] [--cpuset-shrink] [--deny-rseq] [--period-ms N] PROGRAM [ARG ...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int hotplug = 0, shrink = 0, deny = 0, i, status = 0, ncpu = nr_possible();
	long period = 5, tick = 0;
	unsigned long hp_off = 0, hp_on = 0, hp_refused = 0, shrinks = 0;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	char full[64] = "", half[64], pidbuf[32];
	pid_t pid;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--hotplug") == 0)
			hotplug = 1;
		else if (strcmp(argv[i], "--cpuset-shrink") == 0)
			shrink = 1;
		else if (strcmp(argv[i], "--deny-rseq") == 0)
			deny = 1;
		else if (strcmp(argv[i], "--period-ms") == 0 && i + 1 < argc)
			period = atol(argv[++i]);
		else
			usage();
	}
	if (i >= argc || period < 1)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (deny && access(NORSEQ, X_OK) != 0) {
		printf("fault: --deny-rseq: no " NORSEQ ": %s\n", strerror(errno));
		return 2;
	}
	if (hotplug && (ncpu < 2 || cpu_online(ncpu - 1) < 0)) {
		printf("fault: --hotplug: no /sys/devices/system/cpu/cpuN/online to write (%d CPUs)\n", ncpu);
		return 2;
	}
	if (shrink) {
		/* the cpuset controller for the children of the root, and a group */
		if (write_str(CG "/cgroup.subtree_control", "+cpuset") != 0 ||
		    (mkdir(CG_TEST, 0755) != 0 && errno != EEXIST) ||
		    read_str(CG_TEST "/cpuset.cpus.effective", full, sizeof(full)) != 0 || !full[0]) {
			printf("fault: --cpuset-shrink: no cgroup2 cpuset controller at " CG ": %s\n",
			       strerror(errno));
			return 2;
		}
		snprintf(full, sizeof(full), "0-%d", ncpu - 1);
		snprintf(half, sizeof(half), "0-%d", ncpu / 2 - 1 > 0 ? ncpu / 2 - 1 : 0);
	}
	pid = fork();
	if (pid < 0) {
		printf("fault: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		if (shrink) {
			snprintf(pidbuf, sizeof(pidbuf), "%d", (int)getpid());
			if (write_str(CG_TEST "/cgroup.procs", pidbuf) != 0) {
				printf("fault: cannot join " CG_TEST ": %s\n", strerror(errno));
				_exit(2);
			}
		}
		if (deny) {
			/* norseq --membarrier PROGRAM ARG...: argv[i - 2] and [i - 1] are ours */
			argv[i - 2] = (char *)NORSEQ;
			argv[i - 1] = (char *)"--membarrier";
			execv(NORSEQ, argv + i - 2);
		} else {
			execv(argv[i], argv + i);
		}
		printf("fault: exec %s: %s\n", deny ? NORSEQ : argv[i], strerror(errno));
		_exit(127);
	}
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			printf("fault: waitpid: %s\n", strerror(errno));
			status = 2 << 8;
			break;
		}
		sleep_ms(period);
		tick++;
		if (hotplug) {
			int cpu = 1 + (int)(rand_r(&seed) % (unsigned)(ncpu - 1)), off = 0, on;

			for (int c = 1; c < ncpu; c++)
				off += cpu_online(c) == 0;
			on = cpu_online(cpu);
			if (on == 1 && off < ncpu / 4) {
				if (cpu_set_online(cpu, 0) == 0)
					hp_off++;
				else
					hp_refused++;
			} else if (on == 0) {
				if (cpu_set_online(cpu, 1) == 0)
					hp_on++;
				else
					hp_refused++;
			}
		}
		if (shrink && tick % 40 == 0) {
			if (write_str(CG_TEST "/cpuset.cpus", (tick / 40) % 2 ? half : full) == 0)
				shrinks++;
		}
	}
	/* leave the machine whole for the next program */
	if (hotplug)
		for (int c = 1; c < ncpu; c++)
			if (cpu_online(c) == 0 && cpu_set_online(c, 1) == 0)
				hp_on++;
	if (shrink) {
		write_str(CG_TEST "/cpuset.cpus", full);
		rmdir(CG_TEST);
	}
	printf("fault: hotplug %lu (offline %lu, online %lu, refused %lu), cpuset %lu\n",
	       hp_off + hp_on, hp_off, hp_on, hp_refused, shrinks);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
