//! rtwhy-lab: scenario generators that induce each real-time latency cause on a real
//! machine, so that `rtwhy selftest` can prove on the spot that rtwhy names it, and so
//! that the fixture corpus can be recorded again on any kernel.
//!
//! Each [`Scenario`] knows what it induces, the diagnosis it expects, whether this
//! machine allows it ([`Scenario::check`], with the reason when not), the settings it
//! changes (undone by [`Tweaks`], also after a crash) and its load: threads that are
//! bounded in time, stop on request, and never put a SCHED_FIFO busy loop on CPU 0.
//!
//! How the selftest judges what a scenario made is here too: [`judge`] (the victim's
//! spikes against the expected cause), [`noise`] (the CPU's own wake-up latency the
//! loads are sized above) and [`irq_work`] (whether a device's interrupts can stand out
//! of that noise at all).
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

pub mod irq_work;
pub mod judge;
pub mod load;
pub mod noise;
pub mod platform;
mod scenarios;
pub mod tweak;

use std::path::PathBuf;
use std::time::Duration;

use rtwhy_model::Cause;

pub use load::{Load, Stop};
pub use platform::{DeviceIrq, IrqDevice, Platform};
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
    /// A cyclic timer thread, SCHED_FIFO 80 ([`Scenario::victim_prio`]) on the scenario's CPU: real cyclictest, or
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
    /// The victim CPU's own wake-up latency with nothing loaded (99th percentile; zero
    /// when not measured): loads that can be sized grow above it (see
    /// [`Scenario::setup_for`]).
    pub noise: Duration,
    /// A TCP server on another machine that sends continuously, reached through the
    /// card whose receive interrupt `softirq` moves to `cpu`: its stream is that
    /// scenario's load where one is given (see [`load::stream`]).
    pub stream_from: Option<std::net::SocketAddr>,
    /// The lock scenarios' holder (`lab-low`) is a normal task (SCHED_OTHER, nice 0)
    /// instead of FIFO 10: with priority inheritance the kernel boosts a normal task.
    pub normal_holder: bool,
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
        let r = scenarios::recipe(self);
        r.name().unwrap_or_else(|| r.expected().as_str())
    }

    /// The scenario of a name.
    pub fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The primary cause a correct diagnosis names.
    pub fn expected(self) -> Cause {
        scenarios::recipe(self).expected()
    }

    /// What the scenario does, in one line.
    pub fn induces(self) -> &'static str {
        scenarios::recipe(self).induces()
    }

    /// How the scenario is run and judged.
    pub fn setup(self) -> Setup {
        scenarios::recipe(self).setup()
    }

    /// How the scenario is run and judged on a CPU whose own wake-up latency (p99,
    /// nothing loaded) is `noise`: the threshold of a scenario whose load can be sized
    /// sits above the noise, its load above the threshold, so the machine's own stalls
    /// are not taken for the load's spikes (a TCG guest wakes milliseconds late by
    /// itself). Scenarios whose load has no size keep [`Scenario::setup`].
    pub fn setup_for(self, p: &Platform, cpu: u32, noise: Duration) -> Setup {
        scenarios::recipe(self).setup_for(p, cpu, noise)
    }

    /// SCHED_FIFO priority of the scenario's timer victim on `cpu` of `p` (80 unless the
    /// scenario needs it below an IRQ thread).
    pub fn victim_prio(self, p: &Platform, cpu: u32) -> i32 {
        scenarios::recipe(self).victim_prio(p, cpu)
    }

    /// Whether this machine allows the scenario on `cpu`; the reason when it does not
    /// (the kernel or hardware does not allow it, which is not rtwhy's failure).
    pub fn check(self, p: &Platform, cpu: u32) -> std::result::Result<(), String> {
        let r = scenarios::recipe(self);
        if let Some(why) = r.never(p, cpu) {
            return Err(why);
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
        r.check(p, cpu)
    }

    /// The device interrupts the scenario's load routes to `cpu` and keeps busy, when the
    /// interrupts' own work is what it makes the victim wait for (`irq_on_isolated_cpu`);
    /// empty for the others. How long that work lasts at a time decides whether the
    /// scenario can stand out of the CPU's own noise at all.
    pub fn drives(self, p: &Platform, cpu: u32) -> Vec<DeviceIrq> {
        scenarios::recipe(self).drives(p, cpu)
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
        self.check(p, at.cpu).map_err(LabError::Refused)?;
        let r = scenarios::recipe(self);
        let length = at
            .length
            .unwrap_or_else(|| self.setup().run.saturating_sub(Duration::from_millis(800)));
        r.start(p, at, tweaks, stop, r.delay(), length)
    }
}

/// The default directory for the disk-interrupt scenario's scratch file: on a block
/// device, unlike `/tmp` on many systems.
pub fn default_scratch_dir() -> PathBuf {
    PathBuf::from("/var/tmp")
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
        assert!(Scenario::IrqOnIsolatedCpu.check(&p, 1).is_err() || !p.device_irqs().is_empty());
    }

    #[test]
    fn softirq_on_an_isolated_cpu_of_a_threaded_kernel_is_refused() {
        let mut files = VM.to_vec();
        files.extend([
            ("sys/kernel/realtime", "1\n"),
            ("sys/devices/system/cpu/isolated", "1\n"),
        ]);
        let root = fake(&files);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        let why = Scenario::Softirq.check(&p, 1).unwrap_err();
        assert!(why.contains("irq_on_isolated_cpu"), "{why}");
        // Not isolated, a threaded kernel: RPS's work would run in ksoftirqd, and this
        // tree has no network card to move.
        let mut files = VM.to_vec();
        files.push(("sys/kernel/realtime", "1\n"));
        let root = fake(&files);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        let why = Scenario::Softirq.check(&p, 1).unwrap_err();
        assert!(why.contains("ksoftirqd"), "{why}");
        // The same without PREEMPT_RT: RPS steers the flood there.
        let root = fake(VM);
        let p = Platform::from_facts(root.path(), rtwhy_record::facts::snapshot_at(root.path()));
        assert!(Scenario::Softirq.check(&p, 1).is_ok());
    }
}
