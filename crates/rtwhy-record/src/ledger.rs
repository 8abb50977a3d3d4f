//! What a recording session keeps on disk and what it only counts: the ledger of
//! captures behind `rtwhy record --disk-budget`, so a recorder left running for days
//! keeps the worst capture of every cause and never fills the disk. With a state
//! directory (`--state-dir`, crate::state) the ledger also holds the captures of the
//! earlier sessions there, and they go first.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rtwhy_model::Cause;
use serde::{Deserialize, Serialize};

/// One capture's diagnosis, as `session.json` lists it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Diagnosed {
    /// 1-based capture number.
    #[serde(rename = "capture")]
    pub index: usize,
    /// The trace's file name in the session directory.
    pub file: String,
    /// The victim thread's id.
    pub tid: i32,
    /// The victim thread's name.
    #[serde(rename = "comm")]
    pub victim: String,
    /// The CPU the victim was late on.
    pub cpu: u32,
    /// How late it was.
    pub latency_ns: u64,
    /// The primary cause; `None` when the capture could not be analysed.
    #[serde(serialize_with = "cause_name", deserialize_with = "cause_of_name")]
    pub cause: Option<Cause>,
    /// The primary cause's sentence.
    pub summary: String,
    /// Who or what the primary cause points at (`rtwhy_model::Finding::culprit`): what
    /// a session's report groups its captures by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub culprit: Option<String>,
    /// When the latency ended, trace clock ns (CLOCK_MONOTONIC for rtwhy's captures);
    /// 0 when the capture has no spike.
    pub end_ns: u64,
    /// Why the capture could not be analysed, when it could not.
    pub error: Option<String>,
}

fn cause_name<S: serde::Serializer>(c: &Option<Cause>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(c.as_str()),
        None => s.serialize_none(),
    }
}

/// A cause read back from `session.json`; a key this rtwhy does not know reads as none
/// (undiagnosed), so a session written by a newer rtwhy still counts against the budget.
fn cause_of_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Cause>, D::Error> {
    let name: Option<String> = Option::deserialize(d)?;
    Ok(name.as_deref().and_then(Cause::parse))
}

impl Diagnosed {
    /// The cause as the summary groups it.
    pub fn cause_key(&self) -> &'static str {
        self.cause.map_or("undiagnosed", |c| c.as_str())
    }
}

/// A capture on disk: its diagnosis, its files and their size.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its diagnosis.
    pub diag: Diagnosed,
    /// The trace; its `.txt` and `.json` sit beside it.
    pub trace: PathBuf,
    /// The size of its files together.
    pub bytes: u64,
    /// The directory of the earlier session it belongs to, in the same state directory;
    /// `None`: this session's.
    pub session: Option<PathBuf>,
    /// How many sessions ago it was recorded: 0 for this session's, 1 for the session
    /// before, and so on. The older go first.
    pub age: u32,
}

impl Entry {
    /// The capture's files (trace, text, JSON), as they are on disk now.
    pub fn on_disk(trace: &Path, diag: Diagnosed) -> Entry {
        let bytes = files(trace)
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        Entry {
            diag,
            trace: trace.to_path_buf(),
            bytes,
            session: None,
            age: 0,
        }
    }
}

/// A capture's three files.
pub fn files(trace: &Path) -> [PathBuf; 3] {
    [
        trace.to_path_buf(),
        trace.with_extension("txt"),
        trace.with_extension("json"),
    ]
}

/// Captures of one cause deleted to stay under the budget.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Dropped {
    /// How many were deleted.
    pub captures: u64,
    /// The worst latency among them.
    pub worst_ns: u64,
}

/// The captures kept, those dropped, and the budget.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The captures on disk, in the order they were added.
    pub kept: Vec<Entry>,
    /// The captures deleted, by cause.
    pub dropped: BTreeMap<&'static str, Dropped>,
    /// Bound on the whole session directory, or with a state directory on all of it.
    pub budget: Option<u64>,
    /// Bytes of the directory that are not captures (`session.json`), as last written.
    pub other_bytes: u64,
    /// Bytes of the earlier sessions in the same state directory that are not captures
    /// (their `session.json` and `overview.json`: kept, they are small).
    pub earlier_bytes: u64,
    /// The largest capture so far: room for the next one is kept free, because it is
    /// written before the ledger hears of it.
    largest: u64,
}

