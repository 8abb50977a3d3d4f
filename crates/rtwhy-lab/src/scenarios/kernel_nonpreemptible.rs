//! `kernel_nonpreemptible`: long kernel work without a scheduling point, on a kernel whose
//! preemption model lets it hold off a woken real-time task.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct KernelNonpreemptible;

impl Recipe for KernelNonpreemptible {
    fn expected(&self) -> Cause {
        Cause::KernelNonpreemptible
    }

    fn induces(&self) -> &'static str {
        "SCHED_OTHER task here polls 30,000 descriptors per poll() call"
    }

    fn setup(&self) -> Setup {
        setup(250, timer(1000), 4000, 20)
    }

    fn check(&self, p: &Platform, _cpu: u32) -> std::result::Result<(), String> {
        match p.preempt_model() {
            Some(m @ ("full" | "lazy" | "rt")) => Err(format!(
                "the kernel preempts kernel code (preempt={m}): long kernel work cannot hold off a woken RT task"
            )),
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
        load::kwork::start(at.cpu, delay, length, stop).map(Some)
    }
}
