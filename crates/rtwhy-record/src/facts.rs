//! The machine's facts a diagnosis depends on (kernel, isolation, RT bandwidth, IRQ
//! affinities, idle states), read from procfs and sysfs and written into a recording as
//! `rtwhy-fact: KEY=VALUE` markers (docs/markers.md lists the keys).
//!
//! Reading never fails: a file that is missing or unreadable (debugfs under lockdown,
//! no cpufreq in a VM) just leaves its fact out. Nothing is ever written.
//!
//! ```
//! let facts = rtwhy_record::facts::snapshot_at(std::path::Path::new("/nonexistent"));
//! assert!(facts.is_empty());
//! assert!(rtwhy_record::facts::to_markers(&facts).is_empty());
//! ```

use std::path::Path;

use rtwhy_model::{CpuList, FACT_PREFIX, MAX_MARKER_LEN};

/// The facts of the running machine, in the order they are written.
///
/// Like [`snapshot_at`] on `/`, except that the kernel release and version come from
/// `uname(2)`.
pub fn snapshot() -> Vec<(String, String)> {
    let root = Path::new("/");
    let (release, version) = match rtwhy_sys::host::uname() {
        Some(u) => (Some(u.release), Some(u.version)),
        None => (
            read_value(root, "proc/sys/kernel/osrelease"),
            read_value(root, "proc/sys/kernel/version"),
        ),
    };
    collect(root, release, version)
}

/// The facts of the system tree under `root` (`/` for this machine; a fake tree in
/// tests). The kernel release and version come from `proc/sys/kernel/osrelease` and
/// `proc/sys/kernel/version`.
pub fn snapshot_at(root: &Path) -> Vec<(String, String)> {
    let release = read_value(root, "proc/sys/kernel/osrelease");
    let version = read_value(root, "proc/sys/kernel/version");
    collect(root, release, version)
}

/// One `rtwhy-fact: key=value` marker line (no newline) per fact, each at most
/// [`MAX_MARKER_LEN`] bytes: a longer value is cut at a character boundary.
pub fn to_markers(facts: &[(String, String)]) -> Vec<String> {
    facts
        .iter()
        .filter_map(|(key, value)| {
            let mut line = format!("{FACT_PREFIX}{key}=");
            if line.len() >= MAX_MARKER_LEN {
                return None;
            }
            let room = MAX_MARKER_LEN - line.len();
            let mut cut = value.len().min(room);
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            line.push_str(value.get(..cut).unwrap_or_default());
            Some(line)
        })
        .collect()
}

