#!/usr/bin/env bash
# Builds rtwhy's Debian package with cargo-deb: the static binary, a man page per
# subcommand and the bash/zsh/fish completions (both generated from the clap definitions
# by `rtwhy generate`), the systemd unit rtwhy-record@.service with an example
# configuration, and the docs. Prints the .deb's path (under the build directory's
# `debian/`: `target/debian/` unless CARGO_TARGET_DIR puts it elsewhere). Install it with
#   sudo apt-get install ./target/debian/rtwhy_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh package >&2
cargo build --release --locked -q -p rtwhy
target=$(scripts/target-dir.sh)
# The generated pages and completions go to the checkout's own target/assets, whatever
# the build directory: the package's asset list names them relative to the checkout.
rm -rf target/assets
"$target/release/rtwhy" generate man --out target/assets/man >/dev/null
"$target/release/rtwhy" generate completions --out target/assets/completions >/dev/null
cargo deb -p rtwhy --no-build --locked -q 2>&1 | grep -v '^warning: ' >&2 || true
deb=$(ls -t "$target"/debian/rtwhy_*.deb 2>/dev/null | head -n 1)
[ -n "$deb" ] || { echo "package-deb: cargo deb wrote no package under $target/debian" >&2; exit 1; }
echo "$deb"
