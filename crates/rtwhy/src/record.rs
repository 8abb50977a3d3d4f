//! `rtwhy record`, `rtwhy summary` and `rtwhy cleanup`: the recorder's session, with
//! every capture diagnosed as it is written (one line live, full text and JSON beside the
//! trace), the session directory kept under its disk budget, `session.json` rewritten
//! after every capture (and on SIGHUP), and a summary at the end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{Context, Result};
use rtwhy_analyze::{Config, TaskFilter};
use rtwhy_model::{human_duration, Nanos, SessionDir, Spike, SpikeSource};
use rtwhy_record::capture::write_atomic;
use rtwhy_record::events::Preset;
use rtwhy_record::ledger::{Diagnosed, Entry, Ledger};
use rtwhy_record::manifest;
use rtwhy_record::probe::ProbeConfig;
use rtwhy_record::session::{
    self, Armed, Capture, DetectorChoice, Observer, SchedSource, SessionConfig, SessionReport,
    Trigger, Workload,
};
use rtwhy_record::timerlat::ProbeChoice;
use rtwhy_record::wakeups::DiagnosedTail;
use rtwhy_report::recording::{require_overview, Recording};
use rtwhy_report::summary;

use crate::analyze::analyze_file;
use crate::cli::{
    DetectorArg, OtherCpusArg, PresetArg, ProbeArg, RecordArgs, SchedEventsArg, SummaryArgs,
    SummaryFormat,
};
use crate::journal::{self, Level};

/// Diagnoses captures on a thread of its own, so the session keeps watching while a
/// capture is analysed; keeps the session directory under its budget and `session.json`
/// up to date.
struct Diagnoser {
    threshold: Nanos,
    t0: u64,
    out_dir: PathBuf,
    argv: Vec<String>,
    ledger: Ledger,
    /// The recorder's state directory, when the budget covers its earlier sessions too.
    state_dir: Option<PathBuf>,
    /// Every captured breach's latency under its capture's verdict, kept when the
    /// capture is deleted.
    diagnosed: DiagnosedTail,
    pending: Arc<AtomicUsize>,
}

/// Room kept in the disk budget for `session.json` to grow between two writes (a few
/// capture records).
const SESSION_GROWTH: u64 = 16 << 10;

/// What the session tells the diagnosis thread.
enum Note {
    /// A capture was written; the session as it stood then.
    Captured(Box<Capture>, Box<SessionReport>),
    /// SIGHUP: write out where the session stands.
    Checkpoint(Box<SessionReport>),
    /// A while went by: write out where the session stands, silently.
    Progress(Box<SessionReport>),
}

struct Live {
    diagnoser: Option<Diagnoser>,
    tx: Option<mpsc::Sender<Note>>,
    worker: Option<std::thread::JoinHandle<(Ledger, DiagnosedTail)>>,
    /// Captures sent and not yet accounted by the diagnosis thread.
    pending: Arc<AtomicUsize>,
    /// With a disk budget, one capture at a time: a capture written before the last one
    /// is accounted could take the directory over its budget.
    one_at_a_time: bool,
}

impl Live {
    fn new(d: Diagnoser) -> Live {
        Live {
            one_at_a_time: d.ledger.budget.is_some(),
            pending: d.pending.clone(),
            diagnoser: Some(d),
            tx: None,
            worker: None,
        }
    }

    /// Starts the diagnosis thread at the first note: from the session's thread, so it
    /// inherits the session's CPUs (`--recorder-cpus`).
    fn send(&mut self, note: Note) {
        if self.tx.is_none() {
            let Some(mut d) = self.diagnoser.take() else {
                return;
            };
            let (tx, rx) = mpsc::channel::<Note>();
            match std::thread::Builder::new()
                .name("rtwhy-diagnose".into())
                .spawn(move || {
                    for note in rx {
                        d.take(note);
                    }
                    (d.ledger, d.diagnosed)
                }) {
                Ok(w) => {
                    self.tx = Some(tx);
                    self.worker = Some(w);
                }
                Err(e) => journal::line(
                    Level::Warning,
                    &format!("rtwhy: warning: cannot start the diagnosis thread: {e}"),
                ),
            }
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(note);
        }
    }

