//! Saving a window of the flight recording: raw ring-buffer pages read from
//! `trace_pipe_raw`, cut to the pages that overlap the window, written as a trace.dat
//! (version 6, the one every trace-cmd reads) with only the kernel symbols the events
//! point at.

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rtwhy_decode::endian::Endian;
use rtwhy_decode::meta::{MetaSources, TraceMeta};
use rtwhy_decode::page::{PageEvent, PageHeader, PageReader, PageWriter};
use rtwhy_decode::symbols::LazyText;
use rtwhy_decode::tracedat::{TraceDatWriter, TraceFile};

use crate::bpf::{CpuSched, SchedEncoder};
use crate::error::{RecordError, Result};
use crate::symbols::KernelSymbols;

/// A CPU's `trace_pipe_raw`, open for non-blocking reads.
#[derive(Debug)]
pub struct RawPipe {
    file: fs::File,
    path: std::path::PathBuf,
}

impl RawPipe {
    /// Opens `path` (`per_cpu/cpuN/trace_pipe_raw`).
    pub fn open(path: &Path) -> Result<RawPipe> {
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| RecordError::Tracefs {
                path: path.to_path_buf(),
                source: e,
            })?;
        Ok(RawPipe {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Reads every page the pipe has now (without blocking); at most `max_bytes`.
    /// Reading consumes the pages: afterwards that CPU's buffer is empty.
    pub fn drain(&mut self, page_size: usize, max_bytes: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut page = vec![0u8; page_size];
        while out.len() < max_bytes {
            match self.file.read(&mut page) {
                Ok(0) => break,
                Ok(n) => {
                    out.extend_from_slice(&page[..n]);
                    let rem = out.len() % page_size;
                    if rem != 0 {
                        out.resize(out.len() + page_size - rem, 0);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(RecordError::Tracefs {
                        path: self.path.clone(),
                        source: e,
                    })
                }
            }
        }
        Ok(out)
    }
}

/// Opens `path` and drains it once ([`RawPipe::drain`]).
pub fn drain_pipe(path: &Path, page_size: usize, max_bytes: usize) -> Result<Vec<u8>> {
    RawPipe::open(path)?.drain(page_size, max_bytes)
}

/// The machine description every capture of a session shares: formats, page layout,
/// clock, symbols.
#[derive(Debug)]
pub struct CaptureLayout {
    meta: TraceMeta,
    sources: MetaSources,
    symbols: KernelSymbols,
    page_size: usize,
    clock: String,
    uname: String,
    cpus: usize,
}

/// What one capture file holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CaptureSummary {
    /// Events in the file.
    pub events: u64,
    /// Ring-buffer pages in the file.
    pub pages: u64,
    /// File size.
    pub bytes: u64,
    /// First event time (trace clock ns), 0 when empty.
    pub first_ns: u64,
    /// Last event time.
    pub last_ns: u64,
    /// Pages the kernel marked as following lost events.
    pub pages_after_loss: u64,
}

impl CaptureLayout {
    /// A layout from the texts read from tracefs (`sources.kallsyms` is ignored: the
    /// symbols come from `symbols`), for `cpus` CPUs.
    pub fn new(
        mut sources: MetaSources,
        symbols: KernelSymbols,
        page_size: usize,
        clock: &str,
        uname: &str,
        cpus: usize,
    ) -> Result<CaptureLayout> {
        sources.kallsyms = LazyText::default();
        let mut probe = TraceDatWriter::new(
            if cfg!(target_endian = "little") {
                Endian::Little
            } else {
                Endian::Big
            },
            std::mem::size_of::<libc::c_long>() as u8,
            page_size as u32,
            sources.clone(),
        );
        probe.set_clock(clock);
        probe.set_cpu_count(cpus);
        let mut bytes = Vec::new();
        probe
            .write(&mut bytes)
            .map_err(|e| RecordError::Other(format!("building the trace header: {e}")))?;
        let meta = TraceFile::from_bytes(bytes)
            .map_err(|e| RecordError::Other(format!("this kernel's tracefs formats: {e}")))?
            .meta()
            .clone();
        Ok(CaptureLayout {
            meta,
            sources,
            symbols,
            page_size,
            clock: clock.to_string(),
            uname: uname.to_string(),
            cpus,
        })
    }

    /// The parsed metadata (for decoding pages read live).
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// Kernel symbols.
    pub fn symbols(&self) -> &KernelSymbols {
        &self.symbols
    }

    /// Ring-buffer page size.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Writes the pages of `cpus` (raw `trace_pipe_raw` bytes per CPU index) that
    /// overlap `[from, to]` to `path` as a trace.dat, atomically and readable by the
    /// owner only. `sched` holds per CPU index the scheduler events the BPF programs
    /// kept (empty when none): a CPU with some has its pages rewritten with them merged
    /// in time order, from when both are complete.
    pub fn write(
        &self,
        cpus: &[Vec<u8>],
        sched: &[CpuSched],
        from: u64,
        to: u64,
        path: &Path,
    ) -> Result<CaptureSummary> {
        let mut sources = self.sources.clone();
        let mut words = Vec::new();
        let mut sum = CaptureSummary::default();
        let n = cpus.len().max(self.cpus).max(sched.len());
        let mut writer_pages: Vec<Vec<u8>> = vec![Vec::new(); n];
        let empty = Vec::new();
        for (cpu, out) in writer_pages.iter_mut().enumerate() {
            let data = cpus.get(cpu).unwrap_or(&empty);
            if let Some(recs) = sched.get(cpu).filter(|r| !r.records.is_empty()) {
                *out = self.merged(data, recs, from, to, &mut words, &mut sum);
                continue;
            }
            for page in data.chunks_exact(self.page_size) {
                let Ok(mut r) = PageReader::new(page, &self.meta.header_page, self.meta.endian)
                else {
                    continue;
                };
                let after_loss = r.header().missed.is_some();
                let (mut first, mut last, mut n) = (None, 0, 0u64);
                let mut page_words = Vec::new();
                while let Ok(Some(ev)) = r.next_event() {
                    first.get_or_insert(ev.ts);
                    last = ev.ts;
                    n += 1;
                    self.symbols
                        .words_in_text(&page[ev.start..ev.end], &mut page_words);
                }
                let Some(first) = first else { continue };
                if last < from || first > to {
                    continue;
                }
                out.extend_from_slice(page);
                words.extend(page_words);
                sum.events += n;
                sum.pages += 1;
                sum.pages_after_loss += u64::from(after_loss);
                sum.first_ns = if sum.first_ns == 0 {
                    first
                } else {
                    sum.first_ns.min(first)
                };
                sum.last_ns = sum.last_ns.max(last);
            }
        }
        sources.kallsyms = self.symbols.subset(words).into();
        let mut w = TraceDatWriter::new(
            self.meta.endian,
            self.meta.long_size as u8,
            self.page_size as u32,
            sources,
        );
        w.set_clock(&self.clock);
        w.set_uname(&self.uname);
        w.set_cpu_count(writer_pages.len());
        for (cpu, pages) in writer_pages.iter().enumerate() {
            if !pages.is_empty() {
                w.add_pages(cpu, pages);
            }
        }
        sum.bytes = write_atomic(path, |f| w.write(f))?;
        Ok(sum)
    }
}

impl CaptureLayout {
    /// One CPU's pages that overlap `[from, to]`, rewritten with `sched` (its kept
    /// scheduler events in `[from, to]`) in time order; a page the kernel marked as
    /// following lost events still begins a page so marked. Where one of the two lost
    /// its older part (the flight buffer overwritten, a page marked so; the programs'
    /// ring gone round, `sched.since`), the other's events before the first it still
    /// has are left out, and the first page is marked as following lost events: a
    /// stretch with interrupts but no context switches would read as a CPU that never
    /// switched.
    fn merged(
        &self,
        data: &[u8],
        sched: &CpuSched,
        from: u64,
        to: u64,
        words: &mut Vec<u64>,
        sum: &mut CaptureSummary,
    ) -> Vec<u8> {
        let encoder = SchedEncoder::new(&self.meta);
        let mut writer = PageWriter::new(self.meta.endian, self.meta.header_page, self.page_size);
        let mut out = Vec::new();
        let mut payload = Vec::new();
        // Each page that overlaps the window, read once: its header and its events.
        let pages: Vec<(&[u8], PageHeader, Vec<PageEvent>)> = data
            .chunks_exact(self.page_size)
            .filter_map(|page| {
                let mut r = PageReader::new(page, &self.meta.header_page, self.meta.endian).ok()?;
                let mut evs = Vec::new();
                while let Ok(Some(ev)) = r.next_event() {
                    evs.push(ev);
                }
                let overlaps = evs.first()?.ts <= to && evs.last()?.ts >= from;
                overlaps.then(|| (page, r.header(), evs))
            })
            .collect();
        // The flight buffer's own first page after an overwrite carries the mark.
        let flight_since = pages
            .first()
            .and_then(|(_, h, _)| h.missed.map(|_| h.base_ts));
        let since = sched.since.max(flight_since).unwrap_or(0);
        if since > 0 {
            writer.after_loss();
        }
        let mut pending = sched.records.iter().filter(|r| r.ts >= since).peekable();
        let (mut first, mut last, mut events) = (u64::MAX, 0u64, 0u64);
        let push = |writer: &mut PageWriter, out: &mut Vec<u8>, ts: u64, p: &[u8]| match writer
            .push(ts, p)
        {
            Ok(Some(page)) => {
                out.extend_from_slice(&page);
                true
            }
            Ok(None) => true,
            Err(_) => false,
        };
        let mut note = |ts: u64| {
            first = first.min(ts);
            last = last.max(ts);
            events += 1;
        };
        for (page, header, mut evs) in pages {
            evs.retain(|ev| ev.ts >= since);
            if evs.is_empty() {
                continue;
            }
            if header.missed.is_some() {
                sum.pages_after_loss += 1;
                if header.base_ts > since {
                    if let Some(page) = writer.after_loss() {
                        out.extend_from_slice(&page);
                    }
                }
            }
            for ev in evs {
                while let Some(rec) = pending.next_if(|rec| rec.ts <= ev.ts) {
                    if encoder.encode(rec, &mut payload)
                        && push(&mut writer, &mut out, rec.ts, &payload)
                    {
                        note(rec.ts);
                    }
                }
                let body = &page[ev.start..ev.end];
                if push(&mut writer, &mut out, ev.ts, body) {
                    note(ev.ts);
                    self.symbols.words_in_text(body, words);
                }
            }
        }
        for rec in pending {
            if encoder.encode(rec, &mut payload) && push(&mut writer, &mut out, rec.ts, &payload) {
                note(rec.ts);
            }
        }
        if !writer.is_empty() {
            out.extend_from_slice(&writer.finish_page());
        }
        if events > 0 {
            sum.events += events;
            sum.pages += (out.len() / self.page_size) as u64;
            sum.first_ns = if sum.first_ns == 0 {
                first
            } else {
                sum.first_ns.min(first)
            };
            sum.last_ns = sum.last_ns.max(last);
        }
        out
    }
}

/// Writes a file through a temporary name in the same directory and renames it into
/// place, so a reader never sees half a file; mode 0600. Returns the size.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<&fs::File>) -> std::io::Result<()>,
) -> Result<u64> {
    let out_err = |p: &Path, e| RecordError::Output {
        path: p.to_path_buf(),
        source: e,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| out_err(&tmp, e))?;
    let result = (|| {
        let mut bw = std::io::BufWriter::new(&file);
        fill(&mut bw)?;
        bw.flush()?;
        drop(bw);
        file.sync_all()
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(out_err(path, e));
    }
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        out_err(path, e)
    })?;
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::{SchedKind, SchedRecord};

