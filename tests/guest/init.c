/* SPDX-License-Identifier: MIT */
/*
 * tests/guest/init.c - the /init of the initramfs of every emulated machine
 * the project boots (scripts/guest.sh: make check-aarch64, check-smp,
 * check-kernels): mounts /proc, /sys, /dev, /dev/shm, /tmp and the cgroup2
 * hierarchy, brings the loopback interface up (the runtime's I/O tests
 * connect over it; the machines have no other network), allows 65,536
 * open files, says what machine it is, runs every line of /plan as a test
 * program, reports each program's start and result on the console between
 * markers the host side reads, then powers the machine off.
 *
 * /plan, one program a line:  NAME TIMEOUT_S [VAR=VALUE ...] -- PATH [ARG ...]
 * Console lines written here (everything else is the programs' output):
 *   @@CLG GUEST cpus=N llcs=L nodes=M smt=S kernel=RELEASE mm_cid=on|off
 *               guard=on|off io_uring=on|off
 *   @@CLG START NAME
 *   @@CLG END NAME rc=N | signal=N | timeout
 *   @@CLG TIME NAME SECONDS          (wall time of the run, in the guest)
 *   @@CLG DONE
 * The GUEST line is read from sysfs: the CPUs possible, the distinct
 * shared_cpu_list of each CPU's last cache level (the LLCs), the node
 * directories, the size of CPU 0's thread_siblings_list; mm_cid is on when
 * the kernel's rseq feature size (AT_RSEQ_FEATURE_SIZE) covers the mm_cid
 * field (offset 24, 4 bytes: kernels from 6.3); guard is on when
 * madvise(MADV_GUARD_INSTALL) takes a page (6.13), io_uring when
 * io_uring_setup() gives a ring (not disabled by kernel.io_uring_disabled).
 * A static binary, built with each guest's compiler like the tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <net/if.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
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

/* Read one line of a sysfs file into buf (newline dropped); 0 on success. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* Number of CPUs in a cpulist ("0-3,8,10-11"). */
static int list_count(const char *list)
{
	int n = 0, a, b, used;

	while (*list) {
		if (sscanf(list, "%d%n", &a, &used) != 1)
			break;
		list += used;
		b = a;
		if (*list == '-' && sscanf(list + 1, "%d%n", &b, &used) == 1)
			list += 1 + used;
		n += b - a + 1;
		if (*list == ',')
			list++;
		else
			break;
	}
	return n;
}

#define MAX_LLCS 256

/* The kernel's guard markers: madvise(MADV_GUARD_INSTALL) on a page. */
static int have_guard_markers(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (p == MAP_FAILED)
		return 0;
	ok = madvise(p, (size_t)pg, 102 /* MADV_GUARD_INSTALL */) == 0;
	munmap(p, (size_t)pg);
	return ok;
}

/* io_uring: a ring of one entry (the parameters are 120 bytes, zeroed). */
static int have_io_uring(void)
{
	unsigned char params[120] = { 0 };
	long fd = syscall(425 /* __NR_io_uring_setup, the same on x86_64 and aarch64 */, 1, params);

	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

/* The @@CLG GUEST line (see the top of this file). */
static void guest_line(void)
{
	static char llc[MAX_LLCS][128];
	char path[128], buf[128], last[128];
	int cpus, nllc = 0, nodes = 0, smt = 1;
	struct utsname u;
	DIR *d;
	struct dirent *e;

	if (read_line("/sys/devices/system/cpu/possible", buf, sizeof(buf)) != 0)
		strcpy(buf, "0");
	cpus = list_count(buf);
	for (int c = 0; c < cpus; c++) {
		last[0] = 0;
		for (int i = 0; i < 8; i++) {
			snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", c, i);
			if (read_line(path, buf, sizeof(buf)) == 0)
				strcpy(last, buf);
		}
		if (!last[0])
			continue;
		int seen = 0;
		for (int i = 0; i < nllc && !seen; i++)
			seen = strcmp(llc[i], last) == 0;
		if (!seen && nllc < MAX_LLCS)
			strcpy(llc[nllc++], last);
	}
	d = opendir("/sys/devices/system/node");
	while (d && (e = readdir(d)))
		nodes += strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9';
	if (d)
		closedir(d);
	if (read_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", buf, sizeof(buf)) == 0)
		smt = list_count(buf);
	if (uname(&u) != 0)
		strcpy(u.release, "unknown");
	printf("@@CLG GUEST cpus=%d llcs=%d nodes=%d smt=%d kernel=%s mm_cid=%s guard=%s io_uring=%s\n",
	       cpus, nllc, nodes ? nodes : 1, smt, u.release, getauxval(27) >= 28 ? "on" : "off",
	       have_guard_markers() ? "on" : "off", have_io_uring() ? "on" : "off");
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
	printf("@@CLG START %s\n", name);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		execve(argv[0], argv, env);
		printf("init: execve %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		printf("@@CLG END %s rc=126\n", name);
		return;
	}
	t0 = now_s();
	deadline = t0 + timeout;
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (now_s() > deadline) {
			/* SIGTERM first: a unit-test runner (tests/unit/crshim.h)
			 * then names the test that hangs and its threads' state */
			kill(pid, SIGTERM);
			for (i = 0; i < 250 && (w = waitpid(pid, &status, WNOHANG)) == 0; i++)
				usleep(20000);
			kill(-pid, SIGKILL); /* what it left in its group */
			if (w != pid) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
			}
			printf("@@CLG END %s timeout\n@@CLG TIME %s %.1f\n", name, name, now_s() - t0);
			fflush(stdout);
			return;
		}
		usleep(20000);
	}
	/* reap what the program left behind (its own children) */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	if (WIFEXITED(status))
		printf("@@CLG END %s rc=%d\n", name, WEXITSTATUS(status));
	else
		printf("@@CLG END %s signal=%d\n", name, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	printf("@@CLG TIME %s %.1f\n", name, now_s() - t0);
	fflush(stdout);
}

/* `lo` up: a fresh kernel leaves it down, and 127.0.0.1 is then unreachable. */
static void loopback_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0 ||
	    (ifr.ifr_flags |= IFF_UP | IFF_RUNNING, ioctl(fd, SIOCSIFFLAGS, &ifr) != 0))
		printf("init: loopback not up: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* 65,536 open files for the programs: the kernel gives init 1,024 (4,096
 * hard), and the runtime's echo test needs 10,064 (else it skips). */
static void files_limit(void)
{
	struct rlimit rl = { 65536, 65536 };

	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		printf("init: RLIMIT_NOFILE 65536: %s\n", strerror(errno));
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
	/* POSIX shared memory (Criterion, shm_open) and the cgroup2 hierarchy
	   (tests/guest/fault.c shrinks a test's cpuset through it) */
	mkdir("/dev/shm", 01777);
	mount("tmpfs", "/dev/shm", "tmpfs", 0, NULL);
	mkdir("/sys/fs/cgroup", 0755);
	mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	loopback_up();
	files_limit();
	guest_line();
	plan = fopen("/plan", "r");
	if (!plan) {
		printf("init: no /plan: %s\n", strerror(errno));
	} else {
		while (fgets(line, sizeof(line), plan))
			run_line(line);
		fclose(plan);
	}
	printf("@@CLG DONE\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
