#!/usr/bin/env python3
"""man.py - the section 3 and 7 manual pages, and their HTML, from the headers.

  man.py build [--out DIR]
      writes DIR/man3 (default DIR: build/man): one page per public function
      (from its kernel-doc block), one page per header (the family: its
      functions, each with its summary, and its macros with their comments),
      and for every public macro a ".so" link to its header's page; DIR/man7:
      the overview pages of man/*.7 with the version filled in.
  man.py check [--out DIR] [--cc CC]
      builds the pages into DIR and fails (exit 1) when
        - a function or macro of api/cachelocal.api has no page (the message
          says what to add to which header);
        - a page names an errno that is not an errno of <errno.h>, or the
          robustness table (docs/robustness.md) records an errno for the
          function that its page does not name (functions the table does not
          list are not checked against it: it covers bad input only);
        - an example (.EX ... .EE) of a page does not compile (CC, default
          cc, -fsyntax-only against include/);
        - the #include of a function page's SYNOPSIS does not declare it;
        - groff -ww -man reports a warning for a page.
  man.py html [--out DIR] [--man DIR]
      writes DIR (default build/html): each page of --man (default
      build/man) rendered by groff -Thtml, cross references linked, and one
      index.html.
  man.py selftest
      plants each fault the check knows in a copy of the inputs and sees it
      caught: a public function without a kernel-doc block, a page naming
      an errno its function cannot return, a misspelt errno, an example
      that does not compile, a SYNOPSIS #include that does not declare the
      function, a groff warning; and sees a new function with its
      kernel-doc block (not in the robustness table) get a page and pass.

One source: the kernel-doc comments of the headers (the parser is
scripts/check-kernel-doc.py's), the public names of api/cachelocal.api, and
the errno table of docs/robustness.md.
"""
import argparse
import concurrent.futures
import errno as errno_mod
import html
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_spec = importlib.util.spec_from_file_location(
    "kernel_doc", os.path.join(ROOT, "scripts", "check-kernel-doc.py"))
kd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kd)

ERRNOS = {n for n in dir(errno_mod) if re.match(r"^E[A-Z0-9]+$", n)}
SECTIONS = {"Context": "CONTEXT", "Return": "RETURN VALUE", "Returns": "RETURN VALUE",
            "Note": "NOTES", "Notes": "NOTES", "Example": "EXAMPLES",
            "Examples": "EXAMPLES"}
SECTION_RE = re.compile(r"^(" + "|".join(SECTIONS) + r"):\s*(.*)$")
ERRNO_RE = re.compile(r"\bE[A-Z0-9]{2,}\b")


class Inputs:
    """Where the sources are (the tree, or a planted copy in the self-test)."""

    def __init__(self, root=ROOT):
        self.root = root
        self.include = os.path.join(root, "include")
        self.api = os.path.join(root, "api", "cachelocal.api")
        self.robustness = os.path.join(root, "docs", "robustness.md")
        self.man_src = os.path.join(root, "man")


# ------------------------------------------------------------------ reading

def read_api(path):
    """{name: (kind, [headers])} for the functions and macros of the list,
    and {name: signature} (the macro's parameters)."""
    names, params = {}, {}
    with open(path, encoding="utf-8") as f:
        for ln in f:
            m = re.match(r"^(function|macro) (\w+)(\([^)]*\))?[^\[]*\[([^\]]+)\]", ln)
            if not m:
                continue
            kind, name, par, hdr = m.groups()
            names.setdefault(name, (kind, []))[1].append(hdr)
            if par:
                params[name] = par
    return names, params


def user_header(headers):
    """The header a user includes for a name declared in several (the
    umbrella rseq.h over its part rseq/getters.h): fewest directories,
    then shortest."""
    return sorted(headers, key=lambda h: (h.count("/"), len(h), h))[0]


