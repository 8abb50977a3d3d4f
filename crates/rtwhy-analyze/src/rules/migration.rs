//! `migration`: the victim waited for the stopper thread or to be moved between CPUs.

use rtwhy_model::{human_duration, BreakdownItem, Bucket, Cause, Confidence, Event, EventKind};

use super::{Claim, Rule};
use crate::ctx::{Ctx, Move};
use crate::period::{us, Answer, Part, PeriodCtx};
use crate::tracker::{Episode, Tracker};

pub(crate) struct Migration;

/// A wake-up's own choice of a CPU moves the task within microseconds of its
/// `sched_waking`, on the waker's CPU (select_task_rq, then set_task_cpu): a move from
/// that close is the wake-up placing the task, not a move it waited for.
const PLACEMENT_NS: u64 = 50_000;

/// The victim's move between CPUs in its window, if it waited for one: switched out
/// runnable on another CPU (to the stopper thread `migration/N`, or preempted and then
/// moved: its `sched_migrate_task`), or moved by a `sched_migrate_task` during its wait.
/// A wake-up that chose another CPU is not a move it waited for: it then waits on its
/// new CPU as any woken task does (and without a `sched_migrate_task` in the trace the
/// wake-up is taken for such a choice).
pub(crate) fn moved(tr: &Tracker, ep: &Episode) -> Option<Move> {
    let migrate = migrate_event(tr, ep);
    if let Some(p) = &ep.preempted_by {
        if p.cpu != ep.cpu {
            let to_stopper = matches!(&p.kind, EventKind::SchedSwitch { next_comm, .. } if is_stopper(next_comm.as_bytes()));
            // Preempted by other work and moved later: the wait before the move was
            // that work's, on a CPU the breakdown does not replay.
            let at = match (&migrate, to_stopper) {
                (Some(m), false) => m.ts,
                _ => p.ts,
            };
            return Some(Move {
                event: p.clone(),
                at,
            });
        }
    }
    let m = migrate?;
    if let Some(w) = &ep.wake {
        if m.cpu == w.event.cpu && m.ts.0.saturating_sub(w.ts.0) <= PLACEMENT_NS && m.ts >= w.ts {
            return None;
        }
    }
    Some(Move { at: m.ts, event: m })
}

/// The victim's first `sched_migrate_task` to another CPU in its window.
fn migrate_event(tr: &Tracker, ep: &Episode) -> Option<Event> {
    let mut first: Option<Event> = None;
    for cpu in 0..tr.history.cpu_count() as u32 {
        let q = tr.history.cpu(cpu);
        let i = tr.history.first_at(cpu, ep.start);
        for e in q.range(i..) {
            if e.ts > ep.end || first.as_ref().is_some_and(|f| e.ts >= f.ts) {
                break;
            }
            if let EventKind::SchedMigrateTask {
                pid,
                orig_cpu,
                dest_cpu,
                ..
            } = &e.kind
            {
                if *pid == ep.victim.tid && orig_cpu != dest_cpu {
                    first = Some(e.clone());
                    break;
                }
            }
        }
    }
    first
}

/// Whether a task is the per-CPU stopper thread.
pub(crate) use crate::refusals::is_stopper;

impl Rule for Migration {
    fn cause(&self) -> Cause {
        Cause::Migration
    }
    fn precedence(&self) -> u32 {
        10
    }

    /// The migration thread's work; and, once the victim moved, idle or lower work on its
    /// new CPU after it arrived: before that it waited on its old CPU, which the breakdown
    /// does not replay, so this CPU's work then is no one's.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        match &item.bucket {
            Bucket::Task { comm, .. } if is_stopper(comm.as_bytes()) => Some(Claim::All),
            b if matches!(b, Bucket::Idle) || super::below_rt_victim(ctx, b) => {
                let mv = ctx.moved.as_ref()?;
                let after = ctx
                    .replay
                    .segments
                    .iter()
                    .filter(|s| s.bucket == item.bucket && s.to > mv.at)
                    .map(|s| s.to.0 - s.from.max(mv.at).0)
                    .sum();
                Some(Claim::Only(after))
            }
            _ => None,
        }
    }

    fn evidence(&self, ctx: &Ctx<'_>) -> Vec<(Event, String)> {
        ctx.moved
            .iter()
            .map(|m| {
                (
                    m.event.clone(),
                    format!("{} changes CPUs", ctx.ep.victim.comm),
                )
            })
            .collect()
    }

    /// The victim was moved between CPUs while it waited (see [`moved`]), or
    /// `migration/N` ran on the victim's CPU while the victim waited.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if ctx.moved.is_some() {
            return Ok(());
        }
        let stopper = ctx.items.iter().any(|i| match &i.bucket {
            Bucket::Task { comm, .. } => is_stopper(comm.as_bytes()),
            _ => false,
        });
        if stopper {
            Ok(())
        } else {
            Err(format!(
                "the victim stayed on CPU {} and no migration/N thread ran there",
                ctx.ep.cpu
            ))
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let stopper = ctx.top_item(|b| match b {
            Bucket::Task { comm, .. } => is_stopper(comm.as_bytes()),
            _ => false,
        });
        let moved = ctx.moved.as_ref().map(|m| &m.event).map(|e| match &e.kind {
            EventKind::SchedMigrateTask {
                orig_cpu, dest_cpu, ..
            } => {
                format!("{victim} was moved from CPU {orig_cpu} to CPU {dest_cpu} while it waited")
            }
            EventKind::SchedSwitch { .. } => format!(
                "{victim} was switched out on CPU {} and ran again on CPU {cpu}",
                e.cpu
            ),
            _ => format!("{victim} was woken for another CPU and ran on CPU {cpu}"),
        });
        match (stopper, moved) {
            (Some(i), m) => format!(
                "migration on CPU {cpu}: the stopper thread {} held the CPU for {}{}",
                i.bucket,
                human_duration(i.ns),
                m.map(|m| format!("; {m}")).unwrap_or_default()
            ),
            (None, Some(m)) => format!("migration: {m}"),
            (None, None) => format!("migration on CPU {cpu}"),
        }
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let victim = &ctx.ep.victim;
        vec![
            format!(
                "{} waited for the stopper thread migration/N or to be moved between CPUs: pin it (taskset/sched_setaffinity once at start, not in the loop), avoid affinity changes and CPU hotplug while it runs, and keep stop_machine users (module loading, ftrace changes, CPU hotplug) away from production.",
                victim.comm
            ),
        ]
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Task { .. } | Bucket::Idle)
    }

    /// The stopper thread that held the CPU, else the move itself.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        let cpu = ctx.ep.cpu;
        match ctx
            .top_item(|b| matches!(b, Bucket::Task { comm, .. } if is_stopper(comm.as_bytes())))
        {
            Some(i) => Some(format!("{} on CPU {cpu}", ctx.who(&i.bucket)?)),
            None => Some(format!("a migration to CPU {cpu}")),
        }
    }

    /// The stopper thread `migration/N` held the CPU before the timerlat thread.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        match &period.part {
            Part::Thread { comm, pid, ns, .. } if *pid != 0 && is_stopper(comm.as_bytes()) => {
                period.names(
                    Cause::Migration,
                    *ns,
                    Confidence::High,
                    format!(
                        "the stopper thread {comm} held CPU {} for {}",
                        period.cpu(),
                        us(*ns)
                    ),
                )
            }
            _ => Answer::Pass,
        }
    }
}
