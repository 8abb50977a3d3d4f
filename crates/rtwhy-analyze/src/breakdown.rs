//! Replaying one CPU's recent events to say where every nanosecond of a spike went.
//!
//! The replay walks the CPU's history from the last context switch before the window,
//! tracking who is current (from `sched_switch` and from every event's `common_pid`, so
//! a switch that ftrace dropped does not hide the task) and the IRQ/softirq nesting.
//! Each stretch between two events is given to the innermost context; an event-free
//! stretch that ends in a late timer interrupt is time the CPU was stopped.

use rtwhy_model::{Bucket, Comm, Event, EventKind, Nanos, SoftirqContext, TaskRef};

use crate::history::{Dropped, History};
use rtwhy_model::at_or_above;

/// The shortest event-free stretch that may count as a stopped CPU.
const MIN_STOP: u64 = 50_000;
/// How far back the replay looks for the state at the window's start.
const MAX_LOOKBACK: usize = 50_000;

/// A late timer interrupt: the CPU took it `lateness` after it was due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LateTimer {
    pub ts: Nanos,
    pub cpu: u32,
    pub lateness: u64,
}

/// What the replay knows about tasks and interrupts it meets.
pub(crate) trait TaskNames {
    fn task(&self, tid: i32) -> Option<(Comm, i32)>;
    /// The handler name of an IRQ (from its `irq_handler_entry` or the recorded facts).
    fn irq_name(&self, _irq: i32) -> Option<String> {
        None
    }
}

/// The IRQ number an `irq/N-name` thread serves (`irq/N-s-name` for a secondary
/// handler): the kernel names its interrupt threads so.
pub(crate) fn irq_thread_number(comm: &Comm) -> Option<i32> {
    let rest = comm.as_bytes().strip_prefix(b"irq/")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b'-') {
        return None;
    }
    std::str::from_utf8(rest.get(..digits)?).ok()?.parse().ok()
}

/// The kernel threads that run softirqs on PREEMPT_RT besides `ksoftirqd/N`.
fn runs_threaded_softirqs(comm: &Comm) -> bool {
    let c = comm.as_bytes();
    irq_thread_number(comm).is_some()
        || c.starts_with(b"ktimers/")
        || c.starts_with(b"ktimersoftd/")
}

/// One stretch of the window with one occupant.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub bucket: Bucket,
    pub from: Nanos,
    pub to: Nanos,
    /// The event that began it (entry, switch), when it lies in the history.
    pub begin: Option<Event>,
    /// The event that ended it.
    pub end: Option<Event>,
}

/// The victim's own timer: due at `expiry`, handled at `handler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimerFire {
    pub expiry: Nanos,
    pub handler: Nanos,
}

/// What the replay of one window found.
#[derive(Debug, Default)]
pub(crate) struct Replay {
    pub segments: Vec<Segment>,
    /// Last idle state entered before the window (`cpu_idle state`), and when.
    pub idle_before: Option<(u32, Event)>,
    /// Frequencies seen on the CPU from shortly before the window to its end (kHz).
    pub frequencies: Vec<Event>,
    /// The late timer that closed the largest stopped stretch.
    pub late_timer: Option<LateTimer>,
    /// The history did not reach back to the window's start: the stretch before the
    /// CPU's first event is `Bucket::NotRecorded`.
    pub truncated: bool,
    /// Who was current on the CPU when the window began (0: idle, -1: not known, as
    /// when the history begins inside the window).
    pub start_curr: i32,
    /// Events the ring buffer dropped on the CPU between the switch the replay starts
    /// from and the window's end: who ran and which handler was open are not known.
    pub dropped: Option<Dropped>,
}

#[derive(Debug, Clone)]
enum Ctx {
    Irq { irq: i32, name: String },
    Softirq { vec: u32 },
}

/// Inputs of one replay.
pub(crate) struct Window<'a> {
    pub cpu: u32,
    pub from: Nanos,
    pub to: Nanos,
    pub victim: &'a TaskRef,
    pub timer: Option<TimerFire>,
    /// What the victim's own time in the window is (`None`: [`Bucket::Victim`], its
    /// switch-in not recorded): inside the application's own measurement
    /// ([`Bucket::VictimRan`]), or asking for a lock ([`Bucket::LockRequest`]).
    pub own: Option<Bucket>,
}

