# SPDX-License-Identifier: MIT
"""cachemodel.py - E3's many-core cache model, calibrated on the seed's T3 table.

Usage: cachemodel.py [--fit]   (docs/benchmarks.md, "The cache model (E3m)")
  no option   print the stored parameters (FITTED) and the fit per cell
  --fit       run the fit from PRIOR, print its parameters and per-cell fit,
              exit 1 if they differ from FITTED (then paste them into FITTED)

The kernel's recent_cid test (T3): one thread per CPU, each pinned to its own
CPU; the threads burst one after another in a random order per round (a
seeded RNG), `delay_ms` apart; a burst increments the 16 KiB item of its
index. Where the item was last used, and how long ago, decides what a burst
costs:

  caches      private L2 per core (SMT siblings share it), one shared L3 per
              domain.
  costs       effective cycles per line of the 16 KiB burst (not load-to-use
              latencies: a stream from the own core's L2, the L3 or DRAM is
              prefetched, a line held by another core is fetched line by
              line); parameters l2, l3, peer_l2, remote, dram below, plus
              `compute` cycles of work per line.
  foreign     a line survives t ms of idleness in a private L2 with
  traffic     probability exp(-t/tau_l2_ms) and in the L3 with
              exp(-t/tau_l3_ms) (the two independent).
  a line      last used on the same core: l2 if it survived there, else l3
              if it survived there, else dram; last used on another core of
              the same domain: peer_l2 (a transfer from that core's L2) if it
              survived there, else l3, else dram; last used in another
              domain: remote if it survived in either cache there, else dram.
  a burst     LINES x (compute + the expected line cost).

Indexing (the id each burst uses):
  per-cpu   the CPU number.
  NAIVE     mm_cid before 6.13: a CPU keeps the cid it used last for
            expiry_ms after that use, then the cid is free again; a CPU with
            no kept cid takes the lowest free cid. The kernel frees a cid
            unused for 100 ms when its periodic scan runs, so expiry_ms is
            100 ms or more (fitted on EXPIRY_GRID).
  RECENT    6.13: as NAIVE, but a CPU first tries the cid it used last
            (recent_cid) when no other CPU keeps it, and a CPU without one
            takes a never-used cid while there is one (spread up to the
            CPU count) before the lowest free cid.
  LLC       as RECENT, but a CPU whose recent cid is kept by another CPU
            first takes the lowest free cid last used in its domain (the
            order of cachelocal's CL_CID_LLC: recent, LLC, spread, lowest).

Any sequence (fed by scripts/e3k.py with the cids a real kernel handed
out): sequence_cost() prices a list of (cpu, item, time, counted) bursts
with the same line costs; policy_items() gives the items a policy hands
the same bursts. The topology may be any object with cpus, core(cpu) and
domain(cpu).

Calibration (fit()): the parameters are fitted to the seed's published T3
table, SEED_T3 (eight rows, three columns). The schedules (which CPU used
each burst's item last and how long ago) do not depend on the cache
parameters, so they are computed once per cell and seed (FIT_ROUNDS
rounds, seeds FIT_SEEDS, the first round excluded, the mean over the seeds
as the seed averaged its runs); with the two decay times fixed a cell's
cost is linear in the five costs. The objective is the sum over the 24
cells of log(model ns / seed ns)^2, model ns = cycles / CLOCK_GHZ. For each
expiry of EXPIRY_GRID, a coordinate search in log space starts from PRIOR:
each move of MOVES (a parameter alone, or with those the ordering keeps
above it) multiplies by a step factor and by its inverse; a change is kept
when it lowers the objective and sensible() still holds (BOUNDS; l2 <= l3
<= dram, l3 <= peer_l2 <= remote, tau_l2 <= tau_l3); passes repeat until
none changes anything, then the step shrinks (STEPS). The expiry with the
lowest objective wins; its parameters, rounded to 4 digits, are FITTED
(`cachemodel.py --fit` redoes it, about half a minute). Not fitted:
compute (adding to it is adding to every cost) and CLOCK_GHZ (it scales
every cost).

What the fit shows: one sensible parameter set of this model reproduces
the published table within WITHIN per cell. What it does not show: that
the model's mechanisms are the hardware's (calibration() names the
parameters the table leaves free and those that sit on a limit of the
sensible region), or anything about topologies and delays outside the
table.
"""
import functools
import math
import random
import sys
from collections import Counter, OrderedDict

