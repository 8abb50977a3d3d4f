//! The one place where kernel `prio` values and user-visible priorities meet.
//!
//! The kernel prints `prio` (as in `sched_switch`'s `prev_prio`) on one scale:
//! 0..=98 are real-time (SCHED_FIFO/RR priority `p` appears as `99 - p`),
//! 100..=139 are normal tasks (nice `n` appears as `120 + n`), and -1 is used by
//! SCHED_DEADLINE.

/// Whether a task of kernel `prio` is real-time: SCHED_FIFO, SCHED_RR (0..=99) or
/// SCHED_DEADLINE (-1). The one test for "is this task real-time" in rtwhy (the BPF
/// detector's `prio >= 100` is its complement).
pub fn is_rt(prio: i32) -> bool {
    prio < 100
}

/// Whether a measured latency breaches the threshold: at or above it, the same test in
/// the BPF detector, the tracefs fallback, the built-in probe and the analyzer, so a
/// wake-up exactly at the threshold is captured and diagnosed alike.
pub fn breaches(latency_ns: u64, threshold_ns: u64) -> bool {
    latency_ns >= threshold_ns
}

/// Whether a task that ran at kernel `prio` outranks or equals a victim of
/// `victim_prio` (lower is higher); not when the victim's priority was not recorded.
pub fn at_or_above(prio: i32, victim_prio: Option<i32>) -> bool {
    victim_prio.is_some_and(|v| prio <= v)
}

/// Whether a task of kernel `prio` is SCHED_FIFO or SCHED_RR (0..=99): the class RT
/// bandwidth control (`sched_rt_runtime_us`) limits. SCHED_DEADLINE is not in it.
pub fn is_fifo_rr(prio: i32) -> bool {
    (0..100).contains(&prio)
}

/// Whether a task of kernel `prio` is SCHED_DEADLINE (printed as -1): above every FIFO/RR
/// task, limited by its own runtime per period, not by `sched_rt_runtime_us`.
pub fn is_deadline(prio: i32) -> bool {
    prio < 0
}

/// The SCHED_FIFO/SCHED_RR priority (1..=99) of a kernel `prio`, if it is a real-time one.
pub fn rt_priority_from_kernel_prio(prio: i32) -> Option<u32> {
    if (0..=98).contains(&prio) {
        Some((99 - prio) as u32)
    } else {
        None
    }
}

/// The kernel `prio` of SCHED_FIFO/SCHED_RR priority `rt` (1..=99).
pub fn kernel_prio_from_rt_priority(rt: u32) -> i32 {
    99 - rt.min(99) as i32
}

/// The nice value (-20..=19) of a kernel `prio` of a normal task.
pub fn nice_from_kernel_prio(prio: i32) -> Option<i32> {
    if (100..=139).contains(&prio) {
        Some(prio - 120)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_and_fifo_are_real_time_normal_is_not() {
        assert!(is_rt(-1));
        assert!(is_rt(0));
        assert!(is_rt(99));
        assert!(!is_rt(100));
        assert!(!is_rt(120));
        assert!(is_deadline(-1) && !is_fifo_rr(-1));
        assert!(is_fifo_rr(0) && is_fifo_rr(99) && !is_fifo_rr(100) && !is_deadline(0));
        assert!(breaches(100, 100));
        assert!(!breaches(99, 100));
    }

    #[test]
    fn fifo_80_is_kernel_prio_19() {
        assert_eq!(rt_priority_from_kernel_prio(19), Some(80));
        assert_eq!(kernel_prio_from_rt_priority(80), 19);
        assert_eq!(rt_priority_from_kernel_prio(120), None);
        assert_eq!(nice_from_kernel_prio(120), Some(0));
        assert_eq!(nice_from_kernel_prio(19), None);
        assert_eq!(rt_priority_from_kernel_prio(-1), None);
    }
}
