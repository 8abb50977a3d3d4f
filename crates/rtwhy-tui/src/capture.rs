//! A capture in memory: decoded once, every event kept compact and sorted by time, each
//! CPU's lanes (who ran, hard IRQs, softirqs, gaps without events) built once, and the
//! analysis pipeline's diagnosis of every spike and timerlat period.
//!
//! The viewer never decodes again while drawing: a window is found by binary search
//! over the sorted events, and only the lane spans that intersect it are looked at.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtwhy_analyze::{Analysis, Config, Pipeline};
use rtwhy_decode::input::{self, BufferNames, Finish, Header, Item, Raw, Sink};
use rtwhy_decode::print::Printer;
use rtwhy_decode::{Record, TraceMeta};
use rtwhy_model::{Comm, Event, EventKind, Timerlat};

use crate::{Error, Result};
use rtwhy_report::lanes::{Lane, LaneBuilder};

/// One event as the viewer keeps it: 24 bytes plus the record's payload in an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    /// Timestamp in the trace clock.
    pub ts: u64,
    /// Where its bytes start in the arena (payload for trace.dat, the line for text).
    off: u32,
    /// `common_pid`: the task current on the CPU.
    pub pid: i32,
    /// CPU.
    pub cpu: u16,
    /// Event type: the format id (trace.dat) or an index into the name table (text).
    ty: u16,
    /// Length of its bytes in the arena.
    len: u16,
    /// Which trace.dat buffer (top level or an instance) it came from.
    buffer: u8,
    /// The kernel dropped events on this CPU just before this one.
    pub dropped_before: bool,
}

/// A trace.dat's printing state: payloads are printed as `trace-cmd report` prints them.
/// The capture owns the trace's metadata, so it outlives the file.
struct Dat {
    meta: Arc<TraceMeta>,
    /// Buffer names by index (empty for the top level).
    buffers: BufferNames,
    /// Events dropped before each flagged event: event index (ascending) and count.
    missed: Vec<(usize, u64)>,
    printer: RefCell<Printer>,
}

/// Where a capture's events came from, and how to print them.
enum Body {
    /// A trace.dat.
    Dat(Box<Dat>),
    /// Text: the arena holds each event's own line.
    Text {
        /// Event names by type index.
        names: Vec<String>,
    },
}

/// A decoded, indexed, analyzed trace.
pub struct Capture {
    /// The file, as given.
    pub path: PathBuf,
    events: Vec<Ev>,
    arena: Vec<u8>,
    body: Body,
    /// One lane per CPU that has events, by CPU number order.
    pub lanes: Vec<Lane>,
    /// The last name seen for each thread id.
    pub tasks: HashMap<i32, Comm>,
    /// Latency markers in the trace (rtwhy breaches, cyclictest's `hit latency threshold`):
    /// time and CPU.
    pub breaches: Vec<(u64, u32)>,
    /// Wake-up requests (`sched_waking`, or `sched_wakeup` in a trace without it): the
    /// times each thread was woken, in order.
    pub wakeups: HashMap<i32, Vec<u64>>,
    /// Every spike, diagnosed.
    pub analysis: Analysis,
    /// The timerlat periods over the threshold, diagnosed, when the trace holds timerlat
    /// samples (rtla/timerlat).
    pub timerlat: Option<Timerlat>,
    /// Events the kernel dropped (as far as the pages say; a page that only flags a loss
    /// counts nothing) and how many times a loss was flagged.
    pub dropped: (u64, u64),
    /// Problems met while reading, one line each.
    pub warnings: Vec<String>,
    /// Whether timestamps are nanoseconds (not raw counter ticks).
    pub ts_in_nanos: bool,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("path", &self.path)
            .field("events", &self.events.len())
            .field("lanes", &self.lanes.len())
            .field("spikes", &self.analysis.spikes.len())
            .finish()
    }
}

/// Collects events, lanes and the analysis in one pass: the sink the decoder pushes a
/// file's events into.
struct Loader {
    path: PathBuf,
    config: Config,
    events: Vec<Ev>,
    arena: Vec<u8>,
    body: Body,
    lanes: LaneBuilder,
    tasks: HashMap<i32, Comm>,
    breaches: Vec<(u64, u32)>,
    wakings: Vec<(u64, i32)>,
    wakeups: Vec<(u64, i32)>,
    pipeline: Option<Pipeline>,
    sorted: bool,
    ts_in_nanos: bool,
}

