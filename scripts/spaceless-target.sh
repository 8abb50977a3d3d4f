# Sourced (not run) by the scripts that build rtwhy, from the checkout's root, once cargo
# is on PATH. libbpf-sys builds its bundled libbpf with make inside the target directory,
# and make cannot take a path with a space in it: from a checkout whose path has one,
# the build would stop there. Such a checkout builds in a directory of ~/.cache/rtwhy
# named after it instead (one per checkout, reused), and says so: not /tmp, /var/tmp or
# /var/cache, which the PREEMPT_RT guest covers with its own empty tmpfs, so the guest
# would not see the binaries. A CARGO_TARGET_DIR the user set is left as it is; when
# $HOME has a space too, the script stops with one line asking for CARGO_TARGET_DIR.
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
    case "$(scripts/target-dir.sh)" in
        *[[:space:]]*)
            CARGO_TARGET_DIR="$HOME/.cache/rtwhy/target-$(pwd -P | sha256sum | cut -c1-12)"
            case "$CARGO_TARGET_DIR" in
                *[[:space:]]*)
                    echo "error: the checkout's path and \$HOME both have a space, and libbpf-sys's make build cannot take one: set CARGO_TARGET_DIR to a directory without a space and run again" >&2
                    exit 2
                    ;;
            esac
            export CARGO_TARGET_DIR
            echo "note: the checkout's path has a space, which libbpf-sys's make build cannot take: building in $CARGO_TARGET_DIR (set CARGO_TARGET_DIR to choose another)" >&2
            ;;
    esac
fi
