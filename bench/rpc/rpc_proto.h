/* SPDX-License-Identifier: MIT */
/*
 * bench/rpc/rpc_proto.h - the wire format of the RPC benchmark, shared by
 * the load generator (rpc.c) and the C servers (server_epoll.c,
 * server_cachelocal.c); server_go/main.go writes the same.
 *
 * A request is RPC_REQ_BYTES (64) bytes:
 *	u32 magic (RPC_MAGIC), u32 reply length, u64 sequence number,
 *	48 bytes of filler
 * (native byte order: client and server share the machine). The reply is
 * `reply length` bytes (RPC_REPLY_MIN..RPC_REPLY_MAX): the request's first
 * 16 bytes, then filler. A connection carries requests back to back and the
 * server answers them in order; the client may send the next request before
 * the previous reply arrived (pipelining: an open-loop client does when a
 * server falls behind). A request with a wrong magic or length ends the
 * connection.
 *
 * A server is started as `SERVER WORKERS` with its CPU affinity already
 * set; it listens on 127.0.0.1 on a port the kernel picks and prints one
 * line "port N NAME" (NAME: what it is, a version where it has one) before
 * it serves; it serves until it is killed (SIGTERM).
 */
#ifndef CACHELOCAL_BENCH_RPC_PROTO_H
#define CACHELOCAL_BENCH_RPC_PROTO_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RPC_MAGIC 0x52504331u /* "RPC1" */
#define RPC_REQ_BYTES 64
#define RPC_HDR_BYTES 16
#define RPC_REPLY_MIN RPC_HDR_BYTES
#define RPC_REPLY_MAX 65536

struct rpc_hdr {
	uint32_t magic;
	uint32_t reply_len;
	uint64_t seq;
};

/* The request for @seq asking @reply_len bytes back, in @buf (RPC_REQ_BYTES). */
static inline void rpc_req_fill(unsigned char *buf, uint64_t seq, uint32_t reply_len)
{
	struct rpc_hdr h = { RPC_MAGIC, reply_len, seq };

	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), 0x5a, RPC_REQ_BYTES - sizeof(h));
}

/*
 * rpc_serve_buf() - the replies to the complete requests in @in (@inlen
 * bytes), appended to @out (room for @outcap bytes). Return: the bytes of
 * @in consumed (whole requests only; stops early when @out is full), or -1
 * on a malformed request. *@outlen: the bytes now in @out.
 */
static inline long rpc_serve_buf(const unsigned char *in, size_t inlen, unsigned char *out,
				 size_t outcap, size_t *outlen)
{
	size_t used = 0;

	while (inlen - used >= RPC_REQ_BYTES) {
		struct rpc_hdr h;

		memcpy(&h, in + used, sizeof(h));
		if (h.magic != RPC_MAGIC || h.reply_len < RPC_REPLY_MIN || h.reply_len > RPC_REPLY_MAX)
			return -1;
		if (outcap - *outlen < h.reply_len)
			break;
		memcpy(out + *outlen, &h, sizeof(h));
		memset(out + *outlen + sizeof(h), 0xa5, h.reply_len - sizeof(h));
		*outlen += h.reply_len;
		used += RPC_REQ_BYTES;
	}
	return (long)used;
}

/*
 * rpc_listen() - a listening TCP socket on 127.0.0.1, port picked by the
 * kernel (@flags: SOCK_NONBLOCK or 0). Return: the fd (*@port: its port),
 * or -1 with errno.
 */
static inline int rpc_listen(int flags, int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4096) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

#endif /* CACHELOCAL_BENCH_RPC_PROTO_H */
