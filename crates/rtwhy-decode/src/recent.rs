//! The recent past of every CPU as lines: records (or text lines) kept for a while so a
//! decisive event found after the fact (a spike is diagnosed when the victim finally
//! runs) prints exactly as `trace-cmd report` printed it at its place in the trace.
//!
//! Memory is bounded like the analyzer's history: by time and by count per CPU.

use std::collections::VecDeque;

use crate::input::{BufferNames, Header, Item, Raw};
use crate::print::Printer;
use crate::record::Record;

/// Most CPUs kept apart; records of higher CPUs share the last queue.
const MAX_CPUS: usize = 4096;

/// One kept record or line.
#[derive(Debug, Clone, Copy)]
struct Kept {
    seq: u64,
    ts: u64,
    /// Where its bytes start, counted from the first byte ever kept on this CPU.
    at: u64,
    len: u32,
    /// The record's buffer, by index into the buffer names.
    buffer: u16,
}

#[derive(Debug, Default)]
struct CpuQueue {
    kept: VecDeque<Kept>,
    /// The kept bytes from `bytes[start]` on; what lies before `start` is dropped and is
    /// cut off once it outweighs the rest (a copy amortised over the records kept since).
    bytes: Vec<u8>,
    start: usize,
    /// The position of `bytes[start]`.
    base: u64,
}

impl CpuQueue {
    /// The kept bytes.
    fn live(&self) -> &[u8] {
        self.bytes.get(self.start..).unwrap_or_default()
    }

    fn drop_front(&mut self, n: usize) {
        let n = n.min(self.bytes.len() - self.start.min(self.bytes.len()));
        self.start += n;
        self.base += n as u64;
        if self.start >= 64 << 10 && self.start * 2 >= self.bytes.len() {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
    }
}

/// Records and lines of the last `horizon` per CPU, printable as their tool printed them.
pub struct RecentLines {
    printer: Option<Printer>,
    cpus: Vec<CpuQueue>,
    buffers: BufferNames,
    horizon: u64,
    max_per_cpu: usize,
    seq: u64,
    scratch: Vec<u8>,
}

impl RecentLines {
    /// Keeps what passed in the last `horizon` (trace clock units), at most
    /// `max_per_cpu` records per CPU, of the file `header` describes.
    pub fn new(header: &Header<'_>, horizon: u64, max_per_cpu: usize) -> RecentLines {
        RecentLines {
            printer: header.meta.clone().map(Printer::new),
            cpus: Vec::new(),
            buffers: BufferNames::default(),
            horizon,
            max_per_cpu: max_per_cpu.max(1024),
            seq: 0,
            scratch: Vec::new(),
        }
    }

    /// Keeps `item` (call for every item, in order).
    pub fn keep(&mut self, item: &Item<'_>) {
        self.keep_raw(item.ts, item.cpu, &item.raw);
    }

    /// Keeps the source of an item at `ts` on `cpu` (call for every item, in order).
    pub fn keep_raw(&mut self, ts: u64, cpu: u32, raw: &Raw<'_>) {
        let seq = self.seq;
        self.seq += 1;
        let (bytes, buffer): (&[u8], &str) = match raw {
            Raw::Record { record, buffer } => {
                if let Some(p) = self.printer.as_mut() {
                    p.learn(record, seq);
                }
                (record.data, buffer)
            }
            Raw::Line(line) => (line.as_bytes(), ""),
        };
        let (buffer, _) = self.buffers.number(buffer);
        let cpu = (cpu as usize).min(MAX_CPUS - 1);
        if cpu >= self.cpus.len() {
            self.cpus.resize_with(cpu + 1, CpuQueue::default);
        }
        let Some(q) = self.cpus.get_mut(cpu) else {
            return;
        };
        let oldest = ts.saturating_sub(self.horizon);
        while let Some(front) = q.kept.front() {
            if front.ts >= oldest && q.kept.len() < self.max_per_cpu {
                break;
            }
            let drop = front.len as usize;
            q.kept.pop_front();
            q.drop_front(drop);
        }
        let len = bytes.len().min(u32::MAX as usize);
        let at = q.base + q.live().len() as u64;
        // Both grow by a quarter, not twice over: their steady size is the event rate
        // times the horizon, and doubling can leave up to as much again unused.
        if q.bytes.capacity() - q.bytes.len() < len {
            q.bytes
                .reserve_exact((q.bytes.len() / 4).max(len).max(4096));
        }
        if q.kept.len() == q.kept.capacity() {
            q.kept.reserve_exact((q.kept.len() / 4).max(64));
        }
        q.bytes
            .extend_from_slice(bytes.get(..len).unwrap_or_default());
        q.kept.push_back(Kept {
            seq,
            ts,
            at,
            len: len as u32,
            buffer: u16::try_from(buffer).unwrap_or(u16::MAX),
        });
    }

