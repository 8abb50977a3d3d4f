//! The analyzer's rules on small hand-made event sequences (synthetic: each test builds
//! the few events a rule is about; the recorded fixtures test the rules on real traces).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rtwhy_analyze::{Analysis, Analyzer, Config, TaskFilter};
use rtwhy_model::{
    BreachRecord, BreakdownItem, Bucket, Cause, Comm, CpuList, Event, EventKind, Nanos,
    SpikeSource, SystemFacts, TaskState,
};

const US: u64 = 1_000;
const VICTIM: i32 = 100;
const VPRIO: i32 = 19; // FIFO 80

struct T {
    events: Vec<Event>,
}

impl T {
    fn new() -> T {
        T { events: Vec::new() }
    }
    fn ev(&mut self, us: u64, cpu: u32, pid: i32, kind: EventKind) -> &mut T {
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
    ) -> &mut T {
        let name = |pid: i32| {
            Comm::new(match pid {
                0 => "swapper/1",
                VICTIM => "ctl",
                _ => "other",
            })
        };
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
    fn waking(&mut self, us: u64, cpu: u32, by: i32) -> &mut T {
        self.ev(
            us,
            cpu,
            by,
            EventKind::SchedWaking {
                comm: Comm::new("ctl"),
                pid: VICTIM,
                prio: VPRIO,
                target_cpu: cpu as i32,
            },
        )
    }
    /// `pid` arms the victim's sleep timer `timer` on CPU 1 at `us`, due at `due_us`.
    fn arm(&mut self, us: u64, pid: i32, timer: u64, due_us: u64) -> &mut T {
        let due = (1_000_000_000 + due_us * US) as i64;
        self.ev(
            us,
            1,
            pid,
            EventKind::HrtimerStart {
                hrtimer: timer,
                function: 0,
                expires: due,
                softexpires: due,
                mode: None,
            },
        )
    }
    /// Timer `timer` runs on CPU 1 at `us`, in the context of `pid`.
    fn fire(&mut self, us: u64, pid: i32, timer: u64) -> &mut T {
        self.ev(
            us,
            1,
            pid,
            EventKind::HrtimerExpireEntry {
                hrtimer: timer,
                now: (1_000_000_000 + us * US) as i64,
                function: 0,
            },
        )
    }
    fn run(&self, config: Config, facts: SystemFacts) -> Analysis {
        let mut a = Analyzer::new(config, facts);
        for e in &self.events {
            a.push(e.clone());
        }
        a.finish()
    }
    fn analyze(&self) -> Analysis {
        self.run(Config::default(), SystemFacts::default())
    }
}

fn print(us: u64, pid: i32, text: &str) -> (u64, i32, EventKind) {
    (
        us,
        pid,
        EventKind::Print {
            text: text.to_string(),
        },
    )
}

/// The victim sleeps at 0 on CPU 1 (idle afterwards).
fn victim_sleeps(t: &mut T) {
    t.switch(0, 1, (VICTIM, VPRIO), 1, (0, 120));
}

#[test]
fn a_dropped_idle_to_task_switch_is_not_latency() {
    // Regression guard for the VMs here: ftrace drops most idle-to-task switches. The
    // victim is woken in idle at 100 us and its own next event comes 900 us later with
    // no switch recorded: it ran as soon as the idle CPU's waking code was done.
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.waking(100, 1, 0);
    t.ev(
        1000,
        1,
        VICTIM,
        EventKind::SyscallExit {
            call: rtwhy_model::SyscallKind::ClockNanosleep,
            ret: 0,
        },
    );
    let a = t.analyze();
    assert!(a.spikes.is_empty(), "{:?}", a.spikes);
    assert_eq!(a.victims.len(), 1);
    assert_eq!(a.victims[0].max_ns, 0);
}

#[test]
fn a_lower_task_keeping_the_cpu_after_the_wakeup_is_kernel_nonpreemptible() {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.switch(10, 1, (0, 120), 0, (200, 120));
    t.ev(
        100,
        1,
        200,
        EventKind::IrqHandlerEntry {
            irq: 24,
            name: "eth0".into(),
        },
    );
    t.ev(110, 1, 200, EventKind::IrqHandlerExit { irq: 24, ret: 1 });
    t.ev(111, 1, 200, EventKind::SoftirqEntry { vec: 3 });
    t.ev(112, 1, 200, EventKind::SoftirqExit { vec: 3 });
    t.waking(120, 1, 200);
    t.switch(520, 1, (200, 120), 0, (VICTIM, VPRIO));
    let a = t.analyze();
    assert_eq!(a.spikes.len(), 1);
    let s = &a.spikes[0];
    assert_eq!(s.latency_ns, 400 * US);
    assert_eq!(s.primary.cause, Cause::KernelNonpreemptible);
    assert_eq!(s.waker.as_ref().map(|w| w.tid), Some(200));
    assert_eq!(s.breakdown.iter().map(|i| i.ns).sum::<u64>(), s.latency_ns);
}

#[test]
fn a_device_irq_is_irq_on_isolated_cpu_only_where_the_cpu_is_isolated() {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.waking(100, 1, 0);
    t.ev(
        101,
        1,
        0,
        EventKind::IrqHandlerEntry {
            irq: 24,
            name: "virtio1-req.0".into(),
        },
    );
    t.ev(301, 1, 0, EventKind::IrqHandlerExit { irq: 24, ret: 1 });
    t.switch(305, 1, (0, 120), 0, (VICTIM, VPRIO));
    let a = t.analyze();
    assert_eq!(a.spikes[0].primary.cause, Cause::Irq);
    assert!(a.spikes[0]
        .breakdown
        .iter()
        .any(|i| matches!(&i.bucket, Bucket::Irq { irq: 24, .. }) && i.ns == 200 * US));
    let isolated = Config {
        isolated: Some(CpuList::parse("1").unwrap()),
        ..Config::default()
    };
    let a = t.run(isolated, SystemFacts::default());
    assert_eq!(a.spikes[0].primary.cause, Cause::IrqOnIsolatedCpu);
    // The same from the recording's own facts: an rtwhy-fact marker with the cmdline.
    let mut t2 = T::new();
    let (us, pid, kind) = print(0, 999, "rtwhy-fact: kernel.cmdline=quiet isolcpus=1");
    t2.ev(us, 0, pid, kind);
    t2.events.extend(t.events.iter().cloned());
    let a = t2.analyze();
    assert_eq!(a.spikes[0].primary.cause, Cause::IrqOnIsolatedCpu);
    assert!(a.spikes[0]
        .remediation
        .iter()
        .any(|r| r.contains("/proc/irq/24/smp_affinity_list")));
}

#[test]
fn a_breach_marker_gives_a_spike_with_its_exact_times() {
    // The recorder's record names a wake-up that ftrace did not see at all.
    let mut t = T::new();
    t.switch(0, 1, (0, 120), 0, (200, 120));
    let r = BreachRecord {
        tid: VICTIM,
        comm: Comm::new("ctl"),
        cpu: 1,
        prio: Some(VPRIO),
        latency: Nanos(300 * US),
        expiry: Some(Nanos(1_000_000_000 + 100 * US)),
        switch_in: Nanos(1_000_000_000 + 400 * US),
        ..BreachRecord::default()
    };
    t.switch(400, 1, (200, 120), 0, (VICTIM, VPRIO));
    let (us, pid, kind) = print(500, 999, &r.to_marker());
    t.ev(us, 0, pid, kind);
    // The breach is its victim's spike: a filter naming another thread leaves it out
    // (a breach of lab-med is not lab-high's), one naming the victim keeps it, although
    // the victim's name appears nowhere but in the record.
    let only = |comm: &str| Config {
        filter: TaskFilter {
            comms: vec![comm.into()],
            ..TaskFilter::default()
        },
        ..Config::default()
    };
    let other = t.run(only("nobody"), SystemFacts::default());
    assert!(other.spikes.is_empty(), "{:?}", other.spikes);
    let a = t.run(only("ctl"), SystemFacts::default());
    assert_eq!(a.spikes.len(), 1, "{:?}", a.spikes);
    let s = &a.spikes[0];
    assert_eq!(s.latency_ns, 300 * US);
    assert!(
        matches!(s.source, SpikeSource::BreachMarker { reported_ns, .. } if reported_ns == 300 * US)
    );
    assert_eq!(s.primary.cause, Cause::KernelNonpreemptible);
}

#[test]
fn a_breach_marker_keeps_the_timer_of_a_wakeup_the_events_ended_early() {
    // The recorder's breach names a wake-up whose switch-in ftrace dropped: by the
    // events it lasted 62 us (to the last event of idle), by the detector 70 us. The
    // events still tell that the victim's timer, due at 100 us, was handled at 160 us.
    const TIMER: u64 = 0xffff_c900_0000_1000;
    let ns = |us: u64| 1_000_000_000 + us * US;
    let mut t = T::new();
    t.arm(0, VICTIM, TIMER, 100);
    victim_sleeps(&mut t);
    t.fire(160, 0, TIMER);
    t.waking(161, 1, 0);
    t.ev(162, 1, 0, EventKind::HrtimerExpireExit { hrtimer: TIMER });
    t.ev(
        175,
        1,
        VICTIM,
        EventKind::SyscallExit {
            call: rtwhy_model::SyscallKind::ClockNanosleep,
            ret: 0,
        },
    );
    let r = BreachRecord {
        tid: VICTIM,
        comm: Comm::new("ctl"),
        cpu: 1,
        prio: Some(VPRIO),
        latency: Nanos(70 * US),
        expiry: Some(Nanos(ns(100))),
        waking: Some(Nanos(ns(161))),
        switch_in: Nanos(ns(170)),
        ..BreachRecord::default()
    };
    let (us, pid, kind) = print(2000, 999, &r.to_marker());
    t.ev(us, 0, pid, kind);
    let a = t.analyze();
    assert_eq!(a.spikes.len(), 1, "{:?}", a.spikes);
    let s = &a.spikes[0];
    assert_eq!(s.latency_ns, 70 * US);
    assert!(matches!(s.source, SpikeSource::BreachMarker { .. }));
    let delay: u64 = s
        .breakdown
        .iter()
        .filter(|b| b.bucket == Bucket::TimerIrqDelay)
        .map(|b| b.ns)
        .sum();
    assert_eq!(delay, 60 * US, "{:?}", s.breakdown);
    assert_eq!(s.primary.cause, Cause::Hwlat, "{:?}", s.primary);
}

#[test]
fn a_cyclictest_marker_names_its_wakeup_even_below_the_threshold() {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.switch(10, 1, (0, 120), 0, (200, 120));
    t.waking(100, 1, 200);
    t.switch(160, 1, (200, 120), 0, (VICTIM, VPRIO));
    let (us, pid, kind) = print(165, VICTIM, "hit latency threshold (60 > 50)");
    t.ev(us, 1, pid, kind);
    let a = t.analyze();
    assert_eq!(a.spikes.len(), 1);
    assert_eq!(a.spikes[0].latency_ns, 60 * US);
    assert!(
        matches!(&a.spikes[0].source, SpikeSource::ToolMarker { reported_ns, .. } if *reported_ns == 60 * US)
    );
}

/// A trace clock as coarse as the guest's `global` can stamp cyclictest's marker with the
/// very instant of its switch-in, and the marker then sorts first: it is still about the
/// wake-up that switch ends (the marker's writer is running), not the one before it.
#[test]
fn a_cyclictest_marker_stamped_with_its_switch_in_names_that_wakeup() {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.switch(10, 1, (0, 120), 0, (200, 120));
    // An earlier, short wait the marker must not be paired with.
    t.waking(100, 1, 200);
    t.switch(120, 1, (200, 120), 0, (VICTIM, VPRIO));
    t.switch(130, 1, (VICTIM, VPRIO), 1, (200, 120));
    t.waking(1000, 1, 200);
    let (us, pid, kind) = print(5000, VICTIM, "hit latency threshold (4000 > 3000)");
    t.ev(us, 1, pid, kind);
    t.switch(5000, 1, (200, 120), 0, (VICTIM, VPRIO));
    let a = t.analyze();
    assert_eq!(a.spikes.len(), 1, "{:?}", a.spikes);
    let s = &a.spikes[0];
    assert_eq!(s.latency_ns, 4000 * US);
    assert!(
        matches!(&s.source, SpikeSource::ToolMarker { reported_ns, .. } if *reported_ns == 4000 * US),
        "{:?}",
        s.source
    );
}

#[test]
fn without_irq_events_the_verdict_says_what_is_missing() {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.waking(100, 1, 0);
    t.switch(400, 1, (0, 120), 0, (VICTIM, VPRIO));
    let a = t.analyze();
    let s = &a.spikes[0];
    assert_eq!(s.primary.cause, Cause::Unknown);
    assert!(
        s.primary.summary.contains("stayed idle"),
        "{}",
        s.primary.summary
    );
    assert!(
        s.missing.iter().any(|m| m.contains("irq:")),
        "{:?}",
        s.missing
    );
}

#[test]
fn a_normal_thread_is_measured_only_when_named_by_tid() {
    let mut t = T::new();
    t.switch(0, 1, (300, 120), 1, (0, 120));
    t.ev(
        100,
        1,
        0,
        EventKind::SchedWaking {
            comm: Comm::new("worker"),
            pid: 300,
            prio: 120,
            target_cpu: 1,
        },
    );
    t.switch(900, 1, (0, 120), 0, (300, 120));
    assert!(t.analyze().spikes.is_empty());
    let by_tid = Config {
        filter: TaskFilter {
            tids: vec![300],
            ..TaskFilter::default()
        },
        ..Config::default()
    };
    assert_eq!(t.run(by_tid, SystemFacts::default()).spikes.len(), 1);
}

/// The victim's timer, due at 100 us, is handled at 700 us while a normal task runs on
/// CPU 1 (in kernel code, by the detector's stack); the recorder's marker carries the
/// stack it took in that late interrupt. `cpu0_busy`: CPU 0 has events all along.
fn late_timer_in_kernel_code(interrupted: &[&str], cpu0_busy: bool, marker: bool) -> Analysis {
    const TIMER: u64 = 0xffff_c900_0000_2000;
    let ns = |us: u64| 1_000_000_000 + us * US;
    let mut t = T::new();
    t.arm(0, VICTIM, TIMER, 100);
    t.switch(0, 1, (VICTIM, VPRIO), 1, (200, 120));
    // CPU 0's history covers the stretch: events before it, and in it only when busy.
    for i in 0..16u64 {
        let (a, b) = if i % 2 == 0 { (0, 300) } else { (300, 0) };
        let at = 20 + 50 * i;
        if cpu0_busy || !(90..=710).contains(&at) {
            t.switch(at, 0, (a, 120), 0, (b, 120));
        }
    }
    t.fire(700, 200, TIMER);
    t.waking(701, 1, 200);
    t.ev(702, 1, 200, EventKind::HrtimerExpireExit { hrtimer: TIMER });
    t.switch(705, 1, (200, 120), 0, (VICTIM, VPRIO));
    t.events.sort_by_key(|e| e.ts);
    if marker {
        let r = BreachRecord {
            tid: VICTIM,
            comm: Comm::new("ctl"),
            cpu: 1,
            prio: Some(VPRIO),
            latency: Nanos(605 * US),
            expiry: Some(Nanos(ns(100))),
            waking: Some(Nanos(ns(701))),
            switch_in: Nanos(ns(705)),
            timer_fired: Some(Nanos(ns(700))),
            timer_stack: interrupted.iter().map(|s| (*s).to_string()).collect(),
            ..BreachRecord::default()
        };
        let (us, pid, kind) = print(900, 999, &r.to_marker());
        t.ev(us, 0, pid, kind);
    }
    t.analyze()
}

const IRQS_OFF_STACK: [&str; 4] = [
    "_raw_spin_unlock_irqrestore+0x19",
    "free_frozen_page_commit.isra.0+0x19d",
    "free_unref_folios+0x346",
    "folios_put_refs+0x11c",
];

#[test]
fn a_late_timer_delivered_where_kernel_code_reenabled_interrupts_names_that_code() {
    let a = late_timer_in_kernel_code(&IRQS_OFF_STACK, true, true);
    assert_eq!(a.spikes.len(), 1, "{:?}", a.spikes);
    let s = &a.spikes[0];
    assert_eq!(s.primary.cause, Cause::KernelNonpreemptible, "{:?}", s);
    assert!(
        s.primary.summary.contains("interrupts disabled"),
        "{}",
        s.primary.summary
    );
    assert!(
        s.primary.summary.contains("free_frozen_page_commit"),
        "{}",
        s.primary.summary
    );
    assert!(
        s.remediation
            .iter()
            .any(|r| r.contains("free_frozen_page_commit ran on CPU 1 with interrupts off")),
        "{:?}",
        s.remediation
    );
    match &s.source {
        SpikeSource::BreachMarker {
            late_timer: Some(l),
            ..
        } => {
            assert_eq!(l.late_ns, 600 * US);
            assert_eq!(l.interrupted.len(), 4);
        }
        other => panic!("no late timer in {other:?}"),
    }
}

#[test]
fn without_the_stack_or_when_every_cpu_stopped_a_late_timer_is_not_blamed_on_kernel_code() {
    let summary_of = |a: &Analysis| {
        (
            a.spikes[0].primary.cause,
            a.spikes[0].primary.summary.clone(),
        )
    };
    // The same events without the detector's stack: nothing names kernel code.
    let (cause, summary) = summary_of(&late_timer_in_kernel_code(&IRQS_OFF_STACK, true, false));
    assert!(
        !summary.contains("interrupts disabled"),
        "{cause}: {summary}"
    );
    // CPU 0 silent too: a stop from outside delivers the interrupt wherever the CPU
    // resumes, so the interrupts-off section proves nothing.
    let (cause, summary) = summary_of(&late_timer_in_kernel_code(&IRQS_OFF_STACK, false, true));
    assert!(
        !summary.contains("interrupts disabled"),
        "{cause}: {summary}"
    );
    // The interrupt found the idle loop, or code that never turned interrupts off.
    let idle = [
        "pv_native_safe_halt+0xb",
        "default_idle+0x9",
        "do_idle+0x1e2",
    ];
    let (cause, summary) = summary_of(&late_timer_in_kernel_code(&idle, true, true));
    assert!(
        !summary.contains("interrupts disabled"),
        "{cause}: {summary}"
    );
    let plain = ["step_into+0x5", "link_path_walk+0x20e"];
    let (cause, summary) = summary_of(&late_timer_in_kernel_code(&plain, true, true));
    assert!(
        !summary.contains("interrupts disabled"),
        "{cause}: {summary}"
    );
}

#[test]
fn a_breach_marker_names_the_spike_nearest_its_switch_in_not_the_next_period() {
    // Two 300 us spikes of a 1 kHz loop, their ends 900 us apart; the detector's record
    // of the first comes after both. Both ends are within 1 ms of its switch-in.
    let mut t = T::new();
    for base in [0u64, 900] {
        victim_sleeps_at(&mut t, base);
        t.switch(base + 50, 1, (0, 120), 0, (200, 120));
        t.waking(base + 100, 1, 200);
        t.switch(base + 400, 1, (200, 120), 0, (VICTIM, VPRIO));
    }
    let r = BreachRecord {
        tid: VICTIM,
        comm: Comm::new("ctl"),
        cpu: 1,
        prio: Some(VPRIO),
        latency: Nanos(301 * US),
        waking: Some(Nanos(1_000_000_000 + 100 * US)),
        switch_in: Nanos(1_000_000_000 + 401 * US),
        ..BreachRecord::default()
    };
    let (us, pid, kind) = print(2000, 999, &r.to_marker());
    t.ev(us, 0, pid, kind);
    let a = t.analyze();
    assert_eq!(a.spikes.len(), 2, "{:?}", a.spikes);
    assert!(
        matches!(a.spikes[0].source, SpikeSource::BreachMarker { reported_ns, .. } if reported_ns == 301 * US),
        "{:?}",
        a.spikes[0].source
    );
    assert_eq!(a.spikes[1].source, SpikeSource::Events);
}

/// The victim goes to sleep on CPU 1 at `us`.
fn victim_sleeps_at(t: &mut T, us: u64) {
    t.switch(us, 1, (VICTIM, VPRIO), 1, (0, 120));
}

#[test]
fn an_irq_thread_whose_hard_half_came_before_the_window_is_summed_up_without_it() {
    // The device's hard handler ran at 80 us and woke its thread (FIFO 50), which holds
    // CPU 1 from 90 us; the victim (FIFO 40, below it), woken at 100 us, runs at 400 us.
    // The window holds only the thread: no "hard handler 0.0 us" in the summary.
    const LOW: i32 = 59; // FIFO 40
    let switch =
        |prev: (i32, &str, i32), state: u64, next: (i32, &str, i32)| EventKind::SchedSwitch {
            prev_comm: Comm::new(prev.1),
            prev_pid: prev.0,
            prev_prio: prev.2,
            prev_state: TaskState(state),
            next_comm: Comm::new(next.1),
            next_pid: next.0,
            next_prio: next.2,
        };
    let thread = (50, "irq/24-virtio1-", 49);
    let mut t = T::new();
    t.ev(
        0,
        1,
        VICTIM,
        switch((VICTIM, "ctl", LOW), 1, (0, "swapper/1", 120)),
    );
    t.ev(
        80,
        1,
        0,
        EventKind::IrqHandlerEntry {
            irq: 24,
            name: "virtio1-req.0".into(),
        },
    );
    t.ev(82, 1, 0, EventKind::IrqHandlerExit { irq: 24, ret: 2 });
    t.ev(90, 1, 0, switch((0, "swapper/1", 120), 0, thread));
    t.ev(
        100,
        1,
        50,
        EventKind::SchedWaking {
            comm: Comm::new("ctl"),
            pid: VICTIM,
            prio: LOW,
            target_cpu: 1,
        },
    );
    t.ev(400, 1, 50, switch(thread, 1, (VICTIM, "ctl", LOW)));
    let a = t.analyze();
    let s = &a.spikes[0];
    assert_eq!(s.primary.cause, Cause::Irq, "{:?}", s.primary);
    assert!(s
        .breakdown
        .iter()
        .any(|i| matches!(&i.bucket, Bucket::IrqThread { irq: 24, .. }) && i.ns == 300 * US));
    let summary = &s.primary.summary;
    assert!(
        summary.contains("300.0 us (thread irq/24-virtio1-"),
        "{summary}"
    );
    assert!(!summary.contains("hard handler"), "{summary}");
}

/// A capture taken right after the previous one (the selftest on a noisy host): the
/// trace begins with the victim's timer firing in idle 1.6 ms after it was due. Nothing
/// says what CPU 1 did before: that time is not recorded, and no cause is named for it
/// (calling it an idle exit, "1.668 ms to leave idle", would name a cause the trace does
/// not show). In a trace that began earlier, with CPU 1 silent since, the same time is
/// CPU 1's idle.
#[test]
fn a_spike_that_began_before_the_recording_names_no_cause_for_the_unrecorded_time() {
    const TIMER: u64 = 0xffff_c900_0000_2000;
    let ns = |us: u64| 1_000_000_000 + us * US;
    let spike = |earlier: bool| {
        let mut t = T::new();
        if earlier {
            t.ev(0, 0, 300, EventKind::SoftirqRaise { vec: 1 });
        }
        t.fire(1700, 0, TIMER);
        t.waking(1740, 1, 0);
        t.ev(1741, 1, 0, EventKind::HrtimerExpireExit { hrtimer: TIMER });
        t.switch(1760, 1, (0, 120), 0, (VICTIM, VPRIO));
        let r = BreachRecord {
            tid: VICTIM,
            comm: Comm::new("ctl"),
            cpu: 1,
            prio: Some(VPRIO),
            latency: Nanos(1660 * US),
            expiry: Some(Nanos(ns(100))),
            waking: Some(Nanos(ns(1740))),
            switch_in: Nanos(ns(1760)),
            ..BreachRecord::default()
        };
        let (us, pid, kind) = print(3000, 999, &r.to_marker());
        t.ev(us, 0, pid, kind);
        let a = t.analyze();
        assert_eq!(a.spikes.len(), 1, "{:?}", a.spikes);
        a.spikes[0].clone()
    };
    let late = spike(false);
    let unseen: u64 = late
        .breakdown
        .iter()
        .filter(|b| b.bucket == Bucket::NotRecorded)
        .map(|b| b.ns)
        .sum();
    assert_eq!(unseen, 1600 * US, "{:?}", late.breakdown);
    assert_eq!(late.primary.cause, Cause::Unknown, "{:?}", late.primary);
    assert!(
        late.primary
            .summary
            .contains("recording of CPU 1 begins 1.600 ms into this spike"),
        "{}",
        late.primary.summary
    );
    assert!(
        late.missing
            .iter()
            .any(|m| m.contains("CPU 1 is recorded from")),
        "{:?}",
        late.missing
    );
    assert!(late.contributors.iter().all(|c| c.cause != Cause::IdleExit));
    assert!(
        late.remediation
            .iter()
            .any(|r| r.contains("capture taken before this one")),
        "{:?}",
        late.remediation
    );

    let whole = spike(true);
    assert_eq!(
        whole.breakdown,
        [BreakdownItem {
            bucket: Bucket::Idle,
            ns: 1660 * US
        }]
    );
}

/// A FIFO 90 thread (pid 200, kernel prio `hog_in` when switched in) computes in user
/// space on CPU 1 from 100 us to 3400 us, making no events of its own; the victim's timer fires on
/// time at 1000 us in its context; `tick_lateness_us`, when given, is how late a periodic
/// tick's `now - expires` says it was when it fires at 3300 us (its expiry a stale one).
fn user_space_spinner(hog_in: i32, tick_lateness_us: Option<u64>) -> T {
    let mut t = T::new();
    victim_sleeps(&mut t);
    t.arm(1, VICTIM, 0xA, 1000);
    if let Some(late) = tick_lateness_us {
        t.arm(2, 0, 0xB, 3300 - late);
    }
    t.switch(100, 1, (0, 120), 0, (200, hog_in));
    t.fire(1000, 200, 0xA);
    t.waking(1001, 1, 200);
    // The local timer interrupts it once on the way: the run has events of its own.
    t.ev(
        2000,
        1,
        200,
        EventKind::IrqHandlerEntry {
            irq: 236,
            name: "local_timer".into(),
        },
    );
    t.ev(2002, 1, 200, EventKind::IrqHandlerExit { irq: 236, ret: 1 });
    if tick_lateness_us.is_some() {
        t.fire(3300, 200, 0xB);
    }
    t.switch(3400, 1, (200, 9), 1, (VICTIM, VPRIO));
    t
}

#[test]
fn a_higher_priority_thread_computing_in_user_space_is_preemption_not_a_stopped_cpu() {
    // Silence inside one task's run, closed by a tick whose `now - expires` reads 2.3 ms
    // late, is not hwlat ("CPU 1 was stopped"): the spinner ran the whole time, as a
    // task in user space does, without events.
    let a = user_space_spinner(9, Some(2300)).analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == VICTIM).unwrap();
    assert_eq!(s.primary.cause, Cause::Preemption, "{}", s.primary.summary);
    assert!(
        !s.breakdown.iter().any(|i| i.bucket == Bucket::Unaccounted),
        "{:?}",
        s.breakdown
    );
}

