//! The tracefs-only breach detector, for kernels or users where BPF cannot load: the same
//! measurement as the BPF programs (timer expiry or wake-up to running, per thread),
//! made in user space from the scheduling events of a streaming instance.
//!
//! ftrace on some kernels drops the `sched_switch` from idle to a woken task; the
//! detector then takes the task's first own event (`common_pid`) as its switch-in, which
//! is late by at most the time to that event: such breaches are flagged by a missing
//! `prev_tid`.

use std::collections::{HashMap, HashSet};

use rtwhy_model::{BreachRecord, Event, EventKind, FieldValue, Nanos};

/// Tracked threads never exceed this; beyond it new threads are not followed.
const MAX_TRACKED: usize = 65536;
/// Armed timers remembered at most.
const MAX_TIMERS: usize = 65536;

/// Events the detector needs in its streaming instance.
pub const EVENTS: &[(&str, &str)] = &[
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_process_fork"),
    ("timer", "hrtimer_start"),
    ("timer", "hrtimer_cancel"),
    ("timer", "hrtimer_expire_entry"),
];

#[derive(Debug, Clone, Copy)]
struct Pending {
    comm: rtwhy_model::Comm,
    waking: u64,
    expiry: Option<u64>,
    waker: i32,
}

/// User-space breach detector fed with decoded events in time order.
#[derive(Debug)]
pub struct FallbackDetector {
    threshold: u64,
    rt_only: bool,
    tracked: HashSet<i32>,
    /// Timers armed by tracked threads: hrtimer pointer -> (tid, expiry).
    timers: HashMap<u64, (i32, u64)>,
    /// Expired timers of tracked threads not yet followed by their wake-up.
    expired: HashMap<i32, u64>,
    pending: HashMap<i32, Pending>,
    prio: HashMap<i32, i32>,
    wakeups: crate::wakeups::Wakeups,
}

impl FallbackDetector {
    /// A detector for latencies of at least `threshold_ns`; `rt_only` measures only
    /// SCHED_FIFO/RR threads.
    pub fn new(threshold_ns: u64, rt_only: bool) -> FallbackDetector {
        FallbackDetector {
            threshold: threshold_ns,
            rt_only,
            tracked: HashSet::new(),
            timers: HashMap::new(),
            expired: HashMap::new(),
            pending: HashMap::new(),
            prio: HashMap::new(),
            wakeups: crate::wakeups::Wakeups::default(),
        }
    }

    /// Every wake-up measured so far, per thread and CPU.
    pub fn wakeups(&self) -> &crate::wakeups::Wakeups {
        &self.wakeups
    }

    /// Follows thread `tid` (and, through fork events, what it creates).
    pub fn track(&mut self, tid: i32) {
        if self.tracked.len() < MAX_TRACKED {
            self.tracked.insert(tid);
        }
    }

    /// The threads followed.
    pub fn tracked(&self) -> Vec<i32> {
        self.tracked.iter().copied().collect()
    }

    /// Whether `tid` is followed.
    pub fn is_tracked(&self, tid: i32) -> bool {
        self.tracked.contains(&tid)
    }

