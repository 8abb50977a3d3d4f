//! From an episode to a diagnosed spike: breakdown, cause, evidence, remedy.

use std::collections::BTreeMap;

use rtwhy_model::{
    human_duration, report_time, BreakdownItem, Bucket, Cause, Confidence, Event, EventKind,
    Evidence, Finding, Nanos, PiBoost, Spike, SpikeKind, SpikeSource, SyscallKind, TaskRef,
};

use crate::breakdown::{self, Replay, Window};
use crate::ctx::{ChainLink, Ctx, LockStory};
use crate::history::Dropped;
use crate::remedy;
use crate::rules;
use crate::tracker::{next_boost, Episode, Futex, Tracker};
use rtwhy_model::at_or_above;

pub(crate) fn diagnose(tr: &Tracker, ep: &Episode, id: u32) -> Spike {
    let latency = ep.end.0 - ep.start.0;
    let lock_until = match ep.kind {
        SpikeKind::LockWait => ep.wake.as_ref().map(|w| w.ts.clamp(ep.start, ep.end)),
        _ => None,
    };
    let replay_from = lock_until.unwrap_or(ep.start);
    let timer = ep.wake.as_ref().and_then(|w| w.timer);
    let window = Window {
        cpu: ep.cpu,
        from: replay_from,
        to: ep.end,
        victim: &ep.victim,
        timer,
        own: ep.measured.then_some(Bucket::VictimRan),
    };
    let mut replay = breakdown::replay(&tr.history, &tr.late, tr, &window);
    label_boosts(tr, &mut replay.segments);
    // A lock wait starts at the request (the futex call entered): until the victim
    // blocked, its CPU is replayed, the victim's own time there the lock's slow path.
    let blocked_at = lock_until.and_then(|until| {
        let since = ep.blocked.as_ref()?.since;
        Some(since.clamp(ep.start, until))
    });
    let request = blocked_at.filter(|&b| b > ep.start).map(|b| {
        let w = Window {
            cpu: ep.cpu,
            from: ep.start,
            to: b,
            victim: &ep.victim,
            timer: None,
            own: Some(Bucket::LockRequest),
        };
        let mut r = breakdown::replay(&tr.history, &tr.late, tr, &w);
        label_boosts(tr, &mut r.segments);
        r
    });

    let mut items: Vec<BreakdownItem> = Vec::new();
    let mut add = |bucket: Bucket, ns: u64| {
        if ns == 0 {
            return;
        }
        if let Some(i) = items.iter_mut().find(|i| i.bucket == bucket) {
            i.ns += ns;
        } else {
            items.push(BreakdownItem { bucket, ns });
        }
    };
    let lock = lock_until.map(|until| lock_story(tr, ep, until));
    if let (Some(until), Some(story)) = (lock_until, &lock) {
        add(
            Bucket::LockWait {
                holder: story.holder.clone(),
            },
            until.0 - blocked_at.unwrap_or(ep.start).0,
        );
    }
    for (s, replay) in request
        .iter()
        .chain(std::iter::once(&replay))
        .flat_map(|r| r.segments.iter().map(move |s| (s, r)))
    {
        // What the replay says of a stretch whose events were dropped is a guess (a
        // handler left open, a task that may have switched out): that part is lost.
        let lost = replay.dropped.map_or(0, |d| {
            s.to.0
                .min(d.before.0)
                .saturating_sub(s.from.0.max(d.after.0))
        });
        add(s.bucket.clone(), s.to.0 - s.from.0 - lost);
        if let Some(d) = replay.dropped {
            add(Bucket::Dropped { count: d.count }, lost);
        }
    }
    items.sort_by_key(|i| std::cmp::Reverse(i.ns));

    let isolated = tr
        .config
        .isolated
        .as_ref()
        .unwrap_or(&tr.facts.isolated)
        .contains(ep.cpu);
    let freq = frequency_story(tr, &replay);
    // Only a real-time victim kept from its CPU by idle or lower work can be throttled.
    let throttle = (ep.victim.is_rt()
        && items.iter().any(|i| {
            matches!(
                i.bucket,
                Bucket::Idle
                    | Bucket::Task {
                        outranks_victim: false,
                        ..
                    }
                    | Bucket::IrqThread {
                        outranks_victim: false,
                        ..
                    }
            )
        }))
    .then(|| rules::rt_throttling::find(tr, ep));
    let moved = rules::migration::moved(tr, ep);
    let ctx = Ctx {
        tr,
        ep,
        replay: &replay,
        items: &items,
        lock: lock.as_ref(),
        freq: freq.as_ref(),
        isolated,
        throttle,
        moved,
        irqs_off: Default::default(),
    };
    let mut checked = rules::Checked::default();

    let mut groups: BTreeMap<Cause, u64> = BTreeMap::new();
    for item in &items {
        for (ns, candidates) in rules::candidates(&ctx, item) {
            *groups
                .entry(first_holding(&mut checked, &candidates, &ctx))
                .or_default() += ns;
        }
    }
    for (cause, ns) in rules::across(&ctx) {
        if checked.holds(cause, &ctx) {
            *groups.entry(cause).or_default() += ns;
        }
    }

    // The victim's own run inside an application's measurement is the work it timed,
    // not a delay: the causes share the rest (a cycle computing 1 ms that was preempted
    // for 200 us is late by preemption, not 17 % explained).
    let own: u64 = items
        .iter()
        .filter(|i| i.bucket == Bucket::VictimRan)
        .map(|i| i.ns)
        .sum();
    let delayed = latency.saturating_sub(own);
    let share = |ns: u64| {
        if delayed == 0 {
            0.0
        } else {
            (ns as f64 / delayed as f64).min(1.0)
        }
    };
    // A cause is judged by its share of the time the victim did not run itself; the
    // share it is printed with is of the whole latency, as the breakdown's are.
    let finding = |cause: Cause, ns: u64| Finding {
        share: if latency == 0 {
            0.0
        } else {
            (ns as f64 / latency as f64).min(1.0)
        },
        ..ctx.finding(cause, share(ns))
    };
    // The last gate: a cause is printed only with its preconditions.
    // No cause is named from a history with a hole in it: the events that would have
    // shown a switch, a handler's exit or a wake-up may be the ones dropped.
    let mut ranked: Vec<(Cause, u64)> = groups
        .into_iter()
        .filter(|(c, _)| *c != Cause::Unknown && replay.dropped.is_none())
        .filter(|(c, _)| checked.holds(*c, &ctx))
        .collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));

    let mut missing = missing_events(tr, ep);
    missing.extend(stalled_clock(tr, ep));
    if let Some(d) = replay.dropped {
        missing.insert(0, dropped_note(ep.cpu, d));
    }
    let unseen = ctx.sum(|b| *b == Bucket::NotRecorded);
    if unseen > 0 {
        missing.insert(0, not_recorded_note(ep, unseen));
    }
    let (primary, contributors): (Finding, Vec<Finding>) = match ranked.first() {
        Some(&(cause, ns)) if share(ns) >= rules::PRIMARY_SHARE => {
            let primary = finding(cause, ns);
            let contributors = ranked
                .iter()
                .skip(1)
                .filter(|(_, ns)| share(*ns) >= rules::CONTRIBUTOR_SHARE)
                .map(|&(c, ns)| finding(c, ns))
                .collect();
            (primary, contributors)
        }
        _ => {
            // A fold from +0.0: an empty f64 `sum()` is -0.0, which printed "-0%".
            let explained: f64 = ranked
                .iter()
                .fold(0.0, |acc, (_, ns)| acc + share(*ns))
                .clamp(0.0, 1.0);
            let idle = items
                .iter()
                .filter(|i| i.bucket == Bucket::Idle)
                .map(|i| i.ns)
                .sum::<u64>();
            let mut summary = if replay.dropped.is_some() {
                "no cause can be named: the events of this window are incomplete".to_string()
            } else if share(unseen) >= rules::PRIMARY_SHARE {
                format!(
                    "no cause can be named: the recording of CPU {} begins {} into this spike",
                    ep.cpu,
                    human_duration(unseen)
                )
            } else if share(idle) >= rules::PRIMARY_SHARE {
                format!(
                    "CPU {} stayed idle for {} after {} was woken for it, and the trace does not say why (a slow idle exit, a late wake-up IPI, or a stopped CPU)",
                    ep.cpu,
                    human_duration(idle),
                    ep.victim
                )
            } else {
                format!(
                    "no single cause explains this spike: named causes cover {:.0}% of {}{}",
                    explained * 100.0,
                    human_duration(delayed),
                    if own > 0 {
                        format!(" (the {} it ran itself aside)", human_duration(own))
                    } else {
                        String::new()
                    }
                )
            };
            let refused = checked.refused();
            if !refused.is_empty() {
                summary.push_str("; ");
                summary.push_str(&refused.join("; "));
            }
            if !missing.is_empty() {
                summary.push_str("; ");
                summary.push_str(&missing.join("; "));
            }
            let primary = Finding {
                cause: Cause::Unknown,
                confidence: Confidence::Low,
                share: 1.0 - explained.min(1.0),
                summary,
                culprit: None,
            };
            let contributors = ranked
                .iter()
                .filter(|(_, ns)| share(*ns) >= rules::CONTRIBUTOR_SHARE)
                .map(|&(c, ns)| finding(c, ns))
                .collect();
            (primary, contributors)
        }
    };

    let evidence = ctx.evidence(primary.cause);
    let remediation = remedy::advice(&ctx, primary.cause, &contributors);
    let waker = ep
        .wake
        .as_ref()
        .and_then(|w| w.waker)
        .map(|tid| ctx.task_ref(tid));
    Spike {
        id,
        victim: ep.victim.clone(),
        cpu: ep.cpu,
        kind: ep.kind,
        source: ep.source.clone(),
        start: ep.start,
        end: ep.end,
        latency_ns: latency,
        end_inferred: ep.end_inferred,
        waker,
        primary,
        contributors,
        breakdown: items,
        evidence,
        remediation,
        missing,
    }
}

