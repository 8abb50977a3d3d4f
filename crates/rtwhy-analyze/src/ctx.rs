//! What the rules, the findings and the advice look at for one spike: the episode, its
//! breakdown, and what the searches around it found (the lock's story, a refused RT
//! class, a move between CPUs). Made by `diagnose`; read by `rules`, `diagnose` and
//! `remedy`, and depending on none of them.

use std::cell::OnceCell;

use rtwhy_model::{
    BreakdownItem, Bucket, Event, EventKind, Nanos, SoftirqContext, SpikeKind, TaskRef,
};

use crate::breakdown::{Replay, Segment};
use crate::line::trace_line;
pub(crate) use crate::refusals::Throttle;
use crate::tracker::{Episode, Tracker};

/// What the lock holder did while the victim waited.
#[derive(Debug, Default)]
pub(crate) struct LockStory {
    /// The task that woke the victim: the holder of the lock it waited for.
    pub holder: Option<TaskRef>,
    /// When the holder was itself waiting for a lock: that lock's holder, and so on
    /// (at most `diagnose::MAX_CHAIN`).
    pub chain: Vec<ChainLink>,
    /// Time a holder of the chain was preempted by tasks that outrank it but not the
    /// victim, while it was runnable.
    pub medium_ns: u64,
    pub top_medium: Option<(TaskRef, u64)>,
    pub medium_switch: Option<Event>,
    pub pi_boost: Option<Event>,
    pub waking: Option<Event>,
    /// An event of the last holder of the chain (the holder itself when there is no
    /// chain) while the lock it held was waited for: it ran.
    pub holder_ran: Option<Event>,
    /// Why the chain was not followed to its end (too deep, or a cycle).
    pub cut: Option<String>,
}

/// A holder that held the lock an earlier holder of the chain was waiting for.
#[derive(Debug, Clone)]
pub(crate) struct ChainLink {
    pub holder: TaskRef,
    /// The earlier holder's futex call for this lock.
    pub asked: Event,
    /// This holder's wake-up of the earlier one: the lock released.
    pub released: Event,
    /// This holder's futex call that released it (FUTEX_WAKE, FUTEX_UNLOCK_PI).
    pub unlock: Event,
}

impl LockStory {
    /// The task at the end of the chain: the one that really kept the victim waiting.
    pub(crate) fn culprit(&self) -> Option<&TaskRef> {
        self.chain
            .last()
            .map(|l| &l.holder)
            .or(self.holder.as_ref())
    }

    /// ", which was itself waiting for a lock held by B, which was waiting for one held
    /// by C": empty without a chain.
    pub(crate) fn chain_text(&self) -> String {
        let mut s = String::new();
        for (i, l) in self.chain.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!(
                    ", which was itself waiting for a lock held by {}",
                    l.holder
                ));
            } else {
                s.push_str(&format!(", which was waiting for one held by {}", l.holder));
            }
        }
        s
    }
}

/// How the victim changed CPUs in its window, when the move is part of what it waited
/// for.
#[derive(Debug, Clone)]
pub(crate) struct Move {
    /// The event that shows it: the victim's `sched_migrate_task`, or its switch out
    /// while runnable on another CPU.
    pub event: Event,
    /// From when the wait is the move's: the victim left its old CPU (its switch out to
    /// the stopper thread, or the migration itself) and waited to run on the new one.
    pub at: Nanos,
}

/// Everything the rules and the advice look at.
pub(crate) struct Ctx<'a> {
    pub tr: &'a Tracker,
    pub ep: &'a Episode,
    pub replay: &'a Replay,
    pub items: &'a [BreakdownItem],
    pub lock: Option<&'a LockStory>,
    pub freq: Option<&'a (u32, Event)>,
    pub isolated: bool,
    /// The search for a refused RT class, made when the victim is real-time and idle or
    /// lower work took part of its window.
    pub throttle: Option<Result<Throttle, String>>,
    /// The victim's move between CPUs, when it waited for one.
    pub moved: Option<Move>,
    /// Kernel code that kept interrupts off (`rules::kernel_nonpreemptible::irqs_held_off`),
    /// found once per spike: the preconditions, the finding, the advice and the evidence
    /// all ask.
    pub irqs_off: OnceCell<Option<(u64, &'a str, &'a str)>>,
}

