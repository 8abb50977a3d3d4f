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

#[test]
fn version_names_the_git_revision() {
    let out = Command::new(rtwhy())
        .arg("--version")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // The sources are a git checkout here, so the revision must be known.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(rtwhy_tests::workspace())
        .output()
        .expect("git runs");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    assert_eq!(head.len(), 12, "git rev-parse gave {head:?}");
    assert!(
        text.starts_with(&format!("rtwhy {} (git {head}", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
}

#[test]
fn generate_writes_a_man_page_per_subcommand_and_completions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(rtwhy())
        .args(["generate", "man", "--out"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = Command::new(rtwhy()).arg("--help").output().expect("runs");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    // Every subcommand `rtwhy --help` lists has its page, and the page documents its flags.
    let subs: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| *s != "help")
        .collect();
    assert!(
        subs.contains(&"record") && subs.contains(&"generate"),
        "{help}"
    );
    for sub in &subs {
        let page = std::fs::read_to_string(dir.path().join(format!("rtwhy-{sub}.1")))
            .unwrap_or_else(|e| panic!("rtwhy-{sub}.1: {e}"));
        assert!(
            page.contains(&format!(".TH rtwhy-{sub} 1")),
            "rtwhy-{sub}.1:\n{page}"
        );
    }
    let record = std::fs::read_to_string(dir.path().join("rtwhy-record.1")).expect("page");
    assert!(record.contains("\\-\\-threshold"), "{record}");
    assert!(dir.path().join("rtwhy.1").exists());

    let out = Command::new(rtwhy())
        .args(["generate", "completions", "-o"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for name in ["rtwhy.bash", "_rtwhy", "rtwhy.fish"] {
        let text = std::fs::read_to_string(dir.path().join(name)).expect(name);
        assert!(
            text.contains("threshold") && text.contains("record"),
            "{name}"
        );
    }
    // bash parses its script.
    let bash = Command::new("bash")
        .arg("-n")
        .arg(dir.path().join("rtwhy.bash"))
        .status()
        .expect("bash runs");
    assert!(bash.success());
}
