//! The report text reader on real `trace-cmd report` / `report -R` output: the wild
//! corpus (`shared/corpus/wild` beside the checkout) and the traces recorded on the project's VM
//! (`fixtures/recorded`), checked against an independent line count, known lines,
//! each other (formatted vs raw), and the binary decoder reading the same `.dat`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use rtwhy_decode::text::TextReader;
use rtwhy_decode::tracedat::TraceFile;
use rtwhy_decode::EventDecoder;
use rtwhy_model::{Comm, Event, EventKind, FieldValue, Nanos, TaskState};

/// The wild corpus, in `shared/` beside the checkout (`RTWHY_WILD_CORPUS` names another).
fn wild() -> PathBuf {
    std::env::var_os("RTWHY_WILD_CORPUS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/wild"),
        PathBuf::from,
    )
}

fn recorded_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/recorded")
}

/// `*.<kind>.txt.zst` files of a directory, sorted; empty when the directory is missing.
fn texts(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let suffix = format!(".{kind}.txt.zst");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.to_string_lossy().ends_with(&suffix));
    v.sort();
    v
}

fn all_texts(kind: &str) -> Vec<PathBuf> {
    let mut v = texts(&wild(), kind);
    v.extend(texts(&recorded_dir(), kind));
    v
}

fn open_zst(path: &Path) -> BufReader<impl Read> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let dec = ruzstd::decoding::StreamingDecoder::new(BufReader::new(file))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    BufReader::with_capacity(1 << 16, dec)
}

fn read_events(path: &Path) -> (Vec<Event>, Option<u32>) {
    let mut r = TextReader::new(open_zst(path));
    let mut events = Vec::new();
    while let Some(ev) = r.next_event() {
        events.push(ev.unwrap_or_else(|e| panic!("{}: {e}", path.display())));
    }
    (events, r.cpus())
}

/// Counts event lines without the reader: `[CPU]` then (flags and) `TIMESTAMP: `.
fn count_event_lines(path: &Path) -> usize {
    let mut text = String::new();
    open_zst(path)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter(|l| is_event_line(l)).count()
}

fn is_event_line(line: &str) -> bool {
    let Some(open) = line.find(" [").or_else(|| line.find('[')) else {
        return false;
    };
    let rest = &line[open..];
    let Some(close) = rest.find(']') else {
        return false;
    };
    let cpu = rest[..close].trim_start_matches([' ', '[']);
    if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let after = rest[close + 1..].trim_start();
    let ts: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    !ts.is_empty() && after[ts.len()..].starts_with(": ") && line[..open].contains('-')
}

/// Events the analyzer needs typed; any of them left generic is a reader bug.
const CORE: &[&str] = &[
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
    "sched_pi_setprio",
    "irq_handler_entry",
    "irq_handler_exit",
    "softirq_entry",
    "softirq_exit",
    "softirq_raise",
    "hrtimer_start",
    "hrtimer_expire_entry",
    "hrtimer_expire_exit",
    "hrtimer_cancel",
    "cpu_idle",
    "cpu_frequency",
    "workqueue_execute_start",
    "workqueue_execute_end",
    "print",
    "sys_enter_futex",
    "sys_exit_futex",
    "sys_enter_clock_nanosleep",
    "sys_exit_clock_nanosleep",
];

#[test]
fn every_event_line_is_one_event_and_core_events_are_typed() {
    let mut files = all_texts("report");
    files.extend(all_texts("raw"));
    assert!(files.len() >= 40, "corpus missing? found {}", files.len());
    let mut typed = 0usize;
    for path in &files {
        let (events, cpus) = read_events(path);
        assert_eq!(events.len(), count_event_lines(path), "{}", path.display());
        assert!(cpus.is_some(), "{}: no cpus= header", path.display());
        for ev in &events {
            if let EventKind::Generic(g) = &ev.kind {
                assert!(
                    !CORE.contains(&g.name.as_str()),
                    "{}: generic core event {ev:?}",
                    path.display()
                );
            } else {
                typed += 1;
            }
        }
    }
    assert!(typed > 200_000, "only {typed} typed events");
}

fn find<'a>(events: &'a [Event], ts: u64, name: &str) -> &'a Event {
    events
        .iter()
        .find(|e| e.ts == Nanos(ts) && e.kind.name() == name)
        .unwrap_or_else(|| panic!("no {name} at {ts}"))
}

