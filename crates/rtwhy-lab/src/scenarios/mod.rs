//! One file per scenario: what it induces, the cause a correct diagnosis names, how it is
//! run and judged, what this machine must allow, and its load. [`crate::Scenario`] names
//! them; [`recipe`] finds a name's file.

use std::time::Duration;

use rtwhy_model::Cause;

use crate::{DeviceIrq, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

mod frequency_ramp;
mod hwlat;
mod inversion;
mod irq_on_isolated_cpu;
mod kernel_nonpreemptible;
mod preemption;
mod rt_throttling;
mod softirq;

/// A scenario's own parts; what every scenario shares (two CPUs, never CPU 0, bounded
/// loads) is [`crate::Scenario`]'s.
pub(crate) trait Recipe: Sync {
    /// The primary cause a correct diagnosis names.
    fn expected(&self) -> Cause;
    /// The scenario's name, when it is not its cause's (a second ordering of a cause).
    fn name(&self) -> Option<&'static str> {
        None
    }
    /// What it does, in one line.
    fn induces(&self) -> &'static str;
    /// How it is run and judged.
    fn setup(&self) -> Setup;
    /// How it is run and judged on a CPU whose own wake-up latency (p99, nothing
    /// loaded) is `noise`: a scenario whose load can be sized puts its threshold above
    /// the noise and its load above the threshold ([`crate::Placement::noise`] tells the
    /// load). The others keep [`Recipe::setup`].
    fn setup_for(&self, _p: &Platform, _cpu: u32, _noise: Duration) -> Setup {
        self.setup()
    }
    /// SCHED_FIFO priority of a timer victim on `cpu` of `p`.
    fn victim_prio(&self, _p: &Platform, _cpu: u32) -> i32 {
        VICTIM_PRIO
    }
    /// What this scenario needs beyond two online CPUs and a victim's CPU other than 0:
    /// the reason when the machine does not allow it.
    fn check(&self, _p: &Platform, _cpu: u32) -> std::result::Result<(), String> {
        Ok(())
    }
    /// The device interrupts the load routes to `cpu` and keeps busy, where that is how
    /// it makes the victim late (see [`crate::Scenario::drives`]).
    fn drives(&self, _p: &Platform, _cpu: u32) -> Vec<DeviceIrq> {
        Vec::new()
    }
    /// A reason this scenario cannot be induced here whatever the CPU (nothing in
    /// software causes it, or the hardware lacks it), checked before anything else.
    fn never(&self, _p: &Platform, _cpu: u32) -> Option<String> {
        None
    }
    /// How long after the victim the load starts.
    fn delay(&self) -> Duration {
        // A task load on the victim's CPU lets the victim start first: cyclictest's
        // thread is a normal task until it raises itself, and would starve behind a
        // load that started before.
        Duration::from_millis(300)
    }
    /// Changes the settings the load needs (journalled in `tweaks`) and starts it; it
    /// ends by itself after `length`.
    fn start(
        &self,
        p: &Platform,
        at: &Placement,
        tweaks: &mut Tweaks,
        stop: Stop,
        delay: Duration,
        length: Duration,
    ) -> Result<Option<Load>>;
}

/// SCHED_FIFO priority of a timer victim, unless its scenario says otherwise: above
/// PREEMPT_RT's IRQ threads (50), as a real-time engineer runs a thread that must not
/// wait for device interrupts.
pub(crate) const VICTIM_PRIO: i32 = 80;

/// How far above the CPU's noise (p99) a sized scenario's threshold sits.
const NOISE_MARGIN: u32 = 2;

/// `s` with its threshold above the wake-up noise (p99) of the victim's CPU.
pub(crate) fn above_noise(s: Setup, noise: Duration) -> Setup {
    Setup {
        threshold: s.threshold.max(noise * NOISE_MARGIN),
        ..s
    }
}

/// `s` for a scenario driving `irq` to the victim's CPU: where the interrupt has a
/// thread, whose runs last as long as its work, the threshold sits above the CPU's
/// noise, so a guest's stalls are not taken for the interrupt's spikes. A hard IRQ's
/// microseconds cannot be sized: its threshold stays, and the criterion weighs what the
/// load added.
pub(crate) fn driving(s: Setup, irq: Option<&DeviceIrq>, noise: Duration) -> Setup {
    match irq {
        Some(DeviceIrq {
            thread_prio: Some(_),
            ..
        }) => above_noise(s, noise),
        _ => s,
    }
}

