//! `softirq`: NET_RX work on the victim's CPU. Where receive packet steering may send
//! work there and the kernel runs it on interrupt exit, a loopback flood steered by RPS;
//! else (RPS refuses isolated CPUs; interrupts in threads run steered work in
//! `ksoftirqd`) the default route's network card: its receive interrupt moved to the
//! victim's CPU and a TCP stream from another machine read on another CPU
//! (`--stream-from`), or without one, datagrams sent from another CPU whose replies it
//! receives. On PREEMPT_RT the card's NET_RX then runs in its interrupt's thread, so the
//! victim runs below that thread. An isolated CPU is refused there: the thread of an
//! interrupt moved onto it is `irq_on_isolated_cpu`.
//!
//! The datagrams' replies come one per datagram: where sending costs as much as
//! receiving (a TCG guest), each finds the receive ring nearly empty and NET_RX runs stay
//! short (tens of microseconds). A sender on another machine fills the ring faster than
//! this one empties it: in the project's PREEMPT_RT guest, with a host-side stream, the
//! interrupt thread's NET_RX runs took 0.7 ms on average and up to 7 ms.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{below_thread_of, driving, route_to, setup, timer, Recipe};
use crate::{
    load, DeviceIrq, IrqDevice, LabError, Load, Placement, Platform, Result, Setup, Stop, Tweaks,
};

pub(crate) struct Softirq;

/// Packets one NET_RX run may take (`net.core.netdev_budget`): raised for a stream, so
/// that its time limit ends a run instead.
const NETDEV_BUDGET: &str = "proc/sys/net/core/netdev_budget";
/// How long one NET_RX run may last (`net.core.netdev_budget_usecs`).
const NETDEV_BUDGET_USECS: &str = "proc/sys/net/core/netdev_budget_usecs";
/// Largest receive buffer a socket may ask for (`net.core.rmem_max`).
const RMEM_MAX: &str = "proc/sys/net/core/rmem_max";
/// A stream's NET_RX run may last this many thresholds, within [`RUN_MIN`, `RUN_MAX`].
const RUN_THRESHOLDS: u32 = 4;
const RUN_MIN: Duration = Duration::from_millis(8);
const RUN_MAX: Duration = Duration::from_millis(50);

/// How the receive work gets to the victim's CPU.
enum Route {
    /// The loopback device's RPS mask.
    Rps,
    /// A network card's receive interrupt.
    Nic(DeviceIrq),
}

impl Recipe for Softirq {
    fn expected(&self) -> Cause {
        Cause::Softirq
    }

    fn induces(&self) -> &'static str {
        "UDP from another CPU, or a TCP stream from another machine; its receive work here (loopback steered by RPS, or a NIC's receive interrupt)"
    }

    fn setup(&self) -> Setup {
        setup(400, timer(1000), 5000, 20)
    }

    /// Through a NIC's interrupt, as for `irq_on_isolated_cpu`; RPS keeps the defaults.
    fn setup_for(&self, p: &Platform, cpu: u32, noise: Duration) -> Setup {
        driving(self.setup(), nic(p, cpu).as_ref(), noise)
    }

    fn victim_prio(&self, p: &Platform, cpu: u32) -> i32 {
        below_thread_of(nic(p, cpu).as_ref())
    }

    fn check(&self, p: &Platform, cpu: u32) -> std::result::Result<(), String> {
        route(p, cpu).map(|_| ())
    }

    fn start(
        &self,
        p: &Platform,
        at: &Placement,
        tweaks: &mut Tweaks,
        stop: Stop,
        delay: Duration,
        length: Duration,
    ) -> Result<Option<Load>> {
        match route(p, at.cpu).map_err(LabError::Refused)? {
            Route::Rps => {
                let mask = 1u64 << at.cpu.min(63);
                tweaks.set(&p.rps_mask_file(), &format!("{mask:x}"))?;
                load::flood::start(
                    load::flood::Flood {
                        cpu: at.housekeeping,
                        senders: 2,
                        fanout: 32,
                        delay,
                        length,
                    },
                    stop,
                )
            }
            Route::Nic(irq) => {
                let IrqDevice::NicRx { gateway, .. } = irq.device else {
                    return Err(LabError::Refused(format!(
                        "IRQ {} is not a receive queue",
                        irq.irq
                    )));
                };
                route_to(p, &irq, at.cpu, tweaks)?;
                if let Some(from) = at.stream_from {
                    // One NET_RX run may then last as long as segments keep coming, up to
                    // a few thresholds: the stream's spikes stand above the CPU's noise.
                    let threshold = self.setup_for(p, at.cpu, at.noise).threshold;
                    let run = (threshold * RUN_THRESHOLDS).clamp(RUN_MIN, RUN_MAX);
                    tweaks.set(&p.path(NETDEV_BUDGET), "100000")?;
                    tweaks.set(&p.path(NETDEV_BUDGET_USECS), &run.as_micros().to_string())?;
                    // A wide receive window: more of the stream in flight at once.
                    tweaks.set(&p.path(RMEM_MAX), &load::stream::RECEIVE_BUFFER.to_string())?;
                    return load::stream::start(
                        load::stream::Stream {
                            cpu: at.housekeeping,
                            from,
                            delay,
                            length,
                        },
                        stop,
                    )
                    .map(Some);
                }
                load::datagrams::start(
                    load::datagrams::Datagrams {
                        cpu: at.housekeeping,
                        to: gateway,
                        senders: 2,
                        every: Duration::from_micros(100),
                        delay,
                        length,
                    },
                    stop,
                )
            }
        }
        .map(Some)
    }
}

