//! A recording session's whole picture as the overview pane uses it: the session's
//! [`Overview`] (every watched thread's wake-up histogram and its tail by cause), the
//! captures its `session.json` lists, and the pure arithmetic of the pane: which
//! buckets a column of bars covers, how high a bar stands on a log count scale, how a
//! bar is split by cause, and which captures fall in a bar.
//!
//! ```
//! use rtwhy_model::{Histogram, Overview, ThreadOverview, OVERVIEW_SCHEMA};
//! use rtwhy_tui::session::{HistLayout, Session};
//!
//! let mut h = Histogram::default();
//! h.add(6_000);
//! h.add(250_000);
//! let mut tail = Histogram::default();
//! tail.add(250_000);
//! let overview = Overview {
//!     schema: OVERVIEW_SCHEMA.into(),
//!     detector: "bpf".into(),
//!     threshold_ns: 100_000,
//!     from_ns: 0,
//!     to_ns: 1_000_000_000,
//!     from_unix_ns: None,
//!     sessions: Vec::new(),
//!     wakeups_lost: 0,
//!     wakeups_unseen: 0,
//!     wakeups_unseen_latest_ns: 0,
//!     breaches_lost: 0,
//!     threads: vec![ThreadOverview::new(7, "app".into(), &[(1, h)], &[("irq".into(), tail)])],
//! };
//! let doc = serde_json::json!({"spikes": [{"capture": 1, "file": "spike-001.dat", "tid": 7,
//!     "comm": "app", "cpu": 1, "latency_ns": 250_000, "cause": "irq"}]});
//! let session = Session::new(overview, &doc);
//! let layout = HistLayout::new(&session, 60);
//! let col = layout.column_of(rtwhy_model::bucket_of(250_000));
//! let (from, to) = layout.range_ns(col);
//! assert_eq!(session.captures_in(7, from, to), [0]);
//! ```

use std::collections::HashMap;

use rtwhy_model::{bucket_lower, bucket_of, Overview, ThreadOverview, HIST_BUCKETS};
use rtwhy_report::overview::{captures_of, Capture};

/// One capture of the session as the overview lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionCapture {
    /// Its number in the session (1 for `spike-001.dat`); 0 when `session.json` does not
    /// say.
    pub number: u64,
    /// What `session.json` says of it.
    pub capture: Capture,
    /// The latency the breach detector measured, ns: what its histogram bucket and tail
    /// counted. The capture's own diagnosis (`capture.latency_ns`) measures the same
    /// breach from the trace's events and may land in the next bucket, so the bars are
    /// matched on this one.
    pub detected_ns: u64,
}

/// A session's overview and the captures `session.json` lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// `overview.json`.
    pub overview: Overview,
    /// The captures `session.json` lists (the ones kept on disk when it was written),
    /// in its order.
    pub captures: Vec<SessionCapture>,
}

impl Session {
    /// The session of `overview` and the `session.json` document `doc`: its `spikes`
    /// (read with [`captures_of`], as `rtwhy report DIR` reads them), each with the
    /// latency its breach record carried (`session.captures[].trigger.record.latency`,
    /// by capture number).
    pub fn new(overview: Overview, doc: &serde_json::Value) -> Session {
        let numbers: HashMap<&str, u64> = list(&doc["spikes"])
            .iter()
            .filter_map(|s| Some((s["file"].as_str()?, s["capture"].as_u64()?)))
            .collect();
        let detected: HashMap<u64, u64> = list(&doc["session"]["captures"])
            .iter()
            .filter_map(|c| {
                Some((
                    c["index"].as_u64()?,
                    c["trigger"]["record"]["latency"].as_u64()?,
                ))
            })
            .collect();
        let captures = captures_of(doc)
            .into_iter()
            .map(|capture| {
                let number = numbers.get(capture.file.as_str()).copied().unwrap_or(0);
                let detected_ns = detected.get(&number).copied().unwrap_or(capture.latency_ns);
                SessionCapture {
                    number,
                    capture,
                    detected_ns,
                }
            })
            .collect();
        Session { overview, captures }
    }

    /// The captures of thread `tid` whose breach measured `[from_ns, to_ns)`, as indices
    /// into [`Session::captures`], worst first.
    pub fn captures_in(&self, tid: i32, from_ns: u64, to_ns: u64) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .captures
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.capture.tid == tid && c.detected_ns >= from_ns && c.detected_ns < to_ns
            })
            .map(|(i, _)| i)
            .collect();
        v.sort_by_key(|i| std::cmp::Reverse(self.captures.get(*i).map_or(0, |c| c.detected_ns)));
        v
    }
}

