#!/usr/bin/env bash
# Rebuilds the committed fuzz corpora (fuzz/corpus/<target>/) from every trace of the
# wild corpus and the fixtures: event format texts, ring-buffer pages, small whole v6
# files rewritten from each trace's first records (crates/rtwhy-decode/examples/
# fuzz_seeds.rs), the first 4 KiB of each original file, and the first 4 KiB of each
# stored trace-cmd report/raw text and cyclictest output, and zstd frames written by the
# zstd command. Kept well under 2 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
out=fuzz/corpus
rm -rf "$out"
mkdir -p "$out/tracedat" "$out/page" "$out/format" "$out/text" "$out/zstd"
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
# zstd frames of the reference encoder: the decoder's test vectors and two small ones.
cp crates/rtwhy-decode/tests/data/zstd/*.zst "$out/zstd/"
sample=$(mktemp)
RTWHY_ZSTD_SAMPLE="$sample" cargo test -q -p rtwhy-decode --test zstd -- --ignored write_sample >/dev/null
head -c 3000 "$sample" | zstd -q -19 > "$out/zstd/small19.zst"
head -c 700 "$sample" | zstd -q -1 --no-check > "$out/zstd/tiny1.zst"
rm -f "$sample"
# Empty files teach the fuzzer nothing.
find "$out" -type f -empty -delete
du -sh "$out"/* "$out"
