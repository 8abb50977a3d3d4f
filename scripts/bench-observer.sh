#!/usr/bin/env bash
# The cost of watching, as users feel it: cyclictest's latency on CPU 1 and the
# throughput of an unwatched load on CPU 0, under each observer in turn, repetitions
# interleaved (A B C A B C ...):
#   A  nothing
#   B  a plain tracefs instance made by this script with rtwhy's default events and
#      buffer (overwrite, 4096 KiB/CPU, clock mono; the events read from a short
#      `rtwhy record` session): what `trace-cmd start` would make. `trace-cmd record`
#      itself fails on kernels that refuse writes to /proc/sys/kernel/ftrace_enabled
#      (the project's VM); where it works, T is run as well
#   T  `trace-cmd record` with the same events, buffer and clock (where it works)
#   C  `rtwhy record -t THRESHOLD -- cyclictest ...` (default preset, BPF detector, the
#      scheduler events kept by its programs: --sched-events auto; CPU 0, where no
#      measured thread may run, recorded leanly: --other-cpus lean, the default)
#   F  the same with `--other-cpus full`: every CPU recorded in full
#   K  the same with `--cpus 1`: only cyclictest's CPU recorded (tracing_cpumask)
#   J  K with `--sched-events tracefs`: the context switches and wake-ups recorded by the
#      instance, not kept by the BPF detector's programs (the default before 439af8d)
#   G  C with `--sched-events tracefs`
#   M  B with the instance's tracing_cpumask set to CPU 1: the events still fire on CPU 0
#      and are dropped there before anything is written
#   Y  B with the kernel's global `options/record-cmd` off (saved_cmdlines not kept)
#   Z  M with `options/record-cmd` off
#   N  M without the system-call events (syscalls:*): what the scheduler, interrupt,
#      timer and other events cost CPU 0 when nothing is written there
#   S  M with the system-call events only: what they cost CPU 0 (enabling any of them
#      puts every task on the kernel's slow system-call path)
#   P  M without the scheduler events (sched:*): what a recorder whose scheduler events
#      came from elsewhere (BPF programs) would still pay on CPU 0 for its tracefs part
#   Q  M with the scheduler events only
#   R  `rtla timerlat hist` on every CPU beside cyclictest (where the kernel has the
#      timerlat tracer)
# In every condition cyclictest runs `-m -p 80 -a 1 -i 1000 -h 2000 -l LOOPS -q -t 1`, and
# the background load, `taskset -c 0 perf bench sched pipe -l 100000` over and over, runs
# for the whole of its run on CPU 0: the rest of the machine, which no condition watches
# (rtwhy watches cyclictest's threads only, but records every CPU).
# Prints a Markdown table: per condition the median over repetitions of cyclictest's p50,
# p99, p99.9 and max (us, nearest rank from each run's histogram) with their range, and
# the load's ops/s (median of each run's pipe runs; median and range over repetitions).
# Usage: scripts/bench-observer.sh [--reps N] [--loops N] [--threshold T] [--rtwhy PATH]
#        [--conds "A B C"] [--keep DIR]
#   --reps N       repetitions per condition (default 6)
#   --loops N      cyclictest loops per run, 1 ms each (default 5000)
#   --threshold T  rtwhy's breach threshold (default 10ms: the VM's own vCPU stops of
#                  2-12 ms still capture now and then; each capture is counted)
#   --rtwhy PATH   the rtwhy binary (default: target/release/rtwhy, built if missing)
#   --conds LIST   conditions to run (default: A B C F, plus T and R where they work)
#   --keep DIR     copy the raw outputs to DIR
# Needs root. Every child is bounded by `timeout`; the tracefs instance it makes is
# removed (and record-cmd restored) on any exit; no SCHED_FIFO load runs on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

REPS=6
LOOPS=5000
THRESHOLD=10ms
RTWHY=
CONDS=
KEEP=
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS=$2; shift 2 ;;
        --loops) LOOPS=$2; shift 2 ;;
        --threshold) THRESHOLD=$2; shift 2 ;;
        --rtwhy) RTWHY=$2; shift 2 ;;
        --conds) CONDS=$2; shift 2 ;;
        --keep) KEEP=$2; shift 2 ;;
        -h|--help) sed -n '2,43p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-observer: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench-observer: needs root (tracefs, BPF, SCHED_FIFO)" >&2; exit 2; }
[ "$(nproc --all)" -ge 2 ] || { echo "bench-observer: needs at least 2 CPUs" >&2; exit 2; }
for t in perf cyclictest python3 taskset timeout; do
    command -v "$t" >/dev/null || { echo "bench-observer: $t not found" >&2; exit 2; }