impl Loader {
    fn new(path: &Path, config: &Config) -> Loader {
        Loader {
            path: path.to_path_buf(),
            config: config.clone(),
            events: Vec::new(),
            arena: Vec::new(),
            body: Body::Text { names: Vec::new() },
            lanes: LaneBuilder::new(config.threshold.0),
            tasks: HashMap::new(),
            breaches: Vec::new(),
            wakings: Vec::new(),
            wakeups: Vec::new(),
            pipeline: None,
            sorted: true,
            ts_in_nanos: true,
        }
    }

    fn offset(&self, at: usize) -> Result<u32> {
        u32::try_from(at).map_err(|_| Error::TooLarge {
            path: self.path.clone(),
        })
    }

    /// Notes what the lanes and the search need from a typed event.
    fn observe(&mut self, ev: &Event) {
        // The compact entry for `ev` is already pushed: compare it with the one before.
        if let [.., before, last] = self.events.as_slice() {
            if before.ts > last.ts {
                self.sorted = false;
            }
        }
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                next_comm,
                next_pid,
                ..
            } => {
                self.tasks.insert(*prev_pid, *prev_comm);
                self.tasks.insert(*next_pid, *next_comm);
            }
            EventKind::SchedWaking { comm, pid, .. } => {
                self.tasks.entry(*pid).or_insert(*comm);
                self.wakings.push((ev.ts.0, *pid));
            }
            EventKind::SchedWakeup { comm, pid, .. } => {
                self.tasks.entry(*pid).or_insert(*comm);
                self.wakeups.push((ev.ts.0, *pid));
            }
            EventKind::SchedWakeupNew { comm, pid, .. } => {
                self.tasks.entry(*pid).or_insert(*comm);
            }
            EventKind::Print { text }
                if text.contains(rtwhy_model::BREACH_PREFIX)
                    || text.contains("hit latency threshold") =>
            {
                self.breaches.push((ev.ts.0, ev.cpu));
            }
            _ => {}
        }
        self.lanes.observe(ev);
    }

    fn finish(mut self, mut warnings: Vec<String>) -> Capture {
        if !self.sorted {
            // Report text from several files pasted together; the viewer needs time order.
            self.events.sort_by_key(|e| e.ts);
            self.breaches.sort_unstable();
            self.wakings.sort_unstable();
            self.wakeups.sort_unstable();
        }
        self.events.shrink_to_fit();
        self.arena.shrink_to_fit();
        let end = self.events.last().map(|e| e.ts).unwrap_or(0);
        let dropped = match &self.body {
            Body::Dat(d) => (d.missed.iter().map(|m| m.1).sum(), d.missed.len() as u64),
            Body::Text { .. } => (0, 0),
        };
        let finished = self
            .pipeline
            .unwrap_or_else(|| Pipeline::new(self.config, Default::default()))
            .finish();
        warnings.extend(finished.warnings);
        let mut capture = Capture {
            path: self.path,
            events: self.events,
            arena: self.arena,
            body: self.body,
            lanes: self.lanes.finish(end),
            tasks: self.tasks,
            breaches: self.breaches,
            wakeups: by_thread(if self.wakings.is_empty() {
                self.wakeups
            } else {
                self.wakings
            }),
            analysis: finished.analysis,
            timerlat: finished.timerlat,
            dropped,
            warnings,
            ts_in_nanos: self.ts_in_nanos,
        };
        capture.print_evidence();
        capture
    }
}

