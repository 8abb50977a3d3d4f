//! `preemption`: a higher-priority periodic spinner on the victim's CPU.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{above_noise, setup, timer, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct Preemption;

impl Recipe for Preemption {
    fn expected(&self) -> Cause {
        Cause::Preemption
    }

    fn induces(&self) -> &'static str {
        "SCHED_FIFO 90 thread computes 2 ms in user space every 20.3 ms (longer and rarer above the CPU's noise)"
    }

    fn setup(&self) -> Setup {
        setup(150, timer(1000), 3000, 20)
    }

    fn setup_for(&self, _p: &Platform, _cpu: u32, noise: Duration) -> Setup {
        above_noise(self.setup(), noise)
    }

    fn start(
        &self,
        p: &Platform,
        at: &Placement,
        _tweaks: &mut Tweaks,
        stop: Stop,
        delay: Duration,
        length: Duration,
    ) -> Result<Option<Load>> {
        let (spin, period) = spin_for(self.setup_for(p, at.cpu, at.noise).threshold);
        load::spin::periodic(at.cpu, 90, spin, period, delay, length, stop).map(Some)
    }
}

/// The spinner for `threshold`: 2 ms every 20.3 ms where the threshold is the usual
/// 150 us, milliseconds of user-space work without a system call, as a real
/// application's computation is (no event shows it: the analyzer must read the silence
/// as the spinner running, not as a stopped CPU); above a noisier CPU's threshold, twice
/// the threshold, a fifth of the time (the victim must run between spins to be late
/// again). On a noisy CPU the share of
/// the judged latency that is the spinner's grows with that fraction, not with the
/// spin's length (longer spins come rarer): at a tenth, the RT guest's stalls held the
/// share at 50-71 % over seven runs, one attempt at exactly 50 % (a fail).
fn spin_for(threshold: Duration) -> (Duration, Duration) {
    let spin = Duration::from_micros(2_000).max(threshold * 2);
    (spin, Duration::from_micros(20_300).max(spin * 5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spinner_outgrows_a_noisy_cpu() {
        let p = Platform::from_facts(std::path::Path::new("/nonexistent"), Vec::new());
        let quiet = Preemption.setup_for(&p, 1, Duration::from_micros(20));
        assert_eq!(quiet.threshold, Duration::from_micros(150));
        assert_eq!(
            spin_for(quiet.threshold),
            (Duration::from_micros(2_000), Duration::from_micros(20_300))
        );
        // The RT guest under TCG: wake-ups 4.7 ms late on average.
        let tcg = Preemption.setup_for(&p, 1, Duration::from_millis(9));
        assert_eq!(tcg.threshold, Duration::from_millis(18));
        let (spin, period) = spin_for(tcg.threshold);
        assert_eq!(
            (spin, period),
            (Duration::from_millis(36), Duration::from_millis(180))
        );
        assert!(spin > tcg.threshold && period < tcg.run / 4);
    }
}
