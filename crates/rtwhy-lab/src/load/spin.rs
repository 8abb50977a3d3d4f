//! CPU hogs: a SCHED_FIFO busy loop (RT throttling) and a periodic higher-priority
//! spinner (preemption).

use std::time::Duration;

use rtwhy_sys as sys;

use super::{fifo_on, mark, spin_until, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// A SCHED_FIFO `prio` thread `lab-spin` on `cpu` that, after `delay`, spins without a
/// pause for `length`.
pub fn busy(cpu: u32, prio: i32, delay: Duration, length: Duration, stop: Stop) -> Result<Load> {
    check_length(length)?;
    let start = sys::monotonic_ns() + delay.as_nanos() as u64;
    let end = start + length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    load.spawn("lab-spin", move || {
        fifo_on(cpu, prio, "spin")?;
        if !stop.sleep_until(start) {
            return Ok("spin: stopped before it started".into());
        }
        mark(&format!(
            "spin: FIFO {prio} busy loop on CPU {cpu} for {} ms\n",
            length.as_millis()
        ));
        spin_until(end, &stop);
        let ran = sys::monotonic_ns().saturating_sub(start);
        mark("spin: done\n");
        Ok(format!(
            "lab-spin: SCHED_FIFO {prio} busy loop on CPU {cpu} for {} ms",
            ran / 1_000_000
        ))
    })?;
    Ok(load)
}

/// A SCHED_FIFO `prio` thread `lab-spin` on `cpu` that, after `delay` and for `length`,
/// wakes every `period` (absolute timer) and spins `burst`.
pub fn periodic(
    cpu: u32,
    prio: i32,
    burst: Duration,
    period: Duration,
    delay: Duration,
    length: Duration,
    stop: Stop,
) -> Result<Load> {
    check_length(length)?;
    if burst >= period {
        return Err(LabError::Refused(
            "spin: the burst must be shorter than the period".into(),
        ));
    }
    let start = sys::monotonic_ns() + delay.as_nanos() as u64;
    let end = start + length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    load.spawn("lab-spin", move || {
        fifo_on(cpu, prio, "spin")?;
        mark(&format!(
            "spin: FIFO {prio} spins {} us every {} us on CPU {cpu} for {} ms\n",
            burst.as_micros(),
            period.as_micros(),
            length.as_millis()
        ));
        let mut next = start;
        let mut bursts = 0u64;
        loop {
            next += period.as_nanos() as u64;
            if next >= end || !stop.sleep_until(next) {
                break;
            }
            spin_until(next + burst.as_nanos() as u64, &stop);
            bursts += 1;
        }
        mark("spin: done\n");
        Ok(format!(
            "lab-spin: SCHED_FIFO {prio} on CPU {cpu}, {bursts} bursts of {} us every {} us",
            burst.as_micros(),
            period.as_micros()
        ))
    })?;
    Ok(load)
}

fn check_length(length: Duration) -> Result<()> {
    if length.is_zero() || length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "spin: the load must last between 1 ms and {} s",
            MAX_LOAD.as_secs()
        )));
    }
    Ok(())
}
