//! The `rtwhy.analysis/2` JSON document (docs/analysis-json.md), as typed structs: the
//! schema is these declarations, serialized by serde. `rtwhy analyze --format json`,
//! `rtwhy report --format json` and the recorder's per-capture `.json` all write it.
//!
//! Keys are written sorted, at every level, as the document always was: the typed
//! document is turned into a `serde_json::Value` (whose maps sort) before printing.

use std::collections::BTreeMap;

use std::io::{self, Write};

use rtwhy_model::{
    Analysis, Cause, Evidence, Finding, Spike, SpikeSummary, SystemFacts, TimerlatSpike,
};
use serde::Serialize;

use crate::sorted_spike::Sorted;
use crate::{Source, Timerlat};

/// The JSON schema's name and version ([`rtwhy_model::schema`]).
pub const SCHEMA: &str = rtwhy_model::schema::ANALYSIS;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The file analysed.
    pub trace: Trace<'a>,
    /// The latency threshold, in ns.
    pub threshold_ns: u64,
    /// The system facts the diagnosis used.
    pub facts: &'a SystemFacts,
    /// Which event types the trace holds (what a missing verdict may lack).
    pub events_present: EventsPresent,
    /// Every thread measured, worst first.
    pub victims: Vec<Victim>,
    /// Counts and the worst latency.
    pub summary: Summary,
    /// Every spike with its diagnosis.
    pub spikes: &'a [Spike],
    /// rtla's auto-analysis quantities per timerlat period; only for timerlat traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timerlat: Option<TimerlatDoc<'a>>,
}

/// `trace`: the file analysed.
#[derive(Debug, Serialize)]
pub struct Trace<'a> {
    /// As given on the command line.
    pub path: &'a str,
    /// What the file was recognised as (`trace.dat v7`, `trace-cmd report text`...).
    pub kind: &'a str,
    /// Events analysed.
    pub events: u64,
    /// The first event's time, in ns.
    pub first_ts_ns: Option<u64>,
    /// The last event's time, in ns.
    pub last_ts_ns: Option<u64>,
    /// What the reader warned about (damaged parts skipped).
    pub warnings: &'a [String],
}

/// `events_present`: one flag per event type a verdict may need.
#[derive(Debug, Serialize)]
pub struct EventsPresent {
    /// `sched:sched_switch`.
    pub sched_switch: bool,
    /// `sched:sched_waking`.
    pub sched_waking: bool,
    /// `sched:sched_wakeup`.
    pub sched_wakeup: bool,
    /// `irq:irq_handler_entry`.
    pub irq_handler_entry: bool,
    /// `irq:softirq_entry`.
    pub softirq_entry: bool,
    /// `timer:hrtimer_start`.
    pub hrtimer_start: bool,
    /// `timer:hrtimer_expire_entry`.
    pub hrtimer_expire_entry: bool,
    /// `power:cpu_idle`.
    pub cpu_idle: bool,
    /// `power:cpu_frequency`.
    pub cpu_frequency: bool,
    /// `syscalls:sys_enter_futex`.
    pub sys_enter_futex: bool,
    /// `sched:sched_pi_setprio`.
    pub sched_pi_setprio: bool,
}

/// One thread measured.
#[derive(Debug, Serialize)]
pub struct Victim {
    /// Thread id.
    pub tid: i32,
    /// Its name.
    pub comm: rtwhy_model::Comm,
    /// Kernel `prio`; `None` (null) when no event showed it.
    pub prio: Option<i32>,
    /// `FIFO/RR 80`, `OTHER nice 0`, `DEADLINE`.
    pub policy: String,
    /// Wake-ups (and preemptions) measured.
    pub wakeups: u64,
    /// Its worst latency, in ns.
    pub max_latency_ns: u64,
}

/// `summary`.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Spikes diagnosed.
    pub spikes: usize,
    /// Spikes found beyond the limit, not diagnosed.
    pub spikes_not_diagnosed: u64,
    /// Spikes per primary cause.
    pub by_cause: BTreeMap<&'static str, usize>,
    /// The worst spike's latency, in ns.
    pub worst_latency_ns: Option<u64>,
}

