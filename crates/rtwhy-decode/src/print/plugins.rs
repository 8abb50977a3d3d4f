//! The output overrides of trace-cmd's plugins (sched_switch, function, hrtimer, kmem,
//! kvm) and of its function-graph printer.

use std::fmt::Write;

use super::fmt_eval::Ctx;
use super::{num, Line};
use crate::format::{EventFormat, Field};

/// Which override applies to an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handler {
    None,
    SchedSwitch,
    SchedWakeup,
    Function,
    KernelStack,
    HrtimerStart,
    HrtimerExpire,
    /// kmem events: `(caller+0xoff) ` then the normal output.
    KmemCallSite,
    KvmExit,
    KvmEntry,
    KvmEmulateInsn,
    TlbFlush,
    FuncgraphEntry,
    FuncgraphExit,
    /// libtraceevent's futex plugin: the operation by name, then its arguments.
    Futex,
}

impl Handler {
    /// The override for an event, by system and name.
    pub fn for_event(e: &EventFormat) -> Handler {
        match (e.system.as_str(), e.name.as_str()) {
            ("sched", "sched_switch") => Handler::SchedSwitch,
            ("syscalls", "sys_enter_futex") => Handler::Futex,
            ("sched", "sched_wakeup" | "sched_wakeup_new") => Handler::SchedWakeup,
            ("ftrace", "function") => Handler::Function,
            ("ftrace", "kernel_stack") => Handler::KernelStack,
            ("ftrace", "funcgraph_entry") => Handler::FuncgraphEntry,
            ("ftrace", "funcgraph_exit") => Handler::FuncgraphExit,
            ("timer", "hrtimer_start") => Handler::HrtimerStart,
            ("timer", "hrtimer_expire_entry") => Handler::HrtimerExpire,
            (
                "kmem",
                "kfree"
                | "kmalloc"
                | "kmalloc_node"
                | "kmem_cache_alloc"
                | "kmem_cache_alloc_node"
                | "kmem_cache_free",
            ) => Handler::KmemCallSite,
            ("kvm", "kvm_exit") => Handler::KvmExit,
            ("kvm", "kvm_entry") => Handler::KvmEntry,
            ("kvm", "kvm_emulate_insn") => Handler::KvmEmulateInsn,
            ("tlb", "tlb_flush") => Handler::TlbFlush,
            _ => Handler::None,
        }
    }
}

/// State plugins keep between records.
#[derive(Debug, Default)]
pub(crate) struct PluginState {
    /// Task names learned from sched events, used when saved cmdlines lack a pid.
    pub comms: super::PidMap<String>,
    /// When each learned name was learned (the record's sequence number given to
    /// [`learn`]), for printing a record as it printed at its place in the trace.
    pub learned_at: super::PidMap<u64>,
    /// Per-CPU call chains of the function plugin, for indentation.
    pub fstack: Vec<Vec<Option<String>>>,
}

fn own<'e>(e: &'e EventFormat, name: &str) -> Option<&'e Field> {
    e.fields.iter().find(|f| f.name == name)
}

/// `tep_get_field_val`: a field's number, or `None` (after printing the complaint when
/// `err`).
fn val(ctx: &Ctx<'_>, out: &mut Line, e: &EventFormat, name: &str, err: bool) -> Option<u64> {
    let Some(f) = own(e, name) else {
        if err {
            let _ = write!(out, "<CANT FIND FIELD {name}>");
        }
        return None;
    };
    if !matches!(f.size, 1 | 2 | 4 | 8) {
        if err {
            let _ = write!(out, " {name}=INVALID");
        }
        return None;
    }
    Some(ctx.read(f.offset, f.size))
}

