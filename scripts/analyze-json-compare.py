#!/usr/bin/env python3
"""Compares two directories written by scripts/analyze-json-diff.sh: every document must
be identical once the evidence lines are set aside; the evidence lines that differ are
counted (and listed with -v).  Usage: analyze-json-compare.py BEFORE AFTER [-v]"""
import json, os, sys

before, after = sys.argv[1], sys.argv[2]
verbose = "-v" in sys.argv
other, lines, files = [], 0, 0
for name in sorted(os.listdir(before)):
    a, b = os.path.join(before, name), os.path.join(after, name)
    if not os.path.exists(b):
        other.append(f"{name}: missing after")
        continue
    if not name.endswith(".json"):
        if open(a).read() != open(b).read():
            other.append(f"{name}: stderr or exit status differs")
        continue
    ta, tb = open(a).read(), open(b).read()
    if not ta.strip() and not tb.strip():
        continue
    files += 1
    ja, jb = json.loads(ta), json.loads(tb)
    for sa, sb in zip(ja.get("spikes", []), jb.get("spikes", [])):
        for ea, eb in zip(sa.get("evidence", []), sb.get("evidence", [])):
            if ea.get("line") != eb.get("line"):
                lines += 1
                if verbose:
                    print(f"{name}\n  - {ea['line']}\n  + {eb['line']}")
            ea["line"] = eb["line"] = None
    if ja != jb:
        other.append(f"{name}: differs beyond evidence lines")
print(f"{files} analyses compared; {lines} evidence lines differ; other differences: {len(other)}")
for o in other:
    print("  " + o)
sys.exit(1 if other else 0)
