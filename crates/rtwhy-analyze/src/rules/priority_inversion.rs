//! `priority_inversion`: the lock holder was kept off its CPU by medium-priority work.

use rtwhy_model::{Cause, SpikeKind};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct PriorityInversion;

impl Rule for PriorityInversion {
    fn cause(&self) -> Cause {
        Cause::PriorityInversion
    }

    /// The victim blocked in a futex lock call; the holder (the task that woke it) is
    /// known; and a task whose priority lies strictly between the holder's (unboosted)
    /// and the victim's ran on the holder's CPU while the holder was runnable there, at
    /// any time during the wait: preempted before the victim blocked or during it, on
    /// the victim's CPU or another. When the holder was itself waiting for a second lock,
    /// the same holds of that lock's holder over the time the first waited for it, and so
    /// on down the chain (at most `MAX_CHAIN` holders deep, a cycle ends it).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if ctx.ep.kind != SpikeKind::LockWait {
            return Err("the victim did not wait for a lock".to_string());
        }
        let Some(l) = ctx.lock else {
            return Err("the lock wait has no end in the trace".to_string());
        };
        let Some(h) = &l.holder else {
            return Err(
                "the lock holder is not known: no task woke the victim at the end of its wait"
                    .to_string(),
            );
        };
        if l.medium_ns == 0 || l.top_medium.is_none() {
            let chain = l.chain_text();
            return Err(format!(
                "no task with a priority between {h}{chain} and the victim ran on the holder's CPU while the holder was runnable"
            ));
        }
        Ok(())
    }
}