fn collect(root: &Path, release: Option<String>, version: Option<String>) -> Vec<(String, String)> {
    let mut facts = Facts::default();
    let cmdline = read_value(root, "proc/cmdline");
    let config = kernel_config(root, release.as_deref());
    let preempt = preempt_model(root, version.as_deref(), cmdline.as_deref())
        .or_else(|| dynamic_default(version.as_deref(), config.as_deref()));
    facts.put("kernel.release", release.clone());
    facts.put("kernel.version", version);
    facts.put("kernel.preempt", preempt);
    facts.put("kernel.cmdline", cmdline);
    facts.put("kernel.realtime", realtime(root));
    facts.put(
        "kernel.hz",
        config.as_deref().and_then(|c| config_value(c, "CONFIG_HZ")),
    );

    let online = cpu_list(root, "online");
    facts.put("cpu.count", online.as_ref().map(|l| l.0.len().to_string()));
    // An empty list is a fact too (no CPU isolated), unlike a missing file.
    for (key, file) in [("cpu.isolated", "isolated"), ("cpu.nohz_full", "nohz_full")] {
        let path = root.join("sys/devices/system/cpu").join(file);
        let list = std::fs::read_to_string(path).ok();
        facts.put(key, list.map(|l| l.trim().to_string()));
    }
    facts.put(
        "sched.rt_runtime_us",
        read_value(root, "proc/sys/kernel/sched_rt_runtime_us"),
    );
    facts.put(
        "sched.rt_period_us",
        read_value(root, "proc/sys/kernel/sched_rt_period_us"),
    );

    facts.put(
        "sched.numa_balancing",
        read_value(root, "proc/sys/kernel/numa_balancing"),
    );
    facts.put(
        "mm.thp",
        read_value(root, "sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|t| active_choice(&t)),
    );
    let tasks = tasks(root);
    if !tasks.is_empty() {
        let running = tasks.iter().any(|t| t.comm == "irqbalance");
        facts.put("irqbalance.running", Some(u8::from(running).to_string()));
    }
    facts.put("limits.memlock", memlock(root));

    if let Ok(text) = std::fs::read_to_string(root.join("proc/interrupts")) {
        for (irq, name) in interrupt_names(&text) {
            facts.put(
                &format!("irq.{irq}.name"),
                (!name.is_empty()).then_some(name),
            );
            let dir = format!("proc/irq/{irq}");
            facts.put(
                &format!("irq.{irq}.affinity"),
                read_value(root, &format!("{dir}/smp_affinity_list")),
            );
            facts.put(
                &format!("irq.{irq}.effective_affinity"),
                read_value(root, &format!("{dir}/effective_affinity_list")),
            );
            facts.put(&format!("irq.{irq}.managed"), irq_managed(root, irq));
            let prefix = format!("irq/{irq}-");
            let thread = tasks.iter().find(|t| t.comm.starts_with(&prefix));
            facts.put(
                &format!("irq.{irq}.thread_prio"),
                thread.and_then(|t| t.rt_priority).map(|p| p.to_string()),
            );
        }
    }

    for cpu in cpu_numbers(root) {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}");
        facts.put(
            &format!("cpu.{cpu}.governor"),
            read_value(root, &format!("{dir}/cpufreq/scaling_governor")),
        );
        facts.put(
            &format!("cpu.{cpu}.idle_states"),
            idle_states(root, &format!("{dir}/cpuidle")),
        );
    }
    facts.0
}

#[derive(Default)]
struct Facts(Vec<(String, String)>);

impl Facts {
    fn put(&mut self, key: &str, value: Option<String>) {
        if let Some(value) = value {
            self.0.push((key.to_string(), value));
        }
    }
}

/// A file's content as one trimmed line; `None` when it cannot be read or is empty.
/// A CPU list of `sys/devices/system/cpu` under `root` (`online`, `isolated`,
/// `nohz_full`); `None` when the file is missing or is not a CPU list.
pub fn cpu_list(root: &Path, name: &str) -> Option<CpuList> {
    read_value(root, &format!("sys/devices/system/cpu/{name}")).and_then(|s| CpuList::parse(&s))
}

fn read_value(root: &Path, rel: &str) -> Option<String> {
    let bytes = std::fs::read(root.join(rel)).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// `1` when `sys/kernel/realtime` says so (PREEMPT_RT kernels have the file), `0`
/// when sysfs is there without it.
fn realtime(root: &Path) -> Option<String> {
    match read_value(root, "sys/kernel/realtime") {
        Some(v) => Some(v),
        None => root.join("sys/kernel").is_dir().then(|| "0".to_string()),
    }
}

/// The kernel's build configuration: `boot/config-RELEASE`, else the gzipped
/// `proc/config.gz` (`CONFIG_IKCONFIG_PROC`).
fn kernel_config(root: &Path, release: Option<&str>) -> Option<String> {
    if let Some(r) = release {
        if let Ok(text) = std::fs::read_to_string(root.join(format!("boot/config-{r}"))) {
            return Some(text);
        }
    }
    let gz = std::fs::File::open(root.join("proc/config.gz")).ok()?;
    let mut text = String::new();
    // A kernel config is a few hundred KiB; more is not a config.
    std::io::Read::read_to_string(
        &mut std::io::Read::take(flate2::read::GzDecoder::new(gz), 16 << 20),
        &mut text,
    )
    .ok()?;
    Some(text)
}

/// `VALUE` of a `KEY=VALUE` line of a kernel config.
fn config_value(config: &str, key: &str) -> Option<String> {
    config.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k == key).then(|| v.trim().to_string())
    })
}

