//! `rtwhy analyze`: every spike in a trace, diagnosed.

use std::collections::{HashMap, VecDeque};
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use rtwhy_analyze::timerlat::TimerlatAnalyzer;
use rtwhy_analyze::{Analysis, Analyzer, Config};
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::osnoise::{is_osnoise_name, osnoise_record};
use rtwhy_decode::recent::{event_name, most_like, RecentLines};
use rtwhy_decode::TraceMeta;
use rtwhy_model::{Event, EventKind, FieldValue, SystemFacts};

use crate::cli::{AnalyzeArgs, AnalyzeFormat};
use rtwhy_report::{json, text, Source, Timerlat};

use crate::handoff::{Copied, Handoff, RecordCopier, RecordNames, Records};
use crate::render;

/// Feeds every event to the timerlat analysis as well, counting the records it could
/// not read.
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

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let (analysis, source) = analyze_file(&args.file, config)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    match args.format {
        AnalyzeFormat::Text => text::render(&mut out, &analysis, &source)?,
        AnalyzeFormat::Markdown => {
            out.write_all(render::markdown_of(&analysis, &source, &args.opts).as_bytes())?
        }
        AnalyzeFormat::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json::to_value(&json::document(&analysis, &source))?,
            )?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    for w in &source.warnings {
        eprintln!("rtwhy: warning: {}: {w}", source.path);
    }
    let timerlat_spikes = source.timerlat.as_ref().map_or(0, |t| t.spikes.len());
    Ok(if analysis.spikes.is_empty() && timerlat_spikes == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The events without a typed form whose fields the analysis reads: timerlat samples and
/// osnoise events (the timerlat analysis), and stacks. The fields of the others (the
/// evidence shows them as `trace-cmd report` printed them, from their records) are not
/// decoded.
fn fields_read(name: &str) -> bool {
    is_osnoise_name(name) || name == "kernel_stack" || name == "user_stack"
}

/// The timerlat analysis of [`AnalyzeSink`]: waiting for the trace's first timerlat or
/// osnoise event, then fed every event (first the analyzer's recent past, so it knows the
/// tasks and each CPU's last events as if it had run from the start of that past).
enum Feed {
    Waiting(Config),
    On(TimerlatFeed),
}

/// Events the reading thread hands to the analysis thread, with the bytes of their
/// records (or their lines) for the evidence printer.
#[derive(Default)]
struct Batch {
    /// Each event, where its line comes from, and the events its CPU dropped before it.
    events: Vec<(Event, Src, Option<u64>)>,
    /// The records' bytes.
    records: Records,
}

/// Where an event of a [`Batch`] came from.
enum Src {
    /// A trace.dat record, copied into [`Batch::records`].
    Record(Copied),
    /// A text line.
    Line(String),
}

/// Events per [`Batch`].
const BATCH_EVENTS: usize = 4096;

/// Reads the trace on the calling thread and analyses it on another (crate::handoff):
/// decoding a record and analysing the one before it overlap (the reading costs about as
/// much as the analysis, and the two share nothing but the events). The analysis sees
/// every event, in order, as if it ran inline.
struct AnalyzeSink {
    config: Config,
    warnings: Vec<String>,
    worker: Option<Handoff<Batch, Worker>>,
    batch: Batch,
    copier: RecordCopier,
}

impl AnalyzeSink {
    /// Sends what is left and waits for the analysis thread; `None` when no event
    /// header was read (the file had none to begin with).
    fn finish_worker(&mut self) -> Result<Option<Worker>> {
        let Some(w) = self.worker.take() else {
            return Ok(None);
        };
        w.finish(std::mem::take(&mut self.batch)).map(Some)
    }
}

impl Sink for AnalyzeSink {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        if !header.ts_in_nanos {
            let clock = header
                .meta
                .as_ref()
                .and_then(|m| m.clock.clone())
                .unwrap_or_else(|| "?".to_string());
            self.warnings.push(format!(
                "timestamps are raw counter values (clock {clock}), not nanoseconds: latencies and the threshold are in counter ticks"
            ));
        }
        let worker = Worker {
            analyzer: Analyzer::new(self.config.clone(), header.facts.clone()),
            feed: Feed::Waiting(self.config.clone()),
            recent: RecentLines::new(
                header,
                self.config.horizon.0,
                self.config.max_events_per_cpu,
            ),
            meta: header.meta.clone(),
            names: RecordNames::default(),
            printed: 0,
            lines: HashMap::new(),
            pinned: HashMap::new(),
        };
        self.worker = Some(Handoff::spawn(
            "rtwhy-analyze",
            "the analysis thread",
            worker,
            |w, batch| {
                w.take(batch);
                true
            },
        )?);
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let src = match &item.raw {
            Raw::Record { record, buffer } => {
                Src::Record(
                    self.copier
                        .copy(&mut self.batch.records, record, buffer, false),
                )
            }
            Raw::Line(line) => Src::Line(line.to_string()),
        };
        let dropped = item.dropped_before();
        let ev = item.into_event_fields_of(fields_read);
        self.batch.events.push((ev, src, dropped));
        if self.batch.events.len() >= BATCH_EVENTS {
            if let Some(w) = &self.worker {
                if !w.send(&mut self.batch) {
                    bail!("the analysis thread stopped before the end of the trace");
                }
            }
        }
        Ok(true)
    }
}

