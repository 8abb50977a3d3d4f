//! Printing records the way `trace-cmd report` and `trace-cmd report -R` do
//! (trace-cmd 3.1 with libtraceevent 1.7), byte for byte.
//!
//! Each event's print format is parsed once and cached. Report mode evaluates it
//! (with trace-cmd's plugin overrides for sched, function, hrtimer, kmem and kvm
//! events); raw mode lists the fields, formatting each with the conversion the print
//! format applies to it where libtraceevent does so.

mod cfmt;
mod fmt_eval;
mod fmt_parse;
mod ftrace;
mod line;
mod num;
mod plugins;
mod raw;
mod symbols;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

pub use line::Line;
use line::Snippet;

use fmt_eval::{print_piece, Ctx};
use fmt_parse::{split_format, ParsedFmt};
use plugins::{Handler, PluginState};
use symbols::{FuncMap, Funcs};

use crate::format::EventFormat;
use crate::meta::TraceMeta;
use crate::record::Record;

/// What the printer remembers about one event id.
#[derive(Debug)]
struct EventState {
    parsed: ParsedFmt,
    handler: Handler,
    /// Set when printing found the format unusable (libtraceevent flags the event).
    failed: bool,
    /// Per field: an array that proved not to be a printable string.
    cleared: Vec<bool>,
    bprint: bool,
    /// Offset and size of `common_pid` (as [`Record::pid`] finds it).
    pid_at: (usize, usize),
    /// `: name:` padded as trace-cmd pads it, with the following space.
    name_part: Snippet,
    /// Raw mode's per-field choices; rebuilt when `cleared` changes.
    raw_plan: Option<Vec<raw::FieldStep>>,
    /// Where the sched plugin learns task names from this event.
    learn: plugins::LearnPlan,
}

impl EventState {
    fn pid(&self, rec: &Record<'_>) -> i32 {
        rec.endian
            .read_uint(rec.data, self.pid_at.0, self.pid_at.1)
            .map(|v| v as i32)
            .unwrap_or(-1)
    }
}

/// Event states by id: a table for the ids records can carry (`common_type` is 16
/// bits), a map for anything larger.
#[derive(Debug, Default)]
struct EventTable {
    small: Vec<Option<Box<EventState>>>,
    large: HashMap<u32, EventState>,
}

impl EventTable {
    fn get(&mut self, event: &EventFormat, long_size: usize) -> &mut EventState {
        let id = event.id as usize;
        if id < 1 << 16 {
            if self.small.len() <= id {
                self.small.resize_with(id + 1, || None);
            }
            if let Some(slot) = self.small.get_mut(id) {
                return slot.get_or_insert_with(|| Box::new(new_state(event, long_size)));
            }
        }
        self.large
            .entry(event.id)
            .or_insert_with(|| new_state(event, long_size))
    }
}

/// The `comm-pid` and CPU columns of a line for a pid on a CPU, when they can be kept:
/// names from saved cmdlines never change, names learned from sched events can.
#[derive(Debug)]
enum CommCache {
    Fixed(Snippet),
    Dynamic,
}

/// Hashes pids by multiplication; the keys are small integers from the trace.
#[derive(Debug, Default, Clone, Copy)]
struct PidHasher(u64);