/// The model a `PREEMPT_DYNAMIC` kernel boots with when `preempt=` does not say: the
/// build's `CONFIG_PREEMPT_*` choice.
fn dynamic_default(version: Option<&str>, config: Option<&str>) -> Option<String> {
    if !version?.split_whitespace().any(|w| w == "PREEMPT_DYNAMIC") {
        return None;
    }
    let config = config?;
    [
        ("CONFIG_PREEMPT_NONE", "none"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
    ]
    .into_iter()
    .find(|(key, _)| config_value(config, key).as_deref() == Some("y"))
    .map(|(_, model)| model.to_string())
}

/// The bracketed entry of a sysfs choice file: `always [madvise] never` -> `madvise`.
fn active_choice(text: &str) -> Option<String> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// The soft `Max locked memory` of `proc/self/limits`: bytes or `unlimited`.
fn memlock(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("proc/self/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max locked memory"))?;
    let soft = line
        .get("Max locked memory".len()..)?
        .split_whitespace()
        .next()?;
    (soft == "unlimited" || soft.parse::<u64>().is_ok()).then(|| soft.to_string())
}

/// A process as the facts need it.
struct Task {
    comm: String,
    /// SCHED_FIFO/RR priority; 0 for other policies; `None` when unreadable.
    rt_priority: Option<i32>,
}

/// Every process of `proc/` with its name and real-time priority.
fn tasks(root: &Path) -> Vec<Task> {
    numbered_entries(&root.join("proc"), "")
        .into_iter()
        .filter_map(|pid| {
            let comm = read_value(root, &format!("proc/{pid}/comm"))?;
            let stat = std::fs::read_to_string(root.join(format!("proc/{pid}/stat"))).ok();
            let rt_priority = stat.as_deref().and_then(rt_priority_from_stat);
            Some(Task { comm, rt_priority })
        })
        .collect()
}

/// `rt_priority` (field 40) when `policy` (field 41) is SCHED_FIFO or SCHED_RR, else 0.
/// Fields are counted after the parenthesised name, which may hold spaces.
fn rt_priority_from_stat(stat: &str) -> Option<i32> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let prio: i32 = fields.get(40 - 3)?.parse().ok()?;
    let policy: u32 = fields.get(41 - 3)?.parse().ok()?;
    Some(if policy == 1 || policy == 2 { prio } else { 0 })
}

/// The preemption model: the active (parenthesised) entry of debugfs's
/// `sched/preempt`; otherwise the build's model from the version string. A
/// `PREEMPT_DYNAMIC` kernel's model is chosen at boot by `preempt=` (default: the
/// build's `CONFIG_PREEMPT_*`, which the version string does not tell), so without the
/// debugfs file only an explicit `preempt=` on the command line gives it here, and
/// [`dynamic_default`] reads the default from the kernel config.
fn preempt_model(root: &Path, version: Option<&str>, cmdline: Option<&str>) -> Option<String> {
    if let Some(text) = read_value(root, "sys/kernel/debug/sched/preempt") {
        let active = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'));
        if let Some(active) = active {
            return Some(active.to_string());
        }
    }
    let words: Vec<&str> = version?.split_whitespace().collect();
    if words.contains(&"PREEMPT_RT") {
        Some("rt".into())
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        cmdline?
            .split_whitespace()
            .find_map(|w| w.strip_prefix("preempt="))
            .filter(|m| ["none", "voluntary", "full", "lazy"].contains(m))
            .map(str::to_string)
    } else if words.contains(&"PREEMPT_LAZY") {
        Some("lazy".into())
    } else if words.contains(&"PREEMPT") {
        Some("full".into())
    } else {
        None
    }
}

