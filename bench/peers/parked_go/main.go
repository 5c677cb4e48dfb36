// SPDX-License-Identifier: MIT
//
// bench/peers/parked_go - the Go side of bench/parked.c: many goroutines
// parked at once, standard library only.
//
//	parked_go version     prints "go 1.19.8"
//	parked_go N           one sample (a fresh process: Go's first round)
//
// GOMAXPROCS is set by the driver. N goroutines each count themselves
// parked under a mutex and block on a channel receive; once all are
// parked, the channel is closed and every goroutine waited for. Prints
// "spawn_ns S join_ns J rss_kib R mode goroutines": spawn+park and
// wake+join per goroutine in ns, the resident set the parked goroutines
// added per goroutine in KiB (/proc/self/statm).
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

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "parked_go: "+format+"\n", a...)
	os.Exit(1)
}

func rssKiB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		fail("statm: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		fail("statm: %q", b)
	}
	pages, err := strconv.Atoi(f[1])
	if err != nil {
		fail("statm: %q", b)
	}
	return float64(pages) * float64(os.Getpagesize()) / 1024
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("go %s\n", runtime.Version()[2:])
		return
	}
	if len(os.Args) != 2 {
		fail("usage: parked_go N | version")
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 1 {
		fail("bad count %q", os.Args[1])
	}
	var mu sync.Mutex
	var done sync.WaitGroup
	parked := 0
	release := make(chan struct{})
	rss0 := rssKiB()
	t0 := time.Now()
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			mu.Lock()
			parked++
			mu.Unlock()
			<-release
			done.Done()
		}()
	}
	for {
		mu.Lock()
		p := parked
		mu.Unlock()
		if p == n {
			break
		}
		runtime.Gosched()
	}
	t1 := time.Now()
	rss1 := rssKiB()
	close(release)
	done.Wait()
	t2 := time.Now()
	fmt.Printf("spawn_ns %.1f join_ns %.1f rss_kib %.3f mode goroutines\n",
		float64(t1.Sub(t0).Nanoseconds())/float64(n), float64(t2.Sub(t1).Nanoseconds())/float64(n),
		(rss1-rss0)/float64(n))
}
