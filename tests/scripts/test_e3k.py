# SPDX-License-Identifier: MIT
"""Unit tests of scripts/e3k.py (E3k: the kernel's mm_cid choices priced by
the cache model): the console-log parser on synthetic logs written here in
tests/smp/e3k_bursts's format, and the feeding of recorded bursts to
scripts/cachemodel.py. Run: python3 -m unittest discover -s tests/scripts"""
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import cachemodel as cm  # noqa: E402
import e3k  # noqa: E402


def line(body):
    return "%s #%08x" % (body, e3k.fnv1a(body))


def groups(key, ids):
    """'@@E3K key id:cpus ...' of a per-CPU id list (one CPU list per id)."""
    by = {}
    for cpu, g in enumerate(ids):
        by.setdefault(g, []).append(str(cpu))
    return line("@@E3K %s " % key + " ".join("%d:%s" % (g, ",".join(c)) for g, c in by.items()))


def record(bursts, threads, rounds, core, llc, node=None, gap=200, per_line=4,
           release="6.12.0-test", live=True, end=None):
    """The lines tests/smp/e3k_bursts writes for one gap; bursts are
    (thread, cpu, cid, ms) in start order."""
    n = len(core)
    out = [line("@@E3K BEGIN v=1 gap_ms=%d threads=%d rounds=%d pin=1 seed=1 burst_kb=16"
                % (gap, threads, rounds)),
           line("@@E3K kernel release=%s machine=x86_64 ids=%s mm_cid=%s"
                % (release, "mm_cid" if live else "cpu_id", "live" if live else "absent")),
           line("@@E3K cpus possible=0-%d online=0-%d allowed=0-%d fallback=0x0"
                % (n - 1, n - 1, n - 1)),
           groups("core", core), groups("llc", llc), groups("node", node or [0] * n)]
    for i in range(0, len(bursts), per_line):
        out.append(line("@@E3K b %d " % i + " ".join(
            "%d:%d:%d:%.1f" % b for b in bursts[i:i + per_line])))
    out.append(line(end or "@@E3K END gap_ms=%d bursts=%d overlap=0 changed=0 late_ms_max=0.5"
                    " pin_failed=0 elapsed_ms=%.1f" % (gap, len(bursts), bursts[-1][3])))
    return out


def seed_bursts(cpus, rounds, delay, seed, cid=lambda cpu, k: cpu):
    """The seed's schedule as cachemodel._schedule makes it (thread i pinned
    to CPU i, a random order per round, delay ms apart)."""
    rng = random.Random(seed)
    out, now = [], 0.0
    for _ in range(rounds):
        order = list(range(cpus))
        rng.shuffle(order)
        for cpu in order:
            out.append((cpu, cpu, cid(cpu, len(out)), now))
            now += delay
    return out


# Two threads pinned to CPUs 0 and 1 of two LLCs, three rounds; the
# kernel's cid moves between the CPUs every burst.
CORE2, LLC2 = [0, 1], [0, 1]
SWAP = [(0, 0, 0, 0.0), (1, 1, 1, 200.0), (1, 1, 0, 400.0), (0, 0, 1, 600.0),
        (0, 0, 0, 800.0), (1, 1, 1, 1000.0)]


def parse(lines):
    recs, stray = e3k.parse_log("\n".join(lines) + "\n")
    return recs, stray