#[test]
fn a_thread_that_raised_its_own_priority_is_judged_at_the_priority_it_ran_with() {
    // Switched in as SCHED_OTHER, the spinner raised itself to FIFO 90
    // (sched_setscheduler, which no event shows) and was switched out at [9]: its run
    // is preemption, not a lower-priority task in a non-preemptible section.
    let a = user_space_spinner(120, None).analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == VICTIM).unwrap();
    assert_eq!(s.primary.cause, Cause::Preemption, "{}", s.primary.summary);
    assert!(
        s.primary.summary.contains("FIFO/RR 90"),
        "{}",
        s.primary.summary
    );
    // The whole run, before the interrupt in it too, is at FIFO 90.
    assert!(
        s.breakdown
            .iter()
            .all(|i| !matches!(i.bucket, Bucket::Task { prio, .. } if prio != 9)),
        "{:?}",
        s.breakdown
    );
    assert!(s.contributors.is_empty(), "{:?}", s.contributors);
}

#[test]
fn a_deadline_task_past_its_runtime_is_not_rt_throttled() {
    // A SCHED_DEADLINE task (prio -1) that used its runtime is
    // switched out runnable until its next period, by design: not a default victim, and
    // named by tid it is never an rt_throttling victim (sched_rt_runtime_us does not
    // limit it).
    let mut t = T::new();
    t.switch(0, 1, (0, 120), 0, (300, -1));
    t.switch(20_000, 1, (300, -1), 0, (400, 120));
    t.switch(100_000, 1, (400, 120), 0, (300, -1));
    t.switch(101_000, 1, (300, -1), 1, (0, 120));
    assert!(t.analyze().spikes.is_empty(), "{:?}", t.analyze().spikes);
    let by_tid = Config {
        filter: TaskFilter {
            tids: vec![300],
            ..TaskFilter::default()
        },
        ..Config::default()
    };
    let a = t.run(by_tid, SystemFacts::default());
    assert_no_spike_is(&a, Cause::RtThrottling);
}

