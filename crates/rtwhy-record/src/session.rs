//! A recording session: set up the instances and the detector, run the workload (a
//! command or the built-in probe), capture a window around every breach, and undo every
//! tracefs change at the end, whatever ends it.

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rtwhy_model::{BreachRecord, Event, EventKind};
use serde::Serialize;

use crate::bpf::{BpfDetector, Breach, DetectorConfig, SchedMode};
use crate::capture::{drain_pipe, CaptureLayout, CaptureSummary};
use crate::child::{Child, Exit};
use crate::error::{RecordError, Result};
use crate::events::{split_event, Preset};
use crate::fallback::{FallbackDetector, EVENTS as FALLBACK_EVENTS};
use crate::lean::Lean;
use crate::probe::{Probe, ProbeConfig, ThreadStats};
use crate::symbols::KernelSymbols;
use crate::timerlat::{OsnoiseSettings, ProbeChoice, TimerlatConfig, TimerlatDetector};
use crate::tracefs::{Instance, Tracefs};
use crate::wakeups::Wakeups;
use crate::watch::Watch;

/// Which breach detector to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectorChoice {
    /// BPF where it loads, else the tracefs-only detector.
    Auto,
    /// BPF or nothing.
    Bpf,
    /// The tracefs-only detector, even where BPF would load.
    Tracefs,
}

/// What runs under the recorder.
#[derive(Debug, Clone)]
pub enum Workload {
    /// A command and its arguments.
    Command(Vec<String>),
    /// rtwhy's built-in cyclic probe.
    Probe(ProbeConfig),
}

/// How often a command's measured threads' CPUs are looked at again (see
/// `Runner::follow_measured_cpus`).
const LEAN_CHECK: Duration = Duration::from_millis(250);

/// How often the observer hears where a session stands ([`Observer::progress`]).
pub const PROGRESS: Duration = Duration::from_secs(60);

/// How often the detector's histograms are read: the BPF table then sheds the threads
/// that exited, so it keeps room for new ones.
const WAKEUPS_READ: Duration = Duration::from_secs(5);

/// Everything a session needs to know.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Latency that counts as a breach.
    pub threshold_ns: u64,
    /// Recording kept before a breach.
    pub before: Duration,
    /// Recording kept after a breach.
    pub after: Duration,
    /// Flight-recorder buffer per CPU, KiB.
    pub buffer_kb: u64,
    /// Event preset.
    pub preset: Preset,
    /// More events (`system:event`, `system:*`).
    pub extra_events: Vec<String>,
    /// CPUs to trace (all when `None`).
    pub cpus: Option<Vec<u32>>,
    /// Output directory (created).
    pub out_dir: PathBuf,
    /// The session ends after this many captures (0: never; for unattended sessions,
    /// whose disk use the caller bounds).
    pub max_spikes: usize,
    /// At most one capture per this span: breaches closer to the previous capture are
    /// counted, not saved, so a storm of breaches gives one capture and a count.
    pub min_gap: Duration,
    /// The session ends after this long.
    pub duration: Option<Duration>,
    /// Markers (written by the application to `trace_marker`) that count as breaches.
    pub markers: Vec<regex::Regex>,
    /// Detector choice.
    pub detector: DetectorChoice,
    /// Measure only SCHED_FIFO/RR threads.
    pub rt_only: bool,
    /// The workload.
    pub workload: Workload,
    /// Without a command: the kernel's timerlat tracer or rtwhy's own probe threads.
    pub probe: ProbeChoice,
    /// CPUs the recorder's own threads (detector reading, capture, diagnosis) run on;
    /// `None` leaves them where they are. The command keeps its own affinity.
    pub recorder_cpus: Option<Vec<u32>>,
    /// Record the CPUs no measured thread may run on leanly (see [`crate::lean`]);
    /// `false` records every CPU in full.
    pub lean: bool,
    /// Where the context switches and wake-ups come from.
    pub sched_events: SchedSource,
}

/// Where a session's context switches and wake-ups come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedSource {
    /// The flight instance's `sched_switch`, `sched_waking` and `sched_wakeup` events.
    Tracefs,
    /// The BPF detector's programs (`sched_switch` and `sched_waking` written into each
    /// capture from their rings, `sched_wakeup` not recorded): the CPUs not recorded
    /// then pay no tracefs probe for them, and no switch is lost where ftrace drops
    /// some. A warning and the instance's events where the detector cannot (the
    /// tracefs detector, the `tracepoint` attach mode, timerlat).
    Bpf,
    /// [`SchedSource::Bpf`] where the detector can, else the instance's, silently.
    Auto,
}

/// What set off a capture.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// A detector's measurement.
    Breach {
        /// The record (also written into the capture as a marker).
        record: Box<BreachRecord>,
    },
    /// An application's marker matching `--marker`.
    Marker {
        /// The marker text.
        text: String,
        /// The thread that wrote it.
        tid: i32,
        /// Its CPU.
        cpu: u32,
        /// When (trace clock ns).
        ts: u64,
    },
}

impl Trigger {
    /// When the breach ended (the late thread ran) or the marker was written, trace
    /// clock ns.
    pub fn end(&self) -> u64 {
        match self {
            Trigger::Breach { record } => record.switch_in.0,
            Trigger::Marker { ts, .. } => *ts,
        }
    }

    fn start(&self) -> u64 {
        match self {
            Trigger::Breach { record } => record
                .expiry
                .or(record.waking)
                .map(|n| n.0)
                .unwrap_or(record.switch_in.0.saturating_sub(record.latency.0)),
            Trigger::Marker { ts, .. } => *ts,
        }
    }
}

/// One saved window.
#[derive(Debug, Clone, Serialize)]
pub struct Capture {
    /// 1-based number (`spike-001`).
    pub index: usize,
    /// The trace.dat.
    pub path: PathBuf,
    /// What set it off.
    pub trigger: Trigger,
    /// Further breaches that fell in the same window.
    pub also: Vec<BreachRecord>,
    /// File contents.
    pub summary: CaptureSummary,
    /// The window asked for (trace clock ns).
    pub window_ns: (u64, u64),
    /// From the breach's end to the detector's report reaching the recorder.
    pub detect_delay_ns: u64,
    /// From the breach's end plus the tail (`--after`) to the instance stopping.
    pub freeze_delay_ns: u64,
    /// The instance was off (not recording) this long.
    pub dead_time_ns: u64,
}

