//! The timerlat tracer's samples and the `osnoise:*` events, from any reader's events.
//!
//! Both readers hand these over as [`EventKind::Generic`]: from a trace.dat with the
//! event's own fields (`seqnum`, `context`, `timer_latency`; `desc`, `vector`, `start`,
//! `duration`...), from text with `name=value` pairs (`trace-cmd report -R`) or with the
//! kernel's print format as one `text` field (rtla's saved trace, the tracefs `trace`
//! file, `trace-cmd report`):
//!
//! ```text
//! <idle>-0     [001] d.h1.   54.029328: #1 context    irq timer_latency       932 ns
//! timerlat/1-9 [001] .....   54.029337: #1 context thread timer_latency     11700 ns
//! <idle>-0     [001] d.h.. 54.029326: irq_noise: local_timer:236 start 54.029326025 duration 4875 ns
//! spin-300     [001] d..2. 54.031013: thread_noise: spin:300 start 54.026966105 duration 4031043 ns
//! ```
//!
//! The text reader names the timerlat sample line, which has no event name, `timerlat`
//! (its name under `ftrace` in trace.dat).
//!
//! ```
//! use rtwhy_decode::osnoise::osnoise_record;
//! use rtwhy_decode::text::TextReader;
//! use rtwhy_model::{OsnoiseKind, TimerlatContext};
//!
//! let text = "<idle>-0 [001] d.h1. 54.029328: #1 context    irq timer_latency       932 ns\n";
//! let ev = TextReader::new(text.as_bytes()).next_event().unwrap().unwrap();
//! let rec = osnoise_record(&ev).unwrap().unwrap();
//! assert_eq!(
//!     rec.kind,
//!     OsnoiseKind::TimerlatSample { seqnum: 1, context: TimerlatContext::Irq, latency_ns: 932 }
//! );
//! ```

use rtwhy_model::{
    Comm, Event, EventKind, FieldValue, GenericEvent, Nanos, NoiseSource, OsnoiseKind,
    OsnoiseRecord, TimerlatContext,
};

/// Why a timerlat or osnoise event could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} at {ts}: {what}")]
pub struct OsnoiseError {
    /// The event's name.
    pub name: String,
    /// Its timestamp (trace clock).
    pub ts: Nanos,
    /// What is missing or malformed.
    pub what: String,
}

/// Whether an event name is one of the records this module reads.
pub fn is_osnoise_name(name: &str) -> bool {
    matches!(
        name,
        "timerlat"
            | "irq_noise"
            | "thread_noise"
            | "softirq_noise"
            | "nmi_noise"
            | "sample_threshold"
    )
}

/// The typed record of a timerlat sample or `osnoise:*` event; `None` for any other
/// event, an error when the event is one of them but its content cannot be read (a cut
/// line, a field missing).
pub fn osnoise_record(ev: &Event) -> Option<Result<OsnoiseRecord, OsnoiseError>> {
    let EventKind::Generic(g) = &ev.kind else {
        return None;
    };
    if !is_osnoise_name(&g.name) || !(g.system.is_empty() || is_osnoise_system(&g.system)) {
        return None;
    }
    let err = |what: String| OsnoiseError {
        name: g.name.clone(),
        ts: ev.ts,
        what,
    };
    let kind = match g.field("text") {
        Some(FieldValue::Str(text)) if g.fields.len() == 1 => from_text(&g.name, text),
        _ => from_fields(g),
    };
    Some(kind.map_err(err).map(|kind| OsnoiseRecord {
        ts: ev.ts,
        cpu: ev.cpu,
        pid: ev.pid,
        kind,
    }))
}

fn is_osnoise_system(system: &str) -> bool {
    matches!(system, "osnoise" | "ftrace")
}