impl Ledger {
    /// An empty ledger bounded by `budget` bytes (none: every capture is kept).
    pub fn new(budget: Option<u64>) -> Ledger {
        Ledger {
            budget,
            ..Ledger::default()
        }
    }

    /// A ledger bounded by `budget` bytes that starts with the captures and the other
    /// files of the earlier sessions in the same state directory ([`crate::state`]).
    pub fn with_earlier(budget: Option<u64>, earlier: Vec<Entry>, earlier_bytes: u64) -> Ledger {
        Ledger {
            budget,
            largest: earlier.iter().map(|e| e.bytes).max().unwrap_or(0),
            kept: earlier,
            earlier_bytes,
            ..Ledger::default()
        }
    }

    /// Bytes the session directory takes (with earlier sessions, the state directory):
    /// the kept captures, `session.json` and the earlier sessions' other files.
    pub fn used(&self) -> u64 {
        self.kept.iter().map(|e| e.bytes).sum::<u64>() + self.other_bytes + self.earlier_bytes
    }

    /// This session's captures on disk, as its `session.json` lists them.
    pub fn this_session(&self) -> impl Iterator<Item = &Entry> {
        self.kept.iter().filter(|e| e.session.is_none())
    }

    /// Adds a capture and returns the captures that must go to bring the session back
    /// under its budget, with room left for a capture as large as the largest so far
    /// (already out of the ledger; the caller deletes their files).
    pub fn add(&mut self, entry: Entry) -> Vec<Entry> {
        self.largest = self.largest.max(entry.bytes);
        self.kept.push(entry);
        self.trim()
    }

    /// The captures that must go to bring the directory under its budget, with room
    /// left for a capture as large as the largest so far: out of the ledger, and this
    /// session's counted as dropped (an earlier session's are counted in its own
    /// `session.json` by the caller, who deletes the files of both).
    pub fn trim(&mut self) -> Vec<Entry> {
        let mut out = Vec::new();
        let Some(budget) = self.budget else {
            return out;
        };
        while self.used() + self.largest > budget {
            let Some(i) = self.least_valuable() else {
                break;
            };
            let e = self.kept.remove(i);
            if e.session.is_none() {
                let d = self.dropped.entry(e.diag.cause_key()).or_default();
                d.captures += 1;
                d.worst_ns = d.worst_ns.max(e.diag.latency_ns);
            }
            out.push(e);
        }
        out
    }

