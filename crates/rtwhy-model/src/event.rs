//! The events every source yields (trace.dat, trace-cmd's report text, the live BPF
//! probe): one typed variant per event the analysis reads (scheduler, interrupts,
//! timers, syscalls, idle and frequency, markers), the rest kept by name and fields.
//! Names are inline [`Comm`]s so decoding millions of events does not allocate.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Nanos;

/// One kernel trace event, from any source (trace.dat, report text, live BPF).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When it happened, in the trace clock.
    pub ts: Nanos,
    /// The CPU whose ring buffer recorded it.
    pub cpu: u32,
    /// `common_pid`: the task that was current on that CPU (0 is idle).
    pub pid: i32,
    /// What happened.
    pub kind: EventKind,
}

/// A task name as the kernel keeps it (at most 15 bytes plus NUL), stored inline
/// so that decoding millions of scheduler events does not allocate.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Comm {
    len: u8,
    bytes: [u8; Comm::CAPACITY],
}

impl Comm {
    /// Longest name kept; longer names are cut (the kernel's TASK_COMM_LEN is 16 with NUL,
    /// but report text may carry longer names, so room is left).
    pub const CAPACITY: usize = 31;

    /// A name from text, cut at [`Comm::CAPACITY`] bytes on a character boundary.
    pub fn new(s: &str) -> Comm {
        let mut end = s.len().min(Self::CAPACITY);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        Self::from_bytes(&s.as_bytes()[..end])
    }

    /// A name from raw bytes, ending at the first NUL.
    pub fn from_bytes(raw: &[u8]) -> Comm {
        let raw = raw.split(|b| *b == 0).next().unwrap_or_default();
        let len = raw.len().min(Self::CAPACITY);
        let mut bytes = [0u8; Self::CAPACITY];
        bytes[..len].copy_from_slice(&raw[..len]);
        Comm {
            len: len as u8,
            bytes,
        }
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The name, with invalid UTF-8 replaced.
    pub fn to_str_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_bytes())
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.to_str_lossy())
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_str_lossy())
    }
}

impl Serialize for Comm {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_str_lossy())
    }
}

impl<'de> Deserialize<'de> for Comm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Comm::new(&s))
    }
}

/// `prev_state` of a `sched_switch`: the kernel's task state bits.
///
/// Bit values follow the kernel's `TASK_REPORT` encoding as written into the event;
/// 0 means the task was still runnable (preempted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TaskState(pub u64);

impl TaskState {
    /// The task was runnable when it was switched out: it was preempted, not blocked.
    pub fn is_runnable(self) -> bool {
        self.0 & 0xff == 0
    }

    /// The task went to sleep interruptibly (`S`).
    pub fn is_sleeping(self) -> bool {
        self.0 & 0x1 != 0
    }

    /// The task blocked uninterruptibly (`D`), typically on I/O or a kernel lock.
    pub fn is_uninterruptible(self) -> bool {
        self.0 & 0x2 != 0
    }
}

/// The system calls the analyzer cares about (sleeps and locks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyscallKind {
    /// `futex` (pthread mutexes and condition variables).
    Futex,
    /// `nanosleep`.
    Nanosleep,
    /// `clock_nanosleep` (cyclictest's absolute sleeps).
    ClockNanosleep,
}

/// The value of one field of an event that has no typed form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FieldValue {
    /// A signed integer field.
    Signed(i64),
    /// An unsigned integer field.
    Unsigned(u64),
    /// A string field (char arrays and `__data_loc char[]`).
    Str(String),
    /// Any other array, as bytes.
    Bytes(Vec<u8>),
}

/// An event the analyzer has no typed form for, with its fields by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenericEvent {
    /// The event's subsystem (`sched`, `irq`, `kvm`...), empty when unknown.
    pub system: String,
    /// The event's name (`sched_stat_runtime`...).
    pub name: String,
    /// The event's own fields (no `common_*` fields), in format order.
    pub fields: Vec<(String, FieldValue)>,
}

