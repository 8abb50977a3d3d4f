//! Each CPU's history as spans: who ran (a task or idle), hard IRQ handlers, softirqs,
//! and stretches with no event at all while a task ran (time the trace cannot account
//! for). One model for every view: the terminal viewer builds it once over a whole
//! capture, the SVG and Perfetto timelines over one spike's window ([`crate::timeline`]).
//!
//! Spans of one kind never overlap on a CPU and are sorted by start, so the spans that
//! intersect a window are found by binary search.

use rtwhy_model::{Event, EventKind};

/// A task (or idle, thread id 0) holding a CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Switch-in time (or the CPU's first event, or the window's start).
    pub start: u64,
    /// Switch-out time (or the end given to [`LaneBuilder::finish`]).
    pub end: u64,
    /// Thread id; 0 is idle.
    pub tid: i32,
    /// The kernel priority it was switched in with (-1 is SCHED_DEADLINE); `None` where
    /// no switch said (a run inferred from `common_pid`, or one under way when the events
    /// begin).
    pub prio: Option<i32>,
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
    /// Since when, thread id, priority (if a switch said).
    running: Option<(u64, i32, Option<i32>)>,
    irq: Option<(u64, i32)>,
    softirq: Option<(u64, u32)>,
    /// A switch the trace lost, seen in one event of another task: when, to whom, at
    /// what priority (see [`LaneBuilder::observe`]).
    pending: Option<(u64, i32, Option<i32>)>,
    /// Whether a handler of each kind began on this CPU yet.
    irq_seen: bool,
    softirq_seen: bool,
    last_ts: Option<u64>,
}

impl CpuState {
    /// Ends the run under way at `at` and starts `tid`'s.
    fn switch_to(&mut self, at: u64, tid: i32, prio: Option<i32>) {
        if let Some((start, old, old_prio)) = self.running {
            if at > start {
                self.lane.runs.push(Run {
                    start,
                    end: at,
                    tid: old,
                    prio: old_prio,
                });
            }
        }
        self.running = Some((at, tid, prio));
    }
}

/// Builds lanes from events in time order.
#[derive(Debug)]
pub struct LaneBuilder {
    cpus: Vec<CpuState>,
    gap: u64,
    from: Option<u64>,
}

impl LaneBuilder {
    /// A builder that reports silences longer than `gap_ns` as gaps. A CPU's lane
    /// begins at its first event.
    pub fn new(gap_ns: u64) -> LaneBuilder {
        LaneBuilder {
            cpus: Vec::new(),
            gap: gap_ns.max(1),
            from: None,
        }
    }

