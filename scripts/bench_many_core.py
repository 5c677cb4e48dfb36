# SPDX-License-Identifier: MIT
"""bench_many_core.py - what a 2-CPU machine cannot time, as one command.

Usage: bench_many_core.py [--dry] [--out DIR] [--bench DIR] [--smp DIR]
                          [--budget-s S] [--sysfs ROOT] [--plan]
       bench_many_core.py --check REPORT.json

`make bench-many-core` runs it on a machine with at least 8 cores (docs:
docs/benchmarks.md, "Many cores"); `make bench-many-core-dry` runs the same
steps with the smallest sizes (CI, any machine with 2 CPUs). Every step runs
with its own CPU list (taskset) chosen from the machine's topology (sysfs:
cores, last-level caches, nodes):

  e3 10ms / e3 200ms   bench/cid_bursts with real bursts, one thread per
                       core (one CPU of each core, spread over the LLCs),
                       10 ms and 200 ms between bursts: cpu_id, the kernel's
                       mm_cid, NAIVE, RECENT and LLC cids (T3's headline)
  pipe in-LLC          bench/pipe --cross-cpu on two cores of one LLC, and
  pipe cross-LLC       on two cores of two LLCs: the runtime's round trip
                       beside that pair's cache-line round trip
  rq scale             bench/rqscale (the EEVDF runqueue to 100,000 tasks,
                       and fib on one worker per allowed CPU)
  rpc Nw               bench/rpc/rpc with the servers on N = 1, 2, 4 CPUs
                       (workers, GOMAXPROCS) and the load generator on the
                       other CPUs (at most 16 threads): cachelocal, Go, epoll
  smp probes           tests/smp's programs natively (DURATION each), and
                       e3k_bursts (the real kernel's mm_cid choices) priced
                       by scripts/e3k.py's cache model

The full run is sized to the budget (default 480 s, the 8 minutes a rarely
lent machine gives): each step has an estimate from the machine's core
count and a timeout; a step that would start past the budget is skipped
with a note, never cut silently. The report (DIR/report.md and
DIR/report.json) names the machine (host name, CPU model, cores, threads,
LLCs, nodes, kernel, the CPUs each step used) and holds every step's
result lines, exit status and time. --check validates a report.json
(exit 1 with the errors); --plan prints the steps and exits.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

SCHEMA = 1
BUDGET_S = 480
MIN_CORES = 8
RPC_WORKERS = (1, 2, 4)
RPC_MAX_CLIENTS = 16
SMP_PROGS = ("smp_topology", "smp_cid", "smp_structures", "smp_balance", "smp_pool_numa",
             "smp_runtime")
E3_KINDS = 5  # cid_bursts' index kinds: cpu_id, kernel-mm_cid, NAIVE, RECENT, LLC
E3_RUNS = 5   # the benches' minimum number of runs


# ---------------------------------------------------------------- topology

def parse_list(s):
    """A sysfs CPU list ("0-3,8,10-11") -> sorted list of ints."""
    out = []
    for part in s.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out += range(int(a), int(b) + 1)
        else:
            out.append(int(part))
    return sorted(set(out))


def fmt_list(cpus):
    """[0,1,2,5] -> "0-2,5" (taskset's and sysfs's form)."""
    cpus = sorted(cpus)
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def topology(root="/sys", allowed=None):
    """The machine as the steps need it: allowed online CPUs, and for each
    its core (the first CPU of its SMT siblings), its LLC (the first CPU of
    the highest cache level's shared list) and its node. Missing files give
    one core per CPU, one LLC, one node (never a failure)."""
    cpu_dir = os.path.join(root, "devices/system/cpu")
    online = parse_list(_read(os.path.join(cpu_dir, "online")) or "0")
    cpus = [c for c in online if allowed is None or c in allowed]
    core, llc, node = {}, {}, {}
    for c in cpus:
        d = os.path.join(cpu_dir, "cpu%d" % c)
        sib = _read(os.path.join(d, "topology/thread_siblings_list")) or \
            _read(os.path.join(d, "topology/core_cpus_list"))
        core[c] = parse_list(sib)[0] if sib else c
        best, share = -1, None
        cache = os.path.join(d, "cache")
        for idx in sorted(os.listdir(cache)) if os.path.isdir(cache) else []:
            lvl = _read(os.path.join(cache, idx, "level"))
            typ = _read(os.path.join(cache, idx, "type")) or ""
            lst = _read(os.path.join(cache, idx, "shared_cpu_list"))
            if lvl and lst and typ != "Instruction" and int(lvl) > best:
                best, share = int(lvl), lst
        llc[c] = parse_list(share)[0] if share else cpus[0]
    node_dir = os.path.join(root, "devices/system/node")
    for n in sorted(os.listdir(node_dir)) if os.path.isdir(node_dir) else []:
        m = re.match(r"node(\d+)$", n)
        lst = _read(os.path.join(node_dir, n, "cpulist")) if m else None
        for c in parse_list(lst) if lst else []:
            if c in core:
                node[c] = int(m.group(1))
    for c in cpus:
        node.setdefault(c, 0)
    return {"cpus": cpus, "core": core, "llc": llc, "node": node}


def groups(topo, key):
    """{id: [cpus]} by "core", "llc" or "node"."""
    out = {}
    for c in topo["cpus"]:
        out.setdefault(topo[key][c], []).append(c)
    return out


def one_per_core(topo):
    """One CPU of each core (its first), interleaved over the LLCs: the
    first n of the list spread over as many LLCs as n allows."""
    by_llc = {}
    for first, cpus in sorted(groups(topo, "core").items()):
        by_llc.setdefault(topo["llc"][cpus[0]], []).append(cpus[0])
    lists = [v for _, v in sorted(by_llc.items())]
    out = []
    for i in range(max((len(v) for v in lists), default=0)):
        out += [v[i] for v in lists if i < len(v)]
    return out


def pipe_pairs(topo):
    """(in-LLC pair or None, cross-LLC pair or None, why-not texts): two
    CPUs on two cores of one LLC; two CPUs of two LLCs (of two nodes when
    there are several)."""
    cores = one_per_core(topo)
    by_llc = {}
    for c in cores:
        by_llc.setdefault(topo["llc"][c], []).append(c)
    within = next(([v[0], v[1]] for _, v in sorted(by_llc.items()) if len(v) >= 2), None)
    cross = None
    firsts = [v[0] for _, v in sorted(by_llc.items())]
    if len(firsts) >= 2:
        far = [c for c in firsts if topo["node"][c] != topo["node"][firsts[0]]]
        cross = [firsts[0], far[0] if far else firsts[1]]
    why = {}
    if within is None:
        why["pipe in-LLC"] = "no LLC with two cores"
    if cross is None:
        why["pipe cross-LLC"] = "one LLC on this machine"
    return within, cross, why


# ---------------------------------------------------------------- plan

def step(name, what, argv, cpus, est_s, timeout_s, env=None, parse="json"):
    return {"name": name, "what": what, "argv": argv, "cpus": fmt_list(cpus),
            "est_s": round(est_s, 1), "timeout_s": int(timeout_s), "env": env or {},
            "parse": parse}


def plan(topo, bench_dir, smp_dir, dry, budget_s=BUDGET_S):
    """The steps, in order, and the ones left out with why: [(step)], {name: why}."""
    cores = one_per_core(topo)
    allc = topo["cpus"]
    steps, skipped = [], {}
    size = ["--smoke"] if dry else ["--quick"]
    # E3: one thread per core, the cores spread over the LLCs. A run costs
    # kinds x rounds x threads x gap x runs (5 x 4 x 32 x 10 ms x 5 = 32 s;
    # 5 x 2 x 12 x 200 ms x 5 = 120 s): at most 32 threads at 10 ms, 12 at
    # 200 ms, to fit the budget beside the RPC runs (about 65 s each).
    e3_10 = cores[:32]
    e3_200 = cores[:12]
    for gap, cpus, rounds in ((10, e3_10, 4), (200, e3_200, 2)):
        if dry:
            gap_ms, rounds = {10: 1, 200: 2}[gap], 2
        else:
            gap_ms = gap
        est = E3_KINDS * rounds * len(cpus) * gap_ms / 1000.0 * E3_RUNS * 1.1 + 2
        steps.append(step("e3 %dms" % gap,
                          "T3 bursts, %d ms apart (%s), one thread per core" % (
                              gap, "dry: %d ms" % gap_ms if dry else "real"),
                          [os.path.join(bench_dir, "cid_bursts")] + size +
                          ["--delays-ms", str(gap_ms), "--rounds", str(rounds)],
                          cpus, est, est * 2 + 30))
    within, cross, why = pipe_pairs(topo)
    for name, pair in (("pipe in-LLC", within), ("pipe cross-LLC", cross)):
        if pair is None:
            skipped[name] = why[name]
            continue
        steps.append(step(name, "runtime pipe round trip beside the cache-line round trip, "
                          "CPUs %s" % fmt_list(pair),
                          [os.path.join(bench_dir, "pipe"), "--cross-cpu"] + size,
                          pair, 3 if dry else 15, 120))
    steps.append(step("rq scale", "EEVDF runqueue to 100,000 tasks; fib on the runtime",
                      [os.path.join(bench_dir, "rqscale")] + size, allc,
                      5 if dry else 30, 300))
    for w in RPC_WORKERS:
        name = "rpc %dw" % w
        clients = min(len(allc) - w, RPC_MAX_CLIENTS)
        if clients < 1:
            skipped[name] = "needs %d CPUs (%d servers + 1 load generator), %d here" % (
                w + 1, w, len(allc))
            continue
        steps.append(step(name, "RPC servers on %d CPU(s), load generator on %d" % (w, clients),
                          [os.path.join(bench_dir, "rpc", "rpc")] + size +
                          ["--server-cpus", str(w), "--client-threads", str(clients)],
                          allc[:w + clients], 15 if dry else 66, 400))
    dur = "0.2" if dry else "2"
    for p in SMP_PROGS:
        steps.append(step("smp " + p.replace("smp_", ""), "tests/smp/%s.c natively, DURATION=%s" % (p, dur),
                          [os.path.join(smp_dir, p)], allc, float(dur) + 1, 120,
                          env={"DURATION": dur}, parse="smp"))
    e3k_env = {"E3K_GAPS": "1,2", "E3K_ROUNDS": "3"} if dry else {"E3K_SPAN_MS": "6000"}
    steps.append(step("e3k", "the kernel's mm_cid choices on these cores, priced by the cache model",
                      [os.path.join(smp_dir, "e3k_bursts")], allc, 2 if dry else 14, 120,
                      env=e3k_env, parse="e3k"))
    if not dry:
        total = 0.0
        kept = []
        for s in steps:
            if total + s["est_s"] > budget_s:
                skipped[s["name"]] = "estimated %.0f s past the %d s budget" % (
                    total + s["est_s"], budget_s)
                continue
            total += s["est_s"]
            kept.append(s)
        steps = kept
    return steps, skipped


# ---------------------------------------------------------------- running

def machine(topo, root="/sys"):
    model = ""
    txt = _read("/proc/cpuinfo") or ""
    m = re.search(r"^model name\s*:\s*(.+)$", txt, re.M)
    if m:
        model = m.group(1).strip()
    return {"host": platform.node(), "kernel": platform.release(), "arch": platform.machine(),
            "cpu_model": model or "unknown", "cpus": len(topo["cpus"]),
            "allowed": fmt_list(topo["cpus"]), "cores": len(groups(topo, "core")),
            "llcs": len(groups(topo, "llc")), "nodes": len(groups(topo, "node")),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def run_step(s, out_dir):
    """Run one step under taskset; its record (rc, seconds, results)."""
    rec = {k: s[k] for k in ("name", "what", "cpus", "est_s", "timeout_s")}
    rec["command"] = "taskset -c %s %s%s" % (
        s["cpus"], "".join("%s=%s " % kv for kv in sorted(s["env"].items())), " ".join(s["argv"]))
    if not os.access(s["argv"][0], os.X_OK):
        rec.update(rc=None, seconds=0.0, results=[], skipped="not built: %s" % s["argv"][0])
        return rec
    argv = ["taskset", "-c", s["cpus"]] + s["argv"] + (["--json"] if s["parse"] == "json" else [])
    env = dict(os.environ, **s["env"])
    t = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=s["timeout_s"])
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = 124
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = "timed out after %d s" % s["timeout_s"]
    rec["seconds"] = round(time.time() - t, 1)
    rec["rc"] = rc
    name = re.sub(r"[^a-z0-9]+", "_", s["name"])
    with open(os.path.join(out_dir, name + ".out"), "w") as f:
        f.write(out)
    rec["results"] = parse_output(s["parse"], out)
    if rc == 77:
        why = [r["line"] for r in rec["results"] if r.get("line", "").startswith("SKIP ")]
        rec["skipped"] = (why or err.strip().splitlines() or ["exit 77"])[-1]
    elif rc != 0:
        rec["error"] = (err.strip().splitlines() or ["exit %d" % rc])[-1]
    if s["parse"] == "e3k" and rc == 0:
        rec["model"] = e3k_model(out, out_dir)
    return rec


def parse_output(kind, out):
    """A step's result lines: the benches' JSON objects (results and
    ratios), the smp programs' last PASS/FAIL/SKIP line."""
    if kind == "json":
        res = []
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    res.append(json.loads(line))
                except ValueError:
                    pass
        return res
    last = [l for l in out.splitlines() if re.match(r"(PASS|FAIL|SKIP) ", l)]
    return [{"line": last[-1]}] if last else []


def e3k_model(out, out_dir):
    """scripts/e3k.py's pricing of the recorded bursts (markdown), or why not."""
    log = os.path.join(out_dir, "e3k.log")
    with open(log, "w") as f:
        f.write(out)
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, os.path.join(here, "e3k.py"), "native=" + log],
                       capture_output=True, text=True, timeout=120)
    return p.stdout if p.returncode == 0 else "e3k.py failed (exit %d): %s" % (
        p.returncode, p.stderr.strip()[-300:])


