#!/usr/bin/env python3
"""Lists functions of the workspace's non-test code longer than a number of lines (from
the `fn` line to its closing brace, counted by braces outside strings and comments).
Usage: scripts/long-functions.py [MIN_LINES]   (default 150)"""
import os, re, sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 150
root = os.path.join(os.path.dirname(__file__), "..", "crates")
fn_line = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
code = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'|//[^\n]*')
found = []
for d, _, files in os.walk(root):
    if "/target" in d or "/tests" in d or "/benches" in d or "/examples" in d:
        continue
    for f in files:
        if not f.endswith(".rs"):
            continue
        path = os.path.join(d, f)
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        # Unit tests sit at the end of a file, in `#[cfg(test)] mod tests`.
        for i, l in enumerate(lines):
            if l.startswith("#[cfg(test)]"):
                lines = lines[:i]
                break
        i = 0
        while i < len(lines):
            m = fn_line.match(lines[i])
            if not m:
                i += 1
                continue
            depth, opened, j = 0, False, i
            while j < len(lines):
                text = code.sub("", lines[j])
                if not opened and ";" in text and "{" not in text:
                    break  # a declaration without a body
                depth += text.count("{") - text.count("}")
                opened = opened or "{" in text
                if opened and depth <= 0:
                    break
                j += 1
            n = j - i + 1
            if opened and n > limit:
                found.append((n, os.path.relpath(path, os.path.join(root, "..")), m.group(1)))
            i += 1
for n, path, name in sorted(found, reverse=True):
    print(f"{n:5} {path} {name}")
print(f"{len(found)} functions over {limit} lines")
