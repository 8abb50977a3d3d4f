//! Every verdict rtwhy prints has its evidence: on every fixture and every wild trace,
//! each spike's primary cause is re-checked against the trace's own events by the
//! independent checker of `rtwhy_tests::preconditions` (checks written from
//! docs/causes.md, "Evidence required", sharing no code with the analyzer's rules).
//! Prints the verdict distribution per trace; fails on any verdict without its
//! preconditions.

use std::path::PathBuf;

use rtwhy_tests::preconditions::Checker;
use rtwhy_tests::{dat_files, wild_corpus, workspace};
use serde_json::Value;

/// The traces and the arguments each is analyzed with: every trace with the defaults,
/// and each fixture also with the arguments of its expectation files.
fn cases() -> Vec<(PathBuf, Vec<String>)> {
    let mut v: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let fixtures = workspace().join("fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    dirs.extend(
        std::fs::read_dir(fixtures.join("synthetic"))
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    );
    dirs.sort();
    for d in dirs.iter().filter(|d| d.is_dir()) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        for f in &files {
            let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let is_trace = name.ends_with(".dat")
                || (name.ends_with(".txt") && d.parent().is_some_and(|p| p.ends_with("synthetic")));
            if is_trace {
                v.push((f.clone(), Vec::new()));
            }
            if let Some(stem) = name.strip_suffix(".expect.json") {
                let spec: Value =
                    serde_json::from_str(&std::fs::read_to_string(f).expect("readable"))
                        .expect("json");
                let trace = match spec["trace"].as_str() {
                    Some(t) => d.join(t),
                    None => {
                        let s = stem.split('.').next().unwrap_or(stem);
                        let dat = d.join(format!("{s}.dat"));
                        if dat.exists() {
                            dat
                        } else if d.join(format!("{s}.txt")).exists() {
                            d.join(format!("{s}.txt"))
                        } else {
                            wild_corpus().join(format!("{s}.dat"))
                        }
                    }
                };
                let args = spec["args"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                v.push((trace, args));
            }
        }
    }
    for f in dat_files(&wild_corpus()) {
        v.push((f, Vec::new()));
    }
    v
}
#[test]
fn every_verdict_has_its_preconditions_in_the_events() {
    let mut checker = Checker::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (path, args) in cases() {
        if !path.exists() {
            continue;
        }
        if let Some(r) = checker.check(&path, &args) {
            checked += r.checked;
            failures.extend(r.failures);
        }
    }
    eprintln!("{checked} verdicts checked");
    assert!(checked > 100, "too few verdicts to check: {checked}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same re-check over captures kept elsewhere (`rtwhy selftest --keep DIR`, `rtwhy
/// record --out DIR`): `RTWHY_RECHECK_DIR=DIR RTWHY_RECHECK_ARGS='--threshold 250us'
/// cargo test -p rtwhy-tests --test tests -- --ignored --nocapture recheck_kept`.
#[test]
#[ignore]
fn recheck_kept_captures() {
    let dir = std::env::var("RTWHY_RECHECK_DIR").expect("RTWHY_RECHECK_DIR");
    let args: Vec<String> = std::env::var("RTWHY_RECHECK_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    let r = rtwhy_tests::preconditions::check_captures(std::path::Path::new(&dir), &args);
    assert!(r.failures.is_empty(), "{}", r.failures.join("\n"));
}
