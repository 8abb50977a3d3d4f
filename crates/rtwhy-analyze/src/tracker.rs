//! Per-CPU and per-task state, followed event by event, and spike detection.

use std::collections::{HashSet, VecDeque};

use rtwhy_model::{
    parse_fact_marker, BreachRecord, Comm, Event, EventKind, Nanos, Seen, SpikeKind, SpikeSource,
    SyscallKind, SystemFacts, TaskRef, VictimStats,
};

use crate::breakdown::{LateTimer, TaskNames, TimerFire};
use crate::config::Config;
use crate::history::History;
use crate::intmap::IntMap;

/// A late timer counts for the stopped-CPU rule from this lateness on.
const LATE_TIMER_MIN: u64 = 20_000;

/// What the tracker knows of one thread.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub comm: Comm,
    pub prio: i32,
    run: Run,
    wake: Option<Wake>,
    blocked: Option<Blocked>,
    timer: Option<(u64, i64)>,
    futex: Option<Futex>,
    /// The switch that took it off the CPU while runnable (real-time tasks only).
    preempted_by: Option<Event>,
    /// A victim's latest episodes (oldest first), for a marker written after them:
    /// cyclictest's names the newest, the recorder's one a few milliseconds old.
    recent: VecDeque<PastEpisode>,
    /// A cyclictest marker written, as its own buffer's clock has it, while the events
    /// show its writer asleep: that buffer ticks on another clock (the guest's top
    /// level on `global`, an instance on `local`), so the stamp does not place the
    /// window. The first later wake-up whose latency is the marker's number is it.
    unplaced: Option<Unplaced>,
    /// Its own priority while a PI boost (`sched_pi_setprio` raising it) lends it a
    /// waiter's, and that waiter: a boosted normal task is a normal task.
    boost: Option<(i32, i32)>,
}

impl Task {
    /// The priority it runs at when nobody lends it one.
    fn own_prio(&self) -> i32 {
        self.boost.map_or(self.prio, |(own, _)| own)
    }
}

/// A marker whose stamp the events contradict (see `Task::unplaced`).
#[derive(Debug, Clone)]
pub(crate) struct Unplaced {
    pub marker: Event,
    pub reported: u64,
    pub source: SpikeSource,
}

/// How far after an unplaced marker its wake-up is looked for.
const UNPLACED_SEARCH_NS: u64 = 1_000_000_000;

/// Whether a latency measured from the events is the application's `reported` one:
/// within 10 % or 100 us (the clock read and the marker write follow the switch-in).
pub(crate) fn same_latency(measured: u64, reported: u64) -> bool {
    measured.abs_diff(reported) <= (reported / 10).max(100_000)
}

/// How many of a victim's episodes are kept for markers.
const RECENT: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Unknown,
    Running { cpu: u32 },
    Runnable { since: Nanos, cpu: u32 },
    Blocked,
}

/// A wake-up waiting for the task to run.
#[derive(Debug, Clone)]
pub(crate) struct Wake {
    pub ts: Nanos,
    pub target_cpu: i32,
    /// The task that woke it, `None` when woken from interrupt context of idle.
    pub waker: Option<i32>,
    pub timer: Option<TimerFire>,
    pub event: Event,
    /// The task's own timer fired while it was still on the CPU, before it could sleep
    /// (softirqs run in its context): it is late until it leaves interrupt context.
    pub while_running: bool,
}

/// A task that went to sleep.
#[derive(Debug, Clone)]
pub(crate) struct Blocked {
    pub since: Nanos,
    pub futex: Option<Futex>,
    pub event: Event,
}

/// A futex call in progress.
#[derive(Debug, Clone)]
pub(crate) struct Futex {
    pub op: u64,
    pub uaddr: u64,
    /// The value the caller expects the futex word to hold (FUTEX_WAIT*'s `val`).
    pub val: u64,
    pub event: Event,
}

impl Futex {
    /// The call from its `sys_enter_futex` arguments (uaddr, op, val, ...); a missing
    /// argument reads as one no operation has, so a short record never looks like a lock.
    pub fn from_args(args: &[u64], event: Event) -> Futex {
        Futex {
            uaddr: args.first().copied().unwrap_or(0),
            op: args.get(1).copied().unwrap_or(u64::MAX),
            val: args.get(2).copied().unwrap_or(u64::MAX),
            event,
        }
    }

    /// Whether the call waits for a lock (see [`is_lock_call`]).
    pub fn is_lock(&self) -> bool {
        is_lock_call(self.op, self.val)
    }

    pub fn is_pi(&self) -> bool {
        matches!(self.op & 0x7f, 6 | 13)
    }
}

/// The futex word's "locked, with waiters" state: glibc's `lll_lock` (also its timed
/// locks, which wait with FUTEX_WAIT_BITSET) and Rust's `std::sync::Mutex` (always
/// FUTEX_WAIT_BITSET) sleep expecting it.
const CONTENDED: u64 = 2;

/// Whether a futex call with operation `op` and value `val` waits for a lock:
/// FUTEX_WAIT (how glibc waits for a plain mutex), FUTEX_WAIT_BITSET expecting the
/// contended state (timed glibc mutexes, Rust's mutex), FUTEX_LOCK_PI and LOCK_PI2 (PI
/// mutexes). Condition variables and semaphores also wait with FUTEX_WAIT_BITSET, for
/// a sequence number or a count, and are not locks: their wait is for work, not for
/// a holder. FUTEX_WAIT_REQUEUE_PI (a PI condition variable) waits for a signal first
/// and for its mutex only after the requeue, so its request is not a lock request.
pub(crate) fn is_lock_call(op: u64, val: u64) -> bool {
    match op & 0x7f {
        0 | 6 | 13 => true,
        9 => val == CONTENDED,
        _ => false,
    }
}

