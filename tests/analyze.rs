//! `rtwhy analyze` end to end: exit codes, bad input, the three formats, and report text
//! giving the same diagnosis as the trace.dat it was printed from.

use std::path::Path;
use std::process::{Command, Output};

use rtwhy_tests::{oracle, rtwhy, wild_corpus, workspace};
use serde_json::Value;

fn analyze(path: &Path, args: &[&str]) -> Output {
    Command::new(rtwhy())
        .arg("analyze")
        .arg(path)
        .args(args)
        .output()
        .expect("runs")
}

fn analyze_json(path: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = analyze(path, &a);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (out.status.code(), v)
}

fn recorded(name: &str) -> std::path::PathBuf {
    workspace().join("fixtures/recorded").join(name)
}

#[test]
fn exit_code_says_whether_spikes_were_found() {
    let (code, v) = analyze_json(&recorded("vm-cyclictest-v7-zstd.dat"), &[]);
    assert_eq!(code, Some(1));
    assert_eq!(v["schema"], "rtwhy.analysis/2");
    assert_eq!(v["summary"]["spikes"], 1);
    // cyclictest printed Max: 159 us for this run; the trace gives the same spike.
    let lat = v["spikes"][0]["latency_ns"].as_u64().expect("latency");
    assert!((150_000..=160_000).contains(&lat), "{lat}");
    let (code, v) = analyze_json(
        &recorded("vm-cyclictest-v7-zstd.dat"),
        &["--threshold", "200us"],
    );
    assert_eq!(code, Some(0));
    assert_eq!(v["summary"]["spikes"], 0);
    assert!(v["victims"][0]["max_latency_ns"].as_u64().expect("max") > 150_000);
}

#[test]
fn filters_pick_the_victims() {
    let path = recorded("vm-cyclictest-v7-zstd.dat");
    let (_, v) = analyze_json(&path, &["--comm", "no-such-task"]);
    assert_eq!(v["summary"]["spikes"], 0);
    assert_eq!(v["victims"].as_array().map(Vec::len), Some(0));
    let (_, v) = analyze_json(&path, &["--comm", "cyclictest"]);
    assert_eq!(v["summary"]["spikes"], 1);
    let tid = v["spikes"][0]["victim"]["tid"]
        .as_i64()
        .expect("tid")
        .to_string();
    let (_, v) = analyze_json(&path, &["--tid", &tid]);
    assert_eq!(v["summary"]["spikes"], 1);
}

