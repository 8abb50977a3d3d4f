//! Every evidence line of every fixture's analysis equals the line `trace-cmd report`
//! prints for that event: the oracle is trace-cmd's real output on the same file (stored
//! beside the wild and recorded traces, else `trace-cmd report` run now).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rtwhy_model::report_time;
use rtwhy_tests::{oracle, require, rtwhy, wild_corpus, workspace};

/// Every `.dat` under `dir`, at any depth, sorted.
fn dats_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "dat") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// trace-cmd's lines by (CPU, timestamp as printed, event name).
fn index(report: &str) -> HashMap<(u32, String, String), Vec<String>> {
    let mut m: HashMap<_, Vec<String>> = HashMap::new();
    for line in report.lines() {
        let Some(open) = line.find(" [") else {
            continue;
        };
        let rest = &line[open + 2..];
        let Some(close) = rest.find("] ") else {
            continue;
        };
        let Ok(cpu) = rest[..close].trim().parse::<u32>() else {
            continue;
        };
        let after = &rest[close + 2..];
        let Some(colon) = after.find(": ") else {
            continue;
        };
        let ts = after[..colon]
            .split_whitespace()
            .last()
            .unwrap_or("")
            .to_string();
        let ev = &after[colon + 2..];
        let Some(end) = ev.find(':') else { continue };
        m.entry((cpu, ts, ev[..end].trim().to_string()))
            .or_default()
            .push(line.to_string());
    }
    m
}

/// The event name of an evidence line (`... [cpu] ts: name: ...`).
fn name_of(line: &str) -> Option<String> {
    let rest = &line[line.find("] ")? + 2..];
    let ev = &rest[rest.find(": ")? + 2..];
    Some(ev[..ev.find(':')?].trim().to_string())
}

