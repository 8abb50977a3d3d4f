//! `rtwhy report --redact`: a capture with known private strings planted in its facts,
//! events and `uname` gives a bundle in which none of them is found (and the bundle made
//! without `--redact` holds them all, so the search is known to find them); no file of a
//! redacted bundle of any fixture holds a kernel address; the redacted trace window opens
//! in `trace-cmd report` and re-analyses to the same spikes; a pointer gets the same token
//! in every file of one bundle and another token in another bundle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use rtwhy_decode::mask::is_kernel_address;
use rtwhy_decode::tracedat::{TraceBuilder, TraceFile};
use rtwhy_tests::{require, rtwhy, workspace};
use serde_json::Value;

/// Strings a user would not want in public, planted in the capture.
const HOST: &str = "plantedhost7";
const DOMAIN: &str = "corp-secret.example";
const USER: &str = "alicebobson";
const IPV4: &str = "10.77.30.41";
const NFS_SERVER: &str = "10.77.30.1";
const IPV6: &str = "fd12:3456:789a:1::41";
const MAC: &str = "52:54:00:ab:cd:ef";
const UUID: &str = "3f1c2a9e-4b7d-4c1e-9a2f-0d6e5b4c3a21";
/// A heap address quoted in a marker.
const KADDR: &str = "0xffff8881deadbeef";