def top_comment(include, header):
    """The header's opening comment (after the SPDX line), as lines."""
    try:
        with open(os.path.join(include, header), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return []
    m = re.search(r"/\*(?!\s*SPDX)(.*?)\*/", text, re.S)
    if not m:
        return []
    return [ln.strip()[1:].strip() if ln.strip().startswith("*") else ln.strip()
            for ln in m.group(1).split("\n")]


def include_for(include, header):
    """The header a user writes in #include for HEADER: a piece dir/x.h of
    a split header dir.h is not API, dir.h is (README, Layers); an internal
    header is reached through the public header that says "Include this
    one" (else the shortest) among those that include it."""
    seen = set()
    while header not in seen:
        seen.add(header)
        parent = os.path.dirname(header) + ".h"
        if "/" in os.path.dirname(header) and os.path.exists(os.path.join(include, parent)):
            header = parent
            continue
        if "internal" in os.path.basename(header) or "/internal/" in header:
            base = os.path.dirname(header)
            cands = []
            for f in sorted(os.listdir(os.path.join(include, base))):
                p = os.path.join(base, f)
                if not f.endswith(".h") or p == header or "internal" in f:
                    continue
                with open(os.path.join(include, p), encoding="utf-8") as fh:
                    t = fh.read()
                if re.search(r'#include "' + re.escape(os.path.basename(header)) + '"', t):
                    pref = 0 if "Include this one" in " ".join(top_comment(include, p)) else 1
                    cands.append((pref, len(p), p))
            if cands:
                header = sorted(cands)[0][2]
                continue
        break
    return header


def strip_attributes(d):
    while True:
        a = re.search(r"__attribute__\s*\(", d)
        if not a:
            return d
        depth, k = 1, a.end()
        while k < len(d) and depth:
            depth += {"(": 1, ")": -1}.get(d[k], 0)
            k += 1
        d = d[:a.start()] + " " + d[k:]


def prototype(decl):
    """`int cl_x(int a);` from the declaration text of a definition (for a
    function-like macro: `#define cl_x(a, b)`)."""
    dm = re.match(r"^\s*#\s*define\s+(\w+\([^)]*\))", decl)
    if dm:
        return "#define " + dm.group(1)
    d = decl.split("{")[0].split(";")[0]
    d = strip_attributes(d)
    d = re.sub(r"\b(CL_INLINE|CL_ALWAYS_INLINE|CL_NOINLINE|CL_COLD|CL_WEAK|CL_UNUSED|"
               r"static|inline|extern|__extension__)\b", " ", d)
    d = re.sub(r"\s+", " ", d).strip()
    d = re.sub(r"\( ", "(", d)
    d = re.sub(r" \)", ")", d)
    return wrap_prototype(d + ";")


def wrap_prototype(p, width=78):
    """A long prototype broken after its commas, the continuation lines
    under the first parameter (as the man-pages project writes them)."""
    if len(p) <= width or "(" not in p:
        return p
    open_at = p.index("(") + 1
    parts = kd.split_params(p[open_at:p.rindex(")")])
    tail = p[p.rindex(")"):]
    lines, cur = [], p[:open_at]
    indent = " " * min(open_at, 40)
    for i, part in enumerate(parts):
        piece = part + ("," if i + 1 < len(parts) else tail)
        if len(cur) + len(piece) + 1 > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent + piece
        else:
            cur += ("" if cur.endswith("(") or not cur.strip() else " ") + piece
    lines.append(cur)
    return "\n".join(lines)


def parse_block(body):
    """A kernel-doc block (its lines) as summary, params, description
    paragraphs and sections."""
    lines = list(body)
    head = lines.pop(0).strip()
    m = kd.HEAD_FUNC.match(head)
    summary = head[head.index(" - ") + 3:].strip() if " - " in head else head
    while lines and lines[0].strip() and not lines[0].lstrip().startswith("@") \
            and not SECTION_RE.match(lines[0].strip()):
        summary += " " + lines.pop(0).strip()
    params = []
    while lines:
        s = lines[0]
        pm = kd.PARAM_DOC.match(s)
        if pm:
            lines.pop(0)
            params.append([pm.group(1), s[pm.end():].strip()])
        elif params and s.strip() and not SECTION_RE.match(s.strip()):
            params[-1][1] += " " + lines.pop(0).strip()
        elif not s.strip():
            lines.pop(0)
            if lines and kd.PARAM_DOC.match(lines[0]):
                continue
            break
        else:
            break
    desc, sections, cur = [], {}, None
    # "Context: any. Return: it." on one line: two sections
    split = []
    for s in lines:
        split += re.sub(r"([.;])\s+(?=(?:" + "|".join(SECTIONS) + r"):\s)", "\\1\n", s).split("\n") \
            if SECTION_RE.match(s.strip()) else [s]
    lines = split
    for s in lines:
        sm = SECTION_RE.match(s.strip())
        if sm:
            cur = SECTIONS[sm.group(1)]
            sections.setdefault(cur, []).append(sm.group(2))
            continue
        (sections[cur] if cur else desc).append(s)
    return {"name": m.group(1) if m else head.split()[0], "summary": summary,
            "params": params, "desc": desc, "sections": sections}


def read_blocks(include):
    """{function name: (header relative to include/, parsed block, declaration)}
    for every function kernel-doc block of the headers."""
    out = {}
    base = os.path.join(include, "cachelocal")
    for d, _, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith(".h"):
                continue
            p = os.path.join(d, f)
            rel = os.path.relpath(p, include)
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
            lines = text.split("\n")
            for m in re.finditer(r"/\*\*(?!\*)", text):
                end = text.find("*/", m.end())
                if end < 0:
                    continue
                body = kd.block_lines(text[m.start():end + 2])
                if not body or not kd.HEAD_FUNC.match(body[0].strip()):
                    continue
                endline = text.count("\n", 0, end)
                decl = kd.declaration(lines, endline + 1)
                blk = parse_block(body)
                out[blk["name"]] = (rel, blk, decl)
    return out


def macro_doc(include, header, name):
    """(#define line, comment) of macro NAME in HEADER: the comment on its
    line, or the plain comment above it (over the #ifndef NAME guard and
    the other #defines of its group)."""
    p = os.path.join(include, header)
    with open(p, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, ln in enumerate(lines):
        if not re.match(r"^\s*#\s*define\s+" + re.escape(name) + r"\b", ln):
            continue
        j, define = i, ln
        while define.endswith("\\") and j + 1 < len(lines):
            j += 1
            define = define[:-1].rstrip() + " " + lines[j].strip()
        define = re.sub(r"^\s*#\s*define\s+", "#define ", define)
        comment = ""
        tail = re.search(r"/\*(.*?)\*/\s*$", define)
        if tail:
            comment = tail.group(1).strip()
            define = define[:tail.start()].rstrip()
        define = re.sub(r"\s+", " ", define)
        if not comment:
            k = i - 1
            while k >= 0 and (re.match(r"^\s*#\s*(if|ifndef|ifdef|else|elif)\b", lines[k])
                              or re.match(r"^\s*#\s*define\s+CL_[A-Z0-9_]+\b", lines[k])
                              or lines[k].rstrip().endswith("\\")) and i - k < 12:
                k -= 1
            if k >= 0 and lines[k].rstrip().endswith("*/"):
                e = k
                while k >= 0 and "/*" not in lines[k]:
                    k -= 1
                if k >= 0 and not lines[k].lstrip().startswith("/**"):
                    txt = "\n".join(lines[k:e + 1])
                    txt = re.sub(r"^\s*/\*+", "", txt)
                    txt = re.sub(r"\*/\s*$", "", txt)
                    comment = " ".join(s.strip().lstrip("*").strip() for s in txt.split("\n"))
                    comment = re.sub(r"^-+\s*|\s*-+$", "", comment.strip()).strip()
        return define, comment
    return None, ""


def read_robustness(path):
    """{function: {errno: [bad inputs]}} from the table's documented and
    observed columns."""
    tab = {}
    if not os.path.exists(path):
        return tab
    with open(path, encoding="utf-8") as f:
        for ln in f:
            m = re.match(r"^\| `(cl_\w+)` \|", ln)
            if not m:
                continue
            cols = [c.strip() for c in ln.split("|")]
            if len(cols) < 6:
                continue
            fn, bad, documented, observed = m.group(1), cols[3], cols[4], cols[5]
            ent = tab.setdefault(fn, {})
            for e in ERRNO_RE.findall(documented + " " + observed):
                if e in ERRNOS and bad not in ent.setdefault(e, []):
                    ent[e].append(bad)
    return tab


# ------------------------------------------------------------------ roff

def esc(s):
    """Text for a roff line: backslashes, minus signs and a leading dot."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def inline(s, known):
    """Kernel-doc markup in prose: @param italic, a known name() bold."""
    out = esc(s)
    out = re.sub(r"@(\w+)((?:\\\-&gt;|\\\->|\.)\w+)*",
                 lambda m: "\\fI" + m.group(0)[1:] + "\\fP", out)
    out = re.sub(r"\b(\w+)\(\)", lambda m: ("\\fB" + m.group(1) + "\\fP()")
                 if m.group(1) in known else m.group(0), out)
    out = re.sub(r"\b(struct cl_\w+)\b", r"\\fI\1\\fP", out)
    out = re.sub(r"(?<![\w(])(CL_[A-Z0-9_]+)\b(?!\()",
                 lambda m: "\\fB" + m.group(1) + "\\fP" if m.group(1) in known else m.group(1), out)
    return out


def paragraphs(lines):
    """Prose lines grouped into paragraphs; an indented or list-looking run
    of lines stays preformatted."""
    paras, cur = [], []
    for s in lines:
        if not s.strip():
            if cur:
                paras.append(cur)
            cur = []
        else:
            cur.append(s)
    if cur:
        paras.append(cur)
    return paras


def prose(lines, known):
    out = []
    for para in paragraphs(lines):
        pre = any(s.startswith(("  ", "\t")) for s in para[1:]) or \
            any(re.match(r"^\s*([-*|]|\d+\.)\s", s) for s in para)
        out.append(".PP")
        if pre:
            out.append(".nf")
            out += [inline(s.rstrip(), known) or "\\&" for s in para]
            out.append(".fi")
        else:
            out += [inline(s.strip(), known) for s in para]
    return out


def example_lines(lines):
    out = [".EX"]
    out += [esc(s) if s.strip() else "" for s in lines]
    out.append(".EE")
    return out


def th(name, section, date, version, title="cachelocal Manual"):
    return f'.TH "{name}" {section} {date} "cachelocal {version}" "{title}"'


def family_page_name(header):
    """cachelocal/sched/runtime/io.h -> cachelocal-sched-runtime-io"""
    return "cachelocal-" + header[len("cachelocal/"):-2].replace("/", "-")


def pkg_module(header):
    return "cachelocal-sched" if header.startswith("cachelocal/sched/") else "cachelocal"


def overview_page(header):
    if header.startswith("cachelocal/sched/runtime"):
        return "cachelocal-runtime"
    if header.startswith("cachelocal/sched/"):
        return "cachelocal-sched"
    return "cachelocal"


def errno_reasons(blk, table_ent):
    """{errno: [reason]} from the block's Return: (the parenthesis after the
    errno when there is one) and the robustness table's bad inputs."""
    text = " ".join(blk["sections"].get("RETURN VALUE", []) +
                    blk["desc"] + blk["sections"].get("NOTES", []) +
                    blk["sections"].get("CONTEXT", []) + [t for _, t in blk["params"]])
    text = re.sub(r"\s+", " ", text)
    ret_len = len(re.sub(r"\s+", " ", " ".join(blk["sections"].get("RETURN VALUE", []))))
    out = {}
    for m in ERRNO_RE.finditer(text):
        e = m.group(0)
        if e not in ERRNOS and not e.startswith("E"):
            continue
        if e not in ERRNOS:
            # not an errno name: EOF, EEVDF, ... are words of the prose
            # unless written where an errno goes
            # (a misspelt errno where an errno goes: "errno EINVALL",
            # "errno is EINVALL", "-EINVALL"; not "non-EEVDF")
            pre = text[max(0, m.start() - 16):m.start()]
            if not re.search(r"(\berrno\s+(?:is\s+|to\s+|=\s*)?|(?:^|[\s(])-)$", pre):
                continue
        reason = ""
        rest = text[m.end():]
        pm = re.match(r"\s*\(", rest)
        if pm:
            depth, k = 1, pm.end()
            while k < len(rest) and depth:
                depth += {"(": 1, ")": -1}.get(rest[k], 0)
                k += 1
            reason = rest[pm.end():k - 1].strip()
        else:
            cm = re.match(r"\s*:\s*", rest)
            if cm:
                # "ECANCELED: cl_close() of @fd ... ended the wait)": to the
                # end of the enclosing parenthesis, clause or sentence
                depth, k = 0, cm.end()
                while k < len(rest):
                    c = rest[k]
                    if c == "(":
                        depth += 1
                    elif c == ")":
                        if depth == 0:
                            break
                        depth -= 1
                    elif depth == 0 and (c == ";" or (c == "." and rest[k + 1:k + 2] in (" ", ""))):
                        break
                    k += 1
                reason = rest[cm.end():k].strip()
        if not reason and m.start() > ret_len:
            # the sentence that names it, when it is short enough to quote
            a = text.rfind(". ", 0, m.start())
            b = text.find(". ", m.end())
            sent = text[a + 2 if a >= 0 else 0:b + 1 if b >= 0 else len(text)].strip()
            if len(sent) <= 240 and not re.search(r"\(\s*$|,\s*\.\.\.", sent):
                reason = sent
        lst = out.setdefault(e, [])
        if reason and reason not in lst:
            lst.append(reason)
    for e, bads in (table_ent or {}).items():
        lst = out.setdefault(e, [])
        lst.append("bad input (the robustness table): " +
                   "; ".join(b.replace("`", "") for b in bads))
    return out


def function_page(name, hdr, blk, decl, ctx):
    known, tab, date, version = ctx["known"], ctx["table"], ctx["date"], ctx["version"]
    fam = family_page_name(hdr)
    inc = include_for(ctx["include"], hdr)
    out = [th(name, 3, date, version),
           ".SH NAME", f"{esc(name)} \\- {inline(blk['summary'], known)}",
           ".SH SYNOPSIS", ".nf", f".B #include <{inc}>", ".PP",
           *[esc(x) for x in prototype(decl).split("\n")], ".fi", ".PP",
           f"Compile and link with \\fBpkg\\-config \\-\\-cflags \\-\\-libs {esc(pkg_module(hdr))}\\fP.",
           ".SH DESCRIPTION"]
    for p, t in blk["params"]:
        out += [".TP", f"\\fI{esc(p)}\\fP", inline(t, known)]
    out += prose(blk["desc"], known)
    if not blk["desc"] and not blk["params"]:
        out += [".PP", inline(blk["summary"], known)]
    if "RETURN VALUE" in blk["sections"]:
        out += [".SH RETURN VALUE"] + prose(blk["sections"]["RETURN VALUE"], known)
    elif re.match(r"^void\s+\w", prototype(decl)):
        out += [".SH RETURN VALUE", "None (a \\fBvoid\\fP function)."]
    errs = errno_reasons(blk, tab.get(name))
    if errs:
        out.append(".SH ERRORS")
        for e in sorted(errs):
            out += [".TP", f".B {e}"]
            out.append(inline("; ".join(r.rstrip(".") for r in errs[e]), known) if errs[e]
                       else "See RETURN VALUE and CONTEXT.")
    if "CONTEXT" in blk["sections"]:
        out += [".SH CONTEXT"] + prose(blk["sections"]["CONTEXT"], known)
    out += [".SH NOTES"] + prose(blk["sections"].get("NOTES", []), known)
    out += [".PP", f"Defined in \\fI{esc(hdr)}\\fP"
            + (f" (included by \\fI{esc(inc)}\\fP)" if inc != hdr else "")
            + (" as a macro" if prototype(decl).startswith("#define") else " as an inline function")
            + ": cachelocal is "
            "header\\-only, there is no library to link but what the "
            f"\\fB{esc(pkg_module(hdr))}\\fP pkg\\-config module names."]
    if name in tab:
        out += ["Bad arguments are reported, never a crash (the rule in",
                ".BR cachelocal (7));",
                "the bad inputs tested, and what each gave, are this function's rows of",
                "the robustness table (\\fIdocs/robustness.md\\fP of the source tree)."]
    if "EXAMPLES" in blk["sections"]:
        out += [".SH EXAMPLES"] + example_lines(blk["sections"]["EXAMPLES"])
    see = []
    text = " ".join(blk["desc"] + sum(blk["sections"].values(), []) +
                    [t for _, t in blk["params"]])
    for m in re.finditer(r"\b(cl_\w+)\(\)", text):
        if m.group(1) in ctx["pages"] and m.group(1) != name and m.group(1) not in see:
            see.append(m.group(1))
    system = []
    for m in re.finditer(r"\b([a-z][a-z0-9_]*)\(([2-7])\)", text + " " + blk["summary"]):
        if (m.group(1), m.group(2)) not in system:
            system.append((m.group(1), m.group(2)))
    see = ([(s, 3) for s in sorted(see)] + [(fam, 3), (overview_page(hdr), 7)] +
           sorted(system, key=lambda x: (x[1], x[0])))
    out += [".SH SEE ALSO"] + see_also(see)
    return "\n".join(out) + "\n"


def see_also(items):
    out = []
    for i, (n, s) in enumerate(items):
        out.append(f".BR {esc(n)} ({s}){',' if i + 1 < len(items) else ''}")
    return out


def family_page(hdr, funcs, macros, ctx):
    known, date, version = ctx["known"], ctx["date"], ctx["version"]
    name = family_page_name(hdr)
    inc = include_for(ctx["include"], hdr)
    whatis = [name] + [m for m, _, _ in macros]
    out = [th(name, 3, date, version), ".SH NAME",
           esc(", ".join(whatis)) + f" \\- the functions and macros of {esc(hdr)}",
           ".SH SYNOPSIS", ".nf", f".B #include <{inc}>", ".fi", ".PP",
           f"Compile and link with \\fBpkg\\-config \\-\\-cflags \\-\\-libs {esc(pkg_module(hdr))}\\fP.",
           ".SH DESCRIPTION"]
    # the first paragraph of the header's opening comment ("x.h - what")
    para = []
    for ln in top_comment(ctx["include"], hdr):
        if not ln.strip():
            if para:
                break
            continue
        para.append(ln)
    first = re.sub(r"^\S+\.h\s+-\s+", "", " ".join(para)).strip()
    if first:
        out += [".PP", f"\\fI{esc(hdr)}\\fP: " + inline(first, known)]
    if inc != hdr:
        out += [".PP", f"A part of \\fI{esc(inc)}\\fP: include that one."]
    if funcs:
        out += [".PP", "Functions (each has its own page):"]
        for f, blk in funcs:
            out += [".TP", f".BR {esc(f)} (3)", inline(blk["summary"], known)]
    if macros:
        out += [".SH MACROS", ".PP",
                "Each macro's name is also a link to this page."]
        for m, define, comment in macros:
            out += [".TP", f".B {esc(m)}"]
            if define:
                # a function-like macro: its parameters; a constant: its
                # value when short (a body is the header's business)
                fm = re.match(r"^#define \w+\([^)]*\)", define)
                shown = fm.group(0) if fm else (define if len(define) <= 60 else
                                                  "#define " + m)
                out += [".nf", esc(shown), ".fi"]
            if comment:
                out.append(inline(comment, known))
    see = [(f, 3) for f, _ in funcs[:40]] + [(overview_page(hdr), 7)]
    out += [".SH SEE ALSO"] + see_also(see)
    return "\n".join(out) + "\n"


def missing_page_message(include, name, headers):
    """What to add, and where, for a public function without kernel-doc:
    the block with its parameters, above its definition."""
    where, params = headers[-1], None
    for h in sorted(headers, key=lambda h: -h.count("/")):
        with open(os.path.join(include, h), encoding="utf-8") as f:
            lines = f.read().split("\n")
        for i, ln in enumerate(lines):
            if re.search(r"\b" + re.escape(name) + r"\s*\(", ln) and \
                    not ln.lstrip().startswith(("*", "/*", "//", "return")):
                got = kd.params_of(kd.declaration(lines, i), name)
                if got is not None:
                    where, params = f"{h}:{i + 1}", got
                    break
        if params is not None:
            break
    ps = "".join(f"     * @{p}: what it is, what values it may take.\n"
                 for p in (params if params is not None else ["arg"]))
    return (f"missing page: function {name} has no kernel-doc block, so no man page. "
            f"Add one directly above its definition (include/{where}), in the form "
            f"scripts/check-kernel-doc.py checks:\n"
            f"    /**\n     * {name}() - what it does, in one line.\n{ps}     *\n"
            f"     * What it does, in as many paragraphs as it takes.\n     *\n"
            f"     * Context: which threads may call it (in a task, outside), which locks held.\n"
            f"     * Return: the value, or -1 with errno EINVAL (bad argument), ...\n     */\n"
            f"    then: make check-man")


def source_date(root):
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde and sde.isdigit():
        return time.strftime("%Y-%m-%d", time.gmtime(int(sde)))
    try:
        with open(os.path.join(root, "debian", "changelog"), encoding="utf-8") as f:
            for ln in f:
                m = re.match(r"^ -- .*>\s+(.*)$", ln)
                if m:
                    t = time.strptime(m.group(1).strip()[:25], "%a, %d %b %Y %H:%M:%S")
                    return time.strftime("%Y-%m-%d", t)
    except (OSError, ValueError):
        pass
    return "1970-01-01"


def version_of(include):
    with open(os.path.join(include, "cachelocal", "version.h"), encoding="utf-8") as f:
        t = f.read()
    return ".".join(re.search(r"#define CL_VERSION_%s (\d+)" % k, t).group(1)
                    for k in ("MAJOR", "MINOR", "PATCH"))


# ------------------------------------------------------------------ build

def build(inp, out):
    """Writes the pages; returns (summary dict, problems list)."""
    names, _ = read_api(inp.api)
    blocks = read_blocks(inp.include)
    table = read_robustness(inp.robustness)
    problems = []
    man3 = os.path.join(out, "man3")
    man7 = os.path.join(out, "man7")
    for d in (man3, man7):
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
    funcs = {n: user_header(h) for n, (k, h) in names.items() if k == "function"}
    # Public function-like macros with a kernel-doc block (lower case, as
    # cl_percpu_ptr()): api.py lists only CL_ macros, they get pages too.
    for n, (hdr, _, decl) in blocks.items():
        if n not in names and n.startswith("cl_") and not n.startswith("cl__") \
                and re.match(r"^\s*#\s*define\b", decl) and "/internal" not in hdr:
            funcs[n] = hdr
    macros = {n: user_header(h) for n, (k, h) in names.items() if k == "macro"}
    ctx = {"known": set(funcs) | set(macros), "table": table, "date": source_date(inp.root),
           "include": inp.include,
           "version": version_of(inp.include), "pages": set(funcs)}
    fam_funcs, fam_macros, bare = {}, {}, []
    written = {}
    for n in sorted(funcs):
        hdr = funcs[n]
        if n not in blocks:
            problems.append(missing_page_message(inp.include, n, names[n][1]))
            continue
        _, blk, decl = blocks[n]
        written[n] = function_page(n, hdr, blk, decl, ctx)
        fam_funcs.setdefault(hdr, []).append((n, blk))
    for n in sorted(macros):
        hdr = macros[n]
        define, comment = macro_doc(inp.include, hdr, n)
        if define is None:
            for h in names[n][1]:
                define, comment = macro_doc(inp.include, h, n)
                if define:
                    break
        fam_macros.setdefault(hdr, []).append((n, define, comment))
        if not comment:
            bare.append(n)
    links = {}
    for hdr in sorted(set(fam_funcs) | set(fam_macros)):
        fam = family_page_name(hdr)
        if fam in written:
            problems.append(f"page name clash: {fam} is a function and a header's page")
            continue
        written[fam] = family_page(hdr, fam_funcs.get(hdr, []), fam_macros.get(hdr, []), ctx)
        for m, _, _ in fam_macros.get(hdr, []):
            links[m] = fam
    for n, text in written.items():
        with open(os.path.join(man3, n + ".3"), "w", encoding="utf-8") as f:
            f.write(text)
    for n, fam in links.items():
        with open(os.path.join(man3, n + ".3"), "w", encoding="utf-8") as f:
            f.write(f".so man3/{fam}.3\n")
    n7 = 0
    if os.path.isdir(inp.man_src):
        for f in sorted(os.listdir(inp.man_src)):
            if f.endswith(".7"):
                with open(os.path.join(inp.man_src, f), encoding="utf-8") as fh:
                    t = fh.read()
                t = t.replace("@VERSION@", ctx["version"]).replace("@DATE@", ctx["date"])
                with open(os.path.join(man7, f), "w", encoding="utf-8") as fh:
                    fh.write(t)
                n7 += 1
    # Every public name has a file (a page or a link).
    for n in sorted(names):
        if not os.path.exists(os.path.join(man3, n + ".3")) and not any(
                p.startswith(f"missing page: function {n} ") for p in problems):
            problems.append(f"missing page: {names[n][0]} {n}")
    man3_files = sorted(os.listdir(man3))
    expected = {n + ".3" for n in names} | {n + ".3" for n in written} | {n + ".3" for n in links}
    for f in man3_files:
        if f not in expected:
            problems.append(f"stray page {f} in {man3}")
    summary = {"extra": sorted(set(funcs) - set(names)), "man3_files": len(man3_files),
               "bare_macros": bare,
               "functions": len(funcs), "function_pages": len(funcs) - sum(
        1 for p in problems if p.startswith("missing page: function")),
        "macros": len(macros), "macro_links": len(links),
        "families": len(written) - sum(1 for n in written if n in funcs),
        "man7": n7, "names": names, "blocks": blocks, "table": table,
        "funcs": funcs, "written": written, "ctx": ctx}
    return summary, problems


# ------------------------------------------------------------------ checks

def page_errnos(text):
    sec = re.search(r"^\.SH ERRORS\n(.*?)(?=^\.SH )", text, re.S | re.M)
    if not sec:
        return set()
    return set(re.findall(r"^\.B (\S+)$", sec.group(1), re.M))


def block_errnos(blk):
    """The errno names a kernel-doc block states anywhere in its text."""
    text = " ".join([blk["summary"]] + blk["desc"] + sum(blk["sections"].values(), []) +
                    [t for _, t in blk["params"]])
    return {e for e in ERRNO_RE.findall(text) if e in ERRNOS}


def check_errnos(summary, out):
    """Reads the pages back: each errno a function's page names under
    ERRORS must be an errno of <errno.h>, and one the function can return:
    stated in its own kernel-doc block, or recorded for it by the
    robustness table. Functions the table does not list are checked
    against their block alone."""
    problems, checked, from_table = [], 0, 0
    table = summary["table"]
    for n, hdr in sorted(summary["funcs"].items()):
        path = os.path.join(out, "man3", n + ".3")
        if n not in summary["blocks"] or not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            got = page_errnos(f.read())
        stated = block_errnos(summary["blocks"][n][1])
        recorded = set(table.get(n, {}))
        if n in table:
            checked += 1
        from_table += len(recorded - stated)
        for e in sorted(got):
            if e not in ERRNOS:
                problems.append(f"{n}(3): ERRORS names {e}, not an errno of <errno.h>: "
                                f"fix the spelling in {n}()'s kernel-doc (include/{hdr})")
            elif e not in stated and e not in recorded:
                problems.append(f"{n}(3): ERRORS names {e}, which {n}() cannot return: its "
                                f"kernel-doc (include/{hdr}) does not state it"
                                + (" and the robustness table (docs/robustness.md) does not "
                                   "record it" if n in table else
                                   " (the robustness table does not list this function)"))
    return problems, checked, from_table


def page_examples(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    for m in re.finditer(r"^\.EX\n(.*?)^\.EE$", text, re.S | re.M):
        src = m.group(1)
        src = src.replace("\\e", "\\").replace("\\-", "-").replace("\\&", "")
        src = re.sub(r"\\f[BIRP]", "", src)
        out.append(src)
    return out


def check_examples(dirs, include, cc, only=None):
    """Each example that is a whole program (it has an #include) compiles
    (only: the pages of these names)."""
    jobs = []
    for d in dirs:
        for f in sorted(os.listdir(d)):
            if only is not None and f not in only:
                continue
            p = os.path.join(d, f)
            for i, src in enumerate(page_examples(p)):
                if "#include" in src:
                    jobs.append((f, i + 1, src))
    urcu = subprocess.run(["pkg-config", "--cflags", "liburcu-memb", "liburcu-cds"],
                          capture_output=True, text=True).stdout.split()

    def one(job):
        f, i, src = job
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as t:
            t.write(src)
        try:
            r = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-fsyntax-only", "-Wall",
                                "-Wextra", "-Werror", "-I", include] + urcu + [t.name],
                               capture_output=True, text=True)
        finally:
            os.unlink(t.name)
        if r.returncode:
            return (f"{f}: example {i} does not compile ({cc}):\n" +
                    r.stderr.replace(t.name, f"{f}:example{i}")[-2000:])
        return None

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        res = list(ex.map(one, jobs))
    return [r for r in res if r], len(jobs)


