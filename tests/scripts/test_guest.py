# SPDX-License-Identifier: MIT
"""Unit tests of scripts/guest.sh, the emulated machines' host side
(make check-aarch64, check-smp, check-kernels): the plan a guest gets
(filter, exclusion, timeout scale, /bin paths), the TCG threading it
boots with, and the verdict read back
from a console log (a run without its result, a failed run, aborts, a
guest that never finished, a kernel oops). Run:
python3 -m unittest discover -s tests/scripts"""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def sh(script, env=None):
    """Run @script in sh with scripts/guest.sh sourced; its stdout."""
    e = dict(os.environ)
    e.update(env or {})
    e["CL_GUEST_DIR"] = tempfile.gettempdir()
    r = subprocess.run(["sh", "-c", ". scripts/guest.sh\n" + script], cwd=ROOT, env=e,
                       capture_output=True, text=True, check=True)
    return r.stdout


PLAN = """\
# a comment
unit.rseq 120 test_rseq CL_TEST_MODE=default
unit.runtime 900 test_sched_runtime CL_TEST_MODE=default
smp.cid 300 smp_cid DURATION=4
fault.cid 300 fault DURATION=8 -- --hotplug /bin/smp_cid
"""


class Plan(unittest.TestCase):
    def plan(self, flt, scale, env=None):
        with tempfile.NamedTemporaryFile("w", suffix=".plan", delete=False) as f:
            f.write(PLAN)
        try:
            return sh("guest_plan %s '%s' %s" % (f.name, flt, scale), env).splitlines()
        finally:
            os.unlink(f.name)

    def test_filter_scale_and_paths(self):
        self.assertEqual(self.plan("^(unit|smp)\\.", 4), [
            "unit.rseq 480 CL_TEST_MODE=default -- /bin/test_rseq",
            "unit.runtime 3600 CL_TEST_MODE=default -- /bin/test_sched_runtime",
            "smp.cid 1200 DURATION=4 -- /bin/smp_cid",
        ])

    def test_exclusion_and_wrapper_arguments(self):
        got = self.plan(".", 1, {"GUEST_EXCLUDE": "^unit\\.runtime$"})
        self.assertNotIn("unit.runtime", " ".join(got))
        self.assertIn("fault.cid 300 DURATION=8 -- /bin/fault --hotplug /bin/smp_cid", got)
        self.assertEqual(len(got), 3)


    def test_only_keeps_the_runs_it_matches_within_the_filter(self):
        got = self.plan("^(unit|smp)\\.", 1, {"GUEST_ONLY": "^(unit\\.runtime|fault\\.cid)$"})
        self.assertEqual(got, ["unit.runtime 900 CL_TEST_MODE=default -- /bin/test_sched_runtime"])
        got = self.plan(".", 1, {"GUEST_EXCLUDE": "^unit\\.runtime$",
                                 "GUEST_ONLY": "^unit\\.runtime$"})
        self.assertEqual(got, [])


class Tcg(unittest.TestCase):
    """guest_tcg: one TCG thread for a guest with more than 4 CPUs per host
    CPU (QEMU's per-CPU threads then spend their time in QEMU's locks), one
    thread per guest CPU otherwise; CL_GUEST_TCG forces either."""

    def tcg(self, cpus, env=None):
        return sh("guest_tcg %d" % cpus, env).strip()

    def test_auto_by_guest_cpus_per_host_cpu(self):
        host = len(os.sched_getaffinity(0))  # (what nproc counts)
        self.assertEqual(self.tcg(4 * host), "multi")
        self.assertEqual(self.tcg(4 * host + 1), "single")
        self.assertEqual(self.tcg(1), "multi")

    def test_forced_and_bad_values(self):
        self.assertEqual(self.tcg(1000, {"CL_GUEST_TCG": "multi"}), "multi")
        self.assertEqual(self.tcg(1, {"CL_GUEST_TCG": "single"}), "single")
        with self.assertRaises(subprocess.CalledProcessError):
            self.tcg(8, {"CL_GUEST_TCG": "both"})


def console(lines, done=True):
    body = "\n".join(lines + (["@@CLG DONE"] if done else []))
    f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    f.write(body + "\n")
    f.close()
    # guest_report reads LOG.txt (the console without carriage returns)
    os.rename(f.name, f.name + ".txt")
    return f.name


class Report(unittest.TestCase):
    def report(self, log):
        out = sh('guest_report "%s" "smp X"\necho "=$GUEST_PASSED $GUEST_FAILED $GUEST_ABORTS $GUEST_OOPS"'
                 % log)
        os.unlink(log + ".txt")
        lines = out.splitlines()
        return lines[:-1], lines[-1][1:].split()

    def test_pass_fail_missing_and_aborts(self):
        log = console([
            "@@CLG GUEST cpus=8 llcs=2 nodes=1 smt=1 kernel=6.12 mm_cid=on guard=off io_uring=on",
            "@@CLG START a", "counter_stress [x, ops rseq]: 12 aborts: PASS", "@@CLG END a rc=0",
            "@@CLG TIME a 1.5",
            "@@CLG START b", "[   12.5] some kernel line", "@@CLG END b rc=1",
            "@@CLG START c",
        ])
        lines, (passed, failed, aborts, oops) = self.report(log)
        self.assertEqual(lines, [
            "smp X a: pass (rc=0, 1.5 s, rseq aborts 12)",
            "smp X b: fail (rc=1)",
            "smp X c: fail (no result)",
        ])
        self.assertEqual((passed, failed, aborts, oops), ("1", "2", "12", "0"))

    def test_unfinished_guest_fails(self):
        log = console(["@@CLG START a", "@@CLG END a rc=0"], done=False)
        lines, (passed, failed, _, _) = self.report(log)
        self.assertEqual((passed, failed), ("1", "1"))
        self.assertTrue(any("did not finish" in l for l in lines))

    def test_oops_is_reported(self):
        log = console(["@@CLG START a", "[    3.1] BUG: unable to handle page fault",
                       "@@CLG END a timeout"])
        lines, (_, failed, _, oops) = self.report(log)
        self.assertEqual((failed, oops), ("1", "1"))
        self.assertTrue(any("oops or panic" in l for l in lines))


if __name__ == "__main__":
    unittest.main()
