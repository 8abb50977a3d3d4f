//! `rtwhy dump`: events in `trace-cmd report` (or `-R`) line format.
//!
//! The records are read on the calling thread and printed on another, in order: reading
//! (pages, the merge of the CPUs by time) and printing each cost about half the time.

use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use rtwhy_decode::input::{self, Header, Item, Raw, Sink};
use rtwhy_decode::print::{Hole, Line, Printer};
use rtwhy_decode::TraceMeta;

use crate::cli::DumpArgs;
use rtwhy_decode::handoff::{Copied, Handoff, RecordCopier, RecordNames, Records};

/// Records per batch handed to the printing thread.
const BATCH_RECORDS: usize = 4096;

#[derive(Default)]
struct Batch {
    records: Records,
    copied: Vec<Copied>,
}

/// The printing thread: trace-cmd's printer and where its lines go.
struct Lines {
    printer: Printer,
    raw: bool,
    names: RecordNames,
    /// The buffer number of the last record printed.
    buffer: Option<usize>,
    out: BufWriter<std::io::Stdout>,
    text: Line,
    /// Text printed while the kernel symbols were still being read, with the function
    /// names left out of it (see [`Printer::defer_symbols`]), and its size.
    pending: Vec<(Line, Vec<Hole>)>,
    pending_bytes: usize,
    /// The write that failed (a closed pipe, a full disk); printing stops there.
    failed: Option<std::io::Error>,
}

impl Lines {
    /// Prints `batch` and empties it; false once writing failed.
    fn take(&mut self, batch: &mut Batch) -> bool {
        self.names.learn(&mut batch.records);
        let meta = self.printer.meta().clone();
        self.text.clear();
        for c in &batch.copied {
            let (record, buffer) = self.names.get(&batch.records, c, &meta);
            // Runs of records from one buffer: the printer is told when it changes.
            if self.buffer != Some(c.buffer) {
                self.buffer = Some(c.buffer);
                self.printer.set_instance(buffer);
            }
            if self.raw {
                self.printer.write_raw_line(&record, &mut self.text);
            } else {
                self.printer.write_report_line(&record, &mut self.text);
            }
            self.text.push('\n');
        }
        batch.copied.clear();
        batch.records.clear();
        let holes = self.printer.take_holes();
        if holes.is_empty() && self.pending.is_empty() {
            let text = std::mem::take(&mut self.text);
            let ok = self.write(&text);
            self.text = text;
            return ok;
        }
        self.pending_bytes += self.text.len();
        let text = std::mem::replace(&mut self.text, Line::with_capacity(TEXT_CAPACITY));
        self.pending.push((text, holes));
        if self.printer.symbols_ready() || self.pending_bytes > PENDING_MAX {
            return self.flush_pending();
        }
        true
    }

    /// Writes the text held back, with the function names filled in (waiting for the
    /// symbols if need be); false once writing failed.
    fn flush_pending(&mut self) -> bool {
        self.pending_bytes = 0;
        for (text, holes) in std::mem::take(&mut self.pending) {
            let ok = if holes.is_empty() {
                self.write(&text)
            } else {
                self.write(&self.printer.fill_holes(&text, &holes))
            };
            if !ok {
                return false;
            }
        }
        true
    }

    fn write(&mut self, text: &Line) -> bool {
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            self.failed = Some(e);
            return false;
        }
        true
    }
}

/// The printing thread's text buffer, reused batch after batch.
const TEXT_CAPACITY: usize = 1 << 20;

/// Text held back while the symbols are read: at most this much, then printing waits.
const PENDING_MAX: usize = 16 << 20;

/// Prints every record of a trace.dat as trace-cmd does.
struct DumpSink {
    raw: bool,
    thread: Option<Handoff<Batch, Lines>>,
    batch: Batch,
    copier: RecordCopier,
    /// The file's metadata, whose kallsyms the printing thread may read after the last
    /// record was read.
    meta: Option<Arc<TraceMeta>>,
}

impl Sink for DumpSink {
    type Error = anyhow::Error;

    /// Raw lines name a function only in a few events' print formats (`%pS`): their
    /// symbols are read from the first such line on, not for every file.
    fn read_symbols_ahead(&self) -> bool {
        !self.raw
    }

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        let Some(file) = header.trace_dat else {
            bail!(
                "{} is report text already; `rtwhy dump` prints trace.dat files (use `rtwhy info` to read text)",
                crate::stdin::shown(header.path)
            );
        };
        let mut out = BufWriter::with_capacity(1 << 16, std::io::stdout());
        writeln!(out, "cpus={}", file.info().cpus)?;
        let Some(meta) = header.meta.clone() else {
            out.flush()?;
            return Ok(true);
        };
        self.meta = Some(meta.clone());
        let mut printer = Printer::new(meta);
        printer.defer_symbols(self.raw);
        let lines = Lines {
            printer,
            raw: self.raw,
            names: RecordNames::default(),
            buffer: None,
            out,
            text: Line::with_capacity(TEXT_CAPACITY),
            pending: Vec::new(),
            pending_bytes: 0,
            failed: None,
        };
        self.thread = Some(Handoff::spawn(
            "rtwhy-print",
            "the printing thread",
            lines,
            Lines::take,
        )?);
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let Raw::Record { record, buffer } = &item.raw else {
            return Ok(true);
        };
        let copied = self
            .copier
            .copy(&mut self.batch.records, record, buffer, true);
        self.batch.copied.push(copied);
        if self.batch.copied.len() >= BATCH_RECORDS {
            if let Some(t) = &self.thread {
                // A printing thread that stopped has its reason; stop reading.
                return Ok(t.send(&mut self.batch));
            }
        }
        Ok(true)
    }
}

pub fn run(args: &DumpArgs) -> Result<ExitCode> {
    let mut sink = DumpSink {
        raw: args.raw,
        thread: None,
        batch: Batch::default(),
        copier: RecordCopier::default(),
        meta: None,
    };
    let read = input::read(&args.file, &mut sink);
    // The printing thread ends whether or not the reading did.
    let printed = match sink.thread.take() {
        Some(t) => Some(t.finish(std::mem::take(&mut sink.batch))?),
        None => None,
    };
    let end = read?;
    if let Some(mut lines) = printed {
        if lines.failed.is_none() {
            lines.flush_pending();
        }
        if let Some(e) = lines.failed.take() {
            return Err(e.into());
        }
        lines.out.flush()?;
    }
    // The reader's warnings were gathered before the printer finished; a kallsyms section
    // it failed to read for a symbol is known only now.
    let late = sink.meta.as_ref().and_then(|m| m.kallsyms.text().error());
    let late = late.filter(|e| !end.warnings.iter().any(|w| w == e));
    for w in end.warnings.iter().map(String::as_str).chain(late) {
        eprintln!("rtwhy: warning: {}: {w}", crate::stdin::shown(&args.file));
    }
    Ok(ExitCode::SUCCESS)
}
