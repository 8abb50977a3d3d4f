//! Reading `trace-cmd report` text (and the kernel's own `trace` file) into [`Event`]s.
//!
//! People paste trace text into bug reports; this module turns it into the same typed
//! events the binary decoder produces, streaming, one line at a time.
//!
//! ```
//! use rtwhy_decode::text::TextReader;
//! use rtwhy_model::EventKind;
//!
//! let text = "cpus=2\n\
//!     bash-1181  [000]  1464.181413: sched_wakeup: rcu_preempt:8 [120] success=1 CPU:001\n";
//! let mut reader = TextReader::new(text.as_bytes());
//! let ev = reader.next_event().unwrap().unwrap();
//! assert_eq!(ev.ts.0, 1_464_181_413_000);
//! assert!(matches!(ev.kind, EventKind::SchedWakeup { pid: 8, target_cpu: 1, .. }));
//! assert_eq!(reader.cpus(), Some(2));
//! ```
//!
//! # Line formats
//! An event line is `[BUFFER: ]COMM-PID [(TGID)] [CPU] [FLAGS] TIMESTAMP: EVENT: CONTENT`:
//! - `BUFFER: ` is the instance name trace-cmd prints for a non-top-level buffer;
//! - COMM may contain spaces, `:` and `-` (the pid follows the last `-` before the CPU);
//! - FLAGS are the kernel's latency columns (`d.h1.`) of the `trace` file;
//! - TIMESTAMP is `secs.usecs`, `secs.nsecs` (any 1 to 9 fraction digits) or a raw
//!   counter value (x86-tsc, counter clocks), which is kept as is;
//! - CONTENT is trace-cmd's rendering (its plugins' `comm:pid [prio] S ==> ...`, or the
//!   event's print format), or with `report -R` the raw `name=value` fields.
//!
//! The events the analyzer uses become typed [`EventKind`]s from any of the three
//! renderings. Everything else becomes [`EventKind::Generic`] with fields from
//! `name=value` pairs when the content is made of them, else one `text` field.
//!
//! Text carries less than the binary: symbolic function pointers (`function=tick_sched_timer/0x0`)
//! become address 0; trace-cmd's `sched_switch` plugin prints only the low 8 state bits
//! (`R` for a preempted task, whatever the kernel's "preempted" bit); `bprint`/`bputs`
//! in raw output have no text and stay generic; the newer `sys_enter_futex` rendering
//! prints only `uaddr`, `op` and `val`.
//!
//! # Lines that are not events
//! - header and notice lines are skipped: `cpus=N` (remembered, see
//!   [`TextReader::cpus`]), `version = N`, `#` comments of the kernel's `trace` file
//!   (`#P:N` is remembered as the CPU count), `CPU:N [EVENTS DROPPED]`,
//!   `CPU:N [LOST M EVENTS]`, `CPU N is empty`, blank lines;
//! - continuation lines belong to the event above them: they extend a print event's
//!   text (a marker or `trace_printk` with embedded newlines) and `=> func (addr)`
//!   lines become a `stack` field of stack events; other stray lines (libtraceevent's
//!   own warnings printed between events) are skipped and counted
//!   ([`TextReader::skipped_lines`]).
//!
//! # Errors
//! One odd line never fails the input once an event has been read. Before the first
//! event, up to [`MAX_LEADING_JUNK`] unrecognized non-blank lines are tolerated (a pasted
//! shell prompt or command line); more means the input is not trace text: the reader
//! returns one [`Error::Text`] and then ends. Read errors are returned once, after the
//! event read before them. Lines longer than [`MAX_LINE`] bytes are cut; invalid UTF-8
//! is replaced. Memory does not grow with the input: one line and one event are held.

use std::io::{BufRead, ErrorKind};

use rtwhy_model::{
    Comm, Event, EventKind, FieldValue, GenericEvent, Nanos, SyscallKind, TaskState,
};

use crate::error::{Error, Result};

/// Longest line kept, in bytes; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 64 * 1024;

/// Unrecognized non-blank lines tolerated before the first event.
pub const MAX_LEADING_JUNK: usize = 5;

/// Most bytes of continuation text or stack lines attached to one event.
const MAX_ATTACHED: usize = 64 * 1024;

/// The kernel's "preempted" bit in `prev_state` (`TASK_REPORT_MAX`, since 4.14), printed `+`.
const TASK_REPORT_MAX: u64 = 0x100;

/// Streaming reader of `trace-cmd report` / `report -R` / tracefs `trace` text.
#[derive(Debug)]
pub struct TextReader<R: BufRead> {
    input: R,
    line: Vec<u8>,
    line_no: usize,
    pending: Option<Event>,
    /// Line where `pending` began.
    pending_line: usize,
    /// Events dropped before the next event line, before the pending event, before the
    /// event last returned (a `CPU:N [K EVENTS DROPPED]` notice).
    next_dropped: Option<u64>,
    pending_dropped: Option<u64>,
    event_dropped: Option<u64>,
    /// Line where the event last returned began.
    event_line: usize,
    /// The text of the line where `pending` began.
    pending_text: String,
    /// The text of the line where the event last returned began.
    event_text: String,
    pending_err: Option<Error>,
    cpus: Option<u32>,
    seen_event: bool,
    leading_junk: usize,
    skipped: u64,
    done: bool,
}

impl<R: BufRead> TextReader<R> {
    /// A reader over report text.
    pub fn new(input: R) -> Self {
        TextReader {
            input,
            line: Vec::new(),
            line_no: 0,
            pending: None,
            pending_line: 0,
            next_dropped: None,
            pending_dropped: None,
            event_dropped: None,
            event_line: 0,
            pending_text: String::new(),
            event_text: String::new(),
            pending_err: None,
            cpus: None,
            seen_event: false,
            leading_junk: 0,
            skipped: 0,
            done: false,
        }
    }

    /// The CPU count from the `cpus=N` header (or a `trace` file's `#P:N`), once seen.
    pub fn cpus(&self) -> Option<u32> {
        self.cpus
    }

    /// Lines after the first event that were neither events, notices nor continuations.
    pub fn skipped_lines(&self) -> u64 {
        self.skipped
    }

    /// The 1-based line number where the event last returned by
    /// [`TextReader::next_event`] began (0 before the first), so a viewer can show the
    /// original line.
    pub fn event_line(&self) -> usize {
        self.event_line
    }

    /// The line where the event last returned by [`TextReader::next_event`] began, as
    /// it stands in the input (without continuation lines), so a viewer or a report can
    /// show it as the tool that wrote it printed it.
    pub fn event_text(&self) -> &str {
        &self.event_text
    }

    /// Whether trace-cmd said events of its CPU were dropped before the event last
    /// returned (`CPU:N [K EVENTS DROPPED]`): `Some(K)`, `Some(0)` when it gave no count.
    pub fn event_dropped(&self) -> Option<u64> {
        self.event_dropped
    }

    /// Makes the pending event's line the returned event's line.
    fn hand_over_text(&mut self) {
        std::mem::swap(&mut self.event_text, &mut self.pending_text);
        self.pending_text.clear();
        self.event_dropped = self.pending_dropped.take();
    }

