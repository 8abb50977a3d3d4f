//! A session's overview as text (`rtwhy summary DIR`): per watched thread its wake-up
//! count, percentiles and worst, and the breaches' tail by cause. The JSON form is the
//! [`Overview`] itself (docs/analysis-json.md, "Session overview").
//!
//! ```
//! use rtwhy_model::{Histogram, Overview, ThreadOverview, OVERVIEW_SCHEMA};
//!
//! let mut h = Histogram::default();
//! h.add(6_000);
//! h.add(250_000);
//! let mut tail = Histogram::default();
//! tail.add(250_000);
//! let o = Overview {
//!     schema: OVERVIEW_SCHEMA.into(),
//!     detector: "bpf".into(),
//!     threshold_ns: 100_000,
//!     from_ns: 0,
//!     to_ns: 2_000_000_000,
//!     from_unix_ns: None,
//!     sessions: Vec::new(),
//!     wakeups_lost: 0,
//!     wakeups_unseen: 0,
//!     wakeups_unseen_latest_ns: 0,
//!     breaches_lost: 0,
//!     threads: vec![ThreadOverview::new(7, "app".into(), &[(1, h)], &[("irq".into(), tail)])],
//! };
//! let mut out = Vec::new();
//! rtwhy_report::overview::render_text(&mut out, &o).unwrap();
//! let text = String::from_utf8(out).unwrap();
//! assert!(text.contains("tail: 1 irq (worst 250.0 us)"), "{text}");
//! ```

use std::io::{self, Write};

use rtwhy_model::{human_duration, Histogram, Overview, SparseHistogram, ThreadOverview};

/// "wake-up latency over 60.0 s (measured by bpf, threshold 100.0 us)": what the
/// overview covers, for the text and the picture.
pub fn headline(o: &Overview) -> String {
    let sessions = match o.sessions.len() {
        0 | 1 => String::new(),
        n => format!(" in {n} sessions"),
    };
    format!(
        "wake-up latency over {}{sessions} (measured by {}, threshold {})",
        human_duration(o.to_ns.saturating_sub(o.from_ns)),
        if o.detector.is_empty() {
            "?"
        } else {
            &o.detector
        },
        human_duration(o.threshold_ns)
    )
}

/// What to say of the wake-ups the detector found at their thread's switch-out, if any:
/// how many, that their latency is an estimate, and the bound on them.
fn unseen_note(o: &Overview) -> Option<String> {
    if o.wakeups_unseen == 0 {
        return None;
    }
    // The bound is absent in overviews written before it was kept.
    let bound = match o.wakeups_unseen_latest_ns {
        0 => String::new(),
        ns => format!(", none later than {}", human_duration(ns)),
    };
    Some(format!(
        "found at the thread's switch-out: {} wake-ups (no program ran at their wake-up or switch-in; their switch-in is estimated from the CPU time the thread ran, and can be early: a clock read in the thread, as cyclictest's, may show them later{bound})",
        o.wakeups_unseen
    ))
}

/// Writes the overview as aligned text, one block per thread, most wake-ups first.
pub fn render_text(out: &mut dyn Write, o: &Overview) -> io::Result<()> {
    writeln!(out, "  {}:", headline(o))?;
    if o.threads.is_empty() {
        writeln!(out, "  no wake-up of a watched thread was measured")?;
    } else {
        writeln!(
            out,
            "  {:<8} {:<20} {:>10} {:>11} {:>11} {:>11}",
            "tid", "thread", "wakeups", "p50", "p99", "max"
        )?;
    }
    for t in &o.threads {
        writeln!(
            out,
            "  {:<8} {:<20} {:>10} {:>11} {:>11} {:>11}",
            t.tid,
            if t.comm.is_empty() { "?" } else { &t.comm },
            t.wakeups,
            human_duration(t.p50_ns),
            human_duration(t.p99_ns),
            human_duration(t.max_ns)
        )?;
        if !t.tail.is_empty() {
            let parts: Vec<String> = t
                .tail
                .iter()
                .map(|p| {
                    format!(
                        "{} {} (worst {})",
                        p.count,
                        p.cause,
                        human_duration(p.max_ns)
                    )
                })
                .collect();
            writeln!(out, "  {:<8} tail: {}", "", parts.join(", "))?;
        }
        let unreported = t.unreported_above(o.threshold_ns);
        if unreported > 0 {
            writeln!(
                out,
                "  {:<8} above the threshold, no breach reported: {unreported} (found at the thread's switch-out, or the report lost)",
                ""
            )?;
        }
    }
    if let Some(note) = unseen_note(o) {
        writeln!(out, "  {note}")?;
    }
    if o.wakeups_lost > 0 || o.breaches_lost > 0 {
        writeln!(
            out,
            "  not counted: {} wake-ups (the detector's table of threads was full), {} breaches in no tail (its ring buffer was full)",
            o.wakeups_lost, o.breaches_lost
        )?;
    }
    Ok(())
}

