//! The one place where kernel `prio` values and user-visible priorities meet.
//!
//! The kernel prints `prio` (as in `sched_switch`'s `prev_prio`) on one scale:
//! 0..=98 are real-time (SCHED_FIFO/RR priority `p` appears as `99 - p`),
//! 100..=139 are normal tasks (nice `n` appears as `120 + n`), and -1 is used by
//! SCHED_DEADLINE.

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
    fn fifo_80_is_kernel_prio_19() {
        assert_eq!(rt_priority_from_kernel_prio(19), Some(80));
        assert_eq!(kernel_prio_from_rt_priority(80), 19);
        assert_eq!(rt_priority_from_kernel_prio(120), None);
        assert_eq!(nice_from_kernel_prio(120), Some(0));
        assert_eq!(nice_from_kernel_prio(19), None);
        assert_eq!(rt_priority_from_kernel_prio(-1), None);
    }
}
