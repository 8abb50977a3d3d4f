//! trace-cmd `trace.dat` files, versions 6 and 7.
//!
//! ```no_run
//! use rtwhy_decode::tracedat::TraceFile;
//!
//! let file = TraceFile::open("trace.dat".as_ref())?;
//! println!("{} CPUs, clock {:?}", file.info().cpus, file.meta().clock);
//! let mut records = file.records()?;
//! while let Some(rec) = records.next_record()? {
//!     println!("{} cpu{} pid {}", rec.ts, rec.cpu, rec.pid());
//! }
//! # Ok::<(), rtwhy_decode::Error>(())
//! ```
//!
//! Metadata (formats, symbols, options) is read when the file is opened; event data is
//! read page by page (chunk by chunk when compressed) as records are asked for, so
//! memory stays bounded whatever the file's size.

mod compress;
mod metadata;
mod source;
mod stream;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use compress::Codec;
pub use source::{Bytes, Source};
pub use stream::RecordStream;
pub use writer::{TraceBuilder, TraceDatWriter};

use crate::meta::TraceMeta;

/// Files up to this size are searched ahead for their `rtwhy-fact:` markers
/// ([`TraceFile::fact_markers`], and text read by [`crate::input`]).
pub const FACT_MARKERS_MAX: u64 = 128 << 20;
use crate::{Error, Result};

/// The magic bytes every trace.dat file starts with.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// Where one CPU's event data lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuData {
    /// CPU number.
    pub cpu: u32,
    /// File offset of the data.
    pub offset: u64,
    /// Size in the file (compressed size for compressed files).
    pub size: u64,
}

/// One ring buffer saved in the file: the top-level buffer (name `""`) or an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    /// Instance name; empty for the top-level buffer.
    pub name: String,
    /// Trace clock of this buffer, when recorded.
    pub clock: Option<String>,
    /// Per-CPU data, in CPU order.
    pub cpus: Vec<CpuData>,
    /// Whether the per-CPU data is compressed in chunks.
    pub compressed: bool,
    /// Ring-buffer sub-buffer size of this buffer.
    pub page_size: usize,
}

/// What the file says about itself.
#[derive(Debug, Clone, Default)]
pub struct FileInfo {
    /// File format version (6 or 7).
    pub version: u32,
    /// Compression name and version (`zstd`, `1.4.8`), for version 7 files.
    pub compression: Option<(String, String)>,
    /// CPU count as trace-cmd reports it (`cpus=N`).
    pub cpus: u32,
    /// `uname` of the traced machine.
    pub uname: Option<String>,
    /// Version of the trace-cmd that wrote the file.
    pub tracer_version: Option<String>,
    /// Date/offset option text.
    pub date: Option<String>,
    /// Whether an options section was present.
    pub has_options: bool,
    /// Text of a latency-format trace (`latency` files carry text, not pages).
    pub latency_text: Option<String>,
    /// Size of the file.
    pub file_len: u64,
    /// Contents the file carries that rtwhy reads past (trace-cmd 3.4's BTF, modules
    /// and last-boot options), one line each.
    pub notes: Vec<String>,
}

/// An opened trace.dat file.
#[derive(Debug, Clone)]
pub struct TraceFile {
    path: Option<PathBuf>,
    bytes: Bytes,
    meta: Arc<TraceMeta>,
    info: FileInfo,
    buffers: Vec<Buffer>,
    warnings: Vec<String>,
}

impl TraceFile {
    /// Opens and reads the metadata of the file at `path`.
    pub fn open(path: &Path) -> Result<TraceFile> {
        TraceFile::open_with(path, true)
    }

