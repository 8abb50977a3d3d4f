//! `rtwhy record` and `rtwhy cleanup`: the recorder's session, with every capture
//! diagnosed as it is written (one line live, full text and JSON beside the trace), and
//! a summary at the end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;
use rtwhy_analyze::{Config, TaskFilter};
use rtwhy_model::{human_duration, Cause, Nanos, Spike, SpikeSource};
use rtwhy_record::capture::write_atomic;
use rtwhy_record::events::Preset;
use rtwhy_record::probe::ProbeConfig;
use rtwhy_record::session::{
    self, Armed, Capture, DetectorChoice, Observer, SessionConfig, SessionReport, Trigger, Workload,
};
use serde_json::{json, Value};

use crate::analyze::analyze_file;
use crate::cli::{DetectorArg, PresetArg, RecordArgs};
use crate::render;

/// The schema of `session.json`.
pub const SESSION_SCHEMA: &str = "rtwhy.session/1";

/// What became of one capture.
struct Diagnosed {
    index: usize,
    file: String,
    victim: String,
    tid: i32,
    cpu: u32,
    latency_ns: u64,
    cause: Option<Cause>,
    summary: String,
    error: Option<String>,
}

/// Diagnoses captures on a thread of its own, so the session keeps watching while a
/// capture is analysed.
struct Diagnoser {
    threshold: Nanos,
    t0: u64,
}

struct Live {
    diagnoser: Option<Diagnoser>,
    tx: Option<mpsc::Sender<Capture>>,
    worker: Option<std::thread::JoinHandle<Vec<Diagnosed>>>,
}

impl Live {
    fn new(d: Diagnoser) -> Live {
        Live {
            diagnoser: Some(d),
            tx: None,
            worker: None,
        }
    }

    /// Starts the diagnosis thread at the first capture: from the session's thread, so it
    /// inherits the session's CPUs (`--recorder-cpus`).
    fn sender(&mut self) -> Option<&mpsc::Sender<Capture>> {
        if self.tx.is_none() {
            let d = self.diagnoser.take()?;
            let (tx, rx) = mpsc::channel::<Capture>();
            match std::thread::Builder::new()
                .name("rtwhy-diagnose".into())
                .spawn(move || rx.iter().map(|c| d.report(&c)).collect())
            {
                Ok(w) => {
                    self.tx = Some(tx);
                    self.worker = Some(w);
                }
                Err(e) => eprintln!("rtwhy: warning: cannot start the diagnosis thread: {e}"),
            }
        }
        self.tx.as_ref()
    }

    /// Waits for every capture's diagnosis.
    fn finish(&mut self) -> Vec<Diagnosed> {
        self.tx.take();
        self.worker
            .take()
            .and_then(|w| w.join().ok())
            .unwrap_or_default()
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
        render::text(&mut text, &analysis, &source)?;
        let mut doc = render::json(&analysis, &source);
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
                eprintln!(
                    "rtwhy: warning: {}: cannot diagnose: {msg}",
                    c.path.display()
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
                    error: Some(msg),
                }
            }
        };
        let at = c.window_ns.1.saturating_sub(self.t0);
        let cause = d.cause.map_or("undiagnosed", |c| c.as_str());
        // The recording goes on when nobody reads stdout any more (`| head`): the
        // captures are on disk.
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(
            stdout,
            "{}  +{:.3}s  {}[{}] cpu {}  {}  {}: {}",
            d.file,
            at as f64 / 1e9,
            if d.victim.is_empty() { "?" } else { &d.victim },
            d.tid,
            d.cpu,
            human_duration(d.latency_ns),
            cause,
            d.summary
        );
        let _ = stdout.flush();
        d
    }
}

impl Observer for Live {
    fn armed(&mut self, a: &Armed) {
        let how = match &a.attach {
            Some(m) => format!("{} ({m})", a.detector),
            None => a.detector.clone(),
        };
        eprintln!(
            "rtwhy: armed in {} ms: detector {how}, {} events in instance {}, clock {}",
            a.armed_after_ns / 1_000_000,
            a.events.len(),
            a.instance,
            a.clock
        );
    }

    fn warning(&mut self, line: &str) {
        eprintln!("rtwhy: warning: {line}");
    }

    fn captured(&mut self, c: &Capture) {
        if let Some(tx) = self.sender() {
            let _ = tx.send(c.clone());
        }
    }
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i]
}

