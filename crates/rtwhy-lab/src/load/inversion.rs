//! Priority inversion and its bounded variant with priority inheritance.
//!
//! Three SCHED_FIFO threads on one CPU (priority set at creation, pinned after):
//! - `lab-low` (FIFO 10) takes the mutex at t and computes until it has run `critical` on
//!   its CPU;
//! - `lab-high` (FIFO 80), the victim, wakes at t + 1 ms and locks the same mutex: it
//!   blocks;
//! - `lab-med` (FIFO 50) wakes at t + 1.5 ms (or, holder preempted first, at
//!   t + 0.5 ms: it already runs when `lab-high` blocks, and `lab-high`'s switch goes
//!   straight to it) and spins `medium` of wall time.
//!
//! The times are when each thread's timer wakes it; each also waits for the step
//! before its own (`lab-high` asks only once `lab-low` holds the mutex, `lab-med` spins
//! only once `lab-high` asked, or `lab-low` holds it when the holder is preempted
//! first), and `lab-low` computes until `lab-high` has asked before it counts its
//! `critical` time. So the order holds where timers fire milliseconds late (a guest
//! under emulation, whose isolated CPU's timers fire on another CPU); a step that does
//! not come within the round is marked and the round skipped.
//!
//! With a plain mutex `lab-med` preempts `lab-low`, so `lab-high` waits for `lab-med`:
//! an unbounded inversion. With priority inheritance `lab-low` runs at FIFO 80 while
//! `lab-high` waits, `lab-med` cannot preempt it, and the wait is bounded by the rest of
//! the critical section. Iterations start 200 ms apart.
//!
//! Nested: a fourth thread, `lab-chain` (FIFO 60, above `lab-med`), wakes at t + 0.5 ms,
//! takes a second mutex (the outer one) and then asks for `lab-low`'s: it blocks, holding
//! the outer one, which is the mutex `lab-high` then asks for. `lab-high` waits for
//! `lab-chain`, which waits for `lab-low`, which `lab-med` preempts: the task that keeps
//! `lab-high` waiting is at the end of a chain of two locks.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rtwhy_sys::{self as sys, LabMutex, LockKind};

use super::{fifo_on, mark, pin, spin_until, Load, Marks, Stop};
use crate::{LabError, Result};

/// What the three threads do.
#[derive(Debug, Clone, Copy)]
pub struct Inversion {
    /// Plain or priority-inheritance mutex.
    pub kind: LockKind,
    /// The CPU all three share (not 0).
    pub cpu: u32,
    /// Rounds, 200 ms apart (1-10).
    pub iterations: u32,
    /// How long `lab-low` runs holding the lock, time preempted not counted (at most
    /// 20 ms).
    pub critical: Duration,
    /// Wall time `lab-med` spins (at most 100 ms).
    pub medium: Duration,
    /// `lab-med` starts before `lab-high` wakes: the holder is preempted first.
    pub medium_first: bool,
    /// `lab-high` waits for `lab-chain`, which waits for `lab-low`'s mutex.
    pub nested: bool,
    /// `lab-low` is a normal task (SCHED_OTHER, nice 0), not FIFO 10.
    pub normal_holder: bool,
}

const GAP_NS: u64 = 200_000_000;
const HIGH_AT_NS: u64 = 1_000_000;
const MEDIUM_AT_NS: u64 = 1_500_000;
const MEDIUM_FIRST_AT_NS: u64 = 500_000;
const CHAIN_AT_NS: u64 = 500_000;
/// How long into its round a thread waits for the step before its own.
const STEP_WAIT_NS: u64 = 100_000_000;

/// How far each round has got: each counter holds the round number plus one once its
/// step of that round is done.
#[derive(Debug, Default)]
struct Steps {
    /// `lab-low` holds the mutex.
    low_holds: AtomicU32,
    /// `lab-chain` holds the outer mutex and asks for `lab-low`'s.
    chain_waits: AtomicU32,
    /// `lab-high` asks for its mutex.
    high_asks: AtomicU32,
    /// `lab-med` spins.
    med_spins: AtomicU32,
}

