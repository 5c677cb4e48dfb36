#!/usr/bin/env python3
"""robustness_report.py - the public functions of L1-L5, their bad-input rows,
and docs/robustness.md.

  robustness_report.py api
      every public function (a cl_ name, not cl__) declared in a header of
      layers L1-L5, one per line: name, header, layer. Found by clang's AST
      of a translation unit that includes every public header, so static
      inline functions and functions made by macros count too; the layer
      of each header comes from scripts/check-layers.sh --layer.

  robustness_report.py check ROWS...
      fails (exit 1) if a public function has no row in the ROWS files
      (written by tests/robustness/bad_inputs via CL_RB_ROWS), if a row
      names a function that is not public, or if a row failed.

  robustness_report.py selftest ROWS
      proves the check fails: a function added to a copy of the headers
      (L1 and L5) without a row, a function's rows dropped, a failed row.

  robustness_report.py report --norseq NORSEQ --rows-dir DIR --out FILE
                             [--fuzz-log LOG] [--matrix-log LOG] BINARY...
      runs each bad_inputs BINARY in the id modes default, glibc-off and
      no-rseq, checks as above, and writes FILE (docs/robustness.md): the
      rule, one table row per (function, bad input) with the documented and
      the observed result, the fuzz targets from a `make fuzz` log and the
      fallback matrix from a `make check-matrix` log ("not run in this
      generation" without them).
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INC = os.path.join(ROOT, "include")
LAYERS = ("L1", "L2", "L3", "L4", "L5")
MODES = ("default", "glibc-off", "no-rseq")


def headers(inc):
    """Public headers, relative to include/cachelocal (not internal/)."""
    out = []
    base = os.path.join(inc, "cachelocal")
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(".h"):
                rel = os.path.relpath(os.path.join(d, f), base)
                if not rel.startswith("internal/"):
                    out.append(rel)
    return sorted(out)


def layer_of(rels):
    """{header: layer name} from scripts/check-layers.sh --layer."""
    r = subprocess.run(["sh", os.path.join(ROOT, "scripts/check-layers.sh"), "--layer"] + rels,
                       capture_output=True, text=True, check=True)
    out = {}
    for line in r.stdout.splitlines():
        h, _, layer = line.partition(" ")
        out[h] = layer
    return out


def public_api(inc=INC):
    """[(name, header, layer)] of every public function of L1-L5, sorted by layer."""
    rels = headers(inc)
    # arch/ pieces are included through rseq.h/percpu_ops.h for this machine only
    tu = "".join("#include <cachelocal/%s>\n" % h for h in rels if not h.startswith("arch/"))
    cflags = subprocess.run(["pkg-config", "--cflags", "liburcu-memb", "liburcu-cds"],
                            capture_output=True, text=True).stdout.split()
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(tu)
        src = f.name
    try:
        r = subprocess.run(["clang", "-std=c11", "-D_GNU_SOURCE", "-I" + inc] + cflags +
                           ["-fsyntax-only", "-Xclang", "-ast-dump=json", src],
                           capture_output=True, text=True)
    finally:
        os.unlink(src)
    if r.returncode != 0:
        sys.exit("robustness_report: clang could not parse the headers:\n" + r.stderr[-2000:])
    ast = json.loads(r.stdout)
    base = os.path.join(os.path.realpath(inc), "cachelocal") + os.sep
    cur = None
    found = {}
    for n in ast.get("inner", []):
        # clang names a file only where it changes: follow it in order
        loc = n.get("loc", {})
        for l in (loc.get("spellingLoc", {}), loc.get("expansionLoc", {}), loc):
            if "file" in l:
                cur = l["file"]
        name = n.get("name", "")
        if n.get("kind") != "FunctionDecl" or not name.startswith("cl_") or name.startswith("cl__"):
            continue
        path = os.path.realpath(cur) if cur else ""
        if path.startswith(base):
            found.setdefault(name, os.path.relpath(path, base[:-1]))
    lay = layer_of(sorted(set(found.values())))
    api = [(n, h, lay.get(h, "?")) for n, h in found.items()]
    api = [a for a in api if a[2] in LAYERS]
    return sorted(api, key=lambda a: (a[2], a[1], a[0]))


def read_rows(path):
    rows, header = [], ""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ROW\t"):
                p = line.split("\t")
                if len(p) != 6:
                    sys.exit("robustness_report: bad row in %s: %r" % (path, line))
                rows.append(dict(fn=p[1], input=p[2], doc=p[3], obs=p[4], verdict=p[5]))
            elif line.startswith("# ") and not header:
                header = line[2:]
    return header, rows


def check(api, rowsets):
    """Problems (list of strings): missing functions, unknown names, failures."""
    names = {a[0] for a in api}
    probs = []
    covered = set()
    for path, rows in rowsets:
        if not rows:
            probs.append("%s: no rows (did the run finish?)" % path)
        for r in rows:
            covered.add(r["fn"])
            if r["fn"] not in names:
                probs.append("%s: row for %s, which is not a public function of L1-L5" % (path, r["fn"]))
            if r["verdict"] == "FAIL":
                probs.append("%s: %s with %s: documented %s, observed %s" %
                             (path, r["fn"], r["input"], r["doc"], r["obs"]))
    for n, h, layer in api:
        if n not in covered:
            probs.append("%s (%s, %s) has no bad-input row: add a CASE to tests/robustness/bad_inputs.c"
                         % (n, h, layer))
    return probs


def cmd_selftest(args):
    """The check must fail for a public function without a row and for a failed row."""
    import shutil
    _, rows = read_rows(args.rows)
    api = public_api()
    fails = 0
    if check(api, [(args.rows, rows)]):
        print("self-test FAIL: the real rows do not pass")
        fails += 1
    # a new function in a copy of the headers (L1 and L5), no row for it
    for hdr, marker in (("spinlock.h", "CL_END_DECLS"), ("sched/queue.h", "CL_END_DECLS")):
        tmp = tempfile.mkdtemp()
        try:
            shutil.copytree(os.path.join(INC, "cachelocal"), os.path.join(tmp, "cachelocal"))
            path = os.path.join(tmp, "cachelocal", hdr)
            with open(path) as f:
                text = f.read()
            i = text.rindex(marker)
            text = text[:i] + "CL_INLINE int cl_selftest_new_fn(void)\n{\n\treturn 0;\n}\n\n" + text[i:]
            with open(path, "w") as f:
                f.write(text)
            probs = check(public_api(tmp), [(args.rows, rows)])
            if not any("cl_selftest_new_fn" in p and "no bad-input row" in p for p in probs):
                print("self-test FAIL: a new function in %s without a row was not reported" % hdr)
                fails += 1
        finally:
            shutil.rmtree(tmp)
    # a function's rows dropped; a row turned into a failure
    victim = rows[0]["fn"]
    if not any(victim in p for p in check(api, [(args.rows, [r for r in rows if r["fn"] != victim])])):
        print("self-test FAIL: dropping the rows of %s was not reported" % victim)
        fails += 1
    bad = [dict(r) for r in rows]
    bad[-1]["verdict"] = "FAIL"
    if not check(api, [(args.rows, bad)]):
        print("self-test FAIL: a failed row was not reported")
        fails += 1
    print("robustness check self-test: %d of 5 cases as expected" % (5 - fails))
    sys.exit(1 if fails else 0)


def cmd_api(_args):
    for n, h, layer in public_api():
        print("%s\t%s\t%s" % (n, h, layer))


def cmd_check(args):
    api = public_api()
    rowsets = [(p, read_rows(p)[1]) for p in args.rows]
    probs = check(api, rowsets)
    for p in probs:
        print("robustness: " + p)
    if probs:
        print("robustness check: FAILED (%d problems)" % len(probs))
        sys.exit(1)
    print("robustness check: %d public functions of L1-L5, each with bad-input rows (%s)"
          % (len(api), ", ".join("%d rows in %s" % (len(r), os.path.basename(p)) for p, r in rowsets)))


def run_modes(binary, norseq, rows_dir):
    """Run binary in each id mode with CL_RB_ROWS; {mode: (header, rows, exit)}."""
    out = {}
    os.makedirs(rows_dir, exist_ok=True)
    for mode in MODES:
        path = os.path.join(rows_dir, "%s.%s.rows" % (os.path.basename(binary), mode))
        env = dict(os.environ, CL_RB_ROWS=path, CL_TEST_MODE=mode)
        env.pop("CL_RB_VERBOSE", None)
        cmd = [binary]
        if mode == "glibc-off":
            env["GLIBC_TUNABLES"] = "glibc.pthread.rseq=0"
        elif mode == "no-rseq":
            cmd = [norseq, binary]
        rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode
        header, rows = read_rows(path)
        out[mode] = (header, rows, rc, path)
    return out


def parse_fuzz(path):
    """[(target, executions, seconds, corpus, result, crashes)] from a make fuzz log."""
    res = []
    pat = re.compile(r"^\s+(fuzz_\w+): (\S+) executions in (\d+) s, corpus (\d+) inputs, (.*)$")
    with open(path) as f:
        text = f.read()
    # the summary block: "fuzz summary:" or "fuzz summary (N at a time):"
    summary = re.split(r"fuzz summary[^:\n]*:", text, maxsplit=1)[-1]
    for line in summary.splitlines():
        m = pat.match(line)
        if m:
            t = m.group(1)
            crash_dir = os.path.join(ROOT, "build/fuzz/crashes")
            crashes = len([c for c in os.listdir(crash_dir) if c.startswith(t + "-")]) \
                if os.path.isdir(crash_dir) else 0
            res.append((t, m.group(2), m.group(3), m.group(4), m.group(5), crashes))
    return res


def parse_matrix(path):
    """{situation: [passed, failed, skipped]} from a make check-matrix log."""
    counts = {}
    order = []
    noasm = False
    pat = re.compile(r"^\s+\((\S+) \[([\w-]+)\]: exit (\d+), \d+ s\)$")
    with open(path) as f:
        for line in f:
            if line.startswith("== CL_NO_RSEQ_ASM build"):
                noasm = True
            m = pat.match(line.rstrip("\n"))
            if not m:
                continue
            mode = m.group(2)
            sit = "CL_NO_RSEQ_ASM (atomic fallback, %s)" % mode if noasm else {
                "default": "default (glibc owns rseq)",
                "glibc-off": "glibc-off (cachelocal registers rseq)",
                "no-rseq": "no-rseq (seccomp: rseq ENOSYS)",
                "no-mm-cid": "no-mm-cid (feature size capped at 20)",
            }.get(mode, mode)
            if sit not in counts:
                counts[sit] = [0, 0, 0]
                order.append(sit)
            rc = int(m.group(3))
            counts[sit][0 if rc == 0 else 2 if rc == 77 else 1] += 1
    return [(s, counts[s]) for s in order]


def md_escape(s):
    return s.replace("|", "\\|")


def git(*a):
    r = subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True)
    return r.stdout.strip()


def cmd_report(args):
    api = public_api()
    layer = {n: (h, l) for n, h, l in api}
    runs = {b: run_modes(b, args.norseq, args.rows_dir) for b in args.binaries}
    plain = [b for b in args.binaries if not b.endswith("_debug")]
    debug = [b for b in args.binaries if b.endswith("_debug")]
    if len(plain) != 1 or len(debug) != 1:
        sys.exit("robustness_report: want the plain and the _debug binary")
    plain, debug = plain[0], debug[0]
    probs = check(api, [(r[3], r[1]) for b in runs for r in runs[b].values()])
    for b in runs:
        for mode, (_, _, rc, path) in runs[b].items():
            if rc != 0:
                probs.append("%s exited %d in mode %s (%s)" % (os.path.basename(b), rc, mode, path))

    # one table row per (function, input): the plain default run, the modes that passed,
    # and for CL_DEBUG-asserted misuse the debug build's result
    key = lambda r: (r["fn"], r["input"])
    base_rows = runs[plain]["default"][1]
    passed = {}
    for mode in MODES:
        for r in runs[plain][mode][1]:
            if r["verdict"] == "pass":
                passed.setdefault(key(r), []).append(mode)
    dbg = {}
    for mode in MODES:
        for r in runs[debug][mode][1]:
            k = key(r)
            ok = r["verdict"] in ("pass", "asserted")
            prev = dbg.get(k)
            dbg[k] = (r, (prev[1] if prev else 0) + ok)

    commit = git("rev-parse", "--short=12", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    cc = os.environ.get("CC", "gcc")
    L = []
    w = L.append
    w("# Robustness: bad input, fuzzing, fallback matrix")
    w("")
    w("Generated by `make robustness` (`scripts/robustness_report.py report`) from a test run; "
      "do not edit by hand.")
    w("")
    w("| | |")
    w("|---|---|")
    w("| command | `make robustness%s%s` |" % (
        " ROBUST_FUZZ_LOG=%s" % os.path.relpath(args.fuzz_log, ROOT) if args.fuzz_log else "",
        " ROBUST_MATRIX_LOG=%s" % os.path.relpath(args.matrix_log, ROOT) if args.matrix_log else ""))
    w("| date | %s |" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    w("| commit | %s%s |" % (commit, " + uncommitted changes" if dirty else ""))
    w("| kernel | %s %s (%s) |" % (platform.system(), platform.release(), platform.machine()))
    w("| runs | %s |" % "; ".join(md_escape(runs[b][m][0]) for b in (plain, debug) for m in MODES))
    w("")
    w("## The rule for bad input")
    w("")
    w("Every public function reports a bad argument instead of crashing: a NULL object "
      "pointer, a CPU, index or cid out of range, a zero or huge size, a bad alignment, a "
      "value outside an enum, or a wrong state it can detect (destroy while busy, double "
      "free, double close) gives its documented error value (-1, NULL, or 0 for a count or "
      "size) with `errno` `EINVAL` (or the documented errno); a void function returns "
      "without effect and sets `EINVAL`. Destroy and free of NULL are no-ops, as `free(NULL)`. "
      "The same holds with `CL_DEBUG`. What cannot be detected cheaply (an rq function "
      "called without that rq's lock, a brlock token that did not come from read_lock, an "
      "RCU reader on a thread not registered with urcu-memb) is undefined, and a `CL_DEBUG` "
      "build asserts it: those rows say *undefined* and show the `CL_DEBUG` build's abort. "
      "`compiler.h` has the one helper (`CL__BAD_ARG`).")
    w("")
    w("Each case below runs in a forked child of `tests/robustness/bad_inputs` (a crash is a "
      "failed row, not the end of the run), in the id modes default, glibc-off and no-rseq; "
      "`make check` runs it (`check-robustness`) and fails when a public function has no "
      "row. The list of public functions is taken from the headers by clang, so a new "
      "function without a row fails the check.")
    w("")
    nfn = len(api)
    w("**%d public functions of L1-L5, %d rows; %d problems.**" % (nfn, len(base_rows), len(probs)))
    w("")
    for p in probs:
        w("- PROBLEM: " + md_escape(p))
    if probs:
        w("")
    w("## Bad input, per function")
    w("")
    w("Documented: what the header says (and the rule); observed: the plain build, default "
      "id mode; modes: id modes in which the row passed; `CL_DEBUG`: the same case in the "
      "`CL_DEBUG` build.")
    cur_layer = None
    by_fn = {}
    for r in base_rows:
        by_fn.setdefault(r["fn"], []).append(r)
    for n, h, l in api:
        if l != cur_layer:
            cur_layer = l
            w("")
            w("### %s" % l)
            w("")
            w("| function | header | bad input | documented | observed | modes | `CL_DEBUG` |")
            w("|---|---|---|---|---|---|---|")
        for r in by_fn.get(n, []):
            k = key(r)
            d = dbg.get(k)
            if r["verdict"] == "undefined":
                dcol = "%s (%d/3)" % (d[0]["obs"], d[1]) if d else "?"
            else:
                dcol = ("same (%d/3)" % d[1]) if d and d[0]["verdict"] == "pass" else \
                    (d[0]["obs"] + " FAIL") if d else "?"
            obs = r["obs"] if r["verdict"] != "FAIL" else "**FAIL**: " + r["obs"]
            modes = "-" if r["verdict"] == "undefined" else "%d/3" % len(passed.get(k, []))
            w("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                n, h, md_escape(r["input"]), md_escape(r["doc"]), md_escape(obs),
                modes, md_escape(dcol)))
        if n not in by_fn:
            w("| `%s` | %s | **no row** | | | | |" % (n, h))
    w("")
    w("## Fuzz targets")
    w("")
    if args.fuzz_log:
        fz = parse_fuzz(args.fuzz_log)
        w("From `%s` (`make fuzz`, libFuzzer with ASan+UBSan, clang; the log stays under "
          "`build/`, not committed). A crash stops a target and fails the run; crashes: files "
          "under `build/fuzz/crashes/` for the target when this was generated." %
          os.path.relpath(args.fuzz_log, ROOT))
        w("")
        w("| target | executions | seconds | corpus | result | crashes |")
        w("|---|---|---|---|---|---|")
        for t, e, s, c, res, cr in fz:
            w("| `%s` | %s | %s | %s | %s | %d |" % (t, e, s, c, md_escape(res), cr))
        if not fz:
            w("| (no summary lines in the log) | | | | | |")
    else:
        w("Not run in this generation (pass `ROBUST_FUZZ_LOG=` the output of `make fuzz`).")
    w("")
    w("## Fallback matrix")
    w("")
    if args.matrix_log:
        mx = parse_matrix(args.matrix_log)
        w("From `%s` (`make check-matrix`): test binaries (unit, their A/B variants, stress, "
          "bad inputs, interop) per rseq situation; a run is one binary in one situation."
          % os.path.relpath(args.matrix_log, ROOT))
        w("")
        w("| situation | passed | failed | skipped |")
        w("|---|---|---|---|")
        for s, (p, f, k) in mx:
            w("| %s | %d | %d | %d |" % (s, p, f, k))
        if not mx:
            w("| (no runs in the log) | | | |")
        with open(args.matrix_log) as f:
            mtext = f.read()
        if "interop test SKIPPED" in mtext:
            w("")
            w("The librseq interop test did not run (librseq not found: `make librseq` builds it).")
        done = [l for l in mtext.splitlines() if l.startswith("make check")]
        if done:
            w("")
            w("Summary lines of the log: " + "; ".join("`%s`" % md_escape(l) for l in done) + ".")
    else:
        w("Not run in this generation (pass `ROBUST_MATRIX_LOG=` the output of `make check-matrix`).")
    w("")
    found_section(w)
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    print("robustness: wrote %s (%d functions, %d rows, %d problems)" % (args.out, nfn, len(base_rows), len(probs)))
    if probs:
        for p in probs:
            print("robustness: " + p)
        sys.exit(1)


def found_section(w):
    """The defects the test beds found (tests/guest/found.tsv)."""
    path = os.path.join(ROOT, "tests", "guest", "found.tsv")
    w("## Found by the test beds")
    w("")
    w("Defects that `make check-smp` and `make check-kernels` (docs/testing.md) found on many "
      "CPUs, LLCs and nodes or on older kernels, and that the stress programs found on an "
      "oversubscribed host, each with the regression test that fails before its fix (from "
      "`tests/guest/found.tsv`).")
    w("")
    w("| defect | found by | regression test | fix |")
    w("|---|---|---|---|")
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4:
                raise SystemExit("%s: want 4 tab-separated columns: %r" % (path, line))
            w("| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |")
    w("")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("api").set_defaults(fn=cmd_api)
    t = sub.add_parser("selftest")
    t.add_argument("rows")
    t.set_defaults(fn=cmd_selftest)
    c = sub.add_parser("check")
    c.add_argument("rows", nargs="+")
    c.set_defaults(fn=cmd_check)
    r = sub.add_parser("report")
    r.add_argument("--norseq", required=True)
    r.add_argument("--rows-dir", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--fuzz-log")
    r.add_argument("--matrix-log")
    r.add_argument("binaries", nargs="+")
    r.set_defaults(fn=cmd_report)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
