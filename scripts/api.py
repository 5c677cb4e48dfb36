#!/usr/bin/env python3
"""api.py - the public API of cachelocal as a sorted text list (api/cachelocal.api).

  api.py generate [--include DIR] [--out FILE]
      writes the list for the headers under DIR/cachelocal (default: include)
      to FILE (default: stdout).
  api.py check [--include DIR] [--api FILE]
      regenerates the list and fails (exit 1, with the diff) if it differs
      from FILE (default: api/cachelocal.api).
  api.py selftest
      proves the check catches changes: a copy of the headers with a new
      function, a changed signature, a new macro and a grown embedded
      struct planted must differ from the list of the unchanged headers by
      a line naming each.

What is listed, one item a line, grouped and sorted (the header is part of
the item: moving a name to another header changes what a user includes):
  function NAME: TYPE  [HEADER]   every cl_ function (not cl__), its C type
                                  (parameter types, not their names)
  variable NAME: TYPE  [HEADER]   every cl_ variable
  macro NAME[(PARAMS)]  [HEADER]  every CL_ macro (not CL__), parameters
                                  only (not its body)
  enum NAME  [HEADER]             every CL_/cl_ enumerator
  struct NAME  [HEADER]           every complete public struct
  layout NAME size S align A      every public struct
  member NAME.FIELD offset O      the members of the structs users embed
                                  or fill in (EMBEDDED)
The list is made and checked on x86_64 (its arch macros and LP64 layouts);
the check is skipped on other machines.
Parsed by clang (-ast-dump=json) from a translation unit including every
public header (not internal/, not arch/), macros from clang -E -dD.
"""
import argparse
import difflib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API = os.path.join(ROOT, "api", "cachelocal.api")

# Structs a user embeds in their own objects, puts on the stack or fills in
# (attributes): their members' offsets are part of the binary interface of
# every program built against the headers.
EMBEDDED = (
    "cl_brlock", "cl_cond", "cl_counter", "cl_counter_cid", "cl_mutex",
    "cl_objcache_attr", "cl_percpu_pool_attr", "cl_rseq_abi", "cl_rseq_cs",
    "cl_runtime_attr", "cl_sched_entity", "cl_spawn_attr", "cl_spinlock",
    "cl_waitq",
)


def public_headers(inc):
    """Public headers, relative to INC/cachelocal: not internal/, not arch/."""
    base = os.path.join(inc, "cachelocal")
    out = []
    for d, _, files in os.walk(base):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), base)
            if f.endswith(".h") and not rel.startswith(("internal/", "arch/")):
                out.append(rel)
    return sorted(out)


def urcu_cflags():
    r = subprocess.run(["pkg-config", "--cflags", "liburcu-memb", "liburcu-cds"],
                       capture_output=True, text=True)
    return r.stdout.split()


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("api.py: %s failed:\n%s" % (what, r.stderr[-3000:]))
    return r.stdout