impl Sink for Loader {
    type Error = Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool> {
        self.pipeline = Some(Pipeline::for_input(self.config.clone(), header));
        self.ts_in_nanos = header.ts_in_nanos;
        if let Some(meta) = &header.meta {
            self.body = Body::Dat(Box::new(Dat {
                meta: Arc::clone(meta),
                buffers: BufferNames::default(),
                missed: Vec::new(),
                printer: RefCell::new(Printer::new(Arc::clone(meta))),
            }));
        }
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool> {
        let dropped = item.dropped_before();
        let off = self.offset(self.arena.len())?;
        let index = self.events.len();
        let entry = match (&item.raw, &mut self.body) {
            (Raw::Record { record, buffer }, Body::Dat(d)) => {
                let (b, _) = d.buffers.number(buffer);
                let len = record.data.len().min(usize::from(u16::MAX));
                self.arena
                    .extend_from_slice(record.data.get(..len).unwrap_or_default());
                if let Some(n) = record.missed_before {
                    d.missed.push((index, n));
                }
                // Task names as trace-cmd knows them at each record: it prints a pid
                // whose name it has not met yet as `<...>`.
                d.printer.get_mut().learn(record, index as u64);
                Ev {
                    ts: record.ts,
                    off,
                    pid: record.pid(),
                    cpu: u16::try_from(record.cpu).unwrap_or(u16::MAX),
                    ty: record
                        .event_id()
                        .and_then(|t| u16::try_from(t).ok())
                        .unwrap_or(u16::MAX),
                    len: len as u16,
                    buffer: u8::try_from(b).unwrap_or(u8::MAX),
                    dropped_before: record.missed_before.is_some(),
                }
            }
            (Raw::Line(line), _) => {
                let len = line.len().min(usize::from(u16::MAX));
                self.arena
                    .extend_from_slice(line.as_bytes().get(..len).unwrap_or_default());
                Ev {
                    ts: item.ts,
                    off,
                    pid: 0,
                    cpu: u16::try_from(item.cpu).unwrap_or(u16::MAX),
                    ty: u16::MAX,
                    len: len as u16,
                    buffer: 0,
                    dropped_before: false,
                }
            }
            // A record comes with its trace's metadata, announced in `begin`.
            (Raw::Record { .. }, Body::Text { .. }) => return Ok(true),
        };
        self.events.push(entry);
        let ev = item.into_event();
        if let (Body::Text { names }, Some(last)) = (&mut self.body, self.events.last_mut()) {
            let name = ev.kind.name();
            let ty = match names.iter().position(|n| n == name) {
                Some(i) => i,
                None => {
                    names.push(name.to_string());
                    names.len() - 1
                }
            };
            last.ty = u16::try_from(ty).unwrap_or(u16::MAX);
            last.pid = ev.pid;
        }
        self.observe(&ev);
        if let Some(p) = self.pipeline.as_mut() {
            // A text line is the event's bytes in the arena; the timerlat analysis quotes it.
            let line = match &self.body {
                Body::Text { .. } => self
                    .arena
                    .get(off as usize..)
                    .and_then(|b| std::str::from_utf8(b).ok()),
                Body::Dat(_) => None,
            };
            p.push(ev, line, dropped);
        }
        Ok(true)
    }
}

impl From<rtwhy_decode::Error> for Error {
    fn from(source: rtwhy_decode::Error) -> Error {
        Error::Input(source)
    }
}

/// Wake-up times by thread, from `(time, thread)` pairs in time order.
fn by_thread(v: Vec<(u64, i32)>) -> HashMap<i32, Vec<u64>> {
    let mut m: HashMap<i32, Vec<u64>> = HashMap::new();
    for (ts, tid) in v {
        m.entry(tid).or_default().push(ts);
    }
    m
}

impl Capture {
    /// Each evidence line as the events pane prints its event, `trace-cmd report`'s line,
    /// instead of the analyzer's own rendering of the event (which has no symbols, and
    /// truncates where trace-cmd rounds the timestamp).
    fn print_evidence(&mut self) {
        let mut fixed: Vec<(usize, usize, String)> = Vec::new();
        for (si, s) in self.analysis.spikes.iter().enumerate() {
            for (ei, e) in s.evidence.iter().enumerate() {
                let name = event_name(&e.line);
                let from = self.events.partition_point(|x| x.ts < e.ts.0);
                let same = self.events.get(from..).unwrap_or_default();
                let line = same
                    .iter()
                    .take_while(|x| x.ts == e.ts.0)
                    .enumerate()
                    .filter(|(_, x)| u32::from(x.cpu) == e.cpu)
                    .map(|(k, _)| self.own_line(from + k))
                    .find(|l| event_name(l) == name);
                if let Some(line) = line {
                    fixed.push((si, ei, line));
                }
            }
        }
        for (si, ei, line) in fixed {
            if let Some(e) = self
                .analysis
                .spikes
                .get_mut(si)
                .and_then(|s| s.evidence.get_mut(ei))
            {
                e.line = line;
            }
        }
    }

