//! `rtwhy doctor` against fake `/proc` and `/sys` trees (a tuned PREEMPT_RT box, a
//! stock desktop, a broken configuration) and for real on this machine.

use std::path::Path;
use std::process::Command;

use rtwhy_tests::rtwhy;
use serde_json::Value;

/// Files of a fake machine: (path below the root, content).
type Tree = Vec<(String, String)>;

fn file(t: &mut Tree, path: &str, content: &str) {
    t.push((path.to_string(), content.to_string()));
}

/// `/proc/PID/stat` of a thread named `comm` with policy and rt_priority.
fn stat(pid: u32, comm: &str, policy: u32, prio: u32) -> String {
    let mut s = format!("{pid} ({comm}) S");
    for field in 4..=41 {
        let v = match field {
            40 => prio,
            41 => policy,
            _ => 0,
        };
        s.push_str(&format!(" {v}"));
    }
    s
}

struct Machine<'a> {
    release: &'a str,
    version: &'a str,
    cmdline: &'a str,
    config: &'a str,
    cpus: u32,
    isolated: &'a str,
    rt_runtime: &'a str,
    governor: Option<&'a str>,
    idle: &'a [(&'a str, u32)],
    thp: &'a str,
    numa: &'a str,
    realtime: bool,
    irqs: &'a [(u32, &'a str, &'a str)],
    tasks: &'a [(u32, &'a str, u32, u32)],
    memlock: &'a str,
}

fn build(m: &Machine<'_>) -> tempfile::TempDir {
    let mut t = Tree::new();
    file(&mut t, "proc/sys/kernel/osrelease", m.release);
    file(&mut t, "proc/sys/kernel/version", m.version);
    file(&mut t, "proc/cmdline", m.cmdline);
    file(&mut t, &format!("boot/config-{}", m.release), m.config);
    file(
        &mut t,
        "sys/devices/system/cpu/online",
        &format!("0-{}", m.cpus - 1),
    );
    file(&mut t, "sys/devices/system/cpu/isolated", m.isolated);
    file(&mut t, "sys/devices/system/cpu/nohz_full", m.isolated);
    file(&mut t, "proc/sys/kernel/sched_rt_runtime_us", m.rt_runtime);
    file(&mut t, "proc/sys/kernel/sched_rt_period_us", "1000000");
    file(&mut t, "proc/sys/kernel/numa_balancing", m.numa);
    file(&mut t, "sys/kernel/mm/transparent_hugepage/enabled", m.thp);
    if m.realtime {
        file(&mut t, "sys/kernel/realtime", "1");
    } else {
        file(&mut t, "sys/kernel/kexec_loaded", "0");
    }
    for cpu in 0..m.cpus {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        if let Some(g) = m.governor {
            file(&mut t, &format!("{dir}/cpufreq/scaling_governor"), g);
        }
        for (k, (name, lat)) in m.idle.iter().enumerate() {
            file(&mut t, &format!("{dir}/cpuidle/state{k}/name"), name);
            file(
                &mut t,
                &format!("{dir}/cpuidle/state{k}/latency"),
                &lat.to_string(),
            );
        }
    }
    let header: String = (0..m.cpus).map(|c| format!("       CPU{c}")).collect();
    let mut interrupts = format!("{header}\n");
    for (irq, name, affinity) in m.irqs {
        let counts: String = (0..m.cpus).map(|_| "        10".to_string()).collect();
        interrupts.push_str(&format!(
            " {irq}:{counts}  PCI-MSIX-0000:00:02.0   1-edge      {name}\n"
        ));
        file(
            &mut t,
            &format!("proc/irq/{irq}/smp_affinity_list"),
            affinity,
        );
    }
    file(&mut t, "proc/interrupts", &interrupts);
    for (pid, comm, policy, prio) in m.tasks {
        file(&mut t, &format!("proc/{pid}/comm"), comm);
        file(
            &mut t,
            &format!("proc/{pid}/stat"),
            &stat(*pid, comm, *policy, *prio),
        );
    }
    file(
        &mut t,
        "proc/self/limits",
        &format!("Limit                     Soft Limit           Hard Limit           Units\nMax locked memory         {0}              {0}              bytes\n", m.memlock),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, content) in t {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, format!("{content}\n")).expect("write");
    }
    dir
}

