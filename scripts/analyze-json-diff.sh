#!/usr/bin/env bash
# Writes `rtwhy analyze --format json` of every fixture and every wild trace with one
# binary into a directory, so the JSON of two builds can be compared with `diff -r`.
# Usage: scripts/analyze-json-diff.sh RTWHY_BINARY OUT_DIR [RTWHY ARGS...]
# (default arguments `analyze --format json`; e.g. `report --format svg` compares the
# timelines of two builds the same way)
# (a restructuring must leave the output identical except where it means to change it;
# scripts/analyze-json-compare.py BEFORE AFTER compares two such directories).
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$1
out=$2
shift 2
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(analyze --format json)
mkdir -p "$out"
find fixtures /work/shared/corpus/wild -maxdepth 3 \( -name '*.dat' -o -name '*.report.txt' -o -name '*.txt' \) 2>/dev/null |
  grep -v '\.raw\.txt$' | sort | while read -r f; do
  name=$(echo "$f" | tr '/' '_')
  timeout 300 "$bin" "${args[@]}" "$f" >"$out/$name.json" 2>"$out/$name.err"
  echo "exit $?" >>"$out/$name.err"
done
