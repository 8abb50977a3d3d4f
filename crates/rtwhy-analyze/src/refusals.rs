//! The RT class's refusals on every CPU, followed event by event for `rt_throttling`: a
//! module of its own that the tracker feeds and the rule reads, depending on neither.

use std::collections::VecDeque;

use rtwhy_model::{Event, EventKind, Nanos};

use crate::history::slot;

/// The RT class refused on a CPU: the switch, an RT task it left runnable, how long the
/// RT class had held the CPU without a break before it, and when an RT task ran there
/// again.
#[derive(Debug, Clone)]
pub(crate) struct Throttle {
    pub refused: Event,
    pub waiting: i32,
    pub held_before: u64,
    pub until: Nanos,
}

impl Throttle {
    pub(crate) fn stretch(&self) -> u64 {
        self.until.0.saturating_sub(self.refused.ts.0)
    }
}

/// The stopper thread (`migration/N`) runs in the stop class, above RT and never
/// throttled.
pub(crate) fn is_stopper(comm: &[u8]) -> bool {
    comm.starts_with(b"migration/")
}

/// The refusals of the RT class on every CPU, followed event by event: a switch to idle or
/// to a task of priority 100 or more while a real-time task was runnable on that CPU
/// (switched out with `R` there, or woken for it, and neither run nor moved since), up to
/// the next time a real-time task ran there. Kept for the history's horizon;
/// `rules::rt_throttling::find` picks a spike's from them (it once scanned up to 50000
/// events back for each spike, 18 % of an analysis with a spike every few milliseconds).
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
    /// Follows `e` (`is_rt`: whether a thread id is a real-time task other than the
    /// stopper, as last seen); forgets what ended more than `horizon` before it.
    pub(crate) fn observe(&mut self, e: &Event, is_rt: impl Fn(i32) -> bool, horizon: u64) {
        let cpu = slot(e.cpu);
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
                // A SCHED_DEADLINE task switched out runnable has used its own runtime:
                // its bandwidth server at work, not the RT class refused.
                if *prev_pid > 0
                    && rtwhy_model::is_fifo_rr(*prev_prio)
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
                    && rtwhy_model::is_fifo_rr(*next_prio)
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
                if *target_cpu == e.cpu as i32 && rtwhy_model::is_fifo_rr(*prio) {
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
                if is_rt(e.pid) {
                    c.rt_runs(e.ts);
                }
            }
            _ => {}
        }
    }

    /// Events of `cpu` were dropped: who waits and who runs there is not known any more
    /// (the refusals that ended before stay).
    pub(crate) fn dropped(&mut self, cpu: u32) {
        if let Some(c) = self.cpus.get_mut(slot(cpu)) {
            let closed = std::mem::take(&mut c.closed);
            *c = CpuRefusals {
                closed,
                ..CpuRefusals::new()
            };
        }
    }

    /// The longest refusal on `cpu` that overlaps `start..end`, as the events before `end`
    /// show it: one that ended later, or is still under way, ends at `end`.
    pub(crate) fn longest(&self, cpu: u32, start: Nanos, end: Nanos) -> Option<Throttle> {
        let c = self.cpus.get(slot(cpu))?;
        let open = c
            .open
            .iter()
            .map(|(refused, waiting, held_before)| Throttle {
                refused: refused.clone(),
                waiting: *waiting,
                held_before: *held_before,
                until: end,
            });
        let mut best: Option<Throttle> = None;
        for t in c.closed.iter().cloned().chain(open) {
            if t.refused.ts >= end {
                continue;
            }
            let t = Throttle {
                until: t.until.min(end),
                ..t
            };
            if t.until > start && best.as_ref().is_none_or(|b| b.stretch() < t.stretch()) {
                best = Some(t);
            }
        }
        best
    }
}