/// Runs `rtwhy doctor --format json --root ROOT`: (exit code, document).
fn doctor(root: &Path) -> (i32, Value) {
    let o = Command::new(rtwhy())
        .args(["doctor", "--format", "json", "--root"])
        .arg(root)
        .output()
        .expect("runs");
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap_or(-1), v)
}

fn severity<'a>(doc: &'a Value, check: &str) -> &'a str {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == check)
        .and_then(|f| f["severity"].as_str())
        .unwrap_or_else(|| panic!("no {check} finding"))
}

fn finding<'a>(doc: &'a Value, check: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == check)
        .expect("finding")
}

const RT_CONFIG: &str = "CONFIG_PREEMPT_RT=y\nCONFIG_HZ_1000=y\nCONFIG_HZ=1000";

#[test]
fn a_tuned_preempt_rt_box_passes() {
    let root = build(&Machine {
        release: "6.12.0-rt",
        version: "#1 SMP PREEMPT_RT Mon Jan 6",
        cmdline: "root=/dev/sda1 isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 kthread_cpus=0-1",
        config: RT_CONFIG,
        cpus: 4,
        isolated: "2-3",
        rt_runtime: "950000",
        governor: Some("performance"),
        idle: &[("POLL", 0), ("C1", 2)],
        thp: "always madvise [never]",
        numa: "0",
        realtime: true,
        irqs: &[(30, "eth0", "0-1"), (31, "nvme0q1", "0")],
        tasks: &[(1, "systemd", 0, 0), (120, "irq/30-eth0", 1, 50), (121, "irq/31-nvme0q1", 1, 50)],
        memlock: "unlimited",
    });
    let (code, doc) = doctor(root.path());
    for f in doc["findings"].as_array().expect("findings") {
        assert!(
            matches!(f["severity"].as_str(), Some("ok")),
            "tuned box: {f}"
        );
    }
    assert_eq!(code, 0);
    assert_eq!(doc["facts"]["kernel.preempt"], "rt");
    assert_eq!(doc["facts"]["kernel.hz"], "1000");
    assert_eq!(doc["facts"]["irq.30.thread_prio"], "50");
    assert_eq!(doc["facts"]["irqbalance.running"], "0");
}

#[test]
fn a_stock_desktop_gets_the_tuning_guide_warnings() {
    let root = build(&Machine {
        release: "6.8.0-generic",
        version: "#40-Ubuntu SMP PREEMPT_DYNAMIC Fri",
        cmdline: "BOOT_IMAGE=/vmlinuz root=UUID=x ro quiet splash",
        config: "CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250",
        cpus: 8,
        isolated: "",
        rt_runtime: "950000",
        governor: Some("powersave"),
        idle: &[("POLL", 0), ("C1E", 10), ("C6", 170), ("C10", 890)],
        thp: "[always] madvise never",
        numa: "1",
        realtime: false,
        irqs: &[(120, "nvme0q1", "0-7"), (130, "i915", "0-7")],
        tasks: &[(1, "systemd", 0, 0), (880, "irqbalance", 0, 0)],
        memlock: "8388608",
    });
    let (code, doc) = doctor(root.path());
    assert_eq!(code, 1);
    assert_eq!(doc["facts"]["kernel.preempt"], "voluntary");
    for check in [
        "preempt_rt",
        "preempt_model",
        "cpu_governor",
        "idle_states",
        "thp",
        "numa_balancing",
        "memlock",
    ] {
        assert_eq!(severity(&doc, check), "warning", "{check}");
    }
    for (check, sev) in [
        ("isolation", "info"),
        ("irqbalance", "info"),
        ("irq_affinity", "ok"),
        ("rt_throttling", "ok"),
        ("timer_frequency", "ok"),
    ] {
        assert_eq!(severity(&doc, check), sev, "{check}");
    }
    assert!(finding(&doc, "idle_states")["evidence"]
        .to_string()
        .contains("C10 exits in 890 us"));
}

