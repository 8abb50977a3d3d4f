//! A trace file (any input rtwhy-decode recognises) through the analysis [`Pipeline`],
//! with the evidence lines of each spike printed as the file's own tool prints them:
//! what `rtwhy analyze`, `report` and `record` read a capture with.
//!
//! The file is read on the calling thread and analysed on another
//! (rtwhy_decode::handoff): decoding a record and analysing the one before it overlap,
//! and the analysis sees every event in order, as if it ran inline. Spikes can be handed
//! to a [`SpikeSink`] as they settle, so that the analysis holds only the spikes of its
//! history window, whatever their number.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use rtwhy_decode::handoff::{Copied, Handoff, RecordCopier, RecordNames, Records};
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::recent::{event_name, most_like, RecentLines};
use rtwhy_decode::TraceMeta;
use rtwhy_model::{Analysis, Event, EventKind, Spike, SystemFacts, Timerlat};

use crate::pipeline::{self, Finished, Pipeline};
use crate::Config;

/// Takes each spike as it settles (see [`analyze_file`]).
pub trait SpikeSink: Send + 'static {
    /// One settled spike; spikes come in the order the analysis found them.
    fn push(&mut self, spike: Spike);
}

/// What [`analyze_file`] found in a file.
pub struct FileAnalysis<S> {
    /// The scheduler-event analysis; without its spikes where they went to a sink.
    pub analysis: Analysis,
    /// What the file was read as (`trace.dat`, `trace-cmd report text`...).
    pub format: &'static str,
    /// What the reader and the analyses warn about, one line each.
    pub warnings: Vec<String>,
    /// The timerlat periods, when the file holds timerlat samples.
    pub timerlat: Option<Timerlat>,
    /// The sink every spike was pushed to, and whether the end of the trace takes back
    /// kernel_nonpreemptible verdicts ([`crate::Analyzer::preempt_rt_learned_late`]).
    pub sink: Option<(S, bool)>,
}

/// Why a file could not be analysed, one line.
#[derive(Debug)]
pub enum FileError {
    /// Reading or decoding it failed.
    Read(rtwhy_decode::Error),
    /// The analysis thread could not be started, or failed.
    Thread(std::io::Error),
    /// The analysis thread stopped before the end of the trace.
    Stopped,
    /// The file holds nothing to analyse: its name, then why.
    Refused(String),
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileError::Read(e) => e.fmt(f),
            FileError::Thread(e) => e.fmt(f),
            FileError::Stopped => {
                f.write_str("the analysis thread stopped before the end of the trace")
            }
            FileError::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Read(e) => Some(e),
            FileError::Thread(e) => Some(e),
            FileError::Stopped | FileError::Refused(_) => None,
        }
    }
}

impl From<rtwhy_decode::Error> for FileError {
    fn from(e: rtwhy_decode::Error) -> FileError {
        FileError::Read(e)
    }
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

/// Events per [`Batch`]: at this size the batches in flight at once (waiting, being
/// filled, being analysed: see rtwhy_decode::handoff) hold about a MiB of events.
const BATCH_EVENTS: usize = 1024;

/// Reads the trace on the calling thread and analyses it on another (rtwhy_decode::handoff):
/// decoding a record and analysing the one before it overlap (the reading costs about as
/// much as the analysis, and the two share nothing but the events). The analysis sees
/// every event, in order, as if it ran inline.
struct AnalyzeSink<S: SpikeSink> {
    config: Config,
    /// Given to the analysis thread: spikes go there as they settle.
    stream: Option<S>,
    warnings: Vec<String>,
    worker: Option<Handoff<Batch, Worker<S>>>,
    batch: Batch,
    copier: RecordCopier,
}

impl<S: SpikeSink> AnalyzeSink<S> {
    /// Sends what is left and waits for the analysis thread; `None` when no event
    /// header was read (the file had none to begin with).
    fn finish_worker(&mut self) -> Result<Option<Worker<S>>, FileError> {
        let Some(w) = self.worker.take() else {
            return Ok(None);
        };
        w.finish(std::mem::take(&mut self.batch))
            .map(Some)
            .map_err(FileError::Thread)
    }
}

impl<S: SpikeSink> Sink for AnalyzeSink<S> {
    type Error = FileError;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool, FileError> {
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
            pipeline: Pipeline::for_input(self.config.clone(), header),
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
            stream: self.stream.take(),
        };
        self.worker = Some(
            Handoff::spawn(
                "rtwhy-analyze",
                "the analysis thread",
                worker,
                |w, batch| {
                    w.take(batch);
                    true
                },
            )
            .map_err(FileError::Thread)?,
        );
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool, FileError> {
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
        let ev = item.into_event_fields_of(pipeline::fields_read);
        self.batch.events.push((ev, src, dropped));
        if self.batch.events.len() >= BATCH_EVENTS {
            if let Some(w) = &self.worker {
                if !w.send(&mut self.batch) {
                    return Err(FileError::Stopped);
                }
            }
        }
        Ok(true)
    }
}

/// The analysis of one trace: the pipeline and the evidence printer, fed every event in
/// order.
struct Worker<S> {
    pipeline: Pipeline,
    recent: RecentLines,
    /// Formats and byte order of a trace.dat's records.
    meta: Option<Arc<TraceMeta>>,
    /// Buffer names by number.
    names: RecordNames,
    /// Spikes whose evidence lines are printed.
    printed: usize,
    /// Printed lines by spike index, then by (timestamp, CPU), matched to the evidence
    /// again once the spike settles: a spike diagnosed again may name other events.
    lines: HashMap<usize, Printed>,
    /// The last wake-ups and preemptions of each real-time task, printed as they pass:
    /// a task held off for longer than `recent` keeps (a throttled FIFO 1 thread waits
    /// seconds behind a busy loop) is diagnosed once it runs, and its evidence names
    /// these events after `recent` has let them go.
    pinned: HashMap<i32, VecDeque<Pinned>>,
    /// Where spikes go as they settle; `None`: they stay in the analyzer to the end.
    stream: Option<S>,
}

/// The lines printed for one spike's evidence, by (timestamp, CPU).
type Printed = HashMap<(u64, u32), Vec<String>>;

/// Gives the evidence of `spike` the lines printed for it while its events were kept.
fn patch_evidence(spike: &mut Spike, printed: Option<&Printed>) {
    let Some(printed) = printed else {
        return;
    };
    for e in &mut spike.evidence {
        let line = printed.get(&(e.ts.0, e.cpu)).and_then(|v| {
            let name = event_name(&e.line)?;
            most_like(v.iter().filter(|l| event_name(l) == Some(name)), &e.line).cloned()
        });
        if let Some(line) = line {
            e.line = line;
        }
    }
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

impl<S: SpikeSink> Worker<S> {
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
            if let Some(pid) = wait_starts(&ev.kind) {
                if let Some(line) = self.recent.newest_line(ev.ts.0, ev.cpu, ev.kind.name()) {
                    let kept = self.pinned.entry(pid).or_default();
                    if kept.len() == PINNED_PER_TASK {
                        kept.pop_front();
                    }
                    kept.push_back((ev.ts.0, ev.cpu, line));
                }
            }
            self.pipeline.push(ev, line, dropped);
            let analyzer = self.pipeline.analyzer();
            if analyzer.spike_count() > self.printed || analyzer.has_rediagnosed() {
                self.print_evidence();
            }
            if let Some(stream) = &mut self.stream {
                while let Some((index, mut spike)) = self.pipeline.analyzer_mut().take_settled() {
                    patch_evidence(&mut spike, self.lines.remove(&index).as_ref());
                    stream.push(spike);
                }
            }
        }
        batch.records.clear();
    }