/// Numeric IRQs of `/proc/interrupts` with their action names: what follows the
/// per-CPU counts, the chip name and the details of `kernel/irq/proc.c`'s
/// `show_interrupts`.
fn interrupt_names(text: &str) -> Vec<(u32, String)> {
    let mut lines = text.lines();
    let cpus = lines.next().map_or(0, |h| h.split_whitespace().count());
    let mut out = Vec::new();
    for line in lines {
        let Some((irq, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = irq.trim().parse::<u32>() else {
            continue;
        };
        let mut rest = rest;
        // The per-CPU counts.
        for _ in 0..cpus {
            let trimmed = rest.trim_start();
            let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
            let Some(word) = trimmed.get(..end) else {
                break;
            };
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_digit()) {
                break;
            }
            rest = trimmed.get(end..).unwrap_or_default();
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        // After the chip name (one word) the kernel prints the hardware IRQ number, on
        // some architectures `Edge`/`Level`, and the flow handler's name after a dash
        // (`1-edge`, `9-fasteoi`, or `-edge` without a number).
        let skip = 1 + words
            .iter()
            .skip(1)
            .take_while(|w| is_irq_detail(w))
            .count();
        let name = words.get(skip..).unwrap_or_default().join(" ");
        out.push((irq, name));
    }
    out
}

fn is_irq_detail(word: &str) -> bool {
    if word == "Edge" || word == "Level" {
        return true;
    }
    let (number, handler) = word.split_once('-').unwrap_or((word, ""));
    number.bytes().all(|b| b.is_ascii_digit()) && (!number.is_empty() || !handler.is_empty())
}

/// `1` or `0` when the kernel says whether the IRQ's affinity is managed, read-only:
/// the IRQ debugfs (`CONFIG_GENERIC_IRQ_DEBUGFS`) shows `IRQD_AFFINITY_MANAGED`; without
/// it, an `smp_affinity_list` without write permission is the kernel saying user space
/// cannot set this IRQ's affinity (Linux 6.x drops the bit for such IRQs), so `1`.
/// Otherwise the fact is left out rather than probed by writing `smp_affinity`.
fn irq_managed(root: &Path, irq: u32) -> Option<String> {
    let Ok(text) = std::fs::read_to_string(root.join(format!("sys/kernel/debug/irq/irqs/{irq}")))
    else {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root.join(format!("proc/irq/{irq}/smp_affinity_list")))
            .ok()?
            .permissions()
            .mode();
        return (mode & 0o222 == 0).then(|| "1".to_string());
    };
    Some(
        if text.contains("AFFINITY_MANAGED") {
            "1"
        } else {
            "0"
        }
        .to_string(),
    )
}

/// The numbers of the `cpuN` directories, ascending.
fn cpu_numbers(root: &Path) -> Vec<u32> {
    numbered_entries(&root.join("sys/devices/system/cpu"), "cpu")
}

fn numbered_entries(dir: &Path, prefix: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut numbers: Vec<u32> = entries
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix(prefix)?
                .parse()
                .ok()
        })
        .collect();
    numbers.sort_unstable();
    numbers
}

