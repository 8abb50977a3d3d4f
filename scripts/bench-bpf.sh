#!/usr/bin/env bash
# What rtwhy's BPF breach detector itself costs, program by program, read from the
# kernel's own accounting (kernel.bpf_stats_enabled: run count and run time of every BPF
# program) instead of from a throughput difference that this shared machine's noise
# hides. For each workload it runs `rtwhy record -t 1s` around it (nothing captured: RT
# throttling's 50 ms stops would cross a lower threshold; the work per event is the same),
# takes two snapshots of the detector's programs a few seconds apart in the middle of
# the run, and prints per program: runs per second, nanoseconds per run and the share
# of one CPU spent in it.
#
# Workloads (each bounded by timeout):
#   normal  taskset -c 0 perf bench sched pipe: every switch and wake-up a normal
#           task's, so every program leaves at its first check
#   rt      taskset -c 1 chrt -f 10 perf bench sched pipe: the recorded threads
#           real-time, so the programs do their whole work for each switch and wake-up
#   cyclic  cyclictest -m -q -p 80 -i 1000 -a 1 -t 1: a real-time thread's timer
#           wake-ups (hrtimer programs too), 1000 a second
#
# The accounting adds two clock reads to every run it measures (tens of nanoseconds
# here), so a program that leaves at once shows that floor, not zero; compare ns/run
# between builds on one machine, and the "normal" row gives the floor.
#
# Usage: scripts/bench-bpf.sh [--rtwhy PATH] [--seconds N]
#   --rtwhy PATH  use this rtwhy binary instead of building target/release/rtwhy
#   --seconds N   length of the measured window per workload (default 3)
# Needs root and bpftool (scripts/setup.sh test installs it). Restores
# kernel.bpf_stats_enabled and stops every child on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."

RTWHY=
SECONDS_MEASURED=3
while [ $# -gt 0 ]; do
    case "$1" in
        --rtwhy) RTWHY=$2; shift 2 ;;
        --seconds) SECONDS_MEASURED=$2; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-bpf: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench-bpf: needs root (BPF, kernel.bpf_stats_enabled)" >&2; exit 2; }
[ "$(nproc --all)" -ge 2 ] || { echo "bench-bpf: needs at least 2 CPUs" >&2; exit 2; }
for t in bpftool perf cyclictest python3 taskset timeout chrt; do
    command -v "$t" >/dev/null || { echo "bench-bpf: $t not found: run scripts/setup.sh test as root" >&2; exit 2; }
done
if [ -z "$RTWHY" ]; then
    cargo build --release --locked -q -p rtwhy
    RTWHY="$(scripts/target-dir.sh)/release/rtwhy"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rtwhy-bench-bpf.XXXXXX")
STATS_BEFORE=$(cat /proc/sys/kernel/bpf_stats_enabled)
CHILD=
cleanup() {
    [ -n "$CHILD" ] && kill -INT "$CHILD" 2>/dev/null && wait "$CHILD" 2>/dev/null || true
    echo "$STATS_BEFORE" > /proc/sys/kernel/bpf_stats_enabled
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
echo 1 > /proc/sys/kernel/bpf_stats_enabled

# name run_cnt run_time_ns of each detector program (rtwhy's names: btf_, raw_, tp_)
snapshot() {
    bpftool -j prog show | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    n = p.get("name", "")
    if n.startswith(("btf_", "raw_", "tp_")):
        print(n, p.get("run_cnt", 0), p.get("run_time_ns", 0))'
}

measure() {
    local name=$1; shift
    local out=$WORK/$name
    timeout -s INT $((SECONDS_MEASURED + 60)) "$RTWHY" record -t 1s --duration 3600s \
        --out "$out.rec" -- "$@" > "$out.log" 2>&1 &
    CHILD=$!
    # armed (session.json written) before the first snapshot
    local i
    for i in $(seq 100); do
        [ -f "$out.rec/session.json" ] && break
        sleep 0.1
    done
    sleep 0.5
    snapshot | sort > "$out.a"
    local t0 t1
    t0=$(date +%s%N)
    sleep "$SECONDS_MEASURED"
    snapshot | sort > "$out.b"
    t1=$(date +%s%N)
    kill -INT "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
    CHILD=
    python3 - "$name" "$out.a" "$out.b" "$t0" "$t1" <<'EOF'
import sys
name, a, b, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def read(p):
    return {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(p) if l.strip()}
before, after = read(a), read(b)
dt = (t1 - t0) / 1e9
total = 0.0
for prog in sorted(after):
    if prog not in before:
        continue
    runs = after[prog][0] - before[prog][0]
    ns = after[prog][1] - before[prog][1]
    if runs <= 0:
        continue
    share = ns / (dt * 1e9) * 100
    total += share
    print("| %s | `%s` | %.0f | %.1f | %.2f %% |" % (name, prog, runs / dt, ns / runs, share))
print("| %s | all | | | **%.2f %%** |" % (name, total))
EOF
}

# The workloads run longer than the window; the recorder's SIGINT ends them.
echo "rtwhy: $("$RTWHY" --version 2>/dev/null | head -1); kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| workload | program | runs/s | ns/run | share of one CPU |"
echo "|---|---|---|---|---|"
measure normal taskset -c 0 perf bench sched pipe -l 100000000
measure rt taskset -c 1 chrt -f 10 perf bench sched pipe -l 100000000
measure cyclic cyclictest -m -q -p 80 -i 1000 -a 1 -t 1 -D $((SECONDS_MEASURED + 30))
