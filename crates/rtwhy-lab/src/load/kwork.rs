//! Long non-preemptible kernel work from a normal task.
//!
//! A SCHED_OTHER thread `lab-kwork` on the victim's CPU calls `poll()` with a zero
//! timeout over thousands of descriptors, again and again: the kernel visits every
//! descriptor in one pass, for hundreds of microseconds, without a scheduling point.
//! On a kernel without involuntary kernel preemption (preempt=none or voluntary) a
//! real-time task woken meanwhile on that CPU waits until the system call returns to
//! user space. (Reading `/proc/kallsyms` in large `read()` calls, which did this on
//! older kernels, returns one page per call on recent ones.)

use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rtwhy_sys as sys;

use super::{mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// Descriptors polled at most: enough for ~0.5 ms per call.
const MAX_FDS: u64 = 30_000;

/// Starts `lab-kwork` on `cpu`: after `delay`, for `length`.
pub fn start(cpu: u32, delay: Duration, length: Duration, stop: Stop) -> Result<Load> {
    if length.is_zero() || length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "kwork: the load must last between 1 ms and {} s",
            MAX_LOAD.as_secs()
        )));
    }
    // Three quarters of the open-files limit: the recorder in the same process needs
    // descriptors too.
    let limit = sys::raise_open_files_limit()
        .map_err(|e| LabError::Load(format!("kwork: open-files limit: {e}")))?;
    let want = (limit.saturating_mul(3) / 4).min(MAX_FDS);
    if want < 1000 {
        return Err(LabError::Refused(format!(
            "kwork: the open-files limit ({limit}) is too low for a long poll()"
        )));
    }
    let (sock, _peer) =
        UnixStream::pair().map_err(|e| LabError::Load(format!("kwork: socketpair: {e}")))?;
    let mut clones = Vec::new();
    for _ in 0..want {
        clones.push(
            sock.try_clone()
                .map_err(|e| LabError::Load(format!("kwork: dup: {e}")))?,
        );
    }
    let start = sys::monotonic_ns() + delay.as_nanos() as u64;
    let end = start + length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    load.spawn("lab-kwork", move || {
        let _peer = _peer;
        pin(cpu, "kwork")?;
        if !stop.sleep_until(start) {
            return Ok("lab-kwork: stopped before it started".into());
        }
        let fds: Vec<_> = clones.iter().map(|c| c.as_fd()).collect();
        mark(&format!(
            "kwork: SCHED_OTHER on CPU {cpu} polls {} descriptors per poll() for {} ms\n",
            fds.len(),
            length.as_millis()
        ));
        let (mut calls, mut longest) = (0u64, 0u64);
        while sys::monotonic_ns() < end && !stop.requested() {
            let t = sys::monotonic_ns();
            sys::poll_now(&fds).map_err(|e| LabError::Load(format!("kwork: poll: {e}")))?;
            longest = longest.max(sys::monotonic_ns() - t);
            calls += 1;
        }
        mark(&format!("kwork: done, {calls} poll() calls\n"));
        Ok(format!(
            "lab-kwork: SCHED_OTHER on CPU {cpu}, {calls} poll() calls over {} descriptors, longest {} us",
            fds.len(),
            longest / 1000
        ))
    })?;
    Ok(load)
}
