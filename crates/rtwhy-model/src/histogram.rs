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

/// 1, 2, 5, 10, 20, 50, ... ns: where a latency axis puts its ticks, in order.
pub fn one_two_five() -> impl Iterator<Item = u64> {
    let mut decade = 1u64;
    std::iter::from_fn(move || {
        let d = decade;
        decade = decade.checked_mul(10)?;
        Some([d, 2 * d, 5 * d])
    })
    .flatten()
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

/// The schema of `overview.json` ([`crate::schema::OVERVIEW`]), beside the type it names.
pub const OVERVIEW_SCHEMA: &str = crate::schema::OVERVIEW;

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

    /// Wake-ups in the buckets wholly at or above `threshold_ns` that no breach of the
    /// tail accounts for: counted by the detector, never reported as a breach (found at
    /// the thread's switch-out, `wakeups_unseen`, or their report lost, `breaches_lost`).
    pub fn unreported_above(&self, threshold_ns: u64) -> u64 {
        let in_tail = |lower_ns: u64| -> u64 {
            self.tail
                .iter()
                .flat_map(|p| p.buckets.iter())
                .filter(|b| b.lower_ns == lower_ns)
                .map(|b| b.count)
                .sum()
        };
        self.buckets
            .iter()
            .filter(|b| b.lower_ns >= threshold_ns)
            .map(|b| b.count.saturating_sub(in_tail(b.lower_ns)))
            .sum()
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
    /// The wall-clock time (Unix epoch ns) at `from_ns`, which places sessions of
    /// different boots on one time line; absent in overviews written before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_unix_ns: Option<u64>,
    /// The session directories this overview combines, oldest first (a recorder's
    /// state directory: [`Overview::combine`]); empty for one session's overview.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<String>,
    /// Wake-ups the detector could not count (its table of threads was full).
    pub wakeups_lost: u64,
    /// Wake-ups in the histograms that the BPF detector found after the fact: the kernel
    /// ran none of its programs at their wake-up or switch-in, and the thread's switch-in
    /// was estimated from its switch-out and its CPU time (bpf/detector.bpf.c, `unseen`).
    #[serde(default)]
    pub wakeups_unseen: u64,
    /// The latest any of those can have been, ns: the largest time from a wake-up's start
    /// to the switch-out it was found at (its estimated switch-in lies before, and can
    /// be early); 0 when none was, and in files written before it (absent there).
    #[serde(default)]
    pub wakeups_unseen_latest_ns: u64,
    /// Breaches the detector measured and could not report (ring buffer full): in the
    /// histograms, in no tail.
    pub breaches_lost: u64,
    /// Every thread, most wake-ups first.
    pub threads: Vec<ThreadOverview>,
}

/// One thread's histograms being added up over sessions: the `nth` thread (by id) named
/// `comm` in each session.
struct Combining {
    comm: String,
    nth: usize,
    tid: i32,
    cpus: Vec<(u32, Histogram)>,
    tail: Vec<(String, Histogram)>,
}

impl Overview {
    /// Each thread with its place among the threads of its name, by thread id (the
    /// first `cyclictest` thread 0, the next 1): what names a thread across sessions,
    /// where a program restarted has new thread ids.
    pub fn threads_by_name(&self) -> Vec<(&ThreadOverview, usize)> {
        let mut own: Vec<&ThreadOverview> = self.threads.iter().collect();
        own.sort_by_key(|t| t.tid);
        let mut seen: Vec<(&str, usize)> = Vec::new();
        own.into_iter()
            .map(|t| {
                let n = match seen.iter_mut().find(|(c, _)| *c == t.comm) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        seen.push((&t.comm, 0));
                        0
                    }
                };
                (t, n)
            })
            .collect()
    }

    /// This overview's threads beside another's, matched by [`Self::threads_by_name`]:
    /// `(mine, theirs)`, mine in my order, then those only the other has.
    pub fn matched<'a>(
        &'a self,
        other: &'a Overview,
    ) -> Vec<(Option<&'a ThreadOverview>, Option<&'a ThreadOverview>)> {
        let mine = self.threads_by_name();
        let theirs = other.threads_by_name();
        let key = |t: &ThreadOverview, list: &[(&ThreadOverview, usize)]| {
            list.iter()
                .find(|(x, _)| std::ptr::eq(*x, t))
                .map(|(x, n)| (x.comm.clone(), *n))
        };
        let mut out: Vec<(Option<&ThreadOverview>, Option<&ThreadOverview>)> = self
            .threads
            .iter()
            .map(|t| {
                let k = key(t, &mine);
                let other = theirs
                    .iter()
                    .find(|(x, n)| k.as_ref() == Some(&(x.comm.clone(), *n)))
                    .map(|(x, _)| *x);
                (Some(t), other)
            })
            .collect();
        for t in &other.threads {
            if !out
                .iter()
                .any(|(_, o)| o.is_some_and(|o| std::ptr::eq(o, t)))
            {
                out.push((None, Some(t)));
            }
        }
        out
    }

    /// The overviews of several sessions (`(directory name, overview)`, oldest first)
    /// as one, and for each session the shift that places its trace times on the
    /// combined time line (add it to a time of that session's clock).
    ///
    /// Sessions follow each other on the time line as the wall clock saw them start,
    /// never overlapping (a clock set back, a session without a wall-clock start: the
    /// next one starts where the previous one ends). A thread's histograms add up over
    /// the sessions where its name comes back at the same place among the threads of
    /// that name (ordered by thread id: a program restarted gets new ids); `tid` is the
    /// latest session's. The threshold and the detector are the latest session's.
    pub fn combine(parts: &[(String, Overview)]) -> (Overview, Vec<i128>) {
        let mut shifts = Vec::with_capacity(parts.len());
        // Where the previous session starts and ends on the combined line.
        let mut prev: Option<(i128, i128, Option<u64>)> = None;
        for (_, o) in parts {
            let from = o.from_ns as i128;
            let span = o.to_ns.saturating_sub(o.from_ns) as i128;
            let at = match prev {
                None => from,
                Some((start, end, unix)) => match (unix, o.from_unix_ns) {
                    (Some(a), Some(b)) => (start + b as i128 - a as i128).max(end),
                    _ => end,
                },
            };
            shifts.push(at - from);
            prev = Some((at, at + span, o.from_unix_ns));
        }
        let mut threads: Vec<Combining> = Vec::new();
        for (_, o) in parts {
            for (t, n) in o.threads_by_name() {
                let i = match threads.iter().position(|x| x.comm == t.comm && x.nth == n) {
                    Some(i) => i,
                    None => {
                        threads.push(Combining {
                            comm: t.comm.clone(),
                            nth: n,
                            tid: t.tid,
                            cpus: Vec::new(),
                            tail: Vec::new(),
                        });
                        threads.len() - 1
                    }
                };
                let slot = &mut threads[i];
                slot.tid = t.tid;
                for c in &t.cpus {
                    let h = Histogram::from_sparse(&c.histogram);
                    match slot.cpus.iter_mut().find(|(cpu, _)| *cpu == c.cpu) {
                        Some((_, mine)) => mine.merge(&h),
                        None => slot.cpus.push((c.cpu, h)),
                    }
                }
                for part in &t.tail {
                    let h = Histogram::from_sparse(&SparseHistogram {
                        wakeups: part.count,
                        max_ns: part.max_ns,
                        sum_ns: 0,
                        buckets: part.buckets.clone(),
                    });
                    match slot.tail.iter_mut().find(|(cause, _)| *cause == part.cause) {
                        Some((_, mine)) => mine.merge(&h),
                        None => slot.tail.push((part.cause.clone(), h)),
                    }
                }
            }
        }
        let mut combined: Vec<ThreadOverview> = threads
            .into_iter()
            .map(|mut t| {
                t.cpus.sort_by_key(|(cpu, _)| *cpu);
                ThreadOverview::new(t.tid, t.comm, &t.cpus, &t.tail)
            })
            .collect();
        combined.sort_by(|a, b| b.wakeups.cmp(&a.wakeups).then(a.tid.cmp(&b.tid)));
        let first = parts.first().map(|(_, o)| o);
        let last = parts.last().map(|(_, o)| o);
        let end = parts
            .iter()
            .zip(&shifts)
            .map(|((_, o), s)| o.to_ns as i128 + s)
            .max()
            .unwrap_or(0);
        let overview = Overview {
            schema: OVERVIEW_SCHEMA.to_string(),
            detector: last.map(|o| o.detector.clone()).unwrap_or_default(),
            threshold_ns: last.map_or(0, |o| o.threshold_ns),
            from_ns: first.map_or(0, |o| o.from_ns),
            to_ns: end.max(0) as u64,
            from_unix_ns: first.and_then(|o| o.from_unix_ns),
            wakeups_lost: parts.iter().map(|(_, o)| o.wakeups_lost).sum(),
            wakeups_unseen: parts.iter().map(|(_, o)| o.wakeups_unseen).sum(),
            wakeups_unseen_latest_ns: parts
                .iter()
                .map(|(_, o)| o.wakeups_unseen_latest_ns)
                .max()
                .unwrap_or(0),
            breaches_lost: parts.iter().map(|(_, o)| o.breaches_lost).sum(),
            threads: combined,
            sessions: parts.iter().map(|(name, _)| name.clone()).collect(),
        };
        (overview, shifts)
    }
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

    fn thread(tid: i32, comm: &str, cpu: u32, lat: &[u64], tail: &[(&str, u64)]) -> ThreadOverview {
        let mut h = Histogram::default();
        lat.iter().for_each(|ns| h.add(*ns));
        let tail: Vec<(String, Histogram)> = tail
            .iter()
            .map(|(cause, ns)| {
                let mut t = Histogram::default();
                t.add(*ns);
                (cause.to_string(), t)
            })
            .collect();
        ThreadOverview::new(tid, comm.into(), &[(cpu, h)], &tail)
    }

    fn session(
        from_ns: u64,
        to_ns: u64,
        unix: Option<u64>,
        threads: Vec<ThreadOverview>,
    ) -> Overview {
        Overview {
            schema: OVERVIEW_SCHEMA.into(),
            detector: "bpf".into(),
            threshold_ns: 100_000,
            from_ns,
            to_ns,
            from_unix_ns: unix,
            sessions: Vec::new(),
            wakeups_lost: 1,
            wakeups_unseen: 0,
            wakeups_unseen_latest_ns: 0,
            breaches_lost: 0,
            threads,
        }
    }

    #[test]
    fn sessions_combine_on_one_time_line_and_a_restarted_thread_adds_up() {
        // Two boots: the second session's monotonic clock starts again near 0, an hour
        // of wall clock after the first session started. cyclictest ran two measuring
        // threads each time (new thread ids after the reboot).
        let first = session(
            5_000_000_000,
            65_000_000_000,
            Some(1_000_000_000_000_000_000),
            vec![
                thread(
                    100,
                    "cyclictest",
                    1,
                    &[10_000, 12_000],
                    &[("preemption", 200_000)],
                ),
                thread(101, "cyclictest", 1, &[9_000], &[]),
            ],
        );
        let second = session(
            2_000_000_000,
            12_000_000_000,
            Some(1_000_003_600_000_000_000),
            vec![
                thread(40, "cyclictest", 1, &[11_000, 300_000], &[("irq", 300_000)]),
                thread(41, "cyclictest", 0, &[8_000], &[]),
                thread(42, "irq/9-acpi", 0, &[1_000], &[]),
            ],
        );
        let (o, shifts) =
            Overview::combine(&[("s1".to_string(), first), ("s2".to_string(), second)]);
        assert_eq!(o.sessions, ["s1", "s2"]);
        // The second session starts 3600 s after the first on the combined line.
        assert_eq!(shifts[0], 0);
        assert_eq!(2_000_000_000 + shifts[1], 5_000_000_000 + 3_600_000_000_000);
        assert_eq!(o.to_ns as i128, 12_000_000_000 + shifts[1]);
        assert_eq!((o.wakeups_lost, o.threads.len()), (2, 3));
        let main = &o.threads[0];
        assert_eq!(
            (main.tid, main.comm.as_str(), main.wakeups),
            (40, "cyclictest", 4)
        );
        assert_eq!(main.max_ns, 300_000);
        let causes: Vec<(&str, u64)> = main
            .tail
            .iter()
            .map(|t| (t.cause.as_str(), t.count))
            .collect();
        assert_eq!(causes, [("irq", 1), ("preemption", 1)]);
        let second_thread = o.threads.iter().find(|t| t.tid == 41).unwrap();
        assert_eq!(second_thread.wakeups, 2);
        assert_eq!(second_thread.cpus.len(), 2);
    }

    #[test]
    fn threads_match_across_sessions_by_name_and_place() {
        let before = session(
            0,
            1,
            None,
            vec![
                thread(101, "cyclictest", 1, &[9_000], &[]),
                thread(100, "cyclictest", 1, &[10_000], &[]),
                thread(7, "gone", 0, &[1_000], &[]),
            ],
        );
        let after = session(
            0,
            1,
            None,
            vec![
                thread(41, "cyclictest", 1, &[8_000], &[]),
                thread(40, "cyclictest", 1, &[7_000], &[]),
                thread(9, "new", 0, &[1_000], &[]),
            ],
        );
        let pairs: Vec<(Option<i32>, Option<i32>)> = after
            .matched(&before)
            .iter()
            .map(|(a, b)| (a.map(|t| t.tid), b.map(|t| t.tid)))
            .collect();
        assert_eq!(
            pairs,
            [
                (Some(41), Some(101)),
                (Some(40), Some(100)),
                (Some(9), None),
                (None, Some(7))
            ]
        );
    }

    #[test]
    fn a_session_without_a_wall_clock_start_follows_the_previous_one() {
        let a = session(100, 1_000, None, Vec::new());
        let b = session(50, 150, Some(7), Vec::new());
        let (o, shifts) = Overview::combine(&[("a".into(), a), ("b".into(), b)]);
        assert_eq!(50 + shifts[1], 1_000);
        assert_eq!((o.from_ns, o.to_ns), (100, 1_100));
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
