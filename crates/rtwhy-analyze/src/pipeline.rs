//! One pipeline from a trace's events to its analysis, used by every front end
//! (`analyze`, `report`, `tui`, `convert`, `selftest`): the scheduler-event [`Analyzer`]
//! and, from the trace's first timerlat or osnoise event on, the [`TimerlatAnalyzer`],
//! fed the same events in order. A front end reads its input with rtwhy-decode's
//! `input::read`, pushes each event here, and gets scheduler-event spikes and timerlat
//! periods alike from [`Pipeline::finish`].

use rtwhy_decode::osnoise::{is_osnoise_name, osnoise_record};
use rtwhy_model::{Analysis, Event, EventKind, FieldValue, SystemFacts, Timerlat};

use crate::timerlat::TimerlatAnalyzer;
use crate::{Analyzer, Config};

/// The events without a typed form whose fields the pipeline reads: timerlat samples and
/// osnoise events (the timerlat analysis), and stacks. A front end that decodes fields
/// only where they are read passes this to rtwhy-decode's `Item::into_event_fields_of`.
pub fn fields_read(name: &str) -> bool {
    is_osnoise_name(name) || name == "kernel_stack" || name == "user_stack"
}

/// The analyses of one trace, fed every event in order.
pub struct Pipeline {
    analyzer: Analyzer,
    feed: Feed,
}

/// The timerlat analysis of a [`Pipeline`]: waiting for the trace's first timerlat or
/// osnoise event, then fed every event (first the analyzer's recent past, so it knows the
/// tasks and each CPU's last events as if it had run from the start of that past).
enum Feed {
    Waiting(Config),
    On(TimerlatFeed),
}

/// What a [`Pipeline`] found.
pub struct Finished {
    /// The scheduler-event analysis.
    pub analysis: Analysis,
    /// For each spike of `analysis`, its index while the events were pushed
    /// ([`Analyzer::finish_with_origin`]).
    pub origin: Vec<Option<usize>>,
    /// The end of the trace took back kernel_nonpreemptible verdicts
    /// ([`Analyzer::preempt_rt_learned_late`]).
    pub late: bool,
    /// The timerlat periods, when the trace holds timerlat samples.
    pub timerlat: Option<Timerlat>,
    /// What the timerlat analysis warns about, one line each.
    pub warnings: Vec<String>,
    /// osnoise events came without any timerlat sample.
    noise_only: bool,
}

impl Finished {
    /// Why the trace has nothing to analyse, one line (the input's name goes before it):
    /// no events, osnoise events with nothing to measure them against, or neither
    /// scheduler events nor timerlat samples.
    pub fn refusal(&self) -> Option<String> {
        let a = &self.analysis;
        let no_sched = !a.seen.switch && !a.seen.waking && !a.seen.wakeup;
        if a.events == 0 {
            Some("no events at all: an empty trace (a `-t` trace saved before any sample, or a header only)".to_string())
        } else if self.noise_only && no_sched {
            Some("osnoise events but no timerlat sample (`#N context irq|thread timer_latency N ns`) and no scheduler events: nothing to measure the noise against; keep the timerlat tracer's samples (rtla timerlat -t, or trace-cmd record -p timerlat)".to_string())
        } else if self.timerlat.is_none() && no_sched {
            Some(format!(
                "no scheduler events (sched:sched_switch, sched_waking, sched_wakeup) in {} events; record with `rtwhy record` or `trace-cmd record -e sched -e irq -e timer`",
                a.events
            ))
        } else {
            None
        }
    }
}

impl Pipeline {
    /// A pipeline judging with `config` and the facts recorded with the trace.
    pub fn new(config: Config, facts: SystemFacts) -> Pipeline {
        Pipeline {
            analyzer: Analyzer::new(config.clone(), facts),
            feed: Feed::Waiting(config),
        }
    }

    /// A pipeline for the input `header` describes: its facts, and the task names the
    /// file saved.
    pub fn for_input(config: Config, header: &rtwhy_decode::input::Header<'_>) -> Pipeline {
        let mut p = Pipeline::new(config, header.facts.clone());
        if let Some(meta) = &header.meta {
            p.analyzer.name_tasks(meta.cmdlines.iter());
        }
        p
    }