fn from_fields(g: &GenericEvent) -> Result<OsnoiseKind, String> {
    let uint = |name: &str| -> Result<u64, String> {
        match g.field(name) {
            Some(FieldValue::Unsigned(v)) => Ok(*v),
            Some(FieldValue::Signed(v)) => u64::try_from(*v).map_err(|_| format!("{name}={v}")),
            Some(FieldValue::Str(s)) => s.trim().parse().map_err(|_| format!("{name}={s:?}")),
            _ => Err(format!("no {name} field")),
        }
    };
    let int = |name: &str| -> Result<i64, String> {
        match g.field(name) {
            Some(FieldValue::Signed(v)) => Ok(*v),
            Some(FieldValue::Unsigned(v)) => i64::try_from(*v).map_err(|_| format!("{name}={v}")),
            Some(FieldValue::Str(s)) => s.trim().parse().map_err(|_| format!("{name}={s:?}")),
            _ => Err(format!("no {name} field")),
        }
    };
    let text = |name: &str| -> Result<String, String> {
        match g.field(name) {
            Some(FieldValue::Str(s)) => Ok(s.clone()),
            Some(FieldValue::Bytes(b)) => {
                let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
                Ok(String::from_utf8_lossy(b.get(..end).unwrap_or_default()).into_owned())
            }
            _ => Err(format!("no {name} field")),
        }
    };
    let noise = |source: NoiseSource| -> Result<OsnoiseKind, String> {
        Ok(OsnoiseKind::Noise {
            source,
            start: Nanos(uint("start")?),
            duration_ns: uint("duration")?,
        })
    };
    match g.name.as_str() {
        "timerlat" => Ok(OsnoiseKind::TimerlatSample {
            seqnum: uint("seqnum")?,
            context: context_from_number(int("context")?)?,
            latency_ns: uint("timer_latency")?,
        }),
        "irq_noise" => noise(NoiseSource::Irq {
            desc: text("desc")?,
            vector: int("vector")?,
        }),
        "softirq_noise" => noise(NoiseSource::Softirq {
            vector: u32::try_from(uint("vector")?).map_err(|_| "vector out of range")?,
        }),
        "thread_noise" => noise(NoiseSource::Thread {
            comm: Comm::new(&text("comm")?),
            pid: i32::try_from(int("pid")?).map_err(|_| "pid out of range")?,
        }),
        "nmi_noise" => noise(NoiseSource::Nmi),
        _ => Ok(OsnoiseKind::SampleThreshold {
            start: Nanos(uint("start")?),
            duration_ns: uint("duration")?,
            interference: uint("interference")?,
        }),
    }
}

/// The kernel's `context` field: 0 IRQ, 1 thread, 2 user-space return.
fn context_from_number(v: i64) -> Result<TimerlatContext, String> {
    match v {
        0 => Ok(TimerlatContext::Irq),
        1 => Ok(TimerlatContext::Thread),
        2 => Ok(TimerlatContext::User),
        _ => Err(format!("unknown context {v}")),
    }
}

fn from_text(name: &str, text: &str) -> Result<OsnoiseKind, String> {
    let text = text.trim();
    if name == "timerlat" {
        return timerlat_text(text);
    }
    if name == "sample_threshold" {
        let (start, rest) = start_duration(text)?;
        let interference = rest
            .trim()
            .strip_prefix("interference")
            .map(str::trim)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no interference count in {text:?}"))?;
        return Ok(OsnoiseKind::SampleThreshold {
            start: start.0,
            duration_ns: start.1,
            interference,
        });
    }
    // `WHO:NUMBER start S.N duration D ns`, WHO possibly with spaces or colons.
    let (who, timing) = match text.find("start ") {
        Some(i) => (
            text.get(..i).unwrap_or("").trim(),
            text.get(i..).unwrap_or(""),
        ),
        None => return Err(format!("no start time in {text:?}")),
    };
    let ((start, duration_ns), _) = start_duration(timing)?;
    let source = if name == "nmi_noise" {
        NoiseSource::Nmi
    } else {
        let (label, number) = who
            .rsplit_once(':')
            .ok_or_else(|| format!("no NAME:NUMBER before the start in {text:?}"))?;
        let number: i64 = number
            .trim()
            .parse()
            .map_err(|_| format!("{number:?} is not a number in {text:?}"))?;
        let label = label.trim();
        match name {
            "irq_noise" => NoiseSource::Irq {
                desc: label.to_owned(),
                vector: number,
            },
            "softirq_noise" => NoiseSource::Softirq {
                vector: u32::try_from(number).map_err(|_| format!("vector {number}"))?,
            },
            _ => NoiseSource::Thread {
                comm: Comm::new(label),
                pid: i32::try_from(number).map_err(|_| format!("pid {number}"))?,
            },
        }
    };
    Ok(OsnoiseKind::Noise {
        source,
        start,
        duration_ns,
    })
}