/// A task's priority-inheritance boost, as (its own kernel priority, who lent the
/// boost), after a `sched_pi_setprio` from `oldprio` to `newprio` made by task `by` (the
/// waiter, in whose context the kernel raises the owner). A boost keeps the priority
/// the task had before the first one; the setprio that gives that priority back (or a
/// lower one) ends it.
pub(crate) fn next_boost(
    boost: Option<(i32, i32)>,
    oldprio: i32,
    newprio: i32,
    by: i32,
) -> Option<(i32, i32)> {
    let own = boost.map_or(oldprio, |(own, _)| own);
    (newprio < own).then_some((own, by))
}

/// One "should have run" to "ran" stretch of a thread.
#[derive(Debug, Clone)]
pub(crate) struct Episode {
    pub victim: TaskRef,
    pub cpu: u32,
    pub kind: SpikeKind,
    pub source: SpikeSource,
    pub start: Nanos,
    pub end: Nanos,
    pub end_inferred: bool,
    pub wake: Option<Wake>,
    pub blocked: Option<Blocked>,
    /// The switch that took the victim off the CPU while runnable.
    pub preempted_by: Option<Event>,
    /// The event at which it ran (switch-in or its own first event).
    pub ran: Option<Event>,
    /// The window is the application's own measurement (a marker with its number): the
    /// victim's own time in it is part of the latency it reported.
    pub measured: bool,
}

/// A past episode of a victim, kept so that a marker written after it can name it.
#[derive(Debug, Clone)]
pub(crate) struct PastEpisode {
    pub episode: Episode,
    pub spike: Option<usize>,
}

#[derive(Debug, Clone, Default)]
struct CpuState {
    /// The hrtimer whose handler is running: address, handler entry, expiry estimate.
    hrtimer: Option<(u64, Nanos, Option<Nanos>)>,
    /// IRQ and softirq nesting.
    depth: u32,
}

/// What the rest of the analyzer does with an episode.
pub(crate) enum Outcome {
    /// Above the threshold (or named by a marker): diagnose it.
    Spike(Box<Episode>),
    /// A marker names an episode that was already diagnosed: update its source.
    Mark { spike: usize, source: SpikeSource },
    /// A marker brings what the events could not show (what the late timer interrupt
    /// interrupted) for an episode already diagnosed: diagnose it again with it.
    Rediagnose { spike: usize, episode: Box<Episode> },
}

pub(crate) struct Tracker {
    pub config: Config,
    pub facts: SystemFacts,
    pub history: History,
    /// The RT class's refusals on every CPU (for `rt_throttling`).
    pub refusals: crate::refusals::Refusals,
    pub tasks: IntMap<i32, Task>,
    cpus: Vec<CpuState>,
    /// Each timer's `expires` (its own clock) and when it was started (trace clock).
    timers: IntMap<u64, (i64, Nanos)>,
    pub late: Vec<LateTimer>,
    selected: HashSet<i32>,
    pub seen: Seen,
    pub events: u64,
    pub first_ts: Option<Nanos>,
    pub last_ts: Option<Nanos>,
    pub max_freq: u32,
    pub victims: IntMap<i32, VictimStats>,
    pub spike_ends: Vec<(i32, Nanos)>,
    /// The episodes of the spikes that may still change (ended within twice the horizon
    /// of the newest one), by spike index: a breach marker written a capture window
    /// after its spike (0.6 s in fixtures/recorded/arm64-rt-rtwhy-v6.dat), when its
    /// victim's `recent` has let the episode go, still has it diagnosed again with the
    /// detector's times.
    spiked: VecDeque<(usize, Episode)>,
    /// A `ktimers/N` thread was switched in: only PREEMPT_RT kernels have them.
    rt_threads: bool,
    /// Handler names by IRQ number, from `irq_handler_entry` (names an `irq/N-...`
    /// thread, whose own name the kernel cuts to 15 bytes).
    irq_names: IntMap<i32, String>,
    /// Task names the trace file saved (`saved_cmdlines`), for a task no scheduling event
    /// names: a marker's writer that did not switch while recorded.
    saved_names: IntMap<i32, Comm>,
    /// Markers whose stamp the events contradict and no wake-up matched in time.
    unplaced_left: Vec<Unplaced>,
    /// The last cyclictest marker: writer, number, stamp. The same line is in two
    /// buffers when the instance copies the top level's markers (`copy_trace_marker`).
    last_marker: Option<(i32, u64, Nanos)>,
}

impl crate::breakdown::TaskNames for Tracker {
    fn task(&self, tid: i32) -> Option<(rtwhy_model::Comm, i32)> {
        self.tasks.get(&tid).map(|t| (t.comm, t.prio))
    }

    fn irq_name(&self, irq: i32) -> Option<String> {
        self.irq_names
            .get(&irq)
            .cloned()
            .or_else(|| self.facts.irqs.get(&irq).and_then(|f| f.name.clone()))
    }
}

