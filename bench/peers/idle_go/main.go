// SPDX-License-Identifier: MIT
//
// bench/peers/idle_go - the Go side of bench/idle.c: what an idle Go
// runtime costs, standard library only.
//
//	idle_go version                                   prints "go 1.19.8"
//	idle_go WORKERS PARKED WINDOW_MS SETTLE_MS WINDOWS [SLEEP_MS]
//
// GOMAXPROCS is set by the driver (= WORKERS, checked). One goroutine runs
// and is waited for; PARKED goroutines then block on a channel receive;
// with SLEEP_MS > 0, one goroutine sleeps SLEEP_MS at a time (time.Sleep);
// after SETTLE_MS, WINDOWS windows of WINDOW_MS follow, the main goroutine
// asleep (time.Sleep) through each. Per window one line:
// "cpu_us U csw N": the process's user + system CPU time (µs) and its
// voluntary + involuntary context switches (getrusage(RUSAGE_SELF)).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "idle_go: "+format+"\n", a...)
	os.Exit(1)
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		fail("bad number %q", s)
	}
	return v
}

func usec(tv syscall.Timeval) int64 {
	return int64(tv.Sec)*1000000 + int64(tv.Usec)
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("go %s\n", runtime.Version()[2:])
		return
	}
	if len(os.Args) != 6 && len(os.Args) != 7 {
		fail("usage: idle_go WORKERS PARKED WINDOW_MS SETTLE_MS WINDOWS [SLEEP_MS] | version")
	}
	sleep := time.Duration(0)
	if len(os.Args) == 7 {
		sleep = time.Duration(atoi(os.Args[6])) * time.Millisecond
	}
	workers, parked := atoi(os.Args[1]), atoi(os.Args[2])
	window := time.Duration(atoi(os.Args[3])) * time.Millisecond
	settle := time.Duration(atoi(os.Args[4])) * time.Millisecond
	windows := atoi(os.Args[5])
	if p := runtime.GOMAXPROCS(0); p != workers {
		fail("GOMAXPROCS is %d, want %d", p, workers)
	}
	done := make(chan bool)
	go func() { done <- true }()
	<-done
	block := make(chan int)
	var started sync.WaitGroup
	for i := 0; i < parked; i++ {
		started.Add(1)
		go func() {
			started.Done()
			<-block
		}()
	}
	started.Wait()
	stop := make(chan bool)
	if sleep > 0 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(sleep)
			}
		}()
	}
	time.Sleep(settle)
	for w := 0; w < windows; w++ {
		var a, b syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &a) != nil {
			fail("getrusage")
		}
		time.Sleep(window)
		if syscall.Getrusage(syscall.RUSAGE_SELF, &b) != nil {
			fail("getrusage")
		}
		cpu := usec(b.Utime) - usec(a.Utime) + usec(b.Stime) - usec(a.Stime)
		csw := (b.Nvcsw - a.Nvcsw) + (b.Nivcsw - a.Nivcsw)
		fmt.Printf("cpu_us %d csw %d\n", cpu, csw)
	}
	close(block)
	close(stop)
}
