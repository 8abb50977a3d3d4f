//! `rtwhy report` on the real fixtures: golden snapshots of every format, the SVG
//! rendered by a real renderer (resvg) and looked at pixel by pixel, the Perfetto JSON
//! checked against the trace-event format, the bundle opened by real `tar` and its
//! trace window by real `trace-cmd report` and re-analysed, and bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rtwhy_report::svg;
use rtwhy_tests::{require, rtwhy, workspace};
use serde_json::Value;

/// The recorded fixture of each cause, with the analyze arguments its expectation uses.
const CAUSES: [&str; 7] = [
    "hwlat",
    "irq_on_isolated_cpu",
    "kernel_nonpreemptible",
    "lock_contention",
    "preemption",
    "priority_inversion",
    "rt_throttling",
];

/// `fixtures/<cause>/<cause>.dat` (relative, so snapshots do not hold this checkout's
/// path) and the arguments of its `.expect.json`.
fn fixture(cause: &str) -> (String, Vec<String>) {
    let rel = format!("fixtures/{cause}/{cause}.dat");
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join(format!("fixtures/{cause}/{cause}.expect.json")))
            .expect("expectation"),
    )
    .expect("json");
    let args = spec["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string").to_string())
        .collect();
    (rel, args)
}

fn all_fixtures() -> Vec<(&'static str, String, Vec<String>)> {
    CAUSES
        .iter()
        .chain(std::iter::once(&"softirq"))
        .map(|c| {
            let (p, a) = fixture(c);
            (*c, p, a)
        })
        .collect()
}

fn report(args: &[&str], trace: &str, extra: &[String]) -> Output {
    Command::new(rtwhy())
        .current_dir(workspace())
        .arg("report")
        .args(args)
        .args(extra)
        .arg(trace)
        .output()
        .expect("rtwhy runs")
}

