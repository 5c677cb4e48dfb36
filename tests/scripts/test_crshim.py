# SPDX-License-Identifier: MIT
"""Unit tests of tests/unit/crshim.h, the runner of the sanitizer, valgrind
and guest builds: a runner stopped with SIGTERM while a test hangs names
that test, prints each of its threads' state and system call, counts it
failed and exits 1; the tests before it keep their verdicts. Run:
python3 -m unittest discover -s tests/scripts"""
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

PROGRAM = r"""
#include "crshim.h"
#include <pthread.h>

static void *parked(void *p)
{
	(void)p;
	pause();
	return NULL;
}

Test(demo, passes_first) { cr_assert_eq(1, 1); }

Test(demo, hangs_with_a_second_thread)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, parked, NULL), 0);
	printf("hanging\n"); /* the rendezvous: the runner is stopped after this */
	pause();
}

Test(demo, never_started) { cr_assert_eq(1, 1); }
"""


def threads_asleep(runner):
    """Whether every thread of @runner's child (the test) sleeps."""
    try:
        with open("/proc/%d/task/%d/children" % (runner, runner)) as f:
            kids = f.read().split()
        if len(kids) != 1:
            return False
        tdir = "/proc/%s/task" % kids[0]
        states = []
        for tid in os.listdir(tdir):
            with open(os.path.join(tdir, tid, "stat")) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        return len(states) == 2 and all(s == "S" for s in states)
    except OSError:
        return False


@unittest.skipUnless(shutil.which("cc"), "no C compiler")
class StoppedRunner(unittest.TestCase):
    def test_names_the_hanging_test_and_its_threads(self):
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "hang.c"), os.path.join(d, "hang")
            with open(src, "w") as f:
                f.write(PROGRAM)
            subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-I", os.path.join(ROOT, "tests", "unit"),
                            src, "-o", exe, "-pthread"], check=True)
            p = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(p.stdout.readline(), "hanging\n")
            deadline = time.monotonic() + 60
            while not threads_asleep(p.pid) and time.monotonic() < deadline:
                time.sleep(0.01)  # polling the rendezvous: both threads in pause()
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("[FAIL] demo::hangs_with_a_second_thread: still running after", err)
        threads = [ln for ln in err.splitlines() if "  thread " in ln]
        self.assertEqual(len(threads), 2, err)
        for ln in threads:
            self.assertIn("(hang): state S, wchan ", ln)
            if platform.machine() == "x86_64":
                self.assertIn("syscall 34 ", ln)  # pause(2)
        self.assertIn("Tested: 2 | Passing: 1 | Failing: 1 | Crashing: 0", out)
        self.assertNotIn("never_started", err + out)


if __name__ == "__main__":
    unittest.main()
