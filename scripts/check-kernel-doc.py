#!/usr/bin/env python3
"""check-kernel-doc.py - every /** block of the headers is valid kernel-doc.

Usage: check-kernel-doc.py [--exclude GLOB]... [PATH...]
           check the headers PATH (files or directories; default:
           include/cachelocal), except those matching a GLOB (relative to
           include/cachelocal, fnmatch: "sched/*", "percpu*")
       check-kernel-doc.py --self-test
           prove the check rejects each kind of bad block it knows, and
           accepts good ones

A /** block (the kernel's kernel-doc format) must:
  1. start with its name and a summary: "name() - summary" for a function or
     a function-like macro, "struct name - summary" (union, enum, typedef
     likewise), "NAME - summary" for an object-like macro or a variable, or
     "DOC: title" (a free-standing section);
  2. sit directly above what it names: the next line is the declaration (no
     blank line, no other item in between) and names it;
  3. for a function or a function-like macro, document each parameter with
     "@name:" (variadic: "@...:") and no parameter it does not have.
A one-line /** ... */ is accepted only when it is a valid block by these
rules; a plain comment is written /* ... */. Exit status 1 if any block is
bad, each reported as FILE:LINE: message.
"""
import fnmatch
import os
import re
import sys
import tempfile

HEAD_FUNC = re.compile(r"^([A-Za-z_]\w*)\(\)\s+-\s+\S")
HEAD_TYPE = re.compile(r"^(struct|union|enum|typedef)\s+([A-Za-z_]\w*)\s+-\s+\S")
HEAD_OBJ = re.compile(r"^([A-Za-z_]\w*)\s+-\s+\S")
HEAD_DOC = re.compile(r"^DOC:\s*\S")
PARAM_DOC = re.compile(r"^\s*@(\w+|\.\.\.)\s*:")


