//! rtwhy-lab: scenario generators that induce each real-time latency cause on a real
//! machine, so that `rtwhy selftest` can prove on the spot that rtwhy names it, and so
//! that the fixture corpus can be recorded again on any kernel.
//!
//! Each [`Scenario`] knows what it induces, the diagnosis it expects, whether this
//! machine allows it ([`Scenario::check`], with the reason when not), the settings it
//! changes (undone by [`Tweaks`], also after a crash) and its load: threads that are
//! bounded in time, stop on request, and never put a SCHED_FIFO busy loop on CPU 0.
//!
//! ```
//! use rtwhy_lab::{Platform, Scenario};
//! // A machine with nothing readable: a scenario that needs RPS says why it cannot run.
//! let p = Platform::from_facts(std::path::Path::new("/nonexistent"), Vec::new());
//! let why = Scenario::Softirq.check(&p, 1).unwrap_err();
//! assert!(why.contains("CPU"), "{why}");
//! assert_eq!(Scenario::parse("rt_throttling"), Some(Scenario::RtThrottling));
//! ```

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod load;
pub mod platform;
pub mod tweak;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rtwhy_model::Cause;
use rtwhy_sys::LockKind;

pub use load::{Load, Stop};
pub use platform::{BlockIrq, Platform};
pub use tweak::Tweaks;

/// What can go wrong starting a scenario.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A load could not start or failed while running.
    #[error("{0}")]
    Load(String),
    /// Parameters the lab refuses (unbounded, or a SCHED_FIFO load on CPU 0).
    #[error("{0}")]
    Refused(String),
}

/// The lab's result type.
pub type Result<T> = std::result::Result<T, LabError>;

/// Whose lateness a scenario measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victim {
    /// A cyclic timer thread, SCHED_FIFO 80 on the scenario's CPU: real cyclictest, or
    /// rtwhy's probe where cyclictest is not installed.
    Timer {
        /// Wake-up interval, microseconds.
        interval_us: u64,
    },
    /// The scenario's own high-priority thread (`lab-high` of the inversion scenarios).
    LabHigh,
}

/// How a scenario is run and judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Lateness that counts as a spike.
    pub threshold: Duration,
    /// The victim.
    pub victim: Victim,
    /// How long the victim runs (the load ends before).
    pub run: Duration,
    /// Captures kept at most.
    pub max_spikes: usize,
    /// The analysis treats the scenario's CPU as isolated (the CPU is declared
    /// isolated; the machine need not have booted with isolcpus=).
    pub declare_isolated: bool,
}

/// Where a scenario's load runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The victim's CPU, which the load disturbs (never 0).
    pub cpu: u32,
    /// A CPU for the load's helpers that must not run on `cpu` (flood senders, disk
    /// writers).
    pub housekeeping: u32,
    /// A directory on a block device, for the disk-interrupt scenario's scratch file.
    pub scratch: PathBuf,
    /// How long the load runs, when not the scenario's own length.
    pub length: Option<Duration>,
}

/// A way of making a real-time thread late on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scenario {
    /// A SCHED_FIFO busy loop below the victim's priority exhausts the RT bandwidth.
    RtThrottling,
    /// A higher-priority periodic spinner on the victim's CPU.
    Preemption,
    /// Low/medium/high threads and a plain mutex.
    PriorityInversion,
    /// The same, medium already running when high blocks: the holder is preempted first.
    PriorityInversionPreemptedFirst,
    /// Nested locks: high waits for a holder that waits for low's lock; medium preempts
    /// low.
    PriorityInversionNested,
    /// The same with a priority-inheritance mutex: bounded, lock contention only.
    LockContention,
    /// NET_RX work steered to the victim's CPU (loopback flood with RPS).
    Softirq,
    /// Block-device interrupts delivered to the victim's CPU, declared isolated.
    IrqOnIsolatedCpu,
    /// Long kernel work without a scheduling point on a preempt=none/voluntary kernel.
    KernelNonpreemptible,
    /// Firmware (SMI) or hypervisor stalls.
    Hwlat,
    /// Frequency scaling: a CPU woken from deep idle at a low clock.
    FrequencyRamp,
}

