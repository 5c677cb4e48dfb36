# SPDX-License-Identifier: MIT
"""e3k.py - E3k: the real kernel's mm_cid choices priced by E3's cache model.

Usage: e3k.py [--json FILE] LABEL=CONSOLE_LOG ...   (docs/benchmarks.md, "E3k")

Each CONSOLE_LOG holds the output of tests/smp/e3k_bursts (a guest's serial
console: kernel messages "[   12.345678] ..." may stand between or inside
its lines; they are cut out, and every record line carries a hash that
tells whether what is left is the line as written). For each record (one
gap) the recorded bursts, in their start order, are priced by the
calibrated model of scripts/cachemodel.py (FITTED) with the cids the
kernel handed out as the items, beside the same bursts (same threads, same
CPUs, same times, same order) indexed by CPU (per-CPU data) and by the
model's NAIVE, RECENT and LLC policies. Each thread's first burst warms up
and is not counted, nor is a burst whose item was never used before (as
in cachemodel.py). The topology is the guest's (core and LLC of each CPU,
from its sysfs): core = the model's private L2, LLC = its domain.

Output: a markdown section on stdout, per label and gap: cycles per burst
of each index and their ratios against per-CPU indexing, where the items
came from, what the kernel's cids were; with --json, the same as one JSON
object in FILE. Exit 0; 1 when a log is missing, holds no record, or a
record is incomplete (the rest is still reported); 2 on bad usage.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cachemodel as cm  # noqa: E402

MARK = "@@E3K "
COLUMNS = ("kernel mm_cid", "per-CPU", "NAIVE", "RECENT", "LLC")
POLICY = {"per-CPU": "per-cpu", "NAIVE": "NAIVE", "RECENT": "RECENT", "LLC": "LLC"}
PLACES = ("same core", "same domain", "other domain")
# A kernel message: its timestamp to the end of its line (it may have
# landed inside one of ours: cutting it joins our line again).
KMSG = re.compile(r"\[\s*\d+\.\d+\][^\n]*(\n|$)")


class MappedTopology:
    """A topology given per CPU (cachemodel's interface: cpus, core(),
    domain()): core = SMT core (a private L2), domain = LLC."""

    def __init__(self, core, llc):
        if not core or set(core) != set(llc):
            raise ValueError("core and llc must name the same CPUs")
        self.core_of, self.llc_of = dict(core), dict(llc)
        self.cpus = len(self.core_of)

    def core(self, cpu):
        return self.core_of[cpu]

    def domain(self, cpu):
        return self.llc_of[cpu]


def fnv1a(text):
    h = 2166136261
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def cpulist(text):
    """'0-3,8' -> [0, 1, 2, 3, 8]; 'none' -> []."""
    if text == "none":
        return []
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        lo, hi = int(a), int(b or a)
        if hi < lo:
            raise ValueError("bad CPU range %r" % part)
        out.extend(range(lo, hi + 1))
    return out


def _fields(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


def _ints(d, keys):
    return {k: int(d[k]) for k in keys}


class _Record:
    def __init__(self, head, where):
        f = _fields(head)
        self.begin = _ints(f, ("gap_ms", "threads", "rounds", "pin"))
        self.begin["seed"] = int(f.get("seed", 0))
        self.where = where
        self.kernel = {}
        self.cpus = {}
        self.groups = {"core": {}, "llc": {}, "node": {}}
        self.bursts = []          # (seq, thread, cpu, cid, ms)
        self.end = None
        self.problems = []

    def add(self, key, words, where):
        if key == "kernel":
            self.kernel = _fields(words)
        elif key == "cpus":
            self.cpus = _fields(words)
        elif key in self.groups:
            for w in words:
                gid, _, cpus = w.partition(":")
                for c in cpulist(cpus):
                    self.groups[key][c] = int(gid)
        elif key == "b":
            first = int(words[0])
            if first != len(self.bursts):
                self.problems.append("%s: bursts from seq %d, expected %d (a line lost?)"
                                     % (where, first, len(self.bursts)))
            for i, w in enumerate(words[1:]):
                t, cpu, cid, ms = w.split(":")
                self.bursts.append((first + i, int(t), int(cpu), int(cid), float(ms)))
        else:
            raise ValueError("unknown key %r" % key)

    def close(self, words, where):
        f = _fields(words)
        self.end = dict(_ints(f, ("gap_ms", "bursts", "overlap", "changed", "pin_failed")),
                        late_ms_max=float(f["late_ms_max"]), elapsed_ms=float(f["elapsed_ms"]))
        self.check(where)

    def check(self, where):
        b, e, p = self.begin, self.end, self.problems
        want = b["threads"] * b["rounds"]
        if e["gap_ms"] != b["gap_ms"]:
            p.append("%s: END of gap %d in the record of gap %d" % (where, e["gap_ms"], b["gap_ms"]))
        if e["bursts"] != want or len(self.bursts) != want:
            p.append("%s: %d bursts parsed, END says %d, threads x rounds = %d"
                     % (where, len(self.bursts), e["bursts"], want))
        if [x[0] for x in self.bursts] != list(range(len(self.bursts))):
            p.append("%s: burst seqs not 0..%d in order" % (where, len(self.bursts) - 1))
        per = {}
        for _, t, cpu, cid, _ in self.bursts:
            per[t] = per.get(t, 0) + 1
            if self.groups["llc"] and cpu not in self.groups["llc"]:
                p.append("%s: thread %d ran on CPU %d, not in the topology" % (where, t, cpu))
                break
        bad = sorted(t for t, n in per.items() if not 0 <= t < b["threads"] or n != b["rounds"])
        if bad or len(per) != b["threads"]:
            p.append("%s: threads without exactly %d bursts: %s"
                     % (where, b["rounds"], bad or "missing %d" % (b["threads"] - len(per))))
        if not self.groups["core"] or set(self.groups["core"]) != set(self.groups["llc"]):
            p.append("%s: no complete topology (core and llc lines)" % where)

    def result(self):
        k = self.kernel
        return {"gap_ms": self.begin["gap_ms"], "threads": self.begin["threads"],
                "rounds": self.begin["rounds"], "pin": self.begin["pin"],
                "seed": self.begin["seed"], "kernel": k.get("release", "unknown"),
                "ids": k.get("ids", "unknown"), "mm_cid_live": k.get("mm_cid") == "live",
                "cpus": self.cpus, "core": self.groups["core"], "llc": self.groups["llc"],
                "node": self.groups["node"], "bursts": self.bursts,
                "recorder": self.end, "problems": self.problems}


def parse_log(text):
    """The records of a console log: a list of dicts (result() of each
    record: gap_ms, threads, rounds, pin, kernel, ids, mm_cid_live, core,
    llc, node (CPU -> id), bursts [(seq, thread, cpu, cid, ms)], recorder
    (the END fields), problems (empty when the record is complete)), and a
    list of problems outside any record."""
    text = KMSG.sub("", text.replace("\r", ""))
    records, stray, cur = [], [], None
    for n, raw in enumerate(text.split("\n"), 1):
        at = raw.find(MARK)
        if at < 0:
            continue
        line = raw[at:].rstrip()
        where = "line %d" % n
        body, sep, digest = line.rpartition(" #")
        if not sep or not re.fullmatch(r"[0-9a-f]{8}", digest) or fnv1a(body) != int(digest, 16):
            (cur.problems if cur else stray).append("%s: damaged (hash mismatch): %.60s" % (where, line))
            continue
        words = body.split()[1:]
        key, words = words[0], words[1:]
        try:
            if key == "BEGIN":
                if cur:
                    cur.problems.append("%s: no END before the next BEGIN" % where)
                    records.append(cur)
                cur = _Record(words, where)
            elif cur is None:
                stray.append("%s: %s outside a record" % (where, key))
            elif key == "END":
                cur.close(words, where)
                records.append(cur)
                cur = None
            else:
                cur.add(key, words, where)
        except (ValueError, KeyError, IndexError) as e:
            (cur.problems if cur else stray).append("%s: malformed %s line (%s)" % (where, key, e))
    if cur:
        cur.problems.append("end of log: no END")
        records.append(cur)
    return [r.result() for r in records], stray


def feed(rec, params=None):
    """The model's cost of a record's bursts for each column of COLUMNS:
    {column: {"cycles", "counted", "place"} or None (kernel mm_cid when it
    was not live)}. Bursts in seq order; a thread's k-th burst is its round
    k and round 0 is not counted; the policies' cids spread up to
    min(allowed CPUs, threads)."""
    p = params or cm.FITTED
    topo = MappedTopology(rec["core"], rec["llc"])
    bursts = sorted(rec["bursts"])
    seen = {}
    seq = []
    for _, t, cpu, cid, ms in bursts:
        seq.append((cpu, cid, ms, seen.get(t, 0) > 0))
        seen[t] = seen.get(t, 0) + 1
    allowed = len(cpulist(rec["cpus"]["allowed"])) if rec["cpus"].get("allowed") else topo.cpus
    bound = min(allowed, rec["threads"])
    items = {"kernel mm_cid": [c for _, c, _, _ in seq] if all(c >= 0 for _, c, _, _ in seq)
             else None}
    times = [(cpu, ms) for cpu, _, ms, _ in seq]
    for col, pol in POLICY.items():
        items[col] = cm.policy_items(topo, pol, times, p["expiry_ms"], bound)
    out = {}
    for col in COLUMNS:
        if items[col] is None:
            out[col] = None
            continue
        cost, place, counted = cm.sequence_cost(
            topo, [(cpu, it, ms, c) for (cpu, _, ms, c), it in zip(seq, items[col])], p)
        out[col] = {"cycles": cost, "counted": counted, "place": place}
    return out


def analyse(label, rec, params=None):
    """One row: the record's facts, the columns' costs, ratios against
    per-CPU indexing, the kernel's cids."""
    row = {"label": label, "kernel": rec["kernel"], "gap_ms": rec["gap_ms"],
           "threads": rec["threads"], "rounds": rec["rounds"], "pin": rec["pin"],
           "ids": rec["ids"], "mm_cid_live": rec["mm_cid_live"],
           "cpus": len(rec["llc"]), "cores": len(set(rec["core"].values())),
           "llcs": len(set(rec["llc"].values())), "nodes": len(set(rec["node"].values())),
           "bursts": len(rec["bursts"]), "recorder": rec["recorder"], "problems": rec["problems"],
           "columns": None, "ratios": None, "kernel_cids": None}
    if rec["problems"]:
        return row
    cols = feed(rec, params)
    base = cols["per-CPU"]["cycles"]
    row["columns"] = cols
    row["ratios"] = {c: (cols[c]["cycles"] / base if cols[c] and base else None)
                     for c in COLUMNS if c != "per-CPU"}
    cids = [b[3] for b in rec["bursts"] if b[3] >= 0]
    if cids:
        row["kernel_cids"] = {"distinct": len(set(cids)), "max": max(cids)}
    return row


