//! What ran where in a spike's window: per-CPU spans of tasks, hard IRQs and softirqs,
//! and markers for the moments that matter. Both the SVG and the Perfetto output draw
//! from this one model, so they always agree; its spans are the window's
//! [`crate::lanes`], the model of the terminal viewer's timeline, with names and kinds.

use std::collections::HashMap;

use rtwhy_model::{softirq_name, Comm, EventKind, Nanos, Spike, SpikeKind};

use crate::lanes::{Intr, LaneBuilder};
use crate::Window;

/// What a span shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// The late thread itself.
    Victim,
    /// Another real-time task.
    RtTask,
    /// A normal (SCHED_OTHER) task.
    Task,
    /// The idle task.
    Idle,
    /// A hard interrupt handler.
    Irq,
    /// A softirq.
    Softirq,
    /// A stretch with no event at all on the CPU while a task ran (a stopped CPU or vCPU
    /// looks like this; an idle CPU is quiet by nature and shows as idle).
    NoEvents,
}

impl SpanKind {
    /// Every kind, in legend order.
    pub const ALL: [SpanKind; 7] = [
        SpanKind::Victim,
        SpanKind::RtTask,
        SpanKind::Task,
        SpanKind::Idle,
        SpanKind::Irq,
        SpanKind::Softirq,
        SpanKind::NoEvents,
    ];

    /// The legend's words.
    pub fn label(self) -> &'static str {
        match self {
            SpanKind::Victim => "late thread",
            SpanKind::RtTask => "real-time task",
            SpanKind::Task => "normal task",
            SpanKind::Idle => "idle",
            SpanKind::Irq => "hard IRQ",
            SpanKind::Softirq => "softirq",
            SpanKind::NoEvents => "no events",
        }
    }

    /// True for the interrupt track (drawn under the task track), which also shows
    /// stretches without events.
    pub fn is_interrupt(self) -> bool {
        matches!(self, SpanKind::Irq | SpanKind::Softirq | SpanKind::NoEvents)
    }
}

/// A stretch of time one thing had a CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The CPU.
    pub cpu: u32,
    /// What ran.
    pub kind: SpanKind,
    /// Start (clipped to the window).
    pub from: Nanos,
    /// End (clipped to the window).
    pub to: Nanos,
    /// `comm-tid`, `IRQ 36 virtio1-req.0` or `NET_RX`.
    pub label: String,
    /// The task's thread id (0 for idle and interrupts).
    pub tid: i32,
}

/// A moment worth pointing at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The CPU.
    pub cpu: u32,
    /// When.
    pub at: Nanos,
    /// Short label (`timer expired`, `ran`, `E2`).
    pub label: String,
}

/// Spans and markers of one spike's window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// Window start.
    pub from: Nanos,
    /// Window end.
    pub to: Nanos,
    /// The spike's CPU first, then the others that had events, ascending.
    pub cpus: Vec<u32>,
    /// Every span, by CPU then time.
    pub spans: Vec<Span>,
    /// The spike's start and end, then the evidence events (`E1`...).
    pub markers: Vec<Marker>,
}

