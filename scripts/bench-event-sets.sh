#!/usr/bin/env bash
# What each part of rtwhy's default event preset costs a context-switch-heavy workload:
# `perf bench sched pipe -l 1000000` pinned to CPU 0, run in turn (A B C D E A B C D E ...)
# under
#   none                      no tracing
#   minimal                   a plain instance with the `minimal` preset's 10 events
#                             (sched switch/waking/wakeup/migrate, irq and softirq
#                             entry/exit, hrtimer expire entry/exit)
#   default-without-syscalls  the `default` preset less its four syscall events
#   default                   the `default` preset (crates/rtwhy-record/src/events.rs)
#   minimal+syscalls          `minimal` plus the four syscall events
# Each instance is like rtwhy's (overwrite, 4096 KiB per CPU, clock mono) and is made
# and removed around each run. Prints every round, then per set the median ops/s and its
# loss against `none` (and the median of the per-round ratios, steadier on a busy host).
# Usage: scripts/bench-event-sets.sh [ROUNDS]   (default 8; about 15 s a round)
# Needs root and perf. Every run is bounded by `timeout`; the instance is removed on any
# exit.
set -euo pipefail
ROUNDS=${1:-8}
[ "$(id -u)" = 0 ] || { echo "bench-event-sets: needs root (tracefs)" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench-event-sets: perf not found" >&2; exit 2; }
T=/sys/kernel/tracing
[ -d "$T/instances" ] || { echo "bench-event-sets: no tracefs at $T" >&2; exit 2; }
I=$T/instances/rtwhy-bench-sets-$$
remove() {
    if [ -d "$I" ]; then
        echo 0 > "$I/tracing_on" 2>/dev/null || true
        rmdir "$I" 2>/dev/null || echo "bench-event-sets: could not remove $I" >&2
    fi
}
trap remove EXIT
trap 'exit 130' INT TERM

MINIMAL="sched:sched_switch sched:sched_waking sched:sched_wakeup sched:sched_migrate_task
 irq:irq_handler_entry irq:irq_handler_exit irq:softirq_entry irq:softirq_exit
 timer:hrtimer_expire_entry timer:hrtimer_expire_exit"
REST="sched:sched_wakeup_new sched:sched_pi_setprio sched:sched_process_fork
 sched:sched_process_exit irq:softirq_raise timer:hrtimer_start timer:hrtimer_cancel
 power:cpu_idle power:cpu_frequency ipi:* workqueue:workqueue_queue_work
 workqueue:workqueue_execute_start workqueue:workqueue_execute_end"
SYSCALLS="syscalls:sys_enter_futex syscalls:sys_exit_futex
 syscalls:sys_enter_clock_nanosleep syscalls:sys_exit_clock_nanosleep"

instance_on() {
    mkdir "$I"
    echo 1 > "$I/options/overwrite"
    echo 4096 > "$I/buffer_size_kb"
    echo mono > "$I/trace_clock"
    local e f
    for e in "$@"; do
        if [ "${e#*:}" = "*" ]; then f=$I/events/${e%%:*}/enable; else f=$I/events/${e%%:*}/${e#*:}/enable; fi
        [ -e "$f" ] && echo 1 > "$f"
    done
    echo 1 > "$I/tracing_on"
}
pipe() {
    timeout -k 5 60 taskset -c 0 perf bench sched pipe -l 1000000 2>/dev/null |
        awk '/ops\/sec/ {print $1}'
}
# run SET [EVENTS...]: one measurement of SET, printed as SET=OPS.
run() {
    local set=$1 ops
    shift
    [ $# -gt 0 ] && instance_on "$@"
    ops=$(pipe)
    remove
    printf ' %s=%s' "$set" "${ops:-0}"
}

{
    for r in $(seq "$ROUNDS"); do
        printf 'round %s:' "$r"
        run none
        # shellcheck disable=SC2086 # the lists are word lists
        run minimal $MINIMAL
        # shellcheck disable=SC2086
        run default-without-syscalls $MINIMAL $REST
        # shellcheck disable=SC2086
        run default $MINIMAL $REST $SYSCALLS
        # shellcheck disable=SC2086
        run minimal+syscalls $MINIMAL $SYSCALLS
        echo
    done
} | tee /dev/stderr | python3 -c '
import statistics as st, sys
rows = [dict((k, int(v)) for k, v in (x.split("=") for x in l.split()[2:])) for l in sys.stdin if l.startswith("round")]
base = st.median(r["none"] for r in rows)
print(f"{len(rows)} rounds, perf bench sched pipe -l 1000000 on CPU 0, ops/s")
for k in rows[0]:
    m = st.median(r[k] for r in rows)
    ratio = st.median(r[k] / r["none"] for r in rows if r["none"])
    print(f"{k:26s} median {m:8.0f}  loss {100 * (1 - m / base):5.1f} %  (median per-round ratio {ratio:.3f})")
'
