//! `hwlat`: the CPU was stopped with no kernel event at all.

use crate::breakdown;
use rtwhy_model::{human_duration, BreakdownItem, Bucket, Cause, Confidence, Event, EventKind};

use super::{kernel_nonpreemptible, Claim, Rule};
use crate::ctx::Ctx;
use crate::period::{us, Answer, Part, PeriodCtx};
use crate::rules::PRIMARY_SHARE;

pub(crate) struct Hwlat;

/// The handler of the timer interrupt that came latest in the window, and how late: a
/// stopped CPU's mark (and an idle exit's, when the CPU slept through it).
pub(crate) fn late_timer(ctx: &Ctx<'_>) -> Option<(Event, String)> {
    let l = ctx.replay.late_timer?;
    let h = ctx.find(l.cpu, l.ts, |k| {
        matches!(k, EventKind::HrtimerExpireEntry { .. })
    })?;
    Some((
        h,
        format!(
            "timer interrupt {} late (now - expires)",
            human_duration(l.lateness)
        ),
    ))
}

impl Rule for Hwlat {
    fn cause(&self) -> Cause {
        Cause::Hwlat
    }
    fn precedence(&self) -> u32 {
        90
    }

    /// A stopped timer or unaccounted time.
    fn claim(&self, _ctx: &Ctx<'_>, item: &BreakdownItem) -> Option<Claim> {
        matches!(item.bucket, Bucket::TimerIrqDelay | Bucket::Unaccounted).then_some(Claim::All)
    }

    fn evidence(&self, ctx: &Ctx<'_>) -> Vec<(Event, String)> {
        let entered = ctx.replay.idle_before.as_ref().map(|(_, e)| {
            (
                e.clone(),
                "last idle state entered before the window".to_string(),
            )
        });
        late_timer(ctx).into_iter().chain(entered).collect()
    }

    /// An event-free stretch closed by a late timer interrupt (`now - expires`), or the
    /// victim's own timer handled late while nothing ran: the breakdown only makes these
    /// buckets from such a timer, so their presence is the late timer's.
    ///
    /// Not when the late timer interrupt's stack shows kernel code that had interrupts
    /// off: then the CPU was running, not stopped.
    fn preconditions(&self, ctx: &Ctx<'_>) -> Result<(), String> {
        if let Some((_, at, code)) = kernel_nonpreemptible::irqs_held_off(ctx) {
            return Err(format!(
                "the late timer interrupt was delivered at {at} in {code}: kernel code had interrupts off, the CPU was not stopped"
            ));
        }
        let late_timer = ctx.replay.late_timer.is_some()
            && ctx
                .items
                .iter()
                .any(|i| i.bucket == Bucket::Unaccounted && i.ns > 0);
        let own_timer_late = ctx.ep.wake.as_ref().and_then(|w| w.timer).is_some()
            && ctx
                .items
                .iter()
                .any(|i| i.bucket == Bucket::TimerIrqDelay && i.ns > 0);
        if late_timer || own_timer_late {
            Ok(())
        } else {
            Err("no event-free stretch ended by a late timer interrupt".to_string())
        }
    }

    fn summary(&self, ctx: &Ctx<'_>, share: f64, confidence: &mut Confidence) -> String {
        let cpu = ctx.ep.cpu;
        let ns = ctx.sum(|b| matches!(b, Bucket::TimerIrqDelay | Bucket::Unaccounted));
        let gap = ctx.largest(|b| matches!(b, Bucket::TimerIrqDelay | Bucket::Unaccounted));
        let silent = gap
            .map(|g| breakdown::silent_cpus(&ctx.tr.history, cpu, g.from, g.to))
            .unwrap_or_default();
        let late = ctx.replay.late_timer.map(|l| l.lateness).or_else(|| {
            ctx.ep
                .wake
                .as_ref()
                .and_then(|w| w.timer)
                .map(|t| t.handler.0.saturating_sub(t.expiry.0))
        });
        if !silent.is_empty() || late.is_some_and(|l| l >= 1_000_000) {
            *confidence = (*confidence).max(Confidence::Medium);
            if share >= 0.6 {
                *confidence = Confidence::High;
            }
        }
        format!(
            "CPU {cpu} was stopped for {} with no kernel event at all{}{}: firmware (SMI) or, in a VM, the hypervisor descheduling the vCPU",
            human_duration(ns),
            late.map(|l| format!("; a timer interrupt arrived {} after it was due", human_duration(l)))
                .unwrap_or_default(),
            if silent.is_empty() {
                String::new()
            } else {
                format!(
                    "; CPU{} {} silent at the same time",
                    if silent.len() > 1 { "s" } else { "" },
                    silent.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
                )
            }
        )
    }

