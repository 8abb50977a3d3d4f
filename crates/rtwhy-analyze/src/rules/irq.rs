//! `irq`: hard interrupt handlers on a CPU that is not isolated.

use crate::breakdown::TaskNames;
use crate::ctx::{is_local_timer, IrqWork};
use rtwhy_model::{human_duration, softirq_name, BreakdownItem, Bucket, Cause, Confidence};

use super::preemption::may_hold;
use super::{Claim, Rule};
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};
use crate::rules::PRIMARY_SHARE;

pub(crate) struct Irq;

impl Rule for Irq {
    fn cause(&self) -> Cause {
        Cause::Irq
    }
    fn precedence(&self) -> u32 {
        40
    }

    /// An IRQ's handler, and its thread when that may hold the CPU against the victim: the
    /// interrupt's work (PREEMPT_RT threads every handler), not an application preempting.
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        match &item.bucket {
            Bucket::Irq { .. } => Some(Claim::All),
            Bucket::IrqThread { thread, .. } => {
                may_hold(thread.prio, ctx.ep.victim.prio).then_some(Claim::All)
            }
            _ => None,
        }
    }

    /// A handler's entry or exit on the victim's CPU in the window, or an IRQ thread
    /// (`irq/N-name`) switched in or out there.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        let seen = ctx.replay.segments.iter().any(|s| {
            matches!(s.bucket, Bucket::Irq { .. } | Bucket::IrqThread { .. })
                && (s.begin.is_some() || s.end.is_some())
        });
        if seen {
            Ok(())
        } else {
            Err(format!(
                "no irq_handler_entry/exit and no IRQ thread on CPU {} in the window",
                ctx.ep.cpu
            ))
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, _share: f64, _confidence: &mut Confidence) -> String {
        irq_summary(ctx, Cause::Irq)
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        irq_advice(ctx, Cause::Irq)
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Irq { .. } | Bucket::IrqThread { .. })
    }

    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        irq_culprit(ctx, Cause::Irq)
    }

    /// A device IRQ that ran across the timer's expiry or before the thread; a handler
    /// that is no device's, or too short, refuses the IRQ part.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        match period_irq(period, Cause::Irq) {
            Answer::Pass => match &period.part {
                Part::Irq { ns, top } => Answer::Refuses(format!(
                    "IRQ handlers ran {} before the thread, the largest {} ({}, {}), not a device IRQ: {}",
                    us(*ns),
                    top.name,
                    top.id,
                    us(top.duration_ns),
                    period.breakdown()
                )),
                _ => Answer::Pass,
            },
            named => named,
        }
    }
}

/// The interrupt with the most work in the spike, on the victim's CPU.
pub(super) fn irq_culprit(ctx: &Ctx<'_>, cause: Cause) -> Option<String> {
    let w = irq_work(ctx, cause).into_iter().next()?;
    Some(format!("IRQ {} ({}) on CPU {}", w.irq, w.name, ctx.ep.cpu))
}

/// The interrupts of the spike: on an isolated CPU, the softirq work an IRQ's thread ran
/// is the IRQ's (the configuration error is the IRQ there; the softirq its mechanism).
pub(super) fn irq_work(ctx: &Ctx<'_>, cause: Cause) -> Vec<IrqWork> {
    crate::ctx::irq_work(ctx.items, cause == Cause::IrqOnIsolatedCpu, &|irq| {
        ctx.tr.irq_name(irq)
    })
}

