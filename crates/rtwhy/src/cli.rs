//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tells real-time Linux users why their thread was late.
#[derive(Debug, Parser)]
#[command(name = "rtwhy", version = env!("RTWHY_LONG_VERSION"), about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every event of a trace.dat the way `trace-cmd report` does.
    Dump(DumpArgs),
    /// Print what a trace file says about itself: version, compression, clock, CPUs,
    /// kernel, event counts, time span.
    Info(InfoArgs),
    /// Find every latency spike in a trace and name its root cause, with evidence and a
    /// breakdown of every microsecond. Exit code 0: no spike, 1: spikes found, 2: error.
    Analyze(AnalyzeArgs),
    /// Inspect spikes on a terminal timeline: each CPU's tasks, IRQs and softirqs around
    /// the victim's wake-up, the diagnosis, and the raw events. `?` lists the keys.
    /// Exit code 0, or 2 when the input (or the terminal) cannot be used.
    Tui(TuiArgs),
    /// Flight-record the machine while a command (or rtwhy's own cyclic probe) runs, and
    /// save and diagnose a window around every latency breach. Needs root.
    /// Exit code: the command's when it failed, else 0 (no breach) or 1 (breaches), 2: error.
    Record(RecordArgs),
    /// Where a recording session stands (while it runs or after): captures per cause,
    /// those deleted to stay under --disk-budget, worst per thread, losses. Reads
    /// DIR/session.json. Exit code 0, 2: not a session directory.
    Summary(SummaryArgs),
    /// Remove tracefs instances left behind by a recorder that was killed, and put back
    /// settings a killed selftest or lab load left changed.
    Cleanup,
    /// Induce each latency cause on this machine (rtwhy-lab), record it, and check that
    /// rtwhy names it: does recording work on this kernel, and would rtwhy recognise the
    /// causes it claims to know? Needs root. Exit code 0: every scenario that could be
    /// induced here was diagnosed as expected; 1: one was not; 2: error; 130: Ctrl-C.
    Selftest(SelftestArgs),
    /// Run one rtwhy-lab load by hand, for a person recording it with `trace-cmd` or
    /// `rtwhy record`; without a scenario, list them. Needs root for most loads.
    Lab(LabArgs),
    /// Write a report to attach to a bug: Markdown, SVG timeline, Perfetto trace, JSON,
    /// or one .tar.gz bundle with the trace window. Exit code 0: written, 2: error.
    Report(ReportArgs),
    /// Audit this machine's real-time settings (PREEMPT_RT, isolation, IRQ affinities,
    /// RT throttling, governor, idle states...), each finding with evidence and the fix.
    /// Reads /proc, /sys and /boot only; root sees more. Exit code 0: no warning, 1: warnings or
    /// errors found, 2: could not run.
    Doctor(DoctorArgs),
    /// Write rtwhy's man pages (one per subcommand) or its shell completions, as a
    /// package or `make install` would lay them out. Exit code 0: written, 2: error.
    Generate(GenerateArgs),
    /// Convert a trace.dat to Perfetto's protobuf trace format (ui.perfetto.dev,
    /// trace_processor): every event in ftrace bundles per CPU, and rtwhy's spikes with
    /// their verdicts as slices on an `rtwhy` track. Streams in bounded memory.
    /// Exit code 0: written, 2: error (no output file is left behind).
    Convert(ConvertArgs),
}

#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// Text for people; the session's overview (every watched thread's wake-up
    /// histogram and its tail by cause) as one JSON document (docs/analysis-json.md);
    /// or those histograms drawn as one SVG picture (a panel per thread, the tail
    /// coloured by cause).
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text)]
    pub format: SummaryFormat,
    /// The session directory (`rtwhy record --out DIR`).
    pub dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GenerateWhat {
    /// `rtwhy.1`, `rtwhy-record.1`, ... (roff, for `man`).
    Man,
    /// `rtwhy.bash`, `_rtwhy` (zsh) and `rtwhy.fish`.
    Completions,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// What to write.
    #[arg(value_enum)]
    pub what: GenerateWhat,
    /// Directory to write into (created).
    #[arg(long, short, default_value = ".")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VictimArg {
    /// cyclictest where it is installed, else rtwhy's probe.
    Auto,
    /// Real cyclictest (rt-tests), SCHED_FIFO 80.
    Cyclictest,
    /// rtwhy's built-in cyclic probe, SCHED_FIFO 80.
    Probe,
}