/// The first of `candidates` whose preconditions hold (most specific first), or
/// `unknown`.
fn first_holding(checked: &mut rules::Checked, candidates: &[Cause], ctx: &Ctx<'_>) -> Cause {
    candidates
        .iter()
        .copied()
        .find(|c| checked.holds(*c, ctx))
        .unwrap_or(Cause::Unknown)
}

impl Ctx<'_> {
    fn finding(&self, cause: Cause, share: f64) -> Finding {
        let mut confidence = rules::confidence(share);
        let summary = match rules::rule(cause) {
            Some(r) => r.summary(self, share, &mut confidence),
            None => "not enough evidence".to_string(),
        };
        Finding {
            cause,
            confidence,
            share,
            summary,
            culprit: rules::rule(cause).and_then(|r| r.culprit(self)),
        }
    }

    fn evidence(&self, primary: Cause) -> Vec<Evidence> {
        let mut ev: Vec<Evidence> = Vec::new();
        let mut push = |e: &Event, why: String| {
            let line = self.line(e);
            if let Some(x) = ev
                .iter_mut()
                .find(|x| x.ts == e.ts && x.cpu == e.cpu && x.line == line)
            {
                if !x.why.contains(&why) {
                    x.why.push_str("; ");
                    x.why.push_str(&why);
                }
            } else {
                ev.push(Evidence {
                    ts: e.ts,
                    cpu: e.cpu,
                    line,
                    why,
                });
            }
        };
        let ep = self.ep;
        let victim = &ep.victim;
        if let Some(b) = &ep.blocked {
            if ep.kind == SpikeKind::LockWait {
                if let Some(f) = &b.futex {
                    push(
                        &f.event,
                        format!(
                            "{} asks for the lock at {:#x} (futex op {})",
                            victim.comm, f.uaddr, f.op
                        ),
                    );
                }
                push(&b.event, format!("{} blocks", victim.comm));
            }
        }
        if let Some(w) = &ep.wake {
            if let Some(tf) = w.timer {
                if let Some(h) = self.find(ep.cpu, tf.handler, |k| {
                    matches!(k, EventKind::HrtimerExpireEntry { .. })
                }) {
                    push(
                        &h,
                        format!(
                            "the victim's timer is handled {} after it expired at {}",
                            human_duration(tf.handler.0.saturating_sub(tf.expiry.0)),
                            tf.expiry
                        ),
                    );
                }
            }
            let why = match w.waker {
                Some(tid) => format!("{} is woken by {}", victim.comm, self.task_ref(tid)),
                None => format!("{} is woken", victim.comm),
            };
            push(&w.event, why);
        }
        if let Some(p) = &ep.preempted_by {
            push(
                p,
                format!("{} is switched out while still runnable", victim.comm),
            );
        }
        // The stretch the primary cause's rule points at, from the event that began it to
        // the one that ended it.
        let cause_filter = |b: &Bucket| rules::rule(primary).is_some_and(|r| r.shows(self, b));
        if let Some((largest, run)) = self.largest_stretch(cause_filter) {
            if let (Some(first), Some(last)) = (run.first(), run.last()) {
                let dur = human_duration(last.to.0 - first.from.0);
                let what = stretch_label(largest, run);
                if let Some(b) = &first.begin {
                    push(b, format!("begins {dur} of {what}"));
                }
                if let Some(e) = &last.end {
                    push(e, format!("ends {dur} of {what}"));
                }
            }
        }
        for (e, why) in rules::rule(primary)
            .map(|r| r.evidence(self))
            .unwrap_or_default()
        {
            push(&e, why);
        }
        if let Some((_, e)) = self.freq {
            push(e, "CPU frequency in the window".to_string());
        }
        if let Some(l) = self.lock {
            if let Some(e) = &l.pi_boost {
                push(e, "priority inheritance boosts the holder".to_string());
            }
            if let Some(e) = &l.medium_switch {
                let why = if matches!(e.kind, EventKind::SchedSwitch { .. }) {
                    "the lock holder is switched out runnable; a medium-priority task runs on its CPU while it waits"
                } else {
                    "the lock holder is woken and waits for its CPU, where a medium-priority task runs"
                };
                push(e, why.to_string());
            }
            let mut waiter = l.holder.as_ref().map(|h| h.comm.to_string());
            for c in &l.chain {
                let w = waiter.take().unwrap_or_else(|| "the holder".to_string());
                push(
                    &c.asked,
                    format!(
                        "{w}, holding the lock the victim wants, asks for another, held by {}",
                        c.holder
                    ),
                );
                push(
                    &c.unlock,
                    format!("{} releases the lock {w} waits for", c.holder.comm),
                );
                push(&c.released, format!("{} wakes {w}", c.holder.comm));
                waiter = Some(c.holder.comm.to_string());
            }
            if let Some(e) = &l.waking {
                push(
                    e,
                    "the holder releases the lock and wakes the victim".to_string(),
                );
            }
        }
        if let Some(r) = &ep.ran {
            let why = if ep.measured && matches!(r.kind, EventKind::Print { .. }) {
                let from = match ep.kind {
                    SpikeKind::LockWait => "from before it asked for the lock",
                    // cyclictest measures from its timer's expiry.
                    _ if matches!(&ep.source, SpikeSource::ToolMarker { text, .. } if crate::tracker::parse_cyclictest_marker(text).is_some()) => {
                        "from the timer's expiry"
                    }
                    SpikeKind::TimerWakeup
                        if ep.wake.as_ref().is_some_and(|w| w.timer.is_some()) =>
                    {
                        "from the timer's expiry"
                    }
                    _ => "from its start",
                };
                format!(
                    "{} writes its marker: the end of its own measurement, {} {from}",
                    victim.comm,
                    human_duration(ep.end.0 - ep.start.0)
                )
            } else if ep.end_inferred {
                format!(
                    "{} is running (its switch-in was not recorded; latency measured to the last event of another task)",
                    victim.comm
                )
            } else {
                format!("{} finally runs", victim.comm)
            };
            push(r, why);
        }
        ev.sort_by(|a, b| a.ts.cmp(&b.ts).then(a.cpu.cmp(&b.cpu)));
        ev
    }
}