#[test]
fn filters_pick_the_victims_of_breach_markers_too() {
    // The RT migration capture's detector reported breaches of lab-high and of lab-med;
    // asked about lab-high, the analysis must not judge lab-med's (selftest judged them
    // as the victim's in the RT guest and named their preemption by lab-high).
    let path = workspace().join("fixtures/rt_migration/capture.dat");
    let victims = |args: &[&str]| -> Vec<(String, String)> {
        let (_, v) = analyze_json(&path, args);
        v["spikes"]
            .as_array()
            .expect("spikes")
            .iter()
            .map(|s| {
                let comm = s["victim"]["comm"].as_str().unwrap_or("?").to_string();
                let kind = s["source"]["kind"].as_str().unwrap_or("?").to_string();
                (comm, kind)
            })
            .collect()
    };
    let all = victims(&[]);
    let marker = |c: &str| (c.to_string(), "breach_marker".to_string());
    assert!(all.contains(&marker("lab-med")), "{all:?}");
    assert!(all.contains(&marker("lab-high")), "{all:?}");
    let high = victims(&["--comm", "lab-high"]);
    assert!(high.contains(&marker("lab-high")), "{high:?}");
    assert!(high.iter().all(|(c, _)| c == "lab-high"), "{high:?}");
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prose = dir.path().join("notes.txt");
    std::fs::write(&prose, "my cyclictest max was 48 ms, please help\n").expect("write");
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (
            vec![wild_corpus().join("igt-i915-x86_64-noopts.dat").into()],
            "no scheduler events",
        ),
        (vec![prose.clone().into()], "notes.txt"),
        (
            vec![
                recorded("vm-net-v7-zstd.dat").into(),
                "--threshold".into(),
                "abc".into(),
            ],
            "abc",
        ),
        (
            vec![
                recorded("vm-net-v7-zstd.dat").into(),
                "--isolated".into(),
                "one".into(),
            ],
            "CPU list",
        ),
        (vec!["/nonexistent/trace.dat".into()], "cannot open"),
    ];
    for (args, needle) in cases {
        let out = Command::new(rtwhy())
            .arg("analyze")
            .args(&args)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn text_puts_the_verdict_first_then_breakdown_and_evidence() {
    let out = analyze(&recorded("vm-net-v7-zstd.dat"), &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let spike = text.find("spike 1 at").expect("a spike block");
    let cause = text.find("  cause: ").expect("a verdict");
    let breakdown = text.find("  breakdown of").expect("a breakdown");
    let evidence = text.find("  evidence:").expect("evidence");
    let fix = text.find("  fix:").expect("a fix");
    assert!(spike < cause && cause < breakdown && breakdown < evidence && evidence < fix);
    let md = analyze(&recorded("vm-net-v7-zstd.dat"), &["--format", "markdown"]);
    let md = String::from_utf8_lossy(&md.stdout);
    // The Markdown is the bug report's (tests/report.rs compares the bytes).
    assert!(md.starts_with("# rtwhy report:"), "{md}");
    assert!(md.contains("## Spike 1:"));
    assert!(md.contains("### Decisive trace lines"));
}

#[test]
fn report_text_is_diagnosed_like_the_trace_it_came_from() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["vm-cyclictest-v7-zstd.dat", "vm-net-v7-zstd.dat"] {
        let dat = recorded(name);
        let text = oracle(&dat, "report").expect("stored trace-cmd report");
        let pasted = dir.path().join(format!("{name}.txt"));
        std::fs::write(&pasted, text).expect("write");
        let (c1, a) = analyze_json(&dat, &["--threshold", "50us"]);
        let (c2, b) = analyze_json(&pasted, &["--threshold", "50us"]);
        assert_eq!(c1, c2, "{name}");
        let key = |v: &Value| -> Vec<(String, String, i64)> {
            v["spikes"]
                .as_array()
                .expect("spikes")
                .iter()
                .map(|s| {
                    (
                        s["victim"]["comm"].to_string(),
                        s["primary"]["cause"].to_string(),
                        // report text has microsecond timestamps
                        s["latency_ns"].as_i64().expect("latency") / 1000,
                    )
                })
                .collect()
        };
        let (ka, kb) = (key(&a), key(&b));
        assert_eq!(ka.len(), kb.len(), "{name}: {ka:?} vs {kb:?}");
        for (x, y) in ka.iter().zip(&kb) {
            assert_eq!((&x.0, &x.1), (&y.0, &y.1), "{name}");
            assert!((x.2 - y.2).abs() <= 2, "{name}: {x:?} vs {y:?}");
        }
    }
}

#[test]
fn a_capture_printed_as_text_keeps_the_facts_recorded_at_its_end() {
    // rtwhy's recorder writes its facts (CPU 1 isolated, preempt=rt: the PREEMPT_RT
    // guest) as markers at the end of a capture; pasted as report text, the capture
    // must be judged with them from its first event, as the trace.dat is.
    let dat = workspace().join("fixtures/rt_irq_on_isolated_cpu/capture.dat");
    let dump = Command::new(rtwhy())
        .arg("dump")
        .arg(&dat)
        .output()
        .expect("runs");
    assert!(dump.status.success());
    let dir = tempfile::tempdir().expect("tempdir");
    let pasted = dir.path().join("capture.txt");
    std::fs::write(&pasted, &dump.stdout).expect("write");
    let (_, a) = analyze_json(&dat, &["--threshold", "2ms"]);
    let (_, b) = analyze_json(&pasted, &["--threshold", "2ms"]);
    for doc in [&a, &b] {
        assert_eq!(doc["facts"]["isolated"], serde_json::json!([1]));
        assert_eq!(doc["facts"]["preempt"], "rt");
    }
    let causes = |v: &Value| -> Vec<String> {
        v["spikes"]
            .as_array()
            .expect("spikes")
            .iter()
            .map(|s| s["primary"]["cause"].to_string())
            .collect()
    };
    assert_eq!(causes(&a), causes(&b));
}

#[test]
fn every_wild_trace_is_analyzed_or_refused_in_one_line() {
    for dat in rtwhy_tests::dat_files(&wild_corpus()) {
        let out = analyze(&dat, &["--format", "json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) | Some(1) => {
                let v: Value = serde_json::from_slice(&out.stdout).expect("json");
                for s in v["spikes"].as_array().expect("spikes") {
                    let sum: u64 = s["breakdown"]
                        .as_array()
                        .expect("breakdown")
                        .iter()
                        .map(|i| i["ns"].as_u64().expect("ns"))
                        .sum();
                    assert_eq!(Some(sum), s["latency_ns"].as_u64(), "{}", dat.display());
                    assert!(!s["evidence"].as_array().expect("evidence").is_empty());
                }
            }
            Some(2) => assert_eq!(err.lines().count(), 1, "{}: {err}", dat.display()),
            other => panic!("{}: exit {other:?}: {err}", dat.display()),
        }
    }
}

/// PREEMPT_RT: an `irq/N-name` thread on the isolated CPU is the IRQ's work, named with
/// the IRQ's number and handler name, its hard half and thread time together, and the
/// `smp_affinity_list` fix (fixtures/rt_irq_on_isolated_cpu/README.md has the trace lines).
#[test]
fn irq_thread_on_an_isolated_cpu_names_the_irq_and_its_fix() {
    let path = workspace().join("fixtures/rt_irq_on_isolated_cpu/irq_thread.dat");
    let (_, v) = analyze_json(
        &path,
        &[
            "--isolated",
            "1",
            "--threshold",
            "2ms",
            "--comm",
            "cyclictest",
        ],
    );
    let spikes = v["spikes"].as_array().expect("spikes");
    let irq: Vec<&Value> = spikes
        .iter()
        .filter(|s| s["primary"]["cause"] == "irq_on_isolated_cpu")
        .collect();
    assert!(!irq.is_empty(), "no irq_on_isolated_cpu spike");
    for s in &irq {
        let summary = s["primary"]["summary"].as_str().expect("summary");
        assert!(summary.contains("IRQ 25 (virtio0-requests)"), "{summary}");
        assert!(summary.contains("thread irq/25-virtio0-:118"), "{summary}");
        let fixes: Vec<&str> = s["remediation"]
            .as_array()
            .expect("remediation")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            fixes
                .iter()
                .any(|f| f.contains("echo 0 > /proc/irq/25/smp_affinity_list")),
            "{fixes:?}"
        );
        let threads = s["breakdown"]
            .as_array()
            .expect("breakdown")
            .iter()
            .filter(|b| b["bucket"] == "irq_thread" && b["irq"] == 25)
            .count();
        assert_eq!(threads, 1, "{}", s["breakdown"]);
    }
    // The 15.8 ms wait of the README: woken at 24.694663, the thread ran until 24.710429.
    let long = spikes
        .iter()
        .find(|s| {
            s["end"]
                .as_u64()
                .is_some_and(|e| (24_710_428_000..=24_710_429_000).contains(&e))
        })
        .expect("the spike ending at 24.710429");
    assert_eq!(long["primary"]["cause"], "irq_on_isolated_cpu");
    // No spike blames the IRQ thread as an application preempting the victim.
    assert!(spikes.iter().all(|s| s["primary"]["cause"] != "preemption"));
}

