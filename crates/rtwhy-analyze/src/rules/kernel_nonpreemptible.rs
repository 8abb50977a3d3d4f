//! `kernel_nonpreemptible`: a lower-priority task kept the CPU after the wake-up.

use rtwhy_model::{
    human_duration, BreakdownItem, Bucket, Cause, Confidence, EventKind, Finding, Spike, SpikeKind,
    SpikeSource,
};

use super::{Claim, Rule};
use crate::breakdown::silent_cpus;
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};
use crate::tracker::{Episode, Tracker};
use rtwhy_model::policy_of;

/// Functions that turn interrupts back on: a timer interrupt that was held off is
/// delivered right there, so its stack's innermost interrupted frame is one of these,
/// and the code that had interrupts off is its caller. `multi_cpu_stop` is
/// stop_machine, which runs with interrupts off on every CPU.
pub(crate) const IRQ_ENABLE: [&str; 9] = [
    "_raw_spin_unlock_irqrestore",
    "_raw_spin_unlock_irq",
    "_raw_read_unlock_irqrestore",
    "_raw_read_unlock_irq",
    "_raw_write_unlock_irqrestore",
    "_raw_write_unlock_irq",
    "arch_local_irq_restore",
    "arch_local_irq_enable",
    "multi_cpu_stop",
];

/// The idle loop: a late timer interrupt that found the CPU there says nothing about
/// kernel code.
pub(crate) const IDLE: [&str; 11] = [
    "default_idle",
    "pv_native_safe_halt",
    "native_safe_halt",
    "cpuidle_enter_state",
    "intel_idle",
    "acpi_idle",
    "mwait_idle",
    "cpu_idle_poll",
    "arch_cpu_idle",
    "cpu_do_idle",
    "do_idle",
];

/// `e1000_watchdog` of `e1000_watchdog+0x50/0x90` (and of `e1000_watchdog.isra.0+0x50`).
pub(crate) fn function_of(frame: &str) -> &str {
    let f = frame.split('+').next().unwrap_or(frame);
    f.split('.').next().unwrap_or(f)
}

/// Kernel code that kept interrupts off while the victim's timer was due, from the
/// stack the BPF detector took in the late timer interrupt: (how late, the
/// interrupt-enabling frame, the code that had them off).
///
/// Not when another CPU was silent over the same stretch: a CPU stopped from outside
/// (SMI, the hypervisor) delivers its pending interrupt wherever it resumes, and that
/// may be a short interrupts-off section that did not cause the wait.
pub(crate) fn irqs_held_off<'a>(ctx: &Ctx<'a>) -> Option<(u64, &'a str, &'a str)> {
    *ctx.irqs_off.get_or_init(|| find_irqs_held_off(ctx))
}

fn find_irqs_held_off<'a>(ctx: &Ctx<'a>) -> Option<(u64, &'a str, &'a str)> {
    let gap = ctx
        .replay
        .segments
        .iter()
        .filter(|s| matches!(s.bucket, Bucket::TimerIrqDelay | Bucket::Unaccounted))
        .max_by_key(|s| s.to.0 - s.from.0);
    if let Some(g) = gap {
        if !silent_cpus(&ctx.tr.history, ctx.ep.cpu, g.from, g.to).is_empty() {
            return None;
        }
    }
    held_off(ctx.ep)
}

fn held_off(ep: &Episode) -> Option<(u64, &str, &str)> {
    let SpikeSource::BreachMarker {
        late_timer: Some(l),
        ..
    } = &ep.source
    else {
        return None;
    };
    let first = l.interrupted.first()?;
    if l.interrupted.iter().any(|f| IDLE.contains(&function_of(f))) {
        return None;
    }
    if !IRQ_ENABLE.contains(&function_of(first)) {
        return None;
    }
    // The holder: the first frame that is not itself lock or interrupt plumbing.
    let code = l
        .interrupted
        .iter()
        .find(|f| {
            let f = function_of(f);
            !IRQ_ENABLE.contains(&f) || f == "multi_cpu_stop"
        })
        .or(l.interrupted.get(1))
        .unwrap_or(first);
    Some((l.late_ns, first.as_str(), code.as_str()))
}

