#!/usr/bin/env bash
# Measures the overhead of `rtwhy record` (the flight recorder) in one run, conditions
# interleaved (A B C A B C ...):
#   A  no tracing
#   B  a plain tracefs instance made by this script: overwrite, 4096 KiB/CPU, clock mono,
#      the same events as rtwhy's default preset (read from a short `rtwhy record` run)
#   C  under `rtwhy record` (instance + BPF detector + its own threads)
#   C0 (latency and breach-to-freeze only) `rtwhy record --recorder-cpus 0`: rtwhy's own
#      threads kept off CPU 1, where the measured thread runs
#   C1 (pinned throughput only) `rtwhy record --recorder-cpus 1`: rtwhy's own threads kept
#      off CPU 0, where the benchmark runs, which leaves the in-kernel cost (events, BPF)
#   (an rtwhy without --recorder-cpus runs under `taskset -c N` instead)
#   D  (with --before, real-time row only) as C, with the --before binary: an older rtwhy
#      measured in the same run, interleaved (A B C D A B C D ...)
# and prints a Markdown table of:
#   1. throughput of `perf bench sched pipe` (pinned to CPU 0; pinned to CPU 1 at
#      SCHED_FIFO 10, the recorded command real-time; and unpinned)
#   2. cyclictest latency on CPU 1 (no extra load), histogram percentiles
#   3. breach-to-freeze delay and dead time of the captures of a cyclictest disturbed by a
#      bounded SCHED_FIFO 95 spinner on CPU 1 (300 us every 50 ms plus 0-1 ms random)
#   4. start-up: session.armed.armed_after_ns of every rtwhy run
# Usage: scripts/bench-record.sh [--reps N] [--only throughput|rt|b2f] [--rtwhy PATH] [--before PATH] [--keep DIR]
#   --reps N      repetitions per condition (default 5)
#   --only throughput  section 1 alone (about 40 s per repetition: --reps 12 fits the
#                 budget), for a tighter paired C/B than the whole run's 5 repetitions
#   --only rt     the real-time row of section 1 alone, with runs of half its length
#                 (about 10 s per repetition: --reps 50 fits the budget), for a paired
#                 C/B on the one row where the detector does its whole work
#   --only b2f    section 3 alone (breach-to-freeze, about 15 s)
#   --rtwhy PATH  use this rtwhy binary instead of building target/release/rtwhy
#   --before PATH an older rtwhy binary, run as condition D in the real-time row beside C
#                 (the detector's cost before and after a change, in one run)
#   --keep DIR    copy the raw outputs (perf/cyclictest output, session.json) to DIR
# Needs root. Everything it makes (tracefs instance, temp dir, child processes) is removed on
# any exit; every child is bounded by `timeout`, and no run starts that could end after
# 590 s, so the whole run stays under 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

REPS=5
ONLY=
RTWHY=
BEFORE=
KEEP=
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) REPS=$2; shift 2 ;;
        --only)
            case $2 in throughput|rt|b2f) ;; *) echo "bench-record: --only takes throughput, rt or b2f" >&2; exit 2 ;; esac
            ONLY=$2; shift 2 ;;
        --rtwhy) RTWHY=$2; shift 2 ;;
        --before) BEFORE=$2; shift 2 ;;
        --keep) KEEP=$2; shift 2 ;;
        -h|--help) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-record: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench-record: needs root (tracefs, BPF, SCHED_FIFO)" >&2; exit 2; }
[ "$(nproc --all)" -ge 2 ] || { echo "bench-record: needs at least 2 CPUs" >&2; exit 2; }
for t in perf cyclictest gcc python3 taskset timeout; do
    command -v "$t" >/dev/null || { echo "bench-record: $t not found" >&2; exit 2; }
done