/// One capture of a session, as its `session.json` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// Its file, relative to the session directory.
    pub file: String,
    /// The verdict's cause key; `None` where the capture has no verdict.
    pub cause: Option<String>,
    /// The late thread.
    pub comm: String,
    /// Its thread id.
    pub tid: i32,
    /// How late, ns.
    pub latency_ns: u64,
    /// The verdict's sentence.
    pub summary: String,
    /// Who or what the verdict points at (`rtwhy_model::Finding::culprit`).
    pub culprit: Option<String>,
    /// When its latency ended, trace clock ns; 0 when not known.
    pub end_ns: u64,
}

/// The captures `session.json` lists (its `spikes`), as the report reads them.
pub fn captures_of(session: &serde_json::Value) -> Vec<Capture> {
    session["spikes"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|c| {
            Some(Capture {
                file: c["file"].as_str()?.to_string(),
                cause: c["cause"].as_str().map(str::to_string),
                comm: c["comm"].as_str().unwrap_or("?").to_string(),
                tid: c["tid"].as_i64().unwrap_or(0) as i32,
                latency_ns: c["latency_ns"].as_u64().unwrap_or(0),
                summary: c["summary"].as_str().unwrap_or("").to_string(),
                culprit: c["culprit"].as_str().map(str::to_string),
                end_ns: c["end_ns"].as_u64().unwrap_or(0),
            })
        })
        .collect()
}

/// One culprit of a session: the captures whose verdict points at it.
pub struct Contributor<'a> {
    /// Who or what ([`Capture::culprit`]).
    pub culprit: &'a str,
    /// Its captures, worst first.
    pub captures: Vec<&'a Capture>,
}

impl Contributor<'_> {
    /// Its causes, most captures first (one culprit may be named by two causes: an IRQ
    /// on an isolated CPU and the same IRQ elsewhere).
    pub fn causes(&self) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = Vec::new();
        for c in &self.captures {
            let key = c.cause.as_deref().unwrap_or("undiagnosed");
            match v.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += 1,
                None => v.push((key, 1)),
            }
        }
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }
}

/// The culprits of a session's captures, the one with the most captures first (of
/// equal counts, the worse first); captures without a culprit are left out.
pub fn contributors(captures: &[Capture]) -> Vec<Contributor<'_>> {
    let mut out: Vec<Contributor<'_>> = Vec::new();
    for c in captures {
        let Some(who) = c.culprit.as_deref() else {
            continue;
        };
        match out.iter_mut().find(|k| k.culprit == who) {
            Some(k) => k.captures.push(c),
            None => out.push(Contributor {
                culprit: who,
                captures: vec![c],
            }),
        }
    }
    for k in &mut out {
        k.captures
            .sort_by(|a, b| b.latency_ns.cmp(&a.latency_ns).then(a.file.cmp(&b.file)));
    }
    let worst = |k: &Contributor<'_>| k.captures.first().map_or(0, |c| c.latency_ns);
    out.sort_by(|a, b| {
        b.captures
            .len()
            .cmp(&a.captures.len())
            .then(worst(b).cmp(&worst(a)))
            .then(a.culprit.cmp(b.culprit))
    });
    out
}

