//! `preemption`: a task of higher or equal priority held the CPU.

use rtwhy_model::{human_duration, BreakdownItem, Bucket, Cause, Confidence};

use super::migration::is_stopper;
use super::{Claim, Rule};
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};
use rtwhy_model::policy_of;

pub(crate) struct Preemption;

/// Whether a task that ran at `prio` may hold the CPU against the victim: it outranks or
/// equals it, or both are normal tasks, which CFS/EEVDF share by weight, not by rank.
/// Not when either priority was not recorded: nothing then says who outranks whom.
pub(crate) fn may_hold(prio: Option<i32>, victim_prio: Option<i32>) -> bool {
    match (prio, victim_prio) {
        (Some(p), Some(v)) => p <= v || (p >= 100 && v >= 100),
        _ => false,
    }
}

impl Rule for Preemption {
    fn cause(&self) -> Cause {
        Cause::Preemption
    }
    fn precedence(&self) -> u32 {
        60
    }

    /// A task or IRQ thread that may hold the CPU against the victim, and the migration
    /// thread.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        let victim = &ctx.ep.victim;
        let preempts = match &item.bucket {
            Bucket::IrqThread { thread, .. } => may_hold(thread.prio, victim.prio),
            Bucket::Task { comm, .. } if is_stopper(comm.as_bytes()) => true,
            Bucket::Task {
                outranks_victim,
                prio,
                ..
            } => *outranks_victim || (!victim.is_rt() && may_hold(Some(*prio), victim.prio)),
            _ => false,
        };
        preempts.then_some(Claim::All)
    }

    /// Another task ran on the victim's CPU in the window at a priority (a PI boost
    /// counts, except one the victim lent it: that holder runs for the victim) at least
    /// the victim's.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let victim = ctx.ep.victim.prio;
        let held = ctx.items.iter().any(|i| match &i.bucket {
            Bucket::Task { boost: Some(b), .. } if b.by_tid == ctx.ep.victim.tid => false,
            Bucket::Task { prio, .. } => may_hold(Some(*prio), victim),
            Bucket::IrqThread { thread, .. } => may_hold(thread.prio, victim),
            _ => false,
        });
        if held {
            Ok(())
        } else {
            Err(format!(
                "no task of the victim's priority or higher ran on CPU {}",
                ctx.ep.cpu
            ))
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let who = ctx
            .top_item(|b| {
                matches!(
                    b,
                    Bucket::Task {
                        outranks_victim: true,
                        ..
                    }
                )
            })
            .or_else(|| ctx.top_item(|b| matches!(b, Bucket::Task { .. })));
        match who {
            Some(i) => format!(
                "preemption on CPU {cpu}: {} held the CPU for {} while {victim} waited",
                i.bucket,
                human_duration(i.ns)
            ),
            None => format!("preemption on CPU {cpu}"),
        }
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let who = ctx.items.iter().find_map(|i| match &i.bucket {
            Bucket::Task {
                comm,
                prio,
                tid,
                outranks_victim: true,
                ..
            } => Some(rtwhy_model::TaskRef {
                tid: *tid,
                comm: *comm,
                prio: Some(*prio),
                boost: None,
            }),
            _ => None,
        });
        match who {
            // SCHED_FIFO runs equal priorities in turn: the victim waited its turn.
            Some(t) if t.prio == victim.prio => vec![format!(
                "{t} has the same priority as {} ({}) and ran first: equal SCHED_FIFO priorities run in turn, so the victim waits until it yields; raise the victim's priority above it (chrt -f -p <prio> {}), or move one of them to another CPU.",
                victim.comm,
                victim.policy(),
                victim.tid
            )],
            Some(t) => vec![format!(
                "{t} outranks {} ({}): lower its priority, raise the victim's (chrt -f -p <prio> {}), or move one of them to another CPU.",
                victim.comm,
                victim.policy(),
                victim.tid
            )],
            None => vec![format!(
                "Another task of equal or higher priority held CPU {cpu}: review priorities on that CPU."
            )],
        }
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Task { .. } | Bucket::IrqThread { .. })
    }

    /// A task that outranks or equals the timerlat thread ran before it; without the
    /// priorities, the task's part is refused (it may have kept the CPU in the kernel).
    /// The idle task preempts nobody.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        let Part::Thread {
            comm,
            pid,
            ns,
            prio,
            victim_prio,
            ..
        } = &period.part
        else {
            return Answer::Pass;
        };
        let cpu = period.cpu();
        match (victim_prio, prio) {
            _ if *pid == 0 => Answer::Pass,
            (Some(v), Some(o)) if o <= v => period.names(
                Cause::Preemption,
                *ns,
                super::confidence(period.share(*ns)),
                format!(
                    "{comm}:{pid} ({}) ran {} on CPU {cpu} while timerlat/{cpu} ({}) waited: it outranks or equals the measuring thread",
                    policy_of(*o),
                    us(*ns),
                    policy_of(*v)
                ),
            ),
            (Some(_), Some(_)) => Answer::Pass,
            _ => Answer::Refuses(format!(
                "{comm}:{pid} ran {} ({:.0} %) on CPU {cpu} between the timer IRQ and the timerlat thread; the priorities were not recorded (sched:sched_switch), so preemption cannot be told from a non-preemptible section",
                us(*ns),
                period.share(*ns) * 100.0
            )),
        }
    }
}