# Sizes: ~2-3 s per throughput run on the project's VM.
PIPE_PINNED_LOOPS=1000000   # both processes on CPU 0: ~450k ops/s untraced
PIPE_FREE_LOOPS=70000       # unpinned: ~27k ops/s when the two land on different CPUs
PIPE_RT_LOOPS=$PIPE_PINNED_LOOPS
[ "$ONLY" != rt ] || PIPE_RT_LOOPS=$((PIPE_PINNED_LOOPS / 2))
LAT_SECONDS=5
B2F_SECONDS=20
B2F_REPS=4                  # breach-to-freeze runs per condition: 4 x 30 captures
TRACING=/sys/kernel/tracing
T0=$SECONDS
LIMIT=590                   # no run starts that could end after this many seconds

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rtwhy-bench-record.XXXXXX")
PLAIN=$TRACING/instances/bench-plain-$$
CHILD=
SPINNER=
STOPPED=0
PRE_INSTANCES=" $(ls "$TRACING/instances" 2>/dev/null | tr '\n' ' ') "

remove_plain() {
    if [ -d "$PLAIN" ]; then
        echo 0 > "$PLAIN/tracing_on" 2>/dev/null || true
        rmdir "$PLAIN" 2>/dev/null || echo "bench-record: could not remove $PLAIN" >&2
    fi
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    set +e
    if [ -n "$CHILD" ]; then kill -TERM "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null; fi
    if [ -n "$SPINNER" ]; then kill -TERM "$SPINNER" 2>/dev/null; wait "$SPINNER" 2>/dev/null; fi
    remove_plain
    # an rtwhy we started and that died without cleaning up: its instance is rtwhy-<pid>
    # with the pid gone and was not there when we started
    local d pid
    for d in "$TRACING"/instances/rtwhy-*; do
        [ -d "$d" ] || continue
        pid=${d##*/rtwhy-}
        case "$PRE_INSTANCES" in *" rtwhy-$pid "*) continue ;; esac
        kill -0 "$pid" 2>/dev/null || rmdir "$d" 2>/dev/null || true
    done
    if [ -n "$KEEP" ] && [ -d "$WORK/raw" ]; then
        mkdir -p "$KEEP" && cp -r "$WORK/raw/." "$KEEP/" || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ -d "$TRACING/instances" ] || mount -t tracefs nodev "$TRACING"

if [ -z "$RTWHY" ]; then
    [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
    cargo build --release --locked -q -p rtwhy --bin rtwhy
    RTWHY="$("$ROOT/scripts/target-dir.sh")/release/rtwhy"
fi
[ -x "$RTWHY" ] || { echo "bench-record: no rtwhy binary at $RTWHY" >&2; exit 2; }
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || { echo "bench-record: no rtwhy binary at $BEFORE (--before)" >&2; exit 2; }
# C0/C1 keep rtwhy's own threads on one CPU: with --recorder-cpus where rtwhy has it, else
# by running rtwhy under taskset (the command sets its own affinity in every workload here)
RECORDER_CPUS=0
"$RTWHY" record --help 2>/dev/null | grep -q -- --recorder-cpus && RECORDER_CPUS=1

# The disturbance: SCHED_FIFO spinner that checks the clock itself, refuses CPU 0, stops on its
# own after TOTAL_S (plus alarm() and RLIMIT_RTTIME as backstops).
cat > "$WORK/spin.c" <<'EOF'
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: spin CPU PRIO SPIN_US PERIOD_MS TOTAL_S\n"); return 2; }
    int cpu = atoi(argv[1]), prio = atoi(argv[2]);
    long long spin = atoll(argv[3]) * 1000, period = atoll(argv[4]) * 1000000LL, total = atoll(argv[5]) * 1000000000LL;
    if (cpu == 0 || spin <= 0 || spin >= period / 10 || total <= 0 || total > 120000000000LL) {
        fprintf(stderr, "spin: refused (CPU 0, duty over 10 %%, or over 120 s)\n"); return 2;
    }
    alarm((unsigned)(atoll(argv[5]) + 3));           /* backstop: SIGALRM terminates */
    struct rlimit rl = { 500000, 1000000 };          /* RT CPU time without sleeping, us */
    setrlimit(RLIMIT_RTTIME, &rl);
    cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("spin: affinity"); return 1; }
    struct sched_param p = { .sched_priority = prio };
    if (sched_setscheduler(0, SCHED_FIFO, &p)) { perror("spin: SCHED_FIFO"); return 1; }
    long long start = now(), next = start;
    unsigned rnd = (unsigned)start;
    while (now() - start < total) {
        /* every PERIOD plus a random 0-999 us, so that the spin does not keep one fixed
           phase against a 1 ms cyclictest: each spin overlaps its timer expiry with about
           the same chance */
        next += period;
        rnd = rnd * 1103515245u + 12345u;
        long long at = next + (long long)((rnd >> 8) % 1000) * 1000;
        struct timespec ts = { at / 1000000000LL, at % 1000000000LL };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        long long t0 = now();
        while (now() - t0 < spin) { }                /* bounded by the clock, not by a signal */
    }
    return 0;
}
EOF
gcc -O2 -Wall -o "$WORK/spin" "$WORK/spin.c"
mkdir -p "$WORK/raw"
RAW=$WORK/raw

