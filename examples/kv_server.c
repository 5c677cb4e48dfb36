/* SPDX-License-Identifier: MIT */
/*
 * examples/kv_server.c - a TCP key-value server on the runtime: one task per
 * connection, lines "SET key value" (-> OK), "GET key" (-> the value or
 * NOTFOUND), anything else -> ERR; an idle connection gets TIMEOUT after
 * 5 s and is closed; a stats task prints "requests: N" every second from a
 * per-CPU counter; SIGINT or SIGTERM stops accepting, lets open connections
 * finish for up to 2 s, ends the rest, prints the total and exits 0.
 *
 * Build (from the top of the source tree, against an installed cachelocal):
 *	cc -std=c11 -O2 examples/kv_server.c -o kv_server $(pkg-config --cflags --libs cachelocal-sched)
 *	./kv_server [PORT]      # default 7070; 0 picks a free port
 * Tested by tests/scripts/test_kv_server.py.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cachelocal/counter.h>
#include <cachelocal/sched/runtime.h>

#define SEC 1000000000ULL

struct entry { struct entry *next; char *key, *val; };

static struct entry *table[4096];
static struct cl_mutex table_lock = CL_MUTEX_INIT(table_lock);
static struct cl_counter requests; /* zeroed: its first add sets it up */
static struct cl_waitgroup conns;
static struct cl_runtime *rt;

static struct entry **slot(const char *key)
{
	unsigned long h = 5381;
	struct entry **e;

	for (const char *p = key; *p; p++)
		h = h * 33 + (unsigned char)*p;
	for (e = &table[h % 4096]; *e && strcmp((*e)->key, key); e = &(*e)->next)
		;
	return e;
}

/* One request line (no '\n'), answered into @out. */
static void handle(char *line, char *out, size_t n)
{
	char *key = strchr(line, ' '), *val = key ? strchr(key + 1, ' ') : NULL;
	struct entry **e;

	cl_counter_add(&requests, 1);
	if (key)
		*key++ = '\0';
	if (val)
		*val++ = '\0';
	if (!key || !*key || strcmp(line, val ? "SET" : "GET"))
		return (void)snprintf(out, n, "ERR\n");
	cl_mutex_lock(&table_lock);
	e = slot(key);
	if (val && !*e && (*e = calloc(1, sizeof(**e))))
		(*e)->key = strdup(key);
	if (val && *e) {
		free((*e)->val);
		(*e)->val = strdup(val);
	}
	snprintf(out, n, "%s\n", val ? "OK" : *e ? (*e)->val : "NOTFOUND");
	cl_mutex_unlock(&table_lock);
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096], out[4096], *nl;
	size_t have = 0;
	ssize_t r;

	while ((r = cl_read_timeout(fd, buf + have, sizeof(buf) - have, 5 * SEC)) > 0) {
		have += (size_t)r;
		while ((nl = memchr(buf, '\n', have))) {
			*nl = '\0';
			handle(buf, out, sizeof(out));
			if (cl_write(fd, out, strlen(out)) < 0)
				break;
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have);
		}
		if (have == sizeof(buf)) /* a line longer than the buffer */
			break;
	}
	if (r < 0 && errno == ETIMEDOUT)
		cl_write(fd, "TIMEOUT\n", 8);
	cl_close(fd);
	cl_waitgroup_done(&conns);
	return NULL;
}

static void *acceptor(void *arg)
{
	struct cl_spawn_attr detached = { .detached = 1 };
	int fd;

	while ((fd = cl_accept((int)(intptr_t)arg, NULL, NULL)) >= 0) {
		cl_waitgroup_add(&conns, 1);
		if (!cl_spawn(rt, &detached, serve, (void *)(intptr_t)fd))
			cl_close(fd), cl_waitgroup_done(&conns);
	}
	return NULL;
}

static void *stats(void *done)
{
	int x;

	while (cl_chan_recv_timeout(done, &x, SEC) < 0 && errno == ETIMEDOUT)
		printf("requests: %lld\n", (long long)cl_counter_read(&requests)), fflush(stdout);
	return NULL;
}

/* Serve until SIGINT or SIGTERM; then drain for up to 2 s. */
static void *server(void *arg)
{
	static const int sigs[] = { SIGINT, SIGTERM };
	struct cl_chan *sig = cl_signal_chan(rt, sigs, 2, 2), *done = cl_chan_create(sizeof(int), 1);
	char addr[64], name[64];
	int ls, s;

	snprintf(addr, sizeof(addr), "127.0.0.1:%s", (const char *)arg);
	if (!sig || !done || (ls = cl_listen_tcp(addr, 0)) < 0 || cl_sock_name(ls, name, sizeof(name)))
		return perror("kv_server"), (void *)1;
	printf("listening on %s\n", name), fflush(stdout);
	cl_spawn(rt, &(struct cl_spawn_attr){ .detached = 1 }, acceptor, (void *)(intptr_t)ls);
	cl_spawn(rt, &(struct cl_spawn_attr){ .detached = 1 }, stats, done);
	cl_chan_recv(sig, &s);
	cl_close(ls); /* the acceptor's cl_accept() fails: no new connection */
	cl_waitgroup_wait_timeout(&conns, 2 * SEC);
	cl_chan_close(done);
	return NULL;
}

int main(int argc, char **argv)
{
	void *failed = (void *)1;
	struct cl_rt_task *t;

	if (argc > 1 && (!strcmp(argv[1], "--help") || strspn(argv[1], "0123456789") != strlen(argv[1])))
		return printf("usage: kv_server [PORT]\n"), strcmp(argv[1], "--help") ? 2 : 0;
	if (!(rt = cl_runtime_create(NULL)) || !(t = cl_spawn(rt, NULL, server, argc > 1 ? argv[1] : "7070")))
		return perror("kv_server"), 1;
	cl_join(t, &failed);
	printf("total requests: %lld\n", (long long)cl_counter_read(&requests));
	cl_runtime_shutdown(rt); /* the connections still open: their reads end (ECANCELED) */
	cl_runtime_destroy(rt);
	return failed ? 1 : 0;
}
