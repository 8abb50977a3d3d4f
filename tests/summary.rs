//! `rtwhy summary DIR` on session directories written here: the overview's JSON carries
//! every thread's histogram and tail as `overview.json` holds them, the text prints the
//! percentiles and the tail by cause, and bad input is one line and exit 2.

use std::path::Path;
use std::process::{Command, Output};

use rtwhy_model::{Histogram, Overview, ThreadOverview, OVERVIEW_SCHEMA};
use rtwhy_tests::rtwhy;
use serde_json::{json, Value};

fn summary(args: &[&str], dir: &Path) -> Output {
    Command::new(rtwhy())
        .arg("summary")
        .args(args)
        .arg(dir)
        .output()
        .expect("run rtwhy summary")
}

/// A session directory with a minimal `session.json` and, when given, `overview.json`.
fn session_dir(overview: Option<&Value>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let session = json!({
        "schema": "rtwhy.session/2",
        "state": "ended",
        "session": {"duration_ns": 3_000_000_000u64, "breaches": 4, "captures_total": 1,
                    "ended_by": "the command exited"},
        "spikes": [],
        "dropped": {},
        "disk": {},
        "timing": {},
    });
    std::fs::write(dir.path().join("session.json"), session.to_string()).unwrap();
    if let Some(o) = overview {
        std::fs::write(dir.path().join("overview.json"), o.to_string()).unwrap();
    }
    dir
}

/// One thread: 1000 wake-ups around 8 us and four breaches, three diagnosed as IRQ and
/// one not captured.
fn overview() -> Overview {
    let mut cpu1 = Histogram::default();
    for i in 0..996u64 {
        cpu1.add(7_000 + i);
    }
    let mut irq = Histogram::default();
    for ns in [120_000, 130_000, 500_000] {
        cpu1.add(ns);
        irq.add(ns);
    }
    let mut missed = Histogram::default();
    cpu1.add(110_000);
    missed.add(110_000);
    Overview {
        schema: OVERVIEW_SCHEMA.into(),
        detector: "bpf".into(),
        threshold_ns: 100_000,
        from_ns: 5_000_000_000,
        to_ns: 8_000_000_000,
        from_unix_ns: None,
        sessions: Vec::new(),
        wakeups_lost: 0,
        wakeups_unseen: 0,
        wakeups_unseen_latest_ns: 0,
        breaches_lost: 0,
        threads: vec![ThreadOverview::new(
            4242,
            "control".into(),
            &[(1, cpu1)],
            &[
                ("irq_on_isolated_cpu".into(), irq),
                ("not_captured".into(), missed),
            ],
        )],
    }
}