/// The network card's interrupt the scenario drives to `cpu`, when it uses one.
fn nic(p: &Platform, cpu: u32) -> Option<DeviceIrq> {
    match route(p, cpu) {
        Ok(Route::Nic(irq)) => Some(irq),
        _ => None,
    }
}

/// RPS where the kernel lets it steer to `cpu` (it refuses isolated CPUs) and runs the
/// steered work where it can hold a real-time victim off, else the default route's
/// network card whose receive interrupt can be moved there.
///
/// Where interrupts have threads (PREEMPT_RT, `threadirqs`), NET_RX raised by RPS's
/// inter-processor interrupt runs in `ksoftirqd`, a normal task that no real-time victim
/// waits for: only the card's interrupt thread, above the victim, holds it off with
/// NET_RX. That thread on an isolated CPU is the interrupt's affinity at fault, which
/// rtwhy names `irq_on_isolated_cpu` (the NET_RX as its mechanism): the scenario for that
/// is `irq_on_isolated_cpu`, so this one refuses an isolated CPU there.
fn route(p: &Platform, cpu: u32) -> std::result::Result<Route, String> {
    let rps = p.rps_mask_file();
    let isolated = p.facts.isolated.contains(cpu);
    let threaded = threads_interrupts(p);
    if threaded && isolated {
        return Err(format!(
            "CPU {cpu} is isolated and this kernel runs interrupts in threads: NET_RX reaches it only in the thread of a network card's interrupt moved there (RPS refuses isolated CPUs), which is irq_on_isolated_cpu; run softirq on a CPU that is not isolated"
        ));
    }
    if rps.exists() && !isolated && !threaded {
        return Ok(Route::Rps);
    }
    let why_not_rps = if isolated {
        format!("RPS refuses the isolated CPU {cpu}")
    } else if threaded {
        "RPS's NET_RX would run in ksoftirqd, below a real-time victim (interrupts run in threads here)".to_string()
    } else {
        format!(
            "{} is missing: no receive packet steering (CONFIG_RPS)",
            rps.display()
        )
    };
    let irqs = p.nic_rx_irqs();
    if let Some(i) = irqs.iter().find(|i| i.cpus.contains(cpu) || !i.managed) {
        return Ok(Route::Nic(i.clone()));
    }
    if irqs.is_empty() {
        Err(format!(
            "{why_not_rps}, and no network card with a default route whose receive interrupt could be moved to CPU {cpu}"
        ))
    } else {
        Err(format!(
            "{why_not_rps}, and the receive interrupts of the default route's card are managed by the kernel, none on CPU {cpu}"
        ))
    }
}

/// Device interrupts run in threads: a PREEMPT_RT kernel, or `threadirqs` on the command
/// line.
fn threads_interrupts(p: &Platform) -> bool {
    p.facts.realtime == Some(true)
        || p.facts.preempt_model() == Some("rt")
        || p.facts.cmdline_param("threadirqs").is_some()
}
