//! The kernel's timerlat tracer as `rtwhy record`'s probe, where the kernel has it.
//!
//! As `rtla timerlat` does: the tracer's per-CPU kthreads (`timerlat/N`) sleep on a
//! periodic hrtimer and stamp two samples per period, the IRQ latency (in the timer's
//! handler) and the thread latency (when the kthread runs). The samples go into every
//! instance whose `current_tracer` is `timerlat`: rtwhy's flight instance (so each
//! capture carries them, with the `osnoise:*` interference events, for the timerlat
//! analysis) and its watch instance (streamed, to find the thread samples over the
//! threshold).
//!
//! The tracer's settings under `osnoise/` are global, not per instance: every file
//! changed is read first and written back by [`OsnoiseSettings::restore`] (or on drop).

use std::path::{Path, PathBuf};

use rtwhy_decode::osnoise::osnoise_record;
use rtwhy_model::{BreachRecord, Comm, Event, Nanos, OsnoiseKind, TimerlatContext};

use crate::error::{RecordError, Result};
use crate::probe::ThreadStats;
use crate::tracefs::Tracefs;

/// Which probe measures when `rtwhy record` runs no command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeChoice {
    /// The timerlat tracer where the kernel offers it, else rtwhy's own.
    Auto,
    /// The timerlat tracer, or an error.
    Timerlat,
    /// rtwhy's own cyclic probe threads.
    Rtwhy,
}

/// Whether this kernel lists the timerlat tracer and its `osnoise/` settings.
pub fn available(tracefs: &Tracefs) -> bool {
    let root = tracefs.root();
    std::fs::read_to_string(root.join("available_tracers"))
        .map(|s| s.split_whitespace().any(|t| t == "timerlat"))
        .unwrap_or(false)
        && root.join("osnoise").join("timerlat_period_us").is_file()
}

/// How the tracer is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatConfig {
    /// CPUs the timerlat kthreads run on (`osnoise/cpus`).
    pub cpus: Vec<u32>,
    /// `osnoise/timerlat_period_us`.
    pub period_us: u64,
    /// SCHED_FIFO priority given to the `timerlat/N` kthreads (the kernel starts them
    /// at 95; rtla's `-P f:N` sets them the same way).
    pub priority: i32,
}

/// The global `osnoise/` files as they were before rtwhy wrote them.
#[derive(Debug)]
pub struct OsnoiseSettings {
    saved: Vec<(PathBuf, String)>,
}

impl OsnoiseSettings {
    /// Saves, then sets the timerlat settings for `cfg`: the CPUs and period, and no
    /// stop condition, stack or tracer-side threshold (a stop would turn off every
    /// instance, the flight recorder's too; rtwhy decides what is a breach itself).
    pub fn apply(tracefs: &Tracefs, cfg: &TimerlatConfig) -> Result<OsnoiseSettings> {
        let dir = tracefs.root().join("osnoise");
        let cpus = cfg
            .cpus
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let wanted = [
            ("cpus", cpus),
            ("timerlat_period_us", cfg.period_us.to_string()),
            ("stop_tracing_us", "0".to_string()),
            ("stop_tracing_total_us", "0".to_string()),
            ("print_stack", "0".to_string()),
        ];
        let mut settings = OsnoiseSettings { saved: Vec::new() };
        for (name, value) in wanted {
            let path = dir.join(name);
            if !path.is_file() {
                continue; // print_stack is newer than the tracer
            }
            let old = crate::tracefs::read_text(&path)?.trim().to_string();
            if old == value {
                continue;
            }
            // Saved before the write: a write that half-worked is undone too.
            settings.saved.push((path.clone(), old));
            write(&path, &value)?;
        }
        Ok(settings)
    }

    /// Writes every saved value back; the first failure is returned, the rest still tried.
    pub fn restore(mut self) -> Result<()> {
        self.restore_all()
    }

