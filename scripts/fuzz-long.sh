#!/usr/bin/env bash
# Before-release fuzzing: each target in turn (one at a time, at nice 10, since the
# machine is shared) for SECS seconds (default 600), starting from the committed corpora
# in fuzz/corpus/<target>/ plus what earlier runs found in fuzz/work/<target>/.
# Prints executions, coverage and findings per target; exits 1 if any target crashed.
# A crash input lands in fuzz/artifacts/<target>/: turn it into a named regression test
# next to the code it broke, then fix it (see docs/DECODING.md, "Fuzzing").
# Usage: scripts/fuzz-long.sh [SECS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(tracedat page format text zstd)
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
if ! command -v cargo-fuzz >/dev/null; then
    cargo install cargo-fuzz --locked -q || exit 2
fi
failed=0
printf '%-9s %12s %8s %8s %9s %s\n' target execs cov ft corpus findings
for target in "${targets[@]}"; do
    mkdir -p "fuzz/work/$target" "fuzz/artifacts/$target"
    log="fuzz/$target-long.log"
    nice -n 10 cargo +nightly fuzz run --fuzz-dir fuzz "$target" "fuzz/work/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1
    rc=$?
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9A-Za-z]+).*/\1/p' <<<"$last")
    findings=$(grep -E '^artifact_prefix|Test unit written to' "$log" | sed -nE 's/.*written to (.*)/\1/p' | tr '\n' ' ')
    if [ $rc -ne 0 ]; then
        failed=1
        [ -z "$findings" ] && findings="exit $rc (log: $log)"
    fi
    printf '%-9s %12s %8s %8s %9s %s\n' "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${findings:-none}"
done
exit $failed
