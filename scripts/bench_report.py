#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_report.py - run the benchmarks and write report.md, report.json, plots.

Usage: bench_report.py --out DIR --mode quick|long|smoke BENCH_BINARY...
Env:   CC, CFLAGS_PROG (printed in the machine header).

Each binary runs with --json (one JSON object per line), appended to
DIR/results.jsonl. The experiments of EXPERIMENTS are then read from those
lines: before and after are the medians of two variants of one case, with
their min-max over the runs.

Verdict rule (docs/benchmarks.md): gain = before/after for lower-is-better
metrics, after/before otherwise (> 1: the technique wins).
  reproduced    gain > 1 and the two sides' min-max ranges do not overlap
  contrary      gain < 1 and the ranges do not overlap
  within noise  the ranges overlap (reason: the overlap), or a side's spread
                max/min exceeds SPREAD_BOUND after one repeat (reason given)
Noise: if the 1-minute load average per CPU exceeds LOAD_BOUND before a
benchmark, or an experiment's spread exceeds SPREAD_BOUND, that benchmark
runs again once and the run with the smaller spread is kept.
Benchmarks built once per variant (GROUPS) run interleaved: each binary in
turn, A B A B ..., ROUNDS invocations each (each invocation does its usual
>= 5 runs); a case's median and min-max are over the invocations' medians
(aggregate()). Cachegrind counts (DETERMINISTIC) run each binary once.

Peers (bench/peers/, docs/benchmarks.md): every binary under a peers/
directory runs once after the experiments (each measures ours and theirs
interleaved, >= 5 runs, itself); every line with "kind": "peer", from any
binary, becomes one entry of report.json's "peers" array and one row of
report.md's Peers section, judged against PEER_GOALS where the project sets
a goal. --peer-skipped PACKAGE (repeatable) records a peer not built
because its package is missing: listed as skipped, nothing measured.

