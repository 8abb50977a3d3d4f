#!/usr/bin/env bash
# An accelerated soak of an unattended recorder: `rtwhy record` as the systemd unit runs
# it (--max-spikes 0, a disk budget, a storm limit) under a breach storm (a SCHED_FIFO 90
# thread spinning 300 us every 2.3 ms on CPU 1, over cyclictest at FIFO 80 every 1 ms),
# sampling the recorder's RSS, open fds, the session directory's size and the size of
# its overview.json (every wake-up's histogram and the tail by cause) every 10 s.
# At the end: the directory must be under the budget, tracefs must hold no rtwhy
# instance, and the series is printed as a Markdown table (docs/PERFORMANCE.md "Soak").
#
# Usage: sudo scripts/soak-record.sh [MINUTES (default 10)] [BUDGET (default 24M)]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes="${1:-10}"
budget="${2:-24M}"
[ "$(id -u)" -eq 0 ] || { echo "soak-record: needs root (tracefs, BPF, SCHED_FIFO)" >&2; exit 1; }
[ "$(nproc --all)" -ge 2 ] || { echo "soak-record: needs 2 CPUs (the storm runs on CPU 1)" >&2; exit 1; }
command -v cyclictest >/dev/null || { echo "soak-record: cyclictest is missing: scripts/setup.sh test" >&2; exit 1; }
cargo build --release --locked -q -p rtwhy
rtwhy="$(scripts/target-dir.sh)/release/rtwhy"
work=$(mktemp -d /var/tmp/rtwhy-soak.XXXXXX)
out=$work/session
cc -O2 -pthread -o "$work/spin" fixtures/lab/spin.c
secs=$((minutes * 60))

storm_pid=""
rec_pid=""
cleanup() {
    [ -n "$storm_pid" ] && kill "$storm_pid" 2>/dev/null || true
    pkill -f "^$work/spin" 2>/dev/null || true
    [ -n "$rec_pid" ] && kill -TERM "$rec_pid" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

# spin bounds itself to 10 s a run; the loop keeps the storm going for the whole soak.
(
    end=$((SECONDS + secs + 5))
    while [ $SECONDS -lt $end ]; do
        RTWHY_LAB_MARKER=/dev/null "$work/spin" 1 fifo 90 10000 300 2300 >/dev/null 2>&1 || sleep 1
    done
) &
storm_pid=$!

"$rtwhy" record -t 150us --max-spikes 0 --disk-budget "$budget" --min-gap 200ms \
    --buffer-kb 1024 --cpus 0-1 --recorder-cpus 0 --out "$out" \
    -- cyclictest -m -q -p 80 -i 1000 -a 1 -t 1 -D "${secs}s" >"$work/record.out" 2>"$work/record.err" &
rec_pid=$!

series=$work/series.tsv
printf 't_s\trss_kib\tfds\tdir_bytes\toverview_bytes\twakeups\tcaptures_total\ton_disk\tdeleted\n' >"$series"
t0=$SECONDS
while kill -0 "$rec_pid" 2>/dev/null; do
    sleep 10
    kill -0 "$rec_pid" 2>/dev/null || break
    # Each sample tolerates a race with the recorder (du meets a capture deleted under
    # it and exits 1): under `set -e -o pipefail` that would end the soak, and the trap
    # would stop the recorder.
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$rec_pid/status" 2>/dev/null || echo 0)
    fds=$(ls "/proc/$rec_pid/fd" 2>/dev/null | wc -l || true)
    bytes=$(du -sb "$out" 2>/dev/null | cut -f1 || true)
    # The histograms are rewritten with session.json: their size, and the wake-ups they
    # hold, show whether a recorder left running for a week grows them.
    hist=$(python3 -c 'import json,os,sys
p=sys.argv[1]
d=json.load(open(p))
print(os.path.getsize(p), sum(t["wakeups"] for t in d["threads"]))' "$out/overview.json" 2>/dev/null || echo "0 0")
    counts=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(d["session"].get("captures_total",0), len(d["spikes"]), sum(v["captures"] for v in d["dropped"].values()))' "$out/session.json" 2>/dev/null || echo "0 0 0")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$((SECONDS - t0))" "$rss" "$fds" "${bytes:-0}" "${hist// /$'\t'}" "${counts// /$'\t'}" | tee -a "$series"
done
rc=0
wait "$rec_pid" || rc=$?
rec_pid=""
echo "rtwhy record exited $rc"
tail -n 12 "$work/record.out"
left=$(ls /sys/kernel/tracing/instances | grep '^rtwhy-' || true)
[ -z "$left" ] || { echo "soak-record: tracefs instances left: $left" >&2; exit 1; }
echo "tracefs: no rtwhy instance left"
echo
echo "| t (s) | RSS (KiB) | fds | dir (bytes) | overview.json (bytes) | wake-ups counted | captures | on disk | deleted |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
tail -n +2 "$series" | while IFS=$'\t' read -r a b c d e f g h i; do echo "| $a | $b | $c | $d | $e | $f | $g | $h | $i |"; done
echo
echo "session directory kept in $out"
