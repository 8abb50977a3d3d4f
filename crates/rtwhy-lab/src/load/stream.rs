//! A TCP stream received through a network card: another machine sends, this one reads.
//!
//! One thread (`lab-stream`), SCHED_OTHER on `cpu`, connects to `from` (a server that
//! sends continuously, such as `scripts/stream-source.py` or `nc -lk PORT < /dev/zero`
//! on the far side) and reads everything it gets for the load's length. The sender
//! runs at its own machine's speed, so segments arrive in bursts faster than this
//! machine takes them: each burst is a receive interrupt and a long NET_RX run wherever
//! that interrupt is routed (on PREEMPT_RT, in the interrupt's thread `irq/N-name`).
//! Datagrams sent from here ([`super::datagrams`]) cannot do that where sending costs
//! as much as receiving (a TCG guest): every reply then finds the ring nearly empty.

use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use rtwhy_sys as sys;

use super::{mark, pin, Load, Stop, MAX_LOAD};
use crate::{LabError, Result};

/// What the reader does.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    /// CPU of the reading thread (not the victim's).
    pub cpu: u32,
    /// The server that sends.
    pub from: SocketAddr,
    /// Wait before reading (the connection is made at once; until then the sender only
    /// fills the receive window, then waits).
    pub delay: Duration,
    /// How long to read.
    pub length: Duration,
}

/// Receive buffer asked for.
pub const RECEIVE_BUFFER: usize = 8 << 20;

/// How long a connection may take to be accepted.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects (at once, so a server that is not there is an error before the victim
/// starts) and starts the reader.
pub fn start(cfg: Stream, stop: Stop) -> Result<Load> {
    if cfg.length.is_zero() || cfg.length > MAX_LOAD {
        return Err(LabError::Refused(format!(
            "stream: at most {} s",
            MAX_LOAD.as_secs()
        )));
    }
    let from = cfg.from;
    let socket = connect(from).map_err(|e| {
        LabError::Load(format!(
            "stream: cannot connect to {from}: {e}; start a server there that sends continuously (scripts/stream-source.py --port PORT, or nc -lk PORT < /dev/zero)"
        ))
    })?;
    // A read returns at least every 100 ms, so a stop or the end is seen in time.
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| LabError::Load(format!("stream: {e}")))?;
    let start = sys::monotonic_ns() + cfg.delay.as_nanos() as u64;
    let end = start + cfg.length.as_nanos() as u64;
    let mut load = Load::new(stop.clone(), start..end);
    load.spawn("lab-stream", move || {
        pin(cfg.cpu, "stream")?;
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 1 << 20];
        // Not before the load's stretch: receive work outside it would be judged as the
        // machine's own latency.
        if !stop.sleep_until(start) {
            return Ok("lab-stream: stopped before it started".into());
        }
        let mut received = 0u64;
        while sys::monotonic_ns() < end && !stop.requested() {
            // MSG_TRUNC: the data is dropped in the kernel, not copied out, so the reader
            // costs little and the window reopens at once.
            match socket.recv_with_flags(&mut buf, libc::MSG_TRUNC) {
                Ok(0) => {
                    return Err(LabError::Load(format!(
                        "stream: {from} closed the connection after {received} bytes"
                    )))
                }
                Ok(n) => received += n as u64,
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(LabError::Load(format!("stream: reading from {from}: {e}"))),
            }
        }
        let secs = cfg.length.as_secs_f64().max(1e-3);
        Ok(format!(
            "lab-stream: {received} bytes from {from} ({:.1} MB/s)",
            received as f64 / secs / 1e6
        ))
    })?;
    mark(&format!(
        "stream: one reader on CPU {}, a TCP stream from {from}, for {} ms\n",
        cfg.cpu,
        cfg.length.as_millis()
    ));
    Ok(load)
}

/// A connection whose receive buffer is as large as the system allows (a wide window:
/// the sender may put more in flight).
fn connect(from: SocketAddr) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(from), Type::STREAM, Some(Protocol::TCP))?;
    // Capped by net.core.rmem_max; the request is only a wish.
    let _ = socket.set_recv_buffer_size(RECEIVE_BUFFER);
    socket.connect_timeout(&from.into(), CONNECT_TIMEOUT)?;
    Ok(socket)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    fn cfg(from: SocketAddr) -> Stream {
        Stream {
            cpu: 0,
            from,
            delay: Duration::ZERO,
            length: Duration::from_millis(300),
        }
    }

    #[test]
    fn reads_what_a_server_sends_for_its_length() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let from = server.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let (mut c, _) = server.accept().unwrap();
            let chunk = [7u8; 4096];
            let mut sent = 0u64;
            while c.write_all(&chunk).is_ok() {
                sent += chunk.len() as u64;
            }
            sent
        });
        let load = start(cfg(from), Stop::default()).unwrap();
        let lines = load.wait().unwrap();
        assert!(lines[0].starts_with("lab-stream: "), "{lines:?}");
        let received: u64 = lines[0]["lab-stream: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(received > 0, "{lines:?}");
        // The reader closed its end: the sender's writes fail and it stops.
        assert!(sender.join().unwrap() >= received);
    }

    #[test]
    fn no_server_is_one_clear_error_before_any_thread() {
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        let from = free.local_addr().unwrap();
        drop(free);
        let e = start(cfg(from), Stop::default()).unwrap_err().to_string();
        assert!(e.contains(&format!("cannot connect to {from}")), "{e}");
        assert!(e.contains("stream-source.py"), "{e}");
    }

    #[test]
    fn a_server_that_closes_is_an_error() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let from = server.local_addr().unwrap();
        let closer = std::thread::spawn(move || drop(server.accept().unwrap()));
        let load = start(cfg(from), Stop::default()).unwrap();
        closer.join().unwrap();
        let e = load.wait().unwrap_err().to_string();
        assert!(e.contains("closed the connection"), "{e}");
    }
}
