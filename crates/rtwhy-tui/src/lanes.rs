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
    index: Index,
}

/// Runs per block of [`Index::longest`].
const BLOCK: usize = 32;

/// Summaries built once so that what a time window holds is found in logarithmic time
/// whatever the zoom: running sums of IRQ, softirq and gap time, and the longest run of
/// each block of runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Index {
    /// `irq[i]`: hard IRQ time in `intrs[..i]`.
    irq: Vec<u64>,
    /// `softirq[i]`: softirq time in `intrs[..i]`.
    softirq: Vec<u64>,
    /// `gap[i]`: gap time in `gaps[..i]`.
    gap: Vec<u64>,
    /// Per block of [`BLOCK`] runs, the index of its longest run.
    longest: Vec<usize>,
}

/// What a time window of one lane holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cover {
    /// The run with the largest share of the window: thread id and ns.
    pub best: Option<(i32, u64)>,
    /// Hard IRQ time.
    pub irq: u64,
    /// Softirq time.
    pub softirq: u64,
    /// Time without events while a task ran.
    pub gap: u64,
}

fn overlap(a: u64, b: u64, lo: u64, hi: u64) -> u64 {
    b.min(hi).saturating_sub(a.max(lo))
}

fn running_sum<T>(spans: &[T], weight: impl Fn(&T) -> u64) -> Vec<u64> {
    let mut v = Vec::with_capacity(spans.len() + 1);
    let mut sum = 0u64;
    v.push(0);
    for s in spans {
        sum += weight(s);
        v.push(sum);
    }
    v
}

/// The spans (sorted, apart) that intersect `[lo, hi)`.
fn window<T>(
    spans: &[T],
    lo: u64,
    hi: u64,
    bounds: impl Fn(&T) -> (u64, u64),
) -> std::ops::Range<usize> {
    let i0 = spans.partition_point(|s| bounds(s).1 <= lo);
    let i1 = spans.partition_point(|s| bounds(s).0 < hi);
    i0..i1.max(i0)
}

/// Weighted time of `spans[r]` within `[lo, hi)`: the two edge spans by overlap, the
/// ones between from the running sum `cum`.
fn sum_in<T>(
    spans: &[T],
    cum: &[u64],
    r: std::ops::Range<usize>,
    (lo, hi): (u64, u64),
    bounds: impl Fn(&T) -> (u64, u64),
    counts: impl Fn(&T) -> bool,
) -> u64 {
    let edge = |i: usize| {
        spans.get(i).filter(|s| counts(s)).map_or(0, |s| {
            let (a, b) = bounds(s);
            overlap(a, b, lo, hi)
        })
    };
    match r.len() {
        0 => 0,
        1 => edge(r.start),
        n => {
            let inner = cum.get(r.end - 1).zip(cum.get(r.start + 1));
            edge(r.start) + edge(r.start + n - 1) + inner.map_or(0, |(b, a)| b - a)
        }
    }
}

