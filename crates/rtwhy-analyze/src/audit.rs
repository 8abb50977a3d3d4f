//! `rtwhy doctor`'s rules: system facts in, findings out, the way the real-time tuning
//! guides check a machine. Pure: the facts come from the recorder's snapshot of
//! `/proc` and `/sys` (or from a recording's `rtwhy-fact:` markers), so a capture can be
//! audited exactly like the machine it was recorded on.

use rtwhy_model::{AuditFinding, CpuList, Severity, SystemFacts};

/// Every check, in the order they are reported (docs/report.md describes each).
pub const CHECKS: [&str; 13] = [
    "preempt_rt",
    "preempt_model",
    "isolation",
    "irq_affinity",
    "irqbalance",
    "rt_throttling",
    "timer_frequency",
    "cpu_governor",
    "idle_states",
    "thp",
    "numa_balancing",
    "irq_threads",
    "memlock",
];

/// Audits `facts`: one finding per check, in [`CHECKS`] order. A fact that was not
/// recorded gives an `info` finding naming what could not be read.
///
/// ```
/// use rtwhy_model::{Severity, SystemFacts};
///
/// let mut facts = SystemFacts::default();
/// facts.set("sched.rt_runtime_us", "-1");
/// facts.set("sched.rt_period_us", "1000000");
/// let findings = rtwhy_analyze::audit(&facts);
/// let throttling = findings.iter().find(|f| f.check == "rt_throttling").unwrap();
/// assert_eq!(throttling.severity, Severity::Error);
/// ```
pub fn audit(facts: &SystemFacts) -> Vec<AuditFinding> {
    vec![
        preempt_rt(facts),
        preempt_model(facts),
        isolation(facts),
        irq_affinity(facts),
        irqbalance(facts),
        rt_throttling(facts),
        timer_frequency(facts),
        cpu_governor(facts),
        idle_states(facts),
        thp(facts),
        numa_balancing(facts),
        irq_threads(facts),
        memlock(facts),
    ]
}

fn finding(
    check: &str,
    severity: Severity,
    summary: impl Into<String>,
    evidence: Vec<String>,
    fix: Option<String>,
) -> AuditFinding {
    AuditFinding {
        check: check.to_string(),
        severity,
        summary: summary.into(),
        evidence,
        fix,
    }
}

fn unreadable(check: &str, what: &str, sources: &str) -> AuditFinding {
    finding(
        check,
        Severity::Info,
        format!("could not check {what}"),
        vec![format!("not readable: {sources}")],
        None,
    )
}

/// Whether the kernel is PREEMPT_RT, as far as the facts tell (None: they do not).
fn is_preempt_rt(facts: &SystemFacts) -> Option<bool> {
    if facts.realtime == Some(true) || facts.preempt_model() == Some("rt") {
        return Some(true);
    }
    if facts.realtime.is_some() || facts.kernel_version.is_some() {
        return Some(false);
    }
    None
}

fn preempt_rt(facts: &SystemFacts) -> AuditFinding {
    let mut evidence = Vec::new();
    match facts.realtime {
        Some(true) => evidence.push("/sys/kernel/realtime: 1".to_string()),
        Some(false) => evidence.push("/sys/kernel/realtime: absent".to_string()),
        None => {}
    }
    if let Some(v) = &facts.kernel_version {
        evidence.push(format!("uname -v: {v}"));
    }
    match is_preempt_rt(facts) {
        Some(true) => finding(
            "preempt_rt",
            Severity::Ok,
            "PREEMPT_RT kernel: interrupt handlers and softirqs run in preemptible threads",
            evidence,
            None,
        ),
        Some(false) => finding(
            "preempt_rt",
            Severity::Warning,
            "not a PREEMPT_RT kernel: interrupt handlers, softirqs and spinlock sections are not preemptible",
            evidence,
            Some("for worst cases below ~50 us boot a PREEMPT_RT kernel (Debian: linux-image-rt-amd64; mainline since 6.12: CONFIG_PREEMPT_RT=y)".to_string()),
        ),
        None => unreadable(
            "preempt_rt",
            "whether the kernel is PREEMPT_RT",
            "/sys/kernel/realtime, uname -v",
        ),
    }
}