/// Builds the timeline of `spike` from the events of `window`: the window's lanes
/// ([`crate::lanes`], the model the terminal viewer draws too), named and coloured.
pub fn build(spike: &Spike, window: &Window) -> Timeline {
    let victim = spike.victim.tid;
    // Names and priorities as the window's events give them; IRQ names from entries.
    let mut names: HashMap<i32, (Comm, i32)> = HashMap::new();
    let mut irq_names: HashMap<i32, &str> = HashMap::new();
    // A silence this long on a CPU is worth seeing: a quarter of the latency, at least
    // 100 us (a busy task between ticks is quieter than that only on tickless CPUs).
    let silence = (spike.latency_ns / 4).max(100_000);
    let mut builder = LaneBuilder::new(silence).starting_at(window.from.0);
    for ev in &window.events {
        builder.observe(ev);
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_comm,
                prev_pid,
                prev_prio,
                next_comm,
                next_pid,
                next_prio,
                ..
            } => {
                names.insert(*prev_pid, (*prev_comm, *prev_prio));
                names.insert(*next_pid, (*next_comm, *next_prio));
            }
            EventKind::SchedWaking {
                comm, pid, prio, ..
            }
            | EventKind::SchedWakeup {
                comm, pid, prio, ..
            }
            | EventKind::SchedWakeupNew {
                comm, pid, prio, ..
            } => {
                names.insert(*pid, (*comm, *prio));
            }
            EventKind::IrqHandlerEntry { irq, name } => {
                irq_names.insert(*irq, name);
            }
            _ => {}
        }
    }
    // The victim's own runs are drawn as the victim's whatever its priority.
    names.insert(
        victim,
        (spike.victim.comm, spike.victim.prio.unwrap_or(120)),
    );
    let lanes = builder.finish(window.to.0);

    let clip = |t: u64| Nanos(t.clamp(window.from.0, window.to.0));
    let mut spans = Vec::new();
    for lane in &lanes {
        for r in &lane.runs {
            let prio = match (r.prio, names.get(&r.tid)) {
                (Some(p), _) => p,
                (None, Some((_, p))) => *p,
                (None, None) => 120,
            };
            let kind = if r.tid == 0 {
                SpanKind::Idle
            } else if r.tid == victim {
                SpanKind::Victim
            } else if rtwhy_model::is_rt(prio) {
                SpanKind::RtTask
            } else {
                SpanKind::Task
            };
            // Every CPU's idle task is thread 0, named after its CPU.
            let label = match names.get(&r.tid) {
                _ if r.tid == 0 => format!("swapper/{}-0", lane.cpu),
                Some((c, _)) => format!("{c}-{}", r.tid),
                None => format!("<...>-{}", r.tid),
            };
            spans.push(Span {
                cpu: lane.cpu,
                kind,
                from: clip(r.start),
                to: clip(r.end),
                label,
                tid: r.tid,
            });
        }
        for i in &lane.intrs {
            let (kind, label) = match i.kind {
                Intr::Irq(irq) => (
                    SpanKind::Irq,
                    match irq_names.get(&irq) {
                        Some(name) => format!("IRQ {irq} {name}"),
                        None => format!("IRQ {irq}"),
                    },
                ),
                Intr::Softirq(vec) => (SpanKind::Softirq, softirq_name(vec).to_string()),
            };
            spans.push(Span {
                cpu: lane.cpu,
                kind,
                from: clip(i.start),
                to: clip(i.end),
                label,
                tid: 0,
            });
        }
        for &(from, to) in &lane.gaps {
            spans.push(Span {
                cpu: lane.cpu,
                kind: SpanKind::NoEvents,
                from: clip(from),
                to: clip(to),
                label: format!(
                    "no events for {}",
                    rtwhy_model::human_duration(to.saturating_sub(from))
                ),
                tid: 0,
            });
        }
    }
    spans.retain(|s| s.to > s.from);
    spans.sort_by_key(|s| (s.cpu, s.from, s.to));

    let mut lanes: Vec<u32> = lanes.iter().map(|l| l.cpu).collect();
    lanes.retain(|c| *c != spike.cpu);
    lanes.insert(0, spike.cpu);

    let mut markers = vec![
        Marker {
            cpu: spike.cpu,
            at: spike.start,
            label: start_label(spike).to_string(),
        },
        Marker {
            cpu: spike.cpu,
            at: spike.end,
            label: "ran".to_string(),
        },
    ];
    for (i, e) in spike.evidence.iter().enumerate() {
        if e.ts >= window.from && e.ts <= window.to {
            if !lanes.contains(&e.cpu) {
                lanes.push(e.cpu);
            }
            markers.push(Marker {
                cpu: e.cpu,
                at: e.ts,
                label: format!("E{}", i + 1),
            });
        }
    }
    Timeline {
        from: window.from,
        to: window.to,
        cpus: lanes,
        spans,
        markers,
    }
}