impl Tracker {
    /// `tid` as a diagnosis names it: its name, the priority it runs at, and the PI
    /// boost that lent it that priority.
    pub fn task_ref(&self, tid: i32) -> TaskRef {
        let t = self.tasks.get(&tid);
        let comm = self.comm_of(tid);
        let prio = t.map(|t| t.prio);
        let boost = t
            .and_then(|t| t.boost)
            .map(|(own_prio, by)| rtwhy_model::PiBoost {
                own_prio,
                by_tid: by,
                by_comm: self.tasks.get(&by).map(|w| w.comm).unwrap_or_default(),
            });
        TaskRef {
            tid,
            comm,
            prio,
            boost,
        }
    }

    /// The name of `tid`: from its latest scheduling event, else as the trace file saved
    /// it, else empty.
    pub fn comm_of(&self, tid: i32) -> Comm {
        self.tasks
            .get(&tid)
            .map(|t| t.comm)
            .or_else(|| self.saved_names.get(&tid).copied())
            .unwrap_or_default()
    }

    /// Adds the task names the trace file saved (`saved_cmdlines`).
    pub fn name_tasks<'a>(&mut self, names: impl IntoIterator<Item = (i32, &'a str)>) {
        for (tid, comm) in names {
            self.saved_names.insert(tid, Comm::new(comm));
        }
    }

    /// Whether the trace shows a thread only PREEMPT_RT kernels run (`ktimers/N`, which
    /// runs the timer softirqs there). `irq/N-*` threads prove nothing: every kernel
    /// has them for drivers that request threaded handlers.
    pub fn rt_threads_seen(&self) -> bool {
        self.rt_threads
    }

    pub fn new(mut config: Config, facts: SystemFacts) -> Tracker {
        // The recorder's `--marker`s that carry a number travel in the capture as facts
        // (`record.marker.N`): a capture analysed later reads its application's markers
        // as the recording did.
        for (k, v) in &facts.other {
            if k.starts_with("record.marker.") {
                if let Ok(rule) = crate::MarkerRule::new(v) {
                    if !config.markers.contains(&rule) {
                        config.markers.push(rule);
                    }
                }
            }
        }
        let history = History::new(config.horizon, config.max_events_per_cpu);
        let selected = config.filter.pids.iter().copied().collect();
        Tracker {
            config,
            facts,
            history,
            refusals: Default::default(),
            tasks: IntMap::default(),
            cpus: Vec::new(),
            timers: IntMap::default(),
            late: Vec::new(),
            selected,
            seen: Seen::default(),
            events: 0,
            first_ts: None,
            last_ts: None,
            max_freq: 0,
            victims: IntMap::default(),
            spike_ends: Vec::new(),
            spiked: VecDeque::new(),
            rt_threads: false,
            irq_names: IntMap::default(),
            saved_names: IntMap::default(),
            unplaced_left: Vec::new(),
            last_marker: None,
        }
    }

    fn task(&mut self, tid: i32, comm: Option<&Comm>, prio: Option<i32>) -> &mut Task {
        let t = self.tasks.entry(tid).or_insert_with(|| Task {
            comm: comm.copied().unwrap_or_default(),
            prio: prio.unwrap_or(120),
            run: Run::Unknown,
            wake: None,
            blocked: None,
            timer: None,
            futex: None,
            preempted_by: None,
            recent: VecDeque::new(),
            unplaced: None,
            boost: None,
        });
        if let Some(c) = comm {
            t.comm = *c;
        }
        if let Some(p) = prio {
            t.prio = p;
        }
        t
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuState {
        let i = crate::history::slot(cpu);
        if i >= self.cpus.len() {
            self.cpus.resize_with(i + 1, CpuState::default);
        }
        &mut self.cpus[i]
    }

    /// True when `tid` is a thread the user asked about (or, with no filter, a
    /// user-space real-time thread; with `all`, any thread).
    pub fn is_victim(&self, tid: i32) -> bool {
        if tid <= 0 {
            return false;
        }
        let f = &self.config.filter;
        let Some(t) = self.tasks.get(&tid) else {
            return false;
        };
        if f.all {
            return true;
        }
        if f.is_empty() {
            // SCHED_DEADLINE tasks are not default victims: one that used its runtime
            // waits for its next period by design, which is not lateness. Kernel threads
            // (ktimers, rcuc, irq/N, ksoftirqd, migration...) are the machine's plumbing:
            // waiting their turn behind each other is not a user's latency. `--comm`,
            // `--tid` or `--all` asks for them.
            return rtwhy_model::is_fifo_rr(t.own_prio())
                && !is_housekeeping(&t.comm)
                && !crate::breakdown::is_kernel_thread(&t.comm);
        }
        // Processes and names select their real-time threads (a cyclictest process has
        // a SCHED_OTHER main thread whose lateness nobody cares about); thread ids are
        // taken as they are.
        f.tids.contains(&tid)
            || (rtwhy_model::is_rt(t.own_prio())
                && (self.selected.contains(&tid) || f.matches_comm(&t.comm)))
    }

    /// True when a marker's spike of `tid`, named `comm`, belongs to a thread the user
    /// asked about. Markers come from the threads a detector or cyclictest watched
    /// (real-time ones), so with no filter every one counts, even of a thread the events
    /// have not shown yet; a filter keeps only its own threads' spikes (selftest's
    /// `--comm lab-high` had judged lab-med's and lab-low's breaches as the victim's).
    fn marker_victim(&self, tid: i32, comm: &Comm) -> bool {
        let f = &self.config.filter;
        f.is_empty()
            || f.tids.contains(&tid)
            || self.selected.contains(&tid)
            || f.matches_comm(comm)
    }

    /// The latency an application's marker `text` carries: cyclictest's `--tracemark`
    /// or one of the configured [`crate::MarkerRule`]s.
    fn tool_marker(&self, text: &str) -> Option<u64> {
        parse_cyclictest_marker(text)
            .map(|(reported, _limit)| reported)
            .or_else(|| self.config.markers.iter().find_map(|m| m.latency(text)))
    }

    fn is_tool_marker(&self, kind: &EventKind) -> bool {
        matches!(kind, EventKind::Print { text } if self.tool_marker(text).is_some())
    }

    /// Follows one event; returns the episodes to diagnose. The caller pushes the event
    /// into the history before diagnosing.
    pub fn observe(&mut self, ev: &Event) -> Vec<Outcome> {
        let mut out = Vec::new();
        self.events += 1;
        if self.first_ts.is_none() {
            self.first_ts = Some(ev.ts);
        }
        self.last_ts = Some(ev.ts);

        // A task's own event proves it is on the CPU, even if its switch-in was dropped.
        if ev.pid > 0 && !matches!(ev.kind, EventKind::SchedSwitch { .. }) {
            // Events at the very instant of the task's switch-out (a tracepoint after
            // `sched_switch` still carries the old pid) prove nothing.
            let depth = self.cpus.get(ev.cpu as usize).map_or(0, |c| c.depth);
            let in_irq = depth > 0 || is_irq_event(&ev.kind);
            let mut while_running = false;
            let waiting = self.tasks.get(&ev.pid).is_some_and(|t| {
                t.wake.as_ref().is_some_and(|w| {
                    while_running = w.while_running;
                    ev.ts > w.ts && !(w.while_running && in_irq)
                }) || matches!(t.run, Run::Runnable { since, .. } if ev.ts > since)
            });
            if waiting && while_running {
                self.ran(ev.pid, ev.cpu, ev.ts, false, ev, &mut out);
            } else if waiting && self.is_tool_marker(&ev.kind) {
                // Proves nothing: from another buffer (the top level beside an instance)
                // a marker can carry its switch-in's very timestamp and sort before it;
                // the marker's own window is its spike (`measured_window`).
            } else if waiting {
                let end = self.inferred_switch_in(ev);
                self.ran(ev.pid, ev.cpu, end, true, ev, &mut out);
            } else if let Some(t) = self.tasks.get_mut(&ev.pid) {
                if t.run == Run::Unknown {
                    t.run = Run::Running { cpu: ev.cpu };
                }
            }
        }

        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                self.seen.switch = true;
                if !self.rt_threads && next_comm.as_bytes().starts_with(b"ktimers/") {
                    self.rt_threads = true;
                }
                self.cpu(ev.cpu).depth = 0;
                if *prev_pid > 0 {
                    let t = self.task(*prev_pid, Some(prev_comm), Some(*prev_prio));
                    let keep = prev_state.is_runnable()
                        && t.wake.as_ref().is_some_and(|w| w.while_running);
                    if !keep {
                        t.wake = None;
                    }
                    if prev_state.is_runnable() {
                        t.run = Run::Runnable {
                            since: ev.ts,
                            cpu: ev.cpu,
                        };
                        t.blocked = None;
                        t.preempted_by = rtwhy_model::is_rt(*prev_prio).then(|| ev.clone());
                    } else {
                        t.run = Run::Blocked;
                        let futex = t.futex.clone();
                        t.blocked = Some(Blocked {
                            since: ev.ts,
                            futex,
                            event: ev.clone(),
                        });
                    }
                }
                if *next_pid > 0 {
                    self.task(*next_pid, Some(next_comm), Some(*next_prio));
                    self.ran(*next_pid, ev.cpu, ev.ts, false, ev, &mut out);
                }
            }
            EventKind::SchedWaking {
                comm,
                pid,
                prio,
                target_cpu,
            } => {
                self.seen.waking = true;
                self.woken(ev, *pid, comm, *prio, *target_cpu);
            }
            EventKind::SchedWakeup {
                comm,
                pid,
                prio,
                target_cpu,
            } => {
                self.seen.wakeup = true;
                self.woken(ev, *pid, comm, *prio, *target_cpu);
            }
            EventKind::SchedWakeupNew {
                comm, pid, prio, ..
            } => {
                self.task(*pid, Some(comm), Some(*prio));
                if self.selected.contains(&ev.pid) {
                    self.selected.insert(*pid);
                }
            }
            EventKind::SchedMigrateTask {
                comm, pid, prio, ..
            } => {
                self.task(*pid, Some(comm), Some(*prio));
            }
            EventKind::SchedPiSetprio {
                comm,
                pid,
                oldprio,
                newprio,
            } => {
                self.seen.pi_setprio = true;
                let t = self.task(*pid, Some(comm), Some(*newprio));
                t.boost = next_boost(t.boost, *oldprio, *newprio, ev.pid);
            }
            EventKind::IrqHandlerEntry { irq, name } => {
                self.seen.irq = true;
                if !self.irq_names.contains_key(irq) && self.irq_names.len() < 4096 {
                    self.irq_names.insert(*irq, name.clone());
                }
                self.cpu(ev.cpu).depth += 1;
            }
            EventKind::SoftirqEntry { .. } => {
                self.seen.softirq = true;
                self.cpu(ev.cpu).depth += 1;
            }
            EventKind::IrqHandlerExit { .. } | EventKind::SoftirqExit { .. } => {
                let c = self.cpu(ev.cpu);
                c.depth = c.depth.saturating_sub(1);
            }
            EventKind::HrtimerStart {
                hrtimer, expires, ..
            } => {
                self.seen.hrtimer_start = true;
                if self.timers.len() > 100_000 {
                    self.timers.clear();
                }
                self.timers.insert(*hrtimer, (*expires, ev.ts));
                if ev.pid > 0 {
                    self.task(ev.pid, None, None).timer = Some((*hrtimer, *expires));
                }
            }
            EventKind::HrtimerExpireEntry { hrtimer, now, .. } => {
                self.seen.hrtimer = true;
                // A timer started when its expiry had already passed (a thread that comes
                // back late and sleeps until an absolute time behind it) is due when it
                // was started, not before: it cannot have been late before it existed.
                let lateness = self
                    .timers
                    .get(hrtimer)
                    .map(|&(expires, started)| {
                        now.saturating_sub(expires)
                            .min(ev.ts.0.saturating_sub(started.0) as i64)
                    })
                    .filter(|&l| l >= 0)
                    .map(|l| l as u64);
                let expiry = lateness.map(|l| Nanos(ev.ts.0.saturating_sub(l)));
                if let Some(l) = lateness.filter(|&l| l >= LATE_TIMER_MIN) {
                    let horizon = self.config.horizon.0;
                    if self.late.len() > 10_000
                        || self
                            .late
                            .first()
                            .is_some_and(|f| f.ts.0 + horizon < ev.ts.0)
                    {
                        self.late.retain(|f| f.ts.0 + horizon >= ev.ts.0);
                    }
                    self.late.push(LateTimer {
                        ts: ev.ts,
                        cpu: ev.cpu,
                        lateness: l,
                    });
                }
                self.cpu(ev.cpu).hrtimer = Some((*hrtimer, ev.ts, expiry));
            }
            EventKind::HrtimerExpireExit { .. } => self.cpu(ev.cpu).hrtimer = None,
            EventKind::CpuIdle { .. } => self.seen.cpu_idle = true,
            EventKind::CpuFrequency { state, .. } => {
                self.seen.cpu_frequency = true;
                self.max_freq = self.max_freq.max(*state);
            }
            EventKind::SyscallEnter {
                call: SyscallKind::Futex,
                args,
            } => {
                self.seen.futex = true;
                if ev.pid > 0 {
                    self.task(ev.pid, None, None).futex = Some(Futex::from_args(args, ev.clone()));
                }
            }
            EventKind::SyscallExit {
                call: SyscallKind::Futex,
                ..
            } => {
                if let Some(t) = self.tasks.get_mut(&ev.pid) {
                    t.futex = None;
                }
            }
            EventKind::Print { text } => self.marker(ev, text, &mut out),
            _ => {}
        }
        out
    }

    /// The latest moment before `ev` at which something other than `ev.pid` is proven
    /// to have been on the CPU: a dropped switch-in is not counted as latency.
    fn inferred_switch_in(&self, ev: &Event) -> Nanos {
        self.history
            .cpu(ev.cpu)
            .iter()
            .rev()
            .find(|e| e.pid != ev.pid)
            .map(|e| e.ts)
            .unwrap_or(ev.ts)
            .min(ev.ts)
    }

    fn woken(&mut self, ev: &Event, pid: i32, comm: &Comm, prio: i32, target_cpu: i32) {
        let hr = self.cpus.get(ev.cpu as usize).and_then(|c| c.hrtimer);
        let t = self.task(pid, Some(comm), Some(prio));
        if t.wake.is_some() {
            return;
        }
        let timer = match (hr, t.timer) {
            (Some((addr, handler, Some(expiry))), Some((mine, _))) if addr == mine => {
                Some(TimerFire { expiry, handler })
            }
            _ => None,
        };
        let while_running = match t.run {
            Run::Running { cpu } if cpu == ev.cpu && timer.is_some() && ev.pid == pid => true,
            Run::Running { .. } => return,
            _ => false,
        };
        let waker = if timer.is_some() || ev.pid == 0 {
            None
        } else {
            Some(ev.pid)
        };
        t.wake = Some(Wake {
            ts: ev.ts,
            target_cpu,
            waker,
            timer,
            event: ev.clone(),
            while_running,
        });
    }

    fn ran(
        &mut self,
        tid: i32,
        cpu: u32,
        end: Nanos,
        inferred: bool,
        ev: &Event,
        out: &mut Vec<Outcome>,
    ) {
        let threshold = self.config.threshold;
        let victim = self.is_victim(tid);
        let Some(t) = self.tasks.get_mut(&tid) else {
            return;
        };
        let run = t.run;
        t.run = Run::Running { cpu };
        let wake = t.wake.take();
        let blocked = t.blocked.take();
        let victim_ref = self.task_ref(tid);
        let Some(t) = self.tasks.get_mut(&tid) else {
            return;
        };
        let (kind, start, preempted_by) = match (&wake, run) {
            (Some(w), _) => {
                // A lock wait starts when the thread asked for the lock (it entered the
                // futex call), not when it blocked: the kernel's slow path in between
                // is part of its wait.
                let lock_wait = blocked.as_ref().and_then(|b| {
                    let f = b.futex.as_ref().filter(|f| f.is_lock())?;
                    let asked = f.event.ts.min(b.since);
                    rtwhy_model::breaches(w.ts.saturating_sub(asked).0, threshold.0)
                        .then_some(asked)
                });
                if let Some(asked) = lock_wait {
                    (SpikeKind::LockWait, asked, None)
                } else if let Some(tf) = w.timer {
                    (SpikeKind::TimerWakeup, tf.expiry.min(w.ts), None)
                } else {
                    (SpikeKind::Wakeup, w.ts, None)
                }
            }
            (None, Run::Runnable { since, .. }) => {
                (SpikeKind::Preempted, since, t.preempted_by.take())
            }
            _ => return,
        };
        // A task that is not watched leaves nothing behind: no episode is built for it.
        if start > end || !victim {
            return;
        }
        let episode = Episode {
            victim: victim_ref.clone(),
            cpu,
            kind,
            source: SpikeSource::Events,
            start,
            end,
            end_inferred: inferred,
            wake,
            blocked,
            preempted_by,
            ran: Some(ev.clone()),
            measured: false,
        };
        let latency = end.0 - start.0;
        let s = self.victims.entry(tid).or_insert(VictimStats {
            task: victim_ref.clone(),
            episodes: 0,
            max_ns: 0,
        });
        s.task = victim_ref;
        s.episodes += 1;
        s.max_ns = s.max_ns.max(latency);
        let spike = rtwhy_model::breaches(latency, threshold.0);
        // Kept for a marker written about this wake-up later.
        if let Some(t) = self.tasks.get_mut(&tid) {
            if t.recent.len() == RECENT {
                t.recent.pop_front();
            }
            t.recent.push_back(PastEpisode {
                episode: episode.clone(),
                spike: None,
            });
        }
        // A marker stamped on another clock: the first wake-up after it with its
        // number is its measurement, from the expiry (or wake-up) on for its length.
        let unplaced = self.tasks.get_mut(&tid).and_then(|t| {
            let u = t.unplaced.take()?;
            if end.0.saturating_sub(u.marker.ts.0) > UNPLACED_SEARCH_NS {
                return Some(Err(u));
            }
            if kind == SpikeKind::TimerWakeup && same_latency(latency, u.reported) {
                return Some(Ok(u));
            }
            t.unplaced = Some(u);
            None
        });
        match unplaced {
            Some(Ok(u)) => {
                out.push(Outcome::Spike(Box::new(Episode {
                    source: u.source,
                    end: Nanos(episode.start.0 + u.reported),
                    end_inferred: false,
                    measured: true,
                    ..episode
                })));
                return;
            }
            Some(Err(u)) => self.unplaced_left.push(u),
            None => {}
        }
        if spike {
            out.push(Outcome::Spike(Box::new(episode)));
        }
    }

    fn marker(&mut self, ev: &Event, text: &str, out: &mut Vec<Outcome>) {
        if let Some((k, v)) = parse_fact_marker(text) {
            self.facts.set(k, v);
            return;
        }
        if let Some(r) = BreachRecord::parse_marker(text) {
            self.breach_marker(&r, out);
            return;
        }
        if let Some(reported) = self.tool_marker(text) {
            let comm = self.tasks.get(&ev.pid).map(|t| t.comm).unwrap_or_default();
            if !self.marker_victim(ev.pid, &comm) {
                return;
            }
            let copy = self.last_marker.is_some_and(|(tid, n, ts)| {
                tid == ev.pid
                    && n == reported
                    && ev.ts.0.abs_diff(ts.0) < rtwhy_model::MARKER_MATCH_NS
            });
            self.last_marker = Some((ev.pid, reported, ev.ts));
            if copy {
                return;
            }
            let source = SpikeSource::ToolMarker {
                text: text.trim_end().to_string(),
                reported_ns: reported,
            };
            // The events show the writer asleep at the stamp: the stamp is on another
            // clock. Its window is placed by the wake-up that has its number.
            let asleep = self
                .tasks
                .get(&ev.pid)
                .is_some_and(|t| t.run == Run::Blocked && t.wake.is_none());
            if asleep {
                if let Some(t) = self.tasks.get_mut(&ev.pid) {
                    if let Some(old) = t.unplaced.replace(Unplaced {
                        marker: ev.clone(),
                        reported,
                        source: source.clone(),
                    }) {
                        self.unplaced_left.push(old);
                    }
                }
                return;
            }
            out.push(Outcome::Spike(Box::new(
                self.measured_window(ev, reported, source),
            )));
        }
    }

    /// The markers no wake-up of their writer matched (see `Task::unplaced`), taken.
    pub fn take_unplaced(&mut self) -> Vec<Unplaced> {
        let mut left = std::mem::take(&mut self.unplaced_left);
        for t in self.tasks.values_mut() {
            left.extend(t.unplaced.take());
        }
        left.sort_by_key(|u| u.marker.ts);
        left
    }

    /// The spike of an application's own measurement: cyclictest computed `reported` as
    /// its clock read minus the timer's expiry and wrote the marker `ev` right after, so
    /// `[ev.ts - reported, ev.ts]` on the marker's CPU is the window its user asks about,
    /// whatever the thread did inside it (woken late, ran, preempted again before its
    /// clock read). The wake-up that began it, when the events saw one, brings the
    /// victim's timer and waker.
    fn measured_window(&self, ev: &Event, reported: u64, source: SpikeSource) -> Episode {
        let start = Nanos(ev.ts.0.saturating_sub(reported));
        let t = self.tasks.get(&ev.pid);
        let comm = self.comm_of(ev.pid);
        let prio = t.map(|t| t.prio);
        // The first of its episodes that reaches into the window, else the wake-up it
        // still waits in.
        let first = t.and_then(|t| {
            t.recent
                .iter()
                .find(|p| p.episode.end > start && p.episode.start <= ev.ts)
                .map(|p| &p.episode)
        });
        let wake = first
            .and_then(|e| e.wake.clone())
            .or_else(|| t.and_then(|t| t.wake.clone()))
            .filter(|w| w.ts <= ev.ts);
        // An application that timed its own lock wait (from before its lock call to
        // after it got the lock): the window is that wait, the lock call inside it, or
        // before it by no more than the stamps of two clocks can disagree (a guest's
        // trace clock that stood still for a millisecond on an isolated CPU).
        let slack = (reported / 10).max(100_000);
        let lock = first
            .and_then(|e| e.blocked.clone())
            .filter(|b| {
                b.futex
                    .as_ref()
                    .is_some_and(|f| f.is_lock() && f.event.ts.0 + slack >= start.0)
            })
            .filter(|_| wake.is_some());
        let kind = if lock.is_some() {
            SpikeKind::LockWait
        } else {
            SpikeKind::TimerWakeup
        };
        Episode {
            victim: TaskRef {
                tid: ev.pid,
                comm,
                prio,
                boost: None,
            },
            cpu: ev.cpu,
            kind,
            source,
            start,
            end: ev.ts,
            end_inferred: false,
            wake,
            blocked: lock,
            preempted_by: None,
            ran: Some(ev.clone()),
            measured: true,
        }
    }

    fn breach_marker(&mut self, r: &BreachRecord, out: &mut Vec<Outcome>) {
        let late_timer =
            r.timer_fired
                .zip(r.expiry)
                .map(|(fired, expiry)| rtwhy_model::LateTimer {
                    late_ns: fired.0.saturating_sub(expiry.0),
                    interrupted: r.timer_stack.clone(),
                });
        let source = SpikeSource::BreachMarker {
            reported_ns: r.latency.0,
            late_timer,
        };
        // The spike whose end is nearest the detector's switch-in (MARKER_MATCH_NS).
        if let Some(i) = self
            .spike_ends
            .iter()
            .enumerate()
            .filter(|(_, (tid, end))| {
                *tid == r.tid && end.0.abs_diff(r.switch_in.0) < rtwhy_model::MARKER_MATCH_NS
            })
            .min_by_key(|(_, (_, end))| end.0.abs_diff(r.switch_in.0))
            .map(|(i, _)| i)
        {
            let late = matches!(
                &source,
                SpikeSource::BreachMarker {
                    late_timer: Some(_),
                    ..
                }
            );
            let past = self
                .tasks
                .get(&r.tid)
                .and_then(|t| t.recent.iter().rev().find(|p| p.spike == Some(i)))
                .map(|p| &p.episode)
                .or_else(|| self.spiked.iter().find(|(k, _)| *k == i).map(|(_, e)| e));
            // The detector's number is the one the user sees: an episode the events
            // measured otherwise (a wake-up they dated later) takes its times.
            let start = r
                .expiry
                .or(r.waking)
                .unwrap_or(Nanos(r.switch_in.0.saturating_sub(r.latency.0)));
            let differs = past.is_some_and(|p| {
                !same_latency(p.end.0 - p.start.0, r.latency.0) && start <= r.switch_in
            });
            match past.filter(|_| late || differs) {
                Some(p) => {
                    let mut episode = p.clone();
                    episode.source = source;
                    if differs {
                        episode.start = start;
                        episode.end = r.switch_in;
                    }
                    out.push(Outcome::Rediagnose {
                        spike: i,
                        episode: Box::new(episode),
                    });
                }
                None => out.push(Outcome::Mark { spike: i, source }),
            }
            return;
        }
        let known = self.tasks.get(&r.tid).map(|t| (t.comm, t.prio));
        let (comm, prio) = match known {
            Some((c, p)) => (if r.comm == Comm::default() { c } else { r.comm }, Some(p)),
            None => (r.comm, None),
        };
        if !self.marker_victim(r.tid, &comm) {
            return;
        }
        let start = r
            .expiry
            .or(r.waking)
            .unwrap_or(Nanos(r.switch_in.0.saturating_sub(r.latency.0)));
        // The events saw this wake-up but ended it early (a switch-in ftrace dropped):
        // its wake-up, timer and blocking stay, with the detector's exact times.
        let seen = self.tasks.get(&r.tid).and_then(|t| {
            t.recent
                .iter()
                .rev()
                .filter(|p| p.spike.is_none())
                .find(|p| same_wakeup(&p.episode, r))
                .map(|p| p.episode.clone())
        });
        let kind = if r.expiry.is_some() {
            SpikeKind::TimerWakeup
        } else {
            SpikeKind::Wakeup
        };
        if let Some(mut seen) = seen {
            // The detector read the timer's expiry itself; the events only estimate it.
            if let (Some(tf), Some(expiry)) =
                (seen.wake.as_mut().and_then(|w| w.timer.as_mut()), r.expiry)
            {
                tf.expiry = expiry;
            }
            out.push(Outcome::Spike(Box::new(Episode {
                kind,
                source,
                start,
                end: r.switch_in.max(start),
                end_inferred: false,
                preempted_by: None,
                ..seen
            })));
            return;
        }
        out.push(Outcome::Spike(Box::new(Episode {
            victim: TaskRef {
                tid: r.tid,
                comm,
                prio: r.prio.or(prio),
                boost: None,
            },
            cpu: r.cpu,
            kind,
            source,
            start,
            end: r.switch_in.max(start),
            end_inferred: false,
            wake: None,
            blocked: None,
            preempted_by: None,
            ran: None,
            measured: false,
        })));
    }

    /// Remembers that spike number `index` (0-based) ended the episode of `tid` at `end`.
    pub fn spike_recorded(&mut self, tid: i32, end: Nanos, index: usize) {
        self.spike_ends.push((tid, end));
        if let Some(t) = self.tasks.get_mut(&tid) {
            if let Some(l) = t.recent.back_mut() {
                if l.episode.end == end {
                    l.spike = Some(index);
                    self.spiked.push_back((index, l.episode.clone()));
                }
            }
        }
        let held_for = self.config.horizon.0.saturating_mul(2);
        while self
            .spiked
            .front()
            .is_some_and(|(_, e)| e.end.0.saturating_add(held_for) < end.0)
        {
            self.spiked.pop_front();
        }
    }
}