/// One interrupt's share of a spike: its hard handler and its thread, together.
pub(crate) struct IrqWork {
    pub irq: i32,
    pub name: String,
    pub hard_ns: u64,
    pub thread_ns: u64,
    /// Its `irq/N-name` thread, when that ran (the priority it ran at).
    pub thread: Option<TaskRef>,
    /// Softirq work its thread ran after its handler (NET_RX after a NIC's handler on
    /// PREEMPT_RT), by vector: part of `thread_ns`, the mechanism of the IRQ's time.
    pub softirqs: Vec<(u32, u64)>,
}

/// The IRQ whose thread ran a softirq stretch (`irq/N-name` running NET_RX), if the
/// stretch is one.
pub(crate) fn softirq_in_irq_thread(bucket: &Bucket) -> Option<(i32, &TaskRef)> {
    match bucket {
        Bucket::Softirq {
            context: SoftirqContext::Thread,
            thread: Some(t),
            ..
        } => crate::breakdown::irq_thread_number(&t.comm).map(|irq| (irq, t)),
        _ => None,
    }
}

/// The interrupts of a breakdown, the hard-IRQ half and the thread of each IRQ summed,
/// largest first; with `softirqs`, the softirq work each IRQ's thread ran counts as the
/// thread's (named by `names`, the IRQ's handler name).
pub(crate) fn irq_work(
    items: &[BreakdownItem],
    softirqs: bool,
    names: &dyn Fn(i32) -> Option<String>,
) -> Vec<IrqWork> {
    let mut out: Vec<IrqWork> = Vec::new();
    for i in items {
        let mut vec = None;
        let owned;
        let (irq, name, thread) = match &i.bucket {
            Bucket::Irq { irq, name } => (*irq, name, None),
            Bucket::IrqThread {
                irq, name, thread, ..
            } => (*irq, name, Some(thread)),
            Bucket::Softirq { vec: v, .. } if softirqs => {
                let Some((irq, t)) = softirq_in_irq_thread(&i.bucket) else {
                    continue;
                };
                vec = Some(*v);
                owned = names(irq).unwrap_or_else(|| t.comm.to_str_lossy().into_owned());
                (irq, &owned, Some(t))
            }
            _ => continue,
        };
        let pos = match out.iter().position(|w| w.irq == irq) {
            Some(p) => p,
            None => {
                out.push(IrqWork {
                    irq,
                    name: name.clone(),
                    hard_ns: 0,
                    thread_ns: 0,
                    thread: None,
                    softirqs: Vec::new(),
                });
                out.len() - 1
            }
        };
        let Some(w) = out.get_mut(pos) else { continue };
        match thread {
            Some(t) => {
                w.thread_ns += i.ns;
                if w.thread.is_none() {
                    w.thread = Some(t.clone());
                }
                if let Some(v) = vec {
                    match w.softirqs.iter_mut().find(|(x, _)| *x == v) {
                        Some(s) => s.1 += i.ns,
                        None => w.softirqs.push((v, i.ns)),
                    }
                }
                // The hard handler's own name beats the thread's cut one.
            }
            None => {
                w.hard_ns += i.ns;
                w.name = name.clone();
            }
        }
    }
    out.sort_by_key(|w| std::cmp::Reverse(w.hard_ns + w.thread_ns));
    out
}

pub(crate) fn is_local_timer(name: &str) -> bool {
    name.contains("timer") || name == "IPI" || name.starts_with("ipi")
}