    /// The events are a cut of a longer trace starting at `from`: what a CPU's first
    /// events show under way (the task they run in, a handler they exit) is drawn from
    /// `from`.
    pub fn starting_at(self, from: u64) -> LaneBuilder {
        LaneBuilder {
            from: Some(from),
            ..self
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
        // What was under way before the first event: from the cut's start, if any.
        let before = self.from.map_or(ts, |f| f.min(ts));
        if let (Some(last), Some((_, tid, _))) = (st.last_ts, st.running) {
            if tid != 0 && ts.saturating_sub(last) > self.gap {
                st.lane.gaps.push((last, ts));
            }
        }
        // A switch's own priority for the task it switches out, when it began unseen.
        let prev_prio = match &ev.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                ..
            } if *prev_pid == ev.pid => Some(*prev_prio),
            _ => None,
        };
        // `common_pid` is the task current on the CPU: another task's events mean a
        // switch the trace lost. The new task is drawn from its first event, the first
        // sign of it: the old one's last event says nothing of when it stopped (an idle
        // CPU is quiet by nature; rt_throttling.dat's CPU 1 idles throttled for 460 us
        // after its last idle event, before cyclictest's first). One stray event is not
        // enough (an event written during a switch, or by a BPF program on the old task's
        // behalf, carries the other pid): such a switch is taken when the new task's
        // events go on, dropped when the old one's resume. A switch record of the new
        // task confirms it at once.
        let current = st.running.map(|r| r.1);
        if let Some((at, tid, prio)) = st.pending.take() {
            if current != Some(ev.pid) {
                st.switch_to(at, tid, prio);
            }
        }
        match st.running {
            // Before the first switch, the event's own task is the one running.
            None => st.running = Some((before, ev.pid, prev_prio)),
            Some((start, tid, _)) if tid != ev.pid && ev.pid >= 0 => {
                let at = ts.max(start);
                if matches!(ev.kind, EventKind::SchedSwitch { .. }) {
                    st.switch_to(at, ev.pid, prev_prio);
                } else {
                    st.pending = Some((at, ev.pid, prev_prio));
                }
            }
            Some(_) => {}
        }
        st.last_ts = Some(ts);
        match &ev.kind {
            EventKind::SchedSwitch {
                next_pid,
                next_prio,
                ..
            } => {
                if let Some((start, tid, prio)) = st.running.take() {
                    // A run that began unseen takes the priority it is switched out with.
                    let prio = if tid == ev.pid {
                        prio.or(prev_prio)
                    } else {
                        prio
                    };
                    if ts > start {
                        st.lane.runs.push(Run {
                            start,
                            end: ts,
                            tid,
                            prio,
                        });
                    }
                }
                st.running = Some((ts, *next_pid, Some(*next_prio)));
            }
            EventKind::IrqHandlerEntry { irq, .. } => {
                st.irq = Some((ts, *irq));
                st.irq_seen = true;
            }
            EventKind::IrqHandlerExit { irq, .. } => {
                // An exit without its entry is a handler under way when the events
                // began, or (later) one whose entry the trace lost: drawn only then.
                let open = st.irq.take().or((!st.irq_seen).then_some((before, *irq)));
                st.irq_seen = true;
                if let Some((start, irq)) = open {
                    push_intr(&mut st.lane.intrs, start, ts, Intr::Irq(irq));
                }
            }
            EventKind::SoftirqEntry { vec } => {
                st.softirq = Some((ts, *vec));
                st.softirq_seen = true;
            }
            EventKind::SoftirqExit { vec } => {
                let open = st
                    .softirq
                    .take()
                    .or((!st.softirq_seen).then_some((before, *vec)));
                st.softirq_seen = true;
                if let Some((start, vec)) = open {
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
                if let Some((at, tid, prio)) = c.pending.take() {
                    c.switch_to(at, tid, prio);
                }
                if let Some((start, tid, prio)) = c.running {
                    c.lane.runs.push(Run {
                        start,
                        end: end.max(start),
                        tid,
                        prio,
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

/// Adds a handler that ran `[start, end)`, keeping the spans sorted and apart. Spans
/// arrive at their exits, so a handler that an IRQ interrupted (a softirq, most often)
/// arrives after the nested one: it keeps the time around the nested spans, which keep
/// theirs.
fn push_intr(v: &mut Vec<IntrSpan>, start: u64, end: u64, kind: Intr) {
    if end <= start {
        return;
    }
    // The spans already there that `[start, end)` overlaps: none (nearly always), or
    // the last few.
    if v.last().is_none_or(|l| l.end <= start) {
        v.push(IntrSpan { start, end, kind });
        return;
    }
    let first = v.partition_point(|s| s.end <= start);
    let mut pieces = Vec::new();
    let mut at = start;
    for s in v.get(first..).unwrap_or_default() {
        if s.start > at {
            pieces.push(IntrSpan {
                start: at,
                end: s.start.min(end),
                kind,
            });
        }
        at = at.max(s.end);
    }
    if end > at {
        pieces.push(IntrSpan {
            start: at,
            end,
            kind,
        });
    }
    v.extend(pieces);
    v.get_mut(first..)
        .unwrap_or_default()
        .sort_by_key(|s| s.start);
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
                    tid: 42,
                    prio: Some(120)
                },
                Run {
                    start: 1500,
                    end: 2000,
                    tid: 0,
                    prio: Some(120)
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
                    end: 1100,
                    tid: 0,
                    prio: None
                },
                Run {
                    start: 1100,
                    end: 1300,
                    tid: 7,
                    prio: Some(120)
                },
                Run {
                    start: 1300,
                    end: 1400,
                    tid: 9,
                    prio: Some(120)
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
    fn one_stray_event_of_another_task_does_not_end_a_run() {
        // irqs_off.dat: rtwhy switches to cyclictest at 829; an IPI event that the BPF
        // program queued still carries rtwhy's pid at 855; cyclictest's own events follow.
        let mut b = LaneBuilder::new(1_000_000);
        b.observe(&ev(829, 1, 14774, switch(14774, 14794)));
        b.observe(&ev(855, 1, 14774, EventKind::SoftirqRaise { vec: 1 }));
        b.observe(&ev(868, 1, 14794, EventKind::SoftirqRaise { vec: 1 }));
        b.observe(&ev(885, 1, 14794, switch(14794, 12053)));
        let runs: Vec<(u64, u64, i32)> = b.finish(900)[0]
            .runs
            .iter()
            .map(|r| (r.start, r.end, r.tid))
            .collect();
        assert_eq!(runs, [(829, 885, 14794), (885, 900, 12053)]);
    }

    #[test]
    fn a_handler_interrupted_by_another_keeps_the_time_around_it() {
        // A softirq that a hard IRQ interrupted twice ends after both: it keeps the three
        // stretches around them, they keep theirs, all sorted and apart.
        let mut b = LaneBuilder::new(1_000_000);
        b.observe(&ev(100, 0, 5, EventKind::SoftirqEntry { vec: 3 }));
        for (a, z) in [(200, 250), (300, 320)] {
            b.observe(&ev(
                a,
                0,
                5,
                EventKind::IrqHandlerEntry {
                    irq: 19,
                    name: "eth0".into(),
                },
            ));
            b.observe(&ev(z, 0, 5, EventKind::IrqHandlerExit { irq: 19, ret: 1 }));
        }
        b.observe(&ev(400, 0, 5, EventKind::SoftirqExit { vec: 3 }));
        let spans: Vec<(u64, u64, Intr)> = b.finish(500)[0]
            .intrs
            .iter()
            .map(|s| (s.start, s.end, s.kind))
            .collect();
        let (irq, net) = (Intr::Irq(19), Intr::Softirq(3));
        assert_eq!(
            spans,
            [
                (100, 200, net),
                (200, 250, irq),
                (250, 300, net),
                (300, 320, irq),
                (320, 400, net)
            ]
        );
    }

    #[test]
    fn a_cut_draws_what_was_under_way_from_its_start() {
        // The window begins inside a task's run and inside a softirq: both are drawn from
        // the window's start; a later exit without entry (a lost entry) is not.
        let mut b = LaneBuilder::new(1_000_000).starting_at(0);
        b.observe(&ev(40, 1, 7, EventKind::SoftirqExit { vec: 1 }));
        b.observe(&ev(60, 1, 7, EventKind::SoftirqExit { vec: 1 }));
        b.observe(&ev(90, 1, 7, switch(7, 0)));
        let l = &b.finish(100)[0];
        let runs: Vec<(u64, u64, i32, Option<i32>)> = l
            .runs
            .iter()
            .map(|r| (r.start, r.end, r.tid, r.prio))
            .collect();
        assert_eq!(runs, [(0, 90, 7, Some(120)), (90, 100, 0, Some(120))]);
        assert_eq!(
            l.intrs,
            [IntrSpan {
                start: 0,
                end: 40,
                kind: Intr::Softirq(1)
            }]
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