# run SECONDS NAME CMD...: runs CMD bounded by SECONDS, stdout/stderr to $RAW/NAME.{out,err}.
# The child runs in the background so that a signal to this script reaches the trap at once.
run() {
    local limit=$1 name=$2; shift 2
    if [ "$STOPPED" = 1 ] || [ $((SECONDS - T0 + limit)) -gt $LIMIT ]; then
        [ "$STOPPED" = 1 ] || echo "bench-record: time budget spent: skipping $name and every later run" >&2
        STOPPED=1
        return 0
    fi
    timeout -s TERM -k 5 "$limit" "$@" > "$RAW/$name.out" 2> "$RAW/$name.err" < /dev/null &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=
    echo "$rc" > "$RAW/$name.rc"
    [ "$rc" -lt 124 ] || echo "bench-record: $name ended with status $rc (timeout or signal)" >&2
}
say() { printf '[%3ds] %s\n' $((SECONDS - T0)) "$*" >&2; }

# rtwhy's event list: from a short session of its own.
say "reading rtwhy's default preset from a short session"
run 30 warmup "$RTWHY" record -t 100us --out "$RAW/warmup" --duration 3600s -- sleep 0.3
EVENTS=$("$ROOT/scripts/recorded-events.py" "$RAW/warmup/session.json")
say "events: $EVENTS"

plain_on() {
    mkdir "$PLAIN"
    echo 0 > "$PLAIN/tracing_on"
    echo 1 > "$PLAIN/options/overwrite"
    echo 4096 > "$PLAIN/buffer_size_kb"
    echo mono > "$PLAIN/trace_clock"
    local e n=0
    for e in $EVENTS; do
        if [ -e "$PLAIN/events/${e%%:*}/${e#*:}/enable" ]; then
            echo 1 > "$PLAIN/events/${e%%:*}/${e#*:}/enable"; n=$((n + 1))
        fi
    done
    echo "$n" > "$RAW/plain-events"
    echo 1 > "$PLAIN/tracing_on"
}