/// `timerlat`: the timerlat periods over the threshold (docs/rtla.md maps each field to
/// rtla's and rteval's names).
#[derive(Debug, Serialize)]
pub struct TimerlatDoc<'a> {
    /// Timerlat samples read.
    pub samples: u64,
    /// `osnoise:*` events read.
    pub osnoise_events: u64,
    /// Each period over the threshold.
    pub spikes: Vec<TimerlatPeriod<'a>>,
}

/// One timerlat period over the threshold.
#[derive(Debug, Serialize)]
pub struct TimerlatPeriod<'a> {
    /// rtwhy's number for it.
    pub id: u32,
    /// The CPU.
    pub cpu: u32,
    /// rtla's period number (`#N`).
    pub seqnum: u64,
    /// `irq` or `thread`: which latency went over.
    pub context: &'static str,
    /// When the timer was due, in ns.
    pub expected_ns: u64,
    /// The latency that went over, in ns.
    pub latency_ns: u64,
    /// IRQ latency.
    pub irq_latency_ns: Option<u64>,
    /// Thread latency.
    pub thread_latency_ns: Option<u64>,
    /// rtla's "IRQ handler delay".
    pub irq_handler_delay_ns: Option<u64>,
    /// The delay was an exit from idle.
    pub exit_from_idle: bool,
    /// rtla's "Timerlat IRQ duration".
    pub timerlat_irq_duration_ns: Option<u64>,
    /// rtla's "Blocking thread".
    pub blocking_thread: BlockingThread<'a>,
    /// rtla's "Previous IRQ interference".
    pub previous_irq_interference: Option<Noise<'a>>,
    /// Sum of `nmi`.
    pub nmi_interference_ns: u64,
    /// Sum of `irqs`.
    pub irq_interference_ns: u64,
    /// Sum of `softirqs`.
    pub softirq_interference_ns: u64,
    /// Sum of `threads`.
    pub thread_interference_ns: u64,
    /// NMI interference, each.
    pub nmi: Vec<Noise<'a>>,
    /// IRQ interference, each.
    pub irqs: Vec<Noise<'a>>,
    /// Softirq interference, each.
    pub softirqs: Vec<Noise<'a>>,
    /// Thread interference, each.
    pub threads: Vec<Noise<'a>>,
    /// The stack at the timer IRQ (rtla's `-s`), innermost first.
    pub stack: &'a [String],
    /// The verdict.
    pub primary: &'a Finding,
    /// Its evidence.
    pub evidence: &'a [Evidence],
}

/// `blocking_thread`.
#[derive(Debug, Serialize)]
pub struct BlockingThread<'a> {
    /// Its name, when the trace has it.
    pub comm: Option<&'a str>,
    /// Its pid.
    pub pid: i32,
    /// How long it ran in the period, in ns.
    pub duration_ns: u64,
}

/// One interference (an `osnoise:*` event). `start_ns` is left out of the previous
/// IRQ's entry, as rtla prints no time for it.
#[derive(Debug, Serialize)]
pub struct Noise<'a> {
    /// IRQ, softirq or thread name.
    pub name: &'a str,
    /// IRQ number, softirq vector or pid.
    pub id: i64,
    /// When it began, in ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ns: Option<u64>,
    /// How long it lasted, in ns.
    pub duration_ns: u64,
}

/// The document of `a`, read from `src`.
pub fn document<'a>(a: &'a Analysis, src: &'a Source) -> Document<'a> {
    let spikes: Vec<SpikeSummary> = a.spikes.iter().map(SpikeSummary::of).collect();
    Document {
        spikes: &a.spikes,
        ..without_spikes(a, src, &spikes)
    }
}

