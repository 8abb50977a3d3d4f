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
    let commands: [&[&str]; 8] = [
        &["dump", "--raw", dat],
        &["info", dat],
        &["info", "--format", "json", dat],
        &["analyze", dat],
        &["analyze", "--format", "json", dat],
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

const BTF: &[u8] = &[0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0, 0, 0, 0];
const LAST_BOOT: &[u8] =
    b"Offset: 10c00000\nffffffffc00ca000 usb_serial_simple\nffffffffc008b000 bfq\n\0";
const MODULES: &[u8] = b"bfq 106496 1 - Live 0x0000000000000000\nusbserial 61440 1 usb_serial_simple, Live 0x0000000000000000\n\0";

/// `rtwhy info` on `path`: exit 0, the three trace-cmd 3.4 options in its notes, and the
/// same event total as `orig`.
fn check_newer_options(path: &std::path::Path, orig: &std::path::Path) {
    let v = info_json(path);
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    let has = |what: &str| notes.iter().any(|n| n.contains(what));
    assert!(
        has("BTF_FILE (option 23)") && has("kernel BTF"),
        "{notes:?}"
    );
    assert!(
        has("LAST_BOOT_INFO (option 24)") && has("\"Offset: 10c00000\", 2 module lines"),
        "{notes:?}"
    );
    assert!(
        has("MODULES_FILE (option 25)") && has("2 loaded modules"),
        "{notes:?}"
    );
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["events"]["total"], info_json(orig)["events"]["total"]);
    let text = Command::new(rtwhy())
        .arg("info")
        .arg(path)
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&text.stdout);
    assert_eq!(out.matches("\nnote:").count(), 3, "{out}");
}

/// trace-cmd 3.4 writes options 23 (BTF_FILE), 24 (LAST_BOOT_INFO) and 25
/// (MODULES_FILE). A v6 file written by rtwhy's writer carries them inline in its
/// options section: the reader notes each and reads every event.
#[test]
fn trace_cmd_3_4_options_in_a_v6_file_are_noted_not_fatal() {
    let orig = wild_corpus().join("bengo-i686-sched-fifo.dat");
    let file = rtwhy_decode::tracedat::TraceFile::open(&orig).expect("corpus");
    let mut b = rtwhy_decode::tracedat::TraceBuilder::like(file.meta(), file.meta().page_size);
    let w = b.writer_mut();
    w.add_option(23, BTF.to_vec());
    w.add_option(24, LAST_BOOT.to_vec());
    w.add_option(25, MODULES.to_vec());
    let mut s = file.records().expect("records");
    while let Some(r) = s.next_record().expect("record") {
        b.push(r.cpu, r.ts, r.data).expect("push");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("newer-options-v6.dat");
    let mut out = Vec::new();
    b.finish(&mut out).expect("write");
    std::fs::write(&path, out).expect("write");
    check_newer_options(&path, &orig);
}

/// The same options in a version 7 file, as trace-cmd writes large contents there: the
/// options pointing to sections of their own id (BTF and modules; the modules section
/// zstd-compressed) and LAST_BOOT_INFO inline. They are appended to a file trace-cmd
/// wrote, in a further options section the last DONE option now points to.
#[test]
fn trace_cmd_3_4_sections_in_a_v7_file_are_noted_not_fatal() {
    let orig = wild_corpus().join("lanhaocoder-x86-v7-zstd.dat");
    let mut b = std::fs::read(&orig).expect("corpus");
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    // Header: magic, "7\0", endian, long size, page size, compression name and version.
    let name_end = 18 + b[18..].iter().position(|c| *c == 0).expect("name");
    let ver_end = name_end
        + 1
        + b[name_end + 1..]
            .iter()
            .position(|c| *c == 0)
            .expect("version");
    let mut next = u64_at(&b, ver_end + 1) as usize;
    // Follow the (uncompressed) options sections to the last DONE option.
    let done_at = loop {
        assert_eq!(
            (u16_at(&b, next), u16_at(&b, next + 2)),
            (0, 0),
            "options section"
        );
        let end = next + 16 + u64_at(&b, next + 8) as usize;
        let mut at = next + 16;
        let mut done = None;
        while at < end {
            let (id, size) = (u16_at(&b, at), u32_at(&b, at + 2) as usize);
            if id == 0 {
                done = Some(at + 6);
                break;
            }
            at += 6 + size;
        }
        let done = done.expect("DONE option");
        match u64_at(&b, done) {
            0 => break done,
            n => next = n as usize,
        }
    };
    let section = |b: &mut Vec<u8>, id: u16, flags: u16, content: &[u8]| -> u64 {
        let at = b.len() as u64;
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(content.len() as u64).to_le_bytes());
        b.extend_from_slice(content);
        at
    };
    let btf_at = section(&mut b, 23, 0, BTF);
    // A compressed section: compressed size, uncompressed size, zstd frame.
    let mut zstd = Vec::new();
    let mut frame =
        ruzstd::encoding::compress_to_vec(MODULES, ruzstd::encoding::CompressionLevel::Fastest);
    zstd.extend_from_slice(&(frame.len() as u32).to_le_bytes());
    zstd.extend_from_slice(&(MODULES.len() as u32).to_le_bytes());
    zstd.append(&mut frame);
    let modules_at = section(&mut b, 25, 1, &zstd);
    let mut opts = Vec::new();
    let mut option = |id: u16, data: &[u8]| {
        opts.extend_from_slice(&id.to_le_bytes());
        opts.extend_from_slice(&(data.len() as u32).to_le_bytes());
        opts.extend_from_slice(data);
    };
    option(23, &btf_at.to_le_bytes());
    option(24, LAST_BOOT);
    option(25, &modules_at.to_le_bytes());
    option(0, &0u64.to_le_bytes());
    let opts_at = section(&mut b, 0, 0, &opts);
    b[done_at..done_at + 8].copy_from_slice(&opts_at.to_le_bytes());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("newer-sections-v7.dat");
    std::fs::write(&path, &b).expect("write");
    check_newer_options(&path, &orig);
}

