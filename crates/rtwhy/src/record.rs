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
use rtwhy_model::{human_duration, Nanos, Overview, SessionDir, Spike, SpikeSource};
use rtwhy_record::capture::write_atomic;
use rtwhy_record::events::Preset;
use rtwhy_record::probe::ProbeConfig;
use rtwhy_record::session::{
    self, Armed, Capture, DetectorChoice, Observer, SessionConfig, SessionReport, Trigger, Workload,
};
use rtwhy_record::timerlat::ProbeChoice;
use rtwhy_record::wakeups::DiagnosedTail;
use serde_json::{json, Value};

use crate::analyze::analyze_file;
use crate::cli::{
    DetectorArg, OtherCpusArg, PresetArg, ProbeArg, RecordArgs, SummaryArgs, SummaryFormat,
};
use crate::journal::{self, Level};
use rtwhy_record::ledger::{Diagnosed, Entry, Ledger};

/// The schema of `session.json`.
pub const SESSION_SCHEMA: &str = rtwhy_model::schema::SESSION;

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
                        human_size(self.ledger.used()),
                        self.ledger.dropped.values().map(|d| d.captures).sum::<u64>(),
                    ),
                );
                so_far
            }
            Note::Progress(so_far) => so_far,
        };
        let doc = session_json(
            &self.argv,
            &so_far,
            &self.ledger,
            self.state_dir.as_deref(),
            false,
        );
        let written = write_session(&self.out_dir, &doc).and_then(|session| {
            let overview = overview(&so_far, &self.diagnosed, self.threshold);
            Ok(session + write_overview(&self.out_dir, &overview)?)
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
            human_size(budget.unwrap_or(0)),
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
                "rtwhy: armed in {} ms: {probe}detector {how}, {} events in instance {}, clock {}",
                a.armed_after_ns / 1_000_000,
                a.events.len(),
                a.instance,
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

/// `1.5 MiB`.
fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// The `p` quantile of `v` (nearest rank, as every figure of rtwhy), 0 for none.
fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    rtwhy_model::quantile(v, p).unwrap_or(0)
}

/// `session.json`: the session, the captures on disk with their diagnoses, and what the
/// disk budget dropped. Rewritten after every capture while `ended` is false.
fn session_json(
    args_line: &[String],
    r: &SessionReport,
    ledger: &Ledger,
    state_dir: Option<&Path>,
    ended: bool,
) -> Value {
    let mut freeze: Vec<u64> = r.captures.iter().map(|c| c.freeze_delay_ns).collect();
    let mut detect: Vec<u64> = r.captures.iter().map(|c| c.detect_delay_ns).collect();
    let mut dead: Vec<u64> = r.captures.iter().map(|c| c.dead_time_ns).collect();
    let pages_lost: u64 = r.captures.iter().map(|c| c.summary.pages_after_loss).sum();
    json!({
        "schema": SESSION_SCHEMA,
        "state": if ended { "ended" } else { "recording" },
        "command": args_line,
        "session": r,
        "spikes": ledger.this_session().map(|e| &e.diag).collect::<Vec<_>>(),
        "dropped": ledger.dropped,
        // With a state directory the budget and the bytes used are the whole directory's.
        "disk": {"budget_bytes": ledger.budget, "used_bytes": ledger.used(), "state_dir": state_dir},
        "timing": {
            "detect_delay_ns": {"p50": percentile(&mut detect, 0.5), "p99": percentile(&mut detect, 0.99)},
            "freeze_delay_ns": {"p50": percentile(&mut freeze, 0.5), "p99": percentile(&mut freeze, 0.99)},
            "dead_time_ns": {"p50": percentile(&mut dead, 0.5), "max": dead.iter().max().copied().unwrap_or(0)},
            "pages_after_loss": pages_lost,
        },
    })
}

/// Writes `session.json` (atomically); returns its size.
fn write_session(dir: &Path, doc: &Value) -> Result<u64> {
    Ok(write_atomic(&SessionDir::new(dir).manifest(), |w| {
        serde_json::to_writer_pretty(&mut *w, doc)?;
        w.write_all(b"\n")
    })?)
}

/// The session's overview: its wake-up histograms with the captured breaches under
/// their verdicts.
fn overview(r: &SessionReport, diagnosed: &DiagnosedTail, threshold: Nanos) -> Overview {
    let detector = r.armed.as_ref().map_or("", |a| a.detector.as_str());
    let mut o = r
        .wakeups
        .overview(detector, threshold.0, r.detector_lost, diagnosed);
    // The wall clock at the session's start: what places the sessions of a state
    // directory, each with its own boot's monotonic clock, on one time line.
    let since_start = session::mono_ns().saturating_sub(o.from_ns);
    o.from_unix_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|now| u64::try_from(now.as_nanos()).ok())
        .map(|now| now.saturating_sub(since_start));
    o
}