/// `tep_print_num_field` with a `0x%llx`/`%llu` style format.
fn num_field(
    ctx: &Ctx<'_>,
    out: &mut Line,
    e: &EventFormat,
    name: &str,
    hex: bool,
    err: bool,
) -> bool {
    match own(e, name).filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) {
        Some(f) => {
            let v = ctx.read(f.offset, f.size);
            if hex {
                num::hex0x(out, v);
            } else {
                num::dec(out, v);
            }
            true
        }
        None => {
            if err {
                let _ = write!(out, "CAN'T FIND FIELD \"{name}\"");
            }
            false
        }
    }
}

fn comm_of<'a>(ctx: &Ctx<'a>, f: &Field) -> &'a [u8] {
    let bytes = ctx.data.get(f.offset..).unwrap_or_default();
    let bytes = &bytes[..f.size.min(bytes.len())];
    let n = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    &bytes[..n]
}

fn write_comm(
    ctx: &Ctx<'_>,
    out: &mut Line,
    st: &mut PluginState,
    e: &EventFormat,
    name: &str,
    pid: u64,
) {
    let field = e
        .common_fields
        .iter()
        .chain(e.fields.iter())
        .find(|f| f.name == name);
    if let Some(f) = field {
        let comm = comm_of(ctx, f);
        let start = out.len();
        out.push_lossy(comm);
        let pid = pid as i32;
        if pid != 0 && !st.comms.contains_key(&pid) {
            let text = String::from_utf8_lossy(out.tail(start)).into_owned();
            st.comms.insert(pid, text);
        }
        out.push(':');
    }
}

/// Learns the task names a sched event names, as printing it would, without printing.
/// Where [`learn`] reads a sched event's task names, found once per event format.
#[derive(Debug, Clone, Default)]
pub(crate) struct LearnPlan {
    steps: Vec<LearnStep>,
}

#[derive(Debug, Clone, Copy)]
enum LearnStep {
    /// A pid (offset, size) and, when the format has it, its name field.
    Name {
        pid: (usize, usize),
        comm: Option<(usize, usize)>,
    },
    /// A pid that cannot be read: printing stops there and learns nothing after it.
    Stop,
}

impl LearnPlan {
    /// The plan for events of format `e` handled by `h`; empty for events that name no
    /// task to learn.
    pub(crate) fn new(h: Handler, e: &EventFormat) -> LearnPlan {
        let pairs: &[(&str, &str)] = match h {
            Handler::SchedSwitch => &[("prev_pid", "prev_comm"), ("next_pid", "next_comm")],
            Handler::SchedWakeup => &[("pid", "comm")],
            _ => &[],
        };
        let mut steps = Vec::new();
        for (pid_field, comm_field) in pairs {
            let Some(pid) = own(e, pid_field).filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) else {
                steps.push(LearnStep::Stop);
                break;
            };
            let comm = e
                .common_fields
                .iter()
                .chain(e.fields.iter())
                .find(|f| f.name == *comm_field);
            steps.push(LearnStep::Name {
                pid: (pid.offset, pid.size),
                comm: comm.map(|f| (f.offset, f.size)),
            });
        }
        LearnPlan { steps }
    }

    /// Whether events of this format name tasks to learn.
    pub(crate) fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Learns the task names a sched event carries, as trace-cmd's sched plugin does while
/// printing it, following `plan` (made by [`LearnPlan::new`] for the record's format).
pub(crate) fn learn(plan: &LearnPlan, ctx: &Ctx<'_>, st: &mut PluginState, seq: u64) {
    for step in &plan.steps {
        let LearnStep::Name { pid, comm } = *step else {
            return;
        };
        let pid = ctx.read(pid.0, pid.1) as i32;
        let Some((offset, size)) = comm else {
            continue;
        };
        if pid != 0 && !st.comms.contains_key(&pid) {
            let bytes = ctx.data.get(offset..).unwrap_or_default();
            let bytes = bytes.get(..size.min(bytes.len())).unwrap_or_default();
            let n = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
            let text = String::from_utf8_lossy(bytes.get(..n).unwrap_or_default());
            st.comms.insert(pid, text.into_owned());
            st.learned_at.insert(pid, seq);
        }
    }
}