    /// Prints the evidence of the spikes diagnosed since the last call, while their
    /// events are still kept.
    fn print_evidence(&mut self) {
        let a = self.pipeline.analyzer_mut();
        let again = a.take_rediagnosed();
        let new = self.printed..a.spike_count();
        for i in again.into_iter().chain(new) {
            let Some(spike) = a.spike(i) else {
                continue;
            };
            for e in &spike.evidence {
                let key = (e.ts.0, e.cpu);
                let Some(name) = event_name(&e.line) else {
                    continue;
                };
                let line = self.recent.line(e.ts.0, e.cpu, name, &e.line).or_else(|| {
                    let pinned = self.pinned.values().flatten().filter(|(ts, cpu, line)| {
                        *ts == e.ts.0 && *cpu == e.cpu && event_name(line) == Some(name)
                    });
                    most_like(pinned.map(|(_, _, line)| line), &e.line).cloned()
                });
                let known = line.as_ref().is_some_and(|l| {
                    self.lines
                        .get(&i)
                        .and_then(|p| p.get(&key))
                        .is_some_and(|v| v.contains(l))
                });
                if known {
                    continue;
                }
                if let Some(line) = line {
                    self.lines
                        .entry(i)
                        .or_default()
                        .entry(key)
                        .or_default()
                        .push(line);
                }
            }
        }
        self.printed = a.spike_count();
    }
}

/// Decodes `path` (any input rtwhy-decode recognises) and runs the analysis pipeline
/// ([`Pipeline`]) over it: its spikes, and its timerlat periods. With a `sink`, every
/// spike is pushed to it as it settles (the analysis then holds none of them), and it
/// comes back in [`FileAnalysis::sink`]. `shown` names the file in a refusal.
pub fn analyze_file<S: SpikeSink>(
    path: &Path,
    shown: &str,
    config: Config,
    sink: Option<S>,
) -> Result<FileAnalysis<S>, FileError> {
    let mut reader = AnalyzeSink {
        config: config.clone(),
        stream: sink,
        warnings: Vec::new(),
        worker: None,
        batch: Batch::default(),
        copier: RecordCopier::default(),
    };
    let read = input::read(path, &mut reader);
    // The analysis thread ends whether or not the reading did.
    let worker = reader.finish_worker();
    let end = read?;
    let (pipeline, lines, stream) = match worker? {
        Some(w) => (w.pipeline, w.lines, w.stream),
        None => (
            Pipeline::new(config, SystemFacts::default()),
            HashMap::new(),
            reader.stream.take(),
        ),
    };
    let mut warnings = reader.warnings;
    warnings.extend(end.warnings);
    let finished = pipeline.finish();
    if let Some(why) = finished.refusal() {
        return Err(FileError::Refused(format!("{shown}: {why}")));
    }
    let Finished {
        mut analysis,
        origin,
        late,
        timerlat,
        warnings: timerlat_warnings,
        ..
    } = finished;
    warnings.extend(timerlat_warnings);
    for (spike, i) in analysis.spikes.iter_mut().zip(origin) {
        patch_evidence(spike, i.and_then(|i| lines.get(&i)));
    }
    let sink = stream.map(|mut s| {
        for spike in analysis.spikes.drain(..) {
            s.push(spike);
        }
        (s, late)
    });
    Ok(FileAnalysis {
        analysis,
        format: end.format,
        warnings,
        timerlat,
        sink,
    })
}
