//! The document `rtwhy selftest` prints: the bench it ran on, then one row per scenario
//! with its verdict, then the count.
//!
//! ```text
//! platform
//!   kernel         6.12.0-rt, preempt=rt
//!   ...
//! scenario               spikes      worst  diagnosis                          expected                share  verdict
//! rt_throttling               3   1.200 ms  rt_throttling x3                   rt_throttling            100%  pass
//!
//! 1 of 1 scenarios that can be induced here were diagnosed as expected; 0 not inducible here.
//! ```
//!
//! ```
//! use rtwhy_model::selftest::{ScenarioResult, Verdict};
//! use rtwhy_model::Cause;
//!
//! let row = ScenarioResult {
//!     scenario: "rt_throttling",
//!     expected: Cause::RtThrottling,
//!     spikes: 3,
//!     diagnosis: rtwhy_report::selftest::cause_counts(&[Cause::RtThrottling; 3]),
//!     verdict: Verdict::Pass,
//!     attempts: 1,
//!     shown: 1,
//!     worst_ns: 1_200_000,
//!     share: Some(1.0),
//! };
//! let table = rtwhy_report::selftest::table(&[row]);
//! assert!(table.lines().nth(1).unwrap().ends_with("100%  pass"), "{table}");
//! ```

use std::collections::BTreeMap;
use std::fmt::Write;

use rtwhy_model::selftest::{ScenarioResult, Verdict};
use rtwhy_model::{human_duration, Cause, SystemFacts};

/// What the selftest found out about the machine before the scenarios.
#[derive(Debug, Clone)]
pub struct Bench<'a> {
    /// The machine's facts.
    pub facts: &'a SystemFacts,
    /// tracefs: its root, the events rtwhy records that exist there and how many it
    /// records; or why it cannot be used.
    pub tracefs: Result<(String, usize, usize), String>,
    /// Each BPF attach mode and whether the detector starts with it.
    pub bpf: Vec<(&'static str, bool)>,
    /// The victim's CPU.
    pub cpu: u32,
    /// The CPU for rtwhy and the loads' helpers.
    pub housekeeping: u32,
    /// The victim CPU's noise: 99th percentile and worst wake-up latency (ns), the
    /// wake-ups measured, for how many seconds.
    pub noise: (u64, u64, usize, u64),
    /// Whether the victim's CPU has cpufreq.
    pub cpufreq: bool,
    /// The victim program of the timer scenarios ("cyclictest", "rtwhy's probe").
    pub victim: &'a str,
}

/// The bench as the selftest prints it first.
pub fn platform(b: &Bench<'_>) -> String {
    let f = b.facts;
    let mut out = String::new();
    let _ = writeln!(out, "platform");
    let _ = writeln!(
        out,
        "  kernel         {}, preempt={}",
        f.kernel_release.as_deref().unwrap_or("?"),
        f.preempt_model().unwrap_or("unknown")
    );
    let tracefs = match &b.tracefs {
        Ok((root, have, of)) => {
            format!("{root} ({have} of the {of} events rtwhy records exist)")
        }
        Err(e) => format!("unusable: {e}"),
    };
    let _ = writeln!(out, "  tracefs        {tracefs}");
    let modes: Vec<String> = b
        .bpf
        .iter()
        .map(|(m, ok)| format!("{m} {}", if *ok { "ok" } else { "no" }))
        .collect();
    let _ = writeln!(out, "  BPF attach     {}", modes.join(", "));
    let (p99, max, wakeups, secs) = b.noise;
    let _ = writeln!(
        out,
        "  noise          CPU {}: p99 {}, max {} over {} wake-ups (SCHED_FIFO 80 timer every 1 ms for {} s, nothing loaded); sized loads go above it",
        b.cpu,
        human_duration(p99),
        human_duration(max),
        wakeups,
        secs
    );
    let _ = writeln!(
        out,
        "  isolation      {}",
        if f.isolated.is_empty() {
            "no CPU isolated".to_string()
        } else {
            format!("CPUs {} isolated", f.isolated)
        }
    );
    let _ = writeln!(
        out,
        "  RT throttling  {}",
        match (f.rt_runtime_us, f.rt_period_us) {
            (Some(r), _) if r < 0 => "off (sched_rt_runtime_us=-1)".to_string(),
            (Some(r), Some(p)) => format!("{r} us of every {p} us"),
            _ => "unknown".to_string(),
        }
    );
    let _ = writeln!(
        out,
        "  cpufreq        {}",
        if b.cpufreq {
            f.governors
                .get(&b.cpu)
                .map_or("present".to_string(), |g| format!("governor {g}"))
        } else {
            format!("none on CPU {}", b.cpu)
        }
    );
    let _ = writeln!(
        out,
        "  victim         {} (SCHED_FIFO 80; ten below an IRQ thread a scenario drives) on CPU {}; rtwhy and load helpers on CPU {}\n",
        b.victim, b.cpu, b.housekeeping
    );
    out
}