    /// Waits for every capture's diagnosis.
    fn finish(&mut self) -> (Ledger, DiagnosedTail) {
        self.tx.take();
        match self.worker.take().and_then(|w| w.join().ok()) {
            Some(done) => done,
            None => self
                .diagnoser
                .take()
                .map(|d| (d.ledger, d.diagnosed))
                .unwrap_or_default(),
        }
    }
}

fn trigger_tids(c: &Capture) -> Vec<i32> {
    let mut tids: Vec<i32> = c.also.iter().map(|r| r.tid).collect();
    match &c.trigger {
        Trigger::Breach { record } => tids.insert(0, record.tid),
        Trigger::Marker { tid, .. } => tids.insert(0, *tid),
    }
    tids.dedup();
    tids
}

/// The spike of the analysis that is this capture's trigger.
fn trigger_spike<'a>(spikes: &'a [Spike], c: &Capture) -> Option<&'a Spike> {
    let tid = trigger_tids(c)[0];
    let end = c.trigger.end();
    let mine = spikes.iter().filter(|s| s.victim.tid == tid);
    let marked = mine
        .clone()
        .filter(|s| matches!(s.source, SpikeSource::BreachMarker { .. }))
        .min_by_key(|s| s.end.0.abs_diff(end));
    marked.or_else(|| mine.min_by_key(|s| s.end.0.abs_diff(end)))
}

impl Diagnoser {
    fn diagnose(&self, c: &Capture) -> Result<Diagnosed> {
        let config = Config {
            threshold: self.threshold,
            filter: TaskFilter {
                tids: trigger_tids(c),
                ..TaskFilter::default()
            },
            ..Config::default()
        };
        let (analysis, source) = analyze_file(&c.path, config)?;
        let mut text = Vec::new();
        rtwhy_report::text::render(&mut text, &analysis, &source)?;
        let mut doc =
            rtwhy_report::json::to_value(&rtwhy_report::json::document(&analysis, &source))?;
        doc["capture"] = serde_json::to_value(c)?;
        write_atomic(&c.path.with_extension("txt"), |w| w.write_all(&text))?;
        write_atomic(&c.path.with_extension("json"), |w| {
            serde_json::to_writer_pretty(&mut *w, &doc)?;
            w.write_all(b"\n")
        })?;
        let file = c
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(match trigger_spike(&analysis.spikes, c) {
            Some(s) => Diagnosed {
                index: c.index,
                file,
                victim: s.victim.comm.to_str_lossy().into_owned(),
                tid: s.victim.tid,
                cpu: s.cpu,
                latency_ns: s.latency_ns,
                cause: Some(s.primary.cause),
                summary: s.primary.summary.clone(),
                culprit: s.primary.culprit.clone(),
                end_ns: s.end.0,
                error: None,
            },
            None => {
                let (tid, cpu, lat) = match &c.trigger {
                    Trigger::Breach { record } => (record.tid, record.cpu, record.latency.0),
                    Trigger::Marker { tid, cpu, .. } => (*tid, *cpu, 0),
                };
                Diagnosed {
                    index: c.index,
                    file,
                    victim: String::new(),
                    tid,
                    cpu,
                    latency_ns: lat,
                    cause: None,
                    summary: "no spike of this thread found in the window".into(),
                    culprit: None,
                    end_ns: 0,
                    error: None,
                }
            }
        })
    }

    fn report(&self, c: &Capture) -> Diagnosed {
        let d = match self.diagnose(c) {
            Ok(d) => d,
            Err(e) => {
                let msg = format!("{e:#}");
                journal::line(
                    Level::Warning,
                    &format!(
                        "rtwhy: warning: {}: cannot diagnose: {msg}",
                        c.path.display()
                    ),
                );
                Diagnosed {
                    index: c.index,
                    file: c.path.display().to_string(),
                    victim: String::new(),
                    tid: 0,
                    cpu: 0,
                    latency_ns: 0,
                    cause: None,
                    summary: String::new(),
                    culprit: None,
                    end_ns: 0,
                    error: Some(msg),
                }
            }
        };
        let at = c.window_ns.1.saturating_sub(self.t0);
        // The recording goes on when nobody reads stdout any more (`| head`): the
        // captures are on disk.
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(
            stdout,
            "{}{}  +{:.3}s  {}[{}] cpu {}  {}  {}: {}",
            journal::prefix(Level::Notice),
            d.file,
            at as f64 / 1e9,
            if d.victim.is_empty() { "?" } else { &d.victim },
            d.tid,
            d.cpu,
            human_duration(d.latency_ns),
            d.cause_key(),
            d.summary
        );
        let _ = stdout.flush();
        d
    }

