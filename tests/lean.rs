//! `rtwhy record --other-cpus lean` (the default) keeps, on the CPUs no measured thread
//! may run on, only what the analysis uses from them. Here the same rule
//! (`rtwhy_record::lean::keeps`, the kernel filters' decision) is applied to every fixture
//! recorded in full: for each CPU that has spikes, that CPU alone is kept full, the other
//! CPUs are thinned as the recorder would have recorded them, and the spikes of that CPU
//! must keep their causes and latencies. Prints how many events the rule drops.

use std::collections::BTreeSet;
use std::path::Path;

use rtwhy_analyze::{Analysis, Analyzer, Config};
use rtwhy_decode::input::{self, Header, Item, Sink};
use rtwhy_model::{CpuList, Event, EventKind, SystemFacts};
use rtwhy_tests::{dat_files, workspace};

#[derive(Default)]
struct Collect {
    facts: SystemFacts,
    events: Vec<Event>,
}

impl Sink for Collect {
    type Error = rtwhy_decode::Error;

    fn begin(&mut self, header: &Header<'_>) -> Result<bool, rtwhy_decode::Error> {
        self.facts = header.facts.clone();
        Ok(true)
    }

    fn event(&mut self, item: Item<'_>) -> Result<bool, rtwhy_decode::Error> {
        self.events.push(item.into_event());
        Ok(true)
    }
}

/// The fields the lean rule reads, of the scheduler events it filters.
fn field(kind: &EventKind, name: &str) -> Option<i64> {
    let v = match (kind, name) {
        (EventKind::SchedSwitch { prev_prio, .. }, "prev_prio") => *prev_prio,
        (EventKind::SchedSwitch { next_prio, .. }, "next_prio") => *next_prio,
        (EventKind::SchedSwitch { prev_pid, .. }, "prev_pid") => *prev_pid,
        (EventKind::SchedSwitch { next_pid, .. }, "next_pid") => *next_pid,
        (
            EventKind::SchedWaking { prio, .. }
            | EventKind::SchedWakeup { prio, .. }
            | EventKind::SchedWakeupNew { prio, .. }
            | EventKind::SchedMigrateTask { prio, .. },
            "prio",
        ) => *prio,
        (
            EventKind::SchedWaking { target_cpu, .. }
            | EventKind::SchedWakeup { target_cpu, .. }
            | EventKind::SchedWakeupNew { target_cpu, .. },
            "target_cpu",
        ) => *target_cpu,
        (EventKind::SchedMigrateTask { orig_cpu, .. }, "orig_cpu") => *orig_cpu,
        (EventKind::SchedMigrateTask { dest_cpu, .. }, "dest_cpu") => *dest_cpu,
        _ => return None,
    };
    Some(i64::from(v))
}

fn analyze(events: &[Event], facts: &SystemFacts) -> Analysis {
    let mut a = Analyzer::new(Config::default(), facts.clone());
    for e in events {
        a.push(e.clone());
    }
    a.finish()
}

/// `(victim, end, cause, latency)` of the spikes on `cpu`.
fn verdicts(a: &Analysis, cpu: u32) -> Vec<(i32, u64, String, u64)> {
    a.spikes
        .iter()
        .filter(|s| s.cpu == cpu)
        .map(|s| {
            (
                s.victim.tid,
                s.end.0,
                s.primary.cause.as_str().to_string(),
                s.latency_ns,
            )
        })
        .collect()
}

fn check(path: &Path) -> (usize, usize, Vec<String>) {
    let mut c = Collect::default();
    if input::read(path, &mut c).is_err() || c.events.is_empty() {
        return (0, 0, Vec::new());
    }
    let full = analyze(&c.events, &c.facts);
    let cpus: BTreeSet<u32> = full.spikes.iter().map(|s| s.cpu).collect();
    let mut kept_total = 0;
    let mut failures = Vec::new();
    for &cpu in &cpus {
        let lean: Vec<Event> = c
            .events
            .iter()
            .filter(|e| {
                let name = e.kind.name();
                rtwhy_record::lean::keeps(name, e.cpu, &[cpu], &|f| field(&e.kind, f))
            })
            .cloned()
            .collect();
        kept_total += lean.len();
        let mut facts = c.facts.clone();
        facts.full_cpus = Some(CpuList(vec![cpu]));
        let thin = analyze(&lean, &facts);
        let (before, after) = (verdicts(&full, cpu), verdicts(&thin, cpu));
        if before != after {
            failures.push(format!(
                "{}: CPU {cpu} full, the others lean ({} of {} events kept): spikes {:?}\n  recorded in full: {:?}",
                path.display(),
                lean.len(),
                c.events.len(),
                after,
                before
            ));
        }
    }
    (c.events.len() * cpus.len(), kept_total, failures)
}

#[test]
fn the_lean_rule_keeps_every_fixture_spike_of_the_full_cpu() {
    let mut files = Vec::new();
    let root = workspace().join("fixtures");
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                dirs.push(e.path());
            }
        }
        files.extend(dat_files(&d));
    }
    files.sort();
    assert!(files.len() >= 20, "fixtures not found: {}", files.len());
    let (mut all, mut kept, mut failures) = (0, 0, Vec::new());
    for f in &files {
        let (a, k, fail) = check(f);
        all += a;
        kept += k;
        failures.extend(fail);
    }
    println!(
        "lean rule over {} fixtures: {kept} of {all} events kept ({:.1}%)",
        files.len(),
        100.0 * kept as f64 / all.max(1) as f64
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