    fn advice(&self, _ctx: &Ctx<'_>) -> Vec<String> {
        vec![
            "Time passed with no kernel event: check firmware settings (disable SMI sources, power management in the BIOS), or in a VM pin the vCPUs on the host and avoid overcommit.".to_string(),
            "Measure it independently with hwlatdetect or `rtla hwnoise` where the kernel has the hwlat/osnoise tracers.".to_string(),
        ]
    }

    fn shows(&self, _ctx: &Ctx<'_>, bucket: &Bucket) -> bool {
        matches!(bucket, Bucket::Unaccounted | Bucket::TimerIrqDelay)
    }

    /// The CPU itself: what stopped it (firmware, the hypervisor) leaves no event.
    fn culprit(&self, ctx: &Ctx<'_>) -> Option<String> {
        Some(format!("CPU {} stopped", ctx.ep.cpu))
    }

    /// The CPU recorded nothing and ran no handler for the primary share of the latency
    /// between the timer's expiry and its handler: it was stopped. Else the delay is
    /// refused, saying what the trace leaves open.
    fn period(&self, period: &PeriodCtx<'_>) -> Answer {
        let Part::Delay {
            ns,
            silence,
            others_silent_in_silence,
            ..
        } = &period.part
        else {
            return Answer::Pass;
        };
        let s = period.spike;
        let cpu = period.cpu();
        let inner = period.interrupted();
        let idle_frame = inner
            .iter()
            .find(|f| kernel_nonpreemptible::IDLE.contains(&kernel_nonpreemptible::function_of(f)));
        match silence {
            Some((gap, since, until)) if period.share(*gap) >= PRIMARY_SHARE => {
                let what = if s.blocking_thread.pid == 0 {
                    "idle (halted)"
                } else {
                    "running a task"
                };
                // A stack that does not show the idle loop leaves open that the
                // interrupted code itself had interrupts off (an inlined
                // local_irq_restore leaves no frame of its own).
                let (cap, stack_note) = match (idle_frame, inner.first()) {
                    (None, Some(f)) if *others_silent_in_silence => (
                        Confidence::Medium,
                        format!("; another CPU recorded nothing over the same stretch, so the machine was stopped and the timer was taken where CPU {cpu} resumed ({f})"),
                    ),
                    (Some(f), _) => (
                        Confidence::Medium,
                        format!("; the stack at the IRQ shows the CPU halted in {f}, interrupts on"),
                    ),
                    (None, Some(f)) => (
                        Confidence::Low,
                        format!("; the stack at the IRQ shows it taken in {f}, which may itself have kept interrupts off (the stack cannot tell)"),
                    ),
                    (None, None) => (Confidence::Medium, String::new()),
                };
                period.names(
                    Cause::Hwlat,
                    *gap,
                    super::confidence(period.share(*gap)).min(cap),
                    format!(
                        "CPU {cpu} was {what} and recorded no event for {} (from {:.6} to {:.6}) between its timer's expiry and the handler, which began {} after the expiry: the CPU was stopped (SMI or hypervisor){stack_note}",
                        us(*gap),
                        since.as_secs_f64(),
                        until.as_secs_f64(),
                        us(*ns),
                    ),
                )
            }
            _ => {
                let why = match silence {
                    None => format!("the trace holds no event of CPU {cpu} before the handler, so how long it was silent is not known"),
                    Some((g, from, to)) => format!(
                        "CPU {cpu}'s longest event-free stretch between the expiry and the handler was {} (from {:.6} to {:.6})",
                        us(*g),
                        from.as_secs_f64(),
                        to.as_secs_f64()
                    ),
                };
                let open = match (idle_frame, inner.first()) {
                    (Some(f), _) => format!("the stack at the IRQ shows the CPU halted in {f}, interrupts on, but nothing recorded rules out an interrupt handler or another stop before it"),
                    (None, Some(f)) => format!("the stack at the IRQ shows it taken in {f}; nothing recorded says whether interrupts were off in the kernel or the CPU was stopped"),
                    (None, None) => "nothing recorded says whether interrupts were off in the kernel or the CPU was stopped (`rtla timerlat -s` saves the stack at the IRQ)".to_owned(),
                };
                Answer::Refuses(format!(
                    "the timer's IRQ handler began {} late ({:.0} %) with {} on CPU {cpu}; {why}; {open}",
                    us(*ns),
                    period.share(*ns) * 100.0,
                    s.blocking_thread.comm.as_deref().unwrap_or("a task"),
                ))
            }
        }
    }
}
