//! `rtwhy record` on the live machine: real tracefs, real BPF, real cyclictest, real
//! loads on CPU 1 (never a busy loop on CPU 0; every load bounded in time).
//!
//! Needs root, tracefs, cyclictest, trace-cmd and a C compiler; under `CI=true` a missing
//! one is a failure. The tests take turns (one lock): they share CPU 1 and tracefs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rtwhy_tests::preconditions;
use rtwhy_tests::{must_have_everything, require, rtwhy, workspace};
use serde_json::Value;

static LIVE: Mutex<()> = Mutex::new(());
const TRACEFS: &str = "/sys/kernel/tracing";

/// Sends signal `sig` (`INT`, `HUP`, ...) to `pid` with the shell's own `kill`: a clean
/// root (the README's `fresh-check`) has no procps, so no /bin/kill.
fn signal(pid: u32, sig: &str) {
    let sent = Command::new("sh")
        .args(["-c", &format!("kill -{sig} {pid}")])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -{sig} {pid} failed");
}

/// Whether the live tests can run here; fails under CI when they cannot.
fn live() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let tracefs = Path::new(TRACEFS).join("instances").is_dir();
    if !root || !tracefs {
        assert!(
            !must_have_everything(),
            "live recording tests need root and tracefs at {TRACEFS} under CI=true"
        );
        eprintln!("skipping: not root or no tracefs");
        return false;
    }
    if !(require("cyclictest") && require("trace-cmd") && require("cc")) {
        return false;
    }
    // Built before a test starts its load: the first call builds the binary (a minute in
    // a fresh checkout, whose workspace test build unifies features differently), and a
    // load started before it had ended before the recording began (CI: no breach at all
    // in the first live test).
    rtwhy();
    true
}

/// fixtures/lab/spin.c, compiled once into a temporary directory.
fn spin_binary(dir: &Path) -> PathBuf {
    let out = dir.join("spin");
    let lab = workspace().join("fixtures/lab");
    let st = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&out)
        .arg(lab.join("spin.c"))
        .status()
        .expect("cc");
    assert!(st.success(), "compiling fixtures/lab/spin.c failed");
    out
}

/// A bounded load: killed when dropped, whatever happened.
struct Load(Child);

impl Drop for Load {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `spin CPU fifo PRIO TOTAL_MS SPIN_US PERIOD_US` after `delay_ms`, on CPU 1 only. The
/// shell execs spin, so killing the child kills spin; spin bounds itself (<= 10 s).
fn spinner(
    bin: &Path,
    prio: u32,
    total_ms: u32,
    spin_us: u32,
    period_us: u32,
    delay_ms: u32,
) -> Load {
    let script = format!(
        "sleep {}; exec '{}' 1 fifo {prio} {total_ms} {spin_us} {period_us}",
        f64::from(delay_ms) / 1000.0,
        bin.display()
    );
    Load(
        Command::new("sh")
            .args(["-c", &script])
            .env("RTWHY_LAB_MARKER", "/dev/null")
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn spinner"),
    )
}

/// Everything of tracefs that a recorder could change: top-level settings, every
/// option, and the list of instances.
fn tracefs_state() -> Vec<(String, String)> {
    let root = Path::new(TRACEFS);
    let mut out = Vec::new();
    for f in [
        "tracing_on",
        "current_tracer",
        "trace_clock",
        "buffer_size_kb",
        "tracing_cpumask",
        "set_event",
        "set_event_pid",
        "tracing_thresh",
        "events/enable",
    ] {
        if let Ok(v) = std::fs::read_to_string(root.join(f)) {
            out.push((f.to_string(), v));
        }
    }
    let mut options: Vec<_> = std::fs::read_dir(root.join("options"))
        .expect("options")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    options.sort();
    for o in options {
        if let Ok(v) = std::fs::read_to_string(&o) {
            out.push((o.display().to_string(), v));
        }
    }
    let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
        .expect("instances")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    inst.sort();
    out.push(("instances".into(), inst.join(",")));
    out
}

fn run(args: &[&str]) -> Output {
    Command::new(rtwhy())
        .args(args)
        .output()
        .expect("run rtwhy")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn session(dir: &Path) -> Value {
    let s = std::fs::read_to_string(dir.join("session.json")).expect("session.json");
    serde_json::from_str(&s).expect("session.json is JSON")
}

/// `rtwhy record FLAGS --recorder-cpus 0 --out OUT -- cyclictest` measuring one FIFO 80
/// thread on CPU 1 every 1 ms for `seconds`.
fn record_cyclictest(flags: &[&str], out: &Path, seconds: &str) -> Output {
    run(&record_cyclictest_args(flags, out, seconds))
}

/// The arguments of [`record_cyclictest`], for a test that starts the recorder itself.
fn record_cyclictest_args<'a>(flags: &[&'a str], out: &'a Path, seconds: &'a str) -> Vec<&'a str> {
    let mut args = vec!["record"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--recorder-cpus", "0", "--out", out.to_str().unwrap(), "--"]);
    args.extend_from_slice(&cyclictest(seconds));
    args
}

/// cyclictest measuring one FIFO 80 thread on CPU 1 every 1 ms for `seconds`.
fn cyclictest(seconds: &str) -> [&str; 13] {
    [
        "cyclictest",
        "-m",
        "-q",
        "-p",
        "80",
        "-i",
        "1000",
        "-a",
        "1",
        "-t",
        "1",
        "-D",
        seconds,
    ]
}

/// cyclictest's own maximum (us) from its final `T: 0 (...) ... Max: N` line.
fn cyclictest_max(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("T:") && l.contains("Max:"))?
        .split("Max:")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The independent re-check of tests/preconditions.rs over every capture recorded under
/// `dir`, analysed with `args`: prints the verdict distribution, fails on any verdict
/// without its preconditions.
fn verdicts_have_their_preconditions(dir: &Path, args: &[&str]) {
    let r = recheck(dir, args);
    assert!(r.failures.is_empty(), "{}", r.failures.join("\n"));
}

fn recheck(dir: &Path, args: &[&str]) -> preconditions::Report {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    preconditions::check_captures(dir, &args)
}