    fn take(&mut self, note: Note) {
        let so_far = match note {
            Note::Captured(c, so_far) => {
                let d = self.report(&c);
                if let Trigger::Breach { record } = &c.trigger {
                    self.diagnosed
                        .entry(record.tid)
                        .or_default()
                        .entry(d.cause_key().to_string())
                        .or_default()
                        .add(record.latency.0);
                }
                for gone in self.ledger.add(Entry::on_disk(&c.path, d)) {
                    drop_files(&gone, self.ledger.budget);
                }
                self.pending.fetch_sub(1, Ordering::AcqRel);
                so_far
            }
            Note::Checkpoint(so_far) => {
                journal::line(
                    Level::Info,
                    &format!(
                        "rtwhy: SIGHUP: recording for {:.0} s, {} breaches, {} captures kept ({}), {} dropped; session.json rewritten",
                        so_far.duration_ns as f64 / 1e9,
                        so_far.breaches,
                        self.ledger.kept.len(),
                        summary::human_size(self.ledger.used()),
                        self.ledger.dropped.values().map(|d| d.captures).sum::<u64>(),
                    ),
                );
                so_far
            }
            Note::Progress(so_far) => so_far,
        };
        let doc = manifest::session_document(
            &self.argv,
            &so_far,
            &self.ledger,
            self.state_dir.as_deref(),
            false,
        );
        let written = manifest::write_session(&self.out_dir, &doc).and_then(|session| {
            let overview = manifest::overview(&so_far, &self.diagnosed, self.threshold);
            Ok(session + manifest::write_overview(&self.out_dir, &overview)?)
        });
        match written {
            // The next capture's room is judged with these files' size twice (each is
            // rewritten under a temporary name while the old copy is still there), and
            // room for them to grow by what comes before they are measured again.
            Ok(bytes) => self.ledger.other_bytes = 2 * bytes + SESSION_GROWTH,
            // The error names the file and the OS's reason already.
            Err(e) => journal::line(Level::Warning, &format!("rtwhy: warning: {e}")),
        }
    }
}

/// Deletes a capture the disk budget let go (with an earlier session's, notes it in that
/// session's `session.json`) and says so in the journal.
fn drop_files(e: &Entry, budget: Option<u64>) {
    for (f, err) in rtwhy_record::state::forget(e) {
        journal::line(
            Level::Warning,
            &format!("rtwhy: warning: cannot delete {}: {err}", f.display()),
        );
    }
    let of = e
        .session
        .as_ref()
        .and_then(|d| d.file_name())
        .map(|n| format!(" of the earlier session {}", n.to_string_lossy()))
        .unwrap_or_default();
    journal::line(
        Level::Info,
        &format!(
            "rtwhy: {}{of} ({}, {}) deleted to stay under --disk-budget {}",
            e.diag.file,
            e.diag.cause_key(),
            human_duration(e.diag.latency_ns),
            summary::human_size(budget.unwrap_or(0)),
        ),
    );
}

impl Observer for Live {
    fn armed(&mut self, a: &Armed) {
        let how = match &a.attach {
            Some(m) => format!("{} ({m})", a.detector),
            None => a.detector.clone(),
        };
        let probe = a
            .probe
            .as_ref()
            .map(|p| format!("probe: {p}, "))
            .unwrap_or_default();
        journal::line(
            Level::Info,
            &format!(
                "rtwhy: armed in {} ms: {probe}detector {how}, {} events in instance {}{}, clock {}",
                a.armed_after_ns / 1_000_000,
                a.events.len(),
                a.instance,
                if a.sched_events == "bpf" {
                    " (context switches and wake-ups kept by the BPF programs)"
                } else {
                    ""
                },
                a.clock
            ),
        );
    }

    fn warning(&mut self, line: &str) {
        journal::line(Level::Warning, &format!("rtwhy: warning: {line}"));
    }

    fn captured(&mut self, c: &Capture, so_far: &SessionReport) {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.send(Note::Captured(
            Box::new(c.clone()),
            Box::new(so_far.clone()),
        ));
    }

    fn ready(&self) -> bool {
        !self.one_at_a_time || self.pending.load(Ordering::Acquire) == 0
    }

