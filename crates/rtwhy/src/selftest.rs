//! `rtwhy selftest` and `rtwhy lab`: induce each latency cause with rtwhy-lab, record it
//! with rtwhy's own recorder, and check that the diagnosis names it.
//!
//! This module turns the arguments into a bench (the victim CPU, its housekeeping CPU,
//! the victim program, the CPU's noise measured with rtwhy's probe), runs every scenario
//! in a recording session of its own and prints what became of it. The victim
//! (cyclictest, the probe, or the scenario's own `lab-high` thread) is the recorded
//! workload, the load starts once the recorder is armed, and each capture is diagnosed
//! as `rtwhy record` diagnoses it. The judging is rtwhy-lab's: which spikes count and
//! how much ([`rtwhy_lab::judge`]), the noise loads are sized above
//! ([`rtwhy_lab::noise`]), and whether a device's interrupts can stand out of it
//! ([`rtwhy_lab::irq_work`], traced here by [`crate::irq_work`]).
//!
//! A scenario is "not inducible here" when the kernel does not allow it, decided before
//! anything runs, or, for the device-interrupt scenario after a failed attempt, when its
//! interrupts' measured work can be the main part of no more than the share a pass needs
//! (the numbers are in the verdict). Otherwise a scenario that ran and produced no spike
//! of the victim is a failure, so a broken recorder cannot pass. A failed scenario is
//! tried again up to `--attempts` times; the table shows the attempt that came nearest.

use std::collections::BTreeMap;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rtwhy_analyze::{Config, TaskFilter};
use rtwhy_lab::judge::{expected_share, judge, Tallied, Tally, PASS_SHARE};
use rtwhy_lab::noise::{self, Noise};
use rtwhy_lab::tweak::{restore_stale, JOURNAL_DIR};
use rtwhy_lab::{Load, Placement, Platform, Scenario, Setup, Stop, Tweaks, Victim};
use rtwhy_model::selftest::{ScenarioResult, Verdict};
use rtwhy_model::{human_duration, Cause, CpuList, Nanos};
use rtwhy_record::bpf::{AttachMode, BpfDetector, DetectorConfig};
use rtwhy_record::events::Preset;
use rtwhy_record::probe::ProbeConfig;
use rtwhy_record::session::{
    self, Armed, Capture, DetectorChoice, Observer, SessionConfig, SessionReport, Workload,
};
use rtwhy_record::tracefs::Tracefs;
use rtwhy_report::selftest;

use crate::analyze::analyze_file;
use crate::cli::{LabArgs, SelftestArgs, VictimArg};
use crate::irq_work;

/// Exit code after Ctrl-C.
const EXIT_INTERRUPTED: u8 = 130;

/// Who the victim of the timer scenarios is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimerVictim {
    Cyclictest,
    Probe,
}

/// Everything a scenario run needs that does not change between scenarios.
struct Bench {
    platform: Platform,
    cpu: u32,
    housekeeping: u32,
    victim: TimerVictim,
    interrupted: Arc<AtomicBool>,
    keep: Option<PathBuf>,
    work: PathBuf,
    exe: PathBuf,
    /// The victim CPU's own wake-up latency, measured before the scenarios.
    noise: Noise,
    /// `--stream-from`: the softirq scenario's sender.
    stream_from: Option<std::net::SocketAddr>,
}

impl Bench {
    /// How `s` is run and judged on this bench's CPU, above its measured noise.
    fn setup(&self, s: Scenario) -> Setup {
        s.setup_for(&self.platform, self.cpu, self.noise.p99)
    }

    /// Where a scenario's load runs on this bench, for the scenario's own length.
    fn placement(&self) -> Placement {
        Placement {
            cpu: self.cpu,
            housekeeping: self.housekeeping,
            scratch: rtwhy_lab::default_scratch_dir(),
            length: None,
            noise: self.noise.p99,
            stream_from: self.stream_from,
            normal_holder: false,
        }
    }
}

