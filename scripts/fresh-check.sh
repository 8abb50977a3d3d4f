#!/usr/bin/env bash
# The clean-root check: do the README's commands work on a machine that has nothing but
# Debian and Rust? Builds a minimal Debian root with mmdebstrap (the host's release and
# apt sources), gives it this machine's Rust (the README's precondition: the rustup home
# is bind-mounted, the toolchain's programs of the cargo home read-only, with an empty
# cargo home of the root's own, so crates and cargo-deb are fetched from scratch), the certificate
# authorities the host added (/usr/local/share/ca-certificates: a TLS proxy's) and its
# proxy settings, clones the committed checkout into /root/rtwhy (a directory only root
# may enter, as most root users' clones are), and runs there
#
#   demo    the README's first command, scripts/demo.sh (as root, with /proc, /sys and
#           /dev of the host, so the live recording runs for real), then the live
#           recording tests (record_live) from that clone under CI=true
#   build   the test command's install-and-build part, scripts/test.sh --build-only
#   deb     the Debian package (scripts/package-deb.sh) installed there with apt-get;
#           `man rtwhy-record`, the bash completions, `systemd-analyze verify` of the unit
#   all     demo, build and deb (the default)
#
# Usage: sudo scripts/fresh-check.sh [demo|build|deb|all ...] [--repo DIR]
# Only committed work is checked (the root gets a clone). Everything is removed at the
# end, also on failure or Ctrl-C. Exit 0 when every step passed.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
what=""
repo="$here"
while [ $# -gt 0 ]; do
    case "$1" in
        demo | build | deb) what="$what $1" ;;
        all) what="$what demo deb build" ;;
        --repo)
            repo="${2:?--repo needs a directory}"
            shift
            ;;
        *)
            echo "fresh-check.sh: unknown argument '$1' (demo, build, deb, all, --repo DIR)" >&2
            exit 2
            ;;
    esac
    shift
done
[ -n "$what" ] || what="demo deb build"
wants() { [[ " $what " == *" $1 "* ]]; }

fail() {
    echo "fresh-check: $*" >&2
    exit 1
}
[ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap, chroot, mounts)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing: apt-get install mmdebstrap (or scripts/setup.sh test)"
git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || fail "$repo is not a git checkout"
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
[ -x "$cargo_home/bin/cargo" ] || fail "no Rust at $cargo_home (install it with rustup first)"
[ -d "$rustup_home/toolchains" ] || fail "no rustup toolchains at $rustup_home"
. /etc/os-release
suite="${VERSION_CODENAME:-}"
[ -n "$suite" ] || fail "/etc/os-release names no release (VERSION_CODENAME)"
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || fail "the host has no apt sources to build the root from"