done
case $LOOPS in ''|*[!0-9]*) echo "bench-observer: --loops takes a number" >&2; exit 2 ;; esac
[ "$LOOPS" -le 60000 ] || { echo "bench-observer: --loops at most 60000 (a minute)" >&2; exit 2; }

TRACING=/sys/kernel/tracing
RUN_LIMIT=$((LOOPS / 1000 + 40))
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rtwhy-bench-observer.XXXXXX")
PLAIN=$TRACING/instances/bench-observer-$$
CHILDREN=()
RECORD_CMD=$(cat "$TRACING/options/record-cmd" 2>/dev/null || echo 1)

remove_plain() {
    echo "$RECORD_CMD" > "$TRACING/options/record-cmd" 2>/dev/null || true
    if [ -d "$PLAIN" ]; then
        echo 0 > "$PLAIN/tracing_on" 2>/dev/null || true
        rmdir "$PLAIN" 2>/dev/null || echo "bench-observer: could not remove $PLAIN" >&2
    fi
}
cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    set +e
    for p in "${CHILDREN[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${CHILDREN[@]}"; do wait "$p" 2>/dev/null; done
    remove_plain
    if [ -n "$KEEP" ] && [ -d "$WORK/raw" ]; then
        mkdir -p "$KEEP" && cp -r "$WORK/raw/." "$KEEP/"
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ -d "$TRACING/instances" ] || mount -t tracefs nodev "$TRACING"
if [ -z "$RTWHY" ]; then
    RTWHY=${CARGO_TARGET_DIR:-$ROOT/target}/release/rtwhy
    if [ ! -x "$RTWHY" ]; then
        [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
        cargo build --release --locked -q -p rtwhy --bin rtwhy
    fi
fi
[ -x "$RTWHY" ] || { echo "bench-observer: no rtwhy binary at $RTWHY" >&2; exit 2; }
RAW=$WORK/raw
mkdir -p "$RAW"
say() { printf '[%4ds] %s\n' "$SECONDS" "$*" >&2; }

say "reading rtwhy's default preset from a short session"
timeout 30 "$RTWHY" record -t 100us --out "$RAW/warmup" -- sleep 0.3 > "$RAW/warmup.out" 2>&1
EVENTS=$("$ROOT/scripts/recorded-events.py" "$RAW/warmup/session.json")
EVENTS_SYS= EVENTS_NOSYS= EVENTS_SCHED= EVENTS_NOSCHED=
for e in $EVENTS; do
    case $e in syscalls:*) EVENTS_SYS="$EVENTS_SYS $e" ;; *) EVENTS_NOSYS="$EVENTS_NOSYS $e" ;; esac
    case $e in sched:*) EVENTS_SCHED="$EVENTS_SCHED $e" ;; *) EVENTS_NOSCHED="$EVENTS_NOSCHED $e" ;; esac
done
rm -rf "$RAW/warmup"
say "events: $EVENTS"

# Which of T and R this machine can run.
CAN_T=0 CAN_R=0
if command -v trace-cmd >/dev/null; then
    if timeout 20 trace-cmd record -q -e sched:sched_switch -o "$WORK/probe.dat" -- true > "$RAW/trace-cmd-probe.out" 2>&1; then
        CAN_T=1
    fi
    rm -f "$WORK"/probe.dat*
fi
if command -v rtla >/dev/null && grep -qw timerlat "$TRACING/available_tracers" 2>/dev/null; then
    CAN_R=1
fi
if [ -z "$CONDS" ]; then
    CONDS="A B C F"
    [ "$CAN_T" = 0 ] || CONDS="$CONDS T"
    [ "$CAN_R" = 0 ] || CONDS="$CONDS R"
fi
say "conditions: $CONDS (trace-cmd record works: $CAN_T; timerlat tracer: $CAN_R)"

# plain_on [CPUMASK] [RECORD_CMD] [EVENT_LIST]: the plain instance, recording on the CPUs
# of the hex mask (default all), with the global record-cmd option set as given (default
# unchanged) and the events given (default rtwhy's, $EVENTS).
plain_on() {
    mkdir "$PLAIN"
    [ -z "${1:-}" ] || echo "$1" > "$PLAIN/tracing_cpumask"
    [ -z "${2:-}" ] || echo "$2" > "$TRACING/options/record-cmd"
    echo 0 > "$PLAIN/tracing_on"
    echo 1 > "$PLAIN/options/overwrite"
    echo 4096 > "$PLAIN/buffer_size_kb"
    echo mono > "$PLAIN/trace_clock"
    local e
    for e in ${3:-$EVENTS}; do
        [ ! -e "$PLAIN/events/${e%%:*}/${e#*:}/enable" ] || echo 1 > "$PLAIN/events/${e%%:*}/${e#*:}/enable"
    done
    echo 1 > "$PLAIN/tracing_on"
}