/// The sentence for hard interrupt work, on any CPU or on an isolated one.
pub(super) fn irq_summary(ctx: &Ctx<'_>, cause: Cause) -> String {
    let cpu = ctx.ep.cpu;
    let victim = &ctx.ep.victim;
    let parts: Vec<String> = irq_work(ctx, cause)
        .iter()
        // The per-CPU timer and IPIs are interrupts but no device's: arm64 traces them as
        // IRQs (`arch_timer`, `IPI`), x86 as system vectors outside irq_handler_entry.
        .filter(|w| cause != Cause::IrqOnIsolatedCpu || !is_local_timer(&w.name))
        .map(|w| {
            let mut s = format!(
                "IRQ {} ({}) {}",
                w.irq,
                w.name,
                human_duration(w.hard_ns + w.thread_ns)
            );
            if let Some(t) = &w.thread {
                // No hard half in the window (it woke the thread before): the thread alone.
                let hard = if w.hard_ns == 0 {
                    String::new()
                } else {
                    format!("hard handler {}, ", human_duration(w.hard_ns))
                };
                let mechanism: Vec<String> = w
                    .softirqs
                    .iter()
                    .map(|(v, ns)| format!("{} {}", softirq_name(*v), human_duration(*ns)))
                    .collect();
                s.push_str(&format!(
                    " ({hard}thread {t} {}{}{})",
                    human_duration(w.thread_ns),
                    if mechanism.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", running the softirqs its handler raised: {}",
                            mechanism.join(", ")
                        )
                    },
                    match (t.prio, victim.prio) {
                        (Some(p), Some(v)) if p < v => ", which outranks the victim",
                        (Some(p), Some(v)) if p == v => ", at the victim's own priority",
                        _ => "",
                    }
                ));
            }
            if let Some(a) = ctx
                .tr
                .facts
                .irqs
                .get(&w.irq)
                .and_then(|f| f.affinity.as_deref())
            {
                s.push_str(&format!(", affinity {a}"));
            }
            s
        })
        .collect();
    if cause == Cause::IrqOnIsolatedCpu {
        let src = ctx
            .tr
            .facts
            .isolated_source
            .clone()
            .filter(|_| ctx.tr.config.isolated.is_none())
            .unwrap_or_else(|| "--isolated".to_string());
        format!(
            "device interrupts on isolated CPU {cpu} (isolated per {src}): {}",
            parts.join(", ")
        )
    } else {
        format!("hard interrupt handlers on CPU {cpu}: {}", parts.join(", "))
    }
}

/// What to do about a device interrupt on the victim's CPU.
pub(super) fn irq_advice(ctx: &Ctx<'_>, cause: Cause) -> Vec<String> {
    let cpu = ctx.ep.cpu;
    let victim = &ctx.ep.victim;
    let facts = &ctx.tr.facts;
    let mut v = Vec::new();
    // Where the IRQ may go: the housekeeping CPUs when some are isolated, else every
    // other CPU. A victim on a housekeeping CPU gets no move (there it would go "off"
    // the CPU meant for it, or onto an isolated one).
    let isolated = ctx.tr.config.isolated.as_ref().unwrap_or(&facts.isolated);
    let n = facts.cpus.unwrap_or(ctx.tr.history.cpu_count() as u32);
    let targets: Vec<u32> = (0..n)
        .filter(|c| *c != cpu && !isolated.contains(*c))
        .collect();
    let on_housekeeping = !isolated.is_empty() && !isolated.contains(cpu);
    let hk = (!targets.is_empty() && !on_housekeeping)
        .then(|| rtwhy_model::CpuList(targets).to_string());
    for w in irq_work(ctx, cause) {
        let (irq, name) = (w.irq, &w.name);
        // A per-CPU interrupt (arm64's `arch_timer` PPI, IPIs) runs on every CPU: there is
        // no affinity to change.
        if is_local_timer(name) {
            continue;
        }
        let fact = facts.irqs.get(&irq);
        let affinity = fact
            .and_then(|f| f.affinity.clone())
            .map(|a| format!(" (its affinity is {a})"))
            .unwrap_or_default();
        if fact.is_some_and(|f| f.managed) {
            v.push(format!(
                "IRQ {irq} ({name}) is a managed interrupt{affinity}: its affinity cannot be changed; boot with isolcpus=managed_irq,{cpu} (or keep the device's queues off CPU {cpu}) to keep it away."
            ));
        } else {
            // The recorded irqbalance fact (the one `rtwhy doctor` checks)
            // says whether anything would move the IRQ back.
            let keep = match facts.irqbalance {
                Some(true) => format!(", and ban CPU {cpu} from irqbalance, which is running and would move it back (IRQBALANCE_BANNED_CPULIST={cpu})"),
                Some(false) => ", and make it permanent with irqaffinity= on the kernel command line".to_string(),
                None => ", and stop irqbalance from moving it back (IRQBALANCE_BANNED_CPUS or irqaffinity= on the kernel command line)".to_string(),
            };
            if let Some(hk) = &hk {
                v.push(format!(
                    "Move IRQ {irq} ({name}) off CPU {cpu}{affinity}: echo {hk} > /proc/irq/{irq}/smp_affinity_list{keep}."
                ));
            }
        }
        if let (Some(t), Some(thread_prio), Some(victim_prio)) = (
            &w.thread,
            w.thread.as_ref().and_then(|t| t.prio),
            victim.prio,
        ) {
            if thread_prio <= victim_prio {
                let above = rtwhy_model::rt_priority_from_kernel_prio(thread_prio)
                    .map(|p| format!(" (above {p})"))
                    .unwrap_or_default();
                let rank = if thread_prio < victim_prio {
                    "outranks"
                } else {
                    "has the same priority as"
                };
                v.push(format!(
                    "Its thread {t} {rank} {}: if {} does not depend on this device, give it a higher real-time priority than the IRQ thread{above} (chrt -f -p <prio> {}); the hard handler then costs it only microseconds.",
                    victim.comm, victim.comm, victim.tid
                ));
            }
        }
    }
    if cause == Cause::Irq && !ctx.isolated {
        v.push(format!(
            "CPU {cpu} is not isolated: for a dedicated real-time CPU boot with isolcpus=/nohz_full=/irqaffinity= so device IRQs stay on housekeeping CPUs."
        ));
    }
    v
}

