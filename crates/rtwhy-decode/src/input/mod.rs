//! One way in: [`read`] recognises what a file holds and pushes its events, in time
//! order, into a [`Sink`] (the shape of ripgrep's `Sink`: the reader drives, the sink
//! says whether to go on).
//!
//! Each event reaches the sink as an [`Item`]: its typed [`Event`] (decoded only when
//! the sink asks) and its source, the ring-buffer [`Record`] of a trace.dat or the line
//! of a text file, which is what a printer needs to show it as the tool that wrote it
//! does ([`LinePrinter`]).
//!
//! Formats live one per file in this directory and are listed in [`FORMATS`]; adding
//! one is a file implementing [`Format`] plus a line in that list.
//!
//! ```
//! use rtwhy_decode::input::{self, Finish, Header, Item, Sink};
//!
//! #[derive(Default)]
//! struct Count(u64);
//!
//! impl Sink for Count {
//!     type Error = rtwhy_decode::Error;
//!     fn event(&mut self, _item: Item<'_>) -> Result<bool, Self::Error> {
//!         self.0 += 1;
//!         Ok(true)
//!     }
//! }
//!
//! let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
//!     .join("../../fixtures/preemption/preemption.dat");
//! let mut count = Count::default();
//! let end = input::read(&path, &mut count)?;
//! assert!(count.0 > 0);
//! assert_eq!(end.format, "trace.dat");
//! # Ok::<(), rtwhy_decode::Error>(())
//! ```

mod report_text;
mod tracedat;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtwhy_model::{Event, SystemFacts};

use crate::error::{Error, Result};
use crate::meta::TraceMeta;
use crate::print::Printer;
use crate::record::Record;
use crate::tracedat::TraceFile;
use crate::typed::EventDecoder;

/// Bytes at the start of a file that recognising its format may look at.
pub const HEAD_LEN: usize = 4096;

/// A file format rtwhy reads: how to recognise it and how to read it.
pub trait Format: Sync {
    /// The name sinks, messages and the JSON's `trace.kind` use (`"trace.dat"`).
    fn name(&self) -> &'static str;
    /// Whether a file starting with `head` (its first [`HEAD_LEN`] bytes, fewer for a
    /// shorter file) is in this format.
    fn recognises(&self, head: &[u8]) -> bool;
    /// Reads the file at `path`, calling `to.begin` once and then `to.event` for every
    /// event in time order until it returns false.
    fn read(&self, path: &Path, to: &mut dyn Push) -> Result<Finish>;
}

/// Every format, tried in this order: the first that recognises a file reads it.
pub static FORMATS: &[&dyn Format] = &[&tracedat::TraceDat, &report_text::ReportText];

/// What a reader hands a sink; object-safe, so formats need not know the sink's type.
pub trait Push {
    /// [`Sink::read_symbols_ahead`].
    fn read_symbols_ahead(&self) -> bool;
    /// The file's header; false stops reading.
    fn begin(&mut self, header: &Header<'_>) -> bool;
    /// One event; false stops reading.
    fn event(&mut self, item: Item<'_>) -> bool;
}

/// Receives what [`read`] finds in a file.
pub trait Sink {
    /// The sink's error; a decoding error converts into it.
    type Error: From<Error>;

    /// Whether a trace.dat's kernel symbols are read at once, on a thread of their own,
    /// beside the rest of its metadata: nearly every use looks a symbol up, and a
    /// kallsyms section takes tens of milliseconds to decompress and parse. A sink that
    /// may never need one says false (they are read at the first lookup either way).
    fn read_symbols_ahead(&self) -> bool {
        true
    }

    /// Called once before the first event with what the file says about itself.
    /// `Ok(false)` stops reading.
    fn begin(&mut self, _header: &Header<'_>) -> std::result::Result<bool, Self::Error> {
        Ok(true)
    }

    /// Called for every event in time order. `Ok(false)` stops reading.
    fn event(&mut self, item: Item<'_>) -> std::result::Result<bool, Self::Error>;

    /// Called once after the last event (also after a sink stopped early).
    fn finish(&mut self, _end: &Finish) -> std::result::Result<(), Self::Error> {
        Ok(())
    }
}

/// The names of a trace's ring buffers (`""` for the top level) numbered in the order
/// they are first met, so that a sink keeps a small number per record, not the name.
#[derive(Debug, Default, Clone)]
pub struct BufferNames {
    names: Vec<String>,
    last: usize,
}

impl BufferNames {
    /// The number of buffer `name`, and whether this is its first time (a new number).
    pub fn number(&mut self, name: &str) -> (usize, bool) {
        // Records come in long runs from one buffer, nearly always the top level: the
        // last one first, by length alone when both are empty.
        if let Some(n) = self.names.get(self.last) {
            if n.len() == name.len() && (name.is_empty() || n == name) {
                return (self.last, false);
            }
        }
        if let Some(i) = self.names.iter().position(|n| n == name) {
            self.last = i;
            return (i, false);
        }
        self.names.push(name.to_owned());
        self.last = self.names.len() - 1;
        (self.last, true)
    }

    /// The name of buffer number `i` (`""` for a number never given).
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("", String::as_str)
    }
}

/// What a file says about itself before its events.
pub struct Header<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its format's [`Format::name`].
    pub format: &'static str,
    /// The machine and clock facts the file records (kernel release, CPU count) and, for
    /// one of rtwhy's captures (or its report text), the `rtwhy-fact:` markers its
    /// recorder wrote at the end, read ahead so that every event is judged with them.
    pub facts: SystemFacts,
    /// Whether timestamps are nanoseconds (a trace.dat may hold raw counter ticks).
    pub ts_in_nanos: bool,
    /// The trace.dat, for sinks that need more of it (its buffers, its `uname`, a writer
    /// like it); `None` for text.
    pub trace_dat: Option<&'a TraceFile>,
    /// Formats, symbols and task names, shared so a printer can outlive the file;
    /// `None` for text.
    pub meta: Option<Arc<TraceMeta>>,
}

/// What a file said after its last event.
#[derive(Debug, Clone, Default)]
pub struct Finish {
    /// The format's [`Format::name`].
    pub format: &'static str,
    /// The CPU count the file states (text: its `cpus=N` header), when it does.
    pub cpus: Option<u32>,
    /// Problems met that did not stop reading, one line each.
    pub warnings: Vec<String>,
}

/// Where an event came from: what a printer needs to print it as its tool did.
#[derive(Debug, Clone, Copy)]
pub enum Raw<'a> {
    /// A ring-buffer record of a trace.dat, and the name of its buffer (empty for the
    /// top level, else the instance).
    Record {
        /// The record.
        record: Record<'a>,
        /// Its buffer's name.
        buffer: &'a str,
    },
    /// The line of a text file the event was read from (its first line, without
    /// continuation lines).
    Line(&'a str),
}

/// How an [`Item`] gets its typed event.
enum Typed<'a> {
    Ready(Event),
    Lazy {
        decoder: &'a mut EventDecoder,
        meta: &'a TraceMeta,
        record: Record<'a>,
    },
}

