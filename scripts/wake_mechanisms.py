#!/usr/bin/env python3
"""wake_mechanisms.py - what each mechanism of the runtime's wake path saves.

bench/pipe is built once as is and once with each mechanism compiled out
(make bench-wake-mechanisms builds them: pipe_no_handoff, pipe_no_buddy,
pipe_no_watch, pipe_no_home, pipe_no_chain_beside; wake-affine is a runtime
flag, pipe --no-wake-affine), and bench/peers/runtime_peers without buddies
and without homes (its fib and storm; it runs its Go peer too, whose
numbers are not used). Each mechanism is measured on the workloads
where it acts, beside the unchanged build, the variants alternating
invocation by invocation (ROUNDS rounds; each invocation is pipe's median of
5 runs), so a change in the host's speed hits all of them. Prints, per
workload, each variant's median ns per round trip over the rounds (min-max)
and its ratio to the unchanged build: above 1, what the mechanism saves.

Usage: wake_mechanisms.py BENCHDIR [--rounds N] [--loops N]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

# workload: (program (pipe or runtime_peers), its arguments, the JSON
# case/variant whose median is taken, unit)
WORKLOADS = {
    "pipe same-cpu": ("pipe", ["--same-cpu"], ("pipe round trip", "cachelocal"), "ns per round trip"),
    "pipe cross-cpu": ("pipe", ["--cross-cpu"], ("pipe round trip", "cachelocal"), "ns per round trip"),
    "pipe unpinned": ("pipe", ["--unpinned"], ("pipe round trip", "cachelocal"), "ns per round trip"),
    "pipe beside a hog": ("pipe", ["--hog"], ("pipe round trip", "pair beside a hog"),
                          "ns per round trip, the hog taking its share"),
    "fib same-cpu": ("peers", ["--workload", "fib", "--same-cpu", "--quick"],
                     ("fib same-cpu", "cachelocal"), "ns per spawn+join"),
    "fib two-cpu": ("peers", ["--workload", "fib", "--two-cpu", "--quick"],
                    ("fib two-cpu", "cachelocal"), "ns per spawn+join"),
    "storm same-cpu": ("peers", ["--workload", "storm", "--same-cpu", "--quick"],
                       ("storm same-cpu", "cachelocal"), "ns per message"),
    "storm two-cpu": ("peers", ["--workload", "storm", "--two-cpu", "--quick"],
                      ("storm two-cpu", "cachelocal"), "ns per message"),
}
PIPE_WORKLOADS = [w for w, v in WORKLOADS.items() if v[0] == "pipe"]

# variant: (suffix of the binary, extra arguments, what it removes, the
# workloads it is measured on); pipe variants are pipe<suffix>, runtime_peers
# ones peers/runtime_peers<suffix>
VARIANTS = [
    ("unchanged", "", [], "-", list(WORKLOADS)),
    ("no hand-off", "_no_handoff", [], "direct hand-offs (CL_RUNTIME_NO_HANDOFF)",
     ["pipe same-cpu", "pipe beside a hog"]),
    ("no chain beside", "_no_chain_beside", [], "hand-off chains beside queued tasks "
     "(CL_RUNTIME_NO_CHAIN_BESIDE)", ["pipe beside a hog"]),
    ("no buddies", "_no_buddy", [], "next buddies and channel hints (CL_RUNTIME_NO_BUDDY)",
     ["pipe same-cpu", "pipe beside a hog", "fib same-cpu", "fib two-cpu", "storm same-cpu"]),
    ("no watched records", "_no_watch", [], "watched records and claims: wakers push on "
     "the remote wake list (CL_RUNTIME_NO_WATCH)", ["pipe cross-cpu", "pipe unpinned"]),
    ("no wake-affine", "", ["--no-wake-affine"], "wake-affine moves (CL_RUNTIME_NO_WAKE_AFFINE)",
     ["pipe unpinned"]),
    ("no homes", "_no_home", [], "home votes (CL_RUNTIME_NO_HOME)", ["pipe unpinned", "storm two-cpu"]),
]


def run_one(path, args, want, loops):
    cmd = [path] + (["-l", str(loops)] if loops else []) + ["--runs", "5", "--json"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit("%s failed (exit %d): %s" % (" ".join(cmd), out.returncode, out.stderr[-500:]))
    meta = {}
    for line in out.stdout.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        meta = {"id_mode": r.get("id_mode"), "kernel": r.get("kernel")}
        if r.get("case") == want[0] and r.get("variant") == want[1]:
            return r["median"], meta
    sys.exit("%s: no result %r in its output" % (" ".join(cmd), want))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("benchdir")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--loops", type=int, default=100000)
    a = ap.parse_args()
    if a.rounds < 5:
        sys.exit("--rounds: at least 5")
    res = {}
    meta = {}
    for rnd in range(a.rounds):
        print("# round %d of %d" % (rnd + 1, a.rounds), file=sys.stderr, flush=True)
        for wl, (prog, wargs, want, _) in WORKLOADS.items():
            for name, suffix, extra, _, wls in VARIANTS:
                if wl not in wls:
                    continue
                if prog == "pipe":
                    path, loops = os.path.join(a.benchdir, "pipe" + suffix), a.loops
                else:
                    path, loops = os.path.join(a.benchdir, "peers", "runtime_peers" + suffix), 0
                v, meta = run_one(path, wargs + extra, want, loops)
                res.setdefault((wl, name), []).append(v)
    print("# wake-path mechanisms: bench/pipe with each compiled out, %d alternating rounds, "
          "each a median of 5 runs" % a.rounds)
    print("# id mode: %s; placement: per workload (pipe --help); uname -r: %s" %
          (meta.get("id_mode"), platform.release()))
    for wl, (_, _, _, unit) in WORKLOADS.items():
        base = statistics.median(res[(wl, "unchanged")])
        print()
        print("%s (%s)" % (wl, unit))
        print("| variant | what is removed | median | min-max | ratio to unchanged |")
        print("|---|---|---|---|---|")
        for name, _, _, what, wls in VARIANTS:
            if wl not in wls:
                continue
            xs = res[(wl, name)]
            m = statistics.median(xs)
            print("| %s | %s | %.1f | %.1f-%.1f | %.2fx |" % (name, what, m, min(xs), max(xs), m / base))


if __name__ == "__main__":
    main()