#[test]
fn known_lines_of_the_wild_corpus() {
    let wild = wild();
    // hebel23: `bash-1181 [000] 1464.181413: sched_wakeup: rcu_preempt:8 [120] success=1 CPU:000`
    for kind in ["report", "raw"] {
        let (ev, cpus) = read_events(&wild.join(format!("hebel23-wega-armv7-irq.{kind}.txt.zst")));
        assert_eq!(cpus, Some(1));
        let e = find(&ev, 1_464_181_413_000, "sched_wakeup");
        assert_eq!((e.cpu, e.pid), (0, 1181));
        assert_eq!(
            e.kind,
            EventKind::SchedWakeup {
                comm: Comm::new("rcu_preempt"),
                pid: 8,
                prio: 120,
                target_cpu: 0
            }
        );
        let e = find(&ev, 1_464_179_964_000, "irq_handler_entry");
        assert_eq!(
            e.kind,
            EventKind::IrqHandlerEntry {
                irq: 16,
                name: "gp_timer".into()
            }
        );
        assert_eq!(
            find(&ev, 1_464_179_997_000, "irq_handler_exit").kind,
            EventKind::IrqHandlerExit { irq: 16, ret: 1 }
        );
        assert_eq!(
            find(&ev, 1_464_181_359_000, "softirq_entry").kind,
            EventKind::SoftirqEntry { vec: 1 }
        );
    }
    // bengo: `sched_profiler:124 [89] S ==> sched_profiler:123 [120]` (raw prev_state=0x1).
    let (ev, _) = read_events(&wild.join("bengo-i686-sched-fifo.report.txt.zst"));
    let e = find(&ev, 23_568_120_000, "sched_switch");
    assert_eq!(
        e.kind,
        EventKind::SchedSwitch {
            prev_comm: Comm::new("sched_profiler"),
            prev_pid: 124,
            prev_prio: 89,
            prev_state: TaskState(1),
            next_comm: Comm::new("sched_profiler"),
            next_pid: 123,
            next_prio: 120,
        }
    );
    // hip24 xenomai: task names with `:`, hrtimer plugin rendering, FAILED TO PARSE.
    let (ev, _) = read_events(&wild.join("hip24-guest-xenomai-taskset-v7-zlib.report.txt.zst"));
    let e = find(&ev, 2_457_732_430_000, "sched_waking");
    assert_eq!(
        e.kind,
        EventKind::SchedWaking {
            comm: Comm::new("MainTaskHigh:33"),
            pid: 338,
            prio: 79,
            target_cpu: 0
        }
    );
    let e = find(&ev, 2_457_732_431_000, "sched_wakeup");
    assert_eq!(
        e.kind,
        EventKind::SchedWakeup {
            comm: Comm::new("MainTaskHigh:33"),
            pid: 338,
            prio: 79,
            target_cpu: 0
        }
    );
    let e = find(&ev, 2_457_732_429_000, "hrtimer_expire_entry");
    assert_eq!(
        e.kind,
        EventKind::HrtimerExpireEntry {
            hrtimer: 0xffffad3b4107b8e8,
            now: 556_822_296_180,
            function: 0
        }
    );
    let e = find(&ev, 2_457_732_425_000, "cobalt_tick_shot");
    let EventKind::Generic(g) = &e.kind else {
        panic!("{e:?}")
    };
    assert_eq!(g.field("delta"), Some(&FieldValue::Unsigned(281_812)));
    // raw output of the same trace gives the function address.
    let (ev, _) = read_events(&wild.join("hip24-guest-xenomai-taskset-v7-zlib.raw.txt.zst"));
    let e = find(&ev, 2_457_732_429_000, "hrtimer_expire_entry");
    assert_eq!(
        e.kind,
        EventKind::HrtimerExpireEntry {
            hrtimer: 0xffffad3b4107b8e8,
            now: 556_822_296_180,
            function: 0xffffffff8f192b80
        }
    );
    // x86-tsc clock: raw counter timestamps.
    let (ev, cpus) = read_events(&wild.join("hip24-host-x86tsc-v7-zlib.report.txt.zst"));
    assert_eq!(cpus, Some(20));
    assert_eq!(
        (ev[0].ts, ev[0].cpu, ev[0].pid),
        (Nanos(303_280_081_900_681), 5, 533_825)
    );
    // lisa: markers, in both renderings.
    for kind in ["report", "raw"] {
        let (ev, _) = read_events(&wild.join(format!("lisa-juno-rtapp.{kind}.txt.zst")));
        let e = find(&ev, 259_445_530_471_000, "print");
        assert_eq!(
            e.kind,
            EventKind::Print {
                text: "TRACE_MARKER_START".into()
            }
        );
    }
    // trappy: a bprint whose text spans two lines.
    let (ev, _) = read_events(&wild.join("trappy-juno-raw-sched.report.txt.zst"));
    assert_eq!(
        ev[0].kind,
        EventKind::Print {
            text: "fig: cpu=0\n gid=4".into()
        }
    );
    // lanhaocoder: kernel_stack with its `=>` lines.
    let (ev, _) = read_events(&wild.join("lanhaocoder-x86-v7-zstd.report.txt.zst"));
    let e = find(&ev, 11_370_816_179_000, "kernel_stack");
    let EventKind::Generic(g) = &e.kind else {
        panic!("{e:?}")
    };
    let Some(FieldValue::Str(stack)) = g.field("stack") else {
        panic!("{g:?}")
    };
    assert!(
        stack.starts_with("try_to_wake_up (ffffffffa8902e5f)\ndefault_wake_function"),
        "{stack}"
    );
    assert_eq!(stack.lines().count(), 22);
}

