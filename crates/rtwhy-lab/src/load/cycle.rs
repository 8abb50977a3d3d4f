//! A control loop that times its own cycle, as real-time applications do: `lab-cycle`
//! wakes at each period's start (absolute timer), computes `work` of run time, reads the
//! clock, and when the cycle's response (period start to work done) exceeds `budget`
//! writes it to the trace: `lab: cycle: response N us, budget B us (cycle K)`.
//!
//! The number covers the thread's own computing as well as whatever kept it from the
//! CPU: a higher-priority thread that preempts it in the middle of its work makes it
//! late after it already ran inside its own measurement. `rtwhy analyze --marker
//! 'cycle: response (?P<us>[0-9]+) us'` takes that number as the spike's latency.

use std::time::Duration;

use rtwhy_sys as sys;

use super::inversion::burn_running;
use super::{fifo_on, Load, Marks, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// What `lab-cycle` does.
#[derive(Debug, Clone, Copy)]
pub struct Cycle {
    /// Its CPU (not 0).
    pub cpu: u32,
    /// Its SCHED_FIFO priority.
    pub prio: i32,
    /// From one cycle's start to the next.
    pub period: Duration,
    /// Run time computed per cycle (time preempted does not count).
    pub work: Duration,
    /// Responses above this are written to the trace.
    pub budget: Duration,
}

/// Starts `lab-cycle` after `delay`, for `length`.
pub fn start(cfg: Cycle, delay: Duration, length: Duration, stop: Stop) -> Result<Load> {
    if length.is_zero() || length > MAX_LOAD || cfg.work.is_zero() || cfg.work * 2 > cfg.period {
        return Err(LabError::Refused(format!(
            "cycle: the load must last between 1 ms and {} s, and the work at most half the period",
            MAX_LOAD.as_secs()
        )));
    }
    let start = sys::monotonic_ns() + delay.as_nanos() as u64;
    let end = start + length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    load.spawn("lab-cycle", move || {
        fifo_on(cfg.cpu, cfg.prio, "cycle")?;
        let mut marks = Marks::open();
        marks.write(&format!(
            "cycle: FIFO {} on CPU {}, computes {} us every {} us, budget {} us\n",
            cfg.prio,
            cfg.cpu,
            cfg.work.as_micros(),
            cfg.period.as_micros(),
            cfg.budget.as_micros()
        ));
        let period = cfg.period.as_nanos() as u64;
        let budget = cfg.budget.as_nanos() as u64;
        let (mut cycles, mut over, mut worst) = (0u64, 0u64, 0u64);
        // The first period starts once the thread is ready: its start-up (locking
        // memory, raising its priority, under emulation tens of milliseconds) is not a
        // cycle it could have been late for.
        let now = sys::monotonic_ns();
        let mut release = start + now.saturating_sub(start) / period * period;
        loop {
            release += period;
            if release >= end || !stop.sleep_until(release) {
                break;
            }
            burn_running(cfg.work, &stop);
            let response = sys::monotonic_ns().saturating_sub(release);
            cycles += 1;
            worst = worst.max(response);
            if response > budget {
                over += 1;
                marks.write(&format!(
                    "cycle: response {} us, budget {} us (cycle {cycles})\n",
                    response / 1000,
                    budget / 1000
                ));
            }
            // A cycle that overran its period starts again at the next one due.
            let now = sys::monotonic_ns();
            if now > release + period {
                release += (now - release) / period * period;
            }
        }
        Ok(format!(
            "lab-cycle: SCHED_FIFO {} on CPU {}, {cycles} cycles of {} us work every {} us, {over} over the {} us budget, worst response {} us",
            cfg.prio,
            cfg.cpu,
            cfg.work.as_micros(),
            cfg.period.as_micros(),
            cfg.budget.as_micros(),
            worst / 1000
        ))
    })?;
    Ok(load)
}