Floors (FLOOR_GOALS): bench/counter and bench/ids run ROUNDS times more,
interleaved, after the experiments; their ratio lines against librseq and
against the cid allocator's private-word floor become report.json's
"floors" object and report.md's Floors section, each ratio's median over
the rounds judged against its bound (their "skipped" lines are listed).
--floor-build CC=DIR (repeatable) adds the same two benches built by
another compiler (the Makefile's clang builds): every build runs once per
round, its rows named by the compiler (librseq's inline operations are
built by the same compiler, so each ratio compares like with like).

RPC (bench/rpc/rpc, run with the peers): its "kind": "rpc" lines become
report.json's "rpc" object and report.md's RPC section (max throughput per
server, the latency table at each load level, a latency-vs-load plot per
reply size) with RPC_GOALS judged on the measured medians; its
"runtime-rpc" peer lines join the peers like any other.
"""
import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cachemodel  # noqa: E402

SCHEMA_VERSION = 1
SPREAD_BOUND = 3.0   # max/min of one side's runs
LOAD_BOUND = 1.0     # 1-minute load average per CPU
MODEL_TOLERANCE = 0.05

# E5 on the real sched/ code, cachegrind LL misses per cold walk, per tree
# and walk: E5 / E5e / E5h (depth 3 x width 10), E5b / E5be / E5bh (depth 5 x
# width 4). The seed's figures are the kernel's LLC misses per tree.
E5_TREES = (("d3w10", "", "depth 3 x width 10 (1110 groups)",
             "LLC misses -12% (AMD) .. -32% (Intel), kernel"),
            ("d5w4", "b", "depth 5 x width 4 (1364 groups)",
             "LLC misses -8% (AMD) .. -28% (Intel), kernel"))
# (walk, id suffix, what it runs, why it gains what it gains: the lines it
# reads, docs/benchmarks.md, E5)
E5_WALKS = (("blocked-load", "", "cl_tg_update_blocked_load() on CPU 0",
             "per group it reads the group's first line, two lines of its queue and two of its "
             "entity: 5 lines co-allocated against 7 and a line of each pointer array, so about "
             "-28% on a cold cache"),
            ("dequeue+enqueue", "e", "cl_rq_dequeue(SLEEP)+cl_rq_enqueue(WAKEUP) of every leaf task",
             "this walk goes up by se->parent and se->cfs_rq, pointers in the entity itself, and "
             "meets the pointer arrays only in cl_cfs_rq_se() and cl_tg_cfs_rq(): co-allocation "
             "saves those lookups' lines, not the lines of the walk"),
            ("throttle", "h", "one bandwidth period: every top-level group throttled by "
                              "cl_rq_put_prev() and unthrottled by cl_rq_bandwidth_update()",
             "the period walks every group's queue twice (cl_rq_bandwidth_update() repeats its "
             "pass), and the second pass loses lines to conflict misses: the per-CPU pool puts "
             "CPU 0's slice of every 512 KiB chunk (8 CPUs x the 64 KiB stride) on the same half "
             "of the model LL's sets (1 MiB, 8 ways of 128 KiB), where the pointer arrays' own "
             "allocations spread over all sets (cachegrind with 16 ways of 64 KiB, one stride, "
             "takes most of the conflict away); which sets the chunks land on moves with the "
             "process's addresses, so these rows move between runs"))
E5_MISSES = [
    dict(id="E5" + tid + wid, technique="T5 co-allocated cfs_rq+se (LL misses, %s %s)" % (walk, tree),
         claim=claim, bench="group_misses", case="LLd miss cold %s %s" % (walk, tree),
         before="pointer arrays", after="co-allocated", hib=False,
         rows_suffix=" %s %s" % (walk, tree),
         scope="real sched/ code, %s, %s; cachegrind LL data misses per walk after a 4 MiB "
               "flush; group_tree --misses vs group_tree_ptr_arrays --misses" % (shape, what),
         why=why)
    for tree, tid, shape, claim in E5_TREES for walk, wid, what, why in E5_WALKS]

# id, technique, seed claim, bench, case, before variant, after variant,
# higher_is_better, what the measurement is (honest scope).
EXPERIMENTS = [
    dict(id="E1", technique="T1 rq lock off the pick-path line",
         claim="-4.6% cycles in sched_balance_rq (kernel)", bench="sched_layout",
         case="T1 rq pick reads vs remote lock", before="CL_RQ_LAYOUT_SCATTERED",
         after="default", hib=False,
         scope="real struct cl_rq: pick-path reads on one CPU while another CPU runs "
               "cl_rq_lock/cl_rq_update_clock/cl_rq_unlock on it"),
    dict(id="E2", technique="T2 se.avg on its own line",
         claim="pipe 27.03 -> 25.11 us/op (1.08x)", bench="sched_layout",
         case="T2 se reads vs avg stores", before="CL_SE_AVG_INLINE", after="default", hib=False,
         scope="real struct cl_sched_entity: cfs_rq/my_q/parent/vruntime reads on one CPU "
               "while another stores its avg"),
    dict(id="E1p", technique="T1 rq lock off the pick-path line (pipe)",
         claim="-4.6% cycles in sched_balance_rq (kernel)", bench="pipe_layout",
         case="pipe round trip", placement="cross-cpu", before="CL_RQ_LAYOUT_SCATTERED",
         after="default", hib=False,
         scope="bench/pipe --cross-cpu on the runtime built with each struct cl_rq layout"),
    dict(id="E2p", technique="T2 se.avg on its own line (pipe)",
         claim="pipe 27.03 -> 25.11 us/op (1.08x)", bench="pipe_layout",
         case="pipe round trip", placement="cross-cpu", before="CL_SE_AVG_INLINE",
         after="default", hib=False,
         scope="bench/pipe --cross-cpu on the runtime built with each struct cl_sched_entity layout"),
    dict(id="E3", technique="T3 cache-local cids (RECENT)",
         claim="mm_cid/cache-local 1.1x-16.7x per burst", bench="cid_bursts",
         case="16KiB burst, 0 ms delay", before="NAIVE",
         after="RECENT", hib=False, scope="real cid.h on this machine's CPUs"),
    dict(id="E4", technique="T4 balancer detaches from the tail (refill)",
         claim="hackbench 0.644 -> 0.637 s", bench="refill", case="first pass after migration",
         before="head", after="tail", hib=False,
         scope="runtime, 2 workers, 16 tasks with 64 KiB working sets started on worker 0: the "
               "first pass of a moved task; refill vs refill_head (-DCL_DETACH_FROM_HEAD)"),
    dict(id="E4t", technique="T4 balancer detaches from the tail (throughput)",
         claim="hackbench 0.644 -> 0.637 s", bench="refill", case="throughput",
         before="head", after="tail", hib=True, scope="as E4: passes per ms, all tasks"),
    dict(id="E4s", technique="T4 balancer detaches from the tail (simulated ages)",
         claim="hackbench 0.644 -> 0.637 s", bench="balance_tail",
         case="N=64 cost=500us age", before="head (before)", after="tail (after)", hib=True,
         scope="simulated pull: ages of the detached tasks (ms since they ran; older = colder "
               "= the right ones to move)"),
    dict(id="E4m", technique="T4 MRU move on the pick path (its cost)",
         claim="the added list_move() costs nothing (reviewer's taskset 1 perf bench sched pipe)",
         bench="pipe_mru", case="pipe round trip", placement="same-cpu",
         before="CL_PICK_NO_MRU_MOVE", after="default", hib=False,
         scope="bench/pipe --same-cpu on the runtime built with and without the move of the "
               "picked task to the head of cfs_tasks (pipe, pipe_no_mru: -DCL_PICK_NO_MRU_MOVE); "
               "gain < 1 is the move's cost"),
    *E5_MISSES,
    dict(id="E5t", technique="T5 co-allocated cfs_rq+se per CPU (walk time)",
         claim="kernel IPC +3% .. +25%", bench="group_tree", case="blocked-load walk warm d3w10",
         before="pointer arrays", after="co-allocated", hib=False,
         rows_prefix="blocked-load walk warm ",
         scope="real sched/ code: cl_tg_update_blocked_load() on CPU 0 over the depth 3 x "
               "width 10 tree (1110 groups, a task per leaf), warm; group_tree vs "
               "group_tree_ptr_arrays (-DCL_GROUP_POINTER_ARRAYS)"),
    dict(id="E5c", technique="T5 co-allocated cfs_rq+se per CPU (cold walk)",
         claim="LLC misses -8% .. -32% (kernel)", bench="group_tree",
         case="blocked-load walk cold d3w10", before="pointer arrays", after="co-allocated",
         hib=False, rows_prefix="blocked-load walk cold ",
         scope="as E5t, each walk after streaming over 64 MiB"),
    dict(id="E5q", technique="T5 co-allocated cfs_rq+se per CPU (dequeue+enqueue)",
         claim="kernel IPC +3% .. +25%", bench="group_tree", case="dequeue+enqueue d3w10",
         before="pointer arrays", after="co-allocated", hib=False,
         rows_prefix="dequeue+enqueue ",
         scope="real sched/ code: cl_rq_dequeue(SLEEP)+cl_rq_enqueue(WAKEUP) of each leaf "
               "task through the hierarchy, ns per task"),
    dict(id="E5u", technique="T5 co-allocated cfs_rq+se per CPU (throttle+unthrottle)",
         claim="kernel IPC +3% .. +25%", bench="group_tree", case="throttle+unthrottle d3w10",
         before="pointer arrays", after="co-allocated", hib=False,
         rows_prefix="throttle+unthrottle ",
         scope="real sched/ code: one bandwidth period over the depth 3 x width 10 tree, each "
               "top-level group (1 ms quota) throttled in cl_rq_put_prev() and unthrottled by "
               "cl_sched_bandwidth_refill()+cl_rq_bandwidth_update(), ns per period"),
    dict(id="rqscale", technique="EEVDF timeline: rq step at 100,000 vs 16 runnable tasks",
         claim="O(log n): the step at 100,000 tasks <= 3x the step at 16", bench="rqscale",
         case="rq step", before="N=16", after="N=100000", hib=False, rows_prefix="rq step",
         ratio_text="step(100,000) / step(16)",
         scope="one rq, one pinned thread: wake (CL_ENQUEUE_WAKEUP) + put_prev + pick + sleep "
               "per step through the public API; gain = step(16) / step(100,000), so 1/3 is the "
               "goal's bound; every size in the rows and the plot"),
    dict(id="rqrand", technique="EEVDF timeline, random sleeper: rq step at 100,000 vs 16 tasks",
         claim="a random task's lines are cold at 100,000 tasks: shown, no goal", bench="rqscale",
         case="random sleeper step", before="N=16", after="N=100000", hib=False,
         rows_prefix="random sleeper", ratio_text="step(100,000) / step(16)",
         scope="as rqscale, but the task put to sleep each step is a random queued task (not "
               "the one just picked); gain = step(16) / step(100,000)"),
    dict(id="rqfloor", technique="EEVDF timeline, random sleeper: rq step vs its memory floor",
         claim="at 100,000 tasks the step costs little beyond the lines it must touch",
         bench="rqscale", case="random sleeper step", before_case="random sleeper floor",
         before="N=100000", after="N=100000", hib=False, rows_prefix="random sleeper",
         ratio_text="step(100,000) / floor(100,000)",
         scope="rqrand's step at 100,000 tasks beside its memory floor, run by run in one "
               "process: the same random task per step, a dependent walk down an implicit "
               "balanced tree of task-sized nodes to it and a store into its line (the lines any "
               "tree-based runqueue must touch to dequeue it); gain = floor / step, so 1/1.5 is "
               "the goal's bound"),
    dict(id="rqfib", technique="runtime spawn+join (fib(22), 28,656 spawns)",
         claim="<= 1 us per spawn on the default workers", bench="rqscale",
         case="fib spawn+join", before="runtime 1 worker", after="runtime", hib=False,
         scope="bench/rqscale: fib(n) spawns fib(n-1) and joins it, warm runtime; default "
               "workers (after) vs one worker (before): ns per spawn"),
    dict(id="counter", technique="rseq per-CPU counter vs shared atomic",
         claim="per-CPU beats a shared atomic", bench="counter", case="add 2 threads",
         before="shared-atomic", after="rseq-counter", hib=True, scope="2 pinned threads"),
    dict(id="objcache", technique="per-CPU object cache vs malloc",
         claim="per-CPU cache beats malloc", bench="objcache", case=None,
         before="malloc", after="objcache", hib=None, scope="first case of bench/objcache"),
    dict(id="brlock", technique="per-CPU reader lock vs pthread rwlock",
         claim="reader pair cheaper", bench="brlock", case="read pair 2 threads cpu",
         before="pthread-rwlock", after="brlock", hib=False, scope="2 threads, CPU time"),
    dict(id="pipe", technique="cachelocal runtime vs kernel threads (pipe, one CPU)",
         claim="peer comparison", bench="pipe", case=None, before="kernel perf -T",
         after="cachelocal", hib=False, scope="perf bench sched pipe -T on one CPU vs "
         "the runtime's two tasks on one worker"),
    dict(id="messaging", technique="cachelocal runtime vs kernel (messaging)",
         claim="peer comparison", bench="messaging", case="messaging", before="kernel perf -t",
         after="cachelocal", hib=None, scope="perf bench sched messaging shape"),
]

LOWER_UNITS = ("ns", "us", "ms", "misses", "cycles", "s/")

# The project's goals for this machine (quick mode) as a minimum gain; a goal
# above 1.0 is met only with a `reproduced` verdict, a gain of 1.0 ("no worse")
# by anything but `contrary`, a bound below 1.0 (rqscale: the step at 100,000
# may cost up to 3x the step at 16) by the median gain reaching it.
# E5*: LL misses -25% or better = gain >= 1/0.75.
GOALS = {"E1": (3.0, "gain >= 3x"), "E2": (1.5, "gain >= 1.5x"), "rqscale": (1 / 3.0, "step(100,000) <= 3x step(16)"),
         "rqfloor": (1 / 1.5, "step(100,000) <= 1.5x its memory floor"),
         "E4": (1.0, "tail refill no slower"), "E4t": (1.0, "throughput no lower")}
GOALS.update({i: (1 / 0.75, "LL misses -25% or better")
              for i in ("E5", "E5e", "E5h", "E5b", "E5be", "E5bh")})
# Goals on the "after" side's median itself (its unit), met when at or below.
AFTER_GOALS = {"rqfib": (1000.0, "<= 1000 ns per spawn (default workers)")}
# Deterministic rows (cachegrind counts, min = max): a difference within this
# fraction is `within noise` (as the model's tolerance).
DETERMINISTIC_TOLERANCE = 0.05
# bench/vcpu_speed's ratio above which the report calls the CPUs uneven (a
# host running two vCPUs on one busy core shows ~1.8x).
UNEVEN_BOUND = 1.25


def goal_of(eid, gain, verdict, after=None):
    """(goal text, met: True/False, or None when there is no goal or no number)."""
    if eid in AFTER_GOALS:
        bound, text = AFTER_GOALS[eid]
        if after is None or verdict == "not run":
            return text, None
        return text, after <= bound
    if eid not in GOALS:
        return None, None
    need, text = GOALS[eid]
    if gain is None or verdict == "not run":
        return text, None
    if need < 1.0:
        return text, gain >= need
    if need == 1.0:
        return text, verdict != "contrary"
    return text, verdict == "reproduced" and gain >= need

# Peer goals: (structure, peer name prefix, workload prefix, minimum gain,
# text). gain = theirs/ours for lower-is-better units (> 1: cachelocal ahead).
PEER_GOALS = [
    ("objcache", "jemalloc", "cross-CPU", 2.0, "gain >= 2x"),
    ("objcache", "tcmalloc", "cross-CPU", 2.0, "gain >= 2x"),
    ("objcache", "mimalloc", "cross-CPU", 2.0, "gain >= 2x"),
    ("objcache", "jemalloc", "", 1.5, "gain >= 1.5x"),
    ("objcache", "tcmalloc", "", 1.5, "gain >= 1.5x"),
    ("objcache", "mimalloc", "", 1.5, "gain >= 1.5x"),
    ("brlock", "ck_brlock", "read pair", 3.0, "gain >= 3x"),
    ("ticket lock", "ck_spinlock_mcs", "acquire+release", 1 / 1.2, "within 1.2x (gain >= 0.83x)"),
    ("MCS lock", "ck_spinlock_mcs", "acquire+release", 1 / 1.2, "within 1.2x (gain >= 0.83x)"),
    ("runtime", "go", "pingpong same-cpu", 4.0, "gain >= 4x"),
    ("runtime", "boost", "pingpong same-cpu", 4.0, "gain >= 4x"),
    ("runtime", "", "", 1.0, "ahead (gain >= 1x)"),
    ("runtime-idle", "go", "", 1.0, "idles as cheaply as Go or better (gain >= 1x)"),
    ("runtime-rpc", "go", "max throughput", 1.5, "gain >= 1.5x"),
    ("runtime-rpc", "epoll", "max throughput", 1.0, "no slower (gain >= 1x)"),
    ("runtime-rpc", "go", "p99 at 75% load", 1.0, "p99 no higher (gain >= 1x)"),
]
PEER_FIELDS = ("structure", "peer", "workload", "ours", "theirs", "unit", "gain")


def peer_goal(rec):
    """(goal text, minimum gain) of a peer comparison, or (None, None)."""
    for structure, peer, workload, need, text in PEER_GOALS:
        if (rec.get("structure") == structure and str(rec.get("peer", "")).startswith(peer)
                and str(rec.get("workload", "")).startswith(workload)):
            return text, need
    return None, None


def collect_peers(recs, judge=True):
    """The kind == "peer" records -> report.json's "peers" entries, in order,
    each with its goal and goal_met (None: no goal, or not judged)."""
    out = []
    for r in recs:
        if r.get("kind") != "peer" or not all(k in r for k in PEER_FIELDS):
            continue
        e = {k: r[k] for k in PEER_FIELDS}
        for k in ("bench", "ours_variant", "higher_is_better", "runs", "min", "max", "threads",
                  "ours_min", "ours_max", "theirs_min", "theirs_max"):
            if k in r:
                e[k] = r[k]
        e.setdefault("runs", 1)
        text, need = peer_goal(r)
        e["goal"] = text
        e["goal_met"] = (r["gain"] >= need) if (judge and need is not None) else None
        out.append(e)
    return out


# Benchmarks outside bench/peers/ that are read for their peer lines
# (bench/idle: the runtime idle beside Go; bench/parked: parked tasks in
# each stack guard mode beside Go's goroutines; bench/rpc/rpc: the RPC
# servers, also read for the RPC section): run with the peers.
PEER_BENCHES = {"idle", "parked", "rpc"}


def is_peer_binary(path):
    return (os.path.basename(os.path.dirname(os.path.abspath(path))) == "peers"
            or os.path.basename(path) in PEER_BENCHES)


# Benchmarks built more than once from one source (one binary per layout):
# run one after the other, their results read as one benchmark's.
GROUPS = {"sched_layout": ["sched_layout", "sched_layout_rq_scattered", "sched_layout_se_inline"],
          "group_tree": ["group_tree", "group_tree_ptr_arrays"],
          "group_misses": ["group_tree", "group_tree_ptr_arrays"],
          "pipe_mru": ["pipe", "pipe_no_mru"],
          "refill": ["refill", "refill_head"],
          "pipe_layout": ["pipe", "pipe_rq_scattered", "pipe_se_inline"]}
# Members of a group whose output does not name the layout: their variant is
# replaced by the layout the binary was built with.
LAYOUT_OF = {("pipe_layout", "pipe"): "default",
             ("pipe_layout", "pipe_rq_scattered"): "CL_RQ_LAYOUT_SCATTERED",
             ("pipe_layout", "pipe_se_inline"): "CL_SE_AVG_INLINE",
             ("pipe_mru", "pipe"): "default",
             ("pipe_mru", "pipe_no_mru"): "CL_PICK_NO_MRU_MOVE"}
# Groups whose numbers are deterministic (cachegrind): each binary runs once.
DETERMINISTIC = {"group_misses"}
# Rounds of an interleaved group (one invocation of each binary per round).
ROUNDS = {"smoke": 2, "quick": 5, "long": 7}
# Smoke mode runs the smallest tree (d2w3): the case names follow it.
SMOKE_CASES = {"d3w10": "d2w3", "d5w4": "d2w3"}

# Extra arguments per benchmark and mode (pipe: one placement vs the kernel).
BENCH_ARGS = {
    "pipe": {"smoke": ["--same-cpu", "--vs-kernel", "--hog"],
             "quick": ["-l", "20000", "--same-cpu", "--vs-kernel", "--hog"],
             "long": ["--same-cpu", "--cross-cpu", "--vs-kernel", "--hog"]},
    "pipe_layout": {"smoke": ["--cross-cpu"], "quick": ["-l", "20000", "--cross-cpu"],
                    "long": ["-l", "200000", "--cross-cpu"]},
    "messaging": {"smoke": ["--vs-kernel"], "quick": ["--vs-kernel"], "long": ["--vs-kernel"]},
    "pipe_mru": {"smoke": ["--same-cpu"], "quick": ["-l", "20000", "--same-cpu"],
                 "long": ["-l", "200000", "--same-cpu"]},
    "group_misses": {"smoke": ["--misses"], "quick": ["--misses"], "long": ["--misses"]},
}


def progress(msg):
    print("bench: " + msg, flush=True)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except Exception:  # noqa: BLE001 - best-effort machine facts
        return ""


def machine(mode, load_before):
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cc = os.environ.get("CC", "gcc")
    return {
        "cpu_model": model or platform.processor() or "unknown",
        "cpus": os.cpu_count() or 0,
        "kernel": platform.release(),
        "glibc": " ".join(platform.libc_ver()) or "unknown",
        "compiler": (sh(cc + " --version").splitlines() or ["unknown"])[0],
        "cflags": os.environ.get("CFLAGS_PROG", ""),
        "id_mode": "unknown",
        "rseq_ops_mode": os.environ.get("GLIBC_TUNABLES", "") or "glibc rseq (default)",
        "load_before": load_before,
        "load_after": None,
        "mode": mode,
    }


def run_bench(path, args, jsonl):
    """Run one binary; returns (records, rc, seconds)."""
    t = time.time()
    p = subprocess.run([path] + args + ["--json"], capture_output=True, text=True)
    recs = []
    with open(jsonl, "a") as f:
        for line in p.stdout.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            f.write(json.dumps(rec) + "\n")
            recs.append(rec)
    return recs, p.returncode, time.time() - t, p.stderr


def vcpu_speed(byname, args, jsonl, when):
    """bench/vcpu_speed's ratio (slowest CPU with all CPUs busy / fastest CPU
    alone, the same plain loop) and its rows, or None when it is not built or
    failed: how even the (v)CPUs were around the multi-thread rows."""
    path = byname.get("vcpu_speed")
    if not path:
        return None
    progress("vCPU speed check (%s)" % when)
    recs, rc, _, err = run_bench(path, args, jsonl)
    ratio = next((r["value"] for r in recs if r.get("ratio") and r.get("bench") == "vcpu_speed"), None)
    if rc != 0 or ratio is None:
        progress("vcpu_speed failed (exit %d): %s" % (rc, err.strip().splitlines()[-1:] or ""))
        return None
    return {"ratio": ratio, "rows": [dict((k, r[k]) for k in ("variant", "median", "min", "max", "unit"))
                                     for r in recs if "variant" in r]}


def interleave(members, rounds):
    """The invocation order of a group's binaries: A B A B ... (rounds times)."""
    return [m for _ in range(rounds) for m in members]


