//! System facts a diagnosis depends on (isolation, RT bandwidth, IRQ affinities...), and
//! the two marker formats rtwhy writes into its recordings: `rtwhy-fact:` and
//! `rtwhy-breach:` (specified in docs/markers.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::{Comm, Nanos};

/// A set of CPUs, parsed from and printed as a kernel CPU list (`1-3,5`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuList(pub Vec<u32>);

impl CpuList {
    /// Parses `1-3,5` (spaces and a trailing newline allowed; empty means no CPU).
    pub fn parse(s: &str) -> Option<CpuList> {
        let mut cpus = Vec::new();
        for part in s.trim().split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if let Some((a, b)) = part.split_once('-') {
                let a: u32 = a.trim().parse().ok()?;
                let b: u32 = b.trim().parse().ok()?;
                if b < a || b - a > 4096 {
                    return None;
                }
                cpus.extend(a..=b);
            } else {
                cpus.push(part.parse().ok()?);
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Some(CpuList(cpus))
    }

    /// True when `cpu` is in the list.
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// True when the list holds no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for CpuList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

/// What an IRQ is and where it may run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqFact {
    /// IRQ number.
    pub irq: i32,
    /// Action name(s) from /proc/interrupts.
    pub name: Option<String>,
    /// `/proc/irq/N/smp_affinity_list`.
    pub affinity: Option<String>,
    /// `/proc/irq/N/effective_affinity_list`.
    pub effective: Option<String>,
    /// The kernel manages its affinity (it cannot be changed from user space).
    pub managed: bool,
    /// SCHED_FIFO priority of its `irq/N-name` thread (threaded IRQs, PREEMPT_RT);
    /// 0 when the thread is not real-time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_prio: Option<i32>,
}

/// Facts about the machine a trace was recorded on.
///
/// Filled from the trace's own metadata (kernel release), from `rtwhy-fact:` markers
/// written by the recorder, and from the command line (`--isolated`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemFacts {
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v` (says PREEMPT_RT / PREEMPT_DYNAMIC).
    pub kernel_version: Option<String>,
    /// Preemption model: `none`, `voluntary`, `full`, `lazy` or `rt`.
    pub preempt: Option<String>,
    /// `/proc/cmdline`.
    pub cmdline: Option<String>,
    /// Number of CPUs.
    pub cpus: Option<u32>,
    /// CPUs isolated from general scheduling and device IRQs.
    pub isolated: CpuList,
    /// Where `isolated` came from (`--isolated`, `isolcpus=`, sysfs...).
    pub isolated_source: Option<String>,
    /// `nohz_full=` CPUs.
    pub nohz_full: CpuList,
    /// `/proc/sys/kernel/sched_rt_runtime_us`.
    pub rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub rt_period_us: Option<i64>,
    /// IRQs by number.
    pub irqs: BTreeMap<i32, IrqFact>,
    /// cpufreq governor per CPU.
    pub governors: BTreeMap<u32, String>,
    /// Idle states per CPU, as recorded (`name:exit_latency_us,...`).
    pub idle_states: BTreeMap<u32, String>,
    /// `/sys/kernel/realtime` reads 1 (a PREEMPT_RT kernel); `Some(false)` when the
    /// recorder looked and the file was absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime: Option<bool>,
    /// Timer frequency (`CONFIG_HZ`) from the kernel's build configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thp: Option<String>,
    /// `/proc/sys/kernel/numa_balancing` (0 off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_balancing: Option<i64>,
    /// Whether an `irqbalance` daemon was running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irqbalance: Option<bool>,
    /// The recording process's locked-memory limit (`RLIMIT_MEMLOCK`, soft), in bytes;
    /// `None` inside when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlock: Option<Option<u64>>,
    /// The CPUs recorded in full (`rtwhy record --other-cpus lean`): the others have no
    /// context switches or wake-ups of ordinary tasks. `None`: every CPU in full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_cpus: Option<CpuList>,
    /// Every other recorded fact, by key.
    pub other: BTreeMap<String, String>,
}

impl SystemFacts {
    /// The longest exit latency of CPU `cpu`'s idle states (recorded as
    /// `name:exit_latency_us,...`), in nanoseconds; `None` when not recorded.
    pub fn max_idle_exit_ns(&self, cpu: u32) -> Option<u64> {
        self.idle_states
            .get(&cpu)?
            .split(',')
            .filter_map(|s| s.rsplit_once(':')?.1.trim().parse::<u64>().ok())
            .max()
            .map(|us| us.saturating_mul(1000))
    }

    /// Takes one `key=value` fact (see docs/markers.md); unknown keys are kept in `other`.
    pub fn set(&mut self, key: &str, value: &str) {
        let value = value.trim();
        let owned = || Some(value.to_string());
        match key {
            "kernel.release" => self.kernel_release = owned(),
            "kernel.version" => self.kernel_version = owned(),
            "kernel.preempt" => self.preempt = owned(),
            "kernel.cmdline" => {
                self.cmdline = owned();
                self.isolation_from_cmdline();
            }
            "cpu.count" => self.cpus = value.parse().ok(),
            "cpu.isolated" => {
                if let Some(l) = CpuList::parse(value) {
                    if !l.is_empty() {
                        self.isolated = l;
                        self.isolated_source = Some("/sys/devices/system/cpu/isolated".into());
                    }
                }
            }
            "cpu.nohz_full" => {
                if let Some(l) = CpuList::parse(value) {
                    self.nohz_full = l;
                }
            }
            "sched.rt_runtime_us" => self.rt_runtime_us = value.parse().ok(),
            "sched.rt_period_us" => self.rt_period_us = value.parse().ok(),
            "kernel.realtime" => self.realtime = Some(value == "1"),
            "kernel.hz" => self.hz = value.parse().ok(),
            "mm.thp" => self.thp = owned(),
            "sched.numa_balancing" => self.numa_balancing = value.parse().ok(),
            "irqbalance.running" => self.irqbalance = Some(value == "1"),
            "record.full_cpus" => self.full_cpus = CpuList::parse(value),
            "limits.memlock" => {
                self.memlock = if value == "unlimited" {
                    Some(None)
                } else {
                    value.parse().ok().map(Some)
                }
            }
            _ => {
                if !self.set_indexed(key, value) {
                    self.other.insert(key.to_string(), value.to_string());
                }
            }
        }
    }

    fn set_indexed(&mut self, key: &str, value: &str) -> bool {
        let mut parts = key.splitn(3, '.');
        let (Some(group), Some(index), Some(field)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        match group {
            "irq" => {
                let Ok(irq) = index.parse::<i32>() else {
                    return false;
                };
                let fact = self.irqs.entry(irq).or_insert_with(|| IrqFact {
                    irq,
                    ..IrqFact::default()
                });
                match field {
                    "name" => fact.name = Some(value.to_string()),
                    "affinity" => fact.affinity = Some(value.to_string()),
                    "effective_affinity" => fact.effective = Some(value.to_string()),
                    "managed" => fact.managed = value == "1" || value == "yes",
                    "thread_prio" => fact.thread_prio = value.parse().ok(),
                    _ => return false,
                }
                true
            }
            "cpu" => {
                let Ok(cpu) = index.parse::<u32>() else {
                    return false;
                };
                match field {
                    "governor" => {
                        self.governors.insert(cpu, value.to_string());
                    }
                    "idle_states" => {
                        self.idle_states.insert(cpu, value.to_string());
                    }
                    _ => return false,
                }
                true
            }
            _ => false,
        }
    }

    /// Isolated CPUs from `isolcpus=` (domain flag or none) when nothing better is known.
    fn isolation_from_cmdline(&mut self) {
        if !self.isolated.is_empty() {
            return;
        }
        let Some(cmdline) = self.cmdline.clone() else {
            return;
        };
        for word in cmdline.split_whitespace() {
            if let Some(v) = word.strip_prefix("isolcpus=") {
                // isolcpus=[flags,]list: flags are words, the list is the last part
                // that parses.
                let list = v
                    .split(',')
                    .filter(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()))
                    .collect::<Vec<_>>()
                    .join(",");
                if let Some(l) = CpuList::parse(&list) {
                    if !l.is_empty() {
                        self.isolated = l;
                        self.isolated_source = Some("isolcpus= on the kernel command line".into());
                    }
                }
            } else if let Some(v) = word.strip_prefix("nohz_full=") {
                if let Some(l) = CpuList::parse(v) {
                    self.nohz_full = l;
                }
            }
        }
        if self.isolated.is_empty() && !self.nohz_full.is_empty() {
            self.isolated = self.nohz_full.clone();
            self.isolated_source = Some("nohz_full= on the kernel command line".into());
        }
    }

    /// The preemption model, from the recorded fact or the kernel version string.
    pub fn preempt_model(&self) -> Option<&str> {
        if let Some(p) = &self.preempt {
            return Some(p);
        }
        let v = self.kernel_version.as_deref()?;
        if v.contains("PREEMPT_RT") {
            Some("rt")
        } else if v.contains("PREEMPT_DYNAMIC") {
            None
        } else if v.contains("PREEMPT") {
            Some("full")
        } else {
            None
        }
    }

    /// The value of `name=` on the recorded kernel command line (the last one wins,
    /// as in the kernel); `Some("")` for a bare `name`.
    pub fn cmdline_param(&self, name: &str) -> Option<&str> {
        self.cmdline
            .as_deref()?
            .split_whitespace()
            .rev()
            .find_map(|w| match w.split_once('=') {
                Some((k, v)) if k == name => Some(v),
                None if w == name => Some(""),
                _ => None,
            })
    }

    /// Kernel release as (major, minor), when known.
    pub fn kernel_version_number(&self) -> Option<(u32, u32)> {
        let r = self.kernel_release.as_deref()?;
        let mut it = r.split(|c: char| !c.is_ascii_digit());
        let major = it.next()?.parse().ok()?;
        let minor = it.next()?.parse().ok()?;
        Some((major, minor))
    }
}

/// Prefix of a system fact marker: `rtwhy-fact: key=value`.
pub const FACT_PREFIX: &str = "rtwhy-fact: ";
/// Prefix of a breach marker: `rtwhy-breach: v=1 key=value ...`.
pub const BREACH_PREFIX: &str = "rtwhy-breach: ";

/// A breach marker describes the spike of its thread whose end lies nearest its
/// `switch_in_ns`, and only one within this distance. The detector stamps the switch-in
/// with the trace's clock at the same `sched_switch`, a few microseconds apart on
/// hardware, up to ~125 us under emulation (measured in the PREEMPT_RT guest's
/// `fixtures/rt_irq_on_isolated_cpu/capture.dat`); a 1 kHz loop ends a spike every
/// millisecond, so nearest-first keeps the next period's spike from taking the marker.
pub const MARKER_MATCH_NS: u64 = 1_000_000;

/// The longest marker line rtwhy writes, in bytes (the kernel accepts more, but tools
/// that print markers do not all cope).
pub const MAX_MARKER_LEN: usize = 1000;

/// A `rtwhy-fact:` marker's key and value, if `text` is one.
pub fn parse_fact_marker(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(FACT_PREFIX)?;
    rest.split_once('=')
}

/// What rtwhy's breach detector knew about a late thread, written into the recording as
/// a `trace_marker` line so the analyzer has exact times even where ftrace dropped
/// events. All times are in the trace clock's nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreachRecord {
    /// The late thread.
    pub tid: i32,
    /// Its name.
    pub comm: Comm,
    /// The CPU it ran on.
    pub cpu: u32,
    /// Its kernel prio when it was switched in.
    pub prio: Option<i32>,
    /// Measured latency.
    pub latency: Nanos,
    /// The threshold it exceeded.
    pub threshold: Option<Nanos>,
    /// Timer expiry, when the wake-up came from the thread's own timer.
    pub expiry: Option<Nanos>,
    /// `sched_waking` time.
    pub waking: Option<Nanos>,
    /// `sched_switch` into the thread.
    pub switch_in: Nanos,
    /// Who woke it.
    pub waker_tid: Option<i32>,
    /// The task switched out when it ran.
    pub prev_tid: Option<i32>,
    /// Its name.
    pub prev_comm: Option<Comm>,
    /// The run queue's `rt_throttled` when the wake-up happened.
    pub rt_throttled: Option<bool>,
    /// Which detector measured it: `bpf`, `tracefs` (the fallback) or `probe`.
    pub detector: Option<String>,
    /// Kernel stack at the switch-in (innermost first), as `function+0xoff` names.
    pub stack: Vec<String>,
    /// When the thread's timer ran, if it ran at least the threshold after its expiry
    /// (the timer interrupt came late).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_fired: Option<Nanos>,
    /// The code that late timer interrupt interrupted, innermost first, as
    /// `function+0xoff` names: the interrupt's own frames are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timer_stack: Vec<String>,
}

/// Appends ` key=f1,f2,...` with as many frames as keep `s` within `limit` bytes.
fn push_frames(s: &mut String, key: &str, frames: &[String], limit: usize) {
    let mut out = String::new();
    for f in frames {
        let f = escape(f);
        if s.len() + key.len() + 2 + out.len() + f.len() + 1 > limit {
            break;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&f);
    }
    if !out.is_empty() {
        let _ = write!(s, " {key}={out}");
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '=' => out.push_str("%3D"),
            '\n' => out.push_str("%0A"),
            ',' => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}

fn frames(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|f| !f.is_empty())
        .map(unescape)
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("%20", " ")
        .replace("%3D", "=")
        .replace("%0A", "\n")
        .replace("%2C", ",")
        .replace("%25", "%")
}

impl BreachRecord {
    /// The marker line (without newline).
    pub fn to_marker(&self) -> String {
        let mut s = format!(
            "{BREACH_PREFIX}v=1 tid={} comm={} cpu={} latency_ns={} switch_in_ns={}",
            self.tid,
            escape(&self.comm.to_str_lossy()),
            self.cpu,
            self.latency.0,
            self.switch_in.0
        );
        let mut opt = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                let _ = write!(s, " {k}={v}");
            }
        };
        opt("prio", self.prio.map(|p| p.to_string()));
        opt("threshold_ns", self.threshold.map(|t| t.0.to_string()));
        opt("expiry_ns", self.expiry.map(|t| t.0.to_string()));
        opt("waking_ns", self.waking.map(|t| t.0.to_string()));
        opt("waker_tid", self.waker_tid.map(|t| t.to_string()));
        opt("prev_tid", self.prev_tid.map(|t| t.to_string()));
        opt(
            "prev_comm",
            self.prev_comm.map(|c| escape(&c.to_str_lossy())),
        );
        opt(
            "rt_throttled",
            self.rt_throttled.map(|b| u8::from(b).to_string()),
        );
        opt("detector", self.detector.as_deref().map(escape));
        opt("timer_fired_ns", self.timer_fired.map(|t| t.0.to_string()));
        // The stacks go last, each cut at a frame boundary so the line stays within
        // the 1000 bytes a marker may have; the late timer's leaves room for the
        // switch-in's first frames.
        push_frames(
            &mut s,
            "timer_stack",
            &self.timer_stack,
            MAX_MARKER_LEN - 200,
        );
        push_frames(&mut s, "stack", &self.stack, MAX_MARKER_LEN);
        s
    }

    /// Parses a marker line; `None` when `text` is not a version-1 breach marker or a
    /// required key is missing.
    pub fn parse_marker(text: &str) -> Option<BreachRecord> {
        let rest = text.strip_prefix(BREACH_PREFIX)?;
        let mut r = BreachRecord::default();
        let (mut tid, mut cpu, mut lat, mut sw, mut v1) = (false, false, false, false, false);
        for word in rest.split_whitespace() {
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            let ns = || v.parse::<u64>().ok().map(Nanos);
            match k {
                "v" => v1 = v == "1",
                "tid" => {
                    r.tid = v.parse().ok()?;
                    tid = true;
                }
                "comm" => r.comm = Comm::new(&unescape(v)),
                "cpu" => {
                    r.cpu = v.parse().ok()?;
                    cpu = true;
                }
                "latency_ns" => {
                    r.latency = ns()?;
                    lat = true;
                }
                "switch_in_ns" => {
                    r.switch_in = ns()?;
                    sw = true;
                }
                "prio" => r.prio = v.parse().ok(),
                "threshold_ns" => r.threshold = ns(),
                "expiry_ns" => r.expiry = ns(),
                "waking_ns" => r.waking = ns(),
                "waker_tid" => r.waker_tid = v.parse().ok(),
                "prev_tid" => r.prev_tid = v.parse().ok(),
                "prev_comm" => r.prev_comm = Some(Comm::new(&unescape(v))),
                "rt_throttled" => r.rt_throttled = Some(v == "1"),
                "detector" => r.detector = Some(unescape(v)),
                "stack" => r.stack = frames(v),
                "timer_fired_ns" => r.timer_fired = ns(),
                "timer_stack" => r.timer_stack = frames(v),
                _ => {}
            }
        }
        (v1 && tid && cpu && lat && sw).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_print() {
        let l = CpuList::parse("1-3,5\n").unwrap();
        assert_eq!(l.0, vec![1, 2, 3, 5]);
        assert_eq!(l.to_string(), "1-3,5");
        assert!(CpuList::parse("").unwrap().is_empty());
        assert!(CpuList::parse("3-1").is_none());
        assert!(CpuList::parse("x").is_none());
    }

    #[test]
    fn isolation_comes_from_isolcpus_flags_and_list() {
        let mut f = SystemFacts::default();
        f.set(
            "kernel.cmdline",
            "root=/dev/vda isolcpus=domain,managed_irq,2-3 quiet",
        );
        assert_eq!(f.isolated.0, vec![2, 3]);
        let mut f = SystemFacts::default();
        f.set("kernel.cmdline", "nohz_full=1");
        assert_eq!(f.isolated.0, vec![1]);
        f.set("cpu.isolated", "3");
        assert_eq!(f.isolated.0, vec![3]);
        f.set("kernel.cmdline", "quiet rcu_nocbs=1 rcu_nocbs=2-3 nosmt");
        assert_eq!(f.cmdline_param("rcu_nocbs"), Some("2-3"));
        assert_eq!(f.cmdline_param("nosmt"), Some(""));
        assert_eq!(f.cmdline_param("irqaffinity"), None);
    }

    #[test]
    fn indexed_facts_land_in_their_maps() {
        let mut f = SystemFacts::default();
        f.set("irq.24.name", "virtio1-req.0");
        f.set("irq.24.affinity", "1");
        f.set("irq.24.managed", "1");
        f.set("cpu.1.governor", "schedutil");
        f.set("irq.24.thread_prio", "50");
        f.set("limits.memlock", "unlimited");
        f.set("kernel.hz", "250");
        f.set("something.else", "x");
        assert_eq!(f.irqs[&24].thread_prio, Some(50));
        assert_eq!(f.memlock, Some(None));
        assert_eq!(f.hz, Some(250));
        assert_eq!(f.irqs[&24].name.as_deref(), Some("virtio1-req.0"));
        assert!(f.irqs[&24].managed);
        assert_eq!(f.governors[&1], "schedutil");
        assert_eq!(f.other["something.else"], "x");
    }

    #[test]
    fn breach_markers_round_trip() {
        let r = BreachRecord {
            tid: 42,
            comm: Comm::new("my app"),
            cpu: 1,
            prio: Some(19),
            latency: Nanos(150_000),
            threshold: Some(Nanos(100_000)),
            expiry: Some(Nanos(1_000)),
            waking: Some(Nanos(2_000)),
            switch_in: Nanos(151_000),
            waker_tid: Some(0),
            prev_tid: Some(7),
            prev_comm: Some(Comm::new("kworker/1:0")),
            rt_throttled: Some(true),
            detector: Some("bpf".into()),
            stack: vec!["__schedule+0x3f2".into(), "schedule+0x2c".into()],
            timer_fired: Some(Nanos(120_000)),
            timer_stack: vec![
                "_raw_spin_unlock_irqrestore+0x1d".into(),
                "e1000_watchdog+0x50".into(),
            ],
        };
        let text = r.to_marker();
        assert!(text.ends_with(
            " detector=bpf timer_fired_ns=120000 \
             timer_stack=_raw_spin_unlock_irqrestore+0x1d,e1000_watchdog+0x50 \
             stack=__schedule+0x3f2,schedule+0x2c"
        ));
        let long = BreachRecord {
            stack: vec!["a_rather_long_kernel_function_name+0x123/0x456".into(); 100],
            ..r.clone()
        };
        let text_long = long.to_marker();
        assert!(text_long.len() <= MAX_MARKER_LEN);
        assert!(BreachRecord::parse_marker(&text_long).is_some_and(|p| p.stack.len() > 5));
        let both_long = BreachRecord {
            timer_stack: long.stack.clone(),
            ..long.clone()
        };
        let text_both = both_long.to_marker();
        assert!(text_both.len() <= MAX_MARKER_LEN);
        let parsed = BreachRecord::parse_marker(&text_both);
        assert!(parsed.is_some_and(|p| p.timer_stack.len() > 5 && !p.stack.is_empty()));
        assert!(text.starts_with("rtwhy-breach: v=1 tid=42 comm=my%20app "));
        assert_eq!(BreachRecord::parse_marker(&text), Some(r));
        assert_eq!(BreachRecord::parse_marker("rtwhy-breach: v=2 tid=1"), None);
        assert_eq!(
            BreachRecord::parse_marker("rtwhy-breach: v=1 tid=x cpu=1"),
            None
        );
    }
}
