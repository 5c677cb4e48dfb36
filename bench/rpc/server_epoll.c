/* SPDX-License-Identifier: MIT */
/*
 * bench/rpc/server_epoll.c - the RPC benchmark's hand-written server: one
 * thread, one epoll set, every socket non-blocking and edge-triggered. What
 * a user writes without a runtime: on each readiness event it reads until
 * EAGAIN, answers every complete request in one buffer and writes until
 * EAGAIN, keeping what the socket did not take for the next EPOLLOUT.
 *
 * Usage: rpc_epoll [WORKERS] (WORKERS is ignored: always one thread).
 * Protocol and start-up line: rpc_proto.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "rpc_proto.h"

#define RX_CAP 16384
#define TX_CAP (256 * 1024)

struct conn {
	int fd;
	size_t rx_len;           /* bytes of an incomplete request kept in rx */
	size_t tx_off, tx_len;   /* tx[tx_off, tx_len): replies not yet written */
	unsigned char rx[RX_CAP];
	unsigned char tx[TX_CAP];
};

static void conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/* Write what is pending until EAGAIN. Return: 0, or -1 when the connection is gone. */
static int conn_flush(struct conn *c)
{
	while (c->tx_off < c->tx_len) {
		ssize_t n = write(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off);

		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->tx_off += (size_t)n;
	}
	c->tx_off = c->tx_len = 0;
	return 0;
}

/*
 * Read until EAGAIN, answering as requests complete. A reply buffer that
 * fills (the client stopped reading) stops reading too: the rest stays in
 * the socket and the next EPOLLOUT, after a flush, reads on.
 * Return: 0, or -1 when the connection is gone or broken.
 */
static int conn_serve(struct conn *c)
{
	for (;;) {
		long used;
		ssize_t n;

		if (conn_flush(c))
			return -1;
		if (c->tx_len) /* the socket is full: wait for EPOLLOUT */
			return 0;
		n = read(c->fd, c->rx + c->rx_len, RX_CAP - c->rx_len);
		if (n == 0)
			return -1;
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		c->rx_len += (size_t)n;
		used = rpc_serve_buf(c->rx, c->rx_len, c->tx, TX_CAP, &c->tx_len);
		if (used < 0)
			return -1;
		memmove(c->rx, c->rx + used, c->rx_len - (size_t)used);
		c->rx_len -= (size_t)used;
	}
}

int main(int argc, char **argv)
{
	struct epoll_event ev, evs[256];
	int port, one = 1;
	int lfd = rpc_listen(SOCK_NONBLOCK, &port), ep = epoll_create1(EPOLL_CLOEXEC);

	(void)argc;
	(void)argv;
	if (lfd < 0 || ep < 0) {
		perror("rpc_epoll: listen");
		return 1;
	}
	ev.events = EPOLLIN | EPOLLET;
	ev.data.ptr = NULL; /* the listener */
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)) {
		perror("rpc_epoll: epoll_ctl");
		return 1;
	}
	printf("port %d epoll loop (C, 1 thread, edge-triggered)\n", port);
	fflush(stdout);
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		if (n < 0 && errno != EINTR) {
			perror("rpc_epoll: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = (struct conn *)evs[i].data.ptr;

			if (!c) {
				int fd;

				while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = (struct conn *)malloc(sizeof(*c));
					if (!c) {
						close(fd);
						continue;
					}
					c->fd = fd;
					c->rx_len = c->tx_off = c->tx_len = 0;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
					ev.data.ptr = c;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
						close(fd);
						free(c);
					}
				}
				continue;
			}
			if ((evs[i].events & (EPOLLERR | EPOLLHUP)) || conn_serve(c))
				conn_close(ep, c);
		}
	}
}