    /// Analyses `ev`: `line` is its text line when the input is text (the timerlat
    /// analysis quotes it), `dropped` the events its CPU dropped just before it.
    pub fn push(&mut self, ev: Event, line: Option<&str>, dropped: Option<u64>) {
        if let Feed::Waiting(config) = &self.feed {
            let starts = matches!(&ev.kind, EventKind::Generic(g) if is_osnoise_name(&g.name));
            if starts {
                let mut feed = TimerlatFeed::new(config);
                for past in self.analyzer.recent_events() {
                    feed.push(past, None);
                }
                self.feed = Feed::On(feed);
            }
        }
        if let Feed::On(feed) = &mut self.feed {
            feed.push(&ev, line);
        }
        if let Some(n) = dropped {
            self.analyzer.dropped(ev.cpu, ev.ts, n);
        }
        self.analyzer.push(ev);
    }

    /// The scheduler-event analyzer, for what a front end reads while the events pass
    /// (settled spikes, evidence to print).
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// [`Pipeline::analyzer`], to take its settled spikes.
    pub fn analyzer_mut(&mut self) -> &mut Analyzer {
        &mut self.analyzer
    }

    /// Ends both analyses.
    pub fn finish(self) -> Finished {
        let late = self.analyzer.preempt_rt_learned_late();
        let (analysis, origin) = self.analyzer.finish_with_origin();
        let mut warnings = Vec::new();
        let (noise_only, timerlat) = match self.feed {
            Feed::On(f) => (
                f.analyzer.samples() == 0 && f.analyzer.noise_events() > 0,
                f.finish(&mut warnings),
            ),
            Feed::Waiting(_) => (false, None),
        };
        Finished {
            analysis,
            origin,
            late,
            timerlat,
            warnings,
            noise_only,
        }
    }
}

/// Feeds every event to the timerlat analysis, counting the records it could not read.
struct TimerlatFeed {
    analyzer: TimerlatAnalyzer,
    bad: u64,
    first_bad: Option<String>,
}

impl TimerlatFeed {
    fn new(config: &Config) -> TimerlatFeed {
        TimerlatFeed {
            analyzer: TimerlatAnalyzer::new(config.threshold, config.isolated.clone()),
            bad: 0,
            first_bad: None,
        }
    }

    fn push(&mut self, ev: &Event, line: Option<&str>) {
        match osnoise_record(ev) {
            Some(Ok(rec)) => self.analyzer.push_record_line(&rec, line),
            Some(Err(e)) => {
                self.bad += 1;
                self.first_bad.get_or_insert_with(|| e.to_string());
            }
            None => {
                if let EventKind::Generic(g) = &ev.kind {
                    if g.name == "kernel_stack" {
                        if let Some(FieldValue::Str(stack)) = g.field("stack") {
                            let frames = stack
                                .lines()
                                .map(|f| f.split(" (").next().unwrap_or(f).trim().to_owned())
                                .filter(|f| !f.is_empty() && f != "0")
                                .collect();
                            self.analyzer.push_stack(ev.cpu, frames);
                        }
                    }
                }
                self.analyzer.push_event(ev);
            }
        }
    }

    fn finish(self, warnings: &mut Vec<String>) -> Option<Timerlat> {
        if self.bad > 0 {
            warnings.push(format!(
                "{} timerlat/osnoise events could not be read and were skipped (first: {})",
                self.bad,
                self.first_bad.unwrap_or_default()
            ));
        }
        let samples = self.analyzer.samples();
        let noise_events = self.analyzer.noise_events();
        if samples == 0 {
            if noise_events > 0 {
                warnings.push(format!(
                    "{noise_events} osnoise events but no timerlat sample: nothing to measure them against (record the timerlat tracer's samples too)"
                ));
            }
            return None;
        }
        let (mismatched, checked) = self.analyzer.clock_mismatches();
        if mismatched > 0 && mismatched * 2 <= checked {
            warnings.push(format!(
                "in {mismatched} of {checked} periods the timer's osnoise:irq_noise does not contain its IRQ sample; no IRQ handler delay is given for them"
            ));
        } else if mismatched > 0 {
            warnings.push(format!(
                "in {mismatched} periods the timer's osnoise:irq_noise does not contain its IRQ sample: the trace clock is not the osnoise tracer's (local), so IRQ handler delays are not given; record with `trace-cmd record -C local`"
            ));
        }
        let orphans = self.analyzer.orphan_noise();
        if orphans > 0 {
            warnings.push(format!(
                "{orphans} osnoise events came before their CPU's first timerlat sample and belong to no period"
            ));
        }
        Some(Timerlat {
            samples,
            noise_events,
            spikes: self.analyzer.finish(),
        })
    }
}