fn preempt_model(facts: &SystemFacts) -> AuditFinding {
    let evidence: Vec<String> = facts
        .preempt_model()
        .map(|m| vec![format!("preemption model: {m}")])
        .unwrap_or_default();
    match facts.preempt_model() {
        Some("rt") | Some("full") => finding(
            "preempt_model",
            Severity::Ok,
            format!(
                "preemption model {}: a woken real-time task preempts kernel code at once",
                facts.preempt_model().unwrap_or_default()
            ),
            evidence,
            None,
        ),
        Some("lazy") => finding(
            "preempt_model",
            Severity::Ok,
            "preemption model lazy: real-time tasks preempt at once, normal tasks at the next tick",
            evidence,
            None,
        ),
        Some(m @ ("none" | "voluntary")) => finding(
            "preempt_model",
            Severity::Warning,
            format!("preemption model {m}: a task in a long kernel path keeps the CPU after a real-time wake-up (hundreds of us to ms)"),
            evidence,
            Some("boot with preempt=full (PREEMPT_DYNAMIC kernels) or use a PREEMPT_RT kernel".to_string()),
        ),
        Some(m) => finding(
            "preempt_model",
            Severity::Info,
            format!("preemption model {m}"),
            evidence,
            None,
        ),
        None => unreadable(
            "preempt_model",
            "the preemption model",
            "/sys/kernel/debug/sched/preempt (root and debugfs), preempt= on the command line",
        ),
    }
}

/// `CPU 1` or `CPUs 2-3`.
fn cpus(list: &CpuList) -> String {
    if list.0.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

/// `is` or `are` for `list`.
fn is_are(list: &CpuList) -> &'static str {
    if list.0.len() == 1 {
        "is"
    } else {
        "are"
    }
}

/// CPUs that are not isolated, of the `facts.cpus` the machine has.
fn housekeeping(facts: &SystemFacts) -> Option<CpuList> {
    let n = facts.cpus?;
    let cpus: Vec<u32> = (0..n).filter(|c| !facts.isolated.contains(*c)).collect();
    (!cpus.is_empty()).then_some(CpuList(cpus))
}