class Parser(unittest.TestCase):
    def test_record_reads_back_exactly(self):
        recs, stray = parse(["boot noise"] + record(SWAP, 2, 3, CORE2, LLC2, node=[0, 1]))
        self.assertEqual(stray, [])
        self.assertEqual(len(recs), 1)
        r = recs[0]
        self.assertEqual(r["problems"], [])
        self.assertEqual(r["bursts"], [(i,) + b for i, b in enumerate(SWAP)])
        self.assertEqual((r["gap_ms"], r["threads"], r["rounds"], r["pin"]), (200, 2, 3, 1))
        self.assertEqual(r["kernel"], "6.12.0-test")
        self.assertTrue(r["mm_cid_live"])
        self.assertEqual(r["core"], {0: 0, 1: 1})
        self.assertEqual(r["llc"], {0: 0, 1: 1})
        self.assertEqual(r["node"], {0: 0, 1: 1})
        self.assertEqual(r["recorder"]["bursts"], 6)

    def test_kernel_messages_between_and_inside_lines_are_cut_out(self):
        clean = record(SWAP, 2, 3, CORE2, LLC2)
        noisy = []
        for i, ln in enumerate(clean):
            if i == 3:  # a message inside a line, as a serial console shows it
                ln = ln[:20] + "[   12.345678] clocksource: watchdog on CPU1\n" + ln[20:]
            noisy.append("[    3.1%02d000] rcu: INFO: stall %d" % (i, i))
            noisy.append(ln)
        text = "\r\n".join(noisy) + "\r\n"
        self.assertEqual(e3k.parse_log(text), parse(clean))
        self.assertEqual(e3k.parse_log(text)[0][0]["problems"], [])

    def test_a_lost_burst_line_is_a_problem_not_a_shorter_run(self):
        lines = record(SWAP, 2, 3, CORE2, LLC2, per_line=2)
        del lines[7]  # the second "b" line: seqs 2 and 3
        r = parse(lines)[0][0]
        self.assertTrue(any("from seq 4, expected 2" in p for p in r["problems"]), r["problems"])
        self.assertTrue(any("4 bursts parsed" in p for p in r["problems"]), r["problems"])
        self.assertIsNone(e3k.analyse("x", r)["columns"])

    def test_a_burst_moved_to_another_thread_is_detected(self):
        # damaged in transit (the hash no longer matches) ...
        lines = record(SWAP, 2, 3, CORE2, LLC2)
        lines[6] = lines[6].replace(" 1:1:1:200.0", " 0:1:1:200.0")
        r = parse(lines)[0][0]
        self.assertTrue(any("hash mismatch" in p for p in r["problems"]), r["problems"])
        # ... or written so (a valid line): thread 0 with 4 bursts, thread 1 with 2
        mixed = list(SWAP)
        mixed[1] = (0,) + SWAP[1][1:]
        r = parse(record(mixed, 2, 3, CORE2, LLC2))[0][0]
        self.assertTrue(any("exactly 3 bursts" in p for p in r["problems"]), r["problems"])

    def test_missing_end_and_end_of_another_gap_are_problems(self):
        r = parse(record(SWAP, 2, 3, CORE2, LLC2)[:-1])[0][0]
        self.assertIn("end of log: no END", r["problems"])
        end = line("@@E3K END gap_ms=10 bursts=6 overlap=0 changed=0 late_ms_max=0.5"
                   " pin_failed=0 elapsed_ms=1000.0")
        r = parse(record(SWAP, 2, 3, CORE2, LLC2)[:-1] + [end])[0][0]
        self.assertTrue(any("END of gap 10" in p for p in r["problems"]), r["problems"])

    def test_records_of_several_gaps_in_one_log_stay_apart(self):
        ten = [(t, c, i, ms / 20) for t, c, i, ms in SWAP]
        recs, _ = parse(record(ten, 2, 3, CORE2, LLC2, gap=10) + ["[ 5.0] x", "login:"]
                        + record(SWAP, 2, 3, CORE2, LLC2))
        self.assertEqual([r["gap_ms"] for r in recs], [10, 200])
        self.assertEqual([b[4] for b in recs[0]["bursts"]], [b[3] for b in ten])
        self.assertEqual([r["problems"] for r in recs], [[], []])

    def test_a_burst_on_a_cpu_outside_the_topology_is_a_problem(self):
        bad = list(SWAP)
        bad[2] = (1, 5, 0, 400.0)
        r = parse(record(bad, 2, 3, CORE2, LLC2))[0][0]
        self.assertTrue(any("CPU 5" in p for p in r["problems"]), r["problems"])


