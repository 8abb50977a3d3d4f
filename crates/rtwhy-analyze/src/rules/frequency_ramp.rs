//! `frequency_ramp`: a low CPU clock in the window.

use rtwhy_model::{Bucket, Cause, Confidence};

use super::Rule;
use crate::ctx::Ctx;

pub(crate) struct FrequencyRamp;

impl Rule for FrequencyRamp {
    fn cause(&self) -> Cause {
        Cause::FrequencyRamp
    }
    fn precedence(&self) -> u32 {
        120
    }

    /// A low clock slows everything the CPU did in the window.
    fn across(&self, ctx: &Ctx<'_>) -> u64 {
        let Some((low, _)) = ctx.freq else {
            return 0;
        };
        let busy = ctx.sum(|b| {
            !matches!(
                b,
                Bucket::Idle | Bucket::Unaccounted | Bucket::LockWait { .. }
            )
        });
        (busy as f64 * (1.0 - *low as f64 / ctx.tr.max_freq.max(1) as f64)) as u64
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

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        match ctx.freq {
            Some((low, _)) => format!(
                "low clock on CPU {cpu}: {} MHz, {:.0}% of the {} MHz seen in the trace, slowed everything it did for {victim}",
                low / 1000,
                *low as f64 * 100.0 / ctx.tr.max_freq.max(1) as f64,
                ctx.tr.max_freq / 1000
            ),
            None => format!("low clock on CPU {cpu}"),
        }
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let facts = &ctx.tr.facts;
        let gov = facts
            .governors
            .get(&cpu)
            .map(|g| format!(" (governor now: {g})"))
            .unwrap_or_default();
        vec![format!(
            "Keep CPU {cpu} fast{gov}: the performance governor or a raised scaling_min_freq (/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_min_freq)."
        )]
    }

    /// No stretch of its own: the evidence is the lock's events or the clock's.
    fn shows(&self, _ctx: &Ctx<'_>, _bucket: &Bucket) -> bool {
        false
    }

    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        Some(format!("the clock of CPU {}", ctx.ep.cpu))
    }
}
