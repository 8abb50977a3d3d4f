# Sourced (not run) by the scripts that build rtwhy, from the checkout's root, once cargo
# is on PATH. libbpf-sys builds its bundled libbpf with make inside the target directory,
# and make cannot take a path with a space in it: from a checkout whose path has one,
# the build would stop there. Such a checkout builds in a directory of /var/tmp named
# after it instead (one per checkout, reused), and says so. A CARGO_TARGET_DIR the user
# set is left as it is.
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
    case "$(scripts/target-dir.sh)" in
        *[[:space:]]*)
            CARGO_TARGET_DIR="/var/tmp/rtwhy-target-$(pwd -P | sha256sum | cut -c1-12)"
            export CARGO_TARGET_DIR
            echo "note: the checkout's path has a space, which libbpf-sys's make build cannot take: building in $CARGO_TARGET_DIR (set CARGO_TARGET_DIR to choose another)" >&2
            ;;
    esac
fi