#[test]
fn known_lines_of_the_recorded_traces() {
    let dir = recorded_dir();
    let path = dir.join("vm-net-v7-zstd.report.txt.zst");
    if !path.exists() {
        panic!("{} missing: run fixtures/record-wild.sh", path.display());
    }
    // Lines carry the instance prefix `rtwhy-fixture-11542: `.
    let (ev, cpus) = read_events(&path);
    assert_eq!(cpus, Some(2));
    let e = find(&ev, 308_266_104_000, "sys_enter_futex");
    assert_eq!(e.pid, 11865);
    assert!(
        matches!(&e.kind, EventKind::SyscallEnter { args, .. } if args[..2] == [0x7fc878beba4c, 0x81])
    );
    let e = find(&ev, 308_261_567_000, "ipi_send_cpu");
    assert_eq!(
        e.kind,
        EventKind::Ipi {
            name: "ipi_send_cpu".into(),
            target_cpu: Some(0)
        }
    );
    assert!(ev.iter().any(|e| e.kind
        == EventKind::Print {
            text: "rtwhy-fixture: end vm-net-v7-zstd".into()
        }));
    assert!(
        ev.iter()
            .any(|e| matches!(e.kind, EventKind::SoftirqEntry { vec: 3 })),
        "no NET_RX"
    );
}

/// What trace-cmd's formatted output cannot carry, removed from both sides.
fn comparable(ev: &Event, formatted: &Event) -> Event {
    let mut ev = ev.clone();
    match (&mut ev.kind, &formatted.kind) {
        (
            EventKind::SchedSwitch { prev_state, .. },
            EventKind::SchedSwitch {
                prev_state: shown, ..
            },
        ) => {
            // The plugin prints bits 0..7 only.
            let low = TaskState(prev_state.0 & 0xff);
            *prev_state = if *shown == *prev_state { *shown } else { low };
        }
        (
            EventKind::HrtimerStart { function, mode, .. },
            EventKind::HrtimerStart {
                function: f,
                mode: m,
                ..
            },
        ) => {
            if *f == 0 {
                *function = 0;
            }
            if m.is_none() {
                *mode = None;
            }
        }
        (
            EventKind::HrtimerExpireEntry { function, .. },
            EventKind::HrtimerExpireEntry { function: f, .. },
        )
        | (
            EventKind::WorkqueueExecuteStart { function, .. },
            EventKind::WorkqueueExecuteStart { function: f, .. },
        ) => *function = if *f == 0 { 0 } else { *function },
        // The format prints `handled` for any non-zero return (IRQ_WAKE_THREAD, 2, on the
        // arm64 guest's threaded handlers too), which the text reads as 1.
        (EventKind::IrqHandlerExit { ret, .. }, EventKind::IrqHandlerExit { ret: 1, .. })
            if *ret != 0 =>
        {
            *ret = 1;
        }
        (EventKind::SyscallEnter { args, .. }, EventKind::SyscallEnter { args: a, .. }) => {
            // Newer kernels print only the futex arguments the op uses; the rest read as 0.
            args.truncate(a.len());
            for (x, shown) in args.iter_mut().zip(a) {
                if *shown == 0 {
                    *x = 0;
                }
            }
        }
        _ => {}
    }
    ev
}

/// trace-cmd prints microseconds: the binary timestamp rounded or cut to them.
fn same_ts(text: Nanos, bin: Nanos, raw_clock: bool) -> bool {
    if raw_clock {
        text == bin
    } else {
        text.0.abs_diff(bin.0) < 1000
    }
}

