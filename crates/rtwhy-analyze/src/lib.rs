//! Finds latency spikes in a stream of kernel events and names their root cause.
//!
//! The analyzer is pure: it is fed [`Event`]s in time order (from a trace.dat, report
//! text, or a live recorder) and returns an [`Analysis`]. It keeps a bounded window of
//! recent events per CPU, so memory depends on the spike windows, not on the trace.
//!
//! ```
//! use rtwhy_analyze::{Analyzer, Config};
//! use rtwhy_model::{Comm, Event, EventKind, Nanos, SystemFacts, TaskState};
//!
//! let switch = |ts, prev: (&str, i32, i32), state, next: (&str, i32, i32)| Event {
//!     ts: Nanos(ts),
//!     cpu: 1,
//!     pid: prev.1,
//!     kind: EventKind::SchedSwitch {
//!         prev_comm: Comm::new(prev.0),
//!         prev_pid: prev.1,
//!         prev_prio: prev.2,
//!         prev_state: TaskState(state),
//!         next_comm: Comm::new(next.0),
//!         next_pid: next.1,
//!         next_prio: next.2,
//!     },
//! };
//! let mut a = Analyzer::new(Config::default(), SystemFacts::default());
//! // A FIFO 80 thread is preempted by a FIFO 90 thread for 500 us.
//! a.push(switch(1_000_000, ("ctl", 10, 19), 0, ("hog", 11, 9)));
//! a.push(switch(1_500_000, ("hog", 11, 9), 1, ("ctl", 10, 19)));
//! let analysis = a.finish();
//! assert_eq!(analysis.spikes.len(), 1);
//! assert_eq!(analysis.spikes[0].primary.cause.as_str(), "preemption");
//! assert_eq!(analysis.spikes[0].latency_ns, 500_000);
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod audit;
mod breakdown;
mod config;
mod ctx;
mod diagnose;
pub mod file;
mod history;
mod intmap;
mod line;
mod period;
pub mod pipeline;
mod refusals;
mod remedy;
mod rules;
pub mod timerlat;
mod tracker;

pub use audit::{audit, CHECKS};
pub use config::{parse_duration, Config, MarkerRule, TaskFilter};
pub use pipeline::{Finished, Pipeline};
pub use rtwhy_model::{Analysis, Seen, VictimStats, MAX_SPIKES};

use std::collections::VecDeque;

use rtwhy_model::{Event, Nanos, Spike, SystemFacts};

use tracker::{Outcome, Tracker};

/// Feeds events, collects diagnosed spikes.
pub struct Analyzer {
    tracker: Tracker,
    /// The spikes diagnosed and not yet handed out by [`Analyzer::take_settled`], in
    /// diagnosis order: the spike of index `i` (0-based) is held at `i - settled`;
    /// `None` once folded into a marker's measured window ([`Analyzer::folds`]).
    spikes: VecDeque<Option<Spike>>,
    /// Spikes (folded ones included) handed out by [`Analyzer::take_settled`].
    settled: usize,
    /// Spikes handed out and numbered: the next one is number `numbered + 1`.
    numbered: u32,
    spikes_dropped: u64,
    /// Indexes of spikes diagnosed again since [`Analyzer::take_rediagnosed`].
    rediagnosed: Vec<usize>,
}

impl Analyzer {
    /// An analyzer with `config`, knowing `facts` about the recording machine (facts
    /// found in the trace's `rtwhy-fact:` markers are added as they come).
    pub fn new(config: Config, facts: SystemFacts) -> Analyzer {
        Analyzer {
            tracker: Tracker::new(config, facts),
            spikes: VecDeque::new(),
            settled: 0,
            numbered: 0,
            spikes_dropped: 0,
            rediagnosed: Vec::new(),
        }
    }