impl std::hash::Hasher for PidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_i32(&mut self, v: i32) {
        self.0 = u64::from(v as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ v >> 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type PidMap<V> = HashMap<i32, V, std::hash::BuildHasherDefault<PidHasher>>;

/// By pid (low 32 bits) and CPU (high 32 bits).
type PidCpuMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<PidHasher>>;

/// A function name left out of printed text while the trace's kernel symbols were still
/// being read (see [`Printer::defer_symbols`]): where it goes, and what to look up.
#[derive(Debug, Clone, Copy)]
pub struct Hole {
    at: usize,
    val: u64,
    with_offset: bool,
}

/// Prints records as trace-cmd does (a record the kernel dropped events before is
/// preceded by trace-cmd's `CPU:n [EVENTS DROPPED]` line). Keeps per-event caches and the state trace-cmd's
/// plugins keep (task names learned from sched events, function call chains), so use
/// one printer per pass over a trace.
pub struct Printer {
    meta: Arc<TraceMeta>,
    funcs: FuncMap,
    events: EventTable,
    plugins: PluginState,
    counter_clock: bool,
    /// The buffer column of the current buffer's lines, and that buffer's name.
    instance: Option<String>,
    instance_name: String,
    comms: PidCpuMap<CommCache>,
    /// The seconds of the last timestamp and their text (` %5llu.`).
    secs: (u64, Snippet),
    /// While printing a record as it printed at its place: its sequence number; names
    /// learned at or after it are not known yet.
    as_of: Option<u64>,
    /// Raw mode leaves symbols out until they are read ([`Printer::defer_symbols`]).
    defer: bool,
    holes: RefCell<Vec<Hole>>,
    /// Where [`Printer::write_raw`] and the other `String` writers print first.
    scratch: Line,
}

/// The buffer column trace-cmd starts a line of buffer `name` with, in a file whose
/// longest instance name is `width` long (`None`: no instances, no column).
fn buffer_column(name: &str, width: Option<usize>) -> Option<String> {
    let Some(width) = width else {
        return (!name.is_empty()).then(|| format!("{name}: "));
    };
    // Widths count bytes, as C's `%*s` does.
    let pad = width.saturating_sub(name.len());
    let mut column = " ".repeat(pad);
    column.push_str(name);
    column.push_str(if name.is_empty() { "  " } else { ": " });
    Some(column)
}

impl Printer {
    /// A printer for records of the trace described by `meta` (shared, so a printer can
    /// live as long as the events it prints, without the file).
    pub fn new(meta: Arc<TraceMeta>) -> Printer {
        let counter_clock = meta.tsc2nsec.is_none()
            && matches!(
                meta.clock.as_deref(),
                Some("x86-tsc" | "counter" | "uptime")
            );
        let instance = buffer_column("", meta.instance_width);
        Printer {
            meta,
            funcs: FuncMap::default(),
            events: EventTable::default(),
            plugins: PluginState::default(),
            counter_clock,
            instance,
            instance_name: String::new(),
            comms: PidCpuMap::default(),
            secs: (u64::MAX, Snippet::new("")),
            as_of: None,
            defer: false,
            holes: RefCell::default(),
            scratch: Line::default(),
        }
    }

    /// In raw mode, prints on while the trace's kernel symbols are still being read (a
    /// kallsyms section takes tens of milliseconds to decompress and parse) instead of
    /// waiting at the first `%pS`-style conversion: each function name left out is noted
    /// with its byte position in the text written since the last [`Printer::take_holes`]
    /// (into one `String`), and [`Printer::fill_holes`] writes them in. For a caller that
    /// holds its text back until then.
    pub fn defer_symbols(&mut self, on: bool) {
        self.defer = on;
    }

    /// Whether symbols are read, so that [`Printer::fill_holes`] does not wait.
    pub fn symbols_ready(&self) -> bool {
        self.funcs(None).ready()
    }

    /// The function names left out since the last call, in the order of their positions.
    pub fn take_holes(&mut self) -> Vec<Hole> {
        std::mem::take(self.holes.get_mut())
    }

    /// `text` with the names `holes` (taken for it) left out written in, looked up now
    /// (waiting for the symbols if need be).
    pub fn fill_holes(&self, text: &Line, holes: &[Hole]) -> Line {
        let funcs = self.funcs(None);
        let mut out = Line::with_capacity(text.len() + holes.len() * 32);
        let mut from = 0;
        for h in holes {
            out.push_range(text, from, h.at);
            fmt_eval::write_function(funcs, &mut out, h.with_offset, h.val);
            from = h.at.max(from);
        }
        out.push_range(text, from, text.len());
        out
    }

    fn funcs<'a>(&'a self, defer: Option<&'a RefCell<Vec<Hole>>>) -> Funcs<'a> {
        Funcs {
            map: &self.funcs,
            kallsyms: &self.meta.kallsyms,
            defer,
        }
    }

    /// The metadata it prints with.
    pub fn meta(&self) -> &Arc<TraceMeta> {
        &self.meta
    }

    /// Learns what printing `rec` would teach the printer (task names from sched events)
    /// without printing it. `seq` numbers the records in trace order, for
    /// [`Printer::write_report_as_of`].
    pub fn learn(&mut self, rec: &Record<'_>, seq: u64) {
        let Some(event) = rec.format else {
            return;
        };
        let long_size = self.meta.kernel_long_size;
        let st = self.events.get(event, long_size);
        if st.learn.is_empty() {
            return;
        }
        let meta: &TraceMeta = &self.meta;
        let ctx = eval_ctx(meta, &self.funcs, rec, None);
        plugins::learn(&st.learn, &ctx, &mut self.plugins, seq);
    }

    /// Appends `rec` as `trace-cmd report` printed it at its place in the trace: with
    /// only the task names learned (by [`Printer::learn`]) from records before `seq`.
    /// For a record printed after later ones were learned (a decisive line found once
    /// the diagnosis is known).
    pub fn write_report_as_of(&mut self, rec: &Record<'_>, seq: u64, out: &mut String) {
        self.as_of = Some(seq);
        self.write_string(rec, out, false);
        self.as_of = None;
    }

    /// Names the buffer the records come from. In a file with instance buffers,
    /// trace-cmd starts every line with a buffer column as wide as the longest instance
    /// name: `name: ` right-aligned in it, blanks for the top-level buffer (empty name).
    /// A file of one top-level buffer has no column. Cheap when the name has not changed,
    /// so call it for every record.
    pub fn set_instance(&mut self, name: &str) {
        // By length alone for the top level's empty name, nearly every record's: a
        // string comparison per record was 16 % of `dump --raw`'s samples.
        let n = &self.instance_name;
        if n.len() == name.len() && (name.is_empty() || n == name) {
            return;
        }
        self.instance_name = name.to_string();
        self.instance = buffer_column(name, self.meta.instance_width);
    }

    /// Appends the whole line(s) for one record as `trace-cmd report -R` prints them, no
    /// trailing newline.
    pub fn write_raw(&mut self, rec: &Record<'_>, out: &mut String) {
        self.write_string(rec, out, true);
    }

    /// Same for `trace-cmd report` (print fmt evaluated, trace-cmd plugin overrides
    /// applied).
    pub fn write_report(&mut self, rec: &Record<'_>, out: &mut String) {
        self.write_string(rec, out, false);
    }

    /// [`Printer::write_raw`] into a [`Line`], for a caller printing many records (no
    /// check of the text on the way to a `String`).
    pub fn write_raw_line(&mut self, rec: &Record<'_>, out: &mut Line) {
        self.write(rec, out, true);
    }

    /// [`Printer::write_report`] into a [`Line`].
    pub fn write_report_line(&mut self, rec: &Record<'_>, out: &mut Line) {
        self.write(rec, out, false);
    }

    /// Writes into the printer's own buffer and appends that to `out`; names left out
    /// (see [`Printer::defer_symbols`]) are noted at their places in `out`.
    fn write_string(&mut self, rec: &Record<'_>, out: &mut String, raw: bool) {
        let mut line = std::mem::take(&mut self.scratch);
        line.clear();
        let holes = self.holes.get_mut().len();
        self.write(rec, &mut line, raw);
        for h in self.holes.get_mut().iter_mut().skip(holes) {
            h.at += out.len();
        }
        out.push_str(&line.to_string_lossy());
        self.scratch = line;
    }

    fn write(&mut self, rec: &Record<'_>, out: &mut Line, raw: bool) {
        if let Some(missed) = rec.missed_before {
            if let Some(i) = &self.instance {
                out.push_str(i);
            }
            out.push_str("CPU:");
            num::dec(out, u64::from(rec.cpu));
            if missed == 0 {
                out.push_str(" [EVENTS DROPPED]\n");
            } else {
                out.push_str(" [");
                num::dec(out, missed);
                out.push_str(" EVENTS DROPPED]\n");
            }
        } else if let Some(i) = &self.instance {
            // After a dropped-events line trace-cmd does not repeat the instance name.
            out.push_str(i);
        }
        let Some(event) = rec.format else {
            out.push_str("[UNKNOWN EVENT]");
            return;
        };
        let st = self.events.get(event, self.meta.kernel_long_size);
        let pid = st.pid(rec);
        write_comm_pid(
            &mut self.comms,
            &self.meta,
            &self.plugins,
            self.as_of,
            (pid, rec.cpu),
            out,
        );
        if self.counter_clock {
            num::dec_width(out, rec.ts, 12, false);
        } else {
            let us = rec.ts / 1000 + u64::from(rec.ts % 1000 >= 500);
            let secs = us / 1_000_000;
            // Consecutive records mostly fall in the same second.
            if self.secs.0 != secs {
                let mut text = Line::default();
                text.push(' ');
                num::dec_width(&mut text, secs, 5, false);
                text.push('.');
                self.secs = (secs, Snippet::new(&text.to_string_lossy()));
            }
            out.push_snippet(&self.secs.1);
            num::dec6(out, (us % 1_000_000) as u32);
        }
        out.push_snippet(&st.name_part);
        // The info part is written in place; trace-cmd drops one trailing newline.
        let start = out.len();
        if raw {
            // The event's state is still borrowed from above: looked up once a record.
            let defer = self.defer.then_some(&self.holes);
            let ctx = eval_ctx(&self.meta, &self.funcs, rec, defer);
            raw_info(st, &ctx, event, out);
        } else {
            self.report_info(rec, event, out);
        }
        // A name left out at the very end would have ended the text instead.
        let hole_at_end = self
            .holes
            .get_mut()
            .last()
            .is_some_and(|h| h.at == out.len());
        if out.len() > start && out.ends_with_byte(b'\n') && !hole_at_end {
            out.pop_ascii();
        }
    }

    fn report_info(&mut self, rec: &Record<'_>, event: &EventFormat, info: &mut Line) {
        let meta: &TraceMeta = &self.meta;
        let long_size = meta.kernel_long_size;
        let ctx = eval_ctx(meta, &self.funcs, rec, None);
        let st = self.events.get(event, long_size);
        if !plugins::run(st.handler, &ctx, info, &mut self.plugins, event, rec.cpu) {
            return;
        }
        if st.failed {
            info.push_str("[FAILED TO PARSE]");
            raw::write_fields(&ctx, info, event, None, &mut st.cleared);
            return;
        }
        if st.bprint {
            let fmt_addr = event
                .fields
                .iter()
                .find(|f| f.name == "fmt")
                .map(|f| ctx.read(f.offset, f.size))
                .unwrap_or(0);
            let format = ftrace::bprint_format(fmt_addr, meta.printk.get(fmt_addr));
            let args = ftrace::bprint_args(event, rec.data, rec.endian, long_size, &format);
            let parsed = split_format(&format, args);
            if parsed.failed {
                st.failed = true;
            }
            for p in &parsed.pieces {
                print_piece(&ctx, info, p);
            }
            return;
        }
        for p in &st.parsed.pieces {
            print_piece(&ctx, info, p);
        }
    }
}

fn new_state(event: &EventFormat, long_size: usize) -> EventState {
    let bprint = event.system == "ftrace" && event.name == "bprint";
    let parsed = if bprint {
        ParsedFmt {
            pieces: Vec::new(),
            failed: false,
        }
    } else {
        fmt_parse::parse_event(event, long_size)
    };
    let pid_at = event
        .field("common_pid")
        .map(|f| (f.offset, f.size))
        .unwrap_or((4, 4));
    let mut name_part = Line::default();
    name_part.push_str(": ");
    name_part.push_str(&event.name);
    name_part.push(':');
    num::pad(
        &mut name_part,
        20usize.saturating_sub(event.name.len()),
        ' ',
    );
    name_part.push(' ');
    let name_part = Snippet::new(&name_part.to_string_lossy());
    EventState {
        failed: parsed.failed,
        parsed,
        handler: Handler::for_event(event),
        cleared: vec![false; event.fields.len()],
        bprint,
        pid_at,
        name_part,
        raw_plan: None,
        learn: plugins::LearnPlan::new(Handler::for_event(event), event),
    }
}

/// `comm-pid` as trace-cmd prints it (the name right-aligned in 16 columns, the pid
/// left-aligned in 5), then the CPU column.
fn write_comm_pid(
    cache: &mut PidCpuMap<CommCache>,
    meta: &TraceMeta,
    plugins: &PluginState,
    as_of: Option<u64>,
    (pid, cpu): (i32, u32),
    out: &mut Line,
) {
    let key = u64::from(pid as u32) | u64::from(cpu) << 32;
    let entry = cache.entry(key).or_insert_with(|| {
        let fixed = if pid == 0 {
            Some("<idle>")
        } else {
            meta.cmdlines.get(pid)
        };
        match fixed {
            Some(comm) => {
                let mut s = Line::default();
                format_comm_pid(&mut s, comm, pid);
                num::cpu_column(&mut s, cpu);
                CommCache::Fixed(Snippet::new(&s.to_string_lossy()))
            }
            None => CommCache::Dynamic,
        }
    });
    match entry {
        CommCache::Fixed(s) => out.push_snippet(s),
        CommCache::Dynamic => {
            let known = as_of.is_none_or(|seq| {
                plugins
                    .learned_at
                    .get(&pid)
                    .is_none_or(|learned| *learned < seq)
            });
            let comm = plugins
                .comms
                .get(&pid)
                .filter(|_| known)
                .map(String::as_str)
                .unwrap_or("<...>");
            format_comm_pid(out, comm, pid);
            num::cpu_column(out, cpu);
        }
    }
}

fn format_comm_pid(out: &mut Line, comm: &str, pid: i32) {
    num::pad(out, 16usize.saturating_sub(comm.len()), ' ');
    out.push_str(comm);
    out.push('-');
    let start = out.len();
    num::signed(out, i64::from(pid));
    let len = out.len() - start;
    num::pad(out, 5usize.saturating_sub(len), ' ');
}
/// What evaluating a print format needs for one record of the trace `meta`.
/// The fields of a record in raw mode, after its header.
fn raw_info(st: &mut EventState, ctx: &Ctx<'_>, event: &EventFormat, info: &mut Line) {
    let pieces: &[fmt_parse::Piece] = if st.failed || st.bprint {
        &[]
    } else {
        &st.parsed.pieces
    };
    let plan = st
        .raw_plan
        .get_or_insert_with(|| raw::plan(event, Some(pieces), &st.cleared));
    if raw::write_planned(ctx, info, event, pieces, plan, &mut st.cleared) {
        st.raw_plan = None;
    }
}

fn eval_ctx<'a>(
    meta: &'a TraceMeta,
    funcs: &'a FuncMap,
    rec: &Record<'a>,
    defer: Option<&'a RefCell<Vec<Hole>>>,
) -> Ctx<'a> {
    Ctx {
        data: rec.data,
        following: rec.following,
        endian: rec.endian,
        long_size: meta.kernel_long_size,
        funcs: Funcs {
            map: funcs,
            kallsyms: &meta.kallsyms,
            defer,
        },
        printk: &meta.printk,
    }
}