impl<'a> Ctx<'a> {
    /// The lock the victim waited for and the task that held it, or why the spike is no
    /// lock story: what both lock causes require before anything else.
    pub(crate) fn lock_and_holder(&self) -> Result<(&'a LockStory, &'a TaskRef), String> {
        if self.ep.kind != SpikeKind::LockWait {
            return Err("the victim did not wait for a lock".to_string());
        }
        let Some(l) = self.lock else {
            return Err("the lock wait has no end in the trace".to_string());
        };
        let Some(h) = &l.holder else {
            return Err(
                "the lock holder is not known: no task woke the victim at the end of its wait"
                    .to_string(),
            );
        };
        Ok((l, h))
    }

    pub(crate) fn task_ref(&self, tid: i32) -> TaskRef {
        self.tr.task_ref(tid)
    }

    pub(crate) fn line(&self, e: &Event) -> String {
        let comm = if e.pid == 0 {
            "<idle>".to_string()
        } else {
            self.tr
                .tasks
                .get(&e.pid)
                .map(|t| t.comm.to_str_lossy().into_owned())
                .unwrap_or_else(|| "<...>".to_string())
        };
        trace_line(e, &comm)
    }

    pub(crate) fn sum(&self, f: impl Fn(&Bucket) -> bool) -> u64 {
        self.items
            .iter()
            .filter(|i| f(&i.bucket))
            .map(|i| i.ns)
            .sum()
    }

    pub(crate) fn largest(&self, f: impl Fn(&Bucket) -> bool) -> Option<&Segment> {
        self.replay
            .segments
            .iter()
            .filter(|s| f(&s.bucket))
            .max_by_key(|s| s.to.0 - s.from.0)
    }

    /// The largest segment passing `f`, and the stretch of work it belongs to (see
    /// [`largest_stretch`]).
    pub(crate) fn largest_stretch(
        &self,
        f: impl Fn(&Bucket) -> bool,
    ) -> Option<(&Segment, &[Segment])> {
        largest_stretch(&self.replay.segments, f)
    }

    /// Who ran a stretch of the breakdown, as a culprit is named: a task by its name,
    /// thread id and own priority (a PI boost is not who it is), an interrupt by number
    /// and handler, a softirq by vector and where it ran; `None` for stretches of nobody
    /// (idle, a stopped CPU, the victim).
    pub(crate) fn who(&self, bucket: &Bucket) -> Option<String> {
        match bucket {
            Bucket::Task {
                tid,
                comm,
                prio,
                boost,
                ..
            } => Some(
                TaskRef {
                    tid: *tid,
                    comm: *comm,
                    prio: Some(boost.as_ref().map_or(*prio, |b| b.own_prio)),
                    boost: None,
                }
                .to_string(),
            ),
            Bucket::Irq { irq, name } | Bucket::IrqThread { irq, name, .. } => {
                Some(format!("IRQ {irq} ({name})"))
            }
            Bucket::Softirq { .. } => Some(bucket.to_string()),
            _ => None,
        }
    }

    pub(crate) fn top_item(&self, f: impl Fn(&Bucket) -> bool) -> Option<&BreakdownItem> {
        self.items
            .iter()
            .filter(|i| f(&i.bucket))
            .max_by_key(|i| i.ns)
    }

    pub(crate) fn find(
        &self,
        cpu: u32,
        ts: Nanos,
        f: impl Fn(&EventKind) -> bool,
    ) -> Option<Event> {
        let q = self.tr.history.cpu(cpu);
        let i = self.tr.history.first_at(cpu, ts);
        q.range(i..)
            .take_while(|e| e.ts == ts)
            .find(|e| f(&e.kind))
            .cloned()
    }
}