fn stdout_of(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The id of the worst spike `rtwhy analyze` diagnoses as `cause` in `trace`.
fn worst_spike_of(cause: &str, trace: &str, args: &[String]) -> u32 {
    let o = Command::new(rtwhy())
        .current_dir(workspace())
        .args(["analyze", "--format", "json"])
        .args(args)
        .arg(trace)
        .output()
        .expect("runs");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    v["spikes"]
        .as_array()
        .expect("spikes")
        .iter()
        .filter(|s| s["primary"]["cause"] == cause)
        .max_by_key(|s| s["latency_ns"].as_u64())
        .and_then(|s| s["id"].as_u64())
        .unwrap_or_else(|| panic!("{trace}: no {cause} spike")) as u32
}

#[test]
fn markdown_of_every_cause_matches_its_snapshot() {
    for (cause, trace, args) in all_fixtures() {
        let id = worst_spike_of(cause, &trace, &args).to_string();
        let md = stdout_of(report(
            &["--format", "markdown", "--spike", &id],
            &trace,
            &args,
        ));
        // What a reader of the bug needs, whatever the snapshot says.
        for needle in [
            "## System",
            "| Preemption model |",
            &format!("**Verdict: {cause}**"),
            "| time | share | spent on |",
            "### Decisive trace lines",
            "```text",
            "### Fix",
            "## Reproduce",
            "rtwhy analyze --threshold",
        ] {
            assert!(md.contains(needle), "{cause}: no {needle:?} in\n{md}");
        }
        insta::assert_snapshot!(format!("markdown_{cause}"), md);
        // The decisive lines are trace-cmd's own lines: a reader can find each of them
        // in `trace-cmd report` of the attached trace.
        if require("trace-cmd") {
            let tc = Command::new("trace-cmd")
                .current_dir(workspace())
                .args(["report", &trace])
                .output()
                .expect("trace-cmd");
            let report_text = String::from_utf8_lossy(&tc.stdout);
            let lines: std::collections::HashSet<&str> = report_text.lines().collect();
            let decisive: Vec<&str> = md
                .lines()
                .filter(|l| {
                    l.starts_with('E') && l.as_bytes().get(1).is_some_and(u8::is_ascii_digit)
                })
                .map(|l| l.get(4..).unwrap_or_default())
                .collect();
            assert!(!decisive.is_empty(), "{cause}: no decisive lines");
            // The event's header (buffer, task, CPU, time, event name) always matches;
            // the fields too, except where this trace-cmd has a print plugin rtwhy's
            // printer lacks (libtraceevent's futex plugin decodes `op=FUTEX_...`).
            let headers: std::collections::HashSet<&str> =
                lines.iter().filter_map(|l| header(l)).collect();
            for l in decisive {
                assert!(
                    header(l).is_some_and(|h| headers.contains(h)),
                    "{cause}: no such event in trace-cmd's report: {l}"
                );
                if !l.contains(" sys_enter_futex: ") {
                    assert!(lines.contains(l), "{cause}: not a trace-cmd line: {l}");
                }
            }
        }
    }
}

/// A `trace-cmd report` line up to and including its event name.
fn header(line: &str) -> Option<&str> {
    // `[CPU]  secs.usecs: event_name:` - the event name ends at the second ': '.
    let ts_end = line.find("]  ")?;
    let after = line.get(ts_end..)?;
    let first = after.find(": ")?;
    let second = after.get(first + 2..)?.find(':')?;
    line.get(..ts_end + first + 2 + second + 1)
}

/// A trace with many spikes gives a report of the worst few, and says so.
#[test]
fn markdown_of_many_spikes_shows_the_worst_ten() {
    let (trace, args) = fixture("irq_on_isolated_cpu");
    let md = stdout_of(report(&["--format", "markdown"], &trace, &args));
    assert_eq!(md.matches("\n## Spike ").count(), 10);
    assert!(md.contains("(10 shown)"), "{}", &md[..300]);
}

#[test]
fn text_json_svg_and_perfetto_of_softirq_match_their_snapshots() {
    let (trace, args) = fixture("softirq");
    let text = stdout_of(report(&["--format", "text"], &trace, &args));
    insta::assert_snapshot!("text_softirq", text);
    let json = stdout_of(report(&["--format", "json"], &trace, &args));
    let v: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(v["schema"], "rtwhy.analysis/2");
    assert_eq!(v["spikes"][0]["primary"]["cause"], "softirq");
    insta::assert_snapshot!("json_softirq", json);
    let svg_text = stdout_of(report(&["--format", "svg"], &trace, &args));
    insta::assert_snapshot!("svg_softirq", svg_text);
    let perfetto = stdout_of(report(&["--format", "perfetto"], &trace, &args));
    insta::assert_snapshot!("perfetto_softirq", perfetto);
}

/// `--format json` is `rtwhy analyze --format json`, spike for spike.
#[test]
fn report_json_is_the_analyze_schema() {
    let (trace, args) = fixture("preemption");
    let report_json: Value =
        serde_json::from_str(&stdout_of(report(&["--format", "json"], &trace, &args)))
            .expect("json");
    let analyze = Command::new(rtwhy())
        .current_dir(workspace())
        .args(["analyze", "--format", "json"])
        .args(&args)
        .arg(&trace)
        .output()
        .expect("runs");
    let analyze_json: Value = serde_json::from_slice(&analyze.stdout).expect("json");
    assert_eq!(report_json, analyze_json);
}

/// A colour `#rrggbb` as RGB.
fn rgb(hex: &str) -> [u8; 3] {
    let n = u32::from_str_radix(hex.trim_start_matches('#'), 16).expect("hex");
    [(n >> 16) as u8, (n >> 8) as u8, n as u8]
}

struct Picture {
    width: u32,
    height: u32,
    data: Vec<u8>,
}

impl Picture {
    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.width + x) * 4) as usize;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Pixels of row `y` between `x0` and `x1` that are exactly `colour`.
    fn count_in_row(&self, y: f64, x0: f64, x1: f64, colour: [u8; 3]) -> usize {
        (x0 as u32..x1 as u32)
            .filter(|x| self.pixel(*x, y as u32) == colour)
            .count()
    }

    /// Pixels in the rectangle that are dark (text, lines).
    fn dark_in(&self, x0: u32, y0: u32, x1: u32, y1: u32) -> usize {
        let mut n = 0;
        for y in y0..y1 {
            for x in x0..x1 {
                if self.pixel(x, y).iter().all(|c| *c < 110) {
                    n += 1;
                }
            }
        }
        n
    }
}

