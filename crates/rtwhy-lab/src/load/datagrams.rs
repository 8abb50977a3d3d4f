//! Datagrams through a network card, whose replies come back on its receive queue.
//!
//! `senders` threads (`lab-datagram`), SCHED_OTHER on `cpu`, each send a 64-byte UDP
//! datagram to the discard port (9) of `to` every `every` (the default route's gateway:
//! each one answered, by the gateway or by the host of a virtual machine's user-mode
//! network, with an ICMP port-unreachable). Each reply is a receive interrupt of the
//! card and NET_RX work wherever that interrupt is routed; on PREEMPT_RT both run in the
//! interrupt's thread (`irq/N-name`). The traffic stays small: 64-byte datagrams, at
//! most one per `every` per sender, for at most the load's length.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use rtwhy_sys as sys;

use super::{mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// What the senders do.
#[derive(Debug, Clone, Copy)]
pub struct Datagrams {
    /// CPU of the sending threads (not the victim's).
    pub cpu: u32,
    /// Where to (the default route's gateway).
    pub to: Ipv4Addr,
    /// Sending threads (1-8).
    pub senders: u32,
    /// Time between one sender's datagrams (at least 10 us).
    pub every: Duration,
    /// Wait before sending.
    pub delay: Duration,
    /// How long to send.
    pub length: Duration,
}

/// Starts the senders.
pub fn start(cfg: Datagrams, stop: Stop) -> Result<Load> {
    if !(1..=8).contains(&cfg.senders)
        || cfg.every < Duration::from_micros(10)
        || cfg.length.is_zero()
        || cfg.length > MAX_LOAD
    {
        return Err(LabError::Refused(format!(
            "datagrams: 1-8 senders, at least 10 us apart, at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    let to = SocketAddrV4::new(cfg.to, 9);
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let every = cfg.every.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    for _ in 0..cfg.senders {
        let stop = stop.clone();
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
            .map_err(|e| LabError::Load(format!("datagrams: bind: {e}")))?;
        load.spawn("lab-datagram", move || {
            pin(cfg.cpu, "datagrams")?;
            if !stop.sleep_until(start) {
                return Ok("lab-datagram: stopped before it started".into());
            }
            let payload = [0x5au8; 64];
            let (mut sent, mut refused) = (0u64, 0u64);
            let mut next = start;
            while next < end && !stop.requested() {
                // An ICMP error from an earlier datagram may surface as this send's
                // error (ECONNREFUSED and the like): counted, not fatal.
                match socket.send_to(&payload, to) {
                    Ok(_) => sent += 1,
                    Err(_) => refused += 1,
                }
                next += every;
                sys::sleep_until(next);
            }
            Ok(format!(
                "lab-datagram: {sent} datagrams to {to} ({refused} sends refused)"
            ))
        })?;
    }
    mark(&format!(
        "datagrams: {} senders on CPU {}, one 64-byte UDP datagram each every {} us to {to}, for {} ms\n",
        cfg.senders,
        cfg.cpu,
        cfg.every.as_micros(),
        cfg.length.as_millis()
    ));
    Ok(load)
}