LINE = 64
LINES = 16384 // LINE            # 16 KiB burst
EXPIRY_MS = 100.0                # the kernel's cid expiry period before 6.13 (the least expiry_ms)
CLOCK_GHZ = 3.7                  # cycles -> ns for the seed's machine (EPYC 9654 boost)

# name: (cpus, cores, domains); cpu c is on core c % cores (SMT: c and c + cores)
TOPOLOGIES = {
    "8 cores/1 L3": (8, 8, 1),
    "24 cores/24 L3": (24, 24, 24),
    "192 cores/24 L3": (192, 192, 24),
    "384 threads/24 L3": (384, 192, 24),
}
POLICIES = ("per-cpu", "NAIVE", "RECENT", "LLC")

# The kernel change's published T3 table (../shared/reference/kernel-changes.md):
# ns per 16 KiB burst, 2x EPYC 9654, average of 5 runs. Columns per-cpu,
# mm_cid (the model's NAIVE), cache-local (the model's RECENT).
SEED_COLUMNS = ("per-cpu", "NAIVE", "RECENT")
SEED_NAMES = {"per-cpu": "per-cpu", "NAIVE": "mm_cid", "RECENT": "cache-local"}
SEED_T3 = (
    ("8 cores/1 L3", 200, (1374, 19289, 1336)),
    ("24 cores/24 L3", 200, (2423, 26721, 1594)),
    ("192 cores/24 L3", 200, (2291, 15826, 2153)),
    ("384 threads/24 L3", 200, (1874, 13234, 1907)),
    ("8 cores/1 L3", 10, (662, 756, 686)),
    ("24 cores/24 L3", 10, (1378, 3648, 1035)),
    ("192 cores/24 L3", 10, (1439, 10833, 1482)),
    ("384 threads/24 L3", 10, (1503, 10570, 1556)),
)

# Cycles per line and ms. PRIOR: the model's values before calibration (the
# old model charged another core's L2 copy the L3 latency: peer_l2 = l3).
PRIOR = {"compute": 4.0, "l2": 14.0, "l3": 50.0, "peer_l2": 50.0, "remote": 250.0,
         "dram": 350.0, "tau_l2_ms": 150.0, "tau_l3_ms": 60000.0, "expiry_ms": EXPIRY_MS}
COSTS = ("l2", "l3", "peer_l2", "remote", "dram")
RELATIONS = ("same core", "same domain", "other domain")
FREE = ("l2", "l3", "peer_l2", "remote", "dram", "tau_l2_ms", "tau_l3_ms")
# What a physically sensible parameter may be: from 1 cycle per line (a
# prefetched stream) up to 40 for the L2, 150 for the L3 and ~1000 for the
# others (a fetch across sockets at CLOCK_GHZ); an L2 copy lasting
# 10 ms .. 100 s, an L3 copy 0.1 s .. 10^4 s.
BOUNDS = {"l2": (1.0, 40.0), "l3": (1.0, 150.0), "peer_l2": (1.0, 1000.0),
          "remote": (1.0, 1000.0), "dram": (1.0, 1000.0),
          "tau_l2_ms": (10.0, 1e5), "tau_l3_ms": (100.0, 1e7)}
STEPS = (2.0, 1.25, 1.05, 1.01)
# The search's moves: each free parameter alone, then with the parameters
# the ordering keeps above it (so that the search can slide along a bound
# of sensible(), e.g. peer_l2 = remote).
ABOVE = {"l2": ("l3", "peer_l2", "remote", "dram"), "l3": ("peer_l2", "remote", "dram"),
         "peer_l2": ("remote",), "tau_l2_ms": ("tau_l3_ms",)}
MOVES = tuple(m for k in FREE for m in ((k,), (k,) + ABOVE[k] if k in ABOVE else None) if m)
# The kernel frees a cid unused for 100 ms when its periodic scan runs, and
# the scan runs from a tick while a thread of the process runs: the
# effective expiry is 100 ms or later. The fit tries these.
EXPIRY_GRID = (100.0, 125.0, 150.0, 200.0, 250.0, 300.0, 400.0, 500.0, 700.0, 1000.0)
FIT_ROUNDS = 6
FIT_SEEDS = (1, 2, 3, 4, 5)
WITHIN = 2.0                     # every cell: 1/WITHIN <= model/seed <= WITHIN

