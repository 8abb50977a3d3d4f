//! The built-in cyclic probe: what `rtwhy record` measures when no command is given.
//!
//! Like cyclictest's measurement threads: one thread per CPU, pinned there, SCHED_FIFO,
//! sleeping on an absolute `CLOCK_MONOTONIC` timer every interval; the time from the
//! timer's expiry to the moment the thread runs again is its wake-up latency. Latencies
//! above the threshold are queued as [`ProbeBreach`]es for the recorder.
//!
//! ```no_run
//! use rtwhy_record::probe::{Probe, ProbeConfig};
//! let probe = Probe::start(&ProbeConfig {
//!     cpus: vec![1],
//!     interval: std::time::Duration::from_millis(1),
//!     priority: 90,
//!     threshold_ns: 100_000,
//! })?;
//! std::thread::sleep(std::time::Duration::from_secs(1));
//! for breach in probe.breaches() {
//!     println!("cpu {} late by {} ns", breach.cpu, breach.latency_ns);
//! }
//! let stats = probe.stop();
//! # Ok::<(), rtwhy_record::RecordError>(())
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sys::{self, monotonic_ns, sleep_until};
use crate::{RecordError, Result};

/// Breaches kept between two [`Probe::breaches`] calls; more are counted as dropped.
pub const BREACH_QUEUE_LEN: usize = 1024;

/// The probe threads' stack: they only sleep, measure and count.
const STACK_SIZE: usize = 256 * 1024;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeConfig {
    /// One probe thread per CPU listed.
    pub cpus: Vec<u32>,
    /// Time between two timer expiries.
    pub interval: Duration,
    /// SCHED_FIFO priority of the probe threads (1-99; cyclictest's usual is 90).
    pub priority: i32,
    /// Latencies above this are breaches, in nanoseconds.
    pub threshold_ns: u64,
}

/// One wake-up later than the threshold. Times are `CLOCK_MONOTONIC` nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeBreach {
    /// The probe thread.
    pub tid: i32,
    /// Its CPU.
    pub cpu: u32,
    /// When its timer expired (when it should have run).
    pub expiry_ns: u64,
    /// When it ran.
    pub now_ns: u64,
    /// `now_ns - expiry_ns`.
    pub latency_ns: u64,
}

/// One probe thread's figures so far (as cyclictest prints them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ThreadStats {
    /// The probe thread.
    pub tid: i32,
    /// Its CPU.
    pub cpu: u32,
    /// Wake-ups measured.
    pub loops: u64,
    /// Smallest latency, ns (0 before the first wake-up).
    pub min_ns: u64,
    /// Mean latency, ns.
    pub avg_ns: u64,
    /// Largest latency, ns.
    pub max_ns: u64,
    /// Wake-ups above the threshold.
    pub over_threshold: u64,
}

/// Running probe threads; dropping the probe stops them.
#[derive(Debug)]
pub struct Probe {
    threads: Vec<ProbeThread>,
    shared: Arc<Shared>,
    memory_locked: bool,
}

#[derive(Debug)]
struct ProbeThread {
    tid: i32,
    cpu: u32,
    counters: Arc<Counters>,
    handle: Option<JoinHandle<()>>,
}

/// What the probe threads and the controlling thread share.
#[derive(Debug)]
struct Shared {
    stop: AtomicBool,
    breaches: Mutex<VecDeque<ProbeBreach>>,
    dropped: AtomicU64,
}

/// One thread's figures, written by that thread only.
#[derive(Debug)]
struct Counters {
    loops: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    sum: AtomicU64,
    over: AtomicU64,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            loops: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            sum: AtomicU64::new(0),
            over: AtomicU64::new(0),
        }
    }

    fn record(&self, latency: u64, over: bool) {
        // Single writer: plain loads and stores, no read-modify-write needed.
        let r = Ordering::Relaxed;
        self.loops.store(self.loops.load(r) + 1, r);
        self.sum.store(self.sum.load(r).saturating_add(latency), r);
        if latency < self.min.load(r) {
            self.min.store(latency, r);
        }
        if latency > self.max.load(r) {
            self.max.store(latency, r);
        }
        if over {
            self.over.store(self.over.load(r) + 1, r);
        }
    }
}