    /// The next event, or `None` at the end of the input (or after a fatal error).
    pub fn next_event(&mut self) -> Option<Result<Event>> {
        loop {
            if let Some(err) = self.pending_err.take() {
                self.done = true;
                return Some(Err(err));
            }
            if self.done {
                self.event_line = self.pending_line;
                self.hand_over_text();
                return self.pending.take().map(finish).map(Ok);
            }
            match self.read_line() {
                Err(e) => {
                    self.pending_err = Some(Error::Text {
                        line: self.line_no + 1,
                        what: format!("read error: {e}"),
                    });
                    if let Some(ev) = self.pending.take() {
                        self.event_line = self.pending_line;
                        self.hand_over_text();
                        return Some(Ok(finish(ev)));
                    }
                }
                Ok(false) => {
                    self.done = true;
                }
                Ok(true) => {
                    self.line_no += 1;
                    let text = String::from_utf8_lossy(&self.line);
                    let line = text.trim_end_matches(['\n', '\r']);
                    if let Some(ev) = parse_event_line(line) {
                        self.seen_event = true;
                        let began = std::mem::replace(&mut self.pending_line, self.line_no);
                        std::mem::swap(&mut self.event_text, &mut self.pending_text);
                        self.pending_text.clear();
                        self.pending_text.push_str(line);
                        self.event_dropped =
                            std::mem::replace(&mut self.pending_dropped, self.next_dropped.take());
                        if let Some(prev) = self.pending.replace(ev) {
                            self.event_line = began;
                            return Some(Ok(finish(prev)));
                        }
                        continue;
                    }
                    let line = line.to_owned();
                    self.other_line(&line);
                }
            }
        }
    }

    fn other_line(&mut self, line: &str) {
        if line.trim().is_empty() {
            if let Some(Event {
                kind: EventKind::Print { text },
                ..
            }) = &mut self.pending
            {
                attach_text(text, "");
            }
            return;
        }
        if let Some(n) = header_cpus(line) {
            self.cpus = Some(n);
            return;
        }
        if is_notice(line) {
            if let Some(n) = dropped_notice(line) {
                self.next_dropped = Some(n);
            }
            return;
        }
        if !self.seen_event && line.starts_with('#') {
            return;
        }
        if let Some(ev) = &mut self.pending {
            if attach(ev, line) {
                return;
            }
        }
        if self.seen_event {
            self.skipped += 1;
            return;
        }
        self.leading_junk += 1;
        if self.leading_junk > MAX_LEADING_JUNK {
            self.pending_err = Some(Error::Text {
                line: self.line_no,
                what: format!(
                    "not trace-cmd report text: no event line in the first {} non-blank lines",
                    MAX_LEADING_JUNK + 1
                ),
            });
        }
    }

    /// Reads one line into `self.line`, keeping at most [`MAX_LINE`] bytes of it.
    /// `Ok(false)` at the end of the input.
    fn read_line(&mut self) -> std::io::Result<bool> {
        self.line.clear();
        let mut any = false;
        loop {
            let avail = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(any);
            }
            any = true;
            let (chunk, used, end) = match avail.iter().position(|b| *b == b'\n') {
                Some(i) => (&avail[..i], i + 1, true),
                None => (avail, avail.len(), false),
            };
            let room = MAX_LINE.saturating_sub(self.line.len());
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.input.consume(used);
            if end {
                return Ok(true);
            }
        }
    }
}

impl<R: BufRead> Iterator for TextReader<R> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event()
    }
}

/// Whether the start of an input looks like report text (for choosing a reader): a
/// `cpus=N` header, a `trace` file header, or an event line among the first lines.
pub fn looks_like_report_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    let text = String::from_utf8_lossy(head);
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The last piece may be a line cut by the end of `head`: judge it only if it is alone.
    if lines.len() > 1 && !text.ends_with('\n') {
        lines.pop();
    }
    lines.iter().take(64).any(|l| {
        let l = l.trim_end_matches('\r');
        header_cpus(l).is_some() || l.starts_with("# tracer:") || parse_event_line(l).is_some()
    })
}

/// `cpus=N`, or a `trace` file's `# entries-in-buffer/entries-written: a/b   #P:N`.
fn header_cpus(line: &str) -> Option<u32> {
    if let Some(n) = line.trim().strip_prefix("cpus=") {
        return n.trim().parse().ok();
    }
    if line.starts_with('#') {
        let (_, n) = line.rsplit_once("#P:")?;
        return n.trim().parse().ok();
    }
    None
}

/// Notices trace-cmd or the kernel print between events, and `version = N`.
fn is_notice(line: &str) -> bool {
    let mut l = line.trim();
    if let Some(v) = l.strip_prefix("version") {
        if let Some(n) = v.trim_start().strip_prefix('=') {
            return n.trim().parse::<u32>().is_ok();
        }
    }
    // With a buffer prefix: `instance: CPU:0 [EVENTS DROPPED]`.
    if let Some((buf, rest)) = l.split_once(": ") {
        if !buf.contains(char::is_whitespace) && rest.trim_start().starts_with("CPU") {
            l = rest.trim_start();
        }
    }
    let Some(rest) = l.strip_prefix("CPU") else {
        return false;
    };
    // `CPU:0 [EVENTS DROPPED]`, `CPU:0 [LOST 12 EVENTS]`, `CPU 3 is empty`.
    let rest = rest.trim_start_matches([':', ' ']);
    let tail = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    if tail.len() == rest.len() {
        return false;
    }
    let tail = tail.trim();
    (tail.starts_with('[') && tail.ends_with(']') && tail.contains("EVENTS")) || tail == "is empty"
}

/// The count of a notice that events were dropped (`CPU:0 [12 EVENTS DROPPED]`,
/// `CPU:0 [LOST 12 EVENTS]`; 0 for `CPU:0 [EVENTS DROPPED]`), of a line [`is_notice`]
/// accepted.
fn dropped_notice(line: &str) -> Option<u64> {
    let inner = line.rsplit_once('[')?.1.strip_suffix(']')?;
    if !inner.contains("DROPPED") && !inner.contains("LOST") {
        return None;
    }
    Some(
        inner
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap_or(0),
    )
}

fn finish(mut ev: Event) -> Event {
    if let EventKind::Print { text } = &mut ev.kind {
        let trimmed = text.trim_end_matches('\n').len();
        text.truncate(trimmed);
    }
    ev
}

fn attach_text(text: &mut String, line: &str) {
    if text.len() + 1 + line.len() <= MAX_ATTACHED {
        text.push('\n');
        text.push_str(line);
    }
}

/// Attaches a continuation line to the event above it; `false` if it does not belong there.
fn attach(ev: &mut Event, line: &str) -> bool {
    match &mut ev.kind {
        EventKind::Print { text } => {
            attach_text(text, line);
            true
        }
        EventKind::Generic(g) => {
            let Some(frame) = line.trim_start().strip_prefix("=> ") else {
                return false;
            };
            if let Some((_, FieldValue::Str(stack))) =
                g.fields.iter_mut().find(|(n, _)| n == "stack")
            {
                if stack.len() + 1 + frame.len() <= MAX_ATTACHED {
                    stack.push('\n');
                    stack.push_str(frame);
                }
            } else {
                g.fields
                    .push(("stack".to_owned(), FieldValue::Str(frame.to_owned())));
            }
            true
        }
        _ => false,
    }
}