# fit() from PRIOR, rounded to 4 significant digits (cachemodel.py --fit).
FITTED = {"compute": 4.0, "l2": 7.424, "l3": 26.02, "peer_l2": 224.5, "remote": 224.5,
          "dram": 26.17, "tau_l2_ms": 2678.0, "tau_l3_ms": 9990000.0, "expiry_ms": 300.0}


class Topology:
    def __init__(self, cpus, cores, domains):
        if cpus <= 0 or cores <= 0 or domains <= 0 or cpus % cores or cores % domains:
            raise ValueError("bad topology %r" % ((cpus, cores, domains),))
        self.cpus, self.cores, self.domains = cpus, cores, domains

    def core(self, cpu):
        return cpu % self.cores

    def domain(self, cpu):
        return self.core(cpu) // (self.cores // self.domains)

    def shape(self):
        return (self.cpus, self.cores, self.domains)


def relation(topo, last_cpu, cpu):
    """Where the item was last used, seen from cpu: a key of simulate()'s placements."""
    if last_cpu is None:
        return None
    if topo.core(last_cpu) == topo.core(cpu):
        return "same core"
    if topo.domain(last_cpu) == topo.domain(cpu):
        return "same domain"
    return "other domain"


def relation_cost(rel, elapsed_ms, p):
    """Expected cycles to reach one line of the given relation, idle elapsed_ms."""
    if rel is None:
        return p["dram"]
    s2 = math.exp(-elapsed_ms / p["tau_l2_ms"])
    s3 = math.exp(-elapsed_ms / p["tau_l3_ms"])
    below = s3 * p["l3"] + (1.0 - s3) * p["dram"]
    if rel == "same core":
        return s2 * p["l2"] + (1.0 - s2) * below
    if rel == "same domain":
        return s2 * p["peer_l2"] + (1.0 - s2) * below
    cached = 1.0 - (1.0 - s2) * (1.0 - s3)
    return cached * p["remote"] + (1.0 - cached) * p["dram"]


def line_cost(topo, last_cpu, cpu, elapsed_ms, params=None):
    """Expected cycles to reach one line last used on last_cpu elapsed_ms ago."""
    return relation_cost(relation(topo, last_cpu, cpu), elapsed_ms, params or FITTED)


def burst_cost(topo, last_cpu, cpu, elapsed_ms, params=None):
    p = params or FITTED
    return LINES * (p["compute"] + line_cost(topo, last_cpu, cpu, elapsed_ms, p))


class _Ids:
    """The cid state of one process. Only kept cids (used within expiry_ms)
    are tracked: an expired one acts as no cid at all, so it is dropped."""

    def __init__(self, topo, policy, expiry_ms=EXPIRY_MS, bound=None):
        self.topo, self.policy, self.expiry_ms = topo, policy, expiry_ms
        self.bound = topo.cpus if bound is None else bound  # cids spread up to it
        self.live = OrderedDict()   # cpu -> (cid, time of last use), oldest first
        self.holder = {}            # kept cid -> its cpu
        self.recent = {}            # cpu -> cid used last
        self.last_dom = {}          # cid -> domain of its last use
        self.by_dom = {}            # domain -> cids last used there
        self.fresh = 0              # no cid below it is never-used

    def _expire(self, now):
        while self.live:
            cpu, (cid, t) = next(iter(self.live.items()))
            if now - t <= self.expiry_ms:
                break
            del self.live[cpu]
            del self.holder[cid]

    def _choose(self, cpu):
        smart = self.policy in ("RECENT", "LLC")
        r = self.recent.get(cpu)
        if smart and r is not None and r not in self.holder:
            return r
        if self.policy == "LLC" and r is not None:
            free = [c for c in self.by_dom.get(self.topo.domain(cpu), ()) if c not in self.holder]
            if free:
                return min(free)
        if smart and len(self.last_dom) < self.bound:
            while self.fresh in self.last_dom:
                self.fresh += 1
            return self.fresh
        cid = 0
        while cid in self.holder:
            cid += 1
        return cid

    def get(self, cpu, now):
        if self.policy == "per-cpu":
            return cpu
        self._expire(now)
        kept = self.live.pop(cpu, None)
        cid = kept[0] if kept else self._choose(cpu)
        other = self.holder.get(cid)
        if other is not None and other != cpu:
            del self.live[other]
        self.live[cpu] = (cid, now)
        self.holder[cid] = cpu
        self.recent[cpu] = cid
        dom = self.topo.domain(cpu)
        old = self.last_dom.get(cid)
        if old is not None:
            self.by_dom[old].discard(cid)
        self.last_dom[cid] = dom
        self.by_dom.setdefault(dom, set()).add(cid)
        return cid


