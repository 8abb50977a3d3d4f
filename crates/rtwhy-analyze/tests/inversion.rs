//! Priority inversion in every ordering, and the preconditions that keep a cause from
//! being named without its evidence, on small hand-made event sequences: a holder
//! preempted before or during the victim's wait, on the victim's CPU or another, the
//! victim woken by FUTEX_WAKE, FUTEX_UNLOCK_PI or after a PI boost.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rtwhy_analyze::{Analysis, Analyzer, Config};
use rtwhy_model::{
    Cause, Comm, Event, EventKind, Nanos, Spike, SpikeKind, SyscallKind, SystemFacts, TaskState,
};

const US: u64 = 1_000;
/// H: FIFO 90, the victim.
const H: (i32, i32) = (100, 9);
/// L: FIFO 10, the lock holder.
const L: (i32, i32) = (300, 89);
/// M: FIFO 50, medium.
const M: (i32, i32) = (400, 49);
const IDLE: (i32, i32) = (0, 120);
const LOCK: u64 = 0x7f00_1000;
const FUTEX_WAIT: u64 = 128;
const FUTEX_WAKE: u64 = 1 | 128;
const FUTEX_LOCK_PI: u64 = 6 | 128;
const FUTEX_UNLOCK_PI: u64 = 7 | 128;
const R: u64 = 0;
const S: u64 = 1;

fn name(pid: i32) -> Comm {
    match pid {
        0 => Comm::new("swapper"),
        100 => Comm::new("high"),
        300 => Comm::new("low"),
        400 => Comm::new("med"),
        // The holders of a chain of locks: t1, t2, ...
        201..=209 => Comm::new(&format!("t{}", pid - 200)),
        _ => Comm::new("other"),
    }
}

#[derive(Default)]
struct Seq {
    events: Vec<Event>,
}

impl Seq {
    fn ev(&mut self, us: u64, cpu: u32, pid: i32, kind: EventKind) -> &mut Seq {
        self.events.push(Event {
            ts: Nanos(1_000_000_000 + us * US),
            cpu,
            pid,
            kind,
        });
        self
    }
    fn switch(
        &mut self,
        us: u64,
        cpu: u32,
        prev: (i32, i32),
        state: u64,
        next: (i32, i32),
    ) -> &mut Seq {
        self.ev(
            us,
            cpu,
            prev.0,
            EventKind::SchedSwitch {
                prev_comm: name(prev.0),
                prev_pid: prev.0,
                prev_prio: prev.1,
                prev_state: TaskState(state),
                next_comm: name(next.0),
                next_pid: next.0,
                next_prio: next.1,
            },
        )
    }
    fn waking(&mut self, us: u64, cpu: u32, by: i32, who: (i32, i32), target: u32) -> &mut Seq {
        self.ev(
            us,
            cpu,
            by,
            EventKind::SchedWaking {
                comm: name(who.0),
                pid: who.0,
                prio: who.1,
                target_cpu: target as i32,
            },
        )
    }
    fn futex(&mut self, us: u64, cpu: u32, pid: i32, op: u64) -> &mut Seq {
        self.futex_on(us, cpu, pid, LOCK, op)
    }
    fn futex_on(&mut self, us: u64, cpu: u32, pid: i32, lock: u64, op: u64) -> &mut Seq {
        self.ev(
            us,
            cpu,
            pid,
            EventKind::SyscallEnter {
                call: SyscallKind::Futex,
                args: vec![lock, op, 0, 0, 0, 0],
            },
        )
    }
    fn futex_exit(&mut self, us: u64, cpu: u32, pid: i32) -> &mut Seq {
        self.ev(
            us,
            cpu,
            pid,
            EventKind::SyscallExit {
                call: SyscallKind::Futex,
                ret: 0,
            },
        )
    }
    fn pi(&mut self, us: u64, cpu: u32, by: i32, who: (i32, i32), newprio: i32) -> &mut Seq {
        self.ev(
            us,
            cpu,
            by,
            EventKind::SchedPiSetprio {
                comm: name(who.0),
                pid: who.0,
                oldprio: who.1,
                newprio,
            },
        )
    }
    fn irq(&mut self, us: u64, cpu: u32) -> &mut Seq {
        // One device interrupt so the trace counts as having irq events.
        self.ev(
            us,
            cpu,
            0,
            EventKind::IrqHandlerEntry {
                irq: 30,
                name: "eth0".into(),
            },
        );
        self.ev(us, cpu, 0, EventKind::IrqHandlerExit { irq: 30, ret: 1 })
    }
    fn analyze_with(&self, facts: SystemFacts) -> Analysis {
        let mut a = Analyzer::new(Config::default(), facts);
        for e in &self.events {
            a.push(e.clone());
        }
        a.finish()
    }
    fn analyze(&self) -> Analysis {
        self.analyze_with(SystemFacts::default())
    }
}

