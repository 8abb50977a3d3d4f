#!/usr/bin/env bash
# Installs what is missing, builds rtwhy, and runs it on a trace bundled with the
# sources (recorded on a PREEMPT_DYNAMIC VM with cyclictest running), so you can see
# what it does before pointing it at your own traces.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
missing=()
command -v cc >/dev/null || missing+=(build-essential)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "rtwhy needs: ${missing[*]}; run as root or install them" >&2
        exit 1
    fi
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust with rustup (https://rustup.rs) and rerun" >&2
    exit 1
fi
cargo build --release --locked -q -p rtwhy
trace="${1:-fixtures/recorded/vm-cyclictest-v7-zstd.dat}"
echo "\$ rtwhy info $trace"
target/release/rtwhy info "$trace"
echo
echo "\$ rtwhy dump $trace | grep -m 12 -E 'cyclictest|sched_switch'"
target/release/rtwhy dump "$trace" | grep -m 12 -E 'cyclictest|sched_switch' || true
echo
echo
echo "\$ rtwhy analyze fixtures/rt_throttling/rt_throttling.dat --threshold 10ms --comm cyclictest | head -12"
target/release/rtwhy analyze fixtures/rt_throttling/rt_throttling.dat --threshold 10ms --comm cyclictest | head -12 || true
echo
echo "\$ rtwhy analyze fixtures/priority_inversion/priority_inversion.dat --threshold 1ms --comm lab-high | head -16"
target/release/rtwhy analyze fixtures/priority_inversion/priority_inversion.dat --threshold 1ms --comm lab-high | head -16 || true
echo
echo "The binary is target/release/rtwhy; try \`rtwhy analyze --help\`, or your own trace.dat."