def policy_items(topo, policy, bursts, expiry_ms=EXPIRY_MS, bound=None):
    """The item (index) a policy hands each burst of a sequence of
    (cpu, time ms) bursts, in order: the CPU (per-cpu) or a cid (NAIVE,
    RECENT, LLC; cids spread up to bound, default the CPU count)."""
    ids = _Ids(topo, policy, expiry_ms, bound)
    return [ids.get(cpu, now) for cpu, now in bursts]


def sequence_events(topo, bursts):
    """((relation, idle ms), bursts) of a sequence of (cpu, item, time ms,
    counted) bursts in order: each counted burst whose item was used before,
    by where and how long ago that was. Uncounted bursts (a warm-up) only
    leave their item behind."""
    last = {}  # item -> (cpu, time)
    events = Counter()
    for cpu, item, now, counted in bursts:
        prev = last.get(item)
        if counted and prev is not None:
            events[(relation(topo, prev[0], cpu), now - prev[1])] += 1
        last[item] = (cpu, now)
    return tuple(sorted(events.items()))


def sequence_cost(topo, bursts, params=None):
    """The model's cost of a given sequence of (cpu, item, time ms, counted)
    bursts (any source of items: a policy, or cids a kernel handed out):
    mean cycles per counted burst, placement counts, bursts counted."""
    events = sequence_events(topo, bursts)
    place = placements(events)
    return events_cost(events, params or FITTED), place, sum(place.values())


@functools.lru_cache(maxsize=None)
def _schedule(shape, policy, delay_ms, rounds, seed, expiry_ms):
    topo = Topology(*shape)
    rng = random.Random(seed)
    ids = _Ids(topo, policy, expiry_ms)
    bursts = []
    now = 0.0
    for r in range(rounds):
        order = list(range(topo.cpus))
        rng.shuffle(order)
        for cpu in order:
            bursts.append((cpu, ids.get(cpu, now), now, r > 0))
            now += delay_ms
    return sequence_events(topo, bursts)


def schedule(topo, policy, delay_ms, rounds, seed, expiry_ms=EXPIRY_MS):
    """((relation, idle ms), bursts) of a run, first round excluded; does not
    depend on the cache parameters (cached)."""
    return _schedule(topo.shape(), policy, float(delay_ms), rounds, seed, float(expiry_ms))


def events_cost(events, p):
    """Mean cycles per burst over a schedule's events."""
    n = sum(c for _, c in events)
    if not n:
        return 0.0
    return LINES * (p["compute"] + sum(c * relation_cost(rel, t, p) for (rel, t), c in events) / n)


def placements(events):
    """Bursts per relation (where the item was last used) of a schedule's events."""
    place = {"same core": 0, "same domain": 0, "other domain": 0}
    for (rel, _), c in events:
        place[rel] += c
    return place


def simulate(topo, policy, delay_ms, rounds, seed, params=None):
    """Mean cycles per burst and placement counts, first round excluded."""
    p = params or FITTED
    events = schedule(topo, policy, delay_ms, rounds, seed, p["expiry_ms"])
    return events_cost(events, p), placements(events)


