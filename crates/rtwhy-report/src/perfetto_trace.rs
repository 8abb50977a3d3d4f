//! A whole trace in Perfetto's protobuf trace format (`protos/perfetto/trace/trace.proto`
//! in the perfetto repository), streamed: events go in one at a time and leave as
//! `FtraceEventBundle` packets, one CPU's bundle at a time, so memory stays bounded by
//! the number of CPUs whatever the trace's size. Perfetto's importer fills its sched,
//! thread_state, irq and ftrace_event tables from these bundles as it does from its own
//! recordings; thread names come from the `comm` fields of the scheduler events (a
//! trace.dat records no thread group ids, so no process is invented).
//!
//! Events Perfetto has a typed message for are written as that message; the rest as
//! `GenericFtraceEvent` with their named fields. rtwhy's spikes are written at the end
//! as track events: one track per victim thread under an `rtwhy` track, a slice from
//! when the thread should have run to when it ran, named with the verdict, with the
//! cause, confidence, summary, breakdown and evidence as debug annotations, and an
//! instant event at each piece of evidence.
//!
//! ```
//! use rtwhy_model::{Event, EventKind, Nanos};
//! use rtwhy_report::perfetto_trace::PerfettoWriter;
//!
//! let mut w = PerfettoWriter::new(Vec::new());
//! w.push(&Event {
//!     ts: Nanos(1_000),
//!     cpu: 0,
//!     pid: 0,
//!     kind: EventKind::SoftirqEntry { vec: 3 },
//! }, false).unwrap();
//! let (bytes, stats) = w.finish(&[], &[]).unwrap();
//! assert_eq!(stats.typed, 1);
//! assert!(!bytes.is_empty());
//! ```

use std::io::{self, Write};

use rtwhy_model::{Event, EventKind, FieldValue, Spike, TimerlatSpike};

use crate::protobuf::{bytes, int, len_prefix, uint};

/// A CPU's bundle is written once its events take this many bytes: large enough that
/// the bundle header costs nothing.
const BUNDLE_BYTES: usize = 64 * 1024;
/// All CPUs' pending events together: past this every bundle is written and its buffer
/// freed, so a trace from a machine with thousands of CPUs stays within it too.
const PENDING_BYTES: usize = 16 << 20;

/// CPUs above this number are not a real machine's but a damaged record's.
pub const MAX_CPUS: u32 = 8192;

/// `trusted_packet_sequence_id` of the packets rtwhy's annotations are on.
const RTWHY_SEQUENCE: u64 = 0x7274_7768;
/// Track uuid of the `rtwhy` parent track; victims' tracks follow it.
const RTWHY_TRACK: u64 = 0x7274_7768_7900_0000;

