//! Which spikes a user sees first: the ranking every front end uses (the headline of
//! `rtwhy analyze`'s summary, the spikes a Markdown report shows and their order, the
//! spike an SVG draws, the spike the viewer opens on). It reads each spike's small [`SpikeSummary`], never its evidence, so an
//! analysis that writes spikes out as they are diagnosed can still rank them all at the
//! end, and the order can change in this one place.

use std::cmp::Reverse;

use crate::{Cause, Nanos, Spike, TaskRef};

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
            flagged: s.flagged(),
        }
    }
}

/// What [`rank`] orders by, first first: flagged by a marker (the spike the user's own
/// tool saw), then the victim's own priority (kernel prio: lower is more important; a
/// PI-boosted normal task is a normal task; one not recorded after every known one), then
/// the latency, longest first, then the spike's number.
pub fn rank_key(s: &SpikeSummary) -> (bool, i32, Reverse<u64>, u32) {
    (
        !s.flagged,
        s.victim.own_prio().unwrap_or(i32::MAX),
        Reverse(s.latency_ns),
        s.id,
    )
}

/// The order in which spikes are put before the user, as indexes into `spikes`
/// ([`rank_key`]).
pub fn rank(spikes: &[SpikeSummary]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..spikes.len()).collect();
    order.sort_by_key(|&i| rank_key(&spikes[i]));
    order
}

/// The spike [`rank`] puts first: the one a summary, a report and the viewer lead with.
pub fn first(spikes: &[SpikeSummary]) -> Option<&SpikeSummary> {
    spikes.iter().min_by_key(|s| rank_key(s))
}

/// The spike with the highest latency; of equal ones, the latest (the summary line has
/// always named the last of equal worst spikes).
pub fn worst(spikes: &[SpikeSummary]) -> Option<&SpikeSummary> {
    spikes.iter().max_by_key(|s| (s.latency_ns, s.id))
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
                prio: Some(19),
                boost: None,
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
    fn of_one_priority_the_highest_latency_ranks_first_and_of_equal_ones_the_earlier() {
        assert_eq!(rank(&equal_pairs()), vec![1, 3, 0, 2]);
        assert_eq!(first(&equal_pairs()).map(|f| f.id), Some(2));
    }

    /// The spike a marker flagged comes first, then the higher-priority
    /// victim's, whatever the latencies.
    #[test]
    fn flagged_first_then_priority_then_latency() {
        let mut s = equal_pairs();
        // Spike 3 (300) is cyclictest's marker; spike 1 (300) a FIFO 90 thread's.
        s[2].flagged = true;
        s[0].victim.prio = Some(9);
        assert_eq!(rank(&s), vec![2, 0, 1, 3]);
        assert_eq!(first(&s).map(|f| f.id), Some(3));
        // The worst is still the highest latency.
        assert_eq!(worst(&s).map(|w| w.id), Some(4));
    }

    /// A flagged spike whose writer's priority no event showed ranks after the flagged
    /// spikes of known victims, not first as a made-up priority would put it.
    #[test]
    fn a_victim_of_unrecorded_priority_ranks_after_known_ones() {
        let mut s = equal_pairs();
        s[0].flagged = true;
        s[0].victim.prio = None;
        s[1].flagged = true;
        assert_eq!(rank(&s), vec![1, 0, 3, 2]);
        assert_eq!(s[0].victim.policy(), "priority not recorded");
        assert!(!s[0].victim.is_rt());
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