fn list(v: &serde_json::Value) -> &[serde_json::Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The buckets every thread's histogram shows: all wake-ups of every thread and the
/// threshold, with a little room on both sides, so the bar cursor stays on the same
/// latencies when another thread is selected.
pub fn bucket_range(o: &Overview) -> (usize, usize) {
    let th = bucket_of(o.threshold_ns.max(1));
    let (mut lo, mut hi) = (th, th);
    for b in o.threads.iter().flat_map(|t| &t.buckets) {
        let i = bucket_of(b.lower_ns);
        lo = lo.min(i);
        hi = hi.max(i);
    }
    let lo = lo.saturating_sub(1);
    let hi = (hi + 2).min(HIST_BUCKETS).max(lo + 8).min(HIST_BUCKETS);
    (lo, hi)
}

/// How the histogram's buckets map to screen columns: each column of bars shows
/// `per_col` adjacent buckets (more than one only when the buckets outnumber the
/// columns), `col_w` characters wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistLayout {
    /// First bucket shown.
    pub lo: usize,
    /// One past the last bucket shown.
    pub hi: usize,
    /// Buckets per column of bars.
    pub per_col: usize,
    /// Characters per column of bars (1 to 3).
    pub col_w: u16,
}

impl HistLayout {
    /// The layout of `session`'s histograms in `width` columns of bars.
    pub fn new(session: &Session, width: u16) -> HistLayout {
        let (lo, hi) = bucket_range(&session.overview);
        HistLayout::of_range(lo, hi, width)
    }

    /// The layout of buckets `lo..hi` in `width` columns.
    pub fn of_range(lo: usize, hi: usize, width: u16) -> HistLayout {
        let n = hi.saturating_sub(lo).max(1);
        let w = usize::from(width.max(1));
        let per_col = n.div_ceil(w);
        let cols = n.div_ceil(per_col);
        let col_w = (w / cols).clamp(1, 3) as u16;
        HistLayout {
            lo,
            hi: hi.max(lo + 1),
            per_col,
            col_w,
        }
    }

    /// Columns of bars.
    pub fn columns(&self) -> usize {
        (self.hi - self.lo).div_ceil(self.per_col)
    }

    /// The column showing bucket `i` (the first or last column outside the range).
    pub fn column_of(&self, i: usize) -> usize {
        (i.clamp(self.lo, self.hi - 1) - self.lo) / self.per_col
    }

    /// The buckets of column `col`.
    pub fn buckets_of(&self, col: usize) -> std::ops::Range<usize> {
        let a = (self.lo + col * self.per_col).min(self.hi);
        a..(a + self.per_col).min(self.hi)
    }

    /// The latencies of column `col`, ns: from its first bucket's lower bound to the
    /// next column's.
    pub fn range_ns(&self, col: usize) -> (u64, u64) {
        let b = self.buckets_of(col);
        let to = if b.end >= HIST_BUCKETS {
            u64::MAX
        } else {
            bucket_lower(b.end)
        };
        (bucket_lower(b.start), to)
    }
}

/// One column of bars of one thread: its wake-ups, the breaches in it by cause (the
/// tail's order: most breaches first), and those under the threshold.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bar {
    /// Wake-ups in the column.
    pub count: u64,
    /// Breaches in it by cause key (`not_captured`, `undiagnosed` included).
    pub causes: Vec<(String, u64)>,
}

impl Bar {
    /// The wake-ups of `t` in the buckets `range`.
    pub fn of(t: &ThreadOverview, range: std::ops::Range<usize>) -> Bar {
        let inside = |lower: u64| range.contains(&bucket_of(lower));
        let count = t
            .buckets
            .iter()
            .filter(|b| inside(b.lower_ns))
            .fold(0u64, |a, b| a.saturating_add(b.count));
        let causes = t
            .tail
            .iter()
            .filter_map(|p| {
                let n = p
                    .buckets
                    .iter()
                    .filter(|b| inside(b.lower_ns))
                    .fold(0u64, |a, b| a.saturating_add(b.count));
                (n > 0).then(|| (p.cause.clone(), n))
            })
            .collect();
        Bar { count, causes }
    }

    /// Breaches in the column.
    pub fn breaches(&self) -> u64 {
        self.causes
            .iter()
            .fold(0u64, |a, (_, n)| a.saturating_add(*n))
    }

