#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rpc_count_client.py - send exactly N requests of the RPC benchmark's
protocol (bench/rpc/rpc_proto.h) to a server on 127.0.0.1 and stop.

Usage: rpc_count_client.py PORT CONNS N REPLY_BYTES

It opens CONNS connections (TCP_NODELAY) and sends N requests one at a time,
round robin over the connections: each request is sent only after the reply
to the one before it arrived in full, so the server sees exactly one request
per wake-up and the same work for the same N (what scripts/rpc_callgrind.sh
counts instructions and system calls over). N may be 0 (connect only).

Then it prints "done N" on stdout and keeps the connections open until its
stdin reaches end of file, so that whoever runs it can stop the server first
and the server's count holds no connection teardown.
"""
import socket
import struct
import sys

MAGIC = 0x52504331
REQ_BYTES = 64
HDR_BYTES = 16


def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("rpc_count_client: server closed the connection")
        buf += chunk
    return bytes(buf)


def main():
    if len(sys.argv) != 5:
        raise SystemExit("usage: rpc_count_client.py PORT CONNS N REPLY_BYTES")
    port, conns, n, reply = (int(a) for a in sys.argv[1:])
    if conns < 1 or n < 0 or not HDR_BYTES <= reply <= 65536:
        raise SystemExit("rpc_count_client: bad CONNS, N or REPLY_BYTES")
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        socks.append(s)
    filler = b"\x5a" * (REQ_BYTES - HDR_BYTES)
    for seq in range(n):
        s = socks[seq % conns]
        s.sendall(struct.pack("=IIQ", MAGIC, reply, seq) + filler)
        got = recv_exact(s, reply)
        magic, rlen, rseq = struct.unpack_from("=IIQ", got)
        if magic != MAGIC or rlen != reply or rseq != seq:
            raise SystemExit("rpc_count_client: wrong reply to request %d" % seq)
    print("done %d" % n, flush=True)
    sys.stdin.read()
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
