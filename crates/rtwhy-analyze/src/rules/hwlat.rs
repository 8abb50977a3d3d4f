//! `hwlat`: the CPU was stopped with no kernel event at all.

use crate::breakdown;
use rtwhy_model::{human_duration, Bucket, Cause, Confidence};

use super::{kernel_nonpreemptible, Rule};
use crate::ctx::Ctx;

pub(crate) struct Hwlat;

impl Rule for Hwlat {
    fn cause(&self) -> Cause {
        Cause::Hwlat
    }

    /// An event-free stretch closed by a late timer interrupt (`now - expires`), or the
    /// victim's own timer handled late while nothing ran: the breakdown only makes these
    /// buckets from such a timer, so their presence is the late timer's.
    ///
    /// Not when the late timer interrupt's stack shows kernel code that had interrupts
    /// off: then the CPU was running, not stopped.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if let Some((_, at, code)) = kernel_nonpreemptible::irqs_held_off(ctx) {
            return Err(format!(
                "the late timer interrupt was delivered at {at} in {code}: kernel code had interrupts off, the CPU was not stopped"
            ));
        }
        let late_timer = ctx.replay.late_timer.is_some()
            && ctx
                .items
                .iter()
                .any(|i| i.bucket == Bucket::Unaccounted && i.ns > 0);
        let own_timer_late = ctx.ep.wake.as_ref().and_then(|w| w.timer).is_some()
            && ctx
                .items
                .iter()
                .any(|i| i.bucket == Bucket::TimerIrqDelay && i.ns > 0);
        if late_timer || own_timer_late {
            Ok(())
        } else {
            Err("no event-free stretch ended by a late timer interrupt".to_string())
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, share: f64, confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let ns = ctx.sum(|b| matches!(b, Bucket::TimerIrqDelay | Bucket::Unaccounted));
        let gap = ctx.largest(|b| matches!(b, Bucket::TimerIrqDelay | Bucket::Unaccounted));
        let silent = gap
            .map(|g| breakdown::silent_cpus(&ctx.tr.history, cpu, g.from, g.to))
            .unwrap_or_default();
        let late = ctx.replay.late_timer.map(|l| l.lateness).or_else(|| {
            ctx.ep
                .wake
                .as_ref()
                .and_then(|w| w.timer)
                .map(|t| t.handler.0.saturating_sub(t.expiry.0))
        });
        if !silent.is_empty() || late.is_some_and(|l| l >= 1_000_000) {
            *confidence = (*confidence).max(Confidence::Medium);
            if share >= 0.6 {
                *confidence = Confidence::High;
            }
        }
        format!(
            "CPU {cpu} was stopped for {} with no kernel event at all{}{}: firmware (SMI) or, in a VM, the hypervisor descheduling the vCPU",
            human_duration(ns),
            late.map(|l| format!("; a timer interrupt arrived {} after it was due", human_duration(l)))
                .unwrap_or_default(),
            if silent.is_empty() {
                String::new()
            } else {
                format!(
                    "; CPU{} {} silent at the same time",
                    if silent.len() > 1 { "s" } else { "" },
                    silent.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
                )
            }
        )
    }

    fn advice(&self, _ctx: &Ctx<'_>) -> Vec<String> {
        vec![
            "Time passed with no kernel event: check firmware settings (disable SMI sources, power management in the BIOS), or in a VM pin the vCPUs on the host and avoid overcommit.".to_string(),
            "Measure it independently with hwlatdetect or `rtla hwnoise` where the kernel has the hwlat/osnoise tracers.".to_string(),
        ]
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Unaccounted | Bucket::TimerIrqDelay)
    }

    /// The CPU itself: what stopped it (firmware, the hypervisor) leaves no event.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        Some(format!("CPU {} stopped", ctx.ep.cpu))
    }
}
