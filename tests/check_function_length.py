#!/usr/bin/env python3
"""Fail when a product function is longer than the limit (100 lines by default).

Product code is every .c file under the source root except kernels/, tests/ and third_party/
(and build directories, recognised by their meson-private/ or build.ninja). The length of a
function runs from the first line of its signature to its closing brace, both included.

Detection follows this code base's layout, and says so when a file breaks it rather than
guessing: a definition starts at column 0 (a signature may continue on indented lines) and its
body ends at the first `}` at column 0; comments, string and character literals are blanked
first, so a brace inside them counts for nothing. A column-0 block whose head holds `=` (an
initializer) or no `(` (a struct, union or enum) is not a function. Inside a body, a column-0
line must be a preprocessor line, a label or the closing brace; anything else is an error.

    check_function_length.py [--root DIR] [--max N] [--top N] [--allow FILE] [--list]

--allow FILE names functions, one `path:name` a line (# starts a comment), that may stay over
the limit for now: they are printed as allowed, never hidden, and an entry that is not over the
limit (or names no function) fails the check, so the list only shrinks. --list prints every
function, longest first.
"""
import argparse
import os
import re
import sys

EXCLUDED_DIRS = {"kernels", "tests", "third_party"}
ATTRIBUTE = re.compile(r"\b(?:__attribute__|__declspec|_Alignas|alignas)\s*\(")
LABEL = re.compile(r"[A-Za-z_]\w*:\s*$")
CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


class LayoutError(Exception):
    pass


def blank_comments_and_literals(text):
    """Replace comments and the contents of string/char literals with spaces, keeping newlines
    (so line numbers and columns stay where they were)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_attributes(head):
    """head without its __attribute__((...)) / __declspec(...) / alignas(...) parts, whose
    parentheses would otherwise look like the function's own."""
    out, i = [], 0
    for m in ATTRIBUTE.finditer(head):
        if m.start() < i:
            continue
        out.append(head[i:m.start()])
        depth, j = 0, m.end() - 1   # at the opening parenthesis
        while j < len(head):
            depth += {"(": 1, ")": -1}.get(head[j], 0)
            j += 1
            if depth == 0:
                break
        i = j
    return "".join(out) + head[i:]


def function_name(head):
    """The name in a definition's head: the first identifier followed by `(` once attributes
    are taken out."""
    m = CALLED.search(strip_attributes(head))
    return m.group(1) if m else None


def functions(path, rel):
    """Yield (name, first line, length) for each function defined in the file at path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = blank_comments_and_literals(f.read()).split("\n")
    head, head_start = "", 0
    body = None            # (name, first line) of the function whose body is open, or
    skipping = False       # a column-0 block that is not a function
    continued = False      # the previous line was a preprocessor line ending in a backslash
    for no, line in enumerate(lines, 1):
        directive = continued or line.startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        if directive or not line.strip():
            continue
        if body or skipping:
            if line.startswith("}"):
                if body:
                    yield body[0], body[1], no - body[1] + 1
                body, skipping = None, False
            elif body and not line[0].isspace() and not LABEL.match(line):
                raise LayoutError(f"{rel}:{no}: a column-0 line inside {body[0]}() "
                                  f"(started at line {body[1]}) that is not its closing brace")
            continue
        if not head:
            if line[0].isspace():
                continue   # the rest of a declaration that began earlier
            head_start = no
        head += line + "\n"
        brace, semi = head.find("{"), head.find(";")
        if brace < 0:
            if semi >= 0:
                head = ""   # a declaration: a prototype, a variable, a typedef
            continue
        if semi >= 0 and semi < brace:
            raise LayoutError(f"{rel}:{head_start}: a declaration and a block start on one line")
        before = head[:brace]
        is_function = "(" in before and "=" not in before
        name = function_name(before) if is_function else None
        if is_function and not name:
            raise LayoutError(f"{rel}:{head_start}: cannot name the function defined here")
        if head.count("{") == head.count("}"):
            if is_function:
                yield name, head_start, no - head_start + 1   # a body on its signature's line
        elif is_function:
            body = (name, head_start)
        else:
            skipping = True
        head = ""
    if body or skipping or head:
        what = f"{body[0]}()" if body else "a block or declaration"
        raise LayoutError(f"{rel}: ends inside {what} (no `}}` at column 0 closes it)")


def product_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (
            os.path.isdir(os.path.join(dirpath, d, "meson-private"))
            or os.path.isfile(os.path.join(dirpath, d, "build.ninja"))))
        for name in sorted(filenames):
            if name.endswith(".c"):
                yield os.path.join(dirpath, name), os.path.normpath(os.path.join(rel_dir, name))


def read_allow(path):
    allowed = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            entry = line.split("#", 1)[0].strip()
            if entry:
                allowed.append(entry)
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), os.pardir))
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--allow")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    found = []
    try:
        for path, rel in product_files(root):
            for name, start, length in functions(path, rel):
                found.append((length, f"{rel}:{name}", start))
    except (LayoutError, OSError) as err:
        print(f"check_function_length: {err}", file=sys.stderr)
        return 1
    if not found:
        print(f"check_function_length: no functions found under {root}", file=sys.stderr)
        return 1
    found.sort(key=lambda f: (-f[0], f[1]))
    allowed = read_allow(args.allow) if args.allow else []
    over = [f for f in found if f[0] > args.max]

    shown = found if args.list else found[:args.top]
    print(f"{len(found)} product functions; the longest (limit {args.max} lines):")
    for length, key, start in shown:
        mark = ""
        if length > args.max:
            mark = "  ALLOWED for now (over the limit)" if key in allowed else "  OVER THE LIMIT"
        print(f"  {length:5d}  {key} (line {start}){mark}")

    status = 0
    for length, key, start in over:
        if key in allowed:
            print(f"allowed: {key} is {length} lines (over {args.max}; listed in {args.allow})")
        else:
            print(f"FAIL: {key} (line {start}) is {length} lines, over {args.max}")
            status = 1
    over_keys = {f[1] for f in over}
    for key in allowed:
        if key not in over_keys:
            print(f"FAIL: allow-list entry {key} is not a function over {args.max} lines; "
                  f"remove it from {args.allow}")
            status = 1
    if status == 0:
        print(f"ok: no product function over {args.max} lines"
              + (f" beyond the {len(allowed)} allowed" if allowed else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
