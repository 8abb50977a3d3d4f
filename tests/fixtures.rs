//! Every `*.expect.json` under `fixtures/`: `rtwhy analyze` must reach the diagnosis a
//! person wrote down for that trace (fixtures/README.md describes the format).

use std::path::{Path, PathBuf};
use std::process::Command;

use rtwhy_tests::{rtwhy, workspace};
use serde_json::Value;

fn expect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            expect_files(&p, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".expect.json"))
        {
            out.push(p);
        }
    }
}

/// The trace an expectation file is about.
fn trace_of(expect: &Path, spec: &Value) -> PathBuf {
    let dir = expect.parent().expect("has a parent");
    if let Some(t) = spec["trace"].as_str() {
        return dir.join(t);
    }
    let name = expect
        .file_name()
        .and_then(|n| n.to_str())
        .expect("utf-8 name");
    let stem = name.split('.').next().expect("has a stem");
    for ext in ["dat", "txt"] {
        let p = dir.join(format!("{stem}.{ext}"));
        if p.exists() {
            return p;
        }
    }
    panic!(
        "{}: no {stem}.dat or {stem}.txt beside it",
        expect.display()
    );
}

/// Checks one expectation; returns what failed.
fn check(expect: &Path) -> Vec<String> {
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(expect).expect("readable")).expect("json");
    let trace = trace_of(expect, &spec);
    let args: Vec<String> = spec["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let out = Command::new(rtwhy())
        .arg("analyze")
        .arg(&trace)
        .args(&args)
        .args(["--format", "json"])
        .output()
        .expect("runs");
    let code = out.status.code();
    let mut fails = Vec::new();
    if !matches!(code, Some(0) | Some(1)) {
        return vec![format!(
            "exit code {code:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        )];
    }
    let doc: Value = serde_json::from_slice(&out.stdout).expect("analysis json");
    assert_eq!(doc["schema"], "rtwhy.analysis/2");
    let spikes = doc["spikes"].as_array().cloned().unwrap_or_default();
    let n = spikes.len() as u64;
    if code != Some(if n == 0 { 0 } else { 1 }) {
        fails.push(format!("exit code {code:?} with {n} spikes"));
    }
    let primary = |s: &Value| s["primary"]["cause"].as_str().unwrap_or("").to_string();
    let causes: Vec<String> = spikes
        .iter()
        .map(|s| format!("{}@{}:{}", primary(s), s["victim"]["comm"], s["latency_ns"]))
        .collect();
    if spec["no_spikes"].as_bool() == Some(true) && n > 0 {
        fails.push(format!("expected no spikes, got {n}: {causes:?}"));
    }
    if let Some(min) = spec["min_spikes"].as_u64() {
        if n < min {
            fails.push(format!(
                "expected at least {min} spikes, got {n}: {causes:?}"
            ));
        }
    }
    if let Some(max) = spec["max_spikes"].as_u64() {
        if n > max {
            fails.push(format!("expected at most {max} spikes, got {n}"));
        }
    }
    for req in spec["require"].as_array().cloned().unwrap_or_default() {
        let cause = req["cause"].as_str().unwrap_or("");
        let min = req["min"].as_u64().unwrap_or(1);
        let got = spikes
            .iter()
            .filter(|s| primary(s) == cause)
            .filter(|s| {
                req["victim_comm"]
                    .as_str()
                    .is_none_or(|c| s["victim"]["comm"].as_str() == Some(c))
            })
            .filter(|s| {
                req["cpu"]
                    .as_u64()
                    .is_none_or(|c| s["cpu"].as_u64() == Some(c))
            })
            .filter(|s| {
                let summary = s["primary"]["summary"].as_str().unwrap_or("");
                req["summary_contains"].as_array().is_none_or(|words| {
                    words
                        .iter()
                        .all(|w| w.as_str().is_some_and(|w| summary.contains(w)))
                })
            })
            .count() as u64;
        if got < min {
            fails.push(format!(
                "expected at least {min} spikes diagnosed {req}, got {got}: {causes:?}"
            ));
        }
    }
    for f in spec["forbid"].as_array().cloned().unwrap_or_default() {
        let f = f.as_str().unwrap_or("");
        if spikes.iter().any(|s| primary(s) == f) {
            fails.push(format!(
                "a spike was diagnosed {f}, which is forbidden: {causes:?}"
            ));
        }
    }
    // Threads whose waits are not latency (a condition variable's wait for work).
    for v in spec["quiet_victims"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let v = v.as_str().unwrap_or("");
        if spikes
            .iter()
            .any(|s| s["victim"]["comm"].as_str() == Some(v))
        {
            fails.push(format!("{v} must have no spike: {causes:?}"));
        }
    }
    if let Some(w) = spec["worst"].as_str() {
        let worst = spikes.iter().max_by_key(|s| s["latency_ns"].as_u64());
        if worst.map(primary).as_deref() != Some(w) {
            fails.push(format!("expected the worst spike to be {w}: {causes:?}"));
        }
    }
    // Every breakdown accounts for every nanosecond.
    for s in &spikes {
        let sum: u64 = s["breakdown"]
            .as_array()
            .map(|b| b.iter().filter_map(|i| i["ns"].as_u64()).sum())
            .unwrap_or(0);
        if Some(sum) != s["latency_ns"].as_u64() {
            fails.push(format!(
                "spike {} breakdown sums to {sum}, latency {}",
                s["id"], s["latency_ns"]
            ));
        }
    }
    // The line quoted for the victim's wake-up is its own, also where many events share
    // one timestamp (the TCG guest's clock).
    for s in &spikes {
        let (comm, tid) = (
            s["victim"]["comm"].as_str().unwrap_or(""),
            s["victim"]["tid"].as_i64().unwrap_or(-1),
        );
        let woken = format!("{comm} is woken");
        for e in s["evidence"].as_array().into_iter().flatten() {
            let (why, line) = (
                e["why"].as_str().unwrap_or(""),
                e["line"].as_str().unwrap_or(""),
            );
            let names_victim =
                line.contains(&format!("pid={tid} ")) || line.contains(&format!(":{tid} ["));
            if why.starts_with(&woken) && !names_victim {
                fails.push(format!(
                    "spike {}: the wake-up quoted for {comm}:{tid} is another task's: {line}",
                    s["id"]
                ));
            }
        }
    }
    fails
}

#[test]
fn every_fixture_gets_its_expected_diagnosis() {
    let mut files = Vec::new();
    expect_files(&workspace().join("fixtures"), &mut files);
    assert!(
        files.len() >= 3,
        "expected fixtures with .expect.json files, found {}",
        files.len()
    );
    let mut report = Vec::new();
    for f in &files {
        let fails = check(f);
        let rel = f
            .strip_prefix(workspace())
            .unwrap_or(f)
            .display()
            .to_string();
        eprintln!("{rel}: {}", if fails.is_empty() { "ok" } else { "FAILED" });
        for x in fails {
            report.push(format!("{rel}: {x}"));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}
