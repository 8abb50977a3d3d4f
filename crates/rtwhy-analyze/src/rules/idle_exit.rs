//! `idle_exit`: the victim was woken on an idle CPU that left idle late.

use rtwhy_model::{
    human_duration, BreakdownItem, Bucket, Cause, Confidence, Event, Nanos, SpikeKind,
};

use super::hwlat::late_timer;
use super::{kernel_nonpreemptible, Claim, Rule};
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};

pub(crate) struct IdleExit;

/// Idle states from this index on are deep enough for a slow exit (state 0/1 are
/// polling and halt on x86 and the VMs here).
const DEEP_IDLE_STATE: u32 = 2;

/// Without recorded idle states, the longest exit any real C-state (or a VM's halt) is
/// taken to need: real hardware declares tens to hundreds of microseconds. Timerlat
/// traces record no idle states: their idle exits are bounded by this.
pub(crate) const MAX_IDLE_EXIT_UNRECORDED: u64 = 500_000;

/// The longest idle exit CPU `cpu` can take: its deepest idle state's exit latency from
/// the recorded facts, or [`MAX_IDLE_EXIT_UNRECORDED`].
pub(crate) fn max_exit(ctx: &Ctx<'_>) -> (u64, bool) {
    match ctx.tr.facts.max_idle_exit_ns(ctx.ep.cpu) {
        Some(ns) => (ns, true),
        None => (MAX_IDLE_EXIT_UNRECORDED, false),
    }
}

/// When the victim's CPU showed that it had left idle after the wake-up: its timer's
/// handler ran there, or the CPU's first event at or after the wake-up. Idle time after
/// that is not an idle exit (the CPU was awake and did not switch).
pub(crate) fn awake_at(ctx: &Ctx<'_>) -> Option<Nanos> {
    let w = ctx.ep.wake.as_ref()?;
    if let Some(tf) = w.timer {
        return Some(tf.handler);
    }
    let cpu = ctx.ep.cpu;
    let h = &ctx.tr.history;
    h.cpu(cpu)
        .range(h.first_at(cpu, w.ts)..)
        .find(|e| !matches!(&e.kind, rtwhy_model::EventKind::Generic(g) if g.name.ends_with("_stack")))
        .map(|e| e.ts)
}

/// The time the CPU took to leave idle: its own timer's delay (expiry to handler) while
/// it idled, and idle before it showed it was awake.
pub(crate) fn exit_ns(ctx: &Ctx<'_>) -> u64 {
    let delay: u64 = ctx
        .replay
        .segments
        .iter()
        .filter(|s| matches!(s.bucket, Bucket::TimerIrqDelay | Bucket::Unaccounted))
        .filter(|_| ctx.replay.start_curr == 0)
        .map(|s| s.to.0 - s.from.0)
        .sum();
    delay + exit_idle_ns(ctx)
}

/// The idle part of [`exit_ns`]: idle before the CPU showed it was awake.
pub(crate) fn exit_idle_ns(ctx: &Ctx<'_>) -> u64 {
    let awake = awake_at(ctx).unwrap_or(ctx.ep.end);
    ctx.replay
        .segments
        .iter()
        .filter(|s| s.bucket == Bucket::Idle)
        .map(|s| s.to.min(awake).0.saturating_sub(s.from.0))
        .sum()
}

impl Rule for IdleExit {
    fn cause(&self) -> Cause {
        Cause::IdleExit
    }
    fn precedence(&self) -> u32 {
        80
    }

