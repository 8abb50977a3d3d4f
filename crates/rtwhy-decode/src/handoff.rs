//! Work handed from the reading thread to one other thread, in batches, in order.
//!
//! Reading a trace (pages, merging the CPUs by time) costs about as much as what a
//! command does with each record (analysing it, printing it); on a second core the two
//! overlap. The other thread sees every batch in the order it was sent, so it works as if
//! it ran inline; emptied batches come back to be filled again.

use std::io;
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::input::BufferNames;
use crate::{Record, TraceMeta};

/// Batches waiting for the other thread at most; the reader blocks beyond that, which
/// bounds memory whatever the trace's size.
const IN_FLIGHT: usize = 4;

/// The thread that takes batches of type `B` and the state `W` it works on.
pub struct Handoff<B, W> {
    full: SyncSender<B>,
    empty: Receiver<B>,
    thread: JoinHandle<W>,
    /// What the thread does, for the error when it is gone ("the analysis thread").
    what: &'static str,
}

impl<B: Default + Send + 'static, W: Send + 'static> Handoff<B, W> {
    /// Starts a thread named `name` that runs `take` over `worker` for every batch, until
    /// the reader finishes or `take` says to stop (false: the worker keeps why).
    pub fn spawn(
        name: &str,
        what: &'static str,
        mut worker: W,
        mut take: impl FnMut(&mut W, &mut B) -> bool + Send + 'static,
    ) -> io::Result<Self> {
        let (full, work) = sync_channel::<B>(IN_FLIGHT);
        let (done, empty) = channel::<B>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for mut batch in work {
                    if !take(&mut worker, &mut batch) {
                        break;
                    }
                    // The reader may have finished; then the batch is not needed back.
                    let _ = done.send(batch);
                }
                worker
            })?;
        Ok(Handoff {
            full,
            empty,
            thread,
            what,
        })
    }

    /// Hands `batch` over and leaves an empty one in its place. False when the thread
    /// has stopped taking batches (see [`Handoff::finish`] for why).
    pub fn send(&self, batch: &mut B) -> bool {
        let next = self.empty.try_recv().unwrap_or_default();
        let full = std::mem::replace(batch, next);
        self.full.send(full).is_ok()
    }

    /// Sends `last` and waits for the thread to work through everything it was sent.
    pub fn finish(self, last: B) -> io::Result<W> {
        // A thread that stopped early has its reason in the worker it returns.
        let _ = self.full.send(last);
        drop(self.full);
        match self.thread.join() {
            Ok(worker) => Ok(worker),
            Err(_) => Err(io::Error::other(format!("{} failed", self.what))),
        }
    }
}

/// trace.dat records copied out of the reader's pages, back to back, to be rebuilt as
/// [`Record`]s on the other thread.
#[derive(Default)]
pub struct Records {
    bytes: Vec<u8>,
    /// Buffer names first met in this batch, in the order they were numbered.
    new_buffers: Vec<String>,
}

/// Where a copied record's bytes are in [`Records`], and what else its line needs.
#[derive(Clone, Copy)]
pub struct Copied {
    start: usize,
    len: u32,
    /// Bytes kept from the page after the record (see [`Record::following`]).
    following: u32,
    /// The record's buffer, numbered by [`RecordCopier`].
    pub buffer: usize,
    /// The record's timestamp.
    pub ts: u64,
    /// The CPU whose buffer it came from.
    pub cpu: u32,
    /// Events its CPU dropped before it, where the page says.
    pub missed_before: Option<u64>,
}

/// Copies records into [`Records`] on the reading thread, numbering their buffers.
#[derive(Default)]
pub struct RecordCopier {
    buffers: BufferNames,
    /// Per event id, how far into a record its fixed-size fields reach: the printer reads
    /// a fixed array whole even past a short record, and only that far.
    fixed_end: Vec<Option<u32>>,
}

impl RecordCopier {
    /// Copies `record` of buffer `buffer` into `into`; with `following`, also the page
    /// bytes after it that printing its fixed-size fields can read.
    pub fn copy(
        &mut self,
        into: &mut Records,
        record: &Record<'_>,
        buffer: &str,
        following: bool,
    ) -> Copied {
        let (number, new) = self.buffers.number(buffer);
        if new {
            into.new_buffers.push(buffer.to_owned());
        }
        let tail = if following {
            let reach = self.reach(record) as usize;
            let want = reach.saturating_sub(record.data.len());
            &record.following[..want.min(record.following.len())]
        } else {
            &[]
        };
        let start = into.bytes.len();
        into.bytes.extend_from_slice(record.data);
        into.bytes.extend_from_slice(tail);
        Copied {
            start,
            len: record.data.len() as u32,
            following: tail.len() as u32,
            buffer: number,
            ts: record.ts,
            cpu: record.cpu,
            missed_before: record.missed_before,
        }
    }

    fn reach(&mut self, record: &Record<'_>) -> u32 {
        let (Some(id), Some(format)) = (record.event_id(), record.format) else {
            return 0;
        };
        let id = id as usize;
        if self.fixed_end.len() <= id {
            self.fixed_end.resize(id + 1, None);
        }
        *self.fixed_end[id].get_or_insert_with(|| {
            format
                .fields
                .iter()
                .filter(|f| !f.flags.dynamic)
                .map(|f| f.offset.saturating_add(f.size))
                .max()
                .unwrap_or(0)
                .min(u32::MAX as usize) as u32
        })
    }
}

/// The other thread's side: the buffer names and the records rebuilt.
#[derive(Default)]
pub struct RecordNames {
    buffers: Vec<String>,
}

impl RecordNames {
    /// Takes the buffer names `batch` met first; call once per batch before [`Self::get`].
    pub fn learn(&mut self, batch: &mut Records) {
        self.buffers.append(&mut batch.new_buffers);
    }

    /// The record `c` of `batch`, and its buffer's name.
    pub fn get<'a>(
        &'a self,
        batch: &'a Records,
        c: &Copied,
        meta: &'a TraceMeta,
    ) -> (Record<'a>, &'a str) {
        let end = c.start + c.len as usize;
        let data = batch.bytes.get(c.start..end).unwrap_or_default();
        let following = batch
            .bytes
            .get(end..end + c.following as usize)
            .unwrap_or_default();
        let record = Record {
            ts: c.ts,
            cpu: c.cpu,
            data,
            format: meta
                .endian
                .u16(data, 0)
                .and_then(|id| meta.format(u32::from(id))),
            endian: meta.endian,
            missed_before: c.missed_before,
            following,
        };
        (
            record,
            self.buffers.get(c.buffer).map_or("", String::as_str),
        )
    }
}

impl Records {
    /// Empties the batch for reuse, keeping its allocation.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.new_buffers.clear();
    }
}