/// No spike of `a` has `cause` as its primary (the summaries printed if one has).
fn assert_no_spike_is(a: &Analysis, cause: Cause) {
    assert!(
        a.spikes.iter().all(|s| s.primary.cause != cause),
        "{:?}",
        a.spikes
            .iter()
            .map(|s| &s.primary.summary)
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_timer_armed_after_its_expiry_is_not_late_before_it_was_armed() {
    // A thread that comes back late sleeps until an absolute time
    // already behind it; its timer fires at once. `now - expires` (3.6 ms) is the thread's
    // own overrun, not a timer interrupt held off: no stopped CPU.
    let mut t = T::new();
    t.switch(0, 1, (0, 120), 0, (VICTIM, VPRIO));
    t.arm(3600, VICTIM, 0xC, 0);
    t.switch(3601, 1, (VICTIM, VPRIO), 1, (0, 120));
    t.fire(3617, 0, 0xC);
    t.waking(3618, 1, 0);
    t.switch(3620, 1, (0, 120), 0, (VICTIM, VPRIO));
    let a = t.analyze();
    assert_no_spike_is(&a, Cause::Hwlat);
}

#[test]
fn a_real_time_task_switched_out_runnable_for_lower_work_is_not_kernel_nonpreemptible() {
    // A FIFO task switched out while runnable in favour of a normal task was refused by
    // the scheduler (RT throttling's signature, here too short to be named): not
    // kernel_nonpreemptible, which that very switch rules out.
    let mut t = T::new();
    t.switch(0, 1, (0, 120), 0, (VICTIM, VPRIO));
    t.switch(1000, 1, (VICTIM, VPRIO), 0, (400, 120));
    t.switch(3000, 1, (400, 120), 0, (VICTIM, VPRIO));
    t.switch(3100, 1, (VICTIM, VPRIO), 1, (0, 120));
    let a = t.analyze();
    let s = a.spikes.iter().find(|s| s.victim.tid == VICTIM).unwrap();
    assert_ne!(
        s.primary.cause,
        Cause::KernelNonpreemptible,
        "{}",
        s.primary.summary
    );
}
