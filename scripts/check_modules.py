#!/usr/bin/env python3
"""check_modules.py - rules 2 (modules) and 3 (arch macros) of check-layers.sh.

Usage: check_modules.py modules [--sched] [--quiet-sched] ROOT
       check_modules.py arch [--quiet-pending] ROOT
       check_modules.py module-of PATH...

ROOT is the directory holding cachelocal/. The rules, the module map and the
list of known arch offenders are described at the top of check-layers.sh,
which runs this script and its self-test; this file only implements them
(one process, so the whole tree is read in well under a second).
"""
import os
import re
import subprocess
import sys

# Known offenders of rule 3, reported but not failed (remove each once fixed).
# Empty: arch/arch.h is the one header that tests the target.
ARCH_PENDING = set()
ARCH_MACROS = re.compile(
    r"\b(__x86_64__|__amd64__|__i386__|__aarch64__|__arm__|__riscv|__powerpc__|"
    r"__powerpc64__|__PPC64__|__ppc64__|__s390__|__s390x__|__mips__|__loongarch__|"
    r"__sparc__|_M_X64|_M_AMD64|_M_IX86|_M_ARM64|_M_ARM)\b")
# The target macros arch/arch.h defines: tested only in arch/ and config.h
# (the capability macros, CL_ARCH_HAVE_*, are for every header to test).
ARCH_TARGETS = re.compile(
    r"\b(CL_ARCH_X86_64|CL_ARCH_AARCH64|CL_ARCH_PPC64|CL_ARCH_S390X|CL_ARCH_RISCV|"
    r"CL_ARCH_GENERIC)\b")
SHARED_L0 = {"version.h", "config.h", "compiler.h", "sys.h"}
PRIVATE = re.compile(r"\b(?:cl__|CL__)[A-Za-z0-9_]*")
CONDITIONAL = re.compile(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b")
CTAGS_IGNORE = ["CL__TLS_MODEL", "CL_WEAK", "CL_ALIGNED+", "__asm__+", "CL_UNUSED"]


def module_of(path):
    """The module of a header (relative to cachelocal/); "=shared" for the
    part every module may use, "=sched" for the sched/ modules' own
    (sched/internal.h, its pieces in sched/internal/, sched/runtime/)."""
    if path.startswith(("internal/", "arch/")) or path in SHARED_L0:
        return "=shared"
    if path == "sched/internal.h" or path.startswith(("sched/internal/", "sched/runtime/")):
        return "=sched"
    parts = path.split("/")
    if parts[0] == "sched" and len(parts) >= 2:
        return "sched/" + parts[1].removesuffix(".h")
    if len(parts) > 1:
        return parts[0]
    return path.removesuffix(".h")


def may_use(user, owner):
    if user == owner or owner == "=shared":
        return True
    return owner == "=sched" and (user == "=sched" or user.startswith("sched/"))


def strip_comments(text):
    """C text without comments (each replaced by a space; newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def headers(root):
    base = os.path.join(root, "cachelocal")
    found = []
    for d, _, files in os.walk(base):
        for f in files:
            if f.endswith(".h"):
                found.append(os.path.relpath(os.path.join(d, f), base))
    return base, sorted(found)


def definitions(base, files):
    """{name: {file, ...}} of the cl__/CL__ names each header defines."""
    try:
        ver = subprocess.run(["ctags", "--version"], capture_output=True, text=True).stdout
    except OSError:
        ver = ""
    if "Universal" not in ver:
        sys.exit("MODULE: universal-ctags is needed for the module check (make deps)")
    cmd = ["ctags", "-x", "--language-force=C", "--c-kinds=dfgpsetuvx", "--_xformat=%N %F"]
    cmd += ["-I" + i for i in CTAGS_IGNORE] + files
    res = subprocess.run(cmd, cwd=base, capture_output=True, text=True, check=True)
    defs = {}
    for line in res.stdout.splitlines():
        name, _, f = line.partition(" ")
        if PRIVATE.fullmatch(name):
            defs.setdefault(name, set()).add(f)
    return defs


def uses(base, f):
    """The private names a header uses outside #if/#ifdef/#ifndef/#elif lines."""
    with open(os.path.join(base, f), encoding="utf-8") as fh:
        text = strip_comments(fh.read())
    text = re.sub(r"\\\n", " ", text)
    names = set()
    for line in text.splitlines():
        if not CONDITIONAL.match(line):
            names.update(PRIVATE.findall(line))
    return names


def check_modules(root, sched_on, quiet_sched):
    base, files = headers(root)
    defs = definitions(base, files)
    bad, pending = [], []
    for f in files:
        um = module_of(f)
        for name in sorted(uses(base, f)):
            owners_files = sorted(defs.get(name, ()))
            owners = sorted({module_of(o) for o in owners_files})
            if not owners or any(may_use(um, o) for o in owners):
                continue
            msg = (f"MODULE: cachelocal/{f} (module {um}) uses {name}, private to module "
                   f"{' '.join(owners)} (cachelocal/{owners_files[0]}): use its API, or move "
                   f"the name to internal/")
            if (um == "=sched" or um.startswith("sched/")) and not sched_on:
                pending.append(msg)
            else:
                bad.append(msg)
    for m in bad:
        print(m)
    if pending and not quiet_sched:
        print(f"module check: {len(pending)} cross-module uses in sched/ not enforced "
              f"(check-layers.sh --sched lists and enforces them)")
    return 1 if bad else 0


def check_arch(root, quiet_pending):
    base, files = headers(root)
    bad = 0
    for f in files:
        if f.startswith("arch/"):
            continue
        with open(os.path.join(base, f), encoding="utf-8") as fh:
            text = re.sub(r"\\\n", " ", strip_comments(fh.read()))
        hits = set()
        for line in text.splitlines():
            if CONDITIONAL.match(line):
                hits.update(ARCH_MACROS.findall(line))
                if f != "config.h":
                    hits.update(ARCH_TARGETS.findall(line))
        if not hits:
            continue
        names = " ".join(sorted(hits))
        if f in ARCH_PENDING:
            if not quiet_pending:
                print(f"arch check: cachelocal/{f} tests {names} (known offender, not failed yet)")
        else:
            print(f"ARCH: cachelocal/{f} tests {names} outside arch/: test a capability "
                  f"macro (CL_ARCH_HAVE_*, CL__ARCH_*: arch/arch.h) or move the code to arch/")
            bad = 1
    return bad


def main(argv):
    if len(argv) >= 2 and argv[1] == "module-of":
        for p in argv[2:]:
            print(p, module_of(p))
        return 0
    if len(argv) < 3 or argv[1] not in ("modules", "arch"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    opts = set(a for a in argv[2:-1])
    root = argv[-1]
    if argv[1] == "modules":
        return check_modules(root, "--sched" in opts, "--quiet-sched" in opts)
    return check_arch(root, "--quiet-pending" in opts)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
