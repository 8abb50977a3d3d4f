//! The document `rtwhy info` prints: what a trace says about itself (its kind, a
//! trace.dat's header, metadata and buffers) and what its events add up to (how many,
//! of which event, on which CPU, over which time span, how many lost), as JSON or as
//! text made from that JSON.
//!
//! ```
//! use rtwhy_report::info::{self, Counts};
//!
//! let mut c = Counts::default();
//! c.add("sched:sched_switch", 1, 1_000_000_000);
//! c.add("sched:sched_switch", 0, 1_500_000_000);
//! let mut doc = info::text_input("report text", "trace.txt");
//! doc["events"] = c.to_json();
//! let text = info::text(&doc);
//! assert!(text.contains("time span:     1.000000 .. 1.500000 (0.500000 s)"), "{text}");
//! assert!(text.contains("per CPU:       cpu0=1 cpu1=1"), "{text}");
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;

use rtwhy_decode::tracedat::TraceFile;
use serde_json::{json, Value};

/// A line of the text being built.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Counts gathered by one pass over the events.
#[derive(Debug, Default)]
pub struct Counts {
    total: u64,
    by_event: BTreeMap<String, u64>,
    by_cpu: BTreeMap<u32, u64>,
    first: Option<u64>,
    last: Option<u64>,
    /// Events the kernel reported lost.
    pub missed: u64,
    /// Pages that had events lost before them.
    pub missed_pages: u64,
}

impl Counts {
    /// Counts one event of `name` on `cpu` at `ts` (ns).
    pub fn add(&mut self, name: &str, cpu: u32, ts: u64) {
        self.total += 1;
        match self.by_event.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.by_event.insert(name.to_string(), 1);
            }
        }
        *self.by_cpu.entry(cpu).or_default() += 1;
        self.first = Some(self.first.map_or(ts, |f| f.min(ts)));
        self.last = Some(self.last.map_or(ts, |l| l.max(ts)));
    }

    /// The `events` object of the document.
    pub fn to_json(&self) -> Value {
        json!({
            "total": self.total,
            "first_ts": self.first,
            "last_ts": self.last,
            "span_ns": self.first.zip(self.last).map(|(f, l)| l - f),
            "missed_events": self.missed,
            "pages_with_missed_events": self.missed_pages,
            "by_cpu": self.by_cpu.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "by_event": self.by_event,
        })
    }
}