/// A session's report in Markdown (`rtwhy report DIR`): the overview's headline, the
/// histograms' picture when one was written (`picture`, a path relative to the
/// Markdown), every thread's percentiles and tail by cause, and for each cause its
/// captures with a link to the worst (`link` turns a capture's file into the link
/// target).
pub fn render_markdown(
    out: &mut dyn Write,
    dir: &str,
    o: Option<&Overview>,
    captures: &[Capture],
    picture: Option<&str>,
    timeline: Option<&str>,
    link: &dyn Fn(&str) -> String,
) -> io::Result<()> {
    writeln!(
        out,
        "# rtwhy session report: `{dir}`
"
    )?;
    if let Some(o) = o.filter(|o| o.sessions.len() > 1) {
        writeln!(
            out,
            "The {} sessions of a recorder's state directory, {} to {}: their histograms added up (a thread by its name), their captures together.\n",
            o.sessions.len(),
            md_cell(&o.sessions[0]),
            md_cell(&o.sessions[o.sessions.len() - 1])
        )?;
    }
    match o {
        None => writeln!(
            out,
            "The session has no `overview.json` (recorded by an rtwhy without wake-up histograms): its captures only.\n"
        )?,
        Some(o) => {
            writeln!(out, "{}.\n", capitalised(&headline(o)))?;
            match picture {
                Some(p) => writeln!(out, "![wake-up latency histograms]({p})\n")?,
                None => writeln!(
                    out,
                    "Draw the histograms with `rtwhy summary {dir} --format svg > overview.svg` (or give `--out FILE.md`: the picture is written beside it).\n"
                )?,
            }
            writeln!(out, "| thread | wake-ups | p50 | p99 | max | breaches by cause |")?;
            writeln!(out, "|---|---:|---:|---:|---:|---|")?;
            for t in &o.threads {
                let tail: Vec<String> = t
                    .tail
                    .iter()
                    .map(|p| format!("{} {} (worst {})", p.count, p.cause, human_duration(p.max_ns)))
                    .collect();
                writeln!(
                    out,
                    "| {}:{} | {} | {} | {} | {} | {} |",
                    md_cell(if t.comm.is_empty() { "?" } else { &t.comm }),
                    t.tid,
                    t.wakeups,
                    human_duration(t.p50_ns),
                    human_duration(t.p99_ns),
                    human_duration(t.max_ns),
                    if tail.is_empty() { "none".to_string() } else { tail.join(", ") }
                )?;
            }
            writeln!(
                out,
                "\nPercentiles are the lower bounds of their histogram buckets (at most 12.5 % wide).\n"
            )?;
            if let Some(note) = unseen_note(o) {
                writeln!(out, "{}.\n", capitalised(&note))?;
            }
        }
    }
    if captures.is_empty() {
        writeln!(out, "No capture was kept.")?;
        return Ok(());
    }
    if let Some(t) = timeline {
        writeln!(out, "## Breaches over time\n")?;
        writeln!(out, "![captured breaches over time]({t})\n")?;
    }
    let culprits = contributors(captures);
    if !culprits.is_empty() {
        writeln!(out, "## Top contributors\n")?;
        writeln!(
            out,
            "| contributor | verdicts | captures | worst | worst capture |"
        )?;
        writeln!(out, "|---|---|---:|---:|---|")?;
        for k in culprits.iter().take(TOP_CONTRIBUTORS) {
            let Some(worst) = k.captures.first() else {
                continue;
            };
            let causes: Vec<String> = k
                .causes()
                .iter()
                .map(|(c, n)| format!("{c} x{n}"))
                .collect();
            writeln!(
                out,
                "| {} | {} | {} | {} | [{}]({}) |",
                md_cell(k.culprit),
                causes.join(", "),
                k.captures.len(),
                human_duration(worst.latency_ns),
                md_cell(&worst.file),
                link(&worst.file),
            )?;
        }
        if culprits.len() > TOP_CONTRIBUTORS {
            writeln!(
                out,
                "\n{} more contributors with fewer captures.",
                culprits.len() - TOP_CONTRIBUTORS
            )?;
        }
        writeln!(out)?;
    }
    // Each cause's captures, the cause with the most first; its worst one linked.
    let mut by_cause: Vec<(String, Vec<&Capture>)> = Vec::new();
    for c in captures {
        let key = c.cause.clone().unwrap_or_else(|| "undiagnosed".to_string());
        match by_cause.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => by_cause.push((key, vec![c])),
        }
    }
    by_cause.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    writeln!(out, "## Captures by cause\n")?;
    writeln!(
        out,
        "| cause | captures | worst | late thread | capture | verdict |"
    )?;
    writeln!(out, "|---|---:|---:|---|---|---|")?;
    for (cause, list) in &by_cause {
        let Some(worst) = list.iter().max_by_key(|c| c.latency_ns) else {
            continue;
        };
        writeln!(
            out,
            "| {} | {} | {} | {}:{} | [{}]({}) | {} |",
            cause,
            list.len(),
            human_duration(worst.latency_ns),
            md_cell(&worst.comm),
            worst.tid,
            md_cell(&worst.file),
            link(&worst.file),
            md_cell(&worst.summary)
        )?;
    }
    Ok(())
}

/// How many contributors a session's report lists.
pub const TOP_CONTRIBUTORS: usize = 10;