/// Field numbers of the schema (`protos/perfetto/trace/...`), by message.
mod field {
    /// `Trace.packet`.
    pub const TRACE_PACKET: u32 = 1;
    /// `TracePacket`.
    pub const PACKET_FTRACE_EVENTS: u32 = 1;
    pub const PACKET_TIMESTAMP: u32 = 8;
    pub const PACKET_SEQUENCE_ID: u32 = 10;
    pub const PACKET_TRACK_EVENT: u32 = 11;
    pub const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub const PACKET_TRACK_DESCRIPTOR: u32 = 60;
    /// `FtraceEventBundle`.
    pub const BUNDLE_CPU: u32 = 1;
    pub const BUNDLE_EVENT: u32 = 2;
    pub const BUNDLE_LOST_EVENTS: u32 = 3;
    /// `FtraceEvent`.
    pub const EVENT_TIMESTAMP: u32 = 1;
    pub const EVENT_PID: u32 = 2;
    /// `FtraceEvent` oneof members.
    pub const PRINT: u32 = 3;
    pub const SCHED_SWITCH: u32 = 4;
    pub const CPU_FREQUENCY: u32 = 11;
    pub const CPU_IDLE: u32 = 13;
    pub const SCHED_WAKEUP: u32 = 17;
    pub const SCHED_WAKING: u32 = 20;
    pub const SOFTIRQ_ENTRY: u32 = 24;
    pub const SOFTIRQ_EXIT: u32 = 25;
    pub const SOFTIRQ_RAISE: u32 = 26;
    pub const IRQ_HANDLER_ENTRY: u32 = 36;
    pub const IRQ_HANDLER_EXIT: u32 = 37;
    pub const WORKQUEUE_EXECUTE_END: u32 = 57;
    pub const WORKQUEUE_EXECUTE_START: u32 = 58;
    pub const SCHED_WAKEUP_NEW: u32 = 114;
    pub const GENERIC: u32 = 327;
    pub const SCHED_PI_SETPRIO: u32 = 353;
    pub const SCHED_MIGRATE_TASK: u32 = 491;
    pub const HRTIMER_START: u32 = 551;
    pub const HRTIMER_CANCEL: u32 = 552;
    pub const HRTIMER_EXPIRE_ENTRY: u32 = 553;
    pub const HRTIMER_EXPIRE_EXIT: u32 = 554;
    /// `GenericFtraceEvent` and its `Field`.
    pub const GENERIC_NAME: u32 = 1;
    pub const GENERIC_FIELD: u32 = 2;
    pub const FIELD_NAME: u32 = 1;
    pub const FIELD_STR: u32 = 3;
    pub const FIELD_INT: u32 = 4;
    pub const FIELD_UINT: u32 = 5;
    /// `TrackDescriptor`.
    pub const TRACK_UUID: u32 = 1;
    pub const TRACK_NAME: u32 = 2;
    pub const TRACK_PARENT: u32 = 5;
    pub const TRACK_DESCRIPTION: u32 = 14;
    /// `TrackEvent`.
    pub const TE_ANNOTATION: u32 = 4;
    pub const TE_TYPE: u32 = 9;
    pub const TE_TRACK: u32 = 11;
    pub const TE_CATEGORY: u32 = 22;
    pub const TE_NAME: u32 = 23;
    /// `DebugAnnotation`.
    pub const DA_UINT: u32 = 3;
    pub const DA_STRING: u32 = 6;
    pub const DA_NAME: u32 = 10;
}

/// `TrackEvent.Type`.
const SLICE_BEGIN: u64 = 1;
const SLICE_END: u64 = 2;
const INSTANT: u64 = 3;
/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;

/// What a conversion wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfettoStats {
    /// Events written as Perfetto's typed messages.
    pub typed: u64,
    /// Events written as `GenericFtraceEvent`.
    pub generic: u64,
    /// Events not written: no format in the file (no name), or a CPU above [`MAX_CPUS`].
    pub skipped: u64,
    /// `FtraceEventBundle` packets.
    pub bundles: u64,
    /// Bundles marked `lost_events` (the kernel dropped events before them).
    pub lost_bundles: u64,
    /// Spikes written as annotations.
    pub spikes: u64,
    /// Timerlat periods written as annotations.
    pub timerlat_periods: u64,
}

#[derive(Debug, Default)]
struct CpuBundle {
    /// Encoded `FtraceEventBundle.event` fields.
    events: Vec<u8>,
    /// The kernel dropped events before the first one.
    lost: bool,
}

/// Streams events into a Perfetto protobuf trace on `W`.
#[derive(Debug)]
pub struct PerfettoWriter<W: Write> {
    out: W,
    cpus: Vec<CpuBundle>,
    /// Scratch buffers reused for every event, so encoding does not allocate.
    event: Vec<u8>,
    body: Vec<u8>,
    sub: Vec<u8>,
    /// Bytes in all CPUs' pending bundles.
    pending: usize,
    stats: PerfettoStats,
}

