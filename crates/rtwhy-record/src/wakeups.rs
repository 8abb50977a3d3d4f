//! The recorder's half of a session's overview: every measured wake-up per thread and
//! CPU (from the detector that measured them), and the breaches no capture diagnosed.
//! The captures' verdicts, the other half, join them in [`Wakeups::overview`].

use std::collections::BTreeMap;

use rtwhy_model::{Histogram, Overview, ThreadOverview, OVERVIEW_SCHEMA};

pub use crate::bpf::{bounded, ThreadCpu, MAX_THREAD_CPUS};

/// The breaches a session's captures diagnosed: per thread, per cause key, their
/// latencies.
pub type DiagnosedTail = BTreeMap<i32, BTreeMap<String, Histogram>>;

/// The tail part of breaches no capture diagnosed.
pub const NOT_CAPTURED: &str = "not_captured";

/// Wake-up histograms of one session so far.
#[derive(Debug, Clone, Default)]
pub struct Wakeups {
    hists: BTreeMap<ThreadCpu, Histogram>,
    comms: BTreeMap<i32, String>,
    not_captured: BTreeMap<i32, Histogram>,
    /// Wake-ups the detector could not count.
    pub lost: u64,
    /// Wake-ups counted whose switch-in the detector did not see (estimated).
    pub unseen: u64,
    /// The latest any of those can have been, ns (see `BpfDetector::wakeups_unseen_latest_ns`).
    pub unseen_latest_ns: u64,
    /// Start of the time covered, CLOCK_MONOTONIC ns.
    pub from_ns: u64,
    /// End of the time covered, CLOCK_MONOTONIC ns.
    pub to_ns: u64,
}

impl Wakeups {
    /// No wake-ups yet, covering the time from `from_ns` (CLOCK_MONOTONIC).
    pub fn since(from_ns: u64) -> Wakeups {
        Wakeups {
            from_ns,
            to_ns: from_ns,
            ..Wakeups::default()
        }
    }

    /// Counts one wake-up of `tid` switched in on `cpu`.
    pub fn add(&mut self, tid: i32, cpu: u32, comm: &str, latency_ns: u64) {
        let at = bounded(&self.hists, ThreadCpu { tid, cpu });
        if at.tid == tid {
            self.name(tid, comm);
        }
        self.hists.entry(at).or_default().add(latency_ns);
    }

    /// Sets the whole histogram of `at` (a detector that counts on its own).
    pub fn set(&mut self, at: ThreadCpu, comm: &str, h: Histogram) {
        self.name(at.tid, comm);
        self.hists.insert(at, h);
    }

    /// Takes the histograms and names of `other` (a detector's own count) as they are.
    pub fn adopt(&mut self, other: &Wakeups) {
        for (at, h) in &other.hists {
            self.hists.insert(*at, h.clone());
        }
        for (tid, comm) in &other.comms {
            self.comms.insert(*tid, comm.clone());
        }
    }

    /// A breach that no capture diagnosed.
    pub fn not_captured(&mut self, tid: i32, comm: &str, latency_ns: u64) {
        let full = self.not_captured.len() >= MAX_THREAD_CPUS;
        let tid = if full && !self.not_captured.contains_key(&tid) {
            0
        } else {
            self.name(tid, comm);
            tid
        };
        self.not_captured.entry(tid).or_default().add(latency_ns);
    }

    /// The histograms so far, per thread and CPU.
    pub fn histograms(&self) -> impl Iterator<Item = (&ThreadCpu, &Histogram)> {
        self.hists.iter()
    }

    fn name(&mut self, tid: i32, comm: &str) {
        if !comm.is_empty() {
            self.comms.insert(tid, comm.to_string());
        }
    }

    /// The overview: these histograms, with their tails stacked by the causes
    /// `diagnosed` holds and the breaches not captured.
    pub fn overview(
        &self,
        detector: &str,
        threshold_ns: u64,
        breaches_lost: u64,
        diagnosed: &DiagnosedTail,
    ) -> Overview {
        let mut tids: Vec<i32> = self.hists.keys().map(|k| k.tid).collect();
        tids.extend(self.not_captured.keys());
        tids.extend(diagnosed.keys());
        tids.sort_unstable();
        tids.dedup();
        let mut threads: Vec<ThreadOverview> = tids
            .into_iter()
            .map(|tid| {
                let cpus: Vec<(u32, Histogram)> = self
                    .hists
                    .range(ThreadCpu { tid, cpu: 0 }..=ThreadCpu { tid, cpu: u32::MAX })
                    .map(|(k, h)| (k.cpu, h.clone()))
                    .collect();
                let mut tail: Vec<(String, Histogram)> = diagnosed
                    .get(&tid)
                    .into_iter()
                    .flatten()
                    .map(|(c, h)| (c.clone(), h.clone()))
                    .collect();
                if let Some(h) = self.not_captured.get(&tid) {
                    tail.push((NOT_CAPTURED.to_string(), h.clone()));
                }
                let comm = self.comms.get(&tid).cloned().unwrap_or_default();
                ThreadOverview::new(tid, comm, &cpus, &tail)
            })
            .collect();
        threads.sort_by(|a, b| b.wakeups.cmp(&a.wakeups).then(a.tid.cmp(&b.tid)));
        Overview {
            schema: OVERVIEW_SCHEMA.to_string(),
            detector: detector.to_string(),
            threshold_ns,
            from_ns: self.from_ns,
            to_ns: self.to_ns,
            from_unix_ns: None,
            sessions: Vec::new(),
            wakeups_lost: self.lost,
            wakeups_unseen: self.unseen,
            wakeups_unseen_latest_ns: self.unseen_latest_ns,
            breaches_lost,
            threads,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_beyond_the_bound_share_tid_0() {
        let mut w = Wakeups::default();
        let tids = MAX_THREAD_CPUS as i32 + 10;
        for tid in 1..=tids {
            w.add(tid, 3, &format!("worker-{tid}"), 1_000);
        }
        w.add(1, 3, "worker-1", 2_000);
        let o = w.overview("tracefs", 100_000, 0, &DiagnosedTail::new());
        assert_eq!(o.threads.len(), MAX_THREAD_CPUS + 1);
        let others = o.threads.iter().find(|t| t.tid == 0).unwrap();
        assert_eq!((others.wakeups, others.comm.as_str()), (10, ""));
        assert_eq!(o.threads.iter().find(|t| t.tid == 1).unwrap().wakeups, 2);
    }

    #[test]
    fn overview_joins_histograms_and_tails() {
        let mut w = Wakeups::since(10);
        w.to_ns = 20;
        for ns in [5_000, 6_000, 300_000, 400_000] {
            w.add(7, 1, "app", ns);
        }
        w.add(7, 2, "app", 9_000);
        w.add(8, 1, "other", 1_000);
        w.not_captured(7, "", 400_000);
        let mut diagnosed = DiagnosedTail::new();
        diagnosed
            .entry(7)
            .or_default()
            .entry("irq".into())
            .or_default()
            .add(300_000);
        let o = w.overview("bpf", 100_000, 0, &diagnosed);
        assert_eq!(o.threads.len(), 2);
        let t = &o.threads[0];
        assert_eq!((t.tid, t.comm.as_str(), t.wakeups), (7, "app", 5));
        assert_eq!(t.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(t.max_ns, 400_000);
        let tail: Vec<_> = t.tail.iter().map(|p| (p.cause.as_str(), p.count)).collect();
        assert_eq!(tail, [("irq", 1), ("not_captured", 1)]);
        assert_eq!(o.threads[1].tail, []);
        assert_eq!((o.from_ns, o.to_ns), (10, 20));
    }
}
