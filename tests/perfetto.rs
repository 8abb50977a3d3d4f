//! `rtwhy convert` writes Perfetto's protobuf trace format: decoded back with a protobuf
//! reader written here from the schema's field numbers (perfetto's
//! `protos/perfetto/trace/trace.proto`, `trace_packet.proto`,
//! `ftrace/ftrace_event_bundle.proto`, `ftrace/ftrace_event.proto`, `ftrace/sched.proto`,
//! `ftrace/irq.proto`, `ftrace/generic.proto`, `track_event/*.proto`), independent of the
//! writer's code, the events must be those `trace-cmd report -R` printed for the same
//! file: same count, CPU, timestamp, pid, event name and, for the scheduler and
//! interrupt events, every field.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use rtwhy_tests::{oracle, rtwhy, workspace};

/// One protobuf field as read off the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Len(&'a [u8]),
    /// `fixed64`/`fixed32`/`double`/`float`: none of the fields read here.
    Fixed,
}

fn read_varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return v;
        }
        shift += 7;
        assert!(shift < 70, "varint longer than ten bytes");
    }
}

/// Every field of one message, in order. Panics on malformed input: this is a test.
fn fields(buf: &[u8]) -> Vec<(u32, Wire<'_>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let key = read_varint(buf, &mut at);
        let (num, wire) = ((key >> 3) as u32, key & 7);
        let v = match wire {
            0 => Wire::Varint(read_varint(buf, &mut at)),
            1 => {
                at += 8;
                Wire::Fixed
            }
            2 => {
                let len = read_varint(buf, &mut at) as usize;
                let v = &buf[at..at + len];
                at += len;
                Wire::Len(v)
            }
            5 => {
                at += 4;
                Wire::Fixed
            }
            w => panic!("wire type {w} at byte {at}"),
        };
        out.push((num, v));
    }
    assert_eq!(at, buf.len(), "the last field runs past the message");
    out
}

fn varint_of(w: Wire<'_>) -> u64 {
    match w {
        Wire::Varint(v) => v,
        other => panic!("expected a varint, got {other:?}"),
    }
}

fn bytes_of(w: Wire<'_>) -> &[u8] {
    match w {
        Wire::Len(b) => b,
        other => panic!("expected a length-delimited field, got {other:?}"),
    }
}

/// How a field of a typed `*FtraceEvent` message is printed by `trace-cmd report -R`.
#[derive(Clone, Copy)]
enum Ty {
    Str,
    Signed,
    Unsigned,
}