#[test]
fn a_broken_config_names_the_irq_the_throttling_and_the_governor() {
    let root = build(&Machine {
        release: "6.18.0",
        version: "#1 SMP PREEMPT_DYNAMIC",
        cmdline: "root=/dev/vda isolcpus=1 preempt=full",
        config: "CONFIG_PREEMPT_NONE=y\nCONFIG_HZ=100",
        cpus: 2,
        isolated: "1",
        rt_runtime: "-1",
        governor: Some("powersave"),
        idle: &[],
        thp: "always [madvise] never",
        numa: "0",
        realtime: false,
        irqs: &[(36, "virtio1-req.0", "1"), (37, "virtio2-input", "0")],
        tasks: &[(1, "init", 0, 0), (500, "irqbalance", 0, 0)],
        memlock: "unlimited",
    });
    let (code, doc) = doctor(root.path());
    assert_eq!(code, 1);
    assert_eq!(
        doc["facts"]["kernel.preempt"], "full",
        "preempt= wins over the config"
    );
    assert_eq!(severity(&doc, "irq_affinity"), "error");
    let irq = finding(&doc, "irq_affinity");
    assert_eq!(irq["evidence"].as_array().map(Vec::len), Some(1), "{irq}");
    assert!(
        irq["evidence"][0]
            .as_str()
            .unwrap_or_default()
            .starts_with("IRQ 36 (virtio1-req.0)"),
        "{irq}"
    );
    assert_eq!(irq["fix"], "echo 0 > /proc/irq/36/smp_affinity_list");
    assert_eq!(severity(&doc, "rt_throttling"), "error");
    assert_eq!(severity(&doc, "cpu_governor"), "warning");
    assert_eq!(severity(&doc, "irqbalance"), "warning");
    assert_eq!(severity(&doc, "timer_frequency"), "warning");
    assert_eq!(severity(&doc, "isolation"), "warning");
    assert_eq!(doc["summary"]["error"], 2);
    // The text form shows the same, one check per line.
    let o = Command::new(rtwhy())
        .args(["doctor", "--root"])
        .arg(root.path())
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("ERROR    irq_affinity     1 device IRQ may run on the isolated CPU 1"),
        "{text}"
    );
    assert!(
        text.contains("fix: echo 950000 > /proc/sys/kernel/sched_rt_runtime_us"),
        "{text}"
    );
    insta::assert_snapshot!("doctor_broken_text", text);
}

#[test]
fn a_missing_root_is_an_input_error() {
    let o = Command::new(rtwhy())
        .args(["doctor", "--root", "/nonexistent/root"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr).lines().count(), 1);
}

fn sh(cmd: &str) -> Option<String> {
    let o = Command::new("sh").args(["-c", cmd]).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The preemption model as the kernel's own interfaces tell it, read with other tools.
fn oracle_preempt_model() -> Option<String> {
    if let Some(text) = sh("cat /sys/kernel/debug/sched/preempt 2>/dev/null") {
        return text
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
            .map(str::to_string);
    }
    let version = sh("uname -v")?;
    if version.contains("PREEMPT_RT") {
        return Some("rt".into());
    }
    if !version.contains("PREEMPT_DYNAMIC") {
        return None;
    }
    if let Some(p) = sh("tr ' ' '\\n' < /proc/cmdline | sed -n 's/^preempt=//p' | tail -1")
        .filter(|p| !p.is_empty())
    {
        return Some(p);
    }
    let config = sh("zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r)")?;
    for (key, model) in [
        ("CONFIG_PREEMPT_NONE=y", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY=y", "voluntary"),
        ("CONFIG_PREEMPT_LAZY=y", "lazy"),
        ("CONFIG_PREEMPT=y", "full"),
    ] {
        if config.lines().any(|l| l == key) {
            return Some(model.into());
        }
    }
    None
}

#[test]
fn doctor_runs_on_this_machine_and_tells_its_preemption_model() {
    let o = Command::new(rtwhy())
        .args(["doctor", "--format", "json"])
        .output()
        .expect("runs");
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
    let worst_is_warning = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .any(|f| matches!(f["severity"].as_str(), Some("warning" | "error")));
    assert_eq!(o.status.code(), Some(if worst_is_warning { 1 } else { 0 }));
    assert_eq!(doc["findings"].as_array().map(Vec::len), Some(13));
    assert_eq!(
        doc["facts"]["kernel.release"].as_str(),
        sh("uname -r").as_deref()
    );
    let oracle = oracle_preempt_model();
    assert_eq!(doc["facts"]["kernel.preempt"].as_str(), oracle.as_deref());
    let text = Command::new(rtwhy()).arg("doctor").output().expect("runs");
    let first = String::from_utf8_lossy(&text.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        first.contains(&format!(
            "preemption model {}",
            oracle.as_deref().unwrap_or("unknown")
        )),
        "{first}"
    );
}