/// The document of `a`, read from `src`, whose spikes (summed up in `spikes`; `a.spikes`
/// is not read) are written apart: see [`write_around_spikes`].
pub fn without_spikes<'a>(
    a: &'a Analysis,
    src: &'a Source,
    spikes: &[SpikeSummary],
) -> Document<'a> {
    let seen = a.seen;
    let mut by_cause: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (cause, n) in crate::text::counts_by_cause(spikes) {
        by_cause.insert(Cause::as_str(cause), n);
    }
    Document {
        schema: SCHEMA,
        trace: Trace {
            path: &src.path,
            kind: src.kind,
            events: a.events,
            first_ts_ns: a.span.map(|s| s.0 .0),
            last_ts_ns: a.span.map(|s| s.1 .0),
            warnings: &src.warnings,
        },
        threshold_ns: a.threshold.0,
        facts: &a.facts,
        events_present: EventsPresent {
            sched_switch: seen.switch,
            sched_waking: seen.waking,
            sched_wakeup: seen.wakeup,
            irq_handler_entry: seen.irq,
            softirq_entry: seen.softirq,
            hrtimer_start: seen.hrtimer_start,
            hrtimer_expire_entry: seen.hrtimer,
            cpu_idle: seen.cpu_idle,
            cpu_frequency: seen.cpu_frequency,
            sys_enter_futex: seen.futex,
            sched_pi_setprio: seen.pi_setprio,
        },
        victims: a
            .victims
            .iter()
            .map(|v| Victim {
                tid: v.task.tid,
                comm: v.task.comm,
                prio: v.task.prio,
                policy: v.task.policy(),
                wakeups: v.episodes,
                max_latency_ns: v.max_ns,
            })
            .collect(),
        summary: Summary {
            spikes: spikes.len(),
            spikes_not_diagnosed: a.spikes_dropped,
            by_cause,
            worst_latency_ns: spikes.iter().map(|s| s.latency_ns).max(),
        },
        spikes: &[],
        timerlat: src.timerlat.as_ref().map(timerlat),
    }
}

/// The document as a JSON value with sorted keys (what is printed).
pub fn to_value(doc: &Document<'_>) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(doc)
}

/// Appends one spike as an element of the document's pretty-printed `spikes` array
/// (sorted keys, indented as the array's elements are) to `out`, without a separator:
/// what [`write_around_spikes`] puts in place. The spike is pretty-printed straight into
/// `out`, its keys in sorted order as it goes, by a formatter that indents each line as
/// it starts it.
pub fn write_spike_element(out: &mut Vec<u8>, s: &Spike) -> serde_json::Result<()> {
    write_element(out, &Sorted(s))
}

/// Appends `value`, pretty-printed as an element of the document's `spikes` array.
fn write_element(out: &mut Vec<u8>, value: &impl Serialize) -> serde_json::Result<()> {
    out.extend_from_slice(ELEMENT_INDENT);
    let mut ser = serde_json::Serializer::with_formatter(out, ElementFormatter::default());
    value.serialize(&mut ser)
}

/// How far the `spikes` array's elements are indented in the pretty-printed document.
const ELEMENT_INDENT: &[u8] = b"    ";

/// How far each level of nesting is indented in the pretty-printed document.
const LEVEL_INDENT: &[u8] = b"  ";

/// Pretty-prints as `serde_json::to_writer_pretty` does (two spaces a level, `": "`
/// between key and value, empty arrays and objects as `[]` and `{}`), with every line
/// after the first starting with [`ELEMENT_INDENT`]: an element of the document's
/// `spikes` array written on its own, without re-scanning the output for line breaks.
#[derive(Default)]
struct ElementFormatter {
    /// Nesting depth of the container being written.
    level: usize,
    /// Whether the container just closed had an element (it then ends on its own line).
    has_value: bool,
}

impl ElementFormatter {
    /// Starts a new line at the current depth.
    fn new_line<W: ?Sized + Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }

    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        w.write_all(ELEMENT_INDENT)?;
        for _ in 0..self.level {
            w.write_all(LEVEL_INDENT)?;
        }
        Ok(())
    }

    fn open<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.level = self.level.saturating_sub(1);
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(bracket)
    }
}

