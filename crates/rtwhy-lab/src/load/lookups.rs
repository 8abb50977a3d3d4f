//! File-system requests answered by another machine: names looked up on a network or
//! host-shared file system (9p in a VM), so its transport interrupts often.
//!
//! `depth` threads (`lab-lookup`), SCHED_OTHER on `cpu`, each look up a name that does
//! not exist in `dir` (a new name each time, so no cache answers it), again and again.
//! Every lookup is a request to the server and its answer an interrupt of the
//! transport's device, on whatever CPU that interrupt is routed to; on PREEMPT_RT the
//! interrupt's thread (`irq/N-name`) then runs there too. Nothing is written.

use std::path::PathBuf;
use std::time::Duration;

use rtwhy_sys as sys;

use super::{mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// What the lookups do.
#[derive(Debug, Clone)]
pub struct Lookups {
    /// CPU of the looking-up threads (not the victim's).
    pub cpu: u32,
    /// A directory of the file system whose transport's interrupts are wanted.
    pub dir: PathBuf,
    /// Lookups in flight (1-64 threads).
    pub depth: u32,
    /// Wait before looking up.
    pub delay: Duration,
    /// How long to look up.
    pub length: Duration,
}

/// Starts the lookups.
pub fn start(cfg: Lookups, stop: Stop) -> Result<Load> {
    if !(1..=64).contains(&cfg.depth) || cfg.length.is_zero() || cfg.length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "lookups: 1-64 lookups in flight, at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    if !cfg.dir.is_dir() {
        return Err(LabError::Refused(format!(
            "lookups: {} is not a directory",
            cfg.dir.display()
        )));
    }
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    let pid = std::process::id();
    for i in 0..cfg.depth {
        let (dir, stop) = (cfg.dir.clone(), stop.clone());
        load.spawn("lab-lookup", move || {
            pin(cfg.cpu, "lookups")?;
            if !stop.sleep_until(start) {
                return Ok("lab-lookup: stopped before it started".into());
            }
            let mut n = 0u64;
            while sys::monotonic_ns() < end && !stop.requested() {
                let name = dir.join(format!(".rtwhy-lab-lookup-{pid}-{i}-{n}"));
                match std::fs::symlink_metadata(&name) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Ok(_) => {}
                    Err(e) => {
                        return Err(LabError::Load(format!("lookups: {}: {e}", name.display())))
                    }
                }
                n += 1;
            }
            Ok(format!("lab-lookup: {n} lookups"))
        })?;
    }
    mark(&format!(
        "lookups: {} lookups of missing names in flight from CPU {} in {} for {} ms\n",
        cfg.depth,
        cfg.cpu,
        cfg.dir.display(),
        cfg.length.as_millis()
    ));
    Ok(load)
}
