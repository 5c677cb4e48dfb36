# SPDX-License-Identifier: MIT
"""Tests of scripts/bench_many_core.py: the topology it reads, the CPUs each
step gets, the plan's fit in the 8-minute budget, and the report's format
(the validator that make bench-many-core-dry applies to every report)."""
import copy
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import bench_many_core as bmc  # noqa: E402


def fake_sysfs(root, llcs, cores_per_llc, smt=2, nodes=1):
    """A sysfs tree: llcs x cores_per_llc cores of smt threads; CPU numbers
    as Linux gives them (all first threads, then all second threads); LLCs
    split evenly over the nodes."""
    ncores = llcs * cores_per_llc
    ncpu = ncores * smt
    cpu_dir = os.path.join(root, "devices/system/cpu")
    os.makedirs(cpu_dir)
    with open(os.path.join(cpu_dir, "online"), "w") as f:
        f.write("0-%d\n" % (ncpu - 1))
    node_cpus = {}
    for c in range(ncpu):
        core = c % ncores
        llc = core // cores_per_llc
        sib = [core + k * ncores for k in range(smt)]
        share = [x + k * ncores for k in range(smt)
                 for x in range(llc * cores_per_llc, (llc + 1) * cores_per_llc)]
        d = os.path.join(cpu_dir, "cpu%d" % c)
        os.makedirs(os.path.join(d, "topology"))
        with open(os.path.join(d, "topology/thread_siblings_list"), "w") as f:
            f.write(bmc.fmt_list(sib) + "\n")
        for idx, lvl, typ, lst in ((0, 1, "Data", sib), (1, 1, "Instruction", sib),
                                   (2, 2, "Unified", sib), (3, 3, "Unified", share)):
            i = os.path.join(d, "cache/index%d" % idx)
            os.makedirs(i)
            for name, val in (("level", lvl), ("type", typ), ("shared_cpu_list", bmc.fmt_list(lst))):
                with open(os.path.join(i, name), "w") as f:
                    f.write("%s\n" % val)
        node_cpus.setdefault(llc * nodes // llcs, []).append(c)
    for n, cpus in node_cpus.items():
        d = os.path.join(root, "devices/system/node/node%d" % n)
        os.makedirs(d)
        with open(os.path.join(d, "cpulist"), "w") as f:
            f.write(bmc.fmt_list(cpus) + "\n")


class Topology(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def topo(self, *args, **kw):
        root = os.path.join(self.tmp.name, "m%d" % len(os.listdir(self.tmp.name)))
        fake_sysfs(root, *args, **kw)
        return bmc.topology(root)

    def test_lists_round_trip(self):
        self.assertEqual(bmc.parse_list("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11])
        self.assertEqual(bmc.fmt_list([11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11")

    def test_cores_llcs_and_nodes_are_read(self):
        t = self.topo(4, 4, smt=2, nodes=2)  # 16 cores, 32 CPUs
        self.assertEqual(len(t["cpus"]), 32)
        self.assertEqual(len(bmc.groups(t, "core")), 16)
        self.assertEqual(len(bmc.groups(t, "llc")), 4)
        self.assertEqual(len(bmc.groups(t, "node")), 2)
        self.assertEqual(t["core"][16], 0)  # CPU 16 is core 0's second thread

    def test_one_cpu_per_core_spread_over_the_llcs(self):
        t = self.topo(4, 4, smt=2)
        cores = bmc.one_per_core(t)
        self.assertEqual(len(cores), 16)
        self.assertTrue(all(c < 16 for c in cores))  # never a second SMT thread
        self.assertEqual(sorted(t["llc"][c] for c in cores[:4]), sorted(set(t["llc"].values())))

    def test_pipe_pairs_in_one_llc_and_across_nodes(self):
        t = self.topo(4, 4, smt=2, nodes=2)
        within, cross, why = bmc.pipe_pairs(t)
        self.assertEqual(t["llc"][within[0]], t["llc"][within[1]])
        self.assertNotEqual(t["core"][within[0]], t["core"][within[1]])
        self.assertNotEqual(t["llc"][cross[0]], t["llc"][cross[1]])
        self.assertNotEqual(t["node"][cross[0]], t["node"][cross[1]])
        self.assertEqual(why, {})

    def test_one_llc_has_no_cross_pair_and_says_so(self):
        within, cross, why = bmc.pipe_pairs(self.topo(1, 2, smt=1))
        self.assertEqual(within, [0, 1])
        self.assertIsNone(cross)
        self.assertIn("one LLC", why["pipe cross-LLC"])

    def test_missing_files_give_one_core_per_cpu_and_one_llc(self):
        root = os.path.join(self.tmp.name, "bare")
        os.makedirs(os.path.join(root, "devices/system/cpu"))
        with open(os.path.join(root, "devices/system/cpu/online"), "w") as f:
            f.write("0-3\n")
        t = bmc.topology(root)
        self.assertEqual(len(bmc.groups(t, "core")), 4)
        self.assertEqual(len(bmc.groups(t, "llc")), 1)


class Plan(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def plan(self, llcs, cores, smt, dry, budget=bmc.BUDGET_S):
        root = os.path.join(self.tmp.name, "m%d" % len(os.listdir(self.tmp.name)))
        fake_sysfs(root, llcs, cores, smt=smt)
        return bmc.plan(bmc.topology(root), "B", "S", dry, budget)

    def test_sixteen_cores_run_every_step_within_eight_minutes(self):
        steps, skipped = self.plan(2, 8, 2, dry=False)
        names = [s["name"] for s in steps]
        for want in ("e3 10ms", "e3 200ms", "pipe in-LLC", "pipe cross-LLC", "rq scale",
                     "rpc 1w", "rpc 2w", "rpc 4w", "smp cid", "e3k"):
            self.assertIn(want, names)
        self.assertEqual(skipped, {})
        self.assertLessEqual(sum(s["est_s"] for s in steps), 480)
        e3 = {s["name"]: s for s in steps}
        self.assertIn("--delays-ms 200", " ".join(e3["e3 200ms"]["argv"]))
        self.assertIn("--delays-ms 10", " ".join(e3["e3 10ms"]["argv"]))
        rpc4 = e3["rpc 4w"]["argv"]
        self.assertEqual(rpc4[rpc4.index("--server-cpus") + 1], "4")
        self.assertEqual(rpc4[rpc4.index("--client-threads") + 1], "16")  # 32 CPUs - 4, at most 16

    def test_a_big_machine_stays_within_the_budget(self):
        root = os.path.join(self.tmp.name, "big")
        fake_sysfs(root, 12, 6, smt=1)  # 72 cores
        topo = bmc.topology(root)
        steps, skipped = bmc.plan(topo, "B", "S", False, bmc.BUDGET_S)
        self.assertLessEqual(sum(s["est_s"] for s in steps), 480)
        self.assertEqual(len([s for s in steps if s["name"] == "e3 10ms"][0]["cpus"].split(",")), 12)
        steps, skipped = bmc.plan(topo, "B", "S", False, 200)
        self.assertLessEqual(sum(s["est_s"] for s in steps), 200)
        self.assertTrue(all("budget" in why for why in skipped.values()))
        self.assertTrue(skipped)

    def test_dry_on_two_cpus_says_what_it_cannot_run(self):
        steps, skipped = self.plan(1, 2, 1, dry=True)
        self.assertTrue(all("--smoke" in s["argv"] for s in steps if "B" in s["argv"][0]))
        self.assertEqual(sorted(skipped), ["pipe cross-LLC", "rpc 2w", "rpc 4w"])
        self.assertIn("needs 3 CPUs", skipped["rpc 2w"])


def valid_report():
    return {"schema": bmc.SCHEMA, "mode": "dry", "budget_s": 480, "seconds": 20.0, "commit": "abc",
            "machine": {"host": "box", "kernel": "6.1.0", "arch": "x86_64", "cpu_model": "CPU",
                        "cpus": 2, "allowed": "0-1", "cores": 2, "llcs": 1, "nodes": 1,
                        "date": "2026-01-01 00:00:00 UTC"},
            "steps": [{"name": n, "what": "w", "cpus": "0-1", "est_s": 1.0, "timeout_s": 10,
                       "command": "taskset -c 0-1 x", "rc": 0, "seconds": 0.5,
                       "results": [{"bench": "x", "case": "c", "variant": "v", "threads": 2,
                                    "unit": "ns", "median": 2.0, "min": 1.0, "max": 3.0},
                                   {"bench": "x", "case": "c", "ratio": "a / b", "value": 1.5}]}
                      for n in ("e3 10ms", "e3 200ms", "pipe in-LLC", "rq scale", "rpc 1w", "e3k")
                      + tuple("smp " + p[4:] for p in bmc.SMP_PROGS)],
            "skipped": {"pipe cross-LLC": "one LLC", "rpc 2w": "needs 3 CPUs",
                        "rpc 4w": "needs 5 CPUs"}}


class Report(unittest.TestCase):
    def test_valid_report_passes_and_names_the_machine(self):
        doc = valid_report()
        self.assertEqual(bmc.check(doc), [])
        md = bmc.report_md(doc)
        self.assertTrue(md.startswith("# cachelocal on many cores: box\n"))
        self.assertIn("- machine: CPU, 2 CPUs allowed (0-1), 2 cores, 1 LLCs, 1 nodes", md)
        self.assertIn("| step | CPUs | time (est.) | exit | result |", md)
        self.assertIn("| e3 10ms | 0-1 | 0 s (1 s) | 0 | a / b 1.50x |", md)
        self.assertIn("| rpc 4w | - | - | - | not run: needs 5 CPUs |", md)
        self.assertIn("| c | v | 2 | 2 (1-3) | ns |", md)
        self.assertIn("the numbers mean nothing", md)

    def test_validator_catches_what_a_report_must_not_lack(self):
        cases = [
            (lambda d: d["machine"].pop("host"), "host missing"),
            (lambda d: d["machine"].update(cores=0), "cores not a positive count"),
            (lambda d: d["skipped"].pop("rpc 4w"), "rpc 4w neither run"),
            (lambda d: d["steps"][0].update(results=[]), "exit 0 but no result lines"),
            (lambda d: d["steps"][0].update(rc=1), "exit 1 without an error line"),
            (lambda d: d["steps"][0]["results"][0].update(median=9.0), "median outside"),
            (lambda d: d["steps"][0].update(cpus="all"), "CPU list"),
            (lambda d: d.update(schema=0), "not a many-core report"),
        ]
        for mutate, want in cases:
            doc = copy.deepcopy(valid_report())
            mutate(doc)
            errs = bmc.check(doc)
            self.assertTrue(any(want in e for e in errs), (want, errs))

    def test_failed_steps_are_named(self):
        doc = valid_report()
        doc["steps"][1].update(rc=124, error="timed out after 10 s")
        self.assertEqual(bmc.failed(doc), ["e3 200ms"])
        self.assertIn("FAILED: timed out after 10 s", bmc.report_md(doc))

    def test_smp_output_keeps_its_last_verdict_line(self):
        out = "noise\nPASS smp_cid: fine\n"
        self.assertEqual(bmc.parse_output("smp", out), [{"line": "PASS smp_cid: fine"}])
        self.assertEqual(bmc.parse_output("json", '{"a": 1}\nnot json\n{bad\n'), [{"a": 1}])


if __name__ == "__main__":
    unittest.main()