/// Whether `e`, an episode found from the events, is the wake-up the detector's record
/// `r` names: the same wake-up event, or, without one, the same end.
fn same_wakeup(e: &Episode, r: &BreachRecord) -> bool {
    if e.cpu != r.cpu {
        return false;
    }
    match (&e.wake, r.waking) {
        (Some(w), Some(waking)) => w.ts.0.abs_diff(waking.0) <= 20_000,
        _ => e.start <= r.switch_in && e.end.0.abs_diff(r.switch_in.0) <= 50_000,
    }
}

/// Events that mark interrupt context boundaries.
fn is_irq_event(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::IrqHandlerEntry { .. }
            | EventKind::IrqHandlerExit { .. }
            | EventKind::SoftirqEntry { .. }
            | EventKind::SoftirqExit { .. }
            | EventKind::HrtimerExpireEntry { .. }
            | EventKind::HrtimerExpireExit { .. }
            | EventKind::SchedWaking { .. }
            | EventKind::SchedWakeup { .. }
            | EventKind::SoftirqRaise { .. }
    )
}

/// Threads whose lateness is not a user's concern: per-CPU stop-class and hotplug helpers.
fn is_housekeeping(comm: &Comm) -> bool {
    let name = comm.to_str_lossy();
    ["migration/", "watchdog/", "cpuhp/", "idle_inject/"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// cyclictest's `--tracemark` text: `hit latency threshold (X > Y)`, in microseconds.
/// Returns both in nanoseconds.
pub(crate) fn parse_cyclictest_marker(text: &str) -> Option<(u64, u64)> {
    let rest = &text[text.find("hit latency threshold (")? + "hit latency threshold (".len()..];
    let inner = rest.split(')').next()?;
    let (x, y) = inner.split_once('>')?;
    let x: u64 = x.trim().parse().ok()?;
    let y: u64 = y.trim().parse().ok()?;
    Some((x.saturating_mul(1000), y.saturating_mul(1000)))
}

impl TaskNames for IntMap<i32, Task> {
    fn task(&self, tid: i32) -> Option<(Comm, i32)> {
        self.get(&tid).map(|t| (t.comm, t.prio))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boost_keeps_its_first_priority_until_given_back() {
        // Owner at 120 (nice 0) raised to 89 by waiter 7, then to 19 by waiter 8.
        let b = next_boost(None, 120, 89, 7);
        assert_eq!(b, Some((120, 7)));
        let b = next_boost(b, 89, 19, 8);
        assert_eq!(b, Some((120, 8)));
        // Waiter 8 leaves: back to 89, still boosted (waiter 7 still waits).
        let b = next_boost(b, 19, 89, 8);
        assert_eq!(b, Some((120, 8)));
        // Priority given back: the boost ends.
        assert_eq!(next_boost(b, 89, 120, 8), None);
        // A setprio that is not a raise (a normal priority change) is no boost.
        assert_eq!(next_boost(None, 89, 120, 3), None);
    }

    #[test]
    fn lock_calls_are_mutex_waits_not_condition_waits() {
        const PRIVATE: u64 = 128;
        const CLOCK_REALTIME: u64 = 256;
        // glibc's plain mutex and PI mutexes, whatever they expect.
        for op in [0, 6, 13] {
            assert!(is_lock_call(op | PRIVATE, 2), "op {op}");
        }
        // Rust's std::sync::Mutex and glibc's timed locks: FUTEX_WAIT_BITSET expecting
        // the contended value 2, with or without the realtime clock flag.
        assert!(is_lock_call(9 | PRIVATE, 2));
        assert!(is_lock_call(9 | PRIVATE | CLOCK_REALTIME, 2));
        // Condition variables and semaphores: FUTEX_WAIT_BITSET for a sequence number
        // or a count; a PI condition variable waits for its signal first.
        for val in [0, 1, 3, 4, 0x7fff_ffff] {
            assert!(!is_lock_call(9 | PRIVATE, val), "val {val}");
        }
        assert!(!is_lock_call(11 | PRIVATE, 2));
        // Wakes, unlocks and requeues release, they do not wait.
        for op in [1, 3, 4, 5, 7, 8, 10, 12] {
            assert!(!is_lock_call(op | PRIVATE, 2), "op {op}");
        }
    }

    #[test]
    fn cyclictest_markers_parse() {
        assert_eq!(
            parse_cyclictest_marker("hit latency threshold (153 > 100)"),
            Some((153_000, 100_000))
        );
        assert_eq!(
            parse_cyclictest_marker("tracing_mark_write: hit latency threshold (7 > 5)\n"),
            Some((7_000, 5_000))
        );
        assert_eq!(
            parse_cyclictest_marker("hit latency threshold (x > 5)"),
            None
        );
        assert_eq!(parse_cyclictest_marker("something else"), None);
    }
}
