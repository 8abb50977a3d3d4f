//! How `rtwhy selftest` judges a scenario: from the victim's spikes that overlap the
//! load's run, by the share of their latency whose primary cause is the expected one.
//!
//! A spike counts with the part of its latency a load can have added (all of it but the
//! stretches the CPU was stopped or not recorded, read from the breakdown's events and
//! not from the cause named); a spike under the threshold without those stretches is the
//! machine's and not judged. The scenario passes when the expected cause is primary for
//! more than [`PASS_SHARE`] of the judged latency: a classifier answering at random, or
//! always with the most common cause, does not reach it (see the tests).
//!
//! ```
//! use rtwhy_lab::judge::{judge, PASS_SHARE};
//! use rtwhy_model::selftest::Verdict;
//! use rtwhy_model::Cause;
//!
//! let t = Cause::RtThrottling;
//! assert_eq!(judge(t, &[(Cause::Hwlat, 10), (t, 30)]), Verdict::Pass);
//! assert_eq!(judge(t, &[]), Verdict::NoSpike);
//! assert_eq!(PASS_SHARE, 0.5);
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use rtwhy_model::selftest::Verdict;
use rtwhy_model::{Bucket, Cause, Spike};

/// The share of the judged spikes' latency the expected cause must be primary for.
pub const PASS_SHARE: f64 = 0.5;

/// The share of the spikes' latency whose primary cause is `expected` (0 without spikes).
pub fn expected_share(expected: Cause, spikes: &[(Cause, u64)]) -> f64 {
    let total: u64 = spikes.iter().map(|(_, l)| *l).sum();
    if total == 0 {
        return 0.0;
    }
    let hit: u64 = spikes
        .iter()
        .filter(|(c, _)| *c == expected)
        .map(|(_, l)| *l)
        .sum();
    hit as f64 / total as f64
}

/// The verdict on the victim's spikes during the load (primary cause, latency): the
/// expected cause must be primary for more than half their latency. One spike of the
/// right cause among many others, or a right cause on the short spikes only, fails.
pub fn judge(expected: Cause, spikes: &[(Cause, u64)]) -> Verdict {
    if spikes.is_empty() {
        Verdict::NoSpike
    } else if expected_share(expected, spikes) > PASS_SHARE {
        Verdict::Pass
    } else {
        Verdict::Fail
    }
}

/// What the selftest judges of one spike of the victim during the load.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// The cause named for the part of its latency the load can have added, and that
    /// part (the spike's weight in the verdict).
    Load(Cause, u64),
    /// That part stays under the threshold: the CPU's stop made it a spike (a stalled
    /// vCPU, firmware), not the load.
    Machine,
}

/// How one spike counts: by the part of its latency a load can have added (from the
/// events, not from the cause named) and the cause named for that part. Where the stop
/// was the larger part, `hwlat` is rightly the primary cause and the load's part is
/// judged by the cause named beside it (none: `unknown`).
pub fn judged(spike: &Spike, threshold: u64) -> Judged {
    let load = load_latency(spike);
    if load < threshold {
        return Judged::Machine;
    }
    let cause = if spike.primary.cause == Cause::Hwlat {
        spike
            .contributors
            .iter()
            .filter(|f| f.cause != Cause::Hwlat)
            .max_by(|a, b| a.share.total_cmp(&b.share))
            .map_or(Cause::Unknown, |f| f.cause)
    } else {
        spike.primary.cause
    };
    Judged::Load(cause, load)
}

/// The part of a spike's latency a load can have added: all of it but the stretches the
/// CPU was stopped (no event at all, then a late timer interrupt: the hypervisor or
/// firmware, which no load on the CPU causes) and those before the capture began.
fn load_latency(spike: &Spike) -> u64 {
    let stopped = breakdown_ns(spike, |b| {
        matches!(
            b,
            Bucket::Unaccounted | Bucket::TimerIrqDelay | Bucket::NotRecorded
        )
    });
    spike.latency_ns.saturating_sub(stopped)
}

/// The part of a spike before its capture began.
fn not_recorded(spike: &Spike) -> u64 {
    breakdown_ns(spike, |b| *b == Bucket::NotRecorded)
}

