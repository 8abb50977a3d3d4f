//! `rtwhy dump`: events in `trace-cmd report` (or `-R`) line format.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{bail, Result};
use rtwhy_decode::input::{self, Header, Item, LinePrinter, Raw, Sink};

use crate::cli::DumpArgs;

/// Prints every record of a trace.dat as trace-cmd does.
struct DumpSink<W: Write> {
    out: W,
    raw: bool,
    printer: Option<LinePrinter>,
    line: String,
}

impl<W: Write> Sink for DumpSink<W> {
    type Error = anyhow::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        let Some(file) = header.trace_dat else {
            bail!(
                "{} is report text already; `rtwhy dump` prints trace.dat files (use `rtwhy info` to read text)",
                header.path.display()
            );
        };
        writeln!(self.out, "cpus={}", file.info().cpus)?;
        self.printer = Some(LinePrinter::new(header));
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let (Some(lp), Raw::Record { record, buffer }) = (self.printer.as_mut(), &item.raw) else {
            return Ok(true);
        };
        let Some(printer) = lp.printer() else {
            return Ok(true);
        };
        self.line.clear();
        printer.set_instance(buffer);
        if self.raw {
            printer.write_raw(record, &mut self.line);
        } else {
            printer.write_report(record, &mut self.line);
        }
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        Ok(true)
    }
}

pub fn run(args: &DumpArgs) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut sink = DumpSink {
        out: BufWriter::with_capacity(1 << 16, stdout.lock()),
        raw: args.raw,
        printer: None,
        line: String::with_capacity(512),
    };
    let end = input::read(&args.file, &mut sink)?;
    sink.out.flush()?;
    for w in &end.warnings {
        eprintln!("rtwhy: warning: {}: {w}", args.file.display());
    }
    Ok(ExitCode::SUCCESS)
}
