//! Turning records into the analyzer's typed [`Event`]s.
//!
//! Field positions are looked up once per event id from the trace's own formats, so the
//! same code decodes every kernel version; an event whose format lacks a field the
//! typed form needs falls back to [`EventKind::Generic`].

use std::collections::HashMap;

use rtwhy_model::{
    Comm, Event, EventKind, FieldValue, GenericEvent, Nanos, SyscallKind, TaskState,
};

use crate::format::{EventFormat, Field};
use crate::meta::TraceMeta;
use crate::record::Record;

/// Converts records to typed events, caching each event id's field layout.
#[derive(Debug, Default)]
pub struct EventDecoder {
    /// By event id, for the ids kernels actually use (looked up once per record, so a
    /// vector rather than a hash map).
    dense: Vec<Option<Cached>>,
    /// Ids beyond `DENSE_IDS`, from odd or damaged files.
    sparse: HashMap<u32, Cached>,
}

/// Event ids below this are cached in a vector.
const DENSE_IDS: usize = 1 << 16;

#[derive(Debug, Clone)]
struct Cached {
    plan: Plan,
    /// `common_pid`'s offset and size.
    pid_at: (usize, usize),
}

fn cached(f: &EventFormat) -> Cached {
    Cached {
        plan: plan(f),
        pid_at: f
            .field("common_pid")
            .map(|c| (c.offset, c.size))
            .unwrap_or((4, 4)),
    }
}

#[derive(Debug, Clone)]
enum Plan {
    Switch([Field; 7]),
    Wake(WakeKind, [Field; 3], Option<Field>),
    Migrate([Field; 5]),
    PiSetprio([Field; 4]),
    IrqEntry(Field, Field),
    IrqExit(Field, Field),
    Softirq(SoftirqKind, Field),
    HrtimerStart([Field; 4], Option<Field>),
    HrtimerExpireEntry([Field; 3]),
    Hrtimer(HrtimerKind, Field),
    Power(PowerKind, Field, Field),
    Ipi(Option<Field>),
    WorkStart(Field, Field),
    WorkEnd(Field),
    SysEnter(SyscallKind, Vec<Field>),
    SysExit(SyscallKind, Field),
    Print(Field),
    Generic,
}

#[derive(Debug, Clone, Copy)]
enum WakeKind {
    Waking,
    Wakeup,
    WakeupNew,
}

#[derive(Debug, Clone, Copy)]
enum SoftirqKind {
    Entry,
    Exit,
    Raise,
}

#[derive(Debug, Clone, Copy)]
enum HrtimerKind {
    ExpireExit,
    Cancel,
}

#[derive(Debug, Clone, Copy)]
enum PowerKind {
    Idle,
    Frequency,
}

fn fields<const N: usize>(f: &EventFormat, names: [&str; N]) -> Option<[Field; N]> {
    let found: Vec<Field> = names
        .iter()
        .map(|n| f.field(n).cloned())
        .collect::<Option<_>>()?;
    found.try_into().ok()
}