/// The largest of `segs` (in time order, back to back) passing `f` and, where it is an
/// interrupt's work, the pieces of the same IRQ next to it that pass `f` too: a threaded
/// handler whose own hard handler interrupts it (a PIO disk's, every few hundred
/// microseconds) ran as one stretch, not as its longest piece. The largest segment, and
/// the stretch (at least the largest alone).
fn largest_stretch(
    segs: &[Segment],
    f: impl Fn(&Bucket) -> bool,
) -> Option<(&Segment, &[Segment])> {
    let (i, largest) = segs
        .iter()
        .enumerate()
        .filter(|(_, s)| f(&s.bucket))
        .max_by_key(|(_, s)| s.to.0 - s.from.0)?;
    let irq = irq_of(&largest.bucket);
    let same_work = |s: &Segment| irq.is_some() && irq_of(&s.bucket) == irq && f(&s.bucket);
    let mut first = i;
    while let Some(p) = first.checked_sub(1) {
        match (segs.get(p), segs.get(first)) {
            (Some(a), Some(b)) if a.to == b.from && same_work(a) => first = p,
            _ => break,
        }
    }
    let mut last = i;
    while let (Some(a), Some(b)) = (segs.get(last), segs.get(last + 1)) {
        if a.to != b.from || !same_work(b) {
            break;
        }
        last += 1;
    }
    Some((largest, segs.get(first..=last)?))
}

/// The IRQ number a segment's work belongs to: its hard handler or its thread.
fn irq_of(b: &Bucket) -> Option<i32> {
    match b {
        Bucket::Irq { irq, .. } | Bucket::IrqThread { irq, .. } => Some(*irq),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::Comm;

    fn seg(bucket: Bucket, from: u64, to: u64) -> Segment {
        Segment {
            bucket,
            from: Nanos(from),
            to: Nanos(to),
            begin: None,
            end: None,
        }
    }

    fn hard(irq: i32) -> Bucket {
        Bucket::Irq {
            irq,
            name: "ata_piix".into(),
        }
    }

    fn thread(irq: i32) -> Bucket {
        Bucket::IrqThread {
            irq,
            name: "ata_piix".into(),
            thread: TaskRef {
                tid: 149,
                comm: Comm::new(&format!("irq/{irq}-ata_piix")),
                prio: Some(49),
                boost: None,
            },
            outranks_victim: true,
            equals_victim: false,
        }
    }

    fn span(run: &[Segment]) -> (u64, u64) {
        (run[0].from.0, run[run.len() - 1].to.0)
    }

    #[test]
    fn an_irq_thread_interrupted_by_its_own_hard_handler_is_one_stretch() {
        let segs = [
            seg(Bucket::TimerIrqDelay, 0, 100),
            seg(thread(14), 100, 300),
            seg(hard(14), 300, 310),
            seg(thread(14), 310, 500),
            seg(hard(15), 500, 510),
            seg(thread(14), 510, 520),
        ];
        let irq_work = |b: &Bucket| matches!(b, Bucket::Irq { .. } | Bucket::IrqThread { .. });
        let (largest, run) = largest_stretch(&segs, irq_work).unwrap();
        assert_eq!((largest.from.0, largest.to.0), (100, 300));
        // Another IRQ's handler ends it; the timer delay before is not IRQ work.
        assert_eq!(span(run), (100, 500));
        assert_eq!(run.len(), 3);

        // Pieces the cause does not show are not joined.
        let threads_only = |b: &Bucket| matches!(b, Bucket::IrqThread { .. });
        let (_, run) = largest_stretch(&segs, threads_only).unwrap();
        assert_eq!(span(run), (100, 300));

        // Nor are pieces with a gap between them.
        let gap = [
            seg(thread(14), 0, 50),
            seg(hard(14), 60, 70),
            seg(thread(14), 70, 80),
        ];
        let (_, run) = largest_stretch(&gap, irq_work).unwrap();
        assert_eq!(span(run), (0, 50));

        // Other work stays its largest piece alone.
        let others = [
            seg(Bucket::TimerIrqDelay, 0, 10),
            seg(Bucket::TimerIrqDelay, 10, 30),
        ];
        let (_, run) = largest_stretch(&others, |_| true).unwrap();
        assert_eq!(span(run), (10, 30));
        assert!(largest_stretch(&others, |_| false).is_none());
    }
}
