/* SPDX-License-Identifier: MIT */
/*
 * bench/rpc/rpc.c - an RPC server on the cachelocal M:N runtime beside Go
 * and a hand-written epoll loop, under an open-loop load generator.
 *
 * Servers (programs next to this binary, rpc_proto.h's protocol, all three
 * running for the whole benchmark, measured in turn): rpc_cachelocal (one
 * task per connection, the runtime's WORKERS workers), rpc_go (goroutine
 * per connection, GOMAXPROCS = WORKERS) and rpc_epoll (one thread,
 * edge-triggered epoll). A missing server is skipped with a note (the
 * cachelocal one is built only where the runtime has its I/O calls).
 *
 * Placement: the servers get the first --server-cpus allowed CPUs (default
 * 1: WORKERS = 1, the epoll loop's one thread against one worker and
 * GOMAXPROCS=1); the load generator runs on the others, one pinned thread
 * per CPU (at most --client-threads), each with its share of the
 * connections. With a single allowed CPU both share it (placement
 * "shared").
 *
 * Per reply size (64 B and 4 KiB; each request is 64 B):
 *   1. max throughput: a closed loop, every connection keeps --depth
 *      requests in flight for --duration-ms; replies per second over the
 *      run after its first tenth. Median of --runs runs per server, the
 *      servers interleaved run by run.
 *   2. latency at 25/50/75/90% of the slowest server's max throughput: an
 *      open loop. Requests are scheduled in advance at the offered rate
 *      (evenly spaced, or --poisson gaps), round robin over the
 *      connections, and sent at their time whether or not earlier replies
 *      came back (a connection pipelines); latency = reply received -
 *      scheduled send time, so a server that stalls is charged for every
 *      request that waited behind the stall (no coordinated omission).
 *      Requests scheduled in the run's first tenth are a warm-up, not
 *      counted; a reply still missing --drain-ms after the run counts
 *      with its age then. p50/p99/p99.9 per run, median over the runs.
 *
 * Cost per request, at 25/50/75% (the open-loop runs): the server's CPU
 * time (all its threads, /proc/PID/task/TID/schedstat, from just before
 * the run's first request to after its last reply or the drain) over the
 * requests the run sent, split into user and system time by the share of
 * each in /proc/PID/stat's utime and stime over the same span; and its
 * system calls, counted by `perf stat -e raw_syscalls:sys_enter -p PID`
 * over the same span (the kernel's count of every entry, all threads,
 * threads started later included), also over the requests sent. Both are
 * summed over the runs of a level, then divided. Without perf, or where
 * the tracepoint cannot be opened, system calls are not counted (null).
 * io_uring work done by the kernel's own threads is CPU time of theirs,
 * not the server's: it is named with the result, not hidden in it.
 *
 * --json: the usual result lines; one {"kind":"rpc",...} line per server
 * and reply size (max) and per server, reply size and load (latency), read
 * by scripts/bench_report.py for its RPC section; and, when the cachelocal
 * server ran, {"kind":"peer","structure":"runtime-rpc",...} lines against
 * each other server (max throughput, p99 at 75% load). Exit 77 when no
 * server could be started.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "rtbench.h"
#include "peers.h"
#include "rpc_proto.h"

#define MAX_CONNS 4096
#define MAX_THREADS 16
#define RING 8192 /* requests in flight per connection */
#define NLEVELS 4
#define NREPLY 2

static const int level_pct[NLEVELS] = { 25, 50, 75, 90 };
static const unsigned int reply_size[NREPLY] = { 64, 4096 };

enum { S_CACHELOCAL, S_GO, S_EPOLL, S_NR };

struct server {
	const char *name; /* short name: the report's column */
	const char *exe;  /* program next to this binary */
	const char *pkg;  /* what to install / build when it is missing */
	char path[4096];
	char desc[160];   /* its start-up line after the port */
	pid_t pid;
	int port;
	int ok;
	int fds[MAX_CONNS];
	double max[NREPLY][BENCH_MAX_RUNS];
	double lat[NREPLY][NLEVELS][3][BENCH_MAX_RUNS]; /* p50, p99, p99.9 in us */
	double got[NREPLY][NLEVELS][BENCH_MAX_RUNS];    /* achieved rate / offered */
	double cpu_srv[NREPLY][BENCH_MAX_RUNS]; /* closed loop: its CPU share (of --server-cpus) ... */
	double cpu_cli[NREPLY][BENCH_MAX_RUNS]; /* ... and the load generator's (of its threads) */
	unsigned long long ticks_user[NREPLY], ticks_sys[NREPLY]; /* closed loop, all runs */
	struct cost {                           /* open loop, summed over a level's runs */
		double cpu_ns, reqs, syscalls;  /* syscalls < 0: not counted */
		unsigned long long tu, ts;      /* utime, stime ticks */
	} cost[NREPLY][NLEVELS];
	long lost[NREPLY][NLEVELS];
};

static struct server servers[S_NR] = {
	{ .name = "cachelocal", .exe = "rpc_cachelocal", .pkg = "runtime I/O not built" },
	{ .name = "go", .exe = "rpc_go", .pkg = "golang-go not installed" },
	{ .name = "epoll", .exe = "rpc_epoll", .pkg = "rpc_epoll not built" },
};

/* ---------------------------------------------------------------- options */

static struct opts {
	int conns;
	int duration_ms;
	int drain_ms;
	int depth;
	int server_cpus;
	int client_threads;
	int poisson;
	int reply_only; /* -1: both sizes */
	int only;       /* -1: every server */
} o = { -1, -1, 2000, 1, 1, 4, 0, -1, -1 };

static cpu_set_t server_set, client_set;
static int client_cpu[MAX_THREADS], nr_client;
static const char *placement = "pinned";
static int spin_us = 50; /* open loop: busy-poll this close to a send (0: shared CPU) */

/* ---------------------------------------------------------------- servers */

