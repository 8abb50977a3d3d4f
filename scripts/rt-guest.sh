#!/usr/bin/env bash
# Runs one command as root inside a QEMU guest booted on Debian's PREEMPT_RT kernel (or
# Debian's generic kernel with preempt=full), with CPU 1 isolated, and returns the
# command's exit status and output. The x86_64 guest sees this machine's root filesystem
# read-only (virtme-ng) plus one writable shared directory; the arm64 guest (--arch arm64,
# qemu-system-aarch64 -M virt -cpu max under TCG) runs on its own arm64 Debian root and
# sees the current directory, each --ro directory and the shared directory at their paths.
#
#   scripts/rt-guest.sh [OPTIONS] [--] CMD [ARGS...]
#   scripts/rt-guest.sh --setup-only
#
# Options (each also as an environment variable; the option wins):
#   --arch x86_64|arm64 RTWHY_GUEST_ARCH      the guest's architecture (default x86_64;
#                                             amd64 and aarch64 are accepted too). arm64:
#                                             Debian's linux-image-rt-arm64 (or -arm64) on
#                                             QEMU's virt board, GIC, PSCI, virtio-pci
#                                             devices; its root is unpacked once with
#                                             mmdebstrap (Debian bookworm arm64 with rt-tests,
#                                             trace-cmd, rtla, kmod, iproute2, procps, dpkg)
#                                             into the cache
#   --flavour rt|full   RTWHY_GUEST_FLAVOUR   rt: linux-image-rt-amd64 (PREEMPT_RT);
#                                             full: linux-image-amd64 booted with
#                                             preempt=full (PREEMPT_DYNAMIC). Default rt.
#                                             (-arm64 instead of -amd64 with --arch arm64)
#   --append "ARGS"     RTWHY_GUEST_APPEND    kernel command line added to virtme-ng's.
#                       Default "isolcpus=1 nohz_full=1 rcu_nocbs=1 irqaffinity=0";
#                       the full flavour adds preempt=full to it.
#   --cpus N            RTWHY_GUEST_CPUS      vCPUs (default 2)
#   --memory SIZE       RTWHY_GUEST_MEMORY    guest memory, QEMU syntax (default 2G)
#   --network user|none RTWHY_GUEST_NETWORK   user: a virtio-net NIC on QEMU's user-mode
#                                             network (gateway 10.0.2.2), not configured in
#                                             the guest (virtme-ng's DHCP stalls its boot):
#                                             ip addr add 10.0.2.15/24 dev eth0; default none
#   --ro DIR            RTWHY_GUEST_RO        arm64: a host directory the guest sees read-only
#                                             at the same path (repeatable; the environment
#                                             variable takes a colon-separated list), e.g. the
#                                             cargo target directory holding the arm64 binary;
#                                             the current directory always is. x86_64: ignored
#                                             (the whole host is visible)
#   --pata N            RTWHY_GUEST_PATA      disks (0-2, default 2; x86_64 only, 0 on arm64,
#                                             whose virt board has no legacy IDE controller;
#                                             it gets an SD card instead, below) on a legacy IDE controller
#                                             (PIIX3, interrupts 14 and 15), one per channel,
#                                             64 MiB of zeros each, writes thrown away, in PIO
#                                             mode (libata.dma=0 joins the command line;
#                                             ata_piix is loaded before the command): the
#                                             guest's one device whose interrupt handler
#                                             copies every sector itself, milliseconds of its
#                                             IRQ thread's time (the lab's irq_on_isolated_cpu
#                                             reads them)
#                                             arm64 instead: one SD card (64 MiB of zeros,
#                                             writes thrown away) on an SDHCI controller
#                                             (sdhci-pci); its modules are not loaded: load
#                                             sdhci with debug_quirks=0x60 (no DMA, no ADMA)
#                                             first, and its handler moves every word of the
#                                             data itself, as the PIO disks do on x86
#   --timeout SECS      RTWHY_GUEST_TIMEOUT   whole run, boot included (default 900)
#   --stall SECS        RTWHY_GUEST_STALL     once the command has started, stop the guest
#                                             when nothing in the shared directory changed
#                                             for this long (exit 125; default 0: never)
#   --boot-timeout SECS RTWHY_GUEST_BOOT_TIMEOUT  the command must have started within
#                                             this (default 240)
#   --shared DIR        RTWHY_GUEST_SHARED    writable directory seen by the guest at the
#                       same path (default: a new /tmp/rtwhy-guest.XXXXXX, kept)
#   --cache DIR         RTWHY_GUEST_CACHE     kernel packages and virtme-ng's venv, the
#                       arm64 root and initramfs (default ~/.cache/rtwhy-guest)
#   --kernel-package P  RTWHY_GUEST_KERNEL_PACKAGE  Debian package of the kernel, default
#                       the one linux-image-rt-amd64 (rt) or linux-image-amd64 (full) names
#   --no-install        RTWHY_GUEST_INSTALL=0  never apt-get install / pip install: say
#                       what is missing instead
#   --setup-only        set up and exit 0 without booting
#
# Inside the guest the command runs as root in this directory (read-only unless it is
# under the shared directory; /tmp, /home, /var are throw-away overlays) with
# RTWHY_GUEST_SHARED set. Its stdout and stderr go to files in the shared directory (the
# serial console loses output) and are printed here once the guest is down; the guest's
# console is kept as DIR/.rt-guest/console.log. Exit status: the command's, or 124 when
# it did not finish within the timeout, 125 when it was stopped as wedged (--stall), or 2
# when the harness could not run it (one line on stderr says why). No QEMU process is
# left behind, also on timeout or Ctrl-C.
#
# Setting up (first run, as root, from Debian's and PyPI's packages only):
# qemu-system-x86, busybox-static and kmod via apt-get; the kernel package fetched with
# `apt-get download` and unpacked with `dpkg-deb -x` into the cache (never installed);
# its lib/modules/<version> linked under /lib/modules and `depmod <version>`;
# virtme-ng in a venv in the cache. arm64: qemu-system-arm, mmdebstrap, cpio and kmod via
# apt-get, Debian's arm64 architecture added
# (dpkg --add-architecture arm64), the kernel and busybox-static:arm64 fetched with
# `apt-get download` into the cache; the root unpacked by mmdebstrap (no qemu-user needed);
# an initramfs of that busybox and the kernel's 9p,
# overlay and virtio-pci modules that mounts the arm64 root (read-only, 9p) under a tmpfs
# overlay. The TCG guest uses both host cores: run it niced
# and under the live lock (`flock /tmp/rtwhy-live.lock nice -n 10 scripts/rt-guest.sh`).
set -uo pipefail