/// Renders SVG text with resvg (system fonts loaded), saving the PNG under the target
/// directory for a person to look at.
fn render(svg_text: &str, name: &str) -> Picture {
    let mut opts = resvg::usvg::Options::default();
    opts.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg_text, &opts).expect("resvg parses the SVG");
    let size = tree.size().to_int_size();
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("non-empty picture");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let dir = rtwhy_tests::target_dir().join("report-png");
    let _ = std::fs::create_dir_all(&dir);
    let _ = pixmap.save_png(dir.join(format!("{name}.png")));
    Picture {
        width: size.width(),
        height: size.height(),
        data: pixmap.data().to_vec(),
    }
}

/// The number in `attr="N"` after `anchor` in `text`.
fn attr_after(text: &str, anchor: &str, attr: &str) -> f64 {
    let at = text.find(anchor).expect("anchor present");
    let rest = &text[at..];
    let key = format!("{attr}=\"");
    let start = rest.find(&key).expect("attribute") + key.len();
    let end = rest[start..].find('"').expect("closing quote") + start;
    rest[start..end].parse().expect("number")
}

#[test]
fn svg_timelines_render_with_the_expected_lanes() {
    let fonts = Path::new("/usr/share/fonts/truetype/dejavu").is_dir();
    for (cause, trace, args) in all_fixtures() {
        let svg_text = stdout_of(report(&["--format", "svg"], &trace, &args));
        let pic = render(&svg_text, cause);
        // Not blank: a good part of the picture is drawn.
        let drawn = (0..pic.height)
            .flat_map(|y| (0..pic.width).map(move |x| (x, y)))
            .filter(|(x, y)| pic.pixel(*x, *y) != [255, 255, 255])
            .count();
        let total = (pic.width * pic.height) as usize;
        assert!(
            drawn * 20 > total,
            "{cause}: only {drawn} of {total} pixels drawn"
        );

        let lanes = svg_text.matches("<g id=\"cpu").count();
        assert!(lanes >= 1, "{cause}: no CPU lane");
        assert_eq!(
            pic.height as f64,
            svg::LANES_TOP + lanes as f64 * svg::LANE_PITCH + 4.0 + 44.0 + 30.0,
            "{cause}: height follows the lanes"
        );
        // Lane 0 is the late thread's CPU: the late thread itself runs there at the end
        // of the latency, drawn in its colour in the middle of the task track.
        let (t0, t1) = svg::task_track(0);
        let mid = (t0 + t1) / 2.0;
        let victim = pic.count_in_row(
            mid,
            svg::PLOT_LEFT,
            svg::PLOT_RIGHT,
            rgb(svg::colour(rtwhy_report::timeline::SpanKind::Victim)),
        );
        assert!(
            victim > 0,
            "{cause}: the late thread is not drawn in lane 0"
        );
        // Every lane's task track has something drawn in it (a task or idle).
        for lane in 0..lanes {
            let (a, b) = svg::task_track(lane);
            let y = ((a + b) / 2.0) as u32;
            let filled = (svg::PLOT_LEFT as u32 + 1..svg::PLOT_RIGHT as u32 - 1)
                .filter(|x| pic.pixel(*x, y) != [255, 255, 255])
                .count();
            assert!(filled > 0, "{cause}: lane {lane} is empty");
            if fonts {
                assert!(
                    pic.dark_in(10, a as u32, 60, b as u32) > 20,
                    "{cause}: lane {lane} has no readable label"
                );
            }
        }
        // The latency is shaded where the SVG says it is, across the lanes.
        let lx = attr_after(&svg_text, "id=\"latency\"", "x");
        let lw = attr_after(&svg_text, "id=\"latency\"", "width");
        let band_y = (svg::LANES_TOP - 4.0) as u32;
        let shaded = pic.pixel((lx + lw / 2.0) as u32, band_y);
        assert_ne!(shaded, [255, 255, 255], "{cause}: latency band missing");
        if fonts {
            // Title, axis labels and legend are text a person can read.
            assert!(pic.dark_in(10, 5, 400, 25) > 100, "{cause}: no title");
            let legend_y = pic.height - 30;
            assert!(
                pic.dark_in(svg::PLOT_LEFT as u32, legend_y, 900, legend_y + 14) > 100,
                "{cause}: no legend"
            );
        }
    }
    // The softirq spike: NET_RX softirq drawn in the interrupt track of the victim's CPU.
    let (trace, args) = fixture("softirq");
    let pic = render(
        &stdout_of(report(&["--format", "svg"], &trace, &args)),
        "softirq",
    );
    let (i0, i1) = svg::irq_track(0);
    let softirq = pic.count_in_row(
        (i0 + i1) / 2.0,
        svg::PLOT_LEFT,
        svg::PLOT_RIGHT,
        rgb(svg::colour(rtwhy_report::timeline::SpanKind::Softirq)),
    );
    assert!(
        softirq > 100,
        "softirq track holds {softirq} softirq pixels"
    );
    // The hwlat spike: the stopped CPU shows as a stretch with no events under the
    // latency. The spike is cyclictest's marker window (8.356 ms): the CPU stopped for
    // 6.473 ms of it (77 %), then the thread ran inside its own measurement.
    let (trace, args) = fixture("hwlat");
    let svg_text = stdout_of(report(&["--format", "svg"], &trace, &args));
    let pic = render(&svg_text, "hwlat");
    let lx = attr_after(&svg_text, "id=\"latency\"", "x");
    let lw = attr_after(&svg_text, "id=\"latency\"", "width");
    let silent = pic.count_in_row(
        (i0 + i1) / 2.0,
        lx,
        lx + lw,
        rgb(svg::colour(rtwhy_report::timeline::SpanKind::NoEvents)),
    );
    assert!(
        silent as f64 > lw * 0.7,
        "only {silent} of {lw} latency pixels show no events"
    );
}