pub(crate) fn replay(
    history: &History,
    late: &[LateTimer],
    tasks: &dyn TaskNames,
    w: &Window<'_>,
) -> Replay {
    let q = history.cpu(w.cpu);
    let mut out = Replay {
        start_curr: -1,
        ..Replay::default()
    };
    if w.to <= w.from {
        return out;
    }
    let i0 = history.first_at(w.cpu, w.from);
    let recorded_from = history.recorded_from(w.cpu).unwrap_or(w.to).min(w.to);
    out.truncated = recorded_from > w.from;

    // State at the window's start: replay from the last switch before it.
    let mut curr: i32 = -1;
    let mut stack: Vec<Ctx> = Vec::new();
    let lookback_end = i0.saturating_sub(MAX_LOOKBACK);
    let mut begin = lookback_end;
    for i in (lookback_end..i0).rev() {
        if let Some(e) = q.get(i) {
            if matches!(e.kind, EventKind::SchedSwitch { .. }) {
                begin = i;
                break;
            }
        }
    }
    let known_from = q.get(begin).map_or(w.from, |e| e.ts.min(w.from));
    out.dropped = history.drop_within(w.cpu, known_from, w.to);
    let mut last_open: Option<Event> = None;
    let mut prio: Option<i32> = None;
    for e in q.range(begin..i0) {
        apply(e, &mut curr, &mut stack, &mut prio);
        observe_power(e, w, &mut out);
        last_open = Some(e.clone());
    }
    // A softirq that began before anything the history holds (a capture starting inside
    // a long NET_RX run in an IRQ thread) shows only its exit: until that exit the CPU
    // was in the softirq, not in the task's own code.
    if !stack.iter().any(|c| matches!(c, Ctx::Softirq { .. })) {
        let first = q.range(i0..).take_while(|e| e.ts < w.to).find(|e| {
            matches!(
                e.kind,
                EventKind::SchedSwitch { .. }
                    | EventKind::SoftirqEntry { .. }
                    | EventKind::SoftirqExit { .. }
            )
        });
        if let Some(EventKind::SoftirqExit { vec }) = first.map(|e| &e.kind) {
            stack.insert(0, Ctx::Softirq { vec: *vec });
        }
    }

    // Nothing before the window says who ran (the capture or the kept history starts
    // inside it): the CPU's first event does. A switch puts off the CPU the task that
    // was on it; any other event is made in the current task's context. Without this
    // the stretch is a task of unknown name and priority, which no rule may count as
    // lower-priority work.
    if curr == -1 {
        if let Some(e) = q.range(i0..).find(|e| !is_stack(e)) {
            match &e.kind {
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_prio,
                    ..
                } => {
                    curr = *prev_pid;
                    prio = Some(*prev_prio);
                }
                _ => curr = e.pid,
            }
        }
    }
    let mut acc = Acc {
        out: Vec::new(),
        victim: w.victim,
        own: w.own.clone(),
        tasks,
    };
    let mut t = w.from;
    // The recording begins inside the window (a capture taken right after the previous
    // one, a trace started late): until then nobody saw what the CPU did. Its first event
    // says who was current from then on, not before; the time before is not recorded,
    // and the CPU's state when the window began is not known.
    if out.truncated {
        acc.push(Bucket::NotRecorded, w.from, recorded_from, &None, q.get(i0));
        t = recorded_from;
    } else {
        out.start_curr = curr;
    }
    let mut opened_by = last_open;
    // The first segment of the current task's run at the priority it has now: a task's
    // priority is the one its latest event shows, so a switch-out at another priority (a
    // thread that raised its own with sched_setscheduler while it ran, which no event
    // shows) re-prices the run back to the last event that set it.
    let mut priced_from = 0;
    let reprice = |acc: &mut Acc<'_>, e: &Event, curr: i32, prio: &mut Option<i32>, from| {
        if let EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            ..
        } = &e.kind
        {
            if *prev_pid == curr && curr > 0 && *prio != Some(*prev_prio) {
                *prio = Some(*prev_prio);
                acc.reprice(from, curr, *prev_prio);
            }
        }
    };
    for e in q.range(i0..) {
        if e.ts >= w.to {
            break;
        }
        // Before the recording began only markers from another buffer can lie (their
        // writer says nothing of who ran): they neither end a stretch nor begin one.
        if e.ts < t {
            continue;
        }
        reprice(&mut acc, e, curr, &mut prio, priced_from);
        acc.stretch(
            t,
            e.ts,
            w,
            late,
            (curr, prio),
            &stack,
            &opened_by,
            Some(e),
            &mut out,
        );
        let before = prio;
        apply(e, &mut curr, &mut stack, &mut prio);
        if prio != before || matches!(e.kind, EventKind::SchedSwitch { .. }) {
            priced_from = acc.out.len();
        }
        observe_power(e, w, &mut out);
        t = e.ts;
        opened_by = Some(e.clone());
    }
    let next = q.range(i0..).find(|e| e.ts >= w.to).cloned();
    if let Some(e) = &next {
        reprice(&mut acc, e, curr, &mut prio, priced_from);
    }
    acc.stretch(
        t,
        w.to,
        w,
        late,
        (curr, prio),
        &stack,
        &opened_by,
        next.as_ref(),
        &mut out,
    );
    out.segments = acc.out;
    out
}