/// Told about the session as it goes.
pub trait Observer {
    /// The detector is armed; the workload starts next.
    fn armed(&mut self, info: &Armed);
    /// Something the user should know (one line).
    fn warning(&mut self, line: &str);
    /// A capture was written; `so_far` is the session up to and including it.
    fn captured(&mut self, capture: &Capture, so_far: &SessionReport);
    /// SIGHUP: the session goes on; the observer may write out what it has (the rolling
    /// `session.json`) and log where the session stands.
    fn checkpoint(&mut self, _so_far: &SessionReport) {}
    /// Every [`PROGRESS`] of a session: the observer may write out where it stands, so
    /// a recorder that is killed leaves its wake-up histograms of the last minute or so.
    fn progress(&mut self, _so_far: &SessionReport) {}
    /// Whether the observer can take another capture now; when not, breaches are
    /// counted with those within `--min-gap` (an observer that bounds the disk takes
    /// one capture at a time, so none is written before the last one is accounted).
    fn ready(&self) -> bool {
        true
    }
}

/// The session as armed.
#[derive(Debug, Clone, Serialize)]
pub struct Armed {
    /// `bpf` or `tracefs`.
    pub detector: String,
    /// BPF attach flavour (`tp_btf`, `raw_tp`, `tracepoint`), when BPF.
    pub attach: Option<String>,
    /// Without a command, what measures: `timerlat` (the kernel's tracer) or `rtwhy`
    /// (rtwhy's own probe threads).
    pub probe: Option<String>,
    /// The flight-recorder instance.
    pub instance: String,
    /// Where the context switches and wake-ups come from: `tracefs` (the instance's
    /// events) or `bpf` (the detector's programs, [`SchedSource::Bpf`]).
    pub sched_events: String,
    /// Events enabled.
    pub events: Vec<String>,
    /// Events asked for that this kernel lacks.
    pub missing_events: Vec<String>,
    /// From start to armed.
    pub armed_after_ns: u64,
    /// The trace clock.
    pub clock: String,
    /// Stale instances removed at start.
    pub removed_stale: Vec<String>,
}

/// Worst latency seen per thread.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadWorst {
    /// Thread id.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Breaches measured.
    pub breaches: u64,
    /// The worst.
    pub worst_ns: u64,
}

/// How many captures' records a session keeps in memory.
pub const RECENT_CAPTURES: usize = 1024;

/// The scheduler events the BPF programs record in place of the flight instance
/// ([`SchedSource::Bpf`]); `sched_wakeup` is left out altogether (the
/// analysis reads a wake-up from whichever of it and `sched_waking` it has).
const BPF_SCHED_EVENTS: [(&str, &str); 3] = [
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
];

/// The whole session, for `session.json` and the summary table.
#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// How it was armed.
    pub armed: Option<Armed>,
    /// The most recent captures written (at most [`RECENT_CAPTURES`], so a session
    /// that runs for days keeps a bounded record).
    pub captures: VecDeque<Capture>,
    /// Captures written since the start.
    pub captures_total: usize,
    /// Captures that could not be written (disk full, directory gone): skipped, the
    /// session went on.
    pub captures_failed: u64,
    /// Breaches measured (captured or not).
    pub breaches: u64,
    /// Breaches that fell while the instance was off.
    pub breaches_in_dead_time: u64,
    /// Breaches not captured because `--max-spikes` was reached.
    pub breaches_after_max: u64,
    /// Breaches not captured because they came within `--min-gap` of the previous
    /// capture (a storm).
    pub breaches_rate_limited: u64,
    /// Application markers (`--marker`) that set off no capture of their own because
    /// they were written before the previous capture was read out and the flight
    /// recording started again: inside its window (that capture holds them), or while
    /// it was being saved (their history went with it). A capture cut for them would
    /// begin after them.
    pub markers_not_captured: u64,
    /// Worst latency per thread.
    pub threads: Vec<ThreadWorst>,
    /// Detector records lost (BPF ring buffer full).
    pub detector_lost: u64,
    /// Events the streaming instance dropped.
    pub watch_events_lost: u64,
    /// The built-in probe's figures.
    pub probe: Vec<ThreadStats>,
    /// Why the session ended.
    pub ended_by: String,
    /// The command's exit code (128 + signal when killed), when there was one.
    pub child_exit: Option<i32>,
    /// The child was killed by this signal.
    pub child_signal: Option<i32>,
    /// Session length.
    pub duration_ns: u64,
    /// Every measured wake-up per thread and CPU, and the breaches not captured (the
    /// recorder's half of `overview.json`, written beside `session.json`).
    #[serde(skip)]
    pub wakeups: Wakeups,
}

/// CLOCK_MONOTONIC now, in ns: the clock of BPF, of the probe, and of the instances.
pub fn mono_ns() -> u64 {
    crate::sys::monotonic_ns()
}

enum Detector {
    Bpf(Box<BpfDetector>),
    Tracefs(Box<FallbackDetector>),
    /// The timerlat tracer's thread samples, streamed from the watch instance.
    Timerlat(Box<TimerlatDetector>),
}

fn threads_of(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn comm_of(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default()
}

fn cpu_count(tracefs: &Tracefs) -> usize {
    std::fs::read_dir(tracefs.root().join("per_cpu"))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix("cpu")?
                .parse::<usize>()
                .ok()
        })
        .max()
        .map_or(1, |m| m + 1)
}

/// `(system, event)`.
type EventName = (String, String);

/// The tracefs instances a session of process `pid` makes: the flight recorder's and
/// the watcher's (markers, fallback detection). A program that must write its markers
/// into them itself (a kernel without `options/copy_trace_marker`, such as 6.1) writes
/// to `instances/NAME/trace_marker` of both.
pub fn instance_names(pid: u32) -> (String, String) {
    (format!("rtwhy-{pid}"), format!("rtwhy-{pid}-watch"))
}