VIRTME_NG_VERSION=1.42
DEFAULT_APPEND="isolcpus=1 nohz_full=1 rcu_nocbs=1 irqaffinity=0"

arch=${RTWHY_GUEST_ARCH:-x86_64}
flavour=${RTWHY_GUEST_FLAVOUR:-rt}
append=${RTWHY_GUEST_APPEND-$DEFAULT_APPEND}
cpus=${RTWHY_GUEST_CPUS:-2}
memory=${RTWHY_GUEST_MEMORY:-2G}
network=${RTWHY_GUEST_NETWORK:-none}
pata=${RTWHY_GUEST_PATA:-}
ro_dirs=()
IFS=: read -r -a ro_dirs <<<"${RTWHY_GUEST_RO:-}"
timeout_s=${RTWHY_GUEST_TIMEOUT:-900}
boot_timeout_s=${RTWHY_GUEST_BOOT_TIMEOUT:-240}
stall_s=${RTWHY_GUEST_STALL:-0}
shared=${RTWHY_GUEST_SHARED:-}
cache=${RTWHY_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rtwhy-guest}
kernel_pkg=${RTWHY_GUEST_KERNEL_PACKAGE:-}
install=${RTWHY_GUEST_INSTALL:-1}
setup_only=0

die() {
    echo "rt-guest: $*" >&2
    exit 2
}

need_arg() { [ $# -ge 2 ] || die "$1 needs a value"; }

while [ $# -gt 0 ]; do
    case $1 in
    --arch) need_arg "$@"; arch=$2; shift 2 ;;
    --flavour) need_arg "$@"; flavour=$2; shift 2 ;;
    --ro) need_arg "$@"; ro_dirs+=("$2"); shift 2 ;;
    --append) need_arg "$@"; append=$2; shift 2 ;;
    --cpus) need_arg "$@"; cpus=$2; shift 2 ;;
    --memory) need_arg "$@"; memory=$2; shift 2 ;;
    --network) need_arg "$@"; network=$2; shift 2 ;;
    --pata) need_arg "$@"; pata=$2; shift 2 ;;
    --timeout) need_arg "$@"; timeout_s=$2; shift 2 ;;
    --boot-timeout) need_arg "$@"; boot_timeout_s=$2; shift 2 ;;
    --stall) need_arg "$@"; stall_s=$2; shift 2 ;;
    --shared) need_arg "$@"; shared=$2; shift 2 ;;
    --cache) need_arg "$@"; cache=$2; shift 2 ;;
    --kernel-package) need_arg "$@"; kernel_pkg=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    --setup-only) setup_only=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
    esac
done