fn plan(f: &EventFormat) -> Plan {
    let p = match f.name.as_str() {
        "sched_switch" => fields(
            f,
            [
                "prev_comm",
                "prev_pid",
                "prev_prio",
                "prev_state",
                "next_comm",
                "next_pid",
                "next_prio",
            ],
        )
        .map(Plan::Switch),
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let kind = match f.name.as_str() {
                "sched_waking" => WakeKind::Waking,
                "sched_wakeup" => WakeKind::Wakeup,
                _ => WakeKind::WakeupNew,
            };
            fields(f, ["comm", "pid", "prio"])
                .map(|fs| Plan::Wake(kind, fs, f.field("target_cpu").cloned()))
        }
        "sched_migrate_task" => {
            fields(f, ["comm", "pid", "prio", "orig_cpu", "dest_cpu"]).map(Plan::Migrate)
        }
        "sched_pi_setprio" => fields(f, ["comm", "pid", "oldprio", "newprio"]).map(Plan::PiSetprio),
        "irq_handler_entry" => fields(f, ["irq", "name"]).map(|[a, b]| Plan::IrqEntry(a, b)),
        "irq_handler_exit" => fields(f, ["irq", "ret"]).map(|[a, b]| Plan::IrqExit(a, b)),
        "softirq_entry" => fields(f, ["vec"]).map(|[v]| Plan::Softirq(SoftirqKind::Entry, v)),
        "softirq_exit" => fields(f, ["vec"]).map(|[v]| Plan::Softirq(SoftirqKind::Exit, v)),
        "softirq_raise" => fields(f, ["vec"]).map(|[v]| Plan::Softirq(SoftirqKind::Raise, v)),
        "hrtimer_start" => fields(f, ["hrtimer", "function", "expires", "softexpires"])
            .map(|fs| Plan::HrtimerStart(fs, f.field("mode").cloned())),
        "hrtimer_expire_entry" => {
            fields(f, ["hrtimer", "now", "function"]).map(Plan::HrtimerExpireEntry)
        }
        "hrtimer_expire_exit" => {
            fields(f, ["hrtimer"]).map(|[h]| Plan::Hrtimer(HrtimerKind::ExpireExit, h))
        }
        "hrtimer_cancel" => fields(f, ["hrtimer"]).map(|[h]| Plan::Hrtimer(HrtimerKind::Cancel, h)),
        "cpu_idle" => {
            fields(f, ["state", "cpu_id"]).map(|[a, b]| Plan::Power(PowerKind::Idle, a, b))
        }
        "cpu_frequency" => {
            fields(f, ["state", "cpu_id"]).map(|[a, b]| Plan::Power(PowerKind::Frequency, a, b))
        }
        n if f.system == "ipi" || n.starts_with("ipi_") => Some(Plan::Ipi(
            f.field("cpu").or_else(|| f.field("target_cpu")).cloned(),
        )),
        "workqueue_execute_start" => {
            fields(f, ["work", "function"]).map(|[a, b]| Plan::WorkStart(a, b))
        }
        "workqueue_execute_end" => fields(f, ["work"]).map(|[a]| Plan::WorkEnd(a)),
        "print" | "bputs" if f.system == "ftrace" => f
            .field("buf")
            .or_else(|| f.field("str"))
            .cloned()
            .map(Plan::Print),
        n => syscall(n).and_then(|(enter, call)| {
            if enter {
                Some(Plan::SysEnter(
                    call,
                    f.fields
                        .iter()
                        .filter(|x| x.name != "__syscall_nr")
                        .cloned()
                        .collect(),
                ))
            } else {
                f.field("ret").cloned().map(|r| Plan::SysExit(call, r))
            }
        }),
    };
    p.unwrap_or(Plan::Generic)
}

fn syscall(name: &str) -> Option<(bool, SyscallKind)> {
    let (enter, call) = if let Some(c) = name.strip_prefix("sys_enter_") {
        (true, c)
    } else {
        (false, name.strip_prefix("sys_exit_")?)
    };
    let kind = match call {
        "futex" => SyscallKind::Futex,
        "nanosleep" => SyscallKind::Nanosleep,
        "clock_nanosleep" => SyscallKind::ClockNanosleep,
        _ => return None,
    };
    Some((enter, kind))
}

fn comm(r: &Record<'_>, f: &Field) -> Comm {
    Comm::from_bytes(r.array(f).unwrap_or_default())
}

fn i32_of(r: &Record<'_>, f: &Field) -> i32 {
    r.int(f).unwrap_or(0) as i32
}

fn u64_of(r: &Record<'_>, f: &Field) -> u64 {
    r.uint(f).unwrap_or(0)
}

impl EventDecoder {
    /// A decoder with an empty cache.
    pub fn new() -> EventDecoder {
        EventDecoder::default()
    }

