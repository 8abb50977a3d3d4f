//! `rt_throttling`: RT bandwidth control (or the fair server) kept the RT class off the
//! victim's CPU.

use rtwhy_model::{human_duration, Cause, EventKind, Nanos, SystemFacts};

use super::Rule;
use crate::ctx::{Ctx, Throttle};
use crate::tracker::{Episode, Tracker};

pub(crate) struct RtThrottling;

/// How far back (in events on the CPU) the search for the switch that refused the RT
/// class goes.
const MAX_BACK: usize = 50_000;

/// What a used-up runtime looks like: the RT class stays off the CPU until the period
/// ends (`period - runtime`, 50 ms of the default 1 s, in the steady state; half of it
/// allows for a throttle met part-way), or, when the fair server (6.12) hands the CPU
/// to normal tasks only while they have work, the RT class had held the CPU for half
/// the runtime before. `None` when the facts say nothing can throttle.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub min_off: u64,
    pub min_held: u64,
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
    })
}

fn is_rt(tr: &Tracker, pid: i32) -> bool {
    pid > 0
        && tr
            .tasks
            .get(&pid)
            .is_some_and(|t| rtwhy_model::is_rt(t.prio) && !is_stopper(t.comm.as_bytes()))
}

/// The stopper thread runs in the stop class, above RT and never throttled.
fn is_stopper(comm: &[u8]) -> bool {
    super::migration::is_stopper(comm)
}

/// The longest refusal of the RT class on the victim's CPU that overlaps the spike: a
/// switch to idle or to a task of priority 100 or more while a real-time task was
/// runnable on that CPU (switched out with `R` there, or woken for it, and neither run
/// nor moved since), up to the next time a real-time task ran there.
pub(crate) fn find(tr: &Tracker, ep: &Episode) -> Result<Throttle, String> {
    let cpu = ep.cpu;
    let q = tr.history.cpu(cpu);
    let i_start = tr.history.first_at(cpu, ep.start);
    let i_end = tr.history.first_at(cpu, ep.end);
    let from = i_start.saturating_sub(MAX_BACK);
    let mut waiting: Vec<i32> = Vec::new();
    // Since when the RT class has held the CPU without idle or a normal task.
    let mut rt_since: Option<Nanos> = None;
    let mut open: Option<(usize, i32, u64)> = None;
    let mut best: Option<Throttle> = None;
    // Who the events say is current: only a change needs the task's priority.
    let mut curr: i32 = -1;
    let close =
        |open: &mut Option<(usize, i32, u64)>, until: Nanos, best: &mut Option<Throttle>| {
            if let Some((i, waiting, held_before)) = open.take() {
                if until <= ep.start {
                    return;
                }
                if let Some(refused) = q.get(i) {
                    let t = Throttle {
                        refused: refused.clone(),
                        waiting,
                        held_before,
                        until,
                    };
                    if best.as_ref().is_none_or(|b| b.stretch() < t.stretch()) {
                        *best = Some(t);
                    }
                }
            }
        };
    for (n, e) in q.range(from..i_end).enumerate() {
        let i = from + n;
        match &e.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
            } => {
                waiting.retain(|p| p != next_pid && p != prev_pid);
                if *prev_pid > 0
                    && rtwhy_model::is_rt(*prev_prio)
                    && prev_state.is_runnable()
                    && !is_stopper(prev_comm.as_bytes())
                {
                    waiting.push(*prev_pid);
                    if waiting.len() > 64 {
                        waiting.remove(0);
                    }
                }
                curr = *next_pid;
                let lower = *next_pid == 0 || *next_prio >= 100;
                if *next_pid > 0
                    && rtwhy_model::is_rt(*next_prio)
                    && !is_stopper(next_comm.as_bytes())
                {
                    close(&mut open, e.ts, &mut best);
                    if rt_since.is_none() {
                        rt_since = Some(e.ts);
                    }
                } else if lower {
                    if open.is_none() {
                        if let Some(&w) = waiting.first() {
                            let held = rt_since.map_or(0, |s| e.ts.0.saturating_sub(s.0));
                            open = Some((i, w, held));
                        }
                    }
                    rt_since = None;
                }
            }
            EventKind::SchedWaking {
                pid,
                prio,
                target_cpu,
                ..
            }
            | EventKind::SchedWakeup {
                pid,
                prio,
                target_cpu,
                ..
            } => {
                if *target_cpu == cpu as i32 && rtwhy_model::is_rt(*prio) {
                    if !waiting.contains(pid) {
                        waiting.push(*pid);
                    }
                } else {
                    waiting.retain(|p| p != pid);
                }
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, .. } if *orig_cpu == cpu as i32 => {
                waiting.retain(|p| p != pid);
            }
            _ if e.pid != curr => {
                curr = e.pid;
                // A real-time task's own event: it runs (its switch-in may be lost).
                if is_rt(tr, e.pid) {
                    close(&mut open, e.ts, &mut best);
                    if rt_since.is_none() {
                        rt_since = Some(e.ts);
                    }
                }
            }
            _ => {}
        }
    }
    // Still refused when the victim, a real-time task, finally ran.
    close(&mut open, ep.end, &mut best);
    best.ok_or_else(|| {
        format!(
            "no switch put idle or a normal task on CPU {cpu} while a real-time task was runnable there"
        )
    })
}

impl Rule for RtThrottling {
    fn cause(&self) -> Cause {
        Cause::RtThrottling
    }

    /// The victim is real-time; a switch put idle or a normal task on its CPU while an RT
    /// task (the victim or another) was runnable there ([`find`]); and the refusal fits a
    /// used-up runtime ([`budget`]), not a blip of microseconds.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
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
        if t.stretch() < b.min_off && t.held_before < b.min_held {
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
}