    /// Task names the trace file saved (`saved_cmdlines`): names a task that no
    /// scheduling event does (a marker's writer that did not switch while recorded).
    pub fn name_tasks<'a>(&mut self, names: impl IntoIterator<Item = (i32, &'a str)>) {
        self.tracker.name_tasks(names);
    }

    /// Takes the next event (events must come in time order).
    pub fn push(&mut self, ev: Event) {
        let outcomes = self.tracker.observe(&ev);
        let t = &mut self.tracker;
        let tasks = &t.tasks;
        let is_rt = |pid: i32| {
            pid > 0
                && tasks.get(&pid).is_some_and(|k| {
                    rtwhy_model::is_fifo_rr(k.prio) && !refusals::is_stopper(k.comm.as_bytes())
                })
        };
        t.refusals.observe(&ev, is_rt, t.config.horizon.0);
        t.history.push(ev);
        for o in outcomes {
            match o {
                Outcome::Spike(ep) => {
                    let index = self.spike_count();
                    if index >= MAX_SPIKES {
                        self.spikes_dropped += 1;
                        continue;
                    }
                    let spike = diagnose::diagnose(&self.tracker, &ep, index as u32 + 1);
                    self.tracker.spike_recorded(ep.victim.tid, ep.end, index);
                    let folded = self.folds(&spike);
                    self.spikes.push_back((!folded).then_some(spike));
                }
                // A marker naming a spike already handed out came more than twice the
                // horizon after it: too late to change it (its events are gone too).
                Outcome::Mark { spike, source } => {
                    if let Some(s) = self.held_mut(spike) {
                        s.source = source;
                    }
                }
                Outcome::Rediagnose { spike, episode } => {
                    if let Some(id) = self.spike(spike).map(|s| s.id) {
                        let again = diagnose::diagnose(&self.tracker, &episode, id);
                        if let Some(s) = self.held_mut(spike) {
                            *s = again;
                        }
                        self.rediagnosed.push(spike);
                    }
                }
            }
        }
    }

    /// Folds the spikes found from the events that lie inside a marker's measured window
    /// of the same thread (cyclictest's `hit latency threshold`) into it: that window's
    /// spike explains all of them, with the application's own number; listed beside it
    /// they would count the same delay twice. For a new marker spike, the held spikes
    /// inside its window are folded; a new spike found from the events is folded (the
    /// answer is true) when a held marker's window holds it. Such a spike ends where
    /// its thread runs, before it writes the marker, so it is still held when the
    /// marker comes.
    fn folds(&mut self, new: &Spike) -> bool {
        let slack = rtwhy_model::MARKER_MATCH_NS;
        let inside = |window: &Spike, s: &Spike| {
            s.victim.tid == window.victim.tid
                && s.start.0 >= window.start.0.saturating_sub(slack)
                && s.end.0 <= window.end.0.saturating_add(slack)
        };
        let measured = |s: &Spike| matches!(s.source, rtwhy_model::SpikeSource::ToolMarker { .. });
        let found = |s: &Spike| matches!(s.source, rtwhy_model::SpikeSource::Events);
        if measured(new) {
            for held in &mut self.spikes {
                if held.as_ref().is_some_and(|s| found(s) && inside(new, s)) {
                    *held = None;
                }
            }
            false
        } else {
            found(new)
                && self
                    .spikes
                    .iter()
                    .flatten()
                    .any(|w| measured(w) && inside(w, new))
        }
    }

    /// The ring buffer dropped events of `cpu` before its next event, at `before`
    /// (`count` of them; 0 when the kernel did not count): call it before pushing that
    /// event. No cause is named for a spike whose window the drop overlaps.
    pub fn dropped(&mut self, cpu: u32, before: Nanos, count: u64) {
        self.tracker.history.dropped(cpu, before, count);
        self.tracker.refusals.dropped(cpu);
    }

    /// The events kept of the recent past (every CPU's last `horizon`), in time order:
    /// for a second analysis that starts late, to catch up on what it did not see.
    pub fn recent_events(&self) -> Vec<&Event> {
        let h = &self.tracker.history;
        let mut all: Vec<&Event> = (0..h.cpu_count())
            .flat_map(|cpu| h.cpu(cpu as u32).iter())
            .collect();
        all.sort_by_key(|e| e.ts);
        all
    }

    /// Spikes diagnosed so far (their indexes run from 0 to this), those handed out by
    /// [`Analyzer::take_settled`] and those folded into a marker's window included.
    pub fn spike_count(&self) -> usize {
        self.settled + self.spikes.len()
    }

    /// The spike of `index` (0-based, in diagnosis order), while it is held and not
    /// folded into a marker's window.
    pub fn spike(&self, index: usize) -> Option<&Spike> {
        self.spikes.get(index.checked_sub(self.settled)?)?.as_ref()
    }

    fn held_mut(&mut self, index: usize) -> Option<&mut Spike> {
        self.spikes
            .get_mut(index.checked_sub(self.settled)?)?
            .as_mut()
    }

    /// Hands out the oldest spike held, with its index, if it can no longer change: it
    /// ended more than twice the history horizon before the newest event. It is
    /// numbered now ([`Spike::id`]: 1, 2, ... in the order handed out; spikes folded
    /// into a marker's window take no number). A breach marker names its spike up to a
    /// capture window late (rtwhy writes a capture's breach records when it saves it:
    /// `fixtures/rt_throttling_preempt_rt/capture.dat` has one 2.01 s after its spike),
    /// and a marker later than that, naming a spike already handed out, is ignored. An
    /// analysis that writes its spikes out as they settle holds those of that time only,
    /// whatever their number; [`Analyzer::finish`] returns the ones still held. What
    /// [`Analyzer::finish`] still changes in a spike handed out is
    /// [`Analyzer::preempt_rt_learned_late`]'s.
    pub fn take_settled(&mut self) -> Option<(usize, Spike)> {
        let now = self.tracker.last_ts?;
        let held_for = self.tracker.config.horizon.0.saturating_mul(2);
        loop {
            if let Some(s) = self.spikes.front()?.as_ref() {
                if s.end.0.saturating_add(held_for) >= now.0 {
                    return None;
                }
            }
            let index = self.settled;
            self.settled += 1;
            if let Some(mut s) = self.spikes.pop_front().flatten() {
                self.numbered += 1;
                s.id = self.numbered;
                return Some((index, s));
            }
        }
    }

    /// Whether the trace showed the kernel to be PREEMPT_RT only after spikes may have
    /// been diagnosed without knowing it: [`Analyzer::finish`] then applies
    /// [`not_nonpreemptible`] to every spike, and a caller that took spikes with
    /// [`Analyzer::take_settled`] applies it to those.
    pub fn preempt_rt_learned_late(&self) -> bool {
        rules::kernel_nonpreemptible::preempt_rt_inferred(&self.tracker)
    }

    /// Whether a spike was diagnosed again since [`Analyzer::take_rediagnosed`].
    pub fn has_rediagnosed(&self) -> bool {
        !self.rediagnosed.is_empty()
    }

    /// Indexes of spikes diagnosed again (a later breach marker brought what the events
    /// lacked) since the last call: their evidence may name other events now.
    pub fn take_rediagnosed(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.rediagnosed)
    }

    /// Ends the analysis.
    pub fn finish(self) -> Analysis {
        self.finish_with_origin().0
    }

    /// Ends the analysis, and says for each spike returned its index while the events
    /// were pushed (`None`: a marker the trace could not place, made at the end). The
    /// spikes are numbered on from those handed out by [`Analyzer::take_settled`].
    pub fn finish_with_origin(mut self) -> (Analysis, Vec<Option<usize>>) {
        let late = self.preempt_rt_learned_late();
        let mut spikes = Vec::new();
        let mut origin = Vec::new();
        for (i, held) in std::mem::take(&mut self.spikes).into_iter().enumerate() {
            if let Some(mut s) = held {
                if late {
                    not_nonpreemptible(&mut s);
                }
                spikes.push(s);
                origin.push(Some(self.settled + i));
            }
        }
        for u in self.tracker.take_unplaced() {
            if self.numbered as usize + spikes.len() >= MAX_SPIKES {
                self.spikes_dropped += 1;
                continue;
            }
            spikes.push(diagnose::unplaced(&self.tracker, &u, 0));
            origin.push(None);
        }
        for s in &mut spikes {
            self.numbered += 1;
            s.id = self.numbered;
        }
        let t = self.tracker;
        let mut victims: Vec<VictimStats> = t.victims.into_values().collect();
        victims.sort_by(|a, b| b.max_ns.cmp(&a.max_ns).then(a.task.tid.cmp(&b.task.tid)));
        let analysis = Analysis {
            spikes,
            spikes_dropped: self.spikes_dropped,
            facts: t.facts,
            threshold: t.config.threshold,
            events: t.events,
            span: t.first_ts.zip(t.last_ts),
            seen: t.seen,
            victims,
        };
        (analysis, origin)
    }
}

/// A spike diagnosed before the trace's first `ktimers/N` thread could not know the
/// kernel was PREEMPT_RT: its kernel_nonpreemptible verdict becomes unknown, and is
/// dropped from the contributors (the rule's own check, applied late). For every spike
/// when [`Analyzer::preempt_rt_learned_late`].
pub fn not_nonpreemptible(s: &mut Spike) {
    rules::kernel_nonpreemptible::refuse_learned_late(s);
}
