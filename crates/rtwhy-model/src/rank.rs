//! Which spikes a user sees first: the ranking every front end uses (the headline of
//! `rtwhy analyze`'s summary, the spikes a Markdown report shows, the spike an SVG
//! draws). It reads each spike's small [`SpikeSummary`], never its evidence, so an
//! analysis that writes spikes out as they are diagnosed can still rank them all at the
//! end, and the order can change in this one place.

use std::cmp::Reverse;

use crate::{Cause, Nanos, Spike, SpikeSource, TaskRef};

/// What ranking (and a summary line) needs of one spike.
#[derive(Debug, Clone, PartialEq)]
pub struct SpikeSummary {
    /// The spike's number.
    pub id: u32,
    /// The thread that was late.
    pub victim: TaskRef,
    /// Its CPU.
    pub cpu: u32,
    /// When the latency ended.
    pub end: Nanos,
    /// The latency, in ns.
    pub latency_ns: u64,
    /// The primary cause.
    pub cause: Cause,
    /// A breach marker (rtwhy's or another tool's) flagged it, as opposed to the events
    /// alone.
    pub flagged: bool,
}

impl SpikeSummary {
    /// The summary of `s`.
    pub fn of(s: &Spike) -> SpikeSummary {
        SpikeSummary {
            id: s.id,
            victim: s.victim.clone(),
            cpu: s.cpu,
            end: s.end,
            latency_ns: s.latency_ns,
            cause: s.primary.cause,
            flagged: !matches!(s.source, SpikeSource::Events),
        }
    }
}

/// The order in which spikes are shown, worst first, as indexes into `spikes`: the
/// highest latency first; of equal latencies, the earlier spike (a report of the worst
/// few shows the first of a run of equal ones).
pub fn rank(spikes: &[SpikeSummary]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spikes.len()).collect();
    order.sort_by_key(|&i| (Reverse(spikes[i].latency_ns), spikes[i].id));
    order
}

/// The spike a summary line names as the worst: of the spikes [`rank`] puts first with
/// equal latency, the latest (the summary has always named the last of equal worst
/// spikes).
pub fn worst(spikes: &[SpikeSummary]) -> Option<&SpikeSummary> {
    let order = rank(spikes);
    let top = spikes.get(*order.first()?)?.latency_ns;
    order
        .iter()
        .filter_map(|&i| spikes.get(i))
        .take_while(|s| s.latency_ns == top)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Comm;

    fn summary(id: u32, latency_ns: u64) -> SpikeSummary {
        SpikeSummary {
            id,
            victim: TaskRef {
                tid: 1,
                comm: Comm::new("t"),
                prio: 19,
            },
            cpu: 1,
            end: Nanos(u64::from(id) * 1000),
            latency_ns,
            cause: Cause::Preemption,
            flagged: false,
        }
    }

    fn equal_pairs() -> [SpikeSummary; 4] {
        [
            summary(1, 300),
            summary(2, 500),
            summary(3, 300),
            summary(4, 500),
        ]
    }

    #[test]
    fn the_highest_latency_ranks_first_and_of_equal_ones_the_earlier() {
        assert_eq!(rank(&equal_pairs()), vec![1, 3, 0, 2]);
    }

    /// The summary line has always named the last of equal worst spikes, while a report
    /// of the worst few shows the first of them first.
    #[test]
    fn the_worst_is_the_latest_of_the_equal_highest() {
        let s = equal_pairs();
        assert_eq!(worst(&s).map(|w| w.id), Some(4));
        assert_eq!(worst(&s[..3]).map(|w| w.id), Some(2));
        assert_eq!(worst(&[]), None);
    }
}