CYCLIC=(cyclictest -m -p 80 -a 1 -i 1000 -h 2000 -l "$LOOPS" -q -t 1)

# load NAME: the pipe benchmark on CPU 0 over and over until $WORK/stop exists (bounded).
load() {
    local name=$1 n=0
    while [ ! -e "$WORK/stop" ] && [ $n -lt 2000 ]; do
        timeout 30 taskset -c 0 perf bench sched pipe -l 100000 >> "$RAW/$name.load" 2>/dev/null || true
        n=$((n + 1))
    done
}

# one COND NAME: one repetition of COND.
one() {
    local cond=$1 name=$2 cmd=() tc_events=() e rtla=
    rm -f "$WORK/stop"
    case $cond in
        A) cmd=("${CYCLIC[@]}") ;;
        B) plain_on; cmd=("${CYCLIC[@]}") ;;
        M) plain_on 2; cmd=("${CYCLIC[@]}") ;;
        Y) plain_on "" 0; cmd=("${CYCLIC[@]}") ;;
        Z) plain_on 2 0; cmd=("${CYCLIC[@]}") ;;
        N) plain_on 2 "" "$EVENTS_NOSYS"; cmd=("${CYCLIC[@]}") ;;
        S) plain_on 2 "" "$EVENTS_SYS"; cmd=("${CYCLIC[@]}") ;;
        P) plain_on 2 "" "$EVENTS_NOSCHED"; cmd=("${CYCLIC[@]}") ;;
        Q) plain_on 2 "" "$EVENTS_SCHED"; cmd=("${CYCLIC[@]}") ;;
        T)
            for e in $EVENTS; do tc_events+=(-e "$e"); done
            cmd=(trace-cmd record -q -b 4096 -C mono "${tc_events[@]}" -o "$WORK/$name.dat" -- "${CYCLIC[@]}") ;;
        C) cmd=("$RTWHY" record -t "$THRESHOLD" --out "$RAW/$name.rec" -- "${CYCLIC[@]}") ;;
        F) cmd=("$RTWHY" record -t "$THRESHOLD" --other-cpus full --out "$RAW/$name.rec" -- "${CYCLIC[@]}") ;;
        K) cmd=("$RTWHY" record -t "$THRESHOLD" --cpus 1 --out "$RAW/$name.rec" -- "${CYCLIC[@]}") ;;
        J) cmd=("$RTWHY" record -t "$THRESHOLD" --cpus 1 --sched-events tracefs --out "$RAW/$name.rec" -- "${CYCLIC[@]}") ;;
        G) cmd=("$RTWHY" record -t "$THRESHOLD" --sched-events tracefs --out "$RAW/$name.rec" -- "${CYCLIC[@]}") ;;
        R) cmd=("${CYCLIC[@]}")
           timeout -s INT -k 5 "$RUN_LIMIT" rtla timerlat hist -d "$((LOOPS / 1000 + 2))s" > "$RAW/$name.rtla" 2>&1 &
           rtla=$!
           CHILDREN+=("$rtla") ;;
    esac
    load "$name" &
    local loader=$!
    CHILDREN+=("$loader")
    local rc=0
    timeout -s TERM -k 5 "$RUN_LIMIT" "${cmd[@]}" > "$RAW/$name.out" 2> "$RAW/$name.err" < /dev/null || rc=$?
    touch "$WORK/stop"
    wait "$loader" 2>/dev/null || true
    [ -z "$rtla" ] || wait "$rtla" 2>/dev/null || true
    CHILDREN=()
    remove_plain
    rm -f "$WORK/$name".dat*
    if [ -d "$RAW/$name.rec" ]; then
        find "$RAW/$name.rec" -type f ! -name session.json -delete
    fi
    echo "$rc" > "$RAW/$name.rc"
    # rtwhy exits 1 when it captured: not a failure
    [ "$rc" -le 1 ] || say "$name: status $rc: $(tail -n 1 "$RAW/$name.err")"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for rep in $(seq "$REPS"); do
    for cond in $CONDS; do
        say "rep $rep $cond (load average $(cut -d' ' -f1 /proc/loadavg))"
        one "$cond" "$cond-$rep"
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$RAW" "$REPS" "$CONDS" "$LOAD_START" "$LOAD_END" "$LOOPS" "$THRESHOLD" "$("$RTWHY" --version 2>/dev/null | head -n 1)" "$(uname -r)" <<'EOF'
import glob, json, math, os, re, statistics, sys
raw, reps, conds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
load_start, load_end, loops, threshold, version, kernel = sys.argv[4:10]
names = {
    "A": "nothing",
    "B": "plain tracefs instance, rtwhy's events and buffer",
    "T": "`trace-cmd record`, rtwhy's events and buffer",
    "C": "`rtwhy record -t %s` (default preset, BPF; other CPUs lean)" % threshold,
    "F": "`rtwhy record -t %s --other-cpus full` (every CPU in full)" % threshold,
    "K": "`rtwhy record -t %s --cpus 1` (only cyclictest's CPU recorded)" % threshold,
    "J": "`rtwhy record -t %s --cpus 1 --sched-events tracefs` (the instance's scheduler events)" % threshold,
    "G": "`rtwhy record -t %s --sched-events tracefs` (every CPU, others lean, the instance's scheduler events)" % threshold,
    "M": "B, the instance's tracing_cpumask CPU 1 only",
    "P": "M without the scheduler events",
    "Q": "M with the scheduler events only",
    "Y": "B, global `options/record-cmd` off",
    "Z": "M, global `options/record-cmd` off",
    "N": "M without the system-call events",
    "S": "M with the system-call events only",
    "R": "`rtla timerlat hist` beside it",
}

