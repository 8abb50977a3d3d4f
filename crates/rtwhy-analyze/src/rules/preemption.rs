//! `preemption`: a task of higher or equal priority held the CPU.

use rtwhy_model::{Bucket, Cause};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct Preemption;

/// Whether a task that ran at `prio` may hold the CPU against the victim: it outranks or
/// equals it, or both are normal tasks, which CFS/EEVDF share by weight, not by rank.
pub(crate) fn may_hold(prio: i32, victim_prio: i32) -> bool {
    prio <= victim_prio || (prio >= 100 && victim_prio >= 100)
}

impl Rule for Preemption {
    fn cause(&self) -> Cause {
        Cause::Preemption
    }

    /// Another task ran on the victim's CPU in the window at a priority (a PI boost
    /// counts) at least the victim's.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let victim = ctx.ep.victim.prio;
        let held = ctx.items.iter().any(|i| match &i.bucket {
            Bucket::Task { prio, .. } => may_hold(*prio, victim),
            Bucket::IrqThread { thread, .. } => may_hold(thread.prio, victim),
            _ => false,
        });
        if held {
            Ok(())
        } else {
            Err(format!(
                "no task of the victim's priority or higher ran on CPU {}",
                ctx.ep.cpu
            ))
        }
    }
}
