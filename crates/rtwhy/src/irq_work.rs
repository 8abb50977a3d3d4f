//! Traces a scenario's device interrupts on the victim's CPU while its load runs alone,
//! for the selftest to weigh against the CPU's noise ([`rtwhy_lab::irq_work`] cuts the
//! trace into bursts and weighs them).
//!
//! A tracefs instance of its own, on the victim's CPU only, records the driven
//! interrupts' hard handlers (`irq_handler_entry`/`exit`, filtered to their numbers) and
//! every `sched_switch` (their threads' runs); the trace's text is kept beside the
//! selftest's captures.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use rtwhy_decode::input::{self, Item, Sink};
use rtwhy_lab::irq_work::{bursts_of, IrqWork};
use rtwhy_lab::tweak::JOURNAL_DIR;
use rtwhy_lab::{DeviceIrq, Placement, Platform, Scenario, Stop, Tweaks};
use rtwhy_model::Event;
use rtwhy_record::tracefs::Tracefs;

/// How long the load runs while its interrupts are traced.
pub const MEASURE_RUN: Duration = Duration::from_secs(2);

/// Runs `s`'s load alone for [`MEASURE_RUN`] while tracing the work of `irqs` on
/// `at.cpu`; the trace's text is kept at `keep`.
pub fn measure(
    p: &Platform,
    s: Scenario,
    at: &Placement,
    irqs: &[DeviceIrq],
    interrupted: &Arc<AtomicBool>,
    keep: &Path,
) -> Result<IrqWork> {
    let tracefs = Tracefs::open()?;
    let name = format!(
        "{}-irqwork",
        rtwhy_record::session::instance_names(std::process::id()).0
    );
    let instance = tracefs.create_instance(&name)?;
    let numbers: Vec<i32> = irqs.iter().map(|i| i.irq).collect();
    let filter = numbers
        .iter()
        .map(|n| format!("irq == {n}"))
        .collect::<Vec<_>>()
        .join(" || ");
    instance.set_cpus(&[at.cpu])?;
    instance.set_buffer_kb(8192)?;
    for event in ["irq_handler_entry", "irq_handler_exit"] {
        if !instance.enable_event("irq", event)? {
            return Err(anyhow!("this kernel has no irq:{event} event"));
        }
        instance.set_filter("irq", event, &filter)?;
    }
    if !instance.enable_event("sched", "sched_switch")? {
        return Err(anyhow!("this kernel has no sched:sched_switch event"));
    }
    instance.set_tracing_on(true)?;
    let mut tweaks = Tweaks::new(Path::new(JOURNAL_DIR));
    let at = Placement {
        length: Some(MEASURE_RUN),
        ..at.clone()
    };
    let ran = s
        .start(p, &at, &mut tweaks, Stop::new(interrupted.clone()))
        .map_err(|e| anyhow!("{e}"))
        .and_then(|load| match load {
            Some(l) => l.wait().map_err(|e| anyhow!("the load failed: {e}")),
            None => Ok(Vec::new()),
        });
    let restored = tweaks.restore();
    instance.set_tracing_on(false)?;
    let text = instance.read("trace")?;
    instance.remove()?;
    if let Some(first) = restored.first() {
        return Err(anyhow!("{first}"));
    }
    ran?;
    if interrupted.load(Ordering::Relaxed) {
        return Err(anyhow!("interrupted"));
    }
    std::fs::write(keep, text + "\n")
        .with_context(|| format!("cannot write {}", keep.display()))?;
    let mut events = Events::default();
    input::read(keep, &mut events)
        .with_context(|| format!("cannot read the interrupts' trace {}", keep.display()))?;
    Ok(bursts_of(&events.0, at.cpu, &numbers))
}

/// Every event, typed.
#[derive(Default)]
struct Events(Vec<Event>);

impl Sink for Events {
    type Error = rtwhy_decode::Error;
    fn event(&mut self, item: Item<'_>) -> std::result::Result<bool, Self::Error> {
        self.0.push(item.into_event());
        Ok(true)
    }
}