/// Measures the victim CPU's own wake-up latency ([`rtwhy_lab::noise`]): rtwhy's probe
/// thread at the victim's priority for [`noise::RUN`], nothing else loaded.
fn measure_noise(cpu: u32, interrupted: &AtomicBool) -> Result<Noise> {
    let probe = rtwhy_record::probe::Probe::start(&ProbeConfig {
        cpus: vec![cpu],
        interval: noise::INTERVAL,
        priority: noise::PRIORITY,
        // Every wake-up is a "breach": all of them are collected.
        threshold_ns: 0,
    })
    .context("cannot start the probe that measures the CPU's noise")?;
    let mut lat: Vec<u64> = Vec::new();
    let step = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while waited < noise::RUN && !interrupted.load(Ordering::Relaxed) {
        std::thread::sleep(step);
        waited += step;
        lat.extend(probe.breaches().iter().map(|b| b.latency_ns));
    }
    let stats = probe.stop();
    let max = stats.iter().map(|t| t.max_ns).max().unwrap_or(0);
    Ok(Noise::from_wakeups(lat, max))
}

pub fn run(args: &SelftestArgs) -> Result<ExitCode> {
    let interrupted = catch_signals();
    if !rtwhy_sys::is_root() {
        bail!("rtwhy selftest needs root: it records with tracefs and BPF and runs SCHED_FIFO loads (run it with sudo)");
    }
    for line in restore_stale(Path::new(JOURNAL_DIR))? {
        eprintln!("rtwhy: {line}");
    }
    let platform = Platform::from_facts(Path::new("/"), rtwhy_record::facts::snapshot());
    let cpu = match args.cpu {
        Some(c) => c,
        None => platform.online.iter().copied().max().unwrap_or(0),
    };
    if !platform.online.contains(&cpu) {
        bail!(
            "--cpu {cpu}: not an online CPU (online: {})",
            CpuList(platform.online.clone())
        );
    }
    if cpu == 0 {
        bail!("--cpu 0: the scenarios put SCHED_FIFO loads on the victim's CPU, never on CPU 0; this machine needs a second CPU");
    }
    let housekeeping = platform.housekeeping_for(cpu);
    let scenarios = pick_scenarios(&args.scenarios)?;
    let expect = parse_expect(&args.expect)?;
    let victim = match args.victim {
        VictimArg::Probe => TimerVictim::Probe,
        VictimArg::Cyclictest if find_in_path("cyclictest").is_none() => {
            bail!("--victim cyclictest: cyclictest is not installed (Debian: apt-get install rt-tests)")
        }
        VictimArg::Cyclictest => TimerVictim::Cyclictest,
        VictimArg::Auto => match find_in_path("cyclictest") {
            Some(_) => TimerVictim::Cyclictest,
            None => TimerVictim::Probe,
        },
    };
    let work = match &args.keep {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("rtwhy-selftest-{}", std::process::id())),
    };
    let noise = measure_noise(cpu, &interrupted)?;
    let bench = Bench {
        platform,
        cpu,
        housekeeping,
        victim,
        interrupted: interrupted.clone(),
        keep: args.keep.clone(),
        work: work.clone(),
        exe: std::env::current_exe().context("cannot find rtwhy's own executable")?,
        noise,
        stream_from: args.stream.stream_from,
    };
    let out = std::io::stdout();
    let mut out = out.lock();
    print_platform(&mut out, &bench)?;
    let mut rows = Vec::new();
    for s in scenarios {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        let expected = expect.get(&s).copied().unwrap_or(s.expected());
        let row = run_scenario(&bench, s, expected, args.attempts);
        rows.push(row);
    }
    if bench.keep.is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    out.write_all(selftest::table(&rows).as_bytes())?;
    out.write_all(selftest::summary(&rows).as_bytes())?;
    let was_interrupted = interrupted.load(Ordering::Relaxed)
        || rows.iter().any(|r| r.verdict == Verdict::Interrupted);
    if let Some(dir) = &bench.keep {
        writeln!(out, "captures kept in {}", dir.display())?;
    }
    if was_interrupted {
        writeln!(
            out,
            "interrupted: every load stopped and every setting restored"
        )?;
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(if rows.iter().any(|r| r.verdict.fails()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn pick_scenarios(names: &[String]) -> Result<Vec<Scenario>> {
    if names.is_empty() {
        return Ok(Scenario::ALL.to_vec());
    }
    names
        .iter()
        .map(|n| {
            Scenario::parse(n.trim()).ok_or_else(|| {
                anyhow!(
                    "--scenarios: unknown scenario {n:?}; known: {}",
                    Scenario::ALL.map(|s| s.name()).join(", ")
                )
            })
        })
        .collect()
}

fn parse_expect(items: &[String]) -> Result<BTreeMap<Scenario, Cause>> {
    items
        .iter()
        .map(|item| {
            let (s, c) = item.split_once('=').ok_or_else(|| {
                anyhow!("--expect {item:?}: write SCENARIO=CAUSE, e.g. preemption=softirq")
            })?;
            let s = Scenario::parse(s.trim())
                .ok_or_else(|| anyhow!("--expect {item:?}: unknown scenario {s:?}"))?;
            let c = Cause::parse(c.trim())
                .ok_or_else(|| anyhow!("--expect {item:?}: unknown cause {c:?}"))?;
            Ok((s, c))
        })
        .collect()
}

fn run_scenario(bench: &Bench, s: Scenario, expected: Cause, attempts: u32) -> ScenarioResult {
    let mut row = ScenarioResult {
        scenario: s.name(),
        expected,
        spikes: 0,
        diagnosis: "-".into(),
        verdict: Verdict::NoSpike,
        attempts: 0,
        shown: 0,
        worst_ns: 0,
        share: None,
    };
    let mut best: Option<ScenarioResult> = None;
    let mut measured = false;
    if let Err(why) = s.check(&bench.platform, bench.cpu) {
        row.verdict = Verdict::NotInducible(why);
        return row;
    }
    for attempt in 1..=attempts {
        row.attempts = attempt;
        row.shown = attempt;
        eprintln!(
            "rtwhy selftest: {} (attempt {attempt} of {attempts}): {}",
            s.name(),
            s.induces()
        );
        let dir = if attempt == 1 {
            bench.work.join(s.name())
        } else {
            bench.work.join(format!("{}-attempt{attempt}", s.name()))
        };
        match run_once(bench, s, &dir) {
            Ok(Attempt::Interrupted) => {
                row.verdict = Verdict::Interrupted;
                return row;
            }
            Ok(Attempt::NotInducible(why)) => {
                // Refused before anything ran: no attempt to show.
                row.attempts = 0;
                row.verdict = Verdict::NotInducible(why);
                return row;
            }
            Ok(Attempt::Done(spikes, worst)) => {
                let causes: Vec<Cause> = spikes.iter().map(|(c, _)| *c).collect();
                row.spikes = spikes.len();
                row.diagnosis = selftest::cause_counts(&causes);
                row.worst_ns = worst;
                row.share = (!spikes.is_empty()).then(|| expected_share(expected, &spikes));
                row.verdict = judge(expected, &spikes);
                eprintln!(
                    "rtwhy selftest: {} attempt {attempt}: {} spike(s) judged: {}; {} primary for {:.0}% of their latency",
                    s.name(),
                    row.spikes,
                    row.diagnosis,
                    expected.as_str(),
                    row.share.unwrap_or(0.0) * 100.0
                );
            }
            Err(e) => row.verdict = Verdict::Error(format!("{e:#}")),
        }
        if bench.keep.is_none() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        if !row.verdict.fails() {
            return row;
        }
        if matches!(row.verdict, Verdict::Fail | Verdict::NoSpike) && !measured {
            measured = true;
            if let Some(why) = irqs_too_short(bench, s) {
                row.verdict = Verdict::NotInducible(why);
                return row;
            }
        }
        if row.verdict == Verdict::Fail && best.as_ref().is_none_or(|b| b.share < row.share) {
            best = Some(row.clone());
        }
    }
    // Every attempt failed: the one that came nearest says most.
    match best {
        Some(b) => ScenarioResult {
            attempts: row.attempts,
            ..b
        },
        None => row,
    }
}

/// After a failed attempt of a scenario that drives device interrupts: why it cannot be
/// induced here when the interrupts' own work, measured with the load alone and weighed
/// against this CPU's measured noise, can be the main part of no more than
/// [`PASS_SHARE`] of the judged latency (see [`rtwhy_lab::irq_work::attainable_share`]); `None`
/// when it can be more (the failure stands) or could not be measured (said, and the
/// failure stands).
fn irqs_too_short(bench: &Bench, s: Scenario) -> Option<String> {
    let irqs = s.drives(&bench.platform, bench.cpu);
    if irqs.is_empty() {
        return None;
    }
    let named: Vec<String> = irqs
        .iter()
        .map(|i| format!("IRQ {} ({})", i.irq, i.name))
        .collect();
    let named = named.join(", ");
    eprintln!(
        "rtwhy selftest: {}: measuring how long the work of {named} lasts at a time on CPU {}, the load alone for {} s",
        s.name(),
        bench.cpu,
        irq_work::MEASURE_RUN.as_secs()
    );
    let at = bench.placement();
    let keep = bench.work.join(format!("{}-irqwork.txt", s.name()));
    let _ = std::fs::create_dir_all(&bench.work);
    let work = match irq_work::measure(&bench.platform, s, &at, &irqs, &bench.interrupted, &keep) {
        Ok(w) => w,
        Err(e) => {
            eprintln!(
                "rtwhy selftest: {}: the interrupts' work could not be measured: {e:#}",
                s.name()
            );
            return None;
        }
    };
    eprintln!(
        "rtwhy selftest: {}: {named} on CPU {}: {}",
        s.name(),
        bench.cpu,
        work.summary()
    );
    let threshold = bench.setup(s).threshold;
    let Some(share) =
        rtwhy_lab::irq_work::attainable_share(&work, &bench.noise.latencies, threshold)
    else {
        eprintln!(
            "rtwhy selftest: {}: nothing to weigh (no burst, or no wake-up of the noise measured)",
            s.name()
        );
        return None;
    };
    eprintln!(
        "rtwhy selftest: {}: weighed against this CPU's wake-up noise, {named} would be the main part of about {} of the latency judged from {}",
        s.name(),
        percent(share),
        human_duration(threshold.as_nanos() as u64)
    );
    if share > PASS_SHARE {
        return None;
    }
    Some(format!(
        "{named} works p99 {} at a time on CPU {} ({} bursts, the load alone for {} s); weighed against this CPU's own wake-up noise (p99 {}) it would be the main part of about {} of the latency judged from {}, and a pass needs more than {:.0}% (a threaded or PIO device's interrupt works longer)",
        human_duration(work.quantile(0.99)),
        bench.cpu,
        work.bursts.len(),
        irq_work::MEASURE_RUN.as_secs(),
        human_duration(bench.noise.p99.as_nanos() as u64),
        percent(share),
        human_duration(threshold.as_nanos() as u64),
        PASS_SHARE * 100.0,
    ))
}

/// "7%", or "0.4%" under ten.
fn percent(share: f64) -> String {
    if share < 0.1 {
        format!("{:.1}%", share * 100.0)
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

enum Attempt {
    /// The primary cause and latency of each of the victim's spikes, and the worst.
    Done(Vec<(Cause, u64)>, u64),
    NotInducible(String),
    Interrupted,
}

/// Starts the scenario's load once the recorder is armed, and keeps the captures.
struct Scene<'a> {
    bench: &'a Bench,
    scenario: Scenario,
    captures: Vec<PathBuf>,
    tweaks: Tweaks,
    load: Option<Load>,
    stop: Stop,
    load_error: Option<rtwhy_lab::LabError>,
}

impl Observer for Scene<'_> {
    fn armed(&mut self, _: &Armed) {
        if self.bench.setup(self.scenario).victim == Victim::LabHigh {
            // The load is the recorded command itself.
            return;
        }
        let at = self.bench.placement();
        match self.scenario.start(
            &self.bench.platform,
            &at,
            &mut self.tweaks,
            self.stop.clone(),
        ) {
            Ok(load) => self.load = load,
            Err(e) => self.load_error = Some(e),
        }
    }

    fn warning(&mut self, line: &str) {
        // lab-high writes its markers into the session's instances itself where the
        // kernel cannot copy them there (`own_markers`): the recorder's warning that they
        // are not seen does not hold for the selftest.
        if line.contains("copy_trace_marker")
            && self.bench.setup(self.scenario).victim == Victim::LabHigh
        {
            return;
        }
        eprintln!("rtwhy selftest: {}: warning: {line}", self.scenario.name());
    }

    fn captured(&mut self, c: &Capture, _so_far: &SessionReport) {
        self.captures.push(c.path.clone());
    }
}

/// The scenario's victim: what runs, its thread's name, and its command line as the
/// selftest's README prints it. cyclictest's own report goes into `dir`.
fn victim(
    bench: &Bench,
    s: Scenario,
    setup: &Setup,
    dir: &Path,
) -> Result<(Workload, String, String)> {
    let cpu = bench.cpu;
    let prio = s.victim_prio(&bench.platform, cpu);
    let threshold = setup.threshold.as_nanos() as u64;
    let run_secs = setup.run.as_secs().max(1);
    Ok(match setup.victim {
        Victim::Timer { interval_us } => match bench.victim {
            TimerVictim::Cyclictest => {
                let argv: Vec<String> = [
                    "cyclictest",
                    "-m",
                    "-p",
                    &prio.to_string(),
                    "-i",
                    &interval_us.to_string(),
                    "-a",
                    &cpu.to_string(),
                    "--mainaffinity",
                    &bench.housekeeping.to_string(),
                    "-t",
                    "1",
                    "-D",
                    &run_secs.to_string(),
                    "-q",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                let line = argv.join(" ");
                // cyclictest's own report goes beside the captures, not into the table.
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                let shell = format!(
                    "exec {line} > '{}' 2>&1",
                    dir.join("cyclictest.txt").display()
                );
                let argv = vec!["sh".to_string(), "-c".to_string(), shell];
                (Workload::Command(argv), "cyclictest".to_string(), line)
            }
            TimerVictim::Probe => (
                Workload::Probe(ProbeConfig {
                    cpus: vec![cpu],
                    interval: Duration::from_micros(interval_us),
                    priority: prio,
                    threshold_ns: threshold,
                }),
                format!("rtwhy-probe/{cpu}"),
                format!("rtwhy's probe, SCHED_FIFO {prio} on CPU {cpu}, every {interval_us} us"),
            ),
        },
        Victim::LabHigh => {
            let mut argv = vec![
                bench.exe.display().to_string(),
                "lab".into(),
                s.name().into(),
                "--cpu".into(),
                cpu.to_string(),
            ];
            // The load sizes itself above the noise as this selftest sized the threshold
            // (the inversions' critical section: twice the threshold on a noisy CPU).
            let noise = bench.noise.p99;
            if !noise.is_zero() {
                argv.extend(["--noise".into(), format!("{}us", noise.as_micros().max(1))]);
            }
            // Without options/copy_trace_marker (Linux 6.1) the session's instances do
            // not see the top-level marker that triggers the captures: lab-high writes
            // into theirs as well.
            if let Some(markers) = own_markers() {
                argv.splice(
                    0..0,
                    ["env".to_string(), format!("RTWHY_LAB_MARKER={markers}")],
                );
            }
            let line = format!("rtwhy lab {} --cpu {cpu}", s.name());
            (Workload::Command(argv), "lab-high".to_string(), line)
        }
    })
}

/// The recording session of one attempt: the selftest's capture windows and the
/// recorder kept on the housekeeping CPU, as `rtwhy record` records by default.
fn session_config(
    bench: &Bench,
    setup: &Setup,
    workload: Workload,
    dir: &Path,
) -> Result<SessionConfig> {
    let threshold = setup.threshold.as_nanos() as u64;
    let run_secs = setup.run.as_secs().max(1);
    Ok(SessionConfig {
        threshold_ns: threshold,
        before: Duration::from_millis(200),
        after: Duration::from_millis(5),
        buffer_kb: 4096,
        preset: Preset::Default,
        extra_events: Vec::new(),
        cpus: None,
        out_dir: dir.to_path_buf(),
        max_spikes: setup.max_spikes,
        min_gap: Duration::ZERO,
        duration: Some(match &workload {
            Workload::Probe(_) => Duration::from_secs(run_secs),
            // The command ends the session; this only bounds a command that hangs.
            Workload::Command(_) => Duration::from_secs(run_secs + 10),
        }),
        // A wait for a lock is not a late wake-up: lab-high's "got the lock" marker
        // triggers its captures, and the analysis measures the wait.
        markers: match setup.victim {
            Victim::LabHigh => vec![regex::Regex::new("inversion: high got the lock")?],
            Victim::Timer { .. } => Vec::new(),
        },
        detector: DetectorChoice::Auto,
        rt_only: true,
        workload,
        recorder_cpus: Some(vec![bench.housekeeping]),
        probe: rtwhy_record::timerlat::ProbeChoice::Rtwhy,
        // As `rtwhy record` records by default.
        lean: true,
        sched_events: rtwhy_record::session::SchedSource::Auto,
    })
}

/// One attempt at a scenario: the victim recorded under its load, the load stopped and
/// every setting restored whatever happened, then each capture analysed and judged.
fn run_once(bench: &Bench, s: Scenario, dir: &Path) -> Result<Attempt> {
    let setup = bench.setup(s);
    let threshold = setup.threshold.as_nanos() as u64;
    let cpu = bench.cpu;
    let (workload, victim_comm, command_line) = victim(bench, s, &setup, dir)?;
    let cfg = session_config(bench, &setup, workload, dir)?;
    let mut scene = Scene {
        bench,
        scenario: s,
        captures: Vec::new(),
        tweaks: Tweaks::new(Path::new(JOURNAL_DIR)),
        load: None,
        stop: Stop::default(),
        load_error: None,
    };
    let report = session::run(&cfg, &mut scene);
    // Spikes outside the load's run are the machine's own (the session records in
    // CLOCK_MONOTONIC or does not start; the load's times are in it too); lab-high's
    // spikes are all the scenario's.
    let runs = scene.load.as_ref().map(|l| l.runs());
    // Whatever happened, the load ends and the settings go back before anything else.
    let load_lines = match scene.load.take() {
        Some(load) => {
            if report.is_err() || bench.interrupted.load(Ordering::Relaxed) {
                load.stop();
            }
            load.wait()
        }
        None => Ok(Vec::new()),
    };
    for line in scene.tweaks.restore() {
        eprintln!("rtwhy: warning: {line}");
    }
    let report = report?;
    if bench.interrupted.load(Ordering::Relaxed) || report.ended_by.starts_with("interrupted") {
        return Ok(Attempt::Interrupted);
    }
    if let Some(e) = scene.load_error {
        return Ok(match e {
            rtwhy_lab::LabError::Refused(why) => Attempt::NotInducible(why),
            other => Attempt::NotInducible(format!("the load could not start: {other}")),
        });
    }
    let load_lines = load_lines.map_err(|e| anyhow!("the load failed: {e}"))?;
    if let Some(code) = report.child_exit.filter(|&c| c != 0) {
        bail!("the victim ({command_line}) exited with code {code}");
    }
    // Every capture is analysed for the victim, not only for its trigger: windows
    // overlap and a capture triggered by one thread often holds the victim's spike.
    let config = Config {
        threshold: Nanos(threshold),
        filter: TaskFilter {
            comms: vec![victim_comm.clone()],
            ..TaskFilter::default()
        },
        isolated: setup.declare_isolated.then(|| CpuList(vec![cpu])),
        ..Config::default()
    };
    let mut tally = Tally::default();
    for path in &scene.captures {
        let (analysis, _) = analyze_file(path, config.clone())
            .with_context(|| format!("cannot analyse the capture {}", path.display()))?;
        for spike in analysis.spikes.iter().filter(|s| s.cpu == cpu) {
            tally.add(spike, runs.as_ref(), threshold);
        }
    }
    let outside = tally.outside();
    if outside > 0 {
        eprintln!(
            "rtwhy selftest: {}: {} spike(s) of the victim before or after the load's run not judged (this machine's own latency above {})",
            s.name(),
            outside,
            human_duration(threshold)
        );
    }
    let Tallied {
        spikes,
        worst,
        machine,
    } = tally.tallied();
    if machine > 0 {
        eprintln!(
            "rtwhy selftest: {}: {machine} spike(s) of the victim during the load not judged: under {} once the time the CPU was stopped (or not recorded) is taken out, the machine's own",
            s.name(),
            human_duration(threshold)
        );
    }
    if bench.keep.is_some() {
        let ran = Ran {
            victim: &command_line,
            load: &load_lines,
            runs,
            outside,
            ended_by: &report.ended_by,
        };
        write_readme(bench, s, dir, &ran)?;
    }
    Ok(Attempt::Done(spikes, worst))
}

/// The trace markers `rtwhy lab` must write to itself for this process's session to see
/// them: the top-level one and the session's instances', where the kernel cannot copy
/// the top-level marker into instances; `None` where it can.
fn own_markers() -> Option<String> {
    let t = Tracefs::open().ok()?;
    let root = t.root();
    if root.join("options/copy_trace_marker").exists() {
        return None;
    }
    let (flight, watch) = session::instance_names(std::process::id());
    let paths = [
        root.join("trace_marker"),
        root.join("instances").join(flight).join("trace_marker"),
        root.join("instances").join(watch).join("trace_marker"),
    ];
    Some(
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
    )
}

/// What one attempt ran, for its README.
struct Ran<'a> {
    victim: &'a str,
    load: &'a [String],
    runs: Option<Range<u64>>,
    outside: usize,
    ended_by: &'a str,
}

/// A README stub beside kept captures: what was run where, for a person to complete
/// with the justification of the expected diagnosis from the trace's own events.
fn write_readme(bench: &Bench, s: Scenario, dir: &Path, ran: &Ran<'_>) -> Result<()> {
    let Ran {
        victim,
        load,
        runs,
        outside,
        ended_by,
    } = ran;
    let f = &bench.platform.facts;
    let setup = bench.setup(s);
    let mut t = String::new();
    t.push_str(&format!(
        "# {}: {}\n\nRecorded by `rtwhy selftest --keep` (rtwhy {}) with rtwhy's own recorder.\n\n",
        s.name(),
        s.induces(),
        env!("CARGO_PKG_VERSION")
    ));
    t.push_str("## Machine\n\n");
    t.push_str(&format!(
        "- kernel: `{}` `{}`, preempt={}\n- CPUs online: {}; isolated: {}\n- RT throttling: sched_rt_runtime_us={} of sched_rt_period_us={}\n\n",
        f.kernel_release.as_deref().unwrap_or("?"),
        f.kernel_version.as_deref().unwrap_or("?"),
        f.preempt_model().unwrap_or("?"),
        CpuList(bench.platform.online.clone()),
        if f.isolated.is_empty() { "none".to_string() } else { f.isolated.to_string() },
        f.rt_runtime_us.map_or("?".into(), |v| v.to_string()),
        f.rt_period_us.map_or("?".into(), |v| v.to_string()),
    ));
    t.push_str("## What ran\n\n");
    t.push_str(&format!(
        "- victim on CPU {}: `{victim}`\n- threshold: {}\n- rtwhy's threads and the load's helpers on CPU {}\n",
        bench.cpu,
        human_duration(setup.threshold.as_nanos() as u64),
        bench.housekeeping
    ));
    if setup.declare_isolated {
        t.push_str(&format!(
            "- CPU {} declared isolated for the analysis (`rtwhy analyze --isolated {}`)\n",
            bench.cpu, bench.cpu
        ));
    }
    for l in load.iter() {
        t.push_str(&format!("- load: {l}\n"));
    }
    if let Some(r) = runs {
        t.push_str(&format!(
            "- the load ran from {} to {} (CLOCK_MONOTONIC, the trace's clock); {outside} spike(s) of the victim outside that stretch were not judged\n",
            Nanos(r.start),
            Nanos(r.end)
        ));
    }
    t.push_str(&format!("- the session ended: {ended_by}\n\n"));
    t.push_str(&format!(
        "## Expected diagnosis: `{}`\n\nTO BE WRITTEN by a person after reading `trace-cmd report` of the capture: which spike, and the trace lines that show it is `{}` (see the other fixtures' READMEs).\n",
        s.expected(),
        s.expected()
    ));
    std::fs::write(dir.join("README.md"), t).with_context(|| format!("{}", dir.display()))?;
    Ok(())
}

/// What the selftest prints first: the machine's facts and what rtwhy can use of it,
/// probed here (tracefs, each BPF attach mode), and the bench.
fn print_platform(out: &mut impl Write, b: &Bench) -> Result<()> {
    let tracefs = match Tracefs::open() {
        Ok(t) => {
            let events = Preset::Default.events();
            let have = events
                .iter()
                .filter(|e| {
                    let (sys, ev) = e.split_once(':').unwrap_or(("", e));
                    if ev == "*" {
                        !t.events_of(sys).is_empty()
                    } else {
                        t.has_event(sys, ev)
                    }
                })
                .count();
            Ok((t.root().display().to_string(), have, events.len()))
        }
        Err(e) => Err(e.to_string()),
    };
    let bpf = AttachMode::ALL
        .iter()
        .map(|&m| {
            let cfg = DetectorConfig {
                force: Some(m),
                ..DetectorConfig::default()
            };
            (m.as_str(), BpfDetector::start(&cfg).is_ok())
        })
        .collect();
    let n = &b.noise;
    let bench = selftest::Bench {
        facts: &b.platform.facts,
        tracefs,
        bpf,
        cpu: b.cpu,
        housekeeping: b.housekeeping,
        noise: (
            n.p99.as_nanos() as u64,
            n.max.as_nanos() as u64,
            n.latencies.len(),
            noise::RUN.as_secs(),
        ),
        cpufreq: b.platform.has_cpufreq(b.cpu),
        victim: match b.victim {
            TimerVictim::Cyclictest => "cyclictest",
            TimerVictim::Probe => "rtwhy's probe",
        },
    };
    out.write_all(selftest::platform(&bench).as_bytes())?;
    Ok(())
}

/// SIGINT, SIGTERM and SIGHUP only set a flag for the whole selftest: every load is
/// stopped and every setting restored before rtwhy exits.
fn catch_signals() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// `rtwhy lab [SCENARIO]`: runs one load in the foreground (Ctrl-C stops it; settings
/// are restored either way), or lists the scenarios.
pub fn lab(args: &LabArgs) -> Result<ExitCode> {
    let Some(name) = &args.scenario else {
        let out = std::io::stdout();
        let mut out = out.lock();
        for s in Scenario::ALL {
            writeln!(out, "{:<35} {}", s.name(), s.induces())?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let s = Scenario::parse(name).ok_or_else(|| {
        anyhow!(
            "unknown scenario {name:?}; known: {}",
            Scenario::ALL.map(|s| s.name()).join(", ")
        )
    })?;
    let interrupted = catch_signals();
    // The lab's real-time threads must not take page faults, as a real-time application
    // locks its memory (cyclictest -m): in the guest, whose root is 9p, the first run of
    // lab-high's code after it got its lock faulted and blocked 0.3 ms before it wrote
    // the time it had measured, which then lay 1.4 ms after its measurement.
    if !rtwhy_sys::host::lock_memory() {
        eprintln!("rtwhy: mlockall refused: the lab's threads may take page faults");
    }
    let platform = Platform::from_facts(Path::new("/"), rtwhy_record::facts::snapshot());
    let housekeeping = platform.housekeeping_for(args.cpu);
    for line in restore_stale(Path::new(JOURNAL_DIR))? {
        eprintln!("rtwhy: {line}");
    }
    let at = Placement {
        cpu: args.cpu,
        housekeeping,
        scratch: args.scratch.clone(),
        length: args.length.map(|n| Duration::from_nanos(n.0)),
        noise: Duration::from_nanos(args.noise.map_or(0, |n| n.0)),
        stream_from: args.stream.stream_from,
        normal_holder: args.normal_holder,
    };
    let stop = Stop::new(interrupted.clone());
    let mut tweaks = Tweaks::new(Path::new(JOURNAL_DIR));
    let load = s
        .start(&platform, &at, &mut tweaks, stop.clone())
        .map_err(|e| anyhow!("{}: {e}", s.name()));
    let cycle = match (&load, args.cycle) {
        (Ok(l), Some(work)) => Some(start_cycle(args.cpu, work, &at, l.as_ref(), stop)),
        _ => None,
    };
    let mut lines = match load? {
        Some(l) => l.wait().map_err(|e| anyhow!("{}: {e}", s.name()))?,
        None => Vec::new(),
    };
    if let Some(c) = cycle {
        lines.extend(c?.wait().map_err(|e| anyhow!("cycle: {e}"))?);
    }
    let failed = tweaks.restore();
    let mut out = std::io::stdout().lock();
    for line in &lines {
        writeln!(out, "{line}")?;
    }
    if let Some(first) = failed.first() {
        bail!("{first}");
    }
    if interrupted.load(Ordering::Relaxed) {
        return Ok(ExitCode::from(EXIT_INTERRUPTED));
    }
    Ok(ExitCode::SUCCESS)
}

/// `lab-cycle` beside `load` (until it ends), computing `work` every five times that,
/// its budget the work plus twice the CPU's noise (at least 150 us).
fn start_cycle(
    cpu: u32,
    work: rtwhy_model::Nanos,
    at: &Placement,
    load: Option<&rtwhy_lab::Load>,
    stop: Stop,
) -> Result<rtwhy_lab::Load> {
    let work = Duration::from_nanos(work.0);
    if work.is_zero() || work > Duration::from_millis(100) {
        bail!("--cycle: the work must be between 1 us and 100 ms");
    }
    let now = rtwhy_sys::monotonic_ns();
    let length = load.map_or(Duration::from_secs(5), |l| {
        Duration::from_nanos(l.runs().end.saturating_sub(now))
    });
    let cfg = rtwhy_lab::load::cycle::Cycle {
        cpu,
        prio: 80,
        period: work * 5,
        work,
        budget: work + (at.noise * 2).max(Duration::from_micros(150)),
    };
    rtwhy_lab::load::cycle::start(
        cfg,
        Duration::ZERO,
        length.max(Duration::from_millis(1)),
        stop,
    )
    .map_err(|e| anyhow!("cycle: {e}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn expectations_parse_or_say_why() {
        let m = parse_expect(&["preemption=softirq".into()]).unwrap();
        assert_eq!(m[&Scenario::Preemption], Cause::Softirq);
        assert!(parse_expect(&["preemption".into()]).is_err());
        assert!(parse_expect(&["nope=softirq".into()]).is_err());
        assert!(pick_scenarios(&["bogus".into()])
            .unwrap_err()
            .to_string()
            .contains("known"));
    }
}
