//! Diagnoses as text, Markdown and the `rtwhy.analysis/2` JSON document.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Result;
use rtwhy_analyze::Analysis;
use rtwhy_model::{human_duration, Cause, Confidence, Finding, Spike, SpikeSource, TimerlatSpike};
use serde_json::{json, Value};

use rtwhy_report::markdown::{self, Links};
use rtwhy_report::{Report, SpikeReport, Window};

use crate::cli::AnalysisOpts;

/// Where the analysis came from, for the report header.
pub struct Source {
    pub path: String,
    pub kind: &'static str,
    pub warnings: Vec<String>,
    /// The timerlat periods over the threshold, when the trace holds timerlat samples.
    pub timerlat: Option<Timerlat>,
}

/// What the timerlat analysis found (docs/rtla.md).
pub struct Timerlat {
    pub samples: u64,
    pub noise_events: u64,
    pub spikes: Vec<TimerlatSpike>,
}

/// Most spikes a Markdown report, SVG, Perfetto trace or bundle shows: the worst ones.
pub const MAX_SHOWN: usize = 10;

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
/// `  cause: preemption (high confidence, 93%): ...`: a spike's primary finding.
fn cause_line(out: &mut dyn Write, f: &Finding) -> Result<()> {
    writeln!(
        out,
        "  cause: {} ({} confidence, {:.0}%): {}",
        f.cause,
        f.confidence.as_str(),
        f.share * 100.0,
        f.summary
    )?;
    Ok(())
}

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
        cause_line(out, &s.primary)?;
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
    if let Some(t) = &src.timerlat {
        timerlat_text(out, t, a.threshold.0)?;
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
    let mut v = json!({
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
    });
    // Only timerlat traces carry the key, so other reports keep their shape.
    if let (Some(t), Some(map)) = (&src.timerlat, v.as_object_mut()) {
        map.insert("timerlat".into(), timerlat_json(t));
    }
    v
}

/// rtla-compatible microseconds: two decimals, as its auto-analysis prints them.
fn rtla_us(ns: u64) -> String {
    format!("{:.2} us", ns as f64 / 1000.0)
}