/* Start @s on the server CPUs; read its "port N DESC" line. 0 or -1. */
static int server_start(struct server *s)
{
	char workers[16], line[256];
	char *argv[] = { s->path, workers, NULL };
	int fd[2];
	size_t len = 0;

	snprintf(workers, sizeof(workers), "%d", o.server_cpus);
	if (access(s->path, X_OK) || pipe2(fd, O_CLOEXEC))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		sched_setaffinity(0, sizeof(server_set), &server_set);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the driver */
		setenv("GOMAXPROCS", workers, 1);
		dup2(fd[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	while (len < sizeof(line) - 1) {
		struct pollfd p = { fd[0], POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 10000) <= 0)
			break;
		n = read(fd[0], line + len, 1);
		if (n <= 0 || line[len] == '\n')
			break;
		len++;
	}
	line[len] = 0;
	close(fd[0]); /* a server writes nothing more */
	if (sscanf(line, "port %d", &s->port) != 1 || s->port <= 0) {
		fprintf(stderr, "rpc: %s did not start (its line: '%s')\n", s->exe, line);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		return -1;
	}
	{
		const char *d = strchr(line + 5, ' '); /* after "port N " */

		snprintf(s->desc, sizeof(s->desc), "%s", d && d[1] ? d + 1 : s->name);
	}
	return 0;
}

static int server_connect(struct server *s, int n)
{
	struct sockaddr_in a;
	int one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)s->port);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("rpc: connect");
			return -1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		s->fds[i] = fd;
	}
	return 0;
}

/* Still running? (a server that died fails the benchmark) */
static int server_alive(struct server *s)
{
	return waitpid(s->pid, NULL, WNOHANG) == 0;
}

static void server_stop(struct server *s)
{
	for (int i = 0; i < o.conns; i++)
		close(s->fds[i]);
	kill(s->pid, SIGTERM);
	waitpid(s->pid, NULL, 0);
}

/* ---------------------------------------------------------------- generator */

struct conn {
	int fd;
	uint32_t head, tail;   /* ring[head..tail): requests queued or in flight */
	uint32_t unsent;       /* requests at the ring's tail not yet fully written */
	uint32_t tx_off;       /* bytes of the first unsent request written */
	uint32_t rx_off;       /* bytes of the reply being received */
	uint64_t seq_tx, seq_rx;
	unsigned char hdr[RPC_HDR_BYTES];
	uint64_t ring[RING];   /* scheduled send times */
};

struct gen {
	/* in */
	int thread, nthreads, open;
	struct conn *c;
	int nconn;
	uint32_t reply;
	double rate;           /* this thread's requests per second (open) */
	uint64_t *start;       /* published by the main thread */
	uint64_t dur_ns, warm_ns, drain_ns;
	unsigned int seed;
	/* out */
	uint64_t *lat;         /* latencies of the counted requests (open) */
	size_t nlat, cap;
	uint64_t done;         /* replies to requests scheduled after the warm-up */
	uint64_t lost;         /* counted requests without a reply at the drain's end */
	uint64_t cpu_ns;       /* its CPU time from the start to its last reply ... */
	uint64_t cpu_wall_ns;  /* ... and the wall time of that */
	int err;               /* ERR_* (the first one seen) */
};

/* Why a generator thread stopped early. ERR_DRAIN alone is not a failure:
 * the replies still missing are counted lost and the connections reopened. */
enum { ERR_NONE, ERR_IO, ERR_REPLY, ERR_DRAIN };
static const char *const err_name[] = { "", "a connection broke", "a wrong reply",
					"replies still missing after the drain" };

static pthread_barrier_t gen_barrier;

static void lat_add(struct gen *g, uint64_t ns)
{
	if (g->nlat < g->cap)
		g->lat[g->nlat++] = ns;
}

/* Write the unsent requests of @c until EAGAIN. 0, or -1 on an error. */
static int conn_flush(struct gen *g, struct conn *c)
{
	unsigned char buf[RPC_REQ_BYTES * 64];

	while (c->unsent) {
		uint32_t k = c->unsent < 64 ? c->unsent : 64;
		size_t len = (size_t)k * RPC_REQ_BYTES - c->tx_off, total;
		ssize_t n;

		for (uint32_t i = 0; i < k; i++)
			rpc_req_fill(buf + (size_t)i * RPC_REQ_BYTES, c->seq_tx + i, g->reply);
		n = write(c->fd, buf + c->tx_off, len);
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		total = c->tx_off + (size_t)n;
		c->seq_tx += total / RPC_REQ_BYTES;
		c->unsent -= (uint32_t)(total / RPC_REQ_BYTES);
		c->tx_off = (uint32_t)(total % RPC_REQ_BYTES);
		if ((size_t)n < len)
			return 0; /* the socket is full: EPOLLOUT resumes */
	}
	return 0;
}

/* Queue one request on @c scheduled at @t. 0, or -1 when its ring is full. */
static int conn_queue(struct conn *c, uint64_t t)
{
	if (c->tail - c->head == RING)
		return -1;
	c->ring[c->tail++ % RING] = t;
	c->unsent++;
	return 0;
}

/*
 * One reply completed on @c at @now. Open loop: counted when its request
 * was scheduled after the warm-up, its latency from that scheduled time.
 * Closed loop: counted when it arrived between the warm-up and the end.
 */
static void reply_done(struct gen *g, struct conn *c, uint64_t now)
{
	uint64_t t = c->ring[c->head++ % RING], seq, start = *g->start;

	memcpy(&seq, c->hdr + 8, sizeof(seq));
	if (seq != c->seq_rx++)
		g->err = ERR_REPLY; /* a reply out of order or for another request */
	if (g->open) {
		if (t >= start + g->warm_ns) {
			g->done++;
			lat_add(g, now - t);
		}
	} else if (now >= start + g->warm_ns && now <= start + g->dur_ns) {
		g->done++;
	}
}

/* Read what @c has; count the replies. @closed_until: closed loop, the
 * time until which each reply is answered with the next request. A read
 * that does not fill the buffer emptied the socket, so no read is spent
 * on its EAGAIN: data that comes later is a new edge of the
 * edge-triggered epoll set. */
