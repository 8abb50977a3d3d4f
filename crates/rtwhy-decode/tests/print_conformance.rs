//! Differential test of the printer against `trace-cmd report` and `trace-cmd report -R`
//! (trace-cmd 3.1.6, libtraceevent 1.7) on the wild corpus in `shared/corpus/wild` beside
//! the checkout (`RTWHY_WILD_CORPUS` names another place).
//!
//! Set `RTWHY_PRINT_DIFFS=N` to see the first N differing lines per file and mode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rtwhy_decode::print::Printer;
use rtwhy_decode::tracedat::TraceFile;

/// The wild corpus, in `shared/` beside the checkout (`RTWHY_WILD_CORPUS` names another).
fn corpus() -> PathBuf {
    std::env::var_os("RTWHY_WILD_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/wild"),
        PathBuf::from,
    )
}

/// Events whose report lines must match exactly.
const CORE: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_pi_setprio",
    "irq_handler_entry",
    "irq_handler_exit",
    "softirq_entry",
    "softirq_exit",
    "softirq_raise",
    "hrtimer_start",
    "hrtimer_cancel",
    "hrtimer_expire_entry",
    "hrtimer_expire_exit",
    "hrtimer_init",
    "cpu_idle",
    "cpu_frequency",
    "print",
    "bprint",
    "bputs",
];

#[derive(Default)]
struct Tally {
    same: usize,
    differ: usize,
    /// Raw lines where libtraceevent printed an array field past the end of the record
    /// (bytes of the next event in the page); ours stops at the record's end. See
    /// docs/DECODING.md, "Differences from trace-cmd report".
    past_end: usize,
}

/// Whether `ours` is `oracle` with an `ARRAY[...]` cut at the record's end.
fn array_cut_at_record_end(ours: &str, oracle: &str) -> bool {
    let Some(head) = ours.strip_suffix(']') else {
        return false;
    };
    oracle.len() > ours.len() && oracle.starts_with(head) && oracle[head.len()..].starts_with(", ")
}

