//! `hwlat`: firmware (SMI) or hypervisor stalls, which nothing in Linux causes on purpose.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct Hwlat;

impl Recipe for Hwlat {
    fn expected(&self) -> Cause {
        Cause::Hwlat
    }

    fn induces(&self) -> &'static str {
        "firmware SMIs or a hypervisor taking the CPU away"
    }

    fn setup(&self) -> Setup {
        setup(100, timer(1000), 1000, 1)
    }

    fn never(&self, _p: &Platform, _cpu: u32) -> Option<String> {
        Some("needs firmware SMIs or a hypervisor taking the CPU away: nothing in Linux causes one on purpose".into())
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