/// Resolves the event list: preset plus extras, `system:*` expanded, missing ones apart.
fn resolve_events(
    tracefs: &Tracefs,
    preset: Preset,
    extra: &[String],
) -> Result<(Vec<EventName>, Vec<String>)> {
    let mut specs: Vec<String> = preset.events().iter().map(|s| s.to_string()).collect();
    specs.extend(extra.iter().cloned());
    let mut have = Vec::new();
    let mut missing = Vec::new();
    for spec in &specs {
        let Some((sys, ev)) = split_event(spec) else {
            return Err(RecordError::Other(format!(
                "--events: {spec:?} is not SYSTEM:EVENT (e.g. sched:sched_switch or irq:*)"
            )));
        };
        let names = if ev == "*" {
            tracefs.events_of(sys)
        } else if tracefs.has_event(sys, ev) {
            vec![ev.to_string()]
        } else {
            Vec::new()
        };
        if names.is_empty() {
            missing.push(spec.clone());
        }
        for n in names {
            let pair = (sys.to_string(), n);
            if !have.contains(&pair) {
                have.push(pair);
            }
        }
    }
    Ok((have, missing))
}

fn check_root() -> Result<()> {
    if !crate::sys::is_root() {
        return Err(RecordError::Privilege(
            "rtwhy record needs root: it creates a tracefs instance and loads BPF programs".into(),
        ));
    }
    Ok(())
}

