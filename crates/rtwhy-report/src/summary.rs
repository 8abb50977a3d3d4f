//! `rtwhy record`'s closing summary and `rtwhy summary DIR`'s text: a session's
//! breaches and captures by cause, its top contributors, its threads, probes, losses and
//! disk use, from its `session.json`; and a state directory's sessions a line each.

use std::io::Write;
use std::path::Path;

use rtwhy_model::human_duration;
use serde_json::Value;

use crate::overview::{captures_of, contributors, Capture};
use crate::recording::Recording;

/// How many contributors a session's summary lists.
const SUMMARY_CONTRIBUTORS: usize = 5;

/// The summary table of a session, from its `session.json` (at the end of `rtwhy
/// record`, and by `rtwhy summary DIR` while it runs or afterwards).
pub fn render_session(out: &mut dyn Write, dir: &Path, doc: &Value) -> std::io::Result<()> {
    let s = &doc["session"];
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let spikes = doc["spikes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let captures = s["captures_total"].as_u64().unwrap_or(spikes.len() as u64);
    let state = if doc["state"] == "recording" {
        "recording".to_string()
    } else {
        s["ended_by"].as_str().unwrap_or("ended").to_string()
    };
    writeln!(out)?;
    writeln!(
        out,
        "rtwhy record: {state} after {:.1} s; {} breaches, {captures} captures in {}",
        n(&s["duration_ns"]) as f64 / 1e9,
        n(&s["breaches"]),
        dir.display()
    )?;
    // Captures per cause: those on disk and those the disk budget deleted.
    let mut causes: Vec<(String, u64, u64)> = Vec::new();
    let mut count =
        |cause: &str, kept: u64, dropped: u64| match causes.iter_mut().find(|(c, _, _)| c == cause)
        {
            Some(c) => {
                c.1 += kept;
                c.2 += dropped;
            }
            None => causes.push((cause.to_string(), kept, dropped)),
        };
    for sp in spikes {
        count(sp["cause"].as_str().unwrap_or("undiagnosed"), 1, 0);
    }
    if let Some(dropped) = doc["dropped"].as_object() {
        for (cause, d) in dropped {
            count(cause, 0, n(&d["captures"]));
        }
    }
    causes.sort_by_key(|c| std::cmp::Reverse(c.1 + c.2));
    if !causes.is_empty() {
        writeln!(out, "  {:<28} {:>8} {:>8}", "cause", "captures", "deleted")?;
        for (c, kept, dropped) in &causes {
            writeln!(out, "  {c:<28} {:>8} {dropped:>8}", kept + dropped)?;
        }
    }
    render_contributors(out, &captures_of(doc))?;
    if let Some(threads) = s["threads"].as_array().filter(|t| !t.is_empty()) {
        writeln!(
            out,
            "  {:<8} {:<20} {:>9} {:>12}",
            "tid", "thread", "breaches", "worst"
        )?;
        for t in threads {
            writeln!(
                out,
                "  {:<8} {:<20} {:>9} {:>12}",
                t["tid"],
                t["comm"].as_str().unwrap_or("?"),
                n(&t["breaches"]),
                human_duration(n(&t["worst_ns"]))
            )?;
        }
    }
    for p in s["probe"].as_array().map(Vec::as_slice).unwrap_or_default() {
        writeln!(
            out,
            "  probe cpu {}: {} loops, min {} avg {} max {}, {} above threshold",
            p["cpu"],
            n(&p["loops"]),
            human_duration(n(&p["min_ns"])),
            human_duration(n(&p["avg_ns"])),
            human_duration(n(&p["max_ns"])),
            n(&p["over_threshold"])
        )?;
    }
    let t = &doc["timing"];
    writeln!(
        out,
        "  lost: {} detector records, {} streamed events, {} captured pages after overruns; {} breaches in dead time, {} after --max-spikes, {} within --min-gap; {} captures not saved",
        n(&s["detector_lost"]),
        n(&s["watch_events_lost"]),
        n(&t["pages_after_loss"]),
        n(&s["breaches_in_dead_time"]),
        n(&s["breaches_after_max"]),
        n(&s["breaches_rate_limited"]),
        n(&s["captures_failed"]),
    )?;
    if n(&s["markers_not_captured"]) > 0 {
        writeln!(
            out,
            "  {} markers set off no capture: written before the previous capture was read out (inside its window, or while it was saved)",
            n(&s["markers_not_captured"])
        )?;
    }
    if let Some(budget) = doc["disk"]["budget_bytes"].as_u64() {
        let whose = match doc["disk"]["state_dir"].as_str() {
            Some(state) => format!(" (all sessions in {state})"),
            None => String::new(),
        };
        writeln!(
            out,
            "  disk: {} of the {} budget in use{whose}, {} captures of this session on disk",
            human_size(n(&doc["disk"]["used_bytes"])),
            human_size(budget),
            spikes.len()
        )?;
    }
    if captures > 0 {
        writeln!(
            out,
            "  recording off while saving: median {} (max {}) per capture; instance stopped {} (median) after breach + --after",
            human_duration(n(&t["dead_time_ns"]["p50"])),
            human_duration(n(&t["dead_time_ns"]["max"])),
            human_duration(n(&t["freeze_delay_ns"]["p50"])),
        )?;
    }
    if let Some(code) = s["child_exit"].as_i64() {
        match s["child_signal"].as_i64() {
            Some(sig) => writeln!(out, "  command killed by signal {sig}")?,
            None => writeln!(out, "  command exited with {code}")?,
        }
    }
    Ok(())
}

/// The summary of a recorder's state directory: a line per session, the disk the
/// directory takes against the latest session's budget, and who the captures on disk
/// point at.
pub fn render_state_dir(out: &mut dyn Write, dir: &Path, rec: &Recording) -> std::io::Result<()> {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    writeln!(out)?;
    writeln!(
        out,
        "rtwhy record: {} sessions in {}",
        rec.sessions.len(),
        dir.display()
    )?;
    writeln!(
        out,
        "  {:<26} {:<12} {:>10} {:>9} {:>9} {:>8}",
        "session", "ended by", "length", "breaches", "captures", "on disk"
    )?;
    for (name, doc, _) in &rec.sessions {
        let s = &doc["session"];
        let state = match doc["state"].as_str() {
            Some("recording") => "recording",
            _ => s["ended_by"].as_str().unwrap_or("ended"),
        };
        writeln!(
            out,
            "  {name:<26} {state:<12} {:>10} {:>9} {:>9} {:>8}",
            human_duration(n(&s["duration_ns"])),
            n(&s["breaches"]),
            n(&s["captures_total"]),
            doc["spikes"].as_array().map_or(0, Vec::len)
        )?;
    }
    if let Some((_, last, _)) = rec.sessions.last() {
        if let Some(budget) = last["disk"]["budget_bytes"].as_u64() {
            writeln!(
                out,
                "  disk: {} of the {} budget in use (as the latest session left it), {} captures on disk",
                human_size(n(&last["disk"]["used_bytes"])),
                human_size(budget),
                rec.captures.len()
            )?;
        }
    }
    render_contributors(out, &rec.captures)
}

/// Who the kept captures' verdicts point at, the most captures first: the summary's
/// top contributors.
fn render_contributors(out: &mut dyn Write, kept: &[Capture]) -> std::io::Result<()> {
    let culprits = contributors(kept);
    if !culprits.is_empty() {
        writeln!(out, "  top contributors (captures kept):")?;
        for k in culprits.iter().take(SUMMARY_CONTRIBUTORS) {
            let causes: Vec<&str> = k.causes().iter().map(|(c, _)| *c).collect();
            let worst = k.captures.first();
            writeln!(
                out,
                "  {:>6}  {} ({}), worst {}{}",
                k.captures.len(),
                k.culprit,
                causes.join(", "),
                human_duration(worst.map_or(0, |c| c.latency_ns)),
                worst.map(|c| format!(" in {}", c.file)).unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// `1.5 MiB`.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
