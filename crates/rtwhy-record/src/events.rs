//! The event sets a recording enables: presets and user additions.

/// A named event set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Scheduling, interrupts and timer expiry: enough to break a latency down, lowest
    /// overhead.
    Minimal,
    /// What the analyzer uses for every cause: adds wake-up of new tasks, PI boosts,
    /// softirq raises, timer arming, idle and frequency, IPIs, workqueues, futex and
    /// sleep system calls, process fork and exit.
    Default,
    /// Everything of `default` plus the whole sched, irq, timer, ipi, workqueue and
    /// power systems (larger files, more overhead).
    Full,
}

impl Preset {
    /// Parses `minimal`, `default` or `full`.
    pub fn parse(s: &str) -> Option<Preset> {
        match s {
            "minimal" => Some(Preset::Minimal),
            "default" => Some(Preset::Default),
            "full" => Some(Preset::Full),
            _ => None,
        }
    }

    /// The preset's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Minimal => "minimal",
            Preset::Default => "default",
            Preset::Full => "full",
        }
    }

    /// `system:event` entries; `system:*` means every event of the system.
    pub fn events(self) -> Vec<&'static str> {
        const MINIMAL: &[&str] = &[
            "sched:sched_switch",
            "sched:sched_waking",
            "sched:sched_wakeup",
            "sched:sched_migrate_task",
            "irq:irq_handler_entry",
            "irq:irq_handler_exit",
            "irq:softirq_entry",
            "irq:softirq_exit",
            "timer:hrtimer_expire_entry",
            "timer:hrtimer_expire_exit",
        ];
        const DEFAULT: &[&str] = &[
            "sched:sched_wakeup_new",
            "sched:sched_pi_setprio",
            "sched:sched_process_fork",
            "sched:sched_process_exit",
            "irq:softirq_raise",
            "timer:hrtimer_start",
            "timer:hrtimer_cancel",
            "power:cpu_idle",
            "power:cpu_frequency",
            "ipi:*",
            "workqueue:workqueue_queue_work",
            "workqueue:workqueue_execute_start",
            "workqueue:workqueue_execute_end",
            "syscalls:sys_enter_futex",
            "syscalls:sys_exit_futex",
            "syscalls:sys_enter_clock_nanosleep",
            "syscalls:sys_exit_clock_nanosleep",
        ];
        const FULL: &[&str] = &[
            "sched:*",
            "irq:*",
            "timer:*",
            "workqueue:*",
            "power:*",
            "irq_vectors:*",
        ];
        let mut v: Vec<&'static str> = MINIMAL.to_vec();
        if self != Preset::Minimal {
            v.extend_from_slice(DEFAULT);
        }
        if self == Preset::Full {
            v.extend_from_slice(FULL);
        }
        v
    }
}

/// Splits `system:event` (or `system/event`); `None` for anything else.
pub fn split_event(spec: &str) -> Option<(&str, &str)> {
    let (s, e) = spec.split_once(':').or_else(|| spec.split_once('/'))?;
    let ok = |x: &str| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '*')
    };
    (ok(s) && ok(e) && !s.contains('*')).then_some((s, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_grow_and_parse() {
        let m = Preset::Minimal.events().len();
        let d = Preset::Default.events().len();
        let f = Preset::Full.events().len();
        assert!(m < d && d < f);
        assert!(Preset::Minimal.events().contains(&"sched:sched_switch"));
        assert_eq!(Preset::parse("full"), Some(Preset::Full));
        assert_eq!(Preset::parse("most"), None);
        for p in [Preset::Minimal, Preset::Default, Preset::Full] {
            assert!(p.events().iter().all(|e| split_event(e).is_some()), "{p:?}");
        }
    }

    #[test]
    fn event_specs_split() {
        assert_eq!(
            split_event("sched:sched_switch"),
            Some(("sched", "sched_switch"))
        );
        assert_eq!(split_event("ipi/*"), Some(("ipi", "*")));
        assert_eq!(split_event("sched"), None);
        assert_eq!(split_event("../x:y"), None);
        assert_eq!(split_event("*:x"), None);
    }
}