    /// The typed event of a record. Records of unknown ids become generic events named
    /// `unknown_<id>`.
    pub fn decode(&mut self, meta: &TraceMeta, r: &Record<'_>) -> Event {
        self.decode_fields_of(meta, r, |_| true)
    }

    /// Like [`EventDecoder::decode`], except that an event without a typed form gets its
    /// fields only when `wanted(name)`; the others come as their system and name alone.
    /// For a reader that looks into few such events (the analyzer) on traces where they
    /// are many (`sched_stat_runtime`, `workqueue_queue_work`...).
    pub fn decode_fields_of(
        &mut self,
        meta: &TraceMeta,
        r: &Record<'_>,
        wanted: fn(&str) -> bool,
    ) -> Event {
        let (kind, pid) = match r.format {
            Some(f) => {
                let c = if (f.id as usize) < DENSE_IDS {
                    let i = f.id as usize;
                    if self.dense.len() <= i {
                        self.dense.resize_with(i + 1, || None);
                    }
                    match self.dense.get_mut(i) {
                        Some(slot) => slot.get_or_insert_with(|| cached(f)),
                        None => self.sparse.entry(f.id).or_insert_with(|| cached(f)),
                    }
                } else {
                    self.sparse.entry(f.id).or_insert_with(|| cached(f))
                };
                let pid = r
                    .endian
                    .read_uint(r.data, c.pid_at.0, c.pid_at.1)
                    .map(|v| v as i32)
                    .unwrap_or(-1);
                let kind = match c.plan {
                    Plan::Generic if !wanted(&f.name) => EventKind::Generic(GenericEvent {
                        system: f.system.clone(),
                        name: f.name.clone(),
                        fields: Vec::new(),
                    }),
                    _ => kind_of(&c.plan, f, r, meta),
                };
                (kind, pid)
            }
            None => (
                EventKind::Generic(GenericEvent {
                    system: String::new(),
                    name: format!("unknown_{}", r.event_id().unwrap_or(0)),
                    fields: Vec::new(),
                }),
                r.pid(),
            ),
        };
        Event {
            ts: Nanos(r.ts),
            cpu: r.cpu,
            pid,
            kind,
        }
    }
}

