//! The result of analysing a trace: every spike with its diagnosis, and what was
//! measured beside them. The analyzer produces it; every output format reads it.

use crate::{Nanos, Spike, SystemFacts, TaskRef};

/// Most spikes diagnosed in one analysis; later ones are counted, not kept.
pub const MAX_SPIKES: usize = 10_000;

/// The result of an analysis.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Every spike, in the order it ended.
    pub spikes: Vec<Spike>,
    /// Spikes beyond [`MAX_SPIKES`], not kept.
    pub spikes_dropped: u64,
    /// The system facts the diagnosis used.
    pub facts: SystemFacts,
    /// The latency threshold.
    pub threshold: Nanos,
    /// Events analyzed.
    pub events: u64,
    /// First and last event time.
    pub span: Option<(Nanos, Nanos)>,
    /// Which event types were present.
    pub seen: Seen,
    /// Every victim thread measured, worst first.
    pub victims: Vec<VictimStats>,
}

/// Which event types a trace holds, to say what was missing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Seen {
    /// `sched_switch`.
    pub switch: bool,
    /// `sched_waking`.
    pub waking: bool,
    /// `sched_wakeup`.
    pub wakeup: bool,
    /// `irq_handler_entry`.
    pub irq: bool,
    /// `softirq_entry`.
    pub softirq: bool,
    /// `hrtimer_expire_entry`.
    pub hrtimer: bool,
    /// `hrtimer_start`.
    pub hrtimer_start: bool,
    /// `cpu_idle`.
    pub cpu_idle: bool,
    /// `cpu_frequency`.
    pub cpu_frequency: bool,
    /// `sys_enter_futex`.
    pub futex: bool,
    /// `sched_pi_setprio`.
    pub pi_setprio: bool,
}

/// Per-thread measurement summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VictimStats {
    /// The thread.
    pub task: TaskRef,
    /// Wake-ups (and preemptions) measured.
    pub episodes: u64,
    /// Worst latency measured, in ns.
    pub max_ns: u64,
}
