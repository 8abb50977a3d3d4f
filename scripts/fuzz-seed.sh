#!/usr/bin/env bash
# Rebuilds the committed fuzz corpora (fuzz/corpus/<target>/) from every trace of the
# wild corpus and the fixtures: event format texts, ring-buffer pages, small whole v6
# files rewritten from each trace's first records (crates/rtwhy-decode/examples/
# fuzz_seeds.rs), the first 4 KiB of each original file, and the first 4 KiB of each
# stored trace-cmd report/raw text and cyclictest output. Kept well under 2 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fuzz/corpus
rm -rf "$out"
mkdir -p "$out/tracedat" "$out/page" "$out/format" "$out/text"
traces=()
for f in ../shared/corpus/wild/*.dat fixtures/*/*.dat fixtures/synthetic/*/*.dat; do
    [ -f "$f" ] && traces+=("$f")
done
cargo run -q -p rtwhy-decode --example fuzz_seeds -- "$out" "${traces[@]}"
for f in "${traces[@]}"; do
    n=$(basename "$f" .dat)
    head -c 4096 "$f" > "$out/tracedat/$n-head"
    for kind in report raw; do
        z="${f%.dat}.$kind.txt.zst"
        if [ -f "$z" ]; then
            zstd -dc "$z" | head -c 4096 > "$out/text/$n-$kind" || true
        fi
    done
done
for f in fixtures/*/*.txt; do
    head -c 4096 "$f" > "$out/text/$(basename "$f" .txt)"
done
# Empty files teach the fuzzer nothing.
find "$out" -type f -empty -delete
du -sh "$out"/* "$out"