/// Checks a Chrome trace-event document against the format's rules; returns the
/// number of timed events.
fn validate_trace_events(doc: &Value) -> usize {
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut named: std::collections::HashSet<(u64, u64)> = Default::default();
    let mut tracks: std::collections::HashMap<(u64, u64), Vec<(f64, f64)>> = Default::default();
    let mut timed = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("ph");
        assert!(e["name"].is_string(), "{e}: no name");
        let pid = e["pid"].as_u64().expect("pid is an integer");
        let tid = e["tid"].as_u64().expect("tid is an integer");
        match ph {
            "M" => {
                let name = e["name"].as_str().unwrap_or_default();
                match name {
                    "process_name" | "thread_name" => {
                        assert!(e["args"]["name"].is_string(), "{e}")
                    }
                    "process_sort_index" | "thread_sort_index" => {
                        assert!(e["args"]["sort_index"].is_i64(), "{e}")
                    }
                    other => panic!("unknown metadata event {other}"),
                }
                if name == "thread_name" {
                    named.insert((pid, tid));
                }
            }
            "X" => {
                let ts = e["ts"].as_f64().expect("ts number");
                let dur = e["dur"].as_f64().expect("dur number");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                tracks.entry((pid, tid)).or_default().push((ts, ts + dur));
                timed += 1;
            }
            "i" => {
                assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
                assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g")), "{e}");
                tracks.entry((pid, tid)).or_default();
                timed += 1;
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    for (track, mut spans) in tracks {
        assert!(named.contains(&track), "track {track:?} has no thread_name");
        // Complete events on one track must nest: a later one starts after an earlier
        // one ends, or ends within it.
        spans.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut open: Vec<f64> = Vec::new();
        for (start, end) in spans {
            while open.last().is_some_and(|e| *e <= start + 1e-6) {
                open.pop();
            }
            if let Some(outer) = open.last() {
                assert!(
                    end <= outer + 1e-6,
                    "track {track:?}: [{start}, {end}] overlaps an event ending at {outer}"
                );
            }
            open.push(end);
        }
    }
    // Timed events appear in time order.
    let ts: Vec<f64> = events.iter().filter_map(|e| e["ts"].as_f64()).collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]),
        "events out of time order"
    );
    timed
}

