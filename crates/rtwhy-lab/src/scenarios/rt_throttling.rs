//! `rt_throttling`: a SCHED_FIFO busy loop below the victim exhausts the RT bandwidth.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct RtThrottling;

impl Recipe for RtThrottling {
    fn expected(&self) -> Cause {
        Cause::RtThrottling
    }

    fn induces(&self) -> &'static str {
        "SCHED_FIFO 70 busy loop under the FIFO 80 victim until the RT class is throttled"
    }

    fn setup(&self) -> Setup {
        setup(10_000, timer(1000), 4000, 10)
    }

    fn check(&self, p: &Platform, _cpu: u32) -> std::result::Result<(), String> {
        match (p.facts.rt_runtime_us, p.facts.rt_period_us) {
            (Some(r), _) if r < 0 => Err(
                "RT throttling is off (sched_rt_runtime_us = -1): RT tasks may run forever".into(),
            ),
            (Some(r), Some(per)) if r >= per => Err(format!(
                "sched_rt_runtime_us ({r}) is not below sched_rt_period_us ({per}): nothing to throttle"
            )),
            (None, _) => Err("sched_rt_runtime_us cannot be read".into()),
            _ => Ok(()),
        }
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
        load::spin::busy(at.cpu, 70, delay, length, stop).map(Some)
    }
}