/// `start S.NNNNNNNNN duration D ns[ rest]` to ((start, duration), rest).
fn start_duration(s: &str) -> Result<((Nanos, u64), &str), String> {
    let mut words = s.split_whitespace();
    let (Some("start"), Some(start), Some("duration"), Some(dur), Some("ns")) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return Err(format!(
            "expected `start S.N duration D ns`, found {s:?} (a cut line?)"
        ));
    };
    let start = seconds_to_ns(start).ok_or_else(|| format!("bad start {start:?}"))?;
    let dur: u64 = dur.parse().map_err(|_| format!("bad duration {dur:?}"))?;
    let rest = s
        .find(" ns")
        .and_then(|i| s.get(i + 3..))
        .unwrap_or_default();
    Ok(((Nanos(start), dur), rest))
}

/// `S.NNNNNNNNN` (the osnoise events print nine fraction digits) to ns.
fn seconds_to_ns(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if frac.len() != 9 {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let frac: u64 = frac.parse().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(frac)
}

/// `#SEQ context CTX timer_latency N ns` (the tracer's own output) or
/// `seq:SEQ context:N timer_latency:N` (trace-cmd's rendering of the ftrace entry).
fn timerlat_text(text: &str) -> Result<OsnoiseKind, String> {
    if text.starts_with("seq:") {
        let mut seq = None;
        let mut ctx = None;
        let mut lat = None;
        for word in text.split_whitespace() {
            match word.split_once(':') {
                Some(("seq", v)) => seq = v.parse::<u64>().ok(),
                Some(("context", v)) => ctx = v.parse::<i64>().ok(),
                Some(("timer_latency", v)) => lat = v.parse::<u64>().ok(),
                _ => {}
            }
        }
        let (Some(seqnum), Some(ctx), Some(latency_ns)) = (seq, ctx, lat) else {
            return Err(format!(
                "expected `seq:N context:N timer_latency:N`, found {text:?} (a cut line?)"
            ));
        };
        return Ok(OsnoiseKind::TimerlatSample {
            seqnum,
            context: context_from_number(ctx)?,
            latency_ns,
        });
    }
    let mut words = text.split_whitespace();
    let (Some(seq), Some("context"), Some(ctx), Some("timer_latency"), Some(lat), Some("ns")) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return Err(format!(
            "expected `#N context irq|thread timer_latency N ns`, found {text:?} (a cut line?)"
        ));
    };
    let seqnum = seq
        .strip_prefix('#')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("bad sample number {seq:?}"))?;
    let context = match ctx {
        "irq" => TimerlatContext::Irq,
        "thread" => TimerlatContext::Thread,
        "user-ret" | "user" => TimerlatContext::User,
        other => {
            return other
                .parse::<i64>()
                .map_err(|_| format!("unknown context {other:?}"))
                .and_then(context_from_number)
                .and_then(|context| {
                    Ok(OsnoiseKind::TimerlatSample {
                        seqnum,
                        context,
                        latency_ns: lat.parse().map_err(|_| format!("bad latency {lat:?}"))?,
                    })
                })
        }
    };
    let latency_ns = lat.parse().map_err(|_| format!("bad latency {lat:?}"))?;
    Ok(OsnoiseKind::TimerlatSample {
        seqnum,
        context,
        latency_ns,
    })
}

