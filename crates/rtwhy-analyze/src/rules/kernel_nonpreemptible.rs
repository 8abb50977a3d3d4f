//! `kernel_nonpreemptible`: a lower-priority task kept the CPU after the wake-up.

use rtwhy_model::{Bucket, Cause};

use super::Rule;
use crate::diagnose::Ctx;

pub(crate) struct KernelNonpreemptible;

/// What is known of the kernel's preemption model, and from where.
pub(crate) enum Model {
    /// Named by the recorded facts (`kernel.preempt`, the version string).
    Recorded(String),
    /// Not recorded; the trace shows `ktimers/N` threads, which only PREEMPT_RT has.
    InferredRt,
    /// Nothing says.
    Unknown,
}

pub(crate) fn model(ctx: &Ctx<'_>) -> Model {
    if let Some(m) = ctx.tr.facts.preempt_model() {
        return Model::Recorded(m.to_string());
    }
    if ctx.tr.rt_threads_seen() {
        return Model::InferredRt;
    }
    Model::Unknown
}

impl Rule for KernelNonpreemptible {
    fn cause(&self) -> Cause {
        Cause::KernelNonpreemptible
    }

    /// The victim is real-time; a task it outranks kept the CPU in the window; and the
    /// preemption model lets a woken RT task wait for the kernel: `none` or `voluntary`
    /// (or not recorded and not contradicted by the trace). Not `full`, `lazy` or `rt`.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let cpu = ctx.ep.cpu;
        if !ctx.ep.victim.is_rt() {
            return Err("the victim is not a real-time task".to_string());
        }
        let lower = ctx.items.iter().any(|i| {
            matches!(
                i.bucket,
                Bucket::Task {
                    outranks_victim: false,
                    ..
                } | Bucket::IrqThread {
                    outranks_victim: false,
                    ..
                }
            )
        });
        if !lower {
            return Err(format!(
                "no lower-priority task kept CPU {cpu} after the wake-up"
            ));
        }
        match model(ctx) {
            Model::Recorded(m) if m == "none" || m == "voluntary" => Ok(()),
            Model::Recorded(m) => Err(format!(
                "the kernel preempts in kernel code (preemption model {m}, from the recorded facts)"
            )),
            Model::InferredRt => Err(
                "the kernel is PREEMPT_RT (inferred from its ktimers/N threads in the trace; the preemption model was not recorded)"
                    .to_string(),
            ),
            Model::Unknown => Ok(()),
        }
    }
}