/// One event as a reader hands it to a sink.
pub struct Item<'a> {
    /// Timestamp in the trace clock.
    pub ts: u64,
    /// CPU.
    pub cpu: u32,
    /// Where it came from.
    pub raw: Raw<'a>,
    typed: Typed<'a>,
    /// A text line's `CPU:N [K EVENTS DROPPED]` notice before it (a record carries its
    /// page's count itself).
    line_dropped: Option<u64>,
}

impl<'a> Item<'a> {
    pub(crate) fn from_record(
        record: Record<'a>,
        buffer: &'a str,
        decoder: &'a mut EventDecoder,
        meta: &'a TraceMeta,
    ) -> Item<'a> {
        Item {
            ts: record.ts,
            cpu: record.cpu,
            raw: Raw::Record { record, buffer },
            typed: Typed::Lazy {
                decoder,
                meta,
                record,
            },
            line_dropped: None,
        }
    }

    pub(crate) fn from_line(event: Event, line: &'a str, dropped: Option<u64>) -> Item<'a> {
        Item {
            ts: event.ts.0,
            cpu: event.cpu,
            raw: Raw::Line(line),
            typed: Typed::Ready(event),
            line_dropped: dropped,
        }
    }

    /// Whether the ring buffer dropped events of this CPU just before this one: `Some(n)`
    /// (0 when the kernel did not count them), from the record's page or from the
    /// report text's `CPU:N [n EVENTS DROPPED]` line.
    pub fn dropped_before(&self) -> Option<u64> {
        match &self.raw {
            Raw::Record { record, .. } => record.missed_before,
            Raw::Line(_) => self.line_dropped,
        }
    }

    /// The ring-buffer record, for a trace.dat.
    pub fn record(&self) -> Option<&Record<'a>> {
        match &self.raw {
            Raw::Record { record, .. } => Some(record),
            Raw::Line(_) => None,
        }
    }

    /// The typed event (decoded now for a trace.dat; a sink that only counts or prints
    /// records does not pay for it).
    pub fn into_event(self) -> Event {
        self.into_event_fields_of(|_| true)
    }

    /// The typed event, where an event without a typed form carries its fields only when
    /// `wanted(name)` (see [`EventDecoder::decode_fields_of`]; text lines keep theirs).
    pub fn into_event_fields_of(self, wanted: fn(&str) -> bool) -> Event {
        match self.typed {
            Typed::Ready(ev) => ev,
            Typed::Lazy {
                decoder,
                meta,
                record,
            } => decoder.decode_fields_of(meta, &record, wanted),
        }
    }
}

/// Prints items the way the tool that wrote the file does: a trace.dat's records as
/// `trace-cmd report` prints them, a text file's lines as they stand.
pub struct LinePrinter {
    printer: Option<Printer>,
}