fn planted() -> Vec<String> {
    [
        HOST,
        DOMAIN,
        USER,
        IPV4,
        NFS_SERVER,
        IPV6,
        MAC,
        UUID,
        KADDR,
        "/srv/nfs/rootfs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A `print` (trace_marker) payload of `text` in the layout of the trace's own format.
fn print_payload(file: &TraceFile, pid: i32, text: &str) -> Vec<u8> {
    let f = file
        .meta()
        .format_named("ftrace", "print")
        .expect("the fixture has ftrace/print");
    let ip = f.field("ip").expect("ip");
    let buf = f.field("buf").expect("buf");
    let mut data = vec![0u8; buf.offset];
    data[..2].copy_from_slice(&(f.id as u16).to_le_bytes());
    data[4..8].copy_from_slice(&pid.to_le_bytes());
    data[ip.offset..ip.offset + 8].copy_from_slice(&0xffff_ffff_8123_4567u64.to_le_bytes());
    data.extend_from_slice(text.as_bytes());
    data.extend_from_slice(b"\n\0");
    data
}

/// The preemption fixture with private strings planted: a `kernel.cmdline` fact naming
/// the host, its NFS server, root UUID, IP settings and a home directory; a marker in the
/// spike's window quoting them and a kernel address; a `uname` naming the host.
fn planted_capture(dir: &Path) -> PathBuf {
    let src = workspace().join("fixtures/preemption/preemption.dat");
    let file = TraceFile::open(&src).expect("fixture opens");
    let buffer = file.default_buffer().expect("buffer");
    let mut b = TraceBuilder::like(file.meta(), buffer.page_size);
    b.writer_mut().set_uname(&format!(
        "Linux {HOST}.{DOMAIN} 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC x86_64"
    ));
    b.writer_mut().set_cpu_count(file.cpu_span());
    let cmdline = format!(
        "rtwhy-fact: kernel.cmdline=BOOT_IMAGE=/home/{USER}/vmlinuz root=UUID={UUID} ro \
         ip={IPV4}:{NFS_SERVER}::255.255.255.0:{HOST}:eth0:off nfsroot={NFS_SERVER}:/srv/nfs/rootfs \
         isolcpus=1 nohz_full=1 rcu_nocbs=1 preempt=full"
    );
    let note = format!(
        "job from {HOST}.{DOMAIN} ({IPV4}, {IPV6}, nic {MAC}) disk {UUID} by {USER} in /home/{USER}/rt obj {KADDR}"
    );
    // The spike of this fixture starts at 4295.506712; the note goes 1 ms before.
    let at = 4_295_505_700_000u64;
    let mut planted = false;
    let mut s = file.records().expect("stream");
    while let Some(r) = s.next_record().expect("record") {
        if !planted && r.ts >= at {
            b.push(r.cpu, r.ts, &print_payload(&file, 0, &note))
                .expect("fits");
            b.push(r.cpu, r.ts, &print_payload(&file, 0, &cmdline))
                .expect("fits");
            planted = true;
        }
        b.push(r.cpu, r.ts, r.data).expect("fits in a page");
    }
    assert!(planted);
    let out = dir.join("planted.dat");
    b.finish(&mut std::fs::File::create(&out).expect("create"))
        .expect("write");
    out
}

/// `rtwhy report --bundle [--redact]` of `trace`, extracted: member name -> bytes.
fn bundle(
    trace: &Path,
    args: &[String],
    redact: bool,
    dir: &Path,
    name: &str,
) -> BTreeMap<String, Vec<u8>> {
    let out = dir.join(format!("{name}.tar.gz"));
    let mut cmd = Command::new(rtwhy());
    cmd.arg("report")
        .arg("--bundle")
        .arg("--out")
        .arg(&out)
        .args(args);
    if redact {
        cmd.arg("--redact");
    }
    let o = cmd.arg(trace).output().expect("rtwhy");
    assert!(
        o.status.success(),
        "{}: {}",
        trace.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Without --redact, one line says what the bundle keeps.
    assert_eq!(
        stderr.contains("not redacted"),
        !redact,
        "{}: {stderr}",
        trace.display()
    );
    let into = dir.join(name);
    std::fs::create_dir_all(&into).expect("mkdir");
    let x = Command::new("tar")
        .arg("-xzf")
        .arg(&out)
        .arg("-C")
        .arg(&into)
        .status()
        .expect("tar");
    assert!(x.success());
    let root = into.join(name);
    let mut files = BTreeMap::new();
    for e in std::fs::read_dir(&root).expect("bundle dir") {
        let p = e.expect("entry").path();
        let n = p.file_name().expect("name").to_string_lossy().into_owned();
        files.insert(n, std::fs::read(&p).expect("read"));
    }
    files.insert(
        "trace-cmd report".to_string(),
        trace_cmd_report(&root.join("trace-window.dat")).into_bytes(),
    );
    files
}

fn trace_cmd_report(dat: &Path) -> String {
    let o = Command::new("trace-cmd")
        .arg("report")
        .arg(dat)
        .output()
        .expect("trace-cmd");
    assert!(
        o.status.success(),
        "trace-cmd report {}: {}",
        dat.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every 16-digit hex number in `text` that is a kernel address.
fn kernel_addresses(text: &str) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            i += 1;
        }
        let boundary = |j: Option<&u8>| !j.is_some_and(|c| c.is_ascii_alphanumeric());
        if i - start == 16
            && (start == 0 || boundary(b.get(start - 1)) || b[start - 1] == b'x')
            && boundary(b.get(i))
        {
            if let Ok(v) = u64::from_str_radix(&text[start..i], 16) {
                if is_kernel_address(v) {
                    out.insert(v);
                }
            }
        }
        i = i.max(start + 1);
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// The spikes of `rtwhy analyze` on `dat`: (victim tid, cpu, start, end, latency, cause,
/// contributors, breakdown times and kinds).
fn verdicts(dat: &Path, args: &[String]) -> Vec<String> {
    let o = Command::new(rtwhy())
        .args(["analyze", "--format", "json"])
        .args(args)
        .arg(dat)
        .output()
        .expect("analyze");
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    v["spikes"]
        .as_array()
        .expect("spikes")
        .iter()
        .map(|s| {
            let breakdown: Vec<String> = s["breakdown"]
                .as_array()
                .expect("breakdown")
                .iter()
                .map(|b| format!("{}:{}:{}:{}", b["bucket"], b["ns"], b["tid"], b["irq"]))
                .collect();
            let contributors: Vec<String> = s["contributors"]
                .as_array()
                .map(|c| c.iter().map(|c| c["cause"].to_string()).collect())
                .unwrap_or_default();
            format!(
                "{} {} {} {} {} {} {:?} {:?}",
                s["victim"]["tid"],
                s["cpu"],
                s["start"],
                s["end"],
                s["latency_ns"],
                s["primary"]["cause"],
                contributors,
                breakdown
            )
        })
        .collect()
}

#[test]
fn planted_private_strings_are_in_the_plain_bundle_and_in_no_file_of_the_redacted_one() {
    if !require("tar") || !require("trace-cmd") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let capture = planted_capture(dir.path());
    let args = vec!["--threshold".to_string(), "150us".to_string()];
    let plain = bundle(&capture, &args, false, dir.path(), "plain");
    let red = bundle(&capture, &args, true, dir.path(), "red");
    let all = |files: &BTreeMap<String, Vec<u8>>| -> Vec<u8> {
        files.values().flatten().copied().collect()
    };
    let plain_all = all(&plain);
    for s in planted() {
        assert!(
            contains(&plain_all, s.as_bytes()),
            "the plain bundle lacks {s}: the test plants nothing"
        );
        for (name, bytes) in &red {
            assert!(
                !contains(bytes, s.as_bytes()),
                "{s} is in {name} of the redacted bundle"
            );
        }
    }
    // A task that plays no part in the spike (the shell that started the lab) is named
    // in the plain bundle and in no file of the redacted one; the victim and the task
    // that preempted it keep their names.
    let md = String::from_utf8_lossy(&red["report.md"]).into_owned();
    for (name, bytes) in &red {
        assert!(!contains(bytes, b"bash"), "bash is in {name}");
    }
    assert!(contains(&plain_all, b"bash"));
    assert!(
        md.contains("cyclictest") && md.contains("spin:4188"),
        "{md}"
    );
    // The command line keeps what rtwhy reads.
    assert!(
        md.contains(
            "isolcpus=1 nohz_full=1 rcu_nocbs=1 preempt=full (+5 other parameters redacted)"
        ),
        "{md}"
    );
    assert!(
        md.trim_end().ends_with("posting in public.*") || md.contains("*Redacted for posting"),
        "{md}"
    );
    assert!(String::from_utf8_lossy(&red["MANIFEST.md"]).contains("## Redacted"));
    assert!(String::from_utf8_lossy(&plain["MANIFEST.md"]).contains("## Not redacted"));
    // No kernel address in any text of the redacted bundle (the plain one has many),
    // and none of the plain bundle's addresses in the redacted window's bytes.
    let plain_addrs: BTreeSet<u64> = plain
        .values()
        .flat_map(|b| kernel_addresses(&String::from_utf8_lossy(b)))
        .collect();
    assert!(
        plain_addrs.len() > 100,
        "only {} addresses in the plain bundle",
        plain_addrs.len()
    );
    for (name, bytes) in &red {
        let found = kernel_addresses(&String::from_utf8_lossy(bytes));
        assert!(found.is_empty(), "{name} holds kernel addresses {found:x?}");
    }
    let window = &red["trace-window.dat"];
    let leaked: Vec<u64> = window
        .windows(8)
        .filter_map(|w| w.try_into().ok().map(u64::from_le_bytes))
        .filter(|v| plain_addrs.contains(v))
        .collect();
    assert!(
        leaked.is_empty(),
        "{leaked:x?} are in the redacted window's bytes"
    );
    // The redacted window re-analyses to exactly the spikes of the plain one.
    let (pw, rw) = (dir.path().join("p.dat"), dir.path().join("r.dat"));
    std::fs::write(&pw, &plain["trace-window.dat"]).expect("write");
    std::fs::write(&rw, window).expect("write");
    let (pv, rv) = (verdicts(&pw, &args), verdicts(&rw, &args));
    assert!(!pv.is_empty());
    assert_eq!(pv, rv);
}

#[test]
fn a_pointer_has_one_token_in_every_file_of_a_bundle_and_another_in_the_next() {
    if !require("tar") || !require("trace-cmd") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = workspace().join("fixtures/preemption/preemption.dat");
    let args = vec!["--threshold".to_string(), "150us".to_string()];
    // E1 of this fixture's report: `4295.506723: hrtimer_expire_entry: hrtimer=0xffffc90002c47ab8`.
    let token_at = |text: &str, what: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.contains("4295.506723: hrtimer_expire_entry"))
            .unwrap_or_else(|| panic!("no E1 line in {what}"));
        let t = line
            .split("hrtimer=")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("hrtimer=")
            .to_string();
        assert!(t.starts_with("0x5afe"), "{what}: {line}");
        t
    };
    let one = bundle(&trace, &args, true, dir.path(), "one");
    let text = |f: &BTreeMap<String, Vec<u8>>, n: &str| String::from_utf8_lossy(&f[n]).into_owned();
    let md = token_at(&text(&one, "report.md"), "report.md");
    let json: Value = serde_json::from_slice(&one["analysis.json"]).expect("json");
    let json_line = json["spikes"][0]["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .map(|e| e["line"].as_str().unwrap_or_default().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    let tc = token_at(&text(&one, "trace-cmd report"), "trace-cmd report");
    assert_eq!(md, token_at(&json_line, "analysis.json"));
    assert_eq!(md, tc);
    let two = bundle(&trace, &args, true, dir.path(), "two");
    assert_ne!(
        md,
        token_at(&text(&two, "report.md"), "the second report.md")
    );
}

/// Every fixture's redacted bundle: no kernel address in any file, a window trace-cmd
/// reads, and the same spikes from it as from the plain bundle's window.
#[test]
fn every_fixture_redacts_to_the_same_verdicts_without_kernel_addresses() {
    if !require("tar") || !require("trace-cmd") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut done = 0;
    let mut fixtures: Vec<(PathBuf, Vec<String>)> = Vec::new();
    for e in std::fs::read_dir(workspace().join("fixtures")).expect("fixtures") {
        let d = e.expect("entry").path();
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for f in rd {
            let p = f.expect("entry").path();
            if p.extension().is_none_or(|x| x != "dat") {
                continue;
            }
            let expect = p.with_extension("expect.json");
            let args = std::fs::read_to_string(&expect)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| {
                    v["args"].as_array().map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect()
                    })
                })
                .unwrap_or_else(|| vec!["--threshold".to_string(), "100us".to_string()]);
            fixtures.push((p, args));
        }
    }
    fixtures.sort();
    for (i, (p, args)) in fixtures.iter().enumerate() {
        // Only traces with a spike make a bundle.
        let probe = Command::new(rtwhy())
            .args(["analyze", "--format", "json"])
            .args(args)
            .arg(p)
            .output()
            .expect("analyze");
        let has_spike = serde_json::from_slice::<Value>(&probe.stdout)
            .ok()
            .and_then(|v| v["spikes"].as_array().map(|a| !a.is_empty()))
            .unwrap_or(false);
        if !has_spike {
            continue;
        }
        let plain = bundle(p, args, false, dir.path(), &format!("p{i}"));
        let red = bundle(p, args, true, dir.path(), &format!("r{i}"));
        for (name, bytes) in &red {
            let found = kernel_addresses(&String::from_utf8_lossy(bytes));
            assert!(
                found.is_empty(),
                "{}: {name} holds kernel addresses {found:x?}",
                p.display()
            );
        }
        let (pw, rw) = (
            dir.path().join(format!("p{i}.dat")),
            dir.path().join(format!("r{i}.dat")),
        );
        std::fs::write(&pw, &plain["trace-window.dat"]).expect("write");
        std::fs::write(&rw, &red["trace-window.dat"]).expect("write");
        assert_eq!(verdicts(&pw, args), verdicts(&rw, args), "{}", p.display());
        done += 1;
    }
    assert!(done >= 20, "only {done} fixtures made a bundle");
}