impl<W: Write> PerfettoWriter<W> {
    /// A writer that has written nothing yet.
    pub fn new(out: W) -> PerfettoWriter<W> {
        PerfettoWriter {
            out,
            cpus: Vec::new(),
            event: Vec::with_capacity(256),
            body: Vec::with_capacity(256),
            sub: Vec::with_capacity(64),
            pending: 0,
            stats: PerfettoStats::default(),
        }
    }

    /// Adds one event; `lost_before` says the kernel dropped events on its CPU just
    /// before it. Events of one CPU must come in time order (a trace.dat's do).
    pub fn push(&mut self, ev: &Event, lost_before: bool) -> io::Result<()> {
        if ev.cpu >= MAX_CPUS {
            self.stats.skipped += 1;
            return Ok(());
        }
        self.body.clear();
        let Some(member) = encode_kind(&mut self.body, &mut self.sub, &ev.kind) else {
            self.stats.skipped += 1;
            return Ok(());
        };
        if member == field::GENERIC {
            self.stats.generic += 1;
        } else {
            self.stats.typed += 1;
        }
        self.event.clear();
        uint(&mut self.event, field::EVENT_TIMESTAMP, ev.ts.0);
        // FtraceEvent.pid is uint32; kernel pids are never negative.
        uint(&mut self.event, field::EVENT_PID, u64::from(ev.pid as u32));
        bytes(&mut self.event, member, &self.body);

        let cpu = ev.cpu as usize;
        if self.cpus.len() <= cpu {
            self.cpus.resize_with(cpu + 1, CpuBundle::default);
        }
        if lost_before {
            self.flush_cpu(cpu)?;
        }
        if let Some(b) = self.cpus.get_mut(cpu) {
            b.lost |= lost_before;
            let before = b.events.len();
            bytes(&mut b.events, field::BUNDLE_EVENT, &self.event);
            self.pending += b.events.len() - before;
            if b.events.len() >= BUNDLE_BYTES {
                self.flush_cpu(cpu)?;
            }
        }
        if self.pending >= PENDING_BYTES {
            for c in 0..self.cpus.len() {
                self.flush_cpu(c)?;
                if let Some(b) = self.cpus.get_mut(c) {
                    b.events = Vec::new();
                }
            }
        }
        Ok(())
    }

    /// Writes CPU `cpu`'s pending events as one bundle packet.
    fn flush_cpu(&mut self, cpu: usize) -> io::Result<()> {
        let Some(b) = self.cpus.get_mut(cpu) else {
            return Ok(());
        };
        if b.events.is_empty() {
            return Ok(());
        }
        let mut head = Vec::with_capacity(16);
        uint(&mut head, field::BUNDLE_CPU, cpu as u64);
        if b.lost {
            uint(&mut head, field::BUNDLE_LOST_EVENTS, 1);
            self.stats.lost_bundles += 1;
        }
        let bundle_len = head.len() + b.events.len();
        let mut packet_head = Vec::with_capacity(8);
        len_prefix(&mut packet_head, field::PACKET_FTRACE_EVENTS, bundle_len);
        let mut outer = Vec::with_capacity(8);
        len_prefix(
            &mut outer,
            field::TRACE_PACKET,
            packet_head.len() + bundle_len,
        );
        self.out.write_all(&outer)?;
        self.out.write_all(&packet_head)?;
        self.out.write_all(&head)?;
        self.out.write_all(&b.events)?;
        self.pending = self.pending.saturating_sub(b.events.len());
        b.events.clear();
        b.lost = false;
        self.stats.bundles += 1;
        Ok(())
    }