/// The analysis of one trace: the analyzer, the timerlat analysis and the evidence
/// printer, fed every event in order.
struct Worker {
    analyzer: Analyzer,
    feed: Feed,
    recent: RecentLines,
    /// Formats and byte order of a trace.dat's records.
    meta: Option<Arc<TraceMeta>>,
    /// Buffer names by number.
    names: RecordNames,
    /// Spikes whose evidence lines are printed.
    printed: usize,
    /// Printed lines by (spike index, timestamp, CPU), matched to the evidence again at
    /// the end: a spike diagnosed again may name other events.
    lines: HashMap<(usize, u64, u32), Vec<String>>,
    /// The last wake-ups and preemptions of each real-time task, printed as they pass:
    /// a task held off for longer than `recent` keeps (a throttled FIFO 1 thread waits
    /// seconds behind a busy loop) is diagnosed once it runs, and its evidence names
    /// these events after `recent` has let them go.
    pinned: HashMap<i32, VecDeque<Pinned>>,
}

/// A printed line of an event a later spike may name: timestamp, CPU, line.
type Pinned = (u64, u32, String);

/// Lines kept per real-time task in [`Worker::pinned`].
const PINNED_PER_TASK: usize = 4;

/// The real-time task an event starts a wait of (woken, or preempted while runnable).
fn wait_starts(kind: &EventKind) -> Option<i32> {
    match *kind {
        EventKind::SchedWaking { pid, prio, .. } | EventKind::SchedWakeup { pid, prio, .. }
            if rtwhy_model::is_rt(prio) =>
        {
            Some(pid)
        }
        EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            prev_state,
            ..
        } if rtwhy_model::is_rt(prev_prio) && prev_state.is_runnable() => Some(prev_pid),
        _ => None,
    }
}

impl Worker {
    /// Analyses the events of `batch` and empties it.
    fn take(&mut self, batch: &mut Batch) {
        self.names.learn(&mut batch.records);
        for (ev, src, dropped) in batch.events.drain(..) {
            let line = match &src {
                Src::Record(c) => {
                    if let Some(meta) = self.meta.as_deref() {
                        let (mut record, buffer) = self.names.get(&batch.records, c, meta);
                        // Evidence lines never carry a dropped-events notice.
                        record.missed_before = None;
                        self.recent
                            .keep_raw(ev.ts.0, ev.cpu, &Raw::Record { record, buffer });
                    }
                    None
                }
                Src::Line(line) => {
                    self.recent.keep_raw(ev.ts.0, ev.cpu, &Raw::Line(line));
                    Some(line.as_str())
                }
            };
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
            if let Some(pid) = wait_starts(&ev.kind) {
                if let Some(line) = self.recent.newest_line(ev.ts.0, ev.cpu, ev.kind.name()) {
                    let kept = self.pinned.entry(pid).or_default();
                    if kept.len() == PINNED_PER_TASK {
                        kept.pop_front();
                    }
                    kept.push_back((ev.ts.0, ev.cpu, line));
                }
            }
            if let Some(n) = dropped {
                self.analyzer.dropped(ev.cpu, ev.ts, n);
            }
            self.analyzer.push(ev);
            if self.analyzer.spikes().len() > self.printed || self.analyzer.has_rediagnosed() {
                self.print_evidence();
            }
        }
        batch.records.clear();
    }