pub(crate) struct KernelNonpreemptible;

/// What is known of the kernel's preemption model, and from where.
pub(crate) enum Model {
    /// Named by the recorded facts (`kernel.preempt`, the version string).
    Recorded(String),
    /// Not recorded; the trace shows `ktimers/N` threads, which only PREEMPT_RT has.
    InferredRt,
    /// Nothing says.
    Unknown,
}

pub(crate) fn model(ctx: &Ctx<'_>) -> Model {
    model_of(ctx.tr)
}

fn model_of(tr: &Tracker) -> Model {
    if let Some(m) = tr.facts.preempt_model() {
        return Model::Recorded(m.to_string());
    }
    if tr.rt_threads_seen() {
        return Model::InferredRt;
    }
    Model::Unknown
}

/// Whether a thread named `comm` runs only on PREEMPT_RT kernels: `ktimers/N` runs the
/// timer softirqs there.
pub(crate) fn preempt_rt_only(comm: &[u8]) -> bool {
    comm.starts_with(b"ktimers/")
}

/// Whether the trace showed the kernel to be PREEMPT_RT, the preemption model not
/// recorded: spikes diagnosed before it showed it may name this cause wrongly
/// ([`refuse_learned_late`]).
pub(crate) fn preempt_rt_inferred(tr: &Tracker) -> bool {
    matches!(model_of(tr), Model::InferredRt)
}

/// A spike diagnosed before the trace's first `ktimers/N` thread could not know the
/// kernel was PREEMPT_RT; this rule's precondition fails once it is known (found on a
/// timerlat trace from the PREEMPT_RT guest whose first spike ended 16 ms before
/// ktimers/0 first ran): that verdict becomes unknown, and is dropped from the
/// contributors.
pub(crate) fn refuse_learned_late(s: &mut Spike) {
    if s.primary.cause == Cause::KernelNonpreemptible {
        s.primary = Finding {
            cause: Cause::Unknown,
            confidence: Confidence::Low,
            share: s.primary.share,
            summary: format!(
                "not kernel_nonpreemptible: the kernel is PREEMPT_RT (ktimers/N threads run later in the trace); {}",
                s.primary.summary
            ),
            culprit: None,
        };
        s.remediation.clear();
    }
    s.contributors
        .retain(|c| c.cause != Cause::KernelNonpreemptible);
}

impl Rule for KernelNonpreemptible {
    fn cause(&self) -> Cause {
        Cause::KernelNonpreemptible
    }
    fn precedence(&self) -> u32 {
        70
    }

    /// A stopped timer or unaccounted time while the kernel held interrupts off; lower
    /// work on a real-time victim's CPU (a kernel section it could not preempt).
    fn claim(&self, ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        let stopped = matches!(item.bucket, Bucket::TimerIrqDelay | Bucket::Unaccounted);
        ((stopped && irqs_held_off(ctx).is_some()) || super::below_rt_victim(ctx, &item.bucket))
            .then_some(Claim::All)
    }