#[test]
fn summary_json_gives_each_threads_histogram_and_tail() {
    let o = serde_json::to_value(overview()).unwrap();
    let dir = session_dir(Some(&o));
    let out = summary(&["--format", "json"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["threads"][0];
    assert_eq!(t["comm"], "control");
    assert_eq!(t["tid"], 4242);
    assert_eq!(t["wakeups"], 1000);
    assert_eq!(t["max_ns"], 500_000);
    // 996 of 1000 wake-ups lie in [7000, 7996] ns: the median is in their buckets, the
    // 99th percentile too (990th wake-up).
    assert!(
        (6_000..8_000).contains(&t["p50_ns"].as_u64().unwrap()),
        "{t}"
    );
    assert!(
        (6_000..8_000).contains(&t["p99_ns"].as_u64().unwrap()),
        "{t}"
    );
    let counted: u64 = t["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 1000);
    let tail: Vec<(&str, u64)> = t["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["cause"].as_str().unwrap(), p["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(tail, [("irq_on_isolated_cpu", 3), ("not_captured", 1)]);
    assert_eq!(v["from_ns"], 5_000_000_000u64);
    assert_eq!(v["to_ns"], 8_000_000_000u64);
}

#[test]
fn summary_text_prints_percentiles_and_the_tail_by_cause() {
    let o = serde_json::to_value(overview()).unwrap();
    let dir = session_dir(Some(&o));
    let out = summary(&[], dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.contains("control"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("1000"), "{row}");
    assert!(row.trim_end().ends_with("500.0 us"), "{row}");
    assert!(
        text.contains(
            "tail: 3 irq_on_isolated_cpu (worst 500.0 us), 1 not_captured (worst 110.0 us)"
        ),
        "{text}"
    );
}

#[test]
fn summary_json_of_a_session_without_an_overview_is_one_line_and_exit_2() {
    let dir = session_dir(None);
    let out = summary(&["--format", "json"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("overview.json"), "{err}");
    // The text summary still works: the overview is an addition.
    assert_eq!(summary(&[], dir.path()).status.code(), Some(0));
}

#[test]
fn a_corrupt_overview_is_one_line_and_exit_2() {
    let dir = session_dir(Some(&json!({"schema": "rtwhy.overview/1", "threads": 7})));
    let out = summary(&["--format", "json"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("overview.json"), "{err}");
}

#[test]
fn summary_svg_draws_a_panel_per_thread_with_the_tail_by_cause() {
    let o = serde_json::to_value(overview()).unwrap();
    let dir = session_dir(Some(&o));
    let out = summary(&["--format", "svg"], dir.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let svg = String::from_utf8(out.stdout).unwrap();
    assert!(svg.starts_with("<svg "), "{svg}");
    assert!(svg.contains(r#"<g id="thread-4242">"#), "{svg}");
    assert!(svg.contains("control:4242  1000 wake-ups"), "{svg}");
    assert!(svg.contains(">irq on isolated cpu (3)<"), "{svg}");
    assert!(svg.contains(">not captured (1)<"), "{svg}");
    // A real renderer reads it.
    resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .expect("resvg parses the SVG");
    // Without an overview: one line, exit 2, as for JSON.
    let dir = session_dir(None);
    let out = summary(&["--format", "svg"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn report_of_a_session_directory_leads_to_the_worst_capture_of_each_cause() {
    let o = serde_json::to_value(overview()).unwrap();
    let dir = session_dir(Some(&o));
    let spike = |n: u32, cause: Option<&str>, ns: u64| {
        json!({"capture": n, "cause": cause, "comm": "control", "tid": 4242, "cpu": 1,
               "error": null, "file": format!("spike-{n:03}.dat"), "latency_ns": ns,
               "summary": format!("verdict {n}")})
    };
    let session = json!({
        "schema": "rtwhy.session/2", "state": "ended",
        "session": {"duration_ns": 3_000_000_000u64, "breaches": 4, "captures_total": 3},
        "spikes": [spike(1, Some("irq_on_isolated_cpu"), 120_000),
                   spike(2, Some("irq_on_isolated_cpu"), 500_000),
                   spike(3, None, 130_000)],
        "dropped": {}, "disk": {}, "timing": {},
    });
    std::fs::write(dir.path().join("session.json"), session.to_string()).unwrap();
    let report = |args: &[&str]| {
        Command::new(rtwhy())
            .arg("report")
            .arg(dir.path())
            .args(args)
            .output()
            .expect("run rtwhy report")
    };
    let out = report(&[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("| control:4242 | 1000 | "), "{md}");
    // Two irq_on_isolated_cpu captures, the worst (spike 2) linked; one without a verdict.
    let row = md
        .lines()
        .find(|l| l.starts_with("| irq_on_isolated_cpu |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("| 2 | 500.0 us |"), "{row}");
    assert!(row.contains("[spike-002.dat]("), "{row}");
    assert!(row.contains("spike-002.dat) | verdict 2 |"), "{row}");
    assert!(md.contains("| undiagnosed | 1 | 130.0 us |"), "{md}");
    // Written inside the session: relative links, and the picture beside the Markdown.
    let md_path = dir.path().join("report.md");
    let out = report(&["--out", md_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("![wake-up latency histograms](report.svg)"),
        "{md}"
    );
    assert!(md.contains("[spike-002.dat](spike-002.dat)"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("report.svg")).unwrap();
    assert!(svg.contains(r#"<g id="thread-4242">"#));
    // Each bar's breaches lead to the capture behind them: the 500 us bar to spike 2.
    assert!(
        svg.contains(r#"<a xlink:href="spike-002.dat"><rect class="bar""#),
        "{svg}"
    );
    assert!(
        svg.contains("irq_on_isolated_cpu, 491.5 us to 524.3 us: spike-002.dat (500.0 us)"),
        "{svg}"
    );
    // What works on one capture only is one line and exit 2.
    let out = report(&["--bundle"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

/// The captures' culprits, grouped: the one with the most captures first, its verdicts
/// counted and its worst capture linked, in the report and in `rtwhy summary DIR`.
#[test]
fn a_session_names_its_top_contributors() {
    let o = serde_json::to_value(overview()).unwrap();
    let dir = session_dir(Some(&o));
    let spike = |n: u32, cause: &str, ns: u64, culprit: Option<&str>| {
        json!({"capture": n, "cause": cause, "comm": "control", "tid": 4242, "cpu": 1,
               "error": null, "file": format!("spike-{n:03}.dat"), "latency_ns": ns,
               "summary": format!("verdict {n}"), "culprit": culprit, "end_ns": 1000 * n})
    };
    let irq = Some("IRQ 14 (ata_piix) on CPU 1");
    let spin = Some("spin:9 (FIFO/RR 90) on CPU 1");
    let session = json!({
        "schema": "rtwhy.session/2", "state": "ended",
        "session": {"duration_ns": 3_000_000_000u64, "breaches": 5, "captures_total": 5},
        "spikes": [spike(1, "irq_on_isolated_cpu", 120_000, irq),
                   spike(2, "preemption", 900_000, spin),
                   spike(3, "irq_on_isolated_cpu", 500_000, irq),
                   spike(4, "irq", 200_000, irq),
                   spike(5, "unknown", 130_000, None)],
        "dropped": {}, "disk": {}, "timing": {},
    });
    std::fs::write(dir.path().join("session.json"), session.to_string()).unwrap();
    let out = Command::new(rtwhy())
        .arg("report")
        .arg(dir.path())
        .output()
        .expect("run rtwhy report");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = String::from_utf8(out.stdout).unwrap();
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| *l != "## Top contributors")
        .filter(|l| l.starts_with("| ") && !l.starts_with("| contributor"))
        .take_while(|l| !l.starts_with("| cause"))
        .collect();
    assert_eq!(table.len(), 2, "{md}");
    assert!(
        table[0].starts_with(
            "| IRQ 14 (ata_piix) on CPU 1 | irq_on_isolated_cpu x2, irq x1 | 3 | 500.0 us | [spike-003.dat]("
        ),
        "{}",
        table[0]
    );
    assert!(
        table[1].starts_with("| spin:9 (FIFO/RR 90) on CPU 1 | preemption x1 | 1 | 900.0 us |"),
        "{}",
        table[1]
    );
    // Written into the session: the breaches over time beside it, a dot per capture
    // linked to it.
    let md_path = dir.path().join("report.md");
    let out = Command::new(rtwhy())
        .arg("report")
        .arg(dir.path())
        .args(["--out", md_path.to_str().unwrap()])
        .output()
        .expect("run rtwhy report --out");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("![captured breaches over time](report-time.svg)"),
        "{md}"
    );
    let svg = std::fs::read_to_string(dir.path().join("report-time.svg")).unwrap();
    assert_eq!(svg.matches(r#"<a xlink:href="spike-"#).count(), 5, "{svg}");
    let text = String::from_utf8(summary(&[], dir.path()).stdout).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("top contributors"))
        .skip(1)
        .take(2)
        .collect();
    assert_eq!(
        lines,
        [
            "       3  IRQ 14 (ata_piix) on CPU 1 (irq_on_isolated_cpu, irq), worst 500.0 us in spike-003.dat",
            "       1  spin:9 (FIFO/RR 90) on CPU 1 (preemption), worst 900.0 us in spike-002.dat",
        ],
        "{text}"
    );
}

/// A recorder's state directory (`rtwhy record --state-dir`, the systemd unit's): its
/// sessions summarised and reported together, a thread's histograms added up over the
/// sessions, the captures linked inside their sessions. Assembled here from the
/// overview above; a live test records one (record_live's ten restarts).
#[test]
fn a_state_directory_is_summarised_and_reported_over_all_its_sessions() {
    let state = tempfile::tempdir().unwrap();
    let spike = |n: u32, cause: &str, ns: u64| {
        json!({"capture": n, "cause": cause, "comm": "control", "tid": 4242, "cpu": 1,
               "error": null, "file": format!("spike-{n:03}.dat"), "latency_ns": ns,
               "summary": format!("verdict {n}"), "culprit": "IRQ 14 (ata_piix) on CPU 1",
               "end_ns": 6_000_000_000u64 + u64::from(n)})
    };
    for (i, name) in ["rtwhy-20261127-080000", "rtwhy-20261128-080000"]
        .iter()
        .enumerate()
    {
        let dir = state.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let mut o = overview();
        o.from_unix_ns = Some(1_790_000_000_000_000_000 + i as u64 * 86_400_000_000_000);
        std::fs::write(
            dir.join("overview.json"),
            serde_json::to_string(&o).unwrap(),
        )
        .unwrap();
        let session = json!({
            "schema": "rtwhy.session/2", "state": "ended",
            "session": {"duration_ns": 3_000_000_000u64, "breaches": 4, "captures_total": 1,
                        "ended_by": "signal"},
            "spikes": [spike(1 + i as u32, "irq_on_isolated_cpu", 120_000 * (1 + i as u64))],
            "dropped": {}, "disk": {"budget_bytes": 25165824, "used_bytes": 1000000},
            "timing": {},
        });
        std::fs::write(dir.join("session.json"), session.to_string()).unwrap();
    }
    // A directory of something else, and a session whose manifest is broken: left out.
    std::fs::create_dir(state.path().join("notes")).unwrap();
    let broken = state.path().join("rtwhy-20261128-090000");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("session.json"), "{").unwrap();

    let out = summary(&["--format", "json"], state.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["sessions"],
        json!(["rtwhy-20261127-080000", "rtwhy-20261128-080000"])
    );
    assert_eq!(v["threads"][0]["wakeups"], 2000);
    assert_eq!(v["threads"][0]["tail"][0]["count"], 6);
    // One day apart on the wall clock: the time line spans a day and a session.
    assert_eq!(
        v["to_ns"].as_u64().unwrap() - v["from_ns"].as_u64().unwrap(),
        86_400_000_000_000 + 3_000_000_000
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("rtwhy-20261128-090000") && err.contains("left out"),
        "{err}"
    );

    let out = summary(&[], state.path());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("rtwhy record: 2 sessions in "), "{text}");
    assert!(text.contains(" in 2 sessions (measured by bpf"), "{text}");
    assert!(text.contains("rtwhy-20261127-080000"), "{text}");

    let md_path = state.path().join("report.md");
    let out = Command::new(rtwhy())
        .arg("report")
        .arg(state.path())
        .args(["--out", md_path.to_str().unwrap()])
        .output()
        .expect("run rtwhy report");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(
        md.contains("The 2 sessions of a recorder's state directory"),
        "{md}"
    );
    // The worst capture is the later session's, linked inside it.
    assert!(
        md.contains("[rtwhy-20261128-080000/spike-002.dat](rtwhy-20261128-080000/spike-002.dat)"),
        "{md}"
    );
    // The TUI opens one session: pointed at the state directory, it names the latest.
    let out = Command::new(rtwhy())
        .arg("tui")
        .arg(state.path())
        .output()
        .expect("run rtwhy tui");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("rtwhy-20261128-090000`"), "{err}");
    let time = std::fs::read_to_string(state.path().join("report-time.svg")).unwrap();
    assert!(time.contains(">+0.0 h<") && time.contains(" h<"), "{time}");
}

/// `rtwhy report DIR --baseline DIR2`: before and after a fix, per thread, both
/// distributions and each cause's breaches side by side. Assembled: the baseline is the
/// overview above (three IRQ breaches), the recording after the fix the same thread
/// without them.
#[test]
fn a_baseline_shows_both_distributions_and_the_tail_gone() {
    let before = session_dir(Some(&serde_json::to_value(overview()).unwrap()));
    let mut fixed = Histogram::default();
    for i in 0..2000u64 {
        fixed.add(7_000 + i);
    }
    let mut missed = Histogram::default();
    fixed.add(110_000);
    missed.add(110_000);
    let mut after = overview();
    after.threads = vec![ThreadOverview::new(
        5150,
        "control".into(),
        &[(1, fixed)],
        &[("not_captured".into(), missed)],
    )];
    let after = session_dir(Some(&serde_json::to_value(after).unwrap()));
    let md_path = after.path().join("report.md");
    let out = Command::new(rtwhy())
        .arg("report")
        .arg(after.path())
        .arg("--baseline")
        .arg(before.path())
        .args(["--out", md_path.to_str().unwrap()])
        .output()
        .expect("run rtwhy report --baseline");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.contains("## Against the baseline `"), "{md}");
    assert!(
        md.contains("| ![baseline histograms](report-baseline.svg) | ![histograms](report.svg) |"),
        "{md}"
    );
    assert!(after.path().join("report-baseline.svg").is_file());
    // The thread matched by name although its id changed; 4 breaches in 1000 wake-ups
    // before, 1 in 2001 after.
    assert!(md.contains("| control | baseline | 1000 | "), "{md}");
    assert!(md.contains("| 4 | 4000.0 |"), "{md}");
    assert!(md.contains("| control | this | 2001 | "), "{md}");
    assert!(md.contains("| 1 | 499.8 |"), "{md}");
    assert!(
        md.contains("| control | irq_on_isolated_cpu | 3 | 0 | 3000.0 -> 0.0 |"),
        "{md}"
    );
    // A trace file is no baseline, and no session takes one: one line, exit 2.
    let trace = rtwhy_tests::workspace().join("fixtures/rt_softirq/housekeeping.dat");
    for (file, base) in [
        (after.path(), trace.as_path()),
        (trace.as_path(), before.path()),
    ] {
        let out = Command::new(rtwhy())
            .arg("report")
            .arg(file)
            .arg("--baseline")
            .arg(base)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("--baseline"), "{err}");
    }
}
