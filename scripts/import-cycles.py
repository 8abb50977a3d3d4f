#!/usr/bin/env python3
"""Lists file-level import cycles in every crate: file A names `crate::b`/`super::b`
(or `crate::b::...`) and file B names A back, directly or through other files.
A module's own children (`mod x;` and `x::` paths into them) are not imports.
Usage: scripts/import-cycles.py [crates-dir]   (exit 1 when there is a cycle)"""
import os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "crates")
cycles = []
for crate in sorted(os.listdir(root)):
    src = os.path.join(root, crate, "src")
    if not os.path.isdir(src):
        continue
    mods = {}  # module path tuple -> file
    for d, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(d, f), src)[:-3].split(os.sep)
            if rel[-1] == "mod":
                rel = rel[:-1]
            if rel in (["lib"], ["main"]):
                rel = []
            mods[tuple(rel)] = os.path.join(d, f)
    def resolve(path):
        # The longest known module prefix of a path.
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in mods:
                return tuple(path[:n])
        return None
    edges = {m: set() for m in mods}
    for m, f in mods.items():
        text = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", open(f).read(), flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        for p in re.findall(r"\b(crate|super)((?:::\w+)+)", text):
            parts = p[1].strip(":").split("::")
            base = [] if p[0] == "crate" else list(m[:-1])
            t = resolve(base + parts)
            # A file naming its own descendants or ancestors is not a cycle we count.
            if t is None or t == m or t == m[:len(t)] or m == t[:len(m)]:
                continue
            edges[m].add(t)
        for grp in re.findall(r"\buse\s+(crate|super)::\{([^}]*)\}", text):
            base = [] if grp[0] == "crate" else list(m[:-1])
            for name in re.findall(r"(\w+)", grp[1]):
                t = resolve(base + [name])
                if t and t != m and t != m[:len(t)] and m != t[:len(m)]:
                    edges[m].add(t)
    index, low, stack, on, n = {}, {}, [], set(), [0]
    def scc(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                scc(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append((crate, sorted("/".join(c) or "lib" for c in comp)))
    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            scc(v)
for crate, comp in cycles:
    print(f"{crate}: {' <-> '.join(comp)}")
print(f"{len(cycles)} import cycles")
sys.exit(1 if cycles else 0)
