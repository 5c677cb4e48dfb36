#!/usr/bin/env python3
"""check-backcalls.py [--selftest]: the runtime's pieces run in one direction.

sched/runtime/core.h includes the pieces in order; a piece may call only
functions defined in itself or in a piece included before it. A call into a
later piece (a back-call) means the piece cannot be read or changed without
that later one: each is printed, and the exit status is 1 if there is any."""
import os
import re
import sys
import tempfile

DEF = re.compile(r"^(?:[A-Za-z_][\w \*]*?\s\**)?(cl_\w+|cl__\w+)\s*\([^;{]*\)\s*\{", re.M)
CALL = re.compile(r"\b(cl_\w+|cl__\w+)\s*\(")


def strip(text):
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def backcalls(d, core="core.h"):
    order = [o for o in re.findall(r'#include "([^"]+)"', open(os.path.join(d, core)).read())
             if os.path.exists(os.path.join(d, o))]
    texts, defs = {}, {}
    for i, f in enumerate(order):
        texts[f] = strip(open(os.path.join(d, f)).read())
        for m in DEF.finditer(texts[f]):
            defs.setdefault(m.group(1), i)
    edges = {}
    for i, f in enumerate(order):
        for m in CALL.finditer(texts[f]):
            j = defs.get(m.group(1))
            if j is not None and j > i:
                edges.setdefault((f, order[j]), set()).add(m.group(1))
    return order, edges


def selftest():
    with tempfile.TemporaryDirectory() as d:
        files = {"core.h": '#include "a.h"\n#include "b.h"\n',
                 "a.h": "CL_INLINE void cl__a(void)\n{\n\tcl__b();\n}\n",
                 "b.h": "CL_INLINE void cl__b(void)\n{\n}\n"}
        for n, t in files.items():
            with open(os.path.join(d, n), "w") as f:
                f.write(t)
        _, edges = backcalls(d)
        if edges != {("a.h", "b.h"): {"cl__b"}}:
            print("check-backcalls self-test: a planted back-call not found: %r" % edges)
            return 1
    print("check-backcalls self-test: a planted back-call is caught")
    return 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "cachelocal", "sched", "runtime")
    order, edges = backcalls(d)
    for (a, b), names in sorted(edges.items()):
        print("back-call: %s -> %s: %s" % (a, b, ", ".join(sorted(names))))
    print("runtime pieces: %d in core.h's order, %d back-calls" % (len(order), sum(len(v) for v in edges.values())))
    return 1 if edges else 0


if __name__ == "__main__":
    sys.exit(main())