# cond_run COND NAME LIMIT RTWHY_ARGS -- CMD...: runs CMD in condition A, B, C, C0, C1 or D.
cond_run() {
    local cond=$1 name=$2 limit=$3; shift 3
    local rargs=()
    while [ "$1" != -- ]; do rargs+=("$1"); shift; done
    shift
    case $cond in
        A) run "$limit" "$name" "$@" ;;
        B) plain_on; run "$limit" "$name" "$@"; remove_plain ;;
        C|C0|C1|D)
            local pre=() bin=$RTWHY
            [ "$cond" != D ] || bin=$BEFORE
            if [ "$cond" = C0 ] || [ "$cond" = C1 ]; then
                if [ "$RECORDER_CPUS" = 1 ]; then
                    rargs+=(--recorder-cpus "${cond#C}")
                else
                    pre=(taskset -c "${cond#C}")
                fi
            fi
            local try
            for try in 1 2; do
                run "$limit" "$name" "${pre[@]}" "$bin" record "${rargs[@]}" --out "$RAW/$name.rec" -- "$@"
                # rtwhy failed before arming (status 2, no session.json): say so, retry once
                [ "$(cat "$RAW/$name.rc" 2>/dev/null)" = 2 ] && [ ! -f "$RAW/$name.rec/session.json" ] || break
                echo "bench-record: $name: rtwhy failed to start: $(tail -1 "$RAW/$name.err")" >&2
                cp "$RAW/$name.err" "$RAW/$name.failed-start-$try"
                rm -rf "$RAW/$name.rec"
            done ;;
    esac
    # keep session.json only (the captures can be megabytes each)
    if [ -d "$RAW/$name.rec" ]; then
        find "$RAW/$name.rec" -type f ! -name session.json -delete
    fi
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# --- 1. throughput
# A condition list per row; --only rt leaves the other two rows empty.
PINNED_CONDS="A B C C1" FREE_CONDS="A B C" RT_CONDS="A B C ${BEFORE:+D}"
[ "$ONLY" != rt ] || PINNED_CONDS= FREE_CONDS=
[ "$ONLY" != b2f ] || PINNED_CONDS= FREE_CONDS= RT_CONDS=
for rep in $(seq "$REPS"); do
    for cond in $PINNED_CONDS; do
        say "throughput pinned  rep $rep $cond"
        cond_run $cond "pipe-pinned-$cond-$rep" 60 -t 100us --duration 3600s -- \
            taskset -c 0 perf bench sched pipe -l $PIPE_PINNED_LOOPS
    done
    # The recorded command real-time, as an RT application is: the BPF programs then do
    # their whole work for its switches and wake-ups. On CPU 1 (no SCHED_FIFO load on CPU
    # 0; RT throttling bounds it to 95 %). Throttling stops it for 50 ms of every second,
    # so any threshold under that captures several times a run, and the captures' saving
    # and diagnosis weigh on the row (runs before 2026-11-27 used -t 10ms and did):
    # -t 1s captures nothing, and the detector's work per event is the same.
    for cond in $RT_CONDS; do
        say "throughput rt      rep $rep $cond"
        cond_run $cond "pipe-rt-$cond-$rep" 60 -t 1s --duration 3600s -- \
            taskset -c 1 chrt -f 10 perf bench sched pipe -l $PIPE_RT_LOOPS
    done
    for cond in $FREE_CONDS; do
        say "throughput free    rep $rep $cond"
        cond_run $cond "pipe-free-$cond-$rep" 60 -t 100us --duration 3600s -- \
            perf bench sched pipe -l $PIPE_FREE_LOOPS
    done
done

# --- 2. latency, no extra load
LAT_REPS=$REPS
case $ONLY in "") ;; b2f) LAT_REPS=0 ;; *) LAT_REPS=0; B2F_REPS=0 ;; esac
for rep in $(seq "$LAT_REPS"); do
    for cond in A B C C0; do
        say "latency            rep $rep $cond"
        cond_run $cond "lat-$cond-$rep" $((LAT_SECONDS + 30)) -t 10ms --duration 3600s -- \
            cyclictest -m -q -p 80 -i 1000 -a 1 -t 1 -D $LAT_SECONDS -h 2000
    done
done

# --- 3. breach-to-freeze, disturbed by the spinner on CPU 1
for rep in $(seq $B2F_REPS); do
    for cond in C C0; do
        say "breach-to-freeze   rep $rep $cond"
        "$WORK/spin" 1 95 300 50 $((B2F_SECONDS + 3)) &
        SPINNER=$!
        cond_run $cond "b2f-$cond-$rep" $((B2F_SECONDS + 30)) -t 50us --after 0 --max-spikes 30 --duration 3600s -- \
            cyclictest -m -q -p 80 -i 1000 -a 1 -t 1 -D $B2F_SECONDS
        kill -TERM "$SPINNER" 2>/dev/null || true
        wait "$SPINNER" 2>/dev/null || true
        SPINNER=
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
say "done; load average: $LOAD_END"

# --- report
python3 - "$RAW" "$REPS" "$PIPE_PINNED_LOOPS" "$PIPE_FREE_LOOPS" "$LOAD_START" "$LOAD_END" "$RTWHY" "$RECORDER_CPUS" "$ONLY" "$PIPE_RT_LOOPS" "$BEFORE" <<'EOF'
import glob, json, math, os, re, statistics, sys
raw, reps, pinned_loops, free_loops = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
load_start, load_end, rtwhy, only, rt_loops = sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[9], sys.argv[10]
before = sys.argv[11]
pin = (lambda n: "--recorder-cpus %d" % n) if sys.argv[8] == "1" else (lambda n: "under taskset -c %d" % n)

def med(v):
    return statistics.median(v) if v else float("nan")

def pct(sorted_v, q):
    # nearest rank
    if not sorted_v:
        return float("nan")
    k = math.ceil(q * len(sorted_v) - 1e-9) - 1
    return sorted_v[max(0, min(len(sorted_v) - 1, k))]

