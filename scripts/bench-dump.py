#!/usr/bin/env python3
"""Times `rtwhy dump --raw` beside `trace-cmd report -R` on the recorded fixtures over
1 MiB (or the files given), runs interleaved (trace-cmd, rtwhy, trace-cmd, rtwhy, ...),
output to /dev/null; wall time and CPU time (user + system, from wait4) of each whole
process. Prints a Markdown table: per file the median and range of each, and the
ratios of the medians. With `--baseline PATH` an earlier rtwhy build runs in the same
rounds (trace-cmd, rtwhy, baseline, ...) and gets columns of its own: a change is
measured against its predecessor in one run, not against a number from another day.

Usage: scripts/bench-dump.py [--rtwhy PATH] [--baseline PATH] [--rounds N] [FILE ...]
Offline: reads files only.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd):
    """Wall seconds and CPU seconds (user + system) of `cmd`, output dropped."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"bench-dump: {' '.join(cmd)} failed (exit status {proc.returncode})")
    return wall, usage.ru_utime + usage.ru_stime


def fixtures():
    found = []
    for d, _, names in os.walk(os.path.join(ROOT, "fixtures")):
        for n in names:
            p = os.path.join(d, n)
            if n.endswith(".dat") and os.path.getsize(p) > 1 << 20:
                found.append(p)
    return sorted(found, key=os.path.getsize)


def spread(xs):
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rtwhy", default=None, help="rtwhy binary (default: the release build)")
    ap.add_argument("--baseline", default=None, help="an earlier rtwhy binary timed in the same rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    rtwhy = args.rtwhy
    if rtwhy is None:
        target = subprocess.run(
            [os.path.join(ROOT, "scripts", "target-dir.sh")], capture_output=True, text=True, check=True
        ).stdout.strip()
        rtwhy = os.path.join(target, "release", "rtwhy")
    if args.rounds < 1:
        sys.exit("bench-dump: --rounds needs at least 1")
    files = args.files or fixtures()
    for tool in (rtwhy, shutil.which("trace-cmd")) + ((args.baseline,) if args.baseline else ()):
        if not tool or not os.access(tool, os.X_OK):
            sys.exit(f"bench-dump: {tool or 'trace-cmd'} is not an executable (build rtwhy, or give --rtwhy; install trace-cmd)")
    for f in files:
        if not os.path.isfile(f):
            sys.exit(f"bench-dump: {f} is not a file")
    base = ["baseline wall", "baseline wall ratio", "baseline CPU", "baseline CPU ratio"] if args.baseline else []
    head = ["file", "size", "`trace-cmd report -R` wall", "rtwhy wall", "wall ratio", "trace-cmd CPU", "rtwhy CPU", "CPU ratio"] + base
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for f in files:
        tc_wall, tc_cpu, rw_wall, rw_cpu, bl_wall, bl_cpu = [], [], [], [], [], []
        for _ in range(args.rounds):
            w, c = timed(["trace-cmd", "report", "-R", "-i", f])
            tc_wall.append(w)
            tc_cpu.append(c)
            w, c = timed([rtwhy, "dump", "--raw", f])
            rw_wall.append(w)
            rw_cpu.append(c)
            if args.baseline:
                w, c = timed([args.baseline, "dump", "--raw", f])
                bl_wall.append(w)
                bl_cpu.append(c)
        ratio = lambda a, b: statistics.median(a) / max(statistics.median(b), 0.001)
        rel = os.path.relpath(f, ROOT)
        cells = [
            rel,
            f"{os.path.getsize(f) / (1 << 20):.1f} MiB",
            spread(tc_wall),
            spread(rw_wall),
            f"{ratio(tc_wall, rw_wall):.1f}x",
            spread(tc_cpu),
            spread(rw_cpu),
            f"{ratio(tc_cpu, rw_cpu):.1f}x",
        ]
        if args.baseline:
            cells += [spread(bl_wall), f"{ratio(tc_wall, bl_wall):.1f}x", spread(bl_cpu), f"{ratio(tc_cpu, bl_cpu):.1f}x"]
        print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
