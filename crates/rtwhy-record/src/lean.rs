//! Lean recording on the CPUs no measured thread may run on.
//!
//! The analysis breaks a spike down from the events of the victim's CPU; from the other
//! CPUs it uses who woke the victim, what ran there (a lock holder, a throttled class,
//! and whether the CPU was silent while the victim's stopped: a machine-wide stop), their
//! interrupts and timers. It never uses how ordinary tasks there woke each other: a
//! wake-up is two events (`sched_waking` where it is asked, `sched_wakeup` where the task
//! is queued) for every context switch of a load that hands work between tasks, such as
//! a pipe benchmark.
//!
//! So the flight instance keeps everything on the *full* CPUs (those the measured
//! threads may run on), and on the others drops, with the kernel's own event filters
//! (the `CPU` field is the CPU the event was recorded on):
//! - `sched_waking`/`sched_wakeup`/`sched_wakeup_new` of a task that is not real-time
//!   and is not being woken towards a full CPU;
//! - `sched_migrate_task` of a task that is not real-time between two lean CPUs.
//!
//! Context switches stay recorded everywhere: dropping those between ordinary tasks too
//! would save a third more, but a CPU whose switches are not recorded looks silent, and
//! a silent CPU beside a stopped one is what tells a machine-wide stop (hwlat) from
//! interrupts held off on one CPU (on the fixtures, two verdicts changed from hwlat to
//! kernel_nonpreemptible without them). Interrupts, softirqs, timers, idle states, IPIs,
//! workqueues and system calls stay too. The capture says which CPUs were full
//! (`record.full_cpus`).
//!
//! A CPU the instance does not record at all (`--cpus`, its `tracing_cpumask`) needs no
//! filter: a filtered event is built and tested before the ring buffer drops it for its
//! CPU, an unfiltered one is dropped at once. Such CPUs count as full in the filters, so
//! when every recorded CPU is full none is set.

use crate::tracefs::Instance;
use crate::Result;

/// The lean rule of one flight instance: which CPUs are full now, and since when each
/// earlier set held (a capture's window may span a change).
#[derive(Debug)]
pub struct Lean {
    cpu_count: usize,
    /// The CPUs the instance does not record (its `tracing_cpumask`).
    unrecorded: Vec<u32>,
    /// `(system, event)` of the filtered events the instance has enabled.
    events: Vec<(&'static str, &'static str)>,
    /// `(from, full CPUs)`, oldest first; the last is in force.
    history: Vec<(u64, Vec<u32>)>,
}

impl Lean {
    /// Applies the rule with `full` (every CPU when `None`) to the `enabled` events
    /// (`system:event`) of `instance`, which records the CPUs `recorded` (every CPU when
    /// `None`), at time `now` (CLOCK_MONOTONIC ns).
    pub fn start(
        instance: &Instance,
        enabled: &[String],
        cpu_count: usize,
        recorded: Option<&[u32]>,
        full: Option<Vec<u32>>,
        now: u64,
    ) -> Result<Lean> {
        let events = FILTERED
            .into_iter()
            .filter(|(s, e)| enabled.iter().any(|x| *x == format!("{s}:{e}")))
            .collect();
        let unrecorded = (0..cpu_count as u32)
            .filter(|c| recorded.is_some_and(|r| !r.contains(c)))
            .collect();
        let mut lean = Lean {
            cpu_count,
            unrecorded,
            events,
            history: Vec::new(),
        };
        lean.set(
            instance,
            full.unwrap_or_else(|| (0..cpu_count as u32).collect()),
            now,
        )?;
        Ok(lean)
    }

