//! `rtwhy`: tells real-time Linux users why their thread was late.

mod analyze;
mod cli;
mod convert;
mod doctor;
mod dump;
mod generate;
mod info;
mod irq_work;
mod journal;
mod record;
mod render;
mod report;
mod selftest;
mod stdin;
mod tui;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

/// Exit code for usage and input errors.
const EXIT_INPUT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line: what was wrong and how to fix it; `--help` has the rest.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("rtwhy: error: {first} (see `rtwhy --help`)");
            return ExitCode::from(EXIT_INPUT_ERROR);
        }
    };
    let mut args = args;
    // `-` (and any path readable only once) is spooled to a temporary copy first.
    let spooled = match &mut args.command {
        cli::Command::Dump(a) => stdin::take(&mut a.file),
        cli::Command::Info(a) => stdin::take(&mut a.file),
        cli::Command::Analyze(a) => stdin::take(&mut a.file),
        cli::Command::Report(a) => stdin::take(&mut a.file),
        cli::Command::Convert(a) => stdin::take(&mut a.file),
        _ => Ok(None),
    };
    let _spool = match spooled {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rtwhy: error: {}", message(&e));
            return ExitCode::from(EXIT_INPUT_ERROR);
        }
    };
    let result = match args.command {
        cli::Command::Dump(a) => dump::run(&a),
        cli::Command::Info(a) => info::run(&a),
        cli::Command::Analyze(a) => analyze::run(&a),
        cli::Command::Tui(a) => tui::run(&a),
        cli::Command::Record(a) => record::run(&a),
        cli::Command::Cleanup => record::cleanup(),
        cli::Command::Selftest(a) => selftest::run(&a),
        cli::Command::Lab(a) => selftest::lab(&a),
        cli::Command::Report(a) => report::run(&a),
        cli::Command::Doctor(a) => doctor::run(&a),
        cli::Command::Generate(a) => generate::run(&a),
        cli::Command::Convert(a) => convert::run(&a),
        cli::Command::Summary(a) => record::summary(&a),
    };
    match result {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("rtwhy: error: {}", message(&e));
            ExitCode::from(EXIT_INPUT_ERROR)
        }
    }
}

/// An error and its causes on one line, naming a spooled input as the user gave it.
fn message(e: &anyhow::Error) -> String {
    let mut msg = format!("{e}");
    for cause in e.chain().skip(1) {
        // Library errors often print their source already ("{path}: {source}").
        let cause = cause.to_string();
        if !msg.ends_with(&cause) {
            msg.push_str(&format!(": {cause}"));
        }
    }
    stdin::unalias(&msg)
}

/// `rtwhy dump x | head` closes the pipe early; that is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let io = c.downcast_ref::<std::io::Error>().map(std::io::Error::kind);
        // JSON written straight to stdout fails inside serde_json.
        let json = c
            .downcast_ref::<serde_json::Error>()
            .and_then(serde_json::Error::io_error_kind);
        io.or(json) == Some(std::io::ErrorKind::BrokenPipe)
    })
}