/// Parses one event line, or `None` when the line is not an event line.
fn parse_event_line(line: &str) -> Option<Event> {
    if let Some(ev) = parse_event_header(line) {
        return Some(ev);
    }
    // `BUFFER: ` prefix of a non-top-level buffer. trace-cmd and the kernel pad COMM to
    // 16 columns, so a real event line never starts with a non-blank `word: `.
    let (buf, rest) = line.split_once(": ")?;
    if buf.is_empty() || buf.contains(char::is_whitespace) {
        return None;
    }
    parse_event_header(rest)
}

fn parse_event_header(line: &str) -> Option<Event> {
    let (pid, cpu, after_cpu) = find_task_and_cpu(line)?;
    let rest = after_cpu.trim_start();
    let (first, after_first) = split_token(rest);
    let (ts_token, content) = if first.ends_with(':') {
        (first, after_first)
    } else {
        // Latency flags (`d.h1.`) between the CPU and the timestamp.
        let (second, after_second) = split_token(after_first.trim_start());
        (second, after_second)
    };
    let ts = parse_timestamp(ts_token.strip_suffix(':')?)?;
    let content = content.trim_start();
    let (name, body) = match content.split_once(':') {
        Some((name, body)) if is_event_name(name) => (name, body.trim_start()),
        // The kernel's function tracer prints `func <-parent` with no event name.
        _ if content.contains(" <-") => ("function", content),
        // So does the timerlat tracer its samples (`#N context irq timer_latency N ns`).
        _ if crate::osnoise::is_timerlat_sample_text(content) => ("timerlat", content),
        // The kernel's `trace` file prints a stack (`-s`, `stacktrace`) this way; its
        // `=> func` lines follow.
        _ if content.starts_with("<stack trace>") => ("kernel_stack", ""),
        _ => return None,
    };
    Some(Event {
        ts: Nanos(ts),
        cpu,
        pid,
        kind: parse_kind(name, body),
    })
}

/// Finds `COMM-PID [(TGID)] [CPU]` and returns the pid, the CPU and the text after `]`.
fn find_task_and_cpu(line: &str) -> Option<(i32, u32, &str)> {
    let mut from = 0;
    while let Some(off) = line.get(from..)?.find('[') {
        let open = from + off;
        from = open + 1;
        let after = line.get(open + 1..)?;
        let close = after.find(']')?;
        let digits = after.get(..close)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cpu) = digits.parse::<u32>() else {
            continue;
        };
        let mut task = line.get(..open)?.trim_end();
        if let Some(t) = task.strip_suffix(')') {
            // `(TGID)` column of the kernel's `trace` file, `(-------)` when unknown.
            match t.rfind('(') {
                Some(p) => task = t.get(..p)?.trim_end(),
                None => continue,
            }
        }
        let Some((comm, pid)) = task.rsplit_once('-') else {
            continue;
        };
        if comm.trim().is_empty() {
            continue;
        }
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        return Some((pid, cpu, after.get(close + 1..)?));
    }
    None
}

fn split_token(s: &str) -> (&str, &str) {
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

fn is_event_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// `secs.frac` (1 to 9 fraction digits) to nanoseconds; a bare integer is a raw count.
fn parse_timestamp(s: &str) -> Option<u64> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    match s.split_once('.') {
        None => digits(s).then(|| s.parse().ok()).flatten(),
        Some((secs, frac)) => {
            if !digits(secs) || !digits(frac) || frac.len() > 9 {
                return None;
            }
            let secs: u64 = secs.parse().ok()?;
            let frac_ns: u64 = frac
                .parse::<u64>()
                .ok()?
                .checked_mul(10u64.pow(9 - frac.len() as u32))?;
            secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
        }
    }
}

/// The typed kind of an event from its content, else a generic one.
fn parse_kind(name: &str, body: &str) -> EventKind {
    typed_kind(name, body).unwrap_or_else(|| generic(name, body))
}

fn typed_kind(name: &str, body: &str) -> Option<EventKind> {
    let kind = match name {
        "sched_switch" => sched_switch(body)?,
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let (comm, pid, prio, target_cpu) = wakeup(body)?;
            match name {
                "sched_waking" => EventKind::SchedWaking {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
                "sched_wakeup" => EventKind::SchedWakeup {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
                _ => EventKind::SchedWakeupNew {
                    comm,
                    pid,
                    prio,
                    target_cpu,
                },
            }
        }
        "sched_migrate_task" => {
            let f = Fields::parse(body);
            EventKind::SchedMigrateTask {
                comm: Comm::new(f.str("comm")?),
                pid: f.int("pid")?,
                prio: f.int("prio")?,
                orig_cpu: f.int("orig_cpu")?,
                dest_cpu: f.int("dest_cpu")?,
            }
        }
        "sched_pi_setprio" => {
            let f = Fields::parse(body);
            EventKind::SchedPiSetprio {
                comm: Comm::new(f.str("comm")?),
                pid: f.int("pid")?,
                oldprio: f.int("oldprio")?,
                newprio: f.int("newprio")?,
            }
        }
        "irq_handler_entry" => {
            let f = Fields::parse(body);
            // The name is the rest of the line: handler names may contain spaces.
            let (_, name) = body.split_once("name=")?;
            EventKind::IrqHandlerEntry {
                irq: f.int("irq")?,
                name: name.trim_end().to_owned(),
            }
        }
        "irq_handler_exit" => {
            let f = Fields::parse(body);
            let ret = match first_token(f.str("ret")?) {
                "handled" => 1,
                "unhandled" => 0,
                other => parse_i64(other)? as i32,
            };
            EventKind::IrqHandlerExit {
                irq: f.int("irq")?,
                ret,
            }
        }
        "softirq_entry" | "softirq_exit" | "softirq_raise" => {
            let vec = Fields::parse(body).int("vec")?;
            match name {
                "softirq_entry" => EventKind::SoftirqEntry { vec },
                "softirq_exit" => EventKind::SoftirqExit { vec },
                _ => EventKind::SoftirqRaise { vec },
            }
        }
        "hrtimer_start" => {
            let f = Fields::parse(body);
            EventKind::HrtimerStart {
                hrtimer: f.int("hrtimer")?,
                function: f.str("function").map(function_addr).unwrap_or(0),
                expires: f.int("expires")?,
                softexpires: f.int("softexpires")?,
                mode: f.str("mode").and_then(hrtimer_mode),
            }
        }
        "hrtimer_expire_entry" => {
            let f = Fields::parse(body);
            EventKind::HrtimerExpireEntry {
                hrtimer: f.int("hrtimer")?,
                now: f.int("now")?,
                function: f.str("function").map(function_addr).unwrap_or(0),
            }
        }
        "hrtimer_expire_exit" => EventKind::HrtimerExpireExit {
            hrtimer: Fields::parse(body).int("hrtimer")?,
        },
        "hrtimer_cancel" => EventKind::HrtimerCancel {
            hrtimer: Fields::parse(body).int("hrtimer")?,
        },
        "cpu_idle" | "cpu_frequency" => {
            let f = Fields::parse(body);
            let state = u32_wrapping(f.str("state")?)?;
            let cpu_id = u32_wrapping(f.str("cpu_id")?)?;
            if name == "cpu_idle" {
                EventKind::CpuIdle { state, cpu_id }
            } else {
                EventKind::CpuFrequency { state, cpu_id }
            }
        }
        n if n.starts_with("ipi_") => EventKind::Ipi {
            name: n.to_owned(),
            target_cpu: ipi_target(body),
        },
        "workqueue_execute_start" => {
            let (work, function) = work_and_function(body)?;
            EventKind::WorkqueueExecuteStart { work, function }
        }
        "workqueue_execute_end" => EventKind::WorkqueueExecuteEnd {
            work: work_and_function(body)?.0,
        },
        "print" => EventKind::Print {
            text: print_text(body)?,
        },
        "bprint" | "bputs" => {
            // Raw output has no text for these (only the format pointer): stay generic.
            if body.starts_with("ip=") {
                return None;
            }
            EventKind::Print {
                text: print_text(body)?,
            }
        }
        n => {
            if let Some(call) = n.strip_prefix("sys_enter_").and_then(syscall_kind) {
                EventKind::SyscallEnter {
                    call,
                    args: syscall_args(call, body)?,
                }
            } else if let Some(call) = n.strip_prefix("sys_exit_").and_then(syscall_kind) {
                let ret = match Fields::parse(body).str("ret") {
                    Some(v) => parse_i64(first_token(v))?,
                    None => parse_i64(first_token(body))?,
                };
                EventKind::SyscallExit { call, ret }
            } else {
                return None;
            }
        }
    };
    Some(kind)
}

/// `name=value` pairs of event content. A pair starts at a word of identifier
/// characters followed by `=` at the start or after a blank; its value runs to the
/// next pair (so values may contain blanks: `comm=Web Content pid=12`).
struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn parse(s: &'a str) -> Fields<'a> {
        let bytes = s.as_bytes();
        let mut starts: Vec<(usize, usize)> = Vec::new(); // (name start, '=' position)
        let mut i = 0;
        while i < bytes.len() {
            let at_word_start = i == 0 || bytes.get(i - 1).is_some_and(|b| b.is_ascii_whitespace());
            if at_word_start
                && bytes
                    .get(i)
                    .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            {
                let mut j = i;
                while bytes
                    .get(j)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'=') {
                    starts.push((i, j));
                    i = j + 1;
                    continue;
                }
                i = j.max(i + 1);
                continue;
            }
            i += 1;
        }
        let mut pairs = Vec::with_capacity(starts.len());
        for (k, (name_at, eq)) in starts.iter().enumerate() {
            let end = starts.get(k + 1).map(|(n, _)| *n).unwrap_or(s.len());
            if let (Some(name), Some(value)) = (s.get(*name_at..*eq), s.get(eq + 1..end)) {
                pairs.push((name, value.trim_end()));
            }
        }
        Fields { pairs }
    }

    fn str(&self, name: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    /// A numeric field (decimal, `-decimal` or `0x` hex), from the first word of its value.
    fn int<T: TryFrom<i128>>(&self, name: &str) -> Option<T> {
        let tok = first_token(self.str(name)?);
        let v = match tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
            Some(h) => i128::from(u64::from_str_radix(h, 16).ok()?),
            None => tok.parse::<i128>().ok()?,
        };
        T::try_from(v).ok()
    }
}

