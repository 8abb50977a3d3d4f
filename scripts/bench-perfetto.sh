#!/usr/bin/env bash
# `rtwhy convert` (trace.dat to Perfetto protobuf) on a synthetic trace of at least 1 GiB,
# beside `trace-cmd report` on the same file in the same run: wall and CPU time, peak RSS
# (GNU time). With --perfetto DIR (a checkout of the perfetto repository, for its .proto
# files) and a Python that has `protobuf` and `grpcio-tools`, it then decodes the output
# back with Perfetto's schema and compares every event with `trace-cmd report -R`
# (scripts/perfetto-check.py). Prints the results; docs/PERFORMANCE.md quotes them.
#
# Usage: scripts/bench-perfetto.sh [--synthetic-mib N] [--perfetto DIR] [--python PY]
# (default 1100 MiB; the trace and its conversion are written to $TMPDIR or /tmp and
# removed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
mib=1100
perfetto=""
python=python3
while [ $# -gt 0 ]; do
    case "$1" in
        --synthetic-mib) mib="$2"; shift 2 ;;
        --perfetto) perfetto="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        *) echo "bench-perfetto.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scripts/setup.sh test
cargo build --release --locked -q -p rtwhy --bin rtwhy --example bench
target="$(scripts/target-dir.sh)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/rtwhy-perfetto.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
dat="$dir/synthetic.dat"
out="$dir/synthetic.perfetto-trace"
"$target/release/examples/bench" --synthetic-mib "$mib" --synthetic-only "$dat"
echo "input: $(stat -c %s "$dat") bytes"
/usr/bin/time -f 'rtwhy convert: %e s wall, %U s user, %S s sys, %M KiB peak RSS' \
    "$target/release/rtwhy" convert "$dat" -o "$out"
echo "output: $(stat -c %s "$out") bytes"
/usr/bin/time -f 'trace-cmd report: %e s wall, %U s user, %S s sys, %M KiB peak RSS' \
    trace-cmd report -i "$dat" >/dev/null
if [ -n "$perfetto" ]; then
    /usr/bin/time -f 'perfetto-check.py: %e s wall, %M KiB peak RSS' \
        "$python" scripts/perfetto-check.py --perfetto "$perfetto" "$dat" "$out"
fi
