#!/usr/bin/env bash
# Boots the PREEMPT_RT guest once (scripts/rt-guest.sh, which sets itself up on a fresh
# machine) and checks rtwhy inside it, with CPU 1 isolated:
#   - `rtwhy doctor` sees PREEMPT_RT and the isolated CPU 1;
#   - `rtwhy selftest --cpu 1 --scenarios $RTWHY_GUEST_SCENARIOS` exits 0 and prints
#     "pass" for each of them;
#   - no tracefs instance of rtwhy is left behind.
# Exit 0 when all hold, 1 when one does not (the guest's output says which), 2 when the
# guest could not run. Run as root; it builds the debug binary first.
# Environment: RTWHY_GUEST_SCENARIOS (default rt_throttling,preemption), RTWHY_GUEST_TIMEOUT
# (default 1500 s), and everything scripts/rt-guest.sh reads.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
scenarios=${RTWHY_GUEST_SCENARIOS:-rt_throttling,preemption}
[[ $scenarios =~ ^[a-z_]+(,[a-z_]+)*$ ]] || {
    echo "rt-guest-test: RTWHY_GUEST_SCENARIOS must be a comma-separated list of scenario names" >&2
    exit 2
}

cargo build -q -p rtwhy --locked
target=${CARGO_TARGET_DIR:-$PWD/target}
exe=$(cd "$target/debug" && pwd -P)/rtwhy
[ -x "$exe" ] || { echo "rt-guest-test: $exe was not built" >&2; exit 2; }

shared=$(mktemp -d /tmp/rtwhy-guest-test.XXXXXX)
cat >"$shared/check.sh" <<EOF
#!/bin/bash
# Runs inside the guest.
exe=$exe
scenarios=$scenarios
EOF
cat >>"$shared/check.sh" <<'EOF'
failed=0
fail() { echo "rt-guest-test: FAIL: $*"; failed=1; }
t0=$SECONDS
doctor=$("$exe" doctor)
echo "$doctor"
grep -q '^OK  *preempt_rt ' <<<"$doctor" || fail "doctor does not report a PREEMPT_RT kernel"
grep -q '^OK  *preempt_model .*model rt' <<<"$doctor" || fail "doctor does not report preemption model rt"
grep -q 'isolated CPU 1' <<<"$doctor" || fail "doctor does not see CPU 1 isolated"
echo "rt-guest-test: doctor took $((SECONDS - t0)) s"
t0=$SECONDS
"$exe" selftest --cpu 1 --scenarios "$scenarios" --keep "$RTWHY_GUEST_SHARED/keep" >"$RTWHY_GUEST_SHARED/selftest.txt"
code=$?
cat "$RTWHY_GUEST_SHARED/selftest.txt"
echo "rt-guest-test: selftest took $((SECONDS - t0)) s, exit $code"
[ "$code" -eq 0 ] || fail "rtwhy selftest --cpu 1 --scenarios $scenarios exited $code"
for s in ${scenarios//,/ }; do
    grep -qE "^$s +.* pass( |\$)" "$RTWHY_GUEST_SHARED/selftest.txt" || fail "scenario $s did not pass"
done
left=$(ls -d /sys/kernel/tracing/instances/rtwhy-* 2>/dev/null || true)
[ -z "$left" ] || fail "tracefs instances left behind: $left"
exit $failed
EOF
chmod +x "$shared/check.sh"

start=$SECONDS
set +e
scripts/rt-guest.sh --shared "$shared" --timeout "${RTWHY_GUEST_TIMEOUT:-1500}" -- "$shared/check.sh"
code=$?
set -e
echo "rt-guest-test: guest run took $((SECONDS - start)) s (captures in $shared/keep)"
case $code in
0) echo "rt-guest-test: passed" ;;
1) echo "rt-guest-test: failed" >&2 ;;
*) echo "rt-guest-test: the guest run failed (exit $code)" >&2 ;;
esac
exit "$code"