def aggregate(recs):
    """Records of several invocations -> one record per (bench, case, variant,
    placement, unit): median, min, max over the invocations' medians;
    invocations = their number, runs = all runs. Ratio lines (per
    invocation) are left out."""
    by = {}
    for rec in recs:
        if "variant" not in rec:
            continue
        key = (rec.get("bench"), rec["case"], rec["variant"], rec.get("placement"), rec.get("unit"))
        by.setdefault(key, []).append(rec)
    out = []
    for rs in by.values():
        v = sorted(r["median"] for r in rs)
        n = len(v)
        out.append(dict(rs[0], median=median(v), min=v[0], max=v[-1], invocations=n,
                        runs=sum(r.get("runs", 1) for r in rs)))
    return out


def run_group(name, byname, args, jsonl, rounds=1, ratios=None):
    """Run a group's binaries (interleaved when split); returns (records,
    rc, seconds, stderr). Ratio lines go to @ratios (a list) if given, each
    tagged with the binary that printed it ("binary"): aggregation drops
    them."""
    members = [m for m in GROUPS.get(name, [name]) if m in byname]
    split = len(members) > 1 and name not in DETERMINISTIC and rounds > 1
    order = interleave(members, rounds) if split else members
    recs, rc, secs, err = [], 0, 0.0, ""
    for member in order:
        r, c, t, e = run_bench(byname[member], args, jsonl)
        for rec in r:
            if (name, member) in LAYOUT_OF and rec.get("variant") == "cachelocal":
                rec["variant"] = LAYOUT_OF[(name, member)]
            if ratios is not None and "ratio" in rec:
                ratios.append(dict(rec, binary=member))
        recs += r
        rc = rc or c
        secs += t
        err += e
    return (aggregate(recs) if split else recs), rc, secs, err


def pick(recs, case, variant, placement=None):
    for r in recs:
        # a variant may carry a measured note: "NAIVE (30% local)" matches "NAIVE"
        if ("variant" in r and (r["variant"] == variant or r["variant"].startswith(variant + " ("))
                and (case is None or r["case"] == case)
                and (placement is None or r.get("placement") == placement)):
            return r
    return None


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


# The runtime's cross-CPU wakeup against the hardware: bench/pipe
# --cross-cpu (the default layout's binary of the pipe_layout group) beside
# the cache-line round trip between the same two CPUs, which it measures
# after each run; the goal is on their ratio, run by run.
CROSS_CPU_BOUND = 2.0


def cross_cpu(recs, ratios, judge=True):
    """report.json's "cross_cpu" object, or None when the runs gave no ratio."""
    pipe = pick(recs, "pipe round trip", "default", "cross-cpu")
    line = pick(recs, "cache line round trip", "two threads", "cross-cpu")
    vals = sorted(r["value"] for r in ratios
                  if r.get("binary") == "pipe" and r.get("case") == "pipe cross-cpu")
    if not pipe or not line or not vals:
        return None
    ratio = median(vals)
    return {"pipe": pipe["median"], "pipe_min": pipe["min"], "pipe_max": pipe["max"],
            "line": line["median"], "line_min": line["min"], "line_max": line["max"],
            "unit": pipe["unit"], "ratio": ratio, "ratio_min": vals[0], "ratio_max": vals[-1],
            "invocations": len(vals),
            "goal": "pipe <= %gx the cache-line round trip" % CROSS_CPU_BOUND,
            "goal_met": (ratio <= CROSS_CPU_BOUND) if judge else None}


# The per-operation floors: bench/counter's and bench/ids's ratio lines
# against librseq and against the cid allocator's private-word floor, each
# bench run once per round (their ratios are medians of their own runs).
# (bench, case prefix, text in the ratio's name, bound on the ratio, goal).
FLOOR_GOALS = [
    ("counter", "op ", "/ librseq", 1.1, "<= 1.1x librseq"),
    ("ids", "id getter vs librseq", "", 1.1, "<= 1.1x librseq"),
    ("ids", "cid acquire+release", "recent / private-word floor", 1.3,
     "<= 1.3x the private-word floor"),
]
FLOOR_BENCHES = ("counter", "ids")


def floor_goal(r):
    """(bound, goal text) of a ratio line, or (None, None) when it has none."""
    for bench, case, text, bound, goal in FLOOR_GOALS:
        if (r.get("bench") == bench and str(r.get("case", "")).startswith(case)
                and text in str(r.get("ratio", ""))):
            return bound, goal
    return None, None


def floors(recs, judge=True):
    """report.json's "floors" object from the floor benches' lines of every
    round (ratio lines and "skipped" lines), or None when neither ran: one
    row per compiler and ratio with a goal, its median over the rounds
    (min-max). A line's "compiler" (set by run_floors) names the compiler
    that built the binary; rows of several compilers are kept apart."""
    rows, skipped = {}, []  # (compiler, bench, case, ratio) -> (bound, goal, values), in order
    for r in recs:
        if r.get("skipped"):
            why = "%s: %s" % (r.get("case", r.get("bench", "?")), r["skipped"])
            if r.get("compiler"):
                why = "%s (%s)" % (why, r["compiler"])
            if why not in skipped:
                skipped.append(why)
            continue
        if "ratio" not in r or not isinstance(r.get("value"), (int, float)):
            continue
        bound, goal = floor_goal(r)
        if bound is not None:
            rows.setdefault((r.get("compiler"), r["bench"], r["case"], r["ratio"]),
                            (bound, goal, []))[2].append(float(r["value"]))
    if not rows and not skipped:
        return None
    out = []
    for (compiler, bench, case, ratio), (bound, goal, vals) in rows.items():
        v = sorted(vals)
        m = median(v)
        row = {"bench": bench, "case": case, "ratio": ratio, "value": m,
               "min": v[0], "max": v[-1], "invocations": len(v), "bound": bound,
               "goal": goal, "goal_met": (m <= bound) if judge else None}
        if compiler:
            row["compiler"] = compiler
        out.append(row)
    return {"rows": out, "skipped": skipped}


def compiler_name(cc):
    """A compiler's short name and version ("gcc 12.2.0", "clang 14.0.6")
    from `cc --version`, or cc itself when it does not say."""
    first = (sh(cc + " --version").splitlines() or [""])[0]
    m = re.search(r"(clang|gcc|cc)\b.*?\b(\d+\.\d+(?:\.\d+)?)", first)
    if not m:
        return cc
    return "%s %s" % ("clang" if m.group(1) == "clang" else "gcc", m.group(2))


