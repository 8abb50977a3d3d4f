//! `rtwhy analyze`: every spike in a trace, diagnosed.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rtwhy_analyze::pipeline;
use rtwhy_analyze::{not_nonpreemptible, Analysis, Config, Finished, Pipeline};
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::recent::{event_name, most_like, RecentLines};
use rtwhy_decode::TraceMeta;
use rtwhy_model::{Cause, Event, EventKind, Spike, SpikeSummary, SystemFacts};

use crate::cli::{AnalysisOpts, AnalyzeArgs, AnalyzeFormat};
use rtwhy_report::{json, text, Source};

use crate::handoff::{Copied, Handoff, RecordCopier, RecordNames, Records};
use crate::render;

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let config = args.opts.config();
    let (analysis, source, written) =
        analyze_streamed(&args.file, config, Some(Stream::new(args.format)))?;
    let Some((stream, late)) = written else {
        bail!(
            "{}: the analysis ended without its output",
            args.file.display()
        );
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let spikes = stream.write(&mut out, &analysis, &source, late, &args.opts)?;
    out.flush()?;
    for w in &source.warnings {
        eprintln!("rtwhy: warning: {}: {w}", source.path);
    }
    let timerlat_spikes = source.timerlat.as_ref().map_or(0, |t| t.spikes.len());
    Ok(if spikes == 0 && timerlat_spikes == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Where [`Stream`] keeps the spikes it wrote: an unlinked temporary file, or memory
/// where no temporary file can be made.
enum Spool {
    File(BufWriter<File>),
    Memory(Vec<u8>),
}

impl Spool {
    fn new() -> Spool {
        match tempfile::tempfile() {
            Ok(f) => Spool::File(BufWriter::with_capacity(1 << 16, f)),
            Err(_) => Spool::Memory(Vec::new()),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Spool::File(f) => f.write_all(bytes),
            Spool::Memory(v) => {
                v.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// What was written, from the start.
    fn into_reader(self) -> io::Result<Box<dyn Read>> {
        Ok(match self {
            Spool::File(f) => {
                let mut f = f.into_inner().map_err(|e| e.into_error())?;
                f.rewind()?;
                Box::new(BufReader::with_capacity(1 << 16, f))
            }
            Spool::Memory(v) => Box::new(io::Cursor::new(v)),
        })
    }
}

/// A [`Stream`] every spike was pushed to, and whether the end of the trace takes back
/// kernel_nonpreemptible verdicts ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]).
type Written = (Stream, bool);

/// One spike [`Stream`] wrote.
struct Kept {
    summary: SpikeSummary,
    /// Its bytes in the spool.
    len: u64,
    /// A kernel_nonpreemptible verdict the end of the trace may take back
    /// ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]): the spike is written a second time as
    /// [`not_nonpreemptible`] leaves it, right after; those bytes and that cause.
    revoked: Option<(u64, Cause)>,
}

/// `rtwhy analyze`'s output, written as spikes settle ([`rtwhy_analyze::Analyzer::take_settled`]), so
/// that the analysis holds the spikes of the history window only, whatever their number.
/// The output starts with what only the end of the trace tells (the event count, the
/// system facts, the event types present), so each spike is rendered in the output's
/// format into the spool as it settles, and only its [`SpikeSummary`] stays in memory;
/// at the end the output is written from its first line, the spool copied into place:
/// the same bytes as an analysis that held every spike. Markdown shows the first
/// [`render::MAX_SHOWN`] spikes ranked only: those are kept instead.
struct Stream {
    format: AnalyzeFormat,
    spool: Option<Spool>,
    kept: Vec<Kept>,
    /// Markdown: the first spikes ranked so far, at most [`render::MAX_SHOWN`].
    shown: Vec<Spike>,
    /// A spike rendered, reused.
    scratch: Vec<u8>,
    /// The first write that failed.
    error: Option<io::Error>,
}

impl Stream {
    fn new(format: AnalyzeFormat) -> Stream {
        Stream {
            format,
            spool: None,
            kept: Vec::new(),
            shown: Vec::new(),
            scratch: Vec::new(),
            error: None,
        }
    }

    /// Writes `spike` out (spikes come in order).
    fn push(&mut self, spike: Spike) {
        let summary = SpikeSummary::of(&spike);
        let revocable = spike.primary.cause == Cause::KernelNonpreemptible
            || spike
                .contributors
                .iter()
                .any(|c| c.cause == Cause::KernelNonpreemptible);
        let len = self.render(&spike);
        let revoked = revocable.then(|| {
            let mut revised = spike.clone();
            not_nonpreemptible(&mut revised);
            (self.render(&revised), revised.primary.cause)
        });
        if self.format == AnalyzeFormat::Markdown {
            self.shown.push(spike);
            if self.shown.len() > render::MAX_SHOWN {
                let shown: Vec<&Spike> = render::first_shown(self.shown.iter().collect());
                let keep: Vec<u32> = shown.iter().map(|s| s.id).collect();
                self.shown.retain(|s| keep.contains(&s.id));
            }
        }
        self.kept.push(Kept {
            summary,
            len,
            revoked,
        });
    }

    /// Renders `spike` into the spool; its length in bytes.
    fn render(&mut self, spike: &Spike) -> u64 {
        self.scratch.clear();
        let rendered = match self.format {
            AnalyzeFormat::Text => text::spike(&mut self.scratch, spike),
            AnalyzeFormat::Json => {
                json::write_spike_element(&mut self.scratch, spike).map_err(io::Error::from)
            }
            AnalyzeFormat::Markdown => return 0,
        };
        let written = rendered.and_then(|()| {
            self.spool
                .get_or_insert_with(Spool::new)
                .write_all(&self.scratch)
        });
        if let Err(e) = written {
            self.error.get_or_insert(e);
        }
        self.scratch.len() as u64
    }

    /// Writes the whole output of `analysis` (whose spikes were all pushed) to `out`;
    /// the number of spikes. `late`: [`rtwhy_analyze::Analyzer::preempt_rt_learned_late`].
    fn write(
        mut self,
        out: &mut dyn Write,
        analysis: &Analysis,
        source: &Source,
        late: bool,
        opts: &AnalysisOpts,
    ) -> Result<usize> {
        if let Some(e) = self.error.take() {
            return Err(e).context("cannot write the spikes to a temporary file");
        }
        let summaries: Vec<SpikeSummary> = self
            .kept
            .iter()
            .map(|k| match k.revoked {
                Some((_, cause)) if late => SpikeSummary {
                    cause,
                    ..k.summary.clone()
                },
                _ => k.summary.clone(),
            })
            .collect();
        let spool = match self.spool.take() {
            Some(s) => Some(s.into_reader()?),
            None => None,
        };
        match self.format {
            AnalyzeFormat::Text => {
                text::header(out, analysis, source)?;
                copy_spikes(out, spool, &self.kept, late, b"")?;
                text::tail(out, analysis, &summaries, source)?;
            }
            AnalyzeFormat::Json => {
                let doc = json::without_spikes(analysis, source, &summaries);
                json::write_around_spikes(out, &doc, self.kept.len(), |out| {
                    copy_spikes(out, spool, &self.kept, late, b",\n")
                })?;
                writeln!(out)?;
            }
            AnalyzeFormat::Markdown => {
                if late {
                    self.shown.iter_mut().for_each(not_nonpreemptible);
                }
                let shown: Vec<&Spike> = render::first_shown(self.shown.iter().collect());
                let md = render::markdown_of_shown(
                    analysis,
                    source,
                    opts,
                    &shown,
                    self.kept.len(),
                    false,
                );
                out.write_all(md.as_bytes())?;
            }
        }
        Ok(self.kept.len())
    }
}

/// Copies each spike of `kept` from `spool` to `out`, `separator` between two: as it was
/// diagnosed, or where `late` as [`not_nonpreemptible`] left it.
fn copy_spikes(
    out: &mut dyn Write,
    spool: Option<Box<dyn Read>>,
    kept: &[Kept],
    late: bool,
    separator: &[u8],
) -> io::Result<()> {
    let Some(mut spool) = spool else {
        return Ok(());
    };
    for (i, k) in kept.iter().enumerate() {
        if i > 0 {
            out.write_all(separator)?;
        }
        let revised = k.revoked.filter(|_| late);
        let first = io::copy(
            &mut (&mut spool).take(k.len),
            &mut OrSink(revised.is_none(), &mut *out),
        )?;
        let second = match k.revoked {
            Some((n, _)) => io::copy(
                &mut (&mut spool).take(n),
                &mut OrSink(revised.is_some(), &mut *out),
            )?,
            None => 0,
        };
        if first + second != k.len + k.revoked.map_or(0, |r| r.0) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the temporary file of spikes ended early",
            ));
        }
    }
    Ok(())
}

/// A writer that passes bytes on to its writer when `.0`, and drops them otherwise.
struct OrSink<'a>(bool, &'a mut dyn Write);

impl Write for OrSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0 {
            self.1.write(buf)
        } else {
            Ok(buf.len())
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.1.flush()
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
/// filled, being analysed: see crate::handoff) hold about a MiB of events.
const BATCH_EVENTS: usize = 1024;

/// Reads the trace on the calling thread and analyses it on another (crate::handoff):
/// decoding a record and analysing the one before it overlap (the reading costs about as
/// much as the analysis, and the two share nothing but the events). The analysis sees
/// every event, in order, as if it ran inline.
struct AnalyzeSink {
    config: Config,
    /// Given to the analysis thread: spikes are written out as they settle.
    stream: Option<Stream>,
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
        let ev = item.into_event_fields_of(pipeline::fields_read);
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

/// The analysis of one trace: the pipeline and the evidence printer, fed every event in
/// order.
struct Worker {
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
    stream: Option<Stream>,
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
/// ([`Pipeline`]) over it: its spikes, and its timerlat periods in the [`Source`].
pub fn analyze_file(path: &std::path::Path, config: Config) -> Result<(Analysis, Source)> {
    let (analysis, source, _) = analyze_streamed(path, config, None)?;
    Ok((analysis, source))
}

/// [`analyze_file`], every spike pushed to `stream` as it settles: the analysis then
/// holds none of them, and the stream comes back with whether the end of the trace
/// takes back kernel_nonpreemptible verdicts ([`rtwhy_analyze::Analyzer::preempt_rt_learned_late`]).
fn analyze_streamed(
    path: &std::path::Path,
    config: Config,
    stream: Option<Stream>,
) -> Result<(Analysis, Source, Option<Written>)> {
    let display = crate::stdin::shown(path);
    let mut sink = AnalyzeSink {
        config: config.clone(),
        stream,
        warnings: Vec::new(),
        worker: None,
        batch: Batch::default(),
        copier: RecordCopier::default(),
    };
    let read = input::read(path, &mut sink);
    // The analysis thread ends whether or not the reading did.
    let worker = sink.finish_worker();
    let end = read?;
    let (pipeline, lines, stream) = match worker? {
        Some(w) => (w.pipeline, w.lines, w.stream),
        None => (
            Pipeline::new(config, SystemFacts::default()),
            HashMap::new(),
            sink.stream.take(),
        ),
    };
    let mut warnings = sink.warnings;
    warnings.extend(end.warnings);
    let finished = pipeline.finish();
    if let Some(why) = finished.refusal() {
        bail!("{display}: {why}");
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
    let stream = stream.map(|mut s| {
        for spike in analysis.spikes.drain(..) {
            s.push(spike);
        }
        (s, late)
    });
    Ok((
        analysis,
        Source {
            path: display,
            kind: end.format,
            warnings,
            timerlat,
        },
        stream,
    ))
}
