//! `irq_on_isolated_cpu`: a device interrupt on a CPU meant to be isolated.

use rtwhy_model::{BreakdownItem, Bucket, Cause, Confidence};

use super::preemption::may_hold;
use super::{Claim, Rule};
use crate::breakdown::TaskNames;
use crate::ctx::{is_local_timer, softirq_in_irq_thread, Ctx};
use crate::period::{Answer, PeriodCtx};

pub(crate) struct IrqOnIsolatedCpu;

impl Rule for IrqOnIsolatedCpu {
    fn cause(&self) -> Cause {
        Cause::IrqOnIsolatedCpu
    }
    fn precedence(&self) -> u32 {
        30
    }

    /// On an isolated CPU, a device IRQ's handler or thread (one that may hold the CPU
    /// against the victim), and softirq work run by a device IRQ's thread: the IRQ's
    /// affinity is the error to fix, the softirq how its work ran. Elsewhere (RPS, a
    /// remote raise, ksoftirqd, ktimers; housekeeping CPUs) the softirq's.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        let device = match &item.bucket {
            Bucket::Irq { name, .. } => !is_local_timer(name),
            Bucket::IrqThread { thread, name, .. } => {
                may_hold(thread.prio, ctx.ep.victim.prio) && !is_local_timer(name)
            }
            b @ Bucket::Softirq { .. } => softirq_in_irq_thread(b)
                .is_some_and(|(irq, _)| ctx.tr.irq_name(irq).is_none_or(|n| !is_local_timer(&n))),
            _ => false,
        };
        (ctx.isolated && device).then_some(Claim::All)
    }

    /// The CPU is isolated (recorded facts or `--isolated`) and a device handler (not the
    /// local timer, not an IPI) ran on it in the window: its hard handler, or its
    /// `irq/N-name` thread (PREEMPT_RT runs every device handler so).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if !ctx.isolated {
            return Err(format!(
                "CPU {} is not isolated per the recorded facts or --isolated",
                ctx.ep.cpu
            ));
        }
        // A device IRQ's thread running the softirqs its handler raised is that IRQ's
        // work on the CPU: the IRQ is there because of its affinity.
        let device = ctx.replay.segments.iter().any(|s| match &s.bucket {
            Bucket::Irq { name, .. } | Bucket::IrqThread { name, .. } => {
                !is_local_timer(name) && (s.begin.is_some() || s.end.is_some())
            }
            b => softirq_in_irq_thread(b).is_some() && (s.begin.is_some() || s.end.is_some()),
        });
        if device {
            Ok(())
        } else {
            Err("only local timer or IPI handlers ran in the window".to_string())
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        super::irq::irq_summary(ctx, Cause::IrqOnIsolatedCpu)
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        super::irq::irq_advice(ctx, Cause::IrqOnIsolatedCpu)
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Irq { .. } | Bucket::IrqThread { .. })
            || softirq_in_irq_thread(bucket).is_some()
    }

    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        super::irq::irq_culprit(ctx, Cause::IrqOnIsolatedCpu)
    }

    /// A device IRQ across the timer's expiry or before the thread, on an isolated CPU.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        if !period.isolated {
            return Answer::Pass;
        }
        super::irq::period_irq(period, Cause::IrqOnIsolatedCpu)
    }
}