def run_floors(byname, args, jsonl, rounds, others=()):
    """Run the floor benches @rounds times, interleaved, the main build's
    and those of @others ((compiler name, {bench: path}) pairs: the same
    benches built by other compilers) one after the other in each round;
    their lines, each marked with the compiler that built it."""
    recs = []
    members = [(None, b, byname[b]) for b in FLOOR_BENCHES if b in byname]
    if others:
        main_cc = compiler_name(os.environ.get("CC", "gcc"))
        members = [(main_cc, b, p) for _, b, p in members]
        for cc, paths in others:
            members += [(cc, b, paths[b]) for b in FLOOR_BENCHES if b in paths]
    for cc, member, path in interleave(members, rounds):
        r, rc, _, err = run_bench(path, args, jsonl)
        if rc not in (0, 77):
            progress("%s%s failed (exit %d): %s" % (member, " (%s)" % cc if cc else "", rc,
                                                   err.strip().splitlines()[-1:] or ""))
            continue
        for x in r:
            if cc:
                x["compiler"] = cc
        recs += r
    return recs if members else None


def write_floors_md(L, f):
    L += ["", "## Floors: rseq operations beside librseq, cids beside a private word", "",
          "- what: `bench/counter` (an add through `cl_counter_add()` and through the raw "
          "operation, a list pop+push, per index kind and thread count, each beside librseq's "
          "operation on the same slots) and `bench/ids` (the id getters beside librseq's; a cid "
          "acquire+release with the RECENT policy beside the floor of any allocator that hands "
          "out a recently used id: one compare-and-swap and one release store on a word the "
          "thread keeps to itself), each run once per round; a ratio is the bench's own, "
          "cachelocal / the other side (lower is better), its median over the rounds (min-max)"]
    if not f:
        L += ["", "Not measured in this run."]
        return
    for why in f["skipped"]:
        L += ["", "- skipped: %s" % why]
    if not f["rows"]:
        return
    by_cc = any(r.get("compiler") for r in f["rows"])
    if by_cc:
        L += ["- compilers: each bench built by each compiler (librseq's inline operations by the "
              "same one), every build run once per round in turn; a row's ratio is of one build"]
    L += ["", "| %sbench | case | ratio | median (min-max) | rounds | goal |" % (
        "compiler | " if by_cc else ""), "|---|---|---|---|---|---|" + ("---|" if by_cc else "")]
    for r in f["rows"]:
        goal = "%s: %s" % ({True: "met", False: "**missed**", None: "not judged"}[r["goal_met"]],
                           r["goal"])
        ratio = re.sub(r"\s*\(goal [^)]*\)", "", r["ratio"])
        L.append("| %s%s | %s | %s | %.2fx (%.2f-%.2f) | %d | %s |" % (
            "%s | " % r.get("compiler", "?") if by_cc else "",
            r["bench"], r["case"], ratio, r["value"], r["min"], r["max"], r["invocations"], goal))


def write_cross_cpu_md(L, c):
    L += ["", "## Cross-CPU wakeup against the cache line", "",
          "- what: `bench/pipe --cross-cpu` (two tasks pinned to two workers on two CPUs, the "
          "default layout's binary of E1p/E2p), and after each of its runs the round trip of one "
          "cache line between the same two CPUs (store, spin for the answer); ratio = pipe / "
          "cache line, run by run, its median over the invocations' medians (min-max over them)",
          "- what bounds it: at best a one-way wakeup waits for as many line transfers in "
          "series as one way of the cache-line round trip (the channel's line or the wakee's "
          "waiter record, whichever comes later, then the record back: docs/runtime.md, Lines a "
          "cross-CPU wakeup moves), so the lines cost about one cache-line round trip per pipe "
          "round trip; the rest is the two workers' own work (two task switches, two channel "
          "operations, the wakeup's push or claim, leaving the idle spin), a time of its own "
          "whatever the floor, so the ratio is at most 2x only where the floor is at least "
          "that work (the same-CPU round trip alone is the Peers section's pingpong same-cpu)"]
    if not c:
        L += ["", "Not measured in this run."]
        return
    goal = "%s: %s" % ({True: "met", False: "**missed**", None: "not judged"}[c["goal_met"]], c["goal"])
    L += ["", "| pipe round trip | cache-line round trip | unit | ratio (min-max) | invocations | goal |",
          "|---|---|---|---|---|---|",
          "| %s (%s-%s) | %s (%s-%s) | %s | %.2fx (%.2f-%.2f) | %d | %s |" % (
              fmt(c["pipe"]), fmt(c["pipe_min"]), fmt(c["pipe_max"]), fmt(c["line"]),
              fmt(c["line_min"]), fmt(c["line_max"]), c["unit"], c["ratio"], c["ratio_min"],
              c["ratio_max"], c["invocations"], goal)]


def spread(r):
    return r["max"] / r["min"] if r and r["min"] > 0 else (1.0 if r and r["max"] == 0 else float("inf"))


def evaluate(exp, recs):
    if (exp["case"] and exp["bench"] in ("group_tree", "group_misses")
            and not pick(recs, exp["case"], exp["before"])):
        for big, small in SMOKE_CASES.items():
            exp = dict(exp, case=exp["case"].replace(big, small),
                       rows_suffix=(exp.get("rows_suffix") or "").replace(big, small) or None)
    b = pick(recs, exp.get("before_case") or exp["case"], exp["before"], exp.get("placement"))
    a = pick(recs, exp["case"] or (b or {}).get("case"), exp["after"], exp.get("placement"))
    if not a or not b:
        return None
    if a["median"] == 0 or b["median"] == 0:
        return dict(not_run(exp, "a side measured 0 (nothing to compare in this run: %s %g, %s %g)"
                            % (exp["before"], b["median"], exp["after"], a["median"])),
                    rows=[r for r in recs if "variant" in r and r["case"] == a["case"]])
    hib = exp["hib"]
    if hib is None:
        hib = not a["unit"].startswith(LOWER_UNITS)
    if hib:
        gain = a["median"] / b["median"] if b["median"] else float("inf")
    else:
        gain = b["median"] / a["median"] if a["median"] else float("inf")
    overlap = not (a["max"] < b["min"] or b["max"] < a["min"])
    worst = max(spread(a), spread(b))
    deterministic = a["min"] == a["max"] and b["min"] == b["max"] and a.get("placement") == "cachegrind"
    if deterministic and abs(gain - 1) <= DETERMINISTIC_TOLERANCE:
        verdict, reason = "within noise", "deterministic counts within %d%% of each other" % (
            DETERMINISTIC_TOLERANCE * 100)
    elif deterministic:
        verdict, reason = ("reproduced" if gain > 1 else "contrary"), (
            "deterministic counts (cachegrind), %+.1f%% misses" % ((1 / gain - 1) * 100))
    elif overlap:
        verdict, reason = "within noise", "min-max ranges overlap"
    elif gain > 1:
        verdict, reason = "reproduced", "ranges apart, technique side better"
    else:
        verdict, reason = "contrary", "ranges apart, technique side worse"
    if worst > SPREAD_BOUND and verdict != "within noise":
        reason += "; spread %s above bound %.1fx" % (
            "%.1fx" % worst if math.isfinite(worst) else "(a run measured 0)", SPREAD_BOUND)
    if exp.get("ratio_text"):  # a bound's own ratio, after/before, as its goal states it
        reason += "; %s %.2fx" % (exp["ratio_text"], a["median"] / b["median"])
    goal, met = goal_of(exp["id"], gain, verdict, a["median"])
    return {
        "id": exp["id"], "technique": exp["technique"], "claim": exp["claim"],
        "goal": goal, "goal_met": met,
        "metric": "%s: %s" % (exp["bench"], a["case"]), "unit": a["unit"],
        "higher_is_better": bool(hib), "before": b["median"], "after": a["median"],
        "gain": gain, "runs": min(a["runs"], b["runs"]),
        "before_min": b["min"], "before_max": b["max"],
        "after_min": a["min"], "after_max": a["max"],
        "verdict": verdict, "reason": reason,
        "spread": worst if math.isfinite(worst) else None, "scope": exp["scope"],
        "why": exp.get("why"),
        "rows": [r for r in recs if "variant" in r
                 and (r["case"] == a["case"]
                      or (exp.get("rows_suffix") and r["case"].endswith(exp["rows_suffix"]))
                      or (exp.get("rows_prefix") and r["case"].startswith(exp["rows_prefix"])))
                 and (exp.get("placement") is None or r.get("placement") == exp["placement"])],
    }


def not_run(exp, why):
    return {
        "id": exp["id"], "technique": exp["technique"], "claim": exp["claim"],
        "goal": goal_of(exp["id"], None, "not run")[0], "goal_met": None,
        "metric": "%s: %s" % (exp["bench"], exp["case"]), "unit": "",
        "higher_is_better": bool(exp["hib"]), "before": None, "after": None, "gain": None,
        "runs": 0, "before_min": None, "before_max": None, "after_min": None,
        "after_max": None, "verdict": "not run", "reason": why, "spread": None,
        "scope": exp["scope"], "why": exp.get("why"), "rows": [],
    }


# E3m is judged on the seed's headline: its bursts 200 ms apart.
MODEL_HEADLINE_MS = 200
# ... and its geometric mean there within this factor of the seed's (the
# factor the calibration holds every cell to).
MODEL_HEADLINE_WITHIN = 2.0


def model_direction(speedup):
    """A model row's NAIVE/RECENT speedup read against 1 within MODEL_TOLERANCE."""
    if speedup > 1 + MODEL_TOLERANCE:
        return "reproduced"
    if speedup < 1 - MODEL_TOLERANCE:
        return "contrary"
    return "within noise"


def model_verdict(speedups):
    """E3m's verdict over rows: reproduced only when every row is, contrary
    when one is, else within noise."""
    verdicts = {model_direction(x) for x in speedups}
    return ("contrary" if "contrary" in verdicts else
            "within noise" if "within noise" in verdicts else "reproduced")


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def model_headline(rows):
    """The summary of E3m's rows at MODEL_HEADLINE_MS: each row's speedup,
    the seed's and its direction; the geometric means of the model's and the
    seed's speedups and their ratio; the weakest row there and over all rows;
    the verdict (reproduced only when every headline row is, contrary when
    one is) and the goal (geometric mean within MODEL_HEADLINE_WITHIN of the
    seed's)."""
    head = [r for r in rows if r["delay_ms"] == MODEL_HEADLINE_MS]
    out = {"delay_ms": MODEL_HEADLINE_MS,
           "rows": [{"config": r["config"], "speedup": r["speedup"],
                     "seed_speedup": r["seed_speedup"], "verdict": model_direction(r["speedup"])}
                    for r in head]}
    out["geomean"] = geomean(r["speedup"] for r in head)
    out["seed_geomean"] = geomean(r["seed_speedup"] for r in head)
    out["vs_seed"] = out["geomean"] / out["seed_geomean"]
    out["verdict"] = model_verdict(r["speedup"] for r in head)
    out["goal_met"] = 1 / MODEL_HEADLINE_WITHIN <= out["vs_seed"] <= MODEL_HEADLINE_WITHIN
    for key, among in (("weakest", head), ("weakest_all", rows)):
        w = min(among, key=lambda r: r["speedup"])
        out[key] = {"config": w["config"], "delay_ms": w["delay_ms"], "speedup": w["speedup"],
                    "seed_speedup": w["seed_speedup"]}
    return out