def table(delays=(10, 200), rounds=FIT_ROUNDS, seeds=FIT_SEEDS, topologies=None, params=None):
    """Rows in the kernel table's shape: cycles per burst (mean over seeds,
    median, min, max) per policy, per topology and delay; speedup NAIVE /
    RECENT of the means."""
    rows = []
    for delay in delays:
        for name, shape in (topologies or TOPOLOGIES).items():
            topo = Topology(*shape)
            row = {"config": name, "delay_ms": delay}
            for pol in POLICIES:
                vals = sorted(simulate(topo, pol, delay, rounds, s, params)[0] for s in seeds)
                row[pol] = {"mean": sum(vals) / len(vals), "median": vals[len(vals) // 2],
                            "min": vals[0], "max": vals[-1]}
            row["speedup"] = row["NAIVE"]["mean"] / row["RECENT"]["mean"]
            rows.append(row)
    return rows


def seed_cells(expiry_ms=EXPIRY_MS, rounds=FIT_ROUNDS, seeds=FIT_SEEDS):
    """The 24 cells of SEED_T3, each with its seeds' schedules merged: per
    idle time, the weight of each relation (all weights sum to 1: the mean
    over seeds)."""
    cells = []
    for config, delay, values in SEED_T3:
        topo = Topology(*TOPOLOGIES[config])
        for col, seed_ns in zip(SEED_COLUMNS, values):
            bins = {}
            runs = [schedule(topo, col, delay, rounds, s, expiry_ms) for s in seeds]
            for ev in runs:
                n = sum(c for _, c in ev)
                for (rel, t), c in ev:
                    w = bins.setdefault(t, [0.0, 0.0, 0.0])
                    w[RELATIONS.index(rel)] += c / n / len(runs)
            ts = sorted(bins)
            cells.append({"config": config, "delay_ms": delay, "column": col,
                          "seed_ns": float(seed_ns), "expiry_ms": float(expiry_ms), "ts": ts,
                          "w": [[bins[t][i] for t in ts] for i in range(3)], "coef": {}})
    return cells


def _coefficients(cell, tau_l2, tau_l3):
    """Per line, the weight of each cost parameter in the cell (the cost is
    linear in them once the two survival times are fixed; cached per pair)."""
    key = (tau_l2, tau_l3)
    k = cell["coef"].get(key)
    if k is None:
        a, b = -1.0 / tau_l2, -1.0 / tau_l3
        s2 = [math.exp(a * t) for t in cell["ts"]]
        s3 = [math.exp(b * t) for t in cell["ts"]]
        core, dom, other = cell["w"]
        near = [x + y for x, y in zip(core, dom)]
        gone2 = [1.0 - x for x in s2]
        l3 = sum(w * g * y for w, g, y in zip(near, gone2, s3))
        remote = sum(w * (1.0 - g * (1.0 - y)) for w, g, y in zip(other, gone2, s3))
        k = {"l2": sum(w * x for w, x in zip(core, s2)),
             "peer_l2": sum(w * x for w, x in zip(dom, s2)), "l3": l3, "remote": remote,
             "dram": sum(w * g for w, g in zip(near, gone2)) - l3 + sum(other) - remote}
        cell["coef"][key] = k
    return k


def cell_ns(cell, p):
    """The model's ns per burst of a cell (p's expiry must be the cell's)."""
    k = _coefficients(cell, p["tau_l2_ms"], p["tau_l3_ms"])
    return LINES * (p["compute"] + sum(k[x] * p[x] for x in COSTS)) / CLOCK_GHZ


def objective(p, cells):
    return sum(math.log(cell_ns(c, p) / c["seed_ns"]) ** 2 for c in cells)


def sensible(p):
    """Inside BOUNDS and ordered as the hardware is (see the module doc)."""
    return (all(lo <= p[k] <= hi for k, (lo, hi) in BOUNDS.items())
            and p["l2"] <= p["l3"] <= p["dram"] and p["l3"] <= p["peer_l2"] <= p["remote"]
            and p["tau_l2_ms"] <= p["tau_l3_ms"])


def at_bounds(p, rel=0.01):
    """The limits of sensible() that p sits on (within rel): a fit that
    stops there wanted to go further than a sensible model allows."""
    out = [k + (" at its lower bound" if abs(p[k] / lo - 1) <= rel else " at its upper bound")
           for k, (lo, hi) in BOUNDS.items()
           if abs(p[k] / lo - 1) <= rel or abs(p[k] / hi - 1) <= rel]
    for a, b in (("l2", "l3"), ("l3", "dram"), ("l3", "peer_l2"), ("peer_l2", "remote"),
                 ("tau_l2_ms", "tau_l3_ms")):
        if p[b] <= p[a] * (1 + rel):
            out.append("%s = %s" % (a, b))
    if p["expiry_ms"] <= EXPIRY_GRID[0] or p["expiry_ms"] >= EXPIRY_GRID[-1]:
        out.append("expiry_ms at the end of its grid")
    return out


def _search(p, cells):
    """Coordinate search in log space from p (module doc)."""
    if not sensible(p):
        raise ValueError("start point outside the sensible region")
    best = objective(p, cells)
    for step in STEPS:
        changed = True
        while changed:
            changed = False
            for move in MOVES:
                for f in (step, 1.0 / step):
                    q = dict(p)
                    for k in move:
                        q[k] = p[k] * f
                    if not sensible(q):
                        continue
                    v = objective(q, cells)
                    if v < best - 1e-12:
                        p, best, changed = q, v, True
                        break
    return p, best


def _rounded(p):
    return {k: float("%.4g" % v) for k, v in p.items()}


def fit(trace=None):
    """The calibrated parameters: for each expiry of EXPIRY_GRID a coordinate
    search from PRIOR; the best objective wins (the lower expiry on a tie);
    rounded to 4 significant digits. trace (a list) gets (expiry, objective,
    worst cell factor) of each search."""
    best = None
    for expiry in EXPIRY_GRID:
        cells = seed_cells(expiry)
        p, v = _search(dict(PRIOR, expiry_ms=expiry), cells)
        if trace is not None:
            trace.append((expiry, v, math.exp(max(abs(math.log(cell_ns(c, p) / c["seed_ns"]))
                                                  for c in cells))))
        if best is None or v < best[1] - 1e-12:
            best = (p, v)
    return _rounded(best[0])


def calibration(params=None):
    """The fit per cell at params (default FITTED): seed ns, model ns, ratio
    model/seed; the worst cell's factor (max of ratio and 1/ratio); how much
    the objective grows when each free parameter moves by 25% (near 0: the
    table does not constrain it)."""
    p = params or FITTED
    cells = seed_cells(p["expiry_ms"])
    out = []
    for c in cells:
        m = cell_ns(c, p)
        out.append({"config": c["config"], "delay_ms": c["delay_ms"], "column": c["column"],
                    "seed_column": SEED_NAMES[c["column"]], "seed_ns": c["seed_ns"],
                    "model_ns": m, "ratio": m / c["seed_ns"]})
    value = objective(p, cells)
    sens = {}
    for k in FREE + ("expiry_ms",):
        grown = []
        for f in (1.25, 1 / 1.25):
            q = dict(p)
            q[k] = p[k] * f
            if k == "expiry_ms" or sensible(q):
                qc = seed_cells(q["expiry_ms"]) if k == "expiry_ms" else cells
                grown.append(objective(q, qc) - value)
        sens[k] = min(grown) if grown else None
    worst = max(max(c["ratio"], 1.0 / c["ratio"]) for c in out)
    return {"parameters": dict(p), "prior": dict(PRIOR), "clock_ghz": CLOCK_GHZ,
            "rounds": FIT_ROUNDS, "seeds": list(FIT_SEEDS),
            "objective": "sum of log(model ns / seed ns)^2 over the 24 cells",
            "objective_value": value, "sensitivity": sens, "at_bounds": at_bounds(p),
            "cells": out, "worst_factor": worst, "within": WITHIN,
            "within_all": worst <= WITHIN}


def parameters(p=None):
    """The constants the report prints beside the fitted parameters."""
    return dict(p or FITTED, line_bytes=LINE, lines_per_burst=LINES, clock_ghz=CLOCK_GHZ)


PARAMETERS = parameters()


def _print_calibration(cal):
    print("parameters: %s" % cal["parameters"])
    print("%-18s %6s %-12s %9s %9s %7s" % ("config", "delay", "column", "seed ns", "model ns", "ratio"))
    for c in cal["cells"]:
        print("%-18s %4d ms %-12s %9.0f %9.0f %6.2fx" % (
            c["config"], c["delay_ms"], c["seed_column"], c["seed_ns"], c["model_ns"], c["ratio"]))
    print("worst cell factor %.2fx (%s %.1fx)" % (
        cal["worst_factor"], "within" if cal["within_all"] else "NOT within", cal["within"]))
    print("objective %.4f; grows by this when a parameter moves 25%%: %s" % (
        cal["objective_value"], ", ".join("%s %.3g" % kv for kv in cal["sensitivity"].items())))
    print("at a limit of the sensible region: %s" % (", ".join(cal["at_bounds"]) or "none"))


def main(argv):
    if argv[1:] not in ([], ["--fit"]):
        print(__doc__.split("\n\n")[0])
        return 2
    if argv[1:] == ["--fit"]:
        trace = []
        p = fit(trace)
        for expiry, v, worst in trace:
            print("expiry %6.0f ms: objective %.3f, worst cell %.2fx" % (expiry, v, worst))
        _print_calibration(calibration(p))
        if p != FITTED:
            print("differs from FITTED: paste the parameters above into FITTED")
            return 1
        return 0
    _print_calibration(calibration(FITTED))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