/// Handler names of per-CPU interrupts as the osnoise tracer prints them: not devices.
/// x86's system vectors, and arm64's generic timer and IPIs (`irq_noise: arch_timer:11`,
/// `irq_noise: IPI:6` in the arm64 PREEMPT_RT guest, docs/arm64.md).
const SYSTEM_VECTORS: [&str; 16] = [
    "local_timer",
    "irq_work",
    "reschedule",
    "call_function",
    "call_function_single",
    "thermal_apic",
    "threshold_apic",
    "deferred_error",
    "spurious_apic",
    "error_apic",
    "x86_platform_ipi",
    "posted_msi_notification",
    "kvm_posted_intr_ipi",
    "hyperv_callback",
    "arch_timer",
    "IPI",
];

/// Whether an osnoise `irq_noise` (or `nmi_noise`) of handler `desc` is a device's.
fn is_device_irq(desc: &str) -> bool {
    desc != "nmi" && !SYSTEM_VECTORS.contains(&desc)
}

/// A timerlat period's device IRQ named as `cause` (`irq` or `irq_on_isolated_cpu`): one
/// that ran across the timer's expiry (it delayed the handler), or the one that ran
/// longest between the timer IRQ and the thread, for the primary share.
pub(super) fn period_irq(period: &PeriodCtx<'_>, cause: Cause) -> Answer {
    let cpu = period.cpu();
    match &period.part {
        Part::Delay {
            ns,
            across: Some(i),
            ..
        } if is_device_irq(&i.name) => {
            let part = i.duration_ns.min(*ns);
            period.names(
                cause,
                part,
                super::confidence(period.share(part)).min(Confidence::Medium),
                format!(
                    "IRQ {} ({}) ran {} on CPU {cpu} across the timer's expiry and delayed its handler by up to that",
                    i.id,
                    i.name,
                    us(i.duration_ns)
                ),
            )
        }
        Part::Irq { top, .. }
            if is_device_irq(&top.name) && period.share(top.duration_ns) >= PRIMARY_SHARE =>
        {
            period.names(
                cause,
                top.duration_ns,
                super::confidence(period.share(top.duration_ns)),
                format!(
                    "device IRQ {} ({}) ran {} on CPU {cpu}{} between the timer IRQ and the thread",
                    top.id,
                    top.name,
                    us(top.duration_ns),
                    if cause == Cause::IrqOnIsolatedCpu {
                        ", an isolated CPU,"
                    } else {
                        ""
                    }
                ),
            )
        }
        _ => Answer::Pass,
    }
}