    /// Writes the pending bundles and `spikes` as annotations, and returns the output
    /// and what was written.
    pub fn finish(
        mut self,
        spikes: &[Spike],
        periods: &[TimerlatSpike],
    ) -> io::Result<(W, PerfettoStats)> {
        for cpu in 0..self.cpus.len() {
            self.flush_cpu(cpu)?;
        }
        let mut packets = annotation_packets(spikes);
        packets.extend(timerlat_packets(periods, packets.is_empty()));
        for packet in packets {
            let mut outer = Vec::with_capacity(8);
            len_prefix(&mut outer, field::TRACE_PACKET, packet.len());
            self.out.write_all(&outer)?;
            self.out.write_all(&packet)?;
        }
        self.stats.spikes = spikes.len() as u64;
        self.stats.timerlat_periods = periods.len() as u64;
        self.out.flush()?;
        Ok((self.out, self.stats))
    }
}

/// Encodes `kind` as the body of its `FtraceEvent` oneof member into `buf` and returns
/// the member's field number; `None` for an event with no name (no format in the file).
fn encode_kind(buf: &mut Vec<u8>, sub: &mut Vec<u8>, kind: &EventKind) -> Option<u32> {
    let str_ = |buf: &mut Vec<u8>, f: u32, s: &[u8]| bytes(buf, f, s);
    let member = match kind {
        EventKind::SchedSwitch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
        } => {
            str_(buf, 1, prev_comm.as_bytes());
            int(buf, 2, i64::from(*prev_pid));
            int(buf, 3, i64::from(*prev_prio));
            int(buf, 4, prev_state.0 as i64);
            str_(buf, 5, next_comm.as_bytes());
            int(buf, 6, i64::from(*next_pid));
            int(buf, 7, i64::from(*next_prio));
            field::SCHED_SWITCH
        }
        EventKind::SchedWaking {
            comm,
            pid,
            prio,
            target_cpu,
        }
        | EventKind::SchedWakeup {
            comm,
            pid,
            prio,
            target_cpu,
        }
        | EventKind::SchedWakeupNew {
            comm,
            pid,
            prio,
            target_cpu,
        } => {
            str_(buf, 1, comm.as_bytes());
            int(buf, 2, i64::from(*pid));
            int(buf, 3, i64::from(*prio));
            int(buf, 5, i64::from(*target_cpu));
            match kind {
                EventKind::SchedWaking { .. } => field::SCHED_WAKING,
                EventKind::SchedWakeup { .. } => field::SCHED_WAKEUP,
                _ => field::SCHED_WAKEUP_NEW,
            }
        }
        EventKind::SchedMigrateTask {
            comm,
            pid,
            prio,
            orig_cpu,
            dest_cpu,
        } => {
            str_(buf, 1, comm.as_bytes());
            int(buf, 2, i64::from(*pid));
            int(buf, 3, i64::from(*prio));
            int(buf, 4, i64::from(*orig_cpu));
            int(buf, 5, i64::from(*dest_cpu));
            field::SCHED_MIGRATE_TASK
        }
        EventKind::SchedPiSetprio {
            comm,
            pid,
            oldprio,
            newprio,
        } => {
            str_(buf, 1, comm.as_bytes());
            int(buf, 2, i64::from(*newprio));
            int(buf, 3, i64::from(*oldprio));
            int(buf, 4, i64::from(*pid));
            field::SCHED_PI_SETPRIO
        }
        EventKind::IrqHandlerEntry { irq, name } => {
            int(buf, 1, i64::from(*irq));
            str_(buf, 2, name.as_bytes());
            field::IRQ_HANDLER_ENTRY
        }
        EventKind::IrqHandlerExit { irq, ret } => {
            int(buf, 1, i64::from(*irq));
            int(buf, 2, i64::from(*ret));
            field::IRQ_HANDLER_EXIT
        }
        EventKind::SoftirqEntry { vec } => {
            uint(buf, 1, u64::from(*vec));
            field::SOFTIRQ_ENTRY
        }
        EventKind::SoftirqExit { vec } => {
            uint(buf, 1, u64::from(*vec));
            field::SOFTIRQ_EXIT
        }
        EventKind::SoftirqRaise { vec } => {
            uint(buf, 1, u64::from(*vec));
            field::SOFTIRQ_RAISE
        }
        EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
            mode,
        } => {
            uint(buf, 1, *hrtimer);
            uint(buf, 2, *function);
            int(buf, 3, *expires);
            int(buf, 4, *softexpires);
            if let Some(m) = mode {
                uint(buf, 5, u64::from(*m));
            }
            field::HRTIMER_START
        }
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => {
            uint(buf, 1, *hrtimer);
            int(buf, 2, *now);
            uint(buf, 3, *function);
            field::HRTIMER_EXPIRE_ENTRY
        }
        EventKind::HrtimerExpireExit { hrtimer } => {
            uint(buf, 1, *hrtimer);
            field::HRTIMER_EXPIRE_EXIT
        }
        EventKind::HrtimerCancel { hrtimer } => {
            uint(buf, 1, *hrtimer);
            field::HRTIMER_CANCEL
        }
        EventKind::CpuIdle { state, cpu_id } => {
            uint(buf, 1, u64::from(*state));
            uint(buf, 2, u64::from(*cpu_id));
            field::CPU_IDLE
        }
        EventKind::CpuFrequency { state, cpu_id } => {
            uint(buf, 1, u64::from(*state));
            uint(buf, 2, u64::from(*cpu_id));
            field::CPU_FREQUENCY
        }
        EventKind::WorkqueueExecuteStart { work, function } => {
            uint(buf, 1, *work);
            uint(buf, 2, *function);
            field::WORKQUEUE_EXECUTE_START
        }
        EventKind::WorkqueueExecuteEnd { work } => {
            uint(buf, 1, *work);
            field::WORKQUEUE_EXECUTE_END
        }
        EventKind::Print { text } => {
            str_(buf, 2, text.as_bytes());
            field::PRINT
        }
        // Perfetto's IPI and syscall messages want fields the model does not keep (the
        // reason string, the syscall number): written generic, with what is known.
        EventKind::Ipi { name, target_cpu } => {
            generic_head(buf, name);
            if let Some(t) = target_cpu {
                generic_field(buf, sub, "target_cpu", &FieldValue::Unsigned(u64::from(*t)));
            }
            field::GENERIC
        }
        EventKind::SyscallEnter { args, .. } => {
            generic_head(buf, kind.name());
            const ARGS: [&str; 6] = ["arg0", "arg1", "arg2", "arg3", "arg4", "arg5"];
            for (name, a) in ARGS.iter().zip(args) {
                generic_field(buf, sub, name, &FieldValue::Unsigned(*a));
            }
            field::GENERIC
        }
        EventKind::SyscallExit { ret, .. } => {
            generic_head(buf, kind.name());
            generic_field(buf, sub, "ret", &FieldValue::Signed(*ret));
            field::GENERIC
        }
        EventKind::Generic(g) => {
            if g.name.is_empty() {
                return None;
            }
            generic_head(buf, &g.name);
            for (name, value) in &g.fields {
                generic_field(buf, sub, name, value);
            }
            field::GENERIC
        }
    };
    Some(member)
}

