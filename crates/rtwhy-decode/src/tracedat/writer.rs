//! Writing trace.dat version 6 files that `trace-cmd report` and KernelShark open.
//!
//! The recorder hands over raw ring-buffer pages per CPU (as read from
//! `trace_pipe_raw`); tests and tools that build traces from events use
//! [`crate::page::PageWriter`] to make the pages first.

use std::io::Write;

use super::MAGIC;
use crate::endian::Endian;
use crate::meta::MetaSources;

const OPT_TRACECLOCK: u16 = 4;
const OPT_UNAME: u16 = 5;
const OPT_CPUCOUNT: u16 = 8;
const OPT_VERSION: u16 = 9;

/// Everything a trace.dat holds, ready to be written.
#[derive(Debug, Clone)]
pub struct TraceDatWriter {
    endian: Endian,
    long_size: u8,
    page_size: u32,
    sources: MetaSources,
    clock: Option<String>,
    uname: Option<String>,
    version: Option<String>,
    extra_options: Vec<(u16, Vec<u8>)>,
    cpus: Vec<Vec<u8>>,
}

impl TraceDatWriter {
    /// A writer for a machine of the given byte order, user-space long size and page size,
    /// with the metadata texts read from its tracefs (or from another trace).
    pub fn new(
        endian: Endian,
        long_size: u8,
        page_size: u32,
        sources: MetaSources,
    ) -> TraceDatWriter {
        TraceDatWriter {
            endian,
            long_size,
            page_size,
            sources,
            clock: None,
            uname: None,
            version: Some(format!("rtwhy {}", env!("CARGO_PKG_VERSION"))),
            extra_options: Vec::new(),
            cpus: Vec::new(),
        }
    }

    /// Records the trace clock (`local`, `mono`, `x86-tsc`...).
    pub fn set_clock(&mut self, clock: &str) {
        self.clock = Some(clock.to_string());
    }

    /// Records the traced machine's `uname -a`.
    pub fn set_uname(&mut self, uname: &str) {
        self.uname = Some(uname.to_string());
    }

    /// The metadata texts to be written (formats, kallsyms, printk formats, cmdlines), to
    /// change before writing.
    pub fn sources_mut(&mut self) -> &mut MetaSources {
        &mut self.sources
    }

    /// Adds an option the writer does not make itself (id and data as they go into the
    /// options section), after the ones it does. Used to write files such as newer
    /// trace-cmd versions make.
    pub fn add_option(&mut self, id: u16, data: Vec<u8>) {
        self.extra_options.push((id, data));
    }

    /// Appends whole ring-buffer pages (a multiple of the page size; a short tail is
    /// zero-padded) to `cpu`'s data.
    pub fn add_pages(&mut self, cpu: usize, pages: &[u8]) {
        if self.cpus.len() <= cpu {
            self.cpus.resize(cpu + 1, Vec::new());
        }
        let data = &mut self.cpus[cpu];
        data.extend_from_slice(pages);
        let ps = self.page_size as usize;
        let rem = data.len() % ps;
        if rem != 0 {
            data.resize(data.len() + ps - rem, 0);
        }
    }

    /// Declares at least `n` CPUs, even if some have no data.
    pub fn set_cpu_count(&mut self, n: usize) {
        if self.cpus.len() < n {
            self.cpus.resize(n, Vec::new());
        }
    }

    fn put(&self, out: &mut Vec<u8>, v: u64, size: usize) {
        self.endian.put_uint(out, v, size);
    }

    fn option(&self, out: &mut Vec<u8>, id: u16, data: &[u8]) {
        self.put(out, u64::from(id), 2);
        self.put(out, data.len() as u64, 4);
        out.extend_from_slice(data);
    }

    /// Writes the file.
    pub fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(b"6\0");
        out.push(match self.endian {
            Endian::Little => 0,
            Endian::Big => 1,
        });
        out.push(self.long_size);
        self.put(&mut out, u64::from(self.page_size), 4);
        let s = &self.sources;
        out.extend_from_slice(b"header_page\0");
        self.put(&mut out, s.header_page.len() as u64, 8);
        out.extend_from_slice(s.header_page.as_bytes());
        out.extend_from_slice(b"header_event\0");
        self.put(&mut out, s.header_event.len() as u64, 8);
        out.extend_from_slice(s.header_event.as_bytes());
        self.put(&mut out, s.ftrace_formats.len() as u64, 4);
        for f in &s.ftrace_formats {
            self.put(&mut out, f.len() as u64, 8);
            out.extend_from_slice(f.as_bytes());
        }
        self.put(&mut out, s.event_formats.len() as u64, 4);
        for (system, formats) in &s.event_formats {
            out.extend_from_slice(system.as_bytes());
            out.push(0);
            self.put(&mut out, formats.len() as u64, 4);
            for f in formats {
                self.put(&mut out, f.len() as u64, 8);
                out.extend_from_slice(f.as_bytes());
            }
        }
        let kallsyms = s.kallsyms.get();
        self.put(&mut out, kallsyms.len() as u64, 4);
        out.extend_from_slice(kallsyms.as_bytes());
        self.put(&mut out, s.printk.len() as u64, 4);
        out.extend_from_slice(s.printk.as_bytes());
        self.put(&mut out, s.cmdlines.len() as u64, 8);
        out.extend_from_slice(s.cmdlines.as_bytes());
        let ncpus = self.cpus.len().max(1);
        self.put(&mut out, ncpus as u64, 4);