    /// A stopped timer or unaccounted time after a deep idle state, no longer than the
    /// CPU's slowest exit, and interrupts not held off; idle before the CPU showed it was
    /// awake (idle after it, the CPU ran the wake-up's handler, then nothing, is not).
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        match item.bucket {
            Bucket::TimerIrqDelay | Bucket::Unaccounted => {
                let deep = ctx
                    .replay
                    .idle_before
                    .as_ref()
                    .is_some_and(|(state, _)| *state >= DEEP_IDLE_STATE);
                let stopped = ctx.sum(|b| matches!(b, Bucket::TimerIrqDelay | Bucket::Unaccounted));
                (deep
                    && stopped <= max_exit(ctx).0
                    && kernel_nonpreemptible::irqs_held_off(ctx).is_none())
                .then_some(Claim::All)
            }
            Bucket::Idle => Some(Claim::First(exit_idle_ns(ctx))),
            _ => None,
        }
    }

    fn evidence(&self, ctx: &Ctx<'_>) -> Vec<(Event, String)> {
        let entered = ctx.replay.idle_before.as_ref().map(|(state, e)| {
            (
                e.clone(),
                format!("CPU {} enters idle state {state}", e.cpu),
            )
        });
        entered.into_iter().chain(late_timer(ctx)).collect()
    }

    /// A wake-up (timer or not) of the victim for its own CPU, that CPU idle when the
    /// window began (the last switch before it went to `swapper`), and no other task on
    /// the CPU until the victim ran: only idle, interrupts and the stopped-CPU gap. IRQ
    /// or `cpu_idle` events must have been recorded: without either, handlers may fill
    /// the idle time unseen.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let cpu = ctx.ep.cpu;
        if !ctx.tr.seen.irq && !ctx.tr.seen.cpu_idle {
            return Err(
                "neither irq nor power:cpu_idle events were recorded, so interrupt work on the idle CPU cannot be ruled out"
                    .to_string(),
            );
        }
        if !matches!(ctx.ep.kind, SpikeKind::Wakeup | SpikeKind::TimerWakeup) {
            return Err("the victim was not woken: it was preempted or waited for a lock".into());
        }
        if let Some(w) = &ctx.ep.wake {
            if w.target_cpu >= 0 && w.target_cpu as u32 != cpu {
                return Err(format!(
                    "the victim was woken for CPU {}, not for CPU {cpu} where it ran",
                    w.target_cpu
                ));
            }
        }
        match ctx.replay.start_curr {
            0 => {}
            -1 => {
                return Err(format!(
                    "the trace does not say what CPU {cpu} ran when the victim was woken"
                ))
            }
            tid => {
                return Err(format!(
                    "CPU {cpu} was running {} when the victim was woken, not idle",
                    ctx.task_ref(tid)
                ))
            }
        }
        if let Some(i) = ctx
            .items
            .iter()
            .find(|i| matches!(i.bucket, Bucket::Task { .. } | Bucket::IrqThread { .. }))
        {
            return Err(format!(
                "{} ran on CPU {cpu} between the wake-up and the victim",
                i.bucket
            ));
        }
        // An idle exit delays the interrupt, by at most the deepest idle state's exit
        // latency: a longer silence is a stopped CPU or something unseen.
        let (bound, recorded) = max_exit(ctx);
        let ns = exit_ns(ctx);
        if ns > bound {
            return Err(format!(
                "CPU {cpu} took {} to leave idle, longer than {} ({}): not an idle exit",
                human_duration(ns),
                human_duration(bound),
                if recorded {
                    "its deepest idle state's exit latency"
                } else {
                    "any real C-state takes; idle states not recorded"
                }
            ));
        }
        if ns == 0 {
            return Err(format!(
                "CPU {cpu} was awake (it ran the wake-up's handler) before the victim waited: no idle exit in the window"
            ));
        }
        Ok(())
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let ns = exit_ns(ctx);
        let state = match &ctx.replay.idle_before {
            Some((state, e)) => format!(" (idle state {state} entered at {})", e.ts),
            None => " (no power:cpu_idle events: the idle state is not known)".to_string(),
        };
        format!(
            "idle exit on CPU {cpu}: {victim} was woken while the CPU idled{state}, and the CPU took {} to leave idle and run it, with no other task in between: a C-state exit on hardware, a halt exit in a VM",
            human_duration(ns)
        )
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let facts = &ctx.tr.facts;
        let states = facts
            .idle_states
            .get(&cpu)
            .map(|s| format!(" (idle states: {s})"))
            .unwrap_or_default();
        vec![
            format!(
                "Keep CPU {cpu} out of deep idle states{states}: hold /dev/cpu_dma_latency open with 0 while the real-time work runs, or disable the deep states in /sys/devices/system/cpu/cpu{cpu}/cpuidle/state*/disable; for a dedicated CPU, idle=poll (or processor.max_cstate=/intel_idle.max_cstate= on the command line)."
            ),
            "In a VM the idle exit is a halt exit to the host: raise the host's halt_poll_ns (KVM) or give the guest dedicated vCPUs with idle=poll, or fix it on the host.".to_string(),
        ]
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(
            bucket,
            Bucket::Idle | Bucket::Unaccounted | Bucket::TimerIrqDelay
        )
    }

    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        Some(format!("idle exit on CPU {}", ctx.ep.cpu))
    }

    /// The CPU was idle at the expiry and took at most [`MAX_IDLE_EXIT_UNRECORDED`] to
    /// enter the timer's handler, or to switch from idle to the timerlat thread; idle
    /// that kept the CPU longer is refused.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        let cpu = period.cpu();
        let from_idle = period.spike.exit_from_idle;
        match &period.part {
            Part::Delay { ns, .. } if from_idle && *ns <= MAX_IDLE_EXIT_UNRECORDED => {
                period.names(
                    Cause::IdleExit,
                    *ns,
                    super::confidence(period.share(*ns)),
                    format!(
                        "CPU {cpu} was idle when its timer was due and took {} to enter the handler: an exit from idle",
                        us(*ns)
                    ),
                )
            }
            Part::Thread { pid: 0, ns, .. } if from_idle && *ns <= MAX_IDLE_EXIT_UNRECORDED => {
                period.names(
                    Cause::IdleExit,
                    *ns,
                    super::confidence(period.share(*ns)).max(Confidence::Medium),
                    format!(
                        "CPU {cpu} was idle when the timer fired and took {} more to switch from idle to the timerlat thread",
                        us(*ns)
                    ),
                )
            }
            Part::Thread { pid: 0, ns, .. } => Answer::Refuses(format!(
                "the idle task kept CPU {cpu} for {} after the timer IRQ woke the timerlat thread: longer than an exit from idle ({} ms) and nothing recorded says what held it (a stopped vCPU leaves no event)",
                us(*ns),
                MAX_IDLE_EXIT_UNRECORDED as f64 / 1e6
            )),
            _ => Answer::Pass,
        }
    }
}