/// What a trace.dat says about itself; the event counts and warnings are added after
/// its events are read.
pub fn trace_dat(file: &TraceFile, path: Option<String>) -> Value {
    let meta = file.meta();
    let info = file.info();
    let buffers: Vec<Value> = file
        .buffers()
        .iter()
        .map(|b| {
            json!({
                "name": b.name,
                "clock": b.clock,
                "page_size": b.page_size,
                "compressed": b.compressed,
                "cpus": b.cpus.iter().map(|c| json!({"cpu": c.cpu, "offset": c.offset, "size": c.size})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "kind": "trace.dat",
        "path": path,
        "file_size": info.file_len,
        "version": info.version,
        "compression": info.compression.as_ref().map(|(n, v)| format!("{n} {v}")),
        "endian": format!("{:?}", meta.endian).to_lowercase(),
        "long_size": meta.long_size,
        "kernel_long_size": meta.kernel_long_size,
        "page_size": meta.page_size,
        "clock": meta.clock,
        "timestamps": if meta.ts_in_nanos() { "nanoseconds" } else { "raw counter" },
        "tsc2nsec": meta.tsc2nsec.map(|t| json!({"mult": t.mult, "shift": t.shift, "offset": t.offset})),
        "guest_host_sync": meta.host_sync.is_some(),
        "cpus": info.cpus,
        "kernel": info.uname,
        "tracer_version": info.tracer_version,
        "has_options": info.has_options,
        "event_formats": meta.formats.len(),
        "kallsyms": meta.kallsyms.line_count(),
        "printk_formats": meta.printk.len(),
        "saved_cmdlines": meta.cmdlines.len(),
        "buffers": buffers,
        "events": null,
        "notes": info.notes,
        "warnings": [],
    })
}

/// What a file other than a trace.dat says about itself: its kind and path (the event
/// counts, CPUs and warnings are added after its events are read).
pub fn text_input(kind: &str, path: &str) -> Value {
    json!({
        "kind": kind,
        "path": path,
        "cpus": null,
        "events": null,
        "warnings": [],
    })
}

fn secs(v: &Value) -> String {
    match v.as_u64() {
        Some(ns) => format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000),
        None => "-".into(),
    }
}

/// The document as text, one fact a line, the events by name most frequent first.
pub fn text(r: &Value) -> String {
    let mut text = String::new();
    let out = &mut text;
    let s = |k: &str| match &r[k] {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    outln!(out, "file:          {}", s("path"));
    outln!(out, "kind:          {}", s("kind"));
    if r["kind"] == "trace.dat" {
        outln!(out, "version:       {}", s("version"));
        outln!(out, "file size:     {} bytes", s("file_size"));
        outln!(
            out,
            "compression:   {}",
            r["compression"].as_str().unwrap_or("none")
        );
        outln!(
            out,
            "machine:       {} endian, {}-byte long, kernel long {}, page size {}",
            s("endian"),
            s("long_size"),
            s("kernel_long_size"),
            s("page_size")
        );
        outln!(out, "clock:         {} ({})", s("clock"), s("timestamps"));
        outln!(out, "kernel:        {}", s("kernel"));
        outln!(out, "recorded by:   trace-cmd {}", s("tracer_version"));
        outln!(
            out,
            "metadata:      {} event formats, {} kernel symbols, {} printk formats, {} saved task names",
            s("event_formats"),
            s("kallsyms"),
            s("printk_formats"),
            s("saved_cmdlines")
        );
        for b in r["buffers"].as_array().into_iter().flatten() {
            let name = b["name"]
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or("(top level)");
            let cpus: Vec<String> = b["cpus"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| format!("cpu{}={}B", c["cpu"], c["size"]))
                .collect();
            outln!(out, "buffer:        {name}: {}", cpus.join(" "));
        }
    }
    outln!(out, "cpus:          {}", s("cpus"));
    let ev = &r["events"];
    outln!(out, "events:        {}", ev["total"]);
    outln!(
        out,
        "time span:     {} .. {} ({} s)",
        secs(&ev["first_ts"]),
        secs(&ev["last_ts"]),
        secs(&ev["span_ns"])
    );
    if ev["missed_events"].as_u64().unwrap_or(0) > 0
        || ev["pages_with_missed_events"].as_u64().unwrap_or(0) > 0
    {
        outln!(
            out,
            "lost events:   {} (on {} pages; 0 means the kernel did not count them)",
            ev["missed_events"],
            ev["pages_with_missed_events"]
        );
    }
    if let Some(cpus) = ev["by_cpu"].as_object() {
        let per: Vec<String> = cpus.iter().map(|(k, v)| format!("cpu{k}={v}")).collect();
        outln!(out, "per CPU:       {}", per.join(" "));
    }
    if let Some(by) = ev["by_event"].as_object() {
        let mut rows: Vec<(&String, u64)> = by
            .iter()
            .map(|(k, v)| (k, v.as_u64().unwrap_or(0)))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        outln!(out, "by event:");
        for (name, n) in rows {
            outln!(out, "  {n:>10}  {name}");
        }
    }
    for n in r["notes"].as_array().into_iter().flatten() {
        outln!(out, "note:          {}", n.as_str().unwrap_or_default());
    }
    for w in r["warnings"].as_array().into_iter().flatten() {
        outln!(out, "warning:       {}", w.as_str().unwrap_or_default());
    }
    text
}
