//! A CPU's own noise: how late a timer thread on it wakes with nothing loaded.
//!
//! The selftest measures it on the victim's CPU before the scenarios, with a probe thread
//! at the victim's priority ([`PRIORITY`], every [`INTERVAL`], for [`RUN`]). Scenarios
//! whose load can be sized put their threshold and load above its 99th percentile
//! ([`crate::Scenario::setup_for`]): on a quiet machine that changes nothing, in a TCG
//! guest (wake-ups milliseconds late by themselves) it keeps the machine's own stalls
//! from being judged as the load's spikes. The device-interrupt scenario weighs its
//! interrupts' bursts against every measured wake-up ([`crate::irq_work`]).
//!
//! ```
//! use rtwhy_lab::noise::Noise;
//! use std::time::Duration;
//!
//! let n = Noise::from_wakeups((1..=200).map(|us| us * 1_000).collect(), 250_000);
//! assert_eq!(n.p99, Duration::from_micros(198));
//! assert_eq!(n.max, Duration::from_micros(250));
//! ```

use std::time::Duration;

/// How long the noise is measured.
pub const RUN: Duration = Duration::from_secs(2);

/// The measuring thread's period.
pub const INTERVAL: Duration = Duration::from_millis(1);

/// The measuring thread's SCHED_FIFO priority: the victim's.
pub const PRIORITY: i32 = 80;

/// How late a timer thread on one CPU wakes with nothing loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Noise {
    /// The 99th percentile of the wake-up latencies (nearest rank).
    pub p99: Duration,
    /// The worst wake-up latency.
    pub max: Duration,
    /// Every wake-up's latency (ns), shortest first.
    pub latencies: Vec<u64>,
}

impl Noise {
    /// The noise from the measured wake-ups' latencies (ns, any order) and the worst the
    /// measuring thread saw (`max`, which may have been left out of the wake-ups
    /// collected). With fewer than 100 wake-ups (a very slow guest) the 99th percentile
    /// is the largest; with none it is `max`.
    pub fn from_wakeups(mut latencies: Vec<u64>, max: u64) -> Noise {
        latencies.sort_unstable();
        let p99 = rtwhy_model::quantile(&latencies, 0.99).unwrap_or(max);
        Noise {
            p99: Duration::from_nanos(p99),
            max: Duration::from_nanos(max.max(p99)),
            latencies,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_wakeups_the_worst_seen_is_the_percentile() {
        let n = Noise::from_wakeups(Vec::new(), 7_000);
        assert_eq!(n.p99, Duration::from_micros(7));
        assert_eq!(n.max, Duration::from_micros(7));
    }

    #[test]
    fn the_max_is_never_below_the_percentile() {
        let n = Noise::from_wakeups(vec![30_000, 10_000, 20_000], 0);
        assert_eq!(n.latencies, vec![10_000, 20_000, 30_000]);
        assert_eq!(n.p99, Duration::from_micros(30));
        assert_eq!(n.max, Duration::from_micros(30));
    }
}
