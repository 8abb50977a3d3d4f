#!/usr/bin/env bash
# Runs each fuzz target for a bounded time (seconds per target, default 20), seeded
# from the real corpus. Needs the nightly toolchain; installs cargo-fuzz if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
if ! command -v cargo-fuzz >/dev/null; then
    cargo install cargo-fuzz --locked -q
fi
seeds=fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds/tracedat" "$seeds/page" "$seeds/format" "$seeds/text"
for f in ../shared/corpus/wild/*.dat fixtures/recorded/*.dat; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .dat)
    head -c 65536 "$f" > "$seeds/tracedat/$n"
    tail -c 4096 "$f" > "$seeds/page/$n"
    zstd -dc "${f%.dat}.report.txt.zst" 2>/dev/null | head -c 8192 > "$seeds/text/$n" || true
done
for f in /sys/kernel/tracing/events/sched/*/format /sys/kernel/tracing/events/irq/*/format; do
    [ -r "$f" ] && cp "$f" "$seeds/format/$(basename "$(dirname "$f")")"
done
printf 'name: x\nID: 1\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: "a=%%d", REC->a\n' > "$seeds/format/min"
for target in tracedat page format text; do
    echo "fuzzing $target for ${secs}s"
    mkdir -p "fuzz/corpus/$target"
    log="fuzz/$target.log"
    if ! cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/corpus/$target" "$seeds/$target" -- \
        -max_total_time="$secs" -max_len=65536 -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz target $target failed (log: $log)" >&2
        exit 1
    fi
    grep -E "^stat::number_of_executed_units" "$log" || true
done