impl serde_json::ser::Formatter for ElementFormatter {
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.new_line(w, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.new_line(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes the pretty-printed `doc` (made by [`without_spikes`]) with `count` spikes,
/// written by `spikes` as [`write_spike_element`]s joined by `",\n"`, in its `spikes` array:
/// the same bytes as the whole document pretty-printed at once.
pub fn write_around_spikes(
    out: &mut dyn Write,
    doc: &Document<'_>,
    count: usize,
    spikes: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let text = serde_json::to_string_pretty(&to_value(doc)?)?;
    // Strings escape their line breaks, so this is the top-level key and nothing else.
    const EMPTY: &str = "\n  \"spikes\": []";
    match text.find(EMPTY) {
        Some(at) if count > 0 => {
            // Up to `[`, the spikes, then from `]` on.
            let (head, rest) = text.split_at(at + EMPTY.len() - 1);
            out.write_all(head.as_bytes())?;
            out.write_all(b"\n")?;
            spikes(out)?;
            out.write_all(b"\n  ")?;
            out.write_all(rest.as_bytes())
        }
        _ => out.write_all(text.as_bytes()),
    }
}

fn timerlat(t: &Timerlat) -> TimerlatDoc<'_> {
    TimerlatDoc {
        samples: t.samples,
        osnoise_events: t.noise_events,
        spikes: t.spikes.iter().map(period).collect(),
    }
}

fn period(s: &TimerlatSpike) -> TimerlatPeriod<'_> {
    TimerlatPeriod {
        id: s.id,
        cpu: s.cpu,
        seqnum: s.seqnum,
        context: s.context.as_str(),
        expected_ns: s.expected.0,
        latency_ns: s.latency_ns,
        irq_latency_ns: s.irq_latency_ns,
        thread_latency_ns: s.thread_latency_ns,
        irq_handler_delay_ns: s.irq_handler_delay_ns,
        exit_from_idle: s.exit_from_idle,
        timerlat_irq_duration_ns: s.timer_irq_duration_ns,
        blocking_thread: BlockingThread {
            comm: s.blocking_thread.comm.as_deref(),
            pid: s.blocking_thread.pid,
            duration_ns: s.blocking_thread.duration_ns,
        },
        previous_irq_interference: s.previous_irq.as_ref().map(|p| Noise {
            name: &p.name,
            id: p.id,
            start_ns: None,
            duration_ns: p.duration_ns,
        }),
        nmi_interference_ns: TimerlatSpike::sum(&s.nmi),
        irq_interference_ns: TimerlatSpike::sum(&s.irq),
        softirq_interference_ns: TimerlatSpike::sum(&s.softirq),
        thread_interference_ns: TimerlatSpike::sum(&s.thread),
        nmi: noise_list(&s.nmi),
        irqs: noise_list(&s.irq),
        softirqs: noise_list(&s.softirq),
        threads: noise_list(&s.thread),
        stack: &s.stack,
        primary: &s.primary,
        evidence: &s.evidence,
    }
}

fn noise_list(l: &[rtwhy_model::Interference]) -> Vec<Noise<'_>> {
    l.iter()
        .map(|i| Noise {
            name: &i.name,
            id: i.id,
            start_ns: Some(i.start.0),
            duration_ns: i.duration_ns,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_element_is_written_as_the_whole_array_prints_it() {
        let element = json!({"b": [1, {"c": "two\nlines", "e": []}], "a": {}, "d": null});
        let whole = json!({"spikes": [element, element]});
        let mut out = b"{\n  \"spikes\": [\n".to_vec();
        write_element(&mut out, &element).unwrap();
        out.extend_from_slice(b",\n");
        write_element(&mut out, &element).unwrap();
        out.extend_from_slice(b"\n  ]\n}");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string_pretty(&whole).unwrap()
        );
    }
}
