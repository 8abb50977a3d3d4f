//! The recent past of every CPU: the events a spike's breakdown replays.
//!
//! Memory is bounded by time (`horizon`) and by count per CPU, never by the trace's
//! length: a spike longer than what is kept is reported with the uncovered part as
//! unaccounted, and the analysis says so.

use std::collections::VecDeque;

use rtwhy_model::{Event, Nanos};

/// Per-CPU event queues, trimmed as time advances.
pub(crate) struct History {
    cpus: Vec<VecDeque<Event>>,
    /// Per CPU, the stretches whose events the ring buffer dropped.
    drops: Vec<VecDeque<Dropped>>,
    /// Per CPU, whether events were forgotten from the front of its queue.
    trimmed: Vec<bool>,
    /// The trace's first event on any CPU: every CPU was recorded from then on.
    first: Option<Nanos>,
    horizon: u64,
    max_per_cpu: usize,
}

/// Events of one CPU the ring buffer dropped (a page marked with missed events): its
/// history between `after` and `before` is not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dropped {
    /// The CPU's last event before the drop (the start of its history if none is kept).
    pub after: Nanos,
    /// The first event after it.
    pub before: Nanos,
    /// How many were dropped (0: the kernel did not count them).
    pub count: u64,
}

/// Most CPUs a trace may name; events on higher CPUs are kept on this last queue.
pub(crate) const MAX_CPUS: usize = 4096;

/// The queue a CPU's events are kept on (a trace may name any CPU number).
pub(crate) fn slot(cpu: u32) -> usize {
    (cpu as usize).min(MAX_CPUS - 1)
}

impl History {
    pub(crate) fn new(horizon: Nanos, max_per_cpu: usize) -> History {
        History {
            cpus: Vec::new(),
            drops: Vec::new(),
            trimmed: Vec::new(),
            first: None,
            horizon: horizon.0,
            max_per_cpu: max_per_cpu.max(1024),
        }
    }

    pub(crate) fn push(&mut self, ev: Event) {
        let cpu = slot(ev.cpu);
        if cpu >= self.cpus.len() {
            self.cpus.resize_with(cpu + 1, VecDeque::new);
            self.trimmed.resize(cpu + 1, false);
        }
        // A marker proves nothing recorded: trace-cmd's files carry the top-level buffer
        // beside an instance, whose markers may be hours older than the recording.
        if !matches!(ev.kind, rtwhy_model::EventKind::Print { .. }) {
            self.first.get_or_insert(ev.ts);
        }
        let (Some(q), Some(trimmed)) = (self.cpus.get_mut(cpu), self.trimmed.get_mut(cpu)) else {
            return;
        };
        let oldest_kept = ev.ts.0.saturating_sub(self.horizon);
        while q
            .front()
            .is_some_and(|f| f.ts.0 < oldest_kept || q.len() >= self.max_per_cpu)
        {
            q.pop_front();
            *trimmed = true;
        }
        if q.len() == q.capacity() {
            // A quarter more room, not twice as much: the queue's steady length is the
            // event rate times the horizon, and doubling can leave up to
            // as much again.
            q.reserve_exact((q.len() / 4).max(64));
        }
        q.push_back(ev);
        if let Some(d) = self.drops.get_mut(cpu) {
            while d.front().is_some_and(|g| g.before.0 < oldest_kept) {
                d.pop_front();
            }
        }
    }

    /// Events of `cpu` were dropped before its next event, at `before`.
    pub(crate) fn dropped(&mut self, cpu: u32, before: Nanos, count: u64) {
        let after = self.cpu(cpu).back().map_or(Nanos(0), |e| e.ts);
        let cpu = slot(cpu);
        if cpu >= self.drops.len() {
            self.drops.resize_with(cpu + 1, VecDeque::new);
        }
        if let Some(d) = self.drops.get_mut(cpu) {
            d.push_back(Dropped {
                after,
                before,
                count,
            });
        }
    }

    /// The first drop on `cpu` that overlaps `from..to`.
    pub(crate) fn drop_within(&self, cpu: u32, from: Nanos, to: Nanos) -> Option<Dropped> {
        self.drops
            .get(slot(cpu))?
            .iter()
            .find(|d| d.before > from && d.after < to)
            .copied()
    }

    /// The queue of `cpu` (empty when the CPU was never seen).
    pub(crate) fn cpu(&self, cpu: u32) -> &VecDeque<Event> {
        static EMPTY: VecDeque<Event> = VecDeque::new();
        self.cpus.get(slot(cpu)).unwrap_or(&EMPTY)
    }

    /// Number of CPU queues.
    pub(crate) fn cpu_count(&self) -> usize {
        self.cpus.len()
    }

    /// Index of the first event of `cpu` at or after `t`.
    pub(crate) fn first_at(&self, cpu: u32, t: Nanos) -> usize {
        self.cpu(cpu).partition_point(|e| e.ts < t)
    }

    /// The time from which `cpu`'s history is complete.
    pub(crate) fn start(&self, cpu: u32) -> Option<Nanos> {
        self.cpu(cpu).front().map(|e| e.ts)
    }

    /// The time from which what `cpu` did is recorded: the trace's first event on any
    /// CPU other than a marker (a CPU without events since was silent, not unrecorded; a ring buffer that
    /// overwrote its oldest pages says so with a drop), or the oldest event kept once
    /// older ones were forgotten. `None` before the first event that is not a marker.
    pub(crate) fn recorded_from(&self, cpu: u32) -> Option<Nanos> {
        let first = self.first?;
        if self.trimmed.get(slot(cpu)).copied().unwrap_or(false) {
            self.start(cpu).map(|s| s.max(first))
        } else {
            Some(first)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::EventKind;

    fn ev(ts: u64, cpu: u32) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid: 1,
            kind: EventKind::SoftirqRaise { vec: 1 },
        }
    }

    #[test]
    fn trims_by_time_and_count() {
        let mut h = History::new(Nanos(100), 2000);
        for t in 0..300 {
            h.push(ev(t, 1));
        }
        assert_eq!(h.start(1), Some(Nanos(199)));
        assert_eq!(h.first_at(1, Nanos(250)), 51);
        assert!(h.cpu(0).is_empty());
        assert!(h.cpu(7).is_empty());
        let mut h = History::new(Nanos(u64::MAX), 1024);
        for t in 0..5000 {
            h.push(ev(t, 0));
        }
        assert_eq!(h.cpu(0).len(), 1024);
    }

    #[test]
    fn a_drop_spans_from_the_last_event_kept_to_the_next() {
        let mut h = History::new(Nanos(1000), 2000);
        h.push(ev(10, 1));
        h.dropped(1, Nanos(500), 42);
        h.push(ev(500, 1));
        let d = Dropped {
            after: Nanos(10),
            before: Nanos(500),
            count: 42,
        };
        assert_eq!(h.drop_within(1, Nanos(100), Nanos(200)), Some(d));
        assert_eq!(h.drop_within(1, Nanos(0), Nanos(11)), Some(d));
        assert_eq!(h.drop_within(1, Nanos(500), Nanos(600)), None);
        assert_eq!(h.drop_within(1, Nanos(0), Nanos(10)), None);
        assert_eq!(h.drop_within(0, Nanos(100), Nanos(200)), None);
        // Forgotten with the events around it.
        h.push(ev(2000, 1));
        assert_eq!(h.drop_within(1, Nanos(100), Nanos(200)), None);
    }
}