/// `s` with its first letter in capitals.
/// The capture behind a histogram bar's breaches of `cause` for thread `comm` whose
/// latency lies in `[lo, hi)`: the worst such capture; when none was kept in that
/// bucket (the capture's latency is the analysis', a bucket edge apart from the
/// detector's, or it was deleted), the kept capture of that cause closest to it.
pub fn capture_for_bar<'a>(
    captures: &'a [Capture],
    comm: &str,
    cause: &str,
    lo: u64,
    hi: u64,
) -> Option<&'a Capture> {
    let mine: Vec<&Capture> = captures
        .iter()
        .filter(|c| c.comm == comm && c.cause.as_deref().unwrap_or("undiagnosed") == cause)
        .collect();
    let inside = mine
        .iter()
        .filter(|c| (lo..hi).contains(&c.latency_ns))
        .max_by_key(|c| c.latency_ns);
    let distance = |c: &&&Capture| {
        let l = c.latency_ns.max(1) as f64;
        (l / lo.max(1) as f64)
            .ln()
            .abs()
            .min((l / hi.max(1) as f64).ln().abs())
    };
    inside
        .or_else(|| {
            mine.iter()
                .min_by(|a, b| distance(a).total_cmp(&distance(b)))
        })
        .copied()
}

/// A thread's 99.9th percentile, from its buckets (the lower bound of the bucket that
/// holds it, as every percentile of the overview).
fn p999(t: &ThreadOverview) -> u64 {
    Histogram::from_sparse(&SparseHistogram {
        wakeups: t.wakeups,
        max_ns: t.max_ns,
        sum_ns: t.sum_ns,
        buckets: t.buckets.clone(),
    })
    .quantile(0.999)
}

/// Breaches per million wake-ups: what compares sessions of different lengths.
fn per_million(breaches: u64, wakeups: u64) -> String {
    match wakeups {
        0 => "-".to_string(),
        w => format!("{:.1}", breaches as f64 * 1e6 / w as f64),
    }
}

