//! `preemption`: a higher-priority periodic spinner on the victim's CPU.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct Preemption;

impl Recipe for Preemption {
    fn expected(&self) -> Cause {
        Cause::Preemption
    }

    fn induces(&self) -> &'static str {
        "SCHED_FIFO 90 thread spins 300 us every 10.3 ms"
    }

    fn setup(&self) -> Setup {
        setup(150, timer(1000), 3000, 20)
    }

    fn start(
        &self,
        _p: &Platform,
        at: &Placement,
        _tweaks: &mut Tweaks,
        stop: Stop,
        delay: Duration,
        length: Duration,
    ) -> Result<Option<Load>> {
        load::spin::periodic(
            at.cpu,
            90,
            Duration::from_micros(300),
            Duration::from_micros(10_300),
            delay,
            length,
            stop,
        )
        .map(Some)
    }
}