impl Probe {
    /// Starts one thread per CPU of `cfg.cpus`. When this returns, every thread runs
    /// SCHED_FIFO on its CPU; if one cannot, all are stopped and the error says why
    /// ([`RecordError::Privilege`] when SCHED_FIFO is refused).
    ///
    /// Locks the process's memory (`mlockall`) once, best effort: see
    /// [`Probe::memory_locked`].
    pub fn start(cfg: &ProbeConfig) -> Result<Probe> {
        validate(cfg)?;
        let memory_locked = rtwhy_sys::host::lock_memory();
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            breaches: Mutex::new(VecDeque::with_capacity(BREACH_QUEUE_LEN)),
            dropped: AtomicU64::new(0),
        });
        let interval_ns = u64::try_from(cfg.interval.as_nanos()).unwrap_or(u64::MAX);
        let mut probe = Probe {
            threads: Vec::with_capacity(cfg.cpus.len()),
            shared,
            memory_locked,
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        for &cpu in &cfg.cpus {
            let counters = Arc::new(Counters::new());
            let setup = Setup {
                cpu,
                priority: cfg.priority,
                interval_ns,
                threshold_ns: cfg.threshold_ns,
                counters: Arc::clone(&counters),
                shared: Arc::clone(&probe.shared),
                ready: ready_tx.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("rtwhy-probe/{cpu}"))
                .stack_size(STACK_SIZE)
                .spawn(move || setup.run())
                .map_err(|e| RecordError::Other(format!("cannot start probe thread: {e}")))?;
            probe.threads.push(ProbeThread {
                tid: 0,
                cpu,
                counters,
                handle: Some(handle),
            });
        }
        drop(ready_tx);
        for _ in 0..probe.threads.len() {
            let Ok((cpu, ready)) = ready_rx.recv() else {
                return Err(RecordError::Other(
                    "a probe thread ended during setup".into(),
                ));
            };
            let tid = ready?;
            if let Some(t) = probe.threads.iter_mut().find(|t| t.cpu == cpu) {
                t.tid = tid;
            }
        }
        Ok(probe)
    }

    /// Kernel thread ids of the probe threads, in the order of the configured CPUs.
    pub fn tids(&self) -> Vec<i32> {
        self.threads.iter().map(|t| t.tid).collect()
    }

    /// False when `mlockall` was refused: page faults may then add to the latencies
    /// measured, and the caller should say so.
    pub fn memory_locked(&self) -> bool {
        self.memory_locked
    }

    /// The breaches found since the last call, oldest first.
    pub fn breaches(&self) -> Vec<ProbeBreach> {
        // Allocated outside the lock so a probe thread never waits on an allocation.
        let fresh = VecDeque::with_capacity(BREACH_QUEUE_LEN);
        let taken = match self.shared.breaches.lock() {
            Ok(mut q) => std::mem::replace(&mut *q, fresh),
            Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), fresh),
        };
        taken.into()
    }

    /// Breaches lost so far because the queue was full (nobody called
    /// [`Probe::breaches`] for [`BREACH_QUEUE_LEN`] breaches) or busy being drained.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Every thread's figures so far, in the order of the configured CPUs.
    pub fn stats(&self) -> Vec<ThreadStats> {
        self.threads
            .iter()
            .map(|t| {
                let r = Ordering::Relaxed;
                let c = &t.counters;
                let loops = c.loops.load(r);
                ThreadStats {
                    tid: t.tid,
                    cpu: t.cpu,
                    loops,
                    min_ns: if loops == 0 { 0 } else { c.min.load(r) },
                    avg_ns: c.sum.load(r).checked_div(loops).unwrap_or(0),
                    max_ns: c.max.load(r),
                    over_threshold: c.over.load(r),
                }
            })
            .collect()
    }

    /// Stops and joins the threads (within about one interval) and returns their final
    /// figures.
    pub fn stop(mut self) -> Vec<ThreadStats> {
        self.shutdown();
        self.stats()
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in &mut self.threads {
            if let Some(handle) = t.handle.take() {
                // A probe thread does not panic; if one did, its figures stay valid.
                let _ = handle.join();
            }
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn validate(cfg: &ProbeConfig) -> Result<()> {
    let invalid = |why: String| Err(RecordError::Other(format!("probe: {why}")));
    if cfg.cpus.is_empty() {
        return invalid("no CPU to probe".into());
    }
    let mut sorted = cfg.cpus.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != cfg.cpus.len() {
        return invalid("a CPU is listed twice".into());
    }
    if let Some(cpu) = cfg
        .cpus
        .iter()
        .find(|&&c| c as usize >= libc::CPU_SETSIZE as usize)
    {
        return invalid(format!("CPU {cpu} is out of range"));
    }
    if cfg.interval.is_zero() {
        return invalid("the interval must not be zero".into());
    }
    if !(1..=99).contains(&cfg.priority) {
        return invalid(format!(
            "SCHED_FIFO priority {} is not within 1-99",
            cfg.priority
        ));
    }
    Ok(())
}

/// What one probe thread needs; `run` is its body.
struct Setup {
    cpu: u32,
    priority: i32,
    interval_ns: u64,
    threshold_ns: u64,
    counters: Arc<Counters>,
    shared: Arc<Shared>,
    ready: mpsc::Sender<(u32, Result<i32>)>,
}

impl Setup {
    fn run(self) {
        let ready = self.prepare();
        let tid = ready.as_ref().ok().copied();
        if self.ready.send((self.cpu, ready)).is_err() {
            return;
        }
        if let Some(tid) = tid {
            self.measure(tid);
        }
    }

    /// Raises the thread to SCHED_FIFO, then pins it: in that order, so a CPU
    /// monopolised by a lower RT priority cannot starve the pinned thread forever.
    fn prepare(&self) -> Result<i32> {
        let tid = sys::gettid();
        if let Err(err) = sys::set_fifo(self.priority) {
            let msg = format!(
                "probe on CPU {}: SCHED_FIFO priority {} refused: {err}",
                self.cpu, self.priority
            );
            return Err(match err.raw_os_error() {
                Some(libc::EPERM) => RecordError::Privilege(msg),
                _ => RecordError::Other(msg),
            });
        }
        if let Err(err) = sys::set_affinity(&[self.cpu]) {
            return Err(RecordError::Other(format!(
                "probe: cannot pin a thread to CPU {}: {err}",
                self.cpu
            )));
        }
        Ok(tid)
    }

    fn measure(&self, tid: i32) {
        let mut next = monotonic_ns().saturating_add(self.interval_ns);
        while !self.shared.stop.load(Ordering::Relaxed) {
            sleep_until(next);
            let now = monotonic_ns();
            let latency = now.saturating_sub(next);
            let over = rtwhy_model::breaches(latency, self.threshold_ns);
            self.counters.record(latency, over);
            if over {
                self.queue(ProbeBreach {
                    tid,
                    cpu: self.cpu,
                    expiry_ns: next,
                    now_ns: now,
                    latency_ns: latency,
                });
            }
            // Like cyclictest: a wake-up later than a whole interval skips the expiries
            // missed rather than measuring them as back-to-back late wake-ups.
            next = next.saturating_add(self.interval_ns);
            while next <= now {
                next = next.saturating_add(self.interval_ns);
            }
        }
    }

    /// Queues without waiting and without allocating: the queue was allocated with
    /// room for `BREACH_QUEUE_LEN`, and a busy or full queue counts a drop.
    fn queue(&self, breach: ProbeBreach) {
        match self.shared.breaches.try_lock() {
            Ok(mut q) if q.len() < BREACH_QUEUE_LEN => q.push_back(breach),
            _ => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ProbeConfig {
        ProbeConfig {
            cpus: vec![0],
            interval: Duration::from_millis(1),
            priority: 90,
            threshold_ns: 100_000,
        }
    }

    #[test]
    fn bad_configs_are_refused_before_any_thread_starts() {
        let bad = [
            ProbeConfig {
                cpus: vec![],
                ..cfg()
            },
            ProbeConfig {
                cpus: vec![1, 1],
                ..cfg()
            },
            ProbeConfig {
                cpus: vec![100_000],
                ..cfg()
            },
            ProbeConfig {
                interval: Duration::ZERO,
                ..cfg()
            },
            ProbeConfig {
                priority: 0,
                ..cfg()
            },
            ProbeConfig {
                priority: 100,
                ..cfg()
            },
        ];
        for c in bad {
            assert!(matches!(validate(&c), Err(RecordError::Other(_))), "{c:?}");
        }
        assert!(validate(&cfg()).is_ok());
    }

    #[test]
    fn counters_keep_min_max_and_mean() {
        let c = Counters::new();
        c.record(30, false);
        c.record(10, false);
        c.record(200, true);
        let r = Ordering::Relaxed;
        assert_eq!(c.loops.load(r), 3);
        assert_eq!(c.min.load(r), 10);
        assert_eq!(c.max.load(r), 200);
        assert_eq!(c.sum.load(r), 240);
        assert_eq!(c.over.load(r), 1);
    }
}
