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
    while !stop.load(Ordering::Relaxed) {
        let mut batch = Vec::new();
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
        if !batch.is_empty() {
            batch.sort_by_key(|e| e.ts);
            if tx.send(batch).is_err() {
                return;
            }
        }
        std::thread::sleep(WATCH_PERIOD);
    }
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