#[test]
fn perfetto_documents_follow_the_trace_event_format() {
    for (cause, trace, args) in all_fixtures() {
        let id = worst_spike_of(cause, &trace, &args);
        let doc: Value = serde_json::from_str(&stdout_of(report(
            &["--format", "perfetto", "--spike", &id.to_string()],
            &trace,
            &args,
        )))
        .expect("JSON");
        let timed = validate_trace_events(&doc);
        assert!(timed > 3, "{cause}: only {timed} timed events");
        let events = doc["traceEvents"].as_array().expect("events");
        let latency = events
            .iter()
            .find(|e| e["cat"] == "spike")
            .expect("the latency span");
        assert_eq!(latency["args"]["cause"], cause);
        assert_eq!(latency["pid"], id);
        // The late thread's own run is on its CPU's task track.
        let cpu = latency["args"]["cpu"].as_u64().expect("cpu");
        let victim = latency["args"]["victim_tid"].as_i64().expect("tid");
        assert!(
            events.iter().any(|e| e["cat"] == "victim"
                && e["args"]["tid"] == victim
                && e["tid"].as_u64() == Some(10 + cpu * 2)),
            "{cause}: no span of the late thread on CPU {cpu}"
        );
    }
}

/// The bundle is one .tar.gz that real tar lists; its trace window opens in real
/// trace-cmd and re-analyses to the same spike.
#[test]
fn bundle_holds_a_window_trace_cmd_reads_and_rtwhy_reanalyses() {
    let dir = tempfile::tempdir().expect("tempdir");
    for cause in ["softirq", "preemption"] {
        let (trace, args) = fixture(cause);
        let out = dir.path().join(format!("{cause}.tar.gz"));
        let o = report(
            &["--bundle", "--out", out.to_str().expect("utf-8")],
            &trace,
            &args,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if !require("tar") {
            return;
        }
        let list = Command::new("tar")
            .arg("-tzf")
            .arg(&out)
            .output()
            .expect("tar");
        assert!(list.status.success());
        let names = String::from_utf8_lossy(&list.stdout).into_owned();
        for member in [
            "trace-window.dat",
            "report.md",
            "spike-1.svg",
            "analysis.json",
            "perfetto.json",
        ] {
            assert!(
                names.lines().any(|l| l == format!("{cause}/{member}")),
                "{cause}: no {member} in\n{names}"
            );
        }
        let x = Command::new("tar")
            .arg("-xzf")
            .arg(&out)
            .arg("-C")
            .arg(dir.path())
            .status()
            .expect("tar");
        assert!(x.success());
        let window = dir.path().join(cause).join("trace-window.dat");
        let md = std::fs::read_to_string(dir.path().join(cause).join("report.md")).expect("md");
        assert!(md.contains("](spike-1.svg)"), "{md}");
        assert!(md.contains("trace-window.dat"), "{md}");
        if require("trace-cmd") {
            let tc = Command::new("trace-cmd")
                .arg("report")
                .arg(&window)
                .output()
                .expect("trace-cmd");
            assert!(
                tc.status.success(),
                "trace-cmd report: {}",
                String::from_utf8_lossy(&tc.stderr)
            );
            let lines = String::from_utf8_lossy(&tc.stdout).lines().count();
            assert!(lines > 50, "trace-cmd printed only {lines} lines");
        }
        let analyze = |path: &Path| -> Value {
            let o = Command::new(rtwhy())
                .args(["analyze", "--format", "json"])
                .args(&args)
                .arg(path)
                .output()
                .expect("analyze");
            serde_json::from_slice(&o.stdout).expect("json")
        };
        // Every spike the bundle reports comes out of its window again, the same.
        let shown: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(cause).join("analysis.json")).expect("json"),
        )
        .expect("json");
        let again = analyze(&window);
        let keys = |v: &Value| -> Vec<String> {
            v["spikes"]
                .as_array()
                .expect("spikes")
                .iter()
                .map(|s| {
                    format!(
                        "{} {} {} {} {}",
                        s["victim"]["tid"],
                        s["cpu"],
                        s["end"],
                        s["latency_ns"],
                        s["primary"]["cause"]
                    )
                })
                .collect()
        };
        let (shown, again) = (keys(&shown), keys(&again));
        assert!(!shown.is_empty());
        for s in &shown {
            assert!(
                again.contains(s),
                "{cause}: spike {s} is not in the window's analysis {again:?}"
            );
        }
    }
}