/// The nanoseconds of a spike's breakdown in the buckets `f` picks.
fn breakdown_ns(spike: &Spike, f: impl Fn(&Bucket) -> bool) -> u64 {
    spike
        .breakdown
        .iter()
        .filter(|i| f(&i.bucket))
        .map(|i| i.ns)
        .sum()
}

/// Whether a spike from `start` to `end` overlaps the load's run.
pub fn during(runs: &Range<u64>, start: u64, end: u64) -> bool {
    end >= runs.start && start <= runs.end
}

/// The victim's spikes of one attempt, gathered from every capture of its session.
///
/// Capture windows overlap, so one spike can be in several captures: it is judged from
/// the one that recorded most of it (a capture taken right after the previous one begins
/// inside the spike it was triggered by). Spikes outside the load's run are the
/// machine's own and only counted.
#[derive(Debug, Default)]
pub struct Tally {
    /// Per spike (victim's tid, end): its unrecorded part, how it counts, its latency.
    seen: BTreeMap<(i32, u64), (u64, Judged, u64)>,
    outside: BTreeSet<(i32, u64)>,
}

/// The judged spikes of one attempt.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tallied {
    /// The cause and weight of each spike the load can have made (see [`judged`]).
    pub spikes: Vec<(Cause, u64)>,
    /// The latency of the worst of them (ns).
    pub worst: u64,
    /// Spikes during the load that are the machine's ([`Judged::Machine`]).
    pub machine: usize,
}

impl Tally {
    /// Adds one spike of the victim from a capture; `runs` is the load's run
    /// (CLOCK_MONOTONIC, the trace's clock) where the load has one.
    pub fn add(&mut self, spike: &Spike, runs: Option<&Range<u64>>, threshold: u64) {
        let key = (spike.victim.tid, spike.end.0);
        if runs.is_some_and(|r| !during(r, spike.start.0, spike.end.0)) {
            self.outside.insert(key);
            return;
        }
        let unseen = not_recorded(spike);
        if self.seen.get(&key).is_none_or(|(u, ..)| unseen < *u) {
            let view = (unseen, judged(spike, threshold), spike.latency_ns);
            self.seen.insert(key, view);
        }
    }

    /// The spikes of the victim before or after the load's run.
    pub fn outside(&self) -> usize {
        self.outside.len()
    }

