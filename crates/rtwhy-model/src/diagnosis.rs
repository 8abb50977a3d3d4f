//! What the analyzer concludes about one late wake-up: the spike, where its time went,
//! the cause, the evidence and the fix. Serialized as the `rtwhy.analysis/2` JSON
//! schema (docs/analysis-json.md).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Comm, Nanos};

/// A root cause of real-time latency, as rtwhy names it (docs/causes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// RT bandwidth control (or the fair server) kept the RT class off the CPU.
    RtThrottling,
    /// Softirq processing, on irq exit / bh enable or in `ksoftirqd`.
    Softirq,
    /// A device interrupt handler ran on a CPU meant to be isolated.
    IrqOnIsolatedCpu,
    /// Interrupt handlers on a CPU that is not isolated.
    Irq,
    /// The CPU was stopped with no kernel event (SMI, hypervisor).
    Hwlat,
    /// A low or changing CPU clock.
    FrequencyRamp,
    /// The victim was woken on an idle CPU that left idle late (C-state or halt exit).
    IdleExit,
    /// The victim waited for a lock whose holder was preempted by a medium-priority task.
    PriorityInversion,
    /// The victim waited for a lock whose holder ran its critical section undisturbed.
    LockContention,
    /// A task of higher or equal real-time priority held the CPU.
    Preemption,
    /// A lower-priority task kept the CPU in a non-preemptible kernel section.
    KernelNonpreemptible,
    /// The victim waited for the stopper thread `migration/N` or to be moved between CPUs.
    Migration,
    /// The trace does not hold the evidence to decide.
    Unknown,
}

impl Cause {
    /// Every cause, in the order the documentation lists them.
    pub const ALL: [Cause; 13] = [
        Cause::RtThrottling,
        Cause::Softirq,
        Cause::IrqOnIsolatedCpu,
        Cause::Irq,
        Cause::Hwlat,
        Cause::FrequencyRamp,
        Cause::IdleExit,
        Cause::PriorityInversion,
        Cause::LockContention,
        Cause::Preemption,
        Cause::KernelNonpreemptible,
        Cause::Migration,
        Cause::Unknown,
    ];

    /// The name used in text, JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::RtThrottling => "rt_throttling",
            Cause::Softirq => "softirq",
            Cause::IrqOnIsolatedCpu => "irq_on_isolated_cpu",
            Cause::Irq => "irq",
            Cause::Hwlat => "hwlat",
            Cause::FrequencyRamp => "frequency_ramp",
            Cause::IdleExit => "idle_exit",
            Cause::PriorityInversion => "priority_inversion",
            Cause::LockContention => "lock_contention",
            Cause::Preemption => "preemption",
            Cause::KernelNonpreemptible => "kernel_nonpreemptible",
            Cause::Migration => "migration",
            Cause::Unknown => "unknown",
        }
    }

    /// The cause named `s`, if any.
    pub fn parse(s: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How sure the analyzer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Plausible, but other readings remain.
    Low,
    /// Most of the latency is explained this way.
    Medium,
    /// The decisive events are in the trace.
    High,
}

impl Confidence {
    /// `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// A task as the diagnosis names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskRef {
    /// Thread id (the kernel's pid).
    pub tid: i32,
    /// Name.
    pub comm: Comm,
    /// Kernel `prio` when last seen (0..=98 real-time, 100..=139 normal, -1 deadline);
    /// `None` when no event of the trace showed it (a marker's writer that no scheduling
    /// event of the recording names).
    pub prio: Option<i32>,
    /// The priority inheritance boost it ran under then, when a waiter had lent it `prio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<PiBoost>,
}

/// A priority lent by priority inheritance: the task's own priority, and who lent it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PiBoost {
    /// The task's own kernel `prio`, without the boost.
    pub own_prio: i32,
    /// The waiter whose priority it was lent (the task the `sched_pi_setprio` ran in).
    pub by_tid: i32,
    /// That waiter's name.
    pub by_comm: Comm,
}

impl TaskRef {
    /// The priority it has when nobody lends it one: a PI-boosted normal task is a
    /// normal task.
    pub fn own_prio(&self) -> Option<i32> {
        match &self.boost {
            Some(b) => Some(b.own_prio),
            None => self.prio,
        }
    }

