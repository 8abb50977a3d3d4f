//! A live event stream from a tracefs instance: a thread drains every CPU's
//! `trace_pipe_raw` every few milliseconds and sends the decoded events on. It carries
//! the applications' markers (the instance copies the top-level `trace_marker`) and, for
//! the tracefs-only detector, the scheduling events.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rtwhy_decode::meta::TraceMeta;
use rtwhy_decode::page::PageReader;
use rtwhy_decode::record::Record;
use rtwhy_decode::typed::EventDecoder;
use rtwhy_model::Event;

use crate::capture::RawPipe;
use crate::error::{RecordError, Result};

/// How often the pipes are drained.
pub const WATCH_PERIOD: Duration = Duration::from_millis(2);
/// Batches waiting for the session before the reader blocks (and the kernel starts
/// dropping events, which the instance counts).
const QUEUE: usize = 256;

/// The reader thread and the receiving end of its batches.
#[derive(Debug)]
pub struct Watch {
    rx: Receiver<Vec<Event>>,
    stop: Arc<AtomicBool>,
    decode_errors: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts reading the pipes (`per_cpu/cpuN/trace_pipe_raw`, one per CPU index).
    pub fn start(pipes: Vec<PathBuf>, meta: Arc<TraceMeta>) -> Result<Watch> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let decode_errors = Arc::new(AtomicU64::new(0));
        let (s, d) = (stop.clone(), decode_errors.clone());
        let thread = std::thread::Builder::new()
            .name("rtwhy-watch".into())
            .spawn(move || read_loop(&pipes, &meta, &tx, &s, &d))
            .map_err(|e| RecordError::Other(format!("cannot start the watch thread: {e}")))?;
        Ok(Watch {
            rx,
            stop,
            decode_errors,
            thread: Some(thread),
        })
    }

    /// The next batch, waiting at most `timeout`; empty when none came.
    pub fn next(&self, timeout: Duration) -> Vec<Event> {
        let mut out = self.rx.recv_timeout(timeout).unwrap_or_default();
        while let Ok(more) = self.rx.try_recv() {
            out.extend(more);
        }
        out
    }

    /// Pages that could not be decoded (a format the decoder refused).
    pub fn decode_errors(&self) -> u64 {
        self.decode_errors.load(Ordering::Relaxed)
    }

    /// Stops and joins the reader (closing its files, so the instance can be removed).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblock a reader waiting on a full queue.
        while self.rx.try_recv().is_ok() {}
        if let Some(t) = self.thread.take() {
            while !t.is_finished() {
                while self.rx.try_recv().is_ok() {}
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = t.join();
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_loop(
    pipes: &[PathBuf],
    meta: &TraceMeta,
    tx: &SyncSender<Vec<Event>>,
    stop: &AtomicBool,
    errors: &AtomicU64,
) {
    let mut decoder = EventDecoder::new();
    let page_size = meta.page_size;
    // Opened once and kept (a pipe that cannot be opened yet is tried again next round);
    // closed when the thread ends, so the instance can be removed.
    let mut open: Vec<Option<RawPipe>> = pipes.iter().map(|_| None).collect();
    let mut held = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        // The instance's clock is CLOCK_MONOTONIC (`mono`): every event stamped up to
        // now is in its CPU's pipe when that pipe is drained below.
        let horizon = crate::sys::monotonic_ns();
        let mut batch = std::mem::take(&mut held);
        for (cpu, (path, pipe)) in pipes.iter().zip(open.iter_mut()).enumerate() {
            if pipe.is_none() {
                *pipe = RawPipe::open(path).ok();
            }
            let Some(Ok(data)) = pipe.as_mut().map(|p| p.drain(page_size, 256 * page_size)) else {
                continue;
            };
            for page in data.chunks_exact(page_size) {
                if decode_page(page, cpu as u32, meta, &mut decoder, &mut batch).is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        held = hold_back(&mut batch, horizon);
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
        std::thread::sleep(WATCH_PERIOD);
    }
}

/// Sorts `batch` by time and takes out (returned, in order) the events stamped after
/// `horizon`, the time the pass that read them began. The CPUs' pipes are drained one
/// after the other, so an event on a CPU drained earlier in the pass than a later event
/// on another CPU may only come in the next pass: a wake-up on the CPU that took the
/// timer interrupt (a housekeeping CPU, for a thread on a nohz_full one) would come after
/// its switch-in on the thread's CPU. Events up to `horizon` are in this pass or earlier
/// ones on every CPU, so what goes on is in the order the kernel stamped it.
fn hold_back(batch: &mut Vec<Event>, horizon: u64) -> Vec<Event> {
    batch.sort_by_key(|e| e.ts);
    let keep = batch.partition_point(|e| e.ts.0 <= horizon);
    batch.split_off(keep)
}

/// Decodes the events of one raw page into `out`.
pub fn decode_page(
    page: &[u8],
    cpu: u32,
    meta: &TraceMeta,
    decoder: &mut EventDecoder,
    out: &mut Vec<Event>,
) -> std::result::Result<(), rtwhy_decode::page::PageError> {
    let mut r = PageReader::new(page, &meta.header_page, meta.endian)?;
    while let Some(ev) = r.next_event()? {
        let data = &page[ev.start..ev.end];
        let format = meta
            .endian
            .u16(data, 0)
            .and_then(|id| meta.format(u32::from(id)));
        let rec = Record {
            ts: ev.ts,
            cpu,
            data,
            format,
            endian: meta.endian,
            missed_before: None,
            following: &page[ev.end..],
        };
        out.push(decoder.decode(meta, &rec));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{EventKind, Nanos};

    fn ev(ts: u64, cpu: u32) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid: 7,
            kind: EventKind::Print {
                text: format!("{cpu}@{ts}"),
            },
        }
    }

    // Regression test: in the PREEMPT_RT guest the tracefs detector counted 1990 of
    // cyclictest's 2000 wake-ups, one of them 8 ms later than cyclictest's worst: the
    // thread's timer runs on the housekeeping CPU 0, and a wake-up there stamped after
    // CPU 0 was drained came a pass after the switch-in on CPU 1.
    #[test]
    fn an_event_after_the_pass_began_waits_for_the_next_pass() {
        // Pass 1 began at 100: CPU 0 drained (its event at 90), then CPU 1 (at 105).
        let mut batch = vec![ev(105, 1), ev(90, 0)];
        let held = hold_back(&mut batch, 100);
        assert_eq!(batch, [ev(90, 0)]);
        assert_eq!(held, [ev(105, 1)]);
        // Pass 2 began at 200 and found CPU 0's wake-up at 102.
        let mut batch = held;
        batch.push(ev(102, 0));
        let held = hold_back(&mut batch, 200);
        assert_eq!(batch, [ev(102, 0), ev(105, 1)]);
        assert!(held.is_empty());
    }
}