class Api:
    def __init__(self, inc):
        self.inc = os.path.realpath(inc)
        self.base = os.path.join(self.inc, "cachelocal") + os.sep
        self.rels = public_headers(self.inc)
        # as users build: cachelocal-sched.pc's flags define _DEFAULT_SOURCE
        self.cflags = ["-std=c11", "-D_DEFAULT_SOURCE", "-I" + self.inc] + urcu_cflags()
        self.tmp = tempfile.mkdtemp(prefix="cl-api.")
        self.tu = os.path.join(self.tmp, "all.c")
        with open(self.tu, "w") as f:
            f.write("".join("#include <cachelocal/%s>\n" % h for h in self.rels))

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def header(self, path):
        """HEADER relative to include/ if PATH is a public header, else None."""
        path = os.path.realpath(path) if path else ""
        if not path.startswith(self.base):
            return None
        rel = os.path.relpath(path, self.base)
        if rel.startswith(("internal/", "arch/")):
            return None
        return "cachelocal/" + rel

    def decls(self):
        ast = json.loads(run(["clang"] + self.cflags + ["-fsyntax-only", "-Xclang", "-ast-dump=json",
                                                        self.tu], "clang -ast-dump"))
        items, structs = [], {}
        cur = None
        for n in ast.get("inner", []):
            # clang names the file only where it changes: follow it in order
            loc = n.get("loc", {})
            for l in (loc.get("spellingLoc", {}), loc.get("expansionLoc", {}), loc):
                if "file" in l:
                    cur = l["file"]
            hdr = self.header(cur)
            if hdr is None or n.get("isImplicit"):
                continue
            kind, name = n.get("kind"), n.get("name", "")
            if kind in ("FunctionDecl", "VarDecl") and name.startswith("cl_") \
                    and not name.startswith("cl__"):
                what = "function" if kind == "FunctionDecl" else "variable"
                items.append("%s %s: %s  [%s]" % (what, name, n["type"]["qualType"], hdr))
            elif kind == "RecordDecl" and n.get("tagUsed") == "struct" \
                    and name.startswith("cl_") and not name.startswith("cl__") \
                    and n.get("completeDefinition"):
                fields = [f["name"] for f in n.get("inner", [])
                          if f.get("kind") == "FieldDecl" and f.get("name")
                          and not f.get("isBitfield")]
                structs[name] = (hdr, fields)
            elif kind == "EnumDecl":
                for e in n.get("inner", []):
                    en = e.get("name", "")
                    if e.get("kind") == "EnumConstantDecl" and en[:3] in ("CL_", "cl_") \
                            and en[:4] not in ("CL__", "cl__"):
                        items.append("enum %s  [%s]" % (en, hdr))
        items += ["struct %s  [%s]" % (s, h) for s, (h, _) in structs.items()]
        return items, structs

    def macros(self):
        out = run(["clang"] + self.cflags + ["-E", "-dD", self.tu], "clang -E -dD")
        items, cur = set(), None
        mark = re.compile(r'^# \d+ "([^"]*)"')
        define = re.compile(r"^#define (CL_\w*)(\([^)]*\))?")
        for line in out.splitlines():
            m = mark.match(line)
            if m:
                cur = m.group(1)
                continue
            m = define.match(line)
            if m and not m.group(1).startswith("CL__"):
                hdr = self.header(cur)
                if hdr:
                    params = re.sub(r"\s+", "", m.group(2) or "").replace(",", ", ")
                    items.add("macro %s%s  [%s]" % (m.group(1), params, hdr))
        return sorted(items)

    def layouts(self, structs):
        """size/align of every public struct, offsets of the EMBEDDED ones (this arch)."""
        prog = ["#include <stddef.h>", "#include <stdio.h>", '#include "all.c"', "int main(void)", "{"]
        for s in sorted(structs):
            prog.append('\tprintf("layout %s size %%zu align %%zu\\n", sizeof(struct %s), '
                        '_Alignof(struct %s));' % (s, s, s))
            if s in EMBEDDED:
                for f in structs[s][1]:
                    prog.append('\tprintf("member %s.%s offset %%zu\\n", offsetof(struct %s, %s));'
                                % (s, f, s, f))
        prog += ["\treturn 0;", "}"]
        src = os.path.join(self.tmp, "layout.c")
        exe = os.path.join(self.tmp, "layout")
        with open(src, "w") as f:
            f.write("\n".join(prog) + "\n")
        run(["gcc"] + self.cflags + ["-w", "-o", exe, src, "-pthread"], "the layout program's build")
        return run([exe], "the layout program").splitlines()


def generate(inc):
    a = Api(inc)
    try:
        items, structs = a.decls()
        items += a.macros()
        head = ["# cachelocal public API: generated by scripts/api.py from the headers;",
                "# `make api-update` rewrites it. Every change here is an API change: note it",
                "# in CHANGES.md under Unreleased. Generated on x86_64 (arch macros, layouts)."]
        body = sorted(set(items), key=lambda l: (l.split()[0], l)) + a.layouts(structs)
        return "\n".join(head + body) + "\n"
    finally:
        a.close()


