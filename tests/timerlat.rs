//! `rtwhy analyze` on timerlat traces recorded in the PREEMPT_RT guest
//! (fixtures/rtla-scripts/README.md): rtla's saved traces, a trace-cmd trace.dat and
//! trace-cmd's report of it, and damaged rtla traces.
//!
//! The expected numbers are read off the trace lines quoted in each test, not taken
//! from rtwhy's output: rtla 6.1, the one Debian ships, prints no auto-analysis to
//! compare with.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rtwhy_tests::{rtwhy, workspace};
use serde_json::Value;

fn fixture(rel: &str) -> PathBuf {
    workspace().join("fixtures").join(rel)
}

fn analyze(path: &Path, args: &[&str]) -> Output {
    Command::new(rtwhy())
        .arg("analyze")
        .arg(path)
        .args(args)
        .output()
        .expect("runs")
}

fn analyze_json(path: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = analyze(path, &a);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), v, stderr)
}

#[test]
fn rtla_saved_trace_idle_stall_gives_rtlas_breakdown() {
    let (code, v, _) = analyze_json(
        &fixture("rtla-idle-stall/timerlat_trace.txt"),
        &["--threshold", "3ms"],
    );
    assert_eq!(code, Some(1));
    let spikes = v["timerlat"]["spikes"].as_array().expect("timerlat spikes");
    // rtla stopped on the only thread sample over 3 ms (-a 3000):
    //   <idle>-0   [001] d..h1..  87.172993: #2443  context    irq timer_latency   4167650 ns
    //   <idle>-0   [001] dn.h2..  87.173465: irq_noise: local_timer:236 start 87.172961887 duration 496079 ns
    //   <idle>-0   [001] d...3..  87.173569: thread_noise: swapper/1:0 start 87.172978859 duration 103344 ns
    //   timerlat/1-164 [001] ....... 87.173629: #2443  context thread timer_latency   4813220 ns
    assert_eq!(spikes.len(), 1, "{spikes:#?}");
    let s = &spikes[0];
    assert_eq!(s["cpu"], 1);
    assert_eq!(s["seqnum"], 2443);
    assert_eq!(s["context"], "thread");
    assert_eq!(s["irq_latency_ns"], 4_167_650);
    assert_eq!(s["thread_latency_ns"], 4_813_220);
    // Handler start minus the expiry: 87.172961887 - (87.172993 - 0.004167650) s.
    assert_eq!(s["irq_handler_delay_ns"], 4_136_537);
    assert_eq!(s["exit_from_idle"], true);
    assert_eq!(s["timerlat_irq_duration_ns"], 496_079);
    assert_eq!(s["blocking_thread"]["comm"], "swapper/1");
    assert_eq!(s["blocking_thread"]["pid"], 0);
    assert_eq!(s["blocking_thread"]["duration_ns"], 103_344);
    assert_eq!(s["irq_interference_ns"], 0);
    assert_eq!(s["thread_interference_ns"], 0);
    // CPU 1's last event before the handler is the switch to idle at 87.164874; the
    // timer was due at 87.168825 and its handler began at 87.172962: 4.1 ms of nothing.
    assert_eq!(s["primary"]["cause"], "hwlat");
    let stack: Vec<&str> = s["stack"]
        .as_array()
        .expect("stack")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(stack.first(), Some(&"timerlat_irq"));
    assert!(stack.contains(&"native_safe_halt"), "{stack:?}");

    let text = analyze(
        &fixture("rtla-idle-stall/timerlat_trace.txt"),
        &["--threshold", "3ms"],
    );
    let text = String::from_utf8_lossy(&text.stdout);
    for line in [
        "IRQ handler delay:   (exit from idle)   4136.54 us (85.94 %)",
        "IRQ latency:                        4167.65 us",
        "Timerlat IRQ duration:               496.08 us (10.31 %)",
        "Blocking thread:                     103.34 us (2.15 %)",
        "Thread latency:                     4813.22 us (100%)",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}

#[test]
fn rtla_saved_trace_without_the_irq_sample_reports_the_thread_sample() {
    // The saved trace begins after #1387's IRQ sample; what it holds of the period:
    //   spin-157 [001] d...3.. 78.949774: thread_noise: spin:157 start 78.929663932 duration 19750202 ns
    //   timerlat/1-160 [001] ....... 78.949928: #1387  context thread timer_latency  42823260 ns
    let (code, v, _) = analyze_json(
        &fixture("rtla-spinner/timerlat_trace.txt"),
        &["--threshold", "10ms"],
    );
    assert_eq!(code, Some(1));
    let spikes = v["timerlat"]["spikes"].as_array().expect("timerlat spikes");
    assert_eq!(spikes.len(), 1);
    let s = &spikes[0];
    assert_eq!(s["seqnum"], 1387);
    assert_eq!(s["thread_latency_ns"], 42_823_260);
    assert_eq!(s["irq_latency_ns"], Value::Null);
    assert_eq!(s["irq_handler_delay_ns"], Value::Null);
    assert_eq!(s["thread_interference_ns"], 19_750_202);
    assert_eq!(s["threads"][0]["name"], "spin");
    assert_eq!(s["threads"][0]["id"], 157);
    // Without the IRQ sample nothing says when the timer fired: no verdict.
    assert_eq!(s["primary"]["cause"], "unknown");
}

#[test]
fn rtla_saved_trace_with_only_the_irq_sample() {
    //   <idle>-0 [001] d..h1.. 198.607079: #5753  context    irq timer_latency   7166520 ns
    let (code, v, _) = analyze_json(
        &fixture("rtla-irq-stop/timerlat_trace.txt"),
        &["--threshold", "300us"],
    );
    assert_eq!(code, Some(1));
    let s = &v["timerlat"]["spikes"][0];
    assert_eq!(s["context"], "irq");
    assert_eq!(s["irq_latency_ns"], 7_166_520);
    assert_eq!(s["thread_latency_ns"], Value::Null);
    assert_eq!(s["irq_handler_delay_ns"], Value::Null);
    assert_eq!(s["blocking_thread"]["pid"], 0);
    assert_eq!(s["primary"]["cause"], "unknown");
    assert!(
        s["primary"]["summary"]
            .as_str()
            .is_some_and(|t| t.contains("-e osnoise")),
        "{s:#}"
    );
}

#[test]
fn trace_dat_period_preempted_by_a_higher_priority_spinner() {
    // Period #1530 of CPU 1 (timerlat/1 at FIFO 1, prio 98; spin at FIFO 10, prio 89):
    //   spin-174 [001] 108.763391: timerlat: seq:1530 context:0 timer_latency:7303860
    //   spin-174 [001] 108.763542: thread_noise: spin:174 start 108.763386544 duration 96381 ns
    //   irq/25-virtio0--119 [001] 108.771090: thread_noise: irq/25-virtio0-:119 ... duration 7543388 ns
    //   spin-174 [001] 108.782411: thread_noise: spin:174 ... duration 11307808 ns
    //   ... spin:174 73387 ns, 3734103 ns; irq/25-virtio0-:119 89849 ns, 130896 ns
    //   timerlat/1-165 [001] 108.786503: timerlat: seq:1530 context:1 timer_latency:30416270
    let (code, v, stderr) = analyze_json(
        &fixture("tracecmd-timerlat/timerlat.dat"),
        &["--threshold", "10ms", "--isolated", "1"],
    );
    assert_eq!(code, Some(1));
    assert!(!stderr.contains("clock"), "{stderr}");
    let spikes = v["timerlat"]["spikes"].as_array().expect("timerlat spikes");
    let s = spikes
        .iter()
        .find(|s| s["cpu"] == 1 && s["seqnum"] == 1530)
        .expect("period 1530");
    assert_eq!(s["irq_latency_ns"], 7_303_860);
    assert_eq!(s["thread_latency_ns"], 30_416_270);
    assert_eq!(s["blocking_thread"]["comm"], "spin");
    assert_eq!(s["blocking_thread"]["duration_ns"], 96_381);
    assert_eq!(
        s["thread_interference_ns"],
        7_543_388 + 11_307_808 + 89_849 + 73_387 + 130_896 + 3_734_103
    );
    assert_eq!(s["primary"]["cause"], "preemption");
    let summary = s["primary"]["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("spin:174") && summary.contains("15115.30 us"),
        "{summary}"
    );
}

#[test]
fn report_text_gives_the_numbers_of_the_trace_dat() {
    // trace-cmd's rendering of the first 4000 records: every period it holds whole
    // must come out as from the binary, timestamps being in microseconds in the text.
    let args = ["--threshold", "1ms", "--isolated", "1"];
    let (_, dat, _) = analyze_json(&fixture("tracecmd-timerlat/timerlat.dat"), &args);
    let (_, text, _) = analyze_json(
        &fixture("tracecmd-timerlat/timerlat.report-head.txt"),
        &args,
    );
    let dat = dat["timerlat"]["spikes"].as_array().expect("dat spikes");
    let text = text["timerlat"]["spikes"].as_array().expect("text spikes");
    assert!(text.len() >= 20, "{}", text.len());
    for t in text {
        let d = dat
            .iter()
            .find(|d| {
                d["cpu"] == t["cpu"]
                    && d["expected_ns"]
                        .as_u64()
                        .zip(t["expected_ns"].as_u64())
                        .is_some_and(|(a, b)| a.abs_diff(b) <= 1_000)
                    && d["seqnum"] == t["seqnum"]
            })
            .unwrap_or_else(|| {
                panic!(
                    "period {} of CPU {} not in the trace.dat's",
                    t["seqnum"], t["cpu"]
                )
            });
        for k in [
            "context",
            "irq_latency_ns",
            "thread_latency_ns",
            "timerlat_irq_duration_ns",
            "blocking_thread",
            "irq_interference_ns",
            "softirq_interference_ns",
            "thread_interference_ns",
            "exit_from_idle",
        ] {
            assert_eq!(d[k], t[k], "{k} of period {}", t["seqnum"]);
        }
        let (a, b) = (
            d["irq_handler_delay_ns"].as_u64().expect("delay"),
            t["irq_handler_delay_ns"].as_u64().expect("delay"),
        );
        assert!(a.abs_diff(b) <= 1_000, "{a} vs {b}");
    }
}

#[test]
fn damaged_rtla_traces_give_one_line_not_a_panic() {
    let src =
        std::fs::read_to_string(fixture("rtla-idle-stall/timerlat_trace.txt")).expect("fixture");
    let dir = tempfile::tempdir().expect("tempdir");

    // Every line cut in the middle: the cut osnoise lines are counted in one warning.
    let cut: String = src
        .lines()
        .map(|l| {
            if l.contains("noise:") || l.contains(" context ") {
                l.get(..l.len() * 3 / 4).unwrap_or(l)
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let p = dir.path().join("cut.txt");
    std::fs::write(&p, cut).expect("write");
    let out = analyze(&p, &["--threshold", "1ms"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0..=2)), "{stderr}");
    assert!(
        stderr.contains("timerlat/osnoise events could not be read"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // osnoise events without any sample: one error line, exit 2.
    let noise: String = src
        .lines()
        .filter(|l| l.contains("_noise:"))
        .collect::<Vec<_>>()
        .join("\n");
    let p = dir.path().join("noise.txt");
    std::fs::write(&p, noise).expect("write");
    let out = analyze(&p, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no timerlat sample"), "{stderr}");

    // An rtla trace with its header only, and an empty file.
    let header: String = src
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for (name, body) in [("header.txt", header.as_str()), ("empty.txt", "")] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        let out = analyze(&p, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
    }

    // Cut at every byte of the period rtla stopped on: never a panic.
    let lines: Vec<&str> = src.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    for cut in (0..tail.len()).step_by(7) {
        let Some(body) = tail.get(..cut) else {
            continue;
        };
        let p = dir.path().join("prefix.txt");
        std::fs::write(&p, body).expect("write");
        let out = analyze(&p, &["--threshold", "1ms"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0..=2)),
            "cut {cut}: {stderr}"
        );
    }
}
