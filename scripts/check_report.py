#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_report.py REPORT.JSON - validate a report.json of scripts/bench_report.py.

Checks: one JSON document; schema_version 1; machine/commit/compiler present;
every experiment of bench_report.EXPERIMENTS (and the cache model E3m)
present once; each experiment's fields typed; a verdict from the rule's set;
a measured experiment has before/after/gain numbers, min <= median <= max on
each side, a gain that matches before/after in the stated direction and a
verdict that agrees with it (reproduced: gain > 1, contrary: gain < 1);
E3m's fit to the seed's T3 table (check_calibration()) and its verdict on
the seed's 200 ms rows (check_model_headline()); the "cross_cpu"
object (check_cross_cpu()); the "peers" array (check_peers()); the "rpc"
object of the RPC benchmark (check_rpc()).
Exit 0 when valid, 1 with one line per problem otherwise.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402

VERDICTS = ("reproduced", "within noise", "contrary", "not run")
NUM = (int, float)


def check(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["top level is not an object"]
    if doc.get("schema_version") != bench_report.SCHEMA_VERSION:
        errs.append("schema_version is %r" % doc.get("schema_version"))
    for k in ("commit", "compiler"):
        if not isinstance(doc.get(k), str) or not doc.get(k):
            errs.append("%s missing or not a string" % k)
    m = doc.get("machine")
    if not isinstance(m, dict):
        errs.append("machine missing")
    else:
        for k, t in (("cpu_model", str), ("cpus", int), ("kernel", str), ("glibc", str),
                     ("compiler", str), ("id_mode", str), ("rseq_ops_mode", str),
                     ("load_before", NUM), ("load_after", NUM), ("mode", str)):
            if not isinstance(m.get(k), t):
                errs.append("machine.%s missing or mistyped" % k)
    exps = doc.get("experiments")
    if not isinstance(exps, list):
        return errs + ["experiments is not a list"]
    ids = [e.get("id") for e in exps if isinstance(e, dict)]
    want = [e["id"] for e in bench_report.EXPERIMENTS] + ["E3m"]
    for i in want:
        if ids.count(i) != 1:
            errs.append("experiment %s present %d times" % (i, ids.count(i)))
    for e in exps:
        if not isinstance(e, dict):
            errs.append("an experiment is not an object")
            continue
        name = e.get("id", "?")
        for k in ("id", "technique", "claim", "metric", "unit", "verdict", "reason"):
            if not isinstance(e.get(k), str):
                errs.append("%s.%s not a string" % (name, k))
        if not isinstance(e.get("higher_is_better"), bool):
            errs.append("%s.higher_is_better not a boolean" % name)
        if not isinstance(e.get("runs"), int):
            errs.append("%s.runs not an integer" % name)
        if not isinstance(e.get("rows"), list):
            errs.append("%s.rows not a list" % name)
        if e.get("verdict") not in VERDICTS:
            errs.append("%s.verdict %r not one of %s" % (name, e.get("verdict"), VERDICTS))
            continue
        if e["verdict"] == "not run":
            continue
        nums = ("before", "after", "gain", "before_min", "before_max", "after_min", "after_max")
        if not all(isinstance(e.get(k), NUM) and not isinstance(e.get(k), bool) for k in nums):
            errs.append("%s: a measured experiment needs numbers for %s" % (name, ", ".join(nums)))
            continue
        for side in ("before", "after"):
            if not e[side + "_min"] <= e[side] <= e[side + "_max"]:
                errs.append("%s: %s median outside its min-max" % (name, side))
        if e["before"] > 0 and e["after"] > 0:
            g = e["after"] / e["before"] if e["higher_is_better"] else e["before"] / e["after"]
            if not math.isclose(g, e["gain"], rel_tol=1e-6):
                errs.append("%s: gain %g is not %g" % (name, e["gain"], g))
        if (e["verdict"] == "reproduced" and not e["gain"] > 1) or (
                e["verdict"] == "contrary" and not e["gain"] < 1):
            errs.append("%s: gain %.2fx beside the verdict %s" % (name, e["gain"], e["verdict"]))
        if e["id"] == "E3m":
            errs += check_calibration(e.get("calibration"))
            errs += check_model_headline(e)
    return (errs + check_cross_cpu(doc.get("cross_cpu")) + check_floors(doc.get("floors"))
            + check_peers(doc) + check_rpc(doc.get("rpc")))


def check_cross_cpu(c):
    """The "cross_cpu" object (null: not measured): numbers, each median
    inside its range, goal_met telling the truth about the ratio."""
    if c is None:
        return []
    if not isinstance(c, dict):
        return ["cross_cpu is not an object or null"]
    keys = ("pipe", "pipe_min", "pipe_max", "line", "line_min", "line_max", "ratio",
            "ratio_min", "ratio_max")
    if not all(isinstance(c.get(k), NUM) and not isinstance(c.get(k), bool) and c.get(k) > 0
               for k in keys):
        return ["cross_cpu: %s must be positive numbers" % ", ".join(keys)]
    errs = ["cross_cpu: %s %g not within %g-%g" % (k, c[k], c[k + "_min"], c[k + "_max"])
            for k in ("pipe", "line", "ratio") if not c[k + "_min"] <= c[k] <= c[k + "_max"]]
    if c.get("goal_met") not in (None, c["ratio"] <= bench_report.CROSS_CPU_BOUND):
        errs.append("cross_cpu: goal_met %r beside the ratio %.2fx" % (c.get("goal_met"), c["ratio"]))
    return errs


def check_floors(f):
    """The "floors" object (null: not measured): every row's median inside
    its range, its bound the one FLOOR_GOALS gives it, goal_met telling the
    truth about the ratio; skipped reasons are strings."""
    if f is None:
        return []
    if not isinstance(f, dict) or not isinstance(f.get("rows"), list) \
            or not isinstance(f.get("skipped"), list):
        return ["floors is not an object with rows and skipped arrays, or null"]
    errs = ["floors: skipped %r is not a string" % s for s in f["skipped"] if not isinstance(s, str)]
    for i, r in enumerate(f["rows"]):
        name = "floors[%d]" % i
        if not isinstance(r, dict) or not all(
                isinstance(r.get(k), NUM) and not isinstance(r.get(k), bool) and r.get(k) > 0
                for k in ("value", "min", "max", "bound")):
            errs.append("%s: value, min, max, bound must be positive numbers" % name)
            continue
        if not r["min"] <= r["value"] <= r["max"]:
            errs.append("%s: ratio %g not within %g-%g" % (name, r["value"], r["min"], r["max"]))
        bound, goal = bench_report.floor_goal(r)
        if (bound, goal) != (r["bound"], r.get("goal")):
            errs.append("%s: bound %r, goal %r are not the project's" % (name, r["bound"], r.get("goal")))
        if r.get("goal_met") not in (None, r["value"] <= r["bound"]):
            errs.append("%s: goal_met %r beside the ratio %.2fx" % (name, r.get("goal_met"), r["value"]))
    return errs


def check_rpc(rpc):
    """The "rpc" object (null: the RPC benchmark did not run): max
    throughput medians inside their min-max; for every server measured, a
    latency row at each load level with p50 <= p99 <= p99.9, each inside
    its min-max; every goal's value = ours/theirs (throughput) or
    theirs/ours (p99) of the rows, goal_met telling the truth about it."""
    if rpc is None:
        return []
    if not isinstance(rpc, dict) or not all(isinstance(rpc.get(k), list)
                                            for k in ("max", "latency", "skipped", "goals")):
        return ["rpc: not an object with max, latency, skipped and goals lists"]
    errs = []

    def num(v):
        return isinstance(v, NUM) and not isinstance(v, bool)
    for m in rpc["max"]:
        if not all(num(m.get(k)) for k in ("median", "min", "max", "reply_bytes")):
            errs.append("rpc: a max row needs median, min, max, reply_bytes numbers")
        elif not m["min"] <= m["median"] <= m["max"]:
            errs.append("rpc: max %s %d B: median outside its min-max" % (m.get("server"), m["reply_bytes"]))
        if "server_kernel_share" in m and not (num(m["server_kernel_share"])
                                               and 0 < m["server_kernel_share"] <= 1):
            errs.append("rpc: max %s: server_kernel_share not a share" % m.get("server"))
        for k in ("server_cpu_busy", "client_cpu_busy"):
            if k in m and not (num(m[k]) and 0 <= m[k] <= 1.5):
                errs.append("rpc: max %s: %s not a share of CPU time" % (m.get("server"), k))
    have = {}
    for x in rpc["latency"]:
        keys = ("p50", "p99", "p999", "rate", "load_pct", "reply_bytes")
        if not all(num(x.get(k)) for k in keys) or not all(
                num(x.get(q + e)) for q in ("p50", "p99", "p999") for e in ("_min", "_max")):
            errs.append("rpc: a latency row needs numbers for %s and their min/max" % ", ".join(keys))
            continue
        name = "rpc: %s %d B at %d%%" % (x.get("server"), x["reply_bytes"], x["load_pct"])
        have.setdefault((x.get("server"), x["reply_bytes"]), set()).add(x["load_pct"])
        if not x["p50"] <= x["p99"] <= x["p999"]:
            errs.append("%s: p50 <= p99 <= p99.9 does not hold" % name)
        for q in ("p50", "p99", "p999"):
            if not x[q + "_min"] <= x[q] <= x[q + "_max"]:
                errs.append("%s: %s outside its min-max" % (name, q))
        if "cpu_us_per_req" in x:
            parts = [x.get(k) for k in ("cpu_us_per_req", "user_us_per_req", "sys_us_per_req")]
            if not all(num(v) and v >= 0 for v in parts):
                errs.append("%s: CPU per request and its user and system parts must be numbers "
                            ">= 0" % name)
            elif parts[1] + parts[2] > 0 and not math.isclose(parts[1] + parts[2], parts[0],
                                                               rel_tol=1e-3, abs_tol=1e-3):
                errs.append("%s: user + system per request is not the CPU per request" % name)
            sc = x.get("syscalls_per_req")
            if sc is not None and not (num(sc) and sc >= 0):
                errs.append("%s: system calls per request not a number >= 0 or null" % name)
    for key, levels in have.items():
        if sorted(levels) != sorted(bench_report.RPC_LEVELS):
            errs.append("rpc: %s %d B: load levels %s, want %s" % (
                key[0], key[1], sorted(levels), list(bench_report.RPC_LEVELS)))
    for g in rpc["goals"]:
        if g.get("goal_met") not in (True, False, None):
            errs.append("rpc: goal %s goal_met not a boolean or null" % g.get("id"))
            continue
        if "generator_bound" in g and g["generator_bound"] != (
                min(g.get("generator_busy") or [0]) >= bench_report.RPC_GEN_BOUND):
            errs.append("rpc: goal %s: generator_bound does not follow generator_busy" % g.get("id"))
        if "no_user_work_bound" in g and not (
                num(g.get("other_kernel_share")) and g["other_kernel_share"] > 0
                and abs(g["no_user_work_bound"] * g["other_kernel_share"] - 1) < 1e-9):
            errs.append("rpc: goal %s: no_user_work_bound is not 1/other_kernel_share" % g.get("id"))
        if g.get("value") is None:
            if g.get("goal_met") is not None:
                errs.append("rpc: goal %s judged without a value" % g.get("id"))
            continue
        if not all(num(g.get(k)) and g.get(k) > 0 for k in ("ours", "theirs", "value", "bound")):
            errs.append("rpc: goal %s needs positive ours, theirs, value, bound" % g.get("id"))
            continue
        want = (g["ours"] / g["theirs"] if str(g.get("id", "")).startswith("max")
                else g["theirs"] / g["ours"])
        if not math.isclose(want, g["value"], rel_tol=1e-6):
            errs.append("rpc: goal %s value %g is not %g" % (g.get("id"), g["value"], want))
        if g["goal_met"] not in (None, g["value"] >= g["bound"]):
            errs.append("rpc: goal %s goal_met %r beside %.2fx (bound %.2f)" % (
                g.get("id"), g["goal_met"], g["value"], g["bound"]))
    return errs


def check_calibration(cal):
    """E3m's fit to the seed's T3 table: every cell of the seed's table
    once, each ratio = model/seed, and within_all telling the truth."""
    if not isinstance(cal, dict) or not isinstance(cal.get("cells"), list):
        return ["E3m: calibration (the fit to the seed's table) missing"]
    errs = []
    want = {(c, d, col) for c, d, _ in bench_report.cachemodel.SEED_T3
            for col in bench_report.cachemodel.SEED_COLUMNS}
    got = []
    for c in cal["cells"]:
        if not isinstance(c, dict) or not all(
                isinstance(c.get(k), NUM) and not isinstance(c.get(k), bool) and c.get(k) > 0
                for k in ("seed_ns", "model_ns", "ratio")):
            errs.append("E3m: a calibration cell needs positive seed_ns, model_ns, ratio")
            continue
        got.append((c.get("config"), c.get("delay_ms"), c.get("column")))
        if not math.isclose(c["ratio"], c["model_ns"] / c["seed_ns"], rel_tol=1e-6):
            errs.append("E3m: calibration ratio %g is not model/seed" % c["ratio"])
    if sorted(got, key=str) != sorted(want, key=str):
        errs.append("E3m: calibration cells are not the seed's %d cells" % len(want))
    within = cal.get("within")
    if isinstance(within, NUM) and got and not errs:
        truth = all(1 / within <= c["ratio"] <= within for c in cal["cells"])
        if cal.get("within_all") is not truth:
            errs.append("E3m: calibration within_all is %r, the cells say %r"
                        % (cal.get("within_all"), truth))
    elif not errs:
        errs.append("E3m: calibration within missing")
    return errs


def check_model_headline(e):
    """E3m judged on the seed's headline (bench_report.model_headline()):
    a row per seed topology at 200 ms with the seed's speedup and the
    direction its own speedup gives; the gain their geometric mean; the
    verdict reproduced only when every row is; goal_met telling the truth."""
    h = e.get("headline")
    if not isinstance(h, dict) or not isinstance(h.get("rows"), list):
        return ["E3m: headline (the rows at %d ms) missing" % bench_report.MODEL_HEADLINE_MS]
    errs = []
    ms = bench_report.MODEL_HEADLINE_MS
    seed = {c: v[1] / v[2] for c, d, v in bench_report.cachemodel.SEED_T3 if d == ms}
    rows = h["rows"]
    if h.get("delay_ms") != ms or sorted(str(r.get("config")) for r in rows
                                         if isinstance(r, dict)) != sorted(seed):
        return ["E3m: headline rows are not the seed's %d rows at %d ms" % (len(seed), ms)]
    for r in rows:
        if not all(isinstance(r.get(k), NUM) and not isinstance(r.get(k), bool) and r.get(k) > 0
                   for k in ("speedup", "seed_speedup")):
            return ["E3m: headline row %s needs positive speedup and seed_speedup" % r["config"]]
        if not math.isclose(r["seed_speedup"], seed[r["config"]], rel_tol=1e-6):
            errs.append("E3m: headline row %s: seed_speedup is not the seed's" % r["config"])
        if r.get("verdict") != bench_report.model_direction(r["speedup"]):
            errs.append("E3m: headline row %s: verdict %r beside %.2fx" % (
                r["config"], r.get("verdict"), r["speedup"]))
    gm = bench_report.geomean(r["speedup"] for r in rows)
    if not math.isclose(gm, e["gain"], rel_tol=1e-6):
        errs.append("E3m: gain %.4g is not the geometric mean %.4g of the rows at %d ms"
                    % (e["gain"], gm, ms))
    want = bench_report.model_verdict(r["speedup"] for r in rows)
    if e["verdict"] != want:
        errs.append("E3m: verdict %s, the rows at %d ms say %s" % (e["verdict"], ms, want))
    vs = gm / bench_report.geomean(seed.values())
    truth = 1 / bench_report.MODEL_HEADLINE_WITHIN <= vs <= bench_report.MODEL_HEADLINE_WITHIN
    if e.get("goal_met") not in (None, truth):
        errs.append("E3m: goal_met %r beside %.2fx of the seed's geometric mean"
                    % (e.get("goal_met"), vs))
    return errs


def check_peers(doc):
    """The "peers" array: each entry typed, gain matching ours/theirs in the
    stated direction, goal_met a boolean only where a goal is named."""
    errs = []
    peers = doc.get("peers")
    if not isinstance(peers, list):
        return ["peers is not a list"]
    if not isinstance(doc.get("peers_skipped", []), list):
        errs.append("peers_skipped is not a list")
    for i, p in enumerate(peers):
        name = "peers[%d]" % i
        if not isinstance(p, dict):
            errs.append("%s is not an object" % name)
            continue
        for k in ("structure", "peer", "workload", "unit"):
            if not isinstance(p.get(k), str) or not p.get(k):
                errs.append("%s.%s not a string" % (name, k))
        if not all(isinstance(p.get(k), NUM) and not isinstance(p.get(k), bool)
                   for k in ("ours", "theirs", "gain")):
            errs.append("%s: ours, theirs and gain must be numbers" % name)
            continue
        if p["ours"] > 0 and p["theirs"] > 0:
            g = p["ours"] / p["theirs"] if p.get("higher_is_better") else p["theirs"] / p["ours"]
            if not math.isclose(g, p["gain"], rel_tol=1e-3):
                errs.append("%s: gain %g is not %g" % (name, p["gain"], g))
        if p.get("goal") is None and p.get("goal_met") is not None:
            errs.append("%s: goal_met without a goal" % name)
        if p.get("goal_met") not in (True, False, None):
            errs.append("%s.goal_met not a boolean or null" % name)
    return errs


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print("usage: check_report.py REPORT.JSON")
        return 0 if len(sys.argv) == 2 else 2
    try:
        with open(sys.argv[1]) as f:
            doc = json.load(f)
    except (OSError, ValueError) as ex:
        print("check_report: %s: %s" % (sys.argv[1], ex))
        return 1
    errs = check(doc)
    for e in errs:
        print("check_report: %s: %s" % (sys.argv[1], e))
    if not errs:
        print("check_report: %s: valid (%d experiments)" % (sys.argv[1], len(doc["experiments"])))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
