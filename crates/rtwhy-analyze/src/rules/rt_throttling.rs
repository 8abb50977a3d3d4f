//! `rt_throttling`: RT bandwidth control (or the fair server) kept the RT class off the
//! victim's CPU.

use rtwhy_model::{
    human_duration, BreakdownItem, Bucket, Cause, Confidence, Event, EventKind, SystemFacts,
};

use super::{Claim, Rule};
use crate::ctx::{Ctx, Throttle};
use crate::tracker::{Episode, Tracker};

pub(crate) struct RtThrottling;

/// What a used-up runtime looks like: the RT class stays off the CPU until the period
/// ends (`period - runtime`, 50 ms of the default 1 s, in the steady state; half of it
/// allows for a throttle met part-way), or, when the fair server (6.12) hands the CPU
/// to normal tasks only while they have work, the RT class had held the CPU for half
/// the runtime before. `None` when the facts say nothing can throttle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub min_off: u64,
    pub min_held: u64,
    /// The kernel has the fair server (6.12 and later).
    pub fair_server: bool,
}

pub(crate) fn budget(facts: &SystemFacts) -> Option<Budget> {
    let fair_server = facts.kernel_version_number().is_some_and(|v| v >= (6, 12));
    let (runtime, period) = match (facts.rt_runtime_us, facts.rt_period_us) {
        (Some(r), Some(p)) if r >= 0 && p > 0 && r < p => (r, p),
        (Some(r), _) if r < 0 && !fair_server => return None,
        // The defaults, which the fair server shares.
        _ => (950_000, 1_000_000),
    };
    Some(Budget {
        min_off: (period - runtime) as u64 * 1000 / 2,
        min_held: runtime as u64 * 1000 / 2,
        fair_server,
    })
}

/// The fair server's own refusal: a real-time task switched out runnable in favour of a
/// normal task (not idle). Nothing else does that (the stopper is not counted, a
/// deadline task is not FIFO/RR), and the server hands its runtime out in pieces as the
/// normal tasks block and wake (pieces of 13 and 25 ms seen under a compile), so no
/// length is required of it. A normal task switched in while a real-time task was only
/// being woken for the CPU is not this: the wake-up may just not have arrived yet.
pub(crate) fn fair_server_refusal(t: &Throttle) -> bool {
    matches!(
        &t.refused.kind,
        EventKind::SchedSwitch {
            prev_prio,
            prev_state,
            next_pid,
            next_prio,
            ..
        } if rtwhy_model::is_fifo_rr(*prev_prio) && prev_state.is_runnable() && *next_pid != 0 && *next_prio >= 100
    )
}

/// The longest refusal of the RT class on the victim's CPU that overlaps the spike, as
/// the events before the spike's end show it (one still under way then ends there).
pub(crate) fn find(tr: &Tracker, ep: &Episode) -> Result<Throttle, String> {
    let cpu = ep.cpu;
    tr.refusals.longest(cpu, ep.start, ep.end).ok_or_else(|| {
        format!(
            "no switch put idle or a normal task on CPU {cpu} while a real-time task was runnable there"
        )
    })
}

impl Rule for RtThrottling {
    fn cause(&self) -> Cause {
        Cause::RtThrottling
    }
    fn precedence(&self) -> u32 {
        20
    }