def run(args, params=None):
    """(rows, missing) for LABEL=LOG arguments."""
    rows, missing = [], []
    for arg in args:
        label, _, path = arg.partition("=")
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                recs, stray = parse_log(f.read())
        except OSError as e:
            missing.append({"label": label, "log": path, "reason": "cannot read: %s" % e.strerror})
            continue
        if not recs:
            missing.append({"label": label, "log": path,
                            "reason": "no E3k record" + ("; " + "; ".join(stray) if stray else "")})
        for rec in recs:
            rows.append(analyse(label, rec, params))
    return rows, missing


def _ratio(x):
    return "-" if x is None else "%.2fx" % x


def _cycles(col):
    return "-" if col is None else "%.0f" % col["cycles"]


def _place(col):
    if col is None or not col["counted"]:
        return "-"
    return "/".join("%.0f" % (100.0 * col["place"][k] / col["counted"]) for k in PLACES)


def markdown(rows, missing):
    out = ["## E3k: T3 on the real kernel's mm_cid allocator", "",
           "tests/smp/e3k_bursts in the emulated guests: one thread per CPU%s, each bursting"
           " once per round in a random order, gap ms apart (the seed's T3 test). The CPU"
           " and mm_cid of every burst are the kernel's; the **cycles are the calibrated"
           " cache model's** (E3m, `scripts/cachemodel.py`), not guest timing: the same"
           " bursts priced with the kernel's cids as the items, with per-CPU indexing"
           " (cid = CPU) and with the model's NAIVE, RECENT and LLC policies. Ratios are"
           " against per-CPU indexing (1.00x: as local as per-CPU data; the seed: NAIVE"
           " far above, RECENT near 1). Each thread's first burst is not counted." % (
               "" if all(r["pin"] for r in rows) else " (pin=0: threads not pinned)"), ""]
    if rows:
        out += ["| topology | kernel | gap | threads | pin | bursts | kernel mm_cid | per-CPU"
                " | NAIVE | RECENT | LLC | mm_cid / per-CPU | NAIVE / per-CPU"
                " | RECENT / per-CPU | LLC / per-CPU |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            head = "| %s | %s | %d ms | %d | %d | %d |" % (
                r["label"], r["kernel"], r["gap_ms"], r["threads"], r["pin"], r["bursts"])
            if r["columns"] is None:
                out.append(head + " incomplete record: see below |" + " |" * 8)
                continue
            c, q = r["columns"], r["ratios"]
            out.append(head + " %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                _cycles(c["kernel mm_cid"]) if r["mm_cid_live"] else "not live",
                _cycles(c["per-CPU"]), _cycles(c["NAIVE"]), _cycles(c["RECENT"]),
                _cycles(c["LLC"]), _ratio(q["kernel mm_cid"]), _ratio(q["NAIVE"]),
                _ratio(q["RECENT"]), _ratio(q["LLC"])))
        out += ["", "Cycles per 16 KiB burst. Where each counted burst's item was last used,"
                " in % (same core / same LLC / other LLC), and the kernel's cids:", "",
                "| topology | kernel | gap | machine | ids | kernel mm_cid | per-CPU | NAIVE"
                " | RECENT | LLC | kernel cids (distinct, max) | recorder |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            c = r["columns"] or {}
            kc = r["kernel_cids"]
            e = r["recorder"] or {}
            out.append("| %s | %s | %d ms | %d CPUs, %d cores, %d LLCs, %d nodes | %s | %s | %s"
                       " | %s | %s | %s | %s | %s |" % (
                           r["label"], r["kernel"], r["gap_ms"], r["cpus"], r["cores"],
                           r["llcs"], r["nodes"], r["ids"], _place(c.get("kernel mm_cid")),
                           _place(c.get("per-CPU")), _place(c.get("NAIVE")),
                           _place(c.get("RECENT")), _place(c.get("LLC")),
                           "%d, %d" % (kc["distinct"], kc["max"]) if kc else "-",
                           "overlap %s, changed %s, late %s ms, pin failed %s" % (
                               e.get("overlap", "-"), e.get("changed", "-"),
                               e.get("late_ms_max", "-"), e.get("pin_failed", "-"))))
    else:
        out.append("No E3k record (not run: `make check-smp`).")
    probs = ["- %s, gap %d ms: %s" % (r["label"], r["gap_ms"], p) for r in rows for p in r["problems"]]
    probs += ["- %s (%s): %s" % (m["label"], m["log"], m["reason"]) for m in missing]
    if probs:
        out += ["", "Not analysed:", ""] + probs
    return "\n".join(out) + "\n"


def main(argv):
    args, jpath = argv[1:], None
    if args[:1] == ["--json"] and len(args) >= 2:
        jpath, args = args[1], args[2:]
    if not args or any("=" not in a or a.startswith("-") for a in args):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rows, missing = run(args)
    sys.stdout.write(markdown(rows, missing))
    if jpath:
        doc = {"schema_version": 1, "model": cm.parameters(), "columns": list(COLUMNS),
               "places": list(PLACES), "rows": rows, "missing": missing}
        with open(jpath, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    return 1 if missing or any(r["problems"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
