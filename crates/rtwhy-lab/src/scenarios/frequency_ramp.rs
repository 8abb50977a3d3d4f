//! `frequency_ramp`: a CPU woken from deep idle at a low clock (no generator yet).

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct FrequencyRamp;

impl Recipe for FrequencyRamp {
    fn expected(&self) -> Cause {
        Cause::FrequencyRamp
    }

    fn induces(&self) -> &'static str {
        "wake-ups from deep idle at a low clock"
    }

    fn setup(&self) -> Setup {
        setup(100, timer(1000), 1000, 1)
    }

    fn never(&self, p: &Platform, cpu: u32) -> Option<String> {
        Some(if p.has_cpufreq(cpu) {
            "rtwhy-lab has no frequency-ramp generator yet".into()
        } else {
            format!("no cpufreq on CPU {cpu}: the clock does not change here (typical of VMs)")
        })
    }

    fn start(
        &self,
        _p: &Platform,
        _at: &Placement,
        _tweaks: &mut Tweaks,
        _stop: Stop,
        _delay: Duration,
        _length: Duration,
    ) -> Result<Option<Load>> {
        Ok(None)
    }
}