/// Writes `overview.json` (atomically); returns its size.
fn write_overview(dir: &Path, o: &Overview) -> Result<u64> {
    Ok(write_atomic(&SessionDir::new(dir).overview(), |w| {
        serde_json::to_writer_pretty(&mut *w, o)?;
        w.write_all(b"\n")
    })?)
}

/// How many contributors a session's summary lists.
const SUMMARY_CONTRIBUTORS: usize = 5;

/// The summary table of a session, from its `session.json` (at the end of `rtwhy
/// record`, and by `rtwhy summary DIR` while it runs or afterwards).
fn print_summary(out: &mut dyn Write, dir: &Path, doc: &Value) -> std::io::Result<()> {
    let s = &doc["session"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let spikes = doc["spikes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let captures = s["captures_total"].as_u64().unwrap_or(spikes.len() as u64);
    let state = if doc["state"] == "recording" {
        "recording".to_string()
    } else {
        s["ended_by"].as_str().unwrap_or("ended").to_string()
    };
    writeln!(out)?;
    writeln!(
        out,
        "rtwhy record: {state} after {:.1} s; {} breaches, {captures} captures in {}",
        n(&s["duration_ns"]) as f64 / 1e9,
        n(&s["breaches"]),
        dir.display()
    )?;
    // Captures per cause: those on disk and those the disk budget deleted.
    let mut causes: Vec<(String, u64, u64)> = Vec::new();
    let mut count =
        |cause: &str, kept: u64, dropped: u64| match causes.iter_mut().find(|(c, _, _)| c == cause)
        {
            Some(c) => {
                c.1 += kept;
                c.2 += dropped;
            }
            None => causes.push((cause.to_string(), kept, dropped)),
        };
    for sp in spikes {
        count(sp["cause"].as_str().unwrap_or("undiagnosed"), 1, 0);
    }
    if let Some(dropped) = doc["dropped"].as_object() {
        for (cause, d) in dropped {
            count(cause, 0, n(&d["captures"]));
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.1 + c.2));
    if !causes.is_empty() {
        writeln!(out, "  {:<28} {:>8} {:>8}", "cause", "captures", "deleted")?;
        for (c, kept, dropped) in &causes {
            writeln!(out, "  {c:<28} {:>8} {dropped:>8}", kept + dropped)?;
        }
    }
    print_contributors(out, &rtwhy_report::overview::captures_of(doc))?;
    if let Some(threads) = s["threads"].as_array().filter(|t| !t.is_empty()) {
        writeln!(
            out,
            "  {:<8} {:<20} {:>9} {:>12}",
            "tid", "thread", "breaches", "worst"
        )?;
        for t in threads {
            writeln!(
                out,
                "  {:<8} {:<20} {:>9} {:>12}",
                t["tid"],
                t["comm"].as_str().unwrap_or("?"),
                n(&t["breaches"]),
                human_duration(n(&t["worst_ns"]))
            )?;
        }
    }
    for p in s["probe"].as_array().map(Vec::as_slice).unwrap_or_default() {
        writeln!(
            out,
            "  probe cpu {}: {} loops, min {} avg {} max {}, {} above threshold",
            p["cpu"],
            n(&p["loops"]),
            human_duration(n(&p["min_ns"])),
            human_duration(n(&p["avg_ns"])),
            human_duration(n(&p["max_ns"])),
            n(&p["over_threshold"])
        )?;
    }
    let t = &doc["timing"];
    writeln!(
        out,
        "  lost: {} detector records, {} streamed events, {} captured pages after overruns; {} breaches in dead time, {} after --max-spikes, {} within --min-gap; {} captures not saved",
        n(&s["detector_lost"]),
        n(&s["watch_events_lost"]),
        n(&t["pages_after_loss"]),
        n(&s["breaches_in_dead_time"]),
        n(&s["breaches_after_max"]),
        n(&s["breaches_rate_limited"]),
        n(&s["captures_failed"]),
    )?;
    if n(&s["markers_not_captured"]) > 0 {
        writeln!(
            out,
            "  {} markers set off no capture: written before the previous capture was read out (inside its window, or while it was saved)",
            n(&s["markers_not_captured"])
        )?;
    }
    if let Some(budget) = doc["disk"]["budget_bytes"].as_u64() {
        let whose = match doc["disk"]["state_dir"].as_str() {
            Some(state) => format!(" (all sessions in {state})"),
            None => String::new(),
        };
        writeln!(
            out,
            "  disk: {} of the {} budget in use{whose}, {} captures of this session on disk",
            human_size(n(&doc["disk"]["used_bytes"])),
            human_size(budget),
            spikes.len()
        )?;
    }
    if captures > 0 {
        writeln!(
            out,
            "  recording off while saving: median {} (max {}) per capture; instance stopped {} (median) after breach + --after",
            human_duration(n(&t["dead_time_ns"]["p50"])),
            human_duration(n(&t["dead_time_ns"]["max"])),
            human_duration(n(&t["freeze_delay_ns"]["p50"])),
        )?;
    }
    if let Some(code) = s["child_exit"].as_i64() {
        match s["child_signal"].as_i64() {
            Some(sig) => writeln!(out, "  command killed by signal {sig}")?,
            None => writeln!(out, "  command exited with {code}")?,
        }
    }
    Ok(())
}

/// A recording session's `session.json` (checked to be one) and its overview, if it has
/// one: what `rtwhy summary DIR` and `rtwhy report DIR` read.
pub(crate) fn read_session(dir: &Path) -> Result<(Value, Option<Overview>)> {
    let path = SessionDir::new(dir).manifest();
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is {} a directory written by `rtwhy record --out`?)",
            path.display(),
            dir.display()
        )
    })?;
    let doc: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a session.json", path.display()))?;
    if !doc["schema"]
        .as_str()
        .is_some_and(|s| s.starts_with("rtwhy.session/"))
    {
        anyhow::bail!(
            "{} is not a session.json written by rtwhy record",
            path.display()
        );
    }
    Ok((doc, read_overview(dir)?))
}