/// How the futex plugin shows `val` and the fourth argument of one operation.
#[derive(Clone, Copy)]
enum FutexArg {
    None,
    Hex,
    Dec,
}

/// Per futex command (`op` without the private and clock flags): its name, how `val`
/// shows, how the fourth argument shows (`utime=` in hex, or `val2=` in decimal), and
/// whether `uaddr2` and `val3` show.
const FUTEX_OPS: [(&str, FutexArg, FutexArg, bool, bool); 13] = [
    ("FUTEX_WAIT", FutexArg::Hex, FutexArg::Hex, false, false),
    ("FUTEX_WAKE", FutexArg::Dec, FutexArg::None, false, false),
    ("FUTEX_FD", FutexArg::Dec, FutexArg::None, false, false),
    ("FUTEX_REQUEUE", FutexArg::Dec, FutexArg::Dec, true, false),
    (
        "FUTEX_CMP_REQUEUE",
        FutexArg::Dec,
        FutexArg::Dec,
        true,
        true,
    ),
    ("FUTEX_WAKE_OP", FutexArg::Dec, FutexArg::Dec, true, true),
    ("FUTEX_LOCK_PI", FutexArg::None, FutexArg::Hex, false, false),
    (
        "FUTEX_UNLOCK_PI",
        FutexArg::None,
        FutexArg::None,
        false,
        false,
    ),
    (
        "FUTEX_TRYLOCK_PI",
        FutexArg::None,
        FutexArg::None,
        false,
        false,
    ),
    (
        "FUTEX_WAIT_BITSET",
        FutexArg::Hex,
        FutexArg::Hex,
        false,
        true,
    ),
    (
        "FUTEX_WAKE_BITSET",
        FutexArg::Dec,
        FutexArg::None,
        false,
        true,
    ),
    (
        "FUTEX_WAIT_REQUEUE_PI",
        FutexArg::Hex,
        FutexArg::Hex,
        true,
        true,
    ),
    (
        "FUTEX_CMP_REQUEUE_PI",
        FutexArg::Dec,
        FutexArg::Dec,
        true,
        true,
    ),
];

const FUTEX_PRIVATE_FLAG: u64 = 128;
const FUTEX_CLOCK_REALTIME: u64 = 256;

/// `sys_enter_futex` as libtraceevent's futex plugin prints it
/// (`op=FUTEX_WAKE|FUTEX_PRIVATE_FLAG uaddr=0x7f9dd02cca4c val=1`); nothing past a
/// missing field or for an unknown command, as there.
fn write_futex(ctx: &Ctx<'_>, out: &mut Line, e: &EventFormat) {
    let mut args = [0u64; 6];
    for (slot, name) in args
        .iter_mut()
        .zip(["uaddr", "op", "val", "utime", "uaddr2", "val3"])
    {
        match val(ctx, out, e, name, true) {
            Some(v) => *slot = v,
            None => return,
        }
    }
    let [uaddr, op, v, utime, uaddr2, val3] = args;
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    let Some((name, val_as, fourth, show_uaddr2, show_val3)) =
        usize::try_from(cmd).ok().and_then(|c| FUTEX_OPS.get(c))
    else {
        return;
    };
    out.push_str("op=");
    out.push_str(name);
    if op & FUTEX_PRIVATE_FLAG != 0 {
        out.push_str("|FUTEX_PRIVATE_FLAG");
    }
    if op & FUTEX_CLOCK_REALTIME != 0 {
        out.push_str("|FUTEX_CLOCK_REALTIME");
    }
    let _ = write!(out, " uaddr=0x{uaddr:08x}");
    match val_as {
        FutexArg::Hex => {
            let _ = write!(out, " val=0x{v:08x}");
        }
        FutexArg::Dec => {
            let _ = write!(out, " val={v}");
        }
        FutexArg::None => {}
    }
    match fourth {
        FutexArg::Hex => {
            let _ = write!(out, " utime=0x{utime:08x}");
        }
        FutexArg::Dec => {
            let _ = write!(out, " val2={utime}");
        }
        FutexArg::None => {}
    }
    if *show_uaddr2 {
        let _ = write!(out, " uaddr2=0x{uaddr2:08x}");
    }
    if *show_val3 {
        let _ = write!(out, " val3=0x{val3:08x}");
    }
}

