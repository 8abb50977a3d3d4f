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
mod plugins;
mod raw;
mod symbols;

use std::collections::HashMap;
use std::fmt::Write;

use fmt_eval::{print_piece, Ctx};
use fmt_parse::{split_format, ParsedFmt};
use plugins::{Handler, PluginState};
use symbols::FuncMap;

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
}

/// Prints records as trace-cmd does (a record the kernel dropped events before is
/// preceded by trace-cmd's `CPU:n [EVENTS DROPPED]` line). Keeps per-event caches and the state trace-cmd's
/// plugins keep (task names learned from sched events, function call chains), so use
/// one printer per pass over a trace.
pub struct Printer<'m> {
    meta: &'m TraceMeta,
    funcs: FuncMap,
    events: HashMap<u32, EventState>,
    plugins: PluginState,
    counter_clock: bool,
    instance: Option<String>,
    info: String,
}

impl<'m> Printer<'m> {
    /// A printer for records of the trace described by `meta`.
    pub fn new(meta: &'m TraceMeta) -> Printer<'m> {
        let counter_clock = meta.tsc2nsec.is_none()
            && matches!(
                meta.clock.as_deref(),
                Some("x86-tsc" | "counter" | "uptime")
            );
        Printer {
            meta,
            funcs: FuncMap::new(&meta.kallsyms),
            events: HashMap::new(),
            plugins: PluginState::default(),
            counter_clock,
            instance: None,
            info: String::new(),
        }
    }

    /// Names the buffer the records come from. trace-cmd starts every line of an
    /// instance buffer with `name: `; the top-level buffer (empty name) has no prefix.
    pub fn set_instance(&mut self, name: &str) {
        self.instance = if name.is_empty() {
            None
        } else {
            Some(format!("{name}: "))
        };
    }

    /// Appends the whole line(s) for one record as `trace-cmd report -R` prints them, no
    /// trailing newline.
    pub fn write_raw(&mut self, rec: &Record<'_>, out: &mut String) {
        self.write(rec, out, true);
    }

    /// Same for `trace-cmd report` (print fmt evaluated, trace-cmd plugin overrides
    /// applied).
    pub fn write_report(&mut self, rec: &Record<'_>, out: &mut String) {
        self.write(rec, out, false);
    }

    fn write(&mut self, rec: &Record<'_>, out: &mut String, raw: bool) {
        if let Some(missed) = rec.missed_before {
            if let Some(i) = &self.instance {
                out.push_str(i);
            }
            if missed == 0 {
                let _ = writeln!(out, "CPU:{} [EVENTS DROPPED]", rec.cpu);
            } else {
                let _ = writeln!(out, "CPU:{} [{missed} EVENTS DROPPED]", rec.cpu);
            }
        } else if let Some(i) = &self.instance {
            // After a dropped-events line trace-cmd does not repeat the instance name.
            out.push_str(i);
        }
        let Some(event) = rec.format else {
            out.push_str("[UNKNOWN EVENT]");
            return;
        };
        self.prefix(rec, event, out);
        let mut info = std::mem::take(&mut self.info);
        info.clear();
        if raw {
            self.raw_info(rec, event, &mut info);
        } else {
            self.report_info(rec, event, &mut info);
        }
        let body = info.strip_suffix('\n').unwrap_or(&info);
        out.push_str(body);
        self.info = info;
    }

    fn state(&mut self, event: &EventFormat) -> &mut EventState {
        let long_size = self.meta.kernel_long_size;
        self.events
            .entry(event.id)
            .or_insert_with(|| new_state(event, long_size))
    }

    fn prefix(&self, rec: &Record<'_>, event: &EventFormat, out: &mut String) {
        let pid = rec.pid();
        let comm = if pid == 0 {
            "<idle>"
        } else {
            self.meta
                .cmdlines
                .get(pid)
                .or_else(|| self.plugins.comms.get(&pid).map(String::as_str))
                .unwrap_or("<...>")
        };
        for _ in comm.len()..16 {
            out.push(' ');
        }
        out.push_str(comm);
        let pid_text = pid.to_string();
        out.push('-');
        out.push_str(&pid_text);
        for _ in pid_text.len()..5 {
            out.push(' ');
        }
        let _ = write!(out, " [{:03}]", rec.cpu);
        if self.counter_clock {
            let _ = write!(out, "{:12}", rec.ts);
        } else {
            let us = rec.ts / 1000 + u64::from(rec.ts % 1000 >= 500);
            let _ = write!(out, " {:5}.{:06}", us / 1_000_000, us % 1_000_000);
        }
        out.push_str(": ");
        out.push_str(&event.name);
        out.push(':');
        for _ in event.name.len()..20 {
            out.push(' ');
        }
        out.push(' ');
    }

    fn raw_info(&mut self, rec: &Record<'_>, event: &EventFormat, info: &mut String) {
        let meta = self.meta;
        let funcs = &self.funcs;
        let ctx = Ctx {
            data: rec.data,
            endian: rec.endian,
            long_size: meta.kernel_long_size,
            funcs,
            printk: &meta.printk,
        };
        let long_size = meta.kernel_long_size;
        let st = self
            .events
            .entry(event.id)
            .or_insert_with(|| new_state(event, long_size));
        let pieces = if st.failed || st.bprint {
            None
        } else {
            Some(st.parsed.pieces.as_slice())
        };
        raw::write_fields(&ctx, info, event, pieces, &mut st.cleared);
    }

    fn report_info(&mut self, rec: &Record<'_>, event: &EventFormat, info: &mut String) {
        self.state(event);
        let meta = self.meta;
        let long_size = meta.kernel_long_size;
        let ctx = Ctx {
            data: rec.data,
            endian: rec.endian,
            long_size,
            funcs: &self.funcs,
            printk: &meta.printk,
        };
        let Some(st) = self.events.get_mut(&event.id) else {
            return;
        };
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
    EventState {
        failed: parsed.failed,
        parsed,
        handler: Handler::for_event(event),
        cleared: vec![false; event.fields.len()],
        bprint,
    }
}
