/* SPDX-License-Identifier: MIT */
/*
 * tests/aarch64/init.c - the /init of the initramfs that `make check-aarch64`
 * boots in qemu-system-aarch64: mounts /proc, /sys and /dev, runs every line
 * of /plan as a test program, reports each program's start and result on
 * the console between markers the host side reads (scripts/check-aarch64.sh),
 * then powers the machine off.
 *
 * /plan, one program a line:  NAME TIMEOUT_S [VAR=VALUE ...] -- PATH [ARG ...]
 * Console lines written here (everything else is the programs' output):
 *   @@CLA64 START NAME
 *   @@CLA64 END NAME rc=N | signal=N | timeout
 *   @@CLA64 TIME NAME SECONDS        (wall time of the run, in the guest)
 *   @@CLA64 DONE
 * A static binary, built with the cross compiler like the tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

static void console(void)
{
	int fd;

	mkdir("/dev", 0755);
	if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL) != 0 && errno != EBUSY)
		return;
	fd = open("/dev/console", O_RDWR);
	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run one plan line (modified in place). */
static void run_line(char *line)
{
	char *tok[MAX_ARGS + 1], *env[MAX_ARGS + 1], *argv[MAX_ARGS + 1], *save = NULL;
	int n = 0, ne = 0, na = 0, i, status = 0, dashes = 0;
	const char *name;
	double timeout, deadline, t0;
	pid_t pid, w;

	for (char *t = strtok_r(line, " \t\n", &save); t && n < MAX_ARGS;
	     t = strtok_r(NULL, " \t\n", &save))
		tok[n++] = t;
	if (n < 4 || tok[0][0] == '#')
		return;
	name = tok[0];
	timeout = atof(tok[1]);
	env[ne++] = "PATH=/bin";
	env[ne++] = "HOME=/tmp";
	for (i = 2; i < n; i++) {
		if (!dashes && strcmp(tok[i], "--") == 0)
			dashes = 1;
		else if (!dashes)
			env[ne++] = tok[i];
		else
			argv[na++] = tok[i];
	}
	env[ne] = NULL;
	argv[na] = NULL;
	if (na == 0)
		return;
	printf("@@CLA64 START %s\n", name);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		execve(argv[0], argv, env);
		printf("init: execve %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		printf("@@CLA64 END %s rc=126\n", name);
		return;
	}
	t0 = now_s();
	deadline = t0 + timeout;
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (now_s() > deadline) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("@@CLA64 END %s timeout\n@@CLA64 TIME %s %.1f\n", name, name, now_s() - t0);
			fflush(stdout);
			return;
		}
		usleep(20000);
	}
	/* reap what the program left behind (its own children) */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (WIFEXITED(status))
		printf("@@CLA64 END %s rc=%d\n", name, WEXITSTATUS(status));
	else
		printf("@@CLA64 END %s signal=%d\n", name, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	printf("@@CLA64 TIME %s %.1f\n", name, now_s() - t0);
	fflush(stdout);
}

int main(void)
{
	char line[4096];
	FILE *plan;

	console();
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	mkdir("/tmp", 01777);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	plan = fopen("/plan", "r");
	if (!plan) {
		printf("init: no /plan: %s\n", strerror(errno));
	} else {
		while (fgets(line, sizeof(line), plan))
			run_line(line);
		fclose(plan);
	}
	printf("@@CLA64 DONE\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
