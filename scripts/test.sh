#!/usr/bin/env bash
# Installs what rtwhy's tests need on a fresh Debian/Ubuntu machine, then runs every
# check CI runs: formatting, clippy, the whole test suite, docs, bounded fuzzing, the
# README's first command in a clean root, rtwhy inside a PREEMPT_RT guest with an
# isolated CPU (scripts/rt-guest-test.sh, which sets the guest up itself), and the arm64
# cross-build checked inside an arm64 PREEMPT_RT guest (scripts/rt-guest-arm64-test.sh).
# Run as root (apt-get, tracefs). Environment: RTWHY_FUZZ_SECONDS (default 20 per target);
# RTWHY_GUEST=0 leaves the guest out, RTWHY_ARM64=0 the arm64 part (both refused when
# CI=true); RTWHY_GUEST_SCENARIOS, RTWHY_ARM64_SCENARIOS.
#
#   scripts/test.sh               everything (what .ci/run does)
#   scripts/test.sh --build-only  the install-and-build part: set-up, then build every
#                                 test without running it (what scripts/fresh-check.sh runs
#                                 in a clean root)
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
case "${1:-}" in
    "") ;;
    --build-only) build_only=1 ;;
    *)
        echo "test.sh: unknown argument '$1' (only --build-only)" >&2
        exit 2
        ;;
esac

log() { printf '\n== %s\n' "$*"; }

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

log "system packages"
scripts/setup.sh test
echo "trace-cmd: $(trace-cmd --version 2>&1 | grep -m1 version || true)"

log "rust toolchain"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo --version
. scripts/spaceless-target.sh

# A whole run writes about 20 GiB: the debug and release builds (5-7 GiB), the clean
# Debian root of fresh-check.sh with its own build under /var/tmp (6-8 GiB), the guests'
# images and kernels. Too little space fails late, in the middle of a build, so say it
# first, with where the space is short.
free_gib() { df --output=avail -BG "$1" 2>/dev/null | tail -1 | tr -dc 0-9; }
for d in . /var/tmp; do
    f=$(free_gib "$d")
    if [ -n "$f" ] && [ "$f" -lt 20 ]; then
        echo "warning: only ${f} GiB free on the file system of $(cd "$d" && pwd -P); a whole run writes about 20 GiB (builds, a clean Debian root, the guests): free space first if it stops with 'No space left on device'" >&2
    fi
done

if ! mountpoint -q /sys/kernel/tracing 2>/dev/null && [ "$(id -u)" -eq 0 ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

if [ "$build_only" = 1 ]; then
    log "cargo test --no-run"
    cargo test --workspace --locked --no-run
    log "install and build passed"
    exit 0
fi

log "cargo fmt --check"
cargo fmt --all --check
# The rule files are declared by rtwhy-analyze's build script, out of cargo fmt's sight.
rustfmt --check --edition 2021 crates/rtwhy-analyze/src/rules/*.rs

log "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

log "cargo test"
cargo test --workspace --locked

log "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q

log "fuzzing (bounded)"
scripts/fuzz.sh "${RTWHY_FUZZ_SECONDS:-20}"

log "the README's first command in a clean Debian root"
scripts/fresh-check.sh demo

log "rtwhy in a PREEMPT_RT guest, CPU 1 isolated (scripts/rt-guest-test.sh)"
if [ "${RTWHY_GUEST:-1}" = 0 ] && [ "${CI:-}" != true ]; then
    echo "skipped: RTWHY_GUEST=0"
else
    RTWHY_GUEST_SCENARIOS=${RTWHY_GUEST_SCENARIOS:-rt_throttling,preemption,priority_inversion,lock_contention,irq_on_isolated_cpu} \
        scripts/rt-guest-test.sh
    # NET_RX reaches an isolated CPU of a PREEMPT_RT kernel only in the thread of an IRQ
    # moved there (irq_on_isolated_cpu), so softirq runs in a boot without isolation.
    log "rtwhy in a PREEMPT_RT guest, no CPU isolated: softirq (scripts/rt-guest-test.sh)"
    RTWHY_GUEST_ISOLATED=0 RTWHY_GUEST_SCENARIOS=softirq scripts/rt-guest-test.sh
fi

log "rtwhy for arm64: cross-built, checked in an arm64 PREEMPT_RT guest (scripts/rt-guest-arm64-test.sh)"
if [ "${RTWHY_ARM64:-1}" = 0 ] && [ "${CI:-}" != true ]; then
    echo "skipped: RTWHY_ARM64=0"
else
    start=$SECONDS
    scripts/rt-guest-arm64-test.sh
    echo "arm64 part took $((SECONDS - start)) s"
fi

log "all checks passed"