/// Whether an oracle line starts a record (`comm-pid [cpu]`), not a continuation line.
fn starts_record(line: &str) -> bool {
    let Some(open) = line.find(" [") else {
        return false;
    };
    let after = &line[open + 2..];
    if after.len() < 4
        || !after.as_bytes()[..3].iter().all(u8::is_ascii_digit)
        || after.as_bytes()[3] != b']'
    {
        return false;
    }
    let before = line[..open].trim_end();
    match before.rfind('-') {
        Some(dash) => {
            !before[dash + 1..].is_empty() && before[dash + 1..].bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

fn oracle(path: &Path) -> Option<Vec<Vec<String>>> {
    let out = std::process::Command::new("zstd")
        .arg("-dc")
        .arg(path)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut dropped = false;
    for (i, line) in text.lines().enumerate() {
        if i == 0 && line.starts_with("cpus=") {
            continue;
        }
        if line.ends_with("EVENTS DROPPED]") {
            // Belongs to the record that follows.
            groups.push(vec![line.to_string()]);
            dropped = true;
            continue;
        }
        if dropped {
            dropped = false;
            if let Some(g) = groups.last_mut() {
                g.push(line.to_string());
            }
            continue;
        }
        if starts_record(line) || groups.is_empty() {
            groups.push(vec![line.to_string()]);
        } else if let Some(g) = groups.last_mut() {
            g.push(line.to_string());
        }
    }
    Some(groups)
}

struct FileResult {
    name: String,
    per_event: [BTreeMap<String, Tally>; 2],
    records: usize,
    oracle_records: [usize; 2],
}

fn run_file(dat: &Path, show: usize) -> Option<FileResult> {
    let name = dat.file_stem()?.to_string_lossy().into_owned();
    let raw_oracle = oracle(&dat.with_file_name(format!("{name}.raw.txt.zst")))?;
    let report_oracle = oracle(&dat.with_file_name(format!("{name}.report.txt.zst")))?;
    let mut result = FileResult {
        name: name.clone(),
        per_event: [BTreeMap::new(), BTreeMap::new()],
        records: 0,
        oracle_records: [raw_oracle.len(), report_oracle.len()],
    };
    let Ok(file) = TraceFile::open(dat) else {
        return Some(result);
    };
    let mut printers = [Printer::new(file.meta_arc()), Printer::new(file.meta_arc())];
    let oracles = [raw_oracle, report_oracle];
    let mut shown = [0usize; 2];
    let Ok(mut stream) = file.records() else {
        return Some(result);
    };
    let mut line = String::new();
    let mut buffer = None;
    while let Ok(true) = stream.advance() {
        let Some(rec) = stream.current() else { break };
        // Records of a named instance start with its name, as in trace-cmd.
        let name = stream.buffer_name();
        if buffer != Some(name) {
            for p in &mut printers {
                p.set_instance(name);
            }
            buffer = Some(name);
        }
        let event = rec
            .format
            .map(|f| f.name.clone())
            .unwrap_or_else(|| "?".into());
        for mode in 0..2 {
            line.clear();
            if mode == 0 {
                printers[0].write_raw(&rec, &mut line);
            } else {
                printers[1].write_report(&rec, &mut line);
            }
            let expect = oracles[mode].get(result.records);
            let tally = result.per_event[mode].entry(event.clone()).or_default();
            let ours: Vec<&str> = line.split('\n').collect();
            match expect {
                Some(exp) => {
                    for i in 0..ours.len().max(exp.len()) {
                        let (a, b) = (ours.get(i).copied(), exp.get(i).map(String::as_str));
                        if a == b {
                            tally.same += 1;
                        } else if mode == 0
                            && a.zip(b).is_some_and(|(a, b)| array_cut_at_record_end(a, b))
                        {
                            tally.past_end += 1;
                        } else {
                            tally.differ += 1;
                            if shown[mode] < show {
                                shown[mode] += 1;
                                eprintln!(
                                    "[{name} {}] record {}\n  ours:   {:?}\n  oracle: {:?}",
                                    if mode == 0 { "raw" } else { "report" },
                                    result.records,
                                    a.unwrap_or("<none>"),
                                    b.unwrap_or("<none>")
                                );
                            }
                        }
                    }
                }
                None => tally.differ += ours.len(),
            }
        }
        result.records += 1;
    }
    Some(result)
}

#[test]
fn printer_matches_trace_cmd_on_wild_and_recorded_traces() {
    let corpus = corpus();
    let dir = corpus.as_path();
    assert!(
        dir.is_dir(),
        "the wild corpus is expected at {}",
        dir.display()
    );
    let show = std::env::var("RTWHY_PRINT_DIFFS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let only = std::env::var("RTWHY_PRINT_ONLY").ok();
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/recorded");
    let mut files: Vec<PathBuf> = [dir, recorded.as_path()]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .collect::<Vec<_>>()
        })
        .collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "dat"));
    files.retain(|p| {
        only.as_ref()
            .is_none_or(|o| p.to_string_lossy().contains(o.as_str()))
    });
    files.sort();
    let mut raw_bad = Vec::new();
    let mut core_bad = Vec::new();
    let mut totals = [Tally::default(), Tally::default()];
    println!(
        "{:<40} {:>8} {:>8} {:>18} {:>18}",
        "file", "records", "oracle", "raw same/differ", "report same/differ"
    );
    for dat in &files {
        // Every file is held to the standard: raw lines all identical, report lines of the
        // core events identical (other events are counted and printed).
        let asserted = true;
        let Some(r) = run_file(dat, show) else {
            continue;
        };
        let sum = |m: usize| {
            r.per_event[m]
                .values()
                .fold((0, 0), |(s, d), t| (s + t.same, d + t.differ))
        };
        let (rs, rd) = sum(0);
        let (ps, pd) = sum(1);
        totals[0].same += rs;
        totals[0].differ += rd;
        totals[1].same += ps;
        totals[1].differ += pd;
        println!(
            "{:<40} {:>8} {:>8} {:>9}/{:<8} {:>9}/{:<8}",
            r.name, r.records, r.oracle_records[1], rs, rd, ps, pd
        );
        for (event, t) in &r.per_event[1] {
            if t.differ > 0 {
                println!("    report {event}: {} same, {} differ", t.same, t.differ);
                if asserted && CORE.contains(&event.as_str()) {
                    core_bad.push(format!("{} {event}", r.name));
                }
            }
        }
        for (event, t) in &r.per_event[0] {
            if t.past_end > 0 {
                println!(
                    "    raw    {event}: {} lines with an array cut at the record end",
                    t.past_end
                );
            }
            if t.differ > 0 {
                println!("    raw    {event}: {} same, {} differ", t.same, t.differ);
                if asserted {
                    raw_bad.push(format!("{} {event}", r.name));
                }
            }
        }
        if r.records != r.oracle_records[1] {
            println!(
                "    record count {} vs oracle {}",
                r.records, r.oracle_records[1]
            );
        }
    }
    println!(
        "total: raw {} same / {} differ; report {} same / {} differ",
        totals[0].same, totals[0].differ, totals[1].same, totals[1].differ
    );
    assert!(raw_bad.is_empty(), "raw lines differ: {raw_bad:?}");
    assert!(
        core_bad.is_empty(),
        "core report lines differ: {core_bad:?}"
    );
}