    /// [`TraceFile::open`]; `read_symbols_ahead`: the kernel symbols are read at once on
    /// a thread of their own ([`crate::input::Sink::read_symbols_ahead`]), else at the
    /// first lookup.
    pub fn open_with(path: &Path, read_symbols_ahead: bool) -> Result<TraceFile> {
        let file = std::fs::File::open(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "is a directory, not a trace file",
                ),
            });
        }
        let mut t = TraceFile::from_source_with(Arc::new(file), read_symbols_ahead)?;
        t.path = Some(path.to_path_buf());
        Ok(t)
    }

    /// Reads a trace held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<TraceFile> {
        TraceFile::from_source(Arc::new(bytes))
    }

    /// Reads a trace from any random-access source.
    pub fn from_source(source: Arc<dyn Source>) -> Result<TraceFile> {
        TraceFile::from_source_with(source, true)
    }

    fn from_source_with(source: Arc<dyn Source>, read_symbols_ahead: bool) -> Result<TraceFile> {
        let bytes = Bytes::new(source);
        let parsed = metadata::read(&bytes, read_symbols_ahead)?;
        Ok(TraceFile {
            path: None,
            bytes,
            meta: Arc::new(parsed.meta),
            info: parsed.info,
            buffers: parsed.buffers,
            warnings: parsed.warnings,
        })
    }

    /// Whether `head` (the first bytes of a file) is a trace.dat.
    pub fn is_trace_dat(head: &[u8]) -> bool {
        head.starts_with(MAGIC)
    }

    /// The path it was opened from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Formats, symbols and the traced machine's properties.
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// Shared handle to the metadata.
    pub fn meta_arc(&self) -> Arc<TraceMeta> {
        Arc::clone(&self.meta)
    }

    /// File-level facts.
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// The ring buffers saved in the file.
    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    /// How many CPUs the saved buffers cover: the highest CPU number any of them holds
    /// data for, plus one (1 for a file without data). What a writer of the same events
    /// must declare.
    pub fn cpu_span(&self) -> usize {
        self.buffers
            .iter()
            .flat_map(|b| &b.cpus)
            .map(|c| c.cpu as usize + 1)
            .max()
            .unwrap_or(1)
    }

    /// Problems found while opening that did not stop reading (data past the end of the
    /// file, unparsable formats...), one line each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The buffer `trace-cmd report` shows by default: the top-level one, else the first.
    pub fn default_buffer(&self) -> Option<&Buffer> {
        self.buffers
            .iter()
            .find(|b| b.name.is_empty())
            .or_else(|| self.buffers.first())
    }

    /// What the file itself says about the traced machine (kernel release and version from
    /// the stored `uname`, CPU count), for the analyzer; the recording's own
    /// `rtwhy-fact:` markers add the rest as the events are read.
    pub fn system_facts(&self) -> rtwhy_model::SystemFacts {
        let mut facts = rtwhy_model::SystemFacts::default();
        if let Some(uname) = &self.info.uname {
            // trace-cmd stores "sysname nodename release version machine".
            let words: Vec<&str> = uname.split_whitespace().collect();
            facts.kernel_release = words.get(2).map(|s| s.to_string());
            if let Some(version) = words.get(3..words.len().saturating_sub(1)) {
                if !version.is_empty() {
                    facts.kernel_version = Some(version.join(" "));
                }
            }
        }
        facts.cpus = Some(self.info.cpus);
        facts
    }

    /// The `rtwhy-fact:` markers (key, value) of a capture rtwhy wrote (its writer names
    /// itself `rtwhy <version>`), which its recorder writes at the end of the capture, read
    /// ahead so that every event can be judged with them; only `print` records are
    /// decoded. Empty for files rtwhy did not write (trace-cmd records the top-level buffer
    /// or its own instances, never the marker file of rtwhy's instance) and for files over
    /// [`FACT_MARKERS_MAX`] bytes (captures are a few MB).
    pub fn fact_markers(&self) -> Vec<(String, String)> {
        let mut facts = Vec::new();
        let written_by_rtwhy = self
            .info
            .tracer_version
            .as_deref()
            .is_some_and(|v| v.starts_with("rtwhy "));
        if !written_by_rtwhy || self.info.file_len > FACT_MARKERS_MAX {
            return facts;
        }
        let Ok(mut records) = self.records() else {
            return facts;
        };
        let mut decoder = crate::typed::EventDecoder::new();
        // A damaged page ends the search; the reading of the events reports it.
        while let Ok(true) = records.advance() {
            let Some(record) = records.current() else {
                break;
            };
            if record
                .format
                .is_none_or(|f| f.name != "print" && f.name != "bputs")
            {
                continue;
            }
            if let rtwhy_model::EventKind::Print { text } =
                decoder.decode(self.meta(), &record).kind
            {
                if let Some((k, v)) = rtwhy_model::parse_fact_marker(&text) {
                    facts.push((k.to_string(), v.to_string()));
                }
            }
        }
        facts
    }

    /// Records of every buffer (the top level and instances), merged over CPUs in
    /// timestamp order, as `trace-cmd report` shows them.
    pub fn records(&self) -> Result<RecordStream<'_>> {
        if self.buffers.is_empty() {
            return Ok(RecordStream::empty(self));
        }
        RecordStream::new(self, &self.buffers)
    }

    /// Records of one buffer, merged over CPUs in timestamp order.
    pub fn buffer_records(&self, index: usize) -> Result<RecordStream<'_>> {
        match self.buffers.get(index..=index) {
            Some(one) => RecordStream::new(self, one),
            None => Ok(RecordStream::empty(self)),
        }
    }

    pub(crate) fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub(crate) fn codec(&self) -> Result<Codec> {
        match &self.info.compression {
            Some((name, _)) => Codec::from_name(name, 0),
            None => Ok(Codec::None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::PageWriter;
    use crate::{Endian, EventFormat, HeaderPage, MetaSources};

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
    const WAKING: &str = "name: sched_waking\nID: 9\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\nprint fmt: \"comm=%s pid=%d\", REC->comm, REC->pid\n";
    const BROKEN: &str = "name: broken\nID: 10\nformat:\n\tfield:unsigned short common_type;\toffset:x;\tsize:2;\tsigned:0;\n\nprint fmt: \"\"\n";
    const UNUSED: &str = "name: sched_kthread_stop\nID: 11\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:pid_t pid;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"pid=%d\", REC->pid\n";

    /// A v6 trace holding the three formats above and one sched_waking record.
    fn trace() -> Vec<u8> {
        let sources = MetaSources {
            header_page: HEADER_PAGE.into(),
            event_formats: vec![(
                "sched".into(),
                vec![WAKING.into(), BROKEN.into(), UNUSED.into()],
            )],
            ..MetaSources::default()
        };
        let mut w = TraceDatWriter::new(Endian::Little, 8, 4096, sources);
        let layout = HeaderPage::parse(HEADER_PAGE).unwrap();
        let mut pager = PageWriter::new(Endian::Little, layout, 4096);
        let mut payload = vec![0u8; 28];
        payload[..2].copy_from_slice(&9u16.to_le_bytes());
        payload[8..12].copy_from_slice(b"cat\0");
        payload[24..28].copy_from_slice(&42i32.to_le_bytes());
        assert!(pager.push(1_000, &payload).unwrap().is_none());
        w.add_pages(0, &pager.finish_page());
        let mut bytes = Vec::new();
        w.write(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn formats_are_usable_when_read_lazily_and_a_malformed_one_warns_at_open() {
        let bytes = trace();
        let at = bytes
            .windows(BROKEN.len())
            .position(|w| w == BROKEN.as_bytes())
            .unwrap();
        let file = TraceFile::from_bytes(bytes).unwrap();
        assert_eq!(
            file.warnings(),
            [format!(
                "at file offset {at:#x}: event format \"broken\": line 4: bad offset in \"offset:x\"; events of this kind print as unknown"
            )]
        );
        let meta = file.meta();
        assert_eq!(meta.formats.len(), 2);
        assert_eq!(meta.format(10), None);
        let mut records = file.records().unwrap();
        let record = records.next_record().unwrap().unwrap();
        let format = record.format.unwrap();
        assert_eq!(format, &EventFormat::parse("sched", WAKING).unwrap());
        let pid = format.field("pid").unwrap();
        assert_eq!(record.int(pid), Some(42));
        assert_eq!(
            meta.format_named("sched", "sched_kthread_stop")
                .map(|f| f.id),
            Some(11)
        );
    }
}