fn write_state(out: &mut Line, v: i32) {
    const STATES: &[u8] = b"SDTtZXxW";
    let mut found = false;
    for (i, c) in STATES.iter().enumerate() {
        if v & (1 << i) == 0 {
            continue;
        }
        if found {
            out.push('|');
        }
        found = true;
        out.push(char::from(*c));
    }
    if !found {
        out.push('R');
    }
}

/// Runs an override. Returns true when the normal print format output should follow.
pub(crate) fn run(
    h: Handler,
    ctx: &Ctx<'_>,
    out: &mut Line,
    st: &mut PluginState,
    e: &EventFormat,
    cpu: u32,
) -> bool {
    match h {
        Handler::None => true,
        Handler::SchedSwitch => {
            let Some(pid) = val(ctx, out, e, "prev_pid", true) else {
                out.push('!');
                return true;
            };
            write_comm(ctx, out, st, e, "prev_comm", pid);
            num::signed(out, pid as i64);
            out.push(' ');
            if let Some(p) = val(ctx, out, e, "prev_prio", true) {
                out.push('[');
                num::signed(out, i64::from(p as i32));
                out.push_str("] ");
            }
            if let Some(s) = val(ctx, out, e, "prev_state", true) {
                write_state(out, s as i32);
            }
            out.push_str(" ==> ");
            let Some(pid) = val(ctx, out, e, "next_pid", true) else {
                out.push('!');
                return true;
            };
            write_comm(ctx, out, st, e, "next_comm", pid);
            num::signed(out, pid as i64);
            if let Some(p) = val(ctx, out, e, "next_prio", true) {
                out.push_str(" [");
                num::signed(out, i64::from(p as i32));
                out.push(']');
            }
            false
        }
        Handler::Futex => {
            write_futex(ctx, out, e);
            false
        }
        Handler::SchedWakeup => {
            let Some(pid) = val(ctx, out, e, "pid", true) else {
                out.push('!');
                return true;
            };
            write_comm(ctx, out, st, e, "comm", pid);
            num::signed(out, pid as i64);
            if let Some(p) = val(ctx, out, e, "prio", true) {
                out.push_str(" [");
                num::signed(out, p as i64);
                out.push(']');
            }
            if let Some(s) = val(ctx, out, e, "success", false) {
                out.push_str(" success=");
                num::signed(out, s as i64);
            }
            if let Some(c) = val(ctx, out, e, "target_cpu", true) {
                out.push_str(" CPU:");
                num::dec_width(out, c, 3, true);
            }
            false
        }
        Handler::Function => {
            let Some(ip) = val(ctx, out, e, "ip", true) else {
                out.push('!');
                return true;
            };
            let func = ctx.funcs.find(ip).map(|(_, n)| n.to_string());
            let Some(pip) = val(ctx, out, e, "parent_ip", true) else {
                out.push('!');
                return true;
            };
            let parent = ctx.funcs.find(pip).map(|(_, n)| n.to_string());
            let mut index = 0;
            if let Some(parent) = parent {
                index = function_index(st, &parent, func.clone(), cpu as usize);
            }
            for _ in 0..index * 3 {
                out.push(' ');
            }
            match func {
                Some(f) => out.push_str(&f),
                None => {
                    let _ = write!(out, "0x{ip:x}");
                }
            }
            false
        }
        Handler::KernelStack => {
            let Some(f) = e
                .common_fields
                .iter()
                .chain(e.fields.iter())
                .find(|f| f.name == "caller")
            else {
                out.push_str("<CANT FIND FIELD caller>");
                return false;
            };
            out.push_str("<stack trace >\n");
            let ls = ctx.long_size;
            let mut at = f.offset;
            while at < ctx.data.len() {
                let addr = ctx.read(at, ls);
                if (ls == 8 && addr == u64::MAX) || addr as u32 == u32::MAX {
                    break;
                }
                match ctx.funcs.find(addr) {
                    Some((_, name)) => {
                        let _ = writeln!(out, "=> {name} ({addr:x})");
                    }
                    None => {
                        let _ = writeln!(out, "=> {addr:x}");
                    }
                }
                at += ls;
            }
            false
        }
        Handler::HrtimerStart | Handler::HrtimerExpire => {
            out.push_str("hrtimer=");
            if !num_field(ctx, out, e, "timer", true, false) {
                num_field(ctx, out, e, "hrtimer", true, true);
            }
            if h == Handler::HrtimerExpire {
                out.push_str(" now=");
                num_field(ctx, out, e, "now", false, true);
            }
            if let Some(f) = own(e, "function").filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) {
                let v = ctx.read(f.offset, f.size);
                match ctx.funcs.find(v) {
                    Some((start, name)) => {
                        out.push_str(" function=");
                        out.push_str(name);
                        out.push_str("/0x");
                        num::hex(out, start.wrapping_sub(v));
                    }
                    None => {
                        let _ = write!(out, " function=0x{v:08x}");
                    }
                }
            }
            if h == Handler::HrtimerStart {
                out.push_str(" expires=");
                num_field(ctx, out, e, "expires", false, true);
                out.push_str(" softexpires=");
                num_field(ctx, out, e, "softexpires", false, true);
            }
            false
        }
        Handler::KmemCallSite => {
            if let Some(f) = own(e, "call_site").filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) {
                let v = ctx.read(f.offset, f.size);
                if let Some((start, name)) = ctx.funcs.find(v) {
                    let _ = write!(out, "({name}+0x{:x}) ", v.wrapping_sub(start) as u32);
                }
            }
            true
        }
        Handler::KvmExit => {
            let Some(reason) = val(ctx, out, e, "exit_reason", true) else {
                return true;
            };
            let isa = val(ctx, out, e, "isa", false).unwrap_or(1);
            match exit_reason(isa, reason as i32) {
                Some(r) => {
                    let _ = write!(out, "reason {r}");
                }
                None => {
                    let _ = write!(out, "reason UNKNOWN ({reason})");
                }
            }
            let Some(rip) = val(ctx, out, e, "guest_rip", true) else {
                return true;
            };
            let _ = write!(out, " rip 0x{rip:x}");
            if let (Some(a), Some(b)) = (
                val(ctx, out, e, "info1", false),
                val(ctx, out, e, "info2", false),
            ) {
                let _ = write!(out, " info {a:x} {b:x}");
            }
            false
        }
        Handler::KvmEntry => {
            match own(e, "vcpu_id").filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) {
                Some(f) => {
                    let _ = write!(out, " vcpu {}", ctx.read(f.offset, f.size) as u32);
                }
                None => out.push_str("CAN'T FIND FIELD \"vcpu_id\""),
            }
            let Some(rip) = val(ctx, out, e, "rip", true) else {
                return true;
            };
            let _ = write!(out, " rip 0x{rip:x}");
            false
        }
        Handler::KvmEmulateInsn => {
            let mut get = |n: &str| val(ctx, out, e, n, true);
            let (Some(rip), Some(csbase), Some(len), Some(_flags), Some(failed)) = (
                get("rip"),
                get("csbase"),
                get("len"),
                get("flags"),
                get("failed"),
            ) else {
                return true;
            };
            let Some(insn) = e.fields.iter().find(|f| f.name == "insn") else {
                out.push_str("<CANT FIND FIELD insn>");
                return true;
            };
            let _ = write!(out, "{csbase:x}:{rip:x}: ");
            let bytes = ctx.data.get(insn.offset..).unwrap_or_default();
            for (i, b) in bytes.iter().take((len as usize).min(15)).enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{b:02x}");
            }
            if failed != 0 {
                out.push_str(" FAIL");
            }
            false
        }
        Handler::TlbFlush => {
            out.push_str("pages=");
            match own(e, "pages").filter(|f| matches!(f.size, 1 | 2 | 4 | 8)) {
                Some(f) => {
                    let _ = write!(out, "{}", ctx.read(f.offset, f.size) as i64);
                }
                None => out.push_str("CAN'T FIND FIELD \"pages\""),
            }
            let Some(reason) = val(ctx, out, e, "reason", true) else {
                out.push('!');
                return true;
            };
            out.push_str(" reason=");
            out.push_str(match reason {
                0 => "flush on task switch",
                1 => "remote shootdown",
                2 => "local shootdown",
                3 => "local mm shootdown",
                _ => "unknown",
            });
            let _ = write!(out, " ({})", reason as i64);
            false
        }
        Handler::FuncgraphEntry => {
            let func = own(e, "func")
                .map(|f| ctx.read(f.offset, f.size))
                .unwrap_or(0);
            let depth = own(e, "depth")
                .map(|f| ctx.read(f.offset, f.size) as i32)
                .unwrap_or(0);
            out.push_str("             |  ");
            for _ in 0..graph_indent(depth) {
                out.push(' ');
            }
            match ctx.funcs.find(func) {
                Some((_, name)) => out.push_str(name),
                None => {
                    let _ = write!(out, "0x{func:x}");
                }
            }
            out.push_str("() {");
            false
        }
        Handler::FuncgraphExit => {
            let get = |n: &str| own(e, n).map(|f| ctx.read(f.offset, f.size)).unwrap_or(0);
            let duration = get("rettime").wrapping_sub(get("calltime"));
            let depth = get("depth") as i32;
            out.push_str(match duration {
                d if d > 1_000_000_000 => "$ ",
                d if d > 100_000_000 => "@ ",
                d if d > 10_000_000 => "* ",
                d if d > 1_000_000 => "# ",
                d if d > 100_000 => "! ",
                d if d > 10_000 => "+ ",
                _ => "  ",
            });
            let usecs = format!("{}", duration / 1000);
            let mut len = usecs.len();
            out.push_str(&usecs);
            if len < 7 {
                let _ = write!(out, ".{:03}", duration % 1000);
                len += 4;
            }
            out.push_str(" us ");
            for _ in len..7 {
                out.push(' ');
            }
            out.push_str("|  ");
            for _ in 0..graph_indent(depth) {
                out.push(' ');
            }
            out.push('}');
            false
        }
    }
}