/// The section comparing a recording with a baseline (`rtwhy report DIR --baseline
/// DIR2`, before and after a fix): per thread (matched by name), both distributions'
/// wake-ups, percentiles and worst, and each cause's breaches in both, counted and per
/// million wake-ups; `pictures` (baseline's, this one's) shown side by side.
pub fn render_baseline(
    out: &mut dyn Write,
    this: &Overview,
    baseline: &Overview,
    baseline_name: &str,
    pictures: Option<(&str, &str)>,
) -> io::Result<()> {
    writeln!(
        out,
        "## Against the baseline `{}`
",
        md_cell(baseline_name)
    )?;
    writeln!(
        out,
        "Baseline: {}. This: {}.\n",
        headline(baseline),
        headline(this)
    )?;
    if this.threshold_ns != baseline.threshold_ns {
        writeln!(
            out,
            "The thresholds differ ({} in the baseline, {} here): breaches are counted against each session's own.\n",
            human_duration(baseline.threshold_ns),
            human_duration(this.threshold_ns)
        )?;
    }
    if let Some((before, after)) = pictures {
        writeln!(out, "| baseline | this recording |")?;
        writeln!(out, "|---|---|")?;
        writeln!(
            out,
            "| ![baseline histograms]({before}) | ![histograms]({after}) |\n"
        )?;
    }
    writeln!(
        out,
        "| thread | | wake-ups | p50 | p99 | p99.9 | max | breaches | per million wake-ups |"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|")?;
    let row = |out: &mut dyn Write, name: &str, which: &str, t: Option<&ThreadOverview>| match t {
        Some(t) => {
            let breaches: u64 = t.tail.iter().map(|p| p.count).sum();
            writeln!(
                out,
                "| {name} | {which} | {} | {} | {} | {} | {} | {breaches} | {} |",
                t.wakeups,
                human_duration(t.p50_ns),
                human_duration(t.p99_ns),
                human_duration(p999(t)),
                human_duration(t.max_ns),
                per_million(breaches, t.wakeups)
            )
        }
        None => writeln!(out, "| {name} | {which} | not watched | | | | | | |"),
    };
    let pairs = this.matched(baseline);
    for (mine, theirs) in &pairs {
        let Some(any) = mine.or(*theirs) else {
            continue;
        };
        let name = md_cell(if any.comm.is_empty() { "?" } else { &any.comm });
        row(out, &name, "baseline", *theirs)?;
        row(out, &name, "this", *mine)?;
    }
    writeln!(out, "\n### Breaches by cause, baseline -> this\n")?;
    writeln!(
        out,
        "| thread | cause | baseline | this | per million wake-ups, baseline -> this |"
    )?;
    writeln!(out, "|---|---|---:|---:|---|")?;
    for (mine, theirs) in &pairs {
        let Some(any) = mine.or(*theirs) else {
            continue;
        };
        let mut causes: Vec<&str> = Vec::new();
        for t in [*theirs, *mine].into_iter().flatten() {
            for p in &t.tail {
                if !causes.contains(&p.cause.as_str()) {
                    causes.push(&p.cause);
                }
            }
        }
        let count = |t: Option<&ThreadOverview>, cause: &str| {
            t.and_then(|t| t.tail.iter().find(|p| p.cause == cause))
                .map_or(0, |p| p.count)
        };
        for cause in causes {
            let (b, a) = (count(*theirs, cause), count(*mine, cause));
            writeln!(
                out,
                "| {} | {cause} | {b} | {a} | {} -> {} |",
                md_cell(if any.comm.is_empty() { "?" } else { &any.comm }),
                per_million(b, theirs.map_or(0, |t| t.wakeups)),
                per_million(a, mine.map_or(0, |t| t.wakeups))
            )?;
        }
    }
    writeln!(out)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `s` fit for a Markdown table cell: no line breaks, `|` escaped.
fn md_cell(s: &str) -> String {
    s.replace(['\n', '\r'], " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Histogram, ThreadOverview, OVERVIEW_SCHEMA};

    fn overview(threads: Vec<ThreadOverview>) -> Overview {
        Overview {
            schema: OVERVIEW_SCHEMA.into(),
            detector: "tracefs".into(),
            threshold_ns: 50_000,
            from_ns: 1_000,
            to_ns: 3_000_001_000,
            from_unix_ns: None,
            sessions: Vec::new(),
            wakeups_lost: 0,
            wakeups_unseen: 0,
            wakeups_unseen_latest_ns: 0,
            breaches_lost: 2,
            threads,
        }
    }

    #[test]
    fn empty_session_says_so() {
        let mut out = Vec::new();
        render_text(&mut out, &overview(Vec::new())).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("over 3.000 s"), "{text}");
        assert!(text.contains("no wake-up of a watched thread"), "{text}");
        assert!(text.contains("2 breaches in no tail"), "{text}");
        assert!(!text.contains("switch-out"), "{text}");
    }

    #[test]
    fn wakeups_found_at_the_switch_out_are_counted_and_explained() {
        let mut o = overview(Vec::new());
        o.wakeups_unseen = 17;
        let text = |o: &Overview| {
            let mut out = Vec::new();
            render_text(&mut out, o).unwrap();
            String::from_utf8(out).unwrap()
        };
        let old = text(&o);
        let line = old.lines().find(|l| l.contains("switch-out")).unwrap();
        assert!(line.contains(": 17 wake-ups"), "{line}");
        assert!(line.contains("estimated"), "{line}");
        assert!(!line.contains("none later"), "{line}");
        o.wakeups_unseen_latest_ns = 1_190_000;
        let new = text(&o);
        let line = new.lines().find(|l| l.contains("switch-out")).unwrap();
        assert!(line.contains("none later than 1.190 ms"), "{line}");
        // The session report says the same under its table.
        let mut md = Vec::new();
        render_markdown(&mut md, "rec", Some(&o), &[], None, None, &|f| {
            f.to_string()
        })
        .unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("Found at the thread's switch-out: 17 wake-ups") && md.contains("1.190 ms"),
            "{md}"
        );
    }

    #[test]
    fn percentiles_are_the_threads() {
        let mut h = Histogram::default();
        for _ in 0..200 {
            h.add(20_000);
        }
        h.add(70_000);
        let t = ThreadOverview::new(42, "loop".into(), &[(0, h.clone())], &[]);
        let mut out = Vec::new();
        render_text(&mut out, &overview(vec![t])).unwrap();
        let text = String::from_utf8(out).unwrap();
        let row = text.lines().find(|l| l.contains("loop")).unwrap();
        assert!(row.contains(" 201 "), "{row}");
        assert!(row.contains(&human_duration(h.quantile(0.5))), "{row}");
        assert!(row.ends_with(&human_duration(70_000)), "{row}");
        assert!(!text.contains("tail:"), "{text}");
        // Its 70 us wake-up is above the threshold and in no tail.
        assert!(
            text.contains("above the threshold, no breach reported: 1 "),
            "{text}"
        );
    }
}