static int conn_read(struct gen *g, struct conn *c, uint64_t closed_until)
{
	unsigned char buf[65536];

	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		uint64_t now;

		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		now = bench_now_ns();
		for (ssize_t i = 0; i < n;) {
			size_t take = g->reply - c->rx_off;

			if (take > (size_t)(n - i))
				take = (size_t)(n - i);
			if (c->rx_off < RPC_HDR_BYTES) {
				size_t h = RPC_HDR_BYTES - c->rx_off < take ? RPC_HDR_BYTES - c->rx_off : take;

				memcpy(c->hdr + c->rx_off, buf + i, h);
			}
			c->rx_off += (uint32_t)take;
			i += (ssize_t)take;
			if (c->rx_off == g->reply) {
				c->rx_off = 0;
				if (c->head == c->tail) {
					g->err = ERR_REPLY; /* a reply nobody asked for */
					return -1;
				}
				reply_done(g, c, now);
				if (!g->open && now < closed_until && conn_queue(c, now) == 0 &&
				    conn_flush(g, c))
					return -1;
			}
		}
		if ((size_t)n < sizeof(buf))
			return 0;
	}
}

static uint64_t in_flight(const struct gen *g)
{
	uint64_t n = 0;

	for (int i = 0; i < g->nconn; i++)
		n += g->c[i].tail - g->c[i].head;
	return n;
}

/* The gap to the next scheduled request (ns): evenly spaced or exponential. */
static uint64_t next_gap(struct gen *g)
{
	double mean = 1e9 / g->rate;

	if (!o.poisson)
		return 0; /* evenly spaced: computed from the index, no drift */
	return (uint64_t)(-log(1.0 - (double)rand_r(&g->seed) / ((double)RAND_MAX + 1)) * mean);
}

static void *gen_main(void *p)
{
	struct gen *g = (struct gen *)p;
	struct epoll_event ev, evs[256];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t start, end, hard, next, k = 0, cpu_at;
	double period = 0; /* ns between this thread's requests (evenly spaced) */
	int rr = 0;

	bench_pin(client_cpu[g->thread % nr_client]);
	prctl(PR_SET_TIMERSLACK, 1UL);
	for (int i = 0; i < g->nconn && ep >= 0; i++) {
		ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
		ev.data.ptr = &g->c[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, g->c[i].fd, &ev))
			g->err = g->err ? g->err : ERR_IO;
	}
	if (ep < 0)
		g->err = g->err ? g->err : ERR_IO;
	pthread_barrier_wait(&gen_barrier);
	while (!(start = __atomic_load_n(g->start, __ATOMIC_ACQUIRE)))
		;
	end = start + g->dur_ns;
	hard = end + g->drain_ns;
	if (g->open) {
		period = 1e9 / g->rate;
		/* threads interleave their evenly spaced schedules */
		next = start + (uint64_t)((double)g->thread / g->nthreads * period);
		if (o.poisson)
			next = start + next_gap(g);
	} else {
		next = UINT64_MAX;
		for (int i = 0; i < g->nconn; i++)
			for (int d = 0; d < o.depth; d++)
				conn_queue(&g->c[i], start);
		for (int i = 0; i < g->nconn; i++)
			if (conn_flush(g, &g->c[i]))
				g->err = g->err ? g->err : ERR_IO;
	}
	cpu_at = bench_thread_cpu_ns();
	while (!g->err) {
		uint64_t now = bench_now_ns();
		int n, timeout_ns;

		while (next <= now && next < end) {
			struct conn *c = &g->c[rr++ % g->nconn];

			if (conn_queue(c, next)) { /* the server is hopelessly behind */
				if (next >= start + g->warm_ns) {
					lat_add(g, hard - next);
					g->lost++;
				}
			} else if (conn_flush(g, c)) {
				g->err = g->err ? g->err : ERR_IO;
			}
			k++;
			next = o.poisson ? next + next_gap(g) :
				start + (uint64_t)(((double)k + (double)g->thread / g->nthreads) * period);
		}
		if (now >= end && (now >= hard || in_flight(g) == 0))
			break;
		timeout_ns = 0;
		if (next > now && next - now > (uint64_t)spin_us * 1000 && next < end)
			timeout_ns = (int)((next - now - (uint64_t)spin_us * 1000 < 1000000 ?
					    next - now - (uint64_t)spin_us * 1000 : 1000000) / 1000 * 1000);
		else if (next >= end && now < end)
			timeout_ns = (int)((end - now) < 1000000 ? (end - now) : 1000000);
		else if (now >= end)
			timeout_ns = 1000000;
		if (timeout_ns > 0) {
			struct timespec ts = { 0, timeout_ns };

			n = epoll_pwait2(ep, evs, 256, &ts, NULL);
			if (n < 0 && errno == ENOSYS) /* before Linux 5.11: a millisecond timer */
				n = epoll_wait(ep, evs, 256, timeout_ns >= 1000000 ? timeout_ns / 1000000 : 0);
		} else {
			n = epoll_wait(ep, evs, 256, 0);
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = (struct conn *)evs[i].data.ptr;

			if ((evs[i].events & EPOLLOUT) && conn_flush(g, c))
				g->err = g->err ? g->err : ERR_IO;
			if ((evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) &&
			    conn_read(g, c, g->open ? 0 : end))
				g->err = g->err ? g->err : ERR_IO;
		}
	}
	/* counted requests still unanswered: charged with their age at the drain's end */
	for (int i = 0; i < g->nconn && g->open; i++) {
		struct conn *c = &g->c[i];

		for (uint32_t j = c->head; j != c->tail; j++)
			if (c->ring[j % RING] >= start + g->warm_ns) {
				lat_add(g, hard - c->ring[j % RING]);
				g->lost++;
			}
	}
	g->cpu_ns = bench_thread_cpu_ns() - cpu_at;
	g->cpu_wall_ns = bench_now_ns() - start;
	if (!g->err && in_flight(g))
		g->err = ERR_DRAIN; /* the connections are out of step: reopened */
	if (ep >= 0)
		close(ep);
	return NULL;
}

/* ---------------------------------------------------------------- runs */

/* CPU time of every thread of process @pid, in ns (the first field of each
 * /proc/PID/task/TID/schedstat); 0 when it cannot be read. */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char path[64], line[128];
	uint64_t sum = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		unsigned long long ns;
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/schedstat", (int)pid, d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && sscanf(line, "%llu", &ns) == 1)
			sum += ns;
		fclose(f);
	}
	closedir(dir);
	return sum;
}