    fn restore_all(&mut self) -> Result<()> {
        let mut first = Ok(());
        for (path, old) in self.saved.drain(..).rev() {
            // An empty osnoise/cpus reads back as nothing: "all CPUs" is written as such.
            let value = if old.is_empty() {
                "\n".to_string()
            } else {
                old
            };
            if let Err(e) = write(&path, &value) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl Drop for OsnoiseSettings {
    fn drop(&mut self) {
        let _ = self.restore_all();
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value)
        .map_err(|e| RecordError::Other(format!("writing {value:?} to {}: {e}", path.display())))
}

/// Gives the running `timerlat/N` kthreads of `cpus` SCHED_FIFO `priority`; returns how
/// many were set. The kernel starts new kthreads (at its default priority) whenever the
/// tracer restarts, so this is called again after each re-arm.
pub fn set_kthread_priority(proc: &Path, cpus: &[u32], priority: i32) -> usize {
    let mut done = 0;
    for pid in timerlat_kthreads(proc, cpus) {
        if rtwhy_sys::set_task_fifo(pid, priority).is_ok() {
            done += 1;
        }
    }
    done
}

/// Pids of the `timerlat/N` kthreads whose N is one of `cpus`.
fn timerlat_kthreads(proc: &Path, cpus: &[u32]) -> Vec<i32> {
    std::fs::read_dir(proc)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let e = e.ok()?;
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            let cpu: u32 = comm.trim_end().strip_prefix("timerlat/")?.parse().ok()?;
            cpus.contains(&cpu).then_some(pid)
        })
        .collect()
}

/// Per-CPU figures from the thread samples.
#[derive(Debug, Clone, Copy, Default)]
struct CpuFigures {
    tid: i32,
    loops: u64,
    min: u64,
    max: u64,
    sum: u64,
    over: u64,
}

/// Finds the timerlat thread samples over the threshold in a stream of events, and
/// keeps cyclictest-like figures per CPU.
#[derive(Debug)]
pub struct TimerlatDetector {
    threshold_ns: u64,
    cpus: Vec<(u32, CpuFigures)>,
    unreadable: u64,
    wakeups: crate::wakeups::Wakeups,
}

impl TimerlatDetector {
    /// A detector for breaches over `threshold_ns` on `cpus`.
    pub fn new(threshold_ns: u64, cpus: &[u32]) -> TimerlatDetector {
        TimerlatDetector {
            threshold_ns,
            cpus: cpus.iter().map(|&c| (c, CpuFigures::default())).collect(),
            unreadable: 0,
            wakeups: crate::wakeups::Wakeups::default(),
        }
    }

    /// Every thread sample so far, per kthread and CPU.
    pub fn wakeups(&self) -> &crate::wakeups::Wakeups {
        &self.wakeups
    }

    /// Samples that could not be read (a malformed record).
    pub fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// Takes one event; a breach when it is a thread sample over the threshold.
    pub fn push(&mut self, ev: &Event) -> Option<BreachRecord> {
        let rec = match osnoise_record(ev)? {
            Ok(r) => r,
            Err(_) => {
                self.unreadable += 1;
                return None;
            }
        };
        let OsnoiseKind::TimerlatSample {
            context: TimerlatContext::Thread,
            latency_ns,
            ..
        } = rec.kind
        else {
            return None;
        };
        let over = rtwhy_model::breaches(latency_ns, self.threshold_ns);
        self.wakeups
            .add(ev.pid, ev.cpu, &format!("timerlat/{}", ev.cpu), latency_ns);
        if let Some((_, f)) = self.cpus.iter_mut().find(|(c, _)| *c == ev.cpu) {
            f.tid = ev.pid;
            f.min = if f.loops == 0 {
                latency_ns
            } else {
                f.min.min(latency_ns)
            };
            f.loops += 1;
            f.max = f.max.max(latency_ns);
            f.sum = f.sum.saturating_add(latency_ns);
            f.over += u64::from(over);
        }
        if !over {
            return None;
        }
        let ts = ev.ts.0;
        Some(BreachRecord {
            tid: ev.pid,
            comm: Comm::new(&format!("timerlat/{}", ev.cpu)),
            cpu: ev.cpu,
            prio: None,
            latency: Nanos(latency_ns),
            threshold: Some(Nanos(self.threshold_ns)),
            expiry: Some(Nanos(ts.saturating_sub(latency_ns))),
            waking: None,
            // The sample is stamped by the kthread once it runs: its switch-in was
            // just before.
            switch_in: Nanos(ts),
            waker_tid: None,
            prev_tid: None,
            prev_comm: None,
            rt_throttled: None,
            detector: Some("timerlat".into()),
            stack: Vec::new(),
            timer_fired: None,
            timer_stack: Vec::new(),
        })
    }

