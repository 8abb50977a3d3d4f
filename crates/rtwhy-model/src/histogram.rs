//! Wake-up latency histograms and a session's overview: every wake-up of every watched
//! thread counted, and the breaches' tail stacked by cause.
//!
//! The buckets are log-linear, the same in the BPF detector (`bpf/detector.bpf.c`,
//! `hists`) and here: 8 buckets of 128 ns below 1024 ns, then 8 buckets per power of two,
//! each an eighth of its power of two wide (12.5% at most of its lower bound), the last
//! one open-ended from about 16 s.
//!
//! ```
//! use rtwhy_model::Histogram;
//!
//! let mut h = Histogram::default();
//! for us in [5, 6, 7, 40] {
//!     h.add(us * 1000);
//! }
//! assert_eq!(h.wakeups(), 4);
//! assert_eq!(h.max_ns(), 40_000);
//! assert_eq!(h.quantile(0.5), 5_632); // the bucket [5632, 6144) holds the second of four
//! ```

use serde::{Deserialize, Serialize};

/// How many buckets a histogram has.
pub const HIST_BUCKETS: usize = 200;

/// Sub-buckets per power of two, as a shift.
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
/// The first power of two split logarithmically (1024 ns); below it buckets are linear.
const LINEAR_BITS: u32 = 10;

/// The bucket a latency falls in.
pub fn bucket_of(ns: u64) -> usize {
    if ns < 1 << LINEAR_BITS {
        return (ns >> (LINEAR_BITS - SUB_BITS)) as usize;
    }
    let bit = 63 - ns.leading_zeros();
    let sub = ((ns >> (bit - SUB_BITS)) as usize) & (SUB - 1);
    let i = SUB + (bit - LINEAR_BITS) as usize * SUB + sub;
    i.min(HIST_BUCKETS - 1)
}

/// The lowest latency of bucket `i` in ns.
pub fn bucket_lower(i: usize) -> u64 {
    if i < SUB {
        return (i as u64) << (LINEAR_BITS - SUB_BITS);
    }
    let octave = (i - SUB) / SUB;
    let sub = (i - SUB) % SUB;
    ((SUB + sub) as u64) << (octave as u32 + LINEAR_BITS - SUB_BITS)
}

/// One bucket as files carry it: its lower bound and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistBucket {
    /// The bucket's lowest latency, ns (the next bucket's `lower_ns` is its end).
    pub lower_ns: u64,
    /// Wake-ups in it.
    pub count: u64,
}

/// A latency histogram: counts per bucket, their sum and the largest latency.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    sum_ns: u64,
    max_ns: u64,
}

/// A histogram as files carry it: the non-empty buckets only.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SparseHistogram {
    /// Wake-ups counted.
    pub wakeups: u64,
    /// The largest latency, ns.
    pub max_ns: u64,
    /// The sum of all latencies, ns (the mean is `sum_ns / wakeups`).
    pub sum_ns: u64,
    /// The non-empty buckets, lowest first.
    pub buckets: Vec<HistBucket>,
}

impl Histogram {
    /// A histogram from the detector's counts (`counts[i]`: bucket `i`; longer inputs
    /// fold into the last bucket).
    pub fn from_counts(counts: &[u64], sum_ns: u64, max_ns: u64) -> Histogram {
        let mut h = Histogram {
            counts: vec![0; HIST_BUCKETS],
            sum_ns,
            max_ns,
        };
        for (i, c) in counts.iter().enumerate() {
            let slot = &mut h.counts[i.min(HIST_BUCKETS - 1)];
            *slot = slot.saturating_add(*c);
        }
        h
    }

    /// Counts one latency.
    pub fn add(&mut self, ns: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; HIST_BUCKETS];
        }
        let i = bucket_of(ns);
        self.counts[i] = self.counts[i].saturating_add(1);
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.is_empty() {
            self.counts = vec![0; HIST_BUCKETS];
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine = mine.saturating_add(*theirs);
        }
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Wake-ups counted.
    pub fn wakeups(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// The largest latency counted, ns.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// The sum of all latencies, ns.
    pub fn sum_ns(&self) -> u64 {
        self.sum_ns
    }

    /// The `q` quantile (0.5: the median), as the lower bound of the bucket that holds
    /// it (never above the largest latency); 0 for an empty histogram.
    pub fn quantile(&self, q: f64) -> u64 {
        let total = self.wakeups();
        if total == 0 {
            return 0;
        }
        let rank = quantile_rank(q, total);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                return bucket_lower(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// The non-empty buckets, lowest first.
    pub fn buckets(&self) -> Vec<HistBucket> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| HistBucket {
                lower_ns: bucket_lower(i),
                count: *c,
            })
            .collect()
    }

    /// The file form.
    pub fn to_sparse(&self) -> SparseHistogram {
        SparseHistogram {
            wakeups: self.wakeups(),
            max_ns: self.max_ns,
            sum_ns: self.sum_ns,
            buckets: self.buckets(),
        }
    }

    /// Back from the file form: each bucket by its lower bound (a bound that is no
    /// bucket's falls into the bucket that holds it).
    pub fn from_sparse(s: &SparseHistogram) -> Histogram {
        let mut counts = vec![0u64; HIST_BUCKETS];
        for b in &s.buckets {
            let slot = &mut counts[bucket_of(b.lower_ns)];
            *slot = slot.saturating_add(b.count);
        }
        Histogram {
            counts,
            sum_ns: s.sum_ns,
            max_ns: s.max_ns,
        }
    }
}

