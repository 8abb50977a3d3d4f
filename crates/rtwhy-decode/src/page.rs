//! The ftrace ring-buffer page ("sub-buffer") format, as read from
//! `per_cpu/cpuN/trace_pipe_raw` and stored in trace.dat files.
//!
//! A page is a header (`u64` base timestamp, a kernel-`long` `commit` word whose low
//! 27 bits are the number of data bytes and whose bits 31 and 30 flag missed events and
//! a stored missed-event count) followed by events. Each event starts with a 32-bit
//! word holding `type_len` (5 bits) and `time_delta` (27 bits):
//! - 1..=28: a data event of `type_len * 4` bytes;
//! - 0: a data event whose length (including the length word) is in the next word;
//! - 29: padding (to the end of the page when `time_delta` is 0);
//! - 30: a time extend, adding `next_word << 27 | time_delta` to the clock;
//! - 31: an absolute timestamp `next_word << 27 | time_delta` (upper 5 bits kept from the page).

use crate::endian::Endian;
use crate::format::HeaderPage;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const COMMIT_MASK: u64 = (1 << 27) - 1;
const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;
const TS_SHIFT: u32 = 27;
const TS_MSB_MASK: u64 = 0xf8 << 56;

/// Something wrong inside one page; the page's remaining events are skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageError {
    /// Offset of the bad bytes within the page.
    pub offset: usize,
    /// What was wrong.
    pub what: &'static str,
}

/// The header of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Timestamp the page's deltas start from.
    pub base_ts: u64,
    /// Bytes of event data in the page.
    pub data_len: usize,
    /// The kernel dropped events before this page: `Some(n)` when it stored the count,
    /// `Some(0)` when it did not.
    pub missed: Option<u64>,
}

/// One data event in a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageEvent {
    /// Absolute timestamp (raw ring-buffer clock).
    pub ts: u64,
    /// Byte range of the payload within the page.
    pub start: usize,
    /// End of the payload (exclusive).
    pub end: usize,
}

/// Position within one page, kept apart from the page bytes so that a reader can own
/// its page buffer and its position side by side.
#[derive(Debug, Clone, Copy)]
pub struct PageCursor {
    pos: usize,
    end: usize,
    ts: u64,
    failed: bool,
    header: PageHeader,
}

impl PageCursor {
    /// Reads the header of `page`. Fails when the header itself is unreadable.
    pub fn new(page: &[u8], layout: &HeaderPage, endian: Endian) -> Result<PageCursor, PageError> {
        let base_ts = endian.u64(page, 0).ok_or(PageError {
            offset: 0,
            what: "page shorter than its header",
        })?;
        let commit = endian
            .read_uint(page, layout.commit_offset, layout.commit_size)
            .ok_or(PageError {
                offset: layout.commit_offset,
                what: "page shorter than its header",
            })?;
        let data_len = (commit & COMMIT_MASK) as usize;
        let start = layout.data_offset;
        let end = start
            .checked_add(data_len)
            .filter(|e| *e <= page.len())
            .ok_or(PageError {
                offset: layout.commit_offset,
                what: "page commit size larger than the page",
            })?;
        let missed = if commit & MISSED_EVENTS != 0 {
            if commit & MISSED_STORED != 0 {
                Some(endian.read_uint(page, end, layout.commit_size).unwrap_or(0))
            } else {
                Some(0)
            }
        } else {
            None
        };
        Ok(PageCursor {
            pos: start,
            end,
            ts: base_ts,
            failed: false,
            header: PageHeader {
                base_ts,
                data_len,
                missed,
            },
        })
    }

    /// The page's header.
    pub fn header(&self) -> PageHeader {
        self.header
    }