/// Runs `rtwhy ARGS` with `input` on standard input.
fn with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(rtwhy())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    // Written from a thread: a reader that fails early must not leave this one blocked.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("waits");
    let _ = writer.join();
    out
}

/// Issue 35: `trace-cmd report | rtwhy analyze -` said `cannot open -`, and `/dev/stdin`
/// "no events at all" (the pipe was read once to recognise it, and was empty after).
/// Every reader of a trace takes `-`: report text and a streamed trace.dat alike, with
/// the same result as from the file, and names it `<stdin>`.
#[test]
fn dash_reads_report_text_and_trace_dat_from_stdin() {
    let dat = wild_corpus().join("hebel23-wega-armv7-irq.dat");
    let text = rtwhy_tests::oracle(&dat, "report").expect("oracle text");
    let bytes = std::fs::read(&dat).expect("trace");
    let from_file = |args: &[&str], path: &std::path::Path| {
        Command::new(rtwhy())
            .args(args)
            .arg(path)
            .output()
            .expect("runs")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let pasted = dir.path().join("pasted.txt");
    std::fs::write(&pasted, &text).expect("write");
    for (input, file) in [(text.as_bytes(), pasted.as_path()), (&bytes[..], &dat)] {
        for args in [
            &["analyze", "--format", "json"][..],
            &["info", "--format", "json"],
            &["report", "--format", "text"],
        ] {
            let piped = with_stdin(&[args, &["-"]].concat(), input);
            let direct = from_file(args, file);
            assert_eq!(
                piped.status.code(),
                direct.status.code(),
                "{args:?}: {}",
                String::from_utf8_lossy(&piped.stderr)
            );
            let shown = file.display().to_string();
            let expected = String::from_utf8_lossy(&direct.stdout).replace(&shown, "<stdin>");
            assert_eq!(String::from_utf8_lossy(&piped.stdout), expected, "{args:?}");
        }
    }
    let dump = with_stdin(&["dump", "-"], &bytes);
    assert!(dump.status.success());
    assert_eq!(dump.stdout, from_file(&["dump"], &dat).stdout);
    // convert needs a name for what it writes; with one it writes the Perfetto trace.
    let out = dir.path().join("x.perfetto-trace");
    let convert = with_stdin(&["convert", "-"], &bytes);
    assert_eq!(convert.status.code(), Some(2));
    let err = String::from_utf8_lossy(&convert.stderr);
    assert!(err.contains("<stdin>") && err.contains("--out"), "{err}");
    let convert = with_stdin(
        &["convert", "--out", out.to_str().expect("utf-8"), "-"],
        &bytes,
    );
    assert!(
        convert.status.success(),
        "{}",
        String::from_utf8_lossy(&convert.stderr)
    );
    assert!(out.metadata().is_ok_and(|m| m.len() > 0));
}

/// Issue 35: what is not a trace, on standard input, is one line naming `<stdin>`,
/// never the temporary copy; an empty pipe too.
#[test]
fn junk_or_nothing_on_stdin_is_one_line_naming_stdin() {
    for input in [&b""[..], b"\x00\x01 not a trace\n"] {
        for cmd in ["analyze", "info", "dump", "report"] {
            let out = with_stdin(&[cmd, "-"], input);
            assert_eq!(out.status.code(), Some(2), "{cmd}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{cmd}: {err}");
            assert!(err.contains("<stdin>"), "{cmd}: {err}");
            assert!(!err.contains("/proc/self/fd"), "{cmd}: {err}");
        }
    }
}