fn one_line_exit_2(o: &Output, what: &str) -> String {
    assert_eq!(
        o.status.code(),
        Some(2),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{what}: {err}");
    assert!(o.stdout.is_empty(), "{what}: wrote to stdout");
    err
}

#[test]
fn bad_input_gives_one_line_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = dir.path().join("junk.dat");
    std::fs::write(&junk, b"\x00\x01 not a trace").expect("write");
    let out = dir.path().join("r.md");
    let o = report(
        &["--out", out.to_str().expect("utf-8")],
        junk.to_str().expect("utf-8"),
        &[],
    );
    let err = one_line_exit_2(&o, "junk capture");
    assert!(err.contains("junk.dat"), "{err}");
    let (trace, args) = fixture("softirq");
    for bad in ["/proc/rtwhy-report.md", "/nonexistent-dir/r.md"] {
        let o = report(&["--out", bad], &trace, &args);
        let err = one_line_exit_2(&o, bad);
        assert!(err.contains(bad.split('/').nth(1).unwrap_or(bad)), "{err}");
        assert!(!Path::new(bad).exists());
    }
    let o = report(&["--format", "pdf"], &trace, &args);
    let err = one_line_exit_2(&o, "unknown format");
    assert!(err.contains("pdf"), "{err}");
    let o = report(&["--spike", "9"], &trace, &args);
    one_line_exit_2(&o, "no such spike");
    let empty = dir.path().join("empty.tar.gz");
    let o = report(
        &[
            "--bundle",
            "--threshold",
            "1s",
            "--out",
            empty.to_str().expect("utf-8"),
        ],
        "fixtures/lock_contention/lock_contention.dat",
        &[],
    );
    let err = one_line_exit_2(&o, "bundle without spikes");
    assert!(err.contains("no spike above"), "{err}");
    // Nothing but the junk input is left in the directory: no partial report, no
    // temporary file.
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert_eq!(left.len(), 1);
}