    /// The next data event of `page` (the same bytes given to [`PageCursor::new`]),
    /// `Ok(None)` at the end. After an error the cursor is exhausted.
    pub fn next_event(
        &mut self,
        page: &[u8],
        endian: Endian,
    ) -> Result<Option<PageEvent>, PageError> {
        if self.failed {
            return Ok(None);
        }
        let r = self.step(page, endian);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn word(&self, page: &[u8], endian: Endian, at: usize) -> Result<u32, PageError> {
        if at + 4 > self.end {
            return Err(PageError {
                offset: at,
                what: "event runs past the page's data",
            });
        }
        endian.u32(page, at).ok_or(PageError {
            offset: at,
            what: "event runs past the page",
        })
    }

    fn step(&mut self, page: &[u8], endian: Endian) -> Result<Option<PageEvent>, PageError> {
        loop {
            if self.pos + 4 > self.end {
                return Ok(None);
            }
            let at = self.pos;
            let head = self.word(page, endian, at)?;
            let (type_len, delta) = match endian {
                Endian::Little => (head & 0x1f, head >> 5),
                Endian::Big => (head >> 27, head & ((1 << 27) - 1)),
            };
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // The rest of the page is unused.
                        self.pos = self.end;
                        return Ok(None);
                    }
                    let len = self.word(page, endian, at + 4)? as usize;
                    self.pos = advance(at, len.checked_add(4), self.end)?;
                    self.ts = self.ts.wrapping_add(u64::from(delta));
                }
                TYPE_TIME_EXTEND => {
                    let ext = u64::from(self.word(page, endian, at + 4)?);
                    self.ts = self.ts.wrapping_add((ext << TS_SHIFT) | u64::from(delta));
                    self.pos = at + 8;
                }
                TYPE_TIME_STAMP => {
                    let ext = u64::from(self.word(page, endian, at + 4)?);
                    let abs = (ext << TS_SHIFT) | u64::from(delta);
                    self.ts = abs | (self.ts & TS_MSB_MASK);
                    self.pos = at + 8;
                }
                0 => {
                    let len = self.word(page, endian, at + 4)? as usize;
                    if len < 4 {
                        return Err(PageError {
                            offset: at,
                            what: "event length word smaller than itself",
                        });
                    }
                    let next = advance(at, len.checked_add(4), self.end)?;
                    self.ts = self.ts.wrapping_add(u64::from(delta));
                    self.pos = next;
                    return Ok(Some(PageEvent {
                        ts: self.ts,
                        start: at + 8,
                        end: next,
                    }));
                }
                n => {
                    let len = n as usize * 4;
                    let next = advance(at, Some(len + 4), self.end)?;
                    self.ts = self.ts.wrapping_add(u64::from(delta));
                    self.pos = next;
                    return Ok(Some(PageEvent {
                        ts: self.ts,
                        start: at + 4,
                        end: next,
                    }));
                }
            }
        }
    }
}

/// Iterates the data events of one page.
#[derive(Debug, Clone)]
pub struct PageReader<'a> {
    page: &'a [u8],
    endian: Endian,
    cursor: PageCursor,
}

impl<'a> PageReader<'a> {
    /// Starts reading `page`. Fails when the header itself is unreadable.
    pub fn new(
        page: &'a [u8],
        layout: &HeaderPage,
        endian: Endian,
    ) -> Result<PageReader<'a>, PageError> {
        Ok(PageReader {
            page,
            endian,
            cursor: PageCursor::new(page, layout, endian)?,
        })
    }

    /// The page's header.
    pub fn header(&self) -> PageHeader {
        self.cursor.header()
    }

    /// The page bytes.
    pub fn page(&self) -> &'a [u8] {
        self.page
    }

    /// The next data event, `Ok(None)` at the end of the page. After an error the
    /// iterator is exhausted.
    pub fn next_event(&mut self) -> Result<Option<PageEvent>, PageError> {
        self.cursor.next_event(self.page, self.endian)
    }
}

fn advance(at: usize, len: Option<usize>, end: usize) -> Result<usize, PageError> {
    at.checked_add(len.unwrap_or(usize::MAX))
        .filter(|n| *n <= end)
        .ok_or(PageError {
            offset: at,
            what: "event length runs past the page's data",
        })
}

/// Builds pages in the kernel's format; used by the trace.dat writer and by tests.
#[derive(Debug, Clone)]
pub struct PageWriter {
    endian: Endian,
    layout: HeaderPage,
    page_size: usize,
    buf: Vec<u8>,
    base_ts: Option<u64>,
    last_ts: u64,
    /// The page being built follows lost events.
    after_loss: bool,
}

impl PageWriter {
    /// A writer of pages of `page_size` bytes.
    pub fn new(endian: Endian, layout: HeaderPage, page_size: usize) -> PageWriter {
        PageWriter {
            endian,
            layout,
            page_size,
            buf: Vec::new(),
            base_ts: None,
            last_ts: 0,
            after_loss: false,
        }
    }