impl GenericEvent {
    /// A field's value by name.
    pub fn field(&self, name: &str) -> Option<&FieldValue> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// What an event says. Typed for what the analyzer uses, generic for the rest.
///
/// Priorities are the kernel's `prio` scale (see [`crate::rt_priority_from_kernel_prio`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// `sched:sched_switch`.
    SchedSwitch {
        /// Task switched out.
        prev_comm: Comm,
        /// Its pid.
        prev_pid: i32,
        /// Its kernel prio.
        prev_prio: i32,
        /// Its state: runnable means preempted.
        prev_state: TaskState,
        /// Task switched in.
        next_comm: Comm,
        /// Its pid.
        next_pid: i32,
        /// Its kernel prio.
        next_prio: i32,
    },
    /// `sched:sched_waking`: a wake-up was requested (on the waker's CPU).
    SchedWaking {
        /// Woken task.
        comm: Comm,
        /// Its pid.
        pid: i32,
        /// Its kernel prio.
        prio: i32,
        /// CPU it will run on.
        target_cpu: i32,
    },
    /// `sched:sched_wakeup`: the task was put on a run queue.
    SchedWakeup {
        /// Woken task.
        comm: Comm,
        /// Its pid.
        pid: i32,
        /// Its kernel prio.
        prio: i32,
        /// CPU it will run on.
        target_cpu: i32,
    },
    /// `sched:sched_wakeup_new`: a new task was made runnable.
    SchedWakeupNew {
        /// New task.
        comm: Comm,
        /// Its pid.
        pid: i32,
        /// Its kernel prio.
        prio: i32,
        /// CPU it will run on.
        target_cpu: i32,
    },
    /// `sched:sched_migrate_task`.
    SchedMigrateTask {
        /// Migrated task.
        comm: Comm,
        /// Its pid.
        pid: i32,
        /// Its kernel prio.
        prio: i32,
        /// From.
        orig_cpu: i32,
        /// To.
        dest_cpu: i32,
    },
    /// `sched:sched_pi_setprio`: priority inheritance changed a task's priority.
    SchedPiSetprio {
        /// Boosted or unboosted task.
        comm: Comm,
        /// Its pid.
        pid: i32,
        /// Prio before.
        oldprio: i32,
        /// Prio after.
        newprio: i32,
    },
    /// `irq:irq_handler_entry`.
    IrqHandlerEntry {
        /// IRQ number.
        irq: i32,
        /// Handler name (`virtio1-req.0`...).
        name: String,
    },
    /// `irq:irq_handler_exit`.
    IrqHandlerExit {
        /// IRQ number.
        irq: i32,
        /// Non-zero when handled.
        ret: i32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// Vector (0 HI, 1 TIMER, 2 NET_TX, 3 NET_RX, 4 BLOCK, 5 IRQ_POLL, 6 TASKLET, 7 SCHED, 8 HRTIMER, 9 RCU).
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// Vector.
        vec: u32,
    },
    /// `irq:softirq_raise`.
    SoftirqRaise {
        /// Vector.
        vec: u32,
    },
    /// `timer:hrtimer_start`.
    HrtimerStart {
        /// Timer address.
        hrtimer: u64,
        /// Callback address.
        function: u64,
        /// Hard expiry, in the timer's clock base.
        expires: i64,
        /// Soft expiry.
        softexpires: i64,
        /// `HRTIMER_MODE_*` bits, when recorded.
        mode: Option<u32>,
    },
    /// `timer:hrtimer_expire_entry`.
    HrtimerExpireEntry {
        /// Timer address.
        hrtimer: u64,
        /// The clock base's time when the handler ran (compare with `expires`).
        now: i64,
        /// Callback address.
        function: u64,
    },
    /// `timer:hrtimer_expire_exit`.
    HrtimerExpireExit {
        /// Timer address.
        hrtimer: u64,
    },
    /// `timer:hrtimer_cancel`.
    HrtimerCancel {
        /// Timer address.
        hrtimer: u64,
    },
    /// `power:cpu_idle`: entering idle state `state`, or leaving idle when `state` is `u32::MAX`.
    CpuIdle {
        /// Idle state index, `u32::MAX` on exit.
        state: u32,
        /// CPU concerned.
        cpu_id: u32,
    },
    /// `power:cpu_frequency`.
    CpuFrequency {
        /// New frequency in kHz.
        state: u32,
        /// CPU concerned.
        cpu_id: u32,
    },
    /// `ipi:ipi_raise`, `ipi:ipi_send_cpu` and friends.
    Ipi {
        /// Which IPI event it was.
        name: String,
        /// Target CPU when the event names a single one.
        target_cpu: Option<u32>,
    },
    /// `workqueue:workqueue_execute_start`.
    WorkqueueExecuteStart {
        /// Work item address.
        work: u64,
        /// Work function address.
        function: u64,
    },
    /// `workqueue:workqueue_execute_end`.
    WorkqueueExecuteEnd {
        /// Work item address.
        work: u64,
    },
    /// `syscalls:sys_enter_*` for the calls the analyzer follows.
    SyscallEnter {
        /// Which call.
        call: SyscallKind,
        /// The call's arguments, in order, as recorded.
        args: Vec<u64>,
    },
    /// `syscalls:sys_exit_*` for the calls the analyzer follows.
    SyscallExit {
        /// Which call.
        call: SyscallKind,
        /// Return value.
        ret: i64,
    },
    /// `ftrace:print` / `bprint` / `bputs`: a `trace_marker` write or a `trace_printk`.
    Print {
        /// The text, without the trailing newline.
        text: String,
    },
    /// Anything else.
    Generic(GenericEvent),
}