    /// Feeds one event; returns a breach when it ends one.
    pub fn push(&mut self, ev: &Event) -> Option<BreachRecord> {
        let ts = ev.ts.0;
        // A woken thread's own event: it runs, whether or not its switch-in was recorded.
        let mut out = None;
        if self.pending.contains_key(&ev.pid) {
            out = self.finish(ev.pid, ts, ev.cpu, None);
        }
        match &ev.kind {
            EventKind::SchedSwitch {
                prev_pid,
                prev_comm,
                next_pid,
                next_prio,
                ..
            } if self.tracked.contains(next_pid) => {
                self.prio.insert(*next_pid, *next_prio);
                if self.pending.contains_key(next_pid) {
                    let prev = (*prev_pid, prev_comm.to_str_lossy().into_owned());
                    return self.finish(*next_pid, ts, ev.cpu, Some(prev)).or(out);
                }
            }
            EventKind::SchedWaking {
                pid, prio, comm, ..
            } if self.tracked.contains(pid) => {
                self.prio.insert(*pid, *prio);
                if !self.rt_only || rtwhy_model::is_rt(*prio) {
                    let expiry = self.expired.remove(pid).filter(|e| *e <= ts);
                    self.pending.insert(
                        *pid,
                        Pending {
                            comm: *comm,
                            waking: ts,
                            expiry,
                            waker: ev.pid,
                        },
                    );
                }
            }
            EventKind::HrtimerStart {
                hrtimer, expires, ..
            } if self.tracked.contains(&ev.pid) && self.timers.len() < MAX_TIMERS => {
                self.timers.insert(*hrtimer, (ev.pid, *expires as u64));
            }
            EventKind::HrtimerCancel { hrtimer } => {
                self.timers.remove(hrtimer);
            }
            EventKind::HrtimerExpireEntry { hrtimer, .. } => {
                if let Some((tid, expiry)) = self.timers.remove(hrtimer) {
                    self.expired.insert(tid, expiry);
                }
            }
            EventKind::Generic(g) if g.name == "sched_process_fork" => {
                let field = |n: &str| {
                    g.fields
                        .iter()
                        .find(|(k, _)| k == n)
                        .and_then(|(_, v)| match v {
                            FieldValue::Signed(x) => Some(*x as i32),
                            FieldValue::Unsigned(x) => Some(*x as i32),
                            _ => None,
                        })
                };
                if let (Some(parent), Some(child)) = (field("parent_pid"), field("child_pid")) {
                    if self.tracked.contains(&parent) || self.tracked.contains(&ev.pid) {
                        self.track(child);
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn finish(
        &mut self,
        tid: i32,
        switch_in: u64,
        cpu: u32,
        prev: Option<(i32, String)>,
    ) -> Option<BreachRecord> {
        let p = self.pending.remove(&tid)?;
        let origin = p.expiry.unwrap_or(p.waking);
        let latency = switch_in.saturating_sub(origin);
        self.wakeups.add(tid, cpu, &p.comm.to_str_lossy(), latency);
        if !rtwhy_model::breaches(latency, self.threshold) {
            return None;
        }
        Some(BreachRecord {
            tid,
            comm: p.comm,
            cpu,
            prio: self.prio.get(&tid).copied(),
            latency: Nanos(latency),
            threshold: Some(Nanos(self.threshold)),
            expiry: p.expiry.map(Nanos),
            waking: Some(Nanos(p.waking)),
            switch_in: Nanos(switch_in),
            waker_tid: Some(p.waker),
            prev_tid: prev.as_ref().map(|p| p.0),
            prev_comm: prev.map(|p| rtwhy_model::Comm::new(&p.1)),
            detector: Some("tracefs".into()),
            ..BreachRecord::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Comm, TaskState};

    fn ev(ts: u64, cpu: u32, pid: i32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid,
            kind,
        }
    }

    fn switch(prev: i32, next: i32, next_prio: i32) -> EventKind {
        EventKind::SchedSwitch {
            prev_comm: Comm::new("other"),
            prev_pid: prev,
            prev_prio: 120,
            prev_state: TaskState(0),
            next_comm: Comm::new("rt"),
            next_pid: next,
            next_prio,
        }
    }

    fn waking(pid: i32, prio: i32) -> EventKind {
        EventKind::SchedWaking {
            comm: Comm::new("rt"),
            pid,
            prio,
            target_cpu: 1,
        }
    }

    #[test]
    fn a_late_timer_wakeup_is_measured_from_the_expiry() {
        let mut d = FallbackDetector::new(100_000, true);
        d.track(7);
        let start = EventKind::HrtimerStart {
            hrtimer: 0xabc,
            function: 0,
            expires: 1_000_000,
            softexpires: 1_000_000,
            mode: None,
        };
        assert!(d.push(&ev(500_000, 1, 7, start)).is_none());
        let expire = EventKind::HrtimerExpireEntry {
            hrtimer: 0xabc,
            now: 1_010_000,
            function: 0,
        };
        assert!(d.push(&ev(1_010_000, 1, 0, expire)).is_none());
        assert!(d.push(&ev(1_011_000, 1, 0, waking(7, 19))).is_none());
        let b = d.push(&ev(1_150_000, 1, 99, switch(99, 7, 19))).unwrap();
        assert_eq!(b.latency, Nanos(150_000));
        assert_eq!(b.expiry, Some(Nanos(1_000_000)));
        assert_eq!(b.prev_tid, Some(99));
        assert_eq!(b.detector.as_deref(), Some("tracefs"));
    }

    #[test]
    fn a_missing_switch_in_is_taken_from_the_threads_own_event_and_fast_ones_pass() {
        let mut d = FallbackDetector::new(100_000, true);
        d.track(7);
        d.push(&ev(0, 1, 0, waking(7, 19)));
        // The switch from idle was dropped: the thread's own hrtimer_start shows it ran.
        let start = EventKind::HrtimerStart {
            hrtimer: 1,
            function: 0,
            expires: 9,
            softexpires: 9,
            mode: None,
        };
        let b = d.push(&ev(300_000, 1, 7, start)).unwrap();
        assert_eq!(b.latency, Nanos(300_000));
        assert_eq!(b.prev_tid, None);
        d.push(&ev(400_000, 1, 0, waking(7, 19)));
        assert!(d.push(&ev(450_000, 1, 0, switch(0, 7, 19))).is_none());
        // Both wake-ups are counted, the fast one and the breach.
        let o = d
            .wakeups()
            .overview("tracefs", 100_000, 0, &Default::default());
        let counted: Vec<_> = o
            .threads
            .iter()
            .map(|t| (t.tid, t.wakeups, t.max_ns))
            .collect();
        assert_eq!(counted, [(7, 2, 300_000)]);
    }

    #[test]
    fn untracked_and_normal_threads_are_ignored_forks_are_followed() {
        let mut d = FallbackDetector::new(100_000, true);
        d.track(7);
        d.push(&ev(0, 1, 0, waking(8, 19)));
        assert!(d.push(&ev(500_000, 1, 0, switch(0, 8, 19))).is_none());
        d.push(&ev(0, 1, 0, waking(7, 120)));
        assert!(d.push(&ev(500_000, 1, 0, switch(0, 7, 120))).is_none());
        // Neither the untracked thread nor the normal one is counted.
        assert_eq!(d.wakeups().histograms().count(), 0);
        let fork = EventKind::Generic(rtwhy_model::GenericEvent {
            system: "sched".into(),
            name: "sched_process_fork".into(),
            fields: vec![
                ("parent_pid".into(), FieldValue::Signed(7)),
                ("child_pid".into(), FieldValue::Signed(9)),
            ],
        });
        d.push(&ev(600_000, 1, 7, fork));
        assert!(d.is_tracked(9));
        d.push(&ev(700_000, 1, 0, waking(9, 10)));
        assert!(d.push(&ev(900_000, 1, 0, switch(0, 9, 10))).is_some());
    }
}
