#!/usr/bin/env bash
# The README's first command. Installs what building rtwhy needs (scripts/setup.sh, the
# same path the test command takes), builds it, and shows its main job: as root on a
# machine where tracing works, it induces a real latency cause (a SCHED_FIFO 90 thread
# preempting rtwhy's FIFO 80 probe on one CPU), records it with `rtwhy record` and
# names the cause; then it analyses traces bundled with the sources, which works anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh build
. scripts/spaceless-target.sh
cargo build --release --locked -q -p rtwhy
rtwhy="$(scripts/target-dir.sh)/release/rtwhy"
"$rtwhy" --version

show() {
    echo
    echo "\$ $*"
}

live_reason() {
    [ "$(id -u)" -eq 0 ] || { echo "not root"; return; }
    [ "$(nproc --all)" -ge 2 ] || { echo "one CPU only (the demo needs a CPU to disturb besides CPU 0)"; return; }
    if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || { echo "tracefs cannot be mounted"; return; }
    fi
    [ -w /sys/kernel/tracing/instances ] || { echo "tracefs instances are not writable"; return; }
}

why_not=$(live_reason)
live_status=0
if [ -z "$why_not" ]; then
    keep=$(mktemp -d /tmp/rtwhy-demo.XXXXXX)
    cpu=$(($(nproc --all) - 1))
    show "sudo rtwhy selftest --scenarios preemption --victim probe --cpu $cpu --keep $keep"
    "$rtwhy" selftest --scenarios preemption --victim probe --cpu "$cpu" --keep "$keep" || live_status=$?
    # Show a capture of the induced cause (this machine's own noise makes others too).
    capture=""
    for f in $(find "$keep" -name 'spike-*.dat' | sort); do
        [ -n "$capture" ] || capture=$f
        if "$rtwhy" analyze "$f" | grep -q '^  cause: preemption'; then
            capture=$f
            break
        fi
    done
    if [ -n "$capture" ]; then
        # The report leads with the spike the recorder's breach marker flagged (then the
        # highest-priority victim's): the one the demo induced.
        show "rtwhy report $capture | head -40"
        "$rtwhy" report "$capture" | head -40 || true
        echo "(every capture of that session, with its diagnosis beside it, is in $keep)"
    fi
else
    echo
    echo "rtwhy demo: skipping the live recording ($why_not; it needs root and tracefs); the offline analysis follows"
fi

trace=fixtures/recorded/vm-cyclictest-v7-zstd.dat
show "rtwhy info $trace"
"$rtwhy" info "$trace"
show "rtwhy analyze fixtures/rt_throttling/rt_throttling.dat --threshold 10ms --comm cyclictest | head -12"
"$rtwhy" analyze fixtures/rt_throttling/rt_throttling.dat --threshold 10ms --comm cyclictest | head -12 || true
show "rtwhy analyze fixtures/priority_inversion/priority_inversion.dat --threshold 1ms --comm lab-high | head -16"
"$rtwhy" analyze fixtures/priority_inversion/priority_inversion.dat --threshold 1ms --comm lab-high | head -16 || true
echo
echo "The binary is $rtwhy; try \`$rtwhy analyze --help\`, \`sudo $rtwhy record -- your-app\`, or your own trace.dat."
if [ "$live_status" -ne 0 ]; then
    echo "rtwhy demo: the live recording did not name the induced cause (selftest exit $live_status); see above" >&2
    exit "$live_status"
fi