    /// The figures per CPU, as the built-in probe reports them.
    pub fn stats(&self) -> Vec<ThreadStats> {
        self.cpus
            .iter()
            .map(|(cpu, f)| ThreadStats {
                tid: f.tid,
                cpu: *cpu,
                loops: f.loops,
                min_ns: f.min,
                avg_ns: f.sum.checked_div(f.loops).unwrap_or(0),
                max_ns: f.max,
                over_threshold: f.over,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{EventKind, FieldValue, GenericEvent};

    fn sample(ts: u64, cpu: u32, context: i64, latency: u64) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid: 900 + cpu as i32,
            kind: EventKind::Generic(GenericEvent {
                system: "ftrace".into(),
                name: "timerlat".into(),
                fields: vec![
                    ("seqnum".into(), FieldValue::Unsigned(7)),
                    ("context".into(), FieldValue::Signed(context)),
                    ("timer_latency".into(), FieldValue::Unsigned(latency)),
                ],
            }),
        }
    }

    #[test]
    fn thread_samples_over_the_threshold_are_breaches() {
        let mut d = TimerlatDetector::new(50_000, &[1]);
        // IRQ sample over the threshold: not a breach (the thread sample of the same
        // period is the latency the user sees).
        assert!(d.push(&sample(1_000_000, 1, 0, 60_000)).is_none());
        assert!(d.push(&sample(1_000_100, 1, 1, 20_000)).is_none());
        let b = d.push(&sample(2_000_000, 1, 1, 80_000)).unwrap();
        assert_eq!(b.latency, Nanos(80_000));
        assert_eq!(b.expiry, Some(Nanos(1_920_000)));
        assert_eq!(b.switch_in, Nanos(2_000_000));
        assert_eq!(b.detector.as_deref(), Some("timerlat"));
        let s = d.stats();
        assert_eq!(
            (s[0].loops, s[0].min_ns, s[0].max_ns, s[0].over_threshold),
            (2, 20_000, 80_000, 1)
        );
        // Every thread sample is a wake-up of the kthread's histogram, IRQ samples none.
        let o = d
            .wakeups()
            .overview("timerlat", 50_000, 0, &Default::default());
        let t = &o.threads[0];
        assert_eq!(
            (t.comm.as_str(), t.wakeups, t.max_ns),
            ("timerlat/1", 2, 80_000)
        );
        assert_eq!(t.cpus.iter().map(|c| c.cpu).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn osnoise_settings_are_written_back() {
        let dir = tempfile::tempdir().unwrap();
        let os = dir.path().join("osnoise");
        std::fs::create_dir(&os).unwrap();
        std::fs::write(
            dir.path().join("available_tracers"),
            "timerlat osnoise nop\n",
        )
        .unwrap();
        for (f, v) in [
            ("cpus", "0-1\n"),
            ("timerlat_period_us", "1000\n"),
            ("stop_tracing_us", "0\n"),
            ("stop_tracing_total_us", "30\n"),
        ] {
            std::fs::write(os.join(f), v).unwrap();
        }
        let t = Tracefs::at(dir.path());
        assert!(available(&t));
        let cfg = TimerlatConfig {
            cpus: vec![1],
            period_us: 500,
            priority: 90,
        };
        let s = OsnoiseSettings::apply(&t, &cfg).unwrap();
        let read = |f: &str| std::fs::read_to_string(os.join(f)).unwrap();
        assert_eq!(read("cpus"), "1");
        assert_eq!(read("timerlat_period_us"), "500");
        assert_eq!(read("stop_tracing_total_us"), "0");
        s.restore().unwrap();
        assert_eq!(read("cpus"), "0-1");
        assert_eq!(read("timerlat_period_us"), "1000");
        assert_eq!(read("stop_tracing_total_us"), "30");
        std::fs::write(dir.path().join("available_tracers"), "function nop\n").unwrap();
        assert!(!available(&t));
    }
}
