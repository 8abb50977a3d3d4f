//! The spike windows in the Chrome trace-event JSON format, which ui.perfetto.dev and
//! chrome://tracing open: one process per spike, one thread track per CPU for tasks and
//! one for interrupts, `X` (complete) events for spans, `i` (instant) events for the
//! start and end of the latency and the evidence, `M` (metadata) events naming them.
//! Times are microseconds of the trace clock (fractions keep the nanoseconds).

use serde_json::{json, Value};

use crate::timeline::{SpanKind, Timeline};
use crate::SpikeReport;

/// The track of the spike's latency itself, in every spike's process.
pub const LATENCY_TID: u32 = 1;

/// Track of CPU `cpu`'s tasks.
pub fn task_tid(cpu: u32) -> u32 {
    10 + cpu * 2
}

/// Track of CPU `cpu`'s hard IRQs and softirqs.
pub fn irq_tid(cpu: u32) -> u32 {
    11 + cpu * 2
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn meta(name: &str, pid: u32, tid: u32, value: Value) -> Value {
    json!({"name": name, "ph": "M", "pid": pid, "tid": tid, "args": value})
}

/// The trace-event document of every spike in `spikes`, with its timeline.
pub fn document(spikes: &[(&SpikeReport, &Timeline)]) -> Value {
    let mut events = Vec::new();
    let mut timed = Vec::new();
    for (report, tl) in spikes {
        let s = &report.spike;
        let pid = s.id;
        events.push(meta(
            "process_name",
            pid,
            0,
            json!({"name": format!("spike {}: {} late {} ({})", s.id, s.victim, rtwhy_model::human_duration(s.latency_ns), s.primary.cause)}),
        ));
        events.push(meta(
            "process_sort_index",
            pid,
            0,
            json!({"sort_index": pid}),
        ));
        events.push(meta(
            "thread_name",
            pid,
            LATENCY_TID,
            json!({"name": "latency"}),
        ));
        events.push(meta(
            "thread_sort_index",
            pid,
            LATENCY_TID,
            json!({"sort_index": 0}),
        ));
        for (i, cpu) in tl.cpus.iter().enumerate() {
            let order = 1 + 2 * i as u32;
            events.push(meta(
                "thread_name",
                pid,
                task_tid(*cpu),
                json!({"name": format!("CPU {cpu}")}),
            ));
            events.push(meta(
                "thread_sort_index",
                pid,
                task_tid(*cpu),
                json!({"sort_index": order}),
            ));
            events.push(meta(
                "thread_name",
                pid,
                irq_tid(*cpu),
                json!({"name": format!("CPU {cpu} irq/softirq")}),
            ));
            events.push(meta(
                "thread_sort_index",
                pid,
                irq_tid(*cpu),
                json!({"sort_index": order + 1}),
            ));
        }
        timed.push(json!({
            "name": format!("latency {}", rtwhy_model::human_duration(s.latency_ns)),
            "cat": "spike",
            "ph": "X",
            "ts": us(s.start.0),
            "dur": us(s.end.0.saturating_sub(s.start.0)),
            "pid": pid,
            "tid": LATENCY_TID,
            "args": {
                "cause": s.primary.cause.as_str(),
                "confidence": s.primary.confidence.as_str(),
                "summary": s.primary.summary,
                "victim_tid": s.victim.tid,
                "cpu": s.cpu,
            },
        }));
        for sp in &tl.spans {
            let (tid, cat) = match sp.kind {
                SpanKind::Irq => (irq_tid(sp.cpu), "irq"),
                SpanKind::Softirq => (irq_tid(sp.cpu), "softirq"),
                SpanKind::NoEvents => (irq_tid(sp.cpu), "no_events"),
                SpanKind::Idle => (task_tid(sp.cpu), "idle"),
                SpanKind::Victim => (task_tid(sp.cpu), "victim"),
                SpanKind::RtTask => (task_tid(sp.cpu), "rt"),
                SpanKind::Task => (task_tid(sp.cpu), "task"),
            };
            timed.push(json!({
                "name": sp.label,
                "cat": cat,
                "ph": "X",
                "ts": us(sp.from.0),
                "dur": us(sp.to.0 - sp.from.0),
                "pid": pid,
                "tid": tid,
                "args": {"tid": sp.tid},
            }));
        }
        for m in &tl.markers {
            let why = m
                .label
                .strip_prefix('E')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| s.evidence.get(n.wrapping_sub(1)))
                .map(|e| e.why.clone());
            timed.push(json!({
                "name": m.label,
                "cat": "marker",
                "ph": "i",
                "s": "t",
                "ts": us(m.at.0),
                "pid": pid,
                "tid": task_tid(m.cpu),
                "args": {"why": why},
            }));
        }
    }
    timed.sort_by(|a, b| {
        let ts = |v: &Value| v["ts"].as_f64().unwrap_or(0.0);
        ts(a).total_cmp(&ts(b))
    });
    events.extend(timed);
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"generator": "rtwhy report", "clock": "trace clock, microseconds"},
    })
}