fn first_token(s: &str) -> &str {
    s.split_whitespace().next().unwrap_or("")
}

/// Decimal, `-decimal` or `0x` hex (hex wraps into `i64`: pointers, negative returns).
fn parse_i64(s: &str) -> Option<i64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(|v| v as i64);
    }
    if let Ok(v) = s.parse::<i64>() {
        return Some(v);
    }
    s.parse::<u64>().ok().map(|v| v as i64)
}

/// A 32-bit field printed signed or unsigned (`state=4294967295` or `state=-1`).
fn u32_wrapping(s: &str) -> Option<u32> {
    let v = parse_i64(first_token(s))?;
    if (i64::from(i32::MIN)..=i64::from(u32::MAX)).contains(&v) {
        Some(v as u32)
    } else {
        None
    }
}

/// A function pointer: an address when printed as one (`0xffffffff8f192b80`), 0 when
/// only the symbol is printed (`tick_sched_timer/0x0`, `hrtimer_wakeup`).
fn function_addr(s: &str) -> u64 {
    let tok = first_token(s);
    tok.strip_prefix("0x")
        .filter(|h| !h.contains('/') && !h.contains('+'))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .unwrap_or(0)
}

/// `HRTIMER_MODE_*` from `mode=0`, `mode=ABS|PINNED` or `mode=HRTIMER_MODE_REL`.
fn hrtimer_mode(s: &str) -> Option<u32> {
    let tok = first_token(s);
    if let Some(v) = parse_i64(tok) {
        return u32::try_from(v).ok();
    }
    let mut mode = 0;
    for part in tok.split('|') {
        mode |= match part.strip_prefix("HRTIMER_MODE_").unwrap_or(part) {
            "ABS" => 0,
            "REL" => 1,
            "PINNED" => 2,
            "SOFT" => 4,
            "HARD" => 8,
            "ABS_PINNED" => 2,
            "REL_PINNED" => 3,
            "ABS_SOFT" => 4,
            "REL_SOFT" => 5,
            "ABS_PINNED_SOFT" => 6,
            "REL_PINNED_SOFT" => 7,
            "ABS_HARD" => 8,
            "REL_HARD" => 9,
            "ABS_PINNED_HARD" => 10,
            "REL_PINNED_HARD" => 11,
            _ => return None,
        };
    }
    Some(mode)
}

/// `prev_comm:prev_pid [prio] S ==> next_comm:next_pid [prio]` (trace-cmd's plugin) or
/// `prev_comm=.. prev_pid=.. prev_prio=.. prev_state=S|0x1 [==>] next_comm=..`.
fn sched_switch(body: &str) -> Option<EventKind> {
    if body.starts_with("prev_comm=") {
        let f = Fields::parse(body);
        let state = f.str("prev_state")?;
        let state = state.strip_suffix("==>").unwrap_or(state).trim_end();
        return Some(EventKind::SchedSwitch {
            prev_comm: Comm::new(f.str("prev_comm")?),
            prev_pid: f.int("prev_pid")?,
            prev_prio: f.int("prev_prio")?,
            prev_state: kernel_state(state)?,
            next_comm: Comm::new(f.str("next_comm")?),
            next_pid: f.int("next_pid")?,
            next_prio: f.int("next_prio")?,
        });
    }
    let mut from = 0;
    while let Some(off) = body.get(from..)?.find(" ==> ") {
        let at = from + off;
        from = at + 1;
        let (left, right) = (body.get(..at)?, body.get(at + 5..)?);
        let Some((prev, state)) = left.rsplit_once(' ') else {
            continue;
        };
        let (
            Some((prev_comm, prev_pid, prev_prio)),
            Some((next_comm, next_pid, next_prio)),
            Some(state),
        ) = (
            task_prio(prev),
            task_prio(right.trim()),
            plugin_state(state),
        )
        else {
            continue;
        };
        return Some(EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state: state,
            next_comm,
            next_pid,
            next_prio,
        });
    }
    None
}

/// `comm:pid [prio]`.
fn task_prio(s: &str) -> Option<(Comm, i32, i32)> {
    let (task, prio) = s.trim().rsplit_once(" [")?;
    let prio = prio.strip_suffix(']')?.trim().parse().ok()?;
    let (comm, pid) = task.rsplit_once(':')?;
    Some((Comm::new(comm.trim_start()), pid.parse().ok()?, prio))
}

/// trace-cmd's `sched_switch` plugin state: letters for bits 0..7 (`SDTtZXxW`), `R` for none.
fn plugin_state(s: &str) -> Option<TaskState> {
    if s == "R" {
        return Some(TaskState(0));
    }
    let mut bits = 0;
    for letter in s.split('|') {
        let bit = "SDTtZXxW".find(letter).filter(|_| letter.len() == 1)?;
        bits |= 1 << bit;
    }
    Some(TaskState(bits))
}