/// Whether an event line's content (after the timestamp) is a timerlat sample, which
/// the tracer prints without an event name.
pub(crate) fn is_timerlat_sample_text(content: &str) -> bool {
    let mut chars = content.chars();
    chars.next() == Some('#') && chars.next().is_some_and(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::TextReader;

    fn rec(line: &str) -> Result<OsnoiseRecord, OsnoiseError> {
        let ev = TextReader::new(line.as_bytes())
            .next_event()
            .unwrap()
            .unwrap();
        osnoise_record(&ev).expect("an osnoise record")
    }

    fn ok(line: &str) -> OsnoiseRecord {
        rec(line).unwrap()
    }

    #[test]
    fn kernel_trace_file_lines() {
        let r =
            ok("timerlat/1-9 [001] ..... 54.029337: #1 context thread timer_latency     11700 ns");
        assert_eq!(r.pid, 9);
        assert_eq!(
            r.kind,
            OsnoiseKind::TimerlatSample {
                seqnum: 1,
                context: TimerlatContext::Thread,
                latency_ns: 11700
            }
        );
        let r = ok("<idle>-0 [001] d.h.. 54.029326: irq_noise: local_timer:236 start 54.029326025 duration 4875 ns");
        assert_eq!(
            r.kind,
            OsnoiseKind::Noise {
                source: NoiseSource::Irq {
                    desc: "local_timer".into(),
                    vector: 236
                },
                start: Nanos(54_029_326_025),
                duration_ns: 4875
            }
        );
        let r = ok("a b-300 [001] d..2. 54.031013: thread_noise: a b:c:300 start 54.026966105 duration 4031043 ns");
        assert_eq!(
            r.kind,
            OsnoiseKind::Noise {
                source: NoiseSource::Thread {
                    comm: Comm::new("a b:c"),
                    pid: 300
                },
                start: Nanos(54_026_966_105),
                duration_ns: 4_031_043
            }
        );
        let r = ok("x-1 [001] d..2. 54.031013: softirq_noise:    TIMER:1 start 54.026966105 duration 43 ns");
        assert!(matches!(
            r.kind,
            OsnoiseKind::Noise {
                source: NoiseSource::Softirq { vector: 1 },
                ..
            }
        ));
        let r = ok("x-1 [001] d.... 54.031013: nmi_noise: start 54.026966105 duration 43 ns");
        assert!(matches!(
            r.kind,
            OsnoiseKind::Noise {
                source: NoiseSource::Nmi,
                ..
            }
        ));
        let r = ok("x-1 [001] d.... 54.031013: sample_threshold: start 54.026966105 duration 43 ns interference 2");
        assert!(matches!(
            r.kind,
            OsnoiseKind::SampleThreshold {
                interference: 2,
                ..
            }
        ));
    }

    #[test]
    fn trace_cmd_rendering() {
        let r = ok("<idle>-0 [001] 214.509373: timerlat:             seq:3997\tcontext:0\ttimer_latency:2923990");
        assert_eq!(
            r.kind,
            OsnoiseKind::TimerlatSample {
                seqnum: 3997,
                context: TimerlatContext::Irq,
                latency_ns: 2_923_990
            }
        );
        assert_eq!(r.ts, Nanos(214_509_373_000));
    }

    #[test]
    fn raw_fields() {
        let r = ok("x-1 [001] 54.031013: irq_noise: desc=virtio0-requests vector=25 start=54026966105 duration=43");
        assert_eq!(
            r.kind,
            OsnoiseKind::Noise {
                source: NoiseSource::Irq {
                    desc: "virtio0-requests".into(),
                    vector: 25
                },
                start: Nanos(54_026_966_105),
                duration_ns: 43
            }
        );
    }

    #[test]
    fn cut_lines_are_errors_not_panics() {
        for line in [
            "x-1 [001] d.... 54.031013: irq_noise: local_timer:236 start 54.02",
            "x-1 [001] d.... 54.031013: irq_noise: local_timer:236 start 54.026966105 duration",
            "x-1 [001] d.... 54.031013: thread_noise: spin",
            "x-1 [001] d.... 54.031013: #12 context thread timer_lat",
            "x-1 [001] 54.031013: timerlat: seq:3997\tcontext:0\ttimer_lat",
            "x-1 [001] d.... 54.031013: #12 context thread timer_latency 12x ns",
            "x-1 [001] d.... 54.031013: sample_threshold: start 54.026966105 duration 43 ns",
        ] {
            let err = rec(line).expect_err(line);
            assert!(!err.what.is_empty());
        }
    }
}
