//! What the rules look at for one timerlat period: the spike as rtla's auto-analysis
//! breaks it down, and the largest part of its latency with what the trace says around
//! it. Made by `timerlat`; read by `rules` and `timerlat`, and depending on neither.

use rtwhy_model::{Cause, Confidence, Finding, Interference, Nanos, TimerlatSpike};

/// A timerlat period over the threshold, as the rules read it.
pub(crate) struct PeriodCtx<'a> {
    pub spike: &'a TimerlatSpike,
    /// The largest part of the latency: the one a cause must explain.
    pub part: Part<'a>,
    /// The CPU is one of those meant to be free of device IRQs.
    pub isolated: bool,
}

/// The largest part of a period's latency.
pub(crate) enum Part<'a> {
    /// The timer's IRQ handler began `ns` after the expiry.
    Delay {
        ns: u64,
        /// An interrupt that ran across the expiry for at least the primary share.
        across: Option<&'a Interference>,
        /// The longest stretch from the expiry to the handler in which the CPU recorded
        /// nothing and ran no interrupt handler: (length, from, to).
        silence: Option<(u64, Nanos, Nanos)>,
        /// Another CPU running a task recorded nothing from the expiry to the handler.
        others_silent: bool,
        /// Another CPU running a task recorded nothing over `silence`.
        others_silent_in_silence: bool,
    },
    /// Device or system IRQ handlers ran `ns` between the timer IRQ and the thread; `top`
    /// is the handler that ran longest (its runs summed).
    Irq { ns: u64, top: &'a Interference },
    /// Softirqs ran `ns` between the timer IRQ and the thread; `top` ran longest.
    Softirq { ns: u64, top: &'a Interference },
    /// Task `comm`:`pid` ran `ns` before the timerlat thread: the task current at the
    /// IRQ, or the one that interfered longest after it.
    Thread {
        comm: &'a str,
        pid: i32,
        ns: u64,
        /// Its kernel prio and the timerlat thread's, when scheduler events named them.
        prio: Option<i32>,
        victim_prio: Option<i32>,
        /// The trace shows `ktimers/N` threads, which only PREEMPT_RT kernels have.
        preempt_rt: bool,
    },
    /// NMIs ran `ns` before the thread.
    Nmi { ns: u64 },
}

/// A rule's answer for a period.
pub(crate) enum Answer {
    /// The largest part is not this cause's kind.
    Pass,
    /// The rule names its cause.
    Names(Finding),
    /// The part is this cause's kind but the events do not hold its preconditions: why,
    /// in words that stand as the period's summary when no rule names a cause.
    Refuses(String),
}

impl PeriodCtx<'_> {
    /// `ns` as a share of the period's latency.
    pub(crate) fn share(&self, ns: u64) -> f64 {
        ns as f64 / self.spike.latency_ns.max(1) as f64
    }

    /// The period's CPU.
    pub(crate) fn cpu(&self) -> u32 {
        self.spike.cpu
    }

    /// `cause` named for `ns` of the latency, with `confidence`.
    pub(crate) fn names(
        &self,
        cause: Cause,
        ns: u64,
        confidence: Confidence,
        summary: String,
    ) -> Answer {
        Answer::Names(Finding {
            cause,
            confidence,
            share: self.share(ns),
            summary,
            culprit: None,
        })
    }

    /// The frames the timer interrupt interrupted, from the stack rtla saves at the IRQ
    /// (`-s`): those after the interrupt entry (`asm_sysvec_apic_timer_interrupt`, ...),
    /// innermost first.
    pub(crate) fn interrupted(&self) -> &[String] {
        let stack = &self.spike.stack;
        stack
            .iter()
            .position(|f| f.starts_with("asm_"))
            .and_then(|i| stack.get(i + 1..))
            .unwrap_or(&[])
    }

    /// The breakdown in words, for verdicts that name no cause.
    pub(crate) fn breakdown(&self) -> String {
        describe(self.spike)
    }
}

/// Microseconds as timerlat's verdicts print them.
pub(crate) fn us(ns: u64) -> String {
    format!("{:.2} us", ns as f64 / 1000.0)
}

/// The breakdown of `s` in words, for verdicts that name no cause.
pub(crate) fn describe(s: &TimerlatSpike) -> String {
    let mut parts = Vec::new();
    if let Some(d) = s.irq_handler_delay_ns {
        parts.push(format!("IRQ handler delay {}", us(d)));
    }
    if s.blocking_thread.duration_ns > 0 {
        parts.push(format!(
            "blocking thread {}:{} {}",
            s.blocking_thread.comm.as_deref().unwrap_or("?"),
            s.blocking_thread.pid,
            us(s.blocking_thread.duration_ns)
        ));
    }
    for (what, list) in [
        ("NMI", &s.nmi),
        ("IRQ", &s.irq),
        ("softirq", &s.softirq),
        ("thread", &s.thread),
    ] {
        let sum = TimerlatSpike::sum(list);
        if sum > 0 {
            parts.push(format!("{what} interference {}", us(sum)));
        }
    }
    if parts.is_empty() {
        "no osnoise event recorded in the period (record with `-e osnoise`)".into()
    } else {
        parts.join(", ")
    }
}