# ---------------------------------------------------------------- report

def summary(rec):
    """One line per step for the table: its ratios, or its PASS line."""
    if rec.get("skipped"):
        return "skipped: " + rec["skipped"]
    if rec.get("error"):
        return "FAILED: " + rec["error"]
    peers = ["%s vs %s: %s %.2fx" % (r["workload"], r["peer"].split(" (")[0], "gain", r["gain"])
             for r in rec["results"] if r.get("kind") == "peer" and isinstance(r.get("gain"), (int, float))]
    if peers:
        return "; ".join(peers)
    ratios = ["%s %.2fx" % (r["ratio"], r["value"]) for r in rec["results"]
              if "ratio" in r and isinstance(r.get("value"), (int, float))]
    if ratios:
        return "; ".join(ratios[:6]) + (" (+%d more)" % (len(ratios) - 6) if len(ratios) > 6 else "")
    lines = [r["line"] for r in rec["results"] if "line" in r]
    if lines:
        return lines[-1]
    return "%d results" % len(rec["results"])


def report_md(doc):
    m = doc["machine"]
    L = ["# cachelocal on many cores: %s" % m["host"], "",
         "- machine: %s, %d CPUs allowed (%s), %d cores, %d LLCs, %d nodes, %s, kernel %s" % (
             m["cpu_model"], m["cpus"], m["allowed"], m["cores"], m["llcs"], m["nodes"], m["arch"],
             m["kernel"]),
         "- run: %s, mode %s, %.0f s of a %d s budget, commit %s" % (
             m["date"], doc["mode"], doc["seconds"], doc["budget_s"], doc["commit"])]
    if doc["mode"] == "dry":
        L.append("- dry run: the smallest sizes, to check that every step runs and reports; "
                 "the numbers mean nothing")
    if m["cores"] < MIN_CORES:
        L.append("- fewer than %d cores: this is not the machine the script is for" % MIN_CORES)
    L += ["", "| step | CPUs | time (est.) | exit | result |", "|---|---|---|---|---|"]
    for r in doc["steps"]:
        L.append("| %s | %s | %.0f s (%.0f s) | %s | %s |" % (
            r["name"], r["cpus"], r.get("seconds", 0.0), r["est_s"],
            "-" if r.get("rc") is None else r["rc"], summary(r).replace("|", "/")))
    for name, why in doc["skipped"].items():
        L.append("| %s | - | - | - | not run: %s |" % (name, why))
    for r in doc["steps"]:
        L += ["", "## %s" % r["name"], "", "- what: %s" % r["what"], "- command: `%s`" % r["command"]]
        # bench/rpc's "kind": "rpc" lines repeat its table rows: the latency table below
        rows = [x for x in r["results"] if "median" in x and x.get("kind") != "rpc"]
        if rows:
            L += ["", "| case | variant | threads | median (min-max) | unit |", "|---|---|---|---|---|"]
            for x in rows:
                L.append("| %s | %s | %s | %.4g (%.4g-%.4g) | %s |" % (
                    x.get("case", ""), x.get("variant", ""), x.get("threads", ""), x["median"],
                    x.get("min", x["median"]), x.get("max", x["median"]), x.get("unit", "")))
        lat = [x for x in r["results"] if x.get("kind") == "rpc" and x.get("what") == "latency"]
        if lat:
            L += ["", "| server | reply | load | p50 | p99 | p99.9 | unit |", "|---|---|---|---|---|---|---|"]
            for x in lat:
                L.append("| %s | %s B | %s%% | %.4g | %.4g | %.4g | %s |" % (
                    x.get("server", ""), x.get("reply_bytes", "?"), x.get("load_pct", "?"),
                    x.get("p50", 0), x.get("p99", 0), x.get("p999", 0), x.get("unit", "")))
        rats = [x for x in r["results"] if "ratio" in x]
        if rats:
            L += [""] + ["- %s: %s %.2fx" % (x.get("case", ""), x["ratio"], x["value"]) for x in rats
                         if isinstance(x.get("value"), (int, float))]
        if r.get("model"):
            L += ["", r["model"].strip()]
    return "\n".join(L) + "\n"