    /// The spikes during the load, each once.
    pub fn tallied(&self) -> Tallied {
        let mut t = Tallied::default();
        for (_, counted, latency) in self.seen.values() {
            match counted {
                Judged::Load(cause, weight) => {
                    t.spikes.push((*cause, *weight));
                    t.worst = t.worst.max(*latency);
                }
                Judged::Machine => t.machine += 1,
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{
        BreakdownItem, Comm, Confidence, Finding, Nanos, SpikeKind, SpikeSource, TaskRef,
    };

    #[test]
    fn only_spikes_overlapping_the_load_are_judged() {
        let runs = 1_000..2_000;
        assert!(!during(&runs, 100, 999), "over before the load began");
        assert!(during(&runs, 900, 1_000), "ends as the load begins");
        assert!(during(&runs, 1_500, 1_600));
        assert!(during(&runs, 1_990, 2_500), "began during the load");
        assert!(!during(&runs, 2_001, 2_100), "after the load ended");
    }

    #[test]
    fn verdicts() {
        let t = Cause::RtThrottling;
        assert_eq!(judge(t, &[]), Verdict::NoSpike);
        assert_eq!(judge(t, &[(Cause::Hwlat, 10), (t, 30)]), Verdict::Pass);
        assert_eq!(judge(t, &[(Cause::Preemption, 5)]), Verdict::Fail);
        // One spike of the right cause among many others does not pass.
        let mut many = vec![(t, 2_000)];
        many.extend(std::iter::repeat_n((Cause::Hwlat, 2_000), 20));
        assert_eq!(judge(t, &many), Verdict::Fail);
        // Right on the short spikes, wrong on the long one: the latency decides.
        assert_eq!(
            judge(t, &[(t, 1), (t, 1), (t, 1), (Cause::Unknown, 10)]),
            Verdict::Fail
        );
        assert!(Verdict::NoSpike.fails());
        assert!(!Verdict::NotInducible("x".into()).fails());
    }

    fn spike(primary: Cause, contributors: &[(Cause, f64)], breakdown: &[(Bucket, u64)]) -> Spike {
        let finding = |cause, share| Finding {
            cause,
            confidence: Confidence::High,
            share,
            summary: String::new(),
            culprit: None,
        };
        let breakdown: Vec<BreakdownItem> = breakdown
            .iter()
            .map(|(bucket, us)| BreakdownItem {
                bucket: bucket.clone(),
                ns: us * 1_000,
            })
            .collect();
        Spike {
            id: 1,
            victim: TaskRef {
                tid: 10,
                comm: Comm::new("cyclictest"),
                prio: Some(19),
                boost: None,
            },
            cpu: 1,
            kind: SpikeKind::TimerWakeup,
            source: SpikeSource::Events,
            start: Nanos(0),
            end: Nanos(breakdown.iter().map(|b| b.ns).sum()),
            latency_ns: breakdown.iter().map(|b| b.ns).sum(),
            end_inferred: false,
            waker: None,
            primary: finding(primary, 1.0),
            contributors: contributors.iter().map(|&(c, s)| finding(c, s)).collect(),
            breakdown,
            evidence: Vec::new(),
            remediation: Vec::new(),
            missing: Vec::new(),
        }
    }

    /// On a busy host, spikes of the preemption scenario's victim made by a stalled vCPU
    /// (hwlat, and captures that began inside their spike) outweighed the spinner's. A
    /// spike the stop or the capture's start made is the machine's; where the spinner's
    /// part is a spike of its own, it is judged by the cause named for it.
    #[test]
    fn the_part_a_stop_or_the_capture_start_adds_is_not_judged() {
        let spin = || Bucket::Task {
            comm: Comm::new("lab-spin"),
            tid: 7,
            prio: 9,
            outranks_victim: true,
            equals_victim: false,
            kernel_thread: false,
            boost: None,
        };
        let threshold = 150_000;
        // 2.5 ms late timer interrupt and 60 us of idle exit: the machine's.
        let stalled = spike(
            Cause::Hwlat,
            &[],
            &[(Bucket::TimerIrqDelay, 2_500), (Bucket::Idle, 60)],
        );
        assert_eq!(judged(&stalled, threshold), Judged::Machine);
        // 1.6 ms before the capture began, then 60 us of idle.
        let cut = spike(
            Cause::Unknown,
            &[],
            &[(Bucket::NotRecorded, 1_600), (Bucket::Idle, 60)],
        );
        assert_eq!(judged(&cut, threshold), Judged::Machine);
        // The spinner's 300 us inside a 2 ms stop: hwlat is primary, the spinner's
        // part is judged by the cause named for it.
        let both = spike(
            Cause::Hwlat,
            &[(Cause::Preemption, 0.13)],
            &[(Bucket::Unaccounted, 2_000), (spin(), 300)],
        );
        assert_eq!(
            judged(&both, threshold),
            Judged::Load(Cause::Preemption, 300_000)
        );
        // Nothing named for it: it counts against the expected cause.
        let unnamed = spike(
            Cause::Hwlat,
            &[],
            &[(Bucket::Unaccounted, 2_000), (spin(), 300)],
        );
        assert_eq!(
            judged(&unnamed, threshold),
            Judged::Load(Cause::Unknown, 300_000)
        );
        // Without a stop the primary cause is judged, whatever it is.
        let idle = spike(Cause::IdleExit, &[], &[(Bucket::Idle, 400)]);
        assert_eq!(
            judged(&idle, threshold),
            Judged::Load(Cause::IdleExit, 400_000)
        );
        // The weight comes from the events: a wrong name does not shrink it.
        let wrong = spike(Cause::Softirq, &[], &[(spin(), 300)]);
        assert_eq!(
            judged(&wrong, threshold),
            Judged::Load(Cause::Softirq, 300_000)
        );
    }

    #[test]
    fn a_spike_in_two_captures_counts_once_from_the_one_that_recorded_most() {
        let threshold = 150_000;
        let whole = spike(Cause::Preemption, &[], &[(Bucket::Idle, 400)]);
        let late = spike(
            Cause::Unknown,
            &[],
            &[(Bucket::NotRecorded, 300), (Bucket::Idle, 100)],
        );
        let mut t = Tally::default();
        t.add(&late, None, threshold);
        t.add(&whole, None, threshold);
        let mut after = whole.clone();
        after.start = Nanos(10_000_000);
        after.end = Nanos(10_400_000);
        t.add(&after, Some(&(0..5_000_000)), threshold);
        assert_eq!(t.outside(), 1);
        let got = t.tallied();
        assert_eq!(got.spikes, vec![(Cause::Preemption, 400_000)]);
        assert_eq!((got.worst, got.machine), (400_000, 0));
    }

    /// A small deterministic generator (xorshift): the tests need no `rand`.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Spike sets shaped like the guest's runs (docs/rt-guest.md): for each scenario,
    /// 5-120 spikes of 1-40 ms, the load's cause on some, the machine's noise (hwlat,
    /// unknown, idle_exit) on the rest. The truth is the cause the load put there.
    fn runs(rng: &mut Rng) -> Vec<(Cause, Vec<(Cause, u64)>)> {
        let expected = [
            Cause::RtThrottling,
            Cause::Preemption,
            Cause::PriorityInversion,
            Cause::LockContention,
            Cause::Softirq,
            Cause::IrqOnIsolatedCpu,
        ];
        let noise = [Cause::Hwlat, Cause::Unknown, Cause::IdleExit];
        let mut out = Vec::new();
        for _ in 0..200 {
            for e in expected {
                let n = 5 + (rng.next() % 116) as usize;
                let spikes = (0..n)
                    .map(|_| {
                        let lat = 1_000_000 + rng.next() % 39_000_000;
                        // The load's spikes are the majority of the latency in a run
                        // whose threshold sits above the noise.
                        let c = if rng.next() % 10 < 7 {
                            e
                        } else {
                            noise[(rng.next() % 3) as usize]
                        };
                        (c, lat)
                    })
                    .collect();
                out.push((e, spikes));
            }
        }
        out
    }

    #[test]
    fn chance_does_not_pass() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let sets = runs(&mut rng);
        // A classifier that knows the truth passes nearly every run.
        let truthful = sets
            .iter()
            .filter(|(e, s)| judge(*e, s) == Verdict::Pass)
            .count();
        assert!(
            truthful * 10 >= sets.len() * 9,
            "{truthful} of {}",
            sets.len()
        );
        // One answering at random among the named causes passes almost none.
        let named: Vec<Cause> = Cause::ALL
            .iter()
            .copied()
            .filter(|c| *c != Cause::Unknown)
            .collect();
        let random = sets
            .iter()
            .filter(|(e, s)| {
                let guessed: Vec<(Cause, u64)> = s
                    .iter()
                    .map(|(_, l)| (named[(rng.next() % named.len() as u64) as usize], *l))
                    .collect();
                judge(*e, &guessed) == Verdict::Pass
            })
            .count();
        assert!(
            random * 100 <= sets.len(),
            "random passed {random} of {}",
            sets.len()
        );
        // One always answering the most common cause over all runs passes only the
        // scenarios that expect that cause: at most one scenario in six, never a selftest.
        let mut counts: BTreeMap<Cause, usize> = BTreeMap::new();
        for (_, s) in &sets {
            for (c, _) in s {
                *counts.entry(*c).or_default() += 1;
            }
        }
        let common = counts
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(c, _)| *c)
            .unwrap();
        let constant: Vec<bool> = sets
            .iter()
            .map(|(e, s)| {
                let guessed: Vec<(Cause, u64)> = s.iter().map(|(_, l)| (common, *l)).collect();
                judge(*e, &guessed) == Verdict::Pass
            })
            .collect();
        assert!(constant
            .iter()
            .zip(&sets)
            .all(|(pass, (e, _))| !*pass || *e == common));
        // A whole selftest (six scenarios) never passes with a constant answer.
        for chunk in constant.chunks(6) {
            assert!(chunk.iter().filter(|p| **p).count() <= 1);
        }
    }
}