fn observe_power(e: &Event, w: &Window<'_>, out: &mut Replay) {
    match e.kind {
        EventKind::CpuIdle { state, .. } if state != u32::MAX && e.ts <= w.from => {
            out.idle_before = Some((state, e.clone()));
        }
        EventKind::CpuFrequency { .. } if e.ts.0.saturating_add(100_000_000) >= w.from.0 => {
            out.frequencies.push(e.clone());
        }
        _ => {}
    }
}

/// Follows who is current, at which priority, and the interrupt nesting.
fn apply(e: &Event, curr: &mut i32, stack: &mut Vec<Ctx>, prio: &mut Option<i32>) {
    if e.pid != *curr && !matches!(e.kind, EventKind::SchedSwitch { .. }) {
        *prio = None;
    }
    match &e.kind {
        EventKind::SchedSwitch {
            next_pid,
            next_prio,
            ..
        } => {
            *curr = *next_pid;
            *prio = Some(*next_prio);
            stack.clear();
        }
        EventKind::SchedPiSetprio { pid, newprio, .. } if *pid == *curr => {
            *prio = Some(*newprio);
        }
        EventKind::IrqHandlerEntry { irq, name } => {
            *curr = e.pid;
            stack.push(Ctx::Irq {
                irq: *irq,
                name: name.clone(),
            });
        }
        EventKind::IrqHandlerExit { .. } => {
            *curr = e.pid;
            while let Some(c) = stack.pop() {
                if matches!(c, Ctx::Irq { .. }) {
                    break;
                }
            }
        }
        EventKind::SoftirqEntry { vec } => {
            *curr = e.pid;
            stack.push(Ctx::Softirq { vec: *vec });
        }
        EventKind::SoftirqExit { .. } => {
            *curr = e.pid;
            while let Some(c) = stack.pop() {
                if matches!(c, Ctx::Softirq { .. }) {
                    break;
                }
            }
        }
        _ => *curr = e.pid,
    }
    if stack.len() > 16 {
        stack.clear();
    }
}

struct Acc<'a> {
    out: Vec<Segment>,
    victim: &'a TaskRef,
    own: Option<Bucket>,
    tasks: &'a dyn TaskNames,
}

