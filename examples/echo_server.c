/* SPDX-License-Identifier: MIT */
/*
 * examples/echo_server.c - a TCP echo server on the M:N runtime: one task
 * per connection, each in cl_read()/cl_write() (sched/runtime/io.h), which
 * park the task, not the worker, so a few workers serve many connections.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/echo_server.c -o echo_server $(pkg-config --cflags --libs cachelocal-sched)
 *	./echo_server                 # self-check: serves on a loopback port, a
 *	                              # client thread echoes 200 connections, exit 0
 *	./echo_server --serve [PORT]  # serve on 127.0.0.1:PORT (7777) until killed
 *
 * CL_RUNTIME_IO=epoll in the environment forces the epoll backend. The
 * server's pieces (echo_listen(), echo_serve()) are what
 * tests/unit/test_example_echo_server.c runs against its own client; it
 * includes this file with ECHO_SERVER_NO_MAIN defined.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cachelocal/sched/runtime.h>

/* A listening socket on 127.0.0.1:@port (0: any free port; *@port gets it). */
static int echo_listen(unsigned short *port)
{
	struct sockaddr_in sa;
	socklen_t l = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(*port);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4096) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &l) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

/* One connection: echo until the peer closes it (or an error). */
static void *echo_conn(void *p)
{
	int c = (int)(intptr_t)p;
	char buf[4096];
	ssize_t r;

	while ((r = cl_read(c, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < r;) {
			ssize_t w = cl_write(c, buf + off, (size_t)(r - off));

			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	cl_close(c);
	return NULL;
}

/* errno after a call that parked the task: read through a call the
 * compiler cannot inline (the task may have resumed on another worker
 * thread, and errno's address is the thread's: docs/runtime.md, I/O). */
static __attribute__((noinline)) int task_errno(void)
{
	return errno;
}

struct echo_server {
	struct cl_runtime *rt;
	int lfd;
	long max_conns; /* stop accepting after this many (0: never) */
	long accepted;
};

/* The accept loop (a task): a detached task per connection. Returns when
 * max_conns were accepted, or when accepting fails (ECANCELED: the
 * listening socket was closed with cl_close(), or shutdown began). */
static void *echo_serve(void *p)
{
	struct echo_server *s = (struct echo_server *)p;
	struct cl_spawn_attr sa;

	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	while (!s->max_conns || s->accepted < s->max_conns) {
		int c = cl_accept(s->lfd, NULL, NULL);

		if (c < 0)
			return (void *)(intptr_t)task_errno();
		s->accepted++;
		if (!cl_spawn(s->rt, &sa, echo_conn, (void *)(intptr_t)c)) {
			close(c);
			return (void *)(intptr_t)task_errno();
		}
	}
	return NULL;
}

#ifndef ECHO_SERVER_NO_MAIN
#include <pthread.h>

#include "example_args.h"

#define SELF_CONNS 200

struct self_client {
	unsigned short port;
	int ok;
};

/* The self-check's client (a plain thread): SELF_CONNS connections open
 * at once, a distinct message on each, every reply read back and compared. */
static void *self_client(void *p)
{
	struct self_client *sc = (struct self_client *)p;
	struct sockaddr_in sa;
	int fd[SELF_CONNS];

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(sc->port);
	for (int i = 0; i < SELF_CONNS; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)) != 0)
			return NULL;
	}
	for (int i = 0; i < SELF_CONNS; i++) {
		char m[32];
		int n = snprintf(m, sizeof(m), "hello %d", i);

		if (write(fd[i], m, (size_t)n) != n)
			return NULL;
	}
	for (int i = 0; i < SELF_CONNS; i++) {
		char m[32], want[32];
		int n = snprintf(want, sizeof(want), "hello %d", i), got = 0;

		while (got < n) {
			ssize_t r = read(fd[i], m + got, (size_t)(n - got));

			if (r <= 0)
				return NULL;
			got += (int)r;
		}
		if (memcmp(m, want, (size_t)n))
			return NULL;
		close(fd[i]);
	}
	sc->ok = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	static const char usage[] = "usage: echo_server [--serve [PORT]]\n"
				    "  no option: a self-check on a loopback port (exit 0 if every byte came back)\n"
				    "  --serve: echo on 127.0.0.1:PORT (default 7777) until killed\n";
	static const char *const opts[] = { "--serve", NULL };
	int arg = example_args(argc, argv, usage, opts, 1);
	int serve = argc > 1 && !strcmp(argv[1], "--serve");
	struct echo_server s;
	struct self_client sc;
	struct cl_runtime_attr a;
	struct cl_rt_task *t;
	pthread_t client;
	void *ret = NULL;

	memset(&s, 0, sizeof(s));
	memset(&sc, 0, sizeof(sc));
	sc.port = serve ? (unsigned short)(arg ? atoi(argv[arg]) : 7777) : 0;
	s.lfd = echo_listen(&sc.port);
	memset(&a, 0, sizeof(a));
	a.nr_workers = 2;
	s.rt = s.lfd >= 0 ? cl_runtime_create(&a) : NULL;
	if (!s.rt) {
		perror("echo_server");
		return 1;
	}
	printf("echo_server: 127.0.0.1:%u, %u workers, I/O backend %s\n", sc.port, cl_runtime_nr_workers(s.rt),
	       cl_runtime_io_mode(s.rt));
	s.max_conns = serve ? 0 : SELF_CONNS;
	t = cl_spawn(s.rt, NULL, echo_serve, &s);
	if (!t || (!serve && pthread_create(&client, NULL, self_client, &sc) != 0)) {
		perror("echo_server");
		return 1;
	}
	(void)cl_join(t, &ret);
	if (!serve)
		pthread_join(client, NULL);
	(void)cl_runtime_destroy(s.rt);
	close(s.lfd);
	if (serve || !sc.ok || ret) {
		fprintf(stderr, "echo_server: self-check failed (accept: %s)\n", ret ? strerror((int)(intptr_t)ret) : "ok");
		return 1;
	}
	printf("echo_server: %d connections echoed\n", SELF_CONNS);
	return 0;
}
#endif /* ECHO_SERVER_NO_MAIN */
