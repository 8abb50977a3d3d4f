//! `softirq`: NET_RX work steered to the victim's CPU by RPS from a loopback flood.

use std::time::Duration;

use rtwhy_model::Cause;

use super::{setup, timer, Recipe};
use crate::{load, Load, Placement, Platform, Result, Setup, Stop, Tweaks};

pub(crate) struct Softirq;

impl Recipe for Softirq {
    fn expected(&self) -> Cause {
        Cause::Softirq
    }

    fn induces(&self) -> &'static str {
        "loopback UDP flood from another CPU, receive work steered here by RPS"
    }

    fn setup(&self) -> Setup {
        setup(400, timer(1000), 5000, 20)
    }

    fn check(&self, p: &Platform, cpu: u32) -> std::result::Result<(), String> {
        let f = p.rps_mask_file();
        if f.exists() {
            Ok(())
        } else {
            Err(format!(
                "{} is missing: no receive packet steering (CONFIG_RPS) to send NET_RX work to CPU {cpu}",
                f.display()
            ))
        }
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
        .map(Some)
    }
}