    /// `SCHED_FIFO 80`-style policy and priority, or `SCHED_OTHER nice 0`.
    ///
    /// FIFO and RR look the same in a trace; real-time tasks are shown as FIFO/RR.
    pub fn policy(&self) -> String {
        match (&self.boost, self.prio) {
            (_, None) => "priority not recorded".to_string(),
            (Some(b), Some(prio)) => format!(
                "{}, boosted to {} by {}:{}",
                policy_of(b.own_prio),
                policy_of(prio),
                b.by_comm,
                b.by_tid
            ),
            (None, Some(prio)) => policy_of(prio),
        }
    }

    /// True for SCHED_FIFO/RR/DEADLINE tasks; false when the priority was not recorded.
    pub fn is_rt(&self) -> bool {
        self.prio.is_some_and(crate::is_rt)
    }
}

/// `FIFO/RR 80`, `OTHER nice 0` or `DEADLINE` for a kernel `prio` (as the scheduler
/// events carry it: 0-99 real-time, 100-139 normal, -1 SCHED_DEADLINE).
pub fn policy_of(prio: i32) -> String {
    if let Some(rt) = crate::rt_priority_from_kernel_prio(prio) {
        format!("FIFO/RR {rt}")
    } else if let Some(nice) = crate::nice_from_kernel_prio(prio) {
        format!("OTHER nice {nice}")
    } else if prio < 0 {
        "DEADLINE".to_string()
    } else {
        format!("prio {prio}")
    }
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} ({})", self.comm, self.tid, self.policy())
    }
}

/// How a task that held the CPU stood against the victim, for a breakdown line.
fn rank_label(outranks: bool, equals: bool) -> &'static str {
    match (outranks, equals) {
        (_, true) => "at the victim's own priority",
        (true, false) => "outranks the victim",
        (false, false) => "lower priority than the victim",
    }
}

/// How a spike came to rtwhy's attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SpikeSource {
    /// An `rtwhy-breach` marker written by rtwhy's recorder.
    BreachMarker {
        /// Latency measured by the detector, in ns.
        reported_ns: u64,
        /// The victim's timer interrupt came at least the threshold late, and the
        /// detector saw what it interrupted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        late_timer: Option<LateTimer>,
    },
    /// Another tool's marker, such as cyclictest's `hit latency threshold (X > Y)`.
    ToolMarker {
        /// The marker text.
        text: String,
        /// Latency the tool reported, in ns.
        reported_ns: u64,
    },
    /// Found from the scheduler events alone.
    Events,
}

/// A timer interrupt that came late, as the BPF detector saw it from inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateTimer {
    /// From the timer's expiry to its handler, in ns.
    pub late_ns: u64,
    /// The kernel stack the interrupt interrupted, innermost first (`function+0xoff`);
    /// empty when it interrupted user space or the unwinder stopped at the interrupt.
    pub interrupted: Vec<String>,
}

impl LateTimer {
    /// "its timer interrupt came 2.3 ms late, interrupting a <- b <- c": the source
    /// note's words, with at most the four innermost frames.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "its timer interrupt came {} late",
            crate::human_duration(self.late_ns)
        );
        if !self.interrupted.is_empty() {
            let frames: Vec<&str> = self
                .interrupted
                .iter()
                .take(4)
                .map(String::as_str)
                .collect();
            s.push_str(", interrupting ");
            s.push_str(&frames.join(" <- "));
            if self.interrupted.len() > 4 {
                s.push_str(" <- ...");
            }
        }
        s
    }
}

/// What "should have run" means for this spike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpikeKind {
    /// The victim's own timer expired (clock_nanosleep and friends): timer expiry to running.
    TimerWakeup,
    /// The victim was woken by another task or an interrupt: waking to running.
    Wakeup,
    /// The victim was preempted while runnable and kept off the CPU: switch-out to switch-in.
    Preempted,
    /// The victim blocked on a lock far longer than the threshold: block to running.
    LockWait,
}

impl SpikeKind {
    /// A few words for people.
    pub fn describe(self) -> &'static str {
        match self {
            SpikeKind::TimerWakeup => "timer expiry to running",
            SpikeKind::Wakeup => "wake-up to running",
            SpikeKind::Preempted => "preempted while runnable, off the CPU",
            SpikeKind::LockWait => "blocked on a lock, until running again",
        }
    }
}

/// Softirq context: run on irq exit / bh enable, by the `ksoftirqd` thread, or (on
/// PREEMPT_RT) in the kernel thread that raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SoftirqContext {
    /// On irq exit or `local_bh_enable()`, in whatever task was current.
    IrqExit,
    /// In the per-CPU `ksoftirqd/N` thread.
    Ksoftirqd,
    /// In an IRQ thread (`irq/N-name`) after its handler, or in `ktimers/N`: the
    /// threaded softirqs of PREEMPT_RT (and of `threadirqs`).
    Thread,
}

