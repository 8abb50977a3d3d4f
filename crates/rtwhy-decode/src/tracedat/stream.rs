//! Per-CPU readers of ring-buffer pages and their merge into one time-ordered stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::compress::Codec;
use super::{Buffer, CpuData, TraceFile};
use crate::page::{PageCursor, PageEvent};
use crate::record::Record;
use crate::Result;

/// Pages read from an uncompressed file at a time.
const PAGES_PER_READ: u64 = 32;
/// Most compressed chunks one CPU may declare.
const MAX_CHUNKS: u32 = 1 << 24;

enum Layout {
    Plain { next: u64, end: u64 },
    Chunked { next: u64, end: u64, left: u32 },
}

/// Reads one CPU's pages in order, a block of pages (or one decompressed chunk) at a time.
struct CpuReader {
    cpu: u32,
    buffer: usize,
    page_size: usize,
    layout: Layout,
    /// The block of pages currently loaded.
    buf: Vec<u8>,
    page_start: usize,
    cursor: Option<PageCursor>,
    current: Option<PageEvent>,
    current_missed: Option<u64>,
    page_missed: Option<u64>,
    done: bool,
}

impl CpuReader {
    fn new(
        file: &TraceFile,
        data: &CpuData,
        buffer: &Buffer,
        index: usize,
        warnings: &mut Vec<String>,
    ) -> CpuReader {
        let compressed = buffer.compressed;
        let len = file.bytes().len();
        let end = data.offset.saturating_add(data.size).min(len);
        let mut r = CpuReader {
            cpu: data.cpu,
            buffer: index,
            page_size: buffer.page_size,
            layout: Layout::Plain {
                next: data.offset,
                end,
            },
            buf: Vec::new(),
            page_start: 0,
            cursor: None,
            current: None,
            current_missed: None,
            page_missed: None,
            done: data.size == 0 || data.offset >= len,
        };
        if compressed && !r.done {
            match file.bytes().read_exact(data.offset, 4, "chunk count") {
                Ok(b) => {
                    let left = file.meta().endian.u32(&b, 0).unwrap_or(0);
                    if left > MAX_CHUNKS {
                        warnings.push(format!(
                            "CPU {}: at file offset {:#x}: chunk count {left} is implausible; no events for that CPU",
                            data.cpu, data.offset
                        ));
                        r.done = true;
                    }
                    r.layout = Layout::Chunked {
                        next: data.offset + 4,
                        end,
                        left,
                    };
                }
                Err(e) => {
                    warnings.push(format!("CPU {}: {e}", data.cpu));
                    r.done = true;
                }
            }
        }
        r
    }

    /// Loads the next block of pages; false when there is none.
    fn load(&mut self, file: &TraceFile, codec: Codec, warnings: &mut Vec<String>) -> bool {
        let page_size = self.page_size as u64;
        let bytes = file.bytes();
        let endian = file.meta().endian;
        let loaded = match &mut self.layout {
            Layout::Plain { next, end } => {
                if *next >= *end {
                    return false;
                }
                let n = (*end - *next).min(page_size * PAGES_PER_READ);
                let r = bytes.read_exact(*next, n, "CPU data");
                *next += n;
                r.map(|b| self.buf = b)
            }
            Layout::Chunked { next, end, left } => {
                if *left == 0 || *next >= *end {
                    return false;
                }
                *left -= 1;
                let at = *next;
                let r = bytes.read_exact(at, 8, "chunk header").and_then(|h| {
                    let csize = u64::from(endian.u32(&h, 0).unwrap_or(0));
                    let usize_ = u64::from(endian.u32(&h, 4).unwrap_or(0));
                    let data = bytes.read_exact(at + 8, csize, "compressed chunk")?;
                    *next = at + 8 + csize;
                    // Over the last chunk's bytes: the buffer is not cleared chunk after chunk.
                    codec.decompress_into(&data, usize_, at + 8, &mut self.buf)
                });
                if r.is_err() {
                    *left = 0;
                }
                r
            }
        };
        match loaded {
            Ok(()) => {
                self.page_start = 0;
                self.cursor = None;
                true
            }
            Err(e) => {
                warnings.push(format!(
                    "CPU {}: {e}; the rest of this CPU's events are not read",
                    self.cpu
                ));
                // Nothing of a chunk that failed half-way is read.
                self.buf.clear();
                self.page_start = 0;
                false
            }
        }
    }