fn kind_of(plan: &Plan, f: &EventFormat, r: &Record<'_>, meta: &TraceMeta) -> EventKind {
    match plan {
        Plan::Switch([pc, pp, ppr, ps, nc, np, npr]) => EventKind::SchedSwitch {
            prev_comm: comm(r, pc),
            prev_pid: i32_of(r, pp),
            prev_prio: i32_of(r, ppr),
            prev_state: TaskState(u64_of(r, ps)),
            next_comm: comm(r, nc),
            next_pid: i32_of(r, np),
            next_prio: i32_of(r, npr),
        },
        Plan::Wake(k, [c, p, pr], t) => {
            let (comm, pid, prio) = (comm(r, c), i32_of(r, p), i32_of(r, pr));
            let target_cpu = t.as_ref().map(|t| i32_of(r, t)).unwrap_or(r.cpu as i32);
            match k {
                WakeKind::Waking => EventKind::SchedWaking {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
                WakeKind::Wakeup => EventKind::SchedWakeup {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
                WakeKind::WakeupNew => EventKind::SchedWakeupNew {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
            }
        }
        Plan::Migrate([c, p, pr, o, d]) => EventKind::SchedMigrateTask {
            comm: comm(r, c),
            pid: i32_of(r, p),
            prio: i32_of(r, pr),
            orig_cpu: i32_of(r, o),
            dest_cpu: i32_of(r, d),
        },
        Plan::PiSetprio([c, p, o, n]) => EventKind::SchedPiSetprio {
            comm: comm(r, c),
            pid: i32_of(r, p),
            oldprio: i32_of(r, o),
            newprio: i32_of(r, n),
        },
        Plan::IrqEntry(irq, name) => EventKind::IrqHandlerEntry {
            irq: i32_of(r, irq),
            name: String::from_utf8_lossy(r.str_bytes(name).unwrap_or_default()).into_owned(),
        },
        Plan::IrqExit(irq, ret) => EventKind::IrqHandlerExit {
            irq: i32_of(r, irq),
            ret: i32_of(r, ret),
        },
        Plan::Softirq(k, v) => {
            let vec = u64_of(r, v) as u32;
            match k {
                SoftirqKind::Entry => EventKind::SoftirqEntry { vec },
                SoftirqKind::Exit => EventKind::SoftirqExit { vec },
                SoftirqKind::Raise => EventKind::SoftirqRaise { vec },
            }
        }
        Plan::HrtimerStart([h, func, e, s], mode) => EventKind::HrtimerStart {
            hrtimer: u64_of(r, h),
            function: u64_of(r, func),
            expires: r.int(e).unwrap_or(0),
            softexpires: r.int(s).unwrap_or(0),
            mode: mode.as_ref().map(|m| u64_of(r, m) as u32),
        },
        Plan::HrtimerExpireEntry([h, now, func]) => EventKind::HrtimerExpireEntry {
            hrtimer: u64_of(r, h),
            now: r.int(now).unwrap_or(0),
            function: u64_of(r, func),
        },
        Plan::Hrtimer(k, h) => match k {
            HrtimerKind::ExpireExit => EventKind::HrtimerExpireExit {
                hrtimer: u64_of(r, h),
            },
            HrtimerKind::Cancel => EventKind::HrtimerCancel {
                hrtimer: u64_of(r, h),
            },
        },
        Plan::Power(k, state, cpu) => {
            let (state, cpu_id) = (u64_of(r, state) as u32, u64_of(r, cpu) as u32);
            match k {
                PowerKind::Idle => EventKind::CpuIdle { state, cpu_id },
                PowerKind::Frequency => EventKind::CpuFrequency { state, cpu_id },
            }
        }
        Plan::Ipi(cpu) => EventKind::Ipi {
            name: f.name.clone(),
            target_cpu: cpu.as_ref().map(|c| u64_of(r, c) as u32),
        },
        Plan::WorkStart(w, func) => EventKind::WorkqueueExecuteStart {
            work: u64_of(r, w),
            function: u64_of(r, func),
        },
        Plan::WorkEnd(w) => EventKind::WorkqueueExecuteEnd { work: u64_of(r, w) },
        Plan::SysEnter(call, args) => EventKind::SyscallEnter {
            call: *call,
            args: args.iter().map(|a| u64_of(r, a)).collect(),
        },
        Plan::SysExit(call, ret) => EventKind::SyscallExit {
            call: *call,
            ret: r.int(ret).unwrap_or(0),
        },
        Plan::Print(buf) => {
            let text = String::from_utf8_lossy(r.str_bytes(buf).unwrap_or_default());
            EventKind::Print {
                text: text.trim_end_matches('\n').to_string(),
            }
        }
        Plan::Generic => generic(f, r, meta),
    }
}

fn generic(f: &EventFormat, r: &Record<'_>, _meta: &TraceMeta) -> EventKind {
    let fields = f
        .fields
        .iter()
        .map(|field| {
            let value = if field.flags.array {
                let bytes = r.array(field).unwrap_or_default();
                if field.flags.string {
                    let s = bytes.split(|b| *b == 0).next().unwrap_or_default();
                    FieldValue::Str(String::from_utf8_lossy(s).into_owned())
                } else {
                    FieldValue::Bytes(bytes.to_vec())
                }
            } else if field.flags.signed {
                FieldValue::Signed(r.int(field).unwrap_or(0))
            } else {
                FieldValue::Unsigned(r.uint(field).unwrap_or(0))
            };
            (field.name.clone(), value)
        })
        .collect();
    EventKind::Generic(GenericEvent {
        system: f.system.clone(),
        name: f.name.clone(),
        fields,
    })
}