/// The kernel never nests the function graph deeper than `FTRACE_RETFUNC_DEPTH` (50); a
/// depth read from a damaged record could otherwise ask for four billion spaces (and
/// overflow `depth * 2` on the way).
const MAX_GRAPH_DEPTH: i32 = 1024;

/// Spaces the function graph plugin indents a call at `depth`, two per level.
fn graph_indent(depth: i32) -> usize {
    depth.clamp(0, MAX_GRAPH_DEPTH) as usize * 2
}

/// The function plugin's indentation: the position of the parent in this CPU's chain.
fn function_index(st: &mut PluginState, parent: &str, child: Option<String>, cpu: usize) -> usize {
    if st.fstack.len() <= cpu {
        st.fstack.resize(cpu + 1, Vec::new());
    }
    let stack = &mut st.fstack[cpu];
    let mut found = None;
    for (i, s) in stack.iter().enumerate() {
        match s {
            Some(s) if s == parent => {
                found = Some(i);
                break;
            }
            Some(_) => {}
            None => break,
        }
    }
    let set = |stack: &mut Vec<Option<String>>, pos: usize, v: Option<String>| {
        let Some(v) = v else { return };
        if stack.len() <= pos {
            stack.resize(pos + 1, None);
        }
        stack[pos] = Some(v);
    };
    match found {
        Some(i) => {
            set(stack, i + 1, child);
            i
        }
        None => {
            set(stack, 0, Some(parent.to_string()));
            set(stack, 1, child);
            0
        }
    }
}