impl LinePrinter {
    /// A printer for the file `header` describes.
    pub fn new(header: &Header<'_>) -> LinePrinter {
        LinePrinter {
            printer: header.meta.clone().map(Printer::new),
        }
    }

    /// A printer for records of the trace `meta` describes (and for text lines).
    pub fn for_meta(meta: Option<Arc<TraceMeta>>) -> LinePrinter {
        LinePrinter {
            printer: meta.map(Printer::new),
        }
    }

    /// Appends the item's line, without a trailing newline.
    pub fn write(&mut self, raw: &Raw<'_>, out: &mut String) {
        match (raw, self.printer.as_mut()) {
            (Raw::Record { record, buffer }, Some(p)) => {
                p.set_instance(buffer);
                p.write_report(record, out);
            }
            (Raw::Record { .. }, None) => out.push_str("[UNKNOWN EVENT]"),
            (Raw::Line(line), _) => out.push_str(line),
        }
    }

    /// The trace-cmd printer, for a trace.dat.
    pub fn printer(&mut self) -> Option<&mut Printer> {
        self.printer.as_mut()
    }
}

/// The format of the file at `path`, from its first bytes. A directory, an unreadable
/// file and a file no format recognises are errors that say what to give instead.
pub fn recognise(path: &Path) -> Result<&'static dyn Format> {
    let mut f = std::fs::File::open(path).map_err(|source| Error::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(Error::Directory {
            path: path.to_path_buf(),
            capture: first_capture(path),
        });
    }
    let mut head = [0u8; HEAD_LEN];
    let mut n = 0;
    while n < head.len() {
        match f.read(head.get_mut(n..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
    }
    let head = head.get(..n).unwrap_or_default();
    FORMATS
        .iter()
        .copied()
        .find(|f| f.recognises(head))
        .ok_or_else(|| Error::NotATrace {
            path: path.to_path_buf(),
        })
}

/// The first `spike-NNN.dat` of a recording session directory.
fn first_capture(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| rtwhy_model::SessionDir::is_capture_name(n))
        .min()
        .map(|n| dir.join(n))
}

/// Recognises the file at `path` and pushes its events into `sink`.
pub fn read<S: Sink>(path: &Path, sink: &mut S) -> std::result::Result<Finish, S::Error> {
    let format = recognise(path)?;
    let mut adapter = Adapter { sink, error: None };
    let end = format.read(path, &mut adapter);
    if let Some(e) = adapter.error.take() {
        return Err(e);
    }
    let end = end?;
    adapter.sink.finish(&end)?;
    Ok(end)
}

/// Keeps the sink's first error and stops the reader on it.
struct Adapter<'s, S: Sink> {
    sink: &'s mut S,
    error: Option<S::Error>,
}

impl<S: Sink> Push for Adapter<'_, S> {
    fn read_symbols_ahead(&self) -> bool {
        self.sink.read_symbols_ahead()
    }

    fn begin(&mut self, header: &Header<'_>) -> bool {
        match self.sink.begin(header) {
            Ok(go_on) => go_on,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn event(&mut self, item: Item<'_>) -> bool {
        match self.sink.event(item) {
            Ok(go_on) => go_on,
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_has_its_own_name() {
        let mut names: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
    }

    /// Keeps the header's facts.
    struct Facts(Option<SystemFacts>);

    impl Sink for Facts {
        type Error = Error;
        fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
            self.0 = Some(header.facts.clone());
            Ok(false)
        }
        fn event(&mut self, _item: Item<'_>) -> Result<bool> {
            Ok(false)
        }
    }

    #[test]
    fn a_capture_says_its_recorded_facts_before_its_first_event() {
        // rtwhy's recorder writes the facts at the end of the capture (recorded in the
        // PREEMPT_RT guest with CPU 1 isolated); every sink gets them up front.
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/rt_irq_on_isolated_cpu/capture.dat");
        let mut sink = Facts(None);
        read(&path, &mut sink).unwrap();
        let facts = sink.0.unwrap();
        assert!(facts.isolated.contains(1), "{:?}", facts.isolated);
        assert_eq!(facts.preempt.as_deref(), Some("rt"));
        // trace-cmd's own file of the same run carries no markers: nothing is made up.
        let path = path.with_file_name("irq_thread.dat");
        let mut sink = Facts(None);
        read(&path, &mut sink).unwrap();
        let facts = sink.0.unwrap();
        assert!(facts.isolated.is_empty(), "{:?}", facts.isolated);
        assert_eq!(facts.preempt, None);
    }

    #[test]
    fn a_file_of_zeros_is_no_trace() {
        let dir = std::env::temp_dir().join(format!("rtwhy-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("zeros");
        std::fs::write(&f, [0u8; 100]).unwrap();
        let err = recognise(&f).err().unwrap().to_string();
        assert!(err.contains("neither a trace.dat"), "{err}");
        let err = recognise(&dir).err().unwrap().to_string();
        assert!(err.contains("is a directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