/// `trace-cmd report` (`kind` "report") or `trace-cmd report -R` ("raw") of `dat`: stored
/// beside it, else run.
fn trace_cmd_report(dat: &Path, kind: &str) -> Option<String> {
    if let Some(stored) = oracle(dat, kind) {
        return Some(stored);
    }
    if !require("trace-cmd") {
        return None;
    }
    let out = Command::new("trace-cmd")
        .arg("report")
        .args(if kind == "raw" { &["-R"][..] } else { &[] })
        .arg(dat)
        .output()
        .expect("trace-cmd runs");
    assert!(out.status.success(), "trace-cmd report {}", dat.display());
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_evidence_line_is_trace_cmds_line_for_that_event() {
    let mut files = dats_below(&workspace().join("fixtures"));
    files.extend(dats_below(&wild_corpus()));
    let mut checked = 0usize;
    let mut wrong = Vec::new();
    for dat in &files {
        let out = Command::new(rtwhy())
            .args(["analyze", "--format", "json"])
            .arg(dat)
            .output()
            .expect("runs");
        if !matches!(out.status.code(), Some(0 | 1)) {
            // Traces without scheduler events are refused; nothing to compare.
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let spikes = v["spikes"].as_array().cloned().unwrap_or_default();
        if spikes
            .iter()
            .all(|s| s["evidence"].as_array().is_none_or(|e| e.is_empty()))
        {
            continue;
        }
        let Some(report) = trace_cmd_report(dat, "report") else {
            return;
        };
        let lines = index(&report);
        for s in &spikes {
            for e in s["evidence"].as_array().into_iter().flatten() {
                let line = e["line"].as_str().unwrap_or_default();
                let ns = e["ts"].as_u64().unwrap_or_default();
                let cpu = e["cpu"].as_u64().unwrap_or_default() as u32;
                let name = name_of(line).unwrap_or_default();
                // A counter clock prints its raw value instead of seconds.
                let keys = [report_time(ns), ns.to_string()];
                let found = keys.iter().any(|ts| {
                    lines
                        .get(&(cpu, ts.clone(), name.clone()))
                        .is_some_and(|l| l.iter().any(|t| t == line))
                });
                checked += 1;
                if !found {
                    wrong.push(format!("{}: {line}", dat.display()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} evidence lines differ from trace-cmd's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 0, "no evidence line was compared");
    eprintln!("{checked} evidence lines equal trace-cmd's");
}

/// The viewer's diagnosis pane shows the same evidence lines: each is `trace-cmd
/// report`'s line for its event (the pane once showed the analyzer's own rendering,
/// `function=0xffffffff814204b0` where trace-cmd prints `function=hrtimer_wakeup/0x0`).
#[test]
fn the_viewer_shows_each_evidence_line_as_trace_cmd_prints_it() {
    let mut checked = 0usize;
    let mut wrong = Vec::new();
    for dat in dats_below(&workspace().join("fixtures")) {
        let Ok(capture) = rtwhy_tui::Capture::open(&dat, &rtwhy_analyze::Config::default()) else {
            continue;
        };
        let spikes = &capture.analysis.spikes;
        if spikes.iter().all(|s| s.evidence.is_empty()) {
            continue;
        }
        let Some(report) = trace_cmd_report(&dat, "report") else {
            return;
        };
        let lines = index(&report);
        for e in spikes.iter().flat_map(|s| &s.evidence) {
            let name = name_of(&e.line).unwrap_or_default();
            let keys = [report_time(e.ts.0), e.ts.0.to_string()];
            let found = keys.iter().any(|ts| {
                lines
                    .get(&(e.cpu, ts.clone(), name.clone()))
                    .is_some_and(|l| l.contains(&e.line))
            });
            checked += 1;
            if !found {
                wrong.push(format!("{}: {}", dat.display(), e.line));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} evidence lines in the viewer differ from trace-cmd's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 0, "no evidence line was compared");
    eprintln!("{checked} evidence lines in the viewer equal trace-cmd's");
}

/// `rtwhy dump` prints every fixture line for line as `trace-cmd report` does, in
/// particular the files of two buffers (the scenario's instance and the top level that
/// holds a program's own markers): trace-cmd gives every line of such a file a buffer
/// column as wide as the longest instance name, blank for the top level. rtwhy printed
/// top-level lines without it (1008 lines of `priority_inversion_nested.dat` differed).
/// `rtwhy dump --raw` prints every fixture and corpus trace as `trace-cmd report -R`
/// does, with the function names it leaves out while the symbols are read (see
/// `Printer::defer_symbols`) written back in their places.
#[test]
fn dump_prints_every_fixture_as_trace_cmd_report() {
    dump_prints_as_trace_cmd("report", &dats_below(&workspace().join("fixtures")));
    let mut files = dats_below(&workspace().join("fixtures"));
    files.extend(dats_below(&wild_corpus()));
    dump_prints_as_trace_cmd("raw", &files);
}

/// Whether `ours` is `oracle` with an `ARRAY[...]` cut at the record's end: libtraceevent
/// prints a fixed array whole past a short record, from bytes rtwhy does not keep
/// (docs/DECODING.md, "Differences from trace-cmd report").
fn array_cut_at_record_end(ours: &str, oracle: &str) -> bool {
    let Some(head) = ours.strip_suffix(']') else {
        return false;
    };
    oracle.len() > ours.len() && oracle.starts_with(head) && oracle[head.len()..].starts_with(", ")
}

fn dump_prints_as_trace_cmd(kind: &str, files: &[PathBuf]) {
    let mut two_buffers = 0usize;
    let mut wrong = Vec::new();
    let args: &[&str] = if kind == "raw" {
        &["dump", "--raw"]
    } else {
        &["dump"]
    };
    for dat in files {
        let Some(report) = trace_cmd_report(dat, kind) else {
            return;
        };
        let out = Command::new(rtwhy())
            .args(args)
            .arg(dat)
            .output()
            .expect("runs");
        assert!(out.status.success(), "rtwhy {args:?} {}", dat.display());
        let ours = String::from_utf8_lossy(&out.stdout);
        // In a two-buffer file an instance line starts with its name, a top-level line
        // blank (without instances every line starts blank, the task name right-aligned).
        let named = report
            .lines()
            .any(|l| !l.starts_with(' ') && !l.starts_with("cpus=") && !l.starts_with("CPU:"));
        if named && report.lines().any(|l| l.starts_with(' ')) {
            two_buffers += 1;
        }
        if let Some((n, (a, b))) = ours
            .lines()
            .zip(report.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b && !(kind == "raw" && array_cut_at_record_end(a, b)))
        {
            wrong.push(format!(
                "{} line {}:\n  rtwhy:     {a}\n  trace-cmd: {b}",
                dat.display(),
                n + 1
            ));
        } else if ours.lines().count() != report.lines().count() {
            wrong.push(format!(
                "{}: {} lines, trace-cmd {}",
                dat.display(),
                ours.lines().count(),
                report.lines().count()
            ));
        }
    }
    assert!(wrong.is_empty(), "{args:?} differs:\n{}", wrong.join("\n"));
    assert!(two_buffers > 0, "no fixture of two buffers was compared");
    eprintln!(
        "rtwhy {args:?}: {} traces printed as trace-cmd prints them ({two_buffers} with a top-level buffer beside an instance)",
        files.len()
    );
}