def model_experiment(mode):
    """E3m: the cache model with the parameters calibrated on the seed's T3
    table (cachemodel.FITTED), the same in every mode (deterministic, a
    second or two). The fit per cell comes first in the section; the
    predictions and the verdict use the calibrated parameters.

    One metric, on the seed's headline (model_headline()): the geometric
    mean over the four rows at 200 ms of the NAIVE/RECENT speedup. before
    and after are the geometric means of those rows' NAIVE and RECENT
    cycles per burst (min-max: of their minima and maxima over the seeds),
    so gain = before/after is that mean speedup. The verdict is reproduced
    only when every 200 ms row is (speedup above 1 + MODEL_TOLERANCE); the
    goal, that mean within 2x of the seed's."""
    del mode  # the model is cheap enough to run whole in every mode
    cal = cachemodel.calibration()
    params = cal["parameters"]
    rows = cachemodel.table(delays=(200, 10), params=params)  # the seed's row order
    seed = {(c, d): v for c, d, v in cachemodel.SEED_T3}
    for r in rows:
        v = seed.get((r["config"], r["delay_ms"]))
        r["seed_speedup"] = v[1] / v[2] if v else None
    h = model_headline(rows)
    head = [r for r in rows if r["delay_ms"] == MODEL_HEADLINE_MS]
    side = {k: {s: geomean(r[k][s] for r in head) for s in ("mean", "min", "max")}
            for k in ("NAIVE", "RECENT")}
    seed_head = [r["seed_speedup"] for r in head]
    w, wa = h["weakest"], h["weakest_all"]
    reason = ("%d of %d rows at %d ms reproduced; geometric mean %.2fx, the seed's %.2fx (%.2fx "
              "of it); weakest row %s @%d ms %.2fx (seed %.2fx); over all rows %s @%d ms %.2fx "
              "(seed %.2fx)" % (
                  sum(1 for r in h["rows"] if r["verdict"] == "reproduced"), len(h["rows"]),
                  MODEL_HEADLINE_MS, h["geomean"], h["seed_geomean"], h["vs_seed"], w["config"],
                  w["delay_ms"], w["speedup"], w["seed_speedup"], wa["config"], wa["delay_ms"],
                  wa["speedup"], wa["seed_speedup"]))
    if not cal["within_all"]:
        reason += ("; the calibration misses %.0fx on %d of %d cells: the predictions are not "
                   "backed by the seed's table" % (
                       cal["within"], sum(1 for c in cal["cells"]
                                          if max(c["ratio"], 1 / c["ratio"]) > cal["within"]),
                       len(cal["cells"])))
    return {
        "id": "E3m", "technique": "T3 cache-local cids (cache model)",
        "goal": "geomean within %.0fx of the seed's %.2fx" % (MODEL_HEADLINE_WITHIN, h["seed_geomean"]),
        "goal_met": h["goal_met"],
        "claim": "mm_cid/cache-local %.1fx-%.1fx per burst at %d ms" % (
            min(seed_head), max(seed_head), MODEL_HEADLINE_MS),
        "metric": "calibrated model, cycles per 16 KiB burst, geometric mean over the seed's %d "
                  "rows at %d ms; gain = NAIVE/RECENT" % (len(head), MODEL_HEADLINE_MS),
        "unit": "cycles/burst", "higher_is_better": False,
        "before": side["NAIVE"]["mean"], "after": side["RECENT"]["mean"],
        "gain": side["NAIVE"]["mean"] / side["RECENT"]["mean"], "runs": len(cachemodel.FIT_SEEDS),
        "before_min": side["NAIVE"]["min"], "before_max": side["NAIVE"]["max"],
        "after_min": side["RECENT"]["min"], "after_max": side["RECENT"]["max"],
        "verdict": h["verdict"], "reason": reason, "spread": None,
        "scope": "deterministic cache model calibrated on the seed's T3 table (fit per cell "
                 "and parameters in the section), the seed's four topologies at 10 and 200 ms",
        "rows": rows, "headline": h, "parameters": cachemodel.parameters(params), "calibration": cal,
    }