        out.extend_from_slice(b"options  \0");
        let cstr = |t: &str| {
            let mut v = t.as_bytes().to_vec();
            v.push(0);
            v
        };
        let clock_file = self.clock.as_ref().map(|c| format!("[{c}]\n"));
        if let Some(c) = &clock_file {
            self.option(&mut out, OPT_TRACECLOCK, &cstr(c));
        }
        if let Some(u) = &self.uname {
            self.option(&mut out, OPT_UNAME, &cstr(u));
        }
        if let Some(v) = &self.version {
            self.option(&mut out, OPT_VERSION, &cstr(v));
        }
        let mut count = Vec::new();
        self.put(&mut count, ncpus as u64, 4);
        self.option(&mut out, OPT_CPUCOUNT, &count);
        for (id, data) in &self.extra_options {
            self.option(&mut out, *id, data);
        }
        self.put(&mut out, 0, 2);

        out.extend_from_slice(b"flyrecord\0");
        let table_at = out.len();
        let clock_len = clock_file.as_ref().map(|c| 8 + c.len()).unwrap_or(0);
        let ps = self.page_size as u64;
        let mut offset = (table_at as u64 + 16 * ncpus as u64 + clock_len as u64).div_ceil(ps) * ps;
        for cpu in 0..ncpus {
            let size = self.cpus.get(cpu).map(|d| d.len() as u64).unwrap_or(0);
            self.put(&mut out, offset, 8);
            self.put(&mut out, size, 8);
            offset += size.div_ceil(ps) * ps;
        }
        if let Some(c) = &clock_file {
            self.put(&mut out, c.len() as u64, 8);
            out.extend_from_slice(c.as_bytes());
        }
        let aligned = (out.len() as u64).div_ceil(ps) * ps;
        out.resize(aligned as usize, 0);
        w.write_all(&out)?;
        for data in &self.cpus {
            w.write_all(data)?;
        }
        Ok(())
    }
}

/// Builds a trace.dat from records: pages are made per CPU as records arrive and handed
/// to a [`TraceDatWriter`]. Used to cut a window out of a trace, to rewrite one, or to
/// make synthetic traces from real events.
#[derive(Debug)]
pub struct TraceBuilder {
    writer: TraceDatWriter,
    pagers: Vec<crate::page::PageWriter>,
    endian: Endian,
    layout: crate::format::HeaderPage,
    page_size: usize,
}

impl TraceBuilder {
    /// A builder for traces of the machine `meta` describes (formats, symbols, clock kept),
    /// with sub-buffers of `page_size` bytes.
    pub fn like(meta: &crate::meta::TraceMeta, page_size: usize) -> TraceBuilder {
        let mut writer = TraceDatWriter::new(
            meta.endian,
            meta.long_size as u8,
            page_size as u32,
            meta.sources.clone(),
        );
        if let Some(c) = &meta.clock {
            writer.set_clock(c);
        }
        TraceBuilder {
            writer,
            pagers: Vec::new(),
            endian: meta.endian,
            layout: meta.header_page,
            page_size,
        }
    }

    /// The file writer, for options such as the uname or the CPU count.
    pub fn writer_mut(&mut self) -> &mut TraceDatWriter {
        &mut self.writer
    }

    /// Adds an event payload (starting at `common_type`) at raw timestamp `ts` on `cpu`.
    /// Records of one CPU must come in time order. Fails for a payload larger than a page.
    pub fn push(&mut self, cpu: u32, ts: u64, payload: &[u8]) -> Result<(), &'static str> {
        let cpu = cpu as usize;
        if cpu >= 4096 {
            return Err("CPU number above 4095");
        }
        while self.pagers.len() <= cpu {
            self.pagers.push(crate::page::PageWriter::new(
                self.endian,
                self.layout,
                self.page_size,
            ));
        }
        if let Some(page) = self.pagers[cpu].push(ts, payload)? {
            self.writer.add_pages(cpu, &page);
        }
        Ok(())
    }

    /// Closes the last pages and writes the file.
    pub fn finish(mut self, w: &mut impl Write) -> std::io::Result<()> {
        for (cpu, p) in self.pagers.iter_mut().enumerate() {
            if !p.is_empty() {
                let page = p.finish_page();
                self.writer.add_pages(cpu, &page);
            }
        }
        self.writer.set_cpu_count(self.pagers.len());
        self.writer.write(w)
    }
}