    /// Makes `full` the full CPUs from `now` on; nothing is written when they already
    /// are.
    pub fn set(&mut self, instance: &Instance, mut full: Vec<u32>, now: u64) -> Result<()> {
        full.retain(|&c| (c as usize) < self.cpu_count);
        full.sort_unstable();
        full.dedup();
        if full.is_empty() || self.history.last().is_some_and(|(_, f)| *f == full) {
            return Ok(());
        }
        for (system, event, filter) in self.kernel_filters(&full) {
            if self.events.contains(&(system, event)) {
                instance.set_filter(system, event, &filter)?;
            }
        }
        self.history.push((now, full));
        // Only what a capture window can reach is kept: the one in force before the
        // last few changes is enough.
        if self.history.len() > 64 {
            self.history.drain(..self.history.len() - 64);
        }
        Ok(())
    }

    /// [`filters`] for the full CPUs `full`, the CPUs not recorded counted among them.
    fn kernel_filters(&self, full: &[u32]) -> Vec<(&'static str, &'static str, String)> {
        let mut with_unrecorded = full.to_vec();
        with_unrecorded.extend(&self.unrecorded);
        filters(&with_unrecorded, self.cpu_count)
    }

    /// The CPUs full now.
    pub fn full_now(&self) -> Vec<u32> {
        self.history
            .last()
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| (0..self.cpu_count as u32).collect())
    }

    /// The CPUs that were full for the whole of `[from, to]`.
    pub fn full_during(&self, from: u64, to: u64) -> Vec<u32> {
        let mut out: Option<Vec<u32>> = None;
        for (i, (since, full)) in self.history.iter().enumerate() {
            let until = self.history.get(i + 1).map_or(u64::MAX, |(t, _)| *t);
            if until <= from || *since > to {
                continue;
            }
            out = Some(match out {
                None => full.clone(),
                Some(o) => o.into_iter().filter(|c| full.contains(c)).collect(),
            });
        }
        out.unwrap_or_else(|| {
            self.history
                .first()
                .map(|(_, f)| f.clone())
                .unwrap_or_default()
        })
    }
}

/// The events the lean rule filters, `(system, event)`, in [`filters`]'s order.
const FILTERED: [(&str, &str); 4] = [
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_wakeup_new"),
    ("sched", "sched_migrate_task"),
];

/// The kernel's priority of the highest normal (SCHED_OTHER) task: below it are the
/// real-time and deadline classes, as `prev_prio`/`prio` fields carry them.
const FIRST_NORMAL_PRIO: u32 = 100;

/// `(system, event, filter)` for each event the lean rule filters, given the full CPUs
/// and the number of CPUs. When every CPU is full, each filter is `0`, which clears it.
pub fn filters(full: &[u32], cpu_count: usize) -> Vec<(&'static str, &'static str, String)> {
    let everything = (0..cpu_count as u32).all(|c| full.contains(&c));
    let on_full = |field: &str| -> String {
        if everything {
            return String::new();
        }
        ranges(full)
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    format!("{field} == {a}")
                } else {
                    format!("({field} >= {a} && {field} <= {b})")
                }
            })
            .collect::<Vec<_>>()
            .join(" || ")
    };
    let rule = |parts: Vec<String>| -> String {
        if everything {
            "0".to_string()
        } else {
            parts
                .into_iter()
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join(" || ")
        }
    };
    let rt = |field: &str| format!("{field} < {FIRST_NORMAL_PRIO}");
    let wake = rule(vec![rt("prio"), on_full("target_cpu"), on_full("CPU")]);
    let migrate = rule(vec![rt("prio"), on_full("orig_cpu"), on_full("dest_cpu")]);
    let [waking, wakeup, wakeup_new, migrate_task] = FILTERED;
    vec![
        (waking.0, waking.1, wake.clone()),
        (wakeup.0, wakeup.1, wake.clone()),
        (wakeup_new.0, wakeup_new.1, wake),
        (migrate_task.0, migrate_task.1, migrate),
    ]
}

/// Sorted runs of consecutive CPUs: `[1, 2, 3, 5]` -> `[(1, 3), (5, 5)]`.
fn ranges(cpus: &[u32]) -> Vec<(u32, u32)> {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for c in sorted {
        match out.last_mut() {
            Some((_, b)) if *b + 1 == c => *b = c,
            _ => out.push((c, c)),
        }
    }
    out
}