fn rtla_pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// The timerlat periods over the threshold, laid out like rtla's auto-analysis, each
/// with rtwhy's verdict and evidence.
pub fn timerlat_text(out: &mut dyn Write, t: &Timerlat, threshold: u64) -> Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "timerlat: {} samples, {} osnoise events; {} periods at or over {}",
        t.samples,
        t.noise_events,
        t.spikes.len(),
        human_duration(threshold)
    )?;
    for s in &t.spikes {
        let total = s.latency_ns;
        writeln!(out)?;
        writeln!(
            out,
            "timerlat spike {}: CPU {} period #{} ({} latency {}, due at {})",
            s.id,
            s.cpu,
            s.seqnum,
            s.context.as_str(),
            rtla_us(total),
            s.expected
        )?;
        if let Some(p) = &s.previous_irq {
            writeln!(
                out,
                "  Previous IRQ interference:      up to {} ({}:{})",
                rtla_us(p.duration_ns),
                p.name,
                p.id
            )?;
        }
        match s.irq_handler_delay_ns {
            Some(d) => writeln!(
                out,
                "  IRQ handler delay:   {:>16} {:>12} ({:.2} %)",
                if s.exit_from_idle && d > rtwhy_analyze::timerlat::RTLA_EXIT_FROM_IDLE_NS {
                    "(exit from idle)"
                } else {
                    ""
                },
                rtla_us(d),
                rtla_pct(d, total)
            )?,
            None => writeln!(
                out,
                "  IRQ handler delay:   not recorded (no osnoise:irq_noise of the timer IRQ)"
            )?,
        }
        match s.irq_latency_ns {
            Some(l) => writeln!(
                out,
                "  IRQ latency:                      {:>12}",
                rtla_us(l)
            )?,
            None => writeln!(
                out,
                "  IRQ latency:                      not recorded (the trace begins after it)"
            )?,
        }
        if let Some(d) = s.timer_irq_duration_ns {
            writeln!(
                out,
                "  Timerlat IRQ duration:            {:>12} ({:.2} %)",
                rtla_us(d),
                rtla_pct(d, total)
            )?;
        }
        let b = &s.blocking_thread;
        if s.irq_latency_ns.is_none() {
            writeln!(out, "  Blocking thread:                  not recorded")?;
        } else if s.context == rtwhy_model::TimerlatContext::Irq {
            writeln!(out, "  Blocking thread:")?;
            writeln!(
                out,
                "    {:>24}:{:<9}",
                b.comm.as_deref().unwrap_or("<...>"),
                b.pid
            )?;
        } else {
            writeln!(
                out,
                "  Blocking thread:                  {:>12} ({:.2} %)",
                rtla_us(b.duration_ns),
                rtla_pct(b.duration_ns, total)
            )?;
            writeln!(
                out,
                "    {:>24}:{:<9}",
                b.comm.as_deref().unwrap_or("<...>"),
                b.pid
            )?;
        }
        if !s.stack.is_empty() {
            writeln!(out, "    stack at the timer IRQ:")?;
            for f in &s.stack {
                writeln!(out, "        -> {f}")?;
            }
        }
        for (title, list) in [
            ("NMI interference", &s.nmi),
            ("IRQ interference", &s.irq),
            ("Softirq interference", &s.softirq),
            ("Thread interference", &s.thread),
        ] {
            let sum = TimerlatSpike::sum(list);
            if sum == 0 {
                continue;
            }
            writeln!(
                out,
                "  {title:<32}{:>13} ({:.2} %)",
                rtla_us(sum),
                rtla_pct(sum, total)
            )?;
            for i in list {
                writeln!(
                    out,
                    "    {:>24}:{:<9} {:>12}",
                    i.name,
                    i.id,
                    rtla_us(i.duration_ns)
                )?;
            }
        }
        writeln!(
            out,
            "  {} latency:                   {:>12} (100%)",
            if s.context == rtwhy_model::TimerlatContext::Thread {
                "Thread"
            } else {
                "IRQ"
            },
            rtla_us(total)
        )?;
        cause_line(out, &s.primary)?;
        if !s.evidence.is_empty() {
            writeln!(out, "  evidence:")?;
            for e in &s.evidence {
                writeln!(out, "    {}", e.line)?;
                writeln!(out, "        ^ {}", e.why)?;
            }
        }
    }
    Ok(())
}

/// The timerlat part of the JSON report: rtla's auto-analysis quantities under the
/// names docs/rtla.md maps to rtla's and rteval's.
pub fn timerlat_json(t: &Timerlat) -> Value {
    let list = |l: &[rtwhy_model::Interference]| {
        l.iter()
            .map(|i| json!({"name": i.name, "id": i.id, "start_ns": i.start.0, "duration_ns": i.duration_ns}))
            .collect::<Vec<_>>()
    };
    json!({
        "samples": t.samples,
        "osnoise_events": t.noise_events,
        "spikes": t.spikes.iter().map(|s| json!({
            "id": s.id,
            "cpu": s.cpu,
            "seqnum": s.seqnum,
            "context": s.context.as_str(),
            "expected_ns": s.expected.0,
            "latency_ns": s.latency_ns,
            "irq_latency_ns": s.irq_latency_ns,
            "thread_latency_ns": s.thread_latency_ns,
            "irq_handler_delay_ns": s.irq_handler_delay_ns,
            "exit_from_idle": s.exit_from_idle,
            "timerlat_irq_duration_ns": s.timer_irq_duration_ns,
            "blocking_thread": {
                "comm": s.blocking_thread.comm,
                "pid": s.blocking_thread.pid,
                "duration_ns": s.blocking_thread.duration_ns,
            },
            "previous_irq_interference": s.previous_irq.as_ref().map(|p| json!({
                "name": p.name, "id": p.id, "duration_ns": p.duration_ns,
            })),
            "nmi_interference_ns": TimerlatSpike::sum(&s.nmi),
            "irq_interference_ns": TimerlatSpike::sum(&s.irq),
            "softirq_interference_ns": TimerlatSpike::sum(&s.softirq),
            "thread_interference_ns": TimerlatSpike::sum(&s.thread),
            "nmi": list(&s.nmi),
            "irqs": list(&s.irq),
            "softirqs": list(&s.softirq),
            "threads": list(&s.thread),
            "stack": s.stack,
            "primary": s.primary,
            "evidence": s.evidence,
        })).collect::<Vec<_>>(),
    })
}