fn generic_head(buf: &mut Vec<u8>, name: &str) {
    bytes(buf, field::GENERIC_NAME, name.as_bytes());
}

/// One `GenericFtraceEvent.Field`; byte arrays (no string, no number) are left out,
/// as Perfetto's generic field has no bytes value.
fn generic_field(buf: &mut Vec<u8>, sub: &mut Vec<u8>, name: &str, value: &FieldValue) {
    sub.clear();
    bytes(sub, field::FIELD_NAME, name.as_bytes());
    match value {
        FieldValue::Signed(v) => int(sub, field::FIELD_INT, *v),
        FieldValue::Unsigned(v) => uint(sub, field::FIELD_UINT, *v),
        FieldValue::Str(s) => bytes(sub, field::FIELD_STR, s.as_bytes()),
        FieldValue::Bytes(_) => return,
    }
    bytes(buf, field::GENERIC_FIELD, sub);
}

/// A `DebugAnnotation` with a string value.
fn annotation_str(te: &mut Vec<u8>, name: &str, value: &str) {
    let mut da = Vec::new();
    bytes(&mut da, field::DA_NAME, name.as_bytes());
    bytes(&mut da, field::DA_STRING, value.as_bytes());
    bytes(te, field::TE_ANNOTATION, &da);
}