fn lock_wait_of_h(a: &Analysis) -> &Spike {
    a.spikes
        .iter()
        .find(|s| s.victim.tid == H.0 && s.kind == SpikeKind::LockWait)
        .unwrap_or_else(|| panic!("no lock wait of H in {:#?}", a.spikes))
}

fn why(s: &Spike) -> String {
    format!("{}: {}", s.primary.cause, s.primary.summary)
}

/// M is already running on the holder's CPU when H blocks: H's switch goes straight to M,
/// M runs 3 ms, then L runs, releases the lock and wakes H.
fn holder_preempted_before(op_lock: u64, op_unlock: u64) -> Seq {
    let mut t = Seq::default();
    t.switch(0, 1, IDLE, R, L);
    t.waking(10, 1, L.0, M, 1);
    t.switch(11, 1, L, R, M);
    t.waking(100, 1, M.0, H, 1);
    t.switch(101, 1, M, R, H);
    t.futex(102, 1, H.0, op_lock);
    t.switch(103, 1, H, S, M);
    t.switch(3103, 1, M, S, L);
    t.futex(3150, 1, L.0, op_unlock);
    t.waking(3151, 1, L.0, H, 1);
    t.switch(3152, 1, L, R, H);
    t.futex_exit(3153, 1, H.0);
    t
}

#[test]
fn holder_preempted_before_the_wait_same_cpu_futex_wake_is_inversion() {
    let a = holder_preempted_before(FUTEX_WAIT, FUTEX_WAKE).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
    // The wait starts when H asked for the lock, not when it blocked.
    assert_eq!(s.start, Nanos(1_000_000_000 + 102 * US));
    assert!(s.primary.summary.contains("med:400"), "{}", why(s));
    // The evidence shows the switch that left L runnable, before H blocked.
    assert!(
        s.evidence
            .iter()
            .any(|e| e.ts == Nanos(1_000_000_000 + 11 * US) && e.why.contains("holder")),
        "{:#?}",
        s.evidence
    );
}

#[test]
fn holder_preempted_before_the_wait_woken_by_futex_unlock_pi_is_inversion() {
    // LOCK_PI without a recorded boost: the trace shows M running while L was runnable.
    let a = holder_preempted_before(FUTEX_LOCK_PI, FUTEX_UNLOCK_PI).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
}

#[test]
fn holder_preempted_during_the_wait_same_cpu_is_inversion() {
    let mut t = Seq::default();
    t.switch(0, 1, IDLE, R, L);
    t.waking(100, 1, L.0, H, 1);
    t.switch(101, 1, L, R, H);
    t.futex(102, 1, H.0, FUTEX_WAIT);
    t.switch(103, 1, H, S, L);
    t.waking(200, 1, L.0, M, 1);
    t.switch(201, 1, L, R, M);
    t.switch(3201, 1, M, S, L);
    t.futex(3250, 1, L.0, FUTEX_WAKE);
    t.waking(3251, 1, L.0, H, 1);
    t.switch(3252, 1, L, R, H);
    let a = t.analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
}

