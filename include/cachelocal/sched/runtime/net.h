/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/net.h - TCP by "host:port": cl_listen_tcp(),
 * cl_dial_tcp(), cl_sock_name(). The address is resolved with
 * getaddrinfo(3): a numeric one at once, a name on a cl_blocking() helper
 * thread in a task (the lookup may wait on DNS), then each address it gave
 * is tried in order. "host:port", "[v6 address]:port", ":port" (listen:
 * every address; dial: loopback); port 0 to listen picks a free one.
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_NET_H
#define CACHELOCAL_SCHED_RUNTIME_NET_H

/* getaddrinfo() and inet_ntop() need the POSIX API (preempt.h says so). */
#ifndef CL__RT_NEEDS_SIGNAL_API

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>

CL_BEGIN_DECLS

/* One getaddrinfo() call (a cl_blocking() function): 0 or its EAI_ code. */
struct cl__rt_lookup {
	char host[256];
	char port[16];
	int passive;
	int numeric; /* names refused: no DNS wait */
	struct addrinfo *res;
};

CL_INLINE long cl__rt_lookup_call(void *p)
{
	struct cl__rt_lookup *l = (struct cl__rt_lookup *)p;
	struct addrinfo hints;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (l->passive ? AI_PASSIVE : 0) | (l->numeric ? AI_NUMERICHOST : 0);
	return getaddrinfo(l->host[0] ? l->host : NULL, l->port, &hints, &l->res);
}

/* Resolve @hp into @l->res: 0, or -1 with errno (EINVAL: malformed, or a
 * name that does not resolve; ENOMEM; EAGAIN: try again later). */
CL_INLINE int cl__rt_resolve(struct cl__rt_lookup *l, const char *hp, int passive)
{
	const char *colon = hp ? strrchr(hp, ':') : NULL, *h = hp;
	size_t hl;
	long r;

	if (!colon || !colon[1] || strlen(colon + 1) >= sizeof(l->port)) {
		errno = EINVAL;
		return -1;
	}
	hl = (size_t)(colon - hp);
	if (hl >= 2 && hp[0] == '[' && hp[hl - 1] == ']') /* [v6]:port */
		h++, hl -= 2;
	if (hl >= sizeof(l->host)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(l->host, h, hl);
	l->host[hl] = '\0';
	strcpy(l->port, colon + 1);
	l->passive = passive;
	l->numeric = 1;
	l->res = NULL;
	r = cl__rt_lookup_call(l);
	if (r == EAI_NONAME && l->host[0]) { /* a name: off the worker in a task */
		l->numeric = 0;
		r = cl__rt_current() ? cl_blocking(cl__rt_lookup_call, l) : cl__rt_lookup_call(l);
	}
	if (r == 0)
		return 0;
	errno = r == EAI_MEMORY ? ENOMEM : r == EAI_AGAIN ? EAGAIN : r == EAI_SYSTEM ? errno : EINVAL;
	return -1;
}

/* A TCP socket on the first address of @hostport that takes it: bound and
 * listening (@backlog) when @passive, else connected (@timeout_ns). */
CL_INLINE int cl__rt_tcp(const char *hostport, int passive, int backlog, uint64_t timeout_ns)
{
	struct cl__rt_lookup l;
	struct addrinfo *ai;
	int fd = -1, one = 1, e = EINVAL;

	if (cl__rt_resolve(&l, hostport, passive) != 0)
		return -1;
	for (ai = l.res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd >= 0 && passive && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
		    bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog > 0 ? backlog : SOMAXCONN) == 0)
			break;
		if (fd >= 0 && !passive && cl_connect_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ns) == 0)
			break;
		e = errno;
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(l.res);
	if (fd < 0)
		cl__rt_set_errno(e);
	return fd;
}

/**
 * cl_listen_tcp() - a TCP socket listening on @hostport.
 * @hostport: "127.0.0.1:7070", "[::1]:0", ":7070" (every address), a host
 *            name; port 0 picks a free port (cl_sock_name() tells which).
 * @backlog: listen(2)'s backlog (<= 0: SOMAXCONN).
 *
 * The socket has SO_REUSEADDR and close-on-exec. Accept with
 * cl_accept() or cl_accept_timeout().
 *
 * Context: any thread (in a task a host name is looked up on a helper
 * thread).
 * Return: the socket, or -1 with errno (EINVAL: malformed @hostport or a
 * host that does not resolve; socket(2)'s, bind(2)'s, listen(2)'s:
 * EADDRINUSE, EACCES, ...).
 */
CL_INLINE int cl_listen_tcp(const char *hostport, int backlog)
{
	return cl__rt_tcp(hostport, 1, backlog, CL_FOREVER);
}

/**
 * cl_dial_tcp() - a TCP connection to @hostport.
 * @hostport: as cl_listen_tcp()'s (":port": this host's loopback).
 * @timeout_ns: the longest each address's connect may take (CL_FOREVER:
 *              no limit; outside a task connect(2) blocks as it does).
 *
 * In a task the task parks while it connects (cl_connect_timeout()).
 *
 * Context: any thread.
 * Return: the connected socket (close-on-exec), or -1 with errno (EINVAL
 * as cl_listen_tcp(); the last address's connect error: ECONNREFUSED,
 * ETIMEDOUT, ECANCELED, ...).
 */
CL_INLINE int cl_dial_tcp(const char *hostport, uint64_t timeout_ns)
{
	return cl__rt_tcp(hostport, 0, 0, timeout_ns);
}

/**
 * cl_sock_name() - the local address of socket @fd as "host:port".
 * @fd: a bound IPv4 or IPv6 socket.
 * @buf: where to write it ("127.0.0.1:7070", "[::1]:7070").
 * @n: @buf's size (64 is enough).
 *
 * Context: any thread.
 * Return: 0, or -1 with errno (EINVAL: NULL @buf, or not an IP socket;
 * ENOSPC: @n too small; getsockname(2)'s: EBADF, ENOTSOCK).
 */
CL_INLINE int cl_sock_name(int fd, char *buf, size_t n)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN], out[INET6_ADDRSTRLEN + 16];
	size_t len;

	if (CL__BAD_ARG(buf == NULL) || getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
		return -1;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(out, sizeof(out), "%s:%u", a, (unsigned int)ntohs(in->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)&ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(out, sizeof(out), "[%s]:%u", a, (unsigned int)ntohs(in6->sin6_port));
	} else {
		errno = EINVAL;
		return -1;
	}
	len = strlen(out);
	if (len >= n) {
		errno = ENOSPC;
		return -1;
	}
	memcpy(buf, out, len + 1);
	return 0;
}

CL_END_DECLS

#endif /* !CL__RT_NEEDS_SIGNAL_API */

#endif /* CACHELOCAL_SCHED_RUNTIME_NET_H */
