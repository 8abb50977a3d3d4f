//! `rt_throttling`: RT bandwidth control (or the fair server) kept the RT class off the
//! victim's CPU.

use std::collections::VecDeque;

use rtwhy_model::{human_duration, Cause, Event, EventKind, Nanos, SystemFacts};

use super::Rule;
use crate::ctx::{Ctx, Throttle};
use crate::history::MAX_CPUS;
use crate::intmap::IntMap;
use crate::tracker::{Episode, Task, Tracker};

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

fn is_rt(tasks: &IntMap<i32, Task>, pid: i32) -> bool {
    pid > 0
        && tasks
            .get(&pid)
            .is_some_and(|t| rtwhy_model::is_rt(t.prio) && !is_stopper(t.comm.as_bytes()))
}

/// The stopper thread runs in the stop class, above RT and never throttled.
fn is_stopper(comm: &[u8]) -> bool {
    super::migration::is_stopper(comm)
}

/// The refusals of the RT class on every CPU, followed event by event: a switch to idle or
/// to a task of priority 100 or more while a real-time task was runnable on that CPU
/// (switched out with `R` there, or woken for it, and neither run nor moved since), up to
/// the next time a real-time task ran there. Kept for the history's horizon; [`find`]
/// picks a spike's from them (it once scanned up to 50000 events back for each spike,
/// 18 % of an analysis with a spike every few milliseconds).
#[derive(Default)]
pub(crate) struct Refusals {
    cpus: Vec<CpuRefusals>,
}

#[derive(Default)]
struct CpuRefusals {
    /// Real-time tasks runnable on the CPU and not run since, with when they became so.
    waiting: Vec<(i32, Nanos)>,
    /// Since when the RT class has held the CPU without idle or a normal task.
    rt_since: Option<Nanos>,
    /// Who the events say is current (-1: not known).
    curr: i32,
    /// The refusal under way: the switch, the task it kept waiting, how long the RT class
    /// had held the CPU before.
    open: Option<(Event, i32, u64)>,
    /// Refusals that ended, oldest first.
    closed: VecDeque<Throttle>,
}

/// Most real-time tasks remembered as waiting on one CPU.
const MAX_WAITING: usize = 64;

impl CpuRefusals {
    fn new() -> CpuRefusals {
        CpuRefusals {
            curr: -1,
            ..CpuRefusals::default()
        }
    }

    fn close(&mut self, until: Nanos) {
        if let Some((refused, waiting, held_before)) = self.open.take() {
            self.closed.push_back(Throttle {
                refused,
                waiting,
                held_before,
                until,
            });
        }
    }

    /// A real-time task runs on the CPU.
    fn rt_runs(&mut self, at: Nanos) {
        self.close(at);
        if self.rt_since.is_none() {
            self.rt_since = Some(at);
        }
    }
}

impl Refusals {
    /// Follows `e` (`tasks`: every task's name and priority as last seen); forgets what
    /// ended more than `horizon` before it.
    pub(crate) fn observe(&mut self, e: &Event, tasks: &IntMap<i32, Task>, horizon: u64) {
        let cpu = (e.cpu as usize).min(MAX_CPUS - 1);
        if cpu >= self.cpus.len() {
            self.cpus.resize_with(cpu + 1, CpuRefusals::new);
        }
        let Some(c) = self.cpus.get_mut(cpu) else {
            return;
        };
        let oldest = e.ts.0.saturating_sub(horizon);
        while c.closed.front().is_some_and(|t| t.until.0 < oldest) {
            c.closed.pop_front();
        }
        c.waiting.retain(|(_, since)| since.0 >= oldest);
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
                c.waiting.retain(|(p, _)| p != next_pid && p != prev_pid);
                if *prev_pid > 0
                    && rtwhy_model::is_rt(*prev_prio)
                    && prev_state.is_runnable()
                    && !is_stopper(prev_comm.as_bytes())
                {
                    c.waiting.push((*prev_pid, e.ts));
                    if c.waiting.len() > MAX_WAITING {
                        c.waiting.remove(0);
                    }
                }
                c.curr = *next_pid;
                let lower = *next_pid == 0 || *next_prio >= 100;
                if *next_pid > 0
                    && rtwhy_model::is_rt(*next_prio)
                    && !is_stopper(next_comm.as_bytes())
                {
                    c.rt_runs(e.ts);
                } else if lower {
                    if c.open.is_none() {
                        if let Some(&(w, _)) = c.waiting.first() {
                            let held = c.rt_since.map_or(0, |s| e.ts.0.saturating_sub(s.0));
                            c.open = Some((e.clone(), w, held));
                        }
                    }
                    c.rt_since = None;
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
                if *target_cpu == e.cpu as i32 && rtwhy_model::is_rt(*prio) {
                    if !c.waiting.iter().any(|(p, _)| p == pid) {
                        c.waiting.push((*pid, e.ts));
                    }
                } else {
                    c.waiting.retain(|(p, _)| p != pid);
                }
            }
            EventKind::SchedMigrateTask { pid, orig_cpu, .. } if *orig_cpu == e.cpu as i32 => {
                c.waiting.retain(|(p, _)| p != pid);
            }
            _ if e.pid != c.curr => {
                c.curr = e.pid;
                // A real-time task's own event: it runs (its switch-in may be lost).
                if is_rt(tasks, e.pid) {
                    c.rt_runs(e.ts);
                }
            }
            _ => {}
        }
    }

    /// The CPU's events were dropped before `at`: who waits and who runs there is not
    /// known any more.
    pub(crate) fn dropped(&mut self, cpu: u32) {
        if let Some(c) = self.cpus.get_mut(cpu as usize) {
            let closed = std::mem::take(&mut c.closed);
            *c = CpuRefusals {
                closed,
                ..CpuRefusals::new()
            };
        }
    }
}

/// The longest refusal of the RT class on the victim's CPU that overlaps the spike, as
/// the events before the spike's end show it (one still under way then ends there).
pub(crate) fn find(tr: &Tracker, ep: &Episode) -> Result<Throttle, String> {
    let cpu = ep.cpu;
    let mut best: Option<Throttle> = None;
    if let Some(c) = tr.refusals.cpus.get(cpu as usize) {
        let open = c
            .open
            .iter()
            .map(|(refused, waiting, held_before)| Throttle {
                refused: refused.clone(),
                waiting: *waiting,
                held_before: *held_before,
                until: ep.end,
            });
        for t in c.closed.iter().cloned().chain(open) {
            if t.refused.ts >= ep.end {
                continue;
            }
            let t = Throttle {
                until: t.until.min(ep.end),
                ..t
            };
            if t.until > ep.start && best.as_ref().is_none_or(|b| b.stretch() < t.stretch()) {
                best = Some(t);
            }
        }
    }
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