#[test]
fn holder_preempted_before_the_wait_on_another_cpu_is_inversion() {
    let mut t = Seq::default();
    // L on CPU 2, preempted there by M; H blocks on CPU 1, which then idles.
    t.switch(0, 2, IDLE, R, L);
    t.waking(10, 2, L.0, M, 2);
    t.switch(11, 2, L, R, M);
    t.waking(100, 1, 0, H, 1);
    t.switch(101, 1, IDLE, R, H);
    t.futex(102, 1, H.0, FUTEX_WAIT);
    t.switch(103, 1, H, S, IDLE);
    t.switch(3103, 2, M, S, L);
    t.futex(3150, 2, L.0, FUTEX_WAKE);
    t.waking(3151, 2, L.0, H, 1);
    t.switch(3160, 1, IDLE, R, H);
    let a = t.analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
}

#[test]
fn holder_woken_and_left_waiting_behind_medium_work_is_inversion() {
    // L sleeps (not holding the CPU) when H blocks; it is woken for CPU 2, where M runs.
    let mut t = Seq::default();
    t.switch(0, 2, IDLE, R, M);
    t.switch(5, 1, IDLE, R, L);
    t.switch(8, 1, L, S, IDLE);
    t.waking(100, 1, 0, H, 1);
    t.switch(101, 1, IDLE, R, H);
    t.futex(102, 1, H.0, FUTEX_WAIT);
    t.switch(103, 1, H, S, IDLE);
    t.waking(150, 2, M.0, L, 2);
    t.switch(3150, 2, M, S, L);
    t.futex(3200, 2, L.0, FUTEX_WAKE);
    t.waking(3201, 2, L.0, H, 1);
    t.switch(3210, 1, IDLE, R, H);
    let a = t.analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
}

#[test]
fn a_pi_boost_ends_the_inversion_the_wait_is_contention() {
    // M ran before H blocked, but H's FUTEX_LOCK_PI boosts L above M at once: L runs its
    // critical section (400 us) and hands the lock over with FUTEX_UNLOCK_PI.
    let mut t = Seq::default();
    t.switch(0, 1, IDLE, R, L);
    t.waking(10, 1, L.0, M, 1);
    t.switch(11, 1, L, R, M);
    t.waking(100, 1, M.0, H, 1);
    t.switch(101, 1, M, R, H);
    t.futex(102, 1, H.0, FUTEX_LOCK_PI);
    t.pi(102, 1, H.0, L, H.1);
    t.switch(103, 1, H, S, (L.0, H.1));
    t.futex(2500, 1, L.0, FUTEX_UNLOCK_PI);
    t.pi(2501, 1, L.0, (L.0, H.1), L.1);
    t.waking(2501, 1, L.0, H, 1);
    t.switch(2502, 1, L, R, H);
    let a = t.analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::LockContention, "{}", why(s));
    assert!(
        s.primary.summary.contains("priority inheritance"),
        "{}",
        why(s)
    );
}

#[test]
fn a_wait_without_a_known_holder_is_not_named() {
    // Woken from interrupt context: nobody is known to have held the lock.
    let mut t = Seq::default();
    t.switch(0, 1, IDLE, R, H);
    t.futex(1, 1, H.0, FUTEX_WAIT);
    t.switch(2, 1, H, S, IDLE);
    t.waking(3000, 1, 0, H, 1);
    t.switch(3001, 1, IDLE, R, H);
    let a = t.analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::Unknown, "{}", why(s));
    assert!(
        s.primary.summary.contains("holder is not known"),
        "{}",
        why(s)
    );
}

#[test]
fn a_short_idle_stretch_after_a_normal_task_blocked_is_not_throttling() {
    // An idle-exit spike: a normal task blocks, the CPU idles, H's wake-up comes
    // from another CPU while it idles and H runs 150 us later. No RT task was runnable
    // when the CPU went idle: idle exit, never RT throttling.
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, H, S, (500, 120));
    t.switch(50, 1, (500, 120), S, IDLE);
    t.waking(1000, 0, 600, H, 1);
    t.switch(1150, 1, IDLE, R, H);
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_eq!(s.primary.cause, Cause::IdleExit, "{}", why(s));
}