/// `name:exit_latency_us,...` over the `stateK` directories of a cpuidle directory.
fn idle_states(root: &Path, cpuidle: &str) -> Option<String> {
    let states: Vec<String> = numbered_entries(&root.join(cpuidle), "state")
        .into_iter()
        .filter_map(|k| {
            let dir = format!("{cpuidle}/state{k}");
            let name = read_value(root, &format!("{dir}/name"))?;
            let latency = read_value(root, &format!("{dir}/latency"))?;
            Some(format!("{}:{latency}", name.replace(',', " ")))
        })
        .collect();
    (!states.is_empty()).then(|| states.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_names_skip_counts_chip_and_details() {
        let text = "           CPU0       CPU1       \n \
             24:          1          0  IO-APIC   5-edge      ACPI:Ged\n \
             36:          0     327023 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n \
             40:          3          0  IR-PCI-MSI 512000-edge      ahci[0000:00:17.0], snd_hda\n \
             11:          3          0     GICv3  27 Level     arch_timer\n \
             12:          3          0  XT-PIC      -fasteoi   cascade\n\
             NMI:          0          0   Non-maskable interrupts\n\
             ERR:          0\n";
        assert_eq!(
            interrupt_names(text),
            vec![
                (24, "ACPI:Ged".to_string()),
                (36, "virtio1-req.0".to_string()),
                (40, "ahci[0000:00:17.0], snd_hda".to_string()),
                (11, "arch_timer".to_string()),
                (12, "cascade".to_string()),
            ]
        );
    }

    #[test]
    fn preempt_model_prefers_debugfs_then_version() {
        let none = Path::new("/nonexistent");
        let model = |v: &str, c: &str| preempt_model(none, Some(v), Some(c));
        assert_eq!(model("#1 SMP PREEMPT_RT Tue", "").as_deref(), Some("rt"));
        assert_eq!(model("#1 SMP PREEMPT Tue", "").as_deref(), Some("full"));
        assert_eq!(model("#1 SMP PREEMPT_DYNAMIC @0", "quiet"), None);
        assert_eq!(
            model("#1 SMP PREEMPT_DYNAMIC @0", "quiet preempt=none").as_deref(),
            Some("none")
        );
        assert_eq!(model("#1 SMP Tue", ""), None);
        let config = "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(
            dynamic_default(Some("#1 SMP PREEMPT_DYNAMIC @0"), Some(config)).as_deref(),
            Some("none")
        );
        assert_eq!(
            dynamic_default(Some("#1 SMP PREEMPT @0"), Some(config)),
            None
        );
    }

    #[test]
    fn stat_fields_give_the_fifo_priority() {
        let mut stat = String::from("42 (irq/36-virtio1 req) S");
        for field in 4..=41 {
            let v = match field {
                40 => "50",
                41 => "1",
                _ => "0",
            };
            stat.push(' ');
            stat.push_str(v);
        }
        assert_eq!(rt_priority_from_stat(&stat), Some(50));
        assert_eq!(
            rt_priority_from_stat(&stat.replace(" 50 1", " 0 0")),
            Some(0)
        );
        assert_eq!(rt_priority_from_stat("42 (x) S 1"), None);
        assert_eq!(
            active_choice("always [madvise] never").as_deref(),
            Some("madvise")
        );
    }

    #[test]
    fn an_affinity_user_space_cannot_write_is_managed() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        for (irq, mode) in [(36, 0o444), (14, 0o644)] {
            let dir = root.path().join(format!("proc/irq/{irq}"));
            std::fs::create_dir_all(&dir).unwrap();
            let f = dir.join("smp_affinity_list");
            std::fs::write(&f, "0-1\n").unwrap();
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        // This VM's virtio-blk queue (MSI-X, spread by the kernel): read-only.
        assert_eq!(irq_managed(root.path(), 36).as_deref(), Some("1"));
        // Writable, and no IRQ debugfs to say more: unknown, not probed.
        assert_eq!(irq_managed(root.path(), 14), None);
        // The debugfs, where there is one, decides.
        let debug = root.path().join("sys/kernel/debug/irq/irqs");
        std::fs::create_dir_all(&debug).unwrap();
        std::fs::write(debug.join("36"), "handler:  handle_edge_irq\nflags: 0x0\n").unwrap();
        assert_eq!(irq_managed(root.path(), 36).as_deref(), Some("0"));
    }

    #[test]
    fn long_values_are_cut_at_a_character() {
        let facts = vec![("kernel.cmdline".to_string(), "é".repeat(600))];
        let lines = to_markers(&facts);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].len() <= MAX_MARKER_LEN);
        assert!(lines[0].len() > MAX_MARKER_LEN - 2);
        assert!(lines[0].starts_with("rtwhy-fact: kernel.cmdline=éé"));
    }
}
