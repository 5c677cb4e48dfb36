// SPDX-License-Identifier: MIT
//
// bench/rpc/server_go - the RPC benchmark's Go server: one goroutine per
// connection with the standard library's net package (its netpoller parks
// the goroutine, not the thread). GOMAXPROCS is set by the driver to the
// cachelocal server's worker count; the WORKERS argument is checked
// against it. Each goroutine reads what the socket has, answers every
// complete request in one buffer and writes it in one call, as the C
// servers do. Protocol and start-up line: rpc_proto.h.
package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
)

const (
	magic    = 0x52504331
	reqBytes = 64
	hdrBytes = 16
	replyMin = hdrBytes
	replyMax = 65536
	rxCap    = 16384
	txCap    = 256 * 1024
)

func serve(c net.Conn) {
	defer c.Close()
	rx := make([]byte, rxCap)
	tx := make([]byte, 0, txCap)
	have := 0
	for {
		n, err := c.Read(rx[have:])
		if err != nil {
			return
		}
		have += n
		used := 0
		tx = tx[:0]
		for have-used >= reqBytes {
			req := rx[used : used+reqBytes]
			m := binary.LittleEndian.Uint32(req[0:4])
			rl := int(binary.LittleEndian.Uint32(req[4:8]))
			if m != magic || rl < replyMin || rl > replyMax {
				return
			}
			if len(tx)+rl > cap(tx) {
				if _, err := c.Write(tx); err != nil {
					return
				}
				tx = tx[:0]
			}
			start := len(tx)
			tx = tx[:start+rl]
			copy(tx[start:], req[:hdrBytes])
			for i := start + hdrBytes; i < start+rl; i++ {
				tx[i] = 0xa5
			}
			used += reqBytes
		}
		if len(tx) > 0 {
			if _, err := c.Write(tx); err != nil {
				return
			}
		}
		copy(rx, rx[used:have])
		have -= used
	}
}

func main() {
	if len(os.Args) > 1 {
		w, err := strconv.Atoi(os.Args[1])
		if err != nil || w != runtime.GOMAXPROCS(0) {
			fmt.Fprintf(os.Stderr, "rpc_go: GOMAXPROCS %d, want %s\n", runtime.GOMAXPROCS(0), os.Args[1])
			os.Exit(1)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rpc_go:", err)
		os.Exit(1)
	}
	fmt.Printf("port %d %s (goroutine per connection, GOMAXPROCS=%d)\n",
		l.Addr().(*net.TCPAddr).Port, runtime.Version(), runtime.GOMAXPROCS(0))
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "rpc_go:", err)
			os.Exit(1)
		}
		go serve(c)
	}
}
