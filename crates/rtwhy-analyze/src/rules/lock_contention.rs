//! `lock_contention`: the victim waited for a holder that ran its critical section.

use rtwhy_model::{Cause, SpikeKind};

use super::Rule;
use crate::diagnose::Ctx;

pub(crate) struct LockContention;

impl Rule for LockContention {
    fn cause(&self) -> Cause {
        Cause::LockContention
    }

    /// The victim blocked in a futex lock call; the task that woke it (the holder
    /// releasing the lock: FUTEX_WAKE or FUTEX_UNLOCK_PI) is known; and the holder ran
    /// during the wait (boosted or not): an event of its own on some CPU.
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
        if l.holder_ran.is_none() {
            return Err(format!("the holder {h} did not run during the wait"));
        }
        Ok(())
    }
}
