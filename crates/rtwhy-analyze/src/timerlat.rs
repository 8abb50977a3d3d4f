//! Timerlat periods over the threshold, broken down and diagnosed.
//!
//! The kernel's timerlat tracer wakes a thread per CPU from a periodic timer and records
//! two samples per period: the IRQ latency in the timer's handler and the thread
//! latency once the thread runs. Its `osnoise:*` events say what ran in between. This
//! follows each CPU through a period the way `rtla timerlat`'s auto-analysis does
//! (the timer IRQ's `irq_noise` gives the handler's start, so its delay; the
//! `thread_noise` of the task current at the IRQ is the blocking thread; every other
//! noise after the IRQ is interference; the last IRQ before it may have delayed it), and
//! then names a cause from rtwhy's taxonomy when the events hold its preconditions.
//!
//! ```
//! use rtwhy_analyze::timerlat::TimerlatAnalyzer;
//! use rtwhy_model::*;
//!
//! let rec = |ts, pid, kind| OsnoiseRecord { ts: Nanos(ts), cpu: 1, pid, kind };
//! let mut a = TimerlatAnalyzer::new(Nanos(100_000), None);
//! // The timer was due at 1 ms; its IRQ ran at 1.010 ms while spin:300 ran, which kept
//! // the CPU 400 us longer; the thread ran at 1.450 ms.
//! a.push_record(&rec(1_012_000, 300, OsnoiseKind::TimerlatSample {
//!     seqnum: 7, context: TimerlatContext::Irq, latency_ns: 12_000 }));
//! a.push_record(&rec(1_013_000, 300, OsnoiseKind::Noise {
//!     source: NoiseSource::Irq { desc: "local_timer".into(), vector: 236 },
//!     start: Nanos(1_010_000), duration_ns: 3_000 }));
//! a.push_record(&rec(1_440_000, 300, OsnoiseKind::Noise {
//!     source: NoiseSource::Thread { comm: Comm::new("spin"), pid: 300 },
//!     start: Nanos(1_013_000), duration_ns: 400_000 }));
//! a.push_record(&rec(1_450_000, 9, OsnoiseKind::TimerlatSample {
//!     seqnum: 7, context: TimerlatContext::Thread, latency_ns: 450_000 }));
//! let spikes = a.finish();
//! assert_eq!(spikes.len(), 1);
//! assert_eq!(spikes[0].irq_handler_delay_ns, Some(10_000));
//! assert_eq!(spikes[0].blocking_thread.duration_ns, 400_000);
//! // Nothing recorded says whether spin outranks the timerlat thread.
//! assert_eq!(spikes[0].primary.cause.as_str(), "unknown");
//! ```

use std::collections::VecDeque;

use crate::intmap::IntMap;
use crate::period::{describe, us, Answer, Part, PeriodCtx};
use crate::rules::{self, PRIMARY_SHARE};
use rtwhy_model::{
    softirq_name, BlockingThread, Cause, Comm, Confidence, CpuList, Event, EventKind, Evidence,
    Finding, Interference, Nanos, NoiseSource, OsnoiseKind, OsnoiseRecord, TimerlatContext,
    TimerlatSpike,
};

/// The kernel `trace` file prints microseconds: a sample's time may be up to this late.
const TEXT_SLACK_NS: u64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between the thread sample and the next IRQ sample (or before the first).
    WaitingIrq,
    /// Between the IRQ sample and its thread sample.
    WaitingThread,
}

#[derive(Debug, Clone)]
struct Period {
    seqnum: u64,
    irq_ts: Nanos,
    irq_latency: u64,
    irq_pid: i32,
    irq_line: String,
    /// The IRQ sample is not in the trace (it began after it): `irq_ts`/`irq_latency`
    /// are the thread sample's.
    irq_missing: bool,
    timer_irq: Option<(Nanos, u64, String)>,
    /// The blocking thread's comm, time, line and the start of its noise.
    blocking: Option<(Comm, u64, String, Nanos)>,
    nmi: Vec<(Interference, String)>,
    irq: Vec<(Interference, String)>,
    softirq: Vec<(Interference, String)>,
    thread: Vec<(Interference, String)>,
    stack: Vec<String>,
}

impl Period {
    /// A period whose IRQ sample came before the trace: the noise recorded since the
    /// expiry (its start at or after it) is sorted by kind as interference.
    fn without_irq(
        rec: &OsnoiseRecord,
        seqnum: u64,
        latency: u64,
        line: String,
        loose: Vec<(Tag, Interference, String)>,
    ) -> Period {
        let expected = rec.ts.0.saturating_sub(latency);
        let mut p = Period {
            seqnum,
            irq_ts: rec.ts,
            irq_latency: latency,
            irq_pid: -1,
            irq_line: line,
            irq_missing: true,
            timer_irq: None,
            blocking: None,
            nmi: Vec::new(),
            irq: Vec::new(),
            softirq: Vec::new(),
            thread: Vec::new(),
            stack: Vec::new(),
        };
        for (tag, i, l) in loose {
            if i.start.0.saturating_add(i.duration_ns) < expected {
                continue;
            }
            let list = match tag {
                Tag::Nmi => &mut p.nmi,
                Tag::Irq => &mut p.irq,
                Tag::Softirq => &mut p.softirq,
                Tag::Thread => &mut p.thread,
            };
            list.push((i, l));
        }
        p
    }
}

#[derive(Debug)]
struct CpuState {
    state: State,
    period: Option<Period>,
    prev_irq: Option<(Interference, String)>,
    /// The times of the CPU's last events of any kind (oldest first), for event-free gaps,
    /// with whether the CPU ran a task after each (known once a switch is recorded).
    recent: VecDeque<(Nanos, Option<bool>)>,
    /// The CPU runs a task (not idle), from its last recorded `sched_switch`.
    busy: Option<bool>,
    /// What the CPUs had recorded when the timer IRQ sample came.
    before_irq: Before,
    current: Option<(i32, Comm)>,
    /// The spike of the CPU's last period, until the next period begins: the stack
    /// `-s` saves at the IRQ is printed after the thread sample.
    last_spike: Option<Judged>,
    /// Noise since the last thread sample, for a thread sample whose IRQ sample the
    /// trace does not hold (rtla saves only the end of its buffer).
    loose: Vec<(Tag, Interference, String)>,
    /// A timerlat sample was seen on this CPU.
    sampled: bool,
}

