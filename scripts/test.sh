#!/usr/bin/env bash
# Installs what rtwhy's tests need on a fresh Debian/Ubuntu machine, then runs every
# check CI runs: formatting, clippy, the whole test suite, docs, and bounded fuzzing.
# Run as root (apt-get, tracefs). Environment: RTWHY_FUZZ_SECONDS (default 20 per target).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n== %s\n' "$*"; }

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

log "system packages"
missing=()
command -v trace-cmd >/dev/null || missing+=(trace-cmd)
command -v zstd >/dev/null || missing+=(zstd)
command -v cyclictest >/dev/null || missing+=(rt-tests)
command -v cc >/dev/null || missing+=(build-essential)
# The BPF detector is compiled by clang and linked against libelf and zlib.
command -v clang >/dev/null || missing+=(clang)
command -v llvm-strip >/dev/null || missing+=(llvm)
[ -e /usr/include/libelf.h ] || missing+=(libelf-dev)
[ -e /usr/include/zlib.h ] || missing+=(zlib1g-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v perf >/dev/null || missing+=(linux-perf)
# The TUI's end-to-end test drives the binary in a real terminal.
command -v tmux >/dev/null || missing+=(tmux)
# `rtwhy report --bundle` is checked with real tar; the SVG test renders text with resvg.
command -v tar >/dev/null || missing+=(tar)
[ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "rtwhy tests need: ${missing[*]}; run this script as root or install them" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "trace-cmd: $(trace-cmd --version 2>&1 | grep -m1 version || true)"

log "rust toolchain"
if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust with rustup (https://rustup.rs) and rerun" >&2
    exit 1
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo --version

if ! mountpoint -q /sys/kernel/tracing 2>/dev/null && [ "$(id -u)" -eq 0 ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "cargo test"
cargo test --workspace --locked

log "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q

log "fuzzing (bounded)"
scripts/fuzz.sh "${RTWHY_FUZZ_SECONDS:-20}"

log "all checks passed"