/// A spike's report without the events around it (the Markdown does not show them).
pub fn without_window(s: &Spike) -> SpikeReport {
    let (from, to) = Window::around(s);
    SpikeReport {
        spike: s.clone(),
        window: Window {
            from,
            to,
            events: Vec::new(),
        },
        trace_lines: s.evidence.iter().map(|e| e.line.clone()).collect(),
    }
}

/// The report of `spikes` (chosen from `analysis`) of the trace `trace_name`.
pub fn build(
    analysis: &Analysis,
    source: &Source,
    opts: &AnalysisOpts,
    trace_name: &str,
    spikes: Vec<SpikeReport>,
) -> Report {
    let mut facts = analysis.facts.clone();
    if let Some(iso) = &opts.isolated {
        facts.isolated = iso.clone();
        facts.isolated_source = Some("--isolated".to_string());
    }
    Report {
        source: source.path.clone(),
        audit: rtwhy_analyze::audit(&facts),
        facts,
        threshold: analysis.threshold,
        events: analysis.events,
        reproduce: reproduce(opts, trace_name),
        spikes,
        spikes_found: analysis.spikes.len(),
    }
}

/// The worst [`MAX_SHOWN`] spikes, in trace order.
pub fn worst_shown(mut selected: Vec<&Spike>) -> Vec<&Spike> {
    if selected.len() > MAX_SHOWN {
        selected.sort_by_key(|s| std::cmp::Reverse(s.latency_ns));
        selected.truncate(MAX_SHOWN);
        selected.sort_by_key(|s| s.id);
    }
    selected
}

/// The Markdown bug report of a whole analysis: what `rtwhy report --format markdown`
/// prints, and `rtwhy analyze --format markdown` too (the same bytes).
pub fn markdown_of(analysis: &Analysis, source: &Source, opts: &AnalysisOpts) -> String {
    let selected = worst_shown(analysis.spikes.iter().collect());
    let spikes = selected.iter().map(|s| without_window(s)).collect();
    let report = build(analysis, source, opts, &source.path, spikes);
    markdown::render(&report, &Links::default())
}

/// `word` as one shell word: as is when that is safe, else in single quotes.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The `rtwhy analyze` command line that gives the same spikes from `file`.
fn reproduce(a: &AnalysisOpts, file: &str) -> String {
    let t = a.threshold.0;
    let mut cmd = if t % 1_000 == 0 {
        format!("rtwhy analyze --threshold {}us", t / 1_000)
    } else {
        format!("rtwhy analyze --threshold {t}ns")
    };
    let ids = |v: &[i32]| {
        v.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    if !a.pid.is_empty() {
        cmd.push_str(&format!(" --pid {}", ids(&a.pid)));
    }
    if !a.tid.is_empty() {
        cmd.push_str(&format!(" --tid {}", ids(&a.tid)));
    }
    for c in &a.comm {
        cmd.push_str(&format!(" --comm {}", shell_word(c)));
    }
    if let Some(iso) = &a.isolated {
        cmd.push_str(&format!(" --isolated {iso}"));
    }
    format!("{cmd} {}", shell_word(file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtwhy_model::Nanos;

    #[test]
    fn reproduce_lines_quote_only_what_the_shell_would_split() {
        let args = AnalysisOpts {
            threshold: Nanos(150_000),
            pid: Vec::new(),
            tid: vec![7, 8],
            comm: vec!["lto cgu.09".to_string(), "cyclictest".to_string()],
            isolated: rtwhy_model::CpuList::parse("1-2"),
        };
        assert_eq!(
            reproduce(&args, "my trace.dat"),
            "rtwhy analyze --threshold 150us --tid 7,8 --comm 'lto cgu.09' --comm cyclictest --isolated 1-2 'my trace.dat'"
        );
        let odd = AnalysisOpts {
            threshold: Nanos(1_500),
            ..args
        };
        assert!(reproduce(&odd, "it's.dat").starts_with("rtwhy analyze --threshold 1500ns"));
        assert!(reproduce(&odd, "it's.dat").ends_with(" 'it'\\''s.dat'"));
    }
}