#[test]
fn idle_after_the_cpu_handled_the_wake_up_is_not_an_idle_exit() {
    // The idle CPU itself handled H's wake-up (an interrupt there),
    // so it had left idle; 3 ms more without a switch is not a C-state exit.
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, H, S, (500, 120));
    t.switch(50, 1, (500, 120), S, IDLE);
    t.waking(1000, 1, 0, H, 1);
    t.switch(4160, 1, IDLE, R, H);
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_ne!(s.primary.cause, Cause::IdleExit, "{}", why(s));
}

#[test]
fn a_short_refusal_of_the_rt_class_is_not_throttling() {
    // An RT task is switched out runnable to idle (what throttling looks like) but the
    // RT class is back 40 us later: no used-up runtime explains that.
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, IDLE, R, M);
    t.waking(10, 1, M.0, H, 1);
    t.switch(20, 1, M, R, IDLE);
    t.switch(60, 1, IDLE, R, M);
    t.switch(220, 1, M, S, H);
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_ne!(s.primary.cause, Cause::RtThrottling, "{}", why(s));
    assert!(
        s.contributors
            .iter()
            .all(|c| c.cause != Cause::RtThrottling),
        "{:?}",
        s.contributors
    );
}

#[test]
fn a_long_refusal_of_the_rt_class_is_throttling() {
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, IDLE, R, M);
    t.waking(10, 1, M.0, H, 1);
    t.switch(20, 1, M, R, IDLE);
    t.switch(40_020, 1, IDLE, R, H);
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_eq!(s.primary.cause, Cause::RtThrottling, "{}", why(s));
}

#[test]
fn a_lower_task_on_a_fully_preemptible_kernel_is_not_kernel_nonpreemptible() {
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, H, S, (500, 120));
    t.waking(100, 1, 500, H, 1);
    t.switch(600, 1, (500, 120), R, H);
    let mut full = SystemFacts::default();
    full.set("kernel.preempt", "full");
    let s = t.analyze_with(full).spikes[0].clone();
    assert_eq!(s.primary.cause, Cause::Unknown, "{}", why(&s));
    assert!(
        s.primary.summary.contains("preemption model full"),
        "{}",
        why(&s)
    );
    let mut none = SystemFacts::default();
    none.set("kernel.preempt", "none");
    let s = t.analyze_with(none).spikes[0].clone();
    assert_eq!(s.primary.cause, Cause::KernelNonpreemptible, "{}", why(&s));
}

#[test]
fn waiting_for_the_stopper_thread_is_migration() {
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, IDLE, R, H);
    t.switch(10, 1, H, R, (21, 0));
    t.switch(400, 1, (21, 0), S, H);
    let mut a = t.clone_with_comm(21, "migration/1");
    let s = a.remove(0);
    assert_eq!(s.primary.cause, Cause::Migration, "{}", why(&s));
}

impl Seq {
    /// The analysis with task `pid` renamed (the stopper needs its kernel name).
    fn clone_with_comm(&self, pid: i32, comm: &str) -> Vec<Spike> {
        let events: Vec<Event> = self
            .events
            .iter()
            .cloned()
            .map(|mut e| {
                if let EventKind::SchedSwitch {
                    prev_comm,
                    prev_pid,
                    next_comm,
                    next_pid,
                    ..
                } = &mut e.kind
                {
                    if *prev_pid == pid {
                        *prev_comm = Comm::new(comm);
                    }
                    if *next_pid == pid {
                        *next_comm = Comm::new(comm);
                    }
                }
                e
            })
            .collect();
        Seq { events }.analyze().spikes
    }
}

/// Holder `k` of a chain: t1 holds the lock H wants, t2 the one t1 waits for, ...
fn t(k: u64) -> (i32, i32) {
    // t1..t(n-1) outrank the medium task (they are asleep anyway); the last holder is
    // FIFO 10 like L.
    (200 + k as i32, 30 + k as i32)
}