/// The kernel's `prev_state`: a number (raw output) or its print format's letters
/// (`S`, `D|W`, `R+`), with modern kernels' bit values.
fn kernel_state(s: &str) -> Option<TaskState> {
    if let Some(v) = parse_i64(s) {
        return Some(TaskState(v as u64));
    }
    let (letters, plus) = match s.strip_suffix('+') {
        Some(l) => (l, TASK_REPORT_MAX),
        None => (s, 0),
    };
    let mut bits = plus;
    for letter in letters.split('|') {
        bits |= match letter {
            "R" => 0,
            "S" => 0x1,
            "D" => 0x2,
            "T" => 0x4,
            "t" => 0x8,
            "X" => 0x10,
            "Z" => 0x20,
            "P" => 0x40,
            "I" => 0x80,
            // Letters of kernels before 4.14.
            "x" => 0x40,
            "K" => 0x80,
            "W" => 0x100,
            "N" => 0x400,
            _ => return None,
        };
    }
    Some(TaskState(bits))
}

/// `comm=.. pid=.. prio=.. [success=..] target_cpu=..` or the plugin's
/// `comm:pid [prio] [success=1] CPU:003`.
fn wakeup(body: &str) -> Option<(Comm, i32, i32, i32)> {
    if body.starts_with("comm=") {
        let f = Fields::parse(body);
        return Some((
            Comm::new(f.str("comm")?),
            f.int("pid")?,
            f.int("prio")?,
            f.int("target_cpu")?,
        ));
    }
    let (head, cpu) = body.rsplit_once(" CPU:")?;
    let cpu = first_token(cpu).parse().ok()?;
    let head = match head.rsplit_once(" success=") {
        Some((h, _)) => h,
        None => head,
    };
    let (comm, pid, prio) = task_prio(head)?;
    Some((comm, pid, prio, cpu))
}

/// The target CPU of an IPI event when it has a single-CPU field (`ipi_send_cpu`'s
/// `cpu`); masks are not interpreted, as in the binary decoder.
fn ipi_target(body: &str) -> Option<u32> {
    let f = Fields::parse(body);
    f.int("cpu").or_else(|| f.int("target_cpu"))
}

/// `work struct 0x..: function sym` (print format) or `work=0x.. function=sym` (raw).
fn work_and_function(body: &str) -> Option<(u64, u64)> {
    let f = Fields::parse(body);
    if let Some(work) = f.str("work") {
        let work = parse_i64(first_token(work))? as u64;
        return Some((work, f.str("function").map(function_addr).unwrap_or(0)));
    }
    let rest = body.strip_prefix("work struct")?.trim_start();
    let (work, rest) = match rest.split_once(':') {
        Some((w, r)) => (w, r),
        None => (rest, ""),
    };
    let work = parse_i64(work.trim())? as u64;
    let function = rest
        .trim_start()
        .strip_prefix("function")
        .map(function_addr)
        .unwrap_or(0);
    Some((work, function))
}

/// A marker's text: `ip=.. buf=TEXT` (raw) or `SYMBOL_OR_ADDR: TEXT` (print format).
fn print_text(body: &str) -> Option<String> {
    if body.starts_with("ip=") {
        let (_, text) = body.split_once(" buf=")?;
        return Some(text.to_owned());
    }
    match body.split_once(": ") {
        Some((ip, text)) if !ip.is_empty() && !ip.contains(char::is_whitespace) => {
            Some(text.to_owned())
        }
        _ => Some(body.strip_suffix(':').unwrap_or(body).to_owned()),
    }
}

fn syscall_kind(name: &str) -> Option<SyscallKind> {
    match name {
        "futex" => Some(SyscallKind::Futex),
        "nanosleep" => Some(SyscallKind::Nanosleep),
        "clock_nanosleep" => Some(SyscallKind::ClockNanosleep),
        _ => None,
    }
}

/// Arguments in the call's order, from raw `name=value` fields or the print format's
/// `name: value, ...`. Newer kernels print only the arguments a futex op uses
/// (`op=FUTEX_WAIT_BITSET|FUTEX_PRIVATE_FLAG uaddr=.. val=.. utime=.. val3=..`): an
/// argument missing before a printed one reads as 0, trailing ones are left out.
fn syscall_args(call: SyscallKind, body: &str) -> Option<Vec<u64>> {
    let names: &[&str] = match call {
        SyscallKind::Futex => &["uaddr", "op", "val", "utime", "uaddr2", "val3"],
        SyscallKind::Nanosleep => &["rqtp", "rmtp"],
        SyscallKind::ClockNanosleep => &["which_clock", "flags", "rqtp", "rmtp"],
    };
    let f = Fields::parse(body);
    let colon_pairs: Vec<(&str, &str)> = body
        .split(", ")
        .filter_map(|p| p.split_once(": "))
        .map(|(n, v)| (n.trim(), v.trim()))
        .collect();
    let mut args = Vec::new();
    for name in names {
        let v = f
            .str(name)
            .or_else(|| colon_pairs.iter().find(|(n, _)| n == name).map(|(_, v)| *v));
        let Some(v) = v else {
            args.push(None);
            continue;
        };
        let tok = first_token(v);
        let value = match parse_i64(tok) {
            Some(x) => x as u64,
            None if *name == "op" => futex_op(tok)?,
            None => return None,
        };
        args.push(Some(value));
    }
    while args.last() == Some(&None) {
        args.pop();
    }
    if args.is_empty() {
        return None;
    }
    Some(args.into_iter().map(|a| a.unwrap_or(0)).collect())
}

/// `FUTEX_WAKE|FUTEX_PRIVATE_FLAG` as newer kernels print `op`.
fn futex_op(s: &str) -> Option<u64> {
    let mut op = 0;
    for part in s.split('|') {
        op |= match part {
            "FUTEX_WAIT" => 0,
            "FUTEX_WAKE" => 1,
            "FUTEX_FD" => 2,
            "FUTEX_REQUEUE" => 3,
            "FUTEX_CMP_REQUEUE" => 4,
            "FUTEX_WAKE_OP" => 5,
            "FUTEX_LOCK_PI" => 6,
            "FUTEX_UNLOCK_PI" => 7,
            "FUTEX_TRYLOCK_PI" => 8,
            "FUTEX_WAIT_BITSET" => 9,
            "FUTEX_WAKE_BITSET" => 10,
            "FUTEX_WAIT_REQUEUE_PI" => 11,
            "FUTEX_CMP_REQUEUE_PI" => 12,
            "FUTEX_LOCK_PI2" => 13,
            "FUTEX_PRIVATE_FLAG" => 128,
            "FUTEX_CLOCK_REALTIME" => 256,
            _ => return None,
        };
    }
    Some(op)
}

/// An event without a typed form: `name=value` fields when the content is made of them.
fn generic(name: &str, body: &str) -> EventKind {
    let body = body
        .strip_prefix("[FAILED TO PARSE]")
        .map(str::trim_start)
        .unwrap_or(body);
    let starts_with_pair = {
        let word = body
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("");
        !word.is_empty() && body.as_bytes().get(word.len()) == Some(&b'=')
    };
    let fields = if body.is_empty() {
        Vec::new()
    } else if starts_with_pair {
        Fields::parse(body)
            .pairs
            .into_iter()
            .map(|(n, v)| (n.to_owned(), field_value(v)))
            .collect()
    } else {
        vec![("text".to_owned(), FieldValue::Str(body.to_owned()))]
    };
    EventKind::Generic(GenericEvent {
        system: String::new(),
        name: name.to_owned(),
        fields,
    })
}

