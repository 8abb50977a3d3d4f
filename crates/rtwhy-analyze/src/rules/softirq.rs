//! `softirq`: softirq processing on the victim's CPU.

use rtwhy_model::{Bucket, Cause};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct Softirq;

impl Rule for Softirq {
    fn cause(&self) -> Cause {
        Cause::Softirq
    }

    /// A softirq ran on the victim's CPU in the window, opened or closed by its own
    /// `softirq_entry`/`softirq_exit` (not a gap next to one: that is `hwlat`).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let seen = ctx.replay.segments.iter().any(|s| {
            matches!(s.bucket, Bucket::Softirq { .. }) && (s.begin.is_some() || s.end.is_some())
        });
        if seen {
            Ok(())
        } else {
            Err(format!(
                "no softirq_entry/exit on CPU {} in the window",
                ctx.ep.cpu
            ))
        }
    }
}
