//! Each CPU's history as spans, built once while the capture loads: who ran (a task or
//! idle), hard IRQ handlers, softirqs, and stretches with no event at all while a task
//! ran (time the trace cannot account for).
//!
//! Spans of one kind never overlap on a CPU and are sorted by start, so the spans that
//! intersect a window are found by binary search.

use rtwhy_model::{Event, EventKind};

/// A task (or idle, thread id 0) holding a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Switch-in time (or the CPU's first event).
    pub start: u64,
    /// Switch-out time (or the capture's last event).
    pub end: u64,
    /// Thread id; 0 is idle.
    pub tid: i32,
}

/// What kind of interrupt work a span is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intr {
    /// A hard IRQ handler, by IRQ number.
    Irq(i32),
    /// A softirq, by vector.
    Softirq(u32),
}

/// Interrupt work on a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntrSpan {
    /// Handler entry.
    pub start: u64,
    /// Handler exit.
    pub end: u64,
    /// Which handler.
    pub kind: Intr,
}

/// One CPU's spans.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lane {
    /// The CPU.
    pub cpu: u32,
    /// Who ran, back to back.
    pub runs: Vec<Run>,
    /// Hard IRQ and softirq handlers.
    pub intrs: Vec<IntrSpan>,
    /// No event at all for longer than the latency threshold while a task ran.
    pub gaps: Vec<(u64, u64)>,
}

/// The first of `spans` (sorted, not overlapping) that ends after `t`.
pub fn first_ending_after<T>(spans: &[T], t: u64, end: impl Fn(&T) -> u64) -> usize {
    spans.partition_point(|s| end(s) <= t)
}

#[derive(Debug, Default)]
struct CpuState {
    lane: Lane,
    running: Option<(u64, i32)>,
    irq: Option<(u64, i32)>,
    softirq: Option<(u64, u32)>,
    last_ts: Option<u64>,
}

/// Builds lanes from events in time order.
#[derive(Debug)]
pub struct LaneBuilder {
    cpus: Vec<CpuState>,
    gap: u64,
}

impl LaneBuilder {
    /// A builder that reports silences longer than `gap_ns` as gaps.
    pub fn new(gap_ns: u64) -> LaneBuilder {
        LaneBuilder {
            cpus: Vec::new(),
            gap: gap_ns.max(1),
        }
    }

    /// Takes the next event.
    pub fn observe(&mut self, ev: &Event) {
        let cpu = ev.cpu as usize;
        if cpu >= 4096 {
            return;
        }
        while self.cpus.len() <= cpu {
            let n = self.cpus.len() as u32;
            self.cpus.push(CpuState {
                lane: Lane {
                    cpu: n,
                    ..Lane::default()
                },
                ..CpuState::default()
            });
        }
        let Some(st) = self.cpus.get_mut(cpu) else {
            return;
        };
        let ts = ev.ts.0;
        if let (Some(last), Some((_, tid))) = (st.last_ts, st.running) {
            if tid != 0 && ts.saturating_sub(last) > self.gap {
                st.lane.gaps.push((last, ts));
            }
        }
        match st.running {
            // Before the first switch, the event's own task is the one running.
            None => st.running = Some((ts, ev.pid)),
            // `common_pid` is the task current on the CPU: a different one means a switch
            // the trace lost. The new task ran from just after the old one's last event.
            Some((start, tid)) if tid != ev.pid && ev.pid >= 0 => {
                let at = st.last_ts.unwrap_or(ts).max(start);
                if at > start {
                    st.lane.runs.push(Run {
                        start,
                        end: at,
                        tid,
                    });
                }
                st.running = Some((at, ev.pid));
            }
            Some(_) => {}
        }
        st.last_ts = Some(ts);
        match &ev.kind {
            EventKind::SchedSwitch { next_pid, .. } => {
                if let Some((start, tid)) = st.running.take() {
                    if ts > start {
                        st.lane.runs.push(Run {
                            start,
                            end: ts,
                            tid,
                        });
                    }
                }
                st.running = Some((ts, *next_pid));
            }
            EventKind::IrqHandlerEntry { irq, .. } => st.irq = Some((ts, *irq)),
            EventKind::IrqHandlerExit { .. } => {
                if let Some((start, irq)) = st.irq.take() {
                    push_intr(&mut st.lane.intrs, start, ts, Intr::Irq(irq));
                }
            }
            EventKind::SoftirqEntry { vec } => st.softirq = Some((ts, *vec)),
            EventKind::SoftirqExit { .. } => {
                if let Some((start, vec)) = st.softirq.take() {
                    push_intr(&mut st.lane.intrs, start, ts, Intr::Softirq(vec));
                }
            }
            _ => {}
        }
    }