fn exit_reason(isa: u64, v: i32) -> Option<&'static str> {
    const VMX: &[(&str, i32)] = &[
        ("EXCEPTION_NMI", 0),
        ("EXTERNAL_INTERRUPT", 1),
        ("TRIPLE_FAULT", 2),
        ("PENDING_INTERRUPT", 7),
        ("NMI_WINDOW", 8),
        ("TASK_SWITCH", 9),
        ("CPUID", 10),
        ("HLT", 12),
        ("INVD", 13),
        ("INVLPG", 14),
        ("RDPMC", 15),
        ("RDTSC", 16),
        ("VMCALL", 18),
        ("VMCLEAR", 19),
        ("VMLAUNCH", 20),
        ("VMPTRLD", 21),
        ("VMPTRST", 22),
        ("VMREAD", 23),
        ("VMRESUME", 24),
        ("VMWRITE", 25),
        ("VMOFF", 26),
        ("VMON", 27),
        ("CR_ACCESS", 28),
        ("DR_ACCESS", 29),
        ("IO_INSTRUCTION", 30),
        ("MSR_READ", 31),
        ("MSR_WRITE", 32),
        ("MWAIT_INSTRUCTION", 36),
        ("MONITOR_INSTRUCTION", 39),
        ("PAUSE_INSTRUCTION", 40),
        ("MCE_DURING_VMENTRY", 41),
        ("TPR_BELOW_THRESHOLD", 43),
        ("APIC_ACCESS", 44),
        ("EOI_INDUCED", 45),
        ("EPT_VIOLATION", 48),
        ("EPT_MISCONFIG", 49),
        ("INVEPT", 50),
        ("PREEMPTION_TIMER", 52),
        ("WBINVD", 54),
        ("XSETBV", 55),
        ("APIC_WRITE", 56),
        ("INVPCID", 58),
        ("PML_FULL", 62),
        ("XSAVES", 63),
        ("XRSTORS", 64),
    ];
    match isa {
        1 => VMX.iter().find(|(_, n)| *n == v).map(|(s, _)| *s),
        2 => None,
        _ => Some("UNKNOWN-ISA"),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Endian, EventFormat, Record, TraceMeta};

    const FUNCGRAPH_ENTRY: &str = "name: funcgraph_entry\nID: 11\nformat:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:unsigned long func;\toffset:8;\tsize:4;\tsigned:0;