/// A recording read back for `rtwhy summary DIR` and `rtwhy report DIR`: one session,
/// or every session of a recorder's state directory (`--state-dir`) together.
pub(crate) struct Recording {
    /// Each session: its directory's name (empty for a session given itself), its
    /// `session.json` and its overview; oldest first.
    pub sessions: Vec<(String, Value, Option<Overview>)>,
    /// The captures on disk: files relative to the directory given, times on the
    /// overview's time line (0: unknown).
    pub captures: Vec<rtwhy_report::overview::Capture>,
    /// The session's overview, or the sessions' combined ([`Overview::combine`]).
    pub overview: Option<Overview>,
}

impl Recording {
    /// Whether this is a state directory's sessions rather than one session.
    pub fn is_state_dir(&self) -> bool {
        self.sessions
            .first()
            .is_some_and(|(name, _, _)| !name.is_empty())
    }
}

/// Whether `dir` is a recording session's directory or a state directory holding some.
pub(crate) fn is_recording(dir: &Path) -> bool {
    dir.is_dir()
        && (SessionDir::new(dir).manifest().is_file()
            || rtwhy_record::state::sessions(dir).is_ok_and(|s| !s.is_empty()))
}

/// Reads a session directory, or a state directory holding sessions. A session of a
/// state directory that cannot be read is left out with a warning: the others stand.
pub(crate) fn read_recording(dir: &Path) -> Result<Recording> {
    let sessions = match SessionDir::new(dir).manifest().is_file() {
        true => Vec::new(),
        false => rtwhy_record::state::sessions(dir).unwrap_or_default(),
    };
    if sessions.is_empty() {
        let (doc, overview) = read_session(dir)?;
        return Ok(Recording {
            captures: rtwhy_report::overview::captures_of(&doc),
            sessions: vec![(String::new(), doc, overview.clone())],
            overview,
        });
    }
    let mut read = Vec::new();
    for path in sessions {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match read_session(&path) {
            Ok((doc, overview)) => read.push((name, doc, overview)),
            Err(e) => eprintln!("rtwhy: warning: {e:#}; left out"),
        }
    }
    let with: Vec<(String, Overview)> = read
        .iter()
        .filter_map(|(name, _, o)| Some((name.clone(), o.clone()?)))
        .collect();
    let (overview, shifts) = match with.is_empty() {
        true => (None, Vec::new()),
        false => {
            let (o, s) = Overview::combine(&with);
            (Some(o), s)
        }
    };
    let mut captures = Vec::new();
    for (name, doc, _) in &read {
        let shift = with.iter().position(|(n, _)| n == name).map(|i| shifts[i]);
        for mut c in rtwhy_report::overview::captures_of(doc) {
            c.file = format!("{name}/{}", c.file);
            c.end_ns = match shift {
                Some(s) if c.end_ns > 0 => (c.end_ns as i128 + s).max(1) as u64,
                _ => 0,
            };
            captures.push(c);
        }
    }
    Ok(Recording {
        sessions: read,
        captures,
        overview,
    })
}

