#!/usr/bin/env bash
# Measures rtwhy's decoding speed and memory beside `trace-cmd report -R` on the largest
# real traces and on a synthetic trace of at least 1 GiB, and the cost of `rtwhy analyze`
# beside decoding alone (largest fixture, the synthetic trace's seed, the synthetic trace),
# and writes docs/PERFORMANCE.md.
# Usage: scripts/bench.sh [--synthetic-mib N] [--keep-synthetic]   (default 1100 MiB; the
# synthetic trace is written to $TMPDIR or /tmp and removed unless --keep-synthetic)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh test
cargo build --release --locked -q -p rtwhy --bin rtwhy --example bench
"${CARGO_TARGET_DIR:-target}/release/examples/bench" "$@"