fn same_event(text: &Event, bin: &Event, raw_clock: bool) -> bool {
    if !same_ts(text.ts, bin.ts, raw_clock) || text.cpu != bin.cpu || text.pid != bin.pid {
        return false;
    }
    // `bprint`/`bputs` carry text only once formatted: a marker on one side, generic on the other.
    let printk = |e: &Event| matches!(&e.kind, EventKind::Generic(g) if g.name == "bprint" || g.name == "bputs");
    let marker = |e: &Event| matches!(e.kind, EventKind::Print { .. });
    if (printk(text) && marker(bin)) || (marker(text) && printk(bin)) {
        return true;
    }
    if text.kind.name() != bin.kind.name() {
        return false;
    }
    match (&text.kind, &bin.kind) {
        (EventKind::Generic(_), _) | (_, EventKind::Generic(_)) => true,
        _ => comparable(bin, text).kind == text.kind,
    }
}

#[test]
fn formatted_and_raw_output_agree_on_typed_events() {
    for report in all_texts("report") {
        let raw = PathBuf::from(
            report
                .to_string_lossy()
                .replace(".report.txt.zst", ".raw.txt.zst"),
        );
        let (a, _) = read_events(&report);
        let (b, _) = read_events(&raw);
        assert_eq!(a.len(), b.len(), "{}", report.display());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                same_event(x, y, true),
                "{}:\n report {x:?}\n raw    {y:?}",
                report.display()
            );
        }
    }
}

/// The text reader and the binary decoder agree on the same trace, event for event, for
/// every file the binary reader opens (raw and formatted oracle text).
#[test]
fn text_matches_the_binary_decoder() {
    let mut compared = HashMap::new();
    let mut mismatches = std::collections::BTreeMap::new();
    for dir in [wild(), recorded_dir()] {
        for report in texts(&dir, "report") {
            let name = report.to_string_lossy().replace(".report.txt.zst", "");
            let dat = PathBuf::from(format!("{name}.dat"));
            let Ok(file) = TraceFile::open(&dat) else {
                continue;
            };
            let Ok(mut stream) = file.records() else {
                continue;
            };
            let mut dec = EventDecoder::new();
            let mut bin = Vec::new();
            while let Ok(Some(r)) = stream.next_record() {
                bin.push(dec.decode(file.meta(), &r));
            }
            let raw_clock = name.contains("x86tsc");
            for kind in ["report", "raw"] {
                let (text, _) = read_events(Path::new(&format!("{name}.{kind}.txt.zst")));
                if text.len() != bin.len() {
                    // Files whose oracle text holds other buffers or no data: not comparable.
                    compared.insert(format!("{name}.{kind}"), None);
                    continue;
                }
                for (t, b) in text.iter().zip(&bin) {
                    if !same_event(t, b, raw_clock) {
                        let file = Path::new(&name)
                            .file_name()
                            .map(|f| f.to_string_lossy().into_owned());
                        let key = (file.unwrap_or_default(), kind, t.kind.name().to_owned());
                        let entry = mismatches
                            .entry(key)
                            .or_insert((0usize, format!("\n text {t:?}\n dat  {b:?}")));
                        entry.0 += 1;
                    }
                }
                compared.insert(format!("{name}.{kind}"), Some(text.len()));
            }
        }
    }
    for ((file, kind, event), (n, first)) in &mismatches {
        eprintln!("{file}.{kind}: {n} {event} mismatches; first:{first}");
    }
    assert!(
        mismatches.is_empty(),
        "{} kinds of mismatch",
        mismatches.len()
    );
    let checked: usize = compared.values().flatten().count();
    eprintln!("compared {checked} texts with their .dat: {compared:#?}");
    assert!(
        checked >= 20,
        "only {checked} texts compared: {compared:#?}"
    );
}

/// The kernel symbols of a compressed trace.dat are read on a thread of their own from
/// the open on, unless the reader says it may need none (a raw dump): then only at the
/// first lookup.
#[test]
fn kernel_symbols_are_read_ahead_unless_the_reader_needs_none() {
    let path = recorded_dir().join("vm-net-v7-zstd.dat");
    let open = |ahead| {
        TraceFile::open_with(&path, ahead).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let (lazy, ahead) = (open(false), open(true));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !ahead.meta().kallsyms.is_parsed() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(
        ahead.meta().kallsyms.is_parsed(),
        "the read-ahead did not finish in 60 s"
    );
    assert!(
        !lazy.meta().kallsyms.is_parsed(),
        "symbols were read for a reader that needs none"
    );
    assert!(
        lazy.meta().kallsyms.len() > 1000,
        "the symbols are there at the first lookup"
    );
}