def check_synopsis(man3, funcs, include, cc):
    """The #include of each function page's SYNOPSIS declares the function:
    one translation unit per included header takes every such function's
    address."""
    by_inc = {}
    for n in sorted(funcs):
        p = os.path.join(man3, n + ".3")
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8") as f:
            m = re.search(r"^\.B #include <([^>]+)>$", f.read(), re.M)
        if m:
            by_inc.setdefault(m.group(1), []).append(n)
    macros = set()
    for inc, names in by_inc.items():
        for n in names:
            with open(os.path.join(man3, n + ".3"), encoding="utf-8") as f:
                if re.search(r"^#define " + re.escape(n) + r"\(", f.read(), re.M):
                    macros.add(n)
    urcu = subprocess.run(["pkg-config", "--cflags", "liburcu-memb", "liburcu-cds"],
                          capture_output=True, text=True).stdout.split()

    def one(item):
        inc, names = item
        src = f"#include <{inc}>\n" + "".join(
            f"#ifndef {n}\n#error '{n}' undeclared\n#endif\n" if n in macros else
            f"void (*ref_{n})(void) = (void (*)(void))&{n};\n" for n in names)
        with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as t:
            t.write(src)
        try:
            r = subprocess.run([cc, "-std=c11", "-D_DEFAULT_SOURCE", "-fsyntax-only", "-I", include] + urcu +
                               [t.name], capture_output=True, text=True)
        finally:
            os.unlink(t.name)
        if r.returncode:
            bad = sorted(set(re.findall(r"'(cl_\w+)' undeclared", r.stderr))) or names
            return (f"SYNOPSIS: #include <{inc}> does not declare {', '.join(bad)} "
                    f"({cc}):\n{r.stderr[-1500:]}")
        return None

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        res = list(ex.map(one, sorted(by_inc.items())))
    return [r for r in res if r], len(by_inc)