/// One kind of time in the breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "bucket", rename_all = "snake_case")]
pub enum Bucket {
    /// Between the victim's timer expiry and its interrupt handler, with no event.
    TimerIrqDelay,
    /// A hard interrupt handler.
    Irq {
        /// IRQ number.
        irq: i32,
        /// Handler name.
        name: String,
    },
    /// A softirq vector.
    Softirq {
        /// Vector number.
        vec: u32,
        /// Where it ran.
        context: SoftirqContext,
        /// The thread that ran it, when that is a kernel thread (`ksoftirqd/N`,
        /// `ktimers/N`, `irq/N-name`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thread: Option<TaskRef>,
    },
    /// The thread of a threaded interrupt handler (`irq/N-name`; every IRQ on
    /// PREEMPT_RT): the device's work, after its hard handler woke it.
    IrqThread {
        /// IRQ number (from the thread's name).
        irq: i32,
        /// Handler name (from the IRQ's `irq_handler_entry`, else the thread's name).
        name: String,
        /// The thread, with the priority it ran at.
        thread: TaskRef,
        /// It had a higher (or equal) priority than the victim.
        outranks_victim: bool,
        /// Its priority was the victim's own (`outranks_victim` too: FIFO does not
        /// preempt a task of its own priority, so it holds the CPU all the same).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        equals_victim: bool,
    },
    /// Another task held the CPU.
    Task {
        /// Thread id.
        tid: i32,
        /// Name.
        comm: Comm,
        /// Kernel prio.
        prio: i32,
        /// It had a higher (or equal) priority than the victim.
        outranks_victim: bool,
        /// Its priority was the victim's own (`outranks_victim` too: FIFO does not
        /// preempt a task of its own priority, so it holds the CPU all the same).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        equals_victim: bool,
        /// It is a kernel thread (always in the kernel).
        kernel_thread: bool,
        /// The priority inheritance boost it ran under, when `prio` was lent to it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        boost: Option<PiBoost>,
    },
    /// The CPU was idle while the victim was runnable.
    Idle,
    /// The victim in the kernel, from its request for a lock (entering the futex call)
    /// until it blocked: the lock's slow path (the rt_mutex's spinning and its PI chain
    /// walk for FUTEX_LOCK_PI), on its own CPU.
    LockRequest,
    /// The victim waited for a lock.
    LockWait {
        /// The holder (the task that woke the victim), when known.
        holder: Option<TaskRef>,
    },
    /// Time with no event on the CPU at all, ended by a late interrupt: the CPU was stopped.
    Unaccounted,
    /// Time whose events the ring buffer dropped (a page marked with missed events): what
    /// happened on the CPU then is not known.
    Dropped {
        /// How many events were dropped (0: the kernel did not count them).
        count: u64,
    },
    /// Time before the CPU's first recorded event (a capture taken right after the
    /// previous one, a trace started late): what the CPU did then is not known.
    NotRecorded,
    /// The victim's own CPU time inside the window (switch-in not recorded).
    Victim,
    /// The victim itself ran inside the application's own measurement (a marker's
    /// window): after a first late wake-up, before the clock read that ended it.
    VictimRan,
    /// A marker's measurement the trace cannot place: its stamp, on its buffer's clock,
    /// falls where the events show its writer asleep, and no later wake-up of the writer
    /// has its number.
    Unplaced,
}

/// Name of a softirq vector.
pub fn softirq_name(vec: u32) -> &'static str {
    match vec {
        0 => "HI",
        1 => "TIMER",
        2 => "NET_TX",
        3 => "NET_RX",
        4 => "BLOCK",
        5 => "IRQ_POLL",
        6 => "TASKLET",
        7 => "SCHED",
        8 => "HRTIMER",
        9 => "RCU",
        _ => "?",
    }
}