impl Lane {
    /// Bytes allocated for the spans and their summaries.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.runs.capacity() * size_of::<Run>()
            + self.intrs.capacity() * size_of::<IntrSpan>()
            + self.gaps.capacity() * size_of::<(u64, u64)>()
            + (self.index.irq.capacity()
                + self.index.softirq.capacity()
                + self.index.gap.capacity())
                * size_of::<u64>()
            + self.index.longest.capacity() * size_of::<usize>()
    }

    fn build_index(&mut self) {
        let dur = |a: u64, b: u64| b.saturating_sub(a);
        self.index = Index {
            irq: running_sum(&self.intrs, |s| match s.kind {
                Intr::Irq(_) => dur(s.start, s.end),
                Intr::Softirq(_) => 0,
            }),
            softirq: running_sum(&self.intrs, |s| match s.kind {
                Intr::Irq(_) => 0,
                Intr::Softirq(_) => dur(s.start, s.end),
            }),
            gap: running_sum(&self.gaps, |g| dur(g.0, g.1)),
            longest: self
                .runs
                .chunks(BLOCK)
                .enumerate()
                .map(|(b, chunk)| {
                    // The first of equals, as a scan in time order would find.
                    let best = chunk.iter().enumerate().fold((0, 0), |best, (i, r)| {
                        let d = dur(r.start, r.end);
                        if d > best.1 {
                            (i, d)
                        } else {
                            best
                        }
                    });
                    b * BLOCK + best.0
                })
                .collect(),
        };
    }

    /// The longest of `runs[r]` (all wholly inside the window): index.
    fn longest_in(&self, r: std::ops::Range<usize>) -> Option<usize> {
        let len = |i: usize| self.runs.get(i).map_or(0, |x| x.end - x.start);
        let mut best: Option<usize> = None;
        let mut consider = |i: usize| {
            if best.is_none_or(|b| len(i) > len(b)) {
                best = Some(i);
            }
        };
        let mut i = r.start;
        while i < r.end {
            if i % BLOCK == 0 && i + BLOCK <= r.end {
                if let Some(&j) = self.index.longest.get(i / BLOCK) {
                    consider(j);
                }
                i += BLOCK;
            } else {
                consider(i);
                i += 1;
            }
        }
        best
    }

    /// What `[lo, hi)` holds on this CPU.
    pub fn cover(&self, lo: u64, hi: u64) -> Cover {
        let mut c = Cover::default();
        let rb = |r: &Run| (r.start, r.end);
        let runs = window(&self.runs, lo, hi, rb);
        // Candidates by index, so that among equal shares the earliest wins.
        let edge = |i: usize| {
            self.runs
                .get(i)
                .map(|r| (i, r.tid, overlap(r.start, r.end, lo, hi)))
        };
        let mut candidates = [None, None, None];
        if !runs.is_empty() {
            candidates[0] = edge(runs.start);
            candidates[1] = edge(runs.end - 1);
        }
        if runs.len() > 2 {
            candidates[2] = self
                .longest_in(runs.start + 1..runs.end - 1)
                .and_then(|i| self.runs.get(i).map(|r| (i, r.tid, r.end - r.start)));
        }
        c.best = candidates
            .into_iter()
            .flatten()
            .filter(|x| x.2 > 0)
            .min_by_key(|x| (std::cmp::Reverse(x.2), x.0))
            .map(|x| (x.1, x.2));
        let ib = |s: &IntrSpan| (s.start, s.end);
        let intrs = window(&self.intrs, lo, hi, ib);
        c.irq = sum_in(
            &self.intrs,
            &self.index.irq,
            intrs.clone(),
            (lo, hi),
            ib,
            |s| matches!(s.kind, Intr::Irq(_)),
        );
        c.softirq = sum_in(&self.intrs, &self.index.softirq, intrs, (lo, hi), ib, |s| {
            matches!(s.kind, Intr::Softirq(_))
        });
        let gb = |g: &(u64, u64)| *g;
        let gaps = window(&self.gaps, lo, hi, gb);
        c.gap = sum_in(&self.gaps, &self.index.gap, gaps, (lo, hi), gb, |_| true);
        c
    }
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
                c.lane.build_index();
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
        assert_eq!(
            l.cover(1400, 1600).best,
            Some((42, 100)),
            "equal shares: the earlier run"
        );
        assert_eq!(l.cover(1400, 1601).best, Some((0, 101)));
        assert_eq!(l.cover(1000, 1030).irq, 10);
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

    /// What [`Lane::cover`] must answer, by looking at every span.
    fn cover_by_scanning(l: &Lane, lo: u64, hi: u64) -> Cover {
        let mut c = Cover::default();
        for r in &l.runs {
            let o = overlap(r.start, r.end, lo, hi);
            if o > 0 && c.best.is_none_or(|b| o > b.1) {
                c.best = Some((r.tid, o));
            }
        }
        for s in &l.intrs {
            let o = overlap(s.start, s.end, lo, hi);
            match s.kind {
                Intr::Irq(_) => c.irq += o,
                Intr::Softirq(_) => c.softirq += o,
            }
        }
        for g in &l.gaps {
            c.gap += overlap(g.0, g.1, lo, hi);
        }
        c
    }

    #[test]
    fn cover_agrees_with_a_scan_of_every_span() {
        // A CPU switching between three tasks with IRQs, softirqs and silences, in a
        // pattern that does not repeat with the block size.
        let mut b = LaneBuilder::new(300);
        let mut t = 1000u64;
        for i in 0..500u64 {
            let tid = [0, 5, 9][(i % 3) as usize];
            b.observe(&ev(t, 0, 0, switch(0, tid)));
            let len = 50 + (i * 37 % 400);
            if i % 4 == 0 {
                b.observe(&ev(
                    t + 5,
                    0,
                    tid,
                    EventKind::IrqHandlerEntry {
                        irq: 3,
                        name: "x".into(),
                    },
                ));
                b.observe(&ev(
                    t + 5 + i % 13,
                    0,
                    tid,
                    EventKind::IrqHandlerExit { irq: 3, ret: 1 },
                ));
            }
            if i % 5 == 0 {
                b.observe(&ev(t + 30, 0, tid, EventKind::SoftirqEntry { vec: 1 }));
                b.observe(&ev(
                    t + 31 + i % 7,
                    0,
                    tid,
                    EventKind::SoftirqExit { vec: 1 },
                ));
            }
            t += len;
        }
        let lanes = b.finish(t);
        let l = &lanes[0];
        assert!(!l.gaps.is_empty());
        let mut lo = 0u64;
        for w in [1u64, 7, 64, 333, 1_000, 9_999, 40_000, 200_000] {
            while lo < t + 1000 {
                assert_eq!(
                    l.cover(lo, lo + w),
                    cover_by_scanning(l, lo, lo + w),
                    "[{lo}, +{w})"
                );
                lo += w * 3 / 2 + 1;
            }
            lo = w % 17;
        }
    }

    #[test]
    fn idle_silence_is_not_a_gap() {
        let mut b = LaneBuilder::new(100);
        b.observe(&ev(1000, 0, 0, switch(5, 0)));
        b.observe(&ev(9000, 0, 0, switch(0, 5)));
        assert!(b.finish(9000)[0].gaps.is_empty());
    }
}
