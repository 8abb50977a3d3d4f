//! The kernel's timerlat tracer samples and `osnoise:*` noise events, typed.
//!
//! The timerlat tracer (and `rtla timerlat`) measures, per CPU, how late a periodic timer's
//! IRQ handler and then its thread ran; the `osnoise:*` events name each interference
//! with its start and duration. These types are what rtwhy's timerlat analysis reads.

use serde::{Deserialize, Serialize};

use crate::{Comm, Nanos};

/// Where a timerlat sample was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerlatContext {
    /// In the timer's IRQ handler: the IRQ latency.
    Irq,
    /// In the timerlat thread once it ran: the thread latency.
    Thread,
    /// In a user-space timerlat thread's return to user space (`rtla timerlat -u`).
    User,
}

impl TimerlatContext {
    /// `irq`, `thread` or `user`, as the tracer prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            TimerlatContext::Irq => "irq",
            TimerlatContext::Thread => "thread",
            TimerlatContext::User => "user",
        }
    }
}

/// What kind of noise an `osnoise:*_noise` event reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NoiseSource {
    /// `osnoise:nmi_noise`.
    Nmi,
    /// `osnoise:irq_noise`: a hard IRQ handler (`desc` is the handler's name, e.g.
    /// `local_timer`, `virtio0-requests`; `vector` the IRQ number or x86 vector).
    Irq {
        /// Handler name.
        desc: String,
        /// IRQ number or vector.
        vector: i64,
    },
    /// `osnoise:softirq_noise`.
    Softirq {
        /// Softirq vector (`TIMER` is 1, `NET_RX` 3, ...).
        vector: u32,
    },
    /// `osnoise:thread_noise`: another thread ran.
    Thread {
        /// Its name.
        comm: Comm,
        /// Its pid.
        pid: i32,
    },
}

/// One timerlat/osnoise record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum OsnoiseKind {
    /// A timerlat sample: `#SEQ context irq|thread timer_latency N ns`.
    TimerlatSample {
        /// The period's number; the IRQ and thread samples of one period share it.
        seqnum: u64,
        /// Where it was taken.
        context: TimerlatContext,
        /// Latency in ns from the timer's expiry.
        latency_ns: u64,
    },
    /// An interference: it started at `start` (trace clock, ns) and ran `duration_ns`
    /// (net of the noise nested in it).
    Noise {
        /// What interfered.
        source: NoiseSource,
        /// When it began.
        start: Nanos,
        /// How long it ran.
        duration_ns: u64,
    },
    /// `osnoise:sample_threshold`: an osnoise-tracer sample over its threshold.
    SampleThreshold {
        /// When the sample's noise began.
        start: Nanos,
        /// The noise in ns.
        duration_ns: u64,
        /// Interferences counted in it.
        interference: u64,
    },
}

/// A timerlat/osnoise record with the trace line's common fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OsnoiseRecord {
    /// When it was recorded (trace clock).
    pub ts: Nanos,
    /// The CPU.
    pub cpu: u32,
    /// `common_pid`: the task current when it was recorded (0 is idle).
    pub pid: i32,
    /// What it says.
    pub kind: OsnoiseKind,
}

/// One interference inside a timerlat period, named as rtla's auto-analysis names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interference {
    /// `nmi`, an IRQ's handler name, a softirq's name (`TIMER`), or a thread's comm.
    pub name: String,
    /// The IRQ number or vector, softirq vector, or thread pid.
    pub id: i64,
    /// When it began.
    pub start: Nanos,
    /// How long it ran (net of what nested in it).
    pub duration_ns: u64,
}

/// The thread that was running on the CPU when the timerlat timer's IRQ arrived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockingThread {
    /// Its name (`swapper/N` for idle), when the trace names it.
    pub comm: Option<String>,
    /// Its pid (0 is idle).
    pub pid: i32,
    /// How long it kept running after the IRQ (its `thread_noise`), 0 when not recorded.
    pub duration_ns: u64,
}

/// rtla flags an IRQ handler delay from idle as "exit from idle" above this.
pub const RTLA_EXIT_FROM_IDLE_NS: u64 = 10_000;

/// A timerlat period over the threshold, broken down as rtla's auto-analysis does, with
/// rtwhy's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerlatSpike {
    /// 1-based number in time order.
    pub id: u32,
    /// The CPU.
    pub cpu: u32,
    /// The period's sample number.
    pub seqnum: u64,
    /// `thread` when the thread latency is the one reported, `irq` when only the IRQ
    /// sample exists (the trace stopped at the IRQ).
    pub context: TimerlatContext,
    /// When the timer should have fired (IRQ sample time minus its latency).
    pub expected: Nanos,
    /// The IRQ latency (rtla: "IRQ latency"), when its sample is in the trace.
    pub irq_latency_ns: Option<u64>,
    /// The thread latency, when its sample was recorded (rtla: "Thread latency").
    pub thread_latency_ns: Option<u64>,
    /// The latency this spike is about: the thread's, else the IRQ's.
    pub latency_ns: u64,
    /// From the expected expiry to the timer IRQ handler's start (rtla: "IRQ handler
    /// delay"), when the handler's `irq_noise` was recorded.
    pub irq_handler_delay_ns: Option<u64>,
    /// The CPU was idle and no earlier IRQ overlapped: the delay is an exit from idle
    /// (rtla prints "(exit from idle)" when it is above 10 us).
    pub exit_from_idle: bool,
    /// The timer IRQ handler's own duration (rtla: "Timerlat IRQ duration").
    pub timer_irq_duration_ns: Option<u64>,
    /// The thread running when the IRQ arrived (rtla: "Blocking thread").
    pub blocking_thread: BlockingThread,
    /// The last IRQ (or NMI) before the timer's, when it may have delayed it (rtla:
    /// "Previous IRQ interference", an upper bound).
    pub previous_irq: Option<Interference>,
    /// NMIs between the timer IRQ and the thread.
    pub nmi: Vec<Interference>,
    /// IRQs between the timer IRQ and the thread.
    pub irq: Vec<Interference>,
    /// Softirqs between the timer IRQ and the thread.
    pub softirq: Vec<Interference>,
    /// Other threads between the timer IRQ and the thread.
    pub thread: Vec<Interference>,
    /// The stack saved at the timer IRQ (`rtla -s`), innermost first.
    pub stack: Vec<String>,
    /// The primary cause.
    pub primary: crate::Finding,
    /// The trace lines it rests on.
    pub evidence: Vec<crate::Evidence>,
}

impl TimerlatSpike {
    /// The sum of an interference list.
    pub fn sum(list: &[Interference]) -> u64 {
        list.iter().map(|i| i.duration_ns).sum()
    }
}

/// What the timerlat analysis of a trace found (docs/rtla.md).
#[derive(Debug, Clone, Default)]
pub struct Timerlat {
    /// Timerlat samples read.
    pub samples: u64,
    /// `osnoise:*` events read.
    pub noise_events: u64,
    /// The periods over the threshold.
    pub spikes: Vec<TimerlatSpike>,
}