    /// Wake-ups that were no breach: under the threshold, or (in a column wholly above
    /// it) counted and never reported as a breach (`wakeups_unseen`, `breaches_lost`).
    pub fn under(&self) -> u64 {
        self.count.saturating_sub(self.breaches())
    }
}

/// Decades of the count axis: 10^decades is at the top, so `max` fits (at least 1).
pub fn decades(max: u64) -> u32 {
    let mut d = 1;
    while d < 19 && 10u64.pow(d) < max {
        d += 1;
    }
    d
}

/// The height in rows of a bar of `count` wake-ups on a log count axis of `rows` rows
/// topped by 10^`decades`: a count of 1 stands one step up, every decade a step more;
/// any wake-up shows as at least one row.
pub fn bar_rows(count: u64, decades: u32, rows: u16) -> u16 {
    if count == 0 {
        return 0;
    }
    let steps = f64::from(decades) + 1.0;
    let h = f64::from(rows) * ((count as f64).log10() + 1.0) / steps;
    (h.round() as u16).clamp(1, rows)
}

/// Splits a bar of `rows` rows between `parts` (counts, bottom first) in proportion to
/// their counts, by largest remainder (the axis is logarithmic, so only the whole
/// bar's height is a count; the split shows the mix). A part with a count gets a row
/// while rows last, taken from the largest part, so a single breach among thousands of
/// wake-ups stays visible.
pub fn stack(parts: &[u64], rows: u16) -> Vec<u16> {
    let total: u64 = parts.iter().sum();
    let mut out = vec![0u16; parts.len()];
    if total == 0 || rows == 0 {
        return out;
    }
    let exact: Vec<f64> = parts
        .iter()
        .map(|c| *c as f64 * f64::from(rows) / total as f64)
        .collect();
    for (o, e) in out.iter_mut().zip(&exact) {
        *o = e.floor() as u16;
    }
    let mut left = rows.saturating_sub(out.iter().sum());
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|a, b| {
        let fa = exact[*a] - exact[*a].floor();
        let fb = exact[*b] - exact[*b].floor();
        fb.total_cmp(&fa).then(a.cmp(b))
    });
    for i in order {
        if left == 0 {
            break;
        }
        if parts[i] > 0 {
            out[i] += 1;
            left -= 1;
        }
    }
    for i in 0..parts.len() {
        if parts[i] > 0 && out[i] == 0 {
            let Some(big) = (0..out.len())
                .filter(|j| out[*j] > 1)
                .max_by_key(|j| out[*j])
            else {
                break;
            };
            out[big] -= 1;
            out[i] = 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Histogram, OVERVIEW_SCHEMA};
    use serde_json::json;

    fn overview(threshold_ns: u64, threads: Vec<ThreadOverview>) -> Overview {
        Overview {
            schema: OVERVIEW_SCHEMA.into(),
            detector: "bpf".into(),
            threshold_ns,
            from_ns: 0,
            to_ns: 1_000_000_000,
            from_unix_ns: None,
            sessions: Vec::new(),
            wakeups_lost: 0,
            wakeups_unseen: 0,
            wakeups_unseen_latest_ns: 0,
            breaches_lost: 0,
            threads,
        }
    }

    fn thread(tid: i32, lat: &[u64], tail: &[(&str, &[u64])]) -> ThreadOverview {
        let mut h = Histogram::default();
        for ns in lat {
            h.add(*ns);
        }
        let tail: Vec<(String, Histogram)> = tail
            .iter()
            .map(|(c, v)| {
                let mut t = Histogram::default();
                for ns in *v {
                    t.add(*ns);
                }
                (c.to_string(), t)
            })
            .collect();
        ThreadOverview::new(tid, format!("t{tid}"), &[(0, h)], &tail)
    }

    #[test]
    fn a_bar_holds_the_captures_whose_breach_the_detector_measured_there() {
        let o = overview(
            100_000,
            vec![thread(
                7,
                &[5_000, 5_000, 130_000, 131_000, 900_000],
                &[("irq", &[130_000, 131_000]), ("not_captured", &[900_000])],
            )],
        );
        // Capture 3's own diagnosis says 131.5 us, the next bucket; its breach record
        // 131.0 us, the bucket the tail counted it in. Capture 2 is another thread's and
        // has no breach record.
        let doc = json!({
            "spikes": [
                {"capture": 1, "file": "spike-001.dat", "tid": 7, "latency_ns": 128_900, "cause": "irq"},
                {"capture": 2, "file": "spike-002.dat", "tid": 8, "latency_ns": 130_000, "cause": "irq"},
                {"capture": 3, "file": "spike-003.dat", "tid": 7, "latency_ns": 131_500, "cause": "irq"},
            ],
            "session": {"captures": [
                {"index": 1, "trigger": {"record": {"latency": 130_000}}},
                {"index": 3, "trigger": {"record": {"latency": 131_000}}},
            ]},
        });
        let s = Session::new(o, &doc);
        assert_eq!(s.captures[0].detected_ns, 130_000);
        assert_eq!(s.captures[0].number, 1);
        // Without a breach record, the capture's own latency.
        assert_eq!(s.captures[1].detected_ns, 130_000);
        let l = HistLayout::new(&s, 80);
        assert_eq!(l.per_col, 1);
        let col = l.column_of(bucket_of(130_000));
        let (from, to) = l.range_ns(col);
        assert!(from <= 130_000 && 131_000 < to, "[{from}, {to})");
        // Worst first.
        assert_eq!(s.captures_in(7, from, to), [2, 0]);
        assert_eq!(s.captures_in(8, from, to), [1]);
        assert_eq!(s.captures_in(7, 0, from), Vec::<usize>::new());
        let bar = Bar::of(&s.overview.threads[0], l.buckets_of(col));
        assert_eq!((bar.count, bar.breaches(), bar.under()), (2, 2, 0));
        assert_eq!(bar.causes, [("irq".to_string(), 2)]);
    }

    #[test]
    fn the_range_covers_every_thread_and_the_threshold() {
        let o = overview(
            100_000,
            vec![thread(1, &[2_000], &[]), thread(2, &[5_000_000], &[])],
        );
        let (lo, hi) = bucket_range(&o);
        assert!(lo < bucket_of(2_000) && bucket_of(5_000_000) < hi);
        assert!((lo..hi).contains(&bucket_of(100_000)));
        // Nothing measured: the threshold and some room.
        let (lo, hi) = bucket_range(&overview(100_000, vec![]));
        assert!((lo..hi).contains(&bucket_of(100_000)) && hi - lo >= 8);
    }

    #[test]
    fn columns_merge_buckets_only_when_they_do_not_fit() {
        let l = HistLayout::of_range(10, 70, 120);
        assert_eq!((l.per_col, l.col_w, l.columns()), (1, 2, 60));
        let l = HistLayout::of_range(10, 70, 200);
        assert_eq!((l.per_col, l.col_w), (1, 3));
        let l = HistLayout::of_range(10, 70, 25);
        assert_eq!((l.per_col, l.col_w, l.columns()), (3, 1, 20));
        assert_eq!(l.buckets_of(0), 10..13);
        assert_eq!(l.buckets_of(19), 67..70);
        assert_eq!(l.column_of(12), 0);
        assert_eq!(l.column_of(0), 0);
        assert_eq!(l.column_of(500), 19);
        assert_eq!(l.range_ns(0), (bucket_lower(10), bucket_lower(13)));
        // The last bucket is open-ended.
        let l = HistLayout::of_range(190, HIST_BUCKETS, 40);
        assert_eq!(l.range_ns(l.columns() - 1).1, u64::MAX);
    }

    #[test]
    fn bars_stand_on_a_log_count_scale() {
        assert_eq!(decades(0), 1);
        assert_eq!(decades(10), 1);
        assert_eq!(decades(11), 2);
        assert_eq!(decades(3271), 4);
        // 10 rows topped by 10^4: one wake-up is a step of two rows, each decade two more.
        assert_eq!(bar_rows(0, 4, 10), 0);
        assert_eq!(bar_rows(1, 4, 10), 2);
        assert_eq!(bar_rows(10, 4, 10), 4);
        assert_eq!(bar_rows(10_000, 4, 10), 10);
        assert_eq!(bar_rows(1, 19, 3), 1);
    }

    #[test]
    fn a_stack_keeps_every_cause_visible() {
        assert_eq!(stack(&[6, 2, 2], 5), [3, 1, 1]);
        assert_eq!(stack(&[1000, 1], 4), [3, 1]);
        assert_eq!(stack(&[0, 3], 4), [0, 4]);
        assert_eq!(stack(&[5, 1, 1], 1), [1, 0, 0]);
        assert_eq!(stack(&[], 3), Vec::<u16>::new());
        for (parts, rows) in [(&[7u64, 3, 9, 1][..], 6u16), (&[1, 1, 1], 2)] {
            assert_eq!(stack(parts, rows).iter().sum::<u16>(), rows);
        }
    }
}