def block_lines(raw):
    """The text lines of a /** ... */ block, without the comment markers."""
    body = raw[3:-2] if raw.endswith("*/") else raw[3:]
    out = []
    for ln in body.split("\n"):
        s = ln.strip()
        if s.startswith("*"):
            s = s[1:]
            if s.startswith(" ") or s.startswith("\t"):
                s = s[1:]
        out.append(s.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    return out


def split_params(text):
    """Top-level comma-separated parts of a parameter list."""
    parts, depth, cur = [], 0, ""
    for c in text:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def param_name(p):
    """The name a C parameter declares; None for "void"."""
    p = re.sub(r"/\*.*?\*/", " ", p).strip()
    if p == "void":
        return None
    if p == "...":
        return "..."
    m = re.search(r"\(\s*\*+\s*(\w+)\s*\)", p)  # function pointer: (*name)(...)
    if m:
        return m.group(1)
    p = re.sub(r"\[[^\]]*\]", "", p).strip()  # arrays
    m = re.search(r"(\w+)\s*$", p)
    return m.group(1) if m else None


def declaration(lines, i):
    """The declaration starting at lines[i]: up to the first '{' or ';' (or
    the end of a #define, with its continuation lines)."""
    text = ""
    j = i
    while j < len(lines) and j < i + 40:
        ln = lines[j]
        if ln.lstrip().startswith("#define"):
            text += ln
            while text.endswith("\\") and j + 1 < len(lines):
                j += 1
                text = text[:-1] + " " + lines[j]
            return text
        text += " " + ln
        if "{" in ln or ";" in ln:
            break
        j += 1
    return text


def params_of(decl, name):
    """The parameter names of function or macro `name` in its declaration,
    or None when `name(` is not declared there."""
    # The name the declaration declares: the first "identifier (" once
    # __attribute__((...)) is removed.
    d = decl
    while True:
        a = re.search(r"__attribute__\s*\(", d)
        if not a:
            break
        depth, k = 1, a.end()
        while k < len(d) and depth:
            depth += {"(": 1, ")": -1}.get(d[k], 0)
            k += 1
        d = d[:a.start()] + " " + d[k:]
    m = re.search(r"(\w+)\s*\(", d)
    if not m or m.group(1) != name:
        return None
    decl = d
    depth, k, start = 1, m.end(), m.end()
    while k < len(decl) and depth:
        if decl[k] == "(":
            depth += 1
        elif decl[k] == ")":
            depth -= 1
        k += 1
    inner = decl[start:k - 1]
    names = [param_name(p) for p in split_params(inner)]
    return [n for n in names if n]


def check_text(path, text):
    """One message per bad block: (line, message)."""
    bad = []
    lines = text.split("\n")
    for m in re.finditer(r"/\*\*(?!\*)", text):
        start = m.start()
        end = text.find("*/", m.end())
        if end < 0:
            bad.append((text.count("\n", 0, start) + 1, "unterminated /** block"))
            continue
        raw = text[start:end + 2]
        lineno = text.count("\n", 0, start) + 1
        endline = text.count("\n", 0, end)  # 0-based index of the line holding */
        one_line = "\n" not in raw
        body = block_lines(raw)
        head = body[0].strip() if body else ""
        what = "one-line /** */ block" if one_line else "/** block"
        kind = None
        if HEAD_DOC.match(head):
            continue
        if one_line and re.search(r"@[\w.]+:|\b(?:Return|Context):", head):
            bad.append((lineno, f"one-line /** */ block with parameters or sections "
                        f"({head[:40]!r}...): kernel-doc puts each @arg: and each section on "
                        f"its own line"))
            continue
        if HEAD_FUNC.match(head):
            kind, name = "func", HEAD_FUNC.match(head).group(1)
        elif HEAD_TYPE.match(head):
            kind, name = HEAD_TYPE.match(head).group(1), HEAD_TYPE.match(head).group(2)
        elif HEAD_OBJ.match(head):
            kind, name = "obj", HEAD_OBJ.match(head).group(1)
        else:
            hint = " (a plain comment is /* ... */)" if one_line else ""
            bad.append((lineno, f"{what} does not start with \"name() - summary\", "
                        f"\"struct name - summary\", \"NAME - summary\" or \"DOC:\": "
                        f"{head[:60]!r}{hint}"))
            continue
        nxt = endline + 1
        after = raw.endswith("*/") and lines[endline][lines[endline].find("*/") + 2:].strip()
        if after:
            bad.append((lineno, f"{what} for {name}: code follows */ on the same line"))
            continue
        if nxt >= len(lines) or not lines[nxt].strip():
            bad.append((lineno, f"{what} for {name} is not directly above its declaration "
                        f"(blank line or end of file after it)"))
            continue
        if lines[nxt].lstrip().startswith(("/*", "//")):
            bad.append((lineno, f"{what} for {name} is not directly above its declaration "
                        f"(another comment follows it: {lines[nxt].strip()[:50]!r})"))
            continue
        decl = declaration(lines, nxt)
        if kind == "func":
            params = params_of(decl, name)
            if params is None:
                bad.append((lineno, f"{what} for {name}() is not directly above it: the next "
                            f"declaration is {lines[nxt].strip()[:60]!r}"))
                continue
            documented = []
            for ln in body[1:]:
                pm = PARAM_DOC.match(ln)
                if pm:
                    documented.append(pm.group(1))
            for p in params:
                if p not in documented:
                    bad.append((lineno, f"{name}(): parameter {p} is not documented "
                                f"(\"@{p}: ...\")"))
            for d in documented:
                if d not in params:
                    bad.append((lineno, f"{name}(): @{d} documents no parameter of it"))
        elif kind == "obj":
            if re.search(r"\b" + re.escape(name) + r"\s*\(", decl):
                bad.append((lineno, f"{what} for {name}: a function or function-like macro, "
                            f"so its block starts \"{name}() - ...\""))
            elif not re.search(r"\b" + re.escape(name) + r"\b", decl):
                bad.append((lineno, f"{what} for {name} is not directly above it: the next "
                            f"declaration is {lines[nxt].strip()[:60]!r}"))
        else:
            pat = (r"\b" + re.escape(name) + r"\b" if kind == "typedef"
                   else r"\b" + kind + r"\s+" + re.escape(name) + r"\b")
            if not re.search(pat, decl):
                bad.append((lineno, f"{what} for {kind} {name} is not directly above it: the "
                            f"next declaration is {lines[nxt].strip()[:60]!r}"))
    return bad


def headers(paths, excludes, base):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for d, _, files in os.walk(p):
                out += [os.path.join(d, f) for f in files if f.endswith(".h")]
        else:
            out.append(p)
    keep = []
    for f in sorted(set(out)):
        rel = os.path.relpath(f, base) if base else f
        if not any(fnmatch.fnmatch(rel, g) for g in excludes):
            keep.append(f)
    return keep


GOOD = '''/**
 * cl_t_add() - add two numbers.
 * @a: the first.
 * @b: the second, may be 0.
 *
 * Return: a + b.
 */
static inline int cl_t_add(int a,
			   int b)
{
	return a + b;
}

/**
 * struct cl_t_pair - two numbers.
 * @x: one.
 * @y: the other.
 */
struct cl_t_pair {
	int x, y;
};

/** enum cl_t_kind - a one-line block is fine when it is valid. */
enum cl_t_kind { CL_T_A };

/**
 * CL_T_MAX() - the larger of two values.
 * @a: one value.
 * @b: another.
 */
#define CL_T_MAX(a, b) ((a) > (b) ? (a) : (b))

/**
 * CL_T_LIMIT - a limit.
 */
#define CL_T_LIMIT 4

/**
 * cl_t_log() - print.
 * @fmt: format.
 * @...: its arguments.
 * @cb: called after.
 */
void cl_t_log(const char *fmt, void (*cb)(int), ...);

/**
 * DOC: a section of prose.
 */
/* plain comments are not checked */
static inline void cl_t_nothing(void);

/**
 * cl_t_none() - no parameters.
 */
void cl_t_none(void);
'''

BAD = [
    ("/** a plain remark in kernel-doc markers */\nint x;\n", "one-line /** */ block does not start"),
    ("/**\n * Adds two numbers.\n */\nint cl_t_add(int a);\n", "does not start with"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n */\n\nint cl_t_add(int a);\n", "not directly above"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n */\nstatic inline int cl_t_helper(int a);\n"
     "int cl_t_add(int a);\n", "cl_t_add() is not directly above it"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n */\nint cl_t_add(int a, int b);\n",
     "parameter b is not documented"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n * @c: none.\n */\nint cl_t_add(int a);\n",
     "@c documents no parameter"),
    ("/**\n * struct cl_t_pair - two.\n */\nstruct cl_t_other {\n\tint x;\n};\n",
     "struct cl_t_pair is not directly above"),
    ("/**\n * CL_T_MAX() - max.\n * @a: one.\n */\n#define CL_T_MAX(a, b) (a)\n",
     "parameter b is not documented"),
    ("/**\n * cl_t_log() - log.\n * @fmt: format.\n */\nvoid cl_t_log(const char *fmt, ...);\n",
     "parameter ... is not documented"),
    ("/**\n * cl_t_add - add, without the parentheses.\n * @a: one.\n */\nint cl_t_add(int a);\n",
     "starts \"cl_t_add() - ...\""),
    ("/** cl_t_none() - none. */ int cl_t_none(void);\n", "code follows */"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n */\n/* cl_t_add() helper */\nint cl_t_add(int a);\n",
     "another comment follows it"),
    ("/** cl_t_add() - add. @a: one. Context: any. */\nint cl_t_add(int a);\n",
     "one-line /** */ block with parameters or sections"),
    ("/**\n * cl_t_add() - add.\n * @a: one.\n */\nstatic inline int cl_t_add_fb(int a,\n\tint b)\n"
     "{\n\treturn cl_t_add(a);\n}\nint cl_t_add(int a);\n", "cl_t_add() is not directly above it"),
]


def self_test():
    fails, n = 0, 0
    n += 1
    got = check_text("good.h", GOOD)
    if got:
        print("self-test FAIL: good blocks rejected:", got)
        fails += 1
    for text, want in BAD:
        n += 1
        got = check_text("bad.h", text)
        if not got:
            print(f"self-test FAIL: accepted: {text!r}")
            fails += 1
        elif not any(want in msg for _, msg in got):
            print(f"self-test FAIL: {text!r} rejected, but not with {want!r}: {got}")
            fails += 1
    # The command line: a file with a bad block fails, --exclude skips it.
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.h")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(BAD[0][0])
        n += 2
        if run([bad], [], None, quiet=True) != 1:
            print("self-test FAIL: a file with a bad block passed")
            fails += 1
        if run([d], ["bad.h"], d, quiet=True) != 0:
            print("self-test FAIL: --exclude did not skip the file")
            fails += 1
    print(f"kernel-doc check self-test: {n - fails} of {n} cases as expected")
    return 1 if fails else 0


def run(paths, excludes, base, quiet=False):
    files = headers(paths, excludes, base)
    nbad = 0
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for line, msg in check_text(f, text):
            nbad += 1
            if not quiet:
                print(f"{f}:{line}: {msg}")
    if not quiet:
        print(f"kernel-doc check: {len(files)} headers, "
              + (f"{nbad} bad blocks" if nbad else "every /** block valid"))
    return 1 if nbad else 0


def main(argv):
    args = argv[1:]
    if args and args[0] == "--self-test":
        return self_test()
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    excludes, paths = [], []
    while args:
        a = args.pop(0)
        if a == "--exclude" and args:
            excludes.append(args.pop(0))
        else:
            paths.append(a)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "include", "cachelocal")
    root = os.path.normpath(root)
    if not paths:
        paths = [root]
    return run(paths, excludes, root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
