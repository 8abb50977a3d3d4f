//! `lock_contention`: the victim waited for a holder that ran its critical section.

use rtwhy_model::{Cause, SpikeKind};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct LockContention;

impl Rule for LockContention {
    fn cause(&self) -> Cause {
        Cause::LockContention
    }

    /// The victim blocked in a futex lock call; the task that woke it (the holder
    /// releasing the lock: FUTEX_WAKE or FUTEX_UNLOCK_PI) is known; and the holder ran
    /// during the wait (boosted or not): an event of its own on some CPU. When the holder
    /// was itself waiting for a second lock, the holder at the end of that chain ran
    /// while the lock it held was waited for, and the chain was followed to its end.
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
        if let Some(why) = &l.cut {
            return Err(why.clone());
        }
        if l.holder_ran.is_none() {
            let last = l.culprit().unwrap_or(h);
            return Err(format!("the holder {last} did not run during the wait"));
        }
        Ok(())
    }
}
