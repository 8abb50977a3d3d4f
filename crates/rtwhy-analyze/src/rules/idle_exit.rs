//! `idle_exit`: the victim was woken on an idle CPU that left idle late.

use rtwhy_model::{Bucket, Cause, SpikeKind};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct IdleExit;

impl Rule for IdleExit {
    fn cause(&self) -> Cause {
        Cause::IdleExit
    }

    /// A wake-up (timer or not) of the victim for its own CPU, that CPU idle when the
    /// window began (the last switch before it went to `swapper`), and no other task on
    /// the CPU until the victim ran: only idle, interrupts and the stopped-CPU gap. IRQ
    /// or `cpu_idle` events must have been recorded: without either, handlers may fill
    /// the idle time unseen.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let cpu = ctx.ep.cpu;
        if !ctx.tr.seen.irq && !ctx.tr.seen.cpu_idle {
            return Err(
                "neither irq nor power:cpu_idle events were recorded, so interrupt work on the idle CPU cannot be ruled out"
                    .to_string(),
            );
        }
        if !matches!(ctx.ep.kind, SpikeKind::Wakeup | SpikeKind::TimerWakeup) {
            return Err("the victim was not woken: it was preempted or waited for a lock".into());
        }
        if let Some(w) = &ctx.ep.wake {
            if w.target_cpu >= 0 && w.target_cpu as u32 != cpu {
                return Err(format!(
                    "the victim was woken for CPU {}, not for CPU {cpu} where it ran",
                    w.target_cpu
                ));
            }
        }
        match ctx.replay.start_curr {
            0 => {}
            -1 => {
                return Err(format!(
                    "the trace does not say what CPU {cpu} ran when the victim was woken"
                ))
            }
            tid => {
                return Err(format!(
                    "CPU {cpu} was running {} when the victim was woken, not idle",
                    ctx.task_ref(tid)
                ))
            }
        }
        if let Some(i) = ctx
            .items
            .iter()
            .find(|i| matches!(i.bucket, Bucket::Task { .. } | Bucket::IrqThread { .. }))
        {
            return Err(format!(
                "{} ran on CPU {cpu} between the wake-up and the victim",
                i.bucket
            ));
        }
        Ok(())
    }
}