/// Nested locks on CPU 1: the last holder t`n` (FIFO 10) holds lock n-1; t(n-1) .. t1
/// wake in turn, each taking lock k-1 and blocking on lock k (held by the next); H
/// blocks on lock 0 (held by t1); with `medium`, M preempts t`n` for 30 ms; then t`n`
/// releases, each holder wakes the one before it, and t1 wakes H.
fn chain(n: u64, medium: bool) -> Seq {
    let lock = |k: u64| LOCK + 0x100 * k;
    let last = (200 + n as i32, 89);
    let mut s = Seq::default();
    s.switch(0, 1, IDLE, R, last);
    let mut at = 100;
    for k in (1..n).rev() {
        s.waking(at, 1, last.0, t(k), 1);
        s.switch(at + 1, 1, last, R, t(k));
        s.futex_on(at + 2, 1, t(k).0, lock(k), FUTEX_WAIT);
        s.switch(at + 3, 1, t(k), S, last);
        at += 100;
    }
    s.waking(1000, 1, last.0, H, 1);
    s.switch(1001, 1, last, R, H);
    s.futex_on(1002, 1, H.0, lock(0), FUTEX_WAIT);
    s.switch(1003, 1, H, S, last);
    if medium {
        s.waking(1500, 1, last.0, M, 1);
        s.switch(1501, 1, last, R, M);
        s.switch(31_501, 1, M, S, last);
    }
    // Each holder releases its lock and wakes the one waiting for it.
    let mut at = 33_000;
    let mut cur = last;
    for k in (1..n).rev() {
        s.futex_on(at, 1, cur.0, lock(k), FUTEX_WAKE);
        s.waking(at + 1, 1, cur.0, t(k), 1);
        s.switch(at + 2, 1, cur, R, t(k));
        cur = t(k);
        at += 10;
    }
    s.futex_on(at, 1, cur.0, lock(0), FUTEX_WAKE);
    s.waking(at + 1, 1, cur.0, H, 1);
    s.switch(at + 2, 1, cur, R, H);
    s.futex_exit(at + 3, 1, H.0);
    s
}

#[test]
fn nested_locks_the_last_holder_preempted_by_medium_work_is_inversion() {
    // H waits for t1, which itself waits for a lock t2 holds; M preempts t2. t1 never
    // runnable, so only following the chain finds the medium task.
    let a = chain(2, true).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
    let text = &s.primary.summary;
    assert!(text.contains("held by t1:201"), "{}", why(s));
    assert!(
        text.contains("waiting for a lock held by t2:202"),
        "{}",
        why(s)
    );
    assert!(
        text.contains(": t2:202 (FIFO/RR 10) kept high:100"),
        "{}",
        why(s)
    );
    assert!(text.contains("med:400"), "{}", why(s));
    // The evidence shows t1's own lock call and t2's release of it.
    assert!(
        s.evidence
            .iter()
            .any(|e| e.why.contains("asks for another")),
        "{:#?}",
        s.evidence
    );
    assert!(
        s.evidence
            .iter()
            .any(|e| e.why.contains("t2 releases the lock t1 waits for")),
        "{:#?}",
        s.evidence
    );
}

#[test]
fn nested_locks_the_last_holder_running_its_section_is_contention() {
    let a = chain(2, false).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::LockContention, "{}", why(s));
    assert!(
        s.primary
            .summary
            .contains(": t2:202 (FIFO/RR 10) kept high:100"),
        "{}",
        why(s)
    );
}

#[test]
fn a_chain_of_five_holders_is_followed_to_its_end() {
    // t1 .. t5: four holders beyond the victim's own, the bound.
    let a = chain(5, true).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::PriorityInversion, "{}", why(s));
    assert!(
        s.primary.summary.contains(": t5:205 (FIFO/RR 10) kept"),
        "{}",
        why(s)
    );
}

#[test]
fn a_chain_longer_than_the_bound_is_cut_and_not_named() {
    // t1 .. t6: t5's own wait for t6 is not followed, so neither the medium task on
    // t6's CPU nor t6's run is seen: no cause is guessed.
    let a = chain(6, true).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::Unknown, "{}", why(s));
    assert!(
        s.primary.summary.contains("not followed further"),
        "{}",
        why(s)
    );
    let a = chain(6, false).analyze();
    let s = lock_wait_of_h(&a);
    assert_eq!(s.primary.cause, Cause::Unknown, "{}", why(s));
}