def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ""

def session(name):
    try:
        with open(os.path.join(raw, name + ".rec", "session.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def ops(name):
    m = re.search(r"^\s*(\d+) ops/sec", read(os.path.join(raw, name + ".out")), re.M)
    return int(m.group(1)) if m else None

armed = []
def note_armed(name):
    s = session(name)
    if s:
        armed.append(s["session"]["armed"]["armed_after_ns"])
    return s

print("## rtwhy record overhead: results\n")
print("%s, %s, rtwhy %s%s; load average %s at the start, %s at the end\n" % (
    os.uname().release, "%d CPUs" % os.cpu_count(), rtwhy,
    " (D: the same under the older rtwhy %s)" % before if before else "", load_start, load_end))
if only != "b2f":
    print("### 1. Throughput: `perf bench sched pipe`, ops/s, median of %d\n" % reps)
    print("| workload | rtwhy's threads | A: no tracing | B: plain instance | C: `rtwhy record` | B/A | C/A | C/B | loss of C beyond B |")
    print("|---|---|---|---|---|---|---|---|---|")
    samples = {}
    paired = []
    for variant, cconds, label in (
            ("pinned", ("C", "C1"), "`taskset -c 0 perf bench sched pipe -l %s`" % pinned_loops),
            ("rt", ("C", "D") if before else ("C",), "`taskset -c 1 chrt -f 10 perf bench sched pipe -l %s` (recorded command real-time, `-t 1s`)" % rt_loops),
            ("free", ("C",), "`perf bench sched pipe -l %s` (unpinned)" % free_loops)):
        if only == "rt" and variant != "rt":
            continue
        m = {}
        captured = {}
        for cond in ("A", "B") + cconds:
            v = [ops("pipe-%s-%s-%d" % (variant, cond, r)) for r in range(1, reps + 1)]
            if cond.startswith("C"):
                for r in range(1, reps + 1):
                    sess = note_armed("pipe-%s-%s-%d" % (variant, cond, r))
                    if sess:
                        captured[cond] = captured.get(cond, 0) + len(sess["session"]["captures"])
            samples[(variant, cond)] = v
            m[cond] = med([x for x in v if x is not None])
        for c in cconds:
            where = {"C": "anywhere", "D": "anywhere, older rtwhy (D)"}.get(c, "CPU 1 (`%s`)" % pin(1))
            print("| %s | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %.3f | %.1f %% |" % (
                label, where, m["A"], m["B"], m[c], m["B"] / m["A"], m[c] / m["A"], m[c] / m["B"],
                100 * (1 - m[c] / m["B"])))
            # B and C of one repetition ran back to back: the ratio within a repetition
            # cancels the host's slower drift, which the medians do not.
            r = sorted(cv / bv for bv, cv in zip(samples[(variant, "B")], samples[(variant, c)]) if bv and cv)
            if r:
                paired.append("- %s %s/B: median %.3f (loss beyond B %.1f %%), middle half %.3f-%.3f, %d repetitions, %d captures taken" % (
                    variant, c, med(r), 100 * (1 - med(r)), pct(r, .25), pct(r, .75), len(r), captured.get(c, 0)))
        if "D" in cconds:
            # C and D of one repetition ran back to back: the newer rtwhy against the older one
            r = sorted(cv / dv for dv, cv in zip(samples[(variant, "D")], samples[(variant, "C")]) if dv and cv)
            if r:
                paired.append("- %s C/D (newer over older rtwhy): median %.3f, middle half %.3f-%.3f, %d repetitions" % (
                    variant, med(r), pct(r, .25), pct(r, .75), len(r)))
    print("\nC/B within each repetition (B and C ran back to back), median and middle half:\n")
    print("\n".join(paired))
    print("\nSamples (ops/s, in run order):\n")
    for (variant, cond), v in samples.items():
        print("- %s %s: %s" % (variant, cond, " ".join("-" if x is None else str(x) for x in v)))

if only in ("rt", "throughput"):
    sys.exit(0)
labels = {"A": "A: no tracing", "B": "B: plain instance", "C": "C: `rtwhy record -t 10ms`",
          "C0": "C0: `rtwhy record -t 10ms`, %s" % pin(0)}
if not only:
    print("\n### 2. Latency: `cyclictest -m -q -p 80 -i 1000 -a 1 -t 1 -D 5 -h 2000` on CPU 1, no extra load, us\n")
    print("Per run percentiles from the histogram (overflows count as > 2000 us), median over %d runs; "
          "worst = the largest max of any run.\n" % reps)
    print("| condition | p50 | p99 | p99.9 | max (median) | max (worst) | samples/run | captures (-t 10ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for cond in ("A", "B", "C", "C0"):
        rows, caps = [], []
        for r in range(1, reps + 1):
            name = "lat-%s-%d" % (cond, r)
            out = read(os.path.join(raw, name + ".out"))
            hist = [(int(a), int(b)) for a, b in re.findall(r"^(\d{6}) (\d{6,})$", out, re.M)]
            over = re.search(r"^# Histogram Overflows: (\d+)", out, re.M)
            mx = re.search(r"^# Max Latencies: (\d+)", out, re.M)
            if not hist or not mx:
                continue
            vals = []
            for us, n in hist:
                vals.extend([us] * n)
            vals.extend([2001] * (int(over.group(1)) if over else 0))
            vals.sort()
            rows.append((pct(vals, .5), pct(vals, .99), pct(vals, .999), int(mx.group(1)), len(vals)))
            if cond.startswith("C"):
                s = note_armed(name)
                if s:
                    caps.append(len(s["session"]["captures"]))
        if not rows:
            print("| %s | - | - | - | - | - | - | - |" % labels[cond])
            continue
        col = lambda i: [x[i] for x in rows]
        print("| %s | %g | %g | %g | %g | %d | %g | %s |" % (
            labels[cond], med(col(0)), med(col(1)), med(col(2)), med(col(3)), max(col(3)), med(col(4)),
            "/".join(map(str, caps)) if caps else "-"))

print("\n### 3. Breach-to-freeze: `rtwhy record -t 50us --after 0 --max-spikes 30 -- cyclictest -m -q -p 80 "
      "-i 1000 -a 1 -t 1 -D 20`, FIFO 95 spinner on CPU 1 (300 us every 50 ms + 0-1 ms)\n")
print("Per-capture values pooled over the runs; p99 is the nearest rank.\n")
print("| condition | runs | captures | freeze delay p50 | p99 | max | dead time p50 | max | detect delay p50 | p99 | lost breaches (dead time / after max) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for cond in ("C", "C0"):
    fd, dt, dd, runs, lost_dead, lost_max = [], [], [], 0, 0, 0
    for name in sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(raw, "b2f-%s-*.rec" % cond))):
        s = note_armed(name)
        if not s:
            continue
        runs += 1
        for c in s["session"]["captures"]:
            fd.append(c["freeze_delay_ns"]); dt.append(c["dead_time_ns"]); dd.append(c["detect_delay_ns"])
        lost_dead += s["session"].get("breaches_in_dead_time", 0)
        lost_max += s["session"].get("breaches_after_max", 0)
    fd.sort(); dt.sort(); dd.sort()
    us = lambda ns: "%.0f us" % (ns / 1000)
    print("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %d / %d |" % (
        labels[cond].replace("-t 10ms", "-t 50us"), runs, len(fd), us(pct(fd, .5)), us(pct(fd, .99)), us(fd[-1] if fd else float("nan")),
        us(pct(dt, .5)), us(dt[-1] if dt else float("nan")), us(pct(dd, .5)), us(pct(dd, .99)), lost_dead, lost_max))

failed = sorted(glob.glob(os.path.join(raw, "*.failed-start-*")))
if failed:
    print("\nrtwhy failed to start (status 2 before arming) in %d attempt(s), each retried once:\n" % len(failed))
    for p in failed:
        print("- %s: %s" % (os.path.basename(p), read(p).strip().splitlines()[-1] if read(p).strip() else "?"))
print("\n### 4. Start-up: `session.armed.armed_after_ns`\n")
a = sorted(armed)
print("| runs | median | max |")
print("|---|---|---|")
print("| %d | %.0f ms | %.0f ms |" % (len(a), med(a) / 1e6, a[-1] / 1e6 if a else float("nan")))
EOF