/// The session's overview, or the one-line error of a session recorded without one.
pub(crate) fn require_overview(dir: &Path, overview: Option<Overview>) -> Result<Overview> {
    overview.ok_or_else(|| {
        anyhow::anyhow!(
            "{} has no {}: the session was recorded by an rtwhy without wake-up histograms",
            dir.display(),
            SessionDir::OVERVIEW
        )
    })
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
            print_state_summary(&mut out, &args.dir, &rec)?;
            if let Some(o) = &rec.overview {
                rtwhy_report::overview::render_text(&mut out, o)?;
            }
        }
        SummaryFormat::Text => {
            print_summary(&mut out, &args.dir, &rec.sessions[0].1)?;
            if let Some(o) = &rec.overview {
                rtwhy_report::overview::render_text(&mut out, o)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The summary of a recorder's state directory: a line per session, the disk the
/// directory takes against the latest session's budget, and who the captures on disk
/// point at.
fn print_state_summary(out: &mut dyn Write, dir: &Path, rec: &Recording) -> std::io::Result<()> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    writeln!(out)?;
    writeln!(
        out,
        "rtwhy record: {} sessions in {}",
        rec.sessions.len(),
        dir.display()
    )?;
    writeln!(
        out,
        "  {:<26} {:<12} {:>10} {:>9} {:>9} {:>8}",
        "session", "ended by", "length", "breaches", "captures", "on disk"
    )?;
    for (name, doc, _) in &rec.sessions {
        let s = &doc["session"];
        let state = match doc["state"].as_str() {
            Some("recording") => "recording",
            _ => s["ended_by"].as_str().unwrap_or("ended"),
        };
        writeln!(
            out,
            "  {name:<26} {state:<12} {:>10} {:>9} {:>9} {:>8}",
            human_duration(n(&s["duration_ns"])),
            n(&s["breaches"]),
            n(&s["captures_total"]),
            doc["spikes"].as_array().map_or(0, Vec::len)
        )?;
    }
    if let Some((_, last, _)) = rec.sessions.last() {
        if let Some(budget) = last["disk"]["budget_bytes"].as_u64() {
            writeln!(
                out,
                "  disk: {} of the {} budget in use (as the latest session left it), {} captures on disk",
                human_size(n(&last["disk"]["used_bytes"])),
                human_size(budget),
                rec.captures.len()
            )?;
        }
    }
    print_contributors(out, &rec.captures)
}

/// Who the kept captures' verdicts point at, the most captures first: the summary's
/// top contributors.
fn print_contributors(
    out: &mut dyn Write,
    kept: &[rtwhy_report::overview::Capture],
) -> std::io::Result<()> {
    let culprits = rtwhy_report::overview::contributors(kept);
    if !culprits.is_empty() {
        writeln!(out, "  top contributors (captures kept):")?;
        for k in culprits.iter().take(SUMMARY_CONTRIBUTORS) {
            let causes: Vec<&str> = k.causes().iter().map(|(c, _)| *c).collect();
            let worst = k.captures.first();
            writeln!(
                out,
                "  {:>6}  {} ({}), worst {}{}",
                k.captures.len(),
                k.culprit,
                causes.join(", "),
                human_duration(worst.map_or(0, |c| c.latency_ns)),
                worst.map(|c| format!(" in {}", c.file)).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// The session's `overview.json`; `None` when there is none (a session recorded before
/// rtwhy wrote one).
fn read_overview(dir: &Path) -> Result<Option<Overview>> {
    let path = SessionDir::new(dir).overview();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let o: Overview = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an rtwhy overview", path.display()))?;
    if o.schema != rtwhy_model::OVERVIEW_SCHEMA {
        anyhow::bail!(
            "{}: schema {:?}, this rtwhy reads {}",
            path.display(),
            o.schema,
            rtwhy_model::OVERVIEW_SCHEMA
        );
    }
    Ok(Some(o))
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
                human_size(budget),
                args.buffer_kb,
                human_size(one)
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
    let doc = session_json(&argv, &report, &ledger, args.state_dir.as_deref(), true);
    write_session(&out_dir, &doc)?;
    let overview = overview(&report, &diagnosed, args.threshold);
    write_overview(&out_dir, &overview)?;
    let stdout = std::io::stdout();
    print_summary(&mut stdout.lock(), &out_dir, &doc)?;
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
