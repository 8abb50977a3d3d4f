//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Tells real-time Linux users why their thread was late.
#[derive(Debug, Parser)]
#[command(name = "rtwhy", version, about, long_about = None)]
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
    /// The `rtwhy.analysis/1` JSON document (docs/analysis-json.md).
    Json,
    /// Markdown for a bug report or a wiki.
    Markdown,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
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
    /// Treat these CPUs as isolated (`1-3,5`), whatever the recording says.
    #[arg(long, value_parser = parse_cpu_list)]
    pub isolated: Option<rtwhy_model::CpuList>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AnalyzeFormat::Text)]
    pub format: AnalyzeFormat,
    /// The trace: a trace.dat (version 6 or 7) or `trace-cmd report` text.
    pub file: PathBuf,
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

fn parse_cpu_list(s: &str) -> Result<rtwhy_model::CpuList, String> {
    rtwhy_model::CpuList::parse(s)
        .ok_or_else(|| format!("`{s}` is not a CPU list; write it like 1-3,5"))
}
