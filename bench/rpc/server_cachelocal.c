/* SPDX-License-Identifier: MIT */
/*
 * bench/rpc/server_cachelocal.c - the RPC benchmark's server on the
 * cachelocal M:N runtime: one task accepts, one task per connection
 * serves it with cl_read()/cl_write(), each call parking only its task
 * (the worker runs the other connections meanwhile). A task reads what
 * the socket has, answers every complete request in one buffer and writes
 * it in one call, as the other servers do.
 *
 * Usage: rpc_cachelocal WORKERS (the runtime's workers, pinned to the CPUs
 * the driver allowed). The start-up line names the I/O backend
 * (cl_runtime_io_mode()). Protocol: rpc_proto.h. Built only where the
 * runtime has its I/O calls (the Makefile looks for cl_accept).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cachelocal/sched/runtime.h>

#include "rpc_proto.h"

#define RX_CAP 16384
#define TX_CAP (256 * 1024)

/* Write all of @buf; 0, or -1 when the connection is gone. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len) {
		ssize_t n = cl_write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *conn_task(void *p)
{
	int fd = (int)(intptr_t)p;
	unsigned char *rx = (unsigned char *)malloc(RX_CAP), *tx = (unsigned char *)malloc(TX_CAP);
	size_t have = 0;

	while (rx && tx) {
		size_t txlen = 0;
		ssize_t n = cl_read(fd, rx + have, RX_CAP - have);
		long used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		used = rpc_serve_buf(rx, have, tx, TX_CAP, &txlen);
		if (used < 0 || write_all(fd, tx, txlen))
			break;
		memmove(rx, rx + used, have - (size_t)used);
		have -= (size_t)used;
	}
	free(rx);
	free(tx);
	cl_close(fd);
	return NULL;
}

static void *accept_task(void *p)
{
	struct cl_runtime *rt = (struct cl_runtime *)p;
	struct cl_spawn_attr sa;
	int port, one = 1, lfd = rpc_listen(0, &port);

	if (lfd < 0) {
		perror("rpc_cachelocal: listen");
		return (void *)1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	printf("port %d cachelocal runtime (task per connection, %u workers, I/O %s)\n", port,
	       cl_runtime_nr_workers(rt), cl_runtime_io_mode(rt));
	fflush(stdout);
	for (;;) {
		int fd = cl_accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
				continue;
			perror("rpc_cachelocal: accept");
			return (void *)1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (!cl_spawn(rt, &sa, conn_task, (void *)(intptr_t)fd))
			cl_close(fd);
	}
}

int main(int argc, char **argv)
{
	struct cl_runtime_attr ra;
	struct cl_runtime *rt;
	struct cl_rt_task *t;
	void *ret = NULL;

	memset(&ra, 0, sizeof(ra));
	ra.nr_workers = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;
	rt = cl_runtime_create(&ra);
	if (!rt) {
		perror("rpc_cachelocal: cl_runtime_create");
		return 1;
	}
	t = cl_spawn(rt, NULL, accept_task, rt);
	if (!t || cl_join(t, &ret) || ret)
		return 1;
	return 0;
}