/// A `DebugAnnotation` with an unsigned value.
fn annotation_uint(te: &mut Vec<u8>, name: &str, value: u64) {
    let mut da = Vec::new();
    bytes(&mut da, field::DA_NAME, name.as_bytes());
    uint(&mut da, field::DA_UINT, value);
    bytes(te, field::TE_ANNOTATION, &da);
}

/// A `TracePacket` on rtwhy's sequence holding `te` as a track event at `ts`.
fn track_event_packet(ts: u64, te: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(te.len() + 24);
    uint(&mut p, field::PACKET_TIMESTAMP, ts);
    uint(&mut p, field::PACKET_SEQUENCE_ID, RTWHY_SEQUENCE);
    bytes(&mut p, field::PACKET_TRACK_EVENT, te);
    p
}

fn track_descriptor_packet(uuid: u64, parent: Option<u64>, name: &str, desc: &str) -> Vec<u8> {
    let mut td = Vec::new();
    uint(&mut td, field::TRACK_UUID, uuid);
    if let Some(p) = parent {
        uint(&mut td, field::TRACK_PARENT, p);
    }
    bytes(&mut td, field::TRACK_NAME, name.as_bytes());
    bytes(&mut td, field::TRACK_DESCRIPTION, desc.as_bytes());
    let mut p = Vec::new();
    uint(&mut p, field::PACKET_SEQUENCE_ID, RTWHY_SEQUENCE);
    bytes(&mut p, field::PACKET_TRACK_DESCRIPTOR, &td);
    p
}

/// The descriptor packet of a top-level track of rtwhy's annotations; `first`: the
/// first packet of their sequence, which clears its incremental state.
fn root_track_packet(uuid: u64, name: &str, desc: &str, first: bool) -> Vec<u8> {
    let mut p = track_descriptor_packet(uuid, None, name, desc);
    if first {
        uint(
            &mut p,
            field::PACKET_SEQUENCE_FLAGS,
            SEQ_INCREMENTAL_STATE_CLEARED,
        );
    }
    p
}

/// Opens a slice on `track` at `start` (its name and annotations already in `te`) and
/// closes it at `end`: the two timed packets.
fn slice_packets(track: u64, mut te: Vec<u8>, start: u64, end: u64) -> [(u64, Vec<u8>); 2] {
    let mut begin = Vec::new();
    uint(&mut begin, field::TE_TYPE, SLICE_BEGIN);
    uint(&mut begin, field::TE_TRACK, track);
    begin.append(&mut te);
    let mut stop = Vec::new();
    uint(&mut stop, field::TE_TYPE, SLICE_END);
    uint(&mut stop, field::TE_TRACK, track);
    [
        (start, track_event_packet(start, &begin)),
        (end, track_event_packet(end, &stop)),
    ]
}

