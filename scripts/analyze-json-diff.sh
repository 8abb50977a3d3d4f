#!/usr/bin/env bash
# Writes `rtwhy analyze --format json` of every fixture and every wild trace with one
# binary into a directory, so the JSON of two builds can be compared with `diff -r`.
# Usage: scripts/analyze-json-diff.sh RTWHY_BINARY OUT_DIR
# (a restructuring must leave the output identical except where it means to change it;
# scripts/analyze-json-compare.py BEFORE AFTER compares two such directories).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$1
out=$2
mkdir -p "$out"
find fixtures /work/shared/corpus/wild -maxdepth 3 \( -name '*.dat' -o -name '*.report.txt' -o -name '*.txt' \) 2>/dev/null |
  grep -v '\.raw\.txt$' | sort | while read -r f; do
  name=$(echo "$f" | tr '/' '_')
  timeout 300 "$bin" analyze --format json "$f" >"$out/$name.json" 2>"$out/$name.err"
  echo "exit $?" >>"$out/$name.err"
done