    /// The victim is real-time; a task it outranks kept the CPU in the window; and the
    /// preemption model lets a woken RT task wait for the kernel: `none` or `voluntary`
    /// (or not recorded and not contradicted by the trace). Not `full`, `lazy` or `rt`.
    ///
    /// Or, on any preemption model: the victim's timer interrupt came late and the
    /// detector's stack in it shows kernel code turning interrupts back on (it had them
    /// off until then).
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if irqs_held_off(ctx).is_some() {
            return Ok(());
        }
        let cpu = ctx.ep.cpu;
        if !ctx.ep.victim.is_rt() {
            return Err("the victim is not a real-time task".to_string());
        }
        let lower = ctx.items.iter().any(|i| {
            matches!(
                i.bucket,
                Bucket::Task {
                    outranks_victim: false,
                    ..
                } | Bucket::IrqThread {
                    outranks_victim: false,
                    ..
                }
            )
        });
        if !lower {
            return Err(format!(
                "no lower-priority task kept CPU {cpu} after the wake-up"
            ));
        }
        // A real-time victim switched out while runnable in favour of lower-priority work
        // (or idle) was refused by the scheduler (RT throttling, the fair server), not
        // kept waiting by a section that could not be preempted: the switch happened.
        if let Some(EventKind::SchedSwitch {
            prev_pid,
            prev_state,
            next_pid,
            next_prio,
            ..
        }) = ctx.ep.preempted_by.as_ref().map(|e| &e.kind)
        {
            if ctx.ep.kind == SpikeKind::Preempted
                && *prev_pid == ctx.ep.victim.tid
                && prev_state.is_runnable()
                && (*next_pid == 0 || ctx.ep.victim.prio.is_some_and(|v| *next_prio > v))
            {
                return Err(format!(
                    "{} was switched out runnable for lower-priority work: the scheduler refused the real-time class (throttling), the kernel did preempt",
                    ctx.ep.victim
                ));
            }
        }
        match model(ctx) {
            Model::Recorded(m) if m == "none" || m == "voluntary" => Ok(()),
            Model::Recorded(m) => Err(format!(
                "the kernel preempts in kernel code (preemption model {m}, from the recorded facts)"
            )),
            Model::InferredRt => Err(
                "the kernel is PREEMPT_RT (inferred from its ktimers/N threads in the trace; the preemption model was not recorded)"
                    .to_string(),
            ),
            Model::Unknown => Ok(()),
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, share: f64, confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let victim = &ctx.ep.victim;
        if let Some((late, at, code)) = irqs_held_off(ctx) {
            // The stack was taken inside the late interrupt itself: direct evidence.
            if share >= 0.5 {
                *confidence = Confidence::High;
            }
            format!(
                "interrupts disabled on CPU {cpu}: {victim}'s timer interrupt came {} late and was delivered at {at} in {code}, so kernel code ({}) kept interrupts off until then (stack from rtwhy's BPF detector in that interrupt)",
                human_duration(late),
                function_of(code)
            )
        } else {
            let interrupts_seen = ctx.tr.seen.irq && ctx.tr.seen.softirq;
            if !interrupts_seen {
                *confidence = (*confidence).min(Confidence::Medium);
            }
            let interrupts = if interrupts_seen {
                ", with no IRQ or softirq to explain it"
            } else {
                "; IRQ/softirq events were not recorded, so interrupt work may hide in this time"
            };
            let who = ctx.top_item(|b| {
                matches!(
                    b,
                    Bucket::Task {
                        outranks_victim: false,
                        ..
                    }
                )
            });
            let model = match model(ctx) {
                Model::Recorded(m) => {
                    format!(" (preemption model: {m}, from the recorded facts)")
                }
                _ => {
                    *confidence = (*confidence).min(Confidence::Medium);
                    " (preemption model not recorded)".to_string()
                }
            };
            match who {
                Some(i) => format!(
                    "non-preemptible kernel section on CPU {cpu}: {} kept the CPU for {} after {victim} was woken{interrupts}{model}",
                    i.bucket,
                    human_duration(i.ns)
                ),
                None => format!("non-preemptible kernel section on CPU {cpu}{model}"),
            }
        }
    }