/// The descriptor packets of the `rtwhy` track and one track per victim thread, then
/// every spike's slice and evidence instants in time order.
fn annotation_packets(spikes: &[Spike]) -> Vec<Vec<u8>> {
    if spikes.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    out.push(root_track_packet(
        RTWHY_TRACK,
        "rtwhy",
        "Latency spikes rtwhy found, each with its verdict (rtwhy analyze)",
        true,
    ));
    let mut victims: Vec<i32> = spikes.iter().map(|s| s.victim.tid).collect();
    victims.sort_unstable();
    victims.dedup();
    let track_of = |tid: i32| {
        let at = victims.binary_search(&tid).unwrap_or(0) as u64;
        RTWHY_TRACK + 1 + at
    };
    for &tid in &victims {
        let Some(s) = spikes.iter().find(|s| s.victim.tid == tid) else {
            continue;
        };
        out.push(track_descriptor_packet(
            track_of(tid),
            Some(RTWHY_TRACK),
            &format!("rtwhy: {} {}", s.victim.comm, tid),
            &format!("Spikes of {}", s.victim),
        ));
    }
    let mut timed: Vec<(u64, Vec<u8>)> = Vec::new();
    for s in spikes {
        let track = track_of(s.victim.tid);
        let mut te = Vec::new();
        bytes(&mut te, field::TE_CATEGORY, b"rtwhy");
        let name = format!(
            "spike {}: {} late {} ({})",
            s.id,
            s.victim.comm,
            crate::human_duration(s.latency_ns),
            s.primary.cause
        );
        bytes(&mut te, field::TE_NAME, name.as_bytes());
        annotation_str(&mut te, "cause", s.primary.cause.as_str());
        annotation_str(&mut te, "confidence", s.primary.confidence.as_str());
        annotation_str(&mut te, "summary", &s.primary.summary);
        annotation_uint(&mut te, "latency_ns", s.latency_ns);
        annotation_str(&mut te, "victim", &s.victim.to_string());
        annotation_uint(&mut te, "cpu", u64::from(s.cpu));
        annotation_str(&mut te, "kind", s.kind.describe());
        for c in &s.contributors {
            annotation_str(
                &mut te,
                "contributor",
                &format!("{}: {}", c.cause, c.summary),
            );
        }
        for b in &s.breakdown {
            annotation_str(
                &mut te,
                "breakdown",
                &format!("{}: {}", b.bucket, crate::human_duration(b.ns)),
            );
        }
        for m in &s.missing {
            annotation_str(&mut te, "missing", m);
        }
        timed.extend(slice_packets(track, te, s.start.0, s.end.0));
        for e in &s.evidence {
            let mut te = Vec::new();
            uint(&mut te, field::TE_TYPE, INSTANT);
            uint(&mut te, field::TE_TRACK, track);
            bytes(&mut te, field::TE_CATEGORY, b"rtwhy");
            bytes(&mut te, field::TE_NAME, e.why.as_bytes());
            annotation_str(&mut te, "line", &e.line);
            annotation_uint(&mut te, "spike", u64::from(s.id));
            timed.push((e.ts.0, track_event_packet(e.ts.0, &te)));
        }
    }
    timed.sort_by_key(|(ts, _)| *ts);
    out.extend(timed.into_iter().map(|(_, p)| p));
    out
}

/// The track of the timerlat periods; each CPU's periods on a child track, numbered on
/// from it.
const TIMERLAT_TRACK: u64 = 0x7274_7768_7974_0000;

