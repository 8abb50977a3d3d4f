#!/usr/bin/env bash
# Measures `rtwhy tui` on a capture of 1 million events: opening it and drawing the first
# frame, and redraws after pan and zoom keys (median, p99), beside the peer on the same
# file in the same run: `trace-cmd report` to its first event line and to the end.
# Usage: scripts/bench-tui.sh [TRACE]   (default: $TMPDIR/rtwhy-tui-bench-1m.dat, written
# by the benchmark when missing: the real records of fixtures/recorded/vm-net-v7-zstd.dat
# repeated with shifted timestamps, so synthetic in size only)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh test
trace="${1:-${TMPDIR:-/tmp}/rtwhy-tui-bench-1m.dat}"
echo "machine: $(uname -srm), $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg); commit $(git rev-parse --short HEAD)"
cargo bench -q --locked -p rtwhy-tui --bench tui -- --trace "$trace"

best() { sort -n | head -n 1; }
TIMEFORMAT=%R
echo "peer, best of 3: trace-cmd $(trace-cmd --version 2>&1 | grep -m1 -o 'version [^ ]*' || true)"
# trace-cmd dies of SIGPIPE once grep has its line: that is the point, not a failure.
first=$(for _ in 1 2 3; do { time (trace-cmd report "$trace" 2>/dev/null | grep -m 1 -q ': sched_' || true) ; } 2>&1; done | best)
full=$(for _ in 1 2 3; do { time (trace-cmd report "$trace" >/dev/null 2>&1) ; } 2>&1; done | best)
echo "trace-cmd report to its first event line: ${first} s; to the end: ${full} s"