impl Steps {
    fn done(step: &AtomicU32, round: u32) {
        step.store(round + 1, Ordering::Release);
    }

    fn reached(step: &AtomicU32, round: u32) -> bool {
        step.load(Ordering::Acquire) > round
    }
}

/// Sleeps in 50 us steps until every one of `steps` has reached `round`: false when the
/// deadline or a stop came first.
fn await_steps(steps: &[&AtomicU32], round: u32, deadline_ns: u64, stop: &Stop) -> bool {
    loop {
        if steps.iter().all(|s| Steps::reached(s, round)) {
            return true;
        }
        let now = sys::monotonic_ns();
        if now >= deadline_ns || stop.requested() {
            return false;
        }
        sys::sleep_until(now + 50_000);
    }
}

/// Starts the three threads; they end after the last iteration.
pub fn start(cfg: Inversion, stop: Stop) -> Result<Load> {
    if cfg.cpu == 0 {
        return Err(LabError::Refused(
            "inversion: no SCHED_FIFO load on CPU 0; choose another --cpu".into(),
        ));
    }
    if !(1..=10).contains(&cfg.iterations)
        || cfg.critical.is_zero()
        || cfg.critical > Duration::from_millis(20)
        || cfg.medium.is_zero()
        || cfg.medium > Duration::from_millis(100)
    {
        return Err(LabError::Refused(
            "inversion: iterations 1-10, critical section up to 20 ms, medium spin up to 100 ms"
                .into(),
        ));
    }
    let lock = Arc::new(LabMutex::new(cfg.kind));
    let outer = Arc::new(LabMutex::new(cfg.kind));
    let base = sys::monotonic_ns() + 100_000_000;
    let kind = match cfg.kind {
        LockKind::Plain => "plain",
        LockKind::PriorityInheritance => "PRIO_INHERIT",
    };
    mark(&format!(
        "inversion: {kind} mutex, low {}, medium FIFO 50{}, {}high FIFO 80 on CPU {}, {} iterations, critical section {} us, medium spins {} ms\n",
        if cfg.normal_holder { "SCHED_OTHER" } else { "FIFO 10" },
        if cfg.medium_first { " (starts before high wakes)" } else { "" },
        if cfg.nested { "chain FIFO 60 (holds the mutex high wants, waits for low's), " } else { "" },
        cfg.cpu,
        cfg.iterations,
        cfg.critical.as_micros(),
        cfg.medium.as_millis()
    ));
    let end = base + u64::from(cfg.iterations) * GAP_NS;
    let mut load = Load::new(stop.clone(), base..end);
    let steps = Arc::new(Steps::default());
    let round = move |i: u32| base + u64::from(i) * GAP_NS;
    {
        let (lock, stop, steps) = (lock.clone(), stop.clone(), steps.clone());
        load.spawn("lab-low", move || {
            if cfg.normal_holder {
                pin(cfg.cpu, "inversion")?;
            } else {
                fifo_on(cfg.cpu, 10, "inversion")?;
            }
            for i in 0..cfg.iterations {
                if !stop.sleep_until(round(i)) {
                    break;
                }
                lock.lock();
                mark(&format!("inversion: low took the lock (iteration {i})\n"));
                Steps::done(&steps.low_holds, i);
                // Held, computing, until the waiters have asked (a timer late by
                // milliseconds must not find the mutex free), then `critical` more.
                let waiters: &[&AtomicU32] = if cfg.nested {
                    &[&steps.chain_waits, &steps.high_asks]
                } else {
                    &[&steps.high_asks]
                };
                let deadline = round(i) + STEP_WAIT_NS;
                while !waiters.iter().all(|s| Steps::reached(s, i))
                    && sys::monotonic_ns() < deadline
                    && !stop.requested()
                {
                    spin_until(sys::monotonic_ns() + 50_000, &stop);
                }
                burn_running(cfg.critical, &stop);
                mark(&format!(
                    "inversion: low releases the lock (iteration {i})\n"
                ));
                lock.unlock();
            }
            Ok(format!(
                "lab-low: {}, held a {kind} mutex {} us per round",
                if cfg.normal_holder {
                    "SCHED_OTHER nice 0"
                } else {
                    "FIFO 10"
                },
                cfg.critical.as_micros()
            ))
        })?;
    }
    if cfg.nested {
        let (lock, outer, stop, steps) = (lock.clone(), outer.clone(), stop.clone(), steps.clone());
        load.spawn("lab-chain", move || {
            fifo_on(cfg.cpu, 60, "inversion")?;
            for i in 0..cfg.iterations {
                if !stop.sleep_until(round(i) + CHAIN_AT_NS) {
                    break;
                }
                if !await_steps(&[&steps.low_holds], i, round(i) + STEP_WAIT_NS, &stop) {
                    mark(&format!("inversion: chain skips iteration {i}: low does not hold the lock\n"));
                    continue;
                }
                outer.lock();
                mark(&format!(
                    "inversion: chain took the outer lock and wants low's (iteration {i})\n"
                ));
                Steps::done(&steps.chain_waits, i);
                lock.lock();
                mark(&format!(
                    "inversion: chain got low's lock, releases both (iteration {i})\n"
                ));
                lock.unlock();
                outer.unlock();
            }
            Ok(format!(
                "lab-chain: FIFO 60, held the {kind} mutex lab-high wants while waiting for lab-low's"
            ))
        })?;
    }
    {
        let (lock, stop) = (
            if cfg.nested {
                outer.clone()
            } else {
                lock.clone()
            },
            stop.clone(),
        );
        let steps = steps.clone();
        load.spawn("lab-high", move || {
            fifo_on(cfg.cpu, 80, "inversion")?;
            let mut marks = Marks::open();
            let mut worst = 0u64;
            let mut before: Vec<&AtomicU32> = vec![&steps.low_holds];
            if cfg.nested {
                before.push(&steps.chain_waits);
            }
            if cfg.medium_first {
                before.push(&steps.med_spins);
            }
            for i in 0..cfg.iterations {
                if !stop.sleep_until(round(i) + HIGH_AT_NS) {
                    break;
                }
                if !await_steps(&before, i, round(i) + STEP_WAIT_NS, &stop) {
                    mark(&format!(
                        "inversion: high skips iteration {i}: the steps before it did not come\n"
                    ));
                    // lab-low waits for high's ask until the round's deadline.
                    Steps::done(&steps.high_asks, i);
                    continue;
                }
                let at = sys::monotonic_ns();
                mark(&format!("inversion: high wants the lock (iteration {i})\n"));
                Steps::done(&steps.high_asks, i);
                lock.lock();
                // Its own measure of the wait, from before it asked to after it got
                // the lock, as an application times its lock: the number a user
                // compares rtwhy's spike with (`--marker 'after (?P<us>[0-9]+) us'`).
                let waited = sys::monotonic_ns().saturating_sub(at);
                worst = worst.max(waited);
                marks.write(&format!(
                    "inversion: high got the lock after {} us (iteration {i})\n",
                    waited / 1000
                ));
                lock.unlock();
            }
            Ok(format!(
                "lab-high: FIFO 80, longest wait for the lock {} us",
                worst / 1000
            ))
        })?;
    }
    let medium_at = if cfg.medium_first {
        MEDIUM_FIRST_AT_NS
    } else {
        MEDIUM_AT_NS
    };
    load.spawn("lab-med", move || {
        fifo_on(cfg.cpu, 50, "inversion")?;
        let before = if cfg.medium_first {
            &steps.low_holds
        } else {
            &steps.high_asks
        };
        for i in 0..cfg.iterations {
            if !stop.sleep_until(round(i) + medium_at) {
                break;
            }
            if !await_steps(&[before], i, round(i) + STEP_WAIT_NS, &stop) {
                mark(&format!(
                    "inversion: medium skips iteration {i}: the step before it did not come\n"
                ));
                continue;
            }
            let at = sys::monotonic_ns();
            mark(&format!(
                "inversion: medium spins {} ms (iteration {i})\n",
                cfg.medium.as_millis()
            ));
            Steps::done(&steps.med_spins, i);
            spin_until(at + cfg.medium.as_nanos() as u64, &stop);
        }
        mark("inversion: done\n");
        Ok(format!(
            "lab-med: FIFO 50, spun {} ms per round",
            cfg.medium.as_millis()
        ))
    })?;
    Ok(load)
}