/// A reported period with what its verdict was made of: rtla's `-s` stack comes after
/// the thread sample, and the verdict is made again with it.
#[derive(Debug)]
struct Judged {
    index: usize,
    period: Period,
    thread: Option<(Nanos, String)>,
    prev_irq: Option<(Interference, String)>,
    before_irq: Before,
}

/// The event times kept when a timer IRQ sample came, of its CPU and of the others.
#[derive(Debug, Clone, Default)]
struct Before {
    /// The CPU's own: the timer's handler may have recorded events before its sample
    /// (the tick's wake-ups), so the CPU's silence before the handler ends at the last
    /// of these that came before the handler began.
    own: Vec<Nanos>,
    /// Every other CPU's, with whether it ran a task after each.
    others: Vec<Vec<(Nanos, Option<bool>)>>,
    /// The spans of the NMIs, IRQs and softirqs the CPU ran since its last thread
    /// sample: their noise events are written only at their end, so the time inside
    /// them is not silence.
    busy: Vec<(u64, u64)>,
}

impl Before {
    /// The longest stretch from the expiry to the handler's start in which the CPU
    /// recorded nothing and ran no interrupt handler: (length, from, to). It begins at
    /// the expiry when an event before it is kept, else at the first kept event (the
    /// trace, or what is kept of it, may begin later); none without a kept event
    /// before `start`.
    fn longest_silence(&self, expected: Nanos, start: Nanos) -> Option<(u64, Nanos, Nanos)> {
        let before: Vec<u64> = self
            .own
            .iter()
            .map(|t| t.0)
            .filter(|t| *t < start.0)
            .collect();
        let first = if before.iter().any(|t| *t <= expected.0) {
            expected.0
        } else {
            *before.first()?
        };
        let mut pts: Vec<u64> = before.into_iter().filter(|t| *t > first).collect();
        pts.extend([first, start.0]);
        for (a, b) in &self.busy {
            pts.extend([*a, *b].into_iter().filter(|t| *t > first && *t < start.0));
        }
        pts.sort_unstable();
        pts.dedup();
        pts.windows(2)
            .filter_map(|w| match w {
                [a, b] if !self.busy.iter().any(|(x, y)| a >= x && b <= y) => {
                    Some((b - a, Nanos(*a), Nanos(*b)))
                }
                _ => None,
            })
            .max_by_key(|g| g.0)
    }

    fn last_before(&self, t: Nanos) -> Option<Nanos> {
        self.own.iter().rev().find(|x| x.0 < t.0).copied()
    }

    /// Another CPU, running a task (an idle CPU records nothing anyway), is known to
    /// have recorded nothing from `from` to `to`: its last kept event before `to` came
    /// before `from`. Then the machine was stopped from outside, and a stopped CPU takes
    /// its pending interrupt wherever it resumes.
    fn other_cpu_silent(&self, from: Nanos, to: Nanos) -> bool {
        self.others.iter().any(|ts| {
            ts.iter()
                .rev()
                .find(|(t, _)| t.0 < to.0)
                .is_some_and(|(last, busy)| last.0 < from.0 && *busy == Some(true))
        })
    }
}

/// A CPU's period still open at the end, with what judging it needs.
type OpenPeriod = (u32, Period, Option<(Interference, String)>, Before);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Nmi,
    Irq,
    Softirq,
    Thread,
}

/// Most loose noise events kept per CPU between two samples.
const MAX_LOOSE: usize = 4096;

/// Event times kept per CPU for the silence before a timer IRQ.
const RECENT: usize = 16;

impl CpuState {
    fn saw(&mut self, ts: Nanos) {
        if self.recent.len() >= RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((ts, self.busy));
    }

    fn new() -> CpuState {
        CpuState {
            state: State::WaitingIrq,
            period: None,
            prev_irq: None,
            recent: VecDeque::new(),
            busy: None,
            before_irq: Before::default(),
            current: None,
            last_spike: None,
            loose: Vec::new(),
            sampled: false,
        }
    }
}

/// Follows every CPU's timerlat periods; see the module documentation.
#[derive(Debug)]
pub struct TimerlatAnalyzer {
    threshold: Nanos,
    isolated: Option<CpuList>,
    cpus: IntMap<u32, CpuState>,
    /// Kernel prio of each pid, from the scheduler events recorded with the samples.
    prio: IntMap<i32, i32>,
    comm: IntMap<i32, Comm>,
    /// A `ktimers/N` thread exists only on PREEMPT_RT (docs/causes.md).
    saw_ktimers: bool,
    samples: u64,
    noise: u64,
    orphans: u64,
    clock_mismatch: u64,
    clock_checked: u64,
    spikes: Vec<TimerlatSpike>,
}

impl TimerlatAnalyzer {
    /// An analyzer reporting periods whose latency is at least `threshold`; `isolated`
    /// are the CPUs meant to be free of device IRQs.
    pub fn new(threshold: Nanos, isolated: Option<CpuList>) -> TimerlatAnalyzer {
        TimerlatAnalyzer {
            threshold,
            isolated,
            cpus: IntMap::default(),
            prio: IntMap::default(),
            comm: IntMap::default(),
            saw_ktimers: false,
            samples: 0,
            noise: 0,
            orphans: 0,
            clock_mismatch: 0,
            clock_checked: 0,
            spikes: Vec::new(),
        }
    }

    /// Timerlat samples seen.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// `osnoise:*` noise events seen.
    pub fn noise_events(&self) -> u64 {
        self.noise
    }

    /// Noise events on a CPU before its first timerlat sample: nothing to attribute
    /// them to.
    pub fn orphan_noise(&self) -> u64 {
        self.orphans
    }

    /// Reported periods whose timer `irq_noise` did not contain the IRQ sample's time
    /// (no IRQ handler delay is given for them; when most do, the trace's clock is not
    /// the osnoise tracer's), and the reported periods with a timer `irq_noise`.
    pub fn clock_mismatches(&self) -> (u64, u64) {
        (self.clock_mismatch, self.clock_checked)
    }