/// Whether the lean rule keeps an event: the same decision the filters above make in
/// the kernel, for tests that apply the rule to recorded traces. `cpu` is the CPU the
/// event was recorded on; `fields` gives a named field's value.
pub fn keeps(event: &str, cpu: u32, full: &[u32], field: &dyn Fn(&str) -> Option<i64>) -> bool {
    let rt = |name: &str| field(name).is_some_and(|p| p < i64::from(FIRST_NORMAL_PRIO));
    let is_full =
        |c: Option<i64>| c.is_some_and(|c| u32::try_from(c).is_ok_and(|c| full.contains(&c)));
    if full.contains(&cpu) {
        return true;
    }
    match event {
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            rt("prio") || is_full(field("target_cpu"))
        }
        "sched_migrate_task" => {
            rt("prio") || is_full(field("orig_cpu")) || is_full(field("dest_cpu"))
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_cpus_become_ranges_in_each_filter() {
        let f = filters(&[1, 2, 3, 6], 8);
        assert!(f.iter().all(|(_, e, _)| *e != "sched_switch"));
        let waking = &f.iter().find(|(_, e, _)| *e == "sched_waking").unwrap().2;
        assert_eq!(
            waking,
            "prio < 100 || (target_cpu >= 1 && target_cpu <= 3) || target_cpu == 6 || (CPU >= 1 && CPU <= 3) || CPU == 6"
        );
    }

    #[test]
    fn every_cpu_full_clears_the_filters() {
        for (_, _, filter) in filters(&[0, 1], 2) {
            assert_eq!(filter, "0");
        }
    }

    #[test]
    fn cpus_not_recorded_need_no_filter() {
        let lean = |unrecorded: Vec<u32>| Lean {
            cpu_count: 4,
            unrecorded,
            events: FILTERED.to_vec(),
            history: Vec::new(),
        };
        // `--cpus 1`, CPU 1 measured: nothing is left to filter.
        for (_, _, filter) in lean(vec![0, 2, 3]).kernel_filters(&[1]) {
            assert_eq!(filter, "0");
        }
        // `--cpus 1,2`, CPU 1 measured: CPU 2 is filtered, the others pass whatever runs
        // there (the ring buffer drops it).
        let f = lean(vec![0, 3]).kernel_filters(&[1]);
        let waking = &f.iter().find(|(_, e, _)| *e == "sched_waking").unwrap().2;
        assert_eq!(
            waking,
            "prio < 100 || (target_cpu >= 0 && target_cpu <= 1) || target_cpu == 3 || (CPU >= 0 && CPU <= 1) || CPU == 3"
        );
        // Every CPU recorded: the rule as before.
        assert_eq!(lean(vec![]).kernel_filters(&[1]), filters(&[1], 4));
    }

    #[test]
    fn the_rule_drops_ordinary_wake_ups_between_lean_cpus_only() {
        let full = [1];
        let ev = |pairs: &'static [(&'static str, i64)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        };
        let normal_switch = ev(&[
            ("prev_prio", 120),
            ("next_prio", 120),
            ("prev_pid", 7),
            ("next_pid", 8),
        ]);
        assert!(keeps("sched_switch", 0, &full, &normal_switch));
        let rt_wake = ev(&[("prio", 9), ("target_cpu", 0)]);
        assert!(keeps("sched_wakeup", 0, &full, &rt_wake));
        let wake_here = ev(&[("prio", 120), ("target_cpu", 0)]);
        assert!(!keeps("sched_waking", 0, &full, &wake_here));
        let wake_there = ev(&[("prio", 120), ("target_cpu", 1)]);
        assert!(keeps("sched_waking", 0, &full, &wake_there));
        assert!(keeps("irq_handler_entry", 0, &full, &ev(&[])));
    }
}