impl Acc<'_> {
    /// Whether a stretch in which task `curr` is current, closed by `closed_by`, lies
    /// inside one run of that task: no interrupt open (a softirq the task runs itself as
    /// a thread, `ksoftirqd/N`, `ktimers/N`, `irq/N-name`, is its own work), and the last
    /// event is the task's own (an interrupt taken in its context, a system call) or its
    /// switch-out.
    fn inside_one_run(&self, curr: i32, stack: &[Ctx], closed_by: Option<&Event>) -> bool {
        if curr <= 0 {
            return false;
        }
        let threaded = || {
            self.tasks.task(curr).is_some_and(|(c, _)| {
                runs_threaded_softirqs(&c) || c.as_bytes().starts_with(b"ksoftirqd/")
            })
        };
        if !(stack.is_empty()
            || (stack.iter().all(|c| matches!(c, Ctx::Softirq { .. })) && threaded()))
        {
            return false;
        }
        match closed_by {
            Some(Event {
                kind: EventKind::SchedSwitch { prev_pid, .. },
                ..
            }) => *prev_pid == curr,
            Some(e) => e.pid == curr && !is_stack(e),
            None => false,
        }
    }

    /// Gives task `tid`'s stretches from segment `from` on the priority `prio`.
    fn reprice(&mut self, from: usize, tid: i32, prio: i32) {
        let victim_prio = self.victim.prio;
        for s in self.out.iter_mut().skip(from) {
            match &mut s.bucket {
                Bucket::Task {
                    tid: t,
                    prio: p,
                    outranks_victim,
                    equals_victim,
                    ..
                } if *t == tid => {
                    *p = prio;
                    *outranks_victim = at_or_above(prio, victim_prio);
                    *equals_victim = victim_prio == Some(prio);
                }
                Bucket::IrqThread {
                    thread,
                    outranks_victim,
                    equals_victim,
                    ..
                } if thread.tid == tid => {
                    thread.prio = Some(prio);
                    *outranks_victim = at_or_above(prio, victim_prio);
                    *equals_victim = victim_prio == Some(prio);
                }
                _ => {}
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn stretch(
        &mut self,
        from: Nanos,
        to: Nanos,
        w: &Window<'_>,
        late: &[LateTimer],
        curr: (i32, Option<i32>),
        stack: &[Ctx],
        opened_by: &Option<Event>,
        closed_by: Option<&Event>,
        out: &mut Replay,
    ) {
        if to <= from {
            return;
        }
        let mut from = from;
        // The victim's own timer: due but not yet handled, and the CPU silent from the
        // expiry on (or for long stretches later). Once the CPU shows life, its time
        // belongs to whatever it was doing.
        if let Some(tf) = w.timer {
            if from < tf.handler
                && from >= tf.expiry
                && stack.is_empty()
                && (from == w.from || to.0 - from.0 >= MIN_STOP)
            {
                let until = tf.handler.min(to);
                self.push(Bucket::TimerIrqDelay, from, until, opened_by, closed_by);
                from = until;
                if from >= to {
                    return;
                }
            }
        }
        // A late timer interrupt right after an event-free stretch: the CPU was stopped.
        // Not inside one task's run, with the task current at both ends (the stretch
        // begins in its context and ends with an event of its own or its switch-out): a
        // task computing in user space makes no events, and that silence is the task
        // running, whatever a timer's `now - expires` says.
        if to.0 - from.0 >= MIN_STOP && !self.inside_one_run(curr.0, stack, closed_by) {
            // `late` is in time order: start at the first timer at or after `to`.
            let first = late.partition_point(|l| l.ts < to);
            let late_here = late
                .iter()
                .skip(first)
                .take_while(|l| l.ts.0 <= to.0 + 20_000)
                .filter(|l| l.cpu == w.cpu)
                .max_by_key(|l| l.lateness);
            if let Some(l) = late_here {
                let due = Nanos(l.ts.0.saturating_sub(l.lateness));
                let stop_from = due.max(from);
                if to.0 - stop_from.0 >= MIN_STOP {
                    self.push_context(from, stop_from, curr, stack, opened_by, closed_by);
                    self.push(Bucket::Unaccounted, stop_from, to, opened_by, closed_by);
                    if out.late_timer.is_none_or(|o| o.lateness < l.lateness) {
                        out.late_timer = Some(*l);
                    }
                    return;
                }
            }
        }
        self.push_context(from, to, curr, stack, opened_by, closed_by);
    }

    fn push_context(
        &mut self,
        from: Nanos,
        to: Nanos,
        (curr, curr_prio): (i32, Option<i32>),
        stack: &[Ctx],
        opened_by: &Option<Event>,
        closed_by: Option<&Event>,
    ) {
        if to <= from {
            return;
        }
        let bucket = match stack.last() {
            Some(Ctx::Irq { irq, name }) => Bucket::Irq {
                irq: *irq,
                name: name.clone(),
            },
            Some(Ctx::Softirq { vec }) => {
                let task = self.tasks.task(curr).filter(|_| curr > 0);
                let (context, thread) = match task {
                    Some((c, p)) if c.as_bytes().starts_with(b"ksoftirqd") => {
                        (SoftirqContext::Ksoftirqd, Some((c, p)))
                    }
                    // Not after a hard handler of its own: the thread itself runs it.
                    Some((c, p))
                        if runs_threaded_softirqs(&c)
                            && !stack.iter().any(|x| matches!(x, Ctx::Irq { .. })) =>
                    {
                        (SoftirqContext::Thread, Some((c, p)))
                    }
                    _ => (SoftirqContext::IrqExit, None),
                };
                Bucket::Softirq {
                    vec: *vec,
                    context,
                    thread: thread.map(|(comm, known_prio)| TaskRef {
                        tid: curr,
                        comm,
                        prio: Some(curr_prio.unwrap_or(known_prio)),
                        boost: None,
                    }),
                }
            }
            None if curr == 0 => Bucket::Idle,
            None if curr == self.victim.tid => self.own.clone().unwrap_or(Bucket::Victim),
            None => {
                let (comm, known_prio) = self
                    .tasks
                    .task(curr)
                    .unwrap_or((Comm::new("<unknown>"), 120));
                // The priority it ran at (a PI boost shows here), not its latest one.
                let prio = curr_prio.unwrap_or(known_prio);
                if let Some(irq) = irq_thread_number(&comm) {
                    let name = self
                        .tasks
                        .irq_name(irq)
                        .unwrap_or_else(|| comm.to_str_lossy().into_owned());
                    let bucket = Bucket::IrqThread {
                        irq,
                        name,
                        thread: TaskRef {
                            tid: curr,
                            comm,
                            prio: Some(prio),
                            boost: None,
                        },
                        outranks_victim: at_or_above(prio, self.victim.prio),
                        equals_victim: self.victim.prio == Some(prio),
                    };
                    self.push(bucket, from, to, opened_by, closed_by);
                    return;
                }
                Bucket::Task {
                    tid: curr,
                    comm,
                    prio,
                    outranks_victim: at_or_above(prio, self.victim.prio),
                    equals_victim: self.victim.prio == Some(prio),
                    kernel_thread: is_kernel_thread(&comm),
                    boost: None,
                }
            }
        };
        self.push(bucket, from, to, opened_by, closed_by);
    }

    fn push(
        &mut self,
        bucket: Bucket,
        from: Nanos,
        to: Nanos,
        opened_by: &Option<Event>,
        closed_by: Option<&Event>,
    ) {
        if to <= from {
            return;
        }
        if let Some(last) = self.out.last_mut() {
            if last.bucket == bucket && last.to == from {
                last.to = to;
                last.end = closed_by.cloned();
                return;
            }
        }
        self.out.push(Segment {
            bucket,
            from,
            to,
            begin: opened_by.clone(),
            end: closed_by.cloned(),
        });
    }
}

/// Kernel threads by the names the kernel gives them.
pub(crate) fn is_kernel_thread(comm: &Comm) -> bool {
    const PREFIXES: [&str; 17] = [
        "kworker/",
        "ksoftirqd/",
        "kdamond",
        "rcu_",
        "rcuc/",
        "rcuog/",
        "rcuop/",
        "migration/",
        "kswapd",
        "kcompactd",
        "irq/",
        "jbd2/",
        "khugepaged",
        "watchdog",
        "cpuhp/",
        "kthreadd",
        "ktimers/",
    ];
    let name = comm.to_str_lossy();
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Other CPUs that were silent for most (80 %) of `[from, to)` although their history
/// covers it: several CPUs stopping at once points at SMIs or the hypervisor.
pub(crate) fn silent_cpus(history: &History, except: u32, from: Nanos, to: Nanos) -> Vec<u32> {
    let mut out = Vec::new();
    let span = to.0.saturating_sub(from.0);
    if span == 0 {
        return out;
    }
    for cpu in 0..history.cpu_count() as u32 {
        if cpu == except || history.start(cpu).is_none_or(|s| s >= from) {
            continue;
        }
        let q = history.cpu(cpu);
        let mut last = from;
        let mut longest = 0;
        for e in q.range(history.first_at(cpu, from)..) {
            if e.ts >= to {
                break;
            }
            longest = longest.max(e.ts.0 - last.0);
            last = e.ts;
        }
        longest = longest.max(to.0 - last.0);
        if longest * 10 >= span * 8 {
            out.push(cpu);
        }
    }
    out
}

/// ftrace's stack events carry the pid of the event they follow, not of the current task.
fn is_stack(e: &Event) -> bool {
    matches!(&e.kind, EventKind::Generic(g) if g.name == "kernel_stack" || g.name == "user_stack")
}