def write_model_md(L, e):
    """E3m's section body: the fit to the seed's table, then the predictions."""
    cal = e["calibration"]
    L += ["### Calibration: the seed's T3 table beside the model", "",
          "- fitted parameters (`FITTED` in `scripts/cachemodel.py`, reproduced by "
          "`python3 scripts/cachemodel.py --fit`): `%s`" % json.dumps(cal["parameters"]),
          "- before calibration: `%s`" % json.dumps(cal["prior"]),
          "- costs in cycles per line, times in ms; the model's cycles are divided by %.1f GHz "
          "to compare with the seed's ns; the model is the mean of seeds %s, %d rounds, the "
          "first left out" % (cal["clock_ghz"], ",".join(map(str, cal["seeds"])), cal["rounds"]),
          "- fit: %s, minimised by a deterministic coordinate search inside the sensible "
          "region (docs/benchmarks.md); value %.3f" % (cal["objective"], cal["objective_value"]),
          "- worst cell %.2fx: %s" % (cal["worst_factor"], "every cell within %.0fx" % cal["within"]
                                      if cal["within_all"] else "**NOT every cell within %.0fx**"
                                      % cal["within"]),
          "- at a limit of the sensible region: %s" % (", ".join(cal["at_bounds"]) or "none"),
          "- growth of the objective when one parameter moves by 25%%: %s; below 0.01 the table "
          "does not pin it: %s" % (
              ", ".join("%s %.3g" % (k, v) for k, v in cal["sensitivity"].items() if v is not None),
              ", ".join(k for k, v in cal["sensitivity"].items()
                        if v is not None and v < 0.01) or "none"),
          "", "| config | delay | per-cpu seed ns | model | ratio | mm_cid seed ns | model (NAIVE) "
          "| ratio | cache-local seed ns | model (RECENT) | ratio |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    by_row = {}
    for c in cal["cells"]:
        by_row.setdefault((c["config"], c["delay_ms"]), []).append(c)
    for (config, delay), cells in by_row.items():
        L.append("| %s | %d ms | %s |" % (config, delay, " | ".join(
            "%.0f | %.0f | %.2fx" % (c["seed_ns"], c["model_ns"], c["ratio"]) for c in cells)))
    h = e.get("headline")
    if h:
        L += ["", "### The seed's headline: bursts %d ms apart" % h["delay_ms"], "",
              "| config | model NAIVE/RECENT | seed's | model/seed | verdict |", "|---|---|---|---|---|"]
        L += ["| %s | %.2fx | %.2fx | %.2fx | %s |" % (
            r["config"], r["speedup"], r["seed_speedup"], r["speedup"] / r["seed_speedup"],
            r["verdict"]) for r in h["rows"]]
        L += ["| geometric mean | %.2fx | %.2fx | %.2fx | %s |" % (
            h["geomean"], h["seed_geomean"], h["vs_seed"], h["verdict"]), ""]
        for label, w in (("weakest row at %d ms" % h["delay_ms"], h["weakest"]),
                         ("weakest row of all", h["weakest_all"])):
            L.append("- %s: %s @%d ms, NAIVE/RECENT %.2fx (seed %.2fx)" % (
                label, w["config"], w["delay_ms"], w["speedup"], w["seed_speedup"]))
    L += ["", "### Predictions of the calibrated model", "",
          "Cycles per burst, mean over the seeds; LLC (cachelocal's policy) is not in the "
          "seed's table.", "",
          "| config | delay | per-cpu | NAIVE | RECENT | LLC | speedup NAIVE/RECENT | seed's speedup |",
          "|---|---|---|---|---|---|---|---|"]
    for r in e["rows"]:
        L.append("| %s | %d ms | %.0f | %.0f | %.0f | %.0f | %.2fx | %s |" % (
            r["config"], r["delay_ms"], r["per-cpu"]["mean"], r["NAIVE"]["mean"],
            r["RECENT"]["mean"], r["LLC"]["mean"], r["speedup"],
            "%.2fx" % r["seed_speedup"] if r.get("seed_speedup") else "-"))


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "%.3g" % v if abs(v) < 1000 else "%.0f" % v
    return str(v)


def plot_scale(outdir, exp):
    """ns per step against runnable tasks (log x), from the rqscale rows."""
    rows = sorted((int(r["variant"][2:]), r) for r in exp.get("rows") or []
                  if r.get("variant", "").startswith("N="))
    if not rows:
        return None
    dat = os.path.join(outdir, "plot-%s.dat" % exp["id"])
    svg = "plot-%s.svg" % exp["id"]
    with open(dat, "w") as f:
        for n, r in rows:
            f.write("%d %g %g %g\n" % (n, r["median"], r["min"], r["max"]))
    gp = ('set terminal svg size 480,300; set output "%s"; set title "%s: ns per step vs runnable tasks"; '
          'set xlabel "runnable tasks"; set ylabel "%s"; set logscale x; set yrange [0:*]; '
          'plot "%s" using 1:2:3:4 with yerrorlines notitle'
          % (os.path.join(outdir, svg), exp["id"], exp["unit"], dat))
    r = subprocess.run(["gnuplot", "-e", gp], capture_output=True, text=True)
    return svg if r.returncode == 0 else None


def plot(outdir, exp, have_gnuplot):
    if not have_gnuplot or exp["before"] is None or exp["id"] == "E3m":
        return None
    if exp["id"] == "rqscale":
        return plot_scale(outdir, exp)
    dat = os.path.join(outdir, "plot-%s.dat" % exp["id"])
    svg = "plot-%s.svg" % exp["id"]
    with open(dat, "w") as f:
        f.write('0 "before" %g %g %g\n' % (exp["before"], exp["before_min"], exp["before_max"]))
        f.write('1 "after" %g %g %g\n' % (exp["after"], exp["after_min"], exp["after_max"]))
    gp = ('set terminal svg size 480,300; set output "%s"; set title "%s: %s"; '
          'set ylabel "%s"; set xrange [-0.5:1.5]; set yrange [0:*]; set style fill solid 0.5; '
          'set boxwidth 0.5; plot "%s" using 1:3:xtic(2) with boxes notitle, '
          '"" using 1:3:4:5 with yerrorbars lc rgb "black" notitle'
          % (os.path.join(outdir, svg), exp["id"], exp["technique"].replace('"', ""),
             exp["unit"], dat))
    r = subprocess.run(["gnuplot", "-e", gp], capture_output=True, text=True)
    return svg if r.returncode == 0 else None


def plot_peers(outdir, peers, have_gnuplot):
    """One SVG per structure: the gain of each comparison (log scale, 1 =
    even, bars from the per-run gain min to max). Returns {structure: svg}."""
    if not have_gnuplot:
        return {}
    out = {}
    for structure in dict.fromkeys(p["structure"] for p in peers):
        rows = [p for p in peers if p["structure"] == structure and p["gain"] > 0]
        if not rows:
            continue
        tag = "".join(c if c.isalnum() else "-" for c in structure)
        dat = os.path.join(outdir, "peers-%s.dat" % tag)
        svg = "peers-%s.svg" % tag
        with open(dat, "w") as f:
            for i, p in enumerate(rows):
                label = ("%s: %s" % (p["peer"].split(" (")[0], p["workload"])).replace('"', "")
                lo = p.get("min") or p["gain"]
                hi = p.get("max") or p["gain"]
                f.write('%d "%s" %g %g %g\n' % (i, label, p["gain"], max(lo, 1e-3), max(hi, 1e-3)))
        gp = ('set terminal svg size %d,420; set output "%s"; set title "%s vs peers: gain '
              '(theirs/ours, > 1 = cachelocal ahead)"; set logscale y; set ylabel "gain"; '
              'set xtics rotate by -60 font ",8"; set style fill solid 0.5; set boxwidth 0.6; '
              'set xrange [-0.5:%g]; plot "%s" using 1:3:xtic(2) with boxes notitle, '
              '"" using 1:3:4:5 with yerrorbars lc rgb "black" notitle, 1 with lines lc rgb "red" notitle'
              % (max(480, 40 * len(rows)), os.path.join(outdir, svg), structure,
                 len(rows) - 0.5, dat))
        r = subprocess.run(["gnuplot", "-e", gp], capture_output=True, text=True)
        if r.returncode == 0:
            out[structure] = svg
    return out


def write_peers_md(L, doc):
    peers = doc.get("peers", [])
    L += ["", "## Peers: cachelocal beside what users pick instead", "",
          "- each row: one comparison measured in one process, ours and theirs back to back run "
          "by run (order alternating), median of the runs; gain = theirs/ours for lower-is-better "
          "units (> 1: cachelocal ahead), its min-max the gains of single runs; the peer's "
          "version from its header or its Debian package"]
    for pkg in doc.get("peers_skipped", []):
        L.append("- skipped: %s not installed (nothing measured for it)" % pkg)
    if not peers:
        L += ["", "No peer comparison ran."]
        return
    L += ["", "| structure | ours | peer | workload | ours | theirs | unit | gain (min-max) | runs | goal |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for p in peers:
        goal = "-"
        if p.get("goal"):
            goal = "%s: %s" % ({True: "met", False: "**missed**", None: "not judged"}[p["goal_met"]],
                               p["goal"])
        rng = (" (%.2f-%.2f)" % (p["min"], p["max"])) if "min" in p and "max" in p else ""
        L.append("| %s | %s | %s | %s | %s | %s | %s | %.2fx%s | %s | %s |" % (
            p["structure"], p.get("ours_variant", "cachelocal"), p["peer"], p["workload"],
            fmt(p["ours"]), fmt(p["theirs"]), p["unit"], p["gain"], rng, p.get("runs", "-"), goal))
    for structure, svg in doc.get("peer_plots", {}).items():
        L += ["", "![%s vs peers](%s)" % (structure, svg)]


# The RPC benchmark (bench/rpc/rpc, docs/benchmarks.md): its goals, per
# reply size, on the medians it measured: (id, other server, text, bound).
# value = ours/theirs for max throughput, theirs/ours for p99 (> 1: ours
# ahead); met when value >= bound.
RPC_GOALS = [("max-vs-go", "go", "max throughput >= 1.5x Go's", 1.5),
             ("max-vs-epoll", "epoll", "max throughput >= 1.0x the epoll loop's", 1.0),
             ("p99-75-vs-go", "go", "p99 at 75% load <= Go's", 1.0)]
# What a request costs the server at 50% and 75% of the slowest max (the
# open loop's runs): theirs / ours >= bound (ours <= theirs / bound).
RPC_COST_GOALS = [("cpu-%d-vs-go", "go", "CPU per request at %d%% load <= 0.67x Go's", 1.5,
                   "cpu_us_per_req"),
                  ("cpu-%d-vs-epoll", "epoll", "CPU per request at %d%% load <= the epoll loop's",
                   1.0, "cpu_us_per_req"),
                  ("calls-%d-vs-go", "go", "system calls per request at %d%% load <= half Go's",
                   2.0, "syscalls_per_req")]
RPC_COST_LEVELS = (50, 75)
RPC_COST_KEYS = ("cpu_us_per_req", "user_us_per_req", "sys_us_per_req", "syscalls_per_req",
                 "requests_costed")
RPC_LEVELS = (25, 50, 75, 90)
RPC_OURS = "cachelocal"
RPC_GEN_BOUND = 0.9  # load generator CPU busy share from which a max is its bound


def collect_rpc(recs, judge=True):
    """The "kind": "rpc" lines of bench/rpc/rpc -> report.json's "rpc"
    object (None when the benchmark did not run): max throughput and
    latency per server, skipped servers, and the goals judged on the
    medians (goal_met None in smoke mode or when a side is missing)."""
    rows = [r for r in recs if r.get("kind") == "rpc"]
    if not rows:
        return None
    mx = [dict((k, r[k]) for k in ("server", "server_desc", "reply_bytes", "median", "min", "max",
                                    "unit", "runs", "conns", "depth", "server_cpus",
                                    "client_threads", "placement", "server_cpu_busy",
                                    "client_cpu_busy") if k in r)
          for r in rows if r.get("what") == "max"]
    for m, r in zip(mx, [r for r in rows if r.get("what") == "max"]):
        ut, st = r.get("server_user_ticks"), r.get("server_sys_ticks")
        if isinstance(ut, int) and isinstance(st, int) and ut + st > 0:
            m["server_kernel_share"] = st / (ut + st)
    lat = [dict((k, r[k]) for k in ("server", "reply_bytes", "load_pct", "rate", "achieved", "lost",
                                     "p50", "p50_min", "p50_max", "p99", "p99_min", "p99_max",
                                     "p999", "p999_min", "p999_max", "unit", "runs", "poisson")
                + RPC_COST_KEYS if k in r)
           for r in rows if r.get("what") == "latency"]
    skipped = [{"server": r["server"], "reason": r.get("reason", "")}
               for r in rows if r.get("what") == "skipped"]
    goals = []
    for reply in sorted(set(m["reply_bytes"] for m in mx)):
        def max_of(server):
            return next((m["median"] for m in mx if m["server"] == server
                         and m["reply_bytes"] == reply), None)

        def kernel_share(server):
            return next((m.get("server_kernel_share") for m in mx if m["server"] == server
                         and m["reply_bytes"] == reply), None)

        def gen_busy(server):
            return next((m.get("client_cpu_busy") for m in mx if m["server"] == server
                         and m["reply_bytes"] == reply), None)

        def p99_75(server):
            return next((x["p99"] for x in lat if x["server"] == server
                         and x["reply_bytes"] == reply and x["load_pct"] == 75), None)
        for gid, other, text, bound in RPC_GOALS:
            if gid.startswith("max"):
                ours, theirs = max_of(RPC_OURS), max_of(other)
                value = ours / theirs if ours and theirs else None
            else:
                ours, theirs = p99_75(RPC_OURS), p99_75(other)
                value = theirs / ours if ours and theirs else None
            g = {"id": gid, "reply_bytes": reply, "goal": text, "other": other,
                 "ours": ours, "theirs": theirs, "value": value, "bound": bound,
                 "goal_met": (value >= bound) if judge and value is not None else None}
            if gid.startswith("max"):
                busy = [gen_busy(RPC_OURS), gen_busy(other)]
                if all(b is not None for b in busy):
                    # the closed loop's generator saturated in both servers' runs:
                    # the max is (also) the generator's, not the servers' alone
                    g["generator_busy"] = busy
                    g["generator_bound"] = min(busy) >= RPC_GEN_BOUND
                k = kernel_share(other)
                if k:
                    # the other server's time in the kernel: a server making the
                    # same calls with no user-space work at all gets at most 1/k
                    g["other_kernel_share"] = k
                    g["no_user_work_bound"] = 1 / k
            goals.append(g)
        for level in RPC_COST_LEVELS:
            def cost(server, key):
                v = next((x.get(key) for x in lat if x["server"] == server
                          and x["reply_bytes"] == reply and x["load_pct"] == level), None)
                return v if isinstance(v, (int, float)) and v > 0 else None
            for gid, other, text, bound, key in RPC_COST_GOALS:
                ours, theirs = cost(RPC_OURS, key), cost(other, key)
                value = theirs / ours if ours and theirs else None
                goals.append({"id": gid % level, "reply_bytes": reply, "goal": text % level,
                              "other": other, "ours": ours, "theirs": theirs, "value": value,
                              "bound": bound,
                              "goal_met": (value >= bound) if judge and value is not None else None})
    return {"max": mx, "latency": lat, "skipped": skipped, "goals": goals, "plots": {}}


def plot_rpc(outdir, rpc, have_gnuplot):
    """One SVG per reply size: p50 (dashed) and p99 (solid) against the
    offered load, one colour per server, log scale. Returns {reply: svg}."""
    if not have_gnuplot or not rpc or not rpc["latency"]:
        return {}
    out = {}
    for reply in sorted(set(x["reply_bytes"] for x in rpc["latency"])):
        servers = list(dict.fromkeys(x["server"] for x in rpc["latency"] if x["reply_bytes"] == reply))
        clauses = []
        for i, srv in enumerate(servers):
            dat = os.path.join(outdir, "rpc-%d-%s.dat" % (reply, srv))
            with open(dat, "w") as f:
                for x in sorted((x for x in rpc["latency"]
                                 if x["reply_bytes"] == reply and x["server"] == srv),
                                key=lambda x: x["load_pct"]):
                    f.write("%d %g %g %g\n" % (x["load_pct"], max(x["p50"], 1e-3),
                                               max(x["p99"], 1e-3), max(x["p999"], 1e-3)))
            clauses.append('"%s" using 1:3 with linespoints lc %d dt 1 title "%s p99"'
                           % (dat, i + 1, srv))
            clauses.append('"%s" using 1:2 with linespoints lc %d dt 2 title "%s p50"'
                           % (dat, i + 1, srv))
        svg = "rpc-latency-%d.svg" % reply
        gp = ('set terminal svg size 560,360; set output "%s"; set title "RPC, %d B reply: latency '
              'vs offered load"; set xlabel "load (%% of the slowest server\'s max throughput)"; '
              'set ylabel "latency (us)"; set logscale y; set xrange [20:95]; set key top left; '
              'plot %s' % (os.path.join(outdir, svg), reply, ", ".join(clauses)))
        r = subprocess.run(["gnuplot", "-e", gp], capture_output=True, text=True)
        if r.returncode == 0:
            out[str(reply)] = svg
    return out


def write_rpc_md(L, rpc):
    L += ["", "## RPC: the runtime serving requests beside Go and an epoll loop", "",
          "- what: `bench/rpc/rpc`: TCP on loopback, 64 B requests, 64 B and 4 KiB replies, many "
          "connections per server; servers: the cachelocal runtime (one task per connection), Go "
          "(goroutine per connection, `net`, GOMAXPROCS = the runtime's workers) and a hand-written "
          "edge-triggered epoll loop (C, one thread), all on the same server CPUs, the load "
          "generator pinned to the others; max throughput from a closed loop, then an open loop "
          "at 25/50/75/90% of the slowest server's max with latency from each request's scheduled "
          "send time (no coordinated omission); median of the runs (min-max over them), the "
          "servers interleaved run by run"]
    if not rpc:
        L += ["", "Not run (bench/rpc/rpc not built or no server could start)."]
        return
    for sk in rpc["skipped"]:
        L.append("- %s server: skipped (%s)" % (sk["server"], sk["reason"]))
    m0 = rpc["max"][0] if rpc["max"] else {}
    if m0:
        L.append("- placement: %s; %s server CPU(s); %s load generator thread(s); %s connections "
                 "per server; closed-loop depth %s" % (
                     m0.get("placement", "?"), m0.get("server_cpus", "?"),
                     m0.get("client_threads", "?"), m0.get("conns", "?"), m0.get("depth", "?")))
    L += ["", "| reply | server | max throughput (req/s) | min-max | runs | server CPU busy "
          "| load generator CPU busy | server time in the kernel | what it is |",
          "|---|---|---|---|---|---|---|---|---|"]

    def pct(v):
        return "%.0f%%" % (v * 100) if v is not None else "-"
    for m in rpc["max"]:
        L.append("| %d B | %s | %s | %s-%s | %s | %s | %s | %s | %s |" % (
            m["reply_bytes"], m["server"], fmt(m["median"]), fmt(m["min"]), fmt(m["max"]),
            m.get("runs", "-"), pct(m.get("server_cpu_busy")), pct(m.get("client_cpu_busy")),
            pct(m.get("server_kernel_share")), m.get("server_desc", "")))
    L += ["", "CPU busy: CPU time over wall time in the closed loop's runs (median of "
          "the runs): the server's process per server CPU, the load generator's threads "
          "per thread. A generator near 100% bounds the max it measures: a server that "
          "needed less CPU per request could not show it. Server time in the kernel: its "
          "system time over its user and system time in those runs (clock ticks, all runs "
          "together): system calls and the TCP stack, which a server making the same calls "
          "cannot save; with none of its own user-space work a server would be at most "
          "1/that faster than the one measured."]
    if rpc["latency"]:
        L += ["", "| reply | load | offered (req/s) | server | p50 (us) | p99 (us) | p99.9 (us) "
              "| answered (req/s) | lost (all runs) |", "|---|---|---|---|---|---|---|---|---|"]
        for x in sorted(rpc["latency"], key=lambda x: (x["reply_bytes"], x["load_pct"])):
            L.append("| %d B | %d%% | %s | %s | %s (%s-%s) | %s (%s-%s) | %s (%s-%s) | %s | %s |" % (
                x["reply_bytes"], x["load_pct"], fmt(x["rate"]), x["server"], fmt(x["p50"]),
                fmt(x["p50_min"]), fmt(x["p50_max"]), fmt(x["p99"]), fmt(x["p99_min"]),
                fmt(x["p99_max"]), fmt(x["p999"]), fmt(x["p999_min"]), fmt(x["p999_max"]),
                fmt(x.get("achieved", 0)), x.get("lost", 0)))
    costed = [x for x in rpc["latency"] if isinstance(x.get("cpu_us_per_req"), (int, float))]
    if costed:
        L += ["", "What a request costs the server (open loop, every run of the level together: "
              "its CPU time, all threads, from just before the run's first request to after its "
              "last reply, over the requests sent; user and system split by the shares of "
              "utime and stime in /proc/PID/stat over the same span, which count in clock "
              "ticks; system calls counted by `perf stat -e raw_syscalls:sys_enter -p PID`, "
              "every thread; work of the kernel's own io_uring threads is not the server's "
              "CPU time):", "",
              "| reply | load | server | CPU us/request | user | system | system calls/request "
              "| requests |", "|---|---|---|---|---|---|---|---|"]
        for x in sorted(costed, key=lambda x: (x["reply_bytes"], x["load_pct"])):
            sc = x.get("syscalls_per_req")
            L.append("| %d B | %d%% | %s | %.2f | %.2f | %.2f | %s | %s |" % (
                x["reply_bytes"], x["load_pct"], x["server"], x["cpu_us_per_req"],
                x.get("user_us_per_req", 0), x.get("sys_us_per_req", 0),
                "%.2f" % sc if isinstance(sc, (int, float)) else "not counted",
                fmt(x.get("requests_costed", 0))))
    L += ["", "Goals (judged on the medians above; the cost goals on the sums of their "
          "runs):", ""]
    for g in rpc["goals"]:
        state = {True: "met", False: "**missed**", None: "not judged"}[g["goal_met"]]
        if g["value"] is None:
            why = "the %s server did not run" % (RPC_OURS if g["ours"] is None else g["other"])
            L.append("- %d B reply, %s: not judged (%s)" % (g["reply_bytes"], g["goal"], why))
            continue
        line = "- %d B reply, %s: %s (%.2fx; goal >= %.2fx)" % (
            g["reply_bytes"], g["goal"], state, g["value"], g["bound"])
        if g["id"] == "max-vs-epoll" and g["value"] < 1:
            line += "; the epoll loop is ahead by %.0f%%" % ((1 / g["value"] - 1) * 100)
        if g.get("no_user_work_bound"):
            line += ("; %s spent %s of its server CPU time in the kernel: with its calls and no "
                     "user-space work at all a server would reach at most %.2fx" % (
                         g["other"], pct(g["other_kernel_share"]), g["no_user_work_bound"]))
        if g.get("generator_bound"):
            line += ("; the load generator was %s and %s busy in these runs, so both maxima "
                     "are bounded by it: the ratio cannot show a server that needs less CPU" % (
                         pct(g["generator_busy"][0]), pct(g["generator_busy"][1])))
        L.append(line)
    for reply, svg in rpc.get("plots", {}).items():
        L += ["", "![RPC latency vs load, %s B reply](%s)" % (reply, svg)]


E3K_MD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "smp", "e3k.md")


def write_e3k_md(L, path=E3K_MD):
    """E3k's section as scripts/e3k.py wrote it (make check-smp), or that it did not run."""
    try:
        with open(path) as f:
            L += [""] + f.read().rstrip("\n").split("\n")
    except OSError:
        L += ["", "## E3k: T3 on the real kernel's mm_cid allocator", "", "not run: make check-smp"]


SLICE_GUEST_LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "kernels",
                               "7.3", "console.log.txt")