fn make_out_dir(dir: &Path) -> Result<()> {
    let err = |e| RecordError::Output {
        path: dir.to_path_buf(),
        source: e,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    // Prove it is writable before anything is armed.
    let probe = dir.join(format!(".rtwhy-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(err)?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// Stop requests from signals.
struct Signals {
    int: Arc<AtomicBool>,
    term: Arc<AtomicBool>,
    /// SIGHUP: a checkpoint, not an end (systemd's reload, a terminal that went away).
    hup: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Signals {
    fn register() -> Signals {
        let int = Arc::new(AtomicBool::new(false));
        let term = Arc::new(AtomicBool::new(false));
        let hup = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for (sig, flag) in [
            (signal_hook::consts::SIGINT, &int),
            (signal_hook::consts::SIGTERM, &term),
            (signal_hook::consts::SIGHUP, &hup),
        ] {
            if let Ok(id) = signal_hook::flag::register(sig, flag.clone()) {
                ids.push(id);
            }
        }
        Signals {
            int,
            term,
            hup,
            ids,
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

struct Runner<'a> {
    cfg: &'a SessionConfig,
    obs: &'a mut dyn Observer,
    flight: Instance,
    marker: std::fs::File,
    layout: CaptureLayout,
    fact_lines: Vec<String>,
    lean: Option<Lean>,
    lean_checked: Instant,
    wakeups_read: Instant,
    progressed: Instant,
    detector: Detector,
    watch: Option<Watch>,
    cpus: usize,
    report: SessionReport,
    worst: BTreeMap<i32, ThreadWorst>,
    last_freeze: u64,
    last_rearm: u64,
    t0: Instant,
}

/// Runs a session to its end. Every tracefs change is undone before this returns,
/// also on error.
pub fn run(cfg: &SessionConfig, obs: &mut dyn Observer) -> Result<SessionReport> {
    let t0 = Instant::now();
    // From here on a signal only asks the session to end: setup runs to completion
    // and everything is undone, even when Ctrl-C comes during start-up.
    let signals = Signals::register();
    check_root()?;
    if let Workload::Command(argv) = &cfg.workload {
        if argv.is_empty() {
            return Err(RecordError::Other("empty command".into()));
        }
    }
    let saved = Affinity::current()?;
    if let Some(cpus) = &cfg.recorder_cpus {
        Affinity::set(cpus)?;
    }
    let mut tracefs = Tracefs::open()?;
    let result = run_with(cfg, obs, &tracefs, t0, &saved, &signals);
    tracefs.release();
    saved.restore();
    result
}

/// A thread's CPU mask.
struct Affinity(libc::cpu_set_t);

impl Affinity {
    fn current() -> Result<Affinity> {
        crate::sys::affinity_mask()
            .map(Affinity)
            .map_err(|e| RecordError::Other(format!("sched_getaffinity: {e}")))
    }

    fn set(cpus: &[u32]) -> Result<()> {
        crate::sys::set_affinity(cpus)
            .map_err(|e| RecordError::Other(format!("--recorder-cpus {cpus:?}: {e}")))
    }

    fn restore(&self) {
        let _ = crate::sys::set_affinity_mask(&self.0);
    }
}

fn run_with(
    cfg: &SessionConfig,
    obs: &mut dyn Observer,
    tracefs: &Tracefs,
    t0: Instant,
    saved: &Affinity,
    signals: &Signals,
) -> Result<SessionReport> {
    let mut timerlat = match &cfg.workload {
        Workload::Probe(pc) if cfg.probe != ProbeChoice::Rtwhy => {
            if crate::timerlat::available(tracefs) {
                Some(TimerlatConfig {
                    cpus: pc.cpus.clone(),
                    period_us: u64::try_from(pc.interval.as_micros())
                        .unwrap_or(u64::MAX)
                        .max(1),
                    priority: pc.priority,
                })
            } else if cfg.probe == ProbeChoice::Timerlat {
                return Err(RecordError::Other(
                    "--probe timerlat: this kernel has no timerlat tracer (not in available_tracers; it needs CONFIG_TIMERLAT_TRACER); use --probe rtwhy".into(),
                ));
            } else {
                None
            }
        }
        _ => None,
    };
    let removed_stale = tracefs.remove_stale(Path::new("/proc"))?;
    for name in &removed_stale {
        obs.warning(&format!(
            "removed tracefs instance {name} left by a recorder that was killed"
        ));
    }
    make_out_dir(&cfg.out_dir)?;
    let mut facts = crate::facts::snapshot();
    // The application's markers: one with a number (a group named for its unit) is
    // its own latency measurement, which the capture's analysis reads with it.
    facts.extend(
        cfg.markers
            .iter()
            .enumerate()
            .map(|(i, m)| (format!("record.marker.{i}"), m.as_str().to_string())),
    );
    let fact_lines = crate::facts::to_markers(&facts);

    let mut extra = cfg.extra_events.clone();
    if timerlat.is_some() {
        // The interference events the timerlat analysis breaks each period into.
        extra.push("osnoise:*".into());
    }
    let (events, missing) = resolve_events(tracefs, cfg.preset, &extra)?;
    for m in &missing {
        obs.warning(&format!(
            "event {m} does not exist on this kernel; recording without it"
        ));
    }
    // Before the instances: dropped after them, so the settings go back once no
    // instance runs the tracer any more.
    let osnoise = match &timerlat {
        Some(tc) => Some(OsnoiseSettings::apply(tracefs, tc)?),
        None => None,
    };
    let pid = std::process::id();
    let flight = tracefs.create_instance(&instance_names(pid).0)?;
    flight.set_tracing_on(false)?;
    flight.set_buffer_kb(cfg.buffer_kb)?;
    flight.set_overwrite(true)?;
    if !flight.set_option("copy_trace_marker", true)? && !cfg.markers.is_empty() {
        obs.warning(
            "this kernel has no options/copy_trace_marker: application markers are not seen",
        );
    }
    flight.set_clock("mono")?;
    if let Some(cpus) = &cfg.cpus {
        flight.set_cpus(cpus)?;
    }
    let mut enabled = Vec::new();
    for (sys, ev) in &events {
        if flight.enable_event(sys, ev)? {
            enabled.push(format!("{sys}:{ev}"));
        }
    }
    if timerlat.is_some() {
        if let Err(e) = flight.set_tracer("timerlat") {
            if cfg.probe == ProbeChoice::Timerlat {
                return Err(RecordError::Other(format!(
                    "--probe timerlat: the timerlat tracer cannot run in an instance here: {e}"
                )));
            }
            obs.warning(&format!(
                "the timerlat tracer cannot run in an instance here ({e}); using rtwhy's own probe"
            ));
            timerlat = None;
        }
    }
    let cpus = cpu_count(tracefs);
    let page_size = flight
        .read("buffer_subbuf_size_kb")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(4096, |kb| kb * 1024);
    let mut meta_events = events.clone();
    for (s, e) in FALLBACK_EVENTS {
        let pair = (s.to_string(), e.to_string());
        if tracefs.has_event(s, e) && !meta_events.contains(&pair) {
            meta_events.push(pair);
        }
    }
    let sources = tracefs.meta_sources(&meta_events, None)?;
    let layout = CaptureLayout::new(
        sources,
        KernelSymbols::load(),
        page_size,
        "mono",
        &rtwhy_sys::host::uname()
            .map(|u| u.line())
            .unwrap_or_default(),
        cpus,
    )?;

    let rt_only = cfg.rt_only;
    let detector = match (&timerlat, cfg.detector) {
        (Some(tc), _) => {
            Detector::Timerlat(Box::new(TimerlatDetector::new(cfg.threshold_ns, &tc.cpus)))
        }
        (None, choice) => match choice {
            DetectorChoice::Tracefs => {
                Detector::Tracefs(Box::new(FallbackDetector::new(cfg.threshold_ns, rt_only)))
            }
            choice => {
                let dc = DetectorConfig {
                    threshold_ns: cfg.threshold_ns,
                    rt_only,
                    force: None,
                    stack: true,
                    sleeper_fn: layout.symbols().address_of("hrtimer_wakeup"),
                    sched_slots: if cfg.sched_events != SchedSource::Tracefs {
                        u32::try_from((cfg.buffer_kb as usize * 1024) / crate::bpf::SCHED_REC_SIZE)
                            .unwrap_or(u32::MAX)
                            .max(1024)
                    } else {
                        0
                    },
                };
                match BpfDetector::start(&dc) {
                    Ok(d) => Detector::Bpf(Box::new(d)),
                    Err(e) if choice == DetectorChoice::Auto => {
                        obs.warning(&format!(
                        "{e}; using the tracefs-only detector (higher overhead, switch-in times may be late where ftrace drops events)"
                    ));
                        Detector::Tracefs(Box::new(FallbackDetector::new(
                            cfg.threshold_ns,
                            rt_only,
                        )))
                    }
                    Err(e) => return Err(e),
                }
            }
        },
    };
    let sched_log = matches!(&detector, Detector::Bpf(d) if d.sched_log().is_some());
    if sched_log {
        // The programs keep these from now on; the instance leaves them out.
        for (sys, ev) in BPF_SCHED_EVENTS {
            let name = format!("{sys}:{ev}");
            if enabled.contains(&name) {
                flight.disable_event(sys, ev)?;
                enabled.retain(|e| *e != name);
            }
        }
    } else if cfg.sched_events == SchedSource::Bpf {
        obs.warning(
            "--sched-events bpf needs the BPF detector in its tp_btf or raw_tp mode; the flight instance records the scheduler events",
        );
    }
    let need_watch = !matches!(detector, Detector::Bpf(_)) || !cfg.markers.is_empty();
    let watch_instance = if need_watch {
        let w = tracefs.create_instance(&instance_names(pid).1)?;
        w.set_tracing_on(false)?;
        w.set_buffer_kb(1024)?;
        w.set_overwrite(false)?;
        w.set_option("copy_trace_marker", true)?;
        w.set_clock("mono")?;
        match detector {
            Detector::Tracefs(_) => {
                for (s, e) in FALLBACK_EVENTS {
                    w.enable_event(s, e)?;
                }
            }
            Detector::Timerlat(_) => w.set_tracer("timerlat")?,
            Detector::Bpf(_) => {}
        }
        Some(w)
    } else {
        None
    };
    let watch = match &watch_instance {
        Some(w) => {
            let pipes = (0..cpus as u32).map(|c| w.raw_pipe(c)).collect();
            let meta = Arc::new(layout.meta().clone());
            w.set_tracing_on(true)?;
            Some(Watch::start(pipes, meta)?)
        }
        None => None,
    };
    flight.set_tracing_on(true)?;
    let marker = flight.marker_file()?;
    let armed = Armed {
        detector: match &detector {
            Detector::Bpf(_) => "bpf".into(),
            Detector::Tracefs(_) => "tracefs".into(),
            Detector::Timerlat(_) => "timerlat".into(),
        },
        attach: match &detector {
            Detector::Bpf(d) => Some(d.mode().as_str().into()),
            Detector::Tracefs(_) | Detector::Timerlat(_) => None,
        },
        probe: match (&cfg.workload, &detector) {
            (Workload::Command(_), _) => None,
            (Workload::Probe(_), Detector::Timerlat(_)) => Some("timerlat".into()),
            (Workload::Probe(_), _) => Some("rtwhy".into()),
        },
        instance: flight.name().to_string(),
        sched_events: if sched_log { "bpf" } else { "tracefs" }.into(),
        events: enabled,
        missing_events: missing,
        armed_after_ns: t0.elapsed().as_nanos() as u64,
        clock: flight.clock().unwrap_or_default(),
        removed_stale,
    };
    obs.armed(&armed);

    let lean = if cfg.lean {
        // The measured CPUs: the probe's or timerlat's; a command's once its measured
        // threads exist (every CPU is full until then).
        let full = match (&timerlat, &cfg.workload) {
            (Some(tc), _) => Some(tc.cpus.clone()),
            (None, Workload::Probe(pc)) => Some(pc.cpus.clone()),
            (None, Workload::Command(_)) => None,
        };
        match Lean::start(
            &flight,
            &armed.events,
            cpus,
            cfg.cpus.as_deref(),
            full,
            mono_ns(),
        ) {
            Ok(l) => Some(l),
            Err(e) => {
                obs.warning(&format!(
                    "cannot filter the scheduler events of the other CPUs ({e}): every CPU is recorded in full"
                ));
                None
            }
        }
    } else {
        None
    };
    let mut runner = Runner {
        cfg,
        obs,
        flight,
        marker,
        layout,
        fact_lines,
        lean,
        lean_checked: Instant::now(),
        wakeups_read: Instant::now(),
        progressed: Instant::now(),
        detector,
        watch,
        cpus,
        report: SessionReport {
            armed: Some(armed),
            captures: VecDeque::new(),
            captures_total: 0,
            captures_failed: 0,
            breaches: 0,
            breaches_in_dead_time: 0,
            markers_not_captured: 0,
            breaches_after_max: 0,
            breaches_rate_limited: 0,
            threads: Vec::new(),
            detector_lost: 0,
            watch_events_lost: 0,
            probe: Vec::new(),
            ended_by: String::new(),
            child_exit: None,
            child_signal: None,
            duration_ns: 0,
            wakeups: Wakeups::since(mono_ns()),
        },
        worst: BTreeMap::new(),
        last_freeze: 0,
        last_rearm: 0,
        t0,
    };
    runner.set_sched_modes();
    let outcome = runner.run_workload(t0, saved, signals);
    // Stop reading before the instances go.
    if let Some(mut w) = runner.watch.take() {
        w.stop();
    }
    if let Some(w) = &watch_instance {
        runner.report.watch_events_lost = (0..cpus as u32).map(|c| w.lost_events(c)).sum();
    }
    let Runner {
        flight,
        marker,
        mut report,
        worst,
        ..
    } = runner;
    // The marker file holds the instance busy.
    drop(marker);
    flight.remove()?;
    if let Some(w) = watch_instance {
        w.remove()?;
    }
    if let Some(o) = osnoise {
        o.restore()?;
    }
    outcome?;
    report.threads = worst.into_values().collect();
    report.duration_ns = t0.elapsed().as_nanos() as u64;
    Ok(report)
}

impl Runner<'_> {
    /// Gives the timerlat kthreads the probe's priority; a warning when none was found.
    fn timerlat_priority(&mut self, priority: i32) {
        let cpus = match &self.cfg.workload {
            Workload::Probe(pc) => pc.cpus.clone(),
            Workload::Command(_) => return,
        };
        let set = crate::timerlat::set_kthread_priority(Path::new("/proc"), &cpus, priority);
        if set < cpus.len() {
            self.obs.warning(&format!(
                "SCHED_FIFO {priority} set on {set} of {} timerlat kthreads (the others keep the kernel's default, 95)",
                cpus.len()
            ));
        }
    }

    fn max_reached(&self) -> bool {
        self.cfg.max_spikes > 0 && self.report.captures_total >= self.cfg.max_spikes
    }

    /// Brings the report's per-thread worsts and length up to now, for an observer
    /// that writes where the session stands before it ends.
    fn refresh_report(&mut self) {
        self.report.threads = self.worst.values().cloned().collect();
        self.report.duration_ns = self.t0.elapsed().as_nanos() as u64;
        self.read_wakeups();
    }

    /// Brings the report's wake-up histograms up to now from the detector.
    fn read_wakeups(&mut self) {
        self.wakeups_read = Instant::now();
        let w = &mut self.report.wakeups;
        match &mut self.detector {
            Detector::Bpf(d) => {
                for (at, comm, h) in d.wakeups() {
                    w.set(at, &comm, h);
                }
                w.lost = d.wakeups_lost();
                w.unseen = d.wakeups_unseen();
                w.unseen_latest_ns = d.wakeups_unseen_latest_ns();
            }
            Detector::Tracefs(d) => w.adopt(d.wakeups()),
            Detector::Timerlat(d) => w.adopt(d.wakeups()),
        }
        w.to_ns = mono_ns();
    }

    /// A breach no capture will diagnose: its latency goes into the tail as not
    /// captured.
    fn not_captured(&mut self, r: &BreachRecord) {
        self.report
            .wakeups
            .not_captured(r.tid, &r.comm.to_str_lossy(), r.latency.0);
    }

    fn run_workload(&mut self, t0: Instant, saved: &Affinity, signals: &Signals) -> Result<()> {
        let mut child: Option<Child> = None;
        let mut probe = None;
        match &self.cfg.workload {
            Workload::Command(argv) => {
                let mut c = Child::spawn(argv, Some(&saved.0))?;
                self.track_process(c.pid())?;
                c.release(&argv[0])?;
                child = Some(c);
            }
            Workload::Probe(pc) if matches!(self.detector, Detector::Timerlat(_)) => {
                self.timerlat_priority(pc.priority);
            }
            Workload::Probe(pc) => {
                let p = Probe::start(pc)?;
                for tid in p.tids() {
                    self.track_thread(tid)?;
                }
                probe = Some(p);
            }
        }
        let deadline = self.cfg.duration.map(|d| t0 + d);
        let ended_by = loop {
            if signals.int.load(Ordering::Relaxed) {
                break "interrupted (SIGINT)".to_string();
            }
            if signals.term.load(Ordering::Relaxed) {
                break "terminated (SIGTERM)".to_string();
            }
            if let Some(c) = child.as_mut() {
                if let Some(exit) = c.try_wait() {
                    self.set_child_status(exit);
                    // Breaches still queued belong to the session.
                    self.poll_once(Duration::from_millis(20))?;
                    break "the command exited".to_string();
                }
            }
            if signals.hup.swap(false, Ordering::Relaxed) {
                self.refresh_report();
                self.obs.checkpoint(&self.report);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break "--duration reached".to_string();
            }
            if self.max_reached() {
                break "--max-spikes reached".to_string();
            }
            if self.progressed.elapsed() >= PROGRESS {
                self.progressed = Instant::now();
                self.refresh_report();
                self.obs.progress(&self.report);
            } else if self.wakeups_read.elapsed() >= WAKEUPS_READ {
                self.read_wakeups();
            }
            if matches!(self.cfg.workload, Workload::Command(_))
                && self.lean_checked.elapsed() >= LEAN_CHECK
            {
                self.lean_checked = Instant::now();
                self.follow_measured_cpus();
            }
            self.poll_once(Duration::from_millis(10))?;
        };
        self.report.ended_by = ended_by;
        if let Some(p) = probe {
            self.report.probe = p.stop();
        }
        if let Detector::Timerlat(d) = &self.detector {
            self.report.probe = d.stats();
            if d.unreadable() > 0 {
                self.obs.warning(&format!(
                    "{} timerlat samples could not be read and were skipped",
                    d.unreadable()
                ));
            }
        }
        if let Some(mut c) = child.take() {
            // Ctrl-C in a terminal reached the command too; SIGTERM and the other ends
            // are passed on here.
            if let Some(exit) = c.terminate(Duration::from_secs(3)) {
                self.set_child_status(exit);
            }
        }
        if let Detector::Bpf(d) = &self.detector {
            self.report.detector_lost = d.lost();
        }
        self.read_wakeups();
        Ok(())
    }

    /// Keeps the lean rule's full CPUs those the measured threads may run on now (their
    /// affinity), so that a command that pins its threads after it starts, or moves
    /// them, is recorded in full where they run.
    fn follow_measured_cpus(&mut self) {
        let Some(lean) = self.lean.as_mut() else {
            return;
        };
        let tids: Vec<i32> = match &self.detector {
            Detector::Bpf(d) => {
                let (processes, mut threads) = d.tracked();
                for p in processes {
                    threads.extend(threads_of(p));
                }
                threads
            }
            Detector::Tracefs(d) => d.tracked(),
            Detector::Timerlat(_) => return,
        };
        let mut full: Vec<u32> = Vec::new();
        for tid in tids {
            if self.cfg.rt_only && crate::sys::task_is_realtime(tid) != Some(true) {
                continue;
            }
            if let Some(cpus) = crate::sys::task_cpus(tid) {
                full.extend(cpus);
            }
        }
        if full.is_empty() {
            // No measured thread yet (or any more): the last set stays.
            return;
        }
        if let Err(e) = lean.set(&self.flight, full, mono_ns()) {
            self.obs.warning(&format!(
                "cannot change the scheduler event filters ({e}): every CPU is recorded in full from now on"
            ));
            let all: Vec<u32> = (0..self.cpus as u32).collect();
            let _ = lean.set(&self.flight, all, mono_ns());
        }
        self.set_sched_modes();
    }

    /// What the BPF programs keep of each CPU's scheduler events (when they keep them):
    /// nothing on a CPU not recorded, everything on a full one, the lean rule on the
    /// others.
    fn set_sched_modes(&mut self) {
        let Detector::Bpf(d) = &self.detector else {
            return;
        };
        let Some(log) = d.sched_log() else {
            return;
        };
        let full = self.lean.as_ref().map(Lean::full_now);
        for cpu in 0..self.cpus as u32 {
            let recorded = self.cfg.cpus.as_ref().is_none_or(|c| c.contains(&cpu));
            let mode = match (&full, recorded) {
                (_, false) => SchedMode::Off,
                (Some(f), true) if !f.contains(&cpu) => SchedMode::Lean,
                _ => SchedMode::Full,
            };
            if let Err(e) = log.set_mode(cpu, mode) {
                self.obs.warning(&e.to_string());
            }
        }
    }

    fn set_child_status(&mut self, exit: Exit) {
        match exit {
            Exit::Code(code) => self.report.child_exit = Some(code),
            Exit::Signal(sig) => {
                self.report.child_signal = Some(sig);
                self.report.child_exit = Some(128 + sig);
            }
        }
    }

    fn track_process(&mut self, pid: i32) -> Result<()> {
        match &mut self.detector {
            Detector::Bpf(d) => d.track_process(pid),
            Detector::Timerlat(_) => Ok(()),
            Detector::Tracefs(d) => {
                d.track(pid);
                for tid in threads_of(pid) {
                    d.track(tid);
                }
                Ok(())
            }
        }
    }

    fn track_thread(&mut self, tid: i32) -> Result<()> {
        match &mut self.detector {
            Detector::Bpf(d) => d.track_thread(tid),
            Detector::Tracefs(d) => {
                d.track(tid);
                Ok(())
            }
            Detector::Timerlat(_) => Ok(()),
        }
    }

    /// Waits up to `timeout` for breaches and markers; captures what came.
    fn poll_once(&mut self, timeout: Duration) -> Result<()> {
        let mut triggers = Vec::new();
        let events: Vec<Event> = match &self.watch {
            Some(w) => w.next(if !matches!(self.detector, Detector::Bpf(_)) {
                timeout
            } else {
                Duration::ZERO
            }),
            None => Vec::new(),
        };
        for ev in &events {
            if let EventKind::Print { text } = &ev.kind {
                let line = text.trim_end();
                if self.cfg.markers.iter().any(|r| r.is_match(line)) {
                    triggers.push(Trigger::Marker {
                        text: line.to_string(),
                        tid: ev.pid,
                        cpu: ev.cpu,
                        ts: ev.ts.0,
                    });
                }
            }
        }
        match &mut self.detector {
            Detector::Bpf(d) => {
                for b in d.poll(timeout)? {
                    let record = Box::new(with_stack(self.layout.symbols(), b));
                    triggers.push(Trigger::Breach { record });
                }
            }
            Detector::Timerlat(d) => {
                for ev in &events {
                    if let Some(r) = d.push(ev) {
                        triggers.push(Trigger::Breach {
                            record: Box::new(r),
                        });
                    }
                }
            }
            Detector::Tracefs(d) => {
                for ev in &events {
                    if let Some(r) = d.push(ev) {
                        triggers.push(Trigger::Breach {
                            record: Box::new(r),
                        });
                    }
                }
            }
        }
        if triggers.is_empty() {
            return Ok(());
        }
        let now = mono_ns();
        triggers.sort_by_key(|t| t.end());
        let mut pending: Vec<Trigger> = Vec::new();
        for t in triggers {
            if let Trigger::Breach { record } = &t {
                self.note_breach(record);
                if record.switch_in.0 <= self.last_freeze {
                    // Inside the previous capture already, whose verdict is its trigger's.
                    self.not_captured(record);
                    continue;
                }
                if record.switch_in.0 < self.last_rearm {
                    self.report.breaches_in_dead_time += 1;
                    self.not_captured(record);
                    continue;
                }
            }
            if let Trigger::Marker { ts, .. } = &t {
                if *ts < self.last_rearm {
                    self.report.markers_not_captured += 1;
                    continue;
                }
            }
            pending.push(t);
        }
        let Some((first, rest)) = pending.split_first() else {
            return Ok(());
        };
        let pending_breaches = |pending: &[Trigger]| -> Vec<BreachRecord> {
            pending
                .iter()
                .filter_map(|t| match t {
                    Trigger::Breach { record } => Some(record.as_ref().clone()),
                    Trigger::Marker { .. } => None,
                })
                .collect()
        };
        if self.max_reached() {
            self.report.breaches_after_max += pending.len() as u64;
            for r in pending_breaches(&pending) {
                self.not_captured(&r);
            }
            return Ok(());
        }
        let gap = self.cfg.min_gap.as_nanos() as u64;
        let too_soon =
            gap > 0 && self.report.captures_total > 0 && first.end() < self.last_rearm + gap;
        if too_soon || !self.obs.ready() {
            self.report.breaches_rate_limited += pending.len() as u64;
            for r in pending_breaches(&pending) {
                self.not_captured(&r);
            }
            return Ok(());
        }
        let also = pending_breaches(rest);
        for r in &also {
            self.not_captured(r);
        }
        self.capture(first.clone(), also, now)
    }

    fn note_breach(&mut self, r: &BreachRecord) {
        self.report.breaches += 1;
        let comm = r.comm.to_str_lossy().into_owned();
        let w = self.worst.entry(r.tid).or_insert_with(|| ThreadWorst {
            tid: r.tid,
            comm: if comm.is_empty() {
                comm_of(r.tid)
            } else {
                comm
            },
            breaches: 0,
            worst_ns: 0,
        });
        w.breaches += 1;
        w.worst_ns = w.worst_ns.max(r.latency.0);
    }

    /// Writes `lines` into the flight recording. A `trace_marker` line is recorded on
    /// the CPU of the thread writing it, so with `--cpus` leaving the recorder's CPU out
    /// the thread moves onto the recorded CPUs for the writes (its affinity restored
    /// after): a capture without its facts and breach records would not say what it is.
    fn write_markers(&mut self, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        let moved = match &self.cfg.cpus {
            Some(cpus) => match Affinity::current() {
                Ok(saved) if Affinity::set(cpus).is_ok() => Some(saved),
                _ => None,
            },
            None => None,
        };
        for line in lines {
            let _ = self.marker.write_all(line.as_bytes());
        }
        if let Some(saved) = moved {
            saved.restore();
        }
    }

    fn capture(
        &mut self,
        trigger: Trigger,
        mut also: Vec<BreachRecord>,
        seen_ns: u64,
    ) -> Result<()> {
        let index = self.report.captures_total + self.report.captures_failed as usize + 1;
        let end = trigger.end();
        // Facts first (the flight buffer has long overwritten anything written at start),
        // then the breach records.
        let mut lines = self.fact_lines.clone();
        if let Some(lean) = &self.lean {
            let from = end.saturating_sub(self.cfg.before.as_nanos() as u64);
            let full = lean.full_during(from, mono_ns());
            lines.push(format!(
                "{}record.full_cpus={}",
                rtwhy_model::FACT_PREFIX,
                rtwhy_model::CpuList(full)
            ));
        }
        if matches!(&self.detector, Detector::Bpf(d) if d.sched_log().is_some()) {
            lines.push(format!(
                "{}record.sched_events=bpf",
                rtwhy_model::FACT_PREFIX
            ));
        }
        if let Trigger::Breach { record } = &trigger {
            lines.push(record.to_marker());
        }
        lines.extend(also.iter().map(BreachRecord::to_marker));
        self.write_markers(&lines);
        let freeze_at = end.saturating_add(self.cfg.after.as_nanos() as u64);
        loop {
            let now = mono_ns();
            if now >= freeze_at {
                break;
            }
            std::thread::sleep(Duration::from_nanos((freeze_at - now).min(1_000_000)));
        }
        // Breaches that ended before the freeze are in this window too.
        let also_before = also.len();
        if let Detector::Bpf(d) = &mut self.detector {
            let late: Vec<BreachRecord> = d
                .poll(Duration::ZERO)?
                .into_iter()
                .map(|b| with_stack(self.layout.symbols(), b))
                .collect();
            for r in &late {
                self.note_breach(r);
            }
            let lines: Vec<String> = late.iter().map(BreachRecord::to_marker).collect();
            self.write_markers(&lines);
            also.extend(late);
            for r in also.iter().skip(also_before) {
                self.report
                    .wakeups
                    .not_captured(r.tid, &r.comm.to_str_lossy(), r.latency.0);
            }
        }
        self.flight.set_tracing_on(false)?;
        let freeze = mono_ns();
        let max = (self.cfg.buffer_kb as usize * 1024).saturating_mul(2);
        let mut pages = Vec::with_capacity(self.cpus);
        let mut drain_err = None;
        for cpu in 0..self.cpus as u32 {
            match drain_pipe(&self.flight.raw_pipe(cpu), self.layout.page_size(), max) {
                Ok(p) => pages.push(p),
                Err(e) => {
                    pages.push(Vec::new());
                    drain_err.get_or_insert(e);
                }
            }
        }
        self.flight.set_tracing_on(true)?;
        let rearm = mono_ns();
        let from = trigger
            .start()
            .saturating_sub(self.cfg.before.as_nanos() as u64);
        let sched = match &self.detector {
            Detector::Bpf(d) => d.sched_log().map(|l| l.records(from, freeze)),
            _ => None,
        };
        if let Some(e) = drain_err {
            self.obs
                .warning(&format!("reading the flight recording: {e}"));
        }
        self.last_freeze = freeze;
        self.last_rearm = rearm;
        let path = rtwhy_model::SessionDir::new(&self.cfg.out_dir).capture(index as u64);
        let written = self.layout.write(
            &pages,
            sched.as_deref().unwrap_or_default(),
            from,
            freeze,
            &path,
        );
        drop(pages);
        drop(sched);
        let summary = match written {
            Ok(s) => s,
            Err(e) => {
                // A full disk must not end a recorder meant to run for days: what was
                // saved stays, nothing half-written is left (the write is atomic), and
                // the next breach tries again.
                // One line, not one per breach: the count goes into the report.
                if let Trigger::Breach { record } = &trigger {
                    self.not_captured(record);
                }
                if self.report.captures_failed == 0 {
                    self.obs.warning(&format!(
                        "capture not saved, recording goes on (further failures are counted in session.json, not logged): {e}"
                    ));
                }
                self.report.captures_failed += 1;
                return Ok(());
            }
        };
        let capture = Capture {
            index,
            path,
            trigger,
            also,
            summary,
            window_ns: (from, freeze),
            detect_delay_ns: seen_ns.saturating_sub(end),
            freeze_delay_ns: freeze.saturating_sub(freeze_at),
            dead_time_ns: rearm - freeze,
        };
        if self.report.captures.len() >= RECENT_CAPTURES {
            self.report.captures.pop_front();
        }
        self.report.captures.push_back(capture);
        self.report.captures_total += 1;
        self.refresh_report();
        if let Some(c) = self.report.captures.back() {
            self.obs.captured(c, &self.report);
        }
        Ok(())
    }
}

/// The BPF detector's record with its stack named, dropping the frames of the tracing
/// machinery (everything inner to `__schedule`, when it is there).
fn with_stack(symbols: &KernelSymbols, b: Breach) -> BreachRecord {
    let name = |a: &u64| symbols.name(*a).unwrap_or(format!("{a:#x}"));
    let mut names: Vec<String> = b.stack.iter().map(name).collect();
    let inner = names
        .iter()
        .position(|n| n.starts_with("__schedule+"))
        .unwrap_or(0);
    let mut record = b.record;
    record.stack = names.split_off(inner);
    record.timer_stack = interrupted(b.timer_stack.iter().map(name).collect());
    record
}

/// Interrupt entry points (x86, arm64, riscv): outer to them is the interrupted code.
const IRQ_ENTRIES: [&str; 10] = [
    "asm_sysvec_",
    "asm_common_interrupt",
    "sysvec_",
    "common_interrupt",
    "el1h_64_irq",
    "el0t_64_irq",
    "el1_interrupt",
    "gic_handle_irq",
    "handle_riscv_irq",
    "do_irq",
];

/// The frames of a timer interrupt's stack outer to its entry: the code that was
/// interrupted. Without a recognised entry (an unknown architecture), those outer to
/// `hrtimer_interrupt`; without either, all of them.
fn interrupted(mut names: Vec<String>) -> Vec<String> {
    let entry = names
        .iter()
        .rposition(|n| IRQ_ENTRIES.iter().any(|e| n.starts_with(e)))
        .or_else(|| {
            names
                .iter()
                .rposition(|n| n.starts_with("hrtimer_interrupt+"))
        });
    match entry {
        Some(i) => names.split_off(i + 1),
        None => names,
    }
}

/// `rtwhy cleanup`: removes instances left by killed recorders.
pub fn cleanup() -> Result<Vec<String>> {
    check_root()?;
    let mut t = Tracefs::open()?;
    let removed = t.remove_stale(Path::new("/proc"));
    t.release();
    removed
}

/// `rtwhy-YYYYmmdd-HHMMSS` in local time: the default output directory.
pub fn default_dir_name() -> String {
    match rtwhy_sys::host::local_now() {
        Ok(t) => format!(
            "rtwhy-{:04}{:02}{:02}-{:02}{:02}{:02}",
            t.year, t.month, t.day, t.hour, t.minute, t.second
        ),
        Err(epoch_secs) => format!("rtwhy-{epoch_secs}"),
    }
}

/// A CPU list of `/sys/devices/system/cpu` (`online`, `isolated`).
fn sys_cpus(name: &str) -> Option<rtwhy_model::CpuList> {
    crate::facts::cpu_list(Path::new("/"), name)
}

/// Where the built-in probe runs by default: the isolated CPUs, else every online CPU.
pub fn default_probe_cpus() -> Vec<u32> {
    sys_cpus("isolated")
        .filter(|l| !l.is_empty())
        .or_else(|| sys_cpus("online").filter(|l| !l.is_empty()))
        .map_or_else(|| vec![0], |l| l.0)
}

/// The online CPUs that are not isolated, when some CPUs are isolated: where the
/// recorder's own threads belong. `None` without isolation.
pub fn housekeeping_cpus() -> Option<Vec<u32>> {
    let isolated = sys_cpus("isolated").filter(|l| !l.is_empty())?;
    let rest: Vec<u32> = online_cpus()
        .into_iter()
        .filter(|c| !isolated.contains(*c))
        .collect();
    (!rest.is_empty()).then_some(rest)
}

/// The online CPUs (`/sys/devices/system/cpu/online`).
pub fn online_cpus() -> Vec<u32> {
    sys_cpus("online").map_or_else(Vec::new, |l| l.0)
}

#[cfg(test)]
mod interrupted_tests {
    use super::interrupted;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn the_interrupted_code_is_what_lies_outside_the_interrupt_entry() {
        let x86 = names(&[
            "bpf_prog_1+0x4a",
            "bpf_trace_run1+0x7c",
            "__hrtimer_run_queues+0x1a0",
            "hrtimer_interrupt+0x10e",
            "__sysvec_apic_timer_interrupt+0x55",
            "sysvec_apic_timer_interrupt+0x6d",
            "asm_sysvec_apic_timer_interrupt+0x1a",
            "_raw_spin_unlock_irqrestore+0x1d",
            "e1000_watchdog+0x50",
        ]);
        assert_eq!(
            interrupted(x86),
            names(&["_raw_spin_unlock_irqrestore+0x1d", "e1000_watchdog+0x50"])
        );
        let unknown_arch = names(&["x+0x1", "hrtimer_interrupt+0x2", "idle_loop+0x3"]);
        assert_eq!(interrupted(unknown_arch), names(&["idle_loop+0x3"]));
        let nothing_known = names(&["a+0x1", "b+0x2"]);
        assert_eq!(interrupted(nothing_known.clone()), nothing_known);
    }
}