    /// Events were lost before the next one: the page it goes into is marked so (as the
    /// kernel marks a page after an overrun). Returns the page being built, finished,
    /// when it holds events.
    pub fn after_loss(&mut self) -> Option<Vec<u8>> {
        let done = (!self.is_empty()).then(|| self.finish_page());
        self.after_loss = true;
        done
    }

    fn data_room(&self) -> usize {
        self.page_size.saturating_sub(self.layout.data_offset)
    }

    /// Whether the current page holds no event.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Adds an event; returns a finished page when the event did not fit in the current one.
    /// Payloads longer than a page are refused with `Err`.
    pub fn push(&mut self, ts: u64, payload: &[u8]) -> Result<Option<Vec<u8>>, &'static str> {
        let padded = payload.len().div_ceil(4) * 4;
        let small = padded > 0 && padded <= 28 * 4;
        let ev_len = if small { 4 + padded } else { 8 + padded };
        if ev_len + 8 > self.data_room() {
            return Err("event larger than a page");
        }
        let mut finished = None;
        if self.base_ts.is_some() {
            let needs_extend = ts.saturating_sub(self.last_ts) >= (1 << TS_SHIFT);
            let need = ev_len + if needs_extend { 8 } else { 0 };
            if self.buf.len() + need > self.data_room() {
                finished = Some(self.finish_page());
            }
        }
        if self.base_ts.is_none() {
            self.base_ts = Some(ts);
            self.last_ts = ts;
        }
        let mut delta = ts.saturating_sub(self.last_ts);
        if delta >= (1 << TS_SHIFT) {
            let head = self.head(TYPE_TIME_EXTEND, (delta & ((1 << TS_SHIFT) - 1)) as u32);
            self.put32(head);
            self.put32((delta >> TS_SHIFT) as u32);
            delta = 0;
        }
        if small {
            let head = self.head((padded / 4) as u32, delta as u32);
            self.put32(head);
        } else {
            let head = self.head(0, delta as u32);
            self.put32(head);
            self.put32((padded + 4) as u32);
        }
        self.buf.extend_from_slice(payload);
        self.buf
            .resize(self.buf.len() + (padded - payload.len()), 0);
        self.last_ts = ts.max(self.last_ts);
        Ok(finished)
    }

    fn head(&self, type_len: u32, delta: u32) -> u32 {
        match self.endian {
            Endian::Little => (delta << 5) | type_len,
            Endian::Big => (type_len << 27) | (delta & ((1 << 27) - 1)),
        }
    }

    fn put32(&mut self, v: u32) {
        self.endian.put_uint(&mut self.buf, u64::from(v), 4);
    }

    /// Closes the current page (if any event is in it) and returns it, zero-padded to the page size.
    pub fn finish_page(&mut self) -> Vec<u8> {
        let mut page = Vec::with_capacity(self.page_size);
        self.endian
            .put_uint(&mut page, self.base_ts.unwrap_or(0), 8);
        page.resize(self.layout.commit_offset, 0);
        let missed = if self.after_loss { MISSED_EVENTS } else { 0 };
        self.endian.put_uint(
            &mut page,
            self.buf.len() as u64 | missed,
            self.layout.commit_size,
        );
        page.resize(self.layout.data_offset, 0);
        page.extend_from_slice(&self.buf);
        page.resize(self.page_size, 0);
        self.buf.clear();
        self.base_ts = None;
        self.after_loss = false;
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> HeaderPage {
        HeaderPage::default_for_long(8)
    }

    fn events(page: &[u8], endian: Endian) -> Vec<(u64, Vec<u8>)> {
        let mut r = PageReader::new(page, &layout(), endian).expect("header");
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().expect("event") {
            out.push((ev.ts, page[ev.start..ev.end].to_vec()));
        }
        out
    }

    #[test]
    fn round_trips_small_large_and_extended_events_in_both_byte_orders() {
        for endian in [Endian::Little, Endian::Big] {
            let mut w = PageWriter::new(endian, layout(), 4096);
            let big = vec![7u8; 200];
            assert!(w.push(1_000, &[1, 2, 3, 4]).expect("fits").is_none());
            assert!(w.push(1_010, &big).expect("fits").is_none());
            // More than 2^27 ns later: needs a time extend.
            assert!(w
                .push(1_010 + (1 << 28) + 5, &[9; 8])
                .expect("fits")
                .is_none());
            let page = w.finish_page();
            let got = events(&page, endian);
            assert_eq!(got.len(), 3);
            assert_eq!(got[0], (1_000, vec![1, 2, 3, 4]));
            assert_eq!(got[1].0, 1_010);
            assert_eq!(&got[1].1[..200], &big[..]);
            assert_eq!(got[2], (1_010 + (1 << 28) + 5, vec![9; 8]));
        }
    }

    #[test]
    fn full_page_is_handed_back_and_a_new_one_starts() {
        let mut w = PageWriter::new(Endian::Little, layout(), 256);
        let mut pages = Vec::new();
        for i in 0..40u64 {
            if let Some(p) = w.push(i * 10, &[i as u8; 12]).expect("fits") {
                pages.push(p);
            }
        }
        pages.push(w.finish_page());
        let all: Vec<_> = pages
            .iter()
            .flat_map(|p| events(p, Endian::Little))
            .collect();
        assert_eq!(all.len(), 40);
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(w.push(0, &[0; 300]).is_err());
    }

    #[test]
    fn absolute_timestamp_and_padding_are_understood() {
        let e = Endian::Little;
        let mut page = Vec::new();
        e.put_uint(&mut page, 100, 8);
        let mut data = Vec::new();
        // Absolute time stamp: 5 << 27 | 3.
        e.put_uint(&mut data, u64::from((3u32 << 5) | TYPE_TIME_STAMP), 4);
        e.put_uint(&mut data, 5, 4);
        // One 4-byte event, delta 2.
        e.put_uint(&mut data, u64::from((2u32 << 5) | 1), 4);
        e.put_uint(&mut data, 0xabcd, 4);
        // Discarded event (padding with a length), then one more event.
        e.put_uint(&mut data, u64::from((1u32 << 5) | TYPE_PADDING), 4);
        e.put_uint(&mut data, 12, 4);
        e.put_uint(&mut data, 0, 4);
        e.put_uint(&mut data, 0, 4);
        e.put_uint(&mut data, u64::from((1u32 << 5) | 1), 4);
        e.put_uint(&mut data, 0x1234, 4);
        // End-of-page padding.
        e.put_uint(&mut data, u64::from(TYPE_PADDING), 4);
        e.put_uint(&mut page, data.len() as u64, 8);
        page.extend_from_slice(&data);
        page.resize(4096, 0);
        let got = events(&page, e);
        let abs = (5u64 << 27) | 3;
        assert_eq!(
            got,
            vec![
                (abs + 2, vec![0xcd, 0xab, 0, 0]),
                (abs + 4, vec![0x34, 0x12, 0, 0])
            ]
        );
    }

    #[test]
    fn missed_events_flags_are_reported() {
        let e = Endian::Little;
        let mut page = Vec::new();
        e.put_uint(&mut page, 0, 8);
        e.put_uint(&mut page, MISSED_EVENTS | MISSED_STORED, 8);
        e.put_uint(&mut page, 42, 8);
        page.resize(4096, 0);
        let r = PageReader::new(&page, &layout(), e).expect("header");
        assert_eq!(r.header().missed, Some(42));
    }

    #[test]
    fn corrupt_lengths_are_errors_not_panics() {
        let e = Endian::Little;
        let mut page = Vec::new();
        e.put_uint(&mut page, 0, 8);
        e.put_uint(&mut page, 16, 8);
        e.put_uint(&mut page, 0, 4); // type_len 0
        e.put_uint(&mut page, 0xffff_fff0, 4); // absurd length
        page.resize(64, 0);
        let mut r = PageReader::new(&page, &layout(), e).expect("header");
        assert!(r.next_event().is_err());
        assert_eq!(r.next_event(), Ok(None));
        let mut bad = page.clone();
        bad[8..16].copy_from_slice(&5000u64.to_le_bytes());
        assert!(PageReader::new(&bad, &layout(), e).is_err());
        assert!(PageReader::new(&page[..4], &layout(), e).is_err());
    }
}