def collect_slice(ratios, path=SLICE_GUEST_LOG):
    """bench/slice_locks: its ratio lines from this run (natively), and the
    bench.slice_locks.* runs of the last `make check-kernels` on 7.3 (the
    guest's console), or why there are none."""
    native = [dict(case=r.get("case"), ratio=r.get("ratio"), value=r.get("value"))
              for r in ratios if r.get("bench") == "slice_locks"]
    guest, why = [], None
    try:
        with open(path, errors="replace") as f:
            run = None
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("@@CLG START "):
                    run = line.split()[2] if line.split()[2].startswith("bench.slice_locks") else None
                    if run:
                        guest.append("### %s" % run)
                elif line.startswith("@@CLG END ") and run:
                    guest.append(line.split(" ", 2)[2])
                    run = None
                elif run and (line.startswith("#") or line.startswith("  ratio") or
                              line.startswith("  ") or " ext-o" in line):
                    guest.append(line)
        if not guest:
            why = "no bench.slice_locks run in %s" % os.path.relpath(path)
    except OSError:
        why = "no 7.3 guest results (make check-kernels KERNELS=7.3 writes %s)" % os.path.relpath(path)
    return {"native": native, "guest": guest, "guest_not_run": why}


def write_slice_md(L, sl):
    L += ["", "## Time-slice extension: the locks with and without it", "",
          "bench/slice_locks (docs/slice.md). Natively the kernel has no extension "
          "(`ext-off / before` is what the requests cost where it is off); the contended rows "
          "come from the 7.3 guest of `make check-kernels` (TCG: counts and same-run ratios only). "
          "Debian's 7.3 kernels are built without CONFIG_RSEQ_SLICE_EXTENSION: there the mode is "
          "`off (kernel config)` and both variants are the same code path."]
    if sl is None:
        L += ["", "not run"]
        return
    if sl["native"]:
        L += ["", "| case | ratio | value |", "|---|---|---|"]
        for r in sl["native"]:
            L.append("| %s | %s | %s |" % (r["case"], r["ratio"], fmt(r["value"])))
    else:
        L += ["", "natively: not run"]
    if sl["guest"]:
        L += ["", "```"] + sl["guest"] + ["```"]
    else:
        L += ["", "guest: not run: %s" % sl["guest_not_run"]]