def check_groff(dirs):
    files = []
    for d in dirs:
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            with open(p, encoding="utf-8") as fh:
                if fh.read(4) != ".so ":
                    files.append(p)

    if not shutil.which("groff"):
        return ["groff not found: install groff-base (scripts/deps.txt)"], 0
    # one troff run over every page (its warnings name the file): a
    # process per page would cost most of the check's time
    r = subprocess.run(["groff", "-man", "-ww", "-z", "-rCHECKSTYLE=3"] + files,
                       capture_output=True, text=True, env=dict(os.environ, LC_ALL="C.UTF-8"))
    out = {}
    for ln in r.stderr.splitlines():
        m = re.match(r"^\S+?:\s*(\S+?):\d+:", ln)
        key = os.path.basename(m.group(1)) if m else "groff"
        out.setdefault(key, []).append(ln)
    if r.returncode and not out:
        out["groff"] = [f"exit status {r.returncode}"]
    return [f"{k}: groff -ww:\n" + "\n".join(v) for k, v in sorted(out.items())], len(files)


def check(inp, out, cc, quiet=False, examples_of=None):
    summary, problems = build(inp, out)
    ep, checked, from_table = check_errnos(summary, out)
    problems += ep
    dirs = [os.path.join(out, "man3"), os.path.join(out, "man7")]
    xp, nex = check_examples(dirs, inp.include, cc, examples_of)
    problems += xp
    sp, nsyn = ([], 0) if quiet == "selftest" else check_synopsis(
        dirs[0], summary["funcs"], inp.include, cc)
    problems += sp
    gp, ng = ([], 0) if quiet == "selftest" else check_groff(dirs)
    problems += gp
    if not quiet:
        for p in problems:
            print("man: " + p)
        print(f"man: {summary['function_pages']} of {summary['functions']} public functions "
              f"with a page (with the function-like macros {', '.join(summary['extra'])}: "
              f"kernel-doc but not in api/cachelocal.api), {summary['macro_links']} of {summary['macros']} macros linked to "
              f"their header's page ({summary['families']} header pages; "
              f"{len(summary['bare_macros'])} macros have no comment beside their #define "
              f"and are listed there by definition only), "
              f"{summary['man7']} section 7 pages; each page's ERRORS checked against its "
              f"kernel-doc block and, for the {checked} functions the robustness table lists, "
              f"the table ({from_table} errnos of the table's bad-input rows that the header "
              f"does not state are on the pages from the table; functions the table does not "
              f"list are checked against their block alone); {nex} examples compiled; the "
              f"SYNOPSIS #include of every function page declares it ({nsyn} headers); "
              f"{ng} pages through groff -ww; man3 holds {summary['man3_files']} files: "
              f"{len(summary['names'])} named after the functions and macros of "
              f"api/cachelocal.api, {summary['families']} header pages, "
              f"{len(summary['extra'])} function-like macros: "
              + (f"{len(problems)} problems" if problems else "all good"))
    return problems


