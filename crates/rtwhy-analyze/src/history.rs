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
    horizon: u64,
    max_per_cpu: usize,
}

/// Most CPUs a trace may name; events on higher CPUs are kept on this last queue.
pub(crate) const MAX_CPUS: usize = 4096;

impl History {
    pub(crate) fn new(horizon: Nanos, max_per_cpu: usize) -> History {
        History {
            cpus: Vec::new(),
            horizon: horizon.0,
            max_per_cpu: max_per_cpu.max(1024),
        }
    }

    pub(crate) fn push(&mut self, ev: Event) {
        let cpu = (ev.cpu as usize).min(MAX_CPUS - 1);
        if cpu >= self.cpus.len() {
            self.cpus.resize_with(cpu + 1, VecDeque::new);
        }
        let Some(q) = self.cpus.get_mut(cpu) else {
            return;
        };
        let oldest_kept = ev.ts.0.saturating_sub(self.horizon);
        while q
            .front()
            .is_some_and(|f| f.ts.0 < oldest_kept || q.len() >= self.max_per_cpu)
        {
            q.pop_front();
        }
        q.push_back(ev);
    }

    /// The queue of `cpu` (empty when the CPU was never seen).
    pub(crate) fn cpu(&self, cpu: u32) -> &VecDeque<Event> {
        static EMPTY: VecDeque<Event> = VecDeque::new();
        self.cpus.get(cpu as usize).unwrap_or(&EMPTY)
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
}