# unmount_under DIR: unmounts every mount at or below DIR, deepest first; fails if any
# remains.
unmount_under() {
    local m
    for m in $(findmnt -rn -o TARGET | grep -- "^$1" | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    ! findmnt -rn -o TARGET | grep -q -- "^$1"
}

# A run killed outright (SIGKILL at a session's end) leaves its root behind, mounts and
# 8 GiB of build: remove those whose run is gone (its owner pid dead, or, for a root
# without one, older than the three hours no run lasts).
remove_stale_roots() {
    local old owner
    for old in /var/tmp/rtwhy-fresh.*; do
        [ -d "$old" ] || continue
        owner=$(cat "$old.owner" 2>/dev/null || true)
        if [ -n "$owner" ]; then
            ! kill -0 "$owner" 2>/dev/null || continue
        else
            [ -n "$(find "$old" -maxdepth 0 -mmin +180)" ] || continue
        fi
        if unmount_under "$old/"; then
            echo "fresh-check: removing $old, left by a run that was killed"
            rm -rf "$old" "$old.owner"
        else
            echo "fresh-check: mounts remain under $old; left in place" >&2
        fi
    done
}
remove_stale_roots

root=$(mktemp -d /var/tmp/rtwhy-fresh.XXXXXX)
echo $$ > "$root.owner"
mounted=()
cleanup() {
    local m
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        m=${mounted[$i]}
        umount -R "$m" 2>/dev/null || umount -R -l "$m" 2>/dev/null || true
    done
    # Mounts made inside the root by what ran there (not in `mounted`) go too; never
    # delete through a mount that is still there (the cargo home is the host's).
    if unmount_under "$root/"; then
        rm -rf "$root" "$root.owner"
    else
        echo "fresh-check: mounts remain under $root; not removing it" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() {
    local name=$1
    shift
    local t0=$SECONDS rc=0
    echo "== fresh-check: $name"
    "$@" || rc=$?
    local took=$((SECONDS - t0))
    if [ "$rc" -ne 0 ]; then
        echo "== fresh-check: $name FAILED with exit code $rc after $took s" >&2
        exit 1
    fi
    echo "== fresh-check: $name passed in $took s"
}

bind() {
    mkdir -p "$root$2"
    mount --rbind "$1" "$root$2"
    mount --make-rslave "$root$2"
    mounted+=("$root$2")
}

make_root() {
    # ca-certificates and curl: what installing Rust with rustup takes, nothing more.
    mmdebstrap --quiet --variant=minbase --include=ca-certificates,curl "$suite" "$root" "${sources[@]}"
}

enter_root() {
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    bind /proc /proc
    bind /sys /sys
    bind /dev /dev
    bind "$rustup_home" /root/.rustup
    bind "$cargo_home" /opt/host-cargo
    mount -o remount,bind,ro "$root/opt/host-cargo"
    mkdir -p "$root/root/.cargo" "$root/usr/local/rust-bin"
    # The toolchain's programs only (rustup's proxies), not what the host installed with
    # `cargo install` (cargo-deb among them): the root installs its own.
    local p
    for p in cargo rustc rustdoc rustup rustfmt cargo-fmt cargo-clippy clippy-driver; do
        [ -e "$cargo_home/bin/$p" ] && ln -s "/opt/host-cargo/bin/$p" "$root/usr/local/rust-bin/$p"
    done
    # A TLS proxy's certificate authority, trusted by the host, is trusted in the root.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
        chroot "$root" update-ca-certificates >/dev/null
    fi
    # apt's proxy settings, where the host has them.
    grep -lis 'proxy' /etc/apt/apt.conf /etc/apt/apt.conf.d/* 2>/dev/null |
        while read -r f; do cp "$f" "$root/etc/apt/apt.conf.d/"; done
    chmod 700 "$root/root"
    git clone -q "$repo" "$root/root/rtwhy"
}

in_root() {
    local proxies=() v
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
        [ -n "${!v:-}" ] && proxies+=("$v=${!v}")
    done
    chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb CI="${CI:-}" "${proxies[@]}" \
        PATH=/root/.cargo/bin:/usr/local/rust-bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c "cd /root/rtwhy && $1"
}

# What a user does with the package: install it, read a page, complete a flag, and what
# systemd makes of the unit. man-db and systemd are the checking tools, not rtwhy's needs.
check_deb() {
    in_root "scripts/package-deb.sh > /tmp/deb-path" || return 1
    in_root 'apt-get install -y -qq "$(cat /tmp/deb-path)" >/dev/null' || return 1
    in_root 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq man-db systemd >/dev/null' || return 1
    in_root 'ldd /usr/bin/rtwhy; ! ldd /usr/bin/rtwhy | grep -E "lib(elf|z|bpf)\."' || return 1
    in_root 'rtwhy --version && man rtwhy-record | grep -q -- "--disk-budget" && man rtwhy-record | head -8' || return 1
    in_root 'bash -c ". /usr/share/bash-completion/completions/rtwhy && complete -p rtwhy"' || return 1
    in_root 'cp /usr/lib/systemd/system/rtwhy-record@.service /tmp/rtwhy-record@check.service &&
        systemd-analyze verify /tmp/rtwhy-record@check.service && echo "systemd-analyze verify: clean"'
}

t_all=$SECONDS
step "minimal Debian $suite root (mmdebstrap)" make_root
step "Rust and the checkout ($(git -C "$repo" rev-parse --short HEAD)) in the root" enter_root
if wants demo; then
    step "README's first command: scripts/demo.sh" in_root scripts/demo.sh
    step "the live recording tests from /root/rtwhy (CI=true)" \
        in_root "scripts/setup.sh test >/dev/null && CI=true cargo test -q --locked -p rtwhy-tests --test record_live"
fi
if wants deb; then
    step "the Debian package installed with apt-get: man page, completions, unit" check_deb
fi
if wants build; then
    step "README's test command, install and build: scripts/test.sh --build-only" in_root "scripts/test.sh --build-only"
fi
echo "fresh-check: all passed in $((SECONDS - t_all)) s"