def write_md(path, doc, plots_note):
    m = doc["machine"]
    L = ["# cachelocal benchmark report", ""]
    L.append("- machine: %s, %d CPUs, kernel %s, %s" % (m["cpu_model"], m["cpus"], m["kernel"], m["glibc"]))
    L.append("- compiler: %s, flags `%s`" % (m["compiler"], m["cflags"]))
    L.append("- id mode: %s, rseq ops: %s, mode: %s, commit %s" % (m["id_mode"], m["rseq_ops_mode"], m["mode"], doc["commit"]))
    L.append("- load average before %.2f, after %.2f (1 min; %d CPUs)%s" % (
        m["load_before"], m["load_after"], m["cpus"],
        " — LOADED: above %.1f per CPU" % LOAD_BOUND if max(m["load_before"], m["load_after"]) > LOAD_BOUND * m["cpus"] else ""))
    vs = m.get("vcpu_speed") or {}
    if vs.get("before") or vs.get("after"):
        def one(v):
            return "%.2fx" % v["ratio"] if v else "not measured"
        worst = max(v["ratio"] for v in (vs.get("before"), vs.get("after")) if v)
        L.append("- CPU evenness (`bench/vcpu_speed`: one plain load loop, the slowest CPU while all "
                 "run it over the fastest CPU alone; 1.00x = even): before the benchmarks %s, "
                 "after %s%s" % (one(vs.get("before")), one(vs.get("after")),
                                 " — UNEVEN: rows with threads on several CPUs are bounded by the "
                                 "slowest CPU" if worst > UNEVEN_BOUND else ""))
    L.append("- verdict rule: gain > 1 means the technique wins; `reproduced`/`contrary` only when the "
             "two sides' min-max ranges over the runs do not overlap, else `within noise` "
             "(deterministic cachegrind counts: `within noise` when within %d%%); variants built "
             "as separate binaries ran interleaved (A B A B ...), min-max over the invocations' "
             "medians" % (
                 DETERMINISTIC_TOLERANCE * 100))
    if plots_note:
        L.append("- " + plots_note)
    L += ["", "## Summary", "",
          "| exp | technique | seed's claim | before | after | unit | gain | verdict | goal |",
          "|---|---|---|---|---|---|---|---|---|"]
    for e in doc["experiments"]:
        goal = "-"
        if e.get("goal"):
            goal = "%s: %s" % ({True: "met", False: "**missed**", None: "not judged"}[e["goal_met"]],
                               e["goal"])
            if e["goal"].startswith("LL misses") and e["before"]:
                goal += " (measured %+.1f%%)" % ((e["after"] / e["before"] - 1) * 100)
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["id"], e["technique"], e["claim"], fmt(e["before"]), fmt(e["after"]), e["unit"],
            ("%.2fx" % e["gain"]) if e["gain"] is not None else "-", e["verdict"], goal))
    for e in doc["experiments"]:
        L += ["", "## %s: %s" % (e["id"], e["technique"]), "",
              "- what: %s; metric %s (%s, %s is better)" % (
                  e["scope"], e["metric"], e["unit"], "higher" if e["higher_is_better"] else "lower"),
              "- verdict: **%s** (%s)" % (e["verdict"], e["reason"])]
        if e.get("why"):
            L.append("- why: %s (docs/benchmarks.md, E5)" % e["why"])
        L.append("")
        if e["id"] == "E3m" and e.get("calibration"):
            write_model_md(L, e)
            continue
        if e["rows"]:
            L += ["| case | variant | placement | threads | median | min | max | unit |",
                  "|---|---|---|---|---|---|---|---|"]
            for r in e["rows"]:
                L.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    r["case"], r["variant"], r.get("placement", ""), r.get("threads", ""),
                    fmt(r["median"]), fmt(r["min"]), fmt(r["max"]), r["unit"]))
        if e.get("plot"):
            L += ["", "![%s](%s)" % (e["id"], e["plot"])]
    write_e3k_md(L)
    write_cross_cpu_md(L, doc.get("cross_cpu"))
    write_floors_md(L, doc.get("floors"))
    write_slice_md(L, doc.get("slice"))
    write_rpc_md(L, doc.get("rpc"))
    write_peers_md(L, doc)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=("quick", "long", "smoke"), default="quick")
    ap.add_argument("--peer-skipped", action="append", default=[], metavar="PACKAGE",
                    help="a peer's package that is not installed (listed as skipped)")
    ap.add_argument("--floor-build", action="append", default=[], metavar="CC=DIR",
                    help="the floor benches (counter, ids) built by compiler CC into DIR: run "
                         "beside the main build's, their rows named by compiler")
    ap.add_argument("bins", nargs="*")
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    jsonl = os.path.join(o.out, "results.jsonl")
    open(jsonl, "w").close()
    ncpu = os.cpu_count() or 1
    doc = {"schema_version": SCHEMA_VERSION, "machine": machine(o.mode, os.getloadavg()[0]),
           "commit": sh("git rev-parse --short HEAD") or "unknown", "experiments": []}
    doc["compiler"] = doc["machine"]["compiler"]
    args = {"quick": ["--quick"], "long": [], "smoke": ["--smoke"]}[o.mode]
    byname = {os.path.basename(b): b for b in o.bins}
    doc["machine"]["vcpu_speed"] = {"before": vcpu_speed(byname, args, jsonl, "before")}
    needed = []
    for e in EXPERIMENTS:
        if e["bench"] not in needed:
            needed.append(e["bench"])
    results = {}
    ratios = {}
    failed = []
    for i, name in enumerate(needed):
        if not any(m in byname for m in GROUPS.get(name, [name])):
            continue
        load = os.getloadavg()[0]
        progress("[%d/%d] %s %s (load %.2f)" % (i + 1, len(needed), name, " ".join(args), load))
        bargs = args + BENCH_ARGS.get(name, {}).get(o.mode, [])
        rats = []
        recs, rc, secs, err = run_group(name, byname, bargs, jsonl, ROUNDS[o.mode], rats)
        if rc not in (0, 77):
            failed.append(name)
            progress("%s failed (exit %d): %s" % (name, rc, err.strip().splitlines()[-1:] or ""))
        noisy = [e for e in EXPERIMENTS if e["bench"] == name and ((evaluate(e, recs) or {}).get("spread") or 0) > SPREAD_BOUND]
        if o.mode != "smoke" and name not in DETERMINISTIC and (load > LOAD_BOUND * ncpu or noisy):
            progress("%s: %s, repeating once" % (name, "load %.2f" % load if load > LOAD_BOUND * ncpu
                                                 else "spread above %.1fx" % SPREAD_BOUND))
            rats2 = []
            recs2, rc2, secs2, _ = run_group(name, byname, bargs, jsonl, ROUNDS[o.mode], rats2)
            def total_spread(rs):
                return sum(min((evaluate(e, rs) or {}).get("spread") or 1e9, 1e9)
                           for e in EXPERIMENTS if e["bench"] == name)
            if rc2 in (0, 77) and recs2 and total_spread(recs2) < total_spread(recs):
                recs, rats = recs2, rats2
        progress("%s: %d results in %.1f s" % (name, len(recs), secs))
        results[name] = recs
        ratios[name] = rats
        for r in recs:
            if r.get("id_mode"):
                doc["machine"]["id_mode"] = r["id_mode"]
    for e in EXPERIMENTS:
        if not any(m in byname for m in GROUPS.get(e["bench"], [e["bench"]])):
            doc["experiments"].append(not_run(e, "bench/%s not built on this branch" % e["bench"]))
        else:
            ev = evaluate(e, results.get(e["bench"], []))
            doc["experiments"].append(ev or not_run(
                e, "bench/%s gave no %s/%s result (skipped: see its output)"
                % (e["bench"], e["before"], e["after"])))
        if e["id"] == "E3":
            progress("E3 cache model")
            doc["experiments"].append(model_experiment(o.mode))
    peer_recs = [r for recs in results.values() for r in recs]
    peer_bins = [b for b in o.bins if is_peer_binary(b)]
    for i, path in enumerate(peer_bins):
        progress("[peer %d/%d] %s %s (load %.2f)" % (i + 1, len(peer_bins), os.path.basename(path),
                                                     " ".join(args), os.getloadavg()[0]))
        recs, rc, secs, err = run_bench(path, args, jsonl)
        if rc == 77:
            progress("%s: %s" % (os.path.basename(path), (err.strip() or "skipped")))
        elif rc != 0:
            failed.append(os.path.basename(path))
            progress("%s failed (exit %d): %s" % (path, rc, err.strip().splitlines()[-1:] or ""))
        progress("%s: %d peer comparisons in %.1f s" % (
            os.path.basename(path), sum(1 for r in recs if r.get("kind") == "peer"), secs))
        peer_recs += recs
        for r in recs:
            if r.get("id_mode") and doc["machine"]["id_mode"] == "unknown":
                doc["machine"]["id_mode"] = r["id_mode"]
    floor_recs = None
    if any(b in byname for b in FLOOR_BENCHES):
        progress("floors: %s, %d rounds (load %.2f)" % (
            " ".join(b for b in FLOOR_BENCHES if b in byname), ROUNDS[o.mode], os.getloadavg()[0]))
        others = []
        for fb in o.floor_build:
            cc, _, d = fb.partition("=")
            paths = {b: os.path.join(d, b) for b in FLOOR_BENCHES
                     if os.access(os.path.join(d, b), os.X_OK)}
            if paths:
                others.append((compiler_name(cc), paths))
            else:
                progress("floors: no floor bench built by %s in %s" % (cc, d))
        floor_recs = run_floors(byname, args, jsonl, ROUNDS[o.mode], others)
    doc["floors"] = floors(floor_recs or [], judge=o.mode != "smoke") if floor_recs is not None else None
    doc["cross_cpu"] = cross_cpu(results.get("pipe_layout", []), ratios.get("pipe_layout", []),
                                 judge=o.mode != "smoke")
    doc["slice"] = collect_slice(ratios.get("slice_locks", []))
    doc["peers"] = collect_peers(peer_recs, judge=o.mode != "smoke")
    doc["rpc"] = collect_rpc(peer_recs, judge=o.mode != "smoke")
    doc["peers_skipped"] = sorted(set(o.peer_skipped))
    for pkg in doc["peers_skipped"]:
        progress("skipped: %s not installed" % pkg)
    if o.mode == "smoke":  # tiny sizes: the numbers mean nothing, no goal is judged
        for e in doc["experiments"]:
            if e["id"] != "E3m":  # the model is the same in every mode
                e["goal_met"] = None
    doc["machine"]["load_after"] = os.getloadavg()[0]
    doc["machine"]["vcpu_speed"]["after"] = vcpu_speed(byname, args, jsonl, "after")
    have_gnuplot = shutil.which("gnuplot") is not None and o.mode != "smoke"
    for e in doc["experiments"]:
        e["plot"] = plot(o.out, e, have_gnuplot)
    doc["peer_plots"] = plot_peers(o.out, doc["peers"], have_gnuplot)
    if doc["rpc"]:
        doc["rpc"]["plots"] = plot_rpc(o.out, doc["rpc"], have_gnuplot)
    note = None if have_gnuplot else ("plots skipped (gnuplot not installed)" if o.mode != "smoke"
                                      else "plots skipped (smoke mode)")
    with open(os.path.join(o.out, "report.json"), "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    md = os.path.join(o.out, "report.md")
    write_md(md, doc, note)
    if failed:
        progress("failed: " + " ".join(failed))
    progress("report written to " + md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
