#!/usr/bin/env bash
# Builds rtwhy's Debian package with cargo-deb: the static binary, a man page per
# subcommand and the bash/zsh/fish completions (both generated from the clap definitions
# by `rtwhy generate`), the systemd unit rtwhy-record@.service with an example
# configuration, and the docs. Prints the .deb's path (under the build directory's
# `debian/`: `target/debian/` unless CARGO_TARGET_DIR puts it elsewhere). Install it with
#   sudo apt-get install ./target/debian/rtwhy_*.deb
#
#   scripts/package-deb.sh                   for this machine (amd64 here)
#   scripts/package-deb.sh --target aarch64  the arm64 package for a board, cross-built
#                                            (scripts/setup.sh cross-arm64, docs/arm64.md);
#                                            its man pages and completions come from the
#                                            arm64 binary itself, run under qemu-user
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

triple=
case "${1:-}" in
    "") ;;
    --target)
        case "${2:-}" in
            aarch64 | arm64 | aarch64-unknown-linux-gnu) triple=aarch64-unknown-linux-gnu ;;
            *)
                echo "package-deb: unsupported --target '${2:-}' (aarch64, or none for this machine)" >&2
                exit 2
                ;;
        esac
        ;;
    *)
        echo "package-deb: unknown argument '$1' (only --target aarch64)" >&2
        exit 2
        ;;
esac

scripts/setup.sh package >&2
. scripts/spaceless-target.sh
target_dir=$(scripts/target-dir.sh)
if [ -n "$triple" ]; then
    scripts/setup.sh cross-arm64 >&2
    cargo build --release --locked -q -p rtwhy --target "$triple"
    bin=$target_dir/$triple/release/rtwhy
    run=(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$bin")
    debs=$target_dir/$triple/debian
    target_args=(--target "$triple")
else
    cargo build --release --locked -q -p rtwhy
    bin=$target_dir/release/rtwhy
    run=("$bin")
    debs=$target_dir/debian
    target_args=()
fi
# The generated pages and completions go to the checkout's own target/assets, whatever
# the build directory: the package's asset list names them relative to the checkout.
rm -rf target/assets
"${run[@]}" generate man --out target/assets/man >/dev/null
"${run[@]}" generate completions --out target/assets/completions >/dev/null
rm -f "$debs"/rtwhy_*.deb
cargo deb -p rtwhy --no-build --locked -q "${target_args[@]}" 2>&1 | grep -v '^warning: ' >&2 || true
deb=$(ls -t "$debs"/rtwhy_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "package-deb: cargo deb wrote no package under $debs" >&2; exit 1; }
echo "$deb"
