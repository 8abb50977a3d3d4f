//! Diagnoses as text, Markdown and the `rtwhy.analysis/2` JSON document.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use rtwhy_analyze::Analysis;
use rtwhy_model::{human_duration, Cause, Confidence, Spike, SpikeSource};
use serde_json::{json, Value};

use crate::analyze::Source;

/// The JSON schema's name and version; bump the version on incompatible changes.
pub const SCHEMA: &str = "rtwhy.analysis/2";

/// `ns` as a percentage of the spike's latency.
fn percent_of(ns: u64, s: &Spike) -> f64 {
    ns as f64 * 100.0 / s.latency_ns.max(1) as f64
}

fn source_note(s: &Spike) -> String {
    match &s.source {
        SpikeSource::BreachMarker {
            reported_ns,
            late_timer,
        } => {
            format!(
                "rtwhy breach marker, detector measured {}{}",
                human_duration(*reported_ns),
                late_timer
                    .as_ref()
                    .map(|l| format!("; {}", l.describe()))
                    .unwrap_or_default()
            )
        }
        SpikeSource::ToolMarker { text, .. } => format!("marker: \"{text}\""),
        SpikeSource::Events => "found from the events".to_string(),
    }
}

fn counts_by_cause(a: &Analysis) -> BTreeMap<Cause, usize> {
    let mut m = BTreeMap::new();
    for s in &a.spikes {
        *m.entry(s.primary.cause).or_default() += 1;
    }
    m
}

fn summary_line(a: &Analysis) -> String {
    if a.spikes.is_empty() {
        let worst = a
            .victims
            .first()
            .map(|v| {
                format!(
                    "; worst measured: {} {} over {} wake-ups",
                    v.task,
                    human_duration(v.max_ns),
                    v.episodes
                )
            })
            .unwrap_or_else(|| {
                "; no real-time thread (or named thread) woke up in the trace".to_string()
            });
        return format!("no spikes above {}{worst}", human_duration(a.threshold.0));
    }
    let causes: Vec<String> = counts_by_cause(a)
        .iter()
        .map(|(c, n)| format!("{n} {c}"))
        .collect();
    let worst = a.spikes.iter().max_by_key(|s| s.latency_ns);
    format!(
        "{} spike{} above {}: {}{}",
        a.spikes.len(),
        if a.spikes.len() == 1 { "" } else { "s" },
        human_duration(a.threshold.0),
        causes.join(", "),
        worst
            .map(|w| format!(
                "; worst {} for {} at {} ({})",
                human_duration(w.latency_ns),
                w.victim,
                w.end,
                w.primary.cause
            ))
            .unwrap_or_default()
    )
}

/// Text for people: the verdict first, then the breakdown, evidence and fix.
pub fn text(out: &mut dyn Write, a: &Analysis, src: &Source) -> Result<()> {
    writeln!(
        out,
        "rtwhy analyze {} ({}, {} events)",
        src.path, src.kind, a.events
    )?;
    for s in &a.spikes {
        writeln!(out)?;
        writeln!(
            out,
            "spike {} at {}: {} on CPU {} was {} late ({}; {})",
            s.id,
            s.end,
            s.victim,
            s.cpu,
            human_duration(s.latency_ns),
            s.kind.describe(),
            source_note(s)
        )?;
        writeln!(
            out,
            "  cause: {} ({} confidence, {:.0}%): {}",
            s.primary.cause,
            s.primary.confidence.as_str(),
            s.primary.share * 100.0,
            s.primary.summary
        )?;
        for c in &s.contributors {
            writeln!(
                out,
                "  also:  {} ({:.0}%): {}",
                c.cause,
                c.share * 100.0,
                c.summary
            )?;
        }
        writeln!(
            out,
            "  breakdown of {} from {} to {}:",
            human_duration(s.latency_ns),
            s.start,
            s.end
        )?;
        for item in &s.breakdown {
            writeln!(
                out,
                "    {:>10}  {:>5.1}%  {}",
                human_duration(item.ns),
                percent_of(item.ns, s),
                item.bucket
            )?;
        }
        if !s.evidence.is_empty() {
            writeln!(out, "  evidence:")?;
            for e in &s.evidence {
                writeln!(out, "    {}", e.line)?;
                writeln!(out, "        ^ {}", e.why)?;
            }
        }
        if !s.remediation.is_empty() {
            writeln!(out, "  fix:")?;
            for r in &s.remediation {
                writeln!(out, "    - {r}")?;
            }
        }
        if s.primary.cause == Cause::Unknown || s.primary.confidence == Confidence::Low {
            for m in &s.missing {
                writeln!(out, "  missing: {m}")?;
            }
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", summary_line(a))?;
    if a.spikes_dropped > 0 {
        writeln!(
            out,
            "{} more spikes were found but not diagnosed (limit {}); raise --threshold or narrow with --comm",
            a.spikes_dropped,
            rtwhy_analyze::MAX_SPIKES
        )?;
    }
    Ok(())
}

/// The `rtwhy.analysis/2` document.
pub fn json(a: &Analysis, src: &Source) -> Value {
    let seen = a.seen;
    json!({
        "schema": SCHEMA,
        "trace": {
            "path": src.path,
            "kind": src.kind,
            "events": a.events,
            "first_ts_ns": a.span.map(|s| s.0),
            "last_ts_ns": a.span.map(|s| s.1),
            "warnings": src.warnings,
        },
        "threshold_ns": a.threshold.0,
        "facts": a.facts,
        "events_present": {
            "sched_switch": seen.switch,
            "sched_waking": seen.waking,
            "sched_wakeup": seen.wakeup,
            "irq_handler_entry": seen.irq,
            "softirq_entry": seen.softirq,
            "hrtimer_start": seen.hrtimer_start,
            "hrtimer_expire_entry": seen.hrtimer,
            "cpu_idle": seen.cpu_idle,
            "cpu_frequency": seen.cpu_frequency,
            "sys_enter_futex": seen.futex,
            "sched_pi_setprio": seen.pi_setprio,
        },
        "victims": a.victims.iter().map(|v| json!({
            "tid": v.task.tid,
            "comm": v.task.comm,
            "prio": v.task.prio,
            "policy": v.task.policy(),
            "wakeups": v.episodes,
            "max_latency_ns": v.max_ns,
        })).collect::<Vec<_>>(),
        "summary": {
            "spikes": a.spikes.len(),
            "spikes_not_diagnosed": a.spikes_dropped,
            "by_cause": counts_by_cause(a).iter().map(|(c, n)| (c.as_str().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "worst_latency_ns": a.spikes.iter().map(|s| s.latency_ns).max(),
        },
        "spikes": a.spikes,
    })
}
