//! The `rtwhy` command line: exit codes, one-line errors, closed pipes.

use std::process::{Command, Stdio};

use rtwhy_tests::{rtwhy, wild_corpus};

/// `rtwhy info --format json FILE`, which must succeed.
fn info_json(path: &std::path::Path) -> serde_json::Value {
    let out = Command::new(rtwhy())
        .args(["info", "--format", "json"])
        .arg(path)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn info_describes_a_v7_zstd_trace() {
    let v = info_json(&wild_corpus().join("lanhaocoder-x86-v7-zstd.dat"));
    assert_eq!(v["version"], 7);
    assert_eq!(v["compression"], "zstd 1.4.8");
    assert_eq!(v["clock"], "perf");
    assert_eq!(v["cpus"], 4);
    assert_eq!(v["events"]["total"], 41400);
    assert!(v["kernel"]
        .as_str()
        .unwrap_or_default()
        .contains("5.15.0-50-generic"));
}

#[test]
fn bad_input_gives_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.dat");
    std::fs::write(&junk, b"\x00\x01\x02 this is not a trace at all").expect("write");
    for args in [vec!["dump"], vec!["info"], vec!["dump", "--raw"]] {
        let out = Command::new(rtwhy())
            .args(&args)
            .arg(&junk)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("junk.dat"), "{err}");
    }
    let missing = Command::new(rtwhy())
        .args(["info", "/nonexistent/trace.dat"])
        .output()
        .expect("runs");
    assert_eq!(missing.status.code(), Some(2));
    let usage = Command::new(rtwhy())
        .args(["dump", "--no-such-flag"])
        .output()
        .expect("runs");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn truncated_trace_reports_what_is_there_and_warns() {
    let out = Command::new(rtwhy())
        .args(["dump"])
        .arg(wild_corpus().join("hip24-guest-truncated-v6.dat"))
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "cpus=1\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("past the end of the file"), "{err}");
}

#[test]
fn closed_pipe_is_not_an_error() {
    // `rtwhy ... | head`: the reader is gone before the first write.
    let dat = wild_corpus().join("hip24-guest-xenomai-taskset-v7-zlib.dat");
    let dat = dat.to_str().expect("utf-8 path");
    let commands: [&[&str]; 7] = [
        &["dump", "--raw", dat],
        &["info", dat],
        &["info", "--format", "json", dat],
        &["analyze", dat],
        &["report", dat],
        &["report", "--format", "svg", dat],
        &["lab"],
    ];
    for args in commands {
        let mut child = Command::new(rtwhy())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waits");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "rtwhy {args:?}: {:?} {stderr}",
            out.status
        );
        assert!(stderr.is_empty(), "rtwhy {args:?}: {stderr}");
    }
}

#[test]
fn info_reads_report_text_pasted_into_a_bug() {
    let text = rtwhy_tests::oracle(&wild_corpus().join("hebel23-wega-armv7-irq.dat"), "report")
        .expect("oracle text");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("pasted.txt");
    std::fs::write(&path, text).expect("write");
    let v = info_json(&path);
    assert_eq!(v["kind"], "report text");
    assert_eq!(v["cpus"], 1);
    assert_eq!(v["events"]["total"], 997);
    assert_eq!(v["events"]["by_event"]["sched_switch"], 251);
    let dump = Command::new(rtwhy())
        .arg("dump")
        .arg(&path)
        .output()
        .expect("runs");
    assert_eq!(
        dump.status.code(),
        Some(2),
        "dump explains that it prints trace.dat files"
    );
}

/// The help of the bug-report commands, as a person reads it.
#[test]
fn report_and_doctor_help_match_their_snapshots() {
    for cmd in ["report", "doctor"] {
        let o = Command::new(rtwhy())
            .args([cmd, "--help"])
            .output()
            .expect("runs");
        assert!(o.status.success());
        insta::assert_snapshot!(format!("help_{cmd}"), String::from_utf8_lossy(&o.stdout));
    }
}

#[test]
fn a_directory_is_refused_in_one_line_that_names_a_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = Command::new(rtwhy())
        .arg("analyze")
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(plain.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is a directory"), "{stderr}");

    // A recording session: the error names its first capture.
    std::fs::copy(
        wild_corpus().join("hip24-guest-xenomai-taskset-v7-zlib.dat"),
        dir.path().join("spike-002.dat"),
    )
    .expect("copy");
    std::fs::write(dir.path().join("spike-001.dat"), b"").expect("write");
    for cmd in ["analyze", "report", "info", "dump"] {
        let out = Command::new(rtwhy())
            .arg(cmd)
            .arg(dir.path())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "rtwhy {cmd}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "rtwhy {cmd}: {stderr}");
        assert!(
            stderr.contains("recording session") && stderr.contains("spike-001.dat"),
            "rtwhy {cmd}: {stderr}"
        );
    }
}

/// Regression: a UTF-8 non-breaking space (0xC2 0xA0) written over the space before a
/// field name in one event format made `rtwhy info` and `rtwhy analyze` panic and exit
/// 101 ("byte index is not a char boundary"). The format is now refused with a warning
/// and the rest of the trace still reads.
#[test]
fn nbsp_in_an_event_format_does_not_panic_info_or_analyze() {
    let orig = std::fs::read(wild_corpus().join("bengo-i686-sched-fifo.dat")).expect("corpus");
    let needle = b"field:int common_pid;";
    let at = orig
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("a v6 format in the clear");
    let mut bad = orig.clone();
    // `int common_pid` -> `int\u{a0}ommon_pid`: same length, so the file stays whole.
    bad[at + 9] = 0xC2;
    bad[at + 10] = 0xA0;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nbsp.dat");
    std::fs::write(&path, &bad).expect("write");
    for args in [vec!["info"], vec!["analyze"]] {
        let out = Command::new(rtwhy())
            .args(&args)
            .arg(&path)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // info lists warnings in its output, analyze on stderr.
        let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
        assert!(
            all.contains("cannot split type and name"),
            "{args:?}: {all}"
        );
    }
}