/// How far back (events per CPU) the holder's state at the start of a wait is looked for.
const HOLDER_LOOKBACK: usize = 50_000;
/// How far back (events on its CPU) the futex call a task blocked or woke in is looked for.
const FUTEX_LOOKBACK: usize = 256;
/// Holders followed beyond the victim's own: the holder waiting for a second lock, that
/// lock's holder waiting for a third, ... A longer chain is cut here.
pub(crate) const MAX_CHAIN: usize = 4;

/// Where a lock holder waited for a CPU: the CPU, the event that left it runnable there
/// (a switch out with `R`, or its wake-up), and its priority then.
struct Runnable {
    cpu: u32,
    event: Event,
    prio: i32,
}

/// A holder's state at the start of the stretch it is followed over.
enum HolderState {
    Runnable(Runnable),
    /// Asleep since `since`; `futex` is the lock call it blocked in, if it was one.
    Blocked {
        since: Nanos,
        futex: Option<Event>,
    },
}

/// What the evidence says a stretch of the cause's work was: the largest piece's bucket,
/// and for an IRQ thread's run with its own hard handler in it, how often that ran.
fn stretch_label(largest: &breakdown::Segment, run: &[breakdown::Segment]) -> String {
    let others = run.iter().filter(|s| s.bucket != largest.bucket).count();
    match (&largest.bucket, others) {
        (_, 0) => largest.bucket.to_string(),
        (Bucket::IrqThread { .. }, 1) => format!("{}, and its hard handler once", largest.bucket),
        (Bucket::IrqThread { .. }, n) => {
            format!("{}, and its hard handler {n} times", largest.bucket)
        }
        (b, n) => format!(
            "{b} and {n} more piece{} of the same IRQ's work",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The futex call `tid` was in at index `idx` of `cpu`'s history: its `sys_enter_futex`
/// with no exit after it, looked for back to `tid`'s last switch in. `lock_only` keeps
/// only calls that wait for a lock.
fn futex_call_before(
    tr: &Tracker,
    cpu: u32,
    idx: usize,
    tid: i32,
    lock_only: bool,
) -> Option<Event> {
    let q = tr.history.cpu(cpu);
    for i in (idx.saturating_sub(FUTEX_LOOKBACK)..idx).rev() {
        let e = q.get(i)?;
        match &e.kind {
            EventKind::SyscallEnter {
                call: SyscallKind::Futex,
                args,
            } if e.pid == tid => {
                let call = Futex::from_args(args, e.clone());
                return (!lock_only || call.is_lock()).then_some(call.event);
            }
            EventKind::SyscallExit {
                call: SyscallKind::Futex,
                ..
            } if e.pid == tid => return None,
            EventKind::SchedSwitch { next_pid, .. } if *next_pid == tid => return None,
            _ => {}
        }
    }
    None
}

/// The holder's last scheduling event on any CPU before `at`: where it was left runnable,
/// or since when it slept, if either.
fn holder_state_at(tr: &Tracker, holder: i32, at: Nanos) -> Option<HolderState> {
    let mut last: Option<(Nanos, Option<HolderState>)> = None;
    for cpu in 0..tr.history.cpu_count() as u32 {
        let q = tr.history.cpu(cpu);
        let end = tr.history.first_at(cpu, at);
        for i in (end.saturating_sub(HOLDER_LOOKBACK)..end).rev() {
            let Some(e) = q.get(i) else { break };
            if last.as_ref().is_some_and(|(ts, _)| e.ts <= *ts) {
                break;
            }
            let state = match &e.kind {
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_prio,
                    prev_state,
                    ..
                } if *prev_pid == holder => Some(Some(if prev_state.is_runnable() {
                    HolderState::Runnable(Runnable {
                        cpu,
                        event: e.clone(),
                        prio: *prev_prio,
                    })
                } else {
                    HolderState::Blocked {
                        since: e.ts,
                        futex: futex_call_before(tr, cpu, i, holder, true),
                    }
                })),
                EventKind::SchedSwitch { next_pid, .. } if *next_pid == holder => Some(None),
                EventKind::SchedWaking {
                    pid,
                    prio,
                    target_cpu,
                    ..
                }
                | EventKind::SchedWakeup {
                    pid,
                    prio,
                    target_cpu,
                    ..
                } if *pid == holder && *target_cpu >= 0 => {
                    Some(Some(HolderState::Runnable(Runnable {
                        cpu: *target_cpu as u32,
                        event: e.clone(),
                        prio: *prio,
                    })))
                }
                _ if e.pid == holder => Some(None),
                _ => None,
            };
            if let Some(st) = state {
                last = Some((e.ts, st));
                break;
            }
        }
    }
    last.and_then(|(_, st)| st)
}

/// Names the priority inheritance boost under which each task of `segments` ran at a
/// real-time priority that was lent to it (a normal task holding a real-time waiter's
/// lock is still a normal task). Only where the trace has `sched_pi_setprio` events.
fn label_boosts(tr: &Tracker, segments: &mut [breakdown::Segment]) {
    if !tr.seen.pi_setprio {
        return;
    }
    let mut known: BTreeMap<(i32, i32), Option<PiBoost>> = BTreeMap::new();
    for s in segments {
        if let Bucket::Task {
            tid, prio, boost, ..
        } = &mut s.bucket
        {
            if rtwhy_model::is_rt(*prio) {
                *boost = known
                    .entry((*tid, *prio))
                    .or_insert_with(|| pi_boost_at(tr, *tid, *prio, s.from))
                    .clone();
            }
        }
    }
}

/// The boost that gave task `tid` the kernel priority `prio` it had at `at`: its
/// `sched_pi_setprio` events within the look-back before `at`, on any CPU, folded in
/// time order by the tracker's rule ([`next_boost`]), leave it boosted to `prio`. Its
/// own priority is where that chain of raises began; who lent it is the latest raiser.
fn pi_boost_at(tr: &Tracker, tid: i32, prio: i32, at: Nanos) -> Option<PiBoost> {
    // (when, old, new, by) of every setprio of `tid` within the look-back.
    let mut changes: Vec<(Nanos, i32, i32, i32)> = Vec::new();
    for cpu in 0..tr.history.cpu_count() as u32 {
        let q = tr.history.cpu(cpu);
        let end = tr.history.first_at(cpu, at);
        for e in q.range(end.saturating_sub(HOLDER_LOOKBACK)..end) {
            if let EventKind::SchedPiSetprio {
                pid,
                oldprio,
                newprio,
                ..
            } = &e.kind
            {
                if *pid == tid {
                    changes.push((e.ts, *oldprio, *newprio, e.pid));
                }
            }
        }
    }
    changes.sort_by_key(|c| c.0);
    let last = changes.last()?.2;
    let (own, by) = changes
        .iter()
        .fold(None, |b, &(_, old, new, by)| next_boost(b, old, new, by))?;
    (last == prio).then(|| PiBoost {
        own_prio: own,
        by_tid: by,
        by_comm: breakdown::TaskNames::task(tr, by)
            .map(|(comm, _)| comm)
            .unwrap_or_default(),
    })
}

/// The holder's priority-inheritance boost made inside the victim's own lock call: a PI
/// futex boosts the owner in `FUTEX_LOCK_PI`, before the victim is switched out, so it
/// lies before the wait's start (seen on PREEMPT_RT: fixtures/rt_lock_contention).
fn boost_in_lock_call(tr: &Tracker, ep: &Episode, holder_tid: i32) -> Option<Event> {
    let call = &ep.blocked.as_ref()?.futex.as_ref()?.event;
    let q = tr.history.cpu(call.cpu);
    let i = tr.history.first_at(call.cpu, call.ts);
    q.range(i..)
        .take_while(|e| e.ts <= ep.start)
        .find(|e| {
            matches!(&e.kind, EventKind::SchedPiSetprio { pid, newprio, .. }
                if *pid == holder_tid && at_or_above(*newprio, ep.victim.prio))
        })
        .cloned()
}

/// The lock a holder waited for while the victim waited, and who released it.
struct Next {
    tid: i32,
    /// When the holder blocked on it.
    since: Nanos,
    /// The holder's futex call for it.
    asked: Event,
    /// The wake-up of the holder by the next holder.
    released: Event,
    /// The next holder's futex call that woke it.
    unlock: Event,
}

fn lock_story(tr: &Tracker, ep: &Episode, until: Nanos) -> LockStory {
    let mut story = LockStory::default();
    let Some(w) = &ep.wake else {
        return story;
    };
    story.waking = Some(w.event.clone());
    let Some(first) = w.waker else {
        return story;
    };
    let mut by_task: BTreeMap<i32, (TaskRef, u64)> = BTreeMap::new();
    // The victim's holder over the whole wait; when it was itself waiting for a lock,
    // that lock's holder over the stretch the first waited for it, and so on: the
    // medium-priority work that counts is whatever delayed any of them.
    let mut link = (first, ep.start, until);
    let mut pending: Option<(Event, Event, Event)> = None;
    let mut visited = vec![ep.victim.tid];
    loop {
        let (tid, from, to) = link;
        visited.push(tid);
        let (holder, ran, next) = holder_part(tr, ep, tid, from, to, &mut story, &mut by_task);
        story.holder_ran = ran;
        match pending.take() {
            None => story.holder = Some(holder),
            Some((asked, released, unlock)) => story.chain.push(ChainLink {
                holder,
                asked,
                released,
                unlock,
            }),
        }
        let Some(n) = next else { break };
        // A cycle (a deadlock, or a misread wake-up) or a chain longer than any real
        // program's lock nesting stops here, and says so: where the rest of the wait
        // went is then not known.
        let last = story.culprit().map(|h| h.to_string()).unwrap_or_default();
        let next_ref = task_ref_of(tr, n.tid);
        if visited.contains(&n.tid) {
            story.cut = Some(format!(
                "{last} was woken from its lock wait by {next_ref}, already in the chain of holders (a cycle: lost events or a deadlock)"
            ));
            break;
        }
        if story.chain.len() >= MAX_CHAIN {
            story.cut = Some(format!(
                "{last} was itself waiting for a lock held by {next_ref}: the chain of holders is longer than {} and not followed further",
                MAX_CHAIN + 1
            ));
            break;
        }
        link = (n.tid, n.since.max(from), n.released.ts.min(to));
        pending = Some((n.asked, n.released, n.unlock));
    }
    story.top_medium = by_task.into_values().max_by_key(|(_, ns)| *ns);
    story
}

fn task_ref_of(tr: &Tracker, tid: i32) -> TaskRef {
    tr.task_ref(tid)
}

/// One holder between `from` and `to`: its unboosted priority, its first event of its
/// own (it ran), the medium-priority work that held its CPU while it was runnable (added
/// to `story` and `by_task`), and the lock it was itself waiting for, if it was.
fn holder_part(
    tr: &Tracker,
    ep: &Episode,
    holder_tid: i32,
    from: Nanos,
    to: Nanos,
    story: &mut LockStory,
    by_task: &mut BTreeMap<i32, (TaskRef, u64)>,
) -> (TaskRef, Option<Event>, Option<Next>) {
    let mut holder = task_ref_of(tr, holder_tid);
    let mut ran: Option<Event> = None;
    // Where the holder waited for a CPU: (cpu, since, the switch or wake-up that left it
    // runnable). It may have been preempted long before the stretch began.
    let mut runnable: Vec<(u32, Nanos, Event)> = Vec::new();
    let mut intervals: Vec<(u32, Nanos, Nanos, Event)> = Vec::new();
    // Its sleeps (since, the lock call it slept in) and its wake-ups by another task in
    // a futex call (at, by, event): CPUs are read one after the other, so they are
    // paired once all are known.
    let mut sleeps: Vec<(Nanos, Option<Event>)> = Vec::new();
    let mut wakes: Vec<(Nanos, i32, Event, Event)> = Vec::new();
    match holder_state_at(tr, holder_tid, from) {
        Some(HolderState::Runnable(r)) => {
            holder.prio = holder.prio.max(Some(r.prio));
            runnable.push((r.cpu, r.event.ts, r.event));
        }
        Some(HolderState::Blocked { since, futex }) => sleeps.push((since, futex)),
        None => {}
    }
    // The holder's own priority: the lowest it had in the stretch (PI boosts raise it).
    for cpu in 0..tr.history.cpu_count() as u32 {
        let q = tr.history.cpu(cpu);
        let i = tr.history.first_at(cpu, from);
        for (k, e) in q.range(i..).enumerate() {
            if e.ts > to {
                break;
            }
            if e.pid == holder_tid && ran.is_none() {
                ran = Some(e.clone());
            }
            match &e.kind {
                EventKind::SchedSwitch {
                    prev_pid,
                    prev_prio,
                    prev_state,
                    next_pid,
                    ..
                } => {
                    if *prev_pid == holder_tid {
                        if prev_state.is_runnable() {
                            holder.prio = holder.prio.max(Some(*prev_prio));
                            runnable.push((cpu, e.ts, e.clone()));
                        } else {
                            sleeps
                                .push((e.ts, futex_call_before(tr, cpu, i + k, holder_tid, true)));
                        }
                    }
                    if *next_pid == holder_tid {
                        if ran.is_none() {
                            ran = Some(e.clone());
                        }
                        if let Some(pos) = runnable.iter().position(|p| p.0 == cpu) {
                            let (c, since, sw) = runnable.remove(pos);
                            intervals.push((c, since, e.ts, sw));
                        }
                    }
                }
                EventKind::SchedWaking {
                    pid, target_cpu, ..
                }
                | EventKind::SchedWakeup {
                    pid, target_cpu, ..
                } if *pid == holder_tid && *target_cpu >= 0 => {
                    if e.pid > 0 && e.pid != holder_tid {
                        if let Some(call) = futex_call_before(tr, cpu, i + k, e.pid, false) {
                            wakes.push((e.ts, e.pid, e.clone(), call));
                        }
                    }
                    if !runnable.iter().any(|r| r.0 == *target_cpu as u32) {
                        runnable.push((*target_cpu as u32, e.ts, e.clone()));
                    }
                }
                EventKind::SchedPiSetprio {
                    pid,
                    oldprio,
                    newprio,
                    ..
                } if *pid == holder_tid => {
                    holder.prio = holder.prio.max(Some(*oldprio));
                    if at_or_above(*newprio, ep.victim.prio) && story.pi_boost.is_none() {
                        story.pi_boost = Some(e.clone());
                    }
                }
                _ => {}
            }
        }
    }
    if story.pi_boost.is_none() {
        story.pi_boost = boost_in_lock_call(tr, ep, holder_tid);
    }
    for (cpu, since, sw) in runnable {
        intervals.push((cpu, since, to, sw));
    }
    for (cpu, since, until, sw) in intervals {
        // Only the part inside the stretch counts.
        let w = Window {
            cpu,
            from: since.max(from),
            to: until.min(to),
            victim: &holder,
            timer: None,
            own: None,
        };
        let r = breakdown::replay(&tr.history, &tr.late, tr, &w);
        let mut medium_here = false;
        for s in &r.segments {
            let who = match &s.bucket {
                Bucket::Task {
                    tid, comm, prio, ..
                } => Some((tid, comm, *prio)),
                Bucket::IrqThread { thread, .. } => {
                    thread.prio.map(|p| (&thread.tid, &thread.comm, p))
                }
                _ => None,
            };
            if let Some((tid, comm, prio)) = who {
                // Below the holder's own priority, above the victim's: medium work.
                if holder.prio.is_some_and(|h| prio < h)
                    && ep.victim.prio.is_some_and(|v| prio > v)
                    && rtwhy_model::is_rt(prio)
                {
                    medium_here = true;
                    let e = by_task.entry(*tid).or_insert((
                        TaskRef {
                            tid: *tid,
                            comm: *comm,
                            prio: Some(prio),
                            boost: None,
                        },
                        0,
                    ));
                    e.1 += s.to.0 - s.from.0;
                    story.medium_ns += s.to.0 - s.from.0;
                }
            }
        }
        if medium_here && story.medium_switch.is_none() {
            story.medium_switch = Some(sw);
        }
    }
    // The lock it waited for longest within the stretch: a sleep in a lock call ended
    // by another task's futex call (the release).
    // Only the first wake-up after a sleep ends it (sched_waking, then sched_wakeup).
    sleeps.sort_by_key(|s| s.0);
    wakes.sort_by_key(|w| w.0);
    let mut ended: Vec<Nanos> = Vec::new();
    let next = wakes
        .into_iter()
        .filter_map(|(at, by, released, unlock)| {
            let (since, asked) = sleeps.iter().rev().find(|s| s.0 < at)?;
            if ended.contains(since) {
                return None;
            }
            ended.push(*since);
            let asked = asked.clone()?;
            Some(Next {
                tid: by,
                since: *since,
                asked,
                released,
                unlock,
            })
        })
        .max_by_key(|n| n.released.ts.0.saturating_sub(n.since.max(from).0));
    (holder, ran, next)
}

/// The lowest frequency on the victim's CPU around the window, when it is clearly low.
fn frequency_story(tr: &Tracker, replay: &Replay) -> Option<(u32, Event)> {
    if tr.max_freq == 0 {
        return None;
    }
    let low = replay
        .frequencies
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::CpuFrequency { state, .. } => Some((state, e)),
            _ => None,
        })
        .min_by_key(|(s, _)| *s)?;
    (u64::from(low.0) * 10 <= u64::from(tr.max_freq) * 7).then(|| (low.0, low.1.clone()))
}

