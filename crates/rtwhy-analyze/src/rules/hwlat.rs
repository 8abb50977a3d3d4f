//! `hwlat`: the CPU was stopped with no kernel event at all.

use rtwhy_model::{Bucket, Cause};

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
}