def hist(path):
    """Samples per microsecond bucket, the overflows, and the max cyclictest printed."""
    buckets, over, mx = {}, 0, None
    try:
        text = open(path).read()
    except OSError:
        return None
    for line in text.splitlines():
        m = re.match(r"^(\d+)\s+(\d+)\s*$", line)
        if m:
            buckets[int(m.group(1))] = buckets.get(int(m.group(1)), 0) + int(m.group(2))
        m = re.match(r"^# Histogram Overflows:\s+(\d+)", line)
        if m:
            over = int(m.group(1))
        m = re.match(r"^# Max Latencies:\s+(\d+)", line)
        if m:
            mx = int(m.group(1))
    if not buckets or mx is None:
        return None
    return buckets, over, mx

def pct(h, q):
    buckets, over, mx = h
    total = sum(buckets.values()) + over
    rank = max(1, math.ceil(q * total - 1e-9))
    seen = 0
    for us in sorted(buckets):
        seen += buckets[us]
        if seen >= rank:
            return us
    return mx  # in the overflow: at most the max

def pipe_ops(path):
    try:
        v = [float(m) for m in re.findall(r"^\s*(\d+) ops/sec", open(path).read(), re.M)]
    except OSError:
        return None
    return statistics.median(v) if v else None

def span(v, fmt="%d"):
    if not v:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(v), min(v), max(v))

print()
print("Machine: kernel %s, %s; %s reps per condition, interleaved; cyclictest `-m -p 80 -a 1 -i 1000 -h 2000 -l %s -q -t 1`; load on CPU 0: `taskset -c 0 perf bench sched pipe -l 100000` over and over; load average %s at the start, %s at the end." % (kernel, version, reps, loops, load_start, load_end))
print()
print("| condition | p50 | p99 | p99.9 | max | load ops/s | load vs nothing | runs | captures |")
print("|---|---|---|---|---|---|---|---|---|")
base = None
for c in conds:
    cols = {k: [] for k in ("p50", "p99", "p999", "max")}
    ops, ok, caps = [], 0, []
    for r in range(1, reps + 1):
        name = "%s-%d" % (c, r)
        h = hist(os.path.join(raw, name + ".out"))
        if h:
            ok += 1
            cols["p50"].append(pct(h, 0.50))
            cols["p99"].append(pct(h, 0.99))
            cols["p999"].append(pct(h, 0.999))
            cols["max"].append(h[2])
        o = pipe_ops(os.path.join(raw, name + ".load"))
        if o:
            ops.append(o)
        sj = os.path.join(raw, name + ".rec", "session.json")
        if os.path.exists(sj):
            try:
                caps.append(json.load(open(sj))["session"].get("captures_total", 0))
            except ValueError:
                pass
    med_ops = statistics.median(ops) if ops else None
    if c == "A":
        base = med_ops
    rel = "-" if (base is None or med_ops is None or c == "A") else "%+.1f %%" % ((med_ops / base - 1) * 100)
    print("| %s: %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |" % (
        c, names.get(c, c), span(cols["p50"]), span(cols["p99"]), span(cols["p999"]),
        span(cols["max"]), span(ops, "%.0f"), rel, ok, reps,
        "/".join(map(str, caps)) if caps else "-"))
print()
print("Latencies in us: median over repetitions (range). Load ops/s: each repetition's median pipe run, then median (range) over repetitions.")
EOF