/// The victim's priority beside a driven `irq`: ten below its thread where it has one
/// (FIFO 50 on PREEMPT_RT: the victim at 40), as a real-time thread that does not depend
/// on the device should not have to wait for it, else [`VICTIM_PRIO`].
pub(crate) fn below_thread_of(irq: Option<&DeviceIrq>) -> i32 {
    match irq {
        Some(DeviceIrq {
            thread_prio: Some(t),
            ..
        }) => (t - 10).max(1),
        _ => VICTIM_PRIO,
    }
}

/// Routes `irq` to `cpu` alone (journalled in `tweaks`) unless that is what its affinity
/// already asks, or the kernel manages it and delivers it there. Whether it arrives
/// there now is not enough: an interrupt moved back from `cpu` by an earlier run still
/// shows `cpu` as its effective CPU until it next fires, and then goes elsewhere (a
/// second selftest in one boot found no interrupt on the CPU at all).
pub(crate) fn route_to(p: &Platform, irq: &DeviceIrq, cpu: u32, tweaks: &mut Tweaks) -> Result<()> {
    let asked_here = irq.requested.as_ref().is_some_and(|r| r.0 == [cpu]);
    let kernel_delivers_here = irq.managed && irq.cpus.contains(cpu);
    if !asked_here && !kernel_delivers_here {
        tweaks.set(
            &p.path(&format!("proc/irq/{}/smp_affinity_list", irq.irq)),
            &cpu.to_string(),
        )?;
    }
    Ok(())
}

/// A cyclic timer victim waking every `interval_us`.
pub(crate) fn timer(interval_us: u64) -> crate::Victim {
    crate::Victim::Timer { interval_us }
}

/// The run and judgement of a scenario: threshold (us), victim, run time (ms), captures.
pub(crate) fn setup(
    threshold_us: u64,
    victim: crate::Victim,
    run_ms: u64,
    max_spikes: usize,
) -> Setup {
    Setup {
        threshold: Duration::from_micros(threshold_us),
        victim,
        run: Duration::from_millis(run_ms),
        max_spikes,
        declare_isolated: false,
    }
}

/// The recipe of `s`.
pub(crate) fn recipe(s: crate::Scenario) -> &'static dyn Recipe {
    use crate::Scenario as S;
    match s {
        S::RtThrottling => &rt_throttling::RtThrottling,
        S::Preemption => &preemption::Preemption,
        S::PriorityInversion => &inversion::PRIORITY_INVERSION,
        S::PriorityInversionPreemptedFirst => &inversion::PREEMPTED_FIRST,
        S::PriorityInversionNested => &inversion::NESTED,
        S::LockContention => &inversion::LOCK_CONTENTION,
        S::Softirq => &softirq::Softirq,
        S::IrqOnIsolatedCpu => &irq_on_isolated_cpu::IrqOnIsolatedCpu,
        S::KernelNonpreemptible => &kernel_nonpreemptible::KernelNonpreemptible,
        S::Hwlat => &hwlat::Hwlat,
        S::FrequencyRamp => &frequency_ramp::FrequencyRamp,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::IrqDevice;
    use rtwhy_model::CpuList;

    fn irq(effective: &[u32], requested: &[u32]) -> DeviceIrq {
        DeviceIrq {
            irq: 14,
            name: "ata_piix".into(),
            cpus: CpuList(effective.to_vec()),
            requested: Some(CpuList(requested.to_vec())),
            managed: false,
            thread_prio: Some(50),
            device: IrqDevice::Disk,
        }
    }

    /// The affinity file `route_to` leaves for IRQ 14, given what it read before.
    fn routed(before: &str, i: &DeviceIrq) -> String {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("proc/irq/14/smp_affinity_list");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, before).unwrap();
        let p = Platform::from_facts(root.path(), Vec::new());
        let journal = root.path().join("journal");
        let mut tweaks = Tweaks::new(&journal);
        route_to(&p, i, 1, &mut tweaks).unwrap();
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(tweaks.restore().is_empty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
        after
    }

    #[test]
    fn an_interrupt_still_effective_here_from_an_undone_move_is_routed_again() {
        // Moved back to CPU 0 by an earlier run, not yet fired since: effective 1.
        assert_eq!(routed("0", &irq(&[1], &[0])), "1");
        // Asked for CPU 1 alone already: left as it is.
        assert_eq!(routed("1", &irq(&[1], &[1])), "1");
        // Allowed on both: the kernel may pick either, so CPU 1 alone.
        assert_eq!(routed("0-1", &irq(&[1], &[0, 1])), "1");
    }
}