/* User and system time of process @pid (all its threads, also those that
 * ended), in clock ticks (/proc/PID/stat); 0 and 0 when unreadable. */
static void proc_ticks(pid_t pid, unsigned long long *user, unsigned long long *sys)
{
	char path[64], line[1024], *p;
	FILE *f;

	*user = *sys = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return;
	p = fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	fclose(f);
	/* after the name: state ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt, then utime stime */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", user, sys) != 2)
		*user = *sys = 0;
}

/*
 * System calls of the server, counted by perf stat on the raw_syscalls:
 * sys_enter tracepoint (attached to every thread of the process, and to
 * threads it starts later). perf_count_ok: 1 once a probe counted, 0 when
 * it could not (no perf, no tracefs, not permitted).
 */
static int perf_count_ok = -1;

struct sc_counter {
	pid_t pid; /* perf, or 0 */
	int fd;    /* its stderr (the CSV count) */
};

/*
 * Start counting the system calls of process @target: perf starts with its
 * counter disabled (-D -1) and enables it on our "enable" on its control
 * pipe, answering "ack" once it is on, so every call after sc_start()
 * returns is counted (none lost to perf's start-up). No count (c->pid 0)
 * when perf cannot run or does not answer.
 */
static void sc_start(struct sc_counter *c, pid_t target)
{
	char pidarg[24], ctlarg[48], ack[8];
	int pfd[2], ctl[2], ak[2];
	struct pollfd pf;

	c->pid = 0;
	c->fd = -1;
	if (perf_count_ok == 0 || pipe(pfd))
		return;
	if (pipe(ctl)) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pipe(ak)) {
		close(pfd[0]);
		close(pfd[1]);
		close(ctl[0]);
		close(ctl[1]);
		return;
	}
	snprintf(pidarg, sizeof(pidarg), "%d", (int)target);
	snprintf(ctlarg, sizeof(ctlarg), "--control=fd:%d,%d", ctl[0], ak[1]);
	c->pid = fork();
	if (c->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 2);
		if (null >= 0)
			dup2(null, 1);
		close(pfd[0]);
		close(ctl[1]);
		close(ak[0]);
		execlp("perf", "perf", "stat", "-x", ",", "-D", "-1", ctlarg, "-e",
		       "raw_syscalls:sys_enter", "-p", pidarg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	close(ctl[0]);
	close(ak[1]);
	c->fd = pfd[0];
	pf.fd = ak[0];
	pf.events = POLLIN;
	if (c->pid < 0 || write(ctl[1], "enable\n", 7) != 7 || poll(&pf, 1, 5000) != 1 ||
	    read(ak[0], ack, sizeof(ack)) < 3 || memcmp(ack, "ack", 3)) {
		if (c->pid > 0) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, NULL, 0);
		}
		close(c->fd);
		c->pid = 0;
		c->fd = -1;
	}
	close(ctl[1]);
	close(ak[0]);
}

