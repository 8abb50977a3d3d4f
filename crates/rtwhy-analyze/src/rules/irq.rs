//! `irq`: hard interrupt handlers on a CPU that is not isolated.

use rtwhy_model::{Bucket, Cause};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct Irq;

impl Rule for Irq {
    fn cause(&self) -> Cause {
        Cause::Irq
    }

    /// A handler's entry or exit on the victim's CPU in the window, or an IRQ thread
    /// (`irq/N-name`) switched in or out there.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let seen = ctx.replay.segments.iter().any(|s| {
            matches!(s.bucket, Bucket::Irq { .. } | Bucket::IrqThread { .. })
                && (s.begin.is_some() || s.end.is_some())
        });
        if seen {
            Ok(())
        } else {
            Err(format!(
                "no irq_handler_entry/exit and no IRQ thread on CPU {} in the window",
                ctx.ep.cpu
            ))
        }
    }
}