/// The schema of `overview.json`.
pub const OVERVIEW_SCHEMA: &str = "rtwhy.overview/1";

/// What the breaches of one cause add to a thread's tail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailPart {
    /// The cause's key (docs/causes.md), `undiagnosed` (captured, no verdict), or
    /// `not_captured` (a breach no capture diagnosed: rate-limited, in dead time, after
    /// `--max-spikes`, inside another breach's window, or a capture that could not be
    /// saved).
    pub cause: String,
    /// Breaches.
    pub count: u64,
    /// The worst of them, ns.
    pub max_ns: u64,
    /// Their latencies.
    pub buckets: Vec<HistBucket>,
}

/// One thread's wake-ups on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuWakeups {
    /// The CPU the thread was switched in on.
    pub cpu: u32,
    /// Its wake-ups there.
    #[serde(flatten)]
    pub histogram: SparseHistogram,
}

/// One watched thread's whole picture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadOverview {
    /// Thread id.
    pub tid: i32,
    /// Its name.
    pub comm: String,
    /// Wake-ups measured.
    pub wakeups: u64,
    /// Median latency (lower bound of its bucket), ns.
    pub p50_ns: u64,
    /// 99th percentile (lower bound of its bucket), ns.
    pub p99_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Sum of latencies, ns.
    pub sum_ns: u64,
    /// Non-empty buckets over all CPUs.
    pub buckets: Vec<HistBucket>,
    /// The same per CPU.
    pub cpus: Vec<CpuWakeups>,
    /// Breaches (latency at or above the threshold) by cause, most first.
    pub tail: Vec<TailPart>,
}

impl ThreadOverview {
    /// A thread's overview from its per-CPU histograms and its tail by cause.
    pub fn new(
        tid: i32,
        comm: String,
        cpus: &[(u32, Histogram)],
        tail: &[(String, Histogram)],
    ) -> ThreadOverview {
        let mut all = Histogram::default();
        for (_, h) in cpus {
            all.merge(h);
        }
        let mut tail: Vec<TailPart> = tail
            .iter()
            .map(|(cause, h)| TailPart {
                cause: cause.clone(),
                count: h.wakeups(),
                max_ns: h.max_ns(),
                buckets: h.buckets(),
            })
            .filter(|t| t.count > 0)
            .collect();
        tail.sort_by(|a, b| b.count.cmp(&a.count).then(a.cause.cmp(&b.cause)));
        ThreadOverview {
            tid,
            comm,
            wakeups: all.wakeups(),
            p50_ns: all.quantile(0.5),
            p99_ns: all.quantile(0.99),
            max_ns: all.max_ns(),
            sum_ns: all.sum_ns(),
            buckets: all.buckets(),
            cpus: cpus
                .iter()
                .map(|(cpu, h)| CpuWakeups {
                    cpu: *cpu,
                    histogram: h.to_sparse(),
                })
                .collect(),
            tail,
        }
    }
}

/// A session's overview (`overview.json`): every watched thread's histogram over the
/// time it covers, with its tail by cause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overview {
    /// [`OVERVIEW_SCHEMA`].
    pub schema: String,
    /// What measured the wake-ups: `bpf`, `tracefs` or `timerlat`.
    pub detector: String,
    /// The breach threshold, ns.
    pub threshold_ns: u64,
    /// Start of the time covered, CLOCK_MONOTONIC ns (the trace clock of the captures).
    pub from_ns: u64,
    /// End of the time covered, CLOCK_MONOTONIC ns.
    pub to_ns: u64,
    /// Wake-ups the detector could not count (its table of threads was full).
    pub wakeups_lost: u64,
    /// Wake-ups in the histograms that the BPF detector found after the fact: the kernel
    /// ran none of its programs at their wake-up or switch-in, and the thread's switch-in
    /// was estimated from its switch-out and its CPU time (bpf/detector.bpf.c, `unseen`).
    #[serde(default)]
    pub wakeups_unseen: u64,
    /// Breaches the detector measured and could not report (ring buffer full): in the
    /// histograms, in no tail.
    pub breaches_lost: u64,
    /// Every thread, most wake-ups first.
    pub threads: Vec<ThreadOverview>,
}