def differ(want, got, label="api/cachelocal.api"):
    """The unified diff of WANT (committed) vs GOT (from the headers), or ''."""
    return "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                        label + " (committed)", label + " (from the headers)"))


def cmd_generate(args):
    text = generate(args.include)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
        print("api: wrote %s (%d items)" % (args.out, len(text.splitlines()) - 3))
    else:
        sys.stdout.write(text)
    return 0


def cmd_check(args):
    if platform.machine() != "x86_64":
        # the list names x86_64's arch macros and LP64 layouts
        print("api-check: SKIPPED on %s (the list is made on x86_64)" % platform.machine())
        return 0
    try:
        with open(args.api) as f:
            want = f.read()
    except OSError:
        want = ""
    d = differ(want, generate(args.include))
    if d:
        sys.stdout.write(d)
        print("api-check: FAIL: public API changed: run make api-update and note it in CHANGES.md")
        return 1
    print("api-check: the headers match api/cachelocal.api (%d items)" % (len(want.splitlines()) - 3))
    return 0


# (description, header, change: text -> text, a line the diff must show)
PLANTS = (
    ("a new function", "counter.h",
     lambda t: plant_before_guard(t, "CL_INLINE int cl_counter_planted(void)\n{\n\treturn 0;\n}\n"),
     "+function cl_counter_planted: int (void)  [cachelocal/counter.h]"),
    ("a changed signature", "counter.h",
     lambda t: re.sub(r"\bcl_counter_destroy\(struct cl_counter \*(\w+)\)",
                      r"cl_counter_destroy(struct cl_counter *\1, int planted)", t, count=1),
     "+function cl_counter_destroy: void (struct cl_counter *, int)  [cachelocal/counter.h]"),
    ("a new macro", "cacheline.h",
     lambda t: plant_before_guard(t, "#define CL_PLANTED_MACRO(x) (x)\n"),
     "+macro CL_PLANTED_MACRO(x)  [cachelocal/cacheline.h]"),
    ("a grown embedded struct", "spinlock.h",
     lambda t: re.sub(r"(struct cl_spinlock \{\n)", r"\1\tint planted;\n", t, count=1),
     "+member cl_spinlock.planted offset 0"),
)


def plant_before_guard(text, code):
    """TEXT with CODE inserted before its last #endif (the include guard's)."""
    i = text.rstrip().rfind("#endif")
    return text[:i] + code + text[i:]


def cmd_selftest(_args):
    """All changes planted in one copy (two generations, not five): each
    must show as its own line of the diff against the unchanged headers."""
    tmp = tempfile.mkdtemp(prefix="cl-api-selftest.")
    fail = 0
    try:
        inc = os.path.join(tmp, "include")
        shutil.copytree(os.path.join(ROOT, "include"), inc)
        for what, hdr, change, _ in PLANTS:
            path = os.path.join(inc, "cachelocal", hdr)
            with open(path) as f:
                old = f.read()
            new = change(old)
            if new == old:
                print("api selftest: FAIL: could not plant %s in %s (the header changed?)" % (what, hdr))
                fail += 1
            with open(path, "w") as f:
                f.write(new)
        d = differ(generate(os.path.join(ROOT, "include")), generate(inc)).splitlines()
        for what, hdr, _, line in PLANTS:
            if line in d:
                print("api selftest: %s in %s caught: %s" % (what, hdr, line))
            else:
                print("api selftest: FAIL: %s in %s not caught (no line %s)" % (what, hdr, line))
                fail += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if fail:
        return 1
    print("api selftest: every planted change was caught")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--include", default=os.path.join(ROOT, "include"))
    g.add_argument("--out")
    c = sub.add_parser("check")
    c.add_argument("--include", default=os.path.join(ROOT, "include"))
    c.add_argument("--api", default=API)
    sub.add_parser("selftest")
    args = p.parse_args()
    return {"generate": cmd_generate, "check": cmd_check, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
