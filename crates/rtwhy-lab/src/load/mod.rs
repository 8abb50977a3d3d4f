//! The loads: threads of the calling process, each bounded in time, each ending early
//! when asked to stop. A load is started with its parameters and returns a [`Load`]
//! whose [`Load::wait`] joins its threads and says what they did.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rtwhy_sys as sys;

use crate::{LabError, Result};

pub mod blockio;
pub mod cycle;
pub mod datagrams;
pub mod diskreads;
pub mod flood;
pub mod inversion;
pub mod kwork;
pub mod lookups;
pub mod spin;
pub mod stream;

/// Longest any single load may run.
pub const MAX_LOAD: Duration = Duration::from_secs(10);

/// A stop request shared by a load's threads (and, in `rtwhy`, set by Ctrl-C).
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A stop request wrapping `flag` (for example one a signal handler sets).
    pub fn new(flag: Arc<AtomicBool>) -> Stop {
        Stop(flag)
    }

    /// Asks every thread holding this to end.
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sleeps until `deadline_ns` (CLOCK_MONOTONIC) in steps of at most 100 ms (a stop
    /// is seen within that); false if a stop came first.
    pub fn sleep_until(&self, deadline_ns: u64) -> bool {
        loop {
            if self.requested() {
                return false;
            }
            let now = sys::monotonic_ns();
            if now >= deadline_ns {
                return true;
            }
            sys::sleep_until(deadline_ns.min(now + 100_000_000));
        }
    }
}

/// A running load.
#[derive(Debug)]
pub struct Load {
    threads: Vec<JoinHandle<Result<String>>>,
    stop: Stop,
    runs: Range<u64>,
}

impl Load {
    /// A load that will do its work during `runs` (CLOCK_MONOTONIC ns).
    pub(crate) fn new(stop: Stop, runs: Range<u64>) -> Load {
        Load {
            threads: Vec::new(),
            stop,
            runs,
        }
    }

    /// When the load does its work, CLOCK_MONOTONIC ns: from the end of its start
    /// delay to its planned end (a stop ends it sooner). Latency outside this stretch
    /// is the machine's own, not the load's.
    pub fn runs(&self) -> Range<u64> {
        self.runs.clone()
    }

    /// Starts one thread of the load, named `name` (the `comm` seen in traces).
    pub(crate) fn spawn(
        &mut self,
        name: &str,
        body: impl FnOnce() -> Result<String> + Send + 'static,
    ) -> Result<()> {
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(body)
            .map_err(|e| LabError::Load(format!("cannot start thread {name}: {e}")))?;
        self.threads.push(handle);
        Ok(())
    }

    /// Asks the load to end now.
    pub fn stop(&self) {
        self.stop.request();
    }

    /// Waits for every thread; one line per thread saying what it did, or the first
    /// error.
    pub fn wait(mut self) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        let mut first_err = None;
        for t in std::mem::take(&mut self.threads) {
            match t.join() {
                Ok(Ok(line)) => lines.push(line),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(LabError::Load("a load thread panicked".into()));
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(lines),
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        // A load dropped without `wait` must not outlive its owner's intent.
        if !self.threads.is_empty() {
            self.stop.request();
        }
    }
}

/// Raises the calling thread to SCHED_FIFO `prio`, then pins it to `cpu` (in that
/// order: see [`sys::set_affinity`]). Refuses CPU 0, which keeps the machine usable.
pub(crate) fn fifo_on(cpu: u32, prio: i32, what: &str) -> Result<()> {
    if cpu == 0 {
        return Err(LabError::Refused(format!(
            "{what}: no SCHED_FIFO load on CPU 0 (it keeps the machine usable); choose another --cpu"
        )));
    }
    sys::set_fifo(prio)
        .map_err(|e| LabError::Load(format!("{what}: SCHED_FIFO {prio} refused: {e}")))?;
    pin(cpu, what)
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin(cpu: u32, what: &str) -> Result<()> {
    sys::set_affinity(&[cpu])
        .map_err(|e| LabError::Load(format!("{what}: cannot pin to CPU {cpu}: {e}")))
}

/// Burns CPU until CLOCK_MONOTONIC reaches `until_ns` or a stop comes.
pub(crate) fn spin_until(until_ns: u64, stop: &Stop) {
    let mut n = 0u32;
    loop {
        if sys::monotonic_ns() >= until_ns {
            return;
        }
        n = n.wrapping_add(1);
        // The flag is shared: read it now and then, not on every turn.
        if n % 1024 == 0 && stop.requested() {
            return;
        }
        std::hint::spin_loop();
    }
}

/// Writes `lab: <text>` to the trace markers (`$RTWHY_LAB_MARKER`, one path or several
/// separated by `:`, else the top-level `trace_marker`, which rtwhy's recording
/// instances copy where the kernel has `options/copy_trace_marker`), so a person reading
/// the trace sees what the load did and when, and a recorder watching for the marker
/// sees it. Failure is ignored: tracing may be off.
pub fn mark(text: &str) {
    Marks::open().write(text);
}

/// The trace markers [`mark`] writes to, opened once: a thread that writes a marker the
/// moment its own measurement ends (its number ending there) must not first spend an
/// `open` on it, which under emulation takes as long as the latencies it reports.
pub(crate) struct Marks(Vec<std::fs::File>);

impl Marks {
    pub(crate) fn open() -> Marks {
        let paths = std::env::var("RTWHY_LAB_MARKER")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "/sys/kernel/tracing/trace_marker".into());
        Marks(
            paths
                .split(':')
                .filter(|p| !p.is_empty())
                .filter_map(|p| std::fs::OpenOptions::new().write(true).open(p).ok())
                .collect(),
        )
    }

    /// Writes `lab: <text>`, as [`mark`] does.
    pub(crate) fn write(&mut self, text: &str) {
        use std::io::Write;
        let line = format!("lab: {text}");
        for f in &mut self.0 {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// `len` bytes of `raw` (which holds `len + align`) starting at an `align`-byte boundary:
/// the buffer O_DIRECT wants, aligned to the device's logical block size.
pub(crate) fn aligned(raw: &mut [u8], align: usize, len: usize) -> &mut [u8] {
    let skip = raw.as_ptr().align_offset(align).min(align);
    raw.get_mut(skip..skip + len).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_refuses_cpu0() {
        let err = fifo_on(0, 50, "spin").unwrap_err();
        assert!(matches!(err, LabError::Refused(_)), "{err}");
    }

    #[test]
    fn stop_cuts_a_sleep_short() {
        let stop = Stop::default();
        stop.request();
        let t = sys::monotonic_ns();
        assert!(!stop.sleep_until(t + 5_000_000_000));
        assert!(sys::monotonic_ns() - t < 1_000_000_000);
    }
}
