// SPDX-License-Identifier: MIT
//
// bench/peers/runtime_go - the Go side of bench/peers/runtime_peers.c: the
// same three workloads with goroutines and channels, standard library only.
//
//	runtime_go version                    prints "go 1.19.8" (runtime.Version())
//	runtime_go pingpong same|two LOOPS    ns per round trip
//	runtime_go fib same|two N             ns per spawn
//	runtime_go storm same|two GROUPS LOOPS  ns per message
//
// The placement word is informational: the driver sets the CPU affinity and
// GOMAXPROCS (1 for same-cpu, 2 for two-cpu) before it starts this program;
// GOMAXPROCS is checked against it. Each workload runs once as a warm-up
// (a tenth of the round trips or messages, the whole fib tree), then once
// measured; the result is checked (message
// values and counts, the fib value) and a wrong one exits 1. Output on
// success: one line "ns_per_op X".
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	ppCap      = 1  // ping-pong channel capacity (as cachelocal's)
	stormPairs = 20 // senders and receivers per group (hackbench)
	stormMsg   = 100
	stormCap   = 63 // per-receiver channel slots
)

// fail reports and exits at once, from any goroutine (the others may be
// blocked for good on the broken workload).
func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "runtime_go: "+format+"\n", a...)
	os.Exit(1)
}

func pingpong(loops int) float64 {
	ping, pong := make(chan int, ppCap), make(chan int, ppCap)
	done := make(chan bool)
	start := time.Now()
	go func() {
		for i := 0; i < loops; i++ {
			v := <-ping
			if v != 2*i {
				fail("pingpong: got %d, want %d", v, 2*i)
			}
			pong <- v + 1
		}
		done <- true
	}()
	for i := 0; i < loops; i++ {
		ping <- 2 * i
		if v := <-pong; v != 2*i+1 {
			fail("pingpong: got %d, want %d", v, 2*i+1)
		}
	}
	<-done
	return float64(time.Since(start).Nanoseconds()) / float64(loops)
}

// fib(n) spawns fib(n-1) and fib(n-2) as goroutines and joins both.
func fibTask(n int, out chan<- int) {
	if n < 2 {
		out <- n
		return
	}
	c := make(chan int, 2)
	go fibTask(n-1, c)
	go fibTask(n-2, c)
	out <- <-c + <-c
}

func fibRef(n int) (int, int) {
	a, b := 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a, 2*b - 1 // fib(n), spawns (nodes of the tree, the root's included)
}

func fib(n int) float64 {
	want, calls := fibRef(n)
	c := make(chan int, 1)
	start := time.Now()
	go fibTask(n, c)
	got := <-c
	el := time.Since(start)
	if got != want {
		fail("fib(%d) = %d, want %d", n, got, want)
	}
	return float64(el.Nanoseconds()) / float64(calls)
}

func storm(groups, loops int) float64 {
	n := groups * 2 * stormPairs
	gate := make(chan struct{})
	var ready, wg sync.WaitGroup
	rx := make([]chan [stormMsg]byte, groups*stormPairs)
	for i := range rx {
		rx[i] = make(chan [stormMsg]byte, stormCap)
	}
	ready.Add(n)
	wg.Add(n)
	for g := 0; g < groups; g++ {
		grx := rx[g*stormPairs : (g+1)*stormPairs]
		for idx := 0; idx < stormPairs; idx++ {
			go func(idx int) { // sender
				defer wg.Done()
				var buf [stormMsg]byte
				for k := range buf {
					buf[k] = byte(idx)
				}
				ready.Done()
				<-gate
				for i := 0; i < loops; i++ {
					for r := 0; r < stormPairs; r++ {
						buf[1] = byte(i)
						grx[r] <- buf
					}
				}
			}(idx)
			go func(idx int) { // receiver: from each sender, loops messages in order
				defer wg.Done()
				var got [stormPairs]int
				ready.Done()
				<-gate
				for i := 0; i < loops*stormPairs; i++ {
					m := <-grx[idx]
					s := int(m[0])
					if s >= stormPairs || m[1] != byte(got[s]) || m[2] != m[0] {
						fail("storm: wrong or reordered message")
					}
					got[s]++
				}
				for s := 0; s < stormPairs; s++ {
					if got[s] != loops {
						fail("storm: %d messages from sender %d, want %d", got[s], s, loops)
					}
				}
			}(idx)
		}
	}
	ready.Wait()
	start := time.Now()
	close(gate)
	wg.Wait()
	el := time.Since(start)
	return float64(el.Nanoseconds()) / float64(groups*stormPairs*stormPairs*loops)
}

func atoi(s string, min int) int {
	v, err := strconv.Atoi(s)
	if err != nil || v < min {
		fail("bad number '%s'", s)
	}
	return v
}

func main() {
	a := os.Args[1:]
	if len(a) == 1 && a[0] == "version" {
		fmt.Println("go " + strings.TrimPrefix(runtime.Version(), "go"))
		return
	}
	if len(a) < 3 || (a[1] != "same-cpu" && a[1] != "two-cpu") {
		fmt.Fprintln(os.Stderr, "usage: runtime_go version | pingpong|fib|storm same-cpu|two-cpu SIZE [LOOPS]")
		os.Exit(2)
	}
	procs := 1
	if a[1] == "two-cpu" {
		procs = 2
	}
	if runtime.GOMAXPROCS(0) != procs {
		fail("GOMAXPROCS is %d, the placement %s needs %d", runtime.GOMAXPROCS(0), a[1], procs)
	}
	var ns float64
	switch a[0] {
	case "pingpong":
		loops := atoi(a[2], 1)
		pingpong(loops/10 + 1)
		ns = pingpong(loops)
	case "fib":
		n := atoi(a[2], 2)
		fib(n) // warm-up: the whole tree, so stacks and heap are grown
		ns = fib(n)
	case "storm":
		if len(a) < 4 {
			fail("storm needs GROUPS LOOPS")
		}
		groups, loops := atoi(a[2], 1), atoi(a[3], 1)
		storm(groups, loops/10+1)
		ns = storm(groups, loops)
	default:
		fail("unknown workload '%s'", a[0])
	}
	fmt.Printf("ns_per_op %.3f\n", ns)
}
