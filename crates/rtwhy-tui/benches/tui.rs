//! How fast the viewer opens a large capture and redraws on pan and zoom.
//!
//! Writes a synthetic trace of about 1 million events (the real records of
//! `fixtures/recorded/vm-net-v7-zstd.dat`, repeated with shifted timestamps by rtwhy's
//! own trace.dat writer) unless it exists, then measures, in this process:
//! opening it and drawing the first frame (decode, index, lanes, analysis, one draw),
//! and redraws after pan and zoom keys on ratatui's `TestBackend` at 200x50 and 80x24,
//! over the whole capture and over a spike's window. `scripts/bench-tui.sh` runs it
//! beside `trace-cmd report` on the same file.
//!
//! Usage: `cargo bench -p rtwhy-tui --bench tui -- [--trace FILE] [--events N]`

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rtwhy_analyze::Config;
use rtwhy_decode::tracedat::{TraceBuilder, TraceFile};
use rtwhy_tui::{Action, App, Capture, Theme};

/// Repeats the seed's records with shifted timestamps until `events` are written.
fn synthesize(seed: &Path, out: &Path, events: u64) -> u64 {
    let file = TraceFile::open(seed).expect("seed opens");
    let meta = file.meta();
    let buffer = file.default_buffer().expect("buffer");
    let mut recs: Vec<(u64, u32, Vec<u8>)> = Vec::new();
    let mut s = file.buffer_records(0).expect("stream");
    while let Some(r) = s.next_record().expect("record") {
        recs.push((r.ts, r.cpu, r.data.to_vec()));
    }
    let ncpus = recs.iter().map(|r| r.1 as usize + 1).max().unwrap_or(1);
    let first = recs.first().map(|e| e.0).unwrap_or(0);
    let span = recs.last().map(|e| e.0).unwrap_or(0) - first + 1_000;
    let mut b = TraceBuilder::like(meta, buffer.page_size);
    b.writer_mut().set_cpu_count(ncpus);
    let mut n = 0u64;
    'rounds: for round in 0.. {
        for (ts, cpu, data) in &recs {
            if n >= events {
                break 'rounds;
            }
            b.push(*cpu, ts - first + round * span, data).expect("fits");
            n += 1;
        }
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(out).expect("create"));
    b.finish(&mut f).expect("write");
    n
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    rtwhy_model::quantile(v, p).unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Peak resident memory of this process so far.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Redraw times after each of `keys`, cycled `n` times.
fn redraws(app: &mut App, w: u16, h: u16, keys: &[Action], n: usize) -> Vec<Duration> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| f.render_widget(&*app, f.area())).unwrap();
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let k = keys[i % keys.len()].clone();
        let start = Instant::now();
        app.apply(k);
        t.draw(|f| f.render_widget(&*app, f.area())).unwrap();
        v.push(start.elapsed());
    }
    v
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut trace = std::env::temp_dir().join("rtwhy-tui-bench-1m.dat");
    let mut events = 1_000_000u64;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--trace" => trace = PathBuf::from(args.next().expect("--trace FILE")),
            "--events" => {
                events = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("--events N")
            }
            _ => {} // `cargo bench` adds --bench
        }
    }
    if !trace.exists() {
        let seed = root.join("fixtures/recorded/vm-net-v7-zstd.dat");
        let n = synthesize(&seed, &trace, events);
        eprintln!("wrote {} ({n} events)", trace.display());
    }
    let size = std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0);

    // Open + first frame, five times; the file is in the page cache after the first.
    let mut opens = Vec::new();
    let mut count = 0;
    let mut spikes = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let cap = Capture::open(&trace, &Config::default()).expect("loads");
        count = cap.events().len();
        spikes = cap.analysis.spikes.len();
        let app = App::new(vec![cap], Theme { color: true });
        let mut t = Terminal::new(TestBackend::new(200, 50)).unwrap();
        t.draw(|f| f.render_widget(&app, f.area())).unwrap();
        opens.push(start.elapsed());
    }
    let rss = peak_rss_mib();
    println!(
        "trace: {} ({:.1} MiB, {count} events, {spikes} spikes)",
        trace.display(),
        size as f64 / (1 << 20) as f64
    );
    println!(
        "open + first frame (200x50): median {}, best {}, worst {}; peak RSS {rss:.0} MiB",
        ms(percentile(&mut opens.clone(), 0.5)),
        ms(*opens.iter().min().unwrap()),
        ms(*opens.iter().max().unwrap())
    );

    let cap = Capture::open(&trace, &Config::default()).expect("loads");
    let (entries, payloads, lanes) = cap.heap_bytes();
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "kept per capture: entries {:.1} MiB ({} B/event), payloads {:.1} MiB ({:.1} B/event), lanes {:.1} MiB",
        mib(entries),
        entries / count.max(1),
        mib(payloads),
        payloads as f64 / count.max(1) as f64,
        mib(lanes)
    );
    let mut app = App::new(vec![cap], Theme { color: true });
    println!("| view | terminal | keys | redraws | median | p99 | max |");
    println!("|---|---|---|---|---|---|---|");
    let pan = [Action::PanRight, Action::PanLeft];
    let zoom = [Action::ZoomIn, Action::ZoomOut];
    for (w, h) in [(200u16, 50u16), (80, 24)] {
        for (view, whole) in [("whole capture", true), ("worst spike's window", false)] {
            for (name, keys) in [("pan H/L", &pan[..]), ("zoom +/-", &zoom[..])] {
                app.apply(if whole { Action::ZoomAll } else { Action::Jump });
                let mut v = redraws(&mut app, w, h, keys, 400);
                let max = *v.iter().max().unwrap();
                println!(
                    "| {view} | {w}x{h} | {name} | {} | {} | {} | {} |",
                    v.len(),
                    ms(percentile(&mut v, 0.5)),
                    ms(percentile(&mut v, 0.99)),
                    ms(max)
                );
            }
        }
    }
}
