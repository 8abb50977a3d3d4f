//! The bug report in Markdown, for a GitHub/GitLab issue or a mailing list: the machine,
//! then per spike the verdict, where every microsecond went, the decisive trace lines,
//! the fix, and the command that reproduces the analysis.

use std::fmt::Write as _;

use rtwhy_model::{human_duration, AuditFinding, Severity};

use crate::{system, Report, SpikeReport};

/// What the Markdown may link to besides itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Links {
    /// Each spike's SVG timeline sits beside the Markdown as [`svg_name`] (the bundle).
    pub svgs: bool,
}

/// The file name of spike `id`'s SVG timeline in a bundle.
pub fn svg_name(id: u32) -> String {
    format!("spike-{id}.svg")
}

/// A table cell: no line breaks, `|` escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The whole report.
pub fn render(report: &Report, links: &Links) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# rtwhy report: `{}`\n", report.source);
    let threshold = human_duration(report.threshold.0);
    if report.spikes_found == 0 {
        let _ = writeln!(
            out,
            "No spike above {threshold} in {} events.\n",
            report.events
        );
    } else {
        let shown: Vec<rtwhy_model::SpikeSummary> = report
            .spikes
            .iter()
            .map(|s| rtwhy_model::SpikeSummary::of(&s.spike))
            .collect();
        // The spike put first: flagged by a marker, then the highest-priority victim's,
        // then the longest.
        let first = rtwhy_model::first(&shown);
        let _ = write!(
            out,
            "{} spike{} above {threshold} in {} events",
            report.spikes_found,
            if report.spikes_found == 1 { "" } else { "s" },
            report.events
        );
        if report.spikes.len() < report.spikes_found {
            let _ = write!(out, " ({} shown)", report.spikes.len());
        }
        if let Some(w) = first {
            let which = if w.flagged {
                "flagged by a marker"
            } else if report.spikes.len() < report.spikes_found {
                "first of those shown (highest priority, then latency)"
            } else {
                "first (highest priority, then latency)"
            };
            let _ = write!(
                out,
                "; {which}: {} late by {} on CPU {}, **{}**",
                w.victim,
                human_duration(w.latency_ns),
                w.cpu,
                w.cause
            );
        }
        let _ = writeln!(out, ".\n");
    }

    let _ = writeln!(out, "## System\n");
    let _ = writeln!(out, "| | |\n|---|---|");
    for (k, v) in system::rows(&report.facts) {
        let _ = writeln!(out, "| {k} | {} |", cell(&v));
    }

    let costly: Vec<&AuditFinding> = report
        .audit
        .iter()
        .filter(|f| f.severity >= Severity::Warning)
        .collect();
    if !costly.is_empty() {
        let _ = writeln!(
            out,
            "\nSettings of the recording machine that cost latency (the checks of `rtwhy doctor` on the recorded facts):\n"
        );
        for f in costly {
            let _ = write!(out, "- **{}** `{}`: {}", f.severity, f.check, f.summary);
            if let Some(fix) = &f.fix {
                let _ = write!(out, "; fix: {fix}");
            }
            out.push('\n');
        }
    }

    for s in &report.spikes {
        spike(&mut out, s, links);
    }

    let _ = writeln!(out, "\n## Reproduce\n");
    let _ = writeln!(
        out,
        "From the trace attached to this report (rtwhy reads any trace-cmd trace.dat or `trace-cmd report` text):\n"
    );
    let _ = writeln!(out, "```sh\n{}\n```", report.reproduce);
    let _ = writeln!(out, "\n---\n\n{}", redaction_note(report.redacted));
    out
}

/// The report's last line: whether it was redacted, and what that means.
pub fn redaction_note(redacted: bool) -> &'static str {
    if redacted {
        "*Redacted for posting (`rtwhy report --redact`): kernel addresses are keyed tokens \
         (`0x5afe...`; the same address, the same token), host and user names, IP and MAC \
         addresses and UUIDs are `host-N`, `user-N`, `ip-N`, `mac-N`, `uuid-N`, the kernel \
         command line keeps only isolation, preemption, RT, idle and IRQ parameters, and \
         tasks that play no part in a spike are `task-N`.*"
    } else {
        "*Not redacted: kernel addresses, the whole kernel command line, host names and \
         every task's name are as recorded; `rtwhy report --redact` replaces them before \
         posting in public.*"
    }
}

fn spike(out: &mut String, r: &SpikeReport, links: &Links) {
    let s = &r.spike;
    let _ = writeln!(
        out,
        "\n## Spike {}: {} late by {} on CPU {}\n",
        s.id,
        s.victim,
        human_duration(s.latency_ns),
        s.cpu
    );
    let _ = writeln!(
        out,
        "**Verdict: {}** ({} confidence, {:.0}% of the latency): {}\n",
        s.primary.cause,
        s.primary.confidence.as_str(),
        s.primary.share * 100.0,
        s.primary.summary
    );
    for c in &s.contributors {
        let _ = writeln!(
            out,
            "- also **{}** ({:.0}%): {}",
            c.cause,
            c.share * 100.0,
            c.summary
        );
    }
    if !s.contributors.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{} from {} to {} ({}).\n",
        capitalise(s.kind.describe()),
        s.start,
        s.end,
        crate::text::source_note(s)
    );
    let _ = writeln!(out, "| time | share | spent on |\n|---:|---:|---|");
    for item in &s.breakdown {
        let _ = writeln!(
            out,
            "| {} | {:.1}% | {} |",
            human_duration(item.ns),
            item.ns as f64 * 100.0 / s.latency_ns.max(1) as f64,
            cell(&item.bucket.to_string())
        );
    }
    if links.svgs {
        let _ = writeln!(
            out,
            "\n![Timeline of spike {}: CPU lanes around the latency]({})",
            s.id,
            svg_name(s.id)
        );
    }
    if !s.evidence.is_empty() {
        let _ = writeln!(out, "\n### Decisive trace lines\n");
        let _ = writeln!(out, "```text");
        for (i, e) in s.evidence.iter().enumerate() {
            let line = r.trace_lines.get(i).unwrap_or(&e.line);
            let _ = writeln!(out, "E{:<3}{line}\n    ^ {}", i + 1, e.why);
        }
        let _ = writeln!(out, "```");
    }
    if !s.remediation.is_empty() {
        let _ = writeln!(out, "\n### Fix\n");
        for f in &s.remediation {
            let _ = writeln!(out, "- {f}");
        }
    }
    if !s.missing.is_empty() {
        let _ = writeln!(out, "\n### Missing evidence\n");
        for m in &s.missing {
            let _ = writeln!(out, "- {m}");
        }
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