    /// A layout from a recorded fixture's formats, and CPU 1's events of that fixture
    /// other than the scheduler's: `(ts, payload)`, oldest first.
    fn fixture() -> (CaptureLayout, Vec<(u64, Vec<u8>)>) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/recorded/vm-cyclictest-v7-zstd.dat");
        let file = TraceFile::open(&path).unwrap();
        let meta = file.meta().clone();
        let layout = CaptureLayout::new(
            meta.sources.clone(),
            KernelSymbols::parse(String::new()),
            4096,
            "mono",
            "",
            2,
        )
        .unwrap();
        let mut stream = file.records().unwrap();
        let mut events = Vec::new();
        while let Some(r) = stream.next_record().unwrap() {
            let sched = r.format.is_some_and(|f| f.system == "sched");
            if r.cpu == 1 && !sched && events.len() < 400 {
                events.push((r.ts, r.data.to_vec()));
            }
        }
        (layout, events)
    }

    fn switch(ts: u64, prev: i32, next: i32) -> SchedRecord {
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"task");
        SchedRecord {
            ts,
            kind: SchedKind::Switch,
            common_pid: prev,
            pid: prev,
            prio: 120,
            next_pid: next,
            next_prio: 19,
            prev_state: 1,
            comm,
            next_comm: comm,
        }
    }

    fn pages(layout: &CaptureLayout, events: &[(u64, Vec<u8>)], lost_first: bool) -> Vec<u8> {
        let mut w = PageWriter::new(layout.meta.endian, layout.meta.header_page, 4096);
        if lost_first {
            w.after_loss();
        }
        let mut out = Vec::new();
        for (ts, p) in events {
            if let Some(page) = w.push(*ts, p).unwrap() {
                out.extend(page);
            }
        }
        out.extend(w.finish_page());
        out
    }

    /// CPU 1's `(ts, event name, prev_pid)` of a written capture, and whether its first
    /// page follows lost events.
    fn read_back(path: &Path) -> (Vec<(u64, String, i64)>, bool) {
        let file = TraceFile::open(path).unwrap();
        let mut stream = file.records().unwrap();
        let (mut out, mut lost) = (Vec::new(), None);
        while let Some(r) = stream.next_record().unwrap() {
            if r.cpu != 1 {
                continue;
            }
            lost.get_or_insert(r.missed_before.is_some());
            let name = r.format.map(|f| f.name.clone()).unwrap_or_default();
            out.push((r.ts, name, r.int_named("prev_pid").unwrap_or(-1)));
        }
        (out, lost.unwrap_or(false))
    }

    #[test]
    fn kept_switches_go_between_the_events_of_their_cpu_in_time_order() {
        let (layout, events) = fixture();
        assert!(events.len() > 100);
        let (t0, t1) = (events[10].0, events[events.len() - 10].0);
        let step = (t1 - t0) / 50;
        let recs: Vec<SchedRecord> = (0..50)
            .map(|i| switch(t0 + i * step, 1000 + i as i32, 0))
            .collect();
        let cpus = vec![Vec::new(), pages(&layout, &events, false)];
        let sched = vec![
            CpuSched::default(),
            CpuSched {
                records: recs.clone(),
                since: None,
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spike-001.dat");
        let sum = layout.write(&cpus, &sched, 0, u64::MAX, &path).unwrap();
        let (got, lost) = read_back(&path);
        assert!(!lost);
        assert_eq!(got.len(), events.len() + recs.len());
        assert_eq!(sum.events, got.len() as u64);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "out of order");
        let switches: Vec<&(u64, String, i64)> =
            got.iter().filter(|e| e.1 == "sched_switch").collect();
        assert_eq!(switches.len(), recs.len());
        for (s, r) in switches.iter().zip(&recs) {
            assert_eq!((s.0, s.2), (r.ts, i64::from(r.pid)));
        }
    }

    #[test]
    fn where_the_ring_went_round_the_cpus_other_events_start_with_it_marked_lost() {
        let (layout, events) = fixture();
        let since = events[events.len() / 2].0;
        let recs = vec![
            switch(since, 7, 0),
            switch(events[events.len() - 5].0, 8, 0),
        ];
        let cpus = vec![Vec::new(), pages(&layout, &events, false)];
        let sched = vec![
            CpuSched::default(),
            CpuSched {
                records: recs,
                since: Some(since),
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("spike-001.dat");
        layout.write(&cpus, &sched, 0, u64::MAX, &path).unwrap();
        let (got, lost) = read_back(&path);
        assert!(lost, "the first page must say events were lost before it");
        assert_eq!(got[0].0, since);
        assert_eq!(got.iter().filter(|e| e.1 == "sched_switch").count(), 2);
        assert_eq!(
            got.len(),
            events.iter().filter(|e| e.0 >= since).count() + 2
        );

        // The other way round: the flight buffer overwritten (its first page marked),
        // the kept switches older than its first event left out.
        let late = &events[events.len() / 2..];
        let recs = vec![switch(events[0].0, 7, 0), switch(late[3].0, 8, 0)];
        let cpus = vec![Vec::new(), pages(&layout, late, true)];
        let sched = vec![
            CpuSched::default(),
            CpuSched {
                records: recs,
                since: None,
            },
        ];
        layout.write(&cpus, &sched, 0, u64::MAX, &path).unwrap();
        let (got, lost) = read_back(&path);
        assert!(lost);
        let switches: Vec<i64> = got
            .iter()
            .filter(|e| e.1 == "sched_switch")
            .map(|e| e.2)
            .collect();
        assert_eq!(switches, vec![8]);
    }

    #[test]
    fn atomic_files_are_private_and_complete() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("spike-001.txt");
        let n = write_atomic(&p, |w| w.write_all(b"hello")).unwrap();
        assert_eq!(n, 5);
        assert_eq!(fs::read(&p).unwrap(), b"hello");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // A failing writer leaves neither the file nor the temporary behind.
        let q = dir.path().join("bad.txt");
        assert!(write_atomic(&q, |_| Err(std::io::Error::other("boom"))).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