\tfield:int depth;\toffset:12;\tsize:4;\tsigned:1;

print fmt: \"--> %lx (%d)\", REC->func, REC->depth
";

    /// Regression: a damaged funcgraph record with depth near `i32::MAX` overflowed
    /// `depth * 2` (a panic in debug builds) or pushed billions of spaces.
    #[test]
    fn huge_funcgraph_depth_is_bounded() {
        let format = EventFormat::parse("ftrace", FUNCGRAPH_ENTRY).expect("parses");
        let mut meta = TraceMeta::new(Endian::Little, 4, 4096);
        meta.formats.insert(11, format);
        let mut payload = vec![0u8; 16];
        payload[..2].copy_from_slice(&11u16.to_le_bytes());
        payload[12..16].copy_from_slice(&i32::MAX.to_le_bytes());
        let rec = Record {
            ts: 1,
            cpu: 0,
            data: &payload,
            format: meta.format(11),
            endian: Endian::Little,
            missed_before: None,
            following: &[],
        };
        let mut printer = crate::print::Printer::new(std::sync::Arc::new(meta.clone()));
        let mut line = String::new();
        printer.write_report(&rec, &mut line);
        assert!(line.len() < 4096, "{} bytes", line.len());
        assert!(line.ends_with("0x0() {"), "{line}");
    }
}