/// Every capture opens in trace-cmd and in `rtwhy analyze`, and re-analysis names the
/// same cause as the live diagnosis; every verdict in them has its preconditions.
/// Returns the causes of the captures.
fn check_captures(dir: &Path, threshold: &str) -> Vec<String> {
    let s = session(dir);
    let spikes = s["spikes"].as_array().expect("spikes").clone();
    assert!(!spikes.is_empty(), "no capture in {}", dir.display());
    let mut causes = Vec::new();
    for sp in &spikes {
        let dat = dir.join(sp["file"].as_str().expect("file"));
        assert!(dir.join(dat.with_extension("txt")).exists());
        let report = Command::new("trace-cmd")
            .arg("report")
            .arg(&dat)
            .output()
            .expect("trace-cmd");
        assert!(
            report.status.success(),
            "trace-cmd report {}",
            dat.display()
        );
        let rep = String::from_utf8_lossy(&report.stdout);
        assert!(
            rep.contains("rtwhy-fact: kernel.release="),
            "facts in {}",
            dat.display()
        );
        assert!(rep.contains("sched_switch"), "events in {}", dat.display());
        let tid = sp["tid"].as_i64().expect("tid").to_string();
        let o = run(&[
            "analyze",
            "--format",
            "json",
            "-t",
            threshold,
            "--tid",
            &tid,
            dat.to_str().unwrap(),
        ]);
        let again: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", text(&o)));
        let live: Value = serde_json::from_str(
            &std::fs::read_to_string(dat.with_extension("json")).expect("spike json"),
        )
        .expect("json");
        assert_eq!(
            again["spikes"],
            live["spikes"],
            "re-analysis of {} differs",
            dat.display()
        );
        // The session lists the verdict's culprit and time as the capture's own
        // analysis gives them for the spike it was taken for.
        if sp["cause"].is_string() && sp["cause"] != "unknown" {
            let own = live["spikes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|x| x["end"] == sp["end_ns"] && x["victim"]["tid"] == sp["tid"])
                .unwrap_or_else(|| panic!("no spike ends at end_ns: {sp}"));
            assert!(sp["culprit"].is_string(), "{sp}");
            assert_eq!(sp["culprit"], own["primary"]["culprit"], "{sp}");
        }
        causes.push(sp["cause"].as_str().unwrap_or("undiagnosed").to_string());
    }
    verdicts_have_their_preconditions(dir, &["--threshold", threshold]);
    causes
}

#[test]
fn rt_throttling_under_record_is_named_and_agrees_with_cyclictest() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let out = tmp.path().join("rec");
    // A FIFO 70 busy loop on CPU 1 for 3.2 s (below cyclictest's FIFO 80): after 950 ms
    // of RT time in a period the RT class on CPU 1 is throttled for ~50 ms.
    let _load = spinner(&spin, 70, 3200, 0, 0, 300);
    let o = record_cyclictest(&["-t", "1ms", "--max-spikes", "20"], &out, "4");
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let causes = check_captures(&out, "1ms");
    assert!(
        causes.iter().any(|c| c == "rt_throttling"),
        "{causes:?}\n{all}"
    );
    // rtwhy's worst for cyclictest's thread and cyclictest's own Max agree (cyclictest
    // reads its clock after it runs, so it is a little higher).
    let s = session(&out);
    let worst_us = s["session"]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["comm"] == "cyclictest")
        .map(|t| t["worst_ns"].as_u64().unwrap() / 1000)
        .max()
        .expect("a cyclictest thread");
    // cyclictest ran to its end (-D 4) and printed its own maximum.
    let max = cyclictest_max(&String::from_utf8_lossy(&o.stdout)).expect("cyclictest's Max");
    let tol = 100.max(max / 20);
    assert!(
        max > 20_000,
        "the throttling gap should be ~50 ms: Max {max} us\n{all}"
    );
    assert!(
        worst_us.abs_diff(max) <= tol,
        "rtwhy worst {worst_us} us vs cyclictest Max {max} us\n{all}"
    );
}

/// Whether a FIFO spinner's preemptions are among the captures' causes and the most
/// common of them. Other work on CPU 1 (the test suite itself, kernel threads) may be
/// late too. Spikes the VM itself caused (hwlat: a late timer with the whole machine
/// silent, which this host does to a spinning vCPU when it is busy) are left out of the
/// count: they are true verdicts about something else.
fn preemption_leads(causes: &[String]) -> bool {
    let n = causes.iter().filter(|c| *c == "preemption").count();
    let most = causes
        .iter()
        .filter(|c| *c != "hwlat")
        .map(|c| causes.iter().filter(|d| *d == c).count())
        .max()
        .unwrap_or(0);
    n > 0 && n == most
}

#[test]
fn preemption_by_a_higher_priority_task_is_named_with_bpf_and_with_the_fallback() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    for detector in ["bpf", "tracefs"] {
        let out = tmp.path().join(detector);
        // FIFO 90 spins 300 us every 10.3 ms on CPU 1 for 3 s: a period that is not a
        // multiple of cyclictest's 1 ms, so the two drift through every phase.
        let _load = spinner(&spin, 90, 3000, 300, 10_300, 0);
        let o = record_cyclictest(
            // 12, not 4: the VM's own stalls (the host descheduling a spinning vCPU)
            // took all of 4 captures in some runs.
            &["-t", "150us", "--max-spikes", "12", "--detector", detector],
            &out,
            "3",
        );
        let all = text(&o);
        assert_eq!(o.status.code(), Some(1), "{detector}: {all}");
        let causes = check_captures(&out, "150us");
        assert!(preemption_leads(&causes), "{detector}: {causes:?}\n{all}");
        let s = session(&out);
        assert_eq!(s["session"]["armed"]["detector"], detector, "{all}");
        let first = &s["session"]["captures"][0]["trigger"]["record"];
        assert_eq!(first["detector"], detector);
        assert_eq!(first["cpu"], 1);
    }
}