impl EventKind {
    /// The event's name as trace-cmd prints it.
    pub fn name(&self) -> &str {
        match self {
            EventKind::SchedSwitch { .. } => "sched_switch",
            EventKind::SchedWaking { .. } => "sched_waking",
            EventKind::SchedWakeup { .. } => "sched_wakeup",
            EventKind::SchedWakeupNew { .. } => "sched_wakeup_new",
            EventKind::SchedMigrateTask { .. } => "sched_migrate_task",
            EventKind::SchedPiSetprio { .. } => "sched_pi_setprio",
            EventKind::IrqHandlerEntry { .. } => "irq_handler_entry",
            EventKind::IrqHandlerExit { .. } => "irq_handler_exit",
            EventKind::SoftirqEntry { .. } => "softirq_entry",
            EventKind::SoftirqExit { .. } => "softirq_exit",
            EventKind::SoftirqRaise { .. } => "softirq_raise",
            EventKind::HrtimerStart { .. } => "hrtimer_start",
            EventKind::HrtimerExpireEntry { .. } => "hrtimer_expire_entry",
            EventKind::HrtimerExpireExit { .. } => "hrtimer_expire_exit",
            EventKind::HrtimerCancel { .. } => "hrtimer_cancel",
            EventKind::CpuIdle { .. } => "cpu_idle",
            EventKind::CpuFrequency { .. } => "cpu_frequency",
            EventKind::Ipi { name, .. } => name,
            EventKind::WorkqueueExecuteStart { .. } => "workqueue_execute_start",
            EventKind::WorkqueueExecuteEnd { .. } => "workqueue_execute_end",
            EventKind::SyscallEnter { call, .. } => match call {
                SyscallKind::Futex => "sys_enter_futex",
                SyscallKind::Nanosleep => "sys_enter_nanosleep",
                SyscallKind::ClockNanosleep => "sys_enter_clock_nanosleep",
            },
            EventKind::SyscallExit { call, .. } => match call {
                SyscallKind::Futex => "sys_exit_futex",
                SyscallKind::Nanosleep => "sys_exit_nanosleep",
                SyscallKind::ClockNanosleep => "sys_exit_clock_nanosleep",
            },
            EventKind::Print { .. } => "print",
            EventKind::Generic(g) => &g.name,
        }
    }
}
