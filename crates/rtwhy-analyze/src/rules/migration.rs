//! `migration`: the victim waited for the stopper thread or to be moved between CPUs.

use rtwhy_model::{Bucket, Cause, Event, EventKind};

use super::Rule;
use crate::diagnose::Ctx;
use crate::tracker::{Episode, Tracker};

pub(crate) struct Migration;

/// The event showing the victim changed CPUs in its window: its `sched_migrate_task`,
/// a wake-up for another CPU than the one it ran on, or a preemption on another CPU.
pub(crate) fn moved(tr: &Tracker, ep: &Episode) -> Option<Event> {
    if let Some(w) = &ep.wake {
        if w.target_cpu >= 0 && w.target_cpu as u32 != ep.cpu {
            return Some(w.event.clone());
        }
    }
    if let Some(p) = &ep.preempted_by {
        if p.cpu != ep.cpu {
            return Some(p.clone());
        }
    }
    for cpu in 0..tr.history.cpu_count() as u32 {
        let q = tr.history.cpu(cpu);
        let i = tr.history.first_at(cpu, ep.start);
        for e in q.range(i..) {
            if e.ts > ep.end {
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
                    return Some(e.clone());
                }
            }
        }
    }
    None
}

/// Whether a task is the per-CPU stopper thread.
pub(crate) fn is_stopper(comm: &[u8]) -> bool {
    comm.starts_with(b"migration/")
}

impl Rule for Migration {
    fn cause(&self) -> Cause {
        Cause::Migration
    }

    /// The victim changed CPUs in the window (see [`moved`]), or `migration/N` ran on
    /// the victim's CPU while the victim waited.
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
}
