//! The facts snapshot against a fake system tree, and against this machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rtwhy_model::{parse_fact_marker, SystemFacts, MAX_MARKER_LEN};
use rtwhy_record::facts::{snapshot, snapshot_at, to_markers};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn value<'a>(facts: &'a [(String, String)], key: &str) -> Option<&'a str> {
    facts
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

const INTERRUPTS: &str = "\
           CPU0       CPU1       CPU2       CPU3
  0:         17          0          0          0   IO-APIC   2-edge      timer
  9:          0          4          0          0   IO-APIC   9-fasteoi   acpi
 36:          0     327023          0          0  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 41:       8851          0          0          0  PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
NMI:          0          0          0          0   Non-maskable interrupts
LOC:     901319    1218211          0          0   Local timer interrupts
ERR:          0
";

fn fake_tree(root: &Path) {
    write(root, "proc/sys/kernel/osrelease", "6.1.0-rt7\n");
    write(
        root,
        "proc/sys/kernel/version",
        "#1 SMP PREEMPT_RT Debian\n",
    );
    write(
        root,
        "proc/cmdline",
        "root=/dev/vda isolcpus=managed_irq,domain,2-3 nohz_full=2-3 quiet\n",
    );
    write(root, "sys/devices/system/cpu/online", "0-3\n");
    write(root, "sys/devices/system/cpu/isolated", "2-3\n");
    write(root, "sys/devices/system/cpu/nohz_full", "2-3\n");
    write(root, "proc/sys/kernel/sched_rt_runtime_us", "950000\n");
    write(root, "proc/sys/kernel/sched_rt_period_us", "1000000\n");
    write(root, "proc/interrupts", INTERRUPTS);
    write(root, "proc/irq/36/smp_affinity_list", "0-3\n");
    write(root, "proc/irq/36/effective_affinity_list", "2\n");
    write(
        root,
        "sys/kernel/debug/irq/irqs/36",
        "dstate: 0x3600\n IRQD_AFFINITY_MANAGED\n",
    );
    write(root, "proc/irq/41/smp_affinity_list", "0\n");
    write(root, "sys/kernel/debug/irq/irqs/41", "dstate: 0x0400\n");
    for cpu in 0..4 {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        write(
            root,
            &format!("{dir}/cpufreq/scaling_governor"),
            "schedutil\n",
        );
        for (k, name, lat) in [(0, "POLL", 0), (1, "C1", 2), (2, "C6", 133)] {
            write(
                root,
                &format!("{dir}/cpuidle/state{k}/name"),
                &format!("{name}\n"),
            );
            write(
                root,
                &format!("{dir}/cpuidle/state{k}/latency"),
                &format!("{lat}\n"),
            );
        }
    }
    // Not a CPU: must not become cpu.N facts.
    write(root, "sys/devices/system/cpu/cpufreq/boost", "1\n");
}