    /// Idle or lower work on the CPU of a real-time victim: what a throttled RT class runs.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        (item.bucket == Bucket::Idle || super::below_rt_victim(ctx, &item.bucket))
            .then_some(Claim::All)
    }

    fn evidence(&self, ctx: &Ctx<'_>) -> Vec<(Event, String)> {
        let Some(Ok(t)) = &ctx.throttle else {
            return Vec::new();
        };
        vec![(
            t.refused.clone(),
            format!(
                "the scheduler puts idle or a normal task on CPU {} while the real-time task {} is runnable there; no real-time task runs there for {}: the RT class is throttled",
                t.refused.cpu,
                ctx.task_ref(t.waiting),
                human_duration(t.stretch())
            ),
        )]
    }

    /// The victim is real-time; a switch put idle or a normal task on its CPU while an RT
    /// task (the victim or another) was runnable there ([`find`]); and the refusal fits a
    /// used-up runtime ([`budget`]), not a blip of microseconds.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if ctx.ep.victim.prio.is_some_and(rtwhy_model::is_deadline) {
            return Err(
                "the victim is SCHED_DEADLINE: its own runtime per period limits it, not sched_rt_runtime_us"
                    .to_string(),
            );
        }
        if !ctx.ep.victim.is_rt() {
            return Err("the victim is not a real-time task".to_string());
        }
        let Some(b) = budget(&ctx.tr.facts) else {
            return Err("sched_rt_runtime_us is -1: RT throttling is off".to_string());
        };
        let t = match &ctx.throttle {
            Some(Ok(t)) => t,
            Some(Err(why)) => return Err(why.clone()),
            None => return Err("no search for a refused RT class was made".to_string()),
        };
        if t.stretch() < b.min_off
            && t.held_before < b.min_held
            && !(b.fair_server && fair_server_refusal(t))
        {
            return Err(format!(
                "the real-time class was off CPU {} for only {} from {}, after holding it for {}: a used-up runtime leaves it off for {} or more, or follows {} or more of real-time work",
                ctx.ep.cpu,
                human_duration(t.stretch()),
                t.refused.ts,
                human_duration(t.held_before),
                human_duration(b.min_off),
                human_duration(b.min_held)
            ));
        }
        Ok(())
    }

    fn summary(&self, ctx: &Ctx<'_>, share: f64, confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let ns = ctx.sum(|b| {
            matches!(
                b,
                Bucket::Task {
                    outranks_victim: false,
                    ..
                } | Bucket::Idle
            )
        });
        let who = ctx
            .top_item(|b| {
                matches!(
                    b,
                    Bucket::Task {
                        outranks_victim: false,
                        ..
                    }
                )
            })
            .map(|i| format!("{}", i.bucket))
            .unwrap_or_else(|| "idle".to_string());
        let settings = match (ctx.tr.facts.rt_runtime_us, ctx.tr.facts.rt_period_us) {
            (Some(r), Some(p)) => {
                format!(" (sched_rt_runtime_us={r} of sched_rt_period_us={p})")
            }
            _ => String::new(),
        };
        let fair = ctx
            .tr
            .facts
            .kernel_version_number()
            .is_some_and(|v| v >= (6, 12));
        if matches!(ctx.throttle, Some(Ok(_)))
            && *confidence < Confidence::High
            && share >= super::MEDIUM_SHARE
        {
            *confidence = Confidence::High;
        }
        format!(
            "RT throttling on CPU {cpu}: {victim} was runnable, yet the scheduler ran lower-priority work for {} (largest: {who}): the CPU's real-time runtime for the period was used up{settings}{}",
            human_duration(ns),
            if fair { "; on this kernel (6.12 or later) the fair server also reserves time for normal tasks under RT load" } else { "" }
        )
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let facts = &ctx.tr.facts;
        let runtime = match (facts.rt_runtime_us, facts.rt_period_us) {
            (Some(r), Some(p)) => format!("sched_rt_runtime_us is {r} of a {p} us period"),
            _ => "sched_rt_runtime_us (default 950000 of a 1000000 us period)".to_string(),
        };
        vec![
            format!(
                "Find the real-time task that runs without sleeping on CPU {cpu} ({runtime}): a SCHED_FIFO/RR loop that never blocks uses up the RT runtime and every RT task on the CPU then waits for the rest of the period."
            ),
            format!(
                "Move competing real-time work off CPU {cpu} (taskset/cpusets) or make it sleep; stalld can boost starved tasks. Setting sched_rt_runtime_us=-1 removes the safety net: only with every RT task known to block."
            ),
        ]
    }

    /// The throttling of the CPU's real-time class: the task that used up the runtime ran
    /// before the window, the tasks in it only ran because of it.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        Some(format!("RT throttling on CPU {}", ctx.ep.cpu))
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(
            bucket,
            Bucket::Task {
                outranks_victim: false,
                ..
            } | Bucket::Idle
        )
    }
}
