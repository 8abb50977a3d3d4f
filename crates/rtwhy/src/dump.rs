//! `rtwhy dump`: events in `trace-cmd report` (or `-R`) line format.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_decode::print::Printer;

use crate::cli::DumpArgs;
use crate::input::{self, Input};

pub fn run(args: &DumpArgs) -> Result<ExitCode> {
    let file = match input::open(&args.file)? {
        Input::TraceDat(f) => f,
        Input::Text => bail!(
            "{} is report text already; `rtwhy dump` prints trace.dat files (use `rtwhy info` to read text)",
            args.file.display()
        ),
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    writeln!(out, "cpus={}", file.info().cpus)?;
    let meta = file.meta();
    let mut printer = Printer::new(meta);
    let mut records = file.records()?;
    let mut line = String::with_capacity(512);
    while records.advance()? {
        printer.set_instance(records.buffer_name());
        let Some(rec) = records.current() else { break };
        line.clear();
        if args.raw {
            printer.write_raw(&rec, &mut line);
        } else {
            printer.write_report(&rec, &mut line);
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    for w in file.warnings().iter().chain(records.warnings()) {
        eprintln!("rtwhy: warning: {}: {w}", args.file.display());
    }
    Ok(ExitCode::SUCCESS)
}