class Feeding(unittest.TestCase):
    def feed(self, bursts, threads, rounds, core, llc, **kw):
        r = parse(record(bursts, threads, rounds, core, llc, **kw))[0][0]
        self.assertEqual(r["problems"], [])
        return e3k.feed(r), r

    def test_seed_schedule_fed_through_the_log_gives_the_models_own_numbers(self):
        # 8 cores / 1 L3 and 24 / 24, the seed's schedule: every policy's cost
        # from the parsed log equals cachemodel.simulate() on the same seed
        for name in ("8 cores/1 L3", "24 cores/24 L3"):
            topo = cm.Topology(*cm.TOPOLOGIES[name])
            core = [topo.core(c) for c in range(topo.cpus)]
            llc = [topo.domain(c) for c in range(topo.cpus)]
            for delay in (10, 200):
                bursts = seed_bursts(topo.cpus, 6, delay, 3)
                naive = cm.policy_items(topo, "NAIVE", [(c, ms) for _, c, _, ms in bursts],
                                        cm.FITTED["expiry_ms"])
                bursts = [b[:2] + (i,) + b[3:] for b, i in zip(bursts, naive)]
                cols, _ = self.feed(bursts, topo.cpus, 6, core, llc, gap=delay)
                for col, pol in e3k.POLICY.items():
                    want = cm.simulate(topo, pol, delay, 6, 3)
                    self.assertAlmostEqual(cols[col]["cycles"], want[0], places=6, msg=(name, col))
                    self.assertEqual(cols[col]["place"], want[1])
                # the kernel's cids were NAIVE's: the same cost
                self.assertAlmostEqual(cols["kernel mm_cid"]["cycles"], cols["NAIVE"]["cycles"])

    def test_kernel_cids_equal_to_the_cpu_cost_what_per_cpu_costs(self):
        same = [(t, c, c, ms) for t, c, _, ms in SWAP]
        cols, _ = self.feed(same, 2, 3, CORE2, LLC2)
        self.assertEqual(cols["kernel mm_cid"], cols["per-CPU"])
        self.assertEqual(cols["per-CPU"]["counted"], 4)  # first round left out
        self.assertEqual(cols["per-CPU"]["place"]["same core"], 4)

    def test_a_cid_moving_between_llcs_costs_a_remote_transfer_by_hand(self):
        cols, _ = self.feed(SWAP, 2, 3, CORE2, LLC2)
        k = cols["kernel mm_cid"]
        # counted bursts (round >= 1): seq 2..5; each item last used on the
        # other CPU (the other LLC) 200 ms before (seq 2: cid 0 at 0 ms, 400 ms)
        idle = [400.0, 400.0, 400.0, 400.0]
        want = cm.LINES * (cm.FITTED["compute"] + sum(
            cm.relation_cost("other domain", t, cm.FITTED) for t in idle) / 4)
        self.assertEqual(k["place"], {"same core": 0, "same domain": 0, "other domain": 4})
        self.assertAlmostEqual(k["cycles"], want)
        self.assertGreater(k["cycles"], cols["per-CPU"]["cycles"])

    def test_first_burst_of_each_thread_is_not_counted_even_when_late(self):
        # thread 1's first burst comes after thread 0's second: still its round 0
        late = [(0, 0, 0, 0.0), (0, 0, 0, 200.0), (1, 1, 1, 300.0), (1, 1, 1, 400.0)]
        cols, _ = self.feed(late, 2, 2, CORE2, LLC2)
        self.assertEqual(cols["per-CPU"]["counted"], 2)

    def test_mm_cid_not_live_leaves_the_kernel_column_out(self):
        dead = [(t, c, -1, ms) for t, c, _, ms in SWAP]
        cols, r = self.feed(dead, 2, 3, CORE2, LLC2, live=False)
        self.assertIsNone(cols["kernel mm_cid"])
        self.assertEqual(cols["per-CPU"]["counted"], 4)
        row = e3k.analyse("B", r)
        self.assertIn("not live", e3k.markdown([row], []))

    def test_policies_spread_only_up_to_the_thread_count(self):
        # 4 CPUs, 2 threads floating over all four, bursts further apart than
        # the expiry (no cid kept): RECENT spreads to 2 cids, not to 4
        core, llc = [0, 1, 2, 3], [0, 0, 1, 1]
        bursts = [(k % 2, k % 4, k % 2, 1000.0 * k) for k in range(8)]
        r = parse(record(bursts, 2, 4, core, llc))[0][0]
        topo = e3k.MappedTopology(r["core"], r["llc"])
        items = cm.policy_items(topo, "RECENT", [(c, ms) for _, _, c, _, ms in r["bursts"]],
                                cm.FITTED["expiry_ms"], bound=2)
        self.assertLess(max(items), 2)
        self.assertEqual(max(cm.policy_items(topo, "RECENT", [(c, ms) for _, _, c, _, ms in
                                                              r["bursts"]],
                                             cm.FITTED["expiry_ms"])), 3)
        # feed() gives the policies that bound: min(allowed CPUs, threads)
        seq = [(c, it, ms, k >= 2) for (_, _, c, _, ms), it, k in zip(r["bursts"], items, range(8))]
        self.assertEqual(e3k.feed(r)["RECENT"]["cycles"], cm.sequence_cost(topo, seq)[0])
        self.assertNotEqual(e3k.feed(dict(r, threads=4))["RECENT"]["cycles"],
                            cm.sequence_cost(topo, seq)[0])