/// What the start of the latency was, in words.
pub fn start_label(spike: &Spike) -> &'static str {
    match spike.kind {
        SpikeKind::TimerWakeup => "timer expired",
        SpikeKind::Wakeup => "woken",
        SpikeKind::Preempted => "preempted",
        SpikeKind::LockWait => "blocked",
    }
}

#[cfg(test)]
mod tests {
    use rtwhy_model::{
        Confidence, Event, Finding, Nanos, Spike, SpikeKind, SpikeSource, TaskRef, TaskState,
    };

    use super::*;

    fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid,
            kind,
        }
    }

    fn switch(prev: (&str, i32, i32), next: (&str, i32, i32)) -> EventKind {
        EventKind::SchedSwitch {
            prev_comm: Comm::new(prev.0),
            prev_pid: prev.1,
            prev_prio: prev.2,
            prev_state: TaskState(0),
            next_comm: Comm::new(next.0),
            next_pid: next.1,
            next_prio: next.2,
        }
    }

    fn spike() -> Spike {
        Spike {
            id: 1,
            victim: TaskRef {
                tid: 10,
                comm: Comm::new("ctl"),
                prio: Some(19),
                boost: None,
            },
            cpu: 1,
            kind: SpikeKind::TimerWakeup,
            source: SpikeSource::Events,
            start: Nanos(2_000),
            end: Nanos(8_000),
            latency_ns: 6_000,
            end_inferred: false,
            waker: None,
            primary: Finding {
                cause: rtwhy_model::Cause::Irq,
                confidence: Confidence::High,
                share: 1.0,
                summary: String::new(),
                culprit: None,
            },
            contributors: Vec::new(),
            breakdown: Vec::new(),
            evidence: Vec::new(),
            remediation: Vec::new(),
            missing: Vec::new(),
        }
    }

    #[test]
    fn spans_follow_switches_interrupts_and_the_current_pid() {
        let window = Window {
            from: Nanos(0),
            to: Nanos(10_000),
            events: vec![
                // CPU 0 has no switch: its events say who is current.
                ev(500, 0, 33, EventKind::SoftirqRaise { vec: 3 }),
                ev(
                    1_000,
                    1,
                    20,
                    switch(("hog", 20, 120), ("swapper/1", 0, 120)),
                ),
                ev(
                    3_000,
                    1,
                    0,
                    EventKind::IrqHandlerEntry {
                        irq: 36,
                        name: "virtio1-req.0".into(),
                    },
                ),
                ev(5_000, 1, 0, EventKind::IrqHandlerExit { irq: 36, ret: 1 }),
                // The idle-to-victim switch was dropped: the victim's own event shows it.
                ev(8_000, 1, 10, EventKind::SoftirqRaise { vec: 1 }),
            ],
        };
        let t = build(&spike(), &window);
        assert_eq!(t.cpus, vec![1, 0], "the spike's CPU comes first");
        let on = |cpu: u32| -> Vec<(SpanKind, u64, u64, &str)> {
            t.spans
                .iter()
                .filter(|s| s.cpu == cpu)
                .map(|s| (s.kind, s.from.0, s.to.0, s.label.as_str()))
                .collect()
        };
        assert_eq!(
            on(1),
            vec![
                (SpanKind::Task, 0, 1_000, "hog-20"),
                (SpanKind::Idle, 1_000, 8_000, "swapper/1-0"),
                (SpanKind::Irq, 3_000, 5_000, "IRQ 36 virtio1-req.0"),
                (SpanKind::Victim, 8_000, 10_000, "ctl-10"),
            ]
        );
        assert_eq!(on(0), vec![(SpanKind::Task, 0, 10_000, "<...>-33")]);
        let labels: Vec<&str> = t.markers.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, ["timer expired", "ran"]);
    }
}