    /// Closes what is still open at `end` and hands over the lanes of the CPUs that had
    /// events.
    pub fn finish(self, end: u64) -> Vec<Lane> {
        self.cpus
            .into_iter()
            .filter(|c| c.last_ts.is_some())
            .map(|mut c| {
                if let Some((start, tid)) = c.running {
                    c.lane.runs.push(Run {
                        start,
                        end: end.max(start),
                        tid,
                    });
                }
                if let Some((start, irq)) = c.irq {
                    push_intr(&mut c.lane.intrs, start, end.max(start), Intr::Irq(irq));
                }
                if let Some((start, vec)) = c.softirq {
                    push_intr(&mut c.lane.intrs, start, end.max(start), Intr::Softirq(vec));
                }
                c.lane
            })
            .collect()
    }
}

/// Keeps interrupt spans sorted and apart: a softirq that ran inside an IRQ handler's
/// span (or the reverse) is cut where the other began.
fn push_intr(v: &mut Vec<IntrSpan>, start: u64, end: u64, kind: Intr) {
    let start = v.last().map_or(start, |l| start.max(l.end));
    if end > start {
        v.push(IntrSpan { start, end, kind });
    } else if let Some(l) = v.last_mut() {
        // Nested inside the previous span and wholly covered by it.
        if l.end < end {
            l.end = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Comm, Nanos, TaskState};

    fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid,
            kind,
        }
    }

    fn switch(prev: i32, next: i32) -> EventKind {
        EventKind::SchedSwitch {
            prev_comm: Comm::new("a"),
            prev_pid: prev,
            prev_prio: 120,
            prev_state: TaskState(1),
            next_comm: Comm::new("b"),
            next_pid: next,
            next_prio: 120,
        }
    }

    #[test]
    fn runs_irqs_and_gaps_per_cpu() {
        let mut b = LaneBuilder::new(100);
        b.observe(&ev(1000, 1, 0, switch(0, 42)));
        b.observe(&ev(
            1010,
            1,
            42,
            EventKind::IrqHandlerEntry {
                irq: 19,
                name: "eth0".into(),
            },
        ));
        b.observe(&ev(
            1020,
            1,
            42,
            EventKind::IrqHandlerExit { irq: 19, ret: 1 },
        ));
        b.observe(&ev(1020, 1, 42, EventKind::SoftirqEntry { vec: 3 }));
        b.observe(&ev(1030, 1, 42, EventKind::SoftirqExit { vec: 3 }));
        // 470 ns of silence while task 42 runs: a gap.
        b.observe(&ev(1500, 1, 42, switch(42, 0)));
        let lanes = b.finish(2000);
        assert_eq!(lanes.len(), 1);
        let l = &lanes[0];
        assert_eq!(l.cpu, 1);
        assert_eq!(
            l.runs,
            [
                Run {
                    start: 1000,
                    end: 1500,
                    tid: 42
                },
                Run {
                    start: 1500,
                    end: 2000,
                    tid: 0
                }
            ]
        );
        assert_eq!(
            l.intrs,
            [
                IntrSpan {
                    start: 1010,
                    end: 1020,
                    kind: Intr::Irq(19)
                },
                IntrSpan {
                    start: 1020,
                    end: 1030,
                    kind: Intr::Softirq(3)
                }
            ]
        );
        assert_eq!(l.gaps, [(1030, 1500)]);
        assert_eq!(first_ending_after(&l.runs, 1400, |r| r.end), 0);
        assert_eq!(first_ending_after(&l.runs, 1500, |r| r.end), 1);
    }

    #[test]
    fn a_lost_switch_is_inferred_from_common_pid() {
        // Regression: the preemption fixture lacks the switch from idle to the hog, and
        // the lane showed idle where the hog held the CPU.
        let mut b = LaneBuilder::new(1_000_000);
        b.observe(&ev(1000, 1, 0, EventKind::SoftirqRaise { vec: 1 }));
        b.observe(&ev(1010, 1, 0, EventKind::SoftirqRaise { vec: 1 }));
        b.observe(&ev(1100, 1, 7, EventKind::SoftirqRaise { vec: 1 }));
        b.observe(&ev(1300, 1, 7, switch(7, 9)));
        let runs = &b.finish(1400)[0].runs;
        assert_eq!(
            runs,
            &[
                Run {
                    start: 1000,
                    end: 1010,
                    tid: 0
                },
                Run {
                    start: 1010,
                    end: 1300,
                    tid: 7
                },
                Run {
                    start: 1300,
                    end: 1400,
                    tid: 9
                }
            ]
        );
    }

    #[test]
    fn idle_silence_is_not_a_gap() {
        let mut b = LaneBuilder::new(100);
        b.observe(&ev(1000, 0, 0, switch(5, 0)));
        b.observe(&ev(9000, 0, 0, switch(0, 5)));
        assert!(b.finish(9000)[0].gaps.is_empty());
    }
}