/// Where trace-cmd says the ring buffer dropped events: (CPU, its last event before in
/// ns, its first event after in ns, how many), from `CPU:N [K EVENTS DROPPED]` lines and
/// the event lines around them.
fn drops_in_report(report: &str) -> Vec<(u64, u64, u64, u64)> {
    let mut last: std::collections::HashMap<u64, u64> = Default::default();
    let mut pending: std::collections::HashMap<u64, u64> = Default::default();
    let mut out = Vec::new();
    for line in report.lines() {
        if let Some(rest) = line.strip_prefix("CPU:") {
            if let Some((cpu, what)) = rest.split_once(" [") {
                if what.ends_with("EVENTS DROPPED]") {
                    let n = what.split_whitespace().next().and_then(|n| n.parse().ok());
                    pending.insert(cpu.parse().expect("cpu"), n.unwrap_or(0));
                }
            }
            continue;
        }
        // `comm-pid [001] 683.783929: name: ...`
        let Some((_, rest)) = line.split_once(" [") else {
            continue;
        };
        let Some((cpu, rest)) = rest.split_once("] ") else {
            continue;
        };
        let (Ok(cpu), Some(ts)) = (cpu.parse::<u64>(), rest.trim_start().split(':').next()) else {
            continue;
        };
        let Some((s, us)) = ts.split_once('.') else {
            continue;
        };
        let (Ok(s), Ok(us)) = (s.parse::<u64>(), us.parse::<u64>()) else {
            continue;
        };
        let ns = (s * 1_000_000 + us) * 1_000;
        if let Some(n) = pending.remove(&cpu) {
            out.push((cpu, last.get(&cpu).copied().unwrap_or(0), ns, n));
        }
        last.insert(cpu, ns);
    }
    out
}