impl fmt::Display for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bucket::TimerIrqDelay => f.write_str("timer interrupt delay (expiry to handler)"),
            Bucket::Irq { irq, name } => write!(f, "hard IRQ {irq} ({name})"),
            Bucket::Softirq {
                vec,
                context,
                thread,
            } => {
                let name = softirq_name(*vec);
                match (context, thread) {
                    (SoftirqContext::IrqExit, _) => write!(f, "softirq {name} on irq exit"),
                    (_, Some(t)) => write!(f, "softirq {name} in {t}"),
                    (SoftirqContext::Ksoftirqd, None) => write!(f, "softirq {name} in ksoftirqd"),
                    (SoftirqContext::Thread, None) => {
                        write!(f, "softirq {name} in a kernel thread")
                    }
                }
            }
            Bucket::IrqThread {
                irq,
                name,
                thread,
                outranks_victim,
                equals_victim,
            } => write!(
                f,
                "IRQ {irq} ({name}) thread {thread}, {}",
                rank_label(*outranks_victim, *equals_victim)
            ),
            Bucket::Task {
                tid,
                comm,
                prio,
                outranks_victim,
                equals_victim,
                kernel_thread,
                boost,
            } => {
                let t = TaskRef {
                    tid: *tid,
                    comm: *comm,
                    prio: Some(*prio),
                    boost: boost.clone(),
                };
                write!(
                    f,
                    "task {t}, {}{}",
                    rank_label(*outranks_victim, *equals_victim),
                    if *kernel_thread {
                        ", kernel thread"
                    } else {
                        ""
                    }
                )
            }
            Bucket::Idle => f.write_str("idle before the victim ran"),
            Bucket::LockRequest => {
                f.write_str("the victim in the kernel, asking for the lock before it blocked")
            }
            Bucket::LockWait { holder: Some(h) } => write!(f, "lock wait, held by {h}"),
            Bucket::LockWait { holder: None } => f.write_str("lock wait, holder unknown"),
            Bucket::Unaccounted => f.write_str("unaccounted: no events, CPU stopped"),
            Bucket::NotRecorded => f.write_str("not recorded: before the recording began"),
            Bucket::Dropped { count: 0 } => f.write_str("events dropped by the ring buffer"),
            Bucket::Dropped { count } => {
                write!(f, "{count} events dropped by the ring buffer")
            }
            Bucket::Victim => f.write_str("the victim itself (switch-in not recorded)"),
            Bucket::VictimRan => f.write_str("the victim itself ran, inside its own measurement"),
            Bucket::Unplaced => {
                f.write_str("not placed: the marker's stamp is on another clock than the events'")
            }
        }
    }
}

/// One line of the breakdown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakdownItem {
    /// What the time was spent on.
    #[serde(flatten)]
    pub bucket: Bucket,
    /// How long, in ns.
    pub ns: u64,
}

/// One event quoted as proof, printed as a trace line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// Timestamp.
    pub ts: Nanos,
    /// CPU.
    pub cpu: u32,
    /// The trace line, `comm-pid [cpu] ts: event: fields`.
    pub line: String,
    /// Why it matters.
    pub why: String,
}

/// A cause with its weight in this spike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The cause.
    pub cause: Cause,
    /// How sure.
    pub confidence: Confidence,
    /// Share of the latency it explains, 0..=1.
    pub share: f64,
    /// A sentence for people: what happened, with names and numbers.
    pub summary: String,
    /// Who or what the cause points at, the same words for the same culprit in every
    /// spike (`IRQ 41 (virtio8-input.0) on CPU 1`, `spin:4188 (FIFO/RR 90) on CPU 1`,
    /// `RT throttling on CPU 1`): what a session's captures are grouped by. `None` for
    /// `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
}

/// One latency spike and its diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spike {
    /// 1-based number in time order.
    pub id: u32,
    /// The late thread.
    pub victim: TaskRef,
    /// The CPU it ran on when it finally ran.
    pub cpu: u32,
    /// What "should have run" means here.
    pub kind: SpikeKind,
    /// How it was found.
    pub source: SpikeSource,
    /// When it should have run.
    pub start: Nanos,
    /// When it ran.
    pub end: Nanos,
    /// `end - start`, in ns.
    pub latency_ns: u64,
    /// The switch-in was not recorded; `end` is the latest moment proven to be before it.
    pub end_inferred: bool,
    /// Who woke it, when known.
    pub waker: Option<TaskRef>,
    /// The primary cause.
    pub primary: Finding,
    /// Other causes that contributed.
    pub contributors: Vec<Finding>,
    /// Every nanosecond of the latency, by bucket, largest first; sums to `latency_ns`.
    pub breakdown: Vec<BreakdownItem>,
    /// The decisive events.
    pub evidence: Vec<Evidence>,
    /// Concrete steps, from the recorded system facts.
    pub remediation: Vec<String>,
    /// What the trace lacked, when that limited the diagnosis.
    pub missing: Vec<String>,
}

impl Spike {
    /// A marker (cyclictest's, the recorder's breach record) flagged it: the spike the
    /// user's own tool saw.
    pub fn flagged(&self) -> bool {
        !matches!(self.source, SpikeSource::Events)
    }
}
