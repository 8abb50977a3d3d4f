#!/usr/bin/env bash
# Prints the directory cargo builds this workspace into: `target/` by default, or wherever
# CARGO_TARGET_DIR, `--target-dir` in a cargo config or `build.target-dir` put it. The
# scripts ask here instead of assuming `target/`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
meta=$(cargo metadata --format-version 1 --no-deps --locked --offline 2>/dev/null ||
    cargo metadata --format-version 1 --no-deps --locked)
# One JSON line; the path is a JSON string (a quote or backslash in it arrives escaped).
dir=$(printf '%s' "$meta" | sed -n 's/.*"target_directory":"\(\([^"\\]\|\\.\)*\)".*/\1/p' |
    sed 's/\\\(.\)/\1/g')
[ -n "$dir" ] || { echo "target-dir.sh: cargo metadata named no target directory" >&2; exit 1; }
printf '%s\n' "$dir"