/// What a drop of events on the spike's CPU means for it, and how to avoid one.
fn dropped_note(cpu: u32, d: Dropped) -> String {
    let count = match d.count {
        0 => "events".to_string(),
        n => format!("{n} events"),
    };
    // The times of the two events around the drop, as trace-cmd prints them.
    format!(
        "the ring buffer dropped {count} of CPU {cpu} between {} and {}, across this spike's window: record with a larger buffer (rtwhy record --buffer-kb) or fewer events",
        report_time(d.after.0),
        report_time(d.before.0)
    )
}

/// What a spike that began before its CPU's first recorded event lacks, and how to
/// record it whole.
fn not_recorded_note(ep: &Episode, unseen: u64) -> String {
    format!(
        "CPU {} is recorded from {}, {} after {} was due at {}: what it did before is not recorded (for rtwhy's captures: one taken right after the previous one; rtwhy record --min-gap spaces them out)",
        ep.cpu,
        report_time(ep.start.0 + unseen),
        human_duration(unseen),
        ep.victim,
        report_time(ep.start.0)
    )
}

/// What the trace lacks that would matter for this spike.
fn missing_events(tr: &Tracker, ep: &Episode) -> Vec<String> {
    let s = &tr.seen;
    let mut m = Vec::new();
    if !s.irq {
        m.push("no irq events were recorded: enable irq:irq_handler_entry/exit (irq:*) to see interrupt handlers".to_string());
    }
    if !s.softirq {
        m.push("no softirq events were recorded: enable irq:softirq_entry/exit".to_string());
    }
    if !s.hrtimer && matches!(ep.kind, SpikeKind::Wakeup | SpikeKind::TimerWakeup) {
        m.push(
            "no timer:hrtimer_* events: timer expiry cannot be told apart from the wake-up"
                .to_string(),
        );
    }
    if !s.waking && !s.wakeup {
        m.push("no sched_waking/sched_wakeup events: wake-up times are unknown".to_string());
    }
    if !s.cpu_idle {
        m.push("no power:cpu_idle events: idle-state exits cannot be seen".to_string());
    }
    if ep.kind == SpikeKind::LockWait && !s.pi_setprio {
        m.push(
            "no sched_pi_setprio events: priority inheritance boosts cannot be seen".to_string(),
        );
    }
    m
}