#[test]
fn fake_tree_gives_every_documented_fact() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let facts = snapshot_at(dir.path());
    let v = |k| value(&facts, k);
    assert_eq!(v("kernel.release"), Some("6.1.0-rt7"));
    assert_eq!(v("kernel.version"), Some("#1 SMP PREEMPT_RT Debian"));
    assert_eq!(v("kernel.preempt"), Some("rt"));
    assert_eq!(
        v("kernel.cmdline"),
        Some("root=/dev/vda isolcpus=managed_irq,domain,2-3 nohz_full=2-3 quiet")
    );
    assert_eq!(v("cpu.count"), Some("4"));
    assert_eq!(v("cpu.isolated"), Some("2-3"));
    assert_eq!(v("cpu.nohz_full"), Some("2-3"));
    assert_eq!(v("sched.rt_runtime_us"), Some("950000"));
    assert_eq!(v("sched.rt_period_us"), Some("1000000"));
    assert_eq!(v("irq.0.name"), Some("timer"));
    assert_eq!(v("irq.9.name"), Some("acpi"));
    assert_eq!(v("irq.36.name"), Some("virtio1-req.0"));
    assert_eq!(v("irq.36.affinity"), Some("0-3"));
    assert_eq!(v("irq.36.effective_affinity"), Some("2"));
    assert_eq!(v("irq.36.managed"), Some("1"));
    assert_eq!(v("irq.41.managed"), Some("0"));
    // No IRQ debugfs for IRQ 0: managed is unknown, so left out.
    assert_eq!(v("irq.0.managed"), None);
    assert_eq!(v("irq.0.affinity"), None);
    assert!(!facts.iter().any(|(k, _)| k.starts_with("irq.NMI")));
    assert_eq!(v("cpu.3.governor"), Some("schedutil"));
    assert_eq!(v("cpu.0.idle_states"), Some("POLL:0,C1:2,C6:133"));
    assert_eq!(v("cpu.4.governor"), None);

    let markers = to_markers(&facts);
    assert_eq!(markers.len(), facts.len());
    let mut model = SystemFacts::default();
    for line in &markers {
        assert!(line.len() <= MAX_MARKER_LEN);
        assert!(!line.contains('\n'));
        let (key, value) = parse_fact_marker(line).unwrap();
        model.set(key, value);
    }
    assert_eq!(model.isolated.0, vec![2, 3]);
    assert_eq!(model.nohz_full.0, vec![2, 3]);
    assert_eq!(model.rt_runtime_us, Some(950_000));
    assert_eq!(model.rt_period_us, Some(1_000_000));
    assert_eq!(model.cpus, Some(4));
    assert_eq!(model.preempt_model(), Some("rt"));
    let irq = &model.irqs[&36];
    assert_eq!(irq.name.as_deref(), Some("virtio1-req.0"));
    assert_eq!(irq.affinity.as_deref(), Some("0-3"));
    assert_eq!(irq.effective.as_deref(), Some("2"));
    assert!(irq.managed);
    assert!(!model.irqs[&41].managed);
    assert_eq!(model.governors[&2], "schedutil");
    assert_eq!(model.idle_states[&1], "POLL:0,C1:2,C6:133");
    assert!(model.other.is_empty(), "{:?}", model.other);
}

#[test]
fn debugfs_preempt_names_the_active_model() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "proc/sys/kernel/version",
        "#1 SMP PREEMPT_DYNAMIC\n",
    );
    write(
        dir.path(),
        "sys/kernel/debug/sched/preempt",
        "none voluntary (full) lazy\n",
    );
    assert_eq!(
        value(&snapshot_at(dir.path()), "kernel.preempt"),
        Some("full")
    );
}

#[test]
fn missing_and_multi_line_files_are_not_errors() {
    let dir = tempfile::tempdir().unwrap();
    assert!(snapshot_at(dir.path()).is_empty());
    write(dir.path(), "proc/cmdline", "a\nb\r\n\n");
    write(dir.path(), "proc/sys/kernel/sched_rt_runtime_us", "\n");
    write(dir.path(), "sys/devices/system/cpu/isolated", "\n");
    let facts = snapshot_at(dir.path());
    assert_eq!(
        facts,
        vec![
            ("kernel.cmdline".to_string(), "a b".to_string()),
            ("cpu.isolated".to_string(), String::new()),
        ]
    );
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn live_snapshot_matches_getconf_and_uname() {
    let facts = snapshot();
    // Online CPUs, whatever this process's affinity (which `nproc` would count).
    let (Some(nproc), Some(release)) = (
        command_output("getconf", &["_NPROCESSORS_ONLN"]),
        command_output("uname", &["-r"]),
    ) else {
        eprintln!("skipped: getconf or uname is not available");
        return;
    };
    assert_eq!(value(&facts, "cpu.count"), Some(nproc.as_str()));
    assert_eq!(value(&facts, "kernel.release"), Some(release.as_str()));
    assert!(value(&facts, "kernel.version").is_some());
    assert!(value(&facts, "kernel.cmdline").is_some());
    assert!(value(&facts, "sched.rt_runtime_us").is_some());
    let mut model = SystemFacts::default();
    for line in to_markers(&facts) {
        eprintln!("{line}");
        assert!(line.len() <= MAX_MARKER_LEN);
        let (key, value) = parse_fact_marker(&line).unwrap();
        model.set(key, value);
    }
    assert!(model.rt_runtime_us.is_some());
    assert!(model.irqs.values().all(|irq| irq.name.is_some()));
}