/// "rt_throttling x2, hwlat x1": the causes seen, most frequent first; "-" for none.
pub fn cause_counts(causes: &[Cause]) -> String {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for c in causes {
        *n.entry(c.as_str()).or_default() += 1;
    }
    let mut v: Vec<(&str, usize)> = n.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = v.iter().map(|(c, k)| format!("{c} x{k}")).collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// A verdict as the table shows it.
pub fn label(v: &Verdict) -> String {
    match v {
        Verdict::Pass => "pass".into(),
        Verdict::Fail => "FAIL: diagnosed otherwise".into(),
        Verdict::NoSpike => "FAIL: no spike of the victim captured".into(),
        Verdict::NotInducible(why) => format!("not inducible here: {why}"),
        Verdict::Error(why) => format!("FAIL: {why}"),
        Verdict::Interrupted => "interrupted".into(),
    }
}

/// The table of verdicts, one row per scenario under a header.
pub fn table(rows: &[ScenarioResult]) -> String {
    let mut out = String::new();
    let wide = rows
        .iter()
        .map(|r| r.diagnosis.chars().count())
        .max()
        .unwrap_or(0)
        .max(34);
    // Scenario names run to 34 characters (priority_inversion_preempted_first).
    let name = rows
        .iter()
        .map(|r| r.scenario.len())
        .max()
        .unwrap_or(0)
        .max(22);
    let _ = writeln!(
        out,
        "{:<name$} {:>6} {:>10}  {:<wide$} {:<22} {:>6}  verdict",
        "scenario", "spikes", "worst", "diagnosis", "expected", "share"
    );
    for r in rows {
        // A scenario found not inducible after an attempt shows what that attempt saw.
        let spikes = match r.verdict {
            Verdict::NotInducible(_) if r.attempts == 0 => "-".to_string(),
            _ => r.spikes.to_string(),
        };
        let worst = if r.worst_ns > 0 {
            human_duration(r.worst_ns)
        } else {
            "-".into()
        };
        let share = r
            .share
            .map(|x| format!("{:.0}%", x * 100.0))
            .unwrap_or_else(|| "-".into());
        let tries = if r.shown < r.attempts {
            format!(" (best: attempt {} of {})", r.shown, r.attempts)
        } else if r.attempts > 1 {
            format!(" (attempt {})", r.attempts)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{:<name$} {:>6} {:>10}  {:<wide$} {:<22} {:>6}  {}{tries}",
            r.scenario,
            spikes,
            worst,
            r.diagnosis,
            r.expected.as_str(),
            share,
            label(&r.verdict)
        );
    }
    out
}

/// The line under the table: how many of the scenarios that could be induced passed.
pub fn summary(rows: &[ScenarioResult]) -> String {
    let inducible = rows
        .iter()
        .filter(|r| !matches!(r.verdict, Verdict::NotInducible(_)))
        .count();
    let passed = rows.iter().filter(|r| r.verdict == Verdict::Pass).count();
    let not_here = rows.len() - inducible;
    format!(
        "\n{passed} of {inducible} scenarios that can be induced here were diagnosed as expected; {not_here} not inducible here.\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_most_frequent_first() {
        let c = [Cause::Hwlat, Cause::Softirq, Cause::Softirq, Cause::Unknown];
        assert_eq!(cause_counts(&c), "softirq x2, hwlat x1, unknown x1");
        assert_eq!(cause_counts(&[]), "-");
    }

    #[test]
    fn a_scenario_refused_before_it_ran_shows_no_spikes() {
        let row = ScenarioResult {
            scenario: "softirq",
            expected: Cause::Softirq,
            spikes: 0,
            diagnosis: "-".into(),
            verdict: Verdict::NotInducible("no RPS".into()),
            attempts: 0,
            shown: 0,
            worst_ns: 0,
            share: None,
        };
        let t = table(std::slice::from_ref(&row));
        let line = t.lines().nth(1).unwrap();
        assert!(
            line.starts_with("softirq                     -          -  -"),
            "{t}"
        );
        assert!(line.ends_with("not inducible here: no RPS"), "{t}");
        assert!(summary(&[row]).contains("0 of 0 scenarios"));
    }
}