#[test]
fn a_cycle_of_lock_wake_ups_ends_the_chain() {
    // Lost events make t1 and t2 wake each other from lock waits inside the same
    // stretch: the chain stops at the repeat instead of looping.
    let (t1, t2) = (t(1), (202, 89));
    let mut s = Seq::default();
    s.switch(0, 2, IDLE, R, t2);
    s.switch(0, 1, IDLE, R, t1);
    s.futex_on(69, 1, t1.0, LOCK + 0x100, FUTEX_WAIT);
    s.switch(70, 1, t1, S, IDLE);
    s.waking(90, 1, 0, H, 1);
    s.switch(91, 1, IDLE, R, H);
    s.futex(99, 1, H.0, FUTEX_WAIT);
    s.switch(100, 1, H, S, IDLE);
    s.futex_on(149, 2, t2.0, LOCK + 0x200, FUTEX_WAIT);
    s.switch(150, 2, t2, S, IDLE);
    // t1's switch-in was lost: it wakes t2 while asleep.
    s.futex_on(199, 2, t1.0, LOCK + 0x200, FUTEX_WAKE);
    s.waking(200, 2, t1.0, t2, 2);
    s.switch(201, 2, t1, R, t2);
    s.futex_on(500, 2, t2.0, LOCK + 0x100, FUTEX_WAKE);
    s.waking(501, 2, t2.0, t1, 1);
    s.switch(502, 1, IDLE, R, t1);
    s.futex(600, 1, t1.0, FUTEX_WAKE);
    s.waking(601, 1, t1.0, H, 1);
    s.switch(602, 1, t1, R, H);
    let a = s.analyze();
    let sp = lock_wait_of_h(&a);
    assert_eq!(sp.primary.cause, Cause::Unknown, "{}", why(sp));
    assert!(
        sp.primary
            .summary
            .contains("already in the chain of holders"),
        "{}",
        why(sp)
    );
}

impl Seq {
    fn migrate(
        &mut self,
        us: u64,
        cpu: u32,
        by: i32,
        who: (i32, i32),
        from: u32,
        to: u32,
    ) -> &mut Seq {
        self.ev(
            us,
            cpu,
            by,
            EventKind::SchedMigrateTask {
                comm: name(who.0),
                pid: who.0,
                prio: who.1,
                orig_cpu: from as i32,
                dest_cpu: to as i32,
            },
        )
    }
}

#[test]
fn a_wake_up_placed_on_another_cpu_is_not_a_migration() {
    // As try_to_wake_up traces it: sched_waking names the CPU the task last ran on (0),
    // the wake-up's own choice of CPU 1 follows at once on the waker's CPU
    // (sched_migrate_task), and the task then waits on CPU 1, idle, like any woken task.
    // The move took no time: the 400 us are CPU 1's, not a migration's.
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 0, IDLE, R, H);
    t.switch(10, 0, H, S, (500, 120));
    t.switch(20, 1, (600, 120), S, IDLE);
    t.waking(1000, 0, 500, H, 0);
    t.migrate(1001, 0, 500, H, 0, 1);
    t.switch(1400, 1, IDLE, R, H);
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_ne!(s.primary.cause, Cause::Migration, "{}", why(s));
    assert!(
        s.contributors.iter().all(|c| c.cause != Cause::Migration),
        "{:?}",
        s.contributors
    );
}