fn session_json(args_line: &[String], r: &SessionReport, diagnosed: &[Diagnosed]) -> Value {
    let mut freeze: Vec<u64> = r.captures.iter().map(|c| c.freeze_delay_ns).collect();
    let mut detect: Vec<u64> = r.captures.iter().map(|c| c.detect_delay_ns).collect();
    let mut dead: Vec<u64> = r.captures.iter().map(|c| c.dead_time_ns).collect();
    json!({
        "schema": SESSION_SCHEMA,
        "command": args_line,
        "session": r,
        "spikes": diagnosed.iter().map(|d| json!({
            "capture": d.index,
            "file": d.file,
            "tid": d.tid,
            "comm": d.victim,
            "cpu": d.cpu,
            "latency_ns": d.latency_ns,
            "cause": d.cause.map(|c| c.as_str()),
            "summary": d.summary,
            "error": d.error,
        })).collect::<Vec<_>>(),
        "timing": {
            "detect_delay_ns": {"p50": percentile(&mut detect, 0.5), "p99": percentile(&mut detect, 0.99)},
            "freeze_delay_ns": {"p50": percentile(&mut freeze, 0.5), "p99": percentile(&mut freeze, 0.99)},
            "dead_time_ns": {"p50": percentile(&mut dead, 0.5), "max": dead.iter().max().copied().unwrap_or(0)},
        },
    })
}

fn print_summary(
    out: &mut dyn Write,
    dir: &Path,
    r: &SessionReport,
    diagnosed: &[Diagnosed],
) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "rtwhy record: {} after {:.1} s; {} breaches, {} captures in {}",
        r.ended_by,
        r.duration_ns as f64 / 1e9,
        r.breaches,
        r.captures.len(),
        dir.display()
    )?;
    let mut causes: Vec<(&str, usize)> = Vec::new();
    for d in diagnosed {
        let c = d.cause.map_or("undiagnosed", |c| c.as_str());
        match causes.iter_mut().find(|(n, _)| *n == c) {
            Some((_, k)) => *k += 1,
            None => causes.push((c, 1)),
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.1));
    if !causes.is_empty() {
        writeln!(out, "  {:<28} {:>8}", "cause", "captures")?;
        for (c, n) in &causes {
            writeln!(out, "  {c:<28} {n:>8}")?;
        }
    }
    if !r.threads.is_empty() {
        writeln!(
            out,
            "  {:<8} {:<20} {:>9} {:>12}",
            "tid", "thread", "breaches", "worst"
        )?;
        for t in &r.threads {
            writeln!(
                out,
                "  {:<8} {:<20} {:>9} {:>12}",
                t.tid,
                t.comm,
                t.breaches,
                human_duration(t.worst_ns)
            )?;
        }
    }
    for p in &r.probe {
        writeln!(
            out,
            "  probe cpu {}: {} loops, min {} avg {} max {}, {} above threshold",
            p.cpu,
            p.loops,
            human_duration(p.min_ns),
            human_duration(p.avg_ns),
            human_duration(p.max_ns),
            p.over_threshold
        )?;
    }

    let pages_lost: u64 = r.captures.iter().map(|c| c.summary.pages_after_loss).sum();
    writeln!(
        out,
        "  lost: {} detector records, {} streamed events, {} captured pages after overruns; {} breaches in dead time, {} after --max-spikes",
        r.detector_lost, r.watch_events_lost, pages_lost, r.breaches_in_dead_time, r.breaches_after_max
    )?;
    if !r.captures.is_empty() {
        let mut dead: Vec<u64> = r.captures.iter().map(|c| c.dead_time_ns).collect();
        let mut freeze: Vec<u64> = r.captures.iter().map(|c| c.freeze_delay_ns).collect();
        writeln!(
            out,
            "  recording off while saving: median {} (max {}) per capture; instance stopped {} (median) after breach + --after",
            human_duration(percentile(&mut dead, 0.5)),
            human_duration(dead.iter().max().copied().unwrap_or(0)),
            human_duration(percentile(&mut freeze, 0.5)),
        )?;
    }

    if let Some(code) = r.child_exit {
        match r.child_signal {
            Some(sig) => writeln!(out, "  command killed by signal {sig}")?,
            None => writeln!(out, "  command exited with {code}")?,
        }
    }
    Ok(())
}

pub fn run(args: &RecordArgs) -> Result<ExitCode> {
    let out_dir: PathBuf = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(session::default_dir_name()));
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
        duration: args.duration.map(|d| Duration::from_nanos(d.0)),
        markers,
        detector: match args.detector {
            DetectorArg::Auto => DetectorChoice::Auto,
            DetectorArg::Bpf => DetectorChoice::Bpf,
            DetectorArg::Tracefs => DetectorChoice::Tracefs,
        },
        rt_only: !args.all_policies,
        workload,
        recorder_cpus,
    };
    let mut live = Live::new(Diagnoser {
        threshold: args.threshold,
        t0: session::mono_ns(),
    });
    let report = session::run(&cfg, &mut live);
    let diagnosed = live.finish();
    let report = report?;
    let argv: Vec<String> = std::env::args().collect();
    let doc = session_json(&argv, &report, &diagnosed);
    write_atomic(&out_dir.join("session.json"), |w| {
        serde_json::to_writer_pretty(&mut *w, &doc)?;
        w.write_all(b"\n")
    })?;
    let stdout = std::io::stdout();
    print_summary(&mut stdout.lock(), &out_dir, &report, &diagnosed)?;
    if let Some(code) = report.child_exit.filter(|c| *c != 0) {
        return Ok(ExitCode::from(code.clamp(1, 255) as u8));
    }
    Ok(if report.captures.is_empty() {
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