#[test]
fn the_built_in_probe_records_without_a_command() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let out = tmp.path().join("probe");
    let _load = spinner(&spin, 95, 2500, 300, 10_300, 0);
    let o = run(&[
        "record",
        "-t",
        "150us",
        "--probe-cpus",
        "1",
        "--duration",
        // The probe must run long enough to count its loops: a burst of the VM's own
        // stalls can reach a low --max-spikes within 0.1 s.
        "2s",
        "--max-spikes",
        "100",
        "--recorder-cpus",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let causes = check_captures(&out, "150us");
    assert!(
        causes.iter().any(|c| c == "preemption"),
        "{causes:?}\n{all}"
    );
    let s = session(&out);
    let probe = s["session"]["probe"].as_array().expect("probe stats");
    assert_eq!(probe.len(), 1);
    assert!(probe[0]["loops"].as_u64().unwrap() > 100, "{all}");
}

/// Whether this kernel offers the timerlat tracer.
fn has_timerlat() -> bool {
    std::fs::read_to_string(Path::new(TRACEFS).join("available_tracers"))
        .is_ok_and(|t| t.split_whitespace().any(|w| w == "timerlat"))
}

#[test]
fn without_timerlat_auto_takes_rtwhys_probe_and_a_forced_timerlat_is_one_line() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    if has_timerlat() {
        // The guest check (scripts/rt-guest-timerlat.sh) covers kernels with it.
        eprintln!("skipping: this kernel has the timerlat tracer");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let before = tracefs_state();
    let forced = tmp.path().join("forced");
    let o = run(&[
        "record",
        "--probe",
        "timerlat",
        "--probe-cpus",
        "1",
        "--duration",
        "1s",
        "--out",
        forced.to_str().unwrap(),
    ]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{all}");
    assert!(
        err.contains("--probe timerlat") && err.contains("no timerlat tracer"),
        "{all}"
    );
    assert_eq!(
        tracefs_state(),
        before,
        "after the refused --probe timerlat"
    );

    let auto = tmp.path().join("auto");
    let o = run(&[
        "record",
        "-t",
        "10ms",
        "--probe-cpus",
        "1",
        "--duration",
        "1s",
        "--recorder-cpus",
        "0",
        "--out",
        auto.to_str().unwrap(),
    ]);
    let all = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{all}");
    assert!(all.contains("probe: rtwhy,"), "{all}");
    let s = session(&auto);
    assert_eq!(s["session"]["armed"]["probe"], "rtwhy", "{all}");
    let probe = s["session"]["probe"].as_array().expect("probe stats");
    assert_eq!(probe.len(), 1, "{all}");
    assert!(probe[0]["loops"].as_u64().unwrap() > 0, "{all}");
    assert_eq!(tracefs_state(), before, "after the rtwhy-probe session");
}

fn wait_for_instance(pid: u32) -> bool {
    let dir = Path::new(TRACEFS)
        .join("instances")
        .join(format!("rtwhy-{pid}"));
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if dir.is_dir() {
            // Armed shortly after the instance appears.
            std::thread::sleep(Duration::from_millis(500));
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn tracefs_is_left_exactly_as_found_after_exit_ctrl_c_crash_and_sigkill() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let before = tracefs_state();
    let out = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();

    // Normal exit of the command.
    let o = run(&["record", "--out", &out("a"), "--", "sleep", "0.3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(tracefs_state(), before, "after a normal exit");

    // A crashing command: its signal comes back as 128 + SIGSEGV.
    let o = run(&[
        "record",
        "--out",
        &out("b"),
        "--",
        "sh",
        "-c",
        "sleep 0.3; kill -SEGV $$",
    ]);
    assert_eq!(o.status.code(), Some(139), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("killed by signal 11"));
    assert_eq!(tracefs_state(), before, "after a crashing command");

    // Ctrl-C (SIGINT to the recorder) and SIGTERM.
    for sig in ["INT", "TERM"] {
        let child = Command::new(rtwhy())
            .args(["record", "--out", &out(sig), "--", "sleep", "30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(wait_for_instance(child.id()), "no instance appeared");
        let t = Instant::now();
        signal(child.id(), sig);
        let o = child.wait_with_output().unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "slow to stop on SIG{sig}"
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("rtwhy record:"),
            "{}",
            text(&o)
        );
        assert_eq!(tracefs_state(), before, "after SIG{sig}");
        assert!(Path::new(&out(sig)).join("session.json").exists());
    }

    // SIGKILL leaves the instance behind; `rtwhy cleanup` removes it, and so does the
    // next recording.
    for how in ["cleanup", "next run"] {
        let child = Command::new(rtwhy())
            .args(["record", "--out", &out("k"), "--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(wait_for_instance(pid));
        let mut child = child;
        child.kill().unwrap();
        child.wait().unwrap();
        let stale = Path::new(TRACEFS)
            .join("instances")
            .join(format!("rtwhy-{pid}"));
        assert!(stale.is_dir(), "SIGKILL should leave the instance");
        if how == "cleanup" {
            let o = run(&["cleanup"]);
            assert!(o.status.success(), "{}", text(&o));
            assert!(
                String::from_utf8_lossy(&o.stdout).contains(&format!("rtwhy-{pid}")),
                "{}",
                text(&o)
            );
        } else {
            let o = run(&["record", "--out", &out("n"), "--", "true"]);
            assert!(
                String::from_utf8_lossy(&o.stderr)
                    .contains(&format!("removed tracefs instance rtwhy-{pid}")),
                "{}",
                text(&o)
            );
        }
        assert_eq!(tracefs_state(), before, "after SIGKILL and {how}");
    }
}

#[test]
fn bad_setups_get_one_line_and_exit_2() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let before = tracefs_state();
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "record".into(),
                "--out".into(),
                file.join("sub").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            "Not a directory",
        ),
        (
            vec![
                "record".into(),
                "--out".into(),
                tmp.path().join("x").display().to_string(),
                "--".into(),
                "no-such-command-rtwhy".into(),
            ],
            "cannot start no-such-command-rtwhy",
        ),
        (
            vec![
                "record".into(),
                "--marker".into(),
                "(".into(),
                "--".into(),
                "true".into(),
            ],
            "not a regular expression",
        ),
        (
            vec![
                "record".into(),
                "--events".into(),
                "nonsense".into(),
                "--out".into(),
                tmp.path().join("y").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            "is not SYSTEM:EVENT",
        ),
        (
            vec![
                "record".into(),
                "--disk-budget".into(),
                "1M".into(),
                "--out".into(),
                tmp.path().join("b").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            "smaller than one capture can be",
        ),
        (
            vec!["summary".into(), tmp.path().display().to_string()],
            "session.json",
        ),
    ];
    for (args, expect) in cases {
        let o = Command::new(rtwhy()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(err.contains(expect), "{args:?}: {}", text(&o));
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{}",
            text(&o)
        );
    }
    // A missing event is a warning, not an error.
    let o = run(&[
        "record",
        "--events",
        "nosuchsystem:nosuchevent",
        "--out",
        tmp.path().join("z").to_str().unwrap(),
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("does not exist on this kernel"));
    assert_eq!(tracefs_state(), before);
}

#[test]
fn without_root_record_says_so_in_one_line() {
    let runuser = ["/usr/sbin/runuser", "/sbin/runuser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(runuser) = runuser else {
        assert!(!must_have_everything(), "runuser (util-linux) is missing");
        eprintln!("skipping: no runuser");
        return;
    };
    // `nobody` runs a copy of the binary in a directory of its own that everyone may
    // enter: the checkout (and so the build directory) may sit under a directory only
    // root can enter, as /root and `mktemp -d` are.
    let bin_dir = tempfile::Builder::new()
        .prefix("rtwhy-nobody.")
        .tempdir_in("/tmp")
        .unwrap();
    let bin = bin_dir.path().join("rtwhy");
    std::fs::copy(rtwhy(), &bin).unwrap();
    for p in [bin_dir.path(), bin.as_path()] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let out_dir = tempfile::Builder::new()
        .prefix("rtwhy-nobody-out.")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(
        out_dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let o = Command::new(runuser)
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args(["record", "--out"])
        .arg(out_dir.path().join("r"))
        .args(["--", "true"])
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("needs root"), "{}", text(&o));
    assert_eq!(err.lines().count(), 1, "{}", text(&o));
}

#[test]
fn an_application_marker_matching_marker_is_a_breach() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("m");
    // The application writes the top-level trace_marker, as cyclictest --tracemark does;
    // the recorder's instances copy it.
    let app = format!(
        "sleep 0.5; echo 'app: deadline missed by 312 us' > {TRACEFS}/trace_marker; sleep 0.5"
    );
    let o = run(&[
        "record",
        "--marker",
        "deadline missed",
        "--recorder-cpus",
        "0",
        "--out",
        out.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &app,
    ]);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let s = session(&out);
    let trig = &s["session"]["captures"][0]["trigger"];
    assert_eq!(trig["kind"], "marker", "{all}");
    assert_eq!(trig["text"], "app: deadline missed by 312 us");
    let dat = out.join("spike-001.dat");
    let rep = Command::new("trace-cmd")
        .arg("report")
        .arg(&dat)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&rep.stdout).contains("app: deadline missed by 312 us"));
    verdicts_have_their_preconditions(&out, &[]);
}

/// An application marker that carries its number (`--marker` with a group named for the
/// unit): a control loop timing its own cycle (`rtwhy lab preemption --cycle`: lab-cycle,
/// FIFO 80, 1 ms of work every 5 ms, preempted by lab-spin's 2 ms bursts, inside its work
/// as well as before it) is recorded; each capture a marker set off has one spike whose
/// latency is the loop's own number, ending at the marker, and so does a later `rtwhy
/// analyze` of the capture given no `--marker` (the capture carries the expression).
#[test]
fn an_application_marker_with_its_number_is_its_spike() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("m");
    let o = run(&[
        "record",
        "--marker",
        "cycle: response (?P<us>[0-9]+) us",
        // The detector's own breaches are not what this test is about: only the
        // loop's markers set off captures.
        "--threshold",
        "500ms",
        "--max-spikes",
        "3",
        // Captures half a second apart, so each holds its own history: a capture set
        // off while the previous one was still being read begins after its trigger
        // (measured: 3.7 ms after its marker, with no spike in it).
        "--min-gap",
        "500ms",
        "--recorder-cpus",
        "0",
        "--out",
        out.to_str().unwrap(),
        "--",
        rtwhy().to_str().unwrap(),
        "lab",
        "preemption",
        "--cpu",
        "1",
        "--for",
        "2s",
        "--cycle",
        "1ms",
    ]);
    let all = text(&o);
    let s = session(&out);
    let captures = s["session"]["captures"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let marked: Vec<&Value> = captures
        .iter()
        .filter(|c| c["trigger"]["kind"] == "marker")
        .collect();
    assert!(
        !marked.is_empty(),
        "no capture set off by the loop's marker\n{all}"
    );
    for c in marked {
        let said = c["trigger"]["text"].as_str().unwrap_or_default();
        let us: u64 = said
            .split("response ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{said}"));
        let file = PathBuf::from(c["path"].as_str().unwrap_or_default());
        let json = file.with_extension("json");
        let docs = [
            serde_json::from_str::<Value>(&std::fs::read_to_string(&json).unwrap()).unwrap(),
            {
                let a = Command::new(rtwhy())
                    .args(["analyze", "--format", "json", "--threshold", "500ms"])
                    .arg(&file)
                    .output()
                    .unwrap();
                serde_json::from_slice(&a.stdout).unwrap_or_else(|_| panic!("{}", text(&a)))
            },
        ];
        for doc in docs {
            let spikes: Vec<&Value> = doc["spikes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["source"]["kind"] == "tool_marker" && s["source"]["text"] == said)
                .collect();
            // Its marker's whole text names it: two cycles can report the same response
            // (one run had cycles 262 and 266 both at 3041 us), their cycle numbers differ.
            assert_eq!(spikes.len(), 1, "{said} in {}\n{doc}", file.display());
            assert_eq!(spikes[0]["source"]["reported_ns"], us * 1000, "{said}");
            let lat = spikes[0]["latency_ns"].as_u64().unwrap_or(0);
            assert!(lat.abs_diff(us * 1000) <= 100_000, "{said}: {lat} ns");
            // The writer's thread, by id: its name needs a scheduling event of it in
            // the capture, which a capture can lack (its spike is then `:TID`).
            assert_eq!(spikes[0]["victim"]["tid"], c["trigger"]["tid"], "{said}");
        }
    }
    verdicts_have_their_preconditions(&out, &["--threshold", "500ms"]);
}

const RPS_MASK: &str = "/sys/class/net/lo/queues/rx-0/rps_cpus";

/// Threads of loads or victims still alive (lab-*, cyclictest).
fn leftover_tasks() -> Vec<String> {
    let mut left = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        let comm = comm.trim();
        if comm.starts_with("lab-") || comm == "cyclictest" {
            left.push(format!("{} {comm}", e.file_name().to_string_lossy()));
        }
    }
    left
}

#[test]
fn selftest_names_every_cause_it_can_induce_here() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let before = tracefs_state();
    let rps = std::fs::read_to_string(RPS_MASK).unwrap();
    let keep = tempfile::tempdir().unwrap();
    let o = run(&[
        "selftest",
        "--cpu",
        "1",
        "--keep",
        keep.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let row = |s: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{s} ")))
            .unwrap_or_else(|| panic!("no row for {s}: {}", text(&o)))
            .to_string()
    };
    for s in [
        "rt_throttling",
        "preemption",
        "priority_inversion",
        "priority_inversion_preempted_first",
        "priority_inversion_nested",
        "lock_contention",
        "softirq",
        "kernel_nonpreemptible",
    ] {
        let row = row(s);
        assert!(row.contains(" pass"), "{s} did not pass here: {row}");
    }
    // The disk interrupt on this VM adds 10-20 us to a victim whose own idle exits
    // (halt exits) take 30-40 us: it is induced and judged (named on some attempts, on
    // none on others: 0 of 8 spikes once), and then, unless it passed, found not
    // inducible from a measurement of its handler's time weighed
    // against this CPU's measured noise (handler p99 16-31 us, noise p99 48-60 us: the
    // main part of 0.3-7% of the judged latency, measured 2026-11-26; the p99s alone
    // crossed once, in CI) with the numbers in the row. A FAIL is a failure: the
    // measurement said the interrupt can be the main part of most of it.
    let irq = row("irq_on_isolated_cpu");
    assert!(
        irq.contains(" pass")
            || (irq.contains("not inducible here: IRQ ")
                && irq.contains(" works p99 ")
                && irq.contains("wake-up noise (p99 ")
                && irq.contains("a pass needs more than 50%")),
        "{irq}\n{}",
        text(&o)
    );
    assert!(!stdout.contains(" FAIL"), "{}", text(&o));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // What this VM cannot do is said, with the reason.
    for (s, why) in [("hwlat", "SMI"), ("frequency_ramp", "no cpufreq")] {
        let row = stdout.lines().find(|l| l.starts_with(s)).unwrap();
        assert!(
            row.contains("not inducible here") && row.contains(why),
            "{row}"
        );
    }
    assert!(stdout.contains("BPF attach"), "{stdout}");
    assert_eq!(tracefs_state(), before, "tracefs changed by the selftest");
    assert_eq!(std::fs::read_to_string(RPS_MASK).unwrap(), rps);
    assert!(leftover_tasks().is_empty(), "{:?}", leftover_tasks());
    // Every verdict in every capture the selftest recorded has its preconditions: each
    // scenario's captures analysed as the selftest does (its threshold; the disk
    // scenario's CPU declared isolated), all threads.
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(keep.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        !dirs.is_empty(),
        "no capture kept in {}",
        keep.path().display()
    );
    let mut all = preconditions::Report::default();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let args: &[&str] = match name.split("-attempt").next().unwrap_or("") {
            "rt_throttling" => &["--threshold", "10ms"],
            "preemption" => &["--threshold", "150us"],
            "softirq" => &["--threshold", "400us"],
            "irq_on_isolated_cpu" => &["--threshold", "30us", "--isolated", "1"],
            "kernel_nonpreemptible" => &["--threshold", "250us"],
            _ => &["--threshold", "1ms"],
        };
        all.add(recheck(&d, args));
    }
    eprintln!(
        "selftest captures: {} verdicts re-checked, {:?}",
        all.checked, all.distribution
    );
    assert!(all.failures.is_empty(), "{}", all.failures.join("\n"));
}

/// The expectation is a cause whose preconditions cyclictest cannot meet (it never waits
/// for a lock): with `softirq`, this machine's own NET_RX now and then gave one spike that
/// cause, and the selftest's "at least one" criterion passed by chance.
#[test]
fn a_wrong_expectation_makes_the_selftest_fail() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let keep = tempfile::tempdir().unwrap();
    let o = run(&[
        "selftest",
        "--scenarios",
        "preemption",
        "--expect",
        "preemption=priority_inversion",
        "--attempts",
        "1",
        "--keep",
        keep.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let row = stdout
        .lines()
        .find(|l| l.starts_with("preemption "))
        .unwrap();
    assert!(row.contains("FAIL: diagnosed otherwise"), "{row}");
    assert!(
        row.contains("priority_inversion") && row.contains("preemption x"),
        "{row}"
    );
    verdicts_have_their_preconditions(keep.path(), &["--threshold", "150us"]);
}

#[test]
fn ctrl_c_in_the_selftest_stops_every_load_and_restores_every_setting() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let before = tracefs_state();
    let rps = std::fs::read_to_string(RPS_MASK).unwrap();
    let child = Command::new(rtwhy())
        .args(["selftest", "--scenarios", "softirq", "--attempts", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The load is running once the RPS mask has changed.
    let t = Instant::now();
    while std::fs::read_to_string(RPS_MASK).unwrap() == rps {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the softirq load never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("interrupted"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(RPS_MASK).unwrap(),
        rps,
        "RPS mask not restored"
    );
    assert_eq!(tracefs_state(), before, "tracefs changed");
    assert!(leftover_tasks().is_empty(), "{:?}", leftover_tasks());
    let journals: Vec<_> = std::fs::read_dir("/run/rtwhy")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(journals.is_empty(), "journal left: {journals:?}");
}

/// Files a writer left half-done (`.NAME.tmpPID`).
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

/// `rtwhy record`'s flags as an unattended recorder under a breach storm runs: every
/// capture kept until the disk budget says otherwise, one per 150 ms at most, small
/// flight buffers on two CPUs.
const UNATTENDED: &[&str] = &[
    "-t",
    "150us",
    "--max-spikes",
    "0",
    "--cpus",
    "0-1",
    "--min-gap",
    "150ms",
    "--buffer-kb",
    "1024",
    "--before",
    "100ms",
];

#[test]
fn an_unattended_session_stays_under_its_disk_budget_through_a_storm_and_sighup() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let out = tmp.path().join("unattended");
    let before = tracefs_state();
    // A storm: FIFO 90 spins 300 us every 2.3 ms on CPU 1 for 8 s, so cyclictest (FIFO 80,
    // 1 ms) breaches 150 us hundreds of times.
    let _load = spinner(&spin, 90, 8000, 300, 2300, 0);
    let budget: u64 = 6 << 20;
    let mut child = Command::new(rtwhy())
        .args(record_cyclictest_args(
            // Two CPUs of 1 MiB: the smallest budget allowed is 6 MiB (2 MiB + 4 MiB for
            // metadata) on any machine.
            &[UNATTENDED, &["--disk-budget", "6M"]].concat(),
            &out,
            "7",
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // SIGHUP in the middle: a checkpoint, not an end.
    std::thread::sleep(Duration::from_secs(4));
    signal(child.id(), "HUP");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended the session"
    );
    let rolling = session(&out);
    assert_eq!(rolling["state"], "recording", "{rolling}");
    let o = child.wait_with_output().unwrap();
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(all.contains("SIGHUP: recording for"), "{all}");

    let s = session(&out);
    assert_eq!(s["state"], "ended", "{all}");
    assert_eq!(s["schema"], "rtwhy.session/2");
    // The storm was limited, the budget held, and it had to delete captures to hold.
    assert!(
        s["session"]["breaches_rate_limited"].as_u64().unwrap() > 0,
        "{all}"
    );
    let on_disk = tree_bytes(&out);
    assert!(
        on_disk <= budget,
        "{on_disk} bytes in the directory > {budget}\n{all}"
    );
    assert!(s["disk"]["used_bytes"].as_u64().unwrap() <= budget, "{all}");
    let dropped = s["dropped"].as_object().unwrap();
    let deleted: u64 = dropped
        .values()
        .map(|d| d["captures"].as_u64().unwrap())
        .sum();
    assert!(
        deleted > 0,
        "the budget never had to delete a capture\n{all}"
    );
    assert_eq!(
        s["session"]["captures_total"].as_u64().unwrap(),
        s["spikes"].as_array().unwrap().len() as u64 + deleted,
        "{all}"
    );
    // The worst capture of each cause is kept: nothing deleted was worse.
    for (cause, d) in dropped {
        let kept_worst = s["spikes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|sp| sp["cause"] == cause.as_str())
            .filter_map(|sp| sp["latency_ns"].as_u64())
            .max();
        if let Some(k) = kept_worst {
            assert!(k >= d["worst_ns"].as_u64().unwrap(), "{cause}: {s}");
        }
    }
    assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
    check_captures(&out, "150us");
    assert_eq!(tracefs_state(), before);

    let o = run(&["summary", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let sum = String::from_utf8_lossy(&o.stdout);
    assert!(sum.contains("deleted") && sum.contains("budget"), "{sum}");
}

/// A tmpfs mounted for a test, unmounted whatever happens.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_skips_captures_and_leaves_nothing_half_written() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(st.success(), "cannot mount a tmpfs");
    let _mounted = Tmpfs(mnt.clone());
    // Fill it but for ~300 KiB: the first captures fit (about 180 KiB each here), the
    // next ones do not, whatever the load makes.
    std::fs::write(mnt.join("filler"), vec![0u8; 3960 << 10]).unwrap();
    let out = mnt.join("session");
    let before = tracefs_state();
    let _load = spinner(&spin, 90, 4000, 300, 10_300, 0);
    let o = record_cyclictest(
        &["-t", "150us", "--max-spikes", "0", "--buffer-kb", "1024"],
        &out,
        "3",
    );
    let all = text(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    // The disk filled: captures were skipped with a warning and the session went on to
    // its end (the command's); what was saved is whole.
    assert_eq!(
        err.matches("capture not saved, recording goes on").count(),
        1,
        "{all}"
    );
    assert!(
        err.lines()
            .filter(|l| l.starts_with("rtwhy: error"))
            .count()
            <= 1,
        "{all}"
    );
    assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
    for e in std::fs::read_dir(&out).unwrap().filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "dat") {
            let r = Command::new("trace-cmd")
                .arg("report")
                .arg(&p)
                .output()
                .unwrap();
            assert!(r.status.success(), "{} is damaged\n{all}", p.display());
        }
    }
    match o.status.code() {
        // session.json did not fit: one line saying so.
        Some(2) => assert!(err.contains("session.json"), "{all}"),
        // 0: no capture was saved at all; 1: some were.
        Some(0 | 1) => assert!(
            session(&out)["session"]["captures_failed"]
                .as_u64()
                .unwrap()
                > 0
        ),
        _ => panic!("{all}"),
    }
    assert_eq!(tracefs_state(), before);
}

/// cyclictest's own histogram (`-h`, `-q`): samples per whole microsecond, the samples
/// above its range, and its maximum (us).
struct CyclictestHistogram {
    buckets: Vec<(u64, u64)>,
    overflows: u64,
    total: u64,
    max_us: u64,
}

impl CyclictestHistogram {
    /// From cyclictest's stdout with one thread: `000005 001234` rows (latency in us,
    /// count) and `# Total:`, `# Max Latencies:`, `# Histogram Overflows:` lines.
    fn parse(stdout: &str) -> Option<CyclictestHistogram> {
        let field = |name: &str| -> Option<u64> {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(name))?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        };
        let buckets = stdout
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let us = f.next()?.parse().ok()?;
                let n = f.next()?.parse().ok()?;
                f.next().is_none().then_some((us, n))
            })
            .collect();
        Some(CyclictestHistogram {
            buckets,
            overflows: field("# Histogram Overflows:")?,
            total: field("# Total:")?,
            max_us: field("# Max Latencies:")?,
        })
    }

    /// Every sample: `# Total` counts those within the histogram's range only.
    fn samples(&self) -> u64 {
        self.total + self.overflows
    }

    /// The `q` quantile in us, ranked as rtwhy ranks it (the smallest latency with at
    /// least `q` of the samples at or below it); above the range: the maximum.
    fn quantile_us(&self, q: f64) -> u64 {
        let rank = ((q * self.samples() as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (us, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return *us;
            }
        }
        self.max_us
    }
}

/// How many of rtwhy's histogram buckets apart two latencies are.
fn buckets_apart(a_ns: u64, b_ns: u64) -> usize {
    rtwhy_model::bucket_of(a_ns).abs_diff(rtwhy_model::bucket_of(b_ns))
}

// Every sample cyclictest takes follows a wake-up of its thread (by its timer's interrupt;
// one that finds the expiry already past is woken by its own CPU while it runs, and
// counted so), so the counts agree exactly. Regression test: on the project's VMs the
// BPF detector counted 22-36 fewer of 5000 under load, large latencies among them (once
// cyclictest's maximum): the kernel ran none of its programs for wake-ups and switch-ins
// that happened while the machine's own agent threads held CPU 1 (ftrace had the
// wake-ups), and the detector now finds those at the thread's switch-out
// (`wakeups_unseen`).
#[test]
fn every_wakeup_of_cyclictest_is_in_rtwhys_histogram_as_in_its_own() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rec");
    // cyclictest's FIFO 80 thread on CPU 1, 5000 wake-ups at 1 kHz (enough for a 99th
    // percentile of 50 samples; -D 30 bounds it), its histogram to 10 ms in 1 us buckets;
    // the threshold (20 ms) keeps captures out of the way.
    let mut args = record_cyclictest_args(&["-t", "20ms"], &out, "30");
    args.extend_from_slice(&["-l", "5000", "-h", "10000"]);
    let witness = SleepWitness::start();
    let o = run(&args);
    let samples = witness.samples();
    let all = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{all}");
    let theirs = CyclictestHistogram::parse(&String::from_utf8_lossy(&o.stdout))
        .unwrap_or_else(|| panic!("no cyclictest histogram\n{all}"));
    assert_eq!(theirs.samples(), 5000, "{all}");

    let s = run(&["summary", "--format", "json", out.to_str().unwrap()]);
    assert_eq!(s.status.code(), Some(0), "{}", text(&s));
    let overview: Value = serde_json::from_slice(&s.stdout).expect("summary JSON");
    let thread = overview["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter(|t| t["comm"] == "cyclictest")
        .max_by_key(|t| t["wakeups"].as_u64())
        .unwrap_or_else(|| panic!("no cyclictest thread in {overview:#}"))
        .clone();
    let n = |k: &str| {
        thread[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {thread:#}"))
    };
    let mine = (n("p50_ns"), n("p99_ns"), n("max_ns"));
    let their = (
        theirs.quantile_us(0.5) * 1000,
        theirs.quantile_us(0.99) * 1000,
        theirs.max_us * 1000,
    );
    // What the witness bounds. Each wake-up rtwhy measures lasts from the expiry at least
    // to the latest of the sleep's events the witness saw before the switch-in. The time
    // only cyclictest counts lasts at most from there to the thread's next sleep. The
    // sleeps late enough (to their next sleep) to be cyclictest's maximum: how many had
    // no switch-in recorded, and the largest such span.
    let witnessed_max = samples.iter().map(|s| s.woken_ns() - s.expiry_ns).max();
    let could_be_max: Vec<&Sleep> = samples
        .iter()
        .filter(|s| s.next_sleep_ns + 1000 >= s.expiry_ns + their.2)
        .collect();
    let switch_in_hidden = could_be_max.iter().all(|s| s.switch_in_ns.is_none());
    let after_wakeup = could_be_max
        .iter()
        .map(|s| s.next_sleep_ns + 1000 - s.woken_ns())
        .max();
    let unseen = overview["wakeups_unseen"].as_u64().unwrap_or(0);
    let unseen_latest = overview["wakeups_unseen_latest_ns"].as_u64().unwrap_or(0);
    let report = format!(
        "rtwhy: {} wake-ups ({} found at the switch-out, none later than {unseen_latest} ns), p50/p99/max {mine:?} ns; cyclictest: {} samples ({} over its range), {their:?} ns; the witness: {} sleeps, the latest woken at least {witnessed_max:?} ns after its expiry; {} could hold cyclictest's maximum (no switch-in recorded: {switch_in_hidden}), from the wake-up to the next sleep at most {after_wakeup:?} ns\n--- rtwhy's stderr\n{}",
        n("wakeups"),
        unseen,
        theirs.samples(),
        theirs.overflows,
        samples.len(),
        could_be_max.len(),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{report}");
    assert_eq!(n("wakeups"), theirs.samples(), "{report}");
    let bucket_sum: u64 = thread["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(bucket_sum, n("wakeups"), "{report}");
    // The witness saw the run: all but the first sleep and a few overruns (a sleep whose
    // expiry has passed arms no timer).
    assert!(samples.len() >= 4900, "{report}");
    // No wake-up rtwhy missed or cut short: its maximum covers every sleep's lateness as
    // far as the witness saw it (to the microsecond: the witness's tracepoint handler
    // may stamp its event a little after rtwhy's program stamps the same one).
    assert!(
        witnessed_max.is_some_and(|late| mine.2 + 1000 >= late),
        "max: rtwhy {} ns is below a wake-up the witness saw\n{report}",
        mine.2
    );
    // A sample ends later than rtwhy's wake-up: cyclictest reads the clock after the
    // context switch and its return to user space, rtwhy stops at the sched_switch. So
    // each of its quantiles is at or above rtwhy's (to its whole microseconds). The gap
    // was 1-4 us at the p50 and 3-14 us at the p99 here: two or three buckets between 8
    // and 64 us, where this VM's p50 and p99 sit. The one-bucket agreement is asked of
    // the maximum, where the delay both see dwarfs that path. Except for a wake-up found
    // at the switch-out, whose switch-in rtwhy estimates from the CPU time the thread
    // ran: on this VM, when the machine's own agent thread (PID 1's tokio-rt-worker,
    // in the kernel with preemption off) holds CPU 1 at cyclictest's wake-up, neither
    // ftrace nor BPF records the switch to cyclictest, and the kernel counts cyclictest
    // as running for 0.3-0.9 ms before it reaches its syscall's exit: the estimate is
    // that much early (CI: rtwhy 1.718 ms against cyclictest's 1.996 ms, 437 us
    // against 777 us). Then rtwhy must have reported such wake-ups, the witness must
    // have no switch-in for every sleep that could be cyclictest's maximum, cyclictest's
    // maximum must be within rtwhy's bound on them (to their switch-out), and the
    // difference must fit in the span from that wake-up to the thread's next sleep.
    for (what, a, b) in [("p50", mine.0, their.0), ("p99", mine.1, their.1)] {
        assert!(
            a < b + 1000,
            "{what}: rtwhy {a} ns is above cyclictest's {b} ns\n{report}"
        );
    }
    assert!(
        mine.2 < their.2 + 1000,
        "max: rtwhy {} ns is above cyclictest's {} ns\n{report}",
        mine.2,
        their.2
    );
    let apart = buckets_apart(mine.2, their.2);
    assert!(
        apart <= 1
            || (unseen > 0
                && switch_in_hidden
                && their.2 <= unseen_latest
                && after_wakeup.is_some_and(|span| their.2.saturating_sub(mine.2) <= span)),
        "max: rtwhy {} ns and cyclictest {} ns are {apart} buckets apart, and not explained by a wake-up found at the switch-out\n{report}",
        mine.2,
        their.2,
    );
}

/// One sleep of a thread on CPU 1 as the witness saw it: its timer's expiry, the
/// `sched_waking` that ended it and the thread's first switch-in after it (each absent
/// when ftrace did not record it: this VM's kernel drops most switches from idle), and
/// the start of the thread's next sleep; CLOCK_MONOTONIC ns, the trace's to the
/// microsecond (rounded down).
struct Sleep {
    expiry_ns: u64,
    waking_ns: Option<u64>,
    switch_in_ns: Option<u64>,
    next_sleep_ns: u64,
}

impl Sleep {
    /// The latest time the thread is known to have still been waking up at.
    fn woken_ns(&self) -> u64 {
        [self.waking_ns, self.switch_in_ns]
            .into_iter()
            .flatten()
            .fold(self.expiry_ns, u64::max)
    }
}

/// A tracefs instance of the test's own on CPU 1 (monotonic clock, 8 MiB), set up with
/// `settings` (file, value) under `instances/rtwhy-test-TAG-PID`; removed when dropped,
/// whatever happened.
struct Witness(PathBuf);

impl Witness {
    fn start(tag: &str, settings: &[(&str, &str)]) -> Witness {
        let dir = Path::new(TRACEFS)
            .join("instances")
            .join(format!("rtwhy-test-{tag}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("witness instance");
        let witness = Witness(dir);
        let common = [
            ("tracing_cpumask", "2"),
            ("trace_clock", "mono"),
            ("buffer_size_kb", "8192"),
        ];
        for (file, value) in common.iter().chain(settings) {
            std::fs::write(witness.0.join(file), value)
                .unwrap_or_else(|e| panic!("witness: {file} <- {value}: {e}"));
        }
        witness
    }

    /// Its `trace` text, after stopping it; fails if it overwrote any event.
    fn trace(&self) -> String {
        std::fs::write(self.0.join("tracing_on"), "0").unwrap();
        let stats = std::fs::read_to_string(self.0.join("per_cpu/cpu1/stats")).unwrap();
        assert!(
            stats.contains("\noverrun: 0\n"),
            "the witness lost events:\n{stats}"
        );
        std::fs::read_to_string(self.0.join("trace")).unwrap()
    }
}

impl Drop for Witness {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("tracing_on"), "0");
        let _ = std::fs::write(self.0.join("events/enable"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A witness beside the recorder: cyclictest's sleeps (`clock_nanosleep`, its timer's
/// `hrtimer_start`, the `sched_waking` that ends it, its switch-in).
struct SleepWitness(Witness);

impl SleepWitness {
    fn start() -> SleepWitness {
        SleepWitness(Witness::start(
            "witness",
            &[
                ("events/sched/sched_waking/filter", "comm == \"cyclictest\""),
                (
                    "events/sched/sched_switch/filter",
                    "next_comm == \"cyclictest\"",
                ),
                ("events/sched/sched_waking/enable", "1"),
                ("events/sched/sched_switch/enable", "1"),
                ("events/timer/hrtimer_start/enable", "1"),
                ("events/syscalls/sys_enter_clock_nanosleep/enable", "1"),
            ],
        ))
    }

    /// The sleeps of the thread that slept most on CPU 1 (cyclictest's measuring
    /// thread), after stopping the instance; fails if it overwrote any event.
    fn samples(&self) -> Vec<Sleep> {
        let trace = self.0.trace();
        // Per thread: the sleep it is in, its next sleep's start still to come.
        let mut open: std::collections::HashMap<u32, Sleep> = Default::default();
        let mut sleeps: std::collections::HashMap<u32, Vec<Sleep>> = Default::default();
        for line in trace.lines().filter(|l| !l.starts_with('#')) {
            let Some((task, t_ns, body)) = witness_line(line) else {
                continue;
            };
            let field = |name: &str| {
                body.split_whitespace()
                    .find_map(|w| w.strip_prefix(name)?.parse::<u64>().ok())
            };
            if body.starts_with("hrtimer_start:") && body.contains("function=hrtimer_wakeup") {
                if let Some(expiry_ns) = field("expires=") {
                    let sleep = Sleep {
                        expiry_ns,
                        waking_ns: None,
                        switch_in_ns: None,
                        next_sleep_ns: 0,
                    };
                    open.insert(task, sleep);
                }
            } else if body.starts_with("sched_waking:") {
                let woken = field("pid=").and_then(|p| u32::try_from(p).ok());
                if let Some(sleep) = woken.and_then(|p| open.get_mut(&p)) {
                    sleep.waking_ns.get_or_insert(t_ns);
                }
            } else if body.starts_with("sched_switch:") {
                let next = field("next_pid=").and_then(|p| u32::try_from(p).ok());
                // The first switch-in after the expiry: one before it (preempted on
                // its way to sleep) is not the wake-up's.
                let sleep = next.and_then(|p| open.get_mut(&p));
                if let Some(sleep) = sleep.filter(|s| t_ns >= s.expiry_ns) {
                    sleep.switch_in_ns.get_or_insert(t_ns);
                }
            } else if body.starts_with("sys_clock_nanosleep(") {
                if let Some(mut sleep) = open.remove(&task) {
                    sleep.next_sleep_ns = t_ns;
                    sleeps.entry(task).or_default().push(sleep);
                }
            }
        }
        sleeps
            .into_values()
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

/// A line of a tracefs `trace` file: the task's pid, the time in ns, the event's text.
fn witness_line(line: &str) -> Option<(u32, u64, &str)> {
    let (task, rest) = line.split_once(" [")?;
    let pid = task.trim().rsplit_once('-')?.1.parse().ok()?;
    let (_cpu, rest) = rest.split_once(']')?;
    let (_flags, rest) = rest.trim_start().split_once(' ')?;
    let (time, body) = rest.trim_start().split_once(": ")?;
    let (s, us) = time.split_once('.')?;
    let t_ns = s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000;
    Some((pid, t_ns, body))
}

/// Bytes under `dir`, every level down.
fn tree_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => tree_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The systemd unit's way of recording: every start a new session in the state
/// directory, one disk budget over all of them. Ten starts, each three seconds of a
/// breach storm (FIFO 90 spinning 300 us every 2.3 ms over cyclictest on CPU 1: about
/// five captures a second at --min-gap 150ms, half a MiB each, so ten sessions hold
/// twice the budget): after every start the whole directory is under 24 MiB, the
/// earlier sessions gave up captures (counted in their own session.json, which lists
/// only what is on disk), and the summary spans all ten sessions.
#[test]
fn a_recorder_restarted_ten_times_keeps_its_state_directory_under_one_budget() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let state = tmp.path().join("state");
    let before = tracefs_state();
    let budget: u64 = 24 << 20;
    let mut logs = String::new();
    for start in 1..=10 {
        let _load = spinner(&spin, 90, 5000, 300, 2300, 0);
        let mut args = vec!["record"];
        args.extend_from_slice(UNATTENDED);
        args.extend_from_slice(&[
            "--disk-budget",
            "24M",
            "--recorder-cpus",
            "0",
            "--state-dir",
            state.to_str().unwrap(),
            "--",
        ]);
        args.extend_from_slice(&cyclictest("3"));
        let o = run(&args);
        let all = text(&o);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "start {start}\n{all}"
        );
        logs.push_str(&format!(
            "--- start {start}\n{}\n",
            String::from_utf8_lossy(&o.stderr)
        ));
        let on_disk = tree_bytes(&state);
        eprintln!("after start {start}: {on_disk} bytes in the state directory");
        assert!(
            on_disk <= budget,
            "after start {start}: {on_disk} bytes in the state directory > {budget}\n{all}"
        );
    }
    let sessions: Vec<PathBuf> = {
        let mut s: Vec<PathBuf> = std::fs::read_dir(&state)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.join("session.json").is_file())
            .collect();
        s.sort();
        s
    };
    assert_eq!(sessions.len(), 10, "{sessions:?}");
    let mut wakeups = 0;
    let mut deleted_earlier = 0;
    for dir in &sessions {
        let s = session(dir);
        let spikes = s["spikes"].as_array().unwrap();
        for sp in spikes {
            let f = dir.join(sp["file"].as_str().unwrap());
            assert!(f.is_file(), "{} listed, not on disk", f.display());
        }
        let dropped: u64 = s["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|d| d["captures"].as_u64().unwrap())
            .sum();
        // Every capture of the session is on disk or counted as deleted.
        assert_eq!(
            s["session"]["captures_total"].as_u64().unwrap(),
            spikes.len() as u64 + dropped,
            "{}",
            dir.display()
        );
        if dir != sessions.last().unwrap() {
            deleted_earlier += dropped;
        }
        let o: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("overview.json")).unwrap())
                .unwrap();
        assert!(o["from_unix_ns"].as_u64().is_some(), "{}", dir.display());
        wakeups += o["threads"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["comm"] == "cyclictest")
            .map(|t| t["wakeups"].as_u64().unwrap())
            .sum::<u64>();
    }
    eprintln!("captures of earlier sessions deleted by later ones: {deleted_earlier}");
    assert!(
        deleted_earlier > 0,
        "no earlier session gave up a capture: the budget was never reached\n{logs}"
    );
    assert!(
        logs.contains("of the earlier session"),
        "no deletion from an earlier session was reported\n{logs}"
    );
    let s = run(&["summary", "--format", "json", state.to_str().unwrap()]);
    assert_eq!(s.status.code(), Some(0), "{}", text(&s));
    let combined: Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(combined["sessions"].as_array().unwrap().len(), 10);
    let cyclictest = combined["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["comm"] == "cyclictest")
        .map(|t| t["wakeups"].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(cyclictest, wakeups, "{combined:#}");
    let r = run(&["report", state.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout)
            .contains("The 10 sessions of a recorder's state directory"),
        "{}",
        text(&r)
    );
    assert_eq!(tracefs_state(), before);
}

/// One context switch: time (ns, the µs the text shows), prev pid, prev_state's value,
/// next pid.
type Switch = (u64, u32, u64, u32);

/// The value of a prev_state as tracefs's `print fmt` shows it (`S`, `D`, ..., `I`, `R`,
/// `R+` when preempted).
fn state_value(text: &str) -> Option<u64> {
    let bits = "SDTtXZPI";
    match text {
        "R" => Some(0),
        "R+" => Some(0x100),
        _ => text
            .split('|')
            .map(|f| bits.find(f).filter(|_| f.len() == 1).map(|i| 1u64 << i))
            .sum(),
    }
}

/// `NAME=VALUE` words of an event's text.
fn word<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    body.split_whitespace().find_map(|w| w.strip_prefix(name))
}

/// The context switches of CPU 1 in a tracefs `trace` text.
fn witness_switches(trace: &str) -> Vec<Switch> {
    trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (_, t_ns, body) = witness_line(line)?;
            let body = body.strip_prefix("sched_switch: ")?;
            Some((
                t_ns,
                word(body, "prev_pid=")?.parse().ok()?,
                state_value(word(body, "prev_state=")?)?,
                word(body, "next_pid=")?.parse().ok()?,
            ))
        })
        .collect()
}

/// The context switches of CPU 1 in `trace-cmd report -R`'s text of a capture (raw
/// field values: trace-cmd's own rendering of prev_state differs from the kernel's).
fn capture_switches(report: &str) -> Vec<Switch> {
    report
        .lines()
        .filter(|l| l.contains("[001]"))
        .filter_map(|line| {
            // `TASK-PID [CPU] SECONDS.MICROS: EVENT: FIELDS` (no flags column).
            let rest = line.split_once("] ")?.1.trim_start();
            let (time, body) = rest.split_once(": ")?;
            let (sec, us) = time.split_once('.')?;
            let t_ns = sec.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000;
            let body = body.strip_prefix("sched_switch:")?;
            Some((
                t_ns,
                word(body, "prev_pid=")?.parse().ok()?,
                word(body, "prev_state=")?.parse().ok()?,
                word(body, "next_pid=")?.parse().ok()?,
            ))
        })
        .collect()
}

/// A witness of every context switch on CPU 1, as the kernel's sched_switch event
/// reports it.
struct SwitchWitness(Witness);

impl SwitchWitness {
    fn start() -> SwitchWitness {
        SwitchWitness(Witness::start(
            "switches",
            &[("events/sched/sched_switch/enable", "1")],
        ))
    }

    /// Every switch it saw, after stopping it; fails if it overwrote any.
    fn switches(&self) -> Vec<Switch> {
        witness_switches(&self.0.trace())
    }
}

/// `--sched-events bpf`: the context switches and wake-ups come from the detector's
/// programs, not from the flight instance. Every capture must hold CPU 1's switches
/// exactly as the kernel's own sched_switch event reported them to an instance of the
/// test's own (same tasks, same prev_state, in the same order, at the same time within
/// the display's microsecond and the two probes' distance), and the preemption the
/// spinner causes must be named as with the instance's events.
#[test]
fn scheduler_events_kept_by_bpf_are_the_kernels_own_and_name_the_preemption() {
    let _g = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let spin = spin_binary(tmp.path());
    let out = tmp.path().join("bpf-sched");
    let witness = SwitchWitness::start();
    let _load = spinner(&spin, 90, 3000, 300, 10_300, 0);
    let o = record_cyclictest(
        &[
            "-t",
            "150us",
            "--max-spikes",
            "12",
            "--cpus",
            "1",
            "--sched-events",
            "bpf",
        ],
        &out,
        "3",
    );
    let seen = witness.switches();
    drop(witness);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let s = session(&out);
    let armed = &s["session"]["armed"];
    assert_eq!(armed["sched_events"], "bpf", "{all}");
    let events: Vec<&str> = armed["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for e in [
        "sched:sched_switch",
        "sched:sched_waking",
        "sched:sched_wakeup",
    ] {
        assert!(
            !events.contains(&e),
            "{e} still in the instance: {events:?}"
        );
    }
    let causes = check_captures(&out, "150us");
    assert!(preemption_leads(&causes), "{causes:?}\n{all}");

    for sp in s["spikes"].as_array().unwrap() {
        let dat = out.join(sp["file"].as_str().unwrap());
        let report = Command::new("trace-cmd")
            .args(["report", "-R"])
            .arg(&dat)
            .output()
            .unwrap();
        let kept = capture_switches(&String::from_utf8_lossy(&report.stdout));
        assert!(
            kept.len() >= 10,
            "{}: {} switches on CPU 1",
            dat.display(),
            kept.len()
        );
        // Every switch the witness saw inside the capture's span is in the capture, in
        // the same order: same tasks and state, at most 100 us apart (the two probes run
        // in the same tracepoint call; the text shows microseconds). The capture may
        // hold more, and only switches out of the idle task: ftrace drops most of those
        // on this kernel (../shared/DOMAIN.md), the programs on the same tracepoint do
        // not.
        let near = |a: &Switch, b: &Switch| {
            a.1 == b.1 && a.2 == b.2 && a.3 == b.3 && a.0.abs_diff(b.0) <= 100_000
        };
        let (first, last) = (
            kept[0].0 + 200_000,
            kept[kept.len() - 1].0.saturating_sub(200_000),
        );
        let theirs: Vec<&Switch> = seen
            .iter()
            .filter(|w| w.0 >= first && w.0 <= last)
            .collect();
        assert!(
            theirs.len() >= 5,
            "{}: the witness saw {} switches in the capture's span",
            dat.display(),
            theirs.len()
        );
        let mut ours = kept.iter();
        let mut extra = 0;
        for w in &theirs {
            loop {
                let k = ours.next().unwrap_or_else(|| {
                    panic!(
                        "{}: the witness's switch {w:?} is not in the capture",
                        dat.display()
                    )
                });
                if near(k, w) {
                    break;
                }
                if k.0 >= first {
                    assert_eq!(
                        k.1,
                        0,
                        "{}: capture has {k:?} where the witness has {w:?}",
                        dat.display()
                    );
                    extra += 1;
                }
            }
        }
        eprintln!(
            "{}: {} switches on CPU 1 in the witness's span, {} of them idle-to-task switches ftrace did not record",
            dat.display(),
            theirs.len() + extra,
            extra
        );
    }
}