fn field_value(v: &str) -> FieldValue {
    if let Some(inner) = v.strip_prefix("ARRAY[").and_then(|r| r.strip_suffix(']')) {
        let bytes: Option<Vec<u8>> = if inner.trim().is_empty() {
            Some(Vec::new())
        } else {
            inner
                .split(',')
                .map(|b| u8::from_str_radix(b.trim(), 16).ok())
                .collect()
        };
        if let Some(bytes) = bytes {
            return FieldValue::Bytes(bytes);
        }
    }
    if let Some(h) = v.strip_prefix("0x") {
        if let Ok(x) = u64::from_str_radix(h, 16) {
            return FieldValue::Unsigned(x);
        }
    }
    if v.starts_with('-') {
        if let Ok(x) = v.parse::<i64>() {
            return FieldValue::Signed(x);
        }
    } else if let Ok(x) = v.parse::<u64>() {
        return FieldValue::Unsigned(x);
    }
    FieldValue::Str(v.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Vec<Result<Event>> {
        TextReader::new(text.as_bytes()).collect()
    }

    fn one(line: &str) -> Event {
        match read_all(line).into_iter().next() {
            Some(Ok(ev)) => ev,
            other => panic!("no event from {line:?}: {other:?}"),
        }
    }

    #[test]
    fn event_line_names_where_each_event_began() {
        let text = "cpus=2\n\
            \x20 <idle>-0     [001]   100.000001: irq_handler_entry:   irq=19 name=eth0\n\
            \x20 <idle>-0     [001]   100.000002: print:                tracing_mark_write: one\n\
            \x20two\n\
            \x20 <idle>-0     [000]   100.000003: irq_handler_exit:    irq=19 ret=handled\n";
        let mut r = TextReader::new(text.as_bytes());
        let mut lines = Vec::new();
        while let Some(ev) = r.next_event() {
            ev.unwrap();
            lines.push(r.event_line());
        }
        assert_eq!(lines, [2, 3, 5]);
    }

    #[test]
    fn plugin_sched_switch_with_colon_and_space_in_comm() {
        let ev = one(" MainTaskLow:422-422   [003] 22150.357850: sched_switch:         Web Content:9:422 [79] D|W ==> swapper/3:0 [120]");
        assert_eq!((ev.ts, ev.cpu, ev.pid), (Nanos(22_150_357_850_000), 3, 422));
        let EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } = ev.kind
        else {
            panic!("{:?}", ev.kind)
        };
        assert_eq!(prev_comm.to_str_lossy(), "Web Content:9");
        assert_eq!(
            (prev_pid, prev_prio, prev_state),
            (422, 79, TaskState(0x82))
        );
        assert_eq!(
            (next_comm.to_str_lossy().as_ref(), next_pid, next_prio),
            ("swapper/3", 0, 120)
        );
    }

    #[test]
    fn raw_and_kernel_sched_switch() {
        let raw = one("  sched_profiler-123   [000]    23.564483: sched_switch:          prev_comm=sched profiler prev_pid=123 prev_prio=120 prev_state=0x1000 next_comm=rcu_sched next_pid=8 next_prio=120");
        let EventKind::SchedSwitch {
            prev_comm,
            prev_state,
            next_pid,
            ..
        } = raw.kind
        else {
            panic!()
        };
        assert_eq!(
            (prev_comm.to_str_lossy().as_ref(), prev_state, next_pid),
            ("sched profiler", TaskState(0x1000), 8)
        );
        // The kernel's own `trace` file: TGID column, latency flags, letters with `+`.
        let k = one("          <idle>-0       (-------) [001] d..2.  1234.567890123: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R+ ==> next_comm=foo bar next_pid=77 next_prio=19");
        assert_eq!((k.ts, k.cpu, k.pid), (Nanos(1_234_567_890_123), 1, 0));
        let EventKind::SchedSwitch {
            prev_state,
            next_comm,
            next_prio,
            ..
        } = k.kind
        else {
            panic!()
        };
        assert!(prev_state.is_runnable());
        assert_eq!(prev_state, TaskState(TASK_REPORT_MAX));
        assert_eq!(
            (next_comm.to_str_lossy().as_ref(), next_prio),
            ("foo bar", 19)
        );
    }

    #[test]
    fn wakeups_in_three_renderings() {
        for line in [
            "bash-1181  [000]  1464.181413: sched_wakeup:         rcu_preempt:8 [120] success=1 CPU:002",
            "bash-1181  [000]  1464.181413: sched_wakeup:          comm=rcu_preempt pid=8 prio=120 success=1 target_cpu=002",
            "bash-1181  [000]  1464.181413: sched_wakeup:         rcu_preempt:8 [120] CPU:002",
        ] {
            let ev = one(line);
            assert_eq!(
                ev.kind,
                EventKind::SchedWakeup { comm: Comm::new("rcu_preempt"), pid: 8, prio: 120, target_cpu: 2 },
                "{line}"
            );
        }
        let ev = one("<idle>-0 [000] 2457.732430: sched_waking: comm=MainTaskHigh:33 pid=338 prio=79 target_cpu=000");
        assert!(matches!(
            ev.kind,
            EventKind::SchedWaking {
                pid: 338,
                prio: 79,
                target_cpu: 0,
                ..
            }
        ));
    }

    #[test]
    fn irq_softirq_timer_idle() {
        let k = |l: &str| one(&format!("bash-1 [000] 1.000001: {l}")).kind;
        assert_eq!(
            k("irq_handler_entry: irq=16 name=gp timer"),
            EventKind::IrqHandlerEntry {
                irq: 16,
                name: "gp timer".into()
            }
        );
        assert_eq!(
            k("irq_handler_exit: irq=16 ret=handled"),
            EventKind::IrqHandlerExit { irq: 16, ret: 1 }
        );
        assert_eq!(
            k("irq_handler_exit: irq=16 ret=unhandled"),
            EventKind::IrqHandlerExit { irq: 16, ret: 0 }
        );
        assert_eq!(
            k("irq_handler_exit:  irq=16 ret=1"),
            EventKind::IrqHandlerExit { irq: 16, ret: 1 }
        );
        assert_eq!(
            k("softirq_entry: vec=3 [action=NET_RX]"),
            EventKind::SoftirqEntry { vec: 3 }
        );
        assert_eq!(
            k("softirq_raise: vec=9"),
            EventKind::SoftirqRaise { vec: 9 }
        );
        assert_eq!(
            k("hrtimer_expire_entry: hrtimer=0xffff9e84bda53160 now=414708219292 function=tick_sched_timer/0x0"),
            EventKind::HrtimerExpireEntry { hrtimer: 0xffff9e84bda53160, now: 414708219292, function: 0 }
        );
        assert_eq!(
            k("hrtimer_expire_entry:  hrtimer=0x10 now=5 function=0xffffffff8f192b80"),
            EventKind::HrtimerExpireEntry {
                hrtimer: 0x10,
                now: 5,
                function: 0xffffffff8f192b80
            }
        );
        assert_eq!(
            k("hrtimer_start: hrtimer=0x10 function=hrtimer_wakeup expires=556832306760 softexpires=556832306760 mode=ABS|PINNED"),
            EventKind::HrtimerStart { hrtimer: 0x10, function: 0, expires: 556832306760, softexpires: 556832306760, mode: Some(2) }
        );
        assert_eq!(
            k("cpu_idle: state=4294967295 cpu_id=0"),
            EventKind::CpuIdle {
                state: u32::MAX,
                cpu_id: 0
            }
        );
        assert_eq!(
            k("cpu_idle: state=-1 cpu_id=1"),
            EventKind::CpuIdle {
                state: u32::MAX,
                cpu_id: 1
            }
        );
        assert_eq!(
            k("ipi_send_cpu: cpu=1 callsite=wakeup_preempt+0x92 callback=0x0"),
            EventKind::Ipi {
                name: "ipi_send_cpu".into(),
                target_cpu: Some(1)
            }
        );
        assert_eq!(
            k("ipi_raise: target_mask=00000000,00000002 (Function call interrupts)"),
            EventKind::Ipi {
                name: "ipi_raise".into(),
                target_cpu: None
            }
        );
        assert_eq!(
            k("workqueue_execute_start: work struct 0xffff9300fda5e780: function vmstat_update"),
            EventKind::WorkqueueExecuteStart {
                work: 0xffff9300fda5e780,
                function: 0
            }
        );
        assert_eq!(
            k("workqueue_execute_end:  work=0x20 function=vmstat_update"),
            EventKind::WorkqueueExecuteEnd { work: 0x20 }
        );
    }

    #[test]
    fn syscalls() {
        let k = |l: &str| one(&format!("a-1 [001] 1.5: {l}")).kind;
        let futex = EventKind::SyscallEnter {
            call: SyscallKind::Futex,
            args: vec![0x7fc878beba4c, 0x81, 0x7fffffff],
        };
        assert_eq!(k("sys_enter_futex: op=FUTEX_WAKE|FUTEX_PRIVATE_FLAG uaddr=0x7fc878beba4c val=2147483647"), futex);
        assert_eq!(
            k("sys_enter_futex: __syscall_nr=202 uaddr=0x7fc878beba4c op=0x00000081 val=0x7fffffff utime=0x0 uaddr2=0x3 val3=0x0"),
            EventKind::SyscallEnter { call: SyscallKind::Futex, args: vec![0x7fc878beba4c, 0x81, 0x7fffffff, 0, 3, 0] }
        );
        assert_eq!(
            k("sys_enter_clock_nanosleep: which_clock: 0x00000001, flags: 0x00000001, rqtp: 0x7f7bf30118d0, rmtp: 0x00000000"),
            EventKind::SyscallEnter { call: SyscallKind::ClockNanosleep, args: vec![1, 1, 0x7f7bf30118d0, 0] }
        );
        assert_eq!(
            k("sys_exit_futex: 0xfffffffffffffff5"),
            EventKind::SyscallExit {
                call: SyscallKind::Futex,
                ret: -11
            }
        );
        assert_eq!(
            k("sys_exit_futex:  __syscall_nr=202 ret=0x0"),
            EventKind::SyscallExit {
                call: SyscallKind::Futex,
                ret: 0
            }
        );
    }

    #[test]
    fn markers_and_multiline_print() {
        let evs = read_all(
            "cpus=6\n\
             ls-4734  [002] 106439.675571: bprint:               select_task_rq_fair: fig: cpu=0\n gid=4\n\
             sh-6975  [000] 259445.530471: print:                 ip=tracing_mark_write buf=hit latency threshold (120 > 100)\n\
             sh-6975  [000] 259445.530472: print:                tracing_mark_write: a: b\n\n",
        );
        let texts: Vec<String> = evs
            .into_iter()
            .map(|e| match e.map(|e| e.kind) {
                Ok(EventKind::Print { text }) => text,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [
                "fig: cpu=0\n gid=4",
                "hit latency threshold (120 > 100)",
                "a: b"
            ]
        );
    }

    #[test]
    fn a_dropped_events_notice_belongs_to_the_event_after_it() {
        let text = "cpus=2\n\
            <idle>-0     [001]   683.783929: ipi_send_cpu:         cpu=0 callsite=x callback=y\n\
            CPU:1 [42841 EVENTS DROPPED]\n\
            <idle>-0     [001]   684.118674: ipi_send_cpu:         cpu=0 callsite=x callback=y\n\
            <idle>-0     [001]   684.118675: ipi_send_cpu:         cpu=0 callsite=x callback=y\n\
            CPU:0 [EVENTS DROPPED]\n\
            <idle>-0     [000]   684.118676: ipi_send_cpu:         cpu=0 callsite=x callback=y\n\
            CPU:1 [LOST 17 EVENTS]\n\
            <idle>-0     [001]   684.118677: ipi_send_cpu:         cpu=0 callsite=x callback=y\n";
        let mut r = TextReader::new(text.as_bytes());
        let mut seen = Vec::new();
        while let Some(ev) = r.next_event() {
            seen.push((ev.unwrap().ts.0, r.event_dropped()));
        }
        assert_eq!(
            seen,
            [
                (683_783_929_000, None),
                (684_118_674_000, Some(42841)),
                (684_118_675_000, None),
                (684_118_676_000, Some(0)),
                (684_118_677_000, Some(17)),
            ]
        );
    }

    #[test]
    fn kernel_stack_lines_become_a_field_and_library_noise_is_skipped() {
        let text = "cpus=4\n\
            trace-cmd-86689 [003] 11370.816179: kernel_stack:         <stack trace >\n\
            => try_to_wake_up (ffffffffa8902e5f)\n\
            => default_wake_function (ffffffffa890327a)\n\
            MainTaskLow:422-422   [000] 22150.357851: 9p_protocol_dump:     clnt 1 P9_TGETATTR(tag = 0)\n\
            000: ARG TYPE NOT FIELD BUT 2\n\
            rtwhy-fixture-11542: CPU:0 [EVENTS DROPPED]\n\
            CPU:1 [LOST 17 EVENTS]\n";
        let mut r = TextReader::new(text.as_bytes());
        let Some(Ok(Event {
            kind: EventKind::Generic(g),
            ..
        })) = r.next_event()
        else {
            panic!()
        };
        assert_eq!(g.name, "kernel_stack");
        assert_eq!(
            g.field("stack"),
            Some(&FieldValue::Str(
                "try_to_wake_up (ffffffffa8902e5f)\ndefault_wake_function (ffffffffa890327a)"
                    .into()
            ))
        );
        let Some(Ok(Event {
            kind: EventKind::Generic(g),
            pid: 422,
            ..
        })) = r.next_event()
        else {
            panic!()
        };
        assert_eq!(
            g.field("text"),
            Some(&FieldValue::Str("clnt 1 P9_TGETATTR(tag = 0)".into()))
        );
        assert!(r.next_event().is_none());
        assert_eq!(r.skipped_lines(), 1);
        assert_eq!(r.cpus(), Some(4));
    }

    #[test]
    fn generic_fields_and_failed_to_parse() {
        let ev = one("<idle>-0 [000] 2457.732425: cobalt_tick_shot:     [FAILED TO PARSE] secs=556 nsecs=941853007 delta=-5 who=a b");
        let EventKind::Generic(g) = ev.kind else {
            panic!()
        };
        assert_eq!(
            g.fields,
            vec![
                ("secs".to_owned(), FieldValue::Unsigned(556)),
                ("nsecs".to_owned(), FieldValue::Unsigned(941853007)),
                ("delta".to_owned(), FieldValue::Signed(-5)),
                ("who".to_owned(), FieldValue::Str("a b".into())),
            ]
        );
        let ev = one("trace-cmd-86689 [003] 11370.816179: kernel_stack:          size=22 caller=ARRAY[5f, 2e, ff]");
        let EventKind::Generic(g) = ev.kind else {
            panic!()
        };
        assert_eq!(
            g.field("caller"),
            Some(&FieldValue::Bytes(vec![0x5f, 0x2e, 0xff]))
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1464.179964"), Some(1_464_179_964_000));
        assert_eq!(parse_timestamp("1.000000001"), Some(1_000_000_001));
        assert_eq!(
            parse_timestamp("303280081900681"),
            Some(303_280_081_900_681)
        );
        assert_eq!(parse_timestamp("1.5"), Some(1_500_000_000));
        assert_eq!(parse_timestamp("1.0000000001"), None);
        assert_eq!(parse_timestamp("99999999999999999999.1"), None);
        assert_eq!(parse_timestamp("1a.2"), None);
        // A counter clock value glued to the CPU column.
        let ev = one(" qemu-system-x86-533825 [005]303280081900681: kvm_vcpu_wakeup:       ns=3279293 waited=1 valid=1");
        assert_eq!(
            (ev.ts, ev.pid, ev.cpu),
            (Nanos(303_280_081_900_681), 533825, 5)
        );
    }

    #[test]
    fn headers_and_instance_prefix() {
        let text = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:2\n#\n\
            #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
            rtwhy-fixture-11542:            count-11454 [000]   300.380705: sched_switch:         count:11454 [120] D ==> swapper/0:0 [120]\n\
            version = 6\n";
        let mut r = TextReader::new(text.as_bytes());
        let ev = r.next_event().and_then(|e| e.ok());
        assert_eq!(
            ev.map(|e| (e.pid, e.kind.name().to_owned())),
            Some((11454, "sched_switch".to_owned()))
        );
        assert!(r.next_event().is_none());
        assert_eq!((r.cpus(), r.skipped_lines()), (Some(2), 0));
    }

    #[test]
    fn not_a_trace_fails_once_then_ends() {
        let text = "hello\nthis is\nnot\na\ntrace\nat all\nbash-1 [000] 1.0: print: x: y\n";
        let mut r = TextReader::new(text.as_bytes());
        assert!(matches!(
            r.next_event(),
            Some(Err(Error::Text { line: 6, .. }))
        ));
        assert!(r.next_event().is_none());
        // A short preamble (a pasted command line) is tolerated.
        let evs = read_all("$ trace-cmd report\ncpus=1\nbash-1 [000] 1.0: print: x: y\n");
        assert_eq!(evs.len(), 1);
        assert!(evs[0].is_ok());
    }

    #[test]
    fn detection() {
        assert!(looks_like_report_text(b"cpus=4\n"));
        assert!(looks_like_report_text(b"# tracer: nop\n#\n"));
        assert!(looks_like_report_text(
            b"cpus=1\n      bash-1181  [000]  1464.179964: irq_handler_entry:    irq=16 na"
        ));
        assert!(!looks_like_report_text(b"\x17\x08\x44tracing6\0\0\0"));
        assert!(!looks_like_report_text(b"hello world\n"));
        assert!(!looks_like_report_text(
            "\u{e9}t\u{e9}".as_bytes().get(..3).unwrap_or_default()
        ));
    }

    #[test]
    fn long_lines_are_cut_not_buffered() {
        let mut text = String::from("bash-1 [000] 1.0: print: tracing_mark_write: ");
        text.push_str(&"x".repeat(MAX_LINE * 3));
        text.push('\n');
        let evs = read_all(&text);
        let Some(Ok(Event {
            kind: EventKind::Print { text },
            ..
        })) = evs.first()
        else {
            panic!()
        };
        assert!(text.len() < MAX_LINE);
    }

    #[test]
    fn never_panics_on_odd_lines() {
        let odd = [
            "",
            "[",
            "]",
            "-[0]",
            "a-[0] 1.0: x:",
            "a-1 [0] 1.0:",
            "a-1 [0] :",
            "a-1 [99999999999] 1.0: x: y",
            "a-1 [0] 1.0: sched_switch: ==> ",
            "a-1 [0] 1.0: sched_switch: x:1 [ ==> y:2 [3]",
            "a-1 [0] 1.0: sched_switch: x:1 [1] Q ==> y:2 [3]",
            "a-1 [0] 1.0: sched_wakeup: CPU:",
            "a-1 [0] 1.0: sched_wakeup: :x [1] CPU:1",
            "a-1 [0] 1.0: ipi_raise: target_mask=,,,ffffffff,1",
            "a-1 [0] 1.0: print: ip=",
            "a-1 [0] 1.0: x: =",
            "a-1 [0] 1.0: x: ARRAY[",
            "a-1 [0] 1.0: x: a=ARRAY[zz]",
            "a-1 (1 [0] 1.0: x: y",
            "é-1 [0] 1.0: é: é=é",
            "a-1 [0] 1.0: sys_exit_futex:",
            "a-1 [0] 1.0: workqueue_execute_start: work struct",
            "CPU:",
            "CPU:1 [",
        ];
        for line in odd {
            let _ = read_all(line);
            let _ = looks_like_report_text(line.as_bytes());
        }
        let all = odd.join("\n");
        let _ = read_all(&all);
    }

    /// Every prefix of real lines, and lines with bytes replaced by a cheap generator:
    /// the reader must return, never panic.
    #[test]
    fn never_panics_on_mutated_lines() {
        let samples = [
            " MainTaskLow:422-422   [000] 22150.357850: sched_switch:         a:1 [79] D|W ==> b:0 [120]",
            "rtwhy-fixture-1: <idle>-0 (-------) [001] d..2.  1.5: sched_switch: prev_comm=a prev_pid=1 prev_prio=2 prev_state=R+ ==> next_comm=b next_pid=3 next_prio=4",
            "bash-1181  [000]  1464.181413: sched_wakeup:         rcu_preempt:8 [120] success=1 CPU:000",
            "x-1 [005]303280081900681: sys_enter_futex: op=FUTEX_WAKE|FUTEX_PRIVATE_FLAG uaddr=0x7f val=2",
            "x-1 [0] 1.0: hrtimer_start: hrtimer=0xffff function=f/0x0 expires=1 softexpires=2 mode=ABS|HARD",
            "x-1 [0] 1.0: kernel_stack: size=22 caller=ARRAY[5f, 2e]",
            "x-1 [0] 1.0: workqueue_execute_start: work struct 0x10: function f",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        let alphabet = b" -[]():=0x9aZ|.>\xff\n";
        for sample in samples {
            let bytes = sample.as_bytes();
            for cut in 0..=bytes.len() {
                let _ = TextReader::new(&bytes[..cut]).count();
            }
            for _ in 0..300 {
                let mut m = bytes.to_vec();
                for _ in 0..1 + next() % 4 {
                    let at = next() % m.len();
                    m[at] = alphabet[next() % alphabet.len()];
                }
                let _ = TextReader::new(m.as_slice()).count();
                let _ = looks_like_report_text(&m);
            }
        }
    }
}
