/* SPDX-License-Identifier: MIT */
/*
 * Tests of examples/echo_server.c, compiled in (ECHO_SERVER_NO_MAIN): its
 * server, on 2 workers in each I/O backend (io_uring where it can be set
 * up, and epoll), echoes every byte of 500 connections of a client in a
 * child process, messages of several sizes on each, split across writes;
 * and its accept loop returns ECANCELED when a task closes the listening
 * socket (cl_close()).
 */
#define ECHO_SERVER_NO_MAIN
#include "../../examples/echo_server.c"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "cl_test.h"

static const char *const modes[2] = { "io_uring", "epoll" };

static struct cl_runtime *rt_in(int m)
{
	struct cl_runtime_attr a;
	struct cl_runtime *rt;

#ifdef CL__RT_VALGRIND
	if (m == 0 && RUNNING_ON_VALGRIND)
		return NULL; /* valgrind does not follow a ring's buffers: epoll only */
#endif
	setenv("CL_RUNTIME_IO", modes[m], 1);
	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	a.flags = CL_RUNTIME_UNPINNED;
	rt = cl_runtime_create(&a);
	if (!rt && m == 0) {
		cr_log_warn("io_uring cannot be set up here (%s)", strerror(errno));
		return NULL;
	}
	cr_assert_not_null(rt, "%s: %s", modes[m], strerror(errno));
	cr_assert_str_eq(cl_runtime_io_mode(rt), modes[m]);
	return rt;
}

/* @s: a server in mode @m listening on *@port; 0: mode not here. */
static int server_in(int m, struct echo_server *s, unsigned short *port)
{
	memset(s, 0, sizeof(*s));
	s->rt = rt_in(m);
	if (!s->rt)
		return 0;
	s->lfd = echo_listen(port);
	if (s->lfd < 0)
		cr_skip_test("no loopback here (listen on 127.0.0.1: %s)", strerror(errno));
	return 1;
}

#define CONNS 500

/* The client: CONNS connections open at once; on connection i, 3 rounds of
 * (i % 97 + 1) * 37 bytes, each sent in two writes, read back and compared. */
static int client(unsigned short port)
{
	static int fd[CONNS];
	struct sockaddr_in sa;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	for (int i = 0; i < CONNS; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)) != 0)
			return 3;
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < CONNS; i++) {
			unsigned char m[4096];
			size_t n = (size_t)(i % 97 + 1) * 37 % sizeof(m);

			for (size_t k = 0; k < n; k++)
				m[k] = (unsigned char)(i * 7 + round + k);
			if (write(fd[i], m, n / 2) != (ssize_t)(n / 2) ||
			    write(fd[i], m + n / 2, n - n / 2) != (ssize_t)(n - n / 2))
				return 4;
		}
		for (int i = 0; i < CONNS; i++) {
			unsigned char m[4096];
			size_t n = (size_t)(i % 97 + 1) * 37 % sizeof(m), got = 0;

			while (got < n) {
				ssize_t r = read(fd[i], m + got, n - got);

				if (r <= 0)
					return 5;
				got += (size_t)r;
			}
			for (size_t k = 0; k < n; k++)
				if (m[k] != (unsigned char)(i * 7 + round + k))
					return 6;
		}
	}
	for (int i = 0; i < CONNS; i++)
		close(fd[i]);
	return 0;
}

Test(echo_server_example, echoes_every_byte_of_many_connections, .timeout = 120)
{
	for (int m = 0; m < 2; m++) {
		struct echo_server s;
		unsigned short port = 0;
		struct cl_rt_task *t;
		void *ret = (void *)1;
		pid_t pid;
		int status;

		if (!server_in(m, &s, &port))
			continue;
		s.max_conns = CONNS;
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			_exit(client(port));
		t = cl_spawn(s.rt, NULL, echo_serve, &s);
		cr_assert_not_null(t);
		cr_assert_eq(cl_join(t, &ret), 0);
		cr_assert_null(ret, "%s: accept: %s", modes[m], strerror((int)(intptr_t)ret));
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: client status %#x", modes[m], status);
		cr_assert_eq(s.accepted, CONNS);
		cr_assert_eq(cl_runtime_destroy(s.rt), 0);
		close(s.lfd);
	}
}

static void *close_listener(void *p)
{
	struct echo_server *s = (struct echo_server *)p;

	/* until the accept loop is parked on the listening socket */
	for (;;) {
		unsigned int n = 0;

		for (unsigned int i = 0; i < s->rt->nr_workers; i++)
			n += __atomic_load_n(&s->rt->workers[i].io_nr, __ATOMIC_SEQ_CST);
		if (n)
			break;
		cl_yield();
	}
	return (void *)(intptr_t)cl_close(s->lfd);
}

Test(echo_server_example, closing_the_listener_ends_the_accept_loop, .timeout = 30)
{
	for (int m = 0; m < 2; m++) {
		struct echo_server s;
		unsigned short port = 0;
		struct cl_rt_task *t, *c;
		void *ret = NULL, *cret = (void *)1;

		if (!server_in(m, &s, &port))
			continue;
		t = cl_spawn(s.rt, NULL, echo_serve, &s);
		c = cl_spawn(s.rt, NULL, close_listener, &s);
		cr_assert_eq(cl_join(c, &cret), 0);
		cr_assert_null(cret);
		cr_assert_eq(cl_join(t, &ret), 0);
		cr_assert_eq((int)(intptr_t)ret, ECANCELED, "%s: %d", modes[m], (int)(intptr_t)ret);
		cr_assert_eq(cl_runtime_destroy(s.rt), 0);
	}
}