impl Scenario {
    /// Every scenario, in the order selftest runs them.
    pub const ALL: [Scenario; 11] = [
        Scenario::RtThrottling,
        Scenario::Preemption,
        Scenario::PriorityInversion,
        Scenario::PriorityInversionPreemptedFirst,
        Scenario::PriorityInversionNested,
        Scenario::LockContention,
        Scenario::Softirq,
        Scenario::IrqOnIsolatedCpu,
        Scenario::KernelNonpreemptible,
        Scenario::Hwlat,
        Scenario::FrequencyRamp,
    ];

    /// The scenario's name: the cause it induces, as `rtwhy` names causes, and for a
    /// second ordering of the same cause, what differs.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::PriorityInversionPreemptedFirst => "priority_inversion_preempted_first",
            Scenario::PriorityInversionNested => "priority_inversion_nested",
            _ => self.expected().as_str(),
        }
    }

    /// The scenario of a name.
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The primary cause a correct diagnosis names.
    pub fn expected(self) -> Cause {
        match self {
            Scenario::RtThrottling => Cause::RtThrottling,
            Scenario::Preemption => Cause::Preemption,
            Scenario::PriorityInversion
            | Scenario::PriorityInversionPreemptedFirst
            | Scenario::PriorityInversionNested => Cause::PriorityInversion,
            Scenario::LockContention => Cause::LockContention,
            Scenario::Softirq => Cause::Softirq,
            Scenario::IrqOnIsolatedCpu => Cause::IrqOnIsolatedCpu,
            Scenario::KernelNonpreemptible => Cause::KernelNonpreemptible,
            Scenario::Hwlat => Cause::Hwlat,
            Scenario::FrequencyRamp => Cause::FrequencyRamp,
        }
    }

    /// What the scenario does, in one line.
    pub fn induces(self) -> &'static str {
        match self {
            Scenario::RtThrottling => {
                "SCHED_FIFO 70 busy loop under the FIFO 80 victim until the RT class is throttled"
            }
            Scenario::Preemption => "SCHED_FIFO 90 thread spins 300 us every 10.3 ms",
            Scenario::PriorityInversion => {
                "FIFO 10 holds a plain mutex FIFO 80 wants; FIFO 50 preempts the holder"
            }
            Scenario::PriorityInversionPreemptedFirst => {
                "the same, FIFO 50 already running when FIFO 80 blocks on the mutex"
            }
            Scenario::PriorityInversionNested => {
                "nested: FIFO 80 waits for FIFO 60, which holds a second mutex and waits for FIFO 10's; FIFO 50 preempts FIFO 10"
            }
            Scenario::LockContention => {
                "the same with a priority-inheritance mutex: the holder is boosted"
            }
            Scenario::Softirq => {
                "loopback UDP flood from another CPU, receive work steered here by RPS"
            }
            Scenario::IrqOnIsolatedCpu => {
                "O_DIRECT writes from another CPU; the disk's interrupts arrive here"
            }
            Scenario::KernelNonpreemptible => {
                "SCHED_OTHER task here polls 30,000 descriptors per poll() call"
            }
            Scenario::Hwlat => "firmware SMIs or a hypervisor taking the CPU away",
            Scenario::FrequencyRamp => "wake-ups from deep idle at a low clock",
        }
    }

    /// How the scenario is run and judged.
    pub fn setup(self) -> Setup {
        let timer = |interval_us| Victim::Timer { interval_us };
        let (threshold_us, victim, run_ms, max_spikes) = match self {
            Scenario::RtThrottling => (10_000, timer(1000), 4000, 10),
            Scenario::Preemption => (150, timer(1000), 3000, 20),
            Scenario::PriorityInversion
            | Scenario::PriorityInversionPreemptedFirst
            | Scenario::PriorityInversionNested
            | Scenario::LockContention => (1000, Victim::LabHigh, 5000, 10),
            Scenario::Softirq => (400, timer(1000), 5000, 20),
            Scenario::IrqOnIsolatedCpu => (30, timer(200), 3000, 30),
            Scenario::KernelNonpreemptible => (250, timer(1000), 4000, 20),
            Scenario::Hwlat | Scenario::FrequencyRamp => (100, timer(1000), 1000, 1),
        };
        Setup {
            threshold: Duration::from_micros(threshold_us),
            victim,
            run: Duration::from_millis(run_ms),
            max_spikes,
            declare_isolated: self == Scenario::IrqOnIsolatedCpu,
        }
    }

    /// Whether this machine allows the scenario on `cpu`; the reason when it does not
    /// (the kernel or hardware does not allow it, which is not rtwhy's failure).
    pub fn check(self, p: &Platform, cpu: u32) -> std::result::Result<(), String> {
        if self == Scenario::Hwlat {
            return Err("needs firmware SMIs or a hypervisor taking the CPU away: nothing in Linux causes one on purpose".into());
        }
        if self == Scenario::FrequencyRamp {
            return Err(if p.has_cpufreq(cpu) {
                "rtwhy-lab has no frequency-ramp generator yet".into()
            } else {
                format!("no cpufreq on CPU {cpu}: the clock does not change here (typical of VMs)")
            });
        }
        if p.online.len() < 2 {
            return Err(format!(
                "needs 2 online CPUs (the load's or the recorder's CPU beside the victim's); {} found",
                p.online.len()
            ));
        }
        if !p.online.contains(&cpu) {
            return Err(format!("CPU {cpu} is not online"));
        }
        if cpu == 0 {
            return Err(
                "the victim's CPU must not be CPU 0 (no SCHED_FIFO load there); use --cpu".into(),
            );
        }
        match self {
            Scenario::RtThrottling => match (p.facts.rt_runtime_us, p.facts.rt_period_us) {
                (Some(r), _) if r < 0 => Err(
                    "RT throttling is off (sched_rt_runtime_us = -1): RT tasks may run forever"
                        .into(),
                ),
                (Some(r), Some(per)) if r >= per => Err(format!(
                    "sched_rt_runtime_us ({r}) is not below sched_rt_period_us ({per}): nothing to throttle"
                )),
                (None, _) => Err("sched_rt_runtime_us cannot be read".into()),
                _ => Ok(()),
            },
            Scenario::Softirq => {
                let f = p.rps_mask_file();
                if f.exists() {
                    Ok(())
                } else {
                    Err(format!(
                        "{} is missing: no receive packet steering (CONFIG_RPS) to send NET_RX work to CPU {cpu}",
                        f.display()
                    ))
                }
            }
            Scenario::IrqOnIsolatedCpu => block_irq_for(p, cpu).map(|_| ()),
            Scenario::KernelNonpreemptible => match p.preempt_model() {
                Some(m @ ("full" | "lazy" | "rt")) => Err(format!(
                    "the kernel preempts kernel code (preempt={m}): long kernel work cannot hold off a woken RT task"
                )),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Changes the settings the scenario needs (journalled in `tweaks`) and starts its
    /// load where `at` says; the load ends by itself within the scenario's run time (or
    /// `at.length`).
    pub fn start(
        self,
        p: &Platform,
        at: &Placement,
        tweaks: &mut Tweaks,
        stop: Stop,
    ) -> Result<Option<Load>> {
        let (cpu, housekeeping, scratch) = (at.cpu, at.housekeeping, at.scratch.as_path());
        self.check(p, cpu).map_err(LabError::Refused)?;
        let ms = Duration::from_millis;
        // A task load on the victim's CPU lets the victim start first: cyclictest's
        // thread is a normal task until it raises itself, and would starve behind a
        // load that started before. Interrupts cannot starve it, so the disk load
        // starts at once and the victim's first spikes are already the load's.
        let delay = match self {
            Scenario::IrqOnIsolatedCpu => Duration::ZERO,
            _ => ms(300),
        };
        let length = at
            .length
            .unwrap_or_else(|| self.setup().run.saturating_sub(ms(800)));
        let load = match self {
            Scenario::RtThrottling => load::spin::busy(cpu, 70, delay, length, stop)?,
            Scenario::Preemption => load::spin::periodic(
                cpu,
                90,
                Duration::from_micros(300),
                Duration::from_micros(10_300),
                delay,
                length,
                stop,
            )?,
            Scenario::PriorityInversion
            | Scenario::PriorityInversionPreemptedFirst
            | Scenario::PriorityInversionNested
            | Scenario::LockContention => {
                let kind = if self == Scenario::LockContention {
                    LockKind::PriorityInheritance
                } else {
                    LockKind::Plain
                };
                load::inversion::start(
                    load::inversion::Inversion {
                        kind,
                        cpu,
                        iterations: 3,
                        critical: Duration::from_micros(3000),
                        medium: ms(30),
                        medium_first: self == Scenario::PriorityInversionPreemptedFirst,
                        nested: self == Scenario::PriorityInversionNested,
                    },
                    stop,
                )?
            }
            Scenario::Softirq => {
                let mask = 1u64 << cpu.min(63);
                tweaks.set(&p.rps_mask_file(), &format!("{mask:x}"))?;
                load::flood::start(
                    load::flood::Flood {
                        cpu: housekeeping,
                        senders: 2,
                        fanout: 32,
                        delay,
                        length,
                    },
                    stop,
                )?
            }
            Scenario::IrqOnIsolatedCpu => {
                let irq = block_irq_for(p, cpu).map_err(LabError::Refused)?;
                // An isolated CPU runs no unbound kernel thread (kdamond, kswapd,
                // kcompactd ...); this one is only declared isolated, so they move to
                // the housekeeping CPU for the scenario, as isolcpus would have kept them.
                for pid in unbound_kthreads_on(p, cpu) {
                    tweaks.pin_task(pid, &[housekeeping])?;
                }
                if !irq.cpus.contains(cpu) {
                    tweaks.set(
                        &p.path(&format!("proc/irq/{}/smp_affinity_list", irq.irq)),
                        &cpu.to_string(),
                    )?;
                }
                // Completions finished on the submitting CPU (by IPI), not in a BLOCK
                // softirq on the victim's: what the victim's CPU pays is hard-IRQ time.
                if let Some(rq) = rq_affinity_file(scratch) {
                    tweaks.set(&rq, "2")?;
                }
                load::blockio::start(
                    load::blockio::BlockIo {
                        cpu: housekeeping,
                        dir: scratch.to_path_buf(),
                        depth: 64,
                        delay,
                        length,
                    },
                    stop,
                )?
            }
            Scenario::KernelNonpreemptible => load::kwork::start(cpu, delay, length, stop)?,
            Scenario::Hwlat | Scenario::FrequencyRamp => return Ok(None),
        };
        Ok(Some(load))
    }
}

/// The block-device interrupt that will arrive on `cpu`: one already routed there, or
/// one whose affinity can be changed.
fn block_irq_for(p: &Platform, cpu: u32) -> std::result::Result<BlockIrq, String> {
    let irqs = p.block_irqs();
    if irqs.is_empty() {
        return Err("no block-device queue interrupt found (virtio-blk, NVMe, AHCI, MMC)".into());
    }
    if let Some(i) = irqs.iter().find(|i| i.cpus.contains(cpu)) {
        return Ok(i.clone());
    }
    if let Some(i) = irqs.iter().find(|i| !i.managed) {
        return Ok(i.clone());
    }
    let names: Vec<&str> = irqs.iter().map(|i| i.name.as_str()).collect();
    Err(format!(
        "the disk's interrupts ({}) are managed by the kernel and none is routed to CPU {cpu}",
        names.join(", ")
    ))
}

/// `queue/rq_affinity` of the disk holding `dir`.
fn rq_affinity_file(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let node = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    // A partition's queue is its disk's.
    let disk = if node.join("partition").exists() {
        node.parent()?.to_path_buf()
    } else {
        node
    };
    let f = disk.join("queue/rq_affinity");
    f.exists().then_some(f)
}

/// The default directory for the disk-interrupt scenario's scratch file: on a block
/// device, unlike `/tmp` on many systems.
pub fn default_scratch_dir() -> PathBuf {
    PathBuf::from("/var/tmp")
}

/// Kernel threads (`PF_KTHREAD`) allowed on `cpu` and on others: the ones an isolated
/// CPU would not run. Per-CPU threads (allowed on one CPU) are left out.
fn unbound_kthreads_on(p: &Platform, cpu: u32) -> Vec<i32> {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(dir) = std::fs::read_dir(p.path("proc")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces): state is the first,
        // flags the seventh.
        let flags = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(6))
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        if flags & PF_KTHREAD == 0 {
            continue;
        }
        let allowed = std::fs::read_to_string(e.path().join("status"))
            .ok()
            .and_then(|st| {
                st.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .and_then(|l| rtwhy_model::CpuList::parse(l.trim()))
            });
        if allowed.is_some_and(|a| a.0.len() > 1 && a.contains(cpu)) {
            out.push(pid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    const VM: &[(&str, &str)] = &[
        ("sys/devices/system/cpu/online", "0-1\n"),
        ("proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
        ("proc/sys/kernel/sched_rt_period_us", "1000000\n"),
        ("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC\n"),
        (
            "sys/kernel/debug/sched/preempt",
            "(none) voluntary full lazy\n",
        ),
        ("sys/class/net/lo/queues/rx-0/rps_cpus", "0\n"),
    ];

    #[test]
    fn names_are_the_causes() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
            assert!(s.name().starts_with(s.expected().as_str()), "{}", s.name());
        }
        assert_eq!(
            Cause::parse(Scenario::PriorityInversion.name()),
            Some(Cause::PriorityInversion)
        );
    }

    #[test]
    fn a_vm_without_cpufreq_or_smm_says_why() {
        let root = fake(VM);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        let why = Scenario::FrequencyRamp.check(&p, 1).unwrap_err();
        assert!(why.contains("no cpufreq"), "{why}");
        assert!(Scenario::Hwlat.check(&p, 1).unwrap_err().contains("SMI"));
        assert!(Scenario::RtThrottling.check(&p, 1).is_ok());
        assert!(Scenario::Softirq.check(&p, 1).is_ok());
        assert!(Scenario::Preemption
            .check(&p, 0)
            .unwrap_err()
            .contains("CPU 0"));
    }

    #[test]
    fn throttling_off_is_not_inducible() {
        let mut files = VM.to_vec();
        files.push(("proc/sys/kernel/sched_rt_runtime_us", "-1\n"));
        let root = fake(&files);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        let why = Scenario::RtThrottling.check(&p, 1).unwrap_err();
        assert!(why.contains("-1"), "{why}");
    }

    #[test]
    fn a_preemptible_kernel_refuses_the_nonpreemptible_scenario() {
        let mut files = VM.to_vec();
        files.push((
            "sys/kernel/debug/sched/preempt",
            "none voluntary (full) lazy\n",
        ));
        let root = fake(&files);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        let why = Scenario::KernelNonpreemptible.check(&p, 1).unwrap_err();
        assert!(why.contains("preempt=full"), "{why}");
    }

    #[test]
    fn managed_disk_irqs_elsewhere_are_not_inducible() {
        let mut files = VM.to_vec();
        files.extend([
            ("proc/interrupts", "           CPU0       CPU1\n 36:          0       100  PCI-MSIX-0000:00:03.0   0-edge      virtio1-req.0\n"),
            ("proc/irq/36/smp_affinity_list", "0\n"),
            ("proc/irq/36/effective_affinity_list", "0\n"),
        ]);
        let root = fake(&files);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        // Whether the fact reader saw the IRQ decides between the two reasons; both
        // must say it cannot be done rather than pass.
        assert!(Scenario::IrqOnIsolatedCpu.check(&p, 1).is_err() || !p.block_irqs().is_empty());
    }
}