/// Computes until the thread has run `run` on its CPU: time off the CPU (preempted, or a
/// virtual CPU stopped) does not count, so the critical section really is held while a
/// preempting thread runs.
///
/// Run time is counted on the monotonic clock, the one the trace is recorded with, read
/// back to back: a step between two reads longer than `OFF_CPU_NS` was spent elsewhere.
/// Not the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`): in the RT guest on a busy
/// host it advances at a fraction of the wall time (18 ms of it took 80-520 ms of the
/// holder's run with no other task on the CPU), which stretches the holder's run past the
/// preemption the scenario is to show; the wall time the thread ran does not depend on
/// that.
pub(crate) fn burn_running(run: Duration, stop: &Stop) {
    count_running(run, stop, sys::monotonic_ns);
}

/// The longest step between two clock reads that still counts as running: well above a
/// read's cost (a system call under emulation) and an interrupt's, well below a
/// preemption by `lab-med` (milliseconds).
const OFF_CPU_NS: u64 = 500_000;

fn count_running(run: Duration, stop: &Stop, mut clock: impl FnMut() -> u64) {
    let mut left = u64::try_from(run.as_nanos()).unwrap_or(u64::MAX);
    let mut last = clock();
    let mut n = 0u32;
    while left > 0 {
        let now = clock();
        let step = now.saturating_sub(last);
        if step <= OFF_CPU_NS {
            left = left.saturating_sub(step);
        }
        last = now;
        n = n.wrapping_add(1);
        // The flag is shared: read it now and then, not on every turn.
        if n % 1024 == 0 && stop.requested() {
            return;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A clock that moves 10 us per read, and once, at read `jump_at`, `jump` at a time.
    fn scripted(jump_at: u32, jump: u64) -> impl FnMut() -> u64 {
        let (mut now, mut reads) = (0u64, 0u32);
        move || {
            reads += 1;
            now += if reads == jump_at { jump } else { 10_000 };
            now
        }
    }

    fn finish(run: Duration, clock: impl FnMut() -> u64) -> u64 {
        let stop = Stop::new(Arc::new(AtomicBool::new(false)));
        let mut last = 0;
        let mut clock = clock;
        count_running(run, &stop, || {
            last = clock();
            last
        });
        last
    }

    #[test]
    fn time_preempted_does_not_count() {
        // 1 ms of run in 10 us steps from the first read (at 10 us).
        assert_eq!(finish(Duration::from_millis(1), scripted(0, 0)), 1_010_000);
        // Preempted for 30 ms half-way: the section ends 30 ms later, not at once.
        assert_eq!(
            finish(Duration::from_millis(1), scripted(50, 30_000_000)),
            31_010_000
        );
        // A step at the limit is still run time (an interrupt, a slow clock read).
        assert_eq!(
            finish(Duration::from_millis(1), scripted(50, OFF_CPU_NS)),
            1_010_000
        );
    }

    #[test]
    fn a_stop_ends_the_section() {
        let stop = Stop::new(Arc::new(AtomicBool::new(true)));
        let mut reads = 0u64;
        // The clock stands still: only the stop can end it.
        count_running(Duration::from_millis(1), &stop, || {
            reads += 1;
            0
        });
        assert!(reads <= 1025, "{reads} reads");
    }
}
