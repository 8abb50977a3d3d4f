#!/usr/bin/env bash
# Boots the PREEMPT_RT guest once (scripts/rt-guest.sh) and checks `rtwhy record` with
# the kernel's timerlat tracer as its probe (docs/recording.md), on isolated CPU 1 under
# a small bounded load:
#   - the session says `probe: timerlat` and writes at least one capture;
#   - `rtwhy analyze --format json` on the first capture gives timerlat periods over the
#     threshold, each with a primary verdict;
#   - the tracer's global settings (osnoise/*), the top-level tracer and the instance list
#     are as they were before, after the session and after a second one ended by SIGINT.
# Exit 0 when all hold, 1 when one does not, 2 when the guest could not run. Run as root
# (under the live lock); it builds the debug binary first. Environment: everything
# scripts/rt-guest.sh reads; RTWHY_GUEST_TIMEOUT (default 400 s).
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
cargo build -q -p rtwhy --locked
target=$(scripts/target-dir.sh)
exe=$(cd "$target/debug" && pwd -P)/rtwhy
[ -x "$exe" ] || { echo "rt-guest-timerlat: $exe was not built" >&2; exit 2; }

shared=$(mktemp -d /tmp/rtwhy-guest-timerlat.XXXXXX)
cat >"$shared/check.sh" <<EOF
#!/bin/bash
# Runs inside the guest.
exe=$(printf %q "$exe")
EOF
cat >>"$shared/check.sh" <<'EOF'
failed=0
fail() { echo "rt-guest-timerlat: FAIL: $*"; failed=1; }
T=/sys/kernel/tracing
state() {
    for f in $T/osnoise/*; do [ -f "$f" ] && echo "$f=$(cat "$f" 2>/dev/null)"; done
    echo "current_tracer=$(cat $T/current_tracer)"
    echo "tracing_on=$(cat $T/tracing_on)"
    ls $T/instances
}
before=$(state)
grep -qw timerlat $T/available_tracers || fail "this guest kernel has no timerlat tracer"
out=$RTWHY_GUEST_SHARED/rec
# A small load on the measured CPU, bounded in time: a SCHED_OTHER copy loop. The
# session ends at its third capture; --duration only bounds it, and counts from the
# start: arming took 7-20 s under TCG on a loaded host (a 20 s bound once left 4 s of
# recording and no sample streamed yet).
timeout 60 taskset -c 1 dd if=/dev/zero of=/dev/null bs=64k 2>/dev/null &
load=$!
"$exe" record --threshold 50us --max-spikes 3 --duration 60s --probe-cpus 1 -o "$out" \
    >"$RTWHY_GUEST_SHARED/record.txt" 2>&1
code=$?
kill $load 2>/dev/null; wait $load 2>/dev/null
cat "$RTWHY_GUEST_SHARED/record.txt"
# 1: breaches were captured (docs/recording.md's exit statuses).
[ "$code" -eq 0 ] || [ "$code" -eq 1 ] || fail "rtwhy record exited $code"
grep -q 'probe: timerlat' "$RTWHY_GUEST_SHARED/record.txt" || fail "the session did not use timerlat"
first=$(ls "$out"/spike-*.dat 2>/dev/null | head -1)
if [ -z "$first" ]; then
    fail "no capture written"
else
    echo "captures: $(ls "$out"/spike-*.dat | wc -l)"
    "$exe" analyze --threshold 50us "$first" | sed -n '/^timerlat:/,$p' | head -40
    "$exe" analyze --threshold 50us --format json "$first" >"$RTWHY_GUEST_SHARED/a.json"
    python3 - "$RTWHY_GUEST_SHARED/a.json" <<'PY' || fail "analyze on $first gave no timerlat period with a verdict"
import json, sys
d = json.load(open(sys.argv[1]))
spikes = (d.get("timerlat") or {}).get("spikes") or []
print(f"timerlat periods over 50 us in {sys.argv[1]}: {len(spikes)}")
for s in spikes[:5]:
    print(f"  cpu {s['cpu']} #{s['seqnum']} {s['context']} {s['latency_ns']} ns: {s['primary']}")
sys.exit(0 if spikes and all(s.get("primary") for s in spikes) else 1)
PY
fi
after=$(state)
[ "$before" = "$after" ] || { fail "tracefs settings changed"; diff <(echo "$before") <(echo "$after"); }
# Ctrl-C during the session: the same settings must come back.
timeout -s INT 15 "$exe" record --threshold 50us --probe-cpus 1 -o "$RTWHY_GUEST_SHARED/int" \
    >"$RTWHY_GUEST_SHARED/record-int.txt" 2>&1
echo "after SIGINT: exit $?, $(grep -c '^spike-' "$RTWHY_GUEST_SHARED/record-int.txt") captures, $(grep -o 'ended by[^;]*\|interrupted (SIGINT)' "$RTWHY_GUEST_SHARED/record-int.txt" | head -1)"
grep -q 'probe: timerlat' "$RTWHY_GUEST_SHARED/record-int.txt" || fail "the interrupted session did not use timerlat"
after=$(state)
[ "$before" = "$after" ] || { fail "tracefs settings changed after SIGINT"; diff <(echo "$before") <(echo "$after"); }
exit $failed
EOF
chmod +x "$shared/check.sh"

start=$SECONDS
set +e
scripts/rt-guest.sh --shared "$shared" --timeout "${RTWHY_GUEST_TIMEOUT:-400}" -- "$shared/check.sh"
code=$?
set -e
echo "rt-guest-timerlat: guest run took $((SECONDS - start)) s (output in $shared)"
case $code in
0) echo "rt-guest-timerlat: passed" ;;
1) echo "rt-guest-timerlat: failed" >&2 ;;
*) echo "rt-guest-timerlat: the guest run failed (exit $code)" >&2 ;;
esac
exit "$code"