# ------------------------------------------------------------------ html

def html_build(mandir, out):
    if os.path.isdir(out):
        shutil.rmtree(out)  # no page of a removed function left behind
    os.makedirs(out)
    pages = []
    for sec in ("man7", "man3"):
        d = os.path.join(mandir, sec)
        for f in sorted(os.listdir(d)):
            pages.append((sec, f))
    real = {}
    for sec, f in pages:
        with open(os.path.join(mandir, sec, f), encoding="utf-8") as fh:
            t = fh.read()
        m = re.match(r"^\.so man\d/(.*)$", t.strip())
        real[f] = m.group(1) if m else f

    def target(name, s):
        f = f"{name}.{s}"
        return real.get(f, f) + ".html" if f in real else None

    def one(item):
        sec, f = item
        if real[f] != f:
            return None
        r = subprocess.run(["groff", "-Thtml", "-man", "-P", "-l", "-P", "-r",
                            os.path.join(mandir, sec, f)],
                           capture_output=True, text=True, env=dict(os.environ, LC_ALL="C.UTF-8"))
        if r.returncode:
            return f"{f}: groff -Thtml failed: {r.stderr}"
        t = re.sub(r"<!-- CreationDate:.*?-->\n", "", r.stdout)

        def link(m):
            tgt = target(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))), m.group(2))
            return f'<a href="{tgt}">{m.group(0)}</a>' if tgt and tgt != f + ".html" else m.group(0)

        t = re.sub(r"(<b>[\w-]+</b>|\b[\w-]+)\((\d)\)", link, t)
        # a function named in the prose, name(): to its page
        t = re.sub(r"<b>(cl_\w+)</b>\(\)",
                   lambda m: (f'<a href="{target(m.group(1), "3")}">{m.group(0)}</a>'
                              if target(m.group(1), "3") else m.group(0)), t)
        t = t.replace("<body>", '<body>\n<p><a href="index.html">cachelocal manual</a></p>', 1)
        with open(os.path.join(out, f + ".html"), "w", encoding="utf-8") as fh:
            fh.write(t)
        return None

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        errs = [e for e in ex.map(one, pages) if e]
    rows = {"man7": [], "man3": []}
    for sec, f in pages:
        with open(os.path.join(mandir, sec, real[f]), encoding="utf-8") as fh:
            t = fh.read()
        name = f.rsplit(".", 1)[0]
        what = ""
        m = re.search(r"^\.SH NAME\n(.*)$", t, re.M)
        if m and real[f] == f:
            what = m.group(1).split(" \\- ", 1)[-1].strip() if " \\- " in m.group(1) else ""
        elif real[f] != f:
            what = "see " + real[f].rsplit(".", 1)[0]
        what = re.sub(r"\\f[BIRP]", "", what).replace("\\-", "-").replace("\\e", "\\")
        rows[sec].append((name, real[f] + ".html", what))
    idx = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
           "<title>cachelocal manual</title></head><body>", "<h1>cachelocal manual</h1>",
           "<p>The same pages as <code>man</code> shows, generated from the headers' "
           "kernel-doc comments (<code>make man html</code>).</p>"]
    for sec, title in (("man7", "Overviews (section 7)"),
                       ("man3", "Functions and macros (section 3)")):
        idx += [f"<h2>{title}</h2>", "<ul>"]
        for name, href, what in rows[sec]:
            idx.append(f'<li><a href="{html.escape(href)}">{html.escape(name)}</a>'
                       f'({sec[-1]}) &mdash; {html.escape(what)}</li>')
        idx.append("</ul>")
    idx.append("</body></html>")
    with open(os.path.join(out, "index.html"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(idx) + "\n")
    n = sum(1 for s, f in pages if real[f] == f)
    return errs, n, len(pages)


# ------------------------------------------------------------------ self-test

def selftest(cc):
    fails, n = 0, 0
    with tempfile.TemporaryDirectory() as d:
        for sub in ("include", "api", "docs", "man", "debian", "scripts"):
            src = os.path.join(ROOT, sub)
            if sub == "scripts":
                continue
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(d, sub))
        inp = Inputs(d)
        out = os.path.join(d, "out")
        base = check(inp, out, cc, quiet="selftest", examples_of=())
        n += 1
        if base:
            print("man selftest FAIL: the unchanged tree has problems:", base[:3])
            fails += 1
        hdr = os.path.join(d, "include", "cachelocal", "sched", "runtime", "task.h")
        with open(hdr, encoding="utf-8") as f:
            orig = f.read()

        def plant(text, want, what, path=hdr, restore=orig, examples_of=()):
            nonlocal fails, n
            n += 1
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            got = check(inp, out, cc, quiet="selftest", examples_of=examples_of)
            with open(path, "w", encoding="utf-8") as f:
                f.write(restore)
            if not any(want in p for p in got):
                print(f"man selftest FAIL: {what} not caught (wanted {want!r}): {got[:3]}")
                fails += 1

        # 1. a public function without a kernel-doc block
        t = re.sub(r"/\*\*\n \* cl_self\(\) - .*?\*/\n", "", orig, count=1, flags=re.S)
        assert t != orig
        plant(t, "missing page: function cl_self", "a function without kernel-doc")
        # 2. a page that names an errno its function cannot return (a page
        # out of step with its header): checked on the pages as written
        n += 1
        summary, _ = build(inp, out)
        pp = os.path.join(out, "man3", "cl_self.3")
        with open(pp, encoding="utf-8") as f:
            t = f.read()
        t = t.replace(".SH CONTEXT", ".SH ERRORS\n.TP\n.B ENOSPC\nno room.\n.SH CONTEXT", 1)
        with open(pp, "w", encoding="utf-8") as f:
            f.write(t)
        got, _, _ = check_errnos(summary, out)
        if not any("ENOSPC, which cl_self() cannot return" in p for p in got):
            print(f"man selftest FAIL: a page naming an errno its function cannot return "
                  f"not caught: {got[:3]}")
            fails += 1
        # 3. a misspelt errno
        t = orig.replace("ENOMEM (no memory for the stack)",
                         "errno ENOMEMORY (no memory for the stack)", 1)
        plant(t, "ENOMEMORY, not an errno", "a misspelt errno")
        # 4. an example that does not compile
        p7 = os.path.join(d, "man", "cachelocal.7")
        with open(p7, encoding="utf-8") as f:
            o7 = f.read()
        bad = o7 + ".SH EXAMPLES\n.EX\n#include <cachelocal/counter.h>\nint main(void)\n{\n" \
            "\treturn cl_counter_add_typo(0, 1);\n}\n.EE\n"
        plant(bad, "does not compile", "an example that does not compile", path=p7, restore=o7,
              examples_of=("cachelocal.7",))
        # 5. a SYNOPSIS whose #include does not declare the function
        n += 1
        pp = os.path.join(out, "man3", "cl_counter_add.3")
        with open(pp, encoding="utf-8") as f:
            t = f.read()
        with open(pp, "w", encoding="utf-8") as f:
            f.write(t.replace(".B #include <cachelocal/counter.h>", ".B #include <cachelocal/version.h>"))
        got, _ = check_synopsis(os.path.join(out, "man3"), ["cl_counter_add", "cl_counter_read"],
                                inp.include, cc)
        if not any("does not declare cl_counter_add" in p for p in got):
            print(f"man selftest FAIL: a SYNOPSIS #include that does not declare its function "
                  f"not caught: {got[:2]}")
            fails += 1
        # 6. a new public function with its kernel-doc block, not in the
        # robustness table: a page, picked up from the API list, its ERRORS
        # checked against its block alone, and no problem
        n += 1
        newfn = orig + """
/**
 * cl_selftest_new() - a function added after the table was made.
 * @x: a value.
 *
 * Context: any thread.
 * Return: 0, or -1 with errno ENOSPC (no room for @x).
 */
CL_INLINE int cl_selftest_new(int x)
{
	return x ? 0 : -1;
}
"""
        with open(hdr, "w", encoding="utf-8") as f:
            f.write(newfn)
        apip = os.path.join(d, "api", "cachelocal.api")
        with open(apip, encoding="utf-8") as f:
            api_orig = f.read()
        with open(apip, "a", encoding="utf-8") as f:
            f.write("function cl_selftest_new: int (int)  [cachelocal/sched/runtime/task.h]\n")
        got = check(inp, out, cc, quiet="selftest", examples_of=())
        page = os.path.join(out, "man3", "cl_selftest_new.3")
        text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
        if got or ".B ENOSPC" not in text or "#include <cachelocal/sched/runtime.h>" not in text:
            print(f"man selftest FAIL: a new function with kernel-doc: problems {got[:2]}, "
                  f"page {'without its ENOSPC or #include' if text else 'missing'}")
            fails += 1
        with open(hdr, "w", encoding="utf-8") as f:
            f.write(orig)
        with open(apip, "w", encoding="utf-8") as f:
            f.write(api_orig)
        # 7. groff warnings are reported
        n += 1
        gd = os.path.join(d, "groff")
        os.makedirs(gd)
        with open(os.path.join(gd, "bad.3"), "w", encoding="utf-8") as f:
            f.write('.TH "X" 3\n.SH NAME\nx \\- y\n.BOGUS\n\\fZ\n')
        shutil.copy(os.path.join(out, "man3", "cl_spawn.3"), os.path.join(gd, "a_good.3"))
        shutil.copy(os.path.join(out, "man3", "cl_yield.3"), os.path.join(gd, "z_good.3"))
        gp, _ = check_groff([gd]) if shutil.which("groff") else ([], 0)
        if len(gp) != 1 or not gp[0].startswith("bad.3: ") or "BOGUS" not in gp[0]:
            print(f"man selftest FAIL: groff -ww warnings of bad.3 among good pages not "
                  f"reported as its own: {gp}")
            fails += 1
    print(f"man selftest: {n - fails} of {n} cases as expected")
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["build", "check", "html", "selftest"])
    ap.add_argument("--out")
    ap.add_argument("--man", default=os.path.join(ROOT, "build", "man"))
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()
    inp = Inputs()
    if a.cmd == "build":
        out = a.out or os.path.join(ROOT, "build", "man")
        summary, problems = build(inp, out)
        for p in problems:
            print("man: " + p)
        print(f"man: {out}: {summary['function_pages']} function pages, "
              f"{summary['families']} header pages, {summary['macro_links']} macro links, "
              f"{summary['man7']} section 7 pages")
        return 1 if problems else 0
    if a.cmd == "check":
        out = a.out or os.path.join(ROOT, "build", "man-check")
        return 1 if check(inp, out, a.cc) else 0
    if a.cmd == "html":
        out = a.out or os.path.join(ROOT, "build", "html")
        errs, n, total = html_build(a.man, out)
        for e in errs:
            print("man: " + e)
        print(f"man: {out}/index.html: {n} pages as HTML, {total} names in the index")
        return 1 if errs else 0
    return selftest(a.cc)


if __name__ == "__main__":
    sys.exit(main())