    /// Event `i`'s own line: without a dropped-events notice before it or a stack's
    /// frames after it.
    fn own_line(&self, i: usize) -> String {
        let mut out = String::new();
        self.write_line(i, &mut out);
        let own = match self.events.get(i) {
            Some(ev) if ev.dropped_before => out.split_once('\n').map_or("", |x| x.1),
            _ => out.as_str(),
        };
        own.lines().next().unwrap_or_default().to_string()
    }

    /// Reads the trace at `path` (any format rtwhy-decode recognises) once: keeps every
    /// event compact, builds the lanes and analyzes it with `config`.
    pub fn open(path: &Path, config: &Config) -> Result<Capture> {
        let mut loader = Loader::new(path, config);
        let end: Finish = input::read(path, &mut loader)?;
        Ok(loader.finish(end.warnings))
    }

    /// Every event, sorted by time.
    pub fn events(&self) -> &[Ev] {
        &self.events
    }

    /// First and last event time.
    pub fn span(&self) -> (u64, u64) {
        match (self.events.first(), self.events.last()) {
            (Some(a), Some(b)) => (a.ts, b.ts),
            _ => (0, 0),
        }
    }

    /// Index of the first event at or after `ts`.
    pub fn index_at(&self, ts: u64) -> usize {
        self.events.partition_point(|e| e.ts < ts)
    }

    /// The events with `start <= ts <= end`, as an index range.
    pub fn range(&self, start: u64, end: u64) -> std::ops::Range<usize> {
        let lo = self.index_at(start);
        let hi = self.events.partition_point(|e| e.ts <= end);
        lo..hi.max(lo)
    }

    /// Bytes this capture keeps for its events: the compact entries, their payloads (or
    /// the report text) and the lanes with their summaries, by allocated capacity. The
    /// analysis is not counted.
    pub fn heap_bytes(&self) -> (usize, usize, usize) {
        let lanes = self.lanes.iter().map(Lane::heap_bytes).sum();
        (
            self.events.capacity() * std::mem::size_of::<Ev>(),
            self.arena.capacity(),
            lanes,
        )
    }

    /// How many times the kernel flagged dropped events among the events of `range`.
    pub fn drops_in(&self, range: std::ops::Range<usize>) -> usize {
        match &self.body {
            Body::Dat(d) => {
                let lo = d.missed.partition_point(|m| m.0 < range.start);
                let hi = d.missed.partition_point(|m| m.0 < range.end);
                hi.saturating_sub(lo)
            }
            Body::Text { .. } => 0,
        }
    }

    /// The name of event `i` (`sched_switch`...).
    pub fn event_name(&self, i: usize) -> &str {
        let Some(ev) = self.events.get(i) else {
            return "";
        };
        match &self.body {
            Body::Dat(d) => d
                .meta
                .format(u32::from(ev.ty))
                .map(|f| f.name.as_str())
                .unwrap_or("unknown"),
            Body::Text { names } => names
                .get(usize::from(ev.ty))
                .map(String::as_str)
                .unwrap_or(""),
        }
    }

    /// The name of thread `tid`, when the trace named it.
    pub fn task_name(&self, tid: i32) -> Option<Comm> {
        if tid == 0 {
            return Some(Comm::new("<idle>"));
        }
        self.tasks.get(&tid).copied()
    }

    fn bytes(&self, ev: &Ev) -> &[u8] {
        let start = ev.off as usize;
        self.arena
            .get(start..start + usize::from(ev.len))
            .unwrap_or_default()
    }

