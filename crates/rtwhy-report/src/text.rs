//! Diagnoses as text for people: what `rtwhy analyze` prints, and the recorder's
//! per-capture `.txt`. Timerlat periods are laid out like rtla's auto-analysis.

use std::collections::BTreeMap;
use std::io::{Result, Write};

use rtwhy_model::{
    human_duration, Analysis, Cause, Confidence, Finding, Spike, SpikeSource, SpikeSummary,
    TimerlatSpike, MAX_SPIKES, RTLA_EXIT_FROM_IDLE_NS,
};

use crate::{Source, Timerlat};

/// `ns` as a percentage of the spike's latency.
fn percent_of(ns: u64, s: &Spike) -> f64 {
    ns as f64 * 100.0 / s.latency_ns.max(1) as f64
}

/// How a spike was found, as text and Markdown both say it.
pub(crate) fn source_note(s: &Spike) -> String {
    match &s.source {
        SpikeSource::BreachMarker {
            reported_ns,
            late_timer,
        } => format!(
            "rtwhy breach marker; the detector measured {}{}",
            human_duration(*reported_ns),
            late_timer
                .as_ref()
                .map(|l| format!("; {}", l.describe()))
                .unwrap_or_default()
        ),
        SpikeSource::ToolMarker { text, reported_ns } => format!(
            "marker \"{text}\": its own measurement, the {} before the marker",
            human_duration(*reported_ns)
        ),
        SpikeSource::Events => "found from the events".to_string(),
    }
}

pub(crate) fn counts_by_cause(spikes: &[SpikeSummary]) -> BTreeMap<Cause, usize> {
    let mut m = BTreeMap::new();
    for s in spikes {
        *m.entry(s.cause).or_default() += 1;
    }
    m
}

fn summary_line(a: &Analysis, spikes: &[SpikeSummary]) -> String {
    if spikes.is_empty() {
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
    let causes: Vec<String> = counts_by_cause(spikes)
        .iter()
        .map(|(c, n)| format!("{n} {c}"))
        .collect();
    let worst = rtwhy_model::worst(spikes);
    // The spike put first: flagged by a marker, then the highest-priority victim's.
    let first = rtwhy_model::first(spikes);
    let about = |w: &SpikeSummary| {
        format!(
            "{} for {} at {} ({})",
            human_duration(w.latency_ns),
            w.victim,
            w.end,
            w.cause
        )
    };
    // A marker flags a spike whatever its length: those under the threshold are counted
    // apart, so "above" holds for every spike it counts.
    let above = spikes
        .iter()
        .filter(|s| rtwhy_model::breaches(s.latency_ns, a.threshold.0))
        .count();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let threshold = human_duration(a.threshold.0);
    let count = if above == spikes.len() {
        format!("{above} spike{} above {threshold}", plural(above))
    } else {
        let below = spikes.len() - above;
        format!(
            "{} spike{} ({above} above {threshold}, {below} below it flagged by a marker)",
            spikes.len(),
            plural(spikes.len())
        )
    };
    let mut line = format!("{count}: {}", causes.join(", "));
    if let Some(f) = first.filter(|f| worst.is_some_and(|w| w.id != f.id)) {
        line.push_str(&format!(
            "; first: spike {} {}{}",
            f.id,
            about(f),
            if f.flagged {
                ", flagged by a marker"
            } else {
                ""
            }
        ));
    }
    if let Some(w) = worst {
        line.push_str(&format!("; worst {}", about(w)));
    }
    line
}

/// What the latencies of `spikes` measure when no marker gave the application's own
/// number.
pub(crate) fn definition_note(spikes: &[SpikeSummary]) -> Option<&'static str> {
    let marked = spikes.iter().any(|s| s.flagged);
    (!spikes.is_empty() && !marked).then_some(
        "latencies are measured from the events (timer expiry or wake-up to running): no marker in this trace carries the application's own number",
    )
}

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

/// The text `rtwhy analyze` prints: per spike the verdict first, then the breakdown,
/// evidence and fix; the timerlat periods; a summary line. The same bytes as
/// [`header`], then [`spike`] for each spike, then [`tail`].
pub fn render(out: &mut dyn Write, a: &Analysis, src: &Source) -> Result<()> {
    header(out, a, src)?;
    for s in &a.spikes {
        spike(out, s)?;
    }
    let spikes: Vec<SpikeSummary> = a.spikes.iter().map(SpikeSummary::of).collect();
    tail(out, a, &spikes, src)
}

/// The first line of [`render`]'s text.
pub fn header(out: &mut dyn Write, a: &Analysis, src: &Source) -> Result<()> {
    writeln!(
        out,
        "rtwhy analyze {} ({}, {} events)",
        src.path, src.kind, a.events
    )
}

/// One spike of [`render`]'s text: its verdict, breakdown, evidence and fix.
pub fn spike(out: &mut dyn Write, s: &Spike) -> Result<()> {
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
    Ok(())
}

/// The end of [`render`]'s text: the timerlat periods and the summary line of the
/// analysis `a`, whose spikes are summed up in `spikes` (`a.spikes` is not read: an
/// analysis written out as it went holds none of them by now).
pub fn tail(
    out: &mut dyn Write,
    a: &Analysis,
    spikes: &[SpikeSummary],
    src: &Source,
) -> Result<()> {
    if let Some(t) = &src.timerlat {
        timerlat_text(out, t, a.threshold.0)?;
    }
    writeln!(out)?;
    writeln!(out, "{}", summary_line(a, spikes))?;
    if let Some(note) = definition_note(spikes) {
        writeln!(out, "{note}")?;
    }
    if a.spikes_dropped > 0 {
        writeln!(
            out,
            "{} more spikes were found but not diagnosed (limit {}); raise --threshold or narrow with --comm",
            a.spikes_dropped,
            MAX_SPIKES
        )?;
    }
    Ok(())
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
fn timerlat_text(out: &mut dyn Write, t: &Timerlat, threshold: u64) -> Result<()> {
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
                if s.exit_from_idle && d > RTLA_EXIT_FROM_IDLE_NS {
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
        } else {
            // An IRQ-context stop has no thread time to give: rtla prints the name only.
            if s.context == rtwhy_model::TimerlatContext::Irq {
                writeln!(out, "  Blocking thread:")?;
            } else {
                writeln!(
                    out,
                    "  Blocking thread:                  {:>12} ({:.2} %)",
                    rtla_us(b.duration_ns),
                    rtla_pct(b.duration_ns, total)
                )?;
            }
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