/// A typed event's fields: (field number, name, how trace-cmd prints it).
type Layout = Vec<(u32, &'static str, Ty)>;
/// A typed event: (FtraceEvent oneof number, event name, its fields).
type Typed = (u32, &'static str, Layout);

/// The typed events, from the schema.
/// Callback addresses (`function`) are not compared: trace-cmd prints them as symbol
/// names where the file has kallsyms.
fn typed_schema() -> Vec<Typed> {
    use Ty::*;
    let wake = || {
        vec![
            (1, "comm", Str),
            (2, "pid", Signed),
            (3, "prio", Signed),
            (5, "target_cpu", Signed),
        ]
    };
    vec![
        (
            4,
            "sched_switch",
            vec![
                (1, "prev_comm", Str),
                (2, "prev_pid", Signed),
                (3, "prev_prio", Signed),
                (4, "prev_state", Signed),
                (5, "next_comm", Str),
                (6, "next_pid", Signed),
                (7, "next_prio", Signed),
            ],
        ),
        (17, "sched_wakeup", wake()),
        (20, "sched_waking", wake()),
        (114, "sched_wakeup_new", wake()),
        (
            491,
            "sched_migrate_task",
            vec![
                (1, "comm", Str),
                (2, "pid", Signed),
                (3, "prio", Signed),
                (4, "orig_cpu", Signed),
                (5, "dest_cpu", Signed),
            ],
        ),
        (
            36,
            "irq_handler_entry",
            vec![(1, "irq", Signed), (2, "name", Str)],
        ),
        (
            37,
            "irq_handler_exit",
            vec![(1, "irq", Signed), (2, "ret", Signed)],
        ),
        (24, "softirq_entry", vec![(1, "vec", Unsigned)]),
        (25, "softirq_exit", vec![(1, "vec", Unsigned)]),
        (26, "softirq_raise", vec![(1, "vec", Unsigned)]),
        (
            551,
            "hrtimer_start",
            vec![
                (1, "hrtimer", Unsigned),
                (3, "expires", Signed),
                (4, "softexpires", Signed),
                (5, "mode", Unsigned),
            ],
        ),
        (
            553,
            "hrtimer_expire_entry",
            vec![(1, "hrtimer", Unsigned), (2, "now", Signed)],
        ),
        (554, "hrtimer_expire_exit", vec![(1, "hrtimer", Unsigned)]),
        (552, "hrtimer_cancel", vec![(1, "hrtimer", Unsigned)]),
        (
            13,
            "cpu_idle",
            vec![(1, "state", Unsigned), (2, "cpu_id", Unsigned)],
        ),
        (
            11,
            "cpu_frequency",
            vec![(1, "state", Unsigned), (2, "cpu_id", Unsigned)],
        ),
        (58, "workqueue_execute_start", vec![(1, "work", Unsigned)]),
        (57, "workqueue_execute_end", vec![(1, "work", Unsigned)]),
        (3, "print", vec![]),
    ]
}

/// An event as compared: `cpu ts_us pid name field=value...`, values as numbers.
fn canonical(cpu: u64, ts_us: u64, pid: u64, name: &str, fields: &[(String, String)]) -> String {
    let mut s = format!("{cpu} {ts_us} {pid} {name}");
    for (k, v) in fields {
        s.push_str(&format!(" {k}={v}"));
    }
    s
}

/// trace-cmd rounds the timestamp to the nearest microsecond.
fn round_us(ns: u64) -> u64 {
    ns / 1000 + u64::from(ns % 1000 >= 500)
}

/// What the converted trace holds.
#[derive(Default)]
struct Decoded {
    events: Vec<String>,
    /// Event names of the typed messages seen, by count.
    typed: BTreeMap<String, u64>,
    generic: u64,
    /// Track-event slice names on rtwhy's track.
    slices: Vec<String>,
    /// (name, value) annotations of the slices.
    annotations: Vec<(String, String)>,
    track_names: Vec<String>,
}

fn decode(path: &Path) -> Decoded {
    let data = std::fs::read(path).expect("read the converted trace");
    let schema = typed_schema();
    let mut d = Decoded::default();
    for (num, packet) in fields(&data) {
        assert_eq!(num, 1, "Trace holds only `packet` (1)");
        let packet = fields(bytes_of(packet));
        for &(pnum, pval) in &packet {
            match pnum {
                1 => {
                    let bundle = fields(bytes_of(pval));
                    let cpu = bundle
                        .iter()
                        .find(|(n, _)| *n == 1)
                        .map(|(_, v)| varint_of(*v))
                        .expect("bundle cpu");
                    for (bnum, ev) in &bundle {
                        if *bnum != 2 {
                            continue;
                        }
                        d.events.push(decode_event(
                            cpu,
                            bytes_of(*ev),
                            &schema,
                            &mut d.typed,
                            &mut d.generic,
                        ));
                    }
                }
                11 => {
                    let te = fields(bytes_of(pval));
                    let ty = te.iter().find(|(n, _)| *n == 9).map(|(_, v)| varint_of(*v));
                    if ty == Some(1) {
                        for (n, v) in &te {
                            match n {
                                23 => d
                                    .slices
                                    .push(String::from_utf8_lossy(bytes_of(*v)).into_owned()),
                                4 => {
                                    let da = fields(bytes_of(*v));
                                    let name = da.iter().find(|(n, _)| *n == 10).map(|(_, v)| {
                                        String::from_utf8_lossy(bytes_of(*v)).into_owned()
                                    });
                                    let value = da
                                        .iter()
                                        .find(|(n, _)| *n == 6)
                                        .map(|(_, v)| {
                                            String::from_utf8_lossy(bytes_of(*v)).into_owned()
                                        })
                                        .or_else(|| {
                                            da.iter()
                                                .find(|(n, _)| *n == 3)
                                                .map(|(_, v)| varint_of(*v).to_string())
                                        });
                                    d.annotations.push((name.unwrap(), value.unwrap()));
                                }
                                _ => {}
                            }
                        }
                    }
                }
                60 => {
                    let td = fields(bytes_of(pval));
                    if let Some((_, v)) = td.iter().find(|(n, _)| *n == 2) {
                        d.track_names
                            .push(String::from_utf8_lossy(bytes_of(*v)).into_owned());
                    }
                }
                _ => {}
            }
        }
    }
    d
}

fn decode_event(
    cpu: u64,
    buf: &[u8],
    schema: &[Typed],
    typed: &mut BTreeMap<String, u64>,
    generic: &mut u64,
) -> String {
    let ev = fields(buf);
    let mut ts = None;
    let mut pid = None;
    let mut body = None;
    for (n, v) in ev {
        match n {
            1 => ts = Some(varint_of(v)),
            2 => pid = Some(varint_of(v)),
            n => {
                assert!(body.is_none(), "one oneof member per FtraceEvent");
                body = Some((n, bytes_of(v)));
            }
        }
    }
    let (ts, pid, (member, body)) = (ts.unwrap(), pid.unwrap(), body.unwrap());
    let ts_us = round_us(ts);
    if member == 327 {
        *generic += 1;
        let name = fields(body)
            .into_iter()
            .find(|(n, _)| *n == 1)
            .map(|(_, v)| String::from_utf8_lossy(bytes_of(v)).into_owned())
            .unwrap();
        return canonical(cpu, ts_us, pid, &name, &[]);
    }
    let (_, name, layout) = schema
        .iter()
        .find(|(m, _, _)| *m == member)
        .unwrap_or_else(|| panic!("FtraceEvent member {member} not in the test's schema"));
    *typed.entry((*name).to_string()).or_default() += 1;
    let mut out = Vec::new();
    for (n, v) in fields(body) {
        let Some((_, fname, ty)) = layout.iter().find(|(f, _, _)| *f == n) else {
            continue;
        };
        let value = match ty {
            Ty::Str => String::from_utf8_lossy(bytes_of(v)).into_owned(),
            Ty::Signed => (varint_of(v) as i64).to_string(),
            Ty::Unsigned => varint_of(v).to_string(),
        };
        out.push(((*fname).to_string(), value));
    }
    out.sort();
    canonical(cpu, ts_us, pid, name, &out)
}

/// `trace-cmd report -R` lines as canonical events, with the fields the converted
/// event carries (`layout`), values normalised to decimal.
fn oracle_events(raw: &str) -> Vec<String> {
    let schema = typed_schema();
    let mut out = Vec::new();
    for line in raw.lines() {
        // `[INSTANCE: ]COMM-PID [CPU] SECS.USECS: NAME: FIELDS`
        let Some(open) = line
            .find("] ")
            .and_then(|e| line[..e].rfind(" [").map(|o| (o, e)))
        else {
            continue;
        };
        let (o, e) = open;
        let Ok(cpu) = line[o + 2..e].parse::<u64>() else {
            continue;
        };
        let head = line[..o].trim_end();
        let Some(dash) = head.rfind('-') else {
            continue;
        };
        let Ok(pid) = head[dash + 1..].parse::<u64>() else {
            continue;
        };
        let rest = line[e + 1..].trim_start();
        let Some((ts, rest)) = rest.split_once(": ") else {
            continue;
        };
        let Some((secs, usecs)) = ts.trim().split_once('.') else {
            continue;
        };
        let ts_us = secs.parse::<u64>().unwrap() * 1_000_000 + usecs.parse::<u64>().unwrap();
        let (name, args) = rest.split_once(':').unwrap_or((rest, ""));
        let name = name.trim();
        let mut fields = Vec::new();
        if let Some((_, _, layout)) = schema.iter().find(|(_, n, _)| *n == name) {
            for (_, fname, ty) in layout {
                let Some(v) = raw_field(args, fname) else {
                    continue;
                };
                let value = match ty {
                    Ty::Str => v.to_string(),
                    Ty::Signed | Ty::Unsigned => number(v),
                };
                fields.push(((*fname).to_string(), value));
            }
        }
        fields.sort();
        out.push(canonical(cpu, ts_us, pid, name, &fields));
    }
    out
}

/// The value of `key=` in a raw line: up to the next ` name=`, so that names with
/// spaces (`Web Content`) stay whole.
fn raw_field<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    let args = args.trim_start();
    let start = if args.starts_with(&format!("{key}=")) {
        key.len() + 1
    } else {
        args.find(&format!(" {key}="))? + key.len() + 2
    };
    let tail = &args[start..];
    let bytes = tail.as_bytes();
    let end = (0..bytes.len())
        .filter(|&i| bytes[i] == b' ')
        .find(|&i| {
            let word = &tail[i + 1..];
            let ident = word
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            ident > 0 && word.as_bytes().get(ident) == Some(&b'=')
        })
        .unwrap_or(tail.len());
    Some(&tail[..end])
}

/// A `trace-cmd -R` number (decimal, zero-padded like `target_cpu=000`, negative, or
/// `0x` hex) in decimal; hex values are unsigned 64-bit.
fn number(v: &str) -> String {
    if let Some(hex) = v.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).unwrap().to_string();
    }
    v.parse::<i128>()
        .map_or_else(|_| v.to_string(), |n| n.to_string())
}