def check(doc):
    """Errors of a report.json (empty when valid)."""
    errs = []
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return ["not a many-core report (schema %r)" % SCHEMA]
    m = doc.get("machine")
    if not isinstance(m, dict):
        return ["no machine"]
    for k in ("host", "kernel", "cpu_model", "allowed", "date"):
        if not isinstance(m.get(k), str) or not m[k]:
            errs.append("machine: %s missing" % k)
    for k in ("cpus", "cores", "llcs", "nodes"):
        if not isinstance(m.get(k), int) or m[k] < 1:
            errs.append("machine: %s not a positive count" % k)
    if doc.get("mode") not in ("dry", "full"):
        errs.append("mode %r" % doc.get("mode"))
    if not isinstance(doc.get("steps"), list) or not isinstance(doc.get("skipped"), dict):
        return errs + ["steps or skipped missing"]
    names = [s.get("name") for s in doc["steps"]] + list(doc["skipped"])
    for want in ("e3 10ms", "e3 200ms", "pipe in-LLC", "pipe cross-LLC", "rq scale", "e3k") + \
            tuple("rpc %dw" % w for w in RPC_WORKERS) + tuple("smp " + p[4:] for p in SMP_PROGS):
        if want not in names:
            errs.append("step %s neither run nor listed as skipped" % want)
    for s in doc["steps"]:
        n = s.get("name", "?")
        if not re.match(r"^[0-9,-]+$", str(s.get("cpus", ""))):
            errs.append("%s: CPU list %r" % (n, s.get("cpus")))
        if s.get("skipped"):
            continue
        if not isinstance(s.get("rc"), int):
            errs.append("%s: no exit status" % n)
        elif s["rc"] == 0 and not s.get("results"):
            errs.append("%s: exit 0 but no result lines" % n)
        elif s["rc"] != 0 and not s.get("error"):
            errs.append("%s: exit %d without an error line" % (n, s["rc"]))
        for r in s.get("results", []):
            if "median" in r and not r.get("min", r["median"]) <= r["median"] <= r.get("max", r["median"]):
                errs.append("%s: %s median outside its min-max" % (n, r.get("case")))
    return errs