/* Stop @c; the count, or -1 when there is none. */
static double sc_stop(struct sc_counter *c)
{
	char buf[4096];
	size_t n = 0;
	ssize_t k;
	double v = -1;
	int st;

	if (!c->pid)
		return -1;
	kill(c->pid, SIGINT);
	while (n < sizeof(buf) - 1 && (k = read(c->fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(c->fd);
	waitpid(c->pid, &st, 0);
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		unsigned long long cnt;

		/* "COUNT,,raw_syscalls:sys_enter,..." ("<not counted>": no calls, no count) */
		if (sscanf(l, "%llu,", &cnt) == 1 && strstr(l, ",raw_syscalls:sys_enter,")) {
			v = (double)cnt;
			break;
		}
		if (strstr(l, "<not counted>,") == l && strstr(l, ",raw_syscalls:sys_enter,"))
			v = 0;
	}
	return v;
}

/* Whether perf counts system calls here, and counts them right: this
 * process's own 1,000 getppid() calls, made while it counts, must come
 * back as at least 1,000 and at most 1,100 (sc_stop()'s kill and read). */
static void sc_probe(void)
{
	struct sc_counter c;
	double v;

	sc_start(&c, getpid());
	for (int i = 0; i < 1000; i++)
		(void)syscall(SYS_getppid);
	v = sc_stop(&c);
	perf_count_ok = v >= 1000 && v <= 1100; /* the calls, and the few of sc_stop() */
}

/* Sleep until CLOCK_MONOTONIC reads @t ns. */
static void sleep_until_ns(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static struct conn *conns; /* o.conns of them, reused by every run */
static struct gen gens[MAX_THREADS];
static uint64_t *lat_all;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The @q quantile (0..1) of sorted @v, in us. */
static double quantile_us(const uint64_t *v, size_t n, double q)
{
	size_t i;

	if (!n)
		return 0;
	i = (size_t)ceil(q * (double)n);
	i = i ? i - 1 : 0;
	return (double)v[i < n ? i : n - 1] / 1000.0;
}

/*
 * One run against @s: closed loop (@rate 0) or open loop at @rate requests
 * per second, replies of @reply bytes. Returns replies per second counted
 * (closed), or the achieved rate (open) with p[0..2] = p50/p99/p99.9 in us
 * and *@lost; -1 on an error.
 */
static double one_run(struct server *s, uint32_t reply, double rate, double p[3], long *lost,
		      double cpu[4], struct cost *cost)
{
	unsigned long long u0 = 0, s0 = 0, u1 = 0, s1 = 0, cu0 = 0, cs0 = 0, cu1 = 0, cs1 = 0;
	uint64_t c0 = 0, c1 = 0, sent = 0;
	struct sc_counter sc = { 0, -1 };
	pthread_t tid[MAX_THREADS];
	uint64_t start = 0, done = 0, dur = (uint64_t)o.duration_ms * 1000000ull, srv0 = 0, srv1 = 0;
	double cli = 0;
	size_t nlat = 0, per_thread_cap;
	int nt = nr_client < o.conns ? nr_client : o.conns, err = 0;

	per_thread_cap = (size_t)(rate * (double)o.duration_ms / 1000.0 / nt * 1.5) + 1024;
	pthread_barrier_init(&gen_barrier, NULL, (unsigned int)nt + 1);
	for (int i = 0; i < nt; i++) {
		struct gen *g = &gens[i];

		g->thread = i;
		g->nthreads = nt;
		g->open = rate > 0;
		g->c = conns + (size_t)i * (size_t)o.conns / (size_t)nt;
		g->nconn = (int)((size_t)(i + 1) * (size_t)o.conns / (size_t)nt -
				 (size_t)i * (size_t)o.conns / (size_t)nt);
		for (int j = 0; j < g->nconn; j++) {
			struct conn *c = &g->c[j];
			uint64_t sx = c->seq_tx;

			c->fd = s->fds[(g->c - conns) + j];
			c->head = c->tail = c->unsent = c->tx_off = c->rx_off = 0;
			c->seq_tx = c->seq_rx = sx; /* runs start with nothing in flight */
		}
		g->reply = reply;
		g->rate = rate > 0 ? rate / nt : 0;
		g->start = &start;
		g->dur_ns = dur;
		g->warm_ns = dur / 10;
		g->drain_ns = (uint64_t)o.drain_ms * 1000000ull;
		g->seed = 12345u + (unsigned int)i;
		g->nlat = g->done = g->lost = g->cpu_ns = g->cpu_wall_ns = 0;
		g->err = 0;
		g->cap = g->open ? per_thread_cap : 0;
		g->lat = g->open ? (uint64_t *)malloc(g->cap * sizeof(uint64_t)) : NULL;
		if ((g->open && !g->lat) || pthread_create(&tid[i], NULL, gen_main, g)) {
			fprintf(stderr, "rpc: cannot start a generator thread\n");
			exit(1);
		}
	}
	if (cost) { /* before the threads go: the counter attaches, then the span starts */
		for (int i = 0; i < o.conns; i++)
			sent -= conns[i].seq_tx;
		sc_start(&sc, s->pid);
		c0 = proc_cpu_ns(s->pid);
		proc_ticks(s->pid, &cu0, &cs0);
	}
	pthread_barrier_wait(&gen_barrier);
	__atomic_store_n(&start, bench_now_ns() + 100000, __ATOMIC_RELEASE);
	if (cpu) { /* the server's CPU time over the run (the threads take theirs) */
		sleep_until_ns(start);
		srv0 = proc_cpu_ns(s->pid);
		proc_ticks(s->pid, &u0, &s0);
		sleep_until_ns(start + dur);
		srv1 = proc_cpu_ns(s->pid);
		proc_ticks(s->pid, &u1, &s1);
	}
	for (int i = 0; i < nt; i++) {
		pthread_join(tid[i], NULL);
		done += gens[i].done;
		cli += gens[i].cpu_wall_ns ? (double)gens[i].cpu_ns / (double)gens[i].cpu_wall_ns : 0;
		nlat += gens[i].nlat;
		if (gens[i].err && (err == ERR_NONE || err == ERR_DRAIN))
			err = gens[i].err; /* a real failure before a late drain */
		if (lost)
			*lost += (long)gens[i].lost;
	}
	pthread_barrier_destroy(&gen_barrier);
	if (cost) { /* every reply in (or the drain over): the span ends */
		double n;

		c1 = proc_cpu_ns(s->pid);
		proc_ticks(s->pid, &cu1, &cs1);
		n = sc_stop(&sc);
		for (int i = 0; i < o.conns; i++)
			sent += conns[i].seq_tx;
		cost->cpu_ns += c1 > c0 ? (double)(c1 - c0) : 0;
		cost->tu += cu1 >= cu0 ? cu1 - cu0 : 0;
		cost->ts += cs1 >= cs0 ? cs1 - cs0 : 0;
		cost->reqs += (double)sent;
		if (n < 0 || cost->syscalls < 0)
			cost->syscalls = -1;
		else
			cost->syscalls += n;
	}
	if (rate > 0) {
		size_t k = 0;

		lat_all = (uint64_t *)realloc(lat_all, (nlat + 1) * sizeof(uint64_t));
		for (int i = 0; i < nt; i++) {
			memcpy(lat_all + k, gens[i].lat, gens[i].nlat * sizeof(uint64_t));
			k += gens[i].nlat;
			free(gens[i].lat);
		}
		qsort(lat_all, nlat, sizeof(uint64_t), cmp_u64);
		p[0] = quantile_us(lat_all, nlat, 0.50);
		p[1] = quantile_us(lat_all, nlat, 0.99);
		p[2] = quantile_us(lat_all, nlat, 0.999);
	}
	if (!server_alive(s) || (err && err != ERR_DRAIN)) {
		fprintf(stderr, "rpc: %s: a run failed (%s)\n", s->name,
			server_alive(s) ? err_name[err] : "the server died");
		return -1;
	}
	if (err == ERR_DRAIN) { /* late replies would land in the next run: start afresh */
		fprintf(stderr, "rpc: %s: %s (%d ms): counted lost, connections reopened\n", s->name,
			err_name[err], o.drain_ms);
		for (int i = 0; i < o.conns; i++)
			close(s->fds[i]);
		if (server_connect(s, o.conns))
			return -1;
	}
	if (cpu) {
		cpu[0] = srv0 && srv1 > srv0 ? (double)(srv1 - srv0) / (double)dur / o.server_cpus : 0;
		cpu[1] = cli / nt;
		cpu[2] = u1 >= u0 ? (double)(u1 - u0) : 0; /* ticks */
		cpu[3] = s1 >= s0 ? (double)(s1 - s0) : 0;
	}
	return (double)done * 1e9 / (double)(dur - dur / 10);
}

/* ---------------------------------------------------------------- report */

static void rpc_line_max(struct bench *b, struct server *s, int r)
{
	double mn, mx, med = bench_median(s->max[r], b->runs);

	bench_minmax(s->max[r], b->runs, &mn, &mx);
	if (b->json)
		fprintf(b->json,
			"{\"kind\":\"rpc\",\"bench\":\"rpc\",\"what\":\"max\",\"server\":\"%s\","
			"\"server_desc\":\"%s\",\"reply_bytes\":%u,\"unit\":\"req/s\",\"median\":%.6g,"
			"\"min\":%.6g,\"max\":%.6g,\"runs\":%d,\"conns\":%d,\"depth\":%d,"
			"\"server_cpus\":%d,\"client_threads\":%d,\"placement\":\"%s\",\"kernel\":\"%s\","
			"\"id_mode\":\"%s\",\"server_cpu_busy\":%.4f,\"client_cpu_busy\":%.4f,"
			"\"server_user_ticks\":%llu,\"server_sys_ticks\":%llu}\n",
			s->name, s->desc, reply_size[r], med, mn, mx, b->runs, o.conns, o.depth,
			o.server_cpus, nr_client, placement, b->kernel, b->id_mode,
			bench_median(s->cpu_srv[r], b->runs), bench_median(s->cpu_cli[r], b->runs),
			s->ticks_user[r], s->ticks_sys[r]);
}

/*
 * What a request cost @s at level @l (0 when not measured): CPU us, its
 * user and system parts (the precise total split by the ticks' shares),
 * and system calls (-1: not counted).
 */
static void rpc_cost(const struct server *s, int r, int l, double *cpu, double *user, double *sys,
		     double *calls)
{
	const struct cost *c = &s->cost[r][l];
	double t = (double)(c->tu + c->ts);

	*cpu = *user = *sys = 0;
	*calls = -1;
	if (c->reqs <= 0)
		return;
	*cpu = c->cpu_ns / c->reqs / 1000.0;
	*user = t > 0 ? *cpu * (double)c->tu / t : 0;
	*sys = t > 0 ? *cpu * (double)c->ts / t : 0;
	if (c->syscalls >= 0)
		*calls = c->syscalls / c->reqs;
}

static void rpc_line_lat(struct bench *b, struct server *s, int r, int l, double rate)
{
	static const char *const qn[3] = { "p50", "p99", "p999" };
	double mn, mx, cpu, user, sys, calls;

	if (!b->json)
		return;
	fprintf(b->json,
		"{\"kind\":\"rpc\",\"bench\":\"rpc\",\"what\":\"latency\",\"server\":\"%s\","
		"\"server_desc\":\"%s\",\"reply_bytes\":%u,\"load_pct\":%d,\"rate\":%.6g,"
		"\"achieved\":%.6g,\"lost\":%ld,\"unit\":\"us\",",
		s->name, s->desc, reply_size[r], level_pct[l], rate,
		bench_median(s->got[r][l], b->runs) * rate, s->lost[r][l]);
	for (int q = 0; q < 3; q++) {
		bench_minmax(s->lat[r][l][q], b->runs, &mn, &mx);
		fprintf(b->json, "\"%s\":%.6g,\"%s_min\":%.6g,\"%s_max\":%.6g,", qn[q],
			bench_median(s->lat[r][l][q], b->runs), qn[q], mn, qn[q], mx);
	}
	rpc_cost(s, r, l, &cpu, &user, &sys, &calls);
	if (cpu > 0) {
		fprintf(b->json, "\"cpu_us_per_req\":%.6g,\"user_us_per_req\":%.6g,"
			"\"sys_us_per_req\":%.6g,\"requests_costed\":%.0f,", cpu, user, sys,
			s->cost[r][l].reqs);
		if (calls >= 0)
			fprintf(b->json, "\"syscalls_per_req\":%.6g,", calls);
		else
			fprintf(b->json, "\"syscalls_per_req\":null,");
	}
	fprintf(b->json,
		"\"runs\":%d,\"conns\":%d,\"poisson\":%s,\"server_cpus\":%d,\"client_threads\":%d,"
		"\"placement\":\"%s\",\"kernel\":\"%s\",\"id_mode\":\"%s\"}\n",
		b->runs, o.conns, o.poisson ? "true" : "false", o.server_cpus, nr_client, placement,
		b->kernel, b->id_mode);
}

/* The cachelocal server against @s as report peer lines and goal lines. */
static void rpc_peer_lines(struct bench *b, struct server *s, int r)
{
	struct server *ours = &servers[S_CACHELOCAL];
	char workload[96], peer[200];
	double mo, mt, g[6], gain;
	const int l75 = 2;

	snprintf(peer, sizeof(peer), "%s", s->desc);
	snprintf(workload, sizeof(workload), "max throughput, %u B reply", reply_size[r]);
	gain = peer_gains(ours->max[r], s->max[r], b->runs, 1, &mo, &mt, g);
	peer_json(b, "runtime-rpc", "cl_runtime", peer, workload, o.server_cpus, mo, mt, g[0], g[1],
		  g[2], g[3], g[4], g[5], gain, b->runs, "req/s", 1);
	rtb_goal(b, s == &servers[S_GO] ? "max throughput >= 1.5x Go" : "max throughput >= 1x epoll",
		 gain, s == &servers[S_GO] ? 1.5 : 1.0, 1);
	snprintf(workload, sizeof(workload), "p99 at %d%% load, %u B reply", level_pct[l75],
		 reply_size[r]);
	gain = peer_gains(ours->lat[r][l75][1], s->lat[r][l75][1], b->runs, 0, &mo, &mt, g);
	peer_json(b, "runtime-rpc", "cl_runtime", peer, workload, o.server_cpus, mo, mt, g[0], g[1],
		  g[2], g[3], g[4], g[5], gain, b->runs, "us", 0);
	if (s == &servers[S_GO])
		rtb_goal(b, "p99 at 75% load <= Go's (Go/ours)", gain, 1.0, 1);
	for (int l = 1; l <= 2; l++) { /* 50% and 75% */
		double oc, ou, osy, ocl, tc, tu, tsy, tcl;
		char what[96];

		rpc_cost(ours, r, l, &oc, &ou, &osy, &ocl);
		rpc_cost(s, r, l, &tc, &tu, &tsy, &tcl);
		if (oc <= 0 || tc <= 0)
			continue;
		snprintf(what, sizeof(what), "CPU/request at %d%%, %u B <= %s (theirs/ours)",
			 level_pct[l], reply_size[r], s == &servers[S_GO] ? "0.67x Go's" : "the epoll loop's");
		rtb_goal(b, what, tc / oc, s == &servers[S_GO] ? 1.5 : 1.0, 1);
		if (s == &servers[S_GO] && ocl > 0 && tcl > 0) {
			snprintf(what, sizeof(what), "syscalls/request at %d%%, %u B <= half Go's (Go/ours)",
				 level_pct[l], reply_size[r]);
			rtb_goal(b, what, tcl / ocl, 2.0, 1);
		}
	}
}

static void usage(void)
{
	printf("usage: rpc [--conns N] [--duration-ms N] [--drain-ms N] [--depth N]\n"
	       "           [--server-cpus N] [--client-threads N] [--poisson] [--reply 64|4096]\n"
	       "           [--server cachelocal|go|epoll] [--runs N] [--quick] [--smoke]\n"
	       "           [--json | --json=PATH] [--help]\n"
	       "  an RPC server (64 B requests; 64 B and 4 KiB replies) on the cachelocal runtime,\n"
	       "  in Go and as an epoll loop, under an open-loop load generator: max throughput\n"
	       "  (closed loop), then p50/p99/p99.9 at 25/50/75/90%% of the slowest server's max\n"
	       "  --conns N          connections per server (default 256; --quick 64; --smoke 8)\n"
	       "  --duration-ms N    one run (default 1000; --quick 250; --smoke 20); its first\n"
	       "                     tenth is a warm-up\n"
	       "  --drain-ms N       how long replies may trail a run (default 2000)\n"
	       "  --depth N          requests in flight per connection in the closed loop (default 1)\n"
	       "  --server-cpus N    CPUs (and runtime workers, GOMAXPROCS) of the servers (default 1)\n"
	       "  --client-threads N load generator threads, at most one per remaining CPU (default 4)\n"
	       "  --poisson          exponential gaps between requests (default: evenly spaced)\n"
	       "  --reply N          only this reply size\n"
	       "  --server NAME      only this server\n"
	       "  servers: rpc_cachelocal, rpc_go, rpc_epoll next to this binary\n");
	bench_usage("rpc");
}

int main(int argc, char **argv)
{
	struct bench b;
	int nr_ok = 0, nallowed;
	double lp[3];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if (!strcmp(argv[i], "--conns")) {
			o.conns = (int)rtb_num_arg("rpc", argc, argv, &i, 1, MAX_CONNS);
		} else if (!strcmp(argv[i], "--duration-ms")) {
			o.duration_ms = (int)rtb_num_arg("rpc", argc, argv, &i, 10, 600000);
		} else if (!strcmp(argv[i], "--drain-ms")) {
			o.drain_ms = (int)rtb_num_arg("rpc", argc, argv, &i, 1, 600000);
		} else if (!strcmp(argv[i], "--depth")) {
			o.depth = (int)rtb_num_arg("rpc", argc, argv, &i, 1, RING / 2);
		} else if (!strcmp(argv[i], "--server-cpus")) {
			o.server_cpus = (int)rtb_num_arg("rpc", argc, argv, &i, 1, 1024);
		} else if (!strcmp(argv[i], "--client-threads")) {
			o.client_threads = (int)rtb_num_arg("rpc", argc, argv, &i, 1, MAX_THREADS);
		} else if (!strcmp(argv[i], "--poisson")) {
			o.poisson = 1;
		} else if (!strcmp(argv[i], "--reply")) {
			long v = rtb_num_arg("rpc", argc, argv, &i, 1, RPC_REPLY_MAX);

			for (o.reply_only = 0; o.reply_only < NREPLY && reply_size[o.reply_only] != v; o.reply_only++)
				;
			if (o.reply_only == NREPLY)
				rtb_unknown("rpc", argv[i]);
		} else if (!strcmp(argv[i], "--server") && i + 1 < argc) {
			for (o.only = 0; o.only < S_NR && strcmp(argv[i + 1], servers[o.only].name); o.only++)
				;
			if (o.only == S_NR)
				rtb_unknown("rpc", argv[i + 1]);
			i++;
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("rpc", argv[i]);
		}
	}
	bench_init(&b, "rpc", argc, argv);
	signal(SIGPIPE, SIG_IGN);
	{ /* a connection is two descriptors here (client, server): raise the soft limit */
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (o.conns < 0)
		o.conns = b.smoke ? 8 : b.quick ? 64 : 256;
	if (o.duration_ms < 0)
		o.duration_ms = b.smoke ? 20 : b.quick ? 250 : 1000;
	nallowed = bench_nr_allowed_cpus();
	CPU_ZERO(&server_set);
	CPU_ZERO(&client_set);
	if (o.server_cpus >= nallowed) {
		o.server_cpus = nallowed > 1 ? nallowed - 1 : 1;
	}
	for (int i = 0; i < o.server_cpus; i++)
		CPU_SET(bench_allowed_cpu(i), &server_set);
	for (int i = o.server_cpus; i < nallowed && nr_client < o.client_threads; i++)
		client_cpu[nr_client++] = bench_allowed_cpu(i);
	if (!nr_client) { /* one CPU: the generator shares it and sleeps between sends */
		client_cpu[nr_client++] = bench_allowed_cpu(0);
		placement = "shared";
		spin_us = 0;
	}
	conns = (struct conn *)calloc((size_t)o.conns, sizeof(struct conn));
	if (!conns)
		return 1;
	for (int k = 0; k < S_NR; k++) {
		struct server *s = &servers[k];

		peer_exe_path(s->path, sizeof(s->path), s->exe);
		if (o.only >= 0 && k != o.only)
			continue;
		if (server_start(s)) {
			printf("# %s server: skipped (%s)\n", s->name, s->pkg);
			if (b.json)
				fprintf(b.json, "{\"kind\":\"rpc\",\"bench\":\"rpc\",\"what\":\"skipped\","
					"\"server\":\"%s\",\"reason\":\"%s\"}\n", s->name, s->pkg);
			continue;
		}
		if (server_connect(s, o.conns)) {
			server_stop(s);
			return 1;
		}
		s->ok = 1;
		nr_ok++;
		if (!b.json_only)
			printf("# %s server: %s\n", s->name, s->desc);
	}
	if (!nr_ok)
		return 77;
	sc_probe();
	if (!b.json_only)
		printf("# system calls per request: %s\n", perf_count_ok ?
		       "counted (perf stat -e raw_syscalls:sys_enter -p SERVER)" :
		       "not counted (perf cannot count raw_syscalls:sys_enter here)");
	if (!b.json_only) {
		printf("# placement: %s; servers on CPU", placement);
		for (int i = 0; i < o.server_cpus; i++)
			printf(" %d", bench_allowed_cpu(i));
		printf(" (%d worker%s, GOMAXPROCS=%d, the epoll loop's 1 thread); load generator on CPU",
		       o.server_cpus, o.server_cpus > 1 ? "s" : "", o.server_cpus);
		for (int i = 0; i < nr_client; i++)
			printf(" %d", client_cpu[i]);
		printf(" (%d thread%s); %d connections per server; %d ms per run; %s arrivals\n",
		       nr_client, nr_client > 1 ? "s" : "", o.conns, o.duration_ms,
		       o.poisson ? "Poisson" : "evenly spaced");
	}
	for (int r = 0; r < NREPLY; r++) {
		char cname[64];
		double slowest = 0;

		if (o.reply_only >= 0 && r != o.reply_only)
			continue;
		/* 1. max throughput, the servers interleaved (the first one rotating) */
		for (int run = 0; run < b.runs; run++)
			for (int j = 0; j < S_NR; j++) {
				struct server *s = &servers[(j + run) % S_NR];

				if (!s->ok)
					continue;
				double cpu[4] = { 0, 0, 0, 0 };

				s->max[r][run] = one_run(s, reply_size[r], 0, NULL, NULL, cpu, NULL);
				if (s->max[r][run] < 0)
					return 1;
				s->cpu_srv[r][run] = cpu[0];
				s->cpu_cli[r][run] = cpu[1];
				s->ticks_user[r] += (unsigned long long)cpu[2];
				s->ticks_sys[r] += (unsigned long long)cpu[3];
				bench_progress(&b,
					       "max %u B %s run %d: %.0f req/s (CPU busy: server %.0f%%, "
					       "load generator %.0f%%)",
					       reply_size[r], s->name, run, s->max[r][run], cpu[0] * 100,
					       cpu[1] * 100);
			}
		snprintf(cname, sizeof(cname), "max %u B reply", reply_size[r]);
		for (int k = 0; k < S_NR; k++) {
			struct server *s = &servers[k];
			double m;

			if (!s->ok)
				continue;
			m = bench_report(&b, cname, s->name, placement, o.server_cpus, s->max[r], b.runs,
					 "req/s");
			rpc_line_max(&b, s, r);
			printf("# max %u B %s: CPU busy (medians of the runs): server %.0f%% of "
			       "%d CPU(s), load generator %.0f%% of %d thread(s); the server's time in "
			       "the kernel: %.0f%% (%llu of %llu ticks, all runs)\n",
			       reply_size[r], s->name, bench_median(s->cpu_srv[r], b.runs) * 100,
			       o.server_cpus, bench_median(s->cpu_cli[r], b.runs) * 100, nr_client,
			       s->ticks_user[r] + s->ticks_sys[r] ?
				       100.0 * (double)s->ticks_sys[r] /
					       (double)(s->ticks_user[r] + s->ticks_sys[r]) : 0.0,
			       s->ticks_sys[r], s->ticks_user[r] + s->ticks_sys[r]);
			if (slowest == 0 || m < slowest)
				slowest = m;
		}
		/* 2. latency at each load level of the slowest server's max */
		if (slowest <= 0) { /* no load to offer (smoke runs on a starved machine) */
			printf("# %u B reply: latency not measured (a server's max throughput measured 0)\n",
			       reply_size[r]);
			continue;
		}
		for (int l = 0; l < NLEVELS; l++) {
			double rate = slowest * level_pct[l] / 100.0;

			for (int run = 0; run < b.runs; run++)
				for (int j = 0; j < S_NR; j++) {
					struct server *s = &servers[(j + run) % S_NR];
					double got;

					if (!s->ok)
						continue;
					got = one_run(s, reply_size[r], rate, lp, &s->lost[r][l], NULL,
						      level_pct[l] <= 75 ? &s->cost[r][l] : NULL);
					if (got < 0)
						return 1;
					for (int q = 0; q < 3; q++)
						s->lat[r][l][q][run] = lp[q];
					s->got[r][l][run] = got / rate;
					bench_progress(&b, "%u B %d%% (%.0f req/s) %s run %d: p50 %.1f p99 %.1f "
						       "p99.9 %.1f us", reply_size[r], level_pct[l], rate, s->name,
						       run, lp[0], lp[1], lp[2]);
				}
			for (int k = 0; k < S_NR; k++) {
				static const char *const qn[3] = { "p50", "p99", "p99.9" };
				struct server *s = &servers[k];

				if (!s->ok)
					continue;
				for (int q = 0; q < 3; q++) {
					snprintf(cname, sizeof(cname), "%s %u B at %d%%", qn[q], reply_size[r],
						 level_pct[l]);
					bench_report(&b, cname, s->name, placement, o.server_cpus,
						     s->lat[r][l][q], b.runs, "us");
				}
				rpc_line_lat(&b, s, r, l, rate);
				if (level_pct[l] <= 75 && !b.json_only) {
					double cpu, user, sys, calls;

					rpc_cost(s, r, l, &cpu, &user, &sys, &calls);
					printf("# cost %u B at %d%% %s: %.2f us CPU per request (user %.2f, "
					       "system %.2f), ", reply_size[r], level_pct[l], s->name, cpu,
					       user, sys);
					if (calls >= 0)
						printf("%.2f system calls per request (%.0f requests)\n",
						       calls, s->cost[r][l].reqs);
					else
						printf("system calls not counted (perf)\n");
				}
			}
		}
		if (servers[S_CACHELOCAL].ok)
			for (int k = S_GO; k < S_NR; k++)
				if (servers[k].ok)
					rpc_peer_lines(&b, &servers[k], r);
	}
	for (int k = 0; k < S_NR; k++)
		if (servers[k].ok)
			server_stop(&servers[k]);
	free(lat_all);
	free(conns);
	return bench_finish(&b);
}
