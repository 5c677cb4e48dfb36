# SPDX-License-Identifier: MIT
"""`make bench` on a fresh machine: the peer libraries that its `deps` step
installs during that same make must be found by it (built, run, reported),
not only by the next run. Simulated with a dry run (`make -n`): `deps` is
replaced by a step that "installs" fake headers into a temporary include
directory, and the compilers are wrappers that find a probed header only
there. Run: python3 -m unittest discover -s tests/scripts"""
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# A compiler driver whose header probes (`-E -x c -` and `-x c++ ... -fsyntax-only -`,
# source on stdin) see only $FAKE_INC; any other call goes to the real compiler.
FAKE_CC = """\
#!/bin/sh
last=
for a in "$@"; do last=$a; done
case " $* " in
*" -E "*|*" -fsyntax-only "*)
	if [ "$last" = - ]; then
		h=$(sed -n 's/^#include <\\(.*\\)>$/\\1/p')
		[ -n "$h" ] && [ -f "$FAKE_INC/$h" ]
		exit
	fi ;;
esac
exec {real} "$@"
"""

# The peers' packages and the header each one installs (the names the
# Makefile probes), with the binary `make bench` builds for it.
PEERS = [("libjemalloc-dev", "jemalloc/jemalloc.h", "peer_alloc_jemalloc"),
         ("libgoogle-perftools-dev", "gperftools/tcmalloc.h", "peer_alloc_tcmalloc"),
         ("libmimalloc-dev", "mimalloc.h", "peer_alloc_mimalloc"),
         ("libck-dev", "ck_spinlock.h", "peer_locks"),
         ("libboost-fiber-dev", "boost/fiber/all.hpp", "runtime_boost")]


@unittest.skipUnless(shutil.which("make") and shutil.which("cc") and shutil.which("c++"),
                     "needs make, cc and c++")
class PeersInstalledByDeps(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cl-peers-")
        self.inc = os.path.join(self.tmp, "include")
        os.mkdir(self.inc)
        for name, real in (("cc", "cc"), ("cxx", "c++")):
            path = os.path.join(self.tmp, name)
            with open(path, "w") as f:
                f.write(FAKE_CC.replace("{real}", shutil.which(real)))
            os.chmod(path, 0o755)
        # deps "installs" every peer's header; `+` runs it under make -n too.
        # librseq (a build of the vendored snapshot) is not what is tested here.
        install = " && ".join("mkdir -p $(dir {0}/{1}) && touch {0}/{1}".format(self.inc, h)
                              for _, h, _ in PEERS)
        self.mk = os.path.join(self.tmp, "fresh.mk")
        with open(self.mk, "w") as f:
            f.write(textwrap.dedent("""\
                include {root}/Makefile
                deps:
                \t+@{install}
                librseq: ;
                """).format(root=ROOT, install=install))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def dry_run(self, target):
        env = {k: v for k, v in os.environ.items()
               if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES")}
        env["FAKE_INC"] = self.inc
        p = subprocess.run(["make", "-n", "-C", ROOT, "-f", self.mk, target,
                            "CC=" + os.path.join(self.tmp, "cc"),
                            "CXX=" + os.path.join(self.tmp, "cxx")],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        return p.stdout

    def test_the_probes_see_only_the_fake_include_directory(self):
        # bench-peers has no deps step: nothing "installed", no peer built
        out = self.dry_run("bench-peers")
        self.assertIn("/peer_alloc_glibc", out)
        for _, _, binary in PEERS:
            self.assertNotIn("/" + binary, out)

    def test_bench_builds_and_reports_the_peers_installed_by_its_deps_step(self):
        out = self.dry_run("bench")
        report = [ln for ln in out.splitlines() if "scripts/bench_report.py" in ln]
        self.assertTrue(report, out[-3000:])
        for pkg, _, binary in PEERS:
            self.assertNotIn("--peer-skipped " + pkg, report[-1])
            self.assertIn("/" + binary, out if binary == "runtime_boost" else report[-1])


@unittest.skipUnless(shutil.which("make"), "needs make")
class GoPeersBuilt(unittest.TestCase):
    """With `go` on the PATH, the runtime peers' build makes all three Go
    programs (runtime, idle and parked), into a build directory that does
    not exist yet, as on a fresh machine."""

    def test_all_go_peers_are_built_when_go_is_installed(self):
        tmp = tempfile.mkdtemp(prefix="cl-go-peers-")
        try:
            fake = os.path.join(tmp, "go")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(fake, 0o755)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "MAKEOVERRIDES")}
            env["PATH"] = tmp + os.pathsep + env.get("PATH", "")
            build = "build/test-go-peers-%d" % os.getpid()
            p = subprocess.run(["make", "-n", "-C", ROOT, "runtime-peers-build", "BUILD=" + build],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout[-3000:])
            self.assertNotIn("skipped: golang-go not installed",
                             [ln.strip() for ln in p.stdout.splitlines()])
            for prog in ("runtime_go", "idle_go", "parked_go"):
                self.assertIn("-o %s/bench/peers/%s" % (build, prog), p.stdout)
            self.assertFalse(os.path.exists(os.path.join(ROOT, build)))
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