fn convert(dat: &Path, out: &Path) {
    let o = Command::new(rtwhy())
        .args(["convert", "--threshold", "50us"])
        .arg(dat)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run rtwhy convert");
    assert!(
        o.status.success(),
        "rtwhy convert {}: {}",
        dat.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn converted_traces_decode_back_to_trace_cmds_events() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["vm-net-v7-zstd", "vm-nokallsyms-v6"] {
        let dat = workspace().join(format!("fixtures/recorded/{name}.dat"));
        let out = dir.path().join(format!("{name}.perfetto-trace"));
        convert(&dat, &out);
        let d = decode(&out);
        let raw = oracle(&dat, "raw").expect("stored trace-cmd report -R");
        let mut want = oracle_events(&raw);
        let mut got = d.events.clone();
        assert_eq!(got.len(), want.len(), "{name}: event count");
        want.sort();
        got.sort();
        let differ: Vec<_> = got
            .iter()
            .zip(&want)
            .filter(|(g, w)| g != w)
            .take(5)
            .collect();
        assert!(
            differ.is_empty(),
            "{name}: events differ (got, trace-cmd): {differ:#?}"
        );
        for needed in [
            "sched_switch",
            "sched_waking",
            "irq_handler_entry",
            "softirq_entry",
        ] {
            assert!(
                d.typed.get(needed).copied().unwrap_or(0) > 0,
                "{name}: no typed {needed} in {:?}",
                d.typed
            );
        }
        eprintln!(
            "{name}: {} events ({} generic) match trace-cmd; typed {:?}",
            got.len(),
            d.generic,
            d.typed
        );
    }
}

#[test]
fn spikes_are_annotated_with_their_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let dat = workspace().join("fixtures/softirq/softirq.dat");
    let out = dir.path().join("softirq.perfetto-trace");
    convert(&dat, &out);
    let d = decode(&out);
    let analysis = Command::new(rtwhy())
        .args(["analyze", "--threshold", "50us", "--format", "json"])
        .arg(&dat)
        .output()
        .expect("run rtwhy analyze");
    let json: serde_json::Value = serde_json::from_slice(&analysis.stdout).expect("json");
    let spikes = json["spikes"].as_array().expect("spikes");
    assert!(!spikes.is_empty(), "the softirq fixture has spikes");
    assert_eq!(d.slices.len(), spikes.len(), "one slice per spike");
    let causes: Vec<&str> = d
        .annotations
        .iter()
        .filter(|(k, _)| k == "cause")
        .map(|(_, v)| v.as_str())
        .collect();
    let want: Vec<&str> = spikes
        .iter()
        .map(|s| s["primary"]["cause"].as_str().expect("cause"))
        .collect();
    let (mut c, mut w) = (causes.clone(), want.clone());
    c.sort_unstable();
    w.sort_unstable();
    assert_eq!(c, w, "the slices carry the analysis' verdicts");
    assert!(
        d.track_names.iter().any(|n| n == "rtwhy"),
        "{:?}",
        d.track_names
    );
    assert!(
        d.slices.iter().all(|s| s.starts_with("spike ")),
        "{:?}",
        d.slices
    );
}