    /// The capture to delete first: of the oldest session that has one, the mildest one
    /// that is not the worst of its cause (over every session); when every capture left
    /// is the worst of its cause, the mildest of those.
    fn least_valuable(&self) -> Option<usize> {
        let mut worst: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, e) in self.kept.iter().enumerate() {
            let w = worst.entry(e.diag.cause_key()).or_insert(i);
            if e.diag.latency_ns > self.kept[*w].diag.latency_ns {
                *w = i;
            }
        }
        let mildest = |only_repeats: bool| {
            self.kept
                .iter()
                .enumerate()
                .filter(|(i, e)| !only_repeats || worst.get(e.diag.cause_key()) != Some(i))
                // The oldest of equally mild captures goes first; among repeats, every
                // capture of an older session before those of a newer one.
                .min_by_key(|(i, e)| {
                    let age = if only_repeats { e.age } else { 0 };
                    (std::cmp::Reverse(age), e.diag.latency_ns, *i)
                })
                .map(|(i, _)| i)
        };
        mildest(true).or_else(|| mildest(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: usize, cause: Cause, latency_us: u64, bytes: u64) -> Entry {
        Entry {
            diag: Diagnosed {
                index,
                file: format!("spike-{index:03}.dat"),
                tid: 1,
                victim: "v".into(),
                cpu: 1,
                latency_ns: latency_us * 1000,
                cause: Some(cause),
                summary: String::new(),
                culprit: None,
                end_ns: 0,
                error: None,
            },
            trace: PathBuf::from(format!("spike-{index:03}.dat")),
            bytes,
            session: None,
            age: 0,
        }
    }

    fn earlier(index: usize, cause: Cause, latency_us: u64, bytes: u64, age: u32) -> Entry {
        Entry {
            session: Some(PathBuf::from(format!("rtwhy-{age}"))),
            age,
            ..entry(index, cause, latency_us, bytes)
        }
    }

    fn kept(l: &Ledger) -> Vec<usize> {
        l.kept.iter().map(|e| e.diag.index).collect()
    }

    #[test]
    fn without_a_budget_everything_stays() {
        let mut l = Ledger::new(None);
        for i in 1..=5 {
            assert!(l.add(entry(i, Cause::Preemption, 100, 1 << 30)).is_empty());
        }
        assert_eq!(l.kept.len(), 5);
    }

    #[test]
    fn the_mildest_repeat_goes_first_and_the_worst_of_each_cause_stays() {
        // 400 bytes: three captures of 100 and room for the next one.
        let mut l = Ledger::new(Some(400));
        l.add(entry(1, Cause::Preemption, 500, 100));
        l.add(entry(2, Cause::Preemption, 200, 100));
        l.add(entry(3, Cause::Softirq, 150, 100));
        // Over budget: the mildest preemption goes, not the softirq (its cause's only
        // capture) although it is milder.
        let gone = l.add(entry(4, Cause::Preemption, 300, 100));
        assert_eq!(gone.iter().map(|e| e.diag.index).collect::<Vec<_>>(), [2]);
        assert_eq!(kept(&l), [1, 3, 4]);
        let gone = l.add(entry(5, Cause::Preemption, 900, 100));
        assert_eq!(gone.iter().map(|e| e.diag.index).collect::<Vec<_>>(), [4]);
        assert_eq!(kept(&l), [1, 3, 5]);
        let d = &l.dropped["preemption"];
        assert_eq!((d.captures, d.worst_ns), (2, 300_000));
        assert!(l.used() + 100 <= 400);
    }

    #[test]
    fn when_only_worsts_remain_the_mildest_cause_gives_way() {
        let mut l = Ledger::new(Some(300));
        l.add(entry(1, Cause::Preemption, 500, 100));
        l.add(entry(2, Cause::Softirq, 150, 100));
        let gone = l.add(entry(3, Cause::Hwlat, 300, 100));
        assert_eq!(gone.iter().map(|e| e.diag.index).collect::<Vec<_>>(), [2]);
        assert_eq!(kept(&l), [1, 3]);
        assert_eq!(l.dropped["softirq"].captures, 1);
    }

    #[test]
    fn the_session_file_counts_against_the_budget() {
        let mut l = Ledger::new(Some(400));
        l.other_bytes = 150;
        l.add(entry(1, Cause::Preemption, 500, 100));
        let gone = l.add(entry(2, Cause::Preemption, 200, 100));
        assert_eq!(gone.iter().map(|e| e.diag.index).collect::<Vec<_>>(), [2]);
        assert_eq!(l.used(), 250);
    }

    #[test]
    fn earlier_sessions_give_way_first_but_keep_the_worst_of_each_cause() {
        // Two earlier sessions (ages 2 and 1) and room for four captures of 100 bytes
        // plus the next one; their other files take 50.
        let mut l = Ledger::with_earlier(
            Some(550),
            vec![
                earlier(1, Cause::Preemption, 900, 100, 2),
                earlier(2, Cause::Preemption, 800, 100, 2),
                earlier(1, Cause::Softirq, 100, 100, 1),
                earlier(2, Cause::Preemption, 700, 100, 1),
            ],
            50,
        );
        assert!(l.trim().is_empty());
        // This session's capture is milder than every earlier preemption, yet the oldest
        // session's repeat goes: the worst preemption (900 us) stays, as does the
        // softirq, its cause's only capture.
        let gone = l.add(entry(1, Cause::Preemption, 200, 100));
        assert_eq!(gone.len(), 1);
        assert_eq!((gone[0].age, gone[0].diag.latency_ns), (2, 800_000));
        // Earlier sessions' deletions are theirs to count, not this session's.
        assert!(l.dropped.is_empty());
        let gone = l.add(entry(2, Cause::Preemption, 300, 100));
        assert_eq!((gone[0].age, gone[0].diag.latency_ns), (1, 700_000));
        assert_eq!(l.this_session().count(), 2);
        assert!(l.used() + 100 <= 550);
    }

    #[test]
    fn a_capture_larger_than_the_budget_does_not_stay() {
        let mut l = Ledger::new(Some(50));
        let gone = l.add(entry(1, Cause::Preemption, 500, 100));
        assert_eq!(gone.len(), 1);
        assert!(l.kept.is_empty());
        assert_eq!(l.used(), 0);
    }
}
