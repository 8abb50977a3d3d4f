//! Events as trace lines for evidence: `comm-pid [cpu] seconds: event: fields`, close
//! to what `trace-cmd report` prints, so a reader can find the line in their own tools.

use std::fmt::Write as _;

use rtwhy_model::{softirq_name, Event, EventKind, FieldValue, TaskState};

/// Renders `ev`; `comm` is the name of `ev.pid` as far as the analyzer knows it.
pub(crate) fn trace_line(ev: &Event, comm: &str) -> String {
    let mut s = String::with_capacity(128);
    let _ = write!(
        s,
        "{comm}-{} [{:03}] {}: {}: ",
        ev.pid,
        ev.cpu,
        ev.ts,
        ev.kind.name()
    );
    let _ = match &ev.kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => write!(
            s,
            "{prev_comm}:{prev_pid} [{prev_prio}] {} ==> {next_comm}:{next_pid} [{next_prio}]",
            state_letter(*prev_state)
        ),
        EventKind::SchedWaking {
            comm,
            pid,
            prio,
            target_cpu,
        } => write!(
            s,
            "comm={comm} pid={pid} prio={prio} target_cpu={target_cpu:03}"
        ),
        EventKind::SchedWakeup {
            comm,
            pid,
            prio,
            target_cpu,
        }
        | EventKind::SchedWakeupNew {
            comm,
            pid,
            prio,
            target_cpu,
        } => write!(s, "{comm}:{pid} [{prio}] CPU:{target_cpu:03}"),
        EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } => write!(
            s,
            "comm={comm} pid={pid} prio={prio} orig_cpu={orig_cpu} dest_cpu={dest_cpu}"
        ),
        EventKind::SchedPiSetprio {
            comm,
            pid,
            oldprio,
            newprio,
        } => write!(
            s,
            "comm={comm} pid={pid} oldprio={oldprio} newprio={newprio}"
        ),
        EventKind::IrqHandlerEntry { irq, name } => write!(s, "irq={irq} name={name}"),
        EventKind::IrqHandlerExit { irq, ret } => write!(
            s,
            "irq={irq} ret={}",
            if *ret != 0 { "handled" } else { "unhandled" }
        ),
        EventKind::SoftirqEntry { vec }
        | EventKind::SoftirqExit { vec }
        | EventKind::SoftirqRaise { vec } => {
            write!(s, "vec={vec} [action={}]", softirq_name(*vec))
        }
        EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
            ..
        } => write!(
            s,
            "hrtimer={hrtimer:#x} function={function:#x} expires={expires} softexpires={softexpires}"
        ),
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => write!(s, "hrtimer={hrtimer:#x} now={now} function={function:#x}"),
        EventKind::HrtimerExpireExit { hrtimer } | EventKind::HrtimerCancel { hrtimer } => {
            write!(s, "hrtimer={hrtimer:#x}")
        }
        EventKind::CpuIdle { state, cpu_id } | EventKind::CpuFrequency { state, cpu_id } => {
            write!(s, "state={state} cpu_id={cpu_id}")
        }
        EventKind::Ipi { target_cpu, .. } => match target_cpu {
            Some(c) => write!(s, "target_cpu={c}"),
            None => Ok(()),
        },
        EventKind::WorkqueueExecuteStart { work, function } => {
            write!(s, "work struct {work:#x}: function {function:#x}")
        }
        EventKind::WorkqueueExecuteEnd { work } => write!(s, "work struct {work:#x}"),
        EventKind::SyscallEnter { args, .. } => {
            let mut first = true;
            for a in args {
                let _ = write!(s, "{}{a:#x}", if first { "" } else { ", " });
                first = false;
            }
            Ok(())
        }
        EventKind::SyscallExit { ret, .. } => write!(s, "{ret:#x}"),
        EventKind::Print { text } => write!(s, "{text}"),
        EventKind::Generic(g) => {
            for (name, v) in &g.fields {
                let _ = match v {
                    FieldValue::Signed(i) => write!(s, "{name}={i} "),
                    FieldValue::Unsigned(u) => write!(s, "{name}={u} "),
                    FieldValue::Str(t) => write!(s, "{name}={t} "),
                    FieldValue::Bytes(b) => write!(s, "{name}=[{} bytes] ", b.len()),
                };
            }
            Ok(())
        }
    };
    while s.ends_with(' ') {
        s.pop();
    }
    s
}

/// `R`, `S`, `D`... the way trace-cmd prints `prev_state` (simplified to the first state).
pub(crate) fn state_letter(state: TaskState) -> &'static str {
    if state.is_runnable() {
        return "R";
    }
    const LETTERS: [&str; 8] = ["S", "D", "T", "t", "X", "Z", "P", "I"];
    let bits = state.0 & 0xff;
    for (i, l) in LETTERS.iter().enumerate() {
        if bits & (1 << i) != 0 {
            return l;
        }
    }
    "?"
}
