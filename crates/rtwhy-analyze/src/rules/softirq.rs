//! `softirq`: softirq processing on the victim's CPU.

use rtwhy_model::{
    human_duration, softirq_name, BreakdownItem, Bucket, Cause, Confidence, SoftirqContext,
};
use std::collections::BTreeMap;

use super::{Claim, Rule};
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};

pub(crate) struct Softirq;

impl Rule for Softirq {
    fn cause(&self) -> Cause {
        Cause::Softirq
    }
    fn precedence(&self) -> u32 {
        50
    }

    fn claim(&self, _ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        matches!(item.bucket, Bucket::Softirq { .. }).then_some(Claim::All)
    }

    /// A softirq ran on the victim's CPU in the window, opened or closed by its own
    /// `softirq_entry`/`softirq_exit` (not a gap next to one: that is `hwlat`).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let seen = ctx.replay.segments.iter().any(|s| {
            matches!(s.bucket, Bucket::Softirq { .. }) && (s.begin.is_some() || s.end.is_some())
        });
        if seen {
            Ok(())
        } else {
            Err(format!(
                "no softirq_entry/exit on CPU {} in the window",
                ctx.ep.cpu
            ))
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        let ctx_key = |c: SoftirqContext| match c {
            SoftirqContext::IrqExit => 0u8,
            SoftirqContext::Ksoftirqd => 1,
            SoftirqContext::Thread => 2,
        };
        // One entry per vector and thread, whatever priority the thread ran at.
        let mut by_vec: BTreeMap<(u32, u8, Option<i32>), (SoftirqContext, u64)> = BTreeMap::new();
        for i in ctx.items {
            if let Bucket::Softirq {
                vec,
                context,
                thread,
            } = &i.bucket
            {
                let e = by_vec
                    .entry((*vec, ctx_key(*context), thread.as_ref().map(|t| t.tid)))
                    .or_insert((*context, 0));
                e.1 += i.ns;
            }
        }
        let mut v: Vec<_> = by_vec
            .into_iter()
            .map(|((vec, _, tid), (c, ns))| ((vec, c, tid), ns))
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.1));
        let parts: Vec<String> = v
            .iter()
            .map(|((vec, context, tid), ns)| {
                let thread = tid.map(|t| ctx.task_ref(t));
                let at = match (context, thread) {
                    (SoftirqContext::IrqExit, _) => String::new(),
                    (_, Some(t)) => format!(" in {t}"),
                    (SoftirqContext::Ksoftirqd, None) => " in ksoftirqd".to_string(),
                    (SoftirqContext::Thread, None) => " in a kernel thread".to_string(),
                };
                format!("{} {}{at}", softirq_name(*vec), human_duration(*ns))
            })
            .collect();
        let how = match v.first().map(|((_, c, _), _)| *c) {
            Some(SoftirqContext::Ksoftirqd) => {
                " (ksoftirqd ran it before the victim could run)"
            }
            Some(SoftirqContext::Thread) => {
                " (run in thread context, as PREEMPT_RT does: the thread held the CPU at its own priority, a PI boost included)"
            }
            _ => " (run on irq exit / bh enable, not preemptible on this kernel)",
        };
        format!(
            "softirq processing on CPU {cpu} delayed {victim}: {}{how}",
            parts.join(", "),
        )
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let mut v = Vec::new();
        let vecs: Vec<&'static str> = ctx
            .items
            .iter()
            .filter_map(|i| match &i.bucket {
                Bucket::Softirq { vec, .. } => Some(softirq_name(*vec)),
                _ => None,
            })
            .collect();
        // Network work cannot be moved "off" a housekeeping CPU: the other CPUs are
        // isolated ones.
        let isolated = ctx
            .tr
            .config
            .isolated
            .as_ref()
            .unwrap_or(&ctx.tr.facts.isolated);
        let on_housekeeping = !isolated.is_empty() && !isolated.contains(cpu);
        if !on_housekeeping && vecs.iter().any(|n| *n == "NET_RX" || *n == "NET_TX") {
            v.push(format!(
                "Keep network processing off CPU {cpu}: exclude it from /sys/class/net/<dev>/queues/rx-*/rps_cpus and xps_cpus, and move the NIC's IRQs with /proc/irq/<N>/smp_affinity_list."
            ));
        }
        if vecs.contains(&"BLOCK") {
            v.push(format!(
                "Block completions run on CPU {cpu}: set /sys/block/<dev>/queue/rq_affinity to 2 or move the device's IRQ."
            ));
        }
        // A softirq run in a thread (PREEMPT_RT: the thread that raised it, ksoftirqd,
        // ktimers) runs at that thread's priority: a victim above it is not delayed.
        let threaded = ctx.items.iter().find_map(|i| match &i.bucket {
            Bucket::Softirq {
                thread: Some(t), ..
            } => Some(t.clone()),
            _ => None,
        });
        match threaded {
            Some(t) => v.push(format!(
                "The softirq ran in {t}, at that thread's priority: a victim above it is not delayed by it (chrt -f -p <prio> {}), unless it waits for a lock the thread holds.",
                ctx.ep.victim.tid
            )),
            None => v.push(
                "The softirq ran on irq exit or bh enable, with preemption off: raising the victim's priority does not help against it."
                    .to_string(),
            ),
        }
        v
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Softirq { .. })
    }

    /// Softirqs ran longest between the timer IRQ and the thread.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        let Part::Softirq { ns, top } = &period.part else {
            return Answer::Pass;
        };
        period.names(
            Cause::Softirq,
            *ns,
            super::confidence(period.share(*ns)),
            format!(
                "softirqs ran {} on CPU {} before the thread, most {} ({})",
                us(*ns),
                period.cpu(),
                top.name,
                us(top.duration_ns)
            ),
        )
    }
}
