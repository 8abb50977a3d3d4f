#!/usr/bin/env bash
# CI's bounded run: each fuzz target for a bounded time (seconds per target, default
# 20), starting from the committed corpora in fuzz/corpus/<target>/ (seeded from the
# real traces by scripts/fuzz-seed.sh); new inputs go to fuzz/work/<target>/, so the
# committed corpora stay as they are. Needs the nightly toolchain; installs cargo-fuzz
# if missing. The before-release run is scripts/fuzz-long.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
if ! command -v cargo-fuzz >/dev/null; then
    cargo install cargo-fuzz --locked -q
fi
for target in tracedat page format text zstd; do
    echo "fuzzing $target for ${secs}s"
    mkdir -p "fuzz/work/$target"
    log="fuzz/$target.log"
    if ! cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/work/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz target $target failed (log: $log)" >&2
        exit 1
    fi
    grep -E "^stat::number_of_executed_units" "$log" || true
done