/// A capture's `rtwhy-fact:` markers fill the report's system summary; pasted
/// `trace-cmd report` text works as input too.
#[test]
fn recorded_facts_fill_the_system_summary_of_report_text_input() {
    let (trace, args) = fixture("softirq");
    let dump = Command::new(rtwhy())
        .current_dir(workspace())
        .args(["dump", &trace])
        .output()
        .expect("dump");
    let text = String::from_utf8(dump.stdout).expect("utf-8");
    let facts = [
        "kernel.release=6.18.44-fc-v669",
        "kernel.version=#1 SMP PREEMPT_DYNAMIC @0",
        "kernel.preempt=none",
        "kernel.cmdline=console=ttyS0 isolcpus=1 rcu_nocbs=1",
        "kernel.hz=250",
        "cpu.count=2",
        "kernel.realtime=0",
        "sched.rt_runtime_us=950000",
        "sched.rt_period_us=1000000",
        "cpu.1.governor=schedutil",
    ];
    let mut input = String::from("cpus=2\n");
    for f in facts {
        input.push_str(&format!(
            "           <...>-5887  [000]  4356.108000: print:                tracing_mark_write: rtwhy-fact: {f}\n"
        ));
    }
    input.extend(text.lines().skip(1).map(|l| format!("{l}\n")));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("softirq-with-facts.txt");
    std::fs::write(&path, input).expect("write");
    let md = stdout_of(report(
        &["--format", "markdown"],
        path.to_str().expect("utf-8"),
        &args,
    ));
    for row in [
        "| Kernel | 6.18.44-fc-v669 (#1 SMP PREEMPT_DYNAMIC @0) |",
        "| Preemption model | none |",
        "| PREEMPT_RT | no |",
        "| Isolated CPUs | 1 (isolcpus= on the kernel command line); rcu_nocbs=1 |",
        "| RT throttling | 950000 us of every 1000000 us |",
        "| cpufreq governor | schedutil |",
        "| Timer frequency | HZ=250 |",
    ] {
        assert!(md.contains(row), "no {row:?} in\n{md}");
    }
    assert!(md.contains("**Verdict: softirq**"), "{md}");
    // doctor's checks on the recorded facts: what the machine's settings cost.
    for finding in [
        "- **warning** `preempt_rt`: not a PREEMPT_RT kernel",
        "- **warning** `preempt_model`: preemption model none",
        "- **warning** `isolation`: CPU 1 is isolated, but the command line lacks nohz_full, irqaffinity, kthread_cpus; fix: add to the kernel command line: nohz_full=1 irqaffinity=0 kthread_cpus=0",
        "- **warning** `cpu_governor`:",
    ] {
        assert!(md.contains(finding), "no {finding:?} in\n{md}");
    }
    assert!(!md.contains("`rt_throttling`"), "{md}");
    // Report text cannot become a trace.dat window.
    let o = report(
        &[
            "--bundle",
            "--out",
            dir.path().join("b.tar.gz").to_str().expect("utf-8"),
        ],
        path.to_str().expect("utf-8"),
        &args,
    );
    one_line_exit_2(&o, "bundle of text");
}

#[test]
fn analyze_and_report_print_the_same_markdown() {
    // One house for output: `rtwhy analyze --format markdown` is the report's Markdown.
    let mut compared = 0;
    let mut dats: Vec<PathBuf> = ["fixtures", "fixtures/recorded"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(workspace().join(d))
                .into_iter()
                .flatten()
                .flatten()
        })
        .flat_map(|e| {
            let p = e.path();
            match p.is_dir() {
                true => rtwhy_tests::dat_files(&p),
                false => Vec::new(),
            }
        })
        .collect();
    dats.sort();
    dats.dedup();
    for dat in dats {
        let run = |cmd: &str| {
            Command::new(rtwhy())
                .args([cmd, "--format", "markdown"])
                .arg(&dat)
                .output()
                .expect("runs")
        };
        let (a, r) = (run("analyze"), run("report"));
        if !r.status.success() {
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(&a.stdout),
            String::from_utf8_lossy(&r.stdout),
            "{}",
            dat.display()
        );
        compared += 1;
    }
    assert!(compared > 5, "only {compared} fixtures compared");
}