    fn checkpoint(&mut self, so_far: &SessionReport) {
        self.send(Note::Checkpoint(Box::new(so_far.clone())));
    }

    fn progress(&mut self, so_far: &SessionReport) {
        self.send(Note::Progress(Box::new(so_far.clone())));
    }
}

/// Whether `dir` is a recording session's directory or a state directory holding some.
pub(crate) fn is_recording(dir: &Path) -> bool {
    dir.is_dir()
        && (SessionDir::new(dir).manifest().is_file()
            || rtwhy_record::state::sessions(dir).is_ok_and(|s| !s.is_empty()))
}

/// Reads a session directory, or a state directory holding sessions; a session of a
/// state directory that cannot be read is left out with a warning.
pub(crate) fn read_recording(dir: &Path) -> Result<Recording> {
    let rec = Recording::read(dir, rtwhy_record::state::sessions)?;
    for why in &rec.left_out {
        eprintln!("rtwhy: warning: {why}; left out");
    }
    Ok(rec)
}

/// `rtwhy summary DIR`: where a recording session stands, from its `session.json`.
pub fn summary(args: &SummaryArgs) -> Result<ExitCode> {
    let rec = read_recording(&args.dir)?;
    let mut out = std::io::stdout().lock();
    match args.format {
        SummaryFormat::Json => {
            let o = require_overview(&args.dir, rec.overview)?;
            serde_json::to_writer_pretty(&mut out, &o)?;
            writeln!(out)?;
        }
        SummaryFormat::Svg => {
            let o = require_overview(&args.dir, rec.overview)?;
            out.write_all(rtwhy_report::overview_svg::render(&o).as_bytes())?;
        }
        SummaryFormat::Text if rec.is_state_dir() => {
            summary::render_state_dir(&mut out, &args.dir, &rec)?;
            if let Some(o) = &rec.overview {
                rtwhy_report::overview::render_text(&mut out, o)?;
            }
        }
        SummaryFormat::Text => {
            summary::render_session(&mut out, &args.dir, &rec.sessions[0].1)?;
            if let Some(o) = &rec.overview {
                rtwhy_report::overview::render_text(&mut out, o)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    let out_dir: PathBuf = match (&args.out, &args.state_dir) {
        (Some(out), _) => out.clone(),
        (None, Some(state)) => {
            std::fs::create_dir_all(state)
                .with_context(|| format!("cannot create --state-dir {}", state.display()))?;
            rtwhy_record::state::new_session(state, &session::default_dir_name())
        }
        (None, None) => PathBuf::from(session::default_dir_name()),
    };
    if let Some(budget) = args.disk_budget {
        // A capture holds at most the flight buffer of every traced CPU, plus the
        // trace's metadata (formats, symbols) and its diagnosis.
        let cpus = match &args.cpus {
            Some(l) => l.0.len(),
            None => session::online_cpus().len(),
        }
        .max(1) as u64;
        let one = args.buffer_kb * 1024 * cpus + (4 << 20);
        if budget < one {
            anyhow::bail!(
                "--disk-budget {} is smaller than one capture can be ({} KiB buffer x {cpus} CPUs + 4 MiB of metadata = {}): raise it, or lower --buffer-kb",
                summary::human_size(budget),
                args.buffer_kb,
                summary::human_size(one)
            );
        }
    }
    let markers = args
        .marker
        .iter()
        .map(|m| {
            regex::Regex::new(m).map_err(|e| {
                // The parser's message spans lines; its last line says what is wrong.
                let why = e.to_string().lines().last().unwrap_or_default().to_string();
                anyhow::anyhow!("--marker {m:?} is not a regular expression: {why}")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let workload = if args.command.is_empty() {
        let cpus = match &args.probe_cpus {
            Some(l) => l.0.clone(),
            None => session::default_probe_cpus(),
        };
        Workload::Probe(ProbeConfig {
            cpus,
            interval: Duration::from_nanos(args.interval.0.max(10_000)),
            priority: args.probe_priority,
            threshold_ns: args.threshold.0,
        })
    } else {
        Workload::Command(args.command.clone())
    };
    let recorder_cpus = match &args.recorder_cpus {
        Some(l) => Some(l.0.clone()),
        None => session::housekeeping_cpus().or_else(|| match &workload {
            // The probe's CPUs are the measured ones: keep rtwhy off them.
            Workload::Probe(p) => {
                let rest: Vec<u32> = session::online_cpus()
                    .into_iter()
                    .filter(|c| !p.cpus.contains(c))
                    .collect();
                (!rest.is_empty()).then_some(rest)
            }
            Workload::Command(_) => None,
        }),
    };
    let cfg = SessionConfig {
        threshold_ns: args.threshold.0,
        before: Duration::from_nanos(args.before.0),
        after: Duration::from_nanos(args.after.0),
        buffer_kb: args.buffer_kb,
        preset: match args.preset {
            PresetArg::Minimal => Preset::Minimal,
            PresetArg::Default => Preset::Default,
            PresetArg::Full => Preset::Full,
        },
        extra_events: args.events.clone(),
        cpus: args.cpus.as_ref().map(|l| l.0.clone()),
        out_dir: out_dir.clone(),
        max_spikes: args.max_spikes as usize,
        min_gap: Duration::from_nanos(args.min_gap.0),
        duration: args.duration.map(|d| Duration::from_nanos(d.0)),
        markers,
        detector: match args.detector {
            DetectorArg::Auto => DetectorChoice::Auto,
            DetectorArg::Bpf => DetectorChoice::Bpf,
            DetectorArg::Tracefs => DetectorChoice::Tracefs,
        },
        rt_only: !args.all_policies,
        workload,
        probe: match args.probe {
            ProbeArg::Auto => ProbeChoice::Auto,
            ProbeArg::Timerlat => ProbeChoice::Timerlat,
            ProbeArg::Rtwhy => ProbeChoice::Rtwhy,
        },
        recorder_cpus,
        lean: args.other_cpus == OtherCpusArg::Lean,
        sched_events: match args.sched_events {
            SchedEventsArg::Auto => SchedSource::Auto,
            SchedEventsArg::Bpf => SchedSource::Bpf,
            SchedEventsArg::Tracefs => SchedSource::Tracefs,
        },
    };
    let argv: Vec<String> = std::env::args().collect();
    let ledger = match &args.state_dir {
        Some(state) => {
            let earlier = rtwhy_record::state::earlier(state, &out_dir)?;
            let mut ledger =
                Ledger::with_earlier(args.disk_budget, earlier.captures, earlier.other_bytes);
            // A budget lowered since the last start: the state directory comes back under
            // it before the session adds to it.
            for gone in ledger.trim() {
                drop_files(&gone, args.disk_budget);
            }
            ledger
        }
        None => Ledger::new(args.disk_budget),
    };
    let mut live = Live::new(Diagnoser {
        threshold: args.threshold,
        t0: session::mono_ns(),
        out_dir: out_dir.clone(),
        argv: argv.clone(),
        ledger,
        state_dir: args.state_dir.clone(),
        diagnosed: DiagnosedTail::new(),
        pending: Arc::new(AtomicUsize::new(0)),
    });
    let report = session::run(&cfg, &mut live);
    let (ledger, diagnosed) = live.finish();
    let report = report?;
    let doc = manifest::session_document(&argv, &report, &ledger, args.state_dir.as_deref(), true);
    manifest::write_session(&out_dir, &doc)?;
    let overview = manifest::overview(&report, &diagnosed, args.threshold);
    manifest::write_overview(&out_dir, &overview)?;
    let stdout = std::io::stdout();
    summary::render_session(&mut stdout.lock(), &out_dir, &doc)?;
    rtwhy_report::overview::render_text(&mut stdout.lock(), &overview)?;
    if let Some(code) = report.child_exit.filter(|c| *c != 0) {
        return Ok(ExitCode::from(code.clamp(1, 255) as u8));
    }
    Ok(if report.captures_total == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub fn cleanup() -> Result<ExitCode> {
    let removed = session::cleanup()?;
    let mut out = std::io::stdout().lock();
    if removed.is_empty() {
        writeln!(out, "no stale rtwhy instances")?;
    }
    for name in removed {
        writeln!(out, "removed tracefs instance {name}")?;
    }
    // Settings a killed `rtwhy selftest` or `rtwhy lab` left changed.
    let journals = std::path::Path::new(rtwhy_lab::tweak::JOURNAL_DIR);
    for line in rtwhy_lab::tweak::restore_stale(journals)? {
        writeln!(out, "{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}