/// The timerlat periods over the threshold (rtla/timerlat traces) as slices, one track per
/// CPU, from the timer's expected expiry for the period's latency, each with its verdict.
/// `first`: these are the first packets of the annotation sequence (no spike came
/// before), so the first clears its incremental state.
fn timerlat_packets(periods: &[TimerlatSpike], first: bool) -> Vec<Vec<u8>> {
    if periods.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    out.push(root_track_packet(
        TIMERLAT_TRACK,
        "rtwhy timerlat",
        "Timerlat periods over the threshold, each with its verdict (rtwhy analyze)",
        first,
    ));
    let mut cpus: Vec<u32> = periods.iter().map(|p| p.cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let track_of = |cpu: u32| TIMERLAT_TRACK + 1 + u64::from(cpu);
    for &cpu in &cpus {
        out.push(track_descriptor_packet(
            track_of(cpu),
            Some(TIMERLAT_TRACK),
            &format!("rtwhy: timerlat CPU {cpu}"),
            &format!("Timerlat periods of CPU {cpu}"),
        ));
    }
    let mut timed: Vec<(u64, Vec<u8>)> = Vec::new();
    for p in periods {
        let mut te = Vec::new();
        bytes(&mut te, field::TE_CATEGORY, b"rtwhy");
        let name = format!(
            "timerlat period {}: CPU {} late {} ({})",
            p.id,
            p.cpu,
            crate::human_duration(p.latency_ns),
            p.primary.cause
        );
        bytes(&mut te, field::TE_NAME, name.as_bytes());
        annotation_str(&mut te, "cause", p.primary.cause.as_str());
        annotation_str(&mut te, "confidence", p.primary.confidence.as_str());
        annotation_str(&mut te, "summary", &p.primary.summary);
        annotation_uint(&mut te, "latency_ns", p.latency_ns);
        annotation_uint(&mut te, "seqnum", p.seqnum);
        annotation_uint(&mut te, "cpu", u64::from(p.cpu));
        let start = p.expected.0;
        let end = start.saturating_add(p.latency_ns);
        timed.extend(slice_packets(track_of(p.cpu), te, start, end));
    }
    timed.sort_by_key(|(ts, _)| *ts);
    out.extend(timed.into_iter().map(|(_, p)| p));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::{Comm, Nanos, TaskState};

    fn switch(ts: u64, cpu: u32) -> Event {
        Event {
            ts: Nanos(ts),
            cpu,
            pid: 7,
            kind: EventKind::SchedSwitch {
                prev_comm: Comm::new("a"),
                prev_pid: 7,
                prev_prio: 120,
                prev_state: TaskState(1),
                next_comm: Comm::new("b"),
                next_pid: 8,
                next_prio: -1,
            },
        }
    }

    #[test]
    fn a_bundle_is_written_per_cpu_once_full_and_at_the_end() {
        let mut w = PerfettoWriter::new(Vec::new());
        let n = 10_000u64;
        for i in 0..n {
            w.push(&switch(i, (i % 2) as u32), false).unwrap();
        }
        let (out, stats) = w.finish(&[], &[]).unwrap();
        assert_eq!(stats.typed, n);
        // Each event is ~40 bytes: 5000 per CPU is ~200 KiB, more than one bundle each.
        assert!(stats.bundles >= 6, "{stats:?}");
        assert!(out.len() > (n as usize) * 30);
    }

    #[test]
    fn many_cpus_share_one_bound_on_pending_events() {
        let mut w = PerfettoWriter::new(Vec::new());
        // 40-byte events on 4096 CPUs, 200 each: 32 MiB if every CPU kept its own bundle.
        for i in 0..200u64 {
            for cpu in 0..4096 {
                w.push(&switch(i, cpu), false).unwrap();
                assert!(w.pending < PENDING_BYTES, "{} pending", w.pending);
            }
        }
        let (_, stats) = w.finish(&[], &[]).unwrap();
        assert!(stats.bundles >= 2 * 4096, "{stats:?}");
    }

    #[test]
    fn dropped_events_start_a_new_bundle_marked_lost() {
        let mut w = PerfettoWriter::new(Vec::new());
        w.push(&switch(1, 0), false).unwrap();
        w.push(&switch(2, 0), true).unwrap();
        let (_, stats) = w.finish(&[], &[]).unwrap();
        assert_eq!(stats.bundles, 2);
        assert_eq!(stats.lost_bundles, 1);
    }

    #[test]
    fn nameless_events_and_impossible_cpus_are_counted_not_written() {
        let mut w = PerfettoWriter::new(Vec::new());
        let mut e = switch(1, MAX_CPUS);
        w.push(&e, false).unwrap();
        e.cpu = 0;
        e.kind = EventKind::Generic(rtwhy_model::GenericEvent {
            system: String::new(),
            name: String::new(),
            fields: Vec::new(),
        });
        w.push(&e, false).unwrap();
        let (out, stats) = w.finish(&[], &[]).unwrap();
        assert_eq!(stats.skipped, 2);
        assert!(out.is_empty());
    }
}
