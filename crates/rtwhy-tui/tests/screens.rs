//! The viewer drawn on ratatui's `TestBackend` from real fixtures: a snapshot of every
//! pane (one clear spike, no spike, a 50 ms spike, a trace with dropped events, the
//! help, a session's overview), and what the keys do to the screen.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::Terminal;
use rtwhy_analyze::Config;
use rtwhy_tui::keys::{KEYS, OVERVIEW_KEYS, SESSION_KEYS};
use rtwhy_tui::{areas, Action, App, Capture, Pane, Screen, Theme};

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
}

fn capture(path: &Path) -> Capture {
    Capture::open(path, &Config::default()).expect("loads")
}

fn app(path: &Path) -> App {
    App::new(vec![capture(path)], Theme { color: false })
}

fn draw(app: &App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| f.render_widget(app, f.area())).unwrap();
    t.backend().buffer().clone()
}

/// The text of `r` in `buf`, one line per row, trailing spaces cut.
fn text(buf: &Buffer, r: Rect) -> String {
    let mut out = String::new();
    for y in r.top()..r.bottom() {
        let mut line = String::new();
        for x in r.left()..r.right() {
            line.push_str(buf.cell((x, y)).map_or(" ", |c| c.symbol()));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn screen(app: &App, w: u16, h: u16) -> String {
    text(&draw(app, w, h), Rect::new(0, 0, w, h))
}

/// Each pane of `app` on a `w`x`h` screen, by name.
fn panes(app: &App, w: u16, h: u16) -> Vec<(&'static str, String)> {
    let buf = draw(app, w, h);
    let a = areas(app, Rect::new(0, 0, w, h));
    vec![
        ("spikes", text(&buf, a.spikes)),
        ("diagnosis", text(&buf, a.diagnosis)),
        ("timeline", text(&buf, a.timeline)),
        ("events", text(&buf, a.events)),
    ]
}

#[test]
fn one_clear_spike_main_screen_80x24() {
    let p = fixture("preemption/preemption.dat");
    let a = app(&p);
    let s = screen(&a, 80, 24);
    // The hog that held the victim's CPU is named on the victim's lane.
    assert!(s.contains("cpu1* ") && s.contains("spin"), "{s}");
    // The spike is cyclictest's own measurement: from the timer's expiry to the breach
    // marker cyclictest wrote, which ends it (the wake-up and the switch-in fall in
    // the columns of these two at this width).
    let marks = s.lines().find(|l| l.starts_with("│mark")).unwrap();
    let at = |c: char| marks.find(c).unwrap_or_else(|| panic!("no {c}: {marks}"));
    let last = marks.rfind(|c: char| c.is_ascii_alphabetic()).unwrap();
    assert!(at('T') < at('B') && at('B') == last, "{marks}");
    insta::assert_snapshot!(s);
}

#[test]
fn one_clear_spike_each_pane_120x40() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    for (name, text) in panes(&a, 120, 40) {
        insta::assert_snapshot!(format!("preemption_{name}"), text);
    }
    // With the focus, the diagnosis gets the room to show all of itself.
    a.apply(Action::NextPane);
    a.apply(Action::NextPane);
    assert_eq!(a.focus, Pane::Diagnosis);
    let d = panes(&a, 120, 40).remove(1).1;
    assert!(d.contains("fix") || d.contains("evidence"), "{d}");
    insta::assert_snapshot!("preemption_diagnosis_focused", d);
}

#[test]
fn no_spike_says_what_was_measured() {
    let p = fixture("recorded/vm-nokallsyms-v6.dat");
    let a = app(&p);
    assert!(a.rows().is_empty());
    let s = screen(&a, 80, 24);
    assert!(s.contains("No latency spike above 100.0us"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn huge_spike_fits_its_window() {
    let p = fixture("rt_throttling/rt_throttling.dat");
    let a = app(&p);
    // The spike ranked first is selected: cyclictest's (FIFO 80) 48.91 ms, above spin's
    // (FIFO 70) 50.38 ms.
    let first = a.spike().expect("the first spike is selected");
    assert!(first.latency_ns > 48_000_000, "{}", first.latency_ns);
    assert_eq!(first.victim.comm.to_str_lossy(), "cyclictest");
    // The whole window, "should have run" to "ran", is on screen.
    assert!(a.view.start < first.start.0 && a.view.end() > first.end.0);
    insta::assert_snapshot!(screen(&a, 120, 40));
}

#[test]
fn dropped_events_are_shown_where_they_happened() {
    let p = fixture("hwlat/hwlat.dat");
    let cap = capture(&p);
    assert!(cap.dropped.0 > 0, "the fixture's pages report lost events");
    let at = cap
        .events()
        .iter()
        .find(|e| e.dropped_before)
        .expect("a flagged event")
        .ts;
    let mut a = App::new(vec![cap], Theme { color: false });
    a.apply(Action::ZoomAll);
    a.set_cursor(at);
    for _ in 0..8 {
        a.apply(Action::ZoomIn);
    }
    let s = screen(&a, 120, 40);
    assert!(s.contains("EVENTS DROPPED]"), "{s}");
    assert!(s.contains("47518 events dropped"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn help_lists_every_key() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    a.apply(Action::Help);
    let s = screen(&a, 80, 24);
    for (keys, what) in KEYS {
        assert!(s.contains(keys) && s.contains(what), "{keys} missing:\n{s}");
    }
    insta::assert_snapshot!(s);
    a.apply(Action::Help);
    assert!(!screen(&a, 80, 24).contains("Keys ("));
}

#[test]
fn zoom_pan_and_jump_move_the_window() {
    let p = fixture("rt_throttling/rt_throttling.dat");
    let mut a = app(&p);
    draw(&a, 100, 30);
    let v = a.view;
    a.apply(Action::ZoomIn);
    assert_eq!(a.view.span, v.span / 2);
    assert!(a.view.start <= a.cursor && a.cursor <= a.view.end());
    a.apply(Action::ZoomOut);
    assert_eq!(a.view.span, v.span / 2 * 2);
    let before = a.view.start;
    a.apply(Action::PanRight);
    assert_eq!(a.view.start, before + a.view.span / 2);
    a.apply(Action::ZoomAll);
    let (lo, hi) = a.capture().unwrap().span();
    assert_eq!((a.view.start, a.view.end()), (lo, hi));
    a.apply(Action::Jump);
    assert_eq!(a.view, v);
    // n/p walk the spikes in list order and show each one.
    a.apply(Action::ToggleSort);
    a.apply(Action::NextSpike);
    let s = a.spike().unwrap().clone();
    assert!(a.view.start < s.start.0 && s.end.0 < a.view.end());
    assert_eq!(a.cursor, s.start.0);
}

#[test]
fn timeline_title_follows_zoom() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    // The spike's 265.0 us and a quarter of it on each side.
    assert!(screen(&a, 80, 24).contains("397.5us wide"));
    a.apply(Action::ZoomIn);
    assert!(screen(&a, 80, 24).contains("198.8us wide"));
}

#[test]
fn search_finds_a_task_or_an_event() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    a.apply(Action::SearchStart);
    for c in "sched_switch".chars() {
        a.apply(Action::SearchChar(c));
    }
    assert!(screen(&a, 80, 24).contains("/sched_switch_"));
    a.apply(Action::SearchSubmit);
    let first = a.cursor;
    {
        let cap = a.capture().unwrap();
        assert_eq!(cap.event_name(cap.index_at(first)), "sched_switch");
    }
    a.apply(Action::SearchNext);
    let cap = a.capture().unwrap();
    assert!(a.cursor > first);
    assert_eq!(cap.event_name(cap.index_at(a.cursor)), "sched_switch");
    a.apply(Action::SearchStart);
    for c in "no-such-thing".chars() {
        a.apply(Action::SearchChar(c));
    }
    a.apply(Action::SearchSubmit);
    assert!(screen(&a, 80, 24).contains("`no-such-thing` not found"));
}

#[test]
fn events_pane_follows_the_cursor() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    while a.focus != Pane::Events {
        a.apply(Action::NextPane);
    }
    let cap_ts = |a: &App| a.cursor;
    let t0 = cap_ts(&a);
    a.apply(Action::Down);
    assert!(cap_ts(&a) >= t0);
    let s = panes(&a, 100, 30).remove(3).1;
    let cursor_line = s
        .lines()
        .find(|l| l.starts_with("│>"))
        .expect("a highlighted event");
    assert!(
        cursor_line.contains(&rtwhy_tui::fmt_ts(a.cursor)),
        "{cursor_line}"
    );
}

#[test]
fn no_color_means_no_colours() {
    let p = fixture("preemption/preemption.dat");
    let mut a = app(&p);
    let plain = draw(&a, 80, 24);
    assert!(plain
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    a.theme = Theme { color: true };
    let coloured = draw(&a, 80, 24);
    assert!(coloured.content().iter().any(|c| c.fg != Color::Reset));
    // The same characters either way: colour only adds.
    assert_eq!(
        text(&plain, Rect::new(0, 0, 80, 24)),
        text(&coloured, Rect::new(0, 0, 80, 24))
    );
}

#[test]
fn too_small_a_terminal_says_so() {
    let p = fixture("preemption/preemption.dat");
    let a = app(&p);
    assert!(screen(&a, 40, 10).contains("terminal 40x10 is too small"));
}

#[test]
fn report_text_shows_its_own_lines_and_the_same_spikes() {
    let p = fixture("preemption/preemption.dat");
    let dat = capture(&p);
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("preemption.txt");
    let mut report = String::from("cpus=2\n");
    let mut line = String::new();
    for i in 0..dat.events().len() {
        line.clear();
        dat.write_line(i, &mut line);
        report.push_str(&line);
        report.push('\n');
    }
    std::fs::write(&txt, &report).unwrap();
    let text_cap = Capture::open(&txt, &Config::default()).unwrap();
    assert_eq!(text_cap.analysis.spikes.len(), dat.analysis.spikes.len());
    let n = text_cap.events().len();
    assert_eq!(n, dat.events().len());
    for i in [0, n / 2, n - 1] {
        let (mut a, mut b) = (String::new(), String::new());
        dat.write_line(i, &mut a);
        text_cap.write_line(i, &mut b);
        assert_eq!(a, b);
    }
    // Text saved on Windows: the lines end in CR LF; the pane shows them without the CR.
    let crlf = dir.path().join("preemption-crlf.txt");
    std::fs::write(&crlf, report.replace('\n', "\r\n")).unwrap();
    let crlf_cap = Capture::open(&crlf, &Config::default()).unwrap();
    let (mut a, mut b) = (String::new(), String::new());
    dat.write_line(n / 2, &mut a);
    crlf_cap.write_line(n / 2, &mut b);
    assert_eq!(a, b);
}

#[test]
fn a_session_directory_opens_every_capture() {
    let dir = tempfile::tempdir().unwrap();
    for (name, rel) in [
        ("spike-001.dat", "preemption/preemption.dat"),
        ("spike-002.dat", "hwlat/hwlat.dat"),
    ] {
        std::fs::copy(fixture(rel), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("session.json"), "{}").unwrap();
    let paths = rtwhy_tui::session_captures(dir.path()).unwrap();
    assert_eq!(paths.len(), 2);
    let caps = paths.iter().map(|p| capture(p)).collect();
    let mut a = App::new(caps, Theme { color: false });
    assert_eq!(a.rows().len(), 4);
    // The worst spike (hwlat's 6.5 ms) is in the second capture.
    assert_eq!(a.current, 1);
    while a.selected > 0 {
        a.apply(Action::PrevSpike);
    }
    assert_eq!(a.current, 0);
    assert!(screen(&a, 80, 24).contains("[1/2] spike-001.dat"));
    let empty = tempfile::tempdir().unwrap();
    assert!(rtwhy_tui::session_captures(empty.path())
        .unwrap_err()
        .to_string()
        .contains("no captures"));
}

#[test]
fn every_fixture_draws_at_every_size_after_every_key() {
    let root = fixture("");
    let mut dats: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.is_dir())
        .flat_map(|d| {
            std::fs::read_dir(d)
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
        })
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .collect();
    dats.sort();
    assert!(dats.len() >= 10, "{dats:?}");
    let keys = [
        Action::ZoomAll,
        Action::Right,
        Action::PanLeft,
        Action::ZoomIn,
        Action::NextPane,
        Action::Down,
        Action::PageDown,
        Action::NextSpike,
        Action::NextPane,
        Action::Up,
        Action::ZoomOut,
        Action::NextPane,
        Action::PageUp,
        Action::Left,
        Action::PrevSpike,
        Action::Help,
    ];
    for p in &dats {
        let mut a = app(p);
        for k in keys.iter().cycle().take(keys.len() * 2) {
            a.apply(k.clone());
            for (w, h) in [(60, 16), (80, 24), (200, 60)] {
                let s = screen(&a, w, h);
                assert!(
                    s.contains("help") || s.contains("Keys ("),
                    "{}:\n{s}",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn captures_arriving_later_join_the_list() {
    let mut a = App::new(Vec::new(), Theme { color: false });
    let s = screen(&a, 80, 24);
    assert!(s.contains("No capture yet"), "{s}");
    let p1 = fixture("preemption/preemption.dat");
    a.add_capture(capture(&p1));
    assert_eq!(a.rows().len(), 1);
    let first = a.spike().expect("the first spike is shown").clone();
    assert!(a.view.start < first.start.0 && first.end.0 < a.view.end());
    let p2 = fixture("hwlat/hwlat.dat");
    a.add_capture(capture(&p2));
    assert_eq!(a.rows().len(), 4);
    // The spike being looked at stays selected.
    assert_eq!(a.spike(), Some(&first));
    assert!(screen(&a, 80, 24).contains("new capture hwlat.dat: 3 spikes"));
}

#[test]
fn the_wheel_zooms_at_the_pointer_and_a_click_moves_the_cursor() {
    use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
    let p = fixture("rt_throttling/rt_throttling.dat");
    let mut a = app(&p);
    let buf = draw(&a, 120, 40);
    let tl = areas(&a, Rect::new(0, 0, 120, 40)).timeline;
    // A column a third of the way along the time axis, on the first lane's row.
    let (x, y) = (tl.x + tl.width / 3, tl.y + 2);
    assert!(buf.cell((x, y)).is_some());
    let under = a.time_at_column(x).expect("over the timeline");
    let mouse = |kind| MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    };
    let before = a.view;
    rtwhy_tui::keys::on_mouse(&mut a, mouse(MouseEventKind::ScrollUp));
    assert_eq!(a.view.span, before.span / 2);
    // The time under the pointer stays under it (to a column's width).
    draw(&a, 120, 40);
    let now = a.time_at_column(x).unwrap();
    assert!(now.abs_diff(under) <= a.view.span / 100, "{under} -> {now}");
    rtwhy_tui::keys::on_mouse(&mut a, mouse(MouseEventKind::ScrollDown));
    assert_eq!(a.view.span, before.span / 2 * 2);
    rtwhy_tui::keys::on_mouse(&mut a, mouse(MouseEventKind::Down(MouseButton::Left)));
    assert_eq!(a.cursor, a.time_at_column(x).unwrap());
}

#[test]
fn an_rtla_trace_lists_its_timerlat_periods() {
    // rtla stopped on the only thread sample over 3 ms (-a 3000) of
    // fixtures/rtla-idle-stall:
    //   <idle>-0   [001] d..h1..  87.172993: #2443  context    irq timer_latency   4167650 ns
    //   timerlat/1-164 [001] ....... 87.173629: #2443  context thread timer_latency   4813220 ns
    let config = Config {
        threshold: rtwhy_model::Nanos(3_000_000),
        ..Config::default()
    };
    let cap = Capture::open(&fixture("rtla-idle-stall/timerlat_trace.txt"), &config).unwrap();
    let periods = &cap.timerlat.as_ref().expect("timerlat periods").spikes;
    assert_eq!(periods.len(), 1, "{periods:#?}");
    let p = &periods[0];
    assert_eq!((p.cpu, p.seqnum), (1, 2443));
    assert_eq!(p.thread_latency_ns, Some(4_813_220));
    // The expiry: the IRQ sample's time minus its latency.
    assert_eq!(p.expected.0, 87_172_993_000 - 4_167_650);
    let a = App::new(vec![cap], Theme { color: false });
    assert!(
        a.rows().is_empty(),
        "no scheduler-event spike in an rtla trace"
    );
    let s = screen(&a, 120, 40);
    assert!(s.contains("Timerlat periods 1 over 3.000ms"), "{s}");
    let row = s
        .lines()
        .find(|l| l.contains(" 2443 "))
        .unwrap_or_else(|| panic!("no row of period 2443:\n{s}"));
    assert!(row.contains("4.813ms"), "{row}");
    insta::assert_snapshot!(s);
}

/// A session directory assembled from real fixture captures and a written overview (no
/// recorded session is small enough to be a fixture): cyclictest:4189's capture 1 is
/// `preemption.dat` (265.0 us, preemption), cyclictest:13472's capture 2 is `hwlat.dat`
/// (8.356 ms, hwlat) and its capture 3 was deleted (listed, not on disk). Threshold
/// 150 us; besides, each thread has wake-ups under it and breaches no capture diagnosed,
/// and cyclictest:13472 one wake-up at 5 ms the detector counted and never reported.
fn assembled_session() -> (tempfile::TempDir, App) {
    assembled_session_with_unseen(0, 0)
}

/// The same, its detector having found `unseen` wake-ups at their thread's switch-out,
/// none later than `latest_ns`.
fn assembled_session_with_unseen(unseen: u64, latest_ns: u64) -> (tempfile::TempDir, App) {
    use rtwhy_model::{Histogram, Overview, ThreadOverview, OVERVIEW_SCHEMA};
    let dir = tempfile::tempdir().unwrap();
    for (name, rel) in [
        ("spike-001.dat", "preemption/preemption.dat"),
        ("spike-002.dat", "hwlat/hwlat.dat"),
    ] {
        std::fs::copy(fixture(rel), dir.path().join(name)).unwrap();
    }
    let hist = |v: &[(u64, u64)]| {
        let mut h = Histogram::default();
        for (ns, n) in v {
            for _ in 0..*n {
                h.add(*ns);
            }
        }
        h
    };
    let a = ThreadOverview::new(
        4189,
        "cyclictest".into(),
        &[(
            1,
            hist(&[
                (6_000, 1500),
                (9_000, 400),
                (20_000, 60),
                (40_000, 7),
                (265_000, 1),
                (300_000, 2),
            ]),
        )],
        &[
            ("preemption".into(), hist(&[(265_000, 1)])),
            ("not_captured".into(), hist(&[(300_000, 2)])),
        ],
    );
    let b = ThreadOverview::new(
        13472,
        "cyclictest".into(),
        &[(
            1,
            hist(&[
                (4_000, 900),
                (12_000, 30),
                (5_000_000, 1),
                (8_100_000, 1),
                (8_356_000, 1),
            ]),
        )],
        &[("hwlat".into(), hist(&[(8_100_000, 1), (8_356_000, 1)]))],
    );
    let overview = Overview {
        schema: OVERVIEW_SCHEMA.into(),
        detector: "bpf".into(),
        threshold_ns: 150_000,
        from_ns: 4_290_000_000_000,
        to_ns: 4_550_000_000_000,
        from_unix_ns: None,
        sessions: Vec::new(),
        wakeups_lost: 0,
        wakeups_unseen: unseen,
        wakeups_unseen_latest_ns: latest_ns,
        breaches_lost: 0,
        threads: vec![a, b],
    };
    let doc = serde_json::json!({
        "schema": "rtwhy.session/2",
        "spikes": [
            {"capture": 1, "file": "spike-001.dat", "tid": 4189, "comm": "cyclictest", "cpu": 1,
             "latency_ns": 265_000, "cause": "preemption", "summary": "spin held CPU 1"},
            {"capture": 2, "file": "spike-002.dat", "tid": 13472, "comm": "cyclictest", "cpu": 1,
             "latency_ns": 8_356_000, "cause": "hwlat", "summary": "CPU 1 stopped"},
            {"capture": 3, "file": "spike-003.dat", "tid": 13472, "comm": "cyclictest", "cpu": 1,
             "latency_ns": 8_100_000, "cause": "hwlat", "summary": "CPU 1 stopped"},
        ],
    });
    std::fs::write(
        dir.path().join("overview.json"),
        serde_json::to_string(&overview).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("session.json"), doc.to_string()).unwrap();
    let caps = rtwhy_tui::capture_files(dir.path())
        .unwrap()
        .iter()
        .map(|p| capture(p))
        .collect();
    let mut app = App::new(caps, Theme { color: false });
    app.set_session(rtwhy_tui::session::Session::new(overview, &doc));
    app.screen = Screen::Overview;
    (dir, app)
}

#[test]
fn wakeups_found_at_the_switch_out_are_on_the_status_line() {
    let (_dir, a) = assembled_session();
    assert!(!screen(&a, 160, 40).contains("switch-out"));
    let (_dir, a) = assembled_session_with_unseen(19, 1_166_823);
    let s = screen(&a, 160, 40);
    assert!(
        s.contains(&format!(
            "19 wake-ups found at the switch-out (estimated, none later than {})",
            rtwhy_model::human_duration_compact(1_166_823)
        )),
        "{s}"
    );
}

#[test]
fn a_session_opens_on_its_overview_and_a_bar_opens_its_capture() {
    let (_dir, mut a) = assembled_session();
    let s = screen(&a, 120, 40);
    // The threads, the first one's histogram with the cursor on its captured bar, its
    // tail by cause and that bar's capture.
    assert!(s.contains("threshold 150.0 us"), "{s}");
    assert!(
        s.contains("cyclictest:4189: wake-ups per latency bucket"),
        "{s}"
    );
    assert!(s.contains("1 capture (Enter)"), "{s}");
    assert!(
        s.contains("spike-001.dat") && s.contains("= preemption"),
        "{s}"
    );
    assert!(s.contains("~ not captured"), "{s}");
    insta::assert_snapshot!(s);
    // Enter on a bar with one capture opens it on its spike.
    a.apply(Action::Jump);
    assert_eq!(a.screen, Screen::Capture);
    assert_eq!(a.current, 0);
    let spike = a.spike().expect("the capture's spike is selected");
    assert_eq!(spike.victim.tid, 4189);
    assert!(screen(&a, 120, 40).contains("o goes back to the overview"));
    // o goes back, where the cursor was.
    a.apply(Action::Overview);
    assert_eq!(a.screen, Screen::Overview);
    assert_eq!(a.bar_captures().len(), 1);
}

#[test]
fn a_bar_lists_its_captures_and_one_deleted_is_not_opened() {
    let (_dir, mut a) = assembled_session();
    draw(&a, 120, 40);
    a.apply(Action::Down);
    assert_eq!(a.thread().unwrap().tid, 13472);
    // Right until the bar of its two 8 ms breaches.
    for _ in 0..100 {
        if a.bar_captures().len() == 2 {
            break;
        }
        a.apply(Action::Right);
    }
    assert_eq!(a.bar_captures().len(), 2);
    a.apply(Action::Jump);
    assert!(a.at.in_list);
    let s = screen(&a, 120, 40);
    assert!(s.contains("not on disk"), "{s}");
    insta::assert_snapshot!(s);
    // Worst first: capture 2, then the deleted capture 3.
    a.apply(Action::Down);
    a.apply(Action::Jump);
    assert_eq!(a.screen, Screen::Overview);
    assert!(screen(&a, 120, 40).contains("spike-003.dat is not on disk"));
    a.apply(Action::Up);
    a.apply(Action::Jump);
    assert_eq!(a.screen, Screen::Capture);
    assert_eq!(a.current, 1);
    assert_eq!(a.spike().unwrap().latency_ns, 8_356_000);
    // Esc leaves the list without quitting.
    a.apply(Action::Overview);
    rtwhy_tui::keys::on_key(
        &mut a,
        crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Esc),
    );
    assert!(!a.at.in_list && !a.quit);
}

#[test]
fn a_wake_up_above_the_threshold_that_was_no_breach_is_drawn_apart() {
    let (_dir, mut a) = assembled_session();
    draw(&a, 120, 40);
    // cyclictest:4189 has none: no such glyph, no such legend.
    assert!(!screen(&a, 120, 40).contains("no breach"));
    a.apply(Action::Down);
    let s = screen(&a, 120, 40);
    assert!(s.contains("▒ above, no breach 1"), "{s}");
    // Its bar, at 5 ms, is one column of that glyph, left of the 8 ms hwlat bar.
    let at = |l: &str, g: char| l.chars().position(|c| c == g);
    let bar: Vec<usize> = s
        .lines()
        .filter(|l| !l.contains("threshold"))
        .filter_map(|l| at(l, '▒'))
        .collect();
    assert!(!bar.is_empty() && bar.iter().all(|c| *c == bar[0]), "{s}");
    let hwlat = s
        .lines()
        .find_map(|l| at(l, '?').filter(|_| l.contains('│')));
    assert!(hwlat.is_some_and(|h| h > bar[0]), "{s}");
}

#[test]
fn a_bar_without_capture_says_why() {
    let (_dir, mut a) = assembled_session();
    draw(&a, 120, 40);
    a.apply(Action::Right);
    let s = screen(&a, 120, 40);
    assert!(s.contains("2 breaches: 2 not captured"), "{s}");
    a.apply(Action::Jump);
    assert_eq!(a.screen, Screen::Overview);
    assert!(screen(&a, 120, 40).contains("its 2 breaches not captured"));
}

#[test]
fn the_overview_help_lists_its_keys_and_a_capture_of_the_session_lists_o() {
    let (_dir, mut a) = assembled_session();
    a.apply(Action::Help);
    let s = screen(&a, 100, 30);
    for (keys, what) in OVERVIEW_KEYS {
        assert!(s.contains(keys) && s.contains(what), "{keys} missing:\n{s}");
    }
    insta::assert_snapshot!(s);
    a.apply(Action::Help);
    a.apply(Action::Overview);
    a.apply(Action::Help);
    let s = screen(&a, 100, 30);
    for (keys, what) in KEYS.iter().chain(SESSION_KEYS) {
        assert!(s.contains(keys) && s.contains(what), "{keys} missing:\n{s}");
    }
    // Without a session, o says why there is nothing to go to.
    let mut plain = app(&fixture("preemption/preemption.dat"));
    plain.apply(Action::Overview);
    assert!(screen(&plain, 100, 30).contains("no overview"));
}

#[test]
fn the_overview_draws_at_every_size_after_every_key() {
    let (_dir, mut a) = assembled_session();
    let keys = [
        Action::Right,
        Action::Down,
        Action::PanRight,
        Action::Jump,
        Action::NextPane,
        Action::PageDown,
        Action::Up,
        Action::PanLeft,
        Action::Left,
        Action::Help,
        Action::Help,
    ];
    for k in keys.iter().cycle().take(keys.len() * 3) {
        a.apply(k.clone());
        if a.screen != Screen::Overview {
            a.apply(Action::Overview);
        }
        for (w, h) in [(60, 16), (80, 24), (200, 60)] {
            let s = screen(&a, w, h);
            assert!(s.contains("help") || s.contains("Keys ("), "{s}");
        }
    }
    // Colour only adds.
    let plain = draw(&a, 80, 24);
    assert!(plain
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    a.theme = Theme { color: true };
    let coloured = draw(&a, 80, 24);
    assert_eq!(
        text(&plain, Rect::new(0, 0, 80, 24)),
        text(&coloured, Rect::new(0, 0, 80, 24))
    );
}