    /// The line of the kept event at `ts` on `cpu` named `event` (`sched_switch`), as
    /// `trace-cmd report` printed it (for text, the file's own line); `None` when it is
    /// no longer kept. Where several such events share the timestamp (a coarse trace
    /// clock: a TCG guest's, or a board's jiffies-based one), the one whose line is most
    /// like `like` (the analyzer's own rendering of the event it means; the first of
    /// equals).
    pub fn line(&mut self, ts: u64, cpu: u32, event: &str, like: &str) -> Option<String> {
        let lines: Vec<String> = self
            .kept_at(ts, cpu)
            .filter_map(|i| self.render(cpu, i, event))
            .collect();
        most_like(lines, like)
    }

    /// The line of the last kept event at `ts` on `cpu` named `event`: the one just
    /// kept, when it is that.
    pub fn newest_line(&mut self, ts: u64, cpu: u32, event: &str) -> Option<String> {
        self.newest_at(ts, cpu)
            .rev()
            .find_map(|i| self.render(cpu, i, event))
    }

    /// [`RecentLines::kept_at`] for the newest events: found from the back of the queue,
    /// where the event just kept is, instead of by a search over all of it.
    fn newest_at(&self, ts: u64, cpu: u32) -> std::ops::Range<usize> {
        let Some(q) = self.cpus.get((cpu as usize).min(MAX_CPUS - 1)) else {
            return 0..0;
        };
        let newer = q.kept.iter().rev().take_while(|k| k.ts > ts).count();
        let end = q.kept.len() - newer;
        let at = q.kept.range(..end).rev().take_while(|k| k.ts == ts).count();
        end - at..end
    }

    /// Where the kept events at `ts` on `cpu` lie in its queue.
    fn kept_at(&self, ts: u64, cpu: u32) -> std::ops::Range<usize> {
        let Some(q) = self.cpus.get((cpu as usize).min(MAX_CPUS - 1)) else {
            return 0..0;
        };
        let lo = q.kept.partition_point(|k| k.ts < ts);
        lo..lo + q.kept.range(lo..).take_while(|k| k.ts == ts).count()
    }

    /// The line of the `i`th kept event on `cpu`, when it is named `event`.
    fn render(&mut self, cpu: u32, i: usize, event: &str) -> Option<String> {
        let q = self.cpus.get((cpu as usize).min(MAX_CPUS - 1))?;
        let k = *q.kept.get(i)?;
        let start = usize::try_from(k.at.checked_sub(q.base)?).ok()?;
        let end = start.checked_add(k.len as usize)?;
        self.scratch.clear();
        let live = q.live();
        self.scratch
            .extend_from_slice(live.get(start..end.min(live.len())).unwrap_or_default());
        let mut out = String::new();
        match self.printer.as_mut() {
            Some(p) => {
                let meta = std::sync::Arc::clone(p.meta());
                let format = meta
                    .endian
                    .u16(&self.scratch, 0)
                    .and_then(|id| meta.format(u32::from(id)))
                    .filter(|f| f.name == event)?;
                // The evidence is the event's own line, without the dropped-events
                // notice trace-cmd prints before it.
                let rec = Record {
                    ts: k.ts,
                    cpu,
                    data: &self.scratch,
                    format: Some(format),
                    endian: meta.endian,
                    missed_before: None,
                    following: &[],
                };
                p.set_instance(self.buffers.name(usize::from(k.buffer)));
                p.write_report_as_of(&rec, k.seq, &mut out);
                // A stack's frames follow on lines of their own; the event's line is
                // the first.
                if let Some(nl) = out.find('\n') {
                    out.truncate(nl);
                }
            }
            None => {
                let line = String::from_utf8_lossy(&self.scratch);
                if event_name(&line) != Some(event) {
                    return None;
                }
                out.push_str(&line);
            }
        }
        Some(out)
    }
}

/// Of `lines` (of one event name at one timestamp and CPU), the one most like `like`, a
/// rendering of the event meant: the most words in common (its pids, comms and fields;
/// the others share only the columns), the first of equals. A single line is the one,
/// without comparing words.
pub fn most_like<S: AsRef<str>>(lines: impl IntoIterator<Item = S>, like: &str) -> Option<S> {
    let mut lines = lines.into_iter();
    let first = lines.next()?;
    let Some(second) = lines.next() else {
        return Some(first);
    };
    let words: Vec<&str> = like.split_whitespace().collect();
    let mut best: Option<(usize, S)> = None;
    for line in [first, second].into_iter().chain(lines) {
        let score = line
            .as_ref()
            .split_whitespace()
            .filter(|w| words.contains(w))
            .count();
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, line));
        }
    }
    best.map(|(_, line)| line)
}