/// The 1-based rank of the `q` quantile among `n` values, by nearest rank: the smallest
/// rank whose values cover at least `q` of them (p99 of 100 values is the 99th, p50 of
/// 3 the 2nd). The one quantile every figure of rtwhy uses, so a p99 printed by the
/// histograms, the selftest and a recording's summary means the same thing.
pub fn quantile_rank(q: f64, n: u64) -> u64 {
    ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n.max(1))
}

/// The `q` quantile (nearest rank, [`quantile_rank`]) of values sorted ascending; `None`
/// for none.
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let rank = quantile_rank(q, sorted.len() as u64) as usize;
    sorted.get(rank.checked_sub(1)?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_ordered() {
        for i in 1..HIST_BUCKETS {
            let lo = bucket_lower(i);
            assert!(lo > bucket_lower(i - 1), "bucket {i}");
            assert_eq!(bucket_of(lo), i, "lower bound of {i}");
            assert_eq!(bucket_of(lo - 1), i - 1, "just below {i}");
        }
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), HIST_BUCKETS - 1);
    }

    #[test]
    fn buckets_are_an_eighth_of_their_power_of_two() {
        for i in 8..HIST_BUCKETS - 1 {
            let (lo, hi) = (bucket_lower(i), bucket_lower(i + 1));
            assert!((hi - lo) * 8 <= lo, "bucket {i}: [{lo}, {hi})");
        }
        // From 1 us to seconds.
        assert!(bucket_lower(HIST_BUCKETS - 1) > 5_000_000_000);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 1.0), Some(100));
        assert_eq!(quantile(&v, 0.0), Some(1));
        assert_eq!(quantile(&[3u64, 5, 9], 0.5), Some(5));
        assert_eq!(quantile::<u64>(&[], 0.5), None);
    }

    #[test]
    fn quantiles_follow_the_counts() {
        let mut h = Histogram::default();
        for _ in 0..98 {
            h.add(10_000);
        }
        h.add(200_000);
        h.add(900_000);
        assert_eq!(h.wakeups(), 100);
        assert_eq!(h.quantile(0.5), bucket_lower(bucket_of(10_000)));
        assert_eq!(h.quantile(0.99), bucket_lower(bucket_of(200_000)));
        assert_eq!(h.quantile(1.0), bucket_lower(bucket_of(900_000)));
        assert_eq!(h.max_ns(), 900_000);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }

    #[test]
    fn sparse_form_round_trips() {
        let mut h = Histogram::default();
        for ns in [3, 700, 1500, 1500, 65_000, 12_000_000_000] {
            h.add(ns);
        }
        let s = h.to_sparse();
        assert_eq!(s.buckets.len(), 5);
        assert_eq!(Histogram::from_sparse(&s), h);
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Histogram::default();
        a.add(5_000);
        let mut b = Histogram::default();
        b.add(5_000);
        b.add(80_000);
        a.merge(&b);
        assert_eq!(a.wakeups(), 3);
        assert_eq!(a.max_ns(), 80_000);
        assert_eq!(a.sum_ns(), 90_000);
        let mut empty = Histogram::default();
        empty.merge(&a);
        assert_eq!(empty, a);
    }

    #[test]
    fn thread_overview_stacks_the_tail() {
        let mut cpu1 = Histogram::default();
        for _ in 0..10 {
            cpu1.add(8_000);
        }
        let mut irq = Histogram::default();
        irq.add(150_000);
        irq.add(160_000);
        let mut other = Histogram::default();
        other.add(120_000);
        let t = ThreadOverview::new(
            7,
            "app".into(),
            &[(1, cpu1)],
            &[
                ("not_captured".into(), other),
                ("irq".into(), irq),
                ("softirq".into(), Histogram::default()),
            ],
        );
        assert_eq!(t.wakeups, 10);
        let causes: Vec<_> = t.tail.iter().map(|p| (p.cause.as_str(), p.count)).collect();
        assert_eq!(causes, [("irq", 2), ("not_captured", 1)]);
    }
}