    fn advice(&self, ctx: &Ctx<'_>) -> Vec<String> {
        let cpu = ctx.ep.cpu;
        let facts = &ctx.tr.facts;
        if let Some((_, _, code)) = irqs_held_off(ctx) {
            let f = function_of(code);
            vec![
                format!(
                    "{f} ran on CPU {cpu} with interrupts off: no preemption model helps there. Find what called it on that CPU (the full stack is in the capture's rtwhy-breach marker, key timer_stack) and move that work off CPU {cpu}: its IRQ's smp_affinity_list, the kernel thread's or task's affinity, or the triggering operation."
                ),
                "If it is a driver or subsystem holding a lock with interrupts off for this long, report it upstream with the stack: on PREEMPT_RT only raw spinlocks and explicit local_irq_disable() sections do this.".to_string(),
            ]
        } else {
            let model = facts.preempt_model().unwrap_or("unknown");
            vec![
                format!(
                    "A lower-priority task held CPU {cpu} in kernel code that cannot be preempted (preemption model {model}): boot with preempt=full (PREEMPT_DYNAMIC) or use a PREEMPT_RT kernel."
                ),
                format!(
                    "Or keep such work off CPU {cpu}: kernel threads (kworker, kdamond, kswapd) with their own affinity settings, user tasks with taskset/cpusets."
                ),
            ]
        }
    }

    fn shows(&self, ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(
            bucket,
            Bucket::Task {
                outranks_victim: false,
                ..
            }
        ) || (irqs_held_off(ctx).is_some()
            && matches!(bucket, Bucket::Unaccounted | Bucket::TimerIrqDelay))
    }

    /// The task that kept the CPU in the kernel, else the CPU with its interrupts off.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        let cpu = ctx.ep.cpu;
        let task = ctx.top_item(|b| {
            matches!(
                b,
                Bucket::Task {
                    outranks_victim: false,
                    ..
                }
            )
        });
        match task.and_then(|i| ctx.who(&i.bucket)) {
            Some(who) => Some(format!("{who} on CPU {cpu}")),
            None => Some(format!("CPU {cpu} with interrupts off")),
        }
    }

    /// The timer's handler was taken where kernel code turned interrupts back on (the
    /// stack rtla saves at the IRQ), no other CPU silent over the delay; or a task the
    /// timerlat thread outranks kept the CPU after the timer woke it, on a kernel not
    /// known to be PREEMPT_RT. The idle task holds no kernel section.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        let cpu = period.cpu();
        match &period.part {
            Part::Delay {
                ns, others_silent, ..
            } => {
                let inner = period.interrupted();
                let Some(first) = inner.first() else {
                    return Answer::Pass;
                };
                if inner.iter().any(|f| IDLE.contains(&function_of(f)))
                    || !IRQ_ENABLE.contains(&function_of(first))
                    || *others_silent
                {
                    return Answer::Pass;
                }
                let holder = inner
                    .iter()
                    .find(|f| {
                        let f = function_of(f);
                        !IRQ_ENABLE.contains(&f) || f == "multi_cpu_stop"
                    })
                    .unwrap_or(first);
                period.names(
                    Cause::KernelNonpreemptible,
                    *ns,
                    super::confidence(period.share(*ns)).min(Confidence::Medium),
                    format!(
                        "the timer's IRQ handler began {} after the expiry on CPU {cpu}, taken in {first}, which turns interrupts back on: {holder} had them off until then (the stack at the IRQ)",
                        us(*ns)
                    ),
                )
            }
            Part::Thread {
                comm,
                pid,
                ns,
                prio: Some(o),
                victim_prio: Some(v),
                preempt_rt,
            } if *pid != 0 && o > v => {
                if *preempt_rt {
                    return Answer::Refuses(format!(
                        "{comm}:{pid} ({}) kept CPU {cpu} for {} although timerlat/{cpu} ({}) outranks it, on a PREEMPT_RT kernel (ktimers threads) that preempts it at once: not kernel_nonpreemptible; the events do not say what held it",
                        policy_of(*o),
                        us(*ns),
                        policy_of(*v)
                    ));
                }
                period.names(
                    Cause::KernelNonpreemptible,
                    *ns,
                    super::confidence(period.share(*ns)).min(Confidence::Medium),
                    format!(
                        "{comm}:{pid} ({}) kept CPU {cpu} for {} after the timer woke timerlat/{cpu} ({}), which outranks it; the preemption model was not recorded",
                        policy_of(*o),
                        us(*ns),
                        policy_of(*v)
                    ),
                )
            }
            _ => Answer::Pass,
        }
    }
}