def failed(doc):
    """Steps that ran and failed (a dry run must have none)."""
    return [s["name"] for s in doc["steps"] if not s.get("skipped") and s.get("rc") != 0]


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001 - best effort
        return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry", action="store_true", help="smallest sizes (CI, 2 CPUs)")
    ap.add_argument("--out", default="build/bench/many-core")
    ap.add_argument("--bench", default="build/gcc/bench", help="the bench binaries")
    ap.add_argument("--smp", default="build/x86_64/bin", help="tests/smp's programs")
    ap.add_argument("--budget-s", type=int, default=BUDGET_S)
    ap.add_argument("--sysfs", default="/sys")
    ap.add_argument("--plan", action="store_true", help="print the steps and exit")
    ap.add_argument("--check", metavar="REPORT_JSON", help="validate a report and exit")
    o = ap.parse_args()
    if o.check:
        with open(o.check) as f:
            errs = check(json.load(f))
        for e in errs:
            print("bench_many_core: %s: %s" % (o.check, e), file=sys.stderr)
        print("bench_many_core: %s: %s" % (o.check, "invalid" if errs else "valid"))
        return 1 if errs else 0
    if not shutil.which("taskset"):
        print("bench_many_core: taskset not found (util-linux)", file=sys.stderr)
        return 2
    # A tree other than /sys (a fake machine for --plan) is taken whole.
    topo = topology(o.sysfs, set(os.sched_getaffinity(0)) if o.sysfs == "/sys" else None)
    steps, skipped = plan(topo, o.bench, o.smp, o.dry, o.budget_s)
    if o.plan:
        for s in steps:
            print("%-16s cpus %-12s est %5.0f s  %s" % (s["name"], s["cpus"], s["est_s"], " ".join(s["argv"])))
        for k, v in skipped.items():
            print("%-16s not run: %s" % (k, v))
        return 0
    os.makedirs(o.out, exist_ok=True)
    m = machine(topo, o.sysfs)
    if m["cores"] < MIN_CORES and not o.dry:
        print("bench_many_core: %d cores here; the full run is for >= %d (use --dry to check it)" % (
            m["cores"], MIN_CORES), file=sys.stderr)
    t0 = time.time()
    recs = []
    for i, s in enumerate(steps):
        left = o.budget_s - (time.time() - t0)
        if not o.dry and left < s["est_s"]:
            skipped[s["name"]] = "%.0f s of the budget left, estimated %.0f s" % (left, s["est_s"])
            continue
        print("bench_many_core: [%d/%d] %s (cpus %s, est %.0f s)" % (
            i + 1, len(steps), s["name"], s["cpus"], s["est_s"]), file=sys.stderr, flush=True)
        recs.append(run_step(s, o.out))
    doc = {"schema": SCHEMA, "mode": "dry" if o.dry else "full", "machine": m,
           "commit": sh("git rev-parse --short HEAD") or "unknown", "budget_s": o.budget_s,
           "seconds": round(time.time() - t0, 1), "steps": recs, "skipped": skipped}
    with open(os.path.join(o.out, "report.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(o.out, "report.md"), "w") as f:
        f.write(report_md(doc))
    errs = check(doc)
    for e in errs:
        print("bench_many_core: report: %s" % e, file=sys.stderr)
    bad = failed(doc)
    print("bench_many_core: %s/report.md: %d steps in %.0f s, %d failed%s" % (
        o.out, len(recs), doc["seconds"], len(bad), (": " + ", ".join(bad)) if bad else ""))
    return 1 if errs or bad else 0


if __name__ == "__main__":
    sys.exit(main())
