#!/usr/bin/env bash
# The one place that installs what rtwhy needs on a Debian/Ubuntu machine. Both README
# commands call it (demo.sh with `build`, test.sh with `test`), so they cannot drift.
#
#   scripts/setup.sh build   what building rtwhy needs: a C toolchain, clang and llvm for
#                            the BPF detector, libelf and zlib (static, linked into the
#                            binary), pkg-config, git (the revision in --version)
#   scripts/setup.sh test    build, plus what the test suite drives for real: trace-cmd
#                            (the oracle), zstd, cyclictest (rt-tests), perf, tmux, tar,
#                            fonts for the SVG check, mmdebstrap for the clean-root check,
#                            GNU time for the benchmarks' peak memory, bpftool for
#                            scripts/bench-bpf.sh (the detector's cost per program)
#   scripts/setup.sh package build, plus cargo-deb, for scripts/package-deb.sh
#   scripts/setup.sh cross-arm64
#                            build, plus what cross-building rtwhy for arm64 boards takes
#                            (docs/arm64.md): Debian's arm64 architecture, the aarch64 C
#                            cross compiler, libelf and zlib for arm64 (static archives),
#                            qemu-user-static (to run the arm64 binary here, e.g. for its
#                            man pages), file, and rustup's aarch64-unknown-linux-gnu target
#
# Installs only what is missing (apt-get as root); without root it names the missing
# packages in one line and exits 1. RTWHY_SETUP_DRY=1 prints the list and installs nothing.
set -euo pipefail

what="${1:-build}"
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_file() { [ -e "$1" ] || missing+=("$2"); }

case "$what" in
    build | test | package | cross-arm64) ;;
    *)
        echo "setup.sh: unknown set '$what': use build, test, package or cross-arm64" >&2
        exit 2
        ;;
esac

need_cmd cc build-essential
need_cmd make build-essential
need_cmd clang clang
need_cmd llvm-strip llvm
need_cmd pkg-config pkg-config
need_cmd git git
# The recorder links libbpf, libelf and zlib statically, so the headers and the static
# archives are needed at build time and nothing at run time.
need_file /usr/include/libelf.h libelf-dev
need_file /usr/include/gelf.h libelf-dev
need_file /usr/include/zlib.h zlib1g-dev
if [ "$what" = test ]; then
    need_cmd trace-cmd trace-cmd
    need_cmd zstd zstd
    need_cmd cyclictest rt-tests
    need_cmd perf linux-perf
    need_cmd tmux tmux
    need_cmd tar tar
    need_cmd mmdebstrap mmdebstrap
    need_file /usr/share/fonts/truetype/dejavu fonts-dejavu-core
    need_file /usr/bin/time time
    need_cmd bpftool bpftool
fi

if [ "$what" = cross-arm64 ]; then
    need_cmd aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
    need_file /usr/lib/aarch64-linux-gnu/libelf.a libelf-dev:arm64
    need_file /usr/lib/aarch64-linux-gnu/libz.a zlib1g-dev:arm64
    need_cmd qemu-aarch64-static qemu-user-static
    # file(1) tells what architecture a built binary is for.
    need_cmd file file
    # The :arm64 packages come from Debian's arm64 archive, reachable once the
    # architecture is added (apt-get update below fetches its lists).
    if [ ${#missing[@]} -gt 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
        if [ "$(id -u)" -ne 0 ] && [ "${RTWHY_SETUP_DRY:-0}" != 1 ]; then
            echo "cross-building for arm64 needs Debian's arm64 architecture: run scripts/setup.sh cross-arm64 as root (it runs dpkg --add-architecture arm64)" >&2
            exit 1
        fi
        [ "${RTWHY_SETUP_DRY:-0}" = 1 ] || dpkg --add-architecture arm64
    fi
fi

# One package may be named by several checks.
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
fi

if [ "${RTWHY_SETUP_DRY:-0}" = 1 ]; then
    echo "${missing[*]:-nothing missing}"
    exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "rtwhy needs: ${missing[*]}; run scripts/setup.sh $what as root, or install them with apt-get" >&2
        exit 1
    fi
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust with rustup (https://rustup.rs) and rerun" >&2
    exit 1
fi

if [ "$what" = cross-arm64 ] && ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
    echo "installing the Rust target aarch64-unknown-linux-gnu"
    rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 ||
        { echo "rustup target add aarch64-unknown-linux-gnu failed: run it by hand to see why" >&2; exit 1; }
fi

if [ "$what" = package ] && ! cargo deb --version >/dev/null 2>&1; then
    echo "installing cargo-deb"
    cargo install cargo-deb --locked -q
fi
exit 0