#[test]
fn only_the_wait_after_leaving_the_old_cpu_is_the_migration() {
    // H (FIFO 90) is preempted on CPU 0 by a FIFO 99 task and waits there 3 ms; CPU 1
    // then pulls it (sched_migrate_task on CPU 1) and runs it 2 ms later, once the
    // normal task there is switched out. CPU 1's normal task before the pull did not
    // delay H (H was not there): only the 2 ms after the move are the migration's, and
    // nothing names the 3 ms on CPU 0, which the breakdown does not replay.
    let hp = (700, 0);
    let mut t = Seq::default();
    t.irq(0, 0);
    t.switch(0, 1, IDLE, R, (500, 120));
    t.switch(0, 0, IDLE, R, H);
    t.waking(10, 0, H.0, hp, 0);
    t.switch(11, 0, H, R, hp);
    t.migrate(3011, 1, 500, H, 0, 1);
    t.switch(5011, 1, (500, 120), R, H);
    let mut none = SystemFacts::default();
    none.set("kernel.preempt", "none");
    let a = t.analyze_with(none);
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    let migration = std::iter::once(&s.primary)
        .chain(s.contributors.iter())
        .find(|f| f.cause == Cause::Migration)
        .unwrap_or_else(|| panic!("no migration: {}", why(s)));
    assert!(
        (migration.share - 0.4).abs() < 0.01,
        "migration {:.3} of 5 ms: {}",
        migration.share,
        why(s)
    );
    // CPU 1's normal task before the pull is not a non-preemptible kernel section that
    // kept H waiting.
    assert_ne!(s.primary.cause, Cause::KernelNonpreemptible, "{}", why(s));
}

#[test]
fn a_cpu_first_seen_inside_the_window_ran_the_task_its_first_switch_puts_off() {
    // CPU 1 has no event before H's wake-up (the capture starts there): its first
    // switch shows who held it, a normal task, and no task of unknown name and priority
    // is counted as lower-priority work.
    let mut t = Seq::default();
    t.irq(0, 0);
    t.waking(100, 0, 0, H, 1);
    t.switch(900, 1, (500, 120), R, H);
    let mut none = SystemFacts::default();
    none.set("kernel.preempt", "none");
    let a = t.analyze_with(none);
    let s = a.spikes.iter().find(|s| s.victim.tid == H.0).unwrap();
    assert_eq!(s.primary.cause, Cause::KernelNonpreemptible, "{}", why(s));
    assert!(s.primary.summary.contains("other:500"), "{}", why(s));
    assert!(!s.primary.summary.contains("<unknown>"), "{}", why(s));
}

/// Issue 35, item 3: a normal task that holds a PI lock runs at its waiter's priority
/// while boosted, and the switches show that priority; it is still a normal task, not a
/// default victim (`--all` asks for it), and it is named `OTHER nice 0, boosted to FIFO/RR
/// 90 by high:100`. N (OTHER, prio 120) is boosted to FIFO 90 by H, then preempted by a
/// FIFO 99 task for 500 us.
#[test]
fn a_pi_boosted_normal_task_is_not_a_default_victim() {
    const N: (i32, i32) = (500, 120);
    const X: (i32, i32) = (600, 0);
    let mut seq = Seq::default();
    seq.switch(0, 1, IDLE, R, N)
        .futex(10, 0, H.0, FUTEX_LOCK_PI)
        .pi(12, 0, H.0, N, H.1)
        .switch(14, 0, H, S, IDLE)
        .switch(100, 1, (N.0, H.1), R, X)
        .switch(600, 1, X, S, (N.0, H.1));
    let a = seq.analyze();
    assert!(
        a.spikes.iter().all(|s| s.victim.tid != N.0),
        "{:#?}",
        a.spikes
    );
    let config = Config {
        filter: rtwhy_analyze::TaskFilter {
            all: true,
            ..Default::default()
        },
        ..Config::default()
    };
    let mut all = Analyzer::new(config, SystemFacts::default());
    for e in &seq.events {
        all.push(e.clone());
    }
    let all = all.finish();
    let s = all
        .spikes
        .iter()
        .find(|s| s.victim.tid == N.0 && s.kind == SpikeKind::Preempted)
        .unwrap_or_else(|| panic!("no spike of N with --all: {:#?}", all.spikes));
    assert_eq!(s.latency_ns, 500 * US);
    // Named as the normal task it is, with the priority it ran at and who lent it.
    assert_eq!(
        s.victim.to_string(),
        "other:500 (OTHER nice 0, boosted to FIFO/RR 90 by high:100)"
    );
    assert_eq!(s.victim.own_prio(), Some(120));
}