    /// Prints the evidence of the spikes diagnosed since the last call, while their
    /// events are still kept.
    fn print_evidence(&mut self) {
        let a = &mut self.analyzer;
        let again = a.take_rediagnosed();
        let new = self.printed..a.spikes().len();
        for i in again.into_iter().chain(new) {
            let Some(spike) = a.spikes().get(i) else {
                continue;
            };
            for e in &spike.evidence {
                let key = (i, e.ts.0, e.cpu);
                let Some(name) = event_name(&e.line) else {
                    continue;
                };
                let line = self.recent.line(e.ts.0, e.cpu, name, &e.line).or_else(|| {
                    let pinned = self.pinned.values().flatten().filter(|(ts, cpu, line)| {
                        *ts == e.ts.0 && *cpu == e.cpu && event_name(line) == Some(name)
                    });
                    most_like(pinned.map(|(_, _, line)| line), &e.line).cloned()
                });
                let known = line
                    .as_ref()
                    .is_some_and(|l| self.lines.get(&key).is_some_and(|v| v.contains(l)));
                if known {
                    continue;
                }
                if let Some(line) = line {
                    self.lines.entry(key).or_default().push(line);
                }
            }
        }
        self.printed = a.spikes().len();
    }
}

/// Decodes `path` (any input rtwhy-decode recognises) and runs the analyzer over it.
pub fn analyze_file(path: &std::path::Path, config: Config) -> Result<(Analysis, Source)> {
    let display = crate::stdin::shown(path);
    let mut sink = AnalyzeSink {
        config: config.clone(),
        warnings: Vec::new(),
        worker: None,
        batch: Batch::default(),
        copier: RecordCopier::default(),
    };
    let read = input::read(path, &mut sink);
    // The analysis thread ends whether or not the reading did.
    let worker = sink.finish_worker();
    let end = read?;
    let (analyzer, feed, lines) = match worker? {
        Some(w) => (w.analyzer, w.feed, w.lines),
        None => (
            Analyzer::new(config.clone(), SystemFacts::default()),
            Feed::Waiting(config),
            HashMap::new(),
        ),
    };
    let mut warnings = sink.warnings;
    warnings.extend(end.warnings);
    let mut analysis = analyzer.finish();
    for (i, spike) in analysis.spikes.iter_mut().enumerate() {
        for e in &mut spike.evidence {
            let printed = lines.get(&(i, e.ts.0, e.cpu)).and_then(|v| {
                let name = event_name(&e.line)?;
                most_like(v.iter().filter(|l| event_name(l) == Some(name)), &e.line)
            });
            if let Some(line) = printed {
                e.line = line.clone();
            }
        }
    }
    let (noise_only, timerlat) = match feed {
        Feed::On(f) => (
            f.analyzer.samples() == 0 && f.analyzer.noise_events() > 0,
            f.finish(&mut warnings),
        ),
        Feed::Waiting(_) => (false, None),
    };
    if analysis.events == 0 {
        bail!("{display}: no events at all: an empty trace (a `-t` trace saved before any sample, or a header only)");
    }
    if noise_only && !analysis.seen.switch && !analysis.seen.waking && !analysis.seen.wakeup {
        bail!(
            "{display}: osnoise events but no timerlat sample (`#N context irq|thread timer_latency N ns`) and no scheduler events: nothing to measure the noise against; keep the timerlat tracer's samples (rtla timerlat -t, or trace-cmd record -p timerlat)"
        );
    }
    if timerlat.is_none() && !analysis.seen.switch && !analysis.seen.waking && !analysis.seen.wakeup
    {
        bail!(
            "{display}: no scheduler events (sched:sched_switch, sched_waking, sched_wakeup) in {} events; record with `rtwhy record` or `trace-cmd record -e sched -e irq -e timer`",
            analysis.events
        );
    }
    Ok((
        analysis,
        Source {
            path: display,
            kind: end.format,
            warnings,
            timerlat,
        },
    ))
}