case $arch in
x86_64 | amd64) arch=x86_64; debarch=amd64; pata=${pata:-2} ;;
arm64 | aarch64)
    arch=arm64
    debarch=arm64
    pata=${pata:-0}
    [ "$pata" = 0 ] || die "--pata needs the x86_64 guest: QEMU's arm64 virt board has no legacy IDE controller"
    ;;
*) die "unsupported guest architecture '$arch' (x86_64 or arm64)" ;;
esac
case $flavour in
rt) meta=linux-image-rt-$debarch ;;
full) meta=linux-image-$debarch; append="$append preempt=full" ;;
*) die "unknown kernel flavour '$flavour' (rt or full)" ;;
esac
for n in cpus timeout_s boot_timeout_s; do
    [[ ${!n} =~ ^[1-9][0-9]*$ ]] || die "${n%_s} must be a positive whole number, not '${!n}'"
done
[[ $stall_s =~ ^[0-9]+$ ]] || die "stall must be a whole number of seconds, not '$stall_s'"
[[ $pata =~ ^[0-2]$ ]] || die "pata must be 0, 1 or 2 disks, not '$pata'"
[[ $memory =~ ^[1-9][0-9]*[MGmg]?$ ]] || die "memory must look like 2G or 1536M, not '$memory'"
case $network in
none) net_args=() ;;
user) net_args=(--network user --no-dhcp) ;;
*) die "unknown network '$network' (user or none)" ;;
esac
if [ "$setup_only" -eq 0 ] && [ $# -eq 0 ]; then
    die "no command to run in the guest (usage: rt-guest.sh [OPTIONS] [--] CMD [ARGS...])"
fi
[ "$(id -u)" -eq 0 ] || die "must run as root (the guest's kernel modules go under /lib/modules)"

apt_install() {
    # $1: what is missing, for the one line when we may not install it.
    local what=$1
    shift
    if [ "$install" != 1 ]; then
        die "$what not found (apt-get install $*; or run without --no-install)"
    fi
    command -v apt-get >/dev/null || die "$what not found and no apt-get to install $*"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
        >"$cache/apt.log" 2>&1; then
        apt-get update -qq >>"$cache/apt.log" 2>&1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
            >>"$cache/apt.log" 2>&1 ||
            die "$what not found and apt-get install $* failed (see $cache/apt.log)"
    fi
}

setup() {
    mkdir -p "$cache" || die "cannot create the cache directory $cache"
    command -v qemu-system-x86_64 >/dev/null || apt_install "qemu (qemu-system-x86_64)" qemu-system-x86
    # virtme-ng builds an initramfs (the Debian kernels have 9p as modules) with a static
    # busybox, and the modules need depmod.
    dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed' ||
        apt_install "busybox-static" busybox-static
    command -v depmod >/dev/null || [ -x /sbin/depmod ] || apt_install "depmod" kmod
    command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this needs a Debian-based machine)"
    export PATH="$PATH:/sbin:/usr/sbin"

    local venv=$cache/venv
    if ! "$venv/bin/vng" --version >/dev/null 2>&1; then
        [ "$install" = 1 ] || die "virtme-ng not found in $venv (or run without --no-install)"
        rm -rf "$venv"
        if ! python3 -m venv "$venv" >"$cache/venv.log" 2>&1; then
            apt_install "python3 venv" python3-venv
            python3 -m venv "$venv" >>"$cache/venv.log" 2>&1 ||
                die "python3 -m venv failed (see $cache/venv.log)"
        fi
        "$venv/bin/pip" install -q "virtme-ng==$VIRTME_NG_VERSION" >>"$cache/venv.log" 2>&1 ||
            die "pip install virtme-ng==$VIRTME_NG_VERSION failed (see $cache/venv.log)"
    fi
    export PATH="$venv/bin:$PATH"

    if [ -z "$kernel_pkg" ]; then
        kernel_pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
        if [ -z "$kernel_pkg" ]; then
            [ "$install" = 1 ] && apt-get update -qq >/dev/null 2>&1
            kernel_pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
        fi
        [ -n "$kernel_pkg" ] || die "kernel package $meta not found in apt's package lists"
    fi
    local kdir=$cache/$kernel_pkg
    if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
        rm -rf "$kdir"
        mkdir -p "$kdir/deb" || die "cannot create $kdir"
        if ! (cd "$kdir/deb" && apt-get download "$kernel_pkg" >"$kdir/download.log" 2>&1); then
            [ "$install" = 1 ] && apt-get update -qq >/dev/null 2>&1
            (cd "$kdir/deb" && apt-get download "$kernel_pkg" >"$kdir/download.log" 2>&1) ||
                { rm -rf "$kdir"; die "kernel package $kernel_pkg not found (apt-get download failed)"; }
        fi
        dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root.tmp" || die "dpkg-deb -x of $kernel_pkg failed"
        rm -rf "$kdir/deb"
        mv "$kdir/root.tmp" "$kdir/root"
    fi
    vmlinuz=$(ls "$kdir"/root/boot/vmlinuz-* 2>/dev/null | head -n 1)
    [ -n "$vmlinuz" ] || die "no vmlinuz in kernel package $kernel_pkg"
    kver=${vmlinuz##*/vmlinuz-}
    [ -d "$kdir/root/lib/modules/$kver" ] || die "kernel package $kernel_pkg has no lib/modules/$kver"
    mkdir -p /lib/modules
    if [ ! -e "/lib/modules/$kver/modules.dep" ]; then
        if [ -L "/lib/modules/$kver" ] || [ ! -e "/lib/modules/$kver" ]; then
            ln -sfn "$kdir/root/lib/modules/$kver" "/lib/modules/$kver"
        fi
        depmod "$kver" || die "depmod $kver failed"
    fi
}

# The arm64 guest's root: Debian bookworm arm64, made once with mmdebstrap and kept in the
# cache; remade when this list changes. The packages (and what they depend on) are only
# unpacked (mmdebstrap's extract variant): running their maintainer scripts means running
# arm64 programs here under qemu-user, which took 16 min on the shared 2-core VM against
# under 2 min for the unpacking, and a guest that runs one command needs little of what
# they do (arm64_root_fixups does that little).
ARM64_ROOT_PACKAGES="base-files,base-passwd,bash,dash,coreutils,diffutils,libc-bin,mount,util-linux,procps,iproute2,kmod,mawk,grep,sed,findutils,gzip,tar,dpkg,rt-tests,trace-cmd,rtla"
# What the arm64 initramfs loads (with their dependencies) before it mounts the root: the
# virtio-pci transport of the 9p shares, 9p itself and the overlay over the read-only root.
ARM64_INITRD_MODULES="virtio_pci virtio_mmio 9pnet_virtio 9p overlay"

# The initramfs's /init (busybox sh): mounts the arm64 root (9p, read-only) under a tmpfs
# overlay, this machine's root read-only at /run/rtwhy-host, binds the --ro directories
# and the shared directory (9p, writable) at their own paths, and hands over to the
# run's stage 2 (a bash script in the shared directory). Any failure prints one
# "rt-guest-init: error:" line on the console and powers off.
arm64_init() {
    cat <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
fail() { echo "rt-guest-init: error: $*"; echo o >/proc/sysrq-trigger; sleep 10; }
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do insmod "/modules/$m" || fail "insmod $m failed"; done </modules/order
p9="trans=virtio,version=9p2000.L,msize=262144,cache=none"
mkdir -p /lower /rw /newroot /shared
mount -t 9p -o "$p9,ro" rtwhyroot /lower || fail "cannot mount the arm64 root (9p tag rtwhyroot)"
mount -t tmpfs -o mode=0755 tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot ||
    fail "cannot mount the overlay over the arm64 root"
mount -t 9p -o "$p9" rtwhyshared /shared || fail "cannot mount the shared directory (9p tag rtwhyshared)"
[ -r /shared/.rt-guest/guest.env ] || fail "no .rt-guest/guest.env in the shared directory"
. /shared/.rt-guest/guest.env
mkdir -p /newroot/run/rtwhy-host
mount -t 9p -o "$p9,ro" rtwhyhost /newroot/run/rtwhy-host || fail "cannot mount this machine's root (9p tag rtwhyhost)"
# One directory per line (a checkout's path may hold spaces).
IFS='
'
for d in $RTWHY_RO; do
    mkdir -p "/newroot$d" && mount --bind "/newroot/run/rtwhy-host$d" "/newroot$d" &&
        mount -o remount,bind,ro "/newroot$d" || fail "cannot share $d read-only"
done
unset IFS
mkdir -p "/newroot$RTWHY_SHARED_DIR" && mount --move /shared "/newroot$RTWHY_SHARED_DIR" ||
    fail "cannot mount the shared directory at $RTWHY_SHARED_DIR"
mkdir -p "/newroot/lib/modules/$(uname -r)"
mount --bind "/newroot/run/rtwhy-host$RTWHY_MODULES" "/newroot/lib/modules/$(uname -r)" ||
    fail "cannot bind the kernel's modules"
# The kernel's config in /boot, as on a board with the kernel package installed.
mount --bind "/newroot/run/rtwhy-host$RTWHY_MODULES/../../../boot" /newroot/boot ||
    fail "cannot bind the kernel's /boot"
for f in dev proc sys; do mount --move "/$f" "/newroot/$f"; done
exec switch_root /newroot /bin/bash "$RTWHY_SHARED_DIR/.rt-guest/stage2.sh"
fail "switch_root failed"
EOF
}

# Stage 2, in the arm64 root: the file systems a Debian system has (virtme-ng mounts the
# same on x86), then the command (run.sh), then power off (PSCI SYSTEM_OFF: QEMU exits).
arm64_stage2() {
    cat <<'EOF'
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run/lock 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo rtwhy-arm64 >/proc/sys/kernel/hostname
ip link set lo up
"$(dirname "$0")/run.sh"
sync
echo o >/proc/sysrq-trigger
sleep 30
EOF
}

# What the skipped maintainer scripts would have done that the guest needs: the users and
# groups of base-passwd, and mawk as awk (an alternative). The man pages and docs left out
# while unpacking are left out only then: a package installed in the guest gets them.
arm64_root_fixups() {
    local r=$1
    rm -f "$r/etc/dpkg/dpkg.cfg.d/99mmdebstrap" &&
        cp "$r/usr/share/base-passwd/passwd.master" "$r/etc/passwd" &&
        cp "$r/usr/share/base-passwd/group.master" "$r/etc/group" &&
        { [ -e "$r/usr/bin/awk" ] || ln -s mawk "$r/usr/bin/awk"; } &&
        echo rtwhy-arm64 >"$r/etc/hostname"
}

# Everything the arm64 guest needs, cached: qemu-system-aarch64, the kernel, busybox for
# the initramfs, the initramfs, and the arm64 root. Sets vmlinuz, initrd, arm64_root and
# modules_dir.
setup_arm64() {
    mkdir -p "$cache/arm64" || die "cannot create the cache directory $cache/arm64"
    export PATH="$PATH:/sbin:/usr/sbin"
    command -v qemu-system-aarch64 >/dev/null || apt_install "qemu (qemu-system-aarch64)" qemu-system-arm
    command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this needs a Debian-based machine)"
    command -v cpio >/dev/null || apt_install "cpio" cpio
    command -v depmod >/dev/null || apt_install "depmod" kmod
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        [ "$install" = 1 ] || die "Debian's arm64 architecture is not added (dpkg --add-architecture arm64 && apt-get update; or run without --no-install)"
        dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
        apt-get update -qq >"$cache/apt.log" 2>&1 || die "apt-get update failed (see $cache/apt.log)"
    fi

    if [ -z "$kernel_pkg" ]; then
        kernel_pkg=$(apt-cache depends "$meta:arm64" 2>/dev/null | awk '/Depends: linux-image-/ {sub(":arm64", "", $2); print $2; exit}')
        if [ -z "$kernel_pkg" ]; then
            [ "$install" = 1 ] && apt-get update -qq >/dev/null 2>&1
            kernel_pkg=$(apt-cache depends "$meta:arm64" 2>/dev/null | awk '/Depends: linux-image-/ {sub(":arm64", "", $2); print $2; exit}')
        fi
        [ -n "$kernel_pkg" ] || die "kernel package $meta:arm64 not found in apt's package lists (is the arm64 architecture added? dpkg --add-architecture arm64 && apt-get update)"
    fi
    local kdir=$cache/arm64/$kernel_pkg
    if ! ls "$kdir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
        rm -rf "$kdir"
        mkdir -p "$kdir/deb" || die "cannot create $kdir"
        (cd "$kdir/deb" && apt-get download "$kernel_pkg:arm64" >"$kdir/download.log" 2>&1) ||
            { rm -rf "$kdir"; die "kernel package $kernel_pkg:arm64 not found (apt-get download failed)"; }
        dpkg-deb -x "$kdir"/deb/*.deb "$kdir/root.tmp" || die "dpkg-deb -x of $kernel_pkg failed"
        rm -rf "$kdir/deb"
        mv "$kdir/root.tmp" "$kdir/root"
    fi
    vmlinuz=$(ls "$kdir"/root/boot/vmlinuz-* 2>/dev/null | head -n 1)
    [ -n "$vmlinuz" ] || die "no vmlinuz in kernel package $kernel_pkg"
    kver=${vmlinuz##*/vmlinuz-}
    modules_dir=$kdir/root/lib/modules/$kver
    [ -d "$modules_dir" ] || die "kernel package $kernel_pkg has no lib/modules/$kver"
    [ -e "$modules_dir/modules.dep" ] || depmod -b "$kdir/root" "$kver" || die "depmod $kver failed"

    local bb=$cache/arm64/busybox
    if [ ! -x "$bb/bin/busybox" ]; then
        rm -rf "$bb"
        mkdir -p "$bb/deb"
        (cd "$bb/deb" && apt-get download busybox-static:arm64 >"$bb/download.log" 2>&1) ||
            { rm -rf "$bb"; die "busybox-static:arm64 not found (apt-get download failed)"; }
        dpkg-deb -x "$bb"/deb/*.deb "$bb/root" || die "dpkg-deb -x of busybox-static:arm64 failed"
        mv "$bb/root/bin/busybox" "$bb/bin/busybox" 2>/dev/null || { mkdir -p "$bb/bin" && mv "$bb/root/bin/busybox" "$bb/bin/"; } ||
            die "busybox-static:arm64 has no bin/busybox"
        rm -rf "$bb/deb" "$bb/root"
    fi

    # The initramfs, rebuilt when its /init or module list changes.
    local key
    key=$( { arm64_init; echo "$ARM64_INITRD_MODULES"; } | sha256sum | cut -c1-12)
    initrd=$kdir/initrd-$key.img
    if [ ! -s "$initrd" ]; then
        local tree=$kdir/initrd.tmp
        rm -rf "$tree" "$kdir"/initrd-*.img
        mkdir -p "$tree/bin" "$tree/modules" "$tree/proc" "$tree/sys" "$tree/dev"
        cp "$bb/bin/busybox" "$tree/bin/busybox"
        arm64_init >"$tree/init"
        chmod +x "$tree/init"
        local m ko
        for m in $ARM64_INITRD_MODULES; do
            modprobe -d "$kdir/root" -S "$kver" --show-depends "$m" 2>/dev/null | awk '$1 == "insmod" {print $2}'
        done | awk '!seen[$0]++' | while read -r ko; do
            cp "$ko" "$tree/modules/" && basename "$ko" >>"$tree/modules/order"
        done
        [ -s "$tree/modules/order" ] || die "no modules for the initramfs found in $kernel_pkg ($ARM64_INITRD_MODULES)"
        (cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1 >"$initrd.tmp") || die "cannot write the initramfs $initrd"
        mv "$initrd.tmp" "$initrd"
        rm -rf "$tree"
    fi

    arm64_root=$cache/arm64/root-bookworm
    if [ "$(cat "$arm64_root/.rtwhy-root" 2>/dev/null)" != "$ARM64_ROOT_PACKAGES" ]; then
        [ "$install" = 1 ] || die "the arm64 root is not made yet in $arm64_root (run without --no-install)"
        command -v mmdebstrap >/dev/null || apt_install "mmdebstrap" mmdebstrap
        rm -rf "$arm64_root" "$arm64_root.tmp"
        echo "rt-guest: making the arm64 root in $arm64_root (mmdebstrap, a few minutes)" >&2
        mmdebstrap --arch=arm64 --variant=extract --mode=root --include="$ARM64_ROOT_PACKAGES" \
            --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
            --dpkgopt='path-exclude=/usr/share/doc/*' bookworm "$arm64_root.tmp" \
            "deb http://deb.debian.org/debian bookworm main" \
            "deb http://deb.debian.org/debian bookworm-updates main" \
            "deb http://deb.debian.org/debian-security bookworm-security main" >"$cache/arm64/mmdebstrap.log" 2>&1 ||
            { rm -rf "$arm64_root.tmp"; die "mmdebstrap of the arm64 root failed (see $cache/arm64/mmdebstrap.log)"; }
        arm64_root_fixups "$arm64_root.tmp" || { rm -rf "$arm64_root.tmp"; die "cannot finish the arm64 root in $arm64_root.tmp"; }
        echo "$ARM64_ROOT_PACKAGES" >"$arm64_root.tmp/.rtwhy-root"
        mv "$arm64_root.tmp" "$arm64_root"
    fi
}

mkdir -p "$(dirname "$cache")" || die "cannot create the cache directory $cache"
# Two harnesses setting up the same cache at once would unpack over each other.
exec 9>"$cache.lock" || die "cannot open $cache.lock"
flock 9
if [ "$arch" = arm64 ]; then setup_arm64; else setup; fi
flock -u 9
exec 9>&-
[ "$setup_only" -eq 1 ] && { echo "rt-guest: ready: $vmlinuz"; exit 0; }

if [ -z "$shared" ]; then
    shared=$(mktemp -d /tmp/rtwhy-guest.XXXXXX) || die "cannot create a shared directory"
fi
mkdir -p "$shared" || die "cannot create the shared directory $shared"
shared=$(cd "$shared" && pwd -P)
ctl=$shared/.rt-guest
rm -rf "$ctl"
mkdir -p "$ctl"

# The PATA disks: sparse images (no space taken), QEMU's snapshot keeps them unwritten.
qemu_opts=()
if [ "$pata" -gt 0 ]; then
    [[ $ctl =~ ^[A-Za-z0-9/._+-]+$ ]] ||
        die "the shared directory's path ($shared) must be plain (letters, digits, / . _ + -) for QEMU's drive options"
    opts="-device piix3-ide,id=rtwhy-pata"
    for ((i = 0; i < pata; i++)); do
        truncate -s 64M "$ctl/pata$i.img" || die "cannot create the disk image $ctl/pata$i.img"
        opts+=" -drive file=$ctl/pata$i.img,if=none,id=rtwhy-pata$i,format=raw,snapshot=on"
        opts+=" -device ide-hd,drive=rtwhy-pata$i,bus=rtwhy-pata.$i"
    done
    qemu_opts=("--qemu-opts=$opts")
    append="$append libata.dma=0"
fi

# The guest-side wrapper: marks the start, runs the command with its output in files,
# records its status. The command is quoted here so that it arrives word for word.
{
    echo '#!/bin/bash'
    if [ "$pata" -gt 0 ]; then
        # The disks appear a moment after the driver binds (the SCSI scan is async).
        echo 'modprobe ata_piix && modprobe sd_mod'
        printf 'for _ in $(seq 100); do [ "$(ls -d /sys/block/sd* 2>/dev/null | wc -l)" -ge %d ] && break; sleep 0.1; done\n' "$pata"
    fi
    printf 'echo started > %q\n' "$ctl/started"
    printf 'export RTWHY_GUEST_SHARED=%q\n' "$shared"
    printf 'cd %q 2>/dev/null || cd %q\n' "$PWD" "$shared"
    printf '%q ' "$@"
    printf '>%q 2>%q </dev/null\n' "$ctl/stdout" "$ctl/stderr"
    printf 'echo $? > %q\n' "$ctl/status"
} >"$ctl/run.sh"
chmod +x "$ctl/run.sh"

vng_pid=
cleanup() {
    if [ -n "$vng_pid" ] && kill -0 "$vng_pid" 2>/dev/null; then
        # vng and the QEMU it starts share the process group setsid gave them.
        kill -TERM -- "-$vng_pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$vng_pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$vng_pid" 2>/dev/null
        wait "$vng_pid" 2>/dev/null
    fi
    if [ -n "$vng_pid" ]; then
        # QEMU may outlive vng by a moment (a zombie until reaped): return only once
        # nothing of the group is left.
        for _ in $(seq 20); do
            pgrep -g "$vng_pid" >/dev/null 2>&1 || break
            kill -KILL -- "-$vng_pid" 2>/dev/null
            sleep 0.25
        done
    fi
    vng_pid=
}
trap 'cleanup; echo "rt-guest: interrupted" >&2; exit 130' INT
trap 'cleanup; echo "rt-guest: terminated" >&2; exit 143' TERM
trap cleanup EXIT

if [ "$arch" = arm64 ]; then
    # What the initramfs mounts where (see arm64_init): the current directory and each
    # --ro directory read-only, the shared directory writable, all at their own paths.
    # The read-only ones reach the guest through this machine's root (9p), one per line
    # of guest.env, in single quotes: spaces are fine there. The others are QEMU
    # options' paths, which take no comma, quote or space.
    ro=("$PWD")
    for d in "${ro_dirs[@]}"; do
        [ -d "$d" ] || die "--ro $d is not a directory"
        ro+=("$(cd "$d" && pwd -P)")
    done
    for d in "${ro[@]}"; do
        [[ $d =~ ^/[A-Za-z0-9/._+\ -]*$ ]] ||
            die "the arm64 guest shares directories by path: '$d' must be letters, digits, spaces and / . _ + -"
    done
    for d in "$shared" "$modules_dir" "$arm64_root"; do
        [[ $d =~ ^/[A-Za-z0-9/._+-]*$ ]] ||
            die "the arm64 guest shares directories by path: '$d' must be plain (letters, digits, / . _ + -)"
    done
    {
        printf "RTWHY_RO='%s'\n" "$(printf '%s\n' "${ro[@]}")"
        printf 'RTWHY_SHARED_DIR=%q\n' "$shared"
        printf 'RTWHY_MODULES=%q\n' "$modules_dir"
    } >"$ctl/guest.env"
    arm64_stage2 >"$ctl/stage2.sh"
    chmod +x "$ctl/stage2.sh"
    p9() { echo "-fsdev local,id=$1,path=$2,security_model=passthrough$3 -device virtio-9p-pci,fsdev=$1,mount_tag=$1"; }
    # QEMU adds a NIC of its own unless told otherwise.
    net=(-nic none)
    [ "$network" = user ] && net=(-netdev user,id=net0 -device virtio-net-pci,netdev=net0)
    # -cpu max: every feature QEMU emulates (the kernel's pointer authentication and BTI
    # included), with pointer authentication computed by QEMU's own fast function
    # (pauth-impdef) instead of the architected QARMA5, which makes TCG crawl.
    # shellcheck disable=SC2046
    # The SD card (see --pata): a sparse image; QEMU's snapshot keeps it unwritten.
    truncate -s 64M "$ctl/sd.img" || die "cannot create the SD card image $ctl/sd.img"
    [[ $ctl =~ ^[A-Za-z0-9/._+-]+$ ]] ||
        die "the shared directory's path ($shared) must be plain (letters, digits, / . _ + -) for QEMU's drive options"
    sd=(-device sdhci-pci,id=rtwhy-sdhci -drive "file=$ctl/sd.img,if=none,id=rtwhy-sd,format=raw,snapshot=on"
        -device sd-card,drive=rtwhy-sd)
    setsid qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -smp "$cpus" -m "$memory" -no-reboot \
        -display none -monitor none -serial stdio "${sd[@]}" \
        -kernel "$vmlinuz" -initrd "$initrd" -append "console=ttyAMA0 panic=-1 $append" \
        $(p9 rtwhyroot "$arm64_root" ,readonly=on) $(p9 rtwhyhost / ,readonly=on) $(p9 rtwhyshared "$shared" "") \
        "${net[@]}" >"$ctl/console.log" 2>&1 </dev/null &
    vng_pid=$!
else
    setsid vng --verbose --force-9p --disable-kvm --cpus "$cpus" --memory "$memory" "${net_args[@]}" "${qemu_opts[@]}" \
        -r "$vmlinuz" --append "$append" --rwdir "$shared" -- "$ctl/run.sh" \
        >"$ctl/console.log" 2>&1 </dev/null &
    vng_pid=$!
fi

start=$SECONDS
outcome=
while :; do
    if ! kill -0 "$vng_pid" 2>/dev/null; then
        wait "$vng_pid" 2>/dev/null
        break
    fi
    elapsed=$((SECONDS - start))
    if [ ! -e "$ctl/started" ] && [ "$elapsed" -ge "$boot_timeout_s" ]; then
        outcome=noboot
        break
    fi
    if [ "$elapsed" -ge "$timeout_s" ]; then
        outcome=timeout
        break
    fi
    # A wedged guest (seen under TCG: both vCPUs busy, nothing on the console, no
    # watchdog inside getting to run) writes nothing more: checked every 10 s.
    if [ "$stall_s" -gt 0 ] && [ -e "$ctl/started" ] && [ $((elapsed % 10)) -eq 0 ]; then
        newest=$(find "$shared" -type f ! -name '*.img' -printf '%T@\n' 2>/dev/null | sort -n | tail -n 1)
        if [ -n "$newest" ] && [ $(($(date +%s) - ${newest%.*})) -ge "$stall_s" ]; then
            outcome=stall
            break
        fi
    fi
    sleep 1
done
cleanup

[ -f "$ctl/stdout" ] && cat "$ctl/stdout"
[ -f "$ctl/stderr" ] && cat "$ctl/stderr" >&2
case $outcome in
noboot)
    echo "rt-guest: guest did not boot within ${boot_timeout_s}s (console: $ctl/console.log)" >&2
    exit 2
    ;;
timeout)
    echo "rt-guest: command did not finish within ${timeout_s}s (console: $ctl/console.log)" >&2
    exit 124
    ;;
stall)
    echo "rt-guest: the guest wrote nothing to $shared for ${stall_s}s: stopped as wedged (console: $ctl/console.log)" >&2
    exit 125
    ;;
esac
if [ ! -e "$ctl/started" ]; then
    # The kernel's panic line, the arm64 initramfs's own error, or the first error line
    # (not the command line's panic=).
    why=$(grep -m1 -E 'Kernel panic|rt-guest-init: error' "$ctl/console.log" ||
        grep -v 'command line' "$ctl/console.log" | grep -m1 -iE 'panic|error|fail' ||
        tail -n 1 "$ctl/console.log")
    echo "rt-guest: guest stopped before running the command: $why (console: $ctl/console.log)" >&2
    exit 2
fi
status=$(cat "$ctl/status" 2>/dev/null)
if ! [[ $status =~ ^[0-9]+$ ]]; then
    echo "rt-guest: guest stopped before the command finished (console: $ctl/console.log)" >&2
    exit 2
fi
exit "$status"