class Report(unittest.TestCase):
    def test_markdown_json_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            good, bad = os.path.join(d, "good.txt"), os.path.join(d, "bad.txt")
            with open(good, "w") as f:
                f.write("\n".join(record(SWAP, 2, 3, CORE2, LLC2, release="7.3.0-x")) + "\n")
            with open(bad, "w") as f:
                f.write("no record here\n")
            out, js = io.StringIO(), os.path.join(d, "e3k.json")
            with redirect_stdout(out):
                rc = e3k.main(["e3k.py", "--json", js, "B-7.3=" + good])
            self.assertEqual(rc, 0)
            md = out.getvalue()
            self.assertIn("| B-7.3 | 7.3.0-x | 200 ms | 2 | 1 | 6 |", md)
            with open(js) as f:
                doc = json.load(f)
            row = doc["rows"][0]
            self.assertEqual((row["label"], row["kernel"], row["gap_ms"]), ("B-7.3", "7.3.0-x", 200))
            self.assertAlmostEqual(row["ratios"]["kernel mm_cid"],
                                   row["columns"]["kernel mm_cid"]["cycles"]
                                   / row["columns"]["per-CPU"]["cycles"])
            self.assertIn("%.2fx" % row["ratios"]["kernel mm_cid"], md)
            out = io.StringIO()
            with redirect_stdout(out):
                rc = e3k.main(["e3k.py", "B=" + good, "C=" + bad, "D=" + os.path.join(d, "none")])
            self.assertEqual(rc, 1)
            self.assertIn("C (%s): no E3k record" % bad, out.getvalue())
            self.assertIn("cannot read", out.getvalue())
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
                self.assertEqual(e3k.main(["e3k.py", "nolabel"]), 2)
            self.assertIn("Usage", err.getvalue())


class BenchReportSection(unittest.TestCase):
    def test_report_copies_e3k_md_or_says_not_run(self):
        import bench_report
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "e3k.md")
            L = []
            bench_report.write_e3k_md(L, md)
            self.assertEqual(L[-1], "not run: make check-smp")
            with open(md, "w") as f:
                f.write(e3k.markdown([e3k.analyse("B-6.12", parse(record(SWAP, 2, 3, CORE2,
                                                                         LLC2))[0][0])], []))
            L = []
            bench_report.write_e3k_md(L, md)
            self.assertEqual(L[1], "## E3k: T3 on the real kernel's mm_cid allocator")
            self.assertTrue(any(x.startswith("| B-6.12 | 6.12.0-test | 200 ms |") for x in L))


class Recorder(unittest.TestCase):
    BIN = os.path.join(ROOT, "build", "smp", "bin", "e3k_bursts")

    @unittest.skipUnless(os.access(BIN, os.X_OK), "build/smp/bin/e3k_bursts not built")
    def test_recorder_output_parses_complete(self):
        env = dict(os.environ, E3K_GAPS="1,2", E3K_ROUNDS="3", E3K_THREADS="3", E3K_PIN="0")
        out = subprocess.run([self.BIN], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertTrue(out.stdout.rstrip().split("\n")[-1].startswith("PASS e3k_bursts"))
        recs, stray = e3k.parse_log(out.stdout)
        self.assertEqual(stray, [])
        self.assertEqual([(r["gap_ms"], len(r["bursts"]), r["problems"]) for r in recs],
                         [(1, 9, []), (2, 9, [])])
        self.assertIsNotNone(e3k.analyse("host", recs[0])["columns"])


if __name__ == "__main__":
    unittest.main()