/// The event name of a line shaped like trace-cmd's (`comm-pid [cpu] ts: name: ...`, also
/// with the kernel's flags column before the timestamp).
pub fn event_name(line: &str) -> Option<&str> {
    let after_cpu = line.get(find_pair(line, b"] ")? + 2..)?;
    let after_ts = after_cpu.get(find_pair(after_cpu, b": ")? + 2..)?;
    let name = after_ts.get(..memchr::memchr(b':', after_ts.as_bytes())?)?;
    Some(name.trim())
}

/// Where the two ASCII bytes `pair` first occur in `s`: `str::find` without the setup of
/// a substring searcher, which costs more than the search on a line.
fn find_pair(s: &str, pair: &[u8; 2]) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = memchr::memchr(pair[0], bytes.get(from..)?) {
        let at = from + i;
        if bytes.get(at + 1) == Some(&pair[1]) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_with_most_words_in_common_is_most_like_and_a_single_line_is_taken() {
        let lines = ["a-1 x y", "b-2 x z", "c-3 x z"];
        assert_eq!(most_like(lines, "q x z"), Some("b-2 x z"));
        assert_eq!(most_like(["a b"], "c d"), Some("a b"));
        assert_eq!(most_like(Vec::<&str>::new(), "c d"), None);
    }

    #[test]
    fn names_come_from_trace_cmd_and_kernel_lines() {
        assert_eq!(
            event_name(
                "          <idle>-0     [001]  4295.506724: hrtimer_expire_entry: hrtimer=0x1"
            ),
            Some("hrtimer_expire_entry")
        );
        assert_eq!(
            event_name("  cyclictest-1234  [002] d..2.   100.000001: sched_switch: prev_comm=a"),
            Some("sched_switch")
        );
        assert_eq!(event_name("no event here"), None);
        assert_eq!(event_name("a]-1 [000] 1.0:x: name: f"), Some("name"));
        assert_eq!(event_name("a-1 [000] 1.0:"), None);
    }

    /// Three wake-ups at one nanosecond on CPU 1, as a TCG guest's clock records them:
    /// the line asked for is the one like the analyzer's rendering, not the first.
    #[test]
    fn the_line_like_the_event_meant_among_several_at_one_timestamp() {
        let header = Header {
            path: std::path::Path::new("t.txt"),
            format: "text",
            facts: Default::default(),
            ts_in_nanos: true,
            trace_dat: None,
            meta: None,
        };
        let mut recent = RecentLines::new(&header, 1_000_000_000, 16);
        let lines = [
            "cyclictest-182 [001] 25.108127: sched_waking: comm=irq/14-ata_piix pid=150 prio=49 target_cpu=001",
            "cyclictest-182 [001] 25.108127: sched_waking: comm=irq/15-ata_piix pid=151 prio=49 target_cpu=001",
            "cyclictest-182 [001] 25.108127: irq_handler_exit: irq=15 ret=handled",
        ];
        for l in lines {
            recent.keep_raw(25_108_126_532, 1, &Raw::Line(l));
        }
        let like = "cyclictest-182 [001] 25.108126532: sched_waking: comm=irq/15-ata_piix pid=151 prio=49 target_cpu=001";
        let got = recent.line(25_108_126_532, 1, "sched_waking", like);
        assert_eq!(got.as_deref(), Some(lines[1]));
        assert_eq!(
            recent
                .line(25_108_126_532, 1, "sched_waking", "")
                .as_deref(),
            Some(lines[0]),
            "the first of equals"
        );
        assert_eq!(
            recent
                .newest_line(25_108_126_532, 1, "sched_waking")
                .as_deref(),
            Some(lines[1])
        );
        assert_eq!(recent.line(25_108_126_533, 1, "sched_waking", like), None);
    }
}