    /// Any other event: scheduler events name tasks and their priorities, and every
    /// event marks its CPU as not silent.
    pub fn push_event(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                next_comm,
                next_pid,
                next_prio,
                ..
            } => {
                self.learn(*prev_pid, *prev_comm, *prev_prio);
                self.learn(*next_pid, *next_comm, *next_prio);
                let cpu = self.cpus.entry(ev.cpu).or_insert_with(CpuState::new);
                cpu.current = Some((*next_pid, *next_comm));
                cpu.busy = Some(*next_pid != 0);
            }
            EventKind::SchedWaking {
                comm, pid, prio, ..
            }
            | EventKind::SchedWakeup {
                comm, pid, prio, ..
            } => self.learn(*pid, *comm, *prio),
            _ => {}
        }
        self.cpus
            .entry(ev.cpu)
            .or_insert_with(CpuState::new)
            .saw(ev.ts);
    }

    fn learn(&mut self, pid: i32, comm: Comm, prio: i32) {
        if pid == 0 {
            return;
        }
        if rules::kernel_nonpreemptible::preempt_rt_only(comm.as_bytes()) {
            self.saw_ktimers = true;
        }
        self.prio.insert(pid, prio);
        self.comm.insert(pid, comm);
    }

    /// A stack event (`<stack trace>` / `kernel_stack`) on a CPU: rtla's `-s` stack at
    /// the timer IRQ, kept with the current period.
    pub fn push_stack(&mut self, cpu: u32, frames: Vec<String>) {
        let Some(c) = self.cpus.get_mut(&cpu) else {
            return;
        };
        if let Some(p) = c.period.as_mut() {
            p.stack = frames;
            return;
        }
        let Some(j) = c.last_spike.take() else {
            return;
        };
        let Some(mut spike) = self.spikes.get(j.index).cloned() else {
            return;
        };
        spike.stack = frames;
        let (primary, mut evidence) = self.verdict(
            &spike,
            &j.period,
            j.thread.as_ref().map(|(ts, l)| (*ts, l.as_str())),
            j.prev_irq.as_ref(),
            &j.before_irq,
        );
        evidence.sort_by_key(|e| e.ts);
        spike.primary = primary;
        spike.evidence = evidence;
        if let Some(slot) = self.spikes.get_mut(j.index) {
            *slot = spike;
        }
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.last_spike = Some(j);
        }
    }

    /// A timerlat sample or osnoise event.
    pub fn push_record(&mut self, rec: &OsnoiseRecord) {
        self.push_record_line(rec, None);
    }

    /// A timerlat sample or osnoise event with the trace line it was read from, which
    /// evidence then quotes (else a line is made from the record).
    pub fn push_record_line(&mut self, rec: &OsnoiseRecord, text: Option<&str>) {
        let line = text.map_or_else(|| record_line(rec), |t| t.trim().to_owned());
        let threshold = self.threshold;
        // The CPUs' recent events matter only where the IRQ handler delay (at most the
        // IRQ latency) can be 30 % of a reported latency: most samples skip the copies.
        let irq_sample = matches!(
            rec.kind,
            OsnoiseKind::TimerlatSample {
                context: TimerlatContext::Irq,
                latency_ns,
                ..
            } if latency_ns as f64 >= threshold.0 as f64 * PRIMARY_SHARE
        );
        let others: Vec<Vec<(Nanos, Option<bool>)>> = if irq_sample {
            self.cpus
                .iter()
                .filter(|(c, _)| **c != rec.cpu)
                .map(|(_, st)| st.recent.iter().copied().collect())
                .collect()
        } else {
            Vec::new()
        };
        let cpu = self.cpus.entry(rec.cpu).or_insert_with(CpuState::new);
        let before = if irq_sample {
            Before {
                own: cpu.recent.iter().map(|(t, _)| *t).collect(),
                others,
                busy: cpu
                    .loose
                    .iter()
                    .filter(|(tag, _, _)| matches!(tag, Tag::Nmi | Tag::Irq | Tag::Softirq))
                    .map(|(_, i, _)| (i.start.0, i.start.0.saturating_add(i.duration_ns)))
                    .collect(),
            }
        } else {
            Before::default()
        };
        cpu.saw(rec.ts);
        match &rec.kind {
            OsnoiseKind::TimerlatSample {
                seqnum,
                context: TimerlatContext::Irq,
                latency_ns,
            } => {
                self.samples += 1;
                // A period whose thread sample never came (the trace stopped, or was
                // cut) is judged on its IRQ latency.
                if let Some(p) = cpu.period.take() {
                    if cpu.state == State::WaitingThread && p.irq_latency >= threshold.0 {
                        let prev = cpu.prev_irq.clone();
                        let last = cpu.before_irq.clone();
                        self.finish_period(rec.cpu, p, None, prev, last);
                    }
                }
                let cpu = self.cpus.entry(rec.cpu).or_insert_with(CpuState::new);
                cpu.state = State::WaitingThread;
                cpu.last_spike = None;
                if !cpu.sampled {
                    self.orphans += cpu.loose.len() as u64;
                }
                cpu.sampled = true;
                cpu.loose.clear();
                cpu.before_irq = before;
                cpu.period = Some(Period {
                    seqnum: *seqnum,
                    irq_ts: rec.ts,
                    irq_latency: *latency_ns,
                    irq_pid: rec.pid,
                    irq_line: line,
                    irq_missing: false,
                    timer_irq: None,
                    blocking: None,
                    nmi: Vec::new(),
                    irq: Vec::new(),
                    softirq: Vec::new(),
                    thread: Vec::new(),
                    stack: Vec::new(),
                });
            }
            OsnoiseKind::TimerlatSample {
                seqnum,
                context: TimerlatContext::Thread,
                latency_ns,
            } => {
                self.samples += 1;
                cpu.state = State::WaitingIrq;
                cpu.sampled = true;
                let loose = std::mem::take(&mut cpu.loose);
                let p = match cpu.period.take() {
                    Some(p) if p.seqnum == *seqnum => p,
                    _ => {
                        if *latency_ns >= threshold.0 {
                            let p = Period::without_irq(rec, *seqnum, *latency_ns, line, loose);
                            self.finish_period(rec.cpu, p, None, None, Before::default());
                        }
                        return;
                    }
                };
                if *latency_ns >= threshold.0 || p.irq_latency >= threshold.0 {
                    let prev = cpu.prev_irq.clone();
                    let last = cpu.before_irq.clone();
                    self.finish_period(rec.cpu, p, Some((*latency_ns, rec.ts, line)), prev, last);
                }
            }
            OsnoiseKind::TimerlatSample { .. } => self.samples += 1,
            OsnoiseKind::Noise {
                source,
                start,
                duration_ns,
            } => {
                self.noise += 1;
                let waiting_thread = cpu.state == State::WaitingThread && cpu.period.is_some();
                let item = |name: String, id: i64| Interference {
                    name,
                    id,
                    start: *start,
                    duration_ns: *duration_ns,
                };
                if !waiting_thread && cpu.loose.len() < MAX_LOOSE {
                    let (tag, it) = match source {
                        NoiseSource::Nmi => (Tag::Nmi, item("nmi".into(), 0)),
                        NoiseSource::Irq { desc, vector } => {
                            (Tag::Irq, item(desc.clone(), *vector))
                        }
                        NoiseSource::Softirq { vector } => (
                            Tag::Softirq,
                            item(softirq_name(*vector).into(), i64::from(*vector)),
                        ),
                        NoiseSource::Thread { comm, pid } => {
                            (Tag::Thread, item(comm.to_string(), i64::from(*pid)))
                        }
                    };
                    cpu.loose.push((tag, it, line.clone()));
                }
                match source {
                    NoiseSource::Nmi | NoiseSource::Irq { .. } => {
                        let it = match source {
                            NoiseSource::Irq { desc, vector } => item(desc.clone(), *vector),
                            _ => item("nmi".into(), 0),
                        };
                        if !waiting_thread {
                            cpu.prev_irq = Some((it, line));
                            return;
                        }
                        let Some(p) = cpu.period.as_mut() else {
                            return;
                        };
                        if matches!(source, NoiseSource::Nmi) {
                            p.nmi.push((it, line));
                        } else if p.timer_irq.is_none() {
                            p.timer_irq = Some((*start, *duration_ns, line));
                        } else {
                            p.irq.push((it, line));
                        }
                    }
                    NoiseSource::Softirq { vector } => {
                        if let (true, Some(p)) = (waiting_thread, cpu.period.as_mut()) {
                            p.softirq.push((
                                item(softirq_name(*vector).into(), i64::from(*vector)),
                                line,
                            ));
                        }
                    }
                    NoiseSource::Thread { comm, pid } => {
                        if let (true, Some(p)) = (waiting_thread, cpu.period.as_mut()) {
                            if *pid == p.irq_pid && p.blocking.is_none() {
                                p.blocking = Some((*comm, *duration_ns, line, *start));
                            } else {
                                p.thread
                                    .push((item(comm.to_string(), i64::from(*pid)), line));
                            }
                        }
                    }
                }
            }
            OsnoiseKind::SampleThreshold { .. } => self.noise += 1,
        }
    }

    /// The periods over the threshold, in the order they ended; a period still waiting
    /// for its thread sample at the end is judged on its IRQ latency.
    pub fn finish(mut self) -> Vec<TimerlatSpike> {
        self.orphans += self
            .cpus
            .values()
            .filter(|c| !c.sampled)
            .map(|c| c.loose.len() as u64)
            .sum::<u64>();
        let mut open: Vec<OpenPeriod> = self
            .cpus
            .iter_mut()
            .filter(|(_, c)| c.state == State::WaitingThread)
            .filter_map(|(cpu, c)| {
                c.period
                    .take()
                    .map(|p| (*cpu, p, c.prev_irq.clone(), c.before_irq.clone()))
            })
            .filter(|(_, p, _, _)| p.irq_latency >= self.threshold.0)
            .collect();
        open.sort_by_key(|(cpu, p, _, _)| (p.irq_ts, *cpu));
        for (cpu, p, prev, last) in open {
            self.finish_period(cpu, p, None, prev, last);
        }
        self.spikes
    }

    fn finish_period(
        &mut self,
        cpu: u32,
        p: Period,
        thread: Option<(u64, Nanos, String)>,
        prev_irq: Option<(Interference, String)>,
        before_irq: Before,
    ) {
        let expected = Nanos(p.irq_ts.0.saturating_sub(p.irq_latency));
        // The IRQ sample is taken inside the timer's handler, so its time lies within
        // the handler's `irq_noise` span when both use one clock. The osnoise events
        // stamp `start` with the tracer's own clock (`local`); a trace recorded with
        // another clock (trace-cmd's `global`...) cannot be compared with them.
        let same_clock = p.timer_irq.as_ref().is_none_or(|(start, dur, _)| {
            start.0 <= p.irq_ts.0.saturating_add(TEXT_SLACK_NS)
                && start.0.saturating_add(*dur).saturating_add(TEXT_SLACK_NS) >= p.irq_ts.0
        });
        if p.timer_irq.is_some() {
            self.clock_checked += 1;
        }
        if !same_clock {
            self.clock_mismatch += 1;
        }
        // The text's timestamps are in microseconds: the handler may seem to start
        // before the expiry by less than one; that is no delay.
        let delay = p
            .timer_irq
            .as_ref()
            .filter(|_| same_clock)
            .map(|(start, _, _)| start.0.saturating_sub(expected.0));
        let prev_end = prev_irq
            .as_ref()
            .map(|(i, _)| i.start.0.saturating_add(i.duration_ns));
        let prev_overlaps = same_clock && prev_end.is_some_and(|end| end > expected.0);
        let exit_from_idle = p.irq_pid == 0 && delay.is_some() && !prev_overlaps;
        let comm_of = |pid: i32| -> Option<String> {
            if pid == 0 {
                return Some(format!("swapper/{cpu}"));
            }
            self.comm.get(&pid).map(|c| c.to_string())
        };
        let blocking_thread = BlockingThread {
            comm: p
                .blocking
                .as_ref()
                .map(|(c, _, _, _)| c.to_string())
                .or_else(|| comm_of(p.irq_pid)),
            pid: p.irq_pid,
            duration_ns: p.blocking.as_ref().map_or(0, |(_, d, _, _)| *d),
        };
        let (context, latency_ns) = match &thread {
            Some((lat, _, _)) => (TimerlatContext::Thread, *lat),
            None if p.irq_missing => (TimerlatContext::Thread, p.irq_latency),
            None => (TimerlatContext::Irq, p.irq_latency),
        };
        let split = |v: &[(Interference, String)]| -> Vec<Interference> {
            v.iter().map(|(i, _)| i.clone()).collect()
        };
        let mut spike = TimerlatSpike {
            id: u32::try_from(self.spikes.len() + 1).unwrap_or(u32::MAX),
            cpu,
            seqnum: p.seqnum,
            context,
            expected,
            irq_latency_ns: (!p.irq_missing).then_some(p.irq_latency),
            thread_latency_ns: thread
                .as_ref()
                .map(|(l, _, _)| *l)
                .or(p.irq_missing.then_some(p.irq_latency)),
            latency_ns,
            irq_handler_delay_ns: delay,
            exit_from_idle,
            timer_irq_duration_ns: p.timer_irq.as_ref().map(|(_, d, _)| *d),
            blocking_thread,
            previous_irq: prev_irq
                .as_ref()
                .filter(|_| prev_overlaps)
                .map(|(i, _)| i.clone()),
            nmi: split(&p.nmi),
            irq: split(&p.irq),
            softirq: split(&p.softirq),
            thread: split(&p.thread),
            stack: p.stack.clone(),
            primary: Finding {
                cause: Cause::Unknown,
                confidence: Confidence::Low,
                share: 0.0,
                summary: String::new(),
                culprit: None,
            },
            evidence: Vec::new(),
        };
        let (primary, evidence) = self.verdict(
            &spike,
            &p,
            thread.as_ref().map(|(_, ts, l)| (*ts, l.as_str())),
            prev_irq.as_ref().filter(|_| prev_overlaps),
            &before_irq,
        );
        spike.primary = primary;
        spike.evidence = evidence;
        spike.evidence.sort_by_key(|e| e.ts);
        if let Some(c) = self.cpus.get_mut(&cpu) {
            c.last_spike = Some(Judged {
                index: self.spikes.len(),
                period: p,
                thread: thread.map(|(_, ts, l)| (ts, l)),
                prev_irq: prev_irq.filter(|_| prev_overlaps),
                before_irq,
            });
        }
        self.spikes.push(spike);
    }

    /// The primary cause of a period, only where its preconditions hold in the events.
    fn verdict(
        &self,
        s: &TimerlatSpike,
        p: &Period,
        thread_line: Option<(Nanos, &str)>,
        prev_irq: Option<&(Interference, String)>,
        before_irq: &Before,
    ) -> (Finding, Vec<Evidence>) {
        let total = s.latency_ns.max(1);
        let share = |ns: u64| ns as f64 / total as f64;
        let ev = |ts: Nanos, line: &str, why: String| Evidence {
            ts,
            cpu: s.cpu,
            line: line.to_owned(),
            why,
        };
        if p.irq_missing {
            let mut evidence = vec![ev(
                p.irq_ts,
                &p.irq_line,
                format!(
                    "the timerlat thread ran {} after the expiry at {:.6}",
                    us(total),
                    s.expected.as_secs_f64()
                ),
            )];
            let mut noise: Vec<&(Interference, String)> = p
                .nmi
                .iter()
                .chain(&p.irq)
                .chain(&p.softirq)
                .chain(&p.thread)
                .collect();
            noise.sort_by_key(|(i, _)| std::cmp::Reverse(i.duration_ns));
            if let Some((i, line)) = noise.first() {
                evidence.push(ev(
                    i.start,
                    line,
                    format!(
                        "{}:{} ran {} in the window",
                        i.name,
                        i.id,
                        us(i.duration_ns)
                    ),
                ));
            }
            return (
                unknown(format!(
                    "the trace begins after this period's IRQ sample (rtla saves only the end of its buffer), so the IRQ latency, the handler delay and the blocking thread are not recorded; noise after the expiry: {}",
                    describe(s)
                )),
                evidence,
            );
        }
        let mut evidence = vec![ev(
            p.irq_ts,
            &p.irq_line,
            format!(
                "the timer was due at {:.6}; its IRQ ran {} late",
                s.expected.as_secs_f64(),
                us(s.irq_latency_ns.unwrap_or(0))
            ),
        )];
        if let Some((ts, line)) = thread_line {
            evidence.push(ev(
                ts,
                line,
                format!("the timerlat thread ran {} after the expiry", us(total)),
            ));
        }
        // Candidates, largest first: (ns, what).
        #[derive(Clone, Copy)]
        enum Largest {
            Delay,
            Blocking,
            Irq,
            Softirq,
            Thread,
            Nmi,
        }
        let top = |v: &[(Interference, String)]| -> Option<(Interference, String)> {
            let mut by: Vec<(String, i64, u64)> = Vec::new();
            for (i, _) in v {
                match by.iter_mut().find(|(n, id, _)| *n == i.name && *id == i.id) {
                    Some(e) => e.2 += i.duration_ns,
                    None => by.push((i.name.clone(), i.id, i.duration_ns)),
                }
            }
            let best = by.iter().max_by_key(|e| e.2)?;
            v.iter()
                .filter(|(i, _)| i.name == best.0 && i.id == best.1)
                .max_by_key(|(i, _)| i.duration_ns)
                .map(|(i, l)| {
                    (
                        Interference {
                            duration_ns: best.2,
                            ..i.clone()
                        },
                        l.clone(),
                    )
                })
        };
        let mut parts = vec![
            (s.irq_handler_delay_ns.unwrap_or(0), Largest::Delay),
            (s.blocking_thread.duration_ns, Largest::Blocking),
            (TimerlatSpike::sum(&s.irq), Largest::Irq),
            (TimerlatSpike::sum(&s.softirq), Largest::Softirq),
            (TimerlatSpike::sum(&s.thread), Largest::Thread),
            (TimerlatSpike::sum(&s.nmi), Largest::Nmi),
        ];
        if s.context == TimerlatContext::Irq {
            parts.truncate(1);
        }
        parts.sort_by_key(|p| std::cmp::Reverse(p.0));
        let Some(&(ns, part)) = parts.first() else {
            return (unknown(String::new()), evidence);
        };
        let breakdown = describe(s);
        if s.context == TimerlatContext::Irq && p.timer_irq.is_none() && self.noise > 0 {
            let last = before_irq.last_before(p.irq_ts);
            let silence = match last {
                Some(t) => {
                    let from = Nanos(t.0.max(s.expected.0));
                    format!(
                        "; CPU {} recorded no event for {} (from {:.6}) until the IRQ sample, but when in that span the handler began is not recorded",
                        s.cpu,
                        us(p.irq_ts.0.saturating_sub(from.0)),
                        from.as_secs_f64()
                    )
                }
                None => String::new(),
            };
            return (
                unknown(format!(
                    "the trace holds no osnoise:irq_noise of this timer IRQ: the osnoise tracer writes it when the handler returns, and a stop on the IRQ latency (rtla -a/-i) turns tracing off inside the handler, so the handler delay is not recorded{silence}"
                )),
                evidence,
            );
        }
        if ns == 0 || share(ns) < PRIMARY_SHARE {
            return (
                unknown(format!(
                    "no single interference explains {:.0} % of the {} latency of {}: {breakdown}",
                    PRIMARY_SHARE * 100.0,
                    s.context.as_str(),
                    us(total)
                )),
                evidence,
            );
        }
        let (top_irq, top_softirq, thread_comm);
        let part = match part {
            Largest::Delay => {
                let Some((start, _, line)) = &p.timer_irq else {
                    return (unknown(breakdown), evidence);
                };
                evidence.push(ev(
                    *start,
                    line,
                    format!("the timer's IRQ handler began {} after the expiry", us(ns)),
                ));
                let across =
                    prev_irq.filter(|(i, _)| share(i.duration_ns.min(ns)) >= PRIMARY_SHARE);
                if let Some((i, line)) = across {
                    evidence.push(ev(
                        i.start,
                        line,
                        format!("{} ran {} across the expiry", i.name, us(i.duration_ns)),
                    ));
                }
                // The CPU's silence before the handler: from its last recorded event
                // (or the expiry, when that came later) to the handler's start.
                let silence = before_irq.longest_silence(s.expected, *start);
                Part::Delay {
                    ns,
                    across: across.map(|(i, _)| i),
                    silence,
                    others_silent: before_irq.other_cpu_silent(s.expected, *start),
                    others_silent_in_silence: silence
                        .is_some_and(|(_, from, to)| before_irq.other_cpu_silent(from, to)),
                }
            }
            Largest::Irq => {
                let Some((i, line)) = top(&p.irq) else {
                    return (unknown(breakdown), evidence);
                };
                evidence.push(ev(
                    i.start,
                    &line,
                    format!(
                        "IRQ {} ({}) ran {} before the thread",
                        i.id,
                        i.name,
                        us(i.duration_ns)
                    ),
                ));
                top_irq = i;
                Part::Irq { ns, top: &top_irq }
            }
            Largest::Softirq => {
                let Some((i, line)) = top(&p.softirq) else {
                    return (unknown(breakdown), evidence);
                };
                evidence.push(ev(
                    i.start,
                    &line,
                    format!("softirq {} ran {}", i.name, us(i.duration_ns)),
                ));
                top_softirq = i;
                Part::Softirq {
                    ns,
                    top: &top_softirq,
                }
            }
            Largest::Nmi => Part::Nmi { ns },
            Largest::Blocking | Largest::Thread => {
                let (comm, pid, dur, line, start) = match part {
                    Largest::Blocking => {
                        let Some((c, d, l, start)) = &p.blocking else {
                            return (unknown(breakdown), evidence);
                        };
                        (c.to_string(), p.irq_pid, *d, l.clone(), *start)
                    }
                    _ => {
                        let Some((i, l)) = top(&p.thread) else {
                            return (unknown(breakdown), evidence);
                        };
                        (
                            i.name.clone(),
                            i32::try_from(i.id).unwrap_or(-1),
                            i.duration_ns,
                            l,
                            i.start,
                        )
                    }
                };
                evidence.push(ev(
                    start,
                    &line,
                    format!("{comm}:{pid} ran {} before the thread", us(dur)),
                ));
                let victim_prio = self
                    .comm
                    .iter()
                    .find(|(_, c)| c.to_string() == format!("timerlat/{}", s.cpu))
                    .and_then(|(p, _)| self.prio.get(p))
                    .copied();
                thread_comm = comm;
                Part::Thread {
                    comm: &thread_comm,
                    pid,
                    ns: dur,
                    prio: self.prio.get(&pid).copied(),
                    victim_prio,
                    preempt_rt: self.saw_ktimers,
                }
            }
        };
        let period = PeriodCtx {
            spike: s,
            part,
            isolated: self.isolated(s.cpu),
        };
        (self.judge(&period), evidence)
    }

    /// The rules' verdict on a period: the cause the first of them names, else the first
    /// refusal, else the breakdown (NMIs have no cause).
    fn judge(&self, period: &PeriodCtx<'_>) -> Finding {
        match rules::judge(period) {
            Answer::Names(f) => f,
            Answer::Refuses(why) => unknown(why),
            Answer::Pass => unknown(match period.part {
                Part::Nmi { ns } => format!(
                    "NMIs ran {} before the thread; rtwhy has no cause for NMIs: {}",
                    us(ns),
                    period.breakdown()
                ),
                _ => period.breakdown(),
            }),
        }
    }

    fn isolated(&self, cpu: u32) -> bool {
        self.isolated.as_ref().is_some_and(|l| l.contains(cpu))
    }
}