#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// The CPU the victims run on and the loads disturb (default: the highest online
    /// CPU; never CPU 0). rtwhy and the loads' helpers run on another CPU.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Scenarios to run, comma-separated (default: all). `rtwhy lab` lists them.
    #[arg(long, value_delimiter = ',')]
    pub scenarios: Vec<String>,
    /// The victim of the timer scenarios.
    #[arg(long, value_enum, default_value_t = VictimArg::Auto)]
    pub victim: VictimArg,
    /// Tries per scenario before a verdict of fail (this machine's noise can hide a
    /// spike).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub attempts: u32,
    /// Keep every capture in this directory, one folder per scenario, each with a
    /// README stub (machine, kernel, command, load) for a person to complete.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Expect another cause of a scenario (`preemption=softirq`): for testing the
    /// selftest itself, whose verdict must then be fail.
    #[arg(long, value_name = "SCENARIO=CAUSE")]
    pub expect: Vec<String>,
    #[command(flatten)]
    pub stream: StreamArg,
}

/// `--stream-from`, shared by `rtwhy selftest` and `rtwhy lab`.
#[derive(Debug, Args)]
pub struct StreamArg {
    /// A TCP server on another machine that sends continuously (for example
    /// `scripts/stream-source.py --port PORT` there), reached through the network card
    /// whose receive interrupt the softirq scenario moves to the victim's CPU: its stream
    /// is then that scenario's load instead of datagrams sent from here.
    #[arg(long, value_name = "ADDR:PORT")]
    pub stream_from: Option<std::net::SocketAddr>,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    /// The scenario whose load to run (`rtwhy lab` without one lists them).
    pub scenario: Option<String>,
    /// The CPU to disturb (never CPU 0 for SCHED_FIFO loads).
    #[arg(long, default_value_t = 1)]
    pub cpu: u32,
    /// How long the load runs (at most 10 s; default: the scenario's own length).
    #[arg(long = "for", value_parser = parse_span)]
    pub length: Option<rtwhy_model::Nanos>,
    /// The CPU's noise p99 as `rtwhy selftest` measured it (its table's `noise` line):
    /// loads sized above the noise (a NIC's NET_RX runs, for one) are then sized as the
    /// selftest sizes them. Default: no noise.
    #[arg(long, value_parser = parse_span)]
    pub noise: Option<rtwhy_model::Nanos>,
    /// Also run `lab-cycle` on the CPU beside the load: a SCHED_FIFO 80 control loop
    /// that computes this much run time every five times as long and writes its own
    /// cycle's response time to the trace (`lab: cycle: response N us, budget B us`)
    /// when it exceeds the work by more than twice the noise (at least 150 us). Up to
    /// 100 ms.
    #[arg(long, value_parser = parse_span, value_name = "WORK")]
    pub cycle: Option<rtwhy_model::Nanos>,
    /// The lock scenarios' holder, `lab-low`, is a normal task (SCHED_OTHER, nice 0)
    /// instead of FIFO 10: with `lock_contention` the kernel boosts it to the waiter's
    /// FIFO 80 while it holds the lock.
    #[arg(long)]
    pub normal_holder: bool,
    /// Directory on a block device for the disk-interrupt scenario's scratch file.
    #[arg(long, default_value = "/var/tmp")]
    pub scratch: PathBuf,
    #[command(flatten)]
    pub stream: StreamArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DetectorArg {
    /// eBPF where the kernel allows it, else the tracefs-only detector.
    Auto,
    /// eBPF only (an error where it cannot load).
    Bpf,
    /// The tracefs-only detector (no BPF).
    Tracefs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeArg {
    /// The kernel's timerlat tracer where it exists, else rtwhy's own probe.
    Auto,
    /// The kernel's timerlat tracer (an error where the kernel lacks it).
    Timerlat,
    /// rtwhy's own cyclic probe threads.
    Rtwhy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetArg {
    /// Scheduling, interrupts, timer expiry.
    Minimal,
    /// Everything the analyzer uses.
    Default,
    /// Whole sched, irq, timer, ipi, workqueue, power systems.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OtherCpusArg {
    /// Only what the analysis uses from them.
    Lean,
    /// Every enabled event.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchedEventsArg {
    /// `bpf` where the BPF detector runs (tp_btf or raw_tp), else `tracefs`.
    Auto,
    /// The BPF detector's programs keep them (no tracefs probe on the CPUs not recorded).
    Bpf,
    /// The flight instance's sched_switch, sched_waking and sched_wakeup events.
    Tracefs,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Latency that counts as a breach (`100us`, `1ms`; a bare number is us).
    #[arg(long, short = 't', default_value = "100us", value_parser = parse_threshold)]
    pub threshold: rtwhy_model::Nanos,
    /// Recording kept before each breach.
    #[arg(long, default_value = "200ms", value_parser = parse_span)]
    pub before: rtwhy_model::Nanos,
    /// Recording kept after each breach.
    #[arg(long, default_value = "5ms", value_parser = parse_span)]
    pub after: rtwhy_model::Nanos,
    /// Trace only these CPUs (`1-3,5`); default all.
    #[arg(long, value_parser = parse_cpu_list)]
    pub cpus: Option<rtwhy_model::CpuList>,
    /// What to record on the CPUs no measured thread may run on: `lean` leaves out the
    /// wake-ups and migrations of ordinary tasks among those CPUs (nothing in the
    /// analysis reads them; their flight buffers then hold about three times the
    /// history under a task-switching load); `full` records everything there too.
    #[arg(long, value_enum, default_value_t = OtherCpusArg::Lean, value_name = "HOW")]
    pub other_cpus: OtherCpusArg,
    /// Where the context switches and wake-ups come from: `bpf` (the BPF detector's
    /// programs keep them per CPU and each capture gets them as sched_switch and
    /// sched_waking records; sched_wakeup is not recorded) or `tracefs` (the flight
    /// instance's events). With `bpf` a CPU left out by --cpus pays no tracefs probe
    /// for them, and no switch is lost where ftrace drops some (idle-to-task switches on
    /// some kernels). `auto`: `bpf` where the BPF detector runs in its tp_btf or raw_tp
    /// mode.
    #[arg(long, value_enum, default_value_t = SchedEventsArg::Auto, value_name = "FROM")]
    pub sched_events: SchedEventsArg,
    /// Output directory (default `./rtwhy-YYYYmmdd-HHMMSS`).
    #[arg(long, short = 'o', conflicts_with = "state_dir")]
    pub out: Option<PathBuf>,
    /// A recorder's state directory (the systemd unit's `/var/lib/rtwhy/NAME`): the
    /// session records into a new `DIR/rtwhy-YYYYmmdd-HHMMSS`, and --disk-budget bounds
    /// DIR as a whole, every session in it: the captures of older sessions go first
    /// (the mildest first, the worst of each cause last), their session.json and
    /// overview.json stay. `rtwhy summary DIR` and `rtwhy report DIR` cover them all.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// End the session after this many captures; 0: never (for a recorder left running
    /// for days: bound its disk with --disk-budget).
    #[arg(long, default_value_t = 100)]
    pub max_spikes: u32,
    /// Keep the session directory under this size (`500M`, `2G`): when a new capture
    /// goes over it, the least severe captures are deleted (the worst of each cause is
    /// kept longest) and counted in session.json. Default: no bound.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub disk_budget: Option<u64>,
    /// At most one capture per this span (`1s`, `1m`): breaches closer to the previous
    /// capture are counted, not saved, so a storm of breaches gives one capture and a
    /// count. Default: no limit.
    #[arg(long, value_parser = parse_span, default_value = "0s", value_name = "SPAN")]
    pub min_gap: rtwhy_model::Nanos,
    /// End the session after this long (`30s`, `10m`, `2h`).
    #[arg(long, value_parser = parse_span)]
    pub duration: Option<rtwhy_model::Nanos>,
    /// Also treat `trace_marker` lines matching this regular expression as breaches
    /// (e.g. 'hit latency threshold' for cyclictest --tracemark). Repeatable. A group
    /// named for its unit (`late by (?P<us>[0-9]+) us`; ns, us or ms) makes its number
    /// the application's own latency: each capture's spike for the marker is that long,
    /// ending at the marker (the capture keeps the expression, so a later `rtwhy
    /// analyze` of it reads the number too).
    #[arg(long)]
    pub marker: Vec<String>,
    /// Event set.
    #[arg(long, value_enum, default_value_t = PresetArg::Default)]
    pub preset: PresetArg,
    /// More events, `system:event` or `system:*`, comma-separated or repeated.
    #[arg(long, value_delimiter = ',')]
    pub events: Vec<String>,
    /// Flight-recorder buffer per CPU, in KiB.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=1_048_576))]
    pub buffer_kb: u64,
    /// Breach detector.
    #[arg(long, value_enum, default_value_t = DetectorArg::Auto)]
    pub detector: DetectorArg,
    /// Measure SCHED_OTHER threads too (default: SCHED_FIFO/RR threads only).
    #[arg(long)]
    pub all_policies: bool,
    /// Without a command: run rtwhy's cyclic probe on these CPUs (default: the isolated
    /// CPUs, else all).
    #[arg(long, value_parser = parse_cpu_list)]
    pub probe_cpus: Option<rtwhy_model::CpuList>,
    /// Without a command, what measures: the kernel's timerlat tracer (as rtla
    /// timerlat) where the kernel has it, or rtwhy's own probe threads.
    #[arg(long, value_enum, default_value_t = ProbeArg::Auto)]
    pub probe: ProbeArg,
    /// The probe's period.
    #[arg(long, default_value = "1ms", value_parser = parse_span)]
    pub interval: rtwhy_model::Nanos,
    /// The probe's SCHED_FIFO priority.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(i32).range(1..=99))]
    pub probe_priority: i32,
    /// CPUs for rtwhy's own threads (default: the CPUs that are not isolated, when some
    /// are). The command keeps its own affinity.
    #[arg(long, value_parser = parse_cpu_list)]
    pub recorder_cpus: Option<rtwhy_model::CpuList>,
    /// The command to run and follow (all its threads and children), after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Print raw fields (`name=value`) like `trace-cmd report -R` instead of each
    /// event's print format.
    #[arg(long, short = 'R')]
    pub raw: bool,
    /// The trace.dat file (version 6 or 7).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub opts: AnalysisOpts,
    /// Where to write the Perfetto trace (default: FILE with the extension
    /// `.perfetto-trace`). Written under a temporary name and renamed when complete.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Leave rtwhy's analysis out: only the trace's events.
    #[arg(long)]
    pub no_spikes: bool,
    /// Convert what can be read from a damaged trace (truncated, corrupt pages or
    /// chunks), with a warning for what was skipped. Without it, a trace whose events
    /// cannot all be read is an error and nothing is written.
    #[arg(long)]
    pub keep_going: bool,
    /// The trace.dat file (version 6 or 7).
    pub file: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// Aligned text for people.
    Text,
    /// The overview as one JSON document.
    Json,
    /// The wake-up histograms as one SVG picture.
    Svg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InfoFormat {
    /// Aligned text for people.
    Text,
    /// One JSON object for scripts.
    Json,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = InfoFormat::Text)]
    pub format: InfoFormat,
    /// The trace: a trace.dat (version 6 or 7) or `trace-cmd report` text.
    pub file: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormat {
    /// One block per spike for people: verdict, breakdown, evidence, fix.
    Text,
    /// The `rtwhy.analysis/2` JSON document (docs/analysis-json.md).
    Json,
    /// Markdown for a bug report or a wiki.
    Markdown,
}

/// What counts as a spike, shared by `analyze`, `tui` and `report`.
#[derive(Debug, Args)]
pub struct AnalysisOpts {
    /// Latency above which a wake-up is a spike (`100us`, `2ms`; a bare number is us).
    #[arg(long, short = 't', default_value = "100us", value_parser = parse_threshold)]
    pub threshold: rtwhy_model::Nanos,
    /// Only the real-time threads of these processes (thread id of the main thread;
    /// threads and children it creates in the trace are included). Repeat or separate
    /// with commas.
    #[arg(long, value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Only these threads, whatever their policy (a SCHED_OTHER thread is measured too).
    /// Repeat or separate with commas.
    #[arg(long, value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Only real-time threads with this name (as the kernel shows it). Repeat or separate
    /// with commas.
    #[arg(long, value_delimiter = ',')]
    pub comm: Vec<String>,
    /// Every thread's spikes: kernel threads (ktimers, rcuc, irq/N, ksoftirqd,
    /// migration...) and normal tasks too. By default the victims are the user-space
    /// real-time threads, and the threads a marker names.
    #[arg(long)]
    pub all: bool,
    /// Treat these CPUs as isolated (`1-3,5`), whatever the recording says.
    #[arg(long, value_parser = parse_cpu_list)]
    pub isolated: Option<rtwhy_model::CpuList>,
    /// The application's own marker, as cyclictest's `hit latency threshold (X > Y)`
    /// (read without this): a regular expression for its `trace_marker` line with the
    /// latency it measured in a group named for the unit (ns, us or ms), e.g.
    /// `cycle took (?P<us>[0-9]+) us`. Its spike is that long, ending at the marker, and
    /// is listed first. Repeatable.
    #[arg(long, value_parser = parse_marker)]
    pub marker: Vec<rtwhy_analyze::MarkerRule>,
}

impl AnalysisOpts {
    /// The analyzer's configuration.
    pub fn config(&self) -> rtwhy_analyze::Config {
        rtwhy_analyze::Config {
            threshold: self.threshold,
            filter: rtwhy_analyze::TaskFilter {
                pids: self.pid.clone(),
                tids: self.tid.clone(),
                comms: self.comm.clone(),
                all: self.all,
            },
            isolated: self.isolated.clone(),
            markers: self.marker.clone(),
            ..rtwhy_analyze::Config::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub opts: AnalysisOpts,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,
    /// The trace: a trace.dat (version 6 or 7) or `trace-cmd report` text.
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub opts: AnalysisOpts,
    /// Keep watching the session directory and add each new capture as it arrives (run
    /// beside `rtwhy record --out DIR`); the directory may still be empty.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// A trace.dat (version 6 or 7), `trace-cmd report` text, or an `rtwhy record`
    /// session directory (every spike-NNN.dat in it).
    pub path: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown for a bug report: system, verdict, breakdown, trace lines, fix.
    Markdown,
    /// The `rtwhy.analysis/2` JSON document of `rtwhy analyze` (docs/analysis-json.md).
    Json,
    /// The text of `rtwhy analyze`.
    Text,
    /// An SVG timeline of one spike's window (the worst unless `--spike` says).
    Svg,
    /// Chrome/Perfetto trace-event JSON of the spike windows (ui.perfetto.dev).
    Perfetto,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub opts: AnalysisOpts,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
    pub format: ReportFormat,
    /// Only spike N (numbered as `rtwhy analyze` numbers them). Default: every spike
    /// for `json` and `text`, the 10 worst for `markdown`, `perfetto` and `--bundle`,
    /// the worst for `svg`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub spike: Option<u32>,
    /// Write one .tar.gz for a bug: the trace window as trace.dat, the Markdown, an SVG
    /// per spike, the JSON and the Perfetto trace (`--format` is ignored).
    #[arg(long)]
    pub bundle: bool,
    /// Make the report safe to post in public: kernel addresses become tokens keyed
    /// per report, the trace window keeps only the symbols its events name (at made-up
    /// addresses), the kernel command line keeps only isolation, preemption, RT, idle
    /// and IRQ parameters, host and user names, IP and MAC addresses, UUIDs and home
    /// paths are replaced, and tasks that play no part in a shown spike become `task-N`.
    #[arg(long)]
    pub redact: bool,
    /// Write here instead of standard output (`--bundle`: default
    /// `NAME.rtwhy-report.tar.gz` in the current directory). Written whole or not at all.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// For a recording session (or state directory): another, recorded before a change
    /// (did moving the IRQ off the isolated CPU remove the tail?); both wake-up latency
    /// distributions side by side, per thread.
    #[arg(long, value_name = "DIR")]
    pub baseline: Option<PathBuf>,
    /// The trace: a capture or trace.dat (version 6 or 7) or `trace-cmd report` text;
    /// or a recording session's directory, or a recorder's state directory.
    pub file: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    /// One line per check, with evidence and the fix where something is wrong.
    Text,
    /// The `rtwhy.doctor/1` JSON document.
    Json,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = DoctorFormat::Text)]
    pub format: DoctorFormat,
    /// Audit the `proc/`, `sys/` and `boot/` tree under this directory instead of this
    /// machine (a copy from another machine; tests).
    #[arg(long)]
    pub root: Option<PathBuf>,
}

fn parse_marker(s: &str) -> Result<rtwhy_analyze::MarkerRule, String> {
    rtwhy_analyze::MarkerRule::new(s)
}

fn parse_threshold(s: &str) -> Result<rtwhy_model::Nanos, String> {
    match rtwhy_analyze::parse_duration(s) {
        Some(n) if n.0 > 0 => Ok(n),
        Some(_) => Err("the threshold must be above zero".to_string()),
        None => Err(format!(
            "`{s}` is not a duration; use a number with a unit: 100us, 2ms, 1.5ms"
        )),
    }
}

/// A duration with a unit: ns, us, ms, s, m, h.
fn parse_span(s: &str) -> Result<rtwhy_model::Nanos, String> {
    let t = s.trim();
    let scaled = |suffix: &str, factor: u64| {
        t.strip_suffix(suffix)
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| n.checked_mul(factor))
            .map(rtwhy_model::Nanos)
    };
    scaled("m", 60_000_000_000)
        .or_else(|| scaled("h", 3_600_000_000_000))
        .or_else(|| rtwhy_analyze::parse_duration(t).filter(|_| t != "m"))
        .ok_or_else(|| format!("`{s}` is not a duration; use a number with a unit: 5ms, 30s, 10m"))
}

/// A size in bytes, with an optional binary unit: `800K`, `500M`, `2G` (also `MiB`, `MB`).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => u32::MAX,
    };
    n.parse::<u64>()
        .ok()
        .filter(|_| shift != u32::MAX)
        .and_then(|n| n.checked_mul(1u64 << shift.min(40)))
        .ok_or_else(|| format!("`{s}` is not a size; write it like 800K, 500M or 2G"))
}

fn parse_cpu_list(s: &str) -> Result<rtwhy_model::CpuList, String> {
    rtwhy_model::CpuList::parse(s)
        .ok_or_else(|| format!("`{s}` is not a CPU list; write it like 1-3,5"))
}