    /// Moves to the next event; sets `current` to `None` at the end.
    fn advance(&mut self, file: &TraceFile, codec: Codec, warnings: &mut Vec<String>) {
        let meta = file.meta();
        let page_size = self.page_size;
        self.current = None;
        if self.done {
            return;
        }
        loop {
            if let Some(cursor) = &mut self.cursor {
                let page_end = (self.page_start + page_size).min(self.buf.len());
                let page = &self.buf[self.page_start..page_end];
                match cursor.next_event(page, meta.endian) {
                    Ok(Some(ev)) => {
                        self.current = Some(ev);
                        self.current_missed = self.page_missed.take();
                        return;
                    }
                    Ok(None) => {}
                    Err(e) => warnings.push(format!(
                        "CPU {}: page at offset {} of its data: byte {}: {}; rest of the page skipped",
                        self.cpu, self.page_start, e.offset, e.what
                    )),
                }
                self.cursor = None;
                self.page_start += page_size;
            }
            if self.page_start >= self.buf.len() && !self.load(file, codec, warnings) {
                self.done = true;
                return;
            }
            let page_end = (self.page_start + page_size).min(self.buf.len());
            let page = &self.buf[self.page_start..page_end];
            match PageCursor::new(page, &meta.header_page, meta.endian) {
                Ok(c) => {
                    self.page_missed = c.header().missed;
                    self.cursor = Some(c);
                }
                Err(e) => {
                    warnings.push(format!(
                        "CPU {}: page at offset {} of its data: {}; page skipped",
                        self.cpu, self.page_start, e.what
                    ));
                    self.page_start += page_size;
                }
            }
        }
    }
}

/// Records of one buffer, merged over CPUs by timestamp (ties go to the lower CPU, as in
/// `trace-cmd report`). A lending iterator: each record borrows the stream until the next call.
pub struct RecordStream<'f> {
    file: &'f TraceFile,
    names: Vec<&'f str>,
    codec: Codec,
    readers: Vec<CpuReader>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    last: Option<usize>,
    warnings: Vec<String>,
    started: bool,
    current_ts: u64,
}

impl<'f> RecordStream<'f> {
    pub(super) fn empty(file: &'f TraceFile) -> RecordStream<'f> {
        RecordStream {
            file,
            names: Vec::new(),
            codec: Codec::None,
            readers: Vec::new(),
            heap: BinaryHeap::new(),
            last: None,
            warnings: Vec::new(),
            started: true,
            current_ts: 0,
        }
    }

    pub(super) fn new(file: &'f TraceFile, buffers: &'f [Buffer]) -> Result<RecordStream<'f>> {
        let codec = if buffers.iter().any(|b| b.compressed) {
            file.codec()?
        } else {
            Codec::None
        };
        let mut warnings = Vec::new();
        let mut readers = Vec::new();
        for (i, b) in buffers.iter().enumerate() {
            readers.extend(
                b.cpus
                    .iter()
                    .map(|d| CpuReader::new(file, d, b, i, &mut warnings)),
            );
        }
        let names = buffers.iter().map(|b| b.name.as_str()).collect();
        Ok(RecordStream {
            file,
            names,
            codec,
            readers,
            heap: BinaryHeap::new(),
            last: None,
            warnings,
            started: false,
            current_ts: 0,
        })
    }

    /// The name of the buffer the last record came from (empty for the top-level buffer).
    pub fn buffer_name(&self) -> &'f str {
        self.last
            .and_then(|i| self.names.get(self.readers[i].buffer).copied())
            .unwrap_or("")
    }

    /// Whether records come from more than one buffer.
    pub fn has_instances(&self) -> bool {
        self.names.len() > 1
    }

    fn push(&mut self, idx: usize) {
        if let Some(ev) = self.readers[idx].current {
            let ts = self.file.meta().convert_ts(ev.ts, self.readers[idx].cpu);
            self.heap.push(Reverse((ts, idx)));
        }
    }

    /// The next record in time order, `Ok(None)` at the end. Damaged data is skipped and
    /// described in [`RecordStream::warnings`].
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>> {
        if !self.advance()? {
            return Ok(None);
        }
        Ok(self.current())
    }

    /// Moves to the next record; false at the end. Read it with [`RecordStream::current`]
    /// (which, unlike [`RecordStream::next_record`], leaves the stream free for other
    /// questions such as [`RecordStream::buffer_name`]).
    pub fn advance(&mut self) -> Result<bool> {
        if !self.started {
            self.started = true;
            for idx in 0..self.readers.len() {
                self.readers[idx].advance(self.file, self.codec, &mut self.warnings);
                self.push(idx);
            }
        } else if let Some(idx) = self.last.take() {
            self.readers[idx].advance(self.file, self.codec, &mut self.warnings);
            self.push(idx);
        }
        match self.heap.pop() {
            Some(Reverse((ts, idx))) => {
                self.last = Some(idx);
                self.current_ts = ts;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The record [`RecordStream::advance`] moved to.
    pub fn current(&self) -> Option<Record<'_>> {
        let r = &self.readers[self.last?];
        let ev = r.current?;
        let meta = self.file.meta();
        let data = r
            .buf
            .get(r.page_start + ev.start..r.page_start + ev.end)
            .unwrap_or_default();
        let page_end = (r.page_start + r.page_size).min(r.buf.len());
        let following = r
            .buf
            .get(r.page_start + ev.end..page_end)
            .unwrap_or_default();
        let format = meta
            .endian
            .u16(data, 0)
            .and_then(|id| meta.format(u32::from(id)));
        Some(Record {
            ts: self.current_ts,
            cpu: r.cpu,
            data,
            format,
            endian: meta.endian,
            missed_before: r.current_missed,
            following,
        })
    }

    /// Problems met so far (damaged pages, truncated data), one line each.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}