fn unknown(summary: String) -> Finding {
    Finding {
        cause: Cause::Unknown,
        confidence: Confidence::Low,
        share: 0.0,
        summary,
        culprit: None,
    }
}

/// A record as a trace line for evidence.
fn record_line(r: &OsnoiseRecord) -> String {
    let head = format!("[{:03}] {:.6}: ", r.cpu, r.ts.as_secs_f64());
    let body = match &r.kind {
        OsnoiseKind::TimerlatSample {
            seqnum,
            context,
            latency_ns,
        } => format!(
            "#{seqnum} context {} timer_latency {latency_ns} ns",
            context.as_str()
        ),
        OsnoiseKind::Noise {
            source,
            start,
            duration_ns,
        } => {
            let when = format!(
                "start {}.{:09} duration {duration_ns} ns",
                start.0 / 1_000_000_000,
                start.0 % 1_000_000_000
            );
            match source {
                NoiseSource::Nmi => format!("nmi_noise: {when}"),
                NoiseSource::Irq { desc, vector } => format!("irq_noise: {desc}:{vector} {when}"),
                NoiseSource::Softirq { vector } => {
                    format!("softirq_noise: {}:{vector} {when}", softirq_name(*vector))
                }
                NoiseSource::Thread { comm, pid } => {
                    format!("thread_noise: {}:{pid} {when}", comm)
                }
            }
        }
        OsnoiseKind::SampleThreshold {
            start,
            duration_ns,
            interference,
        } => format!(
            "sample_threshold: start {}.{:09} duration {duration_ns} ns interference {interference}",
            start.0 / 1_000_000_000,
            start.0 % 1_000_000_000
        ),
    };
    format!("pid {} {head}{body}", r.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: u64, pid: i32, kind: OsnoiseKind) -> OsnoiseRecord {
        OsnoiseRecord {
            ts: Nanos(ts),
            cpu: 1,
            pid,
            kind,
        }
    }

    fn sample(ts: u64, pid: i32, seqnum: u64, context: TimerlatContext, lat: u64) -> OsnoiseRecord {
        rec(
            ts,
            pid,
            OsnoiseKind::TimerlatSample {
                seqnum,
                context,
                latency_ns: lat,
            },
        )
    }

    fn irq(ts: u64, desc: &str, vector: i64, start: u64, dur: u64) -> OsnoiseRecord {
        rec(
            ts,
            0,
            OsnoiseKind::Noise {
                source: NoiseSource::Irq {
                    desc: desc.into(),
                    vector,
                },
                start: Nanos(start),
                duration_ns: dur,
            },
        )
    }

    // Regression: trace-cmd's default `global` clock put the osnoise `start` stamps
    // 3.14 s away from the samples (guest run E), which gave delays of seconds.
    #[test]
    fn another_clock_gives_no_handler_delay() {
        let mut a = TimerlatAnalyzer::new(Nanos(100_000), None);
        a.push_record(&sample(10_000_000, 0, 1, TimerlatContext::Irq, 500_000));
        a.push_record(&irq(10_001_000, "local_timer", 236, 13_150_000_000, 20_000));
        a.push_record(&sample(10_100_000, 9, 1, TimerlatContext::Thread, 600_000));
        assert_eq!(a.clock_mismatches(), (1, 1));
        let s = a.finish();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].irq_handler_delay_ns, None);
        assert!(!s[0].exit_from_idle);
    }

    #[test]
    fn device_irq_across_the_expiry_on_an_isolated_cpu() {
        let mut a = TimerlatAnalyzer::new(Nanos(100_000), CpuList::parse("1"));
        // virtio0-requests ran 9.99-10.30 ms; the timer was due at 10.00 ms, its
        // handler began at 10.30 ms.
        a.push_record(&irq(10_300_000, "virtio0-requests", 25, 9_990_000, 310_000));
        a.push_record(&sample(10_305_000, 0, 4, TimerlatContext::Irq, 305_000));
        a.push_record(&irq(10_310_000, "local_timer", 236, 10_300_000, 8_000));
        a.push_record(&sample(10_320_000, 9, 4, TimerlatContext::Thread, 320_000));
        let s = a.finish();
        assert_eq!(s[0].irq_handler_delay_ns, Some(300_000));
        assert!(!s[0].exit_from_idle);
        assert_eq!(
            s[0].previous_irq.as_ref().map(|p| p.duration_ns),
            Some(310_000)
        );
        assert_eq!(s[0].primary.cause, Cause::IrqOnIsolatedCpu);
    }

    #[test]
    fn arm64s_timer_and_ipis_are_not_device_irqs() {
        // Regression: on arm64 osnoise names the generic timer `arch_timer` and the IPIs
        // `IPI`; with only x86's vector names known, a tick or IPI there counted as a
        // device interrupt, and a long one became irq_on_isolated_cpu.
        for (desc, vector) in [("arch_timer", 11), ("IPI", 6)] {
            let mut a = TimerlatAnalyzer::new(Nanos(100_000), CpuList::parse("1"));
            a.push_record(&sample(10_005_000, 0, 4, TimerlatContext::Irq, 5_000));
            a.push_record(&irq(10_010_000, desc, vector, 10_001_000, 4_000));
            a.push_record(&irq(10_300_000, desc, vector, 10_010_000, 280_000));
            a.push_record(&sample(10_320_000, 9, 4, TimerlatContext::Thread, 320_000));
            let s = a.finish();
            assert_eq!(s[0].irq.len(), 1, "{desc}");
            assert_eq!(s[0].primary.cause, Cause::Unknown, "{desc}");
        }
    }

    #[test]
    fn the_local_timer_is_not_a_device_irq() {
        let mut a = TimerlatAnalyzer::new(Nanos(100_000), CpuList::parse("1"));
        a.push_record(&sample(10_005_000, 0, 4, TimerlatContext::Irq, 5_000));
        a.push_record(&irq(10_010_000, "local_timer", 236, 10_001_000, 4_000));
        a.push_record(&irq(10_300_000, "local_timer", 236, 10_010_000, 280_000));
        a.push_record(&sample(10_320_000, 9, 4, TimerlatContext::Thread, 320_000));
        let s = a.finish();
        assert_eq!(s[0].irq.len(), 1);
        assert_eq!(s[0].primary.cause, Cause::Unknown);
    }
    fn stack(inner: &[&str]) -> Vec<String> {
        [
            "timerlat_irq",
            "hrtimer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
        ]
        .iter()
        .chain(inner)
        .map(|f| (*f).to_owned())
        .collect()
    }

    fn waking(ts: u64, cpu: u32) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid: 300,
            kind: EventKind::Generic(rtwhy_model::GenericEvent {
                system: "sched".into(),
                name: "sched_waking".into(),
                fields: Vec::new(),
            }),
        }
    }

    /// A period whose timer handler began 2 ms late on a CPU silent since 7 ms, with
    /// rtla's `-s` stack (printed after the thread sample) of `inner`; CPU 0's last
    /// event came at `cpu0` ns.
    fn late_timer(inner: &[&str], cpu0: u64) -> TimerlatSpike {
        let mut a = TimerlatAnalyzer::new(Nanos(1_000_000), None);
        // CPU 0 switches to a task then.
        a.push_event(&Event {
            ts: Nanos(cpu0),
            cpu: 0,
            pid: 0,
            kind: EventKind::SchedSwitch {
                prev_comm: Comm::new("swapper/0"),
                prev_pid: 0,
                prev_prio: 120,
                prev_state: rtwhy_model::TaskState(0),
                next_comm: Comm::new("load"),
                next_pid: 400,
                next_prio: 120,
            },
        });
        a.push_record(&irq(7_000_000, "local_timer", 236, 6_990_000, 10_000));
        // Due at 10 ms; the handler began at 12 ms and woke a task (the tick's
        // rcuc/1) before its sample.
        a.push_event(&waking(12_020_000, 1));
        a.push_record(&sample(12_030_000, 300, 4, TimerlatContext::Irq, 2_030_000));
        a.push_record(&irq(12_060_000, "local_timer", 236, 12_000_000, 60_000));
        a.push_record(&sample(
            12_100_000,
            9,
            4,
            TimerlatContext::Thread,
            2_100_000,
        ));
        a.push_stack(1, stack(inner));
        let mut s = a.finish();
        assert_eq!(s.len(), 1);
        s.remove(0)
    }

    #[test]
    fn the_silence_before_a_late_timer_ends_where_its_handler_begins() {
        // The event at 12.02 ms is the handler's own: the CPU was silent 10-12 ms.
        let s = late_timer(&["native_safe_halt", "default_idle", "do_idle"], 11_000_000);
        assert_eq!(s.irq_handler_delay_ns, Some(2_000_000));
        assert_eq!(s.primary.cause, Cause::Hwlat);
        assert_eq!(s.primary.confidence, Confidence::Medium);
        assert!(
            s.primary.summary.contains("native_safe_halt"),
            "{}",
            s.primary.summary
        );
    }

    #[test]
    fn a_late_timer_taken_where_interrupts_come_back_on_is_that_code() {
        let holder = [
            "_raw_spin_unlock_irqrestore",
            "e1000_watchdog",
            "process_one_work",
        ];
        let s = late_timer(&holder, 11_000_000);
        assert_eq!(s.primary.cause, Cause::KernelNonpreemptible);
        assert!(
            s.primary.summary.contains("e1000_watchdog had them off"),
            "{}",
            s.primary.summary
        );
        // Other kernel code at the IRQ: still a silent CPU, but the stack cannot rule
        // out that code keeping interrupts off.
        let s = late_timer(&["queue_work_on", "irq_work_single"], 11_000_000);
        assert_eq!(s.primary.cause, Cause::Hwlat);
        assert_eq!(s.primary.confidence, Confidence::Low);
        // CPU 0 silent from 6 ms over the whole delay too: the VM was stopped, and the
        // timer was taken wherever CPU 1 resumed.
        let s = late_timer(&holder, 6_000_000);
        assert_eq!(s.primary.cause, Cause::Hwlat);
        assert_eq!(s.primary.confidence, Confidence::Medium);
        assert!(
            s.primary.summary.contains("another CPU recorded nothing"),
            "{}",
            s.primary.summary
        );
    }
    #[test]
    fn time_inside_an_interrupt_handler_is_not_silence() {
        // A local_timer handler (not a device) ran 9.99-10.30 ms, across the expiry at
        // 10 ms; its irq_noise is written at its end, so nothing else is recorded in
        // it. The timer's handler began at 10.305 ms.
        let mut a = TimerlatAnalyzer::new(Nanos(100_000), None);
        a.push_event(&waking(9_000_000, 1));
        a.push_record(&irq(10_300_000, "local_timer", 236, 9_990_000, 310_000));
        a.push_record(&sample(10_310_000, 300, 4, TimerlatContext::Irq, 310_000));
        a.push_record(&irq(10_320_000, "local_timer", 236, 10_305_000, 10_000));
        a.push_record(&sample(10_330_000, 9, 4, TimerlatContext::Thread, 330_000));
        let s = a.finish();
        assert_eq!(s[0].irq_handler_delay_ns, Some(305_000));
        assert_ne!(s[0].primary.cause, Cause::Hwlat, "{:?}", s[0].primary);
    }

    /// A period in which `comm`:300 (kernel prio `prio`), current at the timer IRQ, held
    /// the CPU 400 us of the 450 us before timerlat/1 (kernel prio 4) ran; `also` is a
    /// task seen switched in before it.
    fn held_by(comm: &str, prio: i32, also: Option<&str>) -> TimerlatSpike {
        let switch = |ts, prev: (&str, i32, i32), next: (&str, i32, i32)| Event {
            ts: Nanos(ts),
            cpu: 1,
            pid: prev.1,
            kind: EventKind::SchedSwitch {
                prev_comm: Comm::new(prev.0),
                prev_pid: prev.1,
                prev_prio: prev.2,
                prev_state: rtwhy_model::TaskState(0),
                next_comm: Comm::new(next.0),
                next_pid: next.1,
                next_prio: next.2,
            },
        };
        let mut a = TimerlatAnalyzer::new(Nanos(100_000), None);
        if let Some(other) = also {
            a.push_event(&switch(100_000, ("swapper/1", 0, 120), (other, 20, 98)));
        }
        a.push_event(&switch(200_000, ("timerlat/1", 9, 4), (comm, 300, prio)));
        a.push_record(&sample(1_012_000, 300, 7, TimerlatContext::Irq, 12_000));
        a.push_record(&irq(1_013_000, "local_timer", 236, 1_010_000, 3_000));
        a.push_record(&rec(
            1_440_000,
            300,
            OsnoiseKind::Noise {
                source: NoiseSource::Thread {
                    comm: Comm::new(comm),
                    pid: 300,
                },
                start: Nanos(1_013_000),
                duration_ns: 400_000,
            },
        ));
        a.push_record(&sample(1_450_000, 9, 7, TimerlatContext::Thread, 450_000));
        let mut s = a.finish();
        assert_eq!(s.len(), 1);
        s.remove(0)
    }

    #[test]
    fn the_stopper_thread_is_migration_before_it_is_preemption() {
        // migration/1 runs at FIFO 99, above timerlat/1: preemption's rule would name
        // it too, and migration comes first.
        let s = held_by("migration/1", 0, None);
        assert_eq!(s.primary.cause, Cause::Migration, "{:?}", s.primary);
        assert_eq!(s.primary.confidence, Confidence::High);
        assert_eq!(held_by("spin", 0, None).primary.cause, Cause::Preemption);
    }

    #[test]
    fn a_lower_task_holding_the_cpu_is_refused_on_preempt_rt() {
        let s = held_by("spin", 120, None);
        assert_eq!(s.primary.cause, Cause::KernelNonpreemptible);
        // 89 % of the latency, capped at medium: the preemption model was not recorded.
        assert_eq!(s.primary.confidence, Confidence::Medium);
        let s = held_by("spin", 120, Some("ktimers/1"));
        assert_eq!(s.primary.cause, Cause::Unknown);
        assert!(
            s.primary.summary.contains("PREEMPT_RT"),
            "{}",
            s.primary.summary
        );
    }
}