fn isolation(facts: &SystemFacts) -> AuditFinding {
    let Some(cmdline) = &facts.cmdline else {
        return unreadable("isolation", "CPU isolation", "/proc/cmdline");
    };
    let params = [
        "isolcpus",
        "nohz_full",
        "rcu_nocbs",
        "irqaffinity",
        "kthread_cpus",
    ];
    let mut evidence: Vec<String> = params
        .iter()
        .filter_map(|p| facts.cmdline_param(p).map(|v| format!("{p}={v}")))
        .collect();
    if facts.isolated.is_empty() {
        evidence.push(format!("/proc/cmdline: {cmdline}"));
        return finding(
            "isolation",
            Severity::Info,
            "no CPU is isolated: real-time threads share their CPUs with everything else",
            evidence,
            Some("for a dedicated real-time CPU N boot with isolcpus=managed_irq,domain,N nohz_full=N rcu_nocbs=N irqaffinity=<other CPUs> kthread_cpus=<other CPUs>".to_string()),
        );
    }
    let iso = facts.isolated.to_string();
    evidence.insert(
        0,
        format!(
            "isolated {} ({})",
            cpus(&facts.isolated),
            facts.isolated_source.as_deref().unwrap_or("recorded")
        ),
    );
    let hk = housekeeping(facts)
        .map(|l| l.to_string())
        .unwrap_or_else(|| "<housekeeping CPUs>".to_string());
    let missing: Vec<String> = [
        ("nohz_full", iso.clone()),
        ("rcu_nocbs", iso.clone()),
        ("irqaffinity", hk.clone()),
        ("kthread_cpus", hk),
    ]
    .into_iter()
    .filter(|(p, _)| facts.cmdline_param(p).is_none())
    .map(|(p, v)| format!("{p}={v}"))
    .collect();
    if missing.is_empty() {
        finding(
            "isolation",
            Severity::Ok,
            format!(
                "{} {} isolated with nohz_full, rcu_nocbs, irqaffinity and kthread_cpus",
                cpus(&facts.isolated),
                is_are(&facts.isolated)
            ),
            evidence,
            None,
        )
    } else {
        finding(
            "isolation",
            Severity::Warning,
            format!(
                "{} {} isolated, but the command line lacks {}",
                cpus(&facts.isolated),
                is_are(&facts.isolated),
                missing
                    .iter()
                    .map(|m| m.split('=').next().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            evidence,
            Some(format!(
                "add to the kernel command line: {}",
                missing.join(" ")
            )),
        )
    }
}

fn is_per_cpu_irq(name: &str) -> bool {
    name.contains("timer") || name.starts_with("IPI") || name.starts_with("ipi")
}

fn irq_affinity(facts: &SystemFacts) -> AuditFinding {
    if facts.isolated.is_empty() {
        return finding(
            "irq_affinity",
            Severity::Ok,
            "no CPU is isolated, so no IRQ can steal time from one",
            Vec::new(),
            None,
        );
    }
    if facts.irqs.is_empty() {
        return unreadable(
            "irq_affinity",
            "IRQ affinities",
            "/proc/interrupts, /proc/irq/N/smp_affinity_list",
        );
    }
    let hk = housekeeping(facts)
        .map(|l| l.to_string())
        .unwrap_or_else(|| "<housekeeping CPUs>".to_string());
    let mut evidence = Vec::new();
    let mut fixes = Vec::new();
    for (irq, f) in &facts.irqs {
        let name = f.name.as_deref().unwrap_or("?");
        if is_per_cpu_irq(name) {
            continue;
        }
        // The effective affinity is where the IRQ really lands; the mask is where it may.
        let list = f.effective.as_deref().or(f.affinity.as_deref());
        let Some(cpus) = list.and_then(CpuList::parse) else {
            continue;
        };
        let on: Vec<u32> = cpus
            .0
            .iter()
            .copied()
            .filter(|c| facts.isolated.contains(*c))
            .collect();
        if on.is_empty() {
            continue;
        }
        evidence.push(format!(
            "IRQ {irq} ({name}): affinity {}{}{}",
            f.affinity.as_deref().unwrap_or("?"),
            f.effective
                .as_deref()
                .map(|e| format!(", effective {e}"))
                .unwrap_or_default(),
            if f.managed { ", managed" } else { "" }
        ));
        if f.managed {
            fixes.push(format!(
                "IRQ {irq} is managed by the kernel: boot with isolcpus=managed_irq,{}",
                facts.isolated
            ));
        } else {
            fixes.push(format!("echo {hk} > /proc/irq/{irq}/smp_affinity_list"));
        }
    }
    if evidence.is_empty() {
        finding(
            "irq_affinity",
            Severity::Ok,
            format!(
                "no device IRQ may run on the isolated {}",
                cpus(&facts.isolated)
            ),
            Vec::new(),
            None,
        )
    } else {
        finding(
            "irq_affinity",
            Severity::Error,
            format!(
                "{} device IRQ{} may run on the isolated {}",
                evidence.len(),
                if evidence.len() == 1 { "" } else { "s" },
                cpus(&facts.isolated)
            ),
            evidence,
            Some(fixes.join("; ")),
        )
    }
}

fn irqbalance(facts: &SystemFacts) -> AuditFinding {
    match facts.irqbalance {
        Some(true) if !facts.isolated.is_empty() => finding(
            "irqbalance",
            Severity::Warning,
            "irqbalance is running and may move IRQs onto the isolated CPUs",
            vec!["an irqbalance process is running".to_string()],
            Some(format!(
                "set IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance (or stop irqbalance and set affinities yourself)",
                facts.isolated
            )),
        ),
        Some(true) => finding(
            "irqbalance",
            Severity::Info,
            "irqbalance is running: IRQ affinities change at run time",
            vec!["an irqbalance process is running".to_string()],
            None,
        ),
        Some(false) => finding(
            "irqbalance",
            Severity::Ok,
            "irqbalance is not running: IRQ affinities stay where they are set",
            Vec::new(),
            None,
        ),
        None => unreadable("irqbalance", "whether irqbalance runs", "/proc/PID/comm"),
    }
}

fn rt_throttling(facts: &SystemFacts) -> AuditFinding {
    let (Some(runtime), Some(period)) = (facts.rt_runtime_us, facts.rt_period_us) else {
        return unreadable(
            "rt_throttling",
            "RT throttling",
            "/proc/sys/kernel/sched_rt_runtime_us, sched_rt_period_us",
        );
    };
    let evidence = vec![
        format!("sched_rt_runtime_us: {runtime}"),
        format!("sched_rt_period_us: {period}"),
    ];
    if runtime < 0 {
        return finding(
            "rt_throttling",
            Severity::Error,
            "RT throttling is disabled: a SCHED_FIFO task that never sleeps hangs its CPU (kernel threads, RCU and watchdogs starve)",
            evidence,
            Some("echo 950000 > /proc/sys/kernel/sched_rt_runtime_us, and run stalld if busy real-time loops are intended".to_string()),
        );
    }
    let share = runtime as f64 * 100.0 / period.max(1) as f64;
    if share < 90.0 {
        finding(
            "rt_throttling",
            Severity::Warning,
            format!("real-time tasks may use only {share:.0}% of each period: they are throttled for {} us every {} us", period - runtime, period),
            evidence,
            Some("echo 950000 > /proc/sys/kernel/sched_rt_runtime_us (the default, with sched_rt_period_us 1000000)".to_string()),
        )
    } else {
        finding(
            "rt_throttling",
            Severity::Ok,
            format!("RT throttling guards against runaway real-time tasks ({share:.0}% of each {period} us period)"),
            evidence,
            None,
        )
    }
}

fn timer_frequency(facts: &SystemFacts) -> AuditFinding {
    let Some(hz) = facts.hz else {
        return unreadable(
            "timer_frequency",
            "the timer frequency",
            "/boot/config-RELEASE, /proc/config.gz",
        );
    };
    let evidence = vec![format!("CONFIG_HZ={hz}")];
    if hz < 250 {
        finding(
            "timer_frequency",
            Severity::Warning,
            format!("HZ={hz}: the scheduler tick and timer-wheel timeouts have {} ms granularity", 1000 / hz.max(1)),
            evidence,
            Some("use a kernel built with CONFIG_HZ_1000 (or 250) when tick-based timeouts matter; hrtimer sleeps (clock_nanosleep) are not affected".to_string()),
        )
    } else {
        finding(
            "timer_frequency",
            Severity::Ok,
            format!("HZ={hz}; real-time sleeps use hrtimers and do not depend on it"),
            evidence,
            None,
        )
    }
}

/// The CPUs whose settings matter: the isolated ones, or all.
fn rt_cpus<'a, T>(
    facts: &SystemFacts,
    map: &'a std::collections::BTreeMap<u32, T>,
) -> Vec<(u32, &'a T)> {
    map.iter()
        .filter(|(c, _)| facts.isolated.is_empty() || facts.isolated.contains(**c))
        .map(|(c, v)| (*c, v))
        .collect()
}

fn cpu_governor(facts: &SystemFacts) -> AuditFinding {
    if facts.governors.is_empty() {
        return finding(
            "cpu_governor",
            Severity::Info,
            "no cpufreq governor: the clock is fixed or managed by the platform (a VM, or cpufreq disabled)",
            vec!["no /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor".to_string()],
            None,
        );
    }
    let slow: Vec<String> = rt_cpus(facts, &facts.governors)
        .into_iter()
        .filter(|(_, g)| g.as_str() != "performance")
        .map(|(c, g)| format!("CPU {c}: {g}"))
        .collect();
    if slow.is_empty() {
        finding(
            "cpu_governor",
            Severity::Ok,
            "the performance governor keeps the real-time CPUs at full clock",
            Vec::new(),
            None,
        )
    } else {
        finding(
            "cpu_governor",
            Severity::Warning,
            "the cpufreq governor lowers the clock of real-time CPUs between bursts of work",
            slow,
            Some("cpupower frequency-set -g performance (or echo performance > /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor)".to_string()),
        )
    }
}

/// Exit latencies above this keep a woken CPU from running its task promptly.
const DEEP_IDLE_US: u64 = 10;

fn idle_states(facts: &SystemFacts) -> AuditFinding {
    if facts.idle_states.is_empty() {
        return finding(
            "idle_states",
            Severity::Info,
            "no cpuidle states recorded: the CPUs idle with the architecture's default instruction (halt on x86, WFI on arm64)",
            vec!["no /sys/devices/system/cpu/cpuN/cpuidle/state*".to_string()],
            None,
        );
    }
    let mut deep = Vec::new();
    for (cpu, states) in rt_cpus(facts, &facts.idle_states) {
        for s in states.split(',') {
            let Some((name, lat)) = s.rsplit_once(':') else {
                continue;
            };
            if lat.parse::<u64>().is_ok_and(|l| l > DEEP_IDLE_US) {
                deep.push(format!("CPU {cpu}: {name} exits in {lat} us"));
            }
        }
    }
    if deep.is_empty() {
        finding(
            "idle_states",
            Severity::Ok,
            format!("no idle state takes more than {DEEP_IDLE_US} us to exit"),
            Vec::new(),
            None,
        )
    } else {
        finding(
            "idle_states",
            Severity::Warning,
            "deep idle states add their exit latency to a wake-up",
            deep,
            Some("hold /dev/cpu_dma_latency open with 0 while the real-time work runs, or disable deep states: echo 1 > /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable".to_string()),
        )
    }
}

fn thp(facts: &SystemFacts) -> AuditFinding {
    match facts.thp.as_deref() {
        Some("always") => finding(
            "thp",
            Severity::Warning,
            "transparent huge pages are always on: page faults may compact memory and khugepaged collapses pages in the background",
            vec!["/sys/kernel/mm/transparent_hugepage/enabled: always".to_string()],
            Some("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (or transparent_hugepage=madvise on the command line)".to_string()),
        ),
        Some(mode) => finding(
            "thp",
            Severity::Ok,
            format!("transparent huge pages: {mode}"),
            vec![format!("/sys/kernel/mm/transparent_hugepage/enabled: {mode}")],
            None,
        ),
        None => unreadable(
            "thp",
            "transparent huge pages",
            "/sys/kernel/mm/transparent_hugepage/enabled",
        ),
    }
}

fn numa_balancing(facts: &SystemFacts) -> AuditFinding {
    match facts.numa_balancing {
        Some(v) if v != 0 => finding(
            "numa_balancing",
            Severity::Warning,
            "automatic NUMA balancing unmaps pages to sample accesses: real-time threads take page faults",
            vec![format!("/proc/sys/kernel/numa_balancing: {v}")],
            Some("echo 0 > /proc/sys/kernel/numa_balancing (or numa_balancing=disable on the command line)".to_string()),
        ),
        Some(_) => finding(
            "numa_balancing",
            Severity::Ok,
            "automatic NUMA balancing is off",
            vec!["/proc/sys/kernel/numa_balancing: 0".to_string()],
            None,
        ),
        None => finding(
            "numa_balancing",
            Severity::Ok,
            "no automatic NUMA balancing (not built into this kernel)",
            vec!["no /proc/sys/kernel/numa_balancing".to_string()],
            None,
        ),
    }
}

fn irq_threads(facts: &SystemFacts) -> AuditFinding {
    let threads: Vec<(i32, &str, i32)> = facts
        .irqs
        .iter()
        .filter_map(|(irq, f)| Some((*irq, f.name.as_deref().unwrap_or("?"), f.thread_prio?)))
        .collect();
    if is_preempt_rt(facts) != Some(true) {
        return finding(
            "irq_threads",
            Severity::Ok,
            "not PREEMPT_RT: IRQ handlers run in interrupt context (threads only with threadirqs)",
            threads
                .iter()
                .map(|(irq, name, p)| format!("irq/{irq}-{name}: FIFO {p}"))
                .collect(),
            None,
        );
    }
    if threads.is_empty() {
        return unreadable(
            "irq_threads",
            "IRQ thread priorities",
            "/proc/PID/stat of irq/N-* threads",
        );
    }
    let not_rt: Vec<String> = threads
        .iter()
        .filter(|(_, _, p)| *p == 0)
        .map(|(irq, name, _)| format!("irq/{irq}-{name}: SCHED_OTHER"))
        .collect();
    let mut evidence: Vec<String> = threads
        .iter()
        .filter(|(_, _, p)| *p > 0)
        .map(|(irq, name, p)| format!("irq/{irq}-{name}: FIFO {p}"))
        .collect();
    if not_rt.is_empty() {
        finding(
            "irq_threads",
            Severity::Ok,
            "IRQ threads run at real-time priority: give your real-time threads a priority above those of IRQs they do not depend on",
            evidence,
            None,
        )
    } else {
        evidence.splice(0..0, not_rt);
        finding(
            "irq_threads",
            Severity::Warning,
            "some IRQ threads are not real-time: their device's interrupts wait behind every normal task",
            evidence,
            Some("chrt -f -p 50 <pid of irq/N-name> for the IRQs your real-time work depends on".to_string()),
        )
    }
}

/// A locked-memory limit below this cannot hold a typical real-time process.
const MEMLOCK_ENOUGH: u64 = 64 << 20;

fn memlock(facts: &SystemFacts) -> AuditFinding {
    match facts.memlock {
        Some(None) => finding(
            "memlock",
            Severity::Ok,
            "locked memory is unlimited: mlockall() can keep a real-time process resident",
            vec!["RLIMIT_MEMLOCK: unlimited".to_string()],
            None,
        ),
        Some(Some(bytes)) if bytes >= MEMLOCK_ENOUGH => finding(
            "memlock",
            Severity::Ok,
            format!("locked memory limit {} MiB", bytes >> 20),
            vec![format!("RLIMIT_MEMLOCK: {bytes} bytes")],
            None,
        ),
        Some(Some(bytes)) => finding(
            "memlock",
            Severity::Warning,
            format!("locked memory is limited to {} KiB: mlockall() fails for an unprivileged real-time process, which then takes page faults", bytes >> 10),
            vec![format!("RLIMIT_MEMLOCK: {bytes} bytes (root's CAP_IPC_LOCK is not limited)")],
            Some("raise it for the real-time user: `@realtime - memlock unlimited` in /etc/security/limits.conf, or LimitMEMLOCK=infinity in the systemd unit".to_string()),
        ),
        None => unreadable("memlock", "the locked-memory limit", "/proc/self/limits"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pairs: &[(&str, &str)]) -> SystemFacts {
        let mut f = SystemFacts::default();
        for (k, v) in pairs {
            f.set(k, v);
        }
        f
    }

    fn severity(findings: &[AuditFinding], check: &str) -> Severity {
        findings
            .iter()
            .find(|f| f.check == check)
            .map(|f| f.severity)
            .unwrap()
    }

    #[test]
    fn every_check_reports_once_in_order() {
        let findings = audit(&SystemFacts::default());
        let names: Vec<&str> = findings.iter().map(|f| f.check.as_str()).collect();
        assert_eq!(names, CHECKS);
        // Nothing known: nothing is claimed to be wrong.
        assert!(findings.iter().all(|f| f.severity <= Severity::Info));
    }

    #[test]
    fn managed_and_unmanaged_irqs_on_isolated_cpus_get_their_own_fix() {
        let f = facts(&[
            ("cpu.count", "4"),
            ("kernel.cmdline", "isolcpus=2-3"),
            ("irq.30.name", "eth0"),
            ("irq.30.affinity", "0-3"),
            ("irq.31.name", "nvme0q3"),
            ("irq.31.affinity", "3"),
            ("irq.31.managed", "1"),
            ("irq.32.name", "ahci"),
            ("irq.32.affinity", "0-1"),
            ("irq.33.name", "arch_timer"),
            ("irq.33.affinity", "0-3"),
        ]);
        let a = irq_affinity(&f);
        assert_eq!(a.severity, Severity::Error);
        assert_eq!(a.evidence.len(), 2, "{:?}", a.evidence);
        let fix = a.fix.unwrap();
        assert!(
            fix.contains("echo 0-1 > /proc/irq/30/smp_affinity_list"),
            "{fix}"
        );
        assert!(fix.contains("isolcpus=managed_irq,2-3"), "{fix}");
        let iso = isolation(&f);
        assert_eq!(iso.severity, Severity::Warning);
        assert_eq!(
            iso.fix.as_deref(),
            Some("add to the kernel command line: nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 kthread_cpus=0-1")
        );
    }

    #[test]
    fn idle_states_and_governors_are_judged_on_isolated_cpus_only() {
        let f = facts(&[
            ("cpu.count", "2"),
            ("cpu.isolated", "1"),
            ("cpu.0.governor", "powersave"),
            ("cpu.1.governor", "performance"),
            ("cpu.0.idle_states", "POLL:0,C6:133"),
            ("cpu.1.idle_states", "POLL:0,C1:2"),
        ]);
        let all = audit(&f);
        assert_eq!(severity(&all, "cpu_governor"), Severity::Ok);
        assert_eq!(severity(&all, "idle_states"), Severity::Ok);
        let f = facts(&[
            ("cpu.0.governor", "powersave"),
            ("cpu.0.idle_states", "POLL:0,C6:133"),
        ]);
        let all = audit(&f);
        assert_eq!(severity(&all, "cpu_governor"), Severity::Warning);
        assert_eq!(severity(&all, "idle_states"), Severity::Warning);
    }
}