/// Runs `rtwhy convert [extra] bad -o out` in `dir`; (exit code, stderr).
fn convert_damaged(dir: &Path, bad: &[u8], extra: &[&str]) -> (Option<i32>, String) {
    let dat = dir.join("bad.dat");
    std::fs::write(&dat, bad).unwrap();
    let o = Command::new(rtwhy())
        .arg("convert")
        .args(extra)
        .arg(&dat)
        .arg("-o")
        .arg(dir.join("bad.perfetto-trace"))
        .output()
        .expect("run rtwhy convert");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Names in `dir` other than the damaged input: the output or a temporary file.
fn left_behind(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "bad.dat")
        .collect()
}

#[test]
fn damaged_traces_give_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let v6 = std::fs::read(workspace().join("fixtures/recorded/vm-nokallsyms-v6.dat")).unwrap();
    let v7 = std::fs::read(workspace().join("fixtures/recorded/vm-net-v7-zstd.dat")).unwrap();
    // A v7 file whose CPU 0 data has a zstd chunk overwritten: found half-way through
    // the events, after the output was started.
    let mut corrupt = v7.clone();
    corrupt[1_200_000..1_200_016].fill(0xff);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("headers cut", v6[..100].to_vec()),
        ("event formats cut", v6[..v6.len() / 2].to_vec()),
        ("last CPU's pages cut", v6[..v6.len() - 3000].to_vec()),
        ("v7 sections cut", v7[..v7.len() - 5000].to_vec()),
        ("zstd chunk corrupt", corrupt.clone()),
    ];
    for (what, bad) in &cases {
        let (code, stderr) = convert_damaged(dir.path(), bad, &[]);
        assert_eq!(code, Some(2), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: one line: {stderr}");
        assert!(stderr.starts_with("rtwhy: error: "), "{what}: {stderr}");
        assert!(
            left_behind(dir.path()).is_empty(),
            "{what}: {:?}",
            left_behind(dir.path())
        );
    }
    // --keep-going converts what can be read and says what it skipped.
    let (code, stderr) = convert_damaged(dir.path(), &corrupt, &["--keep-going"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("warning") && stderr.contains("not read"),
        "{stderr}"
    );
    assert_eq!(left_behind(dir.path()), ["bad.perfetto-trace"]);
}

#[test]
fn timerlat_periods_are_annotated_on_a_track_per_cpu() {
    // The period of fixtures/tracecmd-timerlat that tests/timerlat.rs reads off the trace:
    //   timerlat/1-165 [001] 108.786503: timerlat: seq:1530 context:1 timer_latency:30416270
    let dir = tempfile::tempdir().unwrap();
    let dat = workspace().join("fixtures/tracecmd-timerlat/timerlat.dat");
    let out = dir.path().join("timerlat.perfetto-trace");
    let o = Command::new(rtwhy())
        .args(["convert", "--threshold", "10ms", "--isolated", "1"])
        .arg(&dat)
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run rtwhy convert");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let d = decode(&out);
    let periods: Vec<&String> = d
        .slices
        .iter()
        .filter(|s| s.starts_with("timerlat period "))
        .collect();
    assert!(!periods.is_empty(), "{:?}", d.slices);
    assert!(
        stderr.contains(&format!("{} timerlat periods annotated", periods.len())),
        "{stderr}"
    );
    assert!(
        d.track_names.iter().any(|n| n == "rtwhy: timerlat CPU 1"),
        "{:?}",
        d.track_names
    );
    // The annotations of each slice follow its name in order: find period 1530's.
    let seqnums: Vec<usize> = d
        .annotations
        .iter()
        .enumerate()
        .filter(|(_, (k, v))| k == "seqnum" && v == "1530")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(seqnums.len(), 1, "{:?}", d.annotations);
    let before = &d.annotations[..seqnums[0]];
    let latency = before.iter().rev().find(|(k, _)| k == "latency_ns");
    assert_eq!(
        latency.map(|(_, v)| v.as_str()),
        Some("30416270"),
        "{:?}",
        d.annotations
    );
}
