//! A loopback UDP flood whose receive processing runs in another CPU's NET_RX softirq.
//!
//! `senders` threads (`lab-flood-tx`) send 64-byte datagrams as fast as they can to
//! 127.255.255.255, where `fanout` sockets bound to the same port each receive a copy
//! (so the kernel's receive work per datagram grows with `fanout`), and one thread
//! (`lab-flood-rx`) drains them. All are SCHED_OTHER on `cpu`. Where the receive work
//! runs is the kernel's choice: with the loopback device's RPS mask steering to the
//! victim's CPU, that CPU's NET_RX softirq (or its ksoftirqd) does it.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use rtwhy_sys as sys;

use super::{mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// What the flood does.
#[derive(Debug, Clone, Copy)]
pub struct Flood {
    /// CPU of the sending and receiving threads (not the victim's).
    pub cpu: u32,
    /// Sending threads (1-8).
    pub senders: u32,
    /// Receiving sockets (1-64).
    pub fanout: u32,
    /// Wait before sending.
    pub delay: Duration,
    /// How long to send.
    pub length: Duration,
}

fn net(what: &str, e: std::io::Error) -> LabError {
    LabError::Load(format!("flood: {what}: {e}"))
}

/// Starts the flood.
pub fn start(cfg: Flood, stop: Stop) -> Result<Load> {
    if !(1..=8).contains(&cfg.senders)
        || !(1..=64).contains(&cfg.fanout)
        || cfg.length.is_zero()
        || cfg.length > MAX_LOAD
    {
        return Err(LabError::Refused(format!(
            "flood: 1-8 senders, 1-64 receiving sockets, at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    let mut receivers: Vec<UdpSocket> = Vec::new();
    let mut port = 0u16;
    for _ in 0..cfg.fanout {
        let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))
            .map_err(|e| net("socket", e))?;
        s.set_reuse_address(true)
            .map_err(|e| net("SO_REUSEADDR", e))?;
        s.bind(&SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port).into())
            .map_err(|e| net("bind", e))?;
        s.set_nonblocking(true).map_err(|e| net("O_NONBLOCK", e))?;
        let u: UdpSocket = s.into();
        if port == 0 {
            port = u.local_addr().map_err(|e| net("getsockname", e))?.port();
        }
        receivers.push(u);
    }
    let dst = SocketAddrV4::new(Ipv4Addr::new(127, 255, 255, 255), port);
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    for _ in 0..cfg.senders {
        let stop = stop.clone();
        load.spawn("lab-flood-tx", move || {
            pin(cfg.cpu, "flood")?;
            let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| net("bind", e))?;
            tx.set_broadcast(true).map_err(|e| net("SO_BROADCAST", e))?;
            if !stop.sleep_until(start) {
                return Ok("lab-flood-tx: stopped before it started".into());
            }
            let payload = [b'x'; 64];
            let mut sent = 0u64;
            while sys::monotonic_ns() < end && !stop.requested() {
                for _ in 0..64 {
                    // ENOBUFS under load is expected: the flood only needs volume.
                    if tx.send_to(&payload, dst).is_ok() {
                        sent += 1;
                    }
                }
            }
            Ok(format!("lab-flood-tx: {sent} datagrams to {dst}"))
        })?;
    }
    mark(&format!(
        "flood: {} UDP senders on CPU {} to {dst} ({} receiving sockets) for {} ms\n",
        cfg.senders,
        cfg.cpu,
        cfg.fanout,
        cfg.length.as_millis()
    ));
    load.spawn("lab-flood-rx", move || {
        pin(cfg.cpu, "flood")?;
        let mut buf = [0u8; 2048];
        let mut got = 0u64;
        while sys::monotonic_ns() < end && !stop.requested() {
            let mut round = 0u64;
            for s in &receivers {
                while s.recv(&mut buf).is_ok() {
                    round += 1;
                }
            }
            got += round;
            if round == 0 {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        mark("flood: done\n");
        Ok(format!(
            "lab-flood-rx: {got} datagrams received over {} sockets",
            receivers.len()
        ))
    })?;
    Ok(load)
}