/// Two context switches on the victim's CPU inside the window stamped with one time:
/// no CPU switches twice in no time, so the trace clock stood still there (seen with the
/// `global` clock on the isolated, tickless CPU of a guest under emulation, where a
/// thread's wake-up, its lock call and its switch-out all carried one time). What the
/// breakdown says of the times around it is not exact.
fn stalled_clock(tr: &Tracker, ep: &Episode) -> Option<String> {
    let q = tr.history.cpu(ep.cpu);
    let i0 = tr.history.first_at(ep.cpu, ep.start);
    let mut last: Option<Nanos> = None;
    for e in q.range(i0..) {
        if e.ts > ep.end {
            break;
        }
        if !matches!(e.kind, EventKind::SchedSwitch { .. }) {
            continue;
        }
        if last == Some(e.ts) {
            let alike = q.range(i0..).filter(|x| x.ts == e.ts).count();
            return Some(format!(
                "the trace clock of CPU {} stood still at {}: {alike} events there, two context switches among them, carry the same time, so the times around it are not exact; record with a clock that keeps counting on that CPU (trace-cmd record -C mono)",
                ep.cpu,
                report_time(e.ts.0)
            ));
        }
        last = Some(e.ts);
    }
    None
}

/// The spike of a marker the trace cannot place (`Tracker::take_unplaced`): the
/// application's number, the marker as the evidence, and why nothing is explained.
pub(crate) fn unplaced(tr: &Tracker, u: &crate::tracker::Unplaced, id: u32) -> Spike {
    let victim = tr.task_ref(u.marker.pid);
    let comm = victim.comm;
    let why = format!(
        "{comm} writes its marker here, where the events show it asleep: the marker's buffer keeps another clock than the events' (record every buffer with one clock, `trace-cmd record -C mono`), and no later wake-up of {comm} was {} late",
        human_duration(u.reported)
    );
    Spike {
        id,
        victim,
        cpu: u.marker.cpu,
        kind: SpikeKind::TimerWakeup,
        source: u.source.clone(),
        start: Nanos(u.marker.ts.0.saturating_sub(u.reported)),
        end: u.marker.ts,
        latency_ns: u.reported,
        end_inferred: false,
        waker: None,
        primary: Finding {
            cause: Cause::Unknown,
            confidence: Confidence::Low,
            share: 1.0,
            summary: format!(
                "no cause can be named: the trace cannot place this measurement; {why}"
            ),
            culprit: None,
        },
        contributors: Vec::new(),
        breakdown: vec![BreakdownItem {
            bucket: Bucket::Unplaced,
            ns: u.reported,
        }],
        evidence: vec![Evidence {
            ts: u.marker.ts,
            cpu: u.marker.cpu,
            line: crate::line::trace_line(&u.marker, &comm.to_str_lossy()),
            why,
        }],
        remediation: Vec::new(),
        missing: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::Comm;

    fn seg(bucket: Bucket) -> breakdown::Segment {
        breakdown::Segment {
            bucket,
            from: Nanos(0),
            to: Nanos(1),
            begin: None,
            end: None,
        }
    }

    #[test]
    fn a_stretch_names_its_largest_piece_and_the_hard_handler_runs_in_it() {
        let hard = seg(Bucket::Irq {
            irq: 14,
            name: "ata_piix".into(),
        });
        let thread = seg(Bucket::IrqThread {
            irq: 14,
            name: "ata_piix".into(),
            thread: TaskRef {
                tid: 149,
                comm: Comm::new("irq/14-ata_piix"),
                prio: Some(49),
                boost: None,
            },
            outranks_victim: true,
            equals_victim: false,
        });
        let alone = stretch_label(&thread, std::slice::from_ref(&thread));
        assert_eq!(alone, thread.bucket.to_string());
        let once = [thread.clone(), hard.clone(), thread.clone()];
        assert_eq!(
            stretch_label(&thread, &once),
            format!("{alone}, and its hard handler once")
        );
        let thrice = [
            hard.clone(),
            thread.clone(),
            hard.clone(),
            thread.clone(),
            hard.clone(),
        ];
        assert_eq!(
            stretch_label(&thread, &thrice),
            format!("{alone}, and its hard handler 3 times")
        );
        assert_eq!(
            stretch_label(&hard, &[hard.clone(), thread.clone()]),
            format!("{} and 1 more piece of the same IRQ's work", hard.bucket)
        );
    }
}