/// A capture from the selftest's disk-IRQ scenario whose CPU 1 lost 42841 events in the
/// middle (trace-cmd: `CPU:1 [42841 EVENTS DROPPED]` between 683.783929 and 684.118674):
/// the replay of such a window had kept the handler open before the hole over the whole
/// hole, and named irq_on_isolated_cpu for spikes no event describes. No cause may be
/// named across a drop, read from the trace.dat or from trace-cmd's report text of it.
#[test]
fn no_cause_is_named_across_events_the_ring_buffer_dropped() {
    if !rtwhy_tests::require("trace-cmd") {
        return;
    }
    let dat = workspace().join("fixtures/dropped_events/dropped_events.dat");
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(&dat)
        .output()
        .expect("trace-cmd runs");
    assert!(out.status.success());
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let drops = drops_in_report(&report);
    assert!(
        drops.contains(&(1, 683_783_929_000, 684_118_674_000, 42841)),
        "{drops:?}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let txt = dir.path().join("dropped_events.txt");
    std::fs::write(&txt, &report).expect("write");
    for input in [&dat, &txt] {
        let (_, v) = analyze_json(input, &["--threshold", "30us", "--isolated", "1"]);
        let (mut across, mut named_elsewhere) = (0, 0);
        for s in v["spikes"].as_array().expect("spikes") {
            let (cpu, start, end) = (
                s["cpu"].as_u64().expect("cpu"),
                s["start"].as_u64().expect("start"),
                s["end"].as_u64().expect("end"),
            );
            let cause = s["primary"]["cause"].as_str().expect("cause");
            // trace-cmd's times are rounded to the microsecond: a spike is across a drop
            // when it overlaps it by more than that, clear of it by more than that.
            let hole = drops
                .iter()
                .find(|d| d.0 == cpu && end > d.1 + 1_000 && start + 1_000 < d.2);
            if let Some(&(cpu, _, _, n)) = hole {
                across += 1;
                assert_eq!(cause, "unknown", "{}: {s}", input.display());
                let said = format!("dropped {n} events of CPU {cpu}");
                assert!(s["missing"].to_string().contains(&said), "{s}");
            } else if cause != "unknown"
                && drops
                    .iter()
                    .all(|d| d.0 != cpu || end + 1_000 < d.1 || start > d.2 + 1_000)
            {
                named_elsewhere += 1;
            }
        }
        // Both kinds are there: the rule is not "everything unknown".
        assert!(
            across > 0 && named_elsewhere > 0,
            "{across} {named_elsewhere}"
        );
        eprintln!(
            "{}: {across} spikes across the drop, {named_elsewhere} named outside it",
            input.display()
        );
    }
}

/// Regression: arm64 traces its per-CPU timer as an interrupt (`irq=11 name=arch_timer`,
/// a GIC PPI), which x86 traces as a system vector outside irq_handler_entry. In the arm64
/// guest's capture the irq_on_isolated_cpu summaries listed `IRQ 11 (arch_timer)` among
/// the device interrupts, and the advice said `echo 0 > /proc/irq/11/smp_affinity_list`,
/// which no per-CPU interrupt allows.
#[test]
fn arm64s_timer_is_no_device_interrupt_to_move() {
    let (code, v) = analyze_json(
        &recorded("arm64-rt-rtwhy-v6.dat"),
        &["--threshold", "2ms", "--comm", "cyclictest"],
    );
    assert_eq!(code, Some(1));
    let spikes = v["spikes"].as_array().expect("spikes");
    let mut device = 0;
    for s in spikes {
        let advice = s["remediation"].to_string();
        assert!(!advice.contains("/proc/irq/11/"), "{advice}");
        if s["primary"]["cause"] == "irq_on_isolated_cpu" {
            device += 1;
            let summary = s["primary"]["summary"].as_str().expect("summary");
            assert!(summary.contains("IRQ 23 (virtio1-requests)"), "{summary}");
            assert!(!summary.contains("arch_timer"), "{summary}");
            assert!(
                advice.contains("/proc/irq/23/smp_affinity_list"),
                "{advice}"
            );
        }
    }
    assert!(device >= 15, "{device} spikes named irq_on_isolated_cpu");
}