    /// Appends event `i` the way `trace-cmd report` prints it (for report text, the
    /// file's own line), preceded by trace-cmd's `CPU:n [N EVENTS DROPPED]` line when
    /// the kernel dropped events just before it.
    pub fn write_line(&self, i: usize, out: &mut String) {
        let Some(ev) = self.events.get(i) else { return };
        let bytes = self.bytes(ev);
        match &self.body {
            Body::Text { .. } => out.push_str(&String::from_utf8_lossy(bytes)),
            Body::Dat(d) => {
                let Dat {
                    meta,
                    buffers,
                    missed,
                    printer,
                } = &**d;
                let meta: &TraceMeta = meta;
                let format = meta.format(u32::from(ev.ty));
                let rec = Record {
                    ts: ev.ts,
                    cpu: u32::from(ev.cpu),
                    data: bytes,
                    format,
                    endian: meta.endian,
                    missed_before: missed
                        .binary_search_by_key(&i, |m| m.0)
                        .ok()
                        .and_then(|k| missed.get(k))
                        .map(|m| m.1),
                    following: &[],
                };
                let mut p = printer.borrow_mut();
                p.set_instance(buffers.name(usize::from(ev.buffer)));
                p.write_report_as_of(&rec, i as u64, out);
            }
        }
    }

    /// The first event at or after index `from` (wrapping around) whose line contains
    /// `needle`, ignoring ASCII case, or whose task is named `needle`.
    pub fn search(&self, from: usize, needle: &str) -> Option<usize> {
        let needle = needle.to_ascii_lowercase();
        let n = self.events.len();
        let mut line = String::new();
        for k in 0..n {
            let i = (from + k) % n;
            line.clear();
            self.write_line(i, &mut line);
            if line.to_ascii_lowercase().contains(&needle) {
                return Some(i);
            }
        }
        None
    }
}

/// The captures of an `rtwhy record` session directory (`spike-NNN.dat`), in order; an
/// error when there is none.
pub fn session_captures(dir: &Path) -> Result<Vec<PathBuf>> {
    let v = capture_files(dir)?;
    if v.is_empty() {
        return Err(Error::NoCaptures {
            path: dir.to_path_buf(),
        });
    }
    Ok(v)
}

/// The `spike-NNN.dat` files in `dir`, in order, maybe none (a session that has not
/// captured yet). The recorder writes each under a hidden temporary name and renames it,
/// so every file listed is complete.
pub fn capture_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let rd = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(rtwhy_model::SessionDir::is_capture_name)
        })
        .collect();
    v.sort();
    Ok(v)
}

/// The event name of a report line (`comm-pid [cpu] ts: name: fields`).
fn event_name(line: &str) -> &str {
    line.split_once("] ")
        .and_then(|(_, rest)| rest.split_once(": "))
        .and_then(|(_, ev)| ev.split(':').next())
        .unwrap_or_default()
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spikes_of_a_capture_are_judged_with_the_facts_recorded_at_its_end() {
        // rtwhy's recorder writes its `rtwhy-fact:` markers (here: CPU 1 isolated,
        // preempt=rt) at the end of each capture; the viewer must judge the spikes before
        // them with those facts, as `rtwhy analyze` does (fixtures/rt_irq_on_isolated_cpu).
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/rt_irq_on_isolated_cpu/capture.dat");
        let config = Config {
            threshold: rtwhy_model::Nanos(2_000_000),
            ..Config::default()
        };
        let capture = Capture::open(&path, &config).expect("the fixture opens");
        let causes: Vec<&str> = capture
            .analysis
            .spikes
            .iter()
            .map(|s| s.primary.cause.as_str())
            .collect();
        // CPU 1 is isolated, so IRQ time there is irq_on_isolated_cpu; judged without the
        // facts, two of these spikes were plain `irq`.
        assert!(causes.contains(&"irq_on_isolated_cpu"), "{causes:?}");
        assert!(!causes.contains(&"irq"), "{causes:?}");
        assert!(!causes.contains(&"kernel_nonpreemptible"), "{causes:?}");
    }

    #[test]
    fn an_event_entry_is_24_bytes() {
        // A million events must stay a few tens of MiB besides their payloads.
        assert_eq!(std::mem::size_of::<Ev>(), 24);
    }
}
