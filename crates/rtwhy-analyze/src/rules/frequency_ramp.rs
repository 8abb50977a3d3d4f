//! `frequency_ramp`: a low CPU clock in the window.

use rtwhy_model::Cause;

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct FrequencyRamp;

impl Rule for FrequencyRamp {
    fn cause(&self) -> Cause {
        Cause::FrequencyRamp
    }

    /// A `cpu_frequency` event on the victim's CPU, shortly before or in the window, at
    /// 70 % or less of the highest frequency in the trace.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if ctx.freq.is_some() {
            Ok(())
        } else if !ctx.tr.seen.cpu_frequency {
            Err("no power:cpu_frequency events were recorded".to_string())
        } else {
            Err(format!(
                "no cpu_frequency at 70% or less of the highest clock on CPU {}",
                ctx.ep.cpu
            ))
        }
    }
}
