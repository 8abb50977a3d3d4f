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
